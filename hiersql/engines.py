"""Engines: compute the SQL-expressible measures inside DuckDB, PostgreSQL or Spark.

The measures are SQL files (``sql/<family>.sql``) written for DuckDB. An :class:`Engine` renders a family's
summary query, composed with the queries it reads, in its own dialect with sqlglot (:func:`render`) and runs it
where the data lives. The tables the queries read are those of ``sql/schema.sql``:
``edges, nodes, closure, instances, truth, predictions, systems``. An engine either receives copies of a
:class:`~hiersql.store.Store`'s tables (:meth:`Engine.copy_store`) or reads tables already there under other
names (:meth:`Engine.use_tables`, e.g. ``truth="warehouse.gold_labels"``); :meth:`Engine.build_closure`
computes the closure inside the engine from ``edges`` and ``nodes``.

Dialect fixes applied on top of sqlglot's transpilation (:func:`render`):

- Spark reads a literal such as ``1.0`` as ``DECIMAL(2,1)``, and its decimal division keeps only 6 digits
  after the point: decimal literals become ``DOUBLE`` literals, as in DuckDB.
- Spark has no ordered aggregates (``sum(x ORDER BY k)``, which the means use so that their digits do not
  depend on threads): the values are added exactly instead, as ``DECIMAL(38, 18)`` by Spark's ``sum``
  (:func:`_ordered_fold`), so a Spark run prints the same digits however its rows are partitioned; they
  agree with DuckDB's ordered sums of doubles to the rounding of those sums.
- A Spark variant of a query asks for a broadcast join with a comment closing its select list
  (``SELECT a, b /*+ BROADCAST(m) */ FROM ...``; DuckDB's parser keeps it as a plain comment): it becomes the
  ``SELECT``'s Spark hint.
- Spark (4.x) accepts only ``UNION ALL`` in a recursive CTE: the ``UNION`` of a CTE that reads itself
  becomes ``UNION ALL``. That is right for a query whose result does not depend on duplicate rows, such as the
  closure: the recursion then walks every path instead of every (ancestor, descendant, distance) triple, still
  ends because a taxonomy has no cycle, and ``min(distance)`` gives the same closure. On a DAG with many paths
  (MeSH) compute the closure in DuckDB and copy it instead.

Every engine returns the rows ``(system, metric, average, value)`` of :class:`~hiersql.plan.Row`.
"""

from __future__ import annotations

import itertools
import re
import shutil
import warnings
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from . import sqlfiles
from .errors import DataWarning, InputError, display, is_spark_error, masked, spark_message
from .options import Options, sql_options
from .plan import FamilyPlan, Python, Row, Sql, Step, instance_values_sql, summary_sql

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from .store import Store
    from .taxonomy import Taxonomy

STORE_TABLES = ("edges", "nodes", "closure", "instances", "truth", "predictions", "systems", "pair_counts")


# ---------------------------------------------------------------------------------------------- queries
# The statement after each stage of a printed script in these dialects, as their runners do: PostgreSQL has no
# statistics of a new table until it is analysed, and plans some stages (NOT IN over a stage, joins of stages)
# as if it were empty (the HCM's hcm_set_labels on GermEval B: 334 s without, 19 ms with).
_ANALYZE_STAGES = {"postgres": "ANALYZE {}"}
# How a printed script makes a stage, where not as a temporary table: Spark has none (a temporary view is
# computed again at every reference; a cached one once, as the Spark runner stores its stages).
_STAGE_STATEMENTS = {"spark": "CACHE TABLE {} AS", "spark2": "CACHE TABLE {} AS", "databricks": "CACHE TABLE {} AS"}


def render_family(plan: FamilyPlan, params: Mapping[str, object], dialect: str = "duckdb",
                  tables: Mapping[str, str] | None = None, metrics: Sequence[str] | None = None,
                  averages: Sequence[str] = ("micro", "macro"), pretty: bool = True,
                  options: Options | None = None) -> str:
    """The SQL of a family's ``plan`` in ``dialect``, its ``$parameters`` set to ``params``.

    A family computed by SQL alone is one query: its generated summary (of ``metrics``, default all) with the
    queries it reads as common table expressions. A family with Python steps is a script: each stage as a
    ``CREATE TEMPORARY TABLE`` (in PostgreSQL followed by ``ANALYZE``; for Spark, which inlines a common table
    expression at every reference, a ``CACHE TABLE``, and every family a script), each Python step that runs with
    ``options`` (default :class:`Options`) as a comment naming the tables it reads and writes (the runners
    solve them between the stages), then the summary query. A stage that such a step writes is left to the
    step (its query is the empty default of the selections without the step): the script fails at the first
    statement that reads it unless the step was run, rather than giving another selection's values. A family
    with its own summary query keeps the rows of ``metrics`` only.
    """
    options = options or Options()
    metrics = list(metrics or plan.metrics)
    ordered = dialect in ORDERED_DIALECTS

    def query(query_name: str, text: str | None = None, skip: frozenset[str] = frozenset()) -> str:
        return _tree(plan.file, query_name, params, dialect, tables, skip=skip, text=text).sql(
            dialect=dialect, pretty=pretty)

    if not plan.summary:
        summary, last = summary_sql(plan, metrics, averages, ordered), f"{plan.name}_summary"
    elif set(metrics) == set(plan.metrics):
        summary, last = None, plan.summary
    else:  # the family's own summary query, filtered
        summary = f"SELECT * FROM {plan.summary} WHERE metric IN ({', '.join(repr(m) for m in metrics)})"
        last = f"{plan.summary}_of_metrics"
    steps = [step for step in plan.steps if isinstance(step, Sql) or step.when(options)]
    if not any(isinstance(step, Python) for step in steps) and dialect not in _FIXES:
        return query(last, summary)
    solved = {name for step in steps if isinstance(step, Python) for name in step.writes}
    create = _STAGE_STATEMENTS.get(dialect, "CREATE TEMPORARY TABLE {} AS")
    out: list[str] = []
    done: set[str] = set()
    # the options that shape the plan and reach its Python steps only: the printed script names their values
    shaping = ", ".join(f"{o.name}={getattr(options, o.name)!r}" for o in sql_options()
                        if o.plan and plan.name in o.families)
    for step in steps:
        if isinstance(step, Sql):
            for dep in [*sqlfiles.dependencies(plan.file, step.query), step.query]:
                if dep not in done and dep not in solved:
                    out.append(f"{create.format(dep)}\n{query(dep, skip=frozenset(done | solved))};")
                    if dialect in _ANALYZE_STAGES:
                        out[-1] += "\n" + _ANALYZE_STAGES[dialect].format(dep) + ";"
                    done.add(dep)
        else:
            out.append(f"-- Python step {step.name} ({step.solve.__module__}.{step.solve.__name__}): reads "
                       f"{', '.join(step.reads)}; writes {', '.join(step.writes)}"
                       + (f"; the family's plan options: {shaping}" if shaping else ""))
            done.update(step.writes)
    out.append(query(last, summary, frozenset(done)) + ";")
    return "\n\n".join(out).rstrip(";")


def family_params(plan: FamilyPlan, options: Options) -> dict[str, object]:
    """The ``$parameters`` of a family ``plan``'s SQL for ``options`` (the plan's, without an engine)."""
    return {"zero_division": float(options.zero_division), **plan.params(options, None, list(plan.metrics))}


def render(
    file: str,
    name: str | None = None,
    params: Mapping[str, object] | None = None,
    dialect: str = "duckdb",
    tables: Mapping[str, str] | None = None,
    pretty: bool = True,
    skip: frozenset[str] = frozenset(),
    text: str | None = None,
) -> str:
    """Query ``name`` of ``sql/<file>.sql`` as one statement in ``dialect``: :func:`hiersql.sqlfiles.render`
    (dependencies as CTEs except those of ``skip``, parameters as literals, ``tables`` renamed; ``text``
    replaces the query's own text), constant-folded (a branch switched off by a parameter, such as
    ``'ancestors' = 'descendants' AND ...``, disappears), plus the dialect fixes of the module docstring."""
    return _tree(file, name, params, dialect, tables, skip, text).sql(dialect=dialect, pretty=pretty)


def _tree(file, name, params, dialect, tables, skip=frozenset(), text=None):
    """The sqlglot tree behind :func:`render`."""
    import sqlglot
    from sqlglot.optimizer.simplify import simplify

    sql = sqlfiles.render(file, name, dict(params or {}), "duckdb", dict(tables or {}), pretty=False, skip=skip,
                          text=text, variant=_VARIANTS.get(dialect))
    tree = _dead_branches_pruned(simplify(sqlglot.parse_one(sql + "\n", read="duckdb")))  # newline: sqlfiles._parse
    if dialect in _FIXES:
        return _FIXES[dialect](tree)
    if dialect not in ORDERED_DIALECTS:
        _unordered(tree)
    return tree


