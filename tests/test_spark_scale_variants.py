"""The Spark variant of the set-based counts (``set_counts (spark)`` in set_based.sql: per-node arrays
merged per instance) gives the counts of the portable pair rows, as DuckDB computes them, on every option of
the set-based family and on empty sides; and a dead branch of a variant does not make Spark compute the pair
stages it reads."""

from __future__ import annotations

import math

import pytest

from hiersql import sqlfiles
from hiersql.engines import DuckDBEngine, SparkEngine
from hiersql.errors import DataWarning
from hiersql.inputs.store import Store
from hiersql.inputs.taxonomy import Taxonomy
from hiersql.measures import Options, compute
from hiersql.measures.set_based import PLAN
from tests._engine_cases import SET_BASED, assert_rows_match, reference, rows_and_stages

# A DAG with a real root R: X has the parents A1 and B1, so the truth of i2 and the prediction of i5 reach A
# by two paths. i3's truth is empty, i4's truth is the root itself (an empty augmented set unless
# include_root), "quiet" predicts nothing at all, and no system predicts anything for i4.
EDGES = [("R", "A"), ("R", "B"), ("A", "A1"), ("A", "A2"), ("B", "B1"), ("A1", "X"), ("B1", "X"), ("A2", "Y"),
         ("X", "Z")]
TRUTH = [["Z"], ["A2", "B1", "X"], [], ["R"], ["X", "Y"]]
PRED = {"sys1": [["X"], ["A2"], ["B"], [], ["Z", "A1"]],
        "quiet": [[], [], [], [], []],
        "roots": [["R"], ["A"], ["A1", "Y"], [], ["B"]]}

CASES = {
    "ancestors": Options(),
    "include_root": Options(include_root=True),
    "max_distance_1": Options(max_distance=1),
    "root_max_distance_2_beta_2": Options(include_root=True, max_distance=2, beta=2.0),
    "descendants": Options(augment="descendants"),
    "descendants_root_max_distance_1": Options(augment="descendants", include_root=True, max_distance=1),
    "zero_division_1": Options(zero_division=1.0),
    "cesa_bianchi": Options(augment="cesa_bianchi"),
}
PAIR_STAGES = ("labelled_sets", "augmented", "cesa_supported", "set_pairs", "set_pair_counts")
PARAMS = {"include_root": False, "max_distance": None, "augment": "ancestors", "beta": 1.0, "zero_division": 0.0}


def test_a_dead_branch_of_the_spark_variant_reads_no_pair_stage():
    """With the parameters set, the Spark variant reads no pair stage unless Cesa-Bianchi asks for them;
    without parameters (or for the portable queries) every query read in the text is a dependency."""
    assert sqlfiles.dependencies("set_based", "set_based_instance", "spark", params=PARAMS) == ["set_counts"]
    cesa = {**PARAMS, "augment": "cesa_bianchi"}
    assert sqlfiles.dependencies("set_based", "set_based_instance", "spark", params=cesa) == [*PAIR_STAGES,
                                                                                              "set_counts"]
    assert sqlfiles.dependencies("set_based", "set_based_instance", "spark") == [*PAIR_STAGES, "set_counts"]
    assert sqlfiles.dependencies("set_based", "set_based_instance", params=PARAMS) == [*PAIR_STAGES, "set_counts"]
    assert sqlfiles.variants("set_based") == {"duckdb", "spark"}


def test_spark_renders_its_variant_and_other_dialects_the_portable_query():
    from hiersql import engines

    spark = engines.render("set_based", "set_counts", PARAMS, "spark")
    assert "ARRAY_INTERSECT" in spark and "FLATTEN(COLLECT_LIST" in spark
    for dialect in ("postgres", "duckdb"):
        assert "intersect" not in engines.render("set_based", "set_counts", PARAMS, dialect).lower()


def hard_case_store() -> Store:
    """The small DAG above with its truth and predictions ("quiet" predicts nothing: a warning)."""
    store = Store()
    store.load_taxonomy(Taxonomy.from_edges(EDGES))
    store.add_truth(TRUTH)
    for system, sets in PRED.items():
        if system == "quiet":
            with pytest.warns(DataWarning, match="predicted nothing"):
                store.add_predictions(system, sets)
        else:
            store.add_predictions(system, sets)
    return store


