"""``hiersql report``: output locations and bad input (one line on stderr, exit 2)."""

from __future__ import annotations

import pytest

from hiersql.cli import build_parser, main


def _inputs(fixtures_dir):
    folder = fixtures_dir / "demo"
    return ["--taxonomy", str(folder / "taxonomy.tsv"), "--truth", str(folder / "truth.tsv"),
            "--pred", str(folder / "[cfs]*.tsv")]


@pytest.mark.parametrize(("args", "message"), [
    (["--taxonomy", "t.tsv"], "--pred: the inputs need --taxonomy, --truth and --pred"),
    ([], "--db: give the inputs (--taxonomy, --truth, --pred) or a results database"),
])
def test_missing_inputs(tmp_path, capsys, args, message):
    assert main(["report", *args, "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_bad_confusion_depth_and_bootstrap(fixtures_dir, tmp_path, capsys):
    out = str(tmp_path / "r.html")
    assert main(["report", *_inputs(fixtures_dir), "--bootstrap", "50", "--confusion-depth", "-1",
                 "--out", out]) == 2
    assert "--confusion-depth: must be >= 0: -1" in capsys.readouterr().err
    assert main(["report", *_inputs(fixtures_dir), "--bootstrap", "0", "--out", out]) == 2
    assert "--bootstrap: must be at least 1: 0" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def test_out_file_or_directory(fixtures_dir, tmp_path, capsys):
    args = ["report", *_inputs(fixtures_dir), "--metrics", "hf", "--bootstrap", "50", "--confusion-depth", "1"]
    assert main([*args, "--out", str(tmp_path / "page.html")]) == 0
    assert main([*args, "--out", str(tmp_path / "folder")]) == 0
    err = capsys.readouterr().err
    assert f"hiersql: wrote {tmp_path / 'page.html'}" in err and f"wrote {tmp_path / 'folder' / 'index.html'}" in err
    page = (tmp_path / "page.html").read_text(encoding="utf-8")
    # depth 1: animal, vehicle (and nothing else: every label has an ancestor at depth 1)
    assert "Multi-label confusion matrices at depth 1" in page


def test_stored_results_with_a_value_not_defined(data_dir, tmp_path, capsys):
    # GermEval A: twistbytes__thresholding predicted no label, so with --zero-division nan its hP is NaN: no
    # rank ("-", sorted last); the measures without an average (gie) are named without one
    canonical, db = data_dir / "canonical", tmp_path / "results.duckdb"
    assert main(["evaluate", "--taxonomy", str(canonical / "taxonomy.tsv"), "--truth", str(canonical / "truth_a.tsv"),
                 "--pred", str(canonical / "pred_a" / "t*.tsv"), "--metrics", "hp,gie", "--average", "micro",
                 "--zero-division", "nan", "--db", str(db)]) == 0
    assert main(["report", "--db", str(db), "--out", str(tmp_path / "page.html")]) == 0
    capsys.readouterr()
    page = (tmp_path / "page.html").read_text(encoding="utf-8")
    assert "<th>hp micro</th>" in page and "<th>gie</th>" in page and "nan</th>" not in page
    row = page[page.index("data-sort='twistbytes__thresholding'"):].split("</tr>")[0]
    assert "data-sort='4'>nan<span class='rank'>-</span>" in row


def test_stored_results_of_one_system(data_dir, tmp_path, capsys):
    """One system's stored values: the table without a rank, and no agreement section (τ needs two systems)."""
    canonical, db = data_dir / "canonical", tmp_path / "results.duckdb"
    pred = canonical / "pred_b" / "Averbis__BOHB_CNN.tsv"
    args = ["--taxonomy", str(canonical / "taxonomy.tsv"), "--truth", str(canonical / "truth_b.tsv"),
            "--pred", str(pred), "--metrics", "hp,hf", "--average", "micro"]
    assert main(["evaluate", *args, "--format", "csv"]) == 0
    values = dict(line.split(",")[1::2] for line in capsys.readouterr().out.splitlines()[1:])
    assert main(["evaluate", *args, "--db", str(db)]) == 0
    assert main(["report", "--db", str(db), "--out", str(tmp_path / "page.html")]) == 0
    capsys.readouterr()
    page = (tmp_path / "page.html").read_text(encoding="utf-8")
    row = page[page.index("data-sort='Averbis__BOHB_CNN'"):].split("</tr>")[0]
    assert row.count("</td>") == 3 and "class='rank'" not in row and "class='best'" not in row
    cells = [f"data-sort='1'>{float(values[metric]):.4f}</td>" for metric in ("hierarchical_precision",
                                                                          "hierarchical_f1")]
    assert all(cell in row for cell in cells), row
    assert "One system." in page and "Agreement between measures" not in page and "<h3>Measures</h3>" in page


@pytest.mark.parametrize(("out", "message"), [
    ("notes.txt", "is a file, not a folder for index.html (name the page FILE.html)"),
    ("folder.html", "is a folder; give FILE.html, or a folder name without .html"),
    ("notes.txt/sub/page.html", "{tmp}/notes.txt is not a folder"),
    ("/proc/hiersql/page.html", "cannot write the page (No such file or directory)"),
])
def test_out_that_cannot_be_the_page(fixtures_dir, tmp_path, monkeypatch, capsys, out, message):
    # refused before any work (but the last: /proc takes no folder, which only the write finds)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("mine\n")
    (tmp_path / "folder.html").mkdir()
    assert main(["report", *_inputs(fixtures_dir), "--metrics", "hf", "--bootstrap", "20", "--out", out]) == 2
    err = capsys.readouterr().err
    assert err == f"hiersql: error: --out: {message.format(tmp=tmp_path)}: '{out}'\n"
    assert (tmp_path / "notes.txt").read_text() == "mine\n"


def test_a_failed_write_keeps_the_page_that_was_there(tmp_path):
    from hiersql.analyses.report import write_report

    page = tmp_path / "page.html"
    assert write_report("<p>first</p>", page) == page
    with pytest.raises(TypeError):
        write_report(b"not text", page)  # fails while writing
    assert page.read_text() == "<p>first</p>" and [p.name for p in tmp_path.iterdir()] == ["page.html"]



def test_table_sources_are_reported_with_the_sha_256_of_their_rows(fixtures_dir, tmp_path, capsys):
    """A report from a DuckDB file's tables and a folder of Parquet part files (an internal error before: the
    page hashed every source as a file): the digest of a table is that of its rows as read (batch jobs' unit
    keys), of a folder that of its files (paths and bytes); the values are those of the files."""
    import duckdb
    import pandas as pd

    from hiersql.cli.report import source_digest
    from hiersql.jobs.keys import content_hash

    demo = fixtures_dir / "demo"

    def read(name, columns):
        return pd.read_csv(demo / name, sep="\t", header=None, names=columns, dtype=str)

    runs = tmp_path / "runs"
    runs.mkdir()
    for k, system in enumerate(("cautious", "shallow")):
        read(f"{system}.tsv", ["doc", "genre"]).assign(model=system).to_parquet(runs / f"part-{k}.parquet")
    db = tmp_path / "dw.duckdb"
    with duckdb.connect(str(db)) as con:
        for name, frame in (("tax", read("taxonomy.tsv", ["parent", "child"])),
                            ("gold", read("truth.tsv", ["doc", "genre"]))):
            con.from_df(frame).create(name)
    tables = ["--taxonomy", f"duckdb:{db}::tax", "--truth", f"duckdb:{db}::gold", "--pred", str(runs),
              "--instance-col", "doc", "--label-col", "genre", "--system-col", "model"]
    common = ["--metrics", "hf", "--bootstrap", "20", "--seed", "1"]
    assert main(["report", *tables, *common, "--out", str(tmp_path / "t.html")]) == 0
    assert main(["report", "--taxonomy", str(demo / "taxonomy.tsv"), "--truth", str(demo / "truth.tsv"),
                 "--pred", f"cautious={demo / 'cautious.tsv'}", "--pred", f"shallow={demo / 'shallow.tsv'}",
                 *common, "--out", str(tmp_path / "f.html")]) == 0
    capsys.readouterr()
    by_tables, by_files = ((tmp_path / n).read_text(encoding="utf-8") for n in ("t.html", "f.html"))
    assert by_tables.split("<h2")[1] == by_files.split("<h2")[1]  # the ranking: the same values
    gold_rows = content_hash(f"duckdb:{db}::gold", "truth", "long", {"instance_col": "doc", "label_col": "genre"})
    assert f"<code>{gold_rows}</code>" in by_tables
    args = build_parser().parse_args(["report", *tables, "--out", "x"])
    folder = source_digest(runs, "predictions", args)
    assert f"<code>{folder}</code>" in by_tables and folder != source_digest(runs / "part-0.parquet", "", args)

