"""The LCA graphs HEMKit builds (``lca_graph="hemkit"``), including its departures from the paper.

HEMKit (Kosmopoulos et al.; BioASQ's evaluation tool) does not run Algorithm 1 of the paper as written. This
module reproduces what its C++ computes, rule by rule (the rules S0-S7 of ``docs/lca.md``), for one instance
at a time, from plain Python data: the parents of every node and the two label sets, all as integer node ids.

- S0: within each side, a label is dropped when it is an ancestor, at most ``drop_distance`` edges up, of
  another label of that side (HEMKit: ``max_distance + 1``; ``None``: any distance).
- S1: every simple upward path of a label, parents in the order given (HEMKit visits them in the order of
  their heap addresses, i.e. of the nodes' first appearance in its hierarchy file on glibc: the documented
  rule here), ending at a parentless node or after ``max_distance`` edges; the marker :data:`BEYOND` closes
  every path.
- S2: for each label on one side only, the first node of each of its paths that lies on a path of the other
  side, paired with every other-side path through it; the pairs of minimum cost (edges on both sides) are
  kept, ordered by the sum of their node ids as ``std::sort`` of libstdc++ orders them (:func:`cxx_sort`).
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

from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import accumulate
from operator import itemgetter
from typing import TypeVar

BEYOND = -1  # HEMKit's marker closing every upward path: the meeting of labels with no common node within reach
DUMMY_ROOT = 0  # HEMKit's dummy root, parent of every parentless node of its hierarchy file

Node = int
Path = tuple[Node, ...]  # a label first, then its ancestors upwards
Candidate = tuple[Path, Path, int]  # (a label's path, its partner's), both ending at their meeting; id sum
_Label = tuple[list[Path], list[list[int]], dict[Node, list[tuple[int, int]]]]  # paths, prefix sums, index

T = TypeVar("T")


class HemkitLCA:
    """HEMKit's LCA graphs on one hierarchy.

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
        self.parents = parents
        self.max_distance = max_distance
        self.drop_distance = drop_distance
        self._paths: dict[Node, list[Path]] = {}
        self._labels: dict[Node, _Label] = {}
        self._above: dict[Node, frozenset[Node]] = {}

    # ------------------------------------------------------------------------------------------ S0, S1
    def ancestors(self, node: Node) -> frozenset[Node]:
        """The ancestors of ``node`` at most ``drop_distance`` edges up (cached)."""
        found = self._above.get(node)
        if found is None:
            seen: set[Node] = set()
            level = set(self.parents.get(node, ()))
            steps = 1
            while level:
                seen |= level
                if self.drop_distance is not None and steps >= self.drop_distance:
                    break
                level = {p for v in level for p in self.parents.get(v, ()) if p not in seen}
                steps += 1
            seen.discard(node)
            found = self._above[node] = frozenset(seen)
        return found

    def most_specific(self, labels: Iterable[Node]) -> set[Node]:
        """S0: ``labels`` without those that are ancestors of another of them (within ``drop_distance``)."""
        labels = set(labels)
        if len(labels) < 2:
            return labels
        above = set().union(*map(self.ancestors, labels))
        return labels - above

    def paths(self, node: Node) -> list[Path]:
        """S1: the upward paths of ``node`` (depth first, parents in the given order), each closed by
        :data:`BEYOND` (cached)."""
        found = self._paths.get(node)
        if found is None:
            found = self._paths[node] = []
            limit, parents = self.max_distance, self.parents
            # depth first, as HEMKit's recursion: (path, True) extends a path, (path, False) closes it
            stack: list[tuple[Path, bool]] = [((node,), True)]
            while stack:
                path, extend = stack.pop()
                above = parents.get(path[-1], ()) if extend else ()
                if not above or (limit is not None and len(path) - 1 == limit):
                    found.append((*path, BEYOND))
                    continue
                for parent in reversed(above):  # the first parent on top
                    # a cycle ends the path before the node it already holds
                    stack.append((path, False) if parent in path else ((*path, parent), True))
        return found

    # ------------------------------------------------------------------------------------------ S2-S7
    def _label(self, node: Node) -> _Label:
        """The paths of ``node`` with their prefix sums of ids and the index of their nodes (cached)."""
        found = self._labels.get(node)
        if found is None:
            paths = self.paths(node)
            index: dict[Node, list[tuple[int, int]]] = {}
            sums = []
            for k, path in enumerate(paths):
                for position, v in enumerate(path):
                    index.setdefault(v, []).append((k, position))
                sums.append(list(accumulate(path)))
            found = self._labels[node] = (paths, sums, index)
        return found

    def graphs(self, gold: Iterable[Node], pred: Iterable[Node]) -> tuple[set[Node], set[Node]]:
        """HEMKit's graphs ``(Gt, Gp)`` of one instance (node sets; :data:`BEYOND` and the dummy root are
        nodes like the others)."""
        true, predicted = self.most_specific(gold), self.most_specific(pred)
        gt, gp = set(true), set(predicted)
        shared = true & predicted
        gold_only, pred_only = sorted(true - shared), sorted(predicted - shared)
        if not (gold_only or pred_only) or not true or not predicted:
            return gt, gp
        links = _Links(true, predicted)
        # S2, S3: candidate pairs of each one-sided label against the other side's paths
        tried: dict[Node, set[Node]] = {}
        gold_pairs = self._candidates(gold_only, predicted, links, tried)
        pred_pairs = self._candidates(pred_only, true, links, tried)
        chosen = links.select_ancestors(shared, len(true) + len(predicted))  # S4
        # S5: one pair per (label, partner), filed under an ancestor
        filed: dict[Node, dict[Node, tuple[Path, bool]]] = {}
        for pairs, gold_side in ((gold_pairs, True), (pred_pairs, False)):
            for label in sorted(pairs):
                for partner, candidates in sorted(pairs[label].items()):
                    links.choose(label, partner, candidates, gold_side, chosen, gold_only, pred_only, tried,
                                 filed)
        # S6: the graphs
        served = {True: set(shared), False: set(shared)}  # by side: True = gold
        total = len(true) + len(predicted)
        graphs = {True: gt, False: gp}
        for ancestor in sorted(chosen):
            if len(served[True]) + len(served[False]) == total:
                break
            added = {True: 0, False: 0}
            smallest: dict[bool, tuple[int, Node, Path]] = {}
            for node, (path, gold_side) in sorted(filed.get(ancestor, {}).items()):
                if node in served[gold_side]:
                    best = smallest.get(gold_side)
                    if best is None or (len(path), node) < best[:2]:
                        smallest[gold_side] = (len(path), node, path)
                else:
                    graphs[gold_side].update(path)
                    added[gold_side] += 1
                    served[gold_side].add(node)
            for side in (True, False):
                # every ancestor's first filing holds a path of each side, so the other side has a served one
                if added[side] and not added[not side]:
                    graphs[not side].update(smallest[not side][2])
        return gt, gp

    def _candidates(self, labels: list[Node], other: set[Node], links: _Links, tried: dict[Node, set[Node]]
                    ) -> dict[Node, dict[Node, list[Candidate]]]:
        """S2, S3 for the one-sided ``labels`` of one side against the labels ``other`` of the other side:
        ``{label: {partner: [(own path, partner's path, id sum), ...]}}`` in the order HEMKit keeps them; the
        nodes of each label's own candidate paths go to ``tried``, the links to ``links``."""
        others = [self._label(v) for v in sorted(other)]
        reach: set[Node] = set()
        for _, _, index in others:
            reach.update(index)
        pairs: dict[Node, dict[Node, list[Candidate]]] = {}
        for label in labels:
            paths, sums, _ = self._label(label)
            best = -1
            found: list[tuple[int, Path, Path, int]] = []
            hits: list[tuple[int, Path]] = []  # (cost, the path up to its first hit) of each path
            for k, path in enumerate(paths):
                position = 0
                while path[position] not in reach:  # the first hit (BEYOND closes every path of the other side)
                    position += 1
                node = path[position]
                own = path[:position + 1]
                own_sum = sums[k][position]
                low = -1
                for their_paths, their_sums, index in others:
                    for j, at in index.get(node, ()):
                        cost = position + at
                        if cost < low or low < 0:
                            low = cost
                        if cost < best or best < 0:
                            best = cost
                            found = []
                        if cost == best:
                            found.append((own_sum + their_sums[j][at], own, their_paths[j], at))
                hits.append((low, own))
            # std::sort: up to 16 pairs an insertion sort (stable), beyond not stable; the order of equal sums
            # matters only among the pairs of one partner (S5), so a stable sort does when those sums differ
            if len(found) > _THRESHOLD and len({(f[0], f[2][0]) for f in found}) < len(found):
                found = cxx_sort(found, _smaller_sum)
            else:
                found.sort(key=itemgetter(0))
            nodes = tried[label] = set()
            for cost, own in hits:
                if cost == best:
                    nodes.update(own)
            mine = pairs[label] = {}
            linked = set()
            for total, own, theirs, at in found:
                partner = theirs[0]
                if (own[-1], partner) not in linked:
                    linked.add((own[-1], partner))
                    links.link(own[-1], label, partner)
                group = mine.get(partner)
                if group is None:
                    group = mine[partner] = []
                group.append((own, theirs[:at + 1], total))
        return pairs


