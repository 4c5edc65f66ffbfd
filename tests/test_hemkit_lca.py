"""HEMKit's LCA graphs (``lca_graph="hemkit"``, :mod:`hiersql.lca_hemkit`): HEMKit's own printed numbers.

Every expected value below is what HEMKit printed (``BioASQ/Evaluation-Measures``, ``hierarchical/software``,
built with ``g++ -O2`` from a copy whose only change is ``std::setprecision(17)`` on its output stream), on the
inputs of ``tests/_hemkit_cases.py``; ``python -m tests._hemkit_cases HEMKIT`` prints them all again from such a
binary. Each must match to 1e-9 (they match to the last digit).
"""

from __future__ import annotations

import pytest

from hiersql.cli import main
from hiersql.hemkit import hemkit, line_mean
from hiersql.lca_hemkit import HemkitLCA, hemkit_parents
from hiersql.lca_hemkit_kernel import cxx_sort_order
from hiersql.metrics.lca import lca_f1

from ._hemkit_cases import (
    DISTANCES,
    HAND,
    MESH_DISTANCES,
    RANDOM_DISTANCES,
    mesh_instances,
    random_dag,
    write_mesh,
)

# HEMKit on its example files (../shared/data/hemkit-example): hP hR hF LCA-P LCA-R LCA-F.
EXAMPLE = {
    1: ("0.94444444444444453 0.69642857142857151 0.77156177156177153"
        " 0.91666666666666663 0.70000000000000007 0.77777777777777768"),
    2: ("0.95238095238095244 0.73148148148148151 0.80512820512820504"
        " 0.91666666666666663 0.70000000000000007 0.77777777777777768"),
    4: ("0.95238095238095244 0.73148148148148151 0.80512820512820504"
        " 0.91666666666666663 0.70000000000000007 0.77777777777777768"),
    100000: ("0.95238095238095244 0.73148148148148151 0.80512820512820504"
             " 0.91666666666666663 0.70000000000000007 0.77777777777777768"),
}

# HEMKit on the hand-made cases of fixtures/hemkit/, one per rule of docs/lca.md (derivations in each test).
HAND_OUTPUT = {
    "s0_drop_distance": {
        1: "0.66666666666666663 0.40000000000000002 0.5 0.66666666666666663 0.5 0.57142857142857151",
        2: "0.66666666666666663 0.40000000000000002 0.5 0.25 0.25 0.25",
        4: "0.66666666666666663 0.40000000000000002 0.5 0.5 0.25 0.33333333333333331",
        100000: "0.66666666666666663 0.40000000000000002 0.5 0.5 0.25 0.33333333333333331",
    },
    "s2_first_hit_at_label": {
        1: "0.33333333333333331 0.66666666666666663 0.44444444444444442 0.40000000000000002 0.66666666666666663 0.5",
        2: "0.42857142857142855 1 0.59999999999999998 0.33333333333333331 0.5 0.40000000000000002",
        4: "0.42857142857142855 1 0.59999999999999998 0.33333333333333331 1 0.5",
        100000: "0.42857142857142855 1 0.59999999999999998 0.33333333333333331 1 0.5",
    },
    "s2_meeting_beyond_d": {
        1: ("0.33333333333333331 0.33333333333333331 0.33333333333333331"
            " 0.33333333333333331 0.33333333333333331 0.33333333333333331"),
        2: "0.5 0.5 0.5 0.33333333333333331 0.33333333333333331 0.33333333333333331",
        4: "0.5 0.5 0.5 0.33333333333333331 0.33333333333333331 0.33333333333333331",
        100000: "0.5 0.5 0.5 0.33333333333333331 0.33333333333333331 0.33333333333333331",
    },
    "s3_partner_served": {
        1: "0.20000000000000001 0.33333333333333331 0.25 0.33333333333333331 0.33333333333333331 0.33333333333333331",
        2: "0.5 0.75 0.59999999999999998 0.5 0.33333333333333331 0.40000000000000002",
        4: "0.5 0.75 0.59999999999999998 0.25 0.5 0.33333333333333331",
        100000: "0.5 0.75 0.59999999999999998 0.25 0.5 0.33333333333333331",
    },
    "s4_stop_early": {
        1: "1 0.42857142857142855 0.59999999999999998 1 0.40000000000000002 0.57142857142857151",
        2: "1 0.42857142857142855 0.59999999999999998 1 0.40000000000000002 0.57142857142857151",
        4: "1 0.42857142857142855 0.59999999999999998 1 0.40000000000000002 0.57142857142857151",
        100000: "1 0.42857142857142855 0.59999999999999998 1 0.40000000000000002 0.57142857142857151",
    },
    "s5_filing": {
        1: "0.75 0.75 0.75 0 0 0",
        2: "0.75 0.75 0.75 0 0 0",
        4: "0.75 0.75 0.75 0 0 0",
        100000: "0.75 0.75 0.75 0 0 0",
    },
}

