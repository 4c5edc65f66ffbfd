"""The trend of each system of a job over its submissions, for the report of a job queue
(:mod:`hiersql.jobs.report`): per system and ranking measure, a sparkline of the values that the job's
submissions had, one point per submission (the rows of its unit's key's latest run, the view ``unit_results``:
the value ``jobs diff`` compares), the latest :data:`TREND_POINTS` submissions up to the one reported.

A sparkline (Tufte 2006, *Beautiful Evidence*, ch. 2) is an inline SVG of 64 × 18 px: the values joined in
submission order (a submission whose unit has no results breaks the line; a value alone is a small dot), the
last one a dot; its vertical scale is the cell's own range ``[min, max]``, widened to at least
``10⁻³ · max(|min|, |max|)`` so that the noise of the last digits draws a flat line. Its tooltip gives the
first, last, lowest and highest value; the values themselves are in ``data-values`` (6 significant digits,
``;``-separated, empty where missing). Below it, the change of the latest value since the one before it (what
``jobs diff`` shows by default).
"""

from __future__ import annotations

import math
from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

TREND_POINTS = 20  # submissions shown, the latest
WIDTH, HEIGHT, PAD = 64, 18, 2.0  # pixels
LINE = "#0072b2"  # Okabe & Ito's blue


def trend_table(history: pd.DataFrame, main: pd.DataFrame, systems: list[str]) -> str:
    """The trend table: ``systems`` as rows, the measures of ``main`` (a ranking: ``measure, metric, average``)
    as columns, a sparkline per cell of ``history`` (rows of :data:`~hiersql.jobs.reading.LATEST_COLUMNS` of
    one job's dataset, the submissions to show); nothing for fewer than two submissions."""
    import pandas as pd

    submissions = sorted(history["submission"].unique())
    if len(submissions) < 2:  # one point: no trend
        return ""
    stored = history[history["metric"].notna()]
    values = {(s, m, "" if pd.isna(a) else a, j): float(v) for s, m, a, j, v in zip(
        stored["system"], stored["metric"], stored["average"], stored["submission"], stored["value"], strict=True)}
    measures = main[["measure", "metric", "average"]].drop_duplicates("measure")
    head = "".join(f"<th>{escape(m)}</th>" for m in measures["measure"])
    lines = [f"<table class='trend sortable'><thead><tr><th class='system'>system</th>{head}</tr></thead><tbody>"]
    for system in systems:
        cells = [f"<td class='system' data-sort='{escape(system)}'>{escape(system)}</td>"]
        for metric, average in zip(measures["metric"], measures["average"], strict=True):
            key = "" if pd.isna(average) else average
            cells.append(_cell([values.get((system, metric, key, j)) for j in submissions]))
        lines.append("<tr>" + "".join(cells) + "</tr>")
    lines.append("</tbody></table>")
    return (f"<h3>Trend</h3><p class='note'>Each cell: the values of the job's last {len(submissions)} submission(s)"
            " (one point each, the last a dot; the scale is the cell's own range) and the change since the value"
            " before the last. Hover for the values.</p><div class='scroll'>" + "\n".join(lines) + "</div>")


def _cell(series: list[float | None]) -> str:
    """A sparkline of ``series`` (``None``: no value) and the last change, in a table cell sorted by it."""
    known = [v for v in series if v is not None and not math.isnan(v)]
    if not known:
        return "<td data-sort=''></td>"
    change = known[-1] - known[-2] if len(known) > 1 else None
    text = "" if change is None else f"<span class='ci'>{change:+.4f}</span>"
    return f"<td data-sort='{'' if change is None else repr(change)}'>{sparkline(series)}{text}</td>"


def sparkline(series: list[float | None]) -> str:
    """The inline SVG of ``series`` (module docstring); ``None`` or NaN: a gap."""
    known = [v for v in series if v is not None and not math.isnan(v)]
    low, high = min(known), max(known)
    span = max(high - low, 1e-3 * max(abs(low), abs(high)), 1e-12)
    base = (low + high - span) / 2

    def point(k: int, v: float) -> str:
        x = PAD + (WIDTH - 2 * PAD) * k / max(1, len(series) - 1)
        y = HEIGHT - PAD - (HEIGHT - 2 * PAD) * (v - base) / span
        return f"{x:.1f},{y:.1f}"

    runs: list[list[str]] = [[]]
    for k, v in enumerate(series):
        if v is None or math.isnan(v):
            runs.append([])
        else:
            runs[-1].append(point(k, v))
    lines = "".join(f"<polyline points='{' '.join(r)}'/>" for r in runs if len(r) > 1)
    alone = "".join(f"<circle cx='{r[0].split(',')[0]}' cy='{r[0].split(',')[1]}' r='1'/>" for r in runs if len(r) == 1)
    last = max(k for k, v in enumerate(series) if v is not None and not math.isnan(v))
    x, y = point(last, series[last]).split(",")  # type: ignore[arg-type]
    title = (f"{known[0]:.4f} → {known[-1]:.4f}; lowest {low:.4f}, highest {high:.4f}; {len(known)} of"
             f" {len(series)} submission(s) with a value")
    data = ";".join("" if v is None or math.isnan(v) else f"{v:.6g}" for v in series)
    return (f"<svg width='{WIDTH}' height='{HEIGHT}' viewBox='0 0 {WIDTH} {HEIGHT}' role='img' data-values='{data}'>"
            f"<title>{escape(title)}</title><g fill='none' stroke='{LINE}' stroke-width='1.5'>{lines}</g>"
            f"<g fill='{LINE}'>{alone}</g>"
            f"<circle cx='{x}' cy='{y}' r='2' fill='{LINE}'/></svg>")
