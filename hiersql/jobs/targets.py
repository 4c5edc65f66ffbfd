"""Results where the team looks: ``hiersql evaluate --out TARGET`` and a job file's ``results = "TARGET"`` append
the result rows to a table of the user's choice, with the columns of the queue's ``results`` table
(:data:`~hiersql.jobs.schema.RESULT_COLUMNS`: one definition).

Targets (:func:`parse_target`):

- ``duckdb:PATH::[schema.]table``: a DuckDB file (made if missing);
- ``postgresql://...::[schema.]table``: a PostgreSQL table;
- ``parquet:FOLDER``: a folder of Parquet files, one per batch, each written whole under a temporary name and
  renamed (a reader sees it whole or not at all).

A write (:meth:`Target.write`) is one transaction: the table (and its schema) is made if missing, the rows of the
batch's keys (its units' hashes) are deleted, then the batch's rows inserted, so that a unit written again (a
recomputed unit, a batch whose queue transaction rolled back after the target's committed) replaces its rows
instead of adding them twice. A Parquet folder cannot delete: a key that a file of the folder holds already is
skipped (its rows are the same values: the key hashes every input). A table (or a Parquet file of the folder)
without one of the columns is refused, one line naming it and the column; names are quoted as identifiers, values
are parameters.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError, display, masked
from .schema import RESULT_COLUMNS

FORMS = "duckdb:PATH::[schema.]table, postgresql://...::[schema.]table or parquet:FOLDER"
COLUMNS = tuple(name for name, _ in RESULT_COLUMNS)
KEY = COLUMNS.index("key")
WAIT = 10.0  # seconds a job's worker waits for a target DuckDB file that another process holds
_locks: dict[str, threading.Lock] = {}  # target → the lock of this process's writes to it
_locks_lock = threading.Lock()


def parse_target(text: str, where: str, base: Path | None = None) -> str:
    """The target ``text`` checked for its form (:data:`FORMS`) and a well-formed table name, a path made
    absolute (relative to ``base`` when given, else to the current folder); an
    :class:`~hiersql.errors.InputError` naming ``where`` otherwise. Nothing is opened."""
    target = _split(text, where)
    if target[0] == "postgres":
        return text
    path = Path(target[1])
    path = (base / path if base is not None else path).resolve()
    if target[0] == "parquet":
        return f"parquet:{path}"
    return f"duckdb:{path}::{text[len('duckdb:'):].split('::', 1)[1]}"


def _split(text: str, where: str) -> tuple[str, str, str | None, str | None]:
    """``(kind, location, schema, table)`` of a target (``kind``: ``duckdb``, ``postgres`` or ``parquet``)."""
    from ..inputs.tables import QUERY, split_name, split_reference

    if not isinstance(text, str) or not text.strip():
        raise InputError(f"expected {FORMS}", where, value=text)

    def table(rest: str, fold: bool = False) -> tuple[str | None, str]:
        if QUERY.match(rest):
            raise InputError("a results table is a [schema.]table, not a query", where)
        return split_name(rest.strip(), where, fold=fold)

    try:
        if text.startswith("duckdb:"):
            path, rest = split_reference(text[len("duckdb:"):], last=False, prefix="duckdb:")
            if not path:
                raise InputError("expected duckdb:PATH::[schema.]table", where)
            return ("duckdb", path, *table(rest))
        if text.startswith(("postgresql://", "postgres://")):
            dsn, rest = split_reference(text, last=True)
            return ("postgres", dsn, *table(rest, fold=True))
    except InputError as exc:
        raise InputError(exc.message, where, value=display(text)) from None
    if text.startswith("parquet:") and text[len("parquet:"):].strip():
        return "parquet", text[len("parquet:"):], None, None
    raise InputError(f"expected {FORMS}", where, value=display(text))


def open_target(text: str, where: str, wait: float = 0.0) -> Target:
    """The :class:`Target` of ``text`` (:func:`parse_target`'s form), messages naming ``where``; ``wait``: seconds
    to wait for a DuckDB file that another process holds."""
    kind, location, schema, table = _split(text, where)
    if kind == "duckdb":
        return DuckDBTarget(where, location, schema, table or "", wait)
    if kind == "postgres":
        return PostgresTarget(where, location, schema, table or "")
    return ParquetTarget(where, location)


def check_target(text: str, where: str, wait: float = 0.0) -> None:
    """Open the target ``text`` and check it (:meth:`Target.check`) without writing anything."""
    target = open_target(text, where, wait)
    target.check()


def write_results(text: str, rows: Sequence[tuple], where: str | None = None, wait: float = WAIT,
                  missing_only: bool = False) -> None:
    """Write ``rows`` (values of :data:`COLUMNS`) to the target ``text`` in one transaction (:meth:`Target.write`;
    ``missing_only``: only the rows of keys it lacks); the writes of this process's threads to one target take
    turns."""
    with _locks_lock:
        lock = _locks.setdefault(text, threading.Lock())
    with lock:
        open_target(text, where or display(text), wait).write(rows, missing_only)


def _missing(where: str, what: str, found: Sequence[str], other: str = "table, or add the column"
             ) -> InputError | None:
    """An error naming ``what`` (the table or file) and the first column of :data:`COLUMNS` that ``found`` (its
    columns, compared in lower case) lacks; ``None`` when it has them all."""
    have = {c.lower() for c in found}
    missing = [c for c in COLUMNS if c not in have]
    if not missing:
        return None
    return InputError(f"{what} has no column {missing[0]!r} (a results table has the columns {', '.join(COLUMNS)}):"
                      f" give another {other}", where, value=missing[0])


class Target:
    """Where result rows go. ``where``: how messages name it (``--out``, the job file's line)."""

    where: str

    def check(self) -> None:
        """An :class:`~hiersql.errors.InputError` if the target cannot take the rows: a file that is not one of
        its kind, a server out of reach, a table (or Parquet file) without one of :data:`COLUMNS`."""
        raise NotImplementedError

    def write(self, rows: Sequence[tuple], missing_only: bool = False) -> None:
        """Append ``rows`` in one transaction, after deleting those of their keys (``missing_only``, and always
        in a Parquet folder: without the rows of keys it holds already); make the table if missing."""
        raise NotImplementedError


class DuckDBTarget(Target):
    def __init__(self, where: str, path: str, schema: str | None, table: str, wait: float = 0.0) -> None:
        from ..inputs.dbfile import check_file

        self.where, self.path, self.schema, self.table, self.wait = where, path, schema, table, wait
        self.name = f"{schema}.{table}" if schema else table
        check_file(path, where)

    def _connect(self) -> Any:
        from ..inputs.dbfile import connect

        return connect(self.path, wait=self.wait, source=self.where)

    def _columns(self, con: Any) -> list[str] | None:
        """The columns of the table (``None``: no such table); a view of its name is refused."""
        found = con.execute(
            "SELECT table_type FROM information_schema.tables WHERE table_catalog = current_database() AND"
            " lower(table_schema) = lower(coalesce($s, current_schema())) AND lower(table_name) = lower($t)",
            {"s": self.schema, "t": self.table}).fetchall()
        if not found:
            return None
        if found[0][0] != "BASE TABLE":
            raise InputError(f"{self.name!r} is a view, not a table: give a table to append the results to",
                             self.where, value=self.name)
        return [r[0] for r in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_catalog = current_database() AND"
            " lower(table_schema) = lower(coalesce($s, current_schema())) AND lower(table_name) = lower($t)"
            " ORDER BY ordinal_position", {"s": self.schema, "t": self.table}).fetchall()]

    def _check(self, con: Any) -> None:
        columns = self._columns(con)
        if columns is not None:
            error = _missing(self.where, f"table {self.name!r}", columns)
            if error is not None:
                raise error

    def check(self) -> None:
        import duckdb

        if not Path(self.path).exists():
            return
        try:
            with self._connect() as con:
                self._check(con)
        except duckdb.Error as exc:
            raise InputError(f"cannot read the DuckDB file ({_first_line(exc)})", self.where) from None

    def write(self, rows: Sequence[tuple], missing_only: bool = False) -> None:
        import duckdb

        from ..inputs.tables import quote

        if not rows:
            return
        qualified = ".".join(quote(p) for p in (self.schema, self.table) if p is not None)
        try:
            with self._connect() as con:
                con.execute("BEGIN TRANSACTION")
                try:
                    if self.schema is not None:
                        con.execute(f"CREATE SCHEMA IF NOT EXISTS {quote(self.schema)}")
                    self._check(con)
                    con.execute(f"CREATE TABLE IF NOT EXISTS {qualified}"
                                f" ({', '.join(f'{quote(n)} {t}' for n, t in RESULT_COLUMNS)})")
                    keys = {"keys": sorted({r[KEY] for r in rows})}
                    if missing_only:
                        held = {k for (k,) in con.execute(f"SELECT DISTINCT {quote('key')} FROM {qualified} WHERE"
                                                          f" list_contains($keys, {quote('key')})", keys).fetchall()}
                        rows = [r for r in rows if r[KEY] not in held]
                    else:
                        con.execute(f"DELETE FROM {qualified} WHERE list_contains($keys, {quote('key')})", keys)
                    if rows:
                        con.execute(f"INSERT INTO {qualified} ({', '.join(quote(c) for c in COLUMNS)})"
                                    f" SELECT {', '.join(f'unnest(${c})' for c in COLUMNS)}",
                                    {c: list(v) for c, v in zip(COLUMNS, zip(*rows, strict=True), strict=True)})
                except BaseException:
                    con.execute("ROLLBACK")
                    raise
                con.execute("COMMIT")
        except duckdb.Error as exc:
            raise InputError(f"cannot write the results ({_first_line(exc)})", self.where) from None


class PostgresTarget(Target):
    def __init__(self, where: str, dsn: str, schema: str | None, table: str) -> None:
        self.where, self.dsn, self.schema, self.table = where, dsn, schema, table
        self.name = f"{schema}.{table}" if schema else table

    def _connect(self) -> Any:
        try:
            import psycopg
        except ModuleNotFoundError:
            raise InputError("writing to PostgreSQL needs psycopg (pip install 'hiersql[postgres]')",
                             self.where) from None
        try:
            return psycopg.connect(self.dsn, connect_timeout=30)
        except psycopg.Error as exc:
            raise InputError(f"cannot connect to PostgreSQL ({masked(_first_line(exc), self.dsn)})",
                             self.where) from None

    def _schema(self, con: Any) -> str:
        """The table's schema: the one named, else the first of the search path."""
        if self.schema is not None:
            return self.schema
        found = con.execute("SELECT current_schema()").fetchone()[0]
        if found is None:
            raise InputError("the PostgreSQL search path names no schema: name one (::schema.table)", self.where)
        return found

    def _check(self, con: Any, schema: str) -> bool:
        """Whether the table exists (with the columns: else an error)."""
        kind = con.execute("SELECT c.relkind FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON"
                           " n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = %s",
                           (schema, self.table)).fetchall()
        if not kind:
            return False
        if kind[0][0] not in ("r", "p"):
            raise InputError(f"{self.name!r} is not a table: give a table to append the results to", self.where,
                             value=self.name)
        columns = [r[0] for r in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND table_name = %s"
            " ORDER BY ordinal_position", (schema, self.table)).fetchall()]
        error = _missing(self.where, f"table {self.name!r}", columns)
        if error is not None:
            raise error
        return True

    def check(self) -> None:
        import psycopg

        with self._connect() as con:
            try:
                self._check(con, self._schema(con))
            except psycopg.Error as exc:
                raise InputError(f"cannot read the table ({_first_line(exc)})", self.where) from None

    def write(self, rows: Sequence[tuple], missing_only: bool = False) -> None:
        import psycopg
        from psycopg import sql

        if not rows:
            return
        with self._connect() as con:
            try:
                with con.transaction():
                    schema = self._schema(con)
                    table = sql.Identifier(schema, self.table)
                    # two writers that make the table at once would collide on its name: they take turns
                    con.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{schema}.{self.table}",))
                    if not self._check(con, schema):
                        if not con.execute("SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = %s",
                                           (schema,)).fetchall():
                            con.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
                        con.execute(sql.SQL("CREATE TABLE {} ({})").format(table, sql.SQL(", ").join(
                            sql.SQL("{} {}").format(sql.Identifier(n), sql.SQL(t)) for n, t in RESULT_COLUMNS)))
                    keys = (sorted({r[KEY] for r in rows}),)
                    if missing_only:
                        held = {k for (k,) in con.execute(sql.SQL("SELECT DISTINCT {} FROM {} WHERE {} = ANY(%s)")
                                                          .format(sql.Identifier("key"), table, sql.Identifier("key")),
                                                          keys).fetchall()}
                        rows = [r for r in rows if r[KEY] not in held]
                    else:
                        con.execute(sql.SQL("DELETE FROM {} WHERE {} = ANY(%s)").format(table, sql.Identifier("key")),
                                    keys)
                    if rows:
                        with con.cursor() as cur:
                            cur.executemany(sql.SQL("INSERT INTO {} ({}) VALUES ({})").format(
                                table, sql.SQL(", ").join(map(sql.Identifier, COLUMNS)),
                                sql.SQL(", ").join([sql.Placeholder()] * len(COLUMNS))), list(rows))
            except psycopg.Error as exc:
                raise InputError(f"cannot write the results ({masked(_first_line(exc), self.dsn)})",
                                 self.where) from None


