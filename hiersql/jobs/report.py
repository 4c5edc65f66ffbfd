"""The HTML report of jobs' latest results (``hiersql report --db QUEUE [--job NAME]``; docs/report.md).

Its rows are :meth:`hiersql.jobs.reading.Reading.latest`'s, the rows ``hiersql jobs results`` shows: per job
name, the units of its latest submission, each with the rows of its key's latest run. Per job and dataset: a
ranking table of a few measures (systems as rows), the other measures in a second table behind a toggle,
and a table of the units (status, run, time and input hash of each system's rows). No charts: tables only,
so that the page of a 46-unit job is small and quick to write.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

MAIN_COLUMNS = 10  # measures in the ranking table by default; the others are behind a toggle
KEY_CHARS = 12  # characters of a unit's key shown (the whole key in its tooltip)


def chosen_metrics(names: list[str], where: str, singly: bool = False) -> list[str]:
    """The metric names of ``names`` (names, aliases or groups, as ``--metrics`` takes them), in their order;
    ``singly``: only those named one by one (a family, a group or ``all`` left out). An unknown name is an
    :class:`~hiersql.errors.InputError` naming ``where``."""
    from ..measures import GROUPS, resolve

    out: list[str] = []
    for name in names:
        if singly and name.strip() in (*GROUPS, "all"):
            continue
        out += [m for metrics in resolve([name], where).values() for m in metrics if m not in out]
    return out


def job_sections(rows: list[tuple], submissions: list[tuple], columns: list[str] | None = None,
                 datasets: list[str] | None = None, history: tuple[list[tuple], dict[str, list[str]]] = ([], {})
                 ) -> list[tuple[str, str, str]]:
    """The report's sections ``(id, heading, html)``, one per job and dataset (of ``datasets`` when given):
    ``rows`` are :meth:`~hiersql.jobs.reading.Reading.latest`'s, ``submissions``
    :meth:`~hiersql.jobs.reading.Reading.submissions`' of their jobs. ``columns``: the metrics of the
    ranking table (:func:`chosen_metrics`); by default those the job file names one by one for the dataset,
    at most :data:`MAIN_COLUMNS` measures. ``history``: rows of
    :meth:`~hiersql.jobs.reading.Reading.unit_results` and, per submission reported, the submissions of its
    trend (:meth:`~hiersql.jobs.reading.Reading.earlier_submissions`)."""
    import pandas as pd

    from .reading import LATEST_COLUMNS

    frame = pd.DataFrame(rows, columns=list(LATEST_COLUMNS))
    past = pd.DataFrame(history[0], columns=list(LATEST_COLUMNS))
    if datasets:
        frame = frame[frame["dataset"].isin(datasets)]
    several = frame["name"].nunique() > 1
    sections = []
    for job_id, name, spec, submitted, metrics in submissions:
        for dataset, part in frame[frame["submission"] == job_id].groupby("dataset", sort=True):
            wanted = columns if columns is not None else chosen_metrics(metrics.get(dataset, []), spec, singly=True)
            heading = f"{name} · {dataset}" if several else str(dataset)
            note = (f"Job <b>{escape(name)}</b>, submission {escape(job_id)} of <code>{escape(spec)}</code> "
                    f"(submitted {submitted:%Y-%m-%d %H:%M:%S} UTC): the latest results of each of its units in "
                    f"<b>{escape(str(dataset))}</b>, as <code>hiersql jobs results</code> shows them.")
            trend = past[past["submission"].isin(history[1].get(job_id, [])) & (past["dataset"] == dataset)]
            html = f"<p class='note'>{note}</p>" + dataset_tables(part, wanted, columns is not None, trend)
            sections.append((f"job-{len(sections) + 1}", heading, html))
    return sections


def dataset_tables(part: pd.DataFrame, wanted: list[str], given: bool, trend: pd.DataFrame | None = None) -> str:
    """The tables of one job's dataset (``part``: its rows of :data:`~hiersql.jobs.reading.LATEST_COLUMNS`):
    the ranking of the measures of ``wanted`` (``given``: as the user chose them, else at most
    :data:`MAIN_COLUMNS`; none of them stored: the first :data:`MAIN_COLUMNS` measures), the other measures
    behind a toggle (in tables of :data:`MAIN_COLUMNS` measures, the systems in the first table's order),
    the trend of the ranking's measures over the submissions of ``trend`` (rows of the same columns;
    :func:`~hiersql.jobs.trend.trend_table`), then the units."""
    from ..analyses.compare import ordered_systems
    from ..analyses.report import ranking_table, results_ranking, stored_note

    stored = part[part["metric"].notna()]
    if stored.empty:
        return "<p class='note'>No unit of this dataset has results yet.</p>" + units_table(part, [])
    ranking = results_ranking(stored[["system", "metric", "average", "value"]].reset_index(drop=True))
    order = {m: k for k, m in enumerate(wanted)}
    by_choice = ranking.assign(position=ranking["metric"].map(order)).sort_values("position", kind="stable")
    measures = list(dict.fromkeys(by_choice.loc[by_choice["position"].notna(), "measure"]))
    if not given:
        measures = measures[:MAIN_COLUMNS]
    if not measures:
        measures = list(dict.fromkeys(ranking["measure"]))[:MAIN_COLUMNS]
    main = by_choice[by_choice["measure"].isin(measures)].drop(columns="position")
    systems = ordered_systems(main)
    note = stored_note(len(systems) > 1)
    html = f"<p class='note'>{note}</p><div class='scroll'>{ranking_table(main, systems)}</div>"
    rest = [m for m in dict.fromkeys(ranking["measure"]) if m not in measures]
    if rest:  # in tables as wide as the first, the systems in its order
        tables = "".join(f"<div class='scroll'>{ranking_table(ranking[ranking['measure'].isin(chunk)], systems)}</div>"
                         for chunk in (rest[k:k + MAIN_COLUMNS] for k in range(0, len(rest), MAIN_COLUMNS)))
        html += f"<details><summary>{len(rest)} more measure(s)</summary>{tables}</details>"
    if trend is not None and not trend.empty:
        from .trend import trend_table

        html += trend_table(trend, main, systems)
    return html + units_table(part, systems)


def units_table(part: pd.DataFrame, systems: list[str]) -> str:
    """One row per unit, in the order of ``systems`` (then the others by name): its status in the
    submission, the run and time of its rows and its key (the SHA-256 of its inputs: its rows are those
    inputs' values)."""
    import pandas as pd

    units = part.groupby("system", sort=True).agg(status=("status", "first"), key=("key", "first"),
                                                  run_id=("run_id", "max"), created_at=("created_at", "max"))
    order = [s for s in systems if s in units.index] + [s for s in units.index if s not in systems]
    lines = ["<table class='units'><thead><tr><th class='system'>system</th><th class='system'>status</th>"
             "<th class='system'>run</th><th class='system'>computed (UTC)</th><th class='system'>input hash</th>"
             "</tr></thead><tbody>"]
    for system in order:
        unit = units.loc[system]
        stored = pd.notna(unit["run_id"])
        run = escape(str(unit["run_id"])) if stored else "no results"
        when = f"{unit['created_at']:%Y-%m-%d %H:%M:%S}" if stored else ""
        lines.append(f"<tr><td class='system'>{escape(str(system))}</td><td class='system'>"
                     f"{escape(str(unit['status']))}</td><td class='system'>{run}</td><td class='system'>{when}</td>"
                     f"<td class='system'><code title='{escape(str(unit['key']))}'>"
                     f"{escape(str(unit['key'])[:KEY_CHARS])}</code></td></tr>")
    lines.append("</tbody></table>")
    return "<h3>Units</h3><div class='scroll'>" + "\n".join(lines) + "</div>"


def submissions_table(submissions: list[tuple]) -> str:
    """The submissions reported: job name, submission id, job file and time."""
    rows = "".join(f"<tr><td class='system'>{escape(name)}</td><td class='system'>{escape(job_id)}</td>"
                   f"<td class='system'><code>{escape(spec)}</code></td><td>{submitted:%Y-%m-%d %H:%M:%S}</td></tr>"
                   for job_id, name, spec, submitted, _ in submissions)
    return ("<table class='inputs'><thead><tr><th class='system'>job</th><th class='system'>submission</th>"
            f"<th class='system'>job file</th><th>submitted (UTC)</th></tr></thead><tbody>{rows}</tbody></table>")
