"""Benchmark: one-shot calls (``hiersql.hierarchical_f1(y_true, y_pred, taxonomy)`` and friends) on 1,000
instances (issue 19 item 4: < 50 ms after the first call).

Input: the first 1,000 instances of GermEval 2019 subtask B (``../shared/data/canonical``: the taxonomy, the
truth and the NoTeam predictions), the taxonomy read once as a :class:`hiersql.Taxonomy` and passed to every
call. Each function is called once (the first call builds the taxonomy's tables and renders the queries),
then ``--calls`` times; the median and the spread of those calls are printed, with the median CPU time of the
calling thread (``time.thread_time``: what the call costs on one core, whatever else the machine runs) and the
process CPU time per call (DuckDB's worker threads included). ``--only NAME ...`` runs the calls whose name
starts with one of those.
Run it with two trees alternated to compare (the script uses only the public API)::

    PYTHONPATH=. .venv/bin/python benchmarks/bench_oneshot.py [--calls 20] [--instances 1000]
    PYTHONPATH=OTHER_TREE .venv/bin/python benchmarks/bench_oneshot.py ...
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from pathlib import Path

import hiersql

ROOT = Path(__file__).resolve().parents[1]
CANONICAL = (ROOT / ".." / "shared" / "data" / "canonical").resolve()
CALLS = {
    "hierarchical_f1 micro": lambda t, p, tax: hiersql.hierarchical_f1(t, p, tax),
    "hierarchical_f1 samples": lambda t, p, tax: hiersql.hierarchical_f1(t, p, tax, "macro"),
    "hierarchical_precision micro": lambda t, p, tax: hiersql.hierarchical_precision(t, p, tax),
    "symmetric_difference_loss": lambda t, p, tax: hiersql.symmetric_difference_loss(t, p, tax),
    "lca_f1 micro": lambda t, p, tax: hiersql.lca_f1(t, p, tax),
    "lca_f1 samples": lambda t, p, tax: hiersql.lca_f1(t, p, tax, "samples"),
    "lca_precision micro": lambda t, p, tax: hiersql.lca_precision(t, p, tax),
    "lca_recall micro": lambda t, p, tax: hiersql.lca_recall(t, p, tax),
    "graph_induced_error": lambda t, p, tax: hiersql.graph_induced_error(t, p, tax),
    "mgia micro": lambda t, p, tax: hiersql.mgia(t, p, tax),
    "mgia macro": lambda t, p, tax: hiersql.mgia(t, p, tax, "macro"),
    "all_pairs_error": lambda t, p, tax: hiersql.all_pairs_error(t, p, tax),
    "label_f1 macro": lambda t, p, tax: hiersql.label_f1(t, p, average="macro"),
    "example_f1": lambda t, p, tax: hiersql.example_f1(t, p),
    "hamming_loss": lambda t, p, tax: hiersql.hamming_loss(t, p),
    "lpp decreasing": lambda t, p, tax: hiersql.lpp(t, p, tax, weights="decreasing"),
    "path_length_score": lambda t, p, tax: hiersql.path_length_score(t, p, tax),
}


def label_sets(path: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            instance, label = line.split("\t")[:2]
            out[instance].append(label)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--only", nargs="*", default=None, help="the calls whose name starts with one of these")
    args = parser.parse_args()
    taxonomy = hiersql.Taxonomy.from_file(CANONICAL / "taxonomy.tsv")
    truth = label_sets(CANONICAL / "truth_b.tsv")
    pred = label_sets(CANONICAL / "pred_b" / "NoTeam__GRU_Attention_ensemble1.tsv")
    ids = sorted(truth)[: args.instances]
    y_true, y_pred = [truth[i] for i in ids], [pred.get(i, []) for i in ids]
    print(f"hiersql from {Path(hiersql.__file__).parent}; {len(ids)} instances, {args.calls} calls after the first")
    for name, call in CALLS.items():
        if args.only is not None and not name.startswith(tuple(args.only)):
            continue
        start = time.perf_counter()
        value = call(y_true, y_pred, taxonomy)
        first = time.perf_counter() - start
        times, threads = [], []
        cpu = time.process_time()
        for _ in range(args.calls):
            start, thread = time.perf_counter(), time.thread_time()
            call(y_true, y_pred, taxonomy)
            times.append(time.perf_counter() - start)
            threads.append(time.thread_time() - thread)
        cpu = (time.process_time() - cpu) / args.calls
        print(f"{name:28s} value {value:.6f}  first {first * 1e3:6.1f} ms  median {statistics.median(times) * 1e3:6.1f}"
              f" ms (min {min(times) * 1e3:.1f}, max {max(times) * 1e3:.1f})  this thread's CPU median"
              f" {statistics.median(threads) * 1e3:.1f} ms  process CPU/call {cpu * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
