"""Spark's means give the same digits however Spark partitions and orders the rows (hiersql.engines: the exact
decimal sum that stands for ``sum``/``avg`` ``ORDER BY``), and agree with DuckDB's ordered means to 1e-9."""

from __future__ import annotations

import math
from collections.abc import Iterator

import duckdb
import pytest

from hiersql.engines import EXACT_SUM_BOUND, SparkEngine, render
from hiersql.measures import Options, compute
from tests._engine_cases import germeval_store

pytestmark = [pytest.mark.spark, pytest.mark.slow]

# 1e16 + 1 rounds back to 1e16 (the spacing of doubles there is 2): added as doubles, group a's sum is 0.0, 1.0
# or 2.0 depending on the order. The exact sum is 2.0 in every order.
ROWS = [("a", 1, 1e16), ("a", 2, 1.0), ("a", 3, -1e16), ("a", 4, 1.0), ("b", 1, None), ("b", 2, 3.0),
        ("c", 1, None)]
QUERY = ("SELECT g, sum(x ORDER BY k) AS s, avg(x ORDER BY k) AS a, sum(x * 2 ORDER BY g, k) AS s2 "
         "FROM numbers GROUP BY g ORDER BY g")


def partitionings(spark, rows: list[tuple], schema: str, orders: tuple[str, ...],
                  ansi: tuple[str, ...] = ("true",) * 4) -> Iterator[tuple[int, str, str]]:
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


def test_ordered_sum_and_mean_are_exact_under_any_partitioning(spark):
    sql = render("set_based", "set_counts", {}, "spark", text=QUERY)
    assert "ORDER BY" not in sql.split("FROM")[0]  # Spark has no ordered aggregates: the exact sum replaced them
    # by hand: 1e16 + 1 - 1e16 + 1 = 2 exactly, over 4 values; b's NULL left out; no value gives NULL
    want = [("a", 2.0, 0.5, 4.0), ("b", 3.0, 3.0, 6.0), ("c", None, None, None)]
    for case in partitionings(spark, ROWS, "g STRING, k INT, x DOUBLE", ("-k", "k", "-x", "x")):
        assert [tuple(r) for r in spark.sql(sql).collect()] == want, case
    # DuckDB adds in key order, each step rounded (a: 1.0); the other groups agree
    con = duckdb.connect()
    con.execute("CREATE TABLE numbers (g VARCHAR, k INTEGER, x DOUBLE)")
    con.executemany("INSERT INTO numbers VALUES (?, ?, ?)", ROWS)
    assert con.execute(QUERY).fetchall() == [("a", 1.0, 0.25, 2.0), *want[1:]]


def test_germeval_means_equal_duckdb_and_do_not_depend_on_the_partitions(spark, data_dir):
    """The macro means of GermEval B's 4,144 instances: Spark's values equal DuckDB's to 1e-9, and two Spark
    runs with 1 and 3 shuffle partitions print the same digits."""
    store = germeval_store(data_dir)
    metrics = ["hierarchical_f1", "example_f1", "label_f1"]
    options = Options(average=("macro", "weighted"))
    want = compute(store, metrics, options)
    previous = spark.conf.get("spark.sql.shuffle.partitions")
    runs = []
    try:
        for partitions in (1, 3):
            spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
            engine = SparkEngine(spark)
            engine.copy_store(store)
            runs.append(compute(engine, metrics, options))
            engine.close()
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", previous)
    assert runs[0] == runs[1]
    assert [r[:3] for r in runs[0]] == [r[:3] for r in want]
    assert all(math.isclose(a.value, b.value, rel_tol=0, abs_tol=1e-9) for a, b in zip(runs[0], want, strict=True))


# Fractions, negative ones among them. Added as doubles 0.1 + 0.2 + 0.3 - 0.6 is 0, 5.6e-17 or 1.1e-16 depending
# on the order; each value's decimal form (Java's Double.toString: "0.1") rounded to 18 places adds up to 0.
FRACTIONS = [0.1, 0.2, 0.3, -0.6, 1 / 3, -2.75, 123.456, 2.5e-3, -123.456, 7 / 1024, -1 / 1024]


def exact_decimal_sum(values: list[float]) -> float:
    """By hand, with Python's decimals: the values' shortest decimal forms rounded half up to 18 places (Spark's
    cast of a DOUBLE to DECIMAL(38, 18)), added exactly, the sum rounded once to a double."""
    from decimal import ROUND_HALF_UP, Decimal, localcontext

    with localcontext() as context:
        context.prec = 60
        return float(sum(Decimal(repr(x)).quantize(Decimal("1e-18"), rounding=ROUND_HALF_UP) for x in values))


def test_fractions_add_exactly_under_any_partitioning(spark):
    """The values' decimals are added exactly before the one rounding of their sum (the mean: that sum divided
    by the count), whatever the partitions and the order of the rows."""
    rows = [("f", k, x) for k, x in enumerate(FRACTIONS)]
    rows += [("g", 1, 0.1), ("g", 2, 0.2), ("g", 3, 0.3), ("g", 4, -0.6)]
    sql = render("set_based", "set_counts", {}, "spark", text=QUERY)
    total = exact_decimal_sum(FRACTIONS)
    want = [("f", total, total / len(FRACTIONS), exact_decimal_sum([2 * x for x in FRACTIONS])), ("g", 0.0, 0.0, 0.0)]
    for case in partitionings(spark, rows, "g STRING, k INT, x DOUBLE", ("-k", "k", "-x", "x"),
                              ("true", "false", "true", "false")):
        assert [tuple(r) for r in spark.sql(sql).collect()] == want, case


