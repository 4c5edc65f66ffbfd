"""How much a busy Python thread slows a DuckDB query running beside it, by switch interval.

DuckDB's Python client re-acquires the GIL between execution tasks; while another thread runs Python code,
each re-acquisition waits up to ``sys.getswitchinterval()``. Usage::

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


def main() -> None:
    con = duckdb.connect()
    con.execute("SET threads = 1")
    print(f"alone: {timed(con):.2f} s")
    for interval in (0.005, 0.001, 0.0002):
        sys.setswitchinterval(interval)
        stop = threading.Event()

        def busy(stop: threading.Event = stop) -> None:
            while not stop.is_set():
                pass

        thread = threading.Thread(target=busy)
        thread.start()
        try:
            print(f"beside a busy Python thread, switch interval {interval * 1000:g} ms: {timed(con):.2f} s")
        finally:
            stop.set()
            thread.join()


if __name__ == "__main__":
    main()
