"""Error profile (error_profile.sql): categories, distances, LCA depths, path consistency; by hand on a
tree and a DAG, and on GermEval 2019 subtask B against an independent computation (root paths in Python)."""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import pandas as pd
import pytest

from hiersql import sqlfiles
from hiersql.analyses import error_profile
from hiersql.inputs.store import Store
from hiersql.inputs.taxonomy import Taxonomy
from tests._engine_cases import query_rows


def _store(edges, y_true, y_pred) -> Store:
    store = Store()
    store.load_taxonomy(Taxonomy.from_edges(edges))
    store.add_truth(y_true)
    store.add_predictions("s", y_pred)
    return store


# r > {a, b}; a > {a1, a2}; a1 > {a11}; b > {b1}
TREE = [("r", "a"), ("r", "b"), ("a", "a1"), ("a", "a2"), ("a1", "a11"), ("b", "b1")]


def test_categories_on_a_tree_by_hand():
    y_true = [["a1"], ["a1"], ["a1"], ["a11"], ["a1"], [], ["b1", "a2"]]
    y_pred = [["a1"], ["a"], ["a11"], ["a2"], ["b1"], ["b"], []]
    store = _store(TREE, y_true, y_pred)
    profile = error_profile.predicted_profile(store).set_index("instance_id")
    assert list(profile["category"]) == ["exact", "ancestor", "descendant", "same_branch", "cross_branch",
                                         "spurious"]
    # a11 vs a2: up 2 to a, down 1: d = 3, LCA a at depth 1; a1 vs b1: d = 4 via the root (depth 0)
    assert list(profile["distance"].fillna(-1)) == [0, 1, 1, 3, 4, -1]
    assert list(profile["lca_depth"].fillna(-1)) == [2, 1, 2, 1, 0, -1]
    counts = error_profile.error_categories(store).set_index("category")
    assert counts.loc["sibling", "n"] == 0 and counts.loc["spurious", "n"] == 1
    # missed: a1 of instance 4 (b1 predicted), a11 of instance 3 (a2 predicted), b1 and a2 of instance 6 (empty);
    # a1 of instance 1 is missed too (only its parent a predicted); a1 of instance 2 is reached from a11
    missed = error_profile.missed_labels(store)
    assert sorted(zip(missed["instance_id"], missed["label"], strict=True)) == [
        ("1", "a1"), ("3", "a11"), ("4", "a1"), ("6", "a2"), ("6", "b1")]
    assert counts.loc["missed", "share"] == pytest.approx(5 / 7)  # of the 7 true labels


def test_sibling_and_stats_by_hand():
    store = _store(TREE, [["a1"], ["a1"], ["b1"]], [["a2"], ["a2", "a11"], ["b1"]])
    profile = error_profile.predicted_profile(store)
    assert list(profile["category"]) == ["sibling", "descendant", "sibling", "exact"]  # by instance, label
    stats = error_profile.distance_statistics(store).iloc[0]
    assert stats["n_labels"] == 4
    assert stats["mean_distance"] == pytest.approx((2 + 1 + 2 + 0) / 4)
    assert stats["median_distance"] == pytest.approx(1.5)
    assert stats["max_distance"] == 2
    # per predicted class: a2 (2, 2), a11 (1), b1 (0) -> mean of 2, 1, 0
    assert stats["macro_mean_distance"] == pytest.approx(1.0)
    hist = error_profile.distance_histogram(store)
    assert dict(zip(hist["value"], hist["n"], strict=True)) == {0: 1, 1: 1, 2: 2}
    lca = error_profile.distance_histogram(store, "lca_depth")
    assert dict(zip(lca["value"], lca["n"], strict=True)) == {1: 2, 2: 2}


# A DAG: m has two parents, x and y; x and y below r; z below y; w below x.
DAG = [("r", "x"), ("r", "y"), ("x", "m"), ("y", "m"), ("y", "z"), ("x", "w")]


def test_categories_on_a_dag_by_hand():
    # m vs z: they share the parent y -> sibling, d = 2; m vs w: shared parent x -> sibling;
    # z vs w: only the root in common -> cross_branch, d = 4; x vs m: x is a parent of m -> ancestor
    store = _store(DAG, [["z"], ["w"], ["w"], ["m"]], [["m"], ["m"], ["z"], ["x"]])
    profile = error_profile.predicted_profile(store).set_index("instance_id")
    assert list(profile["category"]) == ["sibling", "sibling", "cross_branch", "ancestor"]
    assert list(profile["distance"]) == [2, 2, 4, 1]
    assert list(profile["lca_depth"]) == [1, 1, 0, 1]


