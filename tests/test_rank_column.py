"""Ranks from a column (``--rank-col``, ``rank_col=``): GermEval 2019 subtask B's runs as tables whose rows are
shuffled, with each label's position in its file as a column, give the ranks of the files, and so their PL and
HCM values; a rank that is not a number is one line naming the row. On DuckDB (a real file), CSV files, job
files, a real PostgreSQL server and Spark."""

from __future__ import annotations

import csv
import math
import random
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hiersql import Store
from hiersql.cli import main
from hiersql.engines import SparkEngine
from tests._sources_cases import csv_rows

SYSTEMS = ("Averbis__BOHB_CNN", "EricssonResearch__fconv_A6C1Y", "twistbytes__sklearn_hier_threshold")  # GermEval B
METRICS = "pl,hcm"
COLUMNS = ["--instance-col", "doc", "--label-col", "genre", "--system-col", "model", "--rank-col", "position"]


def ranked_rows(path: Path, system: str | None = None) -> list[tuple]:
    """``(model, doc, genre, position)`` of a long TSV file (``position``: the label's rank in its instance as
    the file lists it), without the model for the truth."""
    out, seen = [], {}
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                doc, genre = line.rstrip("\n").split("\t")[:2]
                seen[doc] = seen.get(doc, 0) + 1
                out.append(((system,) if system else ()) + (doc, genre, seen[doc]))
    return out


@pytest.fixture(scope="module")
def tables(data_dir):
    """The truth and the runs of :data:`SYSTEMS`, rows shuffled (a fixed seed), positions as written: Arrow
    tables ``gold(doc, genre, position)`` and ``runs(model, doc, genre, position)``."""
    folder = data_dir / "canonical"
    gold = ranked_rows(folder / "truth_b.tsv")
    runs = [row for s in SYSTEMS for row in ranked_rows(folder / "pred_b" / f"{s}.tsv", s)]
    random.Random(7).shuffle(gold)
    random.Random(8).shuffle(runs)
    as_table = lambda names, rows: pa.table(dict(zip(names, map(list, zip(*rows, strict=True)), strict=True)))  # noqa: E731
    return (as_table(["doc", "genre", "position"], gold),
            as_table(["model", "doc", "genre", "position"], runs))


@pytest.fixture(scope="module")
def by_files(data_dir):
    """The store of the canonical files, and its PL and HCM values: the reference."""
    folder = data_dir / "canonical"
    store = Store()
    store.load(folder / "taxonomy.tsv", folder / "truth_b.tsv", {s: folder / "pred_b" / f"{s}.tsv" for s in SYSTEMS})
    from hiersql.measures import compute

    values = {(r.system, r.metric, r.average): r.value for r in compute(store, METRICS.split(","))}
    return store, values


def same_ranks(store: Store, reference: Store) -> None:
    for table, columns in (("truth", "instance_id, label, rank"),
                           ("predictions", "system, instance_id, label, rank")):
        query = f"SELECT {columns} FROM {table} ORDER BY ALL"
        assert store.con.execute(query).fetchall() == reference.con.execute(query).fetchall(), table


def evaluate(capsys, truth: str, pred: str, taxonomy: Path, *flags: str) -> dict:
    assert main(["evaluate", "--taxonomy", str(taxonomy), "--truth", truth, "--pred", pred, *flags,
                 "--metrics", METRICS, "--format", "csv"]) == 0
    return csv_rows(capsys.readouterr().out)


