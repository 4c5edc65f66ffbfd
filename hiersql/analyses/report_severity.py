"""The report's section on mistake severity (Bertinetto et al. 2020, Fig. 1): the trade-off between the top-1
error and the average mistake severity across systems, each system's histogram of mistake severities and a
table of both, written as inline SVG (no plotting library, no script) and HTML.

A *mistake* is an instance whose top-1 label (the highest score; without scores, the first label) is not a
true label; its severity is the distance ``d_1`` of that label to the truth (``severity_distance``: the height
of the lowest common ancestor, or the edge count). Per system, with ``n`` the instances with a true label and
``h(d)`` the mistakes at distance ``d``::

    top-1 error      = 1 − top-1 accuracy   (the mistakes and the instances without prediction, over n)
    mistake severity = Σ_d d · h(d) / Σ_d h(d)

The values are :func:`hiersql.measures.severity.histogram` and :func:`~hiersql.measures.severity.tradeoff`
(``severity.sql``); this module only draws them. Every dot and bar carries its values as ``data-*``
attributes and a tooltip.

References
----------
Bertinetto, Mueller, Tertikas, Samangooei, Lord (2020), "Making Better Mistakes: Leveraging Class Hierarchies
with Deep Networks", CVPR, Fig. 1 and §4.
"""

from __future__ import annotations

import math
from html import escape
from typing import TYPE_CHECKING

from .figures import short_label

if TYPE_CHECKING:
    import pandas as pd

    from ..inputs.store import Store
    from ..measures import Options

COLOUR = "#0072B2"  # Okabe & Ito's blue, as the report's reliability diagrams
GRID = "#e4e4e4"
# px: the trade-off plot's size and its plot area; a histogram's height, plot area and bar pitch
TRADE_W, TRADE_H, TRADE_LEFT, TRADE_TOP, TRADE_PLOT_W, TRADE_PLOT_H = 560, 312, 62, 28, 330, 250
HIST_H, HIST_LEFT, HIST_TOP, HIST_PLOT_H, BAR_PITCH, HIST_MIN_W = 192, 44, 44, 110, 26, 250
DISTANCES = {"height": "the height of the lowest common ancestor of the top-1 label and the true label "
                       "(Bertinetto et al.)",
             "edges": "the number of edges from the top-1 label up to the lowest common ancestor and down to "
                      "the true label"}


def severity_section(store: Store, ranking: pd.DataFrame, options: Options) -> tuple[str, str, str] | None:
    """The section ``(id, heading, html)``: the trade-off plot (:func:`tradeoff_plot`), one histogram per
    system (:func:`histogram_panel`, the systems in the order of the report's ranking, one scale for all) and
    the table (:func:`severity_table`), at k = 1 with ``options.severity_distance``. ``None`` when the report's
    measures (the ``metric`` column of ``ranking``) hold none of the severity family."""
    from ..measures import family_of
    from ..measures.severity import histogram, tradeoff
    from .compare import ordered_systems

    if not any(family_of(str(metric)) == "severity" for metric in set(ranking["metric"])):
        return None
    systems = ordered_systems(ranking)
    counts = histogram(store, options)
    points = tradeoff(store, options).set_index("system").reindex(systems)
    distances = sorted(set(counts["distance"]))
    highest = int(counts["instances"].max()) if len(counts) else 0
    panels = "".join(histogram_panel(system, counts[counts["system"] == system], distances, highest)
                     for system in systems)
    without = [s for s in systems if math.isnan(points.loc[s, "mistake_severity"])]
    note = ("A mistake is an instance whose top-1 label (the highest score; without scores, the first label) is "
            f"not a true label; its severity is the distance d of that label to the truth: "
            f"{DISTANCES[options.severity_distance]}. The plot puts each system at its top-1 error (1 − top-1 "
            "accuracy) and its mistake severity (the mean d of its mistakes): better systems lie lower and to "
            "the left. Below, each system's mistakes counted by d, on one scale (Bertinetto et al. 2020, "
            "Fig. 1). The table has the counts.")
    if without:
        note += " No mistake, no dot: " + escape(", ".join(without)) + "."
    plot = tradeoff_plot(points.reset_index()) if len(without) < len(systems) else ""
    return ("severity", "Mistake severity",
            f"<p class='note'>{note}</p>{plot}"
            f"<div class='panels'>{panels}</div>"
            f"<div class='scroll'>{severity_table(counts, points.reset_index(), systems)}</div>")


