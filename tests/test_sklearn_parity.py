"""scikit-learn parity of the one-shot functions and Evaluator (issue 19 item 4; docs/sklearn.md).

The hierarchical set measures are scikit-learn's ``precision_recall_fscore_support`` on the ancestor-augmented
label sets (MultiLabelBinarizer): micro = micro, samples = samples, label_macro = macro, weighted = weighted,
None = None, with ``sample_weight``, ``labels`` and ``zero_division`` alike. The augmented sets are built here
with networkx, independently of hiersql's closure; the flat measures are compared on the sets as given.
"""

from __future__ import annotations

import gc
import math
import threading
import warnings
from collections import defaultdict

import networkx as nx
import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import UndefinedMetricWarning as SkUndefinedMetricWarning
from sklearn.metrics import accuracy_score, jaccard_score
from sklearn.metrics import hamming_loss as sk_hamming_loss
from sklearn.metrics import precision_recall_fscore_support as prfs
from sklearn.preprocessing import MultiLabelBinarizer

import hiersql
from hiersql.averages import UndefinedMetricWarning
from hiersql.engines import oneshot
from hiersql.errors import InputError
from hiersql.options import OptionError

EDGES = [("r", "a"), ("r", "b"), ("a", "a1"), ("a", "a2"), ("b", "b1"), ("b", "b2"), ("a1", "x")]
# instance 2 predicts nothing (precision 0/0), instance 5 has an empty truth (recall 0/0)
Y_TRUE = [["a1"], ["b1"], ["a2"], ["b"], ["x", "b2"], []]
Y_PRED = [["a2"], ["b1"], [], ["a1", "b1"], ["x"], ["b"]]
WEIGHTS = [1.0, 2.0, 0.5, 3.0, 1.5, 0.25]
SK = {"micro": "micro", "samples": "samples", "label_macro": "macro", "weighted": "weighted", None: None}
FUNCTIONS = {"precision": hiersql.hierarchical_precision, "recall": hiersql.hierarchical_recall,
             "f1": hiersql.hierarchical_f1}


@pytest.fixture(scope="module")
def tax():
    return hiersql.Taxonomy.from_edges(EDGES)


def augmented(sets, graph: nx.DiGraph, root: str = "r"):
    return [sorted(set().union(*[{u} | nx.ancestors(graph, u) for u in labels]) - {root}) if labels else []
            for labels in sets]


def binarized(y_true, y_pred, classes=None):
    mlb = MultiLabelBinarizer(classes=classes).fit(y_true + y_pred) if classes is None else \
        MultiLabelBinarizer(classes=classes).fit([classes])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # labels outside ``classes`` are left out, as wanted
        return mlb.transform(y_true), mlb.transform(y_pred), list(mlb.classes_)


def sklearn_value(measure, y_true, y_pred, average, graph=None, **kwargs):
    """scikit-learn's value on the augmented sets (or the sets as given without ``graph``)."""
    if graph is not None:
        y_true, y_pred = augmented(y_true, graph), augmented(y_pred, graph)
    true, pred, classes = binarized(y_true, y_pred)
    index = {"precision": 0, "recall": 1, "f1": 2}[measure]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SkUndefinedMetricWarning)
        value = prfs(true, pred, average=SK.get(average, average), **kwargs)[index]
    return pd.Series(value, index=classes) if average is None else value


GRAPH = nx.DiGraph(EDGES)


