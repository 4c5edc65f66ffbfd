"""``hiersql confusion``: print (and plot) a confusion matrix per system.

``--kind multilabel`` (default): the multi-label confusion matrix of Krstinić et al. (rows = true labels,
columns = predicted labels, a ``∅`` row/column for empty sets), in taxonomy order; the table adds the per-class
recall as a last column and the per-class precision as a last row (the layout of Krstinić Table 5).
``--depth K`` first replaces every label by its ancestors at depth K. ``--normalize recall|precision`` prints
the recall (row-normalised) or precision (column-normalised) matrix instead of the raw one.

``--kind hierarchical``: the hierarchical confusion matrix of Riehl et al. (TP, FP, FN, TN summed over
instances and the measures derived from them), one row per system.

``--plot FILE.png`` writes a heat map: with one system to FILE.png, with several to FILE_<system>.png each
(multilabel), or one figure with a 2 x 2 panel per system (hierarchical).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..options import add_flags, declared
from .common import add_input_arguments, check_plot_file, load_store


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("confusion", help="print or plot a multi-label or hierarchical confusion matrix",
                       description="Confusion matrix of each system: Krstinić et al.'s multi-label matrix "
                                   "(--kind multilabel) or Riehl et al.'s hierarchical one (--kind hierarchical).")
    add_input_arguments(p)
    p.add_argument("--kind", default="multilabel", choices=("multilabel", "hierarchical"),
                   help="which confusion matrix (default: multilabel)")
    p.add_argument("--depth", type=int, metavar="K",
                   help="multilabel: collapse every label to its ancestors at depth K first")
    p.add_argument("--normalize", default="none", choices=("none", "recall", "precision"),
                   help="multilabel: print/plot the raw matrix (none), the recall or the precision matrix")
    add_flags(p.add_argument_group("measure options (--tn: --kind hierarchical)"), declared("tn", "zero_division"))
    p.add_argument("--plot", metavar="FILE.png", help="write a heat map (PNG, or any matplotlib format)")
    p.add_argument("--format", default="table", choices=("table", "csv"),
                   help="table (aligned, 2 decimals) or csv (long form, full precision)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..errors import InputError
    from ..options import Options, from_args

    options = from_args(Options, args)  # a bad value names its flag, as evaluate's

    if args.depth is not None and args.kind != "multilabel":
        raise InputError("--depth applies to --kind multilabel only", "--depth", value=args.depth)
    if args.normalize != "none" and args.kind != "multilabel":
        raise InputError("--normalize applies to --kind multilabel only", "--normalize", value=args.normalize)
    if args.depth is not None and args.depth < 0:
        raise InputError("--depth must be >= 0", "--depth", value=args.depth)
    if args.plot:
        check_plot_file(args.plot)
    store = load_store(args, families={"confusion" if args.kind == "hierarchical" else "multilabel"})
    if args.depth is not None and args.depth > store.taxonomy.depth:  # no label would change: a typo, likely
        raise InputError(f"deeper than the taxonomy (its deepest node is at depth {store.taxonomy.depth})",
                         "--depth", value=args.depth)
    if args.kind == "hierarchical":
        _hierarchical(store, args, options)
    else:
        _multilabel(store, args, options)
    return 0


def _hierarchical(store, args: argparse.Namespace, options) -> None:
    from ..measures.confusion import hierarchical_confusion_matrix

    table = hierarchical_confusion_matrix(store, tn=options.tn, zero_division=options.zero_division)
    if args.plot:
        from ..analyses.figures import binary_confusion

        _save(binary_confusion(table), Path(args.plot))
    if args.format == "csv":
        print(table.to_csv(index=False, float_format="%.17g"), end="")
    else:
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))


def _multilabel(store, args: argparse.Namespace, options) -> None:
    from ..errors import InputError
    from ..measures.multilabel import class_scores, confusion_long, pivot

    try:
        cells = confusion_long(store, depth=args.depth, zero_division=options.zero_division)
    except ValueError as exc:  # a taxonomy node named like the ∅ row/column
        raise InputError(str(exc), args.taxonomy) from None
    column = "value" if args.normalize == "none" else args.normalize
    systems = store.systems()
    matrices = {system: pivot(cells[cells["system"] == system], column, store=store) for system in systems}
    if args.plot:  # before printing: a closed pipe (| head) must not lose the figures
        from ..analyses.figures import heatmap

        paths = _plot_paths(Path(args.plot), systems)
        for system, matrix in matrices.items():
            title = f"{system}: multi-label confusion matrix"
            title += f" ({args.normalize})" if column != "value" else ""
            title += f", depth {args.depth}" if args.depth is not None else ""
            _save(heatmap(matrix, title, "share" if column != "value" else "instances"), paths[system])
    if args.format == "csv":
        _print_csv(cells)
        return
    scores = class_scores(store, depth=args.depth, zero_division=options.zero_division)
    for system, matrix in matrices.items():
        print(_table(system, matrix, scores[scores["system"] == system]))


def _table(system: str, matrix, scores) -> str:
    """The matrix with a ``recall`` column and a ``precision`` row (Krstinić Table 5 layout)."""
    by_label = scores.set_index("label")
    shown = matrix.copy()
    shown["recall"] = by_label["recall"].reindex(matrix.index).to_numpy()
    shown.loc["precision"] = [*by_label["precision"].reindex(matrix.columns).to_numpy(), float("nan")]
    text = shown.to_string(float_format=lambda v: f"{v:.2f}", na_rep="")
    return f"system: {system}\n{text}\n"


def _print_csv(cells) -> None:
    import csv
    import sys

    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(["system", "true_label", "pred_label", "value", "recall", "precision"])
    for row in cells.itertuples(index=False):
        writer.writerow([row.system, row.true_label, row.pred_label, repr(float(row.value)),
                         repr(float(row.recall)), repr(float(row.precision))])


def _save(fig, path: Path) -> None:
    """Write the figure and say so; a format matplotlib cannot write after all (``.pgf`` without LaTeX, an
    unwritable file) is an error naming ``--plot``."""
    import sys

    from ..analyses.figures import save
    from ..errors import InputError

    try:
        save(fig, path)
    except (OSError, RuntimeError, ValueError) as exc:
        raise InputError(f"cannot write the plot ({' '.join(str(exc).split())})", "--plot", value=str(path)) from None
    print(f"hiersql: wrote {path}", file=sys.stderr)


def _plot_paths(path: Path, systems: list[str]) -> dict[str, Path]:
    """``path`` for a single system, else ``<stem>_<system><suffix>`` each (characters unsafe in file names
    replaced by ``_``); two systems whose names give the same file are an error, not one plot over the
    other."""
    from ..errors import InputError

    if len(systems) == 1:
        return {systems[0]: path}
    out: dict[str, Path] = {}
    by_path: dict[Path, str] = {}
    for system in systems:
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in system)
        out[system] = path.with_name(f"{path.stem}_{safe}{path.suffix}")
        if out[system] in by_path:
            raise InputError(f"systems {by_path[out[system]]!r} and {system!r} would be plotted to the same file",
                             "--plot", value=str(out[system]))
        by_path[out[system]] = system
    return out
