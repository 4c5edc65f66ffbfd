"""Benchmark of the severity family (issue 39): ``hiersql evaluate`` against a plain-DuckDB floor.

Data (``generate``, seeded): a tree of 1,000 leaves at depth 4 (levels of 10, 50, 200 and 1,000 nodes under a
root, each node under a random node of the level above, every node of a level with a child), 100,000
instances with one true leaf each, and a network's 20 classes of highest score per instance (2·10^6 score
rows, the top 20 a user keeps of 1,000 scored classes): the true leaf among them in 90 % of the instances,
half of the others from the true leaf's level-1 subtree (a hierarchy-aware network's near misses), scores on
a grid of 0.001 (ties occur). Written as ``taxonomy.tsv``, ``truth.parquet`` (``instance_id, label``) and
``pred.parquet`` (``instance_id, label, score``).

Floor (``floor``): the six measures at k = 1 and 5 (top-k accuracy, hierarchical distance@k, its best,
mistake severity, hierarchical precision@k and mAP@k; docs/severity.md) computed from the same files by one
hand-written DuckDB query (:data:`FLOOR`), printed as CSV ``metric,average,value``.

Without a subcommand: generate into a temporary folder, run the hiersql command line (:func:`hiersql_command`)
and the floor once each, check that every number agrees (to 1e-9), print both times, their ratio and the two
commands, to be timed alternately (the figure in RESULTS.md). ``--keep DIR`` writes the data to DIR instead::

    .venv/bin/python benchmarks/bench_severity.py [--instances 100000] [--seed 1] [--keep DIR]
    .venv/bin/python benchmarks/bench_severity.py generate --out DIR [--instances N] [--seed S]
    .venv/bin/python benchmarks/bench_severity.py floor --data DIR
    .venv/bin/python benchmarks/bench_severity.py oneshot --data DIR [--instances 2000] [--inner] [--calls 5]
"""

from __future__ import annotations

import argparse
import csv
import io
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LEVELS = (10, 50, 200, 1000)  # nodes per level below the root; the last level's are the leaves
TOP = 20  # scored classes kept per instance
KS = (1, 5)
MEASURES = ("top_k_accuracy", "hierarchical_distance_at_k", "best_hierarchical_distance_at_k", "mistake_severity",
            "hierarchical_precision_at_k", "hierarchical_map_at_k")

# The floor: the same numbers as `hiersql evaluate --metrics <MEASURES> --k 1,5`, written by hand for this data
# (one true label per instance, the classes C are the leaves, d = the height of the lowest common ancestor).
FLOOR = """
WITH RECURSIVE
edges AS (
    SELECT parent, child FROM read_csv('{data}/taxonomy.tsv', delim = '\t', header = false,
                                       columns = {{'parent': 'VARCHAR', 'child': 'VARCHAR'}})
),
nodes AS (SELECT parent AS node FROM edges UNION SELECT child FROM edges),
leaves AS (SELECT node FROM nodes WHERE node NOT IN (SELECT parent FROM edges)),
up(node, ancestor, steps) AS (
    SELECT node, node, 0 FROM leaves
    UNION ALL
    SELECT up.node, e.parent, up.steps + 1 FROM up JOIN edges AS e ON e.child = up.ancestor
),
height AS (SELECT ancestor AS node, max(steps) AS h FROM up GROUP BY ancestor),
dist AS (  -- every pair of leaves: the height of their lowest common ancestor
    SELECT a.node AS u, b.node AS v, CASE WHEN a.node = b.node THEN 0 ELSE min(h.h) END AS d
    FROM up AS a JOIN up AS b ON b.ancestor = a.ancestor JOIN height AS h ON h.node = a.ancestor
    GROUP BY a.node, b.node
),
diameter AS (SELECT max(d) AS dmax FROM dist),
truth AS (SELECT instance_id, label FROM read_parquet('{data}/truth.parquet')),
top AS (
    SELECT instance_id, label, row_number() OVER (PARTITION BY instance_id ORDER BY score DESC, label) AS j
    FROM read_parquet('{data}/pred.parquet')
    QUALIFY j <= {kmax}
),
pairs AS MATERIALIZED (  -- (a materialised table: joined to dist first, 1000 times too many rows)
    SELECT p.instance_id, p.j, t.label AS y, p.label
    FROM top AS p JOIN truth AS t ON t.instance_id = p.instance_id
),
ranked AS (
    SELECT p.instance_id, p.j, d.d, CASE WHEN p.label = p.y THEN 1 ELSE 0 END AS hit, 1.0 - d.d / m.dmax AS s, p.y
    FROM pairs AS p JOIN dist AS d ON d.u = p.y AND d.v = p.label CROSS JOIN diameter AS m
),
best AS (  -- Σ_{{j <= k'}} of the similarities of the classes nearest to y
    SELECT u, j, sum(1.0 - d / dmax) OVER (PARTITION BY u ORDER BY j) AS best
    FROM (SELECT u, d, row_number() OVER (PARTITION BY u ORDER BY d, v) AS j FROM dist) CROSS JOIN diameter
    QUALIFY j <= {kmax}
),
precision_at AS (  -- per instance and k' = 1 .. kmax: Σ_{{j <= k'}} s_j / Σ_{{j <= k'}} best_j(y)
    SELECT r.instance_id, b.j AS kk, sum(r.s) / max(b.best) AS p
    FROM ranked AS r JOIN best AS b ON b.u = r.y AND r.j <= b.j
    GROUP BY r.instance_id, b.j
),
ks(k) AS (VALUES {ks}),
per_instance AS (
    SELECT ks.k, r.instance_id, max(r.hit) AS hit, avg(r.d) AS hdist, min(r.d) AS nearest,
           max(CASE WHEN r.j = 1 THEN r.d END) AS d1
    FROM ranked AS r JOIN ks ON r.j <= ks.k
    GROUP BY ks.k, r.instance_id
),
per_instance_map AS (
    SELECT ks.k, p.instance_id, avg(CASE WHEN p.kk = ks.k THEN p.p END) AS p, avg(p.p) AS ap
    FROM precision_at AS p JOIN ks ON p.kk <= ks.k
    GROUP BY ks.k, p.instance_id
)
SELECT 'top_k_accuracy' AS metric, k, avg(hit) AS value FROM per_instance GROUP BY k
UNION ALL SELECT 'hierarchical_distance_at_k', k, avg(hdist) FROM per_instance GROUP BY k
UNION ALL SELECT 'best_hierarchical_distance_at_k', k, avg(nearest) FROM per_instance GROUP BY k
UNION ALL SELECT 'mistake_severity', k, avg(hdist) FILTER (WHERE d1 > 0) FROM per_instance GROUP BY k
UNION ALL SELECT 'hierarchical_precision_at_k', k, avg(p) FROM per_instance_map GROUP BY k
UNION ALL SELECT 'hierarchical_map_at_k', k, avg(ap) FROM per_instance_map GROUP BY k
"""


