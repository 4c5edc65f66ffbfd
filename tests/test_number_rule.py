"""One rule for a score or rank written as text (``hiersql.inputs.rules.NUMBER``), whatever reads it: the store's DuckDB
readers (a file, a Parquet column of text), PostgreSQL reading its own tables in place, Spark reading a DataFrame,
and the SQL door (the macros, the printed SQL). Each SQL engine casts other spellings its own way (DuckDB reads
``1_000`` as 1000, Spark's cast is Java's) and PostgreSQL raised on a number out of a double's range, where DuckDB
gave an infinity or zero: the same table was a number through one door, an error through another, an internal error
through a third."""

from __future__ import annotations

import math

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hiersql.cli import main
from hiersql.errors import DataWarning, InputError
from hiersql.inputs import rules

# spellings that are numbers, with their values by hand
NUMBERS = {"1": 1.0, " 1.5 ": 1.5, "\t2\n": 2.0, "+.5": 0.5, "5.": 5.0, "1E+2": 100.0, "-Infinity": -math.inf,
           "inf": math.inf, "nan": math.nan, "1e-310": 1e-310, "0e500": 0.0, "-0": -0.0}
# spellings that are not: digit separators, suffixes, hexadecimal, a signed nan, a comma, and values out of a
# double's range (a cast gives an infinity or zero, or raises), one of them written without an exponent
NOT_NUMBERS = ["1_000", "1d", "0x10", "-nan", "1,5", "1e400", "-1e400", "1e-400", "1.5e+0400", "9" * 400]


def test_the_rule_in_duckdb_by_hand():
    con = duckdb.connect()
    for text, want in NUMBERS.items():
        got = con.execute(f"SELECT {rules.number_sql('CAST($t AS VARCHAR)')}", {"t": text}).fetchall()[0][0]
        assert (math.isnan(got) if math.isnan(want) else got == want and math.copysign(1, got) ==
                math.copysign(1, want)), (text, got)
    for text in NOT_NUMBERS:
        assert con.execute(f"SELECT {rules.number_sql('$t')}", {"t": text}).fetchall()[0][0] is None, text


def files(tmp_path, score: str) -> list[str]:
    """The hand case as files: i2's true label ``b1`` scored ``score``, ``a1`` scored 0.2 (top-1 by score)."""
    (tmp_path / "tax.tsv").write_text("r\ta\nr\tb\na\ta1\nb\tb1\n")
    (tmp_path / "truth.tsv").write_text("i1\ta1\ni2\tb1\n")
    (tmp_path / "p.tsv").write_text(f"i1\ta1\t0.5\ni2\tb1\t{score}\ni2\ta1\t0.2\n")
    return ["--taxonomy", str(tmp_path / "tax.tsv"), "--truth", str(tmp_path / "truth.tsv")]


def run(capsys, args: list[str]) -> tuple[int, str, str]:
    code = main(["evaluate", *args, "--metrics", "top_k_accuracy", "--k", "1", "--format", "csv"])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("text", ["1_000", "1e400", "1e-400", "0x10"])
def test_a_file_and_a_parquet_text_column_refuse_what_the_rule_refuses(tmp_path, capsys, text):
    args = files(tmp_path, text)
    code, _, err = run(capsys, [*args, "--pred", f"m={tmp_path / 'p.tsv'}"])
    assert code == 2 and err == f"hiersql: error: {tmp_path / 'p.tsv'}:2: score is not a number: {text!r}\n"
    pq.write_table(pa.table({"doc": ["i1", "i2"], "genre": ["a1", "b1"], "score": ["0.5", text]}),
                   tmp_path / "p.parquet")
    code, _, err = run(capsys, [*args, "--pred", f"m={tmp_path / 'p.parquet'}", "--instance-col", "doc",
                                "--label-col", "genre", "--score-col", "score"])
    assert code == 2 and err == (f"hiersql: error: {tmp_path / 'p.parquet'}, column 'score', doc='i2': score is not"
                                 f" a number: {text!r}\n")  # Parquet has no row order: a row is named by its key


