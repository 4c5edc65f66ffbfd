"""What changed (issue 38 item 2) on a real DuckDB queue and a real PostgreSQL queue (the ``pg_dsn`` fixture):
``jobs diff`` tests a changed system as ``hiersql compare`` tests two systems, on the per-instance values the
runs stored (checked against ``compare`` run on the two prediction files, and against p-values computed by hand
on the demo); an unchanged re-run shows no change; a run without stored per-instance values is ``n/a``, never a
false alarm; ``jobs prune`` keeps what ``latest`` shows; the view ``latest`` is ``jobs results``; the report's
trend is the job's submissions' values."""

from __future__ import annotations

import csv
import io
import math
import re
import shutil
from datetime import UTC, datetime, timedelta
from html import unescape
from pathlib import Path

import duckdb
import psycopg
import pytest

from hiersql import Evaluator
from hiersql.analyses.compare import TESTS, compare, measure_name
from hiersql.cli import main
from hiersql.jobs.diff import NO_TEST
from tests.test_jobs import make_job
from tests.test_jobs_postgres import queue_url  # noqa: F401 (a fixture: a new database on the server)
from tests.test_report_jobs import jobs_results, report

METRICS = ["hp", "hr", "hf", "lca_f1", "mgia", "hcm_f1", "hcm_mcc"]
# GermEval 2019 subtask A: DFKI-SLT's two runs differ significantly in hR, not in MGIA (compare's sign test);
# LT-UHH's baseline, its lines reversed after the first run (another file, the same labels)
BEFORE = {"dfki": "DFKI-SLT__full2", "lt": "LT-UHH__baseline"}
AFTER = {"dfki": "DFKI-SLT__full", "lt": "LT-UHH__baseline"}


