"""The pair-based family's ``empty_prediction="root"`` option: an empty prediction scored as the root (the
tree-induced and all-pairs errors, ``Σ_{u ∈ T} d(u, root)``), refused by GIE and MGIA; by hand on a tree and a
DAG, from the command line, on GermEval 2019 subtask B against an independent computation (root paths and
scipy's assignment solver), and on PostgreSQL and Spark through the plan."""

from __future__ import annotations

import csv
import io
from collections import defaultdict

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import linear_sum_assignment

import hiersql
from hiersql.cli import main
from hiersql.engines import DuckDBEngine
from hiersql.errors import InputError
from hiersql.inputs.store import Store
from hiersql.inputs.taxonomy import Taxonomy
from hiersql.measures import Options, compute
from hiersql.measures import pair_based as pb
from tests._engine_cases import assert_rows_match, germeval_store

# r > {a, b}; a > {a1, a2}; a1 > {a11}; b > {b1}. Depths: a, b 1; a1, a2, b1 2; a11 3.
TREE = [("r", "a"), ("r", "b"), ("a", "a1"), ("a", "a2"), ("a1", "a11"), ("b", "b1")]
# A DAG: m has the parents x (under r) and y (under q, under r): d(m, root) = 2 by x, not 3 by y.
DAG = [("r", "x"), ("r", "q"), ("q", "y"), ("x", "m"), ("y", "m"), ("y", "z")]
ROOT = Options(empty_prediction="root")


def _store(edges, y_true, systems) -> Store:
    store = Store()
    store.load_taxonomy(Taxonomy.from_edges(edges))
    store.add_truth(y_true)
    for name, y_pred in systems.items():
        store.add_predictions(name, y_pred)
    return store


def test_an_empty_prediction_is_the_distance_of_each_true_label_to_the_root():
    y_true, y_pred = [["a11"], ["a1"], ["a1", "b1"], []], [["a2"], [], [], []]
    # d(a11, a2) = 3; {a1} vs root: 2; {a1, b1} vs root: 2 + 2; both empty: 0
    assert pb.tree_induced_error(y_true, y_pred, TREE, empty_prediction="root") == pytest.approx((3 + 2 + 4 + 0) / 4)
    assert pb.all_pairs_error(y_true, y_pred, TREE, empty_prediction="root") == pytest.approx((3 + 2 + 4 + 0) / 4)
    # the default keeps the definitions: undefined for the tree-induced error, no pairs (0) for all pairs
    assert pb.all_pairs_error(y_true, y_pred, TREE) == pytest.approx(3 / 4)
    with pytest.raises(InputError, match="empty_prediction=root") as caught:
        pb.tree_induced_error(y_true, y_pred, TREE)
    assert caught.value.value == "1"  # the first instance at fault
    # the option is one of the family's, also through the top-level one-shot function
    with pytest.warns(UserWarning, match="no predicted label"):
        assert hiersql.tree_induced_error([["a1"]], [[]], TREE, empty_prediction="root") == 2.0


def test_all_pairs_with_several_predicted_labels_is_unchanged_and_root_counts_once():
    y_true, y_pred = [["a11", "b1"], ["a11", "b1"]], [["a2", "a1"], []]
    # instance 0: d(a11,a2) + d(a11,a1) + d(b1,a2) + d(b1,a1) = 3 + 1 + 4 + 4; instance 1: 3 + 2
    assert pb.all_pairs_error(y_true, y_pred, TREE, empty_prediction="root") == pytest.approx((12 + 5) / 2)


def test_on_a_dag_the_root_distance_is_the_shortest_path_down():
    frame = pb.per_instance(_store(DAG, [["m"], ["z", "m"], ["z"]], {"s": [[], [], ["m"]]}), ROOT)
    # m: 2 (r > x > m); z: 3 (r > q > y > z); d(z, m) = 2 (common parent y)
    assert frame["tree_induced_error"].tolist() == [2.0, 5.0, 2.0]
    assert frame["all_pairs_error"].tolist() == [2.0, 5.0, 2.0]


def test_a_non_empty_prediction_of_another_size_stays_undefined():
    store = _store(TREE, [["a11"], ["a1", "b1"]], {"s": [[], ["a1"]]})
    frame = pb.per_instance(store, ROOT)
    assert frame["tree_induced_error"][0] == 3.0 and pd.isna(frame["tree_induced_error"][1])
    with pytest.raises(InputError, match="needs as many predicted") as caught:
        pb.evaluate(store, ["tree_induced_error"], ROOT)
    assert caught.value.value == "1"
    assert not pb.PLAN.metric_applies(DuckDBEngine(store), "tree_induced_error", ROOT)


