"""With the Spark engine, Spark reads Parquet, Spark tables and Spark DataFrames itself (hiersql.engines.spark.sources).

GermEval 2019 subtask B as Parquet (``gold``, ``runs`` with a system column split over two part files,
``genres``) gives every family's values of the file-based DuckDB run; a Spark table saved in a temporary
warehouse folder and a Spark query are sources; bad rows are one-line errors naming the table, the column, the
row key and the value, as the store's. One SparkSession for the whole test session (conftest ``spark``).
"""

from __future__ import annotations

import pandas as pd
import pytest

from hiersql import InputError, Store, Taxonomy
from hiersql.cli import main
from hiersql.engines import SparkEngine
from hiersql.engines.spark.sources import load, open_frame, parquet_rows, spark_source
from hiersql.errors import DataWarning
from hiersql.measures import compute
from tests._jvm import run_with_jvm_log
from tests._sources_cases import (
    GENRES,
    GOLD,
    HAND_EDGES,
    HAND_PREDS,
    HAND_TRUTH,
    HAND_VALUES,
    RUNS,
    WEIRD,
    assert_same_values,
    csv_rows,
    file_reference,
    germeval_arrow,
    rank_by_name,
)

pytestmark = [pytest.mark.spark, pytest.mark.slow]
SPARK = ["--engine", "spark", "--spark-master", "local[2]"]


@pytest.fixture(scope="module")
def parquet(tmp_path_factory, data_dir):
    """GermEval B as Parquet: ``gold.parquet``, ``genres.parquet`` and ``runs.parquet/`` (a folder of two part
    files, as Spark writes it, the median system split between them)."""
    import pyarrow.parquet as pq

    folder = tmp_path_factory.mktemp("parquet")
    tables = germeval_arrow(data_dir)
    for name in (GOLD, GENRES):
        pq.write_table(tables[name], folder / f"{name}.parquet")
    runs = folder / f"{RUNS}.parquet"
    runs.mkdir()
    half = tables[RUNS].num_rows // 2
    pq.write_table(tables[RUNS].slice(0, half), runs / "part-00000.parquet")
    pq.write_table(tables[RUNS].slice(half), runs / "part-00001.parquet")
    return folder


def evaluate_cli(capsys, args: list[str]) -> dict:
    assert main(["evaluate", *args, "--format", "csv"]) == 0
    return csv_rows(capsys.readouterr().out)


def test_which_sources_spark_reads():
    assert spark_source("runs.parquet") and spark_source("runs/*.parquet") and spark_source("spark:db.runs")
    assert not spark_source("runs.tsv") and not spark_source("duckdb:w.parquet::runs")


def test_the_rows_of_parquet_sources_from_their_footers(parquet, data_dir):
    """What ``hiersql evaluate`` sizes Spark's JVM by when Spark reads the inputs: a file, a folder of part
    files, a glob; any other source makes the size unknown."""
    tables = germeval_arrow(data_dir)
    gold, runs = parquet / f"{GOLD}.parquet", parquet / f"{RUNS}.parquet"
    both = tables[GOLD].num_rows + tables[RUNS].num_rows
    assert parquet_rows([gold, runs]) == parquet_rows([str(gold), f"{runs}/*.parquet"]) == both
    assert parquet_rows([gold, "spark:db.runs"]) is None
    assert parquet_rows([gold, data_dir / "canonical" / "truth_b.tsv"]) is None
    assert parquet_rows([gold, parquet / "missing.parquet"]) is None


