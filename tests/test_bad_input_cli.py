"""Issue 15, the bad-input suite: every command and reader, fed malformed input, exits with status 2 and ONE
line on stderr that names the culprit (file, flag or table; the line when there is one) and the value.

Each case writes its files into a fresh folder (``{d}`` in the arguments), runs ``hiersql.cli.main`` and
checks the exit status, that stderr is exactly one line starting ``hiersql`` and that it holds every expected
fragment."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest

from hiersql.cli import main
from hiersql.option_checks import machine_memory

TAX = "a\tb\na\tc\nb\td\n"
TRUTH = "1\tb\n2\td\n"
LANUS = Path(__file__).resolve().parents[1] / "fixtures" / "lanus"


class Case(NamedTuple):
    id: str
    argv: list[str]
    expect: list[str]
    files: dict[str, str | bytes | Callable[[Path], None]] = {}  # a callable makes the file at its path


def ev(*extra: str, tax: str = "{d}/tax.tsv", truth: str = "{d}/truth.tsv", pred: str = "s={d}/pred.tsv",
       fmt: str = "long") -> list[str]:
    return ["evaluate", "--taxonomy", tax, "--truth", truth, "--pred", pred, "--labels-format", fmt, *extra]


def confusion(*extra: str) -> list[str]:
    return ["confusion", "--taxonomy", "{d}/tax.tsv", "--truth", "{d}/truth.tsv", "--pred", "s={d}/pred.tsv",
            *extra]


def scoring(*extra: str, confusion: str = f"{LANUS}/model1.tsv") -> list[str]:
    return ["scoring", "--tree", f"{LANUS}/tree.tsv", "--confusion", confusion, *extra]


def hemkit(*extra: str) -> list[str]:
    return ["hemkit", "{d}/h.txt", "{d}/g.txt", "{d}/p.txt", *extra]


def compare(*extra: str) -> list[str]:
    return ["compare", "--taxonomy", "{d}/tax.tsv", "--truth", "{d}/truth.tsv", "--pred", "s={d}/pred.tsv",
            "--pred", "t={d}/truth.tsv", *extra]


def breakdown(*extra: str, pred: str = "s={d}/pred.tsv") -> list[str]:
    return ["breakdown", "--taxonomy", "{d}/tax.tsv", "--truth", "{d}/truth.tsv", "--pred", pred, *extra]


HEMKIT_FILES: dict[str, str | bytes] = {"h.txt": "a b\na c\nb d\n", "g.txt": "b\nd\n", "p.txt": "b\nd\n"}
WIDE = "instance_id,b,c,d\n1,1,0,0\n2,0,1,1\n"
NOT_DUCKDB = "this is a text file, not a DuckDB database\n"
INJECTED = 'x"; DROP TABLE results; --'


def scores_table(path: Path) -> None:
    """A DuckDB file with a table ``scores`` of the results' columns but the unit hash, job and unit."""
    import duckdb

    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE scores (run_id VARCHAR, dataset VARCHAR, system VARCHAR, metric VARCHAR,"
                    " average VARCHAR, value DOUBLE, created_at TIMESTAMP)")


RESULTS_JOB = """results = "duckdb:team.duckdb::scores"
[[dataset]]
name = "d"
taxonomy = "tax.tsv"
truth = "truth.tsv"
predictions = "pred.tsv"
"""

