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
    calling o97.parquet.``; for an exception of Spark's Python workers, the last line of their traceback (the
    exception: ``ValueError: ...``), not pyspark's ``An exception was thrown from the Python worker``."""
    java = getattr(exc, "java_exception", None)
    text = str(java if java is not None else exc).strip()
    if not text:
        return type(exc).__name__
    lines = text.splitlines()
    traceback = next((i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")), None)
    if traceback is not None:
        return next((line for line in reversed(lines[traceback + 1:]) if line[:1].strip()), lines[0])
    return lines[0]


def query_interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is DuckDB's word for a query that Ctrl-C or SIGTERM stopped: it turns the
    KeyboardInterrupt raised while it runs into its own exception (``InterruptException``, or a RuntimeError
    'Query interrupted' where it fetched the rows): the command stops as on Ctrl-C, not as on an error."""
    return type(exc).__name__ == "InterruptException" or (
        isinstance(exc, RuntimeError) and str(exc).strip() == "Query interrupted")


def secrets(source: object) -> list[str]:
    """The passwords a connection string holds, as written and percent-decoded: a URI's user part
    (``postgresql://me:pw@h/db``; up to the last ``@`` before the path, and each part of it between ``@``: a
    password written with an ``@`` in it, which a driver splits at the first), its ``?password=``, a libpq
    keyword string's ``password=`` and a Spark Connect URL's ``;token=``. Also of a text that is not well
    formed: a library's error may quote the URI, or the password, of one it could not parse (:func:`masked`)."""
    from urllib.parse import unquote

    text = str(source)
    found = []
    user = re.match(r"^\w+://[^:@/]*:([^/]*)@", text)  # greedy: to the last @ before the path
    if user:
        found += [user.group(1), *user.group(1).split("@")]
    found += re.findall(r"[?&]password=([^&]*)", text)
    found += re.findall(r";token=([^;]*)", text)  # a Spark Connect URL's (sc://host/;token=...)
    found += [v.strip("'") for v in re.findall(r"\bpassword\s*=\s*('(?:[^'\\]|\\.)*'|[^\s']\S*)", text)]
    out = []
    for secret in found:
        for form in (secret, unquote(secret)):
            if form and form not in out:
                out.append(form)
    return sorted(out, key=len, reverse=True)  # the longer first: one password may contain another


def masked(message: str, *sources: object) -> str:
    """``message`` with every password of ``sources`` (:func:`secrets`) replaced by ``***`` where it stands
    between characters that are not letters or digits (a driver's error may quote a connection string, or the
    password itself, that it could not parse; a short password inside a word is left: "p" in "percent")."""
    for source in sources:
        for secret in secrets(source):
            message = re.sub(f"(?<![^\\W_]){re.escape(secret)}(?![^\\W_])", "***", message)
    return message


def display(source: object) -> str:
    """A reference, path or connection string as messages show it: without a password, whether in a URI's
    user part (``postgresql://me:pw@h/db``: left out), in its query (``?password=pw``) or as a keyword of a
    libpq string (``host=h password='p w'``), both shown as ``password=***``; a Spark Connect URL's token
    (``sc://h/;token=t``) as ``token=***``."""
    text = str(source)
    if text.startswith("sc://"):
        return re.sub(r"(;token=)[^;]*", r"\1***", text)
    if text.startswith(("postgresql://", "postgres://")):
        text = re.sub(r"^(\w+://[^:@/]*):[^/]*@", r"\1@", text)  # to the last @ before the path
        return re.sub(r"([?&]password=)[^&:]*", r"\1***", text)
    return re.sub(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s']\S*)", r"\1***", text)
