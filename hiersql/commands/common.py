"""Arguments shared by the sub-commands that read a taxonomy, a truth and predictions, and the code that
turns them into a loaded :class:`~hiersql.store.Store`."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..inputs import parse_preds

if TYPE_CHECKING:
    from ..store import Store

LABEL_FORMATS = ("long", "lines", "germeval-a", "germeval-b", "wide")


def add_input_arguments(parser: argparse.ArgumentParser) -> None:
    """``--taxonomy``, ``--truth``, ``--pred`` (repeatable, ``NAME=FILE`` or a glob), ``--labels-format``,
    ``--unknown``, ``--db``."""
    parser.add_argument("--taxonomy", required=True, metavar="FILE",
                        help="parent<TAB>child edges (whitespace pairs, .csv with header, .parquet detected)")
    parser.add_argument("--truth", required=True, metavar="FILE", help="true labels")
    parser.add_argument("--pred", action="append", required=True, metavar="NAME=FILE",
                        help="predictions of one system; repeat it, or give a glob (NAME = file stem)")
    parser.add_argument("--labels-format", default="long", choices=LABEL_FORMATS,
                        help="format of the truth and prediction files (default: long)")
    parser.add_argument("--unknown", default="error", choices=("error", "ignore"),
                        help="a label not in the taxonomy: error (default) or drop it with a warning")
    parser.add_argument("--db", metavar="FILE", help="DuckDB file to keep the tables and results in")
    parser.add_argument("--memory-limit", metavar="SIZE",
                        help="DuckDB memory limit, e.g. 3GB (larger intermediates spill to disk)")


def load_store(args: argparse.Namespace, steps: Steps | None = None) -> Store:
    """Read the taxonomy, the truth and every ``--pred`` into a Store (a DuckDB file with ``--db``) with
    :meth:`~hiersql.store.Store.load` (the taxonomy is validated and loaded with its closure while the label
    files are read; the prediction files are read together). ``steps`` shows the progress (the steps of
    :data:`~hiersql.store.LOAD_STEPS`)."""
    from ..store import Store

    steps = steps or Steps(0, "")
    preds = parse_preds(args.pred)
    store = Store(args.db, memory_limit=args.memory_limit)
    store.con.execute("SET enable_progress_bar = false")  # DuckDB's own bar would write into stdout
    store.load(args.taxonomy, args.truth, preds, args.labels_format, unknown=args.unknown, on_step=steps.start)
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
