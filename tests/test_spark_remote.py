"""Spark beyond one process, as users run it: ``hiersql evaluate`` in a process of its own on a standalone
cluster (``--spark-master spark://``, a master and a worker started from pyspark's jars) and through a Spark
Connect server on that cluster (``--spark-remote sc://``, started by pyspark's ``start-connect-server.sh``):
every family gives DuckDB's values on a GermEval B sample, the Python steps that declare ``partition_by`` are
solved in the cluster's executors (their keyed inputs cross ``hiersql.partitionRows``; Spark's event log says
where each task ran), and no stage is stored in a folder of the driver's disk, which the executors would not
see. Marked slow: three JVMs start (master, worker, server) besides each run's."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path

import pytest

from hiersql.engines.spark.session import SMALL_INPUT_JAVA_OPTIONS, SMALL_INPUT_JIT
from hiersql.plan import Row
from tests._engine_cases import ALL_FAMILIES, GERMEVAL_SYSTEMS, assert_rows_match, families_of
from tests._spark_cluster import (
    connect_server,
    event_log_settings,
    free_port,
    python_step_tasks,
    spark_env,
    standalone_cluster,
)

pytestmark = [pytest.mark.spark, pytest.mark.slow]

INSTANCES = 200
# hiersql.partitionRows: below the keyed rows the sample gives the pairings, the HCM path cover and its matching
PARTITION_ROWS = 100
# each application one core of the worker's two: the cluster's and the Spark Connect server's run in either order
ONE_CORE = "spark.cores.max=1"


@pytest.fixture(scope="module")
def sample(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The input flags of GermEval B's first ``INSTANCES`` instances of the truth and three systems' predictions
    of them, written from the real data."""
    canonical, folder = data_dir / "canonical", tmp_path_factory.mktemp("sample")
    (folder / "taxonomy.tsv").write_bytes((canonical / "taxonomy.tsv").read_bytes())
    truth = (canonical / "truth_b.tsv").read_text().splitlines(keepends=True)
    kept = set(list(dict.fromkeys(line.split("\t")[0] for line in truth))[:INSTANCES])

    def sampled(lines: list[str], path: Path) -> str:
        path.write_text("".join(line for line in lines if line.split("\t")[0] in kept))
        return str(path)

    args = ["--taxonomy", str(folder / "taxonomy.tsv"), "--truth", sampled(truth, folder / "truth.tsv")]
    for system in GERMEVAL_SYSTEMS:
        lines = (canonical / "pred_b" / f"{system}.tsv").read_text().splitlines(keepends=True)
        args += ["--pred", sampled(lines, folder / f"{system}.tsv")]
    return [*args, "--metrics", "all"]


@pytest.fixture(scope="module")
def want(sample: list[str], tmp_path_factory: pytest.TempPathFactory) -> list[Row]:
    """The rows of the embedded DuckDB run of the sample (every family)."""
    run = evaluate(sample, tmp_path_factory.mktemp("duckdb"))
    assert run.returncode == 0, run.stderr
    return csv_rows(run.stdout)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    """A standalone master and worker (two cores) on loopback: its ``spark://`` URL."""
    with standalone_cluster(tmp_path_factory.mktemp("cluster")) as url:
        yield url


@pytest.fixture(scope="module")
def connect(cluster: str, tmp_path_factory: pytest.TempPathFactory):
    """A Spark Connect server on the cluster, writing its event log: its ``sc://`` URL and the log's folder. Set
    up for small inputs as hiersql sets up the JVMs it starts for them (few shuffle partitions, the JIT's quick
    compiler alone)."""
    folder = tmp_path_factory.mktemp("connect")
    events = folder / "events"
    with connect_server(folder, cluster, ONE_CORE, "spark.sql.shuffle.partitions=4",
                        f"spark.driver.defaultJavaOptions={SMALL_INPUT_JAVA_OPTIONS}",
                        f"spark.executor.defaultJavaOptions={SMALL_INPUT_JIT}", *event_log_settings(events)) as url:
        yield url, events


