"""``hiersql dbt``: the package runs in real dbt (dbt-duckdb on a DuckDB file, dbt-postgres on a throwaway
server) over the user's own tables and column names, and its models give ``hiersql evaluate``'s values on
the same tables to 1e-12; a dirty table fails the package's data test, naming the fault, where ``evaluate``
refuses it (exit 2)."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from hiersql.cli import main

pytestmark = pytest.mark.slow

FAMILIES = ("set_based", "flat", "scoring", "severity")  # the package's models compared with evaluate
INSTANCES = 400  # of GermEval B's test set: every family crosses instances with and without mistakes
SYSTEMS = ("Averbis__BOHB_CNN", "Comtravo-DS__global_clf_cnn", "Comtravo-DS__local_clf_logit_cnn")
VARS = {"hiersql_truth": "gold", "hiersql_predictions": "runs", "hiersql_instance_col": "doc_id",
        "hiersql_label_col": "genre", "hiersql_system_col": "model", "hiersql_score_col": "NULL",
        "hiersql_rank_col": "pos"}


def user_tables(con, data_dir: Path, schema: str = "main") -> None:
    """GermEval B's first instances under the user's names: ``gold(doc_id, genre, pos)``, ``runs(model, doc_id,
    genre, pos)``, ``pos`` a text column ranking an instance's labels in the reverse of the file's order from
    ``'8'`` (``'10'`` before ``'9'``: compared as text, the order of the instances with three labels or more
    changes, which the scoring measures read)."""
    canonical = data_dir / "canonical"

    def ranked(rows: list[list[str]]) -> list[tuple[str, str, str]]:
        count: dict[str, int] = {}
        for instance, _ in rows:
            count[instance] = count.get(instance, 0) + 1
        seen: dict[str, int] = {}
        out = []
        for instance, label in rows:
            seen[instance] = seen.get(instance, 0) + 1
            out.append((instance, label, str(8 + count[instance] - seen[instance])))
        return out

    rows = [line.split("\t")[:2] for line in (canonical / "truth_b.tsv").read_text().splitlines()]
    kept = set(list(dict.fromkeys(instance for instance, _ in rows))[:INSTANCES])
    marker = "?" if isinstance(con, duckdb.DuckDBPyConnection) else "%s"  # DuckDB's or psycopg's
    con.execute(f"CREATE TABLE {schema}.gold (doc_id TEXT, genre TEXT, pos TEXT)")
    con.executemany(f"INSERT INTO {schema}.gold VALUES ({marker}, {marker}, {marker})",
                    ranked([row for row in rows if row[0] in kept]))
    con.execute(f"CREATE TABLE {schema}.runs (model TEXT, doc_id TEXT, genre TEXT, pos TEXT)")
    for system in SYSTEMS:
        pred = [line.split("\t")[:2] for line in (canonical / "pred_b" / f"{system}.tsv").read_text().splitlines()]
        con.executemany(f"INSERT INTO {schema}.runs VALUES ({marker}, {marker}, {marker}, {marker})",
                        [(system, *row) for row in ranked([row for row in pred if row[0] in kept])])


def dbt_project(tmp_path: Path, data_dir: Path, adapter: str, profile: str, schema: str = "main") -> Path:
    """A user's dbt project using the package ``hiersql dbt`` writes, with its vars and ``profile``."""
    package, project = tmp_path / "hiersql_package", tmp_path / "project"
    assert main(["dbt", "--taxonomy", str(data_dir / "canonical" / "taxonomy.tsv"), "--adapter", adapter,
                 "--k", "1", "--out", str(package)]) == 0  # one k: the severity family is one run, one model
    project.mkdir()
    variables = "\n".join(f"  {key}: \"{value}\"" for key, value in {**VARS, "hiersql_schema": schema}.items())
    (project / "dbt_project.yml").write_text(f"name: user_project\nversion: \"1.0.0\"\nconfig-version: 2\n"
                                             f"profile: user\nvars:\n{variables}\n")
    (project / "packages.yml").write_text(f"packages:\n  - local: {package}\n")
    (project / "profiles.yml").write_text(f"user:\n  target: dev\n  outputs:\n    dev:\n{profile}")
    assert dbt(project, "deps").returncode == 0
    return project


def dbt(project: Path, *args: str) -> subprocess.CompletedProcess:
    """Real dbt (the one installed beside this Python) in ``project``."""
    env = {**os.environ, "DO_NOT_TRACK": "1", "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
           "DBT_LOG_PATH": str(project / "logs")}
    return subprocess.run([str(Path(sys.executable).parent / "dbt"), *args, "--project-dir", str(project),
                           "--profiles-dir", str(project)], capture_output=True, text=True, env=env, timeout=600)


