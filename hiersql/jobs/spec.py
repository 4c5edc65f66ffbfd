"""The job file (TOML): datasets, measures and options, read and checked as a run would use them.

Every fault is an :class:`~hiersql.errors.InputError` naming the job file, the line of the key or value at
fault and the value (``job.toml:12: unknown option: 'includ_root'``). The format is documented in
``docs/jobs.md``; :func:`units` turns a checked job into its units of work, one per (dataset, system), each
with the content hash that decides whether it must be computed.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import tomllib
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DataWarning, InputError
from ..inputs import rules
from ..inputs.arguments import LABEL_FORMATS
from .keys import COLUMN_KEYS, content_hash, json_digest, label_columns, table_systems
from .queue import is_postgres

DEFAULT_METRICS = ("hp", "hr", "hf")
# key: the TOML types it may have, as named in messages
TOP_KEYS = {"name": "a string", "queue": "a string", "metrics": "a list of strings", "options": "a table",
            "format": "a string", "unknown": "a string", "results": "a string", "on_failure": "a string",
            "run": "a table", "dataset": "an array of tables ([[dataset]])"}
DATASET_KEYS = {"name": "a string", "taxonomy": "a string", "truth": "a string",
                "predictions": "a string or a list of strings", "format": "a string", "unknown": "a string",
                "metrics": "a list of strings", "options": "a table"}
# the column names of table sources (hiersql.jobs.keys.COLUMN_KEYS)
TOP_KEYS |= dict.fromkeys(COLUMN_KEYS, "a string")
DATASET_KEYS |= dict.fromkeys(COLUMN_KEYS, "a string")
# The table sources a job reads where they are: ``duckdb:PATH::table`` (PATH relative to the job file),
# ``postgresql://...::schema.table``, their queries, and ``sql:`` queries (files relative to the job file). A
# ``spark:`` table is read by a Spark session, which lives no longer than one run.
TABLE_SCHEMES = ("duckdb:", "postgresql://", "postgres://", "sql:")


@dataclass(frozen=True)
class Dataset:
    """One dataset of a job: its sources (absolute paths, or table sources with their DuckDB files' absolute
    paths), the systems' prediction sources ``(system, source)``, the label format and what to compute."""

    name: str
    taxonomy: str
    truth: str
    predictions: tuple[tuple[str, str], ...]
    format: str
    unknown: str
    metrics: tuple[str, ...]
    options: dict[str, Any]
    columns: dict[str, str] = dataclasses.field(default_factory=dict)  # COLUMN_KEYS given → column name
    # the systems of predictions tables with a system column → a SHA-256 of that system's rows
    row_digests: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True)
class Spec:
    """A checked job file: its path, the job's name, the queue it names (``None``: the default), its datasets
    and the line of its ``queue`` key (for messages)."""

    path: Path
    name: str
    queue: str | None
    datasets: tuple[Dataset, ...]
    queue_line: int | None = None
    results: str | None = None  # the results target (hiersql.jobs.targets), its paths absolute
    on_failure: str | None = None  # the shell command run when units fail (hiersql.jobs.hooks)
    run: dict[str, Any] | None = None  # the [run] table: the engine the units compute in (hiersql.options.RunOptions)


@dataclass(frozen=True)
class Unit:
    """The unit of work: one system of one dataset. ``key`` hashes the content of every input (see
    :func:`unit_key`); ``work`` is what a worker needs to compute it (JSON-able: the queue stores it, so that a
    worker on another machine needs no job file); ``group`` is shared by the units of one dataset that a worker
    may load into one store together (same taxonomy, truth, format, measures and options)."""

    dataset: str
    system: str
    key: str
    group: str
    work: dict[str, Any]