# HEMKit's LCA-P LCA-R LCA-F on random_dag(seed) at MAX_DISTANCE 1, 2, 3, 100.
RANDOM = {
    0: (
        "0.48333333333333334 0.31666666666666665 0.37222222222222223",
        "0.57777777777777783 0.41666666666666669 0.46560846560846558",
        "0.41666666666666669 0.5 0.35555555555555557",
        "0.41666666666666669 0.5 0.35555555555555557",
    ),
    1: (
        "0.68888888888888877 0.61111111111111105 0.61111111111111105",
        "0.63888888888888884 0.72222222222222221 0.57777777777777783",
        "0.63888888888888884 0.72222222222222221 0.57777777777777783",
        "0.63888888888888884 0.72222222222222221 0.57777777777777783",
    ),
    2: (
        "0.91666666666666663 0.68333333333333324 0.76851851851851849",
        "0.91666666666666663 0.68333333333333324 0.76851851851851849",
        "0.91666666666666663 0.68333333333333324 0.76851851851851849",
        "0.91666666666666663 0.68333333333333324 0.76851851851851849",
    ),
    3: (
        "0.83333333333333337 0.58333333333333337 0.66666666666666663",
        "0.83333333333333337 0.77777777777777768 0.79999999999999993",
        "0.83333333333333337 0.77777777777777768 0.79999999999999993",
        "0.83333333333333337 0.77777777777777768 0.79999999999999993",
    ),
    4: (
        "0.59788359788359779 0.52380952380952384 0.4682539682539682",
        "0.5714285714285714 0.75 0.45909090909090916",
        "0.56084656084656082 0.75 0.44242424242424239",
        "0.56084656084656082 0.75 0.44242424242424239",
    ),
    5: (
        "0.55555555555555547 0.72222222222222221 0.61111111111111105",
        "0.58888888888888891 0.75555555555555554 0.64444444444444438",
        "0.58888888888888891 0.75555555555555554 0.64444444444444438",
        "0.58888888888888891 0.75555555555555554 0.64444444444444438",
    ),
    6: (
        "0.23809523809523805 0.34722222222222215 0.26666666666666666",
        "0.28333333333333333 0.30952380952380953 0.27777777777777773",
        "0.24761904761904763 0.30952380952380953 0.24074074074074073",
        "0.24761904761904763 0.30952380952380953 0.24074074074074073",
    ),
    7: (
        "0.41111111111111115 0.41666666666666669 0.41005291005291006",
        "0.6333333333333333 0.3833333333333333 0.43333333333333335",
        "0.6333333333333333 0.3611111111111111 0.4212121212121212",
        "0.83333333333333337 0.3611111111111111 0.46666666666666662",
    ),
    8: (
        "0.5 0.44444444444444442 0.4682539682539682",
        "0.83333333333333337 0.44444444444444442 0.55555555555555547",
        "0.83333333333333337 0.44444444444444442 0.55555555555555547",
        "0.83333333333333337 0.44444444444444442 0.55555555555555547",
    ),
    9: (
        "0.28373015873015867 0.26507936507936508 0.26794871794871794",
        "0.42857142857142855 0.52222222222222214 0.46825396825396831",
        "0.42857142857142855 0.52222222222222214 0.46825396825396831",
        "0.42857142857142855 0.52222222222222214 0.46825396825396831",
    ),
    10: (
        "0.37301587301587302 0.38888888888888884 0.38034188034188032",
        "0.31666666666666665 0.36904761904761907 0.33954248366013068",
        "0.375 0.66666666666666663 0.44444444444444442",
        "0.375 0.66666666666666663 0.44444444444444442",
    ),
    11: (
        "0.51111111111111107 0.35396825396825399 0.36217948717948717",
        "0.66666666666666663 0.39523809523809522 0.46296296296296297",
        "0.66666666666666663 0.34166666666666662 0.38888888888888884",
        "0.66666666666666663 0.34166666666666662 0.38888888888888884",
    ),
    12: (
        "0.5 0.41666666666666669 0.44444444444444442",
        "0.59999999999999998 0.48148148148148145 0.52380952380952384",
        "0.53333333333333333 0.44444444444444442 0.47619047619047622",
        "0.53333333333333333 0.44444444444444442 0.47619047619047622",
    ),
    13: (
        "0.71666666666666667 0.5 0.57777777777777772",
        "0.75 0.5 0.59259259259259245",
        "0.75 0.5 0.59259259259259245",
        "0.75 0.5 0.59259259259259245",
    ),
    14: (
        "0.5 0.58888888888888891 0.53333333333333333",
        "0.45000000000000001 0.66666666666666663 0.52777777777777768",
        "0.45000000000000001 0.65000000000000002 0.51851851851851849",
        "0.70000000000000007 0.65000000000000002 0.55555555555555547",
    ),
    15: (
        "0.61111111111111105 0.71666666666666667 0.6333333333333333",
        "0.53333333333333333 0.75 0.62222222222222223",
        "0.53333333333333333 0.75 0.62222222222222223",
        "0.53333333333333333 0.75 0.62222222222222223",
    ),
    16: (
        "0.55555555555555547 0.35714285714285715 0.4212121212121212",
        "0.80555555555555547 0.33134920634920634 0.46666666666666662",
        "0.88888888888888884 0.26190476190476186 0.39523809523809522",
        "0.88888888888888884 0.26190476190476186 0.39523809523809522",
    ),
    17: (
        "0.55555555555555547 0.35357142857142859 0.4243386243386244",
        "0.54166666666666663 0.38888888888888884 0.45185185185185189",
        "0.54761904761904756 0.41666666666666669 0.46103569632981389",
        "0.54761904761904756 0.41666666666666669 0.46103569632981389",
    ),
    18: (
        "0.55555555555555547 0.66666666666666663 0.59999999999999998",
        "0.63888888888888884 0.66666666666666663 0.6333333333333333",
        "0.63888888888888884 0.66666666666666663 0.6333333333333333",
        "0.63888888888888884 0.66666666666666663 0.6333333333333333",
    ),
    19: (
        "0.40079365079365076 0.36243386243386239 0.35959595959595964",
        "0.61111111111111105 0.31944444444444442 0.40404040404040398",
        "0.61111111111111105 0.31944444444444442 0.40404040404040398",
        "0.61111111111111105 0.31944444444444442 0.40404040404040398",
    ),
    20: (
        "0.47777777777777769 0.2857142857142857 0.35454545454545455",
        "0.58888888888888891 0.40277777777777773 0.46866096866096862",
        "0.61111111111111105 0.37301587301587302 0.44814814814814818",
        "0.61111111111111105 0.37301587301587302 0.44814814814814818",
    ),
    21: (
        "0.83333333333333337 0.64444444444444449 0.63888888888888884",
        "0.83333333333333337 0.64444444444444449 0.63888888888888884",
        "0.83333333333333337 0.64444444444444449 0.63888888888888884",
        "0.83333333333333337 0.64444444444444449 0.63888888888888884",
    ),
    22: (
        "0.57777777777777783 0.88888888888888884 0.62380952380952381",
        "0.57777777777777783 0.88888888888888884 0.62380952380952381",
        "0.57777777777777783 0.88888888888888884 0.62380952380952381",
        "0.57777777777777783 0.88888888888888884 0.62380952380952381",
    ),
    23: (
        "0.33134920634920634 0.38888888888888884 0.35653235653235654",
        "0.31481481481481483 0.34523809523809518 0.32908496732026143",
        "0.34166666666666662 0.38730158730158731 0.36190476190476195",
        "0.25833333333333336 0.29999999999999999 0.27619047619047621",
    ),
    24: (
        "0.28968253968253965 0.3518518518518518 0.30555555555555552",
        "0.5 0.53333333333333333 0.51111111111111107",
        "0.49047619047619051 0.55555555555555547 0.51111111111111107",
        "0.49047619047619051 0.55555555555555547 0.51111111111111107",
    ),
    25: (
        "0.5 0.34444444444444439 0.4071428571428572",
        "0.55555555555555547 0.37301587301587302 0.4450216450216451",
        "0.52222222222222225 0.3611111111111111 0.42637362637362641",
        "0.53968253968253965 0.58333333333333337 0.45983645983645988",
    ),
    26: (
        "0.48412698412698413 0.4212121212121212 0.434640522875817",
        "0.57142857142857151 0.61851851851851858 0.58012820512820518",
        "0.57142857142857151 0.61851851851851858 0.58012820512820518",
        "0.57142857142857151 0.61851851851851858 0.58012820512820518",
    ),
    27: (
        "0.38888888888888884 0.46666666666666662 0.38888888888888884",
        "0.41666666666666669 0.49523809523809526 0.41750841750841755",
        "0.46666666666666662 0.6507936507936507 0.51010101010101006",
        "0.46666666666666662 0.6507936507936507 0.51010101010101006",
    ),
    28: (
        "0.58333333333333337 0.6166666666666667 0.57864357864357863",
        "0.6166666666666667 0.6166666666666667 0.59682539682539681",
        "0.6166666666666667 0.6166666666666667 0.59682539682539681",
        "0.6166666666666667 0.6166666666666667 0.59682539682539681",
    ),
    29: (
        "0.29999999999999999 0.32063492063492061 0.30681818181818182",
        "0.38888888888888884 0.37142857142857144 0.37720797720797722",
        "0.42857142857142855 0.45714285714285713 0.43703703703703706",
        "0.42857142857142855 0.45714285714285713 0.43703703703703706",
    ),
    30: (
        "0.44444444444444442 0.38888888888888884 0.39788359788359795",
        "0.71666666666666667 0.42222222222222222 0.46560846560846558",
        "0.66666666666666663 0.3972222222222222 0.41750841750841755",
        "0.72222222222222221 0.3972222222222222 0.44444444444444448",
    ),
    31: (
        "0.55555555555555547 0.88888888888888884 0.65555555555555556",
        "0.52777777777777779 0.88888888888888884 0.62222222222222223",
        "0.52777777777777779 0.88888888888888884 0.62222222222222223",
        "0.52777777777777779 0.88888888888888884 0.62222222222222223",
    ),
    32: (
        "0.73333333333333339 0.53333333333333333 0.59999999999999998",
        "0.75 0.75555555555555554 0.65000000000000002",
        "0.75 0.75555555555555554 0.65000000000000002",
        "0.75 0.75555555555555554 0.65000000000000002",
    ),
    33: (
        "0.46666666666666662 0.57777777777777783 0.42051282051282052",
        "0.58333333333333337 0.57777777777777783 0.44814814814814818",
        "0.55555555555555558 0.57777777777777783 0.41005291005291006",
        "0.55555555555555558 0.57777777777777783 0.41005291005291006",
    ),
    34: (
        "0.42592592592592587 0.50158730158730158 0.45959595959595956",
        "0.45396825396825397 0.6166666666666667 0.51515151515151514",
        "0.42063492063492064 0.58333333333333337 0.48181818181818176",
        "0.42063492063492064 0.58333333333333337 0.48181818181818176",
    ),
    35: (
        "0.50555555555555554 0.39999999999999997 0.44074074074074082",
        "0.62222222222222212 0.49444444444444441 0.5357142857142857",
        "0.72222222222222221 0.49444444444444441 0.58571428571428574",
        "0.72222222222222221 0.49444444444444441 0.58571428571428574",
    ),
    36: (
        "0.77777777777777779 0.34444444444444439 0.47222222222222215",
        "0.79999999999999993 0.41666666666666669 0.46666666666666662",
        "0.79999999999999993 0.41666666666666669 0.46666666666666662",
        "0.79999999999999993 0.41666666666666669 0.46666666666666662",
    ),
    37: (
        "0.3798941798941799 0.42222222222222222 0.36507936507936511",
        "0.375 0.33333333333333331 0.30573593073593069",
        "0.40277777777777773 0.5 0.37121212121212127",
        "0.40277777777777773 0.5 0.37121212121212127",
    ),
    38: (
        "0.59999999999999998 0.33333333333333331 0.41269841269841273",
        "0.67619047619047612 0.3611111111111111 0.45374800637958534",
        "0.6333333333333333 0.45370370370370372 0.4568627450980392",
        "0.61818181818181817 0.51388888888888884 0.47543859649122805",
    ),
    39: (
        "0.44444444444444442 0.79999999999999993 0.53703703703703709",
        "0.49999999999999994 0.77777777777777768 0.53703703703703709",
        "0.49999999999999994 0.77777777777777768 0.53703703703703709",
        "0.49999999999999994 0.77777777777777768 0.53703703703703709",
    ),
}

