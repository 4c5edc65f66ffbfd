"""Mistake severity, hierarchical distance@k, top-k accuracy and hierarchical precision@k: the measures of
hierarchy-aware deep classifiers (Bertinetto et al. 2020; Karthik et al. 2021).

A thin wrapper over ``severity.sql``; see its header for the formulas and ``docs/severity.md`` for the
conventions. Per instance the predicted labels are taken in the store's rank (the one rule,
:data:`~hiersql.inputs.tables.RANK_ORDER`: by score, highest first, ties by label, unless a rank column
says otherwise), the top k kept, and each compared with the true label by ``d``, the height of their lowest
common ancestor (the authors' distance; ``severity_distance="edges"``: the edge count). With ``n ≤ k``
ranked labels ``p_1 … p_n`` and ``d_j = d(y, p_j)``::

    top_k_accuracy                   = [y ∈ {p_1 … p_n}]
    hierarchical_distance_at_k       = Σ_j d_j / n
    best_hierarchical_distance_at_k  = min_j d_j
    mistake_severity                 = Σ_j d_j / n, over the instances with d_1 > 0 only
    hierarchical_precision_at_k      = Σ_j (1 − d_j / D) / Σ_{j ≤ k} best_j(y)
    hierarchical_map_at_k            = the mean of hierarchical_precision_at_k' over k' = 1 … k

each averaged over the instances where it is defined. Every k of the option ``k`` is a run of the plan
(:attr:`~hiersql.plan.FamilyPlan.groups`) whose rows carry ``@k`` in the ``average`` column; the class
distances and the best retrievals do not depend on k and are made once for all runs
(:attr:`~hiersql.plan.FamilyPlan.shared`), each run keeping the ranks up to its k. A system has
rows at k = 1, and at k > 1 only when it scored its labels (the query ``severity_max_k`` holds the rule):
hard predictions rank one label.

References
----------
Bertinetto, Mueller, Tertikas, Samangooei, Lord (2020), "Making Better Mistakes: Leveraging Class Hierarchies
with Deep Networks", CVPR, §4 (and ``better_mistakes/model/run_xent.py`` of fiveai/making-better-mistakes).
Karthik, Prabhu, Dokania, Torr (2021), "No Cost Likelihood Manipulation at Test Time for Making Better
Mistakes in Deep Networks", ICLR.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from ...engines import DuckDBEngine
from ...plan import FamilyPlan, Measure, Sql, SqlCheck
from .. import REGISTRY, Options, Row, as_engine

if TYPE_CHECKING:
    import pandas as pd

    from ...engines import Engine
    from ...inputs.store import Store

METRICS = REGISTRY["severity"]
NAN = "CAST('NaN' AS DOUBLE)"  # the mean over no instance (no mistake, no scored system at k > 1)


def plan_params(options: Options, engine: Any = None, metrics: Sequence[str] = ()) -> dict[str, object]:
    """``$top_k`` (the group's one k), ``$severity_distance`` and ``$precision`` (the pairs of all classes are
    needed only for hierarchical precision and mAP)."""
    return {"top_k": options.k[0], "severity_distance": options.severity_distance,
            "precision": bool({"hierarchical_precision_at_k", "hierarchical_map_at_k"} & set(metrics))}


def _groups(metrics: Sequence[str], options: Options) -> list[tuple[list[str], Options]]:
    """One run per k."""
    return [(list(metrics), options.with_(k=(k,))) for k in options.k]


# Under ``all`` (or the family's name), hierarchical precision and mAP only with at most this many classes:
# their best retrievals and D compare every pair of classes (|C|² distances: 4 M at this size, a few seconds in
# DuckDB; MeSH's 27,900 nodes would be 780 M). Named, they are computed whatever the size.
PAIRWISE_CLASSES = 2_000
_PAIRWISE = ("hierarchical_precision_at_k", "hierarchical_map_at_k")


def _metric_applies(engine: Any, metric: str, options: Options | None = None) -> bool:
    """Whether ``all`` computes ``metric``: when some system has values at a k of ``options`` (:func:`_ranked`);
    hierarchical precision and mAP then with at most :data:`PAIRWISE_CLASSES` classes (leaves and labels
    seen)."""
    if options is not None and not _ranked(engine, options):
        return False
    if metric not in _PAIRWISE:
        return True
    return engine.run("severity", "severity_class_count")[0][0] <= PAIRWISE_CLASSES


def _ranked(engine: Any, options: Options) -> bool:
    """Whether some system has values at the least k of ``options`` (the rule of ``severity_max_k``: k = 1,
    or scores), so that the run has a row: no :func:`_k_fault`."""
    return not _k_fault(engine, options)


def _k_fault(engine: Any, options: Options) -> list[tuple]:
    """The row of ``severity_k_fault`` at the least k of ``options`` (why no system has values there; the SQL
    door's rule too), none when some system has them."""
    return engine.run("severity", "severity_k_fault", plan_params(options.with_(k=options.k[:1])))


def _check(engine: Any, metrics: Sequence[str], options: Options) -> None:
    """Named measures whose every k is above 1 need a system with scores: the fault of :func:`_k_fault`, an
    :class:`~hiersql.options.OptionError` naming ``k`` (``--k``)."""
    from ...options import OptionError

    for (fault,) in _k_fault(engine, options):
        raise OptionError("k", fault, ",".join(map(str, options.k)))


def _measure(metric: str, value: str, higher_is_better: bool, bounds: tuple[float, float]) -> Measure:
    """A plain mean over the instances where ``value`` is not NULL."""
    return Measure(metric, value, averages=("",), higher_is_better=higher_is_better, bounds=bounds, zero=NAN)


PLAN = FamilyPlan(
    name="severity",
    file="severity",
    metrics=METRICS,
    steps=(Sql("severity_ranked_systems"), Sql("severity_instance")),
    instance="severity_instance",
    measures=(
        _measure("top_k_accuracy", "CASE WHEN n_true > 0 THEN hit END", True, (0.0, 1.0)),
        _measure("hierarchical_distance_at_k", "CASE WHEN n > 0 THEN 1.0 * total / n END", False, (0.0, math.inf)),
        _measure("best_hierarchical_distance_at_k", "nearest", False, (0.0, math.inf)),
        _measure("mistake_severity", "CASE WHEN top1 > 0 THEN 1.0 * total / n END", False, (0.0, math.inf)),
        _measure("hierarchical_precision_at_k", "similarity / best_similarity", True, (0.0, 1.0)),
        _measure("hierarchical_map_at_k", "average_precision", True, (0.0, 1.0)),
    ),
    params=plan_params,
    check=_check,
    groups=_groups,
    run_average="@{top_k}",
    metric_applies=_metric_applies,
    systems="severity_ranked_systems",
    sql_checks=(SqlCheck("severity_k_check", tuple(METRICS)),),  # _check's rule, for a measure named
    shared=("severity_max_k", "severity_distances", "severity_best_levels"),
)


def evaluate(store: Store, metrics: list[str], options: Options) -> list[Row]:
    """Values of ``metrics`` for every system, one row per k (average ``@k``)."""
    return DuckDBEngine(store).run_plan(PLAN, metrics, options)


def per_instance(source: Store | Engine, options: Options) -> pd.DataFrame:
    """The per-instance counts and values for every k of ``options.k`` (column ``k``), rows ordered by k,
    system and instance; computed by ``source``, an engine or a store's DuckDB."""
    import pandas as pd

    engine = as_engine(source)
    frames = []
    for _, group in _groups(list(METRICS), options):
        frame = engine.per_instance(PLAN, group).to_pandas()
        frame.insert(2, "k", group.k[0])
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


# -------------------------------------------------------------------- the mistakes' view (breakdown, report)
def histogram(source: Store | Engine, options: Options | None = None) -> pd.DataFrame:
    """The mistakes by severity (Bertinetto et al. 2020, Fig. 1): ``system, distance, instances``, per system
    the number of instances whose top-1 label is wrong at each distance ``d_1 > 0`` to the truth, for every
    distance some system's mistakes have (query ``severity_histogram``), ordered by system and distance.
    ``options.severity_distance`` is the distance; ``options.k`` is not read (the top-1 label). A system's
    ``Σ distance · instances / Σ instances`` is its :func:`mistake_severity` at k = 1."""
    import pandas as pd

    rows = as_engine(source).run_queries(PLAN, ["mistake_severity"], _top1(options), {
        "severity_histogram_rows": "SELECT system, distance, instances FROM severity_histogram"})
    frame = pd.DataFrame(rows["severity_histogram_rows"], columns=["system", "distance", "instances"])
    return frame.astype({"distance": "int64", "instances": "int64"}).sort_values(["system", "distance"],
                                                                                 ignore_index=True)


def tradeoff(source: Store | Engine, options: Options | None = None) -> pd.DataFrame:
    """Top-1 error against mistake severity (Bertinetto et al. 2020, Fig. 1): ``system, top1_error,
    mistake_severity``, ``top1_error = 1 − top_k_accuracy`` and ``mistake_severity`` at k = 1 (NaN for a system
    without mistake), ordered by system; ``options`` as :func:`histogram`."""
    import pandas as pd

    from .. import compute

    rows = pd.DataFrame(compute(source, ["top_k_accuracy", "mistake_severity"], _top1(options)))
    wide = rows.pivot(index="system", columns="metric", values="value").sort_index()
    return pd.DataFrame({"system": wide.index, "top1_error": 1.0 - wide["top_k_accuracy"].to_numpy(),
                         "mistake_severity": wide["mistake_severity"].to_numpy()})


def _top1(options: Options | None) -> Options:
    """``options`` (default :class:`~hiersql.options.Options`) at k = 1."""
    return (options or Options()).with_(k=(1,))


# ------------------------------------------------------------------------------------- one-shot functions
def ranked_labels(y_score: Any, labels: Sequence[str] | None, y_true: Sequence[Any], k: int,
                  leaves: Collection[str]) -> tuple[list[list[str]], list[float]]:
    """The top ``k`` labels of each row of the score matrix ``y_score`` (``(n, m)``, column ``j`` scoring
    ``labels[j]``; without ``labels``, the sorted distinct labels of ``y_true``, as scikit-learn's
    ``top_k_accuracy_score``), highest score first, ties by label, and their scores, flattened in that order;
    the first row keeps after them every other column whose label is not in ``leaves``. A matrix of another
    shape or a score that is not a finite number is an :class:`~hiersql.options.OptionError` naming the
    argument (the caller checks ``labels``)."""
    import numpy as np

    from ...options import OptionError

    scores = np.asarray(y_score, dtype=float)
    if labels is None:
        labels = sorted({str(label) for label in y_true})
    names = [str(label) for label in labels]
    if scores.ndim != 2 or scores.shape[1] != len(names):
        raise OptionError("y_score", f"must be a matrix with one column per label ({len(names)}: pass labels="
                          " to name its columns)", f"shape {scores.shape}")
    if not np.isfinite(scores).all():
        raise OptionError("y_score", "must hold finite numbers", "nan or inf")
    by_name = np.argsort(np.argsort(names, kind="stable"))  # each column's place in label order
    order = np.lexsort((np.broadcast_to(by_name, scores.shape), -scores), axis=-1)
    top = order[:, :k]
    rows = [[names[j] for j in row] for row in top.tolist()]
    flat = np.take_along_axis(scores, top, axis=1).ravel().tolist()
    if rows:
        extra = [j for j in order[0, k:].tolist() if names[j] not in leaves]
        rows[0] += [names[j] for j in extra]
        flat[top.shape[1]:top.shape[1]] = scores[0, extra].tolist()
    return rows, flat


def _one_shot(metric: str, y_true: Any, y_score: Any, taxonomy: Any, k: int, labels: Sequence[str] | None,
              options: dict[str, Any]) -> float:
    """``metric`` at ``k`` for a score matrix (:func:`ranked_labels`) or for hard predictions (one label, or
    one label set, per instance; ``k`` must then be 1: :func:`_check`).

    A score matrix is the long table of its cells, as evaluate would read it, less the cells no measure at ``k``
    reads: the labels ranked below ``k``, except each column's label that is not a leaf, which is kept once
    (the classes of hierarchical precision hold every label seen). ``labels`` names taxonomy nodes, each once
    (the rule of fixed classes: :meth:`~hiersql.engines.Engine.check_classes`)."""
    import numpy as np

    from ...engines.oneshot import score
    from ...inputs.arguments import label_names, label_sets
    from ...inputs.taxonomy import Taxonomy, as_taxonomy
    from ...options import OptionError

    true = label_sets(y_true, "y_true")
    try:
        matrix = np.asarray(y_score)
    except ValueError:  # ragged label sets
        matrix = np.asarray([])
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise OptionError("k", "must be an integer >= 1", k)
    if not (matrix.ndim == 2 and matrix.dtype.kind in "fiu"):  # labels, not a matrix of numbers
        if labels is not None:
            raise OptionError("labels", "names the columns of a score matrix; y_score holds labels", "given")
        return score(PLAN, metric, y_true, y_score, taxonomy, "", k=k, **options)
    tax = as_taxonomy(taxonomy)
    leaves = set(tax.leaves)
    y_pred, flat = ranked_labels(matrix, labels, [x for x in true if isinstance(x, str)], k, leaves)
    return score(PLAN, metric, true, y_pred, tax, "", scores=flat, k=k, columns=label_names(labels),
                 keep=isinstance(taxonomy, Taxonomy), **options)  # the taxonomy read once, kept as given


def top_k_accuracy(y_true, y_score, taxonomy, k: int = 1, *, labels=None, **options) -> float:
    """The share of instances whose true label is among the ``k`` labels of highest score.

    Parameters
    ----------
    y_true:
        One true label per instance (or one label set: a hit is any of them).
    y_score:
        An ``(n, m)`` score matrix, column ``j`` scoring ``labels[j]`` (scikit-learn's
        ``top_k_accuracy_score`` layout), ranked highest first, ties by label; or hard predictions, one label
        per instance (``k`` must then be 1).
    taxonomy:
        A :class:`~hiersql.inputs.taxonomy.Taxonomy`, a path, a networkx DiGraph or ``(parent, child)`` pairs.
    k:
        How many ranked labels count.
    labels:
        The columns' labels (default: the sorted labels of ``y_true``, as scikit-learn).
    **options:
        ``severity_distance`` (``"height"``, ``"edges"``).
    """
    return _one_shot("top_k_accuracy", y_true, y_score, taxonomy, k, labels, options)


def hierarchical_distance_at_k(y_true, y_score, taxonomy, k: int = 1, *, labels=None, **options) -> float:
    """The mean over instances of ``Σ_{j ≤ k} d(y, p_j) / k``: the distance (height of the lowest common
    ancestor) between the true label and each of the ``k`` labels of highest score (Bertinetto et al. 2020,
    "hierarchical distance@k"). Arguments as :func:`top_k_accuracy`."""
    return _one_shot("hierarchical_distance_at_k", y_true, y_score, taxonomy, k, labels, options)


def best_hierarchical_distance_at_k(y_true, y_score, taxonomy, k: int = 1, *, labels=None, **options) -> float:
    """The mean over instances of ``min_{j ≤ k} d(y, p_j)``, the nearest of the top ``k`` labels. Arguments as
    :func:`top_k_accuracy`."""
    return _one_shot("best_hierarchical_distance_at_k", y_true, y_score, taxonomy, k, labels, options)


def mistake_severity(y_true, y_score, taxonomy, k: int = 1, *, labels=None, **options) -> float:
    """The average mistake severity: over the instances whose top-1 label is wrong, the mean of
    ``Σ_{j ≤ k} d(y, p_j) / k`` (``k = 1``: the distance of the top-1 label; Bertinetto et al. 2020); NaN when
    no top-1 label is wrong. Arguments as :func:`top_k_accuracy`."""
    return _one_shot("mistake_severity", y_true, y_score, taxonomy, k, labels, options)


def hierarchical_precision_at_k(y_true, y_score, taxonomy, k: int = 1, *, labels=None, **options) -> float:
    """The mean over instances of ``Σ_{j ≤ k} (1 − d(y, p_j) / D) / Σ_{j ≤ k} best_j(y)``: the similarity of the
    top ``k`` labels over that of the ``k`` classes nearest to ``y`` (Bertinetto et al. 2020); ``D`` is the
    largest distance between two classes (the leaves and the labels seen). Instances with several true labels
    are left out. Arguments as :func:`top_k_accuracy`."""
    return _one_shot("hierarchical_precision_at_k", y_true, y_score, taxonomy, k, labels, options)


def hierarchical_map_at_k(y_true, y_score, taxonomy, k: int = 1, *, labels=None, **options) -> float:
    """The mean over instances of the mean of :func:`hierarchical_precision_at_k` at ``k' = 1 … k``
    (Bertinetto et al.'s hierarchical mAP@k). Arguments as :func:`top_k_accuracy`."""
    return _one_shot("hierarchical_map_at_k", y_true, y_score, taxonomy, k, labels, options)
