"""Set-based measures on hand-computed examples (Kosmopoulos Fig. 8(b), Fig. 7, the demo fixture), each run
with both ways of counting of ``set_based.sql`` (pair rows, and DuckDB's per-instance lists; the two are
compared on real data in test_set_based_lists.py)."""

from __future__ import annotations

import pytest

import hiersql
from hiersql import Evaluator, Taxonomy
from hiersql.measures import set_based


@pytest.fixture(autouse=True, params=["pairs", "lists"])
def count_path(request, monkeypatch):
    """Every test of this file runs once with each way of counting |Yaug|, |Ŷaug| and their intersection."""
    monkeypatch.setattr(set_based, "LIST_COUNTS_FROM", float("inf") if request.param == "pairs" else 0)
    return request.param

# Kosmopoulos et al. Fig. 8(b) (SPEC §4): a tree plus the DAG edges 3>2.1 and 3>3.2.2.
FIG8B = Taxonomy.from_edges([
    ("0", "1"), ("0", "2"), ("0", "3"), ("1", "1.1"), ("1", "1.2"), ("2", "2.1"), ("3", "3.1"), ("3", "3.2"),
    ("3", "3.3"), ("3.2", "3.2.1"), ("3.2", "3.2.2"), ("3", "2.1"), ("3", "3.2.2"),
])
Y = [["2.1", "3.2.1", "3.3"]]
Y_HAT = [["3.1", "3.2.1", "3.2.2"]]


def test_fig8b_without_root():
    # Yaug = {2.1, 2, 3, 3.2.1, 3.2, 3.3}; Ŷaug = {3.1, 3, 3.2.1, 3.2, 3.2.2}; ∩ = {3, 3.2.1, 3.2}
    assert hiersql.hierarchical_precision(Y, Y_HAT, FIG8B) == pytest.approx(3 / 5)
    assert hiersql.hierarchical_recall(Y, Y_HAT, FIG8B) == pytest.approx(3 / 6)
    assert hiersql.hierarchical_f1(Y, Y_HAT, FIG8B) == pytest.approx(2 * 3 / (6 + 5))
    assert hiersql.symmetric_difference_loss(Y, Y_HAT, FIG8B) == 5


def test_fig8b_with_root():
    kw = {"include_root": True}
    assert hiersql.hierarchical_precision(Y, Y_HAT, FIG8B, **kw) == pytest.approx(4 / 6)
    assert hiersql.hierarchical_recall(Y, Y_HAT, FIG8B, **kw) == pytest.approx(4 / 7)
    assert hiersql.hierarchical_f1(Y, Y_HAT, FIG8B, **kw) == pytest.approx(8 / 13)
    assert hiersql.symmetric_difference_loss(Y, Y_HAT, FIG8B, **kw) == 5


def test_max_distance_zero_is_flat():
    assert hiersql.hierarchical_precision(Y, Y_HAT, FIG8B, max_distance=0) == pytest.approx(1 / 3)
    # one edge up: 3.2.1 reaches 3.2 but no longer 3; 2.1 and 3.2.2 still reach 3 directly.
    assert hiersql.hierarchical_recall([["3.2.1"]], [["3.2.2"]], FIG8B, max_distance=1) == pytest.approx(1 / 2)
    assert hiersql.hierarchical_recall([["3.2.1"]], [["3.2.2"]], FIG8B) == pytest.approx(2 / 3)


def test_descendant_augmentation():
    # Yaug = {3.2, 3.2.1, 3.2.2}, Ŷaug = {3.2.1}
    kw = {"augment": "descendants"}
    assert hiersql.hierarchical_precision([["3.2"]], [["3.2.1"]], FIG8B, **kw) == 1
    assert hiersql.hierarchical_recall([["3.2"]], [["3.2.1"]], FIG8B, **kw) == pytest.approx(1 / 3)


CHAIN = Taxonomy.from_edges([("r", "A"), ("A", "B"), ("B", "C"), ("r", "X")])


def test_cesa_bianchi_over_specialisation():
    # Fig. 7(a): true A, predicted C. Ŷaug = {A, B, C}; eq. 5 drops C (its parent B is not in Yaug), keeps B.
    kw = {"augment": "cesa_bianchi"}
    assert hiersql.hierarchical_precision([["A"]], [["C"]], CHAIN, **kw) == pytest.approx(1 / 2)
    assert hiersql.hierarchical_recall([["A"]], [["C"]], CHAIN, **kw) == 1
    # plain ancestors for comparison: hP = 1/3
    assert hiersql.hierarchical_precision([["A"]], [["C"]], CHAIN) == pytest.approx(1 / 3)


