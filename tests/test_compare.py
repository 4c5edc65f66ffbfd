"""hiersql.analyses.compare and ``hiersql compare``: values as ``evaluate`` gives them, intervals and tests against
SciPy on the per-instance values, the grouping rule by hand, the output formats and bad input."""

from __future__ import annotations

import json
from contextlib import nullcontext

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sp

from hiersql import Evaluator, Taxonomy
from hiersql.analyses.compare import InstanceStatistic, compare, depth_breakdown, instance_statistic
from hiersql.api.evaluator import make_options
from hiersql.cli import main
from hiersql.errors import DataWarning

DEMO_SYSTEMS = ("cautious", "flat_errors", "shallow")


@pytest.fixture(scope="module")
def demo(fixtures_dir):
    folder = fixtures_dir / "demo"
    ev = Evaluator(folder / "taxonomy.tsv").add_truth(folder / "truth.tsv")
    for system in DEMO_SYSTEMS:
        ev.add_predictions(system, folder / f"{system}.tsv")
    yield ev
    ev.close()


def demo_args(fixtures_dir, *extra):
    folder = fixtures_dir / "demo"
    return ["compare", "--taxonomy", str(folder / "taxonomy.tsv"), "--truth", str(folder / "truth.tsv"),
            "--pred", str(folder / "[cfs]*.tsv"), *extra]


def _joined(comparison, evaluated):
    merged = comparison.ranking.merge(evaluated, on=["system", "metric", "average"], suffixes=("", "_eval"))
    assert len(merged) == len(evaluated) == len(comparison.ranking)
    return merged


def test_values_are_evaluate_values_on_the_demo(demo):
    metrics = ["all"]
    comparison = demo.compare(metrics, n_resamples=50)
    merged = _joined(comparison, demo.evaluate(metrics))
    np.testing.assert_allclose(merged["value"], merged["value_eval"], rtol=1e-12)
    with_ci = set(merged.loc[merged["items"] != "", "metric"])
    assert {"hierarchical_f1", "lca_f1", "graph_induced_error", "mgia", "example_f1", "label_f1", "hcm_f1"} <= with_ci
    assert not {"hcm_mcc", "hcm_tp", "pl"} & with_ci  # not a ratio of sums: value and rank only
    assert merged.loc[merged["items"] == "", "ci_low"].isna().all()


def test_values_from_per_instance_tables_are_evaluate_values(demo):
    """Measures named explicitly are computed from the per-instance tables (no evaluate pass): same values,
    also with beta, dmax and the MGIA micro average."""
    metrics = ["hp", "hr", "hf", "sdl", "lca_p", "lca_r", "lca_f", "gie", "mgia", "mgia_fn", "all_pairs_error",
               "example_f1", "hamming_loss", "subset_accuracy", "label_precision", "label_recall", "label_f1",
               "hcm_accuracy", "hcm_precision", "hcm_recall", "hcm_f1", "hcm_fnr", "hcm_fpr", "hcm_tnr", "hcm_mcc"]
    for options in ({}, {"beta": 2.0, "dmax": 3.0, "tn": "descendants"}, {"denominator": "symmetric_difference"}):
        merged = _joined(demo.compare(metrics, n_resamples=20, **options), demo.evaluate(metrics, **options))
        np.testing.assert_allclose(merged["value"], merged["value_eval"], rtol=1e-12)


def test_values_on_germeval_b(data_dir):
    g = data_dir / "germeval2019"
    names = ["Averbis__BOHB_CNN", "LT-UHH__baseline", "twistbytes__thresholding"]
    ev = Evaluator(g / "hierarchy.txt").add_truth(g / "blurbs_test_label.txt", "germeval-b")
    ev.add_predictions_many({n: g / "submissions" / f"{n}.txt" for n in names}, "germeval-b")
    metrics = ["hf", "lca_f1", "label_f1", "example_f1"]
    comparison = ev.compare(metrics, n_resamples=200, average="micro")
    merged = _joined(comparison, ev.evaluate(metrics, average="micro"))
    np.testing.assert_allclose(merged["value"], merged["value_eval"], rtol=1e-12)
    assert (merged["ci_low"] <= merged["value"]).all() and (merged["value"] <= merged["ci_high"]).all()
    # 4157 instances: the intervals are narrow, Averbis is clearly above the baseline on hF
    hf = comparison.tests[comparison.tests["measure"] == "hf micro"].set_index(["system_a", "system_b"])
    assert hf.loc[("Averbis__BOHB_CNN", "LT-UHH__baseline"), "sign_p"] < 1e-6
    ev.close()


