"""Naming the prediction sources of many systems: ``NAME=FILE`` pairs and globs (shared by the command line
and batch jobs)."""

from __future__ import annotations

import glob
from pathlib import Path

from .errors import InputError


def parse_preds(specs: list[str], where: str = "--pred", base: Path | None = None) -> list[tuple[str, Path]]:
    """``NAME=FILE`` or a glob → ``[(name, path), ...]`` (a glob's names are the file stems); a name given twice
    or a glob matching nothing is an :class:`~hiersql.errors.InputError` naming ``where`` (the flag, or the
    job file and line). Relative paths and globs are taken from ``base`` when given (a job file's folder)."""
    out: list[tuple[str, Path]] = []
    for spec in specs:
        name, sep, path = spec.partition("=")
        if sep and name and not any(ch in name for ch in "*?[/"):
            out.append((name, base / path if base is not None else Path(path)))
            continue
        pattern = str(base / spec) if base is not None else spec
        matches = sorted(glob.glob(pattern))
        if not matches:
            if any(ch in spec for ch in "*?["):
                raise InputError("glob matches no file", where, value=spec)
            matches = [pattern]
        out.extend((Path(m).stem, Path(m)) for m in matches)
    seen: set[str] = set()
    for name, _ in out:
        if name in seen:
            raise InputError("two prediction files have the same system name", where, value=name)
        seen.add(name)
    return out
