"""``hiersql install-macros --db FILE``: create DuckDB table macros computing the measures in plain SQL.

The macros (``macros.sql``) read the hiersql tables of the file (edges, nodes, closure, instances, truth,
predictions, systems; ``--table truth=gold_labels`` reads another table with hiersql's columns); ``--truth gold
--predictions runs --instance-col doc_id ...`` read your tables under your column names (the instances and
systems they list); ``--taxonomy`` also loads a taxonomy into the file (edges, nodes, closure). A re-install
without ``--table``, ``--truth`` or ``--predictions`` reads the tables of the last one. Then, in any DuckDB
client:

    SELECT * FROM hiersql_set_based(include_root := true) WHERE metric = 'hierarchical_f1';
"""

from __future__ import annotations

import argparse

from .common import given, seconds


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "install-macros", help="create DuckDB table macros (hiersql_set_based, ...) in a DuckDB file",
        description=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--db", required=True, type=given, metavar="FILE", help="DuckDB file (created if missing)")
    parser.add_argument("--table", action="append", default=[], metavar="NAME=TABLE",
                        help="the macros read hiersql table NAME from TABLE; repeatable")
    parser.add_argument("--taxonomy", type=given, metavar="FILE",
                        help="also load this taxonomy (edges, nodes, closure)")
    for table in ("truth", "predictions"):
        parser.add_argument(f"--{table}", type=given, metavar="TABLE",
                            help=f"your {table} table, read under your column names (the --*-col flags)")
    for role, default in (("instance", "instance_id"), ("label", "label"), ("system", "system"),
                          ("score", "score, if there"), ("rank", "none")):
        parser.add_argument(f"--{role}-col", metavar="COLUMN",
                            help=f"column of the {role} in --truth/--predictions (default: {default})")
    parser.add_argument("--wait", type=seconds, default=0.0, metavar="SECONDS",
                        help="wait up to SECONDS for another process to release the DuckDB file (default 0)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..api.macros import UserTables, install_macros
    from ..errors import InputError
    from ..inputs.dbfile import connect
    from ..inputs.taxonomy import Taxonomy
    from .common import parse_tables

    tables = parse_tables(args.table, "--table")
    columns = {role: getattr(args, f"{role}_col") for role in ("instance", "label", "system", "score", "rank")
               if getattr(args, f"{role}_col") is not None}
    for table in ("truth", "predictions"):
        if getattr(args, table) is not None and table in tables:
            raise InputError(f"names the {table} table as --table {table}= does: give one", f"--{table}",
                             value=getattr(args, table))
    user = None
    if args.truth or args.predictions:
        user = UserTables(args.truth, args.predictions, columns)
    elif columns:
        role, column = next(iter(columns.items()))
        raise InputError("names a column of --truth or --predictions, and neither is given", f"--{role}-col",
                         value=column)
    taxonomy = Taxonomy.from_file(args.taxonomy) if args.taxonomy else None  # a bad file: nothing opened
    con = connect(args.db, wait=args.wait, source=f"--db {args.db}")
    try:
        names = install_macros(con, tables, taxonomy, where=f"--db {args.db}", user=user)
    finally:
        con.close()
    print(f"{args.db}: installed {', '.join(names)}")
    return 0
