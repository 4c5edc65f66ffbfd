"""Scored outputs: hierarchical precision-recall curves and their areas (pooled as in Clus and HEMDAG),
precision at a fixed recall, and threshold sweeps of the top-down decoding.

A thin wrapper over ``curves.sql`` (formulas in its header and in ``docs/scored_outputs.md``): the
scores are the ``score`` column of ``predictions``, one row per scored (instance, node). Score matrices (one
column per node, such as the transposon files of :mod:`hiersql.inputs.decoding`) become such rows with
:func:`score_columns`.

References
----------
Vens, Struyf, Schietgat, Džeroski, Blockeel (2008), "Decision trees for hierarchical multi-label
classification", Machine Learning 73(2) §5.2: pooled precision-recall curves and the area under them (Clus).
Valentini (2011), "True Path Rule hierarchical ensembles for genome-wide gene function prediction" (HEMDAG).
Davis, Goadrich (2006), "The relationship between precision-recall and ROC curves" (why not the trapezoid).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..measures import as_engine

if TYPE_CHECKING:
    import pandas as pd

    from ..engines import Engine
    from ..inputs.store import Store
    from ..inputs.taxonomy import Taxonomy

AVERAGES = ("micro", "macro", None)


def score_columns(scores: np.ndarray, columns: Sequence[str], taxonomy: Taxonomy | None = None,
                  conditional: bool = False, start: int = 1) -> pd.DataFrame:
    """A score matrix as the long rows ``instance_id, label, score`` (a DataFrame) that
    :meth:`~hiersql.inputs.store.Store.add_predictions` reads: one row per (instance, column); instance ids are row
    numbers from ``start``, as :func:`hiersql.inputs.decoding.long_columns` numbers them.

    With ``conditional=True`` the scores are taken as ``P(node | parent)`` (each sibling group sums to 1, as in
    the transposon files) and turned into marginals ``P(node) = Π`` over the node and its ancestors on its
    shortest root path (``taxonomy`` needed; a column whose parent has no column keeps its own score).
    """
    import pandas as pd

    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 2 or scores.shape[1] != len(columns):
        raise ValueError(f"scores must have shape (n, {len(columns)}), got {scores.shape}")
    if conditional:
        if taxonomy is None:
            raise ValueError("conditional=True needs the taxonomy")
        scores = _marginals(scores, list(columns), taxonomy)
    n, m = scores.shape
    return pd.DataFrame({"instance_id": np.repeat(np.arange(start, start + n), m).astype(str),
                         "label": np.tile(np.asarray(columns, dtype=object), n),
                         "score": scores.ravel()})


def _marginals(scores: np.ndarray, columns: list[str], taxonomy: Taxonomy) -> np.ndarray:
    depth = taxonomy.depths()
    col = {c: i for i, c in enumerate(columns)}
    out = scores.copy()
    for c in sorted(columns, key=depth.__getitem__):  # parents first
        parents = [p for p in taxonomy.parents(c) if p in col]
        if parents:
            out[:, col[c]] *= out[:, col[min(parents, key=depth.__getitem__)]]
    return out


def read_transposon_scores(path: str, conditional: bool = True) -> pd.DataFrame:
    """A transposon prediction file (:func:`hiersql.inputs.decoding.read_scores`, SPEC §6) as long scored rows
    (:func:`score_columns`), by default turned from the file's per-parent conditional probabilities into
    marginal probabilities over the transposon tree."""
    from ..inputs.decoding import TRANSPOSON_COLUMNS, read_scores, transposon_taxonomy

    return score_columns(read_scores(path), TRANSPOSON_COLUMNS, transposon_taxonomy(), conditional)


def pr_curve(source: Store | Engine, per_class: bool = False) -> pd.DataFrame:
    """The pooled hierarchical precision-recall curve of every system (``system, threshold, precision,
    recall, tp, fp``, thresholds decreasing); with ``per_class`` the curve of every class with a positive
    instead (a ``label`` column)."""
    frame = as_engine(source).frame("curves", "pr_curve", where="label <> ''" if per_class else "label = ''",
                                    order="system, label, threshold DESC")
    return frame if per_class else frame.drop(columns="label")


def average_precision(source: Store | Engine, average: str | None = "micro", rule: str = "step") -> pd.DataFrame:
    """Area under the hierarchical precision-recall curves: ``system, value`` (``average="micro"``: the
    pooled curve; ``"macro"``: the mean over the classes with a positive) or ``system, label, value`` per
    class (``average=None``). ``rule="step"`` (default) is average precision
    ``Σ_k (R_k − R_{k−1}) P_k`` (scikit-learn's ``average_precision_score``); ``"trapezoid"`` interpolates
    linearly from ``(0, 1)`` (``sklearn.metrics.auc``), which overestimates the area (Davis & Goadrich 2006).
    """
    return summarise_areas(areas(source), average, rule)


def areas(source: Store | Engine) -> pd.DataFrame:
    """Both areas of every curve: ``system, label, average_precision, auprc_trapezoid`` (label ``""``: the
    pooled curve), from one run of ``curves.sql``."""
    return as_engine(source).frame("curves", "pr_area", order="system, label")


def summarise_areas(frame: pd.DataFrame, average: str | None = "micro", rule: str = "step") -> pd.DataFrame:
    """:func:`average_precision` from the rows of :func:`areas` (to take several averages from one run)."""
    if average not in AVERAGES:
        raise ValueError(f"average must be one of {AVERAGES}, got {average!r}")
    if rule not in ("step", "trapezoid"):
        raise ValueError(f"rule must be 'step' or 'trapezoid', got {rule!r}")
    column = "average_precision" if rule == "step" else "auprc_trapezoid"
    areas = frame.rename(columns={column: "value"})
    pooled = areas["label"] == ""
    if average == "micro":
        return areas[pooled][["system", "value"]].sort_values("system").reset_index(drop=True)
    classes = areas[~pooled][["system", "label", "value"]].sort_values(["system", "label"])
    if average is None:
        return classes.reset_index(drop=True)
    return classes.groupby("system", as_index=False)["value"].mean()


def precision_at_recall(source: Store | Engine, recall: float, per_class: bool = False) -> pd.DataFrame:
    """The highest precision of a threshold whose recall is at least ``recall`` (NaN when none reaches it):
    ``system, precision`` on the pooled curve, or ``system, label, precision`` per class."""
    if not 0.0 <= recall <= 1.0:
        raise ValueError(f"recall must be in [0, 1], got {recall!r}")
    frame = as_engine(source).frame("curves", "precision_at_recall", {"recall": float(recall)},
                                    where="label <> ''" if per_class else "label = ''", order="system, label")
    return frame if per_class else frame.drop(columns="label")


def threshold_sweep(scores: np.ndarray, columns: Sequence[str], taxonomy: Taxonomy, truth: Any,
                    thresholds: Sequence[float], truth_format: str = "long") -> pd.DataFrame:
    """Decode ``scores`` top-down at each threshold (:func:`hiersql.inputs.decoding.top_down_threshold`) and
    evaluate the decoded labels against ``truth``: ``threshold, average, hierarchical_precision,
    hierarchical_recall, hierarchical_f1`` (micro and macro). Every threshold is one system of one store,
    so the set-based SQL runs once."""
    import pandas as pd

    from ..inputs.decoding import long_columns, top_down_threshold
    from ..inputs.store import Store
    from ..measures import Options, family

    store = Store()
    try:
        store.load_taxonomy(taxonomy)
        store.add_truth(truth, truth_format)
        names = {f"{t!r}": float(t) for t in thresholds}
        store.add_predictions_many(
            {name: long_columns(top_down_threshold(scores, columns, taxonomy, t)) for name, t in names.items()})
        rows = family("set_based").evaluate(
            store, ["hierarchical_precision", "hierarchical_recall", "hierarchical_f1"], Options())
    finally:
        store.close()
    frame = pd.DataFrame(rows).pivot_table(index=["system", "average"], columns="metric", values="value")
    frame = frame.reset_index().rename(columns={"system": "threshold"})
    frame["threshold"] = frame["threshold"].map(names)
    frame.columns.name = None
    return frame.sort_values(["threshold", "average"], ascending=[True, False]).reset_index(drop=True)


def _scored_store(y_true: Any, y_score: np.ndarray, columns: Sequence[str], taxonomy: Any) -> Store:
    from ..inputs.arguments import label_sets
    from ..inputs.store import Store
    from ..inputs.taxonomy import as_taxonomy

    truth, tax = label_sets(y_true, "y_true"), as_taxonomy(taxonomy)
    store = Store()
    store.load_taxonomy(tax)
    store.add_truth(truth, name="y_true")
    store.add_predictions("y_score", score_columns(y_score, columns, start=0), name="y_score")
    return store


def hierarchical_precision_recall_curve(y_true: Any, y_score: np.ndarray, columns: Sequence[str],
                                        taxonomy: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(precision, recall, thresholds)`` of the pooled hierarchical curve, thresholds decreasing.

    Parameters
    ----------
    y_true:
        Label sets, one per row of ``y_score``.
    y_score:
        ``(n_instances, len(columns))`` scores; column ``j`` scores node ``columns[j]``.
    columns:
        The taxonomy node of each column.
    taxonomy:
        A :class:`~hiersql.inputs.taxonomy.Taxonomy`, a path, a networkx DiGraph or ``(parent, child)`` pairs.
    """
    store = _scored_store(y_true, y_score, columns, taxonomy)
    try:
        frame = pr_curve(store)
    finally:
        store.close()
    return frame["precision"].to_numpy(), frame["recall"].to_numpy(), frame["threshold"].to_numpy()


def hierarchical_average_precision(y_true: Any, y_score: np.ndarray, columns: Sequence[str], taxonomy: Any,
                                   average: str | None = "micro", rule: str = "step") -> float | pd.DataFrame:
    """Area under the hierarchical precision-recall curve (:func:`average_precision`) for label sets and a
    score matrix (arguments as :func:`hierarchical_precision_recall_curve`): a float for ``"micro"`` and
    ``"macro"``, a DataFrame ``label, value`` for ``average=None``."""
    store = _scored_store(y_true, y_score, columns, taxonomy)
    try:
        frame = average_precision(store, average, rule)
    finally:
        store.close()
    return frame.drop(columns="system") if average is None else float(frame["value"].iloc[0])
