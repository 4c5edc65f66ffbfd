"""Issue 15: input that used to give a silently wrong answer now gives the right answer (or an error), input
never becomes SQL text, and reused result files stay clean. Each test says what a careful user expects."""

from __future__ import annotations

import csv
import glob
import io
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from hiersql import Evaluator, InputError, Taxonomy
from hiersql.cli import main

TAX = "a\tb\na\tc\nb\td\n"
TRUTH = "1\tb\n2\td\n"
BOM = "\ufeff"


def write(folder: Path, name: str, text: str | bytes) -> str:
    path = folder / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return str(path)


def evaluate(folder: Path, capsys, *extra: str, truth: str = TRUTH, pred: str = TRUTH, tax: str = TAX,
             fmt: str = "long", metrics: str = "hp,hr") -> tuple[int, dict[tuple[str, str, str], float], str]:
    """Run ``hiersql evaluate`` (CSV output); returns the exit status, {(system, metric, average): value} and
    stderr."""
    args = ["evaluate", "--taxonomy", write(folder, "tax.tsv", tax), "--truth", write(folder, "truth.tsv", truth),
            "--pred", "s=" + write(folder, "pred.tsv", pred), "--labels-format", fmt, "--metrics", metrics,
            "--format", "csv", *extra]
    code = main(args)
    out, err = capsys.readouterr()
    rows = {(r["system"], r["metric"], r["average"]): float(r["value"]) for r in csv.DictReader(io.StringIO(out))}
    return code, rows, err


# ---------------------------------------------------------------------------------------------- BOM
@pytest.mark.parametrize("suffix,text", [(".tsv", "a\tb\na\tc\nb\td\n"), (".txt", "a b\na c\nb d\n"),
                                         (".csv", "parent,child\na,b\na,c\nb,d\n")])
def test_byte_order_mark_is_not_part_of_the_first_node(tmp_path, suffix, text):
    # with the BOM kept, "\ufeffa" and "a" were two parentless nodes: a virtual root above both
    tax = Taxonomy.from_file(write(tmp_path, "t" + suffix, BOM + text))
    assert tax.root == "a" and not tax.virtual_root and len(tax) == 4


def test_byte_order_mark_in_hemkit_files(tmp_path):
    from hiersql.api.hemkit import hemkit, hemkit_taxonomy

    hierarchy = write(tmp_path, "h.txt", BOM + "a b\na c\nb d\n")
    assert "a" in hemkit_taxonomy(hierarchy) and BOM + "a" not in hemkit_taxonomy(hierarchy)
    gold, pred = write(tmp_path, "g.txt", BOM + "d\nc\n"), write(tmp_path, "p.txt", "d\nc\n")
    result = hemkit(hierarchy, gold, pred, 1, 0)
    assert (result.hp, result.hr, result.instances) == (1.0, 1.0, 2)


@pytest.mark.parametrize("fmt,truth", [("long", BOM + "1\tb\n2\td\n"), ("lines", BOM + "b\nd\n"),
                                       ("wide", BOM + "instance_id,b,c,d\n1,1,0,0\n2,0,0,1\n")])
def test_byte_order_mark_in_label_files(tmp_path, fmt, truth):
    name = "y.csv" if fmt == "wide" else "y.tsv"
    ev = Evaluator(Taxonomy.from_edges([("a", "b"), ("a", "c"), ("b", "d")]))
    ev.add_truth(write(tmp_path, name, truth), fmt)
    ids = {r[0] for r in ev.con.execute("SELECT instance_id FROM instances").fetchall()}
    labels = {r[0] for r in ev.con.execute("SELECT label FROM truth").fetchall()}
    assert labels == {"b", "d"} and all(BOM not in i for i in ids)