def test_a_duckdb_file_with_shuffled_rows_ranked_by_a_column_gives_the_files_values(tables, by_files, data_dir,
                                                                                    tmp_path, capsys):
    gold, runs = tables
    db = tmp_path / "dw.duckdb"
    with duckdb.connect(str(db)) as con:
        for name, data in (("gold", gold), ("runs", runs)):
            con.register("data", data)
            con.execute(f"CREATE TABLE {name} AS SELECT * FROM data")
            con.unregister("data")
    reference, want = by_files
    store = Store()
    store.load(data_dir / "canonical" / "taxonomy.tsv", f"duckdb:{db}::gold", [(None, f"duckdb:{db}::runs")],
               instance_col="doc", label_col="genre", system_col="model", rank_col="position")
    same_ranks(store, reference)
    got = evaluate(capsys, f"duckdb:{db}::gold", f"duckdb:{db}::runs", data_dir / "canonical" / "taxonomy.tsv",
                   *COLUMNS)
    assert got.keys() == want.keys() and len(want) == len(SYSTEMS) * 24  # pl, 9 HCM ratios (micro, macro), 4 counts
    for key, value in want.items():
        assert math.isclose(got[key], value, rel_tol=1e-12, abs_tol=1e-15) or (math.isnan(got[key])
                                                                              and math.isnan(value)), key
    # the test can fail: without the column the labels are ranked by name, and the values differ
    without = evaluate(capsys, f"duckdb:{db}::gold", f"duckdb:{db}::runs", data_dir / "canonical" / "taxonomy.tsv",
                       *COLUMNS[:-2])
    assert any(not math.isclose(without[key], value) for key, value in want.items() if not math.isnan(value))


def test_the_truth_without_a_rank_column_keeps_its_order(tables, by_files, data_dir):
    _, runs = tables
    reference, _ = by_files
    truth = pa.table({"doc": [r[0] for r in ranked_rows(data_dir / "canonical" / "truth_b.tsv")],
                      "genre": [r[1] for r in ranked_rows(data_dir / "canonical" / "truth_b.tsv")]})
    store = Store()
    store.load(data_dir / "canonical" / "taxonomy.tsv", truth, [(None, runs)], instance_col="doc",
               label_col="genre", system_col="model", rank_col="position")
    same_ranks(store, reference)


