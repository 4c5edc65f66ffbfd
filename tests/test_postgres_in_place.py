"""``--engine postgres`` over label tables of the engine's own server: read, checked and evaluated in place
(hiersql.engines.postgres.sources), with the values of the file-based run and, for bad tables, the very
messages and warnings of the store, which reads the same tables through DuckDB."""

from __future__ import annotations

import warnings

import pytest

from hiersql.cli import main
from hiersql.errors import DataWarning
from tests._sources_cases import (
    COLUMN_FLAGS,
    GENRES,
    GOLD,
    HAND_EDGES,
    HAND_PREDS,
    HAND_TRUTH,
    HAND_VALUES,
    RUNS,
    TABLE_COLUMNS,
    WEIRD,
    WEIRD_TABLE,
    assert_same_values,
    by_name_reference,
    csv_rows,
    germeval_rows,
)

psycopg = pytest.importorskip("psycopg")
from psycopg import sql  # noqa: E402

from tests.test_sources_postgres import create, icu_database, uri  # noqa: E402

pytestmark = pytest.mark.postgres
DATABASE = "hiersql_in_place"


@pytest.fixture(scope="module")
def server(pg_dsn, data_dir):
    """A database of its own: GermEval B (gold, runs, genres), the hand example under injection-shaped names
    (schema "Ware House"), and bad tables of the hand example's columns."""
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(DATABASE)))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))
    params = psycopg.conninfo.conninfo_to_dict(pg_dsn) | {"dbname": DATABASE}
    with psycopg.connect(**params) as con:
        for table, rows in germeval_rows(data_dir).items():
            create(con, table, list(TABLE_COLUMNS[table]), rows)
        con.execute('CREATE SCHEMA "Ware House"')
        create(con, "tax", ["parent", "child"], HAND_EDGES, "Ware House")
        create(con, "truth", ["doc", "genre"], HAND_TRUTH, "Ware House")
        create(con, WEIRD_TABLE, [WEIRD["system"], WEIRD["instance"], WEIRD["label"]], HAND_PREDS, "Ware House")
        for k, rows in enumerate(BAD):
            create(con, f"bad{k}", ["model", "doc", "genre"], rows[0], "Ware House")
        create(con, "messy", ["model", "doc", "genre"], MESSY, "Ware House")
        create(con, "spaced", ["model", "doc", "genre"], SPACED, "Ware House")
    base = uri(pg_dsn, DATABASE)
    yield base, params


# bad prediction tables of the hand example (model, doc, genre), each with the store's message
BAD = [
    ([("M1", "i1", "a1"), ("M1", "i2", "zebra")], "column 'genre', doc='i2', model='M1': label not in the taxonomy:"
     " 'zebra'"),
    ([("M1", "i1", "a1"), ("M1", "i2", None)], "column 'genre', doc='i2', model='M1': missing instance_id or label"),
    ([("M1", "i1", "a1"), ("M1", None, "b")], "column 'doc', genre='b', model='M1': missing instance_id or label"),
    ([("M1", "i1", "a1"), ("M2", "i9", "b")], "column 'doc', doc='i9', model='M2': predicted instance has no truth"),
    ([("M1", "i1", "a1"), (None, "i2", "b")], "column 'model', doc='i2': missing system (NULL or empty)"),
    ([("M1", "i1", "a1"), ("M1", "i2", "r")], None),  # the real root: no fault
    # two bad rows: the least by instance and label is named, not the first stored
    ([("M1", "i2", "zebra"), ("M1", "i1", "yak"), ("M1", "i1", "a1")], "column 'genre', doc='i1', model='M1': label"
     " not in the taxonomy: 'yak'"),
    # a missing system written two ways: the least row of the two is named
    ([("M1", "i1", "a1"), ("", "i2", "b"), (None, "i1", "b")], "column 'model', doc='i1': missing system (NULL or"
     " empty)"),
    # ... and two rows alike but for a NULL and an empty system: the NULL one
    ([("", "i1", "b"), (None, "i1", "b"), ("M1", "i1", "a1")], "column 'model', doc='i1': missing system (NULL or"
     " empty)"),
    ([(None, "i1", "b"), ("", "i1", "b"), ("M1", "i1", "a1")], "column 'model', doc='i1': missing system (NULL or"
     " empty)"),
    ([(None, "i2", "b"), ("", "i1", "b"), ("M1", "i1", "a1")], "column 'model', doc='i1': missing system (NULL or"
     " empty): ''"),
]
# duplicates, an unknown label and instances without truth, dropped with warnings under --unknown/--no-truth ignore
MESSY = [*HAND_PREDS, ("M1", "i1", "a1"), ("M2", "i2", "zebra")]
# spaces around systems, ids and labels (ASCII, no-break, ideographic), stripped as every reader strips them
SPACED = [(f"{m} ", f" {i}\u00a0", f"\u3000{label} ") for m, i, label in HAND_PREDS]


