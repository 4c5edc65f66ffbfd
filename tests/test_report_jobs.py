"""``hiersql report --db QUEUE [--job NAME]`` on a DuckDB queue: the latest results of a job's latest submission,
the rows ``jobs results`` shows (issue 38 item 1): a file edited and restored shows the restored values, another
job's same-named dataset stays out of the job's report, a system taken out of the job is gone. PostgreSQL:
test_jobs_postgres.py; the page in Chromium: test_report_browser.py."""

from __future__ import annotations

import csv
import io
import re
from html import unescape
from pathlib import Path

import duckdb
import pytest

from hiersql.analyses.compare import measure_name
from hiersql.cli import main
from tests.test_jobs import make_job


def page_values(page: Path) -> dict[tuple[str, str, str], str]:
    """``{(section heading, system, measure): value as shown}`` of every ranking table of a report (the
    toggled table of the other measures too)."""
    out = {}
    html = page.read_text(encoding="utf-8")
    for heading, body in re.findall(r"<section id='[^']+'><h2>(.*?)</h2>(.*?)</section>", html, re.S):
        for table in re.findall(r"<table class='ranking sortable'>(.*?)</table>", body, re.S):
            measures = re.findall(r"<th>(.*?)</th>", table)
            for system, cells in re.findall(r"<tr><td class='system' data-sort='[^']*'>(.*?)</td>(.*?)</tr>", table):
                shown = re.findall(r"<td[^>]*>([^<]*)(?:<span class='rank'>|</td>)", cells)  # one system: no rank
                for measure, value in zip(measures, shown, strict=True):
                    out[(unescape(heading), unescape(system), unescape(measure))] = value
    return out


