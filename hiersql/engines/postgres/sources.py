"""Truth and predictions that live in the PostgreSQL engine's own server, read and checked there.

With ``--engine postgres`` (a :class:`~hiersql.engines.PostgresEngine`), when the truth and every predictions source
are tables or views of the engine's server (``postgresql://…::[schema.]table`` whose host, port, database and user
are the engine's: :func:`in_place`), they are read, checked and turned into hiersql's tables (``truth``,
``instances``, ``predictions``, ``systems`` of ``schema.sql``) by SQL run in that server (:func:`load`): nothing
of them leaves it but the counts the checks give, and later the inputs of the families' Python steps. Else
(a file, a query source, another server) every label source is read by the store and copied, as before.

The checks are those of the store, with its messages (:mod:`hiersql.inputs.flagged`, shared with the Spark
engine's readers): a column's role and type, NULL or empty ids, labels and systems, scores and ranks that are not
numbers, the virtual root, labels not in the taxonomy, duplicate ``(instance, label)`` rows (collapsed with a
warning), predicted instances without truth. Ids, labels and systems lose the spaces around them
(:data:`hiersql.options.SPACES`). A table has no row order: the labels of an instance are ranked by
:data:`hiersql.inputs.tables.RANK_ORDER` (the label last, in byte order as DuckDB orders text: every text column
read is ``COLLATE "C"``, :data:`~hiersql.engines.postgres.engine.C`), a row without an instance id is named by its
number in the server's scan (one process, from the first page). A text score or rank column holds a number under
the store's rule (:data:`hiersql.inputs.rules.NUMBER`): a number out of a double's range is not one, where a cast
would raise (:data:`DOUBLE_OR_NULL`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from ...errors import InputError, display
from ...inputs import flagged, label_tables, rules
from ...inputs.arguments import check_option
from ...inputs.postgres_tables import _pg_kind, _pg_split, describe
from ...inputs.staging import warn_ranked_by_name, warn_unread_system
from ...inputs.tables import MISSING_SYSTEM_ORDER, RANK_ORDER, Columns, Table, split_name
from ...options import SPACES
from .engine import C

if TYPE_CHECKING:
    from psycopg import sql

    from ...inputs.store import Store
    from .engine import PostgresEngine

# The double a text of rules.NUMBER is, NULL out of range (PostgreSQL's cast raises there; DuckDB's gives
# infinity or zero, which the store's rule refuses). Called only where the text may be out of range (_FAR).
DOUBLE_OR_NULL = ("CREATE OR REPLACE FUNCTION pg_temp.hiersql_double(text) RETURNS double precision LANGUAGE plpgsql"
                  " IMMUTABLE AS $$BEGIN RETURN CAST($1 AS double precision); EXCEPTION WHEN"
                  " numeric_value_out_of_range THEN RETURN NULL; END$$")
_FAR = "[eE][-+]?[0-9]{3}"  # may be out of range: an exponent of 3 digits or more, or a text of over 20 characters
_SERVER = ("host", "hostaddr", "port", "dbname", "user")


def _server(dsn: str) -> tuple[str | None, ...] | None:
    """The host, address, port, database and user a libpq connection string or URL names (``None``: not one)."""
    from psycopg import conninfo

    try:
        parts = conninfo.conninfo_to_dict(dsn)
    except Exception:  # psycopg.ProgrammingError: not a connection string
        return None
    return tuple(None if parts.get(key) is None else str(parts[key]) for key in _SERVER)


def in_place(dsn: str | None, truth: object, predictions: Iterable[object]) -> bool:
    """Whether the truth and every predictions source are tables (or views) of the server at ``dsn``
    (``postgresql://…::[schema.]table`` naming the same host, address, port, database and user): the sources
    :func:`load` reads in place."""
    if not dsn or _server(dsn) is None:
        return False
    for source in (truth, *predictions):
        if not isinstance(source, str) or not source.startswith(("postgresql://", "postgres://")):
            return False
        where, _, is_query = _pg_split(source)
        if is_query or _server(where) != _server(dsn):
            return False
    return True


class _Source(NamedTuple):
    """A label table opened in the engine's server: the ``SELECT`` of its rows under hiersql's names
    (:func:`_open`), how messages name it, its columns by role, its system (``None``: a system column names
    them), the system name given to a table with a system column, and the text columns no role reads."""

    rows: sql.Composable
    where: str
    columns: dict[str, str]
    system: str | None
    given: str | None
    source: sql.Composable
    unread: list[str]


def _open(engine: PostgresEngine, k: int, item: tuple[str | None, Any, str | None], columns: Columns,
          predictions: bool) -> _Source:
    """Source number ``k`` (``(system, reference, name)``): its columns from the catalog, by role (the rules and
    messages of :func:`hiersql.inputs.label_tables.label_table`), and the ``SELECT`` of its rows: ``_src,
    instance_id, label, score_text, score, rank_text, ord, _ranked, system, _system_text, line, pos, in_order``."""
    from psycopg import sql

    system, ref, name = item
    _, rest, _ = _pg_split(ref)
    where = name or display(ref)
    schema, table = split_name(rest.strip(), where, fold=True)
    source, described = describe(engine.conn, rest, False, where, schema, table)
    kinds = {r[1]: _pg_kind(r[2], r[3]) for r in described}
    found = Table(where, list(kinds), list(kinds.values()), read=lambda _: "", stem=table)
    labels = label_tables.label_table(found, columns, predictions)
    col = {role: sql.Identifier(column) for role, column in labels.columns.items()}

    def text(role: str) -> sql.Composable:
        return sql.SQL(f"CAST({{}} AS text) {C}").format(col[role] if role in col else sql.SQL("NULL"))

    def number(role: str) -> sql.Composable:
        if role not in col:
            return sql.SQL("CAST(NULL AS double precision)")
        type_name, kind = kinds[labels.columns[role]]
        if kind == "text" or type_name == "numeric":  # numeric: beyond a double's range too
            return sql.SQL("CASE WHEN {c} ~ {n} THEN CASE WHEN length({c}) > 20 OR {c} ~ {far} THEN"
                           " pg_temp.hiersql_double({c}) ELSE CAST({c} AS double precision) END END").format(
                c=text(role), n=sql.Literal(rules.NUMBER), far=sql.Literal(_FAR))
        return sql.SQL("CAST({} AS double precision)").format(col[role])

    def trimmed(role: str) -> sql.Composable:
        return sql.SQL("btrim({}, {})").format(text(role), sql.Literal(SPACES))

    by_column = predictions and "system" in col
    named = system if system is not None else (table if predictions else None)
    rows = sql.SQL(
        "SELECT {k} AS _src, {instance} AS instance_id, {label} AS label, {score_text} AS score_text,"
        " {score} AS score, {rank_text} AS rank_text, {ord} AS ord, {ranked} AS _ranked, {system} AS system,"
        " {system_text} AS _system_text, row_number() OVER () AS line, 1 AS pos, FALSE AS in_order FROM {source}"
    ).format(k=sql.Literal(k), instance=trimmed("instance"), label=trimmed("label"), score_text=text("score"),
             score=number("score"), rank_text=text("rank"), ord=number("rank"), ranked=sql.Literal("rank" in col),
             system=trimmed("system") if by_column else sql.SQL(f"CAST({{}} AS text) {C}").format(sql.Literal(named)),
             system_text=text("system"), source=source)
    unread = [n for n, (_, kind) in kinds.items() if kind == "text" and n not in labels.columns.values()]
    return _Source(rows, where, labels.columns, None if by_column else named, system if by_column else None,
                   source, unread)


def _flag(engine: PostgresEngine, name: str, opened: list[_Source], predictions: bool, unknown: str,
          no_truth: str) -> list[dict[str, Any]]:
    """Table ``name``: the rows of ``opened`` with the checks of :data:`hiersql.inputs.flagged.ERRORS` as
    columns, ``_dup``, ``_keep`` (the row is kept) and ``rank`` (its rank among the kept rows of its instance);
    and the groups of :mod:`hiersql.inputs.flagged` of those rows, per source and system."""
    from psycopg import sql

    has_truth = (sql.SQL("EXISTS (SELECT 1 FROM {} AS i WHERE i.instance_id = r.instance_id)").format(
        sql.Identifier(engine.table("instances"))) if predictions else sql.SQL("TRUE"))
    keep = "NOT _dup" + (" AND NOT _unknown" if unknown == "ignore" else "") + (
        " AND NOT _no_truth" if no_truth == "ignore" else "")
    statement = sql.SQL(
        "CREATE TEMPORARY TABLE {name} AS WITH read AS ({rows}),"
        # the nodes joined before the rows are sorted: else PostgreSQL may keep their order by a nested loop over
        # the nodes (a comparison per row and node) rather than a hash join and a second sort
        " noded AS (SELECT read.*, n.label IS NULL AS _not_node, coalesce(n.is_virtual, FALSE) AS _virtual"
        "  FROM read LEFT JOIN {nodes} AS n ON n.label = read.label),"
        " r AS (SELECT *, row_number() OVER (PARTITION BY _src, system, instance_id, label ORDER BY {order}) > 1"
        "  AS _dup FROM noded),"
        " checked AS (SELECT r.*, NOT {has_truth} AS _no_truth,"
        "  (r.instance_id IS NULL OR r.label IS NULL OR r.label = '' OR r.instance_id = ''"
        "   OR lower(r.label) = 'nan' OR lower(r.instance_id) = 'nan') AS _missing,"
        "  (r.score_text IS NOT NULL AND r.score_text <> '' AND (r.score IS NULL OR r.score = 'NaN')) AS _bad_score,"
        "  (r._ranked AND (r.ord IS NULL OR r.ord = 'NaN' OR abs(r.ord) = 'Infinity')) AS _bad_rank FROM r),"
        " kept AS (SELECT *, _not_node AND NOT _dup AS _unknown FROM checked)"
        " SELECT *, CAST(sum(CASE WHEN {keep} THEN 1 ELSE 0 END) OVER (PARTITION BY _src, system, instance_id"
        "  ORDER BY {order} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS integer) AS rank,"
        "  {keep} AS _keep, count(*) OVER (PARTITION BY _src, system, instance_id) AS _labels FROM kept"
    ).format(name=sql.Identifier(name), rows=sql.SQL(" UNION ALL ").join(s.rows for s in opened),
             has_truth=has_truth, order=sql.SQL(RANK_ORDER), nodes=sql.Identifier(engine.table("nodes")),
             keep=sql.SQL(keep))
    flags = [flag for flag, _, _ in flagged.ERRORS]
    groups = sql.SQL(
        "SELECT _src, nullif(system, '') AS system, count(*) FILTER (WHERE _keep) AS kept,"
        " count(*) FILTER (WHERE _dup) AS dups, max(_labels) AS _max_rank,"
        " array_agg(DISTINCT _system_text ORDER BY _system_text)"
        "  FILTER (WHERE _system_text IS NOT NULL) AS _spellings, {flags} FROM {name}"
        " GROUP BY _src, nullif(system, '')"  # a NULL and an empty system: one group
    ).format(name=sql.Identifier(name), flags=sql.SQL(", ").join(
        sql.SQL("count(*) FILTER (WHERE {f}) AS {f}").format(f=sql.Identifier(flag)) for flag in flags))
    with engine.conn.transaction(), engine.conn.cursor() as cur:
        cur.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier("pg_temp", name)))
        cur.execute(DOUBLE_OR_NULL)
        cur.execute(statement)
        cur.execute(groups)
        found = [dict(zip([c.name for c in cur.description], row, strict=True)) for row in cur.fetchall()]
    # the first row of each group without a system and of each flag that has rows, by MISSING_SYSTEM_ORDER (in a
    # group with a system, FAULT_ORDER): a sort of the flagged rows alone, whose memory PostgreSQL bounds
    wanted = [(f, sql.Identifier(f)) for f in flags if any(g[f] for g in found)]
    if predictions and any(g["system"] is None for g in found):
        wanted.append(("_first", sql.SQL("system IS NULL OR system = ''")))
    first: dict[tuple[int, str | None, str], dict[str, Any]] = {}
    if wanted:
        rows = engine.conn.execute(sql.SQL(
            "SELECT DISTINCT ON (_src, _group, _flag) _src, nullif(system, '') AS _group, _flag, instance_id, label,"
            " score_text, rank_text, system FROM {name} CROSS JOIN LATERAL (VALUES {flags}) AS f(_flag, _on)"
            " WHERE _on ORDER BY _src, _group, _flag, {order}").format(
            name=sql.Identifier(name), order=sql.SQL(MISSING_SYSTEM_ORDER), flags=sql.SQL(", ").join(
                sql.SQL("({}, {})").format(sql.Literal(f), on) for f, on in wanted))).fetchall()
        first = {r[:3]: dict(zip(("instance_id", "label", "score_text", "rank_text", "system"), r[3:], strict=True))
                 for r in rows}
    for group in found:
        key = (group["_src"], group["system"])
        group["_first"] = first.get((*key, "_first"))
        for flag in flags:
            group[f"{flag}_first"] = first.get((*key, flag))
    return found


def _checked(engine: PostgresEngine, name: str, opened: list[_Source], predictions: bool, unknown: str,
             no_truth: str) -> tuple[list[tuple[str, str]], list[str]]:
    """Table ``name`` of the flagged rows of ``opened`` (:func:`_flag`), its faults raised and what was cleaned
    warned as the store does: ``([(system, where)], by_name)``, each system with its name in messages (for the
    truth, one entry, none when it has no rows) and the sources whose labels were ranked by name."""
    from psycopg import sql

    check_option("unknown", unknown)
    check_option("no_truth", no_truth)
    groups = _flag(engine, name, opened, predictions, unknown, no_truth)
    by_source: dict[int, dict[str | None, Any]] = {}
    for group in groups:
        by_source.setdefault(group["_src"], {})[group["system"]] = group

    wheres = flagged.system_wheres(opened, by_source, predictions)
    order = list(wheres)
    stats = {key: by_source.get(key[0], {}).get(key[1]) for key in order}
    flagged.raise_first_error(stats, order, wheres, unknown, no_truth)

    def unread_systems(source: _Source) -> None:
        for column in source.unread:
            if engine.conn.execute(sql.SQL("SELECT count(DISTINCT {}) > 1 FROM {}").format(
                    sql.Identifier(column), source.source)).fetchall()[0][0]:
                warn_unread_system(source.where, column)

    def no_truth_instances(key: tuple[int, str | None]) -> int:
        return engine.conn.execute(sql.SQL(
            "SELECT count(DISTINCT instance_id) FROM {} WHERE _no_truth AND _src = %s AND system = %s").format(
            sql.Identifier(name)), [key[0], key[1]]).fetchall()[0][0]

    flagged.warn_cleaned(stats, order, wheres, opened, predictions, unknown, no_truth, unread_systems,
                         no_truth_instances)
    by_name = flagged.ranked_by_name(opened, by_source)
    if not predictions and not groups:
        return [], by_name
    return [(str(system), str(wheres[(k, system)])) for k, system in order], by_name


def load(
    engine: PostgresEngine,
    store: Store,
    taxonomy: Any,
    truth: str,
    predictions: Mapping[str, Any] | Iterable[tuple[str | None, Any]],
    *,
    unknown: str = "error",
    no_truth: str = "error",
    instance_col: str | None = None,
    label_col: str | None = None,
    score_col: str | None = None,
    system_col: str | None = None,
    rank_col: str | None = None,
    on_step: Any = None,
) -> None:
    """Fill the engine's tables with the taxonomy (read by ``store``, a new store, and copied: it is small) and
    the truth and predictions of :func:`in_place`, read and checked in the server (temporary tables), with the
    errors and warnings of :meth:`hiersql.inputs.store.Store.load`. Then ``hiersql.measures.compute(engine, ...)``.
    """
    import pyarrow as pa
    from psycopg import sql

    from ...inputs.readers import prediction_items
    from ...inputs.store import LOAD_STEPS
    from ...inputs.taxonomy import read_taxonomy

    step = on_step or (lambda _: None)
    columns = Columns(instance=instance_col, label=label_col, score=score_col, system=system_col, rank=rank_col)
    items = prediction_items(predictions)
    step(LOAD_STEPS[0])
    store.load_taxonomy(read_taxonomy(taxonomy))
    engine.copy_store(store, ("edges", "nodes", "closure", "pair_counts"))
    step(LOAD_STEPS[1])
    flagged_truth, flagged_predictions = "_hiersql_truth_rows", "_hiersql_prediction_rows"
    found, by_name = _checked(engine, flagged_truth, [_open(engine, 0, (None, truth, None), columns, False)],
                              False, unknown, no_truth)
    if not found:
        raise InputError(rules.EMPTY_TRUTH, truth)
    rows = sql.Identifier(flagged_truth).as_string(engine.conn)
    engine._materialize(engine.table("truth"), f"SELECT instance_id, label, rank FROM {rows} WHERE _keep")
    engine._materialize(engine.table("instances"), f"SELECT DISTINCT instance_id FROM {rows}")
    step(LOAD_STEPS[2])
    opened = [_open(engine, k, item, columns, True) for k, item in enumerate(items)]
    systems, ranked = _checked(engine, flagged_predictions, opened, True, unknown, no_truth) if opened else ([], [])
    label_tables.check_distinct_systems(systems)
    warn_ranked_by_name(by_name + ranked, store.families)
    if opened:
        rows = sql.Identifier(flagged_predictions).as_string(engine.conn)
        engine._materialize(engine.table("predictions"), "SELECT system, instance_id, label, rank, score"
                            f" FROM {rows} WHERE _keep")
    else:
        engine.write(engine.table("predictions"), store.con.table("predictions").to_arrow_table())  # empty
    engine.write(engine.table("systems"), pa.table({"system": pa.array([s for s, _ in systems], pa.string()),
                                                    "source": pa.array([w for _, w in systems], pa.string())}))
    for name in (flagged_truth, flagged_predictions):
        engine.execute(f"DROP TABLE IF EXISTS pg_temp.{name}")
