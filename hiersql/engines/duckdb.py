"""The DuckDB engine: the store's own connection, DuckDB's variants of the queries, parameters bound natively."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from .. import sqlfiles
from ..options import Options
from ..plan import Python
from .base import Engine

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from ..inputs.store import Store


class DuckDBEngine(Engine):
    """DuckDB: a :class:`~hiersql.inputs.store.Store`, a DuckDB connection, or a DuckDB file.

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

    def cursor(self) -> DuckDBEngine:
        """An engine on a second connection to the same database (its own temporary tables), to run beside
        this one in a thread; close it with ``cursor.con.close()``."""
        other = DuckDBEngine(self.con.cursor(), self.tables)
        other._taxonomy = self._taxonomy
        return other

    def execute(self, sql: str) -> list[tuple]:
        cur = self.con.execute(sql)
        return cur.fetchall() if cur.description else []

    def arrow(self, sql: str) -> pa.Table:
        return self.con.sql(sql).to_arrow_table()

    def write(self, name: str, data: pa.Table) -> None:
        self.forget(name)
        self.con.register("_hiersql_write", data)
        try:
            self.con.execute(f"CREATE OR REPLACE TEMP TABLE {self.quoted(name)} AS SELECT * FROM _hiersql_write")
        finally:
            self.con.unregister("_hiersql_write")

    def _materialize(self, name: str, sql: str) -> None:
        self.forget(name)
        temporary = "" if "." in name else "TEMP "
        self.con.execute(f"CREATE OR REPLACE {temporary}TABLE {self.quoted(name)} AS {sql}")

    def stage(self, file: str, query: str, params: Mapping[str, object], done: set[str],
              text: str | None = None) -> None:
        if self.tables:  # renamed tables: the portable queries, rewritten by sqlglot
            super().stage(file, query, params, done, text)
            return
        sql = sqlfiles.composed(file, query, "duckdb", done, text)
        self.forget(query)
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE {query} AS {sql}", sqlfiles.bind(sql, dict(params)))
        done.add(query)

    def solve(self, step: Python, params: dict[str, object], options: Options) -> None:
        step.solve(self.con, params, options)
