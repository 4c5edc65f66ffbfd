"""Breakdowns (breakdowns.sql): per level, per depth of the true label, per class (the classification
report), flat per level; by hand, against scikit-learn's classification_report, and on GermEval 2019 subtask B
against an independent pandas/networkx computation."""

from __future__ import annotations

import subprocess
import sys
from collections import defaultdict

import networkx as nx
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import classification_report as sk_report
from sklearn.preprocessing import MultiLabelBinarizer

import hiersql
from hiersql.analyses import breakdowns
from hiersql.inputs.store import Store
from hiersql.inputs.taxonomy import Taxonomy
from hiersql.measures import Options

from .conftest import ROOT

EDGES = [("r", "a"), ("r", "b"), ("a", "a1"), ("a", "a2"), ("b", "b1")]
Y_TRUE = [["a1"], ["a2"], ["b1"], ["b"]]
Y_PRED = [["a1"], ["a1"], ["a"], ["b1"]]


def _hand_store() -> Store:
    store = Store()
    store.load_taxonomy(Taxonomy.from_edges(EDGES))
    store.add_truth(Y_TRUE)
    store.add_predictions("s", Y_PRED)
    return store


def test_by_level_by_hand():
    # Yaug: {a,a1} {a,a2} {b,b1} {b}; Ŷaug: {a,a1} {a,a1} {a} {b,b1}
    # level 1: true a, a, b, b; predicted a, a, a, b; shared a, a, b -> P = 3/4, R = 3/4
    # level 2: true a1, a2, b1; predicted a1, a1, b1; shared a1 (i0) -> P = 1/3, R = 1/3
    frame = breakdowns.by_level(_hand_store()).set_index(["level", "average"])
    assert frame.loc[(1, "micro"), "hierarchical_precision"] == pytest.approx(3 / 4)
    assert frame.loc[(1, "micro"), "hierarchical_recall"] == pytest.approx(3 / 4)
    assert frame.loc[(2, "micro"), "hierarchical_precision"] == pytest.approx(1 / 3)
    assert frame.loc[(2, "micro"), "support"] == 3
    # macro at level 2 over the instances reaching it (i0, i1, i2, i3: b1 predicted): P = 1, 0, 0 (i2: 0/0), 0
    assert frame.loc[(2, "macro"), "n_instances"] == 4
    assert frame.loc[(2, "macro"), "hierarchical_precision"] == pytest.approx(1 / 4)
    # level 1, i2: a vs b: P = 0; others 1 -> 3/4; the level counts add up to the overall micro counts
    assert frame.loc[(1, "macro"), "hierarchical_precision"] == pytest.approx(3 / 4)
    overall = hiersql.hierarchical_precision(Y_TRUE, Y_PRED, EDGES)
    assert overall == pytest.approx((3 + 1) / (4 + 3))


def test_per_instance_terms_average_to_the_macro_values():
    store = _hand_store()
    levels = breakdowns.per_instance(store)
    assert list(levels[levels["instance_id"] == "2"]["hierarchical_precision"]) == [0.0, 0.0]  # a vs b; 0/0
    macro = breakdowns.by_level(store).set_index(["level", "average"])
    for level, rows in levels.groupby("level"):
        assert rows["hierarchical_f1"].mean() == pytest.approx(macro.loc[(level, "macro"), "hierarchical_f1"])
    depths = breakdowns.per_instance(store, breakdown="depth")
    assert list(depths["depth"]) == [2, 2, 2, 1]


def test_by_depth_by_hand():
    # deepest true label: depth 2 for i0, i1, i2; depth 1 for i3
    frame = breakdowns.by_depth(_hand_store()).set_index(["depth", "average"])
    assert frame.loc[(1, "micro"), "n_instances"] == 1
    assert frame.loc[(1, "micro"), "hierarchical_precision"] == pytest.approx(1 / 2)  # {b,b1} vs {b}
    assert frame.loc[(1, "micro"), "hierarchical_recall"] == pytest.approx(1.0)
    # depth 2: shared 2 + 1 + 0, predicted 2 + 2 + 1, true 2 + 2 + 2
    assert frame.loc[(2, "micro"), "hierarchical_precision"] == pytest.approx(3 / 5)
    assert frame.loc[(2, "micro"), "hierarchical_recall"] == pytest.approx(3 / 6)
    assert frame.loc[(2, "macro"), "hierarchical_f1"] == pytest.approx((1 + 0.5 + 0) / 3)


