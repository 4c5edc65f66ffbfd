"""The LCA graphs HEMKit builds (``lca_graph="hemkit"``), including its departures from the paper.

HEMKit (Kosmopoulos et al.; BioASQ's evaluation tool) does not run Algorithm 1 of the paper as written. This
module reproduces what its C++ computes, rule by rule (the rules S0-S7 of ``docs/lca.md``), for many instances
at once, from arrays: the parents of every node and the label sets of each instance, as integer node ids. The
rules run compiled (numba, :mod:`hiersql.measures.lca.hemkit_kernel`; the machine code is cached beside the module on
first use): 15–20 times faster than the rules in Python were on 20,000 MeSH instances (benchmarks/RESULTS.md).

- S0: within each side, a label is dropped when it is an ancestor, at most ``drop_distance`` edges up, of
  another label of that side (HEMKit: ``max_distance + 1``; ``None``: any distance).
- S1: every simple upward path of a label, parents in the order given (HEMKit visits them in the order of
  their heap addresses, i.e. of the nodes' first appearance in its hierarchy file on glibc: the documented
  rule here), ending at a parentless node or after ``max_distance`` edges; the marker :data:`BEYOND` closes
  every path.
- S2: for each label on one side only, the first node of each of its paths that lies on a path of the other
  side, paired with every other-side path through it; the pairs of minimum cost (edges on both sides) are
  kept, ordered by the sum of their node ids as ``std::sort`` of libstdc++ orders them
  (:func:`~hiersql.measures.lca.cxx_sort.cxx_sort_order`).
- S3, S4: the ancestors ending those pairs link both labels; they are chosen by the number of labels they
  link, redundant ones dropped in one pass, then taken until every label is served (an ancestor that is a
  label of the other side can count as served there: HEMKit's early stop).
- S5: one pair per (label, partner): most nodes already in the side's sets, then the overlap with the other
  labels' candidate paths, then the smaller id sum, filed under the ancestor of the last candidate looked at.
- S6: the graphs: the labels, then for each chosen ancestor (ascending id) the paths of the labels filed
  under it that are not yet served, plus the smallest already-served path on the other side when the ancestor
  added paths on one side only.

References
----------
Kosmopoulos, Partalas, Gaussier, Paliouras, Androutsopoulos (2015), §2.4.2, Algorithm 1, and HEMKit's source
(``BioASQ/Evaluation-Measures``, ``hierarchical/software``: ``bestPathfinder.cpp``, ``matches.h``,
``graph.cpp``), read as the reference.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb
    import numpy as np

BEYOND = -1  # HEMKit's marker closing every upward path: the meeting of labels with no common node within reach
DUMMY_ROOT = 0  # HEMKit's dummy root, parent of every parentless node of its hierarchy file

Node = int


class HemkitLCA:
    """HEMKit's LCA graphs on one hierarchy given as a mapping (small inputs and tests; a store's tables go
    through :func:`store_graph_counts` without building Python objects per node).

    Parameters
    ----------
    parents:
        The parents of every node id, in the order HEMKit visits them (its heap order; on glibc the order of
        first appearance in the hierarchy file); a node without parents ends its paths. HEMKit's dummy root
        (id 0) is a node like any other here: the caller lists it as the parent of the parentless nodes.
    max_distance:
        The edges a path climbs at most (HEMKit's ``MAX_DISTANCE``); ``None``: no limit.
    drop_distance:
        A label is redundant when it is an ancestor of another label of its side at most this many edges up
        (HEMKit: ``max_distance + 1``); ``None``: any distance.
    """

    def __init__(self, parents: Mapping[Node, Sequence[Node]], max_distance: int | None,
                 drop_distance: int | None) -> None:
        import numpy as np

        nodes = list(dict.fromkeys([*parents, *(p for above in parents.values() for p in above)]))
        self._index = {v: i for i, v in enumerate(nodes)}
        self._ids = np.array([*nodes, BEYOND], np.int64)
        lists = [[self._index[p] for p in parents.get(v, ())] for v in nodes]
        self._parents = _csr(lists)
        self.max_distance = max_distance
        self.drop_distance = drop_distance

    def graphs_many(self, instances: Iterable[tuple[Iterable[Node], Iterable[Node]]]
                    ) -> list[tuple[set[Node], set[Node]]]:
        """HEMKit's graphs ``(Gt, Gp)`` (node id sets; :data:`BEYOND` and the dummy root are nodes like the
        others) of each ``(gold, pred)`` instance."""
        instances = list(instances)
        gold = _csr([[self._index[v] for v in g] for g, _ in instances])
        pred = _csr([[self._index[v] for v in p] for _, p in instances])
        _, ptr, nodes, sides = _run(self._parents, self._ids, gold, pred, self.max_distance, self.drop_distance)
        ids = self._ids[nodes].tolist()
        sides = sides.tolist()
        out = []
        for i in range(len(instances)):
            lo, hi = ptr[i], ptr[i + 1]
            out.append(({ids[k] for k in range(lo, hi) if sides[k] & 1},
                        {ids[k] for k in range(lo, hi) if sides[k] & 2}))
        return out

    def graphs(self, gold: Iterable[Node], pred: Iterable[Node]) -> tuple[set[Node], set[Node]]:
        """HEMKit's graphs ``(Gt, Gp)`` of one instance (:meth:`graphs_many`)."""
        return self.graphs_many([(gold, pred)])[0]