def _unordered(tree) -> None:
    """Drop the ``ORDER BY`` of every aggregate of ``tree`` (``sum(x ORDER BY k)``): the dialects outside
    :data:`ORDERED_DIALECTS` (Snowflake, BigQuery, ...) have no ordered aggregates; there the last digits of a
    float sum may depend on the order in which the engine adds the rows."""
    from sqlglot import exp

    for agg in list(tree.find_all(exp.AggFunc)):
        if isinstance(agg.this, exp.Order):
            agg.set("this", agg.this.this)


def _fix_spark(tree):
    from sqlglot import exp

    def decimal_to_double(node):
        if isinstance(node, exp.Literal) and node.is_number and any(ch in node.this for ch in ".eE"):
            return exp.cast(node, exp.DataType.build("DOUBLE"))
        return node

    tree = tree.transform(decimal_to_double)
    _ordered_folds(tree)
    _spark_hints(tree)
    with_ = tree.args.get("with_")
    if with_ is not None and with_.args.get("recursive"):
        for cte in with_.expressions:
            reads_itself = any(t.name == cte.alias and not t.db for t in cte.this.find_all(exp.Table))
            if isinstance(cte.this, exp.Union) and reads_itself:
                cte.this.set("distinct", False)
    return tree


def _dead_branches_pruned(tree):
    """Remove from ``tree`` the branches of a ``UNION`` after its first whose ``WHERE`` a parameter made
    ``FALSE`` (no rows: the first branch, which names the columns, stays; of a ``UNION`` that removes
    duplicates, only where the branches before it remove them too), then the common table expressions no
    longer read. A query composes every query its text reads, also those read only in such a branch (the pair
    rows a Spark variant keeps for the Cesa-Bianchi tolerance, ``flat_labels`` of the fixed class universe):
    the printed SQL then needs no table the query does not read, and Spark no stage that it would not
    compute (its runner stores a common table expression read twice before Spark sees the query)."""
    from sqlglot import exp

    for union in list(tree.find_all(exp.Union)):
        if not isinstance(union.expression, exp.Select) or any(
                union.args.get(arg) for arg in ("order", "limit", "offset")):  # those apply to every branch
            continue
        if union.args.get("distinct") and not (isinstance(union.this, exp.Union) and union.this.args.get("distinct")):
            continue
        where = union.expression.args.get("where")
        if where is not None and isinstance(where.this, exp.Boolean) and not where.this.this:
            if union is tree:  # the query itself: its common table expressions go to its first branch
                tree = union.this.pop()
                tree.set("with_", union.args.get("with_"))
            else:
                union.replace(union.this)
    with_ = tree.args.get("with_")
    while with_ is not None and not with_.args.get("recursive"):
        unread = [cte for cte in with_.expressions
                  if not any(t.find_ancestor(exp.CTE) is not cte for t in _tables(tree, cte.alias))]
        if not unread:
            break
        for cte in unread:
            cte.pop()
        if not with_.expressions:
            tree.set("with_", None)
            break
    return tree


def _spark_hints(tree) -> None:
    """A ``/*+ HINT(...) */`` comment closing a ``SELECT`` list (``SELECT a, b /*+ BROADCAST(m) */ FROM ...``,
    where sqlglot keeps a comment through the DuckDB parse and the composition of stages; DuckDB's parser reads
    it as a plain comment) becomes that ``SELECT``'s Spark hint, for a Spark variant of a query."""
    import sqlglot
    from sqlglot import exp

    for select in tree.find_all(exp.Select):
        for node in (select, *select.expressions):
            hints = [c for c in node.comments or () if c.strip().startswith("+")]
            if hints:
                node.comments = [c for c in node.comments if c not in hints]
                text = ", ".join(c.strip()[1:].strip() for c in hints)
                select.set("hint", sqlglot.parse_one(f"SELECT /*+ {text} */ 1", read="spark").args["hint"])


# A mean's values are added exactly on Spark as DECIMAL(38, 18) (20 digits before the point, 18 after): an
# exact sum does not depend on the order of its terms, so no sort is needed. Beyond this bound (the sum of the
# values' magnitudes), or with a NaN or an infinite value, the sum is Spark's DOUBLE sum instead.
EXACT_SUM_BOUND = 1e19


def _ordered_folds(tree) -> None:
    """Replace in ``tree`` every ``sum``/``avg`` of ``x ORDER BY k...`` (an ordered aggregate, which Spark does
    not have) by its :func:`_ordered_fold`: an exact sum gives the same digits in any order, so the keys are
    not needed."""
    from sqlglot import exp

    for agg in list(tree.find_all(exp.Sum, exp.Avg)):
        if isinstance(agg.this, exp.Order):
            agg.replace(_ordered_fold(agg.this.this, isinstance(agg, exp.Avg)))


def _ordered_fold(value, mean: bool):
    """Spark's ``sum`` (``mean``: ``avg``) of ``value`` over the group's rows with the same digits however Spark
    partitions and orders them: each value cast to ``DOUBLE`` is rounded to ``DECIMAL(38, 18)`` (18 digits
    after the point, at most 5e-19 from the double) and the decimals are added exactly by Spark's
    code-generated ``sum``, the exact sum rounded once to a ``DOUBLE`` (a mean: divided by the count of
    values). DuckDB adds the doubles in key order (``sum(x ORDER BY k)``), each addition rounded: the two agree
    to the rounding of the doubles' sum (relative 1e-16 times the number of values), not always to the last
    bit. NULL values are left out as the aggregates do; no value gives NULL.

    The decimal holds 20 digits before the point: when the magnitudes of the values add up to
    :data:`EXACT_SUM_BOUND` (1e19) or more, or a value is NaN or infinite, the result is Spark's ``DOUBLE``
    ``sum`` (whose last digits may then depend on the partitioning; NaN and infinities as in DuckDB) rather
    than an overflow. Each value is cast only when its magnitude is below the bound, and ``try_sum`` adds
    them, so that neither raises nor returns NULL in the branch not taken (with or without ANSI mode).
    ``value`` is a sqlglot expression, put into a template parsed once (a stage has dozens of means)."""
    from sqlglot import exp

    def put(node):
        return value.copy() if isinstance(node, exp.Column) and node.name == _FOLDED else node

    return _fold_template(mean).transform(put)


_FOLDED = "hiersql_folded_value"  # the column of _fold_template that stands for the value


@cache
def _fold_template(mean: bool):
    """The expression of :func:`_ordered_fold` for the value :data:`_FOLDED` (copy it before changing it)."""
    import sqlglot

    v = f"CAST({_FOLDED} AS DOUBLE)"
    exact = (f"CAST(try_sum(CAST(CASE WHEN abs({v}) < {EXACT_SUM_BOUND!r} THEN {v} END AS DECIMAL(38, 18)))"
             " AS DOUBLE)")
    total = f"CASE WHEN sum(abs({v})) < {EXACT_SUM_BOUND!r} THEN {exact} ELSE sum({v}) END"
    return sqlglot.parse_one(f"({total}) / nullif(count({v}), 0)" if mean else total, read="spark")


_FIXES = {"spark": _fix_spark, "spark2": _fix_spark, "databricks": _fix_spark}
ORDERED_DIALECTS = ("duckdb", "postgres", *_FIXES)  # a mean's values added in unit order (Spark: exactly)
_VARIANTS = {"spark": "spark", "spark2": "spark", "databricks": "spark"}  # -- name: NAME (spark) (sqlfiles)


