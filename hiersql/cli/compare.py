"""``hiersql compare``: rank systems per measure with bootstrap confidence intervals and paired tests, and
show how far the measures agree (Kendall's τ). See docs/compare.md."""

from __future__ import annotations

import argparse

from .common import Steps, add_input_arguments, engine_of, load_store
from .evaluate import add_metric_arguments, options_from_args

FORMATS = ("table", "csv", "json", "markdown")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="rank systems with confidence intervals and significance tests",
                       description="Per measure: each system's value, bootstrap confidence interval, rank and "
                                   "group (systems not significantly different from the group's best), and "
                                   "Kendall's tau between the rankings of the measures.")
    add_input_arguments(p)
    add_compare_arguments(p)
    p.add_argument("--format", default="table", choices=FORMATS, help="output format (default: table)")
    p.set_defaults(func=run)


def add_compare_arguments(p: argparse.ArgumentParser) -> None:
    """The measure options of ``evaluate`` and the statistics options (shared with ``report``)."""
    add_metric_arguments(p)
    p.set_defaults(metrics="hf,lca_f1,gie,mgia", average="micro")
    add_test_arguments(p)
    p.add_argument("--holm", action="store_true", help="Holm-correct the p-values over the pairs of a measure")


def add_test_arguments(p: argparse.ArgumentParser) -> None:
    """The options of the paired tests (shared with ``jobs diff``; checked by :func:`check_test_arguments`)."""
    p.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                   help="bootstrap and permutation resamples (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the resampling (default 0)")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence level of the intervals")
    p.add_argument("--alpha", type=float, default=0.05,
                   help="significance level of the paired test (compare's groups; default 0.05)")
    p.add_argument("--test", default="sign", choices=("sign", "wilcoxon", "bootstrap", "permutation"),
                   help="the paired test that decides (behind compare's groups; default: sign, the s-test of"
                   " Kosmopoulos et al.)")


def check_test_arguments(args: argparse.Namespace) -> None:
    """Bad values of :func:`add_test_arguments`' options are input errors naming their flag."""
    from ..errors import InputError

    if args.bootstrap < 1:
        raise InputError("must be at least 1", "--bootstrap", value=args.bootstrap)
    if not 0 < args.confidence < 1:
        raise InputError("must lie strictly between 0 and 1", "--confidence", value=args.confidence)
    if not 0 < args.alpha < 1:
        raise InputError("must lie strictly between 0 and 1", "--alpha", value=args.alpha)


def comparison_from_args(args: argparse.Namespace, beside=None):
    """Check the statistics options (bad ones are input errors naming their flag), load the inputs and run
    :func:`hiersql.analyses.compare.compare`; returns ``(store, comparison, measure options, beside's result)``.
    ``beside(store, options)``, if given, runs on a second connection in a thread while the comparison runs
    (the report's SQL queries)."""
    from dataclasses import fields

    from ..analyses.compare import compare
    from ..engines.concurrency import beside_python
    from ..errors import InputError
    from ..inputs.store import LOAD_STEPS
    from ..measures import resolve

    check_test_arguments(args)
    checked = options_from_args(args)  # a bad value names its flag
    options = {field.name: getattr(checked, field.name) for field in fields(checked)}
    metrics = [m for m in args.metrics.split(",") if m.strip()]
    if not metrics:
        raise InputError("no metric given", "--metrics", value=args.metrics)
    groups = resolve(metrics, "--metrics")  # unknown names fail before any file is read
    steps = Steps(len(LOAD_STEPS), "compare")
    try:
        store = load_store(args, steps, families=set(groups))
    finally:
        steps.close()
    n_systems = len(store.systems())
    if n_systems < 2 and args.command == "compare":  # a report of one system shows its values alone
        raise InputError("compare needs at least two systems to rank", "--pred", value=n_systems)
    side = store.cursor() if beside is not None else None
    try:
        with engine_of(args, store) as engine, \
                beside_python((lambda: beside(side, options)) if beside is not None else None) as extra:
            comparison = compare(store, metrics, n_resamples=args.bootstrap, seed=args.seed,
                                 confidence=args.confidence, alpha=args.alpha, test=args.test, holm=args.holm,
                                 engine=engine, **options)
    finally:
        if side is not None:
            side.con.close()
    return store, comparison, options, extra.result() if extra is not None else None


