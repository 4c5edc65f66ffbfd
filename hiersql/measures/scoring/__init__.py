"""Scoring-tree measures (Lanus et al.): PL, L, LPP, LPPTPS, LPPPPS and the hierarchical P/R/F built on them.

A thin wrapper over ``scoring.sql`` (formulas in its header and in ``docs/scoring_trees.md``). The
taxonomy must be a scoring tree (:mod:`hiersql.measures.scoring.trees`): a tree with edge weights whose root-to-leaf
sums are 1; PL alone needs no weights.

Input: every (truth, prediction) pair is scored. Pairs come from the label tables (within an instance, a label
in both sets pairs with itself and the other labels pair in rank order; a true label left over is a missed
detection, a predicted one a ghost detection; an instance listed in the truth with no label but predicted is a
ghost) and from confusion matrices (:func:`add_confusion`: counts per truth × prediction, with a ``missed``
column and a ``ghost`` row) kept in the table ``pair_counts(system, truth, prediction, n)``.

References
----------
E. Lanus et al., "Hierarchical Scoring for Machine Learning Classifier Error Impact Evaluation",
§III (eq. 4-12, 17), §III-E (detection errors). SPEC §8.
"""

from __future__ import annotations

import csv
import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ...engines import DuckDBEngine, Engine
from ...errors import DataWarning, InputError
from ...plan import FamilyPlan, Measure, Sql, SqlCheck
from .. import REGISTRY, Options, Row, as_engine

if TYPE_CHECKING:
    import pandas as pd

    from ...inputs.store import Store
    from ...inputs.taxonomy import Taxonomy

METRICS = REGISTRY["scoring"]
UNWEIGHTED = ("pl",)
"""Measures that need no edge weights."""
FLAT_METRICS = ("flat_recall", "flat_precision", "flat_f1")
"""The flat rows of the paper's tables (:func:`flat`); not part of :data:`METRICS`."""
MISSED = "missed"
"""Name of the confusion-matrix column of missed detections (truth, no prediction)."""
GHOST = "ghost"
"""Name of the confusion-matrix row of ghost detections (prediction, no truth)."""
Pair = tuple[str | None, str | None, float]
"""A counted pair ``(truth, prediction, count)``; ``None`` is the missing side of a detection error."""
Weights = str | Mapping[str, float] | None
"""Weights of the one-shot functions: the taxonomy's own (None), a strategy name or ``{child: weight}``."""


# ---------------------------------------------------------------------- family plan
def _applies(engine: Any) -> str | None:
    from .trees import tree_fault

    fault = tree_fault(engine)
    return None if fault is None else fault.message


def _metric_applies(engine: Any, metric: str, options: Any = None) -> bool:
    """``pl`` on any tree, the weighted measures only when the edge weights make a scoring tree (asked for by
    name on other weights, they raise :func:`~hiersql.measures.scoring.trees.weight_fault`'s error)."""
    from .trees import weight_fault

    return metric in UNWEIGHTED or weight_fault(engine) is None


def _check(engine: Any, metrics: Sequence[str], options: Options) -> None:
    """The tree, its weights (when a weighted measure is asked for: ``pl`` reads none, so weights that do not
    sum to 1, such as a warehouse table's own ``weight`` column, leave it, and ``--metrics all``, be), that the
    root is never a label, and the offset."""
    from .trees import tree_fault, weight_fault

    fault = tree_fault(engine)
    if fault is None and any(m not in UNWEIGHTED for m in metrics):
        fault = weight_fault(engine)
    if fault is not None:
        raise fault
    _check_root_not_a_label(engine)


def plan_params(options: Options, engine: Any = None, metrics: Sequence[str] = ()) -> dict[str, object]:
    """``$offset``, and ``$weight_tolerance``: how far from 1 a root-to-leaf weight sum may be
    (:data:`~hiersql.measures.scoring.trees.TOLERANCE`)."""
    from .trees import TOLERANCE

    return {"offset": float(options.offset), "weight_tolerance": TOLERANCE}