def in_place_and_copied(pg_dsn, capsys, column: str, text: str, kind: str = "text") -> tuple[tuple, tuple]:
    """The hand case as tables of a PostgreSQL database, i2's ``b1`` given ``text`` in the column of ``column``
    (``score`` or ``rank``) of PostgreSQL type ``kind``: the run of the store (copied into DuckDB), then the run in
    place."""
    psycopg = pytest.importorskip("psycopg")

    from tests.test_sources_postgres import create, uri

    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS hiersql_numbers")
        admin.execute("CREATE DATABASE hiersql_numbers")
    params = psycopg.conninfo.conninfo_to_dict(pg_dsn) | {"dbname": "hiersql_numbers"}
    other = "0.5" if column == "score" else "1"
    with psycopg.connect(**params) as con:
        create(con, "tax", ["parent", "child"], [("r", "a"), ("r", "b"), ("a", "a1"), ("b", "b1")])
        create(con, "truth", ["doc", "genre"], [("i1", "a1"), ("i2", "b1")])
        create(con, "p", ["doc", "genre", "v"], [("i1", "a1", other), ("i2", "b1", text), ("i2", "a1", "0.2")])
        con.execute(f"ALTER TABLE p ALTER COLUMN v TYPE {kind} USING CAST(v AS {kind})")
    base = uri(pg_dsn, "hiersql_numbers")
    args = ["--taxonomy", f"{base}::tax", "--truth", f"{base}::truth", "--pred", f"m={base}::p", "--instance-col",
            "doc", "--label-col", "genre", f"--{column}-col", "v"]
    return run(capsys, args), run(capsys, [*args, "--engine", "postgres", "--postgres-url", base])


@pytest.mark.postgres
@pytest.mark.parametrize("text", [*NOT_NUMBERS, *(t for t in NUMBERS if t != "nan")])
def test_postgres_in_place_says_what_the_store_says(pg_dsn, capsys, text):
    """The same table read by the store (copied into DuckDB) and in place: the same exit, rows and message
    (top-1 accuracy follows the score: 1 where ``b1``'s beats 0.2)."""
    copied, in_place = in_place_and_copied(pg_dsn, capsys, "score", text)
    assert in_place == copied
    if text in NUMBERS:
        top_1 = 1.0 if NUMBERS[text] > 0.2 else 0.5
        assert copied[0] == 0 and copied[1].splitlines()[1] == f"m,top_k_accuracy,@1,{top_1}"
    else:
        assert copied[0] == 2 and copied[2].endswith(f"doc='i2': score is not a number: {text!r}\n"), copied[2]


@pytest.mark.postgres
@pytest.mark.parametrize("text", ["1e400", "-1e-400", "NaN", "0.9", "1e-300"])
def test_a_numeric_column_beyond_a_doubles_range_is_not_a_number(pg_dsn, capsys, text):
    """A PostgreSQL ``numeric`` score holds values beyond a double's range (its text has no exponent: 401 digits);
    in place, its cast to a double raised (an internal error) where the store read an infinity: now both read its
    text by the rule (refused out of range, as NaN), or the number (0.9 above 0.2, 1e-300 below)."""
    copied, in_place = in_place_and_copied(pg_dsn, capsys, "score", text, kind="numeric")
    assert in_place == copied
    if text in ("0.9", "1e-300"):
        assert copied[0] == 0 and copied[1].splitlines()[1] == f"m,top_k_accuracy,@1,{1.0 if text == '0.9' else 0.5}"
    else:
        assert copied[0] == 2 and ": score is not a number: '" in copied[2] and copied[2].count("\n") == 1, copied


@pytest.mark.postgres
@pytest.mark.parametrize("text", ["1e400", "1_000", "nan", "0.1"])
def test_a_rank_column_in_place_follows_the_same_rule(pg_dsn, capsys, text):
    """A rank written as text: the same rule, the same message (``nan``: a number, not a rank), or the ranks
    (0.1 ranks ``b1`` first, top-1 right)."""
    copied, in_place = in_place_and_copied(pg_dsn, capsys, "rank", text)
    assert in_place == copied
    if text == "0.1":
        assert copied[0] == 0 and copied[1].splitlines()[1] == "m,top_k_accuracy,@1,1.0", copied
    else:
        assert copied[0] == 2 and copied[2].endswith(f"doc='i2': rank is not a number: {text!r}\n"), copied[2]


