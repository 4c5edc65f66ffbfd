"""Mistake severity, hierarchical distance@k, top-k accuracy and hierarchical precision@k (the severity family):
hand-computed cases, the authors' formulas re-typed from ``better_mistakes/model/run_xent.py``
(fiveai/making-better-mistakes) on the same inputs, the edge-count distance, DAGs, hard predictions, the
one-shot functions, the command line and PostgreSQL."""

from __future__ import annotations

import io
import math
import random
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import hiersql
from hiersql import Evaluator, Taxonomy
from hiersql.cli import main
from hiersql.errors import InputError

TREE = [("r", "a"), ("r", "b"), ("a", "a1"), ("a", "a2"), ("b", "b1"), ("b", "b2")]
LABELS = ["a1", "a2", "b1", "b2"]
# instance 0: ranked a1, a2 (tie with b1: by label), b1, b2 -> d 0, 1, 2, 2 (no mistake at k = 1)
# instance 1: ranked b1, a2, a1 (tie with b2), b2            -> d 2, 0, 1, 2
# instance 2: every score tied: a1, a2, b1, b2                -> d 2, 2, 0, 1
SCORES = np.array([[.5, .2, .2, .1], [.1, .2, .6, .1], [.25, .25, .25, .25]])
TRUTH = ["a1", "a2", "b1"]
# k = 5 is larger than the 4 scored classes: the top 5 are the 4 of them
HAND = {
    ("top_k_accuracy", 1): 1 / 3, ("top_k_accuracy", 2): 2 / 3, ("top_k_accuracy", 5): 1.0,
    ("hierarchical_distance_at_k", 1): 4 / 3, ("hierarchical_distance_at_k", 2): (0.5 + 1 + 2) / 3,
    ("hierarchical_distance_at_k", 5): 1.25,
    ("best_hierarchical_distance_at_k", 1): 4 / 3, ("best_hierarchical_distance_at_k", 2): 2 / 3,
    ("best_hierarchical_distance_at_k", 5): 0.0,
    ("mistake_severity", 1): 2.0, ("mistake_severity", 2): (2 + 0 + 2 + 2) / 4, ("mistake_severity", 5): 1.25,
    # D = 2; best similarities of any leaf: 1, 0.5, 0, 0
    ("hierarchical_precision_at_k", 1): 1 / 3, ("hierarchical_precision_at_k", 2): (1 + 1 / 1.5 + 0) / 3,
    ("hierarchical_precision_at_k", 5): 1.0,
    # the mean of precision@1 .. @k (up to the 4 classes): instance 2 at k = 5: (0 + 0 + 2/3 + 1) / 4
    ("hierarchical_map_at_k", 1): 1 / 3, ("hierarchical_map_at_k", 2): (1 + 1 / 3 + 0) / 3,
    ("hierarchical_map_at_k", 5): (1 + (0 + 2 / 3 + 1 + 1) / 4 + (0 + 0 + 2 / 3 + 1) / 4) / 3,
}
METRICS = ["top_k_accuracy", "hierarchical_distance_at_k", "best_hierarchical_distance_at_k", "mistake_severity",
           "hierarchical_precision_at_k", "hierarchical_map_at_k"]


def scored_rows(scores: np.ndarray, labels: list[str]) -> pd.DataFrame:
    """Long rows ``instance_id, label, score`` of a score matrix (instance ``i`` has the id ``"i"``, as label sets)."""
    n, m = scores.shape
    return pd.DataFrame({"instance_id": [str(i) for i in range(n) for _ in range(m)],
                         "label": labels * n, "score": scores.ravel()})


def evaluator(edges, truth: list[str], systems: dict[str, pd.DataFrame | list]) -> Evaluator:
    ev = Evaluator(Taxonomy.from_edges(edges))
    ev.add_truth(pd.DataFrame({"instance_id": [str(i) for i in range(len(truth))], "label": truth}))
    for name, source in systems.items():
        ev.add_predictions(name, source)
    return ev


def values(ev: Evaluator, **options) -> dict[tuple[str, str, int], float]:
    frame = ev.evaluate(METRICS, **options)
    return {(r.system, r.metric, int(r.average[1:])): r.value for r in frame.itertuples()}


def test_hand_example_with_ties_k_above_the_classes_and_an_instance_without_mistake():
    ev = evaluator(TREE, TRUTH, {"m": scored_rows(SCORES, LABELS)})
    got = values(ev, k=[1, 2, 5])
    for (metric, k), want in HAND.items():
        assert got["m", metric, k] == pytest.approx(want, abs=1e-12), (metric, k)
    ev.close()