# ---------------------------------------------------------------------------------------------- by hand
def test_hand_values(tax):
    # augmented (root left out): true {a,a1} {b,b1} {a,a2} {b} {a,a1,x,b,b2} {}; predicted {a,a2} {b,b1} {}
    # {a,a1,b,b1} {a,a1,x} {b}; |both| 1,2,0,1,3,0, |true| 2,2,2,1,5,0, |pred| 2,2,0,4,3,1 -> 7 / 12 both
    assert hiersql.hierarchical_precision(Y_TRUE, Y_PRED, tax) == pytest.approx(7 / 12)
    assert hiersql.hierarchical_recall(Y_TRUE, Y_PRED, tax) == pytest.approx(7 / 12)
    assert hiersql.hierarchical_recall(Y_TRUE, Y_PRED, tax, "samples", zero_division=1) == pytest.approx(
        (1 / 2 + 1 + 0 + 1 + 3 / 5 + 1) / 6)
    # samples hP: 1/2, 1, 0 (0/0), 1/4, 1, 0 -> 2.75 / 6; weighted by WEIGHTS
    assert hiersql.hierarchical_precision(Y_TRUE, Y_PRED, tax, "samples") == pytest.approx(2.75 / 6)
    weighted = (0.5 * 1 + 1 * 2 + 0 * 0.5 + 0.25 * 3 + 1 * 1.5 + 0 * 0.25) / sum(WEIGHTS)
    assert hiersql.hierarchical_precision(Y_TRUE, Y_PRED, tax, "samples", sample_weight=WEIGHTS) == \
        pytest.approx(weighted)
    # micro with weights: Σ w·|both| / Σ w·|Ŷaug|
    both, pred = [1, 2, 0, 1, 3, 0], [2, 2, 0, 4, 3, 1]
    assert hiersql.hierarchical_precision(Y_TRUE, Y_PRED, tax, sample_weight=WEIGHTS) == pytest.approx(
        np.dot(WEIGHTS, both) / np.dot(WEIGHTS, pred))
    # class a2: predicted in instance 0, true in 2 -> P = 0; class b: TP 2 (1, 3), FP 1 (5), FN 1 (4)
    per_class = hiersql.hierarchical_precision(Y_TRUE, Y_PRED, tax, None)
    assert per_class["a2"] == 0 and per_class["b"] == pytest.approx(2 / 3)


def test_macro_is_the_documented_alias_of_samples(tax):
    for function in FUNCTIONS.values():
        assert function(Y_TRUE, Y_PRED, tax, "macro") == function(Y_TRUE, Y_PRED, tax, "samples")
    assert hiersql.lca_f1(Y_TRUE, Y_PRED, tax, "macro") == hiersql.lca_f1(Y_TRUE, Y_PRED, tax, "samples")
    assert hiersql.mgia(Y_TRUE, Y_PRED, tax, "macro") == hiersql.mgia(Y_TRUE, Y_PRED, tax, "samples")


# ------------------------------------------------------------------------------------ against scikit-learn
@pytest.mark.parametrize("average", list(SK))
@pytest.mark.parametrize("measure", list(FUNCTIONS))
@pytest.mark.parametrize("weights", [None, WEIGHTS], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("zero_division", [0, 1])
def test_hierarchical_measures_equal_sklearn_on_augmented_sets(tax, average, measure, weights, zero_division):
    got = FUNCTIONS[measure](Y_TRUE, Y_PRED, tax, average, sample_weight=weights, zero_division=zero_division)
    want = sklearn_value(measure, Y_TRUE, Y_PRED, average, GRAPH, sample_weight=weights,
                         zero_division=zero_division)
    if average is None:
        pd.testing.assert_series_equal(got, want, check_names=False, check_index_type=False)
    else:
        assert got == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("average", ["micro", "samples", "label_macro", "weighted"])
@pytest.mark.parametrize("beta", [2.0, 0.0])  # beta 0 is precision (instance 2 predicts nothing: 0/0)
@pytest.mark.parametrize("zero_division", [0, 1, math.nan])
def test_f_beta_equals_sklearn(tax, average, beta, zero_division):
    true, pred, _ = binarized(augmented(Y_TRUE, GRAPH), augmented(Y_PRED, GRAPH))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SkUndefinedMetricWarning)
        want = prfs(true, pred, beta=beta, average=SK[average], zero_division=zero_division)[2]
    got = hiersql.hierarchical_f1(Y_TRUE, Y_PRED, tax, average, beta=beta, zero_division=zero_division)
    assert got == pytest.approx(want, abs=1e-12)
    if beta == 0:
        assert got == hiersql.hierarchical_precision(Y_TRUE, Y_PRED, tax, average, zero_division=zero_division)