def _smaller_sum(a: tuple, b: tuple) -> bool:
    return a[0] < b[0]


class _Links:
    """HEMKit's bookkeeping of one instance (its ``AncestorLinks``): which labels each ancestor links, the
    gold and predicted node sets (the labels, grown by the ancestors chosen for each side)."""

    def __init__(self, true: set[Node], predicted: set[Node]) -> None:
        self.gold = set(true)
        self.pred = set(predicted)
        self.linked: dict[Node, set[Node]] = {}  # ancestor: labels (of either side) it links
        self.ancestors_of: dict[Node, set[Node]] = {}  # label: ancestors linking it

    def link(self, ancestor: Node, label: Node, partner: Node) -> None:
        """S3: ``ancestor`` serves both ``label`` and its ``partner``."""
        labels = self.linked.get(ancestor)
        if labels is None:
            self.linked[ancestor] = {label, partner}
        else:
            labels.add(label)
            labels.add(partner)
        for v in (label, partner):
            above = self.ancestors_of.get(v)
            if above is None:
                self.ancestors_of[v] = {ancestor}
            else:
                above.add(ancestor)

    def select_ancestors(self, shared: set[Node], total: int) -> set[Node]:
        """S4: the ancestors chosen, by the number of labels linked (descending) then id (descending): one
        pass drops those whose labels all have a number of linking ancestors other than 1; then the others
        are taken in turn while some label is unserved, each when it serves a label not yet served on its
        side (its id then joins that side's node set)."""
        linked, ancestors_of = self.linked, self.ancestors_of
        kept = []
        for a in sorted(linked, key=lambda a: (-len(linked[a]), -a)):
            labels = linked[a]
            if all(len(ancestors_of[v]) != 1 for v in labels):
                for v in labels:
                    ancestors_of[v].discard(a)
            else:
                kept.append(a)
        served_gold, served_pred = set(shared), set(shared)
        chosen: set[Node] = set()
        gold, pred = self.gold, self.pred
        for a in kept:
            if len(served_gold) + len(served_pred) == total:
                break
            for v in sorted(linked[a]):
                if v in gold and v not in served_gold:
                    chosen.add(a)
                    gold.add(a)
                    served_gold.add(v)
                if v in pred and v not in served_pred:
                    chosen.add(a)
                    pred.add(a)
                    served_pred.add(v)
        return chosen

    def choose(self, label: Node, partner: Node, candidates: list[Candidate], gold_side: bool,
               chosen: set[Node], gold_only: list[Node], pred_only: list[Node], tried: dict[Node, set[Node]],
               filed: dict[Node, dict[Node, tuple[Path, bool]]]) -> None:
        """S5: the pair of (``label``, ``partner``) among ``candidates`` (``label`` on the gold side when
        ``gold_side``), filed under the ancestor of the last candidate. Nothing is chosen when that filing
        can have no effect: an ancestor that was not selected is never used (S6), and a label already filed
        under the ancestor stays."""
        gold_label, pred_label = (label, partner) if gold_side else (partner, label)
        ancestor = candidates[-1][0][-1]
        here = filed.get(ancestor)
        if ancestor not in chosen or (here is not None and gold_label in here and pred_label in here):
            return
        usable = [c for c in candidates if c[0][-1] in chosen]
        if not usable:
            return
        best = usable[0]
        if len(usable) > 1:
            # HEMKit's last tie-break, a smaller id sum, never applies: the candidates come sorted by it (S2)
            gold, pred = self.gold, self.pred
            common = -1
            recorded = 0
            for candidate in usable:
                own, theirs, _ = candidate
                g_path, p_path = (own, theirs) if gold_side else (theirs, own)
                count = len(pred.intersection(p_path)) + len(gold.intersection(g_path))
                if count > common:
                    best, common, recorded = candidate, count, 0
                elif count == common:
                    overlap = (_overlap(g_path, gold_only, gold_label, tried)
                               + _overlap(p_path, pred_only, pred_label, tried))
                    if overlap > recorded:
                        best, recorded = candidate, overlap
        own, theirs, _ = best
        g_path, p_path = (own, theirs) if gold_side else (theirs, own)
        if here is None:
            here = filed[ancestor] = {}
        if pred_label not in here:
            here[pred_label] = (p_path, False)
        if gold_label not in here:
            here[gold_label] = (g_path, True)


