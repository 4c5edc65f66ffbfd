"""``hiersql jobs run`` whose units take a while and which prints COMMITTED after each committed batch, for the
tests that look at or stop a run part-way:

    python tests/slow_jobs_run.py QUEUE SECONDS_PER_UNIT hang|finish|marked [jobs run flags...]

``hang``: after the first committed batch the run sleeps for an hour (the test kills it). ``marked``: as
``finish``, and EVALUATING is printed when a batch's evaluation starts (after its claim), so that a test can
stop the run while a batch is at hand."""
import sys
import time

from hiersql.cli import main
from hiersql.jobs import runner
from hiersql.jobs.queue import Connection

queue, delay, after, *flags = sys.argv[1:]
evaluate, commit = runner.evaluate, Connection.commit


def slow_evaluate(units, stores):
    if after == "marked":
        print("EVALUATING", flush=True)
    time.sleep(float(delay))
    return evaluate(units, stores)


def marked_commit(self):
    batch = bool(self.held)  # the units of a claim (not the schema's transaction)
    commit(self)
    if batch:
        print("COMMITTED", flush=True)
        if after == "hang":
            time.sleep(3600)


runner.evaluate, Connection.commit = slow_evaluate, marked_commit
sys.exit(main(["jobs", "run", "--queue", queue, *flags]))
