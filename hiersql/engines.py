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
- Spark (4.x) accepts only ``UNION ALL`` in a recursive CTE: the ``UNION`` of a CTE that reads itself
  becomes ``UNION ALL``. That is right for a query whose result does not depend on duplicate rows, such as the
  closure: the recursion then walks every path instead of every (ancestor, descendant, distance) triple, still
  ends because a taxonomy has no cycle, and ``min(distance)`` gives the same closure. On a DAG with many paths
  (MeSH) compute the closure in DuckDB and copy it instead.

Every engine returns the rows ``(system, metric, average, value)`` of :class:`~hiersql.metrics.Row`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from . import sqlfiles
from .metrics import Options, Row, family, resolve

if TYPE_CHECKING:
    import duckdb

    from .store import Store

STORE_TABLES = ("edges", "nodes", "closure", "instances", "truth", "predictions", "systems")
DEFAULT_METRICS = ("hierarchical_precision", "hierarchical_recall", "hierarchical_f1",
                   "symmetric_difference_loss")


# ---------------------------------------------------------------------------------------------- queries
def family_query(name: str) -> tuple[str, str]:
    """The SQL file and summary query of family ``name``.

    A family module may set ``SQL_FILE`` (default: the family name) and ``SQL_QUERY`` (default: the last
    query of the file). A family is computed in SQL alone when that file exists and the module says how to
    fill its parameters (:func:`family_params`); otherwise ``ValueError``.
    """
    module = family(name)
    file = getattr(module, "SQL_FILE", name)
    if file not in sqlfiles.available() or getattr(module, "sql_params", None) is None:
        raise ValueError(f"family {name!r} is not computed in SQL alone (it declares no sql/ summary query "
                         "and sql_params)")
    query = getattr(module, "SQL_QUERY", None) or list(sqlfiles.queries(file))[-1]
    return file, query


def family_params(name: str, options: Options) -> dict[str, object]:
    """The ``$parameters`` of family ``name``'s SQL for ``options``: the module's ``sql_params(options)``."""
    build = getattr(family(name), "sql_params", None)
    if build is None:
        raise ValueError(f"family {name!r} has no sql_params(options)")
    return dict(build(options))


def family_tables(name: str, options: Options) -> dict[str, duckdb.DuckDBPyRelation]:
    """Helper tables that family ``name``'s SQL reads besides the store's, for ``options``: the module's
    ``sql_tables(options)`` (``{table: DuckDB relation}``), if it has one."""
    build = getattr(family(name), "sql_tables", None)
    return dict(build(options)) if build else {}


def render(
    file: str,
    name: str | None = None,
    params: Mapping[str, object] | None = None,
    dialect: str = "duckdb",
    tables: Mapping[str, str] | None = None,
    pretty: bool = True,
    metrics: Sequence[str] | None = None,
) -> str:
    """Query ``name`` of ``sql/<file>.sql`` as one statement in ``dialect``: :func:`hiersql.sqlfiles.render`
    (dependencies as CTEs, parameters as literals, ``tables`` renamed), constant-folded (a branch switched
    off by a parameter, such as ``'ancestors' = 'descendants' AND ...``, disappears), plus the dialect fixes of
    the module docstring. With ``metrics``, only the rows whose ``metric`` column is one of them."""
    return _tree(file, name, params, dialect, tables, metrics).sql(dialect=dialect, pretty=pretty)


