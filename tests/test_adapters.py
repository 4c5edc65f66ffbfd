"""Adapters (hiersql/inputs/adapters.py): HiClass padded path arrays and UNK-padded paths to label sets; by hand,
and hiersql's measures on the adapted sets against HiClass's own metrics (hiclass.metrics) on the same arrays."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pandas as pd
import pytest
from hiclass import metrics as hiclass_metrics

import hiersql
from hiersql.inputs.adapters import labels_from_paths, labels_from_unk_paths, taxonomy_from_paths
from hiersql.inputs.taxonomy import Taxonomy


def test_two_dimensional_paths_by_hand():
    paths = np.array([["Animal", "Mammal", "Cat"], ["Animal", "Bird", ""], ["", "", ""]])
    assert labels_from_paths(paths) == [["Cat"], ["Bird"], []]
    assert labels_from_paths(paths, node="path") == [["Animal::Mammal::Cat"], ["Animal::Bird"], []]
    assert taxonomy_from_paths(paths) == [("<root>", "Animal"), ("Animal", "Mammal"), ("Mammal", "Cat"),
                                          ("Animal", "Bird")]


def test_three_dimensional_paths_by_hand():
    paths = np.array([
        [["Animal", "Mammal", "Cat"], ["Plant", "Tree", ""]],
        [["Animal", "Bird", ""], ["", "", ""]],
    ])
    assert labels_from_paths(paths) == [["Cat", "Tree"], ["Bird"]]
    edges = taxonomy_from_paths(paths, node="path", separator="/")
    assert ("Plant", "Plant/Tree") in edges and ("<root>", "Plant") in edges


def test_a_label_after_padding_is_an_error():
    with pytest.raises(ValueError, match="path 1: label 'Cat' after the padding"):
        labels_from_paths([["Animal", "Mammal", "Cat"], ["Animal", "", "Cat"]])
    with pytest.raises(ValueError, match="shape"):
        labels_from_paths(["Animal", "Cat"])


def test_unk_paths_by_hand():
    paths = [["Animal", "Mammal", "UNK"], ["Animal", "Mammal", "Cat"], ["UNK", "UNK"],
             [["Plant", "UNK"], ["Animal", "Bird"]]]
    assert labels_from_unk_paths(paths) == [["Mammal"], ["Cat"], [], ["Plant", "Bird"]]
    assert labels_from_unk_paths([["a", "b", "<unk>"]], unk="<unk>", node="path") == [["a::b"]]
    with pytest.raises(ValueError, match="after the padding 'UNK'"):
        labels_from_unk_paths([["Animal", "UNK", "Cat"]])


HICLASS_TRUE = np.array([["Animal", "Mammal", "Cat"], ["Animal", "Mammal", "Dog"], ["Plant", "Tree", "Oak"],
                         ["Animal", "Bird", ""]])
HICLASS_PRED = np.array([["Animal", "Mammal", "Dog"], ["Animal", "Bird", ""], ["Plant", "Tree", "Oak"],
                         ["Animal", "Bird", "Owl"]])


@pytest.mark.parametrize("average", ["micro", "macro"])
def test_hiclass_metrics_equal_hiersql_on_adapted_sets(average):
    tax = Taxonomy.from_edges(taxonomy_from_paths(HICLASS_TRUE, HICLASS_PRED))
    y_true, y_pred = labels_from_paths(HICLASS_TRUE), labels_from_paths(HICLASS_PRED)
    assert hiersql.hierarchical_precision(y_true, y_pred, tax, average=average) == pytest.approx(
        hiclass_metrics.precision(HICLASS_TRUE, HICLASS_PRED, average=average))
    assert hiersql.hierarchical_recall(y_true, y_pred, tax, average=average) == pytest.approx(
        hiclass_metrics.recall(HICLASS_TRUE, HICLASS_PRED, average=average))
    assert hiersql.hierarchical_f1(y_true, y_pred, tax, average=average) == pytest.approx(
        hiclass_metrics.f1(HICLASS_TRUE, HICLASS_PRED, average=average))


def test_hiclass_micro_by_hand():
    # augmented sets: {Animal, Mammal, Cat} vs {Animal, Mammal, Dog}: 2 shared; {A, M, Dog} vs {A, Bird}: 1;
    # {Plant, Tree, Oak} twice: 3; {Animal, Bird} vs {Animal, Bird, Owl}: 2 -> 8 shared of 11 predicted
    assert hiclass_metrics.precision(HICLASS_TRUE, HICLASS_PRED) == pytest.approx(8 / 11)
    tax = Taxonomy.from_edges(taxonomy_from_paths(HICLASS_TRUE, HICLASS_PRED))
    assert hiersql.hierarchical_precision(labels_from_paths(HICLASS_TRUE), labels_from_paths(HICLASS_PRED),
                                          tax) == pytest.approx(8 / 11)


def _germeval_paths(file, parent: dict[str, str], ids: list[str], k: int = 8) -> np.ndarray:
    """The label sets of a GermEval B file as a HiClass (n, k, depth) array: one root path per label that is
    not an ancestor of another label of the set. Truth and predictions need the same k: HiClass's 3-d metrics
    zip the k path slots of y_true and y_pred, so the true paths past the prediction's k would be dropped."""
    frame = pd.read_csv(file, sep="\t", header=None, dtype=str, keep_default_na=False)
    sets = defaultdict(set)
    for i, label in frame.itertuples(index=False, name=None):
        sets[i].add(label)

    def path(label):
        out = [label]
        while out[0] in parent:
            out.insert(0, parent[out[0]])
        return out

    rows = []
    for i in ids:
        paths = [path(v) for v in sorted(sets[i])]
        rows.append([p for p in paths if not any(p != q and q[: len(p)] == p for q in paths)])
    assert max(len(r) for r in rows) <= k
    out = np.full((len(ids), k, 3), "", dtype=object)
    for i, r in enumerate(rows):
        for j, p in enumerate(r):
            out[i, j, : len(p)] = p
    return out


@pytest.mark.filterwarnings("ignore:F-score is ill-defined")  # HiClass's own, for instances with hF = 0
@pytest.mark.parametrize("average", ["micro", "macro"])
def test_hiclass_on_germeval_b_paths_equals_hiersql(data_dir, average):
    canonical = data_dir / "canonical"
    parent = dict(pd.read_csv(canonical / "taxonomy.tsv", sep="\t", header=None, dtype=str)[[1, 0]]
                  .itertuples(index=False, name=None))
    pred_file = canonical / "pred_b" / "LT-UHH__baseline.tsv"
    predicted = set(pd.read_csv(pred_file, sep="\t", header=None, dtype=str)[0])
    ids = sorted(predicted)[:1500]  # HiClass divides by zero on an empty predicted set
    y_true = _germeval_paths(canonical / "truth_b.tsv", parent, ids)
    y_pred = _germeval_paths(pred_file, parent, ids)
    tax = Taxonomy.from_file(canonical / "taxonomy.tsv")
    true_sets, pred_sets = labels_from_paths(y_true), labels_from_paths(y_pred)
    for ours, theirs in ((hiersql.hierarchical_precision, hiclass_metrics.precision),
                         (hiersql.hierarchical_recall, hiclass_metrics.recall),
                         (hiersql.hierarchical_f1, hiclass_metrics.f1)):
        assert ours(true_sets, pred_sets, tax, average=average) == pytest.approx(
            theirs(y_true, y_pred, average=average), rel=1e-12)
