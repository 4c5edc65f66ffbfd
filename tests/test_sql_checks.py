"""The SQL door gives ``hiersql evaluate``'s values or an error naming the fault (issue 37, item 1): the measure
macros of ``hiersql install-macros`` over a user's own tables (GermEval 2019 subtask B, real data), each dirty
as the issue's table lists, against ``hiersql evaluate`` over the same tables (``duckdb:FILE::TABLE``)."""

from __future__ import annotations

import re
import shutil

import duckdb
import pytest

from hiersql.cli import main
from hiersql.errors import InputError
from hiersql.inputs import rules as input_rules
from hiersql.inputs.store import Store
from hiersql.inputs.taxonomy import Taxonomy
from hiersql.measures import REGISTRY, Options, Row
from tests._engine_cases import assert_rows_match, cli_rows, germeval_store, reference

SYSTEMS = ("Averbis__BOHB_CNN", "LT-UHH__baseline")
METRICS = "set_based,flat"
MACROS = "SELECT * FROM hiersql_set_based({args}) UNION ALL SELECT * FROM hiersql_flat({args})"
# The user's own tables: copies of hiersql's, which each case then makes dirty.
USER_TABLES = ("CREATE TABLE gold AS SELECT instance_id, label, rank FROM truth;"
               " CREATE TABLE runs AS SELECT system, instance_id, label, rank, score FROM predictions")


@pytest.fixture(scope="module")
def germeval_file(tmp_path_factory, data_dir):
    """A DuckDB file with GermEval subtask B (two systems) in hiersql's tables and in the user's (gold, runs)."""
    path = tmp_path_factory.mktemp("germeval") / "base.duckdb"
    store = germeval_store(data_dir, SYSTEMS, path)
    store.con.execute(USER_TABLES)
    store.close()
    return path


@pytest.fixture(scope="module")
def installed_file(germeval_file, tmp_path_factory):
    """A copy of that file with the macros installed over the user's tables (``hiersql install-macros``, ~2.5 s:
    it generates every macro's SQL, whatever the rows), once per module."""
    path = tmp_path_factory.mktemp("installed") / "user.duckdb"
    shutil.copy(germeval_file, path)
    assert main(["install-macros", "--db", str(path), "--table", "truth=gold", "--table", "predictions=runs"]) == 0
    assert not path.with_name(path.name + ".wal").exists()  # closed: the file alone holds it
    return path


def _dirty(installed_file, tmp_path, sql: str):
    """A copy of the file with the macros installed over the user's tables, then ``sql`` run on those tables
    (the macros read the tables when queried, as after a user's load that follows the install)."""
    path = tmp_path / "user.duckdb"
    shutil.copy(installed_file, path)
    with duckdb.connect(str(path)) as con:
        con.execute(sql)
    return path


def _macro_rows(path, args: str = "") -> list[Row]:
    with duckdb.connect(str(path)) as con:
        return [Row(*r) for r in con.execute(MACROS.format(args=args)).fetchall()]


def _evaluate(capsys, path, data_dir, *flags: str) -> list[Row]:
    capsys.readouterr()  # install-macros' line
    return cli_rows(capsys, ["--taxonomy", str(data_dir / "canonical" / "taxonomy.tsv"), "--truth",
                             f"duckdb:{path}::gold", "--pred", f"duckdb:{path}::runs", "--metrics", METRICS,
                             *flags])


# Rows the readers clean: the macros give evaluate's values (and would not without the cleaning: the raw rows
# gave other numbers, issue 37's table).
CLEANED = {
    # a third of the predicted labels with a trailing space (evaluate strips it)
    "label_spaces": "UPDATE runs SET label = label || ' ' WHERE hash(instance_id, label) % 3 = 0",
    # instance ids with spaces around them, in the truth and the predictions
    "id_spaces": "UPDATE runs SET instance_id = ' ' || instance_id || '  ' WHERE hash(instance_id) % 4 = 0;"
                 " UPDATE gold SET instance_id = instance_id || ' ' WHERE hash(instance_id) % 5 = 0",
    # a fifth of the rows twice, one of them with a space (evaluate collapses them, with a warning)
    "duplicates": "INSERT INTO runs SELECT system, instance_id, label || ' ', rank, score FROM runs"
                  " WHERE hash(label) % 5 = 0; INSERT INTO gold SELECT * FROM gold WHERE hash(label) % 5 = 1",
}


