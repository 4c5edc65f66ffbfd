"""Benchmark: ``hiersql.hierarchical_f1`` (micro) on label-set lists against the peers that compute the same
number from paths: hiereval's ``hierarchical_prf`` (pure Python) and HiClass's ``metrics.f1`` (NumPy arrays).

Input: the transposon data of ``../shared/data/canonical`` (9,006 instances, 18-class tree; truth and TERL's
predictions as root-to-leaf paths), tiled ``--tiles`` times (1,000 instances: the first 1,000). Each
call is made ``--calls`` times per size, the three tools alternated call by call; the median wall time is
printed, with the three values (equal to 1e-12, or the script fails). Issue 41 item 5: hiersql at least as fast
as the fastest peer from 1,000 to 100,000 instances.

    .venv/bin/pip install -e '.[bench]'   # the peers
    .venv/bin/python benchmarks/bench_oneshot_peers.py [--calls 9]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from pathlib import Path

import hiereval
import numpy as np
from hiclass import metrics as hiclass_metrics

import hiersql

CANONICAL = (Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "canonical").resolve()


def paths(file: Path, ids: list[str] | None = None) -> tuple[list[str], list[list[str]]]:
    """The instance ids and each instance's labels root first (a transposon label's depth is its count of /)."""
    sets: dict[str, list[str]] = defaultdict(list)
    for line in file.read_text(encoding="utf-8").splitlines():
        instance, label = line.split("\t")[:2]
        sets[instance].append(label)
    ids = ids or list(sets)
    return ids, [sorted(sets.get(i, []), key=lambda label: label.count("/")) for i in ids]


def padded(rows: list[list[str]]) -> np.ndarray:
    """Paths as HiClass takes them: one row per instance, padded with empty strings."""
    width = max(map(len, rows))
    return np.array([row + [""] * (width - len(row)) for row in rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=9)
    args = parser.parse_args()
    ids, truth = paths(CANONICAL / "truth_transposon.tsv")
    _, pred = paths(CANONICAL / "pred_transposon" / "TERL.tsv", ids)
    taxonomy = hiersql.Taxonomy.from_file(CANONICAL / "taxonomy_transposon.tsv")
    print("| instances | hiersql | hiereval | HiClass | hiersql / fastest peer |")
    print("| --- | --- | --- | --- | --- |")
    for size in (1000, len(ids), 10 * len(ids)):
        tiles = -(-size // len(ids))
        y_true, y_pred = (truth * tiles)[:size], (pred * tiles)[:size]
        true_array, pred_array = padded(y_true), padded(y_pred)
        calls = {"hiersql": lambda t=y_true, p=y_pred: hiersql.hierarchical_f1(t, p, taxonomy),
                 "hiereval": lambda t=y_true, p=y_pred: hiereval.hierarchical_prf(t, p).f1,
                 "hiclass": lambda t=true_array, p=pred_array: hiclass_metrics.f1(t, p)}
        values = {name: call() for name, call in calls.items()}  # the first call of each, not timed
        if max(values.values()) - min(values.values()) > 1e-12:
            raise SystemExit(f"the values differ at {size} instances: {values}")
        times: dict[str, list[float]] = defaultdict(list)
        for _ in range(args.calls):
            for name, call in calls.items():
                start = time.perf_counter()
                call()
                times[name].append(time.perf_counter() - start)
        ms = {name: statistics.median(t) * 1000 for name, t in times.items()}
        print(f"| {size:,} | {ms['hiersql']:.1f} ms | {ms['hiereval']:.1f} ms | {ms['hiclass']:.1f} ms | "
              f"{ms['hiersql'] / min(ms['hiereval'], ms['hiclass']):.2f} |")


if __name__ == "__main__":
    main()
