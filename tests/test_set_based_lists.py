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
    params = set_based.sql_params(make_options(**options))
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
    g = data_dir / "germeval2019"
    ev = Evaluator(g / "hierarchy.txt").add_truth(g / "blurbs_test_label.txt", "germeval-b")
    for f in sorted((g / "submissions").glob("*.txt"))[:6]:
        ev.add_predictions(f.stem, f, "germeval-b", no_truth="ignore")
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


def test_the_lists_are_taken_only_within_the_memory_limit(data_dir, monkeypatch):
    """The lists stay in DuckDB's memory (their aggregates do not spill): with expected augmented labels times
    ``LIST_BYTES`` above DuckDB's memory_limit the pair rows are counted instead, which spill to disk."""
    from hiersql.engines import DuckDBEngine
    from hiersql.measures import Options

    g = data_dir / "germeval2019"
    ev = Evaluator(g / "hierarchy.txt").add_truth(g / "blurbs_test_label.txt", "germeval-b")
    for f in sorted((g / "submissions").glob("*.txt"))[:6]:
        ev.add_predictions(f.stem, f, "germeval-b", no_truth="ignore")
    monkeypatch.setattr(set_based, "LIST_COUNTS_FROM", 0)
    engine = DuckDBEngine(ev.store)
    needed = set_based.expected_augmented_labels(ev.store.con) * set_based.LIST_BYTES
    for limit, lists in ((2 * needed, True), (needed / 2, False)):
        ev.store.con.execute(f"SET memory_limit = '{int(limit / 1000)}KB'")
        assert engine.memory_limit() == pytest.approx(limit, rel=0.01)
        assert set_based.sql_params(Options(), engine)["list_counts"] is lists
