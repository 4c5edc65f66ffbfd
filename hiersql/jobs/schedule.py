"""A long-running scheduler: submit and run a job file at the times of a cron expression (croniter)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime

from ..errors import InputError


def check_cron(expression: str) -> None:
    """A five-field cron expression (minute hour day month weekday), or six with seconds last."""
    from croniter import croniter

    if not croniter.is_valid(expression):
        raise InputError("not a cron expression (minute hour day month weekday [second])", "--cron",
                         value=expression)


def schedule(
    expression: str, fire: Callable[[], object], runs: int | None = None,
    clock: Callable[[], datetime] = datetime.now, sleep: Callable[[float], object] = time.sleep,
) -> int:
    """Call ``fire()`` at every time of ``expression`` after now (local time), ``runs`` times (forever when
    ``None``); a fire that starts after its time (the previous one ran long) runs at once, and fire times that
    passed meanwhile are skipped. Returns the number of fires."""
    from croniter import croniter

    check_cron(expression)
    times = croniter(expression, clock())
    done = 0
    while runs is None or done < runs:
        at = times.get_next(datetime)
        wait = (at - clock()).total_seconds()
        if wait > 0:
            sleep(wait)
        fire()
        done += 1
        times = croniter(expression, max(clock(), at))
    return done