def test_gie_and_mgia_refuse_the_option_and_all_leaves_them_out():
    store = _store(TREE, [["a11"], ["a1"]], {"s": [["a2"], []]})
    for metric in ("graph_induced_error", "mgia", "mgia_fn"):
        with pytest.raises(InputError, match=f"all_pairs_error only, not to {metric} "):
            pb.evaluate(store, [metric], ROOT)
    engine = DuckDBEngine(store)
    rows = {(r.metric, r.average): r.value for r in compute(engine, ["all"], ROOT) if r.metric in pb.METRICS}
    assert rows == {("tree_induced_error", ""): 2.5, ("all_pairs_error", ""): 2.5}
    # without the option `all` leaves out the tree-induced error (undefined) and keeps GIE: (3 + 5) / 2
    rows = {r.metric: r.value for r in compute(engine, ["all"], Options()) if r.metric in pb.METRICS}
    assert "tree_induced_error" not in rows and rows["graph_induced_error"] == 4.0


def test_the_root_option_ignores_max_distance_like_its_measures():
    store = _store(TREE, [["a11"], ["a1"]], {"s": [["b1"], []]})
    rows = pb.evaluate(store, ["tree_induced_error", "all_pairs_error"], ROOT.with_(max_distance=1))
    assert {r.metric: r.value for r in rows} == {"tree_induced_error": (5 + 2) / 2, "all_pairs_error": (5 + 2) / 2}


def _cli(capsys, tmp_path, *extra) -> tuple[int, str, str]:
    (tmp_path / "tax.tsv").write_text("".join(f"{p}\t{c}\n" for p, c in TREE))
    (tmp_path / "truth.tsv").write_text("0\ta11\n1\ta1\n")
    (tmp_path / "s.tsv").write_text("0\ta2\n")
    code = main(["evaluate", "--taxonomy", str(tmp_path / "tax.tsv"), "--truth", str(tmp_path / "truth.tsv"),
                 "--pred", str(tmp_path / "s.tsv"), "--format", "csv", *extra])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_command_line_flag(capsys, tmp_path):
    code, out, _ = _cli(capsys, tmp_path, "--metrics", "tree_induced_error,all_pairs_error",
                        "--empty-prediction", "root")
    assert code == 0
    assert {r["metric"]: float(r["value"]) for r in csv.DictReader(io.StringIO(out))} == {
        "tree_induced_error": 2.5, "all_pairs_error": 2.5}
    code, _, err = _cli(capsys, tmp_path, "--metrics", "gie", "--empty-prediction", "root")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith("hiersql: error: --empty-prediction: ") and "graph_induced_error" in err and "'root'" in err
    code, _, err = _cli(capsys, tmp_path, "--metrics", "tree_induced_error", "--empty-prediction", "leaf")
    assert code == 2 and "--empty-prediction" in err and "'leaf'" in err and len(err.strip().splitlines()) == 1
    code, _, err = _cli(capsys, tmp_path, "--metrics", "tree_induced_error")
    assert code == 2 and "empty_prediction=root" in err and len(err.strip().splitlines()) == 1


def test_printed_sql_takes_the_flag(capsys):
    printed = {}
    for value in ("error", "root"):
        assert main(["sql", "pair_based", "--empty-prediction", value]) == 0
        printed[value] = capsys.readouterr().out
    # the parameter is folded: with "error" the root distances are switched off (WHERE FALSE)
    assert printed["root"] != printed["error"] and "root_distance" in printed["root"]
    assert main(["sql", "pair_based", "--empty-prediction", "leaf"]) == 2


# ------------------------------------------------------------------------------------------------ GermEval B
SYSTEMS = ("LT-UHH__baseline", "twistbytes__thresholding")  # 495 and 151 empty predicted sets


@pytest.fixture(scope="module")
def germeval(data_dir):
    canonical = data_dir / "canonical"
    store = germeval_store(data_dir, SYSTEMS)
    parent = dict(pd.read_csv(canonical / "taxonomy.tsv", sep="\t", header=None, dtype=str)[[1, 0]]
                  .itertuples(index=False, name=None))

    def path(label):  # the label and its ancestors below the virtual root, root-first (a tree)
        out = [label]
        while out[0] in parent:
            out.insert(0, parent[out[0]])
        return out

    def sets(file):
        out = defaultdict(set)
        for i, label in pd.read_csv(file, sep="\t", header=None, dtype=str).itertuples(index=False, name=None):
            out[i].add(label)
        return out

    truth = sets(canonical / "truth_b.tsv")
    preds = {s: sets(canonical / "pred_b" / f"{s}.tsv") for s in SYSTEMS}
    yield store, path, truth, preds
    store.close()


def _distance(path, u, v) -> int:
    pu, pv = path(u), path(v)
    common = 0
    while common < min(len(pu), len(pv)) and pu[common] == pv[common]:
        common += 1
    return len(pu) + len(pv) - 2 * common


