"""Family plans: what a measure family computes, declared once, executed by any runner (:mod:`hiersql.engines`).

A :class:`FamilyPlan` names its SQL file and its steps in order: :class:`Sql` stages (named queries of the
file, each materialised as a table of the same name, reading the tables before it) and :class:`Python` steps
(solvers that read some of those tables and write new ones: OR-Tools pairings, LCA graphs, the HCM matching).
The per-instance stage holds one row per unit (an instance, or a class for label-based measures) with counts,
and the summary is declared as :class:`Measure` rows, from which :func:`summary_sql` writes the SQL of every
average once for every family (scikit-learn's names; ``docs/sklearn.md`` has the table per family):

- ``micro``: the measure of the counts summed over the units of a system, ``Σ numerator / Σ denominator``;
- ``macro``, ``samples``, ``label_macro``: the mean over the units of the per-unit ``numerator / denominator``
  (instances for ``samples``; classes for ``label_macro``; the measure's own unit for ``macro``);
- ``weighted``: the mean over the classes weighted by their support (the weight of the instances whose true
  set holds the class);
- ``""`` (plain mean): the mean over the units of ``numerator`` (a per-unit value or loss).

Per-class measures (unit :data:`CLASSES`) read counts generated from the plan's ``classes`` query, one row per
(system, instance, label) with the side(s) the label is on: per class ``n_true, n_pred, n_both`` and
``tp, fp, fn, tn``, ``support`` (:func:`class_counts_sql`). With sample weights (a table
``sample_weights(instance_id, weight)``), every sum and mean weighs each instance by its weight, as
scikit-learn's ``sample_weight``.

A ratio whose denominator is 0 (or whose ``undefined`` condition holds) is ``$zero_division`` unless the
measure says otherwise; in a mean, a NaN ``$zero_division`` leaves the unit out (scikit-learn's
``zero_division=np.nan``). Means add the values in (instance, unit) order where the engine can (DuckDB,
PostgreSQL), so the same input prints the same digits.
"""

from __future__ import annotations

import functools
import string
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import duckdb

    from .options import Options

AVERAGES = ("micro", "macro", "samples", "weighted", "label_macro", "")
CLASSES = "_classes"  # Measure.unit of a per-class measure: the counts of class_counts_sql


class Row(NamedTuple):
    """One value: ``average`` is ``"micro"``, ``"macro"``, ``"samples"``, ``"weighted"``, ``"label_macro"``
    (docs/sklearn.md) or ``""`` where it does not apply."""

    system: str
    metric: str
    average: str
    value: float


@dataclass(frozen=True)
class Sql:
    """A stage: query ``query`` of the plan's SQL file, materialised as a table named ``query``."""

    query: str


@dataclass(frozen=True)
class Python:
    """A solver step between SQL stages.

    ``solve(con, params, options)`` receives a DuckDB connection on which the tables of ``reads`` exist
    (the runner's own connection for DuckDB; a scratch one holding Arrow copies for the other engines) and
    creates the tables of ``writes`` on it; the runner then makes them visible to the following stages.
    ``why`` says in one clause why SQL does not compute it (``hiersql sql`` prints it where the step goes).
    ``when(options)`` says whether the step runs at all (a step that only rewrites a table made before it).
    ``partition_by`` (``{table of reads: key columns}``) says that the step solves independent units: run
    on any split of the rows by those keys (the rows of one key value in every table named together, the
    tables not named whole), it writes the union of what it writes on all rows. A runner may then solve it
    per partition of the data (Spark), after a run on no rows of the tables named that gives the schemas it
    writes: on no rows such a step warns of nothing (the runner does not silence it: other plans may run
    beside it, and warning filters are process-wide). An empty ``partition_by`` means the step needs all its
    rows at once.
    """

    name: str
    solve: Callable[[duckdb.DuckDBPyConnection, dict[str, object], Options], None]
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    why: str
    when: Callable[[Options], bool] = lambda options: True
    partition_by: Mapping[str, str] = field(default_factory=dict)


Step = Sql | Python


