"""The staging tables of the label readers, and the checks of what they staged.

Every reader of :mod:`hiersql.inputs.readers` fills the temp tables ``_incoming(src, instance_id, label, line, pos,
score[, score_text], ord, in_order)`` and ``_incoming_instances(src, instance_id, line, in_order)``
(:data:`STAGED`), ``src``
being the position of a source in the list read. Here are those tables, the checks of their rows (missing ids
and labels, bad scores, duplicates, then, with the taxonomy and the truth loaded, unknown labels and predicted
instances without truth: the rules of :mod:`hiersql.inputs.store`), the ranks of the rows kept, numbered as they
are committed (:func:`ranked`), and the warnings of what was cleaned, which the Spark engine's readers
(:mod:`hiersql.engines.spark.sources`) give too.
"""

from __future__ import annotations

import warnings
from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING, NamedTuple

from .. import sqlfiles
from ..errors import DataWarning, InputError
from . import rules
from .arguments import check_option
from .label_tables import locate
from .tables import RANK_ORDER, fault_order, rank_order

if TYPE_CHECKING:
    import duckdb

STAGED = ("_incoming", "_incoming_instances")  # the staging tables every reader fills


class Staged(NamedTuple):
    """What :func:`~hiersql.inputs.readers.stage` read: the name of each source in messages, ``(src, count)`` of
    the sources whose duplicate ``(instance_id, label)`` rows were collapsed, the system of each source
    (predictions), the tables whose labels were ranked by name (:func:`warn_ranked_by_name`), and the labels of the
    header of each wide file, by ``src`` (checked against the taxonomy by :func:`check_staged`, marked by a row or
    not)."""

    wheres: list[str]
    duplicates: list[tuple[int, int]]
    systems: list[str | None]
    by_name: list[str]
    headers: dict[int, list[str]]


# the rows a message names (hiersql.inputs.tables.FAULT_ORDER) among the staged labels and the staged instances
_LABEL_ROWS = fault_order("line", "pos", "instance_id", "label")
_INSTANCES = fault_order("line", "instance_id")


def temp_table(con: duckdb.DuckDBPyConnection, table: str, sql: str, params: dict[str, object] | None = None) -> None:
    con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS {sql}", params or {})


def first_row(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, object] | None = None) -> tuple | None:
    """The first row of a query (the result is fetched completely, as DuckDB requires)."""
    rows = con.execute(sql, params or {}).fetchall()
    return rows[0] if rows else None


def incoming(con: duckdb.DuckDBPyConnection, rows: str, params: dict[str, object] | None = None,
              ordered: bool = False) -> None:
    """The staging table ``_incoming``: the ``rows`` of a reader (``src, instance_id, label, line, pos,
    score[, score_text]``, and, when ``ordered``, ``ord`` and ``in_order``: the value of a table's rank column
    and whether its rows have an order; else none and an order)."""
    if not ordered:
        rows = f"SELECT *, NULL::DOUBLE AS ord, true AS in_order FROM ({rows})"
    temp_table(con, "_incoming", rows, params)


def ranked(con: duckdb.DuckDBPyConnection) -> str:
    """SQL of the rows of ``_incoming`` with their ``rank``: each one's position within its instance by
    :data:`~hiersql.inputs.tables.RANK_ORDER`, numbered when the rows are committed (after duplicates and unknown
    labels are left out: 1 .. n). The keys that are the same in every staged row (no rank column: ``ord``; no
    score: ``score``; no row without a score in a source with a row order: ``line``; one label a row: ``pos``)
    are left out of the sort (:func:`~hiersql.inputs.tables.rank_order`): the same ranks, and DuckDB sorts on
    every key it is given."""
    ord_, score, line, pos = first_row(
        con, "SELECT bool_or(ord IS NOT NULL), bool_or(score IS NOT NULL), bool_or(in_order AND score IS NULL),"
        " bool_or(pos <> 1) FROM _incoming")
    constant = [key for key, varies in (("ord", ord_), ("score", score), ("line", line), ("pos", pos)) if not varies]
    return (f"SELECT *, row_number() OVER (PARTITION BY src, instance_id ORDER BY {rank_order(constant)}) AS rank"
            " FROM _incoming")


def drop_staged(con: duckdb.DuckDBPyConnection) -> None:
    """Drop the staging tables once their rows are committed: DuckDB holds them within its memory limit."""
    for table in (*STAGED, "_incoming_systems", "raw_lines"):
        con.execute(f"DROP TABLE IF EXISTS temp.main.{table}")


def set_aside(con: duckdb.DuckDBPyConnection, suffix: str, back: bool = False) -> None:
    """Keep the staging tables aside as ``_incoming{suffix}`` (or bring them ``back``)."""
    for table in STAGED:
        old, new = (f"{table}{suffix}", table) if back else (table, f"{table}{suffix}")
        con.execute(f"DROP TABLE IF EXISTS {new}")
        con.execute(f"ALTER TABLE {old} RENAME TO {new}")


