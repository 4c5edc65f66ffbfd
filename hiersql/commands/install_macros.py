"""``hiersql install-macros --db FILE``: create DuckDB table macros computing the measures in plain SQL.

The macros (``sql/macros.sql``) read the hiersql tables of the file (edges, nodes, closure, instances, truth,
predictions, systems; ``--table truth=gold_labels`` reads another table); ``--taxonomy`` also loads a taxonomy
into the file (edges, nodes, closure). Then, in any DuckDB client:

    SELECT * FROM hiersql_set_based(include_root := true) WHERE metric = 'hierarchical_f1';
"""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "install-macros", help="create DuckDB table macros (hiersql_set_based, ...) in a DuckDB file",
        description=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--db", required=True, metavar="FILE", help="DuckDB file (created if missing)")
    parser.add_argument("--table", action="append", default=[], metavar="NAME=TABLE",
                        help="the macros read hiersql table NAME from TABLE; repeatable")
    parser.add_argument("--taxonomy", metavar="FILE", help="also load this taxonomy (edges, nodes, closure)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import duckdb

    from ..engines import STORE_TABLES, install_macros
    from ..errors import InputError
    from .sql import parse_pairs

    tables = parse_pairs(args.table, "--table")
    unknown = set(tables) - set(STORE_TABLES)
    if unknown:
        raise InputError(f"unknown table (one of {', '.join(STORE_TABLES)})", "--table", value=sorted(unknown)[0])
    if args.taxonomy:
        from ..store import Store
        from ..taxonomy import Taxonomy

        store = Store(args.db)
        store.load_taxonomy(Taxonomy.from_file(args.taxonomy))
        store.close()
    try:
        con = duckdb.connect(args.db)
    except duckdb.Error as exc:
        raise InputError(f"cannot open DuckDB file ({str(exc).splitlines()[0]})", args.db) from None
    try:
        names = install_macros(con, tables)
    finally:
        con.close()
    print(f"{args.db}: installed {', '.join(names)}")
    return 0
