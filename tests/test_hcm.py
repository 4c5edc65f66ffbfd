"""Hierarchical confusion matrix (Riehl et al., SPEC §6): hand-computed cases, options, the family interface
and a property test against a literal per-instance port of the authors' algorithm."""

from __future__ import annotations

import math

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hiersql.inputs.store import Store
from hiersql.inputs.taxonomy import Taxonomy
from hiersql.measures import Options, resolve
from hiersql.measures.confusion import (
    METRICS,
    evaluate,
    greedy_matching,
    greedy_path_cover,
    hierarchical_confusion,
    hierarchical_confusion_matrix,
    per_instance,
)

# root > a, b;  a > a1, a2, a3;  a1 > a11, a12;  b > b1
TREE = [("root", "a"), ("root", "b"), ("a", "a1"), ("a", "a2"), ("a", "a3"), ("a1", "a11"), ("a1", "a12"),
        ("b", "b1")]


def counts(y_true, y_pred, edges=TREE, **kw) -> tuple[int, int, int, int]:
    r = hierarchical_confusion(y_true, y_pred, edges, **kw)
    return r["tp"], r["fp"], r["fn"], r["tn"]


# ------------------------------------------------------------------------------------------ single paths
def test_sibling_leaf() -> None:
    # t = root a a1 a11, p = root a a1 a12: c = root a a1 -> TP 2; FP {a12}, FN {a11};
    # TN: siblings of a {b} + of a1 {a2, a3}; children of a1 {a11, a12} all on t or p -> 3
    assert counts([["a11"]], [["a12"]]) == (2, 1, 1, 3)


def test_other_branch() -> None:
    # c = root: TP 0; FP {b, b1}; FN {a, a1, a11}; TN: children of root {a, b} all on t or p -> 0
    assert counts([["a11"]], [["b1"]]) == (0, 2, 3, 0)


def test_under_specialised() -> None:
    # p = root a: c = root a; FN {a1, a11}; TN: sibling b + children of a not on t/p {a2, a3} -> 3
    assert counts([["a11"]], [["a"]]) == (1, 0, 2, 3)


def test_over_specialised() -> None:
    # t = root a, p = root a a1 a11: c = root a; FP {a1, a11}; TN: sibling b + children of a not on t/p
    assert counts([["a"]], [["a11"]]) == (1, 2, 0, 3)


def test_exact() -> None:
    # c = t = p: TN = siblings b, a2, a3, a12 + children of a11 (none) -> 4
    assert counts([["a11"]], [["a11"]]) == (3, 0, 0, 4)


def test_tn_descendants_variant() -> None:
    # t = root a a1 a11, p = root a a2: c = root a.  published: S = {b}, D = {a1, a2, a3} - t - p = {a3}
    # descendants: S = {b, b1}, D = descendants of a - t - p = {a3, a12}
    assert counts([["a11"]], [["a2"]]) == (1, 1, 2, 2)
    assert counts([["a11"]], [["a2"]], tn="descendants") == (1, 1, 2, 4)


def test_measures_from_counts() -> None:
    r = hierarchical_confusion([["a11"]], [["a12"]], TREE)  # TP 2, FP 1, FN 1, TN 3
    assert r["accuracy"] == pytest.approx(5 / 7)
    assert r["precision"] == pytest.approx(2 / 3)
    assert r["recall"] == pytest.approx(2 / 3)
    assert r["f1"] == pytest.approx(4 / 6)
    assert r["fnr"] == pytest.approx(1 / 3)
    assert r["fpr"] == pytest.approx(1 / 4)
    assert r["tnr"] == pytest.approx(3 / 4)
    assert r["mcc"] == pytest.approx((2 * 3 - 1 * 1) / math.sqrt(3 * 3 * 4 * 4))
    tpr, tnr = 2 / 3, 3 / 4
    assert r["pt"] == pytest.approx((math.sqrt(tpr * (1 - tnr)) + tnr - 1) / (tpr + tnr - 1))


