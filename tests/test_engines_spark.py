"""The SQL measures on real Spark (pyspark, local mode) equal DuckDB's.

Spark needs a Java runtime (17); without it the tests fail with that message: they must run in CI. Marked slow:
the session takes 15-40 s to start and each evaluation, even of three instances, runs a few dozen Spark stages
(5-30 s on the shared machine).
"""

from __future__ import annotations

import pytest

from hiersql.engines import SparkEngine
from hiersql.metrics import Options, compute
from hiersql.store import Store
from hiersql.taxonomy import Taxonomy
from tests._engine_cases import (
    ALL_FAMILIES,
    OPTION_CASES,
    SET_BASED,
    all_metrics,
    assert_hand_values,
    assert_rows_match,
    dag_store,
    families_of,
    germeval_store,
    hand_store,
    reference,
    sql_metrics,
)

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def germeval(data_dir):
    return germeval_store(data_dir)


@pytest.fixture(scope="module")
def hand(spark):
    store = hand_store()
    engine = SparkEngine(spark)
    engine.copy_store(store)
    return store, engine


def test_hand_example_by_hand(hand):
    store, engine = hand  # every family: on the DAG and GermEval below
    rows = compute(engine, sql_metrics())
    assert_hand_values([r for r in rows if r.metric in SET_BASED])
    assert_rows_match(rows, reference(store, sql_metrics(), Options()), tol=1e-12)


CASES = {**{c: o for c, o in OPTION_CASES.items() if c != "defaults"}, "cesa_bianchi": Options(augment="cesa_bianchi")}


@pytest.mark.parametrize("case", CASES)
def test_hand_example_equals_duckdb(hand, case):
    """Set-based options (the flat measures read only zero_division: with the descendants case), the
    Cesa-Bianchi tolerance included (joins, no correlated subquery)."""
    store, engine = hand
    options = CASES[case]
    metrics = sql_metrics() if options.zero_division else SET_BASED
    assert_rows_match(compute(engine, metrics, options), reference(store, metrics, options))


def test_every_family_on_germeval_b_all_systems_equals_duckdb(spark, data_dir):
    """GermEval 2019 subtask B, every submission: every family (the Python steps of pairs, LCA graphs and the
    HCM matching solved between Spark stages) gives DuckDB's values."""
    systems = tuple(sorted(p.stem for p in (data_dir / "canonical" / "pred_b").glob("*.tsv")))
    store = germeval_store(data_dir, systems)
    assert len(systems) == 19
    engine = SparkEngine(spark)
    engine.copy_store(store)
    rows = compute(engine, all_metrics(), Options())
    assert families_of(rows) == ALL_FAMILIES
    assert {r.system for r in rows} == set(systems)
    assert_rows_match(rows, reference(store, all_metrics(), Options()))


@pytest.mark.parametrize("graph", ["greedy", "optimal", "hemkit"])
def test_every_family_on_a_dag_equals_duckdb(spark, graph):
    """A DAG with several shortest paths: the minimal LCA graphs of each selection, the pairings and HCM."""
    store = dag_store()
    # with HEMKit's graphs, every step that declares partition_by is solved per partition in the executors
    # (partition_rows=0: however few rows; 4 shuffle partitions, the conftest's local[2] on 2 cores or more)
    engine = SparkEngine(spark, partition_rows=0 if graph == "hemkit" else None)
    engine.copy_store(store)
    options = Options(lca_graph=graph, max_distance=2 if graph == "greedy" else None)
    rows = compute(engine, all_metrics(), options)
    assert families_of(rows) == ALL_FAMILIES - {"scoring"}  # scoring trees are trees
    assert_rows_match(rows, reference(store, all_metrics(), options))
    if graph == "hemkit":  # the others (LCA minimal graphs, HCM root paths) on the driver: docs/engines.md
        assert engine.partitions_solved.keys() == {"pairings", "path_cover", "matching", "hemkit_graphs"}
        assert min(engine.partitions_solved.values()) > 1


