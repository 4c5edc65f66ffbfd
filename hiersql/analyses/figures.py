"""The figures of the report and of ``hiersql confusion`` (matplotlib, Agg backend, no display needed).

Confusion matrices: the figure size grows with the number of labels so that every row and column keeps a
readable tick label (GermEval's 343 classes give a figure of about 4,400 pixels square at :data:`DPI`); the
size is fixed by :func:`heatmap_size`, not by the text, so the pixel size of a written PNG is predictable.
Axes are placed by hand (:func:`_inches`), and SVG output is byte-stable (:func:`svg_base64`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

DPI = 100
MARGIN_LEFT = MARGIN_BOTTOM = 2.5  # inches for the tick labels
MARGIN_TOP = 0.6  # inches for the title
MARGIN_RIGHT = 1.5  # inches for the colour bar
ANNOTATE_UP_TO = 20  # write the cell values when there are at most this many labels


def _figure(width: float, height: float) -> Figure:
    """A new figure not attached to any GUI (the Agg canvas)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(fig)
    return fig


def cell_size(n: int) -> float:
    """Inches per row/column for an ``n`` x ``n`` matrix: 0.8 for small matrices down to 0.12 for large."""
    return max(0.12, min(0.8, 5.0 / max(n, 1)))


def heatmap_size(n: int) -> tuple[float, float]:
    """Figure size (width, height) in inches of the heat map of an ``n`` x ``n`` matrix."""
    grid = n * cell_size(n)
    return MARGIN_LEFT + grid + MARGIN_RIGHT, MARGIN_BOTTOM + grid + MARGIN_TOP


def heatmap(matrix: pd.DataFrame, title: str = "", colorbar_label: str = "") -> Figure:
    """A heat map of a square labelled matrix (rows = true labels, columns = predicted labels).

    Every row and column gets its tick label (font size from the cell size); cell values are written in the
    cells when there are at most :data:`ANNOTATE_UP_TO` labels. Colours follow the square root of the values,
    so that small confusions stay visible beside a large diagonal.
    """
    import numpy as np
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import PowerNorm

    n = max(len(matrix.index), len(matrix.columns))
    width, height = heatmap_size(n)
    fig = _figure(width, height)
    grid_w, grid_h = width - MARGIN_LEFT - MARGIN_RIGHT, height - MARGIN_BOTTOM - MARGIN_TOP
    ax = fig.add_axes((MARGIN_LEFT / width, MARGIN_BOTTOM / height, grid_w / width, grid_h / height))
    values = matrix.to_numpy(dtype=float)
    # colour the n x n cells once (not the resampled pixels of a large figure), then draw the RGBA image
    colours = ScalarMappable(PowerNorm(0.5, vmin=0, vmax=max(float(values.max(initial=0)), 1e-12)), "viridis")
    ax.imshow(colours.to_rgba(values, bytes=True), aspect="auto", interpolation="nearest")
    font = max(4.0, min(10.0, cell_size(n) * 72 * 0.7))
    ax.set_xticks(range(len(matrix.columns)), [str(c) for c in matrix.columns], rotation=90, fontsize=font)
    ax.set_yticks(range(len(matrix.index)), [str(r) for r in matrix.index], fontsize=font)
    ax.set_xlabel(matrix.columns.name or "predicted")
    ax.set_ylabel(matrix.index.name or "true")
    if title:
        ax.set_title(title)
    if n <= ANNOTATE_UP_TO:
        high = float(values.max(initial=0))
        for (i, j), v in np.ndenumerate(values):
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=font,
                    color="black" if high and v > 0.5 * high else "white")
    cax = fig.add_axes(((width - MARGIN_RIGHT + 0.2) / width, MARGIN_BOTTOM / height, 0.25 / width,
                        grid_h / height))
    fig.colorbar(colours, cax=cax, label=colorbar_label)
    return fig


def binary_confusion(table: pd.DataFrame, systems_column: str = "system") -> Figure:
    """One 2 x 2 heat map ``[[TP, FN], [FP, TN]]`` per row of ``table`` (columns ``tp, fp, fn, tn``), side by
    side, each annotated with its counts (e.g. the hierarchical confusion matrix of Riehl et al.)."""
    n = len(table)
    fig = _figure(3.2 * max(n, 1), 3.4)
    for k, (_, row) in enumerate(table.iterrows()):
        ax = fig.add_subplot(1, max(n, 1), k + 1)
        values = [[row["tp"], row["fn"]], [row["fp"], row["tn"]]]
        ax.imshow(values, cmap="Blues", norm=_log_norm(values))
        for i, line in enumerate(values):
            for j, v in enumerate(line):
                ax.text(j, i, f"{['TP', 'FN', 'FP', 'TN'][2 * i + j]}\n{int(v):,}", ha="center", va="center",
                        fontsize=8)
        ax.set_xticks([0, 1], ["pred +", "pred -"], fontsize=8)
        ax.set_yticks([0, 1], ["true +", "true -"], fontsize=8)
        ax.set_title(str(row[systems_column]), fontsize=9)
    fig.subplots_adjust(left=0.3 / fig.get_figwidth(), right=1 - 0.1 / fig.get_figwidth(), wspace=0.35)
    return fig


