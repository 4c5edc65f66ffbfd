"""Every declared measure (hiersql.plan.Measure, one per metric of REGISTRY) against invariants that any
hierarchical measure must keep (scikit-learn's test_common.py habit): on random trees and label sets, values lie
in the declared bounds, the perfect prediction is the best by the declared direction, and the values do not
change when the instances are given in another order or the labels get other names."""

from __future__ import annotations

import math
import random

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hiersql import Evaluator, Taxonomy
from hiersql.analyses.compare import oriented
from hiersql.measures import REGISTRY, declared, higher_is_better, plan_of
from hiersql.plan import AVERAGES

SEEDS = (3, 11, 29)


def test_every_measure_is_declared_with_one_direction_and_range():
    for family, metrics in REGISTRY.items():
        plan = plan_of(family)
        assert {m.metric for m in plan.measures} == set(metrics), family
        for metric in metrics:
            measures = declared(metric)
            assert len({(m.higher_is_better, m.bounds) for m in measures}) == 1, metric
            for m in measures:
                assert set(m.averages) <= set(AVERAGES), metric
                assert m.numerator is not None or plan.summary is not None, metric
                assert m.bounds[0] < m.bounds[1], metric


def test_directions_of_the_confusion_counts_and_rates():
    # Riehl et al.: TP, TN, TNR more is better; FP, FN, FNR, FPR fewer is better; the prevalence threshold
    # (Balayla 2020) is lower for a better classifier
    assert [higher_is_better(f"hcm_{c}") for c in ("tp", "tn", "tnr", "fp", "fn", "fnr", "fpr", "pt")] == \
        [True, True, True, False, False, False, False, False]


def test_compare_ranks_a_lower_is_better_measure_ascending():
    """hcm_pt, hcm_fp: the system with the lower value gets rank 1 (compare read its own list, where hcm_pt was
    higher-is-better and the plan's hcm_fp/hcm_fn were higher-is-better)."""
    tax = Taxonomy.from_edges([("r", "a"), ("r", "b"), ("a", "a1"), ("a", "a2"), ("b", "b1"), ("b", "b2")])
    ev = Evaluator(tax).add_truth([["a1"], ["a2"], ["b1"], ["b2"]])
    ev.add_predictions("exact", [["a1"], ["a2"], ["b1"], ["b2"]])
    ev.add_predictions("wrong", [["b1"], ["b2"], ["a1"], ["a2"]])
    ranking = ev.compare(["hcm_fp", "hcm_pt"], n_resamples=20, average="micro").ranking
    ranks = ranking.set_index(["metric", "system"])["rank"]
    # exact: fp = 0; wrong: each instance predicts 2 nodes off the true path (b, b1 against a, a1): fp = 8
    assert ranking.set_index(["metric", "system"]).loc[("hcm_fp", "wrong"), "value"] == 8
    assert (ranks[("hcm_fp", "exact")], ranks[("hcm_fp", "wrong")]) == (1, 2)
    pt = ranking[ranking["metric"] == "hcm_pt"].set_index("system")["value"]
    assert pt["exact"] < pt["wrong"]
    assert (ranks[("hcm_pt", "exact")], ranks[("hcm_pt", "wrong")]) == (1, 2)
    ev.close()


def _scoring_tree(rng: random.Random, n: int) -> list[tuple[str, str, float]]:
    """A random tree on ``n0 .. n{n-1}`` (root ``n0``) whose edge weights sum to 1 on every root-to-leaf path:
    an inner node takes half of what is left of its path, a leaf all of it."""
    parents = {f"n{k}": f"n{rng.randrange(k)}" for k in range(1, n)}
    inner = set(parents.values())
    weight_to: dict[str, float] = {"n0": 0.0}
    edges = []
    for child, parent in parents.items():  # parents come before their children
        left = 1.0 - weight_to[parent]
        weight = left / 2 if child in inner else left
        weight_to[child] = weight_to[parent] + weight
        edges.append((parent, child, weight))
    return edges


def _scored(sets: list[list[str]]) -> pd.DataFrame:
    """The label sets as scored rows (instance ``i`` is ``"i"``): each set's labels scored 1, 0.9, ... in their
    order, so that the measures of ranked labels (mistake severity, hierarchical distance@k) are computed at
    every k; the sets, which the other families read, stay the same."""
    rows = [(str(i), label, 1 - j / 10) for i, labels in enumerate(sets) for j, label in enumerate(labels)]
    return pd.DataFrame(rows, columns=["instance_id", "label", "score"])


def _values(edges, truth, systems) -> pd.Series:
    ev = Evaluator(Taxonomy.from_edges(edges)).add_truth(truth)
    for name, sets in systems.items():
        ev.add_predictions(name, _scored(sets))
    frame = ev.evaluate("all", average=["micro", "macro"])
    ev.close()
    return frame.set_index(["system", "metric", "average"])["value"].sort_index()


@pytest.fixture(scope="module", params=SEEDS)
def case(request):
    rng = random.Random(request.param)
    edges = _scoring_tree(rng, 12)
    nodes = [child for _, child, _ in edges]
    truth = [rng.sample(nodes, rng.choice((1, 1, 2))) for _ in range(10)]
    systems = {"perfect": [list(s) for s in truth]}
    for k in range(3):
        # as many predicted as true labels: the tree-induced error is defined (|T| = |P|) and computed too
        systems[f"random{k}"] = [rng.sample(nodes, len(t)) for t in truth]
    return rng, edges, truth, systems, _values(edges, truth, systems)