def test_a_small_parquet_input_starts_a_small_inputs_jvm(parquet, tmp_path):
    """``hiersql evaluate`` in a process of its own, Spark reading the Parquet files (the predictions of one
    system): the JVM (its flags in its log) compiles with C1 alone, as for a small input read by the store."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    runs = pq.read_table(parquet / f"{RUNS}.parquet")
    first = pc.min(runs["model"]).as_py()
    pq.write_table(runs.filter(pc.equal(runs["model"], first)), tmp_path / "one.parquet")
    code, out, err, log = run_with_jvm_log(
        ["evaluate", "--taxonomy", str(parquet / f"{GENRES}.parquet"),
         "--truth", str(parquet / f"{GOLD}.parquet"), "--pred", str(tmp_path / "one.parquet"),
         "--instance-col", "doc", "--label-col", "genre", "--system-col", "model", "--parent-col", "parent_genre",
         "--child-col", "child_genre", "--metrics", "hp", "--format", "csv", "--engine", "spark",
         "--spark-master", "local[1]", "--spark-conf", "spark.driver.extraJavaOptions=-XX:+PrintCommandLineFlags"],
        tmp_path)
    assert code == 0, err
    flags = next(line for line in log.splitlines() if "-XX:+PrintCommandLineFlags" in line).split()
    assert "-XX:TieredStopAtLevel=1" in flags, flags
    assert set(csv_rows(out)) == {(first, "hierarchical_precision", "micro"),
                                  (first, "hierarchical_precision", "macro")}


def test_a_uri_is_spark_s_to_read(spark, parquet, data_dir, capsys):
    """A Parquet source named by a URI (``file://``, ``hdfs://``, ``s3a://``) is read by Spark as it is (it was
    a local path, "not found"); a file system Spark cannot read is one line with Spark's own reason."""
    taxonomy = ["--taxonomy", str(parquet / f"{GENRES}.parquet"), "--parent-col", "parent_genre",
                "--child-col", "child_genre", "--instance-col", "doc", "--label-col", "genre", "--system-col", "model",
                "--metrics", "hp"]
    by_path = evaluate_cli(capsys, [*taxonomy, "--truth", str(parquet / f"{GOLD}.parquet"),  # read by DuckDB
                                    "--pred", str(parquet / f"{RUNS}.parquet")])
    by_uri = evaluate_cli(capsys, [*taxonomy, "--truth", (parquet / f"{GOLD}.parquet").as_uri(),
                                   "--pred", (parquet / f"{RUNS}.parquet").as_uri(), *SPARK])
    assert len(by_path) == 19 * 2
    assert_same_values(by_uri, by_path)
    assert main(["evaluate", *taxonomy, "--truth", str(parquet / f"{GOLD}.parquet"),
                 "--pred", "s3a://bucket/runs.parquet", *SPARK]) == 2
    assert capsys.readouterr().err == ("hiersql: error: s3a://bucket/runs.parquet: cannot read file (java.lang."
                                       "RuntimeException: java.lang.ClassNotFoundException: Class org.apache.hadoop"
                                       ".fs.s3a.S3AFileSystem not found)\n")


def test_germeval_b_parquet_read_by_spark_equals_the_files(spark, parquet, data_dir, capsys):
    """The command of docs/warehouse.md: truth and predictions read by Spark. The tables Spark makes hold the
    rows of the file-based store, systems included, ranks by label name (Parquet has no row order), so every
    family's values are the file-based ones so ranked (the engine tests check every family on the store's
    tables: ``test_engines_spark.py``); the CLI's set-based values equal the file-based run's (19 systems)."""
    folder = data_dir / "canonical"
    engine = SparkEngine(spark)
    with pytest.warns(DataWarning, match="ranked by name"):
        load(engine, Store(), folder / "taxonomy.tsv", parquet / f"{GOLD}.parquet",
             [(None, parquet / f"{RUNS}.parquet")], instance_col="doc", label_col="genre", system_col="model")
    by_file = Store()
    by_file.load(folder / "taxonomy.tsv", folder / "truth_b.tsv",
                 {p.stem: p for p in sorted((folder / "pred_b").glob("*.tsv"))})
    rank_by_name(by_file.con)
    for table, columns in (("truth", "instance_id, label, rank"), ("instances", "instance_id"),
                           ("predictions", "system, instance_id, label, rank, score"), ("systems", "system")):
        got = sorted(engine.execute(f"SELECT {columns} FROM {table}"))
        assert got == sorted(by_file.con.execute(f"SELECT {columns} FROM {table}").fetchall()), table
    got = evaluate_cli(capsys, [
        "--taxonomy", str(parquet / f"{GENRES}.parquet"), "--truth", str(parquet / f"{GOLD}.parquet"),
        "--pred", str(parquet / f"{RUNS}.parquet"), "--instance-col", "doc", "--label-col", "genre",
        "--system-col", "model", "--parent-col", "parent_genre", "--child-col", "child_genre",
        "--metrics", "hp,hr,hf", *SPARK])
    metrics = ("hierarchical_precision", "hierarchical_recall", "hierarchical_f1")
    want = {k: v for k, v in file_reference(data_dir).items() if k[1] in metrics}
    assert len({k[0] for k in got}) == 19
    assert got == want  # DuckDB's digits


