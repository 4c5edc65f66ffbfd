"""LCA precision, recall and F1 (Kosmopoulos et al. §2.4.2; SPEC §4): the worked example of Fig. 8(b) with
every intermediate set the paper lists, the three graph modes, averaging, empty sets, options and SQL."""

from __future__ import annotations

import itertools
import random
import warnings

import pytest
import sqlglot

from hiersql import sqlfiles
from hiersql.api.evaluator import make_options
from hiersql.cli import main
from hiersql.engines import DuckDBEngine
from hiersql.errors import DataWarning
from hiersql.inputs.store import Store
from hiersql.inputs.taxonomy import Taxonomy
from hiersql.measures import compute, lca, store_from_sets

# Fig. 8(b): the tree of Fig. 8(a) plus the DAG edges 3 -> 2.1 and 3 -> 3.2.2.
FIG8B = [("0", "1"), ("0", "2"), ("0", "3"), ("1", "1.1"), ("1", "1.2"), ("2", "2.1"), ("3", "3.1"),
         ("3", "3.2"), ("3", "3.3"), ("3.2", "3.2.1"), ("3.2", "3.2.2"), ("3", "2.1"), ("3", "3.2.2")]
Y = ["2.1", "3.2.1", "3.3"]
Y_HAT = ["3.1", "3.2.1", "3.2.2"]
KEY = ("y_pred", "0")


@pytest.fixture
def fig8b():
    store = store_from_sets([Y], [Y_HAT], Taxonomy.from_edges(FIG8B))
    yield store
    store.close()


def options(**kw):
    return make_options(**kw)


def test_fig8b_lca_sets(fig8b):
    """LCA(n, S) and Sbest(n, S) of every label (the bullet list after Definition 4)."""
    lca.per_instance(fig8b, options(lca_graph="extended"))  # stages as temp tables
    rows = fig8b.con.execute(  # a shared label's only option, itself, is not stored in lca_options
        "SELECT side, n.label, a.label, p.label FROM (SELECT side, label, lca, partner FROM lca_options"
        " UNION ALL SELECT side, label, label, label FROM lca_labels WHERE shared) AS o"
        " JOIN nodes AS n ON n.position = o.label JOIN nodes AS a ON a.position = o.lca"
        " JOIN nodes AS p ON p.position = o.partner"  # nodes are positions in the LCA tables
    ).fetchall()
    lcas: dict[tuple[str, str], set[str]] = {}
    best: dict[tuple[str, str], set[str]] = {}
    for side, label, a, partner in rows:
        lcas.setdefault((side, label), set()).add(a)
        best.setdefault((side, label), set()).add(partner)
    assert lcas == {
        ("t", "2.1"): {"3"}, ("t", "3.3"): {"3"}, ("t", "3.2.1"): {"3.2.1"},
        ("p", "3.2.1"): {"3.2.1"}, ("p", "3.1"): {"3"}, ("p", "3.2.2"): {"3.2", "3"},
    }
    assert best[("t", "2.1")] == {"3.1", "3.2.2"}  # via pathmin(2.1, 3.1) or pathmin(2.1, 3.2.2)
    assert best[("t", "3.3")] == {"3.1", "3.2.2"}
    assert best[("p", "3.1")] == {"2.1", "3.3"}
    assert best[("p", "3.2.2")] == {"3.2.1", "2.1", "3.3"}
    # LCAall(Y, Ŷ) = {3, 3.2.1}, LCAall(Ŷ, Y) = {3, 3.2, 3.2.1}
    assert set().union(*(v for (s, _), v in lcas.items() if s == "t")) == {"3", "3.2.1"}
    assert set().union(*(v for (s, _), v in lcas.items() if s == "p")) == {"3", "3.2", "3.2.1"}


