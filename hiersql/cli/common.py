"""Arguments shared by the sub-commands that read a taxonomy, a truth and predictions, and the code that
turns them into a loaded :class:`~hiersql.inputs.store.Store`."""

from __future__ import annotations

import argparse
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..inputs import rules
from ..inputs.arguments import LABEL_FORMATS, parse_preds

if TYPE_CHECKING:
    from ..engines import Engine
    from ..inputs.store import Store


def add_input_arguments(parser: argparse.ArgumentParser) -> None:
    """``--taxonomy``, ``--truth``, ``--pred`` (repeatable, ``NAME=SOURCE`` or a glob), the column names of
    table sources (``--instance-col`` ...), ``--labels-format``, ``--unknown``, ``--db``, ``--memory-limit``
    (declared in :mod:`hiersql.options`)."""
    from ..options import STORE_OPTIONS, add_flags, declared

    parser.add_argument("--taxonomy", required=True, type=given, metavar="SOURCE",
                        help="parent<TAB>child edges (whitespace pairs, .csv with header, .parquet detected),"
                             " or a table: duckdb:PATH::TABLE, postgresql://...::SCHEMA.TABLE, sql:SELECT ...")
    parser.add_argument("--truth", required=True, type=given, metavar="SOURCE",
                        help="true labels (a file or a table)")
    parser.add_argument("--pred", action="extend", nargs="+", required=True, metavar="NAME=SOURCE",
                        help="predictions of one system, or of one system per value of the system column of a"
                             " table; repeat it, give several, or a glob (NAME = file stem)")
    for role, default in (("instance", "instance_id"), ("label", "label"), ("system", "system"),
                          ("score", "score"), ("parent", "parent"), ("child", "child")):
        parser.add_argument(f"--{role}-col", metavar="COLUMN",
                            help=f"column of the {role} in table sources (default: {default})")
    parser.add_argument("--rank-col", metavar="COLUMN",
                        help="column whose values order the labels of an instance in table sources (the"
                             " predictions'; the truth's if it has one), for the ranks that the confusion (HCM),"
                             " scoring and severity measures read"
                             " (default: none: by score, else a file's order, else by label; docs/warehouse.md)")
    parser.add_argument("--labels-format", default="long", choices=LABEL_FORMATS,
                        help="format of the truth and prediction files (default: long)")
    parser.add_argument("--unknown", default="error", choices=rules.OPTIONS["unknown"],
                        help="a label not in the taxonomy: error (default) or drop it with a warning")
    parser.add_argument("--db", type=given, metavar="FILE", help="DuckDB file to keep the tables and results in")
    add_flags(parser, declared(*STORE_OPTIONS))
    parser.add_argument("--wait", type=seconds, default=0.0, metavar="SECONDS",
                        help="with --db: wait up to SECONDS for another process to release the file (default 0)")


