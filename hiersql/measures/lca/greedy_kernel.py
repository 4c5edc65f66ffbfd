"""Algorithm 1's minimal graphs of a batch of instances at once, compiled with numba (``lca_graph="greedy"``).

Everything here works on arrays: nodes are their ranks in name order (``BEYOND`` is -1; index ``rank + 1``
of the mark arrays), the options of the batch's instances are rows sorted by (instance, side, label, LCA,
partner) with side 0 for ``p`` and 1 for ``t`` (the order of the names), and the shortest paths of each
(node, LCA) pair are in CSR form (:func:`batch_paths`). :func:`greedy_batch` applies the rules that
:mod:`hiersql.measures.lca` documents; the exact solver's instances read the same paths.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def pair_key(node, lca, width):
    """One integer for a (node, LCA) pair of ranks (``width`` above every rank + 1)."""
    return (node + 1) * width + lca + 1


@njit(cache=True)
def batch_paths(s_node, s_lca, s_v, m_node, m_lca, m_lower, m_upper, width, max_paths):
    """The shortest paths of every (node, LCA) pair of a batch: ``(keys, first, count, path_ptr, path_nodes)``,
    ``keys`` sorted (:func:`pair_key`), the pair's paths ``first[i] .. first[i] + count[i] - 1``, path ``j``'s
    nodes ``path_nodes[path_ptr[j]:path_ptr[j + 1]]``.

    ``s_*``: the nodes ``s_v`` of the pairs with one path, rows sorted by pair. ``m_*``: the links
    ``(m_lower, m_upper)`` between consecutive steps of the pairs with several, sorted by (pair, lower,
    upper); such a pair's paths are walked depth first from the node, the upper nodes in rank order, until
    the LCA, at most ``max_paths + 1`` of them (:data:`~hiersql.measures.lca.MAX_PATHS`); its links replace
    a one-path row of the same pair."""
    starts = [0]
    for i in range(1, len(m_node) + 1):
        if i == len(m_node) or m_node[i] != m_node[i - 1] or m_lca[i] != m_lca[i - 1]:
            starts.append(i)
    n_multi = len(starts) - 1
    multi_keys = np.empty(n_multi, np.int64)
    for g in range(n_multi):
        multi_keys[g] = pair_key(m_node[starts[g]], m_lca[starts[g]], width)
    multi_sorted = np.sort(multi_keys)
    keys = []
    first = []
    count = []
    ptr = [0]
    nodes = []
    i = 0
    while i < len(s_node):  # the pairs of one path
        j = i
        while j < len(s_node) and s_node[j] == s_node[i] and s_lca[j] == s_lca[i]:
            j += 1
        key = pair_key(s_node[i], s_lca[i], width)
        at = np.searchsorted(multi_sorted, key)
        if at == n_multi or multi_sorted[at] != key:
            keys.append(key)
            first.append(len(ptr) - 1)
            count.append(1)
            for k in range(i, j):
                nodes.append(s_v[k])
            ptr.append(len(nodes))
        i = j
    for g in range(n_multi):  # the pairs of several paths, walked along their links
        lo, hi = starts[g], starts[g + 1]
        node, lca = m_node[lo], m_lca[lo]
        lowers = m_lower[lo:hi]
        keys.append(multi_keys[g])
        first.append(len(ptr) - 1)
        found = 0
        walked = np.empty(hi - lo + 2, np.int64)
        stack = [(node, 0)]
        while len(stack) > 0 and found <= max_paths:
            v, depth = stack.pop()
            walked[depth] = v
            if v == lca:
                for k in range(depth + 1):
                    nodes.append(walked[k])
                ptr.append(len(nodes))
                found += 1
                continue
            a = np.searchsorted(lowers, v, side="left")
            b = np.searchsorted(lowers, v, side="right")
            for k in range(b - 1, a - 1, -1):  # popped in rank order
                stack.append((m_upper[lo + k], depth + 1))
        count.append(found)
    keys_a = np.array(keys, np.int64)
    order = np.argsort(keys_a, kind="mergesort")
    return (keys_a[order], np.array(first, np.int64)[order], np.array(count, np.int64)[order],
            np.array(ptr, np.int64), np.array(nodes, np.int64))


@njit(cache=True)
def _pair(keys, node, lca, width):
    """The index of pair (node, LCA) in ``keys``."""
    return np.searchsorted(keys, pair_key(node, lca, width))


@njit(cache=True)
def _new_nodes(path, path_ptr, path_nodes, marks, stamp):
    """How many nodes of ``path`` are not in the graph that ``marks == stamp`` holds."""
    new = 0
    for k in range(path_ptr[path], path_ptr[path + 1]):
        if marks[path_nodes[k] + 1] != stamp:
            new += 1
    return new


@njit(cache=True)
def _add(v, side, marks, stamp, graphs, sizes):
    """Put node ``v`` in the graph of ``side`` (``graphs[side, :sizes[side]]``) unless it holds it."""
    if marks[side, v + 1] != stamp:
        marks[side, v + 1] = stamp
        graphs[side, sizes[side]] = v
        sizes[side] += 1


@njit(cache=True)
def _fixed(f_side, f_node, f_lca, f_path, n, side, node, lca):
    """The path fixed for (side, node, LCA), or -1."""
    for k in range(n):
        if f_side[k] == side and f_node[k] == node and f_lca[k] == lca:
            return f_path[k]
    return -1


@njit(cache=True)
def _fix(f_side, f_node, f_lca, f_path, n, side, node, lca, path):
    """Fix ``path`` for (side, node, LCA); the new count of fixed paths."""
    for k in range(n):
        if f_side[k] == side and f_node[k] == node and f_lca[k] == lca:
            f_path[k] = path
            return n
    f_side[n], f_node[n], f_lca[n], f_path[n] = side, node, lca, path
    return n + 1


@njit(cache=True)
def _greedy_lcas(o_lca, k_start, k_end, lca_marks, stamp):
    """Algorithm 1, GetBestLCAs, for the keys (side, label) whose options are rows ``k_start[i] ..
    k_end[i] - 1`` (LCAs in rank order): marks the chosen LCAs with ``stamp`` in ``lca_marks``."""
    n_keys = len(k_start)
    single = True
    for i in range(n_keys):
        if o_lca[k_end[i] - 1] != o_lca[k_start[i]]:
            single = False
    if single:  # every label has one LCA: all of them are needed
        for i in range(n_keys):
            lca_marks[o_lca[k_start[i]] + 1] = stamp
        return
    candidates = np.unique(o_lca[k_start[0]:k_end[n_keys - 1]])
    connects = np.zeros(len(candidates), np.int64)
    for i in range(n_keys):
        for r in range(k_start[i], k_end[i]):
            if r == k_start[i] or o_lca[r] != o_lca[r - 1]:
                connects[np.searchsorted(candidates, o_lca[r])] += 1
    order = np.argsort(-connects * (len(candidates) + 1) + np.arange(len(candidates)), kind="mergesort")
    covered = np.zeros(n_keys, np.bool_)
    chosen = []
    left = n_keys
    for c in order:  # by the number of labels connected, then by rank
        a = candidates[c]
        chosen.append(a)
        for i in range(n_keys):
            if not covered[i]:
                for r in range(k_start[i], k_end[i]):
                    if o_lca[r] == a:
                        covered[i] = True
                        left -= 1
                        break
        if left == 0:
            break
    kept = np.ones(len(chosen), np.bool_)
    for c in range(len(chosen)):  # each removed in turn when the others still cover every label
        a = chosen[c]
        ok = True
        for i in range(n_keys):
            hit = False
            for r in range(k_start[i], k_end[i]):
                b = o_lca[r]
                if b != a:
                    for d in range(len(chosen)):
                        if kept[d] and chosen[d] == b:
                            hit = True
                            break
                if hit:
                    break
            if not hit:
                ok = False
                break
        if ok:
            kept[c] = False
    for c in range(len(chosen)):
        if kept[c]:
            lca_marks[chosen[c] + 1] = stamp


@njit(cache=True)
def _choices(o_label, o_lca, o_partner, ks, ke, keys, count, width, lca_marks, stamp):
    """Per key ``k`` (its option rows ``ks[k]:ke[k]``): the number of (own path, their path) choices through the
    chosen LCAs (``lca_marks``, stamp ``stamp``)."""
    choices = np.zeros(len(ks), np.int64)
    for k in range(len(ks)):
        for r in range(ks[k], ke[k]):
            if lca_marks[o_lca[r] + 1] == stamp:
                own = count[_pair(keys, o_label[r], o_lca[r], width)]
                theirs = count[_pair(keys, o_partner[r], o_lca[r], width)]
                choices[k] += own * theirs
    return choices


@njit(cache=True)
def _cheapest(k0, k1, alone, side, label, o_lca, o_partner, keys, first, count, path_ptr, path_nodes, width, marks,
              lca_marks, stamp, f_side, f_node, f_lca, f_path, n_fixed):
    """The option of ``label`` (its rows ``k0:k1``, on ``side``) through a chosen LCA whose own and partner's
    paths add the fewest nodes to the graphs (ties: the first in the rows' order, then the paths'), a path already
    fixed for (side, node, LCA) the only one tried unless the label has one choice (``alone``): ``(row, own
    path, their path)``."""
    other = 1 - side
    best_cost, best_r, best_own, best_theirs = -1, -1, -1, -1
    for r in range(k0, k1):
        a = o_lca[r]
        if lca_marks[a + 1] != stamp:
            continue
        q = o_partner[r]
        own_pair = _pair(keys, label, a, width)
        their_pair = _pair(keys, q, a, width)
        own_fixed = _fixed(f_side, f_node, f_lca, f_path, n_fixed, side, label, a)
        other_fixed = _fixed(f_side, f_node, f_lca, f_path, n_fixed, other, q, a)
        if alone:  # nothing to choose
            own_fixed, other_fixed = -1, -1
        own_lo = first[own_pair] if own_fixed < 0 else own_fixed
        own_hi = first[own_pair] + count[own_pair] if own_fixed < 0 else own_fixed + 1
        their_lo = first[their_pair] if other_fixed < 0 else other_fixed
        their_hi = first[their_pair] + count[their_pair] if other_fixed < 0 else other_fixed + 1
        for own in range(own_lo, own_hi):
            own_cost = _new_nodes(own, path_ptr, path_nodes, marks[side], stamp)
            for theirs in range(their_lo, their_hi):
                cost = own_cost + _new_nodes(theirs, path_ptr, path_nodes, marks[other], stamp)
                if best_r < 0 or cost < best_cost:
                    best_cost, best_r, best_own, best_theirs = cost, r, own, theirs
    return best_r, best_own, best_theirs


@njit(cache=True)
def greedy_batch(o_inst, o_side, o_label, o_lca, o_partner, keys, first, count, path_ptr, path_nodes, width,
                 ignore, want_nodes):
    """The greedy minimal graphs of every instance of the option rows: ``(instances, sizes, graph_ptr,
    graph_nodes)``, ``sizes[i]`` = (|Gt|, |Gp|, |Gt ∩ Gp|) without node ``ignore`` (-2: none), and with
    ``want_nodes`` instance ``i``'s Gt nodes at ``graph_nodes[graph_ptr[2i]:graph_ptr[2i + 1]]``, its Gp nodes
    next. Each label (fewest (option, path) choices first, then side and label) takes the option among the
    chosen LCAs and the shortest paths adding the fewest new nodes (ties: the first by LCA, partner and path
    order); a path once chosen for a (side, node, LCA) is kept."""
    n = len(o_inst)
    marks = np.zeros((2, width + 1), np.int64)  # per side: the stamp of the instance whose graph holds a node
    graphs = np.empty((2, width + 1), np.int64)  # per side: the nodes of the instance's graph, sizes[side] of them
    sizes = np.zeros(2, np.int64)
    lca_marks = np.zeros(width + 1, np.int64)
    instances = []
    counts = []
    graph_ptr = [0]
    graph_nodes = []
    stamp = 0
    i0 = 0
    while i0 < n:
        i1 = i0
        while i1 < n and o_inst[i1] == o_inst[i0]:
            i1 += 1
        stamp += 1
        k_start = []
        k_end = []
        r = i0
        while r < i1:  # the keys (side, label), in (side, label) order
            s = r
            while r < i1 and o_side[r] == o_side[s] and o_label[r] == o_label[s]:
                r += 1
            k_start.append(s)
            k_end.append(r)
        ks, ke = np.array(k_start, np.int64), np.array(k_end, np.int64)
        n_keys = len(ks)
        _greedy_lcas(o_lca, ks, ke, lca_marks, stamp)
        choices = _choices(o_label, o_lca, o_partner, ks, ke, keys, count, width, lca_marks, stamp)
        order = np.argsort(choices * 2 * n + np.arange(n_keys), kind="mergesort")  # keys come in side, label order
        sizes[:] = 0
        for k in range(n_keys):
            _add(o_label[ks[k]], o_side[ks[k]], marks, stamp, graphs, sizes)
        f_side = np.empty(2 * n_keys, np.int64)
        f_node = np.empty(2 * n_keys, np.int64)
        f_lca = np.empty(2 * n_keys, np.int64)
        f_path = np.empty(2 * n_keys, np.int64)
        n_fixed = 0
        for k in order:
            side = o_side[ks[k]]
            other = 1 - side
            label = o_label[ks[k]]
            best_r, best_own, best_theirs = _cheapest(ks[k], ke[k], choices[k] == 1, side, label, o_lca, o_partner,
                                                      keys, first, count, path_ptr, path_nodes, width, marks,
                                                      lca_marks, stamp, f_side, f_node, f_lca, f_path, n_fixed)
            a, q = o_lca[best_r], o_partner[best_r]
            n_fixed = _fix(f_side, f_node, f_lca, f_path, n_fixed, side, label, a, best_own)
            n_fixed = _fix(f_side, f_node, f_lca, f_path, n_fixed, other, q, a, best_theirs)
            for path, at in ((best_own, side), (best_theirs, other)):
                for j in range(path_ptr[path], path_ptr[path + 1]):
                    _add(path_nodes[j], at, marks, stamp, graphs, sizes)
        n_t, n_p, n_both = 0, 0, 0
        for j in range(sizes[1]):
            if graphs[1, j] != ignore:
                n_t += 1
                if marks[0, graphs[1, j] + 1] == stamp:
                    n_both += 1
        for j in range(sizes[0]):
            if graphs[0, j] != ignore:
                n_p += 1
        instances.append(o_inst[i0])
        counts.append((n_t, n_p, n_both))
        if want_nodes:
            for side in (1, 0):
                for j in range(sizes[side]):
                    graph_nodes.append(graphs[side, j])
                graph_ptr.append(len(graph_nodes))
        i0 = i1
    out = np.empty((len(counts), 3), np.int64)
    for i in range(len(counts)):
        out[i, 0], out[i, 1], out[i, 2] = counts[i]
    return np.array(instances, np.int64), out, np.array(graph_ptr, np.int64), np.array(graph_nodes, np.int64)