@pytest.fixture(scope="module")
def store():
    return hard_case_store()


# (n_true, n_pred, n_both) per instance with the defaults (ancestors, root left out), by hand. Augmented
# sets: Z -> {Z,X,A1,B1,A,B}, X -> {X,A1,B1,A,B}, Y -> {Y,A2,A}, A2 -> {A2,A}, A1 -> {A1,A}, B1 -> {B1,B},
# A -> {A}, B -> {B}, R -> {}. Truth: i1 6, i2 {A2,A,B1,B,X,A1} 6, i3 0, i4 0, i5 {X,A1,B1,A,B,Y,A2} 7.
BY_HAND = {
    "sys1": [(6, 5, 5), (6, 2, 2), (0, 1, 0), (0, 0, 0), (7, 6, 5)],  # i5: Ŷ = {Z,X,A1,B1,A,B}
    "quiet": [(6, 0, 0), (6, 0, 0), (0, 0, 0), (0, 0, 0), (7, 0, 0)],
    "roots": [(6, 0, 0), (6, 1, 1), (0, 4, 0), (0, 0, 0), (7, 1, 1)],  # i3: Ŷ = {A1,A,Y,A2}
}


def counts(table) -> dict[tuple[str, str], tuple[int, int, int]]:
    return {(r["system"], r["instance_id"]): (r["n_true"], r["n_pred"], r["n_both"]) for r in table.to_pylist()}


def test_the_example_by_hand(store):
    """The DuckDB reference the Spark cases compare to, checked by hand on the defaults."""
    got = counts(DuckDBEngine(store).per_instance(PLAN, Options()))
    ids = sorted({i for _, i in got}, key=lambda i: int(i))
    assert len(ids) == 5
    assert got == {(system, ids[k]): value for system, values in BY_HAND.items() for k, value in enumerate(values)}


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_spark_variant_equals_duckdb_per_instance(spark, store, case):
    """Per (system, instance): the counts equal, the values to 1e-9, and so the summaries; the pair stages are
    computed by Spark only for Cesa-Bianchi (the views are dropped first, so a left-over cannot pass)."""
    for name in PAIR_STAGES:
        spark.catalog.dropTempView(name)
    engine = SparkEngine(spark)
    engine.copy_store(store)
    options = CASES[case]
    want = DuckDBEngine(store).per_instance(PLAN, options)
    got = engine.per_instance(PLAN, options)
    assert counts(got) == counts(want)
    assert got.column_names == want.column_names
    for column in ("hierarchical_precision", "hierarchical_recall", "hierarchical_f1"):
        for g, w in zip(got.column(column).to_pylist(), want.column(column).to_pylist(), strict=True):
            assert math.isclose(g, w, rel_tol=0, abs_tol=1e-9), (column, g, w)
    pairs = [name for name in PAIR_STAGES if spark.catalog.tableExists(name)]
    assert pairs == (list(PAIR_STAGES) if options.augment == "cesa_bianchi" else [])
    assert_rows_match(compute(engine, SET_BASED, options), reference(store, SET_BASED, options))


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """A generated DAG of 600 nodes, 300 instances of 3-4 labels; "noisy" is the generator's predictions,
    "perfect" the truth."""
    import subprocess
    import sys
    from pathlib import Path

    out = tmp_path_factory.mktemp("generated")
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "generate.py"
    subprocess.run([sys.executable, str(script), "--nodes", "600", "--depth", "6", "--multi-parent", "0.2",
                    "--instances", "300", "--labels", "3.3", "--seed", "1", "--out", str(out)], check=True,
                   capture_output=True)
    store = Store()
    store.load_taxonomy(Taxonomy.from_file(out / "taxonomy.tsv"))
    store.add_truth(out / "truth.tsv")
    store.add_predictions("noisy", out / "pred.tsv")
    store.add_predictions("perfect", out / "truth.tsv")
    return store


