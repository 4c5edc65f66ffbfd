"""The input rules of the label readers, declared once for the SQL door (``hiersql install-macros``, ``hiersql sql``).

``hiersql evaluate`` reads labels through :mod:`hiersql.inputs.readers`, which strips the spaces around ids and labels,
refuses what is missing or unknown and collapses duplicates. The SQL door reads the user's tables (``truth``,
``predictions``, ``instances``, ``systems``) as they are. :data:`RULES` states each reader rule once, as SQL, with
the reader's message (the constants below, which :mod:`hiersql.inputs.staging` imports). From it come:

- :func:`problems_sql`: one row per problem ``(table_name, column_name, row_key, value, rule, action, message)``,
  the body of the ``hiersql_check()`` macro;
- :func:`guard_sql`: the first problem whose ``action`` is ``error`` raised as one error, in front of every
  measure (DuckDB ``error()``, Spark ``raise_error()``, elsewhere a failing cast that quotes the message);
- :func:`cleaned_sql`: the rows the measures read, cleaned as the readers clean them (ids and labels trimmed,
  duplicates collapsed, unknown labels and instances without truth dropped: with the default options those are
  errors of the guard, so dropping changes a number only where ``unknown``/``no_truth`` is ``ignore``).

So a measure over the SQL door equals ``hiersql evaluate`` over the same rows, or fails naming the fault.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import NamedTuple

# The readers' messages (hiersql.inputs.staging imports them; hiersql.inputs.sources says MISSING_SYSTEM).
MISSING = "missing instance_id or label (empty, None or NaN)"
EMPTY_INSTANCE = "empty instance_id"
EMPTY_LABEL = "empty label"
UNKNOWN_LABEL = "label not in the taxonomy"
VIRTUAL_ROOT = "label is the virtual root added above the taxonomy's parentless nodes, not one of its nodes"
NO_TRUTH = "predicted instance has no truth"
DUPLICATES = "duplicate (instance_id, label) row(s) collapsed"
MISSING_SYSTEM = "missing system (NULL or empty)"
NO_INSTANCE = "truth has no instance"
NO_SYSTEM = "the table has no rows, so no system"  # a predictions table with a system column, and no row
# A truth source read with no instance at all (the store's and the in-engine readers' message).
EMPTY_TRUTH = (f"{NO_INSTANCE} (an empty file, or no line of the label format, such as a GermEval file without the"
               " subtask's section)")
# What the readers do without a word, and what only tables given to the SQL door can hold.
SPACES = "spaces around the value (stripped, as the readers strip them)"
DUPLICATE_INSTANCE = "instance listed twice (collapsed)"
DUPLICATE_SYSTEM = "system listed twice (collapsed)"
UNLISTED_INSTANCE = "instance of the truth not in instances"
UNLISTED_SYSTEM = "system of the predictions not in systems"
SCORE_NOT_A_NUMBER = "score is not a number"
RANK_NOT_A_NUMBER = "rank is not a number"

# A score or rank written as text is a number when it is written in decimal (a sign, digits with a point, an
# exponent) or as inf, infinity or nan (any case; nan unsigned), spaces around it, and its value is within a double's
# range. Every reader applies it (DuckDB, PostgreSQL and Spark cast other spellings, or raise on a value out of
# range, each its own way). The patterns hold no backslash: they are the same text in every SQL dialect's literals.
_SPACE = "[ \t\n\r\f\v]*"
NUMBER = (f"^{_SPACE}([-+]?(([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?|[iI][nN][fF]([iI][nN][iI][tT][yY])?)"
          f"|[nN][aA][nN]){_SPACE}$")
INFINITE = "[iI][nN][fF]"  # written as an infinity: an infinite cast of anything else overflowed
NONZERO = "^[^eE]*[1-9]"  # a nonzero digit before the exponent: a zero cast of it underflowed


# How a dialect asks whether text matches a pattern somewhere (the patterns above anchor where they must).
_MATCHES = {"duckdb": "regexp_matches({}, {})", "spark": "{} RLIKE {}"}


def number_sql(text: str, dialect: str = "duckdb") -> str:
    """SQL (DuckDB's or Spark's: both ``TRY_CAST`` a text as these readers need) of the number the text
    expression ``text`` holds under :data:`NUMBER`'s rule, else NULL."""
    value = f"TRY_CAST({text} AS DOUBLE)"
    number, infinite, nonzero = (_MATCHES[dialect].format(text, f"'{pattern}'")  # no quote in the patterns
                                 for pattern in (NUMBER, INFINITE, NONZERO))
    return (f"CASE WHEN {number} AND NOT ((abs({value}) = CAST('Infinity' AS DOUBLE) AND NOT {infinite}) OR"
            f" ({value} = 0 AND {nonzero})) THEN {value} END")


