"""Property tests (hypothesis) of the set-based measures (and the greedy LCA graphs) on random trees and DAGs."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hiersql import DataWarning, Evaluator, Taxonomy

SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
METRICS = ["hp", "hr", "hf", "sdl"]


@st.composite
def taxonomies(draw) -> list[tuple[str, str]]:
    """A random tree on n nodes (parent index < child index), plus a few extra DAG edges."""
    n = draw(st.integers(min_value=3, max_value=14))
    edges = [(f"n{draw(st.integers(0, i - 1))}", f"n{i}") for i in range(1, n)]
    extra = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3))
    edges += [(f"n{a}", f"n{b}") for a, b in extra if a < b and (f"n{a}", f"n{b}") not in edges]
    return edges


@st.composite
def problems(draw):
    edges = draw(taxonomies())
    # the root n0 is not a label: with include_root=False its augmented set is empty (0/0, see
    # test_root_only_label_follows_zero_division)
    nodes = sorted({n for e in edges for n in e} - {"n0"})
    labelsets = st.lists(st.sampled_from(nodes), min_size=1, max_size=3, unique=True)
    k = draw(st.integers(1, 5))
    y_true = [draw(labelsets) for _ in range(k)]
    y_pred = [draw(labelsets) for _ in range(k)]
    include_root = draw(st.booleans())
    return edges, y_true, y_pred, include_root


def values(edges, y_true, y_pred, include_root, metrics=METRICS) -> dict[tuple[str, str], float]:
    ev = Evaluator(Taxonomy.from_edges(edges)).add_truth(y_true).add_predictions("s", y_pred)
    return {(m, a): v for _, m, a, v in ev.rows(metrics, include_root=include_root)}


@SETTINGS
@given(problems())
def test_perfect_prediction_scores_one(problem):
    edges, y_true, _, include_root = problem
    got = values(edges, y_true, y_true, include_root)
    for (metric, _), value in got.items():
        assert value == (0 if metric == "symmetric_difference_loss" else 1)


@SETTINGS
@given(problems())
def test_renaming_nodes_changes_nothing(problem):
    edges, y_true, y_pred, include_root = problem
    rename = {n: f"renamed {n[::-1]} ü" for e in edges for n in e}
    renamed = values(
        [(rename[a], rename[b]) for a, b in edges],
        [[rename[x] for x in s] for s in y_true],
        [[rename[x] for x in s] for s in y_pred],
        include_root,
    )
    assert renamed == pytest.approx(values(edges, y_true, y_pred, include_root))


@SETTINGS
@given(problems())
def test_edge_order_changes_nothing_for_greedy_lca_graphs(problem):
    """Algorithm 1 breaks ties by node name, not by the order of the taxonomy's rows (a database table has
    none): the edges reversed, and the nodes renamed in the same name order ('n12' becomes 'x n12'), keep the
    greedy graphs' sizes."""
    edges, y_true, y_pred, include_root = problem
    lca_metrics = ["lca_p", "lca_r", "lca_f"]
    want = values(edges, y_true, y_pred, include_root, lca_metrics)
    assert values(edges[::-1], y_true, y_pred, include_root, lca_metrics) == pytest.approx(want)
    rename = {n: f"x {n}" for e in edges for n in e}
    renamed = values(
        [(rename[a], rename[b]) for a, b in edges[::-1]],
        [[rename[x] for x in s] for s in y_true],
        [[rename[x] for x in s] for s in y_pred],
        include_root, lca_metrics,
    )
    assert renamed == pytest.approx(want)


@SETTINGS
@given(problems())
def test_duplicate_edges_change_nothing(problem):
    edges, y_true, y_pred, include_root = problem
    with pytest.warns(DataWarning) as caught:  # each repeat counted, the first named by its position
        doubled = values(edges + edges[::-1], y_true, y_pred, include_root)
    given = edges + edges[::-1]
    line = next(i for i, edge in enumerate(given, start=1) if edge in given[:i - 1])
    a, b = given[line - 1]
    assert [str(w.message) for w in caught if "repeated" in str(w.message)] == [
        f"<edges>: {len(given) - len(set(edges))} repeated edge(s) counted once (first: line {line}, {a!r} -> {b!r})"]
    assert doubled == pytest.approx(values(edges, y_true, y_pred, include_root))


@SETTINGS
@given(problems())
def test_micro_equals_macro_on_one_instance(problem):
    edges, y_true, y_pred, include_root = problem
    got = values(edges, y_true[:1], y_pred[:1], include_root, ["hp", "hr", "hf"])
    for metric in ("hierarchical_precision", "hierarchical_recall", "hierarchical_f1"):
        assert got[(metric, "micro")] == pytest.approx(got[(metric, "macro")])


@SETTINGS
@given(problems())
def test_recall_is_precision_with_roles_swapped(problem):
    edges, y_true, y_pred, include_root = problem
    forward = values(edges, y_true, y_pred, include_root, ["hp", "hr"])
    backward = values(edges, y_pred, y_true, include_root, ["hp", "hr"])
    for average in ("micro", "macro"):
        assert forward[("hierarchical_recall", average)] == pytest.approx(
            backward[("hierarchical_precision", average)])


@SETTINGS
@given(problems())
def test_values_in_unit_interval(problem):
    got = values(*problem)
    for (metric, _), value in got.items():
        if metric != "symmetric_difference_loss":
            assert 0 <= value <= 1


def test_root_only_label_follows_zero_division():
    edges = [("n0", "n1"), ("n0", "n2")]
    assert values(edges, [["n0"]], [["n0"]], False)[("hierarchical_f1", "micro")] == 0
    ev = Evaluator(Taxonomy.from_edges(edges)).add_truth([["n0"]]).add_predictions("s", [["n0"]])
    assert [r.value for r in ev.rows(["hp", "hr", "hf"], average="macro", zero_division=1)] == [1, 1, 1]
    assert values(edges, [["n0"]], [["n0"]], True)[("hierarchical_f1", "micro")] == 1
