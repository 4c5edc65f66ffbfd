"""Workers: claim units from the queue, evaluate them, write their rows and status in one transaction.

A claim takes several units of one dataset (a *batch*): their systems are loaded into one in-memory store
that holds that dataset's taxonomy and truth and exactly the claimed systems (every earlier system deleted
first), read from their own files only, and evaluated together. A bad file fails its unit alone: a batch whose
loading or evaluation fails is evaluated again unit by unit, each in a store of its own system only. An
empty prediction file is a system that predicted nothing, not a failure.

Workers are threads of the run's process, each evaluating in a child process of its own (:class:`Child`),
one worker too: DuckDB's Python client takes the GIL back between the tasks of a query, so two stores queried
by threads of one process wait for each other; and a unit that kills the process evaluating it (a crash, the
OOM killer) is told apart from the run stopped from outside. A child sends its batch's rows back, and the
thread writes them and the statuses in the transaction of its claim. So on either queue the run's process holds
every claim: a signal to it stops every worker (each commits its batch at hand), a child that dies is
started again (its batch is claimed again), and a child whose run died sees its socket close and exits. On
a DuckDB queue that process is the file's only writer; on PostgreSQL each thread has its own session, and
any number of runs, on as many machines, share the queue.

Every claim of a unit is recorded (:meth:`~hiersql.jobs.queue.Connection.record_attempts`, committed before
the unit is evaluated). A batch whose worker stops (a child process killed or crashed, the run killed, a
transient error) is claimed again one unit at a time. A claim whose end the run saw (its child process killed
or crashed, a transient error: the reason is noted) is a failed attempt, and a unit with ``max_attempts`` of
them fails with the last reason; a claim that ended with the run itself (SIGKILL from outside, the machine
stopped: no reason noted) costs the unit nothing.
"""

from __future__ import annotations

import contextlib
import os
import queue as threading_queue
import select
import signal
import socket
import sys
import threading
import time
import uuid
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from . import MAX_ATTEMPTS, MAX_BATCH
from .evaluation import Stores, _named, evaluate, message
from .instances import Computed
from .queue import Claimed, Connection, Queue, now, out_of_space, result_rows

RETRIES = 5  # transient errors in a row before a worker gives up
PUBLISH_EVERY = 0.5  # seconds between two writes of a DuckDB queue's status file (Queue.publish_status)
BACKOFF = 0.5  # seconds before the first retry; doubled each time


@dataclass
class Event:
    """What a worker did with one unit."""

    job_id: str
    dataset: str
    system: str
    status: str
    error: str | None = None


@dataclass
class Summary:
    """The units a run processed, by status, and the failures ``(dataset, system, error)``; :meth:`add` may be
    called from several threads."""

    counts: Counter = field(default_factory=Counter)
    failures: list[tuple[str, str, str]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, event: Event) -> None:
        with self._lock:
            self.counts[event.status] += 1
            if event.status == "failed":
                self.failures.append((event.dataset, event.system, event.error or ""))


class UnitsFailed(InputError):
    """Units of a run failed (each recorded its error): exit status 1, which cron and systemd tell from bad
    input (2) and from a queue file another process holds (75: :class:`~hiersql.jobs.queue.QueueBusy`)."""

    exit_status = 1

    @classmethod
    def check(cls, summary: Summary, source: str, job_id: str | None = None) -> None:
        """Raise one for the failures of ``summary`` (a run of the job ``job_id``, given as ``source``: the job
        file or the queue), carrying ``.summary`` and ``.job_id``; nothing when no unit failed."""
        if not summary.failures:
            return
        failed = cls(f"{len(summary.failures)} of {sum(summary.counts.values())} unit(s) failed"
                     " (`hiersql jobs status` lists the errors)", source)
        failed.summary, failed.job_id = summary, job_id
        raise failed


class RunsFailed(InputError):
    """Runs of a schedule failed: the exit status of the gravest of ``statuses`` (:func:`exit_status` of each
    failed run): a bad job file or input (2), else failed units (1), else a busy queue file (75)."""

    def __init__(self, message: str, source: str, statuses: list[int]) -> None:
        super().__init__(message, source)
        self.exit_status = next(code for code in (2, 1, 75) if code in statuses)


