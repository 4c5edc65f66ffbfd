"""Hooks for tests/test_jobs_attempts.py, in the processes that evaluate units: on this folder's path (it is
imported by every Python process started with it on PYTHONPATH), with HIERSQL_TEST_KILLER=SYSTEM set, a batch
holding the system SYSTEM ends its process with SIGKILL before it is evaluated; with HIERSQL_TEST_SLOW=SECONDS,
each batch first sleeps that long (having written its process id to the file HIERSQL_TEST_STARTED, when set)."""

import os

if os.environ.get("HIERSQL_TEST_KILLER") or os.environ.get("HIERSQL_TEST_SLOW"):
    import signal
    import time

    from hiersql.jobs import runner

    _evaluate = runner.evaluate

    def _evaluate_or_die(units, stores):
        if os.environ.get("HIERSQL_TEST_STARTED"):
            with open(os.environ["HIERSQL_TEST_STARTED"], "w") as started:
                started.write(str(os.getpid()))
        time.sleep(float(os.environ.get("HIERSQL_TEST_SLOW") or 0))
        if any(u.system == os.environ.get("HIERSQL_TEST_KILLER") for u in units):
            os.kill(os.getpid(), signal.SIGKILL)
        return _evaluate(units, stores)

    runner.evaluate = _evaluate_or_die