def generate(out: Path, instances: int, seed: int) -> None:
    """Write the tree, the truth and the top-20 scores (module docstring) to ``out``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(seed)
    edges, above = [], ["r"]
    for level, size in enumerate(LEVELS, start=1):
        names = [f"n{level}_{i}" for i in range(size)]
        parents = above + [rng.choice(above) for _ in range(size - len(above))]  # every node above has a child
        rng.shuffle(parents)
        edges += list(zip(parents, names, strict=True))
        above = names
    leaves = above
    top_of = {}  # each leaf's level-1 ancestor
    parent = {c: p for p, c in edges}
    for leaf in leaves:
        node = leaf
        while parent[node] != "r":
            node = parent[node]
        top_of[leaf] = node
    near = {}
    for leaf in leaves:
        near.setdefault(top_of[leaf], []).append(leaf)
    out.mkdir(parents=True, exist_ok=True)
    (out / "taxonomy.tsv").write_text("".join(f"{p}\t{c}\n" for p, c in edges), encoding="utf-8")
    truth = [rng.choice(leaves) for _ in range(instances)]
    ids, labels, scores = [], [], []
    for i, y in enumerate(truth):
        chosen = {y} if rng.random() < 0.9 else set()
        group = near[top_of[y]]
        while len(chosen) < TOP // 2:
            chosen.add(rng.choice(group) if len(group) > TOP else rng.choice(leaves))
        while len(chosen) < TOP:
            chosen.add(rng.choice(leaves))
        for label in sorted(chosen):
            ids.append(str(i))
            labels.append(label)
            scores.append(rng.randrange(500, 1000) / 1000 if label == y else rng.randrange(0, 750) / 1000)
    pq.write_table(pa.table({"instance_id": [str(i) for i in range(instances)], "label": truth}),
                   out / "truth.parquet")
    pq.write_table(pa.table({"instance_id": ids, "label": labels, "score": scores}), out / "pred.parquet")


def floor(data: Path) -> list[tuple[str, str, float]]:
    """``(metric, "@k", value)`` of the six measures at k = 1 and 5, by the hand-written query :data:`FLOOR`."""
    import duckdb

    con = duckdb.connect()
    sql = FLOOR.format(data=data.as_posix(), kmax=max(KS), ks=", ".join(f"({k})" for k in KS))
    return [(metric, f"@{k}", float(value)) for metric, k, value in con.execute(sql).fetchall()]


def hiersql_command(data: Path) -> list[str]:
    """The command line timed against the floor."""
    return [sys.executable, "-m", "hiersql", "evaluate", "--taxonomy", str(data / "taxonomy.tsv"),
            "--truth", str(data / "truth.parquet"), "--pred", f"net={data / 'pred.parquet'}",
            "--metrics", ",".join(MEASURES), "--k", ",".join(map(str, KS)), "--format", "csv"]


def floor_command(data: Path) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "floor", "--data", str(data)]


def timed(command: list[str]) -> tuple[float, str]:
    """Wall seconds and standard output of ``command`` (which must succeed)."""
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return time.perf_counter() - start, done.stdout


def compare(data: Path) -> None:
    """Run both commands once, check that their numbers agree and print the times and the commands."""
    hiersql_time, out = timed(hiersql_command(data))
    floor_time, floor_out = timed(floor_command(data))
    got = {(r["metric"], r["average"]): float(r["value"]) for r in csv.DictReader(io.StringIO(out))}
    want = {(r["metric"], r["average"]): float(r["value"]) for r in csv.DictReader(io.StringIO(floor_out))}
    if set(got) != set(want):
        sys.exit(f"the measures differ: hiersql {sorted(got)}, floor {sorted(want)}")
    for key, value in sorted(want.items()):
        if abs(got[key] - value) > 1e-9 * max(1.0, abs(value)):
            sys.exit(f"{key}: hiersql {got[key]!r}, floor {value!r}")
        print(f"{key[0]:<34} {key[1]:<4} {value:.12f}")
    print(f"hiersql {hiersql_time:.2f} s, floor {floor_time:.2f} s, ratio {hiersql_time / floor_time:.2f} "
          "(one run each: time them alternately)")
    print("hiersql:", " ".join(hiersql_command(data)))
    print("floor:  ", " ".join(floor_command(data)))


def oneshot(data: Path, instances: int, inner: bool, calls: int) -> None:
    """Time the one-shot functions at k = 5 on a score matrix of the first ``instances`` true labels of ``data``:
    one column per leaf (and with ``inner`` per node of the level above: columns that are not leaves), scores
    drawn on the same grid; the median of ``calls`` calls after the first, and the value."""
    import numpy as np
    import pyarrow.parquet as pq

    import hiersql

    taxonomy = hiersql.Taxonomy.from_file(data / "taxonomy.tsv")
    truth = pq.read_table(data / "truth.parquet")["label"].to_pylist()[:instances]
    columns = sorted(taxonomy.leaves) + (sorted(f"n{len(LEVELS) - 1}_{i}" for i in range(LEVELS[-2])) if inner else [])
    scores = np.random.default_rng(1).integers(0, 1000, (len(truth), len(columns))) / 1000
    for metric in ("top_k_accuracy", "hierarchical_precision_at_k", "hierarchical_map_at_k"):
        function = getattr(hiersql, metric)
        value = function(truth, scores, taxonomy, 5, labels=columns)
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            function(truth, scores, taxonomy, 5, labels=columns)
            times.append(time.perf_counter() - start)
        print(f"{metric:<30} {len(truth)} x {len(columns)}  median {sorted(times)[calls // 2] * 1e3:7.1f} ms"
              f"  value {value:.12f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instances", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", type=Path, metavar="DIR", help="write the data here (default: a temporary folder)")
    sub = parser.add_subparsers(dest="command")
    make = sub.add_parser("generate", help="write the data")
    make.add_argument("--out", type=Path, required=True)
    make.add_argument("--instances", type=int, default=100_000)
    make.add_argument("--seed", type=int, default=1)
    run = sub.add_parser("floor", help="the measures by the hand-written DuckDB query, as CSV")
    run.add_argument("--data", type=Path, required=True)
    shot = sub.add_parser("oneshot", help="time the one-shot functions on a score matrix of the data's tree")
    shot.add_argument("--data", type=Path, required=True)
    shot.add_argument("--instances", type=int, default=2000)
    shot.add_argument("--inner", action="store_true", help="also a column per node of the level above the leaves")
    shot.add_argument("--calls", type=int, default=5)
    args = parser.parse_args()
    if args.command == "oneshot":
        oneshot(args.data, args.instances, args.inner, args.calls)
    elif args.command == "generate":
        generate(args.out, args.instances, args.seed)
    elif args.command == "floor":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(["metric", "average", "value"])
        writer.writerows((m, a, repr(v)) for m, a, v in floor(args.data))
    elif args.keep is not None:
        generate(args.keep, args.instances, args.seed)
        compare(args.keep)
    else:
        with tempfile.TemporaryDirectory(prefix="bench_severity_") as folder:
            generate(Path(folder), args.instances, args.seed)
            compare(Path(folder))


if __name__ == "__main__":
    main()
