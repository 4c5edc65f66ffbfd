"""Warehouse scale (issue 41 item 2): ``hiersql evaluate`` of one long Parquet table of several systems on a
generated DAG, every family (``--metrics all``) against set-based hP/hR/hF of the same minutes, with the wall
time and the peak RSS of each run (``/usr/bin/time -v``) under a memory limit.

The data (``benchmarks/generate.py --systems``) is written once into ``benchmarks/data/<case>``:

- ``dag50k``: 50,000-node DAG of depth 8, 15 % of the nodes with a second parent, 100,000 instances of 3 labels,
  4 systems (1.2 M predicted rows).

    .venv/bin/python benchmarks/bench_warehouse.py [--case dag50k] [--memory-limit 1.5GB] [--metrics all]

Prints one Markdown row per run: metrics, wall seconds, peak RSS, exit code.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = {"dag50k": ["--nodes", "50000", "--depth", "8", "--multi-parent", "0.15", "--instances", "100000",
                    "--labels", "3", "--systems", "4", "--seed", "1"]}


def run(folder: Path, metrics: str, memory_limit: str) -> tuple[float, float, int, str]:
    """Wall seconds, peak RSS (GiB), exit code and the last line of stderr of one evaluate."""
    command = ["/usr/bin/time", "-v", sys.executable, "-m", "hiersql", "evaluate", "--taxonomy",
               str(folder / "taxonomy.tsv"), "--truth", str(folder / "truth.parquet"), "--pred",
               str(folder / "predictions.parquet"), "--system-col", "system", "--metrics", metrics,
               "--memory-limit", memory_limit, "--format", "csv"]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.startswith("hiersql:")]
    return wall, int(peak[1]) / 2**20 if peak else float("nan"), done.returncode, lines[-1] if lines else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", default="dag50k", choices=CASES)
    parser.add_argument("--memory-limit", default="1.5GB")
    parser.add_argument("--metrics", default="all")
    args = parser.parse_args()
    folder = HERE / "data" / args.case
    if not (folder / "predictions.parquet").exists():
        subprocess.run([sys.executable, str(HERE / "generate.py"), *CASES[args.case], "--out", str(folder)],
                       check=True, stdout=subprocess.DEVNULL)
    print("| metrics | wall | peak RSS | exit | last line |")
    print("| --- | --- | --- | --- | --- |")
    for metrics in ("hp,hr,hf", args.metrics):
        wall, peak, code, last = run(folder, metrics, args.memory_limit)
        print(f"| `{metrics}` | {wall:.1f} s | {peak:.2f} GiB | {code} | {last} |", flush=True)


if __name__ == "__main__":
    main()
