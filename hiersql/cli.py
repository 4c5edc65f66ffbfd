"""The ``hiersql`` command line (SPEC §10).

Exit status: 0 on success, 2 on bad input (one line on stderr naming the file, line and value at fault),
1 on an internal error.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .commands import COMMANDS
from .errors import InputError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hiersql", description="Hierarchical classification measures as SQL over a taxonomy closure."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"hiersql.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"hiersql.commands.{name}":
                raise
            continue
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # the command as given (hiersql report shows it)
    try:
        return int(args.func(args) or 0)
    except InputError as exc:
        print(f"hiersql: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("hiersql: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # internal error: one line, exit 1; HIERSQL_DEBUG=1 shows the traceback
        import os

        if os.environ.get("HIERSQL_DEBUG"):
            raise
        print(f"hiersql: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
