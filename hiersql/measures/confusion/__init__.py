"""Hierarchical confusion matrix (Riehl, Neunteufel, Hemberg 2021; SPEC §6).

Per instance, the taxonomy nodes along the predicted and true root paths are counted as TP, FP, FN and TN;
the counts are summed over instances and the binary measures of the paper's Table II are computed from the
sums (``micro``) or averaged over the per-instance values (``macro``). hiersql follows the authors' code,
which produced the published tables (see ``docs/hierarchical_confusion_matrix.md`` for every difference with
the paper's formulas):

- label sets become root paths by a greedy path cover (:func:`greedy_path_cover`); the true labels are the last
  nodes of the chosen paths and own all their root paths;
- predicted paths are taken by ``m`` (longest common path with any true path) descending, ties by the node
  names descending; each is scored against the first remaining (true label, path) with the strictly longest
  common path, which removes that label (:func:`greedy_matching`); a predicted path with no true label left
  adds ``FP = |p| - 1``, a true label left unmatched adds ``FN`` = its shortest path length - 1;
- the counts of a (true path, predicted path) pair are SQL (``confusion.sql``), for all pairs at once.

References
----------
Kevin Riehl, Michael Neunteufel, Martin Hemberg, "Hierarchical confusion matrix for classification
performance evaluation", 2021/2023, §IV (eq. 4-10) and Table II; code at
github.com/DerKevinRiehl/HierarchicalConfusionMatrix.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...engines import DuckDBEngine, Engine
from ...plan import FamilyPlan, Measure, Python, Sql
from .. import REGISTRY, Options, Row, as_engine

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

    from ...inputs.store import Store
    from ...inputs.taxonomy import Taxonomy

COUNTS = ("tp", "fp", "fn", "tn")
MEASURES = ("accuracy", "precision", "recall", "f1", "mcc", "fnr", "fpr", "tnr", "pt")
METRICS = REGISTRY["confusion"]


# ---------------------------------------------------------------------------------------------- public API
def evaluate(store: Store, metrics: list[str], options: Options) -> list[Row]:
    """Summed counts (``average=""``) and derived measures (``micro`` from the summed counts, ``macro`` the
    mean of the per-instance values) of ``metrics`` for every system."""
    return DuckDBEngine(store).run_plan(PLAN, metrics, options)


def per_instance(source: Store | Engine, options: Options) -> pd.DataFrame:
    """Columns ``system, instance_id, tp, fp, fn, tn`` and the per-instance value of each ratio of the family:
    one row per system and truth instance."""
    return as_engine(source).per_instance(PLAN, options).to_pandas()


def hierarchical_confusion_matrix(store: Store, tn: str = "published", zero_division: float = 0.0
                                  ) -> pd.DataFrame:
    """One row per system: ``system, tp, fp, fn, tn`` (summed over instances) and the measures
    ``accuracy, precision, recall, f1, mcc, fnr, fpr, tnr, pt`` computed from the summed counts.

    Parameters
    ----------
    store:
        A store holding a taxonomy, the truth and the predictions of one or more systems.
    tn:
        ``"published"`` (the authors' code: siblings of the common path and direct children of its last node)
        or ``"descendants"`` (the paper's formula; not the published numbers).
    zero_division:
        Value of a ratio whose denominator is 0.

    Notes
    -----
    Riehl et al. Table II on the summed counts: accuracy ``(TP+TN)/(TP+TN+FP+FN)``, precision ``TP/(TP+FP)``,
    recall ``TP/(TP+FN)``, F1 ``2TP/(2TP+FP+FN)``, MCC ``(TP·TN-FP·FN)/sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN))``
    (floating point), FNR ``FN/(FN+TP)``, FPR ``FP/(FP+TN)``, TNR ``TN/(TN+FP)``, prevalence threshold
    ``(sqrt(TPR(1-TNR))+TNR-1)/(TPR+TNR-1)``.
    """
    import pandas as pd

    options = Options(tn=tn, zero_division=zero_division, average=("micro",))
    long = pd.DataFrame(evaluate(store, list(METRICS), options), columns=["system", "metric", "average", "value"])
    table = long.pivot(index="system", columns="metric", values="value")
    table = table.rename(columns=lambda c: c.removeprefix("hcm_")).reindex(columns=[*COUNTS, *MEASURES])
    table = pd.DataFrame(table).astype(dict.fromkeys(COUNTS, "int64") | dict.fromkeys(MEASURES, "float64"))
    return table.reset_index().rename_axis(columns=None)


def hierarchical_confusion(
    y_true: Sequence[Iterable[str]],
    y_pred: Sequence[Iterable[str]],
    taxonomy: Taxonomy | Iterable[tuple[str, str]] | Any,
    *,
    tn: str = "published",
    zero_division: float = 0.0,
) -> dict[str, float]:
    """scikit-learn style one-shot: the hierarchical confusion matrix of label sets.

    ``y_true[i]`` and ``y_pred[i]`` are the labels of instance ``i`` in their given order (the order breaks
    ties of the greedy path cover and matching; a string is one label); ``taxonomy`` in any form the other
    one-shot functions take. Returns ``{"tp", "fp", "fn", "tn"}`` (ints) and the measures of
    :data:`MEASURES` from the summed counts.

    >>> hierarchical_confusion([["a1"]], [["a2"]], [("a", "a1"), ("a", "a2")])["fp"]
    1
    """
    from .. import store_from_sets

    store = store_from_sets(y_true, y_pred, taxonomy)
    try:
        row = hierarchical_confusion_matrix(store, tn=tn, zero_division=zero_division).iloc[0]
    finally:
        store.close()
    return {k: (int(row[k]) if k in COUNTS else float(row[k])) for k in (*COUNTS, *MEASURES)}


# ---------------------------------------------------------------------------------------------- greedy steps
def greedy_path_cover(group: np.ndarray, cand: np.ndarray, covers: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
    """The greedy path cover of every label set at once (SPEC §6).

    Each row says that candidate path ``cand`` of group (label set) ``group`` holds label ``covers`` of the
    set. Candidates are numbered from 0 in their order (group, then label rank, then path order), so the
    ids of a group are contiguous; ``covers`` ids are global. Repeatedly, every group whose labels are not
    all covered takes the candidate holding the most not-yet-covered labels (the first one wins ties).

    Returns the chosen candidate ids and the step (0, 1, ...) at which each was chosen in its group.
    """
    if not len(cand):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    n_cand, n_lab = int(cand.max()) + 1, int(covers.max()) + 1
    cand_group = np.zeros(n_cand, dtype=np.int64)
    cand_group[cand] = group
    label_group = np.zeros(n_lab, dtype=np.int64)
    label_group[covers] = group
    covered = np.zeros(n_lab, dtype=bool)
    live = np.ones(len(cand), dtype=bool)  # rows of candidates not yet taken, in groups not yet done
    chosen: list[np.ndarray] = []
    steps: list[np.ndarray] = []
    while live.any():
        rows = np.flatnonzero(live)
        gain = np.bincount(cand[rows], weights=~covered[covers[rows]], minlength=n_cand).astype(np.int64)
        ids = np.flatnonzero(np.bincount(cand[rows], minlength=n_cand))
        # per group the largest gain, then the smallest id: the maximum of gain * (n + 1) + (n - id)
        key = gain[ids] * (n_cand + 1) + (n_cand - ids)
        g = cand_group[ids]
        starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
        best = n_cand - np.maximum.reduceat(key, starts) % (n_cand + 1)
        chosen.append(best)
        steps.append(np.full(len(best), len(steps)))
        taken = np.zeros(n_cand, dtype=bool)
        taken[best] = True
        covered[covers[rows[taken[cand[rows]]]]] = True
        open_groups = np.bincount(label_group[~covered], minlength=int(group.max()) + 1) > 0
        live = live & ~taken[cand] & open_groups[group]
    return np.concatenate(chosen), np.concatenate(steps)


def greedy_matching(group: np.ndarray, rank: np.ndarray, label: np.ndarray, common: np.ndarray
                    ) -> np.ndarray:
    """The greedy matching of predicted paths to true labels for every instance at once (SPEC §6).

    One row per (predicted path, true label, true path) of a group (instance); ``rank`` is the position of
    the predicted path in the processing order (m descending, then node names descending), ``label`` a
    global id of the true label, and rows are sorted by group, then true label order, then path order.
    Processing the predicted paths in rank order, each takes among the rows of labels not yet taken the
    first one with the strictly largest ``common``; that removes the label.

    Returns a boolean mask of the chosen rows.
    """
    chosen = np.zeros(len(group), dtype=bool)
    if not len(group):
        return chosen
    taken = np.zeros(int(label.max()) + 1, dtype=bool)
    by_rank = np.argsort(rank, kind="stable")
    bounds = np.searchsorted(rank[by_rank], np.arange(int(rank.max()) + 2))
    for r in range(int(rank.max()) + 1):
        rows = by_rank[bounds[r]:bounds[r + 1]]
        rows = rows[~taken[label[rows]]]
        if not len(rows):
            continue
        order = np.lexsort((rows, -common[rows], group[rows]))
        firsts = np.unique(group[rows[order]], return_index=True)[1]
        best = rows[order][firsts]
        chosen[best] = True
        taken[label[best]] = True
    return chosen


# ---------------------------------------------------------------------------------------------- helpers
_COVER = ("hcm_systems", "hcm_instances", "hcm_labels", "hcm_set_labels")
_PAIRS = ("hcm_chosen_paths", "hcm_chosen_truth", "hcm_chosen_pred", "hcm_pairs", "hcm_pair_common", "hcm_below",
          "hcm_prefix_tn", "hcm_pair_counts", "hcm_candidates")


def plan_params(options: Options, engine: Any = None, metrics: Sequence[str] = ()) -> dict[str, object]:
    return {"tn": options.tn}


def solve_root_paths(con: duckdb.DuckDBPyConnection, params: dict[str, object], options: Options) -> None:
    """The root paths of every label (``hcm_paths``, ``hcm_path_nodes``): DuckDB queries with lists, run on
    the step's DuckDB connection (a taxonomy-sized input, whatever the engine), which holds the tables it reads."""
    engine, done = DuckDBEngine(con), {"hcm_labels", "edges", "nodes"}
    for name in ("hcm_paths", "hcm_path_nodes"):
        engine.stage("confusion", name, params, done)


