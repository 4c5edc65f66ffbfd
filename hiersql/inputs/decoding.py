"""Decoding per-node scores into labels, and the transposon score files (SPEC §6).

A score matrix has one row per instance and one column per taxonomy node (``columns`` names them). Two
top-down policies walk from the root:

- :func:`top_down_argmax`: at each level, the child (among the children of the node chosen above) with the
  highest score; the first in column order wins ties; the walk goes on while that score is ``>= threshold``
  (default 0, so with probabilities it always ends at a leaf: an all-zero level still takes its first child).
  This is how Riehl et al. decode both the 0/1 truth and the predicted probabilities of Table III.
- :func:`top_down_threshold`: the same walk with a threshold (default 0.5), which may stop at an inner node
  or at the root (an empty prediction).

The deepest chosen node is the label of an instance; :func:`long_columns` (a mapping of columns, no pandas)
and :func:`to_long` (a DataFrame) turn labels into the long ``instance_id, label`` table that
:meth:`hiersql.inputs.store.Store.add_truth`/``add_predictions`` read.

Transposon files (Riehl et al. Table III): 18 whitespace-separated numbers per line in the column order of
:data:`TRANSPOSON_COLUMNS`; data ends at the first blank line (two prediction files carry an ``AU(PRC)``
trailer after one). The tree is :func:`transposon_taxonomy`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import DataWarning, InputError
from . import rules

if TYPE_CHECKING:
    import pandas as pd

    from .taxonomy import Taxonomy

TRANSPOSON_COLUMNS = (
    "1", "1/1", "1/1/1", "1/1/2", "1/1/3", "1/2", "1/2/1", "1/2/2",
    "2", "2/1", "2/1/1", "2/1/2", "2/1/3", "2/1/4", "2/1/5", "2/1/6", "2/2", "2/3",
)
DECODERS = ("top_down_argmax", "top_down_threshold")


def transposon_taxonomy(root: str = "root") -> Taxonomy:
    """The 18-class transposon tree of Riehl et al.: ``root > {1, 2}``, every other node below the node
    named by its name up to the last ``/`` (``1/1/2`` below ``1/1``)."""
    from .taxonomy import Taxonomy

    return Taxonomy.from_edges(
        [(c.rpartition("/")[0] or root, c) for c in TRANSPOSON_COLUMNS], source="<transposon tree>"
    )


def read_scores(path: str | Path, n_columns: int = len(TRANSPOSON_COLUMNS)) -> np.ndarray:
    """Read a whitespace-separated score matrix (one instance per line) as a float array.

    Data ends at the first blank line; non-blank lines after it are ignored with a
    :class:`~hiersql.errors.DataWarning` giving their count. A line with another number of fields than
    ``n_columns``, or a field that is not a number, is an :class:`~hiersql.errors.InputError` naming the line.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError("score file not found", path)
    with path.open(encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    end = next((i for i, line in enumerate(lines) if not line.strip()), len(lines))
    trailer = sum(1 for line in lines[end:] if line.strip())
    if trailer:
        warnings.warn(f"{path}: ignored {trailer} line(s) after the blank line {end + 1}", DataWarning,
                      stacklevel=2)
    if end == 0:
        raise InputError("score file is empty", path)
    try:  # numpy's C parser, 3 times faster; on failure the Python parser names the line at fault
        scores = np.loadtxt(lines, dtype=float, comments=None, max_rows=end, ndmin=2)
        if scores.shape[1] != n_columns:
            raise ValueError
    except ValueError:
        scores = _parse_lines(path, lines[:end], n_columns)
    if np.isnan(scores).any():
        row = int(np.flatnonzero(np.isnan(scores).any(axis=1))[0])
        raise InputError("score is NaN", path, row + 1, lines[row])
    return scores


def top_down_argmax(scores: np.ndarray, columns: Sequence[str], taxonomy: Taxonomy,
                    threshold: float = 0.0) -> list[str | None]:
    """Per row, the deepest node of the top-down argmax walk (see the module docstring); ``None`` when not
    even a child of the root reaches ``threshold``.

    Parameters
    ----------
    scores:
        ``(n_instances, len(columns))`` array.
    columns:
        The taxonomy node of each column; nodes without a column are never chosen. Ties go to the first
        column.
    taxonomy:
        The tree or DAG walked from its root (children of the node chosen above).
    threshold:
        A child is taken only when its score is ``>= threshold``.
    """
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 2 or scores.shape[1] != len(columns):
        raise ValueError(f"scores must have shape (n, {len(columns)}), got {scores.shape}")
    unknown = [c for c in columns if c not in taxonomy]
    if unknown:
        raise InputError("score column is not a taxonomy node", "<columns>", value=unknown[0])
    col = {c: i for i, c in enumerate(columns)}
    nodes = [taxonomy.root, *columns]
    node_id = {n: i for i, n in enumerate(nodes)}
    current = np.zeros(len(scores), dtype=np.int64)  # index into nodes; 0 = the root
    moving = np.ones(len(scores), dtype=bool)
    while moving.any():
        for node in np.unique(current[moving]):
            rows = np.flatnonzero(moving & (current == node))
            kids = sorted(col[c] for c in taxonomy.children(nodes[node]) if c in col)
            if not kids:
                moving[rows] = False
                continue
            sub = scores[np.ix_(rows, kids)]
            best = sub.argmax(axis=1)
            ok = sub[np.arange(len(rows)), best] >= threshold
            current[rows[ok]] = [node_id[columns[kids[b]]] for b in best[ok]]
            moving[rows[~ok]] = False
    return [None if c == 0 else nodes[c] for c in current]


def top_down_threshold(scores: np.ndarray, columns: Sequence[str], taxonomy: Taxonomy,
                       threshold: float = 0.5) -> list[str | None]:
    """Threshold decoding: the top-down argmax walk that stops where the best child scores below
    ``threshold`` (an inner node, or ``None`` at the root)."""
    return top_down_argmax(scores, columns, taxonomy, threshold)


def decode(scores: np.ndarray, columns: Sequence[str], taxonomy: Taxonomy, policy: str = "top_down_argmax",
           threshold: float | None = None) -> list[str | None]:
    """Decode with ``policy`` (one of :data:`DECODERS`); ``threshold`` overrides the policy's default."""
    if policy not in DECODERS:
        raise ValueError(f"decode policy must be one of {DECODERS}, got {policy!r}")
    fn = top_down_argmax if policy == "top_down_argmax" else top_down_threshold
    return fn(scores, columns, taxonomy) if threshold is None else fn(scores, columns, taxonomy, threshold)


def to_long(labels: Sequence[str | None], taxonomy: Taxonomy | None = None, start: int = 1) -> pd.DataFrame:
    """The rows of :func:`long_columns` as a DataFrame ``instance_id, label``."""
    import pandas as pd

    return pd.DataFrame(long_columns(labels, taxonomy, start))


def long_columns(labels: Sequence[str | None], taxonomy: Taxonomy | None = None, start: int = 1
                 ) -> dict[str, list[str]]:
    """``{"instance_id": [...], "label": [...]}``, the long table as a mapping of columns (which
    :meth:`hiersql.inputs.store.Store.add_truth`/``add_predictions`` read without pandas): instance ids are row numbers
    from ``start`` (as strings, like the line numbers of a file); ``None`` gives no row (an empty set). With
    ``taxonomy`` every label is written with its ancestors on its shortest root path (root excluded), root
    first, as in ``data/canonical``."""
    depth = taxonomy.depths() if taxonomy is not None else {}
    chains = {label: _root_chain(label, taxonomy, depth) if taxonomy is not None else [label]
              for label in set(labels) - {None}}
    return {"instance_id": [str(i) for i, label in enumerate(labels, start=start) if label is not None
                            for _ in chains[label]],
            "label": [node for label in labels if label is not None for node in chains[label]]}


def read_transposon(path: str | Path, policy: str = "top_down_argmax", threshold: float | None = None,
                    taxonomy: Taxonomy | None = None, binary: bool = False) -> dict[str, list[str]]:
    """Read a transposon file (``truelabels.txt`` or ``predictions_<MODEL>.txt``) and decode it: the long
    table as a mapping of columns ``{"instance_id": [...], "label": [...]}`` (instance id = line number,
    label = the deepest decoded node; see :func:`long_columns`) to pass to
    :meth:`~hiersql.inputs.store.Store.add_truth` or ``add_predictions`` (``pandas.DataFrame(...)`` makes it a
    DataFrame). With ``binary=True`` (a truth file) a value other than 0 or 1 is an
    :class:`~hiersql.errors.InputError` naming its line."""
    tax = taxonomy or transposon_taxonomy()
    scores = read_scores(path)
    if binary and not np.isin(scores, (0.0, 1.0)).all():
        row, col = (int(i[0]) for i in np.nonzero(~np.isin(scores, (0.0, 1.0))))
        raise InputError(f"truth value of column {TRANSPOSON_COLUMNS[col]!r} is not 0 or 1", path, row + 1,
                         float(scores[row, col]))
    return long_columns(decode(scores, TRANSPOSON_COLUMNS, tax, policy, threshold))


def _root_chain(label: str, taxonomy: Taxonomy, depth: dict[str, int]) -> list[str]:
    """``label`` and its ancestors on a shortest root path, root first, the root left out."""
    chain = [label]
    while taxonomy.parents(chain[0]):
        chain.insert(0, min(taxonomy.parents(chain[0]), key=lambda p: depth[p]))
    return chain[1:]


def _parse_lines(path: Path, lines: list[str], n_columns: int) -> np.ndarray:
    """The score matrix of ``lines`` parsed in Python; an :class:`~hiersql.errors.InputError` names the first
    line without ``n_columns`` fields or the first field that is not a number."""
    fields = [line.split() for line in lines]
    short = next((i for i, f in enumerate(fields) if len(f) != n_columns), None)
    if short is not None:
        raise InputError(f"expected {n_columns} numbers, found {len(fields[short])}", path, short + 1,
                         lines[short])
    try:
        return np.array(fields, dtype=float)
    except ValueError:
        i, bad = next((i, x) for i, f in enumerate(fields) for x in f if not _is_number(x))
        raise InputError(rules.SCORE_NOT_A_NUMBER, path, i + 1, bad) from None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