# ---------------------------------------------------------------------------------------------- engines
class Engine:
    """Where the measures run: one runner of :class:`~hiersql.plan.FamilyPlan` per engine.

    A plan's :class:`~hiersql.plan.Sql` stages are materialised in the engine as tables of their query's
    name (the queries of the file they read and that are not stages yet are composed in, as common table
    expressions); its :class:`~hiersql.plan.Python` steps read their input tables as Arrow into a DuckDB
    connection, solve, and the tables they write are copied back (DuckDB: the step runs on the engine's own
    connection); the summary is the SQL generated from the plan's measures (:func:`hiersql.plan.summary_sql`).
    Subclasses implement :meth:`execute`, :meth:`arrow`, :meth:`write` and :meth:`_materialize`.

    Parameters
    ----------
    tables:
        Renames of the hiersql tables, ``{"truth": "warehouse.gold_labels", ...}``.
    """

    dialect = "duckdb"
    weighted = False  # the summaries weigh each instance by the table sample_weights(instance_id, weight)
    # a plan of SQL stages only: compose its stages into the queries that read them instead of materialising
    # them (fewer statements for small inputs: the one-shot calls, hiersql.oneshot)
    compose_stages = False

    def __init__(self, tables: Mapping[str, str] | None = None) -> None:
        self.tables: dict[str, str] = {}
        self.use_tables(**dict(tables or {}))
        self._taxonomy: Taxonomy | None = None

    # -- to implement
    def execute(self, sql: str) -> list[tuple]:
        """Run one statement; its rows as tuples (an empty list for DDL)."""
        raise NotImplementedError

    def arrow(self, sql: str) -> pa.Table:
        """The rows of a query as an Arrow table."""
        raise NotImplementedError

    def write(self, name: str, data: pa.Table) -> None:
        """Create (or replace) table ``name`` holding the rows of the Arrow table ``data``."""
        raise NotImplementedError

    def _materialize(self, name: str, sql: str) -> None:
        """Create (or replace) table ``name`` as the result of query ``sql``."""
        raise NotImplementedError

    def _materialize_tree(self, name: str, tree: Any) -> None:
        """:meth:`_materialize` of the sqlglot ``tree`` of a query (rendered by :func:`_tree`)."""
        self._materialize(name, tree.sql(dialect=self.dialect))

    # -- tables
    def use_tables(self, **renames: str) -> None:
        """Read the hiersql table ``key`` from the engine's table ``value`` (``truth="dw.gold_labels"``)."""
        unknown = set(renames) - set(STORE_TABLES)
        if unknown:
            raise ValueError(f"unknown table(s) {sorted(unknown)} (known: {', '.join(STORE_TABLES)})")
        self.tables.update({k: sqlfiles.table_name(v, f"table {k}") for k, v in renames.items() if v})

    def table(self, name: str) -> str:
        """The engine-side name of hiersql table ``name``."""
        return self.tables.get(name, name)

    def copy_store(self, store: Store, tables: Iterable[str] = STORE_TABLES) -> None:
        """Copy the store's ``tables`` into the engine, under the names of :meth:`table`; the store's
        taxonomy comes along for the families that check it (:meth:`taxonomy`)."""
        for name in tables:
            self.write(self.table(name), store.con.table(name).to_arrow_table())
        self._taxonomy = store.taxonomy

    def build_closure(self, max_depth: int | None = None) -> None:
        """Compute ``closure`` inside the engine from its ``edges`` and ``nodes`` (``sql/closure.sql``), up to
        ``max_depth`` edges when given."""
        self._materialize(self.table("closure"), self.render("closure", params={"max_depth": max_depth}))

    def taxonomy(self) -> Taxonomy:
        """The taxonomy of the engine's ``edges`` table (the store's, when copied from one)."""
        if self._taxonomy is None:
            from .taxonomy import Taxonomy

            edges = self.arrow(f"SELECT parent, child, weight FROM {_quoted(self.table('edges'), self.dialect)}")
            weighted = edges.column("weight").null_count < len(edges)
            self._taxonomy = Taxonomy.from_dataframe(edges.to_pandas(), weight="weight" if weighted else None)
        return self._taxonomy

    # -- queries
    def render(self, file: str, name: str | None = None, params: Mapping[str, object] | None = None) -> str:
        """Query ``name`` of ``sql/<file>.sql`` in this engine's dialect, over this engine's tables."""
        return render(file, name, params, self.dialect, self.tables, pretty=False)

    def run(self, file: str, name: str | None = None, params: Mapping[str, object] | None = None) -> list[tuple]:
        """Rows of query ``name`` of ``sql/<file>.sql``."""
        return self.execute(self.render(file, name, params))

    def stage(self, file: str, query: str, params: Mapping[str, object], done: set[str],
              text: str | None = None) -> None:
        """Materialise query ``query`` of ``sql/<file>.sql`` (or the query ``text`` reading that file's
        queries) as table ``query``; the queries it reads that are not in ``done`` (tables already made) are
        composed in. Adds ``query`` to ``done``."""
        self._materialize_tree(query, _tree(file, query, params, self.dialect, self.tables, skip=done, text=text))
        done.add(query)

    def result(self, file: str, query: str, params: Mapping[str, object], done: set[str],
               text: str | None = None) -> list[tuple]:
        """The rows of query ``query`` of ``sql/<file>.sql`` (or of ``text``), made as :meth:`stage` makes
        it: a plan's last query, whose rows the runner returns."""
        self.stage(file, query, params, done, text)
        return self.execute(f"SELECT * FROM {query}")

    # -- plans
    def run_plans(self, runs: Sequence[tuple[FamilyPlan, Sequence[str]]], options: Options,
                  on_plan: Callable[[FamilyPlan], None] | None = None) -> list[list[Row]]:
        """The summary rows of each ``(plan, metrics)`` of ``runs`` (:meth:`run_plan`), in their order;
        ``on_plan(plan)`` is called as each plan begins. Here one plan after the other."""
        out = []
        for plan, metrics in runs:
            if on_plan is not None:
                on_plan(plan)
            out.append(self.run_plan(plan, metrics, options))
        return out

    def run_plan(self, plan: FamilyPlan, metrics: Sequence[str], options: Options) -> list[Row]:
        """The summary rows of ``metrics`` (of ``plan``'s family) with ``options.average``."""
        plan.check(self, metrics, options)
        rows: list[Row] = []
        for group, group_options in plan.groups(metrics, options):
            params = self.prepare(plan, group, group_options)
            done = self._steps(plan, plan.steps, params, group_options)
            if plan.summary is not None:
                summary = self.result(plan.file, plan.summary, params, done)
            else:
                summary = self.result(plan.file, f"{plan.name}_summary", params, done,
                                      text=summary_sql(plan, group, options.average, True, self.weighted,
                                                       options.labels is not None))
            group_rows = summary_rows(summary, metrics, options)
            if plan.average_of is not None:
                group_rows = [row._replace(average=plan.average_of(group_options)) for row in group_rows]
            rows += group_rows
        order = {m: i for i, m in enumerate(plan.metrics)}
        runs = {} if plan.average_of is None else {plan.average_of(group): i for i, (_, group)
                                                    in enumerate(plan.groups(metrics, options))}  # @1 before @10
        return sorted(rows, key=lambda r: (r.system, order.get(r.metric, len(order)), r.metric,
                                           runs.get(r.average, 0), r.average))

    def run_queries(self, plan: FamilyPlan, metrics: Sequence[str], options: Options,
                    queries: Mapping[str, str]) -> dict[str, list[tuple]]:
        """The plan's checks and steps for ``metrics``, then the generated queries ``{table name: SQL reading
        the plan's stages}`` (a summary, per-class values, ...), each materialised as its table: their rows.
        ``metrics`` must fall in one group of :attr:`~hiersql.plan.FamilyPlan.groups` (one metric does)."""
        plan.check(self, metrics, options)
        out: dict[str, list[tuple]] = {}
        for group, group_options in plan.groups(metrics, options):
            params = self.prepare(plan, group, group_options)
            done = self._steps(plan, plan.steps, params, group_options)
            for name, text in queries.items():
                out[name] = self.result(plan.file, name, params, done, text=text)
        return out

    def per_instance(self, plan: FamilyPlan, options: Options) -> pa.Table:
        """The plan's per-instance table as Arrow, ordered by its key; the columns of measures computed in a
        run of their own (:attr:`~hiersql.plan.FamilyPlan.groups`) come from that run."""
        stage = plan.instance
        key = plan.unit_order.get(stage, "system, instance_id")
        out = None
        for group, group_options in plan.groups(list(plan.metrics), options):
            params = self.prepare(plan, group, group_options)
            done = self._steps(plan, plan.steps_until(stage), params, group_options)
            self.stage(plan.file, f"{stage}_values", params, done, text=instance_values_sql(plan))
            table = self.arrow(f"SELECT * FROM {stage}_values ORDER BY {key}")
            if out is None:
                out = table
            else:  # the same rows in the same order
                for metric in group:
                    out = out.set_column(out.schema.get_field_index(metric), metric, table.column(metric))
        return out

    def prepare(self, plan: FamilyPlan, metrics: Sequence[str], options: Options) -> dict[str, object]:
        """The plan's checks (they raise :class:`~hiersql.errors.InputError`) and its ``$parameters``; helper
        tables written into the engine."""
        params = {"zero_division": float(options.zero_division), **plan.params(options, self, list(metrics))}
        for name, data in plan.tables(options).items():
            self.write(name, data)
        return params

    def _steps(self, plan: FamilyPlan, steps: Sequence[Step], params: dict[str, object], options: Options
               ) -> set[str]:
        done: set[str] = set(plan.tables(options))
        compose = self.compose_stages and not any(isinstance(step, Python) for step in plan.steps)
        for step in steps:
            if isinstance(step, Sql):
                if not compose:
                    self.stage(plan.file, step.query, params, done)
            elif step.when(options):
                self.solve(step, params, options)
                done.update(step.writes)
        return done

    def solve(self, step: Python, params: dict[str, object], options: Options) -> None:
        """Run a Python step on a scratch DuckDB connection holding Arrow copies of the tables it reads, and
        write the tables it makes back into the engine."""
        tables = {name: self._input(name) for name in step.reads}
        for name, data in solve_arrow(step, params, options, tables).items():
            self.write(name, data)

    def _source(self, name: str) -> str:
        """The engine-side table a step's input ``name`` is read from."""
        return self.table(name) if name in STORE_TABLES else name

    def _input(self, name: str) -> pa.Table:
        """The rows of a step's input ``name`` as Arrow."""
        return self.arrow(f"SELECT * FROM {_quoted(self._source(name), self.dialect)}")


