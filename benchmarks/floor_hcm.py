"""The floor of the HCM family (Riehl et al.'s hierarchical confusion matrix): the numbers of ``hiersql evaluate
--metrics hcm --format csv`` (``tn="published"``, zero_division 0) from the same long Parquet tables, written by hand
as the authors' code reads (docs/hierarchical_confusion_matrix.md): DuckDB reads the files, plain Python walks each
instance (no checks, no plan, no SQL for the counts).

Per (system, instance of the truth), T and P its label sets, each ordered by name (the tables have no rank or row
order), P = {root} when the system predicted nothing:

1. a label's root paths are ordered by their nodes' positions (first appearance in the taxonomy file);
2. a set's paths: the greedy cover of its labels by their root paths (candidates in label order, then path order;
   the one holding the most labels not yet covered, the first on ties); the true labels are the last nodes of
   the chosen paths (first occurrence, in the order chosen), each owning all its root paths;
3. common path c of (t, p): the prefix of t whose nodes are on p; TP = |c| − 1, FP = |p \\ t|, FN = |t \\ p|,
   TN = |S \\ t| + |D \\ (t ∪ p)|, S the other children of the parents of c's nodes, D the children of c's last node;
4. the predicted paths by m (the longest common path with any true path) descending, then their node names
   descending; each takes the first remaining (true label, path) with the strictly longest common path and is
   scored against it; with none left it adds FP = |p| − 1; a true label left adds FN = its shortest path − 1;
5. the counts summed per instance; micro from the sums over instances, macro the mean of the instances' ratios.

    .venv/bin/python benchmarks/floor_hcm.py D/taxonomy.tsv D/truth.parquet D/predictions.parquet [EVALUATE_CSV]

Prints CSV rows ``system,metric,average,value`` in ``hiersql evaluate``'s order (each value as Python's repr).
With a fourth argument, a CSV of ``hiersql evaluate``, it checks that the rows are the same to 1e-9 (exit 1 if
not).
"""

from __future__ import annotations

import math
import sys
from collections import defaultdict

import duckdb
from floor_pair_based import same_rows

RATIOS = ("accuracy", "precision", "recall", "f1", "mcc", "fnr", "fpr", "tnr", "pt")


class Taxonomy:
    """Parents, children, node positions and the root paths of a ``parent<TAB>child`` file."""

    def __init__(self, path: str) -> None:
        self.parents: dict[str, list[str]] = defaultdict(list)
        self.children: dict[str, list[str]] = defaultdict(list)
        self.position: dict[str, int] = {}
        with open(path, encoding="utf-8") as file:
            for line in file:
                parent, child = line.rstrip("\n").split("\t")[:2]
                if child not in self.children[parent]:
                    self.children[parent].append(child)
                    self.parents[child].append(parent)
                for node in (parent, child):
                    self.position.setdefault(node, len(self.position))
        (self.root,) = [node for node in self.position if not self.parents[node]]
        self._paths: dict[str, list[tuple[str, ...]]] = {self.root: [(self.root,)]}

    def paths(self, node: str) -> list[tuple[str, ...]]:
        """The root paths of ``node``, root first, ordered by their nodes' positions."""
        if node not in self._paths:
            found = [(*above, node) for parent in self.parents[node] for above in self.paths(parent)]
            self._paths[node] = sorted(found, key=lambda path: [self.position[n] for n in path])
        return self._paths[node]


def cover(tax: Taxonomy, labels: list[str]) -> list[tuple[str, tuple[str, ...]]]:
    """The greedy path cover of a label set: the chosen (label, path), in the order chosen."""
    candidates = [(label, path) for label in labels for path in tax.paths(label)]
    on_path = [set(path) & set(labels) for _, path in candidates]
    covered: set[str] = set()
    chosen: list[int] = []
    while covered != set(labels):
        best = max((i for i in range(len(candidates)) if i not in chosen),
                   key=lambda i: (len(on_path[i] - covered), -i))
        chosen.append(best)
        covered |= on_path[best]
    return [candidates[i] for i in chosen]


def common(t: tuple[str, ...], p: set[str]) -> int:
    """|c|: the length of the prefix of ``t`` whose nodes are on ``p``."""
    n = 0
    while n < len(t) and t[n] in p:
        n += 1
    return n


