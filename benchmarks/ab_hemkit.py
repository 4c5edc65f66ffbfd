"""A/B timing: ``hiersql hemkit`` on the MeSH benchmark data from several source trees, run alternately.

The machine's speed drifts by tens of per cent within minutes (a shared host), so two versions of the code are
only comparable when their runs alternate. Each tree is a checkout of this repository (``git worktree add
/tmp/base COMMIT``); it is imported through ``PYTHONPATH`` from a working directory outside every tree, so that
``python -m hiersql`` cannot pick up the current directory's package instead. Reports, per tree, the median,
minimum and maximum wall time and the median CPU time (user + sys) of the child, and checks that every tree
prints the same six numbers. Usage::

    git worktree add /tmp/base e6e23c2 && .venv/bin/python -m compileall -q /tmp/base/hiersql
    .venv/bin/python benchmarks/ab_hemkit.py /tmp/base . --runs 12

The data is that of ``bench_hemkit.py --part mesh`` (run it once first).

``--hemkit PATH`` adds HEMKit itself (a binary built with ``g++ -O2`` from ``BioASQ/Evaluation-Measures``,
``hierarchical/software``) to the alternation, on the same files, and reports each tree's median wall time
as a ratio of HEMKit's (issue 16: at most 0.5)::

    .venv/bin/python benchmarks/ab_hemkit.py . --hemkit /path/to/HEMKit --runs 10
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MESH = (HERE.parent / ".." / "shared" / "data" / "mesh" / "mesh_hierarchy_int.txt").resolve()
DATA = HERE / "data" / "mesh"


def run(tree: Path, cwd: str) -> tuple[float, float, str]:
    """One ``python -m hiersql hemkit`` of ``tree``: wall seconds, CPU seconds, stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "hiersql", "hemkit", str(MESH), str(DATA / "hemkit_gold.txt"),
         str(DATA / "hemkit_pred.txt"), "4", "5"],
        env={**os.environ, "PYTHONPATH": str(tree)}, cwd=cwd, capture_output=True, text=True, check=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu, proc.stdout.strip()


def run_hemkit(binary: Path, cwd: str) -> tuple[float, float, str]:
    """One run of HEMKit's binary on the same files: wall seconds, CPU seconds, stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([str(binary), str(MESH), str(DATA / "hemkit_gold.txt"), str(DATA / "hemkit_pred.txt"),
                           "4", "5"], cwd=cwd, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, proc.stdout.strip()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trees", nargs="+", type=Path, help="source trees (checkouts of this repository)")
    p.add_argument("--runs", type=int, default=10, help="runs per tree (default 10)")
    p.add_argument("--hemkit", type=Path, help="HEMKit's binary, run in turn with the trees")
    args = p.parse_args()
    if not (DATA / "hemkit_gold.txt").is_file():
        sys.exit("no benchmark data: run benchmarks/bench_hemkit.py --part mesh first")
    trees = [t.resolve() for t in args.trees]
    walls: dict[Path, list[float]] = {t: [] for t in trees}
    cpus: dict[Path, list[float]] = {t: [] for t in trees}
    outputs: dict[Path, set[str]] = {t: set() for t in trees}
    hemkit_walls, hemkit_cpus, hemkit_out = [], [], set()
    with tempfile.TemporaryDirectory() as cwd:
        for _ in range(args.runs):
            for tree in trees:
                wall, cpu, out = run(tree, cwd)
                walls[tree].append(wall)
                cpus[tree].append(cpu)
                outputs[tree].add(out)
            if args.hemkit:
                wall, cpu, out = run_hemkit(args.hemkit.resolve(), cwd)
                hemkit_walls.append(wall)
                hemkit_cpus.append(cpu)
                hemkit_out.add(out)
    for tree in trees:
        w = sorted(walls[tree])
        ratio = (f"; {statistics.median(w) / statistics.median(hemkit_walls):.2f} x HEMKit's median"
                 if hemkit_walls else "")
        print(f"{tree}: wall median {statistics.median(w):.3f} s (min {w[0]:.3f}, max {w[-1]:.3f}), CPU median"
              f" {statistics.median(cpus[tree]):.3f} s{ratio}")
    if hemkit_walls:
        w = sorted(hemkit_walls)
        print(f"HEMKit {args.hemkit}: wall median {statistics.median(w):.3f} s (min {w[0]:.3f}, max {w[-1]:.3f}),"
              f" CPU median {statistics.median(hemkit_cpus):.3f} s; printed {sorted(hemkit_out)}")
    if len(set().union(*outputs.values())) != 1:
        sys.exit(f"the trees print different numbers: {outputs}")
    print(f"every run printed: {next(iter(outputs[trees[0]]))}")


if __name__ == "__main__":
    main()