def test_interval_matches_scipy_bootstrap_of_per_instance_values(demo):
    comparison = demo.compare(["hf"], n_resamples=300, seed=5, average="macro", confidence=0.9)
    per_instance = demo.per_instance("hf")
    for system in DEMO_SYSTEMS:
        values = per_instance.loc[per_instance["system"] == system].sort_values("instance_id")
        ref = sp.bootstrap((values["hierarchical_f1"].to_numpy(),), np.mean, n_resamples=300,
                           rng=np.random.default_rng(5), method="percentile", confidence_level=0.9)
        row = comparison.ranking.set_index("system").loc[system]
        assert row.ci_low == pytest.approx(ref.confidence_interval.low)
        assert row.ci_high == pytest.approx(ref.confidence_interval.high)


def test_hcm_micro_interval_is_the_bootstrap_of_the_summed_counts(demo):
    """hcm_f1 micro = 2ΣTP / (2ΣTP + ΣFP + ΣFN): its interval is the paired bootstrap of that ratio over the
    instances, from the per-instance counts of ``per_instance("hcm_f1")``."""
    from hiersql.analyses import stats

    comparison = demo.compare(["hcm_f1"], n_resamples=300, seed=3, average="micro")
    counts = demo.per_instance("hcm_f1").sort_values(["system", "instance_id"])
    wide = {c: counts.pivot(index="instance_id", columns="system", values=c).astype(float)
            for c in ("tp", "fp", "fn")}
    num, den = 2 * wide["tp"], 2 * wide["tp"] + wide["fp"] + wide["fn"]
    ref = stats.paired_bootstrap(num, den, n_resamples=300, seed=3).intervals.set_index("system")
    got = comparison.ranking.set_index("system")
    for system in DEMO_SYSTEMS:
        assert got.loc[system, "value"] == pytest.approx(num[system].sum() / den[system].sum(), rel=1e-12)
        assert got.loc[system, ["ci_low", "ci_high"]].tolist() == pytest.approx(
            ref.loc[system, ["ci_low", "ci_high"]].tolist(), rel=1e-12)
    assert set(got["items"]) == {"instances"}
    # macro: the mean of the instances' own 2TP / (2TP + FP + FN), 0 where an instance has no count
    macro = demo.compare(["hcm_f1"], n_resamples=300, seed=3, average="macro").ranking.set_index("system")
    per_item = (num / den.where(den != 0)).fillna(0.0)
    ref = stats.paired_bootstrap(per_item, n_resamples=300, seed=3).intervals.set_index("system")
    for system in DEMO_SYSTEMS:
        assert macro.loc[system, "value"] == pytest.approx(per_item[system].mean(), rel=1e-12)
        assert macro.loc[system, ["ci_low", "ci_high"]].tolist() == pytest.approx(
            ref.loc[system, ["ci_low", "ci_high"]].tolist(), rel=1e-12)


def test_pair_tests_match_scipy_on_per_instance_values(demo):
    comparison = demo.compare(["hf"], n_resamples=300, average="micro")
    per_instance = demo.per_instance("hf").pivot(index="instance_id", columns="system", values="hierarchical_f1")
    tests = comparison.tests.set_index(["system_a", "system_b"])
    a, b = per_instance["flat_errors"], per_instance["shallow"]
    row = tests.loc[("flat_errors", "shallow")]
    # per-instance hF: flat_errors higher on 6 instances, lower on 2 (by hand from the fixture)
    assert (row.sign_n, row.sign_k) == (8, 6)
    assert row.sign_p == pytest.approx(sp.binomtest(6, 8).pvalue)
    assert row.wilcoxon_p == pytest.approx(sp.wilcoxon(a, b, method="asymptotic").pvalue)
    assert row.p_value == row.sign_p  # the sign test makes the groups by default


def _toy():
    """20 one-label instances under a two-level tree; A always right, B wrong once, C always wrong (its
    sibling of the true leaf)."""
    edges = [("r", "x"), ("r", "y"), ("x", "x1"), ("x", "x2"), ("y", "y1")]
    truth = [["x1"]] * 10 + [["y1"]] * 10
    ev = Evaluator(Taxonomy.from_edges(edges)).add_truth(truth)
    ev.add_predictions("A", truth)
    ev.add_predictions("B", [["x2"]] + truth[1:])
    ev.add_predictions("C", [["x2"]] * 10 + [["x1"]] * 10)
    return ev