@dataclass(frozen=True)
class SqlCheck:
    """A query of the family's file whose one row ``failed`` fails (a cast of hiersql's message to an integer)
    where the family's :attr:`FamilyPlan.check` refuses the input, and which has no row, or a NULL, otherwise:
    the rule as the SQL door runs it (the printed script, the macros). ``metrics``: it holds when one of them is
    asked for by name (``None``: whenever the family runs)."""

    query: str
    metrics: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Measure:
    """One measure of a family, declared once: what it computes, its averages, its direction and its range.
    Every door reads this declaration: the summary SQL (:func:`summary_sql`), the per-instance values
    (:func:`instance_values_sql`), ``compare``'s statistics, ranks and correlations, the report and the macros.

    ``value = numerator / denominator`` per unit (``numerator`` alone without a denominator), from the
    per-unit table ``unit`` (default: the plan's instance stage); ``micro`` sums every column of both
    expressions over the units first. ``unit`` :data:`CLASSES` makes it a per-class measure over the counts of
    :func:`class_counts_sql` (columns ``n_true, n_pred, n_both, tp, fp, fn, tn``). ``zero`` is the value where
    the denominator is 0 or ``undefined`` holds (default ``$zero_division``). ``averages`` lists the averages it
    has; ``total`` makes the plain average (``""``) a sum over the units instead of a mean (counts).
    ``numerator`` is ``None`` only in a plan whose own ``summary`` query gives the values (scoring trees).

    ``higher_is_better`` is the direction (scikit-learn's ``*_score`` against ``*_loss``): ``compare`` ranks
    by it, the report marks the best by it. ``bounds`` is the closed range of every value (``inf``: unbounded),
    a ``$zero_division`` value aside.
    """

    metric: str
    numerator: str | None = None
    denominator: str | None = None
    averages: tuple[str, ...] = ("micro", "macro")
    higher_is_better: bool = True
    unit: str | None = None
    undefined: str | None = None
    zero: str = "$zero_division"
    total: bool = False
    bounds: tuple[float, float] = (0.0, 1.0)


