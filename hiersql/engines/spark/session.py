"""The Spark session of ``--engine spark``: the JVM's settings, starting it, its errors in one line, its log."""

from __future__ import annotations

import re
import warnings
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...errors import InputError, is_spark_error, spark_message
from .engine import SparkEngine

# The driver's JVM (on a local master the executors' too), in spark.driver.defaultJavaOptions: C2, the JIT's
# optimising compiler, only for methods ten times hotter than by default, and the serial collector. Every
# query brings code of its own (generated classes, plans) that C2 would compile for rows processed in a
# fraction of a second; the loops over many rows still reach C2 (an aggregate of a join of 12 M rows ran
# faster so than with the defaults or with C1 alone: benchmarks/RESULTS.md). They apply to a JVM that the
# session starts (not to one already running); a user's spark.driver.extraJavaOptions come after them and win.
# A cluster's executors (JVMs started for the application) compile as the driver does (spark.executor.
# defaultJavaOptions: their collector and logging are the cluster's).
# Its logging: warnings and errors, not every start-up step (hiersql/spark-log4j2.properties); no console
# progress bar of Spark's stages (hiersql's commands show their own steps on stderr).
_JIT = ("-XX:Tier4InvocationThreshold=50000 -XX:Tier4MinInvocationThreshold=6000 -XX:Tier4CompileThreshold=150000"
        " -XX:Tier4BackEdgeThreshold=400000")
_JVM_COMMON = " -XX:+UseSerialGC -Dlog4j2.configurationFile=" + (
    Path(__file__).parents[2] / "spark-log4j2.properties").as_uri()
SPARK_DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.adaptive.enabled": "true",
    "spark.driver.memory": "2g",
    "spark.driver.defaultJavaOptions": _JIT + _JVM_COMMON,
    "spark.executor.defaultJavaOptions": _JIT,
}
# A small input's JVM: the quick compiler (C1) alone, whose code the few rows of each query never make worth
# C2's compiling (GermEval B, every family, local[2]: 18 % faster; the 450k DAG's set-based and MGIA 40-70 %
# slower: benchmarks/RESULTS.md); with C1 alone the JVM would size its code cache at 48 MB, which the code of
# hundreds of queries fills (the JVM then stops compiling): the size it has with both compilers. The executors of
# a cluster too (a GermEval B sample, every family, on a standalone worker: half the CPU time of C2's).
SMALL_INPUT_ROWS = 500_000  # rows of truth and predictions together
SMALL_INPUT_JIT = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
SMALL_INPUT_JAVA_OPTIONS = SMALL_INPUT_JIT + _JVM_COMMON


def open_spark(run: Any, rows: int | None = None) -> SparkEngine:
    """The :class:`SparkEngine` of a :class:`~hiersql.options.RunOptions`: with ``run.spark_remote``, a
    session of that Spark Connect server (:func:`~hiersql.engines.spark.connect.connect_session`); else a
    session on ``run.spark_master`` with ``run.spark_conf`` over :data:`SPARK_DEFAULTS` (and, unless set, as
    many shuffle partitions as local cores: small inputs do not pay Spark's 200). ``rows``, the truth and
    prediction rows to evaluate when known before Spark starts: under :data:`SMALL_INPUT_ROWS` a JVM the session
    starts has :data:`SMALL_INPUT_JAVA_OPTIONS`."""
    import os
    import sys

    # pyspark warns of pandas >= 3 as not fully supported; what hiersql asks of it (Arrow in and out,
    # mapInArrow, an empty table from pandas) runs under pandas 3 in the engine tests
    warnings.filterwarnings("ignore", "PySpark does not yet fully support pandas", FutureWarning)
    if run.spark_remote is not None:
        from .connect import connect_session

        return SparkEngine(connect_session(run))
    small = {"spark.driver.defaultJavaOptions": SMALL_INPUT_JAVA_OPTIONS,
             "spark.executor.defaultJavaOptions": SMALL_INPUT_JIT} if (
        rows is not None and rows < SMALL_INPUT_ROWS) else {}
    settings = {**SPARK_DEFAULTS, "spark.sql.shuffle.partitions": str(2 * (os.cpu_count() or 1)), **small,
                **dict(run.spark_conf)}
    if run.spark_master.startswith("local"):  # the Python workers solve steps: they import hiersql too
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # (pyspark reads it, not a setting)
    # hiersql's own settings are set on the session once it runs: spark-submit would print that it
    # ignores them, as not Spark's
    own = {key: settings.pop(key) for key in [key for key in settings if key.startswith("hiersql.")]}
    session = _spark_session(run, settings)
    for key, value in own.items():
        session.conf.set(key, value)
    session.sparkContext.setLogLevel("ERROR")
    return SparkEngine(session)


