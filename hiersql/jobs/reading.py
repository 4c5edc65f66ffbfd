"""The statements that read a job queue (:mod:`hiersql.jobs.queue`): the jobs' status, their results and the
latest results of a job, the one definition that ``hiersql jobs results`` and ``hiersql report --db QUEUE``
read (:meth:`Reading.latest`)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from .schema import with_views

STATUSES = ("queued", "running", "done", "skipped", "failed", "cancelled")
RESULT_COLUMNS = ("dataset", "system", "metric", "average", "value", "key", "run_id", "job_id", "created_at")
# :meth:`Reading.latest`: the job's name and submission, the unit (its status and key), then the rows of the
# key's latest run (``job_id``: the submission whose unit computed them; all ``None`` for a key without results)
LATEST_COLUMNS = ("name", "submission", "dataset", "system", "status", "key", "metric", "average", "value",
                  "run_id", "job_id", "created_at")


class Reading:
    """The reading statements of :class:`~hiersql.jobs.queue.Connection` (a base of it), which gives
    ``queue``, ``execute`` and ``transaction``."""

    queue: Any  # the Queue of the connection (hiersql.jobs.queue imports this module: no import back)

    if TYPE_CHECKING:
        def execute(self, sql: str, params: Iterable[Any] = ()) -> list[tuple]: ...

        def transaction(self) -> AbstractContextManager[None]: ...

    def job_ids(self, jobs: list[str] | None, latest: bool = False) -> list[str]:
        """The ids of ``jobs`` (ids or names; a name means its jobs, or with ``latest`` its latest submission),
        every job when ``None``."""
        rows = self.execute("SELECT job_id, name FROM jobs ORDER BY job_id")
        if jobs is None:
            return [r[0] for r in rows]
        missing = [j for j in jobs if not any(j in r for r in rows)]
        if missing:
            raise InputError("no such job in the queue", self.queue.url, value=missing[0])
        if latest:  # job ids sort by submission time
            last = {name: job_id for job_id, name in rows}
            return sorted({r[0] for r in rows if r[0] in jobs} | {last[j] for j in jobs if j in last})
        return [r[0] for r in rows if r[0] in jobs or r[1] in jobs]

    def status(self, jobs: list[str] | None = None) -> list[dict[str, Any]]:
        """Per job: its id, name, submission time, the count of units per status (``running``: claimed by a
        worker now: on PostgreSQL any worker's, on DuckDB this process's), the claims of its units
        (``attempts``), how many units were claimed more than once (``retried``), and the failed units' errors
        ``(dataset, system, error, attempts)``."""
        ids = self.job_ids(jobs)
        if not ids:
            return []
        marks = ", ".join("?" * len(ids))
        counts = self.execute(f"SELECT job_id, status, count(*) FROM units WHERE job_id IN ({marks})"
                              " GROUP BY job_id, status", ids)
        running: dict[str, int] = {}
        if self.queue.postgres:
            with self.transaction():
                free = self.execute(f"SELECT job_id FROM units WHERE status = 'queued' AND job_id IN ({marks})"
                                    " FOR SHARE SKIP LOCKED", ids)
            queued = {j: n for j, s, n in counts if s == "queued"}
            for job, n in queued.items():
                running[job] = n - sum(1 for (j,) in free if j == job)
        elif self.queue._claimed:  # the units this process's workers hold
            with self.queue._lock:
                claimed = list(self.queue._claimed)
            for (job,) in self.execute(f"SELECT job_id FROM units WHERE status = 'queued' AND job_id IN ({marks})"
                                       f" AND unit_id IN ({', '.join('?' * len(claimed))})", [*ids, *claimed]):
                running[job] = running.get(job, 0) + 1
        tries = "(SELECT count(*) FROM attempts a WHERE a.unit_id = units.unit_id)"
        errors = self.execute(f"SELECT job_id, dataset, system, error, {tries} FROM units WHERE job_id IN ({marks})"
                              " AND status = 'failed' ORDER BY job_id, seq", ids)
        attempts = {j: (int(n), int(r)) for j, n, r in self.execute(
            f"SELECT job_id, sum(tries), count(*) FILTER (WHERE tries > 1) FROM (SELECT job_id, {tries} AS tries"
            f" FROM units WHERE job_id IN ({marks})) t GROUP BY job_id", ids)}
        jobs_rows = self.execute(f"SELECT job_id, name, spec, submitted_at FROM jobs WHERE job_id IN ({marks})"
                                 " ORDER BY job_id", ids)
        out = []
        for job, name, spec, submitted in jobs_rows:
            count = dict.fromkeys(STATUSES, 0)
            for j, s, n in counts:
                if j == job:
                    count[s] = n
            count["running"] = running.get(job, 0)
            count["queued"] -= count["running"]
            tried, retried = attempts.get(job, (0, 0))
            out.append({"job_id": job, "name": name, "spec": spec, "submitted_at": submitted, **count,
                        "attempts": tried, "retried": retried,
                        "errors": [(d, s, e, int(n)) for j, d, s, e, n in errors if j == job]})
        return out

    def latest(self, jobs: list[str] | None = None) -> list[tuple]:
        """The latest results of jobs (:data:`LATEST_COLUMNS`), the one definition that ``jobs results`` and
        ``hiersql report --db QUEUE`` read, the queue's view ``latest`` (:data:`~hiersql.jobs.schema.LATEST`;
        with ``jobs``, ``unit_results`` of the submissions they name): for the latest submission of each job
        name (of ``jobs``: names, or ids of submissions), each of its units with the rows of its key's latest
        run (latest ``created_at``, then ``run_id``), whether that unit computed them, found them unchanged or
        did not (yet) compute them again (a ``--recompute`` that failed, was interrupted or is queued: the key
        hashes the unit's inputs, so the stored rows of the key are those inputs' values); a unit whose key has
        no results is one row of ``None`` values. A row of another key (an input edited since, another job's
        options) or of a unit no longer in the job cannot be part of it. Ordered by dataset, system, metric,
        average, submission."""
        order = " ORDER BY dataset, system, metric, average, submission"
        if jobs is None:
            return self.execute(with_views(f"SELECT * FROM latest{order}", "latest" in self.queue.present))
        return self.unit_results(self.latest_submissions(jobs), order)

    def unit_results(self, ids: list[str], order: str = "") -> list[tuple]:
        """The rows of the view ``unit_results`` (:data:`LATEST_COLUMNS`) of the submissions ``ids``."""
        if not ids:
            return []
        return self.execute(with_views(f"SELECT * FROM unit_results WHERE submission IN ({', '.join('?' * len(ids))})"
                                       f"{order}", "unit_results" in self.queue.present), ids)

    def latest_submissions(self, jobs: list[str] | None = None) -> list[str]:
        """The ids of the latest submission of each job name (of ``jobs``: names, or ids of submissions), in
        submission order."""
        if jobs is None:
            return [r[0] for r in self.execute("SELECT max(job_id) FROM jobs GROUP BY name ORDER BY max(job_id)")]
        return self.job_ids(jobs, latest=True)

    def earlier_submissions(self, ids: list[str], count: int) -> dict[str, list[str]]:
        """Per submission of ``ids``, the ids of the ``count`` latest submissions of its job name up to it
        (itself the last)."""
        rows = self.execute("SELECT job_id, name FROM jobs ORDER BY job_id")
        names = dict(rows)
        return {i: [j for j, name in rows if name == names[i] and j <= i][-count:] for i in ids}

    def submissions(self, ids: list[str]) -> list[tuple]:
        """``(job_id, name, spec, submitted_at, metrics)`` of the submissions ``ids``, in submission order;
        ``metrics``: ``{dataset: the names its units were given}`` (the job file's, in its order)."""
        if not ids:
            return []
        marks = ", ".join("?" * len(ids))
        works: dict[str, dict[str, list[str]]] = {}
        for job, work in self.execute(f"SELECT job_id, min(work) FROM units WHERE job_id IN ({marks})"
                                      " GROUP BY job_id, dataset ORDER BY job_id, dataset", ids):
            unit = json.loads(work)
            works.setdefault(job, {})[unit["dataset"]] = list(unit["metrics"])
        return [(*r, works.get(r[0], {})) for r in self.execute(
            f"SELECT job_id, name, spec, submitted_at FROM jobs WHERE job_id IN ({marks}) ORDER BY job_id", ids)]

    def results(self, jobs: list[str] | None = None, history: bool = False) -> list[tuple]:
        """Result rows (:data:`RESULT_COLUMNS`). By default those of :meth:`latest` (a key that units of
        several of the jobs share: once). ``jobs`` picks submissions (ids, or names: the latest submission of
        each, and with ``history`` all of them); ``history``: every stored row of those jobs' keys, oldest
        first (all rows when ``jobs`` is ``None``)."""
        if not history:
            picked = [r[2:4] + r[6:9] + (r[5],) + r[9:] for r in self.latest(jobs) if r[6] is not None]
            return list(dict.fromkeys(picked))
        if jobs is None:
            return self.execute(f"SELECT {', '.join(RESULT_COLUMNS)} FROM results"
                                " ORDER BY created_at, run_id, dataset, system, metric, average")
        ids = self.job_ids(jobs)
        if not ids:
            return []
        columns = ", ".join(f"r.{c}" for c in RESULT_COLUMNS)
        return self.execute(
            f"SELECT {columns} FROM results r WHERE r.key IN (SELECT DISTINCT key FROM units WHERE job_id IN"
            f" ({', '.join('?' * len(ids))})) ORDER BY r.created_at, r.run_id, r.dataset, r.system, r.metric,"
            " r.average", ids)