# ------------------------------------------------------------------------------------------ empty sets
def test_no_prediction_is_root_path() -> None:
    # p = [root]: c = root; FN {a, a1, a11}; TN: children of root not on t: {b}
    assert counts([["a11"]], [[]]) == (0, 0, 3, 1)


def test_no_truth_prediction_is_false_positive() -> None:
    assert counts([[]], [["a11"]]) == (0, 3, 0, 0)


def test_both_empty_zero_division() -> None:
    assert counts([[]], [[]]) == (0, 0, 0, 0)
    r = hierarchical_confusion([[]], [[]], TREE, zero_division=1.0)
    assert r["precision"] == r["recall"] == r["mcc"] == r["accuracy"] == 1.0


# ------------------------------------------------------------------------------------------ several paths
def test_several_true_labels_unmatched_fn_and_extra_fp() -> None:
    # truth {a11, b1}, prediction {a11}: a11 matched exactly (TP 3, TN 4); b1 left: FN = depth 2
    assert counts([["a11", "b1"]], [["a11"]]) == (3, 0, 2, 4)
    # truth {a11}, prediction {a11, b1}: b1 has no true label left: FP = |p| - 1 = 2
    assert counts([["a11"]], [["a11", "b1"]]) == (3, 2, 0, 4)


def test_predicted_paths_taken_by_m_then_names_descending() -> None:
    # truth {a1}; predictions {a3, a12}: a12's path root a a1 a12 shares root a a1 (m = 3) with the truth,
    # a3's only root a (m = 2), so a12 is taken first: TP 2, FP {a12}, TN {b, a2, a3} + children of a1 not
    # on t or p {a11} = 4 (a3 is a TN of that pair though the other path predicts it); a3 left over: FP 2
    assert counts([["a1"]], [["a3", "a12"]]) == (2, 3, 0, 4)


def test_name_tie_break_descending() -> None:
    # root > a, b; a > a1, a2, a3; a2 > a21. truth {a1}; predictions {a21, a3} both have m = 2 (root a).
    # Descending names: [root, a, a3] > [root, a, a2, a21], so a3 is scored against a1 first:
    # TP 1, FP {a3}, FN {a1}, TN {b} + {a2}; then a21's path has no true label left: FP 3.
    edges = [("root", "a"), ("root", "b"), ("a", "a1"), ("a", "a2"), ("a", "a3"), ("a2", "a21")]
    assert counts([["a1"]], [["a21", "a3"]], edges) == (1, 4, 1, 2)
    assert counts([["a1"]], [["a3", "a21"]], edges) == (1, 4, 1, 2)  # input order does not matter


def test_dag_benevolent_path_choice() -> None:
    # root > A, B; A > C; B > C; C > D. truth {D} owns [root A C D] and [root B C D]; prediction C is
    # covered by its first path [root A C]; the true path with the longest common path is [root A C D]:
    # TP 2, FN {D}, TN: sibling of A {B}; siblings of C through A and B: none; children of C: {D} on t
    edges = [("root", "A"), ("root", "B"), ("A", "C"), ("B", "C"), ("C", "D")]
    assert counts([["D"]], [["C"]], edges) == (2, 0, 1, 1)


def test_dag_sibling_and_child_counted_twice() -> None:
    # root > w, e; w > e. t = p = [root, w]: e is a sibling of w (S) and a child of w (D); the authors' code
    # adds |S| and |D|, so e counts twice: TN 2
    edges = [("root", "w"), ("root", "e"), ("w", "e")]
    assert counts([["w"]], [["w"]], edges) == (1, 0, 0, 2)


def test_greedy_path_cover_vectorised() -> None:
    # group 0: candidates 0 (covers labels 0, 1), 1 (covers 1), 2 (covers 2) -> 0 then 2.
    # group 1: candidates 3 (covers 3), 4 (covers 3, 4) -> 4 only (most labels first).
    import numpy as np

    group = np.array([0, 0, 0, 0, 1, 1, 1])
    cand = np.array([0, 0, 1, 2, 3, 4, 4])
    covers = np.array([0, 1, 1, 2, 3, 3, 4])
    best, step = greedy_path_cover(group, cand, covers)
    assert sorted(zip(best.tolist(), step.tolist(), strict=True)) == [(0, 0), (2, 1), (4, 0)]


