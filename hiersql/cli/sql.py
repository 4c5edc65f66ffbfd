"""``hiersql sql METRIC``: print the SQL that computes a measure, for any SQL dialect sqlglot writes.

METRIC is a metric name or alias (SPEC §10), a family (``set_based``, ``flat``, a group such as ``hcm``) or
the name of a SQL file (``closure``). For a family, every stage of its plan (:mod:`hiersql.plan`) in
order, its ``$parameters`` replaced by the options given here, transpiled by sqlglot, the Python steps named
where they come; for one metric the summary rows are filtered to it. For a file, the query ``--query`` (default:
the file's last) composed with the queries it reads as CTEs. ``--table truth=dw.gold_labels`` points the
query at a user's own tables. A query that reads the label tables comes after the input rules of
:mod:`hiersql.inputs.rules`: a check query that fails on the first fault, and views of the rows cleaned as
``hiersql evaluate`` reads them (``--unknown``, ``--no-truth``).
"""

from __future__ import annotations

import argparse

from ..inputs import rules as input_rules

STAGE_DIR = "hiersql_stages"  # a printed Spark script's stage folders, as Spark's spark-warehouse: relative
DIALECTS = ("duckdb", "postgres", "spark", "databricks", "snowflake", "bigquery", "trino", "presto", "redshift",
            "mysql", "sqlite", "tsql", "oracle", "clickhouse", "hive", "athena")


def register(subparsers: argparse._SubParsersAction) -> None:
    from ..options import add_flags, sql_options

    parser = subparsers.add_parser(
        "sql", help="print the SQL query that computes a measure, in another SQL dialect",
        description=__doc__.split("\n\n")[1], formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("metric", metavar="METRIC", help="metric name or alias, family, or sql/ file name")
    parser.add_argument("--dialect", default="duckdb", metavar="NAME",
                        help=f"SQL dialect to write (sqlglot's names: {', '.join(DIALECTS)}; default duckdb)")
    add_flags(parser.add_argument_group("measure options (the $parameters of sql/ they set, or the family's plan)"),
              sql_options())
    parser.add_argument("--table", action="append", default=[], metavar="NAME=TABLE",
                        help="read hiersql table NAME (truth, predictions, closure, ...) from TABLE; repeatable")
    for option, choices in input_rules.OPTIONS.items():  # the input rules' options, as evaluate's --unknown
        parser.add_argument(f"--{option.replace('_', '-')}", default=choices[0], choices=choices,
                            help=f"the check query's {option} rule: {' or '.join(choices)} (default {choices[0]};"
                                 " docs/sql.md, input rules)")
    parser.add_argument("--stage-dir", default=STAGE_DIR, metavar="DIR",
                        help="the folder where a Spark script writes its stages, a Parquet folder each (Spark's"
                             f" paths: hdfs://, s3a://, ...; one every executor reaches; default {STAGE_DIR},"
                             " relative to Spark's working directory)")
    parser.add_argument("--query", metavar="NAME", help="another named query of the file (e.g. per instance)")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="set a $parameter of the query directly; repeatable")
    parser.add_argument("--compact", action="store_true", help="one line instead of pretty-printed")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import sqlglot

    from .. import sqlfiles
    from ..engines import family_params, render, render_family
    from ..engines.compile import checks_script, one_run
    from ..engines.dialect import dialect
    from ..errors import InputError
    from ..measures import plan_of
    from ..options import Options, from_args, sql_options
    from .common import parse_tables

    args.dialect = {"postgresql": "postgres"}.get(args.dialect, args.dialect)  # the server's own name too
    if args.dialect not in sqlglot.Dialect.classes:
        known = ", ".join(sorted(d for d in sqlglot.Dialect.classes if d))
        raise InputError(f"unknown SQL dialect (known: {known})", "--dialect", value=args.dialect)
    refusal = dialect(args.dialect).refusal
    if refusal is not None:
        raise InputError(refusal, "--dialect", value=args.dialect)
    options = from_args(Options, args)
    file, query, params, metrics = target(args.metric, args.query, options)
    tables = parse_tables(args.table)
    given = checked_params(args, file, query)
    if query is None:  # a family: one run of its plan (its own options: unbounded errors, one k)
        named = {o.name for o in sql_options()} & given.keys()
        options = one_run(plan_of(file), metrics, options.with_(**{name: given.pop(name) for name in named}))
        try:
            params = family_params(plan_of(file), options)
        except ValueError as exc:
            raise InputError(str(exc), "METRIC", value=args.metric) from None
    params.update(given)
    cleaned = input_rules.cleaned_names(tables)  # the measures read the input tables as evaluate reads them
    if query is None:  # a family: its plan's SQL
        sql = render_family(plan_of(file), params, args.dialect, cleaned, metrics or None, pretty=not args.compact,
                            options=options, stage_dir=args.stage_dir)
    else:
        missing = sorted(sqlfiles.parameters(_texts(file, query)) - params.keys())
        if missing:  # printed, they would be placeholders of a database driver, which no SQL shell binds
            raise InputError(f"query {query} of {file}.sql takes parameters without a value here: give them"
                             f" with --param {'=VALUE --param '.join(missing)}=VALUE", "--query", value=query)
        sql = render(file, query, params, args.dialect, cleaned, pretty=not args.compact)
    rules = {option: getattr(args, option) for option in input_rules.OPTIONS}
    untested = "" if dialect(args.dialect).run_here else (
        f"-- {args.dialect}: transpiled by sqlglot, not run by hiersql's tests (they run DuckDB, PostgreSQL and"
        " Spark: docs/sql.md)\n")
    print(untested + checks_script(sql, tables, args.dialect, rules, pretty=not args.compact) + sql
          + ";")
    return 0


