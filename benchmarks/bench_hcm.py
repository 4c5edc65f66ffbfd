"""Benchmark: the hierarchical confusion matrix of Riehl et al.'s three experiments, end to end.

Transposon (6 prediction files + the truth, decoded top-down), GermEval 2019 subtask A (22 submissions, taxonomy
root + 8 genres) and subtask B (the 19 submissions with a subtask_b section, taxonomy hierarchy.txt): reading,
loading into the store, and the counts and measures of every system (``confusion.evaluate``: the rows of
``Evaluator.rows``, which need no pandas; ``hierarchical_confusion_matrix`` returns the same numbers as a
DataFrame and so adds the one-time pandas import, about 0.4 s). The authors' code takes 7.5 s, 4.1 s and 461 s
for the same three experiments.

Usage: ``.venv/bin/python benchmarks/bench_hcm.py [DATA_DIR]`` (default ``../shared/data``). Prints the
wall time of each phase and the peak resident memory of the process.
"""

from __future__ import annotations

import resource
import sys
import time
import warnings
from pathlib import Path

T0 = time.perf_counter()

from hiersql.errors import DataWarning  # noqa: E402
from hiersql.inputs.decoding import read_transposon, transposon_taxonomy  # noqa: E402
from hiersql.inputs.store import Store  # noqa: E402
from hiersql.inputs.taxonomy import Taxonomy  # noqa: E402
from hiersql.measures import Options, confusion  # noqa: E402

MODELS = ("HC_GA", "HC_LGA", "NLLCPN", "RFSB", "TERL", "TopDown")


def transposon(data: Path) -> tuple[Store, int]:
    folder = data / "transposon"
    store = Store()
    store.load_taxonomy(transposon_taxonomy())
    store.add_truth(read_transposon(folder / "truelabels.txt", binary=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)  # the AU(PRC) trailer of two files
        store.add_predictions_many({model: read_transposon(folder / f"predictions_{model}.txt") for model in MODELS})
    return store, len(MODELS)


def germeval(data: Path, subtask: str) -> tuple[Store, int]:
    folder = data / "germeval2019"
    full = Taxonomy.from_file(folder / "hierarchy.txt")
    store = Store()
    if subtask == "a":
        store.load_taxonomy(Taxonomy.from_edges([("root", g) for g in full.children(full.root)]))
    else:
        store.load_taxonomy(full)
    store.add_truth(folder / "blurbs_test_label.txt", f"germeval-{subtask}")
    files = sorted((folder / "submissions").glob("*.txt"))
    if subtask == "b":
        files = [f for f in files if "subtask_b" in f.read_text(encoding="utf-8")]
    store.add_predictions_many({f.stem: f for f in files}, f"germeval-{subtask}")
    return store, len(files)


def main() -> None:
    data = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
    imports = time.perf_counter() - T0
    print(f"imports: {imports:.2f} s")
    total_files = 0
    start, start_cpu = time.perf_counter(), time.process_time()
    hcm_wall = hcm_cpu = 0.0
    for name, load in (("transposon", lambda: transposon(data)), ("germeval A", lambda: germeval(data, "a")),
                       ("germeval B", lambda: germeval(data, "b"))):
        t0, c0 = time.perf_counter(), time.process_time()
        store, n_files = load()
        t1, c1 = time.perf_counter(), time.process_time()
        rows = confusion.evaluate(store, list(confusion.METRICS), Options(average=("micro",)))
        t2, c2 = time.perf_counter(), time.process_time()
        total_files += n_files
        hcm_wall, hcm_cpu = hcm_wall + t2 - t1, hcm_cpu + c2 - c1
        print(f"{name}: {n_files} prediction files, {len({r.system for r in rows})} systems; load {t1 - t0:.2f} s wall "
              f"({c1 - c0:.2f} s CPU), hcm {t2 - t1:.2f} s wall ({c2 - c1:.2f} s CPU)")
        store.close()
    elapsed, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"all {total_files} files: {elapsed:.2f} s wall ({cpu:.2f} s CPU), of which hcm {hcm_wall:.2f} s wall "
          f"({hcm_cpu:.2f} s CPU); plus {imports:.2f} s of imports; peak RSS {peak:.0f} MiB")


if __name__ == "__main__":
    main()
