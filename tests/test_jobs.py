"""Batch jobs on a DuckDB queue: the job file and its checks, content-hashed skips, failure isolation,
status, results, cancel, the queue file's lock and the schedule (kills: test_jobs_kill.py; PostgreSQL:
test_jobs_postgres.py)."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from hiersql import Evaluator, InputError
from hiersql.cli import main
from hiersql.jobs import submit
from hiersql.jobs.queue import Queue
from hiersql.jobs.runner import PUBLISH_EVERY, run
from hiersql.jobs.schedule import schedule

ROOT = Path(__file__).resolve().parents[1]
DEMO_SYSTEMS = ("cautious", "flat_errors", "shallow")


def make_job(tmp_path: Path, fixtures_dir: Path, extra: str = "", metrics: str = '["hp", "hr"]') -> Path:
    """A job of two datasets over the demo taxonomy and truth, with copies of the demo systems (so that a test
    may change one) in ``preds/``; ``extra`` is appended (more datasets)."""
    demo = fixtures_dir / "demo"
    (tmp_path / "preds").mkdir(exist_ok=True)
    for name in ("taxonomy", "truth", *DEMO_SYSTEMS):
        shutil.copy(demo / f"{name}.tsv", (tmp_path if name in ("taxonomy", "truth") else tmp_path / "preds"))
    spec = tmp_path / "job.toml"
    spec.write_text(f"""name = "demo-job"
queue = "q.duckdb"
metrics = {metrics}

[options]
average = ["micro"]

[[dataset]]
name = "demo"
taxonomy = "taxonomy.tsv"
truth = "truth.tsv"
predictions = "preds/*.tsv"

[[dataset]]
name = "demo-root"
taxonomy = "taxonomy.tsv"
truth = "truth.tsv"
predictions = ["shallow=preds/shallow.tsv"]
options = {{ include_root = true }}
{extra}""", encoding="utf-8")
    return spec


@pytest.fixture
def no_wait(monkeypatch):
    """``jobs schedule`` runs at once instead of waiting for the next minute of ``* * * * *``."""
    from hiersql.jobs import schedule as scheduler

    monkeypatch.setattr(scheduler, "_sleep", lambda seconds: None)


def said_by_schedule(err: str) -> list[str]:
    """The lines of stderr but the schedule's ``next run at`` ones."""
    return [line for line in err.splitlines() if ": next run at " not in line]


def stored(queue: Path, history: bool = False) -> list[tuple]:
    q = Queue(queue)
    try:
        with q.connect() as con:
            return con.results(history=history)
    finally:
        q.close()


def values(rows: list[tuple]) -> dict[tuple[str, str, str, str], float]:
    return {(r[0], r[1], r[2], r[3]): r[4] for r in rows}


def evaluate_csv(capsys, fixtures_dir: Path, *args: str) -> dict[tuple[str, str, str], float]:
    demo = fixtures_dir / "demo"
    assert main(["evaluate", "--taxonomy", str(demo / "taxonomy.tsv"), "--truth", str(demo / "truth.tsv"),
                 "--format", "csv", *args]) == 0
    return {(r["system"], r["metric"], r["average"]): float(r["value"])
            for r in csv.DictReader(io.StringIO(capsys.readouterr().out))}


def test_run_stores_the_values_of_evaluate(fixtures_dir, tmp_path, capsys):
    spec = make_job(tmp_path, fixtures_dir)
    assert main(["jobs", "check", str(spec)]) == 0
    assert capsys.readouterr().out == f"{spec}: 2 dataset(s), 4 unit(s)\n"
    assert main(["jobs", "run", str(spec)]) == 0
    out = capsys.readouterr().out
    assert "4 unit(s) processed: 4 done, 0 unchanged, 0 failed" in out
    got = values(stored(tmp_path / "q.duckdb"))
    demo = fixtures_dir / "demo"
    want = evaluate_csv(capsys, fixtures_dir, "--metrics", "hp,hr", "--average", "micro",
                        "--pred", str(demo / "[cfs]*.tsv"))
    assert {k[1:]: v for k, v in got.items() if k[0] == "demo"} == want
    root = evaluate_csv(capsys, fixtures_dir, "--metrics", "hp,hr", "--average", "micro", "--include-root",
                        "--pred", f"shallow={demo / 'shallow.tsv'}")
    assert {k[1:]: v for k, v in got.items() if k[0] == "demo-root"} == root
    # by hand (tests/test_cli.py): shallow's micro hR = 14/26 without the root
    assert got[("demo", "shallow", "hierarchical_recall", "micro")] == 14 / 26
    # the queue is a results database for `hiersql report`
    assert main(["report", "--db", str(tmp_path / "q.duckdb"), "--out", str(tmp_path / "r.html")]) == 0


def test_batches_equal_one_store_per_unit(data_dir, tmp_path):
    """Several systems of a dataset evaluated in one store give the values of each system alone, and of
    `hiersql evaluate` on all of them (GermEval subtask B, three systems, measures of three families)."""
    canonical = data_dir / "canonical"
    spec = tmp_path / "job.toml"
    spec.write_text(f"""metrics = ["hp", "hr", "hf", "sdl", "example_f1", "hamming_loss", "lca_f"]
[[dataset]]
name = "b"
taxonomy = "{canonical / 'taxonomy.tsv'}"
truth = "{canonical / 'truth_b.tsv'}"
predictions = "{canonical / 'pred_b' / '[A-C]*.tsv'}"
""", encoding="utf-8")
    together, alone = Queue(tmp_path / "together.duckdb"), Queue(tmp_path / "alone.duckdb")
    for queue, batch in ((together, 16), (alone, 1)):
        submit(queue, spec)
        summary = run(queue, max_batch=batch)
        assert summary.counts["done"] == 3 and not summary.failures
    with together.connect() as a, alone.connect() as b:
        # equal up to the order of DuckDB's parallel float sums (which also varies from one
        # `hiersql evaluate` run to the next in the last bits)
        assert values(a.results()) == pytest.approx(values(b.results()), rel=1e-12, abs=1e-15)
    together.close()
    alone.close()
    from hiersql.api.evaluator import compute, make_options
    from hiersql.inputs.arguments import parse_preds
    from hiersql.inputs.store import Store

    store = Store()
    store.load(canonical / "taxonomy.tsv", canonical / "truth_b.tsv",
               parse_preds([str(canonical / "pred_b" / "[A-C]*.tsv")]))
    reference = compute(store, ["hp", "hr", "hf", "sdl", "example_f1", "hamming_loss", "lca_f"],
                        make_options())
    assert len({r.system for r in reference}) == 3 and len(reference) == 3 * 11
    assert values(stored(tmp_path / "together.duckdb")) == pytest.approx(
        {("b", r.system, r.metric, r.average or None): r.value for r in reference}, rel=1e-12, abs=1e-15)


def test_unchanged_units_skip_and_a_changed_file_recomputes_only_its_unit(fixtures_dir, tmp_path, capsys):
    spec = make_job(tmp_path, fixtures_dir)
    assert main(["jobs", "run", str(spec)]) == 0
    first = values(stored(tmp_path / "q.duckdb"))
    capsys.readouterr()
    assert main(["jobs", "run", str(spec)]) == 0
    assert "4 unit(s), 0 queued, 4 unchanged" in capsys.readouterr().out
    # shallow now predicts 'jaguar' for instance 1 (truth: jaguar) instead of 'feline'
    shallow = tmp_path / "preds" / "shallow.tsv"
    shallow.write_text(shallow.read_text().replace("1\tfeline", "1\tjaguar", 1))
    assert main(["jobs", "run", str(spec)]) == 0
    out = capsys.readouterr().out
    # shallow feeds two units (both datasets); nothing else is recomputed
    assert "4 unit(s), 2 queued, 2 unchanged" in out and "2 done, 0 unchanged, 0 failed" in out
    latest = values(stored(tmp_path / "q.duckdb"))
    changed = {k for k in first if first[k] != latest[k]}
    assert {k[:2] for k in changed} == {("demo", "shallow"), ("demo-root", "shallow")}
    # shallow: hR micro gains the one node jaguar: 14/26 -> 15/26
    assert latest[("demo", "shallow", "hierarchical_recall", "micro")] == 15 / 26
    history = stored(tmp_path / "q.duckdb", history=True)
    runs = {(r[0], r[1]): set() for r in history}
    for r in history:
        runs[(r[0], r[1])].add((r[5], r[6]))
    assert {k: len(v) for k, v in runs.items()} == {("demo", "cautious"): 1, ("demo", "flat_errors"): 1,
                                                    ("demo", "shallow"): 2, ("demo-root", "shallow"): 2}
    # --recompute computes every unit again; history grows, the latest values stay
    assert main(["jobs", "run", str(spec), "--recompute"]) == 0
    assert "4 done" in capsys.readouterr().out
    assert values(stored(tmp_path / "q.duckdb")) == latest
    assert len(stored(tmp_path / "q.duckdb", history=True)) == len(history) + 4 * 2


