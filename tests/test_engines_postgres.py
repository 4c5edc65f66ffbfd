"""The SQL measures on a real PostgreSQL server equal DuckDB's.

The ``pg_dsn`` fixture (``tests/conftest.py``) starts a throwaway cluster (``initdb`` + ``pg_ctl``) in a
temporary folder, listening on a Unix socket only, and removes it afterwards. Set ``HIERSQL_PG_DSN`` to use a
running server instead. As root the server runs as the ``postgres`` user (PostgreSQL refuses to run as root).
Without the server binaries (Debian: ``apt-get install -y postgresql``) the tests fail with that message: they
must run in CI.
"""

from __future__ import annotations

import pytest

from hiersql.engines import PostgresEngine
from hiersql.measures import Options, compute
from tests._engine_cases import (
    GERMEVAL_CASES,
    HAND_EXPECTED,
    OPTION_CASES,
    SET_BASED,
    assert_dag_case,
    assert_hand_values,
    assert_rows_match,
    dag_store,
    germeval_store,
    hand_store,
    reference,
    sql_metrics,
)

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg(pg_dsn):
    engine = PostgresEngine(pg_dsn)
    engine.execute("DROP SCHEMA IF EXISTS public CASCADE")
    engine.execute("DROP SCHEMA IF EXISTS dw CASCADE")
    engine.execute("CREATE SCHEMA public")
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def germeval(data_dir):
    return germeval_store(data_dir)


def test_server_is_postgres(pg):
    assert "PostgreSQL" in pg.execute("SELECT version()")[0][0]


@pytest.mark.parametrize("case", GERMEVAL_CASES)
def test_germeval_b_sample_equals_duckdb(pg, germeval, case):
    options = OPTION_CASES[case]
    pg.copy_store(germeval)
    metrics = sql_metrics()
    rows = compute(pg, metrics, options)
    assert {r.system for r in rows} == set(germeval.systems())
    assert_rows_match(rows, reference(germeval, metrics, options))


def test_extended_lca_graphs_on_a_dag_equal_duckdb(pg):
    """The extended LCA graphs on the DAG (the minimal ones: tests/test_engines.py)."""
    pg.copy_store(dag_store())
    assert_dag_case(pg, Options(lca_graph="extended"))


def test_closure_by_recursive_cte_on_postgres(pg, germeval):
    """``closure.sql`` (WITH RECURSIVE ... UNION) computed by PostgreSQL from edges and nodes."""
    pg.copy_store(germeval, tables=("edges", "nodes"))
    pg.build_closure()
    got = sorted(pg.execute("SELECT ancestor, descendant, distance FROM closure"))
    want = sorted(germeval.con.execute("SELECT ancestor, descendant, distance FROM closure").fetchall())
    assert got == want
    assert len(got) > 343  # every node, its ancestors and the virtual root


def test_warehouse_tables_under_other_names(pg):
    """The user's tables in another schema, with other names: copied there once, then read by rename."""
    store = hand_store()
    pg.execute("CREATE SCHEMA dw")
    names = {t: f"dw.hs_{t}" for t in ("edges", "nodes", "instances", "truth", "predictions", "systems")}
    loader = PostgresEngine(pg.conn, tables=names)
    loader.copy_store(store, tables=names)
    user = PostgresEngine(pg.conn, tables={**names, "closure": "dw.hs_closure"})
    user.build_closure()
    assert pg.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'") == [(0,)]
    assert_hand_values(compute(user, SET_BASED))


def _last_rows(pg, script: str) -> list[tuple]:
    """Run a printed script whole, as psql does (the input rules' check query and views first: docs/sql.md);
    the rows of its last statement."""
    with pg.conn.cursor() as cur:
        cur.execute(script)
        while cur.nextset():
            pass
        return cur.fetchall()


def test_printed_sql_runs_on_warehouse_tables(pg, capsys):
    """``hiersql sql hf --dialect postgres --table ...`` pasted into PostgreSQL over the user's tables."""
    from hiersql.cli import main

    names = {t: f"dw.gold_{t}" for t in ("edges", "nodes", "closure", "instances", "truth", "predictions",
                                          "systems")}
    pg.execute("CREATE SCHEMA dw")
    PostgresEngine(pg.conn, tables=names).copy_store(hand_store(), tables=names)
    args = ["sql", "hf", "--dialect", "postgres", *[f"--table={k}={v}" for k, v in names.items()]]
    assert main(args) == 0
    rows = _last_rows(pg, capsys.readouterr().out)
    want = {k: v for k, v in HAND_EXPECTED.items() if k[1] == "hierarchical_f1"}
    assert {(s, m, a): pytest.approx(float(v), abs=1e-12) for s, m, a, v in rows} == want


