"""``hiersql jobs prune --keep N``: delete all but the ``N`` latest runs of each unit key (docs/jobs.md).

A key is computed again only by a ``--recompute`` (its inputs hash to it: the same values each time), so its
older runs are history that a queue may shed. The runs of a key are ordered as the views order them
(:data:`~hiersql.jobs.schema.KEY_RUNS`: by the time of their rows, then by run id), so the run that ``latest``
and ``unit_results`` show of every key is the first and is always kept (``N >= 1``): no result that
``jobs results``, ``jobs diff`` or ``hiersql report`` shows is deleted. A run's result rows and per-instance
tables go together, with the lists of item ids that no table names any more, in one transaction.
"""

from __future__ import annotations

from typing import Any

from .schema import KEY_RUNS


def prune(con: Any, keep: int) -> list[str]:
    """Delete the runs of each key after its ``keep`` latest (``keep >= 1``) in one transaction on ``con`` (a
    :class:`~hiersql.jobs.queue.Connection`); returns what was removed: a line per run (dataset/system, run,
    time, rows, key), then the totals."""
    with con.transaction():
        if con.queue.postgres:  # a worker that finds a list of item ids stored must find it at its commit
            con.execute("LOCK TABLE instance_items IN SHARE ROW EXCLUSIVE MODE")
        old = con.execute(
            f"WITH runs AS ({KEY_RUNS}) SELECT r.key, r.run_id, r.created_at, r.n_rows, (SELECT min(u.dataset || '/'"
            " || u.system) FROM units u WHERE u.key = r.key) FROM runs r WHERE r.n > ? ORDER BY r.created_at, r.run_id,"
            " r.key", (keep,))
        tables = 0
        for key, run, *_ in old:
            con.execute("DELETE FROM results WHERE key = ? AND run_id = ?", (key, run))
            tables += len(con.execute("DELETE FROM instance_values WHERE key = ? AND run_id = ? RETURNING tbl",
                                      (key, run)))
        lists = {d for (d,) in con.execute("DELETE FROM instance_items WHERE digest NOT IN (SELECT items FROM"
                                           " instance_values) RETURNING digest")}
    if not old:
        return [f"nothing to prune: no key has more than {keep} run(s)"]
    return [*(f"removed {unit}: run {run} of {created:%Y-%m-%d %H:%M:%S} UTC, {rows} row(s), key {key[:12]}"
              for key, run, created, rows, unit in old),
            f"pruned {len(old)} run(s) of {len({r[0] for r in old})} key(s): {sum(r[3] for r in old)} result row(s),"
            f" {tables} per-instance table(s), {len(lists)} list(s) of item ids; kept the {keep} latest run(s) of"
            " each key"]
