"""Choosing between systems: every measure's value with a bootstrap confidence interval, the paired tests of
every pair of systems, ranks and groups of systems not significantly different, and the rank correlation
between the measures (Kosmopoulos et al. 2015 §4; the statistics are in :mod:`hiersql.analyses.stats`).

A measure gets intervals and tests when its value is a function of per-instance quantities that the family's
``per_instance`` table gives (:func:`instance_statistic`): a mean of per-instance values (macro-averaged
and example-based measures, GIE, ...) or a ratio of sums (micro-averaged hP, hR, hF, LCA-F, label-based F,
MGIA). The label-based macro measures are means over labels: their items are the labels (``flat.per_label``)
and their sign test is the macro sign test. The hierarchical confusion matrix's micro measures that are ratios
of its summed counts (accuracy, precision, recall, F1, FNR, FPR, TNR) are ratios of sums of the per-instance
counts too, and their macro averages are means of the per-instance ratios. Other measures (the HCM's MCC,
prevalence threshold and counts, the scoring trees, the tree-induced error where it is undefined for some
instance) are reported with value and rank only.

Grouping rule: per measure, systems are sorted best first. Group 1 is the best system and every system whose
paired test against it is not significant (``p >= alpha``; with ``holm=True`` the p-values are Holm-adjusted
over all pairs of that measure). The best system not yet grouped starts group 2 with the remaining systems
not significantly different from it, and so on. So "same group as the best" reads "not shown to be worse than
the best". ``rank`` is the competition rank by value (1 + the number of strictly better systems).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np

from ..measures import REGISTRY
from . import stats

if TYPE_CHECKING:
    import pandas as pd

    from ..engines import Engine
    from ..inputs.store import Store
    from ..measures import Options

TESTS = ("sign", "wilcoxon", "bootstrap", "permutation")


class EvaluatorLike(Protocol):
    """What the functions here read of an :class:`~hiersql.Evaluator` (which imports this module): its store."""

    store: Store


@dataclass(frozen=True)
class InstanceStatistic:
    """How a measure's value follows from its family's per-instance table: ``Σ num / Σ den`` over the items,
    ``num`` and ``den`` computed from the table's columns (``den`` ``None``: the mean of ``num``); with
    ``per_item``, the mean of the items' own ratios ``num / den`` (``zero_division`` where ``den`` is 0).
    ``options``: the options of the per-instance table when they are not the comparison's (one k of a family
    whose runs differ by their ``average``, :attr:`~hiersql.plan.FamilyPlan.run_average`); ``defined``: the mean
    of ``num`` over the items where it is defined, ``Σ num / Σ [num defined]`` (a plain mean that leaves
    undefined values out, as the summary's ``avg``)."""

    family: str
    numerator: str | tuple[tuple[float, str], ...]  # a column, or weighted columns
    denominator: tuple[tuple[float, str], ...] | None = None
    items: str = "instances"  # or "labels" (flat.per_label)
    per_item: bool = False
    zero: float = 0.0  # the value of a ratio whose denominator is 0 (the measure's declared zero)
    options: Options | None = None
    defined: bool = False

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns of the per-instance table that the statistic reads, in order, once each."""
        terms = [self.numerator] if isinstance(self.numerator, str) else [c for _, c in self.numerator]
        return tuple(dict.fromkeys([*terms, *(c for _, c in self.denominator or ())]))


def instance_statistic(metric: str, average: str, options: Options) -> InstanceStatistic | None:
    """The :class:`InstanceStatistic` of ``metric`` with ``average``, read from the measure's declaration
    (:class:`~hiersql.plan.Measure`), or ``None`` when the value is not a mean or a ratio of sums of
    per-instance quantities (docs/compare.md has the table):

    - a ratio's ``micro`` average is ``Σ numerator / Σ denominator`` over the instances when both expressions
      are sums of per-instance columns with constant weights (:func:`_linear`; a per-class measure's counts
      ``tp, fp, fn`` are sums of per-instance counts where the plan says so, ``instance_counts_classes``);
    - its ``macro`` or ``samples`` average (over instances) is the mean of the per-instance ratios;
    - a measure without denominator is the mean of its per-instance value
    (:func:`~hiersql.plan.instance_values_sql`);
    - the label-based ``macro`` average of the flat family is the mean over the labels (``flat.per_label``).

    Counts summed over the instances (``total``), ratios with an ``undefined`` rule and families with their own
    summary query (scoring trees) have no statistic."""
    from ..measures import family_of, plan_of
    from ..plan import CLASSES, measure_of

    fam = family_of(metric)
    plan = plan_of(fam)
    if plan.run_average is not None:  # one run per average: the mean of the run's per-instance values
        runs = [group for _, group in plan.groups([metric], options) if plan.average_of(group) == average]
        return InstanceStatistic(fam, metric, zero=math.nan, options=runs[0], defined=True) if runs else None
    try:
        m = measure_of(plan, metric, average)
    except ValueError:
        return None
    if plan.summary is not None or m.total or m.undefined is not None:
        return None
    zero = float(options.zero_division) if m.zero == "$zero_division" else float(m.zero)
    columns: Mapping[str, str | None] = {}
    if m.unit == CLASSES:
        if fam == "flat" and average in ("macro", "label_macro"):
            return InstanceStatistic("flat_labels", metric, items="labels")
        if average != "micro" or not plan.instance_counts_classes:
            return None
        columns = _CLASS_COUNTS
    elif m.unit is not None:
        return None
    if m.denominator is None:  # the mean of its per-instance value (a column of the per-instance table)
        return InstanceStatistic(fam, metric)
    params = plan.params(options, None, [metric])
    num, den = _linear(m.numerator, params, columns), _linear(m.denominator, params, columns)
    if num is None or den is None:
        return None
    return InstanceStatistic(fam, num, den, per_item=average != "micro", zero=zero)


# a class's counts summed over the classes, as sums of per-instance counts (of the same rows): |Y ∩ Z|,
# |Z \ Y|, |Y \ Z| (tn is left out: the instances do not count the classes that neither side holds)
_CLASS_COUNTS = {"tp": "n_both", "fp": "n_pred - n_both", "fn": "n_true - n_both", "tn": None,
                 "n_true": "n_true", "n_pred": "n_pred", "n_both": "n_both", "support": "n_true"}


def _linear(expression: str | None, params: Mapping[str, object],
            columns: Mapping[str, str | None]) -> tuple[tuple[float, str], ...] | None:
    """The terms ``((weight, column), ...)`` of a sum of columns with constant weights (``2 * tp + fp + fn``,
    ``(1 + $beta * $beta) * n_both`` with ``$beta`` from ``params``), each column of ``columns`` replaced by its
    expression (``None``: a column that has none); ``None`` for any other expression (a product of columns, a
    square root) or none: ``Σ_i`` of such an expression is the expression of the sums, so its micro average is
    a ratio of sums of per-instance values."""
    import sqlglot
    from sqlglot import exp

    def constant(node: exp.Expression) -> float | None:
        if isinstance(node, exp.Paren):
            return constant(node.this)
        if isinstance(node, exp.Literal) and node.is_number:
            return float(node.this)
        if isinstance(node, exp.Neg):
            inner = constant(node.this)
            return None if inner is None else -inner
        if isinstance(node, exp.Add | exp.Sub | exp.Mul):
            left, right = constant(node.left), constant(node.right)
            if left is None or right is None:
                return None
            return left + right if isinstance(node, exp.Add) else left - right if isinstance(node, exp.Sub) \
                else left * right
        return None

    def terms(node: exp.Expression) -> list[tuple[float, str]] | None:
        if isinstance(node, exp.Paren):
            return terms(node.this)
        if isinstance(node, exp.Column):
            if node.name in columns:
                found = columns[node.name]
                inner = None if found is None else _linear(found, {}, {})
                return None if inner is None else list(inner)
            return [(1.0, node.name)]
        if isinstance(node, exp.Add | exp.Sub):
            left, right = terms(node.left), terms(node.right)
            if left is None or right is None:
                return None
            sign = -1.0 if isinstance(node, exp.Sub) else 1.0
            return left + [(sign * w, c) for w, c in right]
        if isinstance(node, exp.Mul):
            for weight, inner in ((constant(node.left), node.right), (constant(node.right), node.left)):
                found = None if weight is None else terms(inner)
                if found is not None:
                    return [(weight * w, c) for w, c in found]
        return None

    if expression is None:
        return None
    numbers = {k: exp.Literal.number(v) for k, v in params.items()
               if isinstance(v, int | float) and not isinstance(v, bool)}
    found = terms(exp.replace_placeholders(sqlglot.parse_one(expression, read="duckdb"), **numbers))
    if found is None:
        return None
    merged: dict[str, float] = {}  # one term per column, in the order the columns come
    for weight, column in found:
        merged[column] = merged.get(column, 0.0) + weight
    return tuple((weight, column) for column, weight in merged.items() if weight != 0)


def _combine(frame: pd.DataFrame, terms: str | tuple) -> pd.Series:
    if isinstance(terms, str):
        return frame[terms].astype(float)
    return sum(weight * frame[column].astype(float) for weight, column in terms)


class Comparison(NamedTuple):
    """The result of :func:`compare`: four DataFrames and the settings."""

    ranking: pd.DataFrame
    """One row per (measure, system): ``measure, metric, average, system, value, ci_low, ci_high, rank, group,
    items`` (CI and group are NaN for measures without per-instance values)."""
    tests: pd.DataFrame
    """One row per (measure, pair of systems): ``measure, items, system_a, system_b, difference, ci_low,
    ci_high, sign_n, sign_k, sign_p, wilcoxon_p, bootstrap_p, permutation_p, p_value`` (``p_value``: the
    p-value of the grouping test, Holm-adjusted with ``holm=True``)."""
    kendall: pd.DataFrame
    """Kendall's τ-b between the system rankings of the measures (measures x measures)."""
    spearman: pd.DataFrame
    """Spearman's ρ between the same rankings."""
    settings: dict[str, Any]

    def _repr_html_(self) -> str:
        """The ranking (value, interval, rank and group of each system per measure) as an HTML table, then the
        paired tests: how a notebook shows a comparison."""
        columns = ["measure", "system", "value", "ci_low", "ci_high", "rank", "group"]
        tests = ["measure", "system_a", "system_b", "difference", "ci_low", "ci_high", "p_value"]
        table = {"index": False, "na_rep": "", "float_format": lambda x: f"{x:.4f}"}
        return (f"<h4>Ranking</h4>{self.ranking[columns].to_html(**table)}"
                f"<h4>Paired tests ({self.settings.get('test', '')})</h4>{self.tests[tests].to_html(**table)}")


def measure_name(metric: str, average: str) -> str:
    """``"hf micro"``: the metric's short alias (or its name) and the average, if any."""
    alias = next((names[metric] for names in REGISTRY.values() if metric in names), "") or metric
    return f"{alias} {average}" if average else alias


def compare(evaluator: EvaluatorLike | Store, metrics: list[str] | tuple[str, ...], *, n_resamples: int = 1000,
            seed: int | None = 0, confidence: float = 0.95, alpha: float = 0.05, test: str = "sign",
            holm: bool = False, engine: Engine | None = None, **options: Any) -> Comparison:
    """Values, confidence intervals, paired tests, ranks, groups and rank correlations of ``metrics`` for
    every system of ``evaluator``.

    Parameters
    ----------
    evaluator:
        An :class:`~hiersql.Evaluator` (or its :class:`~hiersql.inputs.store.Store`) with the truth and two or more
        systems.
    metrics:
        Measure names or aliases (as :meth:`~hiersql.Evaluator.evaluate`).
    n_resamples:
        Resamples of the paired bootstrap and of the permutation test.
    seed:
        Seed of both (same seed, same output).
    confidence:
        Coverage of the bootstrap percentile intervals.
    alpha:
        Significance level of the grouping rule (module docstring).
    test:
        The test behind the groups: ``"sign"`` (micro sign test on instances, macro sign test on labels;
        Kosmopoulos et al. §4.2), ``"wilcoxon"``, ``"bootstrap"`` or ``"permutation"``; all four are in
        ``tests`` either way.
    holm:
        Holm-adjust the grouping p-values over the pairs of each measure.
    engine:
        Where the measures and per-instance values are computed (an :class:`~hiersql.engines.Engine` holding
        a copy of the store's tables, :meth:`~hiersql.engines.Engine.copy_store`); default the store's DuckDB.
    **options:
        Measure options (``average``, ``beta``, ``dmax``, ...), as for :meth:`~hiersql.Evaluator.evaluate`.
    """
    import pandas as pd

    from ..options import make_options

    if test not in TESTS:
        raise ValueError(f"test must be one of {TESTS}, got {test!r}")
    from ..engines import DuckDBEngine

    store = getattr(evaluator, "store", evaluator)
    opts = make_options(**options)
    systems = sorted(store.systems())
    tables: dict[str, pd.DataFrame] = {}
    runner = engine if engine is not None else DuckDBEngine(store)
    values, matrices = _measure_values(runner, list(metrics), opts, systems, tables)
    ranking, tests = [], []
    draws: dict[int, tuple] = {}  # resamples per number of items, shared by the measures
    for (metric, average), part in values.groupby(["metric", "average"], sort=False):
        measure = measure_name(metric, average)
        listed = [s for s in systems if s in set(part["system"])]  # those with a row, in name order
        part = part.set_index("system").reindex(listed)
        spec = instance_statistic(metric, average, opts)
        if (metric, average) not in matrices and spec is not None:
            matrices[metric, average] = instance_matrices(runner, spec, opts, listed, tables)
        found = matrices.get((metric, average))
        frame = part[["value"]].reset_index().assign(measure=measure, metric=metric, average=average,
                                                     ci_low=np.nan, ci_high=np.nan,
                                                     items=spec.items if found is not None else "")
        if found is not None:
            num, den = found
            boot, pair_table = paired_tests(num, den, spec.zero, n_resamples, seed, confidence, draws)
            frame["ci_low"] = boot.intervals["ci_low"].to_numpy()
            frame["ci_high"] = boot.intervals["ci_high"].to_numpy()
            pair_table["p_value"] = pair_table[f"{test}_p"]
            if holm:
                pair_table["p_value"] = stats.holm(pair_table["p_value"].to_numpy())
            tests.append(pair_table.assign(measure=measure, items=spec.items))
        better = oriented(frame["value"], metric)
        frame["rank"] = competition_rank(better)
        frame["group"] = pd.array(_groups(frame["system"], better, tests[-1] if found is not None else None,
                                          alpha), dtype="Int64")
        ranking.append(frame)
    ranking_frame = pd.concat(ranking, ignore_index=True)[
        ["measure", "metric", "average", "system", "value", "ci_low", "ci_high", "rank", "group", "items"]]
    test_columns = ["measure", "items", "system_a", "system_b", "difference", "ci_low", "ci_high", "sign_n",
                    "sign_k", "sign_p", "wilcoxon_p", "bootstrap_p", "permutation_p", "p_value"]
    tests_frame = (pd.concat(tests, ignore_index=True)[test_columns] if tests
                   else pd.DataFrame(columns=test_columns))
    wide = scores(ranking_frame)
    settings = {"metrics": list(metrics), "n_resamples": n_resamples, "seed": seed, "confidence": confidence,
                "alpha": alpha, "test": test, "holm": holm}
    return Comparison(ranking_frame, tests_frame, stats.rank_correlations(wide, "kendall"),
                      stats.rank_correlations(wide, "spearman"), settings)


def _measure_values(engine: Engine, metrics: list[str], opts: Options, systems: list[str],
                    tables: dict[str, pd.DataFrame]) -> tuple[pd.DataFrame, dict]:
    """The values ``system, metric, average, value`` of ``metrics``, in the order asked for, and the
    ``(numerator, denominator)`` matrices found on the way (a system without a row for a measure, as hard
    predictions at k > 1, has none here either). A measure with an :class:`InstanceStatistic` is
    computed from its family's per-instance table (``Σ num / Σ den``, the family's own aggregate), which
    spares a second pass over the data; the others (and everything under ``all`` or a family's name) by the
    families' ``evaluate``."""
    import pandas as pd

    from ..measures import GROUPS, compute, resolve

    matrices: dict[tuple[str, str], tuple] = {}
    parts: list[pd.DataFrame] = []
    direct: list[str] = []
    explicit = not any(m.strip() == "all" or m.strip() in GROUPS for m in metrics)  # else those that apply
    if explicit:
        wanted = {spec.family for names in resolve(metrics).values() for metric in names
                  for average in averages_asked(metric, opts)
                  if (spec := instance_statistic(metric, average, opts)) is not None and spec.options is None}
        _fill_tables(engine, wanted, opts, tables)
    for names in resolve(metrics).values() if explicit else ():
        for metric in names:
            specs = {average: instance_statistic(metric, average, opts) for average in averages_asked(metric, opts)}
            found = {average: instance_matrices(engine, spec, opts, systems, tables) if spec else None
                     for average, spec in specs.items()}
            if any(f is None for f in found.values()):
                direct.append(metric)
                continue
            for average, (num, den) in found.items():
                matrices[metric, average] = (num, den)
                value = stats.ratio(num.sum().to_numpy(), (den.sum() if den is not None else len(num)),
                                    specs[average].zero)
                parts.append(pd.DataFrame({"system": list(num.columns), "metric": metric, "average": average,
                                           "value": value}))
    if direct or not explicit:
        rows = pd.DataFrame(compute(engine, direct if explicit else metrics, opts),
                            columns=["system", "metric", "average", "value"])
        parts += [rows[rows["metric"] == metric] for metric in dict.fromkeys(rows["metric"])]
    order = {metric: k for k, metric in enumerate(m for names in resolve(metrics).values() for m in names)}
    parts.sort(key=lambda part: order.get(part["metric"].iloc[0], len(order)) if len(part) else 0)
    return pd.concat(parts, ignore_index=True), matrices


def _table(engine: Engine, name: str, opts: Options, metrics: list[str] | None = None) -> pd.DataFrame:
    """The unit table of family ``name`` that its summary reads (the plan's per-instance stage, every column the
    measures' expressions name; ``metrics``: those of these measures, :meth:`~hiersql.engines.Engine.per_instance`),
    or ``"flat_labels"``: the flat family's per-label table, the label in ``instance_id``."""
    from ..measures import family, plan_of

    if name == "flat_labels":
        return family("flat").per_label(engine, opts).rename(columns={"label": "instance_id"})
    return engine.per_instance(plan_of(name), opts, metrics).to_pandas()


def _fill_tables(engine: Engine, names: set[str], opts: Options, tables: dict[str, pd.DataFrame]) -> None:
    """Compute the per-instance tables of ``names`` into ``tables``. On the embedded DuckDB, the SQL families
    run on a second connection in a thread while this one solves the Python-heavy families
    (:func:`~hiersql.engines.concurrency.beside_python`)."""
    from ..engines import DuckDBEngine
    from ..engines.concurrency import beside_python

    # the families whose per-instance table is SQL alone (DuckDB releases the GIL while it runs) beside those that
    # solve pairing or LCA graph problems in Python
    sql = sorted(name for name in names - set(tables) if _sql_only(name))
    heavy = sorted(names - set(sql) - set(tables))
    beside = isinstance(engine, DuckDBEngine) and bool(sql and heavy)
    side = engine.cursor() if beside else engine  # type: ignore[attr-defined]

    def sql_tables() -> dict[str, pd.DataFrame]:
        return {name: _table(side, name, opts) for name in sql}

    try:
        with beside_python(sql_tables if beside else None) as future:
            for name in heavy:
                tables[name] = _table(engine, name, opts)
        tables.update(future.result() if future is not None else sql_tables())
    finally:
        if side is not engine:
            side.con.close()


def _sql_only(name: str) -> bool:
    """Whether the per-instance table ``name`` of :func:`_table` is made by SQL stages alone (no Python step)."""
    from ..measures import plan_of
    from ..plan import Python

    plan = plan_of("flat" if name == "flat_labels" else name)
    return not any(isinstance(step, Python) for step in plan.steps)


def table_key(spec: InstanceStatistic) -> str:
    """The name of the per-instance table that ``spec`` reads (its family's, or ``"flat_labels"``; with the
    options of its run when they are its own), as :func:`instance_matrices` caches the tables."""
    return spec.family if spec.options is None else f"{spec.family} {spec.options}"


def instance_table(engine: Engine | None, spec: InstanceStatistic, opts: Options,
                   tables: dict[str, pd.DataFrame], metrics: list[str] | None = None) -> pd.DataFrame:
    """The per-instance table that ``spec`` reads (columns ``system, instance_id`` and :attr:`~InstanceStatistic.
    columns`, ordered by system and item), from ``tables`` under :func:`table_key`, else computed by ``engine``
    (with ``opts``, or the options of the statistic's own run; for the family's ``metrics``, default all) and
    kept there."""
    key = table_key(spec)
    if key not in tables:
        assert engine is not None, f"no per-instance table {key!r} given and no engine to compute it"
        tables[key] = _table(engine, spec.family, spec.options or opts, metrics)
    return tables[key]


def instance_matrices(engine: Engine | None, spec: InstanceStatistic, opts: Options, systems: list[str],
              tables: dict[str, pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame | None] | None:
    """``(numerator, denominator)`` items x systems for ``spec`` (per-instance tables cached in ``tables``
    under :func:`table_key`; ``engine`` computes those not there), or ``None`` when some system lacks a value
    for some item."""
    table = instance_table(engine, spec, opts, tables)

    def wide(terms) -> pd.DataFrame:
        column = table[["system", "instance_id"]].assign(_v=_combine(table, terms))
        return column.pivot(index="instance_id", columns="system", values="_v").reindex(columns=systems)

    num = wide(spec.numerator)
    den = wide(spec.denominator) if spec.denominator is not None else None
    if spec.defined:  # the systems of the run's rows only (hard predictions have none at k > 1)
        num = num[[s for s in systems if s in set(table["system"])]]
        if num.empty:
            return None
        num, den = num.fillna(0.0), num.notna().astype(float)
        if not den.to_numpy().any(axis=0).all():
            return None
    if num.isna().to_numpy().any() or (den is not None and den.isna().to_numpy().any()):
        return None
    if spec.per_item:  # a mean of the items' ratios; one left out (NaN zero) makes it no mean of all items
        import pandas as pd

        ratios = stats.ratio(num.to_numpy(), den.to_numpy(), spec.zero)
        if np.isnan(ratios).any():
            return None
        return pd.DataFrame(ratios, index=num.index, columns=num.columns), None
    return num, den


def paired_tests(num: pd.DataFrame, den: pd.DataFrame | None, zero: float, n_resamples: int = 1000,
                 seed: int | None = 0, confidence: float = 0.95, draws: dict[int, tuple] | None = None
                 ) -> tuple[stats.BootstrapResult, pd.DataFrame]:
    """The paired bootstrap of ``items x systems`` matrices (``θ = Σ num / Σ den``, ``zero`` where ``Σ den``
    is 0; ``den`` ``None``: the mean of ``num``; :func:`hiersql.analyses.stats.paired_bootstrap`) and all four tests of
    every pair of systems (:func:`_pair_tests`: sign and Wilcoxon on the items' own values, the bootstrap's
    p-value, the paired permutation test), the tests of :func:`compare`. ``draws``: ``{number of items:
    (resample counts, permutation swaps)}``, filled and reused for measures on as many items."""
    draws = {} if draws is None else draws
    if len(num) not in draws:
        draws[len(num)] = (stats.resample_counts(len(num), n_resamples, seed),
                           stats.permutation_swaps(len(num), n_resamples, seed))
    counts, swaps = draws[len(num)]
    boot = stats.paired_bootstrap(num, den, n_resamples, seed, confidence, zero, counts=counts)
    return boot, _pair_tests(num, den, boot.pairs, swaps, zero)


def _pair_tests(num: pd.DataFrame, den: pd.DataFrame | None, bootstrap_pairs: pd.DataFrame,
                swaps: tuple, zero_division: float) -> pd.DataFrame:
    """All four tests of every pair of systems, one row per pair. The sign and Wilcoxon tests compare the
    items' own values (``num / den`` per item for a ratio, where ``den > 0``)."""
    if den is None:
        per_item = num
    else:
        per_item = num / den.where(den != 0)
        per_item = per_item.fillna(zero_division)
    sign = stats.micro_sign_test(per_item)
    wilcoxon = stats.wilcoxon_test(per_item)
    permutation = stats.paired_permutation_test(num, den, zero_division=zero_division, swaps=swaps)
    return bootstrap_pairs.rename(columns={"p_value": "bootstrap_p"}).assign(
        sign_n=sign["n"], sign_k=sign["k"], sign_p=sign["p_value"], wilcoxon_p=wilcoxon["p_value"],
        permutation_p=permutation["p_value"])


def ordered_systems(ranking: pd.DataFrame) -> list[str]:
    """Systems in the order of the first measure's ranking (best first; ties by name), then those without a
    row for it (hard predictions at k > 1) by name."""
    first = ranking[ranking["measure"] == ranking["measure"].iloc[0]]
    ranked = list(first.sort_values(["rank", "system"])["system"])
    return ranked + sorted(set(ranking["system"]) - set(ranked))


def group_letter(group: object) -> str:
    """Group 1 → ``a``, 2 → ``b``, ... (27 → ``aa``); empty without a group."""
    import pandas as pd

    if pd.isna(group):
        return ""
    n, out = int(group), ""
    while n:
        n, rest = divmod(n - 1, 26)
        out = chr(ord("a") + rest) + out
    return out


def rank_text(rank: object) -> str:
    """A rank as text; ``-`` for a value that has none (not defined)."""
    import pandas as pd

    return "-" if pd.isna(rank) else str(int(rank))


def oriented(values: pd.Series, metric: str) -> pd.Series:
    """``values`` so that higher is better (losses negated), by the direction the measure declares."""
    from ..measures import higher_is_better

    return values if higher_is_better(metric) else -values


def scores(ranking: pd.DataFrame) -> pd.DataFrame:
    """The values of a ranking (columns ``measure, metric, system, value``) oriented so that higher is better
    (:func:`oriented`), systems x measures in the ranking's order: what the rank correlations read."""
    import pandas as pd

    parts = [oriented(part["value"], str(metric)) for metric, part in ranking.groupby("metric", sort=False)]
    scored = ranking.assign(score=pd.concat(parts) if parts else ranking["value"])
    measures = list(dict.fromkeys(ranking["measure"]))
    return scored.pivot(index="system", columns="measure", values="score")[measures]


def averages_asked(metric: str, options: Options) -> tuple[str, ...]:
    """The averages of ``metric`` that ``options.average`` asks for; ``("",)`` for a measure without averages
    (a plain mean or a total, as its declaration says); a family whose runs differ by their average
    (:attr:`~hiersql.plan.FamilyPlan.run_average`), the average of each run (``@1``, ``@5``)."""
    from ..measures import family_of, plan_of
    from ..plan import averages_of

    plan = plan_of(family_of(metric))
    if plan.run_average is not None:
        return tuple(plan.average_of(group) for _, group in plan.groups([metric], options))
    return ("",) if averages_of(plan, metric) == ("",) else tuple(options.average)


def competition_rank(better: pd.Series) -> pd.Series:
    """Rank 1 for the highest of ``better``, ties sharing the best rank (1, 2, 2, 4); a NaN value (not
    defined: ``zero_division=nan``) has no rank (``<NA>``)."""
    return better.rank(method="min", ascending=False).astype("Int64")


def _groups(systems: pd.Series, better: pd.Series, pair_table: pd.DataFrame | None, alpha: float) -> list:
    """Group numbers of the grouping rule (module docstring); NaN without tests, and for a system whose
    value is NaN (not defined)."""
    if pair_table is None:
        return [None] * len(systems)
    p = {}
    for a, b, value in zip(pair_table["system_a"], pair_table["system_b"], pair_table["p_value"], strict=True):
        p[a, b] = p[b, a] = value
    order = [s for v, s in sorted(zip(-better.to_numpy(), systems, strict=True)) if not math.isnan(v)]
    group: dict[str, int] = {}
    current = 0
    for leader in order:
        if leader in group:
            continue
        current += 1
        group[leader] = current
        for other in order:
            if other not in group and p[leader, other] >= alpha:
                group[other] = current
    return [group.get(s) for s in systems]


def depth_breakdown(evaluator: EvaluatorLike | Store, **options: Any) -> pd.DataFrame:
    """Per-instance hF by the depth of the instance's deepest true label: ``system, depth, metric, value, n``
    (``value`` the mean per-instance hierarchical F over the ``n`` instances at that depth), from
    :func:`hiersql.analyses.breakdowns.by_depth`; the group of depth 0 (no true label below the root) is left
    out."""
    from ..options import make_options
    from .breakdowns import by_depth

    frame = by_depth(getattr(evaluator, "store", evaluator), make_options(**options), measures="hierarchical_f1")
    out = frame[frame["depth"] > 0].rename(columns={"hierarchical_f1": "value", "n_instances": "n"})
    out.insert(2, "metric", "hierarchical_f1")
    return out[["system", "depth", "metric", "value", "n"]].sort_values(["system", "depth"], ignore_index=True)
