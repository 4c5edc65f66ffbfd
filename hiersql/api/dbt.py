"""A dbt package of the measures that SQL computes alone (``hiersql dbt``; docs/dbt.md).

The package is the SQL that ``hiersql sql`` prints, cut into dbt models over the user's tables:

| part | what | from |
| --- | --- | --- |
| ``seeds/hiersql_{nodes,edges,closure}.csv`` | the taxonomy's tables | :func:`~hiersql.inputs.closure.fill_taxonomy` |
| ``models/sources.yml`` | the source ``hiersql``: ``truth``, ``predictions`` | the vars below |
| ``models/hiersql_{truth,predictions}_input`` | the user's columns under hiersql's names | the vars |
| ``models/hiersql_{truth,...,systems}`` | the rows as ``hiersql evaluate`` reads them | ``input_rules.cleaned_sql`` |
| ``models/hiersql_problems`` | every fault of the inputs, one row each | ``input_rules.problems_sql`` |
| ``tests/hiersql_input_rules.sql`` | fails with the faults ``evaluate`` refuses | the problems of action ``error`` |
| ``models/hiersql_<family>`` | ``(system, metric, average, value)`` | ``engines.render_family`` |

Vars (``dbt_project.yml`` of the user's project): ``hiersql_schema`` (default: the target's schema),
``hiersql_truth`` and ``hiersql_predictions`` (table names, default ``truth``, ``predictions``),
``hiersql_instance_col`` (``instance_id``), ``hiersql_label_col`` (``label``), ``hiersql_system_col``
(``system``), ``hiersql_score_col`` (``score``; ``NULL`` for predictions without scores), ``hiersql_rank_col``
(``NULL``: the labels of an instance ranked by score, then by name, as ``hiersql evaluate`` ranks a table's).
The measure options (``--include-root``, ``--beta``, ...) are fixed when the package is written. A family with
Python steps (pairings, LCA graphs, HCM matching) is not SQL alone: it is left out, and ``hiersql evaluate
--engine postgres`` computes it in the warehouse.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..inputs.rules import INPUT_TABLES

if TYPE_CHECKING:
    from ..inputs.store import Store
    from ..inputs.taxonomy import Taxonomy
    from ..options import Options

ADAPTERS = ("duckdb", "postgres")  # the dbt adapters whose SQL the package is written in (sqlglot's dialects)
TAXONOMY_SEEDS = {  # seed: its columns and their types
    "nodes": {"label": "text", "depth": "integer", "is_root": "boolean", "is_leaf": "boolean",
              "is_virtual": "boolean", "position": "integer"},
    "edges": {"parent": "text", "child": "text", "weight": "float8"},
    "closure": {"ancestor": "text", "descendant": "text", "distance": "integer"},
}
_REF = "hiersql_ref__"  # a placeholder table name, replaced by {{ ref('...') }} once the SQL is written
_HEADER = "# written by hiersql dbt"  # the first line of the package's dbt_project.yml


def sql_families(options: Options) -> list[str]:
    """The families that one query computes under ``options``: no Python step, and one run for all their
    measures (the severity family runs once per k: with one k only)."""
    from ..measures import REGISTRY, plan_of
    from ..plan import Python

    return [family for family in REGISTRY if len(plan_of(family).groups(list(plan_of(family).metrics), options)) == 1
            and not any(isinstance(step, Python) and step.when(options) for step in plan_of(family).steps)]


def write_package(out: Path, taxonomy: Taxonomy, adapter: str, options: Options,
                  families: Sequence[str] | None = None) -> list[Path]:
    """Write the package into folder ``out`` (made if missing; the package's own files replaced) for dbt's
    ``adapter``, with the measures of ``families`` (default: every family of :func:`sql_families`);
    the paths written, in order."""
    from ..engines import DuckDBEngine, family_params, render_family
    from ..errors import InputError
    from ..inputs.rules import cleaned_names, cleaned_sql, problems_sql
    from ..inputs.store import Store
    from ..measures import plan_of
    from ..plan import AVERAGES

    families = list(families or sql_families(options))
    inputs = {t: f"{_REF}hiersql_{t}_input" for t in INPUT_TABLES}
    taxonomy_refs = {t: f"{_REF}hiersql_{t}" for t in TAXONOMY_SEEDS}
    cleaned = {**taxonomy_refs, "pair_counts": f"{_REF}hiersql_pair_counts",
               **{t: f"{_REF}{name}" for t, name in cleaned_names().items()}}
    files: dict[str, str] = {
        "dbt_project.yml": _project(adapter),
        "models/sources.yml": _SOURCES,
        "models/hiersql_truth_input.sql": _input_model("truth"),
        "models/hiersql_predictions_input.sql": _input_model("predictions"),
        "models/hiersql_instances_input.sql": "SELECT DISTINCT instance_id FROM {{ ref('hiersql_truth_input') }}\n",
        "models/hiersql_systems_input.sql": "SELECT DISTINCT system FROM {{ ref('hiersql_predictions_input') }}\n",
        # the (truth, prediction) counts of object detection, which label sets do not have (as in evaluate)
        "models/hiersql_pair_counts.sql": "SELECT CAST(NULL AS TEXT) AS system, CAST(NULL AS TEXT) AS truth,"
                                          " CAST(NULL AS TEXT) AS prediction, CAST(NULL AS DOUBLE PRECISION) AS n"
                                          " WHERE FALSE\n",
        "models/hiersql_problems.sql": _model(_rules(problems_sql({**inputs, **taxonomy_refs})), adapter),
        "tests/hiersql_input_rules.sql": "-- the faults hiersql evaluate refuses: one row each\n"
                                         "SELECT * FROM {{ ref('hiersql_problems') }} WHERE action = 'error'\n",
    }
    for table in INPUT_TABLES:
        files[f"models/hiersql_{table}.sql"] = _model(_rules(cleaned_sql(
            table, {**inputs, **taxonomy_refs}, rank=table in ("truth", "predictions"))), adapter, collate=True)
    store = Store()
    store.load_taxonomy(taxonomy)
    engine = DuckDBEngine(store)
    for family in families:
        plan = plan_of(family)
        reason = plan.applies(engine)
        if reason is not None:
            raise InputError(f"does not apply to this taxonomy: {reason}", "--families", value=family)
        metrics = [m for m in plan.metrics if plan.metric_applies(engine, m, options)]  # as evaluate's all
        files[f"models/hiersql_{family}.sql"] = _model(render_family(
            plan, family_params(plan, options), adapter, cleaned, metrics, AVERAGES, options=options), adapter,
            adapter)
    _clear(out)
    written = []
    for name, text in files.items():
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written + _write_seeds(out / "seeds", store)


def _clear(out: Path) -> None:
    """Make folder ``out`` empty of an earlier package's files (a model of a family not chosen now would stay);
    a folder with other files is an :class:`~hiersql.errors.InputError`, left as it is."""
    import shutil

    from ..errors import InputError

    if out.exists() and any(out.iterdir()):
        project = out / "dbt_project.yml"
        if not (project.is_file() and project.read_text(encoding="utf-8").startswith(_HEADER)):
            raise InputError("is a folder with other files than a package hiersql dbt wrote", "--out", value=str(out))
        for part in ("models", "seeds", "tests"):
            shutil.rmtree(out / part, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)


def _rules(sql: str) -> str:
    """The input rules' SQL with their options as ``evaluate``'s defaults (``unknown``, ``no_truth``: error)."""
    import sqlglot
    from sqlglot import exp

    from ..inputs.rules import OPTIONS
    from ..sqlfiles import _literal

    values = {name: _literal(choices[0]) for name, choices in OPTIONS.items()}
    return exp.replace_placeholders(sqlglot.parse_one(sql, read="duckdb"), **values).sql(dialect="duckdb")


def _model(sql: str, adapter: str, read: str = "duckdb", collate: bool = False) -> str:
    """Model text: ``sql`` (in dialect ``read``) in ``adapter``'s dialect, its placeholder
    tables as ``{{ ref(...) }}``; a placeholder inside a string literal (a message naming a table) as the
    user's table, from the vars. ``collate``: a cleaned input table's ids and labels in the adapter's
    :attr:`~hiersql.engines.dialect.EngineDialect.text_collation` (byte order, as DuckDB's)."""
    import sqlglot

    from ..engines.compile import collated
    from ..engines.dialect import dialect
    from ..inputs.rules import untyped

    tree = sqlglot.parse_one(sql, read=read)
    if collate:
        tree = collated(tree, dialect(adapter).text_collation)
    text = (tree if adapter == "duckdb" else tree.transform(untyped)).sql(dialect=adapter, pretty=True)
    shown = {"hiersql_truth_input": "{{ var('hiersql_truth', 'truth') }}",
             "hiersql_predictions_input": "{{ var('hiersql_predictions', 'predictions') }}",
             "hiersql_instances_input": "{{ var('hiersql_truth', 'truth') }} (its instances)",
             "hiersql_systems_input": "{{ var('hiersql_predictions', 'predictions') }} (its systems)"}
    text = re.sub(rf"'{_REF}(\w+)", lambda m: "'" + shown.get(m.group(1), m.group(1)), text)
    return re.sub(rf"\b{_REF}(\w+)\b", lambda m: f"{{{{ ref('{m.group(1)}') }}}}", text) + "\n"


def _write_seeds(folder: Path, store: Store) -> list[Path]:
    """The taxonomy tables of ``store`` as CSV seeds (header, rows in a fixed order)."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for table, columns in TAXONOMY_SEEDS.items():
        path = folder / f"hiersql_{table}.csv"
        names = ", ".join(columns)
        store.con.execute(f"COPY (SELECT {names} FROM {table} ORDER BY ALL) TO '{_sql_path(path)}' (HEADER)")
        written.append(path)
    return written


def _sql_path(path: Path) -> str:
    """A path of ours as a SQL string's content (quotes doubled)."""
    return str(path).replace("'", "''")


def _project(adapter: str) -> str:
    """``dbt_project.yml``: the package's name, its seeds' column types, the cleaned inputs as views."""
    types = "\n".join(
        f"    hiersql_{table}:\n      +column_types:\n" + "\n".join(
            f"        {column}: {kind}" for column, kind in columns.items())
        for table, columns in TAXONOMY_SEEDS.items())
    return f"""{_HEADER} ({adapter}); docs/dbt.md
name: hiersql
version: "1.0.0"
config-version: 2
require-dbt-version: ">=1.9.0"
model-paths: ["models"]
seed-paths: ["seeds"]
test-paths: ["tests"]
models:
  hiersql:
    +materialized: table
seeds:
  hiersql:
{types}
"""


_SOURCES = """# the user's tables: set the vars in the project's dbt_project.yml (docs/dbt.md)
version: 2
sources:
  - name: hiersql
    schema: "{{ var('hiersql_schema', target.schema) }}"
    tables:
      - name: truth
        identifier: "{{ var('hiersql_truth', 'truth') }}"
      - name: predictions
        identifier: "{{ var('hiersql_predictions', 'predictions') }}"
"""


def _input_model(table: str) -> str:
    """The model of the user's ``table`` (truth or predictions) under hiersql's column names, from the vars."""
    from ..inputs.rules import input_sql

    columns = {role: f"{{{{ var('hiersql_{role}_col', '{default}') }}}}" for role, default in (
        ("instance", "instance_id"), ("label", "label"), ("system", "system"), ("score", "score"), ("rank", "NULL"))}
    return input_sql(table, f"{{{{ source('hiersql', '{table}') }}}}", columns)