CASES = [
    # --- the command line itself (argparse): one line, the command and the flag, no usage dump
    Case("no command", [], ["hiersql: error:", "COMMAND"]),
    Case("unknown command", ["evaluat"], ["invalid choice", "'evaluat'"]),
    Case("unknown flag", ev("--bogus", "1"), ["unrecognized arguments", "--bogus"]),
    Case("missing --truth", ["evaluate", "--taxonomy", "{d}/tax.tsv", "--pred", "s={d}/pred.tsv"],
         ["hiersql evaluate: error:", "--truth"]),
    Case("--beta not a number", ev("--beta", "x"), ["hiersql: error: --beta:", "finite number", "'x'"]),
    Case("--max-distance not an integer", ev("--max-distance", "1.5"), ["--max-distance", "'1.5'"]),
    Case("--labels-format unknown", ev(fmt="xml"), ["--labels-format", "'xml'"]),
    Case("--format unknown", ev("--format", "yaml"), ["--format", "'yaml'"]),
    Case("--unknown unknown", ev("--unknown", "drop"), ["--unknown", "'drop'"]),
    Case("--wait not a number", ev("--wait", "soon"), ["--wait", "'soon'"]),
    Case("--wait NaN", ev("--wait", "nan"), ["--wait", "seconds >= 0", "'nan'"]),
    Case("--wait negative", ev("--wait", "-1"), ["--wait", "seconds >= 0", "'-1'"]),
    Case("confusion --kind unknown", confusion("--kind", "flat"), ["hiersql confusion: error:", "--kind", "'flat'"]),
    Case("confusion --depth not an integer", confusion("--depth", "one"), ["--depth", "'one'"]),
    Case("hemkit missing arguments", ["hemkit", "{d}/h.txt", "{d}/g.txt"],
         ["hiersql hemkit: error:", "PRED, MAX_DISTANCE, MAX_ERROR"]),
    Case("scoring --offset not a number", scoring("--offset", "low"), ["hiersql scoring: error:", "--offset", "'low'"]),
    Case("install-macros without --db", ["install-macros"], ["hiersql install-macros: error:", "--db"]),
    # empty values: as paths they were the current folder ("label source is a folder"), or no flag at all
    Case("--pred empty", ev(pred=""), ["error: --pred: empty value", "''"]),
    Case("--pred blank", ev(pred=" "), ["error: --pred: empty value", "' '"]),
    Case("--pred NAME= without the source", ev(pred="s="), ["error: --pred: empty value", "NAME=SOURCE", "'s='"]),
    Case("--truth empty", ev(truth=""), ["hiersql evaluate: error: argument --truth: empty value", "''"]),
    Case("--taxonomy empty", ev(tax=""), ["hiersql evaluate: error: argument --taxonomy: empty value", "''"]),
    Case("--db empty", ev("--db", ""), ["argument --db: empty value", "''"]),
    Case("--per-instance empty", ev("--per-instance", ""), ["argument --per-instance: empty value", "''"]),
    Case("--out empty", ev("--out", ""), ["argument --out: empty value", "''"]),
    # --- evaluate --out: a results table (docs/jobs.md, Results tables)
    Case("--out not a target", ev("--out", "{d}/r.csv"),
         ["--out: expected duckdb:PATH::[schema.]table, postgresql://...::[schema.]table or parquet:FOLDER",
          "r.csv'"]),
    Case("--out duckdb without a table", ev("--out", "duckdb:{d}/r.duckdb"),
         ["--out: expected LOCATION::[schema.]table", "r.duckdb'"]),
    Case("--out duckdb bad table name", ev("--out", "duckdb:{d}/r.duckdb::a.b.c"),
         ["--out: expected [schema.]table after '::'", "::a.b.c'"]),
    Case("--out postgresql query", ev("--out", "postgresql://me:secret@localhost/db::SELECT 1"),
         ["--out: a results table is a [schema.]table, not a query", "postgresql://me@localhost/db::SELECT 1'"]),
    Case("--out duckdb not a DuckDB file", ev("--out", "duckdb:{d}/notes.txt::results"),
         ["--out", "not a DuckDB database"], {"notes.txt": NOT_DUCKDB}),
    Case("--out table of other columns", ev("--out", "duckdb:{d}/team.duckdb::scores"),
         ["--out: table 'scores' has no column 'key'", "run_id, dataset, system, metric, average, value, created_at,"
          " key, job_id, unit_id", "'key'"], {"team.duckdb": scores_table}),
    Case("--out parquet folder is a file", ev("--out", "parquet:{d}/tax.tsv"),
         ["--out", "is a file, not a folder of Parquet files", "tax.tsv'"]),
    Case("--out parquet folder in no folder", ev("--out", "parquet:{d}/no/such"),
         ["--out", "the folder of the Parquet folder does not exist", "no'"]),
    Case("compare --pred NAME= without the source", compare("--pred", "u="), ["--pred: empty value", "'u='"]),
    Case("install-macros --truth empty", ["install-macros", "--db", "{d}/m.duckdb", "--truth", ""],
         ["hiersql install-macros: error: argument --truth: empty value", "''"]),
    Case("scoring --tree empty", ["scoring", "--tree", "", "--confusion", f"{LANUS}/model1.tsv"],
         ["hiersql scoring: error: argument --tree: empty value", "''"]),
    Case("scoring --confusion NAME= without the file", scoring(confusion="m="),
         ["--confusion: empty value", "'m='"]),
    Case("hemkit empty hierarchy", ["hemkit", "", "{d}/g.txt", "{d}/p.txt", "2", "5"],
         ["hiersql hemkit: error: argument HIERARCHY: empty value", "''"]),
    Case("dbt --taxonomy empty", ["dbt", "--taxonomy", "", "--adapter", "duckdb", "--out", "{d}/pkg"],
         ["hiersql dbt: error: argument --taxonomy: empty value", "''"]),
    # --- taxonomy readers
    Case("taxonomy is a folder", ev(tax="{d}"), ["taxonomy is a folder"]),
    Case("taxonomy CSV not UTF-8", ev(tax="{d}/tax.csv"), ["tax.csv", "not UTF-8"],
         {"tax.csv": b"parent,child\na,b\n\xff,c\n"}),
    Case("taxonomy CSV bad weight", ev(tax="{d}/tax.csv"), ["tax.csv:3", "weight is not a number", "'heavy'"],
         {"tax.csv": "parent,child,weight\na,b,1\na,c,heavy\n"}),
    Case("taxonomy CSV ragged row", ev(tax="{d}/tax.csv"), ["tax.csv:3", "expected 2 fields", "'a,c,x'"],
         {"tax.csv": "parent,child\na,b\na,c,x\n"}),
    Case("taxonomy Parquet corrupt", ev(tax="{d}/tax.parquet"), ["tax.parquet", "cannot read Parquet"],
         {"tax.parquet": b"PAR1 not really parquet PAR1"}),
    Case("taxonomy TSV not UTF-8", ev(), ["tax.tsv", "not UTF-8"], {"tax.tsv": b"a\tb\n\xff\tc\n"}),
    # a NUL byte in a taxonomy's line: its file and line, not the truth's label that no longer matches a node
    Case("taxonomy TSV NUL byte", ev(), ["tax.tsv:3", "NUL byte", "'b\\td\\x00'"], {"tax.tsv": "a\tb\na\tc\nb\td\0\n"}),
    Case("taxonomy TSV NUL byte inside a name", ev(), ["tax.tsv:2", "NUL byte", "'a\\tc\\x00x'"],
         {"tax.tsv": b"a\tb\na\tc\0x\nb\td\n"}),
    Case("taxonomy CSV NUL byte", ev(tax="{d}/tax.csv"), ["tax.csv:3", "NUL byte", "'c\\x00'"],
         {"tax.csv": "parent,child\na,b\na,c\0\nb,d\n"}),
    Case("hemkit hierarchy NUL byte", hemkit("1", "0"), ["h.txt:2", "NUL byte", "'a c\\x00'"],
         {**HEMKIT_FILES, "h.txt": "a b\na c\0\nb d\n"}),
    Case("taxonomy with a cycle", ev(), ["tax.tsv", "cycle", "'a -> b -> a'"], {"tax.tsv": "a\tb\nb\ta\nc\ta\n"}),
    # --- label readers: long TSV, long CSV, Parquet, wide, germeval, lines
    Case("truth not UTF-8", ev(), ["truth.tsv:2", "not UTF-8"], {"truth.tsv": b"1\tb\n2\t\xff\xfe\n"}),
    Case("prediction is a folder", ev(pred="s={d}"), ["label source is a folder"]),
    Case("empty truth names the truth", ev(), ["truth.tsv", "truth has no instance"], {"truth.tsv": ""}),
    Case("blank truth names the truth", ev(), ["truth.tsv", "truth has no instance"], {"truth.tsv": "\n  \n"}),
    Case("germeval truth without its section", ev(fmt="germeval-b"), ["truth.tsv", "truth has no instance"],
         {"truth.tsv": "subtask_a\n1\tb\n", "pred.tsv": "subtask_b\n1\tb\n"}),
    Case("long CSV ragged row", ev(pred="s={d}/p.csv"), ["p.csv:3", "fields of the header", "'2,d,x'"],
         {"p.csv": "instance_id,label\n1,b\n2,d,x\n"}),
    Case("long CSV short row", ev(pred="s={d}/p.csv"), ["p.csv:2", "fields of the header", "'1'"],
         {"p.csv": "instance_id,label\n1\n2,d\n"}),
    Case("long CSV without the columns", ev(pred="s={d}/p.csv"), ["p.csv", "needs columns instance_id, label"],
         {"p.csv": "id,class\n1,b\n"}),
    Case("long CSV header not UTF-8", ev(pred="s={d}/p.csv"), ["p.csv:1", "not UTF-8"],
         {"p.csv": b"instance_id,l\xffabel\n1,b\n"}),
    Case("long CSV row not UTF-8", ev(pred="s={d}/p.csv"), ["p.csv:3", "not UTF-8"],
         {"p.csv": b"instance_id,label\n1,b\n2,\xff\xfe\n"}),
    Case("long CSV NaN score", ev(pred="s={d}/p.csv"), ["p.csv:3", "score is not a number", "'NaN'"],
         {"p.csv": "instance_id,label,score\n1,b,0.5\n2,d,NaN\n"}),
    Case("empty long CSV", ev(pred="s={d}/p.csv"), ["p.csv", "label file is empty"], {"p.csv": ""}),
    Case("Parquet prediction corrupt", ev(pred="s={d}/p.parquet"), ["p.parquet", "cannot read file"],
         {"p.parquet": b"garbage that is no parquet file"}),
    Case("wide ragged row (long)", ev(truth="{d}/w.csv", pred="s={d}/w.csv", fmt="wide"),
         ["w.csv:3", "fields of the header", "'2,0,1,1,1'"], {"w.csv": "instance_id,b,c,d\n1,1,0,0\n2,0,1,1,1\n"}),
    Case("wide ragged row (short)", ev(truth="{d}/w.csv", pred="s={d}/w.csv", fmt="wide"),
         ["w.csv:2", "fields of the header", "'1,1,0'"], {"w.csv": "instance_id,b,c,d\n1,1,0\n2,0,1,1\n3,0,0,1\n"}),
    Case("wide bad cell", ev(truth="{d}/w.csv", pred="s={d}/w.csv", fmt="wide"),
         ["w.csv:3", "column 'c' is not 0 or 1", "'2'"], {"w.csv": "instance_id,b,c,d\n1,1,0,0\n2,0,2,1\n"}),
    Case("wide instance twice", ev(truth="{d}/w.csv", pred="s={d}/w.csv", fmt="wide"),
         ["w.csv:3", "instance listed twice (first on line 2)", "'1'"],
         {"w.csv": "instance_id,b,c,d\n1,1,0,0\n1,0,1,1\n"}),
    Case("wide bad cell after blank lines", ev(truth="{d}/w.csv", pred="s={d}/w.csv", fmt="wide"),
         ["w.csv:5", "column 'c' is not 0 or 1", "'2'"], {"w.csv": "instance_id,b,c,d\n1,1,0,0\n\n\n2,0,2,1\n"}),
    Case("wide repeated label", ev(truth="{d}/w.csv", pred="s={d}/w.csv", fmt="wide"),
         ["w.csv:1", "repeated label", "'b'"], {"w.csv": "instance_id,b,c,b\n1,1,0,0\n"}),
    Case("wide empty label", ev(truth="{d}/w.csv", pred="s={d}/w.csv", fmt="wide"),
         ["w.csv:1", "empty or repeated label", "''"], {"w.csv": "instance_id,b,,d\n1,1,0,0\n"}),
    Case("wide without label columns", ev(truth="{d}/w.csv", pred="s={d}/w.csv", fmt="wide"),
         ["w.csv:1", "needs a header", "'instance_id'"], {"w.csv": "instance_id\n1\n"}),
    Case("wide empty", ev(truth="{d}/w.csv", pred="s={d}/w.csv", fmt="wide"), ["w.csv", "label file is empty"],
         {"w.csv": ""}),
    Case("wide header not UTF-8", ev(truth="{d}/w.csv", pred="s={d}/w.csv", fmt="wide"), ["w.csv:1", "not UTF-8"],
         {"w.csv": b"instance_id,\xff,c\n1,1,0\n"}),
    Case("wide header injection is a label", ev(truth="{d}/w.csv", pred="s={d}/inj.csv", fmt="wide"),
         ["inj.csv:3", "label not in the taxonomy", "'b\" AS v FROM _wide WHERE false); DROP TABLE results; --'"],
         {"w.csv": WIDE, "inj.csv": 'instance_id,b,c,"b"" AS v FROM _wide WHERE false); DROP TABLE results; --"\n'
                                    "1,1,0,0\n2,0,1,1\n"}),
    Case("wide header label not in the taxonomy", ev(truth="{d}/w.csv", pred="s={d}/u.csv", fmt="wide"),
         ["u.csv:1", "wide header", "not in the taxonomy", "'zebra'"],
         {"w.csv": WIDE, "u.csv": "instance_id,b,c,d,zebra\n1,1,0,0,0\n2,0,1,1,0\n"}),
    Case("wide header virtual root", ev(truth="{d}/w.csv", pred="s={d}/u.csv", fmt="wide", tax="{d}/t2.tsv"),
         ["u.csv:1", "wide header", "virtual root", "'__root__'"],
         {"t2.tsv": "a\tb\na\tc\nx\td\n", "w.csv": WIDE, "u.csv": "instance_id,b,c,d,__root__\n1,1,0,0,0\n"}),
    Case("virtual root as a truth label", ev(), ["truth.tsv:2", "virtual root", "'__root__'"],
         {"tax.tsv": "a\tb\nc\td\n", "truth.tsv": "1\tb\n2\t__root__\n"}),
    Case("virtual root as a predicted label", ev(), ["pred.tsv:1", "virtual root", "'__root__'"],
         {"tax.tsv": "a\tb\nc\td\n", "pred.tsv": "1\t__root__\n"}),
    Case("lines format not UTF-8", ev(fmt="lines"), ["pred.tsv:2", "not UTF-8"],
         {"truth.tsv": "b\nd\n", "pred.tsv": b"b\n\xff d\n"}),
    # --- options of evaluate owned here: --labels, --db, --wait
    Case("--per-instance a file", ev("--per-instance", "{d}/truth.tsv"),
         ["error: --per-instance: is a file, not a folder", "truth.tsv'"]),
    Case("--per-instance under a file", ev("--per-instance", "{d}/truth.tsv/per"),
         ["error: --per-instance:", "truth.tsv is not a folder", "truth.tsv/per'"]),
    Case("--per-instance a family's file is a folder", ev("--per-instance", "{d}/per"),
         ["error: --per-instance: cannot write", "per/set_based.csv'"], {"per/set_based.csv/keep": ""}),
    Case("--labels outside the taxonomy", ev("--metrics", "hamming_loss", "--labels", "b,zebra"),
         ["--labels", "not in the taxonomy", "'zebra'"]),
    Case("--labels given twice", ev("--metrics", "hamming_loss", "--labels", "b,c,b"), ["--labels", "twice", "'b'"]),
    Case("--labels empty", ev("--metrics", "hamming_loss", "--labels", ","), ["--labels", "no label", "','"]),
    Case("--labels virtual root", ev("--metrics", "hamming_loss", "--labels", "b,__root__"),
         ["--labels", "not in the taxonomy", "'__root__'"], {"tax.tsv": "a\tb\nc\td\n"}),
    Case("--db is a folder", ev("--db", "{d}"), ["--db", "is a folder"]),
    Case("a duckdb: source without its table", ev(truth="duckdb:{d}/w.duckdb"),
         ["error: duckdb:{d}/w.duckdb: expected LOCATION::[schema.]table"]),
    Case("--db not a DuckDB file", ev("--db", "{d}/notes.txt"), ["--db", "notes.txt", "not a DuckDB database"],
         {"notes.txt": NOT_DUCKDB}),
    Case("--db empty file", ev("--db", "{d}/empty.duckdb"), ["--db", "empty.duckdb", "not a DuckDB database"],
         {"empty.duckdb": b""}),
    Case("--db in a missing folder", ev("--db", "{d}/no/such/r.duckdb"),
         ["--db", "folder of the DuckDB file does not exist", "/no/such'"]),
    # a URL is no path (it was a missing folder 'postgresql:'): --db of every command takes a DuckDB file
    Case("--db a PostgreSQL URL", ev("--db", "postgresql://me@localhost/db"),
         ["error: --db postgresql://me@localhost/db: takes the path of a DuckDB file, not a URL", "report --db URL"]),
    Case("--db another URL", breakdown("--db", "s3://bucket/r.duckdb"),
         ["error: --db s3://bucket/r.duckdb: takes the path of a DuckDB file, not a URL"]),
    Case("report inputs --db a URL", ["report", "--taxonomy", "{d}/tax.tsv", "--truth", "{d}/truth.tsv", "--pred",
                                      "s={d}/pred.tsv", "--db", "postgres://h/db", "--out", "{d}/r.html"],
         ["--db postgres://h/db: takes the path of a DuckDB file, not a URL"]),
    Case("install-macros --db a URL", ["install-macros", "--db", "postgresql://h/db"],
         ["--db postgresql://h/db: takes the path of a DuckDB file, not a URL"]),
    Case("demo --db a URL", ["demo", "--db", "postgresql://h/db"],
         ["--db postgresql://h/db: takes the path of a DuckDB file, not a URL"]),
    # DuckDB either takes the limit and runs out while reading, or refuses a limit below what it already holds
    # (test_bad_input_silent.py checks both messages): one line naming the flag either way
    Case("--memory-limit too small", ev("--memory-limit", "1KB"), ["error: --memory-limit: "]),
    Case("--memory-limit above the machine's memory", ev("--memory-limit", f"{2 * machine_memory() // 2**30 + 1}GiB"),
         ["error: --memory-limit: must be at most this machine's memory", f"({machine_memory() / 2**30:.1f} GiB)"]),
    Case("--memory-limit negative", ev("--memory-limit=-1GB"), ["error: --memory-limit: must be a size > 0", "'-1GB'"]),
    Case("--threads zero", ev("--threads", "0"), ["error: --threads: must be an integer >= 1: '0'"]),
    Case("--threads not a number", ev("--threads", "all"), ["error: --threads: must be an integer >= 1: 'all'"]),
    # --- confusion
    Case("confusion --plot a folder", confusion("--plot", "{d}"), ["--plot", "is a folder"]),
    Case("confusion --plot unknown suffix", confusion("--plot", "{d}/m.xyz"), ["--plot", "image format", "m.xyz'"]),
    Case("confusion --plot without suffix", confusion("--plot", "{d}/m"), ["--plot", "image format", "/m'"]),
    Case("confusion --plot missing folder", confusion("--plot", "{d}/no/m.png"), ["--plot", "folder", "m.png'"]),
    Case("confusion --plot names collide", ["confusion", "--taxonomy", "{d}/tax.tsv", "--truth", "{d}/truth.tsv",
                                            "--pred", "a:b={d}/pred.tsv", "--pred", "a_b={d}/pred.tsv",
                                            "--plot", "{d}/m.png"],
         ["--plot", "'a:b' and 'a_b'", "m_a_b.png'"]),
    Case("confusion --depth too deep", confusion("--depth", "3"), ["--depth", "deepest node is at depth 2", "3"]),
    Case("confusion --zero-division out of range", confusion("--zero-division", "5"),
         ["--zero-division", "must be 0, 1 or nan", "'5'"]),
    Case("breakdown --zero-division not 0, 1 or nan", breakdown("--zero-division", "0.5"),
         ["--zero-division", "must be 0, 1 or nan", "'0.5'"]),
    Case("confusion --depth negative", confusion("--depth", "-1"), ["--depth", "-1"]),
    Case("confusion bad truth", confusion(), ["truth.tsv:2", "not in the taxonomy", "'zebra'"],
         {"truth.tsv": "1\tb\n2\tzebra\n"}),
    # --- scoring
    Case("scoring --offset positive", scoring("--offset", "0.5"), ["--offset", "<= 0", "0.5"]),
    Case("scoring --offset NaN", scoring("--offset", "nan"), ["--offset", "<= 0", "nan"]),
    Case("scoring --metrics empty", scoring("--metrics", ","), ["--metrics", "no measure", "','"]),
    Case("scoring --metrics unknown", scoring("--metrics", "pl,bogus"), ["--metrics", "'bogus'"]),
    Case("scoring --average unknown", scoring("--average", "weighted"), ["--average", "'weighted'"]),
    Case("scoring --strategy unknown", scoring("--strategy", "random"), ["--strategy", "'random'"]),
    Case("scoring --plot a folder", scoring("--plot", "{d}"), ["--plot", "is a folder"]),
    Case("scoring --plot unknown suffix", scoring("--plot", "{d}/s.xyz"), ["--plot", "image format", "s.xyz'"]),
    Case("scoring --tree missing", ["scoring", "--tree", "{d}/none.tsv", "--confusion", f"{LANUS}/model1.tsv"],
         ["none.tsv", "not found"]),
    Case("scoring count not a number", scoring(confusion="{d}/cm.tsv"), ["cm.tsv:2", "not a number", "'x'"],
         {"cm.tsv": "truth\tD\tE\nD\t5\tx\nE\t0\t5\n"}),
    Case("scoring count negative", scoring(confusion="{d}/cm.tsv"), ["cm.tsv:2", ">= 0", "'-1'"],
         {"cm.tsv": "truth\tD\tE\nD\t5\t-1\nE\t0\t5\n"}),
    Case("scoring label not in the tree", scoring(confusion="{d}/cm.tsv"), ["cm.tsv:1", "'Z'"],
         {"cm.tsv": "truth\tD\tZ\nD\t5\t1\nE\t0\t5\n"}),
    Case("scoring matrix not UTF-8", scoring(confusion="{d}/cm.tsv"), ["cm.tsv:3", "not UTF-8"],
         {"cm.tsv": b"truth\tD\tE\nD\t5\t1\nE\t0\t\xff\n"}),
    Case("scoring system twice", scoring("--confusion", f"{LANUS}/model1.tsv"), ["--confusion", "'model1'"]),
    # --- hemkit
    Case("hemkit MAX_DISTANCE not an integer", hemkit("x", "0"), ["MAX_DISTANCE", "'x'"], HEMKIT_FILES),
    Case("hemkit MAX_DISTANCE negative", hemkit("-1", "0"), ["MAX_DISTANCE", ">= 0", "-1"], HEMKIT_FILES),
    Case("hemkit MAX_ERROR negative", hemkit("1", "-1"), ["MAX_ERROR", ">= 0", "-1"], HEMKIT_FILES),
    Case("hemkit MAX_ERROR NaN", hemkit("1", "nan"), ["MAX_ERROR", "nan"], HEMKIT_FILES),
    Case("hemkit gold not UTF-8", hemkit("1", "0"), ["g.txt", "not UTF-8"], {**HEMKIT_FILES, "g.txt": b"b\n\xff\n"}),
    Case("hemkit unknown gold label", hemkit("1", "0"), ["g.txt:2", "not in the taxonomy", "'zebra'"],
         {**HEMKIT_FILES, "g.txt": "b\nzebra\n"}),
    Case("hemkit hierarchy with a third field", hemkit("1", "0"), ["h.txt:2", "expected 2 fields", "'a c 0.5'"],
         {**HEMKIT_FILES, "h.txt": "a b\na c 0.5\nb d\n"}),
    Case("hemkit hierarchy missing", ["hemkit", "{d}/none.txt", "{d}/g.txt", "{d}/p.txt", "1", "0"],
         ["none.txt", "not found"], HEMKIT_FILES),
    # --- install-macros
    Case("install-macros --table injection", ["install-macros", "--db", "{d}/m.duckdb", "--table", f"truth={INJECTED}"],
         ["--table", "not a table name", INJECTED]),
    Case("install-macros --table function call",
         ["install-macros", "--db", "{d}/m.duckdb", "--table", "truth=read_csv('/etc/passwd')"],
         ["--table", "not a table name", "read_csv"]),
    Case("install-macros --table comment", ["install-macros", "--db", "{d}/m.duckdb", "--table", "truth=gold--x"],
         ["--table", "not a table name", "'gold--x'"]),
    Case("install-macros --table unknown", ["install-macros", "--db", "{d}/m.duckdb", "--table", "labels=gold"],
         ["--table", "unknown table", "'labels'"]),
    Case("install-macros --table no =", ["install-macros", "--db", "{d}/m.duckdb", "--table", "gold"],
         ["--table", "NAME=TABLE", "'gold'"]),
    # --- dbt
    Case("dbt a family with Python steps", ["dbt", "--taxonomy", "{d}/tax.tsv", "--adapter", "duckdb", "--out",
                                            "{d}/pkg", "--families", "set_based,lca"],
         ["--families", "not a family SQL computes alone", "set_based, flat", "'lca'"]),
    Case("dbt --out a folder of other files", ["dbt", "--taxonomy", "{d}/tax.tsv", "--adapter", "duckdb", "--out",
                                               "{d}"], ["--out", "other files than a package hiersql dbt wrote"]),
    Case("dbt --out a file", ["dbt", "--taxonomy", "{d}/tax.tsv", "--adapter", "duckdb", "--out", "{d}/tax.tsv"],
         ["--out", "is a file, not a folder", "tax.tsv'"]),
    Case("dbt --adapter unknown", ["dbt", "--taxonomy", "{d}/tax.tsv", "--adapter", "mysql", "--out", "{d}/pkg"],
         ["hiersql dbt: error:", "--adapter", "mysql"]),
    Case("dbt taxonomy missing", ["dbt", "--taxonomy", "{d}/none.tsv", "--adapter", "duckdb", "--out", "{d}/pkg"],
         ["none.tsv", "not found"]),
    Case("install-macros on a file without tables", ["install-macros", "--db", "{d}/new.duckdb"],
         ["--db", "new.duckdb", "no table nodes"]),
    Case("install-macros --db a folder", ["install-macros", "--db", "{d}"], ["--db", "is a folder"]),
    Case("install-macros --db not DuckDB", ["install-macros", "--db", "{d}/notes.txt"],
         ["--db", "notes.txt", "not a DuckDB database"], {"notes.txt": NOT_DUCKDB}),
    # --- demo
    Case("demo --db a folder", ["demo", "--db", "{d}"], ["--db", "is a folder"]),
    Case("demo --metrics empty", ["demo", "--metrics", ","], ["--metrics", "no measure", "','"]),
    # --- sql, jobs, report (their own checks; kept here so every command is walked)
    Case("sql unknown metric", ["sql", "bogus"], ["METRIC", "'bogus'"]),
    Case("sql unknown dialect", ["sql", "hp", "--dialect", "cobol"], ["--dialect", "'cobol'"]),
    Case("jobs missing file", ["jobs", "run", "{d}/none.toml"], ["none.toml", "not found"]),
    Case("jobs bad action", ["jobs", "walk", "{d}/job.toml"], ["hiersql jobs: error:", "'walk'"]),
    Case("jobs schedule --cron of six fields", ["jobs", "schedule", "{d}/job.toml", "--cron", "0 0 2 * * *"],
         ["error: --cron: six fields are ambiguous (seconds first", "give five", "'0 0 2 * * *'"]),
    Case("jobs run --on-failure empty", ["jobs", "run", "{d}/job.toml", "--on-failure", ""],
         ["argument --on-failure: empty value", "''"]),
    Case("jobs results table of other columns", ["jobs", "check", "{d}/job.toml"],
         ["job.toml:1", "table 'scores' has no column 'key'", "'key'"],
         {"job.toml": RESULTS_JOB, "team.duckdb": scores_table}),
    Case("jobs results not a target", ["jobs", "check", "{d}/job.toml"],
         ["job.toml:1", "expected duckdb:PATH::[schema.]table", "'results.csv'"],
         {"job.toml": RESULTS_JOB.replace("duckdb:team.duckdb::scores", "results.csv")}),
    Case("report missing database", ["report", "--db", "{d}/none.duckdb", "--out", "{d}/r.html"],
         ["none.duckdb", "not found"]),
    Case("report inputs without --pred", ["report", "--taxonomy", "{d}/tax.tsv", "--out", "{d}/r.html"],
         ["--pred", "need --taxonomy, --truth and --pred"]),
    # --- compare
    Case("compare one system", ["compare", "--taxonomy", "{d}/tax.tsv", "--truth", "{d}/truth.tsv",
                                "--pred", "s={d}/pred.tsv"], ["--pred", "at least two systems", "1"]),
    Case("compare --bootstrap 0", ["compare", "--taxonomy", "{d}/tax.tsv", "--truth", "{d}/truth.tsv",
                                   "--pred", "s={d}/pred.tsv", "--bootstrap", "0"],
         ["--bootstrap", "must be at least 1", "0"]),
    Case("compare --confidence 1.5", compare("--confidence", "1.5"),
         ["--confidence", "strictly between 0 and 1", "1.5"]),
    Case("compare --confidence NaN", compare("--confidence", "nan"),
         ["--confidence", "strictly between 0 and 1", "nan"]),
    Case("compare --alpha 0", compare("--alpha", "0"), ["--alpha", "strictly between 0 and 1", "0"]),
    Case("compare --test unknown", compare("--test", "t"), ["hiersql compare: error:", "--test", "'t'"]),
    # --- breakdown
    Case("breakdown --by unknown", breakdown("--by", "tree"), ["hiersql breakdown: error:", "--by", "'tree'"]),
    Case("breakdown --bins 1", breakdown("--bins", "1"), ["--bins", "must be >= 2", "1"]),
    Case("breakdown --digits negative", breakdown("--digits", "-1"), ["--digits", "must be >= 0", "-1"]),
    Case("breakdown --max-distance negative", breakdown("--max-distance", "-1"), ["--max-distance", ">= 0", "-1"]),
    Case("breakdown --by auprc without scores", breakdown("--by", "auprc"),
         ["--pred", "--by auprc needs scored predictions", "pred.tsv"]),
    Case("breakdown ragged long CSV", breakdown(pred="s={d}/p.csv"), ["p.csv:3", "fields of the header", "'2,d,x'"],
         {"p.csv": "instance_id,label\n1,b\n2,d,x\n"}),
]


