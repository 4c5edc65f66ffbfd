"""``hiersql breakdown``: set-based measures per level, per depth of the true label, or per class (a
classification report); and the error profile (docs/breakdowns.md)."""

from __future__ import annotations

import argparse
from typing import Any

from ..options import RUN_OPTIONS, STORE_OPTIONS, add_flags, declared
from .common import add_input_arguments, engine_of, load_store

# the measure options the breakdowns read (declared once in hiersql.options, as evaluate's)
MEASURE_OPTIONS = ("include_root", "max_distance", "augment", "beta", "zero_division", "severity_distance")
# each --by and the SQL files of measures and analyses its queries read (besides the store's schema, closure and
# readers): a warning about what only some files read (labels ranked by name) is given when one of them runs
BY: dict[str, tuple[str, ...]] = {
    "level": ("breakdowns", "set_based"), "depth": ("breakdowns", "set_based"), "class": ("set_based",),
    "flat-level": ("breakdowns",), "errors": ("error_profile",), "distances": ("error_profile",),
    "consistency": ("error_profile",), "auprc": ("curves",), "calibration": ("calibration",),
    "severity": ("severity",),
}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "breakdown", help="measures per level, per depth, per class; error profile",
        description="Break the set-based measures down by taxonomy level (--by level), by the depth of the "
                    "deepest true label (--by depth) or by class (--by class: a classification report); flat "
                    "P/R/F per level (--by flat-level); the error categories of the predicted labels "
                    "(--by errors), distance statistics (--by distances) or the path-consistency rate "
                    "(--by consistency); for scored predictions (a score column), the areas under the pooled "
                    "hierarchical precision-recall curves (--by auprc) and calibration per level (--by "
                    "calibration); the mistakes of the top-1 labels counted by their distance to the truth "
                    "(--by severity: Bertinetto et al.'s histogram).",
    )
    add_input_arguments(p)
    p.add_argument("--by", default="level", choices=list(BY), help="what to break down by (default: level)")
    p.add_argument("--format", default="table", choices=("table", "csv"),
                   help="table (the text report for --by class) or csv (full float precision)")
    p.add_argument("--digits", type=int, default=2, help="decimals of the text report (default 2)")
    p.add_argument("--bins", type=int, default=10, help="calibration bins (default 10)")
    add_flags(p.add_argument_group("measure options"), declared(*MEASURE_OPTIONS))
    add_flags(p.add_argument_group("run options"), [o for o in RUN_OPTIONS if o.name not in STORE_OPTIONS])
    p.add_argument("--html", metavar="FILE.html", help="with --by calibration: also write the reliability "
                   "diagrams per level, each with its ECE, and the table to a self-contained page")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import sys

    from ..errors import InputError
    from ..options import Options, from_args

    options = from_args(Options, args)  # a bad value names its flag, as evaluate's
    if args.digits < 0:
        raise InputError("must be >= 0", "--digits", value=args.digits)
    if args.bins < 2:
        raise InputError("must be >= 2", "--bins", value=args.bins)
    if args.html:
        _check_html(args)
    store = load_store(args, families=BY[args.by])
    try:
        with engine_of(args, store) as engine:
            frame = _frame(args, engine or store, options)
        if args.by == "class" and args.format == "table":
            sys.stdout.write(frame)
            return 0
        if args.html:
            from ..analyses.report import calibration_section, html_page
            from .common import write_page

            page = html_page("hiersql calibration", [calibration_section(store, store.systems(), args.bins, frame)])
            write_page(page, args.html, "--html")
    finally:
        store.close()
    if args.format == "csv":
        frame.to_csv(sys.stdout, index=False, float_format=lambda x: repr(float(x)), lineterminator="\n")
    else:
        sys.stdout.write(frame.to_string(index=False) + "\n")
    return 0


def _frame(args: argparse.Namespace, source: Any, options: Any) -> Any:
    """What ``--by`` names, computed by ``source`` (the engine of ``--engine``, or the store's DuckDB): a frame,
    or the text of the classification report (``--by class --format table``)."""
    from ..analyses import breakdowns, calibration, curves, error_profile
    from ..errors import InputError
    from ..measures.severity import histogram as severity_histogram

    if args.by in ("auprc", "calibration") and not calibration.scored_systems(source):
        raise InputError(f"--by {args.by} needs scored predictions (instance_id, label, score rows); the"
                         " predictions have no score", "--pred", value=",".join(args.pred))
    if args.by == "class" and args.format == "table":
        return breakdowns.report(source, options, digits=args.digits).text
    return {
        "level": lambda: breakdowns.by_level(source, options),
        "depth": lambda: breakdowns.by_depth(source, options),
        "class": lambda: breakdowns.report(source, options).frame,
        "flat-level": lambda: breakdowns.flat_by_level(source, options),
        "errors": lambda: error_profile.error_categories(source),
        "distances": lambda: error_profile.distance_statistics(source),
        "consistency": lambda: error_profile.path_consistency(source),
        "auprc": lambda: _areas(curves, source),
        "calibration": lambda: calibration.calibration_by_level(source, args.bins),
        "severity": lambda: severity_histogram(source, options),
    }[args.by]()


def _check_html(args: argparse.Namespace) -> None:
    """``--html``: only with ``--by calibration``, a ``.html`` file in a folder that exists."""
    from pathlib import Path

    from ..errors import InputError
    from .common import check_page_target

    out = Path(args.html)
    if args.by != "calibration":
        raise InputError(f"only with --by calibration (not --by {args.by})", "--html", value=args.html)
    if out.suffix.lower() not in (".html", ".htm") or out.is_dir():
        raise InputError("must name a .html file", "--html", value=args.html)
    if not out.resolve().parent.is_dir():
        raise InputError("folder of the page does not exist", "--html", value=args.html)
    check_page_target(args.html, "--html")


def _areas(curves: Any, source: Any) -> Any:
    """Per system: average precision (step rule) micro and macro, and the trapezoid area of the pooled curve."""
    areas = curves.areas(source)
    frame = curves.summarise_areas(areas).rename(columns={"value": "average_precision_micro"})
    for column, kwargs in (("average_precision_macro", {"average": "macro"}),
                           ("auprc_trapezoid_micro", {"rule": "trapezoid"})):
        other = curves.summarise_areas(areas, **kwargs).rename(columns={"value": column})
        frame = frame.merge(other, on="system", how="left")
    return frame
