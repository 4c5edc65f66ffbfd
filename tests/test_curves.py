"""Hierarchical precision-recall curves and calibration (curves.sql, calibration.sql) against
scikit-learn on the same flattened scores: hand examples and the transposon data of Riehl et al."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import auc, average_precision_score, brier_score_loss, log_loss, precision_recall_curve

from hiersql.analyses import calibration, curves
from hiersql.inputs.decoding import TRANSPOSON_COLUMNS, read_scores, transposon_taxonomy
from hiersql.inputs.store import Store
from hiersql.inputs.taxonomy import Taxonomy

# r > {a, b}; a > {a1, a2}; b > {b1}
EDGES = [("r", "a"), ("r", "b"), ("a", "a1"), ("a", "a2"), ("b", "b1")]
NODES = ["a", "a1", "a2", "b", "b1"]
ANCESTORS = {"a": {"a"}, "a1": {"a", "a1"}, "a2": {"a", "a2"}, "b": {"b"}, "b1": {"b", "b1"}}


def _closed(scores: np.ndarray) -> np.ndarray:
    """s*(c) = max over c and its descendants, written out for this tree."""
    out = scores.copy()
    out[:, 0] = scores[:, [0, 1, 2]].max(axis=1)
    out[:, 3] = scores[:, [3, 4]].max(axis=1)
    return out


def _truth_matrix(y_true: list[list[str]]) -> np.ndarray:
    return np.array([[int(any(c in ANCESTORS[u] for u in labels)) for c in NODES] for labels in y_true])


HAND_TRUE = [["a1"], ["a2"], ["b1"], ["b"], ["a1", "b1"]]
HAND_SCORES = np.array([
    [0.9, 0.8, 0.1, 0.2, 0.1],
    [0.6, 0.3, 0.4, 0.5, 0.2],
    [0.2, 0.1, 0.1, 0.3, 0.7],  # b1 scores above its parent b: closing lifts b to 0.7
    [0.1, 0.05, 0.05, 0.6, 0.35],
    [0.8, 0.7, 0.2, 0.4, 0.45],
])


def test_pooled_curve_is_sklearn_curve_of_the_closed_scores():
    y = _truth_matrix(HAND_TRUE).ravel()
    s = _closed(HAND_SCORES).ravel()
    precision, recall, thresholds = curves.hierarchical_precision_recall_curve(HAND_TRUE, HAND_SCORES, NODES, EDGES)
    sk_p, sk_r, sk_t = precision_recall_curve(y, s, drop_intermediate=False)
    # sklearn: increasing thresholds up to full recall, then the (1, 0) end point; ours: decreasing thresholds
    n = len(sk_t)
    assert thresholds[:n] == pytest.approx(sk_t[::-1])
    assert precision[:n] == pytest.approx(sk_p[:-1][::-1])
    assert recall[:n] == pytest.approx(sk_r[:-1][::-1])
    assert recall[n - 1] == 1.0 and all(r == 1.0 for r in recall[n:])  # lower thresholds add only false positives


def test_hand_curve_first_points_by_hand():
    # closed scores, pairs by decreasing score: 0.9 (i0, a, true), 0.8 (i0 a1 true; i4 a true), ...
    precision, recall, thresholds = curves.hierarchical_precision_recall_curve(HAND_TRUE, HAND_SCORES, NODES, EDGES)
    positives = 11  # |Yaug|: 2 + 2 + 2 + 1 + 4
    assert thresholds[0] == 0.9 and precision[0] == 1.0 and recall[0] == pytest.approx(1 / positives)
    assert thresholds[1] == 0.8 and precision[1] == 1.0 and recall[1] == pytest.approx(3 / positives)


def test_average_precision_micro_macro_per_class_match_sklearn():
    y = _truth_matrix(HAND_TRUE)
    s = _closed(HAND_SCORES)
    ap = curves.hierarchical_average_precision(HAND_TRUE, HAND_SCORES, NODES, EDGES)
    assert ap == pytest.approx(average_precision_score(y.ravel(), s.ravel()))
    assert ap == pytest.approx(average_precision_score(y, s, average="micro"))
    per_class = curves.hierarchical_average_precision(HAND_TRUE, HAND_SCORES, NODES, EDGES, average=None)
    expected = dict(zip(NODES, average_precision_score(y, s, average=None), strict=True))
    assert dict(zip(per_class["label"], per_class["value"], strict=True)) == pytest.approx(expected)
    macro = curves.hierarchical_average_precision(HAND_TRUE, HAND_SCORES, NODES, EDGES, average="macro")
    assert macro == pytest.approx(average_precision_score(y, s, average="macro"))


def test_trapezoid_area_is_sklearn_auc_of_the_curve():
    y = _truth_matrix(HAND_TRUE).ravel()
    s = _closed(HAND_SCORES).ravel()
    sk_p, sk_r, _ = precision_recall_curve(y, s)
    area = curves.hierarchical_average_precision(HAND_TRUE, HAND_SCORES, NODES, EDGES, rule="trapezoid")
    assert area == pytest.approx(auc(sk_r, sk_p))


def test_precision_at_recall_by_hand():
    store = Store()
    store.load_taxonomy(Taxonomy.from_edges(EDGES))
    store.add_truth(HAND_TRUE)
    store.add_predictions("s", curves.score_columns(HAND_SCORES, NODES, start=0))
    curve = curves.pr_curve(store)
    for r in (0.0, 0.5, 0.9, 1.0):
        expected = curve.loc[curve["recall"] >= r, "precision"].max()
        assert curves.precision_at_recall(store, r)["precision"].iloc[0] == pytest.approx(expected)
    # full recall first at 0.4 (a2 of instance 1, the lowest true score); above it the only false node is b of
    # instance 1 (closed score 0.5): 11 true of 12 predicted
    assert curves.precision_at_recall(store, 1.0)["precision"].iloc[0] == pytest.approx(11 / 12)
    with pytest.raises(ValueError, match="recall"):
        curves.precision_at_recall(store, 1.5)


def test_unscored_true_labels_keep_recall_below_one():
    # b1 of instance 1 has no score at all: never predicted
    scores = pd.DataFrame({"instance_id": ["0", "1"], "label": ["a1", "a2"], "score": [0.9, 0.4]})
    store = Store()
    store.load_taxonomy(Taxonomy.from_edges(EDGES))
    store.add_truth([["a1"], ["b1"]])
    store.add_predictions("s", scores)
    curve = curves.pr_curve(store)
    assert list(curve["recall"]) == pytest.approx([0.5, 0.5])  # 2 of the 4 true nodes (a, a1, b, b1)
    assert list(curve["precision"]) == pytest.approx([1.0, 2 / 4])  # at 0.4: a, a1 of i0; a, a2 of i1


def test_conditional_scores_become_marginals():
    tax = Taxonomy.from_edges(EDGES)
    cond = np.array([[0.6, 0.5, 0.5, 0.4, 1.0]])
    frame = curves.score_columns(cond, NODES, tax, conditional=True)
    assert dict(zip(frame["label"], frame["score"], strict=True)) == pytest.approx(
        {"a": 0.6, "a1": 0.3, "a2": 0.3, "b": 0.4, "b1": 0.4})


@pytest.fixture(scope="module")
def transposon(data_dir):
    """The transposon truth and two models' marginal probabilities; the flattened truth and scores."""
    tax = transposon_taxonomy()
    store = Store()
    store.load_taxonomy(tax)
    store.add_truth(data_dir / "canonical" / "truth_transposon.tsv")
    models = ("RFSB",)
    store.add_predictions_many({m: curves.read_transposon_scores(data_dir / "transposon" / f"predictions_{m}.txt")
                                for m in models})
    truth = read_scores(data_dir / "transposon" / "truelabels.txt")  # one-hot along the root path
    y = pd.read_csv(data_dir / "canonical" / "truth_transposon.tsv", sep="\t", header=None, dtype=str,
                    names=["instance_id", "label"])
    col = {c: j for j, c in enumerate(TRANSPOSON_COLUMNS)}
    matrix = np.zeros_like(truth)
    matrix[y["instance_id"].astype(int).to_numpy() - 1, y["label"].map(col).to_numpy()] = 1
    marginals = {m: curves.score_columns(read_scores(data_dir / "transposon" / f"predictions_{m}.txt"),
                                         TRANSPOSON_COLUMNS, tax, conditional=True)["score"].to_numpy()
                 .reshape(truth.shape) for m in models}
    yield store, matrix, marginals
    store.close()


