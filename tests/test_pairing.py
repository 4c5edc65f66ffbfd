"""The min-cost flow pairing framework (Kosmopoulos et al. 2015 §2.3.1, Fig. 3) of
hiersql.measures.pair_based.pairing."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from hiersql.measures.pair_based.pairing import SETTINGS, Bounds, Problems, solve

NO = np.nan  # no candidate pair


def costs(setting, *matrices, dmax=5.0, **kw):
    return solve(Problems.from_matrices(list(matrices)), setting, dmax, **kw).cost.tolist()


def test_gie_pairs_one_to_one_and_sends_the_rest_to_the_defaults():
    # Kosmopoulos Fig. 11(a): one true class, two predicted siblings at distance 2: 2 + dmax.
    assert costs("gie", [[2], [2]]) == [7.0]
    # Fig. 11(b), the transpose.
    assert costs("gie", [[2, 2]]) == [7.0]


def test_gie_prefers_two_defaults_to_a_pair_dearer_than_2_dmax():
    assert costs("gie", [[11]], [[10]], [[9]]) == [10.0, 10.0, 9.0]


def test_empty_sets_pair_every_class_with_the_default():
    empty_pred, empty_true, both = np.zeros((0, 3)), np.zeros((2, 0)), np.zeros((0, 0))
    assert costs("gie", empty_pred, empty_true, both) == [15.0, 10.0, 0.0]
    assert costs("mgia", empty_pred, empty_true, both) == [15.0, 10.0, 0.0]


def test_missing_candidate_pairs_are_never_chosen():
    # Beyond the maximum distance: the pair is not a candidate, both classes go to the defaults.
    assert costs("gie", [[NO]]) == [10.0]
    assert costs("gie", [[NO, 1], [1, NO]]) == [2.0]


def test_gie_reuse_lets_a_shared_class_partner_one_more_class():
    # Kosmopoulos Fig. 12(a): T = {TP}, P = {TP, P1}, d(P1, TP) = 2. Strict: P1 has no partner left (5);
    # reuse: TP is paired with itself at 0 and is still P1's partner (2, the printed Table 2 value).
    problems = Problems.from_matrices([[[0], [2]]])
    shared = Problems(**{**problems.__dict__, "arc_shared": problems.arc_cost == 0})
    assert solve(shared, "gie", 5.0).cost.tolist() == [5.0]
    assert solve(shared, "gie", 5.0, shared="reuse").cost.tolist() == [2.0]
    with pytest.raises(ValueError, match="arc_shared"):
        solve(problems, "gie", 5.0, shared="reuse")


def test_mgia_flow_is_a_minimum_edge_cover():
    # Two predicted classes may share their true partner: 2 + 2 (GIE: 2 + 5).
    assert costs("mgia", [[2], [2]]) == [4.0]
    # The cover uses the pair (p2, t1) once for both classes: 1 + 1 + 1, not 1 + 3 + ...
    assert costs("mgia", [[1, 9], [9, 1], [9, 1]]) == [3.0]
    # A far class goes to the default when that is cheaper.
    assert costs("mgia", [[1], [8]]) == [6.0]


def test_tree_induced_error_is_the_best_one_to_one_assignment_without_defaults():
    assert costs("tree_induced", [[3]]) == [3.0]
    assert costs("tree_induced", [[1, 4], [2, 1]]) == [2.0]
    assert costs("tree_induced", [[30]]) == [30.0]  # no default class to escape to
    with pytest.raises(ValueError, match="no pairing"):
        costs("tree_induced", [[1], [2]])


def test_all_pairs_uses_every_pair():
    assert costs("all_pairs", [[1, 4], [2, 1]], [[3]], np.zeros((0, 2))) == [8.0, 3.0, 0.0]


def test_matching_maximises_the_weight_with_negative_costs():
    assert costs("matching", [[-2, -2], [-2, NO]]) == [-4.0]
    assert costs("matching", [[-1, -3], [-3, NO]]) == [-6.0]


def test_fractional_costs_are_exact_to_a_millionth():
    assert costs("gie", [[2], [2]], dmax=2.5) == [4.5]
    assert costs("gie", [[0.1], [0.2]], dmax=0.25) == pytest.approx([0.35])


def test_bounds_are_validated():
    with pytest.raises(ValueError, match="exceeds"):
        costs(Bounds(2, 1, 1, 1, True), [[1]])
    with pytest.raises(ValueError, match="non-negative"):
        costs(Bounds(-1, 1, 1, 1, True), [[1]])


def test_solution_reports_the_chosen_pairs_and_defaults():
    solution = solve(Problems.from_matrices([[[2, 12], [2, 12]]]), "gie", 5.0)
    # arcs in row-major order: (p0,t0)=2, (p0,t1)=12, (p1,t0)=2, (p1,t1)=12: one 2-pair and two defaults
    # (2 + 5 + 5 = 12) beat two pairs (2 + 12 = 14).
    assert solution.cost.tolist() == [12.0]
    assert solution.arc_flow.tolist() in ([1, 0, 0, 0], [0, 0, 1, 0])
    assert solution.pred_default.sum() == 1 and solution.true_default.tolist() == [0, 1]


def _gie_by_assignment(matrix: np.ndarray, dmax: float) -> float:
    """GIE as a square assignment problem: rows = predicted classes + N dummies, columns = true classes + M
    dummies; a class assigned to a dummy is paired with its default class, dummy-dummy costs 0."""
    m, n = matrix.shape
    big = np.zeros((m + n, n + m))
    big[:m, :n] = np.where(np.isfinite(matrix), matrix, 1e9)
    big[:m, n:] = dmax
    big[m:, :n] = dmax
    rows, cols = linear_sum_assignment(big)
    return float(big[rows, cols].sum())


def _mgia_by_enumeration(matrix: np.ndarray, dmax: float) -> float:
    """Minimum over every set of pairs (and default pairings) in which every class has a partner."""
    m, n = matrix.shape
    edges = [(i, j) for i in range(m) for j in range(n) if np.isfinite(matrix[i, j])]
    best = np.inf
    for k in range(len(edges) + 1):
        for chosen in itertools.combinations(edges, k):
            preds = {i for i, _ in chosen}
            trues = {j for _, j in chosen}
            cost = sum(matrix[i, j] for i, j in chosen) + dmax * ((m - len(preds)) + (n - len(trues)))
            best = min(best, cost)
    return best


def test_batched_solve_equals_independent_references():
    rng = np.random.default_rng(7)
    matrices = []
    for _ in range(60):
        m, n = rng.integers(0, 4, size=2)
        matrix = rng.integers(0, 12, size=(m, n)).astype(float)
        matrix[rng.random((m, n)) < 0.2] = np.nan
        matrices.append(matrix)
    problems = Problems.from_matrices(matrices)
    gie = solve(problems, "gie", 5.0).cost
    mgia = solve(problems, "mgia", 5.0).cost
    assert gie.tolist() == [_gie_by_assignment(m, 5.0) for m in matrices]
    assert mgia.tolist() == [_mgia_by_enumeration(m, 5.0) for m in matrices]
    assert all(name in SETTINGS for name in ("gie", "mgia", "tree_induced", "all_pairs", "matching"))
