"""The one-shot functions of the families with Python steps (LCA graphs, pairings) give exactly the values of
:class:`hiersql.Evaluator` on the same sets: the one-shot engine composes the stages no Python step reads into
the stages that read them, folds the options into the SQL and runs small calls on one DuckDB thread without
join reordering (``hiersql/engines/oneshot.py``); the Evaluator runs every stage as a table of the store. Equality is
exact (``==``): the means add in instance order on both paths.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

import hiersql
from hiersql.engines import oneshot
from hiersql.errors import DataWarning, InputError
from hiersql.measures import lca, pair_based
from hiersql.plan import Python
from tests._engine_cases import DAG_EDGES, DAG_PRED, DAG_TRUTH

LCA = {"lca_precision": hiersql.lca_precision, "lca_f1": hiersql.lca_f1}
PAIRS = {"graph_induced_error": hiersql.graph_induced_error, "all_pairs_error": hiersql.all_pairs_error}


def evaluator_values(taxonomy, y_true, y_preds, metrics, **options) -> dict[tuple[str, str, str], float]:
    ev = hiersql.Evaluator(taxonomy).add_truth(y_true)
    for system, y_pred in y_preds.items():
        ev.add_predictions(system, y_pred)
    return {(r.system, r.metric, r.average): r.value for r in ev.rows(metrics, **options)}


def check_lca(taxonomy, y_true, y_preds, **options) -> None:
    """lca_f1 (micro, samples) and lca_precision (micro) of every system of ``y_preds`` equal the Evaluator's."""
    want = evaluator_values(taxonomy, y_true, y_preds, ["lca_f1", "lca_precision"], average=["micro", "samples"],
                            **options)
    for (system, metric, average), value in want.items():
        if (metric, average) != ("lca_precision", "samples"):
            assert LCA[metric](y_true, y_preds[system], taxonomy, average, **options) == value, \
                (system, metric, average, options)
    assert len(want) == 4 * len(y_preds)


def check_pairs(taxonomy, y_true, y_preds, **options) -> None:
    """MGIA (micro, macro), GIE and the all-pairs error of every system of ``y_preds`` equal the Evaluator's."""
    want = evaluator_values(taxonomy, y_true, y_preds, ["mgia", *PAIRS], average=["micro", "macro"], **options)
    for (system, metric, average), value in want.items():
        got = hiersql.mgia(y_true, y_preds[system], taxonomy, average, **options) if metric == "mgia" else \
            PAIRS[metric](y_true, y_preds[system], taxonomy, **options)
        assert got == value, (system, metric, average, options)
    assert len(want) == 4 * len(y_preds)


CASES = [("greedy", {}), ("greedy", {"max_distance": 1}), ("greedy", {"include_root": True}), ("extended", {}),
         ("optimal", {})]


@pytest.mark.parametrize(("graph", "options"), CASES, ids=[f"{g}-{'-'.join(o) or 'defaults'}" for g, o in CASES])
def test_dag_one_shot_equals_evaluator(graph, options):
    """Kosmopoulos et al. Fig. 8(b), a DAG whose instances meet on several shortest paths (the minimal graphs
    choose among them)."""
    taxonomy = hiersql.Taxonomy.from_edges(DAG_EDGES)
    check_lca(taxonomy, DAG_TRUTH, DAG_PRED, lca_graph=graph, **options)
    if graph == "greedy" and "include_root" not in options:
        check_pairs(taxonomy, DAG_TRUTH, DAG_PRED, **options)


@pytest.fixture(scope="module")
def germeval_1000(data_dir):
    """The first 1,000 instances of GermEval 2019 subtask B and NoTeam's predictions (benchmarks/bench_oneshot)."""
    canonical = data_dir / "canonical"

    def sets(path):
        out = defaultdict(list)
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                instance, label = line.split("\t")[:2]
                out[instance].append(label)
        return out

    truth = sets(canonical / "truth_b.tsv")
    pred = sets(canonical / "pred_b" / "NoTeam__GRU_Attention_ensemble1.tsv")
    ids = sorted(truth)[:1000]
    return hiersql.Taxonomy.from_file(canonical / "taxonomy.tsv"), [truth[i] for i in ids], \
        {"NoTeam": [pred.get(i, []) for i in ids]}


@pytest.mark.parametrize("options", [{}, {"max_distance": 2}], ids=["defaults", "max_distance_2"])
def test_germeval_one_shot_equals_evaluator(germeval_1000, options):
    taxonomy, y_true, y_preds = germeval_1000
    for _ in range(2):  # again with the same taxonomy object (its tables and the folded stages kept)
        check_lca(taxonomy, y_true, y_preds, **options)
        check_pairs(taxonomy, y_true, y_preds, **options)


def test_a_stage_read_by_one_stage_only_is_composed_into_it():
    """The pairs' distances are composed into the arcs, the distinct pairs' distances into the pairs'
    distances (the label pairs, which both read, stay a table); the LCA pairs into their meetings, the pair
    meetings into the meetings and those into the options (which name them twice); every table a Python step
    or the summary reads, or that two stages read, stays a table, also when a stage reads it through a query
    composed into it (the LCA path nodes: lca_open_nodes names them, lca_graph_counts reads them through
    lca_extended_nodes)."""
    assert oneshot._read_by_one(pair_based.PLAN) == {"pair_distances_of", "pair_label_distances"}
    composed = oneshot._read_by_one(lca.PLAN)
    assert composed == {"lca_pairs", "lca_pair_meetings", "lca_meetings", "lca_open_ends"}
    read = {name for step in lca.PLAN.steps if isinstance(step, Python) for name in (*step.reads, *step.writes)}
    assert not composed & (read | {lca.PLAN.instance})


