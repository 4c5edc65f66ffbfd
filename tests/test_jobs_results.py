"""Results where the team looks (issue 38): ``hiersql evaluate --out TARGET`` and a job file's ``results =
"TARGET"`` append the result rows to a DuckDB table, a PostgreSQL table (a real server: the ``pg_dsn`` fixture)
or a Parquet folder, with the columns of the queue's results table, one transaction per batch, and without
duplicates per unit hash."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import duckdb
import psycopg
import pytest

from hiersql.cli import main
from hiersql.jobs.targets import COLUMNS
from tests.test_jobs import QUEUE_COLUMNS, make_job, stored, values

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "demo"


def test_the_targets_columns_are_the_queues_results_columns():
    assert ", ".join(COLUMNS) == QUEUE_COLUMNS["results"]


@pytest.fixture
def pg_url(pg_dsn):
    """A new database on the test server, as a ``postgresql://`` URL (a results target is one)."""
    info = psycopg.conninfo.conninfo_to_dict(pg_dsn)
    name = f"out_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_dsn, autocommit=True) as con:
        con.execute(f'CREATE DATABASE "{name}"')
    yield f"postgresql://{info.get('user', 'postgres')}@/{name}?host={info['host']}&port={info.get('port', 5432)}"
    with psycopg.connect(pg_dsn, autocommit=True) as con:
        con.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def target_of(kind: str, tmp_path: Path, request) -> str:
    if kind == "duckdb":
        return f"duckdb:{tmp_path / 'team.duckdb'}::eval.results"
    if kind == "parquet":
        return f"parquet:{tmp_path / 'results'}"
    return f"{request.getfixturevalue('pg_url')}::eval.results"


def read_target(target: str) -> list[tuple]:
    """The rows of a target, as tuples of :data:`COLUMNS`, sorted."""
    select = f"SELECT {', '.join(COLUMNS)} FROM "
    if target.startswith("duckdb:"):
        path, table = target[len("duckdb:"):].split("::")
        with duckdb.connect(path, read_only=True) as con:
            assert [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()] == list(COLUMNS)
            return sorted(con.execute(select + table).fetchall())
    if target.startswith("parquet:"):
        folder = Path(target[len("parquet:"):])
        with duckdb.connect() as con:
            return sorted(con.execute(select + "read_parquet($f)", {"f": [str(f) for f in folder.glob("*.parquet")]}
                                      ).fetchall()) if list(folder.glob("*.parquet")) else []
    url, table = target.rsplit("::", 1)
    with psycopg.connect(url) as con:
        assert [r[0] for r in con.execute(f"SELECT * FROM {table} LIMIT 0").description] == list(COLUMNS)
        return sorted(con.execute(select + table).fetchall())


KINDS = ["duckdb", "parquet", pytest.param("postgres", marks=pytest.mark.postgres)]


def evaluate(target: str, *preds: str, dataset: str = "demo") -> int:
    argv = ["evaluate", "--taxonomy", str(DEMO / "taxonomy.tsv"), "--truth", str(DEMO / "truth.tsv"),
            "--dataset", dataset, "--metrics", "hp,hr", "--format", "csv", "--out", target]
    for pred in preds:
        argv += ["--pred", pred]
    return main(argv)


@pytest.mark.parametrize("kind", KINDS)
def test_evaluate_out_appends_and_an_unchanged_run_adds_nothing(kind, tmp_path, request, capsys):
    target = target_of(kind, tmp_path, request)
    shutil.copy(DEMO / "shallow.tsv", tmp_path / "shallow.tsv")
    preds = [str(DEMO / "cautious.tsv"), str(tmp_path / "shallow.tsv")]
    assert evaluate(target, *preds) == 0
    first = read_target(target)
    printed = capsys.readouterr().out.splitlines()[1:]
    assert len(first) == len(printed) == 2 * 2 * 2  # systems x measures x averages
    assert {r[1] for r in first} == {"demo"} and {r[8] for r in first} == {None}  # dataset; no job
    assert len({r[7] for r in first}) == 2  # a key per system
    assert {(r[2], r[3], r[4]): r[5] for r in first} == {
        (s, m, a): float(v) for s, m, a, v in (line.split(",") for line in printed)}

    assert evaluate(target, *preds) == 0  # unchanged: the same rows (replaced, or skipped in a folder)
    again = read_target(target)
    assert [r[1:6] + r[7:] for r in again] == [r[1:6] + r[7:] for r in first]

    (tmp_path / "shallow.tsv").write_text((DEMO / "cautious.tsv").read_text())  # one system changed
    assert evaluate(target, *preds) == 0
    changed = read_target(target)
    assert len(changed) == len(first) + 4  # the new key's rows beside the old ones (the history)
    assert len({r[7] for r in changed}) == 3
    if kind == "parquet":
        assert len(list(Path(target[len("parquet:"):]).glob("*.parquet"))) == 2  # one file per write