@pytest.fixture(params=["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)])
def queue(request, tmp_path) -> str:
    """A queue of each kind: a DuckDB file, a new PostgreSQL database."""
    if request.param == "duckdb":
        return str(tmp_path / "q.duckdb")
    return request.getfixturevalue("queue_url")


def germeval_job(tmp_path: Path, data_dir: Path, queue: str, systems: dict[str, str]) -> Path:
    """A job of GermEval subtask A with the systems ``dfki`` and ``lt``, their files copies of ``systems``."""
    canonical = data_dir / "canonical"
    for unit, name in systems.items():
        shutil.copy(canonical / "pred_a" / f"{name}.tsv", tmp_path / f"{unit}.tsv")
    spec = tmp_path / "job.toml"
    spec.write_text(f'name = "nightly"\nqueue = "{queue}"\nmetrics = {METRICS!r}\n'.replace("'", '"')
                    + '[options]\naverage = ["micro", "macro"]\n[[dataset]]\nname = "a"\n'
                    f'taxonomy = "{canonical / "taxonomy.tsv"}"\ntruth = "{canonical / "truth_a.tsv"}"\n'
                    'predictions = ["dfki=dfki.tsv", "lt=lt.tsv"]\n', encoding="utf-8")
    return spec


def diff_rows(capsys, queue: str, *flags: str) -> list[dict[str, str]]:
    capsys.readouterr()
    assert main(["jobs", "diff", "--queue", queue, "--format", "csv", *flags]) == 0
    return list(csv.DictReader(io.StringIO(capsys.readouterr().out)))


def by_measure(rows: list[dict[str, str]], system: str) -> dict[str, dict[str, str]]:
    return {measure_name(r["metric"], r["average"]): r for r in rows if r["system"] == system}


def test_diff_tests_a_change_as_compare_tests_two_systems(queue, data_dir, tmp_path, capsys):
    """A run, a changed input, a second run: the changed system's values, each with the four tests of compare on
    the two runs' stored per-instance values, equal to those of ``compare`` on a store holding the two files as
    two systems (the p-values exactly); significant where compare's p-value is below alpha, which is where
    compare puts the two in different groups; the HCM's MCC has no test (n/a). The other system's file changed
    (its lines reversed) but not its values: not listed, and with ``--all`` p = 1. ``--since`` the first run is
    the default; a date after the second submission shows nothing changed; an unchanged re-run shows nothing
    changed."""
    spec = germeval_job(tmp_path, data_dir, queue, BEFORE)
    assert main(["jobs", "run", str(spec)]) == 0
    first = {r["system"]: r["run_id"] for r in jobs_results(capsys, queue)}
    germeval_job(tmp_path, data_dir, queue, AFTER)
    lt = tmp_path / "lt.tsv"
    lt.write_text("".join(reversed(lt.read_text(encoding="utf-8").splitlines(keepends=True))), encoding="utf-8")
    assert main(["jobs", "run", str(spec)]) == 0
    assert "2 unit(s), 2 queued, 0 unchanged" in capsys.readouterr().out
    canonical = data_dir / "canonical"
    evaluator = (Evaluator(canonical / "taxonomy.tsv").add_truth(canonical / "truth_a.tsv")
                 .add_predictions("current", canonical / "pred_a" / f"{AFTER['dfki']}.tsv")
                 .add_predictions("previous", canonical / "pred_a" / f"{BEFORE['dfki']}.tsv"))
    theirs = compare(evaluator, METRICS, average=["micro", "macro"])  # test="sign", alpha 0.05, 1000 resamples
    tests = {row["measure"]: row for row in theirs.tests.to_dict("records")}
    assert {(r["system_a"], r["system_b"]) for r in tests.values()} == {("current", "previous")}
    groups = theirs.ranking.pivot(index="measure", columns="system", values="group")
    for test in TESTS:
        rows = diff_rows(capsys, queue, "--all", "--test", test)
        mine = by_measure(rows, "dfki")
        assert set(mine) == set(theirs.ranking["measure"]) | {"hcm_mcc micro", "hcm_mcc macro"}
        for measure, row in mine.items():
            assert float(row["change"]) == float(row["current"]) - float(row["previous"]) != 0
            if measure.startswith("hcm_mcc"):
                assert (row["significant"], row["note"], row["p_value"]) == ("n/a", NO_TEST, "")
                continue
            expected = tests[measure]
            assert float(row["p_value"]) == expected[f"{test}_p"], (test, measure)
            assert (float(row["ci_low"]), float(row["ci_high"])) == (expected["ci_low"], expected["ci_high"])
            assert math.isclose(float(row["change"]), expected["difference"], rel_tol=1e-9, abs_tol=1e-15)
            assert row["significant"] == ("yes" if expected[f"{test}_p"] < 0.05 else "no")
            if test == "sign":  # compare's grouping rule: in one group unless the test says otherwise
                same = groups.loc[measure, "current"] == groups.loc[measure, "previous"]
                assert same == (row["significant"] == "no"), measure
        if test == "sign":  # both answers occur: the assertions above can fail either way
            assert {r["significant"] for r in mine.values()} == {"yes", "no", "n/a"}
        same = by_measure(rows, "lt")
        assert len(same) == len(mine) and all(r["previous"] == r["current"] and r["change"] == "0.0" for r in
                                              same.values())
        assert {r["p_value"] for r in same.values() if r["significant"] != "n/a"} == {"1.0"}
        assert {r["significant"] for r in same.values()} == {"no", "n/a"}
    changed = diff_rows(capsys, queue)
    assert {r["system"] for r in changed} == {"dfki"} and len(changed) == len(mine)
    assert {r["previous_run"] for r in changed} == {first["dfki"]}
    assert diff_rows(capsys, queue, "--since", first["dfki"]) == changed
    later = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
    assert diff_rows(capsys, queue, "--since", later) == []
    assert main(["jobs", "run", str(spec)]) == 0
    assert "2 unit(s), 0 queued, 2 unchanged" in capsys.readouterr().out
    assert diff_rows(capsys, queue) == []
    again = diff_rows(capsys, queue, "--all")
    assert len(again) == 2 * len(mine) and {r["note"] for r in again} == {"same inputs (key)"}
    capsys.readouterr()
    assert main(["jobs", "diff", "--queue", queue]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == ("0 value(s) changed: 0 significant, 0 not, 0 without a"
                                                        " test; --all lists the unchanged ones too")


def test_diff_of_a_tiny_case_by_hand(fixtures_dir, tmp_path, capsys):
    """The demo, shallow's instances 1-3 given their true leaves (feline → jaguar, feline → house cat, canine →
    wolf): its micro hR goes from 14/26 to 17/26 (each of the three instances 2/3 → 3/3, the others as they
    were); its micro hP stays 14/14 = 17/17 = 1 (not listed). Sign test: n = 3 instances differ, all three up:
    p = 2 · (1/2)³ = 0.25. Permutation test, exact (2⁸ = 256 ≤ 1000 swaps): Δ* = (±1 ± 1 ± 1)/26, so
    P(Δ* ≥ 3/26) = 1/8 and p = 2 · 1/8 = 0.25. Wilcoxon: three tied differences of 1/3, W+ = 6, mean 3, variance
    3·4·7/24 - (3³ - 3)/48 = 3, z = √3: p = erfc(√3 / √2)."""
    spec = make_job(tmp_path, fixtures_dir)
    queue = str(tmp_path / "q.duckdb")
    assert main(["jobs", "run", str(spec)]) == 0
    shallow = tmp_path / "preds" / "shallow.tsv"
    lines = shallow.read_text().splitlines(keepends=True)
    assert lines[:3] == ["1\tfeline\n", "2\tfeline\n", "3\tcanine\n"]
    shallow.write_text("".join(["1\tjaguar\n", "2\thouse cat\n", "3\twolf\n", *lines[3:]]))
    assert main(["jobs", "run", str(spec)]) == 0
    hand = {"sign": 0.25, "permutation": 0.25, "wilcoxon": math.erfc(math.sqrt(3) / math.sqrt(2))}
    for test, p in hand.items():
        rows = [r for r in diff_rows(capsys, queue, "--test", test) if r["dataset"] == "demo"]
        assert [(r["system"], r["metric"], r["average"]) for r in rows] == [("shallow", "hierarchical_recall",
                                                                            "micro")]
        row = rows[0]
        assert (float(row["previous"]), float(row["current"])) == (14 / 26, 17 / 26)
        assert math.isclose(float(row["change"]), 3 / 26, rel_tol=1e-12)
        assert math.isclose(float(row["p_value"]), p, rel_tol=1e-12), test
        assert row["significant"] == "no"


def test_a_run_without_per_instance_values_is_not_a_false_alarm(fixtures_dir, tmp_path, capsys):
    """A run of a hiersql that stored no per-instance values (its rows deleted here, as such a run left none;
    then a queue without their tables or the views at all, opened read-only): its changes are listed with
    ``n/a`` and why, never as significant; a run that writes adds the tables and views again."""
    spec = make_job(tmp_path, fixtures_dir)
    queue = tmp_path / "q.duckdb"
    assert main(["jobs", "run", str(spec)]) == 0
    first = {r["system"]: r["run_id"] for r in jobs_results(capsys, queue)}
    shallow = tmp_path / "preds" / "shallow.tsv"
    shallow.write_text(shallow.read_text().replace("1\tfeline\n", "1\tjaguar\n"))
    assert main(["jobs", "run", str(spec)]) == 0
    tested = diff_rows(capsys, str(queue))
    assert tested and {r["significant"] for r in tested} == {"no"}
    with duckdb.connect(str(queue)) as con:
        con.execute("DELETE FROM instance_values WHERE run_id = ?", [first["shallow"]])
    rows = diff_rows(capsys, str(queue))
    assert [r["metric"] for r in rows] == [r["metric"] for r in tested]
    assert {(r["significant"], r["p_value"], r["note"]) for r in rows} == {
        ("n/a", "", f"run {first['shallow']} stored no per-instance values of this measure (computed before they"
                    " were stored)")}
    latest = jobs_results(capsys, queue)
    with duckdb.connect(str(queue)) as con:  # a queue of an earlier hiersql
        con.execute("DROP VIEW latest")
        con.execute("DROP VIEW unit_results")
        con.execute("DROP TABLE instance_values")
        con.execute("DROP TABLE instance_items")
    assert jobs_results(capsys, queue) == latest
    assert [(r["significant"], r["p_value"]) for r in diff_rows(capsys, str(queue))] == [("n/a", "")] * len(rows)
    with duckdb.connect(str(queue), read_only=True) as con:
        assert {t for (t,) in con.execute("SHOW TABLES").fetchall()} == {"jobs", "units", "results", "attempts"}
    assert main(["jobs", "run", str(spec)]) == 0
    with duckdb.connect(str(queue), read_only=True) as con:
        assert {"latest", "unit_results", "instance_values", "instance_items"} <= {
            t for (t,) in con.execute("SHOW TABLES").fetchall()}


def rows_of(queue: str, sql: str) -> list[tuple]:
    if queue.startswith("postgresql://"):
        with psycopg.connect(queue) as con:
            return con.execute(sql).fetchall()
    with duckdb.connect(queue, read_only=True) as con:
        return con.execute(sql).fetchall()


def test_the_latest_view_is_jobs_results(queue, fixtures_dir, tmp_path, capsys):
    """``SELECT * FROM latest`` in the queue database (a dashboard's query) gives the rows of ``jobs results``:
    after an edit, and with a second job on the queue whose dataset has the same name."""
    spec = make_job(tmp_path, fixtures_dir)
    spec.write_text(spec.read_text().replace('queue = "q.duckdb"', f'queue = "{queue}"'))
    other = tmp_path / "other.toml"
    other.write_text(f'name = "other"\nqueue = "{queue}"\nmetrics = ["hp"]\n[options]\naverage = ["micro"]\n'
                     'include_root = true\n[[dataset]]\nname = "demo"\ntaxonomy = "taxonomy.tsv"\ntruth = "truth.tsv"\n'
                     'predictions = "preds/shallow.tsv"\n', encoding="utf-8")
    assert main(["jobs", "run", str(spec)]) == 0
    shallow = tmp_path / "preds" / "shallow.tsv"
    shallow.write_text(shallow.read_text().replace("1\tfeline\n", "1\tjaguar\n"))
    assert main(["jobs", "run", str(spec)]) == 0
    assert main(["jobs", "run", str(other)]) == 0
    shown = {(r["dataset"], r["system"], r["metric"], r["average"], float(r["value"]), r["key"], r["run_id"],
              r["job_id"]) for r in jobs_results(capsys, queue)}
    view = rows_of(queue, "SELECT dataset, system, metric, average, value, key, run_id, job_id FROM latest"
                          " WHERE metric IS NOT NULL")
    assert len(view) == len(shown) == 4 * 2 + 1
    assert {(d, s, m, a or "", v, k, r, j) for d, s, m, a, v, k, r, j in view} == shown
    names = {n for (n,) in rows_of(queue, "SELECT DISTINCT name FROM latest")}
    assert names == {"demo-job", "other"}


def test_prune_keeps_what_latest_shows(queue, fixtures_dir, tmp_path, capsys):
    """Three runs of every key (two ``--recompute``): ``prune --keep 2`` removes the oldest run of each of the
    4 keys, ``--keep 1`` the next, each run with its rows and per-instance tables, in one transaction, and says
    so; ``jobs results`` (the latest runs) and ``jobs diff`` are as before; no per-instance table is left without
    its item ids. ``--keep 0`` is bad input."""
    spec = make_job(tmp_path, fixtures_dir)
    spec.write_text(spec.read_text().replace('queue = "q.duckdb"', f'queue = "{queue}"'))
    assert main(["jobs", "run", str(spec)]) == 0
    for _ in range(2):
        assert main(["jobs", "run", str(spec), "--recompute"]) == 0
    latest = jobs_results(capsys, queue)
    history = jobs_results(capsys, queue, "--history")
    runs = sorted({(r["run_id"], r["key"]) for r in history})
    assert len(runs) == 3 * 4 and len(history) == 3 * len(latest)
    tables = rows_of(queue, "SELECT count(*) FROM instance_values")[0][0]
    assert tables == 3 * 4  # one per unit run: the set-based family's
    before = diff_rows(capsys, queue, "--all")
    for keep in (2, 1):
        capsys.readouterr()
        assert main(["jobs", "prune", "--queue", queue, "--keep", str(keep)]) == 0
        out = capsys.readouterr().out.splitlines()
        assert len(out) == 5 and all(line.startswith("removed demo") for line in out[:4])
        assert out[4] == (f"pruned 4 run(s) of 4 key(s): {len(latest)} result row(s), 4 per-instance table(s), 0"
                          f" list(s) of item ids; kept the {keep} latest run(s) of each key")
        assert jobs_results(capsys, queue) == latest
        assert len(jobs_results(capsys, queue, "--history")) == keep * len(latest)
        assert rows_of(queue, "SELECT count(*) FROM instance_values")[0][0] == keep * 4
    assert diff_rows(capsys, queue, "--all") == before
    assert rows_of(queue, "SELECT count(*) FROM instance_values v LEFT JOIN instance_items i ON i.digest = v.items"
                          " WHERE i.digest IS NULL")[0][0] == 0
    capsys.readouterr()
    assert main(["jobs", "prune", "--queue", queue, "--keep", "1"]) == 0
    assert capsys.readouterr().out == "nothing to prune: no key has more than 1 run(s)\n"
    assert main(["jobs", "prune", "--queue", queue, "--keep", "0"]) == 2
    assert capsys.readouterr().err == "hiersql: error: --keep: must be at least 1: 0\n"


@pytest.mark.parametrize(("flags", "said"), [
    (["--since", "yesterday"], "--since: neither a run of the queue nor a date (YYYY-MM-DD[THH:MM[:SS]], UTC):"
                               " 'yesterday'"),
    (["--alpha", "1.5"], "--alpha: must lie strictly between 0 and 1: 1.5"),
    (["--bootstrap", "0"], "--bootstrap: must be at least 1: 0"),
    (["--job", "nope"], "{q}: no such job in the queue: 'nope'"),
])
def test_bad_flags_of_diff(fixtures_dir, tmp_path, capsys, flags, said):
    spec = make_job(tmp_path, fixtures_dir)
    queue = tmp_path / "q.duckdb"
    assert main(["jobs", "run", str(spec)]) == 0
    capsys.readouterr()
    assert main(["jobs", "diff", "--queue", str(queue), *flags]) == 2
    assert capsys.readouterr().err == f"hiersql: error: {said.format(q=queue)}\n"


def trend_values(page: Path, system: str, measure: str) -> str:
    """The ``data-values`` of a system's sparkline of ``measure`` in the report's trend table."""
    table = re.search(r"<table class='trend sortable'>(.*?)</table>", page.read_text(encoding="utf-8"), re.S).group(1)
    measures = [unescape(m) for m in re.findall(r"<th>(.*?)</th>", table)]
    row = re.search(rf"<tr><td class='system' data-sort='{system}'>{system}</td>(.*?)</tr>", table).group(1)
    cells = re.findall(r"<td data-sort='[^']*'>(.*?)</td>", row)
    return re.search(r"data-values='([^']*)'", cells[measures.index(measure)]).group(1)


def test_the_report_shows_each_systems_trend(fixtures_dir, tmp_path, capsys):
    """Five submissions of the demo job: as run, shallow's instance 1 given its leaf, unchanged, shallow given an
    unknown label (its unit fails: no value), restored: the trend of shallow's micro hR holds the value of each
    submission (a gap for the failed one), those ``jobs results`` showed after each; the change beside it is the
    last one, which ``jobs diff`` lists."""
    spec = make_job(tmp_path, fixtures_dir)
    queue = tmp_path / "q.duckdb"
    shallow = tmp_path / "preds" / "shallow.tsv"
    shown = []

    def run(code: int = 0) -> None:
        assert main(["jobs", "run", str(spec)]) == code
        values = [float(r["value"]) for r in jobs_results(capsys, queue)
                  if (r["dataset"], r["system"], r["metric"]) == ("demo", "shallow", "hierarchical_recall")]
        shown.append(f"{values[0]:.6g}" if values else "")

    run()
    shallow.write_text(shallow.read_text().replace("1\tfeline\n", "1\tjaguar\n"))
    edited = shallow.read_text()
    run()
    run()
    shallow.write_text(edited.replace("1\tjaguar\n", "1\tpuma\n"))
    run(1)
    shallow.write_text(edited)
    run()
    assert shown[0] != shown[1] == shown[2] == shown[4] and shown[3] == ""
    page = report(capsys, queue, tmp_path / "r.html")
    assert trend_values(page, "shallow", "hr micro") == ";".join(shown)
    assert trend_values(page, "cautious", "hr micro").count(";") == 4


@pytest.mark.parametrize("options", [{}, {"lca_graph": "optimal", "pairing": "nearest", "max_distance": 2},
                                     {"include_root": True, "beta": 2.0}])
def test_per_instance_tables_of_the_evaluations_stages_are_those_computed_afresh(fixtures_dir, options):
    """A worker's per-instance tables read the stages its evaluation made (``Engine.reuse_stages``): for every
    family that applies to the demo, the table after the evaluation equals the one a fresh engine computes,
    with several options; the evaluation's values are those of an engine without reuse; evaluated again, the
    same rows."""
    from hiersql.engines import DuckDBEngine
    from hiersql.errors import InputError
    from hiersql.measures import REGISTRY, compute, plan_of
    from hiersql.options import make_options

    demo = fixtures_dir / "demo"
    store = Evaluator(demo / "taxonomy.tsv").add_truth(demo / "truth.tsv") \
        .add_predictions("shallow", demo / "shallow.tsv").add_predictions("cautious", demo / "cautious.tsv").store
    opts = make_options(average=["micro", "macro"], **options)
    checked = []

    def same(a: list, b: list) -> bool:  # rows equal, a NaN (not defined) equal to a NaN
        return [repr(r) for r in a] == [repr(r) for r in b]

    for name in REGISTRY:
        plan = plan_of(name)
        reused = DuckDBEngine(store)
        reused.reuse_stages()
        try:
            rows = compute(reused, [name], opts)
        except InputError:  # the family does not apply to the demo (scores, ranks)
            continue
        assert same(rows, compute(DuckDBEngine(store), [name], opts))
        metrics = [m for m in plan.metrics if m in {r.metric for r in rows}]
        table = reused.per_instance(plan, opts, metrics).to_pandas()
        assert table.equals(DuckDBEngine(store).per_instance(plan, opts, metrics).to_pandas()), name
        assert same(compute(reused, [name], opts), rows)
        checked.append(name)
    assert {"set_based", "flat", "confusion", "pair_based", "lca"} <= set(checked)
