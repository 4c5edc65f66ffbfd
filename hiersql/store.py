"""The DuckDB store: schema, taxonomy tables, truth and prediction labels.

A :class:`Store` owns one DuckDB connection (in memory by default, a file with ``db=``). It creates the schema
of ``sql/schema.sql``, loads a :class:`~hiersql.taxonomy.Taxonomy` with its closure, and reads label files into
``truth(instance_id, label, rank)`` and ``predictions(system, instance_id, label, rank, score)``.

Label formats (SPEC §1, §10): ``long`` (``instance_id<TAB>label[<TAB>score]`` per row, or CSV with a header
``instance_id,label[,score]``), ``lines`` (HEMKit: one line per instance, whitespace-separated labels, the line
number is the instance id), ``germeval-a`` and ``germeval-b`` (the ``subtask_a``/``subtask_b`` sections of a
GermEval 2019 file), ``wide`` (a CSV/TSV 0/1 indicator matrix with a header: ``instance_id`` then one column per
label), a mapping of columns (``{"instance_id": [...], "label": [...]}``, optionally ``"score"``; no pandas
needed), or a table (long layout, read by :mod:`hiersql.sources`): a Parquet or CSV file, a DuckDB or
PostgreSQL table (``duckdb:PATH::table``, ``postgresql://…::schema.table``), a query (``sql:SELECT …``), a
pandas DataFrame, an Arrow table or a DuckDB relation, with the user's column names (``instance_col=``,
``label_col=``, ``score_col=``, ``system_col=``). A predictions table with a system column (``system_col``, or a
column named ``system``) holds one system per distinct value.

Rules: labels are sets (duplicates collapse, with a :class:`~hiersql.errors.DataWarning` giving the count); a
label not in the taxonomy is an :class:`~hiersql.errors.InputError` naming it, its file and line
(``unknown="ignore"`` drops such labels and warns with the count); a predicted instance absent from the truth is
an error (``no_truth="ignore"`` drops it with a count); an instance of the truth with no prediction has an empty
predicted set.
"""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from . import sources, sqlfiles
from .errors import DataWarning, InputError
from .sources import Columns, locate
from .taxonomy import Taxonomy

if TYPE_CHECKING:
    from concurrent.futures import Future

    import duckdb

