"""Workers: claim units from the queue, evaluate them, write their rows and status in one transaction.

A claim takes several units of one dataset (a *batch*): their systems are loaded into one in-memory store
that holds that dataset's taxonomy and truth and exactly the claimed systems (every earlier system deleted
first), read from their own files only, and evaluated together. A bad file fails its unit alone: a batch whose
loading or evaluation fails is evaluated again unit by unit, each in a store of its own system only. An
empty prediction file is a system that predicted nothing, not a failure.

Parallel workers are threads on a DuckDB queue (the file is opened by one process at a time; the stores'
queries release the GIL) and processes on a PostgreSQL queue (each its own session; as many processes, on as
many machines, as you start).
"""

from __future__ import annotations

import contextlib
import os
import queue as threading_queue
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from .queue import Claimed, Connection, Queue
from .spec import file_hash

MAX_BATCH = 32  # units one claim takes at most (the CLI's --batch default)
RETRIES = 5  # transient errors in a row before a worker gives up
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
    """The units a run processed, by status, and the failures ``(dataset, system, error)``."""

    counts: Counter = field(default_factory=Counter)
    failures: list[tuple[str, str, str]] = field(default_factory=list)

    def add(self, event: Event) -> None:
        self.counts[event.status] += 1
        if event.status == "failed":
            self.failures.append((event.dataset, event.system, event.error or ""))


def message(exc: BaseException) -> str:
    """The one line the command line prints for an error (without its ``hiersql: error:`` prefix)."""
    if isinstance(exc, InputError):
        return str(exc)
    first = str(exc).splitlines()[0] if str(exc) else ""
    return f"internal error: {type(exc).__name__}: {first}"


class Stores:
    """A worker's loaded dataset: one in-memory store with a group's taxonomy and truth, kept for the next
    batch of the same group."""

    def __init__(self, threads: int | None = None) -> None:
        self.group: str | None = None
        self.store: Any = None
        self.threads = threads

    def get(self, unit: Claimed) -> Any:
        if self.group == unit.group:
            return self.store
        self.close()
        from ..store import Store

        work = unit.work
        for name in ("taxonomy", "truth"):
            _check_unchanged(work[name], work["hashes"][name])
        store = Store()
        try:
            store.con.execute("SET enable_progress_bar = false")
            if self.threads:
                store.con.execute(f"SET threads = {int(self.threads)}")
            columns = work.get("columns", {})
            store.load(lambda: _taxonomy(work["taxonomy"], work["hashes"]["taxonomy"], columns.get("parent_col"),
                                         columns.get("child_col")),
                       work["truth"], [], work["format"], unknown=work["unknown"], **_label_columns(work))
        except BaseException:
            store.close()
            raise
        self.group, self.store = unit.group, store
        return store

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
        self.group = self.store = None


# (path, content hash, parent and child columns) → Taxonomy, parsed once per process
_taxonomies: dict[tuple[str, str, str | None, str | None], Any] = {}
_taxonomies_lock = threading.Lock()


def _taxonomy(path: str, digest: str, parent: str | None = None, child: str | None = None) -> Any:
    """The taxonomy of ``path`` (whose content hashes to ``digest``; a table's ``parent`` and ``child``
    columns when named), parsed once for all worker threads."""
    from ..taxonomy import Taxonomy

    key = (path, digest, parent, child)
    with _taxonomies_lock:
        if key not in _taxonomies:
            if len(_taxonomies) >= 4:
                _taxonomies.pop(next(iter(_taxonomies)))
            _taxonomies[key] = Taxonomy.from_table(path, parent=parent, child=child) if parent or child \
                else Taxonomy.from_file(path)
        return _taxonomies[key]


def _label_columns(work: dict[str, Any]) -> dict[str, str]:
    """The column keywords of a unit's label tables, as :meth:`hiersql.store.Store.load` takes them."""
    columns = work.get("columns", {})
    return {key: columns[key] for key in ("instance_col", "label_col", "score_col") if key in columns}


def _check_unchanged(path: str, expected: str) -> None:
    try:
        changed = file_hash(path) != expected
    except OSError as exc:
        raise InputError(f"cannot read file ({exc.strerror})", path) from None
    if changed:
        raise InputError("file changed since the job was submitted: submit it again", path)


def evaluate(units: list[Claimed], stores: Stores) -> dict[str, tuple[str, list[Any] | str]]:
    """``{unit_id: ("done", rows) or ("failed", message)}`` for units of one group."""
    try:
        store = stores.get(units[0])
    except Exception as exc:  # the dataset's taxonomy or truth: every unit fails with its message
        stores.close()
        return {u.unit_id: ("failed", message(exc)) for u in units}
    out: dict[str, tuple[str, list[Any] | str]] = {}
    ready = []
    for unit in units:
        try:
            _check_unchanged(unit.work["prediction"], unit.work["hashes"]["prediction"])
            ready.append(unit)
        except InputError as exc:
            out[unit.unit_id] = ("failed", message(exc))
    if not ready:
        return out
    try:
        rows = _compute(store, ready)
    except Exception as exc:
        if len(ready) == 1:
            out[ready[0].unit_id] = ("failed", message(exc))
            return out
        for unit in ready:  # find the one at fault: each unit alone
            out.update(evaluate([unit], stores))
        return out
    for unit in ready:
        out[unit.unit_id] = ("done", [r for r in rows if r.system == unit.system])
    return out


