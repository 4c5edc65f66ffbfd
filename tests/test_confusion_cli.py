"""``hiersql confusion``: printed matrices, CSV, heat maps and bad input (run in-process)."""

from __future__ import annotations

import csv
import io

import pytest
from matplotlib.image import imread

from hiersql.analyses import figures
from hiersql.cli import main

LABELS = ["l1", "l2", "l3", "l4"]
TRUTH = "1100 0110 0001 1111 0110 0110 0101"  # Krstinić Table 4
PRED = "1100 1110 1001 0111 0100 1100 1010"


def _long(vectors: str) -> str:
    return "".join(f"x{i}\t{LABELS[j]}\n" for i, v in enumerate(vectors.split()) for j, b in enumerate(v)
                   if b == "1")


@pytest.fixture()
def table4(tmp_path):
    (tmp_path / "tax.tsv").write_text("".join(f"root\t{label}\n" for label in LABELS))
    (tmp_path / "truth.tsv").write_text(_long(TRUTH))
    (tmp_path / "pred.tsv").write_text(_long(PRED))
    (tmp_path / "same.tsv").write_text(_long(TRUTH))
    return tmp_path


def _args(folder, *extra, preds=("sys=pred.tsv",)):
    out = ["confusion", "--taxonomy", str(folder / "tax.tsv"), "--truth", str(folder / "truth.tsv")]
    for spec in preds:
        name, _, file = spec.partition("=")
        out += ["--pred", f"{name}={folder / file}"]
    return [*out, *extra]


def _png_size(path) -> tuple[int, int]:
    image = imread(path)
    return image.shape[1], image.shape[0]


def test_table_prints_table5_with_recall_and_precision(table4, capsys):
    assert main(_args(table4)) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line]
    assert lines[0] == "system: sys"
    rows = {line.split()[0]: line.split()[1:] for line in lines[3:]}
    assert rows["l1"] == ["1.00", "0.33", "0.33", "0.33", "0.50"]
    assert rows["l2"] == ["0.83", "4.67", "0.50", "0.00", "0.78"]
    assert rows["l3"] == ["1.33", "1.00", "1.67", "0.00", "0.42"]
    assert rows["l4"] == ["1.00", "0.00", "0.50", "1.50", "0.50"]
    assert rows["precision"] == ["0.24", "0.78", "0.56", "0.82"]


def test_csv_long_form_full_precision(table4, capsys):
    assert main(_args(table4, "--format", "csv", preds=("sys=pred.tsv", "perfect=same.tsv"))) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert {r["system"] for r in rows} == {"sys", "perfect"}
    perfect = {(r["true_label"], r["pred_label"]): float(r["value"]) for r in rows if r["system"] == "perfect"}
    assert perfect == {("l1", "l1"): 2, ("l2", "l2"): 6, ("l3", "l3"): 4, ("l4", "l4"): 3}
    cell = next(r for r in rows if r["system"] == "sys" and r["true_label"] == r["pred_label"] == "l2")
    assert float(cell["value"]) == pytest.approx(14 / 3, abs=1e-12)
    assert float(cell["recall"]) == pytest.approx((14 / 3) / 6, abs=1e-12)


def test_normalize_recall(table4, capsys):
    assert main(_args(table4, "--normalize", "recall")) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line]
    rows = {line.split()[0]: line.split()[1:] for line in lines[3:]}
    assert rows["l2"][:4] == ["0.14", "0.78", "0.08", "0.00"]  # Krstinić Table 7


def test_plot_pixel_size_one_and_several_systems(table4, capsys):
    png = table4 / "m.png"
    assert main(_args(table4, "--plot", str(png))) == 0
    width, height = figures.heatmap_size(4)
    assert _png_size(png) == (round(width * figures.DPI), round(height * figures.DPI))
    # 4 labels: 0.8 in per cell + margins (2.5 + 1.5 wide, 2.5 + 0.6 high)
    assert _png_size(png) == (720, 630)
    assert main(_args(table4, "--plot", str(png), preds=("a=pred.tsv", "b=same.tsv"))) == 0
    assert _png_size(table4 / "m_a.png") == _png_size(table4 / "m_b.png") == (720, 630)
    assert capsys.readouterr().err.splitlines()[-2:] == [f"hiersql: wrote {table4 / n}" for n in ("m_a.png", "m_b.png")]


