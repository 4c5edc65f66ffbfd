"""Benchmark: ``hiersql compare`` and ``hiersql report`` on GermEval 2019 subtask B (issue 18).

The 19 submissions that have a subtask B section, 6 measures (hF, LCA-F, GIE, MGIA, example F1, label F1; micro
averages), 1,000 bootstrap resamples and 1,000 permutations, all 171 pairs of systems. Each command runs in a
new process under ``/usr/bin/time -v`` (wall time, CPU time, peak resident memory), the two alternated; then,
in this process, the time of each step of the comparison (per-instance tables, statistics). Targets: compare
≤ 10 s, report ≤ 15 s; ``hiersql evaluate`` of the same measures runs alternated with them as the baseline
(the statistics cannot be faster than the measures). Usage::

    .venv/bin/python benchmarks/bench_compare.py [--repeat N] [--steps]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GERMEVAL = (ROOT / ".." / "shared" / "data" / "germeval2019").resolve()
PYTHON = sys.executable
METRICS = "hf,lca_f1,gie,mgia,example_f1,label_f1"
TARGETS = {"compare": 10.0, "report": 15.0}  # "evaluate" (the same measures, no statistics) is the baseline


def submissions() -> list[Path]:
    """The submission files with a subtask B section (19 of 22)."""
    return [p for p in sorted((GERMEVAL / "submissions").glob("*.txt"))
            if "subtask_b" in p.read_text(encoding="utf-8")]


def inputs() -> list[str]:
    """The input and measure arguments shared by evaluate, compare and report."""
    args = ["--taxonomy", str(GERMEVAL / "hierarchy.txt"), "--truth", str(GERMEVAL / "blurbs_test_label.txt"),
            "--labels-format", "germeval-b", "--metrics", METRICS, "--average", "micro"]
    for path in submissions():
        args += ["--pred", str(path)]
    return args


def timed(cmd: list[str]) -> tuple[float, float, float]:
    """Run ``cmd`` under /usr/bin/time -v: (wall seconds, CPU seconds, peak RSS MiB)."""
    proc = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True, check=True, cwd=ROOT)
    h, m, s = (float(x) if x else 0.0 for x in re.search(
        r"Elapsed \(wall clock\) time .*: (?:(\d+):)?(\d+):([\d.]+)", proc.stderr).groups())
    cpu = sum(float(re.search(rf"{kind} time \(seconds\): ([\d.]+)", proc.stderr).group(1))
              for kind in ("User", "System"))
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr).group(1))
    return 3600 * h + 60 * m + s, cpu, rss / 1024


def steps() -> None:
    """The time of each step, in this process."""
    from hiersql import Evaluator
    from hiersql.analyses import stats
    from hiersql.analyses.compare import _fill_tables, _matrices, instance_statistic
    from hiersql.api.evaluator import make_options

    start = time.perf_counter()
    ev = Evaluator(GERMEVAL / "hierarchy.txt").add_truth(GERMEVAL / "blurbs_test_label.txt", "germeval-b")
    ev.add_predictions_many({p.stem: p for p in submissions()}, "germeval-b")
    print(f"  load: {time.perf_counter() - start:.2f} s")
    opts = make_options(average="micro")
    systems = sorted(ev.systems)
    for family in ("set_based", "lca", "pair_based", "flat"):
        start = time.perf_counter()
        _fill_tables(ev.store, {family}, opts, {})
        print(f"  per-instance table {family}: {time.perf_counter() - start:.2f} s")
    tables: dict = {}
    start = time.perf_counter()
    _fill_tables(ev.store, {"set_based", "lca", "pair_based", "flat"}, opts, tables)
    print(f"  all four tables, SQL beside Python: {time.perf_counter() - start:.2f} s")
    num, den = _matrices(ev.store, instance_statistic("hierarchical_f1", "micro", opts), opts, systems, tables)
    for name, run in (("bootstrap", lambda: stats.paired_bootstrap(num, den, 1000, 0)),
                      ("permutation", lambda: stats.paired_permutation_test(num, den, 1000, 0)),
                      ("sign", lambda: stats.micro_sign_test(num / den)),
                      ("wilcoxon", lambda: stats.wilcoxon_test(num / den))):
        start = time.perf_counter()
        run()
        print(f"  {name} (one measure, 171 pairs): {time.perf_counter() - start:.2f} s")
    ev.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--steps", action="store_true", help="also time the steps in this process")
    args = parser.parse_args()
    found = submissions()
    print(f"GermEval B: {len(found)} systems, {len(found) * (len(found) - 1) // 2} pairs, measures {METRICS}")
    with tempfile.TemporaryDirectory() as tmp:
        statistics_args = ["--bootstrap", "1000"]
        commands = {
            "evaluate": [PYTHON, "-m", "hiersql", "evaluate", *inputs(), "--format", "csv"],
            "compare": [PYTHON, "-m", "hiersql", "compare", *inputs(), *statistics_args, "--format", "csv"],
            "report": [PYTHON, "-m", "hiersql", "report", *inputs(), *statistics_args, "--out",
                       str(Path(tmp) / "report")],
        }
        runs: dict[str, list[tuple[float, float, float]]] = {name: [] for name in commands}
        for _ in range(args.repeat):
            for name, cmd in commands.items():  # alternated: the host's slow periods hit both
                runs[name].append(timed(cmd))
        for name, results in runs.items():
            walls = [r[0] for r in results]
            target = (f" target {TARGETS[name]:.0f} s, within it {sum(w <= TARGETS[name] for w in walls)} of"
                      f" {len(walls)};" if name in TARGETS else "")
            print(f"{name}: wall {', '.join(f'{w:.2f}' for w in walls)} s (median {statistics.median(walls):.2f});"
                  f"{target} CPU median {statistics.median(r[1] for r in results):.2f} s;"
                  f" peak RSS {max(r[2] for r in results):.0f} MiB")
    if args.steps:
        steps()


if __name__ == "__main__":
    main()
