"""Batch jobs on a PostgreSQL queue (a real server, started by the ``pg_dsn`` fixture of conftest.py): two
workers do every unit exactly once; a lost connection is retried; a worker killed inside its write leaves its
units to the next; ``--workers N`` processes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import psycopg
import pytest

from hiersql.cli import main
from hiersql.jobs import runner, submit
from hiersql.jobs.queue import Queue
from tests.test_jobs import make_job

pytestmark = pytest.mark.postgres
ROOT = Path(__file__).resolve().parents[1]
# A worker process whose batches take 0.5 s longer, so that two of them overlap (also when one of them
# starts late on a loaded host: the 6 batches take 3 s).
DRIVER = """
import sys, time
from hiersql.jobs import runner
from hiersql.jobs.queue import Queue

evaluate = runner.evaluate

def slow_evaluate(units, stores):
    time.sleep(0.5)
    return evaluate(units, stores)

runner.evaluate = slow_evaluate
runner.run(Queue(sys.argv[1]), max_batch=2)
"""


@pytest.fixture
def queue_url(pg_dsn):
    """A new database on the server, as a ``postgresql://`` URL."""
    info = psycopg.conninfo.conninfo_to_dict(pg_dsn)
    name = f"jobs_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_dsn, autocommit=True) as con:
        con.execute(f'CREATE DATABASE "{name}"')
    url = f"postgresql://{info.get('user', 'postgres')}@/{name}?host={info['host']}&port={info.get('port', 5432)}"
    yield url
    with psycopg.connect(pg_dsn, autocommit=True) as con:
        con.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture
def spec(fixtures_dir, tmp_path):
    """12 units: 11 systems of the demo dataset (copies of the three under other names), one of demo-root."""
    spec = make_job(tmp_path, fixtures_dir)
    for i in range(8):
        shutil.copy(tmp_path / "preds" / ("cautious.tsv", "flat_errors.tsv", "shallow.tsv")[i % 3],
                    tmp_path / "preds" / f"copy{i}.tsv")
    return spec


def reference(spec: Path, tmp_path: Path) -> dict:
    queue = Queue(tmp_path / "reference.duckdb")
    submit(queue, spec)
    runner.run(queue)
    with queue.connect() as con:
        out = {(r[0], r[1], r[2], r[3]): r[4] for r in con.results()}
    queue.close()
    return out


def test_two_workers_do_every_unit_exactly_once(queue_url, spec, tmp_path):
    queue = Queue(queue_url)
    job_id, total, queued = submit(queue, spec)
    assert (total, queued) == (12, 12)
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, str(driver), queue_url], env=env) for _ in range(2)]
    running_seen = 0
    deadline = time.monotonic() + 120
    with queue.connect() as con:
        while any(p.poll() is None for p in procs):
            running_seen = max(running_seen, con.status()[0]["running"])
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert [p.returncode for p in procs] == [0, 0]
        units = con.execute("SELECT unit_id, key, status, worker, run_id FROM units")
        rows = con.execute("SELECT unit_id, key, run_id FROM results")
        status = con.status()[0]
        got = {(r[0], r[1], r[2], r[3]): r[4] for r in con.results()}
    queue.close()
    assert {u[2] for u in units} == {"done"} and len(units) == 12
    assert sorted(r[0] for r in rows) == sorted(u[0] for u in units for _ in range(2))  # hp, hr: once each
    assert len({(r[1], r[2]) for r in rows}) == 12
    workers = {u[3] for u in units}
    assert len(workers) == 2  # both took units
    assert running_seen >= 1  # a claimed unit is a locked row, shown as running
    assert (status["done"], status["queued"], status["running"]) == (12, 0, 0)
    assert got == reference(spec, tmp_path)


def test_a_lost_connection_is_retried(queue_url, spec, tmp_path, monkeypatch):
    queue = Queue(queue_url)
    submit(queue, spec)
    evaluate = runner.evaluate
    cut = []

    def evaluate_and_cut(units, stores):
        if not cut:  # the server ends every other session of the database: the worker's two (its batch's,
            # mid-transaction, and the one that counts its claims)
            with psycopg.connect(queue_url, autocommit=True) as con:
                cut.append(con.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                                       " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                                       ).fetchone()[0])
        return evaluate(units, stores)

    monkeypatch.setattr(runner, "evaluate", evaluate_and_cut)
    monkeypatch.setattr(runner, "BACKOFF", 0.05)
    summary = runner.run(queue, max_batch=4)
    assert cut == [2]
    assert summary.counts["done"] == 12 and not summary.failures
    with queue.connect() as con:
        assert con.execute("SELECT count(*), count(DISTINCT unit_id) FROM results")[0] == (24, 12)
        # the cut batch's 4 units were claimed twice (then one at a time), the others once
        assert con.execute("SELECT count(*), count(DISTINCT unit_id) FROM attempts")[0] == (12 + 4, 12)
        got = {(r[0], r[1], r[2], r[3]): r[4] for r in con.results()}
    queue.close()
    assert got == reference(spec, tmp_path)


def test_workers_are_processes_on_postgres(queue_url, spec, capsys):
    assert main(["jobs", "run", str(spec), "--queue", queue_url, "--workers", "2", "--batch", "3"]) == 0
    assert "12 unit(s) processed: 12 done, 0 unchanged, 0 failed" in capsys.readouterr().out
    assert main(["jobs", "status", "--queue", queue_url]) == 0
    assert "0 queued, 0 running, 12 done" in capsys.readouterr().out
    queue = Queue(queue_url)
    with queue.connect() as con:
        workers = {w for (w,) in con.execute("SELECT DISTINCT worker FROM units")}
    queue.close()
    assert len({w.rsplit(":", 2)[1] for w in workers}) == 2  # two process ids


def test_a_worker_killed_inside_the_write_leaves_its_units_to_the_next(queue_url, spec, tmp_path):
    from tests.test_jobs_kill import DRIVER as KILLED  # marks "WRITTEN" after a batch's rows, before commit

    queue = Queue(queue_url)
    submit(queue, spec)
    driver = tmp_path / "killed.py"
    driver.write_text(KILLED)
    proc = subprocess.Popen([sys.executable, str(driver), queue_url], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    watchdog = threading.Timer(120, proc.kill)
    watchdog.start()
    written = 0
    for line in proc.stdout:
        written += line.strip() == "WRITTEN"
        if written == 2:  # inside the second batch's transaction
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert watchdog.is_alive(), "the driver hung"
    watchdog.cancel()
    with queue.connect() as con:
        deadline = time.monotonic() + 60
        while con.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                          " AND pid <> pg_backend_pid()")[0][0]:  # the server ends the dead worker's session
            assert time.monotonic() < deadline
            time.sleep(0.05)
        done = con.execute("SELECT count(*) FROM units WHERE status = 'done'")[0][0]
        assert done == 2 and con.execute("SELECT count(*) FROM results")[0][0] == 2 * 2  # the first batch only
    assert runner.run(queue).counts["done"] == 10
    with queue.connect() as con:
        assert con.execute("SELECT count(*), count(DISTINCT unit_id) FROM results")[0] == (24, 12)
        assert con.execute("SELECT count(DISTINCT key || run_id) FROM results")[0][0] == 12
        got = {(r[0], r[1], r[2], r[3]): r[4] for r in con.results()}
    queue.close()
    assert got == reference(spec, tmp_path)
