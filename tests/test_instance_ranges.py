"""The plans run for ranges of instances (``FamilyPlan.instance_ranges``, ``DuckDBEngine.range_units``): the
LCA, pair-based and HCM summaries of one range and of many are the same numbers, to the last digit, and the store's
own tables are in view again after the ranges, also when a step fails within one."""

from __future__ import annotations

import pytest

from hiersql.api.evaluator import make_options
from hiersql.engines import DuckDBEngine
from hiersql.measures import confusion, lca, pair_based
from tests._engine_cases import dag_store, germeval_store

CASES = {
    "lca_optimal": (lca.PLAN, ["lca_precision", "lca_recall", "lca_f1"], make_options(lca_graph="optimal",
                                                                                       average=("micro", "macro"))),
    "lca_greedy_max_distance_2": (lca.PLAN, ["lca_f1"], make_options(max_distance=2)),
    "pair_based": (pair_based.PLAN, ["graph_induced_error", "mgia", "mgia_fn", "all_pairs_error"],
                   make_options(average=("micro", "macro", "samples"))),
    "hcm": (confusion.PLAN, ["hcm_tp", "hcm_fp", "hcm_fn", "hcm_tn", "hcm_accuracy", "hcm_pt"], make_options()),
    "hcm_descendants": (confusion.PLAN, ["hcm_tp", "hcm_tn", "hcm_f1", "hcm_mcc"],
                        make_options(tn="descendants", average=("micro", "macro"))),
}


def store_rows(store, case: str, range_units: int | None = None) -> tuple[list, int]:
    """The summary rows of ``case`` on ``store``, and the number of ranges its steps ran for; the per-instance
    table then holds one row per (system, instance), each once."""
    plan, metrics, options = CASES[case]
    engine = DuckDBEngine(store)
    if range_units is not None:
        engine.range_units = range_units
    engine._summary_run = True
    ranges = len(engine._plan_ranges(plan, plan.steps))
    engine._summary_run = False
    rows = engine.run_plan(plan, metrics, options)
    units = engine.execute(f"SELECT count(*), count(DISTINCT (system, instance_id)) FROM {plan.instance}")
    assert units == store.con.execute("SELECT count(*), count(*) FROM systems, instances").fetchall()
    return rows, ranges


@pytest.mark.parametrize("case", CASES)
def test_germeval_in_ranges_of_instances_gives_the_numbers_of_one_range(data_dir, case):
    """GermEval 2019 subtask B, three systems (one leaves instances empty): about 50 ranges of 250 (system,
    instance) units, and one range (the default size holds them all)."""
    store = germeval_store(data_dir)
    whole, one = store_rows(store, case)
    rows, ranges = store_rows(store, case, range_units=250)
    assert one == 1 and ranges > 40
    assert rows == whole and len(rows) >= 3
    (units,), = store.con.execute("SELECT count(*) FROM truth").fetchall()
    assert units > 5_000  # the store's own truth in view again, not the last range's


@pytest.mark.parametrize("case", CASES)
def test_a_dag_with_choices_in_ranges_of_one_instance(case):
    """The DAG whose minimal graphs involve a choice, each instance a range of its own (4 ranges)."""
    store = dag_store()
    whole, _ = store_rows(store, case)
    rows, ranges = store_rows(store, case, range_units=2)
    assert ranges == 4 and rows == whole


def test_a_step_failing_within_a_range_leaves_the_store_in_view(data_dir, monkeypatch):
    """The temporary tables of a range are dropped when a step fails: the store's truth and predictions are
    read whole again, and no half-made per-instance table is left."""
    store = germeval_store(data_dir)
    counts = store.con.execute("SELECT (SELECT count(*) FROM truth), (SELECT count(*) FROM predictions)").fetchall()
    calls = []

    def failing(self, step, params, options):
        calls.append(step.name)
        if len(calls) == 2:
            raise RuntimeError("a step failed")
        return solve(self, step, params, options)

    solve = DuckDBEngine.solve
    monkeypatch.setattr(DuckDBEngine, "solve", failing)
    with pytest.raises(RuntimeError, match="a step failed"):
        store_rows(store, "pair_based", range_units=1_000)
    assert store.con.execute("SELECT (SELECT count(*) FROM truth), (SELECT count(*) FROM predictions)").fetchall() \
        == counts
    temporary = {name for (name,) in store.con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()}
    assert not temporary & {"_range_instances", "instances", "truth", "predictions"}
