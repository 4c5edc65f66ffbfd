"""A property-based fuzzer (hypothesis) of the readers and sources: random taxonomies (trees, DAGs, cycles) and
label files made dirty the ways real files are (spaces around ids and labels, repeated rows, CRLF line ends, a
byte-order mark, rows in another order, an unknown label, a NUL byte, Latin-1 text, instances without a
prediction). Each dirty input, read as a text file, as a Parquet file whose rows are shuffled and as a table of a
DuckDB file, either gives the numbers of its cleaned twin (the same label sets, written plainly) or exit 2 with
one line naming the source; never a traceback, never another number. The measures are those that do not read
the order of the labels (which a table does not have)."""

from __future__ import annotations

import contextlib
import io
import random
import tempfile
from pathlib import Path
from urllib.parse import quote

import duckdb
import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from hiersql.cli import main

METRICS = "hp,hr,hf,sdl,example_f1,hamming_loss,label_f1"
NODES = ["a", "b", "c", "d", "e", "é", "g"]  # é: a name that Latin-1 writes differently


@st.composite
def taxonomies(draw) -> list[tuple[str, str]]:
    """A tree over some of :data:`NODES` under the root ``r``, a few extra edges (a DAG), maybe one back (a
    cycle)."""
    n = draw(st.integers(3, len(NODES)))
    names = ["r", *NODES[:n]]
    edges = [(names[draw(st.integers(0, i - 1))], names[i]) for i in range(1, len(names))]
    extra = draw(st.lists(st.tuples(st.integers(1, n), st.integers(1, n)), max_size=2))
    edges += [(names[a], names[b]) for a, b in extra if a < b and (names[a], names[b]) not in edges]
    if draw(st.integers(0, 9)) == 0:  # a cycle now and then
        edges.append((edges[-1][1], edges[-1][0]))
    return edges


@st.composite
def cases(draw):
    """A taxonomy, clean label sets, and the faults to put into the files."""
    edges = draw(taxonomies())
    nodes = sorted({n for edge in edges for n in edge} - {"r"})
    sets = st.lists(st.sampled_from(nodes), max_size=3, unique=True)
    n = draw(st.integers(1, 6))
    truth = [draw(sets.filter(bool)) for _ in range(n)]
    pred = [draw(sets) for _ in range(n)]  # an empty set: an instance the system predicted nothing for
    faults = draw(st.fixed_dictionaries({
        "spaces": st.booleans(), "repeats": st.booleans(), "crlf": st.booleans(), "bom": st.booleans(),
        "shuffle": st.booleans(), "unknown": st.integers(0, 5), "nul": st.integers(0, 9),
        "latin1": st.integers(0, 9)}))
    return edges, truth, pred, faults, draw(st.randoms(use_true_random=False))


def rows(sets: list[list[str]]) -> list[tuple[str, str]]:
    return [(f"i{i}", label) for i, labels in enumerate(sets) for label in labels]


def dirty(pairs: list[tuple[str, str]], faults: dict, rng: random.Random) -> list[tuple[str, str]]:
    """``pairs`` with the faults that the readers clean: spaces around values, repeated rows, another order."""
    out = [(f" {i} ", f"{label}  ") if faults["spaces"] and rng.random() < 0.5 else (i, label) for i, label in pairs]
    if faults["repeats"] and out:
        out += rng.sample(out, k=min(2, len(out)))
    if faults["shuffle"]:
        rng.shuffle(out)
    return out


def text_file(path: Path, pairs: list[tuple[str, str]], faults: dict) -> None:
    end = "\r\n" if faults["crlf"] else "\n"
    text = "".join(f"{i}\t{label}{end}" for i, label in pairs)
    bom = "\ufeff".encode() if faults["bom"] else b""  # UTF-8's BOM, before a Latin-1 text too
    path.write_bytes(bom + text.encode("latin-1" if faults["latin1"] == 0 and "é" in text else "utf-8"))


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_a_dirty_input_gives_its_clean_twins_numbers_or_one_line(case):
    check(case)


@pytest.mark.postgres
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_a_dirty_postgresql_table_gives_its_clean_twins_numbers_or_one_line(pg_dsn, case):
    check(case, pg_dsn)