# HEMKit on MeSH (../shared/data/mesh) with mesh_instances(): 2,000 instances of 3 gold labels, seed 16.
MESH = {
    2: ("0.74087333215548146 0.7334765263724683 0.73190352619372212"
        " 0.71699999999999919 0.63428558802308621 0.66484606235268284"),
    4: ("0.80252135234006783 0.77563889651374351 0.78275208328103252"
        " 0.69945039535627807 0.6140931550003137 0.64522376318737873"),
    100000: ("0.82932767639265925 0.79217894978941317 0.80360228088064278"
             " 0.69032492302374127 0.60110381223351661 0.63169450672715421"),
}


def numbers(text: str) -> list[float]:
    return [float(x) for x in text.split()]


def six(result) -> list[float]:
    return [result.hp, result.hr, result.hf, result.lca_p, result.lca_r, result.lca_f]


@pytest.mark.parametrize("max_distance", DISTANCES)
def test_example_files(data_dir, capsys, max_distance):
    """``hiersql hemkit`` prints HEMKit's six numbers on HEMKit's example (d = 1: 3 and 1 meet at HEMKit's
    marker -1 beyond the distance, with their whole paths up to it; see tests/test_hemkit.py)."""
    example = data_dir / "hemkit-example"
    files = [example / name for name in ("cat_hier.txt", "Golden.txt", "result.txt")]
    assert main(["hemkit", *map(str, files), str(max_distance), "5"]) == 0
    out = capsys.readouterr()
    assert out.err == ""
    assert numbers(out.out) == pytest.approx(numbers(EXAMPLE[max_distance]), abs=1e-9)


