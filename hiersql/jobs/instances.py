"""The per-instance values of a unit's run, stored with its results so that ``hiersql jobs diff`` tests a
change of a system between two runs as ``hiersql compare`` tests two systems (:mod:`hiersql.jobs.diff`).

A measure has a paired test in ``compare`` when its value is a mean or a ratio of sums of per-instance values
(:func:`hiersql.analyses.compare.instance_statistic`: ``θ = Σ_i num_i / Σ_i den_i``, or the mean of ``num_i``), read
from
its family's per-instance table (:func:`hiersql.analyses.compare.instance_table`). A worker computes those tables for
the measures of its batch (the same function, on the batch's store, reading the stages of the evaluation:
:meth:`hiersql.engines.Engine.reuse_stages`) and keeps, per unit, the columns that the statistics read: the
table's name (:func:`hiersql.analyses.compare.table_key`), its item ids (a JSON list, stored once per distinct list
under its SHA-256 in ``instance_items``, but for batches committed together) and the columns' float64 values,
column after column, zlib-compressed (``instance_values``). They are written with the unit's results, in the
transaction of its claim (:meth:`hiersql.jobs.queue.Connection.finish`), and deleted with them (``hiersql jobs
prune``). Decoded (:func:`decode`), they are the rows of the unit's system in the table that ``compare``
computes on a store holding that system: the values of a system do not depend on the others in the store.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import pandas as pd

    from ..engines import Engine
    from ..options import Options
    from ..plan import Row

FLOAT = "<f8"  # the stored values: little-endian float64, whatever the machine (a NumPy dtype)


class InstanceTable(NamedTuple):
    """One system's rows of a per-instance table, encoded for the queue."""

    name: str  # hiersql.analyses.compare.table_key of the statistics that read it
    digest: str  # SHA-256 of the JSON list of item ids
    ids: bytes  # that list, zlib-compressed
    columns: str  # JSON list of the columns stored
    data: bytes  # their values (FLOAT), column after column, zlib-compressed


class Computed(NamedTuple):
    """What evaluating a unit gives: its result rows and its per-instance tables."""

    rows: list[Row]
    tables: list[InstanceTable]


def instance_tables(engine: Engine, rows: list[Row], options: Options) -> dict[str, list[InstanceTable]]:
    """``{system: its per-instance tables}`` for the measures of ``rows`` (those of one evaluation by
    ``engine`` with ``options``) that have a paired test (:func:`~hiersql.analyses.compare.instance_statistic`): the
    tables of :func:`~hiersql.analyses.compare.instance_table` computed by ``engine``, each with the columns its
    statistics read."""
    from ..analyses.compare import instance_statistic, instance_table, table_key
    from ..measures import plan_of

    wanted: dict[str, tuple[Any, list[str]]] = {}  # table name: (a statistic that reads it, the columns)
    for metric, average in dict.fromkeys((r.metric, r.average) for r in rows):
        spec = instance_statistic(metric, average, options)
        if spec is not None:
            _, columns = wanted.setdefault(table_key(spec), (spec, []))
            columns += [c for c in spec.columns if c not in columns]
    evaluated = {r.metric for r in rows}
    tables: dict[str, pd.DataFrame] = {}
    lists: dict[str, bytes] = {}  # the lists of item ids compressed so far (the systems of a batch share them)
    out: dict[str, list[InstanceTable]] = {}
    for name, (spec, columns) in wanted.items():
        # the runs of the evaluation's measures of the family: an engine that reuses stages made them already
        family = plan_of(spec.family) if spec.family != "flat_labels" else None
        metrics = [m for m in family.metrics if m in evaluated] if family is not None else None
        frame = instance_table(engine, spec, options, tables, metrics)
        for system, part in frame.groupby("system", sort=True):
            out.setdefault(str(system), []).append(encode(name, part, columns, lists))
    return out


def encode(name: str, part: pd.DataFrame, columns: list[str], lists: dict[str, bytes] | None = None
           ) -> InstanceTable:
    """One system's rows ``part`` of the per-instance table ``name``: its ``instance_id`` and ``columns``.
    ``lists``: ``{digest: compressed list}`` of the item ids compressed before, kept up to date."""
    import numpy as np

    ids = json.dumps(part["instance_id"].astype(str).tolist(), ensure_ascii=False).encode()
    digest = hashlib.sha256(ids).hexdigest()
    lists = {} if lists is None else lists
    if digest not in lists:
        lists[digest] = zlib.compress(ids)
    values = np.concatenate([part[c].astype(float).to_numpy(dtype=FLOAT) for c in columns])
    return InstanceTable(name, digest, lists[digest], json.dumps(columns), zlib.compress(values.tobytes()))


def decode(system: str, ids: bytes, columns: str, data: bytes) -> pd.DataFrame:
    """The rows of a stored per-instance table (``ids`` and ``data`` as :func:`encode` wrote them) as a
    DataFrame ``system, instance_id, <columns>``, ``system`` the name given."""
    import numpy as np
    import pandas as pd

    items = json.loads(zlib.decompress(ids))
    names = json.loads(columns)
    values = np.frombuffer(zlib.decompress(data), dtype=FLOAT).reshape(len(names), len(items))
    return pd.DataFrame({"system": system, "instance_id": items, **dict(zip(names, values, strict=True))})


def store_tables(con: Any, run_id: str, done: list[tuple[Any, Computed]]) -> None:
    """Write the per-instance tables of the units ``done`` (``(unit, computed)``; a
    :class:`~hiersql.jobs.queue.Claimed` unit) of run ``run_id``, in the transaction at hand of ``con`` (a
    :class:`~hiersql.jobs.queue.Connection`): a list of item ids once (``instance_items``: not when stored
    already; two batches committed together may both store it, the same bytes), a row per table in
    ``instance_values``."""
    items = {t.digest: t.ids for _, computed in done for t in computed.tables}
    con.executemany("INSERT INTO instance_items (digest, ids) SELECT ?, ? WHERE NOT EXISTS (SELECT 1 FROM"
                    " instance_items WHERE digest = ?)", [(d, ids, d) for d, ids in sorted(items.items())])
    con.insert_many("instance_values", ("run_id", "key", "unit_id", "tbl", "items", "columns", "data"),
                    [(run_id, unit.key, unit.unit_id, t.name, t.digest, t.columns, t.data)
                     for unit, computed in done for t in computed.tables])
