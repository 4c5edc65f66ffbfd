"""Running DuckDB queries in a thread beside Python code.

DuckDB releases the GIL while a query runs, so SQL on a second connection (a cursor) overlaps with Python
work on this one, such as the OR-Tools or LCA graph solvers: :func:`beside_python`.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from concurrent.futures import Future

T = TypeVar("T")
# CPython's switch interval while DuckDB queries run beside Python code (fast_switching).
SWITCH_INTERVAL = 50e-6
_switching = {"users": 0, "interval": 0.005}  # fast_switching's state, shared by the threads that enter it
_switching_lock = threading.Lock()


@contextmanager
def fast_switching() -> Iterator[None]:
    """Lower CPython's switch interval to :data:`SWITCH_INTERVAL` while DuckDB queries run beside Python code
    in another thread; the first thread to enter lowers it, the last to leave restores it.

    DuckDB's Python client takes the GIL back between the tasks of a query (to check for Ctrl-C). With
    CPython's default switch interval of 5 ms each of these waits up to 5 ms behind the Python thread, and a
    query beside a busy Python loop runs many times slower; at 50 µs it runs at its own speed and the Python
    loop loses a few per cent (``benchmarks/duckdb_gil.py``; figures in benchmarks/RESULTS.md, session 6).
    Two busy Python threads only switch more often for nothing: keep it to DuckDB beside Python."""
    with _switching_lock:
        if not _switching["users"]:
            _switching["interval"] = sys.getswitchinterval()
            sys.setswitchinterval(min(_switching["interval"], SWITCH_INTERVAL))
        _switching["users"] += 1
    try:
        yield
    finally:
        with _switching_lock:
            _switching["users"] -= 1
            if not _switching["users"]:
                sys.setswitchinterval(_switching["interval"])


@contextmanager
def beside_python(work: Callable[[], T] | None) -> Iterator[Future[T] | None]:
    """Run ``work`` (DuckDB queries) in a thread while the body runs Python code (:func:`fast_switching`);
    wait for it at the end and re-raise its error. Yields the work's future (its ``result()`` once the body is
    done); ``None``: nothing runs beside, and ``None`` is yielded."""
    if work is None:
        yield None
        return
    from concurrent.futures import ThreadPoolExecutor

    with fast_switching(), ThreadPoolExecutor(1) as pool:
        done = pool.submit(work)
        try:
            yield done
        finally:
            done.result()

