"""Adapters from other libraries' label layouts to the label sets hiersql takes.

- HiClass (Miranda et al. 2023) writes labels as padded path arrays: shape ``(n, depth)``, one root-first path
  per instance, or ``(n, k, depth)``, up to ``k`` paths per instance (multi-label), padded with ``""`` (a
  shorter path, or a missing path). :func:`labels_from_paths` turns them into one label set per instance (the
  last label of each path) and :func:`taxonomy_from_paths` into the taxonomy edges they imply.
- hiereval-style paths are root-first lists with a placeholder (``"UNK"``) for the levels below the deepest
  known label; :func:`labels_from_unk_paths` does the same for them.
- scikit-learn's multilabel-indicator matrices (one column per class) become label sets by
  :func:`labels_from_indicator` with the classes of the columns.

A node is named by its label (``node="label"``, when labels are unique across the taxonomy, as HiClass's
metrics assume: they compare sets of label strings) or by its whole path joined with ``separator``
(``node="path"``, when the same label occurs in several branches).

HiClass's hierarchical precision, recall and F1 (``hiclass.metrics``) take the path entries of an instance as
its augmented set, so on these label sets they equal hiersql's set-based measures: HiClass ``micro`` =
hiersql ``average="micro"`` (pooled counts), HiClass ``macro`` = hiersql ``average="macro"`` (the mean of the
per-instance values, scikit-learn's ``samples``), both F1 being hiersql's ``hierarchical_f1``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from .arguments import is_indicator

NODE_NAMES = ("label", "path")


def _clean(path: Sequence[Any], pad: str, row: int) -> list[str]:
    """The labels of one root-first path before its padding; a label after padding is an error."""
    labels = ["" if x is None else str(x) for x in path]
    end = next((i for i, x in enumerate(labels) if x == pad), len(labels))
    if any(x != pad for x in labels[end:]):
        raise ValueError(f"path {row}: label {next(x for x in labels[end:] if x != pad)!r} after the padding "
                         f"{pad!r}: {labels}")
    return labels[:end]


def _node(labels: list[str], node: str, separator: str) -> str:
    return labels[-1] if node == "label" else separator.join(labels)


def _paths_per_instance(paths: Any) -> list[list[Sequence[Any]]]:
    """``(n, depth)`` → one path per instance; ``(n, k, depth)`` → k paths per instance."""
    array = np.asarray(paths, dtype=object)
    if array.ndim == 2:
        return [[row] for row in array]
    if array.ndim == 3:
        return [list(rows) for rows in array]
    raise ValueError(f"paths must have shape (n, depth) or (n, k, depth), got {array.shape}")


def labels_from_paths(paths: Any, pad: str = "", node: str = "label", separator: str = "::") -> list[list[str]]:
    """HiClass's padded path arrays → one label set per instance: the deepest label of each path.

    Parameters
    ----------
    paths:
        Array-like of shape ``(n, depth)`` or ``(n, k, depth)`` of root-first paths, padded with ``pad``.
    pad:
        The padding value (HiClass: ``""``). A label after padding is a ``ValueError``; an all-padding path
        adds nothing (an instance whose paths are all padding has an empty set).
    node:
        ``"label"``: a node is named by its label; ``"path"``: by its path joined with ``separator``
        (as :func:`taxonomy_from_paths` names them).
    """
    if node not in NODE_NAMES:
        raise ValueError(f"node must be one of {NODE_NAMES}, got {node!r}")
    out = []
    for i, rows in enumerate(_paths_per_instance(paths)):
        labels = [_clean(row, pad, i) for row in rows]
        out.append(list(dict.fromkeys(_node(x, node, separator) for x in labels if x)))
    return out


def labels_from_indicator(matrix: Any, classes: Sequence[Any]) -> list[list[Any]]:
    """An indicator matrix → one label set per row: the ``classes`` of its columns that hold 1 (or ``True``),
    in column order (scikit-learn's multilabel-indicator format: ``MultiLabelBinarizer().fit_transform(y)``
    with ``classes`` its ``classes_``). ``matrix``: a 2-D array-like or a SciPy sparse matrix of 0/1 or bool of
    shape ``(n, len(classes))``; another value or shape is a ``ValueError``."""
    if hasattr(matrix, "toarray"):
        matrix = matrix.toarray()
    array = np.asarray(matrix)
    names = list(classes)
    if array.ndim != 2 or array.shape[1] != len(names):
        raise ValueError(f"matrix must have shape (n, {len(names)}) (one column per class), got {array.shape}")
    if array.dtype.kind != "b" and not is_indicator(array):
        raise ValueError("matrix must hold 0/1 or bool only (an indicator matrix)")
    rows, columns = np.nonzero(array)
    out: list[list[Any]] = [[] for _ in range(array.shape[0])]
    for row, column in zip(rows.tolist(), columns.tolist(), strict=True):
        out[row].append(names[column])
    return out


def labels_from_unk_paths(paths: Iterable[Any], unk: str = "UNK", node: str = "label",
                          separator: str = "::") -> list[list[str]]:
    """hiereval-style root-first paths, ``unk`` standing for the levels below the deepest known label, → one
    label set per instance (the deepest known label). ``paths`` holds one path per instance (a sequence of
    labels) or several (a sequence of such sequences); the paths may differ in length. An all-``unk`` path is
    an empty set; a label after ``unk`` is a ``ValueError``. ``node`` and ``separator`` as in
    :func:`labels_from_paths`."""
    if node not in NODE_NAMES:
        raise ValueError(f"node must be one of {NODE_NAMES}, got {node!r}")
    out = []
    for i, item in enumerate(paths):
        rows = [item] if not len(item) or isinstance(item[0], str) or item[0] is None else list(item)
        labels = [_clean(row, unk, i) for row in rows]
        out.append(list(dict.fromkeys(_node(x, node, separator) for x in labels if x)))
    return out


def taxonomy_from_paths(*arrays: Any, pad: str = "", node: str = "label", separator: str = "::",
                        root: str = "<root>") -> list[tuple[str, str]]:
    """The ``(parent, child)`` edges that the paths of HiClass-style arrays (``y_true``, ``y_pred``, ...)
    imply, in order of first appearance, with ``root`` above the first-level labels (so that a first-level
    label without children is a node too). Pass them to :meth:`hiersql.Taxonomy.from_edges`."""
    if node not in NODE_NAMES:
        raise ValueError(f"node must be one of {NODE_NAMES}, got {node!r}")
    edges: dict[tuple[str, str], None] = {}
    for array in arrays:
        for i, rows in enumerate(_paths_per_instance(array)):
            for row in rows:
                labels = _clean(row, pad, i)
                parent = root
                for k in range(1, len(labels) + 1):
                    child = _node(labels[:k], node, separator)
                    edges[(parent, child)] = None
                    parent = child
    return list(edges)
