"""Pair distances in SQL (pair_based.sql) and the pair-based measures (hiersql.measures.pair_based):
hand-computed trees and DAGs, and the MeSH DAG of the real data against networkx."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from hiersql import sqlfiles
from hiersql.api.evaluator import Evaluator
from hiersql.engines import DuckDBEngine
from hiersql.errors import InputError
from hiersql.inputs.store import Store
from hiersql.inputs.taxonomy import Taxonomy
from hiersql.measures import Options
from hiersql.measures import pair_based as pb
from tests._engine_cases import query_rows

# Kosmopoulos Fig. 11: T1, P1, P2 are children of B (their lowest common ancestor), B and C of A.
FIG11 = [("A", "B"), ("A", "C"), ("B", "T1"), ("B", "P1"), ("B", "P2")]
# Kosmopoulos Fig. 12(a): TP and P1 are children of D; D, E of B; B, C of A. (b): P1 is a child of B.
FIG12A = [("A", "B"), ("A", "C"), ("B", "D"), ("B", "E"), ("D", "TP"), ("D", "P1")]
FIG12B = [("A", "B"), ("A", "C"), ("B", "D"), ("B", "P1"), ("D", "E"), ("D", "TP")]
# A DAG where u and v share the child c but their only common ancestor is r, 3 edges above each:
# d(u, v) = 6 while the undirected shortest path u - c - v has 2 edges.
BELOW = [("r", "p1"), ("p1", "p2"), ("p2", "u"), ("r", "q1"), ("q1", "q2"), ("q2", "v"), ("u", "c"), ("v", "c")]
# A DAG with ties: B > t1, p1, p2; C > t2, p2 (p2 has two parents); A > B, C.
TIES = [("A", "B"), ("A", "C"), ("B", "t1"), ("B", "p1"), ("B", "p2"), ("C", "t2"), ("C", "p2")]


def distances(edges, truth, pred, max_distance=None, max_climb=None) -> dict[tuple[str, str], int]:
    store = Store()
    store.load_taxonomy(Taxonomy.from_edges(edges))
    store.add_truth([truth])
    store.add_predictions("s", [pred])
    params = {"max_distance": max_distance, "max_climb": max_climb}
    rows = query_rows(store, "pair_based", "pair_distances", params)
    assert {(r[0], r[1]) for r in rows} <= {("s", "0")}
    return {(r[2], r[3]): r[4] for r in rows}


def test_distance_in_a_tree_meets_at_the_lowest_common_ancestor():
    assert distances(FIG12B, ["TP"], ["TP", "P1", "E", "C", "D"]) == {
        ("TP", "TP"): 0, ("TP", "P1"): 3, ("TP", "E"): 2, ("TP", "C"): 4, ("TP", "D"): 1}


def test_dag_distance_goes_up_to_a_common_ancestor_not_below():
    d = distances(BELOW, ["u", "c"], ["v"])
    assert d == {("u", "v"): 6, ("c", "v"): 1}
    undirected = nx.shortest_path_length(Taxonomy.from_edges(BELOW).graph.to_undirected(), "u", "v")
    assert undirected == 2


def test_dag_distance_takes_the_shortest_way_up():
    # p2 has parents B and C: d(t2, p2) = 2 through C, d(t1, p2) = 2 through B, d(t2, p1) = 4 through A.
    assert distances(TIES, ["t1", "t2"], ["p1", "p2"]) == {
        ("t1", "p1"): 2, ("t1", "p2"): 2, ("t2", "p1"): 4, ("t2", "p2"): 2}


def test_max_distance_leaves_out_farther_pairs():
    assert distances(TIES, ["t1", "t2"], ["p1", "p2"], max_distance=3) == {
        ("t1", "p1"): 2, ("t1", "p2"): 2, ("t2", "p2"): 2}
    assert distances(FIG12B, ["TP"], ["TP", "C"], max_distance=0) == {("TP", "TP"): 0}


# Kosmopoulos Fig. 17(a): T1 two edges below A, P1 and P2 four edges below A on the other side.
FIG17A = [("A", "B"), ("A", "C"), ("B", "T1"), ("C", "D"), ("D", "E"), ("E", "P1"), ("E", "P2")]


def test_max_climb_bounds_each_side_instead_of_the_distance():
    assert distances(FIG17A, ["T1"], ["P1"]) == {("T1", "P1"): 6}
    assert distances(FIG17A, ["T1"], ["P1"], max_distance=5) == {}
    assert distances(FIG17A, ["T1"], ["P1"], max_climb=4) == {("T1", "P1"): 6}
    assert distances(FIG17A, ["T1"], ["P1"], max_climb=3) == {}


def test_distance_limit_side_reproduces_table_7a_at_the_papers_threshold():
    # The paper's threshold is 5 and its Table 7(a) prints GIE "6 + Max" and MGIA 0.2 (fn 12).
    # each side's climb is bounded (the default, as HEMKit)
    assert pb.graph_induced_error([["T1"]], [["P1", "P2"]], FIG17A, max_distance=5) == 6 + 5
    assert pb.mgia([["T1"]], [["P1", "P2"]], FIG17A, max_distance=5) == pytest.approx(1 - 12 / 15)
    # bounding d itself leaves every class unpaired
    pair = {"max_distance": 5, "distance_limit": "pair"}
    assert pb.graph_induced_error([["T1"]], [["P1", "P2"]], FIG17A, **pair) == 3 * 5
    assert pb.mgia([["T1"]], [["P1", "P2"]], FIG17A, **pair) == 0.0


def test_generic_query_measures_a_callers_pairs():
    store = Store()
    store.load_taxonomy(Taxonomy.from_edges(BELOW))
    store.con.execute("CREATE TEMP TABLE label_pairs AS SELECT * FROM (VALUES ('x', '1', 'u', 'v'),"
                      " ('x', '2', 'c', 'p1'), ('x', '2', 'c', 'c')) AS t(system, instance_id, u, v)")
    sql = sqlfiles.composed("pair_based", "pair_distances_of", skip={"label_pairs"})
    rows = store.con.execute(sql, {"max_distance": None, "max_climb": None}).fetchall()
    assert sorted(rows) == [("x", "1", "u", "v", 6), ("x", "2", "c", "c", 0), ("x", "2", "c", "p1", 3)]


def test_mesh_distances_match_networkx(data_dir):
    """On the real MeSH DAG (27,900 nodes): d(u, v) = min over common ancestors a of up(u, a) + up(v, a),
    computed with networkx breadth-first searches for 300 random pairs."""
    tax = Taxonomy.from_file(data_dir / "mesh" / "mesh_hierarchy_int.txt")
    rng = np.random.default_rng(3)
    nodes = np.array(tax.nodes)
    pairs = [(str(a), str(b)) for a, b in rng.choice(nodes, size=(300, 2))]
    store = Store()
    store.load_taxonomy(tax)
    store.add_truth([[u] for u, _ in pairs])
    store.add_predictions("s", [[v] for _, v in pairs])
    params = {"max_distance": None, "max_climb": None}
    got = {int(r[1]): r[4] for r in query_rows(store, "pair_based", "pair_distances", params)}
    up = tax.graph.reverse(copy=False)

    def expected(u: str, v: str) -> int:
        du = nx.single_source_shortest_path_length(up, u)
        dv = nx.single_source_shortest_path_length(up, v)
        return min(du[a] + dv[a] for a in du.keys() & dv.keys())

    assert got == {i: expected(u, v) for i, (u, v) in enumerate(pairs)}
    assert max(got.values()) > 6  # the sample reaches deep pairs, not only siblings


# ---------------------------------------------------------------------- measures
def test_gie_and_mgia_of_figure_11():
    # (a) T = {T1}, P = {P1, P2}: GIE = 2 + dmax = 7; MGIA fn = 2 + 2 = 4, 1 - 4/(3 * 5) = 0.7333.
    assert pb.graph_induced_error([["T1"]], [["P1", "P2"]], FIG11) == 7.0
    assert pb.mgia([["T1"]], [["P1", "P2"]], FIG11) == pytest.approx(1 - 4 / 15)
    # (b) the transpose gives the same values.
    assert pb.graph_induced_error([["P1", "P2"]], [["T1"]], FIG11) == 7.0
    assert pb.mgia([["P1", "P2"]], [["T1"]], FIG11) == pytest.approx(1 - 4 / 15)


def test_gie_strict_and_reuse_and_mgia_of_figure_12():
    # T = {TP}, P = {TP, P1}; d(P1, TP) = 2 in (a), 3 in (b).
    for edges, d in ((FIG12A, 2), (FIG12B, 3)):
        assert pb.graph_induced_error([["TP"]], [["TP", "P1"]], edges) == 5.0  # P1 has no partner left
        assert pb.graph_induced_error([["TP"]], [["TP", "P1"]], edges, shared="reuse") == d
        assert pb.mgia([["TP"]], [["TP", "P1"]], edges) == pytest.approx(1 - d / (2 * 5))
        # the text's denominator |P Δ T| = 1
        assert pb.mgia([["TP"]], [["TP", "P1"]], edges, denominator="symmetric_difference") == pytest.approx(
            1 - d / 5)


def test_mgia_nearest_breaks_ties_to_count_fewest_pairs():
    # t1 is nearest to p1 and p2 (2), p2 to t1 and t2 (2), p1 only to t1, t2 only to p2. Choosing (t1, p1)
    # and (t2, p2) counts 2 + 2; a careless tie-break (t1 picks p2) would count (t1,p2), (t1,p1), (t2,p2).
    truth, pred = [["t1", "t2"]], [["p1", "p2"]]
    assert pb.mgia(truth, pred, TIES) == pytest.approx(1 - 4 / (4 * 5))
    assert pb.mgia(truth, pred, TIES, pairing="flow") == pytest.approx(1 - 4 / (4 * 5))
    assert pb.graph_induced_error(truth, pred, TIES) == 4.0


def test_mgia_nearest_pairs_far_classes_that_flow_sends_to_the_default():
    # P2 is 5 edges from T1 (through A): nearest pairs it at 5 ... with dmax = 3 the flow prefers the default.
    edges = [*FIG11, ("C", "X"), ("X", "P3")]
    truth, pred = [["T1"]], [["P1", "P3"]]
    assert pb.mgia(truth, pred, edges, dmax=3.0) == pytest.approx(1 - (2 + 5) / (3 * 3))
    assert pb.mgia(truth, pred, edges, dmax=3.0, pairing="flow") == pytest.approx(1 - (2 + 3) / (3 * 3))
    # with d bounded by 4 the nearest pairing has no partner for P3 either: the default at dmax.
    pair = {"max_distance": 4, "distance_limit": "pair"}
    assert pb.mgia(truth, pred, edges, dmax=3.0, **pair) == pytest.approx(1 - (2 + 3) / (3 * 3))
    assert pb.graph_induced_error(truth, pred, edges, **pair) == 2 + 5.0


def test_empty_sets_and_averages_over_instances_and_systems():
    ev = Evaluator(Taxonomy.from_edges(FIG11))
    ev.add_truth([["T1"], [], ["P1"], ["T1"]])
    ev.add_predictions("perfect", [["T1"], [], ["P1"], ["T1"]])
    ev.add_predictions("sys", [["P1", "P2"], ["C"], [], ["T1"]])
    listed = ev.rows(["gie", "mgia", "mgia_fn", "all_pairs_error"])
    assert all(type(r.system) is str and type(r.value) is float for r in listed)
    rows = {(r.system, r.metric, r.average): r.value for r in listed}
    # sys per instance: GIE 7, 5 (C unpaired), 5 (P1 missed), 0; fn 4, 5, 5, 0;
    # MGIA 1 - 4/15, 0, 0, 1; |P ∪ T| = 3, 1, 1, 1; all pairs 2 + 2, 0, 0, 0.
    assert rows[("sys", "graph_induced_error", "")] == pytest.approx(17 / 4)
    assert rows[("sys", "mgia_fn", "")] == pytest.approx(14 / 4)
    assert rows[("sys", "mgia", "macro")] == pytest.approx((1 - 4 / 15 + 1) / 4)
    assert rows[("sys", "mgia", "micro")] == pytest.approx(1 - 14 / (6 * 5))
    assert rows[("sys", "all_pairs_error", "")] == pytest.approx(1.0)
    assert {v for (s, _, _), v in rows.items() if s == "perfect"} == {0.0, 1.0}
    assert rows[("perfect", "mgia", "micro")] == 1.0 and rows[("perfect", "graph_induced_error", "")] == 0.0
    only_macro = ev.rows(["mgia"], average="macro")
    assert [(r.system, r.average) for r in only_macro] == [("perfect", "macro"), ("sys", "macro")]


def test_per_instance_values():
    ev = Evaluator(Taxonomy.from_edges(FIG12A))
    ev.add_truth([["TP"], ["P1"]])
    ev.add_predictions("s", [["TP", "P1"], ["TP"]])
    frame = ev.per_instance("pair_based")
    assert frame[["instance_id", "n_true", "n_pred", "n_shared"]].values.tolist() == [[0, 1, 2, 1], [1, 1, 1, 0]]
    assert frame["graph_induced_error"].tolist() == [5.0, 2.0]
    assert frame["mgia_fn"].tolist() == [2.0, 2.0]
    assert frame["mgia"].tolist() == pytest.approx([0.8, 1 - 2 / 10])
    assert frame["tree_induced_error"].isna().tolist() == [True, False]
    assert frame["tree_induced_error"][1] == 2.0
    assert frame["all_pairs_error"].tolist() == [2.0, 2.0]


def test_tree_induced_error_is_the_distance_for_single_labels_and_refuses_other_data():
    assert pb.tree_induced_error([["T1"], ["P1"], ["C"]], [["P1"], ["P1"], ["T1"]], FIG11) == pytest.approx(
        (2 + 0 + 3) / 3)
    # ignores max_distance: there is no default class to pair with
    assert pb.tree_induced_error([["C"]], [["T1"]], FIG11, max_distance=1) == 3.0
    with pytest.raises(InputError, match="as many predicted as true"):
        pb.tree_induced_error([["T1"], ["P1"]], [["P1", "P2"], ["P1"]], FIG11)


def test_metric_applies_tells_whether_the_tree_induced_error_is_defined():
    ev = Evaluator(Taxonomy.from_edges(FIG11))
    ev.add_truth([["T1"], ["P1"]])
    ev.add_predictions("single", [["P1"], ["T1"]])
    engine = DuckDBEngine(ev.store)
    assert pb.PLAN.metric_applies(engine, "tree_induced_error")
    ev.add_predictions("multi", [["P1", "P2"], ["T1"]])
    assert not pb.PLAN.metric_applies(engine, "tree_induced_error")
    assert pb.PLAN.metric_applies(engine, "graph_induced_error")


def test_all_pairs_error_sums_every_pair():
    assert pb.all_pairs_error([["T1", "C"]], [["P1", "P2"]], FIG11) == 2 + 2 + 3 + 3


def test_options_are_validated():
    store = Store()
    store.load_taxonomy(Taxonomy.from_edges(FIG11))
    for bad in ({"pairing": "greedy"}, {"shared": "x"}, {"denominator": "x"}, {"dmax": 0.0},
                {"max_distance": -1}, {"distance_limit": "total"}):
        with pytest.raises(ValueError):
            pb.evaluate(store, ["mgia"], Options().with_(**bad))


# ---------------------------------------------------------------------- real data
def _reference_distances(tax: Taxonomy):
    """d(u, v) from networkx breadth-first searches up the DAG (an implementation independent of SQL)."""
    up = tax.graph.reverse(copy=False)
    climbs = {n: nx.single_source_shortest_path_length(up, n) for n in tax.all_nodes()}

    def d(u: str, v: str) -> int:
        return min(climbs[u][a] + climbs[v][a] for a in climbs[u].keys() & climbs[v].keys())

    return d


def _reference_gie(d, truth: list[str], pred: list[str], dmax: float) -> float:
    from scipy.optimize import linear_sum_assignment

    m, n = len(pred), len(truth)
    big = np.zeros((m + n, n + m))
    big[:m, :n] = np.array([[d(p, t) for t in truth] for p in pred]).reshape(m, n)
    big[:m, n:] = dmax
    big[m:, :n] = dmax
    rows, cols = linear_sum_assignment(big)
    return float(big[rows, cols].sum())


def _reference_mgia_fn(d, truth: list[str], pred: list[str], dmax: float) -> float | None:
    """Every combination of nearest choices (None when there are more than 4096); the smallest fn."""
    import itertools

    options = []
    for x, others, side in [(t, pred, "t") for t in truth] + [(p, truth, "p") for p in pred]:
        if not others:
            options.append([(side, x, None)])
            continue
        best = min(d(x, o) for o in others)
        options.append([(x, o) if side == "t" else (o, x) for o in others if d(x, o) == best])
    if np.prod([len(o) for o in options]) > 4096:
        return None
    fns = []
    for choice in itertools.product(*options):
        pairs = {c for c in choice if len(c) == 2}
        defaults = sum(1 for c in choice if len(c) == 3)
        fns.append(sum(d(t, p) for t, p in pairs) + dmax * defaults)
    return min(fns)


def test_germeval_subtask_b_against_independent_references(data_dir):
    """GermEval 2019 subtask B (real gold labels, two real submissions, DAG-capable taxonomy of 343 classes):
    GIE per instance equals scipy's assignment on the augmented cost matrix, MGIA's fn the best combination of
    nearest choices, the all-pairs error the plain sum; both systems in one evaluation."""
    canonical = data_dir / "canonical"
    tax = Taxonomy.from_file(canonical / "taxonomy.tsv")
    ev = Evaluator(tax)
    ev.add_truth(canonical / "truth_b.tsv")
    systems = ("Averbis__BOHB_CNN", "LT-UHH__baseline")
    for name in systems:
        ev.add_predictions(name, canonical / "pred_b" / f"{name}.tsv")
    frame = ev.per_instance("pair_based")
    truth = ev.con.execute("SELECT instance_id, list(label) FROM truth GROUP BY ALL").fetchall()
    truth = dict(truth)
    pred = dict(((s, i), labels) for s, i, labels in ev.con.execute(
        "SELECT system, instance_id, list(label) FROM predictions GROUP BY ALL").fetchall())
    d = _reference_distances(tax)
    checked_ties = 0
    for row in frame.itertuples():
        t, p = truth.get(row.instance_id, []), pred.get((row.system, row.instance_id), [])
        assert row.graph_induced_error == _reference_gie(d, t, p, 5.0), row
        fn = _reference_mgia_fn(d, t, p, 5.0)
        if fn is not None:
            assert row.mgia_fn == fn, row
            checked_ties += 1
        assert row.all_pairs_error == sum(d(a, b) for a in t for b in p)
    assert len(frame) == 2 * len(ev.con.execute("SELECT * FROM instances").fetchall()) > 8000
    assert checked_ties > 0.99 * len(frame)
    means = frame.groupby("system")["graph_induced_error"].mean()
    rows = {(r.system, r.metric): r.value for r in ev.rows(["gie"])}
    assert rows == {(s, "graph_induced_error"): pytest.approx(means[s]) for s in systems}


def test_orderings_between_the_measures_on_a_random_dag():
    """GIE's pairing is feasible for MGIA's flow network, and so is the nearest pairing: fn(flow) <= GIE and
    fn(flow) <= fn(nearest); MGIA(flow) lies in [0, 1]; the all-pairs error is at least the tree-induced one."""
    rng = np.random.default_rng(11)
    edges = [(str(rng.integers(0, i)), str(i)) for i in range(1, 40)]
    edges += [(str(rng.integers(0, i)), str(i)) for i in rng.integers(5, 40, size=12)]
    tax = Taxonomy.from_edges(edges)
    nodes = [str(i) for i in range(1, 40)]

    def sets(n: int) -> list[list[str]]:
        return [list(rng.choice(nodes, size=rng.integers(0, 4), replace=False)) for _ in range(n)]

    ev = Evaluator(tax)
    ev.add_truth(sets(120))
    ev.add_predictions("a", sets(120))
    ev.add_predictions("b", sets(120))
    nearest = ev.per_instance("pair_based", max_distance=4)
    flow = ev.per_instance("pair_based", max_distance=4, pairing="flow")
    assert (flow["mgia_fn"] <= nearest["mgia_fn"] + 1e-9).all()
    assert (flow["mgia_fn"] <= nearest["graph_induced_error"] + 1e-9).all()
    assert (flow["mgia_fn"] < nearest["mgia_fn"]).any()
    assert flow["mgia"].between(0, 1).all()
    same = nearest[nearest["n_true"] == nearest["n_pred"]]
    assert (same["all_pairs_error"] >= same["tree_induced_error"]).all()


@pytest.mark.parametrize("params", [{"max_distance": None, "max_climb": None}, {"max_distance": 2, "max_climb": None},
                                    {"max_distance": None, "max_climb": 1}, {"max_distance": 3, "max_climb": 1}])
def test_the_duckdb_variant_of_pair_distances_gives_the_portable_rows(params):
    """``pair_label_distances (duckdb)`` (the join order fixed) and the portable query, on a DAG whose pairs
    meet on several paths, under each bound; and ``pair_arcs (duckdb)`` (the classes of a problem joined on the
    problem) and the portable ``pair_arcs`` (``pair_distances_of`` joined to the problems and classes)."""
    from tests._engine_cases import dag_store

    store = dag_store()
    variant = query_rows(store, "pair_based", "pair_distances", params)
    portable = store.con.execute(sqlfiles.render("pair_based", "pair_distances", params, "duckdb",
                                                 pretty=False)).fetchall()
    assert len(variant) > 10 and sorted(variant) == sorted(portable)
    done: set[str] = set()
    engine = DuckDBEngine(store)
    for query in ("pair_problems", "pair_true_classes", "pair_pred_classes"):
        engine.stage("pair_based", query, params, done)
    arcs, portable = (engine.con.execute(sql, sqlfiles.bind(sql, params)).fetchall() for sql in (
        sqlfiles.composed("pair_based", "pair_arcs", "duckdb", skip=done),
        sqlfiles.composed("pair_based", "pair_arcs", skip=done)))
    assert len(arcs) == len(variant) and sorted(arcs) == sorted(portable)
