"""The queue and the results of batch jobs, in one database: a DuckDB file (one machine; the default) or
PostgreSQL (``postgresql://...``; several worker processes or machines share it).

Tables: ``jobs`` (one row per submission), ``units`` (one row per (dataset, system) of a job, its content
key, the work as JSON and its status: ``queued``, ``done``, ``skipped`` (unchanged: its key has results
already), ``failed`` (with the error) or ``cancelled``) and ``results`` (the table ``hiersql evaluate --db``
writes, with the unit's key, job and unit added; ``hiersql report --db`` reads it), the per-instance values of
the units' runs, and the views ``unit_results`` and ``latest`` (:mod:`hiersql.jobs.schema`). A database whose
table of one of these names has other columns is the user's: refused before anything is made or written
(:meth:`Connection.check_tables`).

A worker claims units, evaluates them and writes their rows and status in ONE transaction
(:meth:`Connection.claim` opens it, :meth:`Connection.finish` writes, :meth:`Connection.commit` ends it): a
worker killed anywhere leaves its units queued and no row of theirs. On PostgreSQL the claim is
``SELECT ... FOR UPDATE SKIP LOCKED``: a claimed unit is a locked row, which the other workers skip, and which
:meth:`Connection.status` counts as running. A DuckDB file is opened by one process at a time, whose worker
threads claim distinct units (the queue keeps the claimed ones aside in memory).
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError, display, masked
from ..files import write_atomically
from .reading import Reading
from .schema import RESULT_COLUMNS, create_views, relations, schema_statements, table_forms

if TYPE_CHECKING:
    from .instances import Computed

UNIT_COLUMNS = ("unit_id, job_id, dataset, system, key, grp, work, recompute,"
                " (SELECT count(*) FROM attempts a WHERE a.unit_id = units.unit_id) AS tries,"
                " (SELECT count(*) FROM attempts a WHERE a.unit_id = units.unit_id AND a.error IS NOT NULL)"
                " AS failures")
RESULT_INSERT = tuple(name for name, _ in RESULT_COLUMNS)


@dataclass(frozen=True)
class Claimed:
    """A unit as a worker claimed it."""

    unit_id: str
    job_id: str
    dataset: str
    system: str
    key: str
    group: str
    work: dict[str, Any]
    recompute: bool
    attempts: int = 0  # earlier claims of this unit that were not committed
    failures: int = 0  # those of them whose end the run saw (a reason noted): failed attempts


def now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def result_rows(run_id: str, done: list[tuple[Claimed, Computed]], stamp: datetime) -> list[tuple]:
    """The result rows (values of :data:`RESULT_INSERT`) of the units ``done`` ``(unit, what it computed)`` in
    run ``run_id`` at ``stamp``: those the queue stores and a results target is given."""
    return [(run_id, unit.dataset, r.system, r.metric, r.average or None, r.value, stamp, unit.key, unit.job_id,
             unit.unit_id) for unit, computed in done for r in computed.rows]


def is_postgres(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))


class NotAQueue(InputError):
    """A database without the queue's ``jobs`` table (:meth:`Connection.check_queue`)."""


class QueueBusy(InputError):
    """A DuckDB queue file that another process (``pid``) holds: exit status 75 (``EX_TEMPFAIL`` of
    sysexits.h: try again later), not the 2 of bad input."""

    exit_status = 75

    def __init__(self, message: str, url: str, pid: int | None) -> None:
        super().__init__(message, url)
        self.url, self.pid = url, pid


def status_file(url: str) -> Path:
    """Where the process that holds a DuckDB queue file publishes its status (:meth:`Queue.publish_status`):
    ``QUEUE.status.json`` beside it."""
    return Path(f"{url}.status.json")


