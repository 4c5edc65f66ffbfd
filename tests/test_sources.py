"""Labels and taxonomies read where they are: a real DuckDB file, Parquet, CSV, queries, DataFrames, Arrow.

GermEval 2019 subtask B as the tables ``gold(doc, genre)``, ``runs(model, doc, genre)`` and
``genres(parent_genre, child_genre)`` gives the values of the file-based run; bad rows are errors naming the
table, the column, the value and the row key; a failed run leaves the user's file byte for byte as it was.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pytest

from hiersql import Evaluator, InputError, Store, Taxonomy
from hiersql.cli import main
from hiersql.errors import DataWarning
from hiersql.inputs.tables import quote, split_name
from tests._sources_cases import (
    COLUMN_FLAGS,
    GENRES,
    GOLD,
    HAND_EDGES,
    HAND_PREDS,
    HAND_TRUTH,
    HAND_VALUES,
    RUNS,
    WEIRD,
    WEIRD_TABLE,
    assert_same_values,
    by_name_reference,
    csv_rows,
    file_reference,
    germeval_arrow,
    rank_by_name,
)

ROOT = Path(__file__).resolve().parents[1]
LABEL_COLS = {"instance_col": "doc", "label_col": "genre"}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory, data_dir) -> Path:
    """A DuckDB file holding GermEval B as gold, runs and genres."""
    path = tmp_path_factory.mktemp("warehouse") / "warehouse.duckdb"
    con = duckdb.connect(str(path))
    for table, data in germeval_arrow(data_dir).items():
        con.register("data", data)
        con.execute(f"CREATE TABLE {table} AS SELECT * FROM data")
        con.unregister("data")
    con.close()
    return path


def hand_file(path: Path, table: str = WEIRD_TABLE, columns: dict[str, str] = WEIRD) -> Path:
    """The hand example in a DuckDB file: ``tax(parent, child)``, ``truth`` and the predictions ``table``,
    under the given column names."""
    con = duckdb.connect(str(path))
    i, lab, sys_ = (quote(columns[k]) for k in ("instance", "label", "system"))
    con.execute("CREATE TABLE tax (parent VARCHAR, child VARCHAR)")
    con.executemany("INSERT INTO tax VALUES (?, ?)", HAND_EDGES)
    con.execute(f"CREATE TABLE truth ({i} VARCHAR, {lab} VARCHAR)")
    con.executemany("INSERT INTO truth VALUES (?, ?)", HAND_TRUTH)
    con.execute(f"CREATE TABLE {quote(table)} ({sys_} VARCHAR, {i} VARCHAR, {lab} VARCHAR)")
    con.executemany(f"INSERT INTO {quote(table)} VALUES (?, ?, ?)", HAND_PREDS)
    con.close()
    return path


def hand_values(ev: Evaluator) -> dict:
    rows = ev.evaluate(["hp", "hr"], average=["micro"])
    return {(r.system, r.metric): r.value for r in rows.itertuples()}


def weird_cols() -> dict[str, str]:
    return {"instance_col": WEIRD["instance"], "label_col": WEIRD["label"]}


def test_a_bad_score_and_the_virtual_root_in_a_table_are_named_by_row_key(tmp_path, capsys):
    # as a label not in the taxonomy is: the table, the column and the row's key, not a row number
    path = tmp_path / "w.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE forest (parent VARCHAR, child VARCHAR)")
    con.executemany("INSERT INTO forest VALUES (?, ?)", [("a", "b"), ("c", "d")])  # two roots: a virtual one
    con.execute("CREATE TABLE gold (instance_id VARCHAR, label VARCHAR)")
    con.executemany("INSERT INTO gold VALUES (?, ?)", [("i1", "b"), ("i2", "d")])
    con.execute("CREATE TABLE gold_root AS SELECT * FROM gold UNION ALL SELECT 'i3', '__root__'")
    con.execute("CREATE TABLE runs (system VARCHAR, instance_id VARCHAR, label VARCHAR, score VARCHAR)")
    con.executemany("INSERT INTO runs VALUES (?, ?, ?, ?)", [("s1", "i1", "b", "0.5"), ("s1", "i2", "d", "abc")])
    con.execute("CREATE TABLE runs_ok AS SELECT * FROM runs WHERE score <> 'abc'")
    con.close()
    base = ["evaluate", "--taxonomy", f"duckdb:{path}::forest"]
    assert main([*base, "--truth", f"duckdb:{path}::gold", "--pred", f"duckdb:{path}::runs"]) == 2
    assert capsys.readouterr().err == (f"hiersql: error: duckdb:{path}::runs, column 'score', instance_id='i2',"
                                       " system='s1': score is not a number: 'abc'\n")
    assert main([*base, "--truth", f"duckdb:{path}::gold_root", "--pred", f"duckdb:{path}::runs_ok"]) == 2
    assert capsys.readouterr().err == (
        f"hiersql: error: duckdb:{path}::gold_root, column 'label', instance_id='i3': label is the virtual root"
        " added above the taxonomy's parentless nodes, not one of its nodes: '__root__'\n")


def test_the_score_column_is_the_predictions_only(tmp_path, capsys):
    # --score-col names the predictions' score: a truth table without it is read, and a truth column that
    # happens to be called score (here text) is not read either
    path = hand_file(tmp_path / "w.duckdb")
    con = duckdb.connect(str(path))
    con.execute(f"ALTER TABLE {quote(WEIRD_TABLE)} ADD COLUMN conf DOUBLE DEFAULT 0.25")
    con.execute("CREATE TABLE gold_scored AS SELECT *, 'x' AS score FROM truth")
    con.close()
    common = ["--taxonomy", f"duckdb:{path}::tax", "--pred", f"duckdb:{path}::{WEIRD_TABLE}",
              "--instance-col", WEIRD["instance"], "--label-col", WEIRD["label"], "--system-col", WEIRD["system"],
              "--metrics", "hp,hr", "--average", "micro", "--format", "csv"]
    assert main(["evaluate", "--truth", f"duckdb:{path}::truth", "--score-col", "conf", *common]) == 0
    with_scores = capsys.readouterr().out
    assert main(["evaluate", "--truth", f"duckdb:{path}::gold_scored", *common]) == 0
    assert capsys.readouterr().out == with_scores
    got = {tuple(line.split(",")[:2]): float(line.split(",")[3]) for line in with_scores.splitlines()[1:]}
    assert got == pytest.approx(HAND_VALUES)
    store = Store()
    store.load(Taxonomy.from_table(f"duckdb:{path}::tax"), f"duckdb:{path}::gold_scored",
               [(None, f"duckdb:{path}::{WEIRD_TABLE}")], score_col="conf", system_col=WEIRD["system"],
               **weird_cols())
    assert store.con.execute("SELECT DISTINCT score FROM predictions").fetchall() == [(0.25,)]
    store.close()


@pytest.mark.parametrize(("flag", "truth_table", "fails"), [
    ("--system-col", False, True), ("--rank-col", False, True), ("--score-col", True, True),
    ("--instance-col", False, True), ("--instance-col", True, False), ("--label-col", True, False)])
def test_a_column_flag_without_a_table_it_applies_to_is_an_error(tmp_path, capsys, flag, truth_table, fails):
    # text files have no column names: the flag would be left unused without a word (the instance and label
    # columns are the truth's too; the score, system and rank columns the predictions' only)
    (tmp_path / "tax.tsv").write_text("r\ta\n", encoding="utf-8")
    (tmp_path / "truth.tsv").write_text("i1\ta\n", encoding="utf-8")
    (tmp_path / "truth.csv").write_text("id,label\ni1,a\n", encoding="utf-8")
    (tmp_path / "m.tsv").write_text("i1\ta\n", encoding="utf-8")
    truth = tmp_path / ("truth.csv" if truth_table else "truth.tsv")
    code = main(["evaluate", "--taxonomy", str(tmp_path / "tax.tsv"), "--truth", str(truth),
                 "--pred", str(tmp_path / "m.tsv"), flag, "id", "--metrics", "hp"])
    err = capsys.readouterr().err
    if fails:
        assert (code, err) == (2, f"hiersql: error: {flag}: names a column of table sources (Parquet, CSV with a"
                                  " header, duckdb:, postgresql://, sql:, spark:), and no source it applies to is"
                                  " one: 'id'\n")
    else:  # the truth's table has such columns (its label column "id" then holds no label of the taxonomy)
        assert "names a column of table sources" not in err
        assert code == (0 if flag == "--instance-col" else 2), err


# ---------------------------------------------------------------------- GermEval B from a DuckDB file
def test_germeval_b_from_a_duckdb_file_equals_the_files_cli(warehouse, data_dir, capsys):
    """The command of docs/warehouse.md: every measure (``all``) equals the file-based run with the labels of
    each instance ranked by name (a SQL table has no row order, and no rank column is given)."""
    before = digest(warehouse)
    ref = f"duckdb:{warehouse}::"
    args = ["evaluate", "--taxonomy", ref + GENRES, "--truth", ref + GOLD, "--pred", ref + RUNS,
            *COLUMN_FLAGS, "--metrics", "all", "--format", "csv"]
    assert main(args) == 0
    out = capsys.readouterr()
    got = csv_rows(out.out)
    assert len({k[0] for k in got}) == 19
    assert_same_values(got, by_name_reference(data_dir))
    assert out.err.count("ranked by name") == 1
    assert digest(warehouse) == before


def test_germeval_b_tables_equal_the_files_in_python(warehouse, data_dir):
    """The Python API loads the same rows as the files, the ranks by label name (a table has no row order)."""
    folder = data_dir / "canonical"
    by_file = Store()
    by_file.load(folder / "taxonomy.tsv", folder / "truth_b.tsv",
                 {p.stem: p for p in sorted((folder / "pred_b").glob("*.tsv"))})
    rank_by_name(by_file.con)
    ref = f"duckdb:{warehouse}::"
    tax = Taxonomy.from_table(ref + GENRES, parent="parent_genre", child="child_genre")
    with pytest.warns(DataWarning, match="ranked by name"):
        ev = Evaluator(tax).add_truth(ref + GOLD, **LABEL_COLS)
        ev.add_predictions(None, ref + RUNS, system_col="model", **LABEL_COLS)
    for query in ("SELECT * FROM truth", "SELECT * FROM predictions", "SELECT * FROM edges",
                  "SELECT * FROM instances"):
        assert sorted(ev.con.execute(query).fetchall()) == sorted(by_file.con.execute(query).fetchall())
    assert ev.systems == by_file.systems()
    # nothing of the user's stays attached to hiersql's connection
    assert ev.con.execute("SELECT count(*) FROM duckdb_databases() WHERE NOT internal").fetchall() == [(1,)]


def test_parquet_with_a_system_column_is_one_system_per_value(warehouse, data_dir, tmp_path, capsys):
    """The Spark command of docs/warehouse.md: a folder of Parquet part files with a system column gives the
    19 systems of the files, a system split between two parts included."""
    folder = tmp_path / "runs.parquet"  # Spark's layout: a folder of part files
    folder.mkdir()
    con = duckdb.connect(str(warehouse), read_only=True)
    for part, half in enumerate(("<", ">=")):  # the median system is split between the two files
        con.execute(f"COPY (SELECT model, doc, genre FROM runs WHERE rowid {half}"
                    f" (SELECT count(*) / 2 FROM runs)) TO '{folder / f'part-{part}.parquet'}' (FORMAT parquet)")
    con.close()
    canonical = data_dir / "canonical"
    args = ["evaluate", "--taxonomy", str(canonical / "taxonomy.tsv"), "--truth", str(canonical / "truth_b.tsv"),
            "--pred", str(folder), "--instance-col", "doc", "--label-col", "genre", "--system-col", "model",
            "--metrics", "hp,hr,hf,hamming_loss", "--format", "csv"]
    assert main(args) == 0
    got = csv_rows(capsys.readouterr().out)
    want = {k: v for k, v in file_reference(data_dir).items() if k[1] in (
        "hierarchical_precision", "hierarchical_recall", "hierarchical_f1", "hamming_loss")}
    assert_same_values(got, want)
    # the folder under a name without the suffix (Spark's df.write.parquet("runs")): the same table
    folder.rename(tmp_path / "runs")
    assert main([*args[:6], str(tmp_path / "runs"), *args[7:]]) == 0
    assert_same_values(csv_rows(capsys.readouterr().out), want)


# ---------------------------------------------------------------------- bad input, no side effects
def test_bad_label_in_a_table_names_table_column_value_and_row_and_leaves_the_file(tmp_path):
    path = hand_file(tmp_path / "user.duckdb")
    con = duckdb.connect(str(path))
    con.execute(f"INSERT INTO {quote(WEIRD_TABLE)} VALUES ('M2', 'i3', 'zebra')")
    con.execute("INSERT INTO truth VALUES ('i3', 'b')")
    con.close()
    before = digest(path)
    ref = f"duckdb:{path}::"
    done = subprocess.run(
        [sys.executable, "-m", "hiersql", "evaluate", "--taxonomy", ref + "tax", "--truth", ref + "truth",
         "--pred", ref + WEIRD_TABLE, "--instance-col", WEIRD["instance"], "--label-col", WEIRD["label"],
         "--system-col", WEIRD["system"]],
        capture_output=True, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr == (f"hiersql: error: {ref}{WEIRD_TABLE}, column {WEIRD['label']!r},"
                           f" {WEIRD['instance']}='i3', {WEIRD['system']}='M2': label not in the taxonomy:"
                           " 'zebra'\n")
    assert digest(path) == before
    # --unknown ignore drops the row and says how many
    with pytest.warns(DataWarning, match=r"MODEL Name='M2'\): ignored 1 label\(s\) not in the taxonomy"):
        ev = Evaluator(Taxonomy.from_table(ref + "tax")).add_truth(ref + "truth", **weird_cols())
        ev.add_predictions(None, ref + WEIRD_TABLE, system_col=WEIRD["system"], unknown="ignore",
                           **weird_cols())
    assert digest(path) == before


@pytest.mark.parametrize("flag", ["--taxonomy", "--pred"])
def test_db_may_not_be_a_file_a_source_reads(tmp_path, monkeypatch, capsys, flag):
    # --db receives hiersql's tables and results: the user's warehouse file is refused before it is opened
    monkeypatch.chdir(tmp_path)
    path = hand_file(tmp_path / "w.duckdb")
    before = digest(path)
    sources = {"--taxonomy": "duckdb:w.duckdb::tax", "--truth": "duckdb:w.duckdb::truth",
               "--pred": f"duckdb:w.duckdb::{WEIRD_TABLE}"}
    if flag == "--pred":  # the taxonomy and truth from a copy: the clash is found on the predictions
        shutil.copy(path, tmp_path / "copy.duckdb")
        sources |= {"--taxonomy": "duckdb:copy.duckdb::tax", "--truth": "duckdb:copy.duckdb::truth"}
    args = [x for kv in sources.items() for x in kv]
    assert main(["evaluate", *args, "--instance-col", WEIRD["instance"], "--label-col", WEIRD["label"],
                 "--system-col", WEIRD["system"], "--db", str(path)]) == 2
    assert capsys.readouterr().err == (f"hiersql: error: --db: is the DuckDB file that {flag} reads; give hiersql"
                                       f" a file of its own: '{path}'\n")
    assert digest(path) == before


@pytest.mark.parametrize("kind", ["parquet", "csv", "sql"])
def test_db_with_a_truth_table_read_by_duckdb(tmp_path, capsys, kind):
    """--db (a new file) with the truth from a Parquet file, a CSV file with a header or a query: the hand
    example's values, as without --db (the store's first query on the file was left unfinished, and reading
    the CSV or Parquet truth then failed)."""
    (tmp_path / "tax.tsv").write_text("".join(f"{p}\t{c}\n" for p, c in HAND_EDGES))
    (tmp_path / "runs.csv").write_text("model,doc,genre\n" + "".join(f"{m},{i},{lab}\n" for m, i, lab in HAND_PREDS))
    pd.DataFrame(HAND_TRUTH, columns=["doc", "genre"]).to_parquet(tmp_path / "gold.parquet", index=False)
    (tmp_path / "gold.csv").write_text("doc,genre\n" + "".join(f"{i},{lab}\n" for i, lab in HAND_TRUTH))
    truth = {"parquet": str(tmp_path / "gold.parquet"), "csv": str(tmp_path / "gold.csv"),
             "sql": f"sql:SELECT doc, genre FROM read_parquet('{tmp_path / 'gold.parquet'}')"}[kind]
    assert main(["evaluate", "--taxonomy", str(tmp_path / "tax.tsv"), "--truth", truth, "--pred",
                 str(tmp_path / "runs.csv"), "--instance-col", "doc", "--label-col", "genre", "--system-col",
                 "model", "--metrics", "hp,hr", "--average", "micro", "--format", "csv", "--db",
                 str(tmp_path / "r.duckdb")]) == 0
    got = csv_rows(capsys.readouterr().out)
    assert {(k[0], k[1]): v for k, v in got.items()} == HAND_VALUES


def test_a_label_format_no_source_is_read_in_is_refused(tmp_path, capsys):
    """--labels-format names the format of text files (and of a wide CSV file): with Parquet files only it was
    silently unused; with a text truth in that format beside Parquet predictions it applies (the hand
    example's values)."""
    (tmp_path / "tax.tsv").write_text("".join(f"{p}\t{c}\n" for p, c in HAND_EDGES))
    pd.DataFrame(HAND_TRUTH, columns=["instance_id", "label"]).to_parquet(tmp_path / "gold.parquet", index=False)
    lines = [(system, instance.lstrip("i"), label) for system, instance, label in HAND_PREDS]  # i1 is line 1
    pd.DataFrame(lines, columns=["system", "instance_id", "label"]).to_parquet(tmp_path / "runs.parquet", index=False)
    args = ["evaluate", "--taxonomy", str(tmp_path / "tax.tsv"), "--pred", str(tmp_path / "runs.parquet"),
            "--metrics", "hp,hr", "--average", "micro", "--format", "csv", "--labels-format", "lines"]
    assert main([*args, "--truth", str(tmp_path / "gold.parquet")]) == 2
    assert capsys.readouterr().err == (
        "hiersql: error: --labels-format: names the format of label text files (and of a wide CSV file), and every"
        " label source is a table, read by its columns: 'lines'\n")
    assert HAND_TRUTH == [("i1", "a1"), ("i2", "b")]
    (tmp_path / "gold.txt").write_text("a1\nb\n")  # lines: instance i is line i
    assert main([*args, "--truth", str(tmp_path / "gold.txt")]) == 0
    got = csv_rows(capsys.readouterr().out)
    assert {(k[0], k[1]): v for k, v in got.items()} == HAND_VALUES


def hand_evaluate(folder: Path) -> list[str]:
    """``hiersql evaluate`` of the hand example's taxonomy and truth, written as files into ``folder``, and a
    system that predicts one label."""
    (folder / "tax.tsv").write_text("".join(f"{p}\t{c}\n" for p, c in HAND_EDGES))
    (folder / "truth.tsv").write_text("".join(f"{i}\t{lab}\n" for i, lab in HAND_TRUTH))
    (folder / "m.tsv").write_text("i1\ta1\n")
    return ["evaluate", "--taxonomy", str(folder / "tax.tsv"), "--truth", str(folder / "truth.tsv"), "--pred",
            str(folder / "m.tsv")]


def test_db_with_a_table_of_hiersqls_name_that_is_the_users_is_refused(tmp_path, capsys):
    """A database given to hiersql that holds a table named as one of hiersql's (``truth``) with other columns:
    exit 2 naming the file and the table, the user's rows as they were (they were deleted and replaced);
    in Python, an InputError from ``Evaluator(con=...)``."""
    path = hand_file(tmp_path / "user.duckdb")
    before = digest(path)
    assert main([*hand_evaluate(tmp_path), "--db", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"hiersql: error: {path}: has a table 'truth' that is not hiersql's (its columns {WEIRD['instance']},"
        f" {WEIRD['label']}; hiersql's instance_id, label, rank): give hiersql a database of its own: 'truth'\n")
    assert digest(path) == before
    con = duckdb.connect(str(path))
    try:
        with pytest.raises(InputError, match="con: has a table 'truth' that is not hiersql's"):
            Evaluator(Taxonomy.from_edges(HAND_EDGES), con=con)
        assert sorted(con.execute("SELECT * FROM truth").fetchall()) == sorted(HAND_TRUTH)
    finally:
        con.close()


def test_db_with_a_users_table_named_as_hiersqls_but_for_case_is_refused(tmp_path, capsys):
    """DuckDB's names ignore case: the user's ``Results`` is the table hiersql's ``results`` would be written
    into (CREATE TABLE IF NOT EXISTS finds it): exit 2 naming it as the user wrote it, the file as it was."""
    path = tmp_path / "user.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute('CREATE TABLE "Results" (score DOUBLE)')
        con.execute('INSERT INTO "Results" VALUES (0.5)')
    before = digest(path)
    assert main([*hand_evaluate(tmp_path), "--metrics", "hp", "--db", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"hiersql: error: {path}: has a table 'Results' that is not hiersql's (its columns score;")
    assert err.endswith(": give hiersql a database of its own: 'Results'\n") and err.count("\n") == 1
    assert digest(path) == before


@pytest.mark.parametrize("table", ["instances (instance_id VARCHAR)", "edges (parent VARCHAR, child VARCHAR, weight"
                                   " DOUBLE)"])
def test_db_with_a_users_table_of_hiersqls_name_and_columns_is_refused(tmp_path, capsys, table):
    """A user's table that has one of hiersql's names and, by chance, its columns (tu s24-warehouse finding 2:
    its rows were replaced without a word): refused as hiersql's tables never come alone (hiersql makes them
    all at once), the file as it was; in Python, from ``Evaluator(con=...)``; a file hiersql made is used
    again."""
    path = tmp_path / "user.duckdb"
    name = table.split()[0]
    with duckdb.connect(str(path)) as con:
        con.execute(f"CREATE TABLE {table}")
        con.execute(f"INSERT INTO {name} SELECT * FROM (VALUES ({', '.join(['NULL'] * (table.count(',') + 1))}))")
        con.execute(f"UPDATE {name} SET {table.split('(')[1].split()[0]} = 'keep me'")
    before = digest(path)
    args = [*hand_evaluate(tmp_path), "--metrics", "hp", "--db"]
    assert main([*args, str(path)]) == 2
    assert capsys.readouterr().err == (
        f"hiersql: error: {path}: has a table {name!r} of one of hiersql's names but not hiersql's other tables"
        f" (no 'closure'), so not made by hiersql: give hiersql a database of its own: {name!r}\n")
    assert digest(path) == before
    con = duckdb.connect(str(path))
    try:
        with pytest.raises(InputError, match=f"con: has a table {name!r} of one of hiersql's names"):
            Evaluator(Taxonomy.from_edges(HAND_EDGES), con=con)
        assert con.execute(f"SELECT * FROM {name}").fetchall()[0][0] == "keep me"
    finally:
        con.close()
    own = tmp_path / "own.duckdb"  # made by hiersql: written again, and again
    assert main([*args, str(own)]) == 0 and main([*args, str(own)]) == 0


def test_a_failed_run_creates_nothing_in_the_users_file(tmp_path):
    """The user's file already has a table named ``truth``; a failed and a good run leave it as it was."""
    path = hand_file(tmp_path / "user.duckdb")
    before = digest(path)
    ref = f"duckdb:{path}::"
    ev = Evaluator(Taxonomy.from_table(ref + "tax")).add_truth(ref + "truth", **weird_cols())
    with pytest.raises(InputError, match="predicted instance has no truth"):
        ev.add_predictions(None, "sql:SELECT 'M3' AS s, 'i9' AS i, 'a' AS l", system_col="s", instance_col="i",
                           label_col="l")
    ev.add_predictions(None, ref + WEIRD_TABLE, system_col=WEIRD["system"], **weird_cols())
    assert hand_values(ev) == pytest.approx(HAND_VALUES)
    assert digest(path) == before
    con = duckdb.connect(str(path), read_only=True)
    assert sorted(r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()) == sorted(
        ["tax", "truth", WEIRD_TABLE])


@pytest.mark.parametrize("spelling", ["plain", "quoted", "schema"])
def test_injection_shaped_names_are_only_names(tmp_path, spelling):
    path = hand_file(tmp_path / "user.duckdb")
    table = {"plain": WEIRD_TABLE, "quoted": '"' + WEIRD_TABLE.replace('"', '""') + '"',
             "schema": 'main."' + WEIRD_TABLE.replace('"', '""') + '"'}[spelling]
    assert split_name(table, "t") == ((None if spelling != "schema" else "main"), WEIRD_TABLE)
    ref = f"duckdb:{path}::"
    ev = Evaluator(Taxonomy.from_table(ref + "tax")).add_truth(ref + "truth", **weird_cols())
    ev.add_predictions(None, ref + table, system_col=WEIRD["system"], **weird_cols())
    assert hand_values(ev) == pytest.approx(HAND_VALUES)
    con = duckdb.connect(str(path), read_only=True)
    assert con.execute("SELECT count(*) FROM truth").fetchall() == [(2,)]  # the "DROP TABLE" was a name


def test_a_table_with_a_system_column_given_a_name_is_an_error(tmp_path):
    path = hand_file(tmp_path / "user.duckdb")
    ref = f"duckdb:{path}::"
    ev = Evaluator(Taxonomy.from_table(ref + "tax")).add_truth(ref + "truth", **weird_cols())
    with pytest.raises(InputError, match=r"system column \('MODEL Name', 2 system\(s\)\)"):
        ev.add_predictions("mine", ref + WEIRD_TABLE, system_col=WEIRD["system"], **weird_cols())


def run_cli(args: list[str], capsys) -> tuple[int, str]:
    code = main(args)
    return code, capsys.readouterr().err


@pytest.mark.parametrize(("setup", "message"), [
    ("CREATE TABLE p AS SELECT 'M' AS model, 1.5::DOUBLE AS doc, 'a' AS genre",
     "column 'doc' (instance) has type DOUBLE; expected text or integer"),
    ("CREATE TABLE p AS SELECT 'M' AS model, 'i1' AS doc, NULL::VARCHAR AS genre",
     "p, column 'genre', doc='i1', model='M': missing instance_id or label (empty, None or NaN)"),
    ("CREATE TABLE p AS SELECT 'M' AS model, 'i1' AS doc, DATE '2019-08-01' AS genre",
     "column 'genre' (label) has type DATE; expected text or integer"),
    ("CREATE TABLE p AS SELECT * FROM (VALUES ('M', 'i1', 'a'), ('M', NULL, 'b')) t(model, doc, genre)",
     "p, column 'doc', genre='b', model='M': missing instance_id or label (empty, None or NaN)"),
    ("CREATE TABLE p AS SELECT NULL::VARCHAR AS model, 'i1' AS doc, 'a' AS genre",
     "p, column 'model', doc='i1': missing system (NULL or empty)"),
    ("CREATE TABLE p AS SELECT 'M' AS model, 'i7' AS doc, 'a' AS genre",
     "p, column 'doc', doc='i7', model='M': predicted instance has no truth: 'i7'"),
    # two bad rows: the least by instance and label is named, not the first stored
    ("CREATE TABLE p AS SELECT * FROM (VALUES ('M', 'i1', 'zebra'), ('M', 'i1', 'yak')) t(model, doc, genre)",
     "p, column 'genre', doc='i1', model='M': label not in the taxonomy: 'yak'"),
    ("CREATE TABLE p AS SELECT * FROM (VALUES ('M', 'i1', 'a'), ('', 'i7', 'a'), (NULL, 'i1', 'b'))"
     " t(model, doc, genre)", "p, column 'model', doc='i1': missing system (NULL or empty)"),
    ("CREATE TABLE p AS SELECT * FROM (VALUES ('', 'i1', 'b'), (NULL, 'i1', 'b'), ('M', 'i1', 'a'))"
     " t(model, doc, genre)", "p, column 'model', doc='i1': missing system (NULL or empty)"),
    ("CREATE TABLE p AS SELECT * FROM (VALUES (NULL, 'i1', 'b'), ('', 'i1', 'b'), ('M', 'i1', 'a'))"
     " t(model, doc, genre)", "p, column 'model', doc='i1': missing system (NULL or empty)"),
    ("CREATE TABLE p AS SELECT * FROM (VALUES (NULL, 'i2', 'b'), ('', 'i1', 'b'), ('M', 'i1', 'a'))"
     " t(model, doc, genre)", "p, column 'model', doc='i1': missing system (NULL or empty): ''"),
    ("CREATE TABLE p AS SELECT 'M' AS model, 'i1' AS doc",
     "no column 'genre' for the label; the table has ['model', 'doc']"),
    ("CREATE TABLE q (x INTEGER)", "no such table in the DuckDB file"),
    ("CREATE TABLE p (model VARCHAR, doc VARCHAR, genre VARCHAR)", "p: the table has no rows, so no system"),
])
def test_bad_tables_exit_2_with_one_line(tmp_path, capsys, setup, message):
    path = tmp_path / "user.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE tax AS SELECT * FROM (VALUES ('r', 'a'), ('r', 'b')) t(parent, child)")
    con.execute("CREATE TABLE gold AS SELECT * FROM (VALUES ('i1', 'a')) t(doc, genre)")
    con.execute(setup)
    con.close()
    before = digest(path)
    ref = f"duckdb:{path}::"
    code, err = run_cli(["evaluate", "--taxonomy", ref + "tax", "--truth", ref + "gold", "--pred", ref + "p",
                         "--instance-col", "doc", "--label-col", "genre", "--system-col", "model"], capsys)
    assert code == 2
    assert err.count("\n") == 1 and message in err, err
    assert digest(path) == before


def test_duplicates_collapse_with_a_warning_and_integer_ids_are_text(tmp_path):
    path = tmp_path / "user.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE gold AS SELECT * FROM (VALUES (1, 'a1'), (2, 'b')) t(doc, genre)")
    con.execute("CREATE TABLE p AS SELECT * FROM (VALUES ('M1', 1, 'a1'), ('M1', 1, 'a1'), ('M1', 2, 'a'),"
                " ('M2', 1, 'a'), ('M2', 2, 'b')) t(model, doc, genre)")
    con.close()
    ev = Evaluator(Taxonomy.from_edges(HAND_EDGES)).add_truth(f"duckdb:{path}::gold", **LABEL_COLS)
    with pytest.warns(DataWarning, match=r"p \(model='M1'\): 1 duplicate"):
        ev.add_predictions(None, f"duckdb:{path}::p", system_col="model", **LABEL_COLS)
    assert hand_values(ev) == pytest.approx(HAND_VALUES)
    assert ev.con.execute("SELECT DISTINCT instance_id FROM truth ORDER BY 1").fetchall() == [("1",), ("2",)]


# ---------------------------------------------------------------------- other table sources
def hand_frame(columns: dict[str, str] = WEIRD) -> pd.DataFrame:
    return pd.DataFrame(HAND_PREDS, columns=[columns["system"], columns["instance"], columns["label"]])


def hand_evaluator() -> Evaluator:
    return Evaluator(Taxonomy.from_edges(HAND_EDGES)).add_truth(
        {"instance_id": [i for i, _ in HAND_TRUTH], "label": [lab for _, lab in HAND_TRUTH]})


def test_dataframe_with_a_system_column_is_one_system_per_value(tmp_path):
    """A column named ``system`` is found by its name, in a DataFrame and in a Parquet file (both were once
    scored as one system)."""
    df = pd.DataFrame(HAND_PREDS, columns=["system", "instance_id", "label"])
    df.to_parquet(tmp_path / "runs.parquet", index=False)
    for source in (df, tmp_path / "runs.parquet"):
        ev = hand_evaluator().add_predictions(None, source)
        assert ev.systems == ["M1", "M2"]
        assert hand_values(ev) == pytest.approx(HAND_VALUES)
    # given one name, the table of two systems is an error, not one merged system
    with pytest.raises(InputError, match="whose values name the systems"):
        hand_evaluator().add_predictions("sysA", df)



def test_a_system_name_given_to_a_table_with_a_system_column_takes_its_rows(tmp_path):
    """NAME=TABLE with a system column is the rows of system NAME (how a batch job reads one system of a long
    table): the values of that system alone; a file given for several systems is read once."""
    df = pd.DataFrame(HAND_PREDS, columns=["system", "instance_id", "label"])
    df.to_parquet(tmp_path / "runs.parquet", index=False)
    for source in (df, tmp_path / "runs.parquet"):
        ev = hand_evaluator().add_predictions("M2", source)
        assert ev.systems == ["M2"]
        assert hand_values(ev) == pytest.approx({k: v for k, v in HAND_VALUES.items() if k[0] == "M2"})
    ev = hand_evaluator().add_predictions_many([("M2", tmp_path / "runs.parquet"), ("M1", tmp_path / "runs.parquet")])
    assert ev.systems == ["M1", "M2"] and hand_values(ev) == pytest.approx(HAND_VALUES)


@pytest.mark.parametrize("kind", ["dataframe", "arrow", "relation", "parquet", "csv", "sql", "duckdb-query"])
def test_every_table_source_with_the_users_names(tmp_path, kind):
    df = hand_frame()
    cols = {"system_col": WEIRD["system"], **weird_cols()}
    if kind == "dataframe":
        source = df
    elif kind == "arrow":
        source = pa.Table.from_pandas(df)
    elif kind == "relation":
        source = duckdb.connect().from_df(df)  # a relation of another connection
    elif kind in ("parquet", "csv"):
        source = tmp_path / f"runs.{kind}"
        getattr(df, f"to_{kind}")(source, index=False)
    elif kind == "sql":
        df.to_parquet(tmp_path / "runs.parquet", index=False)
        source = f"sql:SELECT * FROM read_parquet('{tmp_path / 'runs.parquet'}') WHERE {quote(WEIRD['label'])} <> ''"
    else:
        path = hand_file(tmp_path / "user.duckdb")
        source = (f"duckdb:{path}::SELECT * FROM {quote(WEIRD_TABLE)} WHERE {quote(WEIRD['system'])}"
                  " IN ('M1', 'M2')")
    ev = hand_evaluator().add_predictions(None, source, **cols)
    assert hand_values(ev) == pytest.approx(HAND_VALUES)


def test_a_view_that_cannot_be_read_is_not_called_missing(tmp_path):
    """A view whose table was dropped exists: "cannot read the table or view", not "no such table" (tu
    s24-warehouse finding 9)."""
    path = tmp_path / "v.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE runs0 AS SELECT 'M1' AS system, 'i1' AS instance_id, 'a1' AS label")
        con.execute("CREATE VIEW runs AS SELECT * FROM runs0")
        con.execute("DROP TABLE runs0")
    for table, said in (("runs", "cannot read the table or view in the DuckDB file (Catalog Error: Table with"
                                 " name runs0 does not exist"),
                        ("nosuch", "no such table in the DuckDB file (Catalog Error: Table with name nosuch")):
        with pytest.raises(InputError) as caught:
            hand_evaluator().add_predictions(None, f"duckdb:{path}::{table}")
        assert str(caught.value).startswith(f"duckdb:{path}::{table}: {said}"), str(caught.value)


