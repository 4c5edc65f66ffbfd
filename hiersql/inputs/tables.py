"""A table read where it is (:class:`Table`: its columns by name and kind, the SQL that reads them), the columns
of label and taxonomy tables by role (:class:`Columns`), table names split and quoted (:func:`split_name`,
:func:`quote`), the one rule that ranks the labels of an instance (:data:`RANK_ORDER`) and the one that picks
the row a message names (:data:`FAULT_ORDER`). The sources that open
tables are :mod:`hiersql.inputs.sources` and :mod:`hiersql.inputs.postgres_tables`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..errors import InputError, display

DEFAULT_NAMES = {"instance": "instance_id", "label": "label", "score": "score", "system": "system",
                 "parent": "parent", "child": "child", "weight": "weight"}
# The kinds of column each role takes (see _kind).
ROLE_KINDS = {"instance": ("text", "integer"), "label": ("text", "integer"), "system": ("text", "integer"),
              "parent": ("text", "integer"), "child": ("text", "integer"),
              "score": ("number", "integer", "text"), "rank": ("number", "integer", "text"),
              "weight": ("number", "integer")}
QUERY = re.compile(r"[\s(]*(select|with|from|values|table)\b", re.IGNORECASE)  # (a query in parentheses too)
attach_numbers = iter(range(1, 1 << 62))  # numbers of the attach aliases, unique in the process
# The order of the labels of an instance, their ranks (``row_number() OVER (... ORDER BY RANK_ORDER)``; DuckDB
# and Spark SQL alike): the rank column's value (``ord``), then the score descending, then, for a row without a
# score of a source that has a row order (``in_order``), its position read (``line``, then ``pos`` within a
# line), last the label. The first row in this order is also the one kept of duplicate (instance, label) rows.
RANK_KEYS = {"ord": "ord ASC NULLS LAST", "score": "score DESC NULLS LAST",
             "line": "CASE WHEN in_order AND score IS NULL THEN line END ASC NULLS LAST", "pos": "pos ASC",
             "label": "label ASC"}
RANK_ORDER = ", ".join(RANK_KEYS.values())


# Of the rows of one source that break one rule, the one a message names (an error's row, a warning's "first"):
# the first in the source's row order when it has one (``in_order``: a file's lines, a DataFrame's rows), else the
# least by instance, label and the values as written, a missing value first, in code-point order (PostgreSQL's
# text columns are read COLLATE "C"): the same row whatever order a table stores its rows in, on every engine.
FAULT_KEYS = {"line": "CASE WHEN in_order THEN line END ASC NULLS FIRST",
              "pos": "CASE WHEN in_order THEN pos END ASC NULLS FIRST", "instance_id": "instance_id ASC NULLS FIRST",
              "label": "label ASC NULLS FIRST", "score_text": "score_text ASC NULLS FIRST",
              "rank_text": "rank_text ASC NULLS FIRST"}
FAULT_ORDER = ", ".join(FAULT_KEYS.values())
# Of the rows without a system (a NULL or an empty one), the one a message names: FAULT_ORDER, then a NULL first.
MISSING_SYSTEM_ORDER = f"{FAULT_ORDER}, system ASC NULLS FIRST"


def fault_order(*keys: str) -> str:
    """:data:`FAULT_ORDER` on the columns ``keys`` of :data:`FAULT_KEYS` a staged table has (in their order)."""
    return ", ".join(FAULT_KEYS[key] for key in keys)


def rank_order(constant: Iterable[str] = ()) -> str:
    """:data:`RANK_ORDER` without the keys of :data:`RANK_KEYS` named in ``constant``, which the caller knows to
    be the same in every row it ranks (no rank column: ``ord``; no row order: ``line``; one label a row: ``pos``):
    the same ranks, from a sort on fewer keys (DuckDB sorts on every key it is given)."""
    dropped = set(constant)
    return ", ".join(key for name, key in RANK_KEYS.items() if name not in dropped)


@dataclass(frozen=True)
class Columns:
    """The user's column names by role; ``None``: the default name (:data:`DEFAULT_NAMES`), which is
    optional for ``score``, ``system`` and ``weight``; for ``rank``, no rank column (then :data:`RANK_ORDER`
    ranks by score, order read or name)."""

    instance: str | None = None
    label: str | None = None
    system: str | None = None
    score: str | None = None
    rank: str | None = None
    parent: str | None = None
    child: str | None = None


def quote(name: str) -> str:
    """A DuckDB identifier in double quotes (a quote inside is doubled), whatever it holds."""
    return '"' + name.replace('"', '""') + '"'


def sql_literal(text: str) -> str:
    """A DuckDB string literal (a single quote inside is doubled; DuckDB strings have no other escapes)."""
    return "'" + text.replace("'", "''") + "'"


def split_name(text: str, where: str, fold: bool = False) -> tuple[str | None, str]:
    """``[schema.]table`` → ``(schema or None, table)``; a part in double quotes is literal (``""`` is a
    quote), an unquoted part ends at the first dot (``fold``: in lower case, as PostgreSQL folds it)."""
    parts: list[str] = []
    i = 0
    while True:
        if text.startswith('"', i):
            buf, j = [], i + 1
            while True:
                k = text.find('"', j)
                if k < 0:
                    raise InputError("unterminated quoted name", where, value=text)
                if text.startswith('""', k):
                    buf.append(text[j:k + 1])
                    j = k + 2
                    continue
                buf.append(text[j:k])
                i = k + 1
                break
            parts.append("".join(buf))
        else:
            k = text.find(".", i)
            k = len(text) if k < 0 else k
            parts.append(text[i:k].lower() if fold else text[i:k])
            i = k
        if i >= len(text):
            break
        if text[i] != ".":
            raise InputError("expected [schema.]table after '::'", where, value=text)
        i += 1
    if len(parts) > 2 or not all(parts):
        raise InputError("expected [schema.]table after '::'", where, value=text)
    return (parts[0], parts[1]) if len(parts) == 2 else (None, parts[0])


def split_reference(ref: str, last: bool, prefix: str = "") -> tuple[str, str]:
    """``LOCATION::REST`` of a reference (at the first ``::``, or the ``last`` one) after its ``prefix``
    (``duckdb:``), which messages show too."""
    where = display(prefix + ref)
    k = ref.rfind("::") if last else ref.find("::")
    if k < 0 or not ref[k + 2:].strip():
        raise InputError("expected LOCATION::[schema.]table", where)
    return ref[:k], ref[k + 2:]


class Table:
    """A table source opened in hiersql's DuckDB connection: ``where`` names it in messages; ``names``,
    ``types`` and ``kinds`` are its columns, their types as the source names them and their kinds (``text``,
    ``integer``, ``number``, ``null`` or ``other``); ``read(columns)`` gives the SQL of a ``FROM`` item
    holding (at least) those columns; ``close()`` releases what was attached or registered. ``stem`` is the
    default system name; ``keyed``: messages name a row by its key (a database table or a query), else by
    its number counted from ``first_line`` (a DataFrame, a file: 2 for a CSV file's header). ``ordered``: its
    rows have an order of the user's (a CSV file, a DataFrame, an Arrow table), which ranks labels
    (:data:`RANK_ORDER`); a SQL table, a query, Parquet and a relation have none."""

    def __init__(
        self, where: str, names: list[str], types: list[tuple[str, str]], read: Callable[[list[str]], str],
        stem: str | None = None, close: Callable[[], None] | None = None, keyed: bool = True,
        ordered: bool = False,
    ) -> None:
        self.where, self.names, self._read, self.stem = where, names, read, stem
        self.types, self.kinds = [t for t, _ in types], [k for _, k in types]
        self._close, self.keyed, self.first_line, self.ordered = close, keyed, 1, ordered
        self._read_before: dict[tuple[str, ...], str] = {}

    def read(self, columns: list[str]) -> str:
        key = tuple(columns)
        if key not in self._read_before:  # a PostgreSQL table is copied once
            self._read_before[key] = self._read(columns)
        return self._read_before[key]

    def close(self) -> None:
        if self._close is not None:
            self._close()
            self._close = None

    def _matching(self, wanted: str) -> list[str]:
        """The columns named ``wanted``: exactly, else in any case."""
        return [n for n in self.names if n == wanted] or [n for n in self.names if n.lower() == wanted.lower()]

    def kind(self, name: str) -> str:
        """The kind of column ``name`` (one of :attr:`names`)."""
        return self.kinds[self.names.index(name)]

    def has_column(self, wanted: str) -> bool:
        """Whether one column is named ``wanted`` (as :meth:`column` finds it)."""
        return len(self._matching(wanted)) == 1

    def column(self, role: str, given: str | None, required: bool) -> str | None:
        """The column of ``role``: ``given`` (exactly, else in any case if that is unique) or the default
        name in any case; checks its kind. ``None`` when an optional role has no column."""
        wanted = given or DEFAULT_NAMES[role]
        found = self._matching(wanted)
        if len(found) != 1:
            if given is None and not required:
                return None
            what = "no column" if not found else "several columns match"
            if given is None and role in ("instance", "label"):  # as the mappings of columns say it
                what = f"label table needs columns instance_id, label: {what}"
            raise InputError(f"{what} {wanted!r} for the {role}{'' if given else ' (default name)'}; the table"
                             f" has {self.names}", self.where)
        kind = self.kind(found[0])
        if kind != "null" and kind not in ROLE_KINDS[role]:
            type_name = self.types[self.names.index(found[0])]
            raise InputError(f"column {found[0]!r} ({role}) has type {type_name}; expected"
                             f" {' or '.join(ROLE_KINDS[role])}", self.where)
        return found[0]


def first_line_of(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
