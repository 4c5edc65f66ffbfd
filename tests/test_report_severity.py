"""The report's mistake-severity section (the trade-off plot, the histograms, the table), rendered by a real
headless Chromium (the helpers of ``tests/test_report_browser.py``), on GermEval 2019 subtask B: three real
submissions (hard predictions: their first label is their top-1) and one scored system made up here. Every
dot, bar and cell is checked against the mistakes counted without hiersql from the files (the top-1 label of
each instance, its distance to the nearest true label: the height of their lowest common ancestor); the hard
systems have no cell at k = 5."""

from __future__ import annotations

import random
import re
from html.parser import HTMLParser

import pandas as pd
import pytest

from hiersql.cli import main
from tests.test_report_browser import (  # noqa: F401 (chromium: a fixture)
    WIDTH,
    _scroll_width,
    chromium,
    console_lines,
    run_chromium,
)

HARD = ("LT-UHH__baseline", "HSHL__LogisticRegression_NaiveBayes1", "knowcup__DL_single_test")
SCORED = "made_up_scores"
N_INSTANCES = 600
SCORED_LABELS = 20  # labels scored per instance, as a deep classifier's top 20


class _Severity(HTMLParser):
    """Of a DOM: the trade-off plot's dots, each histogram's bars, the severity table's and the ranking
    table's rows (``data-sort`` of each cell)."""

    def __init__(self) -> None:
        super().__init__()
        self.dots: dict[str, dict] = {}
        self.bars: dict[str, dict[int, int]] = {}
        self.tables: dict[str, list[list[str | None]]] = {"severity": [], "ranking": []}
        self._table: str | None = None
        self._system: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "circle" and attrs.get("class") == "system":
            self.dots[attrs["data-system"]] = attrs
        elif tag == "svg" and attrs.get("class") == "severity-histogram":
            self._system = attrs["data-system"]
            self.bars[self._system] = {}
        elif tag == "rect" and attrs.get("class") == "bar":
            self.bars[self._system][int(attrs["data-distance"])] = int(attrs["data-instances"])
        elif tag == "table":
            self._table = next((t for t in self.tables if t in (attrs.get("class") or "").split()), None)
        elif tag == "tr" and self._table:
            self.tables[self._table].append([])
        elif tag == "td" and self._table:
            self.tables[self._table][-1].append(attrs.get("data-sort"))

    def handle_endtag(self, tag):
        if tag == "table":
            self._table = None


def _tree(path) -> tuple[dict[str, set[str]], dict[str, int]]:
    """Each node's ancestors (itself included) and height (the longest path down to a leaf), over a virtual
    root above the parentless genres."""
    edges = pd.read_csv(path, sep="\t", header=None, dtype=str, names=["parent", "child"])
    parents: dict[str, set[str]] = {}
    for p, c in zip(edges["parent"], edges["child"], strict=True):
        parents.setdefault(c, set()).add(p)
    nodes = set(edges["parent"]) | set(edges["child"])
    for node in nodes - set(parents):
        parents[node] = {"<root>"}
    children: dict[str, set[str]] = {}
    for c, ps in parents.items():
        for p in ps:
            children.setdefault(p, set()).add(c)

    def up(node: str) -> set[str]:
        return {node}.union(*(up(p) for p in parents.get(node, ())))

    def height(node: str) -> int:
        return 0 if node not in children else 1 + max(height(c) for c in children[node])

    return {n: up(n) for n in nodes}, {n: height(n) for n in nodes | {"<root>"}}


def _by_hand(folder, tree) -> dict[str, dict]:
    """Per system, from its file: the mistakes by distance, the top-1 error and the mistake severity."""
    ancestors, height = tree
    truth = pd.read_csv(folder / "truth.tsv", sep="\t", header=None, dtype=str, names=["instance_id", "label"])
    true = truth.groupby("instance_id")["label"].apply(set).to_dict()
    out = {}
    for system in (*HARD, SCORED):
        rows = pd.read_csv(folder / f"{system}.tsv", sep="\t", header=None, dtype={0: str, 1: str})
        if system == SCORED:  # highest score first, ties by label
            rows = rows.sort_values([0, 2, 1], ascending=[True, False, True], kind="stable")
        top = rows.groupby(0, sort=False)[1].first().to_dict()
        counts: dict[int, int] = {}
        for instance, labels in true.items():
            label = top.get(instance)
            if label is None or label in labels:
                continue
            d = min(min(height[a] for a in ancestors[label] & ancestors[t]) for t in labels)
            counts[d] = counts.get(d, 0) + 1
        wrong = sum(1 for i, labels in true.items() if top.get(i) not in labels)
        mistakes = sum(counts.values())
        out[system] = {"counts": counts, "error": wrong / len(true),
                       "severity": sum(d * n for d, n in counts.items()) / mistakes}
    return out