def value_sql(expression: str, dialect: str = "duckdb") -> str:
    """SQL in ``dialect`` of the number that ``expression`` (a text or number column) holds under
    :data:`NUMBER`'s rule (:func:`number_sql` of its text: a double's text reads back as the same double), else
    NULL. In a dialect without ``TRY_CAST`` (PostgreSQL) a text beyond a double's range fails the cast with the
    database's own error."""
    if dialect == "duckdb":  # DuckDB folds typeof() as it binds: a number column is cast, its text never matched
        return (f"CASE WHEN typeof({expression}) = 'VARCHAR' THEN {number_sql(f'CAST({expression} AS VARCHAR)')}"
                f" ELSE TRY_CAST({expression} AS DOUBLE) END")
    if dialect in _MATCHES:
        return number_sql(f"CAST({expression} AS STRING)", dialect)
    import sqlglot

    placeholder = "hiersql_value_of"  # a plain name sqlglot writes as it is; text, not a tree: it may be Jinja
    tree = sqlglot.parse_one(number_sql(f"CAST({placeholder} AS VARCHAR)"), read="duckdb")
    return tree.sql(dialect=dialect).replace(placeholder, expression)


def untyped(node):
    """A sqlglot transform of DuckDB SQL of :func:`value_sql` for another dialect: ``typeof(x) = 'VARCHAR'`` (no
    such function there) as TRUE, every value read as text."""
    from sqlglot import exp

    if isinstance(node, exp.EQ) and isinstance(node.this, exp.Typeof):
        return exp.true()
    return node


INPUT_TABLES = ("truth", "predictions", "instances", "systems")
# The columns that name a row of each table in messages and in hiersql_check()'s row_key.
KEYS = {"truth": ("instance_id",), "predictions": ("system", "instance_id"), "instances": ("instance_id",),
        "systems": ("system",)}
# The columns the rules and the cleaned rows read from each input table (rank too where the HCM reads it).
COLUMNS = {"truth": ("instance_id", "label"), "predictions": ("system", "instance_id", "label", "score"),
           "instances": ("instance_id",), "systems": ("system",)}
# The options that turn a rule's error into dropped rows, as in hiersql evaluate (--unknown, --no-truth).
OPTIONS = {"unknown": ("error", "ignore"), "no_truth": ("error", "ignore")}


def option_rule(name: str) -> str:
    """The rule of the input option ``name`` of :data:`OPTIONS`, as messages state it."""
    return "must be " + " or ".join(repr(choice) for choice in OPTIONS[name])


class Rule(NamedTuple):
    """One input rule: rows ``r`` of ``table`` (or of ``source``, a query over it) where ``where`` holds are a
    problem of ``column``. ``action``: ``error`` (the measures refuse to run), ``stripped``/``collapsed`` (the
    measures read the cleaned rows, :func:`cleaned_sql`), or an option of :data:`OPTIONS` (an error, or the
    rows ``dropped`` when that option is ``ignore``)."""

    name: str
    table: str
    column: str
    where: str
    message: str
    action: str
    source: str | None = None


def _present(column: str) -> str:
    """``r.column`` holds a value (not NULL, blank or NaN, as the readers' missing-value rule)."""
    return f"trim(r.{column}) <> '' AND lower(trim(r.{column})) <> 'nan'"


def _missing(column: str) -> str:
    return f"r.{column} IS NULL OR trim(r.{column}) = '' OR lower(trim(r.{column})) = 'nan'"