def test_fig8b_path_min(fig8b):
    """pathmin(2.1, 3.1) = {2.1, 3, 3.1}, pathmin(2.1, 3.2.2) = {2.1, 3, 3.2.2} (the DAG edges make both
    2 edges long), pathmin(3.2.2, 3.2.1) = {3.2.2, 3.2, 3.2.1}: the nodes on the paths to the LCA."""
    lca.per_instance(fig8b, options(lca_graph="extended"))  # stages as temp tables
    nodes = fig8b.con.execute(
        "SELECT n.label, a.label, list(v.label ORDER BY step) FROM lca_path_nodes AS p JOIN nodes AS n ON"
        " n.position = p.node JOIN nodes AS a ON a.position = p.lca JOIN nodes AS v ON v.position = p.v GROUP BY ALL"
    ).fetchall()
    path = {(n, a): vs for n, a, vs in nodes}
    assert path[("2.1", "3")] == ["2.1", "3"] and path[("3.1", "3")] == ["3.1", "3"]
    assert path[("3.2.2", "3")] == ["3.2.2", "3"]
    assert path[("3.2.2", "3.2")] == ["3.2.2", "3.2"] and path[("3.2.1", "3.2")] == ["3.2.1", "3.2"]


def test_fig8b_extended_graphs(fig8b):
    """Fig. 9: Gex_t = {3, 2.1, 3.2, 3.3, 3.2.1}, Gex_p = {3, 3.1, 3.2, 3.2.1, 3.2.2}; P = R = F = 0.6."""
    opts = options(lca_graph="extended")
    assert lca.graphs(fig8b, opts)[KEY] == {"t": {"3", "2.1", "3.2", "3.3", "3.2.1"},
                                            "p": {"3", "3.1", "3.2", "3.2.1", "3.2.2"}}
    values = {(r.metric, r.average): r.value for r in lca.evaluate(fig8b, list(lca.METRICS), opts)}
    assert values == pytest.approx({(m, a): 0.6 for m in lca.METRICS for a in ("micro", "macro")})


@pytest.mark.parametrize("graph", ["greedy", "optimal"])
def test_fig8b_minimal_graphs(fig8b, graph):
    """Fig. 10: node 3.2 is redundant; Gt = {3, 2.1, 3.3, 3.2.1}, Gp = {3, 3.1, 3.2.1, 3.2.2}; all 0.5."""
    opts = options(lca_graph=graph)
    assert lca.graphs(fig8b, opts)[KEY] == {"t": {"3", "2.1", "3.3", "3.2.1"}, "p": {"3", "3.1", "3.2.1", "3.2.2"}}
    values = {(r.metric, r.average): r.value for r in lca.evaluate(fig8b, list(lca.METRICS), opts)}
    assert values == pytest.approx({(m, a): 0.5 for m in lca.METRICS for a in ("micro", "macro")})


def test_one_shot_functions():
    tax = Taxonomy.from_edges(FIG8B)
    assert lca.lca_f1([Y], [Y_HAT], tax, lca_graph="extended") == pytest.approx(0.6)
    assert lca.lca_f1([Y], [Y_HAT], tax) == pytest.approx(0.5)
    assert lca.lca_precision([Y], [Y_HAT], tax, lca_graph="optimal") == pytest.approx(0.5)
    assert lca.lca_recall([Y], [Y_HAT], tax, average="macro") == pytest.approx(0.5)


def test_ancestor_removal_within_each_set():
    """A label with a descendant in the same set is dropped (its ancestors would inflate |Gt ∩ Gp|): predicting
    {3, 3.1} scores as predicting {3.1}."""
    tax = Taxonomy.from_edges(FIG8B)
    assert lca.lca_f1([["3.3"]], [["3", "3.1"]], tax) == lca.lca_f1([["3.3"]], [["3.1"]], tax)
    # 3.3 vs 3.1: Gt = {3.3, 3}, Gp = {3.1, 3}: F = 2·1/4
    assert lca.lca_f1([["3.3"]], [["3.1"]], tax) == pytest.approx(0.5)


