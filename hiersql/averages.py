"""The checks of scikit-learn's parameters shared by the one-shot functions, :class:`~hiersql.api.evaluator.Evaluator`
and :func:`hiersql.measures.compute`: ``average`` (which a measure has: :func:`~hiersql.plan.averages_of`),
``labels`` (never ignored), ``zero_division`` and ``sample_weight``. What each average means per family:
``docs/sklearn.md``."""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .options import OptionError

if TYPE_CHECKING:
    from .plan import FamilyPlan


class UndefinedMetricWarning(UserWarning):
    """A ratio of a measure had a zero denominator and was set to 0 (``zero_division="warn"``), as
    scikit-learn's ``UndefinedMetricWarning``."""


def check_zero_division(value: Any) -> tuple[float, bool]:
    """``(value used, warn)``: ``"warn"`` is 0 with an :class:`UndefinedMetricWarning`; 0, 1 and nan are
    checked by :class:`~hiersql.measures.Options`."""
    if isinstance(value, str) and value == "warn":
        return 0.0, True
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and (value in (0, 1) or math.isnan(value)):
        return float(value), False
    raise OptionError("zero_division", 'must be "warn", 0, 1 or nan', value)


def check_sample_weight(sample_weight: Any, n: int) -> list[float] | None:
    """One finite weight ≥ 0 per instance, not all 0, or ``None``."""
    if sample_weight is None:
        return None
    if isinstance(sample_weight, str | bytes) or not isinstance(sample_weight, Iterable):
        raise OptionError("sample_weight", "must be a sequence of numbers, one per instance", sample_weight)
    weights = list(sample_weight)
    if len(weights) != n:
        raise OptionError("sample_weight", f"must have one weight per instance ({n})", f"{len(weights)} weights")
    for weight in weights:
        if not (isinstance(weight, numbers.Real) and not isinstance(weight, bool) and math.isfinite(weight)
                and weight >= 0):
            raise OptionError("sample_weight", "must hold finite numbers >= 0", weight)
    if n and not any(weights):  # as scikit-learn: every mean and ratio would be 0/0
        raise OptionError("sample_weight", "must hold at least one weight > 0", f"{n} zeros")
    return [float(w) for w in weights]


def check_average(plan: FamilyPlan, metric: str, average: str | None, fixed_labels: bool) -> None:
    """``average`` must be one the measure has (:func:`~hiersql.plan.averages_of`), ``None`` (per-class values)
    only for a per-class measure; with fixed ``labels`` a set-based measure takes only its per-class averages
    (its micro and samples are over the whole augmented sets; the flat family's universe restricts all)."""
    from .plan import CLASSES, averages_of, measure_of

    allowed = list(averages_of(plan, metric)) + ([None] if has_classes(plan, metric) else [])
    if average not in allowed:
        shown = ", ".join(repr(a) for a in allowed if a != "") or "none (the measure is a mean over instances)"
        raise OptionError("average", f"of {metric} must be one of {shown}", "None" if average is None else average)
    if fixed_labels and plan.classes is not None and plan.class_universe is None \
            and measure_of(plan, metric, average).unit != CLASSES:
        raise OptionError("labels", f"restricts only the per-class averages of {metric} (label_macro, weighted,"
                          " or the per-class values), not the average", average)


def has_classes(plan: FamilyPlan, metric: str) -> bool:
    """Whether ``metric`` has per-class values (scikit-learn's ``average=None``)."""
    from .plan import CLASSES

    return any(m.metric == metric and m.unit == CLASSES for m in plan.measures)


def check_labels_meaning(plan: FamilyPlan, metric: str, labels: Any) -> None:
    """``labels`` is an error for a measure without classes (never ignored)."""
    if labels is not None and not has_classes(plan, metric) and plan.class_universe is None:
        raise OptionError("labels", f"has no meaning for {metric} (it has no per-class values)", labels)