def tradeoff_plot(points: pd.DataFrame) -> str:
    """Top-1 error against mistake severity as inline SVG: one labelled dot per row of ``points`` (``system,
    top1_error, mistake_severity``) whose mistake severity is a number (some row must have one), each axis
    over the values' range; a label that would cover another moves down or up (:func:`_label_rows`)."""
    shown = points[points["mistake_severity"].notna()]
    xs = _ticks(float(shown["top1_error"].min()), float(shown["top1_error"].max()))
    ys = _ticks(float(shown["mistake_severity"].min()), float(shown["mistake_severity"].max()))

    def x(v: float) -> float:
        return TRADE_LEFT + TRADE_PLOT_W * (v - xs[0]) / (xs[-1] - xs[0])

    def y(v: float) -> float:
        return TRADE_TOP + TRADE_PLOT_H * (1 - (v - ys[0]) / (ys[-1] - ys[0]))

    bottom, right = TRADE_TOP + TRADE_PLOT_H, TRADE_LEFT + TRADE_PLOT_W
    grid = "".join(f"<line x1='{x(t):.2f}' y1='{TRADE_TOP}' x2='{x(t):.2f}' y2='{bottom}' stroke='{GRID}'/>"
                   f"<text x='{x(t):.2f}' y='{bottom + 14}' text-anchor='middle'>{_number(t)}</text>" for t in xs)
    grid += "".join(f"<line x1='{TRADE_LEFT}' y1='{y(t):.2f}' x2='{right}' y2='{y(t):.2f}' stroke='{GRID}'/>"
                    f"<text x='{TRADE_LEFT - 5}' y='{y(t) + 4:.2f}' text-anchor='end'>{_number(t)}</text>"
                    for t in ys)
    at = [(x(r.top1_error), y(r.mistake_severity), short_label(str(r.system))) for r in shown.itertuples()]
    labels = _label_rows(at)
    dots = "".join(
        f"<circle class='system' cx='{cx:.2f}' cy='{cy:.2f}' r='4.5' fill='{COLOUR}' fill-opacity='.8' "
        f"data-system='{escape(str(r.system))}' data-top1-error='{float(r.top1_error)!r}' "
        f"data-mistake-severity='{float(r.mistake_severity)!r}'><title>{escape(str(r.system))}: top-1 error "
        f"{r.top1_error:.4f}, mistake severity {r.mistake_severity:.4f}</title></circle>"
        f"<text x='{cx + 7:.2f}' y='{ly + 4:.2f}'>{escape(name)}</text>"
        for r, (cx, cy, name), ly in zip(shown.itertuples(), at, labels, strict=True))
    return (f"<svg class='tradeoff' role='img' width='{TRADE_W}' height='{TRADE_H}' viewBox='0 0 {TRADE_W} "
            f"{TRADE_H}' font-size='10' fill='#222' aria-label='top-1 error against mistake severity'>"
            f"<text x='{TRADE_LEFT}' y='15' font-size='11' font-weight='600'>Top-1 error against mistake severity"
            f"</text>{grid}<text x='{TRADE_LEFT + TRADE_PLOT_W / 2:.1f}' y='{TRADE_H - 6}' text-anchor='middle'>"
            f"top-1 error</text><text transform='translate(14 {TRADE_TOP + TRADE_PLOT_H / 2:.1f}) rotate(-90)' "
            f"text-anchor='middle'>mistake severity</text>{dots}</svg>")


def _label_rows(at: list[tuple[float, float, str]]) -> list[float]:
    """The height of each dot's label (``(x, y, text)`` of the dots, in their order): its dot's, or the nearest
    of 11, 22, … px below or above it where it covers no label placed before (text about 5.6 px a character)."""
    placed: list[tuple[float, float, float]] = []  # (left, right, height) of the labels so far
    out = []
    for cx, cy, text in at:
        left, right = cx + 7, cx + 7 + 5.6 * len(text)
        for shift in (0, *(s * k * 11 for k in range(1, 30) for s in (1, -1))):
            if all(abs(cy + shift - h) >= 11 or right < a or left > b for a, b, h in placed):
                break
        placed.append((left, right, cy + shift))
        out.append(cy + shift)
    return out


