"""Stages shared by the runs of a plan (:attr:`hiersql.plan.FamilyPlan.shared`): the severity family's ranking,
class distances and best retrievals are made once for every k, and give the values of one run per k; a shared
query whose parameters differ between the runs is made in each run."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest

from hiersql.engines import DuckDBEngine
from hiersql.measures.severity import PLAN
from hiersql.options import Options

from .test_severity import LABELS, METRICS, SCORES, TREE, TRUTH, evaluator, scored_rows


def staged(engine: DuckDBEngine) -> Counter[str]:
    """Count the queries ``engine`` materialises from now on (:meth:`~hiersql.engines.Engine.stage`), by name."""
    counts: Counter[str] = Counter()
    stage = engine.stage

    def counted(file, query, params, done, text=None):
        counts[query] += 1
        stage(file, query, params, done, text)

    engine.stage = counted  # type: ignore[method-assign]
    return counts


@pytest.fixture
def engine() -> DuckDBEngine:
    ev = evaluator(TREE, TRUTH, {"net": scored_rows(SCORES, LABELS), "hard": [["a1", "b2"], ["b1"], ["a2"]]})
    return DuckDBEngine(ev.store)


@pytest.mark.parametrize("distance", ["height", "edges"])
def test_shared_stages_made_once(engine: DuckDBEngine, distance: str) -> None:
    options = Options(k=(1, 2, 5), severity_distance=distance)
    alone = [row for k in options.k for row in engine.run_plan(PLAN, METRICS, options.with_(k=(k,)))]
    counts = staged(engine)
    together = engine.run_plan(PLAN, METRICS, options)
    assert {name: counts[name] for name in PLAN.shared} == dict.fromkeys(PLAN.shared, 1)
    assert counts["severity_instance"] == 3
    assert sorted(together) == sorted(alone)


def test_shared_per_instance_and_queries(engine: DuckDBEngine) -> None:
    options = Options(k=(1, 5))
    counts = staged(engine)
    table = engine.per_instance(PLAN, options)
    assert counts["severity_distances"] == 1 and counts["severity_instance_values"] == 2
    assert table.equals(engine.per_instance(dataclasses.replace(PLAN, shared=()), options))


def test_stage_whose_parameters_differ_is_made_per_run(engine: DuckDBEngine) -> None:
    plan = dataclasses.replace(PLAN, shared=(*PLAN.shared, "severity_systems"))  # reads $top_k
    options = Options(k=(1, 2, 5))
    counts = staged(engine)
    rows = engine.run_plan(plan, METRICS, options)
    assert counts["severity_systems"] == 3 and counts["severity_distances"] == 1
    assert sorted(rows) == sorted(engine.run_plan(PLAN, METRICS, options))
    assert {row.average for row in rows if row.system == "hard"} == {"@1"}  # hard predictions: k = 1 only


def test_one_run_shares_nothing(engine: DuckDBEngine) -> None:
    counts = staged(engine)
    engine.run_plan(PLAN, METRICS, Options(k=(5,)))
    assert set(counts) == {"severity_ranked_systems", "severity_instance", "severity_summary"}  # the steps
