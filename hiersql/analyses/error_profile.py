"""Error profile of a system: the category of each predicted label (exact, ancestor, descendant, sibling,
same branch, cross branch, spurious) and the missed true labels, pair-distance statistics and histograms,
and the path-consistency rate. (The tree-induced error with an empty prediction scored as the root is an option
of the pair-based family: ``empty_prediction="root"``, :mod:`hiersql.measures.pair_based`.)

A thin wrapper over ``error_profile.sql``; the categories are defined in its header and in
``docs/breakdowns.md`` (also on DAGs).

References
----------
Kosmopoulos, Partalas, Gaussier, Paliouras, Androutsopoulos (2015), "Evaluation measures for hierarchical
classification: a unified view and novel approaches", §2.3 (pair distances).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..measures import as_engine

if TYPE_CHECKING:
    import pandas as pd

    from ..engines import Engine
    from ..inputs.store import Store

CATEGORIES = ("exact", "ancestor", "descendant", "sibling", "same_branch", "cross_branch", "spurious", "missed")
# made as a table before a query that reads it: composed into the error categories of a million instances,
# the pairs' relations and the labels' profile held more than a 4 GB memory limit at once
STAGES = ("pair_relations",)


def _frame(source: Store | Engine, query: str, **kwargs: str) -> pd.DataFrame:
    """The rows of query ``query`` of ``error_profile.sql`` (:meth:`~hiersql.engines.Engine.frame`)."""
    return as_engine(source).frame("error_profile", query, stages=STAGES, **kwargs)


def predicted_profile(source: Store | Engine) -> pd.DataFrame:
    """Per predicted label (``system, instance_id, label, depth``): its ``category``, the ``distance`` to the
    nearest true label of its instance and ``lca_depth``, the depth of its deepest common ancestor with a true
    label (both NA for a spurious label)."""
    return _frame(source, "predicted_profile", order="system, instance_id, label")


def missed_labels(source: Store | Engine) -> pd.DataFrame:
    """The true labels no predicted label reaches (``u ∉ An(P) ∪ P``): ``system, instance_id, label, depth``."""
    return _frame(source, "missed_labels", order="system, instance_id, label")


def error_categories(source: Store | Engine) -> pd.DataFrame:
    """``system, category, n, share`` for the categories of :data:`CATEGORIES` (share of the predicted labels;
    for ``missed``, of the true labels); a category with no label has ``n = 0``."""
    import pandas as pd

    engine = as_engine(source)
    found = _frame(engine, "error_categories")
    grid = pd.DataFrame([(s, c) for s in engine.systems() for c in CATEGORIES], columns=["system", "category"])
    out = grid.merge(found, on=["system", "category"], how="left").fillna({"n": 0, "share": 0.0})
    return out.astype({"n": "int64"})


def distance_statistics(source: Store | Engine) -> pd.DataFrame:
    """Per system: ``n_labels`` (predicted labels of instances with a truth), the ``mean_distance``,
    ``median_distance`` and ``max_distance`` from each to its nearest true label, ``macro_mean_distance`` (the
    mean over predicted classes of the class's mean distance) and ``mean_lca_depth``."""
    return _frame(source, "distance_statistics", order="system")


def distance_histogram(source: Store | Engine, kind: str = "distance") -> pd.DataFrame:
    """``system, value, n``: how many predicted labels lie at each nearest-true ``distance``
    (``kind="distance"``) or have their deepest LCA with a true label at each depth (``kind="lca_depth"``)."""
    if kind not in ("distance", "lca_depth"):
        raise ValueError(f"kind must be 'distance' or 'lca_depth', got {kind!r}")
    frame = _frame(source, "distance_histogram", where=f"kind = '{kind}'", order="system, value")
    return frame.drop(columns="kind")


def class_distances(source: Store | Engine) -> pd.DataFrame:
    """Per (system, predicted class): ``n`` labels and their ``mean_distance`` to the nearest true label."""
    return _frame(source, "class_distances", order="system, label")


def path_consistency(source: Store | Engine) -> pd.DataFrame:
    """Per system: ``n_sets`` non-empty predicted sets, ``n_inconsistent`` of them not closed under ancestors
    (a label without one of its non-root ancestors), and ``inconsistency_rate = n_inconsistent / n_sets``."""
    return _frame(source, "path_consistency", order="system")


def path_consistency_instance(source: Store | Engine) -> pd.DataFrame:
    """Per non-empty predicted set: ``n_labels``, ``n_missing_ancestors`` and ``consistent``."""
    return _frame(source, "consistency_instance", order="system, instance_id")