class WorkerLost(Exception):
    """The process evaluating a batch ended without answering (killed, crashed)."""


class Child:
    """A process that evaluates batches for one worker thread, keeping its loaded dataset between batches like
    :class:`Stores`. ``fork``: a copy of this process, started now, which must have one thread and no open
    database (then the imports are shared); else a new interpreter (``python -m hiersql.jobs.child``), started
    when it is first given a batch (a run with nothing to evaluate starts none), and again after a crash."""

    def __init__(self, threads: int | None, fork: bool = False) -> None:
        self.threads = threads
        self.pid: int | None = None
        self.pipe: Any = None
        if fork:
            self.start(fork)

    def start(self, fork: bool = False) -> None:
        from multiprocessing.connection import Connection as Pipe

        mine, theirs = socket.socketpair()
        if fork:
            sys.stdout.flush()
            sys.stderr.flush()
            self.pid = os.fork()
            if self.pid == 0:  # the child: never this process's exit handlers (they are the parent's)
                code = 1
                try:
                    mine.close()
                    for other in _running:  # the other children's sockets: each must see its parent's end
                        other.pipe.close()
                    serve(theirs.detach(), self.threads or 0)
                    code = 0
                finally:
                    os._exit(code)
        else:
            from .. import __file__ as package

            # the hiersql this process runs, whatever the working folder or the path of the caller
            path = os.pathsep.join(p for p in (os.path.dirname(os.path.dirname(package)),
                                               os.environ.get("PYTHONPATH")) if p)
            os.set_inheritable(theirs.fileno(), True)
            self.pid = os.posix_spawn(sys.executable, [
                sys.executable, "-m", "hiersql.jobs.child", str(theirs.fileno()), str(self.threads or 0)],
                {**os.environ, "PYTHONPATH": path}, file_actions=[(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)])
        theirs.close()
        self.pipe = Pipe(mine.detach())
        _running.append(self)

    def evaluate(self, units: list[Claimed]) -> dict[str, tuple[str, Computed | str]]:
        """:func:`evaluate` in the child; :class:`WorkerLost` when it ends before answering."""
        if self.pid is None:
            self.start()
        try:
            self.pipe.send(units)
            kind, value, caught = self.pipe.recv()
        except (EOFError, OSError):
            code = self.close()
            raise WorkerLost(f"its worker process was killed by {signal.Signals(-code).name}" if code and code < 0
                             else f"its worker process ended (exit status {code})") from None
        for text, category in caught:  # the store's warnings, said by this process (the CLI prints them)
            warnings.warn(text, category, stacklevel=1)
        if kind == "raise":
            raise RuntimeError(value)
        return value

    def close(self, timeout: float = 30.0) -> int | None:
        """End the child (it reads the end of its input and exits; killed after ``timeout`` seconds); returns
        its exit code (negative: the signal that ended it)."""
        if self.pipe is not None:
            self.pipe.close()
            _running.remove(self)
        pid, self.pid, self.pipe = self.pid, None, None
        if pid is None:
            return None
        deadline = time.monotonic() + timeout
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status)
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                deadline = float("inf")
            time.sleep(0.01)


_running: list[Child] = []  # the children of this process with an open socket


def children(workers: int) -> list[Child]:
    """The child processes that the workers of a run with ``workers`` workers evaluate in, on either queue
    (one each): forked now when this process has one thread (the modules they need imported first: the
    imports are shared), else new interpreters started as they are needed.
    Start them before any database is opened (``hiersql jobs run`` does, before it reads the job file), and
    give them to :func:`run`."""
    fork = hasattr(os, "fork") and os.path.isdir("/proc/self/task") and len(os.listdir("/proc/self/task")) == 1
    if fork:  # the work's modules (sqlglot's dialect is loaded on first use), imported once for both processes
        import sqlglot.dialects.duckdb  # noqa: F401

    return [Child(_threads_per_worker(workers), fork) for _ in range(workers)]


