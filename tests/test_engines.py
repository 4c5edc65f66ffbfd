"""One suite over every registered engine (``hiersql.engines.registry.FACTORIES``: a real PostgreSQL server
and real Spark, local mode): every family, option and analysis gives the rows of the embedded DuckDB run.

Each case runs once per engine. What an engine does otherwise is in its own module (``test_engines_postgres``:
schemas, privileges, printed scripts; ``test_engines_spark``: stages, partitions, broadcasts). Spark runs a few
dozen jobs per evaluation, so its hand cases use the SQL families (:data:`HAND_METRICS`); every family runs on
both engines on GermEval B and on the DAG.
"""

from __future__ import annotations

import io
import math

import pandas as pd
import pytest

from hiersql.analyses import curves
from hiersql.cli import breakdown, main
from hiersql.engines import PostgresEngine, SparkEngine
from hiersql.engines.registry import FACTORIES
from hiersql.errors import InputError
from hiersql.inputs.store import Store
from hiersql.inputs.taxonomy import Taxonomy
from hiersql.measures import Options, compute
from hiersql.options import OptionError
from tests._engine_cases import (
    ALL_FAMILIES,
    OPTION_CASES,
    SET_BASED,
    all_metrics,
    assert_dag_case,
    assert_hand_values,
    assert_rows_match,
    dag_store,
    families_of,
    germeval_b_all,
    hand_store,
    reference,
    sql_metrics,
)

MARKS = {"postgres": [pytest.mark.postgres], "spark": [pytest.mark.spark, pytest.mark.slow]}
ENGINES = [pytest.param(name, marks=MARKS[name], id=name) for name in FACTORIES]
HAND_CASES = {**{c: o for c, o in OPTION_CASES.items() if c != "defaults"},
              "cesa_bianchi": Options(augment="cesa_bianchi")}
# the measures of the hand cases per engine: every family on PostgreSQL; on Spark the set-based ones (and the
# flat ones when the case sets zero_division, the only option they read)
HAND_METRICS = {"postgres": lambda options: all_metrics(),
                "spark": lambda options: sql_metrics() if options.zero_division else SET_BASED}


@pytest.fixture(params=ENGINES)
def engine_name(request) -> str:
    assert request.param in MARKS, f"engine {request.param} registered without marks in this suite"
    return request.param


@pytest.fixture
def engine(engine_name, request):
    """A new engine of ``engine_name``: PostgreSQL on the test server's emptied ``public`` schema, Spark on the
    worker's session."""
    if engine_name == "postgres":
        opened = PostgresEngine(request.getfixturevalue("pg_dsn"))
        opened.execute("DROP SCHEMA IF EXISTS public CASCADE")
        opened.execute("CREATE SCHEMA public")
    else:
        opened = SparkEngine(request.getfixturevalue("spark"))
    yield opened
    opened.close()


def test_hand_example_by_hand(engine):
    store = hand_store()
    engine.copy_store(store)
    rows = compute(engine, sql_metrics())
    assert_hand_values([r for r in rows if r.metric in SET_BASED])
    assert_rows_match(rows, reference(store, sql_metrics(), Options()), tol=1e-12)


def test_fixed_classes_give_duckdbs_rows_and_a_bad_class_duckdbs_error(engine):
    """Fixed classes (``labels``) reach the flat universe and the set-based per-class averages in the engine;
    the one rule of fixed classes (``flat_label_faults`` of flat.sql, run where the classes are written) refuses
    a label that is no node, or one given twice, with the error DuckDB's run gives."""
    store = hand_store()
    engine.copy_store(store)
    cases = ((["hamming_loss", "label_f1"], {}), (["hierarchical_f1"], {"average": ("label_macro",)}))
    for metrics, options in cases:
        fixed = Options(labels=("A", "B", "C", "D", "E", "F"), **options)
        assert_rows_match(compute(engine, metrics, fixed), reference(store, metrics, fixed))
    for labels, said in ((("A", "Z"), "labels holds a label not in the taxonomy: 'Z'"),
                         (("B", "C", "B"), "labels holds a label twice: 'B'")):
        for metrics, options in cases:
            bad = Options(labels=labels, **options)
            with pytest.raises(OptionError) as on_duckdb:
                reference(store, metrics, bad)
            with pytest.raises(OptionError) as on_engine:
                compute(engine, metrics, bad)
            assert str(on_engine.value) == str(on_duckdb.value) == said


