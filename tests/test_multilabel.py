"""Multi-label confusion matrix of Krstinić et al. (measures/multilabel/; SPEC §7)."""

from __future__ import annotations

import random
from collections import defaultdict
from fractions import Fraction

import numpy as np
import pytest

from hiersql import sqlfiles
from hiersql.inputs.store import Store
from hiersql.inputs.taxonomy import Taxonomy
from hiersql.measures import multilabel as ml
from hiersql.measures.multilabel import EMPTY, multilabel_confusion_matrix
from tests._engine_cases import query_rows

LABELS = ["l1", "l2", "l3", "l4"]


def _sets(vectors: str) -> list[set[str]]:
    return [{LABELS[j] for j, bit in enumerate(v) if bit == "1"} for v in vectors.split()]


# Krstinić Table 4 (SPEC §7)
Y = _sets("1100 0110 0001 1111 0110 0110 0101")
Z = _sets("1100 1110 1001 0111 0100 1100 1010")


def _reference(y_true, y_pred) -> dict[tuple[str, str], float]:
    """Algorithm 1 written directly from eq. (11), (13), (15), (17), with {∅} for an empty set; each cell the
    exact sum of its shares (fractions), rounded once to a float."""
    m: dict[tuple[str, str], Fraction] = defaultdict(Fraction)
    for y, z in zip(y_true, y_pred, strict=True):
        y, z = set(y) or {EMPTY}, set(z) or {EMPTY}
        y_only, z_only, both = y - z, z - y, y & z
        one = Fraction(1)
        if not y_only and not z_only:
            cells = [(a, a, one) for a in y]
        elif not y_only:
            cells = [(a, b, one / len(z)) for a in y for b in z_only] + [(a, a, one * len(y) / len(z)) for a in y]
        elif not z_only:
            cells = [(a, b, one / len(z)) for a in y_only for b in z] + [(b, b, one) for b in z]
        else:
            cells = [(a, b, one / len(z_only)) for a in y_only for b in z_only] + [(a, a, one) for a in both]
        for a, b, v in cells:
            m[a, b] += v
    return {cell: float(value) for cell, value in m.items()}


def test_table5_raw_matrix():
    raw = multilabel_confusion_matrix(Y, Z)
    assert list(raw.index) == LABELS and list(raw.columns) == LABELS
    table5 = [[1.00, .33, .33, .33], [.83, 4.67, .50, 0], [1.33, 1.00, 1.67, 0], [1.00, 0, .50, 1.50]]
    assert raw.round(2).values.tolist() == table5
    # exact values: row sums = number of instances with the label
    assert raw.sum(axis=1).tolist() == pytest.approx([2, 6, 4, 3])
    assert raw.loc["l2", "l2"] == pytest.approx(14 / 3)


def test_table5_per_class_precision_recall_and_tables_6_7():
    recall = multilabel_confusion_matrix(Y, Z, kind="recall")
    precision = multilabel_confusion_matrix(Y, Z, kind="precision")
    assert np.diag(recall).round(2).tolist() == [.50, .78, .42, .50]
    assert np.diag(precision).round(2).tolist() == [.24, .78, .56, .82]
    table6 = [[.24, .06, .11, .18], [.20, .78, .17, 0], [.32, .17, .56, 0], [.24, 0, .17, .82]]
    table7 = [[.50, .17, .17, .17], [.14, .78, .08, 0], [.33, .25, .42, 0], [.33, 0, .17, .50]]
    assert precision.round(2).values.tolist() == table6
    assert recall.round(2).values.tolist() == table7


def test_single_label_reduces_to_multiclass_table1():
    # Krstinić Table 1 (N = 45): the raw counts; Tables 2 and 3: its precision and recall matrices.
    counts = [[8, 0, 0, 0], [4, 9, 1, 1], [3, 0, 7, 0], [1, 0, 2, 9]]
    y_true, y_pred = [], []
    for i, row in enumerate(counts):
        for j, c in enumerate(row):
            y_true += [[LABELS[i]]] * c
            y_pred += [[LABELS[j]]] * c
    assert multilabel_confusion_matrix(y_true, y_pred).values.tolist() == counts
    table2 = [[.5, 0, 0, 0], [.25, 1, .1, .1], [.19, 0, .7, 0], [.06, 0, .2, .9]]
    table3 = [[1, 0, 0, 0], [.27, .6, .07, .07], [.3, 0, .7, 0], [.08, 0, .17, .75]]
    assert multilabel_confusion_matrix(y_true, y_pred, kind="precision").round(2).values.tolist() == table2
    assert multilabel_confusion_matrix(y_true, y_pred, kind="recall").round(2).values.tolist() == table3
    # (Table 1's recall column prints 0.80 for λ3; its own counts and Table 3 give 7/10 = 0.70.)


