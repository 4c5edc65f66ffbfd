"""The process a parallel worker thread evaluates in: ``python -m hiersql.jobs.child FD THREADS``
(started by :class:`hiersql.jobs.runner.Child`; FD is its end of a socket pair, THREADS DuckDB's threads)."""

from __future__ import annotations

import sys

from .runner import serve

if __name__ == "__main__":
    serve(int(sys.argv[1]), int(sys.argv[2]))