@pytest.mark.spark
def test_spark_reads_a_dataframe_by_the_rule(spark):
    """Spark's statement of the rule (``rules.number_sql`` in Spark's SQL, what its reader casts with) reads each
    spelling as DuckDB's does, in one query; a Spark DataFrame's text score that is not a number is the store's
    one line (a suffixed spelling, and one beyond a double's range); the numbers load."""
    from tests.test_spark_sources import hand_load

    frame = spark.createDataFrame(pd.DataFrame({"t": [*NUMBERS, *NOT_NUMBERS]}))
    got = dict(map(tuple, frame.selectExpr("t", f"{rules.number_sql('t', 'spark')} AS v").collect()))
    for text, want in NUMBERS.items():
        value = got[text]
        assert (math.isnan(value) if math.isnan(want) else value == want and math.copysign(1, value) ==
                math.copysign(1, want)), (text, value)
    assert {text: got[text] for text in NOT_NUMBERS} == dict.fromkeys(NOT_NUMBERS)
    for text in ("1d", "1e400"):
        rows = pd.DataFrame([("M1", "i1", "a1", "0.5"), ("M1", "i2", "b", text)],
                            columns=["model", "doc", "genre", "score"])
        with pytest.raises(InputError) as info:
            hand_load(spark, rows, score_col="score")
        assert str(info.value) == (f"<Spark DataFrame>, column 'score', doc='i2', model='M1': score is not a number:"
                                   f" {text!r}")
    rows = pd.DataFrame([("M1", "i1", "a1", "0.5"), *(("M1", "i2", "b", t) for t in NUMBERS if t != "nan")],
                        columns=["model", "doc", "genre", "score"])
    with pytest.warns(DataWarning, match="10 duplicate"):  # i2's b, scored once per spelling
        hand_load(spark, rows, score_col="score").close()


# ------------------------------------------------------------------ the SQL door: the macros read the user's table
# The hand case in a user's DuckDB file, the score a text column: read under the user's column names (--truth,
# --predictions, --*-col: the input query) and under hiersql's (--table, with a rank column: the table itself;
# i2's two labels share rank 1, so their scores order them).
DOOR = {
    "columns": ("CREATE TABLE gold AS SELECT * FROM (VALUES ('i1', 'a1'), ('i2', 'b1')) t(doc, genre);"
                " CREATE TABLE runs (model VARCHAR, doc VARCHAR, genre VARCHAR, v VARCHAR);"
                " INSERT INTO runs VALUES ('m', 'i1', 'a1', '0.5'), ('m', 'i2', 'b1', '0.9'), ('m', 'i2', 'a1', '0.2')",
                ["--truth", "gold", "--predictions", "runs", "--instance-col", "doc", "--label-col", "genre",
                 "--system-col", "model", "--score-col", "v"]),
    "tables": ("CREATE TABLE gold AS SELECT * FROM (VALUES ('i1', 'a1', 1), ('i2', 'b1', 1))"
               " t(instance_id, label, rank);"
               " CREATE TABLE runs (system VARCHAR, instance_id VARCHAR, label VARCHAR, rank INTEGER, score VARCHAR);"
               " INSERT INTO runs VALUES ('m', 'i1', 'a1', 1, '0.5'), ('m', 'i2', 'b1', 1, '0.9'),"
               " ('m', 'i2', 'a1', 1, '0.2'); CREATE VIEW ids AS SELECT DISTINCT instance_id FROM gold;"
               " CREATE VIEW models AS SELECT DISTINCT system FROM runs",
               ["--table", "truth=gold", "--table", "predictions=runs", "--table", "instances=ids", "--table",
                "systems=models"]),
}


@pytest.fixture(scope="module", params=list(DOOR))
def door(request, tmp_path_factory):
    """A DuckDB file with the macros installed over the user's tables (the hand taxonomy loaded), i2's ``b1``
    scored 0.9; a test sets the score it needs (the macros read the tables when queried)."""
    tmp = tmp_path_factory.mktemp("door")
    (tmp / "tax.tsv").write_text("r\ta\nr\tb\na\ta1\nb\tb1\n")
    path = tmp / "user.duckdb"
    create, flags = DOOR[request.param]
    with duckdb.connect(str(path)) as con:
        con.execute(create)
    assert main(["install-macros", "--db", str(path), "--taxonomy", str(tmp / "tax.tsv"), *flags]) == 0
    return request.param, path


# the score, instance and label columns of each kind of table
NAMES = {"columns": ("v", "doc", "genre"), "tables": ("score", "instance_id", "label")}


def _score(door, instance: str, label: str, text: str) -> None:
    kind, path = door
    score, doc, genre = NAMES[kind]
    with duckdb.connect(str(path)) as con:
        con.execute(f"UPDATE runs SET {score} = $text WHERE {doc} = $doc AND {genre} = $genre",
                    {"text": text, "doc": instance, "genre": label})


