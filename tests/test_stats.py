"""hiersql.analyses.stats against SciPy (binomtest, wilcoxon, bootstrap, permutation_test, kendalltau, spearmanr) and
against hand computations."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sp

from hiersql.analyses import stats


def _matrix(n: int, s: int, seed: int, levels: int | None = None) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if levels:
        return rng.integers(0, levels, (n, s)) / levels  # many ties and zero differences
    return rng.random((n, s)) + np.arange(s) * 0.05


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize("n", [1, 5, 12])
def test_sign_test_exact_matches_binomtest(n, alternative):
    k = np.arange(n + 1)
    _, p = stats.sign_test_p(k, np.full(n + 1, n), alternative)
    expected = [sp.binomtest(int(i), n, 0.5, alternative=alternative).pvalue for i in k]
    np.testing.assert_allclose(p, expected, rtol=1e-12)


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_sign_test_normal_approximation_is_kosmopoulos_eq6(alternative):
    # n = 40 > 12: Z = (k - 0.5 n) / (0.5 sqrt(n)); k = 27 -> Z = 7 / (0.5 * sqrt(40)) = 2.2136
    z, p = stats.sign_test_p(np.array([27]), np.array([40]), alternative)
    assert z[0] == pytest.approx(7 / (0.5 * np.sqrt(40)))
    tail = {"greater": sp.norm.sf(z[0]), "less": sp.norm.cdf(z[0]), "two-sided": 2 * sp.norm.sf(abs(z[0]))}
    assert p[0] == pytest.approx(tail[alternative], rel=1e-12)


def test_sign_test_n_zero_is_one():
    z, p = stats.sign_test_p(np.array([0]), np.array([0]))
    assert np.isnan(z[0]) and p[0] == 1.0


def test_micro_sign_test_counts_every_pair():
    values = pd.DataFrame({"x": [1, 0.5, 0.2, 0.9], "y": [0.5, 0.5, 0.3, 0.1], "z": [0, 0, 0, 0]})
    out = stats.micro_sign_test(values)
    assert list(zip(out.system_a, out.system_b, strict=True)) == [("x", "y"), ("x", "z"), ("y", "z")]
    # x vs y: differ on instances 0, 2, 3; x higher on 0 and 3
    assert out.loc[0, ["n", "k"]].tolist() == [3, 2]
    assert out.loc[0, "p_value"] == pytest.approx(sp.binomtest(2, 3).pvalue)
    assert out.loc[1, ["n", "k"]].tolist() == [4, 4]
    assert out.loc[2, ["n", "k"]].tolist() == [4, 4]


def test_macro_sign_test_on_categories_matches_binomtest():
    per_label = _matrix(30, 3, 7)  # 30 categories: normal approximation
    out = stats.macro_sign_test(per_label, alternative="greater")
    d = per_label[:, 0] - per_label[:, 1]
    k, n = int((d > 0).sum()), int((d != 0).sum())
    z = (k - 0.5 * n) / (0.5 * np.sqrt(n))
    assert out.loc[0, "p_value"] == pytest.approx(sp.norm.sf(z))
    # below 13 categories: exact
    small = stats.macro_sign_test(per_label[:9], alternative="greater")
    d = per_label[:9, 1] - per_label[:9, 2]
    assert small.loc[2, "p_value"] == pytest.approx(
        sp.binomtest(int((d > 0).sum()), int((d != 0).sum()), alternative="greater").pvalue)


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize("n", [8, 30, 50])
def test_wilcoxon_exact_matches_scipy(n, alternative):
    values = _matrix(n, 4, n)
    out = stats.wilcoxon_test(values, alternative)
    for row in out.itertuples():
        ref = sp.wilcoxon(values[:, row.system_a], values[:, row.system_b], alternative=alternative)
        assert row.statistic == pytest.approx(ref.statistic)
        assert row.p_value == pytest.approx(ref.pvalue, rel=1e-9)


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize("n", [20, 400])
def test_wilcoxon_ties_and_zeros_match_scipy_asymptotic(n, alternative):
    values = _matrix(n, 4, 3, levels=6)
    out = stats.wilcoxon_test(values, alternative)
    for row in out.itertuples():
        a, b = values[:, row.system_a], values[:, row.system_b]
        ref = sp.wilcoxon(a, b, alternative=alternative, method="asymptotic", zero_method="wilcox")
        assert row.n == int((a != b).sum())
        assert row.statistic == pytest.approx(ref.statistic)
        assert row.p_value == pytest.approx(ref.pvalue, rel=1e-9)


def test_wilcoxon_large_no_ties_uses_normal_like_scipy():
    values = _matrix(300, 3, 11)
    out = stats.wilcoxon_test(values)
    ref = sp.wilcoxon(values[:, 0], values[:, 2])  # n > 50: SciPy's auto is the approximation
    assert out.loc[1, "p_value"] == pytest.approx(ref.pvalue, rel=1e-9)


def test_wilcoxon_all_equal_is_one():
    out = stats.wilcoxon_test(np.ones((5, 2)))
    assert out.loc[0, "p_value"] == 1.0 and out.loc[0, "n"] == 0


def test_rankdata_matches_scipy():
    x = np.array([[3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5]], dtype=float)
    np.testing.assert_array_equal(stats.rankdata(x, axis=1), sp.rankdata(x, axis=1))


def test_bootstrap_intervals_match_scipy_percentile():
    values = _matrix(60, 3, 5)
    res = stats.paired_bootstrap(values, n_resamples=500, seed=42, confidence=0.9)
    for s in range(3):
        ref = sp.bootstrap((values[:, s],), np.mean, n_resamples=500, rng=np.random.default_rng(42),
                           method="percentile", confidence_level=0.9, vectorized=True)
        row = res.intervals.iloc[s]
        assert row.value == pytest.approx(values[:, s].mean())
        assert row.ci_low == pytest.approx(ref.confidence_interval.low, rel=1e-12)
        assert row.ci_high == pytest.approx(ref.confidence_interval.high, rel=1e-12)


def test_bootstrap_ratio_and_difference_match_scipy_paired():
    rng = np.random.default_rng(1)
    den = rng.integers(1, 6, (80, 2)).astype(float)
    num = np.minimum(den, rng.integers(0, 6, (80, 2)))
    res = stats.paired_bootstrap(num, den, n_resamples=400, seed=3)

    def difference(n0, n1, d0, d1, axis=-1):
        return n0.sum(axis) / d0.sum(axis) - n1.sum(axis) / d1.sum(axis)

    ref = sp.bootstrap((num[:, 0], num[:, 1], den[:, 0], den[:, 1]), difference, paired=True,
                       n_resamples=400, rng=np.random.default_rng(3), method="percentile", vectorized=True)
    row = res.pairs.iloc[0]
    assert row.difference == pytest.approx(num[:, 0].sum() / den[:, 0].sum() - num[:, 1].sum() / den[:, 1].sum())
    assert row.ci_low == pytest.approx(ref.confidence_interval.low, rel=1e-12)
    assert row.ci_high == pytest.approx(ref.confidence_interval.high, rel=1e-12)
    # the p-value by its definition, from SciPy's bootstrap distribution
    dist = ref.bootstrap_distribution
    expected = (1 + (np.abs(dist - row.difference) >= abs(row.difference)).sum()) / 401
    assert row.p_value == pytest.approx(expected)


def test_bootstrap_is_seeded():
    values = _matrix(50, 4, 2)
    one = stats.paired_bootstrap(values, n_resamples=200, seed=9)
    two = stats.paired_bootstrap(values, n_resamples=200, seed=9)
    pd.testing.assert_frame_equal(one.pairs, two.pairs)
    assert not one.pairs.equals(stats.paired_bootstrap(values, n_resamples=200, seed=10).pairs)


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_permutation_exact_matches_scipy(alternative):
    values = _matrix(9, 3, 4)  # 2^9 = 512 <= 1000: all sign patterns
    out = stats.paired_permutation_test(values, n_resamples=1000, alternative=alternative)
    for row in out.itertuples():
        ref = sp.permutation_test((values[:, row.system_a], values[:, row.system_b]),
                                  lambda x, y, axis: np.mean(x, axis=axis) - np.mean(y, axis=axis),
                                  permutation_type="samples", vectorized=True, n_resamples=1000,
                                  alternative=alternative)
        assert row.p_value == pytest.approx(ref.pvalue, rel=1e-12)


def test_permutation_ratio_exact_by_enumeration():
    rng = np.random.default_rng(8)
    den = rng.integers(1, 4, (7, 2)).astype(float)
    num = np.minimum(den, rng.integers(0, 4, (7, 2)))
    out = stats.paired_permutation_test(num, den, n_resamples=200)
    observed = num[:, 0].sum() / den[:, 0].sum() - num[:, 1].sum() / den[:, 1].sum()
    null = []
    for swap in itertools.product([False, True], repeat=7):
        s = np.array(swap)
        na, nb = np.where(s, num[:, 1], num[:, 0]), np.where(s, num[:, 0], num[:, 1])
        da, db = np.where(s, den[:, 1], den[:, 0]), np.where(s, den[:, 0], den[:, 1])
        null.append(na.sum() / da.sum() - nb.sum() / db.sum())
    null = np.array(null)
    p = 2 * min((null >= observed - 1e-12).mean(), (null <= observed + 1e-12).mean())
    assert out.loc[0, "p_value"] == pytest.approx(min(p, 1.0))


def test_permutation_random_close_to_scipy():
    values = _matrix(200, 2, 6)
    values[:, 1] = values[:, 0] + np.random.default_rng(0).normal(0.02, 0.2, 200)
    out = stats.paired_permutation_test(values, n_resamples=20000, seed=1)
    ref = sp.permutation_test((values[:, 0], values[:, 1]),
                              lambda x, y, axis: np.mean(x, axis=axis) - np.mean(y, axis=axis),
                              permutation_type="samples", vectorized=True, n_resamples=20000,
                              rng=np.random.default_rng(2))
    assert out.loc[0, "p_value"] == pytest.approx(ref.pvalue, abs=0.015)
    assert 0.0 < out.loc[0, "p_value"] < 1.0


def test_holm_by_hand():
    # sorted 0.01, 0.02, 0.04, 0.5 (m = 4): 0.04, 0.06, 0.08, 0.5; NaN stays out of the family
    adjusted = stats.holm([0.04, 0.01, np.nan, 0.5, 0.02])
    np.testing.assert_allclose(adjusted, [0.08, 0.04, np.nan, 0.5, 0.06])
    # monotone: a later raw p-value whose scaled value is smaller takes the running maximum
    np.testing.assert_allclose(stats.holm([0.03, 0.031]), [0.06, 0.06])


def test_kendall_and_spearman_match_scipy():
    rng = np.random.default_rng(12)
    for _ in range(20):
        x, y = rng.integers(0, 5, 9), rng.integers(0, 5, 9)
        assert stats.kendall_tau(x, y) == pytest.approx(sp.kendalltau(x, y).statistic)
        assert stats.spearman_rho(x, y) == pytest.approx(sp.spearmanr(x, y).statistic)


def test_rank_correlations_matrix():
    scores = pd.DataFrame({"m1": [0.9, 0.8, 0.7, 0.1], "m2": [0.5, 0.6, 0.4, 0.0], "c": [1, 1, 1, 1]},
                          index=list("abcd"))
    tau = stats.rank_correlations(scores)
    assert tau.loc["m1", "m2"] == pytest.approx(sp.kendalltau(scores.m1, scores.m2).statistic)
    assert tau.loc["m2", "m1"] == tau.loc["m1", "m2"]
    assert tau.loc["m1", "m1"] == 1.0 and np.isnan(tau.loc["c", "c"]) and np.isnan(tau.loc["m1", "c"])
    rho = stats.rank_correlations(scores, "spearman")
    assert rho.loc["m1", "m2"] == pytest.approx(sp.spearmanr(scores.m1, scores.m2).statistic)


def test_bad_shapes():
    with pytest.raises(ValueError, match="2-d"):
        stats.micro_sign_test(np.ones(3))
    with pytest.raises(ValueError, match="missing"):  # the bootstrap sums: no value left out
        stats.paired_bootstrap(np.array([[1.0, np.nan]]))
    with pytest.raises(ValueError, match="alternative"):
        stats.micro_sign_test(np.ones((2, 2)), alternative="both")


def test_sign_and_wilcoxon_leave_out_items_without_a_value():
    # zero_division=nan: an item whose value one system lacks is left out of that pair only
    values = _matrix(40, 3, 5, levels=6)
    values[[1, 7, 20], 0] = np.nan
    values[[7, 33], 2] = np.nan
    sign, wilcoxon = stats.micro_sign_test(values), stats.wilcoxon_test(values)
    for row, w in zip(sign.itertuples(), wilcoxon.itertuples(), strict=True):
        a, b = values[:, row.system_a], values[:, row.system_b]
        kept = ~np.isnan(a) & ~np.isnan(b)
        d = a[kept] - b[kept]
        assert (row.n, row.k) == (int((d != 0).sum()), int((d > 0).sum()))
        z = (row.k - 0.5 * row.n) / (0.5 * np.sqrt(row.n))  # n > 12: Yang & Liu's approximation
        assert row.n > 12 and row.p_value == pytest.approx(2 * sp.norm.sf(abs(z)))
        ref = sp.wilcoxon(a, b, nan_policy="omit", method="asymptotic", zero_method="wilcox")
        assert w.n == int((d != 0).sum())
        assert w.statistic == pytest.approx(ref.statistic)
        assert w.p_value == pytest.approx(ref.pvalue, rel=1e-9)


def test_rank_correlations_leave_out_systems_without_a_value():
    scores = pd.DataFrame({"m1": [0.9, 0.5, np.nan, 0.1, 0.7], "m2": [0.8, 0.6, 0.3, 0.2, 0.1],
                           "m3": [np.nan, 1.0, 1.0, 1.0, np.nan]})
    out = stats.rank_correlations(scores, "kendall")
    both = scores["m1"].notna()
    assert out.loc["m1", "m2"] == pytest.approx(sp.kendalltau(scores["m1"][both], scores["m2"][both]).statistic)
    assert np.isnan(out.loc["m3", "m3"])  # constant over the systems that have a value
    assert out.loc["m1", "m1"] == 1.0
