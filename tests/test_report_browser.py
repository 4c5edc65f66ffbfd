"""The HTML report in a real headless Chromium (Debian's ``chromium``; ``.ci/run`` installs it).

How: ``chromium --headless --enable-logging=stderr --v=0`` prints every console message and uncaught error of
the page as a ``:CONSOLE`` line on stderr (the page itself writes none), ``--dump-dom`` prints the DOM after
the page's script ran (its sorting script marks the table headers ``sortable``: proof that it ran), and
``--screenshot`` writes a PNG of the window. To measure the layout the test loads a copy of the page with one
extra line of script that writes the page's scroll width into the DOM (the report has no such line).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from matplotlib.image import imread

from hiersql.cli import main

WIDTH = 1400


@pytest.fixture(scope="module")
def chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.fail("chromium not found (apt-get install chromium; .ci/run does it)")
    return path


def run_chromium(chromium: str, page: Path, *flags: str, height: int = 1000) -> subprocess.CompletedProcess:
    return subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
         "--enable-logging=stderr", "--v=0", f"--window-size={WIDTH},{height}", *flags, page.as_uri()],
        capture_output=True, text=True, timeout=180, check=True,
    )


def console_lines(result: subprocess.CompletedProcess) -> list[str]:
    return [line for line in result.stderr.splitlines() if ":CONSOLE" in line]


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory, fixtures_dir) -> Path:
    folder = fixtures_dir / "demo"
    out = tmp_path_factory.mktemp("report") / "demo"
    assert main(["report", "--taxonomy", str(folder / "taxonomy.tsv"), "--truth", str(folder / "truth.tsv"),
                 "--pred", str(folder / "[cfs]*.tsv"), "--metrics", "hf,gie,mgia,lca_f1,hcm_f1",
                 "--bootstrap", "200", "--out", str(out)]) == 0
    return out / "index.html"


def test_console_errors_are_seen(chromium, tmp_path):
    """The check below can fail: a page with an error shows up as :CONSOLE lines."""
    page = tmp_path / "bad.html"
    page.write_text("<!doctype html><html><body><script>console.error('boom'); missing();</script></body></html>")
    lines = console_lines(run_chromium(chromium, page, "--dump-dom"))
    assert any("boom" in line for line in lines) and any("missing is not defined" in line for line in lines)


def test_demo_report_loads_without_console_errors(chromium, demo_report):
    html = demo_report.read_text(encoding="utf-8")
    assert not re.search(r"(src|href)=['\"]?(https?:)?//", html)  # nothing from the network
    result = run_chromium(chromium, demo_report, "--dump-dom")
    assert console_lines(result) == []
    dom = result.stdout
    # the sorting script ran: every header of the two sortable tables got the class
    assert dom.count('class="sortable"') + dom.count('class="system sortable"') >= 2 * 1 + 5
    ranking = re.search(r"<table class=\"ranking sortable\">(.*?)</table>", dom, re.S).group(1)
    rows = re.findall(r"<tr>(.*?)</tr>", ranking, re.S)
    assert len(rows) == 1 + 3  # header + three systems
    assert [re.search(r"data-sort=\"([^\"]+)\"", r).group(1) for r in rows[1:]] == [
        "flat_errors", "cautious", "shallow"]  # in hF (micro) order
    images = re.findall(r"<img alt=\"([^\"]+)\" src=\"data:image/svg\+xml;base64,", dom)
    assert images == ["values with confidence intervals", "Kendall's tau between measures", "confusion matrices"]
    for section in ("ranking", "intervals", "agreement", "depth", "confusion", "provenance"):
        assert f'<section id="{section}">' in dom
    assert "hiersql report --taxonomy" in dom and "SHA-256" in dom


def test_demo_report_screenshot(chromium, demo_report, tmp_path):
    shot = tmp_path / "shot.png"
    run_chromium(chromium, demo_report, f"--screenshot={shot}", height=2000)
    image = imread(shot)
    assert image.shape[:2] == (2000, WIDTH)
    assert shot.stat().st_size > 50_000  # tables, charts and text, not a blank page
    grey = image[..., :3].mean(axis=2)
    assert grey.std() > 0.05 and (grey < 0.5).mean() > 0.005  # dark text and chart pixels on white


def _scroll_width(chromium: str, page: Path, tmp_path: Path) -> int:
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text(encoding="utf-8").replace(
        "</body>", "<script>document.body.dataset.width = document.documentElement.scrollWidth;</script></body>"),
        encoding="utf-8")
    dom = run_chromium(chromium, probe, "--dump-dom").stdout
    return int(re.search(r'data-width="(\d+)"', dom).group(1))


def test_germeval_report_fits_a_laptop_screen(chromium, data_dir, tmp_path):
    g = data_dir / "germeval2019"
    names = ["twistbytes__sklearn_hier_threshold_and_roots_baseline_thresholding", "Averbis__BOHB_CNN",
             "LT-UHH__baseline", "EricssonResearch__fconv_A6C1Y", "HSHL__LogisticRegression_NaiveBayes1",
             "knowcup__DL_single_test"]
    out = tmp_path / "germeval.html"
    assert main(["report", "--taxonomy", str(g / "hierarchy.txt"), "--truth", str(g / "blurbs_test_label.txt"),
                 *[f"--pred={n}={g / 'submissions' / f'{n}.txt'}" for n in names],
                 "--labels-format", "germeval-b", "--metrics", "hf,example_f1,label_f1,hcm_f1",
                 "--bootstrap", "200", "--out", str(out)]) == 0
    result = run_chromium(chromium, out, "--dump-dom")
    assert console_lines(result) == []
    dom = result.stdout
    assert len(re.findall(r"<tr>", re.search(r"class=\"ranking sortable\">(.*?)</table>", dom, re.S).group(1))) == 7
    assert 'id="depth"' in dom and "depth 1" in dom and "depth 2" in dom
    # the whole page (the widest table included) fits the 1,400 px window: no horizontal scrolling
    assert _scroll_width(chromium, out, tmp_path) <= WIDTH


def test_one_system_report_shows_its_values_without_a_ranking(chromium, data_dir, tmp_path, capsys):
    """A report of one system: its values (those ``evaluate`` prints) with their intervals, the depth and
    confusion sections, and no rank, group, test or agreement between measures (τ needs two systems)."""
    canonical, out = data_dir / "canonical", tmp_path / "one.html"
    args = ["--taxonomy", str(canonical / "taxonomy.tsv"), "--truth", str(canonical / "truth_b.tsv"),
            "--pred", str(canonical / "pred_b" / "Averbis__BOHB_CNN.tsv"), "--metrics", "hf,lca_f1",
            "--average", "micro"]
    assert main(["evaluate", *args, "--format", "csv"]) == 0
    values = [float(line.split(",")[3]) for line in capsys.readouterr().out.splitlines()[1:]]
    assert main(["report", *args, "--bootstrap", "200", "--out", str(out)]) == 0
    result = run_chromium(chromium, out, "--dump-dom")
    assert console_lines(result) == []
    dom = result.stdout
    instances = {line.split("\t")[0] for line in (canonical / "truth_b.tsv").read_text(encoding="utf-8").splitlines()}
    assert f"1 system, {len(instances):,} instances, 2 measures." in dom
    cells = re.findall(r"<td data-sort=\"1\">([0-9.]+)<span class=\"ci\">\[([0-9.]+), ([0-9.]+)\]</span></td>", dom)
    assert [float(value) for value, _, _ in cells] == [round(v, 4) for v in values]  # hf, lca_f1 micro
    assert all(float(low) <= float(value) <= float(high) for value, low, high in cells)
    assert 'class="rank"' not in dom and 'class="best"' not in dom
    for section in ("ranking", "intervals", "depth", "confusion", "provenance"):
        assert f'<section id="{section}">' in dom
    assert 'id="agreement"' not in dom and "Kendall" not in dom


@pytest.fixture(scope="module")
def nightly_report(tmp_path_factory, data_dir) -> Path:
    """The report of the nightly job of issue 38 (46 units): GermEval 2019 subtasks A (21 systems) and B (19)
    and transposon (6), hp, hr, hf, lca_f1, mgia and the HCM's 13 measures, micro and macro (32 measures, 1,472
    rows)."""
    canonical = data_dir / "canonical"
    folder = tmp_path_factory.mktemp("nightly")
    spec = folder / "nightly.toml"
    datasets = "".join(f'[[dataset]]\nname = "{name}"\ntaxonomy = "{canonical / taxonomy}"\n'
                       f'truth = "{canonical / f"truth_{name}.tsv"}"\n'
                       f'predictions = "{canonical / f"pred_{name}"}/*.tsv"\n'
                       for name, taxonomy in (("a", "taxonomy.tsv"), ("b", "taxonomy.tsv"),
                                              ("transposon", "taxonomy_transposon.tsv")))
    spec.write_text('name = "nightly"\nqueue = "q.duckdb"\nmetrics = ["hp", "hr", "hf", "lca_f1", "mgia", "hcm"]\n'
                    f'[options]\naverage = ["micro", "macro"]\n{datasets}', encoding="utf-8")
    for _ in range(2):  # the second night: nothing changed (every unit skipped), a trend of two submissions
        assert main(["jobs", "run", str(spec)]) == 0
    out = folder / "report.html"
    assert main(["report", "--db", str(folder / "q.duckdb"), "--job", "nightly", "--out", str(out)]) == 0
    return out


def test_job_report_fits_a_laptop_screen(chromium, nightly_report, tmp_path):
    """The 46-unit job's page: at most 1 MB; no console error; its ranking tables of the 10 measures the job
    file names one by one (systems as rows), the other 22 behind a toggle, and the trend of those 10 (a
    sparkline per system and measure); the page does not scroll sideways at 1,400 px, also with every toggle
    open, and no system name is squeezed (it was one letter per line in a table of 34 columns)."""
    assert nightly_report.stat().st_size <= 1_000_000
    probe = tmp_path / "probe.html"
    probe.write_text(nightly_report.read_text(encoding="utf-8").replace("</body>", """<script>