@pytest.mark.parametrize("average", ["label_macro", "weighted", None])
def test_labels_restrict_the_classes_as_sklearn(tax, average):
    labels = ["b", "a1", "x", "b2", "a2"]  # x never in both sets; b2 never predicted
    true, pred, classes = binarized(augmented(Y_TRUE, GRAPH), augmented(Y_PRED, GRAPH))
    want = prfs(true, pred, labels=[classes.index(label) for label in labels], average=SK[average],
                zero_division=0, sample_weight=WEIGHTS)[2]
    got = hiersql.hierarchical_f1(Y_TRUE, Y_PRED, tax, average, labels=labels, sample_weight=WEIGHTS)
    if average is None:
        assert list(got.index) == labels
        assert got.to_numpy() == pytest.approx(want, abs=1e-12)
    else:
        assert got == pytest.approx(want, abs=1e-12)


def test_labels_errors(tax):
    for average in ("micro", "samples", "macro"):  # over the whole augmented sets: labels would be ignored
        said = f"labels restricts only the per-class averages .*, not the average: '{average}'"
        with pytest.raises(OptionError, match=said):
            hiersql.hierarchical_f1(Y_TRUE, Y_PRED, tax, average, labels=["a"])
    with pytest.raises(InputError, match="labels holds a label not in the taxonomy: 'zebra'"):
        hiersql.hierarchical_f1(Y_TRUE, Y_PRED, tax, "weighted", labels=["a", "zebra"])
    with pytest.raises(OptionError, match="labels has no meaning for lca_f1"):
        hiersql.lca_f1(Y_TRUE, Y_PRED, tax, labels=["a"])


def test_zero_division_nan_leaves_undefined_units_out_as_sklearn(tax):
    for average in ("samples", "label_macro", "weighted"):
        got = hiersql.hierarchical_precision(Y_TRUE, Y_PRED, tax, average, zero_division=np.nan)
        want = sklearn_value("precision", Y_TRUE, Y_PRED, average, GRAPH, zero_division=np.nan)
        assert got == pytest.approx(want, abs=1e-12)
    # samples: the instance that predicted nothing is left out: (1/2 + 1 + 1/4 + 1 + 0) / 5
    assert hiersql.hierarchical_precision(Y_TRUE, Y_PRED, tax, "samples", zero_division=math.nan) == \
        pytest.approx(2.75 / 5)
    assert math.isnan(hiersql.hierarchical_precision([["a"]], [[]], tax, "micro", zero_division=math.nan))


@pytest.mark.parametrize("measure", list(FUNCTIONS))
@pytest.mark.parametrize("zero_division", [0, 1, math.nan])
def test_instances_of_weight_0_never_decide_the_mean_as_sklearn(tax, measure, zero_division):
    """Weights 1 on the instances that predicted nothing (Y_PRED[2]: precision 0/0) and 0 elsewhere: with
    zero_division nan no instance of weight > 0 has a precision, so the samples mean is NaN, as scikit-learn's
    (which zeroes the counts of weight-0 instances); it was the plain mean of the weight-0 instances' values."""
    weights = [0, 0, 1, 0, 0, 0]
    for average in ("micro", "samples", "label_macro", "weighted"):
        got = FUNCTIONS[measure](Y_TRUE, Y_PRED, tax, average, sample_weight=weights, zero_division=zero_division)
        want = sklearn_value(measure, Y_TRUE, Y_PRED, average, GRAPH, sample_weight=weights,
                             zero_division=zero_division)
        assert got == pytest.approx(want, abs=1e-12, nan_ok=True), average
    if measure == "precision":
        assert math.isnan(hiersql.hierarchical_precision(Y_TRUE, Y_PRED, tax, "samples", sample_weight=weights,
                                                         zero_division=math.nan))


