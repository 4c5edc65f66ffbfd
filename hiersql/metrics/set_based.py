"""Set-based hierarchical measures: hierarchical precision, recall, F-beta and symmetric difference loss.

A thin wrapper over ``sql/set_based.sql``; see its header for the formulas.

References
----------
Kiritchenko, Matwin, Nock, Famili (2005), "Learning and evaluation in the presence of class hierarchies".
Kosmopoulos, Partalas, Gaussier, Paliouras, Androutsopoulos (2015), "Evaluation measures for hierarchical
classification: a unified view and novel approaches", §2.4 (eq. 2-5). SPEC §2.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import Options, Row

if TYPE_CHECKING:
    import pandas as pd

    from ..store import Store

METRICS = {
    "hierarchical_precision": "hp",
    "hierarchical_recall": "hr",
    "hierarchical_f1": "hf",
    "symmetric_difference_loss": "sdl",
}
AUGMENTS = ("ancestors", "descendants", "cesa_bianchi")


def _params(options: Options) -> dict[str, object]:
    if options.augment not in AUGMENTS:
        raise ValueError(f"augment must be one of {AUGMENTS}, got {options.augment!r}")
    if options.max_distance is not None and options.max_distance < 0:
        raise ValueError("max_distance must be >= 0")
    return {
        "include_root": bool(options.include_root),
        "max_distance": options.max_distance,
        "augment": options.augment,
        "beta": float(options.beta),
        "zero_division": float(options.zero_division),
    }


def evaluate(store: Store, metrics: list[str], options: Options) -> list[Row]:
    """Values of ``metrics`` for every system, micro and/or macro (``options.average``)."""
    rel = store.run("set_based", "set_based_summary", _params(options))
    wanted = set(metrics)
    averages = set(options.average) | {""}
    return [
        Row(*r)
        for r in rel.order("system, metric, average").fetchall()
        if r[1] in wanted and r[2] in averages
    ]


def per_instance(store: Store, options: Options) -> pd.DataFrame:
    """Per-instance ``n_true, n_pred, n_both`` (sizes of Yaug, Ŷaug and their intersection) and values."""
    return store.run("set_based", "set_based_instance", _params(options)).order("system, instance_id").df()
