"""Benchmark of the pair-based measures (GIE, MGIA) on the MeSH DAG with 20,000 synthetic instances.

Data: ``benchmarks/generate.py`` MeSH variant (3 true labels per instance; each predicted label is the same
label with probability 1/2, a parent or child with probability 1/3, otherwise random; seeded), written to
``benchmarks/data/mesh`` if it is not there yet::

    python benchmarks/bench_pairs.py [--data benchmarks/data/mesh] [--seed 1]

Prints the wall time of loading (taxonomy + closure, labels) and, for each measure, of
``pair_based.evaluate`` from the loaded store (distances in SQL, flow solve, averaging), the peak memory, and
the wall time of ``hiersql evaluate --metrics gie`` (and ``mgia``) in a fresh process, end to end.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MESH = HERE.parent / ".." / "shared" / "data" / "mesh" / "mesh_hierarchy_int.txt"


def ensure_data(folder: Path, seed: int) -> dict:
    """Generate the MeSH data set with ``generate.py`` unless ``folder`` already holds it."""
    meta = folder / "meta.json"
    if not meta.is_file():
        subprocess.run([sys.executable, str(HERE / "generate.py"), "--taxonomy", str(MESH), "--instances",
                        "20000", "--labels", "3", "--seed", str(seed), "--out", str(folder)], check=True)
    return json.loads(meta.read_text())


def timed(label: str, func):
    start = time.perf_counter()
    result = func()
    print(f"{label:<40} {time.perf_counter() - start:8.3f} s")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=HERE / "data" / "mesh")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    from hiersql.inputs.store import Store
    from hiersql.inputs.taxonomy import Taxonomy
    from hiersql.measures import Options, pair_based

    meta = ensure_data(args.data, args.seed)
    print(f"MeSH: {meta['nodes']} nodes, {meta['edges']} edges; {meta['instances']} instances, "
          f"{meta['truth_rows']} true and {meta['pred_rows']} predicted labels")
    start = time.perf_counter()
    store = Store()
    timed("load taxonomy + closure", lambda: store.load_taxonomy(Taxonomy.from_file(meta["taxonomy"])))
    timed("load truth + predictions", lambda: (store.add_truth(args.data / "truth.tsv"),
                                               store.add_predictions("synthetic", args.data / "pred.tsv")))
    setup = time.perf_counter() - start
    runs = [
        ("graph_induced_error", Options()),
        ("graph_induced_error", Options(max_distance=5)),
        ("mgia", Options()),
        ("mgia", Options(max_distance=5)),
        ("mgia", Options(pairing="flow")),
        ("all_pairs_error", Options()),
    ]
    for metric, options in runs:
        label = f"{metric} (max_distance={options.max_distance}, pairing={options.pairing})"
        rows = timed(label, lambda m=metric, o=options: pair_based.evaluate(store, [m], o))
        print("    " + "; ".join(f"{r.metric} {r.average or '-'} = {r.value:.6f}" for r in rows))
    print(f"{'setup (taxonomy, closure, labels)':<40} {setup:8.3f} s")
    print(f"peak memory (max RSS): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    for metric in ("gie", "mgia"):
        cli_end_to_end(metric, meta["taxonomy"], args.data)


def cli_end_to_end(metric: str, taxonomy: str, data: Path) -> None:
    """``hiersql evaluate`` in a fresh process: start-up, taxonomy, closure, labels, measure, output."""
    command = [str(Path(sys.executable).parent / "hiersql"), "evaluate", "--taxonomy", taxonomy, "--truth",
               str(data / "truth.tsv"), "--pred", f"synthetic={data / 'pred.tsv'}", "--metrics", metric,
               "--format", "csv"]
    start = time.perf_counter()
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"{'CLI end to end: ' + metric:<40} {wall:8.3f} s (largest child max RSS so far {peak:.0f} MiB)")
    print("    " + done.stdout.strip().replace("\n", "; "))


if __name__ == "__main__":
    main()
