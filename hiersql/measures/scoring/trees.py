"""Scoring trees (Lanus et al.): edge weights on a tree taxonomy, their validation and the weight strategies.

A scoring tree is a tree taxonomy whose edges carry non-negative weights, the weight of an edge sitting on its
child. ``W(n)`` is the weight sum on the path root → ``n`` (``W(root) = 0``) and every root-to-leaf sum is 1
(SPEC §8). The paper's three strategies on its Fig. 1 tree (root A > B, C; B > D, E; C > F, G; F > H, I;
G > J, K, L), per level from the top:

================  ==============  ==================
strategy          under B         under C
================  ==============  ==================
decreasing (D)    .9 / .1         .9 / .09 / .01
non-increasing    .5 / .5         .5 / .25 / .25
increasing (I)    .1 / .9         .1 / .2 / .7
================  ==============  ==================

The builders below produce such weights for any tree. In each, the edge into a leaf takes what is left
(``1 − W(parent)``), so every root-to-leaf sum is 1 by construction:

- :func:`decreasing`: each level takes ``share`` of what is left (``share=0.9`` gives D);
- :func:`non_increasing`: what is left at a node is split equally over the edges of the shortest way down to
  a leaf, so a level's edges are equal and weights never grow along a path (gives N);
- :func:`increasing`: level ``k`` takes ``first · factor^(k−1)`` (``0.1, 0.2, ...``; gives I);
- :func:`by_level`: user-given weights per level; :func:`with_weights`: user-given weight per edge.

Reference: E. Lanus, D. Wolf et al., "Hierarchical Scoring for Machine Learning Classifier Error Impact
Evaluation", §III and §IV-B.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ...errors import InputError
from ...inputs.taxonomy import Edge, Taxonomy

TOLERANCE = 1e-9
"""Largest accepted difference between a root-to-leaf weight sum and 1."""

# rule(node, remaining weight 1 − W(parent), depth of node) -> weight of the edge into a non-leaf node
Rule = Callable[[str, float, int], float]


# ---------------------------------------------------------------------- validation
def check_tree(taxonomy: Taxonomy) -> None:
    """Raise :class:`InputError` unless ``taxonomy`` is a tree (every node has at most one parent)."""
    if not taxonomy.is_tree:
        shared = [n for n in taxonomy.nodes if len(taxonomy.parents(n)) > 1]
        raise InputError(
            "scoring trees must be trees (the paper's measures are defined on trees); nodes with several"
            f" parents: {', '.join(shared[:5])}{' ...' if len(shared) > 5 else ''}",
            taxonomy.source,
        )


def weighted_depths(taxonomy: Taxonomy) -> dict[str, float]:
    """``W(n)``: the sum of the edge weights on the path from the root to ``n`` (``W(root) = 0``).

    Raises :class:`InputError` when the taxonomy is not a tree or an edge has no weight.
    """
    check_tree(taxonomy)
    weights = {e.child: e.weight for e in taxonomy.all_edges()}
    missing = [c for c, w in weights.items() if w is None]
    if missing:
        hint = (" (edges from the virtual root added above several top nodes have no weight: give the tree a"
                " single root)" if taxonomy.virtual_root else "")
        raise InputError(
            f"{len(missing)} edge(s) have no weight{hint}; first: "
            + ", ".join(f"{taxonomy.parents(c)[0]} -> {c}" for c in missing[:5]),
            taxonomy.source,
        )
    out = {taxonomy.root: 0.0}
    for node in _top_down(taxonomy):
        out[node] = out[taxonomy.parents(node)[0]] + float(weights[node])
    return out


def validate(taxonomy: Taxonomy, tolerance: float = TOLERANCE) -> dict[str, float]:
    """Check that ``taxonomy`` is a scoring tree and return its weighted depths ``W(n)``.

    A scoring tree is a tree whose edges all have a weight, the weights are non-negative, every root-to-leaf
    sum is 1 (within ``tolerance``) and every node but the root has ``W(n) > 0`` (the standardised measures
    divide by ``W(t)`` and ``W(p)``). Each failure is an :class:`InputError`; a bad sum names the leaves and
    their sums.
    """
    depths = weighted_depths(taxonomy)
    negative = [e for e in taxonomy.all_edges() if e.weight is not None and e.weight < 0]
    if negative:
        e = negative[0]
        raise InputError(f"edge weights must be non-negative ({len(negative)} negative)", taxonomy.source,
                         e.line, f"{e.parent} -> {e.child}: {e.weight}")
    bad = [(leaf, depths[leaf]) for leaf in taxonomy.leaves if abs(depths[leaf] - 1.0) > tolerance]
    if bad:
        raise InputError(
            f"every root-to-leaf weight sum must be 1; {len(bad)} leaf/leaves fail: "
            + ", ".join(f"{leaf} (sum {total:.6g})" for leaf, total in bad[:10])
            + (" ..." if len(bad) > 10 else ""),
            taxonomy.source,
        )
    zero = [n for n in taxonomy.nodes if n != taxonomy.root and depths[n] <= 0]
    if zero:
        raise InputError(
            "the path from the root to these nodes has weight 0 (LPPTPS/LPPPPS divide by it):"
            f" {', '.join(zero[:10])}", taxonomy.source,
        )
    return depths


# ---------------------------------------------------------------------- builders
def with_weights(taxonomy: Taxonomy, weights: Mapping[str, float]) -> Taxonomy:
    """A copy of the tree ``taxonomy`` whose edge into each node ``n`` has weight ``weights[n]``.

    A virtual root becomes an explicit node, so edges from it can carry weights. The result is validated
    (:func:`validate`).
    """
    check_tree(taxonomy)
    missing = [e.child for e in taxonomy.all_edges() if e.child not in weights]
    if missing:
        raise InputError(f"no weight given for the edge into {', '.join(missing[:10])}", taxonomy.source)
    edges = [Edge(e.parent, e.child, float(weights[e.child]), e.line) for e in taxonomy.all_edges()]
    tree = Taxonomy(edges, taxonomy.source)
    validate(tree)
    return tree


def decreasing(taxonomy: Taxonomy, share: float = 0.9) -> Taxonomy:
    """Decreasing strategy: the edge into a non-leaf node takes ``share`` of what is left,
    ``w = share · (1 − W(parent))``; the edge into a leaf takes all that is left. ``share=0.9`` gives the
    paper's D weights (.9/.1 and .9/.09/.01 on Fig. 1)."""
    if not 0 < share <= 1:
        raise ValueError("share must be in (0, 1]")
    return _build(taxonomy, lambda _node, left, _depth: share * left)


