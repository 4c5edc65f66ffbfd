"""What a job's unit key hashes: the contents of its sources (a file's bytes, a table's rows as the readers read
them with the job's column keys), and the systems of a predictions table with a system column."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError

if TYPE_CHECKING:
    from ..inputs.tables import Columns

# The column names of table sources (a CSV or Parquet file) by keyword, as the flags of ``hiersql evaluate``
# name them; a predictions table with a system column is one unit per system.
LABEL_COLUMN_KEYS = ("instance_col", "label_col", "score_col", "system_col", "rank_col")  # Store.load's keywords
COLUMN_KEYS = (*LABEL_COLUMN_KEYS, "parent_col", "child_col")


def label_columns(keys: dict[str, Any]) -> Columns:
    """The :class:`hiersql.inputs.tables.Columns` of the label column keys among ``keys``
    (:data:`LABEL_COLUMN_KEYS`)."""
    from ..inputs.tables import Columns

    return Columns(**{key[:-len("_col")]: keys[key] for key in LABEL_COLUMN_KEYS if key in keys})


def table_systems(path: str, fmt: str, columns: dict[str, str], system: str | None, fail
                   ) -> list[tuple[str, str]] | None:
    """The systems of a predictions table with a system column (``system_col``, or a column named
    ``system``), read as the store reads it (:func:`hiersql.inputs.label_tables.expand`): ``(system, SHA-256 of its rows
    by instance, each instance's in rank order)`` (the order of the instances is no part of a system's
    content; that of an instance's labels is, as their ranks), only ``system`` when it is given
    (``NAME=FILE``). ``None`` when the table has no system column, or cannot be read while no ``system_col``
    is given: then it is one unit, whose run says what is wrong (a file's; a table source's is an error now, as
    the system name of its one unit is its table's)."""
    import duckdb

    from ..inputs.label_tables import expand
    from ..inputs.sources import is_reference

    wanted = label_columns(columns)
    con = duckdb.connect()
    tables: list[Any] = []
    try:
        try:
            entries = expand(con, [(system, path, None)], fmt, wanted, True, tables)
        except InputError as exc:
            if columns.get("system_col") or is_reference(path):  # the units cannot be known
                raise fail(f"cannot read the systems of a predictions table ({exc})",
                           path if is_reference(path) else str(Path(path).name)) from None
            return None
        labels = entries[0].source.labels
        if "system" not in labels.columns:
            return None
        digests = dict(con.execute(f"SELECT system, {ROWS_DIGEST} FROM ({labels.rows()}) GROUP BY system"
                                   ).fetchall())
        return [(e.system, digests[e.system]) for e in entries]
    finally:
        for table in tables:
            table.close()
        con.close()


# SHA-256 of label rows (LabelTable.rows) by instance, each instance's in rank order: the order of the
# instances is no part of the content, that of an instance's labels is (their ranks)
ROWS_DIGEST = ("sha256(coalesce(string_agg(concat_ws(chr(31), coalesce(system, chr(0)), coalesce(instance_id,"
                " chr(0)), coalesce(label, chr(0)), coalesce(score_text, chr(0))), chr(30) ORDER BY system,"
                " instance_id, ord, line), ''))")


def content_hash(source: str, role: str, fmt: str, columns: dict[str, str], cache: dict[str, str] | None = None
                 ) -> str:
    """SHA-256 of what a unit reads from ``source`` as its ``role`` (``taxonomy``, ``truth`` or
    ``predictions``): a file's bytes (:func:`file_hash`); the rows of a table source or of a folder of Parquet
    files as the readers read them with the job's ``columns``: a taxonomy's edges (sorted), labels as
    :data:`ROWS_DIGEST` (``cache``: source → hash, for sources shared by many units)."""
    import duckdb

    from ..inputs.label_tables import label_table
    from ..inputs.sources import edge_rows, is_reference, open_table

    if not is_reference(source) and not Path(source).is_dir():
        return file_hash(source, cache)
    key = f"{role}\x00{source}"
    if cache is not None and key in cache:
        return cache[key]
    if role == "taxonomy":
        rows, _, _, _ = edge_rows(source, columns.get("parent_col"), columns.get("child_col"))
        digest = json_digest(sorted(rows, key=repr))
    else:
        con = duckdb.connect()
        try:
            table = open_table(con, source)
            try:
                labels = label_table(table, label_columns(columns), role == "predictions")
                digest = con.execute(f"SELECT {ROWS_DIGEST} FROM ({labels.rows()})").fetchall()[0][0]
            finally:
                table.close()
        finally:
            con.close()
    if cache is not None:
        cache[key] = digest
    return digest


def file_hash(path: str, cache: dict[str, str] | None = None) -> str:
    """SHA-256 of a file's bytes (``cache``: path → hash, for files shared by many units)."""
    if cache is not None and path in cache:
        return cache[path]
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    if cache is not None:
        cache[path] = digest.hexdigest()
    return digest.hexdigest()


def json_digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=list).encode()).hexdigest()
