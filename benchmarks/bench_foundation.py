"""Foundation benchmark: ``hiersql evaluate`` end to end (a subprocess, imports included).

Times ``hiersql evaluate --taxonomy T --truth truth.tsv --pred sys=pred.tsv --metrics hp,hr,hf
--average micro,macro --format csv`` on the data sets written by ``benchmarks/generate.py`` and records, per
run, the wall time, the CPU time (user + sys) and the peak memory (max RSS) of the child process, read with
``os.wait4`` (the rusage of that one child), and the load average of the machine. Targets (2 cores):

- ``mesh``: MeSH DAG (27,900 nodes) + 20,000 instances x 3 labels: <= 1.0 s;
- ``big``: 325,000-node DAG + 450,000 instances x 3.3 labels: <= 20 s and <= 4 GiB.

``--stages`` also runs the same work through the Python API in a child process and prints the wall and CPU
time of each step (reading the taxonomy, loading it with its closure, the truth, the predictions, the
measures), to find hot spots.

Run it once at the end (the machine is shared)::

    .venv/bin/python benchmarks/bench_foundation.py --cases mesh,big --stages

Missing data sets are generated first with the arguments of :data:`CASES`. The results are printed as Markdown;
their figures replace the rows of the benchmark's table in ``benchmarks/RESULTS.md`` (which holds the current
figures only).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
GIB = 1024**3

CASES = {
    "mesh": {
        "generate": ["--taxonomy", str(REPO / ".." / "shared" / "data" / "mesh" / "mesh_hierarchy_int.txt"),
                     "--instances", "20000", "--labels", "3", "--seed", "1"],
        "title": "MeSH DAG (27,900 nodes) + 20,000 instances x 3 labels",
        "max_seconds": 1.0,
        "max_bytes": None,
        "repeat": 3,
    },
    "big": {
        "generate": ["--nodes", "325000", "--depth", "14", "--multi-parent", "0.2", "--instances", "450000",
                     "--labels", "3.3", "--seed", "1"],
        "title": "325,000-node DAG (depth 14, 20 % multi-parent) + 450,000 instances x 3.3 labels",
        "max_seconds": 20.0,
        "max_bytes": 4 * GIB,
        "repeat": 1,
    },
}


@dataclass
class Measure:
    """One timed child process."""

    wall: float
    cpu: float
    max_rss: int  # bytes
    load: float  # 1-minute load average when it ended
    returncode: int
    stdout: str
    stderr: str


def run_child(cmd: list[str]) -> Measure:
    """Run ``cmd``; wall time around it and its own rusage (``os.wait4``), not that of other children."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=REPO)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Measure(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, os.getloadavg()[0],
                       proc.returncode, out.read(), err.read())


def hiersql_command() -> list[str]:
    """The installed ``hiersql`` script next to this Python, else ``python -m hiersql``."""
    script = Path(sys.executable).with_name("hiersql")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "hiersql"]


def ensure_data(name: str, data_root: Path) -> dict:
    """``meta.json`` of the case's data set, generating the data set first when it is missing."""
    folder = data_root / name
    if not (folder / "meta.json").is_file():
        cmd = [sys.executable, str(HERE / "generate.py"), *CASES[name]["generate"], "--out", str(folder)]
        print("generating:", " ".join(cmd), file=sys.stderr)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=REPO)
    return json.loads((folder / "meta.json").read_text(encoding="utf-8"))


def evaluate_command(meta: dict, folder: Path) -> list[str]:
    return [*hiersql_command(), "evaluate", "--taxonomy", meta["taxonomy"], "--truth", str(folder / "truth.tsv"),
            "--pred", f"sys={folder / 'pred.tsv'}", "--metrics", "hp,hr,hf", "--average", "micro,macro",
            "--format", "csv"]


def check_output(m: Measure) -> str:
    """Empty when the run succeeded with the 6 expected CSV rows, else what went wrong."""
    if m.returncode != 0:
        return f"exit status {m.returncode}: {m.stderr.strip().splitlines()[-1:] or ''}"
    rows = [r for r in m.stdout.splitlines()[1:] if r.strip()]
    return "" if len(rows) == 6 else f"expected 6 result rows, got {len(rows)}"


STAGES_CHILD = """
import sys, time
T = [time.perf_counter(), time.process_time()]
def lap(step):
    w, c = time.perf_counter(), time.process_time()
    print(f"{step}\\t{w - T[0]:.3f}\\t{c - T[1]:.3f}"); T[:] = [w, c]
from hiersql.inputs.store import Store
from hiersql.inputs.taxonomy import Taxonomy
from hiersql.measures import Options, set_based
lap("import hiersql")
tax, folder = sys.argv[1], sys.argv[2]
taxonomy = Taxonomy.from_file(tax); lap("Taxonomy.from_file")
store = Store(); lap("Store() (imports duckdb)")
store.load_taxonomy(taxonomy); lap("Store.load_taxonomy (edges, nodes, closure)")
store.add_truth(folder + "/truth.tsv"); lap("Store.add_truth")
store.add_predictions("sys", folder + "/pred.tsv"); lap("Store.add_predictions")
set_based.evaluate(store, ["hierarchical_precision", "hierarchical_recall", "hierarchical_f1"], Options())
lap("set_based.evaluate (hp, hr, hf micro+macro)")
del store
Store().load(tax, folder + "/truth.tsv", {"sys": folder + "/pred.tsv"})
lap("again: Store.load (the steps above, taxonomy and closure on a thread while labels are read, as the CLI)")
"""