def _independent_close(scores: np.ndarray) -> np.ndarray:
    """Max of each column over its descendant columns (names: a descendant's name starts with 'c/')."""
    out = scores.copy()
    for j, c in enumerate(TRANSPOSON_COLUMNS):
        below = [k for k, d in enumerate(TRANSPOSON_COLUMNS) if d.startswith(c + "/")]
        if below:
            out[:, j] = np.maximum(scores[:, j], scores[:, below].max(axis=1))
    return out


def test_transposon_average_precision_matches_sklearn(transposon):
    store, y, marginals = transposon
    micro = curves.average_precision(store).set_index("system")["value"]
    macro = curves.average_precision(store, "macro").set_index("system")["value"]
    for model, scores in marginals.items():
        closed = _independent_close(scores)
        assert micro[model] == pytest.approx(average_precision_score(y.ravel(), closed.ravel()), rel=1e-9)
        has_positive = y.sum(axis=0) > 0
        assert macro[model] == pytest.approx(
            average_precision_score(y[:, has_positive], closed[:, has_positive], average="macro"), rel=1e-9)


def _levels() -> dict[int, list[int]]:
    depth = {c: c.count("/") + 1 for c in TRANSPOSON_COLUMNS}
    return {k: [j for j, c in enumerate(TRANSPOSON_COLUMNS) if depth[c] == k] for k in (1, 2, 3)}