# the Arrow types of RESULT_COLUMNS' SQL types
_ARROW_TYPES = {"VARCHAR": "string", "DOUBLE PRECISION": "float64", "TIMESTAMP": "timestamp"}


class ParquetTarget(Target):
    _keys: dict[tuple[str, str, float], set[str]] = {}  # (folder, file, mtime) → its keys (files never change)

    def __init__(self, where: str, folder: str) -> None:
        self.where, self.folder = where, Path(folder)

    def _files(self) -> list[Path]:
        if self.folder.exists() and not self.folder.is_dir():
            raise InputError("is a file, not a folder of Parquet files", self.where, value=str(self.folder))
        if not self.folder.exists():
            if not self.folder.parent.is_dir():
                raise InputError("the folder of the Parquet folder does not exist", self.where,
                                 value=str(self.folder.parent))
            return []
        return sorted(self.folder.glob("*.parquet"))

    def _file_keys(self, file: Path) -> set[str]:
        import pyarrow.parquet as pq

        stamp = (str(self.folder), file.name, file.stat().st_mtime)
        if stamp not in self._keys:
            try:
                names = pq.read_schema(file).names
            except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
                raise InputError(f"cannot read the Parquet file ({_first_line(exc)})", self.where,
                                 value=file.name) from None
            error = _missing(self.where, f"Parquet file {file.name!r}", names, "folder, or remove the file")
            if error is not None:
                raise error
            try:
                keys = pq.read_table(file, columns=["key"]).column("key").to_pylist()
            except (OSError, ValueError) as exc:
                raise InputError(f"cannot read the Parquet file ({_first_line(exc)})", self.where,
                                 value=file.name) from None
            self._keys[stamp] = {k for k in keys if k is not None}
        return self._keys[stamp]

    def check(self) -> None:
        for file in self._files():
            self._file_keys(file)

    def write(self, rows: Sequence[tuple], missing_only: bool = True) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        held: set[str] = set()
        for file in self._files():
            held |= self._file_keys(file)
        rows = [r for r in rows if r[KEY] not in held]
        if not rows:
            return
        types = {"string": pa.string(), "float64": pa.float64(), "timestamp": pa.timestamp("us")}
        schema = pa.schema([(n, types[_ARROW_TYPES[t.replace(" NOT NULL", "")]]) for n, t in RESULT_COLUMNS])
        data = pa.Table.from_pylist([dict(zip(COLUMNS, r, strict=True)) for r in rows], schema=schema)
        stamp = rows[0][COLUMNS.index("created_at")]
        name = f"{stamp:%Y%m%dT%H%M%S%f}-{uuid.uuid4().hex[:8]}.parquet"
        partial = self.folder / f".{name}.partial"
        try:
            self.folder.mkdir(exist_ok=True)
            pq.write_table(data, partial)
            os.replace(partial, self.folder / name)
        except OSError as exc:
            partial.unlink(missing_ok=True)
            raise InputError(f"cannot write the results ({exc.strerror or exc})", self.where,
                             value=str(self.folder / name)) from None
        except BaseException:
            partial.unlink(missing_ok=True)
            raise


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
