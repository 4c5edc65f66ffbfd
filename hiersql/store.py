"""The DuckDB store: schema, taxonomy tables, truth and prediction labels.

A :class:`Store` owns one DuckDB connection (in memory by default, a file with ``db=``). It creates the schema
of ``sql/schema.sql``, loads a :class:`~hiersql.taxonomy.Taxonomy` with its closure, and reads label files into
``truth(instance_id, label, rank)`` and ``predictions(system, instance_id, label, rank, score)``.

Label formats (SPEC §1, §10): ``long`` (``instance_id<TAB>label[<TAB>score]`` per row, or CSV with a header
``instance_id,label[,score]``), ``lines`` (HEMKit: one line per instance, whitespace-separated labels, the line
number is the instance id), ``germeval-a`` and ``germeval-b`` (the ``subtask_a``/``subtask_b`` sections of a
GermEval 2019 file), ``wide`` (a CSV/TSV 0/1 indicator matrix with a header: ``instance_id`` then one column per
label), a pandas DataFrame, a DuckDB relation, a mapping of columns (``{"instance_id": [...], "label": [...]}``,
optionally ``"score"``; no pandas needed) or a Parquet file (long layout).

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

from . import sqlfiles
from .errors import DataWarning, InputError
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
LabelSource = Any  # path, DataFrame, DuckDB relation, or a sequence of label sets
STAGED = ("_incoming", "_incoming_instances")  # the staging tables every reader fills
# The steps of Store.load, as its on_step hook names them.
LOAD_STEPS = ("reading taxonomy, closure and labels", "checking truth", "checking predictions")
# Every physical line of the files $paths as one VARCHAR column (no delimiter, quote or escape can occur).
# Lines up to 1 GiB (DuckDB's default maximum is 2 MB; a longer line is reported as such, _read_error).
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
    """What :meth:`Store._stage` read: the name of each source in messages, and ``(src, count)`` of the
    sources whose duplicate ``(instance_id, label)`` rows were collapsed."""

    wheres: list[str]
    duplicates: list[tuple[int, int]]


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
        if memory_limit:  # DuckDB spills to its temp directory beyond it
            try:
                self.con.execute(f"SET memory_limit = '{memory_limit.replace(chr(39), '')}'")
            except duckdb.Error as exc:
                raise InputError(f"invalid memory limit ({str(exc).splitlines()[0]})", "--memory-limit",
                                 value=memory_limit) from None
        self.con.execute(sqlfiles.queries("schema")["schema"])
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
        self, source: LabelSource, format: str = "long", *, unknown: str = "error", name: str | None = None
    ) -> None:
        """Replace the truth with the labels read from ``source`` (see the module docstring for formats)."""
        self._require_taxonomy()
        self._commit_truth(self._stage([(source, name)], format), unknown)

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
        system: str,
        source: LabelSource,
        format: str = "long",
        *,
        unknown: str = "error",
        no_truth: str = "error",
        name: str | None = None,
    ) -> None:
        """Replace the predictions of ``system`` with the labels read from ``source`` (the one-system case of
        :meth:`add_predictions_many`; ``name`` names a source that is not a file in messages)."""
        self._load_predictions([(system, source, name)], format, unknown, no_truth)

    def add_predictions_many(
        self,
        predictions: Mapping[str, LabelSource] | Iterable[tuple[str, LabelSource]],
        format: str = "long",
        *,
        unknown: str = "error",
        no_truth: str = "error",
    ) -> None:
        """Replace the predictions of many systems at once: ``{system: source}`` (or ``(system, source)``
        pairs), every source in ``format``.

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
        self._load_predictions(_prediction_items(predictions), format, unknown, no_truth)

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
    ) -> None:
        """:meth:`load_taxonomy`, :meth:`add_truth` and :meth:`add_predictions_many` in one call, with the same
        result and the same errors; the taxonomy may be a file (:meth:`Taxonomy.from_file`) or a function
        returning one (called once).

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
        staged: InputError | None = None
        read, labels_read = threading.Event(), []  # set once the label sources are read or failed; [True] if read
        view, is_view = [], self._closure_view_now()  # whether closure is a view once loaded, and before

        def load_taxonomy() -> Taxonomy:
            tax = taxonomy if isinstance(taxonomy, Taxonomy) else (
                taxonomy() if callable(taxonomy) else Taxonomy.from_file(taxonomy))
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
                truth_staged = self._stage([(truth, None)], format)
                if items:
                    self._rename_staged("_truth")
                    pred_staged = self._stage([(source, name) for _, source, name in items], format)
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
            self._commit_predictions(items, pred_staged, unknown, no_truth)

    def systems(self) -> list[str]:
        return [r[0] for r in self.con.execute("SELECT system FROM systems ORDER BY system").fetchall()]

    def _load_predictions(self, items: list[tuple[str, LabelSource, str | None]], format: str, unknown: str,
                          no_truth: str) -> None:
        """Stage, check and insert ``(system, source, name)`` items in one transaction."""
        self._require_taxonomy()
        if not self._one("SELECT count(*) FROM instances")[0]:
            raise RuntimeError("add the truth before predictions (Store.add_truth)")
        if not items:
            return
        self._commit_predictions(items, self._stage([(source, name) for _, source, name in items], format),
                                 unknown, no_truth)

    def _commit_predictions(self, items: list[tuple[str, LabelSource, str | None]], staged: Staged,
                            unknown: str, no_truth: str) -> None:
        """Check the staged predictions of ``items`` and replace those systems' rows, in one transaction."""
        with self.transaction():
            self._check_staged(staged, unknown)
            wheres = staged.wheres
            self._check_no_truth(wheres, no_truth)
            for (src,) in self.con.execute(
                "SELECT src FROM (SELECT unnest(range($n)) AS src) ANTI JOIN _incoming USING (src) ORDER BY src",
                {"n": len(items)},
            ).fetchall():
                _warn(f"{wheres[src]}: no predicted label; evaluated as a system that predicted nothing for every"
                      " instance")
            self._temp("_incoming_systems", "SELECT unnest($s) AS system, unnest($w) AS source,"
                       " generate_subscripts($s, 1) - 1 AS src", {"s": [s for s, _, _ in items], "w": wheres})
            for table in ("predictions", "systems"):
                self.con.execute(f"DELETE FROM {table} WHERE system IN (SELECT system FROM _incoming_systems)")
            self.con.execute("INSERT INTO systems SELECT system, source FROM _incoming_systems ORDER BY src")
            self.con.execute(
                "INSERT INTO predictions SELECT s.system, i.instance_id, i.label, i.rank, i.score"
                " FROM _incoming i JOIN _incoming_systems s ON s.src = i.src"
            )

    # ------------------------------------------------------------------ staging
    def _stage(self, sources: list[tuple[LabelSource, str | None]], format: str) -> Staged:
        """Read every ``(source, name)`` into the temp tables ``_incoming(src, instance_id, label, line, pos,
        score, rank)`` and ``_incoming_instances(src, instance_id, line)``, ``src`` being the position of the
        source in ``sources``; the text files among them are read together (:meth:`_stage_text`), and so are
        the mappings of columns and label sets (:meth:`_stage_columns`). Then the checks that need no
        taxonomy (:meth:`_check_labels`). Returns the name of each source used in messages (its path, or
        ``name``, or ``<DataFrame>`` and the like) and the duplicates collapsed."""
        wheres = [str(s) if isinstance(s, str | Path) else name or _default_name(s) for s, name in sources]
        text = [i for i, (s, _) in enumerate(sources) if isinstance(s, str | Path) and _is_text(Path(s), format)]
        columns = [i for i, (s, _) in enumerate(sources) if _is_columns(s)]
        batched = set(text) | set(columns)
        steps = [step for step in (text, columns) if step] + [[i] for i in range(len(sources)) if i not in batched]
        for k, step in enumerate(steps):
            if step is text:
                self._stage_text([Path(sources[i][0]) for i in text], text, format, wheres)
            elif step is columns:
                self._stage_columns([(i, sources[i][0]) for i in columns], wheres)
            else:
                self._stage_other(step[0], sources[step[0]][0], format, wheres)
            if len(steps) > 1:
                for table in STAGED:
                    self.con.execute(f"DROP TABLE IF EXISTS {table}_{k}")
                    self.con.execute(f"ALTER TABLE {table} RENAME TO {table}_{k}")
        if len(steps) > 1:
            for table in STAGED:
                self._temp(table, " UNION ALL BY NAME ".join(f"SELECT * FROM {table}_{k}" for k in range(len(steps))))
                for k in range(len(steps)):
                    self.con.execute(f"DROP TABLE {table}_{k}")
        return Staged(wheres, self._check_labels(wheres))

    def _rename_staged(self, suffix: str, back: bool = False) -> None:
        """Keep the staging tables aside as ``_incoming{suffix}`` (or bring them ``back``)."""
        for table in STAGED:
            old, new = (f"{table}{suffix}", table) if back else (table, f"{table}{suffix}")
            self.con.execute(f"DROP TABLE IF EXISTS {new}")
            self.con.execute(f"ALTER TABLE {old} RENAME TO {new}")

    def _stage_other(self, src: int, source: LabelSource, format: str, wheres: list[str]) -> None:
        """Stage one Parquet, wide or CSV file, DataFrame or DuckDB relation."""
        if isinstance(source, str | Path):
            import duckdb

            path = Path(source)
            try:  # a corrupt Parquet file fails when read, a ragged CSV file when its rows are
                if path.suffix.lower() == ".parquet":
                    self._stage_relation(self.con.read_parquet(str(path)), src, wheres)
                elif format == "wide":
                    self._stage_wide(path, src, wheres)
                else:  # long CSV with a header
                    header, rel = self._read_csv_rows(path, ",", wheres[src])
                    self._stage_relation(rel.project(*[duckdb.ColumnExpression(f"c{i}").alias(name)
                                                       for i, name in enumerate(header)]),
                                         src, wheres, first_line=2)
            except duckdb.Error as exc:
                raise _read_error(exc, wheres[src]) from None
        elif hasattr(source, "columns") and hasattr(source, "dtypes") and not hasattr(source, "fetchall"):
            _check_frame_scores(source, wheres[src])
            self._stage_relation(self.con.from_df(source), src, wheres)
        else:  # a DuckDB relation
            self._stage_relation(source, src, wheres)

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
                    raise _read_error(exc, path) from None
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
        header, rel = self._read_csv_rows(path, sep, wheres[src])
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
            raise _read_error(exc, wheres[src]) from None
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

    def _read_csv_rows(self, path: Path, sep: str, where: str) -> tuple[list[str], duckdb.DuckDBPyRelation]:
        """The header of a CSV/TSV file (read here: DuckDB's sniffer takes the last row of a ragged file for the
        header) and a relation of its other rows in VARCHAR columns named by position (``c0``, ``c1``, ...: no
        name from the file enters SQL text); a row with another number of fields than the header fails when
        the relation is read (:func:`_read_error` names its line)."""
        import csv

        with path.open("rb") as fh:
            first = fh.readline()
        try:
            header = next(csv.reader([first.decode("utf-8-sig").rstrip("\r\n")], delimiter=sep), [])
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text ({exc.reason})", where, 1) from None
        except csv.Error as exc:
            raise InputError(f"cannot read the header ({exc})", where, 1) from None
        if not header:
            raise InputError("label file has no header", where, 1)
        rel = self.con.read_csv(str(path), header=False, skiprows=1, sep=sep, quotechar='"', auto_detect=False,
                                columns={f"c{i}": "VARCHAR" for i in range(len(header))}, null_padding=False,
                                max_line_size=1 << 30)
        return header, rel

    def _stage_relation(self, rel: Any, src: int, wheres: list[str], first_line: int = 1) -> None:
        """A DuckDB relation (a DataFrame, a CSV or Parquet file) with columns instance_id, label[, score]."""
        where = wheres[src]
        cols = [c.lower() for c in rel.columns]
        if not {"instance_id", "label"} <= set(cols):
            raise InputError(f"label table needs columns instance_id, label; it has {list(rel.columns)}", where)
        self._register("_rel_src", rel)
        score = f'"{rel.columns[cols.index("score")]}"' if "score" in cols else "NULL"
        iid, lab = (f'"{rel.columns[cols.index(c)]}"' for c in ("instance_id", "label"))
        self._incoming(
            f"SELECT {src} AS src, CAST({iid} AS VARCHAR) AS instance_id, CAST({lab} AS VARCHAR) AS label,"
            f" row_number() OVER () + {first_line - 1} AS line, 1 AS pos, CAST({score} AS VARCHAR) AS score_text,"
            f" TRY_CAST({score} AS DOUBLE) AS score FROM _rel_src",
        )
        self.con.unregister("_rel_src")
        self._check_rows(wheres)

    def _check_rows(self, wheres: list[str]) -> None:
        """Missing ids or labels and bad scores of a staged table; then ``_incoming_instances``."""
        bad = self._one(
            "SELECT src, line, instance_id, label FROM _incoming WHERE instance_id IS NULL OR label IS NULL"
            " OR trim(label) = '' OR lower(label) = 'nan' OR lower(instance_id) = 'nan'"
            " ORDER BY src, line LIMIT 1"
        )
        if bad:
            raise InputError("missing instance_id or label (empty, None or NaN)", wheres[bad[0]], bad[1],
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
            raise InputError("empty instance_id", wheres[bad[0]], bad[1], bad[2])
        bad = self._one(
            "SELECT src, line, instance_id FROM _incoming WHERE label IS NULL OR label = ''"
            " ORDER BY src, line LIMIT 1"
        )
        if bad:
            raise InputError("empty label", wheres[bad[0]], bad[1], f"instance_id={bad[2]!r}")
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
            "SELECT i.src, min(i.line), first(i.label ORDER BY i.line, i.pos), count(*) FROM _incoming i"
            " ANTI JOIN nodes n ON n.label = i.label GROUP BY i.src ORDER BY i.src"
        ).fetchall()
        if unknowns:
            if unknown == "error":
                raise InputError("label not in the taxonomy", wheres[unknowns[0][0]], unknowns[0][1], unknowns[0][2])
            self.con.execute("DELETE FROM _incoming WHERE label NOT IN (SELECT label FROM nodes)")
            self._incoming("SELECT * EXCLUDE (rank) FROM _incoming")  # the ranks renumbered
            for src, _, label, count in unknowns:
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
            raise InputError("predicted instance has no truth", wheres[missing[0][0]], missing[0][1], missing[0][2])
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
    predictions: Mapping[str, LabelSource] | Iterable[tuple[str, LabelSource]],
) -> list[tuple[str, LabelSource, str | None]]:
    """``(system, source, name)`` for every system (``name``: how messages call a source that is not a file);
    a system named twice is an error."""
    items = list(predictions.items() if isinstance(predictions, Mapping) else predictions)
    seen: set[str] = set()
    for system, _ in items:
        if system in seen:
            raise InputError("system name given twice", "<predictions>", value=system)
        seen.add(system)
    return [(system, source, None if isinstance(source, str | Path) else f"{system}={_default_name(source)}")
            for system, source in items]