GENERATED_CASES = {"ancestors": Options(), "root_max_distance_2": Options(include_root=True, max_distance=2),
                   "descendants": Options(augment="descendants")}


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("case", GENERATED_CASES)
def test_spark_variant_on_a_generated_dag_equals_duckdb(spark, generated, case):
    engine = SparkEngine(spark)
    engine.copy_store(generated)
    options = GENERATED_CASES[case]
    want = counts(DuckDBEngine(generated).per_instance(PLAN, options))
    got = counts(engine.per_instance(PLAN, options))
    assert got == want
    assert max(n_true for n_true, _, _ in want.values()) > 3  # sets of several nodes, not one label each
    assert all(both == n_true for (system, _), (n_true, _, both) in got.items() if system == "perfect")


PAIR_CASES = {"unbounded": Options(), "max_distance_2": Options(max_distance=2, distance_limit="pair"),
              "climb_2": Options(max_distance=2, distance_limit="side")}
PAIR_STAGES_SEEN = {"distances_seen": "SELECT system, instance_id, u, v, distance FROM pair_distances_of",
                    "arcs_seen": "SELECT problem, pred_node, true_node, distance FROM pair_arcs"}


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("case", PAIR_CASES)
def test_spark_pair_distances_equal_duckdb(spark, generated, case):
    """``pair_distances_of (spark)`` (ancestor maps per node, the least sum over the shared keys) and
    ``pair_arcs (spark)`` (the same maps per class pair of a problem): the pairs and their distances equal the
    portable joins', and so the pair-based measures per instance."""
    from hiersql.measures import pair_based

    engine = SparkEngine(spark, partition_rows=None)
    engine.copy_store(generated)
    options = PAIR_CASES[case]
    metrics = ["graph_induced_error", "mgia", "mgia_fn"]
    want = DuckDBEngine(generated).run_queries(pair_based.PLAN, metrics, options, PAIR_STAGES_SEEN)
    rows, got = rows_and_stages(engine, pair_based.PLAN, metrics, options, PAIR_STAGES_SEEN)
    assert len(got["distances_seen"]) == len(want["distances_seen"]) > 1000
    for name in PAIR_STAGES_SEEN:
        assert sorted(got[name]) == sorted(want[name]), name
    assert_rows_match(rows, reference(generated, metrics, options))


@pytest.mark.spark
@pytest.mark.parametrize("case", PAIR_CASES)
def test_spark_pair_arcs_on_the_hard_cases_equal_duckdb(spark, store, case):
    """``pair_arcs (spark)`` (each class pair's distance from the broadcast ancestor maps) on the small DAG:
    X below A1 and B1 (two paths to R), labels meeting only at the root (A2 and B1), an empty truth (i3), a
    system predicting nothing ("quiet") and an instance nobody predicts (i4): the arcs equal DuckDB's, and so
    do every pair-based measure; ``pair_distances_of``, which the portable ``pair_arcs`` reads, is not
    computed (a plain view no stage reads)."""
    from hiersql.measures import pair_based

    engine = SparkEngine(spark, partition_rows=None)
    engine.copy_store(store)
    options = PAIR_CASES[case]
    arcs = {"arcs_seen": PAIR_STAGES_SEEN["arcs_seen"]}
    metrics = ["graph_induced_error", "mgia", "mgia_fn"]
    want = DuckDBEngine(store).run_queries(pair_based.PLAN, metrics, options, arcs)["arcs_seen"]
    rows, got = rows_and_stages(engine, pair_based.PLAN, metrics, options, arcs)
    assert sorted(got["arcs_seen"]) == sorted(want)
    assert {d for *_, d in want} >= ({0, 1, 2} if options.max_distance else {0, 1, 2, 3, 4})
    assert "pair_distances_of" not in engine._files and "pair_ancestor_maps" in engine._files
    rows += compute(engine, ["all_pairs_error"], options)  # a run of its own: it takes no maximum distance
    assert_rows_match(rows, reference(store, [*metrics, "all_pairs_error"], options))


LCA_CASES = {"unbounded": Options(lca_graph="extended"),
             "max_distance_2": Options(lca_graph="extended", max_distance=2),
             "greedy_max_distance_1": Options(max_distance=1)}