class _Lines:
    """Where keys and values of a TOML text are, for messages: the line of a key (or of a quoted value)
    within the top level (``dataset=None``) or within the ``n``-th ``[[dataset]]`` (its sub-tables too)."""

    HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?")

    def __init__(self, text: str) -> None:
        self.regions: dict[int | None, list[int]] = {None: []}  # region → line numbers (1-based)
        self.headers: dict[int | None, int] = {}
        current: int | None = None
        n = -1
        for number, line in enumerate(text.splitlines(), start=1):
            header = self.HEADER.match(line)
            if header:
                name = header.group(1).strip().strip('"')
                if line.lstrip().startswith("[[") and name == "dataset":
                    n += 1
                    current = n
                    self.headers[n] = number
                    self.regions[n] = []
                elif not name.startswith("dataset"):
                    current = None
            self.regions[current].append(number)
        self.text = text.splitlines()

    def find(self, dataset: int | None, key: str | None = None, value: object = None) -> int | None:
        lines = self.regions.get(dataset, [])
        patterns = []
        if isinstance(value, str) and value:
            patterns.append(re.compile(r"""["']""" + re.escape(value) + r"""["']"""))
        if key:
            patterns.append(re.compile(r"""(?:^|[\s{,.])["']?""" + re.escape(key) + r"""["']?\s*="""))
        for pattern in patterns:
            for number in lines:
                if pattern.search(self.text[number - 1]):
                    return number
        return self.headers.get(dataset) if dataset is not None else None


def load_spec(path: str | Path) -> Spec:
    """Read and check a job file: its keys and their types, the label formats, the measures (through
    :func:`hiersql.measures.resolve`), the options (through the options schema,
    :func:`hiersql.options.options_from_mapping`, and the families' own checks), that every file exists and
    every glob matches. Relative paths are taken from the job file's folder.

    Raises
    ------
    InputError
        The first fault, naming the job file, its line and the value.
    """
    path = Path(path)
    text, doc = _read_toml(path)
    lines = _Lines(text)

    def fail(message: str, dataset: int | None, key: str | None = None, value: object = None) -> InputError:
        return InputError(message, path, lines.find(dataset, key, value), value)

    _check_keys(doc, TOP_KEYS, None, fail)
    datasets = _dataset_tables(doc, text, path, fail)
    base = path.parent
    queue = doc.get("queue")
    if isinstance(queue, str) and not is_postgres(queue) and re.match(r"[A-Za-z][\w+.-]+:", queue):
        raise fail("a queue is a DuckDB file or a postgresql:// URL", None, "queue", queue)
    if isinstance(queue, str) and not is_postgres(queue) and not (base / queue).parent.is_dir():
        raise fail("the queue's folder does not exist", None, "queue", queue)
    results = None
    if "results" in doc:  # a bad target, a server out of reach, a table of other columns: the key's line
        from .targets import check_target, parse_target

        where = f"{path}:{lines.find(None, 'results')}"
        results = parse_target(doc["results"], where, base)
        check_target(results, where)
    run = _check_run(doc["run"], lambda m, k, v: fail(m, None, k, v)) if "run" in doc else None
    names: set[str] = set()
    checked_options: dict[str, Any] = {}
    read = [_dataset(n, ds, doc, base, names, checked_options, fail) for n, ds in enumerate(datasets)]
    missed = [(dataset, fault) for dataset, _, faults in read for fault in faults]
    if missed and not any(dataset.predictions for dataset, _, _ in read):  # no unit at all: the first fault
        raise missed[0][1]
    for dataset, fault in missed:
        left = "its other sources run" if dataset.predictions else "it has no unit; the other datasets run"
        warnings.warn(f"{fault} (dataset {dataset.name!r}: {left})", DataWarning, stacklevel=2)
    if doc.get("format", "long") != "long" and not any(reads_top_format for _, reads_top_format, _ in read):
        raise fail(_FORMAT_UNUSED, None, "format", doc["format"])
    return Spec(path, doc.get("name", path.stem), doc.get("queue"), tuple(dataset for dataset, _, _ in read),
                lines.find(None, "queue") if "queue" in doc else None, results, doc.get("on_failure"), run)


def _read_toml(path: Path) -> tuple[str, dict[str, Any]]:
    """The text of the job file at ``path`` and its TOML document; a missing file, bytes that are not UTF-8 or
    text that is not TOML is an :class:`~hiersql.errors.InputError` naming the file and the line."""
    if not path.is_file():
        raise InputError("job file not found", path)
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")  # a byte order mark (Windows editors) is no TOML
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError("job file is not UTF-8", path, line, raw[exc.start:exc.end]) from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"\(at line (\d+), column \d+\)", str(exc))
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc).splitlines()[0])
        raise InputError(f"job file is not valid TOML ({message})", path,
                         int(found.group(1)) if found else None) from None
    return text, doc


