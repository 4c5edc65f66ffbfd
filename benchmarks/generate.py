"""Seeded synthetic benchmark data: a DAG taxonomy, true label sets and noisy predictions.

Writes, into ``--out`` (a folder under ``benchmarks/data/``, which git ignores), in the formats of SPEC §10:

- ``taxonomy.tsv``: ``parent<TAB>child`` edges (not written with ``--taxonomy``: the given file is used as is);
- ``truth.tsv`` and ``pred.tsv``: ``instance_id<TAB>label``, one row per label, no header;
- ``meta.json``: the arguments, the taxonomy path and a few counts (read by ``bench_foundation.py``);
- with ``--systems K``: ``truth.parquet`` and ``predictions.parquet``, one long table of K systems (``system``,
  ``instance_id``, ``label``; system ``m1`` the least noisy), as a warehouse holds them (``bench_warehouse.py``).

Taxonomy model (``--nodes N --depth D --multi-parent m``): one root ``0``; the other nodes are spread over the
levels 1..D, level sizes growing by a factor 3 down to level ceil(D/2) and flat below (the shape of large web
taxonomies such as DBpedia: most nodes are deep). Each node has one parent drawn uniformly from the level above;
a share ``m`` of the nodes of levels >= 2 get one extra parent (30% of them two) drawn uniformly from all
non-root nodes of higher levels. Parents always sit on a higher level, so the graph is acyclic by construction.

Labels: an instance has floor(L) or ceil(L) distinct labels (mean ``--labels`` L), drawn uniformly from the
non-root nodes. Each true label yields one predicted label: the same label with probability ``--same``, a
parent or child (not the root) with probability ``--near``, otherwise a uniformly random non-root node;
duplicates within an instance collapse.

Examples
--------
The DBpedia-Large-sized DAG of Kosmopoulos et al. (Table 10: 325,056 categories, depth 14, 452,167 test
instances, 3.26 labels per instance)::

    python benchmarks/generate.py --nodes 325000 --depth 14 --multi-parent 0.2 --instances 450000 \\
        --labels 3.3 --seed 1 --out benchmarks/data/big

The MeSH variant (BioASQ's hierarchy, 20,000 instances of 3 labels)::

    python benchmarks/generate.py --taxonomy ../shared/data/mesh/mesh_hierarchy_int.txt --instances 20000 \\
        --labels 3 --seed 1 --out benchmarks/data/mesh
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

GROWTH = 3.0  # level-size growth factor down to the middle level
SECOND_EXTRA = 0.3  # share of multi-parent nodes that get a second extra parent


def level_sizes(n_nodes: int, depth: int) -> np.ndarray:
    """Number of nodes on each level 1..depth (the root is level 0), summing to ``n_nodes - 1``."""
    if depth < 1 or n_nodes - 1 < depth:
        raise ValueError(f"need at least depth + 1 = {depth + 1} nodes for depth {depth}")
    middle = math.ceil(depth / 2)
    weights = np.array([GROWTH ** min(level, middle) for level in range(1, depth + 1)])
    exact = weights / weights.sum() * (n_nodes - 1 - depth)
    sizes = np.floor(exact).astype(np.int64)
    remainder = n_nodes - 1 - depth - sizes.sum()
    sizes[np.argsort(exact - sizes)[::-1][:remainder]] += 1  # largest remainders
    return sizes + 1  # every level has at least one node


def synthetic_dag(n_nodes: int, depth: int, multi_parent: float, rng: np.random.Generator) -> np.ndarray:
    """Edges ``(parent, child)`` as an (E, 2) int array over nodes ``0..n_nodes-1``, root ``0``."""
    sizes = level_sizes(n_nodes, depth)
    starts = np.concatenate([[1], 1 + np.cumsum(sizes)[:-1]])
    parent_starts = np.concatenate([[0], starts[:-1]])
    parent_sizes = np.concatenate([[1], sizes[:-1]])
    level = np.repeat(np.arange(depth), sizes)  # level - 1 of nodes 1..n-1
    child = np.arange(1, n_nodes)
    primary = parent_starts[level] + rng.integers(0, parent_sizes[level])
    edges = [np.column_stack([primary, child])]

    deep = child[level >= 1]  # level >= 2: an extra parent can be a non-root node of a higher level
    chosen = rng.choice(deep, size=min(len(deep), round(multi_parent * (n_nodes - 1))), replace=False)
    chosen = np.concatenate([chosen, chosen[rng.random(len(chosen)) < SECOND_EXTRA]])
    first_of_level = starts[level[chosen - 1]]
    extra = 1 + rng.integers(0, first_of_level - 1)  # uniform over nodes 1 .. start of own level - 1
    edges.append(np.column_stack([extra, chosen]))
    return np.unique(np.concatenate(edges), axis=0)  # an extra parent may repeat the primary: collapse


def read_pairs(path: Path) -> tuple[np.ndarray, list[str]]:
    """A ``parent child`` file (tab or whitespace separated) → (edges as index pairs, node names)."""
    index: dict[str, int] = {}
    pairs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        fields = line.split("\t") if "\t" in line else line.split()
        if len(fields) >= 2:
            pairs.append([index.setdefault(f.strip(), len(index)) for f in fields[:2]])
    return np.array(pairs, dtype=np.int64), list(index)


def label_sets(n_instances: int, mean_labels: float, candidates: np.ndarray,
               rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(instance index, label) rows: floor/ceil(mean_labels) distinct labels per instance."""
    low = math.floor(mean_labels)
    counts = low + (rng.random(n_instances) < mean_labels - low)
    width = int(counts.max())
    if width > len(candidates):
        raise ValueError("more labels per instance than label candidates")
    picks = candidates[rng.integers(0, len(candidates), size=(n_instances, width))]
    while True:  # redraw rows with a repeated label (rare for big taxonomies)
        srt = np.sort(picks, axis=1)
        bad = np.flatnonzero((srt[:, 1:] == srt[:, :-1]).any(axis=1))
        if not len(bad):
            break
        picks[bad] = candidates[rng.integers(0, len(candidates), size=(len(bad), width))]
    keep = np.arange(width)[None, :] < counts[:, None]
    instance = np.broadcast_to(np.arange(n_instances)[:, None], picks.shape)
    return instance[keep], picks[keep]