@pytest.mark.parametrize(("case", "max_distance"), [(c, d) for c in HAND_OUTPUT for d in DISTANCES])
def test_hand_cases(fixtures_dir, case, max_distance):
    """The six numbers on each hand-made case of fixtures/hemkit/ (see HAND in tests/_hemkit_cases.py)."""
    folder = fixtures_dir / "hemkit" / case
    result = hemkit(folder / "hierarchy.txt", folder / "gold.txt", folder / "pred.txt", max_distance, 5)
    assert six(result) == pytest.approx(numbers(HAND_OUTPUT[case][max_distance]), abs=1e-9)


def test_hand_cases_listed():
    """Every folder of fixtures/hemkit/ has HEMKit's output here, and the other way round."""
    assert sorted(HAND_OUTPUT) == sorted(p.name for p in HAND.iterdir() if p.is_dir())


# The rules at work in the hand cases, derived by hand (ids as in the files; R = HEMKit's dummy root 0,
# -1 its marker closing every path), at d = 100000:
# - s5_filing: 1 > {3, 4}, 2 > {3, 4}; T = {3}, P = {4}. Both meet at 1 and at 2 (cost 2 each); S4 drops 2
#   (both labels have two ancestors) and keeps 1; S5 chooses the pair through 1 but files it under the
#   ancestor of the last candidate looked at, 2 (the larger id sum), which was not selected: no path at all.
#   Gt = {3}, Gp = {4}: LCA-P = LCA-R = 0, where Algorithm 1 gives Gt = {3, 1}, Gp = {4, 1}: 1/2.
# - s4_stop_early: 1 > 2 > 3, 1 > 4, 7 > 6; T = {3, 4, 6}, P = {2}. 3 meets 2 at 2 itself (S2: a first hit at
#   a label), 4 meets 2 at 1, 6 meets 2 at R. S4 takes 2 (serving 3 on the gold side: 2 joins the gold set),
#   then 1, which links 2: 2 now counts as a served gold label, the count reaches |T| + |P| = 4 and the walk
#   stops before R: 6 gets no path. Gt = {3, 4, 6, 1, 2}, Gp = {2, 1}: P 1, R 2/5.
# - s3_partner_served: 2 > 1 > 3 > 4 > 5, 2 > 5, 1 > 6; T = {6}, P = {5}. 6's first hit is 1 (cost 1 + 3 on
#   5's long path), although 2 is cheaper (2 + 1); 5's search finds 2. Both ancestors link both labels; S4
#   drops 2 (higher id first, every label has two links) and keeps 1, which serves 5 as 6's partner:
#   Gt = {6, 1}, Gp = {5, 4, 3, 1}: P 1/4, R 1/2 (Algorithm 1: LCA 2, P 1/2, R 1/3).
# - s2_meeting_beyond_d: 1 > 2 > 3, 1 > 4 > 5; T = {3}, P = {5}; d = 1: no common node within one edge: they
#   meet at -1 with their whole paths, Gt = {3, 2, -1}, Gp = {5, 4, -1}: 1/3 (the paper's ⊥ alone: 1/2).
# - s0_drop_distance: 1 > 2 > 3 > 4, 1 > 5; T = {1, 4}: 1 is 3 edges above 4, kept at d = 1 (drop within
#   d + 1 = 2 edges), dropped from d = 2 on.
# - s2_first_hit_at_label: 1 > 2 > 3 > 4 > 5, 1 > 6; T = {2}, P = {5, 6}: 2's first hit is itself (on 5's
#   path), cost 3, although 6 is met at 1 for 2.
@pytest.mark.parametrize(("case", "hemkit_f", "greedy_f"), [
    ("s5_filing", 0.0, 0.5),
    ("s4_stop_early", 2 * 1 * 0.4 / 1.4, None),
    ("s3_partner_served", 2 * 0.25 * 0.5 / 0.75, 2 * 0.5 / 3 / (0.5 + 1 / 3)),
])
def test_selection_through_the_metrics(fixtures_dir, case, hemkit_f, greedy_f):
    """``lca_graph="hemkit"`` where LCA measures are: the hand derivations above, through ``lca_f1`` on the
    same taxonomy (its parentless nodes under a virtual root, HEMKit's dummy root); Algorithm 1
    (``"greedy"``) differs where noted."""
    folder = fixtures_dir / "hemkit" / case
    pairs = [line.split() for line in (folder / "hierarchy.txt").read_text().splitlines()]
    y_true = [(folder / "gold.txt").read_text().split()]
    y_pred = [(folder / "pred.txt").read_text().split()]
    options = {"include_root": True, "max_distance": 100000, "average": "macro"}
    assert lca_f1(y_true, y_pred, pairs, lca_graph="hemkit", **options) == pytest.approx(hemkit_f, abs=1e-12)
    if greedy_f is not None:
        assert lca_f1(y_true, y_pred, pairs, lca_graph="greedy", **options) == pytest.approx(greedy_f, abs=1e-12)


