"""The SQL measures on real Spark (pyspark, local mode) equal DuckDB's.

Spark needs a Java runtime (17); without it the tests fail with that message: they must run in CI. Marked slow:
the session takes 15-40 s to start and each evaluation, even of three instances, runs a few dozen Spark stages
(5-30 s on the shared machine).
"""

from __future__ import annotations

import os
import shutil

import pytest

from hiersql.engines import SparkEngine
from hiersql.metrics import Options
from hiersql.store import Store
from hiersql.taxonomy import Taxonomy
from tests._engine_cases import (
    GERMEVAL_CASES,
    OPTION_CASES,
    SET_BASED,
    all_metrics,
    assert_hand_values,
    assert_rows_match,
    germeval_store,
    hand_store,
    reference,
)

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def spark():
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        pytest.fail("Spark needs a Java runtime: apt-get install -y openjdk-17-jre-headless")
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[1]").appName("hiersql-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.default.parallelism", "1")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


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
    store, engine = hand
    rows = engine.evaluate(all_metrics())
    assert_hand_values([r for r in rows if r.metric in SET_BASED])
    assert_rows_match(rows, reference(store, all_metrics(), Options()), tol=1e-12)


CASES = {**{c: o for c, o in OPTION_CASES.items() if c != "defaults"}, "cesa_bianchi": Options(augment="cesa_bianchi")}


@pytest.mark.parametrize("case", CASES)
def test_hand_example_equals_duckdb(hand, case):
    """Set-based options (the flat measures read only zero_division: with the descendants case), the
    Cesa-Bianchi tolerance included (joins, no correlated subquery)."""
    store, engine = hand
    options = CASES[case]
    metrics = all_metrics() if options.zero_division else SET_BASED
    assert_rows_match(engine.evaluate(metrics, options), reference(store, metrics, options))


@pytest.mark.parametrize("case", GERMEVAL_CASES[:1])  # the other options: hand example, PostgreSQL
def test_germeval_b_sample_equals_duckdb(spark, germeval, case):
    options = OPTION_CASES[case]
    engine = SparkEngine(spark)
    engine.copy_store(germeval)
    metrics = all_metrics()
    rows = engine.evaluate(metrics, options)
    assert {r.system for r in rows} == set(germeval.systems())
    assert_rows_match(rows, reference(germeval, metrics, options))


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