def _dataset_tables(doc: dict[str, Any], text: str, path: Path, fail) -> list[dict[str, Any]]:
    """The ``[[dataset]]`` tables of the job file's ``doc``: at least one, and an array of tables (a
    ``[dataset]`` table is named by its header's line in ``text``)."""
    datasets = doc.get("dataset")
    if datasets is None or (isinstance(datasets, list | dict) and not datasets):  # (dataset = 3: below)
        raise fail("job file lists no [[dataset]]", None)
    if not isinstance(datasets, list) or not all(isinstance(d, dict) for d in datasets):
        header = re.search(r"^\s*\[\s*dataset\s*\]", text, re.MULTILINE)  # [dataset]: a table, not an array
        if header:
            raise InputError("'dataset' must be an array of tables ([[dataset]])", path,
                             text[:header.start()].count("\n") + 1, header.group().strip())
        raise fail("'dataset' must be an array of tables ([[dataset]])", None, "dataset", datasets)
    return datasets


def _dataset(n: int, ds: dict[str, Any], doc: dict[str, Any], base: Path, names: set[str],
             checked_options: dict[str, Any], fail) -> tuple[Dataset, bool, list[InputError]]:
    """The ``n``-th ``[[dataset]]`` table ``ds`` checked, with the keys of the top of ``doc`` as its defaults;
    ``names`` are the names of the datasets before it (this one's is added), ``checked_options`` the signatures
    of the checks already made (measures with options, and with a taxonomy; this one's are added). Returns the
    dataset, whether it reads the top-level ``format`` (it has no ``format`` of its own and a label source the
    format applies to), and the faults of its globs that match no file (left out)."""
    from ..inputs.sources import format_unused

    _check_keys(ds, DATASET_KEYS, n, fail)
    for key in ("name", "taxonomy", "truth", "predictions"):
        if key not in ds:
            raise fail(f"dataset lacks '{key}'", n)
    name = ds["name"]
    if name in names:
        raise fail("dataset name used twice", n, "name", name)
    names.add(name)
    fmt = ds.get("format", doc.get("format", "long"))
    if fmt not in LABEL_FORMATS:
        raise fail(f"unknown label format (one of {', '.join(LABEL_FORMATS)})", n if "format" in ds else None,
                   "format", fmt)
    unknown = ds.get("unknown", doc.get("unknown", "error"))
    if unknown not in rules.OPTIONS["unknown"]:
        raise fail(f"unknown {rules.option_rule('unknown')}", n if "unknown" in ds else None, "unknown", unknown)
    at = n if "metrics" in ds else None
    metrics = ds.get("metrics", doc.get("metrics", list(DEFAULT_METRICS)))
    if isinstance(metrics, str):
        metrics = [m.strip() for m in metrics.split(",") if m.strip()]
    if not metrics:
        raise fail("no measures given", at, "metrics", metrics)
    _check_metrics(metrics, lambda m, v: fail(m, at, "metrics", v))
    options = {**doc.get("options", {}), **ds.get("options", {})}
    signature = json.dumps([metrics, options], sort_keys=True)
    if signature not in checked_options:
        _check_options(metrics, options, lambda m, k, v: fail(m, n if k in ds.get("options", {}) else None, k, v))
        checked_options[signature] = True
    taxonomy = _source(ds["taxonomy"], base, lambda m, v: fail(m, n, "taxonomy", v), "taxonomy")
    columns = {key: ds.get(key, doc.get(key)) for key in COLUMN_KEYS if key in ds or key in doc}
    signature = json.dumps([taxonomy, columns.get("parent_col"), columns.get("child_col"), metrics, options],
                           sort_keys=True)
    if signature not in checked_options:
        _check_taxonomy(taxonomy, columns, metrics, options)
        checked_options[signature] = True
    truth = _source(ds["truth"], base, lambda m, v: fail(m, n, "truth", v), "label")
    preds = ds["predictions"] if isinstance(ds["predictions"], list) else [ds["predictions"]]
    predictions, row_digests, missed = _predictions(preds, base, fmt, columns,
                                                    lambda m, v: fail(m, n, "predictions", v))
    _check_column_keys(ds, truth, [source for _, source in predictions], fmt, lambda m, k, v: fail(m, n, k, v))
    unused = format_unused(fmt, [truth, *(p for _, p in predictions)])
    if unused and "format" in ds:
        raise fail(_FORMAT_UNUSED, n, "format", fmt)
    return (Dataset(name, taxonomy, truth, predictions, fmt, unknown, tuple(metrics), options, columns, row_digests),
            not unused and "format" not in ds, missed)


