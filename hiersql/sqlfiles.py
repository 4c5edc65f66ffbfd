"""The SQL files of hiersql (``<name>.sql`` beside the module that runs it): loading, parameters, composition
and transpilation with sqlglot.

A file holds one or more named queries, each introduced by a line ``-- name: NAME``; a file without such a
line is one query named after the file. Parameters are written ``$name`` (DuckDB's named parameters), so a
file runs unchanged in DuckDB with native parameters; for other dialects sqlglot parses the query, replaces
each parameter by a literal and writes the dialect (:func:`render`).

A query may read the result of another query of the same file by its name, as if it were a table: an
engine materialises it as a table when a plan stages it (:meth:`hiersql.engines.Engine.stage`), else
:func:`render` and :func:`composed` inline it as a common table expression.

A header ``-- name: NAME (VARIANT)`` gives an engine-specific variant of query ``NAME``: the same columns and
rows, computed with functions only that engine has (``duckdb``: list functions; ``spark``: array functions,
written in DuckDB's syntax like every query and transpiled by sqlglot); ``(duckdb, spark)`` gives one for both.
``queries(file)`` and :func:`render` give the portable queries, which every dialect can run;
``queries(file, "duckdb")`` puts the variants in their place (the DuckDB engine's stages do;
``render(..., variant="spark")`` for Spark). Tests check that
both give the same rows.

What a query reads is what sqlglot's scope analysis finds in its tree (:func:`reads`): a table of one of its
scopes, not its own common table expression, a column or a string that spells a name; and the columns of the
store's label tables it reads (:func:`read_label_columns`: which files read ``rank``, :func:`files_reading`).
The answers for the files' own queries are kept in ``reads.json`` (:data:`READS_FILE`), so that a plain run
need not parse them.

A variant may keep the portable computation for some parameters in a branch switched off by a parameter
(``UNION ALL SELECT ... FROM set_pair_counts WHERE $augment = 'cesa_bianchi'``): given ``params``,
:func:`dependencies` leaves out the queries read only by such a dead branch, so that a runner that materialises
every query read does not compute them for nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path

_NAME = re.compile(r"^--\s*name:\s*(\w+)(?:\s*\((\w+(?:\s*,\s*\w+)*)\))?\s*$", re.MULTILINE)
_PARAM = re.compile(r"\$([A-Za-z_]\w*)")


@cache
def _paths() -> dict[str, Path]:
    """Every ``.sql`` file of the package by name: a family's file sits beside its module
    (``measures/lca/lca.sql``), the store's and the analyses' beside theirs; names are unique (a test holds it)."""
    return {p.stem: p for p in sorted(Path(__file__).resolve().parent.rglob("*.sql"))}


def sql_path(file: str) -> Path:
    """The path of the SQL file named ``file`` (without ``.sql``)."""
    try:
        return _paths()[file]
    except KeyError:
        raise FileNotFoundError(f"no SQL file named {file!r} in hiersql") from None


def available() -> list[str]:
    """Names of all SQL files (without ``.sql``)."""
    return sorted(_paths())


@cache
def queries(file: str, variant: str | None = None) -> dict[str, str]:
    """The named queries of ``<file>.sql``, in file order; with ``variant``, the queries written for it
    (``-- name: NAME (variant)``) replace the portable ones of the same name."""
    text = sql_path(file).read_text(encoding="utf-8")
    marks = list(_NAME.finditer(text))
    if not marks:
        return {file: text.strip().rstrip(";")}
    out: dict[str, str] = {}
    for mark, nxt in zip(marks, [*marks[1:], None], strict=True):
        body = text[mark.end() : nxt.start() if nxt else len(text)]
        if mark.group(2) is None:
            out.setdefault(mark.group(1), body.strip().rstrip(";"))
        elif variant in _variants(mark):
            out[mark.group(1)] = body.strip().rstrip(";")
    return out


def variants(file: str) -> set[str]:
    """The variant names used in ``<file>.sql`` (``duckdb`` for ``-- name: NAME (duckdb)``)."""
    text = sql_path(file).read_text(encoding="utf-8")
    return {v for m in _NAME.finditer(text) for v in _variants(m)}


def _variants(mark: re.Match) -> list[str]:
    """The variants a ``-- name: NAME (VARIANT, ...)`` header names (none for a portable query)."""
    return [v.strip() for v in mark.group(2).split(",")] if mark.group(2) else []


def without_comments(sql: str) -> str:
    """``sql`` without its ``--`` comments (what the engine reads: a name or ``$name`` there is no use)."""
    return re.sub(r"--[^\n]*", "", sql)


def parameters(sql: str) -> set[str]:
    """Names of the ``$name`` parameters a query uses (a ``$name`` in a ``--`` comment is not a use)."""
    return set(_PARAM.findall(without_comments(sql)))


def bind_known(sql: str, params: Mapping[str, object]) -> dict[str, object]:
    """The subset of ``params`` that ``sql`` uses (a parameter it uses and ``params`` lacks is left out)."""
    return {k: params[k] for k in parameters(sql) if k in params}


def bind(sql: str, params: dict[str, object]) -> dict[str, object]:
    """The subset of ``params`` that ``sql`` uses; an error names any parameter that is missing."""
    needed = parameters(sql)
    missing = needed - params.keys()
    if missing:
        raise KeyError(f"query needs parameters {sorted(missing)}")
    return {k: params[k] for k in needed}


def dependencies(file: str, name: str, variant: str | None = None, text: str | None = None,
                 params: Mapping[str, object] | None = None, skip: frozenset[str] | set[str] = frozenset()
                 ) -> list[str]:
    """Other queries of the same file that ``name`` reads, in file order (recursively), as sqlglot's tree of
    each query has them (:func:`reads`). ``variant`` as in :func:`queries`; ``text`` is the query's text when
    it is not one of the file's (a generated summary). With ``params``, a query read only in a ``SELECT`` whose
    ``WHERE`` is false once those parameters are set (a branch switched off) is not a read. A query in
    ``skip`` (a table already made) is a table: neither it nor what it reads is a dependency."""
    all_queries = queries(file, variant)
    found: list[str] = []

    def direct(query: str) -> set[str]:
        body = text if text is not None and query == name else all_queries[query]
        out = set(reads(file, query, variant, body, skip))
        if params is not None and out:
            bound = bind_known(body, params)
            out &= _live_tables(body, tuple(sorted((k, tuple(v) if isinstance(v, list) else v)
                                                    for k, v in bound.items())))
        return out

    def visit(query: str) -> None:
        mine = direct(query)
        for other in all_queries:
            if other in mine and other not in found:
                visit(other)
                found.append(other)

    visit(name)
    return [q for q in all_queries if q in found]


@cache
def inputs(file: str, name: str) -> tuple[frozenset[str], frozenset[str]]:
    """What the rows of query ``name`` of ``<file>.sql`` depend on: the ``$parameters`` and the tables (the
    store's, helper tables, the file's queries, which a Python step may write instead) of it and of every query
    it reads, recursively, in every variant of the file (so a superset of what any one engine runs reads)."""
    params: set[str] = set()
    tables: set[str] = set()
    for variant in (None, *sorted(variants(file))):
        bodies = queries(file, variant)
        for query in (name, *dependencies(file, name, variant)):
            params |= parameters(bodies[query])
            tables |= {read for read in _read_forms_of(bodies[query]) if "." not in read}  # tables, not columns
    return frozenset(params), frozenset(tables)


READS_FILE = Path(__file__).with_name("reads.json")  # the tables (and label tables' columns) each query reads
LABEL_TABLES = ("truth", "predictions")  # the store's label tables, whose columns READS_FILE lists as table.column


def reads(file: str, query: str, variant: str | None = None, text: str | None = None,
          skip: frozenset[str] | set[str] = frozenset()) -> frozenset[str]:
    """The queries of ``<file>.sql`` but those in ``skip`` that query ``query`` (or ``text``) reads directly:
    the unqualified tables of its sqlglot tree (:func:`read_tables`) that are queries of the file. The file's
    own queries are looked up in :data:`READS_FILE` (a test holds it equal to sqlglot's answer), and a text
    that names no query outside ``skip`` is not parsed: a plain DuckDB run does not import sqlglot."""
    all_queries = queries(file, variant)
    body = text if text is not None else all_queries[query]
    named = {q for q in all_queries if q != query and q not in skip and q in body}  # no name, no read
    if not named:
        return frozenset()
    known = _reads_file().get(_digest(body))
    return frozenset(named & (set(known) if known is not None else read_tables(body)))


@cache
def read_tables(sql: str) -> frozenset[str]:
    """The unqualified tables query ``sql`` reads, by sqlglot's scope analysis: the sources of every scope of
    its tree that are tables, not its own common table expressions."""
    from sqlglot import exp
    from sqlglot.optimizer.scope import traverse_scope

    return frozenset(source.name for scope in traverse_scope(_parse(sql))
                     for source in scope.sources.values() if isinstance(source, exp.Table) and not source.db)


@cache
def read_label_columns(sql: str) -> frozenset[str]:
    """The columns of the label tables (:data:`LABEL_TABLES`) that query ``sql`` reads, as ``table.column``, by
    sqlglot's scope analysis: a column of a scope qualified by the alias of such a table, or unqualified in a
    scope whose one source (of its ``FROM`` and joins, not the common table expressions it could read) is such a
    table, unless it sits in the scope's ``ORDER BY`` and names one of the scope's own outputs (which an ``ORDER
    BY`` reads first)."""
    from sqlglot import exp
    from sqlglot.optimizer.scope import traverse_scope

    found: set[str] = set()
    for scope in traverse_scope(_parse(sql)):
        selected = {alias: source for alias, (_, source) in scope.selected_sources.items()}  # FROM and JOINs
        tables = {alias: source.name for alias, source in selected.items()
                  if isinstance(source, exp.Table) and not source.db and source.name in LABEL_TABLES}
        if not tables:
            continue
        alone = next(iter(tables.values())) if len(selected) == 1 else None
        outputs = set(scope.expression.named_selects) if isinstance(scope.expression, exp.Select) else set()
        for column in scope.columns:
            order = column.find_ancestor(exp.Order, exp.Select)  # the scope's ORDER BY, not a window's
            ordered = isinstance(order, exp.Order) and order.parent is scope.expression
            table = tables.get(column.table) if column.table else (
                None if ordered and column.name in outputs else alone)
            if table is not None:
                found.add(f"{table}.{column.name}")
    return frozenset(found)


def files_reading(column: str) -> list[str]:
    """The SQL files (by name) one of whose queries, portable or a variant, reads ``column`` of a label table
    (:func:`read_label_columns`): for ``rank``, the families whose measures read the labels' ranks."""
    wanted = {f"{table}.{column}" for table in LABEL_TABLES}
    return [file for file in available()
            if any(wanted & _read_forms_of(body) for variant in (None, *sorted(variants(file)))
                   for body in queries(file, variant).values())]


def read_forms() -> dict[str, list[str]]:
    """The contents of :data:`READS_FILE`: for every query of every SQL file (portable and variants), the digest
    of its text → :func:`read_tables` and :func:`read_label_columns`."""
    bodies = {body for file in _paths() for variant in (None, *sorted(variants(file)))
              for body in queries(file, variant).values()}
    return {_digest(body): sorted(read_tables(body) | read_label_columns(body)) for body in sorted(bodies)}


def _read_forms_of(body: str) -> frozenset[str]:
    """What query text ``body`` reads (:func:`read_forms`): from :data:`READS_FILE` for the files' own queries,
    else from sqlglot."""
    known = _reads_file().get(_digest(body))
    return frozenset(known) if known is not None else read_tables(body) | read_label_columns(body)


def write_reads_file() -> None:
    """Write :data:`READS_FILE` after a SQL file changed (``python -c "import hiersql.sqlfiles as s;
    s.write_reads_file()"``; a test holds the file current)."""
    import json

    READS_FILE.write_text(json.dumps(read_forms(), indent=1) + "\n")
    _reads_file.cache_clear()


@cache
def _reads_file() -> dict[str, list[str]]:
    import json

    return json.loads(READS_FILE.read_text()) if READS_FILE.exists() else {}


def _digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()[:16]


def composed(file: str, name: str, variant: str | None = None, skip: frozenset[str] | set[str] = frozenset(),
             text: str | None = None) -> str:
    """Query ``name`` of ``<file>.sql`` (or ``text``, as in :func:`dependencies`) with the queries it reads
    that are not in ``skip`` (tables already made) as common table expressions, composed as text: the queries
    run as written (DuckDB variants, native parameters), unlike :func:`render`, which parses and rewrites."""
    all_queries = queries(file, variant)
    sql = text if text is not None else all_queries[name]
    deps = dependencies(file, name, variant, text, skip=skip)
    if not deps:
        return sql
    ctes = ",\n".join(f"{dep} AS (\n{all_queries[dep]}\n)" for dep in deps)
    return f"WITH {ctes}\nSELECT * FROM (\n{sql}\n) AS _{name}"


def readers(file: str, variant: str | None = None) -> dict[str, set[str]]:
    """``{query: the queries of the same file that read it directly}`` (portable queries, or with ``variant``'s
    in their place as in :func:`queries`)."""
    all_queries = queries(file, variant)
    direct = {r: reads(file, r, variant) for r in all_queries}
    return {q: {r for r in all_queries if q in direct[r]} for q in all_queries}


def render(
    file: str,
    name: str | None = None,
    params: dict[str, object] | None = None,
    dialect: str = "duckdb",
    tables: dict[str, str] | None = None,
    pretty: bool = True,
    skip: frozenset[str] | set[str] = frozenset(),
    text: str | None = None,
    variant: str | None = None,
) -> str:
    """One self-contained query of ``file`` written in ``dialect``.

    Queries it depends on become common table expressions (except those in ``skip``: tables already made),
    ``$name`` parameters become literals (a parameter left out of ``params`` stays a placeholder), and
    ``tables`` renames tables (``{"truth": "warehouse.gold_labels"}``). ``text`` replaces query ``name``'s
    own text (a generated query that reads the file's queries). ``variant``: the queries written for that
    engine replace the portable ones (:func:`queries`).
    """
    from sqlglot import exp

    all_queries = queries(file, variant)
    name = name or list(all_queries)[-1]
    ctes: list[exp.CTE] = []
    recursive = False
    for dep in dependencies(file, name, variant, text=text, skip=skip):
        body = _query_tree(file, dep, variant).copy()
        recursive |= _pop_ctes(body, ctes)
        ctes.append(exp.CTE(this=body, alias=exp.TableAlias(this=exp.to_identifier(dep))))
    tree = _parse(text) if text is not None else _query_tree(file, name, variant).copy()
    recursive |= _pop_ctes(tree, ctes)
    if ctes:
        tree.set("with_", exp.With(expressions=ctes, recursive=recursive or None))
    # the tree is this call's own (parsed, or copied from the kept one): changed and written in place, not copied
    # again (copy=False reaches Expr.transform through replace_placeholders' keywords)
    if params:
        tree = exp.replace_placeholders(tree, copy=False, **{k: _literal(v) for k, v in params.items()})
    if tables:
        tree = _rename_tables(tree, tables)
    return tree.sql(dialect=dialect, pretty=pretty, copy=False)


@cache
def _query_tree(file: str, name: str, variant: str | None):
    """Query ``name`` of ``<file>.sql`` (as :func:`queries` gives it) parsed once per process, for :func:`render`
    to copy: plans compose the same queries again and again, and copying a tree costs a seventh of parsing it."""
    return _parse(queries(file, variant)[name])


def table_name(value: str, where: str) -> str:
    """``value`` when it is a plain ``[catalog.][schema.]table`` name (odd parts quoted ``"..."``); else an
    :class:`~hiersql.errors.InputError` naming ``where``: a function call, a comment, a second statement or an
    alias never reaches SQL text as a table name."""
    import sqlglot
    from sqlglot import exp

    from .errors import InputError

    try:
        table = exp.to_table(value, dialect="duckdb")
    except (sqlglot.errors.SqlglotError, AttributeError):  # AttributeError: sqlglot on 'a;b'
        table = None
    plain = (isinstance(table, exp.Table) and 1 <= len(table.parts) <= 3
             and all(isinstance(part, exp.Identifier)
                     and ('"' in value if part.quoted else re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]*", part.name))
                     for part in table.parts)
             and not any(v is not None for k, v in table.args.items() if k not in ("this", "db", "catalog"))
             and not any(node.comments for node in table.walk()))
    if not plain:
        raise InputError('not a table name ([catalog.][schema.]table; quote an odd name as "...")', where,
                         value=value)
    return value


def _rename_tables(tree, tables: dict[str, str]):
    """Point table references at other tables; an unaliased reference keeps its old name as alias, so
    ``truth.label`` still resolves after ``truth`` became ``warehouse.gold_labels``. CTE names are left alone.
    ``tree``, the caller's own, is changed in place."""
    from sqlglot import exp

    ctes = {cte.alias for cte in tree.find_all(exp.CTE)}

    def swap(node):
        if not isinstance(node, exp.Table) or node.name not in tables or node.db or node.name in ctes:
            return node
        alias = node.args.get("alias") or exp.TableAlias(this=exp.to_identifier(node.name))
        query = getattr(tables[node.name], "query", None)  # a user's table under hiersql's columns
        if query is not None:
            return _parse(query).subquery(alias.this)
        new = exp.to_table(tables[node.name])
        new.set("alias", alias)
        return new

    return tree.transform(swap, copy=False)


@cache
def _live_tables(sql: str, params: tuple[tuple[str, object], ...]) -> frozenset[str]:
    """The unqualified tables that query ``sql`` reads once the parameters ``params`` (``(name, value)`` pairs)
    are set and the query simplified: a table read only inside a ``SELECT`` whose ``WHERE`` became false is
    left out (that select reads no row of it)."""
    from sqlglot import exp
    from sqlglot.optimizer.simplify import simplify

    values = {k: _literal(v) for k, v in params}
    tree = simplify(exp.replace_placeholders(_parse(sql), **values))

    def dead(node) -> bool:
        while node is not None:
            where = node.args.get("where") if isinstance(node, exp.Select) else None
            if where is not None and where.this == exp.false():
                return True
            node = node.parent
        return False

    return frozenset(t.name for t in tree.find_all(exp.Table) if not t.db and not dead(t))


def _parse(sql: str):
    """Parse one DuckDB query. The trailing newline works around a sqlglot 30 tokenizer error on text that
    has a ``$parameter`` and ends with ``''``."""
    import sqlglot

    return sqlglot.parse_one(sql + "\n", read="duckdb")


def _pop_ctes(tree, into: list) -> bool:
    """Move the top-level CTEs of ``tree`` to the end of ``into`` (not every dialect accepts a WITH nested
    inside a CTE, and composing queries needs one flat WITH); returns whether that WITH was recursive."""
    with_ = tree.args.get("with_")
    if with_ is None:
        return False
    into.extend(with_.expressions)
    tree.set("with_", None)
    return bool(with_.args.get("recursive"))


def _literal(value: object):
    from sqlglot import exp

    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, float) and value != value:  # NaN (zero_division=nan) has no number literal
        return exp.cast(exp.Literal.string("NaN"), "DOUBLE")
    if isinstance(value, int | float):
        return exp.Literal.number(value)
    return exp.Literal.string(str(value))