def histogram_panel(system: str, counts: pd.DataFrame, distances: list[int], highest: int) -> str:
    """One system's mistakes by distance as inline SVG: a bar per value of ``distances`` (the rows ``distance,
    instances`` of ``counts``; 0 where it has none), heights on the scale 0 … ``highest`` (the largest count of
    any system), titled with the system's name and, below, its number of mistakes."""
    ys = _ticks(0, highest, whole=True)
    found = dict(zip(counts["distance"], counts["instances"], strict=True))
    width = max(HIST_MIN_W, HIST_LEFT + BAR_PITCH * len(distances) + 12)
    bottom = HIST_TOP + HIST_PLOT_H

    def y(v: float) -> float:
        return bottom - HIST_PLOT_H * v / ys[-1]

    grid = "".join(f"<line x1='{HIST_LEFT}' y1='{y(t):.2f}' x2='{width - 8}' y2='{y(t):.2f}' stroke='{GRID}'/>"
                   f"<text x='{HIST_LEFT - 4}' y='{y(t) + 4:.2f}' text-anchor='end'>{_number(t)}</text>"
                   for t in ys)
    bars = []
    for k, distance in enumerate(distances):
        n, left = int(found.get(distance, 0)), HIST_LEFT + 4 + BAR_PITCH * k
        bars.append(f"<rect class='bar' x='{left}' y='{y(n):.2f}' width='{BAR_PITCH - 6}' height='{bottom - y(n):.2f}'"
                    f" fill='{COLOUR}' data-distance='{distance}' data-instances='{n}'><title>d = {distance}: "
                    f"{n:,} mistakes</title></rect><text x='{left + (BAR_PITCH - 6) / 2:.1f}' y='{bottom + 13}' "
                    f"text-anchor='middle'>{distance}</text>")
    total = sum(int(v) for v in found.values())
    return (f"<svg class='severity-histogram' role='img' width='{width}' height='{HIST_H}' viewBox='0 0 {width} "
            f"{HIST_H}' font-size='10' fill='#222' data-system='{escape(system)}' "
            f"aria-label='{escape(system)}: mistakes by severity'><text x='8' y='14' font-size='11' "
            f"font-weight='600'>{escape(short_label(system))}</text><text x='8' y='28'>{total:,} mistakes</text>"
            f"{grid}{''.join(bars)}"
            f"<text x='{HIST_LEFT + (width - HIST_LEFT) / 2:.1f}' y='{HIST_H - 6}' text-anchor='middle'>"
            "distance d of the top-1 label</text></svg>")


def severity_table(counts: pd.DataFrame, points: pd.DataFrame, systems: list[str]) -> str:
    """Per system (in ``systems``' order): its top-1 error, mistakes, mistake severity and the mistakes at each
    distance of ``counts`` (``system, distance, instances``), a sortable table."""
    distances = sorted(set(counts["distance"]))
    found = {(r.system, r.distance): int(r.instances) for r in counts.itertuples()}
    by_system = points.set_index("system")
    head = "".join(f"<th>{h}</th>" for h in ("top-1 error", "mistakes", "mistake severity"))
    head += "".join(f"<th>d = {d}</th>" for d in distances)
    lines = [f"<table class='severity sortable'><thead><tr><th class='system'>system</th>{head}</tr></thead><tbody>"]
    for system in systems:
        row = by_system.loc[system]
        mistakes = sum(found.get((system, d), 0) for d in distances)
        severity = float(row["mistake_severity"])
        cells = [f"<td class='system' data-sort='{escape(system)}'>{escape(system)}</td>",
                 f"<td data-sort='{float(row['top1_error'])!r}'>{row['top1_error']:.4f}</td>",
                 f"<td data-sort='{mistakes}'>{mistakes:,}</td>",
                 f"<td data-sort='{severity!r}'>{'' if math.isnan(severity) else f'{severity:.4f}'}</td>"]
        cells += [f"<td data-sort='{found.get((system, d), 0)}'>{found.get((system, d), 0):,}</td>" for d in distances]
        lines.append("<tr>" + "".join(cells) + "</tr>")
    lines.append("</tbody></table>")
    return "\n".join(lines)


def _ticks(low: float, high: float, whole: bool = False) -> list[float]:
    """Evenly spaced round values covering ``[low, high]`` with a margin of 5 % of its span: about four steps
    of 1, 2 or 5 times a power of ten (``whole``: at least 1) from a multiple of the step; a single value (or
    none above 0) gets a span around it."""
    span = high - low
    margin = 0.05 * (span if span > 0 else max(abs(high), 1.0))
    low, high = (low - margin, high + margin) if not whole else (low, max(high, 1.0))
    raw = (high - low) / 4
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw * (1 - 1e-12))
    step = max(step, 1.0) if whole else step
    first = math.floor(low / step + 1e-9)
    return [round(i * step, 12) for i in range(first, max(math.ceil(high / step - 1e-9), first + 1) + 1)]


def _number(value: float) -> str:
    """A tick label without trailing zeros: ``0.25``, ``2``, ``1000``."""
    return f"{value:.12g}"