def snapshot(params: dict) -> list[tuple]:
    """Every table of the database (but the catalogs) with its rows, to compare before and after a run."""
    with psycopg.connect(**params) as con:
        tables = con.execute("SELECT table_schema, table_name FROM information_schema.tables WHERE table_schema"
                             " NOT IN ('pg_catalog', 'information_schema') AND table_type <> 'LOCAL TEMPORARY'"
                             " ORDER BY 1, 2").fetchall()
        return [(s, t, sorted(con.execute(sql.SQL("SELECT * FROM {}").format(sql.Identifier(s, t))).fetchall(),
                              key=repr)) for s, t in tables]


def evaluate(capsys, args: list[str]) -> tuple[int, str, str, list[str]]:
    """``hiersql evaluate ARGS``: exit code, stdout, stderr and the data warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = main(["evaluate", *args])
    out, err = capsys.readouterr()
    return code, out, err, sorted(str(w.message) for w in caught if issubclass(w.category, DataWarning))


def reads_spy(monkeypatch) -> list[str]:
    """The PostgreSQL references the store copies out of the server (hiersql.inputs.postgres_tables)."""
    import hiersql.inputs.sources as sources

    read: list[str] = []
    real = sources.postgres_table

    def spy(con, ref, name):
        read.append(ref)
        return real(con, ref, name)

    monkeypatch.setattr(sources, "postgres_table", spy)
    return read


def test_germeval_b_every_family_in_place_equals_the_files(server, data_dir, capsys, monkeypatch):
    """Every measure (``all``) of GermEval B's tables in the engine's server equals the file-based run (labels
    ranked by name: a table has no row order), and prints the very bytes of the default DuckDB engine reading
    the same tables; of the server's tables only the taxonomy is copied out."""
    base, params = server
    before = snapshot(params)
    args = ["--taxonomy", f"{base}::{GENRES}", "--truth", f"{base}::public.{GOLD}", "--pred", f"{base}::{RUNS}",
            *COLUMN_FLAGS, "--metrics", "all", "--format", "csv"]
    duckdb = evaluate(capsys, args)
    read = reads_spy(monkeypatch)
    code, out, err, _ = evaluate(capsys, [*args, "--engine", "postgres", "--postgres-url", base])
    assert code == 0, err
    assert read == [f"{base}::{GENRES}"]
    assert_same_values(csv_rows(out), by_name_reference(data_dir))
    assert out == duckdb[1]
    assert snapshot(params) == before


def hand_args(base: str, preds: str, *extra: str) -> list[str]:
    ref = f'{base}::"Ware House".'
    return ["--taxonomy", ref + "tax", "--truth", ref + "truth", "--pred", ref + preds, "--instance-col", "doc",
            "--label-col", "genre", "--system-col", "model", "--metrics", "hp,hr", "--average", "micro",
            "--format", "csv", *extra]


def engine_flags(base: str) -> list[str]:
    return ["--engine", "postgres", "--postgres-url", base]


@pytest.mark.parametrize("k", range(len(BAD)))
def test_bad_tables_give_the_stores_message(server, capsys, monkeypatch, k):
    """Each bad table: exit 2 and the one line of the store's DuckDB reading of the same table, naming the
    table, the column, the row key and the value; the real root as a label is no fault."""
    base, _ = server
    args = hand_args(base, f"bad{k}")
    copied = evaluate(capsys, args)
    read = reads_spy(monkeypatch)
    in_place = evaluate(capsys, [*args, *engine_flags(base)])
    assert read == [f'{base}::"Ware House".tax']
    assert in_place[:3] == copied[:3]
    message = BAD[k][1]
    if message is None:
        assert in_place[0] == 0
    else:
        assert in_place[0] == 2 and in_place[2].count("\n") == 1
        assert f'{base}::"Ware House".bad{k}, {message}' in in_place[2], in_place[2]


def test_ignored_rows_and_duplicates_warn_as_the_store_warns(server, capsys):
    """Duplicates collapsed, an unknown label and instances without truth ignored: the store's warnings, and
    the values of the hand example (the dropped rows were all extra)."""
    base, _ = server
    args = hand_args(base, "messy", "--unknown", "ignore")
    copied = evaluate(capsys, args)
    in_place = evaluate(capsys, [*args, *engine_flags(base)])
    assert in_place == copied
    assert in_place[2].splitlines()[:2] == [
        f"hiersql: warning: {base}::\"Ware House\".messy (model='M2'): ignored 1 label(s) not in the taxonomy"
        " (first: 'zebra')",
        f"hiersql: warning: {base}::\"Ware House\".messy (model='M1'): 1 duplicate (instance_id, label) row(s)"
        " collapsed",
    ]
    got = {(s, m): v for (s, m, _), v in csv_rows(in_place[1]).items()}
    assert got == pytest.approx(HAND_VALUES)