@dataclass(frozen=True)
class FamilyPlan:
    """Everything a runner needs to compute one family of measures.

    Parameters
    ----------
    name:
        The family (``set_based``, ``lca``, ...).
    file:
        Its SQL file, ``sql/<file>.sql``.
    metrics:
        ``{metric name: alias}`` (SPEC §10 names).
    steps:
        The stages and solver steps, in order, up to ``instance``.
    instance:
        The per-instance stage (columns ``system, instance_id`` and the counts and values).
    measures:
        The summary, declared.
    params:
        ``params(options, engine, metrics)``: the ``$parameters`` of its SQL (and of its Python steps);
        ``engine`` is the runner (``None`` when SQL is only printed), for plans that look at the input's size.
    check:
        ``check(engine, metrics, options)``: raises :class:`~hiersql.errors.InputError` when ``metrics`` are
        not defined on the input (run before a summary, not before per-instance values, which show undefined
        values as missing).
    groups:
        ``groups(metrics, options)``: the runs a summary needs, ``[(metrics, options), ...]``, for measures
        that must be computed with other options (the pair-based errors that ignore ``max_distance``).
    tables:
        ``tables(options)``: helper input tables the SQL reads besides the store's, as Arrow tables.
    applies:
        ``applies(engine)``: ``None`` when the family is defined on the engine's input, else why not (shown
        to users).
    metric_applies:
        ``metric_applies(engine, metric, options)``: whether ``metric`` is defined on the input with ``options``
        (``all`` skips the others).
    sql_checks:
        :attr:`check`'s rules as queries of the file (:class:`SqlCheck`), for a printed script, which fails
        before its summary where ``hiersql evaluate`` refuses the input.
    summary:
        A query of the file that gives ``(system, metric, average, value)`` itself, for a family whose
        summary is not a set of ratios of unit counts (scoring trees: means weighted by counts over nodes).
    unit_order:
        ``{unit table: columns}``: the key of each unit table without ``instance_id`` (per-class tables), the
        order in which a mean over it adds its values.
    classes:
        A query of the file with one row per (system, instance_id, label) and booleans ``in_true, in_pred``:
        the classes of the per-class measures (:data:`CLASSES`).
    class_universe:
        A query of the file ``(system, label)``: the classes of each system (default: the labels of
        ``classes``, or with fixed labels the table ``class_labels(label)`` for every system).
    run_average:
        For a family whose :attr:`groups` compute the same measures at several settings, the ``average``
        column of a run's rows as a format string over the run's ``$parameters`` (severity: ``"@{top_k}"``,
        one run per k). The generated summary writes it as SQL (``'@' || CAST($top_k AS VARCHAR)``), so a
        macro or printed script labels its rows as the runners do (:meth:`average_of` in Python); its
        measures are plain means (averages ``("",)``) over the instances where they are defined; ``compare``
        bootstraps each run's per-instance values.
    instance_counts_classes:
        The instance stage's ``n_true, n_pred, n_both`` count the rows of ``classes`` of each instance, so a
        class count (``tp``, ``fp``, ``fn``) summed over the classes is a per-instance count summed over the
        instances (``compare`` then has intervals for the per-class measures' ``micro`` average).
    systems:
        The table, or query of the file, ``(system)`` of the systems the summary has rows for (default: every
        system); severity: those that have values at a run's k (hard predictions have k = 1 only), whose rows
        the instance stage alone holds.
    shared:
        Queries of the file worth making once for all the runs of :attr:`groups` (severity: the ranking that
        every k reads): a runner makes each as a table before a run's steps and reuses it in the next runs
        while the ``$parameters`` its rows depend on (its own and those of every query it reads) keep their
        values, and makes it again when they change (:meth:`~hiersql.engines.Engine._group_runs`).
    instance_ranges:
        Every step up to :attr:`instance` computes the rows of a (system, instance) from that instance's rows of
        ``instances``, ``truth`` and ``predictions`` alone, and the summary reads no stage but :attr:`instance`:
        a runner may run the steps for ranges of instances one after the other and append the per-instance
        rows (the DuckDB engine beyond ``DuckDBEngine.range_units`` (system, instance) units).
    """

    name: str
    file: str
    metrics: Mapping[str, str]
    steps: tuple[Step, ...]
    instance: str
    measures: tuple[Measure, ...] = ()
    params: Callable[[Options, Any, Sequence[str]], dict[str, object]] = lambda options, engine, metrics: {}
    check: Callable[[Any, Sequence[str], Options], None] = lambda engine, metrics, options: None
    groups: Callable[[Sequence[str], Options], list[tuple[list[str], Options]]] = \
        lambda metrics, options: [(list(metrics), options)]
    tables: Callable[[Options], dict[str, Any]] = lambda options: {}
    applies: Callable[[Any], str | None] = lambda engine: None
    metric_applies: Callable[[Any, str, Any], bool] = lambda engine, metric, options=None: True
    sql_checks: tuple[SqlCheck, ...] = ()
    summary: str | None = None
    unit_order: Mapping[str, str] = field(default_factory=dict)
    classes: str | None = None
    class_universe: str | None = None
    instance_counts_classes: bool = False
    run_average: str | None = None
    systems: str = "systems"
    shared: tuple[str, ...] = ()
    instance_ranges: bool = False

    def average_of(self, options: Options) -> str:
        """The ``average`` of the rows of a run with ``options`` (:attr:`run_average` with its parameters)."""
        assert self.run_average is not None
        return self.run_average.format(**self.params(options, None, ()))

    def read_beyond_stages(self) -> set[str]:
        """The tables that something other than a later SQL stage reads: the per-instance, per-class and unit
        tables (the generated queries read them) and those a Python step reads or writes."""
        kept = {self.instance, self.classes, *(m.unit for m in self.measures if m.unit)}
        return kept | {name for step in self.steps if isinstance(step, Python) for name in (*step.reads, *step.writes)}

    def steps_until(self, stage: str) -> tuple[Step, ...]:
        """The steps up to and including the one that makes table ``stage``."""
        for i, step in enumerate(self.steps):
            if (isinstance(step, Sql) and step.query == stage) or (isinstance(step, Python) and stage in step.writes):
                return self.steps[: i + 1]
        raise KeyError(f"plan {self.name!r} has no stage {stage!r}")


