"""Label and taxonomy tables read where they are: DuckDB files, PostgreSQL, Parquet/CSV, queries, DataFrames.

A *table source* is one of

- ``duckdb:PATH::[schema.]table``: a table or view of a DuckDB file, attached ``READ_ONLY`` to hiersql's own
  connection while it is read, then detached;
- ``duckdb:PATH::SELECT …``: a query run in hiersql's connection with ``PATH`` attached read-only as the
  current database (one ``SELECT`` statement);
- ``postgresql://user@host:port/db::[schema.]table`` (or ``postgres://``; the part before ``::`` is any libpq
  URI): a table or view read with psycopg in a read-only transaction (``COPY (SELECT …) TO STDOUT``, only the
  columns used) into an Arrow table; ``postgresql://…::SELECT …``: a query read the same way (as a subquery);
- ``sql:SELECT …``: one ``SELECT`` statement run in hiersql's own DuckDB connection (``read_parquet(...)``,
  ``read_csv(...)``, ...);
- a Parquet file, glob (``*.parquet``) or folder of part files (``runs.parquet/``, or ``runs/`` as Spark writes
  it, with ``key=value`` folders read as columns), a CSV file or glob with a header (``*.csv``, read as text);
- a pandas DataFrame, a pyarrow Table, a DuckDB relation, a Spark DataFrame (collected through Arrow);
- ``spark:[db.]table`` and ``spark:SELECT …`` only with the Spark engine, which reads them (and Parquet, and
  Spark DataFrames) itself: :mod:`hiersql.engines.spark.sources`.

In a ``[schema.]table`` name, a part in double quotes is taken literally (``""`` is a quote); without quotes
a part ends at the first dot. Names are never spliced into SQL text: DuckDB identifiers are quoted
(:func:`quote`), PostgreSQL's with :class:`psycopg.sql.Identifier`, values and paths are bound as
parameters or quoted as string literals.

Columns are found by role: ``instance``, ``label``, ``score``, ``system`` and ``rank`` for labels,
``parent`` and ``child`` (and ``weight``) for a taxonomy, under the user's names (:class:`Columns`) or the
default names (``instance_id``, ``label``, ``score``, ``system``, ``parent``, ``child``, ``weight``, in any
case; ``rank`` has none: it is read only when named). Ids, labels, systems and node names must be text or
integer columns, scores and ranks numbers or text.

A label's rank within its instance follows one rule for every source (:data:`RANK_ORDER`): the rank column's
values when one is named; else the score, descending; else the order read for a source whose rows have an
order (a text or CSV file, a pandas DataFrame, an Arrow table: :attr:`Table.ordered`); last the label's name.
A SQL table, a query, Parquet and Spark's reads have no row order: without a rank or score column their labels
are ranked by name, whatever the physical order of the rows.

A predictions table with a system column holds one system per distinct value (:func:`expand`); without one,
its system is the name given, or the stem of its file or the name of its table. Nothing is written where the
source is: a DuckDB file is attached read-only, a PostgreSQL transaction is read-only, and everything hiersql
creates lives in its own connection.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import InputError, display, masked

if TYPE_CHECKING:
    import duckdb

SCHEMES = ("duckdb:", "postgresql://", "postgres://", "sql:", "spark:")
DEFAULT_NAMES = {"instance": "instance_id", "label": "label", "score": "score", "system": "system",
                 "parent": "parent", "child": "child", "weight": "weight"}
# The kinds of column each role takes (see _kind).
ROLE_KINDS = {"instance": ("text", "integer"), "label": ("text", "integer"), "system": ("text", "integer"),
              "parent": ("text", "integer"), "child": ("text", "integer"),
              "score": ("number", "integer", "text"), "rank": ("number", "integer", "text"),
              "weight": ("number", "integer")}
_DUCKDB_INTEGERS = {"tinyint", "smallint", "integer", "bigint", "hugeint", "utinyint", "usmallint", "uinteger",
                    "ubigint", "uhugeint"}
_QUERY = re.compile(r"[\s(]*(select|with|from|values|table)\b", re.IGNORECASE)  # (a query in parentheses too)
_attached = iter(range(1, 1 << 62))  # numbers of the attach aliases, unique in the process
PG_PARALLEL_PAGES = 256  # a PostgreSQL table of this many 8 kB pages (2 MB) or more is copied in parallel parts
PG_PARALLEL_MAX = 4  # at most this many parts (and the number of CPUs)
# The order of the labels of an instance, their ranks (``row_number() OVER (... ORDER BY RANK_ORDER)``; DuckDB
# and Spark SQL alike): the rank column's value (``ord``), then the score descending, then, for a row without a
# score of a source that has a row order (``in_order``), its position read (``line``, then ``pos`` within a
# line), last the label. The first row in this order is also the one kept of duplicate (instance, label) rows.
RANK_ORDER = ("ord ASC NULLS LAST, score DESC NULLS LAST, CASE WHEN in_order AND score IS NULL THEN line END"
              " ASC NULLS LAST, pos ASC, label ASC")
RANK_READERS = "pl and the other scoring-tree measures, the HCM's hcm_*"  # the measures that read ranks


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


def _literal(text: str) -> str:
    """A DuckDB string literal (a single quote inside is doubled; DuckDB strings have no other escapes)."""
    return "'" + text.replace("'", "''") + "'"


def is_reference(source: object) -> bool:
    """Whether ``source`` is a string naming a database table or a query (``duckdb:``, ``postgresql://``,
    ``postgres://``, ``sql:``, ``spark:``)."""
    return isinstance(source, str) and source.startswith(SCHEMES)


def is_uri(source: object) -> bool:
    """Whether ``source`` is a string naming a file of another file system by its URI (``hdfs://...``,
    ``s3a://...``, ``file:///...``): a path for Spark to read, not one of this machine's."""
    return isinstance(source, str) and re.match(r"[A-Za-z][A-Za-z0-9+.-]+://", source) is not None


def duckdb_file(source: object) -> Path | None:
    """The file of a ``duckdb:PATH::...`` reference (``None`` for any other source, and for a malformed
    reference, which reading it reports)."""
    if not isinstance(source, str) or not source.startswith("duckdb:"):
        return None
    try:
        return Path(_split_reference(source[len("duckdb:"):], last=False, prefix="duckdb:")[0])
    except InputError:
        return None


def unused_label_column(columns: Columns, truth: Any, predictions: Iterable[Any], format: str) -> str | None:
    """The first label role of ``columns`` that is named where no source it applies to is a table (text files
    have no column names: the name would be left unused), else ``None``. The instance and label columns are
    the truth's and the predictions', the others the predictions'."""
    tables = any(is_table(source, format) for source in predictions)
    for role in ("instance", "label", "score", "system", "rank"):
        if getattr(columns, role) is not None and not (
                tables or role in ("instance", "label") and is_table(truth, format)):
            return role
    return None


def format_unused(format: str, label_sources: Iterable[Any]) -> bool:
    """Whether a label ``format`` other than ``long`` applies to none of ``label_sources``: every one is read by
    its columns (:func:`is_table`) or as it is (label sets, mappings of columns), none is a text file."""
    return format != "long" and all(is_table(source, format) or not isinstance(source, str | Path)
                                    for source in label_sources)


def is_table(source: object, format: str = "long") -> bool:
    """Whether ``source`` is read as a table: a reference, a DataFrame, an Arrow table, a DuckDB relation, a
    Parquet path, glob or folder (:func:`is_parquet`), or (in the ``long`` format) a CSV path or glob."""
    if is_reference(source):
        return True
    if isinstance(source, str | Path):
        return is_parquet(source) or (Path(source).suffix.lower() == ".csv" and format == "long")
    return hasattr(source, "columns") or _is_arrow(source)


def is_parquet(source: object) -> bool:
    """Whether path ``source`` names Parquet: a ``.parquet`` file, glob or folder, or a folder of ``.parquet``
    part files under any name (Spark's ``df.write.parquet("runs")``; ``key=value`` partition folders too)."""
    if not isinstance(source, str | Path) or is_reference(source):
        return False
    path = Path(source)
    return path.suffix.lower() == ".parquet" or (path.is_dir() and next(path.rglob("*.parquet"), None) is not None)


def _is_arrow(source: object) -> bool:
    return hasattr(source, "schema") and hasattr(source, "column_names") and hasattr(source, "num_rows")


def _is_frame(source: object) -> bool:
    """Whether ``source`` is a pandas-like DataFrame (not a DuckDB relation or a Spark DataFrame, which have
    columns too)."""
    return hasattr(source, "columns") and hasattr(source, "dtypes") and not hasattr(source, "fetchall") \
        and not _is_arrow(source) and not _is_spark(source)


def _is_spark(source: object) -> bool:
    """Whether ``source`` is a Spark DataFrame (see :mod:`hiersql.engines.spark.sources`)."""
    return hasattr(source, "sparkSession") and hasattr(source, "createOrReplaceTempView")


def default_name(source: object) -> str:
    """How messages name a source that is not a file or a reference."""
    if hasattr(source, "fetchall"):
        return "<relation>"
    if _is_arrow(source):
        return "<Arrow table>"
    if _is_spark(source):
        return "<Spark DataFrame>"
    if isinstance(source, Mapping):
        return "<columns>"
    return "<DataFrame>" if _is_frame(source) else "<label sets>"


# ---------------------------------------------------------------------- names
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


def _split_reference(ref: str, last: bool, prefix: str = "") -> tuple[str, str]:
    """``LOCATION::REST`` of a reference (at the first ``::``, or the ``last`` one) after its ``prefix``
    (``duckdb:``), which messages show too."""
    where = display(prefix + ref)
    k = ref.rfind("::") if last else ref.find("::")
    if k < 0 or not ref[k + 2:].strip():
        raise InputError("expected LOCATION::[schema.]table", where)
    return ref[:k], ref[k + 2:]


# ---------------------------------------------------------------------- tables
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
        kind = self.kinds[self.names.index(found[0])]
        if kind != "null" and kind not in ROLE_KINDS[role]:
            type_name = self.types[self.names.index(found[0])]
            raise InputError(f"column {found[0]!r} ({role}) has type {type_name}; expected"
                             f" {' or '.join(ROLE_KINDS[role])}", self.where)
        return found[0]


def open_table(con: duckdb.DuckDBPyConnection, source: Any, name: str | None = None, role: str = "label") -> Table:
    """Open a table source (see the module docstring) in ``con``; ``name`` names it in messages instead of
    its reference; ``role`` (``label`` or ``taxonomy``) names a file in messages. Close the result once it
    is read."""
    import duckdb

    if isinstance(source, str) and source.startswith("duckdb:"):
        return _duckdb_file(con, source, name)
    if isinstance(source, str) and source.startswith(("postgresql://", "postgres://")):
        return _postgres(con, source, name)
    if isinstance(source, str) and source.startswith("spark:"):
        raise InputError("a spark: table is read by Spark: evaluate with --engine spark", name or source)
    if isinstance(source, str) and source.startswith("sql:"):
        where = name or source
        try:
            rel = con.sql(_one_select(con, source[4:], where))
        except duckdb.Error as exc:
            raise InputError(f"query failed ({_first_line(exc)})", where) from None
        return _relation(con, rel, where)
    if isinstance(source, str | Path):
        where = name or str(source)
        path = str(source)
        parquet = is_parquet(path)
        glob = any(ch in path for ch in "*?[")
        if parquet and Path(path).is_dir():  # a folder of part files, as Spark writes them
            path = str(Path(path) / "**" / "*.parquet")
        elif not glob:
            if not Path(path).is_file():
                raise InputError("file not found", where)
            if Path(path).stat().st_size == 0:
                raise InputError(f"{role} file is empty", where)
        if not parquet and not glob:
            table = _csv_table(con, Path(path), where, role)
        else:
            try:
                rel = (con.read_parquet(path, hive_partitioning=True) if parquet
                       else con.read_csv(path, header=True, all_varchar=True))
                table = _relation(con, rel, where, keyed=False, ordered=not parquet)
            except Exception as exc:  # duckdb.Error: no file matches the glob, not Parquet, ...
                raise InputError(f"cannot read file ({_first_line(exc)})", where) from None
        table.stem, table.first_line = Path(str(source)).stem, 1 if parquet else 2
        return table
    where = name or default_name(source)
    if _is_arrow(source) or _is_frame(source) or _is_spark(source):
        check_column_names(source.schema.names if _is_arrow(source) else source.columns, where)
    if _is_arrow(source):
        return _relation(con, con.from_arrow(source), where, keyed=False, ordered=True)
    if _is_spark(source):  # collected: outside the Spark engine, hiersql reads it (hiersql.engines.spark.sources)
        return _relation(con, con.from_arrow(source.toArrow()), where, keyed=False)
    if hasattr(source, "fetchall"):  # a DuckDB relation, perhaps of another connection
        return _relation(con, source, where, keyed=False)
    return _relation(con, con.from_df(source), where, keyed=False, ordered=True)


def _csv_table(con: duckdb.DuckDBPyConnection, path: Path, where: str, role: str) -> Table:
    """A CSV file as a table of text columns named by its header, read once into a temp table of ``con``:
    a ragged row or a line that is not UTF-8 is an error naming its line (:func:`read_error`), and the
    rows are not parsed again by each query of the store."""
    import duckdb

    header, rel = read_csv_rows(con, path, ",", where, role)
    check_column_names(header, where, 1)
    view, rows = f"_hiersql_source_{next(_attached)}", f"_hiersql_rows_{next(_attached)}"
    con.register(rows, rel)
    try:
        con.execute(f"CREATE TEMP TABLE {quote(view)} AS SELECT "
                    + ", ".join(f"c{i} AS {quote(column)}" for i, column in enumerate(header)) + f" FROM {rows}")
    except duckdb.Error as exc:
        raise read_error(exc, where) from None
    finally:
        con.unregister(rows)

    def drop() -> None:
        from contextlib import suppress

        with suppress(duckdb.Error):  # a transaction that failed: the temp table goes with the connection
            con.execute(f"DROP TABLE IF EXISTS {quote(view)}")

    return Table(where, header, [("VARCHAR", "text")] * len(header), lambda _: quote(view), close=drop,
                 keyed=False, ordered=True)


def check_column_names(names: Iterable[object], where: str, line: int | None = None) -> None:
    """A column name given twice (in any case: DuckDB's names are not case-sensitive) is an error naming it
    (``line``: the header's, of a file): of a DataFrame or an Arrow table, DuckDB would rename the second
    ``label`` to ``label_1`` and read the first alone."""
    seen: set[str] = set()
    for column in names:
        if str(column).lower() in seen:
            raise InputError("column name given twice" + (" in the header" if line else ""), where, line, column)
        seen.add(str(column).lower())


def read_csv_rows(con: duckdb.DuckDBPyConnection, path: Path, sep: str, where: str,
                  role: str = "label") -> tuple[list[str], duckdb.DuckDBPyRelation]:
    """The header of a CSV/TSV file (read here: DuckDB's sniffer takes the last row of a ragged file for the
    header) and a relation of its other rows in VARCHAR columns named by position (``c0``, ``c1``, ...: no
    name from the file enters SQL text); a row with another number of fields than the header fails when
    the relation is read (:func:`read_error` names its line)."""
    import csv

    with path.open("rb") as fh:
        first = fh.readline()
    try:
        header = next(csv.reader([first.decode("utf-8-sig").rstrip("\r\n")], delimiter=sep), [])
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason})", where, 1) from None
    except csv.Error as exc:
        raise InputError(f"cannot read the header ({exc})", where, 1) from None
    if not header:
        raise InputError(f"{role} file has no header", where, 1)
    rel = con.read_csv(str(path), header=False, skiprows=1, sep=sep, quotechar='"', auto_detect=False,
                       columns={f"c{i}": "VARCHAR" for i in range(len(header))}, null_padding=False,
                       max_line_size=1 << 30)
    return header, rel


