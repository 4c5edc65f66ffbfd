"""Labels and taxonomies read from a real PostgreSQL server (the ``pg_dsn`` fixture of ``tests/conftest.py``),
in place: GermEval 2019 subtask B as ``gold``, ``runs`` and ``genres`` gives the values of the file-based run,
and a failed run leaves the database table for table as it was."""

from __future__ import annotations

from urllib.parse import quote as urlquote

import pytest

from hiersql import Evaluator, InputError, Taxonomy
from hiersql.cli import main
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
    file_reference,
    germeval_rows,
)

psycopg = pytest.importorskip("psycopg")
from psycopg import sql  # noqa: E402

pytestmark = pytest.mark.postgres
DATABASE = "hiersql_sources"


def uri(pg_dsn: str, database: str = DATABASE) -> str:
    """``postgresql://user@host:port/db`` of ``database`` (by default this module's test database) on the server
    of ``pg_dsn`` (a socket folder as a percent-encoded host)."""
    params = psycopg.conninfo.conninfo_to_dict(pg_dsn)
    host = urlquote(params.get("host", "localhost"), safe="")
    return f"postgresql://{params.get('user', 'postgres')}@{host}:{params.get('port', 5432)}/{database}"


def icu_database(pg_dsn: str, database: str) -> dict:
    """A new database ``database`` (made again) of ICU's ``en-US`` collation, where ``'a' < 'B'``: not the byte
    order DuckDB sorts text by; its connection parameters."""
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(database)))
        admin.execute(sql.SQL("CREATE DATABASE {} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US'"
                              " LC_COLLATE 'C.UTF-8' LC_CTYPE 'C.UTF-8'").format(sql.Identifier(database)))
    params = psycopg.conninfo.conninfo_to_dict(pg_dsn) | {"dbname": database}
    with psycopg.connect(**params) as con:
        assert con.execute("SELECT 'a' < 'B', 'a' COLLATE \"C\" < 'B'").fetchone() == (True, False)
    return params


def create(con, table: str, columns: list[str], rows: list[tuple], schema: str = "public") -> None:
    name = sql.Identifier(schema, table)
    con.execute(sql.SQL("CREATE TABLE {} ({})").format(
        name, sql.SQL(", ").join(sql.SQL("{} text").format(sql.Identifier(c)) for c in columns)))
    with con.cursor() as cur, cur.copy(sql.SQL("COPY {} FROM STDIN").format(name)) as copy:
        for row in rows:
            copy.write_row(row)


@pytest.fixture(scope="module")
def warehouse(pg_dsn, data_dir):
    """A database of its own holding GermEval B (public.gold, runs, genres) and the hand example under
    injection-shaped names (schema "Ware House")."""
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(DATABASE)))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))
    params = psycopg.conninfo.conninfo_to_dict(pg_dsn) | {"dbname": DATABASE}
    with psycopg.connect(**params) as con:
        for table, rows in germeval_rows(data_dir).items():
            create(con, table, list(TABLE_COLUMNS[table]), rows)
        con.execute('CREATE SCHEMA "Ware House"')
        create(con, "tax", ["parent", "child"], HAND_EDGES, "Ware House")
        create(con, "truth", [WEIRD["instance"], WEIRD["label"]], HAND_TRUTH, "Ware House")
        create(con, WEIRD_TABLE, [WEIRD["system"], WEIRD["instance"], WEIRD["label"]], HAND_PREDS, "Ware House")
        create(con, "bad runs", ["model", "doc", "genre"], [*HAND_PREDS, ("M2", "i2", "zebra")], "Ware House")
    yield uri(pg_dsn), params


def snapshot(params: dict) -> list[tuple]:
    """Every table of the database (but the catalogs) with its rows, to compare before and after a run."""
    with psycopg.connect(**params) as con:
        tables = con.execute("SELECT table_schema, table_name FROM information_schema.tables WHERE table_schema"
                             " NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2").fetchall()
        return [(s, t, sorted(con.execute(sql.SQL("SELECT * FROM {}").format(sql.Identifier(s, t))).fetchall()))
                for s, t in tables]


