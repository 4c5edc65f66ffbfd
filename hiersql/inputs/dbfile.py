"""Opening a user's DuckDB file: every way it can fail is an :class:`~hiersql.errors.InputError` naming the
file (a folder, a missing folder, a file that is not a DuckDB database, a lock held by another process)
instead of DuckDB's own message, and a lock held by another process can be waited for."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InputError

if TYPE_CHECKING:
    import duckdb

# A DuckDB database file has "DUCK" at bytes 8-11 of its first block.
MAGIC = b"DUCK"
MAGIC_OFFSET = 8
# How often a held lock is tried again while waiting.
LOCK_POLL_SECONDS = 0.2


def check_file(path: str | Path, where: str, read_only: bool = False) -> None:
    """An :class:`~hiersql.errors.InputError` naming ``where`` unless ``path`` can be a DuckDB database file: a
    folder, a file in a folder that does not exist, a file that is not a DuckDB database (DuckDB 2 opens a CSV,
    text or Parquet file as an in-memory database with a view of it: what is written there is lost), or, when
    ``read_only``, a missing file. A URL (``postgresql://...``) is no path: taken for one, it named a folder
    ``postgresql:`` that does not exist."""
    from .sources import is_uri

    if is_uri(str(path)):
        postgres = str(path).startswith(("postgresql://", "postgres://")) and where.startswith("--")
        raise InputError("takes the path of a DuckDB file, not a URL" + (
            " (hiersql keeps its tables and results in DuckDB; a PostgreSQL job queue is reported by hiersql"
            " report --db URL alone; --engine postgres --postgres-url URL computes in PostgreSQL)"
            if postgres else ""), where)
    file = Path(path)
    if file.is_dir():
        raise InputError("is a folder, not a DuckDB file", where)
    if not file.parent.is_dir():
        raise InputError("folder of the DuckDB file does not exist", where, value=str(file.parent))
    if file.exists():
        with file.open("rb") as fh:
            head = fh.read(MAGIC_OFFSET + len(MAGIC))
        if head[MAGIC_OFFSET:] != MAGIC:
            raise InputError("not a DuckDB database file", where)
    elif read_only:
        raise InputError("DuckDB file not found", where)


def connect(path: str | Path, *, read_only: bool = False, wait: float = 0.0, source: str | None = None
            ) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection to the database file ``path`` (created if missing, unless ``read_only``).

    Parameters
    ----------
    path:
        The database file.
    read_only:
        Open for reading only; the file must then exist.
    wait:
        Seconds to wait for a lock held by another process (``0``: fail at once).
    source:
        How messages name the file (default: ``path``), e.g. ``"--db FILE"``.

    Raises
    ------
    InputError
        ``path`` is a folder, its folder does not exist, it is not a DuckDB file (DuckDB 2 would open a CSV or
        text file as a read-only view of it), it is missing and ``read_only``, or another process holds its
        lock (the message names that process) for longer than ``wait`` seconds.
    """
    import duckdb

    where = source or str(path)
    check_file(path, where, read_only)
    wait = wait if 0 < wait < float("inf") else 0.0  # NaN too: never wait for ever
    deadline = time.monotonic() + wait
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only)
        except duckdb.IOException as exc:
            text = str(exc)
            holder = re.search(r"lock is held in (.+?) \(PID (\d+)\)", text)
            if "Could not set lock" not in text:
                raise InputError(f"cannot open DuckDB file ({text.splitlines()[0]})", where) from None
            if time.monotonic() >= deadline:
                who = f"process {holder.group(2)} ({holder.group(1)})" if holder else "another process"
                hint = f"; waited {wait:g} s" if wait > 0 else ("; wait for it with --wait SECONDS"
                                                                 if where.startswith("--") else "")
                raise InputError(f"DuckDB file is locked by {who}{hint}", where) from None
            time.sleep(LOCK_POLL_SECONDS)
