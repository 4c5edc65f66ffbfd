"""A long-running scheduler: submit and run a job file at the times of a cron expression (croniter)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timedelta

from ..errors import InputError

_sleep = time.sleep  # how the scheduler waits (a test makes it return at once)


def check_cron(expression: str) -> None:
    """A five-field cron expression (minute hour day month weekday), or an ``@`` alias (``@daily``). Six fields
    are refused: seconds first (Quartz, Spring) or last (croniter)? ``0 0 2 * * *``, 02:00 every day to the one,
    is every second of the first minute of the 2nd of each month to the other."""
    from croniter import croniter

    fields = expression.split()
    if len(fields) == 6:
        raise InputError("six fields are ambiguous (seconds first, as in Quartz and Spring, or last, as in"
                         " croniter?): give five (minute hour day month weekday)", "--cron", value=expression)
    alias = len(fields) == 1 and fields[0].startswith("@")
    if not (len(fields) == 5 or alias) or not croniter.is_valid(expression):
        raise InputError("not a cron expression (minute hour day month weekday)", "--cron", value=expression)


def schedule(
    expression: str, fire: Callable[[], object], runs: int | None = None,
    clock: Callable[[], datetime] = datetime.now, sleep: Callable[[float], object] | None = None,
    on_wait: Callable[[datetime, float], object] | None = None,
) -> int:
    """Call ``fire()`` at every time of ``expression`` after now (local time), ``runs`` times (forever when
    ``None``). A time that passed while the previous fire was still going is fired at once when it ends (the
    latest such time; the others that passed meanwhile are skipped). Before each fire, ``on_wait(time,
    seconds)`` is told the time and how long the wait is (``<= 0``: at once). Returns the number of fires."""
    from croniter import croniter

    check_cron(expression)
    at = croniter(expression, clock()).get_next(datetime)
    done = 0
    while runs is None or done < runs:
        wait = (at - clock()).total_seconds()
        if on_wait is not None:
            on_wait(at, wait)
        if wait > 0:
            (sleep or _sleep)(wait)
        fire()
        done += 1
        after = croniter(expression, at).get_next(datetime)
        now = clock()
        at = _latest(expression, now) if after <= now else after  # passed during the fire: the latest, at once
    return done


def _latest(expression: str, now: datetime) -> datetime:
    """The latest time of ``expression`` at or before ``now`` (croniter's ``get_prev`` is before, only)."""
    from croniter import croniter

    at = croniter(expression, now - timedelta(seconds=1)).get_next(datetime)
    return at if at <= now else croniter(expression, now).get_prev(datetime)


def waiting(at: datetime, seconds: float) -> str:
    """What a schedule says before each run: its time (local, with the zone) and when it starts."""
    zone = at.astimezone().strftime("%Z")
    if seconds <= 0:
        return f"next run at {at:%Y-%m-%d %H:%M:%S} {zone}: now (its time passed while the previous run went on)"
    left = round(seconds)
    parts = [(left // 86400, "d"), (left % 86400 // 3600, "h"), (left % 3600 // 60, "min"), (left % 60, "s")]
    span = " ".join([f"{n} {unit}" for n, unit in parts if n][:2]) or "0 s"  # the two largest units
    return f"next run at {at:%Y-%m-%d %H:%M:%S} {zone} (in {span})"