def read_error(exc: Exception, path: str | Path) -> InputError:
    """DuckDB's multi-line error of its CSV reader as one :class:`InputError` naming the file, the line and
    what is wrong (not UTF-8, a line beyond the maximum size, a wrong number of fields)."""
    text = str(exc)
    line = re.search(r"CSV Error on Line: (\d+)", text)
    original = re.search(r"Original Line: (.*)", text)
    value = original.group(1) if original else None
    if value is not None and len(value) > 80:
        value = value[:80] + "..."
    if "Invalid unicode" in text:
        what, value = "not UTF-8 text", None
    elif size := re.search(r"Maximum line size of (\d+) bytes exceeded\. Actual Size:\s*(\d+)", text):
        what, value = f"line of {size[2]} bytes is longer than the reader's maximum of {size[1]} bytes", None
    elif fields := re.search(r"Expected Number of Columns: (\d+) Found: (\d+)", text):
        what = f"row does not have the {fields[1]} fields of the header"
    else:
        what = f"cannot read file ({text.splitlines()[0] if text else type(exc).__name__})"
    return InputError(what, path, int(line.group(1)) if line else None, value)


def check_frame_scores(df: Any, column: str, where: str) -> None:
    """A NaN in the score ``column`` of a DataFrame is an error, as ``NaN`` in a file is (DuckDB would read
    it as a missing score); ``None`` in an object column is a missing score, as an empty field of a file
    is."""
    import numpy as np

    values = df[next(c for c in df.columns if str(c) == column)].to_numpy()
    if values.dtype.kind == "f":
        nan = np.isnan(values)
    else:
        nan = np.array([isinstance(v, float) and v != v for v in values], dtype=bool)
    if nan.any():
        raise InputError("score is not a number", where, int(np.argmax(nan)) + 1, "nan")


