"""The DuckDB store: schema, taxonomy tables, truth and prediction labels.

A :class:`Store` owns one DuckDB connection (in memory by default, a file with ``db=``). It creates the schema
of ``schema.sql``, loads a :class:`~hiersql.inputs.taxonomy.Taxonomy` with its closure, and reads label files into
``truth(instance_id, label, rank)`` and ``predictions(system, instance_id, label, rank, score)``.

Label formats (SPEC §1, §10): ``long`` (``instance_id<TAB>label[<TAB>score]`` per row, or CSV with a header
``instance_id,label[,score]``), ``lines`` (HEMKit: one line per instance, whitespace-separated labels, the line
number is the instance id), ``germeval-a`` and ``germeval-b`` (the ``subtask_a``/``subtask_b`` sections of a
GermEval 2019 file), ``wide`` (a CSV/TSV 0/1 indicator matrix with a header: ``instance_id`` then one column per
label), a mapping of columns (``{"instance_id": [...], "label": [...]}``, optionally ``"score"``; no pandas
needed), or a table (long layout, read by :mod:`hiersql.inputs.sources`): a Parquet or CSV file, a DuckDB or
PostgreSQL table (``duckdb:PATH::table``, ``postgresql://…::schema.table``), a query (``sql:SELECT …``), a
pandas DataFrame, an Arrow table or a DuckDB relation, with the user's column names (``instance_col=``,
``label_col=``, ``score_col=``, ``system_col=``, ``rank_col=``). A predictions table with a system column
(``system_col``, or a column named ``system``) holds one system per distinct value. A label's ``rank`` is its
position within its instance by the values of the rank column (``rank_col``), else by the score (descending),
else as read (a file, a DataFrame), else by name (:data:`hiersql.inputs.tables.RANK_ORDER`; a SQL table, a query
or Parquet without a rank or score column gets one warning).

Rules: labels are sets (duplicates collapse, with a :class:`~hiersql.errors.DataWarning` giving the count); a
label not in the taxonomy is an :class:`~hiersql.errors.InputError` naming it, its file and line
(``unknown="ignore"`` drops such labels and warns with the count); a predicted instance absent from the truth is
an error (``no_truth="ignore"`` drops it with a count); an instance of the truth with no prediction has an empty
predicted set.
"""

from __future__ import annotations

import copy
import functools
import queue
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import sqlfiles
from ..errors import InputError
from ..options import resource_errors
from . import readers, rules, staging
from .closure import fill_taxonomy
from .readers import LabelSource, prediction_items
from .staging import Staged, first_row, temp_table, warn_data
from .tables import Columns
from .taxonomy import Taxonomy, as_taxonomy, read_taxonomy

if TYPE_CHECKING:
    import duckdb

# The steps of Store.load, as its on_step hook names them.
LOAD_STEPS = ("reading taxonomy, closure and labels", "checking truth", "checking predictions")
# what the one-by-one calls (load_taxonomy, add_truth, add_predictions) name in an out-of-memory or full-disk error
ADD_STEPS = {"taxonomy": "reading taxonomy and closure", "truth": "reading and checking truth",
             "predictions": "reading and checking predictions"}


# DuckDB's optimizers off on the store's own connections: the partial aggregate pushdown groups a whole table of unique
# pairs (the class distances of the severity family) below a join, on an estimate of its groups a thousandth of theirs
OPTIMIZERS_OFF = "partial_aggregate_pushdown"


