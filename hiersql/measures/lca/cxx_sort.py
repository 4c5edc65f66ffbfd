"""libstdc++'s ``std::sort`` of indices by keys, compiled with numba: the order HEMKit's C++ leaves equal keys in
(``docs/lca.md``), which the LCA graphs of :mod:`hiersql.measures.lca.hemkit_kernel` reproduce."""

from __future__ import annotations

import numpy as np
from numba import njit

_THRESHOLD = 16  # libstdc++'s _S_threshold


@njit(cache=True)
def cxx_sort_order(keys):
    """The permutation ``std::sort`` of libstdc++ leaves ``0..n-1`` in when comparing ``keys[i] < keys[j]``:
    introsort (median-of-three quicksort down to runs of 16, heapsort past ``2·floor(log2 n)`` levels), then
    insertion sort. Not stable: equal keys end in an order that depends on the input order."""
    a = np.empty(len(keys), np.int64)
    cxx_sort_into(a, keys)
    return a


@njit(cache=True)
def cxx_sort_into(a, keys):
    """:func:`cxx_sort_order` into ``a`` (as long as ``keys``)."""
    n = len(keys)
    for i in range(n):
        a[i] = i
    if n > 1:
        depth = 0
        m = n
        while m > 1:
            m >>= 1
            depth += 1
        _introsort(a, keys, 0, n, 2 * depth)
        _final_insertion_sort(a, keys, 0, n)


@njit(cache=True)
def _introsort(a, k, first, last, depth):
    """libstdc++'s ``__introsort_loop``, its recursion on the upper part kept on a stack (the parts are
    disjoint: the order they are sorted in changes nothing; numba's cache cannot hold a recursive function)."""
    todo = [(first, last, depth)]
    while todo:
        first, last, depth = todo.pop()
        while last - first > _THRESHOLD:
            if depth == 0:
                _heap_sort(a, k, first, last)
                break
            depth -= 1
            cut = _partition_pivot(a, k, first, last)
            todo.append((cut, last, depth))
            last = cut


@njit(cache=True)
def _partition_pivot(a, k, first, last):
    mid = first + (last - first) // 2
    x, y, z = first + 1, mid, last - 1
    if k[a[x]] < k[a[y]]:
        if k[a[y]] < k[a[z]]:
            pick = y
        elif k[a[x]] < k[a[z]]:
            pick = z
        else:
            pick = x
    elif k[a[x]] < k[a[z]]:
        pick = x
    elif k[a[y]] < k[a[z]]:
        pick = z
    else:
        pick = y
    a[first], a[pick] = a[pick], a[first]
    pivot = k[a[first]]
    lo, hi = first + 1, last
    while True:
        while k[a[lo]] < pivot:
            lo += 1
        hi -= 1
        while pivot < k[a[hi]]:
            hi -= 1
        if not lo < hi:
            return lo
        a[lo], a[hi] = a[hi], a[lo]
        lo += 1


@njit(cache=True)
def _final_insertion_sort(a, k, first, last):
    if last - first > _THRESHOLD:
        _insertion_sort(a, k, first, first + _THRESHOLD)
        for i in range(first + _THRESHOLD, last):
            _linear_insert(a, k, i)
    else:
        _insertion_sort(a, k, first, last)


@njit(cache=True)
def _insertion_sort(a, k, first, last):
    for i in range(first + 1, last):
        if k[a[i]] < k[a[first]]:
            value = a[i]
            for j in range(i, first, -1):
                a[j] = a[j - 1]
            a[first] = value
        else:
            _linear_insert(a, k, i)


@njit(cache=True)
def _linear_insert(a, k, i):
    value = a[i]
    while k[value] < k[a[i - 1]]:
        a[i] = a[i - 1]
        i -= 1
    a[i] = value


@njit(cache=True)
def _heap_sort(a, k, first, last):
    n = last - first
    if n >= 2:
        parent = (n - 2) // 2
        while True:
            _adjust_heap(a, k, first, parent, n, a[first + parent])
            if parent == 0:
                break
            parent -= 1
    while last - first > 1:
        last -= 1
        value = a[last]
        a[last] = a[first]
        _adjust_heap(a, k, first, 0, last - first, value)


@njit(cache=True)
def _adjust_heap(a, k, first, hole, n, value):
    top = hole
    child = hole
    while child < (n - 1) // 2:
        child = 2 * (child + 1)
        if k[a[first + child]] < k[a[first + child - 1]]:
            child -= 1
        a[first + hole] = a[first + child]
        hole = child
    if n % 2 == 0 and child == (n - 2) // 2:
        child = 2 * (child + 1)
        a[first + hole] = a[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and k[a[first + parent]] < k[value]:
        a[first + hole] = a[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    a[first + hole] = value
