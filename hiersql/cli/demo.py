"""``hiersql demo``: evaluate the three hand-written systems of ``fixtures/demo`` with every measure that
applies, print one column per system, then rank them on one measure per family, say in one sentence per
family what it rewards (and why the hF winner beats the runner-up), and write the HTML report."""

from __future__ import annotations

import argparse
from pathlib import Path

SYSTEMS = ("cautious", "flat_errors", "shallow")
# one measure per family for the ranking, and what the family rewards
FAMILY_MEASURES = (
    ("hf", "set-based hF", "credits every ancestor a prediction shares with the truth, so a near miss (a "
                           "sibling of the true leaf) keeps most of its score and a far miss gets nothing"),
    ("example_f1", "flat example F1", "credits exact labels only: a sibling counts as wrong as a truck"),
    ("gie", "pair-based GIE (lower is better)", "charges each predicted label the tree distance to the true "
                                                "label it is paired with, so far errors cost more than near ones"),
    ("lca_f1", "LCA-F", "compares only the paths up to the lowest common ancestor, so the ancestors high up "
                        "that every prediction shares earn nothing"),
    ("hcm_f1", "hierarchical confusion matrix F1", "counts hits and misses along the paths, so stopping above "
                                                   "the leaf loses recall but makes no false positive"),
)


def demo_dir() -> Path:
    """``fixtures/demo`` of the repository (the demo data is not part of the wheel)."""
    return Path(__file__).resolve().parents[2] / "fixtures" / "demo"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run every measure on the small demo data of fixtures/demo")
    p.add_argument("--metrics", default="all", help="measures to compute (default: all that apply)")
    p.add_argument("--db", metavar="FILE", help="keep the tables and results in this DuckDB file")
    p.add_argument("--report", default="demo-out", metavar="DIR|FILE.html",
                   help="where to write the HTML report (default: demo-out/index.html in the current directory)")
    p.add_argument("--no-report", action="store_true", help="do not write the report")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import pandas as pd

    from ..api.evaluator import Evaluator
    from ..errors import InputError

    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    if not metrics:
        raise InputError("no measure given", "--metrics", value=args.metrics)
    if not args.no_report:
        from .common import check_page_target

        check_page_target(args.report, "--report")
    con = None
    if args.db:
        from ..inputs.dbfile import connect

        con = connect(args.db, source=f"--db {args.db}")
    folder = demo_dir()
    ev = Evaluator(folder / "taxonomy.tsv", db=args.db, con=con)
    ev.add_truth(folder / "truth.tsv")
    for system in SYSTEMS:
        ev.add_predictions(system, folder / f"{system}.tsv")
    print(f"taxonomy: {ev.taxonomy}\ntruth: {folder / 'truth.tsv'} ({len(ev.con.table('instances'))} instances)\n")

    rows = ev.rows(metrics)
    if args.db:
        ev.save(rows, dataset="demo")
    table = pd.DataFrame(rows)
    table["metric"] = table["metric"] + table["average"].map(lambda a: f" ({a})" if a else "")
    wide = table.pivot_table(index="metric", columns="system", values="value", sort=False)
    print(wide.to_string(float_format=lambda v: f"{v:.4f}"))

    comparison = ev.compare([m for m, _, _ in FAMILY_MEASURES], average="micro")
    print("\n" + explain(ev, comparison), end="")
    if not args.no_report:
        import shlex

        from ..analyses.report import file_digest
        from .report import input_report

        files = [("taxonomy", folder / "taxonomy.tsv"), ("truth", folder / "truth.tsv")]
        files += [(system, folder / f"{system}.tsv") for system in SYSTEMS]
        out = input_report(ev.store, comparison, [(f"{name} {path}", file_digest(path)) for name, path in files],
                           "hiersql " + shlex.join(args.argv), "hiersql demo", args.report, flag="--report")
        print(f"\nreport: {out.resolve()}")
    ev.close()
    return 0


def explain(ev, comparison) -> str:
    """The ranking on one measure per family, one sentence per family on what it rewards and who wins it,
    and why the hF winner beats the runner-up, from the per-instance values."""
    from .compare import format_comparison

    ranking = comparison.ranking
    n = len(ev.con.table("instances"))
    tested = ranking[ranking["group"].notna()]
    if (tested["group"] == 1).all():
        verdict = f"on {n} instances no difference is significant: every system shares group a"
    else:
        verdict = "systems with letter a are not significantly different from the best"
    lines = [f"Ranking on one measure per family (value [95% bootstrap interval] rank and group; {verdict}):",
             "", format_comparison(comparison, "table").split("\nKendall")[0].rstrip(), "",
             "What each family rewards:"]
    for metric, name, rewards in FAMILY_MEASURES:
        part = ranking[ranking["metric"] == _metric_name(metric)]
        best = ", ".join(part.loc[part["rank"] == 1, "system"])
        lines.append(f"- {name} {rewards}; best here: {best}.")
    lines += ["", why_hf(ev, ranking)]
    return "\n".join(lines) + "\n"


def _metric_name(alias: str) -> str:
    from ..measures import catalog

    return catalog()[alias][1]


def why_hf(ev, ranking) -> str:
    """One sentence on why the first system on hF (micro) beats the second, from the per-instance hF: exact
    instances (hF = 1) and the mean hF of the others."""
    hf = ranking[ranking["metric"] == "hierarchical_f1"].sort_values(["rank", "system"])
    (first, v1), (second, v2) = list(zip(hf["system"], hf["value"], strict=True))[:2]
    per_instance = ev.per_instance("hf")
    stats = {}
    for system in (first, second):
        values = per_instance.loc[per_instance["system"] == system, "hierarchical_f1"]
        wrong = values[values < 1]
        stats[system] = (int((values == 1).sum()), len(values), float(wrong.mean()) if len(wrong) else 1.0,
                         float(wrong.min()) if len(wrong) else 1.0)
    (e1, n, m1, low1), (e2, _, m2, _) = stats[first], stats[second]
    sentence = (f"Why {first} beats {second} on hF ({v1:.4f} vs {v2:.4f}): {first} is exact on {e1} of {n} "
                f"instances, {second} on {e2}; on the others their mean hF is {m1:.2f} and {m2:.2f}")
    if e1 > e2 and m1 < m2:
        return (sentence + f". hF gives {second}'s near misses partial credit, but {first}'s {e1 - e2} more "
                f"exact answers outweigh its far misses (its worst instance scores {low1:.2f}).")
    if m1 > m2:
        return sentence + f": {first}'s mistakes lie closer to the truth."
    return sentence + "."
