"""A job file's ``[run]`` table: its units compute in the engine it names (a real PostgreSQL server here),
with the values of the embedded DuckDB; bad ``[run]`` values are refused by ``jobs check`` on one line naming
the file, the line and the value, as ``evaluate`` refuses its flags."""

from __future__ import annotations

import pytest

from hiersql.cli import main
from tests.test_jobs import make_job, stored, values

METRICS = '["hp", "hf", "lca_f1", "mgia", "hcm_f1", "example_f1"]'


@pytest.mark.postgres
def test_a_job_computes_in_postgres_with_the_values_of_duckdb(fixtures_dir, tmp_path, pg_dsn, capsys):
    (tmp_path / "duckdb").mkdir()
    embedded = make_job(tmp_path / "duckdb", fixtures_dir, metrics=METRICS)
    assert main(["jobs", "run", str(embedded)]) == 0
    (tmp_path / "pg").mkdir()
    server = make_job(tmp_path / "pg", fixtures_dir, metrics=METRICS,
                      extra=f'\n[run]\nengine = "postgres"\npostgres_url = "{pg_dsn}"\n')
    assert main(["jobs", "check", str(server)]) == 0
    assert main(["jobs", "run", str(server)]) == 0
    capsys.readouterr()
    want, got = values(stored(tmp_path / "duckdb" / "q.duckdb")), values(stored(tmp_path / "pg" / "q.duckdb"))
    assert got.keys() == want.keys() and len(want) >= 4 * 6
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-12, nan_ok=True), key


def test_a_server_out_of_reach_fails_the_units_with_its_reason(fixtures_dir, tmp_path, capsys):
    spec = make_job(tmp_path, fixtures_dir, extra='\n[run]\nengine = "postgres"\n'
                                                  'postgres_url = "postgresql://nobody@127.0.0.1:9/none"\n')
    assert main(["jobs", "run", str(spec)]) == 1
    out = capsys.readouterr().out
    assert "4 failed" in out and "cannot connect" in out, out


@pytest.mark.parametrize(("run", "said"), [
    ('engine = "oracle"', "'oracle'"),
    ('engine = "postgres"\ncolour = "blue"', "unknown key in [run]"),
    ('engine = "postgres"\nspark_master = "local[2]"', "spark_master"),
    ('engine = "spark"\nspark_master = "nowhere"', "'nowhere'"),
    ('engine = "postgres"\nmemory_limit = "1GB"', "unknown key in [run]"),
])
def test_bad_run_values_are_one_line_naming_the_file_and_line(fixtures_dir, tmp_path, capsys, run, said):
    spec = make_job(tmp_path, fixtures_dir, extra=f"\n[run]\n{run}\n")
    assert main(["jobs", "check", str(spec)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    line = next(n for n, text in enumerate(spec.read_text().splitlines(), 1) if text.startswith(
        run.splitlines()[-1].split(" ")[0] + " "))
    assert len(err) == 1 and f"{spec}:{line}" in err[0] and said in err[0], err