def _label_rules(table: str) -> list[Rule]:
    """The rules of the ids and labels of ``truth`` or ``predictions``."""
    keys = ", ".join(f"trim({k}) AS {k}" if k == "instance_id" else k for k in KEYS[table])
    return [
        Rule("missing_instance_id", table, "instance_id", _missing("instance_id"), MISSING, "error"),
        Rule("missing_label", table, "label", _missing("label"), MISSING, "error"),
        Rule("spaces", table, "instance_id", "r.instance_id <> trim(r.instance_id)", SPACES, "stripped"),
        Rule("spaces", table, "label", "r.label <> trim(r.label)", SPACES, "stripped"),
        Rule("unknown_label", table, "label", f"{_present('label')} AND NOT EXISTS (SELECT 1 FROM nodes AS n"
             " WHERE n.label = trim(r.label))", UNKNOWN_LABEL, "unknown"),
        Rule("virtual_root", table, "label", "EXISTS (SELECT 1 FROM nodes AS n WHERE n.is_virtual AND n.label ="
             " trim(r.label))", VIRTUAL_ROOT, "error"),
        Rule("duplicate", table, "label", "r.n > 1", DUPLICATES, "collapsed",
             f"SELECT {keys}, trim(label) AS label, count(*) AS n FROM {table}"
             f" GROUP BY {', '.join(f'trim({k})' if k == 'instance_id' else k for k in KEYS[table])}, trim(label)"),
    ]


def _rank_rule(table: str) -> Rule:
    """As the readers' check of a rank column: a rank that is not a finite number (not written, text that is not a
    number, NaN, an infinity), in a table whose rank column holds some rank (a table without ranks holds none)."""
    keys = ", ".join(KEYS[table])
    return Rule("rank_not_a_number", table, "rank", "r.ranked > 0 AND (r.value IS NULL OR r.value ="
                " CAST('NaN' AS DOUBLE) OR abs(r.value) = CAST('Infinity' AS DOUBLE))", RANK_NOT_A_NUMBER, "error",
                f"SELECT {keys}, rank, {value_sql('rank')} AS value, count(rank) OVER () AS ranked FROM {table}")


def _listed(table: str, column: str) -> str:
    """``r.column`` is a value of ``table.column`` (both trimmed for instance ids)."""
    side = (lambda c: f"trim({c})") if column == "instance_id" else (lambda c: c)
    return f"EXISTS (SELECT 1 FROM {table} AS l WHERE {side('l.' + column)} = {side('r.' + column)})"


RULES: tuple[Rule, ...] = (
    *_label_rules("truth"),
    Rule("unlisted_instance", "truth", "instance_id", f"{_present('instance_id')} AND NOT"
         f" {_listed('instances', 'instance_id')}", UNLISTED_INSTANCE, "error"),
    _rank_rule("truth"),
    *_label_rules("predictions"),
    _rank_rule("predictions"),
    Rule("missing_system", "predictions", "system", "r.system IS NULL OR r.system = ''", MISSING_SYSTEM, "error"),
    Rule("unlisted_system", "predictions", "system", f"r.system <> '' AND NOT {_listed('systems', 'system')}",
         UNLISTED_SYSTEM, "error"),
    Rule("no_truth", "predictions", "instance_id", f"{_present('instance_id')} AND NOT"
         f" {_listed('instances', 'instance_id')}", NO_TRUTH, "no_truth"),
    # as the readers' check: a score written (not NULL, not empty) that is not a number, or NaN
    Rule("score_not_a_number", "predictions", "score", "r.score IS NOT NULL AND (r.value IS NULL OR"
         " r.value = CAST('NaN' AS DOUBLE)) AND CAST(r.score AS VARCHAR) <> ''", SCORE_NOT_A_NUMBER, "error",
         f"SELECT system, instance_id, score, {value_sql('score')} AS value FROM predictions"),
    Rule("missing_instance_id", "instances", "instance_id", _missing("instance_id"), EMPTY_INSTANCE, "error"),
    Rule("spaces", "instances", "instance_id", "r.instance_id <> trim(r.instance_id)", SPACES, "stripped"),
    Rule("duplicate", "instances", "instance_id", "r.n > 1", DUPLICATE_INSTANCE, "collapsed",
         "SELECT trim(instance_id) AS instance_id, count(*) AS n FROM instances GROUP BY trim(instance_id)"),
    Rule("no_instance", "instances", "instance_id", "r.n = 0", NO_INSTANCE, "error",
         "SELECT CAST(NULL AS VARCHAR) AS instance_id, count(*) AS n FROM instances"),
    Rule("no_system", "systems", "system", "r.n = 0", NO_SYSTEM, "error",
         "SELECT CAST(NULL AS VARCHAR) AS system, count(*) AS n FROM systems"),
    Rule("missing_system", "systems", "system", "r.system IS NULL OR r.system = ''", MISSING_SYSTEM, "error"),
    Rule("duplicate", "systems", "system", "r.n > 1", DUPLICATE_SYSTEM, "collapsed",
         "SELECT system, count(*) AS n FROM systems GROUP BY system"),
)


