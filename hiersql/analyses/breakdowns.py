"""Breakdowns of the set-based measures: per level of the taxonomy, per depth of the true label, per class
(a classification report). A thin wrapper over ``breakdowns.sql``; formulas in ``docs/breakdowns.md``.

Every breakdown reads the augmented sets that ``set_based.sql`` builds (query ``set_pairs``), with the
same options (``include_root``, ``max_distance``, ``augment``, ``beta``, ``zero_division``), so that a
breakdown sums up to the overall values: the micro counts of the levels add up to the micro counts of
:func:`hiersql.hierarchical_precision`, and the ``micro avg`` row of the report equals its micro value.

References
----------
Kiritchenko, Matwin, Nock, Famili (2005), "Learning and evaluation in the presence of class hierarchies".
Kosmopoulos, Partalas, Gaussier, Paliouras, Androutsopoulos (2015), "Evaluation measures for hierarchical
classification: a unified view and novel approaches", §2.4.
Pedregosa et al. (2011), scikit-learn: ``classification_report`` (the layout of the text report).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..measures import Options, as_engine, family
from ..measures import set_based as _set_based
from ..plan import Folds, instance_measures, instance_values_sql, value_sql

if TYPE_CHECKING:
    import pandas as pd

    from ..engines import Engine
    from ..inputs.store import Store

MEASURES = ("hierarchical_precision", "hierarchical_recall", "hierarchical_f1", "symmetric_difference_loss")


def _params(engine: Engine, options: Options) -> dict[str, object]:
    """Stage ``set_pairs`` and ``set_pair_counts`` of ``set_based.sql`` for ``options`` in ``engine``: the
    tables the breakdown queries read; return the parameters of ``breakdowns.sql``."""
    params = _set_based.plan_params(options)
    done: set[str] = set()
    for query in ("set_pairs", "set_pair_counts"):
        engine.stage("set_based", query, params, done)
    return {"zero_division": params["zero_division"], "beta": params["beta"]}


def by_level(source: Store | Engine, options: Options | None = None) -> pd.DataFrame:
    """Set-based measures restricted to each level ``k`` of the taxonomy (the nodes at depth ``k``).

    ``hP_k = Σ_i |Ŷaug_i ∩ Yaug_i ∩ L_k| / Σ_i |Ŷaug_i ∩ L_k|`` (micro; recall and F alike), and the mean of
    the per-instance ratios over the instances whose true or predicted augmented set reaches level ``k``
    (macro). Returns ``system, level, average, support, n_instances`` and the four set-based measures.
    """
    return _grouped(as_engine(source), options or Options(), "level")


def by_depth(source: Store | Engine, options: Options | None = None, measures: str = "set_based") -> pd.DataFrame:
    """Measures over the instances grouped by the depth of their deepest true label (``depth``; 0 for an
    empty truth).

    With ``measures="set_based"`` (default): micro and macro hP, hR, hF and SDL of each group, from
    ``breakdowns.sql``. With another family name (``"flat"``, ``"lca"``, ``"pair_based"``, ...) or a
    measure of it: the mean of that family's per-instance values within each group (``average="macro"``),
    which works for every family with per-instance values.
    """
    options, engine = options or Options(), as_engine(source)
    if measures == "set_based":
        return _grouped(engine, options, "depth")
    from ..measures import FAMILIES, catalog

    if measures not in FAMILIES and measures not in catalog():
        raise ValueError(f"measures must be a family ({', '.join(FAMILIES)}) or a measure name, got {measures!r}")
    name, metric = (measures, None) if measures in FAMILIES else catalog()[measures]
    values = family(name).per_instance(engine, options)
    depths = engine.frame("breakdowns", "depth_groups")
    frame = values.merge(depths, on="instance_id")
    columns = [metric] if metric else [c for c in values.columns
                                       if c not in ("system", "instance_id") and frame[c].dtype.kind in "fiub"]
    out = frame.groupby(["system", "depth"], sort=True)[columns].mean().reset_index()
    out.insert(2, "average", "macro")
    out.insert(3, "n_instances", frame.groupby(["system", "depth"], sort=True).size().to_numpy())
    return out


def per_instance(source: Store | Engine, options: Options | None = None, breakdown: str = "level") -> pd.DataFrame:
    """The per-instance terms of :func:`by_level` (``breakdown="level"``: one row per system, instance and
    level its sets reach) or :func:`by_depth` (``"depth"``: one row per system and instance, with its depth
    group): ``n_true, n_pred, n_both`` and the four set-based measures' per-instance values."""
    if breakdown not in ("level", "depth"):
        raise ValueError(f"breakdown must be 'level' or 'depth', got {breakdown!r}")
    engine = as_engine(source)
    frame = _run(engine, "grouped_values", _params(engine, options or Options()), breakdown,
                 "system, instance_id, grp")
    return frame.drop(columns="breakdown").rename(columns={"grp": breakdown})


