"""Reading labels from tables where they are (issue 14): DuckDB file, PostgreSQL, Parquet, against the TSV files.

Two cases, each timed as alternated runs in this process (A, B, A, B, ...; the machine is noisy, so compare
the medians of alternated runs), reporting the median wall time of each variant and the ratio to the files:

- ``germeval``: GermEval 2019 subtask B, 19 systems (``../shared/data/canonical``): ``Store.load`` of the
  taxonomy, the truth and the 19 systems from the TSV files, against the same from a DuckDB file
  (``gold(doc, genre)``, ``runs(model, doc, genre)``, ``genres(parent_genre, child_genre)``, read with
  ``duckdb:PATH::table`` and ``--system-col model``) and, with ``--pg-dsn``, from the same tables in a
  PostgreSQL database (``postgresql://…::table``). Target: each <= 1.5x the files.
- ``big``: the 450,000-instance case of ``benchmarks/generate.py`` (``benchmarks/data/big``; generate it
  first): the predictions loaded by ``Store.add_predictions_many`` from ``pred.tsv`` against the same rows
  from a Parquet file with a ``system`` column (one system), the taxonomy and truth loaded once before.
  Target: Parquet no slower than TSV.

With ``--engine spark`` the same two cases are timed into a Spark engine (``local[2]``, or ``--spark-master``):
Spark reading the Parquet itself (:func:`hiersql.engines.spark.sources.load`) against the old path, the store reading
the Parquet with DuckDB and its tables uploaded (``Store.load`` + ``SparkEngine.copy_store``); GermEval B's
truth and runs as Parquet (``gold.parquet``, ``runs.parquet`` with the ``model`` column), the big case's
predictions as Parquet with a system column, the taxonomy (and the big case's truth) from the TSV files in
both.

Examples (the commands of ``benchmarks/RESULTS.md``)::

    /usr/bin/time -v python benchmarks/bench_sources.py --runs 7 --pg-dsn "host=/tmp/pg port=5432 user=hiersql"
    /usr/bin/time -v python benchmarks/bench_sources.py --runs 3 --engine spark --big /tmp/big

``--pg-dsn`` is a libpq DSN of a server where the script may create (and drops at the end) the database
``hiersql_bench_sources``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote as urlquote

import duckdb

from hiersql import Store

HERE = Path(__file__).resolve().parent
DATA = (HERE.parent / ".." / "shared" / "data" / "canonical").resolve()
BIG = HERE / "data" / "big"
PG_DATABASE = "hiersql_bench_sources"
COLUMNS = {"instance_col": "doc", "label_col": "genre"}


def alternate(variants: dict[str, Callable[[], object]], runs: int) -> dict[str, list[float]]:
    """Wall times of ``runs`` rounds, each round running every variant once, in turn."""
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(runs):
        for name, work in variants.items():
            start = time.perf_counter()
            work()
            times[name].append(time.perf_counter() - start)
    return times


def report(title: str, times: dict[str, list[float]]) -> None:
    base_name = next(iter(times))
    base = statistics.median(times[base_name])
    print(f"\n{title}")
    for name, values in times.items():
        med = statistics.median(values)
        print(f"  {name:<28} median {med:7.3f} s  (min {min(values):.3f}, max {max(values):.3f}, n={len(values)})"
              f"  ratio to {base_name}: {med / base:.2f}")


def germeval_tables(folder: Path) -> Path:
    """The DuckDB file of the three tables, written from the canonical files."""
    path = folder / "warehouse.duckdb"
    con = duckdb.connect(str(path))
    read = ("read_csv($p, delim='\t', header=false, quote='', escape='', filename=true,"
            " columns={'a': 'VARCHAR', 'b': 'VARCHAR'})")
    con.execute(f"CREATE TABLE gold AS SELECT a AS doc, b AS genre FROM {read}", {"p": str(DATA / "truth_b.tsv")})
    con.execute(f"CREATE TABLE genres AS SELECT a AS parent_genre, b AS child_genre FROM {read}",
                {"p": str(DATA / "taxonomy.tsv")})
    con.execute(f"CREATE TABLE runs AS SELECT parse_filename(filename, true) AS model, a AS doc, b AS genre"
                f" FROM {read} ORDER BY filename", {"p": sorted(str(p) for p in (DATA / "pred_b").glob("*.tsv"))})
    con.close()
    return path


def postgres_uri(dsn: str, path: Path) -> str:
    """Copy the three tables of the DuckDB file into a new database of the server; its URI."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(PG_DATABASE)))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(PG_DATABASE)))
    params = psycopg.conninfo.conninfo_to_dict(dsn) | {"dbname": PG_DATABASE}
    duck = duckdb.connect(str(path), read_only=True)
    with psycopg.connect(**params) as con:
        for table in ("gold", "runs", "genres"):
            rel = duck.table(table)
            con.execute(sql.SQL("CREATE TABLE {} ({})").format(sql.Identifier(table), sql.SQL(", ").join(
                sql.SQL("{} text").format(sql.Identifier(c)) for c in rel.columns)))
            with con.cursor() as cur, cur.copy(sql.SQL("COPY {} FROM STDIN").format(sql.Identifier(table))) as cp:
                for row in rel.fetchall():
                    cp.write_row(row)
    host = urlquote(params.get("host", "localhost"), safe="")
    return f"postgresql://{params.get('user', 'postgres')}@{host}:{params.get('port', 5432)}/{PG_DATABASE}"


def drop_postgres(dsn: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(PG_DATABASE)))