def _scored(door, text: str) -> object:
    """The macro's top-1 accuracy with i2's ``b1`` scored ``text``, or its error."""
    _score(door, "i2", "b1", text)
    with duckdb.connect(str(door[1])) as con:
        try:
            return con.execute("SELECT value FROM hiersql_severity(top_k := 1) WHERE metric = 'top_k_accuracy'"
                               ).fetchall()[0][0]
        except duckdb.InvalidInputException as exc:
            return str(exc).removeprefix("Invalid Input Error: ")


@pytest.mark.parametrize("text", [*NOT_NUMBERS, "abc", " ", "nan", *(t for t in NUMBERS if t != "nan")])
def test_the_macros_read_a_text_score_by_the_rule(door, capsys, text):
    """A score written as text, through the macros: the number the readers read (top-1 accuracy 1 where ``b1``'s
    score beats 0.2, by hand; a text comparison put ``'10'`` below ``'9'``), or one error naming the table, the row
    and the value where evaluate refuses the same table with the readers' message."""
    got = _scored(door, text)
    kind, path = door
    table = f"duckdb:{path}::runs"
    capsys.readouterr()
    code = main(["evaluate", "--taxonomy", str(path.parent / "tax.tsv"), "--truth", f"duckdb:{path}::gold",
                 "--pred", table, *(["--instance-col", "doc", "--label-col", "genre", "--system-col", "model",
                                     "--score-col", "v"] if kind == "columns" else []),
                 "--metrics", "top_k_accuracy", "--k", "1", "--format", "csv"])
    out, err = capsys.readouterr()
    if text in NUMBERS and text != "nan":
        want = 1.0 if NUMBERS[text] > 0.2 else 0.5
        assert code == 0 and out.splitlines()[1] == f"m,top_k_accuracy,@1,{want}" and got == want, (out, got)
    else:
        assert code == 2 and err.endswith(f"score is not a number: {text!r}\n"), err
        assert got == (f"hiersql: runs, column 'score', system='m', instance_id='i2': score is not a number: {text!r}"
                       " (1 error(s) in all: SELECT * FROM hiersql_check())"), got


def test_a_score_column_of_text_ranks_ten_above_nine(door):
    """By hand: ``'10'`` against i2's ``a1`` at ``'9'``: b1 first, top-1 right for both instances (read as text,
    ``'9'`` sorts first and i2 is wrong: 0.5)."""
    _score(door, "i2", "a1", "9")
    try:
        assert _scored(door, "10") == 1.0
    finally:
        _score(door, "i2", "a1", "0.2")  # the module's tables as the other tests expect them


def _printed_top1_on_postgres(tmp_path, capsys, pg_dsn) -> list:
    """The rows of ``hiersql sql top_k_accuracy --k 1 --dialect postgres`` over the tables ``gold`` and ``runs``
    (hiersql's columns) of ``tmp_path/user.duckdb``, run by PostgreSQL after ``install-macros`` made the hand
    taxonomy and the lists of instances and systems in the file (a failure: ``duckdb.InvalidInputException``)."""
    from tests.test_sql_checks import _run_postgres

    path = tmp_path / "user.duckdb"
    (tmp_path / "tax.tsv").write_text("r\ta\nr\tb\na\ta1\nb\tb1\n")
    assert main(["install-macros", "--db", str(path), "--taxonomy", str(tmp_path / "tax.tsv")]) == 0
    with duckdb.connect(str(path)) as con:
        con.execute("INSERT INTO instances SELECT DISTINCT instance_id FROM gold")
        con.execute("INSERT INTO systems SELECT DISTINCT system, NULL FROM runs")
    capsys.readouterr()
    assert main(["sql", "top_k_accuracy", "--k", "1", "--dialect", "postgres", "--table", "truth=gold", "--table",
                 "predictions=runs"]) == 0
    return _run_postgres(pg_dsn, path, [capsys.readouterr().out])


