"""How much a busy Python thread slows a DuckDB query running beside it, by switch interval.

DuckDB's Python client re-acquires the GIL between execution tasks; while another thread runs Python code,
each re-acquisition waits up to ``sys.getswitchinterval()``. At 50 µs and below the query runs at its own
speed (hiersql.engines.concurrency.fast_switching sets 50 µs while SQL runs beside Python). Usage::

    .venv/bin/python benchmarks/duckdb_gil.py
"""

from __future__ import annotations

import sys
import threading
import time

import duckdb

QUERY = "SELECT sum(hash(i)) FROM range(30000000) AS t(i)"


def timed(con: duckdb.DuckDBPyConnection) -> float:
    start = time.perf_counter()
    con.execute(QUERY).fetchall()
    return time.perf_counter() - start


def busy_loop(stop: threading.Event, laps: list[float]) -> None:
    """Count empty loop laps until ``stop`` is set; append the laps per microsecond."""
    start, n = time.perf_counter(), 0
    while not stop.is_set():
        n += 1
    laps.append(n / (time.perf_counter() - start) / 1e6)


def main() -> None:
    con = duckdb.connect()
    con.execute("SET threads = 1")
    alone: list[float] = []
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    busy_loop(stop, alone)
    print(f"alone: query {timed(con):.2f} s, Python loop {alone[0]:.1f} laps/µs")
    for interval in (0.005, 0.001, 0.0002, 0.00005, 0.00001):
        sys.setswitchinterval(interval)
        stop, laps = threading.Event(), []
        thread = threading.Thread(target=busy_loop, args=(stop, laps))
        thread.start()
        try:
            query = timed(con)
        finally:
            stop.set()
            thread.join()
        print(f"beside each other, switch interval {interval * 1e6:g} µs: query {query:.2f} s, Python loop"
              f" {laps[0]:.1f} laps/µs")


if __name__ == "__main__":
    main()
