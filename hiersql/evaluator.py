"""The session object: one taxonomy, one truth, many systems, any measures.

>>> tax = Taxonomy.from_edges([("root", "a"), ("root", "b"), ("a", "a1")])
>>> ev = Evaluator(tax)
>>> ev.add_truth([["a1"], ["b"]])
>>> ev.add_predictions("sysA", [["a"], ["b"]])
>>> ev.evaluate(["hp", "hr"], average=["micro"])  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import metrics as _metrics
from .engines import DuckDBEngine, Engine
from .metrics import Options, Row, compute  # compute: kept importable from here
from .options import make_options  # checks the options once; kept importable from here
from .store import LabelSource, Store
from .taxonomy import Taxonomy

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

DEFAULT_METRICS = ("hierarchical_precision", "hierarchical_recall", "hierarchical_f1")


class Evaluator:
    """Evaluate any number of systems against one truth over one taxonomy, inside DuckDB.

    Parameters
    ----------
    taxonomy:
        A :class:`~hiersql.taxonomy.Taxonomy` (or a path to a taxonomy file).
    db:
        A DuckDB file to keep the tables and results in; ``None`` (default) keeps them in memory.
    con:
        An existing DuckDB connection (e.g. your warehouse copy) to create the tables in.
    """

    def __init__(
        self, taxonomy: Taxonomy | str | Path, db: str | Path | None = None,
        con: duckdb.DuckDBPyConnection | None = None,
    ) -> None:
        if isinstance(taxonomy, str | Path):
            taxonomy = Taxonomy.from_file(taxonomy)
        self.taxonomy = taxonomy
        self.store = Store(db, con=con)
        self.store.load_taxonomy(taxonomy)

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        return self.store.con

    def add_truth(self, source: LabelSource, format: str = "long", **kwargs: Any) -> Evaluator:
        """Set the true labels (file path, DataFrame, DuckDB relation or a list of label sets)."""
        self.store.add_truth(source, format, **kwargs)
        return self

    def add_predictions(self, system: str, source: LabelSource, format: str = "long", **kwargs: Any) -> Evaluator:
        """Add (or replace) the predictions of ``system``."""
        self.store.add_predictions(system, source, format, **kwargs)
        return self

    def add_predictions_many(
        self, predictions: Mapping[str, LabelSource] | Iterable[tuple[str, LabelSource]], format: str = "long",
        **kwargs: Any,
    ) -> Evaluator:
        """Add (or replace) many systems at once, ``{system: source}``: text files are read together, which is
        much faster than one :meth:`add_predictions` per file (see
        :meth:`~hiersql.store.Store.add_predictions_many`)."""
        self.store.add_predictions_many(predictions, format, **kwargs)
        return self

    @property
    def systems(self) -> list[str]:
        return self.store.systems()

    def rows(self, metrics: str | list[str] | tuple[str, ...] = DEFAULT_METRICS, **options: Any) -> list[Row]:
        """Values as :class:`~hiersql.metrics.Row` tuples (no pandas needed). ``metrics``: names or aliases, as a
        list or one string (``"hp"``, ``"hp,hr"``). ``options`` are the fields of
        :class:`~hiersql.metrics.Options` (``average``, ``include_root``, ``max_distance``, ``dmax``, ...).

        ``average`` takes scikit-learn's names (``docs/sklearn.md``): ``micro``, ``macro``, ``samples``,
        ``weighted`` and ``label_macro``; one that a named measure does not have is an error (per-class values,
        scikit-learn's ``None``: :meth:`per_class`). ``zero_division="warn"`` is 0 with an
        :class:`~hiersql.averages.UndefinedMetricWarning` naming each measure and average that divided by zero
        (counting them runs the measures' plans a second time)."""
        from .averages import check_zero_division

        zero_division, warn = check_zero_division(options.pop("zero_division", 0.0))
        opts = make_options(zero_division=zero_division, **options)
        if isinstance(metrics, str):  # as average="micro" is one average
            metrics = [name.strip() for name in metrics.split(",") if name.strip()]
        rows = compute(self.store, metrics, opts)
        if warn:
            warn_undefined(self.store, rows, opts)
        return rows

    def per_class(self, metric: str, **options: Any) -> pd.DataFrame:
        """Per-class values of a per-class measure (scikit-learn's ``average=None``): a DataFrame ``system,
        label, value``, one row per system and class (the classes of the augmented sets for the set-based
        measures, of L for the flat label-based ones; ``labels=`` fixes them), ordered by system and label."""
        import pandas as pd

        from .averages import check_average
        from .metrics import catalog, plan_of
        from .plan import class_values_sql

        opts = make_options(**options)
        plan = plan_of(catalog()[metric][0])
        name = catalog()[metric][1]
        check_average(plan, name, None, opts.labels is not None)
        sql = class_values_sql(plan, name, fixed_classes=opts.labels is not None)
        rows = DuckDBEngine(self.store).run_queries(plan, [name], opts, {"_class_values": sql})["_class_values"]
        return pd.DataFrame(rows, columns=["system", "label", "value"])

    def evaluate(self, metrics: str | list[str] | tuple[str, ...] = DEFAULT_METRICS, **options: Any
                 ) -> pd.DataFrame:
        """A DataFrame ``system, metric, average, value`` for every system and requested measure (as
        :meth:`rows`)."""
        import pandas as pd

        return pd.DataFrame(self.rows(metrics, **options), columns=list(Row._fields))

    def per_instance(self, family: str, **options: Any) -> pd.DataFrame:
        """Per-instance values of a family (``"set_based"``, ``"flat"``, ...) or of the family of a metric."""
        name = family if family in _metrics.FAMILIES else _metrics.catalog()[family][0]
        return _metrics.family(name).per_instance(self.store, make_options(**options))

    def compare(self, metrics: list[str] | tuple[str, ...] = DEFAULT_METRICS, **kwargs: Any):
        """Values with bootstrap confidence intervals, paired tests of every pair of systems, ranks, groups
        and rank correlations between the measures: a :class:`~hiersql.compare.Comparison` of DataFrames
        (see :func:`hiersql.compare.compare` for the arguments)."""
        from .compare import compare

        return compare(self, metrics, **kwargs)

    def save(self, rows: list[Row], dataset: str | None = None, run_id: str | None = None) -> str:
        """Write ``rows`` into the ``results`` table in one transaction; returns the run id."""
        from .results import save_rows

        return save_rows(self.store, rows, dataset, run_id)

    def close(self) -> None:
        self.store.close()


def warn_undefined(source: Store | Engine, rows: list[Row], options: Options) -> None:
    """An :class:`~hiersql.averages.UndefinedMetricWarning` for every (system, measure, average) of ``rows``
    whose ratio had a zero denominator somewhere (:func:`hiersql.plan.undefined_sql`; one run of the
    measure's plan per measure, by ``source``: an engine, or a store run by DuckDB)."""
    import warnings

    from .averages import UndefinedMetricWarning
    from .plan import undefined_sql

    averages: dict[str, list[str]] = {}
    for row in rows:
        averages.setdefault(row.metric, [])
        if row.average not in averages[row.metric]:
            averages[row.metric].append(row.average)
    for metric, wanted in averages.items():
        plan = _metrics.plan_of(_metrics.catalog()[metric][0])
        queries = {f"_undefined_{i}": undefined_sql(plan, metric, average, False, options.labels is not None)
                   for i, average in enumerate(wanted) if plan.summary is None}
        queries = {name: sql for name, sql in queries.items() if sql is not None}
        if not queries:
            continue
        engine = source if isinstance(source, Engine) else DuckDBEngine(source)
        found = engine.run_queries(plan, [metric], options, queries)
        for name, table in found.items():
            average = wanted[int(name.rsplit("_", 1)[1])]
            for system, units, total in table:
                if units:
                    warnings.warn(f"{metric} ({average or 'mean'}) of system {system!r} is ill-defined and being"
                                  f" set to 0.0 in {units} of {total} unit(s) with a zero denominator; use the"
                                  " zero_division parameter to control this behavior", UndefinedMetricWarning,
                                  stacklevel=3)