def test_transposon_calibration_per_level_matches_sklearn(transposon):
    store, y, marginals = transposon
    summary = calibration.calibration_by_level(store, n_bins=10)
    for model, scores in marginals.items():
        mine = summary[summary["system"] == model].set_index("level")
        for level, cols in [(0, list(range(len(TRANSPOSON_COLUMNS)))), *_levels().items()]:
            yy, ss = y[:, cols].ravel(), scores[:, cols].ravel()
            assert mine.loc[level, "n"] == len(yy)
            assert mine.loc[level, "brier"] == pytest.approx(brier_score_loss(yy, ss), rel=1e-9)
            assert mine.loc[level, "log_loss"] == pytest.approx(log_loss(yy, ss, labels=[0, 1]), rel=1e-9)
            for strategy in ("uniform", "quantile"):
                assert mine.loc[level, f"ece_{strategy}"] == pytest.approx(_ece(yy, ss, 10, strategy), rel=1e-9)


def _ece(y: np.ndarray, s: np.ndarray, n_bins: int, strategy: str) -> float:
    """ECE from scikit-learn's calibration_curve and the bin counts of the same binning."""
    prob_true, prob_pred = calibration_curve(y, s, n_bins=n_bins, strategy=strategy)
    edges = np.linspace(0, 1, n_bins + 1) if strategy == "uniform" else np.percentile(
        s, np.linspace(0, 1, n_bins + 1) * 100)
    counts = np.bincount(np.searchsorted(edges[1:-1], s), minlength=n_bins)
    counts = counts[counts > 0]
    return float(np.sum(counts * np.abs(prob_true - prob_pred)) / len(s))


def test_transposon_reliability_matches_calibration_curve(transposon):
    store, y, marginals = transposon
    for strategy in ("uniform", "quantile"):
        rows = calibration.reliability(store, 5, strategy)
        mine = rows[(rows["system"] == "RFSB") & (rows["level"] == 2)]
        cols = _levels()[2]
        prob_true, prob_pred = calibration_curve(y[:, cols].ravel(), marginals["RFSB"][:, cols].ravel(), n_bins=5,
                                                 strategy=strategy)
        assert list(mine["fraction_positive"]) == pytest.approx(list(prob_true), rel=1e-9)
        assert list(mine["mean_score"]) == pytest.approx(list(prob_pred), rel=1e-9)


def test_calibration_rejects_one_bin():
    with pytest.raises(ValueError, match="n_bins"):
        calibration._params(1)


def test_reliability_plot_draws_one_line_per_level(transposon, tmp_path):
    store, _, _ = transposon
    rows = calibration.reliability(store)
    ax = calibration.plot_reliability(rows[rows["system"] == "RFSB"])
    assert len(ax.get_lines()) == 1 + 4  # the diagonal, levels 0 (all) to 3
    ax.figure.savefig(tmp_path / "reliability.png")
    assert (tmp_path / "reliability.png").stat().st_size > 0