def _relation(con: duckdb.DuckDBPyConnection, rel: Any, where: str, keyed: bool = True, ordered: bool = False
              ) -> Table:
    """A table over a DuckDB relation, registered in ``con`` as a view under a name of hiersql's."""
    import duckdb

    view = f"_hiersql_source_{next(_attached)}"
    try:
        con.register(view, rel)
    except duckdb.InvalidInputException:  # a relation of another connection goes through Arrow
        con.register(view, rel.to_arrow_table())
    return Table(where, list(rel.columns), [_kind(t) for t in rel.types], lambda _: quote(view),
                 close=lambda: con.unregister(view), keyed=keyed, ordered=ordered)


def _kind(duck_type: Any) -> tuple[str, str]:
    """A DuckDB type's name and kind."""
    kind = duck_type.id
    if kind in ("varchar", "enum"):
        return str(duck_type), "text"
    if kind in _DUCKDB_INTEGERS:
        return str(duck_type), "integer"
    if kind in ("float", "double", "decimal"):
        return str(duck_type), "number"
    return str(duck_type), "null" if kind == "null" else "other"


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _one_select(con: duckdb.DuckDBPyConnection, query: str, where: str) -> str:
    """``query`` if it is one SELECT statement (parsed by DuckDB), else an :class:`InputError`."""
    import duckdb

    try:
        statements = con.extract_statements(query)
    except duckdb.Error as exc:
        raise InputError(f"query does not parse ({_first_line(exc)})", where) from None
    if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
        raise InputError("a query source must be one SELECT statement", where, value=query.strip()[:80])
    return query


