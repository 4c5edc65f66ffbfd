"""``hiersql report --db FILE --out report.html``: an HTML page of the results stored in a DuckDB file
(by ``hiersql evaluate --db``, ``hiersql jobs run`` or ``Evaluator.save``)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write an HTML report (tables and charts) of stored results")
    p.add_argument("--db", required=True, metavar="FILE", help="DuckDB file with a results table")
    p.add_argument("--out", required=True, metavar="FILE.html", help="where to write the report")
    p.add_argument("--dataset", action="append", help="only these datasets (repeatable)")
    p.add_argument("--title", default="hiersql results")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    import duckdb

    from ..errors import InputError
    from ..report import html_report

    if not Path(args.db).is_file():
        raise InputError("results database not found", args.db)
    with duckdb.connect(args.db, read_only=True) as con:
        has = con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'results'").fetchall()
        if not has[0][0]:
            raise InputError("no results table (run hiersql evaluate --db or hiersql jobs run first)", args.db)
        # the latest run of each (dataset, system, metric, average)
        results = con.execute(
            "SELECT dataset, system, metric, average, value FROM results"
            " QUALIFY row_number() OVER (PARTITION BY dataset, system, metric, average"
            " ORDER BY created_at DESC) = 1 ORDER BY dataset, metric, average, system"
        ).df()
    if args.dataset:
        results = results[results["dataset"].isin(args.dataset)]
    if results.empty:
        raise InputError("no results to report", args.db, value=args.dataset)
    out = html_report(results, args.out, args.title)
    print(f"hiersql: wrote {out}", file=sys.stderr)
    return 0