@pytest.fixture(scope="module")
def report(tmp_path_factory, data_dir):
    """The report of the first instances of GermEval B: three submissions and a scored system (per instance 20
    labels of the taxonomy with random scores, the true leaf among them, scored high in most instances), the
    same report with the scored system's rows shuffled, and the values counted by hand."""
    folder = tmp_path_factory.mktemp("severity")
    canonical = data_dir / "canonical"
    truth = pd.read_csv(canonical / "truth_b.tsv", sep="\t", header=None, dtype=str, names=["instance_id", "label"])
    kept = list(dict.fromkeys(truth["instance_id"]))[:N_INSTANCES]
    truth = truth[truth["instance_id"].isin(kept)]
    truth.to_csv(folder / "truth.tsv", sep="\t", header=False, index=False)
    for system in HARD:
        rows = pd.read_csv(canonical / "pred_b" / f"{system}.tsv", sep="\t", header=None, dtype=str)
        rows[rows[0].isin(kept)].to_csv(folder / f"{system}.tsv", sep="\t", header=False, index=False)
    rng = random.Random(11)
    edges = pd.read_csv(canonical / "taxonomy.tsv", sep="\t", header=None, dtype=str)
    labels = sorted(set(edges[0]) | set(edges[1]))
    deepest = truth.groupby("instance_id")["label"].last().to_dict()
    lines = []
    for instance in kept:
        # scores on a grid of 0.05 (ties, broken by label); the true leaf scored high in most instances
        scores = {label: rng.randrange(17) / 20 for label in rng.sample(labels, SCORED_LABELS - 1)}
        scores[deepest[instance]] = rng.randrange(14, 20) / 20 if rng.random() < 0.7 else rng.randrange(17) / 20
        lines += [f"{instance}\t{label}\t{score}\n" for label, score in scores.items()]
    (folder / f"{SCORED}.tsv").write_text("".join(lines), encoding="utf-8")
    (folder / "shuffled").mkdir()
    (folder / "shuffled" / f"{SCORED}.tsv").write_text("".join(rng.sample(lines, len(lines))), encoding="utf-8")
    args = ["report", "--taxonomy", str(canonical / "taxonomy.tsv"), "--truth", str(folder / "truth.tsv"),
            *[f"--pred={s}={folder / f'{s}.tsv'}" for s in HARD], "--metrics", "top_k_accuracy,mistake_severity",
            "--k", "1,5", "--bootstrap", "50"]
    pages = []
    for scored in (folder / f"{SCORED}.tsv", folder / "shuffled" / f"{SCORED}.tsv"):
        pages.append(folder / f"report{len(pages)}.html")
        assert main([*args, f"--pred={SCORED}={scored}", "--out", str(pages[-1])]) == 0
    return pages, _by_hand(folder, _tree(canonical / "taxonomy.tsv"))


def test_the_section_in_chromium_equals_the_mistakes_counted_by_hand(chromium, report):  # noqa: F811 (the fixture)
    (page, _), want = report
    result = run_chromium(chromium, page, "--dump-dom")
    assert console_lines(result) == []
    dom = result.stdout
    assert '<section id="severity">' in dom and "Mistake severity" in dom
    parsed = _Severity()
    parsed.feed(dom)
    assert sorted(parsed.dots) == sorted(want) and sorted(parsed.bars) == sorted(want)
    distances = sorted({d for w in want.values() for d in w["counts"]})
    assert len(distances) >= 3  # the test can fail: mistakes at several distances
    for system, values in want.items():
        dot = parsed.dots[system]
        assert float(dot["data-top1-error"]) == pytest.approx(values["error"], abs=1e-12)
        assert float(dot["data-mistake-severity"]) == pytest.approx(values["severity"], abs=1e-12)
        assert parsed.bars[system] == {d: values["counts"].get(d, 0) for d in distances}, system
    table = {row[0]: row for row in parsed.tables["severity"] if row}
    for system, values in want.items():
        assert float(table[system][1]) == pytest.approx(values["error"], abs=1e-12)
        assert int(table[system][2]) == sum(values["counts"].values())
        assert [int(c) for c in table[system][4:]] == [values["counts"].get(d, 0) for d in distances]
    # the ranking: top-1 accuracy and mistake severity at k = 1 for every system, at k = 5 the scored one only
    head = re.search(r"<table class=\"ranking sortable\"><thead><tr>(.*?)</tr>", dom, re.S).group(1)
    measures = re.findall(r"<th[^>]*>([^<]+)</th>", head)[1:]
    assert measures == ["top_k_accuracy @1", "top_k_accuracy @5", "mistake_severity @1", "mistake_severity @5"]
    for row in parsed.tables["ranking"][1:]:
        at5 = [row[1 + measures.index(m)] for m in measures if m.endswith("@5")]
        assert (at5 == [str(len(want) + 1)] * 2) == (row[0] != SCORED), row  # an empty cell, sorted last


def test_the_section_is_the_same_bytes_whatever_the_row_order(report):
    (page, shuffled), _ = report

    def section(path):
        return re.search(r"<section id='severity'>.*?</section>", path.read_text(encoding="utf-8"), re.S).group(0)

    assert section(page) == section(shuffled)


def test_the_report_with_the_section_fits_a_laptop_screen(chromium, report, tmp_path):  # noqa: F811 (the fixture)
    (page, _), _ = report
    assert _scroll_width(chromium, page, tmp_path) <= WIDTH


def test_no_section_without_severity_measures(tmp_path, fixtures_dir):
    folder = fixtures_dir / "demo"
    out = tmp_path / "report.html"
    assert main(["report", "--taxonomy", str(folder / "taxonomy.tsv"), "--truth", str(folder / "truth.tsv"),
                 "--pred", str(folder / "[cfs]*.tsv"), "--metrics", "hf", "--bootstrap", "20", "--out", str(out)]) == 0
    assert "<section id='severity'>" not in out.read_text(encoding="utf-8")
