"""Scoring trees and the scoring-tree measures (Lanus et al.; SPEC §8): weights, constants, per-pair values
computed by hand, detection errors, pairing of label sets, averaging, confusion matrix input, CLI."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest

from hiersql.cli import main
from hiersql.errors import InputError
from hiersql.inputs.store import Store
from hiersql.inputs.taxonomy import Taxonomy
from hiersql.measures import Options, scoring
from hiersql.measures.scoring import trees as st
from hiersql.options import OptionError
from tests._engine_cases import query_rows

FIG1 = [("A", "B"), ("A", "C"), ("B", "D"), ("B", "E"), ("C", "F"), ("C", "G"), ("F", "H"), ("F", "I"),
        ("G", "J"), ("G", "K"), ("G", "L")]
LABELS = "BCDEFGHIJKL"
MEASURES = ("pl", "lca_reward", "lpp", "lpptps", "lpppps")


@pytest.fixture(scope="module")
def fig1() -> Taxonomy:
    return Taxonomy.from_edges(FIG1)


def _weights(tree: Taxonomy) -> dict[str, float]:
    return {e.child: e.weight for e in tree.all_edges()}


def _store(tree: Taxonomy, truth, systems: dict) -> Store:
    store = Store()
    store.load_taxonomy(tree)
    store.add_truth(truth)
    for name, pred in systems.items():
        store.add_predictions(name, pred)
    return store


def _values(rows, average: str = "micro") -> dict[tuple[str, str], float]:
    return {(r.system, r.metric): r.value for r in rows if r.average == average}


# ---------------------------------------------------------------------- weights
@pytest.mark.parametrize(("builder", "fixture"), [
    (st.decreasing, "tree_decreasing.tsv"),
    (st.non_increasing, "tree_non_increasing.tsv"),
    (st.increasing, "tree_increasing.tsv"),
])
def test_strategies_give_the_paper_weights(fig1, fixtures_dir: Path, builder, fixture) -> None:
    paper = _weights(Taxonomy.from_file(fixtures_dir / "lanus" / fixture))
    assert _weights(builder(fig1)) == pytest.approx(paper)


@pytest.mark.parametrize(("levels", "fixture"), [
    ([0.9, 0.09], "tree_decreasing.tsv"), ([0.5, 0.25], "tree_non_increasing.tsv"),
    ([0.1, 0.2], "tree_increasing.tsv"),
])
def test_by_level_gives_the_paper_weights(fig1, fixtures_dir: Path, levels, fixture) -> None:
    paper = _weights(Taxonomy.from_file(fixtures_dir / "lanus" / fixture))
    assert _weights(st.by_level(fig1, levels)) == pytest.approx(paper)
    assert _weights(st.strategy(fig1, "levels:" + "/".join(map(str, levels)))) == pytest.approx(paper)


def test_weighted_depths_of_the_decreasing_tree(fig1) -> None:
    """W(n) of scoring.sql (``scoring_nodes``) on the decreasing tree, a scoring tree (:func:`validate`)."""
    tree = st.decreasing(fig1)
    st.validate(tree)
    store = Store()
    store.load_taxonomy(tree)
    depths = {label: w for label, _, w in query_rows(store, "scoring", "scoring_nodes")}
    assert depths["A"] == 0
    assert depths["B"] == pytest.approx(0.9)
    assert depths["F"] == pytest.approx(0.99)
    assert all(depths[leaf] == pytest.approx(1.0) for leaf in "DEHIJKL")


def test_weighted_depths_add_the_edges_from_the_root_down_whatever_the_order_of_the_edges() -> None:
    """W(n) adds its edges' weights root first, the order the paper writes the path in: on r > a > b > c > d
    with weights .1, .2, .3, .4 that order gives W(c) = (.1 + .2) + .3 = 0.6000000000000001 and W(d) = 1.0, node
    first would give 0.6 and 0.9999999999999999; every order of the edges' rows gives those bytes."""
    edges = [("r", "a", 0.1), ("a", "b", 0.2), ("b", "c", 0.3), ("c", "d", 0.4)]
    want = {"r": 0.0, "a": 0.1, "b": 0.1 + 0.2, "c": 0.1 + 0.2 + 0.3, "d": 0.1 + 0.2 + 0.3 + 0.4}
    assert (want["c"], want["d"]) == (0.6000000000000001, 1.0)
    for order in itertools.permutations(edges):
        store = Store()
        store.load_taxonomy(Taxonomy.from_edges(order))
        assert {label: w for label, _, w in query_rows(store, "scoring", "scoring_nodes")} == want
        store.close()