def test_by_depth_of_another_family_groups_its_per_instance_values():
    store = _hand_store()
    frame = breakdowns.by_depth(store, measures="example_f1").set_index("depth")
    flat = hiersql.Evaluator(Taxonomy.from_edges(EDGES)).add_truth(Y_TRUE).add_predictions("s", Y_PRED)
    values = flat.per_instance("flat")["example_f1"].to_numpy()  # instances 0..3
    assert frame.loc[2, "example_f1"] == pytest.approx(values[:3].mean())
    assert frame.loc[1, "example_f1"] == pytest.approx(values[3])
    by_alias = breakdowns.by_depth(store, measures="hf", options=Options(average=("macro",)))
    set_based = breakdowns.by_depth(store)
    macro = set_based[set_based["average"] == "macro"].set_index("depth")["hierarchical_f1"]
    assert by_alias.set_index("depth")["hierarchical_f1"].to_dict() == pytest.approx(macro.to_dict())
    with pytest.raises(ValueError, match="measures must be"):
        breakdowns.by_depth(store, measures="nope")


def test_flat_by_level_by_hand():
    # labels as given: level 1 true b (i3), predicted a (i2); level 2 true a1 a2 b1, predicted a1 a1 b1 (i3)
    frame = breakdowns.flat_by_level(_hand_store()).set_index(["level", "average"])
    assert frame.loc[(1, "micro"), "precision"] == 0.0 and frame.loc[(1, "micro"), "support"] == 1
    assert frame.loc[(2, "micro"), "precision"] == pytest.approx(1 / 3)  # a1 of i0
    # macro over a1 (P 1/2, R 1), a2 (0, 0), b1 (0, 0)
    assert frame.loc[(2, "macro"), "precision"] == pytest.approx(1 / 6)
    assert frame.loc[(2, "macro"), "recall"] == pytest.approx(1 / 3)


@pytest.mark.parametrize("zero_division", [0.0, 1.0, float("nan")])
def test_f_beta_0_is_precision_in_every_breakdown(zero_division):
    # (1+β²)·TP / (β²·(TP+FN) + TP+FP) at β = 0 is TP / (TP+FP), undefined (zero_division) where nothing was
    # predicted, as scikit-learn's fbeta_score(beta=0); level 2 of i2 predicts nothing (0/0), level 1 of flat
    # predicts a (i2) only
    store, options = _hand_store(), Options(beta=0.0, zero_division=zero_division)
    frames = [(breakdowns.by_level(store, options), "hierarchical_precision", "hierarchical_f1"),
              (breakdowns.by_depth(store, options), "hierarchical_precision", "hierarchical_f1"),
              (breakdowns.flat_by_level(store, options), "precision", "f1")]
    for frame, precision, f in frames:
        pd.testing.assert_series_equal(frame[f], frame[precision], check_names=False)
    assert pd.isna(breakdowns.per_instance(store, options)["hierarchical_f1"]).any() == (zero_division != zero_division)


def _augment(sets: list[list[str]], graph: nx.DiGraph) -> list[set[str]]:
    return [set().union(*[{u} | (nx.ancestors(graph, u) - {"r"}) for u in labels]) for labels in sets]


