"""Set-based hierarchical measures: hierarchical precision, recall, F-beta and symmetric difference loss.

A thin wrapper over ``sql/set_based.sql``; see its header for the formulas.

References
----------
Kiritchenko, Matwin, Nock, Famili (2005), "Learning and evaluation in the presence of class hierarchies".
Kosmopoulos, Partalas, Gaussier, Paliouras, Androutsopoulos (2015), "Evaluation measures for hierarchical
classification: a unified view and novel approaches", §2.4 (eq. 2-5). SPEC §2.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..engines import DuckDBEngine
from ..plan import FamilyPlan, Measure, Sql
from . import REGISTRY, Options, Row, one_shot

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

    from ..store import Store

METRICS = REGISTRY["set_based"]


# From this many expected augmented labels (both sides), the DuckDB store counts with per-instance lists
# (``set_counts (duckdb)`` in sql/set_based.sql) instead of hashing one row per (instance, label) pair: below
# it both are as fast, above it the lists take a fraction of the time and memory (figures:
# benchmarks/RESULTS.md, sessions 2 and 4).
LIST_COUNTS_FROM = 5_000_000
# The lists keep the nodes found in this many augmented sets as bits (``shared_labels`` in the same query), which
# shortens the lists most; more bits lengthen every bitstring for little (RESULTS.md, session 4).
LIST_BITS = 1024


def sql_params(options: Options, engine: Any = None, metrics: Sequence[str] = ()) -> dict[str, object]:
    """Parameters of ``sql/set_based.sql``; on a DuckDB store (``engine``), ``list_counts`` is chosen from
    the size of its tables (else the pair rows are used)."""
    return {
        "include_root": bool(options.include_root),
        "max_distance": options.max_distance,
        "augment": options.augment,
        "beta": float(options.beta),
        "zero_division": float(options.zero_division),
        "list_counts": engine is not None and engine.dialect == "duckdb" and not engine.tables
        and expected_augmented_labels(engine.con) >= LIST_COUNTS_FROM,
        "list_bits": LIST_BITS,
    }


def expected_augmented_labels(con: duckdb.DuckDBPyConnection) -> float:
    """``(|truth| · |systems| + |predictions|) · |closure| / |nodes|``: the labels of both sides times the
    mean size of a node's ancestor (or descendant) set, the number of rows the pair query would hash."""
    row = con.execute(
        "SELECT ((SELECT count(*) FROM truth) * (SELECT count(*) FROM systems) + (SELECT count(*) FROM predictions))"
        " * (SELECT count(*) FROM closure) / greatest((SELECT count(*) FROM nodes), 1)"
    ).fetchall()
    return float(row[0][0])


PLAN = FamilyPlan(
    name="set_based",
    file="set_based",
    metrics=METRICS,
    steps=(Sql("set_based_instance"),),
    instance="set_based_instance",
    measures=(
        Measure("hierarchical_precision", "n_both", "n_pred"),
        Measure("hierarchical_recall", "n_both", "n_true"),
        Measure("hierarchical_f1", "(1 + $beta * $beta) * n_both", "$beta * $beta * n_true + n_pred"),
        Measure("symmetric_difference_loss", "n_true + n_pred - 2 * n_both", averages=("",),
                higher_is_better=False),
    ),
    params=sql_params,
)


def evaluate(store: Store, metrics: list[str], options: Options) -> list[Row]:
    """Values of ``metrics`` for every system, micro and/or macro (``options.average``)."""
    return DuckDBEngine(store).run_plan(PLAN, metrics, options)


def per_instance(store: Store, options: Options) -> pd.DataFrame:
    """Per-instance ``n_true, n_pred, n_both`` (sizes of Yaug, Ŷaug and their intersection) and values."""
    return DuckDBEngine(store).per_instance(PLAN, options).to_pandas()


def hierarchical_precision(y_true, y_pred, taxonomy, average: str = "micro", **options) -> float:
    """Hierarchical precision ``hP = |Ŷaug ∩ Yaug| / |Ŷaug|`` (Kiritchenko et al. 2005; Kosmopoulos et al.
    2015 §2.4).

    Parameters
    ----------
    y_true, y_pred:
        Sequences of label sets (one per instance; a string is a one-label set).
    taxonomy:
        A :class:`~hiersql.taxonomy.Taxonomy`, a path, a networkx DiGraph or ``(parent, child)`` pairs.
    average:
        ``"micro"`` pools ``|Ŷaug ∩ Yaug|`` and ``|Ŷaug|`` over instances; ``"macro"`` averages per instance.
    **options:
        ``include_root`` (False), ``max_distance`` (None), ``augment`` (``"ancestors"``,
        ``"descendants"``, ``"cesa_bianchi"``), ``zero_division`` (0).
    """
    return one_shot(evaluate, "hierarchical_precision", y_true, y_pred, taxonomy, average, **options)


def hierarchical_recall(y_true, y_pred, taxonomy, average: str = "micro", **options) -> float:
    """Hierarchical recall ``hR = |Ŷaug ∩ Yaug| / |Yaug|``; arguments as :func:`hierarchical_precision`."""
    return one_shot(evaluate, "hierarchical_recall", y_true, y_pred, taxonomy, average, **options)


def hierarchical_f1(y_true, y_pred, taxonomy, average: str = "micro", beta: float = 1.0, **options) -> float:
    """Hierarchical F-beta ``hF = (1+β²)·hP·hR / (β²·hP + hR)``; micro combines the micro hP and hR, macro
    averages the per-instance ``(1+β²)|Ŷaug ∩ Yaug| / (β²|Yaug| + |Ŷaug|)``. Arguments as
    :func:`hierarchical_precision`."""
    return one_shot(evaluate, "hierarchical_f1", y_true, y_pred, taxonomy, average, beta=beta, **options)


def symmetric_difference_loss(y_true, y_pred, taxonomy, **options) -> float:
    """Mean over instances of ``|Ŷaug Δ Yaug|`` (Kosmopoulos et al. 2015 §2.4)."""
    return one_shot(evaluate, "symmetric_difference_loss", y_true, y_pred, taxonomy, "macro", "", **options)