def test_greedy_matching_vectorised() -> None:
    # one group, predicted paths of rank 0 and 1, true labels 0 and 1 (rows sorted by label):
    # rank 0 prefers label 1 (common 3); rank 1 gets label 0 even though label 1 would be better.
    import numpy as np

    group = np.array([0, 0, 0, 0])
    rank = np.array([0, 1, 0, 1])
    label = np.array([0, 0, 1, 1])
    common = np.array([1, 1, 3, 2])
    assert greedy_matching(group, rank, label, common).tolist() == [False, True, True, False]


# ------------------------------------------------------------------------------------------ family interface
@pytest.fixture
def store() -> Store:
    s = Store()
    s.load_taxonomy(Taxonomy.from_edges(TREE))
    s.add_truth([["a11"], ["b1"]])
    s.add_predictions("good", [["a11"], ["b1"]])
    s.add_predictions("bad", [["a12"], []])
    return s


def test_metrics_names_and_group() -> None:
    assert set(METRICS) == {"hcm_tp", "hcm_tn", "hcm_fp", "hcm_fn", "hcm_accuracy", "hcm_precision",
                            "hcm_recall", "hcm_f1", "hcm_mcc", "hcm_fnr", "hcm_fpr", "hcm_tnr", "hcm_pt"}
    assert resolve(["hcm"]) == {"confusion": list(METRICS)}


def test_per_instance(store: Store) -> None:
    df = per_instance(store, Options())
    got = {(r.system, r.instance_id): (r.tp, r.fp, r.fn, r.tn) for r in df.itertuples()}
    # bad/1: truth b1 (root b b1), prediction [root]: FN 2, TN {a}
    assert got == {("bad", "0"): (2, 1, 1, 3), ("bad", "1"): (0, 0, 2, 1),
                   ("good", "0"): (3, 0, 0, 4), ("good", "1"): (2, 0, 0, 1)}


def test_evaluate_rows(store: Store) -> None:
    rows = evaluate(store, ["hcm_tp", "hcm_precision", "hcm_recall"], Options())
    got = {(r.system, r.metric, r.average): r.value for r in rows}
    assert got[("bad", "hcm_tp", "")] == 2
    assert got[("bad", "hcm_precision", "micro")] == pytest.approx(2 / 3)
    assert got[("bad", "hcm_recall", "micro")] == pytest.approx(2 / 5)
    # macro: instance 0 has precision 2/3, instance 1 has 0/0 -> zero_division 0
    assert got[("bad", "hcm_precision", "macro")] == pytest.approx(1 / 3)
    assert got[("good", "hcm_recall", "macro")] == 1.0
    assert len(rows) == 2 * (1 + 2 + 2)
    micro_only = evaluate(store, ["hcm_f1"], Options(average=("micro",)))
    assert [(r.system, r.average) for r in micro_only] == [("bad", "micro"), ("good", "micro")]


def test_hierarchical_confusion_matrix_table(store: Store) -> None:
    df = hierarchical_confusion_matrix(store)
    assert list(df.columns) == ["system", "tp", "fp", "fn", "tn", "accuracy", "precision", "recall", "f1",
                                "mcc", "fnr", "fpr", "tnr", "pt"]
    assert df.set_index("system").loc["good", ["tp", "fp", "fn", "tn"]].tolist() == [5, 0, 0, 5]


def test_no_systems_gives_empty_results() -> None:
    s = Store()
    s.load_taxonomy(Taxonomy.from_edges(TREE))
    s.add_truth([["a11"]])
    assert evaluate(s, list(METRICS), Options()) == []
    assert per_instance(s, Options()).empty
    df = hierarchical_confusion_matrix(s)
    assert df.empty and list(df.columns)[:5] == ["system", "tp", "fp", "fn", "tn"]


