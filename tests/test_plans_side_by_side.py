"""Family plans side by side on Spark (``SparkEngine.run_plans``, docs/engines.md): each plan on a fork of the
engine in a thread of its own, the same session; the rows equal DuckDB's, an error is the first failing
family's in the order asked, the threads carry the caller's job group. Running side by side needs that no two
families make a table of the same name (a temporary view of the one session)."""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time
import warnings

import pytest

from hiersql import sqlfiles
from hiersql.engines import PLANS_AT_ONCE, SparkEngine
from hiersql.errors import InputError
from hiersql.measures import FAMILIES, Options, compute, plan_of
from hiersql.plan import Python
from tests._engine_cases import assert_rows_match, families_of, hand_store, reference


def made_by(plan) -> set[str]:
    """The tables a plan may make in an engine: its file's queries (stages, their ``<stage>__<cte>`` parts
    carry the stage's name), its summary, its Python steps' outputs and its helper tables."""
    names = set(sqlfiles.queries(plan.file, "spark")) | {plan.summary or f"{plan.name}_summary"}
    names |= {name for step in plan.steps if isinstance(step, Python) for name in step.writes}
    for options in (Options(), Options(labels=("a",))):
        names |= set(plan.tables(options))
    return names


def test_no_two_families_make_a_table_of_the_same_name():
    made = {fam: made_by(plan_of(fam)) for fam in FAMILIES}
    assert all(made.values())
    for i, fam in enumerate(FAMILIES):
        for other in FAMILIES[i + 1:]:
            assert not made[fam] & made[other], (fam, other)


@pytest.fixture(scope="module")
def hand():
    return hand_store()


def engine_of(spark, store, at_once: str | None) -> SparkEngine:
    if at_once is None:
        spark.conf.unset(PLANS_AT_ONCE)
    else:
        spark.conf.set(PLANS_AT_ONCE, at_once)
    try:
        engine = SparkEngine(spark)
    finally:
        spark.conf.unset(PLANS_AT_ONCE)
    engine.copy_store(store)
    return engine


# The families run one after the other: four, one with a Python step (every family runs side by side, the
# default, in tests/test_engines.py; one after the other each takes Spark's jobs again, not new code)
ONE_AFTER = ("set_based", "flat", "pair_based", "severity")
# The families run side by side with their steps solved per partition: four, with the three steps of the default
# options that declare partition_by (every such step per partition: tests/test_engines_spark.py)
SIDE_BY_SIDE = ("set_based", "flat", "pair_based", "confusion")


@pytest.mark.spark
@pytest.mark.parametrize("at_once", [None, "1"])
def test_side_by_side_or_one_after_the_other_the_rows_equal_duckdb(spark, hand, at_once):
    """Default 2 at a time (threads of the pool), here with the Python steps solved per partition (a cluster's default;
    here from 0 rows on: :data:`SIDE_BY_SIDE`), or one after the other on the caller's thread
    (:data:`ONE_AFTER`), the steps on the driver. A step solved per partition first runs on no rows of its keyed
    tables to learn the schemas it writes, which warns of nothing (were it silenced instead, the process-wide
    filter would hide the other plan's warnings: tests/test_step_dry_runs.py checks every step). The threads
    inherit the caller's local properties: every job of the plans is in the caller's job group."""
    import pyspark

    engine = engine_of(spark, hand, at_once)
    assert engine.plans_at_once == int(at_once or 2)
    metrics = list(SIDE_BY_SIDE if at_once is None else ONE_AFTER)
    if at_once is None:
        engine.partition_rows = 0
    threads: dict[str, str] = {}
    tracker, context = spark.sparkContext.statusTracker(), spark.sparkContext
    seen = {e.executionId() for e in _sql_executions(spark)}
    before = set(tracker.getJobIdsForGroup(None))
    group = f"hiersql-test-plans-{at_once}"
    context.setJobGroup(group, "plans side by side")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rows = compute(engine, metrics, Options(),
                           on_family=lambda fam: threads.__setitem__(fam, threading.current_thread().name))
    finally:
        for key in ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel"):
            context.setLocalProperty(key, None)
    assert tracker.getJobIdsForGroup(group)
    assert set(tracker.getJobIdsForGroup(None)) - before == set()
    # each thread has local properties of its own: no job of one is counted in another's SQL execution, which
    # Spark's SQL listener would then keep as running for ever (no submission time), with its plans' metrics
    context._jsc.sc().listenerBus().waitUntilEmpty()
    assert [e.executionId() for e in _sql_executions(spark) if e.executionId() not in seen
            and (e.submissionTime() < 0 or e.completionTime().isEmpty())] == []
    spark_own = os.path.dirname(pyspark.__file__)  # pyspark's own notes (pandas 3) are not the steps'
    assert [str(w.message) for w in caught if not w.filename.startswith(spark_own)] == []
    assert set(threads) == families_of(rows) and len(threads) >= 4
    if at_once == "1":
        assert set(threads.values()) == {threading.current_thread().name}
        assert engine.partitions_solved == {}
    else:
        assert all(name.startswith("hiersql-plan") for name in threads.values())
        assert 1 < len(set(threads.values())) <= engine.plans_at_once
        assert set(engine.partitions_solved) >= {"pairings", "matching", "path_cover"}
    assert families_of(rows) == set(metrics)
    assert_rows_match(rows, reference(hand, metrics, Options()), tol=1e-12)
    engine.close()