def run(args: argparse.Namespace) -> int:
    _, comparison, _, _ = comparison_from_args(args)
    print(format_comparison(comparison, args.format), end="")
    return 0


def format_comparison(comparison, fmt: str) -> str:
    """The comparison as an aligned table, CSV (the ranking, one row per system and measure), JSON (all
    tables) or Markdown."""
    ranking = comparison.ranking
    if fmt == "csv":
        return ranking.to_csv(index=False, lineterminator="\n")
    if fmt == "json":
        import json

        payload = {
            "settings": comparison.settings,
            "ranking": _records(ranking),
            "tests": _records(comparison.tests),
            "kendall_tau": _records(comparison.kendall.reset_index()),
            "spearman_rho": _records(comparison.spearman.reset_index()),
        }
        return json.dumps(payload, indent=1) + "\n"
    wide = wide_ranking(ranking)
    tau = comparison.kendall.map(lambda v: "" if v != v else f"{v:.2f}")
    notes = _notes(comparison)
    if fmt == "markdown":
        return (_markdown(wide) + "\n" + "Kendall's τ between the measures' rankings:\n\n"
                + _markdown(tau.reset_index()) + "\n" + "".join(f"{line}\n" for line in notes))
    return (_aligned(wide) + "\nKendall's tau between the measures' rankings:\n" + _aligned(tau.reset_index())
            + "\n" + "".join(f"{line}\n" for line in notes))


def wide_ranking(ranking):
    """One row per system (ordered as :func:`hiersql.analyses.compare.ordered_systems`), one column per measure with
    ``value [ci_low, ci_high] rank·group``; empty where a system has no row for the measure (hard predictions
    at k > 1)."""
    import pandas as pd

    from ..analyses.compare import group_letter, ordered_systems, rank_text

    systems = ordered_systems(ranking)
    columns: dict[str, list[str]] = {"system": systems}
    for measure, part in ranking.groupby("measure", sort=False):
        part = part.set_index("system")
        cells = []
        for system in systems:
            if system not in part.index:
                cells.append("")
                continue
            row = part.loc[system]
            cell = f"{row.value:.4f}"
            if not pd.isna(row.ci_low):
                cell += f" [{row.ci_low:.4f}, {row.ci_high:.4f}]"
            cell += f" {rank_text(row['rank'])}{group_letter(row.group)}"
            cells.append(cell)
        columns[str(measure)] = cells
    return pd.DataFrame(columns)


def _notes(comparison) -> list[str]:
    s = comparison.settings
    without = sorted(set(comparison.ranking.loc[comparison.ranking["items"] == "", "measure"]))
    notes = [f"Cells: value [{s['confidence']:.0%} bootstrap interval, {s['n_resamples']} resamples, seed "
             f"{s['seed']}] rank and group letter; systems sharing the letter of the group's best are not "
             f"significantly different from it ({s['test']} test, alpha {s['alpha']}"
             f"{', Holm-corrected' if s['holm'] else ''})."]
    if without:
        notes.append("No interval or test (the value is not a mean or a ratio of sums over instances): "
                     + ", ".join(without) + ".")
    return notes


def _records(frame) -> list[dict]:
    import json

    return json.loads(frame.to_json(orient="records", double_precision=15))


def _aligned(frame) -> str:
    from .common import aligned

    return aligned([tuple(frame.columns), *frame.itertuples(index=False)], left=1)


def _markdown(frame) -> str:
    def cell(value) -> str:
        return str(value).replace("|", "\\|")

    lines = ["| " + " | ".join(cell(c) for c in frame.columns) + " |",
             "|" + "|".join("---" if i == 0 else "---:" for i in range(len(frame.columns))) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines) + "\n"
