"""The attempt counter: a unit that kills the process evaluating it is claimed again, alone, at most
--max-attempts times, then fails with the reason; the units it shared a batch with are done. The killer is
tests/jobs_hook/sitecustomize.py (a real SIGKILL of the evaluating process)."""

from __future__ import annotations

import csv
import io
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from hiersql.jobs import submit
from hiersql.jobs.queue import Queue
from hiersql.jobs.runner import run
from tests.test_jobs import make_job, stored, values

ROOT = Path(__file__).resolve().parents[1]
HOOK = ROOT / "tests" / "jobs_hook"


def killer_job(tmp_path: Path, fixtures_dir: Path) -> Path:
    """The demo job (4 units) with a fifth, ``killer`` (a copy of ``shallow``), in the demo dataset."""
    spec = make_job(tmp_path, fixtures_dir)
    shutil.copy(tmp_path / "preds" / "shallow.tsv", tmp_path / "preds" / "killer.tsv")
    return spec


def hook_env(**hooks: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(HOOK)]), **hooks}


def hiersql(*args: str, killer: str = "killer") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hiersql", "jobs", *args], capture_output=True, text=True,
                          env=hook_env(HIERSQL_TEST_KILLER=killer), timeout=300)


def reference(tmp_path: Path, fixtures_dir: Path) -> dict:
    folder = tmp_path / "reference"
    folder.mkdir()
    queue = Queue(folder / "q.duckdb")
    submit(queue, make_job(folder, fixtures_dir))
    assert run(queue).counts["done"] == 4
    queue.close()
    return values(stored(folder / "q.duckdb"))


def test_a_unit_that_kills_its_worker_process_fails_after_max_attempts(fixtures_dir, tmp_path):
    spec = killer_job(tmp_path, fixtures_dir)
    done = hiersql("run", str(spec), "--workers", "2", "--max-attempts", "3")
    assert done.returncode == 1, done.stderr
    assert done.stderr == f"hiersql: error: {spec}: 1 of 5 unit(s) failed (`hiersql jobs status` lists the errors)\n"
    error = "gave up after 3 attempt(s) (--max-attempts): its worker process was killed by SIGKILL"
    assert f"failed: demo/killer: {error}" in done.stdout
    assert "5 unit(s) processed: 4 done, 0 unchanged, 1 failed" in done.stdout
    status = hiersql("status", "--queue", str(tmp_path / "q.duckdb"))
    assert status.returncode == 0, status.stderr
    # demo-root's unit once; the killer's batch (demo, 4 units) lost once, then each of its units claimed
    # alone: 3 units once more, the killer twice more: 1 + 4 + 3 + 2
    assert "0 queued, 0 running, 4 done, 0 skipped, 1 failed, 0 cancelled; 10 attempt(s), 4 unit(s) retried" \
        in status.stdout, status.stdout
    assert f"  failed: demo/killer (3 attempt(s)): {error}" in status.stdout
    assert values(stored(tmp_path / "q.duckdb")) == reference(tmp_path, fixtures_dir)


def test_max_attempts_one_fails_at_the_first_stop(fixtures_dir, tmp_path):
    spec = killer_job(tmp_path, fixtures_dir)
    done = hiersql("run", str(spec), "--workers", "2", "--max-attempts", "1", "--batch", "1")
    assert done.returncode == 1, done.stderr
    assert "failed: demo/killer: gave up after 1 attempt(s) (--max-attempts): its worker process was killed by" \
        " SIGKILL" in done.stdout
    assert "4 done, 0 unchanged, 1 failed" in done.stdout


def test_one_worker_outlives_a_unit_that_kills_its_process(fixtures_dir, tmp_path):
    """One worker evaluates in a child process too: the unit kills that process, not the run, which claims
    the units of the lost batch alone, starts the child again and gives up on the unit at the third kill."""
    spec = killer_job(tmp_path, fixtures_dir)
    done = hiersql("run", str(spec))
    assert done.returncode == 1, done.stderr
    assert "failed: demo/killer: gave up after 3 attempt(s) (--max-attempts): its worker process was killed by" \
        " SIGKILL" in done.stdout, done.stdout
    status = hiersql("status", "--queue", str(tmp_path / "q.duckdb")).stdout
    assert "4 done, 0 skipped, 1 failed, 0 cancelled; 10 attempt(s), 4 unit(s) retried" in status, status
    assert values(stored(tmp_path / "q.duckdb")) == reference(tmp_path, fixtures_dir)