def test_label_checks_name_the_first_bad_label_and_the_caller():
    """The labels are checked once per distinct label, and label by label when one is not a plain node name:
    the same errors, conversions and warnings either way."""
    taxonomy = hiersql.Taxonomy.from_edges([("r", "a"), ("r", "b"), ("a", "1")])
    with pytest.warns(DataWarning, match=r"y_true: 1 duplicate \(instance_id, label\) row\(s\) collapsed") as seen:
        assert hiersql.hierarchical_f1([["a", "a"], ["b"]], [["a"], "b"], taxonomy) == 1.0
    assert seen[0].filename == __file__
    with pytest.warns(DataWarning, match=r"y_pred: 1 duplicate") as seen:  # an int label is its string
        assert hiersql.hierarchical_f1([iter([1])], [iter(["1", 1])], taxonomy) == 1.0
    assert seen[0].filename == __file__
    with pytest.raises(InputError, match="y_pred\\[1\\]: label not in the taxonomy: 'zebra'"):
        hiersql.hierarchical_f1([["a"], ["b"]], [["a"], ["b", "zebra"]], taxonomy)
    with pytest.raises(InputError, match=r"y_true\[1\]: missing label \(empty, None or NaN\)"):
        hiersql.hierarchical_f1([["a"], ["b", None]], [["a"], ["zebra"]], taxonomy)
    with pytest.raises(InputError, match="y_true\\[0\\]: label is the virtual root"):
        hiersql.hierarchical_f1([["a", "__root__"]], [["a"]], hiersql.Taxonomy.from_edges([("a", "x"), ("b", "y")]))
    # a missing set (a gap in a column of label sets) is an error, not an empty set; a number is one label
    import numpy as np
    import pandas as pd

    for gap in (None, float("nan"), np.nan, pd.NA):
        with pytest.raises(InputError, match=r"y_pred\[1\]: missing label set \(None or NaN; an instance with no label"
                                             r" is an empty list\)"):
            hiersql.hierarchical_f1([["a"], ["b"]], pd.Series(["a", gap], dtype=object), taxonomy)
    with pytest.raises(InputError, match="y_pred\\[1\\]: missing label set"):
        hiersql.hierarchical_f1([["a"], ["b"]], pd.Series(["a", None], dtype="string"), taxonomy)
    assert hiersql.hierarchical_f1([["a"], ["1"]], ["a", 1], taxonomy) == 1.0


def test_small_calls_run_on_one_thread_without_join_reordering():
    """Below SMALL_CALL instances: one DuckDB thread, joins in the order written, no statistics nor compressed
    keys; a larger call gets DuckDB's defaults back (its threads, every optimizer), and a small one sets them
    again."""
    import duckdb

    def settings(con=None):
        return (con or oneshot.connection()).execute(
            "SELECT current_setting('threads'), current_setting('disabled_optimizers')").fetchall()[0]

    taxonomy = hiersql.Taxonomy.from_edges([("r", "a"), ("r", "b")])
    hiersql.hierarchical_f1([["a"]], [["b"]], taxonomy)
    assert settings() == (1, "join_order,statistics_propagation,compressed_materialization")
    oneshot._small_call(oneshot.SMALL_CALL)
    assert settings() == settings(duckdb.connect())  # DuckDB's defaults
    assert hiersql.hierarchical_f1([["a"]], [["a"]], taxonomy) == 1.0
    assert settings() == (1, "join_order,statistics_propagation,compressed_materialization")


def test_a_stage_of_the_taxonomy_alone_is_made_once_in_its_schema():
    """The LCA closure on node positions reads only the taxonomy's tables: the first call with a taxonomy
    object makes it a table of that taxonomy's schema, later calls read it there (the same values); a
    taxonomy given as edges has a schema for one call, dropped with what was made there."""
    assert oneshot._reads_taxonomy_only("SELECT ancestor, descendant, distance FROM node_closure")
    assert not oneshot._reads_taxonomy_only("SELECT n.position FROM truth AS t JOIN nodes AS n ON n.label = t.label")
    assert not oneshot._reads_taxonomy_only("WITH nodes AS (SELECT label FROM truth) SELECT label FROM nodes")
    taxonomy = hiersql.Taxonomy.from_edges(DAG_EDGES)
    y_true, y_pred = DAG_TRUTH, DAG_PRED["fig8b"]
    first = hiersql.lca_f1(y_true, y_pred, taxonomy)
    schema = oneshot._schemas[id(taxonomy)][1]
    made = oneshot.connection().execute(
        "SELECT table_name FROM duckdb_tables() WHERE schema_name = $s AND table_name = 'lca_closure'",
        {"s": schema}).fetchall()
    assert made == [("lca_closure",)] and (schema, "lca_closure") in oneshot._TAXONOMY_STAGES
    assert hiersql.lca_f1(y_true, y_pred, taxonomy) == first == hiersql.lca_f1(y_true, y_pred, DAG_EDGES)
    assert {key[0] for key in oneshot._TAXONOMY_STAGES} <= {name for _, name in oneshot._schemas.values()}
