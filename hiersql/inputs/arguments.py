"""The user's inputs: naming the prediction sources of many systems (``NAME=FILE`` pairs and globs, shared by
the command line and batch jobs), and the checks of the Python API's arguments that are not options of the
measures (those are :mod:`hiersql.options`'s and :mod:`hiersql.averages`'s).

The one-shot functions, :class:`~hiersql.api.evaluator.Evaluator`, :class:`~hiersql.inputs.taxonomy.Taxonomy` and the
store's readers check their arguments here, once, as scikit-learn's ``validate_params`` and ``_check_targets``
do: a value of the wrong kind is an :class:`~hiersql.options.OptionError` (a ``ValueError`` and an
:class:`~hiersql.errors.InputError`) whose one line names the parameter, as the Python caller wrote it, and
the value (``system must be a non-empty string: 3``), never a ``TypeError`` from deep inside. What is accepted
is what is unambiguous: ``y_true`` and ``y_pred`` are any ordered sequence of label sets (a list, a tuple, a
1-D numpy array, a pandas Series, an iterator), a label set is a list (or any collection) of labels or one
label; a DataFrame, a string, a mapping or a set in their place is refused with what to pass instead.
"""

from __future__ import annotations

import glob
import math
import numbers
from collections.abc import Iterable, Mapping, Set
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..options import SPACES, OptionError, stripped_labels

LABEL_SETS = "a sequence of label sets, one per instance"
LABEL_SOURCE = ("a path, a table reference, a DataFrame, an Arrow table, a DuckDB relation, a mapping of columns"
                " or a sequence of label sets")

LABEL_FORMATS = ("long", "lines", "germeval-a", "germeval-b", "wide")  # the label formats of hiersql.inputs.readers
EMPTY_SOURCE = "empty value: it names no file, folder or table"
GLOB_MATCHES_NOTHING = "glob matches no file"


def check_source_text(text: str, where: str | None) -> str:
    """``text``, a source given as text (a flag's value, a job file's entry), when it names something; empty or
    blank (``--truth ""``, ``NAME=``) it is an :class:`~hiersql.errors.InputError` naming ``where`` and the
    value: as a path it would be the current folder, as a flag's value taken for no flag at all."""
    if not text.strip():
        raise InputError(EMPTY_SOURCE, where, value=text)
    return text


def given_name(spec: str) -> str | None:
    """The system name of a ``NAME=SOURCE`` prediction spec, else ``None`` (an ``=`` after a glob character or a
    ``/`` is part of a path)."""
    name, sep, _ = spec.partition("=")
    return name if sep and name and not any(ch in name for ch in "*?[/") else None


def parse_preds(specs: list[str], where: str = "--pred", base: Path | None = None
                ) -> list[tuple[str | None, Path | str]]:
    """``NAME=SOURCE``, a table reference (:func:`hiersql.inputs.sources.is_reference`), a URI of another file system
    (``s3a://...``, kept as text for Spark: :func:`hiersql.inputs.sources.is_uri`) or a glob → ``[(name, source),
    ...]``. A file's name is its stem, except for tables (Parquet, CSV, references), whose name is ``None``
    unless given: the store names them by their system column, or else by their stem or table. A name given
    twice or a glob matching nothing is an :class:`~hiersql.errors.InputError` naming ``where`` (the flag, or
    the job file and line). Relative paths and globs are taken from ``base`` when given (a job file's folder)."""
    from .sources import is_reference, is_table, is_uri

    out: list[tuple[str | None, Path | str]] = []
    for spec in specs:
        check_source_text(spec, where)
        if is_reference(spec) or is_uri(spec):
            out.append((None, spec))
            continue
        name, sep, path = spec.partition("=")
        if given_name(spec) is not None:
            if not path.strip():  # "s=": a name without its source
                raise InputError(f"{EMPTY_SOURCE} (NAME=SOURCE)", where, value=spec)
            kept = is_reference(path) or is_uri(path)  # not a path of this machine's
            out.append((name, path if kept else base / path if base is not None else Path(path)))
            continue
        pattern = str(base / spec) if base is not None else spec
        if sep and not name and not Path(pattern).exists():  # "=runs.tsv": NAME= without the name
            raise InputError("empty system name (NAME=SOURCE)", where, value=spec)
        matches = sorted(glob.glob(pattern))
        if not matches:
            if any(ch in spec for ch in "*?["):
                raise InputError(GLOB_MATCHES_NOTHING, where, value=spec)
            matches = [pattern]
        out.extend((None if is_table(m) else Path(m).stem, Path(m)) for m in matches)
    seen: set[str] = set()
    for name, _ in out:
        if name in seen:
            raise InputError("two prediction files have the same system name", where, value=name)
        if name is not None:
            seen.add(name)
    return out