def _default_name(source: LabelSource) -> str:
    """How messages name a source that is not a file."""
    if hasattr(source, "fetchall"):
        return "<relation>"
    if isinstance(source, Mapping):
        return "<columns>"
    return "<DataFrame>" if hasattr(source, "columns") and hasattr(source, "dtypes") else "<label sets>"


def _warn(message: str) -> None:
    warnings.warn(message, DataWarning, stacklevel=4)


def _read_error(exc: Exception, path: str | Path) -> InputError:
    """DuckDB's multi-line error of its CSV reader as one :class:`InputError` naming the file, the line and
    what is wrong (not UTF-8, a line beyond the maximum size, a wrong number of fields)."""
    import re

    text = str(exc)
    line = re.search(r"CSV Error on Line: (\d+)", text)
    original = re.search(r"Original Line: (.*)", text)
    value = original.group(1) if original else None
    if value is not None and len(value) > 80:
        value = value[:80] + "..."
    if "Invalid unicode" in text:
        what, value = "not UTF-8 text", None
    elif size := re.search(r"Maximum line size of (\d+) bytes exceeded\. Actual Size:\s*(\d+)", text):
        what, value = f"line of {size[2]} bytes is longer than the reader's maximum of {size[1]} bytes", None
    elif fields := re.search(r"Expected Number of Columns: (\d+) Found: (\d+)", text):
        what = f"row does not have the {fields[1]} fields of the header"
    else:
        what = f"cannot read file ({text.splitlines()[0] if text else type(exc).__name__})"
    return InputError(what, path, int(line.group(1)) if line else None, value)


def _check_frame_scores(df: Any, where: str) -> None:
    """A NaN score of a DataFrame is an error, as ``NaN`` in a file is (DuckDB would read it as a missing
    score); ``None`` in an object column is a missing score, as an empty field of a file is."""
    import numpy as np

    names = [c for c in df.columns if str(c).lower() == "score"]
    if not names:
        return
    values = df[names[0]].to_numpy()
    if values.dtype.kind == "f":
        nan = np.isnan(values)
    else:
        nan = np.array([isinstance(v, float) and v != v for v in values], dtype=bool)
    if nan.any():
        raise InputError("score is not a number", where, int(np.argmax(nan)) + 1, "nan")