def test_germeval_b_from_postgres_equals_the_files_cli(warehouse, data_dir, capsys):
    """The command of docs/warehouse.md: every measure (``all``) equals the file-based run with the labels of
    each instance ranked by name (a SQL table has no row order)."""
    base, params = warehouse
    before = snapshot(params)
    args = ["evaluate", "--taxonomy", f"{base}::{GENRES}", "--truth", f"{base}::public.{GOLD}",
            "--pred", f"{base}::{RUNS}", *COLUMN_FLAGS, "--metrics", "all", "--format", "csv"]
    assert main(args) == 0
    got = csv_rows(capsys.readouterr().out)
    assert len({k[0] for k in got}) == 19
    assert_same_values(got, by_name_reference(data_dir))
    assert snapshot(params) == before


def test_ranks_do_not_follow_the_servers_scan_also_where_it_would_scan_in_parallel(warehouse, data_dir, capsys):
    # ranks are by label name whatever order the rows come in (PL and the HCM depend on them): with a server
    # that plans parallel scans even for small tables, the workers' rows would come interleaved
    base, params = warehouse
    settings = {"parallel_setup_cost": "0", "parallel_tuple_cost": "0", "min_parallel_table_scan_size": "0",
                "max_parallel_workers_per_gather": "4"}
    with psycopg.connect(**params, autocommit=True) as con:
        for key, value in settings.items():
            con.execute(sql.SQL("ALTER DATABASE {} SET {} = {}").format(sql.Identifier(DATABASE), sql.Identifier(key),
                                                                        sql.Literal(value)))
    try:
        with psycopg.connect(**params) as con:  # the setting is there: a plain scan is a parallel one
            plan = con.execute(sql.SQL("EXPLAIN SELECT * FROM {}").format(sql.Identifier(RUNS))).fetchall()
            assert "Gather" in plan[0][0]
        args = ["evaluate", "--taxonomy", f"{base}::{GENRES}", "--truth", f"{base}::public.{GOLD}",
                "--pred", f"{base}::{RUNS}", *COLUMN_FLAGS, "--metrics", "pl,hcm_f1", "--format", "csv"]
        assert main(args) == 0
        got = csv_rows(capsys.readouterr().out)
    finally:
        with psycopg.connect(**params, autocommit=True) as con:
            con.execute(sql.SQL("ALTER DATABASE {} RESET ALL").format(sql.Identifier(DATABASE)))
    want = by_name_reference(data_dir)
    assert_same_values(got, {k: v for k, v in want.items() if k[1] in ("pl", "hcm_f1")})


def test_unquoted_names_fold_to_lower_case_as_in_postgresql(warehouse, data_dir, capsys):
    # the tables were created unquoted (gold, runs, genres): GOLD, Public.Runs name them, as in psql;
    # a quoted "GOLD" is that exact name, which does not exist
    base, _ = warehouse
    args = ["evaluate", "--taxonomy", f"{base}::{GENRES.upper()}", "--truth", f"{base}::PUBLIC.{GOLD.upper()}",
            "--pred", f"{base}::Public.{RUNS.capitalize()}", *COLUMN_FLAGS, "--metrics", "hp",
            "--average", "micro", "--format", "csv"]
    assert main(args) == 0
    got = csv_rows(capsys.readouterr().out)
    want = file_reference(data_dir)
    assert_same_values(got, {k: v for k, v in want.items() if k[1:] == ("hierarchical_precision", "micro")})
    quoted = [*args[:4], f'{base}::"{GOLD.upper()}"', *args[5:]]
    assert main(quoted) == 2
    assert "no such table or view in the PostgreSQL database" in capsys.readouterr().err
    # with a table "GOLD" there too (other rows), GOLD still names gold, as in psql; "GOLD" names "GOLD"
    with psycopg.connect(**warehouse[1]) as con:
        con.execute(f'CREATE TABLE public."{GOLD.upper()}" AS SELECT * FROM public.{GOLD} LIMIT 10')
    try:
        assert main(args) == 0
        assert_same_values(csv_rows(capsys.readouterr().out),
                           {k: v for k, v in want.items() if k[1:] == ("hierarchical_precision", "micro")})
        assert main(quoted) == 2  # its 10 rows miss instances the predictions have
        assert "predicted instance has no truth" in capsys.readouterr().err
    finally:
        with psycopg.connect(**warehouse[1]) as con:
            con.execute(f'DROP TABLE public."{GOLD.upper()}"')