def test_empty_sets_row_and_column():
    y_true = [["a", "b"], [], [], ["a"]]
    y_pred = [[], ["a", "b", "c"], [], ["a"]]
    m = multilabel_confusion_matrix(y_true, y_pred)
    assert list(m.index) == ["a", "b", "c", EMPTY]
    assert m.loc["a", EMPTY] == 1 and m.loc["b", EMPTY] == 1  # missed: each true label -> ∅ column
    assert m.loc[EMPTY, ["a", "b", "c"]].tolist() == pytest.approx([1 / 3] * 3)  # no truth: ∅ row, 1/|Z| each
    assert m.loc[EMPTY, EMPTY] == 1  # both empty
    assert m.loc["a", "a"] == 1
    assert m.values.sum() == pytest.approx(5)


def test_labels_fix_rows_and_columns():
    m = multilabel_confusion_matrix(Y, Z, labels=["l4", "l1", "l9"])
    assert list(m.index) == ["l4", "l1", "l9"] and list(m.columns) == ["l4", "l1", "l9"]
    assert m.loc["l4", "l4"] == pytest.approx(1.5) and m.loc["l9"].sum() == 0


def test_random_sets_match_reference_implementation():
    rng = random.Random(3)
    labels = [f"c{i}" for i in range(6)]
    y_true = [rng.sample(labels, rng.randint(0, 4)) for _ in range(200)]
    y_pred = [rng.sample(labels, rng.randint(0, 4)) for _ in range(200)]
    m = multilabel_confusion_matrix(y_true, y_pred)
    ref = _reference(y_true, y_pred)
    got = {(a, b): v for a, row in m.iterrows() for b, v in row.items() if v}
    assert got == pytest.approx(ref)
    # every true label (∅ for an empty truth) contributes a row summing to 1
    n_rows = defaultdict(int)
    for y in y_true:
        for label in y or [EMPTY]:
            n_rows[label] += 1
    assert m.sum(axis=1).to_dict() == pytest.approx(dict(n_rows))


def _tree_store() -> Store:
    tax = Taxonomy.from_edges([("A", "A1"), ("A", "A2"), ("B", "B1"), ("B", "B2"), ("A1", "A1x")])
    store = Store()
    store.load_taxonomy(tax)  # virtual root above A and B
    store.add_truth([["A1x", "B1"], ["A2"], ["B2"]])
    store.add_predictions("s1", [["A1x"], ["A1"], ["B2", "A"]])
    store.add_predictions("s2", [["B1"], [], ["B"]])
    return store


def test_store_all_systems_taxonomy_order_and_depth():
    store = _tree_store()
    cells = ml.confusion_long(store)
    assert set(cells["system"]) == {"s1", "s2"}
    assert list(cells.columns) == ["system", "true_label", "pred_label", "value", "recall", "precision"]
    m1 = ml.matrix(store, "s1")
    # depth-first taxonomy order (children in input order), ∅ would be last
    assert list(m1.index) == ["A", "A1", "A1x", "A2", "B1", "B2"]
    # instance 0: Y={A1x,B1}, Z={A1x}: scenario (iii): B1 -> A1x (1/|Z| = 1), A1x diagonal 1
    assert m1.loc["B1", "A1x"] == 1 and m1.loc["A1x", "A1x"] == 1
    # instance 2: Y={B2}, Z={B2,A}: scenario (ii): B2 -> A 1/2, B2 diagonal 1/2
    assert m1.loc["B2", "A"] == 0.5 and m1.loc["B2", "B2"] == 0.5
    m2 = ml.matrix(store, "s2")
    assert m2.loc["A2", EMPTY] == 1 and list(m2.index)[-1] == EMPTY
    # depth 1: labels become A or B; s1: ({A,B},{A}), ({A},{A}), ({B},{B,A})
    d1 = ml.matrix(store, "s1", depth=1)
    assert d1.values.tolist() == [[2.0, 0.0], [1.5, 0.5]]
    recall = ml.matrix(store, "s1", kind="recall", depth=1)
    assert recall.loc["B"].tolist() == [0.75, 0.25]
    scores = ml.class_scores(store, depth=1)
    s1 = scores[scores["system"] == "s1"].set_index("label")
    assert s1.loc["A", "precision"] == pytest.approx(2 / 3.5) and s1.loc["B", "recall"] == pytest.approx(0.25)
    with pytest.raises(KeyError):
        ml.matrix(store, "nobody")
    with pytest.raises(ValueError, match="kind"):
        ml.matrix(store, "s1", kind="f1")