def test_strategies_on_an_unbalanced_deeper_tree() -> None:
    # r > a > b > c > d (leaf), r > e (leaf), a > f (leaf)
    tree = Taxonomy.from_edges([("r", "a"), ("a", "b"), ("b", "c"), ("c", "d"), ("r", "e"), ("a", "f")])
    dec = _weights(st.decreasing(tree, share=0.5))
    assert dec == pytest.approx({"a": 0.5, "b": 0.25, "c": 0.125, "d": 0.125, "e": 1.0, "f": 0.5})
    eq = _weights(st.non_increasing(tree))  # s(r) = 1 (r > e): a takes everything, its subtree 0
    assert eq == pytest.approx({"a": 1.0, "b": 0.0, "c": 0.0, "d": 0.0, "e": 1.0, "f": 0.0})
    inc = _weights(st.increasing(tree, first=0.1, factor=2))
    assert inc == pytest.approx({"a": 0.1, "b": 0.2, "c": 0.4, "d": 0.3, "e": 1.0, "f": 0.9})
    with pytest.raises(InputError, match="only 0.3 is left"):
        st.increasing(Taxonomy.from_edges([("r", "a"), ("a", "b"), ("b", "c"), ("c", "d"), ("d", "x")]))


def test_forest_gets_an_explicit_root() -> None:
    tree = st.decreasing(Taxonomy.from_edges([("a", "a1"), ("a", "a2"), ("b", "b1"), ("b", "b2")]))
    assert not tree.virtual_root and tree.root == "__root__"
    assert _weights(tree) == pytest.approx({"a": 0.9, "b": 0.9, "a1": 0.1, "a2": 0.1, "b1": 0.1, "b2": 0.1})


def test_validation_names_the_leaves_that_do_not_sum_to_one(tmp_path: Path) -> None:
    path = tmp_path / "tree.tsv"
    path.write_text("A\tB\t0.5\nA\tC\t0.5\nB\tD\t0.5\nB\tE\t0.4\nC\tF\t0.7\n")
    with pytest.raises(InputError) as err:
        st.validate(Taxonomy.from_file(path))
    assert str(err.value) == (f"{path}:4: the weighted scoring-tree measures need edge weights that make a scoring"
                              " tree: every root-to-leaf weight sum must be 1; the leaf E (0.9) and 1 more")


@pytest.mark.parametrize(("edges", "message"), [
    ([("A", "B", 1.0), ("A", "C", 0.5)], r"the leaf C \(0.5\)$"),
    ([("A", "B", 1.5), ("B", "D", -0.5)], "non-negative"),
    ([("A", "B", 0.5), ("B", "D", 0.5), ("A", "C")], "an edge without weight, into C$"),
    ([("A", "B", 0.0), ("B", "D", 1.0)], r"must weigh more than 0 .*; the node B \(0\)$"),
    ([("A", "B", 0.5), ("A", "C", 0.5), ("B", "D", 0.5), ("C", "D", 0.5)], "must be trees.*D"),
    ([("a", "a1", 1.0), ("b", "b1", 1.0)],
     "the edges of the virtual root .* have no weight .*: the edge into a and 1 more$"),
])
def test_invalid_scoring_trees(edges, message) -> None:
    with pytest.raises(InputError, match=message):
        st.validate(Taxonomy.from_edges(edges))


def test_unknown_strategy_and_bad_level_weights(fig1) -> None:
    with pytest.raises(InputError, match="unknown weight strategy"):
        st.strategy(fig1, "steep")
    with pytest.raises(InputError, match="numbers separated"):
        st.strategy(fig1, "levels:a/b")
    with pytest.raises(InputError, match="no weight given for level 2"):
        st.by_level(fig1, [0.5])


# ---------------------------------------------------------------------- constants
@pytest.mark.parametrize(("strategy", "m"), [("decreasing", -19 / 9), ("non-increasing", -3.0),
                                             ("increasing", -11.0)])
def test_tree_constants_of_fig1(fig1, strategy, m) -> None:
    store = Store()
    store.load_taxonomy(st.strategy(fig1, strategy))
    (l_, m_, weighted), = query_rows(store, "scoring", "scoring_constants", scoring.PLAN.params(Options()))
    assert (l_, weighted) == (5, True)
    assert m_ == pytest.approx(m)