def test_a_run_killed_from_outside_costs_its_units_nothing(fixtures_dir, tmp_path):
    """SIGKILL of a one-worker run while its child evaluates, four times (more than --max-attempts): no unit
    gives up; the next run does every unit."""
    spec = make_job(tmp_path, fixtures_dir)
    queue = ["--queue", str(tmp_path / "q.duckdb")]
    assert hiersql("submit", str(spec)).returncode == 0
    started = tmp_path / "started"
    for _ in range(4):
        started.unlink(missing_ok=True)
        proc = subprocess.Popen([sys.executable, "-m", "hiersql", "jobs", "run", *queue], stdout=subprocess.DEVNULL,
                                env=hook_env(HIERSQL_TEST_SLOW="30", HIERSQL_TEST_STARTED=str(started)))
        deadline = time.monotonic() + 60
        while not started.exists() and time.monotonic() < deadline:  # claimed (attempts committed), evaluating
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=60) == -signal.SIGKILL
    status = hiersql("status", *queue).stdout
    # the first run's batch (the demo dataset's 3 units), then its first unit claimed alone by each next run
    assert "4 queued, 0 running, 0 done, 0 skipped, 0 failed, 0 cancelled; 6 attempt(s), 1 unit(s) retried" \
        in status, status
    done = hiersql("run", *queue)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 unit(s) processed: 4 done, 0 unchanged, 0 failed" in done.stdout, done.stdout
    assert values(stored(tmp_path / "q.duckdb")) == reference(tmp_path, fixtures_dir)


def test_workers_started_by_the_library_are_new_interpreters(fixtures_dir, tmp_path, monkeypatch):
    """run(workers=2) in a process with threads (this one) starts its evaluating processes as new interpreters
    (python -m hiersql.jobs.child), which a killed one is too."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), str(HOOK)]))
    monkeypatch.setenv("HIERSQL_TEST_KILLER", "killer")
    spec = killer_job(tmp_path, fixtures_dir)
    queue = Queue(tmp_path / "q.duckdb")
    submit(queue, spec)
    summary = run(queue, workers=2, max_attempts=2)
    queue.close()
    assert summary.counts == {"done": 4, "failed": 1}
    assert summary.failures == [("demo", "killer", "gave up after 2 attempt(s) (--max-attempts): its worker"
                                 " process was killed by SIGKILL")]
    assert values(stored(tmp_path / "q.duckdb")) == reference(tmp_path, fixtures_dir)


def test_a_killed_run_leaves_no_child_evaluating_and_resumes(fixtures_dir, tmp_path):
    """SIGKILL of a run of two workers while its children evaluate: the children see their sockets close and
    exit (they hold the run's stdout: it ends), nothing of the lost batches is stored, the next run does them."""
    spec = make_job(tmp_path, fixtures_dir)
    path = tmp_path / "q.duckdb"
    proc = subprocess.Popen([sys.executable, "-m", "hiersql", "jobs", "run", str(spec), "--workers", "2"],
                            stdout=subprocess.PIPE, text=True, env=hook_env(HIERSQL_TEST_SLOW="3"))
    assert proc.stdout.readline().startswith("job ")  # submitted: the children are evaluating, slowly
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    closed = threading.Event()
    threading.Thread(target=lambda: (proc.stdout.read(), closed.set()), daemon=True).start()
    assert closed.wait(30), "a child of the killed run is still running"
    queue = Queue(path)
    with queue.connect() as con:
        assert con.execute("SELECT count(*) FROM results")[0][0] == 0
        assert dict(con.execute("SELECT status, count(*) FROM units GROUP BY status")) == {"queued": 4}
    assert run(queue, workers=2).counts["done"] == 4
    queue.close()
    assert values(stored(path)) == reference(tmp_path, fixtures_dir)


def test_results_keep_the_keys_whose_recompute_failed_or_waits(fixtures_dir, tmp_path):
    """A `--recompute` whose unit failed (its worker process killed, --max-attempts 1), then one only
    submitted: the latest submission's keys are those of the run before (same inputs), and `jobs results`
    shows their stored rows (it left out the failed unit, then every unit)."""
    spec = killer_job(tmp_path, fixtures_dir)
    queue = ["--queue", str(tmp_path / "q.duckdb")]

    def results() -> list[dict[str, str]]:
        done = hiersql("results", *queue, "--format", "csv")
        assert done.returncode == 0, done.stderr
        return list(csv.DictReader(io.StringIO(done.stdout)))

    def values(rows: list[dict[str, str]]) -> set[tuple[str, ...]]:
        return {(r["dataset"], r["system"], r["metric"], r["average"], r["value"], r["key"]) for r in rows}

    assert hiersql("run", str(spec), killer="nobody").returncode == 0
    before = results()
    assert len(before) == 5 * 2
    failed = hiersql("run", str(spec), "--recompute", "--workers", "2", "--max-attempts", "1", "--batch", "1")
    assert failed.returncode == 1 and "4 done, 0 unchanged, 1 failed" in failed.stdout, failed.stdout
    after = results()
    assert values(after) == values(before)
    # the killer's rows are those of the first run; the others' of the recompute
    assert [r for r in after if r["system"] == "killer"] == [r for r in before if r["system"] == "killer"]
    assert {r["run_id"] for r in after if r["system"] != "killer"}.isdisjoint(r["run_id"] for r in before)
    assert hiersql("submit", str(spec), "--recompute").returncode == 0  # every unit queued, none computed
    assert results() == after
