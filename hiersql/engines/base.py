"""The runner of family plans, :class:`Engine`, that each engine subclasses; helpers every runner uses.

Every engine returns the rows ``(system, metric, average, value)`` of :class:`~hiersql.plan.Row`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from .. import sqlfiles
from ..inputs.tables import quote
from ..options import Options
from ..plan import FamilyPlan, Python, Row, Step, instance_values_sql, summary_sql
from .compile import _tree, portable_only_stages, render
from .dialect import dialect as dialect_of

if TYPE_CHECKING:
    import duckdb
    import pandas as pd
    import pyarrow as pa

    from ..inputs.store import Store
    from ..inputs.taxonomy import Taxonomy

STORE_TABLES = ("edges", "nodes", "closure", "instances", "truth", "predictions", "systems", "pair_counts")


class Engine:
    """Where the measures run: one runner of :class:`~hiersql.plan.FamilyPlan` per engine.

    A plan's :class:`~hiersql.plan.Sql` stages are materialised in the engine as tables of their query's
    name (the queries of the file they read and that are not stages yet are composed in, as common table
    expressions); its :class:`~hiersql.plan.Python` steps read their input tables as Arrow into a DuckDB
    connection, solve, and the tables they write are copied back (DuckDB: the step runs on the engine's own
    connection); the summary is the SQL generated from the plan's measures (:func:`hiersql.plan.summary_sql`).
    Subclasses implement :meth:`execute`, :meth:`arrow`, :meth:`write` and :meth:`_materialize`.

    Parameters
    ----------
    tables:
        Renames of the hiersql tables, ``{"truth": "warehouse.gold_labels", ...}``.
    """

    dialect = "duckdb"
    weighted = False  # the summaries weigh each instance by the table sample_weights(instance_id, weight)
    # a plan of SQL stages only: compose its stages into the queries that read them instead of materialising
    # them (fewer statements for small inputs: the one-shot calls, hiersql.engines.oneshot)
    compose_stages = False

    def __init__(self, tables: Mapping[str, str] | None = None) -> None:
        self.tables: dict[str, str] = {}
        self.use_tables(**dict(tables or {}))
        self._taxonomy: Taxonomy | None = None
        # with reuse_stages(): per run of a plan (plan, parameters, options), its steps and what each table
        # they wrote became (the steps that wrote it, its version); the version of every table written since
        self._runs: dict[str, tuple[tuple[str, ...], dict[str, tuple[list[int], int]]]] | None = None
        self._versions: dict[str, int] = {}
        self._clock = 0

    def reuse_stages(self) -> None:
        """From now on, the steps of a run of a plan (:meth:`_steps`) are not run again when this engine ran
        them, or more of the plan's steps after them, with the same parameters and options, and no table they
        wrote has been written since (:meth:`forget`), and no later step of that run replaced one of them: the
        tables hold what the steps would make again, given the same input tables (which must not change
        meanwhile). So the per-instance tables after the evaluation (:meth:`per_instance` after
        :meth:`run_plan`) read the evaluation's stages: the stored per-instance values of batch jobs. For the
        engines whose every table is made through :meth:`stage`, :meth:`write` or :meth:`_materialize`
        (DuckDB, PostgreSQL), which call :meth:`forget`."""
        self._runs = {}

    # -- to implement
    def execute(self, sql: str) -> list[tuple]:
        """Run one statement; its rows as tuples (an empty list for DDL)."""
        raise NotImplementedError

    def arrow(self, sql: str) -> pa.Table:
        """The rows of a query as an Arrow table."""
        raise NotImplementedError

    def write(self, name: str, data: pa.Table) -> None:
        """Create (or replace) table ``name`` holding the rows of the Arrow table ``data``."""
        raise NotImplementedError

    def _materialize(self, name: str, sql: str) -> None:
        """Create (or replace) table ``name`` as the result of query ``sql``."""
        raise NotImplementedError

    def _materialize_tree(self, name: str, tree: Any) -> None:
        """:meth:`_materialize` of the sqlglot ``tree`` of a query (rendered by :func:`_tree`)."""
        self._materialize(name, tree.sql(dialect=self.dialect))

    def variant(self) -> str | None:
        """The ``-- name: NAME (variant)`` bodies of the SQL files this engine's stages run (``None``: the
        portable queries)."""
        return dialect_of(self.dialect).variant

    def quoted(self, name: str) -> str:
        """A (possibly qualified) table or column name, quoted as this engine writes the tables it creates."""
        return dialect_of(self.dialect).quoted(name)

    # -- tables
    def use_tables(self, **renames: str) -> None:
        """Read the hiersql table ``key`` from the engine's table ``value`` (``truth="dw.gold_labels"``)."""
        unknown = set(renames) - set(STORE_TABLES)
        if unknown:
            raise ValueError(f"unknown table(s) {sorted(unknown)} (known: {', '.join(STORE_TABLES)})")
        self.tables.update({k: sqlfiles.table_name(v, f"table {k}") for k, v in renames.items() if v})

    def table(self, name: str) -> str:
        """The engine-side name of hiersql table ``name``."""
        return self.tables.get(name, name)

    def copy_store(self, store: Store, tables: Iterable[str] = STORE_TABLES) -> None:
        """Copy the store's ``tables`` into the engine, under the names of :meth:`table`; the store's
        taxonomy comes along for the families that check it (:meth:`taxonomy`)."""
        for name in tables:
            self.write(self.table(name), store.con.table(name).to_arrow_table())
        self._taxonomy = store.taxonomy

    def build_closure(self, max_depth: int | None = None) -> None:
        """Compute ``closure`` inside the engine from its ``edges`` and ``nodes`` (``closure.sql``), up to
        ``max_depth`` edges when given."""
        self._materialize(self.table("closure"), self.render("closure", params={"max_depth": max_depth}))

    def taxonomy(self) -> Taxonomy:
        """The taxonomy of the engine's ``edges`` table (the store's, when copied from one)."""
        if self._taxonomy is None:
            from ..inputs.taxonomy import Taxonomy

            edges = self.arrow(f"SELECT parent, child, weight FROM {self.quoted(self.table('edges'))}")
            weighted = edges.column("weight").null_count < len(edges)
            self._taxonomy = Taxonomy.from_dataframe(edges.to_pandas(), weight="weight" if weighted else None)
        return self._taxonomy

    # -- queries
    def render(self, file: str, name: str | None = None, params: Mapping[str, object] | None = None) -> str:
        """Query ``name`` of ``sql/<file>.sql`` in this engine's dialect, over this engine's tables."""
        frozen = _frozen(params)
        if frozen is None:  # a value without a hash
            return render(file, name, params, self.dialect, self.tables, pretty=False)
        return _rendered(file, name, frozen, self.dialect, tuple(sorted(self.tables.items())))

    def run(self, file: str, name: str | None = None, params: Mapping[str, object] | None = None) -> list[tuple]:
        """Rows of query ``name`` of ``sql/<file>.sql``."""
        return self.execute(self.render(file, name, params))

    def stage(self, file: str, query: str, params: Mapping[str, object], done: set[str],
              text: str | None = None) -> None:
        """Materialise query ``query`` of ``sql/<file>.sql`` (or the query ``text`` reading that file's
        queries) as table ``query``; the queries it reads that are not in ``done`` (tables already made) are
        composed in. Adds ``query`` to ``done``."""
        self.forget(query)
        self._materialize_tree(query, _tree(file, query, params, self.dialect, self.tables, skip=done, text=text))
        done.add(query)

    def result(self, file: str, query: str, params: Mapping[str, object], done: set[str],
               text: str | None = None) -> list[tuple]:
        """The rows of query ``query`` of ``sql/<file>.sql`` (or of ``text``), made as :meth:`stage` makes
        it: a plan's last query, whose rows the runner returns."""
        self.stage(file, query, params, done, text)
        return self.execute(f"SELECT * FROM {query}")

    def frame(self, file: str, query: str, params: Mapping[str, object] | None = None, *, where: str = "",
              order: str = "", text: str | None = None, stages: Sequence[str] = ()) -> pd.DataFrame:
        """The rows of query ``query`` of ``sql/<file>.sql`` (or of the query ``text`` reading that file's
        queries), made as :meth:`stage` makes it, kept where ``where`` holds (SQL written by the library, never
        input), as a pandas frame sorted by ``order`` (``"system, level DESC"``): how the analyses read a query
        on any engine. The sort is pandas' (code-point order of strings, missing values last), not the
        engine's, whose collation may differ (a PostgreSQL server's locale). The queries of ``stages`` that
        ``query`` reads are made as tables first, in their order, rather than composed into it."""
        params, done = dict(params or {}), set()
        for name in stages:
            if name in sqlfiles.dependencies(file, query, text=text, skip=done):
                self.stage(file, name, params, done)
        self.stage(file, query, params, done, text)
        frame = self.arrow(f"SELECT * FROM {query}" + (f" WHERE {where}" if where else "")).to_pandas()
        if not order:
            return frame
        keys = [part.split() for part in order.split(",")]
        return frame.sort_values([k[0] for k in keys], ascending=[k[-1].upper() != "DESC" for k in keys],
                                 kind="stable").reset_index(drop=True)

    def systems(self) -> list[str]:
        """The systems of the engine's ``systems`` table, in code-point order."""
        return sorted(row[0] for row in self.execute(f"SELECT system FROM {self.quoted(self.table('systems'))}"))

    # -- plans
    def run_plans(self, runs: Sequence[tuple[FamilyPlan, Sequence[str]]], options: Options,
                  on_plan: Callable[[FamilyPlan], None] | None = None) -> list[list[Row]]:
        """The summary rows of each ``(plan, metrics)`` of ``runs`` (:meth:`run_plan`), in their order;
        ``on_plan(plan)`` is called as each plan begins. Here one plan after the other."""
        out = []
        for plan, metrics in runs:
            if on_plan is not None:
                on_plan(plan)
            out.append(self.run_plan(plan, metrics, options))
        return out

    def run_plan(self, plan: FamilyPlan, metrics: Sequence[str], options: Options) -> list[Row]:
        """The summary rows of ``metrics`` (of ``plan``'s family) with ``options.average``."""
        plan.check(self, metrics, options)
        rows: list[Row] = []
        for group, group_options, params, done in self._group_runs(plan, metrics, options):
            if plan.summary is not None:
                summary = self.result(plan.file, plan.summary, params, done)
            else:
                summary = self.result(plan.file, f"{plan.name}_summary", params, done,
                                      text=summary_sql(plan, group, options.average, True, self.weighted,
                                                       options.labels is not None, dialect_of(self.dialect).lists))
            run = () if plan.run_average is None else (plan.average_of(group_options),)
            rows += summary_rows(summary, metrics, options, run)
        order = {m: i for i, m in enumerate(plan.metrics)}
        runs = {} if plan.run_average is None else {plan.average_of(group): i for i, (_, group)
                                                     in enumerate(plan.groups(metrics, options))}  # @1 before @10
        return sorted(rows, key=lambda r: (r.system, order.get(r.metric, len(order)), r.metric,
                                           runs.get(r.average, 0), r.average))

    def run_queries(self, plan: FamilyPlan, metrics: Sequence[str], options: Options,
                    queries: Mapping[str, str]) -> dict[str, list[tuple]]:
        """The plan's checks and steps for ``metrics``, then the generated queries ``{table name: SQL reading
        the plan's stages}`` (a summary, per-class values, ...), each materialised as its table: their rows.
        ``metrics`` must fall in one group of :attr:`~hiersql.plan.FamilyPlan.groups` (one metric does)."""
        plan.check(self, metrics, options)
        out: dict[str, list[tuple]] = {}
        for _, _, params, done in self._group_runs(plan, metrics, options):
            for name, text in queries.items():
                out[name] = self.result(plan.file, name, params, done, text=text)
        return out

    def per_instance(self, plan: FamilyPlan, options: Options, metrics: Sequence[str] | None = None) -> pa.Table:
        """The plan's per-instance table as Arrow, ordered by its key; the columns of measures computed in a
        run of their own (:attr:`~hiersql.plan.FamilyPlan.groups`) come from that run. ``metrics``: the
        measures whose values the table must hold (default all the plan's): the runs of a summary of those
        (:meth:`run_plan`), whose other columns a family may leave undefined."""
        stage = plan.instance
        key = plan.unit_order.get(stage, "system, instance_id")
        out = None
        for group, _, params, done in self._group_runs(plan, list(metrics or plan.metrics), options, stage):
            self.stage(plan.file, f"{stage}_values", params, done, text=instance_values_sql(plan))
            table = self.arrow(f"SELECT * FROM {stage}_values ORDER BY {key}")
            if out is None:
                out = table
            else:  # the same units, or those of the systems the run defines (hard predictions: k = 1 only)
                keys = [column.strip() for column in key.split(",")]
                joined = out.drop_columns(list(group)).join(table.select([*keys, *group]), keys,
                                                            join_type="full outer")
                out = joined.select(out.column_names).sort_by([(column, "ascending") for column in keys])
        return out

    def check_classes(self, labels: Sequence[str], table: str = "flat_labels") -> None:
        """Fixed classes ``labels`` (scikit-learn's ``labels=``) must be nodes of the taxonomy (not its virtual
        root), each once: a class that cannot occur, or one counted twice, would change the averages without a
        word. The rule is ``flat_label_faults`` of ``flat.sql``, the SQL door's too, run here on ``labels``
        written as ``table`` (read as its ``flat_labels``): its first fault is an
        :class:`~hiersql.options.OptionError` naming ``labels``."""
        import pyarrow as pa

        from ..options import OptionError

        self.write(table, pa.table({"label": pa.array(list(labels), pa.string())}))
        renames = tuple(sorted({**self.tables, "flat_labels": table}.items()))
        for fault, label in self.execute(_rendered("flat", "flat_first_label_fault", (), self.dialect, renames)):
            raise OptionError("labels", fault, label)

    def prepare(self, plan: FamilyPlan, metrics: Sequence[str], options: Options) -> dict[str, object]:
        """The plan's ``$parameters``; helper tables written into the engine. Fixed classes (``options.labels``)
        of a plan with classes are checked first (:meth:`check_classes`, as the plan's table
        ``<plan>_fixed_classes``: plans run side by side make tables of their own): every door that runs a plan
        (evaluate, per-instance values, compare, the one-shot functions) refuses the same."""
        if options.labels is not None and plan.classes is not None:
            self.check_classes(options.labels, f"{plan.name}_fixed_classes")
        params = {"zero_division": float(options.zero_division), **plan.params(options, self, list(metrics))}
        for name, data in plan.tables(options).items():
            self.write(name, data)
        return params

    def _group_runs(self, plan: FamilyPlan, metrics: Sequence[str], options: Options, until: str | None = None
                    ) -> Iterator[tuple[list[str], Options, dict[str, object], set[str]]]:
        """Each run of ``plan.groups(metrics, options)``, prepared (:meth:`prepare`) and its steps run (up to the
        one that makes table ``until``, default all): ``(metrics, options, parameters, tables made)``.

        With several runs, each query of :attr:`~hiersql.plan.FamilyPlan.shared` is made as a table before a
        run's steps, and a later run reuses it (and the tables made with it) while the values of the
        ``$parameters`` its rows depend on (:func:`hiersql.sqlfiles.inputs`) are those it was made with; else
        it is made again. A query that reads a table a run writes (a helper table, a Python step's) is not
        shared: the steps make it in every run, as they do with one run."""
        groups = plan.groups(metrics, options)
        made: dict[str, tuple[dict[str, object], set[str]]] = {}  # query -> (its parameters' values, tables)
        for group, group_options in groups:
            params = self.prepare(plan, group, group_options)
            done: set[str] = set()
            if len(groups) > 1:
                written = {*plan.tables(group_options), *(t for s in plan.steps if isinstance(s, Python)
                                                          for t in s.writes)}
                for query in plan.shared:
                    names, tables = sqlfiles.inputs(plan.file, query)
                    if (tables | {query}) & written:
                        continue
                    values = {name: params.get(name) for name in names}
                    if query in made and made[query][0] == values:
                        done |= made[query][1]
                    else:
                        before = set(done)
                        self.stage(plan.file, query, params, done)
                        made[query] = (values, done - before)
            steps = plan.steps if until is None else plan.steps_until(until)
            yield group, group_options, params, self._steps(plan, steps, params, group_options, done)

    def _steps(self, plan: FamilyPlan, steps: Sequence[Step], params: dict[str, object], options: Options,
               made: frozenset[str] | set[str] = frozenset()) -> set[str]:
        """Run ``steps`` (those not in ``made``, tables already made, and those only portable queries that
        this engine does not run read: :func:`portable_only_stages`) with ``params``; the tables made, with
        ``made`` and the plan's helper tables."""
        done: set[str] = set(plan.tables(options)) | made
        compose = self.compose_stages and not any(isinstance(step, Python) for step in plan.steps)
        if not compose:
            unread = portable_only_stages(plan, tuple(steps), self.variant())
            steps = [step for step in steps if isinstance(step, Python) or step.query not in unread]
        run = f"{plan.name} {plan.file} {sorted(params.items())!r} {options!r}"  # (reuse_stages)
        names = tuple(step.name if isinstance(step, Python) else step.query for step in steps)
        reused = self._reused(run, names)
        if reused is not None:
            return done | reused
        writers: dict[str, list[int]] = {}
        for k, step in enumerate(steps):
            if isinstance(step, Python):
                if not step.when(options):
                    continue
                self.solve(step, params, options)
                done.update(step.writes)
                for table in step.writes:
                    self.forget(table)
                    writers.setdefault(table, []).append(k)
            elif not compose and step.query not in made:
                self.stage(plan.file, step.query, params, done)
                writers.setdefault(step.query, []).append(k)
        if self._runs is not None and not compose:
            self._runs[run] = (names, {t: (ks, self._versions[t]) for t, ks in writers.items()})
        return done

    def _reused(self, run: str, names: tuple[str, ...]) -> set[str] | None:
        """The tables that the steps ``names`` of ``run`` wrote, when they need not run again
        (:meth:`reuse_stages`); else ``None``."""
        found = None if self._runs is None else self._runs.get(run)
        if found is None or found[0][:len(names)] != names:
            return None
        tables = {t: ks for t, (ks, version) in found[1].items() if ks[0] < len(names)}
        if all(max(ks) < len(names) and self._versions.get(t) == found[1][t][1] for t, ks in tables.items()):
            return set(tables)
        return None

    def forget(self, name: str) -> None:
        """Table ``name`` is made or replaced: a new version of it (:meth:`reuse_stages`)."""
        if self._runs is not None:
            self._clock += 1
            self._versions[name] = self._clock

    def solve(self, step: Python, params: dict[str, object], options: Options) -> None:
        """Run a Python step on a scratch DuckDB connection holding Arrow copies of the tables it reads, and
        write the tables it makes back into the engine."""
        tables = {name: self._input(name) for name in step.reads}
        for name, data in solve_arrow(step, params, options, tables).items():
            self.write(name, data)

    def _source(self, name: str) -> str:
        """The engine-side table a step's input ``name`` is read from."""
        return self.table(name) if name in STORE_TABLES else name

    def _from(self, name: str) -> str:
        """The engine-side table of a step's input ``name``: a table of hiersql's own by its name (quoting
        would import sqlglot, which a plain DuckDB run does without), a renamed one quoted."""
        source = self._source(name)
        return name if source == name else self.quoted(source)

    def _input(self, name: str) -> pa.Table:
        """The rows of a step's input ``name`` as Arrow."""
        return self.arrow(f"SELECT * FROM {self._from(name)}")


