"""Batch jobs over table sources read where they are: a DuckDB file's tables (``duckdb:PATH::table``, PATH
relative to the job file) and a PostgreSQL server's (``postgresql://...::schema.table``), with the users' own
column names and one long table of many systems (one unit per system). GermEval 2019 subtask B: the values
equal those of the file-based run; a unit whose rows are unchanged is skipped, a changed system is computed
again alone, a changed truth table recomputes every unit, and a table changed between the submission and the
run fails its units naming the table."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest

from hiersql.cli import main
from tests._sources_cases import (
    GENRES,
    GOLD,
    RUNS,
    TABLE_COLUMNS,
    assert_same_values,
    by_name_reference,
    germeval_rows,
)
from tests.test_jobs import stored

COLUMN_KEYS = ('instance_col = "doc"\nlabel_col = "genre"\nsystem_col = "model"\nparent_col = "parent_genre"\n'
               'child_col = "child_genre"\n')


def job(folder, taxonomy: str, truth: str, predictions: str, queue: str = "q.duckdb"):
    spec = folder / "warehouse.toml"
    spec.write_text(f'name = "warehouse"\nqueue = "{queue}"\nmetrics = ["hp", "hr", "hf", "pl"]\n{COLUMN_KEYS}'
                    f'[options]\naverage = ["micro", "macro"]\n[[dataset]]\nname = "germeval-b"\n'
                    f'taxonomy = "{taxonomy}"\ntruth = "{truth}"\npredictions = "{predictions}"\n', encoding="utf-8")
    return spec


def results(queue) -> dict[tuple[str, str, str], float]:
    return {tuple(row[1:4]): row[4] for row in stored(queue)}


def expected(data_dir) -> dict[tuple[str, str, str], float]:
    """The job's measures on the canonical files, each instance's labels ranked by name (``pl`` reads the
    ranks: SQL tables have no row order, and the job names no rank column)."""
    want = by_name_reference(data_dir, ("hp", "hr", "hf", "pl"))
    return {k: v for k, v in want.items() if k[2] in ("micro", "macro")}


@pytest.fixture(scope="module")
def rows(data_dir):
    return germeval_rows(data_dir)


def duckdb_tables(path, rows) -> None:
    """The three tables in DuckDB file ``path``, their rows in the files' order."""
    with duckdb.connect(str(path)) as con:
        for table, columns in TABLE_COLUMNS.items():
            data = pa.table({c: [row[i] for row in rows[table]] for i, c in enumerate(columns)})  # noqa: F841
            con.execute(f"CREATE OR REPLACE TABLE {table} AS SELECT * FROM data")


def test_a_duckdb_files_tables_are_units_skipped_while_their_rows_are_unchanged(rows, data_dir, tmp_path, capsys):
    duckdb_tables(tmp_path / "dw.duckdb", rows)
    spec = job(tmp_path, f"duckdb:dw.duckdb::{GENRES}", f"duckdb:./dw.duckdb::{GOLD}", f"duckdb:dw.duckdb::{RUNS}")
    assert main(["jobs", "check", str(spec)]) == 0
    assert capsys.readouterr().out == f"{spec}: 1 dataset(s), 19 unit(s)\n"
    assert main(["jobs", "run", str(spec)]) == 0
    assert "19 unit(s) processed: 19 done, 0 unchanged, 0 failed" in capsys.readouterr().out
    want = expected(data_dir)
    assert len(want) == 19 * 4 * 2
    assert_same_values(results(tmp_path / "q.duckdb"), want)
    assert main(["jobs", "run", str(spec)]) == 0
    assert "19 unit(s), 0 queued, 19 unchanged" in capsys.readouterr().out
    # one system's rows change (one label of one instance removed): its unit alone is computed again
    system = rows[RUNS][0][0]
    with duckdb.connect(str(tmp_path / "dw.duckdb")) as con:
        doc, genre = con.execute("SELECT doc, genre FROM runs WHERE model = ? LIMIT 1", [system]).fetchone()
        con.execute("DELETE FROM runs WHERE model = ? AND doc = ? AND genre = ?", [system, doc, genre])
    assert main(["jobs", "run", str(spec)]) == 0
    assert "19 unit(s), 1 queued, 18 unchanged" in capsys.readouterr().out
    got = results(tmp_path / "q.duckdb")
    assert {k: v for k, v in got.items() if k[0] != system} == {k: v for k, v in want.items() if k[0] != system}
    assert got[(system, "hierarchical_recall", "micro")] < want[(system, "hierarchical_recall", "micro")]
    # the truth table changes (one label of an instance with more): every unit is computed again
    with duckdb.connect(str(tmp_path / "dw.duckdb")) as con:
        con.execute("DELETE FROM gold WHERE rowid = (SELECT min(rowid) FROM gold WHERE doc IN"
                    " (SELECT doc FROM gold GROUP BY doc HAVING count(*) > 1))")
    assert main(["jobs", "run", str(spec)]) == 0
    assert "19 unit(s), 19 queued, 0 unchanged" in capsys.readouterr().out