def _overlap(path: Path, labels: list[Node], skip: Node, tried: dict[Node, set[Node]]) -> int:
    """The most nodes of ``path`` on the candidate paths of one of ``labels`` other than ``skip``."""
    most = 0
    for v in labels:
        if v != skip:
            count = len(tried[v].intersection(path))
            if count > most:
                most = count
    return most


# ---------------------------------------------------------------------------------------------- std::sort
_THRESHOLD = 16  # libstdc++'s _S_threshold


def cxx_sort(items: list[T], less: Callable[[T, T], bool]) -> list[T]:
    """``items`` in the order ``std::sort`` of libstdc++ (GCC) leaves them with the comparison ``less``:
    introsort (median-of-three quicksort down to runs of 16, heapsort past ``2·floor(log2 n)`` levels), then
    insertion sort. Not stable: equal items end in an order that depends on the input order, and HEMKit's
    choices among pairs of equal id sums depend on it. Sorts a copy."""
    a = list(items)
    n = len(a)
    if n > 1:
        _introsort(a, 0, n, 2 * (n.bit_length() - 1), less)
        _final_insertion_sort(a, 0, n, less)
    return a


def _introsort(a: list, first: int, last: int, depth: int, less: Callable) -> None:
    while last - first > _THRESHOLD:
        if depth == 0:
            _heap_sort(a, first, last, less)
            return
        depth -= 1
        cut = _partition_pivot(a, first, last, less)
        _introsort(a, cut, last, depth, less)
        last = cut


