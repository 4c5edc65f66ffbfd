"""Every Python step that declares ``partition_by`` warns of nothing when its keyed tables hold no rows: Spark's
runner first runs such a step so to learn the schemas it writes, and does not silence it (other family plans
may run beside it, and warning filters are process-wide: hiersql.plan.Python, SparkEngine.solve). Checked here
on DuckDB, each step's other inputs as the plan made them, on a tree and on a DAG under each option that
changes a partitioned step."""

from __future__ import annotations

import warnings

import pytest

from hiersql.engines import DuckDBEngine, solve_arrow
from hiersql.measures import FAMILIES, Options, compute, plan_of
from hiersql.plan import Python
from tests._engine_cases import all_metrics, dag_store, hand_store


class DryRunning(DuckDBEngine):
    """DuckDB, with each partitioned step first run as Spark's runner does, on no rows of its keyed tables:
    the warnings of those runs and the steps run are kept."""

    def __init__(self, store) -> None:
        super().__init__(store)
        self.dry_runs: dict[str, list[str]] = {}

    def solve(self, step: Python, params: dict[str, object], options: Options) -> None:
        if step.partition_by:
            tables = {name: self._input(name) for name in step.reads}
            empty = {name: data.schema.empty_table() for name, data in tables.items() if name in step.partition_by}
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                written = solve_arrow(step, params, options, {**tables, **empty})
            assert set(written) == set(step.writes)
            self.dry_runs[step.name] = [f"{w.category.__name__}: {w.message}" for w in caught]
        super().solve(step, params, options)


def partitioned_steps() -> set[str]:
    return {s.name for f in FAMILIES for s in plan_of(f).steps if isinstance(s, Python) and s.partition_by}


@pytest.mark.parametrize("case", ["tree", "dag"])
def test_no_partitioned_step_warns_on_no_rows(case):
    store = hand_store() if case == "tree" else dag_store()
    engine = DryRunning(store)
    variants = [Options(), Options(lca_graph="optimal"), Options(lca_graph="hemkit"), Options(pairing="flow")]
    for options in variants:
        compute(engine, all_metrics(), options)  # the families that apply (on the DAG: not the scoring trees)
    assert set(engine.dry_runs) == partitioned_steps()  # every one of them ran
    assert {name: caught for name, caught in engine.dry_runs.items() if caught} == {}

