"""The Spark engine: stages stored once (Parquet files or checkpoints), plans side by side, partitioned steps."""

from __future__ import annotations

import itertools
import re
import shutil
import warnings
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ... import sqlfiles
from ...errors import DataWarning, InputError, is_spark_error
from ...options import Options, SparkOutOfMemory, SparkStageLost, SparkWorkersPython
from ...plan import FamilyPlan, Python, Row, Sql, Step
from ..base import STORE_TABLES, Engine, solve_arrow, solve_recorded
from ..compile import _tree, ctes_apart
from .connect import is_connect, master_of

if TYPE_CHECKING:
    import pyarrow as pa

    from ...inputs.store import Store

STAGE_DIR = "hiersql.stageDir"  # Spark setting: where SparkEngine stores its stages (a path all executors see)
PLANS_AT_ONCE = "hiersql.plansAtOnce"  # Spark setting: how many plans SparkEngine.run_plans runs side by side
PARTITION_AT = "hiersql.partitionRows"  # Spark setting: SparkEngine's partition_rows when "auto" (0: always)

# a partitioned step's keyed inputs from which it is solved per partition (Spark on a cluster); below, the driver
# reads the stored inputs' files and solves them in less time than the Python workers take to start and receive
# the shuffled rows (GermEval B's pairings, 1.1 M keyed rows: about 4x less)
PARTITION_ROWS = 4_000_000
# Spark's words for memory that ran out (a task's execution memory, a JVM's heap); group 1: what it says
_OUT_OF_MEMORY = re.compile(r"(?:SparkOutOfMemoryError|java\.lang\.OutOfMemoryError): ([^\n]*?)(?: SQLSTATE: \w+)?\s*$",
                            re.MULTILINE)
# Spark's words for a local checkpoint's rows that are gone with the executor that held them; group 1: what it says
_STAGE_LOST = re.compile(r"(\[CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND\][^\n]*)")
# the words for Python workers whose Python lacks a module, is of another version, or does not start (that one
# only with the Python workers' factory in the trace); group 1 or 2: what it says
_WORKERS_PYTHON = re.compile(
    r"^(?:[\w.]+\.)?((?:ModuleNotFoundError|ImportError): [^\n]*|PySparkRuntimeError: \[PYTHON_VERSION_MISMATCH\]"
    r"[^\n]*)$|java\.io\.IOException: (Cannot run program [^\n]*)"
    r"(?=(?:\n\s+at [^\n]*)*?\n\s+at org\.apache\.spark\.api\.python\.PythonWorkerFactory)", re.MULTILINE)


