"""Same input, same output, byte for byte, whatever the physical order of a table's rows, by a property-based
fuzzer (hypothesis): a random taxonomy (a tree or a DAG), truth and two systems' predictions (one scored, with
ties) as tables of a DuckDB file, written once in one order and once in another, give ``hiersql evaluate
--metrics all`` the same stdout and stderr, every family included: the solvers' choices among equal pairings,
minimal graphs and matchings depend on the rows, never on the order they are stored in. The same tables in a
PostgreSQL database, evaluated there (``--engine postgres``: every family, the Python steps' inputs read from
the server), print the bytes of the DuckDB run, its messages too. So do the other commands that read tables:
``compare``, every ``breakdown`` and both confusion matrices in either order; ``compare`` and every ``breakdown``
in place too. Half the cases are dirty: of several bad rows, every door names the same one, in either order
(``hiersql.inputs.tables.FAULT_ORDER``)."""

from __future__ import annotations

import math
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
DIRT = ["zz", "yy", "", None]  # labels not in the taxonomy, an empty one, a missing one
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
    of evaluate, a seed for the second order and the input flags. Half the cases are dirty: their predictions
    hold labels not in the taxonomy, empty and missing labels, missing instances and scores that are not
    numbers (a quarter of them missing systems too, NULL or empty), each perhaps several times, of which an error
    (or, with ``--unknown ignore``, a warning) names one."""
    edges, labels = draw(taxonomies())
    n = draw(st.integers(1, 5))
    truth = [(f"i{i}", label) for i in range(n)
             for label in draw(st.lists(st.sampled_from(labels), min_size=1, max_size=2, unique=True))]
    dirty = draw(st.booleans())
    names = st.sampled_from(labels + DIRT if dirty else labels)
    scores = st.sampled_from([*SCORES, math.nan] if dirty else SCORES)
    # a quarter of the dirty cases write some rows' system as NULL or empty
    missing = dirty and draw(st.booleans()) and draw(st.booleans())
    runs = [(draw(st.sampled_from([system, system, None, ""])) if missing else system,
             draw(st.sampled_from([f"i{i}", f"i{i}", None])) if dirty else f"i{i}", label,
             draw(scores) if system == "s" else None)
            for system in ("h", "s") for i in range(n) for label in draw(st.lists(names, max_size=3, unique=True))]
    flags = ["--unknown", "ignore"] if dirty and draw(st.booleans()) else []
    return edges, truth, runs, draw(st.sampled_from(OPTIONS)), draw(st.integers(0, 2**32 - 1)), flags


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
    edges, truth, runs, *rest = case
    for system in ("h", "s"):
        if not any(row[0] == system for row in runs):
            runs = [*runs, (system, *truth[0], SCORES[0] if system == "s" else None)]
    return edges, truth, runs, *rest


def _in_two_orders(case: tuple, command: list[str], tmp_path_factory: pytest.TempPathFactory) -> list[tuple]:
    """``hiersql COMMAND`` (csv) on the case's tables as given and shuffled: exit status, stdout and stderr."""
    edges, truth, runs, _, seed, flags = case
    rng = random.Random(seed)
    outputs = []
    for order in ("given", "shuffled"):
        folder = tmp_path_factory.mktemp(order)
        if order == "shuffled":
            edges, truth, runs = (rng.sample(rows, len(rows)) for rows in (edges, truth, runs))
        _write(folder / "user.duckdb", edges, truth, runs)
        db = f"duckdb:{folder / 'user.duckdb'}"
        code, out, err = run(command[0], "--taxonomy", f"{db}::tax", "--truth", f"{db}::truth", "--pred",
                             f"{db}::runs", *command[1:], *flags, "--format", "csv")
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
    schema read in place (``--engine postgres``, text columns): exit status, stdout and stderr of each, the
    tables' names in messages as ``SOURCE::truth`` and ``SOURCE::runs``."""
    import psycopg

    from tests.test_sources_postgres import create, uri

    edges, truth, runs, _, _, flags = case
    (folder / "tax.tsv").write_text("".join(f"{parent}\t{child}\n" for parent, child in edges))
    _write(folder / "user.duckdb", edges, truth, runs)
    with psycopg.connect(pg_dsn, autocommit=True) as con:
        con.execute("DROP SCHEMA IF EXISTS orders CASCADE")
        con.execute("CREATE SCHEMA orders")
        create(con, "truth", ["instance_id", "label"], truth, "orders")
        create(con, "runs", ["system", "instance_id", "label", "score"],
                [(s, i, label, None if score is None else repr(score)) for s, i, label, score in runs], "orders")
    base = uri(pg_dsn, psycopg.conninfo.conninfo_to_dict(pg_dsn)["dbname"])
    common = ["--taxonomy", str(folder / "tax.tsv"), *command[1:], *flags, "--format", "csv"]
    db = f"duckdb:{folder / 'user.duckdb'}"
    code, out, err = run(command[0], "--truth", f"{db}::truth", "--pred", f"{db}::runs", *common)
    here = code, out, err.replace(f"{db}::", "SOURCE::")
    code, out, err = run(command[0], "--truth", f"{base}::orders.truth", "--pred", f"{base}::orders.runs", *common,
                         "--engine", "postgres", "--postgres-url", base)
    return here, (code, out, err.replace(f"{base}::orders.", "SOURCE::"))