# ------------------------------------------------------------------------------------ the Python API's arguments
class _Shown:
    """A value as a message shows it when its own ``repr`` would not do (``None``, which
    :class:`~hiersql.errors.InputError` leaves out; a DataFrame's many lines)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def shown(value: Any) -> Any:
    """``value`` for the message of an error: itself when its ``repr`` is one short line, else its type in angle
    brackets (``<DataFrame>``, ``<list of 1000 items>``)."""
    if value is None:
        return _Shown("None")
    collection = isinstance(value, list | tuple | dict | set | frozenset)
    if isinstance(value, bool | numbers.Number | str | bytes | Path) or (collection and len(value) <= 8):
        text = repr(value)
        if len(text) <= 100 and "\n" not in text:
            return value
    if isinstance(value, str):
        return _Shown(repr(value[:60]) + "...")
    return _Shown(f"<{type(value).__name__}{f' of {len(value)} items' if collection else ''}>")


def argument_error(parameter: str, rule: str, value: Any) -> OptionError:
    """The error of an argument: ``PARAMETER RULE: VALUE`` (the value as :func:`shown`)."""
    return OptionError(parameter, rule, shown(value))


def check_option(name: str, value: object) -> str:
    """``value`` of the input option ``name`` (:data:`hiersql.inputs.rules.OPTIONS`); another value is an
    :class:`~hiersql.options.OptionError` naming the option, the choices and the value."""
    from .rules import OPTIONS, option_rule

    if value not in OPTIONS[name]:
        raise argument_error(name, option_rule(name), value)
    return value


def check_text(value: Any, parameter: str) -> str:
    """A non-empty string (a system's name, a dataset's)."""
    if isinstance(value, str) and value.strip():
        return value
    raise argument_error(parameter, "must be a non-empty string", value)


def check_integer(value: Any, parameter: str, minimum: int = 0) -> int:
    """An integer ``>= minimum`` (not a bool)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= minimum:
        return int(value)
    raise argument_error(parameter, f"must be an integer >= {minimum}", value)


def is_sequence(value: Any) -> bool:
    """An ordered collection of items: not a string (one item), a mapping, a set (no order) or a 0-d array."""
    return isinstance(value, Iterable) and not isinstance(value, str | bytes | Mapping | Set) \
        and getattr(value, "ndim", 1) != 0


def label_sets(value: Any, parameter: str) -> list[Any]:
    """``y_true`` or ``y_pred`` as a list of label sets (instance ``i`` is item ``i``). A string, a table
    (DataFrame, Arrow table, DuckDB relation: a long table of ``instance_id, label`` rows pairs the
    instances by id, which :meth:`~hiersql.api.evaluator.Evaluator.add_truth` does), a mapping, a set or a
    value that is no sequence is an error naming ``parameter``; each label set is checked when read
    (:func:`label_set_members`)."""
    from .sources import is_table

    if isinstance(value, str | bytes):
        raise argument_error(parameter, f"must be {LABEL_SETS} (a list of lists), not one string", value)
    if is_table(value):
        raise argument_error(parameter, f"must be {LABEL_SETS}; a table of instance_id, label rows is read by"
                             " Evaluator(taxonomy).add_truth(table) and add_predictions(system, table)", value)
    if not is_sequence(value):
        raise argument_error(parameter, f"must be {LABEL_SETS} (a list, a tuple, a 1-D array or a pandas Series"
                             " of lists of labels)", value)
    check_not_a_matrix(value, parameter)
    return list(value)