def test_spaces_and_injection_shaped_names_in_place(server, capsys):
    """Spaces around systems, ids and labels are stripped; a table and columns named like SQL injections are
    read as names: the hand example's values by hand."""
    base, _ = server
    got = evaluate(capsys, [*hand_args(base, "spaced"), *engine_flags(base)])
    assert got[0] == 0, got[2]
    assert {(s, m): v for (s, m, _), v in csv_rows(got[1]).items()} == pytest.approx(HAND_VALUES)
    table = '"' + WEIRD_TABLE.replace('"', '""') + '"'
    args = [*hand_args(base, table), *engine_flags(base)]
    args[args.index("--system-col") + 1] = WEIRD["system"]
    with psycopg.connect(**server[1]) as con:  # the truth under the weird names too
        create(con, "weird truth", [WEIRD["instance"], WEIRD["label"]], HAND_TRUTH, "Ware House")
    args[args.index("--truth") + 1] = f'{base}::"Ware House"."weird truth"'
    args[args.index("--instance-col") + 1], args[args.index("--label-col") + 1] = WEIRD["instance"], WEIRD["label"]
    got = evaluate(capsys, args)
    assert got[0] == 0, got[2]
    assert {(s, m): v for (s, m, _), v in csv_rows(got[1]).items()} == pytest.approx(HAND_VALUES)


def test_which_sources_are_read_in_place():
    """Only tables of the engine's own server (host, port, database, user): a query, a file or another
    database is read by the store and copied."""
    from hiersql.engines.postgres.sources import in_place

    url = "postgresql://me@localhost:5433/db"
    same = "host=localhost port=5433 dbname=db user=me"
    assert in_place(same, f"{url}::gold", [f"{url}::public.runs"])
    assert not in_place(url, f"{url}::gold", [f"{url}::SELECT * FROM runs"])
    assert not in_place(url, f"{url}::gold", ["runs.tsv"])
    assert not in_place(url, f"{url}::gold", ["postgresql://me@localhost:5433/other::runs"])
    assert not in_place(url, f"{url}::gold", ["postgresql://you@localhost:5433/db::runs"])
    assert not in_place(None, f"{url}::gold", [f"{url}::runs"])


def test_per_instance_tables_in_place_are_duckdbs(server, capsys, tmp_path):
    """``--per-instance`` of every family computed in the server writes the files of the default engine on the
    same tables, byte for byte."""
    base, _ = server
    args = [*hand_args(base, "messy", "--unknown", "ignore"), "--metrics", "all"]
    for name, extra in (("duckdb", []), ("postgres", engine_flags(base))):
        code, _, err, _ = evaluate(capsys, [*args, "--per-instance", str(tmp_path / name), *extra])
        assert code == 0, err
    files = sorted(p.name for p in (tmp_path / "duckdb").iterdir())
    assert files == sorted(p.name for p in (tmp_path / "postgres").iterdir()) and "set_based.csv" in files
    for name in files:
        assert (tmp_path / "postgres" / name).read_bytes() == (tmp_path / "duckdb" / name).read_bytes(), name


def test_a_database_whose_text_order_is_not_bytes_prints_duckdbs_digits(pg_dsn, data_dir, capsys):
    """A database of ICU's ``en-US`` collation (a server's usual kind of locale, where ``'a' < 'B'``; DuckDB orders
    text by its bytes): the flat family of two GermEval B systems in place prints the very bytes of the DuckDB
    engine. The macro averages add the per-class values in label order; in the database's order, some ended in
    other last digits."""
    database = "hiersql_in_place_icu"
    params = icu_database(pg_dsn, database)
    rows = germeval_rows(data_dir)
    systems = {"Averbis__BOHB_CNN", "Comtravo-DS__global_clf_cnn"}
    with psycopg.connect(**params) as con:
        create(con, GOLD, list(TABLE_COLUMNS[GOLD]), rows[GOLD])
        create(con, RUNS, list(TABLE_COLUMNS[RUNS]), [row for row in rows[RUNS] if row[0] in systems])
        create(con, GENRES, list(TABLE_COLUMNS[GENRES]), rows[GENRES])
    base = uri(pg_dsn, database)
    args = ["--taxonomy", f"{base}::{GENRES}", "--truth", f"{base}::{GOLD}", "--pred", f"{base}::{RUNS}",
            *COLUMN_FLAGS, "--metrics", "flat", "--format", "csv"]
    code, duckdb, err, _ = evaluate(capsys, args)
    assert code == 0, err
    code, out, err, _ = evaluate(capsys, [*args, *engine_flags(base)])
    assert code == 0, err
    assert len(csv_rows(out)) == 2 * 14 and out == duckdb