def test_path_consistency_by_hand():
    store = _store(TREE, [["a11"]] * 4, [["a11"], ["a1", "a11"], ["a", "a1", "a11"], []])
    per = error_profile.path_consistency_instance(store)
    assert list(per["n_missing_ancestors"]) == [2, 1, 0]  # a11 alone lacks a1 and a
    summary = error_profile.path_consistency(store).iloc[0]
    assert (summary["n_sets"], summary["n_inconsistent"]) == (3, 2)
    assert summary["inconsistency_rate"] == pytest.approx(2 / 3)


# ------------------------------------------------------------------------------------------------ GermEval B
@pytest.fixture(scope="module")
def germeval(data_dir):
    canonical = data_dir / "canonical"
    systems = {"NoTeam": "NoTeam__GRU_Attention_ensemble1", "baseline": "LT-UHH__baseline"}
    store = Store()
    store.load(canonical / "taxonomy.tsv", canonical / "truth_b.tsv",
               {name: canonical / "pred_b" / f"{stem}.tsv" for name, stem in systems.items()})
    parent = dict(pd.read_csv(canonical / "taxonomy.tsv", sep="\t", header=None, dtype=str)[[1, 0]]
                  .itertuples(index=False, name=None))

    def path(label):  # root-first list of the label's ancestors and itself (a tree)
        out = [label]
        while out[0] in parent:
            out.insert(0, parent[out[0]])
        return out

    def sets(file):
        frame = pd.read_csv(file, sep="\t", header=None, dtype=str, keep_default_na=False)
        out = defaultdict(set)
        for i, label in frame.itertuples(index=False, name=None):
            out[i].add(label)
        return out

    truth = sets(canonical / "truth_b.tsv")
    preds = {name: sets(canonical / "pred_b" / f"{stem}.tsv") for name, stem in systems.items()}
    yield store, path, truth, preds
    store.close()


def test_germeval_noteam_has_1482_inconsistent_sets_of_4144(germeval):
    store, path, _, preds = germeval
    summary = error_profile.path_consistency(store).set_index("system")
    assert summary.loc["NoTeam", "n_sets"] == 4144
    assert summary.loc["NoTeam", "n_inconsistent"] == 1482
    for name, pred in preds.items():  # independently: a set lacking an ancestor of one of its labels
        sets = [labels for labels in pred.values() if labels]
        bad = sum(any(not set(path(v)) <= labels for v in labels) for labels in sets)
        assert (summary.loc[name, "n_sets"], summary.loc[name, "n_inconsistent"]) == (len(sets), bad)


def _relation(u: list[str], v: list[str]) -> tuple[int, int, int]:
    """(category rank, distance, LCA depth) of predicted path v against true path u (tree, root-first)."""
    common = 0
    while common < min(len(u), len(v)) and u[common] == v[common]:
        common += 1
    distance = len(u) + len(v) - 2 * common
    if u == v:
        rank = 0
    elif common == len(v):
        rank = 1  # v on u's path: an ancestor
    elif common == len(u):
        rank = 2
    elif common == len(u) - 1 == len(v) - 1:
        rank = 3  # same parent (the virtual root counts: two top-level genres are siblings)
    elif common > 0:
        rank = 4
    else:
        rank = 5
    return rank, distance, common


def test_germeval_profile_against_an_independent_computation(germeval):
    store, path, truth, preds = germeval
    names = ["exact", "ancestor", "descendant", "sibling", "same_branch", "cross_branch"]
    counts = error_profile.error_categories(store).set_index(["system", "category"])["n"]
    stats = error_profile.distance_statistics(store).set_index("system")
    for name, pred in preds.items():
        found, distances, per_class = Counter(), [], defaultdict(list)
        for i, labels in pred.items():
            if not truth.get(i):
                found["spurious"] += len(labels)
                continue
            for v in labels:
                relations = [_relation(path(u), path(v)) for u in truth[i]]
                found[names[min(r[0] for r in relations)]] += 1
                d = min(r[1] for r in relations)
                distances.append(d)
                per_class[v].append(d)
        for category in [*names, "spurious"]:
            assert counts[(name, category)] == found[category], (name, category)
        assert stats.loc[name, "n_labels"] == len(distances)
        assert stats.loc[name, "mean_distance"] == pytest.approx(sum(distances) / len(distances))
        assert stats.loc[name, "median_distance"] == pytest.approx(pd.Series(distances).median())
        assert stats.loc[name, "max_distance"] == max(distances)
        assert stats.loc[name, "macro_mean_distance"] == pytest.approx(
            sum(sum(d) / len(d) for d in per_class.values()) / len(per_class))
        missed = sum(1 for i, labels in truth.items() for u in labels
                     if not any(u in path(v) for v in pred.get(i, ())))
        assert counts[(name, "missed")] == missed