def solve_arrow(step: Python, params: dict[str, object], options: Options, tables: Mapping[str, pa.Table]
                ) -> dict[str, pa.Table]:
    """The tables ``step`` writes, as Arrow, solved on a scratch DuckDB connection holding ``tables`` (its
    inputs, as Arrow)."""
    import duckdb

    con = duckdb.connect()
    try:
        for name, data in tables.items():
            con.register(f"_{name}_arrow", data)
            con.execute(f"CREATE TABLE {name} AS SELECT * FROM _{name}_arrow")
            con.unregister(f"_{name}_arrow")
        step.solve(con, params, options)
        return {name: con.table(name).to_arrow_table() for name in step.writes}
    finally:
        con.close()


def summary_rows(summary: Iterable[tuple], metrics: Sequence[str], options: Options) -> list[Row]:
    """The rows (:class:`~hiersql.plan.Row`) of a summary query's rows ``(system, metric, average, value)``
    that ``metrics`` and ``options.average`` ask for (the plain average ``""`` always); a NULL value is NaN."""
    wanted, averages = set(metrics), set(options.average) | {""}
    return [Row(str(s), str(m), a or "", float("nan") if v is None else float(v)) for s, m, a, v in summary
            if m in wanted and (a or "") in averages]


class DuckDBEngine(Engine):
    """DuckDB: a :class:`~hiersql.store.Store`, a DuckDB connection, or a DuckDB file.

    The store's own tables are read in place; stages are temporary tables of the connection, the DuckDB
    variants of queries (``-- name: NAME (duckdb)``) replace the portable ones, parameters are bound natively,
    and Python steps run on the connection itself.
    """

    dialect = "duckdb"

    def __init__(self, target: Store | duckdb.DuckDBPyConnection | str | None = None,
                 tables: Mapping[str, str] | None = None) -> None:
        import duckdb

        super().__init__(tables)
        if target is None or isinstance(target, str):
            self.con = duckdb.connect(target or ":memory:")
        else:
            self.con = getattr(target, "con", target)
            self._taxonomy = getattr(target, "taxonomy", None)

    def execute(self, sql: str) -> list[tuple]:
        cur = self.con.execute(sql)
        return cur.fetchall() if cur.description else []

    def arrow(self, sql: str) -> pa.Table:
        return self.con.sql(sql).to_arrow_table()

    def write(self, name: str, data: pa.Table) -> None:
        self.con.register("_hiersql_write", data)
        try:
            self.con.execute(f"CREATE OR REPLACE TEMP TABLE {_quoted(name, 'duckdb')} AS SELECT * FROM _hiersql_write")
        finally:
            self.con.unregister("_hiersql_write")

    def _materialize(self, name: str, sql: str) -> None:
        temporary = "" if "." in name else "TEMP "
        self.con.execute(f"CREATE OR REPLACE {temporary}TABLE {_quoted(name, 'duckdb')} AS {sql}")

    def stage(self, file: str, query: str, params: Mapping[str, object], done: set[str],
              text: str | None = None) -> None:
        if self.tables:  # renamed tables: the portable queries, rewritten by sqlglot
            super().stage(file, query, params, done, text)
            return
        sql = sqlfiles.composed(file, query, "duckdb", done, text)
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE {query} AS {sql}", sqlfiles.bind(sql, dict(params)))
        done.add(query)

    def solve(self, step: Python, params: dict[str, object], options: Options) -> None:
        step.solve(self.con, params, options)

class PostgresEngine(Engine):
    """PostgreSQL through psycopg 3. Stages, helper tables and uploaded inputs are temporary tables of the
    session (gone when it ends); a qualified name (``schema.table``) is a real table.

    Parameters
    ----------
    dsn:
        A libpq connection string (``"host=... dbname=..."`` or ``postgresql://...``), or an open
        ``psycopg.Connection``.
    tables:
        Renames of the hiersql tables (see :class:`Engine`).
    """

    dialect = "postgres"

    def __init__(self, dsn: Any, tables: Mapping[str, str] | None = None) -> None:
        import psycopg

        super().__init__(tables)
        self.conn = psycopg.connect(dsn, autocommit=True) if isinstance(dsn, str) else dsn

    def execute(self, sql: str) -> list[tuple]:
        with self.conn.cursor() as cur:
            cur.execute(sql)
            return cur.fetchall() if cur.description else []

    def arrow(self, sql: str) -> pa.Table:
        import pyarrow as pa

        with self.conn.cursor() as cur:
            cur.execute(sql)
            columns = [(c.name, c.type_code) for c in cur.description]
            rows = cur.fetchall()
        out = {}
        for i, (name, oid) in enumerate(columns):
            values = [r[i] for r in rows]
            if oid == 1700:  # numeric (sums, averages): as DuckDB's doubles
                values = [None if v is None else float(v) for v in values]
            out[name] = pa.array(values, type=_pg_arrow_type(oid))
        return pa.table(out)

    def write(self, name: str, data: pa.Table) -> None:
        import duckdb

        target = _quoted(name, self.dialect)
        rel = duckdb.connect().from_arrow(data)
        cols = ", ".join(_quoted(c, self.dialect) for c in data.column_names)
        with self.conn.transaction(), self.conn.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS {self._own(name)}")
            cur.execute(_create_table(name, rel, self.dialect, temporary="." not in name))
            with cur.copy(f"COPY {target} ({cols}) FROM STDIN") as copy:
                for row in rel.fetchall():
                    copy.write_row(row)
            cur.execute(f"ANALYZE {target}")  # row counts for the planner: without them its guesses are huge

    def _materialize(self, name: str, sql: str) -> None:
        target = _quoted(name, self.dialect)
        temporary = "" if "." in name else "TEMPORARY "
        with self.conn.transaction(), self.conn.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS {self._own(name)}")
            cur.execute(f"CREATE {temporary}TABLE {target} AS {sql}")
            cur.execute(f"ANALYZE {target}")

    def _own(self, name: str) -> str:
        """Table ``name`` as this engine replaces it: a plain name is its temporary table, ``pg_temp.name``
        (unqualified, ``DROP TABLE`` would find a table of the user's of that name on the search path, a
        ``public.truth``, and drop it); a qualified name is that table."""
        return _quoted(name if "." in name else f"pg_temp.{name}", self.dialect)

    def close(self) -> None:
        self.conn.close()


def _pg_arrow_type(oid: int):
    import pyarrow as pa

    return {16: pa.bool_(), 20: pa.int64(), 21: pa.int32(), 23: pa.int32(), 700: pa.float64(),
            701: pa.float64(), 1700: pa.float64(), 25: pa.string(), 1043: pa.string()}.get(oid)


# a partitioned step's keyed inputs from which it is solved per partition (Spark on a cluster); below, the driver
# reads the stored inputs' files and solves them in less time than the Python workers take to start and receive
# the shuffled rows (GermEval B's pairings, 1.1 M keyed rows: about 4x less)
PARTITION_ROWS = 4_000_000