def _weighted_depths(tree: Taxonomy) -> dict[str, float]:
    """W(n), the weight sum on the path root -> n, summed node by node up to the root."""
    weight = {e.child: e.weight for e in tree.all_edges()}
    out = {}
    for node in tree.all_nodes():
        total, up = 0.0, node
        while tree.parents(up):
            total, up = total + weight[up], tree.parents(up)[0]
        out[node] = total
    return out


def _brute_force_constants(tree: Taxonomy) -> tuple[int, float]:
    """l and m over every pair of labels, with networkx's lowest common ancestors."""
    import networkx as nx

    graph, depths, weights = tree.graph, tree.depths(), _weighted_depths(tree)
    labels = [n for n in tree.all_nodes() if n != tree.root]
    lcas = dict(nx.all_pairs_lowest_common_ancestor(graph, itertools.product(labels, labels)))
    longest, smallest = 0, float("inf")
    for t, p in itertools.product(labels, labels):
        a = lcas[(t, p)]
        longest = max(longest, depths[t] + depths[p] - 2 * depths[a])
        smallest = min(smallest, (3 * weights[a] - weights[t] - weights[p]) / weights[t])
    return longest, smallest


@pytest.mark.parametrize("seed", range(8))
def test_tree_constants_match_all_pairs_on_random_trees(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(3, 25)
    edges = [(f"n{rng.randrange(i)}", f"n{i}") for i in range(1, n)]
    builder = rng.choice([st.decreasing, st.non_increasing,
                          lambda t: st.decreasing(t, share=rng.uniform(0.1, 0.9))])
    tree = builder(Taxonomy.from_edges(edges))
    store = Store()
    store.load_taxonomy(tree)
    (l_, m_, weighted), = query_rows(store, "scoring", "scoring_constants", scoring.PLAN.params(Options()))
    longest, smallest = _brute_force_constants(tree)
    assert (l_, weighted) == (longest, True)
    assert m_ == pytest.approx(smallest)


# ---------------------------------------------------------------------- per-pair values
def test_pair_values_by_hand(fig1) -> None:
    """Non-increasing weights: W(F) = .75, W(H) = W(D) = 1, m = -3, l = 5.
    (F, H): d = 1, R = .75, raw = .75 - (.75 + 1 - 1.5) = .5 -> PL .8, L .75, LPP 2.5/3, LPPTPS (.5/.75 + 3)/4,
    LPPPPS (.5 + 3)/4. (H, D): d = 5, R = 0, raw = -2 -> PL 0, L 0, LPP 0, both standardised (-2 + 3)/4."""
    store = _store(st.non_increasing(fig1), [["F"], ["H"], ["E"]], {"s": [["H"], ["D"], ["E"]]})
    df = scoring.per_instance(store, Options()).set_index("instance_id")
    assert df.loc["0", list(MEASURES)].tolist() == pytest.approx([0.8, 0.75, 2.5 / 3, (2 / 3 + 3) / 4, 0.875])
    assert df.loc["1", list(MEASURES)].tolist() == pytest.approx([0.0, 0.0, 0.0, 0.25, 0.25])
    assert df.loc["2", list(MEASURES)].tolist() == pytest.approx([1.0, 1.0, 1.0, 1.0, 1.0])


def test_pair_values_with_offset_by_hand(fig1) -> None:
    """o = -1, (F, H) as above: PL 1 - 1/6, L 1.75/2, LPP 3.5/4, LPPTPS (2/3 + 4)/5, LPPPPS 4.5/5."""
    store = _store(st.non_increasing(fig1), [["F"]], {"s": [["H"]]})
    df = scoring.per_instance(store, Options(offset=-1.0))
    assert df.loc[0, list(MEASURES)].tolist() == pytest.approx([5 / 6, 0.875, 0.875, (2 / 3 + 4) / 5, 0.9])


def test_lca_reward_does_not_reward_a_correct_inner_node(fig1) -> None:
    """L(B, B) = W(B) < 1 (the paper's noted flaw) while the standardised measures give 1."""
    store = _store(st.decreasing(fig1), [["B"]], {"s": [["B"]]})
    df = scoring.per_instance(store, Options())
    assert df.loc[0, "lca_reward"] == pytest.approx(0.9)
    assert df.loc[0, "lpptps"] == df.loc[0, "lpppps"] == pytest.approx(1.0)


# ---------------------------------------------------------------------- detection errors, pairing
def test_detection_errors_score_zero_and_count(fig1) -> None:
    """Instance 0 correct, 1 missed (truth D, no prediction), 2 ghost (no truth, prediction E): micro means are
    (1 + 0 + 0) / 3 in every measure; the pairs list both detection errors."""
    store = _store(st.decreasing(fig1), [["D"], ["D"], []], {"s": [["D"], [], ["E"]]})
    df = scoring.per_instance(store, Options()).set_index("instance_id")
    sides = df[["truth", "prediction"]].fillna("-")
    assert tuple(sides.loc["1"]) == ("D", "-")
    assert tuple(sides.loc["2"]) == ("-", "E")
    assert df.loc[["1", "2"], list(MEASURES)].to_numpy().sum() == 0
    rows = scoring.evaluate(store, list(scoring.METRICS), Options(average=("micro",), offset=-1.0))
    assert all(r.value == pytest.approx(1 / 3) for r in rows)


def test_label_sets_pair_shared_labels_first_then_by_rank(fig1) -> None:
    store = _store(st.decreasing(fig1), [["H", "D", "J"]], {"s": [["E", "H", "K", "L"]]})
    pairs = scoring.per_instance(store, Options()).fillna({"truth": "-"})
    assert sorted(zip(pairs.truth, pairs.prediction, strict=True)) == [
        ("-", "L"), ("D", "E"), ("H", "H"), ("J", "K")]


def test_macro_is_the_mean_over_nodes(fig1) -> None:
    """Pairs (D, D), (D, E), (H, None): nodes D {1, x}, E {x}, H {0} with x = PL(D, E) = 1 - 2/5 = .6:
    macro PL = ((1 + .6)/2 + .6 + 0) / 3; micro PL = (1 + .6 + 0) / 3."""
    store = _store(st.decreasing(fig1), [["D"], ["D"], ["H"]], {"s": [["D"], ["E"], []]})
    rows = scoring.evaluate(store, ["pl"], Options())
    assert _values(rows, "macro")[("s", "pl")] == pytest.approx((0.8 + 0.6) / 3)
    assert _values(rows, "micro")[("s", "pl")] == pytest.approx(1.6 / 3)


def test_micro_hf_is_the_harmonic_mean_of_the_means(fig1) -> None:
    store = _store(st.increasing(fig1), [["H"], ["C"], ["J"]], {"s": [["F"], ["L"], ["B"]]})
    v = _values(scoring.evaluate(store, list(scoring.METRICS), Options()))
    hp, hr = v[("s", "lpppps")], v[("s", "lpptps")]
    assert (v[("s", "scoring_hp")], v[("s", "scoring_hr")]) == (hp, hr)
    assert v[("s", "scoring_hf")] == pytest.approx(2 * hp * hr / (hp + hr))
    assert hp != pytest.approx(hr)


def test_many_systems_at_once_equal_one_at_a_time(fig1) -> None:
    tree = st.non_increasing(fig1)
    truth = [["D"], ["H"], ["K"], ["C"], []]
    systems = {"a": [["E"], ["H"], ["G"], [], ["B"]], "b": [["D"], ["I"], ["L"], ["J"], []]}
    together = scoring.evaluate(_store(tree, truth, systems), list(scoring.METRICS), Options())
    alone = [r for name, pred in systems.items()
             for r in scoring.evaluate(_store(tree, truth, {name: pred}), list(scoring.METRICS), Options())]
    together, alone = sorted(together), sorted(alone)
    assert [r[:3] for r in together] == [r[:3] for r in alone]
    assert [r.value for r in together] == pytest.approx([r.value for r in alone])


# ---------------------------------------------------------------------- confusion matrices
def test_confusion_matrix_equals_its_expanded_pairs(fig1, tmp_path: Path) -> None:
    path = tmp_path / "cm.csv"
    path.write_text("truth,D,H,missed\nD,2,1,1\nH,0,3,0\nghost,1,0,0\n")
    tree = st.decreasing(fig1)
    store = Store()
    store.load_taxonomy(tree)
    scoring.add_confusion(store, "cm", path)
    from_matrix = scoring.evaluate(store, list(scoring.METRICS), Options())
    truth = [["D"]] * 4 + [["H"]] * 3 + [[]]
    pred = [["D"], ["D"], ["H"], [], ["H"], ["H"], ["H"], ["D"]]
    from_labels = scoring.evaluate(_store(tree, truth, {"cm": pred}), list(scoring.METRICS), Options())
    assert [r.value for r in from_matrix] == pytest.approx([r.value for r in from_labels])


def test_a_confusion_matrix_of_zeros_is_said(fig1, tmp_path: Path, capsys) -> None:
    """No pair counted: no measure has a value; one warning line names the file and the system (the command
    printed an empty table without a word)."""
    path = tmp_path / "zero.tsv"
    path.write_text("truth\tD\tH\nD\t0\t0\nH\t0\t0\n")
    tree = tmp_path / "tree.tsv"
    tree.write_text("".join(f"{e.parent}\t{e.child}\t{e.weight}\n" for e in st.decreasing(fig1).edges))
    assert main(["scoring", "--tree", str(tree), "--confusion", f"z={path}", "--format", "csv"]) == 0
    out, err = capsys.readouterr()
    assert err == f"hiersql: warning: {path}: the confusion matrix counts no pair: system 'z' has no value\n"


def test_confusion_from_a_dataframe(fig1) -> None:
    import pandas as pd

    store = Store()
    store.load_taxonomy(st.decreasing(fig1))
    df = pd.DataFrame({"truth": ["D", "D", None], "prediction": ["D", None, "E"], "n": [2, 1, 1]})
    scoring.add_confusion(store, "x", df)
    assert _values(scoring.evaluate(store, ["pl"], Options()))[("x", "pl")] == pytest.approx(0.5)


@pytest.mark.parametrize(("text", "message", "line"), [
    ("truth\tD\tZ\nD\t1\t0\n", "label not in the taxonomy: 'Z'", 1),
    ("truth\tD\nD\t1\nD\t2\n", "label given twice", 3),
    ("truth\tD\nD\t-1\n", "finite number >= 0", 2),
    ("truth\tD\nD\tmany\n", "not a number", 2),
    ("truth\tD\tmissed\nD\t1\n", "expected 3 fields", 2),
    ("# note\ntruth\tD\tmissed\nghost\t1\t2\n", "ghost × missed", 3),
    ("truth\tA\nA\t1\n", "never a label", 1),
])
def test_bad_confusion_files(fig1, tmp_path: Path, text, message, line) -> None:
    path = tmp_path / "cm.tsv"
    path.write_text(text)
    with pytest.raises(InputError, match=message) as err:
        scoring.read_confusion(path, fig1)
    assert err.value.line == line and err.value.source == str(path)


def test_confusion_name_clash_with_label_system(fig1, tmp_path: Path) -> None:
    store = _store(st.decreasing(fig1), [["D"]], {"s": [["D"]]})
    path = tmp_path / "cm.tsv"
    path.write_text("truth\tD\nD\t1\n")
    with pytest.raises(InputError, match="already has label predictions"):
        scoring.add_confusion(store, "s", path)


# ---------------------------------------------------------------------- applicability, options
def test_pl_needs_no_weights_the_others_do(fig1) -> None:
    store = _store(fig1, [["H"]], {"s": [["I"]]})
    from hiersql.engines import DuckDBEngine

    engine = DuckDBEngine(store)
    assert scoring.PLAN.applies(engine) is None  # a tree
    assert scoring.PLAN.metric_applies(engine, "pl")
    assert not scoring.PLAN.metric_applies(engine, "lpp")  # no weights
    assert _values(scoring.evaluate(store, ["pl"], Options()))[("s", "pl")] == pytest.approx(1 - 2 / 5)
    with pytest.raises(InputError, match="an edge without weight"):
        scoring.evaluate(store, ["lpp"], Options())


def test_per_instance_on_an_unweighted_tree_fills_pl_alone(fig1) -> None:
    """PL by hand (H and I meet at F, 2 edges; the longest path between labels, D-B-A-C-G-J, 5 edges); the
    weighted scores are undefined without weights: empty, not 0 (a ghost detection too), and numbers once the
    tree has weights (the decreasing strategy)."""
    store = _store(fig1, {"instance_id": ["1"], "label": ["H"]},
                   {"s": {"instance_id": ["1", "1"], "label": ["I", "J"]}})
    table = scoring.per_instance(store, Options())
    assert list(table["prediction"]) == ["I", "J"] and list(table["truth"].isna()) == [False, True]
    assert list(table["pl"]) == pytest.approx([1 - 2 / 5, 0.0])
    assert table[["lca_reward", "lpp", "lpptps", "lpppps"]].isna().all().all()
    weighted = scoring.per_instance(_store(st.decreasing(fig1), {"instance_id": ["1"], "label": ["H"]},
                                           {"s": {"instance_id": ["1", "1"], "label": ["I", "J"]}}), Options())
    assert weighted[["lca_reward", "lpp", "lpptps", "lpppps"]].notna().all().all()
    assert list(weighted["lca_reward"])[1] == 0.0  # the ghost detection


def test_evaluator_runs_pl_on_an_unweighted_tree_and_skips_it_on_a_dag(fig1) -> None:
    from hiersql import Evaluator
    from hiersql.api.evaluator import compute, make_options

    ev = Evaluator(fig1).add_truth([["H"]]).add_predictions("s", [["I"]])
    assert [r.value for r in ev.rows(["pl"])] == pytest.approx([1 - 2 / 5] * 2)  # micro and macro
    every = {r.metric for r in compute(ev.store, ["all"], make_options())}
    assert "pl" in every and not every & {"l", "lpp", "lpptps", "lppps"}
    with pytest.raises(InputError, match="an edge without weight"):
        ev.rows(["lpp"])
    dag = Evaluator(Taxonomy.from_edges([("r", "a"), ("r", "b"), ("a", "c"), ("b", "c")]))
    dag.add_truth([["c"]]).add_predictions("s", [["a"]])
    assert "pl" not in {r.metric for r in compute(dag.store, ["all"], make_options())}
    with pytest.raises(InputError, match="does not apply"):
        dag.rows(["pl"])


def test_root_is_never_a_label_and_offset_must_not_be_positive(fig1) -> None:
    store = _store(st.decreasing(fig1), [["A"]], {"s": [["B"]]})
    with pytest.raises(InputError, match="never a label"):
        scoring.evaluate(store, ["pl"], Options())
    store = _store(st.decreasing(fig1), [["B"]], {"s": [["B"]]})
    with pytest.raises(InputError, match="offset must be <= 0"):
        scoring.evaluate(store, ["pl"], Options(offset=0.5))


def test_one_shot_functions(fig1) -> None:
    y_true, y_pred = ["F", "D", None], ["H", None, "E"]
    kwargs = {"weights": "non-increasing"}
    assert scoring.path_length_score(y_true, y_pred, FIG1) == pytest.approx(0.8 / 3)
    assert scoring.lca_reward(y_true, y_pred, fig1, **kwargs) == pytest.approx(0.25)
    assert scoring.lpp(y_true, y_pred, fig1, **kwargs) == pytest.approx(2.5 / 9)
    assert scoring.lpptps(y_true, y_pred, fig1, **kwargs) == pytest.approx((2 / 3 + 3) / 12)
    assert scoring.lpppps(y_true, y_pred, fig1, **kwargs) == pytest.approx(0.875 / 3)
    assert scoring.scoring_precision(y_true, y_pred, fig1, **kwargs) == pytest.approx(0.875 / 3)
    assert scoring.scoring_recall(y_true, y_pred, fig1, **kwargs) == pytest.approx((2 / 3 + 3) / 12)
    hp, hr = 0.875 / 3, (2 / 3 + 3) / 12
    assert scoring.scoring_f1(y_true, y_pred, fig1, **kwargs) == pytest.approx(2 * hp * hr / (hp + hr))
    weights = dict(zip(LABELS, [0.5, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25], strict=True))
    assert scoring.lpp(y_true, y_pred, fig1, weights=weights) == pytest.approx(2.5 / 9)
    assert scoring.lpp(["F"], ["H"], fig1, average="macro", offset=-1, **kwargs) == pytest.approx(3.5 / 4)


# ---------------------------------------------------------------------- SQL portability
@pytest.mark.parametrize("dialect", ["postgres", "spark"])
def test_queries_transpile(dialect: str) -> None:
    import sqlglot

    from hiersql import sqlfiles

    for name in ("scoring_summary", "scoring_flat", "scoring_instance"):
        sql = sqlfiles.render("scoring", name, {"offset": -1.0}, dialect=dialect)
        assert sqlglot.parse_one(sql, read=dialect) is not None


# ---------------------------------------------------------------------- command line
def test_cli_csv_and_plot(fixtures_dir: Path, tmp_path: Path, capsys) -> None:
    lanus = fixtures_dir / "lanus"
    png = tmp_path / "scores.png"
    code = main(["scoring", "--tree", str(lanus / "tree.tsv"), "--confusion", f"2={lanus / 'table1_model2.tsv'}",
                 "--confusion", str(lanus / "model1.tsv"), "--offset", "-1", "--format", "csv",
                 "--plot", str(png)])
    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "system,strategy,metric,average,value"
    values = {tuple(line.split(",")[:4]): float(line.split(",")[4]) for line in lines[1:]}
    assert values[("2", "decreasing", "lpp", "micro")] == pytest.approx(0.255)
    assert values[("model1", "", "pl", "micro")] == 1.0
    assert len(values) == 2 * (6 + 1 + 3 * 5)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_table_with_given_weights(fixtures_dir: Path, capsys) -> None:
    lanus = fixtures_dir / "lanus"
    code = main(["scoring", "--tree", str(lanus / "tree_increasing.tsv"), "--confusion",
                 str(lanus / "table2_model3.tsv"), "--metrics", "lpppps", "--no-flat"])
    assert code == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["metric", "average", "strategy", "table2_model3"]
    assert out[2].split() == ["lpppps", "micro", "given", "0.6187"]  # Table VIII prints 0.62


def test_cli_bad_tree_exits_2(tmp_path: Path, fixtures_dir: Path, capsys) -> None:
    tree = tmp_path / "tree.tsv"
    tree.write_text("A\tB\t0.5\nA\tC\t0.5\nB\tD\t0.5\n")
    code = main(["scoring", "--tree", str(tree), "--confusion", str(fixtures_dir / "lanus" / "model1.tsv")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "the leaf C (0.5)" in err


# ---------------------------------------------------------------------- real data
def _python_scores(tree: Taxonomy, truth: dict, pred: dict, offset: float) -> dict[str, float]:
    """Micro PL, LPP, LPPTPS, LPPPPS computed in Python, pairing as documented (shared labels, then rank order),
    with m and l by brute force: an independent check of scoring.sql."""
    weights, depths = _weighted_depths(tree), tree.depths()
    longest, m = _brute_force_constants(tree)

    def path(n: str) -> list[str]:
        out = [n]
        while tree.parents(out[-1]):
            out.append(tree.parents(out[-1])[0])
        return out

    sums = dict.fromkeys(("pl", "lpp", "lpptps", "lpppps"), 0.0)
    n_pairs = 0
    for instance, true_labels in truth.items():
        predicted = pred.get(instance, [])
        pairs = [(x, x) for x in true_labels if x in predicted]
        rest_t = [x for x in true_labels if x not in predicted]
        rest_p = [x for x in predicted if x not in true_labels]
        pairs += list(itertools.zip_longest(rest_t, rest_p))
        n_pairs += len(pairs)
        for t, p in pairs:
            if t is None or p is None:
                continue
            a = next(x for x in path(t) if x in set(path(p)))
            raw = 3 * weights[a] - weights[t] - weights[p]
            sums["pl"] += 1 - (depths[t] + depths[p] - 2 * depths[a]) / (longest - offset)
            sums["lpp"] += (raw + 2 - offset) / (3 - offset)
            sums["lpptps"] += (raw / weights[t] - m - offset) / (1 - m - offset)
            sums["lpppps"] += (raw / weights[p] - m - offset) / (1 - m - offset)
    return {k: v / n_pairs for k, v in sums.items()}


def _read_long(path: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            instance, label = line.split("\t")[:2]
            out.setdefault(instance, [])
            if label not in out[instance]:
                out[instance].append(label)
    return out


def test_germeval_subtask_b_matches_an_independent_computation(data_dir: Path) -> None:
    """GermEval 2019 subtask B (343 categories under 8 top genres, multi-label) scored with decreasing weights:
    the SQL micro means equal a direct Python computation for two real submissions."""
    canonical = data_dir / "canonical"
    tree = st.decreasing(Taxonomy.from_file(canonical / "taxonomy.tsv"))
    systems = ["DFKI-SLT__full", "LT-UHH__baseline"]
    store = Store()
    store.load_taxonomy(tree)
    store.add_truth(canonical / "truth_b.tsv")
    for name in systems:
        store.add_predictions(name, canonical / "pred_b" / f"{name}.tsv")
    rows = _values(scoring.evaluate(store, list(MEASURES), Options(offset=-1.0, average=("micro",))))
    truth = _read_long(canonical / "truth_b.tsv")
    for name in systems:
        expected = _python_scores(tree, truth, _read_long(canonical / "pred_b" / f"{name}.tsv"), -1.0)
        for metric, value in expected.items():
            assert rows[(name, metric)] == pytest.approx(value), (name, metric)


def test_macro_hf_is_the_mean_of_the_per_node_harmonic_means(fig1) -> None:
    store = _store(st.increasing(fig1), [["H"], ["C"], ["J"], ["J"], ["D"]], {"s": [["F"], ["L"], ["B"], ["J"], []]})
    pairs = scoring.per_instance(store, Options())
    nodes: dict[str, list[tuple[float, float]]] = {}
    for t, p, hr, hp in zip(pairs.truth, pairs.prediction, pairs.lpptps, pairs.lpppps, strict=True):
        for node in {x for x in (t, p) if isinstance(x, str)}:
            nodes.setdefault(node, []).append((hp, hr))
    per_node = [(sum(a for a, _ in v) / len(v), sum(b for _, b in v) / len(v)) for v in nodes.values()]
    expected = sum(2 * hp * hr / (hp + hr) if hp + hr else 0.0 for hp, hr in per_node) / len(per_node)
    macro = _values(scoring.evaluate(store, ["scoring_hf", "scoring_hp"], Options()), "macro")
    assert macro[("s", "scoring_hf")] == pytest.approx(expected)
    assert macro[("s", "scoring_hp")] == pytest.approx(sum(hp for hp, _ in per_node) / len(per_node))
    assert len(per_node) == 7  # H, F, C, L, J, B, D


@pytest.mark.parametrize("seed", range(4))
def test_scores_span_zero_to_one_over_all_label_pairs(seed: int) -> None:
    """With o = 0 the constants l and m are the minima over all label pairs, so over every pair of a tree PL,
    LPPTPS and LPPPPS reach exactly 0 and 1; every score stays in [0, 1]."""
    rng = random.Random(seed)
    edges = [(f"n{rng.randrange(i)}", f"n{i}") for i in range(1, rng.randint(4, 14))]
    tree = rng.choice([st.decreasing, st.non_increasing])(Taxonomy.from_edges(edges))
    labels = [n for n in tree.all_nodes() if n != tree.root]
    truth, pred = zip(*itertools.product(labels, labels), strict=True)
    df = scoring.per_instance(_store(tree, [[t] for t in truth], {"s": [[p] for p in pred]}), Options())
    assert len(df) == len(labels) ** 2
    for measure in MEASURES:
        assert df[measure].between(-1e-12, 1 + 1e-12).all(), measure
    for measure in ("pl", "lpptps", "lpppps"):
        assert (df[measure].min(), df[measure].max()) == pytest.approx((0.0, 1.0)), measure


def test_weights_that_do_not_sum_to_one_leave_pl_and_metrics_all(tmp_path: Path, fixtures_dir: Path, capsys
                                                                   ) -> None:
    """A taxonomy with a weight column that is no scoring tree's (a warehouse table's own ``weight``): pl reads
    no weight, so it is computed, and ``--metrics all`` leaves the weighted measures out (the whole run failed:
    tu s24-warehouse finding 9); a weighted measure asked for by name is the error naming the leaves."""
    demo = fixtures_dir / "demo"
    edges = [line.split("\t") for line in (demo / "taxonomy.tsv").read_text().splitlines() if line.strip()]
    (tmp_path / "weighted.tsv").write_text("".join(f"{p}\t{c}\t0.3\n" for p, c in edges))
    args = ["evaluate", "--truth", str(demo / "truth.tsv"), "--pred", str(demo / "shallow.tsv"), "--format", "csv"]

    def rows(taxonomy: Path, metrics: str) -> list[str]:
        assert main([*args, "--taxonomy", str(taxonomy), "--metrics", metrics]) == 0
        return [line for line in capsys.readouterr().out.splitlines()[1:] if ",pl," in line or ",lpp," in line]

    assert rows(tmp_path / "weighted.tsv", "all") == rows(demo / "taxonomy.tsv", "pl") != []
    assert main([*args, "--taxonomy", str(tmp_path / "weighted.tsv"), "--metrics", "lpp"]) == 2
    assert "every root-to-leaf weight sum must be 1" in capsys.readouterr().err


def test_the_one_shot_functions_refuse_a_sample_weight_in_one_line(fig1) -> None:
    """Their means are over label pairs and nodes, not objects: ``sample_weight`` (keyword-only, as in the other
    families' one-shot functions) is refused as for every family whose summary is not a mean over instances."""
    tree = st.decreasing(fig1)
    functions = {scoring.path_length_score: "pl", scoring.lca_reward: "lca_reward", scoring.lpp: "lpp",
                 scoring.lpptps: "lpptps", scoring.lpppps: "lpppps", scoring.scoring_precision: "scoring_hp",
                 scoring.scoring_recall: "scoring_hr", scoring.scoring_f1: "scoring_hf"}
    for function, metric in functions.items():
        assert function(["H"], ["I"], tree) == function(["H"], ["I"], tree, sample_weight=None)
        with pytest.raises(OptionError) as refused:
            function(["H"], ["I"], tree, sample_weight=[2.0])
        assert str(refused.value) == (f"sample_weight is not offered for {metric} (its summary is over label"
                                      " pairs): 'given'")