def _grouped(engine: Engine, options: Options, breakdown: str) -> pd.DataFrame:
    frame = _run(engine, "grouped_summary", _params(engine, options), breakdown, "system, grp, average DESC")
    return frame.drop(columns="breakdown").rename(columns={"grp": breakdown})


def queries() -> dict[str, str]:
    """``{name: query}`` of the breakdowns' values and summaries, generated from the set-based family's declared
    measures (:func:`~hiersql.plan.instance_values_sql`, :func:`~hiersql.plan.value_sql`) over
    the counts of ``breakdowns.sql``, as the family's own per-instance values and summary are:

    - ``grouped_values``: ``grouped_counts`` and the per-instance values of the four measures;
    - ``grouped_summary``: per (breakdown, system, group) and average (micro, macro): ``support`` (Σ n_true),
      ``n_instances`` and the four measures (macro: the mean of the per-instance values in instance order);
    - ``flat_level_summary``: per (system, level) and average: ``support``, ``precision, recall, f1`` of the
      classes at that level (micro: pooled counts; macro: the mean over the classes, in label order).
    """
    measures = {m.metric: m for m in instance_measures(_set_based.PLAN)}

    def summary(keys: str, table: str, order: str, names: dict[str, str], extra: str) -> str:
        parts = []
        for average in ("micro", "macro"):
            values = ", ".join(f"{value_sql(measures[metric], average, Folds(order))} AS {name}"
                               for metric, name in names.items())
            parts.append(f"SELECT {keys}, '{average}' AS average, CAST(sum(n_true) AS BIGINT) AS support{extra},"
                         f" {values} FROM {table} GROUP BY {keys}")
        return "\nUNION ALL\n".join(parts)

    return {
        "grouped_values": instance_values_sql(_set_based.PLAN, "grouped_counts"),
        "grouped_summary": summary("breakdown, system, grp", "grouped_counts", "instance_id",
                                   {m: m for m in MEASURES}, ", count(*) AS n_instances"),
        "flat_level_summary": summary("system, level", "flat_level_units", "label",
                                      dict(zip(MEASURES[:3], ("precision", "recall", "f1"), strict=True)), ""),
    }


def _run(engine: Engine, name: str, params: dict[str, object], breakdown: str | None, order: str
         ) -> pd.DataFrame:
    """The rows of the generated query ``name`` of :func:`queries` (of ``breakdown`` only, when given),
    composed with the queries of ``breakdowns.sql`` it reads, sorted by ``order``."""
    where = "" if breakdown is None else f"breakdown = '{breakdown}'"
    return engine.frame("breakdowns", name, params, where=where, order=order, text=queries()[name])


def flat_by_level(source: Store | Engine, options: Options | None = None) -> pd.DataFrame:
    """Flat precision, recall and F-beta of the labels at each depth, taken as given (no ancestors added):
    micro pools ``TP, FP, FN`` over the classes of the level, macro averages the per-class values. Returns
    ``system, level, average, support, precision, recall, f1``."""
    params = _set_based.plan_params(options or Options())
    return _run(as_engine(source), "flat_level_summary", {"zero_division": params["zero_division"],
                                                          "beta": params["beta"]}, None, "system, level, average DESC")