def _log_norm(values):
    from matplotlib.colors import LogNorm

    flat = [v for line in values for v in line]
    return LogNorm(vmin=max(min(flat), 1), vmax=max(max(flat), 2))


# What a format writes of the time and of chance, left out (the same figure, the same bytes): the date of
# SVG, PDF and PostScript files; SVG's element ids are drawn from a salted hash.
_NO_DATE = {".svg": {"Date": None}, ".pdf": {"CreationDate": None}, ".ps": {"CreationDate": None},
            ".eps": {"CreationDate": None}}


def save(fig: Figure, path: str | Path, dpi: int = DPI) -> Path:
    """Write ``fig`` to ``path`` (format from the suffix) at ``dpi``, with no date and fixed SVG ids; returns the
    path."""
    from matplotlib import rc_context

    path = Path(path)
    with rc_context({"svg.hashsalt": "hiersql"}):
        fig.savefig(path, dpi=dpi, metadata=_NO_DATE.get(path.suffix.lower()))
    return path


# ------------------------------------------------------------------------------------------------ the report
# Okabe & Ito's colour-blind-safe palette: blue for the systems in the best system's group, vermilion for the
# best itself, grey for the others
BEST, SAME_GROUP, OTHER, NO_TEST = "#D55E00", "#0072B2", "#999999", "#000000"
LABEL_CHARS = 34  # system names longer than this are shortened on the chart axes (the table has them whole)


def short_label(name: str) -> str:
    """``name``, cut to :data:`LABEL_CHARS` characters with an ellipsis (chart axes; tables keep names whole)."""
    return name if len(name) <= LABEL_CHARS else name[: LABEL_CHARS - 1] + "…"


def svg_base64(fig: Figure) -> str:
    """The figure as base64 SVG whose text stays text (the browser draws it: no glyph rasterising, sharp at
    any zoom), without date and with fixed element ids, so that the same figure gives the same bytes."""
    import base64
    import io

    from matplotlib import rc_context

    buffer = io.BytesIO()
    with rc_context({"svg.fonttype": "none", "svg.hashsalt": "hiersql"}):
        fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _inches(fig: Figure, left: float, top: float, width: float, height: float):
    """Axes at ``left`` and ``top`` inches from the figure's top-left corner (placed by hand: no
    ``tight_layout``, which draws every text once more to measure it)."""
    fig_w, fig_h = fig.get_size_inches()
    return fig.add_axes((left / fig_w, 1 - (top + height) / fig_h, width / fig_w, height / fig_h))


DOT_COLUMN = 6.75  # inches per column of dot plots: 2.6 for the names, 3.8 for the plot
DOT_LABELS = 2.6


