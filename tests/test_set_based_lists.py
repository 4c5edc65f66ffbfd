"""The two ways of counting of ``set_based.sql`` give the same per-instance rows on real data: the
portable pair rows and the DuckDB variant with per-instance lists (``$list_counts``), whatever share of the
nodes the lists keep as bits (``$list_bits``: none, a few, all of a small taxonomy)."""

from __future__ import annotations

import random

import pytest

from hiersql import Evaluator, Taxonomy
from hiersql.api.evaluator import make_options
from hiersql.measures import set_based
from tests._engine_cases import query_rows

BITS = (0, 1, 25, set_based.LIST_BITS)


def _per_instance_both_ways(store, **options):
    """The per-instance counts of the pair query, and those of the list query (DuckDB variant) with each of
    :data:`BITS` bits, for ``options``."""
    params = set_based.plan_params(make_options(**options))
    pairs, *lists = (
        query_rows(store, "set_based", "set_based_instance", {**params, "list_counts": bits is not None,
                                                              "list_bits": bits or 0}, "system, instance_id")
        for bits in (None, *BITS)
    )
    return pairs, lists


@pytest.mark.parametrize("options", [
    {}, {"include_root": True}, {"max_distance": 2}, {"augment": "descendants"},
    {"augment": "descendants", "max_distance": 1, "include_root": True}, {"augment": "cesa_bianchi"},
])
def test_list_counts_equal_pair_counts_on_germeval(data_dir, options):
    ev = _germeval_b(data_dir)
    pairs, lists = _per_instance_both_ways(ev.store, **options)
    assert len(pairs) == 6 * 4157
    assert lists == [pairs] * len(BITS)


def test_list_counts_equal_pair_counts_on_mesh(data_dir):
    tax = Taxonomy.from_file(data_dir / "mesh" / "mesh_hierarchy_int.txt")
    rng = random.Random(7)
    nodes = tax.nodes
    truth = [rng.sample(nodes, rng.randint(0, 4)) for _ in range(300)]
    pred = [rng.sample(nodes, rng.randint(0, 4)) for _ in range(300)]
    ev = Evaluator(tax).add_truth(truth).add_predictions("random", pred).add_predictions("gold", truth)
    for options in ({}, {"augment": "descendants"}, {"max_distance": 3}):
        pairs, lists = _per_instance_both_ways(ev.store, **options)
        assert lists == [pairs] * len(BITS)
        assert any(n_both for *_, n_both, _hp, _hr, _hf, _sdl in pairs)


def _germeval_b(data_dir, systems: int = 6) -> Evaluator:
    g = data_dir / "germeval2019"
    ev = Evaluator(g / "hierarchy.txt").add_truth(g / "blurbs_test_label.txt", "germeval-b")
    for f in sorted((g / "submissions").glob("*.txt"))[:systems]:
        ev.add_predictions(f.stem, f, "germeval-b", no_truth="ignore")
    return ev


def test_the_lists_are_counted_by_ranges_of_instances_within_the_memory_limit(data_dir, monkeypatch):
    """The lists stay in DuckDB's memory (their aggregates do not spill): with expected augmented labels times
    ``LIST_BYTES`` above DuckDB's memory_limit they are counted for ranges of instances one after the other,
    as many ranges as that product holds limits."""
    from hiersql.engines import DuckDBEngine
    from hiersql.measures import Options

    ev = _germeval_b(data_dir)
    monkeypatch.setattr(set_based, "LIST_COUNTS_FROM", 0)
    engine = DuckDBEngine(ev.store)
    ev.store.con.execute("SET memory_limit = '100MB'")
    labels = set_based.expected_augmented_labels(engine)
    for needed, batches in ((0.5, 1), (2.5, 3), (6.5, 7)):  # the lists' bytes, in memory limits
        monkeypatch.setattr(set_based, "LIST_BYTES", needed * engine.memory_limit() / labels)
        params = set_based.plan_params(Options(), engine)
        assert (params["list_counts"], params["instance_batches"]) == (True, batches)
        assert set_based.plan_params(Options(augment="cesa_bianchi"), engine)["instance_batches"] == 1


@pytest.mark.parametrize("batches", [2, 7])
def test_list_counts_by_ranges_of_instances_equal_pair_counts(data_dir, batches):
    """``set_counts`` made from ranges of the instances gives the rows of the pair query, each (system,
    instance) once; the Cesa-Bianchi tolerance, whose pair rows the same query reads, too."""
    from hiersql.engines import DuckDBEngine

    ev = _germeval_b(data_dir, systems=3)
    for options in ({}, {"augment": "cesa_bianchi"}):
        params = set_based.plan_params(make_options(**options))
        pairs = query_rows(ev.store, "set_based", "set_based_instance", params, "system, instance_id")
        engine = DuckDBEngine(ev.store)
        listed = {**params, "list_counts": True, "instance_batches": batches}
        assert len(engine._instance_ranges("SELECT $instance_low, $instance_high", listed)) == batches
        done: set[str] = set()
        engine.stage("set_based", "set_counts", listed, done)
        engine.stage("set_based", "set_based_instance", listed, done)
        assert engine.execute("SELECT * FROM set_based_instance ORDER BY system, instance_id") == pairs
        assert engine.execute("SELECT count(*), count(DISTINCT (system, instance_id)) FROM set_counts")[0] == \
            (len(pairs),) * 2


@pytest.mark.parametrize("batches", [1, 2, 3, 10])
def test_list_counts_by_ranges_on_the_hand_case(batches):
    """The hand-computed counts of tests/_engine_cases.py (|Yaug|, |Ŷaug|, |Ŷaug ∩ Yaug| per instance), with
    up to more ranges than instances (ranges that hold nothing are left out or empty)."""
    from hiersql.engines import DuckDBEngine
    from tests._engine_cases import hand_store

    engine = DuckDBEngine(hand_store())
    params = {**set_based.plan_params(make_options()), "list_counts": True, "instance_batches": batches}
    engine.stage("set_based", "set_counts", params, set())
    rows = engine.execute("SELECT system, n_true, n_pred, n_both FROM set_counts ORDER BY system, instance_id")
    assert rows == [("s1", 2, 2, 1), ("s1", 4, 2, 1), ("s1", 1, 0, 0),
                    ("s2", 2, 1, 1), ("s2", 4, 4, 4), ("s2", 1, 2, 1)]