def _threads_per_worker(workers: int) -> int | None:
    """DuckDB threads of each worker's store: parallel workers share the cores instead of each running every
    query on all of them."""
    return max(1, (os.cpu_count() or 1) // workers) if workers > 1 else None


def serve(fd: int, threads: int) -> None:
    """The loop of a :class:`Child`: read a batch from the socket ``fd``, answer ``(kind, value, warnings)``
    (``("done", outcome)`` of :func:`evaluate`, or ``("raise", message)``), until the socket closes."""
    from multiprocessing.connection import Connection as Pipe

    for stop in (signal.SIGINT, signal.SIGTERM):  # Ctrl-C, or SIGTERM to the process group, is the parent's: it
        signal.signal(stop, signal.SIG_IGN)  # commits the batch at hand, then closes the socket (EOF ends this)
    threading.Thread(target=_exit_on_hangup, args=(fd,), daemon=True).start()
    pipe = Pipe(fd)
    stores = Stores(threads or None)
    try:
        while True:
            try:
                units = pipe.recv()
            except EOFError:
                return
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    reply: tuple[str, Any] = ("done", evaluate(units, stores))
                except Exception as exc:
                    reply = ("raise", message(exc))
            pipe.send((*reply, [(str(w.message), w.category) for w in caught]))
    finally:
        stores.close()


def _exit_on_hangup(fd: int) -> None:
    """End this child process as soon as the other end of its socket ``fd`` is closed: its parent ended or was
    killed (SIGKILL, a crash), and the rows of a batch evaluated now would have no one to commit them. The
    loop of :func:`serve` sees that only when it reads the next batch; this thread sees it at once."""
    watch = select.poll()
    watch.register(fd, 0)  # no events asked: a hang-up is always reported
    watch.poll()
    os._exit(0)


class Worker:
    """Claims units of ``jobs`` (all when ``None``) until none is queued, has ``child`` (a :class:`Child`)
    evaluate them, and commits them."""

    def __init__(self, queue: Queue, child: Child, jobs: list[str] | None, run_id: str, name: str,
                 workers: int = 1, max_batch: int = MAX_BATCH, max_attempts: int = MAX_ATTEMPTS) -> None:
        self.queue, self.jobs, self.run_id, self.name = queue, jobs, run_id, name
        self.workers, self.max_batch, self.max_attempts = workers, max_batch, max_attempts
        self.on_unit: Callable[[Event], None] = lambda _: None
        self.stop = threading.Event()  # set: finish the batch at hand, then stop (Ctrl-C)
        self.child = child

    def run(self) -> None:
        failures = 0
        try:
            while True:
                try:
                    with self.queue.connect() as con, self.queue.connect() as log:
                        while not self.stop.is_set() and self._one_batch(con, log):
                            failures = 0
                    return
                except self.queue.transient as exc:
                    failures += 1
                    if failures > RETRIES or out_of_space(exc):  # a full disk is not a write conflict
                        raise
                    delay = BACKOFF * 2 ** (failures - 1)
                    warnings.warn(f"worker {self.name}: its batch was rolled back ({_named(exc)}); it goes on"
                                  f" in {delay:g} s (retry {failures} of {RETRIES})", RuntimeWarning, stacklevel=1)
                    time.sleep(delay)
        finally:
            self.child.close()

    def _one_batch(self, con: Connection, log: Connection) -> bool:
        """Claim, evaluate and commit one batch; false when nothing is queued. ``log``: a connection of its
        own, on which the claims are counted."""
        units = con.claim(self.jobs, self.workers, self.max_batch)
        if not units:
            return False
        spent = {u.unit_id for u in units if u.failures >= self.max_attempts}
        try:
            attempts = log.record_attempts([u for u in units if u.unit_id not in spent], self.run_id, self.name)
        except BaseException:
            con.rollback()
            raise
        try:
            todo = [u for u in units if u.unit_id not in spent and (u.recompute or not con.has_results(u.key))]
            outcome = self.child.evaluate(todo) if todo else {}
            stamp = now()
            export(self.run_id, todo, outcome, stamp)  # before the queue's commit: see export
            outcome |= {u.unit_id: ("failed", con.gave_up(u)) for u in units if u.unit_id in spent}
            outcomes = []
            for unit in units:
                status, value = outcome.get(unit.unit_id, ("skipped", None))
                outcomes.append((unit, status, value if status == "done" else None,
                                 value if status == "failed" else None))
            con.finish(self.run_id, self.name, outcomes, stamp)
            events = [Event(u.job_id, u.dataset, u.system, status, error) for u, status, _, error in outcomes]
        except WorkerLost as exc:  # its units are claimed again, one at a time
            try:  # why, noted before the rollback frees the units: a worker claiming one next may give up on it
                log.note_attempts(attempts, str(exc))
            finally:
                con.rollback()
            return True
        except BaseException as exc:
            con.rollback()
            if isinstance(exc, self.queue.transient) and not out_of_space(exc):
                with contextlib.suppress(Exception):  # the connection may be gone with the queue
                    log.note_attempts(attempts, message(exc))
            raise
        con.commit()
        for event in events:
            self.on_unit(event)
        return True


def export(run_id: str, units: list[Claimed], outcome: dict[str, tuple[str, Computed | str]], stamp: Any) -> None:
    """Write the rows of the done ``units`` whose job names a results target (``work["results"]``) to it, one
    transaction per target (:func:`hiersql.jobs.targets.write_results`), before the queue's transaction commits:
    if that one is rolled back the units are computed again and their rows replace those written (by their
    keys), so the target never lacks the rows of a unit done in the queue. A target that refuses them fails
    those units (in ``outcome``) with its error: the queue does not store what the team's table lacks, and the
    next submission queues them again."""
    from .targets import write_results

    by_target: dict[str, list[tuple[Claimed, Computed]]] = {}
    for unit in units:
        status, value = outcome.get(unit.unit_id, ("skipped", None))
        if status == "done" and unit.work.get("results") and isinstance(value, Computed):
            by_target.setdefault(unit.work["results"], []).append((unit, value))
    for target, done in by_target.items():
        try:
            write_results(target, result_rows(run_id, done, stamp))
        except Exception as exc:
            error = f"its rows were not written to the results table: {message(exc)}"
            for unit, _ in done:
                outcome[unit.unit_id] = ("failed", error)


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def run(queue: Queue, jobs: list[str] | None = None, workers: int = 1, max_batch: int = MAX_BATCH,
        on_unit: Callable[[Event], None] | None = None, max_attempts: int = MAX_ATTEMPTS,
        processes: list[Child] | None = None, summary: Summary | None = None) -> Summary:
    """Process the queued units of ``jobs`` (all when ``None``) with ``workers`` workers: threads of this
    process (on a DuckDB queue, the file's one writer), each evaluating in a child process of its own
    (``processes``: from :func:`children`, else started here). A unit with ``max_attempts`` failed attempts
    (its evaluating process killed or crashed, a transient error) fails. Returns what was done, in ``summary``
    when given (filled as units are committed: what was done before an interrupt too); ``on_unit(event)`` is
    called in this process after each unit is committed (until an interrupt)."""
    summary = summary if summary is not None else Summary()
    run_id = new_run_id()
    host = f"{socket.gethostname()}:{os.getpid()}"
    # one worker too runs in a thread (Ctrl-C lets it commit its batch) and evaluates in a child process
    kids = processes if processes is not None else children(workers)
    team = [Worker(queue, child, jobs, run_id, f"{host}:{i}", workers, max_batch, max_attempts)
            for i, child in enumerate(kids)]
    _threads(team, summary.add, on_unit or (lambda _: None), queue.publish_status)
    return summary


def run_job(spec: Any, queue: Queue | str | None = None, *, workers: int = 1, recompute: bool = False,
            max_batch: int = MAX_BATCH, max_attempts: int = MAX_ATTEMPTS, wait: float = 0.0,
            on_submit: Callable[[str, int, int], None] | None = None, **run_options: Any) -> Summary:
    """Submit the job file ``spec`` (a path or a checked :class:`~hiersql.jobs.spec.Spec`) and process its
    units, as ``hiersql jobs run JOB`` does: the call an orchestrator's task (Airflow, Dagster) makes.

    ``queue``: a :class:`~hiersql.jobs.queue.Queue`, a DuckDB file or a ``postgresql://`` URL; default the job
    file's ``queue``. ``on_submit(job_id, units, queued)`` is called once the units are queued; ``run_options``
    go to :func:`run` (``on_unit``, ``processes``, ``summary``). Returns the :class:`Summary`. Raises
    :class:`UnitsFailed` (``exit_status`` 1; ``.summary``, ``.job_id``) when units failed,
    :class:`~hiersql.jobs.queue.QueueBusy` (75) when another process holds a DuckDB queue file for longer than
    ``wait`` seconds, and :class:`~hiersql.errors.InputError` (2) for a bad job file."""
    from . import queue_url, submit
    from .spec import Spec, load_spec

    if not isinstance(spec, Spec):
        spec = load_spec(spec)
    opened = None
    if not isinstance(queue, Queue):
        named = (str(spec.path), spec.queue_line) if queue is None and spec.queue else ("queue", None)
        queue = opened = Queue(queue_url(queue, spec.queue, spec.path), wait=wait, named=named)
    try:
        job_id, total, queued = submit(queue, spec, recompute)
        if on_submit is not None:
            on_submit(job_id, total, queued)
        summary = run(queue, [job_id], workers, max_batch, max_attempts=max_attempts, **run_options)
    finally:
        if opened is not None:
            opened.close()
    UnitsFailed.check(summary, str(spec.path), job_id)
    return summary


def _threads(team: list[Worker], add: Callable[[Event], None], on_unit: Callable[[Event], None],
             publish: Callable[[], None]) -> None:
    """Run ``team`` in threads, which ``add`` each unit they commit as they commit it (so that nothing is
    missing when a signal stops this thread); in this one, pass their events to ``on_unit`` (progress bars) and
    ``publish`` the queue's status every :data:`PUBLISH_EVERY` seconds and at the end. A stop signal
    (:func:`_stop_signals`) or an error here (a status file that cannot be written) stops the workers after
    their batches at hand, and is raised once their threads have ended."""
    from concurrent.futures import ThreadPoolExecutor

    events: threading_queue.Queue[Event] = threading_queue.Queue()

    def committed(event: Event) -> None:
        add(event)
        events.put(event)

    for worker in team:
        worker.on_unit = committed
    with _stop_signals(team), ThreadPoolExecutor(len(team)) as pool:
        futures = [pool.submit(worker.run) for worker in team]
        try:
            published = time.monotonic()
            publish()
            while not all(f.done() for f in futures) or not events.empty():
                with contextlib.suppress(threading_queue.Empty):
                    on_unit(events.get(timeout=0.1))
                if time.monotonic() - published >= PUBLISH_EVERY:
                    publish()
                    published = time.monotonic()
            publish()
        except BaseException:
            for worker in team:
                worker.stop.set()
            raise
        for f in futures:
            f.result()


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def _stop_signals(team: list[Worker]) -> Iterator[None]:
    """Within, the first SIGINT or SIGTERM tells every worker of ``team`` to stop after its batch at hand, and
    the next ones are ignored; at the end (the workers' threads have ended), the handler that was set for
    it is called: Ctrl-C's KeyboardInterrupt, the command line's SIGTERM (exit 143). Raised at once, as the
    handler would, the KeyboardInterrupt can land while this thread holds a lock that a worker thread then
    waits for (a run was seen hanging so), and a second one left while the workers still committed: the
    queue was closed under their batch, and the process could abort in C++ as it exited (exit 134). Only the
    main thread sets handlers; a signal whose handler is not Python's (SIGTERM's default ends the process) is
    left alone."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {stop: signal.getsignal(stop) for stop in STOP_SIGNALS}
    handled = [stop for stop, handler in previous.items() if callable(handler)]
    received: list[tuple[int, Any]] = []

    def stop(signum: int, frame: Any) -> None:
        for other in handled:
            signal.signal(other, signal.SIG_IGN)
        received.append((signum, frame))
        for worker in team:
            worker.stop.set()

    for signum in handled:
        signal.signal(signum, stop)
    try:
        yield
    finally:
        for signum in handled:
            signal.signal(signum, previous[signum])
    if received:
        signum, frame = received[0]
        previous[signum](signum, frame)