def test_one_shot_functions_take_a_score_matrix():
    tax = Taxonomy.from_edges(TREE)
    for (metric, k), want in HAND.items():
        assert getattr(hiersql, metric)(TRUTH, SCORES, tax, k=k, labels=LABELS) == pytest.approx(want, abs=1e-12)
    # without labels the columns are the sorted labels of y_true (scikit-learn's top_k_accuracy_score)
    assert hiersql.top_k_accuracy(["a1", "a2"], [[.9, .1], [.8, .2]], tax) == 0.5


def test_a_scored_class_below_the_top_k_is_a_class_of_the_best_retrievals_at_every_door():
    """The classes C of hierarchical precision hold every label seen, the inner node ``a`` too, scored last
    here. Truth a1; ranked a2 (d 1), b1, b2 (d 2), a, a1; D = 2. At k = 3 the retrieved similarities sum to
    0.5 + 0 + 0 and the best three of C to 1 (a1) + 0.5 (a2) + 0.5 (a): 0.25; mAP@3 = (0.5/1 + 0.5/1.5 +
    0.5/2) / 3. The one-shot function kept only the top k labels, so ``a`` was not in C: 1/3 and 0.3889."""
    labels = ["a1", "a", "a2", "b1", "b2"]
    scores = np.array([[.05, .1, .9, .8, .7]])
    want = {"hierarchical_precision_at_k": 0.25, "hierarchical_map_at_k": (0.5 + 1 / 3 + 0.25) / 3}
    ev = evaluator(TREE, ["a1"], {"m": scored_rows(scores, labels)})
    got = values(ev, k=[3])
    ev.close()
    tax = Taxonomy.from_edges(TREE)
    for metric, value in want.items():
        assert got["m", metric, 3] == pytest.approx(value, abs=1e-12), metric
        assert getattr(hiersql, metric)(["a1"], scores, tax, k=3, labels=labels) == pytest.approx(value, abs=1e-12)
    # a column that is no node, or one named twice, is refused however low it ranks (it gave 1.0), as evaluate
    # refuses the same cells as a long table
    for columns, said in ((["a1", "zz"], "labels holds a label not in the taxonomy: 'zz'"),
                          (["a1", "a1"], "labels holds a label twice: 'a1'")):
        with pytest.raises(InputError, match=re.escape(said)):
            hiersql.top_k_accuracy(["a1"], [[.9, .1]], tax, 1, labels=columns)
    with pytest.raises(InputError, match="label not in the taxonomy: 'zz'"):
        evaluator(TREE, ["a1"], {"m": scored_rows(np.array([[.9, .1]]), ["a1", "zz"])})


def test_a_score_matrix_over_a_taxonomy_file_reads_the_file_once(tmp_path, monkeypatch):
    """A taxonomy given as a path is read once per call (its leaves rank the columns, its tables score them), and
    its tables are not kept after the call, as for every one-shot function given a path."""
    from hiersql.engines import oneshot

    path = tmp_path / "tree.tsv"
    path.write_text("".join(f"{parent}\t{child}\n" for parent, child in TREE))
    reads = []
    real = Taxonomy.from_file.__func__
    monkeypatch.setattr(Taxonomy, "from_file", classmethod(lambda cls, *a, **k: reads.append(a) or real(cls, *a, **k)))
    schemas = dict(oneshot._schemas)
    assert hiersql.top_k_accuracy(TRUTH, SCORES, str(path), k=2, labels=LABELS) == HAND["top_k_accuracy", 2]
    assert len(reads) == 1 and oneshot._schemas.keys() <= schemas.keys()  # (dead ones' schemas dropped meanwhile)