@pytest.mark.parametrize("kind", KINDS)
def test_a_job_appends_its_rows_once_per_unit_hash(kind, fixtures_dir, tmp_path, request, capsys):
    target = target_of(kind, tmp_path, request)
    spec = make_job(tmp_path, fixtures_dir)
    text = spec.read_text()
    spec.write_text(text.replace('queue = "q.duckdb"\n', f'queue = "q.duckdb"\nresults = "{target}"\n'))
    assert main(["jobs", "run", str(spec), "--batch", "2"]) == 0  # several batches: one transaction each
    rows = read_target(target)
    queue = stored(tmp_path / "q.duckdb")
    assert len(rows) == len(queue) == 4 * 2
    assert {(r[1], r[2], r[3], r[4] or ""): r[5] for r in rows} == values(queue)
    assert {r[7] for r in rows} == {r[5] for r in queue}  # the units' keys
    assert all(r[8] and r[9] for r in rows)  # job and unit

    assert main(["jobs", "run", str(spec)]) == 0  # unchanged: nothing computed, nothing written twice
    assert read_target(target) == rows
    assert main(["jobs", "run", str(spec), "--recompute"]) == 0  # computed again: replaced (a folder: kept)
    again = read_target(target)
    assert len(again) == len(rows)
    assert {(r[1], r[2], r[3], r[4]): r[5] for r in again} == {(r[1], r[2], r[3], r[4]): r[5] for r in rows}
    if kind != "parquet":
        assert {r[0] for r in again}.isdisjoint({r[0] for r in rows})  # the rows of the new run
    else:
        assert again == rows
    capsys.readouterr()


def test_a_results_table_named_later_gets_the_rows_of_unchanged_units(fixtures_dir, tmp_path, capsys):
    spec = make_job(tmp_path, fixtures_dir)
    assert main(["jobs", "run", str(spec)]) == 0
    target = f"duckdb:{tmp_path / 'team.duckdb'}::results"
    spec.write_text(spec.read_text().replace('queue = "q.duckdb"\n', f'queue = "q.duckdb"\nresults = "{target}"\n'))
    assert main(["jobs", "run", str(spec)]) == 0
    assert "0 queued, 4 unchanged" in capsys.readouterr().out
    rows = read_target(target)
    assert len(rows) == 8 and {r[0] for r in rows} == {r[6] for r in stored(tmp_path / "q.duckdb")}
    assert main(["jobs", "run", str(spec)]) == 0
    assert read_target(target) == rows  # present: not written again


def test_names_are_quoted_not_spliced(tmp_path, capsys):
    name = 'x"; DROP TABLE results; --'
    target = f"""duckdb:{tmp_path / 'team.duckdb'}::"{name.replace('"', '""')}\""""
    with duckdb.connect(str(tmp_path / "team.duckdb")) as con:
        con.execute("CREATE TABLE results (x INTEGER)")
    assert evaluate(target, str(DEMO / "cautious.tsv")) == 0
    with duckdb.connect(str(tmp_path / "team.duckdb"), read_only=True) as con:
        assert sorted(r[0] for r in con.execute("SHOW TABLES").fetchall()) == sorted(["results", name])
        assert con.execute(f'SELECT count(*) FROM "{name.replace(chr(34), chr(34) * 2)}"').fetchall() == [(4,)]