def test_threshold_sweep_matches_one_store_per_threshold(data_dir):
    import hiersql

    tax = transposon_taxonomy()
    scores = read_scores(data_dir / "transposon" / "predictions_RFSB.txt")[:300]
    truth = pd.read_csv(data_dir / "canonical" / "truth_transposon.tsv", sep="\t", header=None, dtype=str,
                        names=["instance_id", "label"])
    truth = truth[truth["instance_id"].astype(int) <= 300]
    sweep = curves.threshold_sweep(scores, TRANSPOSON_COLUMNS, tax, truth, [0.3, 0.9])
    from hiersql.inputs.decoding import top_down_threshold

    sets = truth.groupby("instance_id")["label"].apply(list)
    y_true = [sets[str(i)] for i in range(1, 301)]
    for t in (0.3, 0.9):
        decoded = [[x] if x else [] for x in top_down_threshold(scores, TRANSPOSON_COLUMNS, tax, t)]
        row = sweep[(sweep["threshold"] == t) & (sweep["average"] == "micro")].iloc[0]
        assert row["hierarchical_f1"] == pytest.approx(hiersql.hierarchical_f1(y_true, decoded, tax))
    lo, hi = (sweep[(sweep["threshold"] == t) & (sweep["average"] == "micro")].iloc[0] for t in (0.3, 0.9))
    assert hi["hierarchical_precision"] >= lo["hierarchical_precision"]  # stopping earlier predicts less
    assert hi["hierarchical_recall"] <= lo["hierarchical_recall"]


def test_cli_auprc_and_calibration(data_dir, tmp_path):
    import subprocess
    import sys

    from .conftest import ROOT

    scores = curves.read_transposon_scores(data_dir / "transposon" / "predictions_RFSB.txt")
    scores = scores[scores["instance_id"].astype(int) <= 2000]
    scored = tmp_path / "RFSB.tsv"
    scores.to_csv(scored, sep="\t", header=False, index=False)
    truth = pd.read_csv(data_dir / "canonical" / "truth_transposon.tsv", sep="\t", header=None, dtype=str)
    truth_file = tmp_path / "truth.tsv"
    truth[truth[0].astype(int) <= 2000].to_csv(truth_file, sep="\t", header=False, index=False)
    base = [sys.executable, "-m", "hiersql", "breakdown", "--taxonomy",
            str(data_dir / "canonical" / "taxonomy_transposon.tsv"), "--truth", str(truth_file), "--format", "csv"]
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([*base, "--pred", f"RFSB={scored}", "--by", "auprc"], capture_output=True, text=True,
                         env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    row = pd.read_csv(pd.io.common.StringIO(out.stdout)).iloc[0]
    store = Store()
    store.load_taxonomy(transposon_taxonomy())
    store.add_truth(truth_file)
    store.add_predictions("RFSB", scored)
    assert row["average_precision_micro"] == curves.average_precision(store)["value"].iloc[0]
    out = subprocess.run([*base, "--pred", f"RFSB={scored}", "--by", "calibration", "--bins", "5"],
                         capture_output=True, text=True, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    frame = pd.read_csv(pd.io.common.StringIO(out.stdout))
    assert list(frame["level"]) == [0, 1, 2, 3]
    assert frame["brier"].tolist() == pytest.approx(calibration.calibration_by_level(store, 5)["brier"].tolist())
    full = [*base[:7], str(data_dir / "canonical" / "truth_transposon.tsv"), "--format", "csv"]
    unscored = subprocess.run([*full, "--pred", f"x={data_dir / 'canonical' / 'pred_transposon' / 'RFSB.tsv'}",
                               "--by", "auprc"], capture_output=True, text=True, env=env, cwd=ROOT)
    assert unscored.returncode == 2 and len(unscored.stderr.strip().splitlines()) == 1
    assert "no score" in unscored.stderr


def test_average_precision_rejects_unknown_average_and_rule():
    store = Store()
    store.load_taxonomy(Taxonomy.from_edges(EDGES))
    store.add_truth(HAND_TRUE)
    store.add_predictions("s", curves.score_columns(HAND_SCORES, NODES, start=0))
    with pytest.raises(ValueError, match="average"):
        curves.average_precision(store, "weighted")
    with pytest.raises(ValueError, match="rule"):
        curves.average_precision(store, rule="interpolated")
