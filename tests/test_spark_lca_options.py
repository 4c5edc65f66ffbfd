"""The Spark variants of the LCA options (``lca_meetings (spark)``: each pair meeting listed for both sides from
one read; ``lca_options (spark)``: the least cost of a label as a window over its meetings, the labels with no
meeting in a branch switched off without ``max_distance``): their rows equal DuckDB's portable ones, and so
the LCA measures; without ``max_distance`` the meetings and the pair meetings are not stored (views computed
within the options' stage)."""

from __future__ import annotations

import pytest

from hiersql.engines import SparkEngine
from hiersql.measures import Options
from tests.test_spark_scale_variants import assert_lca_stages_equal, generated  # noqa: F401  (a fixture)

OPTION_STAGES = {
    "options_seen": "SELECT inst, side, label, lca, partner, up_label, up_partner FROM lca_options",
    "open_options_seen": "SELECT batch, inst, side, label, lca, partner FROM lca_open_options",
}


def beyond(rows: list[tuple]) -> list[tuple]:
    """The options at the virtual ancestor beyond max_distance (lca -1)."""
    return [row for row in rows if row[3] == -1]


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("options", [Options(), Options(max_distance=1)], ids=["greedy", "greedy_max_distance_1"])
def test_spark_options_on_a_generated_dag_equal_duckdb(spark, generated, options):  # noqa: F811
    """A generated DAG (600 nodes, 20 % of them with two parents): labels with several options of least cost
    (ties the window must all keep), and under max_distance 1 labels with no meeting; the options equal
    DuckDB's, and so the measures."""
    want = assert_lca_stages_equal(SparkEngine(spark), generated, options, OPTION_STAGES)["options_seen"]
    per_label: dict[tuple, int] = {}
    for inst, side, label, *_ in want:
        per_label[(inst, side, label)] = per_label.get((inst, side, label), 0) + 1
    assert max(per_label.values()) > 1
    assert bool(beyond(want)) == (options.max_distance is not None)
