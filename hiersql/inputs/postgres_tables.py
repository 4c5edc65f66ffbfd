"""PostgreSQL tables and queries as label or taxonomy sources (``postgresql://…::[schema.]table`` or
``::SELECT …``): read with psycopg in a read-only transaction, ``COPY (SELECT …) TO STDOUT`` of only the columns
used, in parallel parts for a large table, into an Arrow table that hiersql's DuckDB connection reads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import InputError, display, masked
from .tables import QUERY, Table, attach_numbers, first_line_of, quote, split_name, split_reference

if TYPE_CHECKING:
    import duckdb


PG_PARALLEL_PAGES = 256  # a PostgreSQL table of this many 8 kB pages (2 MB) or more is copied in parallel parts
PG_PARALLEL_MAX = 4  # at most this many parts (and the number of CPUs)

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
        if QUERY.match(ref[k + 2:]):
            return ref[:k], ref[k + 2:], True
        k = ref.find("::", k + 1)
    return *split_reference(ref, last=True), False


def postgres_table(con: duckdb.DuckDBPyConnection, ref: str, name: str | None) -> Table:
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
    except ModuleNotFoundError:
        raise InputError("reading PostgreSQL needs psycopg (pip install 'hiersql[postgres]')", where) from None
    schema, table = (None, None) if is_query else split_name(rest.strip(), where, fold=True)
    try:
        pg = psycopg.connect(dsn, connect_timeout=30)
    except psycopg.Error as exc:
        raise InputError(f"cannot connect to PostgreSQL ({masked(first_line_of(exc), dsn)})", where) from None
    try:
        pg.read_only, pg.isolation_level = True, psycopg.IsolationLevel.REPEATABLE_READ
        source, rows = describe(pg, rest, is_query, where, schema, table)
    except BaseException:
        pg.close()
        raise
    names = [r[1] for r in rows]
    views: list[str] = []

    pages = (rows[0][4] or 0) if rows else 0
    blank_padded = {r[1] for r in rows if r[2] == "bpchar"}  # character(n): its padding is no part of the value

    def read(columns: list[str]) -> str:
        import pyarrow as pa

        try:
            parts = _pg_copy(pg, dsn, source, columns, pages, blank_padded)
        except psycopg.Error as exc:
            raise InputError(f"cannot read the table ({first_line_of(exc)})", where) from None
        view = f"_hiersql_source_{next(attach_numbers)}"
        con.register(view, pa.concat_tables([_csv_to_arrow(part, columns) for part in parts]))
        views.append(view)
        return quote(view)

    def close() -> None:
        for view in views:
            con.unregister(view)
        pg.rollback()
        pg.close()

    return Table(where, names, [_pg_kind(r[2], r[3]) for r in rows], read, table, close)


def describe(pg: Any, rest: str, is_query: bool, where: str, schema: str | None, table: str | None
             ) -> tuple[Any, list[tuple]]:
    """The ``FROM`` item of a source on the connection ``pg`` (a table's identifier, or the query ``rest`` as a
    subquery) and the rows of :data:`_PG_COLUMNS` of its columns (``schema``, ``table``: of the table split
    from ``rest``); a failing query or a missing table is an :class:`~hiersql.errors.InputError` naming
    ``where``."""
    import psycopg
    from psycopg import sql

    try:
        if is_query:
            source: sql.Composable = sql.SQL("({}) AS _hiersql_query").format(sql.SQL(rest.strip().rstrip(";")))
            rows = _pg_query_columns(pg, source)
        else:
            rows = pg.execute(_PG_COLUMNS, {"schema": schema, "table": table}).fetchall()
    except psycopg.Error as exc:
        raise InputError(f"query failed ({first_line_of(exc)})", where) from None
    if not rows and not is_query:
        raise InputError("no such table or view in the PostgreSQL database", where)
    if not is_query:
        source = sql.Identifier(rows[0][0], table)
    return source, rows


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
