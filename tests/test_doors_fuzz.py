"""One contract, every door, by a property-based fuzzer (hypothesis): random dirty tables of a user's DuckDB file
(spaces around ids and labels, repeated labels with other scores and ranks, unknown labels, scores and ranks
written as text such as ``'10'`` against ``'9'``, missing scores, a system without scores, a rank column or none)
give, through the SQL door (the installed macros, the printed DuckDB and PostgreSQL SQL), the numbers ``hiersql
evaluate`` gives over the same tables (``--rank-col rank`` where the tables rank their labels), or every door
refuses them. The measures are those the SQL door has: set-based, flat, severity (k = 1) and the scoring-tree
family, which read the order of the labels. Each test runs on a tree and on a DAG (a node with two parents, under
both of the root's children), where the scoring-tree family does not apply."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import NamedTuple

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hiersql.cli import main
from tests.test_fuzz_inputs import run

TREE = "r\ta\nr\tb\na\ta1\na\ta2\nb\tb1\nb\tb2\nb1\tb11\n"
# the taxonomies, and the families of each: hiersql_<family> is a macro; scoring trees must be trees
TAXONOMIES = {"tree": (TREE, ("set_based", "flat", "severity", "scoring")),
              "dag": (TREE + "a2\tb11\n", ("set_based", "flat", "severity"))}
LABELS = ["a", "b", "a1", "a2", "b1", "b2", "b11"]
SCORES = ["0.5", "0.9", "10", "9", " 1e0 ", "0.25", "-inf", None]
RANKS = ["1", "2", "10", "9", "2.0", " 3 "]


@st.composite
def tables(draw):
    """Rows of ``gold (instance_id, label, rank)`` and ``runs (system, instance_id, label, rank, score)``, text
    columns; whether the rank column holds ranks (else it is NULL in every row); and the unknown option."""
    ranked = draw(st.booleans())
    spaced = st.sampled_from(["{}", "{}", "{}", " {}", "{} "])
    label = st.sampled_from([*LABELS, *LABELS, "zz"])  # zz: no node
    n = draw(st.integers(1, 4))
    gold = [(draw(spaced).format(f"i{i}"), draw(spaced).format(truth), str(j + 1) if ranked else None)
            for i in range(n) for j, truth in enumerate(draw(st.lists(st.sampled_from(LABELS), min_size=1,
                                                                      max_size=2, unique=True)))]
    runs = [(system, draw(spaced).format(f"i{i}"), draw(spaced).format(draw(label)),
             draw(st.sampled_from(RANKS)) if ranked else None,
             draw(st.sampled_from(SCORES)) if system == "m" else None)
            for system in ("m", "h") for i in range(n) for _ in range(draw(st.integers(0, 3)))]
    return gold, runs, ranked, draw(st.sampled_from(["error", "ignore"]))


TABLES = ["--table", "truth=gold", "--table", "predictions=runs"]


@pytest.fixture(scope="module")
def scripts() -> dict[tuple[str, str], dict[str, str]]:
    """The printed DuckDB and PostgreSQL scripts of every family for each unknown option (they read the
    taxonomy's tables of the database they run in: one script serves every taxonomy)."""
    printed: dict[tuple[str, str], dict[str, str]] = {}
    for dialect in ("duckdb", "postgres"):
        for unknown in ("error", "ignore"):
            for family in TAXONOMIES["tree"][1]:
                k = ["--k", "1"] if family == "severity" else []
                code, out, err = run("sql", family, "--dialect", dialect, *k, "--unknown", unknown, *TABLES)
                assert code == 0, err
                printed.setdefault((dialect, unknown), {})[family] = out
    return printed


@pytest.fixture(scope="module", params=sorted(TAXONOMIES))
def door(request, scripts, tmp_path_factory):
    """A DuckDB file with the user's empty tables ``gold`` and ``runs``, a hand taxonomy and the macros over the
    tables, and the printed scripts of the taxonomy's families."""
    text, families = TAXONOMIES[request.param]
    tmp = tmp_path_factory.mktemp("doors")
    (tmp / "tax.tsv").write_text(text)
    path = tmp / "user.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE gold (instance_id VARCHAR, label VARCHAR, rank VARCHAR)")
        con.execute("CREATE TABLE runs (system VARCHAR, instance_id VARCHAR, label VARCHAR, rank VARCHAR,"
                    " score VARCHAR)")
    assert main(["install-macros", "--db", str(path), "--taxonomy", str(tmp / "tax.tsv"), *TABLES]) == 0
    return Door(path, families, {key: {f: by_family[f] for f in families} for key, by_family in scripts.items()})


class Door(NamedTuple):
    path: Path
    families: tuple[str, ...]
    scripts: dict[tuple[str, str], dict[str, str]]

    def __repr__(self) -> str:  # hypothesis prints the arguments of a failing example
        return f"Door({self.path})"


def _fill(path, case) -> None:
    gold, runs, _, _ = case
    with duckdb.connect(str(path)) as con:
        con.execute("DELETE FROM gold; DELETE FROM runs; DELETE FROM instances; DELETE FROM systems")
        con.executemany("INSERT INTO gold VALUES (?, ?, ?)", gold)
        if runs:
            con.executemany("INSERT INTO runs VALUES (?, ?, ?, ?, ?)", runs)
        con.execute("INSERT INTO instances SELECT DISTINCT instance_id FROM gold")
        con.execute("INSERT INTO systems SELECT DISTINCT system, NULL FROM runs")