def dot_plots(ranking: pd.DataFrame, columns: int = 2) -> Figure:
    """Small multiples, one per measure: each system's value as a dot with its confidence interval as a
    line, systems in that measure's ranking order (best at the top), names on the axis. The best system is
    vermilion, those in its group (not significantly different) blue, the others grey; black where the measure
    has no tests."""
    from ..measures import higher_is_better

    measures = list(dict.fromkeys(ranking["measure"]))
    n_systems = ranking["system"].nunique()
    rows = -(-len(measures) // columns)
    plot_height = 0.24 * n_systems + 0.2
    panel_height = plot_height + 0.85  # title above, tick labels below
    fig = _figure(columns * DOT_COLUMN, rows * panel_height + 0.1)
    for k, measure in enumerate(measures):
        part = ranking[ranking["measure"] == measure].sort_values(["rank", "system"], ascending=[False, False],
                                                                  na_position="first")  # unranked at the bottom
        ax = _inches(fig, (k % columns) * DOT_COLUMN + DOT_LABELS, (k // columns) * panel_height + 0.4,
                     DOT_COLUMN - DOT_LABELS - 0.35, plot_height)
        y = list(range(len(part)))
        tested = part["group"].notna().to_numpy()
        colours = [NO_TEST if not t else BEST if r == 1 and g == 1 else SAME_GROUP if g == 1 else OTHER
                   for t, r, g in zip(tested, part["rank"].fillna(0), part["group"].fillna(0), strict=True)]
        if tested.any():
            ax.hlines(y, part["ci_low"], part["ci_high"], colors=colours, linewidth=2)
        ax.scatter(part["value"], y, c=colours, s=22, zorder=3)
        ax.set_yticks(y, [short_label(str(s)) for s in part["system"]], fontsize=8)
        ax.set_ylim(-0.7, len(part) - 0.3)
        ax.tick_params(axis="x", labelsize=8)
        ax.grid(axis="x", alpha=0.3)
        ax.set_title(measure + ("" if higher_is_better(str(part["metric"].iloc[0])) else "  (lower is better)"),
                     fontsize=10, loc="left")
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    return fig


def tau_heatmap(tau: pd.DataFrame) -> Figure:
    """Kendall's τ between the measures' rankings as an annotated heat map on a diverging scale [-1, 1]."""
    import numpy as np

    n = len(tau)
    size = 1.6 + 0.55 * n
    fig = _figure(size + 1.2, size)
    ax = fig.add_subplot(1, 1, 1)
    values = tau.to_numpy(dtype=float)
    image = ax.imshow(values, cmap="PuOr", vmin=-1, vmax=1)
    labels = [str(c) for c in tau.columns]
    ax.set_xticks(range(n), labels, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(n), labels, fontsize=8)
    for (i, j), v in np.ndenumerate(values):
        ax.text(j, i, "" if v != v else f"{v:.2f}", ha="center", va="center", fontsize=7,
                color="white" if v == v and abs(v) > 0.6 else "black")
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="Kendall's τ")
    fig.tight_layout()
    return fig


def confusion_grid(matrices: dict[str, pd.DataFrame], columns: int = 5) -> Figure:
    """One small row-normalised confusion matrix per system (share of each true label's instances predicted
    as each label, colour scale 0-1), same labels everywhere; label names left of the first column and below
    the last matrix of each column. All matrices are one image on one axes (one axes per matrix costs a
    second per twenty matrices)."""
    import numpy as np
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize

    systems = list(matrices)
    columns = min(columns, max(len(systems), 1))
    rows = -(-len(systems) // columns)
    labels = [short_label(str(c))[:14] for c in next(iter(matrices.values())).columns] if systems else []
    n = max(len(labels), 1)
    left, gap, title, right, below = 1.3, 0.25, 0.35, 1.1, 1.1  # inches
    panel = min(2.6, (13.5 - left - right - (columns - 1) * gap) / columns)
    cell = panel / n  # inches per matrix cell
    pitch_x, pitch_y = n + round(gap / cell), n + round(title / cell)  # cells from one matrix to the next
    width, height = columns * pitch_x - (pitch_x - n), rows * pitch_y
    fig = _figure(left + width * cell + right, height * cell + below)
    ax = _inches(fig, left, 0.0, width * cell, height * cell)
    colours = ScalarMappable(Normalize(0, 1), "viridis")
    image = np.zeros((height, width, 4))  # transparent between the matrices
    for k, (system, matrix) in enumerate(matrices.items()):
        top, start = (k // columns) * pitch_y + (pitch_y - n), (k % columns) * pitch_x
        image[top:top + n, start:start + n] = colours.to_rgba(matrix.to_numpy(dtype=float))
        ax.text(start + n / 2 - 0.5, top - 0.8, short_label(system)[:28], ha="center", va="bottom", fontsize=8)
        if k % columns == 0:
            for i, label in enumerate(labels):
                ax.text(start - 0.9, top + i, label, ha="right", va="center", fontsize=6)
        if k + columns >= len(systems):  # nothing below: the predicted labels
            for j, label in enumerate(labels):
                ax.text(start + j, top + n - 0.2, label, ha="center", va="top", rotation=90, fontsize=6)
    ax.imshow(image, interpolation="nearest", extent=(-0.5, width - 0.5, height - 0.5, -0.5))
    ax.set_axis_off()
    fig_w, fig_h = fig.get_size_inches()
    fig.text(0.5 * (left + fig_w - right) / fig_w, 0.15 / fig_h, "predicted", ha="center", fontsize=9)
    fig.text(0.1 / fig_w, 0.5, "true", va="center", rotation=90, fontsize=9)
    cax = _inches(fig, fig_w - right + 0.3, title, 0.15, min(height * cell - title, 3.0))
    fig.colorbar(colours, cax=cax, label="share of the true label's instances")
    return fig
