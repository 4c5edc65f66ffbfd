"""HEMKit compatibility (SPEC §5): the six numbers HEMKit prints, from HEMKit's input files.

HEMKit (Kosmopoulos et al.; used by BioASQ) is called as ``HEMKit HIERARCHY GOLD PRED MAX_DISTANCE MAX_ERROR``
and prints ``hP hR hF LCA-P LCA-R LCA-F``, each the mean over instances (per-instance, "macro"). Its semantics,
which this module computes with two declared plans (:mod:`hiersql.plan`): the set-based family's per-instance
stage (``set_based.sql``) and :data:`hiersql.measures.lca.HEMKIT_PLAN` (HEMKit's graphs, compiled, then
``lca_instance`` of ``lca.sql``); the means are added in Python, in line order, as HEMKit adds them:

- the hierarchy is whitespace-separated ``parent child`` pairs; a dummy root is always added above every
  parentless node, and it counts like any node;
- hP, hR, hF: each label is augmented with its ancestors up to ``MAX_DISTANCE + 1`` edges up (the dummy root
  included when within reach); ``hF = 2·hP·hR/(hP + hR)`` per instance;
- LCA-P, LCA-R, LCA-F: within each set, labels that are ancestors (within ``MAX_DISTANCE + 1`` edges) of another
  label of the set are dropped (for these measures only); the graphs are those HEMKit builds, with its
  departures from the paper's Algorithm 1 (:mod:`hiersql.measures.lca.hemkit`, ``lca_graph="hemkit"``);
- ``MAX_ERROR`` is the cost of pairing with a default class: it enters MGIA only, which the six-number output
  does not print, so it is checked and otherwise unused.

Unlike HEMKit, bad input is reported instead of crashing or printing ``nan``: an unknown label is an
:class:`~hiersql.errors.InputError` naming file, line and label (``unknown="ignore"`` drops it with a
warning); a blank line of the gold file is skipped, as HEMKit skips it, but its prediction line is skipped with
it (HEMKit would pair the following gold lines with the wrong prediction lines); a blank prediction line is an
empty predicted set, scored 0 where HEMKit divides 0 by 0; tabs separate labels like spaces; prediction
lines beyond the gold file are dropped. Each of these is counted in a :class:`~hiersql.errors.DataWarning`.

References
----------
Kosmopoulos, Partalas, Gaussier, Paliouras, Androutsopoulos (2015), §2.4, §3 and the HEMKit tool
(``http://nlp.cs.aueb.gr/software_and_datasets/HEMKit.zip``). SPEC §5.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from dataclasses import dataclass, fields
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import DataWarning, InputError
from ..inputs.taxonomy import Taxonomy, gc_paused, read_text_edges

if TYPE_CHECKING:
    from ..inputs.store import Store

SYSTEM = "pred"


@dataclass(frozen=True)
class HemkitResult:
    """HEMKit's six numbers (means over instances) and the number of instances."""

    hp: float
    hr: float
    hf: float
    lca_p: float
    lca_r: float
    lca_f: float
    instances: int

    def line(self) -> str:
        """``hP hR hF LCA-P LCA-R LCA-F``, space-separated, 17 significant digits."""
        return " ".join(f"{getattr(self, f.name):.17g}" for f in fields(self)[:6])


def hemkit_taxonomy(path: str | Path) -> Taxonomy:
    """The hierarchy of ``path`` (whitespace-separated ``parent child`` pairs) with a dummy root (a virtual
    root) above every parentless node, whatever their number."""
    path = Path(path)
    if not path.is_file():
        raise InputError("hierarchy file not found", path)
    with gc_paused():
        edges = read_text_edges(path, "pairs", weights=False)
        if not edges:
            raise InputError("hierarchy file has no edges", path)
        return Taxonomy(edges, str(path), virtual_root=True)


def _scan(path: Path, what: str) -> tuple[str, list[str]]:
    """The text of a label file and its lines stripped of surrounding whitespace (a blank line is ``""``); an
    unreadable or non-UTF-8 file is an error."""
    if not path.is_file():
        raise InputError(f"{what} file not found", path)
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte order mark is no label
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} file is not UTF-8 text ({exc.reason})", path) from None
    return text, list(map(str.strip, text.splitlines()))


