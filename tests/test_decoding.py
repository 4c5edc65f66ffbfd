"""Decoding per-node scores (SPEC §6) and the transposon score files."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hiersql.errors import DataWarning, InputError
from hiersql.inputs.decoding import (
    TRANSPOSON_COLUMNS,
    decode,
    read_scores,
    read_transposon,
    to_long,
    top_down_argmax,
    top_down_threshold,
    transposon_taxonomy,
)
from hiersql.inputs.taxonomy import Taxonomy

# r > x, y; x > x1, x2; y > y1
TAX = Taxonomy.from_edges([("r", "x"), ("r", "y"), ("x", "x1"), ("x", "x2"), ("y", "y1")])
COLS = ("x", "x1", "x2", "y", "y1")


def test_argmax_walks_to_a_leaf() -> None:
    scores = np.array([
        [0.9, 0.2, 0.7, 0.1, 0.0],  # x, then x2
        [0.1, 0.9, 0.9, 0.8, 0.3],  # y, then y1
        [0.0, 0.0, 0.0, 0.0, 0.0],  # all zero: first child at every level (threshold 0 with >=)
        [0.5, 0.4, 0.4, 0.5, 0.9],  # tie x/y: first column (x); tie x1/x2: x1
    ])
    assert top_down_argmax(scores, COLS, TAX) == ["x2", "y1", "x1", "x1"]


def test_ties_follow_column_order_not_taxonomy_order() -> None:
    cols = ("y", "y1", "x2", "x", "x1")  # y before x, x2 before x1
    scores = np.array([[0.5, 0.0, 0.3, 0.5, 0.3]])
    assert top_down_argmax(scores, cols, TAX) == ["y1"]
    scores = np.array([[0.1, 0.0, 0.3, 0.5, 0.3]])
    assert top_down_argmax(scores, cols, TAX) == ["x2"]


def test_threshold_may_stop_at_inner_node_or_root() -> None:
    scores = np.array([
        [0.9, 0.2, 0.4, 0.1, 0.0],  # x, its best child 0.4 < 0.5: stop at x
        [0.3, 0.9, 0.9, 0.2, 0.9],  # no top-level node reaches 0.5: nothing
        [0.6, 0.5, 0.2, 0.1, 0.0],  # 0.5 >= 0.5: x1
    ])
    assert top_down_threshold(scores, COLS, TAX) == ["x", None, "x1"]
    assert decode(scores, COLS, TAX, "top_down_threshold", threshold=0.35) == ["x2", None, "x1"]
    assert decode(scores, COLS, TAX) == ["x2", "x1", "x1"]


def test_decode_errors() -> None:
    with pytest.raises(ValueError, match="decode policy"):
        decode(np.zeros((1, 5)), COLS, TAX, "argmax")
    with pytest.raises(ValueError, match="shape"):
        top_down_argmax(np.zeros((1, 4)), COLS, TAX)
    with pytest.raises(InputError, match="not a taxonomy node"):
        top_down_argmax(np.zeros((1, 5)), ("x", "x1", "x2", "y", "zz"), TAX)


def test_to_long() -> None:
    df = to_long(["x2", None, "y"])
    assert df.values.tolist() == [["1", "x2"], ["3", "y"]]
    df = to_long(["x2", None, "y"], taxonomy=TAX, start=0)
    assert df.values.tolist() == [["0", "x"], ["0", "x2"], ["2", "y"]]


def test_transposon_taxonomy() -> None:
    tax = transposon_taxonomy()
    assert tax.root == "root" and not tax.virtual_root and tax.is_tree
    assert len(tax.nodes) == 19
    assert tax.children("root") == ["1", "2"]
    assert tax.children("2/1") == [f"2/1/{i}" for i in range(1, 7)]
    assert tax.children("2") == ["2/1", "2/2", "2/3"]
    assert sorted(tax.leaves) == sorted(["1/1/1", "1/1/2", "1/1/3", "1/2/1", "1/2/2", "2/1/1", "2/1/2",
                                         "2/1/3", "2/1/4", "2/1/5", "2/1/6", "2/2", "2/3"])


def test_read_scores_trailer_and_errors(tmp_path: Path) -> None:
    good = tmp_path / "p.txt"
    good.write_text("0 1 0.5\n1 0 0\n\nAU(PRC) value = 0.7\n")
    with pytest.warns(DataWarning, match="ignored 1 line"):
        scores = read_scores(good, n_columns=3)
    assert scores.tolist() == [[0, 1, 0.5], [1, 0, 0]]
    bad = tmp_path / "bad.txt"
    bad.write_text("0 1 0.5\n1 0\n")
    with pytest.raises(InputError, match=r"bad.txt:2: expected 3 numbers, found 2"):
        read_scores(bad, n_columns=3)
    bad.write_text("0 1 0.5\n1 x 0\n")
    with pytest.raises(InputError, match=r"bad.txt:2: score is not a number: 'x'"):
        read_scores(bad, n_columns=3)
    bad.write_text("0 nan 0.5\n")
    with pytest.raises(InputError, match=r"bad.txt:1: score is NaN"):
        read_scores(bad, n_columns=3)
    bad.write_text("\n")
    with pytest.raises(InputError, match="empty"):
        read_scores(bad, n_columns=3)
    with pytest.raises(InputError, match="not found"):
        read_scores(tmp_path / "missing.txt")


def test_read_transposon_binary_truth(tmp_path: Path) -> None:
    good = tmp_path / "truth.txt"
    good.write_text(" ".join(["0"] * 8 + ["1", "1", "0", "0", "1"] + ["0"] * 5) + "\n")
    assert read_transposon(good, binary=True) == {"instance_id": ["1"], "label": ["2/1/3"]}
    bad = tmp_path / "bad.txt"
    bad.write_text(good.read_text() + " ".join(["0.5"] + ["0"] * 17) + "\n")
    with pytest.raises(InputError, match=r"bad.txt:2: truth value of column '1' is not 0 or 1: 0.5"):
        read_transposon(bad, binary=True)


@pytest.mark.parametrize("name", ["truelabels", "HC_GA", "HC_LGA", "NLLCPN", "RFSB", "TERL", "TopDown"])
def test_transposon_decoding_matches_canonical_files(data_dir: Path, name: str) -> None:
    """The canonical files hold each instance's decoded root-to-leaf path (root left out)."""
    source = data_dir / "transposon" / ("truelabels.txt" if name == "truelabels" else f"predictions_{name}.txt")
    target = data_dir / "canonical" / ("truth_transposon.tsv" if name == "truelabels"
                                      else f"pred_transposon/{name}.tsv")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        labels = decode(read_scores(source), TRANSPOSON_COLUMNS, transposon_taxonomy())
    assert len(labels) == 9006 and None not in labels
    expected = pd.read_csv(target, sep="\t", header=None, names=["instance_id", "label"], dtype=str)
    got = to_long(labels, taxonomy=transposon_taxonomy())
    assert sorted(map(tuple, got.values.tolist())) == sorted(map(tuple, expected.values.tolist()))
    leaves = read_transposon(source) if name == "truelabels" else None
    if leaves is not None:  # the truth decodes to leaves only
        assert set(leaves["label"]) <= set(transposon_taxonomy().leaves)
