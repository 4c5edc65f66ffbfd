"""``hiersql breakdown``: set-based measures per level, per depth of the true label, or per class (a
classification report); and the error profile (docs/breakdowns.md)."""

from __future__ import annotations

import argparse

from .common import add_input_arguments, load_store

BY = ("level", "depth", "class", "flat-level", "errors", "distances", "consistency")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "breakdown", help="measures per level, per depth, per class; error profile",
        description="Break the set-based measures down by taxonomy level (--by level), by the depth of the "
                    "deepest true label (--by depth) or by class (--by class: a classification report); flat "
                    "P/R/F per level (--by flat-level); the error categories of the predicted labels "
                    "(--by errors), distance statistics (--by distances) or the path-consistency rate "
                    "(--by consistency).",
    )
    add_input_arguments(p)
    p.add_argument("--by", default="level", choices=BY, help="what to break down by (default: level)")
    p.add_argument("--format", default="table", choices=("table", "csv"),
                   help="table (the text report for --by class) or csv (full float precision)")
    p.add_argument("--include-root", action="store_true", help="count the root in the augmented sets")
    p.add_argument("--max-distance", type=int, metavar="K", help="ancestors only up to K edges")
    p.add_argument("--augment", default="ancestors", choices=("ancestors", "descendants", "cesa_bianchi"),
                   help="set augmentation (default: ancestors)")
    p.add_argument("--beta", type=float, default=1.0, help="beta of the F-measures (default 1)")
    p.add_argument("--zero-division", type=float, default=0.0, help="value of 0/0 ratios (default 0)")
    p.add_argument("--digits", type=int, default=2, help="decimals of the text report (default 2)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import sys

    from .. import breakdowns, error_profile
    from ..errors import InputError
    from ..evaluator import make_options

    if args.max_distance is not None and args.max_distance < 0:
        raise InputError("must be >= 0", "--max-distance", value=args.max_distance)
    if args.digits < 0:
        raise InputError("must be >= 0", "--digits", value=args.digits)
    options = make_options(include_root=args.include_root, max_distance=args.max_distance, augment=args.augment,
                           beta=args.beta, zero_division=args.zero_division)
    store = load_store(args)
    try:
        if args.by == "class" and args.format == "table":
            sys.stdout.write(breakdowns.report(store, options, digits=args.digits).text)
            return 0
        frame = {
            "level": lambda: breakdowns.by_level(store, options),
            "depth": lambda: breakdowns.by_depth(store, options),
            "class": lambda: breakdowns.report(store, options).frame,
            "flat-level": lambda: breakdowns.flat_by_level(store, options),
            "errors": lambda: error_profile.error_categories(store),
            "distances": lambda: error_profile.distance_statistics(store),
            "consistency": lambda: error_profile.path_consistency(store),
        }[args.by]()
    finally:
        store.close()
    if args.format == "csv":
        frame.to_csv(sys.stdout, index=False, float_format=lambda x: repr(float(x)), lineterminator="\n")
    else:
        sys.stdout.write(frame.to_string(index=False) + "\n")
    return 0