def check(case, pg_dsn: str | None = None) -> None:
    """The property, for the text, Parquet and DuckDB sources (and PostgreSQL tables with ``pg_dsn``)."""
    edges, truth, pred, faults, rng = case
    with tempfile.TemporaryDirectory() as folder:
        d = Path(folder)
        (d / "tax.tsv").write_text("".join(f"{p}\t{c}\n" for p, c in edges), encoding="utf-8")
        text_file(d / "truth_clean.tsv", rows(truth), {"crlf": False, "bom": False, "latin1": 1})
        text_file(d / "pred_clean.tsv", rows(pred), {"crlf": False, "bom": False, "latin1": 1})
        truth_rows, pred_rows = dirty(rows(truth), faults, rng), dirty(rows(pred), faults, rng)
        if faults["unknown"] == 0 and pred_rows:  # a label that is no node
            pred_rows[0] = (pred_rows[0][0], "zebra")
        if faults["nul"] == 0 and truth_rows and pg_dsn is None:  # (a PostgreSQL text cannot hold one)
            truth_rows[-1] = (truth_rows[-1][0], truth_rows[-1][1] + "\0")
        text_file(d / "truth.tsv", truth_rows, faults)
        text_file(d / "pred.tsv", pred_rows, faults)
        columns = {"instance_id": pa.array([i for i, _ in truth_rows]), "label": pa.array([x for _, x in truth_rows])}
        pq.write_table(pa.table(columns), d / "truth.parquet")
        pq.write_table(pa.table({"instance_id": pa.array([i for i, _ in pred_rows], pa.string()),
                                 "label": pa.array([x for _, x in pred_rows], pa.string())}), d / "pred.parquet")
        with duckdb.connect(str(d / "user.duckdb")) as con:
            for name, table in (("gold", truth_rows), ("runs", pred_rows)):
                con.execute(f"CREATE TABLE {name} (instance_id VARCHAR, label VARCHAR)")
                if table:
                    con.executemany(f"INSERT INTO {name} VALUES (?, ?)", table)
        sources = {"text": (str(d / "truth.tsv"), str(d / "pred.tsv")),
                   "parquet": (str(d / "truth.parquet"), str(d / "pred.parquet")),
                   "duckdb": (f"duckdb:{d}/user.duckdb::gold", f"duckdb:{d}/user.duckdb::runs")}
        if pg_dsn is not None:
            params = psycopg.conninfo.conninfo_to_dict(pg_dsn)
            url = (f"postgresql://{params['user']}@{quote(params['host'], safe='')}:{params['port']}/"
                   f"{params['dbname']}")
            sources = {"postgres": (f"{url}::fuzz.gold", f"{url}::fuzz.runs")}
            with psycopg.connect(pg_dsn, autocommit=True) as con:
                con.execute("DROP SCHEMA IF EXISTS fuzz CASCADE")
                con.execute("CREATE SCHEMA fuzz")
                for name, table in (("gold", truth_rows), ("runs", pred_rows)):
                    con.execute(f"CREATE TABLE fuzz.{name} (instance_id TEXT, label TEXT)")
                    with con.cursor() as cur:
                        cur.executemany(f"INSERT INTO fuzz.{name} VALUES (%s, %s)", table)
        common = ["--taxonomy", str(d / "tax.tsv"), "--metrics", METRICS, "--format", "csv"]
        clean = run("evaluate", *common, "--truth", str(d / "truth_clean.tsv"), "--pred", f"s={d}/pred_clean.tsv")
        for kind, (truth_source, pred_source) in sources.items():
            code, out, err = run("evaluate", *common, "--truth", truth_source, "--pred", f"s={pred_source}")
            lines = [line for line in err.splitlines() if not line.startswith("hiersql: warning: ")]
            event(f"{kind}: exit {code}, clean twin exit {clean[0]}")
            if code == 2 or clean[0] == 2:
                assert code == 2 and len(lines) == 1 and lines[0].startswith("hiersql: error: "), (kind, err)
                assert "Traceback" not in err and "internal error" not in err, (kind, err)
                if clean[0] != 2:  # the fault is in the dirty input: the message names its source
                    named = {"text": ("truth.tsv", "pred.tsv"), "parquet": ("truth.parquet", "pred.parquet"),
                             "duckdb": ("user.duckdb",), "postgres": ("fuzz.gold", "fuzz.runs")}[kind]
                    assert any(name in lines[0] for name in named), (kind, lines[0])
                continue
            assert code == 0 and out == clean[1], (kind, faults, err, out, clean[1])