class Evaluation:
    """``hiersql evaluate ARGS --format csv`` started in a process of its own, its output and temporary files in
    ``folder``; :meth:`result` waits for it."""

    def __init__(self, args: list[str], folder: Path) -> None:
        self.args, self.folder = args, folder
        with (folder / "stdout").open("w") as out, (folder / "stderr").open("w") as err:
            self.process = subprocess.Popen([sys.executable, "-m", "hiersql", "evaluate", *args, "--format", "csv"],
                                            stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=folder,
                                            env=spark_env(folder))

    def result(self) -> subprocess.CompletedProcess:
        code = self.process.wait(900)
        return subprocess.CompletedProcess(self.args, code, (self.folder / "stdout").read_text(),
                                           (self.folder / "stderr").read_text())

    def stop(self) -> None:
        """End the process (by its id) if it still runs."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def on_cluster(sample: list[str], cluster: str, tmp_path_factory: pytest.TempPathFactory):
    """The sample evaluated on the cluster, started (not waited for), and the folder of its event log."""
    folder = tmp_path_factory.mktemp("standalone")
    events = folder / "events"
    settings = [ONE_CORE, f"hiersql.partitionRows={PARTITION_ROWS}", *event_log_settings(events)]
    run = Evaluation([*sample, "--engine", "spark", "--spark-master", cluster,
                      *(arg for setting in settings for arg in ("--spark-conf", setting))], folder)
    yield run, events
    run.stop()


@pytest.fixture(scope="module")
def through_connect(sample: list[str], connect: tuple[str, Path], tmp_path_factory: pytest.TempPathFactory):
    """The sample evaluated through the Spark Connect server, started (not waited for), and the folder of the
    server's event log."""
    url, events = connect
    run = Evaluation([*sample, "--engine", "spark", "--spark-remote", url,
                      "--spark-conf", f"hiersql.partitionRows={PARTITION_ROWS}"], tmp_path_factory.mktemp("remote"))
    yield run, events
    run.stop()


def evaluate(args: list[str], folder: Path) -> subprocess.CompletedProcess:
    """``hiersql evaluate ARGS --format csv`` in a process of its own, waited for."""
    return Evaluation(args, folder).result()


def csv_rows(text: str) -> list[Row]:
    return [Row(r["system"], r["metric"], r["average"], float(r["value"])) for r in csv.DictReader(io.StringIO(text))]


def assert_every_family_in_the_executors(run: subprocess.CompletedProcess, want: list[Row], events: Path) -> None:
    """``run`` printed DuckDB's rows ``want`` (every family); its event log shows the three partitioned steps
    of the default options solved in the executors, and no query that reads a stage folder of hiersql's."""
    assert run.returncode == 0, run.stderr
    got = csv_rows(run.stdout)
    assert families_of(got) == ALL_FAMILIES
    assert_rows_match(got, want)
    stages, plans = python_step_tasks(events)
    assert len(stages) >= 3 and all(stages.values())  # pairings, path_cover, matching
    assert "driver" not in {executor for tasks in stages.values() for executor in tasks}
    assert plans and not any("hiersql-stages-" in plan for plan in plans)


def test_every_family_on_a_standalone_cluster(want, on_cluster, through_connect):
    """The run through Spark Connect is started too (its fixture), so that the two compute side by side."""
    run, events = on_cluster
    assert_every_family_in_the_executors(run.result(), want, events)


def test_every_family_through_spark_connect(want, through_connect):
    run, events = through_connect
    assert_every_family_in_the_executors(run.result(), want, events)


def test_a_spark_remote_that_does_not_answer_is_exit_2_naming_it(sample, cluster, tmp_path):
    """Nothing listens: said before pyspark is asked; a server that is not Spark Connect's (the cluster's
    master): said within seconds, not after the client's ten minutes of retries. One line each, exit 2."""
    for url, reason in ((f"sc://127.0.0.1:{free_port()}/;token=secret", "no Spark Connect server answers there"),
                        (f"sc://{cluster.removeprefix('spark://')}", "not a Spark Connect server that answers")):
        run = evaluate([*sample, "--engine", "spark", "--spark-remote", url], tmp_path)
        assert run.returncode == 2 and run.stdout == ""
        assert run.stderr.startswith(f"hiersql: error: --spark-remote: {reason} (") and len(
            run.stderr.splitlines()) == 1, run.stderr
        assert "secret" not in run.stderr


def test_a_setting_the_spark_connect_server_refuses_is_exit_2_naming_it(sample, connect, tmp_path):
    """A setting of the server's JVM cannot change once it runs: one line naming that --spark-conf, exit 2."""
    url, _ = connect
    run = evaluate([*sample, "--engine", "spark", "--spark-remote", url, "--spark-conf", "spark.driver.memory=3g"],
                   tmp_path)
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr.startswith("hiersql: error: --spark-conf: the Spark Connect server refuses it: ") and len(
        run.stderr.splitlines()) == 1, run.stderr
    assert run.stderr.endswith(": 'spark.driver.memory=3g'\n")
