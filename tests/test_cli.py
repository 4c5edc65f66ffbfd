"""The command line: output formats, --db results, demo, reports (batch jobs: tests/test_jobs*.py)."""

from __future__ import annotations

import csv
import io
import json

import duckdb
import pandas as pd
import pytest

from hiersql.cli import main


def demo_args(fixtures_dir, *extra):
    folder = fixtures_dir / "demo"
    return ["evaluate", "--taxonomy", str(folder / "taxonomy.tsv"), "--truth", str(folder / "truth.tsv"),
            "--pred", str(folder / "[cfs]*.tsv"), *extra]


class _Terminal(io.StringIO):
    """A stderr that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_evaluate_shows_its_steps_on_a_terminal_only(fixtures_dir, monkeypatch, capsys):
    args = demo_args(fixtures_dir, "--metrics", "hp,hamming_loss", "--format", "csv")
    assert main(args) == 0
    assert capsys.readouterr().err == ""  # not a terminal: no bar
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert main(args) == 0
    shown = terminal.getvalue()
    # 3 loading steps + 2 families; the postfix names the running step
    assert "evaluate:   0%" in shown and "/5" in shown
    for step in ("reading taxonomy, closure and labels", "checking truth", "checking predictions",
                 "set_based", "flat"):
        assert step in shown, step
    assert capsys.readouterr().out.startswith("system,metric,average,value")  # stdout untouched


def test_csv_output_full_precision(fixtures_dir, capsys):
    assert main(demo_args(fixtures_dir, "--format", "csv", "--metrics", "hr", "--average", "micro")) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["system"] for r in rows] == ["cautious", "flat_errors", "shallow"]
    assert rows[0].keys() == {"system", "metric", "average", "value"}
    shallow = rows[2]
    assert shallow["metric"] == "hierarchical_recall" and shallow["average"] == "micro"
    assert float(shallow["value"]) == 14 / 26  # repr() round-trips exactly


def test_one_pred_flag_takes_several_sources_as_the_shell_expands_a_glob(fixtures_dir, capsys):
    """``--pred shallow.tsv cautious.tsv`` (what the shell makes of ``--pred [cs]*.tsv``) is ``--pred
    shallow.tsv --pred cautious.tsv``; shallow's hierarchical recall is the hand value above (14/26)."""
    folder = fixtures_dir / "demo"
    common = ["evaluate", "--taxonomy", str(folder / "taxonomy.tsv"), "--truth", str(folder / "truth.tsv"),
              "--metrics", "hr", "--average", "micro", "--format", "csv"]
    files = [str(folder / f"{name}.tsv") for name in ("shallow", "cautious")]
    assert main([*common, "--pred", *files]) == 0
    several = capsys.readouterr().out
    assert main([*common, "--pred", files[0], "--pred", files[1]]) == 0
    assert several == capsys.readouterr().out
    rows = {r["system"]: float(r["value"]) for r in csv.DictReader(io.StringIO(several))}
    assert rows.keys() == {"cautious", "shallow"} and rows["shallow"] == 14 / 26


def test_json_and_table_output(fixtures_dir, capsys):
    assert main(demo_args(fixtures_dir, "--format", "json", "--metrics", "sdl")) == 0
    data = json.loads(capsys.readouterr().out)
    assert {d["metric"] for d in data} == {"symmetric_difference_loss"} and data[0]["average"] == ""
    assert main(demo_args(fixtures_dir, "--metrics", "hp")) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["system", "metric", "average", "value"] and len(out) == 2 + 3 * 2