@pytest.mark.parametrize("case", CLEANED)
def test_rows_the_readers_clean_give_evaluates_values(installed_file, tmp_path, capsys, data_dir, case):
    path = _dirty(installed_file, tmp_path, CLEANED[case])
    want = _evaluate(capsys, path, data_dir)
    assert_rows_match(_macro_rows(path), want, tol=1e-12)


def test_check_lists_the_duplicates_the_readers_count(installed_file, tmp_path):
    """hiersql_check() lists each duplicated (instance_id, label) of the predictions once, as 'collapsed'; the
    readers' warnings (one per system) count the extra rows: one per listed group here, every group a pair."""
    path = _dirty(installed_file, tmp_path, CLEANED["duplicates"])
    with duckdb.connect(str(path)) as con:
        listed = con.execute("SELECT count(*) FROM hiersql_check() WHERE table_name = 'runs' AND rule = 'duplicate'"
                             " AND action = 'collapsed'").fetchall()[0][0]
        pairs = con.execute("SELECT count(*) FROM runs WHERE hash(label) % 5 = 0 AND label NOT LIKE '% '"
                            ).fetchall()[0][0]
    with pytest.warns(match=re.escape(input_rules.DUPLICATES)) as warned:
        _load(path)
    counted = [int(re.search(r": (\d+) duplicate", str(w.message))[1]) for w in warned if "::runs" in str(w.message)]
    assert len(counted) == len(SYSTEMS) and listed == sum(counted) == pairs > 0


def _load(path, **options: str) -> Store:
    """evaluate's reading of the user's tables (its readers, through the Python API, which takes no_truth)."""
    from tests.conftest import DATA

    store = Store()
    store.load(Taxonomy.from_file(DATA / "canonical" / "taxonomy.tsv"), f"duckdb:{path}::gold",
               [(None, f"duckdb:{path}::runs")], **options)
    return store


# Rows evaluate refuses: the macros fail with one error naming the table, column, key and value.
REFUSED = {
    "lower_labels": ("UPDATE runs SET label = lower(label) WHERE instance_id = (SELECT min(instance_id) FROM runs)",
                     "runs, column 'label', system=", input_rules.UNKNOWN_LABEL),
    "id_not_in_truth": ("UPDATE runs SET instance_id = 'no-such-blurb' WHERE instance_id = (SELECT min(instance_id)"
                        " FROM runs)", "runs, column 'instance_id', system=", input_rules.NO_TRUTH),
    "null_system": ("UPDATE runs SET system = NULL WHERE instance_id = (SELECT min(instance_id) FROM runs)",
                    "runs, column 'system', system=NULL, instance_id=", input_rules.MISSING_SYSTEM),
    "null_truth_id": ("UPDATE gold SET instance_id = NULL WHERE instance_id = (SELECT min(instance_id) FROM gold)",
                      "gold, column 'instance_id', instance_id=NULL: ", input_rules.MISSING),
    "null_label": ("UPDATE runs SET label = NULL WHERE instance_id = (SELECT max(instance_id) FROM runs)",
                   "runs, column 'label', system=", input_rules.MISSING),
}


@pytest.mark.parametrize("case", REFUSED)
def test_rows_evaluate_refuses_make_the_macros_fail(installed_file, tmp_path, capsys, data_dir, case):
    sql, where, message = REFUSED[case]
    path = _dirty(installed_file, tmp_path, sql)
    with pytest.raises(InputError, match=re.escape(message)):
        _load(path)
    for macro in ("hiersql_set_based", "hiersql_set_based_instance", "hiersql_flat", "hiersql_flat_instance"):
        with duckdb.connect(str(path)) as con, pytest.raises(duckdb.InvalidInputException) as raised:
            con.execute(f"SELECT * FROM {macro}()").fetchall()
        said = str(raised.value).removeprefix("Invalid Input Error: ")
        assert said.startswith(f"hiersql: {where}") and f": {message}: " in said, said
        assert said.endswith(" error(s) in all: SELECT * FROM hiersql_check())") and "\n" not in said


