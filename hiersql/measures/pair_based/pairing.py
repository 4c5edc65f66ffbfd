"""Pairing predicted and true classes by minimum-cost flow: the generic network of Kosmopoulos et al. (2015),
§2.3.1, Fig. 3, solved with OR-Tools ``SimpleMinCostFlow``.

Problem 1 of the paper: for one instance with predicted classes ŷ_1..ŷ_M and true classes y_1..y_N, choose
pairs x_ij ∈ {0, 1} minimising ``Σ κ_ij x_ij`` subject to ``αp ≤ Σ_j x_ij ≤ βp`` for every predicted class and
``αt ≤ Σ_i x_ij ≤ βt`` for every true class, where j (i) may also be the default true (predicted) class, at
cost ``dmax``; the two default classes are never paired with each other. As a flow network (Fig. 3): source →
predicted class [αp; βp], predicted → true class [0; 1] at cost κ_ij, true class → sink [αt; βt], predicted
class → default true class [0; βp] and default predicted class → true class [0; βt] at cost ``dmax``, source →
default predicted [0; βt·N], default true → sink [0; βp·M], sink → source. Lower bounds become node supplies.

Many problems (instances, systems) are solved in one call: each has its own source, sink and default classes,
so the network is a disjoint union of components and its minimum cost is the sum of theirs.

Settings (:data:`SETTINGS`): ``gie`` (Fig. 5, α = β = 1), ``mgia`` (Fig. 6, α = 1, βp = N, βt = M),
``tree_induced`` (Fig. 4, Dekel et al. 2004: α = β = 1, no default classes), ``all_pairs`` (Sun & Lim 2001:
αp = βp = N, αt = βt = M, no default classes) and ``matching`` (α = 0, β = 1, no default classes).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from itertools import combinations, permutations
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Sequence

ALL = "all"  # the number of classes of the other set of the problem (at least 1 with default classes)
SMALL = 4  # min_cost enumerates the pairings of a problem with at most this many classes on each side (209 at 4 × 4)


@dataclass(frozen=True)
class Bounds:
    """Capacity intervals ``[alpha; beta]`` of the predicted and the true classes (an int, or :data:`ALL`),
    and whether the default classes exist."""

    alpha_pred: int | str
    beta_pred: int | str
    alpha_true: int | str
    beta_true: int | str
    defaults: bool


SETTINGS: dict[str, Bounds] = {
    "gie": Bounds(1, 1, 1, 1, True),
    "mgia": Bounds(1, ALL, 1, ALL, True),
    "tree_induced": Bounds(1, 1, 1, 1, False),
    "all_pairs": Bounds(ALL, ALL, ALL, ALL, False),
    "matching": Bounds(0, 1, 0, 1, False),
}


@dataclass(frozen=True)
class Problems:
    """Independent pairing problems ``0 .. n_problems - 1``.

    ``pred_problem[i]`` / ``true_problem[j]``: the problem of predicted class i / true class j. Candidate pair
    k joins predicted class ``arc_pred[k]`` and true class ``arc_true[k]`` (of the same problem) at cost
    ``arc_cost[k]``; a pair that is not listed cannot be chosen (e.g. beyond the maximum distance).
    ``arc_shared[k]`` marks the pair of a class with itself (it is in both sets); optional.
    """

    n_problems: int
    pred_problem: np.ndarray
    true_problem: np.ndarray
    arc_pred: np.ndarray
    arc_true: np.ndarray
    arc_cost: np.ndarray
    arc_shared: np.ndarray | None = None

    @classmethod
    def from_matrices(cls, costs: Sequence[np.ndarray | list[list[float]]]) -> Problems:
        """One problem per matrix of costs, rows = predicted classes, columns = true classes; ``nan`` or
        ``inf`` = no candidate pair. A (0 × N) or (M × 0) matrix is a problem with an empty set."""
        pred_problem, true_problem, arc_pred, arc_true, arc_cost = [], [], [], [], []
        n_pred = n_true = 0
        for k, matrix in enumerate(costs):
            m = np.asarray(matrix, dtype=float)
            rows, cols = np.nonzero(np.isfinite(m))
            arc_pred.append(rows + n_pred)
            arc_true.append(cols + n_true)
            arc_cost.append(m[rows, cols])
            pred_problem.append(np.full(m.shape[0], k))
            true_problem.append(np.full(m.shape[1], k))
            n_pred, n_true = n_pred + m.shape[0], n_true + m.shape[1]
        cat = _concat_int
        return cls(len(costs), cat(pred_problem), cat(true_problem), cat(arc_pred), cat(arc_true),
                   np.concatenate(arc_cost) if arc_cost else np.zeros(0))

    def restrict(self, keep: np.ndarray) -> Problems:
        """The same problems with the classes and pairs of those not marked in ``keep`` removed (they become
        empty)."""
        keep_pred, keep_true = keep[self.pred_problem], keep[self.true_problem]
        keep_arcs = keep[self.pred_problem[self.arc_pred]]
        new_pred, new_true = np.cumsum(keep_pred) - 1, np.cumsum(keep_true) - 1
        return Problems(self.n_problems, self.pred_problem[keep_pred], self.true_problem[keep_true],
                        new_pred[self.arc_pred[keep_arcs]], new_true[self.arc_true[keep_arcs]],
                        self.arc_cost[keep_arcs])

    def sizes(self) -> tuple[np.ndarray, np.ndarray]:
        """(M, N) per problem: the numbers of predicted and of true classes."""
        return (np.bincount(self.pred_problem, minlength=self.n_problems),
                np.bincount(self.true_problem, minlength=self.n_problems))


@dataclass(frozen=True)
class Solution:
    """A minimum-cost pairing: ``cost`` per problem, ``arc_flow`` (0/1 per candidate pair), and how many times
    each predicted (true) class is paired with the default true (predicted) class."""

    cost: np.ndarray
    arc_flow: np.ndarray
    pred_default: np.ndarray
    true_default: np.ndarray


def solve(problems: Problems, setting: str | Bounds, dmax: float = 5.0, shared: str = "strict") -> Solution:
    """Solve every problem of ``problems`` with one OR-Tools ``SimpleMinCostFlow``.

    Parameters
    ----------
    problems:
        The problems and their candidate pairs.
    setting:
        A name of :data:`SETTINGS` or a :class:`Bounds`.
    dmax:
        Cost of pairing a class with the default class of the other set.
    shared:
        ``"strict"``: the pair of a class that is in both sets is a pair like any other. ``"reuse"``: it is
        paired with itself at cost 0 outside the network and keeps its bounds ``[0; β]``, so it may still be
        the partner of misclassified classes (for GIE: of one on each side; SPEC §3). Needs ``arc_shared``.

    Raises
    ------
    ValueError
        When some problem has no pairing within the bounds (e.g. ``tree_induced`` with M ≠ N).
    """
    from ortools.graph.python import min_cost_flow

    bounds = SETTINGS[setting] if isinstance(setting, str) else setting
    if shared not in ("strict", "reuse"):
        raise ValueError(f"shared must be 'strict' or 'reuse', got {shared!r}")
    keep = np.ones(len(problems.arc_cost), dtype=bool)
    a_pred, b_pred, a_true, b_true = _class_bounds(problems, bounds)
    if shared == "reuse":
        if problems.arc_shared is None:
            raise ValueError("shared='reuse' needs Problems.arc_shared")
        keep = ~problems.arc_shared
        a_pred[problems.arc_pred[problems.arc_shared]] = 0
        a_true[problems.arc_true[problems.arc_shared]] = 0
    net = _Network(problems, dmax)
    net.add_bounded(net.source[problems.pred_problem], net.pred_node, a_pred, b_pred)
    pair_arcs = net.add(net.pred_node[problems.arc_pred[keep]], net.true_node[problems.arc_true[keep]],
                        np.ones(int(keep.sum()), dtype=np.int64), problems.arc_cost[keep])
    net.add_bounded(net.true_node, net.sink[problems.true_problem], a_true, b_true)
    k = problems.n_problems
    sum_b_pred = np.bincount(problems.pred_problem, weights=b_pred, minlength=k).astype(np.int64)
    sum_b_true = np.bincount(problems.true_problem, weights=b_true, minlength=k).astype(np.int64)
    if bounds.defaults:
        pred_default_arcs = net.add(net.pred_node, net.default_true[problems.pred_problem], b_pred, dmax)
        true_default_arcs = net.add(net.default_pred[problems.true_problem], net.true_node, b_true, dmax)
        net.add(net.source, net.default_pred, sum_b_true, 0.0)
        net.add(net.default_true, net.sink, sum_b_pred, 0.0)
    net.add(net.sink, net.source, sum_b_pred + sum_b_true, 0.0)

    flows = net.solve(min_cost_flow)
    arc_flow = np.zeros(len(problems.arc_cost), dtype=np.int64)
    arc_flow[keep] = flows[pair_arcs]
    pred_default = flows[pred_default_arcs] if bounds.defaults else np.zeros(len(problems.pred_problem), int)
    true_default = flows[true_default_arcs] if bounds.defaults else np.zeros(len(problems.true_problem), int)
    problem_of_arc = problems.pred_problem[problems.arc_pred]
    cost = (np.bincount(problem_of_arc, weights=arc_flow * problems.arc_cost, minlength=k)
            + dmax * np.bincount(problems.pred_problem, weights=pred_default, minlength=k)
            + dmax * np.bincount(problems.true_problem, weights=true_default, minlength=k))
    return Solution(cost, arc_flow, pred_default, true_default)


def min_cost(problems: Problems, setting: str | Bounds, dmax: float = 5.0, shared: str = "strict") -> np.ndarray:
    """The minimum cost of every problem: :func:`solve`'s ``cost``, the same values.

    In a one-to-one setting (β = 1 on both sides: ``gie``, ``tree_induced``, ``matching``) with integer costs
    and ``shared="strict"``, a problem with at most :data:`SMALL` classes on each side is solved by trying each
    of its pairings (:func:`_enumerated`): a partial one-to-one map of its predicted classes to candidate
    true classes, each class left unpaired costing dmax (α = 1, default classes), nothing (α = 0) or making the
    pairing infeasible (α = 1, no default class). Its cost is the same sum of integers as the flow's optimum;
    the other problems are solved by :func:`solve`. Raises :class:`ValueError` as :func:`solve` does."""
    bounds = SETTINGS[setting] if isinstance(setting, str) else setting
    unpaired = [_unpaired_cost(alpha, bounds.defaults, dmax) for alpha in (bounds.alpha_pred, bounds.alpha_true)]
    costs = np.append(problems.arc_cost, dmax)
    if (shared != "strict" or (bounds.beta_pred, bounds.beta_true) != (1, 1) or None in unpaired
            or not np.all(costs == np.round(costs))):
        return solve(problems, bounds, dmax, shared).cost
    n_pred, n_true = problems.sizes()
    small = (n_pred <= SMALL) & (n_true <= SMALL)
    cost = np.zeros(problems.n_problems)
    if not small.all():
        cost[~small] = solve(problems.restrict(~small), bounds, dmax).cost[~small]
    cost[small] = _enumerated(problems, small, n_pred, n_true, *unpaired)
    if np.isinf(cost).any():
        raise ValueError("no pairing satisfies the bounds of some problem (INFEASIBLE)")
    return cost


def _unpaired_cost(alpha: int | str, defaults: bool, dmax: float) -> float | None:
    """The cost of a class left unpaired in a one-to-one pairing (``None``: not one :func:`min_cost`
    enumerates)."""
    if alpha == 1:
        return dmax if defaults else np.inf
    return 0.0 if alpha == 0 and not defaults else None


def _enumerated(problems: Problems, small: np.ndarray, n_pred: np.ndarray, n_true: np.ndarray,
                pred_unpaired: float, true_unpaired: float) -> np.ndarray:
    """The least cost over the pairings (:func:`_pairings`) of each problem marked ``small``, the problems of
    one shape (M, N) at a time as a dense (problems × M × N) array of pair costs (``inf``: no candidate)."""
    local_pred, local_true = _local(problems.pred_problem), _local(problems.true_problem)
    arc_problem = problems.pred_problem[problems.arc_pred]
    problems_small = np.nonzero(small)[0]
    shapes = n_pred[problems_small] * (SMALL + 1) + n_true[problems_small]
    best = np.empty(len(problems_small))
    position = np.full(problems.n_problems, -1)
    for shape in np.unique(shapes):
        m, n = divmod(int(shape), SMALL + 1)
        among = shapes == shape
        group = problems_small[among]
        position[group] = np.arange(len(group))
        matrix = np.full((len(group), m, n), np.inf)
        arcs = np.nonzero(position[arc_problem] >= 0)[0]
        np.minimum.at(matrix, (position[arc_problem[arcs]], local_pred[problems.arc_pred[arcs]],
                               local_true[problems.arc_true[arcs]]), problems.arc_cost[arcs])
        position[group] = -1
        least = np.full(len(group), np.inf)
        for rows, cols in _pairings(m, n):
            left = (pred_unpaired * (m - len(rows)) if m > len(rows) else 0.0) + (
                true_unpaired * (n - len(cols)) if n > len(cols) else 0.0)
            np.minimum(least, matrix[:, rows, cols].sum(axis=1) + left, out=least)
        best[among] = least
    return best


@cache
def _pairings(m: int, n: int) -> list[tuple[list[int], list[int]]]:
    """Every one-to-one pairing of M predicted and N true classes: the rows and the columns of its pairs."""
    return [(list(rows), list(cols)) for k in range(min(m, n) + 1)
            for rows in combinations(range(m), k) for cols in permutations(range(n), k)]


def _local(problem_of: np.ndarray) -> np.ndarray:
    """Each class's position among the classes of its problem, from 0."""
    order = np.argsort(problem_of, kind="stable")
    counts = np.bincount(problem_of)
    starts = np.cumsum(counts) - counts
    local = np.empty(len(problem_of), dtype=np.int64)
    local[order] = np.arange(len(problem_of)) - starts[problem_of[order]]
    return local


