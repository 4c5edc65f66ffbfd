"""``hiersql evaluate``: every requested measure for every system, as a table, CSV or JSON (SPEC §10)."""

from __future__ import annotations

import argparse

from .common import Steps, add_input_arguments, load_store


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("evaluate", help="evaluate systems' predictions against the truth",
                       description="Evaluate one or more systems against the truth over a taxonomy.")
    add_input_arguments(p)
    add_metric_arguments(p)
    p.add_argument("--format", default="table", choices=("table", "csv", "json"), help="output format")
    p.add_argument("--dataset", help="dataset name stored with the results (with --db)")
    p.add_argument("--per-instance", metavar="DIR",
                   help="also write the per-instance values of each measure family to DIR/<family>.csv")
    p.set_defaults(func=run)


def add_metric_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--metrics", default="hp,hr,hf",
                   help="comma-separated measures or aliases (SPEC §10), or 'all' (default: hp,hr,hf)")
    p.add_argument("--average", default="micro,macro", help="micro, macro or both (default: micro,macro)")
    p.add_argument("--include-root", action="store_true", help="count the root in augmented sets and paths")
    p.add_argument("--max-distance", type=int, metavar="K", help="ancestors/paths only up to K edges")
    p.add_argument("--beta", type=float, default=1.0, help="beta of the F-measures (default 1)")
    p.add_argument("--zero-division", type=float, default=0.0, help="value of 0/0 ratios (default 0)")
    p.add_argument("--augment", default="ancestors", choices=("ancestors", "descendants", "cesa_bianchi"),
                   help="set augmentation of the hierarchical P/R/F")
    p.add_argument("--dmax", type=float, default=5.0, help="cost of pairing with a default class (GIE, MGIA)")
    p.add_argument("--lca-graph", default="greedy", choices=("optimal", "greedy", "extended", "hemkit"),
                   help="minimal LCA graph selection")
    p.add_argument("--pairing", default="nearest", choices=("nearest", "flow"), help="MGIA pairing")
    p.add_argument("--shared", default="strict", choices=("strict", "reuse"),
                   help="GIE: a class in both sets is matched strictly once, or may be reused (paper's Table 2)")
    p.add_argument("--denominator", default="union", choices=("union", "symmetric_difference"),
                   help="MGIA denominator: |P ∪ T|·dmax (default) or the text's symmetric-difference formula")
    p.add_argument("--distance-limit", default="side", choices=("side", "pair"),
                   help="pair-based: --max-distance bounds each side's climb to the LCA (default) or d(u, v)")
    p.add_argument("--labels", metavar="LIST",
                   help="flat label-based measures: comma-separated class universe (default: classes seen)")
    p.add_argument("--offset", type=float, default=0.0, help="offset o <= 0 of the scoring-tree measures")
    p.add_argument("--tn", default="published", choices=("published", "descendants"),
                   help="true negatives of the hierarchical confusion matrix")


def options_from_args(args: argparse.Namespace) -> dict:
    return {
        "average": [a.strip() for a in args.average.split(",") if a.strip()],
        "include_root": args.include_root,
        "max_distance": args.max_distance,
        "beta": args.beta,
        "zero_division": args.zero_division,
        "augment": args.augment,
        "dmax": args.dmax,
        "lca_graph": args.lca_graph,
        "pairing": args.pairing,
        "shared": args.shared,
        "denominator": args.denominator,
        "distance_limit": args.distance_limit,
        "tn": args.tn,
        "offset": args.offset,
        "labels": tuple(x.strip() for x in args.labels.split(",") if x.strip()) if args.labels else None,
    }


def run(args: argparse.Namespace) -> int:
    from ..errors import InputError
    from ..evaluator import compute, make_options

    try:
        opts = make_options(**options_from_args(args))
    except ValueError as exc:
        raise InputError(str(exc), "--average", value=args.average) from None
    metrics = [m for m in args.metrics.split(",") if m.strip()]
    from ..metrics import resolve
    from ..store import LOAD_STEPS

    groups = resolve(metrics)  # unknown names fail before any file is read
    steps = Steps(len(LOAD_STEPS) + len(groups), "evaluate")
    try:
        store = load_store(args, steps)
        rows = compute(store, metrics, opts, on_family=steps.start)
    finally:
        steps.close()
    if args.per_instance:
        write_per_instance(store, groups, opts, args.per_instance)
    if args.db:
        from ..jobs import save_rows

        save_rows(store, rows, dataset=args.dataset)
    print(format_rows(rows, args.format), end="")
    return 0


def write_per_instance(store, groups: dict[str, list[str]], opts, folder: str) -> None:
    """``folder/<family>.csv`` with the per-instance table of every requested family that has one."""
    from pathlib import Path

    from ..metrics import family

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    for fam in groups:
        per_instance = getattr(family(fam), "per_instance", None)
        if per_instance is not None:
            per_instance(store, opts).to_csv(out / f"{fam}.csv", index=False)


def format_rows(rows: list, fmt: str) -> str:
    """Rows ``(system, metric, average, value)`` as an aligned table, CSV (full precision) or JSON."""
    if fmt == "csv":
        lines = ["system,metric,average,value"]
        lines += [f"{_csv(r[0])},{r[1]},{r[2]},{r[3]!r}" for r in rows]
        return "\n".join(lines) + "\n"
    if fmt == "json":
        import json

        return json.dumps([dict(zip(("system", "metric", "average", "value"), r, strict=True)) for r in rows],
                          indent=1) + "\n"
    header = ("system", "metric", "average", "value")
    cells = [header] + [(r[0], r[1], r[2], f"{r[3]:.4f}") for r in rows]
    widths = [max(len(str(c[i])) for c in cells) for i in range(4)]
    out = []
    for i, c in enumerate(cells):
        out.append("  ".join(str(v).ljust(w) if j < 3 else str(v).rjust(w)
                             for j, (v, w) in enumerate(zip(c, widths, strict=True))))
        if i == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out) + "\n"


def _csv(text: str) -> str:
    return '"' + text.replace('"', '""') + '"' if any(ch in text for ch in ',"\n') else text
