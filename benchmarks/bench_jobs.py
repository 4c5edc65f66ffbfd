"""Time one batch job of GermEval 2019 subtask A + subtask B + transposon (46 systems) against the three
``hiersql evaluate`` runs one after another, and the job with ``--workers 2``.

    .venv/bin/python benchmarks/bench_jobs.py [--rounds 5] [--metrics hp,hr,hf]

Each round runs the three variants in a rotating order (the host is noisy: compare within rounds); every job
run starts on a new queue file, so that every unit is computed. ``hiersql evaluate`` stops at an empty
prediction file (``pred_a/twistbytes__thresholding.tsv``), so its subtask-A run is given the other 20 files;
the job evaluates all 21 (the empty one as a system that predicted nothing). The job's values are checked
against evaluate's (1e-12). Also timed: a re-run of the job with nothing changed (every unit skipped). Each
figure is the wall time and the CPU time (user + system, all threads and child processes) of the processes
started; each round prints the load average of the host and the ratio of ``--workers 2`` to ``--workers 1``
within it.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "canonical"
DATASETS = (("a", "taxonomy.tsv", "truth_a.tsv", "pred_a"), ("b", "taxonomy.tsv", "truth_b.tsv", "pred_b"),
            ("transposon", "taxonomy_transposon.tsv", "truth_transposon.tsv", "pred_transposon"))
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def hiersql(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "hiersql", *args], capture_output=True, text=True, env=ENV)
    if done.returncode:
        raise SystemExit(f"hiersql {' '.join(args[:2])} failed: {done.stderr}")
    return done.stdout


def timed(fn) -> tuple[float, float]:
    """Wall time and CPU time (user + system of the child processes, every thread) of ``fn()``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    fn()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--metrics", default="hp,hr,hf")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-jobs-"))
    metrics = ", ".join(f'"{m}"' for m in args.metrics.split(","))
    spec = folder / "job.toml"
    spec.write_text(f"metrics = [{metrics}]\n" + "".join(
        f'[[dataset]]\nname = "{name}"\ntaxonomy = "{DATA / tax}"\ntruth = "{DATA / truth}"\n'
        f'predictions = "{DATA / preds}/*.tsv"\n' for name, tax, truth, preds in DATASETS), encoding="utf-8")
    n_units = sum(len(list((DATA / preds).glob("*.tsv"))) for *_, preds in DATASETS)

    def evaluate_all() -> dict:
        values = {}
        for name, tax, truth, preds in DATASETS:
            files = [p for p in sorted((DATA / preds).glob("*.tsv")) if p.stat().st_size]
            out = hiersql("evaluate", "--taxonomy", str(DATA / tax), "--truth", str(DATA / truth), "--metrics",
                          args.metrics, "--format", "csv", *[a for p in files for a in ("--pred", str(p))])
            values |= {(name, r["system"], r["metric"], r["average"]): float(r["value"])
                       for r in csv.DictReader(io.StringIO(out))}
        return values

    runs = [0]

    def job(workers: int) -> None:
        runs[0] += 1
        hiersql("jobs", "run", str(spec), "--queue", str(folder / f"q{runs[0]}.duckdb"), "--workers", str(workers))

    reference = evaluate_all()
    job(1)
    stored = {(r["dataset"], r["system"], r["metric"], r["average"]): float(r["value"]) for r in csv.DictReader(
        io.StringIO(hiersql("jobs", "results", "--queue", str(folder / "q1.duckdb"), "--format", "csv")))}
    worst = max(abs(stored[k] - v) for k, v in reference.items())
    assert worst <= 1e-12, worst
    print(f"{n_units} units; job values = evaluate values (max |diff| {worst:.1e}); "
          f"{len(stored) - len(reference)} more values in the job (the empty system)")

    variants = {"3 x hiersql evaluate": evaluate_all, "jobs run": lambda: job(1),
                "jobs run --workers 2": lambda: job(2)}
    times: dict[str, list[float]] = {name: [] for name in variants}
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    names = list(variants)
    for r in range(args.rounds):
        order = names[r % 3:] + names[:r % 3]
        for name in order:
            wall, used = timed(variants[name])
            times[name].append(wall)
            cpu[name].append(used)
        print(f"round {r + 1} (load {os.getloadavg()[0]:.1f}): "
              + ", ".join(f"{n} {times[n][-1]:.2f} s ({cpu[n][-1]:.2f} CPU-s)" for n in names)
              + f"; workers 2 / workers 1: {times[names[2]][-1] / times[names[1]][-1]:.2f}", flush=True)
    base = times[names[0]]
    for name in names:
        ratios = [t / b for t, b in zip(times[name], base, strict=True)]
        print(f"{name:<24} median {statistics.median(times[name]):6.2f} s  (min {min(times[name]):.2f}),"
              f" ratio to evaluate: median {statistics.median(ratios):.2f};"
              f" CPU median {statistics.median(cpu[name]):.2f} s")
    pairs = [b / a for a, b in zip(times[names[1]], times[names[2]], strict=True)]
    print(f"--workers 2 / --workers 1 within rounds: median {statistics.median(pairs):.2f}"
          f" (min {min(pairs):.2f}, max {max(pairs):.2f})")
    rerun, used = timed(lambda: hiersql("jobs", "run", str(spec), "--queue", str(folder / "q1.duckdb")))
    print(f"re-run, nothing changed (every unit skipped): {rerun:.2f} s ({used:.2f} CPU-s)")


if __name__ == "__main__":
    main()
