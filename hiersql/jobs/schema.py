"""The tables and views of a job queue (:mod:`hiersql.jobs.queue`), one text for DuckDB and PostgreSQL.

Tables: ``jobs``, ``units``, ``results``, ``attempts`` (docs/jobs.md), and the per-instance values of the units'
measures (:mod:`hiersql.jobs.instances`): ``instance_values`` (one row per unit run and per-instance table,
its columns as compressed bytes) and ``instance_items`` (the item ids of such tables, once per distinct list).

Views: ``unit_results`` (every submission's units, each with the rows of its key's latest run) and ``latest``
(those of the latest submission of each job name): the one definition of a job's latest results, which
``hiersql jobs results``, ``hiersql report --db QUEUE`` and a team's dashboard (``SELECT * FROM latest``) read.
"""

from __future__ import annotations

import functools
from typing import Any

from ..errors import InputError

# The columns of the result rows, in order: those of the results table of ``hiersql evaluate --db``
# (hiersql/inputs/schema.sql), then those the queue adds (:data:`KEYED`): the unit's key (a SHA-256 of its inputs),
# its job and unit. The queue's ``results`` table and a results target (``hiersql evaluate --out``, a job file's
# ``results``: :mod:`hiersql.jobs.targets`) have them all.
RESULT_COLUMNS = (("run_id", "VARCHAR NOT NULL"), ("dataset", "VARCHAR"), ("system", "VARCHAR NOT NULL"),
                  ("metric", "VARCHAR NOT NULL"), ("average", "VARCHAR"), ("value", "DOUBLE PRECISION"),
                  ("created_at", "TIMESTAMP"), ("key", "VARCHAR"), ("job_id", "VARCHAR"), ("unit_id", "VARCHAR"))
KEYED = 7  # RESULT_COLUMNS[KEYED:] are the queue's own
# the queue's columns added to a results table made without them (by hiersql evaluate --db, or before them)
ADD_COLUMNS = {n: f"ALTER TABLE results ADD COLUMN IF NOT EXISTS {n} {t}" for n, t in RESULT_COLUMNS[KEYED:]}

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS jobs (job_id VARCHAR PRIMARY KEY, name VARCHAR NOT NULL, spec VARCHAR NOT NULL,"
    " submitted_at TIMESTAMP NOT NULL)",
    "CREATE TABLE IF NOT EXISTS units (unit_id VARCHAR PRIMARY KEY, job_id VARCHAR NOT NULL, seq INTEGER NOT NULL,"
    " dataset VARCHAR NOT NULL, system VARCHAR NOT NULL, key VARCHAR NOT NULL, grp VARCHAR NOT NULL,"
    " work VARCHAR NOT NULL, recompute BOOLEAN NOT NULL, status VARCHAR NOT NULL, error VARCHAR,"
    " worker VARCHAR, run_id VARCHAR, finished_at TIMESTAMP)",
    f"CREATE TABLE IF NOT EXISTS results ({', '.join(f'{n} {t}' for n, t in RESULT_COLUMNS[:KEYED])})",
    *ADD_COLUMNS.values(),
    # one row per claim of a unit, committed before it is evaluated: a claim whose batch was never committed
    # (its worker killed or crashed, a transient error) stays counted; ``error`` says why, when known
    "CREATE TABLE IF NOT EXISTS attempts (attempt_id VARCHAR PRIMARY KEY, unit_id VARCHAR NOT NULL,"
    " run_id VARCHAR, worker VARCHAR, started_at TIMESTAMP NOT NULL, error VARCHAR)",
    "CREATE INDEX IF NOT EXISTS attempts_unit ON attempts (unit_id)",
    # the per-instance table ``tbl`` (hiersql.analyses.compare.table_key) of a unit's run: its columns (a JSON list),
    # their float64 values column after column, zlib-compressed, and the digest of its item ids
    "CREATE TABLE IF NOT EXISTS instance_values (run_id VARCHAR NOT NULL, key VARCHAR NOT NULL,"
    " unit_id VARCHAR NOT NULL, tbl VARCHAR NOT NULL, items VARCHAR NOT NULL, columns VARCHAR NOT NULL,"
    " data BYTEA NOT NULL)",
    "CREATE INDEX IF NOT EXISTS instance_values_run ON instance_values (key, run_id)",
    # the item ids of per-instance tables (a JSON list, zlib-compressed), under the SHA-256 of that list: once,
    # but for batches committed together (DuckDB's transactions conflict on a key that two of them insert)
    "CREATE TABLE IF NOT EXISTS instance_items (digest VARCHAR NOT NULL, ids BYTEA NOT NULL)",
    "CREATE INDEX IF NOT EXISTS instance_items_digest ON instance_items (digest)",
)

