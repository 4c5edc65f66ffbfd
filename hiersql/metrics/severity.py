"""Mistake severity, hierarchical distance@k, top-k accuracy and hierarchical precision@k: the measures of
hierarchy-aware deep classifiers (Bertinetto et al. 2020; Karthik et al. 2021).

A thin wrapper over ``sql/severity.sql``; see its header for the formulas and ``docs/severity.md`` for the
conventions. Per instance the predicted labels are ranked by score (highest first, ties by label), the top k
kept, and each compared with the true label by ``d``, the height of their lowest common ancestor (the
authors' distance; ``severity_distance="edges"``: the edge count). With ``n ≤ k`` ranked labels
``p_1 … p_n`` and ``d_j = d(y, p_j)``::

    top_k_accuracy                   = [y ∈ {p_1 … p_n}]
    hierarchical_distance_at_k       = Σ_j d_j / n
    best_hierarchical_distance_at_k  = min_j d_j
    mistake_severity                 = Σ_j d_j / n, over the instances with d_1 > 0 only
    hierarchical_precision_at_k      = Σ_j (1 − d_j / D) / Σ_{j ≤ k} best_j(y)

each averaged over the instances where it is defined. Every k of the option ``k`` is a run of the plan
(:attr:`~hiersql.plan.FamilyPlan.groups`) whose rows carry ``@k`` in the ``average`` column.

References
----------
Bertinetto, Mueller, Tertikas, Samangooei, Lord (2020), "Making Better Mistakes: Leveraging Class Hierarchies
with Deep Networks", CVPR, §4 (and ``better_mistakes/model/run_xent.py`` of fiveai/making-better-mistakes).
Karthik, Prabhu, Dokania, Torr (2021), "No Cost Likelihood Manipulation at Test Time for Making Better
Mistakes in Deep Networks", ICLR.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..engines import DuckDBEngine
from ..plan import FamilyPlan, Measure, Sql
from . import REGISTRY, Options, Row

if TYPE_CHECKING:
    import pandas as pd

    from ..store import Store

METRICS = REGISTRY["severity"]
NAN = "CAST('NaN' AS DOUBLE)"  # the mean over no instance (no mistake, no scored system at k > 1)


def _params(options: Options, engine: Any = None, metrics: Sequence[str] = ()) -> dict[str, object]:
    """``$k`` (the group's one k), ``$severity_distance`` and ``$precision`` (the pairs of all classes are
    needed only for hierarchical precision)."""
    return {"k": options.k[0], "severity_distance": options.severity_distance,
            "precision": "hierarchical_precision_at_k" in metrics}


def _groups(metrics: Sequence[str], options: Options) -> list[tuple[list[str], Options]]:
    """One run per k."""
    return [(list(metrics), options.with_(k=(k,))) for k in options.k]


def _measure(metric: str, value: str, higher_is_better: bool, bounds: tuple[float, float]) -> Measure:
    """A plain mean over the instances where ``value`` is not NULL (the system ranked its labels for this k)."""
    return Measure(metric, f"CASE WHEN ranked THEN {value} END", averages=("",), higher_is_better=higher_is_better,
                   bounds=bounds, zero=NAN)


PLAN = FamilyPlan(
    name="severity",
    file="severity",
    metrics=METRICS,
    steps=(Sql("severity_instance"),),
    instance="severity_instance",
    measures=(
        _measure("top_k_accuracy", "CASE WHEN n_true > 0 THEN hit END", True, (0.0, 1.0)),
        _measure("hierarchical_distance_at_k", "CASE WHEN n > 0 THEN 1.0 * total / n END", False, (0.0, math.inf)),
        _measure("best_hierarchical_distance_at_k", "nearest", False, (0.0, math.inf)),
        _measure("mistake_severity", "CASE WHEN top1 > 0 THEN 1.0 * total / n END", False, (0.0, math.inf)),
        _measure("hierarchical_precision_at_k", "similarity / best_similarity", True, (0.0, 1.0)),
    ),
    params=_params,
    groups=_groups,
    average_of=lambda options: f"@{options.k[0]}",
)


def evaluate(store: Store, metrics: list[str], options: Options) -> list[Row]:
    """Values of ``metrics`` for every system, one row per k (average ``@k``)."""
    return DuckDBEngine(store).run_plan(PLAN, metrics, options)


def per_instance(store: Store, options: Options) -> pd.DataFrame:
    """The per-instance counts and values for every k of ``options.k`` (column ``k``), rows ordered by k,
    system and instance."""
    import pandas as pd

    engine = DuckDBEngine(store)
    return pd.concat([engine.per_instance(PLAN, group).to_pandas().assign(k=group.k[0]).pipe(
        lambda frame: frame[["system", "instance_id", "k", *frame.columns[2:-1]]])
        for _, group in _groups(list(METRICS), options)], ignore_index=True)
