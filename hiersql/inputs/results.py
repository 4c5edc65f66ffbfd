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
