"""Shared by the table-source tests: GermEval 2019 subtask B as warehouse tables, the file-based reference,
and a small hand example under injection-shaped names."""

from __future__ import annotations

import csv
import functools
import io
import math
from pathlib import Path

import pyarrow as pa
import pytest

from tests._engine_cases import germeval_b_all

# GermEval B as the issue names it: gold(doc, genre), runs(model, doc, genre), genres(parent_genre, child_genre)
GOLD, RUNS, GENRES = "gold", "runs", "genres"
TABLE_COLUMNS = {GOLD: ("doc", "genre"), RUNS: ("model", "doc", "genre"), GENRES: ("parent_genre", "child_genre")}
COLUMN_FLAGS = ["--instance-col", "doc", "--label-col", "genre", "--system-col", "model",
                "--parent-col", "parent_genre", "--child-col", "child_genre"]

# Names a careless loader would splice into SQL: quotes, spaces, semicolons, capitals.
WEIRD_TABLE = 'Runs "x"; DROP TABLE gold; --'
WEIRD = {"instance": 'Doc ID"; --', "label": "Gen're; DROP", "system": "MODEL Name"}
HAND_EDGES = [("r", "a"), ("r", "b"), ("a", "a1")]
HAND_TRUTH = [("i1", "a1"), ("i2", "b")]
HAND_PREDS = [("M1", "i1", "a1"), ("M1", "i2", "a"), ("M2", "i1", "a"), ("M2", "i2", "b")]
# micro hP/hR by hand (ancestors without the root): truth {a, a1}, {b};
# M1 predicts {a, a1}, {a}: |P∩T| = 2, |P| = 3, |T| = 3; M2 predicts {a}, {b}: |P∩T| = 2, |P| = 2, |T| = 3.
HAND_VALUES = {("M1", "hierarchical_precision"): 2 / 3, ("M1", "hierarchical_recall"): 2 / 3,
               ("M2", "hierarchical_precision"): 1.0, ("M2", "hierarchical_recall"): 2 / 3}


def canonical(data_dir: Path) -> Path:
    return data_dir / "canonical"


def tsv_rows(path: Path) -> list[tuple[str, ...]]:
    with path.open(encoding="utf-8") as fh:
        return [tuple(line.rstrip("\n").split("\t")) for line in fh if line.strip()]


@functools.cache
def germeval_rows(data_dir: Path) -> dict[str, list[tuple[str, ...]]]:
    """The rows of the three tables, read from the canonical files (the system is the file stem)."""
    folder = canonical(data_dir)
    runs = [(path.stem, *row) for path in sorted((folder / "pred_b").glob("*.tsv")) for row in tsv_rows(path)]
    return {GOLD: tsv_rows(folder / "truth_b.tsv"), RUNS: runs, GENRES: tsv_rows(folder / "taxonomy.tsv")}


def germeval_arrow(data_dir: Path) -> dict[str, pa.Table]:
    """The three tables as Arrow tables of text columns named as in :data:`TABLE_COLUMNS`."""
    return {table: pa.table(dict(zip(TABLE_COLUMNS[table], map(list, zip(*rows, strict=True)), strict=True)))
            for table, rows in germeval_rows(data_dir).items()}


def file_reference(data_dir: Path) -> dict[tuple[str, str, str], float]:
    """Every measure (``all``) of the file-based run (:class:`hiersql.Evaluator` on the canonical files, made
    once per test process): ``{(system, metric, average): value}``."""
    return rows_of(germeval_b_all(data_dir)[1])


def rank_by_name(con) -> None:
    """Renumber the ranks of the store's ``truth`` and ``predictions`` by label name within each instance: how
    hiersql ranks the labels of a table without a row order, a rank column or a score column
    (``hiersql.inputs.tables.RANK_ORDER``), restated here independently of it."""
    for table, key in (("truth", "instance_id"), ("predictions", "system, instance_id")):
        on = " AND ".join(f"t.{k.strip()} = r.{k.strip()}" for k in (*key.split(","), "label"))
        con.execute(f"UPDATE {table} AS t SET rank = r.k FROM (SELECT {key}, label, row_number() OVER"
                    f" (PARTITION BY {key} ORDER BY label) AS k FROM {table}) AS r WHERE {on}")


@functools.cache
def by_name_reference(data_dir: Path, metrics: tuple[str, ...] = ("all",)) -> dict[tuple[str, str, str], float]:
    """The ``metrics`` (default every measure, ``all``) of the file-based run with each instance's labels
    ranked by name (:func:`rank_by_name`): the values of GermEval B's tables read without a rank or score
    column."""
    from hiersql import Evaluator, Taxonomy
    from hiersql.measures import Options
    from tests._engine_cases import all_metrics, reference

    folder = canonical(data_dir)
    ev = Evaluator(Taxonomy.from_file(folder / "taxonomy.tsv")).add_truth(folder / "truth_b.tsv")
    ev.add_predictions_many({p.stem: p for p in sorted((folder / "pred_b").glob("*.tsv"))})
    rank_by_name(ev.con)
    return rows_of(reference(ev.store, list(metrics) if metrics != ("all",) else all_metrics(), Options()))


def rows_of(rows) -> dict[tuple[str, str, str], float]:
    return {(r[0], r[1], r[2] or ""): float(r[3]) for r in rows}


def csv_rows(text: str) -> dict[tuple[str, str, str], float]:
    return rows_of(list(csv.reader(io.StringIO(text)))[1:])


def assert_same_values(got: dict, want: dict) -> None:
    """The same rows, the same values: equal, or equal up to the last bits of a float sum (the file-based
    run itself varies that much between runs, by the order DuckDB's threads add doubles)."""
    assert got.keys() == want.keys()
    for key, value in want.items():
        if math.isnan(value):
            assert math.isnan(got[key]), key
        else:
            assert got[key] == pytest.approx(value, rel=1e-12, abs=1e-15), key
