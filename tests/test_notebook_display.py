"""A comparison and a classification report render as HTML tables in a notebook (``_repr_html_``), with the
values of their frames. Hand-computed case: the tree 0 > {1, 2}, 1 > 3, 2 > 4 (root 0 left out), truth {3},
{4}, {1}; system ``a`` predicts {3}, {2}, {4} (hF micro 3/5), system ``b<x>`` {3}, {4}, {2} (4/5)."""

from __future__ import annotations

from html.parser import HTMLParser

import hiersql

TAX = hiersql.Taxonomy.from_edges([("0", "1"), ("0", "2"), ("1", "3"), ("2", "4")])
TRUTH = [["3"], ["4"], ["1"]]


class Cells(HTMLParser):
    """The text of each table row's cells, and the headings."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.tables: list[list[list[str]]] = []  # the rows of each table
        self.headings: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "table":
            self.tables.append([])
        if tag == "tr":
            self.rows.append([])
            self.tables[-1].append(self.rows[-1])
        if tag in ("td", "th", "h4"):
            self._in = tag
            (self.headings if tag == "h4" else self.rows[-1]).append("")

    def handle_endtag(self, tag: str) -> None:
        self._in = None if tag == self._in else self._in

    def handle_data(self, data: str) -> None:
        if self._in == "h4":
            self.headings[-1] += data
        elif self._in:
            self.rows[-1][-1] += data.strip()


def cells(html: str) -> Cells:
    parser = Cells()
    parser.feed(html)
    return parser


def test_a_comparison_renders_its_ranking_and_tests():
    evaluator = hiersql.Evaluator(TAX)
    evaluator.add_truth(TRUTH)
    evaluator.add_predictions("a", [["3"], ["2"], ["4"]])
    evaluator.add_predictions("b<x>", [["3"], ["4"], ["2"]])
    comparison = evaluator.compare(["hf"])
    html = comparison._repr_html_()
    assert "b&lt;x&gt;" in html and "b<x>" not in html  # names escaped
    shown = cells(html)
    assert shown.headings == ["Ranking", "Paired tests (sign)"]
    ranking = {row[1]: row for row in shown.tables[0][1:] if row[0] == "hf micro"}
    assert ranking["a"][2] == f"{3 / 5:.4f}" and ranking["b<x>"][2] == f"{4 / 5:.4f}"
    assert (ranking["a"][5], ranking["b<x>"][5]) == ("2", "1")
    assert sorted(row[0] for row in shown.tables[1][1:]) == ["hf macro", "hf micro"]  # a pair a side


def test_a_classification_report_renders_its_frame():
    report = hiersql.classification_report(TRUTH, [["3"], ["2"], ["4"]], TAX)
    shown = cells(report._repr_html_())
    assert shown.rows[0] == list(report.frame.columns)
    body = {row[0]: row for row in shown.rows[1:]}
    assert set(body) == set(report.frame["label"])
    precision = report.frame.set_index("label")["precision"]
    for label, row in body.items():
        assert row[5] == f"{precision[label]:.4f}"
    assert body["micro avg"][5] == f"{3 / 5:.4f}"  # the pooled counts of the classes: hP micro