_FORMAT_UNUSED = ("names the format of label text files (and of a wide CSV file), and every label source it applies"
                  " to is a table, read by its columns")


def _check_column_keys(ds: dict[str, Any], truth: str, predictions: list[str], fmt: str, fail) -> None:
    """A label column key of a dataset with no table source it applies to
    (:func:`hiersql.inputs.sources.unused_label_column`): an error, not a key left unused (at the top of the file such
    keys serve the datasets that have tables)."""
    from ..inputs.sources import unused_label_column

    role = unused_label_column(label_columns(ds), truth, predictions, fmt)
    if role is not None:
        raise fail("names a column of table sources (Parquet, CSV with a header, duckdb:, postgresql://, sql:), and"
                   " no source of the dataset it applies to is one", f"{role}_col", ds[f"{role}_col"])


def _check_keys(table: dict[str, Any], allowed: dict[str, str], dataset: int | None, fail) -> None:
    """Unknown keys and keys of the wrong TOML type."""
    for key, value in table.items():
        if key not in allowed:
            raise fail(f"unknown key (known: {', '.join(allowed)})", dataset, key, key)
        expected = allowed[key]
        if value == "":
            raise fail(f"'{key}' is empty", dataset, key, value)
        ok = {"a string": isinstance(value, str),
              "a table": isinstance(value, dict),
              "a list of strings": isinstance(value, str) or (
                  isinstance(value, list) and all(isinstance(v, str) for v in value)),
              "a string or a list of strings": isinstance(value, str) or (
                  isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value)),
              }.get(expected, True)
        if not ok:
            raise fail(f"'{key}' must be {expected}", dataset, key, value)


def _check_metrics(metrics: list[str], fail) -> None:
    from ..measures import resolve

    try:
        resolve(metrics)
    except InputError as exc:
        raise fail(exc.message, exc.value) from None


def run_keys() -> tuple[str, ...]:
    """The keys of the ``[run]`` table: the run options that choose the engine (``engine``, ``postgres_url``,
    ``spark_master``, ...; :data:`hiersql.options.RUN_OPTIONS` but the store's memory and threads, which the
    workers' own flags give)."""
    from ..options import RUN_OPTIONS, STORE_OPTIONS

    return tuple(o.name for o in RUN_OPTIONS if o.name not in STORE_OPTIONS)


def _check_run(run: dict[str, Any], fail) -> dict[str, Any]:
    """The ``[run]`` table through :class:`~hiersql.options.RunOptions` (known keys, values each option's check
    accepts, options of another engine refused); returned as given (the workers build their engine from it)."""
    from ..options import OptionError, RunOptions

    for key in run:
        if key not in run_keys():
            raise fail(f"unknown key in [run] (known: {', '.join(run_keys())})", key, key)
    try:
        RunOptions(**run)
    except OptionError as exc:
        raise fail(f"bad [run] value ({exc.option} {exc.rule})", exc.option if exc.option in run else None,
                   exc.value) from None
    return dict(run)


def _check_options(metrics: list[str], options: dict[str, Any], fail) -> None:
    """The options through the options schema (:func:`hiersql.options.options_from_mapping`: known names,
    values each option's check accepts), one at a time to name the key at fault, then together; then the
    families' own checks of the values (a mode that does not exist, a negative distance), by evaluating the
    measures on a two-node example."""
    from ..options import OptionError, options_from_mapping

    for key, value in options.items():
        try:
            options_from_mapping({key: value}, "options")
        except InputError as exc:
            raise fail(exc.message, key, exc.value) from None
    if options.get("average", True) in ([], ()):  # as --average '': no average, no rows (an empty unit)
        raise fail("option average must name at least one average", "average", []) from None
    try:
        opts = options_from_mapping(options, "options")
    except InputError as exc:
        raise fail(exc.message, None, exc.value) from None
    try:
        _example(metrics, opts)
    except OptionError as exc:  # an option that the measures refuse (labels with a micro average)
        raise fail(f"bad option ({exc.option} {exc.rule})", exc.option if exc.option in options else None,
                   exc.value) from None
    except InputError as exc:  # a family's check naming the option
        raise fail(f"bad option ({exc.message})", exc.source if exc.source in options else None,
                   exc.value) from None
    except ValueError as exc:
        key = next((k for k in options if k in str(exc)), None)
        raise fail(f"bad option ({exc})", key, options.get(key) if key else None) from None