def evaluated(capsys, data_dir: Path, db: Path) -> dict[tuple[str, str, str], float]:
    """``hiersql evaluate`` of the same tables (every measure of the package's families, every average)."""
    table = f"duckdb:{db}::"
    capsys.readouterr()
    code = main(["evaluate", "--taxonomy", str(data_dir / "canonical" / "taxonomy.tsv"),
                 "--truth", table + "gold", "--pred", table + "runs", "--system-col", "model", "--instance-col",
                 "doc_id", "--label-col", "genre", "--rank-col", "pos", "--metrics", "set_based,flat,scoring,severity",
                 "--k", "1",
                 "--average",
                 "micro,macro,samples,weighted,label_macro", "--format", "csv"])
    out = capsys.readouterr().out
    assert code == 0
    return {(r["system"], r["metric"], r["average"]): float(r["value"]) for r in csv.DictReader(io.StringIO(out))}


def assert_same(models: dict, want: dict) -> None:
    assert set(want) <= set(models) and len(want) > 100, sorted(set(want) - set(models))[:5]
    for key, value in want.items():
        assert models[key] == pytest.approx(value, abs=1e-12, nan_ok=True), key


def test_the_package_on_dbt_duckdb_gives_evaluates_values_and_a_dirty_table_fails_its_test(
        tmp_path, data_dir, capsys):
    db = tmp_path / "user.duckdb"
    with duckdb.connect(str(db)) as con:
        user_tables(con, data_dir)
    project = dbt_project(tmp_path, data_dir, "duckdb", f"      type: duckdb\n      path: {db}\n      threads: 1\n")
    built = dbt(project, "build")
    assert built.returncode == 0, built.stdout[-3000:]
    with duckdb.connect(str(db), read_only=True) as con:
        models = {(s, m, a): v for family in FAMILIES for s, m, a, v in con.execute(
            f"SELECT system, metric, average, value FROM hiersql_{family}").fetchall()}
    assert_same(models, evaluated(capsys, data_dir, db))
    with duckdb.connect(str(db)) as con:  # a label lower-cased: not in the taxonomy
        instance, genre = con.execute("SELECT doc_id, genre FROM gold ORDER BY doc_id, genre LIMIT 1").fetchone()
        con.execute("UPDATE gold SET genre = lower(genre) WHERE doc_id = ? AND genre = ?", [instance, genre])
    failed = dbt(project, "build")
    assert failed.returncode == 1
    assert "Failure in test hiersql_input_rules" in failed.stdout
    with duckdb.connect(str(db), read_only=True) as con:
        messages = [m for m, in con.execute("SELECT message FROM hiersql_problems WHERE action = 'error'").fetchall()]
    assert messages == [f"hiersql: gold, column 'label', instance_id='{instance}': label not in the taxonomy:"
                        f" '{genre.lower()}'"]
    table = f"duckdb:{db}::"
    assert main(["evaluate", "--taxonomy", str(data_dir / "canonical" / "taxonomy.tsv"), "--truth", table + "gold",
                 "--pred", table + "runs", "--system-col", "model", "--instance-col", "doc_id", "--label-col",
                 "genre"]) == 2
    assert genre.lower() in capsys.readouterr().err


@pytest.mark.postgres
def test_the_package_on_dbt_postgres_gives_evaluates_values(tmp_path, data_dir, pg_dsn, capsys):
    import psycopg

    settings = dict(part.split("=", 1) for part in pg_dsn.split())
    with psycopg.connect(pg_dsn, autocommit=True) as con:
        con.execute("DROP SCHEMA IF EXISTS dw CASCADE")
        con.execute("DROP SCHEMA IF EXISTS analytics CASCADE")
        con.execute("CREATE SCHEMA dw")
        user_tables(con.cursor(), data_dir, "dw")
    profile = (f"      type: postgres\n      host: {settings['host']}\n      port: {settings['port']}\n"
               f"      user: {settings['user']}\n      password: ''\n      dbname: {settings['dbname']}\n"
               "      schema: analytics\n      threads: 1\n")
    project = dbt_project(tmp_path, data_dir, "postgres", profile, schema="dw")
    built = dbt(project, "build")
    assert built.returncode == 0, built.stdout[-3000:]
    with psycopg.connect(pg_dsn) as con:
        models = {(s, m, a): v for family in FAMILIES for s, m, a, v in con.execute(
            f"SELECT system, metric, average, value FROM analytics.hiersql_{family}").fetchall()}
    db = tmp_path / "same.duckdb"
    with duckdb.connect(str(db)) as con:
        user_tables(con, data_dir)
    assert_same(models, evaluated(capsys, data_dir, db))