def non_increasing(taxonomy: Taxonomy) -> Taxonomy:
    """Non-increasing (equal) strategy: at a node ``p`` with ``1 − W(p)`` left and ``s(p)`` edges on the
    shortest way down to a leaf, each child edge takes ``(1 − W(p)) / s(p)``. The edges of a level are equal
    and weights never grow along a path; on Fig. 1 this gives the paper's N weights (.5/.5 and .5/.25/.25)."""
    shortest = _shortest_down(taxonomy)
    return _build(taxonomy, lambda node, left, _depth: left / shortest[taxonomy.parents(node)[0]])


def increasing(taxonomy: Taxonomy, first: float = 0.1, factor: float = 2.0) -> Taxonomy:
    """Increasing strategy: the edge into a non-leaf node at depth ``k`` takes ``first · factor^(k−1)``, the
    edge into a leaf takes what is left. The defaults give the paper's I weights (.1/.9 and .1/.2/.7 on
    Fig. 1); a deep tree needs a smaller ``first`` or ``factor`` (an error says so)."""
    if first <= 0 or factor <= 0:
        raise ValueError("first and factor must be positive")
    return _build(taxonomy, lambda _node, _left, depth: first * factor ** (depth - 1))


def by_level(taxonomy: Taxonomy, level_weights: Sequence[float]) -> Taxonomy:
    """User-given weights per level: the edge into a non-leaf node at depth ``k`` gets
    ``level_weights[k − 1]``, the edge into a leaf takes what is left (``[.9, .09]`` is D, ``[.5, .25]``
    is N, ``[.1, .2]`` is I on Fig. 1)."""
    levels = [float(w) for w in level_weights]

    def rule(node: str, _left: float, depth: int) -> float:
        if depth > len(levels):
            raise InputError(f"no weight given for level {depth} (inner node {node!r}); got {len(levels)}"
                             " level weight(s)", taxonomy.source)
        return levels[depth - 1]

    return _build(taxonomy, rule)


STRATEGIES: dict[str, Callable[[Taxonomy], Taxonomy]] = {
    "decreasing": decreasing,
    "non-increasing": non_increasing,
    "increasing": increasing,
}
"""The paper's three strategies with their default parameters, by name."""


def strategy(taxonomy: Taxonomy, name: str) -> Taxonomy:
    """The scoring tree of strategy ``name``: ``decreasing``, ``non-increasing``, ``increasing``, ``given``
    (the weights already on the taxonomy, validated) or ``levels:W1/W2/...`` (:func:`by_level`)."""
    if name == "given":
        validate(taxonomy)
        return taxonomy
    if name.startswith("levels:"):
        try:
            levels = [float(w) for w in name.removeprefix("levels:").split("/")]
        except ValueError:
            raise InputError("level weights must be numbers separated by '/'", "--strategy",
                             value=name) from None
        return by_level(taxonomy, levels)
    if name not in STRATEGIES:
        raise InputError(f"unknown weight strategy (one of {', '.join(STRATEGIES)}, given, levels:W1/W2/...)",
                         "--strategy", value=name)
    return STRATEGIES[name](taxonomy)


# ---------------------------------------------------------------------- helpers
def _top_down(taxonomy: Taxonomy) -> list[str]:
    """Every node but the root, parents before children (breadth-first)."""
    order: list[str] = []
    frontier = [taxonomy.root]
    while frontier:
        frontier = [c for n in frontier for c in taxonomy.children(n)]
        order.extend(frontier)
    return order


def _shortest_down(taxonomy: Taxonomy) -> dict[str, int]:
    """Number of edges on the shortest path from each node down to a leaf."""
    out: dict[str, int] = {}
    for node in reversed([taxonomy.root, *_top_down(taxonomy)]):
        kids = taxonomy.children(node)
        out[node] = 1 + min(out[k] for k in kids) if kids else 0
    return out


def _build(taxonomy: Taxonomy, rule: Rule) -> Taxonomy:
    """Weights from ``rule`` for edges into inner nodes; edges into leaves take ``1 − W(parent)``."""
    check_tree(taxonomy)
    depths = taxonomy.depths()
    total = {taxonomy.root: 0.0}
    weights: dict[str, float] = {}
    for node in _top_down(taxonomy):
        left = 1.0 - total[taxonomy.parents(node)[0]]
        weight = rule(node, left, depths[node]) if taxonomy.children(node) else left
        if weight > left + TOLERANCE:
            raise InputError(
                f"the weight strategy gives the edge into {node!r} (depth {depths[node]}) {weight:.6g} but"
                f" only {left:.6g} is left of the root-to-leaf sum of 1; use smaller weights", taxonomy.source,
            )
        weights[node] = weight
        total[node] = total[taxonomy.parents(node)[0]] + weight
    return with_weights(taxonomy, weights)
