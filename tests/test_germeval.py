"""The real GermEval 2019 data: all 22 submissions of both subtasks in one call."""

from __future__ import annotations

import csv
import io

import pytest

from hiersql.cli import main

SUBMISSIONS = "germeval2019/submissions/*.txt"


@pytest.mark.parametrize("subtask", ["a", "b"])
def test_all_submissions_in_one_call(data_dir, capsys, subtask):
    code = main([
        "evaluate", "--taxonomy", str(data_dir / "germeval2019" / "hierarchy.txt"),
        "--truth", str(data_dir / "germeval2019" / "blurbs_test_label.txt"),
        "--pred", str(data_dir / SUBMISSIONS), "--labels-format", f"germeval-{subtask}",
        "--metrics", "hp,hr,hf", "--format", "csv",
    ])
    out = capsys.readouterr().out
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    systems = {r["system"] for r in rows}
    assert len(systems) == 22
    assert len(rows) == 22 * 3 * 2
    assert all(0 <= float(r["value"]) <= 1 for r in rows)
    # a submission without a subtask_b section predicts nothing: its recall is 0, not skipped
    if subtask == "b":
        empty = [s for s in systems if "subtask_b" not in
                 (data_dir / "germeval2019" / "submissions" / f"{s}.txt").read_text(encoding="utf-8")]
        assert empty, "the data has submissions without subtask_b"
        for r in rows:
            if r["system"] in empty and r["metric"] == "hierarchical_recall":
                assert float(r["value"]) == 0


@pytest.mark.parametrize("subtask", ["a", "b"])
def test_gold_against_itself_scores_one(data_dir, capsys, subtask):
    gold = str(data_dir / "germeval2019" / "blurbs_test_label.txt")
    code = main([
        "evaluate", "--taxonomy", str(data_dir / "germeval2019" / "hierarchy.txt"), "--truth", gold,
        "--pred", f"gold={gold}", "--labels-format", f"germeval-{subtask}", "--metrics", "hp,hr,hf,sdl",
        "--format", "csv",
    ])
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert code == 0 and len(rows) == 7
    for r in rows:
        assert float(r["value"]) == (0 if r["metric"] == "symmetric_difference_loss" else 1)


def test_canonical_long_files_agree_with_germeval_reader(data_dir):
    """The canonical/ long TSV rewrite of subtask B gives the same numbers as the GermEval reader."""
    from hiersql import Evaluator

    name = "LT-UHH__contender"
    g = data_dir / "germeval2019"
    by_germeval = Evaluator(g / "hierarchy.txt").add_truth(g / "blurbs_test_label.txt", "germeval-b")
    by_germeval.add_predictions(name, g / "submissions" / f"{name}.txt", "germeval-b")
    c = data_dir / "canonical"
    by_long = Evaluator(c / "taxonomy.tsv").add_truth(c / "truth_b.tsv")
    by_long.add_predictions(name, c / "pred_b" / f"{name}.tsv")
    # every subtask-B gold instance has labels, so both readers see the same 4157 instances
    assert by_germeval.con.execute("SELECT count(*) FROM instances").fetchall() == [(4157,)]
    assert by_long.con.execute("SELECT count(*) FROM instances").fetchall() == [(4157,)]
    a = by_germeval.rows(["hp", "hr", "hf"])
    b = by_long.rows(["hp", "hr", "hf"])
    assert [r.value for r in a] == pytest.approx([r.value for r in b])
