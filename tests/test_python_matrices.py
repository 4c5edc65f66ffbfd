"""2-D arrays given where label sets are expected: an indicator matrix (scikit-learn's multilabel-indicator
format) or padded paths (HiClass, hiereval) is refused with one line naming the adapter that reads it as
meant; read through the adapter it gives the label sets' values. Hand-computed case: the tree 0 > {1, 2},
1 > 3, 2 > 4 (root 0 left out): truth {3}, {4}, {1} against {3}, {2}, {4} has |Ŷaug ∩ Yaug| = 2 + 1 + 0 = 3
of 5 true and 5 predicted augmented labels, so hF micro = 3/5."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse
from sklearn.preprocessing import MultiLabelBinarizer

import hiersql
from hiersql.errors import InputError

TAX = hiersql.Taxonomy.from_edges([("0", "1"), ("0", "2"), ("1", "3"), ("2", "4")])
TRUTH, PRED = [["3"], ["4"], ["1"]], [["3"], ["2"], ["4"]]


@pytest.fixture(scope="module")
def binarizer() -> MultiLabelBinarizer:
    return MultiLabelBinarizer().fit(TRUTH + PRED)


def test_label_sets_by_hand():
    assert hiersql.hierarchical_f1(TRUTH, PRED, TAX) == pytest.approx(3 / 5, abs=1e-15)


@pytest.mark.parametrize("form", [np.asarray, lambda m: m.astype(bool), sparse.csr_matrix])
def test_an_indicator_matrix_is_refused_in_one_line_naming_the_adapter(binarizer, form):
    matrix = form(binarizer.transform(TRUTH))
    with pytest.raises(InputError) as caught:
        hiersql.hierarchical_f1(matrix, PRED, TAX)
    message = str(caught.value)
    assert message.startswith("y_true is a ") and "indicator matrix" in message and "\n" not in message
    assert "hiersql.labels_from_indicator(y_true, classes)" in message and "of shape (3, 4)>" in message
    with pytest.raises(InputError, match=r"^source is a .*labels_from_indicator\(source, classes\)"):
        hiersql.Evaluator(TAX).add_truth(matrix)


def test_an_indicator_matrix_through_the_adapter_gives_the_label_sets_values(binarizer):
    truth = hiersql.labels_from_indicator(binarizer.transform(TRUTH), binarizer.classes_)
    pred = hiersql.labels_from_indicator(sparse.csr_matrix(binarizer.transform(PRED)), binarizer.classes_)
    assert (truth, pred) == (TRUTH, PRED)
    assert hiersql.hierarchical_f1(truth, pred, TAX) == pytest.approx(3 / 5, abs=1e-15)
    with pytest.raises(ValueError, match=r"shape \(n, 3\)"):
        hiersql.labels_from_indicator(binarizer.transform(TRUTH), ["1", "2", "3"])
    with pytest.raises(ValueError, match="0/1 or bool"):
        hiersql.labels_from_indicator(2 * binarizer.transform(TRUTH), binarizer.classes_)


def test_rows_of_a_numeric_array_that_is_no_indicator_are_label_sets():
    """Integer labels (not only 0 and 1), a row per instance: label sets as given."""
    tax = hiersql.Taxonomy.from_edges([(0, 1), (0, 2), (1, 3), (2, 4)])
    assert hiersql.hierarchical_f1(np.array([[3], [4], [1]]), np.array([[3], [2], [4]]), tax) == \
        pytest.approx(3 / 5, abs=1e-15)


@pytest.mark.parametrize(("pad", "adapter"), [("", "labels_from_paths"), ("UNK", "labels_from_unk_paths")])
def test_padded_paths_are_refused_naming_their_adapter_and_read_through_it(pad, adapter):
    paths = np.array([["1", "3"], ["2", "4"], ["1", pad]])
    with pytest.raises(InputError, match=rf"^y_true is a 2-D array of paths padded with '{pad}'; read it with"
                                         rf" hiersql.{adapter}\(y_true\)"):
        hiersql.hierarchical_f1(paths, PRED, TAX)
    read = getattr(hiersql, adapter)(paths, **({"pad": pad} if pad == "" else {"unk": pad}))
    assert read == TRUTH
    assert hiersql.hierarchical_f1(read, PRED, TAX) == pytest.approx(3 / 5, abs=1e-15)
