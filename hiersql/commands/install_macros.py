"""``hiersql install-macros --db FILE``: create DuckDB table macros computing the measures in plain SQL.

The macros (``sql/macros.sql``) read the hiersql tables of the file (edges, nodes, closure, instances, truth,
predictions, systems; ``--table truth=gold_labels`` reads another table); ``--taxonomy`` also loads a taxonomy
into the file (edges, nodes, closure). Then, in any DuckDB client:

    SELECT * FROM hiersql_set_based(include_root := true) WHERE metric = 'hierarchical_f1';
"""

from __future__ import annotations

import argparse

from .common import seconds


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "install-macros", help="create DuckDB table macros (hiersql_set_based, ...) in a DuckDB file",
        description=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--db", required=True, metavar="FILE", help="DuckDB file (created if missing)")
    parser.add_argument("--table", action="append", default=[], metavar="NAME=TABLE",
                        help="the macros read hiersql table NAME from TABLE; repeatable")
    parser.add_argument("--taxonomy", metavar="FILE", help="also load this taxonomy (edges, nodes, closure)")
    parser.add_argument("--wait", type=seconds, default=0.0, metavar="SECONDS",
                        help="wait up to SECONDS for another process to release the DuckDB file (default 0)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import re

    import duckdb

    from ..dbfile import connect
    from ..errors import InputError
    from ..macros import install_macros
    from .common import parse_tables

    tables = parse_tables(args.table, "--table")
    con = connect(args.db, wait=args.wait, source=f"--db {args.db}")
    try:
        if args.taxonomy:
            from ..closure import TAXONOMY_TABLES
            from ..store import Store
            from ..taxonomy import Taxonomy

            Store(args.db, con=con, writes=TAXONOMY_TABLES).load_taxonomy(Taxonomy.from_file(args.taxonomy))
        try:
            names = install_macros(con, tables)
        except duckdb.CatalogException as exc:  # a table the macros read is missing from the file
            missing = re.search(r"Table with name (\S+) does not exist", str(exc))
            raise InputError(f"no table {missing[1] if missing else ''} for the macros to read (load a taxonomy"
                             " with --taxonomy, or name your table with --table NAME=TABLE)", f"--db {args.db}"
                             ) from None
    finally:
        con.close()
    print(f"{args.db}: installed {', '.join(names)}")
    return 0
