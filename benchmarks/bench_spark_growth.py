"""How Spark's work and the driver's memory grow from 100,000 to 1,000,000 instances (issue 41, item 3: the total
task time at most linear, the driver's peak at most 1.5x).

    .venv/bin/python benchmarks/bench_spark_growth.py [--metrics hp,hr,hf] [--cases dag50k,dag50k_1m] \\
        [--worker-memory 8g] [--timeout 3600]

The cases are those of ``bench_warehouse.py`` (written there by ``generate.py`` when missing): the 50,000-node
DAG with 100,000 and 1,000,000 instances, 4 systems in one Parquet table. A standalone master and worker
(``tests/_spark_cluster.py``: pyspark's own scripts on loopback, the worker with both cores) run every case;
per case one ``hiersql evaluate --engine spark --spark-master URL`` reads the Parquet itself, in a process of
its own, with an event log. Printed per case, one Markdown row: the wall time; the total time of the tasks
(``Executor Run Time`` summed over the event log's task ends) and their CPU time; the driver's peak memory (the
largest sum of the resident sets of the command and its descendants, the driver's JVM among them, polled every
0.2 s); the result rows; then the ratios of the last case to the first.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_warehouse import CASES  # noqa: E402

from tests._spark_cluster import event_log_settings, spark_env, standalone_cluster  # noqa: E402


def tree_rss(pid: int) -> int:
    """The resident bytes of process ``pid`` and its descendants (``/proc``)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            rss[int(entry.name)] = int(fields[21]) * 4096
            children.setdefault(int(fields[1]), []).append(int(entry.name))
        except (OSError, IndexError, ValueError):
            continue
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo += children.get(p, [])
    return total


def task_times(folder: Path) -> tuple[float, float, int]:
    """Executor run time and CPU time (seconds) summed over the tasks of the event logs in ``folder``, and
    the number of tasks."""
    run = cpu = tasks = 0
    for log in folder.iterdir():
        for line in log.read_text().splitlines():
            event = json.loads(line)
            if event["Event"] == "SparkListenerTaskEnd" and event.get("Task Metrics"):
                run += event["Task Metrics"]["Executor Run Time"]
                cpu += event["Task Metrics"]["Executor CPU Time"]
                tasks += 1
    return run / 1e3, cpu / 1e9, tasks


def one_case(case: str, master: str, metrics: str, env: dict[str, str], timeout: float) -> dict:
    folder = HERE / "data" / case
    if not (folder / "predictions.parquet").exists():
        subprocess.run([sys.executable, str(HERE / "generate.py"), *CASES[case], "--out", str(folder)], check=True,
                       stdout=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory(prefix=f"growth-{case}-") as tmp:
        events = Path(tmp) / "events"
        conf = [arg for setting in event_log_settings(events) for arg in ("--spark-conf", setting)]
        args = [sys.executable, "-m", "hiersql", "evaluate", "--engine", "spark", "--spark-master", master, *conf,
                "--taxonomy", str(folder / "taxonomy.tsv"), "--truth", str(folder / "truth.parquet"),
                "--pred", str(folder / "predictions.parquet"), "--system-col", "system", "--metrics", metrics,
                "--format", "csv"]
        start = time.monotonic()
        with open(Path(tmp) / "out.csv", "w") as out, open(Path(tmp) / "err.txt", "w") as err:
            process = subprocess.Popen(args, stdout=out, stderr=err, env=env)
            peak = 0
            while process.poll() is None:
                peak = max(peak, tree_rss(process.pid))
                if time.monotonic() - start > timeout:
                    process.kill()
                time.sleep(0.2)
        wall = time.monotonic() - start
        run, cpu, tasks = task_times(events)
        rows = len((Path(tmp) / "out.csv").read_text().splitlines()) - 1
        err_text = (Path(tmp) / "err.txt").read_text().strip()
        if process.returncode:
            print(f"{case}: exit {process.returncode}:\n{err_text[:3000]}", file=sys.stderr)
        last = err_text.splitlines()[-1:] or [""]
        return {"case": case, "wall": wall, "task run": run, "task cpu": cpu, "tasks": tasks,
                "driver peak GiB": peak / 2**30, "exit": process.returncode, "rows": rows, "last": last[0][:120]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--metrics", default="hp,hr,hf")
    parser.add_argument("--cases", default="dag50k,dag50k_1m")
    parser.add_argument("--worker-memory", default="8g")
    parser.add_argument("--timeout", type=float, default=3600.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="growth-cluster-") as tmp:
        env = spark_env(Path(tmp))
        with standalone_cluster(Path(tmp), cores=2, memory=args.worker_memory) as master:
            results = [one_case(case, master, args.metrics, env, args.timeout) for case in args.cases.split(",")]
    keys = list(results[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + " --- |" * len(keys))
    for result in results:
        print("| " + " | ".join(f"{v:.2f}" if isinstance(v, float) else str(v) for v in result.values()) + " |")
    first, last = results[0], results[-1]
    for key in ("wall", "task run", "task cpu", "driver peak GiB"):
        print(f"{key}: {last[key] / first[key]:.2f}x from {first['case']} to {last['case']}")


if __name__ == "__main__":
    main()
