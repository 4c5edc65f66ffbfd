"""``hiersql report``: a self-contained HTML page to choose between systems (docs/report.md).

- From the inputs, ``hiersql report --taxonomy … --truth … --pred … --out DIR`` (or ``FILE.html``): the
  comparison of ``hiersql compare`` (ranking table with intervals and groups, dot plots, Kendall's τ), the
  per-depth breakdown, the confusion matrices, the command, the hiersql version and the inputs' SHA-256.
- From a job queue, ``hiersql report --db QUEUE [--job NAME] --out …`` (a DuckDB file or a PostgreSQL URL):
  per job and dataset, the latest results of the units of the job's latest submission
  (:mod:`hiersql.jobs.report`).
- From stored results, ``hiersql report --db FILE --out …`` (results of ``hiersql evaluate --db`` or
  ``Evaluator.save``): per dataset, the ranking table and dot plots of the values
  (no intervals: stored results have no per-instance values) and Kendall's τ.
"""

from __future__ import annotations

import argparse

from ..jobs.report import MAIN_COLUMNS
from .common import add_input_arguments
from .compare import add_compare_arguments

MAX_CONFUSION_LABELS = 12  # the automatic confusion depth keeps at most this many labels


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write an HTML report: ranking, intervals, agreement, confusion",
                       description="Write a self-contained HTML report, from the inputs (--taxonomy, --truth, "
                                   "--pred) or from the results stored in a DuckDB file (--db alone).")
    add_input_arguments(p)
    for action in p._actions:  # the inputs are optional here: --db alone reports stored results
        if action.dest in ("taxonomy", "truth", "pred"):
            action.required = False
        if action.dest == "db":
            action.metavar = "FILE|URL"
            action.help = ("with the inputs: DuckDB file to keep the tables in; alone: the job queue (a DuckDB "
                           "file or postgresql:// URL) or the DuckDB file whose results table to report")
    add_compare_arguments(p)
    p.add_argument("--out", required=True, metavar="DIR|FILE.html",
                   help="where to write the report: a .html file, or a directory (DIR/index.html)")
    p.add_argument("--dataset", action="append", help="with --db alone: only these datasets (repeatable)")
    p.add_argument("--job", action="append", metavar="ID|NAME",
                   help="with a job queue: only this job (its latest submission; repeatable; default: every job,"
                        " each in sections of its own)")
    p.add_argument("--columns", metavar="MEASURES",
                   help="with a job queue: the measures of the ranking tables, comma-separated names or aliases"
                        f" (default: those the job file names one by one, at most {MAIN_COLUMNS}); the others"
                        " are in a second table behind a toggle")
    p.add_argument("--title", default="hiersql report", help="the page's title (default: hiersql report)")
    p.add_argument("--confusion-depth", type=int, metavar="D",
                   help="depth of the confusion matrices (default: the deepest level with at most "
                        f"{MAX_CONFUSION_LABELS} labels)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import sys

    from ..errors import InputError
    from .common import check_page_target

    given = [flag for flag in ("taxonomy", "truth", "pred") if getattr(args, flag)]
    if given and len(given) < 3:
        missing = sorted({"taxonomy", "truth", "pred"} - set(given))
        raise InputError("the inputs need --taxonomy, --truth and --pred", f"--{missing[0]}")
    if not given and not args.db:
        raise InputError("give the inputs (--taxonomy, --truth, --pred) or a results database", "--db")
    for flag in ("job", "columns"):
        if given and getattr(args, flag):
            raise InputError("goes with --db alone (a job queue), not with the inputs", f"--{flag}")
    check_page_target(args.out, "--out")
    out = from_inputs(args) if given else job_report(args) or from_results(args)
    print(f"hiersql: wrote {out}", file=sys.stderr)
    return 0


def _command(args: argparse.Namespace) -> str:
    """The command line that ran (as :func:`hiersql.cli.main` received it), passwords left out."""
    import shlex

    from ..errors import display

    return "hiersql " + shlex.join(display(arg) for arg in args.argv)


def source_digest(source: object, role: str, args: argparse.Namespace) -> str:
    """The SHA-256 of what was read from ``source`` as its ``role`` (taxonomy, truth, predictions): a file's
    bytes; a folder's or glob's files (their paths within it and bytes, in path order: Parquet part files); a
    table or query's rows as the readers read them with the command's column flags (as batch jobs key their
    units: :func:`hiersql.jobs.keys.content_hash`); a Spark source is not read here."""
    import glob
    import hashlib
    from pathlib import Path

    from ..analyses.report import file_digest
    from ..inputs.sources import is_reference
    from ..jobs.keys import COLUMN_KEYS, content_hash

    text = str(source)
    if is_reference(text):
        if text.startswith("spark:"):
            return "(read by Spark: not hashed)"
        columns = {key: getattr(args, key) for key in COLUMN_KEYS if getattr(args, key, None) is not None}
        return content_hash(text, role, args.labels_format, columns)
    path = Path(text)
    if path.is_file():
        return file_digest(path)
    files = sorted(p for p in (path.rglob("*") if path.is_dir() else map(Path, glob.glob(text))) if p.is_file())
    digest = hashlib.sha256()
    for file in files:
        name = str(file.relative_to(path) if path.is_dir() else file).encode()
        digest.update(len(name).to_bytes(8, "big") + name + bytes.fromhex(file_digest(file)))
    return digest.hexdigest()


def from_inputs(args: argparse.Namespace):
    from ..errors import InputError
    from .common import parse_preds
    from .compare import comparison_from_args

    if args.confusion_depth is not None and args.confusion_depth < 0:
        raise InputError("must be >= 0", "--confusion-depth", value=args.confusion_depth)
    store, comparison, options, extras = comparison_from_args(
        args, beside=lambda side, options: report_tables(side, _set_options(options), args.confusion_depth))
    from ..errors import display

    inputs = [("taxonomy", args.taxonomy, "taxonomy"), ("truth", args.truth, "truth"),
              *((name or "predictions", source, "predictions") for name, source in parse_preds(args.pred))]
    digests = [(f"{name} {display(source)}", source_digest(source, role, args)) for name, source, role in inputs]
    return input_report(store, comparison, digests, _command(args), args.title, args.out, extras, options=options)


def report_tables(store, set_options: dict, depth: int | None = None) -> tuple:
    """What the report shows besides the comparison: ``(breakdown, confusion cells, depth)``: the per-depth
    hF (``set_options``: the options of that hF) and the confusion cells at ``depth`` (``None``:
    :func:`confusion_depth`)."""
    from ..analyses.compare import depth_breakdown
    from ..measures.multilabel import confusion_long

    depth = confusion_depth(store) if depth is None else depth
    return depth_breakdown(store, **set_options), confusion_long(store, depth=depth), depth


def input_report(store, comparison, inputs: list, command: str, title: str, out, tables: tuple | None = None,
                 flag: str = "--out", options: dict | None = None):
    """Write the report of ``comparison`` on the data of ``store`` to ``out`` (given as ``flag``): ``inputs`` are
    ``(name, SHA-256)`` of what was read (:func:`source_digest`), ``tables`` the result of :func:`report_tables`
    (computed with the default options when ``None``), ``options`` the measure options of the comparison
    (default: the defaults). Returns the path written."""
    from ..analyses.compare import ordered_systems
    from ..analyses.report import calibration_section, comparison_sections, html_page, provenance
    from ..analyses.report_severity import severity_section
    from ..measures.multilabel import label_order, pivot
    from ..options import make_options
    from .common import write_page

    breakdown, cells, depth = report_tables(store, {}) if tables is None else tables
    labels = label_order(store, set(cells["true_label"]) | set(cells["pred_label"]))
    confusion = {system: pivot(cells[cells["system"] == system], "recall", labels)
                 for system in store.systems()}
    n_instances = store.con.execute("SELECT count(*) FROM instances").fetchall()[0][0]
    sections = comparison_sections(comparison, breakdown, confusion, depth)
    calibration = calibration_section(store, ordered_systems(comparison.ranking))  # when predictions are scored
    sections += [calibration] if calibration else []
    severity = severity_section(store, comparison.ranking, make_options(**(options or {})))  # severity measures
    sections += [severity] if severity else []
    sections.append(("provenance", "How this page was made", provenance(command, inputs)))
    n_systems, n_measures = len(store.systems()), comparison.ranking["measure"].nunique()
    lead = (f"{n_systems} system{'s' if n_systems != 1 else ''}, {n_instances:,} instances, "
            f"{n_measures} measure{'s' if n_measures != 1 else ''}.")
    return write_page(html_page(title, sections, lead), out, flag)


def _set_options(options: dict) -> dict:
    """The options of the set-based hF behind the depth breakdown, from the measure options."""
    return {name: options[name] for name in ("include_root", "max_distance", "beta", "zero_division", "augment")}


def confusion_depth(store) -> int:
    """The deepest level ``d`` at which the confusion matrix has at most :data:`MAX_CONFUSION_LABELS` labels
    (the nodes at depth ``d`` and the shallower leaves); at least 1."""
    rows = store.con.execute(
        "SELECT d.depth, count(*) FROM (SELECT DISTINCT depth FROM nodes WHERE depth > 0) AS d"
        " JOIN nodes AS n ON n.depth = d.depth OR (n.depth < d.depth AND n.is_leaf AND NOT n.is_root)"
        " GROUP BY d.depth ORDER BY d.depth").fetchall()
    fitting = [depth for depth, count in rows if count <= MAX_CONFUSION_LABELS]
    return max(fitting, default=1)


def job_report(args: argparse.Namespace):
    """The report of a job queue's latest results (``--db`` a DuckDB queue file or a PostgreSQL URL), written
    to ``--out``: the path written; ``None`` when ``--db`` is a DuckDB file that is not a queue (a results file
    of ``hiersql evaluate --db``: :func:`from_results`)."""
    from pathlib import Path

    from ..analyses.report import html_page, provenance
    from ..errors import InputError, display
    from ..inputs.dbfile import connect
    from ..jobs.queue import NotAQueue, Queue, is_postgres
    from ..jobs.report import chosen_metrics, job_sections, submissions_table
    from ..jobs.trend import TREND_POINTS
    from .common import write_page

    columns = None if args.columns is None else chosen_metrics(args.columns.split(","), "--columns")
    opened = None
    if not is_postgres(args.db):
        if not Path(args.db).is_file():
            raise InputError("results database not found", args.db)
        opened = connect(args.db, read_only=True, wait=args.wait)  # a DuckDB file, waited for when locked
    try:
        queue = Queue(args.db, create=False, write=False, named=("--db", None), opened=opened)
    except NotAQueue:
        if opened is None:
            raise
        if args.job or args.columns:
            flag = "--job" if args.job else "--columns"
            raise InputError("reads a job queue; this results file has no jobs table", flag,
                             value=(args.job or [args.columns])[0]) from None
        return None
    try:
        with queue.connect() as con:
            rows = con.latest(args.job)
            submissions = con.submissions(sorted({r[1] for r in rows}))
            shown = con.earlier_submissions([s[0] for s in submissions], TREND_POINTS)
            history = con.unit_results(sorted({i for ids in shown.values() for i in ids}))
    finally:
        queue.close()
    sections = job_sections(rows, submissions, columns, args.dataset, (history, shown))
    if not sections:
        raise InputError("no results to report", display(args.db), value=args.dataset or args.job)
    sections.append(("provenance", "How this page was made",
                     provenance(_command(args), []) + submissions_table(submissions)))
    return write_page(html_page(args.title, sections), args.out, "--out")


def from_results(args: argparse.Namespace):
    from html import escape

    from ..analyses.compare import Comparison, scores
    from ..analyses.report import comparison_sections, file_digest, html_page, provenance, results_ranking
    from ..analyses.stats import rank_correlations
    from ..errors import InputError
    from ..inputs.dbfile import connect
    from .common import write_page

    with connect(args.db, read_only=True, wait=args.wait) as con:  # a DuckDB file, waited for when locked
        has = con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'results'").fetchall()
        if not has[0][0]:
            raise InputError("no results table (run hiersql evaluate --db or hiersql jobs run first)", args.db)
        # the latest run of each (dataset, system, metric, average)
        results = con.execute(
            "SELECT dataset, system, metric, average, value FROM results"
            " QUALIFY row_number() OVER (PARTITION BY dataset, system, metric, average"
            " ORDER BY created_at DESC) = 1 ORDER BY dataset, metric, average, system"
        ).df()
    if args.dataset:
        results = results[results["dataset"].isin(args.dataset)]
    if results.empty:
        raise InputError("no results to report", args.db, value=args.dataset)
    results["dataset"] = results["dataset"].fillna("(no dataset)")
    sections = []
    for k, (dataset, part) in enumerate(results.groupby("dataset", sort=True)):
        ranking = results_ranking(part)
        tau = rank_correlations(scores(ranking))
        settings = {"confidence": 0.95, "n_resamples": 0, "seed": None, "test": "", "alpha": 0, "holm": False}
        inner = comparison_sections(Comparison(ranking, None, tau, tau, settings))
        html = "".join(f"<h3>{escape(heading)}</h3>{body}" for _, heading, body in inner)
        sections.append((f"dataset-{k + 1}", str(dataset), html))
    sections.append(("provenance", "How this page was made",
                     provenance(_command(args), [(f"results {args.db}", file_digest(args.db))])))
    return write_page(html_page(args.title, sections), args.out, "--out")