def _compute(store: Any, units: list[Claimed]) -> list[Any]:
    """Load exactly the systems of ``units`` (after deleting every other) and evaluate them."""
    from ..evaluator import compute, make_options

    work = units[0].work
    with store.transaction():
        store.con.execute("DELETE FROM predictions")
        store.con.execute("DELETE FROM systems")
    # an empty file is a system that predicted nothing: evaluated, with the store's warning naming the file
    sources = [(u.system, u.work["prediction"]) for u in units]
    store.add_predictions_many(sources, work["format"], unknown=work["unknown"], **_label_columns(work))
    if store.systems() != sorted(u.system for u in units):  # never a system that is not this batch's
        raise RuntimeError(f"store holds systems {store.systems()}, expected {[u.system for u in units]}")
    return compute(store, work["metrics"], make_options(**work["options"]))


class Worker:
    """Claims and evaluates units until none of ``jobs`` (all when ``None``) is queued."""

    def __init__(self, queue: Queue, jobs: list[str] | None, run_id: str, name: str, workers: int = 1,
                 max_batch: int = MAX_BATCH, on_unit: Callable[[Event], None] | None = None) -> None:
        self.queue, self.jobs, self.run_id, self.name = queue, jobs, run_id, name
        self.workers, self.max_batch = workers, max_batch
        self.on_unit = on_unit or (lambda _: None)
        self.stop = threading.Event()  # set: finish the batch at hand, then stop (Ctrl-C)
        # parallel workers share the cores instead of each running every query on all of them
        self.stores = Stores(max(1, (os.cpu_count() or 1) // workers) if workers > 1 else None)

    def run(self) -> None:
        failures = 0
        try:
            while True:
                try:
                    with self.queue.connect() as con:
                        while not self.stop.is_set() and self._one_batch(con):
                            failures = 0
                    return
                except self.queue.transient:
                    failures += 1
                    if failures > RETRIES:
                        raise
                    time.sleep(BACKOFF * 2 ** (failures - 1))
        finally:
            self.stores.close()

    def _one_batch(self, con: Connection) -> bool:
        """Claim, evaluate and commit one batch; false when nothing is queued."""
        units = con.claim(self.jobs, self.workers, self.max_batch)
        if not units:
            return False
        try:
            todo = [u for u in units if u.recompute or not con.has_results(u.key)]
            outcome = evaluate(todo, self.stores) if todo else {}
            outcomes = []
            for unit in units:
                status, value = outcome.get(unit.unit_id, ("skipped", None))
                outcomes.append((unit, status, value if status == "done" else None,
                                 value if status == "failed" else None))
            con.finish(self.run_id, self.name, outcomes)
            events = [Event(u.job_id, u.dataset, u.system, status, error) for u, status, _, error in outcomes]
        except BaseException:
            con.rollback()
            raise
        con.commit()
        for event in events:
            self.on_unit(event)
        return True


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def run(queue: Queue, jobs: list[str] | None = None, workers: int = 1, max_batch: int = MAX_BATCH,
        on_unit: Callable[[Event], None] | None = None) -> Summary:
    """Process the queued units of ``jobs`` (all when ``None``) with ``workers`` workers: threads on a DuckDB
    queue, processes on a PostgreSQL queue. Returns what was done; ``on_unit(event)`` is called in this
    process after each unit is committed."""
    summary = Summary()
    run_id = new_run_id()
    host = f"{socket.gethostname()}:{os.getpid()}"

    def record(event: Event) -> None:
        summary.add(event)
        if on_unit is not None:
            on_unit(event)

    if queue.postgres and workers > 1:
        _processes(queue.url, jobs, run_id, workers, max_batch, record)
    else:  # one worker too runs in a thread: Ctrl-C lets it commit its batch
        _threads(queue, jobs, run_id, host, workers, max_batch, record)
    return summary


def _threads(queue: Queue, jobs: list[str] | None, run_id: str, host: str, workers: int, max_batch: int,
             record: Callable[[Event], None]) -> None:
    from concurrent.futures import ThreadPoolExecutor

    events: threading_queue.Queue[Event] = threading_queue.Queue()
    team = [Worker(queue, jobs, run_id, f"{host}:{i}", workers, max_batch, events.put) for i in range(workers)]
    with ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(worker.run) for worker in team]
        try:
            while not all(f.done() for f in futures) or not events.empty():
                with contextlib.suppress(threading_queue.Empty):
                    record(events.get(timeout=0.1))
        except KeyboardInterrupt:  # the batches at hand are committed, then the threads stop
            for worker in team:
                worker.stop.set()
            raise
        for f in futures:
            f.result()


def _process_main(url: str, jobs: list[str] | None, run_id: str, index: int, workers: int, max_batch: int,
                  events: Any) -> None:
    """A worker process on a PostgreSQL queue."""
    queue = Queue(url)
    name = f"{socket.gethostname()}:{os.getpid()}:{index}"
    Worker(queue, jobs, run_id, name, workers, max_batch, events.put).run()


def _processes(url: str, jobs: list[str] | None, run_id: str, workers: int, max_batch: int,
               record: Callable[[Event], None]) -> None:
    import multiprocessing

    context = multiprocessing.get_context("spawn")  # no fork of a process with DuckDB's threads
    events = context.Queue()
    procs = [context.Process(target=_process_main, args=(url, jobs, run_id, i, workers, max_batch, events))
             for i in range(workers)]
    for p in procs:
        p.start()
    while any(p.is_alive() for p in procs) or not events.empty():
        with contextlib.suppress(threading_queue.Empty):
            record(events.get(timeout=0.1))
    for p in procs:
        p.join()
    bad = [p.exitcode for p in procs if p.exitcode]
    if bad:
        raise RuntimeError(f"{len(bad)} worker process(es) failed (exit {bad[0]})")
