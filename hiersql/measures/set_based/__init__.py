"""Set-based hierarchical measures: hierarchical precision, recall, F-beta and symmetric difference loss.

A thin wrapper over ``set_based.sql``; see its header for the formulas.

References
----------
Kiritchenko, Matwin, Nock, Famili (2005), "Learning and evaluation in the presence of class hierarchies".
Kosmopoulos, Partalas, Gaussier, Paliouras, Androutsopoulos (2015), "Evaluation measures for hierarchical
classification: a unified view and novel approaches", §2.4 (eq. 2-5). SPEC §2.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...engines import DuckDBEngine, Engine
from ...engines.oneshot import score
from ...plan import CLASSES, FamilyPlan, Measure, Sql
from .. import REGISTRY, Options, Row, as_engine
from ..flat import label_table

if TYPE_CHECKING:
    import pandas as pd

    from ...inputs.store import Store

METRICS = REGISTRY["set_based"]


# From this many expected augmented labels (both sides), the DuckDB store counts with per-instance lists
# (``set_counts (duckdb)`` in set_based.sql) instead of hashing one row per (instance, label) pair: below
# it both are as fast, above it the lists take a fraction of the time and memory (figures:
# benchmarks/RESULTS.md, sessions 2 and 4).
LIST_COUNTS_FROM = 5_000_000
# DuckDB keeps the lists' aggregates in memory, where the pair rows spill to disk: the lists of a range of
# instances take this many bytes an expected augmented label, and the ranges are cut so that one fits within
# DuckDB's memory_limit (calibrated on two inputs: RESULTS.md, "A million instances" and "A deep taxonomy")
LIST_BYTES = 24
# The lists keep the nodes found in this many augmented sets as bits (``shared_labels`` in the same query), which
# shortens the lists most; more bits lengthen every bitstring for little (RESULTS.md, session 4).
LIST_BITS = 1024


def plan_params(options: Options, engine: Any = None, metrics: Sequence[str] = ()) -> dict[str, object]:
    """Parameters of ``set_based.sql``; on a DuckDB store (``engine``), ``list_counts`` is chosen from the size
    of its tables (else the pair rows are used), and ``instance_batches``, the ranges of instances whose lists
    are counted one after the other, from DuckDB's memory limit: ``⌈labels · LIST_BYTES / memory_limit⌉``."""
    store = engine is not None and engine.dialect == "duckdb" and not engine.tables
    labels = expected_augmented_labels(engine) if store else 0.0
    list_counts = labels >= LIST_COUNTS_FROM
    return {
        "include_root": bool(options.include_root),
        "max_distance": options.max_distance,
        "augment": options.augment,
        "beta": float(options.beta),
        "zero_division": float(options.zero_division),
        "list_counts": list_counts,
        "list_bits": LIST_BITS,
        "instance_batches": math.ceil(labels * LIST_BYTES / engine.memory_limit())
        if list_counts and options.augment != "cesa_bianchi" else 1,  # (the tolerance counts pair rows)
    }


def expected_augmented_labels(engine: Any) -> float:
    """``(|truth| · |systems| + |predictions|) · |closure| / |nodes|``: the labels of both sides times the
    mean size of a node's ancestor (or descendant) set, the number of rows the pair query would hash. The
    taxonomy's counts are a query of their own: a one-shot call keeps its rows for the next call with the same
    taxonomy (:class:`~hiersql.engines.oneshot.FoldedEngine`)."""
    (labels,), = engine.execute("SELECT (SELECT count(*) FROM truth) * (SELECT count(*) FROM systems)"
                                " + (SELECT count(*) FROM predictions)")
    (closure, nodes), = engine.execute("SELECT (SELECT count(*) FROM closure), (SELECT count(*) FROM nodes)")
    return labels * closure / max(nodes, 1)


RATIOS = (("hierarchical_precision", "n_both", "n_pred"), ("hierarchical_recall", "n_both", "n_true"),
          ("hierarchical_f1", "(1 + $beta * $beta) * n_both", "$beta * $beta * n_true + n_pred"))


PLAN = FamilyPlan(
    name="set_based",
    file="set_based",
    metrics=METRICS,
    steps=(Sql("set_counts"), Sql("set_based_instance")),
    instance="set_based_instance",
    measures=(
        # per instance: micro pools the counts; samples is the per-instance mean, macro its alias (the name of
        # Kiritchenko et al. and HiClass); per class of the augmented sets (scikit-learn's labels): label_macro,
        # weighted, and micro over fixed labels
        *(Measure(metric, numerator, denominator, averages=("micro", "macro", "samples"))
          for metric, numerator, denominator in RATIOS),
        *(Measure(metric, numerator, denominator, averages=("label_macro", "weighted"), unit=CLASSES)
          for metric, numerator, denominator in RATIOS),
        Measure("symmetric_difference_loss", "n_true + n_pred - 2 * n_both", averages=("",),
                higher_is_better=False, bounds=(0.0, math.inf)),
    ),
    params=plan_params,
    tables=lambda options: {} if options.labels is None else {"class_labels": label_table(options)["flat_labels"]},
    classes="set_pairs",
)


