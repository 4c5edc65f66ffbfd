"""Two commands timed alternately, whole processes, with the ratio of each pair (the A/B figures of RESULTS.md).

Command A and command B run in turn, A B A B ..., each ``-n`` times after ``--warmup`` uncounted pairs. A run's
wall time is a monotonic clock read around the process; its CPU (user + sys) and peak RSS are the kernel's
accounting of that one child (``os.wait4``). The medians, minima and maxima are printed, and the ratio A/B of
each pair: alternating keeps the ratio meaningful when the shared machine's speed drifts. Outputs are discarded;
``sh -c 'CMD > FILE'`` keeps them::

    .venv/bin/python benchmarks/ab.py [-n 5] [--warmup 1] [--timeout 3600] --vs 'COMMAND B' -- COMMAND A ...
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time


def run(command: list[str]) -> tuple[float, float, float, int]:
    """Wall seconds, CPU seconds and peak RSS (MiB) of one run of ``command``, and its exit code."""
    start = time.monotonic()
    child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, child.returncode


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} ({min(values):.3f}–{max(values):.3f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=5, help="counted runs of each command")
    parser.add_argument("--warmup", type=int, default=1, help="uncounted pairs first")
    parser.add_argument("--timeout", type=float, default=3600, help="no new pair starts after this many seconds")
    parser.add_argument("--vs", required=True, help="command B, one string split as a shell splits words")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- command A and its arguments")
    args = parser.parse_args()
    a = args.command[1:] if args.command[:1] == ["--"] else args.command
    b = shlex.split(args.vs)
    runs: dict[str, list[tuple[float, float, float, int]]] = {"A": [], "B": []}
    start = time.monotonic()
    for k in range(args.warmup + args.n):
        if time.monotonic() - start > args.timeout:
            print(f"stopped after {k} pairs: --timeout {args.timeout:.0f} s", file=sys.stderr)
            break
        pair = {"A": run(a), "B": run(b)}
        if k >= args.warmup:
            for name, result in pair.items():
                runs[name].append(result)
    if not runs["A"]:
        return 1
    for name, results in runs.items():
        wall, cpu, peak, codes = zip(*results, strict=True)
        print(f"{name}: wall {spread(list(wall))} s, cpu {spread(list(cpu))} s, peak {spread(list(peak))} MiB,"
              f" exit {sorted(set(codes))}")
    for column, label in ((0, "wall"), (1, "cpu")):
        ratios = [x[column] / y[column] for x, y in zip(runs["A"], runs["B"], strict=True)]
        print(f"A/B {label}: {spread(ratios)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