def test_evaluate_lca_graph_hemkit(data_dir, capsys):
    """``hiersql evaluate --lca-graph hemkit`` on HEMKit's example, macro LCA measures with the root counted
    and max distance 4: HEMKit's LCA-P, LCA-R, LCA-F (EXAMPLE)."""
    example = data_dir / "hemkit-example"
    code = main(["evaluate", "--taxonomy", str(example / "cat_hier.txt"), "--truth", str(example / "Golden.txt"),
                 "--pred", f"sys={example / 'result.txt'}", "--labels-format", "lines", "--metrics",
                 "lca_precision,lca_recall,lca_f1", "--average", "macro", "--include-root", "--max-distance", "4",
                 "--lca-graph", "hemkit", "--format", "csv"])
    assert code == 0
    rows = [line.split(",") for line in capsys.readouterr().out.strip().splitlines()[1:]]
    values = {metric: float(value) for _, metric, _, value in rows}
    got = [values[m] for m in ("lca_precision", "lca_recall", "lca_f1")]
    assert got == pytest.approx(numbers(EXAMPLE[4])[3:], abs=1e-9)


@pytest.mark.parametrize("seed", sorted(RANDOM))
def test_random_dags(seed):
    """HEMKit's LCA-P/R/F means on random_dag(seed) (6-30 nodes, multiple parents, 3 instances of up to 6
    labels a side) at four distances: the pure selection of :mod:`hiersql.lca_hemkit`, means as HEMKit adds."""
    edges, instances = random_dag(seed)
    for max_distance, expected in zip(RANDOM_DISTANCES, RANDOM[seed], strict=True):
        lca = HemkitLCA(hemkit_parents(edges), max_distance, max_distance + 1)
        rows = []
        for gold, pred in instances:
            gt, gp = lca.graphs(gold, pred)
            both = len(gt & gp)
            p, r = both / len(gp), both / len(gt)
            rows.append((p, r, 2 * p * r / (p + r) if p or r else 0.0))
        means = [line_mean(row[k] for row in rows) for k in range(3)]
        assert means == pytest.approx(numbers(expected), abs=1e-9), max_distance