def evaluate(store: Store, metrics: list[str], options: Options) -> list[Row]:
    """Values of ``metrics`` for every system, micro and/or macro (``options.average``)."""
    return DuckDBEngine(store).run_plan(PLAN, metrics, options)


def per_instance(source: Store | Engine, options: Options) -> pd.DataFrame:
    """Per-instance ``n_true, n_pred, n_both`` (sizes of Yaug, Ŷaug and their intersection) and values."""
    return as_engine(source).per_instance(PLAN, options).to_pandas()


def hierarchical_precision(y_true, y_pred, taxonomy, average: str | None = "micro", *, sample_weight=None,
                           labels=None, zero_division=0.0, **options) -> float | pd.Series:
    """Hierarchical precision ``hP = |Ŷaug ∩ Yaug| / |Ŷaug|`` (Kiritchenko et al. 2005; Kosmopoulos et al.
    2015 §2.4).

    Parameters
    ----------
    y_true, y_pred:
        Sequences of label sets (one per instance; a string is a one-label set).
    taxonomy:
        A :class:`~hiersql.inputs.taxonomy.Taxonomy` (passed again, its tables are reused), a path, a networkx
        DiGraph or ``(parent, child)`` pairs.
    average:
        ``"micro"`` pools ``|Ŷaug ∩ Yaug|`` and ``|Ŷaug|`` over instances; ``"samples"`` is the mean of the
        per-instance values, ``"macro"`` its alias (the "macro" of Kiritchenko et al. and HiClass);
        ``"label_macro"``, ``"weighted"`` and ``None`` are over the classes of the augmented sets, as
        scikit-learn's ``macro``, ``weighted`` and ``None`` on them (``None``: a Series of per-class values).
        See ``docs/sklearn.md``.
    sample_weight:
        One weight per instance (micro, samples and the per-class counts).
    labels:
        The classes of the per-class averages (taxonomy nodes), as scikit-learn's ``labels``; an error with
        ``micro``, ``samples`` and ``macro``, which are over the whole augmented sets.
    zero_division:
        The value of a ratio whose denominator is 0: 0, 1, nan (left out of means) or ``"warn"`` (0 and an
        :class:`~hiersql.UndefinedMetricWarning`).
    **options:
        ``include_root`` (False), ``max_distance`` (None), ``augment`` (``"ancestors"``,
        ``"descendants"``, ``"cesa_bianchi"``).
    """
    return score(PLAN, "hierarchical_precision", y_true, y_pred, taxonomy, average, sample_weight=sample_weight,
                 labels=labels, zero_division=zero_division, **options)


def hierarchical_recall(y_true, y_pred, taxonomy, average: str | None = "micro", *, sample_weight=None,
                        labels=None, zero_division=0.0, **options) -> float | pd.Series:
    """Hierarchical recall ``hR = |Ŷaug ∩ Yaug| / |Yaug|``; arguments as :func:`hierarchical_precision`."""
    return score(PLAN, "hierarchical_recall", y_true, y_pred, taxonomy, average, sample_weight=sample_weight,
                 labels=labels, zero_division=zero_division, **options)


def hierarchical_f1(y_true, y_pred, taxonomy, average: str | None = "micro", beta: float = 1.0, *,
                    sample_weight=None, labels=None, zero_division=0.0, **options) -> float | pd.Series:
    """Hierarchical F-beta ``hF = (1+β²)·hP·hR / (β²·hP + hR)``; micro combines the micro hP and hR, samples
    (and its alias macro) averages the per-instance ``(1+β²)|Ŷaug ∩ Yaug| / (β²|Yaug| + |Ŷaug|)``, the
    per-class averages the per-class F-beta; each as ``(1+β²)·n_both / (β²·n_true + n_pred)`` on the counts, so
    ``beta=0`` is hP, zero_division included, as scikit-learn's ``fbeta_score``. Arguments as
    :func:`hierarchical_precision`."""
    return score(PLAN, "hierarchical_f1", y_true, y_pred, taxonomy, average, sample_weight=sample_weight, labels=labels,
                 zero_division=zero_division, beta=beta, **options)


def symmetric_difference_loss(y_true, y_pred, taxonomy, average: str = "", *, sample_weight=None, **options) -> float:
    """Mean over instances of ``|Ŷaug Δ Yaug|`` (Kosmopoulos et al. 2015 §2.4), weighted by
    ``sample_weight`` when given."""
    return score(PLAN, "symmetric_difference_loss", y_true, y_pred, taxonomy, average, sample_weight=sample_weight,
                 **options)
