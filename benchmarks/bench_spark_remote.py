"""``hiersql evaluate --metrics all`` on a GermEval B sample: Spark local, on a standalone cluster, through Spark
Connect, and DuckDB, in the same minutes.

    .venv/bin/python benchmarks/bench_spark_remote.py [--instances 200] [--runs 2]

Writes the sample (the first ``--instances`` instances of the truth and three systems' predictions of them, as
``tests/test_spark_remote.py`` does) into a temporary folder, starts a standalone master and worker (two cores)
and a Spark Connect server on that cluster as the tests do (``tests/_spark_cluster.py``: pyspark's own scripts,
loopback), then times each command in a process of its own, the modes alternated ``--runs`` times: its wall
time (the JVM's start included: the command starts one, except through Spark Connect; the CPU time of the
processes is not taken: the JVMs and executors are not the command's children that it waits for). The values of
each run are checked against DuckDB's to 1e-9. ``hiersql.partitionRows`` is left at its default: the sample's steps are
solved on the driver, as a user's run of that size is.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests._spark_cluster import connect_server, spark_env, standalone_cluster  # noqa: E402

SYSTEMS = ("Averbis__BOHB_CNN", "LT-UHH__baseline", "twistbytes__thresholding")


def write_sample(data: Path, folder: Path, instances: int) -> list[str]:
    """The input flags of the sample, its files written into ``folder``."""
    canonical = data / "canonical"
    (folder / "taxonomy.tsv").write_bytes((canonical / "taxonomy.tsv").read_bytes())
    truth = (canonical / "truth_b.tsv").read_text().splitlines(keepends=True)
    kept = set(list(dict.fromkeys(line.split("\t")[0] for line in truth))[:instances])
    args = ["--taxonomy", str(folder / "taxonomy.tsv")]
    for flag, name, lines in [("--truth", "truth", truth), *(
            ("--pred", s, (canonical / "pred_b" / f"{s}.tsv").read_text().splitlines(keepends=True))
            for s in SYSTEMS)]:
        (folder / f"{name}.tsv").write_text("".join(line for line in lines if line.split("\t")[0] in kept))
        args += [flag, str(folder / f"{name}.tsv")]
    return [*args, "--metrics", "all", "--format", "csv"]


def timed(args: list[str], folder: Path) -> tuple[float, dict[tuple[str, str, str], float]]:
    """Wall seconds of ``hiersql evaluate ARGS`` in a process of its own, and its values."""
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "hiersql", "evaluate", *args], capture_output=True, text=True,
                         cwd=folder, env=spark_env(folder), check=False)
    wall = time.perf_counter() - start
    if run.returncode:
        raise SystemExit(f"failed: {' '.join(args[-6:])}\n{run.stderr}")
    values = {tuple(line.split(",")[:3]): float(line.split(",")[3]) for line in run.stdout.splitlines()[1:]}
    return wall, values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--instances", type=int, default=200)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hiersql-bench-remote-") as tmp:
        folder = Path(tmp)
        sample = write_sample(args.data, folder, args.instances)
        with standalone_cluster(folder) as master, connect_server(folder, master, "spark.cores.max=1",
                                                                  "spark.sql.shuffle.partitions=4") as remote:
            modes = {"duckdb": [], "local[2]": ["--engine", "spark", "--spark-master", "local[2]"],
                     "standalone": ["--engine", "spark", "--spark-master", master, "--spark-conf", "spark.cores.max=1"],
                     "connect": ["--engine", "spark", "--spark-remote", remote]}
            times: dict[str, list[float]] = {mode: [] for mode in modes}
            want = None
            for _ in range(args.runs):
                for mode, flags in modes.items():
                    wall, values = timed([*sample, *flags], folder)
                    want = want or values
                    assert values.keys() == want.keys() and all(
                        math.isclose(values[k], want[k], abs_tol=1e-9) or values[k] != values[k]
                        for k in want), mode
                    times[mode].append(wall)
                    print(f"{mode:>10}: wall {wall:6.1f} s", flush=True)
    for mode, runs in times.items():
        walls = sorted(runs)
        print(f"{mode:>10}: wall {walls[0]:.1f}-{walls[-1]:.1f} s over {len(runs)} runs")


if __name__ == "__main__":
    main()
