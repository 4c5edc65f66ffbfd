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
  depend on threads): a window adds each group's values in key order, one after the other (a running sum,
  :func:`running_sums`), so a Spark run prints DuckDB's digits however its rows are partitioned.
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
from typing import Any, Literal

Rewrite = Callable[[Any], Any]  # a sqlglot tree to the rewritten tree (changed in place or new)
Sums = Literal["ordered", "running-sum", "unordered"]


@dataclass(frozen=True)
class EngineDialect:
    """The rules hiersql follows for the sqlglot dialect :attr:`name`.

    Attributes
    ----------
    name:
        sqlglot's name of the dialect.
    sums:
        How a mean adds its values: ``"ordered"``, in unit order (``sum(x ORDER BY k)``: the digits do not
        depend on threads); ``"running-sum"``, in unit order by a running sum over the group's rows
        (:func:`running_sums`: the dialect has no ordered aggregates); ``"unordered"``, the ``ORDER BY``
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
    refusal:
        Why hiersql prints no SQL for this dialect: its SQL calls functions the dialect lacks, so a printed
        script would fail, not give ``hiersql evaluate``'s numbers; ``hiersql sql`` says so in one line (exit 2).
        ``None``: printed.
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
    refusal: str | None = None

    @property
    def stage_folders(self) -> bool:
        """Whether a printed script stores each stage in a folder of its own (Spark's Parquet folders)."""
        return "{folder}" in self.stage_statement

    @property
    def ordered(self) -> bool:
        """Whether a mean's values are added in unit order."""
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
def orders_dropped(tree: Any) -> Any:
    """Drop the ``ORDER BY`` of every aggregate of ``tree`` (``sum(x ORDER BY k)``), for the dialects without
    ordered aggregates (Snowflake, BigQuery, ...)."""
    from sqlglot import exp

    for agg in list(tree.find_all(exp.AggFunc)):
        if isinstance(agg.this, exp.Order):
            agg.set("this", agg.this.this)
    return tree


def running_sums(tree: Any) -> Any:
    """Rewrite in ``tree`` every ``SELECT`` with a ``sum``/``avg`` of ``x ORDER BY k...`` (an ordered aggregate,
    which Spark does not have) so that Spark adds the values in key order, one after the other, each addition
    rounded as DuckDB rounds it: the same digits, however Spark partitions and orders the rows.

    The rows of the ``SELECT`` (its ``FROM``, joins and ``WHERE``) become a derived table with a running sum
    per ordered aggregate, a window that Spark computes one row after the other::

        SELECT g, sum(x ORDER BY k), avg(y ORDER BY k) FROM t GROUP BY g
        -> SELECT w.c0 AS g, max_by(w.r0, w.k0), max_by(w.r1, w.k0) / nullif(max_by(w.r2, w.k0), 0) FROM (
               SELECT g AS c0, struct(k) AS k0,
                      sum(CAST(x AS DOUBLE)) OVER (PARTITION BY g ORDER BY k ROWS UNBOUNDED PRECEDING) AS r0,
                      sum(CAST(y AS DOUBLE)) OVER (...) AS r1, count(CAST(y AS DOUBLE)) OVER (...) AS r2
               FROM t) AS w GROUP BY w.c0

    A group's last row in key order holds the sum of its values (``max_by``); NULL values are left out, as the
    aggregates leave them out, and no value gives NULL. The window sorts a group's rows with Spark's external
    sorter, which spills to disk: a group of millions of rows needs no more memory than a few. A key must not be
    NULL (the window sorts it last, as DuckDB, but ``max_by`` takes a struct with a NULL field for the smallest)
    and must be ascending: a ``DESC`` key raises ``ValueError``."""
    from sqlglot import exp

    for select in reversed(list(tree.find_all(exp.Select))):  # inner SELECTs first
        folds = [agg for agg in select.find_all(exp.Sum, exp.Avg)
                 if isinstance(agg.this, exp.Order) and agg.find_ancestor(exp.Select) is select]
        if folds:
            _fold_rows(select, folds)
    return tree


_ROWS = "hiersql_w"  # the derived table of _fold_rows


def _fold_rows(select: Any, folds: list[Any]) -> None:
    """:func:`running_sums` of one ``SELECT`` and its ordered aggregates ``folds``, in place."""
    from sqlglot import exp

    group = select.args.get("group")
    partition = [g.copy() for g in group.expressions] if group else []
    inside = {id(node) for agg in folds for node in agg.walk()}
    aliases = {e.alias for e in select.expressions if isinstance(e, exp.Alias)}
    names: dict[str, str] = {}  # the text of a column of the outer parts: its name in the derived table
    derived, renames = [], []
    for part in filter(None, [*select.expressions, group, select.args.get("having"), select.args.get("order")]):
        if isinstance(part, exp.Star) or isinstance(part, exp.Column) and isinstance(part.this, exp.Star):
            raise ValueError("Spark's running sums need the columns of their SELECT named, not *")
        for column in part.find_all(exp.Column):
            outer_alias = not column.table and column.name in aliases and part is select.args.get("order")
            if id(column) in inside or outer_alias or column.find_ancestor(exp.Select) is not select:
                continue
            if column.sql() not in names:
                names[column.sql()] = f"hiersql_c{len(names)}"
                derived.append(exp.alias_(column.copy(), names[column.sql()]))
            renames.append((column, names[column.sql()]))
    keys: dict[str, str] = {}  # the text of an ORDER BY's keys: the name of their struct
    windows: dict[tuple[str, str, str], str] = {}  # (sum or count, keys, value): the running aggregate's name

    def running(function: type, order: Any, key_text: str) -> Any:
        """The last row's ``function`` (``exp.Sum``, ``exp.Count``) of the values of ``order``'s aggregate."""
        made = (function.__name__, key_text, order.this.sql())
        if made not in windows:
            windows[made] = f"hiersql_r{len(windows)}"
            spec = exp.WindowSpec(kind="ROWS", start="UNBOUNDED", start_side="PRECEDING", end="CURRENT ROW")
            window = exp.Window(this=function(this=exp.cast(order.this.copy(), "DOUBLE")),
                                partition_by=[p.copy() for p in partition],
                                order=exp.Order(expressions=[key.copy() for key in order.expressions]),
                                spec=spec, over="OVER")
            derived.append(exp.alias_(window, windows[made]))
        return exp.ArgMax(this=exp.column(windows[made], _ROWS), expression=exp.column(keys[key_text], _ROWS))

    for agg in folds:
        order = agg.this
        if any(key.args.get("desc") for key in order.expressions):
            raise ValueError(f"Spark's running sums add their values in ascending key order only: {order.sql()}")
        key_text = ", ".join(key.this.sql() for key in order.expressions)
        if key_text not in keys:
            keys[key_text] = f"hiersql_k{len(keys)}"
            fields = [exp.PropertyEQ(this=exp.to_identifier(f"k{i}"), expression=key.this.copy())
                      for i, key in enumerate(order.expressions)]
            derived.append(exp.alias_(exp.Struct(expressions=fields), keys[key_text]))
        last = running(exp.Sum, order, key_text)
        if isinstance(agg, exp.Avg):
            count = exp.Nullif(this=running(exp.Count, order, key_text), expression=exp.Literal.number(0))
            last = exp.Div(this=last, expression=count)
        agg.replace(last)
    for column, name in renames:  # a column of the select list keeps its name
        listed = column.parent is select and column.arg_key == "expressions"
        column.replace(exp.alias_(exp.column(name, _ROWS), column.name) if listed else exp.column(name, _ROWS))
    rows = exp.Select(expressions=derived)
    for arg in ("from_", "joins", "where"):
        if select.args.get(arg) is not None:
            rows.set(arg, select.args[arg])
            select.set(arg, None)
    select.set("from_", exp.From(this=exp.Subquery(this=rows, alias=exp.TableAlias(this=exp.to_identifier(_ROWS)))))


_SUMS: dict[Sums, Rewrite] = {"ordered": lambda tree: tree, "running-sum": running_sums, "unordered": orders_dropped}


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

    return tree.transform(as_double, copy=False)


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
    "spark", sums="running-sum",
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
    # the Spark SQL calls max_by (Spark 3.0) and, in the input rules of every family, raise_error (Spark 3.1)
    "spark2": replace(_SPARK, name="spark2", refusal="hiersql's Spark SQL needs Spark 3.1 or later (raise_error,"
                      " max_by): print it with --dialect spark"),
    "databricks": replace(_SPARK, name="databricks"),
}


def dialect(name: str) -> EngineDialect:
    """The record of sqlglot dialect ``name``; for a dialect without one of its own, the default record."""
    return _DIALECTS.get(name) or EngineDialect(name)
