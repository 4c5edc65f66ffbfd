"""Data and checks shared by the engine tests (PostgreSQL, Spark, DuckDB macros)."""

from __future__ import annotations

import functools
import itertools
import math
from pathlib import Path

from hiersql.engines import DuckDBEngine
from hiersql.inputs.store import Store
from hiersql.inputs.taxonomy import Taxonomy
from hiersql.measures import FAMILIES, Options, Row, compute

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


def query_rows(store: Store, file: str, query: str, params: dict | None = None, order: str = "") -> list[tuple]:
    """The rows of query ``query`` of ``<file>.sql`` on the store's DuckDB, made as the engine stages it,
    sorted by ``order``."""
    engine = DuckDBEngine(store)
    engine.stage(file, query, dict(params or {}), set())
    return engine.execute(f"SELECT * FROM {query}" + (f" ORDER BY {order}" if order else ""))


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


@functools.cache
def germeval_b_all(data_dir: Path) -> tuple[Store, tuple[Row, ...]]:
    """GermEval 2019 subtask B with every submission (19 systems), read from the canonical files by
    :class:`hiersql.Evaluator`, and DuckDB's rows of every family (:func:`reference`): made once per test
    process for the tests that compare an engine or a source with them."""
    from hiersql import Evaluator

    canonical = data_dir / "canonical"
    ev = Evaluator(Taxonomy.from_file(canonical / "taxonomy.tsv")).add_truth(canonical / "truth_b.tsv")
    ev.add_predictions_many({p.stem: p for p in sorted((canonical / "pred_b").glob("*.tsv"))})
    return ev.store, tuple(reference(ev.store, all_metrics(), Options()))


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
    from hiersql.measures import REGISTRY

    return [*REGISTRY["set_based"], *REGISTRY["flat"]]


def reference(store: Store, metrics: list[str], options: Options) -> list[Row]:
    """The DuckDB store's rows (the embedded default), sorted by (system, metric, average)."""
    rows = compute(store, metrics, options)
    return sorted(rows, key=lambda r: (r.system, r.metric, r.average))


def families_of(rows: list[Row]) -> set[str]:
    """The families that have rows among ``rows``."""
    from hiersql.measures import catalog

    return {catalog()[r.metric][0] for r in rows}


ALL_FAMILIES = set(FAMILIES)
# The DAG cases of the engine tests: every family with the exact LCA graphs (each step on one machine); the
# other LCA graph options only with the families whose computation they change (families_apart).
DAG_BASE = Options(lca_graph="optimal")


def families_apart(options: Options, base: Options = DAG_BASE, per_partition: bool = False) -> set[str]:
    """The families whose computation with ``options`` differs from that with ``base``: those that read an
    option the two set differently (:data:`hiersql.options.MEASURE_OPTIONS` declares which family reads which
    option) and, with ``per_partition``, those with a Python step that declares ``partition_by`` (solved per
    partition of the data instead of once)."""
    from hiersql.measures import plan_of
    from hiersql.options import MEASURE_OPTIONS
    from hiersql.plan import Python

    out = {f for o in MEASURE_OPTIONS if getattr(options, o.name) != getattr(base, o.name) for f in o.families}
    if per_partition:
        out |= {f for f in FAMILIES if any(isinstance(s, Python) and s.partition_by for s in plan_of(f).steps)}
    return out


def assert_dag_case(engine, options: Options, per_partition: bool = False) -> None:
    """``engine`` (holding :func:`dag_store`'s tables) gives DuckDB's rows on the DAG: of every family with
    :data:`DAG_BASE`, of the families apart from it (:func:`families_apart`) otherwise."""
    from hiersql.measures import catalog

    want = reference(dag_store(), all_metrics(), options)
    assert families_of(want) == ALL_FAMILIES - {"scoring"}  # scoring trees are trees
    families = families_of(want)
    if options != DAG_BASE or per_partition:
        families = families_apart(options, per_partition=per_partition)
        want = [r for r in want if catalog()[r.metric][0] in families]
    rows = compute(engine, sorted({r.metric for r in want}), options)
    assert families_of(rows) == families
    assert_rows_match(rows, want)


_JOB_GROUPS = itertools.count()


def spark_jobs(spark, run):
    """``run()`` and the number of Spark jobs it started."""
    group = f"hiersql-test-{next(_JOB_GROUPS)}"  # not id(run): an id is reused, and a group's old jobs with it
    spark.sparkContext.setJobGroup(group, group)
    try:
        out = run()
    finally:
        spark.sparkContext.setJobGroup("hiersql-test-other", "")
    return out, len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


def rows_and_stages(engine, plan, metrics: list[str], options: Options, stages: dict[str, str]
                    ) -> tuple[list[Row], dict[str, list[tuple]]]:
    """One run of ``plan``'s steps by ``engine`` (:meth:`~hiersql.engines.Engine.run_queries`): the summary rows
    of ``metrics`` (the query :meth:`~hiersql.engines.Engine.run_plan` runs, its rows shaped as it shapes them)
    and the rows of the ``stages`` queries, which read the plan's stages. A Spark run of a family with a
    Python step costs tens of seconds: a test of a stage and of the measures runs the plan once, not twice."""
    from hiersql.engines import summary_rows
    from hiersql.plan import summary_sql

    assert len(plan.groups(metrics, options)) == 1, "metrics computed in runs of their own: one at a time"
    summary = (f"SELECT * FROM {plan.summary}" if plan.summary is not None else
               summary_sql(plan, metrics, options.average, True, engine.weighted, options.labels is not None))
    tables = engine.run_queries(plan, metrics, options, {**stages, "rows_seen": summary})
    return summary_rows(tables.pop("rows_seen"), metrics, options), tables


def assert_rows_match(got: list[Row], want: list[Row], tol: float = 0.0) -> None:
    got, want = (sorted(rows, key=lambda r: (r.system, r.metric, r.average)) for rows in (got, want))
    assert [r[:3] for r in got] == [r[:3] for r in want]
    for g, w in zip(got, want, strict=True):
        assert math.isclose(g.value, w.value, rel_tol=0, abs_tol=tol) or math.isnan(g.value) and math.isnan(w.value), (
            g, w)


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