def page_units(page: Path) -> dict[tuple[str, str], tuple[str, ...]]:
    """``{(section heading, system): (status, run, time, input hash)}`` of the units tables of a report."""
    out = {}
    html = page.read_text(encoding="utf-8")
    for heading, body in re.findall(r"<section id='[^']+'><h2>(.*?)</h2>(.*?)</section>", html, re.S):
        for table in re.findall(r"<table class='units'>(.*?)</table>", body, re.S):
            for row in re.findall(r"<tr>(<td.*?)</tr>", table):
                cells = [unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
                key = re.search(r"title='([0-9a-f]+)'", row).group(1)
                out[(unescape(heading), cells[0])] = (*cells[1:4], key)
    return out


def jobs_results(capsys, queue: Path | str, *flags: str) -> list[dict[str, str]]:
    capsys.readouterr()
    assert main(["jobs", "results", "--queue", str(queue), "--format", "csv", *flags]) == 0
    return list(csv.DictReader(io.StringIO(capsys.readouterr().out)))


def as_shown(rows: list[dict[str, str]], heading: str = "{dataset}") -> dict[tuple[str, str, str], str]:
    """``jobs results`` rows as the report shows their values (4 decimals)."""
    return {(heading.format(**r), r["system"], measure_name(r["metric"], r["average"])): f"{float(r['value']):.4f}"
            for r in rows}


def report(capsys, queue: Path | str, out: Path, *flags: str) -> Path:
    assert main(["report", "--db", str(queue), "--out", str(out), *flags]) == 0
    assert capsys.readouterr().err == f"hiersql: wrote {out}\n"
    return out


def test_a_file_edited_and_restored_shows_the_restored_values(fixtures_dir, tmp_path, capsys):
    """Run, edit shallow's predictions, run, restore them, run: the restored file has its first key again
    (unchanged: skipped), whose rows are the first run's; the report showed the edit's, the newest rows (issue
    38). By hand (tests/test_cli.py): shallow's micro hR = 14/26 = 0.5385 on the demo without the root."""
    spec = make_job(tmp_path, fixtures_dir)
    queue = tmp_path / "q.duckdb"
    shallow = tmp_path / "preds" / "shallow.tsv"
    original = shallow.read_text()
    assert main(["jobs", "run", str(spec)]) == 0
    first = {(r["dataset"], r["system"]): (r["run_id"], r["key"]) for r in jobs_results(capsys, queue)}
    shallow.write_text("".join(original.splitlines(keepends=True)[1:]))  # one instance less
    assert main(["jobs", "run", str(spec)]) == 0
    edited = as_shown(jobs_results(capsys, queue))
    assert edited[("demo", "shallow", "hr micro")] != "0.5385"  # the edit changes the value: the test can fail
    shallow.write_text(original)
    assert main(["jobs", "run", str(spec)]) == 0
    assert "4 unit(s), 0 queued, 4 unchanged" in capsys.readouterr().out
    latest = jobs_results(capsys, queue)
    shown = page_values(report(capsys, queue, tmp_path / "r.html"))
    assert shown == as_shown(latest)
    assert shown[("demo", "shallow", "hr micro")] == "0.5385"
    units = page_units(tmp_path / "r.html")
    assert {(d, s): (run, key) for (d, s), (_, run, _, key) in units.items()} == first
    assert {status for status, *_ in units.values()} == {"skipped"}


def test_a_second_job_with_a_dataset_of_the_same_name_stays_out(fixtures_dir, tmp_path, capsys):
    """A second job (other options: include_root) on the same queue with a dataset also named ``demo``: the
    report of ``--job demo-job`` has the first job's values only, those of ``jobs results --job demo-job``;
    without ``--job`` each job has sections of its own, headed by its name. By hand (tests/test_cli.py):
    shallow's micro hR on the demo is 14/26 = 0.5385 without the root; the second job counts the root too."""
    spec = make_job(tmp_path, fixtures_dir)
    queue = tmp_path / "q.duckdb"
    other = tmp_path / "other.toml"
    other.write_text('name = "other"\nqueue = "q.duckdb"\nmetrics = ["hp", "hr"]\n[options]\naverage = ["micro"]\n'
                     'include_root = true\n[[dataset]]\nname = "demo"\ntaxonomy = "taxonomy.tsv"\n'
                     'truth = "truth.tsv"\npredictions = "preds/shallow.tsv"\n', encoding="utf-8")
    assert main(["jobs", "run", str(spec)]) == 0
    assert main(["jobs", "run", str(other)]) == 0
    mine = jobs_results(capsys, queue, "--job", "demo-job")
    theirs = jobs_results(capsys, queue, "--job", "other")
    assert as_shown(theirs)[("demo", "shallow", "hr micro")] != "0.5385"  # values of their own
    shown = page_values(report(capsys, queue, tmp_path / "r.html", "--job", "demo-job"))
    assert shown == as_shown(mine)
    assert shown[("demo", "shallow", "hr micro")] == "0.5385"
    both = page_values(report(capsys, queue, tmp_path / "both.html"))
    assert both == as_shown(mine, "demo-job · {dataset}") | as_shown(theirs, "other · {dataset}")


def test_a_system_taken_out_of_the_job_is_not_shown(fixtures_dir, tmp_path, capsys):
    spec = make_job(tmp_path, fixtures_dir)
    queue = tmp_path / "q.duckdb"
    assert main(["jobs", "run", str(spec)]) == 0
    (tmp_path / "preds" / "cautious.tsv").unlink()
    assert main(["jobs", "run", str(spec)]) == 0
    page = report(capsys, queue, tmp_path / "r.html")
    assert {s for _, s, _ in page_values(page)} == {"flat_errors", "shallow"}
    assert {s for _, s in page_units(page)} == {"flat_errors", "shallow"}
    assert page_values(page) == as_shown(jobs_results(capsys, queue, "--job", "demo-job"))


def test_the_page_is_the_same_whatever_the_order_of_the_rows(fixtures_dir, tmp_path, capsys):
    """The same queue with every table's rows stored in reverse order gives the same page, byte for byte
    (but the --db path in the command line of its provenance)."""
    spec = make_job(tmp_path, fixtures_dir)
    queue = tmp_path / "q.duckdb"
    assert main(["jobs", "run", str(spec)]) == 0
    reversed_ = tmp_path / "reversed.duckdb"
    with duckdb.connect(str(reversed_)) as con:
        con.execute(f"ATTACH '{queue}' AS src (READ_ONLY)")
        for table in ("jobs", "units", "results", "attempts"):
            con.execute(f"CREATE TABLE {table} AS SELECT * FROM src.{table} ORDER BY ALL DESC")
    first = report(capsys, queue, tmp_path / "a.html").read_text(encoding="utf-8")
    second = report(capsys, reversed_, tmp_path / "b.html").read_text(encoding="utf-8")
    assert second.replace(str(reversed_), str(queue)).replace(str(tmp_path / "b.html"), str(tmp_path / "a.html")) \
        == first


@pytest.mark.parametrize(("flags", "said"), [
    (["--job", "nightly"], "{q}: no such job in the queue: 'nightly'"),
    (["--columns", "hp,hx"], "--columns: unknown metric"),
    (["--dataset", "nope"], "{q}: no results to report: ['nope']"),
])
def test_bad_flags_of_a_queue_report(fixtures_dir, tmp_path, capsys, flags, said):
    spec = make_job(tmp_path, fixtures_dir)
    queue = tmp_path / "q.duckdb"
    assert main(["jobs", "run", str(spec)]) == 0
    capsys.readouterr()
    assert main(["report", "--db", str(queue), "--out", str(tmp_path / "r.html"), *flags]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said.format(q=queue) in err, err
    assert not (tmp_path / "r.html").exists()


def test_job_flags_need_a_queue(fixtures_dir, tmp_path, capsys):
    """A results file of ``hiersql evaluate --db`` has no jobs: ``--job`` on it is one line, not a report of
    all its rows; without it the file is reported as before."""
    demo = fixtures_dir / "demo"
    db = tmp_path / "r.duckdb"
    assert main(["evaluate", "--taxonomy", str(demo / "taxonomy.tsv"), "--truth", str(demo / "truth.tsv"),
                 "--pred", str(demo / "shallow.tsv"), "--metrics", "hp", "--db", str(db)]) == 0
    capsys.readouterr()
    assert main(["report", "--db", str(db), "--job", "nightly", "--out", str(tmp_path / "r.html")]) == 2
    assert capsys.readouterr().err == ("hiersql: error: --job: reads a job queue; this results file has no jobs"
                                       " table: 'nightly'\n")
    report(capsys, db, tmp_path / "r.html")


def test_units_not_computed_yet_are_listed_without_values(fixtures_dir, tmp_path, capsys):
    """A submission not run yet: each unit is listed, queued, with no results. A --recompute submission not run
    yet: its units are queued, and their keys' rows (the same inputs) are shown with the run that stored them,
    as jobs results shows them."""
    spec = make_job(tmp_path, fixtures_dir)
    queue = tmp_path / "q.duckdb"
    assert main(["jobs", "submit", str(spec)]) == 0
    page = report(capsys, queue, tmp_path / "r.html")
    assert page_values(page) == {}
    assert page.read_text(encoding="utf-8").count("No unit of this dataset has results yet.") == 2
    units = page_units(page)
    assert len(units) == 4 and {u[:3] for u in units.values()} == {("queued", "no results", "")}
    assert main(["jobs", "run", "--queue", str(queue)]) == 0
    assert main(["jobs", "submit", str(spec), "--recompute"]) == 0
    rows = jobs_results(capsys, queue)
    page = report(capsys, queue, tmp_path / "r.html")
    assert page_values(page) == as_shown(rows)
    assert {(d, s): u[:2] for (d, s), u in page_units(page).items()} == {
        (r["dataset"], r["system"]): ("queued", r["run_id"]) for r in rows}
