"""The shape of ``set_counts (spark)`` (sql/set_based.sql): both sides' labels are hashed on the instance and
joined to the broadcast per-node arrays, and the arrays are merged per (system, instance) with no exchange of
the arrays; the values are those of DuckDB (tests/test_spark_scale_variants.py runs every option)."""

from __future__ import annotations

import math
import re
from contextlib import nullcontext

import pytest

from hiersql.engines import SparkEngine, family_params
from hiersql.errors import DataWarning
from hiersql.metrics import Options, compute
from hiersql.metrics.set_based import PLAN
from hiersql.store import Store
from hiersql.taxonomy import Taxonomy
from tests.test_spark_scale_variants import EDGES, PRED, TRUTH

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def store():
    store = Store()
    store.load_taxonomy(Taxonomy.from_edges(EDGES))
    store.add_truth(TRUTH)
    for system, sets in PRED.items():
        with pytest.warns(DataWarning) if system == "quiet" else nullcontext():
            store.add_predictions(system, sets)
    return store


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
    got, want = (compute(e, ["hierarchical_f1"], Options()) for e in (engine, store))
    assert [r[:3] for r in got] == [r[:3] for r in want]
    assert all(math.isclose(g.value, w.value, rel_tol=0, abs_tol=1e-9) for g, w in zip(got, want, strict=True))
