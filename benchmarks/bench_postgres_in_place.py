"""GermEval 2019 subtask B, every family, with ``--engine postgres`` over tables of that server (read, checked
and evaluated in place) against the default DuckDB engine over the same tables (issue 41, item 4: within
1.5x DuckDB's time).

The script makes the database ``hiersql_bench_in_place`` on the server at ``--dsn`` (``gold(doc, genre)``,
``runs(model, doc, genre)``, ``genres(parent_genre, child_genre)``: the canonical files, the system being the
file stem) and prints the two commands, which ``benchmarks/RESULTS.md`` times alternately::

    scripts/start_postgres.sh /tmp/pgb
    .venv/bin/python benchmarks/bench_postgres_in_place.py --dsn "host=/tmp/pgb port=5432 user=hiersql dbname=postgres"

``--instances N`` writes generated tables instead (the same taxonomy; ``N`` instances of one true genre each;
4 models of one predicted label per instance, half of them not in the taxonomy) and prints ``--metrics hp
--unknown ignore``: the in-place check of ``4 N`` rows, most of them flagged. ``--drop`` removes the database.
"""

from __future__ import annotations

import argparse
import random
import shlex
from pathlib import Path
from urllib.parse import quote as urlquote

DATABASE = "hiersql_bench_in_place"
DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "canonical"
COLUMNS = {"gold": ("doc", "genre"), "runs": ("model", "doc", "genre"), "genres": ("parent_genre", "child_genre")}


def rows(path: Path) -> list[tuple[str, ...]]:
    with path.open(encoding="utf-8") as fh:
        return [tuple(line.rstrip("\n").split("\t")) for line in fh if line.strip()]


def tables() -> dict[str, list[tuple[str, ...]]]:
    runs = [(p.stem, *row) for p in sorted((DATA / "pred_b").glob("*.tsv")) for row in rows(p)]
    return {"gold": rows(DATA / "truth_b.tsv"), "runs": runs, "genres": rows(DATA / "taxonomy.tsv")}


def generated(n: int) -> dict[str, list[tuple[str, ...]]]:
    """``n`` instances and 4 models' predictions on the canonical taxonomy, half the labels not in it."""
    rng = random.Random(7)
    taxonomy = rows(DATA / "taxonomy.tsv")
    labels = sorted({child for _, child in taxonomy})
    runs = [(f"m{m}", f"d{i}", rng.choice(labels) if rng.random() < 0.5 else f"unknown{rng.randrange(n)}")
            for m in range(4) for i in range(n)]
    return {"gold": [(f"d{i}", rng.choice(labels)) for i in range(n)], "runs": runs, "genres": taxonomy}


def main() -> None:
    import psycopg
    from psycopg import sql

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dsn", required=True, help="libpq DSN of a server where the database may be made")
    parser.add_argument("--instances", type=int, help="generated tables of this many instances (see above)")
    parser.add_argument("--drop", action="store_true", help="drop the database and stop")
    args = parser.parse_args()
    with psycopg.connect(args.dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(DATABASE)))
        if args.drop:
            return
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))
    params = psycopg.conninfo.conninfo_to_dict(args.dsn) | {"dbname": DATABASE}
    with psycopg.connect(**params) as con:
        for table, data in (tables() if args.instances is None else generated(args.instances)).items():
            name = sql.Identifier(table)
            con.execute(sql.SQL("CREATE TABLE {} ({})").format(
                name, sql.SQL(", ").join(sql.SQL("{} text").format(sql.Identifier(c)) for c in COLUMNS[table])))
            with con.cursor() as cur, cur.copy(sql.SQL("COPY {} FROM STDIN").format(name)) as copy:
                for row in data:
                    copy.write_row(row)
            con.execute(sql.SQL("ANALYZE {}").format(name))
    base = (f"postgresql://{params.get('user', 'postgres')}@{urlquote(params.get('host', 'localhost'), safe='')}"
            f":{params.get('port', 5432)}/{DATABASE}")
    common = ["hiersql", "evaluate", "--taxonomy", f"{base}::genres", "--truth", f"{base}::gold", "--pred",
              f"{base}::runs", "--instance-col", "doc", "--label-col", "genre", "--system-col", "model",
              "--parent-col", "parent_genre", "--child-col", "child_genre", "--format", "csv",
              *(["--metrics", "all"] if args.instances is None else ["--metrics", "hp", "--unknown", "ignore"])]
    print("in place:", shlex.join([*common, "--engine", "postgres", "--postgres-url", base]))
    print("duckdb:  ", shlex.join(common))


if __name__ == "__main__":
    main()
