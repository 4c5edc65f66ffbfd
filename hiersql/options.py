"""Every option of the measures and of a run, declared once.

An :class:`Option` gives a name (the Python keyword; with ``-`` for ``_`` and a leading ``--``, the
command-line flag), a default, a help text, its choices or rule, the families that read it, and whether it is
a ``$parameter`` of the SQL files (then ``hiersql sql`` has its flag). From the two declarations,
:data:`MEASURE_OPTIONS` and :data:`RUN_OPTIONS`, come:

- the frozen dataclasses :class:`Options` (what to compute) and :class:`RunOptions` (where to compute it),
  which check and normalise every value when built, and nowhere else: a bad value raises
  :class:`OptionError`, a ``ValueError`` that is also an :class:`~hiersql.errors.InputError`, whose message
  names the keyword and the value (``beta must be a finite number >= 0: nan``);
- the flags of ``hiersql evaluate`` and ``hiersql sql`` (:func:`add_flags`, with the default and choices in
  their help) and the reading of them (:func:`from_args`), whose errors name the flag and the text given
  (``--beta: must be a finite number >= 0: 'nan'``);
- :func:`options_from_mapping`, the ``options`` table of a job file, whose errors name the file and the key.

The checks and parsers of the values are in :mod:`hiersql.option_checks`. This module imports only the standard
library, :mod:`hiersql.errors` and that module: the command line builds its parsers from it at start-up (the
dataclasses are made on first use, see :func:`__getattr__`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NamedTuple

from . import option_checks as checks
from .errors import InputError, display

# The characters stripped from both ends of a label and of an instance id, whatever the source, and of the
# labels an option names: the Unicode space separators (category Zs), which DuckDB's trim() strips in the file
# readers (readers.sql); not tabs or line breaks (docs/conventions.md, Labels).
SPACES = " \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000"

if TYPE_CHECKING:  # made on first use by the module's __getattr__; to a type checker they are Any
    Options = RunOptions = Any

# the modules of hiersql.measures
FAMILIES = ("set_based", "flat", "confusion", "pair_based", "lca", "scoring", "severity")
AVERAGES = ("micro", "macro", "samples", "weighted", "label_macro")  # the values of ``average`` (docs/sklearn.md)
DEFAULT_AVERAGES = ("micro", "macro")
ENGINES = ("duckdb", "postgres", "spark")


class OptionError(InputError):
    """A bad option value. ``option`` is the keyword, ``rule`` what the value must be, ``value`` the value (or
    the offending item of a list). A ``ValueError``; as an :class:`~hiersql.errors.InputError` the command
    line reports it on one line with exit status 2."""

    def __init__(self, option: str, rule: str, value: object, excluded: str | None = None) -> None:
        self.option = option
        self.rule = rule
        self.excluded = excluded  # the option this one was given with and excludes (:attr:`Option.excludes`)
        super().__init__(f"{option} {rule}", value=value)


# DuckDB's units of memory sizes
_UNITS = {"bytes": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "KB": 10**3, "MB": 10**6,
          "GB": 10**9, "TB": 10**12}


def size_bytes(text: str) -> float:
    """A memory size as DuckDB writes it (``1.3 GiB``, ``256.0 KiB``) in bytes; 0 for a unit it does not
    know."""
    number, unit = text.split()
    return float(number) * _UNITS.get(unit, 0)


class OutOfMemory(OptionError):
    """DuckDB ran out of memory within its ``memory_limit`` (``--memory-limit``) while ``step`` ran and could
    not spill to disk. Says the step, what DuckDB held and needed (read from its message: ``... of size 256.0
    KiB (1.3 GiB/1.3 GiB used)``) and a limit to try, twice the one that failed. A user's limit, not a bug:
    the command line reports it on one line naming the flag, exit status 2."""

    def __init__(self, step: str, exc: BaseException) -> None:
        import re

        text = " / ".join(line.strip() for line in str(exc).splitlines() if line.strip())
        found = re.search(r"of size ([\d.]+ \w+) \(([\d.]+ \w+)/([\d.]+ \w+) used\)", text)
        twice = 2 * size_bytes(found[3]) if found else 0
        if found and twice:
            rule = (f"out of memory while {step} (DuckDB held {found[2]} of its {found[3]} and needed"
                    f" {found[1]} more): try {_size(twice)}, or free disk space for DuckDB's temp_directory")
        else:
            rule = (f"out of memory while {step} ({text.split(' / ')[0]}): give it more memory or free disk space"
                    " for DuckDB's temp_directory")
        super().__init__("memory_limit", rule, None)


class DiskFull(OptionError):
    """The disk under DuckDB's ``temp_directory`` filled while ``step`` ran: DuckDB spills there beyond its
    ``memory_limit`` (``--memory-limit``), up to the free space it saw when the spill began (a bound it reports
    as :class:`OutOfMemory`); another writer may fill the disk first. Says the step and the folder. An
    environment's limit, not a bug: the command line reports it on one line naming the flag, exit status 2."""

    def __init__(self, step: str, exc: BaseException) -> None:
        import re

        found = re.search(r'Could not write file "(.+)/[^/"]*"', str(exc))
        folder = f" ({found[1]})" if found else ""
        super().__init__("memory_limit", f"out of disk space while {step}: DuckDB spilled beyond its memory limit"
                                         f" into its temp_directory{folder} until the disk was full; free disk"
                                         " space there, or give it more memory", None)


