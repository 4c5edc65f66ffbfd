"""The SQL measures on real Spark (pyspark, local mode) equal DuckDB's.

Spark needs a Java runtime (17); without it the tests fail with that message: they must run in CI. Marked slow:
the session takes 15-40 s to start and each evaluation, even of three instances, runs a few dozen Spark stages
(5-30 s on the shared machine).
"""

from __future__ import annotations

import re
import tempfile
from collections import Counter
from pathlib import Path
from urllib.parse import urlparse

import pyarrow as pa
import pytest
import sqlglot

from hiersql.engines import PARTITION_AT, STAGE_DIR, STORE_TABLES, SparkEngine
from hiersql.errors import InputError
from hiersql.inputs.store import Store
from hiersql.inputs.taxonomy import Taxonomy
from hiersql.measures import Options, compute
from hiersql.options import SparkStageLost
from tests._engine_cases import (
    SET_BASED,
    assert_dag_case,
    assert_rows_match,
    dag_store,
    germeval_store,
    hand_store,
    reference,
)

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def germeval(data_dir):
    return germeval_store(data_dir)


def test_hemkit_graphs_and_every_step_solved_per_partition_in_the_executors(spark):
    """A DAG with several shortest paths: HEMKit's graphs with every step that declares partition_by solved per
    partition in the executors (partition_rows=0: however few rows; 4 shuffle partitions, the conftest's
    local[2] on 2 cores or more); the minimal graphs on the driver: tests/test_engines.py."""
    engine = SparkEngine(spark, partition_rows=0)
    engine.copy_store(dag_store())
    assert_dag_case(engine, Options(lca_graph="hemkit"), per_partition=True)
    # the others (LCA minimal graphs, HCM root paths) on the driver: docs/engines.md
    assert engine.partitions_solved.keys() == {"pairings", "path_cover", "matching", "hemkit_graphs"}
    assert min(engine.partitions_solved.values()) > 1


def test_partitioned_steps_on_the_driver_of_a_local_master_by_default(spark):
    """``partition_rows="auto"``: on the conftest's ``local[2]`` every step is solved on the driver (the
    Python workers share its cores; ``None``: the per-partition tests pass ``0``), unless the session's
    ``hiersql.partitionRows`` says otherwise; a number given is kept."""
    assert spark.sparkContext.master.startswith("local")
    assert SparkEngine(spark).partition_rows is None
    assert SparkEngine(spark, partition_rows=0).partition_rows == 0
    assert SparkEngine(spark, partition_rows=10).partition_rows == 10
    for value, want in (("0", 0), ("100", 100)):  # the setting, on any master (the cluster tests cross it)
        spark.conf.set(PARTITION_AT, value)
        try:
            assert SparkEngine(spark).partition_rows == want
        finally:
            spark.conf.unset(PARTITION_AT)
    spark.conf.set(PARTITION_AT, "many")
    try:
        with pytest.raises(InputError, match=r"^--spark-conf: must be a whole number of rows, 0 or more: "
                                             r"'hiersql.partitionRows=many'$"):
            SparkEngine(spark)
    finally:
        spark.conf.unset(PARTITION_AT)


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


def test_node_closure_computed_from_the_engines_own_closure(spark):
    """The Spark variants of the set-based, pair-based and LCA queries read the closure on node positions: an
    engine given the store's tables copies the store's ``node_closure``; one whose closure it built itself
    computes ``node_closure`` from it when a stage first reads it, and the values equal DuckDB's on the DAG
    example (two parents, a tolerance that makes MGIA's and LCA's choices)."""
    store = dag_store()
    options = Options(lca_graph="greedy", max_distance=3)
    metrics = ["hierarchical_f1", "mgia", "lca_f1"]
    engine = SparkEngine(spark)
    engine.copy_store(store, tables=[t for t in STORE_TABLES if t != "closure"])
    engine.build_closure()
    assert_rows_match(compute(engine, metrics, options), reference(store, metrics, options))
    got = sorted(engine.execute("SELECT ancestor, descendant, distance FROM node_closure"))
    assert got == sorted(store.con.execute("SELECT ancestor, descendant, distance FROM node_closure").fetchall())
    engine.close()


def test_closure_by_recursive_cte_in_spark_on_germeval(spark, germeval):
    engine = SparkEngine(spark, tables={"edges": "ge_edges", "nodes": "ge_nodes", "closure": "ge_closure"})
    engine.copy_store(germeval, tables=("edges", "nodes"))
    engine.build_closure()
    got = sorted(engine.execute("SELECT ancestor, descendant, distance FROM ge_closure"))
    assert got == sorted(germeval.con.execute("SELECT ancestor, descendant, distance FROM closure").fetchall())