def solve_path_cover(con: duckdb.DuckDBPyConnection, params: dict[str, object], options: Options) -> None:
    """The greedy path cover step: ``hcm_cover_choice`` (the chosen candidate paths, with the step at which
    each true label's path was chosen) from ``hcm_cover_candidates``."""
    c = _fetch(con, "hcm_cover_candidates", ("grp", "rank", "label_id", "label_no", "path_no", "on_path"), 5)
    cand = _dense(c["grp"], c["rank"], c["label_id"], c["label_no"], c["path_no"])
    best, step = greedy_path_cover(c["grp"], cand, c["on_path"])
    first = np.unique(cand, return_index=True)[1][best]
    stride = con.execute("SELECT max(stride) FROM hcm_systems").fetchall()[0][0]  # None: no system, truth only
    truth = c["grp"][first] < (np.iinfo(np.int64).max if stride is None else stride)
    _write(con, "hcm_cover_choice", {"label_no": c["label_no"][first], "path_no": c["path_no"][first],
                                     "step": np.where(truth, step, 0)})


def solve_matching(con: duckdb.DuckDBPyConnection, params: dict[str, object], options: Options) -> None:
    """The greedy matching step: ``hcm_match``, the rows of ``hcm_candidates`` chosen."""
    m = _fetch(con, "hcm_candidates", ("grp", "j", "t_path", "p_label", "p_path", "n_common", "name_rank",
                                       *COUNTS), 3)
    pred = _dense(*(m[k] for k in ("grp", "p_label", "p_path")), order=np.lexsort((m["p_path"], m["p_label"],
                                                                               m["grp"])))
    rank = _processing_rank(m["grp"], pred, m["n_common"], m["name_rank"])
    chosen = greedy_matching(m["grp"], rank, _dense(m["grp"], m["j"]), m["n_common"])
    keys = ("grp", "j", "t_path", "p_label", "p_path")
    _write(con, "hcm_match", {k: m[k][chosen] for k in (*keys, *COUNTS)})


