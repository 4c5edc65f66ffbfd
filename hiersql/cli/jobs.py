"""``hiersql jobs``: batch evaluation jobs through a durable queue (see hiersql.jobs and docs/jobs.md)."""

from __future__ import annotations

import argparse

from ..jobs import MAX_ATTEMPTS, MAX_BATCH
from .common import given
from .compare import add_test_arguments, check_test_arguments

DESCRIPTION = """\
Batch evaluation jobs: one unit of work per (dataset, system), queued in a database, computed by workers,
skipped when its inputs are unchanged (a content hash), its rows and status written in one transaction.

Job file (TOML; paths relative to it; details in docs/jobs.md):

  name = "nightly"                   # default: the file's stem
  queue = "jobs.duckdb"              # or postgresql://...; default: jobs.duckdb here; --queue wins
  results = "duckdb:team.duckdb::eval.results"   # also append the rows here (or postgresql://...::schema.table,
                                     # parquet:FOLDER); made if missing; once per unit hash
  on_failure = "notify-team"         # shell command run when units fail (--on-failure wins)
  metrics = ["hp", "hr", "hf"]       # any names or aliases of `hiersql evaluate --metrics`
  [options]                          # any option of hiersql.measures.Options
  average = ["micro", "macro"]

  [[dataset]]
  name = "germeval-b"
  taxonomy = "data/taxonomy.tsv"
  truth = "data/truth_b.tsv"
  predictions = ["data/pred_b/*.tsv", "baseline=data/baseline.tsv"]   # globs or NAME=FILE
                                     # or tables: "duckdb:dw.duckdb::runs", "postgresql://...::schema.runs"
  format = "long"                    # long, lines, germeval-a, germeval-b, wide
  unknown = "error"                  # or "ignore"
  metrics = ["hp", "sdl"]            # per-dataset overrides of metrics and options
  options = { include_root = true }

Queue: a DuckDB file (one process holds it and writes; `jobs status` reads the status that a run publishes
beside the file), or PostgreSQL (start `hiersql jobs run --queue postgresql://...` on as many machines as you
like). --workers N are threads of the run, each evaluating in a child process (one worker too). A unit whose
evaluating process is killed or crashes --max-attempts times fails; a run stopped from outside costs nothing.
Exit status: 0 all done; 1 some units failed (`jobs status` lists them); 2 a bad job file or input; 75 the
DuckDB queue file is held by another process (try again later: EX_TEMPFAIL). One line on stderr each.
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("jobs", help="batch evaluation jobs: a queue, workers, results, schedules",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")

    def action(name: str, help: str) -> argparse.ArgumentParser:
        a = actions.add_parser(name, help=help, description=help)
        a.set_defaults(func=run)
        return a

    def queue_args(a: argparse.ArgumentParser) -> None:
        a.add_argument("--queue", metavar="DB", help="DuckDB file or postgresql:// URL (default: the job file's "
                       "queue, else jobs.duckdb in this folder)")
        a.add_argument("--wait", type=float, default=0.0, metavar="SECONDS",
                       help="wait this long for a DuckDB queue file that another process holds (default: 0)")

    def job_arg(a: argparse.ArgumentParser) -> None:
        a.add_argument("--job", action="append", metavar="ID|NAME", help="only this job (repeatable)")

    def spec_arg(a: argparse.ArgumentParser) -> None:  # the readers of a queue: a job file names queue and job
        a.add_argument("spec", nargs="?", metavar="SPEC", help="a job file: its queue and its job (as --job NAME)")

    def batch_arg(a: argparse.ArgumentParser) -> None:
        a.add_argument("--batch", type=int, default=MAX_BATCH, metavar="N",
                       help=f"units of one dataset a worker claims and evaluates together, at most (default"
                       f" {MAX_BATCH}; each worker takes an even share of what is queued)")

    def on_failure_arg(a: argparse.ArgumentParser) -> None:
        a.add_argument("--on-failure", metavar="CMD", type=given,
                       help="a shell command to run when units fail (a schedule: when a run fails), told what failed"
                       " in HIERSQL_JOB, HIERSQL_FAILED, HIERSQL_SUMMARY, ... and as JSON on its stdin; its own"
                       " failure is a warning (default: the job file's on_failure)")

    def workers_arg(a: argparse.ArgumentParser) -> None:
        a.add_argument("--workers", type=int, default=1, metavar="N",
                       help="parallel workers: threads of this process (on a DuckDB queue, the file's one"
                       " writer), each evaluating in a child process (default 1)")

    def format_arg(a: argparse.ArgumentParser) -> None:
        a.add_argument("--format", default="table", choices=("table", "csv", "json"),
                       help="a table for the terminal, CSV or JSON (default: table)")

    def attempts_arg(a: argparse.ArgumentParser) -> None:
        a.add_argument("--max-attempts", type=int, default=MAX_ATTEMPTS, metavar="N",
                       help="failed attempts of a unit (its evaluating process killed or crashed, a lost"
                       f" connection) before it fails (default {MAX_ATTEMPTS}); such units are claimed one at a"
                       " time; a run stopped from outside (SIGKILL, the machine stopped) costs its units nothing")

    a = action("check", "check a job file as a run would (options, measures, files), without running it")
    a.add_argument("spec", metavar="SPEC", help="TOML job file")
    a = action("submit", "queue the units of a job file (unchanged units are marked skipped)")
    a.add_argument("spec", metavar="SPEC", help="TOML job file")
    queue_args(a)
    a.add_argument("--recompute", action="store_true", help="compute every unit, even unchanged ones")
    a = action("run", "submit SPEC (if given), then work until the queue has nothing left to do")
    a.add_argument("spec", nargs="?", metavar="SPEC", help="TOML job file to submit first (default: none)")
    queue_args(a)
    job_arg(a)
    workers_arg(a)
    a.add_argument("--recompute", action="store_true", help="with SPEC: compute every unit, even unchanged ones")
    batch_arg(a)
    attempts_arg(a)
    on_failure_arg(a)
    a = action("status", "per job: units queued, running, done, skipped, failed, cancelled, and the errors")
    spec_arg(a)
    queue_args(a)
    job_arg(a)
    a = action("results", "the stored results (latest run of each unit's key, per job name)")
    spec_arg(a)
    queue_args(a)
    job_arg(a)
    a.add_argument("--history", action="store_true", help="every stored run, oldest first")
    format_arg(a)
    a = action("diff", "what changed: each latest value against the previous one, with compare's paired test")
    spec_arg(a)
    queue_args(a)
    job_arg(a)
    a.add_argument("--since", metavar="RUN|DATE", help="previous values: the latest of the submissions up to run RUN"
                   " (its id, as jobs results shows it) or before DATE (ISO 8601, UTC); default: before the current"
                   " submission")
    a.add_argument("--all", action="store_true", help="every value, also those that did not change")
    format_arg(a)
    add_test_arguments(a)
    a = action("prune", "delete all but the N latest runs of each unit key (never the latest results)")
    queue_args(a)
    a.add_argument("--keep", type=int, required=True, metavar="N", help="runs to keep of each key (at least 1)")
    a = action("cancel", "cancel the queued units of jobs (units being computed finish)")
    queue_args(a)
    job_arg(a)
    a.add_argument("--all", action="store_true", help="every job of the queue")
    a = action("schedule", "submit and run SPEC at the times of a cron expression, until stopped")
    a.add_argument("spec", metavar="SPEC", help="TOML job file")
    queue_args(a)
    a.add_argument("--cron", required=True, help='cron expression of five fields, minute hour day month weekday'
                   ' (local time), e.g. "0 2 * * *"; or @daily, @hourly, ... (six fields are refused: ambiguous)')
    workers_arg(a)
    a.add_argument("--runs", type=int, metavar="N", help="stop after N runs, failed ones included (default: never);"
                   " when any failed, exit status 2 if one had a bad job file or input, else 1 if units failed,"
                   " else 75 (the queue file was busy)")
    batch_arg(a)
    attempts_arg(a)
    on_failure_arg(a)


def run(args: argparse.Namespace) -> int:
    from ..errors import InputError

    if args.action == "check":
        from ..jobs.spec import load_spec, units

        spec = load_spec(args.spec)
        n = len(units(spec))
        print(f"{args.spec}: {len(spec.datasets)} dataset(s), {n} unit(s)")
        return 0
    for flag in ("workers", "batch", "max_attempts", "keep"):
        if getattr(args, flag, 1) < 1:
            raise InputError("must be at least 1", f"--{flag.replace('_', '-')}", value=getattr(args, flag))
    if args.action == "diff":
        check_test_arguments(args)
    if getattr(args, "runs", None) is not None and args.runs < 1:
        raise InputError("must be at least 1", "--runs", value=args.runs)
    if not args.wait >= 0:  # (NaN too)
        raise InputError("must be at least 0", "--wait", value=args.wait)
    if getattr(args, "spec", None) and getattr(args, "job", None):  # SPEC names its own job
        raise InputError("picks jobs of the queue, not with a job file (SPEC names its own job)", "--job",
                         value=args.job[0])
    if args.action == "schedule":
        return _schedule(args)
    from ..jobs.runner import children

    # the processes that parallel workers evaluate in, forked before any database is open
    kids = children(args.workers) if args.action == "run" else []
    try:
        return _action(args, kids)
    finally:
        for child in kids:
            child.close()


def _action(args: argparse.Namespace, kids: list) -> int:
    from ..errors import InputError

    spec = None
    if getattr(args, "spec", None):
        from ..jobs.spec import load_spec

        spec = load_spec(args.spec)
        if args.action in ("status", "results", "diff"):  # the job file's job, in its queue
            args.job = [spec.name]
    from ..jobs.queue import QueueBusy, out_of_space

    try:
        queue = _queue(args, spec)
    except QueueBusy as busy:  # a run holds the file: the status it publishes
        if args.action != "status" or not _print_published(busy, args.job):
            raise
        return 0
    try:
        if args.action == "submit":
            return _submit(queue, args, spec)
        if args.action == "run":
            from ..jobs.runner import UnitsFailed

            try:
                return _run(queue, args, spec, kids)
            except UnitsFailed as exc:
                _on_failure(args, spec, queue.url, exc)
                raise
        with queue.connect() as con:
            if args.action == "status":
                _print_status(con.status(args.job))
            elif args.action == "results":
                _print_results(con.results(args.job, args.history), args.format)
            elif args.action == "diff":
                _diff(con, args)
            elif args.action == "prune":
                from ..jobs.prune import prune

                for line in prune(con, args.keep):
                    print(line)
            else:
                if not args.job and not args.all:
                    raise InputError("name the jobs to cancel (--job ID|NAME) or give --all", "cancel")
                print(f"cancelled {con.cancel(None if args.all else args.job)} queued unit(s)")
        return 0
    except Exception as exc:
        if out_of_space(exc):  # what was committed stays; a batch at hand is claimed again by the next run
            if isinstance(exc, OSError) and exc.filename:  # the status file beside the queue
                raise InputError(f"cannot write {exc.filename} ({exc.strerror})", queue.url) from None
            raise InputError(f"cannot write to the queue ({str(exc).strip().splitlines()[0]})", queue.url) from None
        raise
    finally:
        queue.close()


def _queue(args: argparse.Namespace, spec=None):
    """The queue of ``--queue``, else of the job file ``spec`` (a checked :class:`~hiersql.jobs.spec.Spec`)."""
    from ..jobs import queue_url
    from ..jobs.queue import Queue

    given_by_file = not args.queue and spec is not None and spec.queue  # messages name the job file's key
    named = (str(spec.path), spec.queue_line) if given_by_file else ("--queue", None)
    return Queue(queue_url(args.queue, spec.queue if spec else None, spec.path if spec else None),
                 wait=args.wait, create=args.action in ("submit", "run", "schedule"),
                 write=args.action not in ("status", "results", "diff"), named=named)


def _submit(queue, args: argparse.Namespace, spec) -> int:
    from ..jobs import submit

    job_id, total, queued = submit(queue, spec, args.recompute)
    print(f"job {job_id}: {total} unit(s), {queued} queued, {total - queued} unchanged")
    return 0


def _run(queue, args: argparse.Namespace, spec=None, kids: list | None = None) -> int:
    from ..jobs.runner import Summary, UnitsFailed, run, run_job

    def submitted(job_id: str, total: int, queued: int) -> None:
        print(f"job {job_id}: {total} unit(s), {queued} queued, {total - queued} unchanged")
        bars.start([job_id])

    bars = _Bars(queue)
    summary = Summary()
    options = {"on_unit": bars.update, "processes": kids, "summary": summary}
    try:
        if spec is not None:
            run_job(spec, queue, workers=args.workers, recompute=args.recompute, max_batch=args.batch,
                    max_attempts=args.max_attempts, on_submit=submitted, **options)
        else:
            bars.start(args.job)
            run(queue, args.job, args.workers, args.batch, max_attempts=args.max_attempts, **options)
    except BaseException:  # Ctrl-C, SIGTERM (maybe as DuckDB's interrupted query), a full disk, failed units:
        bars.close()  # what was committed before the run stopped
        _print_summary(summary)
        raise
    bars.close()
    _print_summary(summary)
    UnitsFailed.check(summary, queue.url)  # queued jobs run without a job file (run_job raised for one)
    return 0


def _on_failure(args: argparse.Namespace, spec, queue: str, exc: BaseException) -> None:
    """Run ``--on-failure`` (else the job file's ``on_failure``), if any, for the failed run ``exc``
    (:func:`hiersql.jobs.hooks.on_failure`)."""
    command = args.on_failure or (spec.on_failure if spec is not None else None)
    if not command:
        return
    from ..errors import display
    from ..jobs.evaluation import exit_status, message
    from ..jobs.hooks import on_failure

    summary = getattr(exc, "summary", None)
    job = spec.name if spec is not None else ",".join(args.job or [])
    on_failure(command, job=job, job_id=getattr(exc, "job_id", None), spec=args.spec, queue=display(queue),
               status=exit_status(exc), summary=message(exc),
               counts=dict(summary.counts) if summary else None, failures=summary.failures if summary else None)


def _print_summary(summary) -> None:
    """The failures of a run, then its counts (also after an interrupt: what was committed)."""
    counts = summary.counts
    for dataset, system, error in summary.failures:
        print(f"failed: {dataset}/{system}: {error}")
    print(f"{sum(counts.values())} unit(s) processed: {counts['done']} done, {counts['skipped']} unchanged,"
          f" {counts['failed']} failed")


def _schedule(args: argparse.Namespace) -> int:
    import sys

    from ..errors import query_interrupted
    from ..jobs.evaluation import exit_status, message
    from ..jobs.runner import RunsFailed
    from ..jobs.schedule import check_cron, schedule, waiting
    from ..jobs.spec import load_spec

    check_cron(args.cron)
    last = [load_spec(args.spec)]  # a bad job file stops here; later it is reported at each fire
    failed: list[int] = []  # the exit status of each failed run

    def fire() -> None:
        queue = None
        try:
            last[0] = spec = load_spec(args.spec)  # read again: it may have changed since the last run
            queue = _queue(args, spec)  # opened per run: between runs the queue file is free
            try:
                _run(queue, argparse.Namespace(**{**vars(args), "job": None, "recompute": False}), spec)
            finally:
                queue.close()
        except Exception as exc:  # a bad job file, failed units, a queue out of reach: said; the next run comes
            if query_interrupted(exc):  # Ctrl-C or SIGTERM landed in a DuckDB query: stop, as jobs run does
                raise KeyboardInterrupt from None
            failed.append(exit_status(exc))
            print(f"hiersql: error: {message(exc)}", file=sys.stderr)
            from ..jobs import queue_url

            spec = last[0]  # (the last job file that could be read)
            _on_failure(args, spec, queue.url if queue is not None else queue_url(args.queue, spec.queue, spec.path),
                        exc)
        sys.stdout.flush()

    def said(at, seconds: float) -> None:  # each time it waits: when the next run is
        print(f"hiersql: {args.spec}: {waiting(at, seconds)}", file=sys.stderr, flush=True)

    print(f"scheduled {args.spec} at '{args.cron}'", flush=True)
    runs = schedule(args.cron, fire, args.runs, on_wait=said)
    if failed:  # (--runs: each time counts, a failed run too) said, not only in the lines above
        raise RunsFailed(f"{len(failed)} of {runs} scheduled run(s) failed (their errors are above)", args.spec,
                         failed)
    return 0


class _Bars:
    """A tqdm bar per job on stderr, only on a terminal."""

    def __init__(self, queue) -> None:
        self.queue = queue
        self.bars: dict[str, object] = {}

    def start(self, jobs: list[str] | None) -> None:
        """A bar for each of ``jobs`` (all when ``None``) with queued units."""
        import sys

        if not sys.stderr.isatty():
            return
        from tqdm import tqdm

        with self.queue.connect() as con:
            for i, job in enumerate(j for j in con.status(jobs) if j["queued"]):
                self.bars[job["job_id"]] = tqdm(total=job["queued"], desc=job["name"], unit="unit",
                                                position=i, file=sys.stderr, leave=True)

    def update(self, event) -> None:
        bar = self.bars.get(event.job_id)
        if bar is not None:
            bar.update(1)
            unit = f"{event.dataset}/{event.system}"  # at most 40 characters: a long name leaves the bar room
            bar.set_postfix_str(unit if len(unit) <= 40 else unit[:39] + "…", refresh=False)

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()


def _print_status(jobs: list[dict]) -> None:
    if not jobs:
        print("no jobs")
        return
    for job in jobs:
        counts = ", ".join(f"{job[s]} {s}" for s in ("queued", "running", "done", "skipped", "failed", "cancelled"))
        print(f"{job['job_id']}  {job['name']}  {job['submitted_at']:%Y-%m-%d %H:%M:%S}  {counts};"
              f" {job['attempts']} attempt(s), {job['retried']} unit(s) retried")
        for dataset, system, error, attempts in job["errors"]:
            print(f"  failed: {dataset}/{system} ({attempts} attempt(s)): {error}")


def _print_published(busy, jobs: list[str] | None) -> bool:
    """Print the status that the process holding a DuckDB queue file publishes; false when it publishes none
    (it is not a `jobs run`)."""
    from ..errors import InputError
    from ..jobs.queue import published_status

    published = published_status(busy.url, busy.pid)
    if published is None:
        return False
    written, rows = published
    if jobs is not None:
        missing = [j for j in jobs if not any(j in (r["job_id"], r["name"]) for r in rows)]
        if missing:
            raise InputError("no such job in the queue", busy.url, value=missing[0])
        rows = [r for r in rows if r["job_id"] in jobs or r["name"] in jobs]
    print(f"(the queue is in use by process {busy.pid}, which is running jobs; its status at"
          f" {written:%Y-%m-%d %H:%M:%S} UTC)")
    _print_status(rows)
    return True


def _print_results(rows: list[tuple], fmt: str) -> None:
    from ..jobs.reading import RESULT_COLUMNS

    header = ("dataset", "system", "metric", "average", "value", "key", "run_id")
    _print_rows(RESULT_COLUMNS, rows, fmt, header, [
        (r[0], r[1], r[2], r[3] or "", f"{r[4]:.4f}", r[5][:12], r[6]) for r in rows], {4})


def _diff(con, args: argparse.Namespace) -> None:
    """``jobs diff``: the rows of :func:`hiersql.jobs.diff.diff`; as a table, under the point they are
    compared with and above a count of what changed."""
    from ..jobs.diff import DIFF_COLUMNS, Tests, changed, diff, since

    point = since(con, args.since)
    tests = Tests(args.test, args.alpha, args.bootstrap, args.seed, args.confidence)
    rows = diff(con, args.job, point, tests, args.all)
    cells = [(r[0], r[1], r[2], r[3], r[4], _number(r[5]), _number(r[6]), _number(r[7], "+.4f"),
              _number(r[8], ".3g"), r[9], r[14]) for r in rows]
    header = ("job", "dataset", "system", "metric", "average", "previous", "current", "change", "p", "significant",
              "note")
    if args.format == "table":
        print(f"previous: {point.describe()}; test: {args.test}, alpha {args.alpha:g}")
    if rows or args.format != "table":
        _print_rows(DIFF_COLUMNS, rows, args.format, header, cells, {5, 6, 7, 8})
    if args.format == "table":
        moved = [r for r in rows if changed(r[5], r[6])]
        yes, no = (sum(r[9] == word for r in moved) for word in ("yes", "no"))
        print(f"{len(moved)} value(s) changed: {yes} significant, {no} not, {len(moved) - yes - no} without a"
              " test" + ("" if args.all else "; --all lists the unchanged ones too"))


def _number(value: float | None, spec: str = ".4f") -> str:
    return "" if value is None else format(value, spec)


def _print_rows(columns: tuple[str, ...], rows: list[tuple], fmt: str, header: tuple[str, ...],
                cells: list[tuple[str, ...]], right: set[int]) -> None:
    """``rows`` (of ``columns``) as CSV or JSON; as a table, the ``cells`` under ``header``, aligned (the
    columns of ``right`` to the right)."""
    from .evaluate import _csv, json_rows

    if fmt == "csv":
        print(",".join(columns))
        for r in rows:
            print(",".join(_csv("" if v is None else v if isinstance(v, str) else
                                repr(v) if isinstance(v, float) else str(v)) for v in r))
    elif fmt == "json":
        print(json_rows(columns, rows))
    else:
        lines = [header, *cells]
        widths = [max(len(str(c[i])) for c in lines) for i in range(len(header))]
        for i, c in enumerate(lines):
            print("  ".join(str(v).rjust(w) if j in right else str(v).ljust(w) for j, (v, w) in
                            enumerate(zip(c, widths, strict=True))).rstrip())
            if i == 0:
                print("  ".join("-" * w for w in widths))