def test_a_failing_system_fails_alone(fixtures_dir, tmp_path, capsys):
    spec = make_job(tmp_path, fixtures_dir)
    (tmp_path / "preds" / "broken.tsv").write_text("1\tjaguar\n2\tunicorn\n")
    (tmp_path / "preds" / "silent.tsv").write_text("")  # predicted nothing: not a failure
    assert main(["jobs", "run", str(spec)]) == 1
    captured = capsys.readouterr()
    err = captured.err.splitlines()
    # issue 15: an empty prediction file is evaluated with a warning that names it (issue 17: never a failure)
    silent = tmp_path / "preds" / "silent.tsv"
    assert err[0] == f"hiersql: warning: {silent}: no predicted label; evaluated as a system that predicted" \
        " nothing for every instance"
    assert err[1:] == [f"hiersql: error: {spec}: 1 of 6 unit(s) failed (`hiersql jobs status` lists the errors)"]
    assert "5 done, 0 unchanged, 1 failed" in captured.out
    # the same one-line message as the command line for that file
    assert main(["evaluate", "--taxonomy", str(tmp_path / "taxonomy.tsv"), "--truth", str(tmp_path / "truth.tsv"),
                 "--pred", str(tmp_path / "preds" / "broken.tsv")]) == 2
    cli_error = capsys.readouterr().err.strip().removeprefix("hiersql: error: ")
    assert cli_error == f"{(tmp_path / 'preds' / 'broken.tsv').resolve()}:2: label not in the taxonomy: 'unicorn'"
    assert main(["jobs", "status", "--queue", str(tmp_path / "q.duckdb")]) == 0
    status = capsys.readouterr().out
    assert "0 queued, 0 running, 5 done, 0 skipped, 1 failed, 0 cancelled" in status
    assert f"  failed: demo/broken (1 attempt(s)): {cli_error}" in status
    got = values(stored(tmp_path / "q.duckdb"))
    assert {k[1] for k in got if k[0] == "demo"} == {*DEMO_SYSTEMS, "silent"}
    # silent predicted nothing: no node found (hP is 0/0, zero_division = 0), none of the 26 true ones
    assert got[("demo", "silent", "hierarchical_recall", "micro")] == 0.0
    assert got[("demo", "silent", "hierarchical_precision", "micro")] == 0.0
    # fixed, the failed unit alone is computed on the next run
    (tmp_path / "preds" / "broken.tsv").write_text("1\tjaguar\n2\tlion\n")
    assert main(["jobs", "run", str(spec)]) == 0
    assert "6 unit(s), 1 queued, 5 unchanged" in capsys.readouterr().out


def test_a_new_submission_of_a_job_file_supersedes_what_earlier_ones_left_queued(fixtures_dir, tmp_path, capsys):
    # a run killed before it ran its units, started again with its job file: the first submission's queued
    # units are cancelled (superseded), not left queued for ever; another job file's are untouched
    spec = make_job(tmp_path, fixtures_dir)
    other = spec.with_name("other.toml")
    other.write_text(spec.read_text(encoding="utf-8").replace('name = "demo-job"', 'name = "other"'),
                     encoding="utf-8")
    queue = tmp_path / "q.duckdb"
    for path in (spec, other, spec):
        assert main(["jobs", "submit", str(path)]) == 0
    capsys.readouterr()
    q = Queue(queue)
    try:
        with q.connect() as con:
            jobs = [(j["name"], j["queued"], j["cancelled"]) for j in con.status()]
            notes = {r[0] for r in con.execute("SELECT error FROM units WHERE status = 'cancelled'")}
    finally:
        q.close()
    assert jobs == [("demo-job", 0, 4), ("other", 4, 0), ("demo-job", 4, 0)]
    assert len(notes) == 1 and next(iter(notes)).startswith("superseded by job ")
    assert main(["jobs", "run", str(spec)]) == 0  # submits again: the latest demo-job runs, other waits
    assert capsys.readouterr().out.splitlines()[-1] == "4 unit(s) processed: 4 done, 0 unchanged, 0 failed"
    q = Queue(queue)
    try:
        with q.connect() as con:
            assert [(j["name"], j["queued"], j["done"], j["cancelled"]) for j in con.status()] == [
                ("demo-job", 0, 0, 4), ("other", 4, 0, 0), ("demo-job", 0, 0, 4), ("demo-job", 0, 4, 0)]
    finally:
        q.close()