LCA_STAGES = {"labels_seen": "SELECT inst, side, label, shared FROM lca_labels",
              "meetings_seen": "SELECT inst, t_label, p_label, t_shared, p_shared, lca, up_t, up_p "
                               "FROM lca_pair_meetings",
              "path_nodes_seen": "SELECT node, lca, step, v FROM lca_path_nodes"}


def assert_lca_stages_equal(engine: SparkEngine, store: Store, options: Options,
                            stages: dict[str, str] = LCA_STAGES) -> dict[str, list[tuple]]:
    """The rows of ``stages`` (queries of the LCA plan's stages) computed by ``engine`` (a new Spark engine)
    equal DuckDB's for ``store``, and so do the LCA measures, in one run of the plan; DuckDB's rows of the
    stages."""
    from hiersql.measures import lca

    engine.copy_store(store)
    metrics = ["lca_precision", "lca_recall", "lca_f1"]
    want = DuckDBEngine(store).run_queries(lca.PLAN, metrics, options, stages)
    rows, got = rows_and_stages(engine, lca.PLAN, metrics, options, stages)
    for name in stages:
        assert sorted(got[name]) == sorted(want[name]), name
    assert_rows_match(rows, reference(store, metrics, options))
    return want


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("case", LCA_CASES)
def test_spark_lca_labels_and_meetings_equal_duckdb(spark, generated, case):
    """``lca_labels (spark)`` (each node's proper ancestors an array, broadcast, collected per instance),
    ``lca_pair_meetings (spark)`` (ancestor maps, the shared keys of least cost) and ``lca_dag_path_nodes
    (spark)`` (the same maps, looked up at both ends of each step): the rows of ``lca_labels``, the meetings
    and ``lca_path_nodes`` equal DuckDB's portable ones, and so the LCA measures."""
    options = LCA_CASES[case]
    want = assert_lca_stages_equal(SparkEngine(spark), generated, options)
    assert len(want["meetings_seen"]) > 300
    sides = generated.con.sql("SELECT 2 * (SELECT count(*) FROM truth) + (SELECT count(*) FROM predictions)")
    assert len(want["labels_seen"]) < sides.fetchall()[0][0]  # labels with a descendant on their side dropped
    longest = max(step for *_, step, _ in want["path_nodes_seen"])
    assert longest == 1 if options.max_distance == 1 else longest >= 2  # paths that need the closure


def test_a_hint_comment_closing_a_select_list_becomes_a_spark_hint():
    from hiersql import engines

    for params in ({"max_distance": None, "max_climb": None}, {"max_distance": 2, "max_climb": 2}):
        spark = engines.render("pair_based", "pair_distances_of", params, "spark", pretty=False)
        assert "SELECT /*+ BROADCAST(cu), BROADCAST(cv) */ l.system" in spark
        assert "BROADCAST" not in engines.render("pair_based", "pair_distances_of", params, "duckdb")
    meetings = engines.render("lca", "lca_pair_meetings", {"max_distance": None}, "spark", pretty=False)
    assert "SELECT /*+ BROADCAST(cx), BROADCAST(cz) */ q.inst" in meetings
    assert "SELECT /*+ BROADCAST(a) */ s.inst" in meetings  # lca_labels (spark), composed in


@pytest.mark.spark
def test_the_ancestor_maps_are_broadcast_whatever_their_size(spark, generated):
    """With automatic broadcasts off, the hinted joins of the pair distances are still broadcast hash joins:
    the label pairs are not shuffled to meet their maps, nor the closure rows to meet the node positions (the
    maps, composed in here, are built once for each of their two readers)."""
    from hiersql import engines

    engine = SparkEngine(spark)
    engine.copy_store(generated)
    engine.execute("CREATE OR REPLACE TEMPORARY VIEW label_pairs AS "
                   + engines.render("pair_based", "label_pairs", {}, "spark"))
    sql = engines.render("pair_based", "pair_distances_of", {"max_distance": None, "max_climb": None}, "spark",
                         skip=frozenset({"label_pairs"}))
    before = spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        plan = spark.sql(sql)._jdf.queryExecution().executedPlan().toString()
    finally:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", before)
    assert plan.count("BroadcastHashJoin") == 4, plan
    assert plan.count("SortMergeJoin") == 1, plan  # truth and predictions into label_pairs, nothing else