def _notes(gold: Path, pred: Path, gold_scan: tuple[str, list[str]], pred_scan: tuple[str, list[str]]) -> list[str]:
    """Warnings for the input HEMKit mishandles: tabs, blank gold lines, empty predictions, extra lines (each
    looked for line by line only when a scan of the whole file finds it)."""
    notes = []
    for path, (text, _) in ((gold, gold_scan), (pred, pred_scan)):
        if "\t" in text:
            tabs = [i for i, line in enumerate(text.splitlines(), 1) if "\t" in line]
            notes.append(f"{path}: {len(tabs)} line(s) contain tabs (first: line {tabs[0]}); tabs separate"
                         " labels like spaces")
    gold_lines, pred_lines = gold_scan[1], pred_scan[1]
    if "" in gold_lines:
        notes.append(f"{gold}: {gold_lines.count('')} blank line(s) skipped with their prediction line (first:"
                     f" line {gold_lines.index('') + 1}); HEMKit skips them too but pairs later lines with the"
                     " wrong predictions")
    if len(pred_lines) < len(gold_lines) or "" in pred_lines[:len(gold_lines)]:
        empty = [i for i, line in enumerate(gold_lines, 1)
                 if line and (i > len(pred_lines) or not pred_lines[i - 1])]
        if empty:
            notes.append(f"{pred}: {len(empty)} instance(s) with no predicted label (first: line {empty[0]});"
                         " their precisions are 0 (HEMKit: nan)")
    extra = len(pred_lines[len(gold_lines):]) - pred_lines[len(gold_lines):].count("")
    if extra:
        notes.append(f"{pred}: {extra} line(s) beyond the {len(gold_lines)} line(s) of {gold} ignored")
    return notes


def hemkit_store(hierarchy: str | Path, gold: str | Path, pred: str | Path, max_distance: int,
                 unknown: str = "error") -> Store:
    """A :class:`~hiersql.inputs.store.Store` holding HEMKit's input: the hierarchy with its dummy root and a closure
    up to ``max_distance + 1`` edges (``closure`` a view of ``node_closure``), the gold labels (blank lines
    dropped) and the predictions (system ``"pred"``). Warnings (:class:`~hiersql.errors.DataWarning`) report
    what HEMKit would mishandle."""
    from ..inputs.store import Store

    gold, pred = Path(gold), Path(pred)
    gold_scan, pred_scan = _scan(gold, "gold"), _scan(pred, "prediction")
    gold_lines, pred_lines = gold_scan[1], pred_scan[1]
    if not any(gold_lines):
        raise InputError("gold file has no labelled line", gold)
    for note in _notes(gold, pred, gold_scan, pred_scan):
        warnings.warn(note, DataWarning, stacklevel=2)
    store = Store()
    # One thread per connection: HEMKit's tables rarely exceed one DuckDB row group (122,880 rows), which one
    # thread scans anyway, and the work runs on two connections at once (the taxonomy and its closure while
    # the label files are read; hP/hR while the LCA graphs are built: hemkit_scores).
    store.con.execute("SET threads = 1")
    predicted = any(pred_lines)
    with warnings.catch_warnings():  # blank and extra lines are reported above
        warnings.filterwarnings("ignore", ".*ignored .* predicted instance", DataWarning)
        # HEMKit reads a repeated edge as one, without a word (its own example hierarchy repeats one)
        warnings.filterwarnings("ignore", ".*repeated edge", DataWarning)
        store.load(lambda: hemkit_taxonomy(hierarchy), gold, {SYSTEM: pred} if predicted else {}, "lines",
                   unknown=unknown, no_truth="ignore", max_depth=max_distance + 1, closure_view=True)
    if "" in gold_lines:  # blank gold lines are no instances, nor their predictions
        store.con.execute("DELETE FROM instances WHERE instance_id NOT IN (SELECT instance_id FROM truth)")
        store.con.execute("DELETE FROM predictions WHERE instance_id NOT IN (SELECT instance_id FROM instances)")
    if not predicted:  # nothing predicted at all: reported above
        store.add_predictions(SYSTEM, [], name=str(pred))
    return store


def _line_rows(engine, plan, options, columns: tuple[str, str]) -> list[tuple]:
    """``(instance_id, P, R)`` of the per-instance stage of ``plan`` (its ``columns``) in line order."""
    table = engine.per_instance(plan, options).select(["instance_id", *columns]).to_pylist()
    return sorted(((row["instance_id"], row[columns[0]], row[columns[1]]) for row in table),
                  key=lambda row: int(row[0]))


