"""``hiersql evaluate``: every requested measure for every system, as a table, CSV or JSON (SPEC §10)."""

from __future__ import annotations

import argparse

from .common import Steps, add_input_arguments, given, load_store


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("evaluate", help="evaluate systems' predictions against the truth",
                       description="Evaluate one or more systems against the truth over a taxonomy.")
    add_input_arguments(p)
    add_metric_arguments(p)
    p.add_argument("--format", default="table", choices=("table", "csv", "json"), help="output format")
    p.add_argument("--dataset", help="dataset name stored with the results (with --db, --out)")
    p.add_argument("--out", type=given, metavar="TARGET",
                   help="also append the result rows to a table: duckdb:PATH::[schema.]table,"
                   " postgresql://...::[schema.]table or parquet:FOLDER (made if missing; a run on unchanged"
                   " inputs replaces its rows; docs/jobs.md, Results tables)")
    p.add_argument("--per-instance", type=given, metavar="DIR",
                   help="also write the per-instance values of each measure family to DIR/<family>.csv")
    p.set_defaults(func=run)


def add_metric_arguments(p: argparse.ArgumentParser) -> None:
    """``--metrics``, a flag per measure option and a flag per run option (except the store's,
    :data:`~hiersql.options.STORE_OPTIONS`, input arguments), from the declarations of :mod:`hiersql.options`."""
    from ..options import MEASURE_OPTIONS, RUN_OPTIONS, STORE_OPTIONS, add_flags

    p.add_argument("--metrics", default="hp,hr,hf",
                   help="comma-separated measures or aliases (SPEC §10), families (set_based, flat, hcm,"
                        " pair_based, lca, scoring: their measures that apply), or 'all' (default: hp,hr,hf)")
    add_flags(p.add_argument_group("measure options"), MEASURE_OPTIONS)
    add_flags(p.add_argument_group("run options"), [o for o in RUN_OPTIONS if o.name not in STORE_OPTIONS])


def options_from_args(args: argparse.Namespace):
    """The checked :class:`~hiersql.options.Options` of the flags; a bad value names its flag."""
    from ..options import Options, from_args

    return from_args(Options, args)


def run(args: argparse.Namespace) -> int:
    from ..engines import open_engine
    from ..engines.postgres.sources import in_place
    from ..engines.spark.sources import check_path, parquet_rows, reads_any
    from ..errors import InputError
    from ..inputs.arguments import parse_preds
    from ..measures import compute
    from ..options import RunOptions, from_args

    warn_zero = args.zero_division == "warn"  # scikit-learn's: 0, and a warning per ill-defined value
    if warn_zero:
        args.zero_division = "0"
    opts = options_from_args(args)
    run_options = from_args(RunOptions, args)
    metrics = [m for m in args.metrics.split(",") if m.strip()]
    if not metrics:
        raise InputError("no metric given", "--metrics", value=args.metrics)
    from ..inputs.store import LOAD_STEPS
    from ..measures import resolve

    groups = resolve(metrics, "--metrics")  # unknown names fail before any file is read
    if args.per_instance:
        from .common import check_folder_target

        check_folder_target(args.per_instance, "--per-instance", "<family>.csv")
    if args.out:  # a bad target, or a table of other columns, fails before any file is read
        from ..jobs.targets import check_target

        check_target(args.out, "--out", args.wait)
    # the label sources, for Spark: whether it reads any itself (Parquet, spark: tables), and their size
    labels = [args.truth, *(source for _, source in parse_preds(args.pred))] if run_options.engine == "spark" else []
    in_spark = bool(labels) and reads_any(labels[0], labels[1:])
    # the label tables of the PostgreSQL engine's own server, read and checked there
    in_engine = in_spark or run_options.engine == "postgres" and in_place(
        run_options.postgres_url, args.truth, [source for _, source in parse_preds(args.pred)])
    for source in labels:  # a mistyped path costs no JVM
        check_path(source)
    # a bad server address fails before any file is read; Spark starts once the inputs' size is known
    # (open_engine: a small input's JVM compiles less): after the store read them, or, when Spark reads them
    # itself, from their Parquet footers (unknown for other sources)
    later = run_options.engine == "spark" and not in_spark
    engine = None if later else open_engine(run_options, rows=parquet_rows(labels) if in_spark else None)
    try:
        steps = Steps(len(LOAD_STEPS) + len(groups) + (run_options.engine != "duckdb" and not in_engine), "evaluate")
        try:
            store = load_store(args, steps, engine=engine if in_engine else None, families=set(groups))
            if run_options.engine == "duckdb":
                rows = compute(store, metrics, opts, on_family=steps.start, where="--metrics")
            else:  # the inputs, read and checked by the store, computed in the engine (temporary tables there)
                if not in_engine:  # else the engine read them itself, into its own tables
                    steps.start(f"{'starting spark, ' if later else ''}copying the tables to {run_options.engine}")
                    if later:
                        engine = open_engine(run_options, rows=store.size())
                    engine.copy_store(store)
                rows = compute(engine, metrics, opts, on_family=steps.start, where="--metrics")
        finally:
            steps.close()
        if warn_zero:
            from ..api.evaluator import warn_undefined

            warn_undefined(store if engine is None else engine, rows, opts)
        if args.per_instance:  # the families computed (under all, those that apply)
            from ..measures import catalog

            computed = {catalog()[row.metric][0] for row in rows}
            write_per_instance(store, {f: m for f, m in groups.items() if f in computed}, opts, args.per_instance,
                               engine if in_engine else None)
        run_id = None
        if args.db:
            from ..jobs import save_rows

            run_id = save_rows(store, rows, dataset=args.dataset)
        if args.out:
            write_out(store, rows, args, groups, opts, run_id)
        print(format_rows(rows, args.format), end="")
        return 0
    finally:  # the server connection, the Spark engine's stage folder
        if engine is not None:
            engine.close()