def test_a_query_in_parentheses_is_a_query(tmp_path):
    """``duckdb:PATH::(SELECT ...)`` was read as a table named '(SELECT ...)' ("no such table": tu s24-warehouse
    finding 9); so is one with an ORDER BY inside the parentheses."""
    path = hand_file(tmp_path / "user.duckdb")
    system = quote(WEIRD["system"])
    cols = {"instance_col": WEIRD["instance"], "label_col": WEIRD["label"], "system_col": WEIRD["system"]}
    for query in (f"(SELECT * FROM {quote(WEIRD_TABLE)})", f"(SELECT * FROM {quote(WEIRD_TABLE)} ORDER BY {system})"):
        ev = hand_evaluator().add_predictions(None, f"duckdb:{path}::{query}", **cols)
        assert hand_values(ev) == pytest.approx(HAND_VALUES)


def test_a_query_source_is_one_select(tmp_path):
    path = hand_file(tmp_path / "user.duckdb")
    before = digest(path)
    for query in (f"duckdb:{path}::SELECT 1 AS x; DROP TABLE tax", "sql:DELETE FROM truth"):
        with pytest.raises(InputError, match="one SELECT statement"):
            hand_evaluator().add_predictions(None, query)
    assert digest(path) == before


def test_without_a_system_column_the_system_is_the_name_or_the_stem(tmp_path):
    df = hand_frame({"system": "model", "instance": "instance_id", "label": "label"})
    m1 = df[df.model == "M1"].drop(columns="model")
    m1.to_parquet(tmp_path / "M1.parquet", index=False)
    ev = hand_evaluator().add_predictions_many([(None, tmp_path / "M1.parquet"),
                                                ("M2", df[df.model == "M2"].drop(columns="model"))])
    assert ev.systems == ["M1", "M2"]
    assert hand_values(ev) == pytest.approx(HAND_VALUES)
    with pytest.raises(InputError, match="system name given twice"):
        hand_evaluator().add_predictions_many([(None, df.rename(columns={"model": "system"})), ("M1", m1)])
    with pytest.raises(InputError, match="a system name is needed"):
        hand_evaluator().add_predictions(None, m1)


