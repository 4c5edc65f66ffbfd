"""Ranks are defined or asked for (issue 42, item 1), systems are never merged silently (item 2).

A label's rank within its instance follows one rule for every source (``hiersql.inputs.tables.RANK_ORDER``): the rank
column, else the score descending (ties by label), else a file's order, else the label. GermEval 2019 subtask B
as one table in several physical orders (a DuckDB table, a shuffled Parquet file, DuckDB queries, a PostgreSQL
table after updates that move its rows, Spark's read of the Parquet) gives byte-identical output, equal to the
file-based run with each instance's labels ranked by name; one warning names the measures that read ranks and
``--rank-col``. Two spellings of one system are an error; a forgotten ``--system-col`` is a warning.
"""

from __future__ import annotations

import random
import warnings
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hiersql import Evaluator, Store, Taxonomy, sqlfiles
from hiersql.cli import main
from hiersql.cli.breakdown import BY
from hiersql.errors import DataWarning
from hiersql.measures import compute
from tests._sources_cases import GOLD, RUNS, TABLE_COLUMNS, germeval_rows, rank_by_name

SYSTEMS = ("Averbis__BOHB_CNN", "EricssonResearch__fconv_A6C1Y", "twistbytes__sklearn_hier_threshold")
METRICS = "pl,hcm_f1"
FLAGS = ["--instance-col", "doc", "--label-col", "genre", "--system-col", "model", "--metrics", METRICS,
         "--format", "csv"]
RANKED = ("no rank or score column and no row order: the labels of an instance are ranked by name for the measures"
          " that read ranks ({}); give their order with --rank-col (rank_col=)")
# the families of METRICS that read ranks: pl the scoring trees', hcm_f1 the HCM's (confusion)
WARNING = RANKED.format("the confusion and scoring families")


@pytest.fixture(scope="module")
def tables(data_dir) -> dict[str, pa.Table]:
    """GermEval B's gold and the runs of :data:`SYSTEMS` as Arrow tables ``gold(doc, genre)`` and
    ``runs(model, doc, genre)``, rows in the files' order."""
    rows = germeval_rows(data_dir)
    picked = {GOLD: rows[GOLD], RUNS: [row for row in rows[RUNS] if row[0] in SYSTEMS]}
    return {name: pa.table(dict(zip(TABLE_COLUMNS[name], map(list, zip(*data, strict=True)), strict=True)))
            for name, data in picked.items()}


@pytest.fixture(scope="module")
def by_name(data_dir) -> dict[tuple[str, str, str], float]:
    """PL and hcm_f1 of the canonical files of :data:`SYSTEMS`, each instance's labels ranked by name."""
    folder = data_dir / "canonical"
    store = Store()
    store.load(folder / "taxonomy.tsv", folder / "truth_b.tsv", {s: folder / "pred_b" / f"{s}.tsv" for s in SYSTEMS})
    in_file_order = {(r.system, r.metric, r.average): r.value for r in compute(store, METRICS.split(","))}
    rank_by_name(store.con)
    values = {(r.system, r.metric, r.average): r.value for r in compute(store, METRICS.split(","))}
    assert values != in_file_order  # the ranks matter to these measures on these systems
    return values


def shuffled(table: pa.Table, seed: int) -> pa.Table:
    rows = table.to_pylist()
    random.Random(seed).shuffle(rows)
    return pa.Table.from_pylist(rows, schema=table.schema)


def evaluate(capsys, data_dir: Path, truth: str, pred: str, *flags: str) -> tuple[str, str]:
    """``(stdout, stderr)`` of ``hiersql evaluate`` of :data:`METRICS` on GermEval B's taxonomy file."""
    assert main(["evaluate", "--taxonomy", str(data_dir / "canonical" / "taxonomy.tsv"), "--truth", truth,
                 "--pred", pred, *FLAGS, *flags]) == 0
    out = capsys.readouterr()
    return out.out, out.err


