"""Naming the prediction sources of many systems: ``NAME=FILE`` pairs and globs (shared by the command line
and batch jobs)."""

from __future__ import annotations

import glob
from pathlib import Path

from .errors import InputError

LABEL_FORMATS = ("long", "lines", "germeval-a", "germeval-b", "wide")  # the label formats of hiersql.readers


def parse_preds(specs: list[str], where: str = "--pred", base: Path | None = None
                ) -> list[tuple[str | None, Path | str]]:
    """``NAME=SOURCE``, a table reference (:func:`hiersql.sources.is_reference`), a URI of another file system
    (``s3a://...``, kept as text for Spark: :func:`hiersql.sources.is_uri`) or a glob → ``[(name, source),
    ...]``. A file's name is its stem, except for tables (Parquet, CSV, references), whose name is ``None``
    unless given: the store names them by their system column, or else by their stem or table. A name given
    twice or a glob matching nothing is an :class:`~hiersql.errors.InputError` naming ``where`` (the flag, or
    the job file and line). Relative paths and globs are taken from ``base`` when given (a job file's folder)."""
    from .sources import is_reference, is_table, is_uri

    out: list[tuple[str | None, Path | str]] = []
    for spec in specs:
        if is_reference(spec) or is_uri(spec):
            out.append((None, spec))
            continue
        name, sep, path = spec.partition("=")
        if sep and name and not any(ch in name for ch in "*?[/"):
            kept = is_reference(path) or is_uri(path)  # not a path of this machine's
            out.append((name, path if kept else base / path if base is not None else Path(path)))
            continue
        pattern = str(base / spec) if base is not None else spec
        matches = sorted(glob.glob(pattern))
        if not matches:
            if any(ch in spec for ch in "*?["):
                raise InputError("glob matches no file", where, value=spec)
            matches = [pattern]
        out.extend((None if is_table(m) else Path(m).stem, Path(m)) for m in matches)
    seen: set[str] = set()
    for name, _ in out:
        if name in seen:
            raise InputError("two prediction files have the same system name", where, value=name)
        if name is not None:
            seen.add(name)
    return out