def _tree(file, name, params, dialect, tables, metrics=None):
    """The sqlglot tree behind :func:`render`."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.optimizer.simplify import simplify

    sql = sqlfiles.render(file, name, dict(params or {}), "duckdb", dict(tables or {}), pretty=False)
    tree = simplify(sqlglot.parse_one(sql + "\n", read="duckdb"))  # newline: see sqlfiles._parse
    if metrics:
        with_ = tree.args.get("with_")
        tree.set("with_", None)
        tree = exp.select("*").from_(tree.subquery("summary")).where(
            exp.column("metric").isin(*[exp.Literal.string(m) for m in metrics]))
        tree.set("with_", with_)
    return _FIXES[dialect](tree) if dialect in _FIXES else tree


def _fix_spark(tree):
    from sqlglot import exp

    def decimal_to_double(node):
        if isinstance(node, exp.Literal) and node.is_number and any(ch in node.this for ch in ".eE"):
            return exp.cast(node, exp.DataType.build("DOUBLE"))
        return node

    tree = tree.transform(decimal_to_double)
    with_ = tree.args.get("with_")
    if with_ is not None and with_.args.get("recursive"):
        for cte in with_.expressions:
            reads_itself = any(t.name == cte.alias and not t.db for t in cte.this.find_all(exp.Table))
            if isinstance(cte.this, exp.Union) and reads_itself:
                cte.this.set("distinct", False)
    return tree


_FIXES = {"spark": _fix_spark, "spark2": _fix_spark, "databricks": _fix_spark}


# ---------------------------------------------------------------------------------------------- engines
class Engine:
    """Where the measures' SQL runs. Subclasses implement :meth:`execute`, :meth:`_write` and
    :meth:`_materialize`.

    Parameters
    ----------
    tables:
        Renames of the hiersql tables, ``{"truth": "warehouse.gold_labels", ...}``.
    """

    dialect = "duckdb"

    def __init__(self, tables: Mapping[str, str] | None = None) -> None:
        self.tables: dict[str, str] = {}
        self.use_tables(**dict(tables or {}))

    # -- to implement
    def execute(self, sql: str) -> list[tuple]:
        """Run one statement; its rows as tuples (an empty list for DDL)."""
        raise NotImplementedError

    def _write(self, name: str, rel: duckdb.DuckDBPyRelation) -> None:
        """Create (or replace) table ``name`` holding the rows of the DuckDB relation ``rel``."""
        raise NotImplementedError

    def _materialize(self, name: str, sql: str) -> None:
        """Create (or replace) table ``name`` as the result of query ``sql``."""
        raise NotImplementedError

    # -- tables
    def use_tables(self, **renames: str) -> None:
        """Read the hiersql table ``key`` from the engine's table ``value`` (``truth="dw.gold_labels"``)."""
        unknown = set(renames) - set(STORE_TABLES)
        if unknown:
            raise ValueError(f"unknown table(s) {sorted(unknown)} (known: {', '.join(STORE_TABLES)})")
        self.tables.update({k: v for k, v in renames.items() if v})

    def table(self, name: str) -> str:
        """The engine-side name of hiersql table ``name``."""
        return self.tables.get(name, name)

    def copy_store(self, store: Store, tables: Iterable[str] = STORE_TABLES) -> None:
        """Copy the store's ``tables`` into the engine, under the names of :meth:`table`."""
        for name in tables:
            self._write(self.table(name), store.con.table(name))

    def build_closure(self, max_depth: int | None = None) -> None:
        """Compute ``closure`` inside the engine from its ``edges`` and ``nodes`` (``sql/closure.sql``), up to
        ``max_depth`` edges when given."""
        self._materialize(self.table("closure"), self.render("closure", params={"max_depth": max_depth}))

    # -- queries
    def render(self, file: str, name: str | None = None, params: Mapping[str, object] | None = None) -> str:
        """Query ``name`` of ``sql/<file>.sql`` in this engine's dialect, over this engine's tables."""
        return render(file, name, params, self.dialect, self.tables, pretty=False)

    def run(self, file: str, name: str | None = None, params: Mapping[str, object] | None = None) -> list[tuple]:
        """Rows of query ``name`` of ``sql/<file>.sql``."""
        return self.execute(self.render(file, name, params))

    def evaluate(self, metrics: Sequence[str] = DEFAULT_METRICS, options: Options | None = None) -> list[Row]:
        """``metrics`` (names or aliases of SQL families) for every system, as :class:`Row` sorted by
        (system, metric, average); ``average`` is filtered by ``options.average`` like the DuckDB API."""
        options = options or Options()
        averages = set(options.average) | {""}
        out: list[Row] = []
        for fam, wanted in resolve(list(metrics)).items():
            file, query = family_query(fam)
            for table, rel in family_tables(fam, options).items():
                self._write(table, rel)
            for system, metric, average, value in self.run(file, query, family_params(fam, options)):
                if metric in wanted and (average or "") in averages:
                    out.append(Row(str(system), str(metric), average or "", _float(value)))
        return sorted(out, key=lambda r: (r.system, r.metric, r.average))