# Trees the scoring family refuses, and the fault named (by hand): the leaves E (0.9) and F (1.2) do not sum to
# 1; the edge into D weighs -1 (PostgreSQL writes that double as -1, DuckDB and Spark as -1.0); D has two
# parents; no edge has a weight (the first by name: into B)
SCORING_FAULTS = {
    "sum": ([("A", "B", 0.5), ("A", "C", 0.5), ("B", "D", 0.5), ("B", "E", 0.4), ("C", "F", 0.7)],
            "every root-to-leaf weight sum must be 1; the leaf E (0.9) and 1 more"),
    "negative": ([("A", "B", 2.0), ("A", "C", 1.0), ("B", "D", -1.0), ("B", "E", -1.0), ("C", "F", 0.0)],
                 "edge weights must be non-negative; the edge into D (-1) and 1 more"),
    "dag": ([("A", "B", 0.5), ("A", "C", 0.5), ("B", "D", 0.5), ("C", "D", 0.5), ("B", "E", 0.5), ("C", "F", 0.5)],
            "nodes with several parents: D"),
    "unweighted": ([("A", "B"), ("A", "C"), ("B", "D"), ("B", "E"), ("C", "F")],
                   "an edge without weight, into B and 4 more"),
}


@pytest.mark.parametrize("case", SCORING_FAULTS)
def test_a_tree_the_scoring_family_refuses_is_duckdbs_error(engine, case):
    """The scoring family's rules run in the engine (``scoring_tree_fault``, ``scoring_weight_fault`` of
    scoring.sql): a weighted measure on a tree or weights they refuse is DuckDB's error, word for word; the
    family named on weights whose sums are not 1 is PL alone, DuckDB's values."""
    edges, said = SCORING_FAULTS[case]
    store = Store()
    store.load_taxonomy(Taxonomy.from_edges(edges))
    store.add_truth([["D"], ["F"]])
    store.add_predictions("s", [["E"], ["D"]])
    engine.copy_store(store)
    with pytest.raises(InputError) as on_duckdb:
        reference(store, ["lpp"], Options())
    with pytest.raises(InputError) as on_engine:
        compute(engine, ["lpp"], Options())
    assert str(on_engine.value) == str(on_duckdb.value) and said in str(on_duckdb.value)
    if case == "sum":
        assert_rows_match(compute(engine, ["scoring"], Options()), reference(store, ["scoring"], Options()))


@pytest.mark.parametrize("case", HAND_CASES)
def test_hand_example_equals_duckdb(engine, engine_name, case):
    """The options of the set-based measures, the Cesa-Bianchi tolerance included (joins, no correlated
    subquery)."""
    store = hand_store()
    engine.copy_store(store)
    options = HAND_CASES[case]
    metrics = HAND_METRICS[engine_name](options)
    assert_rows_match(compute(engine, metrics, options), reference(store, metrics, options))


def test_every_family_on_germeval_b_all_systems_equals_duckdb(engine, data_dir):
    """GermEval 2019 subtask B, every submission: every family (the Python steps of pairs, LCA graphs and the
    HCM matching solved between the engine's stages) gives DuckDB's values."""
    store, want = germeval_b_all(data_dir)
    systems = store.systems()
    assert len(systems) == 19
    engine.copy_store(store)
    rows = compute(engine, all_metrics(), Options())
    assert families_of(rows) == ALL_FAMILIES
    assert {r.system for r in rows} == set(systems)
    assert_rows_match(rows, list(want))


@pytest.mark.parametrize("graph", ["optimal", "greedy"])
def test_every_family_on_a_dag_equals_duckdb(engine, graph):
    """A DAG with several shortest paths: every family with the exact LCA graphs; then the families that the
    greedy graphs with a maximum distance compute otherwise."""
    engine.copy_store(dag_store())
    assert_dag_case(engine, Options(lca_graph=graph, max_distance=2 if graph == "greedy" else None))


