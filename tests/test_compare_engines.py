"""``compare`` (and the report that reads it) computes on the engine ``--engine`` names, with the values,
intervals, tests and ranks of the embedded DuckDB run (the flag was accepted and silently ignored)."""

from __future__ import annotations

import json

import pytest

from hiersql.cli import main

pytestmark = pytest.mark.postgres

METRICS = "hf,lca_f1,gie,mgia,example_f1,label_f1,hcm_f1,hcm_pt,sdl"


def _compare(capsys, args: list[str]) -> dict:
    assert main(["compare", *args, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_compare_on_postgres_equals_duckdb(pg_dsn, data_dir, capsys):
    canonical = data_dir / "canonical"
    args = ["--taxonomy", str(canonical / "taxonomy.tsv"), "--truth", str(canonical / "truth_b.tsv"),
            "--pred", f"a={canonical / 'pred_b' / 'LT-UHH__baseline.tsv'}",
            "--pred", f"b={canonical / 'pred_b' / 'Averbis__BOHB_CNN.tsv'}",
            "--pred", f"c={canonical / 'pred_b' / 'twistbytes__thresholding.tsv'}",
            "--metrics", METRICS, "--average", "micro,macro", "--bootstrap", "50"]
    want = _compare(capsys, args)
    got = _compare(capsys, [*args, "--engine", "postgres", "--postgres-url", pg_dsn])
    assert [(r["measure"], r["system"]) for r in got["ranking"]] == [(r["measure"], r["system"]) for r in
                                                                      want["ranking"]]
    for mine, theirs in zip(got["ranking"], want["ranking"], strict=True):
        assert (mine["rank"], mine["group"], mine["items"]) == (theirs["rank"], theirs["group"], theirs["items"])
        for key in ("value", "ci_low", "ci_high"):
            assert (mine[key] is None) == (theirs[key] is None), (mine, theirs)
            if mine[key] is not None:
                assert mine[key] == theirs[key], (key, mine, theirs)
    assert len(got["tests"]) == len(want["tests"]) > 0
    for mine, theirs in zip(got["tests"], want["tests"], strict=True):
        assert mine["sign_p"] == theirs["sign_p"], (mine, theirs)


def test_compare_and_report_use_the_engine_they_are_given(data_dir, tmp_path, capsys):
    """A server that cannot be reached is the run's error (exit 2, one line naming --postgres-url): the
    comparison does not quietly fall back to the embedded DuckDB."""
    canonical = data_dir / "canonical"
    args = ["--taxonomy", str(canonical / "taxonomy.tsv"), "--truth", str(canonical / "truth_b.tsv"),
            "--pred", f"a={canonical / 'pred_b' / 'LT-UHH__baseline.tsv'}",
            "--pred", f"b={canonical / 'pred_b' / 'Averbis__BOHB_CNN.tsv'}", "--metrics", "hf",
            "--bootstrap", "10", "--engine", "postgres", "--postgres-url", "postgresql://nobody@127.0.0.1:9/none"]
    for command in (["compare", *args], ["report", *args, "--out", str(tmp_path / "r.html")]):
        assert main(command) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--postgres-url" in err[0] and "cannot connect" in err[0], err


def test_evaluator_on_postgres_gives_the_values_of_duckdb(pg_dsn, data_dir):
    """Evaluator(..., engine="postgres"): evaluate, per_instance, per_class and compare computed in the server,
    equal to the default engine's; predictions added after a first call are there for the next."""
    import pandas as pd

    from hiersql import Evaluator

    canonical = data_dir / "canonical"
    runs = {name: canonical / "pred_b" / f"{name}.tsv" for name in ("LT-UHH__baseline", "Averbis__BOHB_CNN")}
    frames = {}
    for engine in ("duckdb", "postgres"):
        ev = Evaluator(canonical / "taxonomy.tsv", engine=engine,
                       **({"postgres_url": pg_dsn} if engine == "postgres" else {}))
        ev.add_truth(canonical / "truth_b.tsv").add_predictions("first", runs["LT-UHH__baseline"])
        first = ev.evaluate(["hf", "hcm_f1"], average="micro")
        ev.add_predictions("second", runs["Averbis__BOHB_CNN"])
        frames[engine] = (first, ev.evaluate(["hf", "lca_f1", "mgia", "example_f1", "hcm_pt"]),
                          ev.per_instance("hf"), ev.per_class("label_f1"),
                          ev.compare(["hf", "gie"], n_resamples=20).ranking)
        ev.close()
    for mine, theirs in zip(frames["postgres"], frames["duckdb"], strict=True):
        pd.testing.assert_frame_equal(mine.reset_index(drop=True), theirs.reset_index(drop=True), check_exact=True,
                                      check_dtype=False)
    assert set(frames["postgres"][1]["system"]) == {"first", "second"}


def test_evaluator_names_a_bad_engine():
    from hiersql import Evaluator
    from hiersql.options import OptionError

    with pytest.raises(OptionError, match="engine"):
        Evaluator([("r", "a")], engine="oracle")
    with pytest.raises(OptionError, match="postgres_url"):
        Evaluator([("r", "a")], postgres_url="postgresql://x@127.0.0.1:9/y")