@pytest.mark.parametrize("max_distance", MESH_DISTANCES)
def test_mesh(data_dir, tmp_path, max_distance):
    """MeSH with 2,000 synthetic instances (mesh_instances: seed 16): HEMKit's six numbers. HEMKit's graphs
    have other sizes than Algorithm 1's (``lca_graph="greedy"``) on 888, 814 and 558 of these instances at
    d = 2, 4 and 100000: the rules are at work on real data. (The 20,000 instances of benchmarks/bench_hemkit.py
    match too, see docs/hemkit.md; 2,000 keep the test within seconds.)"""
    mesh = data_dir / "mesh" / "mesh_hierarchy_int.txt"
    files = write_mesh(tmp_path, mesh)
    assert mesh_instances(mesh)[0][0] == (tmp_path / "gold.txt").read_text().splitlines()[0]
    result = hemkit(*files, max_distance, 5)
    assert result.instances == 2000
    assert six(result) == pytest.approx(numbers(MESH[max_distance]), abs=1e-9)


# std::sort of libstdc++ (g++ 12.2, -O2) on {key, index} structs compared by key, printing the indices: the
# order HEMKit leaves its candidate pairs of equal id sums in. Keys: random.Random(7), randint(0, 3) x 20,
# randint(0, 5) x 40, randint(0, 2) x 100, in that order.
CXX_SORTED = [
    "18 17 3 4 5 15 7 9 10 13 19 14 8 1 6 0 12 11 16 2",
    "33 3 31 28 7 9 22 16 35 8 26 11 21 14 18 27 12 39 13 36 6 10 34 2 32 4 29 5 15 24 23 38 19 17 37 20 30 25 0 1",
    "95 78 31 29 62 79 26 84 24 65 93 21 20 94 42 67 43 74 48 72 49 6 7 98 9 10 97 70 96 69 81 80 85 52 83 1 56"
    " 57 59 61 63 64 77 68 71 76 75 45 0 3 4 5 12 14 15 17 18 23 25 27 28 92 90 34 35 89 37 39 87 41 44 91 88 82"
    " 86 99 38 2 8 11 13 16 19 22 30 32 33 36 73 40 46 47 50 51 53 54 55 58 60 66",
]