@pytest.mark.postgres
@settings(derandomize=True, max_examples=4, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_postgresql_in_place_prints_the_bytes_of_duckdb_for_every_family(case, pg_dsn, tmp_path_factory):
    here, there = _here_and_in_place(case, ["evaluate", *case[3], "--metrics", "all"], pg_dsn,
                                     tmp_path_factory.mktemp("in_place"))
    assert here[0] in (0, 2), here
    assert there == here


@pytest.mark.postgres
@settings(derandomize=True, max_examples=3, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=cases(), command=st.sampled_from([c for c in COMMANDS if c[0] != "confusion"]))
def test_postgresql_in_place_prints_the_bytes_of_duckdb_for_compare_and_every_breakdown(case, command, pg_dsn,
                                                                                        tmp_path_factory):
    """``confusion`` has no ``--engine``: it reads its tables into the store."""
    here, there = _here_and_in_place(_two_systems(case), command, pg_dsn, tmp_path_factory.mktemp("in_place"))
    assert here[0] in (0, 2), here
    assert there == here


def test_of_several_bad_rows_a_parquet_file_names_the_least_whatever_their_order(tmp_path):
    """Parquet has no row order: a bad row is named by its key, as a table's, and of several the one named (by
    an error, or as the first by a warning) is the least by instance and label, in either order of the rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "tax.tsv").write_text("r\ta\nr\tb\na\ta1\n")
    (tmp_path / "truth.tsv").write_text("i1\ta1\ni2\tb\n")
    rows = [("m", "i2", "zz"), ("m", "i1", "a1"), ("m", "i1", "yy"), ("m", "i2", "b")]
    for order in (rows, rows[::-1]):
        path = tmp_path / "runs.parquet"
        pq.write_table(pa.Table.from_pylist([dict(zip(("system", "instance_id", "label"), row, strict=True))
                                             for row in order]), path)
        args = ["evaluate", "--taxonomy", str(tmp_path / "tax.tsv"), "--truth", str(tmp_path / "truth.tsv"),
                "--pred", str(path), "--metrics", "hp", "--format", "csv"]
        assert run(*args) == (2, "", f"hiersql: error: {path}, column 'label', instance_id='i1', system='m': label"
                                     " not in the taxonomy: 'yy'\n")
        code, _, err = run(*args, "--unknown", "ignore")
        assert (code, err) == (0, f"hiersql: warning: {path} (system='m'): ignored 2 label(s) not in the taxonomy"
                                  " (first: 'yy')\n")
