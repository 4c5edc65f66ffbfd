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

A predictions table with a system column holds one system per distinct value
(:func:`hiersql.inputs.label_tables.expand`); without one, its system is the name given, or the stem of its
file or the name of its table. Nothing is written where the
source is: a DuckDB file is attached read-only, a PostgreSQL transaction is read-only, and everything hiersql
creates lives in its own connection.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from . import rules
from .postgres_tables import postgres_table
from .tables import (
    QUERY,
    Columns,
    Table,
    attach_numbers,
    first_line_of,
    quote,
    split_name,
    split_reference,
    sql_literal,
)

if TYPE_CHECKING:
    import duckdb

SCHEMES = ("duckdb:", "postgresql://", "postgres://", "sql:", "spark:")
_DUCKDB_INTEGERS = {"tinyint", "smallint", "integer", "bigint", "hugeint", "utinyint", "usmallint", "uinteger",
                    "ubigint", "uhugeint"}


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
        return Path(split_reference(source[len("duckdb:"):], last=False, prefix="duckdb:")[0])
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


# ---------------------------------------------------------------------- tables


def open_table(con: duckdb.DuckDBPyConnection, source: Any, name: str | None = None, role: str = "label") -> Table:
    """Open a table source (see the module docstring) in ``con``; ``name`` names it in messages instead of
    its reference; ``role`` (``label`` or ``taxonomy``) names a file in messages. Close the result once it
    is read."""
    import duckdb

    if isinstance(source, str) and source.startswith("duckdb:"):
        return _duckdb_file(con, source, name)
    if isinstance(source, str) and source.startswith(("postgresql://", "postgres://")):
        return postgres_table(con, source, name)
    if isinstance(source, str) and source.startswith("spark:"):
        raise InputError("a spark: table is read by Spark: evaluate with --engine spark", name or source)
    if isinstance(source, str) and source.startswith("sql:"):
        where = name or source
        try:
            rel = con.sql(_one_select(con, source[4:], where))
        except duckdb.Error as exc:
            raise InputError(f"query failed ({first_line_of(exc)})", where) from None
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
                raise InputError(f"cannot read file ({first_line_of(exc)})", where) from None
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
    view, rows = f"_hiersql_source_{next(attach_numbers)}", f"_hiersql_rows_{next(attach_numbers)}"
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
        raise InputError(rules.SCORE_NOT_A_NUMBER, where, int(np.argmax(nan)) + 1, "nan")


def _relation(con: duckdb.DuckDBPyConnection, rel: Any, where: str, keyed: bool = True, ordered: bool = False
              ) -> Table:
    """A table over a DuckDB relation, registered in ``con`` as a view under a name of hiersql's."""
    import duckdb

    view = f"_hiersql_source_{next(attach_numbers)}"
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


def _one_select(con: duckdb.DuckDBPyConnection, query: str, where: str) -> str:
    """``query`` if it is one SELECT statement (parsed by DuckDB), else an :class:`InputError`."""
    import duckdb

    try:
        statements = con.extract_statements(query)
    except duckdb.Error as exc:
        raise InputError(f"query does not parse ({first_line_of(exc)})", where) from None
    if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
        raise InputError("a query source must be one SELECT statement", where, value=query.strip()[:80])
    return query


# The table functions of DuckDB whose first argument names files (a path, a glob or a list of them).
_FILE_FUNCTIONS = re.compile(r"(read_\w+|\w+_scan|glob|parquet_\w+|sniff_csv)", re.IGNORECASE)


def anchored_query(query: str, base: Path) -> str:
    """``query`` (DuckDB SQL) with its relative file paths made relative to the folder ``base``: the first
    argument of a file-reading table function (``read_parquet('runs/*.parquet')``, ``read_csv([...])``) and a
    file named as a table (``FROM 'runs.parquet'``). ``query`` as given when it names no relative path; a URL
    (``s3://...``) is left alone. A query that sqlglot cannot parse is an :class:`InputError`."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(query, read="duckdb")
    except sqlglot.errors.ParseError as exc:
        raise InputError(f"cannot find the file paths of the query ({first_line_of(exc)})", query.strip()[:80]
                         ) from None
    ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
    changed = False

    def anchor(literal: exp.Expression) -> None:
        nonlocal changed
        for text in [literal, *literal.find_all(exp.Literal)]:
            if isinstance(text, exp.Literal) and text.is_string and "://" not in text.this \
                    and not Path(text.this).is_absolute():
                text.replace(exp.Literal.string(str(base / text.this)))
                changed = True

    for table in list(tree.find_all(exp.Table)):
        source = table.this
        if isinstance(source, exp.Func):
            name = source.name if isinstance(source, exp.Anonymous) else source.sql_name()
            first = source.this if isinstance(source.this, exp.Expression) else (source.expressions or [None])[0]
            if _FILE_FUNCTIONS.fullmatch(name) and isinstance(first, exp.Literal | exp.Array):
                anchor(first)
        elif isinstance(source, exp.Identifier) and source.quoted and not table.db and source.this not in ctes \
                and "://" not in source.this and not Path(source.this).is_absolute() and "." in source.this:
            source.set("this", str(base / source.this))
            changed = True
    return tree.sql(dialect="duckdb") if changed else query


def _duckdb_file(con: duckdb.DuckDBPyConnection, ref: str, name: str | None) -> Table:
    """``duckdb:PATH::[schema.]table`` or ``duckdb:PATH::SELECT …``, with PATH attached read-only."""
    import duckdb

    path, rest = split_reference(ref[len("duckdb:"):], last=False, prefix="duckdb:")
    where = name or ref
    if not Path(path).is_file():
        raise InputError("DuckDB file not found", where)
    alias = f"_hiersql_source_{next(attach_numbers)}"
    try:
        con.execute(f"ATTACH {sql_literal(path)} AS {quote(alias)} (READ_ONLY)")
    except duckdb.Error as exc:
        raise InputError(f"cannot open DuckDB file ({first_line_of(exc)})", where) from None

    def detach() -> None:
        con.execute(f"DETACH {quote(alias)}")

    try:
        if QUERY.match(rest):
            before = con.execute("SELECT current_database()").fetchall()[0][0]
            con.execute(f"USE {quote(alias)}")
            try:  # materialised while the file is the current database
                data = con.sql(_one_select(con, rest, where)).to_arrow_table()
            except duckdb.Error as exc:
                raise InputError(f"query failed ({first_line_of(exc)})", where) from None
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
            raise InputError(f"{what} in the DuckDB file ({first_line_of(exc)})", where) from None
    except BaseException:
        detach()
        raise
    return Table(where, list(rel.columns), [_kind(t) for t in rel.types], lambda _: qualified, table, detach)


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