def counts(tax: Taxonomy, t: tuple[str, ...], p: tuple[str, ...], k: int) -> tuple[int, int, int, int]:
    """TP, FP, FN, TN of true path ``t`` against predicted path ``p`` with a common path of ``k`` nodes."""
    on_t, on_p = set(t), set(p)
    siblings = {child for node in t[:k] for parent in tax.parents[node] for child in tax.children[parent]}
    below = set(tax.children[t[k - 1]])
    return k - 1, len(on_p - on_t), len(on_t - on_p), len(siblings - on_t) + len(below - on_t - on_p)


def instance(tax: Taxonomy, truth: list[str], pred: list[str]) -> list[int]:
    """The summed TP, FP, FN, TN of one (system, instance)."""
    true_labels = list(dict.fromkeys(label for label, _ in cover(tax, truth)))
    remaining = {label: tax.paths(label) for label in true_labels}
    predicted = [path for _, path in cover(tax, pred or [tax.root])]
    on = [set(path) for path in predicted]
    m = [max((common(t, on[i]) for paths in remaining.values() for t in paths), default=0)
         for i in range(len(predicted))]
    order = sorted(range(len(predicted)), key=lambda i: (m[i], predicted[i]), reverse=True)
    total = [0, 0, 0, 0]
    for i in order:
        if not remaining:
            total[1] += len(predicted[i]) - 1
            continue
        k, label, t = max(((common(t, on[i]), label, t) for label, paths in remaining.items() for t in paths),
                          key=lambda row: row[0])  # the first with the strictly longest common path
        del remaining[label]
        total = [a + b for a, b in zip(total, counts(tax, t, predicted[i], k), strict=True)]
    for paths in remaining.values():
        total[2] += min(map(len, paths)) - 1
    return total


def ratios(tp: float, fp: float, fn: float, tn: float) -> dict[str, float]:
    """Table II of Riehl et al. (zero_division 0)."""
    def div(a: float, b: float) -> float:
        return a / b if b else 0.0

    tpr, tnr = div(tp, tp + fn), div(tn, tn + fp)
    defined = tp + fn and fp + tn and tpr + tnr != 1
    return {"accuracy": div(tp + tn, tp + tn + fp + fn), "precision": div(tp, tp + fp), "recall": tpr,
            "f1": div(2 * tp, 2 * tp + fp + fn),
            "mcc": div(tp * tn - fp * fn, math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))),
            "fnr": div(fn, fn + tp), "fpr": div(fp, fp + tn), "tnr": tnr,
            "pt": (math.sqrt(tpr * (1 - tnr)) + tnr - 1) / (tpr + tnr - 1) if defined else 0.0}


def main(taxonomy: str, truth: str, pred: str, check: str | None = None) -> None:
    tax = Taxonomy(taxonomy)
    con = duckdb.connect()
    true_sets: dict[str, list[str]] = defaultdict(list)
    for instance_id, label in con.execute("SELECT DISTINCT instance_id::VARCHAR, label::VARCHAR"
                                          " FROM read_parquet($f) ORDER BY 2", {"f": truth}).fetchall():
        true_sets[instance_id].append(label)
    pred_sets: dict[tuple[str, str], list[str]] = defaultdict(list)
    for system, instance_id, label in con.execute("SELECT DISTINCT system, instance_id::VARCHAR, label::VARCHAR"
                                                  " FROM read_parquet($f) ORDER BY 3", {"f": pred}).fetchall():
        pred_sets[system, instance_id].append(label)
    lines = ["system,metric,average,value"]
    for system in sorted({system for system, _ in pred_sets}):
        per = [instance(tax, labels, pred_sets.get((system, i), [])) for i, labels in sorted(true_sets.items())]
        sums = [sum(column) for column in zip(*per, strict=True)]
        summed = dict(zip(("tp", "fp", "fn", "tn"), sums, strict=True))
        lines += [f"{system},hcm_{name},,{float(summed[name])!r}" for name in ("tp", "tn", "fp", "fn")]
        micro, each = ratios(*sums), [ratios(*counts_) for counts_ in per]
        for name in RATIOS:
            lines.append(f"{system},hcm_{name},macro,{sum(r[name] for r in each) / len(each)!r}")
            lines.append(f"{system},hcm_{name},micro,{micro[name]!r}")
    print("\n".join(lines))
    if check:
        sys.exit(0 if same_rows(lines, check) else 1)


if __name__ == "__main__":
    main(*sys.argv[1:5])
