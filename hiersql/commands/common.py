"""Arguments shared by the sub-commands that read a taxonomy, a truth and predictions, and the code that
turns them into a loaded :class:`~hiersql.store.Store`."""

from __future__ import annotations

import argparse
import glob
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError

if TYPE_CHECKING:
    from ..store import Store

LABEL_FORMATS = ("long", "lines", "germeval-a", "germeval-b", "wide")


def add_input_arguments(parser: argparse.ArgumentParser) -> None:
    """``--taxonomy``, ``--truth``, ``--pred`` (repeatable, ``NAME=SOURCE`` or a glob), the column names of
    table sources (``--instance-col`` ...), ``--labels-format``, ``--unknown``, ``--db``."""
    parser.add_argument("--taxonomy", required=True, metavar="SOURCE",
                        help="parent<TAB>child edges (whitespace pairs, .csv with header, .parquet detected),"
                             " or a table: duckdb:PATH::TABLE, postgresql://...::SCHEMA.TABLE, sql:SELECT ...")
    parser.add_argument("--truth", required=True, metavar="SOURCE", help="true labels (a file or a table)")
    parser.add_argument("--pred", action="append", required=True, metavar="NAME=SOURCE",
                        help="predictions of one system, or of one system per value of the system column of a"
                             " table; repeat it, or give a glob (NAME = file stem)")
    for role, default in (("instance", "instance_id"), ("label", "label"), ("system", "system"),
                          ("score", "score"), ("parent", "parent"), ("child", "child")):
        parser.add_argument(f"--{role}-col", metavar="COLUMN",
                            help=f"column of the {role} in table sources (default: {default})")
    parser.add_argument("--labels-format", default="long", choices=LABEL_FORMATS,
                        help="format of the truth and prediction files (default: long)")
    parser.add_argument("--unknown", default="error", choices=("error", "ignore"),
                        help="a label not in the taxonomy: error (default) or drop it with a warning")
    parser.add_argument("--db", metavar="FILE", help="DuckDB file to keep the tables and results in")
    parser.add_argument("--memory-limit", metavar="SIZE",
                        help="DuckDB memory limit, e.g. 3GB (larger intermediates spill to disk)")


def parse_preds(specs: list[str]) -> list[tuple[str | None, Path | str]]:
    """``NAME=SOURCE``, a table reference (:func:`hiersql.sources.is_reference`) or a glob → ``[(name,
    source), ...]``. A file's name is its stem, except for tables (Parquet, CSV, references), whose name is
    ``None`` unless given: the store names them by their system column, or else by their stem or table. A
    name given twice or a glob matching nothing is an error."""
    from ..sources import is_reference, is_table

    out: list[tuple[str | None, Path | str]] = []
    for spec in specs:
        if is_reference(spec):
            out.append((None, spec))
            continue
        name, sep, path = spec.partition("=")
        if sep and name and not any(ch in name for ch in "*?[/"):
            out.append((name, path if is_reference(path) else Path(path)))
            continue
        matches = sorted(glob.glob(spec))
        if not matches:
            if any(ch in spec for ch in "*?["):
                raise InputError("--pred glob matches no file", "--pred", value=spec)
            matches = [spec]
        out.extend((None if is_table(m) else Path(m).stem, Path(m)) for m in matches)
    seen: set[str] = set()
    for name, _ in out:
        if name in seen:
            raise InputError("two --pred files have the same system name", "--pred", value=name)
        if name is not None:
            seen.add(name)
    return out


def load_store(args: argparse.Namespace, steps: Steps | None = None) -> Store:
    """Read the taxonomy, the truth and every ``--pred`` into a Store (a DuckDB file with ``--db``) with
    :meth:`~hiersql.store.Store.load` (the taxonomy is validated and loaded with its closure while the label
    files are read; the prediction files are read together). ``steps`` shows the progress (the steps of
    :data:`~hiersql.store.LOAD_STEPS`)."""
    from functools import partial

    from ..store import Store
    from ..taxonomy import Taxonomy

    steps = steps or Steps(0, "")
    preds = parse_preds(args.pred)
    taxonomy: Any = args.taxonomy  # a file or a reference (Store.load reads both), or a table's columns named:
    if args.parent_col or args.child_col:
        taxonomy = partial(Taxonomy.from_table, args.taxonomy, parent=args.parent_col, child=args.child_col)
    store = Store(args.db, memory_limit=args.memory_limit)
    store.con.execute("SET enable_progress_bar = false")  # DuckDB's own bar would write into stdout
    store.load(taxonomy, args.truth, preds, args.labels_format, unknown=args.unknown, on_step=steps.start,
               instance_col=args.instance_col, label_col=args.label_col, score_col=args.score_col,
               system_col=args.system_col)
    return store


class Steps:
    """Progress over the steps of a long command: a tqdm bar on stderr, shown only when stderr is a
    terminal (pipes, files and tests see nothing). ``start(name)`` ends the step before and names the next;
    ``close()`` ends the last."""

    def __init__(self, total: int, desc: str) -> None:
        import sys

        self.bar = None
        self.running = False
        if total and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=desc, unit="step", file=sys.stderr, leave=False, mininterval=0)

    def start(self, name: str) -> None:
        if self.bar is None:
            return
        self.bar.set_postfix_str(name, refresh=not self.running)
        if self.running:
            self.bar.update(1)  # redraws with the new name
        self.running = True

    def close(self) -> None:
        if self.bar is not None:
            if self.running:
                self.bar.update(1)
            self.bar.close()
