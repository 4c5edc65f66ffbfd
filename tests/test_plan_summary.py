"""The generated summary (hiersql.plan.summary_sql): every value read from one unit table is a column of one
aggregate over it, unpivoted into ``(system, metric, average, value)`` rows. Checked by hand on a small
example with every average (with and without sample weights) on DuckDB, PostgreSQL and Spark, and against
the values of each (metric, average) generated alone on GermEval 2019 subtask B, bit for bit."""

from __future__ import annotations

import re

import pyarrow as pa
import pytest

from hiersql.engines import DuckDBEngine, Engine, PostgresEngine, SparkEngine, render
from hiersql.measures import Options, plan_of
from hiersql.plan import AVERAGES, CLASSES, FamilyPlan, Measure, summary_sql
from tests._engine_cases import germeval_store

# System "a", three instances (system "b" predicted nothing and has no unit rows):
#   1: true {x, y}, predicted {x}     -> n_true 2, n_pred 1, n_both 1
#   2: true {y},    predicted {x, z}  -> n_true 1, n_pred 2, n_both 0
#   3: true {z},    predicted {}      -> n_true 1, n_pred 0, n_both 0 (precision undefined: zero_division)
# Per class: x n_true 1, n_pred 2, tp 1, fp 1; y n_true 2, n_pred 0, tp 0, fp 0 (undefined); z n_true 1,
# n_pred 1, tp 0, fp 1.
ZERO = 0.5  # zero_division, distinct from every value computed
UNITS = {"system": ["a", "a", "a"], "instance_id": [1, 2, 3], "n_true": [2, 1, 1], "n_pred": [1, 2, 0],
         "n_both": [1, 0, 0]}
SIDES = [(1, "x", True, True), (1, "y", True, False), (2, "y", True, False), (2, "x", False, True),
         (2, "z", False, True), (3, "z", True, False)]
WEIGHTS = {1: 2.0, 2: 1.0, 3: 1.0}
PLAN = FamilyPlan(
    name="toy", file="set_based", metrics={"precision": "p", "recall": "r", "loss": "l", "both": "b",
                                           "class_precision": "cp"},
    steps=(), instance="toy_instance", classes="toy_classes",
    measures=(Measure("precision", "n_both", "n_pred", averages=("micro", "macro", "samples")),
              Measure("recall", "n_both", "n_true", averages=("micro", "macro", "samples")),
              Measure("loss", "n_true + n_pred - 2 * n_both", averages=("",), higher_is_better=False),
              Measure("both", "n_both", averages=("",), total=True),
              Measure("class_precision", "tp", "tp + fp", averages=("micro", "macro", "label_macro", "weighted"),
                      unit=CLASSES)))
BY_HAND = {
    ("a", "precision", "micro"): 1 / 3, ("a", "precision", "macro"): (1 + 0 + ZERO) / 3,
    ("a", "precision", "samples"): (1 + 0 + ZERO) / 3,
    ("a", "recall", "micro"): 1 / 4, ("a", "recall", "macro"): (1 / 2 + 0 + 0) / 3,
    ("a", "recall", "samples"): (1 / 2 + 0 + 0) / 3,
    ("a", "loss", ""): (1 + 3 + 1) / 3, ("a", "both", ""): 1,
    ("a", "class_precision", "micro"): 1 / 3, ("a", "class_precision", "macro"): (1 / 2 + ZERO + 0) / 3,
    ("a", "class_precision", "label_macro"): (1 / 2 + ZERO + 0) / 3,
    ("a", "class_precision", "weighted"): (1 * 1 / 2 + 2 * ZERO + 1 * 0) / 4,
    **{("b", metric, average): ZERO for metric, average in
       [("precision", "micro"), ("precision", "macro"), ("precision", "samples"), ("recall", "micro"),
        ("recall", "macro"), ("recall", "samples"), ("loss", ""), ("class_precision", "micro"),
        ("class_precision", "macro"), ("class_precision", "label_macro"), ("class_precision", "weighted")]},
    ("b", "both", ""): 0,
}
# Weighted by instance (2, 1, 1): the instance measures only (the classes' counts are weighted too: x
# n_true 2, n_pred 3, tp 2, fp 1; y n_true 3, tp 0, fp 0; z n_true 1, tp 0, fp 1).
BY_HAND_WEIGHTED = {
    ("a", "precision", "micro"): 2 / 4, ("a", "precision", "macro"): (2 * 1 + 0 + ZERO) / 4,
    ("a", "recall", "micro"): 2 / 6, ("a", "recall", "samples"): (2 * 1 / 2 + 0 + 0) / 4,
    ("a", "loss", ""): (2 * 1 + 3 + 1) / 4, ("a", "both", ""): 2,
    ("a", "class_precision", "micro"): 2 / 4, ("a", "class_precision", "label_macro"): (2 / 3 + ZERO + 0) / 3,
    ("a", "class_precision", "weighted"): (2 * 2 / 3 + 3 * ZERO + 1 * 0) / 6,
}