def test_micro_macro_and_empty_prediction():
    """Instance 1: 3.3 vs 3.1 gives |Gt|=2, |Gp|=2, both 1. Instance 2: nothing predicted gives Gt = {2.1},
    Gp = {}: P = zero_division, R = 0, F = 0. Micro pools (1/2, 1/3); macro averages per instance."""
    tax = Taxonomy.from_edges(FIG8B)
    y_true, y_pred = [["3.3"], ["2.1"]], [["3.1"], []]
    assert lca.lca_precision(y_true, y_pred, tax) == pytest.approx(1 / 2)
    assert lca.lca_recall(y_true, y_pred, tax) == pytest.approx(1 / 3)
    assert lca.lca_f1(y_true, y_pred, tax) == pytest.approx(2 * (1 / 2) * (1 / 3) / (1 / 2 + 1 / 3))
    assert lca.lca_precision(y_true, y_pred, tax, average="macro") == pytest.approx((1 / 2 + 0) / 2)
    assert lca.lca_precision(y_true, y_pred, tax, average="macro", zero_division=1.0) == pytest.approx(0.75)
    assert lca.lca_f1(y_true, y_pred, tax, average="macro") == pytest.approx(0.25)


def test_include_root_counts_the_root():
    """1.1 vs 3.1 meet at the root 0: Gt = {1.1, 1, 0}, Gp = {3.1, 3, 0}; F = 0 without the root, 2/6 with."""
    tax = Taxonomy.from_edges(FIG8B)
    assert lca.lca_f1([["1.1"]], [["3.1"]], tax) == 0.0
    assert lca.lca_f1([["1.1"]], [["3.1"]], tax, include_root=True) == pytest.approx(1 / 3)


def test_max_distance_meets_beyond():
    """With max_distance=1, 1.1 and 3.1 have no common ancestor within 1 edge: both meet at the virtual
    ancestor beyond the threshold, which is in both graphs: Gt = {1.1, ⊥}, Gp = {3.1, ⊥}: F = 1/2."""
    tax = Taxonomy.from_edges(FIG8B)
    assert lca.lca_f1([["1.1"]], [["3.1"]], tax, max_distance=1) == pytest.approx(0.5)
    assert lca.lca_f1([["1.1"]], [["3.1"]], tax, max_distance=2) == 0.0


@pytest.mark.parametrize("batch", [20_000, 1])
def test_all_systems_at_once_and_per_instance(monkeypatch, batch):
    monkeypatch.setattr(lca, "BATCH", batch)  # instances with a choice fetched one at a time, or all at once
    store = Store()
    store.load_taxonomy(Taxonomy.from_edges(FIG8B))
    store.add_truth([Y, ["3.3"]])
    store.add_predictions("a", [Y_HAT, ["3.1"]])
    store.add_predictions("b", [Y, []])
    df = lca.per_instance(store, options())
    assert list(df.columns) == ["system", "instance_id", "n_true", "n_pred", "n_both", "lca_precision",
                                "lca_recall", "lca_f1"]
    got = {(r.system, r.instance_id): (r.n_true, r.n_pred, r.n_both) for r in df.itertuples()}
    assert got == {("a", "0"): (4, 4, 2), ("a", "1"): (2, 2, 1), ("b", "0"): (3, 3, 3), ("b", "1"): (1, 0, 0)}
    rows = {(r.system, r.metric, r.average): r.value for r in lca.evaluate(store, ["lca_f1"], options())}
    assert rows[("b", "lca_f1", "macro")] == pytest.approx(0.5)
    assert rows[("a", "lca_f1", "micro")] == pytest.approx(3 / 6)