def test_every_family_is_computed(case):
    *_, values = case
    assert set(values.index.get_level_values("metric")) == {m for metrics in REGISTRY.values() for m in metrics}


def test_the_ranked_measures_are_computed_at_every_k(case):
    *_, values = case
    severity = values[values.index.get_level_values("metric") == "top_k_accuracy"]
    assert set(severity.index.get_level_values("average")) == {"@1", "@5"} and severity.notna().all()


def test_values_lie_in_the_declared_bounds(case):
    *_, values = case
    for (system, metric, average), value in values.items():
        low, high = declared(metric)[0].bounds
        assert math.isnan(value) or low - 1e-12 <= value <= high + 1e-12, (system, metric, average, value)


def test_the_perfect_prediction_is_best_by_the_declared_direction(case):
    *_, values = case
    for (metric, average), part in values.groupby(level=["metric", "average"]):
        scores = oriented(part.droplevel(["metric", "average"]), metric).dropna()
        if "perfect" in scores:
            assert (scores <= scores["perfect"] + 1e-12).all(), (metric, average, scores.to_dict())


def test_values_do_not_depend_on_the_order_of_the_instances(case):
    rng, edges, truth, systems, values = case
    order = list(range(len(truth)))
    rng.shuffle(order)
    shuffled = _values(edges, [truth[i] for i in order], {s: [sets[i] for i in order] for s, sets in systems.items()})
    pd.testing.assert_series_equal(shuffled, values, rtol=1e-12, atol=1e-12)


def test_values_do_not_depend_on_the_names_of_the_labels(case):
    """Every node renamed, in the reverse of the names' order (a rule that read label names would change)."""
    _, edges, truth, systems, values = case
    names = sorted({name for parent, child, _ in edges for name in (parent, child)})
    new = dict(zip(names, [f"label_{k:02d}" for k in range(len(names))][::-1], strict=True))
    renamed = _values([(new[p], new[c], w) for p, c, w in edges], [[new[x] for x in s] for s in truth],
                      {name: [[new[x] for x in s] for s in sets] for name, sets in systems.items()})
    pd.testing.assert_series_equal(renamed, values, rtol=1e-12, atol=1e-12)


def test_the_measures_page_is_the_declarations():
    from pathlib import Path

    from hiersql.measures import reference

    page = (Path(__file__).resolve().parents[1] / "docs" / "measures.md").read_text(encoding="utf-8")
    assert page.endswith("\n\n" + reference()), "docs/measures.md: regenerate its table (see the page's header)"


def test_the_summed_forms_file_is_sqlglots_rewrite_of_every_declared_expression():
    """``hiersql/summed.json`` (the micro sums of the declared expressions, read instead of running sqlglot) is
    exactly what sqlglot's rewrite gives for every measure; after a change: ``hiersql.measures.write_summed_file()``."""
    import json

    from hiersql.plan import SUMMED_FILE, summed_forms

    forms = summed_forms(m for family in REGISTRY for m in plan_of(family).measures)
    assert json.loads(SUMMED_FILE.read_text()) == forms
    assert forms["\tn_both"] == "COALESCE(CAST(SUM(n_both) AS DOUBLE), 0)"
    assert forms["_w.weight\tn_pred"] == "COALESCE(CAST(SUM(_w.weight * n_pred) AS DOUBLE), 0)"


def test_a_plain_duckdb_run_does_not_import_sqlglot_or_pandas(data_dir):
    """``hiersql evaluate`` of the set-based, LCA, severity and flat measures on DuckDB runs without sqlglot (its
    import and rewrites were a sixth of a 20,000-instance run; a renamed table or another engine still use it; the
    flat family's helper table was named by sqlglot's quoting), and without pandas (``pa.array`` of the flat
    family's empty label table imported it: a third of a second, a tenth of a flat run on 300,000 instances)."""
    import subprocess
    import sys

    canonical = data_dir / "canonical"
    code = ("import sys; from hiersql.cli import main; code = main(['evaluate', '--taxonomy', sys.argv[1],"
            " '--truth', sys.argv[2], '--pred', sys.argv[3], '--metrics', sys.argv[4], '--average',"
            " 'micro,macro']); print(code, any(m.startswith('sqlglot') for m in sys.modules), 'pandas' in sys.modules)")
    for metrics, want in (("hp,hr,hf,lca_f1", "0 False False"), ("mistake_severity,top_k_accuracy", "0 False False"),
                          ("flat", "0 False False")):
        done = subprocess.run([sys.executable, "-c", code, str(canonical / "taxonomy.tsv"),
                               str(canonical / "truth_a.tsv"), str(canonical / "pred_a" / "Averbis__BOHB_CNN.tsv"),
                               metrics], capture_output=True, text=True, timeout=300)
        assert done.stdout.splitlines()[-1] == want, done.stdout + done.stderr


@settings(max_examples=500, deadline=None)
@given(st.text(min_size=1).filter(lambda name: "." not in name))
def test_duckdbs_quoting_without_sqlglot_is_sqlglots(name):
    """The DuckDB engine quotes a plain name (a helper table's) without importing sqlglot: the same text as
    sqlglot's quoting with ``identify``, whatever the characters (a double quote doubled)."""
    from sqlglot import exp

    from hiersql.engines.dialect import dialect

    assert dialect("duckdb").quoted(name) == exp.to_identifier(name).sql(dialect="duckdb", identify=True)
