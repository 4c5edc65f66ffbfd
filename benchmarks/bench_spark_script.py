"""The script that ``hiersql sql METRIC --dialect spark`` prints, run statement by statement in Spark (local
mode) over GermEval 2019 subtask B (the canonical files of ../shared/data, three systems): seconds per
statement and in all, the JVM's start left out.

    python benchmarks/bench_spark_script.py [METRIC [FLAG ...]]   # default pl (the scoring family)

FLAGs go to ``hiersql sql`` (``--stage-dir DIR``: where the stages' Parquet folders go; default
``hiersql_stages`` in the working directory, overwritten by each run).

The rows of the last statement are printed as CSV on stdout (the same input gives the same bytes); the
timings go to stderr.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "canonical"
SYSTEMS = ("Averbis__BOHB_CNN", "LT-UHH__baseline", "twistbytes__thresholding")


def main(metric: str = "pl", *flags: str) -> None:
    from hiersql.engines import SparkEngine, open_engine
    from hiersql.inputs.store import Store
    from hiersql.inputs.taxonomy import Taxonomy
    from hiersql.options import RunOptions

    script = subprocess.run([sys.executable, "-m", "hiersql", "sql", metric, "--dialect", "spark", *flags], check=True,
                            capture_output=True, text=True, env=os.environ).stdout
    checks, stages = script.split("\n\n", 1)
    statements = [s.strip() for part in (checks, stages.split("-- Python step")[0])
                  for s in part.split(";\n") if s.strip()]
    store = Store()
    store.load_taxonomy(Taxonomy.from_file(DATA / "taxonomy.tsv"))
    store.add_truth(DATA / "truth_b.tsv")
    for system in SYSTEMS:
        store.add_predictions(system, DATA / "pred_b" / f"{system}.tsv")
    spark = open_engine(RunOptions(engine="spark", spark_master="local[2]"), rows=0).spark
    engine = SparkEngine(spark)
    engine.copy_store(store)
    start = time.perf_counter()
    rows = []
    for statement in statements:
        began = time.perf_counter()
        rows = spark.sql(statement).collect()
        first = next(line for line in statement.splitlines() if not line.startswith("--"))
        print(f"{time.perf_counter() - began:8.2f} s  {first[:70]}", file=sys.stderr)
    print(f"{time.perf_counter() - start:8.2f} s  in all ({len(statements)} statements)", file=sys.stderr)
    print("system,metric,average,value")
    for row in sorted(tuple(r) for r in rows):
        print(",".join(map(str, row)))
    engine.close()
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