@pytest.mark.postgres
@pytest.mark.parametrize("text", ["10", "1_000", "abc"])
def test_the_printed_postgres_sql_reads_a_text_score_by_the_rule(tmp_path, capsys, pg_dsn, text):
    """``hiersql sql top_k_accuracy --dialect postgres`` over the user's tables (hiersql's columns, the score a
    text column) run by PostgreSQL: ``b1`` at ``text`` against ``a1`` at ``'9'``, top-1 right for both instances
    (by hand), or the failed cast quoting the rule's message."""
    path = tmp_path / "user.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute(DOOR["tables"][0].replace("'0.9'", "$text").replace("'0.2'", "'9'").split("; CREATE VIEW")[0],
                    {"text": text})
    if text == "10":
        assert _printed_top1_on_postgres(tmp_path, capsys, pg_dsn) == [("m", "top_k_accuracy", "@1", 1.0)]
        return
    with pytest.raises(duckdb.InvalidInputException) as raised:
        _printed_top1_on_postgres(tmp_path, capsys, pg_dsn)
    assert (f"hiersql: runs, column 'score', system='m', instance_id='i2': score is not a number: {text!r}"
            in str(raised.value)), str(raised.value)


# The rank by the same rule: the hand case with i1's labels ranked by a text column (no scores: the severity
# measures rank score-less predictions by rank), a1 at '10' and b1 at '9', i2's b1 at '1'; under hiersql's names
# (--table: the table's own rank column) and under the user's (--rank-col).
RANKED = {
    "tables": ("CREATE TABLE runs (system VARCHAR, instance_id VARCHAR, label VARCHAR, rank VARCHAR, score DOUBLE)",
               ["--table", "truth=gold", "--table", "predictions=runs", "--table", "instances=ids", "--table",
                "systems=models"], []),
    "columns": ("CREATE TABLE runs (model VARCHAR, instance_id VARCHAR, label VARCHAR, rank VARCHAR, v DOUBLE)",
                ["--truth", "gold", "--predictions", "runs", "--system-col", "model", "--score-col", "v",
                 "--rank-col", "rank"], ["--system-col", "model", "--score-col", "v"]),
}


@pytest.fixture(scope="module", params=list(RANKED))
def ranked_door(request, tmp_path_factory):
    """A DuckDB file with the ranked hand case and the macros installed over it (the hand taxonomy loaded); its
    path and the column flags ``evaluate`` needs for the same table."""
    tmp = tmp_path_factory.mktemp("ranked")
    (tmp / "tax.tsv").write_text("r\ta\nr\tb\na\ta1\nb\tb1\n")
    path = tmp / "user.duckdb"
    create, flags, columns = RANKED[request.param]
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE gold AS SELECT * FROM (VALUES ('i1', 'a1', 1), ('i2', 'b1', 1))"
                    " t(instance_id, label, rank)")
        con.execute(create)
        con.execute("INSERT INTO runs VALUES ('m', 'i1', 'a1', '10', NULL), ('m', 'i1', 'b1', '9', NULL),"
                    " ('m', 'i2', 'b1', '1', NULL)")
        if request.param == "tables":  # the lists of instances and systems, which --table names too
            con.execute("CREATE VIEW ids AS SELECT DISTINCT instance_id FROM gold;"
                        " CREATE VIEW models AS SELECT DISTINCT system FROM runs")
    assert main(["install-macros", "--db", str(path), "--taxonomy", str(tmp / "tax.tsv"), *flags]) == 0
    return path, columns


def _ranked_top1(ranked_door, capsys, rank: str | None) -> tuple[object, int, str, str]:
    """The macro's top-1 accuracy (or its error) and ``evaluate --rank-col rank``'s exit, output and error over
    the same table, with i1's ``b1`` ranked ``rank``."""
    path, columns = ranked_door
    with duckdb.connect(str(path)) as con:
        con.execute("UPDATE runs SET rank = $rank WHERE instance_id = 'i1' AND label = 'b1'", {"rank": rank})
        try:
            got = con.execute("SELECT value FROM hiersql_severity(top_k := 1) WHERE metric = 'top_k_accuracy'"
                              ).fetchall()[0][0]
        except duckdb.InvalidInputException as exc:
            got = str(exc).removeprefix("Invalid Input Error: ")
    capsys.readouterr()
    code = main(["evaluate", "--taxonomy", str(path.parent / "tax.tsv"), "--truth", f"duckdb:{path}::gold",
                 "--pred", f"duckdb:{path}::runs", *columns, "--rank-col", "rank", "--metrics", "top_k_accuracy",
                 "--k", "1", "--format", "csv"])
    return got, code, *capsys.readouterr()


