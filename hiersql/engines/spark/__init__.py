"""Spark: the engine (:mod:`.engine`), its session (:mod:`.session`) and Spark Connect's (:mod:`.connect`)."""

from .engine import PARTITION_AT, PARTITION_ROWS, PLANS_AT_ONCE, STAGE_DIR, SparkEngine, _spark_schema
from .session import SMALL_INPUT_JAVA_OPTIONS, SMALL_INPUT_ROWS, SPARK_DEFAULTS, open_spark, spark_log

__all__ = ["PARTITION_AT", "PARTITION_ROWS", "PLANS_AT_ONCE", "SMALL_INPUT_JAVA_OPTIONS", "SMALL_INPUT_ROWS",
           "SPARK_DEFAULTS", "STAGE_DIR", "SparkEngine", "_spark_schema", "open_spark", "spark_log"]