LABEL_FORMATS = ("long", "lines", "germeval-a", "germeval-b", "wide")
# SQL files whose intermediate queries nobody reads after Store.run: run as one composed query, which lets
# DuckDB pipeline them instead of writing each to a temp table (set-based measures on a 325,000-node DAG with
# 450,000 instances: 52 instead of 77-86 CPU-s).
COMPOSED = frozenset({"set_based"})
# closure_paths is taken while the path count stays within this many times a lower bound of the closure size
# (MeSH: 2.3, the 325,000-node benchmark DAG: 4.0); beyond it the deduplicating walk is cheaper or safer.
PATHS_PER_CLOSURE_ROW = 8
LabelSource = Any  # path, table reference, DataFrame, Arrow table, DuckDB relation, columns or label sets
STAGED = ("_incoming", "_incoming_instances")  # the staging tables every reader fills
# The steps of Store.load, as its on_step hook names them.
LOAD_STEPS = ("reading taxonomy, closure and labels", "checking truth", "checking predictions")
# Every physical line of the files $paths as one VARCHAR column (no delimiter, quote or escape can occur).
# Lines up to 1 GiB (DuckDB's default maximum is 2 MB; a longer line is reported as such, sources.read_error).
RAW_READ = ("read_csv($paths, columns={'raw': 'VARCHAR'}, delim=chr(31), quote='', escape='', header=false,"
            " auto_detect=false, filename=true, max_line_size=1073741824)")


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
    CPython's default switch interval of 5 ms each of these waits up to 5 ms behind the Python thread: a
    query beside a busy Python loop runs 12 times slower (``benchmarks/duckdb_gil.py``: 1.7 s instead of
    0.13 s). With 50 µs it takes 0.16 s and the Python loop loses about 5 %. (Two busy Python threads only
    switch more often for nothing: keep it to DuckDB beside Python.)"""
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


class Staged(NamedTuple):
    """What :meth:`Store._stage` read: the name of each source in messages, ``(src, count)`` of the sources
    whose duplicate ``(instance_id, label)`` rows were collapsed, and the system of each source
    (predictions)."""

    wheres: list[str]
    duplicates: list[tuple[int, int]]
    systems: list[str | None]


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
    """

    def __init__(
        self, db: str | Path | None = None, con: duckdb.DuckDBPyConnection | None = None,
        memory_limit: str | None = None,
    ) -> None:
        import duckdb

        self.db = str(db) if db is not None else None
        self.con = con if con is not None else duckdb.connect(self.db or ":memory:")
        # the empty tables first: the limit is for reading and computing (a tiny one fails in a named step)
        self.con.execute(sqlfiles.queries("schema")["schema"])
        if memory_limit:  # DuckDB spills to its temp directory beyond it
            try:
                self.con.execute(f"SET memory_limit = '{memory_limit.replace(chr(39), '')}'")
            except duckdb.Error as exc:
                raise InputError(f"invalid memory limit ({str(exc).splitlines()[0]})", "--memory-limit",
                                 value=memory_limit) from None
        self.taxonomy: Taxonomy | None = None
        # whether closure is a view (after a load with closure_view=True, possibly of an earlier session of a
        # file); looked up when a taxonomy is loaded, unless the database is new
        self._closure_is_view: bool | None = False if db is None and con is None else None

    def cursor(self) -> Store:
        """A store on a second connection (a DuckDB cursor) to the same database: the same tables, temp tables
        of its own; for queries in another thread at the same time."""
        other = object.__new__(Store)
        other.db, other.con, other.taxonomy = self.db, self.con.cursor(), self.taxonomy
        other._closure_is_view = self._closure_is_view
        return other

    def _closure_view_now(self) -> bool:
        if self._closure_is_view is None:
            self._closure_is_view = bool(self._one(
                "SELECT count(*) FROM duckdb_views() WHERE view_name = 'closure' AND schema_name = 'main'"
                " AND database_name = current_database()")[0])
        return self._closure_is_view

    # ------------------------------------------------------------------ taxonomy
    def load_taxonomy(self, taxonomy: Taxonomy, max_depth: int | None = None, closure_view: bool = False) -> None:
        """Replace the taxonomy tables (edges, nodes, closure) with ``taxonomy``; the closure is computed by
        ``sql/closure.sql`` inside DuckDB, only up to ``max_depth`` edges when given (a partial closure, for
        measures that never look further, such as HEMKit mode). With ``closure_view``, ``closure`` (on names)
        is a view of ``node_closure`` (on positions) that joins the names when it is read, instead of a table
        filled now: cheaper for a caller that reads only ``node_closure`` (the DuckDB variants of the set-based
        lists and of the LCA queries, as HEMKit mode does); every query still reads the same rows."""
        with self.transaction():
            view = _fill_taxonomy(self.con, taxonomy, max_depth, closure_view, self._closure_view_now())
        self.taxonomy, self._closure_is_view = taxonomy, view

    def _require_taxonomy(self) -> Taxonomy:
        if self.taxonomy is None:
            raise RuntimeError("load a taxonomy first (Store.load_taxonomy)")
        return self.taxonomy

    # ------------------------------------------------------------------ labels
    def add_truth(
        self, source: LabelSource, format: str = "long", *, unknown: str = "error", name: str | None = None,
        instance_col: str | None = None, label_col: str | None = None, score_col: str | None = None,
    ) -> None:
        """Replace the truth with the labels read from ``source`` (see the module docstring for formats;
        ``*_col``: the user's column names of a table source)."""
        self._require_taxonomy()
        columns = Columns(instance=instance_col, label=label_col, score=score_col)
        self._commit_truth(self._stage([(None, source, name)], format, columns, predictions=False), unknown)

    def _commit_truth(self, staged: Staged, unknown: str) -> None:
        """Check the staged truth and replace ``truth`` and ``instances`` with it, in one transaction."""
        if not self._one("SELECT count(*) FROM _incoming_instances")[0]:  # nothing to evaluate: the truth's fault
            raise InputError("truth has no instance (an empty file, or no line of the label format, such as"
                             " a GermEval file without the subtask's section)",
                             staged.wheres[0])
        with self.transaction():
            self._check_staged(staged, unknown)
            self.con.execute("DELETE FROM truth")
            self.con.execute("DELETE FROM instances")
            self.con.execute("INSERT INTO instances SELECT DISTINCT instance_id FROM _incoming_instances")
            self.con.execute("INSERT INTO truth SELECT instance_id, label, rank FROM _incoming")

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
    ) -> None:
        """Replace the predictions of ``system`` with the labels read from ``source`` (the one-system case of
        :meth:`add_predictions_many`; ``name`` names a source that is not a file in messages). A table with a
        system column (``system_col``, or a column named ``system``) gives one system per value: then
        ``system`` is ``None``."""
        columns = Columns(instance=instance_col, label=label_col, score=score_col, system=system_col)
        self._load_predictions([(system, source, name)], format, unknown, no_truth, columns)

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
        columns = Columns(instance=instance_col, label=label_col, score=score_col, system=system_col)
        self._load_predictions(_prediction_items(predictions), format, unknown, no_truth, columns)

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
    ) -> None:
        """:meth:`load_taxonomy`, :meth:`add_truth` and :meth:`add_predictions_many` in one call, with the same
        result and the same errors; the taxonomy may be a file (:meth:`Taxonomy.from_file`), a table
        reference (:meth:`Taxonomy.from_table`) or a function returning one (called once). The ``*_col``
        column names apply to the truth and the predictions (``system_col`` to the predictions).

        The taxonomy is read, validated and loaded with its closure on a second thread and a second
        connection (a cursor) while DuckDB reads the label sources on this one, which needs no taxonomy (its
        checks against the taxonomy come after): the two overlap on two cores. The taxonomy's transaction
        commits only once the label sources have been read, so that a bad label file leaves the store as it
        was. A bad taxonomy is reported before bad labels, as in the one-by-one calls. ``max_depth`` and
        ``closure_view`` as in :meth:`load_taxonomy`. ``on_step(name)`` is called as each of its
        :data:`LOAD_STEPS` begins (a progress bar's hook)."""
        from concurrent.futures import ThreadPoolExecutor

        step = on_step or (lambda _: None)
        items = _prediction_items(predictions)
        columns = Columns(instance=instance_col, label=label_col, score=score_col, system=system_col)
        staged: InputError | None = None
        read, labels_read = threading.Event(), []  # set once the label sources are read or failed; [True] if read
        view, is_view = [], self._closure_view_now()  # whether closure is a view once loaded, and before

        def load_taxonomy() -> Taxonomy:
            tax = taxonomy if isinstance(taxonomy, Taxonomy) else (
                taxonomy() if callable(taxonomy) else Taxonomy.from_table(taxonomy)
                if sources.is_reference(taxonomy) else Taxonomy.from_file(taxonomy))
            con = self.con.cursor()
            try:
                con.execute("BEGIN TRANSACTION")
                try:
                    view.append(_fill_taxonomy(con, tax, max_depth, closure_view, is_view))
                    read.wait()
                except BaseException:
                    con.execute("ROLLBACK")
                    raise
                con.execute("COMMIT" if labels_read else "ROLLBACK")
            finally:
                con.close()
            return tax

        step(LOAD_STEPS[0])
        with ThreadPoolExecutor(1) as pool:
            loaded = pool.submit(load_taxonomy)
            try:
                truth_staged = self._stage([(None, truth, None)], format, columns, predictions=False)
                if items:
                    self._rename_staged("_truth")
                    pred_staged = self._stage(items, format, columns, predictions=True)
                    self._rename_staged("_predictions")
                    self._rename_staged("_truth", back=True)
                labels_read.append(True)
            except InputError as exc:  # raised after the taxonomy's own error, if any
                staged = exc
            finally:
                read.set()
            tax = loaded.result()  # its error first
        if staged is not None:
            raise staged
        self.taxonomy, self._closure_is_view = tax, view[0]
        step(LOAD_STEPS[1])
        self._commit_truth(truth_staged, unknown)
        if items:
            step(LOAD_STEPS[2])
            self._rename_staged("_predictions", back=True)
            self._commit_predictions(pred_staged, unknown, no_truth)

    def systems(self) -> list[str]:
        return [r[0] for r in self.con.execute("SELECT system FROM systems ORDER BY system").fetchall()]

    def _load_predictions(self, items: list[tuple[str | None, LabelSource, str | None]], format: str,
                          unknown: str, no_truth: str, columns: Columns) -> None:
        """Stage, check and insert ``(system, source, name)`` items in one transaction."""
        self._require_taxonomy()
        if not self._one("SELECT count(*) FROM instances")[0]:
            raise RuntimeError("add the truth before predictions (Store.add_truth)")
        if not items:
            return
        self._commit_predictions(self._stage(items, format, columns, predictions=True), unknown, no_truth)

    def _commit_predictions(self, staged: Staged, unknown: str, no_truth: str) -> None:
        """Check the staged predictions and replace those systems' rows, in one transaction."""
        with self.transaction():
            self._check_staged(staged, unknown)
            wheres = staged.wheres
            self._check_no_truth(wheres, no_truth)
            for (src,) in self.con.execute(
                "SELECT src FROM (SELECT unnest(range($n)) AS src) ANTI JOIN _incoming USING (src) ORDER BY src",
                {"n": len(staged.systems)},
            ).fetchall():
                _warn(f"{wheres[src]}: no predicted label; evaluated as a system that predicted nothing for every"
                      " instance")
            self._temp("_incoming_systems", "SELECT unnest($s) AS system, unnest($w) AS source,"
                       " generate_subscripts($s, 1) - 1 AS src", {"s": staged.systems, "w": list(map(str, wheres))})
            for table in ("predictions", "systems"):
                self.con.execute(f"DELETE FROM {table} WHERE system IN (SELECT system FROM _incoming_systems)")
            self.con.execute("INSERT INTO systems SELECT system, source FROM _incoming_systems ORDER BY src")
            self.con.execute(
                "INSERT INTO predictions SELECT s.system, i.instance_id, i.label, i.rank, i.score"
                " FROM _incoming i JOIN _incoming_systems s ON s.src = i.src"
            )

    # ------------------------------------------------------------------ staging
    def _stage(self, items: list[tuple[str | None, LabelSource, str | None]], format: str, columns: Columns,
               predictions: bool) -> Staged:
        """Read every ``(system, source, name)`` into the temp tables ``_incoming(src, instance_id, label,
        line, pos, score, rank)`` and ``_incoming_instances(src, instance_id, line)``. The sources are first
        expanded (:func:`hiersql.sources.expand`: a predictions table with a system column is one source
        per system); ``src`` is the position of a source in that list. The text files are read together
        (:meth:`_stage_text`), and so are the mappings of columns and label sets (:meth:`_stage_columns`)
        and the systems of one table (:meth:`_stage_table`). Then the checks that need no taxonomy
        (:meth:`_check_labels`). Returns the name of each source used in messages (its path, or ``name``, or
        ``<DataFrame>`` and the like), the duplicates collapsed and the system of each source."""
        tables: list[sources.Table] = []
        try:
            entries = sources.expand(self.con, items, format, columns, predictions, tables)
            wheres = [e.where for e in entries]
            parts: dict[int, list[int]] = {}  # the sources of each table, by the table's id
            for i, entry in enumerate(entries):
                if isinstance(entry.source, sources.Part):
                    parts.setdefault(id(entry.source.labels), []).append(i)
            in_tables = {i for srcs in parts.values() for i in srcs}
            text = [i for i, e in enumerate(entries)
                    if isinstance(e.source, str | Path) and _is_text(Path(e.source), format)]
            mappings = [i for i, e in enumerate(entries) if i not in in_tables and _is_columns(e.source)]
            batched = set(text) | set(mappings) | in_tables
            steps = [step for step in (text, mappings) if step] + list(parts.values()) + [
                [i] for i in range(len(entries)) if i not in batched]
            for k, step in enumerate(steps):
                if step is text:
                    self._stage_text([Path(entries[i].source) for i in text], text, format, wheres)
                elif step is mappings:
                    self._stage_columns([(i, entries[i].source) for i in mappings], wheres)
                elif step[0] in in_tables:
                    self._stage_table([(i, entries[i].source) for i in step], wheres)
                else:  # a wide file
                    self._stage_wide(Path(entries[step[0]].source), step[0], wheres)
                if len(steps) > 1:
                    for table in STAGED:
                        self.con.execute(f"DROP TABLE IF EXISTS {table}_{k}")
                        self.con.execute(f"ALTER TABLE {table} RENAME TO {table}_{k}")
        finally:
            for opened in tables:
                opened.close()
        if len(steps) > 1:
            for table in STAGED:
                self._temp(table, " UNION ALL BY NAME ".join(f"SELECT * FROM {table}_{k}" for k in range(len(steps))))
                for k in range(len(steps)):
                    self.con.execute(f"DROP TABLE {table}_{k}")
        return Staged(wheres, self._check_labels(wheres), [e.system for e in entries])

    def _rename_staged(self, suffix: str, back: bool = False) -> None:
        """Keep the staging tables aside as ``_incoming{suffix}`` (or bring them ``back``)."""
        for table in STAGED:
            old, new = (f"{table}{suffix}", table) if back else (table, f"{table}{suffix}")
            self.con.execute(f"DROP TABLE IF EXISTS {new}")
            self.con.execute(f"ALTER TABLE {old} RENAME TO {new}")

    def _stage_text(self, paths: list[Path], srcs: list[int], format: str, wheres: list[str]) -> None:
        """Stage text files (``long`` TSV, ``lines``, ``germeval-*``) with one read and one query per step."""
        self._raw_lines(paths, srcs)
        q = sqlfiles.queries("readers")
        if format == "long":
            self._stage_long(q, wheres)
        elif format == "lines":
            self._incoming(f"SELECT src, instance_id, label, line, pos, NULL::DOUBLE AS score FROM ({q['lines_rows']})")
            self._temp("_incoming_instances", q["lines_instances"])
        else:
            self._stage_germeval(format[-1], q, wheres)

    def _raw_lines(self, paths: list[Path], srcs: list[int]) -> None:
        """Temp table ``raw_lines(src, line, raw)``: every physical line of file ``paths[k]`` as source
        ``srcs[k]``, numbered from 1 in each file, blank lines as NULL. All files are read by one ``read_csv``
        (``filename=true``; a file listed twice is read once); lines keep their order within a file."""
        files = list(dict.fromkeys(str(p) for p in paths))
        try:
            self._temp(
                "raw_lines",
                f"WITH r AS (SELECT row_number() OVER () AS n, filename, raw FROM {RAW_READ}),"
                " first_lines AS (SELECT filename, min(n) AS first FROM r GROUP BY filename),"
                " sources AS (SELECT unnest($files) AS filename, unnest($srcs) AS src)"
                " SELECT s.src, r.n - f.first + 1 AS line, r.raw FROM r"
                " JOIN first_lines f ON f.filename = r.filename JOIN sources s ON s.filename = r.filename",
                {"paths": files, "files": [str(p) for p in paths], "srcs": srcs},
            )
        except Exception:  # duckdb.Error: invalid UTF-8, unreadable file, ...: name the file
            for path in files:
                try:
                    self.con.execute(f"SELECT count(*) FROM {RAW_READ}", {"paths": [path]}).fetchall()
                except Exception as exc:
                    raise sources.read_error(exc, path) from None
            raise

    def _stage_long(self, q: dict[str, str], wheres: list[str]) -> None:
        self._incoming(
            f"SELECT *, TRY_CAST(score_text AS DOUBLE) AS score FROM ({q['long_rows']})",
        )
        bad = self._one(
            "SELECT src, line, raw, n_fields FROM _incoming WHERE n_fields NOT IN (2, 3) ORDER BY src, line LIMIT 1"
        )
        if bad:
            raise InputError(
                f"expected 2 fields (instance_id, label) or 3 (instance_id, label, score), found {bad[3]}",
                wheres[bad[0]], bad[1], bad[2],
            )
        self._check_score_text(wheres)
        self._temp("_incoming_instances", "SELECT src, instance_id, min(line) AS line FROM _incoming GROUP BY ALL")

    def _check_score_text(self, wheres: list[str]) -> None:
        bad = self._one(
            "SELECT src, line, score_text FROM _incoming WHERE score_text IS NOT NULL AND score_text <> ''"
            " AND (score IS NULL OR isnan(score)) ORDER BY src, line LIMIT 1"
        )
        if bad:
            raise InputError("score is not a number", wheres[bad[0]], bad[1], bad[2])

    def _stage_germeval(self, subtask: str, q: dict[str, str], wheres: list[str]) -> None:
        self._temp("germeval_lines", q["germeval_lines"])
        bad = self._one(
            "SELECT src, line, raw FROM germeval_lines WHERE section IS NULL ORDER BY src, line LIMIT 1"
        )
        if bad:
            raise InputError("line before any 'subtask_a'/'subtask_b' header", wheres[bad[0]], bad[1], bad[2])
        section = f"subtask_{subtask}"
        dup = self._one(
            "SELECT src, instance_id, min(line), max(line) FROM germeval_lines WHERE section = $s"
            " GROUP BY src, instance_id HAVING count(*) > 1 ORDER BY src, 3 LIMIT 1", {"s": section},
        )
        if dup:
            raise InputError(f"instance listed twice in {section} (first on line {dup[2]})", wheres[dup[0]],
                             dup[3], dup[1])
        self._incoming(
            f"SELECT src, instance_id, label, line, pos, NULL::DOUBLE AS score FROM ({q['germeval_rows']})",
            {"section": section},
        )
        self._temp(
            "_incoming_instances",
            "SELECT src, instance_id, line FROM germeval_lines WHERE section = $s", {"s": section},
        )

    def _stage_wide(self, path: Path, src: int, wheres: list[str]) -> None:
        """A 0/1 matrix (``.csv``: commas, else tabs): the header (read here, never sniffed: DuckDB's sniffer
        takes the last row of a ragged file for the header) is the instance id column then one column per
        label; DuckDB reads the rows into columns named by position (no name from the file enters the SQL),
        and a row with another number of fields than the header is an error naming its line."""
        import duckdb

        sep = "," if path.suffix.lower() == ".csv" else "\t"
        header, rel = sources.read_csv_rows(self.con, path, sep, wheres[src])
        labels = [h.strip() for h in header[1:]]
        if not labels:
            raise InputError("wide label file needs a header: an instance_id column and one column per label",
                             wheres[src], 1, sep.join(header))
        seen: set[str] = set()
        for label in labels:
            if not label or label in seen:
                raise InputError("wide header has an empty or repeated label", wheres[src], 1, label)
            seen.add(label)
        try:
            self._register("_wide_src", rel)
            # DuckDB's reader skips blank lines: row k is the k-th non-blank line after the header
            self._temp("_wide", f"SELECT l.line, w.* EXCLUDE (k) FROM (SELECT row_number() OVER () AS k, * FROM"
                       f" _wide_src) w JOIN (SELECT row_number() OVER () AS k, n AS line FROM (SELECT row_number()"
                       f" OVER () AS n, raw FROM {RAW_READ}) WHERE n > 1 AND raw IS NOT NULL) l USING (k)",
                       {"paths": [str(path)]})
        except duckdb.Error as exc:
            raise sources.read_error(exc, wheres[src]) from None
        finally:
            self.con.execute("DROP VIEW IF EXISTS _wide_src")
        cells = ", ".join(f"c{i}" for i in range(1, len(header)))
        self._temp("_wide_cells", f"SELECT line, c0 AS instance_id, unnest([{cells}]) AS v,"
                   f" generate_subscripts([{cells}], 1) AS pos FROM _wide")
        dup = self._one("SELECT c0, min(line), max(line) FROM _wide GROUP BY c0 HAVING count(*) > 1"
                        " ORDER BY 2 LIMIT 1")
        if dup:  # one row per instance: two would be merged silently
            raise InputError(f"instance listed twice (first on line {dup[1]})", wheres[src], dup[2], dup[0])
        bad = self._one("SELECT line, pos, v FROM _wide_cells WHERE v IS NULL"
                        " OR trim(v) NOT IN ('0', '1', '0.0', '1.0') ORDER BY line, pos LIMIT 1")
        if bad:
            raise InputError(f"wide matrix cell of column {labels[bad[1] - 1]!r} is not 0 or 1", wheres[src],
                             bad[0], bad[2])
        self._incoming(
            "SELECT $src AS src, instance_id, list_extract($labels, pos) AS label, line, pos, NULL::DOUBLE AS score"
            " FROM _wide_cells WHERE trim(v) IN ('1', '1.0')", {"src": src, "labels": labels},
        )
        self._temp("_incoming_instances", "SELECT $src AS src, c0 AS instance_id, line FROM _wide", {"src": src})
        self.con.execute("DROP TABLE _wide_cells")

    def _stage_table(self, parts: list[tuple[int, sources.Part]], wheres: list[str]) -> None:
        """The systems ``parts`` (``(src, part)``) of one table (:mod:`hiersql.sources`), in one query: the
        rows of each system, or every row for a table without a system column."""
        rows = parts[0][1].labels.rows()
        if parts[0][1].system is None:
            pick, params = f"(SELECT $src AS src) s, ({rows}) r", {"src": parts[0][0]}
        else:
            pick = f"(SELECT unnest($systems) AS system, unnest($srcs) AS src) s JOIN ({rows}) r USING (system)"
            params = {"systems": [part.system for _, part in parts], "srcs": [src for src, _ in parts]}
        self._incoming("SELECT s.src, r.instance_id, r.label, r.line, 1 AS pos, r.score_text, r.score"
                       f" FROM {pick}", params)
        self._check_rows(wheres)

    def _check_rows(self, wheres: list[str]) -> None:
        """Missing ids or labels and bad scores of a staged table; then ``_incoming_instances``."""
        bad = self._one(
            "SELECT src, line, instance_id, label FROM _incoming WHERE instance_id IS NULL OR label IS NULL"
            " OR trim(label) = '' OR lower(label) = 'nan' OR lower(instance_id) = 'nan'"
            " ORDER BY src, line LIMIT 1"
        )
        if bad:
            role = "instance" if bad[2] is None or bad[2].lower() == "nan" else "label"
            raise InputError("missing instance_id or label (empty, None or NaN)",
                             *locate(wheres[bad[0]], bad[1], role, None if role == "instance" else bad[2]),
                             f"instance_id={bad[2]!r}, label={bad[3]!r}")
        self._check_score_text(wheres)
        self._temp("_incoming_instances", "SELECT src, instance_id, min(line) AS line FROM _incoming GROUP BY ALL")

    def _stage_columns(self, sources: list[tuple[int, Any]], wheres: list[str]) -> None:
        """Mappings of columns (``{"instance_id": [...], "label": [...], "score": [...]}``) and sequences of
        label sets (the instance id is the position, from 0; a string is a one-label set; an empty set is an
        instance), all sent to DuckDB as list parameters of one statement."""
        src: list[int] = []
        table: dict[str, list[Any]] = {"instance_id": [], "label": [], "score": [], "line": [], "pos": []}
        set_sizes: dict[int, int] = {}  # src -> number of label sets
        for i, source in sources:
            if isinstance(source, Mapping):
                rows = _mapping_rows(source, wheres[i])
            else:
                rows = _label_set_rows(source)
                set_sizes[i] = rows.pop("n_sets")
            src += [i] * len(rows["label"])
            for name in table:
                table[name] += rows[name]
        self._incoming(
            "SELECT unnest($src) AS src, unnest($instance_id) AS instance_id, unnest($label) AS label,"
            " unnest($line) AS line, unnest($pos) AS pos, unnest($score) AS score_text,"
            " TRY_CAST(unnest($score) AS DOUBLE) AS score",
            {"src": src} | table,
        )
        self._check_rows(wheres)
        if set_sizes:  # every label set is an instance, an empty one too
            self._temp(
                "_incoming_instances",
                "SELECT * FROM _incoming_instances WHERE src NOT IN (SELECT unnest($srcs))"
                " UNION ALL SELECT src, CAST(i AS VARCHAR) AS instance_id, i + 1 AS line FROM"
                " (SELECT src, unnest(range(n)) AS i FROM (SELECT unnest($srcs) AS src, unnest($sizes) AS n))",
                {"srcs": list(set_sizes), "sizes": list(set_sizes.values())},
            )

    # ------------------------------------------------------------------ checks
    def _check_labels(self, wheres: list[str]) -> list[tuple[int, int]]:
        """The checks of the staged labels that need no taxonomy (:meth:`load` runs them while the taxonomy
        loads): empty ids and labels are errors; duplicate ``(instance_id, label)`` rows are collapsed (counts
        returned, warned by :meth:`_check_staged`) and the ranks renumbered."""
        bad = self._one(
            "SELECT src, line, instance_id FROM _incoming_instances WHERE instance_id IS NULL OR instance_id = ''"
            " ORDER BY src, line LIMIT 1"
        )
        if bad:
            raise InputError("empty instance_id", *locate(wheres[bad[0]], bad[1], "instance", None), bad[2])
        bad = self._one(
            "SELECT src, line, instance_id FROM _incoming WHERE label IS NULL OR label = ''"
            " ORDER BY src, line LIMIT 1"
        )
        if bad:
            raise InputError("empty label", *locate(wheres[bad[0]], bad[1], "label", bad[2]),
                             f"instance_id={bad[2]!r}")
        dups = self.con.execute(
            "SELECT src, count(*) - count(DISTINCT (instance_id, label)) FROM _incoming GROUP BY src"
            " HAVING count(*) > count(DISTINCT (instance_id, label)) ORDER BY src"
        ).fetchall()
        if dups:
            self._incoming("SELECT * EXCLUDE (rank) FROM _incoming QUALIFY row_number() OVER (PARTITION BY src,"
                           " instance_id, label ORDER BY line, pos) = 1")
        return dups

    def _incoming(self, rows: str, params: dict[str, object] | None = None) -> None:
        """The staging table ``_incoming``: the ``rows`` of a reader (``src, instance_id, label, line, pos,
        score[, score_text]``) and each label's ``rank``, its position within its instance as read."""
        self._temp("_incoming", "SELECT *, row_number() OVER (PARTITION BY src, instance_id ORDER BY line, pos)"
                   f" AS rank FROM ({rows})", params)

    def _check_staged(self, staged: Staged, unknown: str) -> None:
        """Unknown labels (an error, or dropped and the ranks renumbered); warns of the duplicates collapsed.
        Warnings are per source."""
        if unknown not in ("error", "ignore"):
            raise ValueError("unknown must be 'error' or 'ignore'")
        wheres = staged.wheres
        virtual = self._one(
            "SELECT i.src, i.line, i.label FROM _incoming i JOIN nodes n ON n.label = i.label AND n.is_virtual"
            " ORDER BY i.src, i.line LIMIT 1"
        )
        if virtual:  # a name hiersql made up, above the taxonomy's parentless nodes: no label can mean it
            raise InputError("label is the virtual root added above the taxonomy's parentless nodes, not one of"
                             " its nodes", wheres[virtual[0]], virtual[1], virtual[2])
        unknowns = self.con.execute(
            "SELECT i.src, min(i.line), first(i.label ORDER BY i.line, i.pos), count(*),"
            " first(i.instance_id ORDER BY i.line, i.pos) FROM _incoming i"
            " ANTI JOIN nodes n ON n.label = i.label GROUP BY i.src ORDER BY i.src"
        ).fetchall()
        if unknowns:
            if unknown == "error":
                src, line, label, _, instance = unknowns[0]
                raise InputError("label not in the taxonomy", *locate(wheres[src], line, "label", instance), label)
            self.con.execute("DELETE FROM _incoming WHERE label NOT IN (SELECT label FROM nodes)")
            self._incoming("SELECT * EXCLUDE (rank) FROM _incoming")  # the ranks renumbered
            for src, _, label, count, _ in unknowns:
                _warn(f"{wheres[src]}: ignored {count} label(s) not in the taxonomy (first: {label!r})")
        for src, count in staged.duplicates:
            _warn(f"{wheres[src]}: {count} duplicate (instance_id, label) row(s) collapsed")

    def _check_no_truth(self, wheres: list[str], no_truth: str) -> None:
        if no_truth not in ("error", "ignore"):
            raise ValueError("no_truth must be 'error' or 'ignore'")
        missing = self.con.execute(
            "SELECT s.src, min(s.line), first(s.instance_id ORDER BY s.line), count(*) FROM _incoming_instances s"
            " ANTI JOIN instances i ON i.instance_id = s.instance_id GROUP BY s.src ORDER BY s.src"
        ).fetchall()
        if not missing:
            return
        if no_truth == "error":
            src, line, instance, _ = missing[0]
            raise InputError("predicted instance has no truth", *locate(wheres[src], line, "instance", instance),
                             instance)
        self.con.execute("DELETE FROM _incoming WHERE instance_id NOT IN (SELECT instance_id FROM instances)")
        for src, _, instance, count in missing:
            _warn(f"{wheres[src]}: ignored {count} predicted instance(s) with no truth (first: {instance!r})")

    # ------------------------------------------------------------------ queries
    def _register(self, name: str, rel: Any) -> None:
        """Register a relation as a view; a relation of another DuckDB connection goes through Arrow."""
        import duckdb

        try:
            self.con.register(name, rel)
        except duckdb.InvalidInputException:
            self.con.register(name, rel.arrow())

    def _one(self, sql: str, params: dict[str, object] | None = None) -> tuple | None:
        """The first row of a query (the result is fetched completely, as DuckDB requires)."""
        rows = self.con.execute(sql, params or {}).fetchall()
        return rows[0] if rows else None

    def _temp(self, table: str, sql: str, params: dict[str, object] | None = None) -> None:
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS {sql}", params or {})

    def run(
        self, file: str, name: str | None = None, params: dict[str, object] | None = None
    ) -> duckdb.DuckDBPyRelation:
        """Run query ``name`` of ``sql/<file>.sql``; queries it reads are first materialised as temp tables
        named after them, except for the files of :data:`COMPOSED`, whose queries are run as one query with
        the queries it reads as common table expressions. DuckDB variants of queries
        (``-- name: NAME (duckdb)``, :func:`hiersql.sqlfiles.queries`) replace the portable ones. Returns the
        result as a DuckDB relation."""
        queries = sqlfiles.queries(file, "duckdb")
        name = name or list(queries)[-1]
        params = params or {}
        deps = sqlfiles.dependencies(file, name, "duckdb")
        sql = queries[name]
        if file in COMPOSED and deps:
            ctes = ",\n".join(f"{dep} AS (\n{queries[dep]}\n)" for dep in deps)
            sql = f"WITH {ctes}\nSELECT * FROM (\n{sql}\n) AS _{name}"
        else:
            for dep in deps:
                self._temp(dep, queries[dep], sqlfiles.bind(queries[dep], params))
        self._temp(f"_{name}_result", sql, sqlfiles.bind(sql, params))
        return self.con.table(f"_{name}_result")

    def transaction(self) -> _Transaction:
        """``with store.transaction(): ...`` commits on success and rolls back on any error."""
        return _Transaction(self.con)

    def close(self) -> None:
        self.con.close()


