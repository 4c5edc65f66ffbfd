"""Batch jobs on a PostgreSQL queue (a real server, started by the ``pg_dsn`` fixture of conftest.py): two
workers do every unit exactly once; a lost connection is retried; a worker killed inside its write leaves its
units to the next; ``--workers N`` processes."""

from __future__ import annotations

import contextlib
import os
import re
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
from tests.test_jobs import QUEUE_COLUMNS, make_job
from tests.test_jobs_attempts import hook_env

pytestmark = pytest.mark.postgres
ROOT = Path(__file__).resolve().parents[1]
# A worker process whose batches take 0.5 s longer, so that two of them overlap (also when one of them
# starts late on a loaded host: the 6 batches take 3 s).
DRIVER = """
import os, pathlib, sys, time
from hiersql.jobs import runner
from hiersql.jobs.queue import Queue

# both workers start claiming together (on a loaded machine one could otherwise do every unit before the
# other has imported hiersql)
ready = pathlib.Path(sys.argv[2])
(ready / str(os.getpid())).touch()
deadline = time.monotonic() + 60
while len(list(ready.iterdir())) < 2 and time.monotonic() < deadline:
    time.sleep(0.05)

evaluate = runner.evaluate
me = os.getpid()

def slow_evaluate(units, stores):
    # (in this worker's child process, forked with this module) a batch waits until the other worker evaluates
    # one too, which starts and claims while this one holds its claim. A fixed sleep was not enough: under the
    # CI's load one worker did all 12 units before the other claimed any, which waited to open the queue
    (ready / f"evaluating-{me}").touch()
    deadline = time.monotonic() + 30
    while len(list(ready.glob("evaluating-*"))) < 2:
        if time.monotonic() > deadline:
            (ready / "waited").touch()
            break
        time.sleep(0.05)
    return evaluate(units, stores)

runner.evaluate = slow_evaluate
kids = runner.children(1)  # forked before the queue's connection opens (as hiersql jobs run does): they have the patch
runner.run(Queue(sys.argv[1]), max_batch=2, processes=kids)
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
    ready = tmp_path / "ready"
    ready.mkdir()
    procs = [subprocess.Popen([sys.executable, str(driver), queue_url, str(ready)], env=env) for _ in range(2)]
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
    assert not (ready / "waited").exists(), "a worker could not open the queue while the other held a batch"
    assert running_seen >= 1  # a claimed unit is a locked row, shown as running
    assert (status["done"], status["queued"], status["running"]) == (12, 0, 0)
    assert got == reference(spec, tmp_path)


def test_a_lost_connection_is_retried(queue_url, spec, tmp_path, monkeypatch, caplog):
    queue = Queue(queue_url)
    submit(queue, spec)
    evaluate = runner.Child.evaluate  # (in the run's process, while its child evaluates)
    cut = []

    def evaluate_and_cut(child, units):
        if not cut:  # the server ends every other session of the database: the worker's two (its batch's,
            # mid-transaction, and the one that counts its claims)
            with psycopg.connect(queue_url, autocommit=True) as con:
                cut.append(con.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                                       " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                                       ).fetchone()[0])
        return evaluate(child, units)

    monkeypatch.setattr(runner.Child, "evaluate", evaluate_and_cut)
    monkeypatch.setattr(runner, "BACKOFF", 0.05)
    with pytest.warns(RuntimeWarning) as said:
        summary = runner.run(queue, max_batch=4)
    assert cut == [2]
    # the retry is said (one line); psycopg's own line about the broken pipeline of the same error is not
    assert len(said) == 1 and re.fullmatch(r"worker \S+: its batch was rolled back \(OperationalError: .+\); it"
                                           r" goes on in 0\.05 s \(retry 1 of 5\)", str(said[0].message)), said
    assert not [r for r in caplog.records if r.name.startswith("psycopg")]
    assert summary.counts["done"] == 12 and not summary.failures
    with queue.connect() as con:
        assert con.execute("SELECT count(*), count(DISTINCT unit_id) FROM results")[0] == (24, 12)
        # the cut batch's 4 units were claimed twice (then one at a time), the others once
        assert con.execute("SELECT count(*), count(DISTINCT unit_id) FROM attempts")[0] == (12 + 4, 12)
        got = {(r[0], r[1], r[2], r[3]): r[4] for r in con.results()}
    queue.close()
    assert got == reference(spec, tmp_path)


def test_parallel_workers_on_postgres(queue_url, spec, capsys):
    assert main(["jobs", "run", str(spec), "--queue", queue_url, "--workers", "2", "--batch", "3"]) == 0
    assert "12 unit(s) processed: 12 done, 0 unchanged, 0 failed" in capsys.readouterr().out
    assert main(["jobs", "status", "--queue", queue_url]) == 0
    assert "0 queued, 0 running, 12 done" in capsys.readouterr().out
    queue = Queue(queue_url)
    with queue.connect() as con:
        workers = {w for (w,) in con.execute("SELECT DISTINCT worker FROM units")}
    queue.close()
    assert len(workers) == 2  # both took units


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


def slow_run(spec: Path, queue_url: str, seconds: float, batch: int = 2) -> subprocess.Popen:
    """``hiersql jobs run SPEC --workers 2 --batch BATCH`` on the queue, each batch first sleeping ``seconds`` in
    the process that evaluates it (tests/jobs_hook)."""
    return subprocess.Popen([sys.executable, "-m", "hiersql", "jobs", "run", str(spec), "--queue", queue_url,
                             "--workers", "2", "--batch", str(batch)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=hook_env(HIERSQL_TEST_SLOW=str(seconds)))


def until(condition, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def children_of(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (it exists and is not a zombie that its parent has not reaped yet)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def done_units(con) -> int:
    return con.execute("SELECT count(*) FROM units WHERE status = 'done'")[0][0]


@pytest.mark.parametrize(("stop", "code", "said"), [(signal.SIGINT, 130, "interrupted"),
                                                    (signal.SIGTERM, 143, "terminated")])
def test_a_signal_to_the_run_stops_its_parallel_workers(queue_url, spec, stop, code, said):
    """Ctrl-C, or SIGTERM to the run's process alone (timeout, kill, a scheduler): the workers commit their
    batches at hand and stop, the rest stays queued, the summary counts what was committed, and no worker
    process is left (worker processes that went on draining the queue ignored both)."""
    proc = slow_run(spec, queue_url, 1.0)
    queue = Queue(queue_url)
    with queue.connect() as con:
        until(lambda: done_units(con) > 0)
        workers = children_of(proc.pid)
        proc.send_signal(stop)
        out, err = proc.communicate(timeout=60)
        assert (proc.returncode, err) == (code, f"hiersql: {said}\n")
        states = dict(con.execute("SELECT status, count(*) FROM units GROUP BY status"))
        assert set(states) == {"done", "queued"} and states["done"] < 12, states
        done = states["done"]
        assert out.splitlines()[-1] == f"{done} unit(s) processed: {done} done, 0 unchanged, 0 failed", out
        assert con.execute("SELECT count(*) FROM attempts")[0][0] == done  # every claim was committed
        assert con.execute("SELECT count(*), count(DISTINCT unit_id) FROM results")[0] == (2 * done, done)
    queue.close()
    assert len(workers) == 2 and not any(alive(pid) for pid in workers)


def test_a_killed_run_leaves_no_worker_behind(queue_url, spec):
    """SIGKILL of the run: its worker processes see their sockets close and exit at once; the run's sessions
    end with it, so their batches roll back and stay queued, and nothing is claimed or committed after (12
    batches of 1 s: worker processes left behind would go on for seconds)."""
    proc = slow_run(spec, queue_url, 1.0, batch=1)
    queue = Queue(queue_url)
    with queue.connect() as con:
        until(lambda: done_units(con) > 0)
        workers = children_of(proc.pid)
        proc.kill()
        proc.wait(timeout=60)
        until(lambda: not any(alive(pid) for pid in workers), timeout=2)
        proc.communicate(timeout=60)  # the workers held its stdout and stderr too
        until(lambda: not con.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                                      " AND pid <> pg_backend_pid()")[0][0])
        done = done_units(con)
        claims = con.execute("SELECT count(*) FROM attempts")[0][0]
        time.sleep(2)  # two batches' time: a worker left behind would claim and commit meanwhile
        assert (done_units(con), con.execute("SELECT count(*) FROM attempts")[0][0]) == (done, claims)
        status = con.status()[0]
        assert (status["queued"], status["running"], status["done"]) == (12 - done, 0, done)
    assert len(workers) == 2
    assert runner.run(queue).counts["done"] == 12 - done
    queue.close()


def test_a_worker_process_that_dies_is_started_again(queue_url, spec, tmp_path):
    """Both evaluating processes SIGKILLed (as the OOM killer would) while they evaluate a batch each: the
    claims of their units say why, they are started again, every unit is done in the same run, exit 0 (was:
    no reason, no restart, an internal error)."""
    proc = slow_run(spec, queue_url, 0.6)
    queue = Queue(queue_url)
    with queue.connect() as con:
        until(lambda: con.execute("SELECT count(DISTINCT worker) FROM attempts")[0][0] == 2)
        workers = children_of(proc.pid)
        for pid in workers:
            os.kill(pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
        assert (proc.returncode, err) == (0, "")
        assert len(workers) == 2
        assert out.splitlines()[-1] == "12 unit(s) processed: 12 done, 0 unchanged, 0 failed", out
        # each worker's batch at hand (2 units, unless a worker was between batches) lost once, then claimed
        # again: every claim either has that reason or was committed
        (reason, lost, workers_lost), = con.execute(
            "SELECT error, count(*), count(DISTINCT worker) FROM attempts WHERE error IS NOT NULL GROUP BY error")
        assert (reason, workers_lost) == ("its worker process was killed by SIGKILL", 2) and lost >= 2
        assert con.execute("SELECT count(*) FROM attempts")[0][0] == 12 + lost
        got = {(r[0], r[1], r[2], r[3]): r[4] for r in con.results()}
    queue.close()
    assert got == reference(spec, tmp_path)


def test_cancel_leaves_the_units_a_worker_holds_and_does_not_wait_for_them(queue_url, spec):
    queue = Queue(queue_url)
    submit(queue, spec)
    with queue.connect() as worker:
        assert len(worker.claim(None, 1, 3)) == 3  # a worker's claim: 3 rows locked until its batch commits
        done = subprocess.run([sys.executable, "-m", "hiersql", "jobs", "cancel", "--queue", queue_url, "--job",
                               "demo-job"], capture_output=True, text=True, timeout=30,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert (done.returncode, done.stdout, done.stderr) == (0, "cancelled 9 queued unit(s)\n", "")
        worker.rollback()  # the claimed units stay queued (committed, they would be done)
    with queue.connect() as con:
        assert dict(con.execute("SELECT status, count(*) FROM units GROUP BY status")) == {"queued": 3,
                                                                                          "cancelled": 9}
    queue.close()


@pytest.mark.parametrize("action", [["status"], ["results"], ["cancel", "--all"]])
def test_a_database_that_is_not_a_queue_is_one_line_and_left_as_it_is(queue_url, action, capsys):
    database = psycopg.conninfo.conninfo_to_dict(queue_url)["dbname"]
    assert main(["jobs", *action, "--queue", queue_url]) == 2
    assert capsys.readouterr().err == (f"hiersql: error: --queue: not a job queue (no jobs table in database"
                                       f" '{database}')\n")
    with psycopg.connect(queue_url) as con:
        assert con.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
                           ).fetchone()[0] == 0


def postgres_tables(url: str) -> dict[str, tuple[list, list]]:
    """Every relation of the public schema (tables, their indexes, ...): its columns (name, type) and, for a
    table, its rows."""
    with psycopg.connect(url) as con:
        relations = con.execute("SELECT relname, relkind FROM pg_class WHERE relnamespace = 'public'::regnamespace"
                                " ORDER BY relname").fetchall()
        return {name: (con.execute("SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid"
                                   " = %s::regclass AND attnum > 0 ORDER BY attnum", [f'public."{name}"']).fetchall(),
                       sorted(con.execute(f'SELECT * FROM public."{name}"').fetchall()) if kind == "r" else [])
                for name, kind in relations}


@pytest.mark.parametrize(("tables", "action", "named", "columns"), [
    ("CREATE TABLE results (x int); INSERT INTO results VALUES (42)", "run", "results", "x"),
    ("CREATE TABLE units (id int); CREATE TABLE jobs (id int, descr text); INSERT INTO jobs VALUES (1, 'backup')",
     "submit", "jobs", "id, descr"),
    ("CREATE TABLE attempts (unit_id text, n int); INSERT INTO attempts VALUES ('u1', 3)", "run", "attempts",
     "unit_id, n"),
    ("CREATE TABLE jobs (id int); CREATE TABLE units (unit_id text)", "status", "jobs", "id"),
], ids=["results", "jobs-units", "attempts", "status"])
def test_a_database_with_a_table_of_the_users_is_refused_and_left_as_it_is(queue_url, spec, capsys, tables, action,
                                                                           named, columns):
    # tuA finding 14: the user's table was given the queue's columns (and the other tables made, units queued),
    # then an internal error; now one line naming the database (without its password) and the table, and
    # nothing made or changed (the check and the tables made are one transaction)
    with psycopg.connect(queue_url, autocommit=True) as con:
        con.execute(tables)
    before = postgres_tables(queue_url)
    url = queue_url.replace("postgresql://hiersql@", "postgresql://hiersql:s3cret@")  # (trust: no password read)
    assert url != queue_url
    assert main(["jobs", action, *([str(spec)] if action != "status" else []), "--queue", url]) == 2
    assert capsys.readouterr().err == (
        f"hiersql: error: {queue_url}: has a table {named!r} that is not hiersql's (its columns {columns}; hiersql's"
        f" {QUEUE_COLUMNS[named]}): give hiersql a database of its own: {named!r}\n")
    assert postgres_tables(queue_url) == before


def test_a_database_with_a_type_of_a_queue_tables_name_is_refused(queue_url, spec, capsys):
    # an enum named `units`: no relation, so not a table of the user's, but CREATE TABLE units fails on it
    # ("type units already exists": an internal error before); now one line, nothing made
    with psycopg.connect(queue_url, autocommit=True) as con:
        con.execute("CREATE TYPE units AS ENUM ('small', 'large')")
    before = postgres_tables(queue_url)
    assert main(["jobs", "submit", str(spec), "--queue", queue_url]) == 2
    assert capsys.readouterr().err == (f"hiersql: error: {queue_url}: has a type 'units' named as a table of"
                                       " hiersql's job queue: give hiersql a database of its own: 'units'\n")
    assert postgres_tables(queue_url) == before == {}


def test_a_results_table_of_hiersqls_form_becomes_the_queues(queue_url, spec, capsys):
    # a results table of `hiersql evaluate --db`'s columns is hiersql's: the queue adds its columns to it and
    # keeps its rows; a table "Results" is another table of PostgreSQL's, not the queue's, and is left alone
    with psycopg.connect(queue_url, autocommit=True) as con:
        con.execute("CREATE TABLE results (run_id text NOT NULL, dataset text, system text NOT NULL, metric text"
                    " NOT NULL, average text, value double precision, created_at timestamp);"
                    " INSERT INTO results VALUES ('r0', 'd', 's', 'hp', 'micro', 0.5, now());"
                    ' CREATE TABLE "Results" (x int); INSERT INTO "Results" VALUES (42)')
    users = postgres_tables(queue_url)["Results"]
    assert main(["jobs", "submit", str(spec), "--queue", queue_url]) == 0
    assert "12 unit(s), 12 queued" in capsys.readouterr().out
    tables = postgres_tables(queue_url)
    assert tables["Results"] == users
    assert ", ".join(c[0] for c in tables["results"][0]) == QUEUE_COLUMNS["results"]
    assert [r[:6] for r in tables["results"][1]] == [("r0", "d", "s", "hp", "micro", 0.5)]


def test_report_of_a_postgres_queue_shows_the_latest_results_of_the_job(queue_url, fixtures_dir, tmp_path, capsys):
    """``hiersql report --db postgresql://...`` (refused before): the rows of ``jobs results``, per job. A
    prediction file edited, run, restored (and cautious taken out), run: the restored values, no cautious; a
    second job with other options and a dataset also named ``demo`` stays out of ``--job demo-job``. By hand
    (tests/test_cli.py): shallow's micro hR on the demo is 14/26 = 0.5385 without the root."""
    from tests.test_report_jobs import as_shown, jobs_results, page_units, page_values, report

    spec = make_job(tmp_path, fixtures_dir)
    shallow = tmp_path / "preds" / "shallow.tsv"
    original = shallow.read_text()
    assert main(["jobs", "run", str(spec), "--queue", queue_url]) == 0
    shallow.write_text("".join(original.splitlines(keepends=True)[1:]))  # one instance less
    assert main(["jobs", "run", str(spec), "--queue", queue_url]) == 0
    assert as_shown(jobs_results(capsys, queue_url))[("demo", "shallow", "hr micro")] != "0.5385"
    shallow.write_text(original)
    (tmp_path / "preds" / "cautious.tsv").unlink()
    assert main(["jobs", "run", str(spec), "--queue", queue_url]) == 0
    mine = jobs_results(capsys, queue_url)
    page = report(capsys, queue_url, tmp_path / "r.html")
    assert page_values(page) == as_shown(mine)
    assert page_values(page)[("demo", "shallow", "hr micro")] == "0.5385"
    assert {s for _, s in page_units(page)} == {"flat_errors", "shallow"}
    other = tmp_path / "other.toml"
    other.write_text('name = "other"\nmetrics = ["hp", "hr"]\n[options]\naverage = ["micro"]\ninclude_root = true\n'
                     '[[dataset]]\nname = "demo"\ntaxonomy = "taxonomy.tsv"\ntruth = "truth.tsv"\n'
                     'predictions = "preds/shallow.tsv"\n', encoding="utf-8")
    assert main(["jobs", "run", str(other), "--queue", queue_url]) == 0
    theirs = jobs_results(capsys, queue_url, "--job", "other")
    assert page_values(report(capsys, queue_url, tmp_path / "mine.html", "--job", "demo-job")) == as_shown(mine)
    both = page_values(report(capsys, queue_url, tmp_path / "both.html"))
    assert both == as_shown(mine, "demo-job · {dataset}") | as_shown(theirs, "other · {dataset}")


def test_report_of_a_postgres_database_that_is_not_a_queue(queue_url, tmp_path, capsys):
    database = psycopg.conninfo.conninfo_to_dict(queue_url)["dbname"]
    assert main(["report", "--db", queue_url, "--out", str(tmp_path / "r.html")]) == 2
    assert capsys.readouterr().err == (f"hiersql: error: --db: not a job queue (no jobs table in database"
                                       f" '{database}')\n")
    assert not (tmp_path / "r.html").exists()