def test_grouping_rule_by_hand():
    ev = _toy()
    comparison = ev.compare(["hf"], n_resamples=200, average="macro")
    ranking = comparison.ranking.set_index("system")
    # A vs B differ on 1 instance (p = 1): one group; C differs from both on 19-20 instances
    assert ranking["rank"].to_dict() == {"A": 1, "B": 2, "C": 3}
    assert ranking["group"].to_dict() == {"A": 1, "B": 1, "C": 2}
    tests = comparison.tests.set_index(["system_a", "system_b"])
    assert tests.loc[("A", "C"), "sign_p"] == pytest.approx(2 * sp.norm.sf(abs((20 - 10) / (0.5 * np.sqrt(20)))))
    # Holm over the three pairs: p adjusted = holm(p), groups unchanged here
    holm = ev.compare(["hf"], n_resamples=200, average="macro", holm=True)
    raw = comparison.tests["sign_p"].to_numpy()
    order = np.argsort(raw)
    expected = np.maximum.accumulate(np.minimum(1, raw[order] * [3, 2, 1]))
    np.testing.assert_allclose(holm.tests["p_value"].to_numpy()[order], expected)
    ev.close()


def test_losses_rank_low_values_first(demo):
    ranking = demo.compare(["gie"], n_resamples=50).ranking.set_index("system")
    # GIE by hand from the fixture: flat_errors 1.25 < cautious 1.625 < shallow 1.875
    assert ranking["rank"].to_dict() == {"flat_errors": 1, "cautious": 2, "shallow": 3}


def test_kendall_matrix_matches_scipy(demo):
    comparison = demo.compare(["hf", "gie", "mgia", "lca_f1"], n_resamples=50, average="micro")
    wide = comparison.ranking.pivot(index="system", columns="measure", values="value")
    tau = comparison.kendall
    assert tau.loc["hf micro", "mgia micro"] == pytest.approx(
        sp.kendalltau(wide["hf micro"], wide["mgia micro"]).statistic)
    # GIE is a loss: its ranking is that of -GIE
    assert tau.loc["hf micro", "gie"] == pytest.approx(sp.kendalltau(wide["hf micro"], -wide["gie"]).statistic)
    assert comparison.spearman.loc["lca_f micro", "gie"] == pytest.approx(
        sp.spearmanr(wide["lca_f micro"], -wide["gie"]).statistic)


def test_label_macro_with_fixed_universe_uses_the_macro_sign_test(demo):
    labels = sorted({"jaguar", "house cat", "wolf", "truck", "airplane", "dog", "car", "lion", "helicopter"})
    every = ["label_accuracy", "label_precision", "label_recall", "label_f1"]
    merged = _joined(demo.compare(every, n_resamples=50, average="macro", labels=tuple(labels)),
                     demo.evaluate(every, average="macro", labels=tuple(labels)))
    assert set(merged["items"]) == {"labels"}
    np.testing.assert_allclose(merged["value"], merged["value_eval"], rtol=1e-12)
    comparison = demo.compare(["label_f1"], n_resamples=50, average="macro", labels=tuple(labels))
    from hiersql.measures import flat

    per_label = flat.per_label(demo.store, make_options(labels=tuple(labels))).pivot(
        index="label", columns="system", values="label_f1")
    d = per_label["cautious"] - per_label["flat_errors"]
    row = comparison.tests.set_index(["system_a", "system_b"]).loc[("cautious", "flat_errors")]
    assert (row.sign_n, row.sign_k) == ((d != 0).sum(), (d > 0).sum())
    assert row.sign_p == pytest.approx(sp.binomtest(int((d > 0).sum()), int((d != 0).sum())).pvalue)
    # without a fixed universe every system averages over its own classes: not paired, no tests
    free = demo.compare(["label_f1"], n_resamples=50, average="macro")
    assert set(free.ranking["items"]) == {""} and free.tests.empty


