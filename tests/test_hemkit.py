"""HEMKit compatibility (SPEC §5): ``hiersql hemkit`` on HEMKit's example files, numbers derived by hand; bad
input reported instead of crashing or printing nan; MeSH hP/hR/hF against an independent networkx computation.
"""

from __future__ import annotations

import random
import shutil
from fractions import Fraction as F
from pathlib import Path

import networkx as nx
import pytest

from hiersql.api.hemkit import hemkit, hemkit_taxonomy, line_mean
from hiersql.cli import main
from hiersql.errors import InputError

# cat_hier.txt: 10>20, 20>{1,2}, 10>30, 30>{5,4,3}, 90>30, 70>3, 10>70 (the line "10 20" twice, no newline at
# the end); parentless 10 and 90 get the dummy root R. Ancestors (edges up): 1, 2: 20 (1), 10 (2), R (3);
# 3: 70, 30 (1), 10, 90 (2), R (3); 4, 5: 30 (1), 10, 90 (2), R (3).
# Golden: {1,2,3} {1,4,5} {2,4}; result: {1} {2,4} {2,4}.
#
# MAX_DISTANCE >= 2 (ancestors up to 3 edges: all, R included):
#   I1: Yaug = {1,2,3,20,10,R,70,30,90} (9), Ŷaug = {1,20,10,R} (4), both 4: hP 1, hR 4/9, hF 8/13
#   I2: Yaug = {1,4,5,20,10,R,30,90} (8), Ŷaug = {2,4,20,10,R,30,90} (7), both 6: hP 6/7, hR 3/4, hF 12/15
#   I3: equal sets: 1, 1, 1
# LCA (paths up to MAX_DISTANCE >= 2 edges; no label is an ancestor of another in its set):
#   I1: 1-1 meet at 1; 2 meets 1 at 20 (1+1); 3 meets 1 at 10 (2+2). Greedy LCAs {1, 10, 20}.
#       Gt = {1, 2, 20, 3, 70 or 30, 10} (6), Gp = {1, 20, 10} (3), both 3: P 1, R 1/2, F 2/3
#   I2: 1 meets 2 at 20, 5 meets 4 at 30, 4-4, 2 meets 1 at 20. Gt = {1,4,5,20,30}, Gp = {2,4,20,30}, both
#       {4,20,30}: P 3/4, R 3/5, F 2/3
#   I3: 1, 1, 1
EXAMPLE = (F(20, 21), F(79, 108), (F(8, 13) + F(4, 5) + 1) / 3, F(11, 12), F(7, 10), F(7, 9))
# MAX_DISTANCE = 1 (ancestors up to 2 edges: R out of reach; LCA paths 1 edge):
#   I1: Yaug = {1,2,3,20,10,70,30,90} (8), Ŷaug = {1,20,10} (3): hP 1, hR 3/8, hF 6/11
#   I2: Yaug = {1,4,5,20,10,30,90} (7), Ŷaug = {2,4,20,10,30,90} (6), both 5: hP 5/6, hR 5/7, hF 10/13
#   I3: 1, 1, 1
#   LCA I1 (HEMKit's rules S1-S6, docs/lca.md): 3 and 1 share no node within 1 edge: they meet at the marker -1
#       closing every path, and HEMKit keeps the whole paths up to it: 3's (3, 30, -1) (id sum 32 < 3's
#       (3, 70, -1)) and 1's (1, 20, -1); 2 meets 1 at 20. Gt = {1, 2, 3, 20, 30, -1} (6), Gp = {1, 20, -1}
#       (3), both 3: P 1, R 1/2, F 2/3 (the paper's ⊥ joined without the paths' nodes would give R 3/5).
#       I2 as above. I3: 1. HEMKit (g++ -O2, std::setprecision(17)) prints the same six numbers.
EXAMPLE_MD1 = (F(17, 18), F(39, 56), F(331, 429), F(11, 12), F(7, 10), F(7, 9))
# MAX_DISTANCE = 0 (ancestors up to 1 edge; every LCA path is its label and the marker -1):
#   I1: Yaug = {1,2,3,20,70,30} (6), Ŷaug = {1,20} (2): hP 1, hR 1/3, hF 1/2
#   I2: Yaug = {1,4,5,20,30} (5), Ŷaug = {2,4,20,30} (4), both 3: hP 3/4, hR 3/5, hF 2/3
#   LCA I1: 2 and 3 meet 1 at -1: Gt = {1, 2, 3, -1}, Gp = {1, -1}: P 1, R 1/2, F 2/3
#   LCA I2: 1 and 5 meet the predicted paths at -1, and 2 the gold ones: Gt = {1, 4, 5, -1}, Gp = {2, 4, -1},
#       both {4, -1}: P 2/3, R 1/2, F 4/7. I3: 1. HEMKit (g++ -O2, std::setprecision(17)) prints the same.
EXAMPLE_MD0 = (F(11, 12), F(29, 45), F(13, 18), F(8, 9), F(2, 3), F(47, 63))


