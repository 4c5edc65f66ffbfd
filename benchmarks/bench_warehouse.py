"""Warehouse scale (issue 41 item 2): ``hiersql evaluate`` of one long Parquet table of several systems on a
generated DAG, every family (``--metrics all``) against set-based hP/hR/hF of the same minutes, with the wall
time and the peak RSS of each run (``/usr/bin/time -v``) under a memory limit.

The data (``benchmarks/generate.py --systems``) is written once into ``benchmarks/data/<case>``:

- ``dag50k``: 50,000-node DAG of depth 8, 15 % of the nodes with a second parent, 100,000 instances of 3 labels,
  4 systems (1.2 M predicted rows).

    .venv/bin/python benchmarks/bench_warehouse.py [--case dag50k] [--memory-limit 1.5GB] [--metrics all] \\
        [--per-family] [--timeout 600] [--steps METRICS]

Prints one Markdown row per run: metrics, wall seconds, CPU seconds (user + sys), peak RSS, the 1-minute load
average seen during the run (``/proc/loadavg``, polled each second: min–max), exit code, result rows and the
last ``hiersql:`` line of stderr. ``--per-family`` then runs ``--metrics`` with each family name of
:data:`hiersql.options.FAMILIES` alone, to show where the time and the memory of ``all`` go (a family whose
measures do not apply to the data, such as scoring or severity without scores, gives no rows). A run that
exceeds ``--timeout`` seconds is stopped (its process group) and printed as such.

``--steps METRICS`` instead runs one evaluate of ``METRICS`` with the DuckDB engine's ``stage`` (one SQL step
materialised) and ``solve`` (one Python step) wrapped, and prints a row per step: its wall seconds and the
process's RSS after it and peak RSS so far (a diagnosis of where a family's time and memory go).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = {"dag50k": ["--nodes", "50000", "--depth", "8", "--multi-parent", "0.15", "--instances", "100000",
                    "--labels", "3", "--systems", "4", "--seed", "1"],
         # the same taxonomy, ten times the instances: issue 41's million-instance run
         "dag50k_1m": ["--nodes", "50000", "--depth", "8", "--multi-parent", "0.15", "--instances", "1000000",
                       "--labels", "3", "--systems", "4", "--seed", "1"],
         # 101 topological levels, 12.3 M closure rows, 3·10^8 upward paths: issue 41's deep taxonomy
         "deep50k": ["--nodes", "50000", "--depth", "100", "--multi-parent", "0.15", "--instances", "100000",
                     "--labels", "3", "--systems", "4", "--seed", "1"]}


def load() -> float:
    """The 1-minute load average (``/proc/loadavg``)."""
    return float(Path("/proc/loadavg").read_text().split()[0])


def evaluate_args(folder: Path, metrics: str, memory_limit: str) -> list[str]:
    """The arguments of ``hiersql`` for one evaluate of ``metrics`` on the case's tables."""
    return ["evaluate", "--taxonomy", str(folder / "taxonomy.tsv"), "--truth", str(folder / "truth.parquet"),
            "--pred", str(folder / "predictions.parquet"), "--system-col", "system", "--metrics", metrics,
            "--memory-limit", memory_limit, "--format", "csv"]


def run(folder: Path, metrics: str, memory_limit: str, timeout: float) -> dict:
    """Wall and CPU seconds, peak RSS (GiB), load range, exit code, result rows and the last ``hiersql:`` line of
    stderr of one evaluate (``timed_out`` if it was stopped after ``timeout`` seconds)."""
    command = ["/usr/bin/time", "-v", sys.executable, "-m", "hiersql", *evaluate_args(folder, metrics, memory_limit)]
    loads = [load()]
    start = time.perf_counter()
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True) as child:
        timed_out = False
        while True:
            try:
                out, err = child.communicate(timeout=1.0)
                break
            except subprocess.TimeoutExpired:
                loads.append(load())
                if time.perf_counter() - start > timeout:
                    timed_out = True
                    os.killpg(child.pid, signal.SIGKILL)  # the group of the time process started above
                    out, err = child.communicate()
                    break
    wall = time.perf_counter() - start
    loads.append(load())
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", err)
    cpu = [re.search(rf"{kind} time \(seconds\): ([\d.]+)", err) for kind in ("User", "System")]
    lines = [line for line in err.splitlines() if line.startswith("hiersql:")]
    return {"wall": wall, "cpu": sum(float(m[1]) for m in cpu) if all(cpu) else float("nan"),
            "peak": int(peak[1]) / 2**20 if peak else float("nan"), "load": (min(loads), max(loads)),
            "code": child.returncode, "rows": max(len(out.splitlines()) - 1, 0), "timed_out": timed_out,
            "last": lines[-1] if lines else ""}