def test_a_system_taken_out_of_the_job_file_is_superseded_too(fixtures_dir, tmp_path, capsys):
    # its unit of the first submission was left queued for ever, and a later run without the job file
    # picked it up and failed on the missing file
    spec = make_job(tmp_path, fixtures_dir)
    queue = str(tmp_path / "q.duckdb")
    assert main(["jobs", "submit", str(spec)]) == 0
    (tmp_path / "preds" / "flat_errors.tsv").unlink()
    assert main(["jobs", "run", str(spec)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "3 unit(s) processed: 3 done, 0 unchanged, 0 failed"
    assert main(["jobs", "run", "--queue", queue]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "0 unit(s) processed: 0 done, 0 unchanged, 0 failed"
    q = Queue(queue)
    try:
        with q.connect() as con:
            assert [(j["queued"], j["done"], j["cancelled"]) for j in con.status()] == [(0, 0, 4), (0, 3, 0)]
    finally:
        q.close()


def test_status_cancel_and_result_formats(fixtures_dir, tmp_path, capsys):
    spec = make_job(tmp_path, fixtures_dir)
    queue = str(tmp_path / "q.duckdb")
    assert main(["jobs", "submit", str(spec)]) == 0
    assert "4 unit(s), 4 queued, 0 unchanged" in capsys.readouterr().out
    assert main(["jobs", "cancel", "--queue", queue]) == 2
    assert "--job" in capsys.readouterr().err
    assert main(["jobs", "cancel", "--queue", queue, "--job", "demo-job"]) == 0
    assert capsys.readouterr().out == "cancelled 4 queued unit(s)\n"
    assert main(["jobs", "run", "--queue", queue]) == 0
    assert "0 unit(s) processed" in capsys.readouterr().out
    assert main(["jobs", "status", "--queue", queue, "--job", "nope"]) == 2
    assert "no such job in the queue" in capsys.readouterr().err
    assert main(["jobs", "run", str(spec)]) == 0
    capsys.readouterr()
    assert main(["jobs", "results", "--queue", queue, "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 4 * 2 and {r["dataset"] for r in rows} == {"demo", "demo-root"}
    assert all(len(r["key"]) == 64 and r["run_id"] for r in rows)
    assert main(["jobs", "results", "--queue", queue, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out, parse_constant=lambda name: pytest.fail(f"not JSON: {name}"))
    assert [(d["system"], d["value"]) for d in data] == [(r["system"], float(r["value"])) for r in rows]
    assert main(["jobs", "results", "--queue", queue]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["dataset", "system", "metric", "average", "value", "key", "run_id"]
    assert len(table) == 2 + 8


def test_results_of_a_job_name_are_those_of_its_latest_submission(fixtures_dir, tmp_path, capsys):
    """``jobs results --job NAME`` is the default's rows of that name: a system whose predictions changed shows
    its new value only (it showed the old one beside it: tu s24-jobs finding 3), a system taken out of the job
    file is gone; --history keeps every run of every submission of the name."""
    spec = make_job(tmp_path, fixtures_dir)
    queue = str(tmp_path / "q.duckdb")
    assert main(["jobs", "run", str(spec)]) == 0
    shallow = tmp_path / "preds" / "shallow.tsv"
    shallow.write_text("".join(shallow.read_text().splitlines(keepends=True)[1:]))  # one instance less
    (tmp_path / "preds" / "cautious.tsv").unlink()
    assert main(["jobs", "run", str(spec)]) == 0
    capsys.readouterr()

    def results(*flags: str) -> list[tuple]:
        assert main(["jobs", "results", "--queue", queue, "--format", "csv", *flags]) == 0
        return [(r["dataset"], r["system"], r["metric"], r["value"])
                for r in csv.DictReader(io.StringIO(capsys.readouterr().out))]

    latest = results()
    assert results("--job", "demo-job") == latest
    assert {(d, s) for d, s, _, _ in latest} == {("demo", "flat_errors"), ("demo", "shallow"), ("demo-root", "shallow")}
    assert len({(d, s, m) for d, s, m, _ in latest}) == len(latest)  # one value per dataset, system, measure
    history = results("--job", "demo-job", "--history")
    assert len(history) == 8 + 4  # the first run's 8 rows, the changed shallow's 2 x 2 rows
    assert set(latest) < set(history)


def test_two_job_files_of_one_name_on_one_queue_are_warned_of(fixtures_dir, tmp_path, capsys):
    """Two teams' nightly.toml (the name is the file's stem) on one queue are one job to jobs results, which
    shows the one submitted last (tu s24-jobs finding 5): the second submission says so."""
    for team in ("a", "b"):
        (tmp_path / team).mkdir()
        spec = make_job(tmp_path / team, fixtures_dir)
        text = spec.read_text().replace('name = "demo-job"\n', "")
        text = text.replace('queue = "q.duckdb"', 'queue = "../q.duckdb"')
        (tmp_path / team / "nightly.toml").write_text(text)
    assert main(["jobs", "submit", str(tmp_path / "a" / "nightly.toml")]) == 0
    assert capsys.readouterr().err == ""
    assert main(["jobs", "submit", str(tmp_path / "b" / "nightly.toml")]) == 0
    assert capsys.readouterr().err == (
        f"hiersql: warning: {tmp_path / 'b' / 'nightly.toml'}: the job name 'nightly' is also the name of"
        f" {tmp_path / 'a' / 'nightly.toml'} on this queue: jobs results shows the one submitted last; give each"
        " job file a name of its own (name =)\n")


def test_an_unreachable_queue_is_named_where_it_was_given(fixtures_dir, tmp_path, capsys):
    """A PostgreSQL queue that does not answer: named by the job file and the line of its queue key when it
    came from there (it said --queue, which was not given), by --queue otherwise; the URL without its
    password."""
    url = f"postgresql://me:s3cret@/db?host={tmp_path / 'nosuch'}&port=5999"
    spec = make_job(tmp_path, fixtures_dir)
    spec.write_text(spec.read_text().replace('queue = "q.duckdb"', f'queue = "{url}"'))
    shown = f"'postgresql://me@/db?host={tmp_path / 'nosuch'}&port=5999'"
    for argv, where in ((["jobs", "run", str(spec)], f"{spec}:2"),
                        (["jobs", "status", "--queue", url], "--queue")):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"hiersql: error: {where}: cannot reach the queue (") and err.endswith(f": {shown}\n")
        assert "s3cret" not in err and err.count("\n") == 1


@pytest.mark.parametrize("action", [["status"], ["results"], ["cancel", "--all"]])
def test_a_queue_that_is_not_there_is_not_made(tmp_path, monkeypatch, capsys, action):
    # a typo in --queue (or the default ./jobs.duckdb in another folder) read as an empty queue would hide jobs
    monkeypatch.chdir(tmp_path)
    assert main(["jobs", *action, "--queue", "typo.duckdb"]) == 2
    assert capsys.readouterr().err == ("hiersql: error: typo.duckdb: queue not found (a DuckDB file, which hiersql"
                                       " jobs submit or jobs run makes, or a postgresql:// URL)\n")
    assert main(["jobs", *action, "--queue", "mysql://db/q"]) == 2  # (tu s24-jobs finding 7)
    assert "mysql://db/q: queue not found (a DuckDB file, which" in capsys.readouterr().err
    assert main(["jobs", *action]) == 2
    assert "jobs.duckdb: queue not found" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("action", [["status"], ["results"], ["cancel", "--all"]])
def test_a_duckdb_file_that_is_not_a_queue_is_one_line_and_left_as_it_is(fixtures_dir, tmp_path, capsys, action):
    # a results file of `hiersql evaluate --db` (read as an internal error, or given the queue's tables by
    # cancel), and an empty DuckDB file
    demo = fixtures_dir / "demo"
    results, empty = tmp_path / "ev.duckdb", tmp_path / "empty.duckdb"
    assert main(["evaluate", "--taxonomy", str(demo / "taxonomy.tsv"), "--truth", str(demo / "truth.tsv"),
                 "--pred", str(demo / "shallow.tsv"), "--metrics", "hp", "--db", str(results)]) == 0
    duckdb.connect(str(empty)).close()
    capsys.readouterr()
    for path in (results, empty):
        with duckdb.connect(str(path), read_only=True) as con:
            tables = con.execute("SHOW TABLES").fetchall()
        assert main(["jobs", *action, "--queue", str(path)]) == 2
        assert capsys.readouterr() == ("", f"hiersql: error: {path}: not a job queue (no jobs table)\n")
        with duckdb.connect(str(path), read_only=True) as con:
            assert con.execute("SHOW TABLES").fetchall() == tables


# The columns of the queue's tables, in order, as hiersql names them when it refuses a table of the user's.
QUEUE_COLUMNS = {
    "jobs": "job_id, name, spec, submitted_at",
    "units": "unit_id, job_id, seq, dataset, system, key, grp, work, recompute, status, error, worker, run_id,"
             " finished_at",
    "results": "run_id, dataset, system, metric, average, value, created_at, key, job_id, unit_id",
    "attempts": "attempt_id, unit_id, run_id, worker, started_at, error",
}
# A table of the user's named as one of the queue's, with other columns: its definition and a row.
USERS_TABLES = {
    "results": ("x INTEGER", (42,)),
    "jobs": ("id INTEGER, descr VARCHAR", (1, "nightly backup")),
    "units": ("id INTEGER", (7,)),
    "attempts": ("unit_id VARCHAR, n INTEGER", ("u1", 3)),
}


def duckdb_tables(path: Path) -> dict[str, tuple[list, list]]:
    """Every table of a DuckDB file: its columns (name, type) and its rows."""
    with duckdb.connect(str(path), read_only=True) as con:
        return {t: (con.execute(f'DESCRIBE "{t}"').fetchall(), sorted(con.execute(f'SELECT * FROM "{t}"').fetchall()))
                for (t,) in con.execute("SHOW TABLES").fetchall()}


@pytest.mark.parametrize(("table", "action"), [("results", "run"), ("jobs", "run"), ("units", "submit"),
                                               ("attempts", "schedule"), ("Results", "run"), ("jobs", "status")])
def test_a_queue_file_with_a_table_of_the_users_is_refused_and_left_as_it_is(fixtures_dir, tmp_path, capsys,
                                                                              table, action, no_wait):
    # tuA finding 14: the user's table was given the columns of the queue's (and the other tables made, units
    # queued), then an internal error; now, as `evaluate --db` does, one line and nothing made or changed.
    # DuckDB's names ignore case: the user's "Results" is the queue's results (named as the user wrote it)
    spec = make_job(tmp_path, fixtures_dir)
    path = tmp_path / "q.duckdb"
    columns, row = USERS_TABLES[table.lower()]
    with duckdb.connect(str(path)) as con:
        con.execute(f'CREATE TABLE "{table}" ({columns})')
        con.execute(f'INSERT INTO "{table}" VALUES ({", ".join("?" * len(row))})', row)
    before = duckdb_tables(path)
    args = {"run": ["run", str(spec)], "submit": ["submit", str(spec)], "status": ["status", "--queue", str(path)],
            "schedule": ["schedule", str(spec), "--cron", "* * * * *", "--runs", "1"]}[action]
    assert main(["jobs", *args]) == 2
    said = (f"hiersql: error: {path}: has a table {table!r} that is not hiersql's (its columns"
            f" {', '.join(c.split()[0] for c in columns.split(', '))}; hiersql's {QUEUE_COLUMNS[table.lower()]}):"
            f" give hiersql a database of its own: {table!r}")
    err = said_by_schedule(capsys.readouterr().err)
    assert err == [said] + ([f"hiersql: error: {spec}: 1 of 1 scheduled run(s) failed (their errors are above)"]
                            if action == "schedule" else [])
    assert duckdb_tables(path) == before and list(before) == [table]


def test_a_results_file_of_evaluate_becomes_a_queue_that_keeps_its_rows(fixtures_dir, tmp_path, capsys):
    # the results table of `hiersql evaluate --db` is hiersql's: `jobs run` adds the queue's tables beside it
    # and its columns (key, job_id, unit_id) to it, as it always did; its rows stay, `report --db` reads them
    demo = fixtures_dir / "demo"
    path = tmp_path / "q.duckdb"
    assert main(["evaluate", "--taxonomy", str(demo / "taxonomy.tsv"), "--truth", str(demo / "truth.tsv"),
                 "--pred", str(demo / "shallow.tsv"), "--metrics", "hp", "--db", str(path)]) == 0
    with duckdb.connect(str(path), read_only=True) as con:
        evaluated = con.execute("SELECT run_id, system, metric, average, value FROM results").fetchall()
    spec = make_job(tmp_path, fixtures_dir)
    assert main(["jobs", "run", str(spec)]) == 0
    assert main(["jobs", "run", str(spec)]) == 0  # the queue made of it is one
    assert "4 unit(s), 0 queued, 4 unchanged" in capsys.readouterr().out
    tables = duckdb_tables(path)
    assert ", ".join(c[0] for c in tables["results"][0]) == QUEUE_COLUMNS["results"]
    assert {t: ", ".join(c[0] for c in tables[t][0]) for t in ("jobs", "units", "attempts")} == {
        t: QUEUE_COLUMNS[t] for t in ("jobs", "units", "attempts")}
    with duckdb.connect(str(path), read_only=True) as con:
        assert con.execute("SELECT run_id, system, metric, average, value FROM results WHERE key IS NULL"
                           ).fetchall() == evaluated
        assert con.execute("SELECT count(*) FROM results WHERE key IS NOT NULL").fetchone()[0] == 8
    assert main(["report", "--db", str(path), "--out", str(tmp_path / "r.html")]) == 0
    # the way back is refused, as a queue (it said "a table 'results' that is not hiersql's"), the file as it was
    capsys.readouterr()
    before = duckdb_tables(path)
    assert main(["evaluate", "--taxonomy", str(demo / "taxonomy.tsv"), "--truth", str(demo / "truth.tsv"),
                 "--pred", str(demo / "shallow.tsv"), "--metrics", "hp", "--db", str(path)]) == 2
    assert capsys.readouterr().err == (f"hiersql: error: {path}: is a job queue of hiersql jobs (its results are"
                                       " written by its units): give hiersql a database of its own: 'jobs'\n")
    assert duckdb_tables(path) == before


def test_status_and_results_leave_the_queue_file_as_it_is(fixtures_dir, tmp_path, capsys):
    # opened read-only: a queue on a read-only file system (an archive, a snapshot) can be read
    spec = make_job(tmp_path, fixtures_dir)
    assert main(["jobs", "run", str(spec)]) == 0
    queue = tmp_path / "q.duckdb"
    before = (queue.read_bytes(), queue.stat().st_mtime_ns)
    assert main(["jobs", "status", "--queue", str(queue)]) == 0
    assert main(["jobs", "results", "--queue", str(queue)]) == 0
    assert "4 done" in capsys.readouterr().out
    assert (queue.read_bytes(), queue.stat().st_mtime_ns) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.toml", "preds", "q.duckdb", "taxonomy.tsv", "truth.tsv"]


def job_text(tmp_path: Path, fixtures_dir: Path, body: str) -> Path:
    demo = fixtures_dir / "demo"
    spec = tmp_path / "bad.toml"
    spec.write_text(body.format(tax=demo / "taxonomy.tsv", truth=demo / "truth.tsv", pred=demo / "shallow.tsv"),
                    encoding="utf-8")
    return spec


DATASET = """[[dataset]]
name = "d"
taxonomy = "{tax}"
truth = "{truth}"
predictions = ["{pred}"]
"""

BAD_SPECS = {  # case: (job file, line at fault, value named)
    "unknown option": ('metrics = ["hp"]\n' + DATASET + "options = {{ includ_root = true }}\n", 7, "'includ_root'"),
    "unknown metric": ('metrics = ["hp", "hx"]\n' + DATASET, 1, "'hx'"),
    "bad average": ('[options]\naverage = ["micro", "mikro"]\n' + DATASET, 2, "'mikro'"),
    "wrong type": ("[options]\ninclude_root = \"yes\"\n" + DATASET, 2, "'yes'"),
    "bad mode": ("metrics = [\"gie\"]\n" + DATASET + "[dataset.options]\nshared = \"sometimes\"\n", 8, "'sometimes'"),
    "bad offset": ('metrics = ["pl"]\n[options]\noffset = 0.5\n' + DATASET, 3, "0.5"),
    "missing file": (DATASET.replace("{truth}", "no/such.tsv"), 4, "'no/such.tsv'"),
    "glob matches nothing": (DATASET.replace('["{pred}"]', '["none/*.tsv"]'), 5, "'none/*.tsv'"),
    "unknown key": (DATASET + "formt = \"long\"\n", 6, "'formt'"),
    "bad format": (DATASET + "format = \"csv\"\n", 6, "'csv'"),
    "not TOML": (DATASET + "metrics = [hp]\n", 6, None),
    "second dataset": (DATASET + DATASET.replace('"d"', '"e"').replace("{tax}", "missing.tsv"), 8,
                       "'missing.tsv'"),
    # as evaluate refuses them: no average (a unit would be 'done' with no row); labels with hP's micro
    "no average": ('[options]\naverage = []\n' + DATASET, 2, "[]"),
    "labels with a micro average": ('[options]\nlabels = ["feline"]\n' + DATASET, 2, "not the average): 'micro'"),
    "zero_division as text": ('[options]\nzero_division = "nan"\n' + DATASET, 2, "'nan'"),
    "truth is a folder": (DATASET.replace("{truth}", "."), 4, "'.'"),
    "queue in a missing folder": ('queue = "no/such/q.duckdb"\n' + DATASET, 1, "'no/such/q.duckdb'"),
    # DuckDB would read 'sql:' as an extension's prefix (the run failed: tu issue 38)
    "queue that is a query": ('queue = "sql:SELECT 1"\n' + DATASET, 1,
                              "a queue is a DuckDB file or a postgresql:// URL: 'sql:SELECT 1'"),
    # text files have no column names: a dataset's column key would be left unused
    "column key of text files": (DATASET + 'system_col = "model"\n', 6, "'model'"),
    # the table's header, its line; an empty string is not of the wrong type; NAME=FILE names FILE; a glob's
    # match that is a folder (p/sub.tsv) is named (was: file not found: 'p/*.tsv')
    "dataset as a table": ('metrics = ["hp"]\n[dataset]\nname = "d"\n', 2,
                           "'dataset' must be an array of tables ([[dataset]]): '[dataset]'"),
    "empty name": (DATASET.replace('name = "d"', 'name = ""'), 2, "'name' is empty: ''"),
    # (tu s24-jobs finding 7: no line and no value; "file not found")
    "dataset as a number": ('metrics = ["hp"]\ndataset = 3\n', 2,
                            "'dataset' must be an array of tables ([[dataset]]): 3"),
    "empty system name": (DATASET.replace('["{pred}"]', '["=shallow.tsv"]'), 5,
                          "empty system name (NAME=SOURCE): '=shallow.tsv'"),
    "named file not found": (DATASET.replace('["{pred}"]', '["x=missing.tsv"]'), 5, "file not found: 'missing.tsv'"),
    # an empty entry, or a name without its file (were the job file's folder: "is a folder, not a file")
    "empty prediction": (DATASET.replace('["{pred}"]', '[""]'), 5, "empty value: it names no file, folder or table:"
                                                                    " ''"),
    "name without its file": (DATASET.replace('["{pred}"]', '["x="]'), 5, "(NAME=SOURCE): 'x='"),
    "glob matches a folder": (DATASET.replace('["{pred}"]', '["p/*.tsv"]'), 5,
                              "is a folder, not a file: 'p/sub.tsv'"),
}


def test_a_job_file_with_a_byte_order_mark_is_read(fixtures_dir, tmp_path, capsys):
    """A UTF-8 byte order mark (saved by a Windows editor) is no part of the TOML (it was 'Invalid statement'
    on line 1: tu s24-jobs finding 7), as in every other file hiersql reads."""
    spec = make_job(tmp_path, fixtures_dir)
    spec.write_bytes(b"\xef\xbb\xbf" + spec.read_bytes())
    assert main(["jobs", "run", str(spec)]) == 0
    assert "4 unit(s), 4 queued" in capsys.readouterr().out


@pytest.mark.parametrize("case", BAD_SPECS)
def test_check_names_the_job_file_line_and_value(case, fixtures_dir, tmp_path, capsys):
    body, line, value = BAD_SPECS[case]
    spec = job_text(tmp_path, fixtures_dir, body)
    (tmp_path / "p" / "sub.tsv").mkdir(parents=True)  # beside a file that p/*.tsv matches too
    shutil.copy(fixtures_dir / "demo" / "shallow.tsv", tmp_path / "p")
    assert main(["jobs", "check", str(spec)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"hiersql: error: {spec}:{line}: "), err
    if value:
        assert err.rstrip().endswith(value), err
    # a run checks the same before it queues anything
    assert main(["jobs", "run", str(spec), "--queue", str(tmp_path / "q.duckdb")]) == 2
    assert capsys.readouterr().err == err


def test_labels_not_in_the_taxonomy_fail_the_units_as_evaluate_refuses_them(fixtures_dir, tmp_path, capsys):
    # whether a label is a node is known once the dataset's taxonomy is read: the units fail, naming it
    spec = job_text(tmp_path, fixtures_dir, 'metrics = ["label_f1"]\n[options]\nlabels = ["feline", "Nope"]\n'
                    'average = ["label_macro"]\n' + DATASET)
    assert main(["jobs", "check", str(spec)]) == 0
    assert main(["jobs", "run", str(spec), "--queue", str(tmp_path / "q.duckdb")]) == 1
    out = capsys.readouterr().out
    assert "failed: d/shallow: labels holds a label not in the taxonomy: 'Nope'" in out
    with pytest.raises(InputError, match="labels holds a label not in the taxonomy"):
        Evaluator(fixtures_dir / "demo" / "taxonomy.tsv").add_truth(fixtures_dir / "demo" / "truth.tsv") \
            .add_predictions("s", fixtures_dir / "demo" / "shallow.tsv") \
            .evaluate(["label_f1"], average=["label_macro"], labels=["feline", "Nope"])


def test_a_measure_that_does_not_apply_fails_its_units_naming_the_job_files_key(fixtures_dir, tmp_path, capsys):
    spec = job_text(tmp_path, fixtures_dir, 'metrics = ["tree_induced_error", "hp"]\n' + DATASET)
    assert main(["jobs", "run", str(spec), "--queue", str(tmp_path / "q.duckdb")]) == 1
    assert "failed: d/shallow: metrics: tree_induced_error needs as many predicted as true labels per instance" \
        in capsys.readouterr().out  # was --metrics: evaluate's flag


def test_a_taxonomy_every_unit_would_fail_on_is_the_job_files_fault(fixtures_dir, tmp_path, capsys):
    """The dataset's taxonomy is read when the job is checked, and its measures evaluated on it: a node list
    given as a taxonomy, or a measure reading edge weights (lpp) on a taxonomy without them, is exit 2 with
    the taxonomy's own line (its file, line and value), before anything is queued (both ran, and every unit
    failed: tu issue 38)."""
    demo = fixtures_dir / "demo"
    nodes = tmp_path / "nodes.txt"
    nodes.write_text("".join(f"{line.split(chr(9))[1].strip()}\n" for line in
                             (demo / "taxonomy.tsv").read_text(encoding="utf-8").splitlines()), encoding="utf-8")
    first = nodes.read_text(encoding="utf-8").split()[0]
    for body, said in (
        (DATASET.replace("{tax}", str(nodes)), f"{nodes}:1: expected 2 fields (parent, child) or 3 (parent, child,"
                                               f" weight), found 1: {first!r}"),
        ('metrics = ["lpp"]\n' + DATASET, f"{demo / 'taxonomy.tsv'}:11: the weighted scoring-tree measures need edge"
                                          " weights that make a scoring tree: an edge without weight, into aircraft"
                                          " and 14 more"),
    ):
        spec = job_text(tmp_path, fixtures_dir, body)
        assert main(["jobs", "check", str(spec)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"hiersql: error: {said}") and err.count("\n") == 1, err
        assert main(["jobs", "run", str(spec), "--queue", str(tmp_path / "q.duckdb")]) == 2
        assert capsys.readouterr().err == err and not (tmp_path / "q.duckdb").exists()


def test_check_accepts_every_measure_with_other_options(fixtures_dir, tmp_path, capsys):
    """``all`` leaves out the measures that do not apply to the dataset's taxonomy (the weighted scoring
    measures need edge weights), as evaluate does: no fault of the job file."""
    body = ('metrics = ["all"]\n[options]\nlca_graph = "optimal"\npairing = "flow"\ntn = "descendants"\n'
            'augment = "cesa_bianchi"\nlabels = ["jaguar", "wolf"]\nmax_distance = 2\n' + DATASET)
    spec = job_text(tmp_path, fixtures_dir, body)
    assert main(["jobs", "check", str(spec)]) == 0
    assert capsys.readouterr().out == f"{spec}: 1 dataset(s), 1 unit(s)\n"


def test_check_rejects_a_job_file_that_is_not_utf8(tmp_path, capsys):
    spec = tmp_path / "latin1.toml"
    spec.write_bytes(b'name = "x"\n# caf\xe9\n')
    assert main(["jobs", "check", str(spec)]) == 2
    assert capsys.readouterr().err == f"hiersql: error: {spec}:2: job file is not UTF-8: b'\\xe9'\n"


# ``python -c NO_WAIT ARGS...``: ``hiersql ARGS...`` whose schedule runs at once (no_wait in another process)
NO_WAIT = ("import sys; from hiersql.jobs import schedule; schedule._sleep = lambda seconds: None;"
           " from hiersql.cli import main; sys.exit(main(sys.argv[1:]))")


def test_second_process_on_a_duckdb_queue_exits_75_naming_the_holder(fixtures_dir, tmp_path):
    """Busy is not broken (issue 38 item 4): a queue file another process holds is exit status 75
    (EX_TEMPFAIL), not the 2 of bad input or the 1 of failed units; a schedule whose one run found it busy
    too."""
    spec = make_job(tmp_path, fixtures_dir)
    queue = Queue(tmp_path / "q.duckdb")
    submit(queue, spec)
    with queue.connect():  # this process holds the file
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        for action in (["run"], ["status"], ["results"], ["diff"], ["prune", "--keep", "1"],
                       ["schedule", str(spec), "--cron", "* * * * *", "--runs", "1"]):
            done = subprocess.run([sys.executable, "-c", NO_WAIT, "jobs", *action, "--queue",
                                   str(tmp_path / "q.duckdb")], capture_output=True, text=True, env=env, timeout=60)
            assert done.returncode == 75, done.stderr
            lines = said_by_schedule(done.stderr)
            assert f"in use by process {os.getpid()}" in lines[0]
            assert lines[1:] == ([f"hiersql: error: {spec}: 1 of 1 scheduled run(s) failed (their errors are above)"]
                                 if action[0] == "schedule" else [])
    queue.close()


def test_schedule_runs_and_says_each_time_when_the_next_run_is(fixtures_dir, tmp_path, capsys, monkeypatch):
    from hiersql.jobs import schedule as scheduler

    waits: list[float] = []
    monkeypatch.setattr(scheduler, "_sleep", waits.append)
    spec = make_job(tmp_path, fixtures_dir)
    start = datetime.now()
    assert main(["jobs", "schedule", str(spec), "--cron", "*/5 * * * *", "--runs", "2"]) == 0
    end = datetime.now()
    out, err = capsys.readouterr()
    assert "4 unit(s), 4 queued, 0 unchanged" in out and "4 unit(s), 0 queued, 4 unchanged" in out
    lines = err.splitlines()
    # (the waits are not slept: the second is 5 min from the first, less the time the run took)
    assert len(lines) == 2 and len(waits) == 2 and 0 < waits[0] <= 300 and 240 < waits[1] - waits[0] <= 300
    # the scheduler reads the clock between start and end: a 5-minute boundary may fall between them
    firsts = {(t + timedelta(minutes=5 - t.minute % 5)).replace(second=0, microsecond=0) for t in (start, end)}
    first = next((f for f in sorted(firsts) if f"next run at {f:%Y-%m-%d %H:%M:%S}" in lines[0]), min(firsts))
    zone = first.astimezone().strftime("%Z")
    assert re.fullmatch(rf"hiersql: {re.escape(str(spec))}: next run at {first:%Y-%m-%d %H:%M:%S} {zone} \(in"
                        r" (\d+ min \d+ s|\d+ min|\d+ s)\)", lines[0]), lines[0]
    assert lines[1].startswith(f"hiersql: {spec}: next run at {first + timedelta(minutes=5):%Y-%m-%d %H:%M:%S}")


def test_schedule_says_how_many_runs_failed(fixtures_dir, tmp_path, capsys, no_wait):
    # a unit that fails each time: each run fails (exit 1 of `jobs run`), and so does the schedule's end
    (tmp_path / "bad.tsv").write_text("i1\tNope\n", encoding="utf-8")
    spec = job_text(tmp_path, fixtures_dir, DATASET.replace("{pred}", str(tmp_path / "bad.tsv")))
    assert main(["jobs", "schedule", str(spec), "--cron", "* * * * *", "--runs", "2",
                 "--queue", str(tmp_path / "q.duckdb")]) == 1
    err = said_by_schedule(capsys.readouterr().err)
    assert err == [f"hiersql: error: {spec}: 1 of 1 unit(s) failed (`hiersql jobs status` lists the errors)"] * 2 + [
        f"hiersql: error: {spec}: 2 of 2 scheduled run(s) failed (their errors are above)"]


@pytest.mark.parametrize(("statuses", "code"), [([1, 75, 2], 2), ([75, 1, 75], 1), ([75, 75], 75)])
def test_a_schedule_exits_with_the_gravest_status_of_its_failed_runs(statuses, code):
    # a bad job file or input (2) is gravest, then failed units (1), then a busy queue file (75: try later)
    from hiersql.jobs.runner import RunsFailed

    assert RunsFailed("3 of 3 scheduled run(s) failed", "nightly.toml", statuses).exit_status == code


def test_schedule_stops_when_a_duckdb_query_of_a_run_is_interrupted(fixtures_dir, tmp_path, capsys, monkeypatch,
                                                                    no_wait):
    """Ctrl-C or SIGTERM while a run's submission is in a DuckDB query: DuckDB stops the query and raises its
    own error ("Query interrupted"), which the scheduler took for a failed run, and went on (tu s24-jobs finding
    2: only SIGKILL stopped it); now it stops as jobs run does. The query is a real one, stopped as DuckDB stops
    it on a signal (``interrupt()``, from another thread: no race with the signal's delivery)."""
    import threading

    from hiersql.jobs.queue import Connection

    spec = make_job(tmp_path, fixtures_dir)
    submit_units = Connection.submit

    def slow_submit(self, *args, **kwargs):
        with duckdb.connect() as con:  # a query of many seconds, stopped
            threading.Timer(0.3, con.interrupt).start()
            con.execute("SELECT sum(a.range * b.range) FROM range(200000) a, range(200000) b").fetchall()
        return submit_units(self, *args, **kwargs)

    monkeypatch.setattr(Connection, "submit", slow_submit)
    start = time.monotonic()
    assert main(["jobs", "schedule", str(spec), "--cron", "* * * * *", "--runs", "3"]) == 130
    assert time.monotonic() - start < 20
    assert said_by_schedule(capsys.readouterr().err) == ["hiersql: interrupted"]


@pytest.mark.parametrize(("flags", "said"), [
    (["run", "{spec}", "--job", "nosuch"], "--job: picks jobs of the queue, not with a job file (SPEC names its own"
                                           " job): 'nosuch'"),
    (["results", "{spec}", "--job", "x"], "--job: picks jobs of the queue, not with a job file (SPEC names its own"
                                          " job): 'x'"),
    (["run", "{spec}", "--wait", "-1"], "--wait: must be at least 0: -1.0"),
    (["status", "--wait", "nan"], "--wait: must be at least 0: nan"),
    (["schedule", "{spec}", "--cron", "* * * * *", "--runs", "0"], "--runs: must be at least 1: 0")])
def test_flags_that_would_be_ignored_or_wait_for_ever(fixtures_dir, tmp_path, capsys, flags, said):
    spec = make_job(tmp_path, fixtures_dir)
    assert main(["jobs", *(f.replace("{spec}", str(spec)) for f in flags)]) == 2
    assert capsys.readouterr() == ("", f"hiersql: error: {said}\n")
    assert not (tmp_path / "q.duckdb").exists()


def test_the_readers_of_a_queue_take_the_job_file(fixtures_dir, tmp_path, monkeypatch, capsys):
    """``jobs results|status|diff SPEC`` read the job file's queue (relative to the job file, whatever the working
    folder) and show its job alone: ``jobs results nightly.toml`` was refused (unrecognized arguments) and
    without ``--queue`` the readers read jobs.duckdb of the working folder (tu issue 38)."""
    spec = make_job(tmp_path, fixtures_dir)
    (tmp_path / "other").mkdir()
    other = make_job(tmp_path / "other", fixtures_dir)
    other.write_text(other.read_text().replace('name = "demo-job"', 'name = "other-job"')
                     .replace('queue = "q.duckdb"', f'queue = "{tmp_path / "q.duckdb"}"'))
    assert main(["jobs", "run", str(spec)]) == 0 and main(["jobs", "run", str(other)]) == 0
    capsys.readouterr()
    monkeypatch.chdir(tmp_path / "preds")
    assert main(["jobs", "results", str(spec), "--format", "csv"]) == 0
    rows = capsys.readouterr().out.strip().splitlines()
    assert main(["jobs", "results", "--queue", str(tmp_path / "q.duckdb"), "--job", "demo-job", "--format", "csv"]
                ) == 0
    assert rows == capsys.readouterr().out.strip().splitlines() and len(rows) == 1 + 4 * 2
    assert main(["jobs", "status", str(other)]) == 0
    out = capsys.readouterr().out
    assert "other-job" in out and "demo-job" not in out
    assert main(["jobs", "diff", str(spec)]) == 0
    assert not (tmp_path / "preds" / "jobs.duckdb").exists()


def test_schedule_follows_the_cron_times():
    """``0 2 * * *`` on a fake clock: at 02:00 on three days in a row, whatever a run costs."""
    clock = [datetime(2026, 3, 1, 13, 37)]
    fired = []

    def sleep(seconds: float) -> None:
        clock[0] += timedelta(seconds=seconds)

    def fire() -> None:
        fired.append(clock[0])
        clock[0] += timedelta(minutes=10)  # a run takes ten minutes

    assert schedule("0 2 * * *", fire, runs=3, clock=lambda: clock[0], sleep=sleep) == 3
    assert fired == [datetime(2026, 3, d, 2, 0) for d in (2, 3, 4)]


def test_a_run_whose_time_passed_while_the_previous_one_went_on_starts_at_once():
    """docs/jobs.md: "a run whose time has passed while the previous one was still going starts at once; times
    missed meanwhile are skipped" (before, the next time after the end was waited for: the passed one was lost).
    Hourly, runs of 2 h 30 min: 02:00 ends at 04:30, when 03:00 and 04:00 have passed: one run at once, at
    04:30, which ends at 07:00, on the time of 07:00: one more at once; then 08:00, on time."""
    clock = [datetime(2026, 3, 1, 1, 20)]
    fired, told = [], []

    def sleep(seconds: float) -> None:
        clock[0] += timedelta(seconds=seconds)

    def fire() -> None:
        fired.append(clock[0])
        clock[0] += timedelta(hours=2, minutes=30) if len(fired) < 3 else timedelta(minutes=10)

    assert schedule("0 * * * *", fire, runs=4, clock=lambda: clock[0], sleep=sleep,
                    on_wait=lambda at, seconds: told.append((at, seconds))) == 4
    day = datetime(2026, 3, 1)
    assert fired == [day.replace(hour=2), day.replace(hour=4, minute=30), day.replace(hour=7),
                     day.replace(hour=8)]
    assert told == [(day.replace(hour=2), 40 * 60), (day.replace(hour=4), -30 * 60), (day.replace(hour=7), 0),
                    (day.replace(hour=8), 50 * 60)]


@pytest.mark.parametrize("cron", ["0 0 2 * * *", "*/10 * * * * *", "0 2 * * * 2026"])
def test_a_cron_of_six_fields_is_refused_as_ambiguous(fixtures_dir, tmp_path, capsys, cron):
    spec = make_job(tmp_path, fixtures_dir)
    assert main(["jobs", "schedule", str(spec), "--cron", cron]) == 2
    err = capsys.readouterr().err
    if len(cron.split()) == 6:
        assert err == ("hiersql: error: --cron: six fields are ambiguous (seconds first, as in Quartz and Spring, or"
                       f" last, as in croniter?): give five (minute hour day month weekday): {cron!r}\n")
    else:
        assert err == f"hiersql: error: --cron: not a cron expression (minute hour day month weekday): {cron!r}\n"
    assert not (tmp_path / "q.duckdb").exists()


def test_waiting_says_the_time_with_its_zone_and_how_long():
    from hiersql.jobs.schedule import waiting

    at = datetime(2026, 11, 24, 2, 0)
    zone = at.astimezone().strftime("%Z")
    assert waiting(at, 3 * 3600 + 12 * 60 + 5) == f"next run at 2026-11-24 02:00:00 {zone} (in 3 h 12 min)"
    assert waiting(at, 42) == f"next run at 2026-11-24 02:00:00 {zone} (in 42 s)"
    assert waiting(at, -5) == (f"next run at 2026-11-24 02:00:00 {zone}: now (its time passed while the previous"
                               " run went on)")


def test_a_schedule_runs_on_failure_after_each_failed_run(fixtures_dir, tmp_path, capsys, monkeypatch, no_wait):
    (tmp_path / "bad.tsv").write_text("i1\tNope\n", encoding="utf-8")
    spec = job_text(tmp_path, fixtures_dir, DATASET.replace("{pred}", str(tmp_path / "bad.tsv")))
    monkeypatch.setenv("OUT", str(tmp_path / "told.txt"))
    assert main(["jobs", "schedule", str(spec), "--cron", "* * * * *", "--runs", "2", "--queue",
                 str(tmp_path / "q.duckdb"), "--on-failure", 'echo "$HIERSQL_STATUS $HIERSQL_FAILED" >> "$OUT"']) == 1
    assert (tmp_path / "told.txt").read_text() == "1 1\n1 1\n"
    capsys.readouterr()


def test_schedule_rejects_a_bad_cron_expression(fixtures_dir, tmp_path, capsys):
    spec = make_job(tmp_path, fixtures_dir)
    assert main(["jobs", "schedule", str(spec), "--cron", "every night"]) == 2
    assert capsys.readouterr().err.startswith("hiersql: error: --cron: not a cron expression")


def test_the_library_does_not_import_the_command_line():
    for path in (ROOT / "hiersql").rglob("*.py"):
        if "commands" in path.parts or path.name in ("cli.py", "__main__.py"):
            continue
        text = path.read_text(encoding="utf-8")
        assert "from .commands" not in text and "from ..commands" not in text and ".cli import" not in text, path


def test_worker_threads_on_a_duckdb_queue(fixtures_dir, tmp_path, capsys):
    spec = make_job(tmp_path, fixtures_dir)
    assert main(["jobs", "run", str(spec), "--workers", "2"]) == 0
    assert "4 unit(s) processed: 4 done" in capsys.readouterr().out
    with duckdb.connect(str(tmp_path / "q.duckdb"), read_only=True) as con:
        workers = con.execute("SELECT DISTINCT worker FROM units").fetchall()
    assert {w[0].rsplit(":", 2)[1] for w in workers} == {str(os.getpid())}  # threads of this process
    reference = tmp_path / "one"
    reference.mkdir()
    spec1 = make_job(reference, fixtures_dir)
    assert main(["jobs", "run", str(spec1)]) == 0
    capsys.readouterr()
    assert values(stored(tmp_path / "q.duckdb")) == values(stored(reference / "q.duckdb"))


class _Terminal(io.StringIO):
    """A stderr that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_a_progress_bar_per_job_on_a_terminal_only(fixtures_dir, tmp_path, monkeypatch, capsys):
    spec = make_job(tmp_path, fixtures_dir)
    assert main(["jobs", "run", str(spec)]) == 0
    assert capsys.readouterr().err == ""  # not a terminal: no bar
    (tmp_path / "preds" / "shallow.tsv").write_text("1\tjaguar\n")
    other = spec.with_name("other.toml")
    other.write_text(spec.read_text().replace('name = "demo-job"', 'name = "other-job"'))
    for job in (spec, other):  # two jobs, each with the two units of the changed file queued
        assert main(["jobs", "submit", str(job)]) == 0
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert main(["jobs", "run", "--queue", str(tmp_path / "q.duckdb")]) == 0
    shown = terminal.getvalue()
    assert "demo-job: 100%" in shown and "other-job: 100%" in shown and "2/2" in shown
    # the second job's units found their keys computed by the first's
    assert capsys.readouterr().out.splitlines()[-1] == "4 unit(s) processed: 2 done, 2 unchanged, 0 failed"


def test_wait_for_the_queue_file(fixtures_dir, tmp_path):
    spec = make_job(tmp_path, fixtures_dir)
    holder = duckdb.connect(str(tmp_path / "q.duckdb"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "hiersql", "jobs", "run", str(spec), "--wait", "60"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(2)
    assert proc.poll() is None  # waiting
    holder.close()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "4 unit(s) processed: 4 done" in out


@pytest.mark.parametrize("url, message", [
    ("postgresql://nobody@/nodb?host=/nonexistent", "--queue: cannot reach the queue (connection"),
    ("postgresql://x@/y?foo=bar", "--queue: bad queue URL (invalid URI query parameter"),
])
def test_an_unreachable_or_malformed_postgres_queue_is_one_line(url, message, capsys):
    assert main(["jobs", "status", "--queue", url]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"hiersql: error: {message}")


def test_the_documented_job_file_checks(data_dir, tmp_path, capsys):
    """The first job file of docs/jobs.md, with its paths on this machine's data."""
    text = (ROOT / "docs" / "jobs.md").read_text(encoding="utf-8")
    body = text.split("```toml\n", 1)[1].split("```", 1)[0].replace("../shared/data", str(data_dir))
    (tmp_path / "baselines").mkdir()
    shutil.copy(data_dir / "canonical" / "pred_b" / "LT-UHH__baseline.tsv", tmp_path / "baselines" / "b.tsv")
    spec = tmp_path / "nightly.toml"
    spec.write_text(body, encoding="utf-8")
    assert main(["jobs", "check", str(spec)]) == 0
    assert capsys.readouterr().out == f"{spec}: 2 dataset(s), {21 + 19 + 1} unit(s)\n"


def test_evaluator_save_writes_the_rows_under_one_run(fixtures_dir, tmp_path):
    from hiersql import Evaluator

    demo = fixtures_dir / "demo"
    ev = Evaluator(demo / "taxonomy.tsv", db=tmp_path / "e.duckdb")
    ev.add_truth(demo / "truth.tsv").add_predictions("shallow", demo / "shallow.tsv")
    rows = ev.rows(["hr"], average=["micro"])
    run_id = ev.save(rows, dataset="demo")
    ev.close()
    with duckdb.connect(str(tmp_path / "e.duckdb"), read_only=True) as con:
        assert con.execute("SELECT run_id, dataset, system, metric, average, value FROM results").fetchall() == [
            (run_id, "demo", "shallow", "hierarchical_recall", "micro", 14 / 26)]


def test_column_keywords_read_csv_files_with_the_users_names(fixtures_dir, tmp_path, capsys):
    """instance_col, label_col, score_col (truth and predictions) and parent_col, child_col (taxonomy) read
    CSV files whose columns have other names: the values equal hiersql evaluate's on the TSV files."""
    demo = fixtures_dir / "demo"

    def to_csv(source: Path, target: Path, header: str) -> None:
        rows = [line.split("\t") for line in source.read_text().splitlines() if line.strip()]
        target.write_text(header + "\n" + "".join(",".join(r) + "\n" for r in rows))

    to_csv(demo / "taxonomy.tsv", tmp_path / "tax.csv", "up,down")
    to_csv(demo / "truth.tsv", tmp_path / "truth.csv", "doc,genre")
    to_csv(demo / "shallow.tsv", tmp_path / "shallow.csv", "doc,genre")
    spec = tmp_path / "cols.toml"
    spec.write_text('queue = "q.duckdb"\nmetrics = ["hp", "hr"]\ninstance_col = "doc"\n[options]\n'
                    'average = ["micro"]\n[[dataset]]\nname = "d"\ntaxonomy = "tax.csv"\ntruth = "truth.csv"\n'
                    'predictions = ["shallow.csv"]\nlabel_col = "genre"\nparent_col = "up"\nchild_col = "down"\n')
    assert main(["jobs", "run", str(spec)]) == 0
    capsys.readouterr()
    got = values(stored(tmp_path / "q.duckdb"))
    expected = evaluate_csv(capsys, fixtures_dir, "--pred", str(demo / "shallow.tsv"), "--metrics", "hp,hr",
                            "--average", "micro")
    assert {(k[1], k[2], k[3]): v for k, v in got.items()} == pytest.approx(expected)
    assert len(expected) == 2
    # without the column names the same file is an error naming the file and the missing column
    spec.write_text(spec.read_text().replace('label_col = "genre"\n', ""))
    assert main(["jobs", "run", str(spec)]) == 1
    out = capsys.readouterr().out
    assert f"failed: d/shallow: {tmp_path / 'truth.csv'}: label table needs columns instance_id, label: no column" \
        " 'label' for the label (default name); the table has ['doc', 'genre']" in out, out


SLOW_RUN = Path(__file__).with_name("slow_jobs_run.py")


@pytest.mark.parametrize("name", ["ex.tsv", "runs.parquet"])
def test_a_queue_that_is_a_data_file_is_refused_and_left_as_it_is(fixtures_dir, tmp_path, capsys, name):
    """DuckDB opens a CSV, TSV or Parquet file as an in-memory database with a view of it: a queue there took
    every result into memory and lost it, exit 0 (tu s24-jobs finding 1); now exit 2 naming the file, from
    --queue and from the job file's queue, as evaluate --db does; report --db says the same."""
    spec = make_job(tmp_path, fixtures_dir)
    path = tmp_path / name
    with duckdb.connect() as con:
        con.execute(f"COPY (SELECT 'i1' AS doc, 'a' AS genre) TO '{path}'")
    before = path.read_bytes()
    said = f"hiersql: error: {path}: not a DuckDB database file\n"
    for argv in (["jobs", "run", str(spec), "--queue", str(path)], ["jobs", "submit", str(spec), "--queue", str(path)],
                 ["jobs", "status", "--queue", str(path)], ["report", "--db", str(path), "--out",
                                                               str(tmp_path / "r.html")]):
        assert main(argv) == 2, argv
        assert capsys.readouterr().err == said
    spec.write_text(spec.read_text().replace('queue = "q.duckdb"', f'queue = "{name}"'))
    assert main(["jobs", "run", str(spec)]) == 2
    assert capsys.readouterr().err == said
    assert path.read_bytes() == before and not (tmp_path / "r.html").exists()


def test_report_of_a_queue_file_a_run_holds_waits_for_it(fixtures_dir, tmp_path, capsys):
    """report --db on a file another process holds: one line naming the process (was an internal error);
    with --wait, the report once the file is free."""
    spec = make_job(tmp_path, fixtures_dir)
    assert main(["jobs", "run", str(spec)]) == 0
    path = tmp_path / "q.duckdb"
    hold = ("import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('HELD', flush=True);"
            " time.sleep(float(sys.argv[2]))")
    out = tmp_path / "r.html"
    for seconds, argv, code in (("30", [], 2), ("2", ["--wait", "30"], 0)):
        holder = subprocess.Popen([sys.executable, "-c", hold, str(path), seconds], stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout.readline() == "HELD\n"
            capsys.readouterr()
            assert main(["report", "--db", str(path), "--out", str(out), *argv]) == code
            err = capsys.readouterr().err
        finally:
            holder.kill()
            holder.wait()
        if code:
            assert err.startswith(f"hiersql: error: {path}: DuckDB file is locked by process {holder.pid}")
            assert err.count("\n") == 1 and not out.exists()
        else:
            assert out.exists() and err == f"hiersql: wrote {out}\n"


def test_status_while_a_run_holds_the_queue_file(fixtures_dir, tmp_path):
    """The run publishes its status beside the queue file (which DuckDB locks against every other process):
    `jobs status` shows it, naming the process; a file left by a killed run is not taken for the status of
    another; when a run ends its file is gone and status reads the queue."""
    spec = make_job(tmp_path, fixtures_dir)
    path = tmp_path / "q.duckdb"
    published = tmp_path / "q.duckdb.status.json"
    queue = Queue(path)
    job_id = submit(queue, spec)[0]
    queue.close()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def status(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "hiersql", "jobs", "status", "--queue", str(path), *args],
                              capture_output=True, text=True, env=env, timeout=60)

    proc = subprocess.Popen([sys.executable, str(SLOW_RUN), str(path), "0.4", "hang", "--batch", "1"],
                            stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline() == "COMMITTED\n"  # one unit done, then the worker sleeps
        time.sleep(3 * PUBLISH_EVERY)
        during = status()
        assert during.returncode == 0, during.stderr
        lines = during.stdout.splitlines()
        assert lines[0].startswith(f"(the queue is in use by process {proc.pid}, which is running jobs; its"
                                   " status at "), lines
        assert lines[1].startswith(f"{job_id}  demo-job  ") and lines[1].endswith(
            "  3 queued, 0 running, 1 done, 0 skipped, 0 failed, 0 cancelled; 1 attempt(s), 0 unit(s) retried")
        assert len(lines) == 2
        assert status("--job", "demo-job").stdout.splitlines()[1:] == lines[1:]
        other = status("--job", "other")
        assert other.returncode == 2 and other.stderr == f"hiersql: error: {path}: no such job in the queue: 'other'\n"
        assert published.exists()
    finally:
        proc.kill()
        proc.wait(timeout=60)
    # killed: its file stays, but names a process that holds nothing; status reads the queue
    assert published.exists()
    after = status()
    assert after.returncode == 0 and after.stdout == during.stdout.split("\n", 1)[1], after.stdout
    # a run that ends removes its file
    finished = subprocess.run([sys.executable, str(SLOW_RUN), str(path), "0.4", "finish", "--batch", "1"],
                              capture_output=True, text=True, env=env, timeout=120)
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.count("COMMITTED") == 3 and not published.exists()
    assert "  0 queued, 0 running, 4 done, 0 skipped, 0 failed, 0 cancelled; 4 attempt(s)" in status().stdout


def test_system_col_one_unit_per_system_of_a_long_table(fixtures_dir, tmp_path, capsys):
    """system_col: one CSV table of the three demo systems is three units, whose values equal hiersql
    evaluate's on the TSV files; a system whose rows change is the only unit computed again; a bad row fails
    its system alone. A Parquet file with a column named system is the same without the keyword."""
    demo = fixtures_dir / "demo"
    rows = {s: [line.split("\t") for line in (demo / f"{s}.tsv").read_text().splitlines() if line.strip()]
            for s in DEMO_SYSTEMS}

    def write(table: dict[str, list[list[str]]], reverse: bool = True) -> None:
        (tmp_path / "runs.csv").write_text("doc,genre,model\n" + "".join(
            f"{doc},{label},{system}\n" for system in sorted(table, reverse=reverse) for doc, label in table[system]))

    write(rows)
    shutil.copy(demo / "taxonomy.tsv", tmp_path / "taxonomy.tsv")
    shutil.copy(demo / "truth.tsv", tmp_path / "truth.tsv")
    spec = tmp_path / "long.toml"
    spec.write_text('queue = "q.duckdb"\nmetrics = ["hp", "hr"]\ninstance_col = "doc"\nlabel_col = "genre"\n'
                    '[options]\naverage = ["micro"]\n[[dataset]]\nname = "d"\ntaxonomy = "taxonomy.tsv"\n'
                    'truth = "truth.tsv"\npredictions = "runs.csv"\nsystem_col = "model"\n')
    assert main(["jobs", "check", str(spec)]) == 0
    assert capsys.readouterr().out == f"{spec}: 1 dataset(s), 3 unit(s)\n"
    assert main(["jobs", "run", str(spec)]) == 0
    assert "3 unit(s) processed: 3 done" in capsys.readouterr().out
    expected = evaluate_csv(capsys, fixtures_dir, "--pred", str(demo / "[cfs]*.tsv"), "--metrics", "hp,hr",
                            "--average", "micro")
    assert {k[1:]: v for k, v in values(stored(tmp_path / "q.duckdb")).items()} == expected
    assert len(expected) == 3 * 2
    # the same rows in another order: nothing to compute
    write(rows, reverse=False)
    assert main(["jobs", "run", str(spec)]) == 0
    assert "3 unit(s), 0 queued, 3 unchanged" in capsys.readouterr().out
    # shallow's rows change (instance 1: feline becomes jaguar, the true label): only its unit is computed again
    assert rows["shallow"][0] == ["1", "feline"]
    changed = {**rows, "shallow": [["1", "jaguar"], *rows["shallow"][1:]]}
    assert changed["shallow"] != rows["shallow"]
    write(changed)
    assert main(["jobs", "run", str(spec)]) == 0
    assert "3 unit(s), 1 queued, 2 unchanged" in capsys.readouterr().out
    got = values(stored(tmp_path / "q.duckdb"))
    assert {k: v for k, v in got.items() if k[1] != "shallow"} == {("d", *k): v for k, v in expected.items()
                                                                     if k[0] != "shallow"}
    # by hand: shallow's micro hR is 14/26 (test_run_stores_the_values_of_evaluate); jaguar adds one node
    assert expected[("shallow", "hierarchical_recall", "micro")] == 14 / 26
    assert got[("d", "shallow", "hierarchical_recall", "micro")] == 15 / 26
    # a label not in the taxonomy in flat_errors' rows fails flat_errors alone (shallow, changed again and
    # queued in the same batch, is done), naming the file, the line and the system
    bad = {**rows, "shallow": [["1", "house cat"], *rows["shallow"][1:]],
           "flat_errors": [*rows["flat_errors"][:-1], [rows["flat_errors"][-1][0], "unicorn"]]}
    write(bad)
    line = 1 + len(rows["shallow"]) + len(rows["flat_errors"])  # the header, shallow's rows, then flat_errors'
    assert main(["jobs", "run", str(spec)]) == 1
    out = capsys.readouterr().out
    assert f"failed: d/flat_errors: {tmp_path / 'runs.csv'} (model='flat_errors'):{line}: label not in the" \
        " taxonomy: 'unicorn'" in out, out
    assert "3 unit(s), 2 queued, 1 unchanged" in out and "2 unit(s) processed: 1 done, 0 unchanged, 1 failed" in out
    # the same table in Parquet with a column named `system`: found without the keyword
    import pandas as pd

    pd.DataFrame([(doc, label, system) for system, pairs in rows.items() for doc, label in pairs],
                 columns=["doc", "genre", "system"]).to_parquet(tmp_path / "runs.parquet", index=False)
    spec.write_text(spec.read_text().replace('"runs.csv"\nsystem_col = "model"', '"runs.parquet"')
                    .replace("q.duckdb", "q2.duckdb"))
    assert main(["jobs", "run", str(spec)]) == 0
    assert "3 unit(s) processed: 3 done" in capsys.readouterr().out
    assert {k[1:]: v for k, v in values(stored(tmp_path / "q2.duckdb")).items()} == expected


def test_system_col_faults_are_the_job_files(fixtures_dir, tmp_path, capsys):
    demo = fixtures_dir / "demo"
    (tmp_path / "runs.csv").write_text("doc,genre,model\n1,jaguar,a\n2,lion,\n")
    spec = tmp_path / "long.toml"
    spec.write_text(f'instance_col = "doc"\nlabel_col = "genre"\n[[dataset]]\nname = "d"\n'
                    f'taxonomy = "{demo / "taxonomy.tsv"}"\ntruth = "{demo / "truth.tsv"}"\n'
                    'predictions = "runs.csv"\nsystem_col = "model"\n')
    assert main(["jobs", "check", str(spec)]) == 2
    assert capsys.readouterr().err == (
        f"hiersql: error: {spec}:7: cannot read the systems of a predictions table ({tmp_path / 'runs.csv'}:3:"
        " missing system (NULL or empty)): 'runs.csv'\n")
    spec.write_text(spec.read_text().replace('"model"', '"run"'))
    assert main(["jobs", "check", str(spec)]) == 2
    assert "no column 'run' for the system; the table has ['doc', 'genre', 'model']" in capsys.readouterr().err


def test_a_label_format_no_source_reads_is_the_job_files_fault(fixtures_dir, tmp_path, capsys):
    # as evaluate's --labels-format: a format of text files where every label source is a table would be unused
    import pandas as pd

    demo = fixtures_dir / "demo"
    for name in ("truth", "shallow"):
        pd.read_csv(demo / f"{name}.tsv", sep="\t", header=None, names=["instance_id", "label"], dtype=str) \
            .to_parquet(tmp_path / f"{name}.parquet", index=False)
    tables = f'[[dataset]]\nname = "t"\ntaxonomy = "{demo / "taxonomy.tsv"}"\ntruth = "truth.parquet"\n' \
             'predictions = "shallow.parquet"\n'
    texts = DATASET.format(tax=demo / "taxonomy.tsv", truth=demo / "truth.tsv", pred=demo / "shallow.tsv")
    spec = tmp_path / "f.toml"
    cases = {  # job file: (exit code, line at fault)
        tables + 'format = "lines"\n': (2, 6),  # the dataset's own key
        'format = "lines"\n' + tables: (2, 1),  # the file's key, and no dataset it serves reads text
        'format = "lines"\n' + tables + texts: (0, None),  # the file's key serves the text dataset
        tables + 'format = "long"\n': (0, None),
    }
    for body, (code, line) in cases.items():
        spec.write_text(body, encoding="utf-8")
        assert main(["jobs", "check", str(spec)]) == code, body
        err = capsys.readouterr().err
        if code:
            assert err == f"hiersql: error: {spec}:{line}: names the format of label text files (and of a wide" \
                " CSV file), and every label source it applies to is a table, read by its columns: 'lines'\n"
        else:
            assert err == ""


def test_a_dataset_whose_glob_matches_nothing_is_a_warning_and_the_others_run(fixtures_dir, tmp_path, capsys):
    """One dataset of a nightly whose predictions glob matches no file (the folder is empty tonight): one
    warning naming the job file, the line and the glob; the other datasets are checked and run. (A job none of
    whose datasets has a prediction is an error: tests of BAD_SPECS.)"""
    spec = make_job(tmp_path, fixtures_dir, extra='[[dataset]]\nname = "tonight"\ntaxonomy = "taxonomy.tsv"\n'
                                                  'truth = "truth.tsv"\npredictions = "empty/*.tsv"\n')
    line = spec.read_text().splitlines().index('predictions = "empty/*.tsv"') + 1
    said = (f"hiersql: warning: {spec}:{line}: glob matches no file: 'empty/*.tsv' (dataset 'tonight': it has no"
            " unit; the other datasets run)\n")
    assert main(["jobs", "check", str(spec)]) == 0
    assert capsys.readouterr() == (f"{spec}: 3 dataset(s), 4 unit(s)\n", said)
    assert main(["jobs", "run", str(spec)]) == 0
    out, err = capsys.readouterr()
    assert "4 unit(s) processed: 4 done" in out and err == said