class SparkEngine(Engine):
    """Spark SQL through a ``pyspark.sql.SparkSession`` (local or a cluster).

    A plain table name becomes a temporary view of the stage's rows stored once (:meth:`_register`); a
    qualified one (``db.table``) a managed table. Every stage, and every query a stage reads, is such a view:
    Spark inlines a common table expression at every reference (the set-based stage alone would recompute its
    pipeline about ten times), and without cutting the lineage each stage's plan would hold the plans of all
    stages before it (the LCA stages' analysis then grows until the driver runs out of memory); so is a common
    table expression or a view that one stage would compute twice (:meth:`_computed_once`). Means add their
    values in unit order (:func:`render`'s fold of the sorted values), as on the other engines.

    The rows are stored as Parquet files in :attr:`stage_dir` when there is one: Spark then knows a stage's
    real size (the files'), and joins a small stage by broadcasting it instead of shuffling and sorting both
    sides. A local checkpoint would cut the lineage too, but it keeps the size estimate of the plan it cut
    (products of join sizes, far above any broadcast threshold). The directory is setting
    ``hiersql.stageDir`` of the session (:data:`STAGE_DIR`) when given, a directory every executor reads at
    the same path (a shared mount); else, on a ``local`` master, a temporary directory of the driver; else
    there is none, and stages are local checkpoints. :meth:`close` removes it (so does the end of the
    process).

    Parameters
    ----------
    spark:
        The ``SparkSession``.
    tables:
        Renames of the hiersql tables (see :class:`Engine`).
    partition_rows:
        Python steps that declare ``partition_by`` are solved per partition in the executors when their keyed
        inputs hold at least this many rows (:meth:`solve`); ``0``: always; ``None``: never; ``"auto"``
        (default): :data:`PARTITION_ROWS` on a cluster, never on a ``local`` master, whose Python workers
        share the driver's cores (the shuffle of the tagged rows and the workers' start made the 450k DAG's
        pairings 4-6 times slower than on the driver: benchmarks/RESULTS.md).
    """

    dialect = "spark"

    def __init__(self, spark: Any, tables: Mapping[str, str] | None = None,
                 partition_rows: int | Literal["auto"] | None = "auto") -> None:
        super().__init__(tables)
        self.spark = spark
        self.partition_rows = (None if spark.sparkContext.master.startswith("local") else PARTITION_ROWS
                               ) if partition_rows == "auto" else partition_rows
        self.plans_at_once = _plans_at_once(spark)
        self._read_once: set[str] = set()
        self._views: dict[str, Counter[str]] = {}  # plain views: the views each reads (with how often)
        self._files: dict[str, tuple[Path, pa.Schema]] = {}  # views that are the Parquet files of a folder
        self.partitions_solved: dict[str, int] = {}  # step name: partitions it was solved in (last run)
        self._node_closure = False  # whether node_closure is there (copied, or computed from closure and nodes)
        self.stage_dir = _stage_dir(spark)
        self._stored = itertools.count(1)  # numbers the folders of stage_dir (shared with the forks)
        self._cleanup = None if self.stage_dir is None else weakref.finalize(
            self, shutil.rmtree, self.stage_dir, ignore_errors=True)

    def close(self) -> None:
        """Remove :attr:`stage_dir` and the stages stored there (the session stays open: it may be shared)."""
        if self._cleanup is not None:
            self._cleanup()

    # The Spark variants of the set-based, pair-based and LCA queries read the closure on node positions,
    # node_closure (sql/schema.sql): the store's copy, or computed once from the engine's closure and nodes.
    def _bound(self, names: Iterable[str]) -> None:
        """Hiersql tables ``names`` were given new rows: ``node_closure`` is there if it was among them, and is
        to be computed again if ``closure`` or ``nodes`` was without it."""
        names = set(names)
        if "node_closure" in names or names & {"closure", "nodes"}:
            self._node_closure = "node_closure" in names

    def use_tables(self, **renames: str) -> None:
        super().use_tables(**renames)
        self._bound(renames)

    def copy_store(self, store: Store, tables: Iterable[str] = STORE_TABLES) -> None:
        """As :meth:`Engine.copy_store`; with ``closure``, the store's ``node_closure`` too."""
        tables = list(tables)
        if "closure" in tables:
            tables.append("node_closure")
        super().copy_store(store, tables)
        self._bound(tables)

    def build_closure(self, max_depth: int | None = None) -> None:
        super().build_closure(max_depth)
        self._bound({"closure"})

    def execute(self, sql: str) -> list[tuple]:
        return [tuple(row) for row in self.spark.sql(sql).collect()]

    def arrow(self, sql: str) -> pa.Table:
        frame = self.spark.sql(sql)
        if hasattr(frame, "toArrow"):  # Spark 4
            return frame.toArrow()
        import pyarrow as pa

        return pa.Table.from_pandas(frame.toPandas(), preserve_index=False)

    def write(self, name: str, data: pa.Table) -> None:
        """With a :attr:`stage_dir` and a plain ``name``, as a Parquet file there that Spark reads (no Spark
        job; faster than the Arrow upload at every size measured); else through Arrow:
        the rows stay in the JVM (a list of rows would need Python workers to decode)."""
        if self.stage_dir is not None and "." not in name:
            import pyarrow.parquet as pq

            folder = self._stage_path(name)
            folder.mkdir()
            pq.write_table(data, folder / "part-0.parquet")
            self._view_of_files(name, folder, data.schema)
            return
        self._register(name, self.spark.createDataFrame(data if len(data) else data.to_pandas(),
                                                        schema=None if len(data) else _spark_schema(data)))

    def _materialize(self, name: str, sql: str) -> None:
        import sqlglot

        self._materialize_tree(name, sqlglot.parse_one(sql, read=self.dialect))

    def _materialize_tree(self, name: str, tree: Any) -> None:  # the tree itself: a stage is not parsed again
        stored = self._stored_whole(tree)
        if stored is not None:  # the rows of a stored table as they are: its files under a second name
            self._view_of_files(name, *stored)
            return
        sql, reads = self._computed_once(name, tree)
        frame = self.spark.sql(sql)
        if name in self._read_once:  # a plain view: no Spark job, the one reader computes it within its own
            frame.createOrReplaceTempView(name)
            self._views[name] = reads
            self._files.pop(name, None)
        else:
            self._register(name, frame)

    def _stored_whole(self, tree: Any) -> tuple[Path, pa.Schema] | None:
        """The folder and schema of the table stored as Parquet files that query ``tree`` selects whole (each
        of its columns, in order, every row: ``lca_closure`` of ``node_closure``, ``pair_flow_arcs`` of
        ``pair_arcs`` when the flows are solved), else ``None``."""
        from sqlglot import exp

        if not isinstance(tree, exp.Select) or {key for key, value in tree.args.items() if value} != {
                "expressions", "from_"}:
            return None
        source = tree.args["from_"].this
        stored = self._files.get(source.name) if isinstance(source, exp.Table) and not source.db else None
        if stored is None or [c.name if isinstance(c, exp.Column) else None for c in tree.expressions] != list(
                stored[1].names):
            return None
        return stored

    def _computed_once(self, name: str, tree: Any) -> tuple[str, Counter[str]]:
        """Query ``tree`` (of stage ``name``; changed) as SQL rewritten so that Spark computes each of its parts
        once, and the plain views it reads (with how often). Spark inlines a common table expression or a view at every
        reference (``sides`` of ``lca_labels`` would run six times): a common table expression read twice or
        more becomes a stored stage of its own (``<name>__<cte>``), and so does a plain view that the
        query would compute twice or more (counting the views that views read; stored one at a time, so that
        the views read only through a stored one are not stored too)."""
        from sqlglot import exp

        parts: list[tuple[str, exp.Expression]] = []
        with_ = tree.args.get("with_")
        if with_ is not None and not with_.args.get("recursive"):
            for cte in list(with_.expressions):
                if _references(tree, cte.alias) < 2:
                    continue
                body = cte.this.copy()
                earlier = [c.copy() for c in with_.expressions[:with_.expressions.index(cte)]]
                if earlier:  # those it does not read are left out by Spark
                    body.set("with_", exp.With(expressions=earlier))
                part = f"{name}__{cte.alias}"
                for table in _tables(tree, cte.alias):
                    table.set("this", exp.to_identifier(part))
                    if not table.alias:
                        table.set("alias", exp.TableAlias(this=exp.to_identifier(cte.alias)))
                cte.pop()
                parts.append((part, body))
            if not with_.expressions:
                tree.set("with_", None)
        while True:
            reads = sum((self._view_reads(query) for query in [*(q for _, q in parts), tree]), Counter())
            twice = next((view for view, times in reads.items() if times > 1), None)
            if twice is None:
                break
            self._register(twice, self.spark.table(twice))
        for part, query in parts:
            self._register(part, self.spark.sql(query.sql(dialect=self.dialect)))
        return tree.sql(dialect=self.dialect), self._view_reads(tree)

    def _view_reads(self, tree: Any) -> Counter[str]:
        """How often the plain views are computed by query ``tree`` (the views read by a view included)."""
        from sqlglot import exp

        out: Counter[str] = Counter()
        for table in tree.find_all(exp.Table):
            if not table.db and table.name in self._views:
                out[table.name] += 1
                for view, times in self._views[table.name].items():
                    out[view] += times
        return out

    def _steps(self, plan: FamilyPlan, steps: Sequence[Step], params: dict[str, object], options: Options
               ) -> set[str]:
        kept = {plan.instance, *(m.unit for m in plan.measures if m.unit)}
        kept |= {name for step in steps if isinstance(step, Python) for name in step.reads}
        # read once in the file, or once among the queries these steps run (a query of the file that none of
        # them reads, such as lca_extended_names, does not make a stage read twice)
        run = {step.query for step in steps if isinstance(step, Sql)}
        run |= {dep for query in run for dep in sqlfiles.dependencies(plan.file, query, "spark", params=params)}
        self._read_once = {q for q, by in sqlfiles.readers(plan.file, "spark").items()
                           if (len(by) == 1 or len(by & run) == 1) and q not in kept}
        try:
            return super()._steps(plan, steps, params, options)
        finally:
            self._read_once = set()

    def run_plans(self, runs: Sequence[tuple[FamilyPlan, Sequence[str]]], options: Options,
                  on_plan: Callable[[FamilyPlan], None] | None = None) -> list[list[Row]]:
        """As :meth:`Engine.run_plans`, :attr:`plans_at_once` plans at a time, each on a fork of this engine
        (its own stages, the same session and tables) in a thread of its own that inherits the session's local
        properties (job group, scheduler pool). The rows, and an error (the first plan's in ``runs`` order),
        do not depend on which plan ends first; on an interrupt the plans' jobs are cancelled (each job the
        threads start is, until they end) before it is raised again."""
        if len(runs) < 2 or self.plans_at_once < 2:
            return super().run_plans(runs, options, on_plan)
        from concurrent.futures import ThreadPoolExecutor, wait

        from pyspark.util import inheritable_thread_target

        self._node_closure_for(*(body for plan, _ in runs for body in sqlfiles.queries(plan.file, self.dialect)
                                 .values()))  # made once here, not by two forks at once
        context, tag = self.spark.sparkContext, f"hiersql-plans-{id(runs)}"

        @inheritable_thread_target(self.spark)
        def run(plan: FamilyPlan, metrics: Sequence[str]) -> list[Row]:
            context.addJobTag(tag)
            if on_plan is not None:
                on_plan(plan)
            return self._fork().run_plan(plan, metrics, options)

        pool = ThreadPoolExecutor(self.plans_at_once, thread_name_prefix="hiersql-plan")
        try:
            futures = [pool.submit(run, plan, metrics) for plan, metrics in runs]
            wait(futures)
        except BaseException:  # an interrupt: the plans' jobs are cancelled until their threads end
            pool.shutdown(wait=False, cancel_futures=True)
            while True:
                context.cancelJobsWithTag(tag)
                if not wait(futures, timeout=0.2).not_done:
                    break
            raise
        pool.shutdown()
        return [future.result() for future in futures]

    def _fork(self) -> SparkEngine:
        """An engine on the same session, tables, stage folder and :attr:`partitions_solved`, with stages of its
        own to make."""
        import copy

        fork = copy.copy(self)
        fork._views, fork._files, fork._read_once = dict(self._views), dict(self._files), set()
        fork._cleanup = None  # the folder stays this engine's to remove
        return fork

    def _node_closure_for(self, *bodies: str) -> None:
        """Make ``node_closure`` if it is not there and any of the queries ``bodies`` names it. Any mention
        counts, also one in a branch a parameter switched off (which sqlfiles.dependencies skips): the rendered
        query keeps its first branch, and with it the tables that branch reads."""
        if not self._node_closure and any(re.search(r"\bnode_closure\b", sqlfiles.without_comments(body))
                                          for body in bodies):
            self._materialize_tree("node_closure", _tree(  # closure: the engine's table, not the file's walk
                "closure", "node_closure_from_names", {}, self.dialect, self.tables, skip=frozenset({"closure"})))
            self._node_closure = True

    def stage(self, file: str, query: str, params: Mapping[str, object], done: set[str],
              text: str | None = None) -> None:
        deps = [dep for dep in sqlfiles.dependencies(file, query, "spark", text=text, params=params)
                if dep not in done]
        bodies = sqlfiles.queries(file, self.dialect)
        self._node_closure_for(*(bodies[dep] for dep in deps), bodies[query] if text is None else text)
        for dep in deps:
            super().stage(file, dep, params, done)
        super().stage(file, query, params, done, text)

    def result(self, file: str, query: str, params: Mapping[str, object], done: set[str],
               text: str | None = None) -> list[tuple]:
        """The rows of a plan's last query, collected from its plain view: nothing reads it but the runner,
        so storing it first would cost a write and a read-back job for rows collected once."""
        self._read_once = {query}
        try:
            self.stage(file, query, params, done, text)
        finally:
            self._read_once = set()
        return self.execute(f"SELECT * FROM {query}")

    def use_frame(self, name: str, frame: Any, computed: bool = False) -> None:
        """Make the Spark DataFrame ``frame`` hiersql table ``name`` (under :meth:`table`), computed once as
        :meth:`write` does for Arrow data, or as it is when ``computed`` (a selection of a local checkpoint):
        the inputs Spark read itself (:mod:`hiersql.spark_sources`)."""
        self._bound({name})
        if computed and "." not in self.table(name):
            frame.createOrReplaceTempView(self.table(name))
            self._files.pop(self.table(name), None)
        else:
            self._register(self.table(name), frame)

    def solve(self, step: Python, params: dict[str, object], options: Options) -> None:
        """A step that declares ``partition_by`` runs in the executors, once per partition of its keyed inputs
        (``mapInArrow``): each keyed table is hashed on its key columns into ``spark.sql.shuffle.partitions``
        partitions, the rows of one key value of every keyed table meet in one partition, the other inputs
        come whole to every partition (collected once through Arrow), and each partition's tables are solved
        on a DuckDB connection of the Python worker (:func:`solve_arrow`); the data warnings the partitions
        raise are raised again on the driver (in the order of their text). Other steps run on the driver, and
        so do partitioned ones whose keyed inputs hold fewer than ``partition_rows`` rows (``None``: every step
        on the driver; 0: every partitioned step per partition): on small inputs, starting Python workers and
        shuffling the tagged rows cost more than the solver."""
        if not step.partition_by or self.partition_rows is None or (
                self.partition_rows > 0 and self._rows(step.partition_by) < self.partition_rows):
            self.partitions_solved.pop(step.name, None)
            super().solve(step, params, options)
            return
        from functools import reduce

        from pyspark.sql import functions as F
        from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
        from pyspark.sql.types import IntegerType, StructField, StructType

        keyed = [name for name in step.reads if name in step.partition_by]
        frames = {name: self.spark.table(self._source(name)) for name in keyed}
        whole = {name: self._input(name) for name in step.reads if name not in step.partition_by}
        inputs = {name: to_arrow_schema(frames[name].schema) for name in keyed}
        # the step on no rows of its keyed tables: the schemas it writes (it warns of nothing there, so nothing
        # is silenced: warning filters are process-wide, and other plans may run side by side)
        outputs = {name: data.schema for name, data in solve_arrow(
            step, params, options, {**whole, **{n: s.empty_table() for n, s in inputs.items()}}).items()}
        tagged = [frames[name].select(
            F.hash(*(F.col(k.strip()).cast("string") for k in step.partition_by[name].split(","))).alias("_part"),
            F.lit(i).alias("_table"),
            *(F.struct(*(F.col(f"`{c}`") for c in frames[name].columns)).alias(f"t{j}") if j == i else
              F.lit(None).cast(frames[other].schema).alias(f"t{j}") for j, other in enumerate(keyed)),
        ) for i, name in enumerate(keyed)]
        partitions = int(self.spark.conf.get("spark.sql.shuffle.partitions"))
        solved = self.spark.sparkContext.accumulator(0)
        raised = self.spark.sparkContext.accumulator([], _Concatenated())
        schema = StructType([StructField("_table", IntegerType()), *(
            StructField(f"w{j}", from_arrow_schema(outputs[name])) for j, name in enumerate(step.writes))])
        result = reduce(lambda a, b: a.unionByName(b), tagged).repartition(partitions, "_part").mapInArrow(
            _partition_solver(step, params, options, keyed, inputs, whole, outputs, solved, raised), schema)
        if len(step.writes) > 1:
            result = result.localCheckpoint(eager=True)
        for j, name in enumerate(step.writes):
            self._register(name, result.where(F.col("_table") == j).select(f"w{j}.*"))
        self.partitions_solved[step.name] = solved.value
        for message in sorted(raised.value):
            warnings.warn(message, DataWarning, stacklevel=2)

    def _rows(self, tables: Iterable[str]) -> int:
        """The number of rows of ``tables`` together: from the footers of their Parquet files when all are
        stored so, else one Spark job."""
        folders = [self._files.get(self._source(t)) for t in tables]
        if all(folders):
            import pyarrow.dataset as ds

            return sum(ds.dataset(folder, format="parquet").count_rows() for folder, _ in folders)
        counts = " UNION ALL ".join(f"SELECT count(*) AS n FROM {_quoted(self._source(t), self.dialect)}"
                                    for t in tables)
        return int(self.execute(f"SELECT sum(n) FROM ({counts}) AS _counts")[0][0] or 0)

    def _input(self, name: str) -> pa.Table:
        """A stage stored as Parquet files is read from them by pyarrow on the driver, without a Spark job
        (and without Spark serving the rows to Python, which costs the JVM more than the job); other tables
        through :meth:`arrow`."""
        stored = self._files.get(self._source(name))
        if stored is None:
            return super()._input(name)
        import pyarrow.parquet as pq

        folder, schema = stored
        return pq.read_table(folder, schema=schema)

    def _register(self, name: str, frame: Any) -> None:
        self._views.pop(name, None)
        self._files.pop(name, None)
        if "." in name:
            frame.write.mode("overwrite").saveAsTable(name)
        elif self.stage_dir is None:  # computed once, its lineage cut: a later stage does not re-analyse it
            frame.localCheckpoint(eager=True).createOrReplaceTempView(name)
        else:  # the same, and Spark reads the files' size (a new folder: views made earlier may read the old)
            from pyspark.sql.pandas.types import to_arrow_schema

            folder = self._stage_path(name)
            frame.write.parquet(folder.as_uri())  # file:, not the cluster's default file system
            self._view_of_files(name, folder, to_arrow_schema(frame.schema))

    def _view_of_files(self, name: str, folder: Path, schema: pa.Schema) -> None:
        """Temporary view ``name`` of the Parquet files in ``folder``, read with their ``schema`` (Spark then
        runs no job to read the files' own), which :meth:`_input` reads without Spark."""
        from pyspark.sql.pandas.types import from_arrow_schema

        self._views.pop(name, None)
        self.spark.read.schema(from_arrow_schema(schema)).parquet(folder.as_uri()).createOrReplaceTempView(name)
        self._files[name] = folder, schema

    def _stage_path(self, name: str) -> Path:
        """A new folder (not made yet) of :attr:`stage_dir` for the rows of table ``name``."""
        return Path(self.stage_dir) / f"{next(self._stored)}-{name}"


