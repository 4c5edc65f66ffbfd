"""Paired significance tests, bootstrap confidence intervals and rank correlations for comparing systems.

Every function takes the values of several systems on the same items, a matrix ``values[i, s]`` (items as
rows, systems as columns: a NumPy array or a DataFrame whose columns name the systems), and treats all
``S (S - 1) / 2`` pairs of systems at once. The items are instances (the per-instance values of a measure,
:meth:`hiersql.Evaluator.per_instance`) or, for the macro sign test, categories. The module needs NumPy and
pandas only; the tests check every value against SciPy.

A measure whose value is a ratio of sums over instances (micro-averaged hP, hR, hF) is given as two matrices,
``numerator`` and ``denominator``: its value is ``Σ_i num[i, s] / Σ_i den[i, s]``. A measure that is a mean of
per-instance values is ``numerator = values`` with ``denominator = None`` (a column of ones). The bootstrap and
the permutation test resample that statistic, so that they test the value the measure reports.

References
----------
Yang, Y., Liu, X. (1999). A re-examination of text categorization methods. SIGIR '99 (micro s-test, macro
S-test).
Kosmopoulos, A., Partalas, I., Gaussier, E., Paliouras, G., Androutsopoulos, I. (2015). Evaluation measures for
hierarchical classification: a unified view and novel approaches. Data Min. Knowl. Disc. 29, §4.2.
Wilcoxon, F. (1945). Individual comparisons by ranking methods. Biometrics Bulletin 1(6).
Efron, B., Tibshirani, R. (1993). An Introduction to the Bootstrap. Chapman & Hall, §13 (percentile
intervals), §16.4 (bootstrap test of a paired difference).
Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scand. J. Statist. 6(2).
Kendall, M. G. (1938, 1945). A new measure of rank correlation; The treatment of ties in ranking problems.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

ALTERNATIVES = ("two-sided", "greater", "less")
SIGN_TEST_EXACT_UP_TO = 12  # Yang & Liu: the normal approximation for n > 12
WILCOXON_EXACT_UP_TO = 50  # as SciPy: the exact distribution for n <= 50 without ties or zeros


# ------------------------------------------------------------------------------------------------- helpers
def _matrix(values, name: str = "values", missing: bool = False) -> tuple[np.ndarray, list]:
    """``(items x systems float array, system names)`` from an array or a DataFrame; NaN (a value that is
    not defined) only where ``missing``."""
    if hasattr(values, "columns"):
        names = list(values.columns)
        array = values.to_numpy(dtype=float)
    else:
        array = np.asarray(values, dtype=float)
        names = list(range(array.shape[1])) if array.ndim == 2 else []
    if array.ndim != 2:
        raise ValueError(f"{name} must be a 2-d matrix (items x systems), got shape {array.shape}")
    if not missing and np.isnan(array).any():
        raise ValueError(f"{name} has missing values; drop the items a system has no value for first")
    return array, names


def pairs(n_systems: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices ``(a, b)`` of every pair of systems with ``a < b``, in lexicographic order."""
    a, b = np.triu_indices(n_systems, k=1)
    return a, b


def _pair_frame(names: list, a: np.ndarray, b: np.ndarray, **columns) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame({"system_a": [names[i] for i in a], "system_b": [names[j] for j in b], **columns})


def _check_alternative(alternative: str) -> None:
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {ALTERNATIVES}, got {alternative!r}")


def normal_sf(z: np.ndarray) -> np.ndarray:
    """``P(Z >= z)`` of the standard normal distribution, ``erfc(z / √2) / 2``."""
    return 0.5 * np.vectorize(math.erfc, otypes=[float])(np.asarray(z, dtype=float) / math.sqrt(2.0))


def _normal_p(z: np.ndarray, alternative: str) -> np.ndarray:
    if alternative == "greater":
        return normal_sf(z)
    if alternative == "less":
        return normal_sf(-z)
    return np.minimum(1.0, 2.0 * normal_sf(np.abs(z)))