def _write(folder: Path, files: dict[str, str | bytes]) -> None:
    base = {"tax.tsv": TAX, "truth.tsv": TRUTH, "pred.tsv": TRUTH}
    for name, text in {**base, **files}.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if callable(text):
            text(path)
        elif isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_one_line_exit_2(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path, case.files)
    code = main([arg.replace("{d}", str(tmp_path)) for arg in case.argv])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1, f"expected one line, got: {err}"
    assert lines[0].startswith("hiersql") and ": error: " in lines[0], lines[0]
    for fragment in case.expect:
        assert fragment.replace("{d}", str(tmp_path)) in lines[0], f"{fragment!r} not in {lines[0]!r}"


def test_suite_walks_every_command() -> None:
    from hiersql.cli import COMMANDS

    walked = {c.argv[0] for c in CASES if c.argv}
    assert {name.replace("_", "-") for name in COMMANDS} <= walked
    assert len(CASES) >= 60


def test_help_is_still_the_full_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: hiersql evaluate") and "--labels-format" in out and len(out.splitlines()) > 20


def test_argument_error_through_python_m_hiersql(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "hiersql", "evaluate", "--taxonomy", "t.tsv", "--truth", "y.tsv",
                           "--pred", "p.tsv", "--wait", "x"],
                          cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == "hiersql evaluate: error: argument --wait: not a number of seconds >= 0: 'x'\n"