@pytest.fixture(scope="module")
def warehouse(spark, tmp_path_factory):
    """A Spark database in a temporary folder holding the hand example (``runs``, ``gold``, ``tax``)."""
    folder = tmp_path_factory.mktemp("spark-warehouse")
    database = "hiersql_sparksrc"
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {database} LOCATION '{folder}'")
    frames = {"runs": pd.DataFrame(HAND_PREDS, columns=["model", "doc", "genre"]),
              "gold": pd.DataFrame(HAND_TRUTH, columns=["doc", "genre"]),
              "tax": pd.DataFrame(HAND_EDGES, columns=["parent", "child"])}
    for name, frame in frames.items():
        spark.createDataFrame(frame).write.saveAsTable(f"{database}.{name}")
    yield database
    spark.sql(f"DROP DATABASE {database} CASCADE")


def test_spark_tables_and_a_query_in_one_command(spark, warehouse, tmp_path, capsys):
    """``spark:db.table`` for the taxonomy, the truth and the predictions, and ``spark:SELECT``: the hand
    values; the per-instance values computed by Spark."""
    ref = f"spark:{warehouse}."
    cols = ["--instance-col", "doc", "--label-col", "genre", "--system-col", "model"]
    got = evaluate_cli(capsys, ["--taxonomy", ref + "tax", "--truth", ref + "gold", "--pred", ref + "runs",
                                *cols, "--metrics", "hp,hr", "--average", "micro", *SPARK,
                                "--per-instance", str(tmp_path)])
    assert {(s, m): v for (s, m, _), v in got.items()} == pytest.approx(HAND_VALUES)
    per_instance = pd.read_csv(tmp_path / "set_based.csv")
    # M1 predicts {a, a1}, {a} for truth {a, a1}, {b}: 2 and 0 common nodes
    assert per_instance[["system", "instance_id", "n_both"]].values.tolist() == [
        ["M1", "i1", 2], ["M1", "i2", 0], ["M2", "i1", 1], ["M2", "i2", 1]]
    query = f"spark:SELECT * FROM {warehouse}.runs WHERE model = 'M2'"
    got = evaluate_cli(capsys, ["--taxonomy", ref + "tax", "--truth", ref + "gold", "--pred", query, *cols,
                                "--metrics", "hp", "--average", "micro", *SPARK])
    assert got == {("M2", "hierarchical_precision", "micro"): 1.0}


