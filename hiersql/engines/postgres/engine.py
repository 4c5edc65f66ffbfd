"""The PostgreSQL engine, through psycopg 3."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..base import Engine
from ..dialect import dialect as dialect_of

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa


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

        self.forget(name)
        target = self.quoted(name)
        rel = duckdb.connect().from_arrow(data)
        cols = ", ".join(self.quoted(c) for c in data.column_names)
        with self.conn.transaction(), self.conn.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS {self._own(name)}")
            cur.execute(_create_table(name, rel, self.dialect, temporary="." not in name))
            with cur.copy(f"COPY {target} ({cols}) FROM STDIN") as copy:
                for row in rel.fetchall():
                    copy.write_row(row)
            cur.execute(f"ANALYZE {target}")  # row counts for the planner: without them its guesses are huge

    def _materialize(self, name: str, sql: str) -> None:
        self.forget(name)
        target = self.quoted(name)
        temporary = "" if "." in name else "TEMPORARY "
        with self.conn.transaction(), self.conn.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS {self._own(name)}")
            cur.execute(f"CREATE {temporary}TABLE {target} AS {sql}")
            cur.execute(f"ANALYZE {target}")

    def _own(self, name: str) -> str:
        """Table ``name`` as this engine replaces it: a plain name is its temporary table, ``pg_temp.name``
        (unqualified, ``DROP TABLE`` would find a table of the user's of that name on the search path, a
        ``public.truth``, and drop it); a qualified name is that table."""
        return self.quoted(name if "." in name else f"pg_temp.{name}")

    def close(self) -> None:
        self.conn.close()


def _collate(dialect: str) -> str:
    """``COLLATE "..."`` of the dialect's :attr:`~hiersql.engines.dialect.EngineDialect.text_collation`, or
    ``""`` for a dialect without one."""
    collation = dialect_of(dialect).text_collation
    return f'COLLATE "{collation}"' if collation else ""


C = _collate("postgres")
"""The collation of the engine's text columns (:attr:`~hiersql.engines.dialect.EngineDialect.text_collation`):
an ICU ``en-US`` database summed the per-class values in another order, with other last digits."""


def _pg_arrow_type(oid: int):
    import pyarrow as pa

    return {16: pa.bool_(), 20: pa.int64(), 21: pa.int32(), 23: pa.int32(), 700: pa.float64(),
            701: pa.float64(), 1700: pa.float64(), 25: pa.string(), 1043: pa.string()}.get(oid)



def _type(duck_type: object, dialect: str) -> str:
    """A DuckDB column type written for ``dialect``."""
    from sqlglot import exp

    return exp.DataType.build(str(duck_type), dialect="duckdb").sql(dialect=dialect)


def _create_table(name: str, rel: duckdb.DuckDBPyRelation, dialect: str, temporary: bool = False) -> str:
    """``CREATE [TEMPORARY] TABLE name (...)`` with the columns and types of ``rel``, written for ``dialect``;
    its text columns in the dialect's :attr:`~hiersql.engines.dialect.EngineDialect.text_collation`."""
    rules = dialect_of(dialect)
    collate = _collate(dialect)
    cols = ", ".join(f"{rules.quoted(c)} {_type(t, dialect)}{' ' + collate if collate and str(t) == 'VARCHAR' else ''}"
                     for c, t in zip(rel.columns, rel.types, strict=True))
    return f"CREATE {'TEMPORARY ' if temporary else ''}TABLE {rules.quoted(name)} ({cols})"
