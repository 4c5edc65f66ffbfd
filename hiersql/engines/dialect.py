"""What hiersql does differently per SQL dialect: one :class:`EngineDialect` record each, found by :func:`dialect`.

A record says how a mean's float sums are made reproducible (:attr:`~EngineDialect.sums`), how a printed script
makes a stage and what follows it, which ``-- name: NAME (variant)`` bodies of the SQL files it reads, how it
quotes the names the runners create, and the rewrites applied to sqlglot's tree after the transpilation (small
functions ``tree -> tree``, in the manner of sqlglot's ``transforms``). A dialect without a record of its own
(Snowflake, BigQuery, ...) gets the default one: no ordered aggregates, temporary tables, no rewrite.

PostgreSQL reads ``1.0`` as ``numeric``, whose means, divisions and square roots keep some 16 to 20 digits:
rounded again to a double, a value may end one unit in the last place away from DuckDB's. Its decimal literals
become ``DOUBLE PRECISION`` (:func:`decimals_as_doubles`), and PostgreSQL prints DuckDB's digits.

The Spark rewrites (Spark, Spark 2 and Databricks share them):

- Spark reads a literal such as ``1.0`` as ``DECIMAL(2,1)``, and its decimal division keeps only 6 digits
  after the point: decimal literals become ``DOUBLE`` literals, as in DuckDB (:func:`decimals_as_doubles`).
- Spark has no ordered aggregates (``sum(x ORDER BY k)``, which the means use so that their digits do not
  depend on threads): the values are added exactly instead, as ``DECIMAL(38, 18)`` by Spark's ``sum``
  (:func:`ordered_folds`), so a Spark run prints the same digits however its rows are partitioned; they
  agree with DuckDB's ordered sums of doubles to the rounding of those sums.
- A Spark variant of a query asks for a broadcast join with a comment closing its select list
  (``SELECT a, b /*+ BROADCAST(m) */ FROM ...``; DuckDB's parser keeps it as a plain comment): it becomes the
  ``SELECT``'s Spark hint (:func:`spark_hints`).
- Spark (4.x) accepts only ``UNION ALL`` in a recursive CTE: the ``UNION`` of a CTE that reads itself
  becomes ``UNION ALL`` (:func:`recursive_unions_kept`). That is right for a query whose result does not
  depend on duplicate rows, such as the closure: the recursion then walks every path instead of every
  (ancestor, descendant, distance) triple, still ends because a taxonomy has no cycle, and ``min(distance)``
  gives the same closure. On a DAG with many paths (MeSH) compute the closure in DuckDB and copy it instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache
from typing import Any, Literal

Rewrite = Callable[[Any], Any]  # a sqlglot tree to the rewritten tree (changed in place or new)
Sums = Literal["ordered", "exact-fold", "unordered"]


@dataclass(frozen=True)
class EngineDialect:
    """The rules hiersql follows for the sqlglot dialect :attr:`name`.

    Attributes
    ----------
    name:
        sqlglot's name of the dialect.
    sums:
        How a mean adds its values: ``"ordered"``, in unit order (``sum(x ORDER BY k)``: the digits do not
        depend on threads); ``"exact-fold"``, exactly as decimals (:func:`ordered_folds`: the dialect has no
        ordered aggregates, the digits do not depend on the partitioning); ``"unordered"``, the ``ORDER BY``
        dropped (:func:`orders_dropped`: the last digits may depend on the order the engine adds the rows).
    stage_statement:
        How a printed script makes a stage (``{name}``: its name; ``{folder}``: the string literal of its
        folder, with :attr:`stage_folders`), followed by the stage's query.
    after_stage_statement:
        The statement after each stage of a printed script (``{name}``, ``{folder}`` as above): PostgreSQL's
        ``ANALYZE``, as its runner does; Spark's view of the folder. ``None``: none.
    variant:
        The ``-- name: NAME (variant)`` bodies of the SQL files that replace the portable ones
        (:mod:`hiersql.sqlfiles`);
        ``None``: the portable ones.
    rewrites:
        Applied in order to the tree of every query after sqlglot's parse, constant folding and pruning, before
        the rewrite of :attr:`sums`.
    inlines_ctes:
        The engine computes a common table expression again at every reference: a family is printed as a
        script of stages even when it has no Python step, and a stage's common table expressions read twice
        are stages of their own (:func:`hiersql.engines.compile.ctes_apart`).
    identify:
        Quote the names of the tables and columns the runners create (:meth:`quoted`). A dialect that folds
        unquoted names to upper case (Snowflake) reads a quoted ``"truth"`` only where the stages' SQL, which
        names tables unquoted, is quoted too.
    view_statement:
        How a printed script makes the view of an input table's cleaned rows (``{}``: its name), followed by the
        view's query (:func:`hiersql.engines.compile.checks_script`).
    run_here:
        hiersql's tests run the printed SQL of this dialect on a real server (DuckDB, PostgreSQL, Spark); the
        others are transpiled by sqlglot only, and ``hiersql sql`` says so in its first line.
    lists:
        The engine's own summaries read the ordered values of a unit table from one list
        (:class:`hiersql.plan.Folds`): one sort instead of one per value, the same digits.
    text_collation:
        The collation of the text the measures read (the runner's tables, a printed script's views of the
        input tables), so that they sort it in byte order as DuckDB does, whatever the database's collation:
        the ordered means then add their values in DuckDB's order. ``None``: the database's own.
    """

    name: str
    sums: Sums = "unordered"
    stage_statement: str = "CREATE TEMPORARY TABLE {name} AS"
    after_stage_statement: str | None = None
    variant: str | None = None
    rewrites: tuple[Rewrite, ...] = ()
    inlines_ctes: bool = False
    identify: bool = True
    view_statement: str = "CREATE OR REPLACE TEMPORARY VIEW {} AS"
    run_here: bool = False
    lists: bool = False
    text_collation: str | None = None

    @property
    def stage_folders(self) -> bool:
        """Whether a printed script stores each stage in a folder of its own (Spark's Parquet folders)."""
        return "{folder}" in self.stage_statement

    @property
    def ordered(self) -> bool:
        """Whether a mean's values are added in unit order (exactly, with ``"exact-fold"``)."""
        return self.sums != "unordered"

    def rewritten(self, tree: Any) -> Any:
        """``tree`` after :attr:`rewrites`, then the rewrite of :attr:`sums`, then :func:`failures_raised`."""
        for rewrite in (*self.rewrites, _SUMS[self.sums]):
            tree = rewrite(tree)
        return failures_raised(tree, self.name)

    def quoted(self, name: str) -> str:
        """A (possibly qualified) table or column name as this dialect's runners write it."""
        if self.name == "duckdb" and self.identify and "." not in name:  # sqlglot's quoting, without its import
            return '"' + name.replace('"', '""') + '"'
        from sqlglot import exp

        node = exp.to_table(name) if "." in name else exp.to_identifier(name)
        return node.sql(dialect=self.name, identify=self.identify)


# ---------------------------------------------------------------------------------------------- sums
# A mean's values are added exactly on Spark as DECIMAL(38, 18) (20 digits before the point, 18 after): an
# exact sum does not depend on the order of its terms, so no sort is needed. Beyond this bound (the sum of the
# values' magnitudes), or with a NaN or an infinite value, the sum is Spark's DOUBLE sum instead.
EXACT_SUM_BOUND = 1e19


def orders_dropped(tree: Any) -> Any:
    """Drop the ``ORDER BY`` of every aggregate of ``tree`` (``sum(x ORDER BY k)``), for the dialects without
    ordered aggregates (Snowflake, BigQuery, ...)."""
    from sqlglot import exp

    for agg in list(tree.find_all(exp.AggFunc)):
        if isinstance(agg.this, exp.Order):
            agg.set("this", agg.this.this)
    return tree


def ordered_folds(tree: Any) -> Any:
    """Replace in ``tree`` every ``sum``/``avg`` of ``x ORDER BY k...`` (an ordered aggregate, which Spark does
    not have) by its :func:`_ordered_fold`: an exact sum gives the same digits in any order, so the keys are
    not needed."""
    from sqlglot import exp

    for agg in list(tree.find_all(exp.Sum, exp.Avg)):
        if isinstance(agg.this, exp.Order):
            agg.replace(_ordered_fold(agg.this.this, isinstance(agg, exp.Avg)))
    return tree


def _ordered_fold(value: Any, mean: bool) -> Any:
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
def _fold_template(mean: bool) -> Any:
    """The expression of :func:`_ordered_fold` for the value :data:`_FOLDED` (copy it before changing it)."""
    import sqlglot

    v = f"CAST({_FOLDED} AS DOUBLE)"
    exact = (f"CAST(try_sum(CAST(CASE WHEN abs({v}) < {EXACT_SUM_BOUND!r} THEN {v} END AS DECIMAL(38, 18)))"
             " AS DOUBLE)")
    total = f"CASE WHEN sum(abs({v})) < {EXACT_SUM_BOUND!r} THEN {exact} ELSE sum({v}) END"
    return sqlglot.parse_one(f"({total}) / nullif(count({v}), 0)" if mean else total, read="spark")


_SUMS: dict[Sums, Rewrite] = {"ordered": lambda tree: tree, "exact-fold": ordered_folds, "unordered": orders_dropped}


# ---------------------------------------------------------------------------------------------- failures
def failures_raised(tree: Any, dialect: str) -> Any:
    """``CAST('hiersql: ...' || ... AS INTEGER)`` (or of a subquery of one such column), the portable failure of
    the SQL files (a database's cast error quotes the text: ``closure_refresh``'s cycle, a family's checks), as
    the failure function of ``dialect`` (:data:`hiersql.inputs.rules.FAILURE_FUNCTIONS`: DuckDB's ``error``,
    Spark's ``raise_error``), whose error is the message itself; unchanged in a dialect without one."""
    from sqlglot import exp

    from ..inputs.rules import FAILURE_FUNCTIONS

    function = FAILURE_FUNCTIONS.get(dialect)
    if function is None:
        return tree

    def raised(node):
        if not isinstance(node, exp.Cast) or not node.to.is_type(*exp.DataType.INTEGER_TYPES):
            return node
        first = node.this  # the message's first part: of the text, or of a subquery's one column
        while isinstance(first, exp.DPipe | exp.Subquery | exp.Alias) or (
                isinstance(first, exp.Select) and len(first.expressions) == 1):
            first = first.expressions[0] if isinstance(first, exp.Select) else first.this
        if isinstance(first, exp.Literal) and first.is_string and first.this.startswith("hiersql: "):
            return exp.Anonymous(this=function, expressions=[node.this])
        return node

    return tree.transform(raised, copy=False)


# ---------------------------------------------------------------------------------------------- Spark rewrites
def decimals_as_doubles(tree: Any) -> Any:
    """Decimal literals (``1.0``, ``1e-9``) cast to ``DOUBLE``: Spark reads ``1.0`` as ``DECIMAL(2,1)``."""
    from sqlglot import exp

    def as_double(node):
        if isinstance(node, exp.Literal) and node.is_number and any(ch in node.this for ch in ".eE"):
            return exp.cast(node, exp.DataType.build("DOUBLE"))
        return node

    return tree.transform(as_double)


def spark_hints(tree: Any) -> Any:
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
    return tree


def recursive_unions_kept(tree: Any) -> Any:
    """The ``UNION`` of a recursive common table expression that reads itself becomes ``UNION ALL``, the only
    one Spark accepts there."""
    from sqlglot import exp

    with_ = tree.args.get("with_")
    if with_ is not None and with_.args.get("recursive"):
        for cte in with_.expressions:
            reads_itself = any(t.name == cte.alias and not t.db for t in cte.this.find_all(exp.Table))
            if isinstance(cte.this, exp.Union) and reads_itself:
                cte.this.set("distinct", False)
    return tree


# ---------------------------------------------------------------------------------------------- registry
_SPARK = EngineDialect(
    "spark", sums="exact-fold",
    # Spark has no temporary table, and a temporary view is computed again at every reference. A cached view
    # keeps the plans of the views it reads, which grow with every stage (the LCA script's 16th stage ran a
    # 1 GB driver out of memory); a view of a Parquet folder starts a new plan, as the Spark runner's stages do
    stage_statement="INSERT OVERWRITE DIRECTORY {folder} USING parquet",
    after_stage_statement="CREATE OR REPLACE TEMPORARY VIEW {name} USING parquet OPTIONS (path {folder})",
    variant="spark", rewrites=(decimals_as_doubles, spark_hints, recursive_unions_kept), inlines_ctes=True)
_DIALECTS = {
    "duckdb": EngineDialect("duckdb", sums="ordered", run_here=True, lists=True),
    # PostgreSQL has no statistics of a new table until it is analysed, and plans some stages (NOT IN over a
    # stage, joins of stages) as if it were empty
    # PostgreSQL too reads 1.0 as a decimal (numeric), whose means keep 16 to 20 digits
    # PostgreSQL's CREATE OR REPLACE VIEW keeps the view's columns: a script whose measures read the rank (the
    # cleaned rows with a rank column) after one whose measures do not failed in the same session
    # PostgreSQL sorts text by the database's collation (ICU en-US puts 'a' before 'B'), DuckDB by its bytes
    "postgres": EngineDialect("postgres", sums="ordered", after_stage_statement="ANALYZE {name}", run_here=True,
                              rewrites=(decimals_as_doubles,), text_collation="C",
                              view_statement="DROP VIEW IF EXISTS pg_temp.{0};\nCREATE TEMPORARY VIEW {0} AS"),
    "spark": replace(_SPARK, run_here=True),
    "spark2": replace(_SPARK, name="spark2"),
    "databricks": replace(_SPARK, name="databricks"),
}


def dialect(name: str) -> EngineDialect:
    """The record of sqlglot dialect ``name``; for a dialect without one of its own, the default record."""
    return _DIALECTS.get(name) or EngineDialect(name)
