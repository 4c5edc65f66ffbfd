"""Spark's means print DuckDB's digits however Spark partitions and orders the rows (hiersql.engines: the running
sum that stands for ``sum``/``avg`` ``ORDER BY``)."""

from __future__ import annotations

import math
from collections.abc import Iterator

import duckdb
import pytest

from hiersql.engines import SparkEngine, render
from hiersql.measures import Options, compute
from tests._engine_cases import germeval_store

pytestmark = [pytest.mark.spark, pytest.mark.slow]

# 1e16 + 1 rounds back to 1e16 (the spacing of doubles there is 2): added as doubles, group a's sum is 0.0, 1.0
# or 2.0 depending on the order; in key order it is 1.0. Fractions: 0.1 + 0.2 + 0.3 - 0.6 is 0, 5.6e-17 or
# 1.1e-16 depending on the order. 20 values of 9e18 pass the 20 digits of a DECIMAL(38, 18) before the point.
FRACTIONS = [0.1, 0.2, 0.3, -0.6, 1 / 3, -2.75, 123.456, 2.5e-3, -123.456, 7 / 1024, -1 / 1024]
ROWS = [("a", 1, 1e16), ("a", 2, 1.0), ("a", 3, -1e16), ("a", 4, 1.0), ("b", 1, None), ("b", 2, 3.0),
        ("c", 1, None), *(("f", k, x) for k, x in enumerate(FRACTIONS)),
        *(("g", k, x) for k, x in enumerate((0.1, 0.2, 0.3, -0.6))), *(("big", i, 9e18) for i in range(20)),
        ("huge", 1, 1e25), ("huge", 2, -1e25), ("huge", 3, 4.0), ("inf", 1, math.inf), ("inf", 2, 1.0),
        ("nan", 1, math.nan), ("nan", 2, 1.0)]
QUERY = ("SELECT g, sum(x ORDER BY k) AS s, avg(x ORDER BY k) AS a, sum(x * 2 ORDER BY g, k) AS s2 "
         "FROM numbers GROUP BY g ORDER BY g")


def in_key_order(values: list[float]) -> float:
    """By hand: the doubles added one after the other, as DuckDB's ordered sum adds them."""
    total = 0.0
    for x in values:
        total += x
    return total


def partitionings(spark, rows: list[tuple], schema: str, orders: tuple[str, ...],
                  ansi: tuple[str, ...] = ("true", "false", "true", "false")) -> Iterator[tuple[int, str, str]]:
    """Register ``rows`` as view ``numbers`` read in each of ``orders`` (a column, ``-`` for descending), in
    one, one, three and two partitions with as many shuffle partitions and ANSI mode ``ansi``, yielding each
    (partitions, order, ansi); the session's settings are restored and the view dropped at the end."""
    from pyspark.sql import functions as F

    previous = {key: spark.conf.get(key) for key in ("spark.sql.shuffle.partitions", "spark.sql.ansi.enabled")}
    try:
        for partitions, order, mode in zip((1, 1, 3, 2), orders, ansi, strict=True):
            spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
            spark.conf.set("spark.sql.ansi.enabled", mode)
            key = F.desc(order[1:]) if order.startswith("-") else F.asc(order)
            frame = spark.createDataFrame(rows, schema).orderBy(key)
            frame = frame.coalesce(1) if partitions == 1 else frame.repartition(partitions)
            frame.createOrReplaceTempView("numbers")
            yield partitions, order, mode
    finally:
        for key, value in previous.items():
            spark.conf.set(key, value)
        spark.catalog.dropTempView("numbers")


def same_digits(got: list[tuple], want: list[tuple]) -> bool:
    """Equal rows, a NaN equal to a NaN."""
    def key(rows):
        return [tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in row) for row in rows]

    return key(got) == key(want)


