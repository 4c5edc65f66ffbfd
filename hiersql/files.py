"""Files written whole or not at all."""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to a new file beside ``path``, then rename it to ``path``: a reader sees the old
    file or the new one, never a part, and a failure (a full disk) leaves the old file and no partial one, and
    its :class:`OSError` names ``path``. The new file has the mode a plain write would give it."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.partial")
    try:
        with open(partial, "x", encoding="utf-8") as out:
            out.write(text)
        os.replace(partial, path)
    except BaseException as exc:
        partial.unlink(missing_ok=True)
        if isinstance(exc, OSError):  # named by the page, not by the partial file, nor by no file at all
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