def write_out(store, rows: list, args: argparse.Namespace, groups: dict[str, list[str]], opts,
              run_id: str | None = None) -> None:
    """Append ``rows`` to the ``--out`` target (:mod:`hiersql.jobs.targets`), keyed per system by
    :func:`~hiersql.inputs.results.system_keys` (the rows of a system whose inputs Spark read itself, which the
    store does not hold: by a hash of those rows), in one transaction."""
    import dataclasses
    import hashlib
    import json
    import uuid

    from .. import __version__
    from ..inputs.results import system_keys
    from ..jobs.queue import now
    from ..jobs.targets import write_results

    identity = {"version": __version__, "dataset": args.dataset, "metrics": groups, "options": dataclasses.asdict(opts)}
    keys = system_keys(store, identity)
    for system in {r.system for r in rows} - set(keys):
        mine = [[r.metric, r.average, repr(r.value)] for r in rows if r.system == system]
        keys[system] = hashlib.sha256(json.dumps([identity, system, mine], sort_keys=True, default=str).encode()
                                      ).hexdigest()
    run_id, stamp = run_id or uuid.uuid4().hex[:12], now()
    write_results(args.out, [(run_id, args.dataset, r.system, r.metric, r.average or None, r.value, stamp,
                              keys[r.system], None, None) for r in rows], "--out", args.wait)


def write_per_instance(store, groups: dict[str, list[str]], opts, folder: str, engine=None) -> None:
    """``folder/<family>.csv`` with the per-instance table of every requested family that has one (computed
    by ``engine`` when given: the inputs Spark read are there, not in the store), each written whole or not at
    all (:func:`~hiersql.files.write_atomically`: an earlier run's file is replaced); a folder that cannot be
    made or written (a full disk) is an error naming ``--per-instance``."""
    from pathlib import Path

    from ..errors import InputError
    from ..files import write_atomically
    from ..measures import family

    out = Path(folder)
    try:
        out.mkdir(parents=True, exist_ok=True)
        for fam in groups:
            per_instance = getattr(family(fam), "per_instance", None)
            if per_instance is None:
                continue
            table = per_instance(store if engine is None else engine, opts)
            write_atomically(out / f"{fam}.csv", table.to_csv(index=False))
    except OSError as exc:
        raise InputError(f"cannot write the per-instance files ({exc.strerror or exc})", "--per-instance",
                         value=str(exc.filename or folder)) from None


def format_rows(rows: list, fmt: str) -> str:
    """Rows ``(system, metric, average, value)`` as an aligned table, CSV (full precision) or JSON."""
    if fmt == "csv":
        lines = ["system,metric,average,value"]
        lines += [f"{_csv(r[0])},{r[1]},{r[2]},{r[3]!r}" for r in rows]
        return "\n".join(lines) + "\n"
    if fmt == "json":
        return json_rows(("system", "metric", "average", "value"), rows) + "\n"
    from .common import aligned

    header = ("system", "metric", "average", "value")
    return aligned([header] + [(r[0], r[1], r[2], f"{r[3]:.4f}") for r in rows], left=3)


def json_rows(columns: tuple[str, ...], rows: list) -> str:
    """``rows`` as a JSON list of objects; a value that is not defined (NaN) is ``null`` (JSON has no NaN)."""
    import json
    import math

    def cell(v: object) -> object:
        return None if isinstance(v, float) and math.isnan(v) else v

    return json.dumps([{k: cell(v) for k, v in zip(columns, r, strict=True)} for r in rows], indent=1, default=str,
                      allow_nan=False)


def _csv(text: str) -> str:
    return '"' + text.replace('"', '""') + '"' if any(ch in text for ch in ',"\n') else text