def _csr(lists: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """``(ptr, values)``: the lists concatenated, list ``i`` at ``values[ptr[i]:ptr[i + 1]]``."""
    import numpy as np

    ptr = np.zeros(len(lists) + 1, np.int64)
    ptr[1:] = np.cumsum([len(values) for values in lists])
    return ptr, np.fromiter((v for values in lists for v in values), np.int64, count=int(ptr[-1]))


def load_kernel() -> None:
    """Load the compiled code of :func:`~hiersql.measures.lca.hemkit_kernel.graphs_many` (from numba's cache, or
    compile it on first use) by running it on a one-node hierarchy."""
    import numpy as np

    one = np.zeros(1, np.int64)
    _run((np.zeros(2, np.int64), one[:0]), np.array([1, BEYOND], np.int64), (np.array([0, 1], np.int64), one),
         (np.array([0, 1], np.int64), one), 1, 2)


def _run(parents, ids, gold, pred, max_distance: int | None, drop_distance: int | None, ignore: int = -1):
    """:func:`~hiersql.measures.lca.hemkit_kernel.graphs_many` on CSR pairs; ``None`` distances as no limit."""
    from .hemkit_kernel import graphs_many

    return graphs_many(*parents, ids, *gold, *pred, -1 if max_distance is None else max_distance,
                       -1 if drop_distance is None else drop_distance, ignore)


# ---------------------------------------------------------------------------------------------- a store's tables
def node_ids(labels: Sequence[str], is_virtual: Sequence[bool]) -> list[Node]:
    """HEMKit's ids of the nodes listed by position: the virtual root is HEMKit's dummy root (0) and the others
    keep their integer names, when every other name is a canonical integer (``"12"``, not ``"012"``) other
    than 0 and -1, as in HEMKit's input; otherwise every node's id is its position (the order of first
    appearance), which orders ties and sums of ids as HEMKit would for input renamed that way."""
    ids = []
    for label, virtual in zip(labels, is_virtual, strict=True):
        if virtual:
            ids.append(DUMMY_ROOT)
            continue
        try:
            value = int(label)
        except ValueError:
            break
        if str(value) != label or value in (DUMMY_ROOT, BEYOND):
            break
        ids.append(value)
    else:
        return ids
    return list(range(len(labels)))


# Every (system, instance) of a store, numbered in (system, instance_id) order, and the label positions of
# each side; the truth is the same for every system.
_KEYS = ("WITH k AS (SELECT row_number() OVER (ORDER BY s.system, i.instance_id) - 1 AS k, s.system,"
         " i.instance_id FROM systems AS s CROSS JOIN instances AS i) ")
_GOLD = (_KEYS + "SELECT k.k, n.position FROM k JOIN truth AS x ON x.instance_id = k.instance_id"
         " JOIN nodes AS n ON n.label = x.label ORDER BY k.k, n.position")
_PRED = (_KEYS + "SELECT k.k, n.position FROM k JOIN predictions AS x ON x.system = k.system"
         " AND x.instance_id = k.instance_id JOIN nodes AS n ON n.label = x.label ORDER BY k.k, n.position")


def _store_run(con: duckdb.DuckDBPyConnection, max_distance: int | None, include_root: bool = True):
    """HEMKit's graphs of every (system, instance) of a store's connection ``con`` (tables ``nodes``,
    ``edges``, ``truth``, ``predictions``, ``systems``, ``instances``; parents visited by position, the order
    of first appearance; labels dropped by S0 up to ``max_distance + 1`` edges, as HEMKit): the keys
    ``(system, instance_id)`` in order, the ids of the nodes by position (:func:`node_ids`, then
    :data:`BEYOND`) and the kernel's output (:func:`~hiersql.measures.lca.hemkit_kernel.graphs_many`). The root (the
    dummy root when the store has a virtual root) is left out unless ``include_root``."""
    import numpy as np

    labels, virtual = con.execute("SELECT list(label ORDER BY position), list(is_virtual ORDER BY position)"
                                  " FROM nodes").fetchall()[0]
    labels, virtual = labels or [], virtual or []
    ids = np.array([*node_ids(labels, virtual), BEYOND], np.int64)
    size = len(labels)
    edges = con.execute("SELECT c.position AS child, p.position AS parent FROM edges AS e"
                        " JOIN nodes AS p ON p.label = e.parent JOIN nodes AS c ON c.label = e.child"
                        " ORDER BY c.position, p.position").fetchnumpy()
    parents = (_ptr(edges["child"], size), np.asarray(edges["parent"], np.int64))
    keys = con.execute(_KEYS + "SELECT system, instance_id FROM k ORDER BY k").fetchall()
    gold, pred = (con.execute(sql).fetchnumpy() for sql in (_GOLD, _PRED))
    root = con.execute("SELECT position FROM nodes WHERE is_root").fetchall()
    ignore = root[0][0] if root and not include_root else -1
    drop_distance = None if max_distance is None else max_distance + 1
    out = _run(parents, ids, (_ptr(gold["k"], len(keys)), np.asarray(gold["position"], np.int64)),
               (_ptr(pred["k"], len(keys)), np.asarray(pred["position"], np.int64)), max_distance, drop_distance,
               ignore)
    return keys, ids, out


def _ptr(rows: np.ndarray, n: int) -> np.ndarray:
    """CSR offsets of the sorted row numbers ``rows`` (``0 .. n - 1``)."""
    import numpy as np

    return np.searchsorted(np.asarray(rows, np.int64), np.arange(n + 1), side="left").astype(np.int64)


def store_graph_counts(con: duckdb.DuckDBPyConnection, include_root: bool, max_distance: int | None
                       ) -> list[tuple[str, str, int, int, int]]:
    """``(system, instance_id, |Gt|, |Gp|, |Gt ∩ Gp|)`` of HEMKit's graphs of every (system, instance) of a
    store's connection ``con`` (:func:`_store_run`); :data:`BEYOND` counts as a node."""
    keys, _, (counts, *_) = _store_run(con, max_distance, include_root)
    return [(system, instance, *row) for (system, instance), row in zip(keys, counts.tolist(), strict=True)]


def write_graph_counts(con: duckdb.DuckDBPyConnection, include_root: bool, max_distance: int | None) -> None:
    """The temp table ``lca_graph_counts(system, instance_id, n_true, n_pred, n_both)`` of
    :func:`store_graph_counts`, as ``lca.sql`` names it for ``lca_instance``. (Written from lists: building
    an Arrow table from Python data would import pandas, a third of a second.)"""
    keys, _, (counts, *_) = _store_run(con, max_distance, include_root)
    con.execute("CREATE OR REPLACE TEMP TABLE lca_graph_counts (system VARCHAR, instance_id VARCHAR,"
                " n_true BIGINT, n_pred BIGINT, n_both BIGINT)")
    if keys:
        columns = counts.T.tolist()
        con.execute("INSERT INTO lca_graph_counts SELECT unnest($s), unnest($i), unnest($t), unnest($p), unnest($b)",
                    {"s": [k[0] for k in keys], "i": [k[1] for k in keys], "t": columns[0], "p": columns[1],
                     "b": columns[2]})


def store_graph_names(con: duckdb.DuckDBPyConnection, max_distance: int | None, beyond: str
                      ) -> dict[tuple[str, str], dict[str, set[str]]]:
    """HEMKit's graphs of every (system, instance) of a store's connection ``con`` with labels, on node names
    (``{"t": Gt, "p": Gp}``; :data:`BEYOND` named ``beyond``)."""
    keys, _, (_, ptr, nodes, sides) = _store_run(con, max_distance)
    labels = con.execute("SELECT list(label ORDER BY position) FROM nodes").fetchall()[0][0] or []
    names = [*labels, beyond]
    out = {}
    for i, key in enumerate(keys):
        lo, hi = ptr[i], ptr[i + 1]
        if lo < hi:
            out[key] = {"t": {names[v] for v, s in zip(nodes[lo:hi], sides[lo:hi], strict=True) if s & 1},
                        "p": {names[v] for v, s in zip(nodes[lo:hi], sides[lo:hi], strict=True) if s & 2}}
    return out


def hemkit_parents(pairs: Iterable[tuple[Node, Node]]) -> dict[Node, list[Node]]:
    """The parents of every node of a hierarchy given as HEMKit reads it, ``(parent, child)`` ids in file
    order: each node's parents in order of first appearance (the rule of S1), duplicates dropped, and the
    dummy root (0) as the only parent of every parentless node."""
    order: dict[Node, int] = {}
    parents: dict[Node, list[Node]] = {}
    for parent, child in pairs:
        for v in (parent, child):
            if v not in order:
                order[v] = len(order)
                parents[v] = []
        if parent not in parents[child]:
            parents[child].append(parent)
    for above in parents.values():
        above.sort(key=order.__getitem__)
        if not above:
            above.append(DUMMY_ROOT)
    parents[DUMMY_ROOT] = []
    return parents