def _duckdb_file(con: duckdb.DuckDBPyConnection, ref: str, name: str | None) -> Table:
    """``duckdb:PATH::[schema.]table`` or ``duckdb:PATH::SELECT …``, with PATH attached read-only."""
    import duckdb

    path, rest = _split_reference(ref[len("duckdb:"):], last=False, prefix="duckdb:")
    where = name or ref
    if not Path(path).is_file():
        raise InputError("DuckDB file not found", where)
    alias = f"_hiersql_source_{next(_attached)}"
    try:
        con.execute(f"ATTACH {_literal(path)} AS {quote(alias)} (READ_ONLY)")
    except duckdb.Error as exc:
        raise InputError(f"cannot open DuckDB file ({_first_line(exc)})", where) from None

    def detach() -> None:
        con.execute(f"DETACH {quote(alias)}")

    try:
        if _QUERY.match(rest):
            before = con.execute("SELECT current_database()").fetchall()[0][0]
            con.execute(f"USE {quote(alias)}")
            try:  # materialised while the file is the current database
                data = con.sql(_one_select(con, rest, where)).to_arrow_table()
            except duckdb.Error as exc:
                raise InputError(f"query failed ({_first_line(exc)})", where) from None
            finally:
                con.execute(f"USE {quote(before)}")
            detach()
            return _relation(con, con.from_arrow(data), where)
        schema, table = split_name(rest.strip(), where)
        qualified = ".".join(quote(p) for p in (alias, schema, table) if p is not None)
        try:
            rel = con.sql(f"SELECT * FROM {qualified}")
        except duckdb.Error as exc:
            found = con.execute("SELECT count(*) FROM duckdb_tables() WHERE database_name = $a AND table_name = $t"
                                " UNION ALL SELECT count(*) FROM duckdb_views() WHERE database_name = $a"
                                " AND view_name = $t", {"a": alias, "t": table}).fetchall()
            what = "cannot read the table or view" if any(n for (n,) in found) else "no such table"
            raise InputError(f"{what} in the DuckDB file ({_first_line(exc)})", where) from None
    except BaseException:
        detach()
        raise
    return Table(where, list(rel.columns), [_kind(t) for t in rel.types], lambda _: qualified, table, detach)