_TPR, _TNR = "1.0 * tp / (tp + fn)", "1.0 * tn / (fp + tn)"
PLAN = FamilyPlan(
    name="confusion",
    file="confusion",
    metrics=METRICS,
    steps=(
        *(Sql(q) for q in _COVER),
        Python("root_paths", solve_root_paths, reads=("hcm_labels", "edges", "nodes"),
               writes=("hcm_paths", "hcm_path_nodes"),
               why="each label's root paths are DuckDB list queries (confusion.sql), run in DuckDB on every engine"),
        Sql("hcm_cover_candidates"),
        Python("path_cover", solve_path_cover, reads=("hcm_cover_candidates", "hcm_systems"),
               writes=("hcm_cover_choice",), partition_by={"hcm_cover_candidates": "grp"},
               why="the greedy path cover chooses one path at a time, each choice depending on the earlier ones"),
        *(Sql(q) for q in _PAIRS),
        Python("matching", solve_matching, reads=("hcm_candidates",), writes=("hcm_match",),
               partition_by={"hcm_candidates": "grp"},
               why="the greedy matching of true and predicted paths chooses one pair at a time, each choice"
                   " depending on the earlier ones"),
        Sql("hcm_instance"),
    ),
    instance="hcm_instance",
    instance_ranges=True,  # a set's paths, cover and matching read its own labels only; TN the taxonomy's
    measures=(
        *(Measure(f"hcm_{c}", c, averages=("",), total=True, higher_is_better=c in ("tp", "tn"),
                  bounds=(0.0, math.inf)) for c in ("tp", "fp", "fn", "tn")),
        Measure("hcm_accuracy", "tp + tn", "tp + tn + fp + fn"),
        Measure("hcm_precision", "tp", "tp + fp"),
        Measure("hcm_recall", "tp", "tp + fn"),
        Measure("hcm_f1", "2 * tp", "2 * tp + fp + fn"),
        Measure("hcm_mcc", "1.0 * tp * tn - 1.0 * fp * fn",
                "sqrt(1.0 * (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))", bounds=(-1.0, 1.0)),
        Measure("hcm_fnr", "fn", "tp + fn", higher_is_better=False),
        Measure("hcm_fpr", "fp", "fp + tn", higher_is_better=False),
        Measure("hcm_tnr", "tn", "fp + tn"),
        Measure("hcm_pt", f"sqrt({_TPR} * (1 - {_TNR})) + {_TNR} - 1", f"{_TPR} + {_TNR} - 1",
                undefined="tp + fn = 0 OR fp + tn = 0", higher_is_better=False),
    ),
    params=plan_params,
)