class Store:
    """A DuckDB database holding one taxonomy, one truth and any number of systems' predictions.

    Parameters
    ----------
    db:
        Path of a DuckDB file, or ``None`` for an in-memory database.
    con:
        An existing DuckDB connection to use instead (``db`` is then ignored).
    memory_limit:
        DuckDB's memory limit (``"3GB"``); larger intermediate results spill to disk.
    threads:
        DuckDB's threads (default: one per core).
    writes:
        The tables of hiersql's schema the caller will write (default: all). A table of the file or connection
        with one of those names and other columns is the user's: :class:`~hiersql.errors.InputError` naming it,
        before anything is made or written.
    """

    def __init__(
        self, db: str | Path | None = None, con: duckdb.DuckDBPyConnection | None = None,
        memory_limit: str | None = None, writes: Iterable[str] | None = None, threads: int | None = None,
    ) -> None:
        import duckdb

        self.db = str(db) if db is not None else None
        if con is None and self.db is not None and self.db != ":memory:":
            from .dbfile import check_file

            check_file(self.db, "db")  # a URL, a folder, a file that is not DuckDB's: one line naming it
        self.con = con if con is not None else duckdb.connect(self.db or ":memory:")
        if con is not None or self.db is not None:  # a database that may hold tables of its own
            _check_no_foreign_tables(self.con, self.db or "con", writes)
        if con is None or self.db is not None:  # a connection of ours (a caller's own keeps its settings):
            self.con.execute("SET enable_progress_bar = false")  # DuckDB's bar would write into the output
            self.con.execute(f"SET disabled_optimizers = '{OPTIMIZERS_OFF}'")
        # the empty tables first: the limit is for reading and computing (a tiny one fails in a named step)
        self.con.execute(sqlfiles.queries("schema")["schema"])
        if memory_limit:  # DuckDB spills to its temp directory beyond it
            try:
                self.con.execute("SET memory_limit = $limit", {"limit": memory_limit})
            except duckdb.Error as exc:
                raise InputError(f"invalid memory limit ({str(exc).splitlines()[0]})", "--memory-limit",
                                 value=memory_limit) from None
        if threads:
            self.con.execute("SET threads = $threads", {"threads": int(threads)})
        self.taxonomy: Taxonomy | None = None
        # the measure families (or SQL files) the run computes, when known before the labels are read: a warning
        # of what only some families read (labels ranked by name) is given when one of them runs (None: every time)
        self.families: Collection[str] | None = None

    def cursor(self) -> Store:
        """A store on a second connection (a DuckDB cursor) to the same database: the same tables, temp tables
        of its own; for queries in another thread at the same time."""
        other = copy.copy(self)
        other.con = self.con.cursor()
        return other

    # ------------------------------------------------------------------ taxonomy
    def load_taxonomy(self, taxonomy: Taxonomy | Any, max_depth: int | None = None, closure_view: bool = False
                      ) -> None:
        """Replace the taxonomy tables (edges, nodes, closure) with ``taxonomy`` (a :class:`Taxonomy`, or what
        :func:`~hiersql.inputs.taxonomy.as_taxonomy` reads: a path, a table reference, edges, ...); the closure is
        computed by
        ``closure.sql`` inside DuckDB, only up to ``max_depth`` edges when given (a partial closure, for
        measures that never look further, such as HEMKit mode). With ``closure_view``, ``closure`` (on names)
        is a view of ``node_closure`` (on positions) that joins the names when it is read, instead of a table
        filled now: cheaper for a caller that reads only ``node_closure`` (the DuckDB variants of the set-based
        lists and of the LCA queries, as HEMKit mode does); every query still reads the same rows."""
        taxonomy = as_taxonomy(taxonomy)
        with resource_errors(ADD_STEPS["taxonomy"]), self.transaction():
            fill_taxonomy(self.con, taxonomy, max_depth, closure_view)
        self.taxonomy = taxonomy

    def _require_taxonomy(self) -> Taxonomy:
        if self.taxonomy is None:
            raise RuntimeError("load a taxonomy first (Store.load_taxonomy)")
        return self.taxonomy

    # ------------------------------------------------------------------ labels
    def add_truth(
        self, source: LabelSource, format: str = "long", *, unknown: str = "error", name: str | None = None,
        instance_col: str | None = None, label_col: str | None = None, rank_col: str | None = None,
    ) -> None:
        """Replace the truth with the labels read from ``source`` (see the module docstring for formats;
        ``*_col``: the user's column names of a table source; a score or system column there is not read, a
        rank column named ``rank_col`` is when the table has one). DuckDB out of memory, or spilling onto a
        full disk, raises :class:`~hiersql.options.OutOfMemory` or :class:`~hiersql.options.DiskFull` naming
        the step (:data:`ADD_STEPS`), here and in :meth:`load_taxonomy` and :meth:`add_predictions`."""
        self._require_taxonomy()
        columns = Columns(instance=instance_col, label=label_col, rank=rank_col)
        with resource_errors(ADD_STEPS["truth"]):
            staged = readers.stage(self.con, [(None, source, name)], format, columns, predictions=False)
            self._commit_truth(staged, unknown)
        staging.warn_ranked_by_name(staged.by_name, self.families)

    def _commit_truth(self, staged: Staged, unknown: str) -> None:
        """Check the staged truth and replace ``truth`` and ``instances`` with it, in one transaction."""
        if not first_row(self.con, "SELECT count(*) FROM _incoming_instances")[0]:  # nothing to evaluate
            raise InputError(rules.EMPTY_TRUTH, staged.wheres[0])
        with self.transaction():
            staging.check_staged(self.con, staged, unknown)
            self.con.execute("DELETE FROM truth")
            self.con.execute("DELETE FROM instances")
            self.con.execute("INSERT INTO instances SELECT DISTINCT instance_id FROM _incoming_instances")
            self.con.execute(f"INSERT INTO truth SELECT instance_id, label, rank FROM ({staging.ranked(self.con)})")
        staging.drop_staged(self.con)

    def add_predictions(
        self,
        system: str | None,
        source: LabelSource,
        format: str = "long",
        *,
        unknown: str = "error",
        no_truth: str = "error",
        name: str | None = None,
        instance_col: str | None = None,
        label_col: str | None = None,
        score_col: str | None = None,
        system_col: str | None = None,
        rank_col: str | None = None,
    ) -> None:
        """Replace the predictions of ``system`` with the labels read from ``source`` (the one-system case of
        :meth:`add_predictions_many`; ``name`` names a source that is not a file in messages). A table with a
        system column (``system_col``, or a column named ``system``) gives one system per value: then
        ``system`` is ``None``."""
        columns = Columns(instance=instance_col, label=label_col, score=score_col, system=system_col, rank=rank_col)
        (_, _, named), = prediction_items([(system, source)])  # SYSTEM=<DataFrame>, as add_predictions_many says
        self._load_predictions([(system, source, name or named)], format, unknown, no_truth, columns)

    def add_predictions_many(
        self,
        predictions: Mapping[str, LabelSource] | Iterable[tuple[str, LabelSource]],
        format: str = "long",
        *,
        unknown: str = "error",
        no_truth: str = "error",
        instance_col: str | None = None,
        label_col: str | None = None,
        score_col: str | None = None,
        system_col: str | None = None,
        rank_col: str | None = None,
    ) -> None:
        """Replace the predictions of many systems at once: ``{system: source}`` (or ``(system, source)``
        pairs), every source in ``format``. A table with a system column holds one system per value (give it
        the system ``None``); a file with none and the system ``None`` is named by its stem.

        All text files are read by one DuckDB ``read_csv`` over the file list, and every reader query and
        check runs once for all of them, which is several times faster than one :meth:`add_predictions` per
        file. The result is the same as loading the sources one by one, except that it is all or nothing:
        any error (naming its file, line and value, as :meth:`add_predictions` does) loads no system. A
        source that is not a file is named ``SYSTEM=<DataFrame>`` (``<relation>``, ``<label sets>``) in
        messages. ``unknown="ignore"`` and ``no_truth="ignore"`` warn once per file, with that file's count.

        Raises
        ------
        InputError
            A system named twice, or any bad input of :meth:`add_predictions`.
        """
        columns = Columns(instance=instance_col, label=label_col, score=score_col, system=system_col, rank=rank_col)
        self._load_predictions(prediction_items(predictions), format, unknown, no_truth, columns)

    def load(
        self,
        taxonomy: Taxonomy | str | Path | Callable[[], Taxonomy],
        truth: LabelSource,
        predictions: Mapping[str, LabelSource] | Iterable[tuple[str, LabelSource]],
        format: str = "long",
        *,
        unknown: str = "error",
        no_truth: str = "error",
        max_depth: int | None = None,
        closure_view: bool = False,
        on_step: Callable[[str], object] | None = None,
        instance_col: str | None = None,
        label_col: str | None = None,
        score_col: str | None = None,
        system_col: str | None = None,
        rank_col: str | None = None,
    ) -> None:
        """:meth:`load_taxonomy`, :meth:`add_truth` and :meth:`add_predictions_many` in one call, with the same
        result and the same errors; the taxonomy may be a file (:meth:`Taxonomy.from_file`), a table
        reference (:meth:`Taxonomy.from_table`) or a function returning one (called once). The ``*_col``
        column names apply to the truth and the predictions (``score_col`` and ``system_col`` to the predictions,
``rank_col`` to the truth when its table has that column).

        The taxonomy is read, validated and loaded with its closure on a second thread and a second
        connection (a cursor) while DuckDB reads the label sources on this one, which needs no taxonomy (its
        checks against the taxonomy come after): the two overlap on two cores. The taxonomy's transaction
        commits only once the label sources have been read, so that a bad label file leaves the store as it
        was. A bad taxonomy is reported before bad labels, as in the one-by-one calls. ``max_depth`` and
        ``closure_view`` as in :meth:`load_taxonomy`. ``on_step(name)`` is called as each of its
        :data:`LOAD_STEPS` begins (a progress bar's hook). DuckDB out of memory, or spilling onto a full disk, in
        a step raises :class:`~hiersql.options.OutOfMemory` or :class:`~hiersql.options.DiskFull` naming it."""
        from concurrent.futures import ThreadPoolExecutor

        step = on_step or (lambda _: None)
        items = prediction_items(predictions)
        columns = Columns(instance=instance_col, label=label_col, score=score_col, system=system_col, rank=rank_col)
        staged: InputError | None = None
        labels_read: queue.Queue[bool] = queue.Queue(1)  # whether the label sources were read: commit the taxonomy

        def load_taxonomy() -> Taxonomy:
            tax = read_taxonomy(taxonomy)
            con = self.con.cursor()
            try:
                con.execute("BEGIN TRANSACTION")
                try:
                    fill_taxonomy(con, tax, max_depth, closure_view)
                    commit = labels_read.get()
                except BaseException:
                    con.execute("ROLLBACK")
                    raise
                con.execute("COMMIT" if commit else "ROLLBACK")
            finally:
                con.close()
            return tax

        step(LOAD_STEPS[0])
        with resource_errors(LOAD_STEPS[0]), ThreadPoolExecutor(1) as pool:
            loaded = pool.submit(load_taxonomy)
            read = False
            try:
                truth_staged = readers.stage(self.con, [(None, truth, None)], format, columns, predictions=False)
                if items:
                    staging.set_aside(self.con, "_truth")
                    pred_staged = readers.stage(self.con, items, format, columns, predictions=True)
                    staging.set_aside(self.con, "_predictions")
                    staging.set_aside(self.con, "_truth", back=True)
                read = True
            except InputError as exc:  # raised after the taxonomy's own error, if any
                staged = exc
            finally:
                labels_read.put(read)
            tax = loaded.result()  # its error first
        if staged is not None:
            raise staged
        self.taxonomy = tax
        step(LOAD_STEPS[1])
        with resource_errors(LOAD_STEPS[1]):
            self._commit_truth(truth_staged, unknown)
        if items:
            step(LOAD_STEPS[2])
            staging.set_aside(self.con, "_predictions", back=True)
            with resource_errors(LOAD_STEPS[2]):
                self._commit_predictions(pred_staged, unknown, no_truth)
        staging.warn_ranked_by_name(truth_staged.by_name + (pred_staged.by_name if items else []), self.families)

    def systems(self) -> list[str]:
        return [r[0] for r in self.con.execute("SELECT system FROM systems ORDER BY system").fetchall()]

    def size(self) -> int:
        """The rows of ``truth`` and ``predictions`` together."""
        return sum(first_row(self.con, "SELECT (SELECT count(*) FROM truth), (SELECT count(*) FROM predictions)"))

    def _load_predictions(self, items: list[tuple[str | None, LabelSource, str | None]], format: str,
                          unknown: str, no_truth: str, columns: Columns) -> None:
        """Stage, check and insert ``(system, source, name)`` items in one transaction."""
        self._require_taxonomy()
        if not first_row(self.con, "SELECT count(*) FROM instances")[0]:
            raise RuntimeError("add the truth before predictions (Store.add_truth)")
        if not items:
            return
        with resource_errors(ADD_STEPS["predictions"]):
            staged = readers.stage(self.con, items, format, columns, predictions=True)
            self._commit_predictions(staged, unknown, no_truth)
        staging.warn_ranked_by_name(staged.by_name, self.families)

    def _commit_predictions(self, staged: Staged, unknown: str, no_truth: str) -> None:
        """Check the staged predictions and replace those systems' rows, in one transaction."""
        with self.transaction():
            staging.check_staged(self.con, staged, unknown)
            wheres = staged.wheres
            staging.check_no_truth(self.con, wheres, no_truth)
            for (src,) in self.con.execute(
                "SELECT src FROM (SELECT unnest(range($n)) AS src) ANTI JOIN _incoming USING (src) ORDER BY src",
                {"n": len(staged.systems)},
            ).fetchall():
                warn_data(f"{wheres[src]}: no predicted label; evaluated as a system that predicted nothing for every"
                      " instance")
            temp_table(self.con, "_incoming_systems", "SELECT unnest($s) AS system, unnest($w) AS source,"
                       " generate_subscripts($s, 1) - 1 AS src", {"s": staged.systems, "w": list(map(str, wheres))})
            for table in ("predictions", "systems"):
                self.con.execute(f"DELETE FROM {table} WHERE system IN (SELECT system FROM _incoming_systems)")
            self.con.execute("INSERT INTO systems SELECT system, source FROM _incoming_systems ORDER BY src")
            self.con.execute(
                "INSERT INTO predictions SELECT s.system, i.instance_id, i.label, i.rank, i.score"
                f" FROM ({staging.ranked(self.con)}) i JOIN _incoming_systems s ON s.src = i.src"
            )
        staging.drop_staged(self.con)

    # ------------------------------------------------------------------ queries
    def transaction(self) -> _Transaction:
        """``with store.transaction(): ...`` commits on success and rolls back on any error."""
        return _Transaction(self.con)

    def close(self) -> None:
        self.con.close()