def test_evaluate_command_computes_in_spark(spark, data_dir, capsys, tmp_path):
    """``hiersql evaluate --engine spark``: the same rows as the embedded DuckDB run, for a family of each kind
    (SQL alone, a pairing step, an LCA graph step); the command removes its stage folder when it ends."""
    from tests._engine_cases import cli_rows

    canonical = data_dir / "canonical"
    args = ["--taxonomy", str(canonical / "taxonomy.tsv"), "--truth", str(canonical / "truth_b.tsv"),
            "--pred", str(canonical / "pred_b" / "LT-UHH__baseline.tsv"), "--metrics", "hp,hf,gie,mgia,lca_f"]
    want = cli_rows(capsys, args)
    try:
        got = cli_rows(capsys, [*args, "--engine", "spark", "--spark-master", "local[2]",
                                "--spark-conf", f"{STAGE_DIR}={tmp_path}"])
    finally:  # the shared session keeps the setting
        spark.conf.unset(STAGE_DIR)
    assert_rows_match(got, want)
    assert list(tmp_path.iterdir()) == []  # the stage folder made inside it is gone


def test_a_part_read_twice_is_computed_once(spark):
    """Spark inlines a common table expression and a view at every reference: a CTE read twice becomes a
    stored stage of its own (``<stage>__<cte>``), and a plain view that one query reads twice is
    checkpointed before that query runs; the rows stay those of the query as written."""
    engine = SparkEngine(spark)
    engine.write("numbers", pa.table({"x": [1, 2, 3, 4]}))
    query = ("WITH big AS (SELECT x FROM numbers WHERE x > 1) "
             "SELECT a.x AS a, b.x AS b FROM big AS a JOIN big AS b ON b.x = a.x + 1")
    rewritten, _ = engine._computed_once("pairs", sqlglot.parse_one(query, read="spark"))
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


def _local_path(uri: str) -> Path:
    return Path(urlparse(uri).path)


def test_stages_are_parquet_files_of_a_temporary_folder_removed_on_close(spark):
    """On a local master, each stage's rows are Parquet files of a temporary folder of the driver, which the
    engine's views read (its lineage cut); :meth:`close` removes the folder."""
    engine = SparkEngine(spark)
    engine.copy_store(hand_store())
    compute(engine, SET_BASED)
    folder = Path(engine.stage_dir)
    assert folder.parent == Path(tempfile.gettempdir())
    assert {"truth", "predictions", "set_based_instance"} <= {
        p.name.split("-", 1)[1] for p in folder.iterdir()}
    files = spark.table("set_based_instance").inputFiles()
    assert files and all(folder in _local_path(f).parents for f in files)
    engine.close()
    assert not folder.exists()


def test_the_stage_dir_setting_places_the_stages(spark, tmp_path):
    """``hiersql.stageDir`` (a folder every executor sees): the stages go to a new folder inside it."""
    spark.conf.set(STAGE_DIR, str(tmp_path))
    try:
        engine = SparkEngine(spark)
    finally:
        spark.conf.unset(STAGE_DIR)
    assert Path(engine.stage_dir).parent == tmp_path
    engine.write("numbers", pa.table({"x": [1, 2, 3]}))
    engine._materialize("odd", "SELECT x FROM numbers WHERE x % 2 = 1")
    assert engine.execute("SELECT x FROM odd ORDER BY x") == [(1,), (3,)]
    assert all(Path(engine.stage_dir) in _local_path(f).parents for f in spark.table("odd").inputFiles())
    engine.close()
    assert list(tmp_path.iterdir()) == []


def test_a_stage_dir_where_no_folder_can_be_made_is_an_input_error(spark, tmp_path):
    (tmp_path / "file").write_text("not a folder")
    spark.conf.set(STAGE_DIR, str(tmp_path / "file"))
    try:
        with pytest.raises(InputError, match=r"^--spark-conf: no folder for the stages can be made there \(Not a "
                                             r"directory\): 'hiersql.stageDir=.*file'$"):
            SparkEngine(spark)
    finally:
        spark.conf.unset(STAGE_DIR)