def values_of(csv_text: str) -> dict[tuple[str, str, str], float]:
    lines = csv_text.splitlines()[1:]
    return {tuple(line.rsplit(",", 3)[:3]): float(line.rsplit(",", 1)[1]) for line in lines}


def duckdb_file(path: Path, tables: dict[str, pa.Table]) -> Path:
    with duckdb.connect(str(path)) as con:
        for name, data in tables.items():
            con.register("_data", data)
            con.execute(f"CREATE TABLE {name} AS SELECT * FROM _data")
            con.unregister("_data")
    return path


def test_one_table_in_other_physical_orders_gives_the_same_bytes(tables, by_name, data_dir, tmp_path, capsys):
    db = duckdb_file(tmp_path / "w.duckdb", tables)
    for name, seed in ((GOLD, 1), (RUNS, 2)):
        pq.write_table(shuffled(tables[name], seed), tmp_path / f"{name}.parquet")
    ref = f"duckdb:{db}::"
    reverse = "SELECT * FROM runs ORDER BY doc DESC, genre DESC"  # an ORDER BY gives no ranks either
    runs = {"table": ref + RUNS, "parquet": str(tmp_path / "runs.parquet"), "query": ref + reverse,
            "sql": f"sql:SELECT DISTINCT model, doc, genre FROM read_parquet('{tmp_path / 'runs.parquet'}')"}
    golds = {"table": ref + GOLD, "parquet": str(tmp_path / "gold.parquet"),
             "query": ref + "SELECT * FROM gold ORDER BY genre DESC", "sql": ref + GOLD}
    outputs = {kind: evaluate(capsys, data_dir, golds[kind], runs[kind]) for kind in runs}
    table_out, table_err = outputs["table"]
    assert {out for out, _ in outputs.values()} == {table_out}
    got = values_of(table_out)
    assert got.keys() == by_name.keys()
    for key, value in by_name.items():
        assert got[key] == pytest.approx(value, rel=1e-12, abs=1e-15), key
    # one warning, naming both tables (each instance of both has several labels somewhere)
    assert table_err == f"hiersql: warning: {ref + GOLD}, {ref + RUNS}: {WARNING}\n"
    assert outputs["parquet"][1] == (f"hiersql: warning: {tmp_path / 'gold.parquet'},"
                                     f" {tmp_path / 'runs.parquet'}: {WARNING}\n")


@pytest.mark.postgres
def test_a_postgresql_table_after_updates_that_move_rows_gives_the_same_bytes(pg_dsn, tables, by_name, data_dir,
                                                                              tmp_path, capsys):
    psycopg = pytest.importorskip("psycopg")
    from psycopg import sql

    from tests.test_sources_postgres import uri

    database = "hiersql_rank_order"
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(database)))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    params = psycopg.conninfo.conninfo_to_dict(pg_dsn) | {"dbname": database}
    with psycopg.connect(**params) as con:
        for name, data in tables.items():
            columns = sql.SQL(", ").join(sql.SQL("{} text").format(sql.Identifier(c)) for c in data.column_names)
            con.execute(sql.SQL("CREATE TABLE {} ({})").format(sql.Identifier(name), columns))
            with con.cursor() as cur, cur.copy(sql.SQL("COPY {} FROM STDIN").format(sql.Identifier(name))) as copy:
                for row in data.to_pylist():
                    copy.write_row(tuple(row.values()))
    base = uri(pg_dsn, database)
    before, err = evaluate(capsys, data_dir, f"{base}::{GOLD}", f"{base}::{RUNS}")
    assert err == f"hiersql: warning: {base}::{GOLD}, {base}::{RUNS}: {WARNING}\n"
    scan = "SELECT model, doc, genre FROM runs"
    with psycopg.connect(**params) as con:
        order = con.execute(scan).fetchall()
        # an update writes new row versions at the table's end: every other instance's labels move there,
        # one label of each after the others of its instance
        con.execute("UPDATE runs SET genre = genre WHERE doc IN (SELECT DISTINCT doc FROM runs ORDER BY doc)"
                    " AND md5(doc) < '8'")
        con.execute("UPDATE gold SET genre = genre WHERE md5(doc || genre) < '8'")
        moved = con.execute(scan).fetchall()
    assert sorted(moved) == sorted(order) and moved != order
    after, _ = evaluate(capsys, data_dir, f"{base}::{GOLD}", f"{base}::{RUNS}")
    pq.write_table(shuffled(tables[GOLD], 3), tmp_path / "gold.parquet")
    pq.write_table(shuffled(tables[RUNS], 4), tmp_path / "runs.parquet")
    parquet, _ = evaluate(capsys, data_dir, str(tmp_path / "gold.parquet"), str(tmp_path / "runs.parquet"))
    assert after == before == parquet
    assert values_of(after) == pytest.approx(by_name, rel=1e-12, abs=1e-15)


