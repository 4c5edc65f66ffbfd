"""The HTML report; its figures are :mod:`hiersql.analyses.figures`.

The report (:func:`html_page`, :func:`comparison_sections`): a self-contained page (figures inline as SVG, a
small inline sorting script, no network resource) of a :class:`hiersql.analyses.compare.Comparison`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .figures import confusion_grid, dot_plots, svg_base64, tau_heatmap

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from ..inputs.store import Store

_STYLE = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222;margin:0 auto;
     max-width:1360px;padding:1.2em 1.5em}
h1{font-size:1.6em;margin:.2em 0}h2{font-size:1.25em;margin:1.6em 0 .4em;border-bottom:1px solid #ddd}
p.note{color:#555;max-width:70em;margin:.3em 0 .8em}
nav a{margin-right:1.2em}
.scroll{overflow-x:auto}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}
th,td{padding:.25em .55em;border-bottom:1px solid #e4e4e4;text-align:right;vertical-align:top}
th{background:#f4f4f4;position:sticky;top:0;font-weight:600}
th.sortable{cursor:pointer}th.sortable:hover{background:#e8e8e8}
td.system,th.system{text-align:left;max-width:24em;overflow-wrap:anywhere}
table.ranking td.system{min-width:12em}
td .ci{display:block;color:#777;font-size:.8em}
td .rank{color:#555;font-size:.8em;margin-left:.3em}
td.best{background:#fbe3d4}td.same{background:#dcecf7}
img{max-width:100%;height:auto}
code,pre{font:13px ui-monospace,Menlo,Consolas,monospace}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f6f6f6;padding:.6em}
h3{font-size:1em;margin:1em 0 .2em;overflow-wrap:anywhere}
.panels{display:flex;flex-wrap:wrap;gap:.5em}
svg.reliability{font-size:10px;fill:#222}
svg.reliability .title{font-size:11px;font-weight:600}
svg.reliability .grid{stroke:#e4e4e4}
svg.reliability .diagonal{stroke:#999;stroke-dasharray:4 3}
svg.reliability .curve{fill:none;stroke:#0072B2;stroke-width:1.5}
svg.reliability circle.bin{fill:#0072B2;fill-opacity:.55;stroke:#0072B2}
"""

