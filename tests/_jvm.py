"""A hiersql command in a process of its own that starts Spark's JVM: its stdout, its stderr and the JVM's own
output, which hiersql keeps in a log file (hiersql.engines.spark_log), not on the command's streams."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

MARK = "\n--- the JVM's log ---\n"
# main() as `python -m hiersql` runs it, then the JVM's log (kept by asking for it) after MARK on stderr
_CODE = ("import sys; from hiersql.cli import main; code = main(sys.argv[1:]); from hiersql import engines; "
         "log = engines.spark_log(); sys.stderr.write(MARK + (log.read_text() if log else '')); sys.exit(code)"
         ).replace("MARK", repr(MARK))


def run_with_jvm_log(args: list[str], tmp_path: Path) -> tuple[int, str, str, str]:
    """``(exit status, stdout, stderr, the JVM's log)`` of ``hiersql ARGS`` (temporary files in ``tmp_path``)."""
    result = subprocess.run([sys.executable, "-c", _CODE, *args], capture_output=True, text=True, timeout=600,
                            cwd=tmp_path, env={**os.environ, "TMPDIR": str(tmp_path)})
    err, _, log = result.stderr.partition(MARK)
    return result.returncode, result.stdout, err, log