def _partition_pivot(a: list, first: int, last: int, less: Callable) -> int:
    mid = first + (last - first) // 2
    x, y, z = first + 1, mid, last - 1
    if less(a[x], a[y]):
        pick = y if less(a[y], a[z]) else (z if less(a[x], a[z]) else x)
    elif less(a[x], a[z]):
        pick = x
    elif less(a[y], a[z]):
        pick = z
    else:
        pick = y
    a[first], a[pick] = a[pick], a[first]
    pivot = a[first]
    lo, hi = first + 1, last
    while True:
        while less(a[lo], pivot):
            lo += 1
        hi -= 1
        while less(pivot, a[hi]):
            hi -= 1
        if not lo < hi:
            return lo
        a[lo], a[hi] = a[hi], a[lo]
        lo += 1


def _final_insertion_sort(a: list, first: int, last: int, less: Callable) -> None:
    if last - first > _THRESHOLD:
        _insertion_sort(a, first, first + _THRESHOLD, less)
        for i in range(first + _THRESHOLD, last):
            _linear_insert(a, i, less)
    else:
        _insertion_sort(a, first, last, less)


def _insertion_sort(a: list, first: int, last: int, less: Callable) -> None:
    for i in range(first + 1, last):
        if less(a[i], a[first]):
            value = a[i]
            a[first + 1:i + 1] = a[first:i]
            a[first] = value
        else:
            _linear_insert(a, i, less)


def _linear_insert(a: list, i: int, less: Callable) -> None:
    value = a[i]
    while less(value, a[i - 1]):
        a[i] = a[i - 1]
        i -= 1
    a[i] = value


def _heap_sort(a: list, first: int, last: int, less: Callable) -> None:
    """``std::__partial_sort(first, last, last)``: make_heap, then sort_heap."""
    n = last - first
    if n >= 2:
        parent = (n - 2) // 2
        while True:
            _adjust_heap(a, first, parent, n, a[first + parent], less)
            if parent == 0:
                break
            parent -= 1
    while last - first > 1:
        last -= 1
        value = a[last]
        a[last] = a[first]
        _adjust_heap(a, first, 0, last - first, value, less)