def summary_sql(plan: FamilyPlan, metrics: Sequence[str], averages: Sequence[str], ordered: bool,
                weighted: bool = False, fixed_classes: bool = False, in_lists: bool = False) -> str:
    """The portable (DuckDB-dialect) query ``(system, metric, average, value)`` of ``metrics`` with
    ``averages`` from the plan's declared measures, one row per system of ``systems``. ``ordered`` adds the
    values of a mean in unit order (DuckDB, PostgreSQL), so that the digits do not depend on threads;
    ``in_lists`` (DuckDB only) reads them from one ordered list per unit table (:class:`Folds`).
    ``weighted``: weigh each instance by ``sample_weights.weight``. ``fixed_classes``: the classes of the
    per-class measures are the table ``class_labels`` (scikit-learn's ``labels=``).

    Every value read from one unit table is a column of one aggregate over it (one join of ``systems`` to
    the unit and one ``GROUP BY``, instead of one per value), turned into rows by a cross join with the list
    of its (metric, average) pairs (:func:`_unit_summary`); the unit tables' rows are put together with
    ``UNION ALL``."""
    wanted = set(averages) | {""}
    units: dict[str, list[tuple[Measure, str]]] = {}
    for m, average in _parts(plan, metrics, wanted):
        units.setdefault(m.unit or plan.instance, []).append((m, average))
    if not units:
        return "SELECT system, '' AS metric, '' AS average, 0.0 AS value FROM systems WHERE false"
    parts = [_unit_summary(plan, unit_parts, ordered, weighted, in_lists) for unit_parts in units.values()]
    return _with_classes(plan, "\nUNION ALL\n".join(parts), weighted, fixed_classes)


def _unit_summary(plan: FamilyPlan, parts: Sequence[tuple[Measure, str]], ordered: bool, weighted: bool,
                  in_lists: bool) -> str:
    """The rows ``(system, metric, average, value)`` of ``parts``, (measure, average) pairs that read the same
    unit table: their values as the columns ``v0, v1, ...`` of one aggregate per system (a value that two
    parts share, such as ``macro`` and ``label_macro`` over classes, computed once), unpivoted by a cross
    join with ``VALUES (k, metric, average), ...`` and ``CASE k``. One part is its aggregate alone."""
    unit, order = _unit(plan, parts[0][0], ordered)
    weight = WEIGHT if weighted and parts[0][0].unit != CLASSES else None
    join = " LEFT JOIN sample_weights AS _w ON _w.instance_id = _u.instance_id" if weight else ""
    source = f"FROM {plan.systems} AS _s LEFT JOIN {unit} AS _u ON _u.system = _s.system{join} GROUP BY _s.system"
    folds = Folds(order, in_lists)
    values = folds.done([value_sql(m, average, folds, weight) for m, average in parts])
    if len(parts) == 1:
        (m, average), = parts
        return (f"SELECT _s.system, '{m.metric}' AS metric, {_average_sql(plan, average)} AS average,"
                f" {values[0]} AS value {source}")
    columns = list(dict.fromkeys(values))
    aggregates = ", ".join(f"{value} AS v{i}" for i, value in enumerate(columns))
    names = ", ".join(f"({k}, '{m.metric}', '{average}')" for k, (m, average) in enumerate(parts))
    cases = " ".join(f"WHEN {k} THEN _v.v{columns.index(value)}" for k, value in enumerate(values))
    average_column = "_m.average" if plan.run_average is None else _average_sql(plan, "")
    return (f"SELECT _v.system, _m.metric, {average_column} AS average, CASE _m.k {cases} END AS value"
            f" FROM (SELECT _s.system, {aggregates} {source}) AS _v"
            f" CROSS JOIN (VALUES {names}) AS _m(k, metric, average)")