def users_table(path: Path) -> None:
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE scores (run_id VARCHAR, dataset VARCHAR, system VARCHAR, metric VARCHAR,"
                    " average VARCHAR, value DOUBLE, created_at TIMESTAMP)")
        con.execute("INSERT INTO scores VALUES ('r', 'd', 's', 'm', NULL, 1.0, NULL)")


def test_a_table_of_other_columns_is_refused_and_left_as_it_is(tmp_path, capsys):
    users_table(tmp_path / "team.duckdb")
    assert evaluate(f"duckdb:{tmp_path / 'team.duckdb'}::scores", str(DEMO / "cautious.tsv")) == 2
    assert capsys.readouterr() == ("", "hiersql: error: --out: table 'scores' has no column 'key' (a results table"
                                       f" has the columns {', '.join(COLUMNS)}): give another table, or add the"
                                       " column: 'key'\n")
    with duckdb.connect(str(tmp_path / "team.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM scores").fetchall() == [(1,)]
        assert len(con.execute("DESCRIBE scores").fetchall()) == 7


def test_a_parquet_folder_with_a_file_of_other_columns_is_refused(tmp_path, capsys):
    (tmp_path / "out").mkdir()
    with duckdb.connect() as con:
        con.execute(f"COPY (SELECT 1 AS run_id) TO '{tmp_path / 'out' / 'theirs.parquet'}' (FORMAT parquet)")
    assert evaluate(f"parquet:{tmp_path / 'out'}", str(DEMO / "cautious.tsv")) == 2
    err = capsys.readouterr().err
    assert err.startswith("hiersql: error: --out: Parquet file 'theirs.parquet' has no column 'dataset'")
    assert [f.name for f in (tmp_path / "out").iterdir()] == ["theirs.parquet"]


def test_a_job_files_results_table_of_other_columns_names_its_line(fixtures_dir, tmp_path, capsys):
    users_table(tmp_path / "team.duckdb")
    spec = make_job(tmp_path, fixtures_dir)
    spec.write_text(spec.read_text().replace('queue = "q.duckdb"\n',
                                             'queue = "q.duckdb"\nresults = "duckdb:team.duckdb::scores"\n'))
    assert main(["jobs", "check", str(spec)]) == 2
    assert capsys.readouterr().err.startswith(f"hiersql: error: {spec}:3: table 'scores' has no column 'key'")


def test_a_table_changed_under_a_run_fails_its_units_and_the_queue_keeps_no_rows(fixtures_dir, tmp_path, capsys,
                                                                                  monkeypatch):
    from hiersql.jobs import runner

    spec = make_job(tmp_path, fixtures_dir)
    spec.write_text(spec.read_text().replace('queue = "q.duckdb"\n',
                                             'queue = "q.duckdb"\nresults = "duckdb:team.duckdb::scores"\n'))
    evaluate_units = runner.Child.evaluate  # (in the run's process, while its child evaluates)

    def evaluate_then_break_the_table(child, units):  # the team's table loses a column after the check
        if not (tmp_path / "team.duckdb").exists():
            users_table(tmp_path / "team.duckdb")
        return evaluate_units(child, units)

    monkeypatch.setattr(runner.Child, "evaluate", evaluate_then_break_the_table)
    assert main(["jobs", "run", str(spec)]) == 1
    out = capsys.readouterr().out
    assert out.count("its rows were not written to the results table: duckdb:") == 4
    assert "table 'scores' has no column 'key'" in out
    assert stored(tmp_path / "q.duckdb") == []


# --- --on-failure CMD (issue 38)

def failing_job(tmp_path: Path, fixtures_dir: Path, on_failure: str | None = None) -> Path:
    """The demo job with one prediction file that fails (a label not in the taxonomy)."""
    spec = make_job(tmp_path, fixtures_dir)
    (tmp_path / "preds" / "broken.tsv").write_text("i1\tNope\n", encoding="utf-8")
    if on_failure is not None:
        spec.write_text(spec.read_text().replace('queue = "q.duckdb"\n',
                                                 f"queue = \"q.duckdb\"\non_failure = '''{on_failure}'''\n"))
    return spec


HOOK = 'env | grep ^HIERSQL_ | sort > "$OUT/env.txt"; cat > "$OUT/stdin.json"; echo notified'


def test_on_failure_runs_with_the_summary_in_its_environment_and_on_stdin(fixtures_dir, tmp_path, capsys,
                                                                          monkeypatch):
    import json

    monkeypatch.setenv("OUT", str(tmp_path))
    spec = failing_job(tmp_path, fixtures_dir)
    assert main(["jobs", "run", str(spec), "--on-failure", HOOK]) == 1
    out, err = capsys.readouterr()
    summary = f"{spec}: 1 of 5 unit(s) failed (`hiersql jobs status` lists the errors)"
    assert err.splitlines() == ["notified", f"hiersql: error: {summary}"]  # its output on stderr
    assert "notified" not in out
    env = dict(line.split("=", 1) for line in (tmp_path / "env.txt").read_text().splitlines())
    job_id = out.split()[1].rstrip(":")
    assert env == {"HIERSQL_JOB": "demo-job", "HIERSQL_JOB_ID": job_id, "HIERSQL_SPEC": str(spec),
                   "HIERSQL_QUEUE": str(tmp_path / "q.duckdb"), "HIERSQL_STATUS": "1", "HIERSQL_FAILED": "1",
                   "HIERSQL_UNITS": "5", "HIERSQL_SUMMARY": summary}
    told = json.loads((tmp_path / "stdin.json").read_text())
    assert told["failures"] == [{"dataset": "demo", "system": "broken",
                                 "error": told["failures"][0]["error"]}]
    assert "'Nope'" in told["failures"][0]["error"]
    assert told["counts"] == {"done": 4, "failed": 1} and told["job_id"] == job_id and told["status"] == 1


def test_a_failing_on_failure_command_is_a_warning_and_the_exit_status_stays_1(fixtures_dir, tmp_path, capsys):
    spec = failing_job(tmp_path, fixtures_dir, on_failure="echo oops >&2; exit 3")  # the job file's
    assert main(["jobs", "run", str(spec)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == ["oops", "hiersql: warning: --on-failure: the command exited with status 3 (the run's exit status"
                   " stays 1): 'echo oops >&2; exit 3'",
                   f"hiersql: error: {spec}: 1 of 5 unit(s) failed (`hiersql jobs status` lists the errors)"]


def test_an_on_failure_command_that_hangs_is_killed_with_what_it_started(fixtures_dir, tmp_path, capsys,
                                                                           monkeypatch):
    """A hook that never ends (a mail server that never answers) does not hold the run: after
    ``hooks.TIMEOUT`` seconds the shell and the process it started are killed, one warning says so, and the
    exit status stays the run's."""
    import time

    from hiersql.jobs import hooks

    monkeypatch.setattr(hooks, "TIMEOUT", 2.0)
    pid_file = tmp_path / "pid"
    spec = failing_job(tmp_path, fixtures_dir, on_failure=f"sleep 600 & echo $! > {pid_file}; wait")
    start = time.monotonic()
    assert main(["jobs", "run", str(spec)]) == 1
    assert time.monotonic() - start < 60
    err = capsys.readouterr().err.splitlines()
    assert err[0] == ("hiersql: warning: --on-failure: the command ran longer than 2 s and was killed (the run's"
                      f" exit status stays 1): 'sleep 600 & echo $! > {pid_file}; wait'"), err
    sleeper = int(pid_file.read_text())
    time.sleep(0.2)
    assert not Path(f"/proc/{sleeper}").exists() or "Z" in Path(f"/proc/{sleeper}/stat").read_text().split()[2]


def test_on_failure_is_not_run_when_nothing_failed_and_the_flag_wins(fixtures_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OUT", str(tmp_path))
    spec = make_job(tmp_path, fixtures_dir)
    assert main(["jobs", "run", str(spec), "--on-failure", "touch \"$OUT/ran\""]) == 0
    assert not (tmp_path / "ran").exists()
    spec = failing_job(tmp_path, fixtures_dir, on_failure="touch \"$OUT/file\"")
    assert main(["jobs", "run", str(spec), "--on-failure", "touch \"$OUT/flag\""]) == 1
    assert (tmp_path / "flag").exists() and not (tmp_path / "file").exists()
    capsys.readouterr()