WHOLE = ("no_instance", "no_system")  # the rules of a table as a whole: their messages name no row or value


def _quoted(expression: str) -> str:
    """``'...'`` around the text of ``expression``, or ``NULL`` (a value as the messages show it)."""
    return f"coalesce('''' || CAST({expression} AS VARCHAR) || '''', 'NULL')"


def _action(rule: Rule) -> str:
    if rule.action in OPTIONS:
        return f"CASE WHEN ${rule.action} = 'ignore' THEN 'dropped' ELSE 'error' END"
    return f"'{rule.action}'"


def _rule_sql(rule: Rule, names: Mapping[str, str]) -> str:
    """The problems of one rule (DuckDB SQL over hiersql's table names; the message names the user's table,
    ``names[rule.table]``, quoted as a string literal by sqlglot)."""
    from sqlglot import exp

    key = " || ', ' || ".join(f"'{k}=' || {_quoted('r.' + k)}" for k in KEYS[rule.table])
    if rule.name in WHOLE:
        key, where = "NULL", f"{exp.Literal.string(names[rule.table] + ': ').sql()}"
    else:
        where = f"{exp.Literal.string(names[rule.table] + ', column ' + repr(rule.column) + ', ').sql()} || {key}" \
                " || ': '"
    value = "NULL" if rule.name in WHOLE else f"CAST(r.{rule.column} AS VARCHAR)"
    tail = "" if rule.name in WHOLE else f" || ': ' || {_quoted('r.' + rule.column)}"
    source = f"({rule.source})" if rule.source else rule.table
    return (f"SELECT {exp.Literal.string(names[rule.table]).sql()} AS table_name, '{rule.column}' AS column_name,"
            f" {key} AS row_key, {value} AS value, '{rule.name}' AS rule, {_action(rule)} AS action,"
            f" 'hiersql: ' || {where} || {exp.Literal.string(rule.message).sql()}{tail} AS message"
            f" FROM {source} AS r WHERE {rule.where}")


def problems_sql(tables: Mapping[str, str] | None = None, rank: bool = True) -> str:
    """DuckDB SQL of every problem of the input tables (``tables`` renames them, as ``--table``), one row per
    problem: ``(table_name, column_name, row_key, value, rule, action, message)``, ordered. ``$unknown`` and
    ``$no_truth`` (``error`` or ``ignore``) decide the action of unknown labels and instances without truth.
    ``rank``: the truth and predictions tables have a ``rank`` column, which the rules check (the printed SQL of a
    measure that reads no rank does not assume one)."""
    return _problems_sql(tables_key(tables), rank)


@lru_cache(maxsize=64)  # every macro, printed script and dbt model reads it, and it is ~20 kB of SQL to rename
def _problems_sql(key: TablesKey, rank: bool) -> str:
    from ..sqlfiles import _parse, _rename_tables

    tables = tables_of(key)
    names = {t: tables.get(t, t) for t in INPUT_TABLES}
    union = " UNION ALL ".join(_rule_sql(rule, names) for rule in RULES if rank or rule.column != "rank")
    tree = _parse(f"SELECT * FROM ({union}) AS p ORDER BY table_name, column_name, row_key, value, rule")
    return _rename_tables(tree, tables).sql(dialect="duckdb", copy=False)