def _average_sql(plan: FamilyPlan, average: str) -> str:
    """The SQL of the ``average`` column: ``average`` as a literal, or the plan's :attr:`~FamilyPlan.run_average`
    with its parameters (``"@{top_k}"``: ``'@' || CAST($top_k AS VARCHAR)``)."""
    if plan.run_average is None:
        return f"'{average}'"
    parts = []
    for literal, name, _, _ in string.Formatter().parse(plan.run_average):
        parts += [f"'{literal}'"] if literal else []
        parts += [f"CAST(${name} AS VARCHAR)"] if name else []
    return " || ".join(parts)


def averages_of(plan: FamilyPlan, metric: str) -> tuple[str, ...]:
    """The averages ``metric`` has (``""``: a plain mean, no average to choose), as its measures declare."""
    return tuple(dict.fromkeys(a for m, a in _parts(plan, [metric], set(AVERAGES))))


def instance_values_sql(plan: FamilyPlan, table: str | None = None) -> str:
    """The query of the per-instance table: the plan's instance stage (or ``table``, rows with the same count
    columns) and, after its columns, the per-instance value of each measure of :func:`instance_measures`
    (``numerator / denominator``, its ``zero`` where undefined, as the ``macro`` mean reads it; a measure without
    denominator: its numerator)."""
    values = "".join(f", {_instance_value(m)} AS {m.metric}" for m in instance_measures(plan))
    return f"SELECT _u.*{values} FROM {table or plan.instance} AS _u"


def instance_measures(plan: FamilyPlan) -> tuple[Measure, ...]:
    """The measures with a per-instance value generated from their declaration: those over the instance stage
    that are averaged over instances (``macro``, or a plain mean), not totals, whose numerator is not a column of
    their own name (a value the stage gives itself, such as a Python step's pairing cost)."""
    return tuple(m for m in plan.measures
                 if m.unit is None and m.numerator not in (None, m.metric) and not m.total
                 and ("macro" in m.averages or m.averages == ("",)))


def _instance_value(m: Measure) -> str:
    assert m.numerator is not None
    return _ratio(m.numerator, m.denominator, m.undefined, m.zero) if m.denominator else m.numerator


def class_micro_sql(plan: FamilyPlan, metrics: Sequence[str], fixed_classes: bool = False) -> str:
    """The query ``(system, <metric>...)``: each per-class measure of ``metrics`` with its counts pooled over the
    classes of the system (``micro`` over its :data:`CLASSES` declaration: scikit-learn's ``micro avg`` of a
    classification report over the listed classes)."""
    values = ", ".join(f"{value_sql(_class_measure(plan, metric), 'micro', Folds(None))} AS {metric}"
                       for metric in metrics)
    return _with_classes(plan, f"SELECT system, {values} FROM {CLASSES} GROUP BY system ORDER BY system", False,
                         fixed_classes)


def class_values_sql(plan: FamilyPlan, metric: str, weighted: bool = False, fixed_classes: bool = False) -> str:
    """The query ``(system, label, value)`` of the per-class values of ``metric`` (its :data:`CLASSES`
    measure), ordered by system and label."""
    return _with_classes(plan, f"SELECT system, label, {_class_value(plan, metric)} AS value FROM {CLASSES}"
                               " ORDER BY system, label", weighted, fixed_classes)


def class_report_sql(plan: FamilyPlan, metrics: Sequence[str], weighted: bool = False,
                     fixed_classes: bool = False) -> str:
    """The query ``(system, label, tp, fp, fn, tn, support, <metric>...)``: the counts of every class and the
    per-class values of ``metrics`` (one column each, named after the metric), ordered by system and label."""
    values = "".join(f", {_class_value(plan, metric)} AS {metric}" for metric in metrics)
    return _with_classes(plan, f"SELECT system, label, tp, fp, fn, tn, support{values} FROM {CLASSES}"
                               " ORDER BY system, label", weighted, fixed_classes)


def _class_value(plan: FamilyPlan, metric: str) -> str:
    m = _class_measure(plan, metric)
    return _ratio(m.numerator, m.denominator, m.undefined, m.zero) if m.denominator else m.numerator


