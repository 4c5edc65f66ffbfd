"""Every family plan on one engine, GermEval 2019 subtask B, timed per family and checked against DuckDB.

    .venv/bin/python benchmarks/bench_plans.py --engine spark [--systems 19] [--master local[2]] \
        [--spark-conf K=V ...] [--partition-rows N] [--together] [--jvm-threads]
    .venv/bin/python benchmarks/bench_plans.py --engine postgres --dsn "host=/tmp/pg user=hiersql dbname=postgres"
    .venv/bin/python benchmarks/bench_plans.py --engine duckdb

Prints the session start (Spark), the upload of the store's tables, then per family the seconds (wall, and CPU
of this process and the processes it started: Spark's JVM and Python workers; on a busy machine the CPU
seconds compare better than the wall seconds) and whether the rows equal the embedded DuckDB run's to 1e-9
(the tree-induced error is left out: GermEval's sets differ in size; of the scoring trees, PL, the one measure
that needs no edge weights). ``--jvm-threads``: at the end, the CPU seconds of the Spark JVM's threads, summed
by thread name (task threads, the JIT compilers, the collector, ...; threads that ended count in the total only).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hiersql.engines import DuckDBEngine, open_engine  # noqa: E402
from hiersql.inputs.store import Store  # noqa: E402
from hiersql.inputs.taxonomy import Taxonomy  # noqa: E402
from hiersql.measures import FAMILIES, REGISTRY, Options, compute  # noqa: E402
from hiersql.options import RunOptions  # noqa: E402


def _fields(stat: str) -> list[str]:
    """The fields of a ``/proc/.../stat`` line after the command name (the state first)."""
    return stat.rsplit(")", 1)[1].split()


def _stat_seconds(stat: str) -> float:
    """User + system CPU seconds of a ``/proc/.../stat`` line."""
    fields = _fields(stat)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _mine() -> dict[int, str]:
    """``{pid: stat line}`` of this process and its descendants (Linux ``/proc``)."""
    stats = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stats[int(pid)] = Path(f"/proc/{pid}/stat").read_text()
        except OSError:  # ended meanwhile
            continue
    parent = {pid: int(_fields(stat)[1]) for pid, stat in stats.items()}

    def mine(pid: int) -> bool:
        while pid > 1:
            if pid == os.getpid():
                return True
            pid = parent.get(pid, 0)
        return False

    return {pid: stat for pid, stat in stats.items() if mine(pid)}


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and its descendants so far."""
    return sum(map(_stat_seconds, _mine().values()))


def jvm_threads() -> None:
    """Print the CPU seconds of the threads of the Spark JVM this process started, by thread name (digits
    dropped: ``C2 CompilerThread0`` and ``1`` together), from ``/proc/PID/task/TID/stat``."""
    import re
    from collections import Counter

    for pid, stat in _mine().items():
        try:
            if "SparkSubmit" not in Path(f"/proc/{pid}/cmdline").read_text():
                continue
            by_name: Counter[str] = Counter()
            for tid in os.listdir(f"/proc/{pid}/task"):
                line = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
                by_name[re.sub(r"[-\d]+$", "", line[line.index("(") + 1 : line.rindex(")")])] += _stat_seconds(line)
        except OSError:  # ended meanwhile
            continue
        print(f"JVM {pid}: {_stat_seconds(stat):.1f} s CPU, of which threads alive now {sum(by_name.values()):.1f} s:")
        for name, cpu in by_name.most_common(8):
            print(f"  {cpu:7.1f} s  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", choices=("duckdb", "postgres", "spark"), required=True)
    parser.add_argument("--systems", type=int, default=19)
    parser.add_argument("--dsn", help="PostgreSQL connection string (--engine postgres)")
    parser.add_argument("--master", default="local[2]", help="Spark master (--engine spark)")
    parser.add_argument("--spark-conf", action="append", default=[],
                        metavar="K=V", help="Spark settings (--engine spark)")
    parser.add_argument("--partition-rows", type=int, default=None,
                        help="Spark: solve partitioned Python steps per partition from this many keyed rows "
                             "(default: SparkEngine's)")
    parser.add_argument("--together", action="store_true",
                        help="every family in one call, as `hiersql evaluate --metrics all` computes them "
                             "(Spark: SparkEngine.plans_at_once side by side); default one call per family")
    parser.add_argument("--jvm-threads", action="store_true",
                        help="Spark: print the JVM's CPU seconds by thread name at the end")
    args = parser.parse_args()
    canonical = ROOT.parent / "shared" / "data" / "canonical"
    store = Store()
    store.load_taxonomy(Taxonomy.from_file(canonical / "taxonomy.tsv"))
    store.add_truth(canonical / "truth_b.tsv")
    for path in sorted((canonical / "pred_b").glob("*.tsv"))[: args.systems]:
        store.add_predictions(path.stem, path)
    start = time.perf_counter()
    if args.engine == "duckdb":
        engine = DuckDBEngine(store)
    else:
        run = RunOptions(engine=args.engine, **({"postgres_url": args.dsn} if args.engine == "postgres" else
                                                {"spark_master": args.master, "spark_conf": dict(
                                                    kv.split("=", 1) for kv in args.spark_conf)}))
        engine = open_engine(run, rows=store.size())  # as `hiersql evaluate` starts it
        if args.partition_rows is not None:
            engine.partition_rows = args.partition_rows
        print(f"session {time.perf_counter() - start:.2f} s")
        start = time.perf_counter()
        engine.copy_store(store)
        print(f"upload {time.perf_counter() - start:.2f} s")
    measures = {fam: ["pl"] if fam == "scoring" else [m for m in REGISTRY[fam] if m != "tree_induced_error"]
                for fam in FAMILIES}
    total = total_cpu = 0.0
    for fams in [list(FAMILIES)] if args.together else [[fam] for fam in FAMILIES]:
        metrics = [m for fam in fams for m in measures[fam]]
        start, cpu_start = time.perf_counter(), cpu_seconds()
        rows = compute(engine, metrics, Options())
        took, cpu = time.perf_counter() - start, cpu_seconds() - cpu_start
        total += took
        total_cpu += cpu
        want = compute(DuckDBEngine(store), metrics, Options())
        same = [r[:3] for r in rows] == [r[:3] for r in want] and all(
            math.isclose(a.value, b.value, rel_tol=0, abs_tol=1e-9) or (math.isnan(a.value) and math.isnan(b.value))
            for a, b in zip(rows, want, strict=True))
        name = "together" if args.together else fams[0]
        print(f"{name:12s} {took:7.2f} s  cpu {cpu:7.2f} s  rows {len(rows):4d}  equal to DuckDB: {same}")
    print(f"all families {total:.2f} s  cpu {total_cpu:.2f} s")
    if args.jvm_threads:
        jvm_threads()


if __name__ == "__main__":
    main()