def _float(value: Any) -> float:
    return float("nan") if value is None else float(value)


class DuckDBEngine(Engine):
    """DuckDB: a :class:`~hiersql.store.Store`, a DuckDB connection, or a DuckDB file.

    The store's own tables are read in place; :meth:`copy_store` copies another store's tables in.
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

    def execute(self, sql: str) -> list[tuple]:
        cur = self.con.execute(sql)
        return cur.fetchall() if cur.description else []

    def _write(self, name: str, rel: duckdb.DuckDBPyRelation) -> None:
        data = rel.to_arrow_table()  # noqa: F841 - read by name in the statement below
        self.con.execute(f"CREATE OR REPLACE TABLE {_quoted(name, 'duckdb')} AS SELECT * FROM data")

    def _materialize(self, name: str, sql: str) -> None:
        self.con.execute(f"CREATE OR REPLACE TABLE {_quoted(name, 'duckdb')} AS {sql}")


class PostgresEngine(Engine):
    """PostgreSQL through psycopg 3.

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

    def _write(self, name: str, rel: duckdb.DuckDBPyRelation) -> None:
        target = _quoted(name, self.dialect)
        cols = ", ".join(_quoted(c, self.dialect) for c in rel.columns)
        with self.conn.transaction(), self.conn.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS {target}")
            cur.execute(_create_table(name, rel, self.dialect))
            with cur.copy(f"COPY {target} ({cols}) FROM STDIN") as copy:
                for row in rel.fetchall():
                    copy.write_row(row)
            cur.execute(f"ANALYZE {target}")  # row counts for the planner: without them its guesses are huge

    def _materialize(self, name: str, sql: str) -> None:
        target = _quoted(name, self.dialect)
        with self.conn.transaction(), self.conn.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS {target}")
            cur.execute(f"CREATE TABLE {target} AS {sql}")
            cur.execute(f"ANALYZE {target}")

    def close(self) -> None:
        self.conn.close()


class SparkEngine(Engine):
    """Spark SQL through a ``pyspark.sql.SparkSession`` (local or a cluster).

    A plain table name becomes a cached temporary view; a qualified one (``db.table``) a managed table.
    """

    dialect = "spark"

    def __init__(self, spark: Any, tables: Mapping[str, str] | None = None) -> None:
        super().__init__(tables)
        self.spark = spark

    def execute(self, sql: str) -> list[tuple]:
        return [tuple(row) for row in self.spark.sql(sql).collect()]

    def _write(self, name: str, rel: duckdb.DuckDBPyRelation) -> None:
        """Through Arrow: the rows stay in the JVM (a list of rows would need Python workers to decode)."""
        self._register(name, self.spark.createDataFrame(rel.to_arrow_table()))

    def _materialize(self, name: str, sql: str) -> None:
        self._register(name, self.spark.sql(sql))

    def run(self, file: str, name: str | None = None, params: Mapping[str, object] | None = None) -> list[tuple]:
        """Rows of query ``name`` of ``sql/<file>.sql``. Spark inlines a CTE at every reference (the set-based
        summary would recompute its pipeline about ten times), so each CTE is first cached as a temporary view
        ``_hiersql_<name>``, as :meth:`hiersql.store.Store.run` does in DuckDB."""
        tree = _tree(file, name, params, self.dialect, self.tables)
        with_ = tree.args.get("with_")
        if with_ is None or with_.args.get("recursive"):
            return self.execute(tree.sql(dialect=self.dialect))
        views: dict[str, str] = {}
        frames = []
        try:
            for cte in with_.expressions:
                body = sqlfiles._rename_tables(cte.this, views)
                frames.append(self.spark.sql(body.sql(dialect=self.dialect)).cache())
                views[cte.alias] = f"_hiersql_{cte.alias}"
                frames[-1].createOrReplaceTempView(views[cte.alias])
            tree.set("with_", None)
            return self.execute(sqlfiles._rename_tables(tree, views).sql(dialect=self.dialect))
        finally:
            for view in views.values():
                self.spark.catalog.dropTempView(view)
            for frame in frames:
                frame.unpersist()

    def _register(self, name: str, frame: Any) -> None:
        if "." in name:
            frame.write.mode("overwrite").saveAsTable(name)
        else:
            frame.cache().createOrReplaceTempView(name)


