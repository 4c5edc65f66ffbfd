"""Truth and predictions read by Spark itself, for the Spark engine: Parquet, Spark tables, Spark DataFrames.

With ``--engine spark`` (a :class:`~hiersql.engines.SparkEngine`), these label sources are read, checked and
turned into hiersql's tables (``truth``, ``instances``, ``predictions``, ``systems`` of ``schema.sql``)
inside Spark, never through hiersql's DuckDB store (:func:`spark_source`):

- a Parquet file, glob or folder of part files (``runs.parquet``, ``runs/*.parquet``, ``runs.parquet/`` with
  ``key=value`` partition folders read as columns), read with ``spark.read.parquet`` at its absolute path (a
  Spark Connect server, or a cluster's executors, read it there: a shared mount) or as its URI (``s3a://``);
- ``spark:[db.]table``: a table or (temporary) view of the session's catalog (a part in double quotes is
  literal, as in :func:`hiersql.inputs.tables.split_name`);
- ``spark:SELECT …``: one ``SELECT`` statement (parsed by sqlglot first; anything else is refused before
  Spark sees it), run by ``spark.sql``;
- a Spark DataFrame (Python API).

The taxonomy (small) is read as usual by the store, its tables copied to Spark; a ``spark:`` taxonomy or a
Spark DataFrame is collected through Arrow first. Any other label source (a TSV file, ``duckdb:``,
``postgresql://``, ...) is read and checked by the store, and its tables are copied to Spark.

The checks are those of the store (:mod:`hiersql.inputs.store`), run as Spark jobs: a column's role and type, NULL or
empty ids, labels and systems, scores that are not numbers, the virtual root, labels not in the taxonomy (an
error, or dropped with a warning giving the count with ``unknown="ignore"``), duplicate ``(instance, label)``
rows (collapsed with a warning), predicted instances without truth (an error, or dropped with a count); the
spaces around ids and labels are stripped (:data:`hiersql.options.SPACES`), as every reader of the store strips
them. A row is named by its key (the instance and the system; the label when the instance is missing), and of
several bad rows the one named is the least by :data:`hiersql.inputs.tables.FAULT_ORDER`, as the store names it.
Ranks (the position of a label within its instance) follow the rule of every source,
:data:`hiersql.inputs.tables.RANK_ORDER`: Spark's reads have no row order, so without a rank or score column the
labels of an instance are ranked by name, with one warning.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ...errors import InputError, is_spark_error, spark_message
from ...inputs import flagged, label_tables, rules, sources
from ...inputs.arguments import check_option
from ...inputs.staging import warn_ranked_by_name, warn_unread_system
from ...inputs.tables import QUERY, RANK_ORDER, Columns, Table, first_line_of, split_name
from ...options import SPACES

if TYPE_CHECKING:
    from ...inputs.store import Store
    from ...inputs.taxonomy import Taxonomy
    from .. import SparkEngine

SCHEME = "spark:"


def is_spark_frame(source: object) -> bool:
    """Whether ``source`` is a Spark DataFrame (classic or Spark Connect)."""
    return hasattr(source, "sparkSession") and hasattr(source, "createOrReplaceTempView")


def spark_source(source: object) -> bool:
    """Whether the Spark engine reads label source ``source`` itself: a ``spark:`` reference, a Spark
    DataFrame, or a Parquet file, glob or folder."""
    return (isinstance(source, str) and source.startswith(SCHEME)) or sources.is_parquet(source) or \
        is_spark_frame(source)


def reads_any(truth: object, predictions: Iterable[object]) -> bool:
    """Whether Spark reads the truth or any prediction source itself (:func:`spark_source`)."""
    return spark_source(truth) or any(map(spark_source, predictions))


def parquet_rows(items: Iterable[object]) -> int | None:
    """The rows of the label sources ``items`` when every one is a Parquet file, glob or folder that pyarrow
    reads, from the files' footers (no Spark: it is not started yet, :func:`hiersql.engines.open_engine`
    sizes its JVM by them); else (a ``spark:`` table or query, a DataFrame, another format) ``None``."""
    import glob

    import pyarrow.dataset as ds

    total = 0
    for item in items:
        if not sources.is_parquet(item):
            return None
        text = str(item)
        paths = sorted(glob.glob(text)) if any(ch in text for ch in "*?[") else [text]
        try:
            total += ds.dataset(paths if len(paths) != 1 else paths[0], format="parquet",
                                partitioning="hive").count_rows()
        except (OSError, ValueError):  # missing, unreadable: Spark's reading names it
            return None
    return total


def check_path(source: object, where: str | None = None) -> None:
    """An :class:`InputError` (naming ``where``, default the path) if the Parquet path ``source`` is on the
    local file system and names no file: a path or a glob matching none. Run before Spark starts, so that a
    mistyped path costs no JVM; a URI of another file system (``hdfs://``, ``s3a://``) is Spark's to read."""
    import glob

    if not sources.is_parquet(source) or sources.is_uri(source):
        return
    text = str(source)
    if any(ch in text for ch in "*?["):
        if not glob.glob(text):
            raise InputError("glob matches no file", where or text)
    elif not Path(text).exists():
        raise InputError("file not found", where or text)


# ---------------------------------------------------------------------- opening
def _backticked(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _one_select(query: str, where: str) -> str:
    """``query`` if sqlglot parses it as one query (``SELECT``, ``WITH``, a set operation, ``VALUES``):
    ``spark.sql`` runs DDL and DML at once, so nothing else may reach it."""
    import sqlglot
    from sqlglot import exp

    try:
        statements = [s for s in sqlglot.parse(query, read="spark") if s is not None]
    except sqlglot.errors.ParseError as exc:
        raise InputError(f"query does not parse ({first_line_of(exc)})", where) from None
    if len(statements) != 1 or not isinstance(statements[0], exp.Query | exp.Values):
        raise InputError("a query source must be one SELECT statement", where, value=query.strip()[:80])
    return query


def open_frame(spark: Any, source: Any, name: str | None = None) -> tuple[Any, str, str | None]:
    """``(frame, where, stem)``: the Spark DataFrame of a source of :func:`spark_source`, how messages name
    it, and its default system name (the table's or file's stem)."""
    if is_spark_frame(source):
        return source, name or "<Spark DataFrame>", None
    text = str(source)
    where = name or text
    try:
        if text.startswith(SCHEME):
            rest = text[len(SCHEME):]
            if QUERY.match(rest):
                return spark.sql(_one_select(rest, where)), where, None
            schema, table = split_name(rest.strip(), where)
            return spark.table(".".join(_backticked(p) for p in (schema, table) if p is not None)), where, table
        check_path(text, where)
        # a path of this machine as Spark's driver (on Spark Connect, the server) finds it from any folder
        path = text if sources.is_uri(text) else os.path.abspath(text)
        return spark.read.parquet(path), where, Path(text).stem
    except InputError:
        raise
    except Exception as exc:
        if not is_spark_error(exc):
            raise
        what = "cannot read the table" if text.startswith(SCHEME) else "cannot read file"
        raise InputError(f"{what} ({spark_message(exc)})", where) from None


def _kind(data_type: Any) -> tuple[str, str]:
    """A Spark type's name and kind (as :func:`hiersql.inputs.sources._kind` for DuckDB)."""
    name = type(data_type).__name__
    kind = {"StringType": "text", "VarcharType": "text", "CharType": "text", "ByteType": "integer",
            "ShortType": "integer", "IntegerType": "integer", "LongType": "integer", "FloatType": "number",
            "DoubleType": "number", "DecimalType": "number", "NullType": "null"}.get(name, "other")
    return data_type.simpleString(), kind


class _Source(NamedTuple):
    """A label source opened in Spark: its rows as ``_src, instance_id, label, score_text, score, rank_text,
    ord, _ranked, system, _system_text, line, pos, in_order`` (``_src``: its number; ``ord``: the rank
    column's value, ``_ranked`` whether it has one; ``_system_text``: the system as written; ``line``, ``pos`` and
    ``in_order`` as :data:`~hiersql.inputs.tables.RANK_ORDER` reads them:
    no row order), how messages name it, its columns by role, its system (``None``: the values of its system
    column name its systems), the system name given to a table with a system column (an error unless its
    only value), and its text columns that no role reads, by their positional names in ``frame`` (its
    columns renamed by position)."""

    rows: Any
    where: str
    columns: dict[str, str]
    system: str | None
    given: str | None
    frame: Any
    unread: dict[str, str]


def _rows(spark: Any, k: int, item: tuple[str | None, Any, str | None], columns: Columns, predictions: bool
          ) -> _Source:
    """Open source number ``k`` (``(system, source, name)``), find its columns by role (the rules and messages
    of :func:`hiersql.inputs.label_tables.label_table`), and give its rows, lazily (no Spark job)."""
    from pyspark.sql import functions as F

    system, source, name = item
    frame, where, stem = open_frame(spark, source, name)
    fields = frame.schema.fields
    table = Table(where, [f.name for f in fields], [_kind(f.dataType) for f in fields],
                          read=lambda _: "", stem=stem)
    labels = label_tables.label_table(table, columns, predictions)
    # columns by position: no name of the user's is ever parsed by Spark (case-insensitive, dots, backticks)
    frame = frame.toDF(*[f"c{i}" for i in range(len(fields))])
    col = {role: f"c{table.names.index(name)}" for role, name in labels.columns.items()}

    def text(role: str) -> Any:
        return F.col(col[role]).cast("string") if role in col else F.lit(None).cast("string")

    def number(role: str) -> Any:
        if role not in col:
            return F.lit(None).cast("double")
        if table.kind(labels.columns[role]) == "text":  # the store's rule (rules.NUMBER)
            return F.expr(rules.number_sql(col[role], "spark"))
        return F.col(col[role]).cast("double")

    def trimmed(role: str) -> Any:  # the spaces around ids, labels and systems, as every reader strips them
        return F.trim(text(role), F.lit(SPACES))

    by_column = predictions and "system" in col
    named = system if system is not None else (stem if predictions else None)
    if predictions and not by_column and not named:
        raise InputError("a system name is needed (NAME=SOURCE) or a system column", where)
    rows = frame.select(
        F.lit(k).alias("_src"), trimmed("instance").alias("instance_id"), trimmed("label").alias("label"),
        text("score").alias("score_text"), number("score").alias("score"), text("rank").alias("rank_text"),
        number("rank").alias("ord"), F.lit("rank" in col).alias("_ranked"),
        (trimmed("system") if by_column else F.lit(named).cast("string")).alias("system"), text("system").alias(
            "_system_text"),
        F.lit(None).cast("long").alias("line"), F.lit(1).alias("pos"), F.lit(False).alias("in_order"))
    unread = {name: f"c{i}" for i, (name, kind) in enumerate(zip(table.names, table.kinds, strict=True))
              if kind == "text" and name not in labels.columns.values()}
    return _Source(rows, where, labels.columns, None if by_column else named, system if by_column else None, frame,
                   unread)


def _checked(engine: SparkEngine, opened: list[_Source], predictions: bool, unknown: str, no_truth: str
             ) -> tuple[Any, Any, list[tuple[str, str]], list[str]]:
    """The rows of ``opened`` checked in Spark and cleaned as the store does (duplicates collapsed, unknown
    labels and predicted instances without truth dropped when ignored): ``(read, kept, [(system, where)],
    by_name)``: every row read (``instance_id``: the truth's instances, those whose labels were all dropped
    too), the rows kept as ``system, instance_id, label, rank, score``, each system with its name in messages
    (for the truth, one entry, none when it has no rows), and the sources whose labels were ranked by name
    (:func:`hiersql.inputs.flagged.ranked_by_name`).

    Two Spark jobs: the rows with their checks as columns, computed once (one shuffle of the rows, by
    instance), then the counts per system (:func:`_flagged`).
    """
    from pyspark.sql import functions as F

    check_option("unknown", unknown)
    check_option("no_truth", no_truth)
    rows, groups = _flagged(engine, opened, predictions, unknown, no_truth)

    by_source: dict[int, dict[str | None, Any]] = {}
    for group in groups:
        by_source.setdefault(group["_src"], {})[group["system"]] = group
    wheres = flagged.system_wheres(opened, by_source, predictions)
    order = list(wheres)
    stats = {key: by_source.get(key[0], {}).get(key[1]) for key in order}
    flagged.raise_first_error(stats, order, wheres, unknown, no_truth)

    def no_truth_instances(key: tuple[int, str | None]) -> int:
        return rows.filter(F.col("_no_truth") & (F.col("_src") == key[0]) & (F.col("system") == key[1])
                           ).select("instance_id").distinct().count()

    flagged.warn_cleaned(stats, order, wheres, opened, predictions, unknown, no_truth, _warn_unread_systems,
                         no_truth_instances)
    kept = rows.filter("_keep").select("system", "instance_id", "label", "rank", "score")
    by_name = flagged.ranked_by_name(opened, by_source)
    if not predictions and not groups:  # a truth without rows
        return rows, kept, [], by_name
    return rows, kept, [(str(system), str(wheres[(k, system)])) for k, system in order], by_name


def _flagged(engine: SparkEngine, opened: list[_Source], predictions: bool, unknown: str, no_truth: str
             ) -> tuple[Any, list[Any]]:
    """The rows of ``opened`` with their checks as columns (the flags of :data:`hiersql.inputs.flagged.ERRORS`,
    ``_dup``, ``_keep``: the row is kept, and ``rank``: its rank among the kept rows of its instance), computed
    once (one shuffle of the rows, by instance; a local checkpoint), and the groups of those rows per source and
    system with their counts and their first bad row of each kind (a second Spark job). A source Spark cannot
    read is an :class:`~hiersql.errors.InputError` naming the first source."""
    from pyspark.sql import functions as F

    spark = engine.spark
    rows = opened[0].rows
    for other in opened[1:]:
        rows = rows.unionByName(other.rows)
    nodes = spark.table(engine.table("nodes")).select(
        "label", F.col("is_virtual").alias("_is_virtual"), F.lit(True).alias("_known"))
    # one shuffle, by instance: the join with the truth's instances and both windows (partitioned by the
    # instance and more) keep that partitioning
    rows = rows.repartition("instance_id").join(F.broadcast(nodes), "label", "left")
    if predictions:
        instances = spark.table(engine.table("instances")).select("instance_id", F.lit(True).alias("_has_truth"))
        rows = rows.join(instances, "instance_id", "left")
    else:
        rows = rows.withColumn("_has_truth", F.lit(True))
    instance, label = F.col("instance_id"), F.col("label")
    unit = ("_src", "system", "instance_id")
    rows = rows.select(
        "*",
        (instance.isNull() | label.isNull() | (F.trim(label) == "") | (instance == "")
         | (F.lower(label) == "nan") | (F.lower(instance) == "nan")).alias("_missing"),
        (F.col("score_text").isNotNull() & (F.col("score_text") != "")
         & (F.col("score").isNull() | F.isnan("score"))).alias("_bad_score"),
        (F.col("_ranked") & (F.col("ord").isNull() | F.isnan("ord") | (F.abs("ord") == float("inf"))))
        .alias("_bad_rank"),
        F.coalesce("_is_virtual", F.lit(False)).alias("_virtual"),
        F.expr(f"row_number() OVER (PARTITION BY {', '.join(unit)}, label ORDER BY {RANK_ORDER}) > 1"
               ).alias("_dup"),
    ).withColumn("_unknown", F.col("_known").isNull() & ~F.col("_dup")).withColumn(
        "_no_truth", F.col("_has_truth").isNull())
    keep = ~F.col("_dup")
    if unknown == "ignore":
        keep &= ~F.col("_unknown")
    if no_truth == "ignore":
        keep &= ~F.col("_no_truth")
    # the rank of a kept row: the kept rows of its instance up to it in rank order
    rank = F.expr(f"sum(CAST(_keep AS INT)) OVER (PARTITION BY {', '.join(unit)} ORDER BY {RANK_ORDER}"
                  " ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)")
    # a group's first rows: the least by FAULT_ORDER (Spark orders a struct field by field, a NULL first)
    fault = ("instance_id", "label", "score_text", "rank_text")
    first = F.struct(*fault)
    try:
        # _labels: the rows read of the row's instance (the store's test of whether its ranks mean something)
        rows = rows.withColumn("_keep", keep).withColumn("rank", rank.cast("int")).withColumn(
            "_labels", F.expr(f"count(*) OVER (PARTITION BY {', '.join(unit)})")).localCheckpoint(eager=True)
        # a NULL and an empty system are one group: its first row by MISSING_SYSTEM_ORDER (a NULL system first)
        groups = rows.groupBy("_src", F.expr("nullif(system, '')").alias("system")).agg(
            F.count_if("_keep").alias("kept"), F.count_if("_dup").alias("dups"),
            F.min(F.struct(*fault, "system")).alias("_first"),
            F.sort_array(F.collect_set("_system_text")).alias("_spellings"), F.max("_labels").alias("_max_rank"),
            *(F.count_if(flag).alias(flag) for flag, _, _ in flagged.ERRORS),
            *(F.min(F.when(F.col(flag), first)).alias(f"{flag}_first") for flag, _, _ in flagged.ERRORS),
        ).collect()
    except Exception as exc:  # a file Spark cannot read, a query that fails when run
        if not is_spark_error(exc):
            raise
        raise InputError(f"cannot read ({spark_message(exc)})", opened[0].where) from None
    return rows, groups


def _warn_unread_systems(source: _Source) -> None:
    """A predictions source without a system column whose rows repeat: warn of each text column that no role
    reads and that holds several values (:func:`hiersql.inputs.staging.warn_unread_system`; one Spark job)."""
    from pyspark.sql import functions as F

    if source.unread:
        counts = source.frame.agg(*(F.count_distinct(c).alias(c) for c in source.unread.values())).collect()[0]
        for name, column in source.unread.items():
            if counts[column] > 1:
                warn_unread_system(source.where, name)


# ---------------------------------------------------------------------- loading
def _taxonomy(spark: Any, source: Any, parent: str | None, child: str | None) -> Taxonomy:
    """The taxonomy of any source :meth:`hiersql.inputs.store.Store.load` takes (a function returning one too); a
    ``spark:`` table or a Spark DataFrame is collected through Arrow (a taxonomy is small) and read by
    :meth:`Taxonomy.from_table`."""
    from ...inputs.taxonomy import Taxonomy

    if isinstance(source, str) and source.startswith(SCHEME) or is_spark_frame(source):
        frame, where, _ = open_frame(spark, source)
        try:
            return Taxonomy.from_table(frame.toArrow(), parent=parent, child=child)
        except InputError as exc:  # named by the source, not "<Arrow table>"
            raise InputError(exc.message, where, exc.line, exc.value) from None
    if isinstance(source, Taxonomy):
        return source
    if callable(source):
        return source()
    if parent or child or sources.is_reference(source):
        return Taxonomy.from_table(source, parent=parent, child=child)
    return Taxonomy.from_file(source)


def load(
    engine: SparkEngine,
    store: Store,
    taxonomy: Taxonomy | str | Path | Any,
    truth: Any,
    predictions: Mapping[str, Any] | Iterable[tuple[str | None, Any]],
    format: str = "long",
    *,
    unknown: str = "error",
    no_truth: str = "error",
    instance_col: str | None = None,
    label_col: str | None = None,
    score_col: str | None = None,
    system_col: str | None = None,
    rank_col: str | None = None,
    parent_col: str | None = None,
    child_col: str | None = None,
    on_step: Any = None,
) -> None:
    """Fill the Spark engine's tables with the taxonomy, the truth and the predictions, as
    :meth:`hiersql.inputs.store.Store.load` fills a store, Spark reading and checking the sources of
    :func:`spark_source` itself; the others are read by ``store`` and copied (see the module docstring).

    ``store``, a new store, receives the taxonomy (and the sources it reads); with a truth read by Spark and
    predictions read by the store, Spark's ``truth`` and ``instances`` are copied into the store for its
    checks. Errors and warnings are those of the store, naming the table, the column, the row key and the
    value; nothing is written in Spark but temporary views of hiersql's tables. Then
    ``hiersql.measures.compute(engine, ...)``.
    """
    import pyarrow as pa

    from ...inputs.readers import prediction_items
    from ...inputs.store import LOAD_STEPS
    from .. import _spark_schema

    step = on_step or (lambda _: None)
    spark = engine.spark
    columns = Columns(instance=instance_col, label=label_col, score=score_col, system=system_col, rank=rank_col)
    items = prediction_items(predictions)
    step(LOAD_STEPS[0])
    store.load_taxonomy(_taxonomy(spark, taxonomy, parent_col, child_col))
    engine.copy_store(store, ("edges", "nodes", "closure", "pair_counts"))
    step(LOAD_STEPS[1])
    local = [(system, source) for system, source, _ in items if not spark_source(source)]
    by_name: list[str] = []  # the sources Spark read whose labels it ranked by name
    if spark_source(truth):
        opened = _rows(spark, 0, (None, truth, None), columns, False)
        read, kept, found, by_name = _checked(engine, [opened], False, unknown, no_truth)
        if not found:
            raise InputError(rules.EMPTY_TRUTH, opened.where)
        engine.use_frame("truth", kept.select("instance_id", "label", "rank"), computed=True)
        engine.use_frame("instances", read.select("instance_id").distinct())
        if local:  # the store checks its predictions against the truth
            with store.transaction():
                for name in ("truth", "instances"):
                    store.con.register("_hiersql_spark", engine.arrow(f"SELECT * FROM {engine.table(name)}"))
                    store.con.execute(f"DELETE FROM {name}")
                    store.con.execute(f"INSERT INTO {name} SELECT * FROM _hiersql_spark")
                    store.con.unregister("_hiersql_spark")
    else:
        store.add_truth(truth, format, unknown=unknown, instance_col=instance_col, label_col=label_col,
                        rank_col=rank_col)
        engine.copy_store(store, ("truth", "instances"))
    step(LOAD_STEPS[2])
    systems: list[tuple[str, str]] = []
    frames = []
    if local:
        store.add_predictions_many(local, format, unknown=unknown, no_truth=no_truth, instance_col=instance_col,
                                   label_col=label_col, score_col=score_col, system_col=system_col,
                                   rank_col=rank_col)
        systems += store.con.execute("SELECT system, source FROM systems ORDER BY system").fetchall()
        picked = store.con.table("predictions").to_arrow_table()
        frames.append(spark.createDataFrame(picked if len(picked) else picked.to_pandas(),
                                            schema=None if len(picked) else _spark_schema(picked)))
    remote = [item for item in items if spark_source(item[1])]
    if remote:
        _, kept, found, ranked = _checked(engine, [_rows(spark, k, item, columns, True)
                                                   for k, item in enumerate(remote)], True, unknown, no_truth)
        systems += found
        by_name += ranked
        frames.append(kept)
    label_tables.check_distinct_systems(systems)
    warn_ranked_by_name(by_name, store.families)
    names = ("system", "instance_id", "label", "rank", "score")
    if not frames:
        engine.write(engine.table("predictions"), store.con.table("predictions").to_arrow_table())  # empty
    elif len(frames) == 1:  # Spark's: a selection of its local checkpoint, no further job
        engine.use_frame("predictions", frames[0].select(*names), computed=bool(remote))
    else:  # the store's and Spark's
        engine.use_frame("predictions", frames[0].select(*names).unionByName(frames[1].select(*names)))
    engine.write(engine.table("systems"), pa.table({"system": pa.array([s for s, _ in systems], pa.string()),
                                                    "source": pa.array([w for _, w in systems], pa.string())}))