def test_hard_predictions_have_k_1_only():
    """A system without scores has rows at k = 1 only, in evaluate, the per-instance values, compare and the
    one-shot functions; a k above 1 alone for hard predictions is an error naming k (the flag on the command
    line), and no severity measure under all or the family's name."""
    tax = Taxonomy.from_edges(TREE)
    # top-1: a1 right, a2 -> b1 (LCA r, height 2), b1 -> b2 (LCA b, height 1)
    assert hiersql.mistake_severity(TRUE := ["a1", "a2", "b1"], ["a1", "b1", "b2"], tax) == 1.5
    assert hiersql.hierarchical_distance_at_k(TRUE, ["a1", "b1", "b2"], tax) == 1.0
    with pytest.raises(InputError, match="k must include 1 for hard predictions"):
        hiersql.mistake_severity(TRUE, ["a1", "b1", "b2"], tax, k=5)
    ev = evaluator(TREE, TRUE, {"hard": [["a1"], ["b1"], ["b2"]], "scored": scored_rows(SCORES, LABELS)})
    got = values(ev, k=[1, 5])
    assert got["hard", "mistake_severity", 1] == 1.5 and got["scored", "top_k_accuracy", 5] == 1.0
    want = {(s, m, k) for m in METRICS for s, k in (("hard", 1), ("scored", 1), ("scored", 5))}
    assert set(got) == want
    ranking = ev.compare(METRICS, n_resamples=20, k=[1, 5]).ranking
    assert {(r.system, r.metric, int(r.average[1:])) for r in ranking.itertuples()} == want
    at5 = ranking[ranking["average"] == "@5"]
    assert at5["ci_low"].notna().any()  # the scored system alone has its intervals
    per_instance = ev.per_instance("severity", k=[1, 5])
    assert sorted(per_instance.groupby(["k", "system"]).size().items()) == [
        ((1, "hard"), 3), ((1, "scored"), 3), ((5, "scored"), 3)]
    ev.close()
    hard = evaluator(TREE, TRUE, {"hard": [["a1"], ["b1"], ["b2"]], "hard2": [["a1"], ["a1"], ["b2"]]})
    assert set(hard.evaluate("all", k=[1, 5])["average"]) & {"@1", "@5"} == {"@1"}
    assert hard.evaluate("severity", k=5).empty
    for run in (hard.evaluate, lambda *a, **o: hard.compare(*a, n_resamples=10, **o)):
        with pytest.raises(InputError, match="k must include 1 for hard predictions"):
            run(["mistake_severity"], k=[2, 5])
    hard.close()


def test_a_rank_column_ranks_before_the_score():
    """The top k follow the store's one rank rule (hiersql.inputs.tables.RANK_ORDER): a rank column comes before
    the score, as for pl and the HCM. Instance 0 (true a1): scores a1 .9, b1 .5, a2 .1, ranks b1 1, a2 2, a1 3."""
    rows = pd.DataFrame({"instance_id": ["0"] * 3, "label": ["a1", "b1", "a2"], "score": [.9, .5, .1],
                         "position": [3, 1, 2]})
    ev = evaluator(TREE, ["a1"], {"m": rows})
    by_score = values(ev, k=[1, 2])
    # by score: a1 (d 0), b1 (d 2)
    assert [by_score["m", "top_k_accuracy", k] for k in (1, 2)] == [1.0, 1.0]
    assert [by_score["m", "hierarchical_distance_at_k", k] for k in (1, 2)] == [0.0, 1.0]
    ev.add_predictions("m", rows, rank_col="position")
    by_rank = values(ev, k=[1, 2])
    # by the rank column: b1 (d 2), a2 (d 1); a mistake at k = 1 of severity 2, and (2 + 1) / 2 at k = 2
    assert [by_rank["m", "top_k_accuracy", k] for k in (1, 2)] == [0.0, 0.0]
    assert [by_rank["m", "mistake_severity", k] for k in (1, 2)] == [2.0, 1.5]
    assert [by_rank["m", "best_hierarchical_distance_at_k", k] for k in (1, 2)] == [2.0, 1.0]
    ev.close()


def test_no_mistake_gives_nan_severity():
    tax = Taxonomy.from_edges(TREE)
    assert math.isnan(hiersql.mistake_severity(["a1", "b2"], ["a1", "b2"], tax))
    assert hiersql.top_k_accuracy(["a1", "b2"], ["a1", "b2"], tax) == 1.0


def test_edge_count_distance():
    """severity_distance='edges': the pair-based family's d(u, v) (up to the LCA on both sides)."""
    tax = Taxonomy.from_edges(TREE)
    assert hiersql.mistake_severity(TRUTH, ["a1", "b1", "b2"], tax, severity_distance="edges") == (4 + 2) / 2
    assert hiersql.hierarchical_distance_at_k(TRUTH, SCORES, tax, k=2, labels=LABELS,
                                              severity_distance="edges") == pytest.approx((1 + 2 + 4) / 3)