def _ranked_runs(values: np.ndarray, axis: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Average ranks along ``axis`` and the runs of equal values: ``(ranks, run_line, run_length)``, one
    entry per run with the index of its line (the flattened other axes) and its length. Vectorised: one
    sort of the whole array."""
    x = np.moveaxis(np.asarray(values, dtype=float), axis, -1)
    n = x.shape[-1]
    flat = x.reshape(-1, n)
    order = np.argsort(flat, axis=1, kind="stable")
    ordered = np.take_along_axis(flat, order, axis=1)
    starts = np.ones(ordered.shape, dtype=bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]  # a run starts where the value changes (or a line does)
    first = np.flatnonzero(starts.ravel())
    length = np.diff(np.r_[first, ordered.size])
    average = first % n + (length + 1) / 2.0  # mean of the 1-based positions of the run in its line
    ranks = np.empty_like(flat)
    np.put_along_axis(ranks, order, np.repeat(average, length).reshape(flat.shape), axis=1)
    return np.moveaxis(ranks.reshape(x.shape), -1, axis), first // n, length


def rankdata(values: np.ndarray, axis: int = 0) -> np.ndarray:
    """Ranks 1..n along ``axis``, ties getting the mean of the ranks they span (SciPy's ``"average"``)."""
    return _ranked_runs(values, axis)[0]


# ------------------------------------------------------------------------------------------------ sign tests
def sign_test_p(k: np.ndarray, n: np.ndarray, alternative: str = "two-sided",
                exact_up_to: int = SIGN_TEST_EXACT_UP_TO) -> tuple[np.ndarray, np.ndarray]:
    """p-values of the sign test: ``k`` successes out of ``n`` under ``H0: k ~ Bin(n, 1/2)``.

    For ``n <= exact_up_to`` the exact binomial tail; above, the normal approximation of Yang & Liu (1999)
    that Kosmopoulos et al. (2015, eq. 6) give::

        Z = (k - 0.5 n) / (0.5 √n)

    ``alternative="greater"`` is H1 ``p > 1/2`` (``P(X >= k)`` or ``1 - Φ(Z)``), ``"less"`` the other tail,
    ``"two-sided"`` twice the smaller tail (at most 1; equal to SciPy's ``binomtest`` as Bin(n, 1/2) is
    symmetric). ``n = 0`` gives ``p = 1``.

    Returns
    -------
    (z, p):
        ``Z`` (NaN where ``n = 0``) and the p-values, arrays shaped like ``k``.
    """
    _check_alternative(alternative)
    k = np.asarray(k, dtype=np.int64)
    n = np.asarray(n, dtype=np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(n > 0, (k - 0.5 * n) / (0.5 * np.sqrt(n)), np.nan)
    p = np.where(n > 0, _normal_p(np.nan_to_num(z), alternative), 1.0)
    small = (n > 0) & (n <= exact_up_to)
    if small.any():
        # cumulative Bin(m, 1/2) tables for m = 0 .. exact_up_to: cdf[m, j] = P(X <= j)
        cdf = np.array([[sum(math.comb(m, i) for i in range(j + 1)) / 2.0 ** m if j <= m else 1.0
                         for j in range(exact_up_to + 1)] for m in range(exact_up_to + 1)])
        ks, ns = k[small], n[small]
        upper = 1.0 - np.where(ks > 0, cdf[ns, np.maximum(ks - 1, 0)], 0.0)  # P(X >= k)
        lower = cdf[ns, ks]  # P(X <= k)
        exact = {"greater": upper, "less": lower,
                 "two-sided": np.minimum(1.0, 2.0 * np.minimum(upper, lower))}[alternative]
        p = p.copy()
        p[small] = exact
    return z, p


def _sign_test(values, alternative: str, exact_up_to: int) -> pd.DataFrame:
    x, names = _matrix(values, missing=True)
    a, b = pairs(x.shape[1])
    diff = x[:, a] - x[:, b]
    k = (diff > 0).sum(axis=0)
    n = ((diff != 0) & ~np.isnan(diff)).sum(axis=0)  # an item without a value of a or b is left out
    z, p = sign_test_p(k, n, alternative, exact_up_to)
    return _pair_frame(names, a, b, n=n, k=k, z=z, p_value=p)


def micro_sign_test(values, alternative: str = "two-sided",
                    exact_up_to: int = SIGN_TEST_EXACT_UP_TO) -> pd.DataFrame:
    """Micro sign test (s-test) of every pair of systems on per-instance values (Kosmopoulos et al. 2015
    §4.2, after Yang & Liu 1999).

    For systems ``a`` and ``b``, ``n`` is the number of instances where their values differ and ``k`` the
    number where ``a``'s value is higher; under H0 ``k ~ Bin(n, 1/2)`` (see :func:`sign_test_p` for the exact
    test and the normal approximation). Only which system is higher counts, not by how much. For a loss
    (lower is better) ``k`` counts the instances where ``a`` is worse: read ``"greater"`` as "a higher".
    An instance where either value is NaN (not defined: ``zero_division=nan``) is left out of that pair.

    Parameters
    ----------
    values:
        ``instances x systems`` per-instance values (array or DataFrame with one column per system).
    alternative:
        ``"two-sided"`` (default), ``"greater"`` (H1: ``a`` higher, the paper's one-sided test) or ``"less"``.
    exact_up_to:
        The largest ``n`` tested with the exact binomial distribution (Yang & Liu: 12).

    Returns
    -------
    DataFrame
        One row per pair: ``system_a, system_b, n, k, z, p_value``.
    """
    return _sign_test(values, alternative, exact_up_to)


def macro_sign_test(category_values, alternative: str = "two-sided",
                    exact_up_to: int = SIGN_TEST_EXACT_UP_TO) -> pd.DataFrame:
    """Macro sign test (S-test of Yang & Liu 1999) of every pair of systems on per-category values.

    The same binomial test as :func:`micro_sign_test`, but the items are the categories: ``n`` counts the
    categories where the two systems' values (e.g. per-label F1) differ, ``k`` those where ``a``'s is higher.
    It asks whether one system is better on most categories, rare ones weighing as much as frequent ones.

    Parameters
    ----------
    category_values:
        ``categories x systems`` per-category values (NaN: not defined, left out of the pairs it is in).
    alternative, exact_up_to:
        As in :func:`micro_sign_test`.

    Returns
    -------
    DataFrame
        One row per pair: ``system_a, system_b, n, k, z, p_value``.
    """
    return _sign_test(category_values, alternative, exact_up_to)


# --------------------------------------------------------------------------------------------------- Wilcoxon
def _wilcoxon_exact_counts(n: int) -> np.ndarray:
    """``counts[t]``: the number of subsets of ``{1..n}`` whose sum is ``t`` (the null distribution of the
    signed-rank statistic ``W+`` times ``2^n``)."""
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1.0
    for r in range(1, n + 1):
        counts[r:] = counts[r:] + counts[:-r].copy()
    return counts


def wilcoxon_test(values, alternative: str = "two-sided") -> pd.DataFrame:
    """Wilcoxon signed-rank test of every pair of systems on per-instance values (Wilcoxon 1945).

    For a pair, ``d_i = a_i - b_i``; zero differences are dropped (Wilcoxon's method), the ``n`` others are
    ranked by ``|d_i|`` (ties get their mean rank) and ``W+ = Σ_{d_i > 0} rank_i``. With ``n <= 50`` and no
    tied ``|d_i|`` the p-value comes from the exact null distribution of ``W+`` (all ``2^n`` sign patterns);
    otherwise from the normal approximation with the tie correction, without continuity correction::

        z = (W+ - n(n+1)/4) / sqrt(n(n+1)(2n+1)/24 - Σ_t (t³ - t)/48)

    (``t``: sizes of the groups of tied ``|d_i|``). This is SciPy's ``wilcoxon`` with ``zero_method="wilcox"``,
    except that for ``n <= 50`` with ties SciPy runs a permutation test where this uses the approximation.
    An item where either value is NaN (not defined: ``zero_division=nan``) is left out of that pair, as a
    zero difference is (SciPy's ``nan_policy="omit"``).

    Returns
    -------
    DataFrame
        One row per pair: ``system_a, system_b, n, w_plus, w_minus, statistic, p_value`` (``statistic`` is
        ``min(W+, W-)`` for the two-sided test and ``W+`` otherwise, as in SciPy); ``p_value = 1`` when all
        differences are zero.
    """
    _check_alternative(alternative)
    x, names = _matrix(values, missing=True)
    a, b = pairs(x.shape[1])
    d = np.nan_to_num(x[:, a] - x[:, b], nan=0.0)  # items x pairs; without a value: dropped as a zero is
    n_items = d.shape[0]
    count = (d != 0).sum(axis=0)
    # zero differences sort first as one run (|d| = -1); ranks among the others = rank - number of zeros
    absolute = np.where(d != 0, np.abs(d), -1.0)
    ranks, run_pair, run_length = _ranked_runs(absolute, axis=0)
    ranks = ranks - (n_items - count)
    w_plus = np.where(d > 0, ranks, 0.0).sum(axis=0)
    w_minus = np.where(d < 0, ranks, 0.0).sum(axis=0)
    # tie groups among the non-zero differences: every run but the zeros' (the first of a pair, when any)
    zero_run = np.r_[True, run_pair[1:] != run_pair[:-1]] & (n_items - count[run_pair] > 0)
    tied = np.where(zero_run, 0.0, run_length.astype(float) ** 3 - run_length)
    tie_sum = np.bincount(run_pair, weights=tied, minlength=len(a))
    with np.errstate(divide="ignore", invalid="ignore"):
        se = np.sqrt((count * (count + 1.0) * (2 * count + 1) - tie_sum / 2) / 24)
        z = (w_plus - count * (count + 1) / 4.0) / se
    p = np.where(count > 0, _normal_p(np.nan_to_num(z), alternative), 1.0)
    exact_tables: dict[int, np.ndarray] = {}
    for j in np.flatnonzero((count > 0) & (count <= WILCOXON_EXACT_UP_TO) & (tie_sum == 0)):
        n = int(count[j])
        counts = exact_tables.setdefault(n, _wilcoxon_exact_counts(n))
        pmf = counts / counts.sum()
        greater = pmf[int(math.floor(w_plus[j])):].sum()  # P(W+ >= w)
        less = pmf[:int(math.ceil(w_plus[j])) + 1].sum()  # P(W+ <= w)
        p[j] = {"greater": greater, "less": less, "two-sided": min(1.0, 2.0 * min(greater, less))}[alternative]
    statistic = np.minimum(w_plus, w_minus) if alternative == "two-sided" else w_plus
    return _pair_frame(names, a, b, n=count.astype(np.int64), w_plus=w_plus, w_minus=w_minus,
                       statistic=statistic, p_value=p)


# ------------------------------------------------------------------------------------- bootstrap, permutation
def _ratio_inputs(numerator, denominator) -> tuple[np.ndarray, np.ndarray, list]:
    num, names = _matrix(numerator, "numerator")
    if denominator is None:
        den = np.ones_like(num)
    else:
        den, _ = _matrix(denominator, "denominator")
        if den.shape != num.shape:
            raise ValueError(f"denominator has shape {den.shape}, numerator {num.shape}")
    if num.shape[0] == 0:
        raise ValueError("no items to resample")
    return num, den, names


def ratio(num_sums: np.ndarray, den_sums: np.ndarray, zero_division: float = 0.0) -> np.ndarray:
    """``num_sums / den_sums`` elementwise, ``zero_division`` where the denominator is 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den_sums != 0, num_sums / np.where(den_sums != 0, den_sums, 1.0), zero_division)


class BootstrapResult(NamedTuple):
    """The two tables of :func:`paired_bootstrap`."""

    intervals: pd.DataFrame
    """One row per system: ``system, value, ci_low, ci_high``."""
    pairs: pd.DataFrame
    """One row per pair: ``system_a, system_b, difference, ci_low, ci_high, p_value``."""


def resample_counts(n_items: int, n_resamples: int, seed: int | None) -> np.ndarray:
    """``counts[r, i]``: how often item ``i`` is drawn in bootstrap resample ``r`` (``n_items`` draws with
    replacement each). The draws are ``numpy.random.default_rng(seed).integers(0, n, (n_resamples, n))``,
    the indices SciPy's ``bootstrap`` draws from the same generator."""
    rng = np.random.default_rng(seed)
    index = rng.integers(0, n_items, (n_resamples, n_items))
    offset = (np.arange(n_resamples, dtype=np.int64) * n_items)[:, None]
    return np.bincount((index + offset).ravel(), minlength=n_resamples * n_items).reshape(
        n_resamples, n_items).astype(float)


def paired_bootstrap(numerator, denominator=None, n_resamples: int = 1000, seed: int | None = 0,
                     confidence: float = 0.95, zero_division: float = 0.0, *,
                     counts: np.ndarray | None = None) -> BootstrapResult:
    """Paired bootstrap over items: confidence intervals of every system's value and of every pair's
    difference, and a two-sided p-value per pair (Efron & Tibshirani 1993).

    Resample ``r`` draws ``n`` items with replacement (the same items for every system: paired); with
    ``c_r[i]`` the number of times item ``i`` is drawn, the system's value is
    ``θ*_r = Σ_i c_r[i] num[i] / Σ_i c_r[i] den[i]``, computed for all resamples and systems as one matrix
    product. The interval is the percentile interval ``[q_(α/2), q_(1-α/2)]`` of the ``θ*_r``
    (``α = 1 - confidence``; linear interpolation between order statistics, as ``numpy.percentile``), and the
    same for the differences ``δ*_r = θ*_{a,r} - θ*_{b,r}``. The p-value tests ``H0: δ = 0`` with the
    bootstrap distribution shifted to the null (Efron & Tibshirani §16.4)::

        p = (1 + #{r : |δ*_r - δ̂| >= |δ̂|}) / (N + 1)

    Parameters
    ----------
    numerator, denominator:
        ``items x systems`` matrices; ``denominator=None`` makes the statistic the mean of ``numerator``.
    n_resamples:
        ``N``, the number of resamples.
    seed:
        Seed of ``numpy.random.default_rng``: the same seed gives the same result.
    confidence:
        Coverage of the intervals.
    zero_division:
        The value of a ratio whose resampled denominator is 0.
    counts:
        ``resample_counts(n_items, n_resamples, seed)`` computed once for several measures on the same items
        (then ``n_resamples`` and ``seed`` are not used).

    Returns
    -------
    BootstrapResult
        ``intervals`` (one row per system) and ``pairs`` (one row per pair).
    """
    import pandas as pd

    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    num, den, names = _ratio_inputs(numerator, denominator)
    if counts is None:
        counts = resample_counts(num.shape[0], n_resamples, seed)
    n_resamples = len(counts)
    theta = ratio(num.sum(axis=0), den.sum(axis=0), zero_division)
    # resamples x systems; for a mean every resample has n items (no product with a column of ones)
    den_star = counts @ den if denominator is not None else np.full((len(counts), num.shape[1]), num.shape[0])
    theta_star = ratio(counts @ num, den_star, zero_division)
    tails = [50 * (1 - confidence), 100 - 50 * (1 - confidence)]
    low, high = np.percentile(theta_star, tails, axis=0)
    intervals = pd.DataFrame({"system": names, "value": theta, "ci_low": low, "ci_high": high})
    a, b = pairs(num.shape[1])
    delta = theta[a] - theta[b]
    delta_star = theta_star[:, a] - theta_star[:, b]
    d_low, d_high = np.percentile(delta_star, tails, axis=0)
    extreme = (np.abs(delta_star - delta) >= np.abs(delta) - _tolerance(delta)).sum(axis=0)
    p = (1 + extreme) / (n_resamples + 1)
    return BootstrapResult(intervals, _pair_frame(names, a, b, difference=delta, ci_low=d_low, ci_high=d_high,
                                                  p_value=p))


def _tolerance(observed: np.ndarray) -> np.ndarray:
    """Slack for comparing resampled statistics with the observed one (SciPy: 100 machine epsilons)."""
    return np.abs(observed) * np.finfo(float).eps * 100


def permutation_swaps(n_items: int, n_resamples: int, seed: int | None) -> tuple[np.ndarray, bool]:
    """``(swaps, exact)``: ``swaps[r, i] = 1`` where permutation ``r`` swaps the two systems on item ``i``.
    All ``2^n`` patterns when ``2^n <= n_resamples`` (``exact``), else ``n_resamples`` random ones from
    ``numpy.random.default_rng(seed)``."""
    import itertools

    if n_items < 63 and 2 ** n_items <= n_resamples:
        return np.array(list(itertools.product((0.0, 1.0), repeat=n_items))).reshape(-1, n_items), True
    return np.random.default_rng(seed).integers(0, 2, (n_resamples, n_items)).astype(float), False


def paired_permutation_test(numerator, denominator=None, n_resamples: int = 1000, seed: int | None = 0,
                            alternative: str = "two-sided", zero_division: float = 0.0, *,
                            swaps: tuple[np.ndarray, bool] | None = None) -> pd.DataFrame:
    """Paired permutation (randomisation) test of every pair of systems on the measure's statistic.

    Under H0 the two systems' outputs are exchangeable on every item: a permutation swaps ``a``'s and ``b``'s
    values (numerator and denominator together) on a random subset of the items and recomputes
    ``δ* = θ*_a - θ*_b`` (``θ = Σ num / Σ den``). With ``2^n <= n_resamples`` all ``2^n`` swaps are
    enumerated (an exact test); otherwise ``n_resamples`` random swaps are drawn and the p-value counts the
    observed assignment (Phipson & Smyth 2010)::

        p_greater = (#{δ* >= δ̂} + 1) / (N + 1),    p_less = (#{δ* <= δ̂} + 1) / (N + 1)
        p_two-sided = min(1, 2 · min(p_greater, p_less))

    (without the ``+ 1`` for the exact test), as SciPy's ``permutation_test(permutation_type="samples")``.
    ``swaps`` may pass :func:`permutation_swaps` computed once for several measures on the same items.

    Returns
    -------
    DataFrame
        One row per pair: ``system_a, system_b, difference, p_value``.
    """
    _check_alternative(alternative)
    num, den, names = _ratio_inputs(numerator, denominator)
    a, b = pairs(num.shape[1])
    swaps, exact = permutation_swaps(num.shape[0], n_resamples, seed) if swaps is None else swaps
    num_a, num_b, den_a, den_b = num[:, a], num[:, b], den[:, a], den[:, b]
    delta = ratio(num_a.sum(0), den_a.sum(0), zero_division) - ratio(num_b.sum(0), den_b.sum(0), zero_division)
    # a swapped item moves a's values to b and b's to a: Σ over items of a + swap · (b - a)
    shift_num = swaps @ (num_b - num_a)
    shift_den = swaps @ (den_b - den_a) if denominator is not None else 0.0  # a mean: both sides keep n items
    delta_star = (ratio(num_a.sum(0) + shift_num, den_a.sum(0) + shift_den, zero_division)
                  - ratio(num_b.sum(0) - shift_num, den_b.sum(0) - shift_den, zero_division))
    adjustment = 0 if exact else 1
    total = len(swaps) + adjustment
    slack = _tolerance(delta)
    greater = ((delta_star >= delta - slack).sum(0) + adjustment) / total
    less = ((delta_star <= delta + slack).sum(0) + adjustment) / total
    p = {"greater": greater, "less": less, "two-sided": 2 * np.minimum(greater, less)}[alternative]
    return _pair_frame(names, a, b, difference=delta, p_value=np.clip(p, 0.0, 1.0))


# ------------------------------------------------------------------------------------- multiple comparisons
def holm(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (Holm 1979) of a family of ``m`` tests.

    With the p-values sorted ascending, ``p_(1) <= ... <= p_(m)``, the adjusted value of the ``j``-th is
    ``max_{i <= j} min(1, (m - i + 1) p_(i))``; rejecting where the adjusted value is below ``α`` controls the
    family-wise error rate at ``α``. NaN p-values are left out of the family and stay NaN.
    """
    p = np.asarray(p_values, dtype=float)
    out = np.full_like(p, np.nan)
    keep = ~np.isnan(p)
    values = p[keep]
    m = len(values)
    if m == 0:
        return out
    order = np.argsort(values, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * values[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(scaled)
    out[keep] = adjusted
    return out


# ------------------------------------------------------------------------------------------ rank correlation
def kendall_tau(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Kendall's τ-b between two scorings of the same systems (Kendall 1938, 1945; SciPy's default)::

        τ_b = (C - D) / sqrt((C + D + T_x) (C + D + T_y))

    over all pairs of systems: ``C`` concordant, ``D`` discordant, ``T_x`` tied in ``x`` only, ``T_y`` tied in
    ``y`` only (pairs tied in both count nowhere). NaN when one side is constant."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    i, j = pairs(len(x))
    sx, sy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
    concordant_minus_discordant = float((sx * sy).sum())
    n_x, n_y = float((sx != 0).sum()), float((sy != 0).sum())  # pairs not tied in x (C + D + T_y), in y
    if n_x == 0 or n_y == 0:
        return float("nan")
    return concordant_minus_discordant / math.sqrt(n_x * n_y)


def spearman_rho(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Spearman's ρ: the Pearson correlation of the average ranks of ``x`` and ``y``. NaN when one side is
    constant."""
    rx, ry = rankdata(np.asarray(x, dtype=float)), rankdata(np.asarray(y, dtype=float))
    rx, ry = rx - rx.mean(), ry - ry.mean()
    norm = math.sqrt(float((rx ** 2).sum() * (ry ** 2).sum()))
    return float((rx * ry).sum()) / norm if norm else float("nan")


def rank_correlations(scores: pd.DataFrame, method: str = "kendall") -> pd.DataFrame:
    """The matrix of rank correlations between the system rankings of several measures.

    Parameters
    ----------
    scores:
        One row per system, one column per measure, oriented so that higher is better (negate losses); a
        NaN (a value not defined) leaves that system out of the correlations of its measure.
    method:
        ``"kendall"`` (τ-b, :func:`kendall_tau`, as Kosmopoulos et al. Table 12) or ``"spearman"``
        (:func:`spearman_rho`).

    Returns
    -------
    DataFrame
        ``measures x measures``, symmetric, 1 on the diagonal (NaN for a constant measure, and for a pair that fewer
        than two systems both have).
    """
    import pandas as pd

    correlation = {"kendall": kendall_tau, "spearman": spearman_rho}.get(method)
    if correlation is None:
        raise ValueError(f"method must be 'kendall' or 'spearman', got {method!r}")
    columns = list(scores.columns)
    values = scores.to_numpy(dtype=float)
    constant = np.array([np.unique(v[~np.isnan(v)]).size < 2 for v in values.T], dtype=bool)
    out = np.diag(np.where(constant, np.nan, 1.0))
    for i, j in zip(*pairs(len(columns)), strict=True):
        both = ~np.isnan(values[:, i]) & ~np.isnan(values[:, j])
        # fewer than two systems with both values (a measure undefined for every system): no correlation
        out[i, j] = out[j, i] = correlation(values[both, i], values[both, j]) if both.sum() >= 2 else np.nan
    return pd.DataFrame(out, index=pd.Index(columns, name="measure"), columns=columns)
