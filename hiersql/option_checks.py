"""The checks and parsers of the options' values (:mod:`hiersql.options` declares which option takes which).

A check takes a value (a keyword's, a job file's or a parsed flag's) and returns it normalised, or raises
:class:`Broken` with the rule the value breaks; a parser turns the text of a flag into the value its check
reads (a text that is not a number stays text, and the check rejects it with its rule). Like
:mod:`hiersql.options`, this module imports only the standard library: the command line builds its parsers at
start-up.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any


class Broken(Exception):
    """Raised by a check or a parser: the value breaks ``rule``; ``item`` is the offending item of a list."""

    def __init__(self, rule: str, item: object = None) -> None:
        super().__init__(rule)
        self.rule = rule
        self.item = item


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def choice(*choices: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if isinstance(value, str) and value in choices:
            return value
        raise Broken(f"must be one of {', '.join(choices)}")

    return check


def number(rule: str, allowed: Callable[[float], bool]) -> Callable[[Any], float]:
    """A finite real number (not a bool) for which ``allowed`` holds."""

    def check(value: Any) -> float:
        if _is_number(value) and math.isfinite(value) and allowed(float(value)):
            return float(value)
        raise Broken(f"must be {rule}")

    return check


def zero_division(value: Any) -> float:
    """0, 1 or nan, as scikit-learn's ``zero_division`` without its ``"warn"``."""
    if _is_number(value) and (value in (0, 1) or math.isnan(value)):
        return float(value)
    if value == "warn":
        raise Broken("must be 0, 1 or nan (scikit-learn's 'warn' is offered by the one-shot functions, "
                     "Evaluator and hiersql evaluate)")
    if isinstance(value, str) and value.strip().lower() in ("0", "1", "nan"):  # a job file's "nan": TOML's
        raise Broken("must be the number 0, 1 or nan, not text (in a job file: zero_division = nan)")  # is nan
    raise Broken("must be 0, 1 or nan")


def optional_int(minimum: int) -> Callable[[Any], int | None]:
    """``None``, or an integer (not a bool) ``>= minimum``."""

    def check(value: Any) -> int | None:
        if value is None:
            return None
        if isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= minimum:
            return int(value)
        raise Broken(f"must be an integer >= {minimum}")

    return check


def boolean(value: Any) -> bool:
    if isinstance(value, bool) or (isinstance(value, numbers.Integral) and value in (0, 1)):
        return bool(value)
    raise Broken("must be true or false")


def names(allowed: tuple[str, ...] = (), *, at_least_one: str | None = None) -> Callable[[Any], tuple[str, ...]]:
    """A string (one name) or an iterable of strings → a tuple, each one of ``allowed`` when given; not empty
    when ``at_least_one`` (the noun of the error: an empty list would silently give no value)."""
    rule = f"must be one or more of {', '.join(allowed)}" if allowed else "must be label names (strings)"

    def check(value: Any) -> tuple[str, ...]:
        if isinstance(value, str):
            value = (value,)
        if isinstance(value, Mapping) or not isinstance(value, Iterable):
            raise Broken(rule)
        out = tuple(value)
        for item in out:
            if not isinstance(item, str) or (allowed and item not in allowed):
                raise Broken(rule, item)
        if at_least_one and not out:
            raise Broken(f"must name at least one {at_least_one}")
        return out

    return check


def ks(value: Any) -> tuple[int, ...]:
    """One k or several (each an integer >= 1), as an increasing tuple without repeats."""
    items = (value,) if isinstance(value, numbers.Integral | str) else value
    if isinstance(items, Mapping) or not isinstance(items, Iterable):
        raise Broken("must be integers >= 1")
    out: list[int] = []
    for item in items:
        if not (isinstance(item, numbers.Integral) and not isinstance(item, bool) and item >= 1):
            raise Broken("must be integers >= 1", item)
        if int(item) not in out:
            out.append(int(item))
    if not out:
        raise Broken("must name at least one k")
    return tuple(sorted(out))


def int_list(text: str) -> tuple[Any, ...]:
    """``1,5`` → ``(1, 5)``; an item that is not an integer stays text (the check rejects it)."""
    return tuple(number_text(int)(item) for item in comma_list("k")(text))


