"""A worker killed (SIGKILL) at random points, inside the write and the commit too, then resumed: no unit lost,
none duplicated, none mixed, every value that of an uninterrupted run."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from hiersql.jobs import submit
from hiersql.jobs.queue import Queue
from hiersql.jobs.runner import run
from tests.test_jobs import make_job

ROOT = Path(__file__).resolve().parents[1]
KILLS = 12
SEED = 17
# The worker, in a process of its own. Each batch is slowed down (0.15 s of evaluation) so that a random
# kill lands in the work; the markers let the test kill inside the write (rows and statuses written, not
# committed) and at the start of the commit.
DRIVER = """
import sys, time
from hiersql.jobs import runner
from hiersql.jobs.queue import Connection, Queue

evaluate, finish, commit = runner.evaluate, Connection.finish, Connection.commit

def slow_evaluate(units, stores):
    time.sleep(0.15)
    return evaluate(units, stores)

def marked_finish(self, *args):
    finish(self, *args)
    print("WRITTEN", flush=True)
    time.sleep(0.3)

def marked_commit(self):
    print("COMMIT", flush=True)
    commit(self)

runner.evaluate, Connection.finish, Connection.commit = slow_evaluate, marked_finish, marked_commit
print("START", flush=True)
runner.run(Queue(sys.argv[1]), max_batch=2)
print("END", flush=True)
"""


@pytest.fixture(scope="module")
def job(fixtures_dir, tmp_path_factory):
    """A job of 9 units (8 systems of the demo dataset, one of demo-root) and its values from a run that
    nobody interrupts."""
    folder = tmp_path_factory.mktemp("job")
    spec = make_job(folder, fixtures_dir)
    for i, name in enumerate(("cautious", "flat_errors", "shallow", "cautious", "shallow")):
        shutil.copy(folder / "preds" / f"{name}.tsv", folder / "preds" / f"copy{i}.tsv")
    queue = Queue(folder / "reference.duckdb")
    submit(queue, spec)
    assert run(queue).counts["done"] == 9
    with queue.connect() as con:
        reference = {(r[0], r[1], r[2], r[3]): r[4] for r in con.results()}
    queue.close()
    assert len(reference) == 9 * 2
    return spec, reference


def check_queue(path: Path, reference: dict) -> None:
    queue = Queue(path)
    try:
        with queue.connect() as con:
            units = con.execute("SELECT unit_id, dataset, system, key, status, run_id FROM units")
            rows = con.execute("SELECT unit_id, dataset, system, key, run_id, metric, average, value FROM results")
            latest = {(r[0], r[1], r[2], r[3]): r[4] for r in con.results()}
    finally:
        queue.close()
    assert len(units) == 9 and {u[4] for u in units} == {"done"}  # none lost
    by_unit = {u[0]: u for u in units}
    for unit_id, dataset, system, key, run_id, *_ in rows:  # none mixed: each row is its unit's, of its run
        unit = by_unit[unit_id]
        assert (dataset, system, key, run_id) == (unit[1], unit[2], unit[3], unit[5])
    # none duplicated: two rows (hp, hr micro) per unit, one run per key
    assert sorted(r[0] for r in rows) == sorted(u[0] for u in units for _ in range(2))
    assert len({(r[3], r[4]) for r in rows}) == 9
    assert latest == reference


def kill_at(driver: Path, path: Path, marker: str, skip: int, delay: float) -> int:
    """Run the driver on the queue at ``path`` and SIGKILL it ``delay`` seconds after the ``skip + 1``-th
    ``marker`` line; its exit code."""
    proc = subprocess.Popen([sys.executable, str(driver), str(path)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    watchdog = threading.Timer(120, proc.kill)  # bounded: a driver that hangs is killed
    watchdog.start()
    with proc.stdout:
        for line in proc.stdout:
            if line.strip() == marker:
                if skip == 0:
                    break
                skip -= 1
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    assert watchdog.is_alive(), "the driver hung"
    watchdog.cancel()
    return proc.returncode


def test_killed_anywhere_then_resumed(job, tmp_path):
    """Each kill has its own queue: the drivers run and are killed a few at a time (each kill point is a
    marker and a delay after it); each queue is resumed and checked in this thread."""
    spec, reference = job
    rng = random.Random(SEED)
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    kills = []
    for n, mode in enumerate(["random", "written", "commit"] * (KILLS // 3)):
        path = tmp_path / f"q{n}.duckdb"
        queue = Queue(path)
        submit(queue, spec)
        queue.close()
        marker = {"random": "START", "written": "WRITTEN", "commit": "COMMIT"}[mode]
        # which batch to kill in (the 1st to 4th of 5), and when after its marker
        skip = rng.randrange(4) if mode != "random" else 0
        delay = {"random": rng.uniform(0, 1.5), "written": rng.uniform(0, 0.25),
                 "commit": rng.uniform(0, 0.01)}[mode]
        kills.append((driver, path, marker, skip, delay))
    killed = 0
    with ThreadPoolExecutor(KILLS // 3) as pool:  # each queue resumed here while the next drivers run
        for (_, path, *_), code in zip(kills, pool.map(lambda kill: kill_at(*kill), kills), strict=True):
            killed += code == -signal.SIGKILL
            queue = Queue(path)  # resume
            run(queue)
            queue.close()
            check_queue(path, reference)
    assert killed >= KILLS - 2  # the random ones may come after the end


SLOW_RUN = Path(__file__).with_name("slow_jobs_run.py")
# faulthandler: on SIGABRT a run prints every thread's stack (stopped)
RUN_ENV = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONFAULTHANDLER": "1"}


def stopped(proc: subprocess.Popen, timeout: float = 60) -> tuple[str, str]:
    """The output of a run told to stop; one that has not ended within ``timeout`` seconds fails the test with
    its threads' stacks."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        _, err = proc.communicate(timeout=30)
        pytest.fail(f"the run did not stop within {timeout} s; its threads:\n{err}")


