"""Spark stages stored as Parquet files are read back by the driver from the files (pyarrow), without a Spark
job: a Python step's inputs and the row counts that decide where a step is solved."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pytest

from hiersql.engines import SparkEngine
from tests._engine_cases import spark_jobs

pytestmark = [pytest.mark.spark, pytest.mark.slow]

STAGE = ("SELECT x, CAST(x AS INT) AS small, x / 4 AS ratio, CAST(x AS STRING) AS label, x % 2 = 0 AS even, "
         "CASE WHEN x % 3 = 0 THEN NULL ELSE x END AS sometimes FROM numbers")


def _rows(table: pa.Table) -> Counter:
    return Counter(zip(*(table.column(i).to_pylist() for i in range(table.num_columns)), strict=True))


@pytest.fixture()
def engine(spark):
    engine = SparkEngine(spark)
    engine.write("numbers", pa.table({"x": pa.array(range(1, 41), pa.int64())}))
    yield engine
    engine.close()


def test_a_stored_stage_is_read_from_its_files_as_spark_gives_it(engine, spark):
    """The files give the columns, types and rows (nulls included) that Spark's own ``arrow`` gives, and
    no Spark job runs; an empty stage keeps its types."""
    engine._materialize("mixed", f"{STAGE} WHERE x > 3")
    engine._materialize("nothing", f"{STAGE} WHERE x > 100")
    for name, rows in (("mixed", 37), ("nothing", 0)):
        through_spark = engine.arrow(f"SELECT * FROM {name}")
        from_files, jobs = spark_jobs(spark, lambda name=name: engine._input(name))
        assert jobs == 0
        assert from_files.schema == through_spark.schema
        assert from_files.num_rows == rows
        assert _rows(from_files) == _rows(through_spark)
    assert _rows(engine._input("mixed"))[(6, 6, 1.5, "6", True, None)] == 1


def test_the_row_counts_of_stored_stages_come_from_their_files(engine, spark):
    """The count of rows of stored stages (which decides where a partitioned step is solved) reads the files'
    footers, no Spark job; a table that is not files (a plain view) is counted by Spark."""
    engine._materialize("odd", "SELECT x FROM numbers WHERE x % 2 = 1")
    assert spark_jobs(spark, lambda: engine._rows(["odd", "numbers"])) == (40 + 20, 0)
    engine._read_once = {"even"}
    engine._materialize("even", "SELECT x FROM numbers WHERE x % 2 = 0")
    count, jobs = spark_jobs(spark, lambda: engine._rows(["odd", "even"]))
    assert count == 40 and jobs > 0


def test_a_name_made_a_view_again_is_read_through_spark(engine, spark):
    """When a stored stage's name is taken by a plain view (or a frame of a source), its old files are no
    longer its rows: the step's input comes from Spark."""
    engine._materialize("part", "SELECT x FROM numbers WHERE x <= 5")
    assert sorted(engine._input("part").column("x").to_pylist()) == [1, 2, 3, 4, 5]
    engine._read_once = {"part"}
    engine._materialize("part", "SELECT x FROM numbers WHERE x > 38")
    rows, jobs = spark_jobs(spark, lambda: engine._input("part"))
    assert sorted(rows.column("x").to_pylist()) == [39, 40] and jobs > 0
    engine.use_frame("truth", spark.range(3).withColumnRenamed("id", "x"), computed=True)
    engine.write("truth", pa.table({"x": [7]}))  # files again
    assert engine._input("truth").column("x").to_pylist() == [7]
    engine.use_frame("truth", spark.range(2).withColumnRenamed("id", "x"), computed=True)
    assert sorted(engine._input("truth").column("x").to_pylist()) == [0, 1]


def test_a_stage_that_selects_a_stored_table_whole_is_its_files_under_a_second_name(engine, spark):
    """A stage whose query is every column of a stored table in order, every row, runs no Spark job and
    reads the table's files; a subset, a reordering, a renaming or a filter of its columns is stored anew."""
    engine.write("pairs", pa.table({"a": [1, 2, 3], "b": ["x", "y", "z"]}))
    whole, jobs = spark_jobs(spark, lambda: engine._materialize("copy", "SELECT a, b FROM pairs"))
    assert jobs == 0 and engine._files["copy"] == engine._files["pairs"]
    assert sorted(engine.execute("SELECT a, b FROM copy")) == [(1, "x"), (2, "y"), (3, "z")]
    for name, query, rows in (("some", "SELECT a FROM pairs", [(1,), (2,), (3,)]),
                              ("swapped", "SELECT b, a FROM pairs", [("x", 1), ("y", 2), ("z", 3)]),
                              ("renamed", "SELECT a AS b, b AS a FROM pairs", [(1, "x"), (2, "y"), (3, "z")]),
                              ("filtered", "SELECT a, b FROM pairs WHERE a > 1", [(2, "y"), (3, "z")])):
        _, jobs = spark_jobs(spark, lambda name=name, query=query: engine._materialize(name, query))
        assert jobs > 0 and engine._files[name][0] != engine._files["pairs"][0]
        assert sorted(engine.execute(f"SELECT * FROM {name}")) == rows
