"""Spark as users reach it beyond one process: a standalone master and worker, and a Spark Connect server, each a
process of its own started from pyspark's own scripts and jars on loopback, their logs in a folder, stopped at
the end; and the Spark event logs that say where each task ran."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from hiersql.engines.spark.connect import unanswered

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT = 180  # seconds for a JVM to start and register (a busy 2-core machine: the CI's)


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def free_port() -> int:
    """A TCP port of loopback that nothing listens on (now)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def spark_env(folder: Path) -> dict[str, str]:
    """The environment of the Spark processes and of the commands that reach them: loopback only, the Python
    workers run by this interpreter and import this tree's hiersql (as a cluster's would have it installed)."""
    return {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": str(ROOT), "SPARK_LOG_DIR": str(folder),
            "SPARK_PID_DIR": str(folder), "TMPDIR": str(folder)}


class Started:
    """A process started in a session of its own (a script and the JVM it runs), its output in ``log``."""

    def __init__(self, args: list[str], log: Path, env: dict[str, str]) -> None:
        self.log = log
        with log.open("w") as out:
            self.process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            env=env, start_new_session=True)

    def wait_for(self, ready: Callable[[], bool], what: str) -> None:
        """Until ``ready()``; a process that ended, or a timeout, fails the test with the log."""
        end = time.monotonic() + START_TIMEOUT
        while not ready():
            if self.process.poll() is not None or time.monotonic() > end:
                pytest.fail(f"{what} did not start:\n{self.log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.2)

    def stop(self) -> None:
        """End the process group this process leads (the script and its JVM), by its id."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


@contextmanager
def standalone_cluster(folder: Path, cores: int = 2, memory: str = "2g") -> Iterator[str]:
    """A standalone master and one worker (``cores``, ``memory``) on loopback; its ``spark://`` URL once the
    worker has registered."""
    env = spark_env(folder)
    port = free_port()
    master_url = f"spark://127.0.0.1:{port}"
    spark_class = str(spark_home() / "bin" / "spark-class")
    started = [Started([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port",
                        str(port), "--webui-port", "0"], folder / "master.log", env)]
    try:  # the worker starts beside the master: it retries registering until the master listens
        started.append(Started([spark_class, "org.apache.spark.deploy.worker.Worker", master_url, "--host",
                                "127.0.0.1", "--cores", str(cores), "--memory", memory, "--webui-port", "0",
                                "--work-dir", str(folder / "work")], folder / "worker.log", env))
        worker = started[1]
        worker.wait_for(lambda: "Successfully registered with master" in worker.log.read_text(errors="replace"),
                        "the standalone worker")
        yield master_url
    finally:
        for process in reversed(started):
            process.stop()


@contextmanager
def connect_server(folder: Path, master: str, *conf: str) -> Iterator[str]:
    """A Spark Connect server on ``master`` started by pyspark's ``sbin/start-connect-server.sh`` (``--wait``:
    in the foreground), listening on loopback, with the Spark settings ``conf`` (``KEY=VALUE``); its ``sc://``
    URL once it accepts connections (its log may say nothing: its JVM's logging is the settings')."""
    port = free_port()
    settings = ["spark.connect.grpc.binding.address=127.0.0.1", f"spark.connect.grpc.binding.port={port}",
                "spark.ui.enabled=false", *conf]
    server = Started([str(spark_home() / "sbin" / "start-connect-server.sh"), "--wait", "--master", master,
                      *(arg for setting in settings for arg in ("--conf", setting))],
                     folder / "connect.log", spark_env(folder))
    try:
        server.wait_for(lambda: unanswered([("127.0.0.1", port)]) is None, "the Spark Connect server")
        yield f"sc://127.0.0.1:{port}"
    finally:
        server.stop()


def event_log_settings(folder: Path) -> list[str]:
    """Spark settings that write the application's event log into ``folder``: one file, uncompressed."""
    folder.mkdir(parents=True, exist_ok=True)
    return ["spark.eventLog.enabled=true", f"spark.eventLog.dir={folder.as_uri()}", "spark.eventLog.compress=false",
            "spark.eventLog.rolling.enabled=false"]


def python_step_tasks(folder: Path) -> tuple[dict[int, list[str]], list[str]]:
    """From the event log in ``folder``: the stages that solved a Python step per partition (a ``MapInArrow``
    among their operators), each with the executors of its tasks (one entry per task), and the physical plans
    of every query."""
    events = [json.loads(line) for log in folder.iterdir() for line in log.read_text().splitlines() if line.strip()]
    solving = {e["Stage Info"]["Stage ID"] for e in events if e["Event"] == "SparkListenerStageSubmitted"
               and any(json.loads(rdd.get("Scope") or "{}").get("name") == "MapInArrow"
                       for rdd in e["Stage Info"]["RDD Info"])}
    executors: dict[int, list[str]] = {stage: [] for stage in solving}
    for e in events:
        if e["Event"] == "SparkListenerTaskEnd" and e["Stage ID"] in solving:
            executors[e["Stage ID"]].append(e["Task Info"]["Executor ID"])
    return executors, [e["physicalPlanDescription"] for e in events if "physicalPlanDescription" in e]