class _Transaction:
    def __init__(self, con: Any) -> None:
        self.con = con

    def __enter__(self) -> None:
        self.con.execute("BEGIN TRANSACTION")

    def __exit__(self, exc_type: object, *_: object) -> None:
        self.con.execute("ROLLBACK" if exc_type else "COMMIT")


def _fill_taxonomy(con: Any, taxonomy: Taxonomy, max_depth: int | None, closure_view: bool, is_view: bool) -> bool:
    """Replace the taxonomy tables (edges, nodes, closure, node_closure) of ``con`` with ``taxonomy``'s, in the
    transaction the caller holds (:meth:`Store.load_taxonomy`); ``is_view``: ``closure`` is a view now. With
    ``closure_view``, ``closure`` becomes a view of ``node_closure`` with the names joined when it is read (see
    :meth:`Store.load_taxonomy`), unless the taxonomy needs the deduplicating walk, which builds ``closure``
    first. Returns whether ``closure`` is a view."""
    edges = taxonomy.all_edges()
    depths = taxonomy.depths()
    nodes = taxonomy.all_nodes()
    for table in ("node_closure", "nodes", "edges"):
        con.execute(f"DELETE FROM {table}")
    if is_view:  # the table again, as the schema has it
        con.execute("DROP VIEW closure")
        con.execute(sqlfiles.queries("schema")["schema"])
    else:
        con.execute("DELETE FROM closure")
    columns = {"p": [e.parent for e in edges], "c": [e.child for e in edges]}
    if taxonomy.has_weights:  # splitting a column of empty strings costs as much as a column of names
        columns["w"] = ["" if e.weight is None else repr(e.weight) for e in edges]
    con.execute(
        "INSERT INTO edges SELECT unnest(string_split($p, chr(31))), unnest(string_split($c, chr(31))),"
        + (" CAST(nullif(unnest(string_split($w, chr(31))), '') AS DOUBLE)" if "w" in columns else " NULL"),
        {name: _joined(values, taxonomy.source) for name, values in columns.items()},
    )
    con.execute(
        "INSERT INTO nodes SELECT label, depth, label = $root, is_leaf, $virtual AND label = $root, position"
        " FROM (SELECT unnest(names) AS label, CAST(unnest(string_split($d, chr(31))) AS INTEGER) AS depth,"
        "  unnest(string_split($leaf, chr(31))) = '1' AS is_leaf, generate_subscripts(names, 1) - 1 AS position"
        "  FROM (SELECT string_split($n, chr(31)) AS names))",
        {"n": _joined(nodes, taxonomy.source), "d": "\x1f".join(map(str, map(depths.__getitem__, nodes))),
         "leaf": "\x1f".join(["1" if leaf else "0" for leaf in map(taxonomy.is_leaf, nodes)]),
         "root": taxonomy.root, "virtual": taxonomy.virtual_root},
    )
    queries = sqlfiles.queries("closure", "duckdb")
    if _walks_every_path(taxonomy, depths):
        con.execute(f"INSERT INTO node_closure {queries['node_closure_walk']}", {"max_depth": max_depth})
        if closure_view:
            con.execute("DROP TABLE closure")
            con.execute(f"CREATE VIEW closure AS {queries['closure_from_nodes']}")
            return True
        con.execute(f"INSERT INTO closure {queries['closure_from_nodes']}")
    else:
        con.execute(f"INSERT INTO closure {queries['closure']}", {"max_depth": max_depth})
        con.execute(f"INSERT INTO node_closure {queries['node_closure_from_names']}")
    return False


