"""``hiersql hemkit HIERARCHY GOLD PRED MAX_DISTANCE MAX_ERROR``: HEMKit's six numbers (SPEC §5, §10)."""

from __future__ import annotations

import argparse

from ..inputs.rules import OPTIONS
from .common import given


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "hemkit", help="HEMKit-compatible hP hR hF LCA-P LCA-R LCA-F",
        description="Print what HEMKit prints for its input files: hP hR hF LCA-P LCA-R LCA-F, each the mean "
                    "over instances, with 17 significant digits. Input HEMKit would mishandle (tabs, blank "
                    "lines, empty predictions) is reported on stderr; unknown labels are an error.",
    )
    p.add_argument("hierarchy", type=given, metavar="HIERARCHY", help="'parent child' lines (whitespace-separated)")
    p.add_argument("gold", type=given, metavar="GOLD", help="one line of whitespace-separated true labels per instance")
    p.add_argument("pred", type=given, metavar="PRED", help="one line of predicted labels per instance, as GOLD")
    p.add_argument("max_distance", metavar="MAX_DISTANCE", help="HEMKit's maximum distance (integer >= 0)")
    p.add_argument("max_error", metavar="MAX_ERROR", help="HEMKit's maximum error (number >= 0; MGIA only)")
    p.add_argument("--unknown", default="error", choices=OPTIONS["unknown"],
                   help="a label not in the hierarchy: error (default) or drop it with a warning")
    p.set_defaults(func=run)


def _number(text: str, name: str, kind: type):
    from ..errors import InputError

    try:
        return kind(text)
    except ValueError:
        raise InputError(f"{name} must be {'an integer' if kind is int else 'a number'}", name,
                         value=text) from None


def run(args: argparse.Namespace) -> int:
    import sys
    import warnings

    from ..api.hemkit import hemkit

    max_distance = _number(args.max_distance, "MAX_DISTANCE", int)
    max_error = _number(args.max_error, "MAX_ERROR", float)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = hemkit(args.hierarchy, args.gold, args.pred, max_distance, max_error, unknown=args.unknown)
    for w in caught:
        print(f"hiersql: warning: {w.message}", file=sys.stderr)
    print(result.line())
    return 0