FAILURE_FUNCTIONS = {"duckdb": "error", "spark": "raise_error", "databricks": "raise_error"}
"""The function of each dialect that has one that fails with a text as its message."""


def fail_function(dialect: str) -> str:
    """The SQL of a failure that shows text ``{}`` in ``dialect``: its function of :data:`FAILURE_FUNCTIONS`,
    elsewhere a cast of the text to an integer (the database's message quotes it)."""
    function = FAILURE_FUNCTIONS.get(dialect)
    return "CAST({} AS INTEGER)" if function is None else function + "({})"


def guard_sql(tables: Mapping[str, str] | None = None, dialect: str = "duckdb",
              listed: str = ": SELECT * FROM hiersql_check()", rank: bool = True) -> str:
    """A one-row aggregate that fails with the first problem (the smallest message) whose action is ``error``,
    adding how many there are and ``listed`` (where to see them all); no row when there is none. ``rank``: as
    :func:`problems_sql`."""
    first = f"min(message) || ' (' || CAST(count(*) AS VARCHAR) || ' error(s) in all{listed})'"
    # CASE as well as HAVING: Spark computes an aggregate's select list before its HAVING
    return (f"SELECT CASE WHEN count(*) > 0 THEN {fail_function(dialect).format(first)} END AS failed"
            f" FROM ({problems_sql(tables, rank)}) AS p WHERE action = 'error' HAVING count(*) > 0")


def cleaned_sql(table: str, tables: Mapping[str, str] | None = None, rank: bool = False) -> str:
    """DuckDB SQL of the rows the measures read from input table ``table``: ids and labels trimmed, one row per
    distinct key, labels not in the taxonomy and predicted instances without truth left out (errors of
    :func:`guard_sql` unless ``$unknown``/``$no_truth`` is ``ignore``, when the readers drop them too). With
    ``rank`` (truth and predictions): each label's ``rank`` within its instance as the readers rank a table's
    (:func:`ranked_sql`), and of duplicate rows the first in that order kept, with its score; the rows kept are
    ranked 1 .. n, as the store numbers them. Without it, a prediction's ``score`` is the highest of its
    duplicates (the first in the readers' order of a table without a rank column)."""
    from ..sqlfiles import _parse, _rename_tables

    known = "EXISTS (SELECT 1 FROM nodes AS n WHERE n.label = trim(r.label))"
    listed = f" AND {_listed('instances', 'instance_id')}" if table == "predictions" else ""
    if rank and table in ("truth", "predictions"):
        keys = ", ".join(KEYS[table])
        score = ", score" if table == "predictions" else ""
        # ranked again among the rows kept, 1 .. n as the readers' (the top k of the severity family count them)
        sql = (f"SELECT {keys}, label, row_number() OVER (PARTITION BY {keys} ORDER BY rank) AS rank{score}"
               f" FROM ({ranked_sql(table)}) AS r WHERE r.occurrence = 1 AND {known}{listed}")
    else:
        sql = {
            "truth": f"SELECT trim(r.instance_id) AS instance_id, trim(r.label) AS label FROM truth AS r"
                     f" WHERE {known} GROUP BY trim(r.instance_id), trim(r.label)",
            "predictions": f"SELECT r.system, trim(r.instance_id) AS instance_id, trim(r.label) AS label,"
                           f" max({value_sql('r.score')}) AS score FROM predictions AS r WHERE {known}{listed}"
                           " GROUP BY r.system, trim(r.instance_id), trim(r.label)",
            "instances": "SELECT DISTINCT trim(instance_id) AS instance_id FROM instances",
            "systems": "SELECT DISTINCT system FROM systems",
        }[table]
    return _rename_tables(_parse(sql), dict(tables or {})).sql(dialect="duckdb", copy=False)