def _walks_every_path(taxonomy: Taxonomy, depths: dict[str, int]) -> bool:
    """Whether to take ``node_closure_walk`` (the walk along every path, twice as fast): when the taxonomy has
    at most :data:`PATHS_PER_CLOSURE_ROW` upward paths per row of a lower bound of its closure (``Σ (depth +
    1)``: every node, its ancestors on one shortest root path); else ``closure``, the deduplicating walk,
    safe for DAGs whose paths grow exponentially with depth."""
    lower_bound = sum(depths.values()) + len(depths)
    return taxonomy.path_count <= PATHS_PER_CLOSURE_ROW * lower_bound


def _joined(values: list[str], source: str) -> str:
    """``values`` joined by the unit separator U+001F, to pass a column as one string parameter and split it
    in SQL (``unnest(string_split($p, chr(31)))``): several times faster than a list parameter."""
    text = "\x1f".join(values)
    if text.count("\x1f") != len(values) - 1:
        bad = next(v for v in values if "\x1f" in v)
        raise InputError("node name contains the control character U+001F", source, value=bad)
    return text


def _is_text(path: Path, format: str) -> bool:
    """Check a label file (known format, present, not empty); true when it is read as raw text lines
    (``long`` TSV, ``lines``, ``germeval-*``), false for Parquet, ``wide`` and ``long`` CSV files."""
    if format not in LABEL_FORMATS:
        raise InputError(f"unknown label format (one of {', '.join(LABEL_FORMATS)})", path, value=format)
    if not path.is_file():
        raise InputError("label source is a folder, not a file" if path.is_dir() else "label file not found", path)
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return False
    text = format != "wide" and not (format == "long" and suffix == ".csv")
    if not text and path.stat().st_size == 0:  # not even the header; an empty text file has no label
        raise InputError("label file is empty (it needs a header)", path)
    return text