def _texts(file: str, query: str) -> str:
    """The text of query ``query`` of ``sql/<file>.sql`` and of the queries it reads."""
    from .. import sqlfiles

    return " ".join(sqlfiles.queries(file)[q] for q in (*sqlfiles.dependencies(file, query), query))


def checked_params(args: argparse.Namespace, file: str, query: str | None) -> dict[str, object]:
    """The ``--param`` values; a flag or ``--param`` that sets no parameter of the query (of the family's
    plan when ``query`` is None: ``file`` is then the family) is an error that lists the query's parameters,
    and a ``--param`` named after an option is checked as that option."""
    from .. import sqlfiles
    from ..errors import InputError
    from ..measures import plan_of
    from ..options import OptionError, Options, given, sql_options
    from ..plan import summary_sql

    if query is None:
        plan = plan_of(file)
        texts = " ".join([*sqlfiles.queries(plan.file, "duckdb").values(), *sqlfiles.queries(plan.file).values(),
                          summary_sql(plan, list(plan.metrics), ("micro", "macro"), True)])
        where = f"the {file} family takes"
    else:
        texts = _texts(file, query)
        where = f"query {query} of {file}.sql takes"
    # the engine's own tuning parameters, set by the family's params(), not by the user
    takes = sqlfiles.parameters(texts) - {"list_counts", "list_bits", "instance_low", "instance_high",
                                         "batch_size", "beyond"}
    where = f"{where} {', '.join(sorted(takes)) or 'no parameter'}"
    for option in given(args, sql_options()):
        shaped = option.plan and query is None and file in option.families  # the family's plan reads it
        if option.name not in takes and not shaped:
            what = f"shapes the plan of the {', '.join(option.families)} family" if option.plan else \
                f"sets no parameter of the query ({where})"
            raise InputError(what, option.flag,
                             value=None if option.flag_kind == "switch" else getattr(args, option.name))
    texts = parse_pairs(args.param, "--param")
    for name in texts:
        if name not in takes:
            raise InputError(f"unknown parameter ({where})", "--param", value=name)
    values = {name: _value(text) for name, text in texts.items()}
    named = {o.name for o in sql_options()} & values.keys()
    for option in given(args, sql_options()):
        if option.name in named:  # which of the two would be meant?
            raise InputError(f"sets {option.name}, which {option.flag} sets too: give one", "--param",
                             value=f"{option.name}={texts[option.name]}")
    for name, (ok, rule) in _PARAMETER_RULES.items():
        if name in values and not ok(values[name]):
            raise InputError(f"{name} {rule}", "--param", value=f"{name}={texts[name]}")
    try:
        options = Options(**{name: values[name] for name in named})
    except OptionError as exc:
        raise InputError(f"{exc.option} {exc.rule}", "--param", value=f"{exc.option}={texts[exc.option]}") from None
    return {**values, **{name: getattr(options, name) for name in named}}


def target(name: str, query: str | None, options) -> tuple[str, str | None, dict[str, object], list[str]]:
    """(sql file, query, parameters, metrics to keep) for the METRIC ``name``; for a family (or one of its
    metrics) without ``--query``: (family, None, no parameters, metrics), its plan's parameters being those of
    the run that computes the metrics (:func:`~hiersql.engines.compile.one_run`, in :func:`run`); those of a
    file are the options it uses."""
    from .. import sqlfiles
    from ..engines import family_params
    from ..errors import InputError
    from ..measures import FAMILIES, GROUPS, catalog, plan_of, resolve
    from ..options import sql_options

    cat = catalog()
    fam = cat[name][0] if name in cat else GROUPS.get(name)
    if fam is not None:
        if not query:
            return fam, None, {}, resolve([name])[fam] if name in cat else []
        name = plan_of(fam).file
    if name not in sqlfiles.available():
        known = sorted({*cat, *sqlfiles.available()})
        raise InputError(f"unknown metric, family or SQL file (known: {', '.join(known)})", "METRIC", value=name)
    query = query or list(sqlfiles.queries(name))[-1]
    if query not in sqlfiles.queries(name):
        raise InputError(f"no such query in {name}.sql", "--query", value=query)
    params = {o.name: getattr(options, o.name) for o in sql_options() if o.sql}
    family = next((f for f in FAMILIES if plan_of(f).file == name), None)  # its plan's derived parameters
    return name, query, {**params, **(family_params(plan_of(family), options) if family else {})}, []


def parse_pairs(specs: list[str], flag: str) -> dict[str, str]:
    from ..errors import InputError

    out = {}
    for spec in specs:
        key, sep, value = spec.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise InputError("expected NAME=VALUE", flag, value=spec)
        out[key.strip()] = value.strip()
    return out


# The $parameters that are no option (the options' values are checked as the options): their rules.
_PARAMETER_RULES = {
    "fixed_universe": (lambda v: isinstance(v, bool), "must be true or false"),
    "max_depth": (lambda v: v is None or (type(v) is int and v >= 0), "must be an integer >= 0 or null"),
}


def _value(text: str) -> object:
    """A ``--param`` value: null, true/false, an int, a float, else the text."""
    low = text.lower()
    if low in ("null", "none"):
        return None
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text