PLAN = FamilyPlan(
    name="scoring",
    file="scoring",
    metrics=METRICS,
    steps=(Sql("scoring_pairs"), Sql("scoring_instance")),
    instance="scoring_instance",
    # the values come from scoring_summary (means weighted by counts over pairs, and over nodes); the
    # declarations give their averages, direction and range: every score is in [0, 1], 1 for a perfect match
    measures=tuple(Measure(metric) for metric in METRICS),
    summary="scoring_summary",
    params=plan_params,
    check=_check,
    applies=_applies,
    metric_applies=_metric_applies,
    # _check's rules: the tree and its root (scoring_tree_check); the weights, for a weighted measure named
    sql_checks=(SqlCheck("scoring_tree_check"),
                SqlCheck("scoring_weights_check", tuple(m for m in METRICS if m not in UNWEIGHTED))),
    unit_order={"scoring_instance": "system, instance_id, truth, prediction"},
)


def evaluate(source: Store | Engine, metrics: list[str], options: Options) -> list[Row]:
    """Values of ``metrics`` for every system (label systems and confusion matrices), micro and/or macro."""
    return as_engine(source).run_plan(PLAN, metrics, options)


def per_instance(source: Store | Engine, options: Options) -> pd.DataFrame:
    """One row per scored pair: ``system, instance_id, truth, prediction, n`` (``n`` = count, 1 for label
    pairs) and the five scores; ``truth``/``prediction`` is missing for a ghost/missed detection. Without
    edge weights only ``pl`` is filled."""
    engine = as_engine(source)
    _check(engine, UNWEIGHTED, options)
    return engine.per_instance(PLAN, options).to_pandas()


def flat(source: Store | Engine) -> list[Row]:
    """The paper's flat rows: macro and micro precision, recall and F1 over the classes seen in the truth or
    the predictions, plus a "none" class when there are detection errors; 0/0 counts as 1 (SPEC §8)."""
    engine = as_engine(source)
    _check(engine, UNWEIGHTED, Options())
    frame = engine.frame("scoring", "scoring_flat", order="system, metric, average")
    return [Row(*r) for r in frame.itertuples(index=False, name=None)]


class StrategyRow(NamedTuple):
    """One value of :func:`score_confusions`: ``strategy`` is empty for measures that need no weights."""

    system: str
    strategy: str
    metric: str
    average: str
    value: float


PAPER_METRICS = ("lca_reward", "lpp", "lpptps", "lpppps", "scoring_hf")
"""The weighted rows of the paper's Tables VIII and IX, per strategy, in its order (PL comes first)."""


def score_confusions(
    tree: Taxonomy,
    confusions: Mapping[str, str | Path | pd.DataFrame],
    strategies: Iterable[str] = ("decreasing", "non-increasing", "increasing"),
    offset: float = 0.0,
    average: Iterable[str] = ("micro",),
    metrics: Iterable[str] = ("pl", *PAPER_METRICS),
    with_flat: bool = True,
) -> list[StrategyRow]:
    """Score confusion matrices (``{system: file or DataFrame}``) on ``tree`` under each weight strategy
    (:func:`hiersql.measures.scoring.trees.strategy`), as the paper's Tables VIII (``offset=0``) and IX
    (``offset=-1``). Rows come flat rows first (``with_flat``), then the unweighted measures, then each
    strategy's weighted measures, systems in the given order."""
    from ...inputs.store import Store
    from .trees import strategy, weight_fault

    metrics, average, strategies = list(metrics), tuple(average), list(strategies)
    if not strategies:
        raise InputError("give at least one weight strategy", "--strategy")
    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        raise InputError(f"unknown scoring measure (one of {', '.join(METRICS)})", "--metrics",
                         value=",".join(unknown))
    options = Options(average=average, offset=offset)
    store = Store()
    try:
        out: list[StrategyRow] = []
        for i, name in enumerate(strategies):
            store.load_taxonomy(strategy(tree, name))
            engine = DuckDBEngine(store)  # one engine a strategy: its tree is checked once (the faults it keeps)
            fault = weight_fault(engine) if any(m not in UNWEIGHTED for m in metrics) else None
            if fault is not None:  # the tree's fault before any of the matrices'
                raise fault
            if i == 0:
                for system, source in confusions.items():
                    add_confusion(store, system, source)
                if with_flat:
                    out += [StrategyRow(r.system, "", *r[1:]) for r in flat(engine)]
            for r in evaluate(engine, metrics, options):
                if r.metric not in UNWEIGHTED:
                    out.append(StrategyRow(r.system, name, *r[1:]))
                elif i == 0:
                    out.append(StrategyRow(r.system, "", *r[1:]))
    finally:
        store.close()
    order = {m: k for k, m in enumerate((*FLAT_METRICS, *metrics))}
    systems = {s: k for k, s in enumerate(confusions)}
    strategy_order = {s: k for k, s in enumerate(["", *strategies])}

    def key(r: StrategyRow) -> tuple:
        group = (r.average != "macro") if r.metric in FLAT_METRICS else 2  # flat macro, flat micro, the rest
        return strategy_order[r.strategy], group, order[r.metric], r.average, systems[r.system]

    return sorted(out, key=key)


