"""HEMKit's LCA graphs of many instances at once, compiled with numba (rules S2-S7 of ``docs/lca.md``, on the
upward paths and most specific labels of :mod:`hiersql.measures.lca.hemkit_paths`: S0, S1).

Everything here works on arrays: nodes are dense indices ``0..N`` (``N`` is HEMKit's marker -1, beyond every
path), ``ids[v]`` their HEMKit ids (what every order and every sum of ids is taken on), ``par_ptr``/``par_idx``
the parents of each node in the order HEMKit visits them, and the labels of each instance in CSR form. See
:mod:`hiersql.measures.lca.hemkit` for the rules and the public functions.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .cxx_sort import cxx_sort_into
from .hemkit_paths import most_specific, upward_paths


# ---------------------------------------------------------------------------------------------- S2-S7
@njit(cache=True)
def _sort_by_id(values, ids):
    """``values`` sorted by their ids (an insertion sort: a handful of labels), in place; returns them."""
    for i in range(1, len(values)):
        v = values[i]
        j = i
        while j > 0 and ids[values[j - 1]] > ids[v]:
            values[j] = values[j - 1]
            j -= 1
        values[j] = v
    return values


@njit(cache=True)
def _hits(pnodes, start, size, marks, stamp):
    """How many nodes of the path ``pnodes[start:start + size]`` are marked with ``stamp``."""
    hits = 0
    for i in range(start, start + size):
        if marks[pnodes[i]] == stamp:
            hits += 1
    return hits


@njit(cache=True)
def _add_path(pnodes, start, size, graph, side, stamp, nodes, counts):
    """Add a path to graph ``side`` (marks ``graph[side]``; new nodes listed in ``nodes[side]``)."""
    for i in range(start, start + size):
        v = pnodes[i]
        if graph[side, v] != stamp:
            graph[side, v] = stamp
            nodes[side, counts[side]] = v
            counts[side] += 1


@njit(cache=True)
def _link(links, n, a, v):
    """S3: ancestor ``a`` links label ``v`` (the pairs ``links[:n]`` stay distinct); returns the new ``n``."""
    for i in range(n):
        if links[i, 0] == a and links[i, 1] == v:
            return n
    links[n, 0] = a
    links[n, 1] = v
    return n + 1


@njit(cache=True)
def _candidates(one_sided, others, first, pcount, pstart, plen, pnodes, psums, reach, stamp, cand, n_cand,
                bounds, tried, n_tried, tried_ptr, links, n_links, f_sum, f_row, h_low, h_pos, order):
    """S2, S3 for the labels ``one_sided`` of one side against the labels ``others`` of the other side:
    writes from ``cand[n_cand]`` on the rows ``(label, partner, own start, own length, their start, their
    length)`` of each label's pairs of minimum cost in HEMKit's order (``std::sort`` by id sum), into
    ``bounds[i]`` label ``i``'s range of rows, from ``tried[n_tried]`` on the nodes of its own candidate
    paths (label ``i``'s end at ``tried_ptr[i + 1]``), from ``links[n_links]`` on the links. Returns the new
    ``n_cand``, ``n_tried``, ``n_links``. ``f_sum``, ``f_row``, ``h_low``, ``h_pos``, ``order``: scratch."""
    their_paths = 0
    for z in others:
        their_paths += pcount[z]
        for p in range(first[z], first[z] + pcount[z]):
            for i in range(pstart[p], pstart[p] + plen[p]):
                reach[pnodes[i]] = stamp
    for li in range(len(one_sided)):
        x = one_sided[li]
        best = -1
        found = 0
        # f_row: partner, own start, own length, their start, their length
        for k in range(pcount[x]):
            s = pstart[first[x] + k]
            pos = 0
            while reach[pnodes[s + pos]] != stamp:  # the first hit (the marker closes every path)
                pos += 1
            node = pnodes[s + pos]
            own_sum = psums[s + pos]
            low = -1
            for z in others:
                for j in range(first[z], first[z] + pcount[z]):
                    t = pstart[j]
                    for at in range(plen[j]):
                        if pnodes[t + at] == node:
                            cost = pos + at
                            if cost < low or low < 0:
                                low = cost
                            if cost < best or best < 0:
                                best = cost
                                found = 0
                            if cost == best:
                                f_sum[found] = own_sum + psums[t + at]
                                f_row[found, 0] = z
                                f_row[found, 1] = s
                                f_row[found, 2] = pos + 1
                                f_row[found, 3] = t
                                f_row[found, 4] = at + 1
                                found += 1
                            break
            h_low[k] = low
            h_pos[k] = pos
        for k in range(pcount[x]):
            if h_low[k] == best:
                s = pstart[first[x] + k]
                for q in range(s, s + h_pos[k] + 1):
                    tried[n_tried] = pnodes[q]
                    n_tried += 1
        tried_ptr[li + 1] = n_tried
        bounds[li, 0] = n_cand
        cxx_sort_into(order[:found], f_sum[:found])
        for i in order[:found]:
            cand[n_cand, 0] = x
            cand[n_cand, 1:] = f_row[i]
            n_cand += 1
            a = pnodes[f_row[i, 1] + f_row[i, 2] - 1]
            n_links = _link(links, n_links, a, x)
            n_links = _link(links, n_links, a, f_row[i, 0])
        bounds[li, 1] = n_cand
    return n_cand, n_tried, n_links


@njit(cache=True)
def _overlap(pnodes, start, size, one_sided, tried, tried_ptr, skip):
    """The most nodes of a path found on the candidate paths of one label of ``one_sided`` other than
    ``skip`` (label ``i``'s at ``tried[tried_ptr[i]:tried_ptr[i + 1]]``)."""
    most = 0
    for li in range(len(one_sided)):
        if one_sided[li] == skip:
            continue
        count = 0
        for i in range(start, start + size):
            v = pnodes[i]
            for q in range(tried_ptr[li], tried_ptr[li + 1]):
                if tried[q] == v:
                    count += 1
                    break
        if count > most:
            most = count
    return most


@njit(cache=True)
def _sides(true, pred, gmark, pmark, now, ws):
    """The labels of one instance split by side: ``(gold_only, pred_only, both)``, views of ``ws[0:3]``."""
    gold_only = ws[0]
    n_gold = 0
    for x in true:
        if pmark[x] != now:
            gold_only[n_gold] = x
            n_gold += 1
    pred_only = ws[1]
    both = ws[2]
    n_pred = n_both = 0
    for x in pred:
        if gmark[x] != now:
            pred_only[n_pred] = x
            n_pred += 1
        else:
            both[n_both] = x
            n_both += 1
    return gold_only[:n_gold], pred_only[:n_pred], both[:n_both]


@njit(cache=True)
def _kept_ancestors(links, n_links, ids, linking, pairs_ws):
    """S4's ancestors in the order they serve: the ancestors of ``links[:n_links]`` by labels linked
    (descending), then id (descending), less each one whose every label another ancestor still links (a view of
    ``pairs_ws[:, 5]``; ``linking[label]``: the number of ancestors still linking it)."""
    ancs = pairs_ws[:, 2]
    n_linked = pairs_ws[:, 3]
    n_ancs = 0
    for i in range(n_links):
        a = links[i, 0]
        found = -1
        for q in range(n_ancs):
            if ancs[q] == a:
                found = q
                break
        if found < 0:
            ancs[n_ancs] = a
            n_linked[n_ancs] = 1
            n_ancs += 1
        else:
            n_linked[found] += 1
    order = pairs_ws[:, 4]  # insertion sort: a handful of ancestors
    for q in range(n_ancs):
        i = q
        while i > 0 and (n_linked[order[i - 1]] < n_linked[q]
                         or (n_linked[order[i - 1]] == n_linked[q] and ids[ancs[order[i - 1]]] < ids[ancs[q]])):
            order[i] = order[i - 1]
            i -= 1
        order[i] = q
    for i in range(n_links):
        linking[links[i, 1]] = 0
    for i in range(n_links):
        linking[links[i, 1]] += 1
    kept = pairs_ws[:, 5]
    n_kept = 0
    for q in order[:n_ancs]:
        a = ancs[q]
        redundant = True
        for i in range(n_links):
            if links[i, 0] == a and linking[links[i, 1]] == 1:
                redundant = False
                break
        if redundant:
            for i in range(n_links):
                if links[i, 0] == a:
                    linking[links[i, 1]] -= 1
        else:
            kept[n_kept] = a
            n_kept += 1
    return kept[:n_kept]


@njit(cache=True)
def _chosen(kept, links, n_links, ids, both, total, gmark, pmark, cmark, served, now, pairs_ws):
    """S4: the ancestors ``kept`` serve their linked labels (by id) not yet served, until all ``total`` labels
    are; an ancestor that serves one joins that label's side (``gmark``/``pmark``) and the chosen ancestors
    (``cmark``; a view of ``pairs_ws[:, 6]``, in the order chosen). Uses ``served``'s stamp ``now + 1``."""
    s4 = now + 1
    for x in both:
        served[0, x] = s4
        served[1, x] = s4
    n_served = 2 * len(both)
    chosen = pairs_ws[:, 6]
    n_chosen = 0
    labels = pairs_ws[:, 7]
    for a in kept:
        if n_served == total:
            break
        n_labels = 0
        for i in range(n_links):
            if links[i, 0] == a:
                labels[n_labels] = links[i, 1]
                n_labels += 1
        for v in _sort_by_id(labels[:n_labels], ids):
            for side in range(2):
                marks = gmark if side == 0 else pmark
                if marks[v] == now and served[side, v] != s4:
                    if cmark[a] != now:
                        cmark[a] = now
                        chosen[n_chosen] = a
                        n_chosen += 1
                    marks[a] = now
                    served[side, v] = s4
                    n_served += 1
    return chosen[:n_chosen]


@njit(cache=True)
def _paths(cand, c, side):
    """The gold and predicted paths of candidate row ``c`` of a ``side`` label: ``(gold start, gold length, pred
    start, pred length)``."""
    if side == 0:
        return cand[c, 2], cand[c, 3], cand[c, 4], cand[c, 5]
    return cand[c, 4], cand[c, 5], cand[c, 2], cand[c, 3]


@njit(cache=True)
def _best(group, side, cand, pnodes, gmark, pmark, cmark, now, gold_label, pred_label, gold_only, gold_tried,
          gold_ptr, pred_only, pred_tried, pred_ptr):
    """S5: the candidate row of ``group`` (one label's rows with one partner) whose pair is filed: of those
    ending at a chosen ancestor, the one whose paths hold the most nodes of HEMKit's two sets (``gmark``,
    ``pmark``: the labels and the ancestors chosen for them), then the most nodes of another label's candidate
    paths (:func:`_overlap`); ``-1`` when none ends at a chosen one."""
    n_usable = 0
    for c in group:
        if cmark[pnodes[cand[c, 2] + cand[c, 3] - 1]] == now:
            n_usable += 1
    best = -1
    common = -1
    recorded = 0
    for c in group:
        if cmark[pnodes[cand[c, 2] + cand[c, 3] - 1]] != now:
            continue
        if n_usable == 1:
            return c
        gs, gl, ps, pl = _paths(cand, c, side)
        count = _hits(pnodes, ps, pl, pmark, now) + _hits(pnodes, gs, gl, gmark, now)
        if count > common:
            best, common, recorded = c, count, 0
        elif count == common:
            overlap = (_overlap(pnodes, gs, gl, gold_only, gold_tried, gold_ptr, gold_label)
                       + _overlap(pnodes, ps, pl, pred_only, pred_tried, pred_ptr, pred_label))
            if overlap > recorded:
                best, recorded = c, overlap
    return best


@njit(cache=True)
def _file(side, bounds, cand, pnodes, ids, gmark, pmark, cmark, now, filed, n_filed, partners, group, gold_only,
          gold_tried, gold_ptr, pred_only, pred_tried, pred_ptr):
    """S5 for the labels of one ``side`` (their candidate rows at ``bounds``): one pair per (label, partner),
    filed under the ancestor of the label's last candidate with that partner when it was chosen, as rows
    ``(ancestor, node, side, path start, path length)`` of ``filed`` from ``n_filed`` on; returns the new
    ``n_filed``. ``partners``, ``group``: scratch."""
    for li in range(len(bounds)):
        c0, c1 = bounds[li, 0], bounds[li, 1]
        n_partners = 0
        for c in range(c0, c1):
            z = cand[c, 1]
            new = True
            for u in range(n_partners):
                if partners[u] == z:
                    new = False
                    break
            if new:
                partners[n_partners] = z
                n_partners += 1
        for z in _sort_by_id(partners[:n_partners], ids):
            n_group = 0
            for c in range(c0, c1):
                if cand[c, 1] == z:
                    group[n_group] = c
                    n_group += 1
            x = cand[group[0], 0]
            gold_label, pred_label = (x, z) if side == 0 else (z, x)
            last = group[n_group - 1]
            anc = pnodes[cand[last, 2] + cand[last, 3] - 1]
            if cmark[anc] != now:
                continue
            has_gold = has_pred = False
            for f in range(n_filed):
                if filed[f, 0] == anc:
                    if filed[f, 1] == gold_label:
                        has_gold = True
                    if filed[f, 1] == pred_label:
                        has_pred = True
            if has_gold and has_pred:
                continue
            best = _best(group[:n_group], side, cand, pnodes, gmark, pmark, cmark, now, gold_label, pred_label,
                         gold_only, gold_tried, gold_ptr, pred_only, pred_tried, pred_ptr)
            if best < 0:
                continue
            gs, gl, ps, pl = _paths(cand, best, side)
            if not has_pred:
                filed[n_filed, 0], filed[n_filed, 1], filed[n_filed, 2] = anc, pred_label, 1
                filed[n_filed, 3], filed[n_filed, 4] = ps, pl
                n_filed += 1
            if not has_gold:
                filed[n_filed, 0], filed[n_filed, 1], filed[n_filed, 2] = anc, gold_label, 0
                filed[n_filed, 3], filed[n_filed, 4] = gs, gl
                n_filed += 1
    return n_filed


@njit(cache=True)
def _draw(chosen, filed, n_filed, both, total, ids, served, pnodes, graph, now, gnodes, gcounts, entries):
    """S6: the chosen ancestors (by id) add the paths filed under them (by node id) of the labels not yet
    served to the graphs; an ancestor that adds paths of one side only adds the shortest path it has of the
    other side's labels already served. Uses ``served``'s stamp ``now + 3``; ``entries``: scratch."""
    s6 = now + 3
    for x in both:
        served[0, x] = s6
        served[1, x] = s6
    n_served = 2 * len(both)
    for a in _sort_by_id(chosen, ids):
        if n_served == total:
            break
        n_entries = 0
        for e in range(n_filed):
            if filed[e, 0] == a:
                i = n_entries  # in order of the nodes' ids
                while i > 0 and ids[filed[entries[i - 1], 1]] > ids[filed[e, 1]]:
                    entries[i] = entries[i - 1]
                    i -= 1
                entries[i] = e
                n_entries += 1
        added_gold = added_pred = 0
        small_gold = small_pred = -1
        for e in entries[:n_entries]:
            node, side, size = filed[e, 1], filed[e, 2], filed[e, 4]
            if served[side, node] == s6:
                small = small_gold if side == 0 else small_pred
                if small < 0 or size < filed[small, 4] or (size == filed[small, 4]
                                                           and ids[node] < ids[filed[small, 1]]):
                    if side == 0:
                        small_gold = e
                    else:
                        small_pred = e
            else:
                _add_path(pnodes, filed[e, 3], size, graph, side, now, gnodes, gcounts)
                if side == 0:
                    added_gold += 1
                else:
                    added_pred += 1
                served[side, node] = s6
                n_served += 1
        if added_gold and not added_pred and small_pred >= 0:
            _add_path(pnodes, filed[small_pred, 3], filed[small_pred, 4], graph, 1, now, gnodes, gcounts)
        if added_pred and not added_gold and small_gold >= 0:
            _add_path(pnodes, filed[small_gold, 3], filed[small_gold, 4], graph, 0, now, gnodes, gcounts)


@njit(cache=True)
def _instance(true, pred, ids, first, pcount, pstart, plen, pnodes, psums, reach, gmark, pmark, cmark, linking,
              served, graph, now, gnodes, gcounts, ws, rows_ws, pairs_ws):
    """S2-S6 for one instance with labels on one side only; ``gmark``/``pmark`` and ``graph`` hold the
    labels (stamp ``now``); uses the stamps ``now + 1 .. now + 3``; the nodes added to Gt and Gp are listed in
    ``gnodes`` (``gcounts`` of each side). ``ws``, ``rows_ws``, ``pairs_ws``: scratch, grown by the caller
    (:func:`_needs`)."""
    gold_only, pred_only, both = _sides(true, pred, gmark, pmark, now, ws)
    # S2, S3
    cand = rows_ws[:, :6]
    f_row = rows_ws[:, 6:11]
    f_sum = rows_ws[:, 11]
    order_ws = rows_ws[:, 12]
    links = pairs_ws[:, :2]
    gold_bounds = ws[3:5].T[:len(gold_only)]
    pred_bounds = ws[5:7].T[:len(pred_only)]
    gold_ptr = ws[7]
    pred_ptr = ws[8]
    gold_tried = ws[9]
    pred_tried = ws[10]
    h_low = ws[11]
    h_pos = ws[12]
    gold_ptr[0] = pred_ptr[0] = 0
    n_cand, _, n_links = _candidates(gold_only, pred, first, pcount, pstart, plen, pnodes, psums, reach, now + 1,
                                     cand, 0, gold_bounds, gold_tried, 0, gold_ptr, links, 0, f_sum, f_row, h_low,
                                     h_pos, order_ws)
    n_cand, _, n_links = _candidates(pred_only, true, first, pcount, pstart, plen, pnodes, psums, reach, now + 2,
                                     cand, n_cand, pred_bounds, pred_tried, 0, pred_ptr, links, n_links, f_sum,
                                     f_row, h_low, h_pos, order_ws)
    # S4
    total = len(true) + len(pred)
    kept = _kept_ancestors(links, n_links, ids, linking, pairs_ws)
    chosen = _chosen(kept, links, n_links, ids, both, total, gmark, pmark, cmark, served, now, pairs_ws)
    # S5
    filed = pairs_ws[:, 8:13]
    n_filed = 0
    for side in range(2):
        n_filed = _file(side, gold_bounds if side == 0 else pred_bounds, cand, pnodes, ids, gmark, pmark, cmark,
                        now, filed, n_filed, rows_ws[:, 13], rows_ws[:, 14], gold_only, gold_tried, gold_ptr,
                        pred_only, pred_tried, pred_ptr)
    # S6
    _draw(chosen, filed, n_filed, both, total, ids, served, pnodes, graph, now, gnodes, gcounts, pairs_ws[:, 13])


@njit(cache=True)
def _needs(true, pred, first, pcount, plen):
    """The scratch one instance needs: ``(width of ws, rows of rows_ws)`` (:func:`_instance`); the rows bound
    the candidate pairs, twice the product of the paths of both sides."""
    width = max(len(true), len(pred)) + 1
    paths_true = paths_pred = nodes = 0
    for side in range(2):
        for x in true if side == 0 else pred:
            if side == 0:
                paths_true += pcount[x]
            else:
                paths_pred += pcount[x]
            width = max(width, pcount[x])
            for p in range(first[x], first[x] + pcount[x]):
                nodes += plen[p]
    return max(width, nodes), max(1, 2 * paths_true * paths_pred)


@njit(cache=True)
def _emit(graph, gnodes, gcounts, now, ignore, out_node, out_side, n_out):
    """The nodes of one instance's graphs (stamp ``now``) appended to ``out_node``/``out_side`` from ``n_out`` on
    (grown when full; node ``ignore`` left out): ``(out_node, out_side, n_out, |Gt|, |Gp|, |Gt ∩ Gp|)``."""
    if n_out + gcounts[0] + gcounts[1] > len(out_node):
        grown = max(2 * len(out_node), n_out + gcounts[0] + gcounts[1])
        node_buf = np.empty(grown, np.int64)
        node_buf[:n_out] = out_node[:n_out]
        out_node = node_buf
        side_buf = np.empty(grown, np.int64)
        side_buf[:n_out] = out_side[:n_out]
        out_side = side_buf
    nt = npred = nb = 0
    for i in range(gcounts[0]):
        v = gnodes[0, i]
        if v == ignore:
            continue
        nt += 1
        in_both = graph[1, v] == now
        nb += in_both
        out_node[n_out] = v
        out_side[n_out] = 3 if in_both else 1
        n_out += 1
    for i in range(gcounts[1]):
        v = gnodes[1, i]
        if v == ignore:
            continue
        npred += 1
        if graph[0, v] != now:
            out_node[n_out] = v
            out_side[n_out] = 2
            n_out += 1
    return out_node, out_side, n_out, nt, npred, nb


@njit(cache=True, nogil=True)
def graphs_many(par_ptr, par_idx, ids, gold_ptr, gold_idx, pred_ptr, pred_idx, max_distance, drop_distance,
                ignore):
    """HEMKit's graphs of every instance ``i`` (labels ``gold_idx[gold_ptr[i]:gold_ptr[i + 1]]``, the same
    for ``pred``): ``(counts, out_ptr, out_node, out_side)`` with ``counts[i] = (|Gt|, |Gp|, |Gt ∩ Gp|)``
    (node ``ignore`` left out; < 0: none) and the nodes of both graphs of instance ``i`` at
    ``out_node[out_ptr[i]:out_ptr[i + 1]]`` (``out_side``: 1 in Gt only, 2 in Gp only, 3 in both).
    ``max_distance``, ``drop_distance``: < 0 for no limit. Node ``len(par_ptr) - 1`` is the marker."""
    size = len(par_ptr)
    wanted = np.zeros(size, np.bool_)
    wanted[gold_idx] = True
    wanted[pred_idx] = True
    first, pcount, pstart, plen, pnodes, psums = upward_paths(par_ptr, par_idx, ids, wanted, max_distance)
    seen = np.zeros(size, np.int64)
    above = np.zeros(size, np.int64)
    queue = np.empty(size, np.int64)
    reach = np.zeros(size, np.int64)
    gmark = np.zeros(size, np.int64)  # HEMKit's gold set: the true labels and the ancestors chosen for them
    pmark = np.zeros(size, np.int64)
    cmark = np.zeros(size, np.int64)
    linking = np.zeros(size, np.int64)
    served = np.zeros((2, size), np.int64)
    graph = np.zeros((2, size), np.int64)
    gnodes = np.empty((2, size), np.int64)
    gcounts = np.zeros(2, np.int64)
    ws = np.zeros((13, 16), np.int64)  # grown as instances need (_needs)
    rows_ws = np.zeros((16, 15), np.int64)
    pairs_ws = np.zeros((32, 14), np.int64)
    stamp = 0
    m = len(gold_ptr) - 1
    counts = np.zeros((m, 3), np.int64)
    out_ptr = np.zeros(m + 1, np.int64)
    out_node = np.empty(max(16, 4 * (len(gold_idx) + len(pred_idx))), np.int64)
    out_side = np.empty(len(out_node), np.int64)
    n_out = 0
    for inst in range(m):
        true, stamp = most_specific(gold_idx[gold_ptr[inst]:gold_ptr[inst + 1]], par_ptr, par_idx,
                                     drop_distance, seen, above, queue, stamp)
        pred, stamp = most_specific(pred_idx[pred_ptr[inst]:pred_ptr[inst + 1]], par_ptr, par_idx,
                                     drop_distance, seen, above, queue, stamp)
        true = _sort_by_id(true, ids)
        pred = _sort_by_id(pred, ids)
        stamp += 1
        now = stamp
        stamp += 3
        gcounts[0] = gcounts[1] = 0
        for x in true:
            gmark[x] = now
            graph[0, x] = now
            gnodes[0, gcounts[0]] = x
            gcounts[0] += 1
        for x in pred:
            pmark[x] = now
            graph[1, x] = now
            gnodes[1, gcounts[1]] = x
            gcounts[1] += 1
        shared = 0
        for x in pred:
            if gmark[x] == now:
                shared += 1
        if len(true) + len(pred) > 2 * shared and len(true) and len(pred):
            width, rows = _needs(true, pred, first, pcount, plen)
            if width > ws.shape[1]:
                ws = np.zeros((13, max(width, 2 * ws.shape[1])), np.int64)
            if rows > len(rows_ws):
                rows = max(rows, 2 * len(rows_ws))
                rows_ws = np.zeros((rows, 15), np.int64)
                pairs_ws = np.zeros((2 * rows, 14), np.int64)
            _instance(true, pred, ids, first, pcount, pstart, plen, pnodes, psums, reach, gmark, pmark, cmark,
                      linking, served, graph, now, gnodes, gcounts, ws, rows_ws, pairs_ws)
        out_node, out_side, n_out, nt, npred, nb = _emit(graph, gnodes, gcounts, now, ignore, out_node, out_side,
                                                         n_out)
        counts[inst, 0], counts[inst, 1], counts[inst, 2] = nt, npred, nb
        out_ptr[inst + 1] = n_out
    return counts, out_ptr, out_node[:n_out].copy(), out_side[:n_out].copy()
