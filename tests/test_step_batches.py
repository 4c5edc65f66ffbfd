"""A Python step that declares ``partition_by`` is solved by the DuckDB engine in batches of its keys when its
keyed inputs hold more than ``batch_rows`` rows (``DuckDBEngine.solve``): its arrays stay the size of a batch.
The rows and per-instance values are those of the step solved on all its rows at once, on real data (GermEval
2019 subtask B) and on a DAG under each option that changes a partitioned step; the data warnings of the
batches are raised once all are solved, in the order of their text."""

from __future__ import annotations

import warnings

import pyarrow as pa
import pytest

from hiersql.engines import DuckDBEngine
from hiersql.errors import DataWarning
from hiersql.measures import Options, compute, plan_of
from hiersql.plan import Python
from tests._engine_cases import all_metrics, dag_store, germeval_store
from tests.test_step_dry_runs import partitioned_steps


def batched(store, rows: int) -> DuckDBEngine:
    engine = DuckDBEngine(store)
    engine.batch_rows = rows
    return engine


def solved_on_numbers(solve, writes: str) -> DuckDBEngine:
    """An engine that solved a test step ``solve`` (named as the function) writing ``writes`` from the table
    ``numbers`` of the keys 0 .. 19, in batches of 5 keys."""
    step = Python(solve.__name__, solve, reads=("numbers",), writes=(writes,), why="a test step",
                  partition_by={"numbers": "k"})
    engine = batched(None, 5)
    engine.write("numbers", pa.table({"k": list(range(20))}))
    engine.solve(step, {}, Options())
    return engine


def test_germeval_b_every_family_in_batches(data_dir):
    store = germeval_store(data_dir)
    whole = compute(DuckDBEngine(store), all_metrics(), Options())
    engine = batched(store, 5_000)
    assert compute(engine, all_metrics(), Options()) == whole
    assert set(engine.batches_solved) == {"matching", "minimal_graphs", "pairings", "path_cover"}
    assert min(engine.batches_solved.values()) > 1


@pytest.mark.parametrize("options", [Options(), Options(lca_graph="optimal"), Options(lca_graph="hemkit"),
                                     Options(pairing="flow"), Options(max_distance=2)],
                         ids=["default", "optimal", "hemkit", "flow", "max_distance"])
def test_dag_every_partitioned_step_in_batches(options):
    store = dag_store()
    whole = compute(DuckDBEngine(store), all_metrics(), options)
    engine = batched(store, 3)
    assert compute(engine, all_metrics(), options) == whole
    assert all(n > 1 for n in engine.batches_solved.values())
    solved = partitioned_steps() - {"hemkit_graphs" if options.lca_graph != "hemkit" else "minimal_graphs"}
    assert set(engine.batches_solved) == solved


@pytest.mark.parametrize(("family", "rows"), [("lca", 1_000), ("pair_based", 20_000), ("confusion", 20_000)])
def test_per_instance_values_in_batches(data_dir, family, rows):
    store = germeval_store(data_dir)
    whole = DuckDBEngine(store).per_instance(plan_of(family), Options())
    engine = batched(store, rows)
    assert engine.per_instance(plan_of(family), Options()).equals(whole)
    assert min(engine.batches_solved.values()) > 1


def test_data_warnings_of_batches_once_all_are_solved():
    def double(con, params, options):
        n = con.execute("SELECT count(*) FROM numbers").fetchall()[0][0]
        con.execute("CREATE TABLE doubled AS SELECT k, 2 * k AS v FROM numbers")
        warnings.warn(f"{n} number(s) doubled", DataWarning, stacklevel=2)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        engine = solved_on_numbers(double, "doubled")
    messages = [str(w.message) for w in caught if w.category is DataWarning]
    assert len(messages) == engine.batches_solved["double"] == 4
    assert messages == sorted(messages)
    assert sum(int(m.split()[0]) for m in messages) == 20
    assert sorted(engine.execute("SELECT k, v FROM doubled")) == [(k, 2 * k) for k in range(20)]


@pytest.mark.parametrize(("limit", "low", "high"), [("300MB", 199_000, 200_000), ("5MB", 10_000, 10_000),
                                                    ("40GB", 1_000_000, 1_000_000)])
def test_batches_follow_the_memory_limit(limit, low, high):
    """A batch holds one keyed row per 1,500 bytes of DuckDB's limit (300MB: 286.1 MiB, about 200,000 rows),
    10,000 at least and 1,000,000 at most."""
    from hiersql import Store

    assert low <= DuckDBEngine(Store(memory_limit=limit))._batch_rows() <= high


def test_a_batch_draws_no_progress_bar():
    """A batch's scratch connection has DuckDB's progress bar off, as hiersql's own connections: a long batch
    would draw it on stderr."""
    def setting(con, params, options):
        con.execute("CREATE TABLE bars AS SELECT k, current_setting('enable_progress_bar') AS bar FROM numbers")

    engine = solved_on_numbers(setting, "bars")
    assert engine.batches_solved["setting"] == 4
    assert engine.execute("SELECT DISTINCT bar FROM bars") == [(False,)]


def test_each_batch_sees_its_inputs_alone():
    """The batches of a step share one scratch connection, emptied after each: a batch sees its inputs and
    none of the tables or views an earlier batch made (a view over a step's Arrow output included)."""
    def seen(con, params, options):
        names = con.execute("SELECT list(table_name ORDER BY table_name) FROM duckdb_tables()").fetchall()[0][0]
        views = con.execute("SELECT list(view_name ORDER BY view_name) FROM duckdb_views() WHERE NOT internal"
                            ).fetchall()[0][0]
        con.execute("CREATE TABLE helper AS SELECT 1 AS one")
        con.register("seen", pa.table({"k": [con.execute("SELECT min(k) FROM numbers").fetchall()[0][0]],
                                       "tables": [str(names)], "views": [str(views)]}))

    engine = solved_on_numbers(seen, "seen")
    assert engine.batches_solved["seen"] == 4
    assert engine.execute("SELECT k, tables, views FROM seen ORDER BY k") == [
        (k, "None", "['numbers']") for k in (0, 5, 10, 15)]
