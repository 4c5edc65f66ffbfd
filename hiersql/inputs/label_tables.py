"""Label tables: the columns of a table of labels by role, how its rows are staged (:class:`LabelTable`), its
systems (:func:`expand`: a predictions table with a system column holds one system per distinct value) and how
messages name a row of it (:func:`locate`). The tables themselves are opened by :mod:`hiersql.inputs.sources`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import InputError
from . import rules
from .sources import (
    Columns,
    Table,
    _is_frame,
    check_frame_scores,
    default_name,
    is_table,
    open_table,
    quote,
)
from .tables import MISSING_SYSTEM_ORDER

if TYPE_CHECKING:
    import duckdb


class SequenceWhere(str):
    """How messages name a Python sequence of label sets: ``NAME[i]``, ``i`` the 0-based index of the
    instance (:func:`locate`), as Python names an item; not a line."""


class TableWhere(str):
    """How messages name a part of a label table: the table (and the system, for one system of a table with
    a system column), with the user's column names to name a row by its key (:func:`locate`)."""

    table: str
    columns: dict[str, str]
    system: str | None

    def __new__(cls, table: str, columns: dict[str, str], system: str | None = None) -> TableWhere:
        text = table if system is None else f"{table} ({columns['system']}={system!r})"
        self = super().__new__(cls, text)
        self.table, self.columns, self.system = table, columns, system
        return self


def locate(where: str, line: int | None, role: str, instance_id: str | None, label: str | None = None
           ) -> tuple[str, int | None]:
    """``(source, line)`` for an :class:`InputError`: a file and its line as they are; a table part as
    ``TABLE, column 'COL', INSTANCE_COL='ID'[, SYSTEM_COL='S']`` (``LABEL_COL='LABEL'`` when the id is missing:
    a table has no row order to number its rows by)."""
    if isinstance(where, SequenceWhere) and line is not None:
        return f"{where}[{line - 1}]", None
    if not isinstance(where, TableWhere):
        return where, line
    key = f"{where.columns['label']}={label!r}" if instance_id is None or instance_id == "" else \
        f"{where.columns['instance']}={instance_id!r}"
    if where.system is not None:
        key += f", {where.columns['system']}={where.system!r}"
    return f"{where.table}, column {where.columns.get(role, role)!r}, {key}", None


class Part(NamedTuple):
    """One system of a label table (``system``: its value in the system column; ``None``: no such column,
    the whole table)."""

    labels: LabelTable
    system: str | None


