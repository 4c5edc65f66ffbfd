"""Reliability diagrams and the calibration table of the HTML report, rendered by a real headless Chromium
(the helpers of ``tests/test_report_browser.py``), on the transposon data of Riehl et al. (two models'
marginal probabilities and one unscored system): every diagram's dots are the bins of scikit-learn's
``calibration_curve`` on the same flattened scores, its ECE and the table's Brier score are scikit-learn's."""

from __future__ import annotations

import io
import re
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss

from hiersql.analyses import curves
from hiersql.analyses.report import calibration_section, reliability_diagram
from hiersql.cli import main
from hiersql.inputs.store import Store
from hiersql.inputs.taxonomy import Taxonomy
from tests.test_report_browser import (  # noqa: F401 (chromium: a fixture)
    WIDTH,
    _scroll_width,
    chromium,
    console_lines,
    run_chromium,
)

N_INSTANCES = 300
MODELS = ("RFSB", "TopDown")


class _Diagrams(HTMLParser):
    """The ``<svg class="reliability">`` elements of a DOM: their attributes and their dots' attributes; the
    rows of the calibration table."""

    def __init__(self) -> None:
        super().__init__()
        self.panels: list[dict] = []
        self.table: list[list[str]] = []
        self._in_table = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "svg" and attrs.get("class") == "reliability":
            self.panels.append({**attrs, "dots": []})
        elif tag == "circle" and attrs.get("class") == "bin":
            self.panels[-1]["dots"].append(attrs)
        elif tag == "table" and "calibration" in (attrs.get("class") or ""):
            self._in_table = True
        elif tag == "tr" and self._in_table:
            self.table.append([])
        elif tag == "td" and self._in_table:
            self.table[-1].append(attrs["data-sort"])

    def handle_endtag(self, tag):
        if tag == "table":
            self._in_table = False


@pytest.fixture(scope="module")
def report(tmp_path_factory, data_dir):
    """The report of two scored models and one unscored system on the first instances of the transposon
    data, and the flattened forecasts (model, level, y, score) computed without hiersql from its files."""
    folder = tmp_path_factory.mktemp("reliability")
    canonical = data_dir / "canonical"
    truth = pd.read_csv(canonical / "truth_transposon.tsv", sep="\t", header=None, dtype=str,
                        names=["instance_id", "label"])
    truth = truth[truth["instance_id"].astype(int) <= N_INSTANCES]
    truth.to_csv(folder / "truth.tsv", sep="\t", header=False, index=False)
    preds = []
    for model in MODELS:
        scores = curves.read_transposon_scores(data_dir / "transposon" / f"predictions_{model}.txt")
        scores = scores[scores["instance_id"].astype(int) <= N_INSTANCES]
        scores[["instance_id", "label", "score"]].to_csv(folder / f"{model}.tsv", sep="\t", header=False,
                                                        index=False)
        preds += ["--pred", f"{model}={folder / f'{model}.tsv'}"]
    plain = pd.read_csv(canonical / "pred_transposon" / "RFSB.tsv", sep="\t", header=None, dtype=str)
    plain[plain[0].astype(int) <= N_INSTANCES].to_csv(folder / "plain.tsv", sep="\t", header=False, index=False)
    out = folder / "report.html"
    args = ["report", "--taxonomy", str(canonical / "taxonomy_transposon.tsv"), "--truth", str(folder / "truth.tsv"),
            *preds, "--pred", f"plain={folder / 'plain.tsv'}", "--metrics", "hf", "--bootstrap", "50"]
    assert main([*args, "--out", str(out)]) == 0
    # the forecasts, from the files: a scored (instance, node) pair is true when the node is on the
    # instance's true path (the truth file lists the whole root path); its level is the node's depth
    positive = set(truth.itertuples(index=False, name=None))
    forecasts = {}
    for model in MODELS:
        rows = pd.read_csv(folder / f"{model}.tsv", sep="\t", header=None, dtype={0: str, 1: str},
                           names=["instance_id", "label", "score"])
        rows["y"] = [int((i, v) in positive) for i, v in zip(rows["instance_id"], rows["label"], strict=True)]
        rows["level"] = rows["label"].str.count("/") + 1
        forecasts[model] = rows
    return out, forecasts, args


