"""Family plans: what a measure family computes, declared once, executed by any runner (:mod:`hiersql.runners`).

A :class:`FamilyPlan` names its SQL file and its steps in order: :class:`Sql` stages (named queries of the
file, each materialised as a table of the same name, reading the tables before it) and :class:`Python` steps
(solvers that read some of those tables and write new ones: OR-Tools pairings, LCA graphs, the HCM matching).
The per-instance stage holds one row per unit (an instance, or a class for label-based measures) with counts,
and the summary is declared as :class:`Measure` rows, from which :func:`summary_sql` writes the micro and
macro SQL once for every family:

- ``micro``: the measure of the counts summed over the units of a system, ``Σ numerator / Σ denominator``;
- ``macro``: the mean over the units of the per-unit ``numerator / denominator``;
- ``""`` (plain mean): the mean over the units of ``numerator`` (a per-unit value or loss).

A ratio whose denominator is 0 (or whose ``undefined`` condition holds) is ``$zero_division`` unless the
measure says otherwise. Means add the values in (instance, unit) order where the engine can (DuckDB,
PostgreSQL), so the same input prints the same digits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb

    from .metrics import Options

AVERAGES = ("micro", "macro", "")


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
    ``when(options)`` says whether the step runs at all (a step that only rewrites a table made before it).
    ``partition_by`` (``{table of reads: key columns}``) says that the step solves independent units: run
    on any split of the rows by those keys (the rows of one key value in every table named together, the
    tables not named whole), it writes the union of what it writes on all rows. A runner may then solve it
    per partition of the data (Spark); an empty ``partition_by`` means the step needs all its rows at once.
    """

    name: str
    solve: Callable[[duckdb.DuckDBPyConnection, dict[str, object], Options], None]
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    when: Callable[[Options], bool] = lambda options: True
    partition_by: Mapping[str, str] = field(default_factory=dict)


Step = Sql | Python


@dataclass(frozen=True)
class Measure:
    """One summary measure of a family, from the per-unit table ``unit`` (default: the plan's instance stage).

    ``value = numerator / denominator`` per unit (``numerator`` alone without a denominator); ``micro`` sums
    every column of both expressions over the units first. ``zero`` is the value where the denominator is 0
    or ``undefined`` holds (default ``$zero_division``). ``averages`` lists the averages it has; ``total``
    makes the plain average (``""``) a sum over the units instead of a mean (counts).
    """

    metric: str
    numerator: str
    denominator: str | None = None
    averages: tuple[str, ...] = ("micro", "macro")
    higher_is_better: bool = True
    unit: str | None = None
    undefined: str | None = None
    zero: str = "$zero_division"
    total: bool = False


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
        ``metric_applies(engine, metric)``: whether ``metric`` is defined on the input (``all`` skips the
        others).
    summary:
        A query of the file that gives ``(system, metric, average, value)`` itself, for a family whose
        summary is not a set of ratios of unit counts (scoring trees: means weighted by counts over nodes).
    unit_order:
        ``{unit table: columns}``: the key of each unit table without ``instance_id`` (per-class tables), the
        order in which a mean over it adds its values.
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
    metric_applies: Callable[[Any, str], bool] = lambda engine, metric: True
    summary: str | None = None
    unit_order: Mapping[str, str] = field(default_factory=dict)

    def steps_until(self, stage: str) -> tuple[Step, ...]:
        """The steps up to and including the one that makes table ``stage``."""
        for i, step in enumerate(self.steps):
            if (isinstance(step, Sql) and step.query == stage) or (isinstance(step, Python) and stage in step.writes):
                return self.steps[: i + 1]
        raise KeyError(f"plan {self.name!r} has no stage {stage!r}")


def summary_sql(plan: FamilyPlan, metrics: Sequence[str], averages: Sequence[str], ordered: bool) -> str:
    """The portable (DuckDB-dialect) query ``(system, metric, average, value)`` of ``metrics`` with
    ``averages`` from the plan's declared measures, one row per system of ``systems``. ``ordered`` adds the
    values of a mean in unit order (DuckDB, PostgreSQL), so that the digits do not depend on threads."""
    parts = [f"SELECT _s.system, '{metric}' AS metric, '{average}' AS average, {value} AS value FROM systems AS _s "
             f"LEFT JOIN {unit} AS _u ON _u.system = _s.system GROUP BY _s.system"
             for unit, metric, average, value in summary_values(plan, metrics, averages, ordered)]
    return "\nUNION ALL\n".join(parts) if parts else EMPTY_SUMMARY


EMPTY_SUMMARY = "SELECT system, '' AS metric, '' AS average, 0.0 AS value FROM systems WHERE false"


def summary_values(plan: FamilyPlan, metrics: Sequence[str], averages: Sequence[str], ordered: bool
                   ) -> list[tuple[str, str, str, str]]:
    """``(unit table, metric, average, value)`` of every row of :func:`summary_sql` per system: ``value`` is
    an aggregate over the rows ``_u`` of the unit table of one system."""
    wanted = set(averages) | {""}
    out: list[tuple[str, str, str, str]] = []
    for m in plan.measures:
        if m.metric not in metrics:
            continue
        unit = m.unit or plan.instance
        order = plan.unit_order.get(unit, "instance_id") if ordered else None
        out += [(unit, m.metric, average, _value(m, average, order)) for average in m.averages if average in wanted]
    return out


def _value(m: Measure, average: str, order_by: str | None) -> str:
    import sqlglot
    from sqlglot import exp

    def summed(sql: str) -> str:
        tree = sqlglot.parse_one(sql, read="duckdb")
        tree = tree.transform(lambda node: exp.func("coalesce", exp.cast(exp.func("sum", node.copy()), "DOUBLE"),
                                                    exp.Literal.number(0))
                              if isinstance(node, exp.Column) else node)
        return tree.sql(dialect="duckdb")

    order = f" ORDER BY {order_by}" if order_by else ""
    if m.total:
        return f"coalesce(sum({m.numerator}), 0)"
    if m.denominator is None:
        return f"coalesce(avg(1.0 * ({m.numerator}){order}), {m.zero})"
    if average == "micro":
        return _ratio(summed(m.numerator), summed(m.denominator),
                      summed(m.undefined) if m.undefined else None, m.zero)
    return f"coalesce(avg({_ratio(m.numerator, m.denominator, m.undefined, m.zero)}{order}), {m.zero})"


def _ratio(numerator: str, denominator: str, undefined: str | None, zero: str) -> str:
    guard = f"({denominator}) = 0" + (f" OR ({undefined})" if undefined else "")
    return f"CASE WHEN {guard} THEN {zero} ELSE 1.0 * ({numerator}) / ({denominator}) END"