def resource_error(step: str, exc: BaseException) -> OptionError | None:
    """DuckDB's out-of-memory error as :class:`OutOfMemory`, its failure to spill on a full disk as
    :class:`DiskFull`, naming ``step``; ``None`` for any other error."""
    import duckdb

    if isinstance(exc, duckdb.OutOfMemoryException):
        return OutOfMemory(step, exc)
    if isinstance(exc, duckdb.IOException) and "No space left on device" in str(exc):
        return DiskFull(step, exc)
    return None


@contextmanager
def resource_errors(step: str) -> Iterator[None]:
    """:func:`resource_error` of an error raised within, raised instead of it."""
    try:
        yield
    except Exception as exc:
        named = resource_error(step, exc)
        if named is None:
            raise
        raise named from None


class SparkOutOfMemory(OptionError):
    """Spark ran out of memory while ``step`` ran: the memory that ``setting`` (``spark.executor.memory`` or
    ``spark.driver.memory``, given with ``--spark-conf``) bounds, now ``value``. Says the step, Spark's reason
    and a value to try, twice the one that failed. A setting, not a bug: one line naming ``--spark-conf``, exit
    status 2."""

    def __init__(self, step: str, setting: str, value: str, reason: str) -> None:
        twice = _twice(value)
        rule = f"Spark ran out of memory while {step} ({reason}; {setting}={value})"
        super().__init__("spark_conf", rule + (f": try {setting}={twice}" if twice else ""), None)


class SparkStageLost(OptionError):
    """Spark lost the rows of a stage kept as a local checkpoint while ``step`` ran: the executor that held them
    ended (most often out of its memory, ``spark.executor.memory``, now ``value``). Says the step, Spark's reason
    and the two ways out: executors with twice the memory, or ``hiersql.stageDir``, a folder every executor
    sees, whose stages outlive an executor. One line naming ``--spark-conf``, exit status 2."""

    def __init__(self, step: str, value: str, reason: str) -> None:
        twice = _twice(value)
        more = f"spark.executor.memory={twice}, or " if twice else ""
        super().__init__("spark_conf", f"Spark lost a stage's rows while {step}: the executor that held them"
                         f" ended, most often out of memory ({reason}; spark.executor.memory={value}): try {more}"
                         "hiersql.stageDir=DIR, a folder every executor sees, where a stage outlives an executor",
                         None)


class SparkWorkersPython(OptionError):
    """Spark's Python workers, which solve ``step`` per partition, cannot run it: their Python lacks a module
    the step needs (hiersql, pyarrow, ...), is of another minor version than the driver's, or does not start
    (``reason``, the workers' or Spark's own words). The cluster's setting, not a bug: one line naming
    ``--spark-conf`` and where to name a Python that has hiersql, exit status 2."""

    def __init__(self, step: str, reason: str) -> None:
        super().__init__("spark_conf", f"Spark's Python workers cannot run {step} ({reason}): they need hiersql"
                         " and the driver's Python version; name such a Python with spark.pyspark.python (or"
                         " PYSPARK_PYTHON)", None)