@functools.cache
def _schema_tables() -> dict[str, tuple[list[str], str]]:
    """Each table of ``schema.sql``: its columns in order and its ``CREATE TABLE`` statement (from the schema
    made in a scratch database)."""
    import duckdb

    with duckdb.connect() as scratch:
        scratch.execute(sqlfiles.queries("schema")["schema"])
        ddl = dict(scratch.execute("SELECT table_name, sql FROM duckdb_tables()").fetchall())
        return {table: (columns, ddl[table]) for table, columns in duckdb_tables(scratch)}


def _schema_columns() -> dict[str, list[str]]:
    """The columns of each table of ``schema.sql``, in order."""
    return {table: columns for table, (columns, _) in _schema_tables().items()}


def make_tables(con: duckdb.DuckDBPyConnection, tables: Iterable[str], where: str) -> None:
    """Only ``tables`` of ``schema.sql`` in ``con``, a database of the user's (``install-macros --taxonomy``
    makes the taxonomy's and no other): those missing are made as the schema declares them; one of those names
    with other columns is the user's, an :class:`~hiersql.errors.InputError` naming ``where``."""
    schema = _schema_tables()
    wanted = sorted(set(tables))
    check_own_tables(duckdb_tables(con), {table: [schema[table][0]] for table in wanted}, where)
    for table in wanted:
        con.execute(schema[table][1].replace("CREATE TABLE ", "CREATE TABLE IF NOT EXISTS ", 1))


