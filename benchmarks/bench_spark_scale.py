"""Spark against DuckDB on a large input, in the same run: set-based measures, MGIA and LCA.

    python benchmarks/generate.py --nodes 325000 --depth 14 --multi-parent 0.2 --instances 450000 \\
        --labels 3.3 --seed 1 --out benchmarks/data/big
    /usr/bin/time -v .venv/bin/python benchmarks/bench_spark_scale.py --data benchmarks/data/big \\
        [--master local[2]] [--families set_based,mgia,lca] [--limit 600] [--spark-conf spark.driver.memory=6g]

Loads the data into the in-memory DuckDB store once (timed apart), then for each measure group computes it with
the embedded DuckDB engine and with Spark (the store's tables uploaded once, timed apart) and prints both times,
their ratio and whether the values agree to 1e-9. A Spark run longer than ``--limit`` seconds is cancelled
(``cancelAllJobs``) and reported as stopped.
"""

from __future__ import annotations

import argparse
import math
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hiersql.engines import DuckDBEngine, open_engine  # noqa: E402
from hiersql.metrics import Options  # noqa: E402
from hiersql.options import RunOptions  # noqa: E402
from hiersql.store import Store  # noqa: E402
from hiersql.taxonomy import Taxonomy  # noqa: E402

GROUPS = {
    "set_based": ["hierarchical_precision", "hierarchical_recall", "hierarchical_f1"],
    "mgia": ["mgia"],
    "lca": ["lca_precision", "lca_recall", "lca_f1"],
}


def same(rows, want) -> bool:
    return [r[:3] for r in rows] == [r[:3] for r in want] and all(
        math.isclose(a.value, b.value, rel_tol=0, abs_tol=1e-9) or (math.isnan(a.value) and math.isnan(b.value))
        for a, b in zip(rows, want, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT / "benchmarks" / "data" / "big")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--families", default=",".join(GROUPS))
    parser.add_argument("--limit", type=float, default=600.0, help="seconds before a Spark run is cancelled")
    parser.add_argument("--spark-conf", action="append", default=[], metavar="K=V")
    args = parser.parse_args()

    start = time.perf_counter()
    store = Store()
    store.load_taxonomy(Taxonomy.from_file(args.data / "taxonomy.tsv"))
    store.add_truth(args.data / "truth.tsv")
    store.add_predictions("sys", args.data / "pred.tsv")
    print(f"DuckDB store load {time.perf_counter() - start:.1f} s", flush=True)

    start = time.perf_counter()
    conf = dict(kv.split("=", 1) for kv in args.spark_conf)
    engine = open_engine(RunOptions(engine="spark", spark_master=args.master, spark_conf=conf))
    print(f"Spark session {time.perf_counter() - start:.1f} s", flush=True)
    start = time.perf_counter()
    engine.copy_store(store)
    print(f"Spark upload {time.perf_counter() - start:.1f} s", flush=True)

    options = Options()
    for group in args.families.split(","):
        metrics = GROUPS[group]
        start = time.perf_counter()
        want = DuckDBEngine(store).evaluate(metrics, options)
        duck = time.perf_counter() - start
        timer = threading.Timer(args.limit, engine.spark.sparkContext.cancelAllJobs)
        timer.start()
        start = time.perf_counter()
        try:
            rows = engine.evaluate(metrics, options)
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


if __name__ == "__main__":
    main()