def by_class(source: Store | Engine, options: Options | None = None, labels: list[str] | None = None) -> pd.DataFrame:
    """Per-class hierarchical precision, recall and F-beta with support: class ``c`` is predicted for
    instance ``i`` when ``c ∈ Ŷaug_i`` and true when ``c ∈ Yaug_i``;
    ``P_c = TP_c / (TP_c + FP_c)``, ``R_c = TP_c / (TP_c + FN_c)``, support = ``TP_c + FN_c``: the per-class
    values of the set-based plan (:func:`~hiersql.plan.class_report_sql`).

    Classes are those of the augmented sets (true or predicted), in taxonomy order (depth, then input
    position); ``labels`` picks and orders them (a class no set holds gets support 0 and zero-division values).
    Returns ``system, label, depth, tp, fp, fn, precision, recall, f1, support``.
    """
    return _classes(as_engine(source), options or Options(), labels)[0]


def _classes(engine: Engine, options: Options, labels: list[str] | None, averages: tuple[str, ...] = ()
             ) -> tuple[pd.DataFrame, dict[tuple[str, str, str], float]]:
    """:func:`by_class`'s frame and, from the same run of the set-based plan, its summary values of hP, hR, hF
    with ``averages``: ``{(system, average, metric): value}``."""
    import pandas as pd

    from ..plan import class_micro_sql, class_report_sql, summary_sql

    options = _with_labels(options, labels)
    ratios = list(MEASURES[:3])
    queries = {"_class_report": class_report_sql(_set_based.PLAN, ratios, fixed_classes=labels is not None),
               "_class_micro": class_micro_sql(_set_based.PLAN, ratios, fixed_classes=labels is not None)}
    if averages:
        queries["_class_averages"] = summary_sql(_set_based.PLAN, ratios, averages, True,
                                                 fixed_classes=labels is not None)
    rows = engine.run_queries(_set_based.PLAN, ratios, options, queries)
    frame = pd.DataFrame(rows["_class_report"], columns=["system", "label", "tp", "fp", "fn", "tn", "support", *ratios])
    nodes = engine.arrow(f"SELECT label, depth, position FROM {engine.quoted(engine.table('nodes'))}").to_pandas()
    frame = frame.merge(nodes, on="label").rename(columns=dict(zip(ratios, ("precision", "recall", "f1"),
                                                                   strict=True)))
    if labels is None:
        frame = frame.sort_values(["system", "depth", "position", "label"])
    else:
        order = {label: i for i, label in enumerate(labels)}
        frame = frame.sort_values(["system", "label"], key=lambda c: c.map(order) if c.name == "label" else c)
    columns = ["system", "label", "depth", "tp", "fp", "fn", "precision", "recall", "f1", "support"]
    frame = frame[columns].astype({c: "int64" for c in ("depth", "tp", "fp", "fn", "support")})
    values = {(str(s), a, m): float(v) for s, m, a, v in rows.get("_class_averages", [])}
    values |= {(str(row[0]), "micro", m): float(v) for row in rows["_class_micro"] for m, v in zip(ratios, row[1:],
                                                                                                   strict=True)}
    return frame.reset_index(drop=True), values


def _with_labels(options: Options, labels: list[str] | None) -> Options:
    """``options`` with ``labels`` as the fixed classes of the per-class values (an :class:`~hiersql.errors.
    InputError` names an unknown label when the plan runs)."""
    return options if labels is None else options.with_(labels=list(labels))


@dataclass(frozen=True)
class ClassificationReport:
    """A per-class report: ``frame`` (one row per system and class, then the average rows ``micro avg``,
    ``macro avg``, ``weighted avg``, ``samples avg``) and ``text``, laid out as scikit-learn's
    ``classification_report``; ``str(report)`` is the text."""

    frame: pd.DataFrame
    text: str

    def __str__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        """The frame as an HTML table: how a notebook shows the report."""
        return self.frame.to_html(index=False, na_rep="", float_format=lambda x: f"{x:.4f}")


