"""The shape of ``set_counts (spark)`` (set_based.sql): both sides' labels are hashed on the instance and
joined to the broadcast per-node arrays, and the arrays are merged per (system, instance) with no exchange of
the arrays; the values are those of DuckDB (tests/test_spark_scale_variants.py runs every option)."""

from __future__ import annotations

import math
import re

import pytest

from hiersql.engines import SparkEngine, family_params, render
from hiersql.measures import Options, compute
from hiersql.measures.set_based import PLAN
from tests.test_spark_scale_variants import PAIR_STAGES, hard_case_store

PARAMS = family_params(PLAN, Options())


@pytest.mark.parametrize("augment", ["ancestors", "descendants"])
def test_the_pair_rows_of_a_switched_off_branch_are_not_composed_in(augment):
    """The Spark query of set_counts reads the pair rows only in its Cesa-Bianchi branch: with another option
    the branch and the pair queries are gone (the runner would store ``augmented``, read twice, before Spark
    saw that nothing needs it); so are the pair queries composed into the summary. DuckDB's text keeps them."""
    params = {**PARAMS, "augment": augment}
    spark = render("set_based", "set_counts", params, "spark", pretty=False)
    assert not any(re.search(rf"\b{name}\b", spark) for name in PAIR_STAGES), spark
    assert spark.startswith("WITH augmented_nodes AS") and spark.endswith("FROM merged")
    cesa = render("set_based", "set_counts", {**params, "augment": "cesa_bianchi"}, "spark", pretty=False)
    assert all(re.search(rf"\b{name}\b", cesa) for name in PAIR_STAGES)
    assert "set_pair_counts" in render("set_based", "set_counts", params, "duckdb", pretty=False)
    summary = render("set_based", "set_based_summary", params, "spark", text="SELECT * FROM set_based_instance",
                     skip=frozenset({"set_counts", "set_based_instance"}))
    assert summary == "SELECT\n  *\nFROM set_based_instance"


def test_only_a_later_union_all_branch_switched_off_is_dropped_with_what_it_alone_reads():
    """A branch after the first whose WHERE a parameter made FALSE goes, then the common table expressions
    nothing reads; a first branch (it names the columns), a UNION (distinct) and a union with ORDER BY or
    LIMIT (they apply to all its rows) stay."""
    text = "WITH x AS (SELECT 1 AS a), y AS (SELECT a FROM x) SELECT a FROM t UNION ALL SELECT a FROM y WHERE $p"
    assert render("set_based", "set_counts", {"p": False}, "spark", text=text, pretty=False) == "SELECT a FROM t"
    assert render("set_based", "set_counts", {"p": True}, "spark", text=text, pretty=False).startswith("WITH x AS")
    for kept in ("SELECT a FROM t WHERE $p UNION ALL SELECT b FROM u", "SELECT a FROM t UNION SELECT b FROM u WHERE $p",
                 "SELECT a FROM t UNION ALL SELECT b FROM u WHERE $p LIMIT 2"):
        assert "FROM u" in render("set_based", "set_counts", {"p": False}, "spark", text=kept, pretty=False), kept


@pytest.fixture(scope="module")
def store():
    return hard_case_store()


@pytest.mark.spark
@pytest.mark.slow
def test_the_arrays_are_broadcast_and_merged_where_the_labels_are_hashed(spark, store):
    engine = SparkEngine(spark)
    engine.copy_store(store)
    sql = engine.render("set_based", "set_counts", family_params(PLAN, Options()))
    plan = spark.sql(sql)._jdf.queryExecution().executedPlan().toString()
    exchanges = re.findall(r"Exchange (\w+)\(([^)]*)\)", plan)
    # the labels hashed on the instance (REPARTITION), the closure grouped per node for the arrays: no
    # exchange on (system, instance_id), where the arrays would be shuffled to be merged
    assert ("hashpartitioning", "instance_id") in [(k, re.sub(r"#\d+", "", a).split(",")[0]) for k, a in exchanges]
    assert not any("system" in args for _, args in exchanges), plan
    assert "BroadcastHashJoin" in plan and "BroadcastExchange" in plan, plan
    for table in spark.catalog.listTables():  # the stages of earlier tests in the same session
        if table.name.startswith("set_"):
            spark.catalog.dropTempView(table.name)
    got, want = (compute(e, ["hierarchical_f1"], Options()) for e in (engine, store))
    assert [r[:3] for r in got] == [r[:3] for r in want]
    assert all(math.isclose(g.value, w.value, rel_tol=0, abs_tol=1e-9) for g, w in zip(got, want, strict=True))
    made = {t.name for t in spark.catalog.listTables() if t.name.startswith("set_")}
    assert "set_based_instance" in made and not any("__" in name for name in made), made  # no part stored
