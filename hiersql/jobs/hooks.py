"""``--on-failure CMD`` (``on_failure`` in a job file): a shell command run when a run's units fail (or, under
``hiersql jobs schedule``, when one of its runs fails), told what failed without splicing anything into its
text: in environment variables and, as JSON, on its standard input. Its own failure is said on stderr and
changes nothing else (the run's exit status stays that of the run)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import warnings
from typing import Any

TIMEOUT = 300.0  # seconds a command may run: a hook that hangs (a mail server that never answers) must not hold the run



def on_failure(command: str, *, job: str, job_id: str | None, spec: str | None, queue: str, status: int,
               summary: str, counts: dict[str, int] | None = None,
               failures: list[tuple[str, str, str]] | None = None) -> int | None:
    """Run ``command`` through the shell (``/bin/sh -c``), with:

    - ``HIERSQL_JOB`` (the job's name), ``HIERSQL_JOB_ID`` (its submission, empty when none was made),
      ``HIERSQL_SPEC`` (the job file), ``HIERSQL_QUEUE`` (the queue, without a password), ``HIERSQL_STATUS``
      (the run's exit status: 1 units failed, 2 a bad job file or input, 75 a busy queue file),
      ``HIERSQL_FAILED`` (how many units failed), ``HIERSQL_UNITS`` (how many were processed) and
      ``HIERSQL_SUMMARY`` (the one line hiersql printed on stderr) in its environment;
    - the same, with every failed unit (``dataset``, ``system``, ``error``) and the counts by status, as a JSON
      object on its standard input.

    Its output goes to hiersql's stderr (stdout stays the run's). A command that cannot start, exits with
    another status than 0, or runs longer than :data:`TIMEOUT` seconds (then it and every process it started
    are killed) is one warning on stderr. Returns its exit status (``None``: it could not start)."""
    counts = dict(counts or {})
    failures = list(failures or [])
    facts: dict[str, Any] = {"job": job, "job_id": job_id, "spec": spec, "queue": queue, "status": status,
                             "failed": counts.get("failed", len(failures)), "units": sum(counts.values()),
                             "summary": summary}
    env = {**os.environ, **{f"HIERSQL_{k.upper()}": "" if v is None else str(v) for k, v in facts.items()}}
    payload = json.dumps({**facts, "counts": counts,
                          "failures": [{"dataset": d, "system": s, "error": e} for d, s, e in failures]})
    sys.stdout.flush()
    try:
        child = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    except OSError as exc:
        warnings.warn(f"--on-failure: the command could not start ({exc.strerror or exc}): {command!r}",
                      RuntimeWarning, stacklevel=2)
        return None
    try:
        out, err = child.communicate(payload, timeout=TIMEOUT)
        how = None if not child.returncode else (f"was killed by signal {-child.returncode}" if child.returncode < 0
                                                 else f"exited with status {child.returncode}")
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)  # its own session: the shell and what it started
        out, err = child.communicate()
        how = f"ran longer than {TIMEOUT:g} s and was killed"
    for text in (out, err):
        if text:
            sys.stderr.write(text if text.endswith("\n") else text + "\n")
    if how:
        warnings.warn(f"--on-failure: the command {how} (the run's exit status stays {status}): {command!r}",
                      RuntimeWarning, stacklevel=2)
    return child.returncode
