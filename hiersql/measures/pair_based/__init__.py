"""Pair-based hierarchical measures: graph induced error (GIE), multi-label graph induced accuracy (MGIA),
tree-induced error and the all-pairs error.

The label-pair distances, the problems and MGIA's nearest classes come from ``pair_based.sql``; the
pairings are minimum-cost flows of :mod:`hiersql.measures.pair_based.pairing`, all instances of all systems in one
solve (:func:`~hiersql.measures.pair_based.pairing.min_cost`: a one-to-one problem of a few classes by trying
each of its pairings). Per
instance (T, P: the true and predicted sets; d: the distance of SPEC §3; dmax: the cost of a default class):

- ``graph_induced_error``: the cost of the best one-to-one pairing, unpaired classes at dmax (Fig. 5).
- ``mgia_fn``: fn, the cost of MGIA's pairing; ``mgia = 1 − fn / (|P ∪ T| · dmax)``, 1 when P = T.
- ``tree_induced_error``: the cost of the best one-to-one pairing without default classes (Fig. 4; Dekel et
  al. 2004), defined when |T| = |P| (for single-label data: d(y, ŷ)).
- ``all_pairs_error``: the sum of d over all pairs of T × P (Sun & Lim 2001), 0 when a set is empty.

With ``empty_prediction="root"`` an empty P (and a non-empty T) is scored as the root predicted for each true
label: both errors are then ``Σ_{u ∈ T} d(u, root)``. GIE and MGIA define the empty prediction themselves (its
true classes go to the default class at dmax) and refuse the option.

Values are averaged over the instances (every instance of the truth, also empty ones) with average ``""``;
MGIA also has ``"micro"``, ``1 − Σ fn / (Σ |P ∪ T| · dmax)``, and ``"macro"``, the mean of the per-instance
values. See ``docs/pair_based.md``.

References
----------
Kosmopoulos, Partalas, Gaussier, Paliouras, Androutsopoulos (2015), "Evaluation measures for hierarchical
classification: a unified view and novel approaches", §2.3. SPEC §3.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ...engines import DuckDBEngine, Engine
from ...engines.oneshot import score
from ...errors import InputError
from ...plan import FamilyPlan, Measure, Python, Sql, instance_measures
from .. import REGISTRY, Options, Row, as_engine
from . import pairing

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

    from ...inputs.store import Store

METRICS = REGISTRY["pair_based"]
_UNBOUNDED = ("tree_induced_error", "all_pairs_error")  # no default class: every pair counts


@dataclass(frozen=True)
class _Data:
    """The problems of every (system, instance) and their candidate pairs, in problem order."""

    system: np.ndarray
    instance_id: np.ndarray
    n_true: np.ndarray
    n_pred: np.ndarray
    n_shared: np.ndarray
    nearest_sum: np.ndarray
    root_distance: np.ndarray  # Σ d(u, root) of a problem scored as the root (empty_prediction="root"), else NaN
    problems: pairing.Problems
    mutual: pairing.Problems


def _distance_limit(options: Options) -> str:
    """``"side"`` (default): ``max_distance`` bounds the climb from each class to a common ancestor (as the
    Kosmopoulos tables were computed, and as HEMKit does); ``"pair"``: it bounds d(u, v)."""
    return options.distance_limit


def plan_params(options: Options, engine: Any = None, metrics: Sequence[str] = ()) -> dict[str, object]:
    """The ``$parameters`` of ``pair_based.sql`` (``max_distance`` bounds d(u, v), or with
    ``distance_limit="side"`` the climb of each class to a common ancestor: ``max_climb``), and the metrics
    the pairing step computes; ``mgia_nearest``: whether MGIA's nearest classes are needed (MGIA asked for,
    with ``pairing="nearest"``), else ``mgia_nearest`` and ``mgia_mutual_pairs`` stay empty; ``pair_flows``:
    whether a pairing flow is solved over the candidate pairs (any other metric, or ``pairing="flow"``), else
    ``pair_flow_arcs`` stays empty."""
    per_side = _distance_limit(options) == "side"
    nearest = options.pairing == "nearest" and any(m in metrics for m in ("mgia", "mgia_fn"))
    flows = not nearest or any(m not in ("mgia", "mgia_fn") for m in metrics)
    return {"max_distance": None if per_side else options.max_distance,
            "max_climb": options.max_distance if per_side else None, "dmax": float(options.dmax),
            "empty_prediction": options.empty_prediction, "mgia_nearest": nearest, "pair_flows": flows,
            "pair_metrics": list(metrics)}


def _load(con: duckdb.DuckDBPyConnection) -> _Data:
    """The problems of the tables of ``pair_based.sql`` on ``con`` as arrays. Problems and classes are
    renumbered densely from 0 in their order: a part of the problems (a partition, see the plan's
    ``partition_by``) gives the same values as all of them."""
    def fetch(table: str, columns: str, order: str) -> dict[str, np.ndarray]:
        # one statement (a relation's table + order + fetch costs half again as much on small tables)
        return con.execute(f"SELECT {columns} FROM {table} ORDER BY {order}").fetchnumpy()

    sizes = fetch("pair_problem_sizes", "*", "problem")
    k = len(sizes["problem"])
    pred = fetch("pair_pred_classes", "node, problem", "node")
    true = fetch("pair_true_classes", "node, problem", "node")
    arcs = fetch("pair_flow_arcs", "pred_node, true_node, distance", "pred_node, true_node")
    mutual = fetch("mgia_mutual_pairs", "pred_node, true_node, distance", "pred_node, true_node")

    def dense(ids: np.ndarray, among: np.ndarray) -> np.ndarray:
        return np.searchsorted(_ints(among), _ints(ids))

    def problems(a: dict[str, np.ndarray], cost: np.ndarray) -> pairing.Problems:
        return pairing.Problems(
            k, dense(pred["problem"], sizes["problem"]), dense(true["problem"], sizes["problem"]),
            dense(a["pred_node"], pred["node"]), dense(a["true_node"], true["node"]),
            np.asarray(cost, dtype=float), np.asarray(a["distance"]) == 0,
        )

    return _Data(
        system=np.asarray(sizes["system"], dtype=object),
        instance_id=np.asarray(sizes["instance_id"], dtype=object),
        n_true=_ints(sizes["n_true"]),
        n_pred=_ints(sizes["n_pred"]),
        n_shared=_ints(sizes["n_shared"]),
        nearest_sum=np.asarray(sizes["nearest_sum"], dtype=float),
        root_distance=np.ma.filled(np.ma.asarray(sizes["root_distance"], dtype=float), np.nan),  # NULL: NaN
        problems=problems(arcs, arcs["distance"]),
        mutual=problems(mutual, -np.asarray(mutual["distance"], dtype=float)),
    )


def _ints(values: np.ndarray) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


def graph_induced_errors(data: _Data, options: Options) -> np.ndarray:
    """GIE per problem: min-cost pairing with αp = βp = αt = βt = 1 and default classes at dmax
    (Kosmopoulos et al. Fig. 5). ``shared="reuse"``: a class in both sets is paired with itself at 0 and may
    still partner one misclassified class on each side (reproduces the paper's Table 2)."""
    return pairing.min_cost(data.problems, "gie", options.dmax, shared=options.shared)


def mgia_fns(data: _Data, options: Options) -> np.ndarray:
    """MGIA's fn per problem.

    ``pairing="nearest"`` (SPEC §3): each class of T and of P picks its nearest class of the other set (the
    default, at dmax, only when none is within ``max_distance``); fn = Σ d over the distinct chosen pairs.
    Among equally near classes the choice minimising fn is taken: fn = Σ_x nearest(x) − the weight of a
    heaviest matching of the pairs nearest for both their classes (a pair picked from both sides counts once).
    ``pairing="flow"``: the min-cost flow of Fig. 6 (αp = αt = 1, βp = N, βt = M, defaults at dmax).
    """
    if options.pairing == "flow":
        return pairing.min_cost(data.problems, "mgia", options.dmax)
    return data.nearest_sum + pairing.min_cost(data.mutual, "matching")


def _denominator(data: _Data, options: Options) -> np.ndarray:
    union = data.n_true + data.n_pred - data.n_shared
    return union if options.denominator == "union" else union - data.n_shared


def tree_induced_errors(data: _Data, options: Options) -> np.ndarray:
    """Tree-induced error per problem (Dekel et al. 2004; Kosmopoulos et al. Fig. 4): min-cost one-to-one
    pairing of all classes, no default classes; NaN where |T| ≠ |P| (undefined), except for an empty P
    scored as the root (``empty_prediction="root"``): ``Σ_{u ∈ T} d(u, root)``."""
    defined = data.n_true == data.n_pred
    value = np.full(len(defined), np.nan)
    value[defined] = pairing.min_cost(data.problems.restrict(defined), "tree_induced", options.dmax)[defined]
    return _scored_as_root(data, value)


def _scored_as_root(data: _Data, value: np.ndarray) -> np.ndarray:
    """``value`` with the problems scored as the root set to their ``root_distance``."""
    root = ~np.isnan(data.root_distance)
    value[root] = data.root_distance[root]
    return value


def all_pairs_errors(data: _Data, options: Options) -> np.ndarray:
    """All-pairs error per problem (Sun & Lim 2001; Kosmopoulos et al. §2.3.2): αp = βp = N, αt = βt = M,
    no default classes, so every pair of T × P is used: Σ d(t, p); an empty P scored as the root
    (``empty_prediction="root"``) gives ``Σ_{u ∈ T} d(u, root)``.

    When every pair is a candidate (no maximum distance left one out) the flow has one solution, every pair
    once, and its cost is that sum, added in the order :func:`hiersql.measures.pair_based.pairing.solve` adds it (the
    pairs in
    order; no default class): no flow is solved."""
    problems = data.problems
    n_pred, n_true = problems.sizes()
    arc_problem = problems.pred_problem[problems.arc_pred]
    if np.array_equal(np.bincount(arc_problem, minlength=problems.n_problems), n_pred * n_true):
        cost = np.bincount(arc_problem, weights=problems.arc_cost, minlength=problems.n_problems)
    else:  # some pair missing: the flow says there is no pairing
        cost = pairing.min_cost(problems, "all_pairs", options.dmax)
    return _scored_as_root(data, cost)


def solve_pairings(con: duckdb.DuckDBPyConnection, params: dict[str, object], options: Options) -> None:
    """The pairing step: ``pair_instance(system, instance_id, n_true, n_pred, n_shared, mgia_size, <metric>
    ...)`` from the problems on ``con``, one row per problem, for the metrics of ``params["pair_metrics"]``
    (``mgia_size`` = MGIA's denominator · dmax)."""
    import pyarrow as pa

    data = _load(con)
    metrics = list(params["pair_metrics"])
    generated = {m.metric for m in instance_measures(PLAN)}  # per-instance values from the declarations (MGIA)
    values: dict[str, np.ndarray] = {}
    if "mgia" in metrics or "mgia_fn" in metrics:
        values["mgia_fn"] = mgia_fns(data, options)
    for metric, compute in (("graph_induced_error", graph_induced_errors), ("tree_induced_error",
                            tree_induced_errors), ("all_pairs_error", all_pairs_errors)):
        if metric in metrics:
            values[metric] = compute(data, options)
    table = pa.table({
        "system": pa.array(data.system.astype(str), pa.string()),
        "instance_id": pa.array(data.instance_id.astype(str), pa.string()),
        "n_true": data.n_true, "n_pred": data.n_pred, "n_shared": data.n_shared,
        "mgia_size": _denominator(data, options) * options.dmax,
        **{m: pa.array(values.get(m, np.full(len(data.n_true), np.nan)), pa.float64(), from_pandas=True)
           for m in METRICS if m not in generated},
    })
    con.register("pair_instance", table)  # a view of the connection over the Arrow table: no copy


def _groups(metrics: Sequence[str], options: Options) -> list[tuple[list[str], Options]]:
    """The tree-induced and all-pairs errors ignore ``max_distance``: with a bound they are computed from
    unbounded distances, in a run of their own."""
    unbounded = [m for m in metrics if m in _UNBOUNDED]
    bounded = [m for m in metrics if m not in _UNBOUNDED]
    if options.max_distance is None or not unbounded:
        return [(list(metrics), options)]
    return [(m, o) for m, o in ((bounded, options), (unbounded, options.with_(max_distance=None))) if m]


PLAN = FamilyPlan(
    name="pair_based",
    file="pair_based",
    metrics=METRICS,
    steps=(
        *(Sql(q) for q in ("pair_problems", "pair_true_classes", "pair_pred_classes", "label_pairs",
                           "pair_label_distances", "pair_distances_of", "pair_arcs", "mgia_nearest",
                           "mgia_mutual_pairs", "pair_problem_sizes", "pair_flow_arcs")),
        Python("pairings", solve_pairings, reads=("pair_problem_sizes", "pair_pred_classes", "pair_true_classes",
                                                  "pair_flow_arcs", "mgia_mutual_pairs"), writes=("pair_instance",),
               why="GIE's and MGIA's pairings of each instance's true and predicted labels are minimum-cost flows"
                   " (OR-Tools; a problem of a few classes: each of its pairings tried)",
               partition_by={table: "problem" for table in ("pair_problem_sizes", "pair_pred_classes",
                                                            "pair_true_classes", "pair_flow_arcs",
                                                            "mgia_mutual_pairs")}),
    ),
    instance="pair_instance",
    measures=(
        Measure("graph_induced_error", "graph_induced_error", averages=("",), higher_is_better=False,
                bounds=(0.0, math.inf)),
        Measure("mgia", "mgia_size - mgia_fn", "mgia_size", zero="1.0", averages=("micro", "macro", "samples")),
        Measure("mgia_fn", "mgia_fn", averages=("",), higher_is_better=False,
                bounds=(0.0, math.inf)),
        Measure("tree_induced_error", "tree_induced_error", averages=("",), higher_is_better=False,
                bounds=(0.0, math.inf)),
        Measure("all_pairs_error", "all_pairs_error", averages=("",), higher_is_better=False,
                bounds=(0.0, math.inf)),
    ),
    params=plan_params,
    check=lambda engine, metrics, options: _check(engine, metrics, options),
    metric_applies=lambda engine, metric, options=None: _metric_applies(engine, metric, options),
    groups=_groups,
    instance_ranges=True,  # an instance's pairings read its own labels only
)


def evaluate(store: Store, metrics: list[str], options: Options) -> list[Row]:
    """Values of ``metrics`` for every system: the mean over instances (average ``""``); MGIA as ``"micro"``
    (pooled fn and denominators) and ``"macro"`` (mean of the per-instance values), as ``options.average``
    asks.

    Raises
    ------
    InputError
        For ``tree_induced_error`` when an instance has |T| ≠ |P|.
    """
    return DuckDBEngine(store).run_plan(PLAN, metrics, options)


_ROOT_SCORED = ("tree_induced_error", "all_pairs_error")  # the measures empty_prediction="root" applies to


def _first_mismatch(engine: Any, options: Options | None = None) -> tuple | None:
    """(system, instance_id, n_true, n_pred, count) of the first instance with |T| ≠ |P| (an empty P not
    counted with ``empty_prediction="root"``), or None."""
    params = {"empty_prediction": (options or Options()).empty_prediction}
    rows = engine.execute(f"SELECT * FROM ({engine.render('pair_based', 'label_count_mismatch', params)}) AS m"
                          " ORDER BY system, instance_id LIMIT 1")
    return rows[0] if rows else None


def _metric_applies(engine: Any, metric: str, options: Options | None) -> bool:
    """False for the tree-induced error where an instance has |T| ≠ |P|, and, with ``empty_prediction="root"``,
    for the measures that define the empty prediction themselves (``all`` leaves them out)."""
    if options is not None and options.empty_prediction == "root" and metric not in _ROOT_SCORED:
        return False
    return metric != "tree_induced_error" or _first_mismatch(engine, options) is None


def _check(engine: Any, metrics: Sequence[str], options: Options) -> None:
    """``empty_prediction="root"`` only with the tree-induced and all-pairs errors; the tree-induced error only
    where every instance has |T| = |P|."""
    if options.empty_prediction == "root":
        other = [m for m in metrics if m not in _ROOT_SCORED]
        if other:
            raise InputError(
                f"empty_prediction=root applies to {' and '.join(_ROOT_SCORED)} only, not to {', '.join(other)}"
                " (GIE and MGIA pair each true class of an empty prediction with the default class at dmax:"
                " Kosmopoulos et al. 2015, Fig. 5 and 6)", "--empty-prediction", value="root")
    if "tree_induced_error" in metrics:
        _require_defined(engine, options)


def _require_defined(engine: Any, options: Options) -> None:
    bad = _first_mismatch(engine, options)
    if bad:
        system, instance, n_true, n_pred, count = bad
        raise InputError(
            "tree_induced_error needs as many predicted as true labels per instance (Dekel et al.: one"
            f" each); {count} instance(s) differ, e.g. system {system!r} has {n_pred} predicted and"
            f" {n_true} true labels (use graph_induced_error; an empty prediction can be scored as the root"
            " with empty_prediction=root)",
            "--metrics", value=str(instance),
        )


def per_instance(source: Store | Engine, options: Options) -> pd.DataFrame:
    """Per (system, instance): ``n_true, n_pred, n_shared`` and every measure of the family;
    ``tree_induced_error`` is missing (NA) where |T| ≠ |P|."""
    frame = as_engine(source).per_instance(PLAN, options).to_pandas()
    frame = frame.drop(columns=["mgia_size"])
    frame["tree_induced_error"] = frame["tree_induced_error"].astype("Float64")
    return frame


def graph_induced_error(y_true, y_pred, taxonomy, average: str = "", *, sample_weight=None, **options) -> float:
    """Graph induced error (Kosmopoulos et al. 2015 §2.3.2, Fig. 5): per instance, the cost of the best
    one-to-one pairing of predicted and true classes, a class without partner paired with the default class
    at ``dmax``; the mean over instances.

    Parameters
    ----------
    y_true, y_pred:
        Sequences of label sets (one per instance; a string is a one-label set).
    taxonomy:
        A :class:`~hiersql.inputs.taxonomy.Taxonomy` (passed again, its tables are reused), a path, a networkx
        DiGraph or ``(parent, child)`` pairs.
    average:
        ``""``, the only one: the mean over instances (another is an error naming the averages it has).
    sample_weight:
        One weight per instance: the weighted mean.
    **options:
        ``dmax`` (5), ``max_distance`` (None: pairs at any distance may be paired), ``shared`` (``"strict"``
        or ``"reuse"``).
    """
    return score(PLAN, "graph_induced_error", y_true, y_pred, taxonomy, average, sample_weight=sample_weight, **options)


def mgia(y_true, y_pred, taxonomy, average: str = "macro", *, sample_weight=None, **options) -> float:
    """Multi-label graph induced accuracy (Kosmopoulos et al. 2015 §2.3.3):
    ``MGIA = 1 − fn / (|P ∪ T| · dmax)`` per instance, 1 when P = T.

    Parameters
    ----------
    y_true, y_pred, taxonomy, sample_weight:
        As :func:`graph_induced_error`.
    average:
        ``"macro"`` (or ``"samples"``): the mean of the per-instance values; ``"micro"``:
        ``1 − Σ fn / (Σ |P ∪ T| · dmax)``.
    **options:
        ``dmax`` (5), ``max_distance`` (None), ``pairing`` (``"nearest"`` or ``"flow"``), ``denominator``
        (``"union"`` or ``"symmetric_difference"``).
    """
    return score(PLAN, "mgia", y_true, y_pred, taxonomy, average, sample_weight=sample_weight, **options)


def tree_induced_error(y_true, y_pred, taxonomy, average: str = "", *, sample_weight=None, **options) -> float:
    """Tree-induced error (Dekel et al. 2004): the mean over instances of d(y, ŷ), with several labels the
    cost of the best one-to-one pairing; every instance needs as many predicted as true labels."""
    return score(PLAN, "tree_induced_error", y_true, y_pred, taxonomy, average, sample_weight=sample_weight, **options)


def all_pairs_error(y_true, y_pred, taxonomy, average: str = "", *, sample_weight=None, **options) -> float:
    """All-pairs error (Sun & Lim 2001): the mean over instances of Σ d(t, p) over all pairs of T × P."""
    return score(PLAN, "all_pairs_error", y_true, y_pred, taxonomy, average, sample_weight=sample_weight, **options)