def test_scores_rank_descending_with_ties_by_label_and_a_rank_column_before_them(tmp_path):
    taxonomy = Taxonomy.from_edges([("r", "a"), ("r", "b"), ("r", "c"), ("a", "a1")])
    truth = {"instance_id": ["i1", "i2"], "label": ["a1", "b"]}
    # i1: c (0.9) first; a and b tie at 0.5: by label, a then b. i2: the repeated a keeps its higher score
    # (0.7, the first of the two in rank order), so a (0.7) before b (0.3). The rows in two physical orders.
    rows = [("i1", "b", 0.5, 1), ("i1", "c", 0.9, 2), ("i1", "a", 0.5, 2), ("i2", "a", 0.2, 1), ("i2", "b", 0.3, 1),
            ("i2", "a", 0.7, 1)]
    want = [("i1", "a", 2, 0.5), ("i1", "b", 3, 0.5), ("i1", "c", 1, 0.9), ("i2", "a", 1, 0.7), ("i2", "b", 2, 0.3)]
    # with the rank column pos first: i1 b (1), then c and a tie at 2: by score, c (0.9) then a (0.5);
    # i2 all tie at 1: by score, a (0.7), b (0.3)
    by_pos = [("i1", "a", 3, 0.5), ("i1", "b", 1, 0.5), ("i1", "c", 2, 0.9), ("i2", "a", 1, 0.7), ("i2", "b", 2, 0.3)]
    names = ["instance_id", "label", "score", "pos"]
    unique = [row for row in rows if row[:3] != ("i2", "a", 0.2)]  # the same ranks without the duplicate
    for k, order in enumerate((rows, rows[::-1], unique, unique[::-1])):
        path = tmp_path / f"runs{k}.parquet"
        pq.write_table(pa.Table.from_pylist([dict(zip(names, row, strict=True)) for row in order]), path)
        for rank_col, expected in ((None, want), ("pos", by_pos)):
            ev = Evaluator(taxonomy).add_truth(truth)
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                ev.add_predictions("m", path, rank_col=rank_col)
            assert sum("1 duplicate" in str(w.message) for w in seen) == (k < 2), (k, rank_col)
            got = ev.con.execute("SELECT instance_id, label, rank, score FROM predictions ORDER BY ALL").fetchall()
            assert got == expected, (k, rank_col)
    # a text file with scores: ranked by them, not by its lines
    tsv = tmp_path / "m.tsv"
    tsv.write_text("".join(f"{i}\t{label}\t{score}\n" for i, label, score, _ in rows), encoding="utf-8")
    ev = Evaluator(taxonomy).add_truth(truth)
    with pytest.warns(DataWarning, match="1 duplicate"):
        ev.add_predictions("m", tsv)
    assert ev.con.execute("SELECT instance_id, label, rank, score FROM predictions ORDER BY ALL").fetchall() == want


