"""The stages that feed the LCA minimal-graph step on Spark (``lca_multi_paths``, read by ``lca_open_instances``
and ``lca_open_links (spark)``, stored once; ``lca_open_nodes (spark)`` in lca.sql): their
rows equal DuckDB's portable ones, batch by batch, and so the greedy and optimal LCA measures."""

from __future__ import annotations

import pytest

from hiersql.engines import SparkEngine
from hiersql.measures import Options, lca
from tests.test_spark_scale_variants import assert_lca_stages_equal, generated  # noqa: F401  (a fixture)

OPEN_STAGES = {
    "instances_seen": "SELECT inst, system, instance_id, batch FROM lca_open_instances",
    "options_seen": "SELECT batch, inst, side, label, lca, partner FROM lca_open_options",
    "nodes_seen": "SELECT batch, node, lca, step, v FROM lca_open_nodes",
    "links_seen": "SELECT batch, node, lca, lower, upper FROM lca_open_links",
}

# (batch, x): a shared label x whose own path {x} an option of its batch asks for too (x the LCA of x and a
# label below it on the other side): lca_open_nodes holds that row once.
SELF_ENDS = ("SELECT DISTINCT e.batch, e.node FROM lca_open_ends AS e JOIN lca_open_instances AS b ON b.batch ="
             " e.batch JOIN lca_labels AS l ON l.inst = b.inst AND l.label = e.node AND l.shared WHERE e.node = e.lca")


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("options, partition_rows", [(Options(), 0), (Options(max_distance=2), None),
                                                     (Options(lca_graph="optimal"), 0)],
                         ids=["greedy_per_partition", "greedy_max_distance_2", "optimal_per_partition"])
def test_spark_open_stages_on_a_generated_dag_equal_duckdb(spark, generated, monkeypatch, options,  # noqa: F811
                                                           partition_rows):
    """A generated DAG (600 nodes, 20 % of them with two parents), 20 instances a batch: unbounded, 79
    instances with a choice in 4 batches, paths with several shortest paths, and shared labels whose own path
    an option of their batch asks for too; with max_distance 2, 5 instances. The rows of every open stage
    equal DuckDB's (none twice), and so the measures, whether the minimal graphs (greedy, or CP-SAT's
    optimum) are solved on the driver or per partition of the batches in Spark's Python workers."""
    monkeypatch.setattr(lca, "BATCH", 20)
    monkeypatch.setitem(OPEN_STAGES, "self_ends_seen", SELF_ENDS)
    engine = SparkEngine(spark, partition_rows=partition_rows)
    want = assert_lca_stages_equal(engine, generated, options, OPEN_STAGES)
    unbounded = options.max_distance is None
    assert len(want["instances_seen"]) == (79 if unbounded else 5)
    assert len({batch for *_, batch in want["instances_seen"]}) == (4 if unbounded else 1)
    assert len(want["links_seen"]) > 10
    assert len(want["self_ends_seen"]) == (5 if unbounded else 0)
    if partition_rows == 0:  # the 4 batches in several of the 4 shuffle partitions
        assert engine.partitions_solved["minimal_graphs"] > 1
    else:
        assert "minimal_graphs" not in engine.partitions_solved