def test_json_output_is_strict_json_with_a_value_not_defined(data_dir, capsys):
    # GermEval A's twistbytes__thresholding predicted no label: its hP under --zero-division nan is null in
    # JSON, which has no NaN (jobs results --format json writes its rows the same way)
    canonical = data_dir / "canonical"
    args = ["evaluate", "--taxonomy", str(canonical / "taxonomy.tsv"), "--truth", str(canonical / "truth_a.tsv"),
            "--pred", str(canonical / "pred_a" / "twistbytes__thresholding.tsv"), "--metrics", "hp",
            "--average", "micro", "--zero-division", "nan", "--format", "json"]

    def strict(text: str) -> list:
        return json.loads(text, parse_constant=lambda name: pytest.fail(f"not JSON: {name}"))

    assert main(args) == 0
    assert strict(capsys.readouterr().out) == [{"system": "twistbytes__thresholding",
                                                "metric": "hierarchical_precision", "average": "micro",
                                                "value": None}]


def test_db_keeps_tables_and_results(fixtures_dir, tmp_path, capsys):
    db = tmp_path / "r.duckdb"
    assert main(demo_args(fixtures_dir, "--db", str(db), "--dataset", "demo", "--metrics", "hf")) == 0
    capsys.readouterr()
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM results WHERE dataset = 'demo'").fetchall() == [(6,)]
        assert con.execute("SELECT count(DISTINCT system) FROM predictions").fetchall() == [(3,)]