def test_instance_statistic_covers_what_it_claims():
    opts = make_options()
    # read from the declarations: hF = (1 + β²) |Ŷaug ∩ Yaug| / (β² |Yaug| + |Ŷaug|), β = 2 -> 5 n_both / (4 n_true
    # + n_pred); micro pools the sums, macro is the mean of the per-instance ratios
    beta2 = make_options(beta=2.0)
    assert instance_statistic("hierarchical_f1", "micro", beta2) == InstanceStatistic(
        "set_based", ((5.0, "n_both"),), ((4.0, "n_true"), (1.0, "n_pred")))
    assert instance_statistic("hierarchical_f1", "macro", beta2).per_item
    assert instance_statistic("hierarchical_f1", "", opts) is None
    # SDL = |Yaug Δ Ŷaug|, a plain mean of its per-instance value
    assert instance_statistic("symmetric_difference_loss", "", opts) == InstanceStatistic(
        "set_based", "symmetric_difference_loss")
    # label-based micro F1 = 2 Σtp / (2 Σtp + Σfp + Σfn) with tp = n_both, fp = n_pred - n_both, fn = n_true - n_both
    assert instance_statistic("label_f1", "micro", opts) == InstanceStatistic(
        "flat", ((2.0, "n_both"),), ((1.0, "n_pred"), (1.0, "n_true")))
    assert instance_statistic("label_accuracy", "micro", opts) is None  # tn: not a sum of per-instance counts
    # MGIA's zero is 1 (an instance with nothing to pair is fully right), whatever zero_division says
    assert instance_statistic("mgia", "macro", make_options(zero_division=0.0)).zero == 1.0
    assert instance_statistic("hcm_f1", "micro", opts) == InstanceStatistic(
        "confusion", ((2.0, "tp"),), ((2.0, "tp"), (1.0, "fp"), (1.0, "fn")))
    assert instance_statistic("hcm_fpr", "micro", opts).denominator == ((1.0, "fp"), (1.0, "tn"))
    assert instance_statistic("hcm_f1", "macro", opts).per_item
    for metric, average in (("hcm_mcc", "micro"), ("hcm_mcc", "macro"), ("hcm_pt", "micro"), ("hcm_tp", "")):
        assert instance_statistic(metric, average, opts) is None, metric
    # the MGIA micro average is Σ (size - fn) / Σ size for any denominator option (size: the per-instance table's)
    assert instance_statistic("mgia", "micro", make_options(denominator="symmetric_difference")).denominator == (
        (1.0, "mgia_size"),)


def test_depth_breakdown_by_hand():
    edges = [("r", "x"), ("r", "y"), ("x", "x1"), ("x", "x2")]
    ev = Evaluator(Taxonomy.from_edges(edges)).add_truth([["x1"], ["y"], ["x2", "y"]])
    ev.add_predictions("s", [["x2"], ["y"], ["x"]])
    out = depth_breakdown(ev)
    # instance 1 (depth 2): {x, x1} vs {x, x2} -> hF 1/2; instance 3 (depth 2): {x, x2, y} vs {x} -> 2*1/(3+1)
    # = 1/2; instance 2 (depth 1): {y} vs {y} -> 1
    assert out.to_dict("records") == [
        {"system": "s", "depth": 1, "metric": "hierarchical_f1", "value": 1.0, "n": 1},
        {"system": "s", "depth": 2, "metric": "hierarchical_f1", "value": 0.5, "n": 2},
    ]
    ev.close()


# -------------------------------------------------------------------------------------------------- the CLI
def test_cli_formats(fixtures_dir, capsys):
    assert main(demo_args(fixtures_dir, "--metrics", "hf,gie,hcm_mcc", "--bootstrap", "100")) == 0
    table = capsys.readouterr().out
    lines = table.splitlines()
    assert lines[0].split()[:4] == ["system", "hf", "micro", "gie"]
    assert lines[2].startswith("flat_errors")  # best on hF micro: first row
    assert "Kendall's tau" in table
    assert "No interval or test (the value is not a mean or a ratio of sums over instances): hcm_mcc" in table
    assert main(demo_args(fixtures_dir, "--metrics", "hf", "--bootstrap", "100", "--format", "csv")) == 0
    frame = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))
    assert list(frame.columns) == ["measure", "metric", "average", "system", "value", "ci_low", "ci_high",
                                   "rank", "group", "items"]
    assert len(frame) == 3
    assert main(demo_args(fixtures_dir, "--metrics", "hf", "--bootstrap", "100", "--format", "json",
                          "--holm", "--test", "permutation")) == 0
    payload = json.loads(capsys.readouterr().out)
    assert set(payload) == {"settings", "ranking", "tests", "kendall_tau", "spearman_rho"}
    assert payload["settings"]["holm"] is True and payload["settings"]["test"] == "permutation"
    assert len(payload["tests"]) == 3
    assert main(demo_args(fixtures_dir, "--metrics", "hf", "--bootstrap", "100", "--format", "markdown")) == 0
    markdown = capsys.readouterr().out
    assert markdown.startswith("| system | hf micro |") and "|---|---:|" in markdown