def test_sample_weights_all_zero_are_refused_as_sklearn(tax):
    with pytest.raises(ValueError, match="at least one non-zero"):
        prfs(*binarized(augmented(Y_TRUE, GRAPH), augmented(Y_PRED, GRAPH))[:2], average="samples",
             sample_weight=[0] * 6)
    for function in (hiersql.hierarchical_f1, hiersql.lca_f1, hiersql.mgia, hiersql.graph_induced_error):
        with pytest.raises(OptionError, match=r"sample_weight must hold at least one weight > 0: '6 zeros'"):
            function(Y_TRUE, Y_PRED, tax, sample_weight=[0] * 6)


def test_zero_division_warn_is_zero_with_a_warning_as_sklearn(tax):
    true, pred, _ = binarized(augmented(Y_TRUE, GRAPH), augmented(Y_PRED, GRAPH))
    with pytest.warns(SkUndefinedMetricWarning):
        want = prfs(true, pred, average="samples", zero_division="warn")[0]
    with pytest.warns(UndefinedMetricWarning,
                      match="hierarchical_precision is ill-defined and being set to 0.0 in 1 of 6 instances "):
        got = hiersql.hierarchical_precision(Y_TRUE, Y_PRED, tax, "samples", zero_division="warn")
    assert got == pytest.approx(want) == hiersql.hierarchical_precision(Y_TRUE, Y_PRED, tax, "samples")
    # per class: a2 ... every class is true or predicted somewhere here; a class never predicted has P = 0/0
    with pytest.warns(UndefinedMetricWarning, match="in 1 of 7 classes "):
        per_class = hiersql.hierarchical_precision(Y_TRUE, Y_PRED, tax, None, zero_division="warn")
    assert per_class["b2"] == 0
    with pytest.warns(UndefinedMetricWarning, match="the pooled counts"):
        assert hiersql.hierarchical_precision([["a"]], [[]], tax, zero_division="warn") == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # all defined: no warning
        assert hiersql.hierarchical_recall(Y_TRUE[:5], Y_PRED[:5], tax, "samples", zero_division="warn") > 0
        assert hiersql.hierarchical_f1(Y_TRUE, Y_PRED, tax, "samples", zero_division="warn") > 0


# --------------------------------------------------------------------------------------------- flat
FLAT = {"precision": hiersql.label_precision, "recall": hiersql.label_recall, "f1": hiersql.label_f1}
AS_GIVEN = [[label for label in labels] for labels in Y_TRUE], [[label for label in labels] for labels in Y_PRED]


@pytest.mark.parametrize("average", ["micro", "macro", "label_macro", "weighted", "samples", None])
@pytest.mark.parametrize("measure", list(FLAT))
@pytest.mark.parametrize("weights", [None, WEIGHTS], ids=["unweighted", "weighted"])
def test_flat_label_measures_equal_sklearn(average, measure, weights):
    got = FLAT[measure](*AS_GIVEN, average=average, sample_weight=weights)
    want = sklearn_value(measure, *AS_GIVEN, average, sample_weight=weights, zero_division=0)
    if average is None:
        assert got.to_numpy() == pytest.approx(want.to_numpy(), abs=1e-12)
        assert list(got.index) == list(want.index)
    else:
        assert got == pytest.approx(want, abs=1e-12)


def test_flat_example_measures_equal_sklearn():
    true, pred, _ = binarized(*AS_GIVEN)
    for weights in (None, WEIGHTS):
        assert hiersql.subset_accuracy(*AS_GIVEN, sample_weight=weights) == pytest.approx(
            accuracy_score(true, pred, sample_weight=weights))
        assert hiersql.hamming_loss(*AS_GIVEN, sample_weight=weights) == pytest.approx(
            sk_hamming_loss(true, pred, sample_weight=weights))
        assert hiersql.example_accuracy(*AS_GIVEN, sample_weight=weights, zero_division=1) == pytest.approx(
            jaccard_score(true, pred, average="samples", sample_weight=weights, zero_division=1))
        for measure, function in (("precision", hiersql.example_precision), ("recall", hiersql.example_recall),
                                  ("f1", hiersql.example_f1)):
            assert function(*AS_GIVEN, sample_weight=weights) == pytest.approx(
                sklearn_value(measure, *AS_GIVEN, "samples", sample_weight=weights, zero_division=0))