# click a header to sort the table by that column (numbers by value); no external script
_SORT_SCRIPT = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th").forEach(function (th, col) {
    th.classList.add("sortable");
    th.addEventListener("click", function () {
      var body = table.tBodies[0], rows = Array.from(body.rows);
      var up = th.dataset.dir !== "asc";
      rows.sort(function (a, b) {
        var x = a.cells[col].dataset.sort, y = b.cells[col].dataset.sort;
        var nx = parseFloat(x), ny = parseFloat(y);
        var c = isNaN(nx) || isNaN(ny) ? String(x).localeCompare(String(y)) : nx - ny;
        return up ? c : -c;
      });
      th.dataset.dir = up ? "asc" : "desc";
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
"""


def ranking_table(ranking: pd.DataFrame, systems: list[str] | None = None) -> str:
    """The ranking as an HTML table: a row per system (``systems``' order, by default the first measure's),
    per measure the value, its interval and ``rank`` + group letter; the best system's cell and its group's
    are shaded. ``data-sort`` holds the rank, so that sorting a column orders by that measure."""
    from html import escape

    from .compare import group_letter, ordered_systems, rank_text

    systems = ordered_systems(ranking) if systems is None else systems
    ranked = len(systems) > 1  # one system: no rank, group or shading
    measures = list(dict.fromkeys(ranking["measure"]))
    cells = {(c.measure, c.system): c for c in ranking.itertuples(index=False)}  # (a .loc per cell: 1 ms each)
    head = "".join(f"<th>{escape(m)}</th>" for m in measures)
    lines = [f"<table class='ranking sortable'><thead><tr><th class='system'>system</th>{head}</tr></thead><tbody>"]
    for system in systems:
        row = [f"<td class='system' data-sort='{escape(system)}'>{escape(system)}</td>"]
        for measure in measures:
            c = cells.get((measure, system))
            if c is None:  # no row for the measure (hard predictions at k > 1): an empty cell, sorted last
                row.append(f"<td data-sort='{len(systems) + 1}'></td>")
                continue
            letter = group_letter(c.group) if ranked else ""
            shade = "" if letter != "a" else " class='best'" if c.rank == 1 else " class='same'"
            interval = "" if c.ci_low != c.ci_low else f"<span class='ci'>[{c.ci_low:.4f}, {c.ci_high:.4f}]</span>"
            rank = rank_text(c.rank)
            order = len(systems) + 1 if rank == "-" else rank  # unranked last
            shown = f"<span class='rank'>{rank}{letter}</span>" if ranked else ""
            row.append(f"<td{shade} data-sort='{order}'>{c.value:.4f}{shown}{interval}</td>")
        lines.append("<tr>" + "".join(row) + "</tr>")
    lines.append("</tbody></table>")
    return "\n".join(lines)


def depth_table(breakdown: pd.DataFrame, systems: list[str]) -> str:
    """The per-depth breakdown (``system, depth, metric, value, n``) as a table: systems as rows, one column
    per depth (with its number of instances), cells shaded by value."""
    from html import escape

    wide = breakdown.pivot(index="system", columns="depth", values="value").reindex(systems)
    counts = breakdown.groupby("depth")["n"].max()
    metric = str(breakdown["metric"].iloc[0]) if len(breakdown) else ""
    head = "".join(f"<th>depth {d}<br><small>n = {int(counts[d]):,}</small></th>" for d in wide.columns)
    lines = [f"<table class='depth sortable'><thead><tr><th class='system'>system</th>{head}</tr></thead><tbody>"]
    for system, row in wide.iterrows():
        cells = [f"<td class='system' data-sort='{escape(str(system))}'>{escape(str(system))}</td>"]
        for value in row:
            if value != value:
                cells.append("<td data-sort=''></td>")
                continue
            light = int(255 - 90 * value)  # white (0) to a mid blue (1)
            cells.append(f"<td data-sort='{value!r}' style='background:rgb({light},{min(255, light + 30)},255)'>"
                         f"{value:.3f}</td>")
        lines.append("<tr>" + "".join(cells) + "</tr>")
    lines.append("</tbody></table>")
    return f"<p class='note'>Mean per-instance {escape(metric)} by the depth of the instance's deepest true " \
           f"label.</p>" + "\n".join(lines)


RELIABILITY_BINS = 10  # equal-width bins of the report's reliability diagrams
PANEL, PLOT_LEFT, PLOT_TOP, PLOT = 210, 40, 26, 150  # px: a diagram's side, its plot area's corner and side


def reliability_diagram(bins: pd.DataFrame, title: str, ece: float, **data: object) -> str:
    """One reliability diagram as inline SVG (no script): the dashed diagonal of perfect calibration and
    one dot per non-empty bin of ``bins`` (``bin, n, mean_score, fraction_positive``) at (mean score,
    fraction of true nodes), its area proportional to ``n``, joined in bin order; ``title`` and the ECE
    above. Every dot carries its values as ``data-*`` attributes and a tooltip; ``data`` adds attributes to
    the ``<svg>`` (``system``, ``level``)."""
    from html import escape

    def x(v: float) -> str:
        return f"{PLOT_LEFT + PLOT * v:.2f}"

    def y(v: float) -> str:
        return f"{PLOT_TOP + PLOT * (1 - v):.2f}"

    largest = float(bins["n"].max()) if len(bins) else 1.0
    grid = "".join(f"<line x1='{x(t)}' y1='{y(0)}' x2='{x(t)}' y2='{y(1)}' class='grid'/>"
                   f"<line x1='{x(0)}' y1='{y(t)}' x2='{x(1)}' y2='{y(t)}' class='grid'/>"
                   f"<text x='{x(t)}' y='{PLOT_TOP + PLOT + 13}' text-anchor='middle'>{t:g}</text>"
                   f"<text x='{PLOT_LEFT - 4}' y='{float(y(t)) + 4:.2f}' text-anchor='end'>{t:g}</text>"
                   for t in (0.0, 0.5, 1.0))
    points = " ".join(f"{x(r.mean_score)},{y(r.fraction_positive)}" for r in bins.itertuples())
    dots = "".join(
        f"<circle class='bin' cx='{x(r.mean_score)}' cy='{y(r.fraction_positive)}' "
        f"r='{max(1.5, 7 * (r.n / largest) ** 0.5):.2f}' data-bin='{int(r.bin)}' data-n='{int(r.n)}' "
        f"data-mean-score='{float(r.mean_score)!r}' data-fraction-positive='{float(r.fraction_positive)!r}'>"
        f"<title>bin {int(r.bin) + 1}: {int(r.n):,} pairs, mean score {r.mean_score:.3f}, "
        f"fraction true {r.fraction_positive:.3f}</title></circle>" for r in bins.itertuples())
    attributes = "".join(f" data-{k}='{escape(str(v))}'" for k, v in data.items())
    return (f"<svg class='reliability' role='img' width='{PANEL}' height='{PANEL}' viewBox='0 0 {PANEL} {PANEL}'"
            f"{attributes} data-ece='{float(ece)!r}' aria-label='{escape(title)}: reliability diagram'>"
            f"<text x='{PLOT_LEFT}' y='15' class='title'>{escape(title)} · ECE {ece:.3f}</text>{grid}"
            f"<line x1='{x(0)}' y1='{y(0)}' x2='{x(1)}' y2='{y(1)}' class='diagonal'/>"
            f"<text x='{x(0.5)}' y='{PANEL - 4}' text-anchor='middle'>mean score</text>"
            f"<text transform='translate(11 {y(0.5)}) rotate(-90)' text-anchor='middle'>fraction true</text>"
            f"<polyline points='{points}' class='curve'/>{dots}</svg>")


def calibration_table(summary: pd.DataFrame, systems: list[str]) -> str:
    """Per (system, level) of :func:`hiersql.analyses.calibration.calibration_by_level`: pairs, Brier score, log
    loss and ECE with equal-width and equal-mass bins."""
    from html import escape

    head = "".join(f"<th>{h}</th>" for h in ("level", "pairs", "Brier", "log loss", "ECE (equal width)",
                                             "ECE (equal mass)"))
    lines = [f"<table class='calibration sortable'><thead><tr><th class='system'>system</th>{head}</tr></thead>"
             "<tbody>"]
    order = summary.assign(position=summary["system"].map({s: i for i, s in enumerate(systems)}))
    for r in order.sort_values(["position", "level"]).itertuples():
        level = "all" if r.level == 0 else str(int(r.level))
        cells = [f"<td class='system' data-sort='{escape(str(r.system))}'>{escape(str(r.system))}</td>",
                 f"<td data-sort='{int(r.level)}'>{level}</td>", f"<td data-sort='{int(r.n)}'>{int(r.n):,}</td>"]
        cells += [f"<td data-sort='{float(v)!r}'>{v:.4f}</td>"
                  for v in (r.brier, r.log_loss, r.ece_uniform, r.ece_quantile)]
        lines.append("<tr>" + "".join(cells) + "</tr>")
    lines.append("</tbody></table>")
    return "\n".join(lines)


def calibration_section(store: Store, systems: list[str], n_bins: int = RELIABILITY_BINS,
                        summary: pd.DataFrame | None = None) -> tuple[str, str, str] | None:
    """The report's calibration section (``(id, heading, html)``) for the systems whose predictions carry
    scores, in the order of ``systems``: the table of :func:`calibration_table` and one row of
    :func:`reliability_diagram` per system, one diagram per level (level 0: every level pooled), ``n_bins``
    equal-width bins (:mod:`hiersql.analyses.calibration`; ``summary``: ``calibration_by_level(store, n_bins)`` when
    already computed). ``None`` when no prediction has a score."""
    from html import escape

    from .calibration import calibration_by_level, reliability, scored_systems

    scored = scored_systems(store)
    if not scored:
        return None
    note = (f"Every scored (instance, node) pair is a forecast that the node is in the instance's true set "
            f"closed under ancestors. Per level (<i>all</i>: every level pooled) the scores are cut into {n_bins} "
            f"equal-width bins; a dot is a non-empty bin at (mean score, fraction of its pairs that are true), "
            "its area proportional to the bin's pairs; on the dashed diagonal the scores are calibrated. "
            "ECE = Σ<sub>b</sub> (n<sub>b</sub> / N) |fraction true<sub>b</sub> − mean score<sub>b</sub>| "
            "(Naeini et al. 2015; Guo et al. 2017).")
    unscored = [s for s in systems if s not in scored]
    outside = [s for s in systems if scored.get(s)]
    if unscored:
        note += " No scores: " + escape(", ".join(unscored)) + "."
    if outside:
        note += " Scores outside [0, 1] (not probabilities), left out: " + escape(", ".join(outside)) + "."
    shown = [s for s in systems if s in scored and not scored[s]]
    if not shown:
        return "calibration", "Calibration", f"<p class='note'>{note}</p>"
    summary = calibration_by_level(store, n_bins) if summary is None else summary
    summary = summary[summary["system"].isin(shown)]
    bins = reliability(store, n_bins, "uniform")
    ece = summary.set_index(["system", "level"])["ece_uniform"]
    rows = []
    for system in shown:
        mine = bins[bins["system"] == system]
        panels = "".join(reliability_diagram(part, "all levels" if level == 0 else f"level {level}",
                                             ece[(system, level)], system=system, level=int(level))
                         for level, part in mine.groupby("level", sort=True))
        rows.append(f"<div class='reliability-row'><h3>{escape(system)}</h3><div class='panels'>{panels}</div></div>")
    return ("calibration", "Calibration",
            f"<p class='note'>{note}</p><div class='scroll'>{calibration_table(summary, shown)}</div>" + "".join(rows))


def provenance(command: str, inputs: list[tuple[str, str]]) -> str:
    """The command, the hiersql version and the SHA-256 of every input file (no table without inputs)."""
    from html import escape

    from .. import __version__

    rows = "".join(f"<tr><td class='system'>{escape(name)}</td><td><code>{digest}</code></td></tr>"
                   for name, digest in inputs)
    table = (f"<table class='inputs'><thead><tr><th class='system'>input</th><th>SHA-256</th></tr></thead>"
             f"<tbody>{rows}</tbody></table>") if inputs else ""
    return f"<pre>{escape(command)}</pre><p>hiersql {escape(__version__)}</p>{table}"


def file_digest(path: str | Path) -> str:
    """SHA-256 of a file, hexadecimal."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _image(fig: Figure, alt: str) -> str:
    from html import escape

    return f"<p><img alt='{escape(alt)}' src='data:image/svg+xml;base64,{svg_base64(fig)}'></p>"


def html_page(title: str, sections: list[tuple[str, str, str]], lead: str = "") -> str:
    """A self-contained page: ``sections`` are ``(id, heading, html)``; a contents line links them."""
    from html import escape

    nav = "".join(f"<a href='#{sid}'>{escape(heading)}</a>" for sid, heading, _ in sections)
    body = "".join(f"<section id='{sid}'><h2>{escape(heading)}</h2>\n{html}</section>\n"
                   for sid, heading, html in sections)
    return (f"<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{escape(title)}</title>"
            f"<style>{_STYLE}</style></head><body>\n<h1>{escape(title)}</h1>"
            f"{f'<p class=note>{lead}</p>' if lead else ''}<nav>{nav}</nav>\n{body}"
            f"<script>{_SORT_SCRIPT}</script></body></html>\n")


def stored_note(ranked: bool) -> str:
    """The note of a ranking table of stored results (values and ranks only; ``ranked``: of two systems or
    more, else the values of one system)."""
    if not ranked:
        return "Each cell: the value. No per-instance values (stored results), so no intervals. One system."
    return ("Each cell: the value and its rank (1 = best). No per-instance values (stored results), so no "
            "intervals or tests. Click a column to sort by it.")


def comparison_sections(comparison, breakdown: pd.DataFrame | None = None,
                        confusion: dict[str, pd.DataFrame] | None = None, confusion_depth: int | None = None
                        ) -> list[tuple[str, str, str]]:
    """The sections of a comparison (:class:`hiersql.analyses.compare.Comparison`): ranking table, dot plots, τ heat
    map, and when given the per-depth breakdown and the confusion matrices. A comparison of one system has its
    values and intervals: no rank, group, test or τ."""
    from html import escape

    ranking = comparison.ranking
    s = comparison.settings
    ranked = ranking["system"].nunique() > 1  # one system: its values and intervals, nothing to rank or test
    holm = ", Holm-corrected over the pairs of each measure" if s.get("holm") else ""
    without = sorted(set(ranking.loc[ranking["items"] == "", "measure"]))
    interval = (f"the {s['confidence']:.0%} {'paired ' if ranked else ''}bootstrap interval ({s['n_resamples']:,} "
                f"resamples, seed {s['seed']})")
    note = (f"Each cell: the value, its rank and group letter, and below it {interval}. Systems with the letter "
            f"<b>a</b> are not significantly different from the best ({escape(s['test'])} test, α = {s['alpha']}"
            f"{holm}); the best is shaded orange, its group blue. Click a column to sort by it." if ranked else
            f"Each cell: the value, and below it {interval}. One system: no rank, group or test.")
    if without:
        note += (f" No interval{' or test' if ranked else ''} (the value is not a mean or a ratio of sums over"
                 " instances) for: " + escape(", ".join(without)) + ".")
    if len(without) == ranking["measure"].nunique():
        note = stored_note(ranked)
    plots = ("One panel per measure, best system at the top. Orange: the best; blue: not significantly different "
             "from it; grey: significantly worse; black: no test available. Lines: the intervals." if ranked else
             "One panel per measure: the value (a dot) and its interval (a line), where it has one.")
    sections = [("ranking", "Ranking" if ranked else "Measures",
                 f"<p class='note'>{note}</p><div class='scroll'>{ranking_table(ranking)}</div>"),
                ("intervals", "Values and intervals", f"<p class='note'>{plots}</p>"
                 + _image(dot_plots(ranking), "values with confidence intervals"))]
    if ranked and len(comparison.kendall) > 1:  # τ between rankings of two systems or more
        sections.append(("agreement", "Agreement between measures", "<p class='note'>Kendall's τ-b between the "
                         "system rankings of each pair of measures (1: same order, -1: reversed), as in "
                         "Kosmopoulos et al. Table 12.</p>" + _image(tau_heatmap(comparison.kendall),
                                                                      "Kendall's tau between measures")))
    from .compare import ordered_systems

    systems = ordered_systems(ranking)
    if breakdown is not None and len(breakdown):
        sections.append(("depth", "By depth", f"<div class='scroll'>{depth_table(breakdown, systems)}</div>"))
    if confusion:
        depth = f" at depth {confusion_depth}" if confusion_depth is not None else ""
        sections.append(("confusion", "Confusion matrices", f"<p class='note'>Multi-label confusion matrices"
                         f"{escape(depth)} (labels replaced by their ancestor at that depth; ∅: nothing "
                         "predicted or nothing true), each row divided by its sum: the share of the true label's "
                         f"instances predicted as each label.{' Systems in ranking order.' if ranked else ''}</p>"
                         + _image(confusion_grid({sy: confusion[sy] for sy in systems if sy in confusion}),
                                  "confusion matrices")))
    return sections


def write_report(html: str, out: str | Path) -> Path:
    """Write the page to ``out``: a ``.html`` file, or ``out/index.html`` for a directory (created). The page is
    written beside and then renamed: a failure (a full disk) leaves the page that was there, whole."""
    from ..files import write_atomically

    out = Path(out)
    if out.suffix.lower() not in (".html", ".htm"):
        out.mkdir(parents=True, exist_ok=True)
        out = out / "index.html"
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(out, html)
    return out


def results_ranking(results: pd.DataFrame) -> pd.DataFrame:
    """Stored results (``system, metric, average, value``) in the shape of a comparison's ranking: value and
    rank, no interval or group."""
    import numpy as np
    import pandas as pd

    from .compare import competition_rank, measure_name, oriented

    frame = results.assign(measure=[measure_name(m, "" if pd.isna(a) else a)
                                    for m, a in zip(results["metric"], results["average"], strict=True)])
    frame["rank"] = pd.array([None] * len(frame), dtype="Int64")
    for _, part in frame.groupby("measure", sort=False):
        frame.loc[part.index, "rank"] = competition_rank(oriented(part["value"], str(part["metric"].iloc[0])))
    return frame.assign(ci_low=np.nan, ci_high=np.nan, group=np.nan, items="")[
        ["measure", "metric", "average", "system", "value", "ci_low", "ci_high", "rank", "group", "items"]]