def measure_of(plan: FamilyPlan, metric: str, average: str | None) -> Measure:
    """The declared measure that gives ``metric``'s ``average`` (``None``: its per-class values)."""
    if average is None:
        return _class_measure(plan, metric)
    for m, _ in _parts(plan, [metric], {average}):
        return m
    raise ValueError(f"{metric} has no average {average!r}")


def undefined_sql(plan: FamilyPlan, metric: str, average: str | None, weighted: bool = False,
                  fixed_classes: bool = False) -> str | None:
    """The query ``(system, units, total)``: how many units of ``metric``'s ``average`` (``None``: its classes)
    have a zero denominator (or meet ``undefined``) and take ``zero``, of how many, for scikit-learn's
    ``zero_division="warn"``; ``micro`` counts 1 of 1 when the pooled denominator is 0. ``None`` when the
    measure is not a ratio."""
    m = measure_of(plan, metric, average)
    if m.denominator is None:
        return None
    unit, _ = _unit(plan, m, False)
    weight = WEIGHT if weighted and m.unit != CLASSES else None
    join = " LEFT JOIN sample_weights AS _w ON _w.instance_id = _u.instance_id" if weight else ""
    if average == "micro":
        summed = _summed(weight)
        guard = _undefined(summed(m.denominator), summed(m.undefined) if m.undefined else None)
        count, total = f"CASE WHEN {guard} THEN 1 ELSE 0 END", "1"
    else:
        guard = _undefined(m.denominator, m.undefined)
        count, total = f"count(*) FILTER (WHERE {guard})", "count(_u.system)"
    return _with_classes(plan, f"SELECT _s.system, {count} AS units, {total} AS total FROM systems AS _s"
                               f" LEFT JOIN {unit} AS _u"
                               f" ON _u.system = _s.system{join} GROUP BY _s.system", weighted, fixed_classes)


def class_counts_sql(plan: FamilyPlan, weighted: bool = False, fixed_classes: bool = False) -> str:
    """Per (system, class): ``n_true, n_pred, n_both`` (the instances, or their weights, whose true set,
    predicted set, both hold the class), ``tp, fp, fn, tn`` and ``support`` (= ``n_true``), from the plan's
    ``classes`` rows over its class universe."""
    if plan.classes is None:
        raise ValueError(f"family {plan.name!r} has no per-class measures")
    if plan.class_universe is not None:
        universe = plan.class_universe
    elif fixed_classes:
        universe = "(SELECT _cs.system, _cl.label FROM systems AS _cs CROSS JOIN class_labels AS _cl)"
    else:
        universe = f"(SELECT DISTINCT system, label FROM {plan.classes})"
    w = "_cw.weight" if weighted else "1"
    weights = " LEFT JOIN sample_weights AS _cw ON _cw.instance_id = {}.instance_id" if weighted else ""
    return (
        "SELECT c.system, c.label, c.n_true, c.n_pred, c.n_both, c.n_both AS tp, c.n_pred - c.n_both AS fp,"
        " c.n_true - c.n_both AS fn, t.n_weight - c.n_true - c.n_pred + c.n_both AS tn, c.n_true AS support"
        " FROM (SELECT u.system, u.label,"
        f" coalesce(sum(CASE WHEN p.in_true THEN {w} ELSE 0 END), 0) AS n_true,"
        f" coalesce(sum(CASE WHEN p.in_pred THEN {w} ELSE 0 END), 0) AS n_pred,"
        f" coalesce(sum(CASE WHEN p.in_true AND p.in_pred THEN {w} ELSE 0 END), 0) AS n_both"
        f" FROM {universe} AS u LEFT JOIN {plan.classes} AS p ON p.system = u.system AND p.label = u.label"
        f"{weights.format('p')} GROUP BY u.system, u.label) AS c"
        f" JOIN (SELECT _ts.system, {'coalesce(sum(_cw.weight), 0)' if weighted else 'count(*)'} AS n_weight"
        f" FROM systems AS _ts CROSS JOIN instances AS _ti{weights.format('_ti')} GROUP BY _ts.system) AS t"
        " ON t.system = c.system"
    )