def comma_list(noun: str, quoted: bool = False) -> Callable[[str], tuple[str, ...]]:
    """``a,b`` → ``("a", "b")``; a text that names nothing (``","``) is an error. With ``quoted``, an item
    in double quotes is taken whole, as a CSV field (``a,"b, c"`` → ``("a", "b, c")``): names may hold commas."""

    def parse(text: str) -> tuple[str, ...]:
        if quoted:
            import csv

            try:
                fields = next(csv.reader([text], skipinitialspace=True, strict=True), [])
            except csv.Error:
                raise Broken(f"is a comma-separated list of {noun}s, a {noun} with a comma in double quotes"
                             ) from None
        else:
            fields = text.split(",")
        items = tuple(x.strip() for x in fields if x.strip())
        if not items:
            raise Broken(f"gives no {noun}")
        return items

    return parse


def number_text(cast: type) -> Callable[[str], Any]:
    """``cast(text)``, or the text itself when it is not a number (the check then rejects it)."""

    def parse(text: str) -> Any:
        try:
            return cast(text)
        except ValueError:
            return text

    return parse


_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([KMGT]i?B?)\s*", re.IGNORECASE)


def size(value: Any) -> str | None:
    """A DuckDB memory size with a unit (``500MB``, ``2GiB``: DuckDB's powers of 1000 and of 1024), greater
    than 0 and at most this machine's memory (DuckDB takes a larger one and then fails as if the disk were
    full)."""
    if value is None:
        return None
    match = _SIZE.fullmatch(value) if isinstance(value, str) else None
    if match is None or not float(match.group(1)) > 0:
        raise Broken("must be a size > 0 with a unit, such as 500MB, 3GB or 2GiB")
    unit = match.group(2).upper()
    size = float(match.group(1)) * (1024 if "I" in unit else 1000) ** ("KMGT".index(unit[0]) + 1)
    memory = machine_memory()
    if size > memory:
        raise Broken(f"must be at most this machine's memory ({memory / 2**30:.1f} GiB)")
    return value.strip()


def machine_memory() -> int:
    """Bytes of memory of this machine (its physical pages), or of its control group when that is smaller."""
    import os

    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    try:
        with open("/sys/fs/cgroup/memory.max") as file:
            limit = file.read().strip()
    except OSError:
        return memory
    return min(memory, int(limit)) if limit.isdigit() else memory


def non_empty_text(value: Any) -> str | None:
    if value is None or (isinstance(value, str) and value.strip()):
        return value
    raise Broken("must be a non-empty text")


# The masters Spark starts on (its launcher takes yarn and URLs beginning with spark, k8s or local; SparkContext
# then reads these local forms), checked before any input is read.
_SPARK_MASTER = re.compile(r"local(\[(\d+|\*)(\s*,\s*\d+)?\])?|local-cluster\[\s*\d+\s*,\s*\d+\s*,\s*\d+\s*\]"
                           r"|(spark|k8s)://\S+|yarn")


def spark_master(value: Any) -> str:
    if isinstance(value, str) and _SPARK_MASTER.fullmatch(value):
        return value
    raise Broken("must be local, local[N], local[*], local[N,F], local-cluster[N,C,M], spark://HOST:PORT,"
                 " k8s://URL or yarn")


# A Spark Connect server: sc://HOST[:PORT][/;KEY=VALUE...] (pyspark's ChannelBuilder reads the parameters)
_SPARK_REMOTE = re.compile(r"sc://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+)(:\d{1,5})?(/(;[^;=\s]+=[^;\s]*)*)?")


def spark_remote(value: Any) -> str | None:
    if value is None or isinstance(value, str) and _SPARK_REMOTE.fullmatch(value):
        return value
    raise Broken("must be sc://HOST[:PORT] with optional /;KEY=VALUE parameters (a Spark Connect server)")


def settings(value: Any) -> tuple[tuple[str, str], ...]:
    """``KEY=VALUE`` texts, ``(key, value)`` pairs or a mapping → a tuple of pairs; a key given twice is an
    error."""
    items = list(value.items()) if isinstance(value, Mapping) else list(value)
    out: dict[str, str] = {}
    for raw in items:
        item = raw
        if isinstance(raw, str):
            key, sep, setting = raw.partition("=")
            item = (key.strip(), setting.strip()) if sep else None
        if not (isinstance(item, tuple) and len(item) == 2 and all(isinstance(x, str) and x for x in item)):
            raise Broken("must be KEY=VALUE settings", raw)
        if item[0] in out:
            raise Broken("sets a key twice", item[0])
        out[item[0]] = item[1]
    return tuple(out.items())