def test_without_the_spark_engine_a_spark_table_is_one_line(warehouse, capsys):
    code = main(["evaluate", "--taxonomy", f"spark:{warehouse}.tax", "--truth", "x.tsv", "--pred", "y.tsv"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "a spark: table is read by Spark" in err, err


def test_spark_dataframes_with_the_users_names_in_python(spark):
    """Spark DataFrames as truth and predictions (names with quotes, spaces and semicolons), into a
    SparkEngine; and the same DataFrame given to the DuckDB store is collected."""
    from hiersql import Evaluator

    runs = spark.createDataFrame(pd.DataFrame(HAND_PREDS, columns=[WEIRD["system"], WEIRD["instance"],
                                                                   WEIRD["label"]]))
    gold = spark.createDataFrame(pd.DataFrame(HAND_TRUTH, columns=[WEIRD["instance"], WEIRD["label"]]))
    cols = {"instance_col": WEIRD["instance"], "label_col": WEIRD["label"]}
    engine = SparkEngine(spark)
    load(engine, Store(), Taxonomy.from_edges(HAND_EDGES), gold, [(None, runs)], system_col=WEIRD["system"],
         **cols)
    rows = compute(engine, ["hp", "hr"])
    assert {(r.system, r.metric): r.value for r in rows if r.average == "micro"} == pytest.approx(HAND_VALUES)
    # mixed: M1 read by the store (checked against the truth Spark read), M2 by Spark
    m1 = {"instance_id": [i for s, i, _ in HAND_PREDS if s == "M1"], "label": [lab for s, _, lab in HAND_PREDS
                                                                              if s == "M1"]}
    m2 = runs.filter(runs[WEIRD["system"]] == "M2")
    engine = SparkEngine(spark)
    load(engine, Store(), Taxonomy.from_edges(HAND_EDGES), gold, [("M1", m1), (None, m2)],
         system_col=WEIRD["system"], **cols)
    assert engine.execute("SELECT system, source FROM systems ORDER BY system") == [
        ("M1", "M1=<columns>"), ("M2", f"<Spark DataFrame> ({WEIRD['system']}='M2')")]
    rows = compute(engine, ["hp", "hr"])
    assert {(r.system, r.metric): r.value for r in rows if r.average == "micro"} == pytest.approx(HAND_VALUES)
    ev = Evaluator(Taxonomy.from_edges(HAND_EDGES)).add_truth(gold, **cols)
    ev.add_predictions(None, runs, system_col=WEIRD["system"], **cols)
    got = {(r.system, r.metric): r.value for r in ev.evaluate(["hp", "hr"], average=["micro"]).itertuples()}
    assert got == pytest.approx(HAND_VALUES)


def test_the_python_example_of_docs_warehouse_runs(spark, tmp_path, monkeypatch):
    """The Python block of docs/warehouse.md's Spark section, run as written on the hand example (its
    ``gold_df`` and ``runs_df`` with the block's column names, ``taxonomy.tsv`` in the working folder)."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "warehouse.md").read_text(encoding="utf-8")
    block = text.split("into a `SparkEngine`:\n\n```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "taxonomy.tsv").write_text("".join(f"{p}\t{c}\n" for p, c in HAND_EDGES))
    scope = {"spark": spark, "gold_df": spark.createDataFrame(pd.DataFrame(HAND_TRUTH, columns=["doc", "genre"])),
             "runs_df": spark.createDataFrame(pd.DataFrame(HAND_PREDS, columns=["model", "doc", "genre"]))}
    exec(compile(block, "docs/warehouse.md", "exec"), scope)  # noqa: S102  (the project's own documentation)
    rows = scope["rows"]
    assert {(r.system, r.metric): r.value for r in rows if r.average == "micro" and r.metric != "hierarchical_f1"
            } == pytest.approx(HAND_VALUES)


def hand_load(spark, preds: pd.DataFrame, **kwargs) -> SparkEngine:
    engine = SparkEngine(spark)
    truth = spark.createDataFrame(pd.DataFrame(HAND_TRUTH, columns=["doc", "genre"]))
    load(engine, Store(), Taxonomy.from_edges(HAND_EDGES), truth, [(None, spark.createDataFrame(preds))],
         system_col="model", instance_col="doc", label_col="genre", **kwargs)
    return engine


BAD = [
    ([("M1", "i1", "a1"), ("M1", "i2", "zebra")],
     "<Spark DataFrame>, column 'genre', doc='i2', model='M1': label not in the taxonomy: 'zebra'"),
    ([("M1", "i1", "a1"), ("M1", "i2", None)],
     "<Spark DataFrame>, column 'genre', doc='i2', model='M1': missing instance_id or label (empty, None or NaN):"
     " \"instance_id='i2', label=None\""),
    ([("M1", "i1", "a1"), ("M1", None, "b")],
     "<Spark DataFrame>, column 'doc', genre='b', model='M1': missing instance_id or label (empty, None or NaN):"
     " \"instance_id=None, label='b'\""),
    ([("M1", "i1", "a1"), ("M2", "i9", "b")],
     "<Spark DataFrame>, column 'doc', doc='i9', model='M2': predicted instance has no truth: 'i9'"),
    ([("M1", "i1", "a1"), (None, "i2", "b")],
     "<Spark DataFrame>, column 'model', doc='i2': missing system (NULL or empty)"),
    ([("M1", 1.5, "a")],
     "<Spark DataFrame>: column 'doc' (instance) has type double; expected text or integer"),
    # two bad rows: the least by instance and label is named, not the first in Spark's scan order
    ([("M1", "i2", "zebra"), ("M1", "i1", "yak"), ("M1", "i1", "a1")],
     "<Spark DataFrame>, column 'genre', doc='i1', model='M1': label not in the taxonomy: 'yak'"),
    # a missing system written two ways: the least row of the two is named
    ([("M1", "i1", "a1"), ("", "i2", "b"), (None, "i1", "b")],
     "<Spark DataFrame>, column 'model', doc='i1': missing system (NULL or empty)"),
    # ... and two rows alike but for a NULL and an empty system: the NULL one
    ([("", "i1", "b"), (None, "i1", "b"), ("M1", "i1", "a1")],
     "<Spark DataFrame>, column 'model', doc='i1': missing system (NULL or empty)"),
    ([(None, "i1", "b"), ("", "i1", "b"), ("M1", "i1", "a1")],
     "<Spark DataFrame>, column 'model', doc='i1': missing system (NULL or empty)"),
    ([(None, "i2", "b"), ("", "i1", "b"), ("M1", "i1", "a1")],
     "<Spark DataFrame>, column 'model', doc='i1': missing system (NULL or empty): ''"),
]


@pytest.mark.parametrize(("rows", "message"), BAD)
def test_bad_rows_are_the_stores_errors(spark, rows, message):
    with pytest.raises(InputError) as info:
        hand_load(spark, pd.DataFrame(rows, columns=["model", "doc", "genre"]))
    assert str(info.value) == message


def test_ignored_rows_and_duplicates_are_counted(spark):
    """``unknown="ignore"``/``no_truth="ignore"`` drop the rows with a count, duplicates collapse with a
    count, as the store warns; and, as the store says of a table without row order whose instances are read
    with two rows or more (before the duplicates collapse and the unknown labels go: i1 of M1, i2 of M2), that
    its labels are ranked by name. The values are the hand example's."""
    rows = [*HAND_PREDS, ("M1", "i1", "a1"), ("M2", "i2", "zebra"), ("M2", "i7", "a"), ("M2", "i8", "a")]
    with pytest.warns(DataWarning) as caught:
        engine = hand_load(spark, pd.DataFrame(rows, columns=["model", "doc", "genre"]), unknown="ignore",
                           no_truth="ignore")
    messages = sorted(str(w.message) for w in caught if issubclass(w.category, DataWarning))
    assert messages == [
        "<Spark DataFrame> (model='M1'): 1 duplicate (instance_id, label) row(s) collapsed",
        "<Spark DataFrame> (model='M2'): ignored 1 label(s) not in the taxonomy (first: 'zebra')",
        "<Spark DataFrame> (model='M2'): ignored 2 predicted instance(s) with no truth (first: 'i7')",
        "<Spark DataFrame>: no rank or score column and no row order: the labels of an instance are ranked by name"
        " for the measures that read ranks (the confusion, scoring and severity families); give their order with"
        " --rank-col (rank_col=)",
    ]
    got = {(r.system, r.metric): r.value for r in compute(engine, ["hp", "hr"]) if r.average == "micro"}
    assert got == pytest.approx(HAND_VALUES)


def test_spaces_around_ids_and_labels_are_stripped_as_the_store_strips_them(spark):
    """Ids, labels and systems with spaces around them (ASCII, no-break, ideographic) are the hand example's,
    read by Spark as by the store; a tab is not a space (an unknown label there, as in the store). Two
    spellings of one system ('M1 ' and 'M1') are an error naming both, as in the store."""
    spaced = [(f"{m} ", f" {i}\u00a0", f"\u3000{label} ") for m, i, label in HAND_PREDS]
    engine = hand_load(spark, pd.DataFrame(spaced, columns=["model", "doc", "genre"]))
    got = {(r.system, r.metric): r.value for r in compute(engine, ["hp", "hr"]) if r.average == "micro"}
    assert {system for system, _ in got} == {"M1", "M2"}
    assert got == pytest.approx(HAND_VALUES)
    with pytest.raises(InputError) as info:
        hand_load(spark, pd.DataFrame([("M1 ", "i1", "a1"), ("M1", "i2", "b")], columns=["model", "doc", "genre"]))
    assert str(info.value) == ("<Spark DataFrame>: system column 'model' spells one system two ways, differing only"
                               " by the spaces around it: 'M1' and 'M1 '")
    with pytest.raises(InputError) as info:
        hand_load(spark, pd.DataFrame([("M1", "i1", "a1\t")], columns=["model", "doc", "genre"]))
    assert str(info.value).endswith("label not in the taxonomy: 'a1\\t'")


@pytest.mark.parametrize(("query", "message"), [
    ("spark:SELECT 1 AS x; DROP TABLE gold", "a query source must be one SELECT statement"),
    ("spark:WITH t AS (SELECT 'i9', 'a') INSERT INTO gold SELECT * FROM t", "a query source must be one SELECT"),
    ("spark:DROP TABLE gold", "cannot read the table ([TABLE_OR_VIEW_NOT_FOUND]"),  # a (strange) table name
])
def test_a_spark_query_source_is_one_select_refused_before_spark_runs_it(spark, warehouse, query, message):
    query = query.replace("gold", f"{warehouse}.gold")
    with pytest.raises(InputError) as info:
        open_frame(spark, query)
    assert str(info.value).startswith(f"{query}: {message}")
    assert spark.table(f"{warehouse}.gold").count() == len(HAND_TRUTH)