def hand_db(path: Path, runs: list[tuple]) -> Path:
    """A DuckDB file of the hand example: ``tax``, ``truth(instance_id, label)`` and ``runs(model,
    instance_id, label)``."""
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE tax (parent VARCHAR, child VARCHAR)")
        con.executemany("INSERT INTO tax VALUES (?, ?)", [("r", "a"), ("r", "b"), ("a", "a1")])
        con.execute("CREATE TABLE truth (instance_id VARCHAR, label VARCHAR)")
        con.executemany("INSERT INTO truth VALUES (?, ?)", [("i1", "a1"), ("i2", "b")])
        con.execute("CREATE TABLE runs (model VARCHAR, instance_id VARCHAR, label VARCHAR)")
        con.executemany("INSERT INTO runs VALUES (?, ?, ?)", runs)
    return path


def run(capsys, path: Path, *flags: str, command: str = "evaluate", metrics: str = "pl") -> tuple[int, str]:
    ref = f"duckdb:{path}::"
    code = main([command, "--taxonomy", ref + "tax", "--truth", ref + "truth", "--pred", ref + "runs",
                 *(["--metrics", metrics] if metrics else []), *flags])
    return code, capsys.readouterr().err


def test_no_warning_where_ranks_are_given_or_mean_nothing_or_nothing_reads_them(tmp_path, capsys):
    # one label per instance: ranks are all 1, whatever the order
    single = hand_db(tmp_path / "single.duckdb", [("M", "i1", "a1"), ("M", "i2", "a")])
    assert run(capsys, single) == (0, "")
    several = hand_db(tmp_path / "several.duckdb", [("M", "i1", "a1"), ("M", "i1", "b"), ("M", "i2", "a")])
    ref = f"duckdb:{several}::runs"
    scoring = f"hiersql: warning: {ref}: {RANKED.format('the scoring family')}\n"
    assert run(capsys, several) == (0, scoring)
    assert run(capsys, several, "--system-col", "model") == (0, scoring)
    # the warning names the families of the run that read ranks; a run of none gets none
    assert run(capsys, several, metrics="all") == (
        0, f"hiersql: warning: {ref}: {RANKED.format('the confusion, scoring and severity families')}\n")
    assert run(capsys, several, metrics="hcm_f1,hp") == (
        0, f"hiersql: warning: {ref}: {RANKED.format('the confusion family')}\n")
    assert run(capsys, several, metrics="hp,lca_f1,mgia,label_f1") == (0, "")
    assert run(capsys, several, "--kind", "hierarchical", "--format", "csv", command="confusion", metrics="") == (
        0, f"hiersql: warning: {ref}: {RANKED.format('the confusion family')}\n")
    assert run(capsys, several, "--format", "csv", command="confusion", metrics="") == (0, "")  # multi-label
    # of the breakdowns, only the severity histogram reads ranks (its top-1 labels)
    assert run(capsys, several, "--by", "severity", "--format", "csv", command="breakdown", metrics="") == (
        0, f"hiersql: warning: {ref}: {RANKED.format('the severity family')}\n")
    for by in ("level", "class", "errors"):
        assert run(capsys, several, "--by", by, "--format", "csv", command="breakdown", metrics="") == (0, ""), by
    with duckdb.connect(str(several)) as con:
        con.execute("ALTER TABLE runs ADD COLUMN position INTEGER DEFAULT 1")
    assert run(capsys, several, "--rank-col", "position") == (0, "")
    # a CSV file has an order of its own: its lines rank the labels
    csv = tmp_path / "runs.csv"
    csv.write_text("instance_id,label\ni1,a1\ni1,b\ni2,a\n", encoding="utf-8")
    assert main(["evaluate", "--taxonomy", f"duckdb:{several}::tax", "--truth", f"duckdb:{several}::truth",
                 "--pred", str(csv), "--metrics", "hp"]) == 0
    assert capsys.readouterr().err == ""