@pytest.mark.parametrize("suffix", ["svg", "pdf", "png"])
def test_the_same_plot_twice_is_the_same_bytes(table4, capsys, suffix):
    """No date in the file, fixed SVG element ids: the same command writes the same file (SVG had its date and
    random ids, PDF its date)."""
    written = []
    for name in ("a", "b"):
        path = table4 / f"{name}.{suffix}"
        assert main(_args(table4, "--plot", str(path))) == 0
        written.append(path.read_bytes())
    assert written[0] == written[1]


def test_germeval_depth_one_plot(data_dir, tmp_path, capsys):
    canon = data_dir / "canonical"
    png = tmp_path / "genres.png"
    args = ["confusion", "--taxonomy", str(canon / "taxonomy.tsv"), "--truth", str(canon / "truth_b.tsv"),
            "--pred", f"averbis={canon / 'pred_b' / 'Averbis__BOHB_CNN.tsv'}", "--depth", "1",
            "--plot", str(png)]
    assert main(args) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line]
    genres = [g for g in (canon / "nodes_a.txt").read_text(encoding="utf-8").splitlines() if g.strip()]
    # rows: the 8 genres (this system has no missed instance, so no ∅ row), then precision
    rows = lines[3:-1]
    assert sorted(next(g for g in genres if row.startswith(g + " ")) for row in rows) == sorted(genres)
    assert lines[-1].startswith("precision")
    width, height = figures.heatmap_size(len(genres))
    assert _png_size(png) == (round(width * figures.DPI), round(height * figures.DPI))


def test_hierarchical_kind(table4, tmp_path, capsys):
    (tmp_path / "tree.tsv").write_text("root\ta\nroot\tb\na\ta1\na\ta2\n")
    (tmp_path / "t.tsv").write_text("1\ta1\n2\tb\n")
    (tmp_path / "p.tsv").write_text("1\ta2\n2\tb\n")
    png = tmp_path / "h.png"
    args = ["confusion", "--kind", "hierarchical", "--taxonomy", str(tmp_path / "tree.tsv"),
            "--truth", str(tmp_path / "t.tsv"), "--pred", f"s={tmp_path / 'p.tsv'}", "--format", "csv",
            "--plot", str(png)]
    assert main(args) == 0
    row = next(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    # a1 vs a2: common path root>a: TP 1, FP 1 (a2), FN 1 (a1), TN 1 (b, sibling of a);
    # b vs b: TP 1, TN 1 (a, sibling of b)
    assert (row["system"], row["tp"], row["fp"], row["fn"], row["tn"]) == ("s", "2", "1", "1", "2")
    assert _png_size(png) == (round(3.2 * figures.DPI), round(3.4 * figures.DPI))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--depth", "-1"], "--depth must be >= 0"),
        (["--kind", "hierarchical", "--depth", "1"], "--depth applies to --kind multilabel only"),
        (["--kind", "hierarchical", "--normalize", "recall"], "--normalize applies to --kind multilabel only"),
        (["--plot", "/no/such/folder/m.png"], "folder of the plot file does not exist"),
    ],
)
def test_bad_options_exit_2(table4, capsys, extra, message):
    assert main(_args(table4, *extra)) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_unknown_label_exit_2_names_file_line_and_label(table4, capsys):
    (table4 / "bad.tsv").write_text("x0\tl1\nx1\tl7\n")
    assert main(_args(table4, preds=("bad=bad.tsv",))) == 2
    err = capsys.readouterr().err.strip()
    assert f"{table4 / 'bad.tsv'}:2" in err and "'l7'" in err and len(err.splitlines()) == 1


def test_node_named_empty_set_exit_2(tmp_path, capsys):
    (tmp_path / "tax.tsv").write_text("root\ta\nroot\t∅\n")
    (tmp_path / "t.tsv").write_text("1\ta\n")
    args = ["confusion", "--taxonomy", str(tmp_path / "tax.tsv"), "--truth", str(tmp_path / "t.tsv"),
            "--pred", f"s={tmp_path / 't.tsv'}"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "tax.tsv") in err and "empty-set" in err
