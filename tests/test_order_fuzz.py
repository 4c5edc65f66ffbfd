"""Same input, same output, byte for byte, whatever the physical order of a table's rows, by a property-based
fuzzer (hypothesis): a random taxonomy (a tree or a DAG), truth and two systems' predictions (one scored, with
ties) as tables of a DuckDB file, written once in one order and once in another, give ``hiersql evaluate
--metrics all`` the same stdout and stderr, every family included: the solvers' choices among equal pairings,
minimal graphs and matchings depend on the rows, never on the order they are stored in. The same tables in a
PostgreSQL database, evaluated there (``--engine postgres``: every family, the Python steps' inputs read from
the server), print the bytes of the DuckDB run. So do the other commands that read tables: ``compare``, every
``breakdown`` and both confusion matrices in either order; ``compare`` and every ``breakdown`` in place too."""

from __future__ import annotations

import random
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hiersql.cli.breakdown import BY
from tests.test_fuzz_inputs import run
from tests.test_oneshot_fuzz import taxonomies

SCORES = [0.1, 0.5, 0.5, 0.9]  # ties occur
OPTIONS = [[], ["--lca-graph", "greedy"], ["--lca-graph", "hemkit"], ["--lca-graph", "extended"],
           ["--k", "2", "--pairing", "flow"], ["--augment", "descendants", "--lca-graph", "optimal"]]
# the commands besides evaluate that read the tables, each with the options it takes
COMMANDS = [["compare", "--metrics", "hf,lca_f1,mgia,hcm_f1,label_f1", "--bootstrap", "50", "--seed", "3",
             "--test", "permutation"], ["compare", "--metrics", "all", "--test", "wilcoxon"],
            ["confusion", "--kind", "hierarchical"], ["confusion", "--kind", "multilabel"],
            *(["breakdown", "--by", by] for by in BY)]


@st.composite
def cases(draw):
    """Edges, rows of ``truth (instance_id, label)`` and ``runs (system, instance_id, label, score)``, the options
    and a seed for the second order."""
    edges, labels = draw(taxonomies())
    n = draw(st.integers(1, 5))
    truth = [(f"i{i}", label) for i in range(n)
             for label in draw(st.lists(st.sampled_from(labels), min_size=1, max_size=2, unique=True))]
    runs = [(system, f"i{i}", label, draw(st.sampled_from(SCORES)) if system == "s" else None)
            for system in ("h", "s") for i in range(n)
            for label in draw(st.lists(st.sampled_from(labels), max_size=3, unique=True))]
    return edges, truth, runs, draw(st.sampled_from(OPTIONS)), draw(st.integers(0, 2**32 - 1))


def _write(path: Path, edges: list, truth: list, runs: list) -> None:
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE tax (parent VARCHAR, child VARCHAR)")
        con.execute("CREATE TABLE truth (instance_id VARCHAR, label VARCHAR)")
        con.execute("CREATE TABLE runs (system VARCHAR, instance_id VARCHAR, label VARCHAR, score DOUBLE)")
        con.executemany("INSERT INTO tax VALUES (?, ?)", edges)
        con.executemany("INSERT INTO truth VALUES (?, ?)", truth)
        if runs:
            con.executemany("INSERT INTO runs VALUES (?, ?, ?, ?)", runs)


def _two_systems(case: tuple) -> tuple:
    """The case with a row of each system at least (of the first true row's instance and label): compare needs
    two systems."""
    edges, truth, runs, options, seed = case
    for system in ("h", "s"):
        if not any(row[0] == system for row in runs):
            runs = [*runs, (system, *truth[0], SCORES[0] if system == "s" else None)]
    return edges, truth, runs, options, seed