def test_cxx_sort_is_libstdcxx_sort():
    import random

    import numpy as np

    rng = random.Random(7)
    keys = [[rng.randint(0, 3) for _ in range(20)], [rng.randint(0, 5) for _ in range(40)],
            [rng.randint(0, 2) for _ in range(100)]]
    for case, expected in zip(keys, CXX_SORTED, strict=True):
        assert cxx_sort_order(np.array(case, np.int64)).tolist() == [int(x) for x in expected.split()]


def test_graphs_on_names(fixtures_dir):
    """``lca.graphs`` with ``lca_graph="hemkit"``: the node names of the graphs derived by hand above for
    s4_stop_early (6 gets no path) and s2_meeting_beyond_d at d = 1 (HEMKit's marker -1 under the name of the
    virtual ancestor beyond the distance)."""
    from hiersql.evaluator import make_options
    from hiersql.hemkit import hemkit_store
    from hiersql.metrics import lca

    for case, max_distance, expected in (
        ("s4_stop_early", 100000, {"t": {"3", "4", "6", "1", "2"}, "p": {"2", "1"}}),
        ("s2_meeting_beyond_d", 1, {"t": {"3", "2", -1}, "p": {"5", "4", -1}}),
    ):
        folder = fixtures_dir / "hemkit" / case
        store = hemkit_store(folder / "hierarchy.txt", folder / "gold.txt", folder / "pred.txt", max_distance)
        try:
            beyond = lca.beyond_name(store)
            got = lca.graphs(store, make_options(lca_graph="hemkit", max_distance=max_distance))
        finally:
            store.close()
        named = {side: {beyond if v == -1 else v for v in nodes} for side, nodes in expected.items()}
        assert got == {("pred", "1"): named}