def write_csv(path: Path, header: list[str], rows: list[tuple]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def test_text_ranks_of_a_csv_file_and_ties_in_the_order_read(tmp_path, capsys):
    taxonomy = tmp_path / "tax.tsv"
    taxonomy.write_text("r\ta\nr\tb\na\ta1\n", encoding="utf-8")
    truth = write_csv(tmp_path / "truth.csv", ["instance_id", "label"], [("i1", "a1"), ("i1", "b")])
    # ranks as text (a CSV file is read as text); "2.0" and "10" compare as numbers, not as text
    pred = write_csv(tmp_path / "m.csv", ["instance_id", "label", "pos"],
                     [("i1", "b", "10"), ("i1", "a", "2.0"), ("i1", "a1", "2")])
    store = Store()
    store.load(taxonomy, truth, [("m", pred)], rank_col="pos")
    assert store.con.execute("SELECT label, rank FROM predictions ORDER BY rank").fetchall() == [
        ("a", 1), ("a1", 2), ("b", 3)]  # the tie of 2.0 and 2 in the order of the rows


@pytest.mark.parametrize(("value", "shown"), [("first", ": 'first'"), ("", ""), ("inf", ": 'inf'")])
def test_a_rank_that_is_not_a_number_is_one_line_naming_the_row(tmp_path, capsys, value, shown):
    taxonomy = tmp_path / "tax.tsv"
    taxonomy.write_text("r\ta\nr\tb\n", encoding="utf-8")
    truth = write_csv(tmp_path / "truth.csv", ["doc", "genre"], [("i1", "a"), ("i2", "b")])
    pred = write_csv(tmp_path / "runs.csv", ["model", "doc", "genre", "position"],
                     [("M", "i1", "a", "1"), ("M", "i2", "b", value)])
    assert main(["evaluate", "--taxonomy", str(taxonomy), "--truth", str(truth), "--pred", str(pred),
                 *COLUMNS, "--metrics", "pl"]) == 2
    assert capsys.readouterr().err == f"hiersql: error: {pred} (model='M'):3: rank is not a number{shown}\n"


def test_a_named_rank_column_that_the_predictions_lack_is_an_error(tmp_path, capsys):
    taxonomy = tmp_path / "tax.tsv"
    taxonomy.write_text("r\ta\n", encoding="utf-8")
    truth = write_csv(tmp_path / "truth.csv", ["instance_id", "label"], [("i1", "a")])
    pred = write_csv(tmp_path / "m.csv", ["instance_id", "label"], [("i1", "a")])
    assert main(["evaluate", "--taxonomy", str(taxonomy), "--truth", str(truth), "--pred", str(pred),
                 "--rank-col", "position"]) == 2
    assert capsys.readouterr().err == (f"hiersql: error: {pred}: no column 'position' for the rank; the table has"
                                       " ['instance_id', 'label']\n")


def job_file(tmp_path: Path, data_dir: Path, runs: Path) -> Path:
    spec = tmp_path / "job.toml"
    spec.write_text(f"""name = "ranked"
queue = "{tmp_path / 'q.duckdb'}"
metrics = ["pl"]
instance_col = "doc"
label_col = "genre"
system_col = "model"
rank_col = "position"

[[dataset]]
name = "germeval-b"
taxonomy = "{data_dir / 'canonical' / 'taxonomy.tsv'}"
truth = "{data_dir / 'canonical' / 'truth_b.tsv'}"
predictions = ["{runs}"]
""", encoding="utf-8")
    return spec


def test_a_job_ranks_by_the_column_and_sees_a_reordered_instance_as_changed(tables, by_files, data_dir, tmp_path,
                                                                            capsys):
    _, runs = tables
    path = tmp_path / "runs.parquet"
    pq.write_table(runs, path)
    spec = job_file(tmp_path, data_dir, path)
    assert main(["jobs", "run", str(spec)]) == 0
    capsys.readouterr()
    assert main(["jobs", "results", "--queue", str(tmp_path / "q.duckdb"), "--format", "csv"]) == 0
    got = {(r["system"], r["metric"], r["average"]): float(r["value"])
           for r in csv.DictReader(capsys.readouterr().out.splitlines())}
    _, want = by_files
    assert got == pytest.approx({k: v for k, v in want.items() if k[1] == "pl"}, rel=1e-12)
    # the rows shuffled again: the same ranks, nothing to do; one instance's two labels swapped: its system
    # changed (its PL may differ), the others not
    rows = runs.to_pylist()
    random.Random(9).shuffle(rows)
    pq.write_table(pa.Table.from_pylist(rows, schema=runs.schema), path)
    assert main(["jobs", "run", str(spec)]) == 0
    assert "3 unchanged" in capsys.readouterr().out
    doc = next(r["doc"] for r in rows if r["model"] == SYSTEMS[0] and r["position"] == 2)
    for row in rows:
        if row["model"] == SYSTEMS[0] and row["doc"] == doc and row["position"] in (1, 2):
            row["position"] = 3 - row["position"]
    pq.write_table(pa.Table.from_pylist(rows, schema=runs.schema), path)
    assert main(["jobs", "run", str(spec)]) == 0
    assert "3 unit(s), 1 queued, 2 unchanged" in capsys.readouterr().out


@pytest.mark.spark
@pytest.mark.slow
def test_spark_reads_the_ranks_of_the_column(spark, tables, by_files, data_dir, tmp_path):
    from hiersql.engines.spark.sources import load

    gold, runs = tables
    for name, data in (("gold", gold), ("runs", runs)):  # the runs as two part files, rows of a system in both
        (tmp_path / f"{name}.parquet").mkdir()
        half = len(data) // 2
        pq.write_table(data.slice(0, half), tmp_path / f"{name}.parquet" / "part-0.parquet")
        pq.write_table(data.slice(half), tmp_path / f"{name}.parquet" / "part-1.parquet")
    engine = SparkEngine(spark)
    load(engine, Store(), data_dir / "canonical" / "taxonomy.tsv", tmp_path / "gold.parquet",
         [(None, tmp_path / "runs.parquet")], instance_col="doc", label_col="genre", system_col="model",
         rank_col="position")
    reference, _ = by_files
    for table, columns in (("truth", "instance_id, label, rank"),
                           ("predictions", "system, instance_id, label, rank")):
        got = sorted(engine.execute(f"SELECT {columns} FROM {table}"))
        assert got == sorted(reference.con.execute(f"SELECT {columns} FROM {table}").fetchall()), table
    some = runs.slice(0, 10)
    bad = some.set_column(3, "position", pa.array([None if i == 5 else p for i, p in
                                                   enumerate(some.column("position").to_pylist())], pa.int64()))
    pq.write_table(bad, tmp_path / "bad.parquet")
    from hiersql import InputError

    with pytest.raises(InputError) as failed:
        load(engine, Store(), data_dir / "canonical" / "taxonomy.tsv", tmp_path / "gold.parquet",
             [(None, tmp_path / "bad.parquet")], instance_col="doc", label_col="genre", system_col="model",
             rank_col="position")
    row = bad.slice(5, 1).to_pylist()[0]
    assert str(failed.value) == (f"{tmp_path / 'bad.parquet'}, column 'position', doc={row['doc']!r},"
                                 f" model={row['model']!r}: rank is not a number")


def test_a_job_sees_an_instance_whose_labels_came_in_another_order_as_changed(tmp_path, capsys):
    # without a rank column the order read is the ranks: a system whose instance lists its labels in another
    # order is changed (its PL may differ); the order of whole instances is not
    taxonomy = tmp_path / "tax.tsv"
    taxonomy.write_text("r\ta\nr\tb\na\ta1\n", encoding="utf-8")
    truth = write_csv(tmp_path / "truth.csv", ["instance_id", "label"], [("i1", "a1"), ("i2", "b")])
    rows = [("M", "i1", "a"), ("M", "i1", "b"), ("M", "i2", "b"), ("N", "i1", "a1"), ("N", "i2", "a")]
    runs = write_csv(tmp_path / "runs.csv", ["system", "instance_id", "label"], rows)
    spec = tmp_path / "job.toml"
    spec.write_text(f"""name = "order"
queue = "{tmp_path / 'q.duckdb'}"
metrics = ["pl"]
[[dataset]]
name = "d"
taxonomy = "{taxonomy}"
truth = "{truth}"
predictions = ["{runs}"]
""", encoding="utf-8")
    assert main(["jobs", "run", str(spec)]) == 0
    write_csv(runs, ["system", "instance_id", "label"], [rows[2], rows[0], rows[1], rows[4], rows[3]])
    assert main(["jobs", "run", str(spec)]) == 0
    write_csv(runs, ["system", "instance_id", "label"], [rows[2], rows[1], rows[0], rows[4], rows[3]])
    assert main(["jobs", "run", str(spec)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(": ", 1)[1] for line in out if line.startswith("job ")] == [
        "2 unit(s), 2 queued, 0 unchanged", "2 unit(s), 0 queued, 2 unchanged", "2 unit(s), 1 queued, 1 unchanged"]


@pytest.mark.postgres
def test_postgresql_tables_ranked_by_a_column(pg_dsn, tables, by_files, data_dir):
    psycopg = pytest.importorskip("psycopg")
    from psycopg import sql

    from tests.test_sources_postgres import uri

    database = "hiersql_ranks"
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(database)))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    gold, runs = tables
    with psycopg.connect(**psycopg.conninfo.conninfo_to_dict(pg_dsn) | {"dbname": database}) as con:
        for name, data in (("gold", gold), ("runs", runs)):
            columns = [sql.SQL("{} {}").format(sql.Identifier(c), sql.SQL("integer" if c == "position" else "text"))
                       for c in data.column_names]
            con.execute(sql.SQL("CREATE TABLE {} ({})").format(sql.Identifier(name), sql.SQL(", ").join(columns)))
            with con.cursor() as cur, cur.copy(sql.SQL("COPY {} FROM STDIN").format(sql.Identifier(name))) as copy:
                for row in data.to_pylist():
                    copy.write_row(tuple(row.values()))
    base = uri(pg_dsn, database)
    store = Store()
    store.load(data_dir / "canonical" / "taxonomy.tsv", f"{base}::gold", [(None, f"{base}::runs")],
               instance_col="doc", label_col="genre", system_col="model", rank_col="position")
    same_ranks(store, by_files[0])
