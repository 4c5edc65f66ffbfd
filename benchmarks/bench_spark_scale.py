"""Spark against DuckDB on a large input, in the same run: set-based measures, MGIA and LCA.

    python benchmarks/generate.py --nodes 325000 --depth 14 --multi-parent 0.2 --instances 450000 \\
        --labels 3.3 --seed 1 --out benchmarks/data/big
    /usr/bin/time -v .venv/bin/python benchmarks/bench_spark_scale.py --data benchmarks/data/big \\
        [--master local[2]] [--families set_based,mgia,lca] [--limit 600] [--spark-conf spark.driver.memory=8g] \\
        [--upload parquet|arrow] [--stages] [--partition-rows N]

Loads the data into the in-memory DuckDB store once (timed apart), then for each measure group computes it with
the embedded DuckDB engine and with Spark (the store's tables uploaded once, timed apart) and prints both times,
their ratio and whether the values agree to 1e-9. A Spark run longer than ``--limit`` seconds is cancelled
(``cancelAllJobs``) and reported as stopped.

``--upload arrow`` copies the store's tables into Spark with ``SparkEngine.copy_store``, the path of
``--engine spark`` (the tables as Arrow, written by pyarrow as Parquet files of the engine's stage folder when it
has one, else sent through ``createDataFrame``); ``--upload parquet`` (default) has DuckDB write them as Parquet
files in a temporary folder and Spark read those itself (``spark.read.parquet``, each table then stored as a
stage is), which is how a large input reaches a Spark cluster anyway. ``--stages`` prints the time of each Spark stage
(``SparkEngine._materialize_tree``; a stage read once is a view, its work falls in the stage that reads it) and of
each Python step.

The Spark variants broadcast one array or map of ancestors per node (``pair_based.sql``, ``lca.sql``,
``set_based.sql``): on the 325,000-node DAG give the driver ``spark.driver.memory=8g``.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hiersql.engines import STORE_TABLES, DuckDBEngine, SparkEngine, open_engine  # noqa: E402
from hiersql.inputs.store import Store  # noqa: E402
from hiersql.inputs.taxonomy import Taxonomy  # noqa: E402
from hiersql.measures import Options, compute  # noqa: E402
from hiersql.options import RunOptions  # noqa: E402

GROUPS = {
    "set_based": ["hierarchical_precision", "hierarchical_recall", "hierarchical_f1"],
    "mgia": ["mgia"],
    "lca": ["lca_precision", "lca_recall", "lca_f1"],
}


def same(rows, want) -> bool:
    return [r[:3] for r in rows] == [r[:3] for r in want] and all(
        math.isclose(a.value, b.value, rel_tol=0, abs_tol=1e-9) or (math.isnan(a.value) and math.isnan(b.value))
        for a, b in zip(rows, want, strict=True))


def upload_parquet(engine: SparkEngine, store: Store, folder: Path) -> None:
    """The store's tables (and its closure on node positions, as ``SparkEngine.copy_store`` copies it) written by
    DuckDB as Parquet files in ``folder`` and read by Spark."""
    for name in (*STORE_TABLES, "node_closure"):
        path = folder / f"{name}.parquet"
        store.con.table(name).write_parquet(str(path))
        engine.use_frame(name, engine.spark.read.parquet(str(path)))
    engine._taxonomy = store.taxonomy


def time_stages() -> None:
    """Print the time of each Spark stage and Python step as it ends; of a step on the driver, also the time
    spent reading its inputs (``SparkEngine._input``) and writing its outputs (``SparkEngine.write``)."""
    materialize, solve = SparkEngine._materialize_tree, SparkEngine.solve
    read, write = SparkEngine._input, SparkEngine.write
    moved = {"read": 0.0, "write": 0.0}

    def timed(method, key):
        def run(self, *args):
            start = time.perf_counter()
            try:
                return method(self, *args)
            finally:
                moved[key] += time.perf_counter() - start
        return run

    def timed_materialize(self, name, tree):
        start = time.perf_counter()
        materialize(self, name, tree)
        kind = "view" if name in self._read_once else "checkpoint"
        print(f"    stage {name:28s} {time.perf_counter() - start:7.1f} s ({kind})", flush=True)

    def timed_solve(self, step, params, options):
        moved.update(read=0.0, write=0.0)
        start = time.perf_counter()
        solve(self, step, params, options)
        print(f"    step  {step.name:28s} {time.perf_counter() - start:7.1f} s (inputs read {moved['read']:.1f} s,"
              f" outputs written {moved['write']:.1f} s)", flush=True)

    SparkEngine._materialize_tree, SparkEngine.solve = timed_materialize, timed_solve
    SparkEngine._input, SparkEngine.write = timed(read, "read"), timed(write, "write")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT / "benchmarks" / "data" / "big")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--families", default=",".join(GROUPS))
    parser.add_argument("--limit", type=float, default=600.0, help="seconds before a Spark run is cancelled")
    parser.add_argument("--spark-conf", action="append", default=[], metavar="K=V")
    parser.add_argument("--upload", choices=("parquet", "arrow"), default="parquet")
    parser.add_argument("--stages", action="store_true", help="print the time of each Spark stage")
    parser.add_argument("--partition-rows", type=int, default=None,
                        help="solve partitioned Python steps per partition from this many keyed rows "
                             "(default: SparkEngine's)")
    args = parser.parse_args()
    if args.stages:
        time_stages()

    start = time.perf_counter()
    store = Store()
    store.load_taxonomy(Taxonomy.from_file(args.data / "taxonomy.tsv"))
    store.add_truth(args.data / "truth.tsv")
    store.add_predictions("sys", args.data / "pred.tsv")
    print(f"DuckDB store load {time.perf_counter() - start:.1f} s", flush=True)

    start = time.perf_counter()
    conf = dict(kv.split("=", 1) for kv in args.spark_conf)
    engine = open_engine(RunOptions(engine="spark", spark_master=args.master, spark_conf=conf), rows=store.size())
    if args.partition_rows is not None:
        engine.partition_rows = args.partition_rows
    print(f"Spark session {time.perf_counter() - start:.1f} s", flush=True)
    start = time.perf_counter()
    scratch = tempfile.TemporaryDirectory(prefix="bench_spark_scale_")
    if args.upload == "parquet":
        upload_parquet(engine, store, Path(scratch.name))
    else:
        engine.copy_store(store)
    print(f"Spark upload ({args.upload}) {time.perf_counter() - start:.1f} s", flush=True)

    options = Options()
    for group in args.families.split(","):
        metrics = GROUPS[group]
        start = time.perf_counter()
        want = compute(DuckDBEngine(store), metrics, options)
        duck = time.perf_counter() - start
        timer = threading.Timer(args.limit, engine.spark.sparkContext.cancelAllJobs)
        timer.start()
        start = time.perf_counter()
        try:
            rows = compute(engine, metrics, options)
        except Exception as exc:  # cancelled at the limit (or failed): reported, the next group still runs
            took = time.perf_counter() - start
            print(f"{group:10s} DuckDB {duck:7.1f} s  Spark stopped after {took:.1f} s "
                  f"({type(exc).__name__}: {str(exc).splitlines()[0][:120]})", flush=True)
            continue
        finally:
            timer.cancel()
        took = time.perf_counter() - start
        print(f"{group:10s} DuckDB {duck:7.1f} s  Spark {took:7.1f} s  ratio {took / duck:5.2f}  "
              f"equal to DuckDB: {same(rows, want)}  steps in partitions: {engine.partitions_solved}", flush=True)
    scratch.cleanup()


if __name__ == "__main__":
    main()
