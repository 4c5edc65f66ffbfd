"""``hiersql evaluate --engine spark`` in a process of its own, whose JVM starts with
:data:`hiersql.engines.SPARK_DEFAULTS` (hiersql/spark-log4j2.properties) and writes its stdout and stderr to a
log file, not to the command's (:func:`hiersql.engines.spark_log`): stdout holds the rows alone, stderr no
Spark log line (the start-up steps, the loopback host name and native Hadoop warnings, the shell's "Setting
default log level", the stages' progress bar, the JVM's note on its incubator modules, pyspark's note on pandas
3), only hiersql's one-line warnings (a library's own warning names the library) and errors (a setting or a
master Spark refuses, a Parquet path naming no file, said before a JVM starts where hiersql can tell); the JVM
of a small input compiles with C1 alone, a large one's with C2 for the hottest methods
(:func:`hiersql.engines.open_engine`); and a warning's library is read from its file."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys

import pytest

from hiersql.cli import _library, main
from hiersql.engines import SMALL_INPUT_ROWS
from tests._jvm import run_with_jvm_log


@pytest.mark.spark
def test_a_spark_evaluation_prints_its_rows_and_no_spark_log(data_dir, tmp_path, capsys):
    canonical = data_dir / "canonical"
    args = ["evaluate", "--taxonomy", str(canonical / "taxonomy.tsv"), "--truth", str(canonical / "truth_b.tsv"),
            "--pred", f"a={canonical / 'pred_b' / 'LT-UHH__baseline.tsv'}", "--metrics", "hp", "--format", "csv"]
    code, out, err, log = run_with_jvm_log(
        [*args, "--engine", "spark", "--spark-master", "local[1]",
         "--spark-conf", "spark.driver.extraJavaOptions=-XX:+PrintCommandLineFlags",
         "--spark-conf", "hiersql.plansAtOnce=1"],  # hiersql's own: not a "non-Spark property" spark-submit ignores
        tmp_path)
    assert code == 0, err
    # stdout holds the rows alone (those of the embedded engine): the flags the JVM prints on its stdout are in
    # its log, with its note on the incubator modules; stderr holds nothing (no Spark log line, no progress bar
    # of Spark's stages, no note of pyspark's on pandas 3, which hiersql's use of it does not need)
    assert main(args) == 0
    want = capsys.readouterr().out.splitlines()
    got = out.splitlines()
    assert len(got) == len(want) == 3 and got[0] == want[0] == "system,metric,average,value"
    for line, reference in zip(got[1:], want[1:], strict=True):
        assert line.rsplit(",", 1)[0] == reference.rsplit(",", 1)[0]
        assert float(line.rsplit(",", 1)[1]) == pytest.approx(float(reference.rsplit(",", 1)[1]), abs=1e-12)
    assert err == ""
    flags = next(line for line in log.splitlines() if "-XX:+PrintCommandLineFlags" in line).split()
    # 13,052 + 9,389 rows of truth and predictions: started after the store has read them, as a small input's
    assert "-XX:TieredStopAtLevel=1" in flags and "-XX:+UseSerialGC" in flags, flags
    assert "WARNING: Using incubator modules" in log


@pytest.mark.spark
@pytest.mark.parametrize(("setting", "said"), [
    # Spark reads the session's SQL settings when they are first asked for: it started, then refused this one
    ("spark.sql.shuffle.partitions=abc", "Spark did not start: [INVALID_CONF_VALUE.TYPE_MISMATCH] The value 'abc' in"
     " the config \"spark.sql.shuffle.partitions\" is invalid. It should be a/an 'int' value."),
    # the JVM itself refuses its heap size: its own words, from its log
    ("spark.driver.memory=lots", "Spark's JVM did not start: Invalid maximum heap size: -Xmxlots"),
])
def test_a_setting_spark_refuses_exits_2_naming_it(data_dir, tmp_path, setting, said):
    canonical = data_dir / "canonical"
    result = subprocess.run(
        [sys.executable, "-m", "hiersql", "evaluate", "--taxonomy", str(canonical / "taxonomy.tsv"),
         "--truth", str(canonical / "truth_b.tsv"), "--pred", f"a={canonical / 'pred_b' / 'LT-UHH__baseline.tsv'}",
         "--metrics", "hp", "--engine", "spark", "--spark-master", "local[1]", "--spark-conf", setting],
        capture_output=True, text=True, timeout=600, cwd=tmp_path, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == f"hiersql: error: --spark-conf: {said}: {setting!r}\n"
    assert not list(tmp_path.glob("hiersql-spark-*.log"))  # the message says it all: the JVM's log is removed


# main() in a process of its own, then whether it started a JVM (pyspark's gateway to one)
JVM_STARTED = ("import sys; from hiersql.cli import main; code = main(sys.argv[1:]); "
               "context = sys.modules.get('pyspark.context'); "
               "print(context is not None and context.SparkContext._gateway is not None); sys.exit(code)")


def test_a_spark_master_that_does_not_answer_is_said_before_a_jvm_starts(data_dir, tmp_path, capsys):
    """Spark would start its JVM, then try the master for a minute, logging each try; hiersql tries its port
    first (nothing listens on a port just freed)."""
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    canonical = data_dir / "canonical"
    master = f"spark://127.0.0.1:{port}"
    code = subprocess.run(
        [sys.executable, "-c", JVM_STARTED, "evaluate",
         "--taxonomy", str(canonical / "taxonomy.tsv"), "--truth", str(canonical / "truth_b.tsv"),
         "--pred", f"a={canonical / 'pred_b' / 'LT-UHH__baseline.tsv'}", "--engine", "spark",
         "--spark-master", master], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert (code.returncode, code.stdout) == (2, "False\n")
    assert code.stderr == f"hiersql: error: --spark-master: no master answers there (Connection refused): {master!r}\n"


@pytest.mark.parametrize(("pred", "said"), [("missing.parquet", "file not found"),
                                            ("runs/*.parquet", "glob matches no file")])
def test_a_parquet_path_that_names_no_file_is_said_before_a_jvm_starts(data_dir, tmp_path, pred, said):
    canonical = data_dir / "canonical"
    code = subprocess.run(
        [sys.executable, "-c", JVM_STARTED, "evaluate",
         "--taxonomy", str(canonical / "taxonomy.tsv"), "--truth", str(canonical / "truth_b.tsv"),
         "--pred", f"a={pred}", "--engine", "spark"], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert (code.returncode, code.stdout) == (2, "False\n")
    assert code.stderr == f"hiersql: error: {pred}: {said}\n"


def test_a_warning_names_the_installed_library_that_raised_it():
    assert _library("/v/lib/python3.11/site-packages/pyspark/testing/utils.py") == "pyspark: "
    assert _library("/usr/lib/python3/dist-packages/six.py") == "six: "
    assert _library("/v/lib/python3.11/site-packages/hiersql/measures/lca/__init__.py") == ""
    assert _library("/home/me/hiersql/hiersql/engines/oneshot.py") == ""  # an editable install: hiersql's own file
    assert _library("") == ""


@pytest.mark.spark
@pytest.mark.parametrize("rows", [None, SMALL_INPUT_ROWS])
def test_the_jvm_of_an_input_of_unknown_or_large_size_keeps_c2(rows, tmp_path):
    """``open_engine(run, rows)`` in a process of its own (its JVM's final flags on the stdout it shares): C2
    from ten times the default thresholds, the serial collector; a user's extraJavaOptions come after and win
    (here one threshold)."""
    code = ("from hiersql.engines import open_engine, spark_log; from hiersql.options import RunOptions; "
            "e = open_engine(RunOptions(engine='spark', spark_master='local[1]', spark_conf={"
            "'spark.driver.extraJavaOptions': '-XX:+PrintCommandLineFlags -XX:Tier4BackEdgeThreshold=7000'}),"
            " rows=" + repr(rows) + "); e.spark.stop(); print(spark_log().read_text())")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=tmp_path,
                            env={**os.environ, "TMPDIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    flags = next(line for line in result.stdout.splitlines() if "-XX:+PrintCommandLineFlags" in line).split()
    assert {"-XX:Tier4InvocationThreshold=50000", "-XX:Tier4MinInvocationThreshold=6000",
            "-XX:Tier4CompileThreshold=150000", "-XX:Tier4BackEdgeThreshold=7000", "-XX:+UseSerialGC"} <= set(flags)
    assert "-XX:TieredStopAtLevel=1" not in flags and "-XX:Tier4BackEdgeThreshold=400000" not in flags, flags


@pytest.mark.spark
def test_spark_running_out_of_memory_exits_2_naming_the_setting_and_a_value_to_try(data_dir, tmp_path):
    """A task whose execution memory runs out (``spark.memory.fraction`` so small that no page of 256 KiB
    fits) is one line naming ``--spark-conf``, the step, Spark's reason and the setting doubled, exit 2; not
    an internal error. On ``local`` the tasks run in the driver: the setting is the driver's."""
    canonical = data_dir / "canonical"
    result = subprocess.run(
        [sys.executable, "-m", "hiersql", "evaluate", "--taxonomy", str(canonical / "taxonomy.tsv"),
         "--truth", str(canonical / "truth_b.tsv"), "--pred", f"a={canonical / 'pred_b' / 'LT-UHH__baseline.tsv'}",
         "--metrics", "hp", "--engine", "spark", "--spark-master", "local[1]", "--spark-conf",
         "spark.memory.fraction=0.0001", "--spark-conf", "spark.driver.memory=1g"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert (result.returncode, result.stdout) == (2, ""), result.stderr
    assert re.fullmatch(r"hiersql: error: --spark-conf: Spark ran out of memory while the SQL step set_based\.\w+"
                        r" \(.*Unable to acquire \d+ bytes of memory.*; spark\.driver\.memory=1g\): try"
                        r" spark\.driver\.memory=2g\n", result.stderr), result.stderr


@pytest.mark.spark
@pytest.mark.parametrize(("python", "said"), [
    ("bare", r"ModuleNotFoundError: No module named '\w+'"),
    ("missing", r'Cannot run program "[^"]*/missing/bin/python": error=2, No such file or directory')])
def test_python_workers_without_hiersql_exit_2_naming_the_setting(python, said, tmp_path):
    """Spark's Python workers whose Python lacks hiersql and its dependencies (a virtual environment of the
    same Python without packages, as an executor where nothing was installed) or is not there, given a step per
    partition (``hiersql.partitionRows=0``): one line naming ``--spark-conf``, the step, the workers' (or
    Spark's) own error and the setting that names their Python, exit 2; not an internal error with the workers'
    traceback or Spark's."""
    if python == "bare":
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / python)], check=True,
                       timeout=120)
    (tmp_path / "tax.tsv").write_text("r\ta\nr\tb\na\ta1\nb\tb1\n")
    (tmp_path / "truth.tsv").write_text("i0\ta1\ni1\tb1\n")
    (tmp_path / "m.tsv").write_text("i0\tb1\ni1\tb1\n")
    result = subprocess.run(
        [sys.executable, "-m", "hiersql", "evaluate", "--taxonomy", "tax.tsv", "--truth", "truth.tsv", "--pred",
         "m=m.tsv", "--metrics", "pair_based", "--engine", "spark", "--spark-master", "local[1]",
         "--spark-conf", "hiersql.partitionRows=0"], capture_output=True, text=True, timeout=600, cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(tmp_path), "PYSPARK_PYTHON": str(tmp_path / python / "bin" / "python")})
    assert (result.returncode, result.stdout) == (2, ""), result.stderr
    assert re.fullmatch(r"hiersql: error: --spark-conf: Spark's Python workers cannot run the Python step pairings"
                        rf" \({said}\): they need hiersql and the driver's Python version; name such a Python with"
                        r" spark\.pyspark\.python \(or PYSPARK_PYTHON\)\n", result.stderr), result.stderr
