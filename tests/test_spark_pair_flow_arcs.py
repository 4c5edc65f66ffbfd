"""``pair_flow_arcs`` (pair_based.sql): the pairing step reads the candidate pairs only when it solves a flow
over them. MGIA with its nearest-class pairing alone leaves it empty, and its values are those of a run that
reads every pair (MGIA computed beside GIE); on Spark, solved on the driver or per partition (the keyed pairs
then empty in every partition) and on PostgreSQL, they equal DuckDB's on the small DAG of the hard cases."""

from __future__ import annotations

import pytest

from hiersql.engines import DuckDBEngine, PostgresEngine, SparkEngine
from hiersql.measures import Options, compute
from hiersql.measures.pair_based import PLAN
from tests._engine_cases import assert_rows_match, reference, rows_and_stages
from tests.test_spark_scale_variants import PAIR_CASES, hard_case_store

SEEN = {"arcs_seen": "SELECT count(*) FROM pair_arcs", "flow_arcs_seen": "SELECT count(*) FROM pair_flow_arcs"}
MGIA = ["mgia", "mgia_fn"]


@pytest.fixture(scope="module")
def store():
    return hard_case_store()


def counts(engine, metrics: list[str], options: Options) -> tuple[int, int]:
    """The rows of ``pair_arcs`` and of ``pair_flow_arcs`` after the plan's steps for ``metrics``."""
    seen = engine.run_queries(PLAN, metrics, options, SEEN)
    return seen["arcs_seen"][0][0], seen["flow_arcs_seen"][0][0]


@pytest.mark.parametrize("case", PAIR_CASES)
def test_nearest_mgia_alone_reads_no_pair_and_keeps_its_values(store, case):
    """MGIA (nearest pairing) alone: ``pair_flow_arcs`` is empty, ``pair_arcs`` is not, and every average of
    MGIA and its fn equals that of a run where GIE makes the step read all the pairs."""
    options = PAIR_CASES[case].with_(average=("micro", "macro", "samples"))
    arcs, flow_arcs = counts(DuckDBEngine(store), MGIA, options)
    assert arcs > 0 and flow_arcs == 0
    with_gie = [r for r in compute(store, [*MGIA, "graph_induced_error"], options) if r.metric in MGIA]
    alone = compute(store, MGIA, options)
    assert len(alone) == len(with_gie) > 3 * 3
    assert_rows_match(alone, with_gie, tol=0.0)


@pytest.mark.parametrize("metrics, pairing", [(MGIA, "flow"), (["graph_induced_error"], "nearest"),
                                              (["mgia", "all_pairs_error"], "nearest")])
def test_a_flow_reads_every_pair(store, metrics, pairing):
    """MGIA's flow pairing, GIE, or any metric beside MGIA: the step reads every pair of ``pair_arcs``."""
    arcs, flow_arcs = counts(DuckDBEngine(store), metrics, Options(pairing=pairing))
    assert flow_arcs == arcs > 0


def test_postgres_nearest_mgia_without_pairs_equals_duckdb(pg_dsn, store):
    """On PostgreSQL, MGIA alone (``$pair_flows`` false) and beside GIE (true): DuckDB's values."""
    engine = PostgresEngine(pg_dsn)
    try:
        engine.copy_store(store)
        options = PAIR_CASES["climb_2"].with_(average=("micro", "macro", "samples"))
        arcs, flow_arcs = counts(engine, MGIA, options)
        assert arcs > 0 and flow_arcs == 0
        for metrics in (MGIA, [*MGIA, "graph_induced_error"]):
            assert_rows_match(compute(engine, metrics, options), reference(store, metrics, options))
    finally:
        engine.close()


@pytest.mark.spark
@pytest.mark.parametrize("partition_rows", [None, 0], ids=["driver", "per_partition"])
@pytest.mark.parametrize("case", PAIR_CASES)
def test_spark_nearest_mgia_without_pairs_equals_duckdb(spark, store, case, partition_rows):
    """On Spark, MGIA alone (no pair read by the step), solved on the driver or per partition: DuckDB's
    values for every average, and ``pair_flow_arcs`` is empty there too."""
    engine = SparkEngine(spark, partition_rows=partition_rows)
    engine.copy_store(store)
    options = PAIR_CASES[case].with_(average=("micro", "macro", "samples"))
    rows, seen = rows_and_stages(engine, PLAN, MGIA, options, SEEN)
    assert seen["arcs_seen"][0][0] > 0 and seen["flow_arcs_seen"][0][0] == 0
    assert_rows_match(rows, reference(store, MGIA, options))
    if partition_rows == 0:
        assert engine.partitions_solved["pairings"] >= 1
