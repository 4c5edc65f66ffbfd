"""Where a ``hiersql`` command's engine spends its time: each SQL stage made (``stage``; a plan's last query,
``result``), each Python step solved (``solve``), each table read out of the engine (``arrow``) or written into
it (``write``), and the other statements (``execute``), timed in process around the engine's methods; a call's
time excludes that of the timed calls it makes (shown apart).

    .venv/bin/python benchmarks/profile_stages.py [--top 25] -- evaluate --taxonomy ... --engine postgres ...

Prints the command's wall time, the time per kind (and outside them: reading and checking the inputs,
imports), and the slowest calls (seconds, calls, kind and name). The command's own output is discarded; its
exit status is printed.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hiersql.cli import main as hiersql  # noqa: E402
from hiersql.engines import DuckDBEngine, PostgresEngine, SparkEngine  # noqa: E402

KINDS = {"stage": lambda a: f"{a[0]}.{a[1]}", "result": lambda a: f"{a[0]}.{a[1]}", "solve": lambda a: a[0].name,
         "arrow": lambda a: " ".join(a[0].split())[:70], "write": lambda a: a[0],
         "execute": lambda a: " ".join(a[0].split())[:70]}
spent: Counter[tuple[str, str]] = Counter()
calls: Counter[tuple[str, str]] = Counter()
inner: list[float] = []  # the time of the timed calls made within each timed call under way


def timed(kind: str, method):
    def wrapper(self, *args, **kwargs):
        inner.append(0.0)
        start = time.perf_counter()
        try:
            return method(self, *args, **kwargs)
        finally:
            took = time.perf_counter() - start
            key = (kind, KINDS[kind](args))
            spent[key] += took - inner.pop()
            calls[key] += 1
            if inner:
                inner[-1] += took
    return wrapper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the hiersql command, after --")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    for engine in (DuckDBEngine, PostgresEngine, SparkEngine):
        for kind in KINDS:
            setattr(engine, kind, timed(kind, getattr(engine, kind)))
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        status = hiersql(command)
    wall = time.perf_counter() - start
    by_kind: Counter[str] = Counter()
    for (kind, _), seconds in spent.items():
        by_kind[kind] += seconds
    kinds = ", ".join(f"{kind} {seconds:.2f} s ({sum(n for (k, _), n in calls.items() if k == kind)})"
                      for kind, seconds in by_kind.most_common())
    print(f"exit {status}, wall {wall:.2f} s; {kinds}; outside them {wall - sum(by_kind.values()):.2f} s")
    for (kind, name), seconds in spent.most_common(args.top):
        print(f"{seconds:8.3f} {calls[kind, name]:4d}  {kind:<12} {name}")


if __name__ == "__main__":
    main()
