"""Calibration of per-node scores per level of the taxonomy: Brier score, log loss, expected calibration
error with equal-width and equal-mass bins, and reliability diagrams.

A thin wrapper over ``calibration.sql`` (formulas in its header and in ``docs/scored_outputs.md``): each
scored (instance, node) row of ``predictions`` is a binary forecast of "the node is in the instance's
ancestor-augmented true set"; level 0 pools every level.

References
----------
Brier (1950), "Verification of forecasts expressed in terms of probability", Monthly Weather Review 78(1).
Naeini, Cooper, Hauskrecht (2015), "Obtaining well calibrated probabilities using Bayesian binning", AAAI.
Guo, Pleiss, Sun, Weinberger (2017), "On calibration of modern neural networks", ICML.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..measures import as_engine

if TYPE_CHECKING:
    import pandas as pd

    from ..engines import Engine
    from ..inputs.store import Store

STRATEGIES = ("uniform", "quantile")
EPS = float(np.finfo(np.float64).eps)  # scikit-learn's log_loss clips probabilities to [eps, 1 - eps]


def _params(n_bins: int) -> dict[str, object]:
    if int(n_bins) != n_bins or n_bins < 2:
        raise ValueError(f"n_bins must be an integer >= 2, got {n_bins!r}")
    return {"n_bins": int(n_bins), "eps": EPS}


def scored_systems(source: Store | Engine) -> dict[str, int]:
    """``{system: number of its scores outside [0, 1]}`` for the systems with at least one scored prediction
    (calibration needs probabilities: a system with scores outside [0, 1] has none)."""
    engine = as_engine(source)
    return dict(sorted(engine.execute(
        "SELECT system, sum(CASE WHEN score < 0 OR score > 1 THEN 1 ELSE 0 END) FROM"
        f" {engine.quoted(engine.table('predictions'))} WHERE score IS NOT NULL GROUP BY system")))


def calibration_by_level(source: Store | Engine, n_bins: int = 10) -> pd.DataFrame:
    """Per (system, level): ``n`` scored pairs, ``brier``, ``log_loss``, ``ece_uniform`` (equal-width bins)
    and ``ece_quantile`` (equal-mass bins), ``n_bins`` bins; level 0 pools every level."""
    return as_engine(source).frame("calibration", "calibration_summary", _params(n_bins), order="system, level")


def reliability(source: Store | Engine, n_bins: int = 10, strategy: str = "uniform") -> pd.DataFrame:
    """Reliability diagram data per (system, level): for each non-empty bin, ``n``, ``mean_score`` and
    ``fraction_positive`` (scikit-learn's ``calibration_curve`` gives the last two)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    frame = as_engine(source).frame("calibration", "reliability", _params(n_bins), where=f"strategy = '{strategy}'",
                                    order="system, level, bin")
    return frame.drop(columns="strategy")


def plot_reliability(frame: pd.DataFrame, ax: Any = None, title: str | None = None) -> Any:
    """A reliability diagram of :func:`reliability`'s rows (one system): one line per level, the diagonal of
    perfect calibration, marker areas proportional to the bin counts. Returns the matplotlib Axes."""
    import matplotlib

    if ax is None:
        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(5, 5))
    ax.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=1, label="perfectly calibrated")
    total = float(frame["n"].max()) if len(frame) else 1.0
    for level, rows in frame.groupby("level", sort=True):
        name = "all levels" if level == 0 else f"level {level}"
        ax.plot(rows["mean_score"], rows["fraction_positive"], marker="o", markersize=3, label=name)
        ax.scatter(rows["mean_score"], rows["fraction_positive"], s=60 * rows["n"] / total, alpha=0.3)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("mean score in bin")
    ax.set_ylabel("fraction of true nodes in bin")
    ax.set_title(title or "reliability diagram")
    ax.legend(loc="upper left", fontsize="small")
    return ax