def check_not_a_matrix(value: Any, parameter: str) -> None:
    """A 2-D array that is not label sets as they are: an indicator matrix (bool, or numbers all 0 or 1: one
    column per class, as scikit-learn's ``MultiLabelBinarizer`` gives; a SciPy sparse matrix) or paths padded
    as HiClass (``""``) or hiereval (``"UNK"``) pad them. Each row would be read as a set of labels ``0``/``1``
    or with padding for labels: an error naming ``parameter`` and the adapter that reads it as meant
    (:mod:`hiersql.inputs.adapters`)."""
    shown = f"<{type(value).__name__} of shape {getattr(value, 'shape', '?')}>"
    rows = ", or pass .tolist() to take its rows as label sets"
    if hasattr(value, "tocsr") and hasattr(value, "nnz"):  # a SciPy sparse matrix: an indicator matrix
        kind, rows = "a sparse matrix", ""
    elif getattr(value, "ndim", 1) != 2 or not hasattr(value, "dtype"):
        return
    elif value.dtype.kind == "b" or (value.dtype.kind in "iuf" and value.size and is_indicator(value)):
        kind = "a 2-D array of 0/1 or bool"
    else:
        cells = {str(cell) for cell in value.ravel().tolist()} if value.dtype.kind in "OUS" else set()
        for pad, adapter in (("", "labels_from_paths"), ("UNK", "labels_from_unk_paths")):
            if pad in cells:
                raise argument_error(parameter, f"is a 2-D array of paths padded with {pad!r}; read it with"
                                     f" hiersql.{adapter}({parameter})", shown)
        return
    raise argument_error(parameter, f"is {kind}, an indicator matrix (one column per class); read it with"
                         f" hiersql.labels_from_indicator({parameter}, classes) (classes: the columns' labels, such"
                         f" as MultiLabelBinarizer.classes_){rows}", shown)


def is_indicator(array: Any) -> bool:
    """Whether every value of ``array`` is 0 or 1 (an indicator matrix's values)."""
    import numpy as np

    return bool(np.isin(array, (0, 1)).all())


def paired_label_sets(y_true: Any, y_pred: Any) -> tuple[list[Any], list[Any]]:
    """:func:`label_sets` of ``y_true`` and ``y_pred``, as many of each."""
    true, pred = label_sets(y_true, "y_true"), label_sets(y_pred, "y_pred")
    if len(true) != len(pred):
        raise OptionError("y_pred", f"must have as many label sets as y_true has instances ({len(true)})", len(pred))
    return true, pred


def label_set_members(labelset: Any, where: str, i: int) -> list[Any]:
    """The labels of instance ``i``'s ``labelset``: a string is one label, as is a value that is not a
    collection (a number); a missing set (``None``, NaN, ``pd.NA``: a gap in a column of label sets) is an
    :class:`~hiersql.errors.InputError` naming ``where`` and the instance's index (``y_true[i]``), not an empty
    set taken for granted."""
    if isinstance(labelset, str):
        return [labelset]
    if isinstance(labelset, list):
        return labelset
    if labelset is None or type(labelset).__name__ == "NAType" or (
            isinstance(labelset, float) and math.isnan(labelset)):
        raise InputError("missing label set (None or NaN; an instance with no label is an empty list)",
                         f"{where}[{i}]", None, shown(labelset))
    if not isinstance(labelset, Iterable):
        return [labelset]  # one label that is not text
    return list(labelset)


def label_text(label: Any) -> str | None:
    """One label as a string without the :data:`~hiersql.options.SPACES` around it (a number read as text);
    ``None`` for a missing one (``None``, NaN), which the reader reports where it is."""
    if label is None or (isinstance(label, float) and math.isnan(label)):
        return None
    return (label if isinstance(label, str) else str(label)).strip(SPACES)


def label_names(labels: Any, parameter: str = "labels") -> tuple[str, ...] | None:
    """``labels`` (classes given by name): ``None``, one label, or a sequence of labels, each read as a
    string without the :data:`~hiersql.options.SPACES` around it, as the data's labels are read."""
    if labels is None:
        return None
    if isinstance(labels, str):
        labels = (labels,)
    if not is_sequence(labels) and not isinstance(labels, Set):
        raise argument_error(parameter, "must be a list of labels or None", labels)
    return stripped_labels((label if isinstance(label, str) else str(label) for label in labels), parameter)


def check_label_source(source: Any, parameter: str = "source") -> None:
    """A source of labels the store reads (:mod:`hiersql.inputs.readers`): a path or a reference, a table, a mapping of
    columns or a sequence of label sets."""
    from .sources import is_table

    if not (isinstance(source, str | Path) or is_table(source) or isinstance(source, Mapping)
            or is_sequence(source)):
        raise argument_error(parameter, f"must be {LABEL_SOURCE}", source)
    check_not_a_matrix(source, parameter)