@pytest.mark.parametrize(("case", "option"), [("lower_labels", "unknown"), ("id_not_in_truth", "no_truth")])
def test_ignore_drops_the_rows_as_evaluate_does(installed_file, tmp_path, case, option):
    """``unknown := 'ignore'`` and ``no_truth := 'ignore'`` give the values of evaluate with that option."""
    path = _dirty(installed_file, tmp_path, REFUSED[case][0])
    with pytest.warns(match="ignored"):
        store = _load(path, **{option: "ignore"})
    want = reference(store, [*REGISTRY["set_based"], *REGISTRY["flat"]], Options())
    assert_rows_match(_macro_rows(path, f"{option} := 'ignore'"), want, tol=1e-12)
    with duckdb.connect(str(path)) as con:
        assert con.execute(f"SELECT DISTINCT action FROM hiersql_check({option} := 'ignore')"
                           f" WHERE rule = '{RULE_OF[option]}'").fetchall() == [("dropped",)]


RULE_OF = {"unknown": "unknown_label", "no_truth": "no_truth"}


def test_an_empty_truth_is_an_error(installed_file, tmp_path):
    path = _dirty(installed_file, tmp_path, "DELETE FROM gold; CREATE TABLE no_instances AS SELECT * FROM instances"
                                           " WHERE false")
    assert main(["install-macros", "--db", str(path), "--table", "truth=gold", "--table", "predictions=runs",
                 "--table", "instances=no_instances"]) == 0
    with pytest.raises(InputError, match=input_rules.NO_INSTANCE):
        _load(path)
    with duckdb.connect(str(path)) as con, pytest.raises(duckdb.InvalidInputException,
                                                         match=re.escape("hiersql: no_instances: truth has no")):
        con.execute("SELECT * FROM hiersql_set_based()").fetchall()


def test_clean_tables_have_no_problem(installed_file, tmp_path):
    path = _dirty(installed_file, tmp_path, "SELECT 1")
    with duckdb.connect(str(path)) as con:
        assert con.execute("SELECT * FROM hiersql_check()").fetchall() == []


# ------------------------------------------------------------------ the printed SQL: `hiersql sql FAMILY --dialect D`
def _printed(capsys, dialect: str, *flags: str) -> list[str]:
    """The scripts `hiersql sql set_based` and `flat` print for the user's tables gold and runs."""
    scripts = []
    for family in ("set_based", "flat"):
        capsys.readouterr()
        assert main(["sql", family, "--dialect", dialect, "--table", "truth=gold", "--table", "predictions=runs",
                     *flags]) == 0
        scripts.append(capsys.readouterr().out)
    return scripts


def _run_duckdb(path, scripts: list[str]) -> list[Row]:
    with duckdb.connect(str(path)) as con:
        return [Row(*r) for script in scripts for r in con.execute(script).fetchall()]


POSTGRES_TABLES = ("edges", "nodes", "closure", "instances", "systems", "gold", "runs")


def postgres_with(pg_dsn, path, tables: tuple[str, ...] = POSTGRES_TABLES):
    """A :class:`~hiersql.engines.PostgresEngine` whose fresh ``public`` schema holds ``tables`` of the DuckDB
    file ``path`` (the caller closes it)."""
    from hiersql.engines import PostgresEngine

    engine = PostgresEngine(pg_dsn)
    engine.execute("DROP SCHEMA IF EXISTS public CASCADE")
    engine.execute("CREATE SCHEMA public")
    with duckdb.connect(str(path), read_only=True) as con:
        for table in tables:
            engine.write(table, con.table(table).to_arrow_table())
    return engine


def _run_postgres(pg_dsn, path, scripts: list[str]) -> list[Row]:
    """The user's tables of the DuckDB file copied into a fresh PostgreSQL schema, then each script run whole
    (psql's way: statement after statement); the rows of its last statement."""
    import psycopg

    engine = None
    try:
        engine = postgres_with(pg_dsn, path)
        rows = []
        for script in scripts:
            with engine.conn.cursor() as cur:
                cur.execute(script)
                while cur.nextset():
                    pass
                rows += [Row(s, m, a, float(v)) for s, m, a, v in cur.fetchall()]
        return rows
    except psycopg.Error as exc:
        raise duckdb.InvalidInputException(str(exc).splitlines()[0]) from None  # one failure type for both
    finally:
        if engine is not None:
            engine.close()