var b = document.body.dataset, page = document.scrollingElement, cells = function () {
  return Math.min.apply(null, Array.from(document.querySelectorAll("table.ranking td.system"))
    .filter(function (td) { return td.offsetParent !== null; })
    .map(function (td) { return td.getBoundingClientRect().width; })); };
b.closed = page.scrollWidth + " " + window.innerWidth + " " + Math.floor(cells());
document.querySelectorAll("details").forEach(function (d) { d.open = true; });
b.opened = page.scrollWidth + " " + window.innerWidth + " " + Math.floor(cells());
</script></body>"""), encoding="utf-8")
    result = run_chromium(chromium, probe, "--dump-dom")
    assert console_lines(result) == []
    dom = result.stdout
    for state in ("closed", "opened"):
        scroll, inner, narrowest = map(int, re.search(rf'data-{state}="(\d+) (\d+) (\d+)"', dom).groups())
        assert inner == WIDTH and scroll <= inner, (state, scroll, inner)
        assert narrowest >= 150, (state, narrowest)  # px: a name of 24 characters on one line
    tables = re.findall(r"<table class=\"ranking sortable\">(.*?)</table>", dom, re.S)
    assert len(tables) == 4 * 3  # per dataset: the chosen measures, the others in tables as wide
    heads = [re.findall(r"<th[^>]*>([^<]*)</th>", t) for t in tables]
    assert heads[0][1:] == [f"{m} {a}" for m in ("hp", "hr", "hf", "lca_f", "mgia") for a in ("macro", "micro")]
    assert [len(h) - 1 for h in heads] == [10, 10, 10, 2] * 3
    assert [t.count("<tr>") - 1 for t in tables] == [21] * 4 + [19] * 4 + [6] * 4
    trends = re.findall(r"<table class=\"trend sortable\">(.*?)</table>", dom, re.S)
    assert [t.count("<svg") for t in trends] == [21 * 10, 19 * 10, 6 * 10]
    assert [re.findall(r"<th[^>]*>([^<]*)</th>", t) for t in trends] == [heads[0]] * 3
    shot = tmp_path / "shot.png"
    run_chromium(chromium, nightly_report, f"--screenshot={shot}", height=1400)
    image = imread(shot)
    assert image.shape[:2] == (1400, WIDTH)
    grey = image[..., :3].mean(axis=2)
    assert grey.std() > 0.05 and (grey < 0.5).mean() > 0.005  # text on white, not a blank page
