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

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any
from weakref import WeakKeyDictionary

from ...errors import InputError
from ...inputs.taxonomy import Edge, Taxonomy

TOLERANCE = 1e-9
"""Largest accepted difference between a root-to-leaf weight sum and 1."""

# rule(node, remaining weight 1 − W(parent), depth of node) -> weight of the edge into a non-leaf node
Rule = Callable[[str, float, int], float]


# ---------------------------------------------------------------------- validation
def tree_fault(engine: Any) -> InputError | None:
    """Why ``engine``'s taxonomy is no tree (a node with several parents), or ``None``: the words of the query
    ``scoring_tree_fault`` of ``scoring.sql``, which the SQL door's ``scoring_tree_check`` fails with, naming
    the taxonomy's file."""
    found = _fault_rows(engine, "scoring_tree_fault")
    return InputError(found[0][0], _source(engine)) if found else None


def weight_fault(engine: Any) -> InputError | None:
    """Why the edge weights of ``engine``'s taxonomy make no scoring tree, or ``None`` when they do.

    A scoring tree's edges all have a weight, the weights are non-negative, every root-to-leaf sum is 1
    (within :data:`TOLERANCE`) and every node but the root has ``W(n) > 0`` (the standardised measures divide
    by ``W(t)`` and ``W(p)``). The rule and its words are the query ``scoring_weight_fault`` of ``scoring.sql``
    (the first fault by rule, then by node, and how many nodes share it), which the SQL door's
    ``scoring_weights_check`` fails with; the error names the taxonomy's file and the line of the edge into
    that node."""
    found = _fault_rows(engine, "scoring_weight_fault")
    if not found:
        return None
    label, message = found[0]
    line = next((e.line for e in engine.taxonomy().all_edges() if e.child == label), None)
    return InputError(message, _source(engine), line)


def _source(engine: Any) -> str:
    """Where ``engine``'s taxonomy was read: its file, else the engine's ``edges`` table."""
    return engine.taxonomy().source or engine.table("edges")


# Each query once per engine and taxonomy: the family's applies and check, and every weighted measure's applies
# (``--metrics all``), ask the same.
_FAULTS: WeakKeyDictionary[Any, tuple[Taxonomy, dict[str, list[tuple]]]] = WeakKeyDictionary()


def _fault_rows(engine: Any, query: str) -> list[tuple]:
    """The rows of ``query`` of ``scoring.sql`` on ``engine``, kept while its taxonomy stays the same."""
    taxonomy = engine.taxonomy()
    known = _FAULTS.get(engine)
    if known is None or known[0] is not taxonomy:
        known = _FAULTS[engine] = (taxonomy, {})
    if query not in known[1]:
        known[1][query] = engine.run("scoring", query, {"weight_tolerance": TOLERANCE})
    return known[1][query]


def check_tree(taxonomy: Taxonomy) -> None:
    """Raise :class:`InputError` naming ``taxonomy``'s file unless it is a tree (:func:`tree_fault`)."""
    if not taxonomy.is_tree:  # a store of its own only to word a fault: the builders run on trees
        with _alone(taxonomy) as engine:
            fault = tree_fault(engine)
        if fault is not None:
            raise fault


@contextmanager
def _alone(taxonomy: Taxonomy) -> Iterator[Any]:
    """A DuckDB engine of ``taxonomy`` alone: the builders check their trees before any engine exists."""
    from ...engines.duckdb import DuckDBEngine
    from ...inputs.store import Store

    store = Store()
    try:
        store.load_taxonomy(taxonomy)
        yield DuckDBEngine(store)
    finally:
        store.close()


def validate(taxonomy: Taxonomy) -> None:
    """Raise :class:`InputError` unless ``taxonomy`` is a scoring tree: a tree (:func:`tree_fault`) whose edge
    weights pass :func:`weight_fault`."""
    with _alone(taxonomy) as engine:
        fault = tree_fault(engine) or weight_fault(engine)
    if fault is not None:
        raise fault


# ---------------------------------------------------------------------- builders
def with_weights(taxonomy: Taxonomy, weights: Mapping[str, float]) -> Taxonomy:
    """A copy of the tree ``taxonomy`` whose edge into each node ``n`` has weight ``weights[n]``.

    A virtual root becomes an explicit node, so edges from it can carry weights. Whether the weights make a
    scoring tree is checked where the measures run (:func:`weight_fault`) or by :func:`validate`.
    """
    check_tree(taxonomy)
    missing = [e.child for e in taxonomy.all_edges() if e.child not in weights]
    if missing:
        raise InputError(f"no weight given for the edge into {', '.join(missing[:10])}", taxonomy.source)
    edges = [Edge(e.parent, e.child, float(weights[e.child]), e.line) for e in taxonomy.all_edges()]
    return Taxonomy(edges, taxonomy.source)


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
    (the weights already on the taxonomy) or ``levels:W1/W2/...`` (:func:`by_level`)."""
    if name == "given":
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