def _class_bounds(problems: Problems, bounds: Bounds) -> tuple[np.ndarray, ...]:
    """Per-class (alpha_pred, beta_pred, alpha_true, beta_true) with :data:`ALL` resolved."""
    n_pred_of, n_true_of = problems.sizes()
    others_of_pred = n_true_of[problems.pred_problem]
    others_of_true = n_pred_of[problems.true_problem]

    def resolve(bound: int | str, others: np.ndarray) -> np.ndarray:
        if bound == ALL:  # with an empty other set, the default class is still a partner
            return np.maximum(others, 1 if bounds.defaults else 0).astype(np.int64)
        if not isinstance(bound, int) or bound < 0:
            raise ValueError(f"a bound is a non-negative int or {ALL!r}, got {bound!r}")
        return np.full(len(others), bound, dtype=np.int64)

    out = (resolve(bounds.alpha_pred, others_of_pred), resolve(bounds.beta_pred, others_of_pred),
           resolve(bounds.alpha_true, others_of_true), resolve(bounds.beta_true, others_of_true))
    if np.any(out[0] > out[1]) or np.any(out[2] > out[3]):
        raise ValueError("a lower bound alpha exceeds its upper bound beta")
    return out


class _Network:
    """Node numbering and arc arrays of the batched network: problem k owns nodes 4k (source), 4k+1 (sink),
    4k+2 (default predicted class), 4k+3 (default true class); then come the predicted and the true classes.
    Costs are scaled to integers (exactly when every cost is an integer)."""

    def __init__(self, problems: Problems, dmax: float) -> None:
        k = problems.n_problems
        base = 4 * np.arange(k, dtype=np.int64)
        self.source, self.sink, self.default_pred, self.default_true = base, base + 1, base + 2, base + 3
        self.pred_node = 4 * k + np.arange(len(problems.pred_problem), dtype=np.int64)
        self.true_node = 4 * k + len(problems.pred_problem) + np.arange(len(problems.true_problem),
                                                                          dtype=np.int64)
        self.n_nodes = 4 * k + len(problems.pred_problem) + len(problems.true_problem)
        costs = np.append(problems.arc_cost, dmax)
        if not np.all(np.isfinite(costs)):
            raise ValueError("pair costs and dmax must be finite")
        self.scale = 1 if np.all(costs == np.round(costs)) else 1_000_000
        self.supply = np.zeros(self.n_nodes, dtype=np.int64)
        self.tails: list[np.ndarray] = []
        self.heads: list[np.ndarray] = []
        self.caps: list[np.ndarray] = []
        self.costs: list[np.ndarray] = []
        self.n_arcs = 0

    def add(self, tails: np.ndarray, heads: np.ndarray, caps: np.ndarray, costs: np.ndarray | float
            ) -> np.ndarray:
        """Add arcs; returns their indices."""
        n = len(tails)
        self.tails.append(np.asarray(tails, dtype=np.int64))
        self.heads.append(np.asarray(heads, dtype=np.int64))
        self.caps.append(np.asarray(caps, dtype=np.int64))
        self.costs.append(np.broadcast_to(np.round(np.asarray(costs, dtype=float) * self.scale), (n,))
                          .astype(np.int64))
        self.n_arcs += n
        return np.arange(self.n_arcs - n, self.n_arcs)

    def add_bounded(self, tails: np.ndarray, heads: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> None:
        """Cost-0 arcs with capacity interval [lower; upper]: the lower bound moves into the node supplies
        (arcs left with capacity 0 are not added)."""
        free = upper > lower
        self.add(tails[free], heads[free], (upper - lower)[free], 0.0)
        np.subtract.at(self.supply, tails, lower)
        np.add.at(self.supply, heads, lower)

    def solve(self, min_cost_flow) -> np.ndarray:
        """Solve and return the flow on every arc."""
        smcf = min_cost_flow.SimpleMinCostFlow()
        if self.n_arcs:
            smcf.add_arcs_with_capacity_and_unit_cost(
                np.concatenate(self.tails), np.concatenate(self.heads), np.concatenate(self.caps),
                np.concatenate(self.costs))
        nodes = np.nonzero(self.supply)[0]
        if len(nodes):
            smcf.set_nodes_supplies(nodes, self.supply[nodes])
        status = smcf.solve()
        if status != smcf.OPTIMAL:
            raise ValueError(f"no pairing satisfies the bounds of some problem ({status.name})")
        return smcf.flows(np.arange(self.n_arcs)) if self.n_arcs else np.zeros(0, dtype=np.int64)


def _concat_int(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)
