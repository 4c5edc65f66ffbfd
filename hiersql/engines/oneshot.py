"""The scikit-learn style one-shot functions (``hiersql.hierarchical_f1(y_true, y_pred, taxonomy, ...)``): the
checks of ``average``, ``sample_weight``, ``labels`` and ``zero_division`` shared by all of them, and the
process-wide DuckDB database they run in.

Every call computes its measure with the family's plan (:mod:`hiersql.plan`): the averages, the sample weights
and the per-class values are the SQL generated from the plan's declared measures (:func:`~hiersql.plan.
summary_sql`, :func:`~hiersql.plan.class_values_sql`), the zero divisions of ``zero_division="warn"`` are
counted by :func:`~hiersql.plan.undefined_sql`. What each average means per family: ``docs/sklearn.md``.

Speed: one in-memory DuckDB database serves the whole process. A :class:`~hiersql.inputs.taxonomy.Taxonomy` passed
again (the same object) keeps its tables (edges, nodes, closure) in a schema of that database, built once and
dropped when the object is garbage-collected; a taxonomy given in another form (edges, a path, a graph) is
built for the call and dropped after it. Each call runs on a cursor of its own (a DuckDB connection to the same
database: its own temporary tables and views, its own ``search_path``): the label sets are views over Arrow
tables, the stages temporary tables, and all vanish when it closes: calls from several threads do not see
each other's tables.
"""

from __future__ import annotations

import functools
import itertools
import re
import threading
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .. import sqlfiles
from ..averages import (
    UndefinedMetricWarning,
    check_average,
    check_labels_meaning,
    check_sample_weight,
    check_zero_division,
)
from ..errors import DataWarning, InputError
from ..inputs.arguments import label_names, label_set_members, label_text, paired_label_sets, shown
from ..inputs.closure import TAXONOMY_TABLES, fill_taxonomy
from ..options import OptionError
from ..plan import Python, Sql
from .compile import render
from .duckdb import DuckDBEngine

if TYPE_CHECKING:
    import duckdb
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    from ..inputs.taxonomy import Taxonomy
    from ..options import Options
    from ..plan import FamilyPlan, Row, Step

SYSTEM = "y_pred"  # the one system of a one-shot call


# ------------------------------------------------------------------------------ the process-wide database
_lock = threading.Lock()
_database: dict[str, Any] = {}
_schemas: dict[int, tuple[weakref.ref, str]] = {}  # id(taxonomy) -> (its weak reference, its schema)
_numbers = itertools.count(1)
SMALL_CALL = 100_000  # calls with fewer instances run with the settings of _small_call
SMALL_CALL_OFF = "join_order,statistics_propagation,compressed_materialization"  # DuckDB optimizers off then


def connection() -> duckdb.DuckDBPyConnection:
    """The process-wide in-memory DuckDB database of the one-shot functions (made on first use)."""
    import duckdb

    with _lock:
        if "con" not in _database:
            _database["con"] = duckdb.connect()
        return _database["con"]


def _small_call(instances: int) -> None:
    """Below :data:`SMALL_CALL` instances the database runs on one thread, and the optimizers
    :data:`SMALL_CALL_OFF` are off. On small inputs DuckDB's workers only add their own scheduling (two threads
    cost about a tenth more CPU and wall time at 1,000 instances). Without the join-order optimizer the
    queries' joins run in the order written: its estimates on tables of a few thousand rows can be far off
    (for GermEval's pair distances it joins the closure to itself on the root first, 140,000 rows for 2,000
    pairs, and the pair-based calls take a fifth longer). The statistics (and the compressed keys built from
    them) cost more than they save on a few thousand rows: an LCA call of 1,000 GermEval instances, whose
    stages hold some 60 joins and aggregates, takes 7-8 % less CPU without them. A larger call gets DuckDB's
    defaults back. (These settings are the database's: a large call running beside small ones in other
    threads may run with the small calls' settings, only slower.)"""
    small = instances < SMALL_CALL
    con = connection()
    with _lock:
        if _database.get("small") != small:
            for statement in (("SET threads = 1", f"SET disabled_optimizers = '{SMALL_CALL_OFF}'") if small else
                              ("RESET threads", "RESET disabled_optimizers")):
                con.execute(statement)
            _database["small"] = small


