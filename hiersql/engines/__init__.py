"""Engines: compute the SQL-expressible measures inside DuckDB, PostgreSQL or Spark.

The measures are SQL files (``<family>.sql``, beside each family) in DuckDB SQL. An :class:`Engine` renders a family's
summary query, composed with the queries it reads, in its own dialect with sqlglot (:func:`render`) and runs it
where the data lives. The tables the queries read are those of ``schema.sql``:
``edges, nodes, closure, instances, truth, predictions, systems``. An engine either receives copies of a
:class:`~hiersql.inputs.store.Store`'s tables (:meth:`Engine.copy_store`) or reads tables already there under other
names (:meth:`Engine.use_tables`, e.g. ``truth="warehouse.gold_labels"``); :meth:`Engine.build_closure`
computes the closure inside the engine from ``edges`` and ``nodes``.

The modules: :mod:`.dialect` (a record of rules per SQL dialect), :mod:`.compile` (the SQL of a query or a
family's plan in a dialect), :mod:`.base` (the runner, :class:`Engine`), one module per engine (:mod:`.duckdb`,
:mod:`.postgres`, :mod:`.spark`), :mod:`.registry` (an engine by name, :func:`open_engine`) and :mod:`.oneshot` (the one
process-wide DuckDB database of the scikit-learn style one-shot functions).
"""

from .base import STORE_TABLES, Engine, solve_arrow, summary_rows
from .compile import family_params, render, render_family
from .dialect import EngineDialect
from .duckdb import DuckDBEngine
from .postgres import PostgresEngine
from .registry import open_engine
from .spark import (
           PARTITION_AT,
           PARTITION_ROWS,
           PLANS_AT_ONCE,
           SMALL_INPUT_JAVA_OPTIONS,
           SMALL_INPUT_ROWS,
           SPARK_DEFAULTS,
           STAGE_DIR,
           SparkEngine,
           _spark_schema,
           spark_log,
)

__all__ = ["PARTITION_AT", "PARTITION_ROWS", "PLANS_AT_ONCE", "SMALL_INPUT_JAVA_OPTIONS",
           "SMALL_INPUT_ROWS", "SPARK_DEFAULTS", "STAGE_DIR", "STORE_TABLES", "DuckDBEngine", "Engine",
           "EngineDialect", "PostgresEngine", "SparkEngine", "_spark_schema", "family_params", "open_engine", "render",
           "render_family", "solve_arrow", "spark_log", "summary_rows"]