def neighbours(edges: np.ndarray, n_nodes: int, root: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR (offsets, targets) of the parents and children of every node, roots left out."""
    both = np.concatenate([edges, edges[:, ::-1]])
    both = both[~np.isin(both[:, 1], root)]
    both = both[np.argsort(both[:, 0], kind="stable")]
    offsets = np.concatenate([[0], np.cumsum(np.bincount(both[:, 0], minlength=n_nodes))])
    return offsets, both[:, 1]


def noisy(labels: np.ndarray, same: float, near: float, candidates: np.ndarray,
          csr: tuple[np.ndarray, np.ndarray], rng: np.random.Generator) -> np.ndarray:
    """One predicted label per true label: the same, a neighbour (parent or child) or a random node."""
    offsets, targets = csr
    u = rng.random(len(labels))
    out = candidates[rng.integers(0, len(candidates), size=len(labels))]
    out[u < same] = labels[u < same]
    degree = offsets[labels + 1] - offsets[labels]
    is_near = (u >= same) & (u < same + near) & (degree > 0)
    pick = offsets[labels[is_near]] + np.floor(rng.random(is_near.sum()) * degree[is_near]).astype(np.int64)
    out[is_near] = targets[pick]
    return out


def write_long(path: Path, instance: np.ndarray, label: np.ndarray, names: list[str]) -> None:
    """``instance_id<TAB>label`` rows; instance ids are 1-based; repeated (instance, label) rows dropped."""
    _, first = np.unique(instance * len(names) + label, return_index=True)
    first.sort()
    with path.open("w", encoding="utf-8") as fh:
        fh.writelines(f"{i + 1}\t{names[lab]}\n" for i, lab in zip(instance[first].tolist(),
                                                                     label[first].tolist(), strict=True))


def write_parquet(out: Path, instance: np.ndarray, truth: np.ndarray, names: list[str],
                  systems: list[np.ndarray]) -> None:
    """``truth.parquet`` (instance_id, label) and ``predictions.parquet`` (system, instance_id, label), system
    ``m1``.. one per array of ``systems``; repeated (instance, label) rows dropped, as :func:`write_long`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def rows(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        _, first = np.unique(instance * len(names) + labels, return_index=True)
        first.sort()
        return instance[first] + 1, labels[first]

    table_names = pa.array(names)
    ids, labels = rows(truth)
    pq.write_table(pa.table({"instance_id": pa.array(ids).cast(pa.string()), "label": table_names.take(labels)}),
                   out / "truth.parquet")
    parts = []
    for k, predicted in enumerate(systems, start=1):
        ids, labels = rows(predicted)
        parts.append(pa.table({"system": pa.array([f"m{k}"] * len(ids)), "instance_id": pa.array(ids).cast(
            pa.string()), "label": table_names.take(labels)}))
    pq.write_table(pa.concat_tables(parts), out / "predictions.parquet")


def generate(args: argparse.Namespace) -> dict:
    rng = np.random.default_rng(args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.taxonomy:
        taxonomy = Path(args.taxonomy).resolve()
        edges, names = read_pairs(taxonomy)
    else:
        edges = synthetic_dag(args.nodes, args.depth, args.multi_parent, rng)
        names = [str(i) for i in range(args.nodes)]
        taxonomy = (out / "taxonomy.tsv").resolve()
        with taxonomy.open("w", encoding="utf-8") as fh:
            fh.writelines(f"{p}\t{c}\n" for p, c in edges.tolist())
    n_nodes = len(names)
    roots = np.setdiff1d(np.arange(n_nodes), edges[:, 1])
    candidates = np.setdiff1d(np.arange(n_nodes), roots)
    instance, truth = label_sets(args.instances, args.labels, candidates, rng)
    pred = noisy(truth, args.same, args.near, candidates, neighbours(edges, n_nodes, roots), rng)
    write_long(out / "truth.tsv", instance, truth, names)
    write_long(out / "pred.tsv", instance, pred, names)
    if args.systems:  # one long Parquet table of several systems, as a warehouse holds them
        write_parquet(out, instance, truth, names, [
            noisy(truth, max(args.same - 0.05 * k, 0), args.near, candidates, neighbours(edges, n_nodes, roots), rng)
            for k in range(args.systems)])
    n_parents = np.bincount(edges[:, 1], minlength=n_nodes)
    meta = {
        "args": {k: v for k, v in vars(args).items()
                 if k != "out" and not (args.taxonomy and k in ("nodes", "depth", "multi_parent"))},
        "taxonomy": str(taxonomy),
        "nodes": n_nodes,
        "edges": len(edges),
        "multi_parent_nodes": int((n_parents > 1).sum()),
        "instances": args.instances,
        "truth_rows": int(sum(1 for _ in (out / "truth.tsv").open())),
        "pred_rows": int(sum(1 for _ in (out / "pred.tsv").open())),
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return meta


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=325_000, help="taxonomy size, root included")
    p.add_argument("--depth", type=int, default=14, help="number of levels below the root")
    p.add_argument("--multi-parent", type=float, default=0.2, help="share of nodes with more than one parent")
    p.add_argument("--taxonomy", help="use this parent/child file instead of generating a taxonomy")
    p.add_argument("--instances", type=int, default=450_000)
    p.add_argument("--labels", type=float, default=3.3, help="mean number of true labels per instance")
    p.add_argument("--same", type=float, default=0.5, help="share of predictions equal to the true label")
    p.add_argument("--near", type=float, default=1 / 3, help="share of predictions that are a parent or child")
    p.add_argument("--systems", type=int, default=0,
                   help="also write truth.parquet and predictions.parquet: one long table of this many systems")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", required=True, help="output folder, e.g. benchmarks/data/big")
    args = p.parse_args(argv)
    if not 0 <= args.multi_parent <= 1 or args.same < 0 or args.near < 0 or args.same + args.near > 1:
        p.error("--multi-parent, --same and --near are shares: in [0, 1], --same + --near <= 1")
    if args.labels < 1 or args.instances < 1:
        p.error("--labels and --instances must be at least 1")
    return args


if __name__ == "__main__":
    print(json.dumps(generate(parse_args()), indent=1))
