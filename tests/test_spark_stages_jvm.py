"""The JVM settings of :data:`hiersql.engines.SMALL_INPUT_JAVA_OPTIONS` reach the JVM that ``open_engine`` starts
for a small input (the test session's shared one is started so, tests/conftest.py): the JIT's quick compiler
alone, a code cache of the size it has with both compilers, and the serial collector. A large input's
(:data:`hiersql.engines.SPARK_DEFAULTS`) and a user's options winning: tests/test_spark_cli_log.py."""

from __future__ import annotations

import pytest

from hiersql.engines import SMALL_INPUT_JAVA_OPTIONS

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_a_small_inputs_java_options_are_those_of_the_running_jvm(spark):
    jvm = spark.sparkContext._jvm
    management = jvm.java.lang.management.ManagementFactory
    arguments = list(management.getRuntimeMXBean().getInputArguments())
    assert all(flag in arguments for flag in SMALL_INPUT_JAVA_OPTIONS.split())
    hotspot = management.getPlatformMXBean(jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))
    assert hotspot.getVMOption("TieredStopAtLevel").getValue() == "1"
    assert hotspot.getVMOption("ReservedCodeCacheSize").getValue() == str(240 * 2**20)
    assert hotspot.getVMOption("UseSerialGC").getValue() == "true"
    assert hotspot.getVMOption("UseG1GC").getValue() == "false"
