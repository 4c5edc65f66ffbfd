"""What changed: each value of a job's latest results against the latest one before a point in time, with the
paired test of ``hiersql compare`` (``hiersql jobs diff``; docs/jobs.md).

The value of a unit's inputs is the rows of its key's latest run (the view ``unit_results``,
:mod:`hiersql.jobs.schema`). *Current*: those of the units of the job's latest submission (the view ``latest``,
what ``jobs results`` shows). *Previous*, per unit (dataset, system): those of the latest earlier submission of
the job whose unit of that dataset and system has results; earlier means, by default, before the current
submission; with ``--since RUN`` submitted by the end of that run (the last unit it finished); with
``--since DATE`` submitted before that time (UTC). A unit whose key did not change has the same rows: no change.

The change ``Δ = current - previous`` of a measure with a paired test in ``compare``
(:func:`hiersql.analyses.compare.instance_statistic`: ``θ = Σ_i num_i / Σ_i den_i``, or a mean) is tested on the two
runs' stored per-instance values (:mod:`hiersql.jobs.instances`) as ``compare`` tests two systems on the same
items (:func:`hiersql.analyses.compare.paired_tests`: the sign test, Wilcoxon's signed-rank test, the paired bootstrap
and the paired permutation test; Kosmopoulos et al. 2015 §4.2, Efron & Tibshirani 1993 §16.4): the two runs are
the two systems, paired by item (``H0``: the runs' values come from the same distribution on each item). It is
*significant* when the p-value of the chosen test is below ``alpha``. No test (``n/a``, with the reason) when the
measure has none in ``compare``, when a run stored no per-instance values (one computed before they were
stored), when the runs' items differ (another truth: nothing to pair), or when a per-instance value is undefined.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..errors import InputError
from .reading import LATEST_COLUMNS

DIFF_COLUMNS = ("job", "dataset", "system", "metric", "average", "previous", "current", "change", "p_value",
                "significant", "ci_low", "ci_high", "previous_run", "current_run", "note")
NO_TEST = "no paired test (not a mean or ratio of per-instance values: compare has none)"
_COLUMN = {name: k for k, name in enumerate(LATEST_COLUMNS)}


@dataclass(frozen=True)
class Since:
    """The point before which the previous values are taken: ``run`` (its id and the time its last unit
    finished, included), ``date`` (excluded), or neither (before each job's current submission)."""

    run: str | None = None
    until: datetime | None = None

    def admits(self, job_id: str, submitted: datetime, current: str) -> bool:
        """Whether a submission (``job_id`` submitted at ``submitted``) of a job whose current submission is
        ``current`` is earlier than this point."""
        if self.until is None:
            return job_id < current  # job ids sort by submission time
        return submitted <= self.until if self.run is not None else submitted < self.until

    def describe(self) -> str:
        if self.until is None:
            return "the latest results before the current submission"
        if self.run is not None:
            return (f"the latest results of the submissions up to run {self.run} (ended"
                    f" {self.until:%Y-%m-%d %H:%M:%S} UTC)")
        return f"the latest results of the submissions before {self.until:%Y-%m-%d %H:%M:%S} UTC"


@dataclass(frozen=True)
class Tests:
    """The settings of the paired tests (``hiersql compare``'s flags of the same names)."""

    test: str = "sign"
    alpha: float = 0.05
    n_resamples: int = 1000
    seed: int | None = 0
    confidence: float = 0.95


def since(con: Any, value: str | None) -> Since:
    """``--since``: a run id of the queue (``jobs results`` shows them), else a date or time in ISO 8601
    (``2026-11-23``, ``2026-11-23T02:00``; UTC unless it names its offset); anything else is an
    :class:`~hiersql.errors.InputError` naming the flag and the value."""
    if value is None:
        return Since()
    found = con.execute("SELECT max(finished_at) FROM units WHERE run_id = ?", (value,))[0][0]
    if found is not None:
        return Since(value, found)
    try:
        when = datetime.fromisoformat(value.strip())
    except ValueError:
        raise InputError("neither a run of the queue nor a date (YYYY-MM-DD[THH:MM[:SS]], UTC)", "--since",
                         value=value) from None
    if when.tzinfo is not None:
        when = when.astimezone(UTC).replace(tzinfo=None)
    return Since(None, when)


def diff(con: Any, jobs: list[str] | None, point: Since, tests: Tests, every: bool = False
         ) -> list[tuple]:
    """The rows (:data:`DIFF_COLUMNS`) of the latest results of ``jobs`` (names or submission ids; every job
    when ``None``) against the previous values before ``point`` (module docstring), ordered by job, dataset,
    system, metric, average; only the values that changed (one side missing counts) unless ``every``. ``con``:
    a :class:`~hiersql.jobs.queue.Connection`."""
    current = con.latest(jobs)
    previous = _previous(con, current, point)
    rows: list[dict[str, Any]] = []
    for unit, now in sorted(_by_unit(current).items()):
        before = previous.get(unit, {})
        for measure in sorted(set(now) | set(before), key=lambda m: (m[0], m[1] or "")):
            rows.append(_compare(unit, before.get(measure), now.get(measure), measure))
    if not every:
        rows = [r for r in rows if changed(r["previous"], r["current"])]
    _test(con, [r for r in rows if r["test"]], tests)
    return [tuple(r[c] for c in DIFF_COLUMNS) for r in rows]


def _by_unit(rows: Iterable[tuple]) -> dict[tuple[str, str, str], dict[tuple[str, str | None], tuple]]:
    """``{(job name, dataset, system): {(metric, average): row}}`` of rows of :data:`LATEST_COLUMNS` (a unit
    without results: no measure)."""
    out: dict[tuple[str, str, str], dict[tuple[str, str | None], tuple]] = {}
    for r in rows:
        measures = out.setdefault((r[_COLUMN["name"]], r[_COLUMN["dataset"]], r[_COLUMN["system"]]), {})
        if r[_COLUMN["metric"]] is not None:
            measures[(r[_COLUMN["metric"]], r[_COLUMN["average"]])] = r
    return out


def _previous(con: Any, current: list[tuple], point: Since) -> dict[tuple[str, str, str], dict]:
    """Per unit of ``current``, the rows of the latest earlier submission (``point``) of its job whose unit of
    that dataset and system has results."""
    names = sorted({r[_COLUMN["name"]] for r in current})
    if not names:
        return {}
    now = {r[_COLUMN["name"]]: r[_COLUMN["submission"]] for r in current}
    earlier = [job_id for job_id, name, submitted in con.execute(
        f"SELECT job_id, name, submitted_at FROM jobs WHERE name IN ({', '.join('?' * len(names))})", names)
        if point.admits(job_id, submitted, now[name])]
    latest: dict[tuple[str, str, str], tuple[str, dict]] = {}
    for submission, measures in _by_submission(con.unit_results(earlier)).items():
        for unit, rows in measures.items():
            if rows and (unit not in latest or submission > latest[unit][0]):
                latest[unit] = (submission, rows)
    return {unit: rows for unit, (_, rows) in latest.items()}


def _by_submission(rows: list[tuple]) -> dict[str, dict]:
    out: dict[str, list[tuple]] = {}
    for r in rows:
        out.setdefault(r[_COLUMN["submission"]], []).append(r)
    return {submission: _by_unit(part) for submission, part in out.items()}


def _compare(unit: tuple[str, str, str], before: tuple | None, now: tuple | None,
             measure: tuple[str, str | None]) -> dict[str, Any]:
    """One row of the diff, its test to run (``test``: both values stored under other keys) or its note."""
    value, run, key = _COLUMN["value"], _COLUMN["run_id"], _COLUMN["key"]
    old = None if before is None else before[value]
    new = None if now is None else now[value]
    row = {"job": unit[0], "dataset": unit[1], "system": unit[2], "metric": measure[0], "average": measure[1] or "",
           "previous": old, "current": new, "change": None, "p_value": None, "significant": "", "ci_low": None,
           "ci_high": None, "previous_run": before[run] if before else None, "current_run": now[run] if now else None,
           "note": "", "test": False}
    if before is None or now is None:
        row["note"] = "new: no earlier value" if before is None else "no current value (the unit has no results)"
        return row
    row["change"] = new - old if old is not None and new is not None else None
    if before[key] == now[key]:
        row["note"] = "same inputs (key)"
    else:
        row["test"] = True
        row["keys"] = (before[key], now[key])
    return row


def changed(previous: float | None, current: float | None) -> bool:
    """Whether a value changed: one side missing (``None``: no row), or other values (a NaN, not defined,
    equals a NaN)."""
    if previous is None or current is None:
        return previous is not current
    return not (previous == current or (math.isnan(previous) and math.isnan(current)))


def _test(con: Any, rows: list[dict[str, Any]], tests: Tests) -> None:
    """Fill the p-value, interval and significance of ``rows`` (both values stored under other keys), or their
    note ``n/a``: the tests of :func:`hiersql.analyses.compare.paired_tests` on the runs' per-instance tables."""
    from ..analyses.compare import instance_matrices, instance_statistic, paired_tests, table_key
    from ..options import make_options

    if not rows:
        return
    runs = {(k, r) for row in rows for k, r in zip(row["keys"], (row["previous_run"], row["current_run"]),
                                                     strict=True)}
    options = {k: make_options(**json.loads(w)["options"]) for k, w in _per_key(
        con, "SELECT key, min(work) FROM units WHERE key IN ({}) GROUP BY key", sorted({k for k, _ in runs}))}
    stored = _stored(con, runs)
    draws: dict[int, tuple] = {}
    for row in rows:
        (old_key, new_key), measure = row["keys"], (row["metric"], row["average"])
        old_run, new_run = row["previous_run"], row["current_run"]
        specs = [instance_statistic(*measure, options[k]) for k in (old_key, new_key)]
        why = None
        if specs[0] is None or specs[1] is None:
            why = NO_TEST
        elif specs[0] != specs[1]:
            why = "the runs' measures differ (other options): nothing to pair"
        else:
            name = table_key(specs[1])
            tables = [stored.get((old_key, old_run, name)), stored.get((new_key, new_run, name))]
            missing = [run for run, t in zip((old_run, new_run), tables, strict=True) if t is None]
            if missing:
                why = f"run {missing[0]} stored no per-instance values of this measure (computed before they were"\
                      " stored)"
            elif tables[0][0] != tables[1][0]:
                why = "the runs' items differ (another truth): nothing to pair"
            else:
                import pandas as pd

                frame = pd.concat([tables[1][1].assign(system="current"), tables[0][1].assign(system="previous")],
                                  ignore_index=True)
                found = instance_matrices(None, specs[1], options[new_key], ["current", "previous"], {name: frame})
                if found is None:
                    why = "a per-instance value is not defined in one of the runs (as compare: no test)"
                else:
                    _, pairs = paired_tests(*found, specs[1].zero, tests.n_resamples, tests.seed, tests.confidence,
                                            draws)
                    p = float(pairs[f"{tests.test}_p"].iloc[0])
                    row.update(p_value=p, significant="yes" if p < tests.alpha else "no",
                               ci_low=float(pairs["ci_low"].iloc[0]), ci_high=float(pairs["ci_high"].iloc[0]))
        if why is not None:
            row.update(significant="n/a", note=why)


def _per_key(con: Any, sql: str, keys: list[str]) -> list[tuple]:
    """The rows of ``sql`` (a ``{}`` for the placeholders of ``keys``), 500 keys at a time."""
    out: list[tuple] = []
    for start in range(0, len(keys), 500):
        part = keys[start:start + 500]
        out += con.execute(sql.format(", ".join("?" * len(part))), part)
    return out


def _stored(con: Any, runs: set[tuple[str, str]]) -> dict[tuple[str, str, str], tuple[str, Any]]:
    """``{(key, run, table name): (digest of its items, its rows)}`` of the per-instance tables of the runs
    ``runs`` (``(key, run_id)``); the rows a DataFrame of :func:`~hiersql.jobs.instances.decode` (its
    ``system`` named by the caller)."""
    from .instances import decode

    if "instance_values" not in con.queue.present:  # a queue made before they were stored (read-only)
        return {}
    found = [r for r in _per_key(con, "SELECT key, run_id, tbl, items, columns, data FROM instance_values"
                                      " WHERE key IN ({})", sorted({k for k, _ in runs})) if (r[0], r[1]) in runs]
    # a list stored twice (by batches committed together) has the same bytes: any of its rows
    lists = dict(_per_key(con, "SELECT digest, ids FROM instance_items WHERE digest IN ({})",
                          sorted({r[3] for r in found})))
    return {(key, run, name): (digest, decode("", bytes(lists[digest]), columns, bytes(data)))
            for key, run, name, digest, columns, data in found if digest in lists}