def _ece(y: np.ndarray, s: np.ndarray, n_bins: int = 10) -> float:
    """ECE with equal-width bins from scikit-learn's calibration_curve and the counts of the same bins."""
    prob_true, prob_pred = calibration_curve(y, s, n_bins=n_bins, strategy="uniform")
    counts = np.bincount(np.searchsorted(np.linspace(0, 1, n_bins + 1)[1:-1], s), minlength=n_bins)
    return float(np.sum(counts[counts > 0] * np.abs(prob_true - prob_pred)) / len(s))


def test_reliability_diagrams_in_chromium_match_sklearn(chromium, report):  # noqa: F811 (the fixture)
    out, forecasts, _ = report
    result = run_chromium(chromium, out, "--dump-dom")
    assert console_lines(result) == []
    dom = result.stdout
    assert '<section id="calibration">' in dom and "No scores: plain." in dom
    parsed = _Diagrams()
    parsed.feed(dom)
    # one diagram per scored system and level (0: every level pooled; the transposon tree has 3 levels), a
    # system's diagrams together and in level order
    shown = [(p["data-system"], int(p["data-level"])) for p in parsed.panels]
    systems = list(dict.fromkeys(m for m, _ in shown))
    assert sorted(systems) == sorted(MODELS) and shown == [(m, k) for m in systems for k in range(4)]
    table = {(r[0], int(r[1])): r for r in parsed.table if r}
    for panel in parsed.panels:
        rows = forecasts[panel["data-system"]]
        level = int(panel["data-level"])
        part = rows if level == 0 else rows[rows["level"] == level]
        y, s = part["y"].to_numpy(), part["score"].to_numpy()
        prob_true, prob_pred = calibration_curve(y, s, n_bins=10, strategy="uniform")
        dots = panel["dots"]
        assert len(dots) == len(prob_true), (panel["data-system"], level)  # TopDown's level 3: one bin
        assert [float(d["data-mean-score"]) for d in dots] == pytest.approx(list(prob_pred), rel=1e-9)
        assert [float(d["data-fraction-positive"]) for d in dots] == pytest.approx(list(prob_true), rel=1e-9)
        assert sum(int(d["data-n"]) for d in dots) == len(y)
        assert float(panel["data-ece"]) == pytest.approx(_ece(y, s), rel=1e-9)
        line = table[(panel["data-system"], level)]
        assert int(line[2]) == len(y)
        assert float(line[3]) == pytest.approx(brier_score_loss(y, s), rel=1e-9)
        assert float(line[5]) == pytest.approx(_ece(y, s), rel=1e-9)  # the table's ECE is the diagram's
    assert len(table) == len(parsed.panels)  # no row for the unscored system
    assert sum(len(p["dots"]) for p in parsed.panels) > 50


def test_the_report_with_diagrams_fits_a_laptop_screen(chromium, report, tmp_path):  # noqa: F811 (the fixture)
    out, _, _ = report
    assert _scroll_width(chromium, out, tmp_path) <= WIDTH


def test_the_section_is_the_same_bytes_twice(report, tmp_path):
    out, _, args = report
    again = tmp_path / "again.html"
    assert main([*args, "--out", str(again)]) == 0

    def section(path):
        return re.search(r"<section id='calibration'>.*?</section>", path.read_text(encoding="utf-8"), re.S).group(0)

    assert section(again) == section(out)


def test_no_section_without_scores():
    store = Store()
    store.load_taxonomy(Taxonomy.from_edges([("r", "a"), ("r", "b")]))
    store.add_truth([["a"], ["b"]])
    store.add_predictions("s", [["a"], ["a"]])
    assert calibration_section(store, ["s"]) is None


