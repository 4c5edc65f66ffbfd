"""Benchmark of the scoring-tree measures (Lanus et al.) on a large synthetic scoring tree.

A seeded random tree (``--nodes`` nodes, node ``i`` under a random node among ``i/4 .. i-1``) with decreasing
weights; ``--objects`` single-label objects whose true
label is a random non-root node (5 % of them are ghost objects with no truth); ``--systems`` systems that
predict the truth with probability 1/2, its parent or a child with probability 1/4, a random node otherwise,
and nothing for 5 % of the objects (missed detections). Then the same pairs as confusion matrices
(``pair_counts``). Times loading and :func:`hiersql.measures.scoring.evaluate` (all eight measures, micro and
macro, every system in one SQL pass) and the flat rows::

    python benchmarks/bench_scoring.py [--nodes 30000] [--objects 100000] [--systems 10] [--seed 1]
"""

from __future__ import annotations

import argparse
import random
import resource
import time


def timed(label: str, func):
    start = time.perf_counter()
    result = func()
    print(f"{label:<46} {time.perf_counter() - start:8.3f} s")
    return result


def random_tree(nodes: int, rng: random.Random) -> list[tuple[str, str]]:
    """Node i > 0 hangs under a random node among the last three quarters of the earlier ones (a deep-ish tree)."""
    return [(f"n{rng.randrange(i // 4, i)}", f"n{i}") for i in range(1, nodes)]


def objects(tree, n: int, rng: random.Random) -> list[list[str]]:
    labels = [x for x in tree.nodes if x != tree.root]
    return [[] if rng.random() < 0.05 else [rng.choice(labels)] for _ in range(n)]


def predict(tree, truth: list[list[str]], rng: random.Random) -> list[list[str]]:
    labels = [x for x in tree.nodes if x != tree.root]
    out = []
    for labelset in truth:
        r = rng.random()
        if not labelset:
            out.append([rng.choice(labels)])  # a ghost detection
        elif r < 0.05:
            out.append([])  # a missed detection
        elif r < 0.5:
            out.append(list(labelset))
        elif r < 0.75:
            near = [p for p in tree.parents(labelset[0]) + tree.children(labelset[0]) if p != tree.root]
            out.append([rng.choice(near)] if near else list(labelset))
        else:
            out.append([rng.choice(labels)])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=30000)
    parser.add_argument("--objects", type=int, default=100000)
    parser.add_argument("--systems", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    from hiersql.engines import DuckDBEngine
    from hiersql.inputs.store import Store
    from hiersql.inputs.taxonomy import Taxonomy
    from hiersql.measures import Options, scoring
    from hiersql.measures.scoring import trees as st

    rng = random.Random(args.seed)
    edges = random_tree(args.nodes, rng)
    tree = timed("tree + decreasing weights", lambda: st.decreasing(Taxonomy.from_edges(edges)))
    print(f"  {len(tree)} nodes, depth {tree.depth}")
    truth = objects(tree, args.objects, rng)
    preds = {f"sys{k}": predict(tree, truth, rng) for k in range(args.systems)}
    store = Store()
    timed("load taxonomy + closure", lambda: store.load_taxonomy(tree))
    timed("load truth", lambda: store.add_truth(truth))
    timed(f"load {args.systems} systems", lambda: [store.add_predictions(s, p) for s, p in preds.items()])
    options = Options(offset=-1.0)
    rows = timed("evaluate: 8 measures, micro+macro, all systems",
                 lambda: scoring.evaluate(store, list(scoring.METRICS), options))
    hf = next(r.value for r in rows if r[:3] == ("sys0", "scoring_hf", "micro"))
    print(f"  {len(rows)} rows; sys0 micro hF = {hf:.4f}")
    timed("flat rows", lambda: scoring.flat(store))
    pairs = len(DuckDBEngine(store).frame("scoring", "scoring_pairs"))
    print(f"  {pairs} scored pairs")

    cm = Store()
    cm.load_taxonomy(tree)
    scoring.ensure_pair_table(cm)
    timed("confusion matrices into pair_counts", lambda: _copy_counts(store, cm))
    rows_cm = timed("evaluate confusion matrices", lambda: scoring.evaluate(cm, list(scoring.METRICS), options))
    same = all(abs(a.value - b.value) < 1e-9 for a, b in zip(sorted(rows), sorted(rows_cm), strict=True))
    print(f"  confusion-matrix results equal the label results: {same}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory (max RSS)                          {peak:8.0f} MiB")


def _copy_counts(src, dst) -> None:
    """Aggregate the label pairs of ``src`` into counted pairs of ``dst``."""
    from hiersql.engines import DuckDBEngine

    pairs = DuckDBEngine(src).frame("scoring", "scoring_pairs")
    counts = pairs.groupby(["system", "truth", "prediction"], as_index=False, dropna=False)["n"].sum()
    dst.con.register("_counts", counts)
    dst.con.execute("INSERT INTO pair_counts SELECT system, truth, prediction, n FROM _counts")
    dst.con.unregister("_counts")


if __name__ == "__main__":
    main()