def test_dag_distance_is_the_least_height_of_a_common_ancestor():
    dag = [("r", "a"), ("r", "b"), ("a", "x"), ("b", "x"), ("a", "a1"), ("b", "b1")]
    tax = Taxonomy.from_edges(dag)
    # x has two parents: d(a1, x) = height(a) = 1 (its common ancestors are a and r), d(b1, a1) = height(r) = 2
    assert hiersql.hierarchical_distance_at_k(["a1", "b1"], ["x", "a1"], tax) == 1.5
    assert hiersql.hierarchical_distance_at_k(["a1", "b1"], ["x", "a1"], tax, severity_distance="edges") == 3.0


def test_several_true_labels_take_the_nearest_and_have_no_precision():
    tax = Taxonomy.from_edges(TREE)
    # instance 0: true {a1, b1}, top-1 b2: nearest true label b1, d = 1; instance 1: true a2, top-1 a2
    assert hiersql.hierarchical_distance_at_k([["a1", "b1"], ["a2"]], ["b2", "a2"], tax) == 0.5
    assert hiersql.hierarchical_precision_at_k([["a1", "b1"], ["a2"]], ["b2", "a2"], tax) == 1.0  # instance 1


# ----------------------------------------------------------------- the histogram of the mistakes' severities
# top-1 labels (ties by label) against TRUTH = a1, a2, b1; d = the height of the LCA (edges: its edge count)
#   m (SCORES):         a1 right;  b1 for a2: d 2 (edges 4);  a1 (all tied) for b1: d 2 (edges 4)
#   worse (1 - SCORES): b2 for a1: d 2 (4);  a1 (tied with b2) for a2: d 1 (2);  a1 (all tied) for b1: d 2 (4)
#   hard (no score):    a1 right;  b1 for a2: d 2 (4);  b2 for b1: d 1 (2)
#   perfect:            no mistake: 0 at every distance
HISTOGRAM = {"height": {"hard": {1: 1, 2: 1}, "m": {1: 0, 2: 2}, "perfect": {1: 0, 2: 0}, "worse": {1: 1, 2: 2}},
             "edges": {"hard": {2: 1, 4: 1}, "m": {2: 0, 4: 2}, "perfect": {2: 0, 4: 0}, "worse": {2: 1, 4: 2}}}
SYSTEMS = {"m": scored_rows(SCORES, LABELS), "worse": scored_rows(1 - SCORES, LABELS),
           "hard": [["a1"], ["b1"], ["b2"]], "perfect": [[y] for y in TRUTH]}


@pytest.mark.parametrize("distance", ["height", "edges"])
def test_histogram_of_the_mistakes_by_hand(distance):
    from hiersql.measures.severity import histogram, tradeoff
    from hiersql.options import make_options

    ev = evaluator(TREE, TRUTH, SYSTEMS)
    options = make_options(severity_distance=distance, k=(2, 5))  # the top-1 label whatever k
    frame = histogram(ev.store, options)
    assert list(frame.columns) == ["system", "distance", "instances"]
    assert list(zip(frame["system"], frame["distance"], strict=True)) == sorted(
        (system, d) for system, counts in HISTOGRAM[distance].items() for d in counts)
    got = {s: dict(zip(part["distance"], part["instances"], strict=True)) for s, part in frame.groupby("system")}
    assert got == HISTOGRAM[distance]
    # Σ d · n / Σ n of a system is its mistake severity at k = 1, computed by the summary; the trade-off's
    # top-1 error is 1 - top-1 accuracy
    rows = ev.evaluate(["mistake_severity", "top_k_accuracy"], k=1, severity_distance=distance)
    value = rows.set_index(["system", "metric"])["value"]
    points = tradeoff(ev.store, options).set_index("system")
    assert list(points.index) == sorted(SYSTEMS)
    for system, counts in got.items():
        mistakes = sum(counts.values())
        mean = sum(d * n for d, n in counts.items()) / mistakes if mistakes else math.nan
        assert value[system, "mistake_severity"] == pytest.approx(mean, nan_ok=True, abs=1e-12)
        assert points.loc[system, "mistake_severity"] == pytest.approx(mean, nan_ok=True, abs=1e-12)
        assert points.loc[system, "top1_error"] == pytest.approx(mistakes / 3, abs=1e-12)
        assert 1 - value[system, "top_k_accuracy"] == pytest.approx(mistakes / 3, abs=1e-12)
    ev.close()


