"""Every Spark variant of the LCA plan on the small DAG of test_spark_scale_variants, one run of the plan per
option set: X below A1 and B1 (two shortest paths from Z to A, so a path node with several paths), labels
meeting only at the root, an empty truth, a system predicting nothing and an instance nobody predicts. The
rows of the label, meeting, option and open stages equal DuckDB's portable ones, and so the measures."""

from __future__ import annotations

import pytest

from hiersql.engines import SparkEngine
from hiersql.measures import Options
from tests.test_spark_lca_open import OPEN_STAGES
from tests.test_spark_lca_options import OPTION_STAGES, beyond
from tests.test_spark_scale_variants import LCA_STAGES, assert_lca_stages_equal, hard_case_store

CASES = {"greedy": Options(), "greedy_max_distance_1": Options(max_distance=1),
         "greedy_max_distance_2": Options(max_distance=2),
         "optimal_root": Options(lca_graph="optimal", include_root=True),
         "extended": Options(lca_graph="extended"), "extended_max_distance_2": Options(lca_graph="extended",
                                                                                     max_distance=2)}
MEETING_VIEWS = ("lca_pairs", "lca_pair_meetings", "lca_meetings")


@pytest.mark.spark
@pytest.mark.parametrize("case", CASES)
def test_spark_lca_stages_on_the_hard_cases_equal_duckdb(spark, case):
    """By hand, unbounded: Z (truth of i1) and R (predicted by "roots") meet at R only, so Z's options are
    (R, R) at costs 4 + 0, and i1 of "roots" is the one instance with a choice (Z meets R at the root through
    A1 or B1: 7 links); with max_distance 1 or 2 that pair meets nowhere: labels with the one option beyond
    the threshold, beside others that meet, and no instance with a choice. Without max_distance the options
    read the meetings once: neither they nor the pair meetings (nor the pairs of labels) are stored, Spark
    computes them within the options' stage; with max_distance the labels with no meeting read the meetings
    a second time, which are then stored once."""
    options = CASES[case]
    store = hard_case_store()
    engine = SparkEngine(spark)
    open_ = options.lca_graph != "extended"  # (OPEN_STAGES' open options are OPTION_STAGES' open_options_seen)
    stages = {**(OPEN_STAGES if open_ else {}), **LCA_STAGES, **OPTION_STAGES}
    want = assert_lca_stages_equal(engine, store, options, stages)
    assert want["meetings_seen"]
    assert "lca_options" in engine._files
    stored = {name for name in MEETING_VIEWS if name in engine._files}
    options_seen = want["options_seen"]
    if options.max_distance is None:
        assert not beyond(options_seen)
        r, z = (store.con.execute("SELECT position FROM nodes WHERE label = ?", [label]).fetchall()[0][0]
                for label in ("R", "Z"))
        assert (r, r, 4, 0) in {(lca, partner, up, up_p) for _, side, label, lca, partner, up, up_p in options_seen
                                if side == "t" and label == z}
        assert stored == set()
    else:
        assert beyond(options_seen) and len(beyond(options_seen)) < len(options_seen)
        assert stored == {"lca_meetings"}
    if open_:
        if options.max_distance is None:
            assert [(system, batch) for _, system, _, batch in want["instances_seen"]] == [("roots", 0)]
            assert len(want["links_seen"]) == 7
        else:
            assert not any(want[name] for name in ("instances_seen", "open_options_seen", "nodes_seen", "links_seen"))
