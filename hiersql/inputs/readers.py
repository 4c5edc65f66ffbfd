"""Reading label sources into the staging tables of a DuckDB connection.

Every reader fills the temp tables ``_incoming(src, instance_id, label, line, pos, score[, score_text],
ord, rank)`` and ``_incoming_instances(src, instance_id, line, in_order)``
(:data:`~hiersql.inputs.staging.STAGED`), ``src``
being the position of a source in the list read; :mod:`hiersql.inputs.staging` checks them and
:class:`~hiersql.inputs.store.Store` then moves the checked rows into ``truth`` or ``predictions`` in one
transaction. The formats (SPEC §1, §10) are those of :data:`LABEL_FORMATS`, mappings of columns, sequences of label
sets, and the tables of :mod:`hiersql.inputs.sources`; the rules are the module docstring of
:mod:`hiersql.inputs.store`. Every reader strips the spaces around instance ids and labels (DuckDB's ``trim``:
:data:`~hiersql.options.SPACES`), whatever the source, as the text readers of ``readers.sql`` do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import sqlfiles
from ..errors import InputError
from . import label_tables, rules, sources
from .arguments import LABEL_FORMATS, argument_error, check_label_source, label_set_members
from .label_tables import locate
from .staging import (
    STAGED,
    Staged,
    check_labels,
    check_rows,
    check_score_text,
    first_row,
    incoming,
    stage_instances,
    temp_table,
    warn_unread_system,
)
from .tables import FAULT_ORDER, Columns, Table

if TYPE_CHECKING:
    import duckdb

LabelSource = Any  # path, table reference, DataFrame, Arrow table, DuckDB relation, columns or label sets
# Every physical line of the files $paths as one VARCHAR column (no delimiter, quote or escape can occur).
# Lines up to 1 GiB (DuckDB's default maximum is 2 MB; a longer line is reported as such, sources.read_error).
RAW_READ = ("read_csv($paths, columns={'raw': 'VARCHAR'}, delim=chr(31), quote='', escape='', header=false,"
            " auto_detect=false, filename=true, max_line_size=1073741824)")


def stage(con: duckdb.DuckDBPyConnection, items: list[tuple[str | None, LabelSource, str | None]], format: str,
          columns: Columns, predictions: bool) -> Staged:
    """Read every ``(system, source, name)`` into the temp tables ``_incoming(src, instance_id, label,
    line, pos, score, rank)`` and ``_incoming_instances(src, instance_id, line, in_order)``. The sources are first
    expanded (:func:`hiersql.inputs.label_tables.expand`: a predictions table with a system column is one source
    per system); ``src`` is the position of a source in that list. The text files are read together
    (:func:`_stage_text`), and so are the mappings of columns and label sets (:func:`_stage_columns`)
    and the systems of one table (:func:`_stage_table`). Then the checks that need no taxonomy
    (:func:`~hiersql.inputs.staging.check_labels`). Returns the name of each source used in messages (its path, or
    ``name``, or ``<DataFrame>`` and the like), the duplicates collapsed and the system of each source. A ``format``
    that is not one of :data:`LABEL_FORMATS`, a source of no kind the readers know or a system that is not a
    non-empty string (or ``None``) is an :class:`~hiersql.options.OptionError` naming ``format``, ``source``
    or ``system``, before anything is read."""
    check_format(format)
    for system, source, _ in items:
        check_label_source(source)
        if predictions and system is not None and not (isinstance(system, str) and system.strip()):
            raise argument_error("system", "must be a non-empty string (or None for a table with a system column)",
                                 system)
    tables: list[Table] = []
    headers: dict[int, list[str]] = {}
    try:
        entries = label_tables.expand(con, items, format, columns, predictions, tables)
        wheres = [e.where for e in entries]
        parts: dict[int, list[int]] = {}  # the sources of each table, by the table's id
        for i, entry in enumerate(entries):
            if isinstance(entry.source, label_tables.Part):
                parts.setdefault(id(entry.source.labels), []).append(i)
        in_tables = {i for srcs in parts.values() for i in srcs}
        text = [i for i, e in enumerate(entries)
                if isinstance(e.source, str | Path) and _is_text(Path(e.source), format)]
        mappings = [i for i, e in enumerate(entries) if i not in in_tables and _is_columns(e.source)]
        batched = set(text) | set(mappings) | in_tables
        steps = [step for step in (text, mappings) if step] + list(parts.values()) + [
            [i] for i in range(len(entries)) if i not in batched]
        for k, step in enumerate(steps):
            if step is text:
                _stage_text(con, [Path(entries[i].source) for i in text], text, format, wheres)
            elif step is mappings:
                _stage_columns(con, [(i, entries[i].source) for i in mappings], wheres)
            elif step[0] in in_tables:
                _stage_table(con, [(i, entries[i].source) for i in step], wheres)
            else:  # a wide file
                headers[step[0]] = _stage_wide(con, Path(entries[step[0]].source), step[0], wheres)
            if len(steps) > 1:
                for table in STAGED:
                    con.execute(f"DROP TABLE IF EXISTS {table}_{k}")
                    con.execute(f"ALTER TABLE {table} RENAME TO {table}_{k}")
        if len(steps) > 1:
            for table in STAGED:
                temp_table(con, table, " UNION ALL BY NAME ".join(f"SELECT * FROM {table}_{k}"
                                                                  for k in range(len(steps))))
                for k in range(len(steps)):
                    con.execute(f"DROP TABLE {table}_{k}")
        if not predictions and first_row(con, "SELECT count(score) FROM _incoming")[0]:  # the truth has no scores
            incoming(con, "SELECT * EXCLUDE (score), NULL::DOUBLE AS score FROM _incoming", ordered=True)
        duplicates = check_labels(con, wheres)
        if predictions:
            _warn_unread_systems(con, entries, duplicates)
        return Staged(wheres, duplicates, [e.system for e in entries], _ranked_by_name(con, entries), headers)
    finally:
        for opened in tables:
            opened.close()


def _parts(entries: list[label_tables.Entry]) -> dict[int, label_tables.Part]:
    """The parts of label tables among ``entries``, by ``src``."""
    return {src: entry.source for src, entry in enumerate(entries) if isinstance(entry.source, label_tables.Part)}


def _ranked_by_name(con: duckdb.DuckDBPyConnection, entries: list[label_tables.Entry]) -> list[str]:
    """The tables (how messages name them) whose labels are ranked by name
    (:meth:`~hiersql.inputs.label_tables.LabelTable.ranked_by_name`) where the ranks mean something: some
    instance has two labels or more."""
    srcs = {src: part.labels.table.where for src, part in _parts(entries).items() if part.labels.ranked_by_name()}
    if not srcs:
        return []
    several = {src for (src,) in con.execute("SELECT DISTINCT src FROM _incoming WHERE src IN (SELECT unnest($srcs))"
                                             " GROUP BY src, instance_id HAVING count(*) > 1",
                                             {"srcs": list(srcs)}).fetchall()}
    return list(dict.fromkeys(where for src, where in srcs.items() if src in several))


def _warn_unread_systems(con: duckdb.DuckDBPyConnection, entries: list[label_tables.Entry],
                         duplicates: list[tuple[int, int]]) -> None:
    """Warn of a predictions table without a system column whose ``(instance_id, label)`` rows repeat while a
    text column that is not read holds several values: it may name systems, merged into one."""
    parts = _parts(entries)
    for src, _ in duplicates:
        part = parts.get(src)
        if part is None or part.system is not None:
            continue
        for column in part.labels.unread_columns(con):
            warn_unread_system(part.labels.table.where, column)


def check_format(format: Any) -> None:
    """``format`` must be one of :data:`LABEL_FORMATS`."""
    if not isinstance(format, str) or format not in LABEL_FORMATS:
        raise argument_error("format", f"must be one of {', '.join(LABEL_FORMATS)}", format)


def check_label_keywords(label_sources: list[Any], format: Any, columns: Columns) -> None:
    """The keywords of a Python call that reads ``label_sources`` (:class:`~hiersql.api.evaluator.Evaluator`'s
    ``add_truth``, ``add_predictions`` and ``add_predictions_many``), as the command line checks its flags: a
    column keyword (``instance_col``, ...) with no table source it applies to
    (:func:`~hiersql.inputs.sources.unused_label_column`), or a ``format`` other than ``long`` when no source is a
    file it applies to (tables are read by their columns, label sets and mappings as they are), is an
    :class:`~hiersql.options.OptionError` naming the keyword, not a keyword silently left unused."""
    check_format(format)
    role = sources.unused_label_column(columns, None, label_sources, format)
    if role is not None:
        raise argument_error(f"{role}_col", "names a column of table sources (a DataFrame, an Arrow table, a DuckDB"
                             " relation, Parquet, CSV with a header, duckdb:, postgresql://, sql:), and no source it"
                             " applies to is one", getattr(columns, role))
    if sources.format_unused(format, label_sources):
        raise argument_error("format", "names the format of label text files (and of a wide CSV file), and no"
                             " source is one (a table is read by its columns, label sets as they are)", format)


def _stage_text(con: duckdb.DuckDBPyConnection, paths: list[Path], srcs: list[int], format: str,
                wheres: list[str]) -> None:
    """Stage text files (``long`` TSV, ``lines``, ``germeval-*``) with one read and one query per step."""
    _raw_lines(con, paths, srcs)
    q = sqlfiles.queries("readers")
    if format == "long":
        _stage_long(con, q, wheres)
    elif format == "lines":
        incoming(con, f"SELECT src, instance_id, label, line, pos, NULL::DOUBLE AS score FROM ({q['lines_rows']})")
        temp_table(con, "_incoming_instances", q["lines_instances"])
    else:
        _stage_germeval(con, format[-1], q, wheres)


def _raw_lines(con: duckdb.DuckDBPyConnection, paths: list[Path], srcs: list[int]) -> None:
    """Temp table ``raw_lines(src, line, raw)``: every physical line of file ``paths[k]`` as source
    ``srcs[k]``, numbered from 1 in each file, blank lines as NULL. All files are read by one ``read_csv``
    (``filename=true``; a file listed twice is read once); lines keep their order within a file."""
    files = list(dict.fromkeys(str(p) for p in paths))
    try:
        temp_table(
            con, "raw_lines",
            f"WITH r AS (SELECT row_number() OVER () AS n, filename, raw FROM {RAW_READ}),"
            " first_lines AS (SELECT filename, min(n) AS first FROM r GROUP BY filename),"
            " sources AS (SELECT unnest($files) AS filename, unnest($srcs) AS src)"
            " SELECT s.src, r.n - f.first + 1 AS line, r.raw FROM r"
            " JOIN first_lines f ON f.filename = r.filename JOIN sources s ON s.filename = r.filename",
            {"paths": files, "files": [str(p) for p in paths], "srcs": srcs},
        )
    except Exception:  # duckdb.Error: invalid UTF-8, unreadable file, ...: name the file
        for path in files:
            try:
                con.execute(f"SELECT count(*) FROM {RAW_READ}", {"paths": [path]}).fetchall()
            except Exception as exc:
                raise sources.read_error(exc, path) from None
        raise


def _stage_long(con: duckdb.DuckDBPyConnection, q: dict[str, str], wheres: list[str]) -> None:
    incoming(
        con, f"SELECT *, {rules.number_sql('score_text')} AS score FROM ({q['long_rows']})",
    )
    bad = first_row(
        con, "SELECT src, line, raw, n_fields FROM _incoming WHERE n_fields NOT IN (2, 3) ORDER BY src, line LIMIT 1"
    )
    if bad:
        raise InputError(
            f"expected 2 fields (instance_id, label) or 3 (instance_id, label, score), found {bad[3]}",
            wheres[bad[0]], bad[1], bad[2],
        )
    check_score_text(con, wheres)
    stage_instances(con)


def _stage_germeval(con: duckdb.DuckDBPyConnection, subtask: str, q: dict[str, str], wheres: list[str]) -> None:
    temp_table(con, "germeval_lines", q["germeval_lines"])
    bad = first_row(
        con, "SELECT src, line, raw FROM germeval_lines WHERE section IS NULL ORDER BY src, line LIMIT 1"
    )
    if bad:
        raise InputError("line before any 'subtask_a'/'subtask_b' header", wheres[bad[0]], bad[1], bad[2])
    section = f"subtask_{subtask}"
    dup = first_row(
        con, "SELECT src, instance_id, min(line), max(line) FROM germeval_lines WHERE section = $s"
        " GROUP BY src, instance_id HAVING count(*) > 1 ORDER BY src, 3 LIMIT 1", {"s": section},
    )
    if dup:
        raise InputError(f"instance listed twice in {section} (first on line {dup[2]})", wheres[dup[0]],
                         dup[3], dup[1])
    incoming(
        con, f"SELECT src, instance_id, label, line, pos, NULL::DOUBLE AS score FROM ({q['germeval_rows']})",
        {"section": section},
    )
    temp_table(
        con, "_incoming_instances",
        "SELECT src, instance_id, line, true AS in_order FROM germeval_lines WHERE section = $s", {"s": section},
    )


def _stage_wide(con: duckdb.DuckDBPyConnection, path: Path, src: int, wheres: list[str]) -> list[str]:
    """A 0/1 matrix (``.csv``: commas, else tabs): the header (read here, never sniffed: DuckDB's sniffer
    takes the last row of a ragged file for the header) is the instance id column then one column per
    label; DuckDB reads the rows into columns named by position (no name from the file enters the SQL),
    and a row with another number of fields than the header is an error naming its line. Returns the labels
    of the header (:func:`~hiersql.inputs.staging.check_staged` checks them against the taxonomy, a column no row
    marks too)."""
    import duckdb

    sep = "," if path.suffix.lower() == ".csv" else "\t"
    header, rel = sources.read_csv_rows(con, path, sep, wheres[src])
    labels = [h.strip() for h in header[1:]]
    if not labels:
        raise InputError("wide label file needs a header: an instance_id column and one column per label",
                         wheres[src], 1, sep.join(header))
    seen: set[str] = set()
    for label in labels:
        if not label or label in seen:
            raise InputError("wide header has an empty or repeated label", wheres[src], 1, label)
        seen.add(label)
    try:
        _register(con, "_wide_src", rel)
        # DuckDB's reader skips blank lines: row k is the k-th non-blank line after the header
        temp_table(con, "_wide", f"SELECT l.line, w.* EXCLUDE (k) FROM (SELECT row_number() OVER () AS k, * FROM"
                   f" _wide_src) w JOIN (SELECT row_number() OVER () AS k, n AS line FROM (SELECT row_number()"
                   f" OVER () AS n, raw FROM {RAW_READ}) WHERE n > 1 AND raw IS NOT NULL) l USING (k)",
                   {"paths": [str(path)]})
    except duckdb.Error as exc:
        raise sources.read_error(exc, wheres[src]) from None
    finally:
        con.execute("DROP VIEW IF EXISTS _wide_src")
    cells = ", ".join(f"c{i}" for i in range(1, len(header)))
    temp_table(con, "_wide_cells", f"SELECT line, trim(c0) AS instance_id, unnest([{cells}]) AS v,"
               f" generate_subscripts([{cells}], 1) AS pos FROM _wide")
    dup = first_row(con, "SELECT trim(c0), min(line), max(line) FROM _wide GROUP BY trim(c0) HAVING count(*) > 1"
                    " ORDER BY 2 LIMIT 1")
    if dup:  # one row per instance: two would be merged silently
        raise InputError(f"instance listed twice (first on line {dup[1]})", wheres[src], dup[2], dup[0])
    bad = first_row(con, "SELECT line, pos, v FROM _wide_cells WHERE v IS NULL"
                    " OR trim(v) NOT IN ('0', '1', '0.0', '1.0') ORDER BY line, pos LIMIT 1")
    if bad:
        raise InputError(f"wide matrix cell of column {labels[bad[1] - 1]!r} is not 0 or 1", wheres[src],
                         bad[0], bad[2])
    incoming(
        con, "SELECT $src AS src, instance_id, list_extract($labels, pos) AS label, line, pos, NULL::DOUBLE AS score"
        " FROM _wide_cells WHERE trim(v) IN ('1', '1.0')", {"src": src, "labels": labels},
    )
    temp_table(con, "_incoming_instances", "SELECT $src AS src, trim(c0) AS instance_id, line, true AS in_order"
               " FROM _wide", {"src": src})
    con.execute("DROP TABLE _wide_cells")
    return labels


def _stage_table(con: duckdb.DuckDBPyConnection, parts: list[tuple[int, label_tables.Part]], wheres: list[str]) -> None:
    """The systems ``parts`` (``(src, part)``) of one table (:mod:`hiersql.inputs.sources`), in one query: the
    rows of each system, or every row for a table without a system column."""
    labels = parts[0][1].labels
    rows = labels.rows()
    if parts[0][1].system is None:
        pick, params = f"(SELECT $src AS src) s, ({rows}) r", {"src": parts[0][0]}
    else:
        pick = f"(SELECT unnest($systems) AS system, unnest($srcs) AS src) s JOIN ({rows}) r USING (system)"
        params = {"systems": [part.system for _, part in parts], "srcs": [src for src, _ in parts]}
    incoming(con, "SELECT s.src, trim(r.instance_id) AS instance_id, trim(r.label) AS label, r.line, r.pos,"
                   f" r.score_text, r.score, r.rank_text, r.ord, r.in_order FROM {pick}", params, ordered=True)
    check_rows(con, wheres)
    if "rank" in labels.columns:
        bad = first_row(con, "SELECT src, line, rank_text, instance_id FROM _incoming WHERE ord IS NULL"
                             f" OR NOT isfinite(ord) ORDER BY src, {FAULT_ORDER} LIMIT 1")
        if bad:
            raise InputError(rules.RANK_NOT_A_NUMBER, *locate(wheres[bad[0]], bad[1], "rank", bad[3]), bad[2])


def _stage_columns(con: duckdb.DuckDBPyConnection, items: list[tuple[int, Any]], wheres: list[str]) -> None:
    """Mappings of columns (``{"instance_id": [...], "label": [...], "score": [...]}``) and sequences of
    label sets (the instance id is the position, from 0; a label set as :func:`~hiersql.inputs.arguments.
    label_set_members` reads it; an empty set is an instance), all sent to DuckDB as list parameters of one
    statement."""
    src: list[int] = []
    table: dict[str, list[Any]] = {"instance_id": [], "label": [], "score": [], "line": [], "pos": []}
    set_sizes: dict[int, int] = {}  # src -> number of label sets
    for i, source in items:
        if isinstance(source, Mapping):
            rows = _mapping_rows(source, wheres[i])
        else:
            rows = _label_set_rows(source, wheres[i])
            set_sizes[i] = rows.pop("n_sets")
        src += [i] * len(rows["label"])
        for name in table:
            table[name] += rows[name]
    incoming(
        con, f"SELECT *, {rules.number_sql('score_text')} AS score FROM (SELECT unnest($src) AS src,"
        " trim(unnest($instance_id)) AS instance_id, trim(unnest($label)) AS label, unnest($line) AS line,"
        " unnest($pos) AS pos, unnest($score) AS score_text)",
        {"src": src} | table,
    )
    check_rows(con, wheres)
    if set_sizes:  # every label set is an instance, an empty one too
        temp_table(
            con, "_incoming_instances",
            "SELECT * FROM _incoming_instances WHERE src NOT IN (SELECT unnest($srcs))"
            " UNION ALL SELECT src, CAST(i AS VARCHAR) AS instance_id, i + 1 AS line, true AS in_order FROM"
            " (SELECT src, unnest(range(n)) AS i FROM (SELECT unnest($srcs) AS src, unnest($sizes) AS n))",
            {"srcs": list(set_sizes), "sizes": list(set_sizes.values())},
        )


def _register(con: duckdb.DuckDBPyConnection, name: str, rel: Any) -> None:
    """Register a relation as a view; a relation of another DuckDB connection goes through Arrow."""
    import duckdb

    try:
        con.register(name, rel)
    except duckdb.InvalidInputException:
        con.register(name, rel.arrow())


def _is_text(path: Path, format: str) -> bool:
    """Check a label file (present, not empty); true when it is read as raw text lines
    (``long`` TSV, ``lines``, ``germeval-*``), false for Parquet, ``wide`` and ``long`` CSV files."""
    if not path.is_file():
        raise InputError("label source is a folder, not a file" if path.is_dir() else "label file not found", path)
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return False
    text = format != "wide" and not (format == "long" and suffix == ".csv")
    if not text and path.stat().st_size == 0:  # not even the header; an empty text file has no label
        raise InputError("label file is empty (it needs a header)", path)
    return text


def _is_columns(source: LabelSource) -> bool:
    """A mapping of columns or a sequence of label sets (not a path, DataFrame or relation)."""
    return not isinstance(source, str | Path) and not hasattr(source, "columns")


def _mapping_rows(columns: Mapping[str, Any], where: str) -> dict[str, list[Any]]:
    """The ``instance_id``, ``label``, ``score`` (as text) and ``line`` lists of a mapping of columns."""
    named = {str(k).lower(): list(v) for k, v in columns.items()}
    if not {"instance_id", "label"} <= set(named):
        raise InputError(f"label table needs columns instance_id, label; it has {list(columns)}", where)
    n = len(named["label"])
    if any(len(v) != n for v in named.values()):
        raise InputError(f"columns of different lengths: { {k: len(v) for k, v in named.items()} }", where)
    return {"instance_id": _texts(named["instance_id"]), "label": _texts(named["label"]),
            "score": _texts(named.get("score", [None] * n)), "line": list(range(1, n + 1)), "pos": [1] * n}


def _label_set_rows(sets: Iterable[Any], where: str) -> dict[str, Any]:
    """The rows of a sequence of label sets (instance id = position from 0, line = position from 1, pos =
    position in the set from 1) and ``n_sets``, their number; ``where`` names the source in errors."""
    ids: list[str] = []
    labels: list[Any] = []
    lines: list[int] = []
    positions: list[int] = []
    n = 0
    for n, labelset in enumerate(sets, start=1):
        members = label_set_members(labelset, where, n - 1)
        ids += [str(n - 1)] * len(members)
        labels += members
        lines += [n] * len(members)
        positions += range(1, len(members) + 1)
    return {"instance_id": ids, "label": _texts(labels), "score": [None] * len(ids), "line": lines,
            "pos": positions, "n_sets": n}


def _texts(values: list[Any]) -> list[str | None]:
    """Values as text for DuckDB (one type per list parameter); ``None`` stays missing."""
    if set(map(type, values)) <= {str, type(None)}:  # the usual case, checked at C speed
        return values
    return [v if isinstance(v, str) or v is None else str(v) for v in values]


def prediction_items(
    predictions: Mapping[str | None, LabelSource] | Iterable[tuple[str | None, LabelSource]],
) -> list[tuple[str | None, LabelSource, str | None]]:
    """``(system, source, name)`` for every system (``name``: how messages call a source that is not a file
    or a reference: ``SYSTEM=<DataFrame>`` and the like). A system named twice is an error, raised by
    :func:`hiersql.inputs.label_tables.expand` once the systems of tables with a system column are known."""
    if not isinstance(predictions, Mapping | Iterable) or isinstance(predictions, str | bytes):
        raise argument_error("predictions", "must be a mapping {system: source} or (system, source) pairs",
                             predictions)
    items = list(predictions.items() if isinstance(predictions, Mapping) else predictions)
    for item in items:
        if not isinstance(item, tuple | list) or len(item) != 2:
            raise argument_error("predictions", "must be a mapping {system: source} or (system, source) pairs",
                                 item)
    return [(system, source, None if isinstance(source, str | Path) or system is None
             else f"{system}={sources.default_name(source)}") for system, source in items]