# Each query rendered once per parameters, dialect and tables: sqlglot takes milliseconds, and the checks (a
# one-shot call's classes, the scoring tree's faults, severity's k) ask the same queries call after call.
@lru_cache(maxsize=1024)
def _rendered(file: str, name: str | None, params: tuple[tuple[str, str, object], ...], dialect: str,
              renames: tuple[tuple[str, str], ...]) -> str:
    """:func:`~hiersql.engines.compile.render` of :meth:`Engine.render`'s arguments, made hashable
    (:func:`_frozen`, ``renames`` as sorted items)."""
    return render(file, name, {key: value for key, _, value in params}, dialect, dict(renames), pretty=False)


def _frozen(params: Mapping[str, object] | None) -> tuple[tuple[str, str, object], ...] | None:
    """``params`` as sorted ``(name, repr, value)`` triples, ``None`` when a value has no hash: a value's
    ``repr`` keeps apart what compares equal but renders otherwise (``True`` and ``1``, ``0.0`` and ``-0.0``)."""
    frozen = tuple(sorted((key, repr(value), value) for key, value in (params or {}).items()))
    try:
        hash(frozen)
    except TypeError:
        return None
    return frozen


def solve_arrow(step: Python, params: dict[str, object], options: Options, tables: Mapping[str, pa.Table],
                scratch: duckdb.DuckDBPyConnection | None = None) -> dict[str, pa.Table]:
    """The tables ``step`` writes, as Arrow, solved on a scratch DuckDB connection holding ``tables`` (its
    inputs, as Arrow): ``scratch`` (:func:`scratch_connection`), emptied again for the next batch, or a new
    one (one connection for every batch of a step: a new database per batch maps its memory afresh)."""
    con = scratch if scratch is not None else scratch_connection()
    try:
        for name, data in tables.items():
            con.register(name, data)
        step.solve(con, params, options)
        return {name: con.table(name).to_arrow_table() for name in step.writes}
    finally:
        if scratch is None:
            con.close()
        else:
            for name in (*tables, *step.writes):  # the views over Arrow tables (a step may register its output)
                con.unregister(name)
            for (name,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall():
                con.execute(f"DROP TABLE {quote(name)}")


def scratch_connection() -> duckdb.DuckDBPyConnection:
    """A new in-memory DuckDB connection for a Python step's batch."""
    import duckdb

    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")  # a long batch would draw DuckDB's bar on stderr
    return con


def solve_recorded(step: Python, params: dict[str, object], options: Options, tables: Mapping[str, pa.Table],
                   scratch: duckdb.DuckDBPyConnection | None = None) -> tuple[dict[str, pa.Table], list[str]]:
    """:func:`solve_arrow` of one partition of a step's rows, and the text of the data warnings it raised
    (caught, not shown: the runner raises them again once every partition is solved)."""
    import warnings

    from ..errors import DataWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DataWarning)
        written = solve_arrow(step, params, options, tables, scratch)
    return written, [str(w.message) for w in caught if issubclass(w.category, DataWarning)]


def summary_rows(summary: Iterable[tuple], metrics: Sequence[str], options: Options,
                 run: Sequence[str] = ()) -> list[Row]:
    """The rows (:class:`~hiersql.plan.Row`) of a summary query's rows ``(system, metric, average, value)``
    that ``metrics`` and ``options.average`` ask for (the plain average ``""`` always, and the averages of
    ``run``: a run's own, :meth:`~hiersql.plan.FamilyPlan.average_of`); a NULL value is NaN."""
    wanted, averages = set(metrics), set(options.average) | {""} | set(run)
    return [Row(str(s), str(m), a or "", float("nan") if v is None else float(v)) for s, m, a, v in summary
            if m in wanted and (a or "") in averages]
