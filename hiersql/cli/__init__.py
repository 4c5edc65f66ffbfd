"""The ``hiersql`` command line (SPEC §10).

Exit status: 0 on success, 2 on bad input (one line on stderr naming the file, line and value at fault),
1 on an internal error; ``hiersql jobs`` also 1 when units failed and 75 when another process holds the queue
file (docs/jobs.md). A mistake on the command line itself (an unknown flag, a missing argument, a value of
the wrong type) is bad input too: one line naming the command and the flag, not argparse's usage dump
(``--help`` still prints the full usage).
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import threading
import warnings
from pathlib import Path

from ..errors import InputError, masked, query_interrupted


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, ``hiersql evaluate: error: argument --beta: invalid
    float value: 'x'``, with exit status 2 (argparse prints the usage first, which buries the message)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}\n")


# the sub-commands: each module of this package named here exposes ``register(subparsers)``, which adds one
# sub-command whose ``func(args) -> int`` runs it; ``register`` only declares arguments, heavy imports happen
# inside ``func``
COMMANDS = ("evaluate", "demo", "sql", "install_macros", "confusion", "hemkit", "scoring", "jobs", "report",
            "breakdown", "compare", "dbt")

def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="hiersql", description="Hierarchical classification measures as SQL over a taxonomy closure."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"hiersql.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"hiersql.cli.{name}":
                raise
            continue
        module.register(sub)
    return parser


def run() -> None:
    """The ``hiersql`` command (and ``python -m hiersql``): :func:`main`'s status as the process's exit status.
    A Ctrl-C that Python raises again once :func:`main` has stopped for it (and said so) keeps 130."""
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a command-line error (2, already printed)
        return exc.code if isinstance(exc.code, int) else 2
    args.argv = list(sys.argv[1:] if argv is None else argv)  # the command as given (hiersql report shows it)
    from .common import Steps

    Steps.last = None  # the step named if DuckDB runs out of memory: none of an earlier call
    # SIGTERM (systemd, timeout, kill) stops a command as Ctrl-C does: the batches at hand are committed,
    # transactions rolled back; only the main thread may set a handler (main() may run in another)
    handled = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminated) if handled else None
    _terminated.received = False
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return int(args.func(args) or 0)
    except InputError as exc:
        print(f"hiersql: error: {masked(_one_line(str(_as_flag(exc))), *args.argv)}", file=sys.stderr)
        return getattr(exc, "exit_status", 2)  # hiersql jobs: units failed 1, queue busy 75 (docs/jobs.md)
    except KeyboardInterrupt:
        return _interrupted()
    except BrokenPipeError:
        return 0
    except Exception as exc:  # internal error: one line, exit 1; HIERSQL_DEBUG=1 shows the traceback
        import os

        if query_interrupted(exc):
            return _interrupted()
        if os.environ.get("HIERSQL_DEBUG"):
            raise
        from ..options import resource_error

        named = resource_error(_step(), exc)  # duckdb's, beyond --memory-limit and the disk, outside a step
        if named is not None:
            print(f"hiersql: error: {_as_flag(named)}", file=sys.stderr)
            return 2
        from ..errors import is_spark_error, spark_message

        said = spark_message(exc) if is_spark_error(exc) else str(exc)  # Spark's: one line, not the JVM's stack
        print(f"hiersql: internal error: {type(exc).__name__}: {masked(_one_line(said), *args.argv)}"
              f"{_spark_log()}", file=sys.stderr)
        return 1
    finally:
        if previous is not None:  # (None also when the earlier handler was not set from Python)
            signal.signal(signal.SIGTERM, previous)


def _as_flag(exc: InputError) -> InputError:
    """An option's error raised by the library (:class:`~hiersql.options.OptionError`, named by its Python
    keyword: ``labels ...``) as the command line names it: by its flag (``--labels: ...``)."""
    from ..options import OptionError, declared

    if not isinstance(exc, OptionError):
        return exc
    try:
        option, = declared(exc.option)
    except KeyError:  # (sample_weight, ...: no flag)
        return exc
    return InputError(exc.rule, option.flag, value=exc.value)


def _interrupted() -> int:
    """Say that Ctrl-C (130) or SIGTERM (143) stopped the command; its exit status."""
    if _terminated.received:
        print("hiersql: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
    print("hiersql: interrupted", file=sys.stderr)
    return 130


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM: noted, then handled as Ctrl-C is (a KeyboardInterrupt)."""
    _terminated.received = True
    raise KeyboardInterrupt


_terminated.received = False


def _show_warning(message: Warning | str, category: type[Warning], filename: str = "", *_: object,
                  **__: object) -> None:
    """A warning as one line on stderr, ``hiersql: warning: FILE: what``, without Python's source line; one
    that an installed library raises about itself names that library first (``hiersql: warning: pyspark:
    ...``), so that it does not read as hiersql's."""
    from tqdm import tqdm  # written between the progress bars' redraws, not into a bar's line

    tqdm.write(f"hiersql: warning: {_library(filename)}{_one_line(str(message))}", file=sys.stderr)


def _library(filename: str) -> str:
    """``"NAME: "`` for a file of the installed package NAME other than hiersql, else ``""``."""
    parts = Path(filename).parts
    for i, part in enumerate(parts[:-1]):
        if part in ("site-packages", "dist-packages") and parts[i + 1] != "hiersql":
            return f"{parts[i + 1].removesuffix('.py')}: "
    return ""


def _spark_log() -> str:
    """`` (Spark's log: FILE)`` when the command started a Spark JVM (its log is then kept), else ``""``."""
    engines = sys.modules.get("hiersql.engines")  # not imported: no Spark was started
    log = engines.spark_log() if engines is not None else None
    return f" (Spark's log: {log})" if log is not None else ""


def _step() -> str:
    """The step of the command that was running (the progress steps of the sub-commands), for messages."""
    from .common import Steps

    return Steps.last or "reading the input"


def _one_line(text: str) -> str:
    """A message on one line: line breaks (a value quoted with ``repr`` has none; a library's message may)
    become `` / ``."""
    return " / ".join(part.strip() for part in text.splitlines() if part.strip())


if __name__ == "__main__":
    sys.exit(main())
