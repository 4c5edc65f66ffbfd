"""The DuckDB engine: the store's own connection, DuckDB's variants of the queries, parameters bound natively."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from .. import sqlfiles
from ..errors import DataWarning
from ..inputs.tables import quote
from ..options import Options, resource_errors, size_bytes
from ..plan import FamilyPlan, Python, Row, Step
from .base import Engine, scratch_connection, solve_recorded

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from ..inputs.store import Store
    from ..inputs.taxonomy import Taxonomy


BYTES_PER_BATCH_ROW = 1_500
MIN_BATCH_ROWS, MAX_BATCH_ROWS = 10_000, 1_000_000
RANGED_TABLES = ("instances", "truth", "predictions")  # the store's tables a range of instances restricts


class DuckDBEngine(Engine):
    """DuckDB: a :class:`~hiersql.inputs.store.Store`, a DuckDB connection, or a DuckDB file.

    The store's own tables are read in place; stages are temporary tables of the connection, the DuckDB
    variants of queries (``-- name: NAME (duckdb)``) replace the portable ones, parameters are bound natively,
    and Python steps run on the connection itself.
    """

    dialect = "duckdb"
    # a partitioned step whose keyed inputs hold more rows is solved in batches of about this many rows: its
    # Python arrays, which DuckDB's memory limit does not bound, stay that size whatever the input's. None:
    # one row per BYTES_PER_BATCH_ROW bytes of DuckDB's memory_limit, at most MAX_BATCH_ROWS
    batch_rows: int | None = None
    # a plan whose steps compute each (system, instance) apart (FamilyPlan.instance_ranges) runs them for ranges of
    # about this many (system, instance) units one after the other: its joins' hash tables then stay near the
    # size they have at 100,000 instances of 4 systems, where a tenth of the units took a twelfth of the time
    range_units: int = 500_000
    _summary_run = False  # within run_plan: only the summary reads the steps' tables

    def __init__(self, target: Store | duckdb.DuckDBPyConnection | str | None = None,
                 tables: Mapping[str, str] | None = None, *, taxonomy: Taxonomy | None = None) -> None:
        """``taxonomy``: the taxonomy object of a connection's tables (a store's is its own), else read from its
        ``edges`` table when first asked (:meth:`~hiersql.engines.Engine.taxonomy`)."""
        import duckdb

        super().__init__(tables)
        self.batches_solved: dict[str, int] = {}  # step name: the batches it was solved in (its last run)
        if target is None or isinstance(target, str):
            self.con = duckdb.connect(target or ":memory:")
        else:
            self.con = getattr(target, "con", target)
            taxonomy = getattr(target, "taxonomy", taxonomy)
        self._taxonomy = taxonomy

    def cursor(self) -> DuckDBEngine:
        """An engine on a second connection to the same database (its own temporary tables), to run beside
        this one in a thread; close it with ``cursor.con.close()``."""
        return DuckDBEngine(self.con.cursor(), self.tables, taxonomy=self._taxonomy)

    def run_plans(self, runs: Sequence[tuple[FamilyPlan, Sequence[str]]], options: Options,
                  on_plan: Callable[[FamilyPlan], None] | None = None) -> list[list[Row]]:
        """:meth:`Engine.run_plans`; unless the stages are kept for reuse (:meth:`reuse_stages`), the temporary
        tables a plan made are dropped after it: DuckDB holds them within its memory limit, where the next
        plans' joins would spill for want of it."""
        if self._runs is not None:
            return super().run_plans(runs, options, on_plan)
        out = []
        for run in runs:
            before = self._temporary_tables()
            out += super().run_plans([run], options, on_plan)
            self._drop_made_since(before)
        return out

    def run_plan(self, plan: FamilyPlan, metrics: Sequence[str], options: Options) -> list[Row]:
        """:meth:`Engine.run_plan`, a plan with :attr:`~hiersql.plan.FamilyPlan.instance_ranges` run for ranges
        of instances (:meth:`_steps`)."""
        self._summary_run = plan.instance_ranges
        try:
            return super().run_plan(plan, metrics, options)
        finally:
            self._summary_run = False

    def _steps(self, plan: FamilyPlan, steps: Sequence[Step], params: dict[str, object], options: Options,
               made: frozenset[str] | set[str] = frozenset()) -> set[str]:
        """:meth:`Engine._steps`; for a summary of a plan with ``instance_ranges`` beyond :attr:`range_units`
        (system, instance) units, every step is run for one range of ``instance_id`` after the other, with
        temporary tables ``instances``, ``truth`` and ``predictions`` holding the range's rows in front of the
        store's, and the per-instance rows appended. Only the per-instance table is left: a query that reads
        another stage composes it again, from every instance."""
        ranges = self._plan_ranges(plan, steps)
        if len(ranges) == 1:
            return super()._steps(plan, steps, params, options, made)
        store = f"{quote(self.execute('SELECT current_database()')[0][0])}.main"
        before = self._temporary_tables()
        try:
            for k, (low, high) in enumerate(ranges):
                for table in RANGED_TABLES:
                    self.con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS SELECT * FROM {store}.{table}"
                                     " WHERE ($low IS NULL OR instance_id > $low)"
                                     " AND ($high IS NULL OR instance_id <= $high)", {"low": low, "high": high})
                super()._steps(plan, steps, params, options, made)
                head = "CREATE TEMP TABLE _range_instances AS" if k == 0 else "INSERT INTO _range_instances"
                self.con.execute(f"{head} SELECT * FROM {plan.instance}")
                self.con.unregister(plan.instance)  # a view a step registered over its Arrow output, if any
                self._drop_made_since(before, keep={"_range_instances", *RANGED_TABLES})
        except BaseException:
            self.con.execute("DROP TABLE IF EXISTS temp.main._range_instances")
            raise
        finally:  # the store's own tables in view again
            for table in RANGED_TABLES:
                self.con.execute(f"DROP TABLE IF EXISTS temp.main.{table}")
        # a per-instance table made before the ranges (an earlier run on this connection) gives way to theirs
        self.con.execute(f"DROP TABLE IF EXISTS temp.main.{plan.instance}")
        self.con.execute(f"ALTER TABLE _range_instances RENAME TO {plan.instance}")
        self.forget(plan.instance)
        return set(plan.tables(options)) | set(made) | {plan.instance}

    def _plan_ranges(self, plan: FamilyPlan, steps: Sequence[Step]) -> list[tuple[object, object]]:
        """The ranges of instances by which :meth:`_steps` runs ``steps``: one (every instance) unless they are
        the whole plan of a summary with ``instance_ranges``, on the store's own tables, not kept for reuse."""
        if not (self._summary_run and tuple(steps) == plan.steps and not self.tables and self._runs is None
                and not plan.shared):
            return [(None, None)]
        (units,), = self.execute("SELECT (SELECT count(*) FROM systems) * (SELECT count(*) FROM instances)")
        n = -(-units // self.range_units)
        return self._ranges("instance_id", "instances", n) if n > 1 else [(None, None)]

    def _temporary_tables(self) -> set[str]:
        return {row[0] for row in self.con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE temporary AND schema_name = 'main'").fetchall()}

    def _drop_made_since(self, before: set[str], keep: set[str] | frozenset[str] = frozenset()) -> None:
        """Drop the temporary tables made since ``before`` (:meth:`_temporary_tables`), but those in ``keep``."""
        for name in sorted(self._temporary_tables() - before - keep):
            self.con.execute(f"DROP TABLE temp.main.{quote(name)}")  # (quote: sqlglot stays unimported)

    def variant(self) -> str | None:
        """DuckDB's variants, unless the tables are renamed (the portable queries, rewritten by sqlglot)."""
        return None if self.tables else "duckdb"

    def execute(self, sql: str) -> list[tuple]:
        cur = self.con.execute(sql)
        return cur.fetchall() if cur.description else []

    def run(self, file: str, name: str | None = None, params: Mapping[str, object] | None = None) -> list[tuple]:
        """:meth:`Engine.run`; on the store's own tables the query composed as :meth:`stage` composes it, its
        parameters bound natively (sqlglot, which :meth:`render` needs, stays unimported)."""
        if self.tables or name is None:
            return super().run(file, name, params)
        sql = sqlfiles.composed(file, name, "duckdb")
        cur = self.con.execute(sql, sqlfiles.bind(sql, dict(params or {})))
        return cur.fetchall()

    def arrow(self, sql: str) -> pa.Table:
        return self.con.sql(sql).to_arrow_table()

    def write(self, name: str, data: pa.Table) -> None:
        self.forget(name)
        self.con.unregister(name)  # a view a step registered over its Arrow output (pair_instance), if any
        self._from_arrow(f"CREATE OR REPLACE TEMP TABLE {self.quoted(name)} AS", data)

    def _from_arrow(self, statement: str, data: pa.Table) -> None:
        """Run ``statement`` (``CREATE ... AS``, ``INSERT INTO ...``) followed by a ``SELECT`` of ``data``."""
        self.con.register("_hiersql_write", data)
        try:
            self.con.execute(f"{statement} SELECT * FROM _hiersql_write")
        finally:
            self.con.unregister("_hiersql_write")

    def _materialize(self, name: str, sql: str) -> None:
        self.forget(name)
        temporary = "" if "." in name else "TEMP "
        self.con.execute(f"CREATE OR REPLACE {temporary}TABLE {self.quoted(name)} AS {sql}")

    def stage(self, file: str, query: str, params: Mapping[str, object], done: set[str],
              text: str | None = None) -> None:
        with resource_errors(f"the SQL step {file}.{query}"):
            if self.tables:  # renamed tables: the portable queries, rewritten by sqlglot
                super().stage(file, query, params, done, text)
                return
            sql = sqlfiles.composed(file, query, "duckdb", done, text)
            self.forget(query)
            own = sqlfiles.queries(file, "duckdb")[query] if text is None else text
            for k, (low, high) in enumerate(self._instance_ranges(own, params)):
                head = f"CREATE OR REPLACE TEMP TABLE {query} AS" if k == 0 else f"INSERT INTO {query}"
                bounds = {"instance_low": low, "instance_high": high}
                self.con.execute(f"{head} {sql}", sqlfiles.bind(sql, {**params, **bounds}))
            done.add(query)

    def _instance_ranges(self, sql: str, params: Mapping[str, object]) -> list[tuple[object, object]]:
        """The ranges ``(low, high]`` of ``instance_id`` by which query ``sql`` is run, appending its rows: a
        query that keeps only the instances between ``$instance_low`` and ``$instance_high`` (NULL: no bound)
        is run on ``params["instance_batches"]`` ranges of about as many instances (its aggregates then hold
        one range at a time); any other query, or one composed into another, once on all (both bounds NULL)."""
        batches = int(params.get("instance_batches") or 1)  # type: ignore[call-overload]
        if batches <= 1 or "instance_low" not in sqlfiles.parameters(sql):
            return [(None, None)]
        return self._ranges("instance_id", "instances", batches)

    def _ranges(self, column: str, table: str, n: int) -> list[tuple[object, object]]:
        """``n`` ranges ``(low, high]`` of ``column`` of ``table`` (``None``: unbounded), cut at its quantiles
        (SQL written by the library); ranges between equal quantiles, which hold nothing, are left out."""
        (bounds,), = self.con.execute(f"SELECT quantile_disc({column}, $q) FROM {table}",
                                      {"q": [k / n for k in range(1, n)]}).fetchall()
        return [(low, high) for low, high in zip([None, *bounds], [*bounds, None], strict=True)
                if low is None or high is None or low != high]

    def solve(self, step: Python, params: dict[str, object], options: Options) -> None:
        """A step runs on the engine's own connection; but a step that declares ``partition_by`` and whose
        keyed inputs hold more than :attr:`batch_rows` rows is solved batch by batch, each on a scratch
        connection holding the rows of a range of its keys (of their first column, cut at the quantiles of
        the largest keyed table) and the step's other inputs whole, its tables appended to the engine's; the
        data warnings of the batches are raised again after the last, in the order of their text (as Spark's
        partitions')."""
        with resource_errors(f"the Python step {step.name}"):
            self._solve(step, params, options)

    def _solve(self, step: Python, params: dict[str, object], options: Options) -> None:
        keyed = {name: key for name, key in step.partition_by.items() if name in step.reads}
        counts = {name: self.execute(f"SELECT count(*) FROM {self._from(name)}")[0][0] for name in keyed}
        rows = sum(counts.values())
        batch_rows = self.batch_rows or self._batch_rows()
        if rows <= batch_rows:
            self.batches_solved.pop(step.name, None)
            step.solve(self.con, params, options)
            return
        whole = {name: self._input(name) for name in step.reads if name not in keyed}
        # a key's first column splits the rows of every keyed table alike, into ranges of about batch_rows rows
        # of the largest (contiguous runs of their row numbers, where a step numbers its rows in key order)
        columns = {name: key.split(",")[0].strip() for name, key in keyed.items()}  # the plan's own names
        largest = max(counts, key=counts.__getitem__)
        ranges = self._ranges(columns[largest], self._from(largest), -(-rows // batch_rows))
        self.batches_solved[step.name] = len(ranges)
        messages: list[str] = []
        scratch = scratch_connection()
        try:
            for batch, (low, high) in enumerate(ranges):
                tables = {name: self.con.sql(
                    f"SELECT * FROM {self._from(name)} WHERE ($low IS NULL OR {columns[name]} > $low)"
                    f" AND ($high IS NULL OR {columns[name]} <= $high)", params={"low": low, "high": high}
                ).to_arrow_table() for name in keyed}
                written, raised = solve_recorded(step, params, options, {**whole, **tables}, scratch)
                messages += raised
                for name, data in written.items():
                    self._append(name, data, first=batch == 0)
        finally:
            scratch.close()
        for message in sorted(messages):
            warnings.warn(message, DataWarning, stacklevel=2)

    def memory_limit(self) -> float:
        """DuckDB's ``memory_limit`` of the connection in bytes (``--memory-limit``, else DuckDB's default)."""
        (limit,), = self.execute("SELECT current_setting('memory_limit')")  # '1.3 GiB'
        return size_bytes(limit)

    def _batch_rows(self) -> int:
        """The rows of a batch under the connection's ``memory_limit``: its steps' arrays (150–300 bytes a keyed
        row) stay within a fifth of what DuckDB may hold."""
        return max(MIN_BATCH_ROWS, min(MAX_BATCH_ROWS, int(self.memory_limit() / BYTES_PER_BATCH_ROW)))

    def _append(self, name: str, data: pa.Table, first: bool) -> None:
        """Add the rows ``data`` to temp table ``name`` (made of them when ``first``)."""
        if first:
            self.write(name, data)
        else:
            self._from_arrow(f"INSERT INTO {self.quoted(name)}", data)
