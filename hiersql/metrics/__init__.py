"""Metric families. Each module is a thin wrapper over its ``sql/`` file (or, for pairing problems, over
:mod:`hiersql.pairing`) and exposes:

- ``METRICS``: ``{metric name: short alias}`` of the measures it computes (SPEC §10 names);
- ``evaluate(store, metrics, options) -> list[Row]``: the values of ``metrics`` for every system of the store,
  one :class:`Row` per (system, metric, average);
- ``per_instance(store, options) -> pandas.DataFrame``: per-instance values (columns ``system``,
  ``instance_id`` and one per measure), where the family has them.

:data:`FAMILIES` lists the modules; :func:`resolve` maps user-given names and aliases to (family, metric).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field, fields, replace
from typing import Any, NamedTuple

FAMILIES = ("set_based", "flat", "confusion", "pair_based", "lca", "scoring")


class Row(NamedTuple):
    """One value: ``average`` is ``"micro"``, ``"macro"`` or ``""`` where it does not apply."""

    system: str
    metric: str
    average: str
    value: float


@dataclass(frozen=True)
class Options:
    """Every option of every family, with SPEC defaults. Families read the fields they use."""

    average: tuple[str, ...] = ("micro", "macro")
    include_root: bool = False
    max_distance: int | None = None
    beta: float = 1.0
    zero_division: float = 0.0
    augment: str = "ancestors"  # set-based: "ancestors", "descendants" or "cesa_bianchi"
    labels: tuple[str, ...] | None = None  # flat measures: the label universe (default: seen labels)
    dmax: float = 5.0  # pair-based: cost of pairing with a default class
    lca_graph: str = "greedy"  # "optimal", "greedy" or "extended"
    pairing: str = "nearest"  # MGIA: "nearest" or "flow"
    shared: str = "strict"  # GIE: "strict" or "reuse"
    denominator: str = "union"  # MGIA: "union" or "symmetric_difference"
    distance_limit: str = "side"  # pair-based: max_distance bounds each side's climb to the LCA ("side") or d(u, v)
    tn: str = "published"  # hierarchical confusion matrix: "published" or "descendants"
    offset: float = 0.0  # scoring trees: the offset o <= 0
    extra: dict[str, Any] = field(default_factory=dict)

    def with_(self, **changes: Any) -> Options:
        known = {f.name for f in fields(self)}
        unknown = set(changes) - known
        if unknown:
            raise TypeError(f"unknown option(s) {sorted(unknown)}")
        return replace(self, **changes)


def family(name: str):
    """Import the family module ``hiersql.metrics.<name>``."""
    return importlib.import_module(f"hiersql.metrics.{name}")


def catalog() -> dict[str, tuple[str, str]]:
    """``{metric name or alias: (family, metric name)}`` over all families."""
    out: dict[str, tuple[str, str]] = {}
    for fam in FAMILIES:
        try:
            module = family(fam)
        except ModuleNotFoundError:
            continue
        for metric, alias in module.METRICS.items():
            out[metric] = (fam, metric)
            if alias:
                out[alias] = (fam, metric)
    return out


def resolve(names: list[str] | tuple[str, ...]) -> dict[str, list[str]]:
    """Group metric names/aliases by family, keeping order. ``all`` means every metric of every family
    (the caller drops families that do not apply); a family's own group name (e.g. ``hcm``) expands to it."""
    from ..errors import InputError

    cat = catalog()
    groups = {fam: list(family(fam).METRICS) for fam in {f for f, _ in cat.values()}}
    out: dict[str, list[str]] = {}
    for raw in names:
        name = raw.strip()
        if not name:
            continue
        if name == "all":
            for fam in FAMILIES:
                if fam in groups:
                    out.setdefault(fam, [])
                    out[fam] += [m for m in groups[fam] if m not in out[fam]]
            continue
        group = next((f for f in groups if getattr(family(f), "GROUP", None) == name), None)
        if group:
            out.setdefault(group, [])
            out[group] += [m for m in groups[group] if m not in out[group]]
            continue
        if name not in cat:
            raise InputError(f"unknown metric (known: {', '.join(sorted(cat))})", "--metrics", value=name)
        fam, metric = cat[name]
        out.setdefault(fam, [])
        if metric not in out[fam]:
            out[fam].append(metric)
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
    """An in-memory :class:`~hiersql.store.Store` for the scikit-learn style one-shot functions: ``y_true``
    and ``y_pred`` are equally long sequences of label sets (a string counts as a one-label set)."""
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