def test_injection_shaped_names_in_postgres(warehouse):
    base, _ = warehouse
    schema = '"Ware House".'
    table = '"' + WEIRD_TABLE.replace('"', '""') + '"'
    ev = Evaluator(Taxonomy.from_table(f"{base}::{schema}tax"))
    ev.add_truth(f"{base}::{schema}truth", instance_col=WEIRD["instance"], label_col=WEIRD["label"])
    ev.add_predictions(None, f"postgres{base[len('postgresql'):]}::{schema}{table}", system_col=WEIRD["system"],
                       instance_col=WEIRD["instance"], label_col=WEIRD["label"])
    rows = ev.evaluate(["hp", "hr"], average=["micro"])
    assert {(r.system, r.metric): r.value for r in rows.itertuples()} == pytest.approx(HAND_VALUES)


def test_bad_label_in_postgres_exits_2_and_leaves_the_database(warehouse, capsys):
    base, params = warehouse
    before = snapshot(params)
    ref = f'{base}::"Ware House".'
    code = main(["evaluate", "--taxonomy", ref + "tax", "--truth", ref + "truth", "--pred", ref + '"bad runs"',
                 "--instance-col", WEIRD["instance"], "--label-col", WEIRD["label"], "--system-col", "model"])
    err = capsys.readouterr().err
    assert code == 2
    # the truth table's instance column is WEIRD["instance"]; the runs name theirs "doc": the error is the
    # missing column, in one line, before anything is read
    assert err.count("\n") == 1 and "no column 'Doc ID\"; --' for the instance" in err, err
    ev = Evaluator(Taxonomy.from_table(ref + "tax"))
    ev.add_truth(ref + "truth", instance_col=WEIRD["instance"], label_col=WEIRD["label"])
    with pytest.raises(InputError) as info:
        ev.add_predictions(None, ref + '"bad runs"', system_col="model", instance_col="doc", label_col="genre")
    assert str(info.value) == (f"{ref}\"bad runs\", column 'genre', doc='i2', model='M2': label not in the"
                               " taxonomy: 'zebra'")
    assert snapshot(params) == before


def test_postgres_types_and_missing_tables(warehouse):
    base, params = warehouse
    ev = Evaluator(Taxonomy.from_edges(HAND_EDGES)).add_truth(
        {"instance_id": [i for i, _ in HAND_TRUTH], "label": [lab for _, lab in HAND_TRUTH]})
    with pytest.raises(InputError, match="no such table or view"):
        ev.add_predictions(None, f"{base}::nowhere", system_col="model")
    with pytest.raises(InputError, match="cannot connect to PostgreSQL"):
        ev.add_predictions(None, f"{base}_missing::{RUNS}", system_col="model")
    with psycopg.connect(**params) as con:
        con.execute('CREATE TABLE "Ware House".floats (doc double precision, genre text)')
    try:
        with pytest.raises(InputError, match=r"column 'doc' \(instance\) has type float8"):
            ev.add_predictions("x", f'{base}::"Ware House".floats', instance_col="doc", label_col="genre")
    finally:
        with psycopg.connect(**params) as con:
            con.execute('DROP TABLE "Ware House".floats')


def test_a_large_table_copied_in_parallel_parts_equals_one_copy(warehouse):
    """GermEval B's runs (about 1,400 pages) copied in page ranges on parallel connections: the same rows in
    the same order as one COPY."""
    import duckdb

    from hiersql.inputs import postgres_tables, sources

    base, _ = warehouse
    con = duckdb.connect()
    got = {}
    for pages in (postgres_tables.PG_PARALLEL_PAGES, 10**12):
        table = sources.open_table(con, f"{base}::{RUNS}")
        assert table.kinds == ["text", "text", "text"]
        parallel = postgres_tables.PG_PARALLEL_PAGES
        postgres_tables.PG_PARALLEL_PAGES = pages
        try:
            got[pages] = con.execute(f"SELECT * FROM {table.read(list(TABLE_COLUMNS[RUNS]))}").fetchall()
        finally:
            postgres_tables.PG_PARALLEL_PAGES = parallel
            table.close()
    assert got[postgres_tables.PG_PARALLEL_PAGES] == got[10**12]
    assert len(got[10**12]) == 178390