def test_breakdown_by_severity(tmp_path, capsys):
    """``breakdown --by severity``: the histogram's rows, the same bytes whatever the order of the input rows;
    a bad --severity-distance is one line naming the flag."""
    rng = random.Random(3)
    (tmp_path / "tax.tsv").write_text("".join(f"{p}\t{c}\n" for p, c in TREE))
    (tmp_path / "truth.tsv").write_text("".join(f"{i}\t{y}\n" for i, y in enumerate(TRUTH)))
    preds = []
    for name, rows in SYSTEMS.items():
        lines = ([f"{r.instance_id}\t{r.label}\t{r.score!r}\n" for r in rows.itertuples()]
                 if isinstance(rows, pd.DataFrame) else [f"{i}\t{y[0]}\n" for i, y in enumerate(rows)])
        for order, folder in ((lines, "a"), (rng.sample(lines, len(lines)), "b")):
            (tmp_path / folder).mkdir(exist_ok=True)
            (tmp_path / folder / f"{name}.tsv").write_text("".join(order))
        preds.append(name)
    outputs = []
    for folder in ("a", "b"):
        args = ["breakdown", "--taxonomy", str(tmp_path / "tax.tsv"), "--truth", str(tmp_path / "truth.tsv"),
                *[f"--pred={n}={tmp_path / folder / f'{n}.tsv'}" for n in preds], "--by", "severity",
                "--severity-distance", "edges", "--format", "csv"]
        assert main(args) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]
    got = pd.read_csv(io.StringIO(outputs[0]), dtype={"system": str})
    assert {(r.system, r.distance): r.instances for r in got.itertuples()} == {
        (s, d): n for s, counts in HISTOGRAM["edges"].items() for d, n in counts.items()}
    assert main([*args[:-4], "--severity-distance", "lca", "--format", "csv"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--severity-distance" in err and "'lca'" in err, err


# ------------------------------------------------------------------------ the authors' formulas, re-typed
def _tree(branching: list[int]) -> list[tuple[str, str]]:
    """A tree whose level ``l`` nodes have ``branching[l]`` children each."""
    edges, level = [], ["r"]
    for width in branching:
        nxt = []
        for node in level:
            for c in range(width):
                edges.append((node, f"{node}{c}"))
                nxt.append(f"{node}{c}")
        level = nxt
    return edges


def _authors(edges, classes: list[str], scores: np.ndarray, targets: np.ndarray, ks: tuple[int, ...]
             ) -> dict[tuple[str, int], float]:
    """run_xent.py's accumulators on one batch: classes are indices into ``classes`` (sorted, as the authors'
    wnids), the ranking is ``output.topk`` (scores without ties here), the distance the height of the LCA."""
    parent = {c: p for p, c in edges}
    children: dict[str, list[str]] = {}
    for p, c in edges:
        children.setdefault(p, []).append(c)

    def height(node: str) -> int:
        return 0 if node not in children else 1 + max(height(c) for c in children[node])

    def path(node: str) -> list[str]:
        return [node] + (path(parent[node]) if node in parent else [])

    def dist(u: str, v: str) -> int:
        if u == v:
            return 0
        up = set(path(v))
        return height(next(a for a in path(u) if a in up))

    n_cls = len(classes)
    distance_matrix = np.array([[dist(classes[i], classes[j]) for j in range(n_cls)] for i in range(n_cls)], float)
    max_dist = distance_matrix.max()
    best_hier_similarities = 1 - np.sort(distance_matrix, axis=1) / max_dist
    maxk = max(ks)
    predicted = np.argsort(-scores, axis=1, kind="stable")[:, :maxk]
    batch = len(targets)
    top_hdist = np.array([[distance_matrix[predicted[i, j], targets[i]] for j in range(maxk)] for i in range(batch)])
    mistakes = np.where(top_hdist[:, 0] != 0)[0]
    top_hsimilarity = 1 - top_hdist / max_dist
    top_ap = [np.sum(top_hsimilarity[:, :k]) / np.sum(best_hier_similarities[:, :k]) for k in range(1, maxk + 1)]
    out = {}
    for k in ks:
        out["top_k_accuracy", k] = np.sum(predicted[:, :k] == targets[:, None]) / batch
        out["hierarchical_distance_at_k", k] = np.mean(top_hdist[:, :k])
        out["best_hierarchical_distance_at_k", k] = np.mean([np.min(top_hdist[b, :k]) for b in range(batch)])
        out["mistake_severity", k] = np.sum(top_hdist[mistakes, :k]) / (len(mistakes) * k)
        out["hierarchical_precision_at_k", k] = top_ap[k - 1]
        out["hierarchical_map_at_k", k] = np.mean(top_ap[:k])
    return out


@pytest.mark.parametrize("seed", [1, 7])
def test_the_authors_formulas_on_a_balanced_tree(seed):
    """One instance per class (the authors' hierarchical precision divides by the best retrievals of every
    class: one batch holding each class once), on a tree whose leaves are all at one depth (iNaturalist's)."""
    edges = _tree([3, 2, 3])
    classes = sorted(c for _, c in edges if not any(p == c for p, _ in edges))
    rng = np.random.default_rng(seed)
    scores = rng.random((len(classes), len(classes)))
    targets = rng.permutation(len(classes))
    ks = (1, 2, 5, 10)
    want = _authors(edges, classes, scores, targets, ks)
    ev = evaluator(edges, [classes[t] for t in targets], {"net": scored_rows(scores, classes)})
    got = values(ev, k=list(ks))
    for (metric, k), value in want.items():
        assert got["net", metric, k] == pytest.approx(value, abs=1e-12), (metric, k)
    ev.close()


def test_the_authors_formulas_on_an_unbalanced_tree():
    """Leaves at several depths, classes seen several times (hierarchical precision and mAP aside: the authors'
    pool them over a batch, hiersql averages it over instances; both agree only where every class has the
    same best retrievals)."""
    rng = random.Random(5)
    edges = [(f"n{rng.randrange(k)}", f"n{k}") for k in range(1, 25)]
    inner = {p for p, _ in edges}
    classes = sorted(c for _, c in edges if c not in inner)
    scores = np.random.default_rng(5).random((60, len(classes)))
    targets = np.array([rng.randrange(len(classes)) for _ in range(60)])
    ks = (1, 3, 5)
    want = _authors(edges, classes, scores, targets, ks)
    ev = evaluator(edges, [classes[t] for t in targets], {"net": scored_rows(scores, classes)})
    got = values(ev, k=list(ks))
    for (metric, k), value in want.items():
        if metric not in ("hierarchical_precision_at_k", "hierarchical_map_at_k"):
            assert got["net", metric, k] == pytest.approx(value, abs=1e-12), (metric, k)
    ev.close()


# ------------------------------------------------------------------------------ names, command line, engines
def test_rows_carry_k_in_the_average_column_and_compare_ranks_them():
    ev = evaluator(TREE, TRUTH, {"m": scored_rows(SCORES, LABELS),
                                 "worse": scored_rows(1 - SCORES, LABELS)})
    frame = ev.evaluate(["mistake_severity", "hdist"], k=[1, 2])
    assert sorted(set(frame["average"])) == ["@1", "@2"]
    assert list(ev.evaluate("top_k_accuracy", k=[10, 2, 10])["average"]) == ["@2", "@10"] * 2  # by k, once each
    ranking = ev.compare(["mistake_severity", "top_k_accuracy"], n_resamples=20, k=[1, 2]).ranking
    assert set(ranking["average"]) == {"@1", "@2"}
    best = ranking[(ranking["metric"] == "top_k_accuracy") & (ranking["rank"] == 1)]
    assert set(best["system"]) == {"m"}
    ev.close()


def test_compare_bootstraps_each_k():
    """Each k has its own interval around its value, the mean over the instances where the measure is defined
    (mistake severity: the mistakes of each system, resampled with the instances)."""
    edges = _tree([3, 2, 3])
    classes = sorted(c for _, c in edges if not any(p == c for p, _ in edges))
    rng = np.random.default_rng(3)
    targets = rng.integers(len(classes), size=80)
    good = rng.random((80, len(classes))) + 0.5 * (np.arange(len(classes)) == targets[:, None])
    ev = evaluator(edges, [classes[t] for t in targets], {"good": scored_rows(good, classes),
                                                          "noise": scored_rows(rng.random(good.shape), classes)})
    metrics = ["mistake_severity", "top_k_accuracy", "hdist", "hprec"]
    ranking = ev.compare(metrics, n_resamples=200, k=[1, 5]).ranking.set_index(["system", "metric", "average"])
    want = ev.evaluate(metrics, k=[1, 5]).set_index(["system", "metric", "average"])["value"]
    assert len(want) == 2 * 4 * 2
    for key, value in want.items():
        assert ranking.loc[key, "value"] == pytest.approx(value, abs=1e-12), key
        assert ranking.loc[key, "ci_low"] <= value <= ranking.loc[key, "ci_high"], key
    assert ranking.loc[("good", "top_k_accuracy", "@5"), "rank"] == 1
    ev.close()


def test_command_line(tmp_path, capsys):
    (tmp_path / "tax.tsv").write_text("".join(f"{p}\t{c}\n" for p, c in TREE))
    (tmp_path / "truth.tsv").write_text("".join(f"{i}\t{y}\n" for i, y in enumerate(TRUTH)))
    rows = scored_rows(SCORES, LABELS)
    (tmp_path / "m.tsv").write_text("".join(f"{r.instance_id}\t{r.label}\t{r.score}\n" for r in rows.itertuples()))
    args = ["evaluate", "--taxonomy", str(tmp_path / "tax.tsv"), "--truth", str(tmp_path / "truth.tsv"),
            "--pred", f"m={tmp_path / 'm.tsv'}", "--metrics", "mistake_severity", "--format", "csv"]
    assert main([*args, "--k", "1,2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert {tuple(line.split(",")[1:3]) for line in out[1:]} == {("mistake_severity", "@1"), ("mistake_severity", "@2")}
    (tmp_path / "hard.tsv").write_text("".join(f"{i}\t{y}\n" for i, y in enumerate(["a1", "b1", "b2"])))
    hard = [*args[:5], "--pred", f"hard={tmp_path / 'hard.tsv'}", *args[7:]]
    for command, bad in ((args, "0"), (args, "x"), (args, "1,-2"), (hard, "2,5")):
        assert main([*command, "--k", bad]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "--k" in err and "Traceback" not in err, err
    assert "must include 1 for hard predictions" in err and "'2,5'" in err


def _engine_equals_duckdb(make_engine, distances: tuple[str, ...]) -> None:
    """The severity rows of another engine (``make_engine()``, closed after) equal DuckDB's on a scored and a
    hard system."""
    from hiersql.measures import compute
    from hiersql.options import make_options
    from tests._engine_cases import assert_rows_match

    ev = evaluator(TREE, TRUTH, {"m": scored_rows(SCORES, LABELS), "hard": [["a1"], ["b1"], ["b2", "a2"]]})
    engine = make_engine()
    try:
        engine.copy_store(ev.store)
        for distance in distances:
            options = make_options(k=(1, 2, 5), severity_distance=distance)
            assert_rows_match(compute(engine, ["severity"], options), compute(ev.store, ["severity"], options),
                              tol=1e-12)
    finally:
        engine.close()
        ev.close()


@pytest.mark.postgres
def test_postgres_equals_duckdb(pg_dsn):
    from hiersql.engines import PostgresEngine

    _engine_equals_duckdb(lambda: PostgresEngine(pg_dsn), ("height", "edges"))


@pytest.mark.spark
@pytest.mark.slow
def test_spark_equals_duckdb(spark):
    from hiersql.engines import SparkEngine

    _engine_equals_duckdb(lambda: SparkEngine(spark), ("height",))


def hand_file(tmp_path) -> Path:
    """A DuckDB file of hiersql's tables holding the hand example (system ``m``)."""
    from hiersql.inputs.store import Store

    path = tmp_path / "user.duckdb"
    store = Store(path)
    store.load_taxonomy(Taxonomy.from_edges(TREE))
    store.add_truth(pd.DataFrame({"instance_id": ["0", "1", "2"], "label": TRUTH}))
    store.add_predictions("m", scored_rows(SCORES, LABELS))
    store.close()
    return path


def hand_rows(k: int) -> dict[tuple[str, str], float]:
    """The hand values of ``k``, keyed (metric, average) as evaluate labels them (``@k``)."""
    return {(metric, f"@{k}"): value for (metric, kk), value in HAND.items() if kk == k}


def test_macro_gives_one_k(tmp_path):
    """hiersql_severity(top_k := k): the rows of that k, labelled '@k' as the Python API's."""
    import duckdb

    path = hand_file(tmp_path)
    assert main(["install-macros", "--db", str(path)]) == 0
    con = duckdb.connect(str(path))
    for k in (1, 2, 5):
        got = {(metric, average): value for metric, average, value in
               con.execute(f"SELECT metric, average, value FROM hiersql_severity(top_k := {k})").fetchall()}
        assert got == pytest.approx(hand_rows(k), abs=1e-12)
    with pytest.raises(duckdb.Error, match="hiersql: top_k must be an integer >= 1: 0"):
        con.execute("SELECT * FROM hiersql_severity(top_k := 0)").fetchall()
    con.close()


def test_printed_sql_is_one_k(tmp_path, capsys):
    """``hiersql sql severity --k K`` run in the user's DuckDB file gives the hand values of that k, labelled
    '@K' as evaluate labels them; several k are several runs of the plan, which one printed script is not: exit
    2, one line naming --k (as for pair-based errors that ignore --max-distance beside the others)."""
    import duckdb

    path = hand_file(tmp_path)
    for k in (2, 5):
        assert main(["sql", "severity", "--k", str(k)]) == 0
        with duckdb.connect(str(path)) as con:
            got = {(metric, average): value for _, metric, average, value in
                   con.execute(capsys.readouterr().out).fetchall()}
        assert got == pytest.approx(hand_rows(k), abs=1e-12)
    scripts: list[str] = []
    for argv, flag in ((["severity", "--k", "1,5"], "--k"), (["severity"], "--k"),
                       (["pair_based", "--max-distance", "2"], "--max-distance")):
        assert main(["sql", *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith(f"hiersql: error: {flag}: gives 2 runs"), err
    # one run, the unbounded one: the same script as without the bound, which evaluate ignores for this error
    for bound in (["--max-distance", "2"], ["--param", "max_distance=2"], []):
        assert main(["sql", "tree_induced_error", *bound]) == 0
        scripts.append(capsys.readouterr().out)
    assert scripts[0] == scripts[1] == scripts[2]


def test_printed_sql_of_a_measure_named_at_a_k_no_system_has_fails_as_evaluate_does(tmp_path, capsys):
    """Hard predictions at k = 5: evaluate refuses a severity measure named (exit 2 naming --k) and gives no row
    for the family; the printed script of the measure fails with that message (it gave no row), the family's
    has no row, and at k = 1 the measure's rows are the hand values."""
    import duckdb

    from hiersql.inputs.store import Store

    path = tmp_path / "user.duckdb"
    store = Store(path)
    store.load_taxonomy(Taxonomy.from_edges(TREE))
    store.add_truth(pd.DataFrame({"instance_id": ["0", "1", "2"], "label": TRUTH}))
    store.add_predictions("hard", [["a1"], ["b1"], ["b2"]])
    with pytest.raises(InputError) as raised:  # the words of the SQL door's failure below: one rule, one message
        hiersql.measures.compute(store, ["mistake_severity"], hiersql.Options(k=(5,)))
    assert str(raised.value) == ("k must include 1 for hard predictions (k > 1 needs scores; none of the 1 system(s)"
                                 " has them): '5'")
    assert hiersql.measures.compute(store, ["severity"], hiersql.Options(k=(5,))) == []
    store.close()

    def printed(*argv: str) -> list[tuple]:
        assert main(["sql", *argv]) == 0
        with duckdb.connect(str(path)) as con:
            return con.execute(capsys.readouterr().out).fetchall()

    with pytest.raises(duckdb.Error, match=re.escape(
            "hiersql: k must include 1 for hard predictions (k > 1 needs scores; none of the 1 system(s) has"
            " them): 5")):
        printed("mistake_severity", "--k", "5")
    assert printed("severity", "--k", "5") == []
    assert printed("mistake_severity", "--k", "1") == [("hard", "mistake_severity", "@1", 1.5)]


def test_all_leaves_out_the_pairwise_measures_of_a_large_class_set(monkeypatch):
    """Hierarchical precision and mAP compare every pair of classes: under the family's name (or all) only up
    to PAIRWISE_CLASSES classes; named, always."""
    from hiersql.measures import severity

    ev = evaluator(TREE, TRUTH, {"m": scored_rows(SCORES, LABELS)})
    assert "hierarchical_map_at_k" in set(ev.evaluate("severity", k=1)["metric"])
    monkeypatch.setattr(severity, "PAIRWISE_CLASSES", 3)  # 4 classes here
    assert set(ev.evaluate("severity", k=1)["metric"]) == set(METRICS) - {"hierarchical_precision_at_k",
                                                                           "hierarchical_map_at_k"}
    assert set(ev.evaluate("hprec", k=1)["metric"]) == {"hierarchical_precision_at_k"}
    ev.close()