def test_flat_functions_take_a_taxonomy_only_to_check_the_labels(tax):
    assert hiersql.example_f1(*AS_GIVEN, tax) == hiersql.example_f1(*AS_GIVEN)
    assert hiersql.label_f1(*AS_GIVEN, tax, average="macro") == hiersql.label_f1(*AS_GIVEN, average="macro")
    with pytest.raises(InputError, match="y_pred\\[0\\]: label not in the taxonomy: 'zebra'"):
        hiersql.hamming_loss([["a"]], [["zebra"]], tax)


def test_flat_zero_division_warn():
    with pytest.warns(UndefinedMetricWarning, match="example_precision"):
        assert hiersql.example_precision([["a"], ["b"]], [["a"], []], zero_division="warn") == 0.5
    with pytest.warns(UndefinedMetricWarning, match="label_precision"):
        hiersql.label_precision([["a"], ["b"]], [["a"], []], average="macro", zero_division="warn")


# ------------------------------------------------------------------------------- weights of other families
@pytest.mark.parametrize("call", [
    lambda t, p, tax, **kw: hiersql.lca_f1(t, p, tax, "micro", **kw),
    lambda t, p, tax, **kw: hiersql.lca_precision(t, p, tax, "samples", **kw),
    lambda t, p, tax, **kw: hiersql.graph_induced_error(t, p, tax, **kw),
    lambda t, p, tax, **kw: hiersql.mgia(t, p, tax, "micro", **kw),
    lambda t, p, tax, **kw: hiersql.all_pairs_error(t, p, tax, **kw),
    lambda t, p, tax, **kw: hiersql.symmetric_difference_loss(t, p, tax, **kw),
    lambda t, p, tax, **kw: hiersql.hierarchical_f1(t, p, tax, "label_macro", **kw),
], ids=["lca_f1 micro", "lca_p samples", "gie", "mgia micro", "all_pairs", "sdl", "hf label_macro"])
def test_integer_weights_equal_repeated_instances(tax, call):
    counts = [1, 3, 0, 2, 1, 2]
    repeated_true = [labels for labels, k in zip(Y_TRUE, counts, strict=True) for _ in range(k)]
    repeated_pred = [labels for labels, k in zip(Y_PRED, counts, strict=True) for _ in range(k)]
    assert call(Y_TRUE, Y_PRED, tax, sample_weight=counts) == pytest.approx(call(repeated_true, repeated_pred, tax),
                                                                           abs=1e-12)
    assert call(Y_TRUE, Y_PRED, tax, sample_weight=[1] * 6) == pytest.approx(call(Y_TRUE, Y_PRED, tax), abs=1e-12)


# ---------------------------------------------------------------------------------------------- errors
def test_an_average_a_measure_lacks_is_an_error(tax):
    with pytest.raises(OptionError, match="average of lca_f1 must be one of 'micro', 'macro', 'samples': 'weighted'"):
        hiersql.lca_f1(Y_TRUE, Y_PRED, tax, "weighted")
    with pytest.raises(OptionError, match="average of label_accuracy must be one of .*: 'samples'"):
        hiersql.label_accuracy(*AS_GIVEN, average="samples")
    with pytest.raises(OptionError, match="average of mgia must be one of .*: 'None'"):
        hiersql.mgia(Y_TRUE, Y_PRED, tax, None)
    with pytest.raises(OptionError, match="average of pl must be one of 'micro', 'macro': 'samples'"):
        hiersql.path_length_score(["a1"], ["a2"], tax, "samples")
    # the plain means take average "" alone, as a parameter of their own (it collided with score's)
    for measure in (hiersql.graph_induced_error, hiersql.tree_induced_error, hiersql.all_pairs_error,
                    hiersql.symmetric_difference_loss):
        with pytest.raises(OptionError, match=f"average of {measure.__name__} must be one of none .*: 'micro'"):
            measure(["a1"], ["a2"], tax, average="micro")
        assert measure(["a1"], ["a2"], tax, average="") == measure(["a1"], ["a2"], tax)


