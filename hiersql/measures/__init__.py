"""Metric families. Each package is a thin wrapper over its SQL file (``<family>/<family>.sql``) and, for
pairing problems, over :mod:`hiersql.measures.pair_based.pairing`; each exposes:

- ``METRICS``: ``{metric name: short alias}`` of the measures it computes (SPEC §10 names), its entry of
  :data:`REGISTRY` (kept here so that resolving names imports no family module: the CLI starts fast);
- ``PLAN``: its :class:`~hiersql.plan.FamilyPlan`, which any :class:`~hiersql.engines.Engine` runs;
- ``evaluate(store, metrics, options) -> list[Row]``: the values of ``metrics`` for every system of the store,
  one :class:`Row` per (system, metric, average);
- ``per_instance(store, options) -> pandas.DataFrame``: per-instance values (columns ``system``,
  ``instance_id`` and one per measure), where the family has them.

:data:`FAMILIES` lists the modules; :func:`resolve` maps user-given names and aliases to (family, metric), and
:func:`compute` runs the plans of any names on any engine (the engines know plans, not names).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..engines import DuckDBEngine, Engine

# FAMILIES: declared with the options that the families read; Options: hiersql.measures.Options
from ..options import FAMILIES as FAMILIES
from ..options import Options as Options
from ..plan import FamilyPlan, Measure
from ..plan import Row as Row

if TYPE_CHECKING:
    from ..inputs.store import Store

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
    "severity": {"top_k_accuracy": "", "hierarchical_distance_at_k": "hdist", "best_hierarchical_distance_at_k": "",
                 "mistake_severity": "", "hierarchical_precision_at_k": "hprec", "hierarchical_map_at_k": "hmap"},
}
# names that stand for the measures of a family (those that apply, as under ``all``): its own, and aliases
GROUPS = {**{fam: fam for fam in REGISTRY}, "hcm": "confusion"}


def family(name: str):
    """Import the family module ``hiersql.measures.<name>``."""
    return importlib.import_module(f"hiersql.measures.{name}")


def plan_of(name: str):
    """The :class:`~hiersql.plan.FamilyPlan` of family ``name`` (its module's ``PLAN``)."""
    return family(name).PLAN


def as_engine(source: Store | Engine) -> Engine:
    """The engine that runs the plans of ``source``: itself, or a store's DuckDB."""
    return source if isinstance(source, Engine) else DuckDBEngine(source)


def family_of(metric: str) -> str:
    """The family of measure ``metric`` (its name, not an alias)."""
    return catalog()[metric][0]


def declared(metric: str) -> tuple[Measure, ...]:
    """The declarations of measure ``metric`` in its family's plan (one per unit table it is averaged over)."""
    return tuple(m for m in plan_of(family_of(metric)).measures if m.metric == metric)


def higher_is_better(metric: str) -> bool:
    """The direction of measure ``metric``, as its :class:`~hiersql.plan.Measure` declares it."""
    return declared(metric)[0].higher_is_better


def reference() -> str:
    """The Markdown table of every declared measure (``docs/measures.md``, which a test holds equal to it): name,
    alias, family, averages, direction, range and formula, one row per declaration."""
    from ..plan import CLASSES

    def cell(m: Measure) -> str:
        if m.numerator is None:
            return "the family's summary query"
        formula = f"`{m.numerator}`" + (f" / `{m.denominator}`" if m.denominator else "")
        zero = f"; `{m.zero}` where the denominator is 0" if m.denominator and m.zero != "$zero_division" else ""
        undefined = f"; `--zero-division` where `{m.undefined}`" if m.undefined else ""
        return (formula + zero + undefined).replace("|", "\\|") + (" (summed)" if m.total else "")

    def bound(x: float) -> str:
        return "∞" if x == float("inf") else f"{x:g}"

    lines = ["| measure | alias | family | unit | averages | better | range | value per unit |",
             "|---|---|---|---|---|---|---|---|"]
    for fam, metrics in REGISTRY.items():
        for m in plan_of(fam).measures:
            averages = ", ".join(a or "(mean)" for a in m.averages)
            lines.append(f"| `{m.metric}` | {metrics[m.metric] or ''} | {fam} | "
                         f"{'classes' if m.unit == CLASSES else 'instances'} | {averages} | "
                         f"{'higher' if m.higher_is_better else 'lower'} | "
                         f"[{bound(m.bounds[0])}, {bound(m.bounds[1])}] | {cell(m)} |")
    return "\n".join(lines) + "\n"


def catalog() -> dict[str, tuple[str, str]]:
    """``{metric name or alias: (family, metric name)}`` over all families."""
    out: dict[str, tuple[str, str]] = {}
    for fam, metrics in REGISTRY.items():
        for metric, alias in metrics.items():
            out[metric] = (fam, metric)
            if alias:
                out[alias] = (fam, metric)
    return out


def compute(source: Store | Engine, metrics: list[str] | tuple[str, ...], options: Options | None = None,
            on_family: Callable[[str], None] | None = None, where: str = "metrics") -> list[Row]:
    """Rows of ``metrics`` (names or aliases; ``all``) for every system: each family's plan run by ``source``,
    an :class:`~hiersql.engines.Engine` or a :class:`~hiersql.inputs.store.Store` (run by
    :class:`~hiersql.engines.DuckDBEngine`), sorted by (system, metric, average) within each family. A family
    that does not apply to the input is an error when named (by its name or one of its measures), skipped
    under ``all``; a measure that does not apply is an error when named, left out when ``all`` or its family's
    name brings it in. ``on_family(name)`` is called before each family is evaluated (progress bars).
    ``where`` names ``metrics`` in errors: the Python argument by default, the command line's flag for the
    command line (:func:`resolve`)."""
    from ..errors import InputError

    engine = as_engine(source)
    options = options or Options()
    check_averages(list(metrics), options)
    chosen = named(metrics)
    wanted = resolve([m for m in metrics if m.strip() != "all"], where)  # the families named
    runs: list[tuple[FamilyPlan, list[str]]] = []
    for fam, names in resolve(list(metrics), where).items():
        plan = plan_of(fam)
        reason = plan.applies(engine)
        if reason is not None:
            if fam in wanted:
                raise InputError(f"does not apply to this input: {reason}", where,
                                 value=",".join(m.strip() for m in metrics if m.strip() in wanted_by(fam)))
            continue
        names = [m for m in names if m in chosen or plan.metric_applies(engine, m, options)]
        if names:
            runs.append((plan, names))
    rows = engine.run_plans(runs, options, None if on_family is None else lambda plan: on_family(plan.name))
    return [row for family_rows in rows for row in family_rows]


def check_averages(metrics: list[str], options: Options) -> None:
    """Every average of ``options.average`` must be one that each named measure has, and with ``labels`` a named
    set-based measure takes only its per-class averages (an :class:`~hiersql.options.OptionError` naming the
    parameter and the value, :func:`hiersql.averages.check_average`); under ``all`` or a family's name each
    measure gives the averages it has, and a named family must have a measure that gives one. Measures without
    averages (plain means) take any."""
    from ..averages import check_average
    from ..options import OptionError
    from ..plan import averages_of

    chosen = named(metrics)
    grouped = {GROUPS[m.strip()] for m in metrics if m.strip() in GROUPS}  # the families named as such
    for fam, names in resolve([m for m in metrics if m.strip() != "all"]).items():
        plan = plan_of(fam)
        for metric in names:
            if metric in chosen and averages_of(plan, metric) != ("",):
                for average in options.average:
                    check_average(plan, metric, average, options.labels is not None)
        has = {a for metric in REGISTRY[fam] for a in averages_of(plan, metric)}
        if fam in grouped and not has & {"", *options.average}:
            raise OptionError("average", f"of the {fam} measures must be one of "
                              f"{', '.join(repr(a) for a in sorted(has))}", ",".join(map(str, options.average)))


def named(metrics: list[str] | tuple[str, ...]) -> set[str]:
    """The measures of ``metrics`` named one by one (by name or alias), not brought in by ``all`` or a family's
    name (:data:`GROUPS`)."""
    cat = catalog()
    return {cat[m.strip()][1] for m in metrics if m.strip() in cat}


def wanted_by(fam: str) -> set[str]:
    """The names that bring in measures of family ``fam``: its measures' names and aliases, its group names."""
    return {name for name, (f, _) in catalog().items() if f == fam} | {g for g, f in GROUPS.items() if f == fam}


def resolve(names: list[str] | tuple[str, ...], where: str = "metrics") -> dict[str, list[str]]:
    """Group metric names/aliases by family, keeping order. ``all`` means every metric of every family
    (the caller drops families that do not apply); a family's name or a group name of :data:`GROUPS`
    (``pair_based``, ``hcm``) expands to its family's measures (the caller drops those that do not apply).
    An unknown name is an :class:`~hiersql.errors.InputError` naming ``where``: ``metrics`` (the Python
    argument, the default), ``--metrics`` (the command line's flag) or a job file's key."""
    cat = catalog()
    out: dict[str, list[str]] = {}

    def add(fam: str, metrics: list[str]) -> None:
        out.setdefault(fam, [])
        out[fam] += [m for m in metrics if m not in out[fam]]

    for raw in names:
        if not isinstance(raw, str):
            raise unknown_metric(raw, where, [])
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
            raise unknown_metric(name, where, [*cat, *GROUPS, "all"])
    return out


def unknown_metric(name: Any, where: str, known: list[str]) -> Exception:
    """The error of a name that is not one of ``known`` (an :class:`~hiersql.errors.InputError` naming
    ``where``), or of a value that is no name at all (an :class:`~hiersql.options.OptionError`)."""
    from ..errors import InputError
    from ..inputs.arguments import argument_error

    if not isinstance(name, str):
        return argument_error(where, "must hold names of measures (strings)", name)
    return InputError(f"unknown metric (known: {', '.join(sorted(known))})", where, value=name)


def lookup(name: Any, where: str, groups: bool = False) -> tuple[str, str | None]:
    """``(family, metric)`` of one measure's name or alias (:func:`catalog`); with ``groups``, ``(family,
    None)`` of a family's name or a group's (:data:`GROUPS`) too. Anything else is an error naming ``where``
    (:func:`unknown_metric`)."""
    if groups and isinstance(name, str) and name in GROUPS:
        return GROUPS[name], None
    found = catalog().get(name) if isinstance(name, str) else None
    if found is None:
        raise unknown_metric(name, where, [*catalog(), *(GROUPS if groups else ())])
    return found


def store_from_sets(y_true: Any, y_pred: Any, taxonomy: Any, system: str = "y_pred"):
    """An in-memory :class:`~hiersql.inputs.store.Store` of label sets (the classification report; the one-shot
    functions use :mod:`hiersql.engines.oneshot` instead): ``y_true`` and ``y_pred`` are equally long sequences of
    label sets (:func:`~hiersql.inputs.arguments.paired_label_sets`)."""
    from ..inputs.arguments import paired_label_sets
    from ..inputs.store import Store
    from ..inputs.taxonomy import as_taxonomy

    y_true, y_pred = paired_label_sets(y_true, y_pred)
    tax = as_taxonomy(taxonomy)
    store = Store()
    store.load_taxonomy(tax)
    store.add_truth(y_true, name="y_true")
    store.add_predictions(system, y_pred, name="y_pred")
    return store


def write_summed_file() -> None:
    """Write :data:`~hiersql.plan.SUMMED_FILE` for every declared measure, after an expression changed
    (``python -c "import hiersql.measures as m; m.write_summed_file()"``; a test holds the file current)."""
    import json

    from ..plan import SUMMED_FILE, summed_forms

    forms = summed_forms(m for family in REGISTRY for m in plan_of(family).measures)
    SUMMED_FILE.write_text(json.dumps(dict(sorted(forms.items())), indent=1) + "\n")