def test_ordered_sums_and_means_give_duckdbs_digits_under_any_partitioning(spark):
    con = duckdb.connect()
    con.execute("CREATE TABLE numbers (g VARCHAR, k INTEGER, x DOUBLE)")
    con.executemany("INSERT INTO numbers VALUES (?, ?, ?)", ROWS)
    want = con.execute(QUERY).fetchall()
    by_group = {row[0]: row[1:] for row in want}
    # by hand: DuckDB adds in key order, each addition rounded; NULLs left out; no value gives NULL
    assert by_group["a"] == (1.0, 0.25, 2.0) and by_group["b"] == (3.0, 3.0, 6.0)
    assert by_group["c"] == (None, None, None)
    total = in_key_order(FRACTIONS)
    assert by_group["f"] == (total, total / len(FRACTIONS), in_key_order([2 * x for x in FRACTIONS]))
    assert by_group["g"][0] == in_key_order([0.1, 0.2, 0.3, -0.6]) != 0.0
    assert by_group["big"] == (1.8e20, 9e18, 3.6e20) and by_group["huge"][0] == 4.0
    assert by_group["inf"][:2] == (math.inf, math.inf) and math.isnan(by_group["nan"][0])
    sql = render("set_based", "set_counts", {}, "spark", text=QUERY)
    assert "ORDER BY" not in sql.split("FROM")[0]  # Spark has no ordered aggregates: running sums replaced them
    for case in partitionings(spark, ROWS, "g STRING, k INT, x DOUBLE", ("-k", "k", "-x", "x")):
        assert same_digits([tuple(r) for r in spark.sql(sql).collect()], want), case


# k and j order the rows the opposite ways; added as doubles, x in k order is 1.0, in j order 0.0
SHARED_ROWS = [("a", 1, 4, 1e16, None), ("a", 2, 3, 1.0, 2.0), ("a", 3, 2, -1e16, 3.0), ("a", 4, 1, 1.0, None),
               ("b", 1, 1, None, None), ("b", 10, 2, 1.0, 1.0), ("b", 9, 3, 1e16, 1.0)]
SHARED_QUERY = ("SELECT g, sum(x ORDER BY k) AS s, avg(x ORDER BY k) AS a, sum(-x ORDER BY k) AS n, "
                "avg(y ORDER BY k) AS y, sum(x ORDER BY j) AS sj, count(*) AS c FROM numbers GROUP BY g ORDER BY g")


def test_each_value_of_a_select_is_one_running_sum_per_order(spark):
    """A running sum per value and ORDER BY of a SELECT (and a running count for a mean), the keys of each ORDER
    BY one struct; the keys sorted by value (9 before 10)."""
    sql = render("set_based", "set_counts", {}, "spark", text=SHARED_QUERY, pretty=False)
    assert sql.count(" OVER (") == 6 and sql.count("STRUCT(") == 2  # sums of x, -x, y by k and x by j; x, y counted
    assert "COLLECT_LIST" not in sql
    # by hand: a in k order 1e16 + 1 - 1e16 + 1 = 1.0, in j order 1 - 1e16 + 1 + 1e16 = 0.0; b in k order
    # 1e16 + 1 = 1e16 (k 9 before 10), in j order 1 + 1e16 = 1e16 as well
    want = [("a", 1.0, 0.25, -1.0, 2.5, 0.0, 4), ("b", 1e16, 5e15, -1e16, 1.0, 1e16, 3)]
    con = duckdb.connect()
    con.execute("CREATE TABLE numbers (g VARCHAR, k INTEGER, j INTEGER, x DOUBLE, y DOUBLE)")
    con.executemany("INSERT INTO numbers VALUES (?, ?, ?, ?, ?)", SHARED_ROWS)
    assert con.execute(SHARED_QUERY).fetchall() == want
    for case in partitionings(spark, SHARED_ROWS, "g STRING, k INT, j INT, x DOUBLE, y DOUBLE",
                              ("-k", "k", "-x", "j")):
        assert [tuple(r) for r in spark.sql(sql).collect()] == want, case


def test_germeval_means_are_duckdbs_digits_whatever_the_partitions(spark, data_dir):
    """The macro and weighted means of GermEval B's 4,144 instances: two Spark runs with 1 and 3 shuffle
    partitions print DuckDB's digits."""
    store = germeval_store(data_dir)
    metrics = ["hierarchical_f1", "example_f1", "label_f1", "hamming_loss"]
    options = Options(average=("macro", "weighted"))
    want = compute(store, metrics, options)
    previous = spark.conf.get("spark.sql.shuffle.partitions")
    try:
        for partitions in (1, 3):
            spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
            engine = SparkEngine(spark)
            engine.copy_store(store)
            assert compute(engine, metrics, options) == want, partitions
            engine.close()
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", previous)


def test_a_descending_key_is_refused():
    """The running sum's last row is the largest key: a descending key would add the values in another order."""
    with pytest.raises(ValueError, match="ascending key order only"):
        render("set_based", "set_counts", {}, "spark", text="SELECT sum(x ORDER BY k DESC) AS s FROM numbers")