# ---------------------------------------------------------------------- PostgreSQL
_PG_COLUMNS = (
    "SELECT n.nspname, a.attname, t.typname, t.typcategory,"
    " CASE WHEN c.relkind = 'r' THEN pg_relation_size(c.oid) / current_setting('block_size')::int END"
    " FROM pg_catalog.pg_class c"
    " JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
    " JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped"
    " JOIN pg_catalog.pg_type t ON t.oid = a.atttypid"
    " WHERE c.relname = %(table)s AND c.relkind IN ('r', 'v', 'm', 'p', 'f')"
    " AND n.nspname = coalesce(%(schema)s, (SELECT s FROM unnest(current_schemas(false)) WITH ORDINALITY u(s, k)"
    "   WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_class c2 JOIN pg_catalog.pg_namespace n2"
    "     ON n2.oid = c2.relnamespace WHERE c2.relname = %(table)s AND n2.nspname = u.s) ORDER BY k LIMIT 1))"
    " ORDER BY a.attnum"
)


def _pg_kind(typname: str, category: str) -> tuple[str, str]:
    """A PostgreSQL type's name and kind."""
    if typname in ("int2", "int4", "int8"):
        return typname, "integer"
    return typname, {"S": "text", "E": "text", "N": "number"}.get(category, "other")


