"""``hiersql breakdown --engine E``: every breakdown computed in PostgreSQL or Spark prints the rows of the
embedded DuckDB run (numbers to 1e-9, everything else equal): GermEval 2019 subtask B (three real systems)
for the breakdowns of hard predictions, the RFSB model's scores on transposon instances for the scored ones."""

from __future__ import annotations

import io
import math

import pandas as pd
import pytest

from hiersql.analyses import curves
from hiersql.cli import main

BY = ("level", "depth", "class", "flat-level", "errors", "distances", "consistency", "severity")
SCORED_BY = ("auprc", "calibration")
ENGINES = {"postgres": pytest.mark.postgres, "spark": pytest.mark.spark}


def _frame(capsys, args: list[str]) -> pd.DataFrame:
    assert main(["breakdown", *args, "--format", "csv"]) == 0
    return pd.read_csv(io.StringIO(capsys.readouterr().out), keep_default_na=False, na_values=[""])


def _assert_same(got: pd.DataFrame, want: pd.DataFrame, what: str) -> None:
    assert list(got.columns) == list(want.columns), what
    assert len(got) == len(want) > 0, what
    for column in want.columns:
        for mine, theirs in zip(got[column], want[column], strict=True):
            if isinstance(theirs, float) and math.isnan(theirs):
                assert isinstance(mine, float) and math.isnan(mine), (what, column)
            elif isinstance(theirs, float):
                assert mine == pytest.approx(theirs, rel=1e-9, abs=1e-12), (what, column)
            else:
                assert mine == theirs, (what, column)


def _engine_args(name: str, request) -> list[str]:
    if name == "postgres":
        return ["--engine", "postgres", "--postgres-url", request.getfixturevalue("pg_dsn")]
    request.getfixturevalue("spark")  # the worker's session, which the command's engine joins
    return ["--engine", "spark", "--spark-master", "local[2]"]


@pytest.fixture(scope="module")
def germeval(data_dir) -> list[str]:
    canonical = data_dir / "canonical"
    return ["--taxonomy", str(canonical / "taxonomy.tsv"), "--truth", str(canonical / "truth_b.tsv"),
            *(a for s in ("LT-UHH__baseline", "Averbis__BOHB_CNN", "twistbytes__thresholding")
              for a in ("--pred", f"{s}={canonical / 'pred_b' / f'{s}.tsv'}"))]


@pytest.fixture(scope="module")
def scored(data_dir, tmp_path_factory) -> list[str]:
    """The RFSB model's marginal scores and the truth of the first 1,000 transposon instances."""
    folder = tmp_path_factory.mktemp("scored")
    scores = curves.read_transposon_scores(data_dir / "transposon" / "predictions_RFSB.txt")
    scores[scores["instance_id"].astype(int) <= 1000].to_csv(folder / "RFSB.tsv", sep="\t", header=False,
                                                              index=False)
    truth = pd.read_csv(data_dir / "canonical" / "truth_transposon.tsv", sep="\t", header=None, dtype=str)
    truth[truth[0].astype(int) <= 1000].to_csv(folder / "truth.tsv", sep="\t", header=False, index=False)
    return ["--taxonomy", str(data_dir / "canonical" / "taxonomy_transposon.tsv"), "--truth",
            str(folder / "truth.tsv"), "--pred", f"RFSB={folder / 'RFSB.tsv'}"]


@pytest.mark.parametrize("engine", [pytest.param(name, marks=mark) for name, mark in ENGINES.items()])
def test_every_breakdown_on_the_engine_equals_duckdb(engine, germeval, scored, request, capsys):
    extra = _engine_args(engine, request)
    for by in BY:
        args = [*germeval, "--by", by, *(["--include-root", "--beta", "2"] if by == "level" else [])]
        _assert_same(_frame(capsys, [*args, *extra]), _frame(capsys, args), f"--by {by}")
    for by in SCORED_BY:
        args = [*scored, "--by", by, *(["--bins", "5"] if by == "calibration" else [])]
        _assert_same(_frame(capsys, [*args, *extra]), _frame(capsys, args), f"--by {by}")


@pytest.mark.postgres
def test_the_class_report_text_on_postgres_is_duckdbs(germeval, pg_dsn, capsys):
    """The text of ``--by class`` (scikit-learn's layout, two decimals) is the same, byte for byte."""
    args = ["breakdown", *germeval, "--by", "class"]
    assert main(args) == 0
    want = capsys.readouterr().out
    assert main([*args, "--engine", "postgres", "--postgres-url", pg_dsn]) == 0
    assert capsys.readouterr().out == want