def test_hemkit_command_runs_its_own_plan(data_dir):
    """The HEMKit command runs ``lca.HEMKIT_PLAN`` (HEMKit's graphs, then ``lca_instance``) and none of the SQL
    stages the other LCA selections need: after it, the store holds those two tables and no ``lca_labels``,
    ``lca_pair_meetings`` or ``lca_open_*``; the numbers are HEMKit's (EXAMPLE, d = 4)."""
    from hiersql.hemkit import hemkit_scores, hemkit_store
    from hiersql.metrics import lca

    assert [getattr(step, "name", getattr(step, "query", None)) for step in lca.HEMKIT_PLAN.steps] == \
        ["hemkit_graphs", "lca_instance"]
    assert lca.HEMKIT_GRAPHS in lca.PLAN.steps  # one step object, two plans
    example = data_dir / "hemkit-example"
    store = hemkit_store(example / "cat_hier.txt", example / "Golden.txt", example / "result.txt", 4)
    try:
        result = hemkit_scores(store, 4)
        tables = {name for (name,) in store.con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()}
    finally:
        store.close()
    assert six(result) == pytest.approx(numbers(EXAMPLE[4]), abs=1e-9)
    assert {"lca_graph_counts", "lca_instance"} <= tables
    assert not {t for t in tables if t.startswith(("lca_labels", "lca_pair", "lca_open", "lca_options"))}
