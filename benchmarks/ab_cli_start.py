"""A/B timing of the command line's start: ``python -m hiersql ARGS`` from several source trees, alternately.

Commands that fail fast or print help (``jobs check /nonexistent.toml``, ``evaluate --help``) cost little more
than importing ``hiersql`` and building the parsers of every sub-command, which is what a schema generating the
flags could slow down. Each tree is a checkout of this repository, imported through ``PYTHONPATH`` from a
working directory outside every tree; bytecode is cached in a temporary folder (as for an installed package,
even under ``PYTHONDONTWRITEBYTECODE``), after one unmeasured run per tree. Reports per tree the median, minimum
and maximum wall time, and checks that the trees exit with the same status. Usage::

    git worktree add /tmp/base a9cdc44
    .venv/bin/python benchmarks/ab_cli_start.py /tmp/base . --runs 30 -- jobs check /nonexistent.toml
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run(tree: Path, args: list[str], cwd: str, cache: str) -> tuple[float, int]:
    """One ``python -m hiersql ARGS`` of ``tree``: wall seconds and exit status (``cache`` mirrors each tree's
    paths, so one folder serves every tree)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env |= {"PYTHONPATH": str(tree), "PYTHONPYCACHEPREFIX": cache}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "hiersql", *args], env=env, cwd=cwd, capture_output=True)
    return time.perf_counter() - start, proc.returncode


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], usage="%(prog)s TREE ... [--runs N] -- ARGS")
    p.add_argument("trees", nargs="+", type=Path, help="source trees (checkouts of this repository)")
    p.add_argument("--runs", type=int, default=20, help="runs per tree (default 20)")
    argv = sys.argv[1:]
    if "--" not in argv:
        p.error("give the arguments of hiersql after --")
    args = p.parse_args(argv[:argv.index("--")])
    command = argv[argv.index("--") + 1:]
    trees = [t.resolve() for t in args.trees]
    walls: dict[Path, list[float]] = {t: [] for t in trees}
    codes: set[int] = set()
    with tempfile.TemporaryDirectory() as cwd, tempfile.TemporaryDirectory() as cache:
        for tree in trees:
            run(tree, command, cwd, cache)
        for _ in range(args.runs):
            for tree in trees:
                wall, code = run(tree, command, cwd, cache)
                walls[tree].append(wall)
                codes.add(code)
    if len(codes) != 1:
        sys.exit(f"the trees exit with different statuses: {sorted(codes)}")
    print(f"hiersql {' '.join(command)}: exit status {codes.pop()}")
    for tree in trees:
        w = walls[tree]
        print(f"{tree}: median {statistics.median(w):.3f} s (min {min(w):.3f}, max {max(w):.3f}) over {len(w)} runs")


if __name__ == "__main__":
    main()