def _twice(memory: str) -> str | None:
    """Twice a JVM memory setting written as a number and a unit (``1g`` -> ``2g``); ``None`` for another form."""
    import re

    found = re.fullmatch(r"(\d+)([a-zA-Z]*)", memory.strip())
    return f"{2 * int(found[1])}{found[2]}" if found else None


def _size(n: float) -> str:
    """A byte count as DuckDB reads a memory limit, rounded up: ``3GB``, ``600MB``."""
    import math

    return f"{math.ceil(n / 1e9 * 10) / 10:g}GB" if n >= 1e9 else f"{math.ceil(n / 1e6):g}MB"


class Option(NamedTuple):
    """One option.

    Attributes
    ----------
    name:
        The Python keyword and dataclass field; the flag is ``--name`` with ``-`` for ``_``.
    default:
        The value when the option is not given.
    help:
        One sentence for ``--help``; the default and the choices are appended.
    check:
        ``value -> normalised value``; raises ``checks.Broken(rule)`` when the value is not allowed.
    parse:
        ``command-line text -> value`` handed to ``check`` (texts that are not numbers stay texts, and ``check``
        rejects them with its rule).
    annotation:
        The type of the field, for the dataclass and the documentation.
    choices:
        The allowed values, when they are a list.
    families:
        The measure families that read the option.
    sql:
        A ``$parameter`` of the SQL files: ``hiersql sql`` has its flag.
    plan:
        Shapes the plans of its families (their derived ``$parameters``, which Python steps run):
        ``hiersql sql FAMILY`` has its flag.
    metavar:
        The value's name in ``--help``.
    default_text:
        The default as shown in ``--help``.
    flag_kind:
        ``"value"``, ``"switch"`` (``store_true``) or ``"append"`` (repeatable).
    engine:
        For a run option that only one engine uses: that engine.
    excludes:
        ``(other option, why)``: the other option may not have a value other than its default when this one
        has.
    """

    name: str
    default: Any
    help: str
    check: Callable[[Any], Any]
    parse: Callable[[str], Any] = str
    annotation: str = "str"
    choices: tuple[str, ...] = ()
    families: tuple[str, ...] = ()
    sql: bool = False
    plan: bool = False
    metavar: str | None = None
    default_text: str | None = None
    flag_kind: str = "value"
    engine: str | None = None
    excludes: tuple[str, str] | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def help_text(self) -> str:
        """The help with the choices and the default, as ``--help`` shows it."""
        default = self.default_text if self.default_text is not None else _shown(self.default)
        parts = [f"one of: {', '.join(self.choices)}"] if self.choices else []
        parts.append(f"default: {default}")
        if self.families and set(self.families) != set(FAMILIES):
            parts.append(f"read by: {', '.join(self.families)}")
        return f"{self.help} ({'; '.join(parts)})".replace("%", "%%")


def _shown(value: Any) -> str:
    if isinstance(value, tuple):
        return ",".join(map(str, value)) or "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    return "none" if value is None else str(value)


