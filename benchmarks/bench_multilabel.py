"""Benchmark of the flat measures and the multi-label confusion matrix (one run, wall times and peak memory).

Two inputs:

- ``--germeval DIR``: the canonical GermEval 2019 subtask B files (``taxonomy.tsv``, ``truth_b.tsv``, every
  ``pred_b/*.tsv``: the 19 systems with a subtask-B file, 343 classes), plus the heat map of one system with
  all its classes;
- ``--data DIR``: a folder written by ``benchmarks/generate.py`` (``meta.json``, ``truth.tsv``, ``pred.tsv``).

Example::

    .venv/bin/python benchmarks/bench_multilabel.py --germeval ../shared/data/canonical
    .venv/bin/python benchmarks/bench_multilabel.py --data benchmarks/data/mesh
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hiersql.inputs.store import Store  # noqa: E402
from hiersql.inputs.taxonomy import Taxonomy  # noqa: E402
from hiersql.measures import Options, flat  # noqa: E402
from hiersql.measures import multilabel as ml  # noqa: E402


def timed(label: str, fn):
    start = time.perf_counter()
    out = fn()
    print(f"{label:<44} {time.perf_counter() - start:8.2f} s", flush=True)
    return out


def load(args: argparse.Namespace) -> Store:
    store = Store()
    if args.memory_limit:
        store.con.execute(f"SET memory_limit = '{args.memory_limit}'")
    if args.germeval:
        canon = Path(args.germeval)
        timed("load taxonomy + closure", lambda: store.load_taxonomy(Taxonomy.from_file(canon / "taxonomy.tsv")))
        timed("load truth", lambda: store.add_truth(canon / "truth_b.tsv"))
        preds = sorted((canon / "pred_b").glob("*.tsv"))
        timed(f"load {len(preds)} prediction files",
              lambda: [store.add_predictions(p.stem, p) for p in preds])
    else:
        folder = Path(args.data)
        meta = json.loads((folder / "meta.json").read_text())
        timed("load taxonomy + closure", lambda: store.load_taxonomy(Taxonomy.from_file(meta["taxonomy"])))
        timed("load truth", lambda: store.add_truth(folder / "truth.tsv"))
        timed("load predictions", lambda: store.add_predictions("pred", folder / "pred.tsv"))
    return store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--germeval", metavar="DIR", help="canonical GermEval folder")
    source.add_argument("--data", metavar="DIR", help="folder written by benchmarks/generate.py")
    parser.add_argument("--memory-limit", metavar="SIZE", help="DuckDB memory_limit, e.g. 6GB (spills beyond)")
    args = parser.parse_args()
    store = load(args)
    counts = store.con.execute(
        "SELECT (SELECT count(*) FROM instances), (SELECT count(*) FROM truth), (SELECT count(*) FROM predictions),"
        " (SELECT count(*) FROM systems), (SELECT count(*) FROM closure)"
    ).fetchone()
    print("instances {}, truth rows {}, prediction rows {}, systems {}, closure rows {}".format(*counts))
    rows = timed("flat: all 10 measures, all systems", lambda: flat.evaluate(store, list(flat.METRICS), Options()))
    print(f"  {len(rows)} rows")
    cells = timed("multilabel: confusion_long (M, recall, precision)", lambda: ml.confusion_long(store))
    print(f"  {len(cells)} non-zero cells")
    timed("multilabel: class_scores", lambda: ml.class_scores(store))
    timed("multilabel: confusion_long, depth 1", lambda: ml.confusion_long(store, depth=1))
    if args.germeval:
        from hiersql.analyses.figures import heatmap, save

        system = store.systems()[0]
        matrix = timed(f"matrix({system})", lambda: ml.matrix(store, system))
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "m.png"
            timed(f"heat map {matrix.shape[0]} x {matrix.shape[1]} to PNG", lambda: save(heatmap(matrix), path))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:.0f} MiB")


if __name__ == "__main__":
    main()