def _is_columns(source: LabelSource) -> bool:
    """A mapping of columns or a sequence of label sets (not a path, DataFrame or relation)."""
    return not isinstance(source, str | Path) and not hasattr(source, "columns")


def _mapping_rows(columns: Mapping[str, Any], where: str) -> dict[str, list[Any]]:
    """The ``instance_id``, ``label``, ``score`` (as text) and ``line`` lists of a mapping of columns."""
    named = {str(k).lower(): list(v) for k, v in columns.items()}
    if not {"instance_id", "label"} <= set(named):
        raise InputError(f"label table needs columns instance_id, label; it has {list(columns)}", where)
    n = len(named["label"])
    if any(len(v) != n for v in named.values()):
        raise InputError(f"columns of different lengths: { {k: len(v) for k, v in named.items()} }", where)
    return {"instance_id": _texts(named["instance_id"]), "label": _texts(named["label"]),
            "score": _texts(named.get("score", [None] * n)), "line": list(range(1, n + 1)), "pos": [1] * n}


def _label_set_rows(sets: Iterable[Iterable[str]]) -> dict[str, Any]:
    """The rows of a sequence of label sets (instance id = position from 0, line = position from 1, pos =
    position in the set from 1) and ``n_sets``, their number."""
    ids: list[str] = []
    labels: list[Any] = []
    lines: list[int] = []
    positions: list[int] = []
    n = 0
    for n, labelset in enumerate(sets, start=1):
        members = [labelset] if isinstance(labelset, str) else list(labelset)
        ids += [str(n - 1)] * len(members)
        labels += members
        lines += [n] * len(members)
        positions += range(1, len(members) + 1)
    return {"instance_id": ids, "label": _texts(labels), "score": [None] * len(ids), "line": lines,
            "pos": positions, "n_sets": n}


def _texts(values: list[Any]) -> list[str | None]:
    """Values as text for DuckDB (one type per list parameter); ``None`` stays missing."""
    if set(map(type, values)) <= {str, type(None)}:  # the usual case, checked at C speed
        return values
    return [v if isinstance(v, str) or v is None else str(v) for v in values]


def _prediction_items(
    predictions: Mapping[str | None, LabelSource] | Iterable[tuple[str | None, LabelSource]],
) -> list[tuple[str | None, LabelSource, str | None]]:
    """``(system, source, name)`` for every system (``name``: how messages call a source that is not a file
    or a reference: ``SYSTEM=<DataFrame>`` and the like). A system named twice is an error, raised by
    :func:`hiersql.sources.expand` once the systems of tables with a system column are known."""
    items = list(predictions.items() if isinstance(predictions, Mapping) else predictions)
    return [(system, source, None if isinstance(source, str | Path) or system is None
             else f"{system}={sources.default_name(source)}") for system, source in items]


def _warn(message: str) -> None:
    warnings.warn(message, DataWarning, stacklevel=4)