def _pg_split(ref: str) -> tuple[str, str, bool]:
    """``(dsn, rest, is_query)`` of a PostgreSQL reference: split at the first ``::`` followed by a query (a
    query may hold ``::`` casts), else at the last ``::`` (an IPv6 host holds ``::``)."""
    k = ref.find("::")
    while k >= 0:
        if _QUERY.match(ref[k + 2:]):
            return ref[:k], ref[k + 2:], True
        k = ref.find("::", k + 1)
    return *_split_reference(ref, last=True), False


def _postgres(con: duckdb.DuckDBPyConnection, ref: str, name: str | None) -> Table:
    """``postgresql://…::[schema.]table`` or ``postgresql://…::SELECT …``: the column types from the catalog
    (of a query: from its result's description, ``LIMIT 0``) now; ``read(columns)`` copies those columns in a
    read-only, repeatable-read transaction (``COPY (SELECT …) TO STDOUT``, CSV) into an Arrow table of text
    columns registered in ``con`` (NULL and the empty string stay apart). A table of
    :data:`PG_PARALLEL_PAGES` pages or more is copied in page ranges (``ctid``), one connection each,
    sharing the first one's snapshot (``pg_export_snapshot``), the parts joined in page order: the server
    formats rows for COPY on as many cores (GermEval B's 178,000 rows: most of the reading time). A query
    is the user's own SQL, run as a subquery in the read-only transaction (anything but one query fails to
    parse there, and a write is refused by the server)."""
    dsn, rest, is_query = _pg_split(ref)
    where = name or display(ref)
    try:
        import psycopg
        from psycopg import sql
    except ModuleNotFoundError:
        raise InputError("reading PostgreSQL needs psycopg (pip install 'hiersql[postgres]')", where) from None
    schema, table = (None, None) if is_query else split_name(rest.strip(), where, fold=True)
    try:
        pg = psycopg.connect(dsn, connect_timeout=30)
    except psycopg.Error as exc:
        raise InputError(f"cannot connect to PostgreSQL ({masked(_first_line(exc), dsn)})", where) from None
    try:
        pg.read_only, pg.isolation_level = True, psycopg.IsolationLevel.REPEATABLE_READ
        if is_query:
            source: sql.Composable = sql.SQL("({}) AS _hiersql_query").format(sql.SQL(rest.strip().rstrip(";")))
            rows = _pg_query_columns(pg, source)
        else:
            rows = pg.execute(_PG_COLUMNS, {"schema": schema, "table": table}).fetchall()
    except psycopg.Error as exc:
        pg.close()
        raise InputError(f"query failed ({_first_line(exc)})", where) from None
    except BaseException:
        pg.close()
        raise
    if not rows and not is_query:
        pg.close()
        raise InputError("no such table or view in the PostgreSQL database", where)
    if not is_query:
        schema = rows[0][0]
        source = sql.Identifier(schema, table)
    names = [r[1] for r in rows]
    views: list[str] = []

    pages = (rows[0][4] or 0) if rows else 0
    blank_padded = {r[1] for r in rows if r[2] == "bpchar"}  # character(n): its padding is no part of the value

    def read(columns: list[str]) -> str:
        import pyarrow as pa

        try:
            parts = _pg_copy(pg, dsn, source, columns, pages, blank_padded)
        except psycopg.Error as exc:
            raise InputError(f"cannot read the table ({_first_line(exc)})", where) from None
        view = f"_hiersql_source_{next(_attached)}"
        con.register(view, pa.concat_tables([_csv_to_arrow(part, columns) for part in parts]))
        views.append(view)
        return quote(view)

    def close() -> None:
        for view in views:
            con.unregister(view)
        pg.rollback()
        pg.close()

    return Table(where, names, [_pg_kind(r[2], r[3]) for r in rows], read, table, close)