def _sql_executions(spark) -> list:
    """The SQL executions Spark's status store holds (its JVM objects)."""
    found = spark._jsparkSession.sharedState().statusStore().executionsList()
    return [found.apply(i) for i in range(found.size())]


@pytest.mark.spark
def test_the_plans_at_once_setting(spark):
    """``hiersql.plansAtOnce``: a whole number of plans; anything else is an input error naming it."""
    for value, want in (("3", 3), ("1", 1)):
        spark.conf.set(PLANS_AT_ONCE, value)
        try:
            assert SparkEngine(spark).plans_at_once == want
        finally:
            spark.conf.unset(PLANS_AT_ONCE)
    spark.conf.set(PLANS_AT_ONCE, "two")
    try:
        with pytest.raises(InputError, match="--spark-conf.*hiersql.plansAtOnce=two"):
            SparkEngine(spark)
    finally:
        spark.conf.unset(PLANS_AT_ONCE)


def failing(fam: str, after: float):
    """The plan of ``fam`` with a last step that raises after ``after`` seconds."""
    def fail(con, params, options):
        time.sleep(after)
        raise InputError(f"{fam} failed", "test")

    plan = plan_of(fam)
    return dataclasses.replace(plan, steps=(*plan.steps, Python("fail", fail, reads=(), writes=(), why="a test step")))


@pytest.mark.spark
def test_the_error_is_the_first_failing_familys_in_the_order_asked(spark, hand):
    """The first family fails last (it sleeps): its error is raised, not the one that came first in time."""
    engine = engine_of(spark, hand, None)
    runs = [(failing("set_based", 2.0), ["hierarchical_f1"]), (failing("flat", 0.0), ["example_f1"])]
    with pytest.raises(InputError, match="set_based failed"):
        engine.run_plans(runs, Options())
    engine.close()


@pytest.mark.spark
def test_an_interrupt_ends_the_plans_before_it_is_raised(spark, hand):
    """A real SIGINT while the first plan sleeps in a step: KeyboardInterrupt, no thread of the plans left (the
    jobs it starts after waking are cancelled), and the session still computes."""
    assert threading.current_thread() is threading.main_thread()  # where Python delivers the signal

    timers = []

    def sleep(con, params, options):  # the signal is sent once the plans run (not earlier on a slow machine)
        # to the main thread itself, whose wait it interrupts (a signal to the process may reach another thread,
        # and the main thread take it only once its wait ends: after pytest.raises, on a loaded machine)
        timers.append(threading.Timer(0.5, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT)))
        timers[0].start()
        timers[0].finished.wait(60)  # sent, however late the timer's thread runs on a loaded machine
        time.sleep(1.0)

    # The handler in force (pyspark's, which cancels the context's jobs, then raises KeyboardInterrupt) runs for a
    # signal taken within the block; one taken outside it is noted, not raised: a worker died once more while this
    # test ran (a -m spark run), and such a signal now fails the test, saying so, instead of ending the worker
    previous, outside, inside = signal.getsignal(signal.SIGINT), [], [False]

    def interrupt(signum, frame):
        if not inside[0]:
            outside.append(signum)
        elif callable(previous):
            previous(signum, frame)
        else:
            raise KeyboardInterrupt

    set_based, flat = plan_of("set_based"), plan_of("flat")
    slow = dataclasses.replace(set_based, steps=(Python("sleep", sleep, reads=(), writes=(),
                                                        why="a test step"), *set_based.steps))
    engine = engine_of(spark, hand, None)
    signal.signal(signal.SIGINT, interrupt)
    try:
        inside[0] = True
        with pytest.raises(KeyboardInterrupt):
            engine.run_plans([(slow, ["hierarchical_f1"]), (flat, ["example_f1"])], Options())
    finally:
        inside[0] = False
        for timer in timers:
            timer.cancel()
            timer.join()
        signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)
    assert not outside, "the SIGINT was taken after the plans had ended"
    assert not [t for t in threading.enumerate() if t.name.startswith("hiersql-plan")]
    assert_rows_match(compute(engine, ["hierarchical_f1"], Options()), reference(hand, ["hierarchical_f1"], Options()))
    engine.close()
