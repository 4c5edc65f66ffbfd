"""Data and checks shared by the engine tests (PostgreSQL, Spark, DuckDB macros)."""

from __future__ import annotations

import math
from pathlib import Path

from hiersql.metrics import FAMILIES, Options, Row, compute
from hiersql.store import Store
from hiersql.taxonomy import Taxonomy

SET_BASED = ["hierarchical_precision", "hierarchical_recall", "hierarchical_f1", "symmetric_difference_loss"]

# Tree A > B, C; B > D, E; C > F. Root A left out (include_root=False). Truth per instance: {D}, {E, F}, {C}.
HAND_EDGES = [("A", "B"), ("A", "C"), ("B", "D"), ("B", "E"), ("C", "F")]
HAND_TRUTH = [["D"], ["E", "F"], ["C"]]
HAND_PRED = {"s1": [["E"], ["D"], []], "s2": [["B"], ["E", "F"], ["F"]]}
# Augmented sets: Y = {B,D}, {B,E,C,F}, {C}.
# s1: Ŷ = {B,E}, {B,D}, {} -> |Ŷ∩Y| = 1, 1, 0; |Ŷ| = 2, 2, 0; |Y| = 2, 4, 1.
# s2: Ŷ = {B}, {B,E,C,F}, {C,F} -> |Ŷ∩Y| = 1, 4, 1; |Ŷ| = 1, 4, 2; |Y| = 2, 4, 1.
HAND_EXPECTED = {
    ("s1", "hierarchical_precision", "micro"): 2 / 4,
    ("s1", "hierarchical_recall", "micro"): 2 / 7,
    ("s1", "hierarchical_f1", "micro"): 2 * (1 / 2) * (2 / 7) / (1 / 2 + 2 / 7),
    ("s1", "hierarchical_precision", "macro"): (1 / 2 + 1 / 2 + 0) / 3,
    ("s1", "hierarchical_recall", "macro"): (1 / 2 + 1 / 4 + 0) / 3,
    ("s1", "hierarchical_f1", "macro"): (2 / 4 + 2 / 6 + 0) / 3,
    ("s1", "symmetric_difference_loss", ""): (2 + 4 + 1) / 3,
    ("s2", "hierarchical_precision", "micro"): 6 / 7,
    ("s2", "hierarchical_recall", "micro"): 6 / 7,
    ("s2", "hierarchical_f1", "micro"): 6 / 7,
    ("s2", "hierarchical_precision", "macro"): (1 + 1 + 1 / 2) / 3,
    ("s2", "hierarchical_recall", "macro"): (1 / 2 + 1 + 1) / 3,
    ("s2", "hierarchical_f1", "macro"): (2 / 3 + 1 + 2 / 3) / 3,
    ("s2", "symmetric_difference_loss", ""): (1 + 0 + 1) / 3,
}

GERMEVAL_SYSTEMS = ("Averbis__BOHB_CNN", "LT-UHH__baseline", "twistbytes__thresholding")

# A DAG (Kosmopoulos et al. Fig. 8(b): 2.1 and 3.2.2 have two parents) with instances that meet on several
# shortest paths, so that the minimal LCA graphs involve a choice.
DAG_EDGES = [("0", "1"), ("0", "2"), ("0", "3"), ("1", "1.1"), ("1", "1.2"), ("2", "2.1"), ("3", "3.1"),
             ("3", "3.2"), ("3", "3.3"), ("3.2", "3.2.1"), ("3.2", "3.2.2"), ("3", "2.1"), ("3", "3.2.2")]
DAG_TRUTH = [["2.1", "3.2.1", "3.3"], ["1.1"], ["3.2.2"], ["2.1", "1.2"]]
DAG_PRED = {"fig8b": [["3.1", "3.2.1", "3.2.2"], ["1.2"], ["2.1"], ["3.3"]],
            "other": [["2"], ["1.1", "3.1"], [], ["2.1", "1.2"]]}

OPTION_CASES = {
    "defaults": Options(),
    "root_k1_beta2": Options(include_root=True, max_distance=1, beta=2.0),
    "descendants_zero1": Options(augment="descendants", zero_division=1.0),
}
# On GermEval, descendant augmentation makes ~1M rows (systems predicting top-level genres): hand example only.
GERMEVAL_CASES = ("defaults", "root_k1_beta2")


def hand_store() -> Store:
    store = Store()
    store.load_taxonomy(Taxonomy.from_edges(HAND_EDGES))
    store.add_truth(HAND_TRUTH)
    for system, sets in HAND_PRED.items():
        store.add_predictions(system, sets)
    return store


def germeval_store(data_dir: Path, systems: tuple[str, ...] = GERMEVAL_SYSTEMS, db: Path | None = None) -> Store:
    """GermEval 2019 subtask B (canonical files): the taxonomy with its virtual root, the full truth (every
    test instance) and a few systems, one of which leaves instances empty."""
    canonical = data_dir / "canonical"
    store = Store(db)
    store.load_taxonomy(Taxonomy.from_file(canonical / "taxonomy.tsv"))
    store.add_truth(canonical / "truth_b.tsv")
    for system in systems:
        store.add_predictions(system, canonical / "pred_b" / f"{system}.tsv")
    return store


def dag_store() -> Store:
    store = Store()
    store.load_taxonomy(Taxonomy.from_edges(DAG_EDGES))
    store.add_truth(DAG_TRUTH)
    for system, sets in DAG_PRED.items():
        store.add_predictions(system, sets)
    return store


def all_metrics() -> list[str]:
    """Every measure of every family that applies to the input."""
    return ["all"]


def sql_metrics() -> list[str]:
    """The measures of the families without a Python step (set-based and flat), for the option sweeps."""
    from hiersql.metrics import REGISTRY

    return [*REGISTRY["set_based"], *REGISTRY["flat"]]


def reference(store: Store, metrics: list[str], options: Options) -> list[Row]:
    """The DuckDB store's rows (the embedded default), sorted by (system, metric, average)."""
    rows = compute(store, metrics, options)
    return sorted(rows, key=lambda r: (r.system, r.metric, r.average))


def families_of(rows: list[Row]) -> set[str]:
    """The families that have rows among ``rows``."""
    from hiersql.metrics import catalog

    return {catalog()[r.metric][0] for r in rows}


ALL_FAMILIES = set(FAMILIES)


def assert_rows_match(got: list[Row], want: list[Row], tol: float = 1e-9) -> None:
    got, want = (sorted(rows, key=lambda r: (r.system, r.metric, r.average)) for rows in (got, want))
    assert [r[:3] for r in got] == [r[:3] for r in want]
    for g, w in zip(got, want, strict=True):
        assert math.isclose(g.value, w.value, rel_tol=0, abs_tol=tol), (g, w)


def assert_hand_values(rows: list[Row]) -> None:
    got = {(r.system, r.metric, r.average): r.value for r in rows}
    assert got.keys() == HAND_EXPECTED.keys()
    for key, value in HAND_EXPECTED.items():
        assert math.isclose(got[key], value, rel_tol=0, abs_tol=1e-12), key


def cli_rows(capsys, args: list[str]) -> list[Row]:
    """The rows ``hiersql evaluate ARGS --format csv`` prints (exit status 0 asserted)."""
    import csv
    import io

    from hiersql.cli import main

    assert main(["evaluate", *args, "--format", "csv"]) == 0
    out = capsys.readouterr().out
    return [Row(r["system"], r["metric"], r["average"], float(r["value"])) for r in csv.DictReader(io.StringIO(out))]