def test_a_node_named_like_the_empty_set_is_refused():
    store = Store()
    store.load_taxonomy(Taxonomy.from_edges([("r", EMPTY), ("r", "a")]))
    store.add_truth([["a"]])
    store.add_predictions("s", [[EMPTY]])
    with pytest.raises(ValueError, match="empty-set"):
        ml.confusion_long(store)


@pytest.mark.parametrize("dialect", ["postgres", "spark"])
def test_multilabel_sql_transpiles(dialect):
    for name in sqlfiles.queries("multilabel"):
        params = {"empty": EMPTY, "depth": None, "zero_division": 0.0}
        assert "$" not in sqlfiles.render("multilabel", name, params, dialect=dialect)


def test_germeval_cells_are_the_exact_sums_of_their_shares(data_dir):
    """The cells sum many shares of 1/|Z| (depth 1: GermEval's eight genres): exactly (DECIMAL sums), so the
    digits are those of the exact sum, whatever the order in which the engine's threads add them (as DOUBLE,
    runs of the same command differed in the last digits, and in the rounded table)."""
    canon = data_dir / "canonical"
    taxonomy = Taxonomy.from_file(canon / "taxonomy.tsv")
    store = Store()
    store.load_taxonomy(taxonomy)
    store.add_truth(canon / "truth_b.tsv")
    store.add_predictions("s", canon / "pred_b" / "Averbis__BOHB_CNN.tsv")
    cells = ml.confusion_long(store, depth=1)

    def genre(node: str) -> str:  # its ancestor at depth 1 (GermEval's taxonomy is a tree)
        while taxonomy.parents(node)[0] != taxonomy.root:
            node = taxonomy.parents(node)[0]
        return node

    def read(path):
        sets = defaultdict(set)
        for line in path.read_text(encoding="utf-8").splitlines():
            iid, label = line.split("\t")
            sets[iid].add(genre(label))
        return sets

    truth, pred = read(canon / "truth_b.tsv"), read(canon / "pred_b" / "Averbis__BOHB_CNN.tsv")
    ids = sorted(truth)
    want = _reference([truth[i] for i in ids], [pred.get(i, set()) for i in ids])
    got = dict(zip(zip(cells["true_label"], cells["pred_label"], strict=True), cells["value"], strict=True))
    assert got == want  # exactly


def test_germeval_subtask_b_matches_reference(data_dir):
    canon = data_dir / "canonical"
    store = Store()
    store.load_taxonomy(Taxonomy.from_file(canon / "taxonomy.tsv"))
    store.add_truth(canon / "truth_b.tsv")
    names = ["EricssonResearch__fconv_A6C1Y", "LT-UHH__baseline"]
    for name in names:
        store.add_predictions(name, canon / "pred_b" / f"{name}.tsv")
    cells = ml.confusion_long(store)

    def read(path):
        sets = defaultdict(set)
        for line in path.read_text(encoding="utf-8").splitlines():
            iid, label = line.split("\t")
            sets[iid].add(label)
        return sets

    truth = read(canon / "truth_b.tsv")
    ids = sorted(truth)
    for name in names:
        pred = read(canon / "pred_b" / f"{name}.tsv")
        ref = _reference([truth[i] for i in ids], [pred.get(i, set()) for i in ids])
        mine = cells[cells["system"] == name]
        got = dict(zip(zip(mine["true_label"], mine["pred_label"], strict=True), mine["value"], strict=True))
        assert got == pytest.approx(ref)


def test_rendered_sql_gives_the_same_matrix():
    store = _tree_store()
    params = {"empty": EMPTY, "depth": 1, "zero_division": 0.0}
    rendered = sqlfiles.render("multilabel", "ml_matrix", params, dialect="duckdb")
    got = {row[:3]: row[3] for row in store.con.execute(rendered).fetchall()}
    expected = {row[:3]: row[3] for row in query_rows(store, "multilabel", "ml_matrix", params)}
    assert got == pytest.approx(expected)
    # s2 at depth 1: ({A,B},{B}) scenario (iii), ({A},∅) missed, ({B},{B}) exact
    assert {k[1:]: v for k, v in got.items() if k[0] == "s2"} == {("A", "B"): 1, ("A", EMPTY): 1, ("B", "B"): 2}