def report(source: Store | Engine, options: Options | None = None, labels: list[str] | None = None,
           digits: int = 2) -> ClassificationReport:
    """The classification report of every system of ``store`` (see :func:`classification_report`): the
    per-class rows of :func:`by_class`, then ``micro avg`` (the pooled counts of the listed classes),
    ``macro avg`` (the set-based plan's ``label_macro``), ``weighted avg`` (``weighted``) and ``samples avg``
    (``samples``, over the whole augmented sets)."""
    import pandas as pd

    options, engine = options or Options(), as_engine(source)
    names = {"label_macro": "macro avg", "weighted": "weighted avg", "samples": "samples avg"}
    classes, values = _classes(engine, options, labels, tuple(names))
    parts, texts, systems = [], [], engine.systems()
    for system in systems:
        mine = classes[classes["system"] == system]
        tp, fp, fn = (int(mine[c].sum()) for c in ("tp", "fp", "fn"))
        rows = [(name, *(values[system, average, metric] for metric in MEASURES[:3]))
                for average, name in {"micro": "micro avg", **names}.items()]
        averages = pd.DataFrame([{"system": system, "label": name, "depth": pd.NA, "tp": tp, "fp": fp, "fn": fn,
                                  "precision": p, "recall": r, "f1": f, "support": int(mine["support"].sum())}
                                 for name, p, r, f in rows])
        table = pd.concat([mine.astype({"depth": "Int64"}), averages.astype({"depth": "Int64"})],
                          ignore_index=True)
        parts.append(table)
        texts.append(_text(system, table, digits, len(systems) > 1))
    frame = pd.concat(parts, ignore_index=True) if parts else classes
    return ClassificationReport(frame, "\n".join(texts))


def _text(system: str, table: pd.DataFrame, digits: int, title: bool) -> str:
    """scikit-learn's layout: one line per class, a blank line, the average lines."""
    averages = {"micro avg", "macro avg", "weighted avg", "samples avg"}
    names = [str(n) for n in table["label"]]
    width = max([len(n) for n in names] + [len("weighted avg"), digits])
    head = f"{'':>{width}} {'precision':>9} {'recall':>9} {'f1-score':>9} {'support':>9}\n\n"
    lines = []
    for i, row in enumerate(table.itertuples(index=False)):
        if row.label in averages and (i == 0 or table["label"].iloc[i - 1] not in averages):
            lines.append("")
        lines.append(f"{row.label:>{width}} {row.precision:>9.{digits}f} {row.recall:>9.{digits}f}"
                     f" {row.f1:>9.{digits}f} {int(row.support):>9}")
    return (f"system: {system}\n" if title else "") + head + "\n".join(lines) + "\n"


def classification_report(y_true: Any, y_pred: Any, taxonomy: Any, *, labels: list[str] | None = None,
                          digits: int = 2, **options: Any) -> ClassificationReport:
    """Per-class hierarchical precision, recall and F1 with support, and their averages, as scikit-learn's
    ``classification_report`` for multi-label input applied to the augmented sets ``Yaug``, ``Ŷaug``.

    Per class ``c`` (a node of an augmented set): ``P_c = TP_c / (TP_c + FP_c)``, ``R_c = TP_c / (TP_c +
    FN_c)``, ``F_c = 2 TP_c / (2 TP_c + FP_c + FN_c)``, support = the instances whose ``Yaug`` holds ``c``.
    Averages: ``micro avg`` pools the counts over the classes (= micro hP, hR, hF), ``macro avg`` is the mean
    over the classes, ``weighted avg`` the support-weighted mean, ``samples avg`` the mean over instances
    (= the per-instance "macro" hP, hR, hF of Kiritchenko et al. and HiClass).

    Parameters
    ----------
    y_true, y_pred:
        Sequences of label sets (one per instance; a string is a one-label set).
    taxonomy:
        A :class:`~hiersql.inputs.taxonomy.Taxonomy`, a path, a networkx DiGraph or ``(parent, child)`` pairs.
    labels:
        The classes to list, in this order (default: every class of the augmented sets, in taxonomy order).
        The micro, macro and weighted averages are over the listed classes, as in scikit-learn; the samples
        average stays the per-instance mean over the whole augmented sets.
    digits:
        Decimals of the text form.
    **options:
        The set-based options: ``include_root``, ``max_distance``, ``augment``, ``beta``, ``zero_division``.

    Returns
    -------
    ClassificationReport
        ``.frame`` (``system, label, depth, precision, recall, f1, support``) and ``.text``.
    """
    from ..inputs.arguments import check_integer, label_names
    from ..measures import store_from_sets
    from ..options import make_options

    digits = check_integer(digits, "digits")
    names = label_names(labels)
    opts = make_options(**options)
    store = store_from_sets(y_true, y_pred, taxonomy)
    try:
        out = report(store, opts, None if names is None else list(names), digits)
    finally:
        store.close()
    return ClassificationReport(out.frame.drop(columns="system"), out.text)