def test_classification_report_matches_sklearn_on_the_augmented_sets():
    graph = nx.DiGraph(EDGES)
    true_aug, pred_aug = _augment(Y_TRUE, graph), _augment(Y_PRED, graph)
    mlb = MultiLabelBinarizer().fit(true_aug + pred_aug)
    expected = sk_report(mlb.transform(true_aug), mlb.transform(pred_aug), target_names=list(mlb.classes_),
                         output_dict=True, zero_division=0)
    report = hiersql.classification_report(Y_TRUE, Y_PRED, EDGES)
    _compare(report.frame, expected)
    assert "weighted avg" in report.text and str(report) == report.text
    assert report.text.splitlines()[0].split() == ["precision", "recall", "f1-score", "support"]
    assert report.text.splitlines()[2].split() == ["a", "0.67", "1.00", "0.80", "2"]


def _compare(frame: pd.DataFrame, expected: dict) -> None:
    rows = frame.set_index("label")
    assert set(rows.index) == set(expected) - {"accuracy"}
    for name, values in expected.items():
        for column, key in (("precision", "precision"), ("recall", "recall"), ("f1", "f1-score"),
                            ("support", "support")):
            assert rows.loc[name, column] == pytest.approx(values[key], abs=1e-12), (name, column)


def test_classification_report_labels_pick_and_order_classes():
    report = hiersql.classification_report(Y_TRUE, Y_PRED, EDGES, labels=["b1", "a"])
    assert list(report.frame["label"])[:2] == ["b1", "a"]
    with pytest.raises(hiersql.InputError, match="labels holds a label not in the taxonomy: .zz."):
        hiersql.classification_report(Y_TRUE, Y_PRED, EDGES, labels=["zz"])


# ------------------------------------------------------------------------------------------------ GermEval B
SYSTEMS = {"NoTeam": "NoTeam__GRU_Attention_ensemble1", "baseline": "LT-UHH__baseline"}


@pytest.fixture(scope="module")
def germeval(data_dir):
    canonical = data_dir / "canonical"
    store = Store()
    store.load(canonical / "taxonomy.tsv", canonical / "truth_b.tsv",
               {name: canonical / "pred_b" / f"{stem}.tsv" for name, stem in SYSTEMS.items()})
    edges = pd.read_csv(canonical / "taxonomy.tsv", sep="\t", header=None, names=["parent", "child"], dtype=str)
    graph = nx.DiGraph(list(edges.itertuples(index=False, name=None)))
    for top in [n for n in list(graph) if graph.in_degree(n) == 0]:
        graph.add_edge("ROOT", top)
    depth = nx.single_source_shortest_path_length(graph, "ROOT")

    def sets(path):
        frame = pd.read_csv(path, sep="\t", header=None, names=["instance_id", "label"], dtype=str,
                            keep_default_na=False)
        out = defaultdict(set)
        for i, label in frame.itertuples(index=False, name=None):
            out[i].add(label)
        return out

    truth = sets(canonical / "truth_b.tsv")
    preds = {name: sets(canonical / "pred_b" / f"{stem}.tsv") for name, stem in SYSTEMS.items()}
    yield store, graph, depth, truth, preds
    store.close()


def _aug(labels: set[str], graph: nx.DiGraph) -> set[str]:
    return set().union(*[{u} | nx.ancestors(graph, u) for u in labels]) - {"ROOT"} if labels else set()


def test_germeval_by_level_against_networkx(germeval):
    store, graph, depth, truth, preds = germeval
    frame = breakdowns.by_level(store).set_index(["system", "level", "average"])
    for name, pred in preds.items():
        counts = defaultdict(lambda: np.zeros(3))
        for i, labels in truth.items():
            t, p = _aug(labels, graph), _aug(pred.get(i, set()), graph)
            for k in {depth[x] for x in t | p}:
                tk, pk = {x for x in t if depth[x] == k}, {x for x in p if depth[x] == k}
                counts[k] += (len(tk), len(pk), len(tk & pk))
        for k, (n_true, n_pred, n_both) in counts.items():
            row = frame.loc[(name, k, "micro")]
            assert row["hierarchical_precision"] == pytest.approx(n_both / n_pred)
            assert row["hierarchical_recall"] == pytest.approx(n_both / n_true)
            assert row["support"] == n_true


