"""``hiersql demo``: evaluate the three hand-written systems of ``fixtures/demo`` with every measure that
applies and print one column per system."""

from __future__ import annotations

import argparse
from pathlib import Path


def demo_dir() -> Path:
    """``fixtures/demo`` of the repository (the demo data is not part of the wheel)."""
    return Path(__file__).resolve().parents[2] / "fixtures" / "demo"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run every measure on the small demo data of fixtures/demo")
    p.add_argument("--metrics", default="all", help="measures to compute (default: all that apply)")
    p.add_argument("--db", metavar="FILE", help="keep the tables and results in this DuckDB file")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..errors import InputError
    from ..evaluator import Evaluator

    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    if not metrics:
        raise InputError("no measure given", "--metrics", value=args.metrics)
    con = None
    if args.db:
        from ..dbfile import connect

        con = connect(args.db, source=f"--db {args.db}")
    folder = demo_dir()
    ev = Evaluator(folder / "taxonomy.tsv", db=args.db, con=con)
    ev.add_truth(folder / "truth.tsv")
    for system in ("cautious", "flat_errors", "shallow"):
        ev.add_predictions(system, folder / f"{system}.tsv")
    print(f"taxonomy: {ev.taxonomy}\ntruth: {folder / 'truth.tsv'} ({len(ev.con.table('instances'))} instances)\n")
    import pandas as pd

    rows = ev.rows(metrics)
    if args.db:
        ev.save(rows, dataset="demo")
    table = pd.DataFrame(rows)
    table["metric"] = table["metric"] + table["average"].map(lambda a: f" ({a})" if a else "")
    wide = table.pivot_table(index="metric", columns="system", values="value", sort=False)
    print(wide.to_string(float_format=lambda v: f"{v:.4f}"))
    return 0
