"""Spark adds a mean's values in unit order, as DuckDB does: the same input gives the same digits however
Spark partitions the rows (hiersql.engines: the fold that stands for ``sum``/``avg`` ``ORDER BY``)."""

from __future__ import annotations

import duckdb
import pytest

from hiersql.engines import SparkEngine, render
from hiersql.metrics import Options, compute
from tests._engine_cases import germeval_store

pytestmark = [pytest.mark.spark, pytest.mark.slow]

# Added in key order, 1e16 + 1 rounds back to 1e16 (the spacing of doubles there is 2): the sum is 1.0. In the
# reverse order it is 2.0, and other orders give 0.0 or 2.0: the digits show the order.
ROWS = [("a", 1, 1e16), ("a", 2, 1.0), ("a", 3, -1e16), ("a", 4, 1.0), ("b", 1, None), ("b", 2, 3.0),
        ("c", 1, None)]
QUERY = ("SELECT g, sum(x ORDER BY k) AS s, avg(x ORDER BY k) AS a, sum(x * 2 ORDER BY g, k) AS s2 "
         "FROM numbers GROUP BY g ORDER BY g")


def test_ordered_sum_and_mean_equal_duckdb_under_any_partitioning(spark):
    con = duckdb.connect()
    con.execute("CREATE TABLE numbers (g VARCHAR, k INTEGER, x DOUBLE)")
    con.executemany("INSERT INTO numbers VALUES (?, ?, ?)", ROWS)
    want = con.execute(QUERY).fetchall()
    assert want[0][1:] == (1.0, 0.25, 2.0)  # by hand: ((1e16 + 1) - 1e16) + 1, over 4 values
    assert want[1][1:] == (3.0, 3.0, 6.0) and want[2][1:] == (None, None, None)  # NULLs left out
    from pyspark.sql import functions as F

    sql = render("set_based", "set_counts", {}, "spark", text=QUERY)
    assert "ORDER BY" not in sql.split("FROM")[0]  # Spark has no ordered aggregates: the fold replaced them
    previous = spark.conf.get("spark.sql.shuffle.partitions")
    try:
        # one partition read in descending key order would add 1 + -1e16 + 1 + 1e16 = 0.0 without the fold
        for partitions, order in ((1, F.desc("k")), (1, F.asc("k")), (3, F.desc("x")), (2, F.asc("x"))):
            spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
            frame = spark.createDataFrame(ROWS, "g STRING, k INT, x DOUBLE").orderBy(order)
            frame = frame.coalesce(1) if partitions == 1 else frame.repartition(partitions)
            frame.createOrReplaceTempView("numbers")
            assert [tuple(r) for r in spark.sql(sql).collect()] == want, (partitions, order)
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", previous)
        spark.catalog.dropTempView("numbers")


def test_germeval_means_print_the_same_digits_as_duckdb(spark, data_dir):
    """The macro means of GermEval B's 4,144 instances: Spark's values equal DuckDB's to the last bit (both
    add them in instance order)."""
    store = germeval_store(data_dir)
    metrics = ["hierarchical_f1", "example_f1", "label_f1"]
    options = Options(average=("macro", "weighted"))
    engine = SparkEngine(spark)
    engine.copy_store(store)
    assert compute(engine, metrics, options) == compute(store, metrics, options)