def _check_taxonomy(source: str, columns: dict[str, str], metrics: list[str], options: dict[str, Any]) -> None:
    """Read a dataset's taxonomy as its units read it (:meth:`~hiersql.inputs.taxonomy.Taxonomy.from_source`)
    and evaluate its measures on it, one instance whose truth and prediction are a leaf: a fault of the
    taxonomy that every unit would have (a file that does not parse, a DAG where a measure needs a tree, edges
    without the weights a measure reads) is the job file's, raised with the taxonomy's own message (its file,
    line and value). What depends on the labels is judged when the units run; their warnings (a repeated edge)
    are the units' to give."""
    from ..inputs.taxonomy import Taxonomy
    from ..measures import compute, store_from_sets
    from ..options import options_from_mapping

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tax = Taxonomy.from_source(source, columns.get("parent_col"), columns.get("child_col"))
        store = store_from_sets([[tax.leaves[0]]], [[tax.leaves[0]]], tax)
        try:
            compute(store, metrics, options_from_mapping(options, "options"))
        except InputError as exc:
            if exc.source == tax.source:
                raise
        finally:
            store.close()


def _example(metrics: list[str], options: Any) -> None:
    """Evaluate ``metrics`` with ``options`` on a two-leaf taxonomy, one family at a time: the families' checks
    of option values run before any input is read. Errors that depend on the input (a measure that does not
    apply to it, a taxonomy without edge weights) are judged on the real input, when the unit runs."""
    _example_checked(tuple(metrics), options)


@functools.lru_cache(maxsize=64)  # a schedule reads its job file again at each fire; a failure (raised) is not kept
def _example_checked(metrics: tuple[str, ...], options: Any) -> None:
    from ..measures import check_averages, compute, resolve, store_from_sets

    check_averages(list(metrics), options)  # what does not depend on the input: judged here, with its key
    store = store_from_sets([["a"], ["b"]], [["a"], ["a"]], [("r", "a"), ("r", "b")])
    try:
        for names in resolve(metrics).values():
            try:
                compute(store, names, options)
            except InputError as exc:
                if exc.source in dataclasses.asdict(options):  # an option's value at fault
                    raise
    finally:
        store.close()


def _source(text: str, base: Path, fail, role: str) -> str:
    """A taxonomy or truth source: a file or a folder of Parquet files (relative to ``base``), which must exist,
    or a table (:func:`_table_source`)."""
    from ..inputs.sources import is_parquet, is_reference

    if is_reference(text):
        return _table_source(text, base, fail, role)
    path = base / text
    if not path.is_file() and not (path.is_dir() and is_parquet(path)):
        raise fail("is a folder, not a file" if path.is_dir() else "file not found", text)
    return str(path.resolve())


def _table_source(text: str, base: Path, fail, role: str) -> str:
    """A table source of :data:`TABLE_SCHEMES` that can be read now (the DuckDB file and its table there, the
    server reachable and the table on it), a DuckDB file's path made absolute (relative to ``base``), and so the
    file paths of a query (:func:`~hiersql.inputs.sources.anchored_query`)."""
    import duckdb

    from ..errors import display
    from ..inputs.sources import anchored_query, duckdb_file, open_table
    from ..inputs.tables import QUERY

    if not text.startswith(TABLE_SCHEMES):
        raise fail("a job reads files and duckdb:, postgresql:// and sql: sources (a spark: table is read by Spark,"
                   " in one run)", text)
    source = text
    try:
        if text.startswith("sql:"):  # the files it reads relative to the job file, as the job's own paths
            source = "sql:" + anchored_query(text[len("sql:"):], base)
        elif duckdb_file(text) is not None:  # a well-formed reference to a DuckDB file: its path made absolute
            location, _, table = text[len("duckdb:"):].partition("::")
            query = anchored_query(table, base) if QUERY.match(table) else table
            source = f"duckdb:{(base / location).resolve()}::{query}"
    except InputError as exc:
        raise fail(exc.message, text) from None
    con = duckdb.connect()
    try:
        open_table(con, source, role=role).close()
    except InputError as exc:
        raise fail(exc.message if exc.value is None else f"{exc.message}: {exc.value!r}", display(text)) from None
    finally:
        con.close()
    return source