def test_taxonomy_from_a_table_with_integer_names_and_bad_types():
    df = pd.DataFrame({"up": [1, 1, 2], "down": [2, 3, 4]})
    tax = Taxonomy.from_table(df, parent="up", child="down")
    assert tax.root == "1" and tax.is_leaf("4")
    with pytest.raises(InputError, match=r"column 'up' \(parent\) has type DOUBLE"):
        Taxonomy.from_table(df.astype({"up": float}), parent="up", child="down")
    with pytest.raises(InputError, match="no column 'parent' for the parent"):
        Taxonomy.from_table(df)


def test_a_taxonomy_tables_bad_row_is_named_by_its_edge_not_a_row_number(tmp_path, capsys):
    """A database table's rows have no numbers (an UPDATE moves them): a NULL parent is named by the row's
    child, a cycle by its edges, with no ':16' (tu s24-warehouse finding 7); a DataFrame's row keeps its
    number."""
    path = tmp_path / "t.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE tax (parent VARCHAR, child VARCHAR)")
        con.executemany("INSERT INTO tax VALUES (?, ?)", [*HAND_EDGES, (None, "r")])
        con.execute("CREATE TABLE looped AS SELECT * FROM tax WHERE parent IS NOT NULL")
        con.execute("INSERT INTO looped VALUES ('a1', 'r')")
    for table, said in (("tax", f"duckdb:{path}::tax, column 'parent', child='r': missing value (NULL or NaN)"),
                        ("looped", f"duckdb:{path}::looped: taxonomy has a cycle: 'a -> a1 -> r -> a'")):
        with pytest.raises(InputError) as caught:
            Taxonomy.from_table(f"duckdb:{path}::{table}")
        assert str(caught.value) == said
    with pytest.raises(InputError) as caught:
        Taxonomy.from_table(pd.DataFrame([*HAND_EDGES, (None, "r")], columns=["parent", "child"]))
    assert str(caught.value) == "<DataFrame>:4: missing value (None/NaN) in column 'parent'"


