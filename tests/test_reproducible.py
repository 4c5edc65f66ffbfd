"""Same input, same output, byte for byte (issue 15, item 6): the means add their values in instance order
(hiersql.plan.summary_sql), so DuckDB's threads do not change the last digits."""

from __future__ import annotations

from hiersql.cli import main

SYSTEMS = ("Averbis__BOHB_CNN", "LT-UHH__baseline", "twistbytes__thresholding")


def test_metrics_all_on_germeval_three_times_prints_the_same_bytes(data_dir, capsys):
    canonical = data_dir / "canonical"
    args = ["evaluate", "--taxonomy", str(canonical / "taxonomy.tsv"), "--truth", str(canonical / "truth_b.tsv"),
            *[f"--pred={s}={canonical / 'pred_b' / f'{s}.tsv'}" for s in SYSTEMS], "--metrics", "all"]
    outputs = []
    for fmt in ("csv", "csv", "csv", "json"):
        assert main([*args, "--format", fmt]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] == outputs[2]
    assert outputs[0].count("\n") > 100  # every family's rows
    assert main([*args, "--format", "json"]) == 0
    assert capsys.readouterr().out == outputs[3]