def test_a_query_source_equals_the_table_and_is_read_only(warehouse, data_dir, capsys):
    """``postgresql://…::SELECT …`` (with ``::`` casts and a filter): the rows of the query, evaluated as the
    file-based run of those systems; a query that writes, or two statements, or SQL that does not parse, is
    exit 2 with one line naming the source, and the database is as it was."""
    base, params = warehouse
    before = snapshot(params)
    query = (f"{base}::SELECT model::text AS model, doc, genre FROM {RUNS}"
             " WHERE model LIKE 'LT-UHH%' OR model = 'twistbytes__thresholding'")
    args = ["evaluate", "--taxonomy", f"{base}::{GENRES}", "--truth", f"{base}::SELECT * FROM public.{GOLD}",
            "--pred", query, *COLUMN_FLAGS, "--metrics", "hp,hr,hf,gie", "--format", "csv"]
    assert main(args) == 0
    got = csv_rows(capsys.readouterr().out)
    metrics = ("hierarchical_precision", "hierarchical_recall", "hierarchical_f1", "graph_induced_error")
    want = {k: v for k, v in file_reference(data_dir).items()
            if (k[0].startswith("LT-UHH") or k[0] == "twistbytes__thresholding") and k[1] in metrics}
    assert len({k[0] for k in got}) == 4  # three LT-UHH systems and twistbytes
    assert_same_values(got, want)
    for bad, message in (
        (f"{base}::SELECT 1 AS doc; DROP TABLE {GOLD}", "query failed (syntax error at or near \";\""),
        (f"{base}::WITH gone AS (DELETE FROM {GOLD} RETURNING *) SELECT * FROM gone", "query failed"),
        (f"{base}::SELECT nope FROM {GOLD}", 'query failed (column "nope" does not exist'),
        (f"{base}::SELECT doc, genre, 1.5::float8 AS model FROM {GOLD}", "column 'model' (system) has type float8"),
    ):
        code = main(["evaluate", "--taxonomy", f"{base}::{GENRES}", "--truth", f"{base}::{GOLD}", "--pred", bad,
                     *COLUMN_FLAGS])
        err = capsys.readouterr().err
        assert code == 2, err
        assert err.count("\n") == 1 and err.startswith(f"hiersql: error: {bad}: ") and message in err, err
    assert snapshot(params) == before


def test_a_password_is_never_shown(warehouse, pg_dsn, capsys):
    """A password in a source's URI query (``?password=``), in ``--postgres-url`` as a URI or as a libpq
    keyword, is ``***`` in the one-line error (the server trusts the socket: the password is not checked)."""
    base, params = warehouse
    ref = f'{base}?password=s3cr3t::"Ware House".'
    code = main(["evaluate", "--taxonomy", ref + "tax", "--truth", ref + "truth", "--pred", ref + '"bad runs"',
                 "--instance-col", WEIRD["instance"], "--label-col", WEIRD["label"], "--system-col", "model",
                 "--unknown", "error"])
    err = capsys.readouterr().err
    assert code == 2 and "s3cr3t" not in err and "?password=***::" in err, err
    closed = psycopg.conninfo.make_conninfo(pg_dsn, port="1", password="s3cr3t")  # nothing listens on port 1
    for url in (closed, "postgresql://me:s3cr3t@localhost:1/db", "postgresql://me@localhost:1/db?password=s3cr3t"):
        assert main(["evaluate", "--taxonomy", ref + "tax", "--truth", ref + "truth", "--pred", ref + "truth",
                     "--engine", "postgres", "--postgres-url", url]) == 2
        err = capsys.readouterr().err
        assert err.startswith("hiersql: error: --postgres-url: cannot connect") and "s3cr3t" not in err, err
        assert err.count("\n") == 1


def test_character_n_columns_are_read_without_their_padding(warehouse):
    """``character(n)`` pads its values with blanks, which PostgreSQL ignores when it compares them: read as
    ``text`` (no padding), the hand example gives its values (the padded labels were unknown to the taxonomy)."""
    base, params = warehouse
    with psycopg.connect(**params) as con:
        create(con, "gold_char", ["doc", "genre"], HAND_TRUTH, "Ware House")
        create(con, "runs_char", ["model", "doc", "genre"], HAND_PREDS, "Ware House")
        for table, columns in (("gold_char", ("doc", "genre")), ("runs_char", ("model", "doc", "genre"))):
            for column in columns:
                con.execute(f'ALTER TABLE "Ware House".{table} ALTER COLUMN {column} TYPE character(12)')
    ref = f'{base}::"Ware House".'
    ev = Evaluator(Taxonomy.from_edges(HAND_EDGES))
    ev.add_truth(ref + "gold_char", instance_col="doc", label_col="genre")
    ev.add_predictions(None, ref + "runs_char", instance_col="doc", label_col="genre", system_col="model")
    got = {(r.system, r.metric): r.value for r in ev.rows(["hp", "hr"], average="micro")}
    assert got == pytest.approx(HAND_VALUES)