class _Concatenated:
    """A Spark accumulator's parameter: lists, added by concatenation."""

    def zero(self, value: list) -> list:
        return []

    def addInPlace(self, value: list, other: list) -> list:  # noqa: N802  (the name Spark calls)
        return [*value, *other]


def _partition_solver(step: Python, params: dict[str, object], options: Options, keyed: Sequence[str],
                      inputs: Mapping[str, pa.Schema], whole: Mapping[str, pa.Table],
                      outputs: Mapping[str, pa.Schema], solved: Any, raised: Any
                      ) -> Callable[[Iterable[Any]], Iterable[Any]]:
    """The function ``mapInArrow`` runs on each partition of a step's tagged input (:meth:`SparkEngine.solve`):
    column ``_table`` says which keyed table a row belongs to (``keyed[_table]``), ``t<i>`` holds its row;
    it yields the tables the step writes, ``w<j>`` the rows of ``step.writes[j]``. ``solved`` (an
    accumulator) counts the partitions solved, ``raised`` (an accumulator of lists) collects the text of the
    data warnings they raise."""

    def run(batches: Iterable[Any]) -> Iterable[Any]:
        import pyarrow as pa
        import pyarrow.compute as pc

        rows: dict[str, list[pa.RecordBatch]] = {name: [] for name in keyed}
        for batch in batches:
            for i, name in enumerate(keyed):
                mine = batch.filter(pc.equal(batch.column("_table"), i))
                if mine.num_rows:
                    rows[name].append(pa.RecordBatch.from_struct_array(mine.column(f"t{i}")))
        if not any(rows.values()):
            return
        tables = {**whole, **{name: pa.Table.from_batches(rows[name], schema=inputs[name]) for name in keyed}}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", DataWarning)
            written = solve_arrow(step, params, options, tables)
        solved.add(1)
        raised.add([str(w.message) for w in caught if issubclass(w.category, DataWarning)])
        for j, name in enumerate(step.writes):
            for batch in written[name].cast(outputs[name]).to_batches():
                n = batch.num_rows
                yield pa.RecordBatch.from_arrays(
                    [pa.array([j] * n, pa.int32()),
                     *(batch.to_struct_array() if k == j else pa.nulls(n, pa.struct(list(outputs[other])))
                       for k, other in enumerate(step.writes))],
                    names=["_table", *(f"w{k}" for k in range(len(step.writes)))])

    return run