class SparkEngine(Engine):
    """Spark SQL through a ``pyspark.sql.SparkSession`` (local or a cluster).

    A plain table name becomes a temporary view of the stage's rows stored once (:meth:`_register`); a
    qualified one (``db.table``) a managed table. Every stage, and every query a stage reads, is such a view:
    Spark inlines a common table expression at every reference (the set-based stage alone would recompute its
    pipeline about ten times), and without cutting the lineage each stage's plan would hold the plans of all
    stages before it (the LCA stages' analysis then grows until the driver runs out of memory); so is a common
    table expression or a view that one stage would compute twice (:meth:`_computed_once`). Means add their
    values in unit order (:func:`render`'s fold of the sorted values), as on the other engines.

    The rows are stored as Parquet files in :attr:`stage_dir` when there is one: Spark then knows a stage's
    real size (the files'), and joins a small stage by broadcasting it instead of shuffling and sorting both
    sides. A local checkpoint would cut the lineage too, but it keeps the size estimate of the plan it cut
    (products of join sizes, far above any broadcast threshold). The directory is setting
    ``hiersql.stageDir`` of the session (:data:`STAGE_DIR`) when given, a directory every executor reads at
    the same path (a shared mount); else, on a ``local`` master of a session of this process, a temporary
    directory of the driver; else (a cluster, whose executors do not see the driver's disk, or a Spark Connect
    server, which does not see this process's) there is none, and stages are local checkpoints. :meth:`close`
    removes it (so does the end of the process).

    Parameters
    ----------
    spark:
        The ``SparkSession``.
    tables:
        Renames of the hiersql tables (see :class:`Engine`).
    partition_rows:
        Python steps that declare ``partition_by`` are solved per partition in the executors when their keyed
        inputs hold at least this many rows (:meth:`solve`); ``0``: always; ``None``: never; ``"auto"``
        (default): setting ``hiersql.partitionRows`` of the session (:data:`PARTITION_AT`) when given, else
        :data:`PARTITION_ROWS` on a cluster, never on a ``local`` master, whose Python workers share the
        driver's cores (the shuffle of the tagged rows and the workers' start made the 450k DAG's pairings 4-6
        times slower than on the driver: benchmarks/RESULTS.md).
    """

    dialect = "spark"

    def __init__(self, spark: Any, tables: Mapping[str, str] | None = None,
                 partition_rows: int | Literal["auto"] | None = "auto") -> None:
        super().__init__(tables)
        self.spark = spark
        self.partition_rows = _partition_rows(spark) if partition_rows == "auto" else partition_rows
        self.plans_at_once = _plans_at_once(spark)
        self._read_once: set[str] = set()
        self._views: dict[str, Counter[str]] = {}  # plain views: the views each reads (with how often)
        self._files: dict[str, tuple[Path, pa.Schema]] = {}  # views that are the Parquet files of a folder
        self.partitions_solved: dict[str, int] = {}  # step name: partitions it was solved in (last run)
        self._node_closure = False  # whether node_closure is there (copied, or computed from closure and nodes)
        self.stage_dir = _stage_dir(spark)
        self._stored = itertools.count(1)  # numbers the folders of stage_dir (shared with the forks)
        self._cleanup = None if self.stage_dir is None else weakref.finalize(
            self, shutil.rmtree, self.stage_dir, ignore_errors=True)

    def close(self) -> None:
        """Remove :attr:`stage_dir` and the stages stored there (the session stays open: it may be shared)."""
        if self._cleanup is not None:
            self._cleanup()

    # The Spark variants of the set-based, pair-based and LCA queries read the closure on node positions,
    # node_closure (schema.sql): the store's copy, or computed once from the engine's closure and nodes.
    def _bound(self, names: Iterable[str]) -> None:
        """Hiersql tables ``names`` were given new rows: ``node_closure`` is there if it was among them, and is
        to be computed again if ``closure`` or ``nodes`` was without it."""
        names = set(names)
        if "node_closure" in names or names & {"closure", "nodes"}:
            self._node_closure = "node_closure" in names

    def use_tables(self, **renames: str) -> None:
        super().use_tables(**renames)
        self._bound(renames)

    def copy_store(self, store: Store, tables: Iterable[str] = STORE_TABLES) -> None:
        """As :meth:`Engine.copy_store`; with ``closure``, the store's ``node_closure`` too."""
        tables = list(tables)
        if "closure" in tables:
            tables.append("node_closure")
        super().copy_store(store, tables)
        self._bound(tables)

    def build_closure(self, max_depth: int | None = None) -> None:
        super().build_closure(max_depth)
        self._bound({"closure"})

    def execute(self, sql: str) -> list[tuple]:
        return [tuple(row) for row in self.spark.sql(sql).collect()]

    def arrow(self, sql: str) -> pa.Table:
        return self.spark.sql(sql).toArrow()

    def write(self, name: str, data: pa.Table) -> None:
        """With a :attr:`stage_dir` and a plain ``name``, as a Parquet file there that Spark reads (no Spark
        job; faster than the Arrow upload at every size measured); else through Arrow:
        the rows stay in the JVM (a list of rows would need Python workers to decode)."""
        if self.stage_dir is not None and "." not in name:
            import pyarrow.parquet as pq

            folder = self._stage_path(name)
            folder.mkdir()
            pq.write_table(data, folder / "part-0.parquet")
            self._view_of_files(name, folder, data.schema)
            return
        self._register(name, self.spark.createDataFrame(data if len(data) else data.to_pandas(),
                                                        schema=None if len(data) else _spark_schema(data)))

    def _materialize(self, name: str, sql: str) -> None:
        import sqlglot

        self._materialize_tree(name, sqlglot.parse_one(sql, read=self.dialect))

    def _materialize_tree(self, name: str, tree: Any) -> None:  # the tree itself: a stage is not parsed again
        stored = self._stored_whole(tree)
        if stored is not None:  # the rows of a stored table as they are: its files under a second name
            self._view_of_files(name, *stored)
            return
        sql, reads = self._computed_once(name, tree)
        frame = self.spark.sql(sql)
        if name in self._read_once:  # a plain view: no Spark job, the one reader computes it within its own
            frame.createOrReplaceTempView(name)
            self._views[name] = reads
            self._files.pop(name, None)
        else:
            self._register(name, frame)

    def _stored_whole(self, tree: Any) -> tuple[Path, pa.Schema] | None:
        """The folder and schema of the table stored as Parquet files that query ``tree`` selects whole (each
        of its columns, in order, every row: ``lca_closure`` of ``node_closure``, ``pair_flow_arcs`` of
        ``pair_arcs`` when the flows are solved), else ``None``."""
        from sqlglot import exp

        if not isinstance(tree, exp.Select) or {key for key, value in tree.args.items() if value} != {
                "expressions", "from_"}:
            return None
        source = tree.args["from_"].this
        stored = self._files.get(source.name) if isinstance(source, exp.Table) and not source.db else None
        if stored is None or [c.name if isinstance(c, exp.Column) else None for c in tree.expressions] != list(
                stored[1].names):
            return None
        return stored

    def _computed_once(self, name: str, tree: Any) -> tuple[str, Counter[str]]:
        """Query ``tree`` (of stage ``name``; changed) as SQL rewritten so that Spark computes each of its parts
        once, and the plain views it reads (with how often). Spark inlines a common table expression or a view at every
        reference (``sides`` of ``lca_labels`` would run six times): a common table expression read twice or
        more becomes a stored stage of its own (``<name>__<cte>``), and so does a plain view that the
        query would compute twice or more (counting the views that views read; stored one at a time, so that
        the views read only through a stored one are not stored too)."""
        parts = ctes_apart(tree, name)
        while True:
            reads = sum((self._view_reads(query) for query in [*(q for _, q in parts), tree]), Counter())
            twice = next((view for view, times in reads.items() if times > 1), None)
            if twice is None:
                break
            self._register(twice, self.spark.table(twice))
        for part, query in parts:
            self._register(part, self.spark.sql(query.sql(dialect=self.dialect)))
        return tree.sql(dialect=self.dialect), self._view_reads(tree)

    def _view_reads(self, tree: Any) -> Counter[str]:
        """How often the plain views are computed by query ``tree`` (the views read by a view included)."""
        from sqlglot import exp

        out: Counter[str] = Counter()
        for table in tree.find_all(exp.Table):
            if not table.db and table.name in self._views:
                out[table.name] += 1
                for view, times in self._views[table.name].items():
                    out[view] += times
        return out

    def _steps(self, plan: FamilyPlan, steps: Sequence[Step], params: dict[str, object], options: Options,
               made: frozenset[str] | set[str] = frozenset()) -> set[str]:
        kept = {plan.instance, *(m.unit for m in plan.measures if m.unit)}
        kept |= {name for step in steps if isinstance(step, Python) for name in step.reads}
        # read once in the file, or once among the queries these steps run (a query of the file that none of
        # them reads, such as lca_extended_names, does not make a stage read twice)
        run = {step.query for step in steps if isinstance(step, Sql)}
        run |= {dep for query in run for dep in sqlfiles.dependencies(plan.file, query, "spark", params=params)}
        self._read_once = {q for q, by in sqlfiles.readers(plan.file, "spark").items()
                           if (len(by) == 1 or len(by & run) == 1) and q not in kept}
        try:
            return super()._steps(plan, steps, params, options, made)
        finally:
            self._read_once = set()

    def run_plans(self, runs: Sequence[tuple[FamilyPlan, Sequence[str]]], options: Options,
                  on_plan: Callable[[FamilyPlan], None] | None = None) -> list[list[Row]]:
        """As :meth:`Engine.run_plans`, :attr:`plans_at_once` plans at a time, each on a fork of this engine
        (its own stages, the same session and tables) in a thread of its own that inherits the session's local
        properties (job group, scheduler pool) and operation tags. The rows, and an error (the first plan's in
        ``runs`` order), do not depend on which plan ends first; on an interrupt the plans' operations are
        interrupted (each one the threads start is, by a tag of theirs, until they end) before it is raised
        again."""
        if len(runs) < 2 or self.plans_at_once < 2:
            return super().run_plans(runs, options, on_plan)
        from concurrent.futures import ThreadPoolExecutor, wait

        from pyspark.util import inheritable_thread_target

        self._node_closure_for(*(body for plan, _ in runs for body in sqlfiles.queries(plan.file, self.dialect)
                                 .values()))  # made once here, not by two forks at once
        tag = f"hiersql-plans-{id(runs)}"

        def run(plan: FamilyPlan, metrics: Sequence[str]) -> list[Row]:
            self.spark.addTag(tag)
            if on_plan is not None:
                on_plan(plan)
            return self._fork().run_plan(plan, metrics, options)

        pool = ThreadPoolExecutor(self.plans_at_once, thread_name_prefix="hiersql-plan")
        try:
            # wrapped once per plan: the wrapper gives every call the one copy of the local properties it took, and
            # threads sharing one would see each other's SQL execution ids
            futures = [pool.submit(inheritable_thread_target(self.spark)(run), plan, metrics) for plan, metrics in runs]
            wait(futures)
        except BaseException:  # an interrupt: the plans' operations are interrupted until their threads end
            pool.shutdown(wait=False, cancel_futures=True)
            while True:
                self.spark.interruptTag(tag)
                if not wait(futures, timeout=0.2).not_done:
                    break
            raise
        pool.shutdown()
        return [future.result() for future in futures]

    def _fork(self) -> SparkEngine:
        """An engine on the same session, tables, stage folder and :attr:`partitions_solved`, with stages of its
        own to make."""
        import copy

        fork = copy.copy(self)
        fork._views, fork._files, fork._read_once = dict(self._views), dict(self._files), set()
        fork._cleanup = None  # the folder stays this engine's to remove
        return fork

    def _node_closure_for(self, *bodies: str) -> None:
        """Make ``node_closure`` if it is not there and any of the queries ``bodies`` names it. Any mention
        counts, also one in a branch a parameter switched off (which sqlfiles.dependencies skips): the rendered
        query keeps its first branch, and with it the tables that branch reads."""
        if not self._node_closure and any(re.search(r"\bnode_closure\b", sqlfiles.without_comments(body))
                                          for body in bodies):
            self._materialize_tree("node_closure", _tree(  # closure: the engine's table, not the file's walk
                "closure", "node_closure_from_names", {}, self.dialect, self.tables, skip=frozenset({"closure"})))
            self._node_closure = True

    def stage(self, file: str, query: str, params: Mapping[str, object], done: set[str],
              text: str | None = None) -> None:
        with self._failures_of(f"the SQL step {file}.{query}"):
            deps = [dep for dep in sqlfiles.dependencies(file, query, "spark", text=text, params=params)
                    if dep not in done]
            bodies = sqlfiles.queries(file, self.dialect)
            self._node_closure_for(*(bodies[dep] for dep in deps), bodies[query] if text is None else text)
            for dep in deps:
                super().stage(file, dep, params, done)
            super().stage(file, query, params, done, text)

    @contextmanager
    def _failures_of(self, step: str) -> Iterator[None]:
        """Spark's failures within that a setting mends, as one line naming ``step``: memory that ran out as
        :class:`~hiersql.options.SparkOutOfMemory`, with the setting that bounds it (an executor's,
        ``spark.executor.memory``, for a task of a cluster's executor, else the driver's, ``spark.driver.memory``:
        ``local`` runs its tasks); a stage's rows lost with the executor that held them (a local checkpoint, where
        there is no :attr:`stage_dir`) as :class:`~hiersql.options.SparkStageLost`; Python workers whose Python
        lacks hiersql or another module, is of another version or does not start, as
        :class:`~hiersql.options.SparkWorkersPython`."""
        try:
            yield
        except Exception as exc:
            if not is_spark_error(exc):
                raise
            found = _OUT_OF_MEMORY.search(str(exc))
            if found:
                executor = "stage failure" in str(exc) and not master_of(self.spark).startswith("local")
                setting = "spark.executor.memory" if executor else "spark.driver.memory"
                raise SparkOutOfMemory(step, setting, self.spark.conf.get(setting, "1g"), found[1]) from None
            lost = _STAGE_LOST.search(str(exc))
            if lost:
                raise SparkStageLost(step, self.spark.conf.get("spark.executor.memory", "1g"), lost[1]) from None
            python = _WORKERS_PYTHON.search(str(exc))
            if python:
                raise SparkWorkersPython(step, python[1] or python[2]) from None
            raise

    def result(self, file: str, query: str, params: Mapping[str, object], done: set[str],
               text: str | None = None) -> list[tuple]:
        """The rows of a plan's last query, collected from its plain view: nothing reads it but the runner,
        so storing it first would cost a write and a read-back job for rows collected once."""
        self._read_once = {query}
        try:
            self.stage(file, query, params, done, text)
        finally:
            self._read_once = set()
        with self._failures_of(f"the SQL step {file}.{query}"):
            return self.execute(f"SELECT * FROM {query}")

    def use_frame(self, name: str, frame: Any, computed: bool = False) -> None:
        """Make the Spark DataFrame ``frame`` hiersql table ``name`` (under :meth:`table`), computed once as
        :meth:`write` does for Arrow data, or as it is when ``computed`` (a selection of a local checkpoint):
        the inputs Spark read itself (:mod:`hiersql.engines.spark.sources`)."""
        self._bound({name})
        if computed and "." not in self.table(name):
            frame.createOrReplaceTempView(self.table(name))
            self._files.pop(self.table(name), None)
        else:
            self._register(self.table(name), frame)

    def solve(self, step: Python, params: dict[str, object], options: Options) -> None:
        with self._failures_of(f"the Python step {step.name}"):
            self._solve(step, params, options)

    def _solve(self, step: Python, params: dict[str, object], options: Options) -> None:
        """A step that declares ``partition_by`` runs in the executors, once per partition of its keyed inputs
        (``mapInArrow``): each keyed table is hashed on its key columns into ``spark.sql.shuffle.partitions``
        partitions, the rows of one key value of every keyed table meet in one partition, the other inputs
        come whole to every partition (collected once through Arrow), and each partition's tables are solved
        on a DuckDB connection of the Python worker (:func:`solve_arrow`); the partitions' output is stored
        once (a local checkpoint), with a row per partition solved that holds the text of the data warnings it
        raised, which are raised again on the driver (in the order of their text): the same on Spark Connect,
        which has no accumulators. Other steps run on the driver, and
        so do partitioned ones whose keyed inputs hold fewer than ``partition_rows`` rows (``None``: every step
        on the driver; 0: every partitioned step per partition): on small inputs, starting Python workers and
        shuffling the tagged rows cost more than the solver."""
        if not step.partition_by or self.partition_rows is None or (
                self.partition_rows > 0 and self._rows(step.partition_by) < self.partition_rows):
            self.partitions_solved.pop(step.name, None)
            super().solve(step, params, options)
            return
        from functools import reduce

        from pyspark.sql import functions as F
        from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
        from pyspark.sql.types import ArrayType, IntegerType, StringType, StructField, StructType

        keyed = [name for name in step.reads if name in step.partition_by]
        frames = {name: self.spark.table(self._source(name)) for name in keyed}
        whole = {name: self._input(name) for name in step.reads if name not in step.partition_by}
        inputs = {name: to_arrow_schema(frames[name].schema) for name in keyed}
        # the step on no rows of its keyed tables: the schemas it writes (it warns of nothing there, so nothing
        # is silenced: warning filters are process-wide, and other plans may run side by side)
        outputs = {name: data.schema for name, data in solve_arrow(
            step, params, options, {**whole, **{n: s.empty_table() for n, s in inputs.items()}}).items()}
        tagged = [frames[name].select(
            F.hash(*(F.col(k.strip()).cast("string") for k in step.partition_by[name].split(","))).alias("_part"),
            F.lit(i).alias("_table"),
            *(F.struct(*(F.col(f"`{c}`") for c in frames[name].columns)).alias(f"t{j}") if j == i else
              F.lit(None).cast(frames[other].schema).alias(f"t{j}") for j, other in enumerate(keyed)),
        ) for i, name in enumerate(keyed)]
        partitions = int(self.spark.conf.get("spark.sql.shuffle.partitions"))
        schema = StructType([StructField("_table", IntegerType()), StructField("_raised", ArrayType(StringType())),
                             *(StructField(f"w{j}", from_arrow_schema(outputs[name]))
                               for j, name in enumerate(step.writes))])
        result = reduce(lambda a, b: a.unionByName(b), tagged).repartition(partitions, "_part").mapInArrow(
            _partition_solver(step, params, options, keyed, inputs, whole, outputs), schema
        ).localCheckpoint(eager=True)
        raised = result.where(F.col("_table") == SOLVED).select("_raised").collect()
        for j, name in enumerate(step.writes):
            self._register(name, result.where(F.col("_table") == j).select(f"w{j}.*"))
        self.partitions_solved[step.name] = len(raised)
        for message in sorted(text for row in raised for text in row[0]):
            warnings.warn(message, DataWarning, stacklevel=2)

    def _rows(self, tables: Iterable[str]) -> int:
        """The number of rows of ``tables`` together: from the footers of their Parquet files when all are
        stored so, else one Spark job."""
        folders = [self._files.get(self._source(t)) for t in tables]
        if all(folders):
            import pyarrow.dataset as ds

            return sum(ds.dataset(folder, format="parquet").count_rows() for folder, _ in folders)
        counts = " UNION ALL ".join(f"SELECT count(*) AS n FROM {self.quoted(self._source(t))}"
                                    for t in tables)
        return int(self.execute(f"SELECT sum(n) FROM ({counts}) AS _counts")[0][0] or 0)

    def _input(self, name: str) -> pa.Table:
        """A stage stored as Parquet files is read from them by pyarrow on the driver, without a Spark job
        (and without Spark serving the rows to Python, which costs the JVM more than the job); other tables
        through :meth:`arrow`."""
        stored = self._files.get(self._source(name))
        if stored is None:
            return super()._input(name)
        import pyarrow.parquet as pq

        folder, schema = stored
        return pq.read_table(folder, schema=schema)

    def _register(self, name: str, frame: Any) -> None:
        self._views.pop(name, None)
        self._files.pop(name, None)
        if "." in name:
            frame.write.mode("overwrite").saveAsTable(name)
        elif self.stage_dir is None:  # computed once, its lineage cut: a later stage does not re-analyse it
            frame.localCheckpoint(eager=True).createOrReplaceTempView(name)
        else:  # the same, and Spark reads the files' size (a new folder: views made earlier may read the old)
            from pyspark.sql.pandas.types import to_arrow_schema

            folder = self._stage_path(name)
            frame.write.parquet(folder.as_uri())  # file:, not the cluster's default file system
            self._view_of_files(name, folder, to_arrow_schema(frame.schema))

    def _view_of_files(self, name: str, folder: Path, schema: pa.Schema) -> None:
        """Temporary view ``name`` of the Parquet files in ``folder``, read with their ``schema`` (Spark then
        runs no job to read the files' own), which :meth:`_input` reads without Spark."""
        from pyspark.sql.pandas.types import from_arrow_schema

        self._views.pop(name, None)
        self.spark.read.schema(from_arrow_schema(schema)).parquet(folder.as_uri()).createOrReplaceTempView(name)
        self._files[name] = folder, schema

    def _stage_path(self, name: str) -> Path:
        """A new folder (not made yet) of :attr:`stage_dir` for the rows of table ``name``."""
        return Path(self.stage_dir) / f"{next(self._stored)}-{name}"