def test_evaluate_command_computes_in_postgres(pg_dsn, data_dir, capsys):
    """``hiersql evaluate --engine postgres --postgres-url DSN``: the inputs uploaded as temporary tables, the
    same rows as the embedded DuckDB run; nothing is left in the server's schemas."""
    from tests._engine_cases import cli_rows

    canonical = data_dir / "canonical"
    args = ["--taxonomy", str(canonical / "taxonomy.tsv"), "--truth", str(canonical / "truth_b.tsv"),
            "--pred", str(canonical / "pred_b" / "LT-UHH__baseline.tsv"), "--metrics", "hp,hf,gie,mgia,lca_f,hcm_f1"]
    want = cli_rows(capsys, args)
    got = cli_rows(capsys, [*args, "--engine", "postgres", "--postgres-url", pg_dsn])
    assert_rows_match(got, want)
    check = PostgresEngine(pg_dsn)
    try:
        assert check.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
                             " AND table_name IN ('truth', 'predictions', 'closure', 'set_based_instance')") == [(0,)]
    finally:
        check.close()


def test_the_users_tables_of_hiersql_s_names_are_left_alone(pg, pg_dsn, data_dir, capsys):
    """Tables of the user's named as hiersql's inputs and stages (``public.truth``, ``public.systems``,
    ``public.label_pairs``, ...) keep their rows through an ``--engine postgres`` run: the engine replaces its
    own temporary tables only (an unqualified ``DROP TABLE IF EXISTS truth`` found the user's table on the
    search path and dropped it), and its values are those of the embedded run."""
    from tests._engine_cases import cli_rows

    names = ["truth", "predictions", "systems", "nodes", "closure", "pair_counts", "flat_labels", "label_pairs",
             "set_based_instance", "lca_instance", "hcm_instance"]
    for name in names:
        pg.execute(f"CREATE TABLE public.{name} (mine text)")
        pg.execute(f"INSERT INTO public.{name} VALUES ('keep me')")
    canonical = data_dir / "canonical"
    args = ["--taxonomy", str(canonical / "taxonomy.tsv"), "--truth", str(canonical / "truth_b.tsv"),
            "--pred", str(canonical / "pred_b" / "LT-UHH__baseline.tsv"), "--metrics", "hf,example_f1,gie,lca_f,hcm_f1"]
    want = cli_rows(capsys, args)
    assert_rows_match(cli_rows(capsys, [*args, "--engine", "postgres", "--postgres-url", pg_dsn]), want)
    for name in names:
        assert pg.execute(f"SELECT * FROM public.{name}") == [("keep me",)], name


