"""Batch evaluation jobs: many datasets × many systems × many measures, results kept in a DuckDB file.

A job file (TOML) lists datasets; each names its taxonomy, truth, predictions (globs allowed) and label
format, and the measures and options to compute::

    db = "results.duckdb"             # where results go (relative to the job file)
    metrics = ["hp", "hr", "hf"]
    average = ["micro", "macro"]

    [[dataset]]
    name = "germeval-b"
    taxonomy = "../shared/data/germeval2019/hierarchy.txt"
    truth = "../shared/data/germeval2019/blurbs_test_label.txt"
    predictions = ["../shared/data/germeval2019/submissions/*.txt"]
    format = "germeval-b"
    options = { include_root = false }

Each dataset is evaluated and its rows written in ONE transaction, so a crash mid-job loses nothing that
was already done, and a re-run skips datasets whose results are already stored (``--force`` recomputes).
"""

from __future__ import annotations

import tomllib
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import InputError

if TYPE_CHECKING:
    from .metrics import Row
    from .store import Store


def save_rows(
    store: Store, rows: list[Row], dataset: str | None = None, run_id: str | None = None, replace: bool = False
) -> str:
    """Insert ``rows`` into ``results`` in one transaction (all or nothing); returns the run id. With
    ``replace``, earlier results of ``dataset`` are deleted in the same transaction."""
    run_id = run_id or uuid.uuid4().hex[:12]
    with store.transaction():
        if replace:
            store.con.execute("DELETE FROM results WHERE dataset IS NOT DISTINCT FROM $d", {"d": dataset})
        store.con.executemany(
            "INSERT INTO results (run_id, dataset, system, metric, average, value) VALUES (?, ?, ?, ?, ?, ?)",
            [(run_id, dataset, r.system, r.metric, r.average or None, r.value) for r in rows],
        )
    return run_id


@dataclass
class Dataset:
    name: str
    taxonomy: Path
    truth: Path
    predictions: list[str]
    format: str = "long"
    metrics: list[str] = field(default_factory=lambda: ["hp", "hr", "hf"])
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class Job:
    db: Path
    datasets: list[Dataset]


def load_job(path: str | Path) -> Job:
    """Read and check a job file; paths are relative to the job file's folder."""
    path = Path(path)
    if not path.is_file():
        raise InputError("job file not found", path)
    try:
        spec = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"job file is not valid TOML ({exc})", path) from None
    base = path.parent
    if not spec.get("dataset"):
        raise InputError("job file lists no [[dataset]]", path)
    datasets = []
    names: set[str] = set()
    for i, ds in enumerate(spec["dataset"], start=1):
        missing = [k for k in ("name", "taxonomy", "truth", "predictions") if k not in ds]
        if missing:
            raise InputError(f"dataset #{i} lacks {missing}", path)
        if ds["name"] in names:
            raise InputError("dataset name used twice", path, value=ds["name"])
        names.add(ds["name"])
        options = {"average": spec.get("average", ["micro", "macro"]), **spec.get("options", {}),
                   **ds.get("options", {})}
        preds = ds["predictions"] if isinstance(ds["predictions"], list) else [ds["predictions"]]
        datasets.append(Dataset(
            name=ds["name"], taxonomy=base / ds["taxonomy"], truth=base / ds["truth"],
            predictions=[p if "=" in p else str(base / p) for p in preds],
            format=ds.get("format", "long"), metrics=ds.get("metrics", spec.get("metrics", ["hp", "hr", "hf"])),
            options=options,
        ))
    return Job(db=base / spec.get("db", "results.duckdb"), datasets=datasets)


def done_datasets(db: Path) -> set[str]:
    """Names of the datasets whose results are already stored in ``db``."""
    import duckdb

    if not db.exists():
        return set()
    with duckdb.connect(str(db), read_only=True) as con:
        if not con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'results'").fetchone()[0]:
            return set()
        return {r[0] for r in con.execute("SELECT DISTINCT dataset FROM results").fetchall()}


def run_job(job: Job, force: bool = False, on_dataset: Callable[[str, str], None] | None = None) -> dict[str, str]:
    """Evaluate every dataset of ``job`` not yet stored (all with ``force``); returns ``{dataset: status}``."""
    from .commands.common import parse_preds
    from .evaluator import compute, make_options
    from .store import Store

    done = set() if force else done_datasets(job.db)
    status: dict[str, str] = {}
    for ds in job.datasets:
        if ds.name in done:
            status[ds.name] = "skipped (already stored)"
        else:
            store = Store(job.db)
            try:  # Store.load reads the taxonomy file while DuckDB reads the label files
                store.load(ds.taxonomy, ds.truth, parse_preds(ds.predictions), ds.format)
                rows = compute(store, ds.metrics, make_options(**ds.options))
                save_rows(store, rows, ds.name, replace=True)
                for table in ("predictions", "systems", "truth", "instances"):
                    store.con.execute(f"DELETE FROM {table}")
            finally:
                store.close()
            status[ds.name] = f"done ({len(rows)} values)"
        if on_dataset:
            on_dataset(ds.name, status[ds.name])
    return status
