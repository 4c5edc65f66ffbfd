"""Metric families. Each module is a thin wrapper over its ``sql/`` file (or, for pairing problems, over
:mod:`hiersql.pairing`) and exposes:

- ``METRICS``: ``{metric name: short alias}`` of the measures it computes (SPEC §10 names), its entry of
  :data:`REGISTRY` (kept here so that resolving names imports no family module: the CLI starts fast);
- ``evaluate(store, metrics, options) -> list[Row]``: the values of ``metrics`` for every system of the store,
  one :class:`Row` per (system, metric, average);
- ``per_instance(store, options) -> pandas.DataFrame``: per-instance values (columns ``system``,
  ``instance_id`` and one per measure), where the family has them.

:data:`FAMILIES` lists the modules; :func:`resolve` maps user-given names and aliases to (family, metric).
"""

from __future__ import annotations

import importlib
from typing import Any, NamedTuple

# FAMILIES: declared with the options that the families read; Options: hiersql.metrics.Options
from ..options import FAMILIES as FAMILIES
from ..options import Options as Options

# {family: {metric name: alias}} (SPEC §10); a family module's METRICS is its entry.
REGISTRY: dict[str, dict[str, str]] = {
    "set_based": {"hierarchical_precision": "hp", "hierarchical_recall": "hr", "hierarchical_f1": "hf",
                  "symmetric_difference_loss": "sdl"},
    "flat": {m: "" for m in ("example_accuracy", "example_precision", "example_recall", "example_f1",
                             "hamming_loss", "subset_accuracy", "label_precision", "label_recall", "label_f1",
                             "label_accuracy")},
    "confusion": {f"hcm_{m}": "" for m in ("tp", "tn", "fp", "fn", "accuracy", "precision", "recall", "f1",
                                           "mcc", "fnr", "fpr", "tnr", "pt")},
    "pair_based": {"graph_induced_error": "gie", "mgia": "", "mgia_fn": "", "tree_induced_error": "",
                   "all_pairs_error": ""},
    "lca": {"lca_precision": "lca_p", "lca_recall": "lca_r", "lca_f1": "lca_f"},
    "scoring": {m: "" for m in ("pl", "lca_reward", "lpp", "lpptps", "lpppps", "scoring_hp", "scoring_hr",
                                "scoring_hf")},
}
# names that stand for all the measures of a family
GROUPS = {"hcm": "confusion"}


class Row(NamedTuple):
    """One value: ``average`` is ``"micro"``, ``"macro"``, ``"samples"``, ``"weighted"``, ``"label_macro"``
    (docs/sklearn.md) or ``""`` where it does not apply."""

    system: str
    metric: str
    average: str
    value: float


def family(name: str):
    """Import the family module ``hiersql.metrics.<name>``."""
    return importlib.import_module(f"hiersql.metrics.{name}")


def plan_of(name: str):
    """The :class:`~hiersql.plan.FamilyPlan` of family ``name`` (its module's ``PLAN``)."""
    return family(name).PLAN


def catalog() -> dict[str, tuple[str, str]]:
    """``{metric name or alias: (family, metric name)}`` over all families."""
    out: dict[str, tuple[str, str]] = {}
    for fam, metrics in REGISTRY.items():
        for metric, alias in metrics.items():
            out[metric] = (fam, metric)
            if alias:
                out[alias] = (fam, metric)
    return out


def resolve(names: list[str] | tuple[str, ...]) -> dict[str, list[str]]:
    """Group metric names/aliases by family, keeping order. ``all`` means every metric of every family
    (the caller drops families that do not apply); a group name of :data:`GROUPS` (``hcm``) expands to its
    family's measures."""
    from ..errors import InputError

    cat = catalog()
    out: dict[str, list[str]] = {}

    def add(fam: str, metrics: list[str]) -> None:
        out.setdefault(fam, [])
        out[fam] += [m for m in metrics if m not in out[fam]]

    for raw in names:
        name = raw.strip()
        if not name:
            continue
        if name == "all":
            for fam in FAMILIES:
                add(fam, list(REGISTRY[fam]))
        elif name in GROUPS:
            add(GROUPS[name], list(REGISTRY[GROUPS[name]]))
        elif name in cat:
            add(*((cat[name][0]), [cat[name][1]]))
        else:
            known = ", ".join(sorted([*cat, *GROUPS, "all"]))
            raise InputError(f"unknown metric (known: {known})", "--metrics", value=name)
    return out


def as_taxonomy(taxonomy: Any):
    """A :class:`~hiersql.taxonomy.Taxonomy` from a Taxonomy, a path, a networkx DiGraph, a DataFrame with
    ``parent``/``child`` columns, or an iterable of ``(parent, child)`` pairs."""
    from pathlib import Path

    from ..taxonomy import Taxonomy

    if isinstance(taxonomy, Taxonomy):
        return taxonomy
    if isinstance(taxonomy, str | Path):
        return Taxonomy.from_file(taxonomy)
    if hasattr(taxonomy, "is_directed"):
        return Taxonomy.from_networkx(taxonomy)
    if hasattr(taxonomy, "columns"):
        return Taxonomy.from_dataframe(taxonomy)
    return Taxonomy.from_edges(taxonomy)


def store_from_sets(y_true: Any, y_pred: Any, taxonomy: Any, system: str = "y_pred"):
    """An in-memory :class:`~hiersql.store.Store` of label sets (the classification report; the one-shot
    functions use :mod:`hiersql.oneshot` instead): ``y_true`` and ``y_pred`` are equally long sequences of
    label sets (a string counts as a one-label set)."""
    from ..store import Store

    y_true, y_pred = list(y_true), list(y_pred)
    if len(y_true) != len(y_pred):
        raise ValueError(f"y_true has {len(y_true)} instances but y_pred has {len(y_pred)}")
    store = Store()
    store.load_taxonomy(as_taxonomy(taxonomy))
    store.add_truth(y_true, name="y_true")
    store.add_predictions(system, y_pred, name="y_pred")
    return store


def one_value(rows: list[Row], metric: str, average: str) -> float:
    """The value of ``metric`` with ``average`` from a single-system result."""
    for row in rows:
        if row.metric == metric and row.average == average:
            return row.value
    raise ValueError(f"no value for {metric} with average={average!r}")
