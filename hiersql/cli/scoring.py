"""``hiersql scoring``: the scoring-tree measures of Lanus et al. on confusion matrices, per weight strategy
(SPEC §8), as the paper's Tables VIII/IX, as CSV, and as a plot."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import given

PAPER_STRATEGIES = "decreasing,non-increasing,increasing"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "scoring", help="scoring-tree measures (Lanus et al.) of confusion matrices",
        description="Score confusion matrices on a weighted scoring tree: PL, L, LPP, LPPTPS, LPPPPS and hF per"
                    " weight strategy, plus the flat macro/micro precision, recall and F1.",
    )
    p.add_argument("--tree", required=True, type=given, metavar="FILE",
                   help="the tree: parent<TAB>child[<TAB>weight] (or .csv with parent,child[,weight])")
    p.add_argument("--confusion", required=True, action="append", type=given, metavar="[NAME=]FILE",
                   help="a confusion matrix (TSV, or .csv): header = corner cell, predicted labels [, missed];"
                        " rows = true label (or ghost) and counts; repeat for several systems (NAME = file stem)")
    p.add_argument("--strategy", metavar="LIST",
                   help="comma-separated weight strategies: decreasing, non-increasing, increasing, given (the"
                        " tree file's weights), levels:W1/W2/... (default: given if the tree file has weights,"
                        f" else {PAPER_STRATEGIES})")
    p.add_argument("--offset", type=float, default=0.0, metavar="O",
                   help="offset o <= 0 that lifts classification errors above detection errors (default 0)")
    p.add_argument("--metrics", default="pl,lca_reward,lpp,lpptps,lpppps,scoring_hf",
                   help="comma-separated scoring measures (default: the paper's rows), or 'all'")
    p.add_argument("--average", default="micro", help="micro, macro or both (default: micro, as the paper)")
    p.add_argument("--no-flat", action="store_true", help="leave out the flat precision/recall/F1 rows")
    p.add_argument("--format", default="table", choices=("table", "csv"),
                   help="table: one row per measure, one column per system; csv: system,strategy,metric,"
                        "average,value")
    p.add_argument("--plot", metavar="FILE.png", help="also draw the scores per strategy into this image")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..errors import InputError
    from ..inputs.taxonomy import Taxonomy
    from ..measures.scoring import METRICS, score_confusions
    from .common import check_plot_file

    if not args.offset <= 0:  # NaN too
        raise InputError("offset must be a number <= 0", "--offset", value=args.offset)
    if args.plot:
        check_plot_file(args.plot)
    tree = Taxonomy.from_file(args.tree)
    default = "given" if tree.has_weights else PAPER_STRATEGIES
    strategies = [s.strip() for s in (args.strategy or default).split(",") if s.strip()]
    metrics = list(METRICS) if args.metrics.strip() == "all" else [
        m.strip() for m in args.metrics.split(",") if m.strip()]
    if not metrics:
        raise InputError("no measure given", "--metrics", value=args.metrics)
    average = [a.strip() for a in args.average.split(",") if a.strip()]
    bad = [a for a in average if a not in ("micro", "macro")]
    if bad or not average:
        raise InputError("average must be micro and/or macro", "--average", value=args.average)
    rows = score_confusions(tree, _confusions(args.confusion), strategies, args.offset, average, metrics,
                            with_flat=not args.no_flat)
    systems = list(dict.fromkeys(r.system for r in rows))
    print(format_csv(rows) if args.format == "csv" else format_table(rows, systems), end="")
    if args.plot:
        plot(rows, systems, strategies, args.offset, args.plot)
    return 0


def _confusions(specs: list[str]) -> dict[str, Path]:
    """``NAME=FILE`` or ``FILE`` (name = file stem) → ``{name: path}``; a name given twice is an error."""
    from ..errors import InputError
    from ..inputs.arguments import EMPTY_SOURCE

    out: dict[str, Path] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if sep and name and not path.strip():  # NAME= without the file would read the current folder
            raise InputError(f"{EMPTY_SOURCE} (NAME=FILE)", "--confusion", value=spec)
        name, file = (name, Path(path)) if sep and name else (Path(spec).stem, Path(spec))
        if name in out:
            raise InputError("system name given twice", "--confusion", value=name)
        _check_utf8(file)
        out[name] = file
    return out


def _check_utf8(path: Path) -> None:
    """A confusion matrix file that is not UTF-8 text is an error naming its line (the reader would stop on
    it with Python's own message)."""
    from ..errors import InputError

    if not path.is_file():
        return  # the reader says it is missing
    for i, line in enumerate(path.read_bytes().splitlines(), start=1):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text ({exc.reason})", path, i) from None


def format_table(rows: list, systems: list[str]) -> str:
    """The paper's layout: one line per (metric, average, strategy), one column per system, 4 decimals."""
    from .common import aligned

    values = {(r.metric, r.average, r.strategy, r.system): r.value for r in rows}
    keys = list(dict.fromkeys((r.metric, r.average, r.strategy) for r in rows))
    header = ("metric", "average", "strategy", *systems)
    cells = [header] + [
        (*key, *(_fmt(values.get((*key, s))) for s in systems)) for key in keys
    ]
    return aligned(cells, left=3)


def format_csv(rows: list) -> str:
    """``system,strategy,metric,average,value`` with full float precision."""
    from .evaluate import _csv

    lines = ["system,strategy,metric,average,value"]
    lines += [f"{_csv(r.system)},{_csv(r.strategy)},{r.metric},{r.average},{r.value!r}" for r in rows]
    return "\n".join(lines) + "\n"


def plot(rows: list, systems: list[str], strategies: list[str], offset: float, path: str) -> None:
    """One panel per strategy: the micro (else macro) score of each weighted measure per system, with PL
    (which needs no weights) dashed as the reference."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..analyses.figures import save

    average = "micro" if any(r.average == "micro" for r in rows) else "macro"
    values = {(r.strategy, r.metric, r.system): r.value for r in rows if r.average == average}
    metrics = list(dict.fromkeys(r.metric for r in rows if r.strategy and r.average == average))
    fig, axes = plt.subplots(1, len(strategies), figsize=(4.2 * len(strategies), 4.2), sharey=True,
                             squeeze=False)
    x = range(len(systems))
    for ax, strategy in zip(axes[0], strategies, strict=True):
        if ("", "pl", systems[0]) in values:
            ax.plot(x, [values[("", "pl", s)] for s in systems], "k--", label="PL", linewidth=1)
        for metric in metrics:
            ax.plot(x, [values.get((strategy, metric, s), float("nan")) for s in systems], marker="o",
                    linewidth=0.8, label=_LABELS.get(metric, metric))
        ax.set_title(f"{strategy} (o = {offset:g})")
        ax.set_xticks(list(x), systems)
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(f"{average} score")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    try:
        save(fig, path, dpi=110)
    except (OSError, RuntimeError, ValueError) as exc:  # e.g. .pgf without LaTeX
        from ..errors import InputError

        raise InputError(f"cannot write the plot ({' '.join(str(exc).split())})", "--plot", value=path) from None
    finally:
        plt.close(fig)


_LABELS = {"lca_reward": "L", "lpp": "LPP", "lpptps": "LPPTPS (hR)", "lpppps": "LPPPPS (hP)",
           "scoring_hp": "hP", "scoring_hr": "hR", "scoring_hf": "hF"}


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}"
