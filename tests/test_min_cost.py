"""``pairing.min_cost`` solves the small problems of a one-to-one setting by trying each pairing and the others
by the flow: its values equal those of the flow on all problems (``pairing.solve``), exactly, for every setting,
on problems on both sides of ``pairing.SMALL``; and hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from hiersql.measures import Options, pair_based
from hiersql.measures.pair_based import pairing
from hiersql.measures.pair_based.pairing import SMALL, Problems, min_cost, solve


def data_of(problems: Problems) -> pair_based._Data:
    """The problems as the pairing step's input (only ``problems`` is read by GIE and the all-pairs error)."""
    k = problems.n_problems
    zeros = np.zeros(k, dtype=np.int64)
    return pair_based._Data(np.zeros(k, object), np.zeros(k, object), zeros, zeros, zeros, np.zeros(k),
                            np.full(k, np.nan), problems, problems)


def random_problems(seed: int, count: int, low: int = 0, square: bool = False) -> Problems:
    """``count`` problems of up to SMALL + 2 classes a side, integer costs in [low, 9), a fifth of the pairs no
    candidate (``nan``: beyond the maximum distance)."""
    rng = np.random.default_rng(seed)
    matrices = []
    for _ in range(count):
        m = rng.integers(0, SMALL + 3)
        n = m if square else rng.integers(0, SMALL + 3)
        costs = rng.integers(low, 9, size=(m, n)).astype(float)
        if not square:
            costs[rng.random((m, n)) < 0.2] = np.nan
        matrices.append(costs)
    return Problems.from_matrices(matrices)


def test_gie_by_hand():
    # one predicted class, two true classes at distances 1 and 3: pair the nearest (1), the other true class
    # goes to the default (dmax = 5): 6. At distances 11 and 12 (both ≥ 2·dmax): all to the defaults: 15.
    # No predicted class and two true ones: 10. One predicted class and no true one: 5. Two by two at
    # [[1, 4], [2, 9]]: 1 + 9 = 10 or 4 + 2 = 6: 6; with the pair (2, 2) no candidate: 1 + 5 + 5 = 11 or 4 + 2.
    problems = Problems.from_matrices([[[1, 3]], [[11, 12]], np.zeros((0, 2)), np.zeros((1, 0)),
                                       [[1, 4], [2, 9]], [[1, 4], [2, np.nan]]])
    values = pair_based.graph_induced_errors(data_of(problems), Options(dmax=5.0))
    assert values.tolist() == [6.0, 15.0, 10.0, 5.0, 6.0, 6.0]


@pytest.mark.parametrize("dmax", [1.0, 2.0, 3.0, 5.0])
def test_gie_equals_the_flow_on_every_problem(dmax):
    problems = random_problems(7, 400)
    n_pred, n_true = problems.sizes()
    small = (n_pred <= SMALL) & (n_true <= SMALL)
    assert small.sum() > 100 and (~small).sum() > 50  # both paths taken
    assert np.array_equal(min_cost(problems, "gie", dmax), solve(problems, "gie", dmax).cost)


def test_matching_with_negative_costs_equals_the_flow():
    # MGIA's mutual pairs: the heaviest matching (costs are minus the distances); by hand -(3 + 3) = -6
    problems = random_problems(11, 300, low=-8)
    assert min_cost(Problems.from_matrices([[[-1, -3], [-3, np.nan]]]), "matching").tolist() == [-6.0]
    assert np.array_equal(min_cost(problems, "matching"), solve(problems, "matching").cost)


def test_tree_induced_equals_the_flow_and_refuses_unequal_sets():
    problems = random_problems(5, 200, square=True)
    assert np.array_equal(min_cost(problems, "tree_induced"), solve(problems, "tree_induced").cost)
    assert min_cost(Problems.from_matrices([[[1, 4], [2, 1]]]), "tree_induced").tolist() == [2.0]
    for matrix in ([[1], [2]], [[1, np.nan], [2, np.nan]]):  # M ≠ N; a true class with no candidate
        with pytest.raises(ValueError, match="no pairing"):
            min_cost(Problems.from_matrices([matrix]), "tree_induced")


def test_the_flow_solves_what_the_enumeration_does_not(monkeypatch):
    # fractional costs, shared="reuse" and a setting that is not one-to-one go to the flow
    calls = []
    monkeypatch.setattr(pairing, "solve", lambda *a, **k: calls.append(a[1]) or solve(*a, **k))
    problems = Problems.from_matrices([[[0.5, 2.0]]])
    assert min_cost(problems, "gie").tolist() == [5.5]  # 0.5 paired, the other true class at dmax
    assert min_cost(Problems.from_matrices([[[1.0, 3.0]]]), "mgia").tolist() == [4.0]  # βt = M: both pairs
    assert calls == [pairing.SETTINGS["gie"], pairing.SETTINGS["mgia"]]


def test_all_pairs_without_the_flow_equals_the_flow():
    # every pair a candidate: the sum of d over T × P, as the flow finds it; by hand 1 + 3 + 2 + 4 = 10
    rng = np.random.default_rng(3)
    matrices = [[[1, 3], [2, 4]], *(rng.integers(0, 9, size=rng.integers(0, 4, size=2)) * 0.5 for _ in range(300))]
    problems = Problems.from_matrices(matrices)
    values = pair_based.all_pairs_errors(data_of(problems), Options())
    assert values[0] == 10.0
    assert np.array_equal(values, solve(problems, "all_pairs", 5.0).cost)


def test_all_pairs_with_a_pair_missing_has_no_pairing():
    problems = Problems.from_matrices([[[1, np.nan]]])
    with pytest.raises(ValueError, match="no pairing"):
        pair_based.all_pairs_errors(data_of(problems), Options())
