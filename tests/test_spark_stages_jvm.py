"""The JVM settings of :data:`hiersql.engines.SPARK_DEFAULTS` reach the JVM that ``open_engine`` starts (the
test session's shared one is started so): C2 compilation from ten times the default thresholds, and the serial
collector; a user's ``spark.driver.extraJavaOptions`` come after them and win (tests/conftest.py stops the
JIT at its quick compiler)."""

from __future__ import annotations

import pytest

from hiersql.engines import SPARK_DEFAULTS

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_the_default_java_options_are_those_of_the_running_jvm(spark):
    jvm = spark.sparkContext._jvm
    management = jvm.java.lang.management.ManagementFactory
    arguments = list(management.getRuntimeMXBean().getInputArguments())
    wanted = SPARK_DEFAULTS["spark.driver.defaultJavaOptions"].split()
    assert all(flag in arguments for flag in wanted)
    hotspot = management.getPlatformMXBean(jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))
    for option, value in (("Tier4InvocationThreshold", "50000"), ("Tier4MinInvocationThreshold", "6000"),
                          ("Tier4CompileThreshold", "150000"), ("Tier4BackEdgeThreshold", "400000")):
        assert hotspot.getVMOption(option).getValue() == value
    assert "-XX:TieredStopAtLevel=1" in arguments[arguments.index(wanted[-1]):]  # the conftest's, after
    assert hotspot.getVMOption("TieredStopAtLevel").getValue() == "1"
    assert hotspot.getVMOption("UseSerialGC").getValue() == "true"
    assert hotspot.getVMOption("UseG1GC").getValue() == "false"
