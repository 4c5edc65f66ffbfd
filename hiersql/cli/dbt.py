"""``hiersql dbt --taxonomy FILE --adapter NAME --out FOLDER``: write a dbt package of the measures SQL
computes alone.

The package (:mod:`hiersql.api.dbt`; docs/dbt.md) holds the taxonomy as seeds, models of the user's truth and
predictions read as ``hiersql evaluate`` reads them, a data test that fails with the input faults ``evaluate``
refuses, and one model per family: ``(system, metric, average, value)``. In the user's project:
``packages.yml`` lists ``- local: FOLDER``, ``dbt_project.yml`` sets the vars naming the tables and columns,
then ``dbt deps && dbt build``.
"""

from __future__ import annotations

import argparse

from .common import given


def register(subparsers: argparse._SubParsersAction) -> None:
    from ..api.dbt import ADAPTERS
    from ..options import add_flags, sql_options

    parser = subparsers.add_parser(
        "dbt", help="write a dbt package of the measures SQL computes alone",
        description=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--taxonomy", required=True, type=given, metavar="FILE",
                        help="the taxonomy (written as seeds)")
    parser.add_argument("--adapter", required=True, choices=ADAPTERS, help="the dbt adapter of the project")
    parser.add_argument("--out", required=True, metavar="FOLDER", help="folder of the package (made if missing)")
    parser.add_argument("--families", metavar="LIST",
                        help="comma-separated families (default: every family SQL computes alone)")
    add_flags(parser.add_argument_group("measure options (fixed in the package's SQL)"), sql_options())
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..api.dbt import sql_families, write_package
    from ..errors import InputError
    from ..inputs.taxonomy import Taxonomy
    from ..options import Options, from_args

    options = from_args(Options, args)
    offered = sql_families(options)
    families = offered if args.families is None else [f.strip() for f in args.families.split(",")]
    for family in families:
        if family not in offered:
            raise InputError(f"not a family SQL computes alone with these options (those: {', '.join(offered)})",
                             "--families", value=family)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise InputError("is a file, not a folder", "--out", value=args.out)
    written = write_package(out, Taxonomy.from_file(args.taxonomy), args.adapter, options, families)
    print(f"{out}: a dbt package of {', '.join(families)} ({len(written)} files)")
    return 0