def _parts(plan: FamilyPlan, metrics: Sequence[str], wanted: set[str]) -> list[tuple[Measure, str]]:
    """(measure, average) of every summary value of ``metrics`` among the ``wanted`` averages."""
    return [(m, a) for m in plan.measures if m.metric in metrics for a in m.averages if a in wanted]


def _class_measure(plan: FamilyPlan, metric: str) -> Measure:
    for m in plan.measures:
        if m.metric == metric and m.unit == CLASSES:
            return m
    raise ValueError(f"{metric} has no per-class values")


def _unit(plan: FamilyPlan, m: Measure, ordered: bool) -> tuple[str, str | None]:
    unit = m.unit or plan.instance
    if not ordered:
        return unit, None
    order = plan.unit_order.get(unit, "label" if unit == CLASSES else "instance_id")
    return unit, ", ".join(f"_u.{column.strip()}" for column in order.split(","))


def _with_classes(plan: FamilyPlan, sql: str, weighted: bool, fixed_classes: bool) -> str:
    """``sql`` with the class counts as the common table expression :data:`CLASSES` when it reads them."""
    if CLASSES not in sql:
        return sql
    return f"WITH {CLASSES} AS ({class_counts_sql(plan, weighted, fixed_classes)})\n{sql}"


SUMMED_FILE = Path(__file__).with_name("summed.json")  # the summed forms of the declared expressions
WEIGHT = "_w.weight"  # the sample weight of a unit, as summary_sql joins it


def _summed(weight: str | None) -> Callable[[str], str]:
    """Every column of an expression summed over the units (times ``weight`` when given). The forms of the
    declared measures' expressions are read from :data:`SUMMED_FILE` (a test holds it equal to
    :func:`summed_by_sqlglot`): a plain DuckDB run then does not import sqlglot, a tenth of a small run."""
    known = _summed_file()

    def summed(sql: str) -> str:
        found = known.get(f"{weight or ''}\t{sql}")
        return found if found is not None else summed_by_sqlglot(sql, weight)

    return summed


def summed_by_sqlglot(sql: str, weight: str | None) -> str:
    """Expression ``sql`` with each column ``c`` replaced by ``coalesce(CAST(sum(c) AS DOUBLE), 0)`` (by
    ``sum(weight * c)`` when ``weight`` is given), rewritten by sqlglot."""
    import sqlglot
    from sqlglot import exp

    def total(node: exp.Expression) -> exp.Expression:
        inner = node.copy() if weight is None else exp.Mul(this=sqlglot.parse_one(weight), expression=node.copy())
        return exp.func("coalesce", exp.cast(exp.func("sum", inner), "DOUBLE"), exp.Literal.number(0))

    tree = sqlglot.parse_one(sql, read="duckdb")
    return tree.transform(lambda node: total(node) if isinstance(node, exp.Column) else node).sql(dialect="duckdb")


@functools.cache
def _summed_file() -> dict[str, str]:
    import json

    return json.loads(SUMMED_FILE.read_text()) if SUMMED_FILE.exists() else {}


def summed_forms(measures: Iterable[Measure]) -> dict[str, str]:
    """The contents of :data:`SUMMED_FILE` for ``measures`` (``"weight<TAB>expression"`` → its summed form),
    written by :func:`hiersql.measures.write_summed_file`."""
    return {f"{weight or ''}\t{sql}": summed_by_sqlglot(sql, weight)
            for m in measures if m.denominator is not None and not m.total and "micro" in m.averages
            for sql in (m.numerator, m.denominator, m.undefined) if sql for weight in (None, WEIGHT)}