def duckdb_tables(con: Any) -> list[tuple[str, list[str]]]:
    """The tables of a DuckDB database (its current schema) with their columns in order."""
    return con.execute(
        "SELECT table_name, list(column_name ORDER BY ordinal_position) FROM information_schema.columns"
        " WHERE table_catalog = current_database() AND table_schema = current_schema()"
        " GROUP BY table_name ORDER BY table_name"
    ).fetchall()


def _check_no_foreign_tables(con: duckdb.DuckDBPyConnection, where: str, writes: Iterable[str] | None) -> None:
    """A table of the database that has the name of one of hiersql's tables to be written (``writes``, default
    all: ``truth``, ``predictions``, ``results``, ...) but other columns is the user's: an error naming it, before
    hiersql makes or writes any table (its rows would be deleted and replaced). So is one with hiersql's name
    and columns in a database that lacks some of hiersql's tables: hiersql makes all of them at once (a user's
    ``instances(instance_id)`` or ``edges(parent, child, weight)`` has hiersql's columns by chance). A job queue
    of ``hiersql jobs`` (a ``jobs`` table beside ``results``) is refused as such: its results are the queue's."""
    expected = _schema_columns()
    wanted = set(expected if writes is None else writes)
    found = duckdb_tables(con)
    names = {table.lower(): table for table, _ in found}
    if "results" in wanted and {"jobs", "results"} <= set(names):
        raise InputError("is a job queue of hiersql jobs (its results are written by its units): give hiersql a"
                         " database of its own", where, value="jobs")
    check_own_tables(found, {table: [columns] for table, columns in expected.items() if table in wanted}, where)
    missing = [table for table in expected if table not in names]
    mine = [names[table] for table in expected if table in wanted and table in names]
    if mine and missing:
        raise InputError(f"has a table {mine[0]!r} of one of hiersql's names but not hiersql's other tables (no"
                         f" {missing[0]!r}), so not made by hiersql: give hiersql a database of its own", where,
                         value=mine[0])


