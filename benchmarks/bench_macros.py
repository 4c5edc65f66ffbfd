"""Run one query over the macros of a DuckDB file (``hiersql install-macros``), for timing with an A/B runner.

    python benchmarks/bench_macros.py --db FILE [--query SQL]

The file is made by ``hiersql evaluate ... --db FILE`` (hiersql's tables) and ``hiersql install-macros --db
FILE``, once per commit compared; RESULTS.md gives the commands. Prints the number of rows and the first one.
"""

from __future__ import annotations

import argparse

import duckdb


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--query", default="SELECT * FROM hiersql_severity(top_k := 5) ORDER BY ALL")
    args = parser.parse_args()
    with duckdb.connect(args.db, read_only=True) as con:
        rows = con.execute(args.query).fetchall()
    print(len(rows), rows[:1])


if __name__ == "__main__":
    main()
