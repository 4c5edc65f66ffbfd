"""The store's rules for label rows that an engine checks itself (Spark, PostgreSQL): the errors in the store's
order, how messages name each system of a table, and the warnings of what was cleaned.

An engine that reads label tables in place (:mod:`hiersql.engines.spark.sources`,
:mod:`hiersql.engines.postgres.sources`) flags each row with the checks of :data:`ERRORS` and sums the flags per
source and system into *groups*: mappings with ``kept`` (rows kept), ``dups`` (duplicate rows collapsed),
``_first`` (of the group without a system, whose NULL and empty systems are one group, its first row by
:data:`~hiersql.inputs.tables.MISSING_SYSTEM_ORDER`, with ``system``), ``_spellings`` (the system as written, sorted),
``_max_rank`` (the most labels of an instance: above 1, ranks mean something), and per flag of :data:`ERRORS` its
count and ``<flag>_first``, the first flagged row. A first row is the least by
:data:`~hiersql.inputs.tables.FAULT_ORDER` (a table read in place has no row order), with ``instance_id``,
``label``, ``score_text`` and ``rank_text``. From them the functions here raise and warn exactly as the store
(:mod:`hiersql.inputs.staging`, :mod:`hiersql.inputs.label_tables`) does.

An opened source is any object with ``where`` (its name in messages), ``columns`` (the user's column of each
role), ``system`` (its system, ``None`` when a system column names them) and ``given`` (a system name given to a
table with a system column).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import InputError
from . import label_tables, rules
from .label_tables import TableWhere, locate
from .staging import warn_data

Key = tuple[int, "str | None"]  # a source's number and a system of it

# The checks in the store's order: (flag column, message, role of the column named).
ERRORS = (
    ("_missing", rules.MISSING, None),
    ("_bad_score", rules.SCORE_NOT_A_NUMBER, "score"),
    ("_bad_rank", rules.RANK_NOT_A_NUMBER, "rank"),
    ("_virtual", rules.VIRTUAL_ROOT, "label"),
    ("_unknown", rules.UNKNOWN_LABEL, "label"),
    ("_no_truth", rules.NO_TRUTH, "instance"),
)


def raise_first_error(stats: Mapping[Key, Any], order: Sequence[Key], wheres: Mapping[Key, TableWhere],
                      unknown: str, no_truth: str) -> None:
    """The first fault of :data:`ERRORS`, in the store's order of the checks, then of the systems (``order``),
    among the groups ``stats`` as an :class:`~hiersql.errors.InputError` naming the system (``wheres``), the
    instance (the label when it has no instance id) and the value; the labels not in the taxonomy and the
    instances without truth are no fault when ``unknown`` or ``no_truth`` is ``ignore``."""
    for flag, message, role in ERRORS:
        if flag == "_unknown" and unknown == "ignore" or flag == "_no_truth" and no_truth == "ignore":
            continue
        bad = [(stats[key][f"{flag}_first"], key) for key in order if stats[key] is not None and stats[key][flag]]
        if not bad:
            continue
        row, key = bad[0]
        if role is None:  # the column that is missing
            role = "instance" if row["instance_id"] in (None, "") or row["instance_id"].lower() == "nan" else "label"
        instance_id = None if role == "instance" and flag == "_missing" else row["instance_id"]
        value = {"_missing": f"instance_id={row['instance_id']!r}, label={row['label']!r}",
                 "_bad_score": row["score_text"], "_bad_rank": row["rank_text"],
                 "_no_truth": row["instance_id"]}.get(flag, row["label"])
        raise InputError(message, *locate(wheres[key], None, role, instance_id, row["label"]), value)


def system_wheres(opened: Sequence[Any], by_source: Mapping[int, Mapping[str | None, Any]], predictions: bool
                  ) -> dict[Key, TableWhere]:
    """How messages name each system (``(source number, system)``) of ``opened``, whose groups (per system)
    are ``by_source``; a predictions table's system column is checked as
    :func:`~hiersql.inputs.label_tables.expand` checks it: a NULL or empty value (the first row of the group
    ``None``, which holds both), two spellings of one system, no row, a system name given that is not its only value."""
    wheres: dict[Key, TableWhere] = {}
    for k, source in enumerate(opened):
        found = by_source.get(k, {})
        if source.system is not None or not predictions:
            wheres[(k, source.system)] = TableWhere(source.where, source.columns)
            continue
        if None in found:
            first = found[None]["_first"]
            raise InputError(rules.MISSING_SYSTEM,
                             *locate(TableWhere(source.where, source.columns), None, "system", first["instance_id"],
                                     first["label"]), value=first["system"])
        label_tables.check_spellings(((v, g["_spellings"]) for v, g in sorted(found.items())),
                                     source.columns["system"], source.where)
        if not found:
            raise InputError(rules.NO_SYSTEM, source.where)
        if source.given is not None and sorted(found) != [source.given]:
            raise InputError(f"the table has a system column ({source.columns['system']!r}, {len(found)}"
                             " system(s)) whose values name the systems: give it no system name", source.where,
                             value=source.given)
        wheres.update({(k, v): TableWhere(source.where, source.columns, v) for v in sorted(found)})
    return wheres


def warn_cleaned(stats: Mapping[Key, Any], order: Sequence[Key], wheres: Mapping[Key, TableWhere],
                 opened: Sequence[Any], predictions: bool, unknown: str, no_truth: str,
                 unread_systems: Callable[[Any], None], no_truth_instances: Callable[[Key], int]) -> None:
    """The store's warnings of what was cleaned, in its order, each kind for every system in turn: for a
    predictions table without a system column whose rows repeat, ``unread_systems(source)`` (its text columns
    that may name systems); labels not in the taxonomy dropped; duplicates collapsed; predicted instances
    without truth dropped (``no_truth_instances(key)``: how many instances); a system left with no predicted
    label."""
    groups = [(key, stats[key]) for key in order if stats[key] is not None]
    if predictions:
        for key, group in groups:
            if group["dups"] and opened[key[0]].system is not None:
                unread_systems(opened[key[0]])
    for key, group in groups:
        if unknown == "ignore" and group["_unknown"]:
            warn_data(f"{wheres[key]}: ignored {group['_unknown']} label(s) not in the taxonomy (first:"
                      f" {group['_unknown_first']['label']!r})")
    for key, group in groups:
        if group["dups"]:
            warn_data(f"{wheres[key]}: {group['dups']} duplicate (instance_id, label) row(s) collapsed")
    for key, group in groups:
        if no_truth == "ignore" and group["_no_truth"]:  # counted in instances, as the store does
            warn_data(f"{wheres[key]}: ignored {no_truth_instances(key)} predicted instance(s) with no truth"
                      f" (first: {group['_no_truth_first']['instance_id']!r})")
    for key, group in groups:
        if predictions and not group["kept"]:
            warn_data(f"{wheres[key]}: no predicted label; evaluated as a system that predicted nothing for every"
                      " instance")


def ranked_by_name(opened: Sequence[Any], by_source: Mapping[int, Mapping[str | None, Any]]) -> list[str]:
    """How messages name the sources of ``opened`` whose labels were ranked by name (no rank or score column;
    a table read in place has no row order) where the ranks mean something: an instance has two labels or more
    (``_max_rank`` of their groups in ``by_source``)."""
    return [source.where for k, source in enumerate(opened) if not {"rank", "score"} & set(source.columns)
            and any((group["_max_rank"] or 0) > 1 for group in by_source.get(k, {}).values())]