def test_closure_by_recursive_cte_in_spark_on_a_dag(spark):
    """Spark 4 runs ``closure.sql`` with UNION ALL: on a DAG the walk visits each path (D is reached from A
    by two paths of lengths 2 and 3); ``min(distance)`` keeps the shortest, as in DuckDB."""
    store = Store()
    store.load_taxonomy(Taxonomy.from_edges([("A", "B"), ("A", "C"), ("B", "D"), ("C", "E"), ("E", "D")]))
    engine = SparkEngine(spark)
    engine.copy_store(store, tables=("edges", "nodes"))
    engine.build_closure()
    got = sorted(engine.execute("SELECT ancestor, descendant, distance FROM closure"))
    assert got == sorted(store.con.execute("SELECT ancestor, descendant, distance FROM closure").fetchall())
    assert ("A", "D", 2) in got


def test_closure_by_recursive_cte_in_spark_on_germeval(spark, germeval):
    engine = SparkEngine(spark, tables={"edges": "ge_edges", "nodes": "ge_nodes", "closure": "ge_closure"})
    engine.copy_store(germeval, tables=("edges", "nodes"))
    engine.build_closure()
    got = sorted(engine.execute("SELECT ancestor, descendant, distance FROM ge_closure"))
    assert got == sorted(germeval.con.execute("SELECT ancestor, descendant, distance FROM closure").fetchall())


def test_evaluate_command_computes_in_spark(spark, data_dir, capsys):
    """``hiersql evaluate --engine spark``: the same rows as the embedded DuckDB run, for a family of each kind
    (SQL alone, a pairing step, an LCA graph step)."""
    from tests._engine_cases import cli_rows

    canonical = data_dir / "canonical"
    args = ["--taxonomy", str(canonical / "taxonomy.tsv"), "--truth", str(canonical / "truth_b.tsv"),
            "--pred", str(canonical / "pred_b" / "LT-UHH__baseline.tsv"), "--metrics", "hp,hf,gie,mgia,lca_f"]
    want = cli_rows(capsys, args)
    got = cli_rows(capsys, [*args, "--engine", "spark", "--spark-master", "local[2]"])
    assert_rows_match(got, want)


def test_a_part_read_twice_is_computed_once(spark):
    """Spark inlines a common table expression and a view at every reference: a CTE read twice becomes a
    local checkpoint of its own (``<stage>__<cte>``), and a plain view that one query reads twice is
    checkpointed before that query runs; the rows stay those of the query as written."""
    import pyarrow as pa

    engine = SparkEngine(spark)
    engine.write("numbers", pa.table({"x": [1, 2, 3, 4]}))
    query = ("WITH big AS (SELECT x FROM numbers WHERE x > 1) "
             "SELECT a.x AS a, b.x AS b FROM big AS a JOIN big AS b ON b.x = a.x + 1")
    rewritten, _ = engine._computed_once("pairs", query)
    assert "WITH" not in rewritten.upper() and rewritten.count("pairs__big") == 2
    assert sorted(engine.execute(rewritten)) == sorted(engine.execute(query)) == [(2, 3), (3, 4)]
    assert _filters(spark, "pairs__big") == 0  # its own rows, not the filter over numbers again

    engine._read_once = {"odd"}
    engine._materialize("odd", "SELECT x FROM numbers WHERE x % 2 = 1")
    assert _filters(spark, "odd") == 1  # a plain view: its one reader computes it
    engine._materialize("odd_pairs", "SELECT a.x AS a, b.x AS b FROM odd AS a JOIN odd AS b ON b.x > a.x")
    assert _filters(spark, "odd") == 0  # read twice by one query: checkpointed first
    assert engine.execute("SELECT * FROM odd_pairs") == [(1, 3)]


def _filters(spark, table: str) -> int:
    """The filters Spark runs to read ``table`` (a view's query is inlined; a checkpoint holds its rows)."""
    return spark.table(table)._jdf.queryExecution().optimizedPlan().toString().count("Filter")