def ranked_sql(table: str) -> str:
    """DuckDB SQL of the rows of ``table`` (truth or predictions, with a ``rank`` column: the user's, or NULL for
    none) with each label's ``rank`` within its instance by the rule every reader follows
    (:data:`hiersql.inputs.tables.RANK_ORDER`: the rank column's number, else the score's descending, else the
    label: a table has no row order) and its ``occurrence`` among the rows of the same label (1: the first in that
    order, the row the readers keep); ids and labels trimmed, the score read as a number by :func:`value_sql`."""
    from .tables import RANK_ORDER

    keys = ", ".join(KEYS[table])
    score = value_sql("score") if table == "predictions" else "CAST(NULL AS DOUBLE)"
    rows = (f"SELECT {'system, ' if table == 'predictions' else ''}trim(instance_id) AS instance_id,"
            f" trim(label) AS label, {score} AS score, {value_sql('rank')} AS ord, FALSE AS in_order,"
            f" CAST(NULL AS INTEGER) AS line, 1 AS pos FROM {table}")
    return (f"SELECT {keys}, label, score, row_number() OVER (PARTITION BY {keys} ORDER BY {RANK_ORDER}) AS rank,"
            f" row_number() OVER (PARTITION BY {keys}, label ORDER BY {RANK_ORDER}) AS occurrence FROM ({rows}) AS r")


class InputTable(str):
    """A user's table read under hiersql's column names: the string is the table's name (as messages name it),
    :attr:`query` the DuckDB query that reads it (:func:`input_sql`), which table renames put in its place
    (:func:`hiersql.sqlfiles._rename_tables`)."""

    query: str

    def __new__(cls, name: str, query: str) -> InputTable:
        out = super().__new__(cls, name)
        out.query = query
        return out


TablesKey = tuple[tuple[str, str, str | None], ...]


def tables_key(tables: Mapping[str, str] | None) -> TablesKey:
    """Table renames (``--table``) as a cache key: each name with the query of an :class:`InputTable` (two names
    that are equal strings may read other queries)."""
    return tuple((role, str(name), getattr(name, "query", None)) for role, name in (tables or {}).items())


def tables_of(key: TablesKey) -> dict[str, str]:
    """The renames of :func:`tables_key`."""
    return {role: name if query is None else InputTable(name, query) for role, name, query in key}


def input_sql(table: str, source: str, columns: Mapping[str, str]) -> str:
    """The query of a user's ``table`` (``truth`` or ``predictions``) read from ``source`` (the text of a ``FROM``
    item) under hiersql's column names; ``columns``: the SQL of the user's column of each role (``instance``,
    ``label``, and for the predictions ``system``, ``score``; ``rank``; ``NULL`` for none). The score and rank are
    the user's as they are: the rules ``score_not_a_number`` and ``rank_not_a_number`` check them and
    :func:`cleaned_sql` reads them as numbers. Text, not parsed: the dbt package's ``columns`` are Jinja
    (:mod:`hiersql.api.dbt`)."""
    none = "CAST(NULL AS DOUBLE PRECISION)"
    given = {role: none if columns.get(role, "NULL") == "NULL" else columns[role] for role in ("score", "rank")}
    selected = [*([f"CAST({columns['system']} AS TEXT) AS system"] if table == "predictions" else []),
                f"CAST({columns['instance']} AS TEXT) AS instance_id", f"CAST({columns['label']} AS TEXT) AS label",
                *([f"{given['score']} AS score"] if table == "predictions" else []), f"{given['rank']} AS rank"]
    return "SELECT\n  " + ",\n  ".join(selected) + f"\nFROM {source}\n"


def cleaned_names(tables: Mapping[str, str] | None = None) -> dict[str, str]:
    """``tables`` (the ``--table`` renames) with each input table renamed to its cleaned rows,
    ``hiersql_<table>`` (:func:`cleaned_sql`): what the measures' SQL reads."""
    return {**dict(tables or {}), **{t: f"hiersql_{t}" for t in INPUT_TABLES}}


def rules_table() -> str:
    """The rules as the Markdown table of docs/sql.md (a test checks the page against it)."""
    head = "| table | column | rule | action | message |\n| --- | --- | --- | --- | --- |\n"
    return head + "".join(f"| `{r.table}` | `{r.column}` | `{r.name}` | {_described(r.action)} | {r.message} |\n"
                          for r in RULES)


def _described(action: str) -> str:
    return f"error (dropped when `{action}` is `ignore`)" if action in OPTIONS else action