# ---------------------------------------------------------------------------------------------- wide files
def test_ragged_wide_file_is_an_error_not_a_sniffed_header(tmp_path, capsys):
    # DuckDB's sniffer took the last row of this file for the header: every label unknown or every score 0
    wide = "instance_id,b,c,d\n1,1,0\n2,0,0,1\n"
    path = write(tmp_path, "w.csv", wide)
    code = main(["evaluate", "--taxonomy", write(tmp_path, "tax.tsv", TAX), "--truth", path, "--pred", f"s={path}",
                 "--labels-format", "wide"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip() == f"hiersql: error: {path}:2: row does not have the 4 fields of the header: '1,1,0'"


def test_wide_file_reads_by_header(tmp_path, capsys):
    truth = "instance_id,b,c,d\n1,1,0,0\n2,0,0,1\n"
    pred = "id,d,b,c\n1,0,1,0\n2,0,0,1\n"  # other column order; instance 2 predicted c instead of d
    path_t, path_p = write(tmp_path, "t.csv", truth), write(tmp_path, "p.csv", pred)
    code = main(["evaluate", "--taxonomy", write(tmp_path, "tax.tsv", TAX), "--truth", path_t, "--pred",
                 f"s={path_p}", "--labels-format", "wide", "--metrics", "hr", "--average", "micro", "--format", "csv"])
    out = capsys.readouterr().out
    # truth {b}, {d}: augmented {b}, {b, d} (root a excluded); predicted {b}, {c}: {b}, {c}; hR = 1/3
    assert code == 0 and float(out.splitlines()[1].split(",")[-1]) == pytest.approx(1 / 3)


# ---------------------------------------------------------------------------------------------- SQL injection
DROP = "; DROP TABLE results; --"


def _results_count(db: Path) -> int:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT count(*) FROM results").fetchone()[0]


def test_nothing_from_input_becomes_sql(tmp_path, capsys):
    """Walk every place of the readers and commands that builds SQL text, feeding quotes, semicolons,
    comments and DROP TABLE; the results table of the user's --db file survives and the names read back as
    given."""
    db = tmp_path / "r.duckdb"
    odd = ["it's", 'say "x"', f"x'{DROP}", f'x"{DROP}', "x /* c */", "a--b"]
    tax = "".join(f"root\t{name}\n" for name in odd)
    folder = tmp_path / f"dir'{DROP.replace('/', '')}"
    folder.mkdir()
    truth = write(folder, f"truth'{DROP}.tsv", "".join(f"{name}\t{name}\n" for name in odd))
    args = ["evaluate", "--taxonomy", write(folder, f"tax\"{DROP}.tsv", tax), "--truth", truth,
            "--db", str(db), "--dataset", f"data'{DROP}", "--metrics", "hp", "--average", "micro", "--format", "csv"]
    # a system name, a file name and every label and instance id with quotes, semicolons and comments
    assert main([*args, "--pred", f"sys'{DROP}={truth}"]) == 0
    assert _results_count(db) == 1
    # the same names through a long CSV file, a Parquet file and a wide file with such headers
    csv_path = folder / f"p'{DROP}.csv"
    csv_path.write_text("instance_id,label\n" + "".join(f'"{n.replace(chr(34), 2 * chr(34))}",'
                                                       f'"{n.replace(chr(34), 2 * chr(34))}"\n' for n in odd),
                        encoding="utf-8")
    parquet, tax_parquet = folder / f"p'{DROP}.parquet", folder / f"t'{DROP}.parquet"
    labels = duckdb.sql("SELECT unnest($n) AS instance_id, unnest($n) AS label", params={"n": odd})
    labels.write_parquet(str(parquet))
    duckdb.sql("SELECT 'root' AS parent, unnest($n) AS child", params={"n": odd}).write_parquet(str(tax_parquet))
    assert main([*args, "--pred", f"csv={csv_path}", "--pred", f"parquet={parquet}"]) == 0
    capsys.readouterr()
    assert _results_count(db) == 4  # the first system again (same truth), and the two new ones
    with duckdb.connect(str(db), read_only=True) as con:
        assert sorted(r[0] for r in con.execute("SELECT DISTINCT label FROM truth").fetchall()) == sorted(odd)
        assert con.execute("SELECT DISTINCT dataset FROM results").fetchall() == [(f"data'{DROP}",)]
        values = con.execute("SELECT DISTINCT system, value FROM results ORDER BY system").fetchall()
    assert values == [("csv", 1.0), ("parquet", 1.0), (f"sys'{DROP}", 1.0)]
    # the taxonomy from a Parquet file of such a name (the same edges: the systems stay)
    args[args.index("--taxonomy") + 1] = str(tax_parquet)
    assert main([*args, "--pred", f"csv={csv_path}"]) == 0
    assert "hierarchical_precision,micro,1.0" in capsys.readouterr().out
    assert _results_count(db) == 7
    # the wide header of issue 15, against the same file: an unknown label, the results stay
    wide_t = write(folder, "w.csv", "instance_id,b,c,d\n1,1,0,0\n2,0,1,1\n")
    wide_p = write(folder, "inj.csv", 'instance_id,b,c,"b"" AS v FROM _wide WHERE false); DROP TABLE results; --"\n'
                                      "1,1,0,0\n2,0,1,1\n")
    code = main(["evaluate", "--taxonomy", write(folder, "t.tsv", TAX), "--truth", wide_t, "--pred",
                 f"s={wide_p}", "--labels-format", "wide", "--db", str(db)])
    assert code == 2 and "label not in the taxonomy" in capsys.readouterr().err
    assert _results_count(db) == 7


def test_install_macros_table_names_are_quoted_or_refused(tmp_path, capsys):
    db = tmp_path / "m.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE TABLE results AS SELECT 1 AS x")
        con.execute('CREATE TABLE "gold; labels" (instance_id VARCHAR, label VARCHAR)')
    tax = write(tmp_path, "tax.tsv", TAX)
    assert main(["install-macros", "--db", str(db), "--taxonomy", tax, "--table", 'truth="gold; labels"']) == 0
    for bad in (f'x"{DROP}', "x;y", "read_csv('/etc/passwd')", "gold--x", "gold /* c */"):
        assert main(["install-macros", "--db", str(db), "--table", f"truth={bad}"]) == 2
    capsys.readouterr()
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM results").fetchone() == (1,)
        body = con.execute("SELECT macro_definition FROM duckdb_functions() WHERE function_name ="
                           " 'hiersql_set_based' LIMIT 1").fetchone()[0]
    assert '"gold; labels"' in body


@pytest.mark.parametrize("name", ["read_csv('/etc/passwd')", f'x"{DROP}'])
def test_sql_table_names_are_refused(capsys, name):
    assert main(["sql", "hp", "--table", f"truth={name}"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "--table" in err


# ---------------------------------------------------------------------------------------------- other silent cases
def test_labels_outside_the_taxonomy_refused(tmp_path, capsys):
    code, _, err = evaluate(tmp_path, capsys, "--labels", "b,c,d,helicopter", metrics="hamming_loss")
    assert code == 2 and err.strip() == "hiersql: error: --labels: holds a label not in the taxonomy: 'helicopter'"


def test_virtual_root_is_not_a_truth_label(tmp_path, capsys):
    code, _, err = evaluate(tmp_path, capsys, tax="a\tb\nc\td\n", truth="1\tb\n2\t__root__\n")
    assert code == 2 and "truth.tsv:2: label is the virtual root" in err


def test_dataframe_nan_score_is_rejected_like_a_files():
    import numpy as np
    import pandas as pd

    ev = Evaluator(Taxonomy.from_edges([("a", "b"), ("a", "c")]))
    ev.add_truth({"instance_id": ["1", "2"], "label": ["b", "c"]})
    df = pd.DataFrame({"instance_id": ["1", "2"], "label": ["b", "c"], "score": [0.5, np.nan]})
    with pytest.raises(InputError, match=r"<DataFrame>:2: score is not a number: 'nan'"):
        ev.add_predictions("s", df)
    # None in an object column is a missing score, as an empty field of a file is
    ev.add_predictions("s", df.astype({"score": object}).where(df.notna(), None))
    assert ev.con.execute("SELECT count(*) FROM predictions WHERE score IS NULL").fetchone() == (1,)


def test_confusion_plot_folder_is_refused_not_reported_written(tmp_path, capsys):
    args = ["confusion", "--taxonomy", write(tmp_path, "tax.tsv", TAX), "--truth", write(tmp_path, "y.tsv", TRUTH),
            "--pred", "s=" + write(tmp_path, "p.tsv", TRUTH), "--plot", str(tmp_path)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "wrote" not in err and "--plot" in err and not list(tmp_path.glob("*.png"))


# ---------------------------------------------------------------------------------------------- empty predictions
def test_empty_prediction_file_is_a_system_that_predicted_nothing(tmp_path, capsys):
    code, rows, err = evaluate(tmp_path, capsys, pred="")
    assert code == 0
    assert rows[("s", "hierarchical_recall", "micro")] == 0.0
    assert err.strip() == (f"hiersql: warning: {tmp_path / 'pred.tsv'}: no predicted label; evaluated as a system"
                           " that predicted nothing for every instance")


def test_germeval_submission_without_subtask_b(data_dir, capsys):
    folder = data_dir / "germeval2019"
    empty = folder / "submissions" / "HUIU__multi.txt"
    assert "subtask_b" not in empty.read_text(encoding="utf-8")
    code = main(["evaluate", "--taxonomy", str(folder / "hierarchy.txt"), "--truth",
                 str(folder / "blurbs_test_label.txt"), "--pred", f"huiu={empty}", "--labels-format", "germeval-b",
                 "--metrics", "hr", "--format", "csv"])
    out, err = capsys.readouterr()
    assert code == 0
    assert [float(r["value"]) for r in csv.DictReader(io.StringIO(out))] == [0.0, 0.0]
    assert err.count("\n") == 1 and f"{empty}: no predicted label" in err


# ---------------------------------------------------------------------------------------------- reused --db
def test_db_reused_with_another_truth_drops_the_earlier_systems(tmp_path, capsys):
    db = str(tmp_path / "r.duckdb")
    code, first, _ = evaluate(tmp_path, capsys, "--db", db, metrics="hp")
    assert code == 0 and set(first) == {("s", "hierarchical_precision", "macro"),
                                        ("s", "hierarchical_precision", "micro")}
    other = tmp_path / "other"
    other.mkdir()
    args = ["evaluate", "--taxonomy", write(other, "tax.tsv", TAX), "--truth", write(other, "y.tsv", "1\tc\n2\tb\n"),
            "--pred", "t=" + write(other, "t.tsv", "1\tc\n2\tb\n"), "--db", db, "--metrics", "hp", "--format", "csv"]
    assert main(args) == 0
    out, err = capsys.readouterr()
    # s was read against the first truth: not evaluated against the second, and the user is told
    assert {r["system"] for r in csv.DictReader(io.StringIO(out))} == {"t"}
    assert err.strip() == (f"hiersql: warning: --db {db}: dropped 1 system(s) of an earlier run, read against"
                           " another truth or taxonomy (first: 's'); their stored results stay")
    with duckdb.connect(db, read_only=True) as con:
        assert con.execute("SELECT system, count(*) FROM results GROUP BY 1 ORDER BY 1").fetchall() == [
            ("s", 2), ("t", 2)]
    # the same truth again: the systems stored with it stay and are evaluated again
    args[args.index("--pred") + 1] = "u=" + write(other, "u.tsv", "1\tc\n")
    assert main(args) == 0
    out, err = capsys.readouterr()
    assert {r["system"] for r in csv.DictReader(io.StringIO(out))} == {"t", "u"} and err == ""


# ---------------------------------------------------------------------------------------------- --db lock
def test_locked_db_names_the_process_and_wait_waits(tmp_path, capsys):
    db = tmp_path / "r.duckdb"
    duckdb.connect(str(db)).close()
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time\n"
                               f"con = duckdb.connect({str(db)!r})\nprint('locked', flush=True)\ntime.sleep(3)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        started = time.monotonic()
        code, _, err = evaluate(tmp_path, capsys, "--db", str(db))
        assert code == 2 and len(err.splitlines()) == 1
        assert f"--db {db}: DuckDB file is locked by process {holder.pid}" in err and "--wait" in err
        code, rows, err = evaluate(tmp_path, capsys, "--db", str(db), "--wait", "30")
        assert code == 0 and rows[("s", "hierarchical_recall", "micro")] == 1.0
        assert time.monotonic() - started < 30
    finally:
        holder.kill()
        holder.wait()


# ---------------------------------------------------------------------------------------------- long lines
def test_line_longer_than_duckdbs_default_maximum_is_read(tmp_path, capsys):
    # DuckDB reads lines of up to 2 MB by default; this prediction line is 3 MB (one label, repeated)
    code, rows, err = evaluate(tmp_path, capsys, truth="b\nd\n", pred="d " * 1_500_000 + "\nd\n", fmt="lines")
    # instance 1: true {b}, predicted {d} -> {b, d}; instance 2: {b, d} both (root a left out): hP = 3/4
    assert code == 0 and rows[("s", "hierarchical_precision", "micro")] == 0.75
    assert "1499999 duplicate" in err


def test_line_beyond_the_readers_maximum_is_reported_as_such(tmp_path):
    from hiersql.inputs.sources import read_error

    path = write(tmp_path, "p.tsv", "1\t" + "b" * 300_000 + "\n")
    with pytest.raises(duckdb.Error) as caught:
        duckdb.sql("SELECT * FROM read_csv($p, columns={'raw': 'VARCHAR'}, delim=chr(31), quote='', escape='',"
                   " header=false, auto_detect=false, max_line_size=100000)", params={"p": path}).fetchall()
    error = read_error(caught.value, path)
    assert str(error) == f"{path}:1: line of 300002 bytes is longer than the reader's maximum of 100000 bytes"


# ---------------------------------------------------------------------------------------------- memory
@pytest.mark.slow
def test_memory_limit_on_two_million_label_rows(tmp_path):
    """--memory-limit 500MB on 2,000,000 label rows: DuckDB spills to disk and finishes, or the command fails
    with one line naming --memory-limit and the step; never DuckDB's multi-line "failed to pin block"."""
    import random

    rng = random.Random(15)
    n = 20_000
    (tmp_path / "tax.tsv").write_text("".join(f"n{(i - 1) // 8}\tn{i}\n" for i in range(1, n)), encoding="utf-8")
    leaves = range(n // 8 + 1, n)
    for name in ("truth", "pred"):
        (tmp_path / f"{name}.tsv").write_text(
            "".join(f"{i}\tn{label}\n" for i in range(500_000) for label in rng.sample(leaves, 2)), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "hiersql", "evaluate", "--taxonomy", "tax.tsv", "--truth", "truth.tsv", "--pred",
         "s=pred.tsv", "--memory-limit", "500MB", "--metrics", "hp,hr,hf,sdl", "--format", "csv"],
        cwd=tmp_path, capture_output=True, text=True, env={**__import__("os").environ,
                                                           "PYTHONPATH": str(Path(__file__).parents[1])})
    if done.returncode == 0:
        assert len(done.stdout.splitlines()) == 1 + 7 and done.stderr == ""
    else:
        assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
        assert done.stderr.startswith("hiersql: error: --memory-limit: out of memory while ")


def test_memory_limit_too_small_names_the_flag_and_step(tmp_path, capsys):
    code, _, err = evaluate(tmp_path, capsys, "--memory-limit", "1KB")
    assert code == 2 and len(err.splitlines()) == 1
    # DuckDB either takes the limit and runs out in the load, or refuses to set a limit below what it already
    # holds (it depends on what the process allocated before): one line naming the flag either way
    assert err.startswith("hiersql: error: --memory-limit: out of memory while reading taxonomy, closure and labels") \
        or (err.startswith("hiersql: error: --memory-limit: invalid memory limit") and err.endswith("'1KB'\n"))


def test_out_of_memory_names_the_step_and_a_limit_to_try(data_dir, capsys):
    """GermEval B's HCM under a 30MB limit: the stores loads, a step of the family runs out; the one line
    names the step, what DuckDB held and needed, and twice the limit (DuckDB reports 30MB as 28.6 MiB)."""
    import re

    canonical = data_dir / "canonical"
    code = main(["evaluate", "--taxonomy", str(canonical / "taxonomy.tsv"), "--truth", str(canonical / "truth_b.tsv"),
                 "--pred", str(canonical / "pred_b" / "Averbis__BOHB_CNN.tsv"), "--metrics", "hcm",
                 "--memory-limit", "30MB", "--format", "csv"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1, err
    assert re.fullmatch(r"hiersql: error: --memory-limit: out of memory while the (SQL step confusion\.\w+|Python"
                        r" step \w+) \(DuckDB held [\d.]+ \w+ of its 28\.6 MiB and needed [\d.]+ \w+ more\): try"
                        r" 60MB, or free disk space for DuckDB's temp_directory\n", err), err


# ---------------------------------------------------------------------------------------------- lead's options
@pytest.mark.parametrize("extra", [("--beta", "nan"), ("--average", ","), ("--metrics", ","),
                                   ("--memory-limit=-5GB",), ("--max-distance", "-1"),
                                   ("--dmax", "-1", "--metrics", "gie")], ids=" ".join)
def test_bad_options_of_evaluate(tmp_path, capsys, extra):
    args = ["evaluate", "--taxonomy", write(tmp_path, "tax.tsv", TAX), "--truth", write(tmp_path, "y.tsv", TRUTH),
            "--pred", "s=" + write(tmp_path, "p.tsv", TRUTH), *extra]
    code = main(args)
    err = capsys.readouterr().err
    flag = extra[0].split("=")[0]
    assert code == 2 and len(err.splitlines()) == 1 and flag in err


def test_sql_unknown_param(capsys):
    assert main(["sql", "hp", "--param", "unknown=1"]) == 2
    assert "--param" in capsys.readouterr().err


@pytest.mark.parametrize("expanded", [False, True], ids=["quoted glob", "the shell's expansion"])
def test_pred_glob_matching_the_truth_file_is_said(tmp_path, capsys, expanded):
    """``--pred 'run/*.tsv'``, or ``--pred run/*.tsv`` that the shell expands into the files it matches (one
    ``--pred`` takes several sources), with the truth in ``run/``."""
    run = tmp_path / "run"
    run.mkdir()
    truth = write(run, "truth.tsv", TRUTH)
    write(run, "sys.tsv", "1\tb\n2\tb\n")
    preds = sorted(glob.glob(str(run / "*.tsv"))) if expanded else [str(run / "*.tsv")]
    code = main(["evaluate", "--taxonomy", write(tmp_path, "tax.tsv", TAX), "--truth", truth, "--pred",
                 *preds, "--metrics", "hp", "--format", "csv"])
    out, err = capsys.readouterr()
    assert code == 0 and {r["system"] for r in csv.DictReader(io.StringIO(out))} == {"sys", "truth"}
    assert err == f"hiersql: warning: --pred: system 'truth' is the truth file {truth}; it is evaluated as a system\n"


def test_a_repeated_edge_is_counted_once_and_said(tmp_path, capsys, data_dir):
    # as a repeated label: the same values, and one warning line with the count and the first repeat's line
    code, got, err = evaluate(tmp_path, capsys, tax=TAX + "a\tb\nb\td\n")
    assert code == 0
    assert err == f"hiersql: warning: {tmp_path / 'tax.tsv'}: 2 repeated edge(s) counted once (first: line 4," \
        " 'a' -> 'b')\n"
    assert got == evaluate(tmp_path, capsys)[1]
    # HEMKit's example hierarchy repeats 10 -> 20 on its lines 1 and 2: evaluate says so, `hiersql hemkit` (which
    # prints what HEMKit prints) does not
    example = data_dir / "hemkit-example"
    files = [str(example / name) for name in ("cat_hier.txt", "Golden.txt", "result.txt")]
    assert main(["evaluate", "--taxonomy", files[0], "--truth", files[1], "--pred", "s=" + files[2],
                 "--labels-format", "lines", "--metrics", "hp", "--format", "csv"]) == 0
    assert capsys.readouterr().err == f"hiersql: warning: {files[0]}: 1 repeated edge(s) counted once (first: line" \
        " 2, '10' -> '20')\n"
    assert main(["hemkit", *files, "4", "5"]) == 0
    assert capsys.readouterr().err == ""