def _pg_query_columns(pg: Any, source: Any) -> list[tuple]:
    """The rows of :data:`_PG_COLUMNS` (without the schema and pages) for the result of a query ``source``."""
    from psycopg import sql

    with pg.cursor() as cur:
        cur.execute(sql.SQL("SELECT * FROM {} LIMIT 0").format(source))
        described = [(c.name, c.type_code) for c in cur.description or []]
    types = dict((oid, (typname, category)) for oid, typname, category in pg.execute(
        "SELECT oid, typname, typcategory FROM pg_catalog.pg_type WHERE oid = ANY(%s)",
        [[oid for _, oid in described]]).fetchall())
    return [(None, column, *types[oid], 0) for column, oid in described]


def _pg_copy(pg: Any, dsn: str, source: Any, columns: list[str], pages: int,
             blank_padded: set[str] = frozenset()) -> list[bytes]:
    """The CSV of ``COPY (SELECT columns FROM source) TO STDOUT`` on ``pg`` (in its transaction; ``source``:
    a table's identifier or a query as a subquery), in page ranges on parallel connections for a table of
    :data:`PG_PARALLEL_PAGES` pages or more. The columns of ``blank_padded`` (``character(n)``) are cast to
    ``text``, which drops their padding, as PostgreSQL compares them."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    import psycopg
    from psycopg import sql

    picked = [sql.SQL("{}::text").format(sql.Identifier(c)) if c in blank_padded else sql.Identifier(c)
              for c in columns]
    select = sql.SQL("SELECT {} FROM {}").format(sql.SQL(", ").join(picked), source)
    n = min(PG_PARALLEL_MAX, os.cpu_count() or 1) if pages >= PG_PARALLEL_PAGES else 1
    bounds = [pages * k // n for k in range(n + 1)]

    def page_range(k: int) -> sql.Composable:  # pages bounds[k] to bounds[k + 1]; the last part to the end
        conditions = ([sql.SQL("ctid >= {}::tid").format(sql.Literal(f"({bounds[k]},0)"))] if k else []) + (
            [sql.SQL("ctid < {}::tid").format(sql.Literal(f"({bounds[k + 1]},0)"))] if k < n - 1 else [])
        return sql.SQL(" WHERE ") + sql.SQL(" AND ").join(conditions) if conditions else sql.SQL("")

    ranges = [page_range(k) for k in range(n)]

    def copy(conn: Any, where: sql.Composable) -> bytes:
        # one process scans from the first page: the rows come in the table's (or the query's) own order,
        # the same at every read (the first bad row a message names), not interleaved by parallel workers nor
        # started where another scan of the table happens to be (ranks do not depend on it: RANK_ORDER)
        conn.execute("SET LOCAL max_parallel_workers_per_gather = 0")
        conn.execute("SET LOCAL synchronize_seqscans = off")
        statement = sql.SQL("COPY ({}{}) TO STDOUT (FORMAT csv)").format(select, where)
        with conn.cursor() as cur, cur.copy(statement) as out:
            return b"".join(bytes(block) for block in out)

    if n == 1:
        return [copy(pg, ranges[0])]
    snapshot = pg.execute("SELECT pg_export_snapshot()").fetchall()[0][0]
    others = []
    try:
        for _ in range(n - 1):
            other = psycopg.connect(dsn, connect_timeout=30)
            others.append(other)
            other.read_only, other.isolation_level = True, psycopg.IsolationLevel.REPEATABLE_READ
            other.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(snapshot)))
        with ThreadPoolExecutor(n) as pool:
            return list(pool.map(copy, [pg, *others], ranges))
    finally:
        for other in others:
            other.rollback()
            other.close()


def _csv_to_arrow(data: bytes, columns: list[str]) -> Any:
    """PostgreSQL's CSV (``COPY … (FORMAT csv)``) as an Arrow table of text columns: an unquoted empty field
    is NULL, a quoted one the empty string."""
    import io

    import pyarrow as pa
    import pyarrow.csv as pcsv

    keys = [f"c{i}" for i in range(len(columns))]  # the user's names may repeat case-insensitively
    table = pcsv.read_csv(
        io.BytesIO(data),
        read_options=pcsv.ReadOptions(column_names=keys),
        parse_options=pcsv.ParseOptions(newlines_in_values=True),
        convert_options=pcsv.ConvertOptions(column_types=dict.fromkeys(keys, pa.string()),
                                            strings_can_be_null=True, quoted_strings_can_be_null=False,
                                            null_values=[""]),
    ) if data else pa.table({k: pa.array([], pa.string()) for k in keys})
    return table.rename_columns(columns)


# ---------------------------------------------------------------------- labels
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


def locate(where: str, line: int | None, role: str, instance_id: str | None) -> tuple[str, int | None]:
    """``(source, line)`` for an :class:`InputError`: a file and its line as they are; a table part as
    ``TABLE, column 'COL', INSTANCE_COL='ID'[, SYSTEM_COL='S']`` (``row N`` when the id is missing)."""
    if isinstance(where, SequenceWhere) and line is not None:
        return f"{where}[{line - 1}]", None
    if not isinstance(where, TableWhere):
        return where, line
    key = f"row {line}" if instance_id is None or instance_id == "" else \
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
        number = {role: f"TRY_CAST({quote(cols[role])} AS DOUBLE)" if role in cols else "NULL::DOUBLE"
                  for role in ("score", "rank")}
        return (f"SELECT {text['instance']} AS instance_id, {text['label']} AS label,"
                f" {text.get('score', 'NULL::VARCHAR')} AS score_text, {number['score']} AS score,"
                f" trim({text.get('system', 'NULL::VARCHAR')}) AS system,"
                f" {text.get('system', 'NULL::VARCHAR')} AS system_text,"
                f" {text.get('rank', 'NULL::VARCHAR')} AS rank_text, {number['rank']} AS ord,"
                f" row_number() OVER () + {self.table.first_line - 1:d} AS line, 1 AS pos,"
                f" {str(self.table.ordered).lower()} AS in_order FROM {self.table.read(used)}")

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
            raise InputError("the table has no rows, so no system", table.where)
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
    """How messages name one system of a label table: by row key (:class:`TableWhere`) or by row number."""
    table, columns = labels.table, labels.columns
    if table.keyed:
        return TableWhere(table.where, columns, system)
    return table.where if system is None else f"{table.where} ({columns['system']}={system!r})"


def _systems(con: duckdb.DuckDBPyConnection, labels: LabelTable) -> list[str]:
    """The distinct values of the system column, sorted; a NULL or empty one is an error naming its row, and
    so are two values that are one system once the spaces around them are stripped (:func:`check_spellings`)."""
    rows = labels.rows()
    bad = con.execute(f"SELECT instance_id, line, system FROM ({rows}) WHERE system IS NULL OR system = ''"
                      " ORDER BY line LIMIT 1").fetchall()
    if bad:
        where = _part_where(labels, None)
        raise InputError("missing system (NULL or empty)", *locate(where, bad[0][1], "system", bad[0][0]),
                         value=bad[0][2])
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


# ---------------------------------------------------------------------- taxonomy
def edge_rows(source: Any, parent: str | None = None, child: str | None = None
              ) -> tuple[list[tuple], str, list[str], bool]:
    """The edges of a taxonomy table: ``(parent, child[, weight])`` rows as text (and the weight as read),
    how messages name the table, the column names (in a private in-memory DuckDB connection), and whether
    messages name a row by its key (a database table or a query: its rows have no numbers). A table without a
    row order (:attr:`Table.ordered`: a SQL table, a query, Parquet) gives its edges sorted by parent and child,
    so that the node order that a DAG's paths and HEMKit's graphs follow is not the order of its rows on disk."""
    import duckdb

    con = duckdb.connect()
    try:
        table = open_table(con, source, role="taxonomy")
        try:
            cols = [table.column("parent", parent, True), table.column("child", child, True)]
            weight = table.column("weight", None, False)
            cols += [weight] if weight else []
            exprs = [f"CAST({quote(c)} AS VARCHAR)" for c in cols[:2]] + [quote(c) for c in cols[2:]]
            order = "" if table.ordered else " ORDER BY 1, 2"
            rows = con.execute(f"SELECT {', '.join(exprs)} FROM {table.read(cols)}{order}").fetchall()
        finally:
            table.close()
        return rows, table.where, [str(c) for c in cols], table.keyed
    finally:
        con.close()