# ---------------------------------------------------------------------------------------------- macros
def macro_statements(tables: Mapping[str, str] | None = None) -> dict[str, str]:
    """``{macro name: CREATE OR REPLACE MACRO ... AS TABLE ...}`` for every query of ``sql/macros.sql`` whose
    files exist (see that file's header); ``tables`` renames the tables the macros read."""
    import sqlglot
    from sqlglot import exp

    defaults = _family_defaults()
    out: dict[str, str] = {}
    for name, body in sqlfiles.queries("macros").items():
        tree = sqlglot.parse_one(body, read="duckdb")
        refs = [t for t in tree.find_all(exp.Table) if t.db in sqlfiles.available()]
        if any(t.name not in sqlfiles.queries(t.db) for t in refs):
            continue  # a file or query not there (yet): no macro
        params: dict[str, object] = {}
        for ref in refs:
            composed = sqlglot.parse_one(sqlfiles.render(ref.db, ref.name, None, "duckdb", dict(tables or {}),
                                                         pretty=False) + "\n", read="duckdb")
            ref.replace(composed.subquery(ref.alias_or_name))
            used = sqlfiles.parameters(composed.sql(dialect="duckdb"))
            params.update({p: defaults.get(ref.db, {}).get(p, _REQUIRED) for p in sorted(used)})
        tree = tree.transform(_macro_parameter)
        args = [p for p, v in params.items() if v is _REQUIRED]
        args += [f"{p} := {sqlfiles._literal(v).sql(dialect='duckdb')}" for p, v in params.items()
                 if v is not _REQUIRED]
        out[name] = f"CREATE OR REPLACE MACRO {name}({', '.join(args)}) AS TABLE {tree.sql(dialect='duckdb')}"
    return out


_REQUIRED = object()


def _macro_parameter(node):
    """``$name`` -> ``(SELECT name)``: the macro's parameter. DuckDB binds a bare parameter like a column, which
    an aggregate query then rejects ("must appear in the GROUP BY clause"); a scalar subquery is a constant."""
    from sqlglot import exp

    if isinstance(node, exp.Placeholder):
        return exp.select(exp.column(node.name)).subquery()
    return node


def _family_defaults() -> dict[str, dict[str, object]]:
    """``{sql file: its $parameters for the default Options}`` over the families computed in SQL, and the
    closure (unbounded by default)."""
    from .metrics import FAMILIES

    out: dict[str, dict[str, object]] = {"closure": {"max_depth": None}}
    for fam in FAMILIES:
        try:
            file, _ = family_query(fam)
            out[file] = family_params(fam, Options())
        except (ModuleNotFoundError, ValueError):  # not in SQL alone, or not with the default options
            continue
    return out


def install_macros(con: duckdb.DuckDBPyConnection, tables: Mapping[str, str] | None = None) -> list[str]:
    """Create the table macros of ``sql/macros.sql`` in DuckDB connection ``con`` (one transaction) and the
    empty helper tables they read if missing (``flat_labels``); returns the macro names."""
    statements = macro_statements(tables)
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute("CREATE TABLE IF NOT EXISTS flat_labels (label VARCHAR)")
        for sql in statements.values():
            con.execute(sql)
    except Exception:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")
    return list(statements)


# ---------------------------------------------------------------------------------------------- helpers
def _quoted(name: str, dialect: str) -> str:
    """A (possibly qualified) table or column name, quoted for ``dialect``."""
    from sqlglot import exp

    return exp.to_table(name).sql(dialect=dialect, identify=True) if "." in name else \
        exp.to_identifier(name).sql(dialect=dialect, identify=True)


def _type(duck_type: object, dialect: str) -> str:
    from sqlglot import exp

    return exp.DataType.build(str(duck_type), dialect="duckdb").sql(dialect=dialect)


def _create_table(name: str, rel: duckdb.DuckDBPyRelation, dialect: str) -> str:
    """``CREATE TABLE name (...)`` with the columns and types of ``rel``, written for ``dialect``."""
    cols = ", ".join(f"{_quoted(c, dialect)} {_type(t, dialect)}" for c, t in zip(rel.columns, rel.types,
                                                                                  strict=True))
    return f"CREATE TABLE {_quoted(name, dialect)} ({cols})"