def _predictions(preds: list[str], base: Path, fmt: str, columns: dict[str, str], fail
                 ) -> tuple[tuple[tuple[str, str], ...], dict[str, str], list[InputError]]:
    """The ``(system, source)`` of each unit, the rows' digest of the systems of tables with a system column
    (:func:`table_systems`), and the faults of the globs that match no file: those are left out (a nightly's
    other sources and datasets run: :func:`load_spec` warns)."""
    from ..inputs.arguments import GLOB_MATCHES_NOTHING, parse_preds
    from ..inputs.sources import is_parquet, is_reference, is_table

    missed: list[InputError] = []
    kept: list[str] = []
    try:
        for spec in preds:  # one by one, to name the file of an entry as written (a glob's match: from base)
            try:
                entries = parse_preds([spec], "predictions", base)
            except InputError as exc:
                if exc.message != GLOB_MATCHES_NOTHING:
                    raise
                missed.append(fail(exc.message, exc.value))
                continue
            kept.append(spec)
            for name, file in entries:
                if is_reference(file) or file.is_file() or (file.is_dir() and is_parquet(file)):
                    continue
                written = spec.partition("=")[2] if name is not None and spec.startswith(f"{name}=") else spec
                if file.is_dir():
                    raise fail("is a folder, not a file",
                               str(file.relative_to(base)) if file.is_relative_to(base) else str(file))
                raise fail("file not found", written)
        pairs = parse_preds(kept, "predictions", base)
    except InputError as exc:
        if exc.source != "predictions":
            raise
        raise fail(exc.message, exc.value) from None
    named: list[tuple[str, str]] = []
    row_digests: dict[str, str] = {}
    for system, file in pairs:
        path = _table_source(file, base, fail, "label") if is_reference(file) else str(Path(file).resolve())
        found = table_systems(path, fmt, columns, system, fail) if is_table(path, fmt) else None
        if found is None:  # a unit is one file
            named.append((system if system is not None else Path(file).stem, path))
            continue
        for value, digest in found:
            named.append((value, path))
            row_digests[value] = digest
    systems = [system for system, _ in named]
    for system in systems:
        if systems.count(system) > 1:
            raise fail("two prediction files have the same system name", system)
    return tuple(named), row_digests, missed


def units(spec: Spec) -> list[Unit]:
    """The units of ``spec``, in job order, with their keys (:func:`unit_key`)."""
    from .. import __version__
    from ..measures import resolve
    from ..options import options_from_mapping

    hashes: dict[str, str] = {}
    out = []
    for ds in spec.datasets:
        options = dataclasses.asdict(options_from_mapping(ds.options, str(spec.path)))
        metrics = [[family, names] for family, names in resolve(list(ds.metrics)).items()]
        shared = {"version": __version__, "dataset": ds.name,
                  "taxonomy": content_hash(ds.taxonomy, "taxonomy", ds.format, ds.columns, hashes),
                  "truth": content_hash(ds.truth, "truth", ds.format, ds.columns, hashes),
                  "format": ds.format, "unknown": ds.unknown,
                  "metrics": metrics, "options": options}
        if ds.columns:  # the column names decide what is read (absent when none: the keys of plain files stay)
            shared["columns"] = ds.columns
        group = json_digest(shared)
        for system, source in ds.predictions:
            # checked again before the unit runs
            prediction = content_hash(source, "predictions", ds.format, ds.columns, hashes)
            work = {"dataset": ds.name, "system": system, "taxonomy": ds.taxonomy, "truth": ds.truth,
                    "prediction": source, "format": ds.format, "unknown": ds.unknown,
                    "metrics": list(ds.metrics), "options": ds.options, "columns": ds.columns,
                    "hashes": {"taxonomy": shared["taxonomy"], "truth": shared["truth"], "prediction": prediction}}
            if spec.results:  # where its rows go too (no part of its key: the values do not depend on it)
                work["results"] = spec.results
            if spec.run:  # the engine it computes in (no part of its key: every engine gives the same values)
                work["run"] = spec.run
            # a system of a table with a system column: the digest of its rows (its file holds other systems)
            out.append(Unit(ds.name, system, unit_key(shared, system, ds.row_digests.get(system, prediction)), group,
                            work))
    return out


def unit_key(shared: dict[str, Any], system: str, prediction: str) -> str:
    """SHA-256 over the hiersql version, the dataset and system names (they label the results), the contents
    of the taxonomy, truth and prediction files, the label format, the unknown-label rule, the measures (as
    resolved) and every option (defaults included)."""
    return json_digest({**shared, "system": system, "prediction": prediction})