def check_own_tables(found: Iterable[tuple[str, Sequence[str]]], forms: Mapping[str, Sequence[Sequence[str]]],
                     where: str) -> None:
    """Refuse a table of the user's in a database given to hiersql: one of ``found`` (a database's ``(name,
    columns)``) that has the name of one of hiersql's tables (``forms``: the lists of columns hiersql takes for
    it, its own first) but other columns. An :class:`~hiersql.errors.InputError` naming ``where`` (the
    database) and the table, for the caller to raise before it makes or writes any table: hiersql would
    otherwise replace, add to or alter the user's rows, or fail half way. The store's check and the job
    queue's (:mod:`hiersql.jobs.queue`). A name is compared in lower case, as DuckDB compares names (a table
    ``Results`` is the one ``CREATE TABLE IF NOT EXISTS results`` finds; PostgreSQL's ``found`` are the exact
    names of ``forms``)."""
    for table, columns in found:
        accepted = forms.get(table.lower())
        if accepted is not None and list(columns) not in [list(c) for c in accepted]:
            raise InputError(f"has a table {table!r} that is not hiersql's (its columns {', '.join(columns) or 'none'};"
                             f" hiersql's {', '.join(accepted[0])}): give hiersql a database of its own", where,
                             value=table)


class _Transaction:
    def __init__(self, con: Any) -> None:
        self.con = con

    def __enter__(self) -> None:
        self.con.execute("BEGIN TRANSACTION")

    def __exit__(self, exc_type: object, *_: object) -> None:
        self.con.execute("ROLLBACK" if exc_type else "COMMIT")