@pytest.fixture(scope="module")
def example(data_dir) -> Path:
    return data_dir / "hemkit-example"


def files(example: Path) -> list[str]:
    return [str(example / n) for n in ("cat_hier.txt", "Golden.txt", "result.txt")]


def run(capsys, *args) -> tuple[int, str, str]:
    code = main(["hemkit", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize(("max_distance", "expected"), [(100000, EXAMPLE), (4, EXAMPLE), (2, EXAMPLE),
                                                        (1, EXAMPLE_MD1), (0, EXAMPLE_MD0)])
def test_example_files(example, capsys, max_distance, expected):
    code, out, err = run(capsys, *files(example), max_distance, 5)
    assert code == 0 and err == ""
    numbers = out.split()
    assert len(numbers) == 6 and out.endswith("\n")
    assert [float(x) for x in numbers] == pytest.approx([float(x) for x in expected], abs=1e-15)
    assert all(x == f"{float(x):.17g}" for x in numbers)  # 17 significant digits, as printed


def test_dummy_root_above_a_single_root(tmp_path):
    """A dummy root is added even when the hierarchy has one root; it counts: a vs b under r gives
    Yaug = {a, r, R}, Ŷaug = {b, r, R}: hP = 2/3."""
    (tmp_path / "h").write_text("r a\nr b\n")
    (tmp_path / "g").write_text("a\n")
    (tmp_path / "p").write_text("b\n")
    tax = hemkit_taxonomy(tmp_path / "h")
    assert tax.parents("r") == [tax.root] and tax.root not in ("r", "a", "b")
    result = hemkit(tmp_path / "h", tmp_path / "g", tmp_path / "p", 5, 5)
    assert result.hp == pytest.approx(2 / 3)
    assert (result.lca_p, result.lca_r) == (pytest.approx(1 / 2), pytest.approx(1 / 2))  # {a, r} vs {b, r}


def test_ancestors_dropped_for_lca_only(tmp_path):
    """Predicting {r, a} for {a}: hP counts r twice over (no drop), LCA drops r (an ancestor of a): 1.0."""
    (tmp_path / "h").write_text("r a\nr b\n")
    (tmp_path / "g").write_text("a\n")
    (tmp_path / "p").write_text("r a\n")
    result = hemkit(tmp_path / "h", tmp_path / "g", tmp_path / "p", 5, 5)
    assert (result.hp, result.hr) == (1.0, 1.0)
    assert (result.lca_p, result.lca_r, result.lca_f) == (1.0, 1.0, 1.0)


def copy_example(example: Path, tmp: Path, gold: str | None = None, pred: str | None = None) -> list[str]:
    paths = []
    for name, text in (("cat_hier.txt", None), ("Golden.txt", gold), ("result.txt", pred)):
        target = tmp / name
        if text is None:
            shutil.copy(example / name, target)
        else:
            target.write_text(text)
        paths.append(str(target))
    return paths


def test_unknown_label_is_reported(example, tmp_path, capsys):
    paths = copy_example(example, tmp_path, pred="1\n2 4 77\n2 4\n")
    code, out, err = run(capsys, *paths, 4, 5)
    assert code == 2 and out == ""
    assert err.strip() == f"hiersql: error: {paths[2]}:2: label not in the taxonomy: '77'"
    code, out, err = run(capsys, *paths, 4, 5, "--unknown", "ignore")
    assert code == 0 and "ignored 1 label(s) not in the taxonomy" in err
    assert [float(x) for x in out.split()] == pytest.approx([float(x) for x in EXAMPLE])


def test_tabs_are_separators(example, tmp_path, capsys):
    paths = copy_example(example, tmp_path, gold="1\t2 3\n1 4\t5\n2 4\n")
    code, out, err = run(capsys, *paths, 4, 5)
    assert code == 0 and "2 line(s) contain tabs" in err
    assert [float(x) for x in out.split()] == pytest.approx([float(x) for x in EXAMPLE])


def test_blank_gold_line_is_skipped_with_its_prediction(example, tmp_path, capsys):
    """A blank gold line and its prediction line are skipped: the other instances keep their predictions
    (HEMKit would read prediction line 2 for gold line 3)."""
    paths = copy_example(example, tmp_path, gold="1 2 3\n\n1 4 5\n2 4\n", pred="1\n3\n2 4\n2 4\n")
    code, out, err = run(capsys, *paths, 4, 5)
    assert code == 0 and "1 blank line(s) skipped" in err
    assert [float(x) for x in out.split()] == pytest.approx([float(x) for x in EXAMPLE])


def test_empty_prediction_is_zero_not_nan(example, tmp_path, capsys):
    """Instance 2 predicted nothing (blank line), instance 3 has no prediction line at all: hP, LCA-P are 0
    for both, hR and LCA-R are 0; I1 as in the example: hP = (1 + 0 + 0)/3."""
    paths = copy_example(example, tmp_path, pred="1\n\n")
    code, out, err = run(capsys, *paths, 4, 5)
    assert code == 0 and "2 instance(s) with no predicted label" in err
    values = [float(x) for x in out.split()]
    assert values == pytest.approx([1 / 3, 4 / 27, 8 / 39, 1 / 3, 1 / 6, 2 / 9])


@pytest.mark.parametrize("pred", ["", "\n\n"])
def test_nothing_predicted(example, tmp_path, capsys, pred):
    """An empty or blank prediction file: every instance has an empty predicted set; all six numbers 0."""
    paths = copy_example(example, tmp_path, pred=pred)
    code, out, err = run(capsys, *paths, 4, 5)
    assert code == 0 and "3 instance(s) with no predicted label" in err
    assert [float(x) for x in out.split()] == [0.0] * 6


def test_extra_prediction_lines_are_reported(example, tmp_path, capsys):
    paths = copy_example(example, tmp_path, pred="1\n2 4\n2 4\n3\n")
    code, out, err = run(capsys, *paths, 4, 5)
    assert code == 0 and "1 line(s) beyond the 3 line(s)" in err and "no truth" not in err
    assert [float(x) for x in out.split()] == pytest.approx([float(x) for x in EXAMPLE])


@pytest.mark.parametrize(("max_distance", "max_error", "message"), [
    ("x", "5", "MAX_DISTANCE must be an integer"), ("-1", "5", "MAX_DISTANCE must be an integer >= 0"),
    ("4", "-1", "MAX_ERROR must be a number >= 0"), ("4", "five", "MAX_ERROR must be a number"),
])
def test_bad_numbers(example, capsys, max_distance, max_error, message):
    code, out, err = run(capsys, *files(example), max_distance, max_error)
    assert code == 2 and out == "" and message in err and len(err.strip().splitlines()) == 1


def test_missing_file(example, tmp_path, capsys):
    code, _, err = run(capsys, files(example)[0], tmp_path / "nope.txt", files(example)[2], 4, 5)
    assert code == 2 and "gold file not found" in err


def test_hierarchy_with_a_cycle(tmp_path, example):
    (tmp_path / "h").write_text("1 2\n2 3\n3 1\n")
    with pytest.raises(InputError, match="cycle"):
        hemkit(tmp_path / "h", files(example)[1], files(example)[2], 4, 5)


def test_mesh_set_based_against_networkx(data_dir, tmp_path):
    """MeSH with MAX_DISTANCE 4 on 40 random instances: hP, hR, hF against a networkx computation of the
    ancestors up to 5 edges up (the dummy root above the single root 1 counts when within reach)."""
    mesh = data_dir / "mesh" / "mesh_hierarchy_int.txt"
    graph = nx.DiGraph()
    for line in mesh.read_text().splitlines():
        if line.strip():
            parent, child = line.split()
            graph.add_edge(parent, child)
    graph.add_edge("DUMMY", "1")
    rng = random.Random(7)
    nodes = sorted(n for n in graph if n != "DUMMY")
    gold = [rng.sample(nodes, rng.randint(1, 4)) for _ in range(40)]
    pred = [list(dict.fromkeys(rng.sample(nodes, rng.randint(1, 3)) + g[: rng.randint(0, 1)])) for g in gold]
    (tmp_path / "g").write_text("\n".join(" ".join(s) for s in gold) + "\n")
    (tmp_path / "p").write_text("\n".join(" ".join(s) for s in pred) + "\n")
    reverse = graph.reverse()

    def aug(labels):
        out = set()
        for label in labels:
            out |= set(nx.single_source_shortest_path_length(reverse, label, cutoff=5))
        return out

    hp = hr = hf = 0.0
    for g, p in zip(gold, pred, strict=True):
        t, q = aug(g), aug(p)
        hp += len(t & q) / len(q)
        hr += len(t & q) / len(t)
        hf += 2 * len(t & q) / (len(t) + len(q))
    result = hemkit(mesh, tmp_path / "g", tmp_path / "p", 4, 5)
    assert (result.hp, result.hr, result.hf) == pytest.approx((hp / 40, hr / 40, hf / 40), abs=1e-12)
    assert 0 < result.lca_f <= 1 and result.instances == 40



def test_mesh_extended_lca_graphs_against_networkx(data_dir, tmp_path):
    """MeSH, MAX_DISTANCE 4, 30 instances mixing related and random labels: the extended LCA graphs of the SQL
    (options, shortest-path nodes, the virtual ancestor beyond the threshold, ancestor removal) equal an
    independent networkx computation of SPEC §4 on the hierarchy with its dummy root."""
    from functools import cache

    from hiersql.api.evaluator import make_options
    from hiersql.api.hemkit import hemkit_store
    from hiersql.measures import lca

    mesh = data_dir / "mesh" / "mesh_hierarchy_int.txt"
    reverse = nx.DiGraph()
    for line in mesh.read_text().splitlines():
        if line.strip():
            parent, child = line.split()
            reverse.add_edge(child, parent)
    reverse.add_edge("1", "DUMMY")
    md = 4

    @cache
    def up(node: str) -> dict[str, int]:
        return nx.single_source_shortest_path_length(reverse, node, cutoff=md + 1)

    rng = random.Random(11)
    nodes = sorted(n for n in reverse if n != "DUMMY")
    gold, pred = [], []
    for _ in range(30):
        g = rng.sample(nodes, rng.randint(1, 3))
        near = [rng.choice(list(reverse.successors(x)) or [x]) for x in g]  # parents of true labels
        labels = rng.sample(near, rng.randint(0, len(near))) + rng.sample(nodes, 1) + g[: rng.randint(0, 1)]
        pred.append(list(dict.fromkeys(labels)))  # a true label beside its parent: the parent is dropped
        gold.append(g)
    (tmp_path / "g").write_text("\n".join(" ".join(s) for s in gold) + "\n")
    (tmp_path / "p").write_text("\n".join(" ".join(s) for s in pred) + "\n")
    store = hemkit_store(mesh, tmp_path / "g", tmp_path / "p", md)
    got = lca.graphs(store, make_options(lca_graph="extended", include_root=True, max_distance=md))
    beyond = lca.beyond_name(store)

    def keep(labels: list[str]) -> set[str]:
        return {x for x in labels if not any(y != x and x in up(y) for y in labels)}

    def between(x: str, a: str) -> set[str]:
        return {v for v, d in up(x).items() if a in up(v) and d + up(v)[a] == up(x)[a]}

    for i, (g, p) in enumerate(zip(gold, pred, strict=True), start=1):
        sides = {"t": keep(g), "p": keep(p)}
        graphs = {side: set(labels) for side, labels in sides.items()}
        for side, labels in sides.items():
            other = "p" if side == "t" else "t"
            for x in labels:
                meet = {(a, z): up(x)[a] + up(z)[a] for z in sides[other] for a in up(x)
                        if a in up(z) and up(x)[a] <= md and up(z)[a] <= md}
                if not meet and sides[other]:
                    graphs[side] |= {x, beyond}
                    graphs[other] |= {beyond}
                for (a, z), cost in meet.items():
                    if cost == min(meet.values()):
                        graphs[side] |= between(x, a)
                        graphs[other] |= between(z, a)
        dummy = store.taxonomy.root
        graphs = {side: {dummy if v == "DUMMY" else v for v in vs} for side, vs in graphs.items()}
        assert got[("pred", str(i))] == graphs, i


def test_means_add_one_value_at_a_time_as_hemkit():
    """HEMKit adds the per-instance values in line order in double precision: ten values 0.1 sum to
    0.9999999999999999 (each addition rounded), so their mean is 0.09999999999999999, not the 0.1 of a
    compensated sum (Python's own sum since 3.12, math.fsum)."""
    import math

    assert line_mean([0.1] * 10) == 0.9999999999999999 / 10 != math.fsum([0.1] * 10) / 10
    assert line_mean(iter([F(1, 3).__float__(), 0.5])) == (1 / 3 + 0.5) / 2