@pytest.mark.parametrize(("weights", "message"), [
    ([1, 2], "sample_weight must have one weight per instance (6): '2 weights'"),
    ([1, 1, 1, -1, 1, 1], "sample_weight must hold finite numbers >= 0: -1"),
    ([1, 1, 1, math.nan, 1, 1], "sample_weight must hold finite numbers >= 0: nan"),
    ("heavy", "sample_weight must be a sequence of numbers, one per instance: 'heavy'"),
])
def test_bad_sample_weight(tax, weights, message):
    with pytest.raises(OptionError) as caught:
        hiersql.hierarchical_f1(Y_TRUE, Y_PRED, tax, sample_weight=weights)
    assert str(caught.value) == message


def test_bad_zero_division(tax):
    with pytest.raises(OptionError, match="zero_division must be \"warn\", 0, 1 or nan: 'always'"):
        hiersql.hierarchical_f1(Y_TRUE, Y_PRED, tax, zero_division="always")


# -------------------------------------------------------------------------------------------- Evaluator
def test_evaluator_averages_equal_the_one_shot_functions(tax):
    ev = hiersql.Evaluator(tax).add_truth(Y_TRUE).add_predictions("s", Y_PRED)
    averages = ["micro", "macro", "samples", "weighted", "label_macro"]
    frame = ev.evaluate(["hp", "hr", "hf"], average=averages).set_index(["metric", "average"])["value"]
    # one string names the measures as a list does (it was read letter by letter)
    pd.testing.assert_frame_equal(ev.evaluate("hp,hr,hf", average=averages), ev.evaluate(["hp", "hr", "hf"],
                                                                                         average=averages))
    assert ev.rows("hp") == ev.rows(["hp"])
    for name, function in FUNCTIONS.items():
        for average in averages:
            assert frame[(f"hierarchical_{name}", average)] == function(Y_TRUE, Y_PRED, tax, average)
    per_class = ev.per_class("hf").set_index("label")["value"]
    pd.testing.assert_series_equal(per_class, hiersql.hierarchical_f1(Y_TRUE, Y_PRED, tax, None), check_names=False)
    fixed = ev.evaluate(["hf"], average=["label_macro", "weighted"], labels=["b", "x"]).set_index("average")["value"]
    assert fixed["weighted"] == hiersql.hierarchical_f1(Y_TRUE, Y_PRED, tax, "weighted", labels=["b", "x"])
    # under "all", labels reach the flat universe and the per-class averages; micro stays over the whole sets
    every = ev.evaluate(["all"], average=["micro"], labels=["b", "x"]).set_index(["metric", "average"])["value"]
    assert every[("hierarchical_f1", "micro")] == hiersql.hierarchical_f1(Y_TRUE, Y_PRED, tax)
    with pytest.raises(OptionError, match="average of lca_f1 must be one of .*: 'weighted'"):
        ev.evaluate(["hf", "lca_f1"], average=["weighted"])
    with pytest.raises(OptionError, match="labels restricts"):
        ev.evaluate(["hf"], labels=["a"])  # the default averages micro, macro are over the whole sets
    with pytest.warns(UndefinedMetricWarning, match="hierarchical_precision \\(samples\\) of system 's'"):
        ev.evaluate(["hp"], average=["samples"], zero_division="warn")


# ------------------------------------------------------------------------ the process-wide connection
def test_a_taxonomy_object_keeps_its_tables_and_other_forms_leave_none(tax):
    def schemas():
        return {r[0] for r in oneshot.connection().execute(
            "SELECT schema_name FROM duckdb_schemas() WHERE schema_name LIKE 'taxonomy_%'").fetchall()}

    hiersql.hierarchical_f1(Y_TRUE, Y_PRED, tax)
    before = schemas()
    hiersql.hierarchical_f1(Y_TRUE, Y_PRED, tax)
    hiersql.hierarchical_f1(Y_TRUE, Y_PRED, EDGES)  # edges: a taxonomy built for the call, then dropped
    assert schemas() == before
    other = hiersql.Taxonomy.from_edges(EDGES)
    hiersql.hierarchical_f1(Y_TRUE, Y_PRED, other)
    assert len(schemas()) == len(before) + 1
    del other
    gc.collect()
    hiersql.hierarchical_f1(Y_TRUE, Y_PRED, tax)  # the schema of a collected taxonomy is dropped
    assert schemas() == before


