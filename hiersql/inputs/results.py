"""Stored results: the ``results`` table of a :class:`~hiersql.inputs.store.Store` (``hiersql evaluate --db``,
:meth:`hiersql.Evaluator.save`)."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..plan import Row
    from .store import Store


def save_rows(store: Store, rows: list[Row], dataset: str | None = None, run_id: str | None = None) -> str:
    """Insert ``rows`` into the store's ``results`` in one transaction (all or nothing); returns the run id."""
    run_id = run_id or uuid.uuid4().hex[:12]
    with store.transaction():
        store.con.executemany(
            "INSERT INTO results (run_id, dataset, system, metric, average, value) VALUES (?, ?, ?, ?, ?, ?)",
            [(run_id, dataset, r.system, r.metric, r.average or None, r.value) for r in rows],
        )
    return run_id



def _digest(fields: str, order: str) -> str:
    """A SHA-256 of rows (an aggregate): each row's ``fields`` joined by a unit separator (NULL as a NUL
    character), the rows by a record separator, in the ``order`` given."""
    parts = ", ".join(f"coalesce(CAST({f.strip()} AS VARCHAR), chr(0))" for f in fields.split(","))
    return f"sha256(coalesce(string_agg(concat_ws(chr(31), {parts}), chr(30) ORDER BY {order}), ''))"


def system_keys(store: Store, identity: object) -> dict[str, str]:
    """Per system of the store, a SHA-256 of what its rows are computed from, as the store holds it (whatever
    the sources were): the taxonomy's edges, the truth's instances and labels, the system's labels (ranks and
    scores too), and ``identity`` (JSON-able: the hiersql version, the dataset, the measures, the options). The
    unit hash of ``hiersql evaluate --out``'s rows: a run on unchanged inputs has the same keys."""
    import hashlib
    import json

    con = store.con
    shared = con.execute(
        f"SELECT (SELECT {_digest('parent, child, weight', 'parent, child, weight')} FROM edges),"
        f" (SELECT {_digest('instance_id', 'instance_id')} FROM instances),"
        f" (SELECT {_digest('instance_id, label, rank', 'instance_id, rank, label')} FROM truth)").fetchall()[0]
    systems = con.execute(
        "SELECT s.system, p.digest FROM systems s LEFT JOIN (SELECT system,"
        f" {_digest('instance_id, label, rank, score', 'instance_id, rank, label')} AS digest FROM predictions"
        " GROUP BY system) p ON p.system = s.system").fetchall()
    out = {}
    for system, digest in systems:
        text = json.dumps([identity, *shared, system, digest], sort_keys=True, default=str)
        out[system] = hashlib.sha256(text.encode()).hexdigest()
    return out