def test_an_empty_system_name_is_said_as_such(tmp_path, capsys):
    """``--pred =runs.tsv`` (and ``predictions = "=runs.tsv"`` in a job file) said "file not found" of
    '=runs.tsv' (tu s24-jobs finding 7); a file whose name starts with '=' is still read."""
    from hiersql.inputs.arguments import parse_preds

    (tmp_path / "runs.tsv").write_text("i1\ta1\n")
    with pytest.raises(InputError) as caught:
        parse_preds(["=runs.tsv"], base=tmp_path)
    assert str(caught.value) == "--pred: empty system name (NAME=SOURCE): '=runs.tsv'"
    (tmp_path / "=odd.tsv").write_text("i1\ta1\n")
    assert parse_preds(["=odd.tsv"], base=tmp_path) == [("=odd", tmp_path / "=odd.tsv")]


def test_a_uri_of_another_file_system_is_kept_as_given(tmp_path):
    """``--pred`` (and job files) keep a URI (``s3a://``, ``hdfs://``, ``file://``) as text for Spark to read: a
    path would turn ``s3a://b/x`` into ``s3a:/b/x``, and a job file's folder would be put before it."""
    from hiersql.inputs.arguments import parse_preds
    from hiersql.inputs.sources import is_uri

    assert parse_preds(["a=s3a://b/runs.parquet", "hdfs://nn:8020/runs/*.parquet", "c=file:///r.parquet"],
                       base=tmp_path) == [("a", "s3a://b/runs.parquet"), (None, "hdfs://nn:8020/runs/*.parquet"),
                                          ("c", "file:///r.parquet")]
    assert parse_preds(["d=runs.parquet"], base=tmp_path) == [("d", tmp_path / "runs.parquet")]
    assert is_uri("s3a://b/x") and not is_uri("runs/x.parquet") and not is_uri("a=s3a://b") and not is_uri(Path("x"))