# ----------------------------------------------------------------------------------------------- labels
# The check of ``labels`` (the others are in hiersql.option_checks): it strips the names as stripped_labels, whose
# OptionError names the parameter of the API's label arguments (hiersql.inputs.arguments).
def _optional_labels(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    try:
        return stripped_labels(checks.names(at_least_one="label")(value))
    except OptionError as exc:
        raise checks.Broken(exc.rule, exc.value) from None


def stripped_labels(names: Iterable[str], parameter: str = "labels") -> tuple[str, ...]:
    """Label names without the :data:`SPACES` around them, as every reader strips the labels of the data; a
    name that is nothing but spaces is an :class:`OptionError` naming ``parameter``."""
    out = []
    for name in names:
        if not name.strip(SPACES):
            raise OptionError(parameter, "must be label names (strings)", name)
        out.append(name.strip(SPACES))
    return tuple(out)


# ---------------------------------------------------------------------------------------------- declaration
def _choice_option(name: str, choices: tuple[str, ...], help: str, families: tuple[str, ...], **kw: Any) -> Option:
    return Option(name, choices[0], help, checks.choice(*choices), choices=choices, families=families,
                  metavar="{" + ",".join(choices) + "}", **kw)


MEASURE_OPTIONS: tuple[Option, ...] = (
    Option("average", DEFAULT_AVERAGES, "averages of the measures that have them, comma-separated",
           checks.names(AVERAGES),
           checks.comma_list("average"), "tuple[str, ...]", choices=AVERAGES, families=FAMILIES, metavar="LIST"),
    Option("include_root", False, "count the root in augmented sets and LCA graphs", checks.boolean, annotation="bool",
           families=("set_based", "lca"), sql=True, flag_kind="switch"),
    Option("max_distance", None, "ancestors, paths and pairings only up to K edges", checks.optional_int(0),
           checks.number_text(int), "int | None", families=("set_based", "pair_based", "lca"), sql=True, metavar="K",
           default_text="no limit"),
    Option("beta", 1.0, "beta of the hierarchical F-measure", checks.number("a finite number >= 0", lambda x: x >= 0),
           checks.number_text(float), "float", families=("set_based",), sql=True, metavar="X"),
    Option("zero_division", 0.0, "value of a ratio whose denominator is 0: 0, 1 or nan; hiersql evaluate also "
           "takes warn (0 and a warning per ill-defined value)", checks.zero_division,
           checks.number_text(float), "float", families=("set_based", "flat", "confusion", "lca"), sql=True,
           metavar="X"),
    _choice_option("augment", ("ancestors", "descendants", "cesa_bianchi"),
                   "set augmentation of the hierarchical precision, recall and F", ("set_based",), sql=True),
    Option("labels", None, "the classes of the flat label-based measures and of the per-class averages of the "
           "set-based ones, comma-separated (a label with a comma in double quotes: 'a,\"b, c\"')", _optional_labels,
           checks.comma_list("label", quoted=True), "tuple[str, ...] | None",
           families=("flat", "set_based"), metavar="LIST",
           default_text="the classes seen"),
    Option("dmax", 5.0, "cost of pairing a class with a default class (GIE, MGIA)",
           checks.number("a finite number > 0", lambda x: x > 0), checks.number_text(float), "float",
           families=("pair_based",), sql=True, metavar="X"),
    _choice_option("lca_graph", ("greedy", "optimal", "extended", "hemkit"),
                   "LCA graphs: the greedy Algorithm 1, the exact minimum, every option, or HEMKit's rules",
                   ("lca",), plan=True),
    _choice_option("pairing", ("nearest", "flow"), "MGIA pairing", ("pair_based",), plan=True),
    _choice_option("shared", ("strict", "reuse"),
                   "GIE: a class in both sets is matched strictly once, or may be reused (the paper's Table 2)",
                   ("pair_based",), plan=True),
    _choice_option("denominator", ("union", "symmetric_difference"),
                   "MGIA denominator: |P ∪ T|·dmax, or the text's symmetric-difference formula", ("pair_based",),
                   plan=True),
    _choice_option("distance_limit", ("side", "pair"),
                   "pair-based: --max-distance bounds each side's climb to the LCA, or d(u, v)", ("pair_based",),
                   plan=True),
    _choice_option("empty_prediction", ("error", "root"),
                   "pair-based: an empty prediction is undefined for the tree-induced error (an error; all-pairs"
                   " error 0), or scored as the root (d of each true label to the root)", ("pair_based",), sql=True),
    _choice_option("tn", ("published", "descendants"), "true negatives of the hierarchical confusion matrix",
                   ("confusion",), sql=True),
    Option("k", (1, 5), "the k of the top-k measures (mistake severity, hierarchical distance@k), comma-separated;"
           " a system without scores has rows at k = 1 only", checks.ks, checks.int_list, "tuple[int, ...]",
           families=("severity",), plan=True, metavar="LIST"),
    _choice_option("severity_distance", ("height", "edges"),
                   "distance of the top-k measures: the height of the lowest common ancestor (Bertinetto et al.),"
                   " or the edge count of the pair-based measures", ("severity",), sql=True),
    Option("offset", 0.0, "offset o of the scoring-tree measures, <= 0",
           checks.number("<= 0 (a finite number)", lambda x: x <= 0), checks.number_text(float), "float",
           families=("scoring",), sql=True, metavar="O"),
)

RUN_OPTIONS: tuple[Option, ...] = (
    _choice_option("engine", ENGINES, "where the measures are computed", ()),
    Option("postgres_url", None, "PostgreSQL server to compute in (with --engine postgres)", checks.non_empty_text,
           annotation="str | None", metavar="URL", engine="postgres"),
    Option("spark_master", "local[*]", "Spark master (with --engine spark)", checks.spark_master, metavar="URL",
           engine="spark"),
    Option("spark_remote", None, "Spark Connect server to compute in, instead of a session of this process's"
           " own (with --engine spark; not with --spark-master)", checks.spark_remote, annotation="str | None",
           metavar="sc://HOST:PORT", engine="spark",
           excludes=("spark_master", "a Spark Connect server runs on the master it was started with")),
    Option("spark_conf", (), "a Spark setting (with --engine spark); repeatable", checks.settings,
           annotation="tuple[tuple[str, str], ...]", metavar="KEY=VALUE", flag_kind="append", engine="spark"),
    Option("memory_limit", None, "DuckDB memory limit (larger intermediates spill to disk)", checks.size,
           annotation="str | None", metavar="SIZE", default_text="DuckDB's"),
    Option("threads", None, "threads DuckDB computes with", checks.optional_int(1), checks.number_text(int),
           "int | None", metavar="N", default_text="one per core"),
)
# The run options of the DuckDB store that holds the inputs: flags of every command that reads inputs.
STORE_OPTIONS = ("memory_limit", "threads")


# ------------------------------------------------------------------------------------------- the dataclasses
def _check_all(self: Any) -> None:
    """``__post_init__``: check and normalise every field (frozen: written with ``object.__setattr__``)."""
    for option in self.declaration:
        value = getattr(self, option.name)
        try:
            object.__setattr__(self, option.name, option.check(value))
        except checks.Broken as broken:
            raise OptionError(option.name, broken.rule, value if broken.item is None else broken.item) from None
    for option in self.declaration:
        if option.engine and self.engine != option.engine and getattr(self, option.name) != option.default:
            raise OptionError(option.name, f"is only read by the {option.engine} engine",
                              getattr(self, option.name))
        if option.excludes is None or getattr(self, option.name) == option.default:
            continue
        other, = (o for o in self.declaration if o.name == option.excludes[0])
        if getattr(self, other.name) != other.default:
            raise OptionError(option.name, _excluding(option, other.name), getattr(self, option.name),
                              excluded=other.name)


def _excluding(option: Option, other: str) -> str:
    """The rule ``option`` breaks when given with the option it excludes, named ``other`` (its keyword or its
    flag)."""
    return f"cannot be given with {other} ({option.excludes[1]})"


def _with(self: Any, **changes: Any) -> Any:
    """A copy with ``changes`` (checked like the constructor's arguments)."""
    from dataclasses import replace

    unknown = sorted(set(changes) - {o.name for o in self.declaration})
    if unknown:
        raise TypeError(f"unknown option(s) {unknown} (known: {', '.join(o.name for o in self.declaration)})")
    return replace(self, **changes)


_CLASSES = {
    "Options": (MEASURE_OPTIONS, "The options of every measure family, checked when built (:class:`OptionError` "
                "names the keyword and the value). ``average`` and ``labels`` take a string or a list and are kept "
                "as tuples."),
    "RunOptions": (RUN_OPTIONS, "Where and with what resources the measures are computed, checked when built; an "
                   "engine's own settings (``postgres_url``, ``spark_master``, ``spark_remote``, ``spark_conf``) are "
                   "an error with another engine."),
}


def __getattr__(name: str) -> type:
    """:class:`Options` and :class:`RunOptions`, made on first use: importing :mod:`dataclasses` (with
    :mod:`inspect`) costs some 30 ms, which the command line does not pay to build its parsers."""
    if name not in _CLASSES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _made(name)


def _made(name: str) -> type:
    """The frozen dataclass ``name`` of :data:`_CLASSES`, made once."""
    if name in globals():
        return globals()[name]
    from dataclasses import field, make_dataclass

    declaration, summary = _CLASSES[name]
    doc = "\n".join([summary, "", "Parameters", "----------"]
                    + [f"{o.name}: {o.annotation}\n    {o.help_text().replace('%%', '%')}." for o in declaration])
    cls = make_dataclass(name, [(o.name, o.annotation, field(default=o.default)) for o in declaration],
                         frozen=True, namespace={"__post_init__": _check_all, "with_": _with, "__doc__": doc,
                                                 "declaration": declaration})
    cls.__module__ = __name__
    globals()[name] = cls
    return cls


def make_options(**options: Any) -> Options:
    """:class:`Options` from keyword arguments; an unknown keyword is a ``TypeError`` that lists the known
    ones, a bad value an :class:`OptionError`."""
    unknown = sorted(set(options) - {o.name for o in MEASURE_OPTIONS})
    if unknown:
        raise TypeError(f"unknown option(s) {unknown} (known: {', '.join(o.name for o in MEASURE_OPTIONS)})")
    return _made("Options")(**options)


def options_from_mapping(mapping: Mapping[str, Any], where: str) -> Options:
    """:class:`Options` from a mapping read from a file (the ``options`` of a job file); an unknown key or a
    bad value is an :class:`~hiersql.errors.InputError` naming ``where`` (``"job.toml"``), the key and the
    value."""
    known = [o.name for o in MEASURE_OPTIONS]
    for key in mapping:
        if key not in known:
            raise InputError(f"unknown option (known: {', '.join(known)})", where, value=key)
    try:
        return _made("Options")(**mapping)
    except OptionError as exc:
        raise InputError(f"option {exc.option} {exc.rule}", where, value=exc.value) from None


# ----------------------------------------------------------------------------------------- command line
def declared(*names: str) -> tuple[Option, ...]:
    """The options called ``names``, from either declaration."""
    by_name = {o.name: o for o in (*MEASURE_OPTIONS, *RUN_OPTIONS)}
    return tuple(by_name[name] for name in names)


def sql_options() -> tuple[Option, ...]:
    """The options that are ``$parameters`` of the SQL files or shape a family's plan: the flags of
    ``hiersql sql``."""
    return tuple(o for o in MEASURE_OPTIONS if o.sql or o.plan)


def add_flags(parser: argparse.ArgumentParser | Any, declaration: Iterable[Option]) -> None:
    """One flag per option of ``declaration``. A flag left out reads as ``None`` (:func:`from_args` then keeps
    the default); its text is parsed and checked by :func:`from_args`, not by argparse, so that every bad value
    gets the same one-line error."""
    for option in declaration:
        if option.flag_kind == "switch":
            parser.add_argument(option.flag, action="store_true", default=None, help=option.help_text())
        else:
            parser.add_argument(option.flag, metavar=option.metavar or "TEXT", help=option.help_text(),
                                action="append" if option.flag_kind == "append" else "store")


def given(args: argparse.Namespace, declaration: Iterable[Option]) -> list[Option]:
    """The options of ``declaration`` whose flag was given."""
    return [o for o in declaration if getattr(args, o.name, None) is not None]


def parse_flag(option: Option, text: str) -> Any:
    """The value of ``option``'s flag given as ``text``; a text it cannot read is an
    :class:`~hiersql.errors.InputError` naming the flag and the text."""
    try:
        return option.parse(text)
    except checks.Broken as broken:
        raise InputError(broken.rule, option.flag, value=display(text)) from None


def from_args(cls: type, args: argparse.Namespace) -> Any:
    """``cls`` (:class:`Options` or :class:`RunOptions`) from the flags :func:`add_flags` declared; an option
    whose flag the command lacks or that was not given keeps its default. A bad value is an
    :class:`~hiersql.errors.InputError` naming the flag and the text given (or its offending item)."""
    values = {}
    for option in given(args, cls.declaration):
        text = getattr(args, option.name)
        values[option.name] = parse_flag(option, text) if option.flag_kind == "value" else text
    try:
        return cls(**values)
    except OptionError as exc:
        option = next(o for o in cls.declaration if o.name == exc.option)
        text = getattr(args, option.name)
        shown = exc.value if isinstance(exc.value, str) or text is None else text
        rule = exc.rule if exc.excluded is None else _excluding(option, declared(exc.excluded)[0].flag)
        raise InputError(rule, option.flag, value=display(shown)) from None