def published_status(url: str, pid: int | None) -> tuple[datetime, list[dict[str, Any]]] | None:
    """The status that process ``pid``, which holds the DuckDB queue ``url``, published: when, and
    :meth:`Connection.status` of every job. ``None`` when there is none of that process (a file left by a
    process that was killed names another)."""
    try:
        data = json.loads(status_file(url).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if pid is None or data.get("pid") != pid:
        return None
    jobs = [{**job, "submitted_at": datetime.fromisoformat(job["submitted_at"]),
             "errors": [tuple(e) for e in job["errors"]]} for job in data["jobs"]]
    return datetime.fromisoformat(data["written_at"]), jobs


def out_of_space(exc: BaseException) -> bool:
    """Whether ``exc`` says that the queue's storage takes no more writes: a full disk, a quota, a read-only
    file system (DuckDB says so in the text of its own errors)."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS):
        return True
    return any(text in str(exc) for text in ("No space left on device", "Disk quota exceeded",
                                              "Read-only file system"))


class Queue:
    """A queue database. ``url``: a DuckDB file path or a ``postgresql://`` URL. ``wait``: seconds to wait for
    a DuckDB file that another process holds (then :class:`~hiersql.errors.InputError` naming that process).
    ``create=False``: a queue that must exist already (reading its status or results, cancelling), an
    :class:`~hiersql.errors.InputError` if it does not; a DuckDB file is then opened read-only unless
    ``write`` (it may be on a read-only file system). ``named``: where the queue was given, for messages
    (``("--queue", None)``, or the job file and the line of its ``queue`` key); default ``--queue``.
    ``opened``: a read-only DuckDB connection to ``url`` already open (``hiersql report --db`` opens the file
    to tell a queue from a results file), which the queue uses and closes."""

    def __init__(self, url: str | Path, wait: float = 0.0, create: bool = True, write: bool = True,
                 named: tuple[str, int | None] = ("--queue", None), opened: Any = None) -> None:
        self.url = str(url)
        self.named = named
        self.postgres = is_postgres(self.url)
        self.wait = wait
        self.read_only = not create and not write and not self.postgres
        if not create and not self.postgres and not Path(self.url).is_file():
            raise InputError("queue not found (a DuckDB file, which hiersql jobs submit or jobs run makes, or a"
                             " postgresql:// URL)", self.url)
        self._duckdb: Any = opened
        self._claimed: set[str] = set()  # DuckDB: units and keys claimed by this process's threads
        self._lock = threading.Lock()
        self._published = False
        self._changes = 0  # DuckDB: claims and their ends in this process, to publish the status on a change
        self._published_changes = -1
        self.present: set[str] = set()  # the queue's tables and views that the database has (schema.relations)
        if self.postgres:
            _quiet_pipeline_errors()
        try:
            with self.connect() as con:  # opened here: a file another process holds is found now
                if not create:
                    con.check_queue()
                if self.read_only:
                    con.check_tables()
                    self.present = set(relations(con))  # a queue made before some of them: left as it is
                    return
                with con.transaction():
                    if self.postgres:  # two workers starting together create the tables once
                        con.execute("SELECT pg_advisory_xact_lock(1751)")
                    con.check_tables()  # before any table is made or altered, in the same transaction
                    for statement in schema_statements(con):  # (an existing queue: the columns and tables added since)
                        con.execute(statement)
                    create_views(con, display(self.url))
                    self.present = set(table_forms())
        except self.transient as exc:  # later, the same errors are retried
            if not self.postgres:
                named = (self.url, None)
            raise InputError(f"cannot reach the queue ({masked(str(exc).splitlines()[0], self.url)})", *named,
                             value=display(self.url) if self.postgres else None) from None
        except InputError:  # not a queue: the file is not held on
            self.close()
            raise

    @property
    def transient(self) -> tuple[type[BaseException], ...]:
        """Errors after which a unit is retried: a lost PostgreSQL connection, a DuckDB write conflict."""
        import duckdb

        if self.postgres:
            import psycopg

            return (psycopg.OperationalError, psycopg.errors.SerializationFailure,
                    psycopg.errors.DeadlockDetected)
        return (duckdb.TransactionException,)

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        """A connection of its own (a cursor of the one DuckDB connection; a new PostgreSQL session)."""
        if self.postgres:
            import psycopg

            try:
                raw = psycopg.connect(self.url, autocommit=True)
            except psycopg.ProgrammingError as exc:  # a malformed URL
                raise InputError(f"bad queue URL ({masked(str(exc).splitlines()[0], self.url)})", "--queue") from None
        else:
            with self._lock:
                if self._duckdb is None:
                    self._duckdb = self._open_duckdb()
            raw = self._duckdb.cursor()
        con = Connection(self, raw)
        try:
            yield con
        finally:
            con.close()

    def _open_duckdb(self) -> Any:
        import duckdb

        from ..inputs.dbfile import check_file

        check_file(self.url, self.url, self.read_only)  # a CSV or Parquet file would be an in-memory queue
        deadline = time.monotonic() + self.wait
        while True:
            try:
                return duckdb.connect(self.url, read_only=self.read_only)
            except duckdb.IOException as exc:
                holder = re.search(r"held in (\S+) \(PID (\d+)\)", str(exc))
                if holder is None and "lock" not in str(exc).lower():
                    raise InputError(f"cannot open the queue ({str(exc).splitlines()[0]})", self.url) from None
                if time.monotonic() >= deadline:
                    who = f"process {holder.group(2)} ({holder.group(1)})" if holder else "another process"
                    raise QueueBusy(f"queue file is in use by {who}: wait for it (--wait SECONDS), or use a"
                                    " PostgreSQL queue for several processes", self.url,
                                    int(holder.group(2)) if holder else None) from None
                time.sleep(0.2)
            except duckdb.Error as exc:
                raise InputError(f"cannot open the queue ({str(exc).splitlines()[0]})", self.url) from None

    def close(self) -> None:
        if self._published:  # the file is free again: `jobs status` reads it
            status_file(self.url).unlink(missing_ok=True)
            self._published = False
        if self._duckdb is not None:
            self._duckdb.close()
            self._duckdb = None

    def publish_status(self) -> None:
        """Write the status of every job (:meth:`Connection.status`) to :func:`status_file`, atomically (a new
        file renamed over the old), for ``jobs status`` in other processes: DuckDB locks the queue file against
        them, readers too. Removed by :meth:`close`. Written again only after this process claimed units or
        ended a claim (committed or rolled back). Nothing to do on PostgreSQL."""
        if self.postgres or self._changes == self._published_changes:
            return
        changes = self._changes
        with self.connect() as con:
            jobs = con.status()
        data = {"pid": os.getpid(), "written_at": now().isoformat(),
                "jobs": [{**job, "submitted_at": job["submitted_at"].isoformat()} for job in jobs]}
        write_atomically(status_file(self.url), json.dumps(data))
        self._published, self._published_changes = True, changes

    def release(self, ids: Iterable[str]) -> None:
        with self._lock:
            self._claimed -= set(ids)
            self._changes += 1


class Connection(Reading):
    """One session on the queue: statements with ``?`` parameters on either database (those that read the
    queue: :class:`~hiersql.jobs.reading.Reading`)."""

    def __init__(self, queue: Queue, raw: Any) -> None:
        self.queue = queue
        self.raw = raw
        self.held: list[str] = []

    def execute(self, sql: str, params: Iterable[Any] = ()) -> list[tuple]:
        if self.queue.postgres:
            cur = self.raw.execute(sql.replace("?", "%s"), list(params))
            return cur.fetchall() if cur.description else []
        rel = self.raw.execute(sql, list(params))
        return rel.fetchall() if rel.description else []

    def executemany(self, sql: str, rows: list[tuple]) -> None:
        if not rows:
            return
        if self.queue.postgres:
            with self.raw.cursor() as cur:
                cur.executemany(sql.replace("?", "%s"), rows)
        else:
            self.raw.executemany(sql, rows)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A transaction: committed on success, rolled back on any error."""
        self.execute("BEGIN")
        try:
            yield
        except BaseException:
            self.rollback()
            raise
        self.commit()

    def commit(self) -> None:
        try:
            self.execute("COMMIT")
        finally:
            self._release()

    def rollback(self) -> None:
        try:
            self.execute("ROLLBACK")
        except Exception:  # the connection is gone: the server rolled back
            pass
        finally:
            self._release()

    def _release(self) -> None:
        if self.held:
            self.queue.release(self.held)
            self.held = []

    def close(self) -> None:
        with suppress(Exception):
            self.raw.close()

    def check_queue(self) -> None:
        """An :class:`~hiersql.errors.InputError` unless the database holds a queue (its ``jobs`` table): a
        results file of ``hiersql evaluate --db``, or another database, is not read as an empty queue, nor
        given the queue's tables by a command that only reads or cancels."""
        if self.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()"
                        " AND table_name = 'jobs'")[0][0]:
            return
        if self.queue.postgres:
            database = self.execute("SELECT current_database()")[0][0]
            raise NotAQueue(f"not a job queue (no jobs table in database {database!r})", self.queue.named[0])
        raise NotAQueue("not a job queue (no jobs table)", self.queue.url)

    def check_tables(self) -> None:
        """An :class:`~hiersql.errors.InputError` naming the database (a URL without its password) and the
        table, if a table of the queue's names (:func:`table_forms`) has other columns: it is the user's, which
        :data:`SCHEMA` would alter (``results``) or leave for the queue's statements to fail on, half way
        through a submission. The check ``hiersql evaluate --db`` makes of its file
        (:func:`hiersql.inputs.store.check_own_tables`). On PostgreSQL every relation of the schema counts (a view,
        an index), as ``CREATE TABLE IF NOT EXISTS`` counts them, and so does a type of one of the names (an
        enum: ``CREATE TABLE`` would fail on it); DuckDB's names ignore case, as DuckDB does."""
        from ..inputs.store import check_own_tables, duckdb_tables

        forms = table_forms()
        if self.queue.postgres:
            found = self.execute(
                "SELECT c.relname, coalesce(array_agg(a.attname::text ORDER BY a.attnum) FILTER (WHERE a.attnum IS"
                " NOT NULL), '{}') FROM pg_class c LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0"
                " AND NOT a.attisdropped WHERE c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname ="
                f" current_schema()) AND c.relname IN ({', '.join('?' * len(forms))}) GROUP BY c.relname"
                " ORDER BY c.relname", list(forms))
            check_own_tables(found, forms, display(self.queue.url))
            # a type of a table's name that is no relation's row type (an enum, a domain) makes CREATE TABLE fail
            types = self.execute(
                "SELECT t.typname FROM pg_type t WHERE t.typnamespace = (SELECT oid FROM pg_namespace WHERE nspname"
                f" = current_schema()) AND t.typname IN ({', '.join('?' * len(forms))}) AND t.typrelid = 0"
                " ORDER BY t.typname", list(forms))
            if types:
                raise InputError(f"has a type {types[0][0]!r} named as a table of hiersql's job queue: give hiersql"
                                 " a database of its own", display(self.queue.url), value=types[0][0])
        else:
            check_own_tables(duckdb_tables(self.raw), forms, self.queue.url)

    # ------------------------------------------------------------------ jobs
    def submit(self, name: str, spec: str, units: list[Any], recompute: bool = False) -> tuple[str, int]:
        """Queue a job of ``units`` (:class:`~hiersql.jobs.spec.Unit`) in one transaction; units whose key has
        results already are ``skipped`` (unless ``recompute``). The units still queued by earlier submissions
        of the same job file are ``cancelled`` (superseded): this submission is what the file asks for now (a
        run killed, then started again with its job file, would otherwise leave them queued for ever, and so
        would a system or dataset taken out of the file). Returns the job id and the number queued."""
        job_id = f"{now():%Y%m%dT%H%M%S%f}-{uuid.uuid4().hex[:6]}"
        other = self.execute("SELECT spec FROM jobs WHERE name = ? AND spec <> ? ORDER BY job_id DESC LIMIT 1",
                             (name, spec))
        if other:  # one name, one job: jobs results would show only the file submitted last
            import warnings

            from ..errors import DataWarning

            warnings.warn(f"{spec}: the job name {name!r} is also the name of {other[0][0]} on this queue: jobs"
                          " results shows the one submitted last; give each job file a name of its own (name =)",
                          DataWarning, stacklevel=2)
        with self.transaction():
            self._cancel_queued("job_id IN (SELECT job_id FROM jobs WHERE spec = ?)", [spec],
                                f"superseded by job {job_id}")
            self.execute("INSERT INTO jobs VALUES (?, ?, ?, ?)", (job_id, name, spec, now()))
            done = set() if recompute else self._keys_with_results([u.key for u in units])
            rows = [(uuid.uuid4().hex, job_id, seq, u.dataset, u.system, u.key, u.group, json.dumps(u.work),
                     recompute, "skipped" if u.key in done else "queued") for seq, u in enumerate(units)]
            self.executemany(
                "INSERT INTO units (unit_id, job_id, seq, dataset, system, key, grp, work, recompute, status)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        return job_id, sum(r[-1] == "queued" for r in rows)

    def latest_rows(self, keys: list[str]) -> list[tuple]:
        """The result rows (values of :data:`RESULT_INSERT`) of the latest run of each of ``keys`` that has
        results (the rule of the views: :data:`~hiersql.jobs.schema.KEY_RUNS`)."""
        from .schema import KEY_RUNS

        rows: list[tuple] = []
        for start in range(0, len(keys), 500):
            part = keys[start:start + 500]
            rows += self.execute(
                f"WITH runs AS ({KEY_RUNS}) SELECT {', '.join(f'r.{c}' for c in RESULT_INSERT)} FROM results r"
                f" JOIN runs l ON l.key = r.key AND l.run_id = r.run_id AND l.n = 1 WHERE r.key IN"
                f" ({', '.join('?' * len(part))}) ORDER BY r.key, r.system, r.metric, r.average", part)
        return rows

    def _keys_with_results(self, keys: list[str]) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(keys), 500):
            part = keys[start:start + 500]
            found |= {r[0] for r in self.execute(
                f"SELECT DISTINCT key FROM results WHERE key IN ({', '.join('?' * len(part))})", part)}
        return found

    # ------------------------------------------------------------------ work
    def claim(self, jobs: list[str] | None, workers: int, max_batch: int) -> list[Claimed]:
        """Begin a transaction and claim queued units of ``jobs`` (all when ``None``): the first queued unit
        and more of its group (one dataset, loaded together), at most ``max_batch`` and about an even share
        among ``workers`` (on DuckDB: among the idle ones; while the others hold claims, all of it). A unit
        claimed before without a commit (:attr:`Claimed.attempts`) is claimed alone, so that a unit that stops
        its worker does not take a batch down with it again. Nothing queued: no
        transaction is left open and ``[]`` is returned."""
        where = "status = 'queued'"
        params: list[Any] = []
        if jobs is not None:
            where += f" AND job_id IN ({', '.join('?' * len(jobs))})" if jobs else " AND FALSE"
            params += jobs
        try:
            if self.queue.postgres:
                self.execute("BEGIN")
                picked = self._claim_postgres(where, params, workers, max_batch)
            else:  # one thread at a time begins and picks: a later snapshot sees what the others committed
                with self.queue._lock:
                    self.execute("BEGIN")
                    picked = self._claim_duckdb(where, params, workers, max_batch)
        except BaseException:
            self.rollback()
            raise
        if not picked:
            self.rollback()
        return [Claimed(r[0], r[1], r[2], r[3], r[4], r[5], json.loads(r[6]), bool(r[7]), int(r[8]), int(r[9]))
                for r in picked]

    def _claim_postgres(self, where: str, params: list[Any], workers: int, max_batch: int) -> list[tuple]:
        first = self.execute(f"SELECT {UNIT_COLUMNS} FROM units WHERE {where} ORDER BY job_id, seq LIMIT 1"
                             " FOR UPDATE SKIP LOCKED", params)
        if not first:
            return []
        if first[0][8]:
            return first
        job, group = first[0][1], first[0][5]
        left, groups = self.execute(
            f"SELECT count(*) FILTER (WHERE job_id = ? AND grp = ?), count(DISTINCT grp) FROM units WHERE {where}",
            [job, group, *params])[0]
        more = self.execute(
            f"SELECT {UNIT_COLUMNS} FROM units WHERE status = 'queued' AND job_id = ? AND grp = ? AND unit_id <> ?"
            " AND NOT EXISTS (SELECT 1 FROM attempts a WHERE a.unit_id = units.unit_id)"
            " ORDER BY seq LIMIT ? FOR UPDATE SKIP LOCKED",
            (job, group, first[0][0], _share(left, groups, workers, max_batch) - 1))
        return first + more

    def _claim_duckdb(self, where: str, params: list[Any], workers: int, max_batch: int) -> list[tuple]:
        rows = self.execute(f"SELECT {UNIT_COLUMNS} FROM units WHERE {where} ORDER BY job_id, seq", params)
        free = [r for r in rows if r[0] not in self.queue._claimed and r[4] not in self.queue._claimed]
        if not free:
            return []
        job, group = free[0][1], free[0][5]
        same = [r for r in free if r[1] == job and r[5] == group and not r[8]] if not free[0][8] else free[:1]
        # while the other workers are busy (they hold claims), this one takes its group whole: a share left
        # for later would be loaded again by another worker, and each batch has a cost of its own
        share = _share(len(same), len({f[5] for f in free}), 1 if self.queue._claimed else workers, max_batch)
        picked, keys = [], set()
        for r in same:  # one unit per key: two of the same content are never computed at once
            if r[4] not in keys and len(picked) < share:
                picked.append(r)
                keys.add(r[4])
        self.held = [r[0] for r in picked] + list(keys)
        self.queue._claimed |= set(self.held)
        self.queue._changes += 1
        return picked

    def record_attempts(self, units: list[Claimed], run_id: str, worker: str) -> list[str]:
        """Count a claim of each of ``units``, committed at once (outside any batch's transaction, on a
        connection of its own); returns the attempts' ids for :meth:`note_attempts`."""
        stamp = now()
        ids = [uuid.uuid4().hex for _ in units]
        self.executemany("INSERT INTO attempts (attempt_id, unit_id, run_id, worker, started_at) VALUES"
                         " (?, ?, ?, ?, ?)", [(a, u.unit_id, run_id, worker, stamp) for a, u in zip(
                             ids, units, strict=True)])
        return ids

    def note_attempts(self, ids: list[str], error: str) -> None:
        """Say why the attempts ``ids`` ended without a commit."""
        self.executemany("UPDATE attempts SET error = ? WHERE attempt_id = ?", [(error, a) for a in ids])

    def gave_up(self, unit: Claimed) -> str:
        """The error of a unit with ``max_attempts`` failed attempts: their number and the last reason."""
        last = self.execute("SELECT error FROM attempts WHERE unit_id = ? AND error IS NOT NULL"
                            " ORDER BY started_at DESC LIMIT 1", (unit.unit_id,))
        return f"gave up after {unit.failures} attempt(s) (--max-attempts): {last[0][0]}"

    def has_results(self, key: str) -> bool:
        """Whether ``key`` has results (committed by any worker). On PostgreSQL the key is first locked until
        the end of this transaction, so that two workers never store the same key twice."""
        if self.queue.postgres:
            self.execute("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", (key,))
        return bool(self.execute("SELECT count(*) FROM results WHERE key = ?", (key,))[0][0])

    def finish(self, run_id: str, worker: str, outcomes: list[tuple[Claimed, str, Computed | None, str | None]],
               stamp: datetime | None = None) -> None:
        """Write claimed units' statuses and the rows and per-instance tables of the done ones
        (:func:`~hiersql.jobs.instances.store_tables`), in the transaction of :meth:`claim`. ``outcomes``:
        ``(unit, status, computed, error)`` with status ``done`` (what it computed), ``failed`` (its error) or
        ``skipped`` (its key has results, :meth:`has_results`). ``stamp``: the time of the rows (default: now)."""
        from .instances import store_tables

        stamp = stamp or now()
        done = [(unit, computed) for unit, status, computed, _ in outcomes if status == "done" and computed]
        self.insert_many("results", RESULT_INSERT, result_rows(run_id, done, stamp))
        store_tables(self, run_id, done)
        states = [(status, error, worker, run_id if status != "skipped" else None, stamp, unit.unit_id)
                  for unit, status, _, error in outcomes]
        if self.queue.postgres:
            self.executemany("UPDATE units SET status = ?, error = ?, worker = ?, run_id = ?, finished_at = ?"
                             " WHERE unit_id = ?", states)
            return
        names = ("status", "error", "worker", "run_id", "finished_at", "unit_id")
        self.raw.execute(
            "UPDATE units SET status = v.status, error = v.error, worker = v.worker, run_id = v.run_id,"
            f" finished_at = v.finished_at FROM (SELECT {', '.join(f'unnest(${c}) AS {c}' for c in names)}) v"
            " WHERE units.unit_id = v.unit_id",
            {c: list(v) for c, v in zip(names, zip(*states, strict=True), strict=True)})

    def insert_many(self, table: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
        """Insert ``rows`` (values of ``columns``) into ``table``: on DuckDB one statement of list parameters
        (its executemany costs a statement per row)."""
        if not rows:
            return
        if self.queue.postgres:
            self.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                             rows)
            return
        self.raw.execute(f"INSERT INTO {table} ({', '.join(columns)})"
                         f" SELECT {', '.join(f'unnest(${c})' for c in columns)}",
                         {c: list(v) for c, v in zip(columns, zip(*rows, strict=True), strict=True)})

    def cancel(self, jobs: list[str] | None) -> int:
        """Cancel the queued units of ``jobs`` (every job when ``None``); units being computed finish. Returns
        how many were cancelled."""
        ids = self.job_ids(jobs)
        if not ids:
            return 0
        with self.transaction():
            return self._cancel_queued(f"job_id IN ({', '.join('?' * len(ids))})", ids)

    def _cancel_queued(self, where: str, params: list[Any], error: str | None = None) -> int:
        """Cancel the queued units that match ``where`` (with ``error`` as the reason), in the transaction at
        hand; how many. On PostgreSQL the units a worker has claimed are rows it locked: skipped, not waited
        for (being computed, they finish; status counts them as running); a DuckDB file is held by one
        process, whose claims end with it."""
        locked = " FOR UPDATE SKIP LOCKED" if self.queue.postgres else ""
        return len(self.execute(
            "UPDATE units SET status = 'cancelled', error = ? WHERE unit_id IN (SELECT unit_id FROM units WHERE"
            f" status = 'queued' AND {where}{locked}) RETURNING unit_id", [error, *params]))


def _quiet_pipeline_errors() -> None:
    """psycopg logs the error of a pipeline (its ``executemany``'s) that ends while an error of the same
    connection is raised through it (``error ignored terminating <psycopg.Pipeline [BAD] at 0x...>: the
    connection is lost``, on stderr unless logging is set up): that raised error is the one the worker handles
    (a lost connection: retried, with a warning), so the line is dropped (a filter on psycopg's logger,
    added once)."""
    log = logging.getLogger("psycopg")
    if _not_pipeline_noise not in log.filters:
        log.addFilter(_not_pipeline_noise)


def _not_pipeline_noise(record: logging.LogRecord) -> bool:
    return record.msg != "error ignored terminating %r: %s"


def _share(queued: int, groups: int, workers: int, max_batch: int) -> int:
    """How many of the ``queued`` units of a group one claim takes, at most ``max_batch``: all of them while
    there are as many groups queued as ``workers`` that may claim (each worker loads other datasets), else an
    even share."""
    share = queued if groups >= workers else -(-queued // max(1, workers))
    return max(1, min(max_batch, share))