def test_cli_is_deterministic(fixtures_dir, capsys):
    outputs = []
    for _ in range(2):
        assert main(demo_args(fixtures_dir, "--metrics", "hf,mgia", "--format", "json", "--bootstrap", "200",
                              "--seed", "7")) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]


@pytest.mark.parametrize(("extra", "message"), [
    (["--bootstrap", "0"], "--bootstrap: must be at least 1: 0"),
    (["--confidence", "1.5"], "--confidence: must lie strictly between 0 and 1: 1.5"),
    (["--metrics", "nope"], "--metrics: unknown metric"),
    (["--average", "mean"], "--average: must be one or more of micro, macro, samples, weighted, label_macro: 'mean'"),
])
def test_cli_bad_input(fixtures_dir, capsys, extra, message):
    assert main(demo_args(fixtures_dir, *extra)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_cli_needs_two_systems(fixtures_dir, capsys):
    """One line naming the command, the flag and the count (``report`` shows one system's values:
    ``tests/test_report_browser.py``)."""
    folder = fixtures_dir / "demo"
    assert main(["compare", "--taxonomy", str(folder / "taxonomy.tsv"), "--truth", str(folder / "truth.tsv"),
                 "--pred", f"a={folder / 'shallow.tsv'}"]) == 2
    assert capsys.readouterr().err == "hiersql: error: --pred: compare needs at least two systems to rank: 1\n"


def test_compare_function_takes_a_store(demo):
    by_store = compare(demo.store, ["hf"], n_resamples=50)
    pd.testing.assert_frame_equal(by_store.ranking, demo.compare(["hf"], n_resamples=50).ranking)


def test_a_system_without_a_value_has_no_rank(data_dir, capsys):
    # GermEval A: twistbytes__thresholding predicted no label, so with zero_division=nan its hP is not defined
    # (no predicted node anywhere); its hR is 0. The other two rank and pair as they do without it.
    canonical = data_dir / "canonical"
    paths = sorted((canonical / "pred_a").glob("t*.tsv"))
    assert [p.stem for p in paths][-1] == "twistbytes__thresholding"

    def compared(systems):
        ev = Evaluator(canonical / "taxonomy.tsv").add_truth(canonical / "truth_a.tsv")
        for path in systems:
            with pytest.warns(DataWarning) if path.stem == "twistbytes__thresholding" else nullcontext():
                ev.add_predictions(path.stem, path)
        out = compare(ev, ["hp", "hr"], n_resamples=200, average=["micro"], zero_division=float("nan"))
        ev.close()
        return out

    three, two = compared(paths), compared(paths[:2])
    ranking = three.ranking.set_index(["metric", "system"])
    empty = ranking.loc[("hierarchical_precision", "twistbytes__thresholding")]
    assert np.isnan(empty["value"]) and pd.isna(empty["rank"]) and pd.isna(empty["group"])
    hp = ranking.loc["hierarchical_precision"].drop("twistbytes__thresholding")
    assert sorted(hp["rank"]) == [1, 2] and hp["value"].idxmax() == hp["rank"].idxmin()
    assert hp["group"].notna().all()
    assert ranking.loc[("hierarchical_recall", "twistbytes__thresholding"), "value"] == 0.0
    assert ranking.loc[("hierarchical_recall", "twistbytes__thresholding"), "rank"] == 3
    pair = ["system_a", "system_b", "sign_n", "sign_k", "sign_p", "wilcoxon_p"]
    tests = three.tests[three.tests["measure"] == "hp micro"]
    pd.testing.assert_frame_equal(tests[tests["system_b"] != "twistbytes__thresholding"][pair].reset_index(drop=True),
                                  two.tests[two.tests["measure"] == "hp micro"][pair].reset_index(drop=True))
    assert (tests[tests["system_b"] == "twistbytes__thresholding"]["sign_n"] == 0).all()
    assert main(["compare", "--taxonomy", str(canonical / "taxonomy.tsv"), "--truth", str(canonical / "truth_a.tsv"),
                 "--pred", str(canonical / "pred_a" / "t*.tsv"), "--metrics", "hp", "--average", "micro",
                 "--zero-division", "nan", "--bootstrap", "50"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("twistbytes__thresholding "))
    assert line.split()[1:] == ["nan", "-"]