def test_cesa_bianchi_under_classification():
    # Fig. 7(b): true C, predicted A. Yaug = {A, B, C}; eq. 4 drops C.
    kw = {"augment": "cesa_bianchi"}
    assert hiersql.hierarchical_recall([["C"]], [["A"]], CHAIN, **kw) == pytest.approx(1 / 2)
    assert hiersql.hierarchical_precision([["C"]], [["A"]], CHAIN, **kw) == 1


def test_cesa_bianchi_keeps_wrong_top_level_branch_penalised():
    # true A, predicted X (siblings under the root): nothing is shared, the root counts as shared parent,
    # so both A and X stay: hP = hR = 0.
    kw = {"augment": "cesa_bianchi"}
    assert hiersql.hierarchical_precision([["A"]], [["X"]], CHAIN, **kw) == 0
    assert hiersql.hierarchical_recall([["A"]], [["X"]], CHAIN, **kw) == 0


def test_micro_macro_and_empty_predictions():
    # instance 0: Y={C}: Yaug={A,B,C}, Ŷ={B}: Ŷaug={A,B} -> both 2
    # instance 1: Y={X}, no prediction -> hP = zero_division (0), hR = 0
    ev = Evaluator(CHAIN).add_truth([["C"], ["X"]]).add_predictions("s", [["B"], []])
    got = {(m, a): v for _, m, a, v in ev.rows(["hp", "hr", "hf"], average=["micro", "macro"])}
    assert got[("hierarchical_precision", "micro")] == pytest.approx(2 / 2)
    assert got[("hierarchical_recall", "micro")] == pytest.approx(2 / 4)
    assert got[("hierarchical_precision", "macro")] == pytest.approx((1 + 0) / 2)
    assert got[("hierarchical_recall", "macro")] == pytest.approx((2 / 3 + 0) / 2)
    assert got[("hierarchical_f1", "micro")] == pytest.approx(2 * 1 * 0.5 / 1.5)
    assert got[("hierarchical_f1", "macro")] == pytest.approx((2 * 2 / (3 + 2) + 0) / 2)
    one = ev.rows(["hp"], average="macro", zero_division=1.0)
    assert one[0].value == pytest.approx((1 + 1) / 2)


def test_per_instance_table_on_demo_fixture(fixtures_dir):
    folder = fixtures_dir / "demo"
    ev = Evaluator(folder / "taxonomy.tsv").add_truth(folder / "truth.tsv")
    ev.add_predictions("shallow", folder / "shallow.tsv")
    per = ev.per_instance("hp").set_index("instance_id")
    # instance 6: Y = {dog, house cat} -> {dog, canine, animal, house cat, feline}; Ŷ = {animal}
    assert per.loc["6", ["n_true", "n_pred", "n_both"]].tolist() == [5, 1, 1]
    # instance 1: jaguar vs feline -> {jaguar, feline, animal} vs {feline, animal}
    assert per.loc["1", ["n_true", "n_pred", "n_both"]].tolist() == [3, 2, 2]
    micro = {m: v for _, m, a, v in ev.rows(["hp", "hr"], average="micro")}
    # hand count: |∩| = 6·2 + 1 + 1 = 14, |Yaug| = 7·3 + 5 = 26, |Ŷaug| = 14
    assert micro == pytest.approx({"hierarchical_precision": 1.0, "hierarchical_recall": 14 / 26})


def test_many_systems_in_one_store_match_one_at_a_time(fixtures_dir):
    folder = fixtures_dir / "demo"
    systems = ("cautious", "flat_errors", "shallow")
    ev = Evaluator(folder / "taxonomy.tsv").add_truth(folder / "truth.tsv")
    for s in systems:
        ev.add_predictions(s, folder / f"{s}.tsv")
    together = sorted(ev.rows(["hp", "hr", "hf", "sdl"]))
    alone = []
    for s in systems:
        single = Evaluator(folder / "taxonomy.tsv").add_truth(folder / "truth.tsv")
        alone += single.add_predictions(s, folder / f"{s}.tsv").rows(["hp", "hr", "hf", "sdl"])
    alone = sorted(alone)
    assert [r[:3] for r in together] == [r[:3] for r in alone]
    assert [r.value for r in together] == pytest.approx([r.value for r in alone], abs=1e-12)