def test_one_shot_inputs() -> None:
    tax = Taxonomy.from_edges(TREE)
    assert hierarchical_confusion([["a11"]], [["a12"]], tax)["tn"] == 3
    with pytest.raises(ValueError, match="instances"):
        hierarchical_confusion([["a11"]], [], TREE)


def test_bad_tn_option(store: Store) -> None:
    with pytest.raises(ValueError, match="tn must be"):
        hierarchical_confusion_matrix(store, tn="all")


# ------------------------------------------------------------------------------------------ reference port
def reference_hcm(graph: nx.DiGraph, root: str, y_true: list[list[str]], y_pred: list[list[str]],
                  tn: str = "published", root_paths=None) -> tuple[int, int, int, int]:
    """A literal per-instance port of the authors' HierarchicalConfusion.py + createMinimPathsFromLabels;
    ``tn="descendants"`` widens S and D with descendants (the paper's reading). ``root_paths(node)`` lists
    the root paths of a node (default: networkx's ``all_simple_paths`` from the root, as the authors)."""
    root_paths = root_paths or (lambda v: nx.all_simple_paths(graph, root, v))
    def common(t, p):
        out = []
        for n in t:
            if n not in p:
                break
            out.append(n)
        return out

    def neighbors(n):
        return [c for a in graph.predecessors(n) for c in graph.successors(a) if c != n]

    def pair(t, p):
        c = common(t, p)
        sib = {n for x in c for n in neighbors(x)}
        below = list(graph.successors(c[-1]))
        if tn == "descendants":
            sib |= {d for n in sib for d in nx.descendants(graph, n)}
            below = list(nx.descendants(graph, c[-1]))
        sib -= set(t)
        below = [n for n in below if n not in t and n not in p]
        return [len(c) - 1, len(sib) + len(below), len([n for n in p if n not in t]),
                len([n for n in t if n not in p])]

    def cover(labels):
        remaining, paths, chosen = list(labels), [], []
        for v in labels:
            paths += [list(p) for p in root_paths(v)]
        while remaining:
            best, best_n = None, -1
            for p in paths:
                n = sum(1 for x in remaining if x in p)
                if n > best_n:
                    best, best_n = p, n
            chosen.append(best)
            remaining = [x for x in remaining if x not in best]
            paths.remove(best)
        return chosen

    total = [0, 0, 0, 0]
    for truth, pred in zip(y_true, y_pred, strict=True):
        true_labels = list(dict.fromkeys(p[-1] for p in cover(truth)))
        pred_paths = cover(pred) or [[root]]
        w = {n: [list(p) for p in root_paths(n)] for n in true_labels}
        m = [max((len(common(t, p)) for n in w for t in w[n]), default=-1) for p in pred_paths]
        pred_paths = [p for _, p in sorted(zip(m, pred_paths, strict=True))][::-1]
        for p in pred_paths:
            if not w:
                total[2] += len(p) - 1
                continue
            best, label, m_max = None, None, -1
            for n in w:
                for t in w[n]:
                    if len(common(t, p)) > m_max:
                        m_max, label, best = len(common(t, p)), n, t
            total = [a + b for a, b in zip(total, pair(best, p), strict=True)]
            del w[label]
        for n in w:
            total[3] += min(len(t) for t in w[n]) - 1
    tp, tn, fp, fn = total
    return tp, fp, fn, tn