def _in_two_orders(case: tuple, command: list[str], tmp_path_factory: pytest.TempPathFactory) -> list[tuple]:
    """``hiersql COMMAND`` (csv) on the case's tables as given and shuffled: exit status, stdout and stderr."""
    edges, truth, runs, _, seed = case
    rng = random.Random(seed)
    outputs = []
    for order in ("given", "shuffled"):
        folder = tmp_path_factory.mktemp(order)
        if order == "shuffled":
            edges, truth, runs = (rng.sample(rows, len(rows)) for rows in (edges, truth, runs))
        _write(folder / "user.duckdb", edges, truth, runs)
        db = f"duckdb:{folder / 'user.duckdb'}"
        code, out, err = run(command[0], "--taxonomy", f"{db}::tax", "--truth", f"{db}::truth", "--pred",
                             f"{db}::runs", *command[1:], "--format", "csv")
        outputs.append((code, out, err.replace(str(folder), "FOLDER")))  # messages name the file
    return outputs


@settings(derandomize=True, max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_every_family_prints_the_same_bytes_whatever_the_order_of_the_rows(case, tmp_path_factory):
    outputs = _in_two_orders(case, ["evaluate", *case[3], "--metrics", "all"], tmp_path_factory)
    assert outputs[0][0] in (0, 2), outputs[0]
    assert outputs[1] == outputs[0]


@settings(derandomize=True, max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(), command=st.sampled_from(COMMANDS))
def test_every_command_prints_the_same_bytes_whatever_the_order_of_the_rows(case, command, tmp_path_factory):
    outputs = _in_two_orders(_two_systems(case), command, tmp_path_factory)
    assert outputs[0][0] in (0, 2), outputs[0]
    assert outputs[1] == outputs[0]


def _here_and_in_place(case: tuple, command: list[str], pg_dsn: str, folder: Path) -> tuple[tuple, tuple]:
    """``hiersql COMMAND`` (csv) on the case's tables in a DuckDB file, and on the same tables in a PostgreSQL
    schema read in place (``--engine postgres``, text columns): exit status, stdout and stderr of each."""
    import psycopg

    from tests.test_sources_postgres import create, uri

    edges, truth, runs, _, _ = case
    (folder / "tax.tsv").write_text("".join(f"{parent}\t{child}\n" for parent, child in edges))
    _write(folder / "user.duckdb", edges, truth, runs)
    with psycopg.connect(pg_dsn, autocommit=True) as con:
        con.execute("DROP SCHEMA IF EXISTS orders CASCADE")
        con.execute("CREATE SCHEMA orders")
        create(con, "truth", ["instance_id", "label"], truth, "orders")
        create(con, "runs", ["system", "instance_id", "label", "score"],
                [(s, i, label, None if score is None else repr(score)) for s, i, label, score in runs], "orders")
    base = uri(pg_dsn, psycopg.conninfo.conninfo_to_dict(pg_dsn)["dbname"])
    common = ["--taxonomy", str(folder / "tax.tsv"), *command[1:], "--format", "csv"]
    db = f"duckdb:{folder / 'user.duckdb'}"
    here = run(command[0], "--truth", f"{db}::truth", "--pred", f"{db}::runs", *common)
    there = run(command[0], "--truth", f"{base}::orders.truth", "--pred", f"{base}::orders.runs", *common,
                "--engine", "postgres", "--postgres-url", base)
    return here, there


@pytest.mark.postgres
@settings(derandomize=True, max_examples=4, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_postgresql_in_place_prints_the_bytes_of_duckdb_for_every_family(case, pg_dsn, tmp_path_factory):
    here, there = _here_and_in_place(case, ["evaluate", *case[3], "--metrics", "all"], pg_dsn,
                                     tmp_path_factory.mktemp("in_place"))
    assert here[0] in (0, 2), here
    assert there[:2] == here[:2], (here, there)


@pytest.mark.postgres
@settings(derandomize=True, max_examples=3, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=cases(), command=st.sampled_from([c for c in COMMANDS if c[0] != "confusion"]))
def test_postgresql_in_place_prints_the_bytes_of_duckdb_for_compare_and_every_breakdown(case, command, pg_dsn,
                                                                                        tmp_path_factory):
    """``confusion`` has no ``--engine``: it reads its tables into the store."""
    here, there = _here_and_in_place(_two_systems(case), command, pg_dsn, tmp_path_factory.mktemp("in_place"))
    assert here[0] in (0, 2), here
    assert there[:2] == here[:2], (here, there)
