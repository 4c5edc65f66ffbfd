"""Spark adds a mean's values in unit order, as DuckDB does: the same input gives the same digits however
Spark partitions the rows (hiersql.engines: the fold that stands for ``sum``/``avg`` ``ORDER BY``)."""

from __future__ import annotations

import re
from collections.abc import Iterator

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


def partitionings(spark, rows: list[tuple], schema: str, orders: tuple[str, ...]) -> Iterator[tuple[int, str]]:
    """Register ``rows`` as view ``numbers`` read in each of ``orders`` (a column, ``-`` for descending), in
    one, one, three and two partitions with as many shuffle partitions, yielding each (partitions, order); the
    session's setting is restored and the view dropped at the end."""
    from pyspark.sql import functions as F

    previous = spark.conf.get("spark.sql.shuffle.partitions")
    try:
        for partitions, order in zip((1, 1, 3, 2), orders, strict=True):
            spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
            key = F.desc(order[1:]) if order.startswith("-") else F.asc(order)
            frame = spark.createDataFrame(rows, schema).orderBy(key)
            frame = frame.coalesce(1) if partitions == 1 else frame.repartition(partitions)
            frame.createOrReplaceTempView("numbers")
            yield partitions, order
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", previous)
        spark.catalog.dropTempView("numbers")


def test_ordered_sum_and_mean_equal_duckdb_under_any_partitioning(spark):
    con = duckdb.connect()
    con.execute("CREATE TABLE numbers (g VARCHAR, k INTEGER, x DOUBLE)")
    con.executemany("INSERT INTO numbers VALUES (?, ?, ?)", ROWS)
    want = con.execute(QUERY).fetchall()
    assert want[0][1:] == (1.0, 0.25, 2.0)  # by hand: ((1e16 + 1) - 1e16) + 1, over 4 values
    assert want[1][1:] == (3.0, 3.0, 6.0) and want[2][1:] == (None, None, None)  # NULLs left out
    sql = render("set_based", "set_counts", {}, "spark", text=QUERY)
    assert "ORDER BY" not in sql.split("FROM")[0]  # Spark has no ordered aggregates: the fold replaced them
    # one partition read in descending key order would add 1 + -1e16 + 1 + 1e16 = 0.0 without the fold
    for case in partitionings(spark, ROWS, "g STRING, k INT, x DOUBLE", ("-k", "k", "-x", "x")):
        assert [tuple(r) for r in spark.sql(sql).collect()] == want, case


def test_germeval_means_print_the_same_digits_as_duckdb(spark, data_dir):
    """The macro means of GermEval B's 4,144 instances: Spark's values equal DuckDB's to the last bit (both
    add them in instance order)."""
    store = germeval_store(data_dir)
    metrics = ["hierarchical_f1", "example_f1", "label_f1"]
    options = Options(average=("macro", "weighted"))
    engine = SparkEngine(spark)
    engine.copy_store(store)
    assert compute(engine, metrics, options) == compute(store, metrics, options)


# k and j order the rows the opposite ways: x added in k order is 1.0, in j order 0.0, -x in k order -1.0.
SHARED_ROWS = [("a", 1, 4, 1e16, None), ("a", 2, 3, 1.0, 2.0), ("a", 3, 2, -1e16, 3.0), ("a", 4, 1, 1.0, None),
               ("b", 1, 1, None, None)]
SHARED_QUERY = ("SELECT g, sum(x ORDER BY k) AS s, avg(x ORDER BY k) AS a, sum(-x ORDER BY k) AS n, "
                "avg(y ORDER BY k) AS y, sum(x ORDER BY j) AS sj, count(*) AS c FROM numbers GROUP BY g ORDER BY g")


def test_means_with_the_same_keys_share_one_list_and_other_keys_have_their_own(spark):
    """The four means ordered by k in one SELECT read one list holding x, -x and y (x once); the sum ordered
    by j reads a list of its own. Each equals DuckDB's under any partitioning."""
    con = duckdb.connect()
    con.execute("CREATE TABLE numbers (g VARCHAR, k INTEGER, j INTEGER, x DOUBLE, y DOUBLE)")
    con.executemany("INSERT INTO numbers VALUES (?, ?, ?, ?, ?)", SHARED_ROWS)
    want = con.execute(SHARED_QUERY).fetchall()
    assert want == [("a", 1.0, 0.25, -1.0, 2.5, 0.0, 4), ("b", None, None, None, None, None, 1)]  # by hand
    sql = render("set_based", "set_counts", {}, "spark", text=SHARED_QUERY, pretty=False)
    shared = "COLLECT_LIST(STRUCT(k AS k0, CAST(x AS DOUBLE) AS v0, CAST(-x AS DOUBLE) AS v1, CAST(y AS DOUBLE) AS v2))"
    assert sql.count(shared) == 4 and sql.count("COLLECT_LIST(STRUCT(j AS k0, CAST(x AS DOUBLE) AS v0))") == 1
    assert sql.count("COLLECT_LIST") == 5
    for case in partitionings(spark, SHARED_ROWS, "g STRING, k INT, j INT, x DOUBLE, y DOUBLE",
                              ("-k", "k", "-x", "j")):
        spark_sql = spark.sql(sql)
        assert [tuple(r) for r in spark_sql.collect()] == want, case
    # Spark collects each distinct list once per group: two collect_list in each aggregate of the plan
    plan = spark_sql._jdf.queryExecution().executedPlan().toString()
    aggregates = [line for line in plan.splitlines() if "partial_collect_list(" in line]
    assert aggregates and all(len(re.findall(r"\bpartial_collect_list\(", a)) == 2 for a in aggregates), plan


def test_a_descending_order_is_refused_rather_than_added_the_other_way():
    """The fold sorts its list ascending: a mean ordered by a descending key would add in the wrong order."""
    with pytest.raises(ValueError, match="descending order: SUM"):
        render("set_based", "set_counts", {}, "spark", text="SELECT sum(x ORDER BY k DESC) AS s FROM numbers")
