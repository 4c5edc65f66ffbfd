"""Errors raised on bad input.

Every message names where the fault is: ``file:line: message: 'value'``. The CLI prints the message on one
line and exits with status 2.
"""

from __future__ import annotations

import re
from pathlib import Path


class InputError(ValueError):
    """Bad input: a malformed file, an unknown label, a cycle in a taxonomy, ...

    Parameters
    ----------
    message:
        What is wrong, in plain words.
    source:
        The file (or table, or ``"<DataFrame>"``) the input came from.
    line:
        1-based line (or row) number within ``source``, when known.
    value:
        The offending value, quoted in the message.
    """

    def __init__(
        self,
        message: str,
        source: str | Path | None = None,
        line: int | None = None,
        value: object = None,
    ) -> None:
        self.message = message
        self.source = str(source) if source is not None else None
        self.line = line
        self.value = value
        super().__init__(self._render())

    def _render(self) -> str:
        where = ""
        if self.source is not None:
            where = self.source if self.line is None else f"{self.source}:{self.line}"
            where += ": "
        tail = "" if self.value is None else f": {self.value!r}"
        return f"{where}{self.message}{tail}"


class DataWarning(UserWarning):
    """Input that was accepted but changed: duplicates collapsed, unknown labels ignored, zero divisions."""


def is_spark_error(exc: BaseException) -> bool:
    """Whether ``exc`` is an error pyspark or py4j raised (an analysis, a parse, a failed job, a JVM that did
    not start), not a bug of hiersql's."""
    return type(exc).__module__.startswith(("pyspark", "py4j"))


def spark_message(exc: BaseException) -> str:
    """The first line of what a pyspark or py4j error says; for a Java exception, its own message
    (``org.apache...Exception: No FileSystem for scheme "s3a"``), not py4j's ``An error occurred while
    calling o97.parquet.``"""
    java = getattr(exc, "java_exception", None)
    text = str(java if java is not None else exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def display(source: object) -> str:
    """A reference, path or connection string as messages show it: without a password, whether in a URI's
    user part (``postgresql://me:pw@h/db``: left out), in its query (``?password=pw``) or as a keyword of a
    libpq string (``host=h password='p w'``), both shown as ``password=***``."""
    text = str(source)
    if text.startswith(("postgresql://", "postgres://")):
        text = re.sub(r"^(\w+://[^:@/]*):[^@/]*@", r"\1@", text)
        return re.sub(r"([?&]password=)[^&:]*", r"\1***", text)
    return re.sub(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s']\S*)", r"\1***", text)