def _tables(tree: Any, name: str) -> list[Any]:
    """The references of ``tree`` to the (unqualified) table or common table expression ``name``."""
    from sqlglot import exp

    return [t for t in tree.find_all(exp.Table) if not t.db and t.name == name]


def _references(tree: Any, name: str) -> int:
    """How often ``tree`` reads the table or common table expression ``name``."""
    return len(_tables(tree, name))


def _spark_schema(data: pa.Table) -> str:
    """A Spark DDL schema for an empty Arrow table (Spark cannot infer types from no rows)."""
    import pyarrow as pa

    def kind(t) -> str:
        if pa.types.is_integer(t):
            return "BIGINT"
        if pa.types.is_floating(t):
            return "DOUBLE"
        if pa.types.is_boolean(t):
            return "BOOLEAN"
        return "STRING"

    return ", ".join(f"`{f.name}` {kind(f.type)}" for f in data.schema)


def _stage_dir(spark: Any) -> str | None:
    """A new temporary directory for :class:`SparkEngine`'s stages: under setting :data:`STAGE_DIR` of the
    session when given, else under the driver's temporary directory on a ``local`` master; else ``None``."""
    import tempfile

    root = spark.conf.get(STAGE_DIR, None)
    if not root and not spark.sparkContext.master.startswith("local"):
        return None
    try:
        return tempfile.mkdtemp(prefix="hiersql-stages-", dir=root or None)
    except OSError as exc:
        if not root:
            raise
        raise InputError(f"no folder for the stages can be made there ({exc.strerror})", "--spark-conf",
                         value=f"{STAGE_DIR}={root}") from None


# ---------------------------------------------------------------------------------------------- sessions
STAGE_DIR = "hiersql.stageDir"  # Spark setting: where SparkEngine stores its stages (a path all executors see)
PLANS_AT_ONCE = "hiersql.plansAtOnce"  # Spark setting: how many plans SparkEngine.run_plans runs side by side


def _plans_at_once(spark: Any) -> int:
    """Setting :data:`PLANS_AT_ONCE` of the session, default 2: one plan's small stages (a task each, planned
    on the driver) leave cores that the other's tasks use (GermEval B, every family, ``local[2]``: 10 % faster;
    3 no faster than 2)."""
    value = spark.conf.get(PLANS_AT_ONCE, None) or "2"
    if not value.isdigit() or int(value) < 1:
        raise InputError("must be a whole number of plans, 1 or more", "--spark-conf", value=f"{PLANS_AT_ONCE}={value}")
    return int(value)


# The driver's JVM (on a local master the executors' too), in spark.driver.defaultJavaOptions: C2, the JIT's
# optimising compiler, only for methods ten times hotter than by default, and the serial collector. Every
# query brings code of its own (generated classes, plans) that C2 would compile for rows processed in a
# fraction of a second; the loops over many rows still reach C2 (an aggregate of a join of 12 M rows ran
# faster so than with the defaults or with C1 alone: benchmarks/RESULTS.md). They apply to a JVM that the
# session starts (not to one already running); a user's spark.driver.extraJavaOptions come after them and win.
# Its logging: warnings and errors, not every start-up step (hiersql/spark-log4j2.properties); no console
# progress bar of Spark's stages (hiersql's commands show their own steps on stderr).
_JVM_COMMON = " -XX:+UseSerialGC -Dlog4j2.configurationFile=" + (
    Path(__file__).parent / "spark-log4j2.properties").as_uri()
SPARK_DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.adaptive.enabled": "true",
    "spark.driver.memory": "2g",
    "spark.driver.defaultJavaOptions": "-XX:Tier4InvocationThreshold=50000 -XX:Tier4MinInvocationThreshold=6000"
                                       " -XX:Tier4CompileThreshold=150000 -XX:Tier4BackEdgeThreshold=400000"
                                       + _JVM_COMMON,
}
# A small input's JVM: the quick compiler (C1) alone, whose code the few rows of each query never make worth
# C2's compiling (GermEval B, every family, local[2]: 18 % faster; the 450k DAG's set-based and MGIA 40-70 %
# slower: benchmarks/RESULTS.md); with C1 alone the JVM would size its code cache at 48 MB, which the code of
# hundreds of queries fills (the JVM then stops compiling): the size it has with both compilers.
SMALL_INPUT_ROWS = 500_000  # rows of truth and predictions together
SMALL_INPUT_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m" + _JVM_COMMON