class LabelTable(NamedTuple):
    """A table of labels with its columns by role (``columns["score"]``/``["system"]`` may be absent)."""

    table: Table
    columns: dict[str, str]

    def rows(self) -> str:
        """SQL of the rows as the store stages them: ``instance_id, label, score_text, score, system,
        system_text, rank_text, ord, line, pos, in_order`` (text, but ``score`` and ``ord``, the rank column's
        value, as numbers; ``line``: the row's number in the table's scan order; ``pos``: 1; ``in_order``:
        whether that order ranks labels, :attr:`Table.ordered`; ``ORDER BY`` :data:`RANK_ORDER` ranks them).
        ``system`` is without the spaces around it, as ids and labels are read, ``system_text`` as written:
        ``'shallow '`` is the system ``shallow``, which :func:`_systems` refuses beside a ``'shallow'``."""
        cols = self.columns
        used = list(dict.fromkeys(cols.values()))
        text = {role: f"CAST({quote(col)} AS VARCHAR)" for role, col in cols.items()}
        number = {role: self._number(role) for role in ("score", "rank")}
        return (f"SELECT {text['instance']} AS instance_id, {text['label']} AS label,"
                f" {text.get('score', 'NULL::VARCHAR')} AS score_text, {number['score']} AS score,"
                f" trim({text.get('system', 'NULL::VARCHAR')}) AS system,"
                f" {text.get('system', 'NULL::VARCHAR')} AS system_text,"
                f" {text.get('rank', 'NULL::VARCHAR')} AS rank_text, {number['rank']} AS ord,"
                f" row_number() OVER () + {self.table.first_line - 1:d} AS line, 1 AS pos,"
                f" {str(self.table.ordered).lower()} AS in_order FROM {self.table.read(used)}")

    def _number(self, role: str) -> str:
        """SQL of the number of the ``role`` column: its text under :data:`~hiersql.inputs.rules.NUMBER`'s rule
        (:func:`~hiersql.inputs.rules.value_sql`: a number column cast)."""
        if role not in self.columns:
            return "NULL::DOUBLE"
        column = self.columns[role]
        if self.table.kind(column) == "text":
            return rules.number_sql(f"CAST({quote(column)} AS VARCHAR)")
        return rules.value_sql(quote(column))  # a number column, or one read as text (PostgreSQL's numeric)

    def ranked_by_name(self) -> bool:
        """Whether its labels are ranked by name (:data:`RANK_ORDER`): a table without a row order
        (:attr:`Table.ordered`), a rank column or a score column."""
        return not self.table.ordered and not {"rank", "score"} & set(self.columns)

    def unread_columns(self, con: duckdb.DuckDBPyConnection) -> list[str]:
        """The text columns of the table that no role reads and that hold several values (a column that may
        name systems, when the table has no system column)."""
        unread = [name for name, kind in zip(self.table.names, self.table.kinds, strict=True)
                  if kind == "text" and name not in self.columns.values()]
        return [name for name in unread if con.execute(
            f"SELECT count(DISTINCT {quote(name)}) > 1 FROM {self.table.read([name])}").fetchall()[0][0]]


def label_table(table: Table, columns: Columns, predictions: bool) -> LabelTable:
    """The columns of a label table by role; the score and system columns only for ``predictions``; the rank
    column when named (in a truth table only if it has one: a rank column names the predictions' ranks, and
    true labels are often a set)."""
    roles = {"instance": (columns.instance, True), "label": (columns.label, True)}
    if predictions:  # a truth table may hold such columns too (--score-col names the predictions'): the truth
        roles |= {"score": (columns.score, False), "system": (columns.system, False)}  # has no scores, no systems
    if columns.rank is not None and (predictions or table.has_column(columns.rank)):
        roles["rank"] = (columns.rank, True)
    found = {role: table.column(role, given, required) for role, (given, required) in roles.items()}
    return LabelTable(table, {role: col for role, col in found.items() if col is not None})


class Entry(NamedTuple):
    """One source of a call to the store after :func:`expand`: its system (predictions), the source (a
    :class:`Part` for a table) and how messages name it."""

    system: str | None
    source: Any
    where: str


