"""A unit that kills the process evaluating it, for tests/test_jobs_attempts.py: on this folder's path (it
is imported by every Python process started with it on PYTHONPATH), with HIERSQL_TEST_KILLER=SYSTEM set, a
batch holding the system SYSTEM ends its process with SIGKILL before it is evaluated."""

import os

if os.environ.get("HIERSQL_TEST_KILLER"):
    import signal

    from hiersql.jobs import runner

    _evaluate = runner.evaluate

    def _evaluate_or_die(units, stores):
        if any(u.system == os.environ["HIERSQL_TEST_KILLER"] for u in units):
            os.kill(os.getpid(), signal.SIGKILL)
        return _evaluate(units, stores)

    runner.evaluate = _evaluate_or_die
