"""The Spark variants of the LCA options (``lca_meetings (spark)``: each pair meeting listed for both sides from
one read; ``lca_options (spark)``: the least cost of a label as a window over its meetings, the labels with no
meeting in a branch switched off without ``max_distance``): their rows equal DuckDB's portable ones, and so
the LCA measures; without ``max_distance`` the meetings and the pair meetings are not stored (views computed
within the options' stage)."""

from __future__ import annotations

import pytest

from hiersql.engines import DuckDBEngine, SparkEngine
from hiersql.metrics import Options, lca
from tests.test_spark_scale_variants import (  # noqa: F401  (generated: a fixture)
    assert_lca_stages_equal,
    generated,
    hard_case_store,
)

OPTION_STAGES = {
    "options_seen": "SELECT inst, side, label, lca, partner, up_label, up_partner FROM lca_options",
    "open_options_seen": "SELECT batch, inst, side, label, lca, partner FROM lca_open_options",
}
CASES = {"greedy": Options(), "greedy_max_distance_1": Options(max_distance=1),
         "extended_max_distance_2": Options(lca_graph="extended", max_distance=2),
         "optimal_root": Options(lca_graph="optimal", include_root=True)}


def beyond(rows: list[tuple]) -> list[tuple]:
    """The options at the virtual ancestor beyond max_distance (lca -1)."""
    return [row for row in rows if row[3] == -1]


@pytest.mark.spark
@pytest.mark.parametrize("case", CASES)
def test_spark_options_on_the_hard_cases_equal_duckdb(spark, case):
    """The small DAG of test_spark_scale_variants (X below A1 and B1, labels meeting only at the root, an empty
    truth, a system predicting nothing): the options equal DuckDB's, and so the measures. By hand: unbounded,
    Z (truth of i1) and R (predicted by "roots") meet at R only, Z's options are (R, R) at costs 4 + 0; with
    max_distance 1 or 2 that pair meets nowhere: labels with the one option beyond the threshold, beside
    others that meet."""
    options = CASES[case]
    want = assert_lca_stages_equal(spark, hard_case_store(), options, OPTION_STAGES)["options_seen"]
    if options.max_distance is not None:
        assert beyond(want) and len(beyond(want)) < len(want)
    else:
        assert not beyond(want)
    if options.max_distance is None:
        store = hard_case_store()
        r = store.con.sql("SELECT position FROM nodes WHERE label = 'R'").fetchall()[0][0]
        z = store.con.sql("SELECT position FROM nodes WHERE label = 'Z'").fetchall()[0][0]
        assert (r, r, 4, 0) in {(lca_, partner, up, up_p) for _, side, label, lca_, partner, up, up_p in want
                                if side == "t" and label == z}


@pytest.mark.spark
@pytest.mark.parametrize("case", ["greedy", "greedy_max_distance_1"])
def test_spark_meetings_are_views_without_max_distance(spark, case):
    """Without max_distance the options read the meetings once: neither they nor the pair meetings (nor the
    pairs of labels) are stored, Spark computes them within the options' stage; with max_distance the labels
    with no meeting read the meetings a second time, which are then stored once."""
    store = hard_case_store()
    engine = SparkEngine(spark)
    engine.copy_store(store)
    options = CASES[case]
    want = DuckDBEngine(store).run_queries(lca.PLAN, ["lca_f1"], options, OPTION_STAGES)
    got = engine.run_queries(lca.PLAN, ["lca_f1"], options, OPTION_STAGES)
    assert {k: sorted(v) for k, v in got.items()} == {k: sorted(v) for k, v in want.items()}
    stored = {name for name in ("lca_pairs", "lca_pair_meetings", "lca_meetings") if name in engine._files}
    assert "lca_options" in engine._files
    assert stored == (set() if options.max_distance is None else {"lca_meetings"})


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("case", ["greedy", "greedy_max_distance_1"])
def test_spark_options_on_a_generated_dag_equal_duckdb(spark, generated, case):  # noqa: F811
    """A generated DAG (600 nodes, 20 % of them with two parents): labels with several options of least cost
    (ties the window must all keep), and under max_distance 1 labels with no meeting; the options equal
    DuckDB's, and so the measures."""
    options = CASES[case]
    want = assert_lca_stages_equal(spark, generated, options, OPTION_STAGES)["options_seen"]
    per_label: dict[tuple, int] = {}
    for inst, side, label, *_ in want:
        per_label[(inst, side, label)] = per_label.get((inst, side, label), 0) + 1
    assert max(per_label.values()) > 1
    assert bool(beyond(want)) == (options.max_distance is not None)
