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


def test_the_duckdb_engines_one_list_per_unit_table_prints_the_ordered_aggregates_digits(data_dir, capsys,
                                                                                         monkeypatch):
    """The DuckDB engine's means read a unit table's ordered values from one list (hiersql.plan.Folds); with the
    ordered aggregates the printed SQL keeps (one sort per value), every family's rows are the same bytes."""
    from dataclasses import replace

    from hiersql.engines import dialect

    canonical = data_dir / "canonical"
    args = ["evaluate", "--taxonomy", str(canonical / "taxonomy.tsv"), "--truth", str(canonical / "truth_b.tsv"),
            *[f"--pred={s}={canonical / 'pred_b' / f'{s}.tsv'}" for s in SYSTEMS], "--metrics", "all",
            "--format", "csv"]
    assert dialect.dialect("duckdb").lists
    assert main(args) == 0
    in_lists = capsys.readouterr().out
    monkeypatch.setitem(dialect._DIALECTS, "duckdb", replace(dialect.dialect("duckdb"), lists=False))
    assert main(args) == 0
    assert capsys.readouterr().out == in_lists