def _spark_session(run: Any, settings: Mapping[str, str]) -> Any:
    """The Spark session of ``run`` with ``settings``: the running one when there is one; else a new JVM whose
    stdout and stderr go to a log file (:func:`spark_log`), not to the command's: its start-up notes (the
    incubator modules) and logs stay off the terminal, and nothing it prints mixes with the results on stdout.
    A JVM that did not start, or a session Spark refused, is an :class:`InputError` in one line
    (:func:`_not_started`); a ``spark://`` master that does not answer is one before the JVM starts (Spark
    itself retries for a minute)."""
    import os
    import tempfile

    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(run.spark_master).appName("hiersql")
    for key, value in settings.items():
        builder = builder.config(key, value)
    if SparkContext._gateway is not None:  # this process runs a JVM already: its session, these SQL settings
        return _checked(builder, run)
    _check_master(run.spark_master)
    conf = SparkConf(loadDefaults=False).setMaster(run.spark_master).setAppName("hiersql").setAll(settings.items())
    fd, path = tempfile.mkstemp(prefix="hiersql-spark-", suffix=".log")
    try:
        gateway = launch_gateway(conf, popen_kwargs={"stdout": fd, "stderr": fd})
    except Exception as exc:  # the JVM ended before it opened the gateway: its reason is in the log
        reason = _jvm_reason(Path(path).read_text(errors="replace"))
        Path(path).unlink()
        if not is_spark_error(exc):
            raise
        if run.spark_conf:
            raise InputError(f"Spark's JVM did not start: {reason}", "--spark-conf",
                             value=" ".join(f"{key}={value}" for key, value in run.spark_conf)) from None
        raise InputError(f"Spark's JVM did not start: {reason}", "--spark-master", value=run.spark_master) from None
    finally:
        os.close(fd)
    _log.path = Path(path)
    weakref.finalize(_log, _log.remove)
    try:
        SparkContext(conf=conf, gateway=gateway)
    except Exception as exc:
        if not is_spark_error(exc):
            raise
        raise _not_started(exc, run) from None
    return _checked(builder, run)


def _checked(builder: Any, run: Any) -> Any:
    """``builder``'s session, whose SQL settings Spark checks when first read (here); a refusal is
    :func:`_not_started`'s error."""
    try:
        session = builder.getOrCreate()
        session.conf.get("spark.app.name")
    except Exception as exc:  # a setting or a master Spark refused, a cluster it could not reach
        if not is_spark_error(exc):
            raise
        raise _not_started(exc, run) from None
    return session


def _check_master(master: str) -> None:
    """A ``spark://HOST:PORT[,HOST:PORT...]`` master none of whose hosts accepts a connection is an
    :class:`InputError` naming it (the JVM would start, then retry for a minute, logging every try)."""
    if not master.startswith("spark://"):
        return
    from .connect import unanswered

    addresses = [address.rpartition(":") for address in master[len("spark://"):].split(",")]
    reason = unanswered([(host.strip("[]"), int(port)) for host, _, port in addresses])
    if reason is not None:
        raise InputError(f"no master answers there ({reason})", "--spark-master", value=master)


# Lines a JVM prints whatever went wrong (and its note on the incubator modules Spark 4 loads), which say
# nothing of why it did not start.
_JVM_NOISE = re.compile(r"WARNING: Using incubator modules|Error: Could not create the Java Virtual Machine"
                        r"|Error: A fatal exception has occurred")


def _jvm_reason(text: str) -> str:
    """The JVM's own words on why it did not start, from its output: its first two other lines, on one."""
    lines = [line.strip() for line in text.splitlines() if line.strip() and not _JVM_NOISE.match(line.strip())]
    return " / ".join(lines[:2]) or "no reason given"


class _Log:
    """The log file of the Spark JVM that :func:`_spark_session` started (``path``), removed when the process
    ends unless :func:`spark_log` was asked for it."""

    path: Path | None = None
    kept = False

    def remove(self) -> None:
        if self.path is not None and not self.kept:
            self.path.unlink(missing_ok=True)


_log = _Log()


def spark_log() -> Path | None:
    """The log file (stdout and stderr) of the Spark JVM this process started, kept when the process ends
    (a command that failed names it); ``None`` when it started none."""
    _log.kept = _log.path is not None
    return _log.path


def _not_started(exc: Exception, run: Any) -> InputError:
    """The error of a Spark session that did not start, in one line naming the setting (``--spark-conf``) its
    message names; else the master (``--spark-master``). The master's form was checked before
    (:mod:`hiersql.options`); the JVM's log, where there is one, is named and kept."""
    text = spark_message(exc)
    reason = " ".join(re.split(r" SQLSTATE: | JVM stacktrace:", text)[0].split())
    named = [f"{key}={value}" for key, value in run.spark_conf if key in text]
    if named:
        return InputError(f"Spark did not start: {reason}", "--spark-conf", value=named[0])
    log = spark_log()
    seen = f" (Spark's log: {log})" if log is not None else ""
    return InputError(f"Spark did not start{seen}: {reason}", "--spark-master", value=run.spark_master)