def bench_germeval(runs: int, pg_dsn: str | None) -> None:
    preds = {p.stem: p for p in sorted((DATA / "pred_b").glob("*.tsv"))}

    def files() -> None:
        Store().load(DATA / "taxonomy.tsv", DATA / "truth_b.tsv", preds)

    def tables(base: str) -> Callable[[], None]:
        def load() -> None:
            from functools import partial

            from hiersql import Taxonomy

            store = Store()
            store.load(partial(Taxonomy.from_table, base + "genres", parent="parent_genre", child="child_genre"),
                       base + "gold", [(None, base + "runs")], system_col="model", **COLUMNS)
            assert len(store.systems()) == 19
        return load

    with tempfile.TemporaryDirectory() as tmp:
        path = germeval_tables(Path(tmp))
        variants = {"TSV files": files, "DuckDB file tables": tables(f"duckdb:{path}::")}
        if pg_dsn:
            variants["PostgreSQL tables"] = tables(postgres_uri(pg_dsn, path) + "::")
        try:
            for work in variants.values():  # warm-up: imports, the page cache
                work()
            report("GermEval B, 19 systems: Store.load of taxonomy, truth and predictions", alternate(variants, runs))
        finally:
            if pg_dsn:
                drop_postgres(pg_dsn)


def big_parquet(big: Path, folder: Path) -> Path:
    """The big case's predictions as a Parquet file with a ``system`` column (one system, ``pred``)."""
    parquet = folder / "pred.parquet"
    duckdb.execute("COPY (SELECT 'pred' AS system, column0 AS instance_id, column1 AS label FROM read_csv($p,"
                   " delim='\t', header=false, quote='', escape='', columns={'column0': 'VARCHAR',"
                   f" 'column1': 'VARCHAR'}})) TO '{parquet}' (FORMAT parquet)", {"p": str(big / "pred.tsv")})
    return parquet


def bench_spark(runs: int, cases: set[str], big: Path, master: str, driver_memory: str) -> None:
    """Inputs into a Spark engine: Spark reading the Parquet itself against the store + upload."""
    import json

    from hiersql.engines import open_engine
    from hiersql.engines.spark.sources import load
    from hiersql.options import RunOptions

    engine = open_engine(RunOptions(engine="spark", spark_master=master,
                                    spark_conf={"spark.driver.memory": driver_memory}))

    def variants(taxonomy: Path, truth: Path, pred: Path, **columns: str) -> dict[str, Callable[[], None]]:
        def upload() -> None:
            store = Store()
            store.load(taxonomy, truth, [(None, pred)], **columns)
            engine.copy_store(store)

        def spark_reads() -> None:
            load(engine, Store(), taxonomy, truth, [(None, pred)], **columns)

        return {"store + upload (old)": upload, "Spark reads Parquet": spark_reads}

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if "germeval" in cases:
            duck = duckdb.connect(str(germeval_tables(folder)), read_only=True)
            for table in ("gold", "runs"):
                duck.execute(f"COPY {table} TO '{folder / table}.parquet' (FORMAT parquet)")
            duck.close()
            work = variants(DATA / "taxonomy.tsv", folder / "gold.parquet", folder / "runs.parquet",
                            system_col="model", **COLUMNS)
            for run in work.values():  # warm-up: the JVM's code, the page cache
                run()
            report("GermEval B, 19 systems, --engine spark: taxonomy, truth and predictions into Spark",
                   alternate(work, runs))
        if "big" in cases:
            if not (big / "pred.tsv").is_file():
                print(f"\n(no {big}: run benchmarks/generate.py with the 'big' arguments of its docstring first)")
                return
            meta = json.loads((big / "meta.json").read_text())
            work = variants(Path(meta.get("taxonomy", str(big / "taxonomy.tsv"))), big / "truth.tsv",
                            big_parquet(big, folder))
            report("450,000 instances, --engine spark: predictions Parquet with a system column",
                   alternate(work, runs))


def bench_big(runs: int, big: Path = BIG) -> None:
    if not (big / "pred.tsv").is_file():
        print(f"\n(no {big}: run benchmarks/generate.py with the 'big' arguments of its docstring first)")
        return
    import json

    meta = json.loads((big / "meta.json").read_text())
    base = Store()
    base.load(meta.get("taxonomy", str(big / "taxonomy.tsv")), big / "truth.tsv", {})
    with tempfile.TemporaryDirectory() as tmp:
        parquet = big_parquet(big, Path(tmp))

        def tsv() -> None:
            base.cursor().add_predictions_many({"pred": big / "pred.tsv"})

        def from_parquet() -> None:
            base.cursor().add_predictions(None, parquet)

        tsv()
        from_parquet()
        assert base.systems() == ["pred"]
        report("450,000 instances: the predictions, TSV against Parquet with a system column",
               alternate({"TSV file": tsv, "Parquet, system column": from_parquet}, runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="alternated rounds per case (default 7)")
    parser.add_argument("--cases", default="germeval,big", help="germeval, big or both (default)")
    parser.add_argument("--pg-dsn", help="libpq DSN of a PostgreSQL server for the germeval case")
    parser.add_argument("--engine", default="duckdb", choices=("duckdb", "spark"),
                        help="duckdb: the sources against the files (default); spark: into a Spark engine")
    parser.add_argument("--spark-master", default="local[2]", help="with --engine spark (default local[2])")
    parser.add_argument("--driver-memory", default="2g", help="with --engine spark: spark.driver.memory (2g)")
    parser.add_argument("--big", type=Path, default=BIG, help=f"folder of the big case (default {BIG})")
    args = parser.parse_args()
    cases = set(args.cases.split(","))
    if args.engine == "spark":
        bench_spark(args.runs, cases, args.big, args.spark_master, args.driver_memory)
        return
    if "germeval" in cases:
        bench_germeval(args.runs, args.pg_dsn)
    if "big" in cases:
        bench_big(args.runs, args.big)


if __name__ == "__main__":
    main()
