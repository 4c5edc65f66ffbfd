"""Flat multi-label measures: example-based accuracy, precision, recall, F1, Hamming loss, subset accuracy,
and label-based (per-class) accuracy, precision, recall, F1 with micro and macro averaging.

A thin wrapper over ``flat.sql``; see its header for the formulas. The label sets are taken as given (no
ancestors added). Example-based measures are per instance, then the mean over the instances of the truth
(``average`` is ``""``); label-based measures are ``micro`` (counts pooled over classes), ``macro`` (mean of
per-class values; ``label_macro`` its alias), ``weighted`` (by support) or ``samples`` (the example-based
value), as scikit-learn's (``docs/sklearn.md``); the per-class counts are generated from ``flat_sides``
(:func:`hiersql.plan.class_counts_sql`). The class universe L is, per system, every class of the truth or of
that system's predictions (scikit-learn's convention) unless ``Options.labels`` fixes it.

References
----------
Krstinić, Braović, Šerić, Božić-Štulić (2020), "Multi-label classifier performance evaluation with confusion
matrix", §2.1, eq. (1)-(10). SPEC §7.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ...engines import DuckDBEngine, Engine
from ...plan import CLASSES, FamilyPlan, Measure, Sql, SqlCheck
from .. import REGISTRY, Options, Row, as_engine

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from ...inputs.store import Store
    from ...inputs.taxonomy import Taxonomy

METRICS = REGISTRY["flat"]
LABEL_METRICS = ("label_accuracy", "label_precision", "label_recall", "label_f1")  # per class of L
LabelSets = Sequence[Iterable[str] | str]


def plan_params(options: Options, engine: Any = None, metrics: Sequence[str] = ()) -> dict[str, object]:
    """The ``$parameters`` of ``flat.sql``. The queries also read the table ``flat_labels(label)``: the
    fixed universe ``options.labels`` (empty, and unused, when it is ``None``); see :func:`label_table`."""
    return {"fixed_universe": options.labels is not None, "zero_division": float(options.zero_division)}


def label_table(options: Options) -> dict[str, pa.Table]:
    """The helper table ``flat_labels(label)``: the fixed class universe, empty when not fixed."""
    import pyarrow as pa

    labels = list(options.labels or ())  # each a node, once (Engine.prepare checks them)
    # pa.array of a list imports pandas (a third of a second of a CLI run): the usual empty table is made without it
    column = pa.array(labels, type=pa.string()) if labels else pa.nulls(0, pa.string())
    return {"flat_labels": pa.Table.from_arrays([column], names=["label"])}



PLAN = FamilyPlan(
    name="flat",
    file="flat",
    metrics=METRICS,
    steps=(Sql("flat_universe"), Sql("flat_sides"), Sql("flat_instance")),
    instance="flat_instance",
    measures=(
        # example-based: the mean of the per-instance ratios (declared as ratios: zero_division="warn" counts them)
        Measure("example_accuracy", "n_both", "n_true + n_pred - n_both", averages=("",)),
        Measure("example_precision", "n_both", "n_pred", averages=("",)),
        Measure("example_recall", "n_both", "n_true", averages=("",)),
        Measure("example_f1", "2 * n_both", "n_true + n_pred", averages=("",)),
        Measure("hamming_loss", "n_true + n_pred - 2 * n_both", "n_labels", averages=("",), higher_is_better=False),
        Measure("subset_accuracy", "CASE WHEN n_true = n_both AND n_pred = n_both THEN 1.0 ELSE 0.0 END",
                averages=("",)),
        # label-based: per class of L (micro pools the counts, macro the mean over classes, label_macro its alias
        # as in the set-based family, weighted by support); samples (scikit-learn's per-instance mean) is the
        # example-based measure
        Measure("label_accuracy", "tp + tn", "tp + fp + fn + tn", averages=("micro", "macro", "label_macro"),
                unit=CLASSES),
        *(Measure(metric, numerator, denominator, averages=("micro", "macro", "label_macro", "weighted"),
                  unit=CLASSES)
          for metric, numerator, denominator in (("label_precision", "tp", "tp + fp"),
                                                 ("label_recall", "tp", "tp + fn"),
                                                 ("label_f1", "2 * tp", "2 * tp + fp + fn"))),
        Measure("label_precision", "n_both", "n_pred", averages=("samples",)),
        Measure("label_recall", "n_both", "n_true", averages=("samples",)),
        Measure("label_f1", "2 * n_both", "n_true + n_pred", averages=("samples",)),
    ),
    params=plan_params,
    tables=label_table,
    classes="flat_sides",
    instance_counts_classes=True,
    class_universe="flat_universe",
    sql_checks=(SqlCheck("flat_universe_check"),),  # Engine.check_classes's rule (flat_label_faults), for the SQL door
)


def evaluate(store: Store, metrics: list[str], options: Options) -> list[Row]:
    """Values of ``metrics`` for every system: example-based ones with average ``""``, label-based ones
    ``micro`` and/or ``macro`` (``options.average``)."""
    return DuckDBEngine(store).run_plan(PLAN, metrics, options)


def per_instance(source: Store | Engine, options: Options) -> pd.DataFrame:
    """Per (system, instance): ``n_true, n_pred, n_both`` (|Y|, |Z|, |Y ∩ Z|), ``n_labels`` (|L|) and the
    example-based values."""
    return as_engine(source).per_instance(PLAN, options).to_pandas()


def per_label(source: Store | Engine, options: Options) -> pd.DataFrame:
    """Per (system, class of L): ``tp, fp, fn, tn, support`` and the label-based values (the plan's per-class
    values, :func:`~hiersql.plan.class_report_sql`), ordered by system and label; computed by ``source``, an
    engine or a store (its DuckDB)."""
    import pandas as pd

    from ...plan import class_report_sql

    engine = as_engine(source)
    rows = engine.run_queries(PLAN, list(LABEL_METRICS), options,
                                           {"_flat_label": class_report_sql(PLAN, LABEL_METRICS)})["_flat_label"]
    return pd.DataFrame(rows, columns=["system", "label", "tp", "fp", "fn", "tn", "support", *LABEL_METRICS])


# ---------------------------------------------------------------------- label sets (scikit-learn style)
def star_taxonomy(labels: Iterable[str]) -> Taxonomy:
    """The taxonomy of label sets without one: a root above every label of ``labels`` (strings)."""
    from ...inputs.taxonomy import Taxonomy

    seen = set(labels)
    root = "__labels__"
    while root in seen:
        root = f"_{root}_"
    return Taxonomy.from_edges([(root, label) for label in sorted(seen)] or [(root, f"_{root}")])


@functools.lru_cache(maxsize=8)
def _star(labels: frozenset[str]) -> Taxonomy:
    """:func:`star_taxonomy` of these labels, kept for the next calls with the same labels (the one-shot
    functions reuse a kept taxonomy's tables, :mod:`hiersql.engines.oneshot`)."""
    return star_taxonomy(labels)


def label_set_store(y_true: LabelSets, y_pred: LabelSets, labels: Iterable[str] | None = None) -> Store:
    """An in-memory :class:`~hiersql.inputs.store.Store` for label sets without a taxonomy: ``y_true[i]`` and
    ``y_pred[i]`` are the label sets of instance ``i`` (read by :func:`_as_sets`), over
    :func:`star_taxonomy` of their labels and ``labels``."""
    from ...inputs.arguments import label_names
    from .. import store_from_sets

    truth, pred = _as_sets(y_true, y_pred)
    return store_from_sets(truth, pred, star_taxonomy(_seen(truth, pred) | set(label_names(labels) or ())))


def _as_sets(y_true: LabelSets, y_pred: LabelSets) -> tuple[list[list[str | None]], list[list[str | None]]]:
    """``y_true`` and ``y_pred`` (:func:`~hiersql.inputs.arguments.paired_label_sets`) as lists of labels, each read as
    a string without the spaces around it (:func:`~hiersql.inputs.arguments.label_text`; a missing one stays
    ``None``, for the reader to report)."""
    from ...inputs.arguments import label_set_members, label_text, paired_label_sets

    pairs = zip(paired_label_sets(y_true, y_pred), ("y_true", "y_pred"), strict=True)
    truth, pred = ([[label_text(label) for label in label_set_members(labelset, where, i)]
                    for i, labelset in enumerate(sets)] for sets, where in pairs)
    return truth, pred


def _seen(*sets: list[list[str | None]]) -> set[str]:
    """The labels of the label sets ``sets`` (not the missing or empty ones)."""
    return {label for labelsets in sets for labelset in labelsets for label in labelset if label}


def _score(metric: str, average: str | None, y_true: LabelSets, y_pred: LabelSets, taxonomy: Any,
           labels: Iterable[str] | None, sample_weight: Any, zero_division: Any) -> float | pd.Series:
    """The value of one measure for label sets taken as given; ``taxonomy`` (when given) only checks that
    every label is one of its nodes. For a label-based measure with ``average=None``, the per-class values as
    a Series indexed by label."""
    from ...engines.oneshot import score
    from ...inputs.arguments import label_names

    truth, pred = _as_sets(y_true, y_pred)
    names = label_names(labels)
    if taxonomy is None:
        taxonomy = _star(frozenset(_seen(truth, pred) | set(names or ())))
    return score(PLAN, metric, truth, pred, taxonomy, average, sample_weight=sample_weight, labels=names,
                 zero_division=zero_division)


_EXAMPLE_ARGS = """

    Parameters
    ----------
    y_true, y_pred:
        Sequences of label sets (one per instance; a string is a one-label set), taken as given.
    taxonomy:
        Ignored by the measure (no ancestors are added); when given, every label must be one of its nodes, so
        that a hierarchical call ``hierarchical_f1(y_true, y_pred, taxonomy)`` can swap in a flat one.
    labels:
        The label universe L (default: the labels seen); labels outside it are left out, as scikit-learn's.
    sample_weight:
        One weight per instance: the weighted mean over instances.
    zero_division:
        0, 1, nan (left out of the mean) or ``"warn"`` (0 and an
        :class:`~hiersql.UndefinedMetricWarning`).
    """


def _example(metric: str, formula: str):
    def measure(y_true: LabelSets, y_pred: LabelSets, taxonomy: Any = None, *,
                labels: Iterable[str] | None = None, sample_weight: Any = None, zero_division: Any = 0.0) -> float:
        return _score(metric, "", y_true, y_pred, taxonomy, labels, sample_weight, zero_division)

    measure.__name__ = measure.__qualname__ = metric
    measure.__doc__ = formula + _EXAMPLE_ARGS
    return measure


example_accuracy = _example("example_accuracy", "Example-based accuracy (Jaccard index) ``1/N Σ |Y ∩ Z| / |Y ∪ Z|`` "
                            "(Krstinić eq. 1); scikit-learn's ``jaccard_score(average='samples')``.")
example_precision = _example("example_precision", "Example-based precision ``1/N Σ |Y ∩ Z| / |Z|`` (Krstinić eq. 2).")
example_recall = _example("example_recall", "Example-based recall ``1/N Σ |Y ∩ Z| / |Y|`` (Krstinić eq. 3).")
example_f1 = _example("example_f1", "Example-based F1 ``1/N Σ 2|Y ∩ Z| / (|Y| + |Z|)`` (Krstinić eq. 4).")
hamming_loss = _example("hamming_loss", "Hamming loss ``1/N Σ |Y Δ Z| / |L|`` (Krstinić eq. 5), L = the classes "
                        "seen or ``labels``.")
subset_accuracy = _example("subset_accuracy", "Subset accuracy (exact match) ``1/N Σ [Y = Z]`` (Krstinić eq. 6); "
                           "scikit-learn's ``accuracy_score`` on indicator matrices.")

_LABEL_ARGS = """

    Parameters
    ----------
    y_true, y_pred, taxonomy, labels, zero_division:
        As :func:`example_precision`.
    average:
        ``"micro"`` pools TP, FP, FN over the classes of L; ``"macro"`` is the mean of the per-class values,
        ``"weighted"`` their mean weighted by support (TP + FN); ``"samples"`` the per-instance mean (the
        example-based measure; not for accuracy); ``None`` the per-class values as a Series indexed by label.
    sample_weight:
        One weight per instance: every count is a sum of weights.
    """


def _label(metric: str, formula: str):
    def measure(y_true: LabelSets, y_pred: LabelSets, taxonomy: Any = None, *, average: str | None = "micro",
                labels: Iterable[str] | None = None, sample_weight: Any = None,
                zero_division: Any = 0.0) -> float | pd.Series:
        return _score(metric, average, y_true, y_pred, taxonomy, labels, sample_weight, zero_division)

    measure.__name__ = measure.__qualname__ = metric
    measure.__doc__ = formula + _LABEL_ARGS
    return measure


label_accuracy = _label("label_accuracy", "Label-based accuracy ``(TP + TN) / N`` per class (Krstinić eq. 7, 9, 10).")
label_precision = _label("label_precision", "Label-based precision ``TP / (TP + FP)`` (Krstinić eq. 7, 9, 10).")
label_recall = _label("label_recall", "Label-based recall ``TP / (TP + FN)`` (Krstinić eq. 7, 9, 10).")
label_f1 = _label("label_f1", "Label-based F1 ``2TP / (2TP + FP + FN)`` (Krstinić eq. 8, 9, 10).")