def test_germeval_by_depth_against_networkx(germeval):
    store, graph, depth, truth, preds = germeval
    frame = breakdowns.by_depth(store).set_index(["system", "depth", "average"])
    for name, pred in preds.items():
        groups = defaultdict(list)
        for i, labels in truth.items():
            t, p = _aug(labels, graph), _aug(pred.get(i, set()), graph)
            groups[max(depth[u] for u in labels)].append((len(t), len(p), len(t & p)))
        for d, rows in groups.items():
            n_true, n_pred, n_both = np.sum(rows, axis=0)
            micro, macro = frame.loc[(name, d, "micro")], frame.loc[(name, d, "macro")]
            assert micro["n_instances"] == len(rows)
            assert micro["hierarchical_recall"] == pytest.approx(n_both / n_true)
            assert micro["hierarchical_precision"] == pytest.approx(n_both / n_pred)
            assert macro["hierarchical_f1"] == pytest.approx(np.mean([2 * b / (t + p) for t, p, b in rows]))


def test_germeval_report_matches_sklearn(germeval):
    store, graph, _, truth, preds = germeval
    report = breakdowns.report(store, Options())
    ids = sorted(truth)
    for name, pred in preds.items():
        true_aug = [_aug(truth[i], graph) for i in ids]
        pred_aug = [_aug(pred.get(i, set()), graph) for i in ids]
        mlb = MultiLabelBinarizer().fit(true_aug + pred_aug)
        expected = sk_report(mlb.transform(true_aug), mlb.transform(pred_aug), target_names=list(mlb.classes_),
                             output_dict=True, zero_division=0)
        mine = report.frame[report.frame["system"] == name]
        _compare(mine, expected)
        micro = mine.set_index("label").loc["micro avg", "precision"]
        assert micro == pytest.approx(_micro_hp(store, name))


def _micro_hp(store: Store, system: str) -> float:
    from hiersql.measures import set_based

    rows = set_based.evaluate(store, ["hierarchical_precision"], Options(average=("micro",)))
    return next(r.value for r in rows if r.system == system)


def test_cli_breakdown_by_class_text_and_level_csv(data_dir, tmp_path):
    canonical = data_dir / "canonical"
    base = [sys.executable, "-m", "hiersql", "breakdown", "--taxonomy", str(canonical / "taxonomy.tsv"),
            "--truth", str(canonical / "truth_b.tsv"),
            "--pred", f"base={canonical / 'pred_b' / 'LT-UHH__baseline.tsv'}"]
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([*base, "--by", "class"], capture_output=True, text=True, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0].split() == ["precision", "recall", "f1-score", "support"]
    assert out.stdout.rstrip().splitlines()[-1].split()[:2] == ["samples", "avg"]
    out = subprocess.run([*base, "--by", "level", "--format", "csv"], capture_output=True, text=True, env=env,
                         cwd=ROOT)
    assert out.returncode == 0, out.stderr
    frame = pd.read_csv(pd.io.common.StringIO(out.stdout))
    assert list(frame["level"]) == [1, 1, 2, 2, 3, 3]
    assert list(frame["average"]) == ["micro", "macro"] * 3
    again = subprocess.run([*base, "--by", "level", "--format", "csv"], capture_output=True, text=True, env=env,
                           cwd=ROOT)
    assert again.stdout == out.stdout  # byte for byte


def test_cli_breakdown_bad_input_is_one_line(data_dir, tmp_path):
    canonical = data_dir / "canonical"
    bad = tmp_path / "bad.tsv"
    bad.write_text("9783809436690\tNo Such Genre\n", encoding="utf-8")
    out = subprocess.run(
        [sys.executable, "-m", "hiersql", "breakdown", "--taxonomy", str(canonical / "taxonomy.tsv"),
         "--truth", str(canonical / "truth_b.tsv"), "--pred", f"x={bad}"],
        capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, cwd=ROOT)
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1
    assert "bad.tsv" in out.stderr and "No Such Genre" in out.stderr
