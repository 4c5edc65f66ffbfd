"""``hiersql jobs run JOBFILE``: evaluate every dataset of a batch job file, resumable (see hiersql.jobs)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("jobs", help="run a batch evaluation job file (TOML) into a DuckDB results file")
    p.add_argument("action", choices=("run", "check"), help="run the job, or only check the job file")
    p.add_argument("jobfile", help="TOML job file")
    p.add_argument("--force", action="store_true", help="recompute datasets already stored")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import sys

    from ..jobs import load_job, run_job

    job = load_job(args.jobfile)
    if args.action == "check":
        print(f"{args.jobfile}: {len(job.datasets)} dataset(s), results in {job.db}")
        return 0
    bar = None
    if sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=len(job.datasets), desc="datasets", file=sys.stderr)

    def report(name: str, status: str) -> None:
        if bar:
            bar.update(1)
        print(f"{name}: {status}")

    run_job(job, force=args.force, on_dataset=report)
    if bar:
        bar.close()
    print(f"results in {job.db}")
    return 0
