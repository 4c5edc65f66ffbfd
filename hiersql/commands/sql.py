"""``hiersql sql METRIC``: print the SQL that computes a measure, for any SQL dialect sqlglot writes.

METRIC is a metric name or alias (SPEC §10), a family (``set_based``, ``flat``, a group such as ``hcm``) or
the name of a file of ``sql/`` (``closure``). The query is the family's summary (module constants ``SQL_FILE``
and ``SQL_QUERY``; defaults: the family name and the last query of the file) composed with the queries it
reads as CTEs, its ``$parameters`` replaced by the options given here, transpiled by sqlglot. For one metric the
summary rows are filtered to it. ``--table truth=dw.gold_labels`` points the query at a user's own tables.
"""

from __future__ import annotations

import argparse

DIALECTS = ("duckdb", "postgres", "spark", "databricks", "snowflake", "bigquery", "trino", "presto", "redshift",
            "mysql", "sqlite", "tsql", "oracle", "clickhouse", "hive", "athena")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sql", help="print the SQL query that computes a measure, in another SQL dialect",
        description=__doc__.split("\n\n")[1], formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("metric", metavar="METRIC", help="metric name or alias, family, or sql/ file name")
    parser.add_argument("--dialect", default="duckdb", metavar="NAME",
                        help=f"SQL dialect to write (sqlglot's names: {', '.join(DIALECTS)}; default duckdb)")
    parser.add_argument("--include-root", action="store_true", help="the root counts in the augmented sets")
    parser.add_argument("--max-distance", type=int, metavar="K", help="ancestors up to K edges up")
    parser.add_argument("--beta", type=float, default=1.0, help="beta of hF (default 1)")
    parser.add_argument("--zero-division", type=float, default=0.0, metavar="X",
                        help="value of a ratio with a zero denominator (default 0)")
    parser.add_argument("--augment", default="ancestors", choices=("ancestors", "descendants", "cesa_bianchi"),
                        help="set-based augmentation (default ancestors)")
    parser.add_argument("--table", action="append", default=[], metavar="NAME=TABLE",
                        help="read hiersql table NAME (truth, predictions, closure, ...) from TABLE; repeatable")
    parser.add_argument("--query", metavar="NAME", help="another named query of the file (e.g. per instance)")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="set a $parameter of the query directly; repeatable")
    parser.add_argument("--compact", action="store_true", help="one line instead of pretty-printed")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import sqlglot

    from ..engines import STORE_TABLES, render, render_family
    from ..errors import InputError

    if args.dialect not in sqlglot.Dialect.classes:
        raise InputError("unknown SQL dialect", "--dialect", value=args.dialect)
    file, query, params, metrics = target(args)
    tables = parse_pairs(args.table, "--table")
    unknown = set(tables) - set(STORE_TABLES)
    if unknown:
        raise InputError(f"unknown table (one of {', '.join(STORE_TABLES)})", "--table", value=sorted(unknown)[0])
    params.update({k: _value(v) for k, v in parse_pairs(args.param, "--param").items()})
    if query is None:  # a family: its plan's SQL
        print(render_family(file, params, args.dialect, tables, metrics or None, pretty=not args.compact) + ";")
    else:
        print(render(file, query, params, args.dialect, tables, pretty=not args.compact) + ";")
    return 0


def target(args: argparse.Namespace) -> tuple[str, str | None, dict[str, object], list[str]]:
    """(sql file, query, parameters, metrics to keep) for ``args.metric``; for a family (or one of its
    metrics) without ``--query``: (family, None, parameters, metrics)."""
    from .. import sqlfiles
    from ..engines import family_params
    from ..errors import InputError
    from ..metrics import GROUPS, Options, catalog, plan_of, resolve

    options = Options(include_root=args.include_root, max_distance=args.max_distance, beta=args.beta,
                      zero_division=args.zero_division, augment=args.augment)
    name = args.metric
    cat = catalog()
    families = {f for f, _ in cat.values()}
    if name in cat:
        fam = cat[name][0]
    elif name in families:
        fam = name
    else:
        fam = GROUPS.get(name)
    if fam is not None:
        if not args.query:
            metrics = resolve([name])[fam] if name in cat else []
            return fam, None, family_params(fam, options), metrics
        name = plan_of(fam).file
    if name not in sqlfiles.available():
        known = sorted({*cat, *sqlfiles.available()})
        raise InputError(f"unknown metric, family or SQL file (known: {', '.join(known)})", "METRIC", value=name)
    query = args.query or list(sqlfiles.queries(name))[-1]
    if query not in sqlfiles.queries(name):
        raise InputError(f"no such query in sql/{name}.sql", "--query", value=query)
    plain = {"include_root": options.include_root, "max_distance": options.max_distance, "beta": options.beta,
             "zero_division": options.zero_division, "augment": options.augment}
    return name, query, plain, []


def parse_pairs(specs: list[str], flag: str) -> dict[str, str]:
    from ..errors import InputError

    out = {}
    for spec in specs:
        key, sep, value = spec.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise InputError("expected NAME=VALUE", flag, value=spec)
        out[key.strip()] = value.strip()
    return out


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