class Folds:
    """How the means of one query over a unit table add their values: ``folds("avg", x)`` is the SQL of
    ``avg(x)``, in ``order_by`` order when given (``avg(x ORDER BY k)``: the digits do not depend on threads).

    ``in_lists`` (DuckDB): every ordered ``agg(x_i ORDER BY k)`` of the query is read instead from one list of
    the rows' values in that order, ``list(struct_pack(_v0 := x_0, ...) ORDER BY k)``, as
    ``list_agg(list_transform(L, lambda _r: _r._v{i}))``. The list is the same aggregate text in every value,
    which DuckDB computes once: one sort of the unit's rows instead of one per value. The values are added
    by the same aggregate in the same order, so the digits are the same. :meth:`done` writes the list into
    a value once every value of the query has been made."""

    LIST = "\x00units\x00"  # where the list goes, until every value is known (no SQL holds a NUL)

    def __init__(self, order_by: str | None, in_lists: bool = False) -> None:
        self.order_by, self.in_lists = order_by, in_lists and order_by is not None
        self.args: list[str] = []

    def __call__(self, func: str, arg: str) -> str:
        if not self.order_by:
            return f"{func}({arg})"
        if not self.in_lists:
            return f"{func}({arg} ORDER BY {self.order_by})"
        if arg not in self.args:
            self.args.append(arg)
        return f"list_{func}(list_transform({self.LIST}, lambda _r: _r._v{self.args.index(arg)}))"

    def done(self, values: list[str]) -> list[str]:
        """``values``, every value of the query, with the list written in."""
        if not self.args:
            return values
        fields = ", ".join(f"_v{i} := {arg}" for i, arg in enumerate(self.args))
        rows = f"list(struct_pack({fields}) ORDER BY {self.order_by})"
        return [value.replace(self.LIST, rows) for value in values]


def value_sql(m: Measure, average: str, fold: Folds, weight: str | None = None) -> str:
    """The aggregate expression of ``m``'s ``average`` over the rows of a ``GROUP BY`` of its unit table (the
    columns its expressions name): ``micro`` the ratio of the sums, the other averages the mean of the per-unit
    values (added by ``fold``: :class:`Folds`), weighted by the column ``weight`` when given."""
    if m.total:
        return f"coalesce(sum({m.numerator if weight is None else f'{weight} * ({m.numerator})'}), 0)"
    if m.denominator is None:
        return _mean(f"1.0 * ({m.numerator})", fold, weight, m.zero)
    if average == "micro":
        summed = _summed(weight)
        return _ratio(summed(m.numerator), summed(m.denominator), summed(m.undefined) if m.undefined else None,
                      m.zero)
    # in a mean, an undefined ratio that is NaN is left out (NULL), as scikit-learn's zero_division=np.nan
    ratio = _ratio(m.numerator, m.denominator, m.undefined, f"nullif({m.zero}, CAST('NaN' AS DOUBLE))")
    if average == "weighted":
        return _mean(ratio, fold, "support", m.zero, plain=True)
    return _mean(ratio, fold, weight, m.zero)


def _mean(value: str, fold: Folds, weight: str | None, zero: str, plain: bool = False) -> str:
    """The mean of ``value`` over the units (missing values left out), weighted by ``weight`` when given;
    ``zero`` when no unit has a value. Where the weights of the units with a value sum to 0: ``zero`` too for
    sample weights (an instance of weight 0 counts for nothing, as in scikit-learn, whose counts it zeroes),
    the plain mean with ``plain`` (the classes' supports of ``weighted``, as scikit-learn's ``_nanaverage``)."""
    if weight is None:
        return f"coalesce({fold('avg', value)}, {zero})"
    fallback = f"{fold('avg', value)}, " if plain else ""
    return (f"coalesce({fold('sum', f'{weight} * ({value})')} / nullif("
            f"{fold('sum', f'CASE WHEN ({value}) IS NOT NULL THEN {weight} ELSE 0 END')}, 0), {fallback}{zero})")


def _ratio(numerator: str, denominator: str, undefined: str | None, zero: str) -> str:
    return f"CASE WHEN {_undefined(denominator, undefined)} THEN {zero} ELSE 1.0 * ({numerator}) / ({denominator}) END"


def _undefined(denominator: str, undefined: str | None) -> str:
    """The condition under which a ratio takes its zero-division value: ``undefined`` is tested first, in a
    ``CASE`` of its own (a denominator may divide by what ``undefined`` tests: ``hcm_pt``'s TPR + TNR − 1, where
    ``OR`` lets PostgreSQL evaluate the division first and fail)."""
    zero = f"({denominator}) = 0"
    return f"(CASE WHEN ({undefined}) THEN TRUE ELSE {zero} END)" if undefined else zero