@st.composite
def dag_case(draw):
    n = draw(st.integers(3, 8))
    names = draw(st.permutations([f"{c}{i}" for i, c in enumerate("qwertyuiop"[:n])]))
    edges = []
    for i in range(1, n):
        parents = draw(st.lists(st.integers(0, i - 1), min_size=1, max_size=2, unique=True))
        edges += [(names[p], names[i]) for p in parents]
    labels = st.lists(st.sampled_from(names[1:]), max_size=3, unique=True)
    n_inst = draw(st.integers(1, 3))
    y_true = [draw(labels) for _ in range(n_inst)]
    y_pred = [draw(labels) for _ in range(n_inst)]
    return names[0], edges, y_true, y_pred


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dag_case(), st.sampled_from(["published", "descendants"]))
def test_matches_reference_port_on_random_dags(case, tn: str) -> None:
    root, edges, y_true, y_pred = case
    tax = Taxonomy.from_edges(edges)
    assert tax.root == root
    position = {n: i for i, n in enumerate(tax.all_nodes())}
    graph = nx.DiGraph()  # adjacency in node-position order: networkx's path order = hiersql's path order
    graph.add_edges_from(sorted(((e.parent, e.child) for e in tax.all_edges()), key=lambda e: position[e[1]]))
    assert counts(y_true, y_pred, tax, tn=tn) == reference_hcm(graph, root, y_true, y_pred, tn)


def test_matches_reference_port_on_mesh(data_dir) -> None:
    """The MeSH DAG (up to 26 root paths per label): 150 instances of 1-3 random true labels and 0-3 predicted
    labels drawn near them (parents, children, siblings), against the reference port."""
    import random
    import warnings

    from hiersql.errors import DataWarning

    tax = Taxonomy.from_file(data_dir / "mesh" / "mesh_hierarchy_int.txt")
    position = {n: i for i, n in enumerate(tax.all_nodes())}
    graph = tax.graph
    reverse = graph.reverse()

    def root_paths(v):  # all root paths, in hiersql's path order (node positions, element-wise)
        paths = [p[::-1] for p in nx.all_simple_paths(reverse, v, tax.root)] if v != tax.root else [[v]]
        return sorted(paths, key=lambda p: [position[n] for n in p])

    def near(n):
        return [n, *tax.parents(n), *tax.children(n), *(c for p in tax.parents(n) for c in tax.children(p))]

    rng = random.Random(2)
    y_true = [rng.sample(tax.nodes, rng.randint(1, 3)) for _ in range(150)]
    y_pred = [list(dict.fromkeys(rng.choice(near(rng.choice(t))) for _ in range(rng.randint(0, 3))))
              for t in y_true]
    store = Store()
    store.load_taxonomy(tax)
    store.add_truth(y_true)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        store.add_predictions("x", y_pred)
    got = {r.instance_id: (r.tp, r.fp, r.fn, r.tn) for r in per_instance(store, Options()).itertuples()}
    for i, (t, p) in enumerate(zip(y_true, y_pred, strict=True)):
        assert got[str(i)] == reference_hcm(graph, tax.root, [t], [p], root_paths=root_paths), (t, p)


def test_fetch_sorts_rows_only_when_the_scan_is_not_in_key_order() -> None:
    """The Python steps' fetch gives the rows sorted by the key columns whatever the table's physical order:
    a table stored in that order as it is, another sorted by DuckDB."""
    import duckdb
    import numpy as np

    from hiersql.measures.confusion import _fetch, _sorted

    assert _sorted([np.array([0, 0, 1, 1]), np.array([2, 3, 0, 1])])
    assert not _sorted([np.array([0, 0, 1, 1]), np.array([3, 2, 0, 1])])
    assert not _sorted([np.array([0, 1, 0]), np.array([0, 0, 5])])
    assert _sorted([np.array([], dtype=np.int64)])
    con = duckdb.connect()
    rows = [(1, 0, 7), (0, 1, 8), (0, 0, 9), (1, 1, 6)]
    for stored in (rows, sorted(rows)):
        con.execute("CREATE OR REPLACE TABLE t (a BIGINT, b BIGINT, v BIGINT)")
        con.executemany("INSERT INTO t VALUES (?, ?, ?)", stored)
        got = _fetch(con, "t", ("a", "b", "v"), 2)
        assert list(zip(*(got[k].tolist() for k in ("a", "b", "v")), strict=True)) == sorted(rows)