# k and j order the rows the opposite ways; added as doubles, x in k order is 1.0, in j order 0.0
SHARED_ROWS = [("a", 1, 4, 1e16, None), ("a", 2, 3, 1.0, 2.0), ("a", 3, 2, -1e16, 3.0), ("a", 4, 1, 1.0, None),
               ("b", 1, 1, None, None)]
SHARED_QUERY = ("SELECT g, sum(x ORDER BY k) AS s, avg(x ORDER BY k) AS a, sum(-x ORDER BY k) AS n, "
                "avg(y ORDER BY k) AS y, sum(x ORDER BY j) AS sj, count(*) AS c FROM numbers GROUP BY g ORDER BY g")


def test_means_are_code_generated_aggregates_with_no_list_and_no_sort(spark):
    """The means are sums Spark generates code for: no collected list, no sort, no object aggregate; the sums
    of x by k and by j are the same sum. Each equals the exact value under any partitioning, ANSI or not."""
    sql = render("set_based", "set_counts", {}, "spark", text=SHARED_QUERY, pretty=False)
    assert "COLLECT_LIST" not in sql and "ARRAY_SORT" not in sql and "AGGREGATE(" not in sql
    want = [("a", 2.0, 0.5, -2.0, 2.5, 2.0, 4), ("b", None, None, None, None, None, 1)]  # by hand, exact
    for case in partitionings(spark, SHARED_ROWS, "g STRING, k INT, j INT, x DOUBLE, y DOUBLE",
                              ("-k", "k", "-x", "j"), ("true", "false", "true", "false")):
        frame = spark.sql(sql)
        assert [tuple(r) for r in frame.collect()] == want, case
    plan = frame._jdf.queryExecution().executedPlan().toString()
    assert "HashAggregate" in plan and "ObjectHashAggregate" not in plan and "SortAggregate" not in plan, plan
    assert "collect_list" not in plan, plan


# 20 values of 9e18 add up to 1.8e20: past the 20 digits before the decimal point (with ANSI mode the decimal
# sum would raise, without it return NULL); doubles hold every partial sum exactly (k * 9 * 5^18 < 2^53).
BEYOND_ROWS = [("big", i, 9e18) for i in range(20)] + [("huge", 1, 1e25), ("huge", 2, -1e25), ("huge", 3, 4.0),
                                                       ("nan", 1, float("nan")), ("nan", 2, 1.0),
                                                       ("inf", 1, float("inf")), ("inf", 2, 1.0)]


def test_beyond_the_decimal_bound_the_means_are_double_sums_not_errors_or_nulls(spark):
    """From EXACT_SUM_BOUND on (and for NaN, infinity) a mean is Spark's DOUBLE sum, as DuckDB's: neither an
    overflow error (ANSI mode) nor a NULL (without it)."""
    assert EXACT_SUM_BOUND == 1e19 and EXACT_SUM_BOUND < 20 * 9e18
    query = "SELECT g, sum(x ORDER BY k) AS s, avg(x ORDER BY k) AS a FROM numbers GROUP BY g ORDER BY g"
    sql = render("set_based", "set_counts", {}, "spark", text=query)
    con = duckdb.connect()
    con.execute("CREATE TABLE numbers (g VARCHAR, k INTEGER, x DOUBLE)")
    con.executemany("INSERT INTO numbers VALUES (?, ?, ?)", BEYOND_ROWS)
    want = con.execute(query).fetchall()
    # by hand; 1e25 - 1e25 + 4 in key order is 4, the exact sum too, but the double sum in another order is 0
    assert want[0] == ("big", 1.8e20, 9e18) and want[1][0] == "huge" and want[1][1] == 4.0
    assert want[2] == ("inf", math.inf, math.inf) and want[3][0] == "nan" and math.isnan(want[3][1])
    for case in partitionings(spark, BEYOND_ROWS, "g STRING, k INT, x DOUBLE", ("k", "-k", "x", "-x"),
                              ("true", "false", "false", "true")):
        got = [tuple(r) for r in spark.sql(sql).collect()]
        assert got[0] == want[0] and got[2] == want[2], case
        assert got[1][0] == "huge" and got[1][1] in (0.0, 4.0), case  # a double sum: its digits depend on order
        assert got[3][0] == "nan" and math.isnan(got[3][1]) and math.isnan(got[3][2]), case


def test_a_descending_order_gives_the_same_exact_sum():
    """An exact sum does not depend on the order: a descending key is rendered like an ascending one."""
    asc = render("set_based", "set_counts", {}, "spark", text="SELECT sum(x ORDER BY k) AS s FROM numbers")
    desc = render("set_based", "set_counts", {}, "spark", text="SELECT sum(x ORDER BY k DESC) AS s FROM numbers")
    assert asc == desc and "ORDER BY" not in asc and "DECIMAL(38, 18)" in asc