@pytest.mark.parametrize(("rank", "want"), [("9", 0.5), ("11", 1.0), (" 1e1 ", 1.0), ("10.5", 1.0), ("-1", 0.5)])
def test_the_macros_rank_by_the_number_of_a_text_rank(ranked_door, capsys, rank, want):
    """By hand: i1's ``b1`` ranked before ``a1`` at ``'10'`` puts a mistake first (top-1 0.5: i2 right); after it,
    ``a1`` is first (1.0); a tie (``1e1``) is broken by the label, ``a1`` first (1.0). Read as text, ``'9'`` sorted
    after ``'10'`` (1.0). ``evaluate --rank-col`` gives the same."""
    got, code, out, _ = _ranked_top1(ranked_door, capsys, rank)
    assert code == 0 and out.splitlines()[1] == f"m,top_k_accuracy,@1,{want}" and got == want, (out, got)


@pytest.mark.parametrize("rank", ["abc", "1_000", "inf", "-Infinity", "nan", "", "1e400", None])
def test_a_rank_that_is_not_a_finite_number_is_one_error(ranked_door, capsys, rank):
    """A rank that is not a finite number (infinities too, and NULL or empty in a column that holds ranks) is the
    readers' error through ``evaluate --rank-col`` and one error naming the row and the value through the macros."""
    got, code, _, err = _ranked_top1(ranked_door, capsys, rank)
    shown = "NULL" if rank is None else repr(rank)
    assert code == 2 and "column 'rank'" in err and "rank is not a number" in err, err
    assert got == (f"hiersql: runs, column 'rank', system='m', instance_id='i1': rank is not a number: {shown}"
                   " (1 error(s) in all: SELECT * FROM hiersql_check())"), got
    _ranked_top1(ranked_door, capsys, "9")  # the module's table as the other tests expect it


def test_of_duplicate_rows_the_first_in_rank_order_is_kept(ranked_door, capsys):
    """By hand: i1's ``a1`` twice, at rank 5 scored 0.9 and at rank 1 scored 0.1, ``b1`` at rank 2 scored 0.5;
    the readers keep the row first in rank order (rank 1), and the rank column ranks before the score, so ``a1``
    is i1's top-1: 1.0 (keeping the other row, at rank 5, would put ``b1`` first: 0.5)."""
    path, columns = ranked_door
    score = "score" if not columns else "v"
    with duckdb.connect(str(path)) as con:
        con.execute(f"UPDATE runs SET rank = '5', {score} = 0.9 WHERE label = 'a1'")
        con.execute(f"UPDATE runs SET rank = '2', {score} = 0.5 WHERE instance_id = 'i1' AND label = 'b1'")
        con.execute("INSERT INTO runs VALUES ('m', 'i1', 'a1', '1', 0.1)")
    try:
        got, code, out, _ = _ranked_top1(ranked_door, capsys, "2")
        assert code == 0 and out.splitlines()[1] == "m,top_k_accuracy,@1,1.0" and got == 1.0, (out, got)
    finally:
        with duckdb.connect(str(path)) as con:
            con.execute("DELETE FROM runs WHERE rank = '1' AND label = 'a1'")
            con.execute(f"UPDATE runs SET rank = '10', {score} = NULL WHERE label = 'a1'")
            con.execute(f"UPDATE runs SET {score} = NULL")


@pytest.mark.postgres
@pytest.mark.parametrize("rank", ["9", "11", "abc"])
def test_the_printed_postgres_sql_ranks_by_the_number_of_a_text_rank(tmp_path, capsys, pg_dsn, rank):
    """``hiersql sql top_k_accuracy --dialect postgres`` over the ranked hand case (hiersql's columns, the rank a
    text column) run by PostgreSQL: the top-1 accuracy by hand of the test above, or the failed cast quoting the
    rule's message."""
    path = tmp_path / "user.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE gold AS SELECT * FROM (VALUES ('i1', 'a1', 1), ('i2', 'b1', 1))"
                    " t(instance_id, label, rank)")
        con.execute(RANKED["tables"][0])
        con.execute("INSERT INTO runs VALUES ('m', 'i1', 'a1', '10', NULL), ('m', 'i1', 'b1', $rank, NULL),"
                    " ('m', 'i2', 'b1', '1', NULL)", {"rank": rank})
    if rank != "abc":
        assert _printed_top1_on_postgres(tmp_path, capsys, pg_dsn) == [
            ("m", "top_k_accuracy", "@1", 0.5 if rank == "9" else 1.0)]
        return
    with pytest.raises(duckdb.InvalidInputException) as raised:
        _printed_top1_on_postgres(tmp_path, capsys, pg_dsn)
    assert ("hiersql: runs, column 'rank', system='m', instance_id='i1': rank is not a number: 'abc'"
            in str(raised.value)), str(raised.value)