def _taxonomy_schema(taxonomy: Taxonomy, keep: bool) -> str:
    """The schema holding ``taxonomy``'s tables (``schema.sql``, taxonomy filled), made now unless ``keep``
    made it before for this very object. Schemas of collected taxonomies are dropped here."""
    con = connection()
    with _lock:
        for key, (ref, name) in list(_schemas.items()):
            if ref() is None:
                del _schemas[key]
                _drop_schema(con, name)
        found = _schemas.get(id(taxonomy))
        if keep and found is not None and found[0]() is taxonomy:
            return found[1]
        name = f"taxonomy_{next(_numbers)}"  # made here, never from input
        cur = con.cursor()
        try:
            cur.execute(f"CREATE SCHEMA {name}")
            cur.execute(f"SET search_path = '{name}'")
            cur.execute(sqlfiles.queries("schema")["schema"])
            cur.execute("BEGIN")
            fill_taxonomy(cur, taxonomy)
            cur.execute("INSERT INTO systems VALUES ($s, $s)", {"s": SYSTEM})  # the one system of every call
            cur.execute("COMMIT")
        except BaseException:
            cur.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
            raise
        finally:
            cur.close()
        if keep:
            _schemas[id(taxonomy)] = (weakref.ref(taxonomy), name)
        return name


@contextmanager
def session(taxonomy: Taxonomy, keep: bool) -> Iterator[tuple[duckdb.DuckDBPyConnection, str]]:
    """A cursor of the process-wide database whose ``search_path`` is ``taxonomy``'s schema, and that schema's
    name; the cursor's temporary tables (labels, stages) vanish when it closes. ``keep``: keep the schema for
    later calls with the same object."""
    name = _taxonomy_schema(taxonomy, keep)
    with _lock:
        cur = _database["con"].cursor()
    try:
        cur.execute(f"SET search_path = '{name}'")
        yield cur, name
    finally:
        cur.close()
        if not keep:
            with _lock:
                _drop_schema(_database["con"], name)