def _evaluated(door, case) -> dict[tuple[str, str, str], float | None] | None:
    """``hiersql evaluate``'s rows over the tables (None: refused, exit 2 and one line)."""
    path, families, _ = door
    _, _, ranked, unknown = case
    code, out, err = run("evaluate", "--taxonomy", str(path.parent / "tax.tsv"), "--truth", f"duckdb:{path}::gold",
                         "--pred", f"duckdb:{path}::runs", *(["--rank-col", "rank"] if ranked else []),
                         "--unknown", unknown, "--metrics", ",".join(families), "--k", "1", "--format", "csv")
    if code == 2:  # one line says why (warnings may come before it)
        assert [line for line in err.splitlines() if line.startswith("hiersql: error: ")] == [err.splitlines()[-1]], err
        return None
    assert code == 0, err
    return {(s, m, a): float(v) if v else None for s, m, a, v in list(csv.reader(io.StringIO(out)))[1:]}


def _keyed(rows: dict[str, list[tuple]]) -> dict[tuple[str, str, str], float | None]:
    """Rows ``(system, metric, average, value)`` of each family keyed as evaluate's (the severity family's one k
    has average ``''`` in the SQL door)."""
    return {(s, m, "@1" if family == "severity" else a): None if v is None else float(v)
            for family, got in rows.items() for s, m, a, v in got}


def _same(got: dict, want: dict) -> None:
    """Every row of evaluate's with its value; the SQL door's other rows are NULL (its scoring family lists the
    measures of confusion-matrix counts too, which do not apply to label sets and which evaluate leaves out)."""
    assert want.keys() <= got.keys(), sorted(want.keys() - got.keys())
    assert all(got[key] is None for key in got.keys() - want.keys()), {k: got[k] for k in got.keys() - want.keys()}
    for key, value in want.items():
        other = got[key]
        assert (value is None) == (other is None), (key, value, other)
        if value is not None:
            assert (math.isnan(value) and math.isnan(other)) or abs(value - other) <= 1e-12, (key, value, other)


@settings(derandomize=True, max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=tables())
def test_the_macros_and_the_printed_duckdb_sql_give_evaluates_numbers(door, case):
    path, families, scripts = door
    _fill(path, case)
    want = _evaluated(door, case)
    unknown = case[3]
    with duckdb.connect(str(path)) as con:
        doors = {"macros": lambda: {f: con.execute(f"SELECT * FROM hiersql_{f}(unknown := $unknown)",
                                                   {"unknown": unknown}).fetchall() for f in families},
                 "printed": lambda: {f: con.execute(s).fetchall() for f, s in scripts["duckdb", unknown].items()}}
        for rows in doors.values():
            if want is None:
                with pytest.raises(duckdb.InvalidInputException, match="hiersql: "):
                    rows()
                continue
            _same(_keyed(rows()), want)


@pytest.mark.postgres
@settings(derandomize=True, max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=tables())
def test_the_printed_postgres_sql_gives_evaluates_numbers(door, pg_dsn, case):
    import psycopg

    from tests.test_sql_checks import POSTGRES_TABLES, postgres_with

    path, _, scripts = door
    _fill(path, case)
    want = _evaluated(door, case)
    engine = postgres_with(pg_dsn, path, (*POSTGRES_TABLES, "pair_counts"))  # the scoring family reads it
    try:
        got = {}
        for family, script in scripts["postgres", case[3]].items():
            with engine.conn.cursor() as cur:
                try:
                    cur.execute(script)  # psql's way: statement after statement
                    while cur.nextset():
                        pass
                    got[family] = cur.fetchall()
                except psycopg.Error as exc:  # the check query's failed cast quotes the first fault
                    assert want is None and "hiersql: " in str(exc), str(exc)
                    got[family] = None
                    engine.conn.rollback()
    finally:
        engine.close()
    if want is None:
        assert all(rows is None for rows in got.values()), got
        return
    _same(_keyed(got), want)


@pytest.mark.postgres
@settings(derandomize=True, max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=tables())
def test_postgresql_in_place_gives_evaluates_bytes(door, pg_dsn, case):
    """The same tables in a PostgreSQL database (text columns), read and evaluated in place (``--engine
    postgres``): the bytes of the default DuckDB engine over the DuckDB file's tables, or both exit 2."""
    import psycopg

    from tests.test_sources_postgres import create, uri

    path = door.path
    _fill(path, case)
    gold, runs, ranked, unknown = case
    with psycopg.connect(pg_dsn, autocommit=True) as con:
        con.execute("DROP SCHEMA IF EXISTS doors CASCADE")
        con.execute("CREATE SCHEMA doors")
        create(con, "gold", ["instance_id", "label", "rank"], gold, "doors")
        create(con, "runs", ["system", "instance_id", "label", "rank", "score"], runs, "doors")
    base = uri(pg_dsn, psycopg.conninfo.conninfo_to_dict(pg_dsn)["dbname"])
    common = ["--taxonomy", str(path.parent / "tax.tsv"), *(["--rank-col", "rank"] if ranked else []), "--unknown",
              unknown, "--metrics", ",".join(door.families), "--k", "1", "--format", "csv"]
    here = run("evaluate", "--truth", f"duckdb:{path}::gold", "--pred", f"duckdb:{path}::runs", *common)
    there = run("evaluate", "--truth", f"{base}::doors.gold", "--pred", f"{base}::doors.runs", *common,
                "--engine", "postgres", "--postgres-url", base)
    assert there[0] == here[0] and there[1] == here[1], (here, there)
    assert here[0] == 0 or there[2].count("\n") == 1, there[2]
