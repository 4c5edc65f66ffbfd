"""The orchestrator recipe of docs/jobs.md (an Airflow task, a Dagster op): its body calls
``hiersql.jobs.runner.run_job`` on the job file. Run here as that task runs it, on a real DuckDB queue: the
counts on success; ``UnitsFailed`` (exit status 1, the failures) when units fail, which fails the task;
``QueueBusy`` (75) when another process holds the queue file, which the recipe retries."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hiersql.jobs.queue import QueueBusy
from hiersql.jobs.runner import UnitsFailed, run_job
from tests.test_jobs import make_job, stored
from tests.test_jobs_results import failing_job


def nightly_evaluation(spec: str) -> dict[str, int]:
    """The task's body in docs/jobs.md (Airflow's ``@task``, Dagster's ``@op``), the job file given."""
    summary = run_job(spec, workers=2)  # UnitsFailed fails the task; QueueBusy is retried
    return dict(summary.counts)


def test_the_task_returns_the_counts_and_the_queue_holds_the_rows(fixtures_dir, tmp_path):
    spec = make_job(tmp_path, fixtures_dir)
    assert nightly_evaluation(str(spec)) == {"done": 4}
    assert len(stored(tmp_path / "q.duckdb")) == 4 * 2  # 4 units × hp, hr (micro)
    assert nightly_evaluation(str(spec)) == {}  # unchanged inputs: nothing to compute


def test_failed_units_fail_the_task_with_exit_status_1(fixtures_dir, tmp_path):
    spec = failing_job(tmp_path, fixtures_dir)
    with pytest.raises(UnitsFailed) as caught:
        nightly_evaluation(str(spec))
    assert caught.value.exit_status == 1 and caught.value.job_id
    assert caught.value.summary.counts == {"done": 4, "failed": 1}
    [(dataset, system, error)] = caught.value.summary.failures
    assert (dataset, system) == ("demo", "broken") and "Nope" in error


def test_a_held_queue_file_is_busy_with_exit_status_75(fixtures_dir, tmp_path):
    spec = make_job(tmp_path, fixtures_dir)
    hold = "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('HELD', flush=True); time.sleep(60)"
    holder = subprocess.Popen([sys.executable, "-c", hold, str(tmp_path / "q.duckdb")], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline() == "HELD\n"
        with pytest.raises(QueueBusy) as caught:
            nightly_evaluation(str(spec))
    finally:
        holder.kill()
        holder.wait()
    assert caught.value.exit_status == 75 and str(holder.pid) in str(caught.value)
    assert nightly_evaluation(str(spec)) == {"done": 4}  # the retry, once the file is free