# ---------------------------------------------------------------------- confusion matrices
def add_confusion(
    store: Store, system: str, source: str | Path | pd.DataFrame, name: str | None = None
) -> None:
    """Replace the pairs of ``system`` in ``pair_counts`` with a confusion matrix.

    ``source`` is a file read by :func:`read_confusion` or a DataFrame with columns ``truth, prediction, n``
    (a missing truth is a ghost detection, a missing prediction a missed one).
    """
    taxonomy = store._require_taxonomy()
    if isinstance(source, str | Path):
        where = str(source)
        rows = read_confusion(source, taxonomy)
    else:
        where = name or "<DataFrame>"
        rows = _long_rows(source, where, taxonomy)
    if store.con.execute("SELECT count(*) FROM systems WHERE system = $s", {"s": system}).fetchall()[0][0]:
        raise InputError("system already has label predictions; give the confusion matrix another name",
                         where, value=system)
    if not rows:  # every measure is a mean over the counted pairs: none has a value
        warnings.warn(f"{where}: the confusion matrix counts no pair: system {system!r} has no value",
                      DataWarning, stacklevel=2)
    with store.transaction():
        store.con.execute("DELETE FROM pair_counts WHERE system = $s", {"s": system})
        if rows:
            store.con.execute(
                "INSERT INTO pair_counts SELECT $s, unnest($t), unnest($p), unnest($n)",
                {"s": system, "t": [r[0] for r in rows], "p": [r[1] for r in rows],
                 "n": [r[2] for r in rows]},
            )