@pytest.mark.postgres
@pytest.mark.parametrize("dialect", ["duckdb", "postgres"])
@pytest.mark.parametrize("case", [*CLEANED, *REFUSED])
def test_printed_sql_gives_evaluates_values_or_fails(installed_file, tmp_path, capsys, data_dir, request, dialect,
                                                     case):
    """The printed script (check query, cleaned views, the measures) run by DuckDB and by PostgreSQL, on the
    user's dirty tables: evaluate's values, or a failure quoting the first fault (PostgreSQL's cast error quotes
    the message: ``invalid input syntax for type integer: "hiersql: runs, column 'label', ..."``)."""
    path = _dirty(installed_file, tmp_path, {**CLEANED, **{k: v[0] for k, v in REFUSED.items()}}[case])
    scripts = _printed(capsys, dialect)
    run = (lambda: _run_duckdb(path, scripts)) if dialect == "duckdb" else (
        lambda: _run_postgres(request.getfixturevalue("pg_dsn"), path, scripts))
    if case in CLEANED:
        want = _evaluate(capsys, path, data_dir)
        assert_rows_match(run(), want, tol=1e-12)
        return
    _, where, message = REFUSED[case]
    with pytest.raises(duckdb.InvalidInputException) as raised:
        run()
    assert f"hiersql: {where}" in str(raised.value) and f": {message}: " in str(raised.value), str(raised.value)


@pytest.mark.postgres
def test_printed_sql_takes_the_ignore_options(installed_file, tmp_path, capsys, pg_dsn):
    """``--unknown ignore --no-truth ignore``: the printed PostgreSQL script gives evaluate's values with both."""
    path = _dirty(installed_file, tmp_path, f"{REFUSED['lower_labels'][0]}; {REFUSED['id_not_in_truth'][0]}")
    with pytest.warns(match="ignored"):
        store = _load(path, unknown="ignore", no_truth="ignore")
    want = reference(store, [*REGISTRY["set_based"], *REGISTRY["flat"]], Options())
    got = _run_postgres(pg_dsn, path, _printed(capsys, "postgres", "--unknown", "ignore", "--no-truth", "ignore"))
    assert_rows_match(got, want, tol=1e-12)


def test_the_docs_table_is_the_declaration():
    """docs/sql.md lists the rules as hiersql.inputs.rules declares them (generated by rules_table)."""
    from tests.conftest import ROOT

    assert input_rules.rules_table() in (ROOT / "docs" / "sql.md").read_text(encoding="utf-8")


@pytest.mark.postgres
def test_printed_postgres_sql_on_a_database_whose_text_order_is_not_bytes(germeval_file, pg_dsn, capsys, tmp_path):
    """hiersql's tables of the file in a database of ICU's ``en-US`` collation (``'a' < 'B'``; DuckDB orders
    text by its bytes), as plain ``text`` columns: the printed flat script gives evaluate's very values. Its views
    of the input tables sort the ids and labels in byte order (``EngineDialect.text_collation``); in the
    database's order, the macro averages added the per-class values otherwise and ended in other digits."""
    import psycopg
    from psycopg import sql

    from tests.test_sources_postgres import icu_database

    params = icu_database(pg_dsn, "hiersql_printed_icu")
    types = {"VARCHAR": "text", "BIGINT": "bigint", "INTEGER": "integer", "DOUBLE": "double precision",
             "BOOLEAN": "boolean"}
    with duckdb.connect(str(germeval_file), read_only=True) as source, psycopg.connect(**params) as con:
        for table in ("truth", "predictions", "instances", "systems", "nodes", "edges", "closure"):
            rel = source.table(table)
            con.execute(sql.SQL("CREATE TABLE {} ({})").format(sql.Identifier(table), sql.SQL(", ").join(
                sql.SQL("{} " + types[str(t)]).format(sql.Identifier(c)) for c, t in zip(rel.columns, rel.types,
                                                                                           strict=True))))
            with con.cursor() as cur, cur.copy(sql.SQL("COPY {} FROM STDIN").format(sql.Identifier(table))) as copy:
                for row in rel.fetchall():
                    copy.write_row(row)
    assert main(["sql", "flat", "--dialect", "postgres"]) == 0
    script = capsys.readouterr().out
    with psycopg.connect(**params) as con, con.cursor() as cur:
        cur.execute(script)
        while cur.nextset():
            pass
        got = {(s, m, a): float(v) for s, m, a, v in cur.fetchall()}
    shutil.copy(germeval_file, tmp_path / "copy.duckdb")
    store = Store(tmp_path / "copy.duckdb")
    want = {(r.system, r.metric, r.average): r.value for r in reference(store, list(REGISTRY["flat"]), Options())}
    store.close()
    assert len(want) == 2 * 14 and got == want