# the runs of each key, the latest first (``n = 1``): by the time of their rows, then by run id (one rule, that
# of the views and of ``hiersql jobs prune``)
KEY_RUNS = ("SELECT key, run_id, max(created_at) AS created_at, count(*) AS n_rows, row_number() OVER"
            " (PARTITION BY key ORDER BY max(created_at) DESC, run_id DESC) AS n FROM results"
            " WHERE key IS NOT NULL GROUP BY key, run_id")
# every submission's units (``submission``: its job id), each with the rows of its key's latest run (``job_id``:
# the submission whose unit computed them); a unit whose key has no results is one row of NULL values
UNIT_RESULTS = (
    f"WITH runs AS ({KEY_RUNS})"
    " SELECT j.name, u.job_id AS submission, u.dataset, u.system, u.status, u.key, r.metric, r.average, r.value,"
    " r.run_id, r.job_id, r.created_at FROM units u JOIN jobs j ON j.job_id = u.job_id"
    " LEFT JOIN runs l ON l.key = u.key AND l.n = 1"
    " LEFT JOIN results r ON r.key = l.key AND r.run_id = l.run_id")
# the latest submission of each job name (job ids sort by submission time), as ``unit_results`` has it
LATEST = "SELECT * FROM unit_results WHERE submission IN (SELECT max(job_id) FROM jobs GROUP BY name)"
VIEWS = {"unit_results": UNIT_RESULTS, "latest": LATEST}  # in the order they are made


def relations(con: Any) -> dict[str, str]:
    """``{name: type}`` (``BASE TABLE``, ``VIEW``) of the relations of the queue's names (:data:`SCHEMA`'s
    tables, :data:`VIEWS`) in the current schema of ``con`` (a :class:`~hiersql.jobs.queue.Connection`)."""
    names = [*table_forms()]
    return dict(con.execute(
        "SELECT table_name, table_type FROM information_schema.tables WHERE table_catalog = current_database()"
        f" AND table_schema = current_schema() AND table_name IN ({', '.join('?' * len(names))})", names))


def schema_statements(con: Any) -> list[str]:
    """:data:`SCHEMA`'s statements for the queue of ``con``, without those that add a column ``results`` has
    already: PostgreSQL locks a table for ``ALTER TABLE`` even then, and a worker starting would wait until
    another's batch, which reads ``results``, commits."""
    have = {row[0] for row in con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_catalog = current_database()"
        " AND table_schema = current_schema() AND table_name = 'results'")}
    present = {ADD_COLUMNS[name] for name in have & ADD_COLUMNS.keys()}
    return [statement for statement in SCHEMA if statement not in present]


def create_views(con: Any, where: str) -> None:
    """Make the :data:`VIEWS` that the queue lacks, in the transaction at hand (a view made already is left as
    it is: replacing it would wait for every reader of it, a dashboard's open transaction too). A table of a
    view's name is the user's: an :class:`~hiersql.errors.InputError` naming ``where`` (the database)."""
    found = relations(con)
    for name, sql in VIEWS.items():
        if name not in found:
            con.execute(f"CREATE VIEW {name} AS {sql}")
        elif found[name] != "VIEW":
            raise InputError(f"has a table {name!r} where hiersql's job queue keeps a view: give hiersql a database"
                             " of its own", where, value=name)


def with_views(sql: str, present: bool) -> str:
    """``sql``, which reads the :data:`VIEWS`; with their definitions as common table expressions when the queue
    has them not (a queue made before them, opened read-only: left as it is)."""
    if present:
        return sql
    return f"WITH {', '.join(f'{name} AS ({text})' for name, text in VIEWS.items())} {sql}"


@functools.cache
def table_forms() -> dict[str, list[list[str]]]:
    """The columns each table and view of the queue may have, in order: those :data:`SCHEMA` and :data:`VIEWS`
    make (first: what messages show) and, for ``results``, those of a results file of ``hiersql evaluate --db``
    (the store's schema), before and after :data:`SCHEMA` added the queue's columns to it: such a file becomes
    a queue, whose results ``hiersql report --db`` reads. Made in scratch databases, so that they follow both
    schemas."""
    import duckdb

    from ..inputs.store import duckdb_tables
    from ..sqlfiles import queries

    with duckdb.connect() as scratch:
        for statement in SCHEMA:
            scratch.execute(statement)
        for name, sql in VIEWS.items():
            scratch.execute(f"CREATE VIEW {name} AS {sql}")
        forms = {table: [columns] for table, columns in duckdb_tables(scratch)}
    with duckdb.connect() as scratch:
        scratch.execute(queries("schema")["schema"])
        evaluated = [(t, c) for t, c in duckdb_tables(scratch) if t == "results"]
        for statement in SCHEMA:
            scratch.execute(statement)
        for table, columns in [*evaluated, *duckdb_tables(scratch)]:
            if table in forms and columns not in forms[table]:
                forms[table].append(columns)
    return forms