def test_scores_outside_zero_one_are_named_not_drawn():
    store = Store()
    store.load_taxonomy(Taxonomy.from_edges([("r", "a"), ("r", "b")]))
    store.add_truth([["a"], ["b"]])
    store.add_predictions("logits", pd.DataFrame({"instance_id": ["0", "1"], "label": ["a", "a"],
                                                  "score": [2.5, -1.0]}))
    sid, heading, html = calibration_section(store, ["logits"])
    assert (sid, heading) == ("calibration", "Calibration")
    assert "outside [0, 1]" in html and "logits" in html and "<svg" not in html


def test_a_diagram_by_hand():
    bins = pd.DataFrame({"bin": [0, 9], "n": [4, 1], "mean_score": [0.0, 1.0], "fraction_positive": [0.25, 1.0]})
    svg = reliability_diagram(bins, "level 1", 0.2, system="s<1>", level=1)
    assert svg.count("<circle class='bin'") == 2 and "data-system='s&lt;1&gt;'" in svg
    # the plot area is 150 px from (40, 26): score 0 at x = 40, fraction 0.25 at y = 26 + 150 * 0.75
    assert "cx='40.00' cy='138.50'" in svg and "cx='190.00' cy='26.00'" in svg
    assert "r='7.00'" in svg and "r='3.50'" in svg  # area proportional to n: radius 7 · sqrt(n / 4)
    assert "ECE 0.200" in svg


def test_breakdown_writes_the_diagrams_with_their_ece(report, capsys):
    out, forecasts, _ = report
    folder = out.parent
    base = ["breakdown", "--taxonomy", report[2][2], "--truth", str(folder / "truth.tsv")]  # the report's taxonomy
    page = folder / "calibration.html"
    assert main([*base, "--pred", f"RFSB={folder / 'RFSB.tsv'}", "--by", "calibration", "--bins", "5",
                 "--format", "csv", "--html", str(page)]) == 0
    printed = pd.read_csv(io.StringIO(capsys.readouterr().out))
    parsed = _Diagrams()
    parsed.feed(page.read_text(encoding="utf-8"))
    assert [int(p["data-level"]) for p in parsed.panels] == [0, 1, 2, 3]
    rows = forecasts["RFSB"]
    for panel in parsed.panels:
        level = int(panel["data-level"])
        part = rows if level == 0 else rows[rows["level"] == level]
        y, s = part["y"].to_numpy(), part["score"].to_numpy()
        prob_true, prob_pred = calibration_curve(y, s, n_bins=5, strategy="uniform")
        assert [float(d["data-mean-score"]) for d in panel["dots"]] == pytest.approx(list(prob_pred), rel=1e-9)
        assert [float(d["data-fraction-positive"]) for d in panel["dots"]] == pytest.approx(list(prob_true),
                                                                                           rel=1e-9)
        ece = _ece(y, s, 5)
        assert float(panel["data-ece"]) == pytest.approx(ece, rel=1e-9)
        assert printed.loc[printed["level"] == level, "ece_uniform"].item() == pytest.approx(ece, rel=1e-9)
        assert f"ECE {ece:.3f}" in page.read_text(encoding="utf-8")


@pytest.mark.parametrize(("extra", "message"), [
    (["--by", "level", "--html", "x.html"], "--html: only with --by calibration (not --by level): 'x.html'"),
    (["--by", "calibration", "--html", "x.png"], "--html: must name a .html file: 'x.png'"),
    (["--by", "calibration", "--html", "/no/such/folder/x.html"], "--html: folder of the page does not exist"),
])
def test_breakdown_html_flag_errors(report, capsys, extra, message):
    out, _, args = report
    folder = out.parent
    code = main(["breakdown", "--taxonomy", args[2], "--truth", str(folder / "truth.tsv"), "--pred",
                 f"RFSB={folder / 'RFSB.tsv'}", *extra])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and message in err
