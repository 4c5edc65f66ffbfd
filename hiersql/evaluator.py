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
from .metrics import Row, compute  # compute: kept importable from here
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

    def rows(self, metrics: list[str] | tuple[str, ...] = DEFAULT_METRICS, **options: Any) -> list[Row]:
        """Values as :class:`~hiersql.metrics.Row` tuples (no pandas needed). ``options`` are the fields of
        :class:`~hiersql.metrics.Options` (``average``, ``include_root``, ``max_distance``, ``dmax``, ...)."""
        return compute(self.store, metrics, make_options(**options))

    def evaluate(self, metrics: list[str] | tuple[str, ...] = DEFAULT_METRICS, **options: Any) -> pd.DataFrame:
        """A DataFrame ``system, metric, average, value`` for every system and requested measure."""
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