def test_each_breakdown_reads_the_sql_files_it_declares(tmp_path, capsys, monkeypatch):
    """``hiersql.cli.breakdown.BY`` names the SQL files each ``--by`` reads, whose rank readers the warning of
    labels ranked by name names: they are the files whose queries the run composes on the embedded DuckDB
    (recorded as ``sqlfiles.queries`` is asked), besides the store's own (schema, closure, readers)."""
    path = hand_db(tmp_path / "scored.duckdb", [("M", "i1", "a1"), ("M", "i1", "b"), ("M", "i2", "b")])
    with duckdb.connect(str(path)) as con:  # scores, for --by auprc and calibration
        con.execute("ALTER TABLE runs ADD COLUMN score DOUBLE")
        con.execute("UPDATE runs SET score = CASE label WHEN 'b' THEN 0.4 ELSE 0.8 END")
    asked: set[str] = set()
    queries = sqlfiles.queries
    monkeypatch.setattr(sqlfiles, "queries", lambda file, variant=None: asked.add(file) or queries(file, variant))
    for by, files in BY.items():
        asked.clear()
        code, err = run(capsys, path, "--by", by, "--format", "csv", command="breakdown", metrics="")
        assert (code, err) == (0, ""), by
        assert asked - {"schema", "closure", "readers"} == set(files), by


def test_system_names_that_collide_once_trimmed_are_an_error(tmp_path, capsys):
    path = tmp_path / "runs.parquet"
    rows = [("shallow", "i1", "a1"), ("deep", "i1", "a"), ("shallow ", "i2", "b"), ("deep", "i2", "b")]
    pq.write_table(pa.table({"model": [r[0] for r in rows], "instance_id": [r[1] for r in rows],
                             "label": [r[2] for r in rows]}), path)
    db = hand_db(tmp_path / "w.duckdb", rows)  # its tax and truth
    assert main(["evaluate", "--taxonomy", f"duckdb:{db}::tax", "--truth", f"duckdb:{db}::truth", "--pred",
                 str(path), "--system-col", "model"]) == 2
    assert capsys.readouterr().err == (f"hiersql: error: {path}: system column 'model' spells one system two ways,"
                                       " differing only by the spaces around it: 'shallow' and 'shallow '\n")


def test_a_forgotten_system_column_is_a_warning_naming_it(tmp_path, capsys):
    # M and N both predict a for i1: without --system-col the (instance_id, label) rows repeat, and the
    # column model, not read, holds two values
    path = hand_db(tmp_path / "w.duckdb", [("M", "i1", "a"), ("N", "i1", "a"), ("N", "i2", "b")])
    code, err = run(capsys, path, "--system-col", "nope")
    assert code == 2 and "no column 'nope'" in err
    code, err = run(capsys, path)
    where = f"duckdb:{path}::runs"
    assert code == 0 and err == (
        f"hiersql: warning: {where}: (instance_id, label) rows repeat and column 'model', which is not read, holds"
        " several values: if it names systems, they were merged into one; give --system-col model (system_col=)\n"
        f"hiersql: warning: {where}: 1 duplicate (instance_id, label) row(s) collapsed\n")
    assert run(capsys, path, "--system-col", "model") == (0, "")
    # a column of one value names no systems: only the duplicates are said
    with duckdb.connect(str(path)) as con:
        con.execute("UPDATE runs SET model = 'M'")
    assert run(capsys, path) == (0, f"hiersql: warning: {where}: 1 duplicate (instance_id, label) row(s) collapsed\n")


