"""``mgia_nearest (spark)`` and ``pair_problem_sizes`` (pair_based.sql): on Spark the nearest distance
of each class is a group of ``pair_arcs`` alone, for the classes some pair reaches; the problem sizes count the
others (an empty other side, nothing within the bounds) at dmax. On the small DAG of the hard cases the sizes
and the mutual pairs the pairing step reads equal DuckDB's row for row, and so do MGIA's values."""

from __future__ import annotations

import pytest

from hiersql.engines import DuckDBEngine, SparkEngine
from hiersql.measures import Options
from hiersql.measures.pair_based import PLAN
from tests._engine_cases import assert_rows_match, reference, rows_and_stages
from tests.test_spark_scale_variants import PAIR_CASES, hard_case_store

STAGES = {"sizes_seen": "SELECT * FROM pair_problem_sizes",
          "mutual_seen": "SELECT problem, pred_node, true_node, distance FROM mgia_mutual_pairs",
          "nearest_seen": "SELECT problem, side, node, nearest FROM mgia_nearest",
          "arcs_seen": "SELECT problem, pred_node, true_node, distance FROM pair_arcs"}
MGIA = ["mgia", "mgia_fn"]
CASES = {**PAIR_CASES, "dmax_2_5_climb_1": Options(dmax=2.5, max_distance=1, distance_limit="side")}


@pytest.fixture(scope="module")
def store():
    return hard_case_store()


def reached(rows: dict[str, list[tuple]]) -> set[tuple]:
    """The (side, node) of the classes some candidate pair reaches."""
    return {("true", t) for _, _, t, _ in rows["arcs_seen"]} | {("pred", p) for _, p, _, _ in rows["arcs_seen"]}


@pytest.mark.spark
@pytest.mark.parametrize("case", CASES)
def test_spark_nearest_of_the_reached_classes_gives_duckdb_sizes(spark, store, case):
    """The Spark rows of ``mgia_nearest`` are DuckDB's for the classes some pair reaches (the others, at dmax
    there, exist in every case: "quiet" predicts nothing, i3's truth is empty), ``pair_problem_sizes`` and
    ``mgia_mutual_pairs`` equal DuckDB's row for row (nearest_sum exactly), and MGIA's values too."""
    options = CASES[case].with_(average=("micro", "macro", "samples"))
    want = DuckDBEngine(store).run_queries(PLAN, MGIA, options, STAGES)
    engine = SparkEngine(spark, partition_rows=None)
    engine.copy_store(store)
    rows, got = rows_and_stages(engine, PLAN, MGIA, options, STAGES)
    seen = reached(want)
    unreached = [r for r in want["nearest_seen"] if (r[1], r[2]) not in seen]
    assert unreached and all(r[3] == options.dmax for r in unreached)
    assert sorted(got["nearest_seen"]) == sorted(r for r in want["nearest_seen"] if (r[1], r[2]) in seen)
    assert sorted(got["sizes_seen"]) == sorted(want["sizes_seen"])
    assert any(r[6] > 0 for r in want["sizes_seen"]) and want["mutual_seen"]
    assert sorted(got["mutual_seen"]) == sorted(want["mutual_seen"])
    assert_rows_match(rows, reference(store, MGIA, options))


@pytest.mark.spark
def test_spark_sizes_without_the_nearest_pairing_equal_duckdb(spark, store):
    """MGIA with the flow pairing (``$mgia_nearest`` false): no nearest rows on either engine, nearest_sum 0 in
    every problem (no class counted at dmax), and the values equal DuckDB's."""
    options = Options(pairing="flow", max_distance=2, distance_limit="pair")
    want = DuckDBEngine(store).run_queries(PLAN, MGIA, options, STAGES)
    engine = SparkEngine(spark, partition_rows=None)
    engine.copy_store(store)
    rows, got = rows_and_stages(engine, PLAN, MGIA, options, STAGES)
    assert got["nearest_seen"] == want["nearest_seen"] == []
    assert sorted(got["sizes_seen"]) == sorted(want["sizes_seen"])
    assert {r[6] for r in got["sizes_seen"]} == {0}
    assert_rows_match(rows, reference(store, MGIA, options))
