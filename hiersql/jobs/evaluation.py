"""What a worker computes for a batch of units: its dataset loaded once into a store (:class:`Stores`), the
batch's systems added, every measure evaluated on the engine of the job file's ``[run]`` table (the store's
DuckDB by default), each unit's rows and per-instance tables; a batch that fails is evaluated again unit by
unit, so that a bad file fails its unit alone."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from ..errors import InputError
from .instances import Computed, InstanceTable, instance_tables
from .keys import LABEL_COLUMN_KEYS, content_hash
from .queue import Claimed


def message(exc: BaseException) -> str:
    """The one line the command line prints for an error (without its ``hiersql: error:`` prefix)."""
    if isinstance(exc, InputError):
        return str(exc)
    return f"internal error: {_named(exc)}"


def exit_status(exc: BaseException) -> int:
    """The exit status the command line gives an error: an input error's ``exit_status`` (2: bad input;
    :class:`UnitsFailed` 1, :class:`~hiersql.jobs.queue.QueueBusy` 75), 1 for an internal error."""
    return getattr(exc, "exit_status", 2) if isinstance(exc, InputError) else 1


def _unit_message(exc: BaseException) -> str:
    """:func:`message` for a unit's failure: an error of the measures naming ``hiersql evaluate``'s flag
    ``--metrics`` names the job file's key ``metrics`` instead (a job file has no flags)."""
    if isinstance(exc, InputError) and exc.source == "--metrics":
        return str(InputError(exc.message, "metrics", exc.line, exc.value))
    return message(exc)


def _named(exc: BaseException) -> str:
    """``Type: first line of the message``."""
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


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
        from ..inputs.store import Store
        from ..measures import resolve

        work = unit.work
        for name in ("taxonomy", "truth"):
            _check_unchanged(work, name)
        store = Store(threads=self.threads)
        store.families = set(resolve(work["metrics"]))  # the group's measures: its units share them
        try:
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
    from ..inputs.taxonomy import Taxonomy

    key = (path, digest, parent, child)
    with _taxonomies_lock:
        if key not in _taxonomies:
            if len(_taxonomies) >= 4:
                _taxonomies.pop(next(iter(_taxonomies)))
            _taxonomies[key] = Taxonomy.from_source(path, parent, child)
        return _taxonomies[key]


def _label_columns(work: dict[str, Any]) -> dict[str, str]:
    """The column keywords of a unit's label tables, as :meth:`hiersql.inputs.store.Store.load` takes them."""
    columns = work.get("columns", {})
    return {key: columns[key] for key in LABEL_COLUMN_KEYS if key in columns}


def _check_unchanged(work: dict[str, Any], name: str, cache: dict[str, str] | None = None) -> None:
    """The unit's source ``name`` (``taxonomy``, ``truth``, ``prediction``) has the content it had when the
    job was submitted (:func:`~hiersql.jobs.keys.content_hash`; ``cache`` shared by a batch's units)."""
    from ..errors import display
    from ..inputs.sources import is_reference

    source = work[name]
    role = "predictions" if name == "prediction" else name
    try:
        changed = content_hash(source, role, work["format"], work.get("columns", {}), cache) != work["hashes"][name]
    except OSError as exc:
        raise InputError(f"cannot read file ({exc.strerror})", source) from None
    if changed:
        raise InputError(f"{'table' if is_reference(source) else 'file'} changed since the job was submitted:"
                         " submit it again", display(source))


def evaluate(units: list[Claimed], stores: Stores) -> dict[str, tuple[str, Computed | str]]:
    """``{unit_id: ("done", computed) or ("failed", message)}`` for units of one group: a done unit's result
    rows and per-instance tables (:class:`~hiersql.jobs.instances.Computed`)."""
    try:
        store = stores.get(units[0])
    except Exception as exc:  # the dataset's taxonomy or truth: every unit fails with its message
        stores.close()
        return {u.unit_id: ("failed", _unit_message(exc)) for u in units}
    out: dict[str, tuple[str, Computed | str]] = {}
    ready = []
    read: dict[str, str] = {}  # a table of many systems is read once for the batch
    for unit in units:
        try:
            _check_unchanged(unit.work, "prediction", read)
            ready.append(unit)
        except InputError as exc:
            out[unit.unit_id] = ("failed", _unit_message(exc))
    if not ready:
        return out
    try:
        rows, tables = _compute(store, ready)
    except Exception as exc:
        if len(ready) == 1:
            out[ready[0].unit_id] = ("failed", _unit_message(exc))
            return out
        for unit in ready:  # find the one at fault: each unit alone
            out.update(evaluate([unit], stores))
        return out
    for unit in ready:
        mine = [r for r in rows if r.system == unit.system]
        out[unit.unit_id] = ("done", Computed(mine, tables.get(unit.system, [])))
    return out


def _compute(store: Any, units: list[Claimed]) -> tuple[list[Any], dict[str, list[InstanceTable]]]:
    """Load exactly the systems of ``units`` (after deleting every other) and evaluate them: the result rows,
    and each system's per-instance tables (:func:`~hiersql.jobs.instances.instance_tables`)."""
    from ..measures import compute
    from ..options import make_options

    work = units[0].work
    with store.transaction():
        store.con.execute("DELETE FROM predictions")
        store.con.execute("DELETE FROM systems")
    # an empty file is a system that predicted nothing: evaluated, with the store's warning naming the file
    sources = [(u.system, u.work["prediction"]) for u in units]
    store.add_predictions_many(sources, work["format"], unknown=work["unknown"], **_label_columns(work))
    if store.systems() != sorted(u.system for u in units):  # never a system that is not this batch's
        raise RuntimeError(f"store holds systems {store.systems()}, expected {[u.system for u in units]}")
    options = make_options(**work["options"])
    with _engine(work.get("run"), store) as engine:
        engine.reuse_stages()  # the per-instance tables read the stages of the evaluation where they can
        rows = compute(engine, work["metrics"], options)
        return rows, instance_tables(engine, rows, options)


@contextlib.contextmanager
def _engine(run: dict[str, Any] | None, store: Any) -> Iterator[Any]:
    """The engine of the job file's ``[run]`` table (:func:`hiersql.engines.open_engine`) holding a copy of the
    batch's store, closed on leaving; the store's own DuckDB without one."""
    from ..engines import DuckDBEngine, open_engine
    from ..options import RunOptions

    opened = open_engine(RunOptions(**run), rows=store.size()) if run else None
    try:
        if opened is not None:
            opened.copy_store(store)
        yield opened or DuckDBEngine(store)
    finally:
        if opened is not None:
            opened.close()
