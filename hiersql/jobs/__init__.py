"""Batch evaluation jobs: many datasets × many systems × many measures, through a durable queue.

A job file (TOML, :mod:`hiersql.jobs.spec`, documented in ``docs/jobs.md``) lists datasets; submitting it
(:func:`submit`) queues one *unit* per (dataset, system) in the queue database (:mod:`hiersql.jobs.queue`: a
DuckDB file, or PostgreSQL for several workers), each with a key that hashes the content of its inputs: a
unit whose key has results already is not computed again. Workers (:mod:`hiersql.jobs.runner`) claim units,
evaluate them and write their rows and status in one transaction, so that a killed worker loses nothing done
and leaves nothing half written; a failing unit records its error and the others go on.
:mod:`hiersql.jobs.schedule` submits and runs a job on a cron schedule. Each unit's run also stores its
per-instance values (:mod:`hiersql.jobs.instances`), on which :mod:`hiersql.jobs.diff` tests what changed as
``hiersql compare`` tests two systems; :mod:`hiersql.jobs.prune` sheds old runs; the views of
:mod:`hiersql.jobs.schema` hold the latest results.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..inputs.results import save_rows

if TYPE_CHECKING:
    from .queue import Queue
    from .spec import Spec

__all__ = ["DEFAULT_QUEUE", "queue_url", "save_rows", "submit"]

DEFAULT_QUEUE = "jobs.duckdb"
MAX_BATCH = 32  # units one claim takes at most (the CLI's --batch default)
MAX_ATTEMPTS = 3  # claims of a unit without a commit before it fails (the CLI's --max-attempts default)


def queue_url(given: str | None, spec_queue: str | None = None, spec_path: str | Path | None = None) -> str:
    """The queue to use: ``given`` (``--queue``), else the job file's ``queue`` (a path relative to the job
    file, or a URL), else :data:`DEFAULT_QUEUE` in the current folder."""
    from .queue import is_postgres

    if given:
        return given
    if spec_queue:
        if is_postgres(spec_queue) or spec_path is None:
            return spec_queue
        return str(Path(spec_path).parent / spec_queue)
    return DEFAULT_QUEUE


def submit(queue: Queue, spec: Spec | str | Path, recompute: bool = False) -> tuple[str, int, int]:
    """Queue the units of a job file (read and checked by :func:`~hiersql.jobs.spec.load_spec` unless a
    :class:`~hiersql.jobs.spec.Spec` is given); returns the job id, the number of units and how many were
    queued (the others are unchanged: their keys have results). When the job names a results table
    (``results``), the rows of the unchanged units that it lacks are written to it now (one transaction): a
    table named after the units were computed, or emptied since, gets them too."""
    from .spec import Spec, load_spec, units

    if not isinstance(spec, Spec):
        spec = load_spec(spec)
    work = units(spec)
    with queue.connect() as con:
        job_id, queued = con.submit(spec.name, str(spec.path.resolve()), work, recompute)
        rows = con.latest_rows([u.key for u in work]) if spec.results and queued < len(work) else []
    if rows:
        from .targets import write_results

        write_results(spec.results, rows, f"{spec.path}: results", missing_only=True)
    return job_id, len(work), queued
