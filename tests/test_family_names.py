"""A family's name in ``--metrics`` (``set_based``, ``pair_based``, ``hcm``...): its measures that apply to the
input, as ``all`` gives them, and an error when the family itself does not apply."""

from __future__ import annotations

import pytest

from hiersql import Evaluator
from hiersql.api.evaluator import compute, make_options
from hiersql.cli import main
from hiersql.errors import InputError
from hiersql.inputs.taxonomy import Taxonomy
from hiersql.measures import REGISTRY, check_averages, resolve
from hiersql.options import OptionError
from tests.test_scoring import FIG1


@pytest.fixture
def demo(fixtures_dir):
    return fixtures_dir / "demo"


def values(rows) -> dict[tuple[str, str, str], float]:
    return {(r.system, r.metric, r.average): r.value for r in rows}


def test_every_family_name_resolves_to_its_measures():
    for fam, metrics in REGISTRY.items():
        assert resolve([fam]) == {fam: list(metrics)}
    assert resolve(["hcm"]) == resolve(["confusion"])


def test_a_family_name_gives_what_naming_its_measures_gives(demo):
    ev = Evaluator(demo / "taxonomy.tsv").add_truth(demo / "truth.tsv").add_predictions("s", demo / "shallow.tsv")
    by_name = values(compute(ev.store, ["set_based"], make_options()))
    assert by_name == values(compute(ev.store, ["hp", "hr", "hf", "sdl"], make_options()))
    assert {m for _, m, _ in by_name} == set(REGISTRY["set_based"])


def test_a_measure_that_does_not_apply_is_left_out_under_its_family_and_an_error_when_named(demo):
    # shallow predicts 1 label where instance 6 has 2: the tree-induced error (one label each) is undefined
    ev = Evaluator(demo / "taxonomy.tsv").add_truth(demo / "truth.tsv").add_predictions("s", demo / "shallow.tsv")
    got = {r.metric for r in compute(ev.store, ["pair_based"], make_options())}
    assert got == set(REGISTRY["pair_based"]) - {"tree_induced_error"}
    with pytest.raises(InputError, match="tree_induced_error needs as many predicted as true labels"):
        compute(ev.store, ["pair_based", "tree_induced_error"], make_options())


def test_the_scoring_family_by_name_on_an_unweighted_tree_and_on_a_dag():
    ev = Evaluator(Taxonomy.from_edges(FIG1)).add_truth([["H"]]).add_predictions("s", [["I"]])
    rows = compute(ev.store, ["scoring"], make_options())
    assert {r.metric for r in rows} == {"pl"}  # the weighted measures need edge weights
    assert [r.value for r in rows] == pytest.approx([1 - 2 / 5] * 2)  # micro and macro (SPEC: by hand)
    dag = Evaluator(Taxonomy.from_edges([("r", "a"), ("r", "b"), ("a", "c"), ("b", "c")]))
    dag.add_truth([["c"]]).add_predictions("s", [["a"]])
    with pytest.raises(InputError, match="does not apply to this input: scoring trees must be trees") as failed:
        compute(dag.store, ["hp", "scoring"], make_options())
    assert failed.value.value == "scoring"
    assert {r.metric for r in compute(dag.store, ["all"], make_options())}.isdisjoint(REGISTRY["scoring"])


def test_a_family_name_takes_the_averages_its_measures_have():
    check_averages(["hcm"], make_options(average=("weighted",)))  # its counts are plain sums
    with pytest.raises(OptionError) as failed:
        check_averages(["lca"], make_options(average=("weighted",)))
    assert (failed.value.option, failed.value.value) == ("average", "weighted")
    with pytest.raises(OptionError):  # named one by one, each measure must have it
        check_averages(["hcm_accuracy"], make_options(average=("weighted",)))


def test_the_cli_takes_family_names(demo, capsys):
    args = ["evaluate", "--taxonomy", str(demo / "taxonomy.tsv"), "--truth", str(demo / "truth.tsv"),
            "--pred", f"s={demo / 'shallow.tsv'}", "--format", "csv"]
    assert main([*args, "--metrics", "lca"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert {line.split(",")[1] for line in out[1:]} == set(REGISTRY["lca"])
    assert main([*args, "--metrics", "lca", "--average", "weighted"]) == 2
    assert capsys.readouterr().err == ("hiersql: error: --average: of the lca measures must be one of"
                                       " 'macro', 'micro', 'samples': 'weighted'\n")


def test_compare_takes_a_family_name(demo):
    ev = Evaluator(demo / "taxonomy.tsv").add_truth(demo / "truth.tsv")
    for name in ("shallow", "cautious"):
        ev.add_predictions(name, demo / f"{name}.tsv")
    ranking = ev.compare(["set_based"], n_resamples=50).ranking
    assert set(ranking["metric"]) == set(REGISTRY["set_based"])