def test_evaluate_command_names_a_bad_server(capsys):
    from hiersql.cli import main

    code = main(["evaluate", "--taxonomy", "t.tsv", "--truth", "y.tsv", "--pred", "p.tsv", "--engine", "postgres",
                 "--postgres-url", "host=/nonexistent port=1 user=nobody dbname=none"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1
    assert "--postgres-url: cannot connect" in err and "/nonexistent" in err


@pytest.mark.parametrize(("url", "says"), [
    ("notaurl", 'missing "=" after "notaurl"'),
    ("postgresql://postgres@host with space/x", 'unexpected spaces found in "host with space"'),
])
def test_evaluate_command_names_a_malformed_server_url(capsys, url, says):
    from hiersql.cli import main

    code = main(["evaluate", "--taxonomy", "t.tsv", "--truth", "y.tsv", "--pred", "p.tsv", "--engine", "postgres",
                 "--postgres-url", url])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1
    assert err.startswith("hiersql: error: --postgres-url: cannot connect: ") and says in err
    assert err.endswith(f": '{url}'\n")


def test_printed_script_analyses_each_stage(pg, capsys):
    """``hiersql sql hcm_f1 --dialect postgres``: each stage is analysed after it is made, as the PostgreSQL
    runner does (without statistics PostgreSQL planned hcm_set_labels over GermEval B for 334 s instead of
    19 ms); the stages before the first Python step run as printed."""
    from hiersql.cli import main

    assert main(["sql", "hcm_f1", "--dialect", "postgres"]) == 0
    script = capsys.readouterr().out
    blocks = [b for b in script.split("\n\n") if b.startswith("CREATE TEMPORARY TABLE")]
    assert len(blocks) == script.count("CREATE TEMPORARY TABLE") > 5
    for block in blocks:
        name = block.split()[3]
        assert block.rstrip().endswith(f";\nANALYZE {name};"), name
    PostgresEngine(pg.conn).copy_store(hand_store())
    first = script[:script.index("-- Python step")]
    pg.execute(first)
    assert pg.execute("SELECT count(*) FROM hcm_set_labels")[0][0] > 0


def test_printed_lca_script_needs_its_step_and_extended_graphs_run_whole(pg, capsys):
    """``hiersql sql lca_f1``: with the default greedy graphs the script leaves ``lca_open_counts`` to the
    Python step, so PostgreSQL stops at the statement that reads it (it gave the extended graphs' values,
    labelled lca_f1, when run without the step); ``--lca-graph extended`` prints one query with no step, whose
    rows are the extended graphs' values of the DuckDB runner."""
    import psycopg

    from hiersql.cli import main

    store = hand_store()
    PostgresEngine(pg.conn).copy_store(store)
    assert main(["sql", "lca_f1", "--dialect", "postgres"]) == 0
    script = capsys.readouterr().out
    assert "-- Python step minimal_graphs" in script and "CREATE TEMPORARY TABLE lca_open_counts" not in script
    with pytest.raises(psycopg.errors.UndefinedTable, match="lca_open_counts"):
        pg.execute(script)
    assert main(["sql", "lca_f1", "--dialect", "postgres", "--lca-graph", "extended"]) == 0
    script = capsys.readouterr().out
    assert "Python step" not in script and script.split("\n\n")[-1].count(";") == 1  # one query after the checks
    rows = _last_rows(pg, script)
    want = reference(store, ["lca_f1"], Options(lca_graph="extended"))
    assert {(s, m, a): pytest.approx(v, abs=1e-12) for s, m, a, v in rows} == {r[:3]: r[3] for r in want}



def test_hcm_with_an_instance_without_truth_equals_duckdb(pg_dsn, tmp_path, capsys):
    """An instance whose true set is empty (a blank line): ``hcm_pt``'s TPR is undefined there, and its
    denominator divides by TP + FN; the undefined case is tested before it, so PostgreSQL does not divide by
    zero (it evaluated ``OR``'s other side first: an internal error)."""
    from tests._engine_cases import cli_rows

    (tmp_path / "tax.tsv").write_text("root\ta\nroot\tb\na\ta1\nb\tb1\n")
    (tmp_path / "truth.txt").write_text("a1\n\nb1\n")
    (tmp_path / "pred.txt").write_text("a1\nb\nb1\n")
    args = ["--taxonomy", str(tmp_path / "tax.tsv"), "--truth", str(tmp_path / "truth.txt"),
            "--pred", f"S={tmp_path / 'pred.txt'}", "--labels-format", "lines", "--metrics", "hcm"]
    want = cli_rows(capsys, args)
    assert len(want) == 22
    assert_rows_match(cli_rows(capsys, [*args, "--engine", "postgres", "--postgres-url", pg_dsn]), want)


def test_a_role_without_the_temporary_privilege_is_one_line(pg, pg_dsn, capsys, data_dir):
    """A role that may not create temporary tables (where the engine keeps its stages) is told so, exit 2,
    naming the role, the database and the flag; not an internal error half-way through the run."""
    from hiersql.cli import main

    pg.execute("DROP DATABASE IF EXISTS no_temp")
    pg.execute("DROP ROLE IF EXISTS analyst")
    pg.execute("CREATE ROLE analyst LOGIN")
    pg.execute("CREATE DATABASE no_temp")
    pg.execute("REVOKE TEMPORARY ON DATABASE no_temp FROM PUBLIC")
    dsn = pg_dsn.replace("user=hiersql", "user=analyst").replace("dbname=postgres", "dbname=no_temp")
    canonical = data_dir / "canonical"
    try:
        code = main(["evaluate", "--taxonomy", str(canonical / "taxonomy.tsv"), "--truth",
                     str(canonical / "truth_a.tsv"), "--pred", str(canonical / "pred_a" / "Averbis*"),
                     "--engine", "postgres", "--postgres-url", dsn])
        err = capsys.readouterr().err
        assert code == 2 and len(err.splitlines()) == 1, err
        assert err.startswith("hiersql: error: --postgres-url: role 'analyst' may not create temporary tables in"
                              " database 'no_temp'") and err.endswith(f": '{dsn}'\n")
    finally:
        pg.execute("DROP DATABASE no_temp")
        pg.execute("DROP ROLE analyst")