def _hierarchical(cursor, max_distance: int) -> list[tuple]:
    """:func:`_line_rows` of hP, hR: the set-based family's plan with the root and ancestors up to
    ``max_distance + 1`` edges, on ``cursor`` (a second connection to the store's database, closed when
    done). Its counts are always the lists, which read ``node_closure`` only (``closure`` is a view here:
    :func:`hemkit_store`); on MeSH they are faster than the pairs, which would read the closure on names."""
    from dataclasses import replace

    from ..engines import DuckDBEngine
    from ..measures import set_based
    from ..options import make_options

    plan = replace(set_based.PLAN, params=lambda options, engine, metrics: {
        **set_based.plan_params(options, engine, metrics), "list_counts": True})
    try:
        return _line_rows(DuckDBEngine(cursor), plan, make_options(include_root=True, max_distance=max_distance + 1),
                          ("hierarchical_precision", "hierarchical_recall"))
    finally:
        cursor.close()


def hemkit_scores(store: Store, max_distance: int) -> HemkitResult:
    """HEMKit's six means over the instances of ``store`` (single system), with HEMKit's arithmetic: per
    instance P and R (a quotient of two counts), ``F = 2·P·R/(P + R)`` (0 when both are 0), each summed in line
    order and divided by the number of instances, so that all 17 printed digits match. The LCA graphs are
    HEMKit's own (:data:`~hiersql.measures.lca.HEMKIT_PLAN`, ``lca_graph="hemkit"``).

    hP/hR and the LCA graphs read the same tables, so the set-based plan runs on a second connection to the
    same database (a cursor) in a thread while this one builds the LCA graphs (compiled code, which holds no
    lock DuckDB needs; :func:`~hiersql.engines.concurrency.beside_python`)."""
    from ..engines import DuckDBEngine
    from ..engines.concurrency import beside_python
    from ..measures import lca
    from ..options import make_options

    options = make_options(include_root=True, max_distance=max_distance, lca_graph="hemkit")
    with beside_python(lambda: _hierarchical(store.cursor(), max_distance)) as hierarchical:
        graphs = _line_rows(DuckDBEngine(store), lca.HEMKIT_PLAN, options, ("lca_precision", "lca_recall"))
    rows = hierarchical.result()
    hp, hr, hf = _means(rows)
    lp, lr, lf = _means(graphs)
    return HemkitResult(hp, hr, hf, lp, lr, lf, instances=len(rows))


def _means(rows: list[tuple]) -> list[float]:
    """The means of P, R and ``F = 2·P·R/(P + R)`` (0 when both are 0) of ``(instance, P, R)`` rows in line
    order (:func:`line_mean`)."""
    f = [2 * p * r / (p + r) if p != 0.0 or r != 0.0 else 0.0 for _, p, r in rows]
    return [line_mean(map(itemgetter(1), rows)), line_mean(map(itemgetter(2), rows)), line_mean(f)]


def line_mean(values: Iterable[float]) -> float:
    """The mean as HEMKit computes it: the values added one at a time in line order, each sum rounded to a
    double, then divided by their number. (Python's ``sum`` compensates the rounding since 3.12, which moves
    the last digits: ten values 0.1 give 0.09999999999999999 here, 0.1 with ``sum``.)"""
    total, count = 0.0, 0
    for value in values:
        total += value
        count += 1
    return total / count


@gc_paused()  # a short run whose rows, paths and graphs form no cycles: no need to rescan the heap
def hemkit(hierarchy: str | Path, gold: str | Path, pred: str | Path, max_distance: int, max_error: float,
           unknown: str = "error") -> HemkitResult:
    """What ``HEMKit HIERARCHY GOLD PRED MAX_DISTANCE MAX_ERROR`` prints (see the module docstring).

    Parameters
    ----------
    hierarchy, gold, pred:
        HEMKit's files: ``parent child`` lines; one line of whitespace-separated labels per instance.
    max_distance:
        HEMKit's maximum distance (>= 0): ancestors reach ``max_distance + 1`` edges, LCA paths
        ``max_distance``.
    max_error:
        HEMKit's maximum error (>= 0); it only enters MGIA, which HEMKit's six numbers do not include.
    unknown:
        ``"error"`` (default) or ``"ignore"`` for labels that are not in the hierarchy.
    """
    if isinstance(max_distance, bool) or not isinstance(max_distance, int) or max_distance < 0:
        raise InputError("MAX_DISTANCE must be an integer >= 0", "MAX_DISTANCE", value=max_distance)
    if not max_error >= 0:
        raise InputError("MAX_ERROR must be a number >= 0", "MAX_ERROR", value=max_error)
    from concurrent.futures import ThreadPoolExecutor

    from ..measures.lca.hemkit import load_kernel

    with ThreadPoolExecutor(1) as pool:  # the compiled graphs load (Python) while DuckDB reads the files
        kernel = pool.submit(load_kernel)
        store = hemkit_store(hierarchy, gold, pred, max_distance, unknown)
        kernel.result()
    try:
        return hemkit_scores(store, max_distance)
    finally:
        store.close()
