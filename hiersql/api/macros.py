"""DuckDB table macros of every family's SQL (``macros.sql``): ``hiersql install-macros`` creates them in a
user's database, so that the measures run as ``SELECT * FROM hierarchical_f1(...)`` without hiersql.

Each macro is the family query composed with the queries it reads (:func:`hiersql.sqlfiles.render`); a
family's ``summary`` is its plan's generated summary (:func:`hiersql.plan.summary_sql`); the ``$parameters``
become macro parameters, with the family's defaults (:func:`hiersql.engines.family_params`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

from .. import sqlfiles
from ..engines import family_params
from ..engines.compile import checked_sql, checks_of
from ..engines.dialect import failures_raised
from ..inputs import rules as input_rules
from ..measures import FAMILIES, plan_of
from ..options import Options
from ..plan import instance_values_sql, summary_sql

if TYPE_CHECKING:
    import duckdb
    from sqlglot import exp

    from ..inputs.taxonomy import Taxonomy

def macro_statements(tables: Mapping[str, str] | None = None) -> dict[str, str]:
    """``{macro name: CREATE OR REPLACE MACRO ... AS TABLE ...}`` for every query of ``macros.sql`` whose
    files exist (see that file's header); ``tables`` renames the tables the macros read. A body that reads
    ``input_rules.problems`` lists the problems of the input tables (:func:`hiersql.inputs.rules.problems_sql`);
    a macro that reads the input tables reads them cleaned and fails on the first problem that would give
    another number than ``hiersql evaluate`` (:func:`checked`)."""
    return dict(_macro_statements(input_rules.tables_key(tables)))


@lru_cache(maxsize=16)  # the same for every install with the same renames; composing them is most of an install
def _macro_statements(key: input_rules.TablesKey) -> dict[str, str]:
    import sqlglot
    from sqlglot import exp

    tables = input_rules.tables_of(key)
    defaults = _family_defaults()
    cleaned = input_rules.cleaned_names(tables)
    plans = {plan_of(fam).file: plan_of(fam) for fam in FAMILIES}
    inputs = Inputs(tables)
    out: dict[str, str] = {}
    for name, body in sqlfiles.queries("macros").items():
        tree = sqlglot.parse_one(body, read="duckdb")
        refs = [t for t in tree.find_all(exp.Table) if t.db in (*sqlfiles.available(), "input_rules")]
        if any(t.db != "input_rules" and t.name not in sqlfiles.queries(t.db)
               and not (t.name in GENERATED and t.db in plans) for t in refs):
            continue  # a file or query not there (yet): no macro
        params: dict[str, object] = {}
        for ref in refs:
            if ref.db == "input_rules":
                composed = inputs.problems()
            else:
                text, query = None, ref.name
                if ref.name in GENERATED:  # the family's generated summary (every measure and average) or values
                    text = GENERATED[ref.name](plans[ref.db])
                plan = plans.get(ref.db)
                checks = checks_of(plan) if plan and ref.name in (*GENERATED, plan.summary, plan.instance) else []
                if checks:  # the family's values where its checks pass (they fail otherwise), as evaluate's
                    text, query = checked_sql(text or f"SELECT * FROM {ref.name}", checks), f"{ref.name}_checked"
                composed = sqlglot.parse_one(sqlfiles.render(ref.db, query, None, "duckdb", cleaned, pretty=False,
                                                             text=text) + "\n", read="duckdb")
            ref.replace(composed.subquery(ref.alias_or_name, copy=False))
            used = {node.name for node in composed.find_all(exp.Placeholder)}
            params.update({p: defaults.get(ref.db, {}).get(p, _REQUIRED) for p in sorted(used)})
        tree = checked(tree, inputs)
        params.update({p: defaults["input_rules"][p] for p in sorted({node.name for node in tree.find_all(
                       exp.Placeholder)}) if p in input_rules.OPTIONS})
        tree = failures_raised(tree.transform(_checked_parameter, copy=False), "duckdb")
        # quoted: a parameter may be a keyword of DuckDB's (offset), called as hiersql_scoring("offset" := -1)
        args = [f'"{p}"' for p, v in params.items() if v is _REQUIRED]
        args += [f'"{p}" := {sqlfiles._literal(v).sql(dialect="duckdb")}' for p, v in params.items()
                 if v is not _REQUIRED]
        out[name] = f"CREATE OR REPLACE MACRO {name}({', '.join(args)}) AS TABLE {tree.sql('duckdb', copy=False)}"
    return out


class Inputs:
    """The input rules' SQL over ``tables`` (the ``--table`` renames) that the macros read: the problems, the guard
    and the cleaned rows of each input table, each parsed once per install and copied for each macro (parsing them
    for each of the eleven macros took most of an install)."""

    def __init__(self, tables: Mapping[str, str] | None) -> None:
        self.tables = tables
        self._parsed: dict[tuple[str, bool], exp.Expression] = {}

    def _tree(self, key: tuple[str, bool], sql: Callable[[], str]) -> exp.Expression:
        import sqlglot

        if key not in self._parsed:
            self._parsed[key] = sqlglot.parse_one(sql(), read="duckdb")
        return self._parsed[key].copy()

    def problems(self) -> exp.Expression:
        """:func:`hiersql.inputs.rules.problems_sql`."""
        return self._tree(("problems", False), lambda: input_rules.problems_sql(self.tables))

    def guard(self) -> exp.Expression:
        """:func:`hiersql.inputs.rules.guard_sql`."""
        return self._tree(("guard", False), lambda: input_rules.guard_sql(self.tables))

    def cleaned(self, table: str, rank: bool) -> exp.Expression:
        """:func:`hiersql.inputs.rules.cleaned_sql` of ``table``."""
        return self._tree((table, rank), lambda: input_rules.cleaned_sql(table, self.tables, rank))


def checked(tree: exp.Expression, inputs: Inputs) -> exp.Expression:
    """A macro body that reads the cleaned input tables (``hiersql_truth``, ...:
    :func:`hiersql.inputs.rules.cleaned_names`), with those tables as common table expressions over the user's
    tables (``inputs.cleaned``) and the guard (``inputs.guard``) in its ``WHERE``: one error, the first problem of
    the input, before any row. A body that reads none of them is returned as it is. ``tree`` becomes part of the
    result, not copied."""
    from sqlglot import exp

    names = {f"hiersql_{t}": t for t in input_rules.INPUT_TABLES}
    read = {t.name for t in tree.find_all(exp.Table)} & names.keys()
    if not read:
        return tree
    rank = any(c.name == "rank" for c in tree.find_all(exp.Column))  # the HCM's order of labels
    guard = inputs.guard().subquery(copy=False)
    out = exp.select("*").from_(tree.subquery("checked", copy=False), copy=False).where(
        exp.Is(this=guard, expression=exp.Null()), copy=False)
    for cte in sorted(read):
        out = out.with_(cte, as_=inputs.cleaned(names[cte], rank), copy=False)
    return out


_REQUIRED = object()
# the queries generated from a family's declared measures that a macro reads as FILE.summary, FILE.instance_values
GENERATED = {"summary": lambda plan: summary_sql(plan, list(plan.metrics), ("micro", "macro"), ordered=True),
             "instance_values": instance_values_sql}


def _checked_parameter(node):
    """``$name`` -> ``(SELECT CASE WHEN <its rule> THEN name ELSE error(...) END)``: the macro's parameter,
    checked as the command line checks the option of that name (:data:`_RULES`: a value the flag refuses, such
    as ``augment := 'Descendants'``, would silently give another measure). DuckDB binds a bare parameter like a
    column, which an aggregate query then rejects ("must appear in the GROUP BY clause"); a scalar subquery is
    a constant."""
    import sqlglot
    from sqlglot import exp

    if not isinstance(node, exp.Placeholder):
        return node
    name = node.name
    quoted = f'"{name}"'
    condition, rule = _RULES.get(name, ("{p} IS NOT NULL", "must not be NULL"))
    choices = _choices(name)
    text = condition.format(p=quoted, choices=", ".join(f"'{c}'" for c in choices))
    message = f"hiersql: {name} {rule.format(choices=', '.join(choices))}: "
    check = sqlglot.parse_one(f"CASE WHEN {text} THEN {quoted} ELSE error({exp.Literal.string(message).sql()}"
                              f" || coalesce(CAST({quoted} AS VARCHAR), 'NULL')) END", read="duckdb")
    return exp.select(check).subquery()


# The rules of the options that are macro parameters, as the command line states them (hiersql.options).
_RULES = {
    "augment": ("{p} IN ({choices})", "must be one of {choices}"),
    "beta": ("isfinite(CAST({p} AS DOUBLE)) AND {p} >= 0", "must be a finite number >= 0"),
    "max_distance": ("{p} IS NULL OR ({p} >= 0 AND {p} = floor({p}))", "must be an integer >= 0 or NULL"),
    "max_depth": ("{p} IS NULL OR ({p} >= 0 AND {p} = floor({p}))", "must be an integer >= 0 or NULL"),
    "zero_division": ("CAST({p} AS DOUBLE) IN (0, 1) OR isnan(CAST({p} AS DOUBLE))", "must be 0, 1 or nan"),
    "top_k": ("{p} >= 1 AND {p} = floor({p})", "must be an integer >= 1"),
    "offset": ("isfinite(CAST({p} AS DOUBLE)) AND {p} <= 0", "must be <= 0 (a finite number)"),
    "weight_tolerance": ("isfinite(CAST({p} AS DOUBLE)) AND {p} >= 0", "must be a finite number >= 0"),
    "unknown": ("{p} IN ({choices})", "must be one of {choices}"),
    "no_truth": ("{p} IN ({choices})", "must be one of {choices}"),
}


def _choices(name: str) -> tuple[str, ...]:
    """The allowed values of option ``name`` when they are a list (``()`` otherwise, or for no option)."""
    from ..options import declared

    try:
        option, = declared(name)
    except KeyError:  # no measure option: the input rules' (unknown, no_truth), or none (fixed_universe, max_depth)
        return input_rules.OPTIONS.get(name, ())
    return tuple(option.choices or ())


def _family_defaults() -> dict[str, dict[str, object]]:
    """``{sql file: its $parameters for the default Options}`` over the families computed in SQL, and the
    closure (unbounded by default)."""
    out: dict[str, dict[str, object]] = {"closure": {"max_depth": None},
                                         "input_rules": {o: choices[0] for o, choices in input_rules.OPTIONS.items()}}
    for fam in FAMILIES:
        try:
            out[plan_of(fam).file] = family_params(plan_of(fam), Options())
        except ValueError:  # not with the default options
            continue
    return out


@dataclass(frozen=True)
class UserTables:
    """The user's truth and predictions tables read where they are, under their own column names
    (``install-macros --truth gold --instance-col doc_id ...``): ``columns`` maps a role (``instance``,
    ``label``, ``system``, ``score``, ``rank``) to the user's column; a role not given is hiersql's name
    (``score``: none when the table has no such column; ``rank``: none)."""

    truth: str | None = None
    predictions: str | None = None
    columns: Mapping[str, str] = field(default_factory=dict)

    def tables(self, con: duckdb.DuckDBPyConnection) -> dict[str, str]:
        """``{hiersql table: InputTable}`` for the tables given (the instances and systems they list too); a
        column that is not there is an :class:`~hiersql.errors.InputError` naming its flag."""
        from ..errors import InputError
        from ..inputs.rules import InputTable, input_sql
        from ..inputs.tables import quote

        out: dict[str, str] = {}
        for table, name, listing, key in (("truth", self.truth, "instances", "instance_id"),
                                          ("predictions", self.predictions, "systems", "system")):
            if name is None:
                continue
            source = sqlfiles.table_name(name, f"--{table}")
            have = {c[0] for c in con.execute(f"SELECT * FROM {source} LIMIT 0").description}
            columns = {}
            for role, default in (("instance", "instance_id"), ("label", "label"), ("system", "system"),
                                  ("score", "score"), ("rank", None)):
                if table == "truth" and role in ("system", "score"):
                    continue
                column = self.columns.get(role, default)
                if column is not None and column not in have:
                    if role == "score" and role not in self.columns:
                        column = None  # no score column: predictions without scores
                    else:
                        raise InputError(f"table {name} has no such column (it has {', '.join(sorted(have))})",
                                         f"--{role}-col", value=column)
                columns[role] = "NULL" if column is None else quote(column)
            query = input_sql(table, source, columns)
            out[table] = InputTable(name, query)
            out[listing] = InputTable(name, f"SELECT DISTINCT {key} FROM ({query}) AS t")
        return out


def install_macros(con: duckdb.DuckDBPyConnection, tables: Mapping[str, str] | None = None,
                   taxonomy: Taxonomy | None = None, where: str = "con", user: UserTables | None = None
                   ) -> list[str]:
    """Create the table macros of ``macros.sql`` in DuckDB connection ``con`` and the empty helper tables
    they read if missing (``flat_labels``, ``pair_counts``), with ``taxonomy`` loaded first when given (its
    tables ``edges``, ``nodes``, ``closure``, ``node_closure`` made and filled, and the :data:`LABEL_TABLES`
    not renamed made empty if missing; no other), all in one transaction: a failure leaves the
    database as it was. Returns the macro names. ``tables`` renames the tables the macros read, ``user`` reads
    the user's truth and predictions under their own column names; both are kept (in the comment of
    ``hiersql_check``): a re-install given neither reads the same tables. A table the macros read that is
    missing or lacks a column they read is an :class:`~hiersql.errors.InputError` naming ``where`` (the
    database)."""
    import duckdb

    from ..errors import InputError
    from ..inputs.closure import TAXONOMY_TABLES, fill_taxonomy
    from ..inputs.store import make_tables

    if not tables and user is None:  # a re-install: the tables of the last one
        tables, user = _installed(con)
    settings = json.dumps({"tables": dict(tables or {}), "user": None if user is None else {
        "truth": user.truth, "predictions": user.predictions, "columns": dict(user.columns)}}, sort_keys=True)
    renames = {**dict(tables or {}), **(user.tables(con) if user is not None else {})}
    _check_columns(con, renames, where)  # before the transaction: a missing table would abort it
    renames = _ranked(renames, con)
    statements = macro_statements(renames)
    con.execute("BEGIN TRANSACTION")
    try:
        if taxonomy is not None:
            # the taxonomy's tables, and the label tables the macros read that are neither there nor renamed
            make_tables(con, TAXONOMY_TABLES | (LABEL_TABLES - set(renames)), where)
            fill_taxonomy(con, taxonomy)
        con.execute("CREATE TABLE IF NOT EXISTS flat_labels (label VARCHAR)")
        con.execute("CREATE TABLE IF NOT EXISTS pair_counts (system VARCHAR NOT NULL, truth VARCHAR, prediction"
                    " VARCHAR, n DOUBLE NOT NULL)")  # (hiersql/inputs/schema.sql)
        for sql in statements.values():
            con.execute(sql)
        con.execute(f"COMMENT ON MACRO TABLE hiersql_check IS {sqlfiles._literal(SETTINGS + settings).sql('duckdb')}")
    except BaseException as exc:
        con.execute("ROLLBACK")
        if isinstance(exc, duckdb.CatalogException | duckdb.BinderException):
            missing = re.search(r"Table with name (\S+) does not exist", str(exc))
            if missing:
                raise InputError(f"no table {missing[1]} for the macros to read (load a taxonomy with"
                                 " --taxonomy, or name your table with --table NAME=TABLE)", where) from None
            raise InputError(f"a table the macros read lacks a column they read ({str(exc).splitlines()[0]}):"
                             " give tables with hiersql's columns (docs/sql.md), e.g. a view that renames"
                             " yours", where) from None
        raise
    con.execute("COMMIT")
    _warn_empty_lists(con, renames, where)
    return list(statements)


LABEL_TABLES = frozenset({"instances", "truth", "predictions", "systems"})  # the label tables the macros read
SETTINGS = "hiersql install-macros: "  # the comment of hiersql_check: this, then the tables as JSON


def _installed(con: duckdb.DuckDBPyConnection) -> tuple[dict[str, str], UserTables | None]:
    """The ``tables`` and ``user`` of the macros installed in ``con`` before (none: none)."""
    found = con.execute("SELECT comment FROM duckdb_functions() WHERE function_name = 'hiersql_check'"
                        " AND starts_with(comment, $prefix)", {"prefix": SETTINGS}).fetchall()
    if not found:
        return {}, None
    settings = json.loads(found[0][0][len(SETTINGS):])
    user = settings["user"]
    return settings["tables"], None if user is None else UserTables(user["truth"], user["predictions"],
                                                                      user["columns"])


def _ranked(tables: dict[str, str], con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """``tables`` with each renamed ``truth`` or ``predictions`` table (``--table``) that has no ``rank`` column
    read through :func:`hiersql.inputs.rules.input_sql` with a NULL rank: its labels ranked as the readers rank a
    table's without one (the score, then the name), which the scoring macros read. A table that is not there is
    left as it is."""
    out = dict(tables)
    for table in ("truth", "predictions"):
        name = tables.get(table)
        if name is None or isinstance(name, input_rules.InputTable):
            continue
        have = _columns(con, name)
        if have is not None and "rank" not in have:
            columns = {"instance": "instance_id", "label": "label", "system": "system",
                       "score": "score" if "score" in have else "NULL"}
            out[table] = input_rules.InputTable(name, input_rules.input_sql(table, sqlfiles.table_name(
                name, "--table"), columns))
    return out


def _columns(con: duckdb.DuckDBPyConnection, name: str) -> set[str] | None:
    """The lower-cased column names of table ``name`` (a ``--table`` name) in ``con``; ``None`` when there is
    no such table."""
    import duckdb

    try:
        return {c[0].lower() for c in con.execute(f"SELECT * FROM {sqlfiles.table_name(name, '--table')} LIMIT 0"
                                                  ).description}
    except duckdb.CatalogException:
        return None


def _check_columns(con: duckdb.DuckDBPyConnection, tables: dict[str, str], where: str) -> None:
    """Each input table there (``tables`` renames them) has the columns the input rules read
    (:data:`hiersql.inputs.rules.COLUMNS`); else an :class:`~hiersql.errors.InputError` naming the table and
    the first column it lacks (DuckDB's binder named an alias of the rules' SQL). A missing table is left to
    the macros' creation, which names it."""
    from ..errors import InputError

    for table, columns in input_rules.COLUMNS.items():
        name = tables.get(table, table)
        if isinstance(name, input_rules.InputTable):  # read under hiersql's names: its columns checked then
            continue
        have = _columns(con, name)
        if have is None:
            continue
        missing = next((c for c in columns if c not in have), None)
        if missing:
            raise InputError(f"a table the macros read lacks a column they read ({name} has no column {missing},"
                             f" which {table} has): give tables with hiersql's columns (docs/sql.md), e.g. a view"
                             " that renames yours", where)


def _warn_empty_lists(con: duckdb.DuckDBPyConnection, tables: dict[str, str], where: str) -> None:
    """A :class:`~hiersql.errors.DataWarning` when ``instances`` (or ``systems``) is empty while the truth (or
    the predictions) it lists has rows: every macro would return no rows, without a word (the truth renamed
    with ``--table``, hiersql's own ``instances`` left empty)."""
    import warnings

    from ..errors import DataWarning

    def rows(name: str) -> int:  # (a renamed table: a plain table name, sqlfiles.table_name)
        table = sqlfiles.table_name(tables.get(name, name), "--table")
        return con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]

    for listing, listed, view in (("instances", "truth", "SELECT DISTINCT instance_id FROM <truth>"),
                                  ("systems", "predictions", "SELECT DISTINCT system, NULL AS source FROM"
                                                             " <predictions>")):
        if not rows(listing) and rows(listed):
            warnings.warn(f"{where}: {tables.get(listing, listing)} is empty while {tables.get(listed, listed)}"
                          f" has rows: the macros will return no rows; give --table {listing}=VIEW, e.g."
                          f" CREATE VIEW {listing}_v AS {view}", DataWarning, stacklevel=3)