@pytest.mark.parametrize("url", ["postgresql://me:s3cretX@[::1:5432/db", "postgres://me:s3cret%X@/db?host=/tmp",
                                 "postgresql://me:p@ss%zz@h/db"])
def test_a_password_libpq_quotes_in_its_own_error_is_masked(tmp_path, capsys, url):
    """libpq quotes a URI it cannot parse, or the bad token of it, which may be the password: masked in the one
    line of a label source, of --postgres-url and of a job queue, and in the Python API's message (was shown)."""
    from hiersql import Evaluator, InputError, Taxonomy

    (tmp_path / "tax.tsv").write_text(TAX)
    (tmp_path / "truth.tsv").write_text(TRUTH)
    password = url.split("://me:", 1)[1].rsplit("@", 1)[0]
    runs = [ev(pred=f"{url}::runs", tax=str(tmp_path / "tax.tsv"), truth=str(tmp_path / "truth.tsv")),
            ev("--engine", "postgres", "--postgres-url", url, tax=str(tmp_path / "tax.tsv"),
               truth=str(tmp_path / "truth.tsv"), pred=str(tmp_path / "truth.tsv")),
            ["jobs", "status", "--queue", url]]
    for argv in runs:
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("hiersql: error: ") and err.count("\n") == 1, err
        assert not shown(password, err) and "***" in err, err
    with pytest.raises(InputError) as caught:
        Evaluator(Taxonomy.from_edges([("a", "b")])).add_truth(f"{url}::gold")
    assert not shown(password, str(caught.value)), str(caught.value)


def shown(password: str, text: str) -> bool:
    """Whether ``password``, or a part of it between ``@`` of three characters or more (a driver splits it
    there), is in ``text``."""
    return any(part in text for part in [password, *password.split("@")] if len(part) >= 3)


def test_secrets_of_connection_strings_by_hand():
    from hiersql.errors import masked, secrets

    assert secrets("postgresql://me:p%40ss@h/db") == ["p%40ss", "p@ss"]
    assert secrets("host=h user=me password='p w'") == ["p w"]
    assert secrets("postgresql://me@h/db?sslmode=require&password=abc") == ["abc"]
    assert secrets("postgresql://me@h/db") == secrets("duckdb:f.duckdb::t") == []
    assert masked('in URI: "postgresql://me:s3@[h"', "postgresql://me:s3@[h") == 'in URI: "postgresql://me:***@[h"'
