"""The one-shot functions of the families with Python steps (LCA graphs, pairings) give exactly the values of
:class:`hiersql.Evaluator` on the same sets: the one-shot engine composes the stages no Python step reads into
the stages that read them, folds the options into the SQL and runs small calls on one DuckDB thread
(``hiersql/oneshot.py``); the Evaluator runs every stage as a table of the store. Equality is exact (``==``):
the means add in instance order on both paths.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

import hiersql
from hiersql import oneshot
from hiersql.errors import DataWarning, InputError
from hiersql.metrics import lca, pair_based
from tests._engine_cases import DAG_EDGES, DAG_PRED, DAG_TRUTH

LCA = {"lca_precision": hiersql.lca_precision, "lca_recall": hiersql.lca_recall, "lca_f1": hiersql.lca_f1}
PAIRS = {"graph_induced_error": hiersql.graph_induced_error, "all_pairs_error": hiersql.all_pairs_error}
OPTIONS = [{}, {"max_distance": 1}, {"include_root": True}]


def evaluator_values(taxonomy, y_true, y_pred, metrics, **options) -> dict[tuple[str, str], float]:
    ev = hiersql.Evaluator(taxonomy).add_truth(y_true).add_predictions("s", y_pred)
    return {(r.metric, r.average): r.value for r in ev.rows(metrics, **options)}


def check_equal(taxonomy, y_true, y_pred, lca_options, pair_options) -> None:
    want = evaluator_values(taxonomy, y_true, y_pred, list(LCA), average=["micro", "samples"], **lca_options)
    for metric, function in LCA.items():
        for average in ("micro", "samples"):
            assert function(y_true, y_pred, taxonomy, average, **lca_options) == want[(metric, average)], \
                (metric, average, lca_options)
    want = evaluator_values(taxonomy, y_true, y_pred, ["mgia", *PAIRS], average=["micro", "macro"],
                            **pair_options)
    for average in ("micro", "macro"):
        assert hiersql.mgia(y_true, y_pred, taxonomy, average, **pair_options) == want[("mgia", average)]
    for metric, function in PAIRS.items():
        assert function(y_true, y_pred, taxonomy, **pair_options) == want[(metric, "")], (metric, pair_options)


@pytest.mark.parametrize("graph", ["greedy", "extended", "optimal"])
@pytest.mark.parametrize("options", OPTIONS, ids=["defaults", "max_distance_1", "include_root"])
@pytest.mark.parametrize("system", sorted(DAG_PRED))
def test_dag_one_shot_equals_evaluator(system, options, graph):
    """Kosmopoulos et al. Fig. 8(b), a DAG whose instances meet on several shortest paths (the minimal graphs
    choose among them)."""
    taxonomy = hiersql.Taxonomy.from_edges(DAG_EDGES)
    pair_options = {k: v for k, v in options.items() if k != "include_root"}
    check_equal(taxonomy, DAG_TRUTH, DAG_PRED[system], {**options, "lca_graph": graph}, pair_options)


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
        [pred.get(i, []) for i in ids]


@pytest.mark.parametrize("options", [{}, {"max_distance": 2}], ids=["defaults", "max_distance_2"])
def test_germeval_one_shot_equals_evaluator(germeval_1000, options):
    taxonomy, y_true, y_pred = germeval_1000
    check_equal(taxonomy, y_true, y_pred, options, options)
    # called again with the same taxonomy object (its tables and the folded stages kept): the same values
    check_equal(taxonomy, y_true, y_pred, options, options)


def test_only_the_stages_a_python_step_or_the_summary_reads_are_tables():
    """A stage read by one later stage only is composed into it: the pairings' distances into the arcs, the
    LCA pairs and meetings into the options."""
    assert oneshot._read_once(pair_based.PLAN) == {"label_pairs", "pair_distances_of"}
    assert {"lca_pairs", "lca_pair_meetings", "lca_meetings"} <= oneshot._read_once(lca.PLAN)
    kept = {name for step in lca.PLAN.steps if isinstance(step, lca.Python) for name in step.reads}
    assert not kept & oneshot._read_once(lca.PLAN)


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
    with pytest.raises(InputError, match="y_pred:2: label not in the taxonomy: 'zebra'"):
        hiersql.hierarchical_f1([["a"], ["b"]], [["a"], ["b", "zebra"]], taxonomy)
    with pytest.raises(InputError, match=r"y_true:2: missing label \(empty, None or NaN\)"):
        hiersql.hierarchical_f1([["a"], ["b", None]], [["a"], ["zebra"]], taxonomy)
    with pytest.raises(InputError, match="y_true:1: label is the virtual root"):
        hiersql.hierarchical_f1([["a", "__root__"]], [["a"]], hiersql.Taxonomy.from_edges([("a", "x"), ("b", "y")]))
