"""The session object: one taxonomy, one truth, many systems, any measures.

>>> tax = Taxonomy.from_edges([("root", "a"), ("root", "b"), ("a", "a1")])
>>> ev = Evaluator(tax)
>>> ev.add_truth([["a1"], ["b"]])
>>> ev.add_predictions("sysA", [["a"], ["b"]])
>>> ev.evaluate(["hp", "hr"], average=["micro"])  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import measures as _metrics
from ..engines import DuckDBEngine, Engine
from ..errors import InputError
from ..inputs.arguments import argument_error, is_sequence
from ..inputs.readers import check_label_keywords, prediction_items
from ..inputs.store import LabelSource, Store
from ..inputs.tables import Columns
from ..inputs.taxonomy import Taxonomy, as_taxonomy
from ..measures import Options, Row, compute
from ..options import make_options

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

DEFAULT_METRICS = ("hierarchical_precision", "hierarchical_recall", "hierarchical_f1")


class Evaluator:
    """Evaluate any number of systems against one truth over one taxonomy, inside DuckDB.

    Every argument is checked when given (:mod:`hiersql.inputs.arguments`): a value of the wrong kind is an
    :class:`~hiersql.options.OptionError` (a ``ValueError`` and an :class:`~hiersql.errors.InputError`) naming
    the parameter and the value.

    Parameters
    ----------
    taxonomy:
        A :class:`~hiersql.inputs.taxonomy.Taxonomy`, or what the one-shot functions take: a path to a taxonomy file,
        ``(parent, child)`` edges, a DataFrame with ``parent``/``child`` columns or a networkx DiGraph.
    db:
        A DuckDB file to keep the tables and results in; ``None`` (default) keeps them in memory.
    con:
        An existing DuckDB connection (e.g. your warehouse copy) to create the tables in.
    engine:
        Where the measures are computed: ``"duckdb"`` (default: the store's own DuckDB), ``"postgres"`` or
        ``"spark"`` (with the keywords of :class:`~hiersql.options.RunOptions`: ``postgres_url``,
        ``spark_master``, ``spark_conf``), or an :class:`~hiersql.engines.Engine` you opened (and close). The
        inputs are read and checked by the store, then copied to the engine before each computation: every
        method gives the values of the default engine.
    """

    def __init__(
        self, taxonomy: Taxonomy | str | Path | Any, db: str | Path | None = None,
        con: duckdb.DuckDBPyConnection | None = None, engine: str | Engine | None = None, **run_options: Any,
    ) -> None:
        import duckdb

        taxonomy = as_taxonomy(taxonomy)
        if db is not None and not isinstance(db, str | PathLike):
            raise argument_error("db", "must be the path of a DuckDB file, or None (in memory)", db)
        if con is not None and not isinstance(con, duckdb.DuckDBPyConnection):
            raise argument_error("con", "must be a DuckDB connection or None", con)
        self.taxonomy = taxonomy
        self._instance_ids: list[Any] | None = None  # the caller's ids of the truth's label sets, by position
        self._engine, self._owns_engine = _open_engine(engine, run_options)
        self.store = Store(db, con=con)
        self.store.load_taxonomy(taxonomy)

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        return self.store.con

    def add_truth(self, source: LabelSource, format: str = "long", **kwargs: Any) -> Evaluator:
        """Set the true labels (file path, DataFrame, DuckDB relation or a list of label sets). ``format`` is
        that of a label file; ``kwargs`` are those of :meth:`~hiersql.inputs.store.Store.add_truth`
        (``instance_col``, ... name a table's columns). A keyword that does not apply to ``source`` is an
        error, not left unused (:func:`~hiersql.inputs.readers.check_label_keywords`)."""
        _check_keywords([source], format, kwargs)
        self.store.add_truth(source, format, **kwargs)
        self._instance_ids = _caller_ids(source)
        return self

    def add_predictions(self, system: str | None, source: LabelSource, format: str = "long", **kwargs: Any
                        ) -> Evaluator:
        """Add (or replace) the predictions of ``system`` (a non-empty string; ``None`` for a table with a
        system column); ``source``, ``format`` and ``kwargs`` as :meth:`add_truth`'s."""
        _check_keywords([source], format, kwargs)
        self.store.add_predictions(system, source, format, **kwargs)
        return self

    def add_predictions_many(
        self, predictions: Mapping[str, LabelSource] | Iterable[tuple[str, LabelSource]], format: str = "long",
        **kwargs: Any,
    ) -> Evaluator:
        """Add (or replace) many systems at once, ``{system: source}``: text files are read together, which is
        much faster than one :meth:`add_predictions` per file (see
        :meth:`~hiersql.inputs.store.Store.add_predictions_many`)."""
        items = prediction_items(predictions)
        _check_keywords([source for _, source, _ in items], format, kwargs)
        self.store.add_predictions_many([(system, source) for system, source, _ in items], format, **kwargs)
        return self

    @property
    def systems(self) -> list[str]:
        return self.store.systems()

    def rows(self, metrics: str | list[str] | tuple[str, ...] = DEFAULT_METRICS, **options: Any) -> list[Row]:
        """Values as :class:`~hiersql.measures.Row` tuples (no pandas needed). ``metrics``: names or aliases, as a
        list or one string (``"hp"``, ``"hp,hr"``). ``options`` are the fields of
        :class:`~hiersql.measures.Options` (``average``, ``include_root``, ``max_distance``, ``dmax``, ...).

        ``average`` takes scikit-learn's names (``docs/sklearn.md``): ``micro``, ``macro``, ``samples``,
        ``weighted`` and ``label_macro``; one that a named measure does not have is an error (per-class values,
        scikit-learn's ``None``: :meth:`per_class`). ``zero_division="warn"`` is 0 with an
        :class:`~hiersql.averages.UndefinedMetricWarning` naming each measure and average that divided by zero
        (counting them runs the measures' plans a second time). An evaluator without predictions is an
        error (there is nothing to evaluate)."""
        from ..averages import check_zero_division

        names = _metric_names(metrics)
        zero_division, warn = check_zero_division(options.pop("zero_division", 0.0))
        opts = make_options(zero_division=zero_division, **options)
        self._require_systems()
        engine = self.engine()
        rows = compute(engine, names, opts)
        if warn:
            warn_undefined(engine, rows, opts)
        return rows

    def per_class(self, metric: str, **options: Any) -> pd.DataFrame:
        """Per-class values of a per-class measure (scikit-learn's ``average=None``): a DataFrame ``system,
        label, value``, one row per system and class (the classes of the augmented sets for the set-based
        measures, of L for the flat label-based ones; ``labels=`` fixes them), ordered by system and label."""
        import pandas as pd

        from ..averages import check_average, has_classes
        from ..plan import class_values_sql

        family, name = _metrics.lookup(metric, "metric")
        plan = _metrics.plan_of(family)
        if not has_classes(plan, name):
            raise argument_error("metric", "must be a measure with per-class values (the set-based hierarchical_*"
                                 " and the flat label_* measures)", metric)
        opts = make_options(**options)
        self._require_systems()
        check_average(plan, name, None, opts.labels is not None)
        sql = class_values_sql(plan, name, fixed_classes=opts.labels is not None)
        rows = self.engine().run_queries(plan, [name], opts, {"_class_values": sql})["_class_values"]
        return pd.DataFrame(rows, columns=["system", "label", "value"])

    def evaluate(self, metrics: str | list[str] | tuple[str, ...] = DEFAULT_METRICS, **options: Any
                 ) -> pd.DataFrame:
        """A DataFrame ``system, metric, average, value`` for every system and requested measure (as
        :meth:`rows`)."""
        import pandas as pd

        return pd.DataFrame(self.rows(metrics, **options), columns=list(Row._fields))

    def per_instance(self, family: str, **options: Any) -> pd.DataFrame:
        """Per-instance values of a family (``"set_based"``, ``"flat"``, ...) or of the family of a metric, one
        row per system and instance, ordered by system and instance. A truth given as label sets keeps the
        caller's ids and order: ``instance_id`` is the position (an integer from 0), or the index label of a
        pandas Series, so that a column assigned back to the caller's frame lands on its rows."""
        name, _ = _metrics.lookup(family, "family", groups=True)
        opts = make_options(**options)
        self._require_systems()
        frame = _metrics.family(name).per_instance(self.engine(), opts)
        if self._instance_ids is None:
            return frame
        position = frame["instance_id"].astype(int)
        frame = frame.assign(instance_id=[self._instance_ids[i] for i in position], _position=position)
        return frame.sort_values(["system", "_position"], kind="stable").drop(columns="_position").reset_index(
            drop=True)

    def compare(self, metrics: str | list[str] | tuple[str, ...] = DEFAULT_METRICS, **kwargs: Any):
        """Values with bootstrap confidence intervals, paired tests of every pair of systems, ranks, groups
        and rank correlations between the measures: a :class:`~hiersql.analyses.compare.Comparison` of DataFrames
        (see :func:`hiersql.analyses.compare.compare` for the arguments; ``metrics`` as :meth:`rows`)."""
        from ..analyses.compare import compare

        names = _metric_names(metrics)
        self._require_systems()
        return compare(self, names, engine=self.engine(), **kwargs)

    def save(self, rows: list[Row] | pd.DataFrame, dataset: str | None = None, run_id: str | None = None) -> str:
        """Write ``rows`` (of :meth:`rows`, or the DataFrame of :meth:`evaluate`) into the ``results`` table in
        one transaction; returns the run id. ``dataset`` and ``run_id``: non-empty strings or ``None``."""
        from ..inputs.arguments import check_text
        from ..inputs.results import save_rows

        rows = _result_rows(rows)
        dataset = None if dataset is None else check_text(dataset, "dataset")
        run_id = None if run_id is None else check_text(run_id, "run_id")
        return save_rows(self.store, rows, dataset, run_id)

    def _require_systems(self) -> None:
        """An evaluator without predictions has nothing to evaluate: an error, not an empty result."""
        if not self.store.systems():
            raise InputError("nothing to evaluate: no system's predictions were added (Evaluator.add_predictions)")

    def engine(self) -> Engine:
        """The engine the measures run on, holding the store's current tables (copied to an engine other than
        the store's DuckDB at each call: predictions added since are there)."""
        if self._engine is None:
            return DuckDBEngine(self.store)
        self._engine.copy_store(self.store)
        return self._engine

    def close(self) -> None:
        self.store.close()
        if self._owns_engine and self._engine is not None:
            self._engine.close()


def _caller_ids(source: Any) -> list[Any] | None:
    """The caller's instance ids of a truth given as label sets (the store names instance ``i`` ``"i"``): the
    positions, or a pandas Series' index labels; ``None`` for every other source (its ids are its own)."""
    from ..inputs.sources import is_table

    if isinstance(source, str | PathLike | Mapping) or is_table(source) or not is_sequence(source):
        return None
    index = getattr(source, "index", None)
    return list(index) if index is not None and hasattr(source, "iloc") else list(range(len(source)))


def _open_engine(engine: str | Engine | None, run_options: Mapping[str, Any]) -> tuple[Engine | None, bool]:
    """``(engine, whether the evaluator opened it)`` for :class:`Evaluator`'s ``engine`` and ``run_options``
    (``None``: the store's DuckDB); a bad value is an error naming the argument."""
    from ..engines import open_engine
    from ..options import RUN_OPTIONS, RunOptions

    if isinstance(engine, Engine):
        if run_options:
            raise TypeError(f"run options {sorted(run_options)} go with an engine name, not an opened engine")
        return engine, False
    if engine is not None and not isinstance(engine, str):
        raise argument_error("engine", "must be 'duckdb', 'postgres', 'spark' or an Engine", engine)
    known = {o.name for o in RUN_OPTIONS if o.engine}  # an engine's own settings (memory_limit is the store's)
    unknown = sorted(set(run_options) - known)
    if unknown:
        raise TypeError(f"unknown argument(s) {unknown} (run options: {', '.join(sorted(known))})")
    opened = open_engine(RunOptions(engine=engine or "duckdb", **run_options))
    return opened, opened is not None


def _metric_names(metrics: Any) -> list[str]:
    """``metrics`` of :meth:`Evaluator.rows`, :meth:`~Evaluator.evaluate` and :meth:`~Evaluator.compare` as a
    list of names: one string (``"hp"``, ``"hp,hr"``, as ``average="micro"`` is one average) or a sequence of
    names, at least one, each a name or alias of :func:`hiersql.measures.resolve` (errors name ``metrics``,
    the Python argument, not the command line's ``--metrics``)."""
    if isinstance(metrics, str):
        names = metrics.split(",")
    elif is_sequence(metrics):
        names = list(metrics)
    else:
        raise argument_error("metrics", "must be a measure's name or alias, or a list of them", metrics)
    names = [name.strip() if isinstance(name, str) else name for name in names]
    names = [name for name in names if name != ""]
    if not names:
        raise argument_error("metrics", "must name at least one measure", metrics)
    _metrics.resolve(names)
    return names


def _check_keywords(sources: list[Any], format: Any, kwargs: dict[str, Any]) -> None:
    """The ``format`` and column keywords of a call reading ``sources``
    (:func:`~hiersql.inputs.readers.check_label_keywords`)."""
    check_label_keywords(sources, format, Columns(**{role: kwargs.get(f"{role}_col") for role in
                                                     ("instance", "label", "score", "system", "rank")}))


def _result_rows(rows: Any) -> list[Row]:
    """The rows :meth:`Evaluator.save` writes: :meth:`Evaluator.rows`'s, any ``(system, metric, average,
    value)`` tuples, or a DataFrame with those columns (:meth:`Evaluator.evaluate`'s)."""
    rule = "must be Evaluator.rows() or the DataFrame of Evaluator.evaluate() (system, metric, average, value)"
    if hasattr(rows, "columns"):
        if not set(Row._fields) <= set(rows.columns):
            raise argument_error("rows", rule, rows)
        rows = rows[list(Row._fields)].itertuples(index=False, name=None)
    elif not is_sequence(rows):
        raise argument_error("rows", rule, rows)
    out = []
    for row in rows:
        if not isinstance(row, tuple) or len(row) != len(Row._fields):
            raise argument_error("rows", rule, row)
        out.append(Row(*row))
    return out


def warn_undefined(source: Store | Engine, rows: list[Row], options: Options) -> None:
    """An :class:`~hiersql.averages.UndefinedMetricWarning` for every (system, measure, average) of ``rows``
    whose ratio had a zero denominator somewhere (:func:`hiersql.plan.undefined_sql`; one run of the
    measure's plan per measure, by ``source``: an engine, or a store run by DuckDB)."""
    import warnings

    from ..averages import UndefinedMetricWarning
    from ..plan import undefined_sql

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
        engine = _metrics.as_engine(source)
        found = engine.run_queries(plan, [metric], options, queries)
        for name, table in found.items():
            average = wanted[int(name.rsplit("_", 1)[1])]
            for system, units, total in table:
                if units:
                    warnings.warn(f"{metric} ({average or 'mean'}) of system {system!r} is ill-defined and being"
                                  f" set to 0.0 in {units} of {total} unit(s) with a zero denominator; use the"
                                  " zero_division parameter to control this behavior", UndefinedMetricWarning,
                                  stacklevel=3)