# ------------------------------------------------------------------------------ hiersql breakdown --engine
SCORED_BY = ("auprc", "calibration")  # the breakdowns of scored predictions
BY = tuple(by for by in breakdown.BY if by not in SCORED_BY)


def _frame(capsys, args: list[str]) -> pd.DataFrame:
    assert main(["breakdown", *args, "--format", "csv"]) == 0
    return pd.read_csv(io.StringIO(capsys.readouterr().out), keep_default_na=False, na_values=[""])


def _assert_same(got: pd.DataFrame, want: pd.DataFrame, what: str) -> None:
    assert list(got.columns) == list(want.columns), what
    assert len(got) == len(want) > 0, what
    for column in want.columns:
        for mine, theirs in zip(got[column], want[column], strict=True):
            if isinstance(theirs, float) and math.isnan(theirs):
                assert isinstance(mine, float) and math.isnan(mine), (what, column)
            elif isinstance(theirs, float):
                assert mine == theirs, (what, column)
            else:
                assert mine == theirs, (what, column)


def _engine_args(name: str, request) -> list[str]:
    if name == "postgres":
        return ["--engine", "postgres", "--postgres-url", request.getfixturevalue("pg_dsn")]
    request.getfixturevalue("spark")  # the worker's session, which the command's engine joins
    return ["--engine", "spark", "--spark-master", "local[2]"]


@pytest.fixture(scope="module")
def germeval_args(data_dir) -> list[str]:
    canonical = data_dir / "canonical"
    return ["--taxonomy", str(canonical / "taxonomy.tsv"), "--truth", str(canonical / "truth_b.tsv"),
            *(a for s in ("LT-UHH__baseline", "Averbis__BOHB_CNN", "twistbytes__thresholding")
              for a in ("--pred", f"{s}={canonical / 'pred_b' / f'{s}.tsv'}"))]


@pytest.fixture(scope="module")
def scored_args(data_dir, tmp_path_factory) -> list[str]:
    """The RFSB model's marginal scores and the truth of the first 1,000 transposon instances."""
    folder = tmp_path_factory.mktemp("scored")
    scores = curves.read_transposon_scores(data_dir / "transposon" / "predictions_RFSB.txt")
    scores[scores["instance_id"].astype(int) <= 1000].to_csv(folder / "RFSB.tsv", sep="\t", header=False,
                                                              index=False)
    truth = pd.read_csv(data_dir / "canonical" / "truth_transposon.tsv", sep="\t", header=None, dtype=str)
    truth[truth[0].astype(int) <= 1000].to_csv(folder / "truth.tsv", sep="\t", header=False, index=False)
    return ["--taxonomy", str(data_dir / "canonical" / "taxonomy_transposon.tsv"), "--truth",
            str(folder / "truth.tsv"), "--pred", f"RFSB={folder / 'RFSB.tsv'}"]


def test_every_breakdown_on_the_engine_equals_duckdb(engine_name, germeval_args, scored_args, request, capsys):
    """``hiersql breakdown --by B --engine E``: every breakdown of hard predictions on three real GermEval B
    systems, the scored ones on the RFSB model's transposon scores; every value equal, numbers to the last digit; the
    text of ``--by class`` (scikit-learn's layout, two decimals) byte for byte."""
    extra = _engine_args(engine_name, request)
    text = ["breakdown", *germeval_args, "--by", "class"]
    assert main([*text, *extra]) == 0
    got = capsys.readouterr().out
    assert main(text) == 0
    assert got == capsys.readouterr().out
    for by in BY:
        args = [*germeval_args, "--by", by, *(["--include-root", "--beta", "2"] if by == "level" else [])]
        _assert_same(_frame(capsys, [*args, *extra]), _frame(capsys, args), f"--by {by}")
    for by in SCORED_BY:
        args = [*scored_args, "--by", by, *(["--bins", "5"] if by == "calibration" else [])]
        _assert_same(_frame(capsys, [*args, *extra]), _frame(capsys, args), f"--by {by}")
