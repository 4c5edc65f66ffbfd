"""Time the SQL measures (set-based + flat) on each engine: GermEval 2019 subtask B, every system.

    .venv/bin/python benchmarks/bench_engines.py [--systems N] [--skip-spark] [--skip-postgres]

PostgreSQL: ``HIERSQL_PG_DSN`` if set, else a throwaway cluster started with ``scripts/start_postgres.sh``.
Spark: pyspark local mode (``local[2]``). Every engine's rows are checked against DuckDB's (1e-9).
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "canonical"
METRICS = ["hierarchical_precision", "hierarchical_recall", "hierarchical_f1", "symmetric_difference_loss",
           "example_f1", "hamming_loss", "label_f1"]


def timed(label: str, fn, results: list):
    start = time.perf_counter()
    out = fn()
    results.append((label, time.perf_counter() - start))
    print(f"{label:<45} {results[-1][1]:8.2f} s", flush=True)
    return out


def same(rows, ref) -> None:
    assert [r[:3] for r in rows] == [r[:3] for r in ref], "different rows"
    worst = max(abs(a.value - b.value) for a, b in zip(rows, ref, strict=True))
    assert worst <= 1e-9 or math.isnan(worst), worst
    print(f"{'':<45} max |diff| vs DuckDB API = {worst:.1e}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--systems", type=int, default=0, help="only the first N systems (0 = all)")
    parser.add_argument("--skip-spark", action="store_true")
    parser.add_argument("--skip-postgres", action="store_true")
    args = parser.parse_args()

    import duckdb

    from hiersql.api.macros import install_macros
    from hiersql.engines import DuckDBEngine, PostgresEngine, SparkEngine
    from hiersql.inputs.store import Store
    from hiersql.inputs.taxonomy import Taxonomy
    from hiersql.measures import Options, compute, family, resolve

    results: list[tuple[str, float]] = []
    systems = sorted(p.stem for p in (DATA / "pred_b").glob("*.tsv"))[: args.systems or None]

    def load(db=None) -> Store:
        store = Store(db)
        store.load_taxonomy(Taxonomy.from_file(DATA / "taxonomy.tsv"))
        store.add_truth(DATA / "truth_b.tsv")
        for name in systems:
            store.add_predictions(name, DATA / "pred_b" / f"{name}.tsv")
        return store

    store = timed(f"load store ({len(systems)} systems)", load, results)
    n_pred = store.con.execute("SELECT count(*) FROM predictions").fetchone()[0]
    print(f"{'':<45} {n_pred} prediction rows, "
          f"{store.con.execute('SELECT count(*) FROM instances').fetchone()[0]} instances")
    options = Options()

    def api():
        rows = [r for fam, ms in resolve(METRICS).items() for r in family(fam).evaluate(store, ms, options)]
        return sorted(rows, key=lambda r: (r.system, r.metric, r.average))

    ref = timed("DuckDB, Python API (Store.run)", api, results)
    same(timed("DuckDB, DuckDBEngine (one statement)", lambda: compute(DuckDBEngine(store), METRICS), results),
         ref)

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "macros.duckdb"
        load(db).close()
        con = duckdb.connect(str(db))
        timed("DuckDB macros: install", lambda: install_macros(con), results)
        timed("DuckDB macros: SELECT * FROM hiersql_set_based()",
              lambda: con.execute("SELECT * FROM hiersql_set_based()").fetchall(), results)
        con.close()

    if not args.skip_postgres:
        dsn, server = os.environ.get("HIERSQL_PG_DSN"), None
        if not dsn:
            server = tempfile.mkdtemp(prefix="hiersql-bench-pg-")
            dsn = subprocess.run([str(ROOT / "scripts" / "start_postgres.sh"), server], check=True,
                                 capture_output=True, text=True).stdout.strip()
        try:
            pg = PostgresEngine(dsn)
            timed("PostgreSQL: copy_store", lambda: pg.copy_store(store), results)
            same(timed("PostgreSQL: evaluate", lambda: compute(pg, METRICS), results), ref)
            timed("PostgreSQL: build_closure (WITH RECURSIVE)", pg.build_closure, results)
            pg.close()
        finally:
            if server:
                subprocess.run([str(ROOT / "scripts" / "start_postgres.sh"), "--stop", server], check=False)

    if not args.skip_spark:
        def session():
            from pyspark.sql import SparkSession

            spark = (SparkSession.builder.master("local[2]").appName("hiersql-bench")
                     .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
                     .getOrCreate())
            spark.sparkContext.setLogLevel("ERROR")
            return spark

        spark = timed("Spark: start local session", session, results)
        sp = SparkEngine(spark)
        timed("Spark: copy_store", lambda: sp.copy_store(store), results)
        same(timed("Spark: evaluate (first)", lambda: compute(sp, METRICS), results), ref)
        same(timed("Spark: evaluate (again)", lambda: compute(sp, METRICS), results), ref)
        timed("Spark: build_closure (WITH RECURSIVE, UNION ALL)", sp.build_closure, results)
        spark.stop()

    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"peak RSS: this process {own:.0f} MiB, largest child (JVM, postgres) {children:.0f} MiB")


if __name__ == "__main__":
    main()