def expand(
    con: duckdb.DuckDBPyConnection, items: list[tuple[str | None, Any, str | None]], format: str,
    columns: Columns, predictions: bool, tables: list[Table],
) -> list[Entry]:
    """``(system, source, name)`` items → entries, one per system: a predictions table with a system column
    gives one entry per distinct value (sorted), or, given a system name that is one of its values, the entry
    of that system's rows (a file or reference given so for several systems is read once); any other source
    one entry, its system being the name given, or the stem of its file or the name of its table. The tables
    opened are appended to ``tables`` (close them when read, also on error). A system named twice, a table
    with a system column given a name that is none of its values, a missing or empty system value or a source
    with no name are errors."""
    entries: list[Entry] = []
    opened: dict[tuple[str, str | None], LabelTable] = {}  # files and references with a system column
    found: dict[int, list[str]] = {}  # the systems of a table, by the id of its LabelTable
    for system, source, name in items:
        if not is_table(source, format):
            where = str(source) if isinstance(source, str | Path) else name or default_name(source)
            if not isinstance(source, str | Path | Mapping):  # a sequence of label sets: named by index
                where = SequenceWhere(where)
            if predictions and system is None:
                if not isinstance(source, str | Path):
                    raise InputError("a system name is needed for this source", where)
                system = Path(source).stem
            entries.append(Entry(system, source, where))
            continue
        reuse = (str(source), name) if isinstance(source, str | Path) else None
        if reuse in opened:
            labels = opened[reuse]
        else:
            table = open_table(con, source, name)
            tables.append(table)
            labels = label_table(table, columns, predictions)
            if reuse is not None and "system" in labels.columns:
                opened[reuse] = labels
        table = labels.table
        if "score" in labels.columns and _is_frame(source):
            check_frame_scores(source, labels.columns["score"], table.where)
        if "system" not in labels.columns:
            system = system if system is not None else (table.stem if predictions else None)
            if predictions and not system:
                raise InputError("a system name is needed (NAME=SOURCE) or a system column", table.where)
            entries.append(Entry(system, Part(labels, None), _part_where(labels, None)))
            continue
        values = found[id(labels)] = found.get(id(labels)) or _systems(con, labels)
        if not values:
            raise InputError(rules.NO_SYSTEM, table.where)
        if system is not None and system not in values:
            raise InputError(f"the table has a system column ({labels.columns['system']!r}, {len(values)}"
                             " system(s)) whose values name the systems: give it no system name, or one of"
                             " them", table.where, value=system)
        entries += [Entry(v, Part(labels, v), _part_where(labels, v)) for v in values if system in (None, v)]
    if predictions:
        check_distinct_systems((str(entry.system), entry.where) for entry in entries)
    return entries


def check_distinct_systems(systems: Iterable[tuple[str, str]]) -> None:
    """``(system, where it is given)`` pairs: a system given twice is an error naming both places."""
    seen: dict[str, str] = {}
    for system, where in systems:
        if system in seen:
            raise InputError(f"system name given twice (also by {seen[system]})", where, value=system)
        seen[system] = where


def _part_where(labels: LabelTable, system: str | None) -> str:
    """How messages name one system of a label table: by row key (:class:`TableWhere`) when it has no row order,
    else by row number."""
    table, columns = labels.table, labels.columns
    if not table.ordered:  # a database table, a query, Parquet, a relation: no row to number
        return TableWhere(table.where, columns, system)
    return table.where if system is None else f"{table.where} ({columns['system']}={system!r})"


def _systems(con: duckdb.DuckDBPyConnection, labels: LabelTable) -> list[str]:
    """The distinct values of the system column, sorted; a NULL or empty one is an error naming its row, and
    so are two values that are one system once the spaces around them are stripped (:func:`check_spellings`)."""
    rows = labels.rows()
    bad = con.execute(f"SELECT instance_id, line, system, label FROM ({rows}) WHERE system IS NULL OR system = ''"
                      f" ORDER BY {MISSING_SYSTEM_ORDER} LIMIT 1").fetchall()
    if bad:
        where = _part_where(labels, None)
        raise InputError(rules.MISSING_SYSTEM,
                         *locate(where, bad[0][1], "system", bad[0][0], bad[0][3]), value=bad[0][2])
    found = con.execute(f"SELECT system, list(DISTINCT system_text ORDER BY system_text) FROM ({rows})"
                        " GROUP BY system ORDER BY system").fetchall()
    check_spellings(found, labels.columns["system"], labels.table.where)
    return [system for system, _ in found]


def check_spellings(systems: Iterable[tuple[str, list[str]]], column: str, where: str) -> None:
    """``(system, its spellings in the system column)`` pairs: a system spelled two ways (``'shallow'`` and
    ``'shallow '``, one system once stripped) is an error naming ``where`` and both spellings, never two
    systems merged silently."""
    for _, spellings in systems:
        if len(spellings) > 1:
            raise InputError(f"system column {column!r} spells one system two ways, differing only by the spaces"
                             f" around it: {spellings[0]!r} and {spellings[1]!r}", where)