def test_calls_from_threads_do_not_see_each_other(tax):
    rng = np.random.default_rng(19)
    nodes = [n for n in GRAPH if n != "r"]
    cases = [([[str(rng.choice(nodes))] for _ in range(50)], [[str(rng.choice(nodes))] for _ in range(50)])
             for _ in range(8)]
    want = [hiersql.hierarchical_f1(t, p, tax, "samples") for t, p in cases]
    got: dict[int, float] = {}

    def work(i: int) -> None:
        got[i] = hiersql.hierarchical_f1(*cases[i], tax, "samples")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(cases))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [got[i] for i in range(len(cases))] == want


# ------------------------------------------------------------------------------------------- GermEval B
@pytest.fixture(scope="module")
def germeval_b(data_dir):
    canonical = data_dir / "canonical"
    edges = pd.read_csv(canonical / "taxonomy.tsv", sep="\t", header=None, names=["parent", "child"], dtype=str)
    graph = nx.DiGraph(list(edges.itertuples(index=False, name=None)))
    for top in [n for n in list(graph) if graph.in_degree(n) == 0]:
        graph.add_edge("ROOT", top)

    def sets(path):
        frame = pd.read_csv(path, sep="\t", header=None, names=["instance_id", "label"], dtype=str,
                            keep_default_na=False)
        out = defaultdict(list)
        for i, label in frame.itertuples(index=False, name=None):
            out[i].append(label)
        return out

    truth = sets(canonical / "truth_b.tsv")
    pred = sets(canonical / "pred_b" / "NoTeam__GRU_Attention_ensemble1.tsv")
    ids = sorted(truth)
    taxonomy = hiersql.Taxonomy.from_file(canonical / "taxonomy.tsv")
    return taxonomy, graph, [truth[i] for i in ids], [pred.get(i, []) for i in ids]


@pytest.mark.parametrize("average", ["micro", "samples", "label_macro", "weighted"])
def test_germeval_b_equals_sklearn_with_sample_weights(germeval_b, average):
    taxonomy, graph, y_true, y_pred = germeval_b
    weights = np.random.default_rng(4).uniform(0, 2, len(y_true))
    true, pred, _ = binarized(augmented(y_true, graph, "ROOT"), augmented(y_pred, graph, "ROOT"))
    for weighted in (None, weights):
        want = prfs(true, pred, average=SK[average], sample_weight=weighted, zero_division=0)
        for index, function in enumerate(FUNCTIONS.values()):
            got = function(y_true, y_pred, taxonomy, average, sample_weight=weighted)
            assert got == pytest.approx(want[index], abs=1e-12)


# ------------------------------------------------------------------------------------------- PostgreSQL
@pytest.mark.postgres
def test_the_new_averages_and_fixed_labels_on_postgres_equal_duckdb(pg_dsn, tax):
    """The generated SQL of the new averages (per-class counts, weighted means, NaN left out) on PostgreSQL."""
    from hiersql.engines import DuckDBEngine, PostgresEngine
    from hiersql.measures import Options, catalog, compute, plan_of
    from hiersql.plan import averages_of
    from tests._engine_cases import assert_rows_match

    ev = hiersql.Evaluator(tax).add_truth(Y_TRUE).add_predictions("s", Y_PRED).add_predictions("t", Y_TRUE)
    pg = PostgresEngine(pg_dsn)
    try:
        pg.execute("DROP SCHEMA IF EXISTS public CASCADE")
        pg.execute("CREATE SCHEMA public")
        pg.copy_store(ev.store)
        metrics = ["hierarchical_precision", "hierarchical_f1", "label_f1", "label_accuracy", "lca_f1", "mgia"]
        for options in (Options(average=("micro", "macro", "samples", "weighted", "label_macro")),
                        Options(average=("samples", "label_macro", "weighted"), zero_division=math.nan),
                        Options(average=("weighted", "label_macro"), labels=("b", "x", "a2"))):
            for metric in metrics:  # each measure with the averages it has
                plan = plan_of(catalog()[metric][0])
                each = Options(average=tuple(a for a in options.average if a in averages_of(plan, metric)),
                               zero_division=options.zero_division, labels=options.labels)
                assert_rows_match(compute(pg, [metric], each), compute(DuckDBEngine(ev.store), [metric], each),
                                  tol=1e-12)
    finally:
        pg.close()


