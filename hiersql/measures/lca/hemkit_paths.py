"""HEMKit's paths and labels, compiled with numba (rules S0 and S1 of ``docs/lca.md``): the upward paths of the
nodes an LCA graph needs, and the most specific labels of an instance, on the arrays of
:mod:`hiersql.measures.lca.hemkit_kernel` (dense node indices, HEMKit ids, parents in CSR form)."""

from __future__ import annotations

import numpy as np
from numba import njit


# ---------------------------------------------------------------------------------------------- S1
@njit(cache=True)
def upward_paths(par_ptr, par_idx, ids, wanted, max_distance):
    """S1 for the nodes with ``wanted[v]``: every simple upward path (depth first, parents in the given
    order), ending at a node without parents, after ``max_distance`` edges (< 0: no limit) or before a node it
    already holds, then closed by the marker (index ``N``). Returns ``(first, count, start, length, nodes,
    sums)``: the paths of ``v`` are ``first[v] .. first[v] + count[v] - 1``; path ``p`` holds
    ``nodes[start[p]:start[p] + length[p]]`` (the label first), ``sums`` the prefix sums of their ids."""
    n = len(par_ptr) - 1
    beyond = n
    first = np.full(n + 1, -1, np.int64)
    count = np.zeros(n + 1, np.int64)
    start = [np.int64(0)][:0]
    length = [np.int64(0)][:0]
    nodes = [np.int64(0)][:0]
    sums = [np.int64(0)][:0]
    buf = np.empty(64, np.int64)
    stack = np.empty((64, 3), np.int64)  # (offset in buf, length, extend)
    for v in range(n):
        if not wanted[v]:
            continue
        first[v] = len(start)
        used = 1
        buf[0] = v
        stack[0, 0], stack[0, 1], stack[0, 2] = 0, 1, 1
        top = 1
        while top:
            top -= 1
            off, size, extend = stack[top, 0], stack[top, 1], stack[top, 2]
            last = buf[off + size - 1]
            above = par_ptr[last + 1] - par_ptr[last] if extend else 0
            if above == 0 or (max_distance >= 0 and size - 1 == max_distance):
                start.append(len(nodes))
                length.append(size + 1)
                total = 0
                for i in range(size):
                    total += ids[buf[off + i]]
                    nodes.append(buf[off + i])
                    sums.append(total)
                nodes.append(beyond)
                sums.append(total + ids[beyond])
                count[v] += 1
                continue
            for q in range(par_ptr[last + 1] - 1, par_ptr[last] - 1, -1):  # the first parent on top
                parent = par_idx[q]
                cycle = False
                for i in range(size):
                    if buf[off + i] == parent:
                        cycle = True
                        break
                if top == len(stack):
                    grown = np.empty((2 * len(stack), 3), np.int64)
                    grown[:top] = stack
                    stack = grown
                if cycle:
                    stack[top, 0], stack[top, 1], stack[top, 2] = off, size, 0
                else:
                    if used + size + 1 > len(buf):
                        grown_buf = np.empty(2 * (used + size + 1), np.int64)
                        grown_buf[:used] = buf[:used]
                        buf = grown_buf
                    buf[used:used + size] = buf[off:off + size]
                    buf[used + size] = parent
                    stack[top, 0], stack[top, 1], stack[top, 2] = used, size + 1, 1
                    used += size + 1
                top += 1
    return (first, count, np.array(start, np.int64), np.array(length, np.int64), np.array(nodes, np.int64),
            np.array(sums, np.int64))


# ---------------------------------------------------------------------------------------------- S0
@njit(cache=True)
def most_specific(labels, par_ptr, par_idx, drop_distance, seen, above, queue, stamp):
    """S0: ``labels`` (deduplicated) without those that are ancestors, at most ``drop_distance`` edges up
    (< 0: any distance), of another of them. ``seen``, ``above``, ``queue``: scratch; returns the labels kept
    and the last stamp used."""
    stamp += 1
    n = 0
    uniq = np.empty(len(labels), np.int64)
    for x in labels:
        if seen[x] != stamp:
            seen[x] = stamp
            uniq[n] = x
            n += 1
    if n < 2:
        return uniq[:n], stamp
    stamp += 1
    mark = stamp  # the ancestors of any label
    for x in uniq[:n]:
        stamp += 1
        seen[x] = stamp
        queue[0] = x
        lo, hi = 0, 1
        steps = 0
        while lo < hi and (drop_distance < 0 or steps < drop_distance):  # one level of parents at a time
            steps += 1
            end = hi
            for i in range(lo, end):
                u = queue[i]
                for q in range(par_ptr[u], par_ptr[u + 1]):
                    p = par_idx[q]
                    if seen[p] != stamp:
                        seen[p] = stamp
                        queue[hi] = p
                        hi += 1
                    if p != x:
                        above[p] = mark
            lo = end
    kept = 0
    for x in uniq[:n]:
        if above[x] != mark:
            uniq[kept] = x
            kept += 1
    return uniq[:kept], stamp