def test_optimal_beats_greedy_and_falls_back(monkeypatch):
    """The exact solver never scores below Algorithm 1; with a zero path budget it falls back to the greedy
    graphs and a warning counts the instance."""
    tax = Taxonomy.from_edges(FIG8B)
    args = ([Y], [Y_HAT], tax)
    assert lca.lca_f1(*args, lca_graph="optimal") >= lca.lca_f1(*args, lca_graph="greedy")
    monkeypatch.setattr(lca, "MAX_PATHS", 0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert lca.lca_f1(*args, lca_graph="optimal") == pytest.approx(0.5)
    assert any(issubclass(w.category, DataWarning) and "1 instance(s) fell back" in str(w.message) for w in caught)


def test_optimal_beats_algorithm_1():
    """DAG 0>{1,2,3}, 1>{2,4}, 2>3, 3>5; Y = {3, 1, 5} → {5} (3 and 1 are ancestors of 5), Ŷ = {2, 4}.
    Options: 5 → (2, 2) at 2; 2 → (2, 5); 4 → (1, 5) or (0, 5), both at 4 (5→3→2→1, 5→3→0). Algorithm 1 takes
    LCA 2 (2 labels), then 0 before 1 (tie, by name): Gt = {5,3,2,0}, Gp = {2,4,1,0}: F = 4/8 with the root.
    The optimum takes 1: Gt = {5,3,2,1}, Gp = {2,4,1}: F = 4/7."""
    tax = Taxonomy.from_edges([("0", "1"), ("0", "2"), ("0", "3"), ("1", "2"), ("1", "4"), ("2", "3"), ("3", "5")])
    args = ([["3", "1", "5"]], [["2", "4"]], tax)
    assert lca.lca_f1(*args, include_root=True) == pytest.approx(1 / 2)
    assert lca.lca_f1(*args, include_root=True, lca_graph="optimal") == pytest.approx(4 / 7)
    assert lca.lca_f1(*args) == pytest.approx(1 / 3)  # the root 0 not counted: Gt ∩ Gp = {2}
    assert lca.lca_f1(*args, lca_graph="optimal") == pytest.approx(4 / 7)


def brute_force(inst: lca.Instance) -> float:
    """Problem 2 by enumeration: every minimum LCA set, option per label and shortest path per (side, node,
    LCA); the best FLCA (root counted)."""
    labels = sorted(inst.options)
    candidates = sorted({a for opts in inst.options.values() for a, _ in opts})
    lca_sets = [{a for a, _ in opts} for opts in inst.options.values()]
    size = next(k for k in range(1, len(candidates) + 1)
                if any(all(not lcas.isdisjoint(s) for lcas in lca_sets)
                       for s in itertools.combinations(candidates, k)))
    best = 0.0
    for chosen in itertools.combinations(candidates, size):
        choices = [[o for o in inst.options[label] if o[0] in chosen] for label in labels]
        for pick in itertools.product(*choices):
            need = {}
            for (side, label), (a, q) in zip(labels, pick, strict=True):
                need[(side, label, a)] = inst.paths[(label, a)]
                need[(lca.OTHER[side], q, a)] = inst.paths[(q, a)]
            for paths in itertools.product(*need.values()):
                graphs = {side: set(v) for side, v in inst.labels.items()}
                for (side, _, _), path in zip(need, paths, strict=True):
                    graphs[side] |= path
                gt, gp = graphs["t"], graphs["p"]
                best = max(best, 2 * len(gt & gp) / (len(gt) + len(gp)))
    return best


def test_optimal_equals_brute_force_on_random_dags():
    """Seeded random DAGs of 5-9 nodes and label sets of 1-3: the CP-SAT optimum equals enumeration, and
    greedy never beats it."""
    rng = random.Random(3)
    checked = 0
    for _ in range(30):
        n = rng.randint(5, 9)
        edges = {(str(p), str(v)) for v in range(1, n) for p in rng.sample(range(v), min(v, rng.choice([1, 2])))}
        nodes = [str(v) for v in range(1, n)]
        store = store_from_sets([rng.sample(nodes, rng.randint(1, 3))], [rng.sample(nodes, rng.randint(1, 3))],
                                Taxonomy.from_edges(sorted(edges)))
        opts = options(include_root=True)
        params = lca._params(opts, store)
        engine, done = DuckDBEngine(store), set()
        for name in sqlfiles.dependencies("lca", "lca_open_instances"):
            engine.stage("lca", name, params, done)
        batches = lca._stage_open(engine, params, done)
        lca._rank_nodes(store.con, store.con.execute("SELECT position FROM nodes WHERE is_root").fetchall()[0][0])
        greedy = dict(lca._solved(store.con, options(lca_graph="greedy"), None, batches))
        for key, inst in (kv for b in batches for kv in lca._instances(lca._batch(store.con, b)).items()):
            optimal = lca._optimal(inst, set())
            f = {name: 2 * b / (t + p) for name, (t, p, b) in
                 (("optimal", lca._sizes(optimal, set())), ("greedy", lca._sizes(greedy[key], set())))}
            assert f["optimal"] == pytest.approx(brute_force(inst))
            assert f["greedy"] <= f["optimal"] + 1e-12
            checked += 1
        store.close()
    assert checked >= 5


def test_engine_on_portable_sql_gives_the_papers_values(fig8b):
    """An engine over renamed tables runs the portable queries through sqlglot (as PostgreSQL and Spark do):
    Fig. 8(b)'s extended graphs give 0.6, and the minimal graphs (the Python step on a scratch copy of the
    open instances) the values of the DuckDB store."""
    from hiersql import engines

    engine = engines.DuckDBEngine(fig8b.con, tables={"truth": "truth"})
    rows = compute(engine, ["lca_f1", "lca_precision"], options(lca_graph="extended"))
    assert {(r.metric, r.average): r.value for r in rows} == pytest.approx(
        {(m, a): 0.6 for m in ("lca_f1", "lca_precision") for a in ("micro", "macro")})
    for graph in ("greedy", "optimal"):
        got = compute(engine, ["lca_f1", "lca_precision", "lca_recall"], options(lca_graph=graph))
        want = lca.evaluate(fig8b, ["lca_f1", "lca_precision", "lca_recall"], options(lca_graph=graph))
        assert [r[:3] for r in got] == [r[:3] for r in want]
        assert [r.value for r in got] == pytest.approx([r.value for r in want], abs=1e-12)


def test_bad_graph_option():
    with pytest.raises(ValueError, match="lca_graph"):
        lca.lca_f1([Y], [Y_HAT], Taxonomy.from_edges(FIG8B), lca_graph="minimal")


@pytest.mark.parametrize("dialect", ["postgres", "spark", "duckdb"])
def test_sql_transpiles(dialect):
    for name in sqlfiles.queries("lca"):
        sql = sqlfiles.render("lca", name, {"include_root": False, "max_distance": 5, "drop_distance": None,
                                           "zero_division": 0.0, "beyond": "__beyond__"}, dialect=dialect)
        sqlglot.parse_one(sql, read=dialect)


# Instances 10042, 1038 and 1072 of the MeSH benchmark (benchmarks/generate.py --taxonomy mesh --seed 1), where
# Algorithm 1 meets ties (equal label counts or new-node counts): with ties broken by name, the greedy graph
# sizes of these instances change when the nodes are renamed; broken by node position, they cannot.
MESH_TIES = [(["3436", "23501", "13239"], ["10147", "24172", "13239"]),
             (["2817", "26570", "23202"], ["14896", "26570", "23200"]),
             (["27689", "26240", "9941"], ["27689", "20377", "8468"])]


def test_greedy_graphs_on_mesh_do_not_depend_on_node_names(data_dir):
    """Renaming every MeSH node ('3436' -> 'm6343', which reorders the names) keeps the greedy graph sizes
    of instances with ties, the parent-child file read in the same order."""
    edges = [tuple(line.split()) for line in (data_dir / "mesh" / "mesh_hierarchy_int.txt").read_text().splitlines()]
    opts = make_options(lca_graph="greedy", include_root=True, max_distance=4)
    sizes = []
    for rename in (str, lambda n: f"m{n[::-1]}"):
        store = store_from_sets([[rename(x) for x in t] for t, _ in MESH_TIES],
                                [[rename(x) for x in p] for _, p in MESH_TIES],
                                Taxonomy.from_edges([(rename(a), rename(b)) for a, b in edges]))
        sizes.append(lca.per_instance(store, opts)[["instance_id", "n_true", "n_pred", "n_both"]].values.tolist())
        store.close()
    assert sizes[0] == sizes[1]


@pytest.mark.parametrize("lca_graph", ["greedy", "extended", "optimal"])
def test_a_tree_takes_its_one_paths_as_the_branching_paths_give_them(lca_graph):
    """On a tree the plan switches off the stages that look for other shortest paths (``multi_parent``
    false): on random trees, with and without a maximum distance, the per-instance counts equal those of the
    stages for DAGs (``multi_parent`` forced true)."""
    from dataclasses import replace

    from hiersql.engines import DuckDBEngine

    branching = replace(lca.PLAN, params=lambda o, e, m: {**lca.plan_params(o, e, m), "multi_parent": True})
    rng = random.Random(11)
    for _ in range(6):
        n = rng.randint(8, 30)
        edges = [(str(rng.randrange(v)), str(v)) for v in range(1, n)]
        nodes = [str(v) for v in range(1, n)]
        sets = [[rng.sample(nodes, rng.randint(1, 3)) for _ in range(25)] for _ in range(2)]
        store = store_from_sets(*sets, Taxonomy.from_edges(edges))
        for max_distance in (None, 2):
            opts = options(lca_graph=lca_graph, max_distance=max_distance)
            engine = DuckDBEngine(store)
            assert engine.prepare(lca.PLAN, ["lca_f1"], opts)["multi_parent"] is False
            tree = engine.per_instance(lca.PLAN, opts).to_pylist()
            assert tree == engine.per_instance(branching, opts).to_pylist()
        store.close()


def test_without_a_maximum_distance_every_label_meets_the_other_side():
    """Without ``max_distance`` the plan skips the labels that meet nothing (every pair meets at the root):
    on random DAGs and forests (a virtual root above their tops) the counts equal those with a maximum
    distance no path reaches, where that part of the plan runs."""
    from hiersql.engines import DuckDBEngine

    rng = random.Random(5)
    for _ in range(6):
        n = rng.randint(8, 30)
        edges = {(str(p), str(v)) for v in range(2, n) for p in rng.sample(range(1, v), min(v - 1, rng.choice([1, 2])))}
        edges |= {("0", "1")} if rng.random() < 0.5 else {("00", str(n))}  # one root, or two tops
        nodes = sorted({v for e in edges for v in e})
        sets = [[rng.sample(nodes, rng.randint(1, 3)) for _ in range(25)] for _ in range(2)]
        store = store_from_sets(*sets, Taxonomy.from_edges(sorted(edges)))
        engine = DuckDBEngine(store)
        counts = {d: engine.per_instance(lca.PLAN, options(max_distance=d)).to_pylist() for d in (None, 1000)}
        assert counts[None] == counts[1000]
        store.close()


def test_greedy_ties_are_broken_by_name_not_by_the_order_of_the_edges(tmp_path, capsys):
    """r → A, B; A → a1, a2; B → b1, b2; b1 → x; a1 → y. T = {B, y}, P = {b1, a2, y}. B meets b1 at B, y meets
    y; a2's options tie at distance 3: LCA r (partner B) or LCA A (partner y). GetBestLCAs takes B and y
    (two labels each), then of A and r (one each) the first by name, A ('A' < 'r'): Gt = {B, y, a1, A},
    Gp = {b1, B, a2, A, y}, |Gt ∩ Gp| = 3: P = 3/5, R = 3/4, F = 2/3, the optimum here. Before, the tie went
    by the order of first appearance: the file gave r (P 0.4, R 1, F 4/7), the same edges reversed A."""
    edges = "r\tA\nr\tB\nA\ta1\nA\ta2\nB\tb1\nB\tb2\nb1\tx\na1\ty\n"
    (tmp_path / "t1.tsv").write_text(edges)
    (tmp_path / "t2.tsv").write_text("".join(reversed(edges.splitlines(keepends=True))))
    (tmp_path / "truth.tsv").write_text("i1\tB\ni1\ty\n")
    (tmp_path / "pred.tsv").write_text("i1\tb1\ni1\ta2\ni1\ty\n")
    for tax in ("t1.tsv", "t2.tsv"):
        assert main(["evaluate", "--taxonomy", str(tmp_path / tax), "--truth", str(tmp_path / "truth.tsv"),
                     "--pred", f"S={tmp_path / 'pred.tsv'}", "--metrics", "lca_p,lca_r,lca_f1",
                     "--average", "micro", "--format", "csv"]) == 0
        values = [float(line.rsplit(",", 1)[1]) for line in capsys.readouterr().out.splitlines()[1:]]
        assert values == pytest.approx([3 / 5, 3 / 4, 2 / 3]), tax



@pytest.mark.parametrize("max_distance", [None, 1, 2])
def test_the_duckdb_variant_of_lca_pair_meetings_gives_the_portable_rows(max_distance):
    """``lca_pair_meetings (duckdb)`` (the join order fixed) and the portable query, on a DAG whose pairs meet
    on several paths."""
    from tests._engine_cases import dag_store, query_rows

    store = dag_store()
    params = lca._params(options(max_distance=max_distance), store)
    variant = query_rows(store, "lca", "lca_pair_meetings", params)
    portable = store.con.execute(sqlfiles.render("lca", "lca_pair_meetings", params, "duckdb",
                                                 pretty=False)).fetchall()
    assert len(variant) > 5 and sorted(variant) == sorted(portable)


# Sides with labels above others (dropped), labels in both sets (shared), a label of the truth that the
# predictions hold only as the ancestor of another prediction (kept, not shared) and an empty prediction.
SIDES_TRUE = [["3", "3.2.1", "2.1"], ["1.1"], ["0", "1.2"], ["3.3"], ["3.2"]]
SIDES_PRED = [["3.2", "2.1", "1"], [], ["1", "1.2", "0"], ["3", "3.3"], ["3.2", "3.2.1"]]
SIDES_KEPT = {("0", "t", "3.2.1", False), ("0", "t", "2.1", True), ("0", "p", "3.2", False),
              ("0", "p", "2.1", True), ("0", "p", "1", False), ("1", "t", "1.1", False),
              ("2", "t", "1.2", True), ("2", "p", "1.2", True), ("3", "t", "3.3", True), ("3", "p", "3.3", True),
              ("4", "t", "3.2", False), ("4", "p", "3.2.1", False)}


def test_the_duckdb_variant_of_lca_labels_gives_the_portable_rows_and_the_hand_ones():
    """``lca_labels (duckdb)`` (per-instance lists of the labels and of their proper ancestors) and the
    portable query (pairs of labels of one side, a set difference, the kept labels joined to themselves) keep
    the same labels and mark the same ones shared: those of :data:`SIDES_KEPT`, by hand."""
    store = store_from_sets(SIDES_TRUE, SIDES_PRED, Taxonomy.from_edges(FIG8B))
    engine = DuckDBEngine(store)
    done: set[str] = set()
    for query in ("lca_closure", "lca_instances"):
        engine.stage("lca", query, {}, done)
    variant, portable = (engine.execute(sql) for sql in (sqlfiles.composed("lca", "lca_labels", "duckdb", done),
                                                         sqlfiles.composed("lca", "lca_labels", skip=done)))
    assert sorted(variant) == sorted(portable)
    names = dict(engine.execute("SELECT position, label FROM nodes"))
    ids = dict(engine.execute("SELECT inst, instance_id FROM lca_instances"))
    assert {(ids[i], side, names[label], shared) for i, side, label, shared in variant} == SIDES_KEPT


# |Gt|, |Gp|, |Gt ∩ Gp| of the extended graphs of SIDES_TRUE and SIDES_PRED, by hand (the root 0 left out).
# Instance 0: 3.2.1 and 3.2 meet at 3.2; 1 meets 2.1 at the root by its two paths, 2.1 -> 2 -> 0 and
# 2.1 -> 3 -> 0: Gt = {3.2.1, 3.2, 2.1, 2, 3}, Gp = {3.2, 2.1, 1}. Instance 1 has no prediction.
SIDES_EXTENDED_COUNTS = {"0": (5, 3, 2), "1": (1, 0, 0), "2": (1, 1, 1), "3": (1, 1, 1), "4": (1, 2, 1)}


@pytest.mark.parametrize("include_root", [False, True])
@pytest.mark.parametrize("max_distance", [None, 1])
def test_the_duckdb_variant_of_lca_graph_counts_gives_the_portable_rows(include_root, max_distance):
    """``lca_graph_counts (duckdb)`` (each instance's lists of nodes) and the portable query (a group per
    (instance, node)) count the same extended graphs, an empty prediction included: those of
    :data:`SIDES_EXTENDED_COUNTS` by hand (with the root: 6, 4 and 3 for instance 0)."""
    store = store_from_sets(SIDES_TRUE, SIDES_PRED, Taxonomy.from_edges(FIG8B))
    engine = DuckDBEngine(store)
    params = lca._params(options(include_root=include_root, max_distance=max_distance), store)
    done: set[str] = set()
    for step in lca.PLAN.steps_until("lca_path_nodes"):
        engine.stage("lca", step.query, params, done)
    variant, portable = (engine.con.execute(sql, sqlfiles.bind(sql, params)).fetchall() for sql in (
        sqlfiles.composed("lca", "lca_graph_counts", "duckdb", done),
        sqlfiles.composed("lca", "lca_graph_counts", skip=done)))
    assert len(variant) == 5 and sorted(variant) == sorted(portable)
    if max_distance is None:
        counts = {instance: n for _, _, instance, *n in variant}
        want = {**SIDES_EXTENDED_COUNTS, **({"0": (6, 4, 3)} if include_root else {})}
        assert counts == {instance: list(n) for instance, n in want.items()}


@pytest.mark.parametrize("max_distance", [None, 1])
def test_the_duckdb_variants_of_the_open_paths_give_the_portable_rows(max_distance):
    """``lca_open_nodes (duckdb, spark)`` (no DISTINCT over every row) and ``lca_open_links (duckdb, spark)``
    (the links of a path found once, from ``lca_path_nodes``) give the portable rows; instance 0 of
    :data:`SIDES_TRUE` reaches the root from 2.1 by two shortest paths, whose four links are the choice."""
    store = store_from_sets(SIDES_TRUE, SIDES_PRED, Taxonomy.from_edges(FIG8B))
    engine = DuckDBEngine(store)
    params = engine.prepare(lca.PLAN, ["lca_f1"], options(max_distance=max_distance))
    done: set[str] = set()
    for step in lca.PLAN.steps_until("lca_open_ends"):
        engine.stage("lca", step.query, params, done)
    names = dict(engine.execute("SELECT position, label FROM nodes"))
    for query in ("lca_open_nodes", "lca_open_links"):
        variant, portable = (engine.con.execute(sql, sqlfiles.bind(sql, params)).fetchall() for sql in (
            sqlfiles.composed("lca", query, "duckdb", done), sqlfiles.composed("lca", query, skip=done)))
        assert sorted(variant) == sorted(portable), query
        done.add(query)
        engine.stage("lca", query, params, done)
    links = {(names[lower], names[upper]) for *_, lower, upper in engine.execute("SELECT * FROM lca_open_links")}
    assert links == (set() if max_distance == 1 else {("2.1", "2"), ("2", "0"), ("2.1", "3"), ("3", "0")})
