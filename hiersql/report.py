"""Figures: heat maps of confusion matrices (matplotlib, Agg backend, no display needed).

The figure size grows with the number of labels so that every row and column keeps a readable tick label
(GermEval's 343 classes give a figure of about 4,400 pixels square at :data:`DPI`); the size is fixed by
:func:`heatmap_size`, not by the text, so the pixel size of a written PNG is predictable.
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


def save(fig: Figure, path: str | Path) -> Path:
    """Write ``fig`` to ``path`` (format from the suffix) at :data:`DPI`; returns the path."""
    path = Path(path)
    fig.savefig(path, dpi=DPI)
    return path


def scores_chart(results: pd.DataFrame, title: str = "") -> Figure:
    """Grouped horizontal bars: one group per measure (``metric (average)``), one bar per system."""
    labels = list(dict.fromkeys(results["measure"]))
    systems = list(dict.fromkeys(results["system"]))
    height = max(2.5, 0.25 * len(labels) * max(len(systems), 1) + 1.2)
    fig = _figure(9, height)
    ax = fig.add_subplot(1, 1, 1)
    bar = 0.8 / max(len(systems), 1)
    values = results.set_index(["measure", "system"])["value"]
    for i, system in enumerate(systems):
        ys = [j + i * bar for j in range(len(labels))]
        ax.barh(ys, [values.get((m, system), float("nan")) for m in labels], height=bar, label=system)
    ax.set_yticks([j + 0.4 - bar / 2 for j in range(len(labels))], labels)
    ax.invert_yaxis()
    ax.set_title(title)
    ax.set_xlim(0, 1)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    return fig


def _png_base64(fig: Figure) -> str:
    import base64
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def html_report(results: pd.DataFrame, path: str | Path, title: str = "hiersql results") -> Path:
    """A self-contained HTML page of ``results`` (columns ``dataset, system, metric, average, value``): per
    dataset a table with one row per measure and one column per system (best value in bold), and a bar chart
    of the measures that lie in [0, 1]."""
    from html import escape

    results = results.assign(
        dataset=results["dataset"].fillna("(no dataset)"),
        measure=results["metric"] + results["average"].fillna("").map(lambda a: f" ({a})" if a else ""),
    )
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title>",
             "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right}th{background:#f3f3f3}"
             "td:first-child,th:first-child{text-align:left}</style></head><body>",
             f"<h1>{escape(title)}</h1>"]
    for dataset, part in results.groupby("dataset", sort=True):
        wide = part.pivot_table(index="measure", columns="system", values="value", sort=False)
        parts.append(f"<h2>{escape(str(dataset))}</h2><table><tr><th>measure</th>")
        parts += [f"<th>{escape(str(s))}</th>" for s in wide.columns]
        parts.append("</tr>")
        for measure, row in wide.iterrows():
            best = _best(str(measure), row)
            cells = [f"<td>{'<b>' if s == best else ''}{v:.4f}{'</b>' if s == best else ''}</td>"
                     for s, v in row.items()]
            parts.append(f"<tr><td>{escape(str(measure))}</td>{''.join(cells)}</tr>")
        parts.append("</table>")
        unit = part[part["value"].between(0, 1) & ~part["metric"].str.endswith("_loss")]
        unit = unit[~unit["metric"].isin(_COUNT_OR_LOSS)]
        if len(unit):
            chart = scores_chart(unit, str(dataset))
            parts.append(f"<p><img alt='scores of {escape(str(dataset))}' "
                         f"src='data:image/png;base64,{_png_base64(chart)}'></p>")
    parts.append("</body></html>")
    path = Path(path)
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


# measures where lower is better, or which are counts: not "best = highest", not on the [0, 1] chart
_COUNT_OR_LOSS = {
    "symmetric_difference_loss", "hamming_loss", "graph_induced_error", "mgia_fn", "tree_induced_error",
    "all_pairs_error", "hcm_tp", "hcm_tn", "hcm_fp", "hcm_fn", "hcm_fnr", "hcm_fpr", "hcm_pt",
}


def _best(measure: str, row: pd.Series) -> object:
    """The system with the best value of ``measure``: lowest for losses and error rates, else highest."""
    metric = measure.split(" ")[0]
    if metric in {"hcm_tp", "hcm_tn", "hcm_fp", "hcm_fn"} or row.isna().all():
        return None
    return row.idxmin() if metric in _COUNT_OR_LOSS else row.idxmax()