def read_confusion(path: str | Path, taxonomy: Taxonomy) -> list[Pair]:
    """Read a confusion matrix: TSV (CSV if the name ends in ``.csv``), lines starting with ``#`` skipped.

    The header holds a corner cell and the predicted labels, optionally ending with a ``missed`` column;
    each row a true label (or ``ghost``) and its counts. Returns the non-zero cells as
    ``(truth, prediction, count)``, ``None`` standing for the missing side of a detection error. Every
    fault (unknown label, label given twice, negative or non-numeric count, a count in the ghost × missed
    cell, ragged rows) is an :class:`InputError` naming the line.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError("confusion matrix file not found", path)
    delimiter = "," if path.suffix.lower() == ".csv" else "\t"
    with path.open(encoding="utf-8", newline="") as fh:
        lines = [(i, row) for i, row in enumerate(csv.reader(fh, delimiter=delimiter), start=1)
                 if row and any(c.strip() for c in row) and not row[0].lstrip().startswith("#")]
    if len(lines) < 2:
        raise InputError("confusion matrix needs a header and at least one row", path)
    header_line, header = lines[0]
    columns = [_confusion_label(c, MISSED, taxonomy, path, header_line) for c in header[1:]]
    _no_duplicates(columns, path, header_line)
    seen: list[str | None] = []
    out: list[Pair] = []
    for line, row in lines[1:]:
        if len(row) != len(header):
            raise InputError(f"expected {len(header)} fields, found {len(row)}", path, line,
                             delimiter.join(row))
        truth = _confusion_label(row[0], GHOST, taxonomy, path, line)
        seen.append(truth)
        _no_duplicates(seen, path, line)
        for prediction, cell in zip(columns, row[1:], strict=True):
            count = _count(cell, path, line)
            if count and truth is None and prediction is None:
                raise InputError("the ghost × missed cell must be empty (no truth and no prediction)", path,
                                 line, cell)
            if count:
                out.append((truth, prediction, count))
    return out


# ---------------------------------------------------------------------- one-shot functions
def path_length_score(
    y_true, y_pred, taxonomy, average: str = "micro", offset: float = 0.0, weights: Weights = None, *,
    sample_weight=None
) -> float:
    """Path length ``PL = 1 − d(t, p) / (l − o)`` (Lanus et al. eq. 4), ``d`` = edges between the true and
    the predicted label, ``l`` = longest path between two labels of the tree, ``o`` = ``offset`` ≤ 0.

    Parameters
    ----------
    y_true, y_pred:
        Equally long sequences, one item per object: a label, ``None`` (a missed detection when the other
        side has a label, a ghost detection when only the prediction has one) or a set of labels.
    taxonomy:
        The tree (a :class:`~hiersql.inputs.taxonomy.Taxonomy`, a path, a networkx DiGraph or edges); weighted
        measures need edge weights on it or ``weights``.
    average:
        ``"micro"`` (mean over pairs) or ``"macro"`` (per node, then the mean over nodes).
    offset:
        The offset ``o`` ≤ 0 that lifts classification errors above detection errors (which score 0).
    weights:
        ``None`` (the taxonomy's weights), a strategy name (``"decreasing"``, ``"non-increasing"``,
        ``"increasing"``, ``"levels:W1/W2/..."``) or a mapping ``{child: weight of the edge into it}``.
    sample_weight:
        Not offered: the means are over label pairs and nodes, not objects (an
        :class:`~hiersql.options.OptionError` naming it when given, as for every family whose summary is not a
        mean over instances).
    """
    return _one_shot("pl", y_true, y_pred, taxonomy, average, offset, weights, sample_weight)


def lca_reward(
    y_true, y_pred, taxonomy, average: str = "micro", offset: float = 0.0, weights: Weights = None, *,
    sample_weight=None
) -> float:
    """``L = (R − o) / (1 − o)`` with ``R = W(lca(t, p))``, the weight from the root to the lowest common
    ancestor (Lanus et al. eq. 5). Arguments as :func:`path_length_score`."""
    return _one_shot("lca_reward", y_true, y_pred, taxonomy, average, offset, weights, sample_weight)


def lpp(
    y_true, y_pred, taxonomy, average: str = "micro", offset: float = 0.0, weights: Weights = None, *,
    sample_weight=None
) -> float:
    """``LPP = (raw + 2 − o) / (3 − o)`` with ``raw = R − (W(t) + W(p) − 2R)`` (Lanus et al. eq. 6-7).
    Arguments as :func:`path_length_score`."""
    return _one_shot("lpp", y_true, y_pred, taxonomy, average, offset, weights, sample_weight)


def lpptps(
    y_true, y_pred, taxonomy, average: str = "micro", offset: float = 0.0, weights: Weights = None, *,
    sample_weight=None
) -> float:
    """True-path standardised LPP, ``(raw / W(t) − m − o) / (1 − m − o)`` with ``m`` the minimum of
    ``raw / W(t)`` over the label pairs of the tree (Lanus et al. eq. 8). Arguments as
    :func:`path_length_score`."""
    return _one_shot("lpptps", y_true, y_pred, taxonomy, average, offset, weights, sample_weight)


def lpppps(
    y_true, y_pred, taxonomy, average: str = "micro", offset: float = 0.0, weights: Weights = None, *,
    sample_weight=None
) -> float:
    """Predicted-path standardised LPP, ``(raw / W(p) − m − o) / (1 − m − o)`` (Lanus et al. eq. 9).
    Arguments as :func:`path_length_score`."""
    return _one_shot("lpppps", y_true, y_pred, taxonomy, average, offset, weights, sample_weight)


def scoring_precision(
    y_true, y_pred, taxonomy, average: str = "micro", offset: float = 0.0, weights: Weights = None, *,
    sample_weight=None
) -> float:
    """Hierarchical precision ``hP`` = mean LPPPPS (Lanus et al. eq. 10, 17). Arguments as
    :func:`path_length_score`."""
    return _one_shot("scoring_hp", y_true, y_pred, taxonomy, average, offset, weights, sample_weight)


def scoring_recall(
    y_true, y_pred, taxonomy, average: str = "micro", offset: float = 0.0, weights: Weights = None, *,
    sample_weight=None
) -> float:
    """Hierarchical recall ``hR`` = mean LPPTPS (Lanus et al. eq. 11, 17). Arguments as
    :func:`path_length_score`."""
    return _one_shot("scoring_hr", y_true, y_pred, taxonomy, average, offset, weights, sample_weight)


def scoring_f1(
    y_true, y_pred, taxonomy, average: str = "micro", offset: float = 0.0, weights: Weights = None, *,
    sample_weight=None
) -> float:
    """``hF = 2·hP·hR / (hP + hR)``: of the micro means, or (macro) the mean over nodes of the per-node
    harmonic means (Lanus et al. eq. 12, 17). Arguments as :func:`path_length_score`."""
    return _one_shot("scoring_hf", y_true, y_pred, taxonomy, average, offset, weights, sample_weight)


# ---------------------------------------------------------------------- helpers
def _check_root_not_a_label(engine: Any) -> None:
    """The query ``scoring_root_labels`` (the macros' ``scoring_tree_check`` reads it too) has no row; else an
    :class:`InputError` naming the first in (source, label) order."""
    found = engine.run("scoring", "scoring_root_labels")
    if found:
        source, label = min(found)
        raise InputError("the root of a scoring tree is never a label (Lanus et al. §III)", source, value=label)


def _confusion_label(cell: str, detection: str, taxonomy: Taxonomy, path: Path, line: int) -> str | None:
    name = cell.strip()
    if name.lower() == detection:
        return None
    if name not in taxonomy:
        raise InputError("label not in the taxonomy", path, line, name)
    if name == taxonomy.root:
        raise InputError("the root of a scoring tree is never a label", path, line, name)
    return name


def _no_duplicates(labels: list[str | None], path: Path, line: int) -> None:
    if len(labels) != len(set(labels)):
        dup = next(x for x in labels if labels.count(x) > 1)
        raise InputError("label given twice in the confusion matrix", path, line, dup or "missed/ghost")


def _count(cell: str, path: Path, line: int) -> float:
    try:
        value = float(cell.strip() or "0")
    except ValueError:
        raise InputError("count is not a number", path, line, cell) from None
    if value < 0 or math.isnan(value) or math.isinf(value):
        raise InputError("count must be a finite number >= 0", path, line, cell)
    return value


def _long_rows(df: pd.DataFrame, where: str, taxonomy: Taxonomy) -> list[Pair]:
    missing = [c for c in ("truth", "prediction", "n") if c not in df.columns]
    if missing:
        raise InputError(f"pair DataFrame lacks column(s) {missing}; it has {list(df.columns)}", where)
    out = []
    for i, (truth, prediction, n) in enumerate(df[["truth", "prediction", "n"]].itertuples(index=False), 1):
        sides = [None if _is_missing(v) else str(v) for v in (truth, prediction)]
        for label in sides:
            if label is not None and (label not in taxonomy or label == taxonomy.root):
                raise InputError("label not in the taxonomy (or its root)", where, i, label)
        if sides == [None, None]:
            raise InputError("a pair needs a truth or a prediction", where, i)
        count = _count(str(n), Path(where), i)
        if count:
            out.append((sides[0], sides[1], count))
    return out


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or str(value).strip() == ""


def _label_sets(items: Iterable[Any]) -> list[list[str]]:
    """One label set per object: ``None`` is empty, a string is one label."""
    return [[] if item is None else [item] if isinstance(item, str) else list(item) for item in items]


def _scoring_tree(taxonomy: Any, weights: Weights) -> Taxonomy:
    from ...inputs.arguments import argument_error
    from ...inputs.taxonomy import as_taxonomy
    from . import trees as scoring_trees

    if weights is not None and not isinstance(weights, str | Mapping):
        raise argument_error("weights", "must be None, a strategy name or a mapping {child: weight of the edge into"
                             " it}", weights)
    tree = as_taxonomy(taxonomy)
    if weights is None:
        return tree
    if isinstance(weights, str):
        return scoring_trees.strategy(tree, weights)
    return scoring_trees.with_weights(tree, weights)


def _one_shot(metric: str, y_true, y_pred, taxonomy, average: str, offset: float, weights, sample_weight) -> float:
    from ...engines.oneshot import score
    from ...inputs.arguments import paired_label_sets

    y_true, y_pred = paired_label_sets(y_true, y_pred)
    tree = taxonomy if weights is None else _scoring_tree(taxonomy, weights)
    return score(PLAN, metric, _label_sets(y_true), _label_sets(y_pred), tree, average, offset=offset,
                 sample_weight=sample_weight)