@pytest.mark.spark
@pytest.mark.slow
def test_spark_ranks_the_shuffled_parquet_as_duckdb_does(spark, tables, data_dir, tmp_path):
    from hiersql import InputError
    from hiersql.engines import SparkEngine
    from hiersql.engines.spark.sources import load

    for name, seed in ((GOLD, 5), (RUNS, 6)):  # two part files each, rows shuffled
        (tmp_path / f"{name}.parquet").mkdir()
        data = shuffled(tables[name], seed)
        pq.write_table(data.slice(0, len(data) // 2), tmp_path / f"{name}.parquet" / "part-0.parquet")
        pq.write_table(data.slice(len(data) // 2), tmp_path / f"{name}.parquet" / "part-1.parquet")
    taxonomy = data_dir / "canonical" / "taxonomy.tsv"
    cols = {"instance_col": "doc", "label_col": "genre", "system_col": "model"}
    engine = SparkEngine(spark)
    with pytest.warns(DataWarning, match="ranked by name") as caught:
        load(engine, Store(), taxonomy, tmp_path / "gold.parquet", [(None, tmp_path / "runs.parquet")], **cols)
    assert [str(w.message) for w in caught if "ranked by name" in str(w.message)] == [  # no run named: every reader
        f"{tmp_path / 'gold.parquet'}, {tmp_path / 'runs.parquet'}: "
        + RANKED.format("the confusion, scoring and severity families")]
    ref = f"duckdb:{duckdb_file(tmp_path / 'w.duckdb', tables)}::"
    store = Store()
    with pytest.warns(DataWarning, match="ranked by name"):
        store.load(taxonomy, ref + GOLD, [(None, ref + RUNS)], **cols)
    for table, columns in (("truth", "instance_id, label, rank"), ("predictions", "system, instance_id, label, rank")):
        got = sorted(engine.execute(f"SELECT {columns} FROM {table}"))
        assert got == sorted(store.con.execute(f"SELECT {columns} FROM {table}").fetchall()), table
    doc = tables[GOLD].column("doc")[0].as_py()
    # the runs without --system-col: one system, whose repeated rows come with a column model of three values
    with pytest.warns(DataWarning) as caught:
        load(engine, Store(), taxonomy, tmp_path / "gold.parquet", [(None, tmp_path / "runs.parquet")],
             instance_col="doc", label_col="genre")
    assert (f"{tmp_path / 'runs.parquet'}: (instance_id, label) rows repeat and column 'model', which is not read,"
            " holds several values: if it names systems, they were merged into one; give --system-col model"
            " (system_col=)") in [str(w.message) for w in caught]
    spelled = pa.table({"model": ["shallow", "shallow "], "doc": [doc, doc], "genre": ["Kinderbuch & Jugendbuch"] * 2})
    pq.write_table(spelled, tmp_path / "spelled.parquet")
    with pytest.raises(InputError) as failed:
        load(engine, Store(), taxonomy, tmp_path / "gold.parquet", [(None, tmp_path / "spelled.parquet")], **cols)
    assert str(failed.value) == (f"{tmp_path / 'spelled.parquet'}: system column 'model' spells one system two ways,"
                                 " differing only by the spaces around it: 'shallow' and 'shallow '")


def test_a_taxonomy_table_in_another_physical_order_gives_the_same_taxonomy(tmp_path):
    """The nodes' order (which a DAG's HCM paths and HEMKit's graphs follow) is that of the edges sorted by
    parent and child for a table without a row order: the same table in two physical orders, and a Parquet
    file, give one taxonomy; a DataFrame keeps its order."""
    import duckdb
    import pandas as pd

    from hiersql import Taxonomy

    edges = [("r", "b"), ("r", "a"), ("b", "x"), ("a", "x"), ("a", "y")]  # x has two parents
    db = tmp_path / "tax.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t1 (parent VARCHAR, child VARCHAR)")
    con.executemany("INSERT INTO t1 VALUES (?, ?)", edges)
    con.execute("CREATE TABLE t2 AS SELECT * FROM t1 ORDER BY child DESC, parent DESC")
    con.execute(f"COPY t2 TO '{tmp_path / 'tax.parquet'}' (FORMAT parquet)")
    con.close()
    read = [Taxonomy.from_table(source) for source in (f"duckdb:{db}::t1", f"duckdb:{db}::t2",
                                                      str(tmp_path / "tax.parquet"))]
    assert [t.all_nodes() for t in read] == [["a", "x", "y", "b", "r"]] * 3  # first seen in (a, x), (a, y), ...
    assert [[(e.parent, e.child) for e in t.edges] for t in read] == [sorted(edges)] * 3
    frame = Taxonomy.from_table(pd.DataFrame(edges, columns=["parent", "child"]))
    assert [(e.parent, e.child) for e in frame.edges] == edges