def check_rows(con: duckdb.DuckDBPyConnection, wheres: list[str]) -> None:
    """Missing ids or labels and bad scores of a staged table; then ``_incoming_instances``."""
    bad = first_row(
        con, "SELECT src, line, instance_id, label FROM _incoming WHERE instance_id IS NULL OR label IS NULL"
        " OR trim(label) = '' OR lower(label) = 'nan' OR lower(instance_id) = 'nan'"
        f" ORDER BY src, {_LABEL_ROWS} LIMIT 1"
    )
    if bad:
        role = "instance" if bad[2] is None or bad[2].lower() == "nan" else "label"
        raise InputError(rules.MISSING,
                         *locate(wheres[bad[0]], bad[1], role, None if role == "instance" else bad[2], bad[3]),
                         f"instance_id={bad[2]!r}, label={bad[3]!r}")
    check_score_text(con, wheres)
    stage_instances(con)


def stage_instances(con: duckdb.DuckDBPyConnection) -> None:
    """``_incoming_instances`` of the instances of ``_incoming`` (a reader whose rows list every instance)."""
    temp_table(con, "_incoming_instances", "SELECT src, instance_id, min(line) AS line, bool_and(in_order) AS in_order"
               " FROM _incoming GROUP BY src, instance_id")


def check_score_text(con: duckdb.DuckDBPyConnection, wheres: list[str]) -> None:
    bad = first_row(
        con, "SELECT src, line, score_text, instance_id FROM _incoming WHERE score_text IS NOT NULL"
        f" AND score_text <> '' AND (score IS NULL OR isnan(score)) ORDER BY src, {_LABEL_ROWS}, score_text LIMIT 1"
    )
    if bad:
        raise InputError(rules.SCORE_NOT_A_NUMBER, *locate(wheres[bad[0]], bad[1], "score", bad[3]), bad[2])


def check_labels(con: duckdb.DuckDBPyConnection, wheres: list[str]) -> list[tuple[int, int]]:
    """The checks of the staged labels that need no taxonomy (:meth:`hiersql.inputs.store.Store.load` runs them while
    the taxonomy loads): empty ids and labels are errors; duplicate ``(instance_id, label)`` rows are collapsed (counts
    returned, warned by :func:`check_staged`), the first in rank order kept."""
    bad = first_row(
        con, "SELECT src, line, instance_id FROM _incoming_instances WHERE instance_id IS NULL OR instance_id = ''"
        f" ORDER BY src, {_INSTANCES} LIMIT 1"
    )
    if bad:
        raise InputError(rules.EMPTY_INSTANCE, *locate(wheres[bad[0]], bad[1], "instance", None), bad[2])
    bad = first_row(
        con, "SELECT src, line, instance_id FROM _incoming WHERE label IS NULL OR label = ''"
        f" ORDER BY src, {_LABEL_ROWS} LIMIT 1"
    )
    if bad:
        raise InputError(rules.EMPTY_LABEL, *locate(wheres[bad[0]], bad[1], "label", bad[2]),
                         f"instance_id={bad[2]!r}")
    # equal rows hash alike: as many distinct hashes as rows means no duplicate, found on integers (cheaper
    # than distinct pairs of text); the exact count below only when some hashes repeat
    if first_row(con, "SELECT count(*) = count(DISTINCT hash(src, instance_id, label)) FROM _incoming")[0]:
        return []
    dups = con.execute(
        "SELECT src, count(*) - count(DISTINCT (instance_id, label)) FROM _incoming GROUP BY src"
        " HAVING count(*) > count(DISTINCT (instance_id, label)) ORDER BY src"
    ).fetchall()
    if dups:  # the first in rank order is kept
        temp_table(con, "_incoming", "SELECT * FROM _incoming QUALIFY row_number() OVER (PARTITION BY src,"
                   f" instance_id, label ORDER BY {RANK_ORDER}) = 1")
    return dups


def check_staged(con: duckdb.DuckDBPyConnection, staged: Staged, unknown: str) -> None:
    """Unknown labels (an error, or dropped); warns of the duplicates collapsed.
    Warnings are per source."""
    check_option("unknown", unknown)
    wheres = staged.wheres
    virtual = first_row(
        con, "SELECT src, line, label, instance_id FROM (SELECT i.* FROM _incoming i JOIN nodes n ON n.label = i.label"
        f" AND n.is_virtual) ORDER BY src, {_LABEL_ROWS} LIMIT 1"
    )
    if virtual:  # a name hiersql made up, above the taxonomy's parentless nodes: no label can mean it
        raise InputError(rules.VIRTUAL_ROOT, *locate(wheres[virtual[0]], virtual[1], "label", virtual[3]), virtual[2])
    unknowns = con.execute(
        f"SELECT src, first(line ORDER BY {_LABEL_ROWS}), first(label ORDER BY {_LABEL_ROWS}), count(*),"
        f" first(instance_id ORDER BY {_LABEL_ROWS}) FROM (SELECT i.* FROM _incoming i"
        " ANTI JOIN nodes n ON n.label = i.label) GROUP BY src ORDER BY src"
    ).fetchall()
    if unknowns:
        if unknown == "error":
            src, line, label, _, instance = unknowns[0]
            raise InputError(rules.UNKNOWN_LABEL, *locate(wheres[src], line, "label", instance), label)
        con.execute("DELETE FROM _incoming WHERE label NOT IN (SELECT label FROM nodes)")
        for src, _, label, count, _ in unknowns:
            warn_data(f"{wheres[src]}: ignored {count} label(s) not in the taxonomy (first: {label!r})")
    _check_headers(con, staged, unknown)
    for src, count in staged.duplicates:
        warn_data(f"{wheres[src]}: {count} {rules.DUPLICATES}")