def test_germeval_b_against_an_independent_computation(germeval):
    store, path, truth, preds = germeval
    frame = pb.per_instance(store, ROOT).set_index(["system", "instance_id"])
    summary = {(r.system, r.metric): r.value for r in pb.evaluate(store, ["all_pairs_error"], ROOT)}
    default = {(r.system, r.metric): r.value for r in pb.evaluate(store, ["all_pairs_error"], Options())}
    for system, pred in preds.items():
        empty = [i for i in truth if not pred.get(i)]
        assert len(empty) == {"LT-UHH__baseline": 495, "twistbytes__thresholding": 151}[system]
        all_pairs, tree_induced = {}, {}
        for i, labels in truth.items():
            predicted = sorted(pred.get(i, ()))
            if not predicted:  # the root for each true label: its depth below the virtual root
                all_pairs[i] = tree_induced[i] = sum(len(path(u)) for u in labels)
                continue
            cost = np.array([[_distance(path, u, v) for v in predicted] for u in sorted(labels)])
            all_pairs[i] = cost.sum()
            if len(labels) == len(predicted):
                rows, cols = linear_sum_assignment(cost)
                tree_induced[i] = cost[rows, cols].sum()
        got = frame.loc[system]
        assert got["all_pairs_error"].to_dict() == pytest.approx({i: float(v) for i, v in all_pairs.items()})
        defined = got["tree_induced_error"].dropna()
        assert set(defined.index) == set(tree_induced)
        assert defined.to_dict() == pytest.approx({i: float(v) for i, v in tree_induced.items()})
        assert summary[(system, "all_pairs_error")] == pytest.approx(sum(all_pairs.values()) / len(truth))
        no_root = sum(v for i, v in all_pairs.items() if i not in empty)
        assert default[(system, "all_pairs_error")] == pytest.approx(no_root / len(truth))
    with pytest.raises(InputError, match="needs as many predicted"):  # other mismatches remain (multi-label)
        pb.evaluate(store, ["tree_induced_error"], ROOT)


# --------------------------------------------------------------------------------------- PostgreSQL, Spark
def _engine_cases():
    hand = _store(TREE, [["a11"], ["a1"], ["a1", "b1"], []], {"s": [["a2"], [], [], []], "t": [["b1"], ["a2"], [], []]})
    dag = _store(DAG, [["m"], ["z", "m"], ["z"]], {"s": [[], [], ["m"]]})
    # s: 3 + 2 + 4 + 0; t: d(a11, b1) = 5, d(a1, a2) = 2, root 4, 0; dag: 2 + 5 + 2
    return [(hand, {("s", "tree_induced_error"): 9 / 4, ("t", "tree_induced_error"): (5 + 2 + 4) / 4}),
            (dag, {("s", "tree_induced_error"): 9 / 3})]


def _check_engine(engine) -> None:
    for store, expected in _engine_cases():
        metrics = ["tree_induced_error", "all_pairs_error"]
        want = compute(DuckDBEngine(store), metrics, ROOT)
        assert {k: v for (k, v) in ((r[:2], r.value) for r in want) if k in expected} == pytest.approx(expected)
        engine.copy_store(store)
        assert_rows_match(compute(engine, metrics, ROOT), want)
        with pytest.raises(InputError, match="empty_prediction=root"):
            compute(engine, ["tree_induced_error"], Options())


@pytest.mark.postgres
def test_postgres_equals_duckdb(pg_dsn):
    from hiersql.engines import PostgresEngine

    engine = PostgresEngine(pg_dsn)
    try:
        _check_engine(engine)
    finally:
        engine.close()


@pytest.mark.spark
@pytest.mark.slow
def test_spark_equals_duckdb(spark):
    from hiersql.engines import SparkEngine

    _check_engine(SparkEngine(spark))


def test_compare_tests_the_tree_induced_error_with_the_option():
    from hiersql.analyses.compare import compare
    from hiersql.api.evaluator import Evaluator

    ev = Evaluator(Taxonomy.from_edges(TREE)).add_truth([["a1"], ["b1"], ["a2"], ["a"]])
    ev.add_predictions("s1", [["a1"], ["a2"], [], []])
    ev.add_predictions("s2", [["a2"], [], ["a2"], ["b"]])
    ranking = compare(ev, ["tree_induced_error"], n_resamples=50, empty_prediction="root").ranking
    values = ranking.set_index("system")
    # s1: 0 + d(b1, a2) = 4 + depth(a2) = 2 + depth(a) = 1; s2: d(a1, a2) = 2 + depth(b1) = 2 + 0 + d(a, b) = 2
    assert values.loc["s1", "value"] == pytest.approx(7 / 4) and values.loc["s2", "value"] == pytest.approx(6 / 4)
    assert values["ci_low"].notna().all()  # per-instance values: intervals and tests
    with pytest.raises(InputError, match="needs as many predicted"):
        compare(ev, ["tree_induced_error"], n_resamples=50)