def _drop_schema(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Drop a taxonomy's schema, and forget the stages made there (:func:`_taxonomy_stage`) and the rows read
    from it (:meth:`FoldedEngine.execute`); under ``_lock``."""
    con.execute(f"DROP SCHEMA {name} CASCADE")
    for made in (_TAXONOMY_STAGES, _TAXONOMY_ROWS):
        for key in [key for key in made if key[0] == name]:
            del made[key]


def load_sets(con: duckdb.DuckDBPyConnection, taxonomy: Taxonomy, y_true: Sequence[Any], y_pred: Sequence[Any],
              weights: list[float] | None, scores: Sequence[float] | None = None) -> None:
    """The tables ``instances, truth, predictions`` (and ``sample_weights``) of a one-shot call, as views of
    the cursor over Arrow tables (``systems``, the one system :data:`SYSTEM`, and the empty ``pair_counts`` are
    the taxonomy schema's): instance ``i`` (id ``"i"``) has the label sets ``y_true[i]`` and ``y_pred[i]``;
    ``scores``, when given, is the score of every predicted label, in the order of ``y_pred``'s labels (sets
    without repeated labels: :mod:`hiersql.measures.severity` makes them from a score matrix).
    Checked as :class:`~hiersql.inputs.store.Store` checks label sets: a missing label or one that is not a node is
    an :class:`~hiersql.errors.InputError` naming ``y_true``/``y_pred``, the instance's index (``y_true[i]``) and the
    label; a label repeated within a set counts once (a :class:`~hiersql.errors.DataWarning`)."""
    import numpy as np
    import pyarrow as pa

    n = len(y_true)
    ids = pa.array(np.arange(n)).cast(pa.string())
    tables = {"instances": pa.table({"instance_id": ids}), "truth": _rows(y_true, "y_true", taxonomy, ids)}
    pred = _rows(y_pred, "y_pred", taxonomy, ids)
    tables["predictions"] = pa.table({"system": pa.repeat(SYSTEM, len(pred)), **dict(zip(
        pred.column_names, pred.columns, strict=True)), "score": pa.nulls(len(pred), pa.float64()) if scores is None
        else pa.array(scores, pa.float64())})
    if n and not len(pred):  # as the store says of a prediction source without labels
        warnings.warn("y_pred: no predicted label; evaluated as a system that predicted nothing for every instance",
                      DataWarning, stacklevel=4)
    if weights is not None:
        tables["sample_weights"] = pa.table({"instance_id": ids, "weight": pa.array(weights, pa.float64())})
    for name, table in tables.items():  # views of the cursor over the Arrow tables: no copy, gone with it
        con.register(name, table)


def _rows(sets: Sequence[Any], where: str, taxonomy: Taxonomy, ids: pa.Array) -> pa.Table:
    """``(instance_id, label, rank)`` of the label sets ``sets`` (instance ``i`` is ``ids[i]``), checked
    (:func:`load_sets`): converted by Arrow when every label is text, each distinct label checked once; else, or
    when a check fails or a set repeats a label, label by label (:func:`_checked_rows`), which names the first
    bad label, converts other values to strings, strips the spaces around labels and counts the repeated
    labels. (A taxonomy's node names have no spaces around them: a label that has them is never found in
    Arrow.)"""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    # lists (the common input) go to Arrow as they are; Arrow would read a string as a list of characters
    members = sets if set(map(type, sets)) <= {list} else [
        label_set_members(labelset, where, i) for i, labelset in enumerate(sets)]
    try:
        lists = pa.array(members, pa.list_(pa.string()))
    except (pa.ArrowTypeError, pa.ArrowInvalid):  # a label that is not text
        lists = None
    if lists is not None and not lists.flatten().null_count:
        labels = lists.flatten()
        parents = pc.list_parent_indices(lists).to_numpy()
        virtual = taxonomy.root if taxonomy.virtual_root else None
        encoded = pc.dictionary_encode(labels)
        if all(label and label in taxonomy and label != virtual for label in encoded.dictionary.to_pylist()) and \
                _no_repeats(parents, encoded.indices.to_numpy(), len(encoded.dictionary)):
            ranks = np.arange(len(labels)) - lists.offsets.to_numpy()[parents] + 1
            return pa.table({"instance_id": ids.take(parents), "label": labels, "rank": pa.array(ranks, pa.int32())})
    instance_ids, labels, ranks = _checked_rows(members, where, taxonomy)
    return pa.table({"instance_id": pa.array(instance_ids, pa.string()), "label": pa.array(labels, pa.string()),
                     "rank": pa.array(ranks, pa.int32())})


def _no_repeats(sets: np.ndarray, labels: np.ndarray, distinct: int) -> bool:
    """Whether no set repeats a label: the pairs (``sets[j]``, ``labels[j]``) are distinct."""
    import numpy as np

    pairs = sets.astype(np.int64) * distinct + labels
    span = (int(sets[-1]) + 1) * distinct if len(sets) else 0
    if span <= 4 * len(pairs) + 1_000_000:  # counting the pairs costs a pass, sorting them several
        return int(np.bincount(pairs, minlength=1).max(initial=0)) <= 1
    pairs.sort()
    return not (pairs[1:] == pairs[:-1]).any()


def _checked_rows(sets: Sequence[Any], where: str, taxonomy: Taxonomy) -> tuple[list[str], list[str], list[int]]:
    """:func:`_rows` label by label: each label as a string without the spaces around it (:func:`~hiersql.
    inputs.label_text`, as the store reads labels); the first bad label is an :class:`~hiersql.errors.InputError`."""
    ids: list[str] = []
    labels: list[str] = []
    ranks: list[int] = []
    duplicates = 0
    virtual = taxonomy.root if taxonomy.virtual_root else None
    for i, labelset in enumerate(sets):
        members = label_set_members(labelset, where, i)
        seen: set[str] = set()
        for label in members:
            text = label_text(label)
            if not text:
                raise InputError("missing label (empty, None or NaN)", f"{where}[{i}]", None, shown(label))
            label = text
            if label not in taxonomy:
                raise InputError("label not in the taxonomy", f"{where}[{i}]", None, label)
            if label == virtual:
                raise InputError("label is the virtual root added above the taxonomy's parentless nodes, not one"
                                 " of its nodes", f"{where}[{i}]", None, label)
            if label in seen:
                duplicates += 1
                continue
            seen.add(label)
            ids.append(str(i))
            labels.append(label)
            ranks.append(len(seen))
    if duplicates:
        warnings.warn(f"{where}: {duplicates} duplicate (instance_id, label) row(s) collapsed", DataWarning,
                      stacklevel=6)
    return ids, labels, ranks


# ------------------------------------------------------------------------------------------------- the engine
@functools.lru_cache(maxsize=512)
def _folded(file: str, query: str, params: tuple, done: frozenset[str], text: str | None) -> str | None:
    """The folded text of a stage without its comments (a ``$name`` in a comment is not a parameter), or
    ``None`` when it still needs a parameter that is not a plain value."""
    import sqlglot
    from sqlglot import exp

    skip = _not_read(file, query, done, text)
    tree = sqlglot.parse_one(render(file, query, dict(params), "duckdb", pretty=False, skip=skip, text=text) + "\n",
                             read="duckdb")
    return None if tree.find(exp.Placeholder) else tree.sql(dialect="duckdb", comments=False, copy=False)


def _not_read(file: str, query: str, done: frozenset[str], text: str | None) -> frozenset[str]:
    """The queries of ``sql/<file>.sql`` that the stage ``query`` (or ``text``) does not compose: those in
    ``done`` (tables already) and those that only they read (a query composed into a stage that was not made,
    :func:`_read_by_one`, is read through its reader's table, not again)."""
    queries = sqlfiles.queries(file)
    code = {q: sqlfiles.without_comments(body) for q, body in queries.items()}
    if text is not None:
        code[query] = sqlfiles.without_comments(text)
    needed: set[str] = set()
    stack = [query]
    while stack:
        reader = code[stack.pop()]
        for dep in queries:
            if dep != query and dep not in done and dep not in needed and re.search(rf"\b{dep}\b", reader):
                needed.add(dep)
                stack.append(dep)
    return frozenset(set(queries) - needed)


@functools.cache
def _duckdb_variants(file: str) -> frozenset[str]:
    """The queries of ``sql/<file>.sql`` with a DuckDB variant (``-- name: NAME (duckdb)``)."""
    portable = sqlfiles.queries(file)
    return frozenset(q for q, body in sqlfiles.queries(file, "duckdb").items() if body != portable.get(q))


class FoldedEngine(DuckDBEngine):
    """The DuckDB engine of a one-shot call: each stage is the portable query with its parameters as literals,
    constant-folded (:func:`hiersql.engines.render`: the branches of other options are gone) and kept for the
    next call with the same options. DuckDB plans the folded text several times faster than the query with the
    branches of every option, which is most of a small call's time. The stages of a plan without Python steps
    are composed into the generated query (:attr:`~hiersql.engines.Engine.compose_stages`); in a plan with
    Python steps, the stages that only one later stage reads (:func:`_read_by_one`), and the per-instance stage
    when one generated query reads it (``compose_instance``). A generated query (``text``) is a table too: the
    runner reads it once, right after (:meth:`~hiersql.engines.Engine.run_queries`), and its few rows cost
    less to write than a view's query costs to bind a second time."""

    compose_stages = True
    compose_instance = False  # one generated query reads the per-instance stage: compose it in
    schema = ""  # the call's taxonomy schema (:func:`session`)

    def execute(self, sql: str) -> list[tuple]:
        """The rows of ``sql``; those of a query of the taxonomy's tables alone (a plan's parameter, such as
        whether a node has several parents) kept for later calls with the same taxonomy object."""
        if not _reads_taxonomy_only(sql):
            return super().execute(sql)
        key = (self.schema, sql)
        with _lock:
            rows = _TAXONOMY_ROWS.get(key)
        if rows is None:
            rows = super().execute(sql)
            with _lock:
                _TAXONOMY_ROWS[key] = rows
        return rows

    def stage(self, file: str, query: str, params: Any, done: set[str], text: str | None = None) -> None:
        plain = tuple(sorted((k, v) for k, v in params.items() if v is None or isinstance(v, bool | int | float | str)))
        if text is None and query in _duckdb_variants(file):  # the query as written for DuckDB
            text = sqlfiles.queries(file, "duckdb")[query]
        sql = _folded(file, query, plain, frozenset(done), text)
        if sql is None:
            super().stage(file, query, params, done, text)
            return
        if _reads_taxonomy_only(sql) and _taxonomy_stage(self.con, self.schema, query, sql):
            done.add(query)
            return
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE {query} AS {_stored(self.con, sql)}")
        done.add(query)

    def _steps(self, plan: FamilyPlan, steps: Sequence[Step], params: dict[str, object], options: Options,
               made: frozenset[str] | set[str] = frozenset()) -> set[str]:
        inline = _read_by_one(plan)
        if self.compose_instance and _per_plan(plan, _instance_composable):
            inline |= {plan.instance}
        return super()._steps(plan, [s for s in steps if not (isinstance(s, Sql) and s.query in inline)], params,
                              options, made)


_TAXONOMY_STAGES: dict[tuple[str, str], str] = {}  # (schema, stage) -> the folded text of the table made there
_TAXONOMY_ROWS: dict[tuple[str, str], list[tuple]] = {}  # (schema, query) -> its rows


@functools.lru_cache(maxsize=512)
def _reads_taxonomy_only(sql: str) -> bool:
    """Whether the folded stage ``sql`` reads the taxonomy's tables and nothing else (no label set, no stage
    made from them): its rows are the same in every call with that taxonomy."""
    import sqlglot
    from sqlglot import exp

    tree = sqlglot.parse_one(sql, read="duckdb")
    tables = {table.name for table in tree.find_all(exp.Table)} - {cte.alias for cte in tree.find_all(exp.CTE)}
    return bool(tables) and tables <= TAXONOMY_TABLES


def _taxonomy_stage(con: duckdb.DuckDBPyConnection, schema: str, query: str, sql: str) -> bool:
    """Whether the stage ``query``, which reads only the taxonomy's tables (folded text ``sql``), is a table of
    the taxonomy's schema ``schema``: made there by the first call that needs it (from ``con``), read by
    later calls with the same taxonomy object through their ``search_path`` (the LCA closure on node
    positions: one statement less per call). A stage of that name made there from another text (other
    options) is not: the call makes its own temporary table, which its cursor reads first."""
    key = (schema, query)
    with _lock:
        made = _TAXONOMY_STAGES.get(key)
        if made is None:
            con.execute(f"CREATE TABLE {schema}.{query} AS {sql}")  # names made here and the plans' own
            _TAXONOMY_STAGES[key] = made = sql
    return made == sql


_STORED: dict[str, str] = {}  # folded text -> the view of the process-wide database that holds it
STORED_VIEWS = 2048  # at most this many: texts beyond are run as they are


def _stored(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    """``sql`` as a query reading a view of the process-wide database (schema ``hiersql_queries``) that holds
    it, made on first use from the call's cursor ``con`` (``sql`` itself once :data:`STORED_VIEWS` are
    made). DuckDB parses a stored view once, and parsing a stage's text costs about a microsecond per
    character (6-7 ms of an LCA call, a tenth of it). The view's names are bound when it is read, on the
    reading cursor, as the text's would be: its temporary tables (label sets, stages) first, then its
    taxonomy's schema."""
    name = _STORED.get(sql)
    if name is None:
        with _lock:
            name = _STORED.get(sql)
            if name is None:
                if len(_STORED) >= STORED_VIEWS:
                    return sql
                name = f"hiersql_queries.q{len(_STORED) + 1}"  # made here, never from input
                con.execute("CREATE SCHEMA IF NOT EXISTS hiersql_queries")
                con.execute(f"CREATE VIEW {name} AS {sql}")
                _STORED[sql] = name
    return f"SELECT * FROM {name}"


def _instance_composable(plan: FamilyPlan) -> bool:
    """Whether the plan's per-instance stage may be composed into a generated query that reads it: no other
    stage reads it and no Python step rewrites it."""
    stages = {step.query for step in plan.steps if isinstance(step, Sql)}
    return not sqlfiles.readers(plan.file).get(plan.instance, set()) & stages and not any(
        isinstance(step, Python) and plan.instance in step.writes for step in plan.steps)


_PER_PLAN: dict[tuple[int, str], tuple[FamilyPlan, Any]] = {}  # (id(plan), function): (plan, value)


def _per_plan(plan: FamilyPlan, function: Callable[[FamilyPlan], Any]) -> Any:
    """``function(plan)``, computed once per plan (plans hold dicts: not hashable)."""
    key = (id(plan), function.__name__)
    found = _PER_PLAN.get(key)
    if found is None or found[0] is not plan:
        found = _PER_PLAN[key] = (plan, function(plan))
    return found[1]


def _read_by_one(plan: FamilyPlan) -> frozenset[str]:
    """The SQL stages of a plan with Python steps that one later stage reads and nothing else reads (no
    Python step, no summary): composed into that stage as a common table expression instead of materialised.
    A reader that names such a stage twice gets it as a common table expression DuckDB materialises once
    (the LCA pair meetings and meetings composed into the options: 3-4 % of a GermEval call)."""
    return _per_plan(plan, _stages_read_by_one)


def _stages_read_by_one(plan: FamilyPlan) -> frozenset[str]:
    if not any(isinstance(step, Python) for step in plan.steps):
        return frozenset()
    stages = {step.query for step in plan.steps if isinstance(step, Sql)}
    kept = plan.read_beyond_stages()
    by_one = set()
    for q in stages - kept:  # a stage reads q itself or through the queries composed into it (not other stages)
        readers = [r for r in stages if r != q and q in sqlfiles.dependencies(plan.file, r, skip=stages - {q})]
        if len(readers) == 1:
            by_one.add(q)
    return frozenset(by_one)


# ------------------------------------------------------------------------------------------------- the call
def score(plan: FamilyPlan, metric: str, y_true: Any, y_pred: Any, taxonomy: Any, average: str | None = "", *,
          sample_weight: Any = None, labels: Iterable[str] | None = None, zero_division: Any = 0.0,
          scores: Sequence[float] | None = None, columns: Sequence[str] | None = None, keep: bool | None = None,
          **options: Any) -> float | pd.Series:
    """The value of ``metric`` for the label sets ``y_true``, ``y_pred`` over ``taxonomy``.

    ``average`` is one of the measure's averages (``""`` for a plain mean over instances); ``None`` gives the
    per-class values as a Series indexed by label (in ``labels`` order, else sorted, as scikit-learn).
    ``sample_weight`` weighs the instances; ``labels`` fixes the classes of the per-class averages;
    ``zero_division`` is 0, 1, nan or ``"warn"``; ``scores`` scores the predicted labels (:func:`load_sets`);
    ``columns``, the columns of a score matrix, must be nodes, each once, as fixed classes
    (:meth:`~hiersql.engines.Engine.check_classes`); ``keep``: keep ``taxonomy``'s tables for later calls with
    the same object (default: when it is a :class:`~hiersql.inputs.taxonomy.Taxonomy`; a caller that read a path
    into one passes ``False``); ``options`` are the other fields of :class:`~hiersql.measures.Options`.
    """
    from ..inputs.taxonomy import Taxonomy, as_taxonomy
    from ..options import make_options
    from ..plan import CLASSES, measure_of

    check_labels_meaning(plan, metric, labels)
    fixed = labels is not None
    check_average(plan, metric, average, fixed)
    value, warn = check_zero_division(zero_division)
    opts = make_options(zero_division=value, labels=label_names(labels), average=(average,) if average else (),
                        **options)
    y_true, y_pred = paired_label_sets(y_true, y_pred)
    weights = check_sample_weight(sample_weight, len(y_true))
    if weights is not None and plan.summary is not None:
        raise OptionError("sample_weight", f"is not offered for {metric} (its summary is over label pairs)", "given")
    tax = as_taxonomy(taxonomy)
    weighted = weights is not None
    _small_call(len(y_true))
    queries = dict(_queries(plan, metric, average, weighted, fixed, warn))
    with session(tax, keep=isinstance(taxonomy, Taxonomy) if keep is None else keep) as (con, schema):
        engine = FoldedEngine(con, taxonomy=tax)
        engine.schema = schema
        engine.weighted = weighted
        engine.compose_instance = len(queries) == 1
        if columns is not None:  # before the label sets, which hold the columns' labels
            engine.check_classes(columns)
        load_sets(con, tax, y_true, y_pred, weights, scores)
        if plan.summary is not None:
            return _one_value(engine.run_plan(plan, [metric], opts), metric, average or "")
        rows = engine.run_queries(plan, [metric], opts, queries)
    if "_undefined" in rows and rows["_undefined"][0][1]:
        unit = measure_of(plan, metric, average).unit
        _, units, total = rows["_undefined"][0]
        what = "the pooled counts" if average == "micro" else (
            f"{units} of {total} {'classes' if unit == CLASSES else 'instances'}")
        warnings.warn(f"{metric} is ill-defined and being set to 0.0 in {what} with a zero denominator; use the"
                      " zero_division parameter to control this behavior", UndefinedMetricWarning, stacklevel=3)
    if average is None:
        return _per_class(rows["_class_values"], metric, opts.labels)
    average = plan.average_of(opts) if plan.run_average is not None else average
    found = [v for _, m, a, v in rows["_summary"] if m == metric and (a or "") == average]
    return float("nan") if found[0] is None else float(found[0])


_QUERIES: dict[tuple, tuple[tuple[str, str], ...]] = {}  # generated once per (family, metric, options)


def _queries(plan: FamilyPlan, metric: str, average: str | None, weighted: bool, fixed: bool, warn: bool
             ) -> tuple[tuple[str, str], ...]:
    """The generated queries of a one-shot call: the summary (or the per-class values, ``average=None``) and,
    for ``zero_division="warn"``, the count of zero divisions; none for a family with its own summary."""
    from ..plan import class_values_sql, summary_sql, undefined_sql

    key = (plan.name, metric, average, weighted, fixed, warn)
    if key in _QUERIES:
        return _QUERIES[key]
    if plan.summary is not None:
        out: tuple[tuple[str, str], ...] = ()
    else:
        first = (("_class_values", class_values_sql(plan, metric, weighted, fixed)) if average is None
                 else ("_summary", summary_sql(plan, [metric], [average], True, weighted, fixed)))
        undefined = undefined_sql(plan, metric, average, weighted, fixed) if warn else None
        out = (first, ("_undefined", undefined)) if undefined is not None else (first,)
    _QUERIES[key] = out
    return out


def _per_class(rows: list[tuple], metric: str, labels: tuple[str, ...] | None) -> pd.Series:
    import pandas as pd

    series = pd.Series({label: float("nan") if v is None else float(v) for _, label, v in rows}, name=metric,
                       dtype="float64")
    series.index.name = "label"
    return series.reindex(list(labels)) if labels is not None else series


def _one_value(rows: list[Row], metric: str, average: str) -> float:
    """The value of ``metric`` with ``average`` from a single-system result."""
    for row in rows:
        if row.metric == metric and row.average == average:
            return row.value
    raise ValueError(f"no value for {metric} with average={average!r}")