def _fetch(con: duckdb.DuckDBPyConnection, table: str, columns: Sequence[str], n_keys: int) -> dict[str, np.ndarray]:
    """Integer ``columns`` of ``table`` as numpy arrays, rows sorted by the first ``n_keys`` columns (sorted by
    DuckDB only when the scan did not give that order: the stages are stored in it)."""
    query = f"SELECT {', '.join(columns)} FROM {table}"
    out = _numpy(con.sql(query).fetchnumpy(), columns)
    if not _sorted([out[k] for k in columns[:n_keys]]):
        out = _numpy(con.sql(f"{query} ORDER BY {', '.join(columns[:n_keys])}").fetchnumpy(), columns)
    return out


def _numpy(data: Mapping[str, Any], columns: Sequence[str]) -> dict[str, np.ndarray]:
    """``columns`` of a fetched result as int64 arrays."""
    return {k: np.asarray(data[k], dtype=np.int64) for k in columns}


def _sorted(keys: Sequence[np.ndarray]) -> bool:
    """Whether the rows of the columns ``keys`` are in ascending lexicographic order."""
    if not len(keys[0]):
        return True
    ahead = np.zeros(len(keys[0]) - 1, dtype=bool)  # rows already after their predecessor by an earlier key
    for k in keys:
        if np.any(~ahead & (k[1:] < k[:-1])):
            return False
        ahead |= k[1:] > k[:-1]
    return True


def _dense(*keys: np.ndarray, order: np.ndarray | None = None) -> np.ndarray:
    """Dense ids (from 0) of the rows' key tuples, increasing with the keys. Rows must be sorted by the keys,
    or ``order`` must sort them."""
    n = len(keys[0])
    order = np.arange(n) if order is None else order
    change = np.zeros(n, dtype=bool)
    for k in keys:
        change[1:] |= k[order][1:] != k[order][:-1]
    ids = np.empty(n, dtype=np.int64)
    ids[order] = np.cumsum(change)
    return ids


def _processing_rank(group: np.ndarray, pred: np.ndarray, common: np.ndarray, name_rank: np.ndarray
                     ) -> np.ndarray:
    """Per row, the position (from 0) of its predicted path ``pred`` within its group when the paths are
    taken by m (the path's largest ``common``) descending, then by ``name_rank`` descending."""
    n_pred = int(pred.max(initial=-1)) + 1
    m = np.full(n_pred, -1, dtype=np.int64)
    np.maximum.at(m, pred, common)
    pred_group = np.zeros(n_pred, dtype=np.int64)
    pred_group[pred] = group
    pred_name = np.zeros(n_pred, dtype=np.int64)
    pred_name[pred] = name_rank
    order = np.lexsort((-pred_name, -m, pred_group))
    starts = np.searchsorted(pred_group[order], pred_group[order], side="left")
    position = np.empty(n_pred, dtype=np.int64)
    position[order] = np.arange(n_pred) - starts
    return position[pred]


def _write(con: duckdb.DuckDBPyConnection, table: str, rows: dict[str, np.ndarray]) -> None:
    """The temp table ``table`` of ``rows`` (numpy columns).

    DuckDB reads a mapping of numpy arrays as a table without pandas (a pyarrow table would import it, ≈ 0.4 s)."""
    con.register("_hiersql_rows", rows)
    try:
        con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS SELECT * FROM _hiersql_rows")
    finally:
        con.unregister("_hiersql_rows")