def test_a_small_stage_is_broadcast(spark):
    """A stage stored as files has their size: Spark joins two small stages by broadcasting one. As a local
    checkpoint (no stage folder) a stage keeps the estimate of the joins that made it (their sizes multiplied:
    five joined tables of the hand example pass Spark's 10 MB), and the same join is a sort-merge join of two
    shuffled sides."""
    query = "SELECT a.instance_id FROM wide_a AS a JOIN wide_b AS b ON a.instance_id = b.instance_id"
    kinds = {}
    for stored in (True, False):
        engine = SparkEngine(spark)
        if not stored:
            engine.close()
            engine.stage_dir = None
        engine.copy_store(hand_store())
        for name in ("wide_a", "wide_b"):
            engine._materialize(name, "SELECT t.instance_id, c.ancestor FROM truth AS t JOIN predictions AS p"
                                      " ON p.instance_id = t.instance_id JOIN closure AS c ON c.descendant = t.label"
                                      " JOIN closure AS d ON d.descendant = p.label"
                                      " JOIN closure AS e ON e.descendant = c.ancestor AND e.ancestor = d.ancestor")
        plan = spark.sql(query)._jdf.queryExecution().sparkPlan().toString()
        kinds[stored] = {k for k in ("BroadcastHashJoin", "SortMergeJoin") if k in plan}
        engine.close()
    assert kinds == {True: {"BroadcastHashJoin"}, False: {"SortMergeJoin"}}


def test_a_stage_lost_with_its_executor_is_one_line_naming_the_settings_that_mend_it(spark):
    """Without a stage folder (a cluster without hiersql.stageDir) the stages are local checkpoints, held by the
    executors that made them: an executor that ends (most often out of its memory) takes them along. Here every
    checkpoint the run made is removed after its first SQL step, as an executor's end removes its own: the next
    step that reads one fails with Spark's CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND, which is one line naming
    --spark-conf, the step, Spark's words and the two settings that mend it (not an internal error)."""
    jsc = spark.sparkContext._jsc
    before = set(jsc.getPersistentRDDs().keys())  # other tests' checkpoints in this session stay

    class LosingExecutors(SparkEngine):
        def stage(self, *args, **kwargs):
            super().stage(*args, **kwargs)
            for key, rdd in jsc.getPersistentRDDs().items():
                if key not in before:
                    rdd.unpersist()

    engine = LosingExecutors(spark)
    engine.close()
    engine.stage_dir = None
    engine.copy_store(hand_store())
    with pytest.raises(SparkStageLost) as raised:
        compute(engine, ["hp"], Options())
    assert raised.value.option == "spark_conf"
    assert re.fullmatch(r"Spark lost a stage's rows while the SQL step set_based\.\w+: the executor that held them"
                        r" ended, most often out of memory \(\[CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND\] Checkpoint block"
                        r" rdd_\d+_\d+ not found!; spark\.executor\.memory=1g\): try spark\.executor\.memory=2g, or"
                        r" hiersql\.stageDir=DIR, a folder every executor sees, where a stage outlives an executor",
                        raised.value.rule), raised.value.rule



def test_an_error_of_spark_no_rule_names_is_one_line_of_its_own_words(spark, monkeypatch, capsys):
    """An error of Spark's that no rule of hiersql's names (here two real ones, raised where the run would
    be: an exception of a Python worker, and one of the JVM) is an internal error in one line of Spark's own
    words: the workers' exception, the Java exception's message; not the workers' traceback or the JVM's stack
    joined on one line."""
    from py4j.protocol import Py4JJavaError

    from hiersql.cli import main

    def failing(batches):
        raise ValueError("no such thing")
        yield

    with pytest.raises(Exception, match="Python worker") as worker:
        spark.range(1).mapInArrow(failing, "id long").collect()
    with pytest.raises(Py4JJavaError) as java:
        spark.sparkContext._jvm.java.io.FileInputStream("/nonexistent/x")
    for raised, said in ((worker.value, "ValueError: no such thing"),
                         (java.value, "java.io.FileNotFoundException: /nonexistent/x (No such file or directory)")):
        monkeypatch.setattr("hiersql.cli.evaluate.run", lambda args, exc=raised: (_ for _ in ()).throw(exc))
        assert main(["evaluate", "--taxonomy", "t", "--truth", "t", "--pred", "t", "--engine", "spark"]) == 1
        err = capsys.readouterr().err
        assert re.fullmatch(rf"hiersql: internal error: {type(raised).__name__}: {re.escape(said)}"
                            r"( \(Spark's log: [^)]+\))?\n", err), err

def test_copy_store_through_parquet_equals_the_arrow_upload(spark, germeval):
    """With a stage folder, tables are written as Parquet files that Spark reads: the same columns, types and
    rows as through Arrow (the upload of an engine without a stage folder: a cluster master without
    hiersql.stageDir); an empty table keeps its types."""
    engines = {}
    for way in ("pq", "arrow"):
        engine = SparkEngine(spark, tables={t: f"{way}_{t}" for t in STORE_TABLES})
        if way == "arrow":
            engine.close()
            engine.stage_dir = None
        engine.copy_store(germeval)
        engine.write(f"{way}_empty", pa.table({"x": pa.array([], pa.int64()), "s": pa.array([], pa.string())}))
        engines[way] = engine
    assert {p.name for p in Path(engines["pq"].stage_dir).glob("*-pq_truth/*")} == {"part-0.parquet"}
    for name in (*STORE_TABLES, "empty"):
        pq_frame, arrow_frame = spark.table(f"pq_{name}"), spark.table(f"arrow_{name}")
        assert [(f.name, f.dataType) for f in pq_frame.schema] == [(f.name, f.dataType) for f in arrow_frame.schema]
        assert Counter(map(tuple, pq_frame.collect())) == Counter(map(tuple, arrow_frame.collect()))
    assert spark.table("pq_truth").count() == germeval.con.execute("SELECT count(*) FROM truth").fetchone()[0]
    for engine in engines.values():
        engine.close()