def _check_headers(con: duckdb.DuckDBPyConnection, staged: Staged, unknown: str) -> None:
    """The labels of the headers of wide files against the taxonomy, as the labels of the rows (after them,
    which name the line of a row that marks such a column): a column that no row marks names a label too, so
    one not in the taxonomy is an error naming the file's header (line 1), or with ``unknown="ignore"`` a
    warning with the count of such columns; the virtual root is an error either way."""
    if not staged.headers:
        return
    srcs = [src for src, labels in staged.headers.items() for _ in labels]
    labels = [label for labels in staged.headers.values() for label in labels]
    bad = con.execute(
        "SELECT h.src, count(*), first(h.label ORDER BY h.k), bool_or(n.is_virtual), first(h.label ORDER BY"
        " n.is_virtual DESC, h.k) FROM (SELECT unnest($srcs) AS src, unnest($labels) AS label,"
        " generate_subscripts($labels, 1) AS k) h LEFT JOIN nodes n ON n.label = h.label"
        " WHERE n.label IS NULL OR n.is_virtual GROUP BY h.src ORDER BY h.src",
        {"srcs": srcs, "labels": labels},
    ).fetchall()
    for src, count, label, virtual, virtual_label in bad:
        if virtual:
            raise InputError(f"wide header: {rules.VIRTUAL_ROOT}", staged.wheres[src], 1, virtual_label)
        if unknown == "error":
            raise InputError(f"wide header: {rules.UNKNOWN_LABEL}", staged.wheres[src], 1, label)
        warn_data(f"{staged.wheres[src]}: ignored {count} column(s) of the wide header not in the taxonomy"
                  f" (first: {label!r})")


def check_no_truth(con: duckdb.DuckDBPyConnection, wheres: list[str], no_truth: str) -> None:
    check_option("no_truth", no_truth)
    missing = con.execute(
        f"SELECT src, first(line ORDER BY {_INSTANCES}), first(instance_id ORDER BY {_INSTANCES}), count(*) FROM"
        " (SELECT s.* FROM _incoming_instances s ANTI JOIN instances i ON i.instance_id = s.instance_id)"
        " GROUP BY src ORDER BY src"
    ).fetchall()
    if not missing:
        return
    if no_truth == "error":
        src, line, instance, _ = missing[0]
        raise InputError(rules.NO_TRUTH, *locate(wheres[src], line, "instance", instance),
                         instance)
    con.execute("DELETE FROM _incoming WHERE instance_id NOT IN (SELECT instance_id FROM instances)")
    for src, _, instance, count in missing:
        warn_data(f"{wheres[src]}: ignored {count} predicted instance(s) with no truth (first: {instance!r})")


def warn_data(message: str) -> None:
    warnings.warn(message, DataWarning, stacklevel=4)


def warn_unread_system(where: str, column: str) -> None:
    """Warn that table ``where``, read without a system column, has repeated ``(instance_id, label)`` rows and
    a text ``column`` that no role reads and that holds several values: the systems it may name were merged."""
    warn_data(f"{where}: (instance_id, label) rows repeat and column {column!r}, which is not read, holds several"
              f" values: if it names systems, they were merged into one; give --system-col {column} (system_col=)")


def warn_ranked_by_name(by_name: Iterable[str], families: Collection[str] | None = None) -> None:
    """One warning naming the tables whose labels were ranked by name (no row order, no rank or score column:
    :data:`~hiersql.inputs.tables.RANK_ORDER`), the families whose SQL reads the ranks
    (:func:`hiersql.sqlfiles.files_reading`) and ``--rank-col``: of those, the ones among ``families``, the
    families the run computes (``None``: not known, as when the Python API adds a table); none when no family
    of the run reads ranks."""
    tables = list(dict.fromkeys(by_name))
    if not tables:
        return
    readers = [family for family in sqlfiles.files_reading("rank") if families is None or family in families]
    if readers:
        *others, last = readers
        named = f"the {', '.join(others)} and {last} families" if others else f"the {last} family"
        warn_data(f"{', '.join(tables)}: no rank or score column and no row order: the labels of an instance are"
                  f" ranked by name for the measures that read ranks ({named}); give their order with --rank-col"
                  " (rank_col=)")
