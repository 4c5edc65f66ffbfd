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
                assert mine[key] == pytest.approx(theirs[key], rel=1e-9, abs=1e-12), (key, mine, theirs)
    assert len(got["tests"]) == len(want["tests"]) > 0
    for mine, theirs in zip(got["tests"], want["tests"], strict=True):
        assert mine["sign_p"] == pytest.approx(theirs["sign_p"], rel=1e-9), (mine, theirs)


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