SOLVED = -1  # column _table of the row each partition solved adds to its output (SparkEngine.solve)


def _partition_solver(step: Python, params: dict[str, object], options: Options, keyed: Sequence[str],
                      inputs: Mapping[str, pa.Schema], whole: Mapping[str, pa.Table],
                      outputs: Mapping[str, pa.Schema]) -> Callable[[Iterable[Any]], Iterable[Any]]:
    """The function ``mapInArrow`` runs on each partition of a step's tagged input (:meth:`SparkEngine.solve`):
    column ``_table`` says which keyed table a row belongs to (``keyed[_table]``), ``t<i>`` holds its row;
    it yields the tables the step writes, ``w<j>`` the rows of ``step.writes[j]``, then, if it had rows to
    solve, one row whose ``_table`` is :data:`SOLVED` and whose ``_raised`` lists the text of the data
    warnings it raised."""

    def run(batches: Iterable[Any]) -> Iterable[Any]:
        import pyarrow as pa
        import pyarrow.compute as pc

        rows: dict[str, list[pa.RecordBatch]] = {name: [] for name in keyed}
        for batch in batches:
            for i, name in enumerate(keyed):
                mine = batch.filter(pc.equal(batch.column("_table"), i))
                if mine.num_rows:
                    rows[name].append(pa.RecordBatch.from_struct_array(mine.column(f"t{i}")))
        if not any(rows.values()):
            return
        tables = {**whole, **{name: pa.Table.from_batches(rows[name], schema=inputs[name]) for name in keyed}}
        written, messages = solve_recorded(step, params, options, tables)
        names = ["_table", "_raised", *(f"w{k}" for k in range(len(step.writes)))]

        def batch_of(table: int, raised: pa.Array, columns: dict[int, pa.Array], n: int) -> pa.RecordBatch:
            return pa.RecordBatch.from_arrays(
                [pa.array([table] * n, pa.int32()), raised, *(columns.get(k, pa.nulls(n, pa.struct(list(
                    outputs[other])))) for k, other in enumerate(step.writes))], names=names)

        for j, name in enumerate(step.writes):
            for batch in written[name].cast(outputs[name]).to_batches():
                yield batch_of(j, pa.nulls(batch.num_rows, pa.list_(pa.string())), {j: batch.to_struct_array()},
                               batch.num_rows)
        yield batch_of(SOLVED, pa.array([messages], pa.list_(pa.string())), {}, 1)

    return run