STEPS = """
import resource, sys, time
from pathlib import Path
from hiersql.cli import main
from hiersql.engines.duckdb import DuckDBEngine

def timed(method, label):
    def wrapper(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return method(self, *args, **kwargs)
        finally:
            rss = int(Path("/proc/self/statm").read_text().split()[1]) * resource.getpagesize() / 2**30
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
            print(f"| {label(args)} | {time.perf_counter() - start:.1f} s | {rss:.2f} GiB | {peak:.2f} GiB |",
                  file=sys.stderr, flush=True)
    return wrapper

DuckDBEngine.stage = timed(DuckDBEngine.stage, lambda args: f"SQL `{'.'.join(map(str, args[:2]))}`")
DuckDBEngine.solve = timed(DuckDBEngine.solve, lambda args: f"Python `{args[0].name if args else '?'}`")
sys.exit(main(sys.argv[1:]))
"""


def steps(folder: Path, metrics: str, memory_limit: str) -> None:
    """Print a Markdown row per step of one evaluate of ``metrics`` (see :data:`STEPS`)."""
    print("| step | wall | RSS after | peak RSS so far |")
    print("| --- | --- | --- | --- |", flush=True)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", STEPS, *evaluate_args(folder, metrics, memory_limit)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    print("\n".join(line for line in done.stderr.splitlines() if line.startswith("| ")))
    last = [line for line in done.stderr.splitlines() if line.startswith("hiersql:")]
    print(f"\n`{metrics}`: {time.perf_counter() - start:.1f} s in all, exit {done.returncode}"
          + (f"; {last[-1]}" if last else ""))


def row(metrics: str, result: dict, timeout: float) -> str:
    """One Markdown row of :func:`run`'s result."""
    wall = f"> {timeout:.0f} s (stopped)" if result["timed_out"] else f"{result['wall']:.1f} s"
    low, high = result["load"]
    return (f"| `{metrics}` | {wall} | {result['cpu']:.1f} s | {result['peak']:.2f} GiB | {low:.1f}–{high:.1f} | "
            f"{result['code']} | {result['rows']} | {result['last']} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", default="dag50k", choices=CASES)
    parser.add_argument("--memory-limit", default="1.5GB")
    parser.add_argument("--metrics", default="all")
    parser.add_argument("--per-family", action="store_true",
                        help="then run --metrics with each family alone (where the time and memory go)")
    parser.add_argument("--timeout", type=float, default=600.0, help="stop a run after this many seconds")
    parser.add_argument("--steps", metavar="METRICS",
                        help="instead: the wall time and RSS of each step of one evaluate of METRICS")
    args = parser.parse_args()
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(HERE.parent / "hiersql")], check=True)
    folder = HERE / "data" / args.case
    if not (folder / "predictions.parquet").exists():
        subprocess.run([sys.executable, str(HERE / "generate.py"), *CASES[args.case], "--out", str(folder)],
                       check=True, stdout=subprocess.DEVNULL)
    if args.steps:
        steps(folder, args.steps, args.memory_limit)
        return
    print("| metrics | wall | CPU | peak RSS | load | exit | rows | last line |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    runs = ["hp,hr,hf", args.metrics]
    if args.per_family:
        from hiersql.options import FAMILIES

        runs += list(FAMILIES)
    for metrics in runs:
        print(row(metrics, run(folder, metrics, args.memory_limit, args.timeout), args.timeout), flush=True)


if __name__ == "__main__":
    main()