# ------------------------------------------------------------------------------------------------ PostgreSQL
@pytest.mark.postgres
def test_the_new_sql_files_run_on_postgres(pg_dsn):
    """The queries of error_profile.sql, breakdowns.sql, curves.sql and calibration.sql, transpiled and run
    by a real PostgreSQL server on a DAG example with scores, give DuckDB's rows."""
    from hiersql.analyses import breakdowns
    from hiersql.engines import PostgresEngine

    store = _store(DAG, [["z"], ["w"], ["w", "z"], ["m"], []], [["m"], ["m", "x"], ["z"], ["x"], ["w"]])
    scores = pd.DataFrame({"instance_id": ["0", "0", "1", "2", "3", "3", "4"],
                           "label": ["m", "z", "w", "z", "x", "m", "w"],
                           "score": [0.9, 0.4, 0.7, 0.2, 0.6, 0.35, 0.5]})
    store.add_predictions("scored", scores)
    breakdowns.by_level(store)  # materialises set_pairs and set_pair_counts, which breakdowns.sql reads
    engine = PostgresEngine(pg_dsn)
    try:
        engine.copy_store(store)  # temporary tables of this session: no other test's tables are touched
        for table in ("set_pairs", "set_pair_counts"):  # the set-based queries breakdowns.sql reads
            engine.write(table, store.con.table(table).to_arrow_table())
        cases = [("error_profile", q, {}) for q in ("predicted_profile", "missed_labels", "error_categories",
                                                    "distance_statistics", "distance_histogram",
                                                    "path_consistency")]
        generated = breakdowns.queries()  # generated from the set-based measures, reading breakdowns.sql
        cases += [("breakdowns", q, {"zero_division": 0.0, "beta": 1.0})
                  for q in ("grouped_summary", "flat_level_summary")]
        cases += [("curves", "pr_area", {}), ("curves", "precision_at_recall", {"recall": 0.5}),
                  ("calibration", "calibration_summary", {"n_bins": 3, "eps": 2.0 ** -52}),
                  ("calibration", "reliability", {"n_bins": 3, "eps": 2.0 ** -52})]
        for file, query, params in cases:
            text = generated[query] if file == "breakdowns" else None
            mine = query_rows(store, file, query, params) if text is None else store.con.sql(
                sqlfiles.render(file, query, params, "duckdb", pretty=False, text=text)).fetchall()
            ours = sorted(mine, key=repr)
            theirs = sorted(engine.execute(sqlfiles.render(file, query, params, engine.dialect, engine.tables,
                                                           pretty=False, text=text)), key=repr)
            assert len(ours) == len(theirs), (file, query)
            for a, b in zip(ours, theirs, strict=True):
                for x, y in zip(a, b, strict=True):
                    if isinstance(x, float) or isinstance(y, float) or type(y).__name__ == "Decimal":
                        assert float(y) == float(x) or math.isnan(float(x)) and math.isnan(float(y)), (query, a, b)
                    else:
                        assert x == y, (file, query, a, b)
    finally:
        engine.close()


def test_the_pair_relations_are_a_table_before_a_query_that_reads_them():
    """The analyses make ``pair_relations`` a table first (``Engine.frame(stages=...)``; composed into the error
    categories of a million instances, it and the labels' profile held more than 4 GB at once), and only for a
    query that reads it: the rows are those of the query composed whole, and the missed labels make no pair."""
    from hiersql.engines import DuckDBEngine

    def temporary(store):
        return {name for (name,) in store.con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()}

    y_true, y_pred = [["a1"], ["a11"], ["b1", "a2"]], [["a"], ["a2"], ["b"]]
    staged, whole, missed = (_store(TREE, y_true, y_pred) for _ in range(3))
    rows = DuckDBEngine(staged).frame("error_profile", "error_categories", stages=error_profile.STAGES)
    assert {"pair_relations", "error_categories"} <= temporary(staged)
    composed = DuckDBEngine(whole).frame("error_profile", "error_categories")
    assert "pair_relations" not in temporary(whole)
    pd.testing.assert_frame_equal(rows.sort_values(["system", "category"]).reset_index(drop=True),
                                  composed.sort_values(["system", "category"]).reset_index(drop=True))
    error_profile.missed_labels(missed)
    assert "pair_relations" not in temporary(missed)