def test_the_printed_spark_script_fails_where_evaluate_refuses(spark, capsys, tmp_path):
    """The hand example with the root A as a true label: evaluate refuses the scoring family; the printed Spark
    script of ``pl`` fails in Spark with hiersql's message (``raise_error`` of its check, plan.sql_checks)."""
    from hiersql.cli import main

    store = hand_store()
    store.con.execute("UPDATE truth SET label = 'A' WHERE instance_id = '2'")
    with pytest.raises(InputError, match="never a label"):
        compute(store, ["pl"], Options())
    session = spark.newSession()
    engine = SparkEngine(session)
    engine.copy_store(store)
    assert main(["sql", "pl", "--dialect", "spark", "--stage-dir", str(tmp_path)]) == 0
    statements = [s for s in capsys.readouterr().out.split(";\n") if s.strip()]
    try:
        with pytest.raises(Exception, match=re.escape(
                "hiersql: truth: the root of a scoring tree is never a label (Lanus et al. §III): 'A'")):
            for statement in statements:
                session.sql(statement).collect()
    finally:
        engine.close()


@pytest.mark.parametrize("args", [["hf"], ["pl"], ["lca_f1", "--lca-graph", "extended"], ["hcm_f1"]],
                         ids=["hf", "pl", "lca_f1-extended", "hcm_f1"])
def test_the_printed_spark_script_runs_in_spark(spark, capsys, tmp_path, args):
    """``hiersql sql METRIC --dialect spark`` run statement by statement in a session of its own over the hand
    example's tables: every stage a Parquet folder of ``--stage-dir`` read by a temporary view (Spark has no
    ``CREATE TEMPORARY TABLE ... AS``), the values those of DuckDB; for a family with a Python step (HCM's
    root paths), the statements before it run. The LCA script finishes: cached views kept the plans
    of the views they read, and its 16th stage ran the driver out of memory. The last statement reads each stage
    it names from that stage's folder."""
    from hiersql.cli import main
    from hiersql.plan import Row

    session = spark.newSession()  # its own temporary views: none of the other tests' stages
    session.conf.set("spark.sql.maxMetadataStringLength", "1000")  # a plan's folders in full (100 characters)
    store = hand_store()
    engine = SparkEngine(session)  # its folder holds the tables copied (removed by close)
    engine.copy_store(store)
    assert main(["sql", *args, "--dialect", "spark", "--stage-dir", str(tmp_path)]) == 0
    script = capsys.readouterr().out
    checks, script = script.split("\n\n", 1)  # the input rules' check query and views first (docs/sql.md)
    runnable = script.split("-- Python step")[0]
    statements = [s.strip() for s in runnable.split(";\n") if s.strip()]
    assert statements[0].startswith(f"INSERT OVERWRITE DIRECTORY '{tmp_path}/") and "raise_error(" in checks.lower()
    try:
        for statement in filter(str.strip, checks.split(";\n")):
            assert session.sql(statement).collect() == []  # the check query: no fault, no row; views: none
        rows = [session.sql(statement).collect() for statement in statements][-1]
        stages = re.findall(rf"^INSERT OVERWRITE DIRECTORY '{tmp_path}/(\w+)' USING parquet$", runnable, re.MULTILINE)
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(stages)
        if "-- Python step" not in script:  # the summary: the stages it reads, scanned from their folders
            read = {stage for stage in stages if re.search(rf"\b{stage}\b", statements[-1])}
            plan = session.sql(f"EXPLAIN {statements[-1]}").collect()[0][0]
            assert read and read <= set(re.findall(rf"{tmp_path}/(\w+)\]", plan)), (read, plan)
    finally:
        engine.close()
    if args[0] == "hcm_f1":  # the Python step is the runners'
        assert "-- Python step root_paths" in script
        return
    got = sorted(Row(*r) for r in rows)
    options = Options(lca_graph="extended") if "extended" in args else Options()
    assert_rows_match(got, reference(store, [args[0]], options), tol=1e-12)
