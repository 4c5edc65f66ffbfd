"""``hiersql evaluate --engine spark`` in a process of its own, whose JVM starts with
:data:`hiersql.engines.SPARK_DEFAULTS` (hiersql/spark-log4j2.properties): stderr holds no Spark log line (the
start-up steps, the loopback host name and native Hadoop warnings, the shell's "Setting default log level",
the stages' progress bar, pyspark's note on pandas 3), only hiersql's one-line warnings (a library's own
warning names the library) and the JVM's note on its incubator modules; the JVM of a small input compiles with
C1 alone, a large one's with C2 for the hottest methods (:func:`hiersql.engines.open_engine`); and a warning's
library is read from its file."""

from __future__ import annotations

import csv
import io
import subprocess
import sys

import pytest

from hiersql.cli import _library
from hiersql.engines import SMALL_INPUT_ROWS


@pytest.mark.spark
def test_a_spark_evaluation_prints_its_rows_and_no_spark_log(data_dir, tmp_path):
    canonical = data_dir / "canonical"
    result = subprocess.run(
        [sys.executable, "-m", "hiersql", "evaluate", "--taxonomy", str(canonical / "taxonomy.tsv"),
         "--truth", str(canonical / "truth_b.tsv"), "--pred", f"a={canonical / 'pred_b' / 'LT-UHH__baseline.tsv'}",
         "--metrics", "hp", "--format", "csv", "--engine", "spark", "--spark-master", "local[1]",
         "--spark-conf", "spark.driver.extraJavaOptions=-XX:+PrintCommandLineFlags",
         "--spark-conf", "hiersql.plansAtOnce=1"],  # hiersql's own: not a "non-Spark property" spark-submit ignores
        capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    flags, table = result.stdout.split("\n", 1)  # the JVM prints its flags on the stdout it shares
    # 13,052 + 9,389 rows of truth and predictions: started after the store has read them, as a small input's
    assert "-XX:TieredStopAtLevel=1" in flags.split() and "-XX:+UseSerialGC" in flags.split(), flags
    rows = list(csv.DictReader(io.StringIO(table)))
    assert [(r["system"], r["metric"], r["average"]) for r in rows] == [
        ("a", "hierarchical_precision", "macro"), ("a", "hierarchical_precision", "micro")]
    lines = result.stderr.splitlines()  # no console progress bar of Spark's stages either ("[Stage 0:> ...")
    assert all(line.startswith(("hiersql: warning: ", "WARNING: Using incubator modules")) for line in lines), lines
    assert "pandas" not in result.stderr  # pyspark's note on pandas 3, which hiersql's use of it does not need


@pytest.mark.spark
@pytest.mark.parametrize(("setting", "said"), [
    # Spark reads the session's SQL settings when they are first asked for: it started, then refused this one
    ("spark.sql.shuffle.partitions=abc", "Spark did not start: [INVALID_CONF_VALUE.TYPE_MISMATCH] The value 'abc'"),
    # the JVM itself refuses its heap size and says so on stderr first
    ("spark.driver.memory=lots", "Spark's JVM did not start (its own lines above say why)"),
])
def test_a_setting_spark_refuses_exits_2_naming_it(data_dir, tmp_path, setting, said):
    canonical = data_dir / "canonical"
    result = subprocess.run(
        [sys.executable, "-m", "hiersql", "evaluate", "--taxonomy", str(canonical / "taxonomy.tsv"),
         "--truth", str(canonical / "truth_b.tsv"), "--pred", f"a={canonical / 'pred_b' / 'LT-UHH__baseline.tsv'}",
         "--metrics", "hp", "--engine", "spark", "--spark-master", "local[1]", "--spark-conf", setting],
        capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == "", result.stderr
    last = result.stderr.splitlines()[-1]
    assert last.startswith(f"hiersql: error: --spark-conf: {said}") and last.endswith(f": {setting!r}"), last
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr


def test_a_warning_names_the_installed_library_that_raised_it():
    assert _library("/v/lib/python3.11/site-packages/pyspark/testing/utils.py") == "pyspark: "
    assert _library("/usr/lib/python3/dist-packages/six.py") == "six: "
    assert _library("/v/lib/python3.11/site-packages/hiersql/metrics/lca.py") == ""
    assert _library("/home/me/hiersql/hiersql/metrics/lca.py") == ""  # an editable install: hiersql's own file
    assert _library("") == ""


@pytest.mark.spark
@pytest.mark.parametrize("rows", [None, SMALL_INPUT_ROWS])
def test_the_jvm_of_an_input_of_unknown_or_large_size_keeps_c2(rows, tmp_path):
    """``open_engine(run, rows)`` in a process of its own (its JVM's final flags on the stdout it shares): C2
    from ten times the default thresholds, the serial collector; a user's extraJavaOptions come after and win
    (here one threshold)."""
    code = ("from hiersql.engines import open_engine; from hiersql.options import RunOptions; "
            "e = open_engine(RunOptions(engine='spark', spark_master='local[1]', spark_conf={"
            "'spark.driver.extraJavaOptions': '-XX:+PrintCommandLineFlags -XX:Tier4BackEdgeThreshold=7000'}),"
            " rows=" + repr(rows) + "); e.spark.stop()")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    flags = result.stdout.split()
    assert {"-XX:Tier4InvocationThreshold=50000", "-XX:Tier4MinInvocationThreshold=6000",
            "-XX:Tier4CompileThreshold=150000", "-XX:Tier4BackEdgeThreshold=7000", "-XX:+UseSerialGC"} <= set(flags)
    assert "-XX:TieredStopAtLevel=1" not in flags and "-XX:Tier4BackEdgeThreshold=400000" not in flags, flags