def stages(meta: dict, folder: Path) -> tuple[list[tuple[str, float, float]], Measure]:
    """Wall and CPU seconds of each step of the Python API path, in a child process."""
    m = run_child([sys.executable, "-c", STAGES_CHILD, meta["taxonomy"], str(folder)])
    if m.returncode != 0:
        raise RuntimeError(f"stage run failed: {m.stderr.strip()}")
    rows = [line.split("\t") for line in m.stdout.splitlines() if line.count("\t") == 2]
    return [(step, float(wall), float(cpu)) for step, wall, cpu in rows], m


def section(results: list[dict], argv: list[str]) -> str:
    """The Markdown section for ``benchmarks/RESULTS.md``."""
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "", "## Foundation: `hiersql evaluate` end to end — `benchmarks/bench_foundation.py`", "",
        f"Run {now} on the shared 2-core / 24 GiB machine (other helpers busy: see the load column; wall times",
        "are inflated accordingly, CPU = user + sys of the child). Command of the benchmark:", "",
        "    .venv/bin/python benchmarks/bench_foundation.py " + " ".join(argv), "",
        "Each case times, as a subprocess with all imports:", "",
        "    hiersql evaluate --taxonomy T --truth truth.tsv --pred sys=pred.tsv --metrics hp,hr,hf \\",
        "        --average micro,macro --format csv", "",
        "| case | data | wall (s) | CPU (s) | peak RSS (MiB) | load avg | target | met |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        for m in r["runs"]:
            target = f"<= {r['max_seconds']:g} s" + (f", <= {r['max_bytes'] / GIB:g} GiB" if r["max_bytes"] else "")
            lines.append(
                f"| {r['case']} | {r['title']} | {m.wall:.2f} | {m.cpu:.2f} | {m.max_rss / 2**20:,.0f} |"
                f" {m.load:.1f} | {target} | {'yes' if r['met'](m) else 'no'}"
                f"{'' if not r['error'] else ' (' + r['error'] + ')'} |"
            )
    for r in results:
        if r.get("stages"):
            lines += ["", f"Python API steps, {r['case']} (one child process):", "",
                      "| step | wall (s) | CPU (s) |", "|---|---|---|"]
            lines += [f"| {step} | {wall:.2f} | {cpu:.2f} |" for step, wall, cpu in r["stages"]]
            lines.append(f"| total (peak RSS {r['stages_rss'] / 2**20:,.0f} MiB) | {r['stages_wall']:.2f} | |")
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default="mesh,big", help=f"comma-separated, from {', '.join(CASES)}")
    p.add_argument("--repeat", type=int, help="CLI runs per case (default: 3 for mesh, 1 for big)")
    p.add_argument("--stages", action="store_true", help="also time the Python API step by step")
    p.add_argument("--data", default=str(HERE / "data"), help="folder of the generated data sets")
    args = p.parse_args(argv)
    unknown = set(args.cases.split(",")) - CASES.keys()
    if unknown:
        p.error(f"unknown case(s) {sorted(unknown)}")
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    # the package byte-compiled, as installed from a wheel (here PYTHONDONTWRITEBYTECODE may be set)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(__file__).resolve().parents[1] / "hiersql")],
                   check=True)
    results = []
    for name in args.cases.split(","):
        case = CASES[name]
        folder = Path(args.data) / name
        meta = ensure_data(name, Path(args.data))
        runs = [run_child(evaluate_command(meta, folder)) for _ in range(args.repeat or case["repeat"])]
        error = next((e for e in map(check_output, runs) if e), "")

        def met(m: Measure, case: dict = case, error: str = error) -> bool:
            small = not case["max_bytes"] or m.max_rss <= case["max_bytes"]
            return not error and m.wall <= case["max_seconds"] and small

        result = {"case": name, "runs": runs, "error": error, "met": met, **case}
        if args.stages:
            result["stages"], m = stages(meta, folder)
            result["stages_wall"], result["stages_rss"] = m.wall, m.max_rss
        results.append(result)
        for m in runs:
            print(f"{name}: wall {m.wall:.2f} s, CPU {m.cpu:.2f} s, peak RSS {m.max_rss / 2**20:,.0f} MiB,"
                  f" load {m.load:.1f}{', ' + error if error else ''}", file=sys.stderr)
    print(section(results, argv))
    return 0 if all(not r["error"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