def test_demo_prints_every_system(capsys, tmp_path):
    assert main(["demo", "--metrics", "hp,hr", "--db", str(tmp_path / "d.duckdb"), "--no-report"]) == 0
    with duckdb.connect(str(tmp_path / "d.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM results WHERE dataset = 'demo'").fetchall() == [(3 * 4,)]
    out = capsys.readouterr().out
    assert "cautious" in out and "flat_errors" in out and "shallow" in out
    assert "hierarchical_recall (micro)" in out


def test_per_instance_under_all_skips_the_families_that_do_not_apply(tmp_path, capsys):
    """A DAG (C under A and B): ``all`` leaves out the scoring trees (trees only), and so does
    ``--per-instance`` (it failed on them, after writing the other families' files, with no result). By hand,
    instance 2 (T = {A}, P = {C}; Paug = {C, A, B}, the root left out): hP = 1/3, hR = 1, SDL = 2."""
    (tmp_path / "dag.tsv").write_text("R\tA\nR\tB\nA\tC\nB\tC\n")
    (tmp_path / "t.tsv").write_text("1\tC\n2\tA\n")
    (tmp_path / "p.tsv").write_text("1\tC\n2\tC\n")
    args = ["evaluate", "--taxonomy", str(tmp_path / "dag.tsv"), "--truth", str(tmp_path / "t.tsv"), "--pred",
            f"p={tmp_path / 'p.tsv'}", "--metrics", "all", "--format", "csv"]
    assert main(args) == 0
    every = capsys.readouterr().out
    assert main([*args, "--per-instance", str(tmp_path / "per")]) == 0
    assert capsys.readouterr().out == every and "scoring" not in every and ",pl," not in every
    assert sorted(p.name for p in (tmp_path / "per").iterdir()) == [
        "confusion.csv", "flat.csv", "lca.csv", "pair_based.csv", "set_based.csv", "severity.csv"]
    row = pd.read_csv(tmp_path / "per" / "set_based.csv", dtype={"instance_id": str}).set_index("instance_id").loc["2"]
    assert (row.hierarchical_precision, row.hierarchical_recall, row.symmetric_difference_loss) == (1 / 3, 1.0, 2)


def test_per_instance_csv(fixtures_dir, tmp_path, capsys):
    assert main(demo_args(fixtures_dir, "--metrics", "hp", "--per-instance", str(tmp_path / "per"))) == 0
    capsys.readouterr()
    rows = list(csv.DictReader((tmp_path / "per" / "set_based.csv").open()))
    assert len(rows) == 3 * 8
    six = next(r for r in rows if r["system"] == "shallow" and r["instance_id"] == "6")
    assert (six["n_true"], six["n_pred"], six["n_both"]) == ("5", "1", "1")


def test_labels_option_fixes_the_class_universe(fixtures_dir, capsys):
    # The Hamming loss divides by the number of classes: by default those seen in the truth or the
    # system's predictions, with --labels the given universe.
    args = demo_args(fixtures_dir, "--metrics", "hamming_loss", "--format", "csv")
    assert main(args) == 0
    seen = {r["system"]: float(r["value"]) for r in csv.DictReader(io.StringIO(capsys.readouterr().out))}
    universe = "feline,canine,road vehicle,aircraft,animal,vehicle,jaguar,house cat,wolf,dog,truck,airplane,car,lion"
    assert main([*args, "--labels", universe + ",thing,helicopter"]) == 0
    fixed = {r["system"]: float(r["value"]) for r in csv.DictReader(io.StringIO(capsys.readouterr().out))}
    # shallow: 8 instances; wrong labels per instance: |YΔZ| = 2,2,2,2,2,3,2,2 = 17;
    # seen classes = 8 true leaves + 6 predicted inner nodes = 14; the universe has 16
    assert seen["shallow"] == pytest.approx(17 / (8 * 14))
    assert fixed["shallow"] == pytest.approx(17 / (8 * 16))


def test_html_report_from_stored_results(fixtures_dir, tmp_path, capsys):
    db = str(tmp_path / "r.duckdb")
    assert main(demo_args(fixtures_dir, "--db", db, "--dataset", "demo", "--metrics", "hp,hr,sdl")) == 0
    out = tmp_path / "report.html"
    assert main(["report", "--db", db, "--out", str(out)]) == 0
    html = out.read_text(encoding="utf-8")
    assert "<h2>demo</h2>" in html and "data:image/svg+xml;base64," in html
    table = html[html.index("<table class='ranking sortable'>"):]
    table = table[:table.index("</table>")]
    assert table.count("<tr>") == 1 + 3  # header + one row per system
    assert table.count("<th>") == 5  # hp, hr (micro, macro) + sdl
    # shallow has the best micro precision (1.0, rank 1); flat_errors/cautious share the lowest SDL (rank 1)
    row = next(line for line in table.splitlines() if ">shallow</td>" in line)
    assert "<td class='best' data-sort='1'>1.0000" not in row  # no groups without tests: no shading
    assert "data-sort='1'>1.0000<span class='rank'>1</span>" in row
    assert main(["report", "--db", str(tmp_path / "none.duckdb"), "--out", str(out)]) == 2
    capsys.readouterr()


def test_memory_limit_option(fixtures_dir, capsys):
    assert main(demo_args(fixtures_dir, "--metrics", "hp", "--memory-limit", "500MB")) == 0
    capsys.readouterr()
    assert main(demo_args(fixtures_dir, "--metrics", "hp", "--memory-limit", "lots")) == 2
    err = capsys.readouterr().err
    assert "--memory-limit" in err and "'lots'" in err


def test_a_control_character_in_a_system_name_keeps_each_table_row_one_line(tmp_path, capsys):
    """A newline or a tab in a system's name (a database value) is shown escaped in the aligned table, which it
    broke over two lines; CSV quotes the name as it is."""
    import duckdb

    (tmp_path / "tax.tsv").write_text("r\ta\nr\tb\n")
    (tmp_path / "truth.tsv").write_text("1\ta\n2\tb\n")
    db = tmp_path / "w.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE TABLE runs AS SELECT * FROM (VALUES ('M' || chr(10) || 'X' || chr(9) || 'Z', '1', 'a'))"
                    " AS t(model, doc, genre)")
    args = ["evaluate", "--taxonomy", str(tmp_path / "tax.tsv"), "--truth", str(tmp_path / "truth.tsv"),
            "--pred", f"duckdb:{db}::runs", "--instance-col", "doc", "--label-col", "genre", "--system-col", "model",
            "--metrics", "hp", "--average", "micro"]
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and lines[2].startswith("M\\nX\\tZ  hierarchical_precision  micro"), lines
    assert main([*args, "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == ['"M', 'X\tZ",hierarchical_precision,micro,1.0']