@pytest.mark.parametrize(("group", "stop", "code", "said"), [
    (False, signal.SIGINT, 130, "interrupted"),  # Ctrl-C, to the run's process
    # systemd, a container's stop, `kill -- -PGID`: the workers' child processes get it too, and leave it to
    # the run (as they leave Ctrl-C): no attempt ends with a lost worker
    (True, signal.SIGTERM, 143, "terminated")])
def test_a_stopped_run_commits_the_batches_at_hand_then_stops(job, tmp_path, group, stop, code, said):
    spec, reference = job
    path = tmp_path / "q.duckdb"
    queue = Queue(path)
    submit(queue, spec)
    queue.close()
    proc = subprocess.Popen([sys.executable, str(SLOW_RUN), str(path), "0.3", "finish",
                             "--workers", "2", "--batch", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=RUN_ENV, start_new_session=True)
    watchdog = threading.Timer(120, proc.kill)
    watchdog.start()
    for line in proc.stdout:  # the first batch is committed
        if line.strip() == "COMMITTED":
            break
    if group:
        os.killpg(proc.pid, stop)
    else:
        proc.send_signal(stop)
    out, err = stopped(proc)
    assert watchdog.is_alive(), "the driver hung"
    watchdog.cancel()
    assert (proc.returncode, err) == (code, f"hiersql: {said}\n")
    queue = Queue(path)
    with queue.connect() as con:
        states = dict(con.execute("SELECT status, count(*) FROM units GROUP BY status"))
        rows = con.execute("SELECT count(*), count(DISTINCT unit_id) FROM results")[0]
        lost = con.execute("SELECT count(*) FROM attempts WHERE error IS NOT NULL")[0][0]
    assert set(states) <= {"done", "queued"} and 0 < states.get("done", 0) < 9, states
    done = states["done"]  # said before it stops: the units committed, the batches at hand too
    assert out.splitlines()[-1] == f"{done} unit(s) processed: {done} done, 0 unchanged, 0 failed", out
    assert rows == (2 * done, done)  # the done units' rows, nothing of the others
    assert lost == 0
    run(queue)
    queue.close()
    check_queue(path, reference)


@pytest.mark.parametrize(("stop", "after", "code", "said"), [(signal.SIGINT, 1.0, 130, "interrupted"),
                                                            (signal.SIGTERM, 1.6, 143, "terminated")])
def test_a_signal_while_duckdb_runs_a_query_is_an_interrupt(data_dir, stop, after, code, said):
    # DuckDB turns the KeyboardInterrupt raised during its query into its own 'Query interrupted' error,
    # which was reported as an internal error (exit 1); every family of GermEval B runs ~4 s on this machine,
    # most of it in DuckDB queries on the main thread
    canonical = data_dir / "canonical"
    proc = subprocess.Popen([sys.executable, "-m", "hiersql", "evaluate", "--taxonomy", str(canonical / "taxonomy.tsv"),
                             "--truth", str(canonical / "truth_b.tsv"), "--pred", str(canonical / "pred_b" / "*.tsv"),
                             "--metrics", "all"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(after)
    proc.send_signal(stop)
    _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (code, f"hiersql: {said}\n")


def test_more_stop_signals_while_the_batch_at_hand_commits_change_nothing(job, tmp_path):
    """Ctrl-C pressed again (and again) while the one worker evaluates its batch at hand: ignored until that
    batch is committed, then exit 130. Leaving at the second one closed the queue under the batch (lost), and
    the interpreter's exit under a running DuckDB query aborted in C++ (exit 134)."""
    spec, reference = job
    path = tmp_path / "q.duckdb"
    queue = Queue(path)
    submit(queue, spec)
    queue.close()
    proc = subprocess.Popen([sys.executable, str(SLOW_RUN), str(path), "1.5", "marked", "--batch", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=RUN_ENV)
    watchdog = threading.Timer(120, proc.kill)
    watchdog.start()
    marks = []
    for line in proc.stdout:  # the first batch committed, the second claimed and being evaluated
        marks.append(line.strip())
        if marks[-2:] == ["COMMITTED", "EVALUATING"]:
            break
    for _ in range(3):
        proc.send_signal(signal.SIGINT)
        time.sleep(0.2)
    out, err = stopped(proc)
    assert watchdog.is_alive(), "the driver hung"
    watchdog.cancel()
    assert (proc.returncode, err) == (130, "hiersql: interrupted\n")
    assert out.splitlines()[-1] == "4 unit(s) processed: 4 done, 0 unchanged, 0 failed", out
    queue = Queue(path)
    with queue.connect() as con:
        assert dict(con.execute("SELECT status, count(*) FROM units GROUP BY status")) == {"done": 4, "queued": 5}
        assert con.execute("SELECT count(*) FROM attempts")[0][0] == 4  # each claim committed
    run(queue)
    queue.close()
    check_queue(path, reference)