def _load(engine: Engine, weighted: bool) -> None:
    engine.write("systems", pa.table({"system": ["a", "b"]}))
    engine.write("instances", pa.table({"instance_id": [1, 2, 3]}))
    engine.write("toy_instance", pa.table(UNITS))
    engine.write("toy_classes", pa.table({"system": ["a"] * len(SIDES),
                                          **dict(zip(("instance_id", "label", "in_true", "in_pred"),
                                                     map(list, zip(*SIDES, strict=True)), strict=True))}))
    if weighted:
        engine.write("sample_weights", pa.table({"instance_id": list(WEIGHTS), "weight": list(WEIGHTS.values())}))


def _summary(engine: Engine, weighted: bool, metrics=tuple(PLAN.metrics), averages=AVERAGES
             ) -> dict[tuple[str, str, str], float]:
    sql = summary_sql(PLAN, list(metrics), averages, True, weighted)
    rows = engine.execute(render("set_based", "toy_summary", {"zero_division": ZERO}, engine.dialect, text=sql))
    out = {(str(s), str(m), str(a)): float(v) for s, m, a, v in rows}
    assert len(out) == len(rows)  # one row per (system, metric, average)
    return out


@pytest.mark.parametrize("weighted", [False, True])
def test_every_average_by_hand_on_duckdb(weighted):
    engine = DuckDBEngine()
    _load(engine, weighted)
    got = _summary(engine, weighted)
    assert len(got) == 2 * 12  # 12 (metric, average) values per system, none lost or repeated by the unpivot
    for key, want in (BY_HAND_WEIGHTED if weighted else BY_HAND).items():
        assert got[key] == pytest.approx(want, abs=1e-15), key


@pytest.mark.parametrize("weighted", [False, True])
def test_one_aggregate_per_unit_table_equals_each_value_alone(weighted):
    """Each (metric, average) generated alone (one part: a plain aggregate, no unpivot) gives the same bits as
    in the whole summary, where it is one column of its unit table's aggregate."""
    engine = DuckDBEngine()
    _load(engine, weighted)
    whole = _summary(engine, weighted)
    alone = {}
    for metric in PLAN.metrics:
        for average in AVERAGES:
            alone.update({k: v for k, v in _summary(engine, weighted, [metric], [average]).items()
                          if k[2] == average})
    assert alone.keys() == whole.keys()
    assert whole == alone


def test_one_join_and_group_by_per_unit_table():
    sql = summary_sql(PLAN, list(PLAN.metrics), AVERAGES, True)
    assert sql.count("GROUP BY _s.system") == 2  # toy_instance and the classes
    assert sql.count("LEFT JOIN toy_instance") == 1 and sql.count("LEFT JOIN _classes") == 1
    # macro and samples of an instance measure are the same mean: one column for both
    assert len(re.findall(r" AS v\d+\b", sql)) == 2 + 2 + 1 + 1 + 3


@pytest.mark.parametrize("family", ["set_based", "flat", "confusion"])
def test_germeval_summary_equals_each_value_alone(data_dir, family):
    """GermEval B (a few systems): the whole summary of a family equals each of its values generated alone,
    bit for bit (DuckDB)."""
    plan = plan_of(family)
    metrics = [m for m in plan.metrics if m != "tree_induced_error"]
    options = Options(average=tuple(a for a in AVERAGES if a))
    parts = {f"_alone_{i}_{j}": summary_sql(plan, [metric], [average], True)
             for i, metric in enumerate(metrics) for j, average in enumerate(AVERAGES)}
    engine = DuckDBEngine(germeval_store(data_dir))
    rows = engine.run_queries(plan, metrics, options, {"_whole": summary_sql(plan, metrics, AVERAGES, True), **parts})
    whole = {(s, m, a): v for s, m, a, v in rows.pop("_whole")}
    alone = {(s, m, a): v for name, part in rows.items() for s, m, a, v in part
             if a == AVERAGES[int(name.rsplit("_", 1)[1])]}
    assert len(whole) > 19 and whole == alone


@pytest.mark.postgres
@pytest.mark.parametrize("weighted", [False, True])
def test_every_average_by_hand_on_postgres(pg_dsn, weighted):
    engine = PostgresEngine(pg_dsn)
    try:
        _load(engine, weighted)
        got = _summary(engine, weighted)
    finally:
        engine.close()
    want = _summary(_loaded(DuckDBEngine(), weighted), weighted)
    assert got.keys() == want.keys()
    assert all(got[k] == pytest.approx(want[k], rel=1e-12) for k in want)


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("weighted", [False, True])
def test_every_average_by_hand_on_spark(spark, weighted):
    got = _summary(_loaded(SparkEngine(spark), weighted), weighted)
    want = _summary(_loaded(DuckDBEngine(), weighted), weighted)  # Spark's means are exact decimal sums
    assert got.keys() == want.keys()
    assert all(got[k] == pytest.approx(want[k], rel=1e-12) for k in want)


def _loaded(engine: Engine, weighted: bool) -> Engine:
    _load(engine, weighted)
    return engine
