"""GIE of the problems with at most one predicted class is computed in closed form
(``pair_based._single_prediction_gie``), the other problems by the flow: the values equal those of the flow
on all problems (``hiersql.measures.pair_based.pairing.solve``), exactly, and a hand-computed case."""

from __future__ import annotations

import numpy as np
import pytest

from hiersql.measures import Options, pair_based
from hiersql.measures.pair_based.pairing import Problems, solve


def data_of(problems: Problems) -> pair_based._Data:
    """The problems as the pairing step's input (only ``problems`` is read by GIE)."""
    k = problems.n_problems
    zeros = np.zeros(k, dtype=np.int64)
    return pair_based._Data(np.zeros(k, object), np.zeros(k, object), zeros, zeros, zeros, np.zeros(k),
                            np.full(k, np.nan), problems, problems)


def test_single_prediction_by_hand():
    # one predicted class, two true classes at distances 1 and 3: pair the nearest (1), the other true class
    # goes to the default (dmax = 5): 6. At distances 11 and 12 (both ≥ 2·dmax): all to the defaults: 15.
    # No predicted class and two true ones: 10. One predicted class and no true one: 5.
    problems = Problems.from_matrices([[[1, 3]], [[11, 12]], np.zeros((0, 2)), np.zeros((1, 0))])
    values = pair_based.graph_induced_errors(data_of(problems), Options(dmax=5.0))
    assert values.tolist() == [6.0, 15.0, 10.0, 5.0]


@pytest.mark.parametrize("dmax", [1.0, 2.0, 3.0, 5.0])
def test_equals_the_flow_on_every_problem(dmax):
    rng = np.random.default_rng(7)
    matrices = []
    for _ in range(400):
        m, n = rng.integers(0, 4), rng.integers(0, 5)
        costs = rng.integers(0, 9, size=(m, n)).astype(float)
        costs[rng.random((m, n)) < 0.2] = np.nan  # beyond the maximum distance: no candidate pair
        matrices.append(costs)
    problems = Problems.from_matrices(matrices)
    assert (problems.sizes()[0] <= 1).sum() > 100 and (problems.sizes()[0] > 1).sum() > 100
    values = pair_based.graph_induced_errors(data_of(problems), Options(dmax=dmax))
    assert np.array_equal(values, solve(problems, "gie", dmax).cost)


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