def open_engine(run: Any, rows: int | None = None) -> Engine | None:
    """The engine of a :class:`~hiersql.options.RunOptions` (``None`` for the embedded DuckDB store):
    PostgreSQL at ``run.postgres_url``; Spark on ``run.spark_master`` with ``run.spark_conf`` over
    :data:`SPARK_DEFAULTS` (and, unless set, as many shuffle partitions as local cores: small inputs do not pay
    Spark's 200). ``rows``, the truth and prediction rows to evaluate when known before Spark starts: under
    :data:`SMALL_INPUT_ROWS` a JVM the session starts has :data:`SMALL_INPUT_JAVA_OPTIONS`."""
    if run.engine == "postgres":
        if not run.postgres_url:
            raise InputError("--engine postgres needs the server", "--postgres-url", value=None)
        import psycopg

        try:
            return PostgresEngine(run.postgres_url)
        except psycopg.Error as exc:  # not reached, refused, or not a connection string at all
            raise InputError(f"cannot connect: {masked(' '.join(str(exc).split()), run.postgres_url)}",
                             "--postgres-url", value=display(run.postgres_url)) from None
    if run.engine == "spark":
        import os
        import sys

        # pyspark warns of pandas >= 3 as not fully supported; what hiersql asks of it (Arrow in and out,
        # mapInArrow, an empty table from pandas) runs under pandas 3 in the engine tests
        warnings.filterwarnings("ignore", "PySpark does not yet fully support pandas", FutureWarning)
        small = {"spark.driver.defaultJavaOptions": SMALL_INPUT_JAVA_OPTIONS} if (
            rows is not None and rows < SMALL_INPUT_ROWS) else {}
        settings = {**SPARK_DEFAULTS, "spark.sql.shuffle.partitions": str(2 * (os.cpu_count() or 1)), **small,
                    **dict(run.spark_conf)}
        if run.spark_master.startswith("local"):  # the Python workers solve steps: they import hiersql too
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # (pyspark reads it, not a setting)
        # hiersql's own settings are set on the session once it runs: spark-submit would print that it
        # ignores them, as not Spark's
        own = {key: settings.pop(key) for key in [key for key in settings if key.startswith("hiersql.")]}
        session = _spark_session(run, settings)
        for key, value in own.items():
            session.conf.set(key, value)
        session.sparkContext.setLogLevel("ERROR")
        return SparkEngine(session)
    return None


def _spark_session(run: Any, settings: Mapping[str, str]) -> Any:
    """The Spark session of ``run`` with ``settings``: the running one when there is one; else a new JVM whose
    stdout and stderr go to a log file (:func:`spark_log`), not to the command's: its start-up notes (the
    incubator modules) and logs stay off the terminal, and nothing it prints mixes with the results on stdout.
    A JVM that did not start, or a session Spark refused, is an :class:`InputError` in one line
    (:func:`_not_started`); a ``spark://`` master that does not answer is one before the JVM starts (Spark
    itself retries for a minute)."""
    import os
    import tempfile

    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(run.spark_master).appName("hiersql")
    for key, value in settings.items():
        builder = builder.config(key, value)
    if SparkContext._gateway is not None:  # this process runs a JVM already: its session, these SQL settings
        return _checked(builder, run)
    _check_master(run.spark_master)
    conf = SparkConf(loadDefaults=False).setMaster(run.spark_master).setAppName("hiersql").setAll(settings.items())
    fd, path = tempfile.mkstemp(prefix="hiersql-spark-", suffix=".log")
    try:
        gateway = launch_gateway(conf, popen_kwargs={"stdout": fd, "stderr": fd})
    except Exception as exc:  # the JVM ended before it opened the gateway: its reason is in the log
        reason = _jvm_reason(Path(path).read_text(errors="replace"))
        Path(path).unlink()
        if not is_spark_error(exc):
            raise
        if run.spark_conf:
            raise InputError(f"Spark's JVM did not start: {reason}", "--spark-conf",
                             value=" ".join(f"{key}={value}" for key, value in run.spark_conf)) from None
        raise InputError(f"Spark's JVM did not start: {reason}", "--spark-master", value=run.spark_master) from None
    finally:
        os.close(fd)
    _log.path = Path(path)
    weakref.finalize(_log, _log.remove)
    try:
        SparkContext(conf=conf, gateway=gateway)
    except Exception as exc:
        if not is_spark_error(exc):
            raise
        raise _not_started(exc, run) from None
    return _checked(builder, run)


def _checked(builder: Any, run: Any) -> Any:
    """``builder``'s session, whose SQL settings Spark checks when first read (here); a refusal is
    :func:`_not_started`'s error."""
    try:
        session = builder.getOrCreate()
        session.conf.get("spark.app.name")
    except Exception as exc:  # a setting or a master Spark refused, a cluster it could not reach
        if not is_spark_error(exc):
            raise
        raise _not_started(exc, run) from None
    return session


def _check_master(master: str) -> None:
    """A ``spark://HOST:PORT[,HOST:PORT...]`` master none of whose hosts accepts a connection is an
    :class:`InputError` naming it (the JVM would start, then retry for a minute, logging every try)."""
    import socket

    if not master.startswith("spark://"):
        return
    reasons = []
    for address in master[len("spark://"):].split(","):
        host, _, port = address.rpartition(":")
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
            return
        except OSError as exc:
            reasons.append(exc.strerror or str(exc))
    raise InputError(f"no master answers there ({reasons[0]})", "--spark-master", value=master)


# Lines a JVM prints whatever went wrong (and its note on the incubator modules Spark 4 loads), which say
# nothing of why it did not start.
_JVM_NOISE = re.compile(r"WARNING: Using incubator modules|Error: Could not create the Java Virtual Machine"
                        r"|Error: A fatal exception has occurred")


def _jvm_reason(text: str) -> str:
    """The JVM's own words on why it did not start, from its output: its first two other lines, on one."""
    lines = [line.strip() for line in text.splitlines() if line.strip() and not _JVM_NOISE.match(line.strip())]
    return " / ".join(lines[:2]) or "no reason given"


class _Log:
    """The log file of the Spark JVM that :func:`_spark_session` started (``path``), removed when the process
    ends unless :func:`spark_log` was asked for it."""

    path: Path | None = None
    kept = False

    def remove(self) -> None:
        if self.path is not None and not self.kept:
            self.path.unlink(missing_ok=True)


_log = _Log()


def spark_log() -> Path | None:
    """The log file (stdout and stderr) of the Spark JVM this process started, kept when the process ends
    (a command that failed names it); ``None`` when it started none."""
    _log.kept = _log.path is not None
    return _log.path


def _not_started(exc: Exception, run: Any) -> InputError:
    """The error of a Spark session that did not start, in one line naming the setting (``--spark-conf``) its
    message names; else the master (``--spark-master``). The master's form was checked before
    (:mod:`hiersql.options`); the JVM's log, where there is one, is named and kept."""
    text = spark_message(exc)
    reason = " ".join(re.split(r" SQLSTATE: | JVM stacktrace:", text)[0].split())
    named = [f"{key}={value}" for key, value in run.spark_conf if key in text]
    if named:
        return InputError(f"Spark did not start: {reason}", "--spark-conf", value=named[0])
    log = spark_log()
    seen = f" (Spark's log: {log})" if log is not None else ""
    return InputError(f"Spark did not start{seen}: {reason}", "--spark-master", value=run.spark_master)


# ---------------------------------------------------------------------------------------------- helpers
def _quoted(name: str, dialect: str) -> str:
    """A (possibly qualified) table or column name, quoted for ``dialect``."""
    from sqlglot import exp

    return exp.to_table(name).sql(dialect=dialect, identify=True) if "." in name else \
        exp.to_identifier(name).sql(dialect=dialect, identify=True)


def _type(duck_type: object, dialect: str) -> str:
    from sqlglot import exp

    return exp.DataType.build(str(duck_type), dialect="duckdb").sql(dialect=dialect)


def _create_table(name: str, rel: duckdb.DuckDBPyRelation, dialect: str, temporary: bool = False) -> str:
    """``CREATE [TEMPORARY] TABLE name (...)`` with the columns and types of ``rel``, written for ``dialect``."""
    cols = ", ".join(f"{_quoted(c, dialect)} {_type(t, dialect)}" for c, t in zip(rel.columns, rel.types,
                                                                                  strict=True))
    return f"CREATE {'TEMPORARY ' if temporary else ''}TABLE {_quoted(name, dialect)} ({cols})"