def test_evaluate_command_zero_division_warn_is_zero_and_one_warning_line_per_value(tmp_path, capsys):
    """`hiersql evaluate --zero-division warn`: the values of zero_division=0, and one warning line for each
    (system, measure, average) with a zero denominator, counting its units. By hand: tree a→b, a→c; instance 1
    true {b} predicted nothing (|Ŷaug| = 0), instance 2 true {c} predicted {c}: hP samples = (0 + 1) / 2 with
    one undefined instance; system t predicts both, defined everywhere."""
    from hiersql.cli import main

    (tmp_path / "tax.tsv").write_text("a\tb\na\tc\n")
    (tmp_path / "truth.tsv").write_text("1\tb\n2\tc\n")
    (tmp_path / "s.tsv").write_text("2\tc\n")
    (tmp_path / "t.tsv").write_text("1\tb\n2\tc\n")
    base = ["evaluate", "--taxonomy", str(tmp_path / "tax.tsv"), "--truth", str(tmp_path / "truth.tsv"),
            "--pred", f"s={tmp_path / 's.tsv'}", "--pred", f"t={tmp_path / 't.tsv'}", "--metrics", "hp",
            "--average", "samples", "--format", "csv"]
    assert main([*base, "--zero-division", "warn"]) == 0
    out, err = capsys.readouterr()
    assert main([*base, "--zero-division", "0"]) == 0
    assert out == capsys.readouterr().out  # the values of zero_division=0
    assert "s,hierarchical_precision,samples,0.5" in out
    warned = [line for line in err.splitlines() if "ill-defined" in line]
    assert warned == ["hiersql: warning: hierarchical_precision (samples) of system 's' is ill-defined and being"
                      " set to 0.0 in 1 of 2 unit(s) with a zero denominator; use the zero_division parameter to"
                      " control this behavior"]
    assert main(["sql", "hp", "--zero-division", "warn"]) == 2
    assert "--zero-division" in capsys.readouterr().err


@pytest.mark.parametrize("zero_division, labels", [(1.0, ["x", "a2"]), (math.nan, None), (0.0, ["x", "a2"])])
def test_weighted_with_no_support_is_the_plain_mean_as_sklearn(zero_division, labels):
    """``weighted`` where the classes with a value have no support at all (Σ support = 0): scikit-learn's
    ``_nanaverage`` falls back to the plain mean of the classes' values. Truth {b}, {b}; predictions {x}, {}:
    with labels x, a2 the supports are 0, 0 (P: x = 0/1, a2 = 0/0); without labels b's P is 0/0 (NaN, left out
    with nan) and x's 0 with support 0. Found by a test user's random inputs."""
    y_true, y_pred = [["b"], ["b"]], [["x"], []]
    true, pred, classes = binarized(y_true, y_pred, labels)
    kwargs = {} if labels is None else {"labels": labels}
    for i, name in enumerate(("precision", "recall", "f1")):
        want = prfs(true, pred, average="weighted", zero_division=zero_division)[i]
        got = getattr(hiersql, f"label_{name}")(y_true, y_pred, average="weighted", zero_division=zero_division,
                                                 **kwargs)
        assert got == pytest.approx(want, nan_ok=True), (name, classes)
