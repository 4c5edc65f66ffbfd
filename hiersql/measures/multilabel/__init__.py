"""The multi-label confusion matrix of Krstinić et al. (Algorithm 1), its precision and recall matrices and
the per-class precision and recall read from it.

A thin wrapper over ``multilabel.sql``; see its header for the four scenarios. Rows are true labels,
columns predicted labels. hiersql adds a ``∅`` row and column (:data:`EMPTY`) for empty sets, which the
paper excludes (it assumes |Y|, |Z| > 0): an empty set is replaced by ``{∅}`` and Algorithm 1 applies
unchanged, so a missed instance puts 1 per true label in the ``∅`` column, a prediction for an instance with
no truth puts 1/|Z| per predicted label in the ``∅`` row, and an instance with both sets empty counts 1 at
(∅, ∅).

This is not a metric family with :class:`~hiersql.measures.Row` values: it returns matrices.

References
----------
Krstinić, Braović, Šerić, Božić-Štulić (2020), "Multi-label classifier performance evaluation with confusion
matrix", §3.2-3.3, eq. (11)-(17), Algorithm 1, Tables 4-7. SPEC §7.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from .. import as_engine
from ..flat import LabelSets, label_set_store

if TYPE_CHECKING:
    import pandas as pd

    from ...engines import Engine
    from ...inputs.store import Store

EMPTY = "∅"
KINDS = ("raw", "recall", "precision")


def _frame(source: Store | Engine, query: str, depth: int | None, zero_division: float, order: str
           ) -> pd.DataFrame:
    """The rows of query ``query`` of ``multilabel.sql``, sorted by ``order``."""
    if depth is not None and depth < 0:
        raise ValueError("depth must be >= 0")
    engine = as_engine(source)
    if EMPTY in engine.taxonomy().nodes:
        raise ValueError(f"the taxonomy has a node named {EMPTY!r}, the name of the empty-set row/column")
    params = {"empty": EMPTY, "depth": depth, "zero_division": float(zero_division)}
    return engine.frame("multilabel", query, params, order=order)


def confusion_long(source: Store | Engine, *, depth: int | None = None, zero_division: float = 0.0) -> pd.DataFrame:
    """The non-zero cells of every system's matrix: columns ``system, true_label, pred_label, value`` (raw
    matrix M), ``recall`` (cell / row sum) and ``precision`` (cell / column sum).

    Parameters
    ----------
    source:
        A store with a taxonomy, the truth and one or more systems, or an engine holding them.
    depth:
        Replace every label by its ancestors at this depth first (labels shallower than ``depth`` stay).
    zero_division:
        Value of 0/0 ratios.
    """
    return _frame(source, "ml_normalized", depth, zero_division, "system, true_label, pred_label")


def class_scores(source: Store | Engine, *, depth: int | None = None, zero_division: float = 0.0) -> pd.DataFrame:
    """Per (system, label of a row or column): ``row_total, column_total, diagonal`` and the per-class
    ``precision`` (diagonal / column sum) and ``recall`` (diagonal / row sum) of Krstinić Table 5."""
    return _frame(source, "ml_class", depth, zero_division, "system, label")


def label_order(store: Store, labels: Iterable[str]) -> list[str]:
    """``labels`` in the taxonomy's depth-first order (children in input order), labels not in the taxonomy
    (``∅``) last."""
    wanted = set(labels)
    taxonomy = store.taxonomy
    order: list[str] = []
    if taxonomy is not None:
        seen: set[str] = set()
        stack = [taxonomy.root]
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            if node in wanted:
                order.append(node)
            stack.extend(reversed(taxonomy.children(node)))
    return order + sorted(wanted - set(order))


def pivot(cells: pd.DataFrame, column: str = "value", labels: Iterable[str] | None = None,
          store: Store | None = None) -> pd.DataFrame:
    """Long cells ``(true_label, pred_label, column)`` of one system as a square labelled matrix (rows =
    true, columns = predicted, missing cells 0). ``labels`` fixes rows and columns; otherwise every label of a
    row or column is used, in taxonomy order when ``store`` is given."""
    if labels is None:
        found = set(cells["true_label"]) | set(cells["pred_label"])
        labels = label_order(store, found) if store is not None else sorted(found - {EMPTY})
        labels += [EMPTY] if store is None and EMPTY in found else []
    labels = list(labels)
    table = cells.pivot_table(index="true_label", columns="pred_label", values=column, aggfunc="sum",
                              fill_value=0.0)
    table = table.reindex(index=labels, columns=labels, fill_value=0.0).astype(float)
    table.index.name, table.columns.name = "true", "predicted"
    return table


def matrix(store: Store, system: str, *, kind: str = "raw", depth: int | None = None,
           labels: Iterable[str] | None = None, zero_division: float = 0.0) -> pd.DataFrame:
    """The labelled matrix of ``system``: ``kind`` ``"raw"`` (M), ``"recall"`` or ``"precision"``.

    Rows and columns are ``labels`` or every label of a row or column, in taxonomy order, ``∅`` last.
    """
    _check_kind(kind)
    cells = confusion_long(store, depth=depth, zero_division=zero_division)
    cells = cells[cells["system"] == system]
    if cells.empty and system not in store.systems():
        raise KeyError(f"no system {system!r} in the store")
    return pivot(cells, "value" if kind == "raw" else kind, labels, store)


def multilabel_confusion_matrix(y_true: LabelSets, y_pred: LabelSets, labels: Iterable[str] | None = None,
                                *, kind: str = "raw", zero_division: float = 0.0) -> pd.DataFrame:
    """The multi-label confusion matrix of label sets (Krstinić Algorithm 1): rows true, columns predicted.

    ``y_true[i]``, ``y_pred[i]``: the label sets of instance ``i``. ``labels`` fixes the rows and columns (and
    their order); by default every label that occurs, sorted, then ``∅`` if an empty set occurs.
    """
    from ...inputs.arguments import label_names

    _check_kind(kind)
    names = label_names(labels)
    store = label_set_store(y_true, y_pred, names)
    try:
        cells = confusion_long(store, zero_division=zero_division)
    finally:
        store.close()
    return pivot(cells, "value" if kind == "raw" else kind, None if names is None else list(names))


def _check_kind(kind: object) -> None:
    from ...inputs.arguments import argument_error

    if kind not in KINDS:
        raise argument_error("kind", f"must be one of {', '.join(KINDS)}", kind)