def _adjust_heap(a: list, first: int, hole: int, n: int, value: object, less: Callable) -> None:
    top = hole
    child = hole
    while child < (n - 1) // 2:
        child = 2 * (child + 1)
        if less(a[first + child], a[first + child - 1]):
            child -= 1
        a[first + hole] = a[first + child]
        hole = child
    if n % 2 == 0 and child == (n - 2) // 2:
        child = 2 * (child + 1)
        a[first + hole] = a[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and less(a[first + parent], value):
        a[first + hole] = a[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    a[first + hole] = value


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


def _from_store(con, max_distance: int | None) -> tuple[HemkitLCA, list[Node], list[tuple]]:
    """HEMKit's selection on the taxonomy of a store's connection ``con`` (tables ``nodes``, ``edges``;
    parents visited by position, the order of first appearance; labels dropped by S0 up to
    ``max_distance + 1`` edges, as HEMKit), the ids of its nodes by position
    (:func:`node_ids`) and the label positions of every (system, instance) (tables ``truth``,
    ``predictions``, ``systems``, ``instances``)."""
    labels, virtual = con.execute("SELECT list(label ORDER BY position), list(is_virtual ORDER BY position)"
                                  " FROM nodes").fetchone()
    ids = node_ids(labels or [], virtual or [])
    parents: dict[Node, list[Node]] = {}
    for child, above in con.execute(
        "SELECT c.position, list(p.position ORDER BY p.position) FROM edges AS e"
        " JOIN nodes AS p ON p.label = e.parent JOIN nodes AS c ON c.label = e.child GROUP BY c.position"
    ).fetchall():
        parents[ids[child]] = [ids[v] for v in above]
    rows = con.execute(
        "WITH t AS (SELECT x.instance_id, list(n.position) AS labels FROM truth AS x"
        "  JOIN nodes AS n ON n.label = x.label GROUP BY x.instance_id),"
        " p AS (SELECT x.system, x.instance_id, list(n.position) AS labels FROM predictions AS x"
        "  JOIN nodes AS n ON n.label = x.label GROUP BY x.system, x.instance_id)"
        " SELECT s.system, i.instance_id, t.labels, p.labels FROM systems AS s CROSS JOIN instances AS i"
        " LEFT JOIN t ON t.instance_id = i.instance_id"
        " LEFT JOIN p ON p.system = s.system AND p.instance_id = i.instance_id"
    ).fetchall()
    drop_distance = None if max_distance is None else max_distance + 1
    return HemkitLCA(parents, max_distance, drop_distance), ids, rows


def store_graph_counts(con, include_root: bool, max_distance: int | None) -> list[tuple[str, str, int, int, int]]:
    """``(system, instance_id, |Gt|, |Gp|, |Gt ∩ Gp|)`` of HEMKit's graphs of every (system, instance) of a
    store's connection ``con`` (:func:`_from_store`); the root (HEMKit's dummy root when the store has a
    virtual root) is left out unless ``include_root``; :data:`BEYOND` counts as a node."""
    lca, ids, rows = _from_store(con, max_distance)
    root = con.execute("SELECT position FROM nodes WHERE is_root").fetchone()
    ignore = {ids[root[0]]} if root is not None and not include_root else set()
    out = []
    for system, instance, true, predicted in rows:
        gt, gp = lca.graphs([ids[v] for v in true or ()], [ids[v] for v in predicted or ()])
        if ignore:
            gt, gp = gt - ignore, gp - ignore
        out.append((system, instance, len(gt), len(gp), len(gt & gp)))
    return out


def write_graph_counts(con, include_root: bool, max_distance: int | None) -> None:
    """The temp table ``lca_graph_counts(system, instance_id, n_true, n_pred, n_both)`` of
    :func:`store_graph_counts`, as ``sql/lca.sql`` names it for ``lca_instance``."""
    rows = store_graph_counts(con, include_root, max_distance)
    con.execute("CREATE OR REPLACE TEMP TABLE lca_graph_counts (system VARCHAR, instance_id VARCHAR,"
                " n_true BIGINT, n_pred BIGINT, n_both BIGINT)")
    if rows:
        con.execute(
            "INSERT INTO lca_graph_counts SELECT unnest($s), unnest($i), unnest($t), unnest($p), unnest($b)",
            {name: [r[k] for r in rows] for k, name in enumerate(("s", "i", "t", "p", "b"))},
        )


def store_graph_names(con, max_distance: int | None, beyond: str) -> dict[tuple[str, str], dict[str, set[str]]]:
    """HEMKit's graphs of every (system, instance) of a store's connection ``con`` with labels, on node names
    (``{"t": Gt, "p": Gp}``; :data:`BEYOND` named ``beyond``)."""
    lca, ids, rows = _from_store(con, max_distance)
    labels = con.execute("SELECT list(label ORDER BY position) FROM nodes").fetchone()[0]
    names = dict(zip(ids, labels, strict=True))
    names[BEYOND] = beyond
    out = {}
    for system, instance, true, predicted in rows:
        if true or predicted:
            gt, gp = lca.graphs([ids[v] for v in true or ()], [ids[v] for v in predicted or ()])
            out[(system, instance)] = {"t": {names[v] for v in gt}, "p": {names[v] for v in gp}}
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