def test_a_table_changed_after_the_submission_fails_its_units_naming_it(rows, tmp_path, capsys):
    duckdb_tables(tmp_path / "dw.duckdb", rows)
    spec = job(tmp_path, f"duckdb:dw.duckdb::{GENRES}", f"duckdb:dw.duckdb::{GOLD}", f"duckdb:dw.duckdb::{RUNS}")
    assert main(["jobs", "submit", str(spec)]) == 0
    capsys.readouterr()
    system = rows[RUNS][0][0]
    with duckdb.connect(str(tmp_path / "dw.duckdb")) as con:
        con.execute("UPDATE runs SET genre = 'Kinderbuch & Jugendbuch' WHERE model = ? AND doc = "
                    "(SELECT min(doc) FROM runs WHERE model = ?)", [system, system])
    assert main(["jobs", "run", "--queue", str(tmp_path / "q.duckdb")]) == 1
    out = capsys.readouterr().out
    # the table holds every system: each unit reads it, so each fails (and a new submission computes them)
    assert out.count(f": duckdb:{tmp_path / 'dw.duckdb'}::{RUNS}: table changed since the job was submitted:"
                     " submit it again\n") == 19, out


@pytest.mark.parametrize("source, message", [
    ("duckdb:dw.duckdb::gold_b", "no such table in the DuckDB file"),
    ("duckdb:missing.duckdb::gold", "DuckDB file not found"),
    ("spark:gold", "a job reads files and duckdb:, postgresql:// and sql: sources (a spark: table is read by Spark,"
                   " in one run)"),
    ("sql:SELECT * FROM read_parquet('nosuch.parquet')", "query failed (IO Error: No files found that match the"
                                                         " pattern"),
    ("sql:SELECT * FROM gold WHERE", "cannot find the file paths of the query"),
])
def test_a_truth_table_that_cannot_be_read_is_a_fault_of_the_job_file(rows, tmp_path, capsys, source, message):
    duckdb_tables(tmp_path / "dw.duckdb", rows)
    spec = job(tmp_path, f"duckdb:dw.duckdb::{GENRES}", source, f"duckdb:dw.duckdb::{RUNS}")
    assert main(["jobs", "check", str(spec)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"hiersql: error: {spec}:14: {message}") and err.endswith(f": {source!r}\n"), err
    assert err.count("\n") == 1


def test_query_sources_filter_tables_their_files_relative_to_the_job_file(rows, data_dir, tmp_path, monkeypatch,
                                                                         capsys):
    """``sql:`` queries (over Parquet files named relative to the job file, whatever the working directory)
    and ``duckdb:PATH::SELECT`` queries as a job's sources: a filter leaves a system out; the units are keyed
    by the queries' rows (a file rewritten with the same rows leaves them unchanged; a changed row queues its
    system's unit alone)."""
    import pyarrow.parquet as pq

    (tmp_path / "data").mkdir()
    for table, columns in TABLE_COLUMNS.items():
        pq.write_table(pa.table({c: [row[i] for row in rows[table]] for i, c in enumerate(columns)}),
                       tmp_path / "data" / f"{table}.parquet")
    duckdb_tables(tmp_path / "dw.duckdb", rows)
    first, second = sorted({row[0] for row in rows[RUNS]})[:2]
    spec = job(tmp_path, f"sql:SELECT * FROM 'data/{GENRES}.parquet'",
               f"duckdb:dw.duckdb::SELECT * FROM {GOLD} WHERE doc IN (SELECT doc FROM 'data/{GOLD}.parquet')",
               f"sql:SELECT * FROM read_parquet('data/{RUNS}.parquet') WHERE model <> '{first}'")
    monkeypatch.chdir(tmp_path.parent)
    assert main(["jobs", "check", str(spec)]) == 0
    assert capsys.readouterr().out == f"{spec}: 1 dataset(s), 18 unit(s)\n"
    assert main(["jobs", "run", str(spec)]) == 0
    assert "18 unit(s) processed: 18 done, 0 unchanged, 0 failed" in capsys.readouterr().out
    assert_same_values(results(tmp_path / "q.duckdb"), {k: v for k, v in expected(data_dir).items() if k[0] != first})
    runs = pq.read_table(tmp_path / "data" / f"{RUNS}.parquet")
    pq.write_table(runs, tmp_path / "data" / f"{RUNS}.parquet", row_group_size=1000)  # the same rows
    assert main(["jobs", "run", str(spec)]) == 0
    assert "18 unit(s), 0 queued, 18 unchanged" in capsys.readouterr().out
    changed = next(k for k, row in enumerate(rows[RUNS]) if row[0] == second)
    genre = runs.column("genre").to_pylist()
    genre[changed] = next(g for g in ("Kinderbuch & Jugendbuch", "Literatur & Unterhaltung") if g != genre[changed])
    pq.write_table(runs.set_column(2, "genre", pa.array(genre)), tmp_path / "data" / f"{RUNS}.parquet")
    assert main(["jobs", "run", str(spec)]) == 0
    assert "18 unit(s), 1 queued, 17 unchanged" in capsys.readouterr().out


@pytest.mark.postgres
def test_postgres_tables_equal_the_file_based_run(rows, data_dir, pg_dsn, tmp_path, capsys):
    psycopg = pytest.importorskip("psycopg")
    from tests.test_sources_postgres import create

    database = "hiersql_jobs_tables"
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {database}")
        admin.execute(f"CREATE DATABASE {database}")
    params = psycopg.conninfo.conninfo_to_dict(pg_dsn) | {"dbname": database}
    with psycopg.connect(**params) as con:
        con.execute("CREATE SCHEMA ware")
        for table, columns in TABLE_COLUMNS.items():
            create(con, table, list(columns), rows[table], "ware")
    from urllib.parse import quote

    base = (f"postgresql://{params.get('user', 'postgres')}@{quote(params.get('host', 'localhost'), safe='')}:"
            f"{params.get('port', 5432)}/{database}")
    spec = job(tmp_path, f"{base}::ware.{GENRES}", f"{base}::ware.{GOLD}", f"{base}::ware.{RUNS}")
    assert main(["jobs", "run", str(spec)]) == 0
    assert "19 unit(s) processed: 19 done, 0 unchanged, 0 failed" in capsys.readouterr().out
    assert_same_values(results(tmp_path / "q.duckdb"), expected(data_dir))
    with psycopg.connect(**params) as con:
        con.execute("DELETE FROM ware.runs WHERE model = %s AND doc = (SELECT min(doc) FROM ware.runs WHERE model"
                    " = %s)", [rows[RUNS][-1][0], rows[RUNS][-1][0]])
    assert main(["jobs", "run", str(spec)]) == 0
    assert "19 unit(s), 1 queued, 18 unchanged" in capsys.readouterr().out


def test_parquet_folders_are_read_and_keyed_by_their_rows(fixtures_dir, tmp_path, capsys):
    """Folders of Parquet part files (as Spark writes them) as a job's taxonomy, truth and predictions (one
    table of every system, a system column): the values of ``hiersql evaluate`` on the same folders; parts
    rewritten as three parts of the same rows (in the same order: an instance's labels are ranked by it)
    leave every unit unchanged."""
    import duckdb
    import pyarrow.parquet as pq

    demo = fixtures_dir / "demo"
    systems = ("cautious", "shallow")
    con = duckdb.connect()
    for name, sql in (
        ("taxonomy", f"SELECT column0 AS parent, column1 AS child FROM read_csv('{demo / 'taxonomy.tsv'}',"
                     " header=false, delim='\\t', all_varchar=true)"),
        ("truth", f"SELECT column0 AS instance_id, column1 AS label FROM read_csv('{demo / 'truth.tsv'}',"
                  " header=false, delim='\\t', all_varchar=true)"),
        ("predictions", " UNION ALL ".join(
            f"SELECT '{s}' AS system, column0 AS instance_id, column1 AS label FROM read_csv("
            f"'{demo / f'{s}.tsv'}', header=false, delim='\\t', all_varchar=true)" for s in systems)),
    ):
        folder = tmp_path / name
        folder.mkdir()
        rows = con.sql(sql).order("ALL")
        n = len(rows.fetchall())
        con.sql(f"SELECT * FROM ({sql}) ORDER BY ALL LIMIT {n // 2}").write_parquet(str(folder / "part-0.parquet"))
        con.sql(f"SELECT * FROM ({sql}) ORDER BY ALL OFFSET {n // 2}").write_parquet(str(folder / "part-1.parquet"))
    spec = tmp_path / "job.toml"
    spec.write_text('name = "pq"\nqueue = "q.duckdb"\nmetrics = ["hp", "hf", "lca_f1"]\n'
                    '[options]\naverage = ["micro"]\n[[dataset]]\nname = "demo"\ntaxonomy = "taxonomy"\n'
                    'truth = "truth"\npredictions = "predictions"\n')
    assert main(["jobs", "check", str(spec)]) == 0
    assert main(["jobs", "run", str(spec)]) == 0
    capsys.readouterr()
    got = {(r[1], r[2], r[3]): r[4] for r in stored(tmp_path / "q.duckdb")}
    assert main(["evaluate", "--taxonomy", str(tmp_path / "taxonomy"), "--truth", str(tmp_path / "truth"),
                 "--pred", str(tmp_path / "predictions"), "--metrics", "hp,hf,lca_f1", "--average", "micro",
                 "--format", "csv"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()[1:]
    want = {(s, m, a): float(v) for s, m, a, v in (line.split(",") for line in lines)}
    assert got == want and {s for s, _, _ in got} == set(systems)
    for name in ("truth", "predictions"):  # the same rows, in three parts
        folder = tmp_path / name
        rows = con.sql(f"SELECT * FROM read_parquet('{folder}/*.parquet') ORDER BY ALL").to_arrow_table()
        for part in folder.iterdir():
            part.unlink()
        third = len(rows) // 3
        for k, start in enumerate((0, third, 2 * third)):
            pq.write_table(rows.slice(start, third if k < 2 else None), folder / f"part-{k}.parquet")
    assert main(["jobs", "run", str(spec)]) == 0
    assert "2 unit(s), 0 queued, 2 unchanged" in capsys.readouterr().out


@pytest.mark.parametrize("query, anchored", [
    ("SELECT * FROM read_csv(['a.csv', '/b.csv'], header = true)",
     "SELECT * FROM READ_CSV(['/job/a.csv', '/b.csv'], header = TRUE)"),
    ("SELECT * FROM parquet_scan('r/*.parquet') AS r JOIN 'gold.csv' USING (doc)",
     'SELECT * FROM PARQUET_SCAN(\'/job/r/*.parquet\') AS r JOIN "/job/gold.csv" USING (doc)'),
    ("SELECT * FROM read_parquet('s3://bucket/runs.parquet')", None),  # a URL
    ('WITH "runs.v2" AS (SELECT 1 AS x) SELECT * FROM "runs.v2"', None),  # a CTE's name
    ("SELECT 'a.csv' AS label FROM range(3)", None),  # a string that no file function reads
])
def test_a_querys_relative_file_paths_are_made_relative_to_the_job_file(query, anchored):
    from pathlib import Path

    from hiersql.inputs.sources import anchored_query

    assert anchored_query(query, Path("/job")) == (query if anchored is None else anchored)


@pytest.mark.parametrize(("metrics", "warned"), [(["hp", "lca_f1"], ""), (["hp", "pl"], "the scoring family")])
def test_a_job_on_tables_without_ranks_is_warned_only_when_its_measures_read_ranks(metrics, warned, tmp_path,
                                                                                    capsys):
    """As ``hiersql evaluate`` does: a table without row order, rank or score column whose instances have
    several labels is warned of, naming the job's families that read ranks, and not when none does."""
    from tests.test_rank_order import RANKED, hand_db

    hand_db(tmp_path / "dw.duckdb", [("M", "i1", "a1"), ("M", "i1", "b"), ("M", "i2", "a")])
    spec = tmp_path / "job.toml"
    spec.write_text(f'name = "ranks"\nqueue = "q.duckdb"\nmetrics = {metrics}\nsystem_col = "model"\n'
                    '[[dataset]]\nname = "hand"\ntaxonomy = "duckdb:dw.duckdb::tax"\n'
                    'truth = "duckdb:dw.duckdb::truth"\npredictions = "duckdb:dw.duckdb::runs"\n', encoding="utf-8")
    assert main(["jobs", "run", str(spec)]) == 0
    out, err = capsys.readouterr()
    assert "1 unit(s) processed: 1 done" in out, out
    ranked = f"hiersql: warning: duckdb:{tmp_path / 'dw.duckdb'}::runs: {RANKED.format(warned)}\n" if warned else ""
    assert err == ranked, err
