"""Flat multi-label measures: example-based accuracy, precision, recall, F1, Hamming loss, subset accuracy,
and label-based (per-class) accuracy, precision, recall, F1 with micro and macro averaging.

A thin wrapper over ``sql/flat.sql``; see its header for the formulas. The label sets are taken as given (no
ancestors added). Example-based measures are per instance, then the mean over the instances of the truth
(``average`` is ``""``); label-based measures are ``micro`` (counts pooled over classes) or ``macro`` (mean of
per-class values). The class universe L is, per system, every class of the truth or of that system's
predictions (scikit-learn's convention) unless ``Options.labels`` fixes it.

References
----------
Krstinić, Braović, Šerić, Božić-Štulić (2020), "Multi-label classifier performance evaluation with confusion
matrix", §2.1, eq. (1)-(10). SPEC §7.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ..engines import DuckDBEngine
from ..plan import FamilyPlan, Measure, Sql
from . import REGISTRY, Options, Row

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from ..store import Store

METRICS = REGISTRY["flat"]
LabelSets = Sequence[Iterable[str] | str]


def sql_params(options: Options, engine: Any = None, metrics: Sequence[str] = ()) -> dict[str, object]:
    """The ``$parameters`` of ``sql/flat.sql``. The queries also read the table ``flat_labels(label)``: the
    fixed universe ``options.labels`` (empty, and unused, when it is ``None``); see :func:`label_table`."""
    return {"fixed_universe": options.labels is not None, "zero_division": float(options.zero_division)}


def label_table(options: Options) -> dict[str, pa.Table]:
    """The helper table ``flat_labels(label)``: the fixed class universe, empty when not fixed."""
    import pyarrow as pa

    labels = list(dict.fromkeys(str(label) for label in options.labels or ()))
    return {"flat_labels": pa.table({"label": pa.array(labels, type=pa.string())})}



PLAN = FamilyPlan(
    name="flat",
    file="flat",
    metrics=METRICS,
    steps=(Sql("flat_universe"), Sql("flat_sides"), Sql("flat_instance"), Sql("flat_label")),
    instance="flat_instance",
    measures=(
        *(Measure(m, m, averages=("",)) for m in ("example_accuracy", "example_precision", "example_recall",
                                                   "example_f1", "subset_accuracy")),
        Measure("hamming_loss", "hamming_loss", averages=("",), higher_is_better=False),
        Measure("label_accuracy", "tp + tn", "tp + fp + fn + tn", unit="flat_label"),
        Measure("label_precision", "tp", "tp + fp", unit="flat_label"),
        Measure("label_recall", "tp", "tp + fn", unit="flat_label"),
        Measure("label_f1", "2 * tp", "2 * tp + fp + fn", unit="flat_label"),
    ),
    params=sql_params,
    tables=label_table,
    unit_order={"flat_label": "label"},
)


def evaluate(store: Store, metrics: list[str], options: Options) -> list[Row]:
    """Values of ``metrics`` for every system: example-based ones with average ``""``, label-based ones
    ``micro`` and/or ``macro`` (``options.average``)."""
    return DuckDBEngine(store).run_plan(PLAN, metrics, options)


def per_instance(store: Store, options: Options) -> pd.DataFrame:
    """Per (system, instance): ``n_true, n_pred, n_both`` (|Y|, |Z|, |Y ∩ Z|), ``n_labels`` (|L|) and the
    example-based values."""
    return DuckDBEngine(store).per_instance(PLAN, options).to_pandas()


def per_label(store: Store, options: Options) -> pd.DataFrame:
    """Per (system, class of L): ``tp, fp, fn, tn`` and the label-based values."""
    return DuckDBEngine(store).per_instance(PLAN, options, "flat_label").to_pandas()


# ---------------------------------------------------------------------- label sets (scikit-learn style)
def label_set_store(y_true: LabelSets, y_pred: LabelSets, labels: Iterable[str] | None = None) -> Store:
    """An in-memory :class:`~hiersql.store.Store` for label sets without a taxonomy: ``y_true[i]`` and
    ``y_pred[i]`` are the label sets of instance ``i`` (a string is a one-label set; labels are read as
    strings). The taxonomy is one root above every label of ``y_true``, ``y_pred`` and ``labels``."""
    from ..taxonomy import Taxonomy
    from . import store_from_sets

    truth, pred = _as_sets(y_true), _as_sets(y_pred)
    seen = {label for sets in (truth, pred) for labelset in sets for label in labelset}
    seen |= {str(label) for label in labels or ()}
    root = "__labels__"
    while root in seen:
        root = f"_{root}_"
    edges = [(root, label) for label in sorted(seen)] or [(root, f"_{root}")]
    return store_from_sets(truth, pred, Taxonomy.from_edges(edges))


def _as_sets(sets: LabelSets) -> list[list[str]]:
    return [[labels] if isinstance(labels, str) else [str(label) for label in labels] for labels in sets]


def _options(labels: Iterable[str] | None, zero_division: float, average: str | None) -> Options:
    return Options(zero_division=zero_division, labels=None if labels is None else tuple(map(str, labels)),
                   average=(average,) if average else ())


def _one_shot(metric: str, average: str | None, y_true: LabelSets, y_pred: LabelSets,
              labels: Iterable[str] | None, zero_division: float) -> float | pd.Series:
    """The value of one measure for label sets; for a label-based measure with ``average=None``, the
    per-class values as a Series indexed by label."""
    from . import one_value

    options = _options(labels, zero_division, average)
    store = label_set_store(y_true, y_pred, labels)
    try:
        if average is None:
            return per_label(store, options).set_index("label")[metric]
        return one_value(evaluate(store, [metric], options), metric, average)
    finally:
        store.close()


def example_accuracy(y_true: LabelSets, y_pred: LabelSets, *, labels: Iterable[str] | None = None,
                     zero_division: float = 0.0) -> float:
    """Example-based accuracy (Jaccard index) ``1/N Σ |Y ∩ Z| / |Y ∪ Z|`` (Krstinić eq. 1)."""
    return _one_shot("example_accuracy", "", y_true, y_pred, labels, zero_division)


def example_precision(y_true: LabelSets, y_pred: LabelSets, *, labels: Iterable[str] | None = None,
                      zero_division: float = 0.0) -> float:
    """Example-based precision ``1/N Σ |Y ∩ Z| / |Z|`` (Krstinić eq. 2)."""
    return _one_shot("example_precision", "", y_true, y_pred, labels, zero_division)


def example_recall(y_true: LabelSets, y_pred: LabelSets, *, labels: Iterable[str] | None = None,
                   zero_division: float = 0.0) -> float:
    """Example-based recall ``1/N Σ |Y ∩ Z| / |Y|`` (Krstinić eq. 3)."""
    return _one_shot("example_recall", "", y_true, y_pred, labels, zero_division)


def example_f1(y_true: LabelSets, y_pred: LabelSets, *, labels: Iterable[str] | None = None,
               zero_division: float = 0.0) -> float:
    """Example-based F1 ``1/N Σ 2|Y ∩ Z| / (|Y| + |Z|)`` (Krstinić eq. 4)."""
    return _one_shot("example_f1", "", y_true, y_pred, labels, zero_division)


def hamming_loss(y_true: LabelSets, y_pred: LabelSets, *, labels: Iterable[str] | None = None,
                 zero_division: float = 0.0) -> float:
    """Hamming loss ``1/N Σ |Y Δ Z| / |L|`` (Krstinić eq. 5), L = the classes seen or ``labels``."""
    return _one_shot("hamming_loss", "", y_true, y_pred, labels, zero_division)


def subset_accuracy(y_true: LabelSets, y_pred: LabelSets, *, labels: Iterable[str] | None = None,
                    zero_division: float = 0.0) -> float:
    """Subset accuracy (exact match) ``1/N Σ [Y = Z]`` (Krstinić eq. 6)."""
    return _one_shot("subset_accuracy", "", y_true, y_pred, labels, zero_division)


def label_accuracy(y_true: LabelSets, y_pred: LabelSets, *, average: str | None = "micro",
                   labels: Iterable[str] | None = None, zero_division: float = 0.0) -> float | pd.Series:
    """Label-based accuracy ``(TP + TN) / N`` per class (Krstinić eq. 7, 9, 10); ``average=None`` gives the
    per-class values as a Series indexed by label."""
    return _one_shot("label_accuracy", average, y_true, y_pred, labels, zero_division)


def label_precision(y_true: LabelSets, y_pred: LabelSets, *, average: str | None = "micro",
                    labels: Iterable[str] | None = None, zero_division: float = 0.0) -> float | pd.Series:
    """Label-based precision ``TP / (TP + FP)`` (Krstinić eq. 7, 9, 10), micro, macro or per class (None)."""
    return _one_shot("label_precision", average, y_true, y_pred, labels, zero_division)


def label_recall(y_true: LabelSets, y_pred: LabelSets, *, average: str | None = "micro",
                 labels: Iterable[str] | None = None, zero_division: float = 0.0) -> float | pd.Series:
    """Label-based recall ``TP / (TP + FN)`` (Krstinić eq. 7, 9, 10), micro, macro or per class (None)."""
    return _one_shot("label_recall", average, y_true, y_pred, labels, zero_division)


def label_f1(y_true: LabelSets, y_pred: LabelSets, *, average: str | None = "micro",
             labels: Iterable[str] | None = None, zero_division: float = 0.0) -> float | pd.Series:
    """Label-based F1 ``2TP / (2TP + FP + FN)`` (Krstinić eq. 8, 9, 10), micro, macro or per class (None)."""
    return _one_shot("label_f1", average, y_true, y_pred, labels, zero_division)
