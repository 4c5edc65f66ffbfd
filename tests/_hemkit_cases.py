"""The inputs of tests/test_hemkit_lca.py, and how HEMKit's expected outputs were made from them.

HEMKit is the C++ tool of ``BioASQ/Evaluation-Measures`` (``hierarchical/software``), built with
``g++ -O2 main.cpp bestPathfinder.cpp graph.cpp subGraphCreator.cpp -o HEMKit`` from a copy whose only change is
``std::cout << std::setprecision(17);`` at the start of ``main`` (it prints 6 significant digits otherwise).
Running this module with that binary prints every expected value the tests hold::

    python -m tests._hemkit_cases /path/to/HEMKit [--data ../shared/data]

The inputs: HEMKit's example files; the hand-made cases of ``fixtures/hemkit/``; small random DAGs
(:func:`random_dag`); MeSH with synthetic label sets (:func:`mesh_instances`), all generated with fixed seeds
here, never stored.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HAND = ROOT / "fixtures" / "hemkit"
DISTANCES = (0, 1, 2, 4, 100000)
MESH_DISTANCES = (2, 4, 100000)
MESH_SEED, MESH_INSTANCES = 16, 2000
RANDOM_SEEDS = tuple(range(40))
RANDOM_DISTANCES = (0, 1, 2, 3, 100)


def random_dag(seed: int) -> tuple[list[tuple[int, int]], list[tuple[list[int], list[int]]]]:
    """A random DAG of 6-30 nodes with ids from 1..39 (40 % of the nodes with 1-4 parents, the others one)
    listed in shuffled edge order, and 3 instances of 1-6 gold and 1-6 predicted labels."""
    rng = random.Random(seed)
    n = rng.randint(6, 30)
    ids = rng.sample(range(1, 40), n)
    edges = []
    for i in range(1, n):
        k = 1 if rng.random() < 0.4 else rng.randint(1, min(4, i))
        edges.extend((ids[p], ids[i]) for p in rng.sample(range(i), k))
    rng.shuffle(edges)
    instances = [(rng.sample(ids, rng.randint(1, min(6, n))), rng.sample(ids, rng.randint(1, min(6, n))))
                 for _ in range(3)]
    return edges, instances


def mesh_instances(mesh: Path, seed: int = MESH_SEED, n: int = MESH_INSTANCES) -> tuple[list[str], list[str]]:
    """``n`` synthetic instances on the MeSH hierarchy file ``mesh``: 3 distinct gold labels drawn uniformly;
    for each, a predicted label that is the same with probability 1/2, a parent or child with 1/3, else any
    node (duplicates dropped). Returns HEMKit's gold and prediction lines."""
    nodes: dict[str, None] = {}
    near: dict[str, list[str]] = {}
    for line in mesh.read_text().splitlines():
        parent, child = line.split()
        nodes[parent] = nodes[child] = None
        near.setdefault(parent, []).append(child)
        near.setdefault(child, []).append(parent)
    names = list(nodes)
    rng = random.Random(seed)
    gold, pred = [], []
    for _ in range(n):
        true = rng.sample(names, 3)
        predicted = []
        for label in true:
            r = rng.random()
            predicted.append(label if r < 1 / 2 else rng.choice(near[label]) if r < 5 / 6 else rng.choice(names))
        gold.append(" ".join(true))
        pred.append(" ".join(dict.fromkeys(predicted)))
    return gold, pred


def write(folder: Path, hierarchy: str, gold: list[str], pred: list[str]) -> list[Path]:
    """HEMKit's three files in ``folder``."""
    paths = [folder / "hierarchy.txt", folder / "gold.txt", folder / "pred.txt"]
    for path, text in zip(paths, (hierarchy, "".join(f"{g}\n" for g in gold), "".join(f"{p}\n" for p in pred)),
                          strict=True):
        path.write_text(text)
    return paths


def write_random_dag(folder: Path, seed: int) -> list[Path]:
    edges, instances = random_dag(seed)
    return write(folder, "".join(f"{a} {b}\n" for a, b in edges), [" ".join(map(str, g)) for g, _ in instances],
                 [" ".join(map(str, p)) for _, p in instances])


def write_mesh(folder: Path, mesh: Path) -> list[Path]:
    """HEMKit's files for MeSH and :func:`mesh_instances` (the hierarchy file itself, not a copy)."""
    gold, pred = mesh_instances(mesh)
    files = [mesh, folder / "gold.txt", folder / "pred.txt"]
    files[1].write_text("".join(f"{g}\n" for g in gold))
    files[2].write_text("".join(f"{q}\n" for q in pred))
    return files


def _run(hemkit: str, files: list[Path], d: int) -> str:
    return subprocess.run([hemkit, *map(str, files), str(d), "5"], capture_output=True, text=True,
                          check=True).stdout.strip()


def main() -> None:
    p = argparse.ArgumentParser(description="print HEMKit's outputs on the cases of tests/test_hemkit_lca.py")
    p.add_argument("hemkit", help="a HEMKit binary printing 17 significant digits")
    p.add_argument("--data", type=Path, default=ROOT / ".." / "shared" / "data")
    args = p.parse_args()
    example = args.data / "hemkit-example"
    files = [example / "cat_hier.txt", example / "Golden.txt", example / "result.txt"]
    print("EXAMPLE = {", *(f"    {d}: \"{_run(args.hemkit, files, d)}\"," for d in DISTANCES), "}", sep="\n")
    print("HAND = {")
    for case in sorted(q.name for q in HAND.iterdir() if q.is_dir()):
        files = [HAND / case / name for name in ("hierarchy.txt", "gold.txt", "pred.txt")]
        print(f"    \"{case}\": {{", *(f"        {d}: \"{_run(args.hemkit, files, d)}\"," for d in DISTANCES),
              "    },", sep="\n")
    print("}")
    with tempfile.TemporaryDirectory() as tmp:
        print("RANDOM = {")
        for seed in RANDOM_SEEDS:
            files = write_random_dag(Path(tmp), seed)
            lca = [" ".join(_run(args.hemkit, files, d).split()[3:]) for d in RANDOM_DISTANCES]
            print(f"    {seed}: {tuple(lca)!r},")
        print("}")
        files = write_mesh(Path(tmp), args.data / "mesh" / "mesh_hierarchy_int.txt")
        print("MESH = {", *(f"    {d}: \"{_run(args.hemkit, files, d)}\"," for d in MESH_DISTANCES), "}",
              sep="\n")


if __name__ == "__main__":
    main()