def given(text: str) -> str:
    """An argparse type: a value that names a file, a folder or a table, not an empty one
    (:func:`~hiersql.inputs.arguments.check_source_text`: ``--truth ""`` would read the current folder)."""
    from ..inputs.arguments import check_source_text

    try:
        return check_source_text(text, None)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def seconds(text: str) -> float:
    """An argparse type: a finite number of seconds >= 0 (``--wait``)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"not a number of seconds >= 0: {text!r}")
    return value


def parse_tables(specs: list[str], flag: str = "--table") -> dict[str, str]:
    """``NAME=TABLE`` pairs → ``{hiersql table: the user's table}``: NAME one of the store's tables, TABLE a
    ``[catalog.][schema.]table`` name (odd names quoted ``"..."``), nothing else: the name ends up in SQL text
    (quoted by sqlglot), so a function call, a comment, a second statement or an alias is an error, not part of
    the query."""
    from ..engines import STORE_TABLES
    from ..sqlfiles import table_name

    known = (*STORE_TABLES, "flat_labels")  # and the class universe the flat queries read with fixed_universe
    out: dict[str, str] = {}
    for spec in specs:
        key, sep, value = (part.strip() for part in spec.partition("="))
        if not sep or not key or not value:
            raise InputError("expected NAME=TABLE", flag, value=spec)
        if key not in known:
            raise InputError(f"unknown table (one of {', '.join(known)})", flag, value=key)
        if key in out:
            raise InputError("table given twice", flag, value=key)
        out[key] = table_name(value, flag)
    return out


def aligned(rows: list[tuple[object, ...]], left: int) -> str:
    """``rows`` (the header first) as a text table: the first ``left`` columns aligned left, the others right,
    a rule under the header. A control character in a cell (a newline or a tab in a system's name) is shown
    escaped (``\\n``), so that every row stays one line of the table; CSV and JSON keep the names as they are."""
    import unicodedata

    def cell(value: object) -> str:
        text = str(value)
        if not any(unicodedata.category(ch) == "Cc" for ch in text):
            return text
        return "".join(repr(ch)[1:-1] if unicodedata.category(ch) == "Cc" else ch for ch in text)

    cells = [[cell(v) for v in row] for row in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(cells[0]))]
    lines = []
    for k, row in enumerate(cells):
        lines.append("  ".join(v.ljust(w) if i < left else v.rjust(w) for i, (v, w) in enumerate(
            zip(row, widths, strict=True))).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n"


def check_plot_file(path: str, flag: str = "--plot") -> None:
    """Check an image file to write before any work: not a folder, in a folder that exists, with a suffix
    matplotlib writes (``.png``, ``.svg``, ``.pdf``, ...; without one matplotlib would write another file than
    the one named)."""
    from matplotlib.backend_bases import FigureCanvasBase

    out = Path(path)
    if out.is_dir():
        raise InputError("is a folder; give a file name", flag, value=path)
    if not out.resolve().parent.is_dir():
        raise InputError("folder of the plot file does not exist", flag, value=path)
    formats = FigureCanvasBase.get_supported_filetypes()
    if out.suffix.lower().lstrip(".") not in formats:
        raise InputError(f"image format must be one of {', '.join(sorted(formats))} (from the suffix)", flag,
                         value=path)


def check_page_target(path: str, flag: str) -> None:
    """Check where an HTML page goes before any work (:func:`hiersql.analyses.report.write_report`): ``FILE.html`` not a
    folder, a folder (for ``index.html``) not a file, under a folder that exists (or can be made) and takes
    files."""
    out = Path(path)
    page = out.suffix.lower() in (".html", ".htm")
    if page and out.is_dir():
        raise InputError("is a folder; give FILE.html, or a folder name without .html", flag, value=path)
    if not page and out.exists() and not out.is_dir():
        raise InputError("is a file, not a folder for index.html (name the page FILE.html)", flag, value=path)
    _check_writable(out.parent if page else out, flag, path)


def check_folder_target(path: str, flag: str, files: str) -> None:
    """Check a folder to write ``files`` into (``<family>.csv``) before any work: not a file, under a folder
    that exists (or can be made) and takes files."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise InputError(f"is a file, not a folder for {files}", flag, value=path)
    _check_writable(out, flag, path)


def _check_writable(folder: Path, flag: str, path: str) -> None:
    """``folder``, or the nearest of its parents that exists (the others are made), is a folder this process
    may write in; else an error naming ``flag`` and ``path``."""
    import os

    base = folder.absolute()
    while not base.exists():
        base = base.parent
    if not base.is_dir():
        raise InputError(f"{base} is not a folder", flag, value=path)
    if not os.access(base, os.W_OK | os.X_OK):
        raise InputError(f"cannot write in {base}", flag, value=path)


def write_page(html: str, path: str | Path, flag: str) -> Path:
    """:func:`hiersql.analyses.report.write_report`, a failure (a full disk, a read-only file system) as one line naming
    ``flag``."""
    from ..analyses.report import write_report

    try:
        return write_report(html, path)
    except OSError as exc:
        raise InputError(f"cannot write the page ({exc.strerror or exc})", flag, value=str(path)) from None


@contextmanager
def engine_of(args: argparse.Namespace, store: Store) -> Iterator[Any]:
    """The engine that ``--engine`` names (:func:`hiersql.engines.open_engine`), holding a copy of the store's
    tables, closed on leaving; ``None`` for the store's own DuckDB (the default)."""
    from ..engines import open_engine
    from ..options import RunOptions, from_args

    run = from_args(RunOptions, args)
    engine = None if run.engine == "duckdb" else open_engine(run, rows=store.size())
    try:
        if engine is not None:
            engine.copy_store(store)
        yield engine
    finally:
        if engine is not None:
            engine.close()


def load_store(args: argparse.Namespace, steps: Steps | None = None, engine: Any = None,
               families: Collection[str] | None = None) -> Store:
    """Read the taxonomy, the truth and every ``--pred`` into a Store (a DuckDB file with ``--db``) with
    :meth:`~hiersql.inputs.store.Store.load` (the taxonomy is validated and loaded with its closure while the label
    files are read; the prediction files are read together). ``steps`` shows the progress (the steps of
    :data:`~hiersql.inputs.store.LOAD_STEPS`). With ``engine``, an engine that reads the label sources itself, the
    inputs are loaded into it instead (a :class:`~hiersql.engines.SparkEngine` reads Parquet and Spark tables,
    :func:`hiersql.engines.spark.sources.load`; a :class:`~hiersql.engines.PostgresEngine` the tables of its
    server, :func:`hiersql.engines.postgres.sources.load`) and the store returned holds only what ``--db``
    keeps (the results). ``families``: the measure families the command computes, when it knows them
    (:attr:`~hiersql.inputs.store.Store.families`)."""
    from functools import partial

    from ..inputs.store import Store
    from ..inputs.taxonomy import Taxonomy
    from ..options import RunOptions, from_args

    steps = steps or Steps(0, "")
    preds = parse_preds(args.pred)
    _check_column_flags(args, [source for _, source in preds])
    _warn_truth_in_preds(args.pred, preds, Path(args.truth))
    taxonomy: Any = args.taxonomy  # a file or a reference (Store.load reads both), or a table's columns named:
    if args.parent_col or args.child_col:
        taxonomy = partial(Taxonomy.from_table, args.taxonomy, parent=args.parent_col, child=args.child_col)
    con = None
    if args.db:
        from ..inputs.dbfile import connect

        _check_db_is_no_source(args.db, {"--taxonomy": [args.taxonomy], "--truth": [args.truth],
                                         "--pred": [source for _, source in preds]})
        con = connect(args.db, wait=args.wait, source=f"--db {args.db}")
    run = from_args(RunOptions, args)
    store = Store(args.db, con=con, memory_limit=run.memory_limit, threads=run.threads)
    store.families = families
    if args.memory_limit and not args.db:  # spill beyond the limit into a folder of our own, not ./.tmp
        store.con.execute("SET temp_directory = $d", {"d": _spill_folder()})
    if engine is not None:
        from ..engines import PostgresEngine

        inputs = Store(memory_limit=run.memory_limit, threads=run.threads)  # this run's own, never --db
        inputs.families = families
        shared = {"unknown": args.unknown, "instance_col": args.instance_col, "label_col": args.label_col,
                   "score_col": args.score_col, "system_col": args.system_col, "rank_col": args.rank_col,
                   "on_step": steps.start}
        if isinstance(engine, PostgresEngine):
            from ..engines.postgres.sources import load as load_postgres

            load_postgres(engine, inputs, taxonomy, args.truth, preds, **shared)
        else:
            from ..engines.spark.sources import load

            load(engine, inputs, args.taxonomy, args.truth, preds, args.labels_format, parent_col=args.parent_col,
                 child_col=args.child_col, **shared)
        _check_label_universe(engine, getattr(args, "labels", None))
        return store
    earlier = _keep_earlier_inputs(store) if args.db else False
    store.load(taxonomy, args.truth, preds, args.labels_format, unknown=args.unknown, on_step=steps.start,
               instance_col=args.instance_col, label_col=args.label_col, score_col=args.score_col,
               system_col=args.system_col, rank_col=args.rank_col)
    if earlier:
        _drop_stale_systems(store, [name for name, _ in preds if name is not None], f"--db {args.db}")
    from ..engines import DuckDBEngine

    _check_label_universe(DuckDBEngine(store), getattr(args, "labels", None))
    return store


def _check_column_flags(args: argparse.Namespace, preds: list[Any]) -> None:
    """A label column flag with no table source it applies to (:func:`hiersql.inputs.sources.unused_label_column`), or
    a label format other than ``long`` with no source that is not a table: an error naming the flag, not a flag
    silently left unused."""
    from ..inputs.sources import format_unused, unused_label_column
    from ..inputs.tables import Columns

    columns = Columns(instance=args.instance_col, label=args.label_col, score=args.score_col,
                      system=args.system_col, rank=args.rank_col)
    role = unused_label_column(columns, args.truth, preds, args.labels_format)
    if role is not None:
        raise InputError("names a column of table sources (Parquet, CSV with a header, duckdb:, postgresql://,"
                         " sql:, spark:), and no source it applies to is one", f"--{role}-col",
                         value=getattr(columns, role))
    if format_unused(args.labels_format, [args.truth, *preds]):
        raise InputError("names the format of label text files (and of a wide CSV file), and every label source"
                         " is a table, read by its columns", "--labels-format", value=args.labels_format)


def _check_db_is_no_source(db: str, given: dict[str, list[Any]]) -> None:
    """``--db`` (where hiersql writes its tables and results) is not a DuckDB file a source reads: the user's
    file would receive hiersql's tables."""
    from ..inputs.sources import duckdb_file

    target = Path(db).resolve()
    for flag, refs in given.items():
        for ref in refs:
            path = duckdb_file(ref)
            if path is not None and path.resolve() == target:
                raise InputError(f"is the DuckDB file that {flag} reads; give hiersql a file of its own", "--db",
                                 value=db)


def _warn_truth_in_preds(specs: list[str], preds: list[tuple[str | None, Path | str]], truth: Path) -> None:
    """A ``--pred`` glob that matches the truth file too (``--pred 'run/*.tsv'`` with the truth in ``run/``, or
    the shell's expansion of ``--pred run/*.tsv``) would score the truth as one more, perfect, system without a
    word: say so (a truth given as ``NAME=FILE`` is the user's choice). ``preds``: ``parse_preds(specs)``, whose
    names are unique, so a name given in a spec marks that spec's one source."""
    import warnings

    from ..errors import DataWarning
    from ..inputs.arguments import given_name

    if not truth.is_file():
        return
    given = {given_name(spec) for spec in specs} - {None}
    for name, source in preds:
        if name not in given and isinstance(source, Path) and source.is_file() and source.samefile(truth):
            warnings.warn(f"--pred: system {source.stem!r} is the truth file {truth}; it is evaluated as a system",
                          DataWarning, stacklevel=3)


def _check_label_universe(engine: Engine, labels: str | None) -> None:
    """``--labels`` (the fixed classes) checked once the inputs are read, before any measure runs
    (:meth:`hiersql.engines.Engine.check_classes`: each a node of the taxonomy, none twice)."""
    from ..options import OptionError, declared, parse_flag

    if labels is None:
        return
    option, = declared("labels")
    try:
        engine.check_classes(parse_flag(option, labels))
    except OptionError as exc:
        raise InputError(exc.rule, "--labels", value=exc.value) from None


def _spill_folder() -> str:
    """A new folder in the system's temp folder for DuckDB to spill into, removed when the process ends
    (DuckDB's default for an in-memory database is ``.tmp`` in the working folder, which may be read-only)."""
    import atexit
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="hiersql-spill-")
    atexit.register(shutil.rmtree, folder, True)
    return folder


def _keep_earlier_inputs(store: Store) -> bool:
    """Before a load into a reused ``--db`` file that holds systems: keep its truth and taxonomy edges aside
    (temp tables) for :func:`_drop_stale_systems`. Returns whether there was anything to keep."""
    if not store.con.execute("SELECT count(*) FROM systems").fetchall()[0][0]:
        return False
    store.con.execute("CREATE OR REPLACE TEMP TABLE _earlier_truth AS SELECT instance_id, label FROM truth")
    store.con.execute("CREATE OR REPLACE TEMP TABLE _earlier_edges AS SELECT parent, child FROM edges")
    return True


def _drop_stale_systems(store: Store, systems: list[str], where: str) -> None:
    """The systems of an earlier run of a reused ``--db`` file were read against its truth and taxonomy: when
    this run's truth or taxonomy differ, they are dropped (with a warning naming them) instead of being
    evaluated against inputs they were never meant for; with the same truth and taxonomy they stay."""
    from ..errors import DataWarning

    changed = store.con.execute(
        "SELECT EXISTS (SELECT * FROM (SELECT * FROM _earlier_truth EXCEPT SELECT instance_id, label FROM truth)"
        " UNION ALL (SELECT instance_id, label FROM truth EXCEPT SELECT * FROM _earlier_truth))"
        " OR EXISTS (SELECT * FROM (SELECT * FROM _earlier_edges EXCEPT SELECT parent, child FROM edges)"
        " UNION ALL (SELECT parent, child FROM edges EXCEPT SELECT * FROM _earlier_edges))"
    ).fetchall()[0][0]
    store.con.execute("DROP TABLE _earlier_truth")
    store.con.execute("DROP TABLE _earlier_edges")
    if not changed:
        return
    stale = [r[0] for r in store.con.execute(
        "SELECT system FROM systems WHERE system NOT IN (SELECT unnest($s)) ORDER BY system", {"s": systems}
    ).fetchall()]
    if not stale:
        return
    with store.transaction():
        for table in ("predictions", "systems"):
            store.con.execute(f"DELETE FROM {table} WHERE system NOT IN (SELECT unnest($s))", {"s": systems})
    import warnings

    warnings.warn(f"{where}: dropped {len(stale)} system(s) of an earlier run, read against another truth or"
                  f" taxonomy (first: {stale[0]!r}); their stored results stay", DataWarning, stacklevel=3)


class Steps:
    """Progress over the steps of a long command: a tqdm bar on stderr, shown only when stderr is a
    terminal (pipes, files and tests see nothing). ``start(name)`` ends the step before and names the next;
    ``close()`` ends the last."""

    def __init__(self, total: int, desc: str) -> None:
        import sys

        self.bar = None
        self.running = False
        if total and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=desc, unit="step", file=sys.stderr, leave=False, mininterval=0)

    # the step that began last, in any Steps (the CLI names it when DuckDB runs out of memory)
    last: str | None = None

    def start(self, name: str) -> None:
        Steps.last = name
        if self.bar is None:
            return
        self.bar.set_postfix_str(name, refresh=not self.running)
        if self.running:
            self.bar.update(1)  # redraws with the new name
        self.running = True

    def close(self) -> None:
        if self.bar is not None:
            if self.running:
                self.bar.update(1)
            self.bar.close()