def _spark_schema(data: pa.Table) -> str:
    """A Spark DDL schema for an empty Arrow table (Spark cannot infer types from no rows)."""
    import pyarrow as pa

    def kind(t) -> str:
        if pa.types.is_integer(t):
            return "BIGINT"
        if pa.types.is_floating(t):
            return "DOUBLE"
        if pa.types.is_boolean(t):
            return "BOOLEAN"
        return "STRING"

    return ", ".join(f"`{f.name}` {kind(f.type)}" for f in data.schema)


def _stage_dir(spark: Any) -> str | None:
    """A new temporary directory for :class:`SparkEngine`'s stages: under setting :data:`STAGE_DIR` of the
    session when given, else under the driver's temporary directory on a ``local`` master of a session of
    this process; else ``None``."""
    import tempfile

    root = spark.conf.get(STAGE_DIR, None)
    if not root and (is_connect(spark) or not master_of(spark).startswith("local")):
        return None
    try:
        return tempfile.mkdtemp(prefix="hiersql-stages-", dir=root or None)
    except OSError as exc:
        if not root:
            raise
        raise InputError(f"no folder for the stages can be made there ({exc.strerror})", "--spark-conf",
                         value=f"{STAGE_DIR}={root}") from None



def _partition_rows(spark: Any) -> int | None:
    """:class:`SparkEngine`'s ``partition_rows="auto"``: setting :data:`PARTITION_AT` of the session when given,
    else ``None`` on a ``local`` master and :data:`PARTITION_ROWS` on a cluster."""
    value = spark.conf.get(PARTITION_AT, None)
    if value is None:
        return None if master_of(spark).startswith("local") else PARTITION_ROWS
    if not value.isdigit():
        raise InputError("must be a whole number of rows, 0 or more", "--spark-conf", value=f"{PARTITION_AT}={value}")
    return int(value)


def _plans_at_once(spark: Any) -> int:
    """Setting :data:`PLANS_AT_ONCE` of the session, default 2: one plan's small stages (a task each, planned
    on the driver) leave cores that the other's tasks use (GermEval B, every family, ``local[2]``: 10 % faster;
    3 no faster than 2)."""
    value = spark.conf.get(PLANS_AT_ONCE, None) or "2"
    if not value.isdigit() or int(value) < 1:
        raise InputError("must be a whole number of plans, 1 or more", "--spark-conf", value=f"{PLANS_AT_ONCE}={value}")
    return int(value)
