"""The SQL files in any dialect: a query (:func:`render`) or a family's plan (:func:`render_family`), with the
family's checks (:func:`checked_sql`), and the input rules a printed script runs first (:func:`checks_script`).

A query is composed by :func:`hiersql.sqlfiles.render` (the queries it reads as common table expressions, its
``$parameters`` as literals, tables renamed) in DuckDB's dialect, the one the files are written in, then
compiled by sqlglot in passes (:func:`_tree`): parse, constant folding (``simplify``), the branches a parameter
switched off and the common table expressions no longer read removed (:func:`_dead_branches_pruned`), the
dialect's rewrites (:class:`~hiersql.engines.dialect.EngineDialect`), and sqlglot's generator for the dialect.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache, lru_cache
from typing import Any

from .. import sqlfiles
from ..inputs import rules as input_rules
from ..options import Options, sql_options
from ..plan import FamilyPlan, Python, Sql, Step, summary_sql
from .dialect import dialect as dialect_of


def render_family(plan: FamilyPlan, params: Mapping[str, object], dialect: str = "duckdb",
                  tables: Mapping[str, str] | None = None, metrics: Sequence[str] | None = None,
                  averages: Sequence[str] = ("micro", "macro"), pretty: bool = True,
                  options: Options | None = None, stage_dir: str | None = None) -> str:
    """The SQL of a family's ``plan`` in ``dialect``, its ``$parameters`` set to ``params``.

    A family computed by SQL alone is one query: its generated summary (of ``metrics``, default all) with the
    queries it reads as common table expressions. A family with Python steps is a script: each stage made by
    the dialect's :attr:`~hiersql.engines.dialect.EngineDialect.stage_statement` (a ``CREATE TEMPORARY TABLE``;
    for Spark, which inlines a common table expression at every reference, a Parquet folder of ``stage_dir``
    read by a temporary view, and every family a script), each Python step that runs with ``options`` (default
    :class:`Options`) as a comment naming the tables it reads and writes (the runners solve them between the
    stages), then the summary query. A stage that such a step writes is left to the step (its query is the
    empty default of the selections without the step): the script fails at the first statement that reads it
    unless the step was run, rather than giving another selection's values. The stages are the runners': each
    step's query after the queries it reads in the dialect's variant with ``params``, each once, less
    :func:`portable_only_stages`. A family with its own summary query keeps the rows of ``metrics`` only. The
    summary's rows come where the plan's :attr:`~hiersql.plan.FamilyPlan.sql_checks` pass (those of measures
    named in ``metrics``; ``None``: the family as a whole), and it fails where they fail, as ``hiersql
    evaluate`` refuses such an input.
    """
    options = options or Options()
    named = list(metrics or ())
    metrics = list(metrics or plan.metrics)
    one_run(plan, metrics, options)
    rules = dialect_of(dialect)
    if rules.stage_folders and stage_dir is None:
        raise ValueError(f"a {dialect} script stores its stages in folders: render_family needs stage_dir")

    def stage(name: str, tree: Any) -> str:
        from sqlglot import exp

        folder = None if stage_dir is None else exp.Literal.string(f"{stage_dir.rstrip('/')}/{name}").sql(dialect)
        made = f"{rules.stage_statement.format(name=name, folder=folder)}\n{tree.sql(dialect=dialect, pretty=pretty)};"
        after = rules.after_stage_statement
        return made if after is None else f"{made}\n{after.format(name=name, folder=folder)};"

    def statements(query_name: str, last: bool = False, text: str | None = None,
                   skip: frozenset[str] = frozenset()) -> list[str]:
        """The statements of query ``query_name``: its stage, or with ``last`` the query itself; before it, in
        a dialect that computes a common table expression again at every reference, a stage for each of its
        common table expressions read twice (:func:`ctes_apart`)."""
        tree = _tree(plan.file, query_name, params, dialect, tables, skip=skip, text=text)
        parts = ctes_apart(tree, query_name) if rules.inlines_ctes else []
        return [*(stage(part, body) for part, body in parts),
                tree.sql(dialect=dialect, pretty=pretty) + ";" if last else stage(query_name, tree)]

    if not plan.summary:
        summary, last = summary_sql(plan, metrics, averages, rules.ordered), f"{plan.name}_summary"
    elif set(metrics) == set(plan.metrics):
        summary, last = None, plan.summary
    else:  # the family's own summary query, filtered
        summary = f"SELECT * FROM {plan.summary} WHERE metric IN ({', '.join(repr(m) for m in metrics)})"
        last = f"{plan.summary}_of_metrics"
    checks = checks_of(plan, named)
    if checks:
        summary, last = checked_sql(summary or f"SELECT * FROM {plan.summary}", checks), f"{plan.name}_checked"
    steps = [step for step in plan.steps if isinstance(step, Sql) or step.when(options)]
    unread = portable_only_stages(plan, tuple(steps), rules.variant)  # as the runners leave them out
    steps = [step for step in steps if isinstance(step, Python) or step.query not in unread]
    if not any(isinstance(step, Python) for step in steps) and not rules.inlines_ctes:
        return "\n".join(statements(last, True, summary)).rstrip(";")
    solved = {name for step in steps if isinstance(step, Python) for name in step.writes}
    out: list[str] = []
    done: set[str] = set()
    # the options that shape the plan and reach its Python steps only: the printed script names their values
    shaping = ", ".join(f"{o.name}={getattr(options, o.name)!r}" for o in sql_options()
                        if o.plan and plan.name in o.families)
    for step in steps:
        if isinstance(step, Sql):
            for dep in [*sqlfiles.dependencies(plan.file, step.query, rules.variant, params=params), step.query]:
                if dep not in done and dep not in solved:
                    out += statements(dep, skip=frozenset(done | solved))
                    done.add(dep)
        else:
            out.append(f"-- Python step {step.name} ({step.solve.__module__}.{step.solve.__name__}): {step.why};"
                       f" it reads {', '.join(step.reads)}; writes {', '.join(step.writes)}"
                       + (f"; the family's plan options: {shaping}" if shaping else "")
                       + "; `hiersql evaluate --engine postgres` (or spark) runs the script with this step")
            done.update(step.writes)
    out += statements(last, True, summary, frozenset(done))
    return "\n\n".join(out).rstrip(";")


def checks_of(plan: FamilyPlan, named: Sequence[str] = ()) -> list[str]:
    """The queries of the plan's :attr:`~hiersql.plan.FamilyPlan.sql_checks` that hold for a run: those of every
    run, and those of the measures ``named`` (asked for by name)."""
    return [c.query for c in plan.sql_checks if c.metrics is None or set(c.metrics) & set(named)]


def checked_sql(sql: str, checks: Sequence[str]) -> str:
    """``sql`` (a query over a family's file) whose rows come where the check queries ``checks``
    (:func:`checks_of`) pass; it fails where one of them fails."""
    return f"SELECT * FROM ({sql}) AS checked WHERE " + " AND ".join(
        f"(SELECT failed FROM {check}) IS NULL" for check in checks)


def one_run(plan: FamilyPlan, metrics: Sequence[str], options: Options) -> Options:
    """The options of the one run of ``plan`` that computes ``metrics`` (default: all of the plan's), as
    :attr:`~hiersql.plan.FamilyPlan.groups` gives them (the pair-based errors that ignore ``max_distance``: it
    unset). A printed script is one run: ``metrics`` that the runners compute in several (severity at each k,
    those errors beside the others) are an :class:`~hiersql.options.OptionError` naming the option the runs
    differ by, rather than a script whose values differ from ``hiersql evaluate``'s."""
    from ..options import OptionError

    runs = plan.groups(list(metrics or plan.metrics), options)
    if len(runs) == 1:
        return runs[0][1]
    name = next(o.name for o in sql_options() if len({getattr(group, o.name) for _, group in runs}) > 1)

    def shown(value: object) -> str:
        return ",".join(map(str, value)) if isinstance(value, tuple) else str(value)

    described = "; ".join(f"{name} {shown(getattr(group, name))}: {', '.join(names)}" for names, group in runs)
    raise OptionError(name, f"gives {len(runs)} runs of the {plan.name} plan ({described}); a printed script is"
                            " one run: print each on its own", shown(getattr(options, name)))


def family_params(plan: FamilyPlan, options: Options) -> dict[str, object]:
    """The ``$parameters`` of a family ``plan``'s SQL for ``options`` (the plan's, without an engine)."""
    return {"zero_division": float(options.zero_division), **plan.params(options, None, list(plan.metrics))}


def render(
    file: str,
    name: str | None = None,
    params: Mapping[str, object] | None = None,
    dialect: str = "duckdb",
    tables: Mapping[str, str] | None = None,
    pretty: bool = True,
    skip: frozenset[str] = frozenset(),
    text: str | None = None,
) -> str:
    """Query ``name`` of ``sql/<file>.sql`` as one statement in ``dialect``: :func:`hiersql.sqlfiles.render`
    (dependencies as CTEs except those of ``skip``, parameters as literals, ``tables`` renamed; ``text``
    replaces the query's own text), constant-folded (a branch switched off by a parameter, such as
    ``'ancestors' = 'descendants' AND ...``, disappears), plus the dialect's rewrites
    (:meth:`~hiersql.engines.dialect.EngineDialect.rewritten`)."""
    return _tree(file, name, params, dialect, tables, skip, text).sql(dialect=dialect, pretty=pretty, copy=False)


def _tree(file: str, name: str | None, params: Mapping[str, object] | None, dialect: str,
          tables: Mapping[str, str] | None, skip: frozenset[str] = frozenset(), text: str | None = None) -> Any:
    """The sqlglot tree behind :func:`render`."""
    import sqlglot
    from sqlglot.optimizer.simplify import simplify

    rules = dialect_of(dialect)
    sql = sqlfiles.render(file, name, dict(params or {}), "duckdb", dict(tables or {}), pretty=False, skip=skip,
                          text=text, variant=rules.variant)
    tree = _dead_branches_pruned(simplify(sqlglot.parse_one(sql + "\n", read="duckdb")))  # newline: sqlfiles._parse
    return rules.rewritten(tree)


def _dead_branches_pruned(tree: Any) -> Any:
    """Remove from ``tree`` the branches of a ``UNION`` after its first whose ``WHERE`` a parameter made
    ``FALSE`` (no rows: the first branch, which names the columns, stays; of a ``UNION`` that removes
    duplicates, only where the branches before it remove them too), then the common table expressions no
    longer read. A query composes every query its text reads, also those read only in such a branch (the pair
    rows a Spark variant keeps for the Cesa-Bianchi tolerance, ``flat_labels`` of the fixed class universe):
    the printed SQL then needs no table the query does not read, and Spark no stage that it would not
    compute (its runner stores a common table expression read twice before Spark sees the query). (sqlglot's
    ``eliminate_ctes`` left such common table expressions of Spark's set_counts in place.)"""
    from sqlglot import exp

    for union in list(tree.find_all(exp.Union)):
        if not isinstance(union.expression, exp.Select) or any(
                union.args.get(arg) for arg in ("order", "limit", "offset")):  # those apply to every branch
            continue
        if union.args.get("distinct") and not (isinstance(union.this, exp.Union) and union.this.args.get("distinct")):
            continue
        where = union.expression.args.get("where")
        if where is not None and isinstance(where.this, exp.Boolean) and not where.this.this:
            if union is tree:  # the query itself: its common table expressions go to its first branch
                tree = union.this.pop()
                tree.set("with_", union.args.get("with_"))
            else:
                union.replace(union.this)
    with_ = tree.args.get("with_")
    while with_ is not None and not with_.args.get("recursive"):
        unread = [cte for cte in with_.expressions
                  if not any(t.find_ancestor(exp.CTE) is not cte for t in _tables(tree, cte.alias))]
        if not unread:
            break
        for cte in unread:
            cte.pop()
        if not with_.expressions:
            tree.set("with_", None)
            break
    return tree


def ctes_apart(tree: Any, name: str) -> list[tuple[str, Any]]:
    """The common table expressions of query ``tree`` (of stage ``name``) that a dialect which computes one
    again at every reference (Spark) stores first: those read twice or more, each as a stage of its own
    (``<name>__<cte>``, with the common table expressions before it that it may read), its readers renamed;
    ``tree`` changed, the others left in its ``WITH``."""
    from sqlglot import exp

    parts: list[tuple[str, Any]] = []
    with_ = tree.args.get("with_")
    if with_ is None or with_.args.get("recursive"):
        return parts
    for cte in list(with_.expressions):
        references = _cte_reads(tree, cte)
        if len(references) < 2:
            continue
        body = cte.this.copy()
        earlier = [c.copy() for c in with_.expressions[:with_.expressions.index(cte)]]
        if earlier:  # those it does not read are left out by Spark
            body.set("with_", exp.With(expressions=earlier))
        part = f"{name}__{cte.alias}"
        for table in references:
            table.set("this", exp.to_identifier(part))
            if not table.alias:
                table.set("alias", exp.TableAlias(this=exp.to_identifier(cte.alias)))
        parts.append((part, body))
        cte.pop()
    if not with_.expressions:
        tree.set("with_", None)
    return parts


def _cte_reads(tree: Any, cte: Any) -> list[Any]:
    """The tables of query ``tree`` that read its common table expression ``cte`` (sqlglot's scope analysis:
    a table of that name that is not this common table expression is not among them)."""
    from sqlglot.optimizer.scope import build_scope

    root = build_scope(tree)
    target = next(scope for scope in root.cte_scopes if scope.expression is cte.this)
    return [table for scope in root.traverse() for table in scope.tables
            if scope.sources.get(table.alias_or_name) is target]


def _tables(tree: Any, name: str) -> list[Any]:
    """The references of ``tree`` to the (unqualified) table or common table expression ``name``."""
    from sqlglot import exp

    return [t for t in tree.find_all(exp.Table) if not t.db and t.name == name]


def checks_script(sql: str, tables: Mapping[str, str] | None, dialect: str, options: Mapping[str, str],
                  pretty: bool = True) -> str:
    """The statements to run before ``sql`` (a measure's SQL in ``dialect`` that reads the cleaned input tables
    of :func:`~hiersql.inputs.rules.cleaned_names`): the check query of :func:`~hiersql.inputs.rules.guard_sql`,
    which fails on the first fault, then one view ``hiersql_<table>`` per input table ``sql`` reads
    (:func:`~hiersql.inputs.rules.cleaned_sql`, made by the dialect's
    :attr:`~hiersql.engines.dialect.EngineDialect.view_statement`). ``options``: the values of ``unknown`` and
    ``no_truth``. Empty when ``sql`` reads no input table."""
    import re

    read = tuple(t for t in input_rules.INPUT_TABLES if re.search(rf"\bhiersql_{t}\b", sql))
    if not read:
        return ""
    rank = re.search(r"\brank\b", sql) is not None  # the HCM orders the labels of a set by rank
    return _checks_script(read, rank, input_rules.tables_key(tables), dialect,
                          tuple((name, options[name]) for name in input_rules.OPTIONS), pretty)


@lru_cache(maxsize=64)  # the same for every measure that reads the same tables, and parsing them is most of its time
def _checks_script(read: tuple[str, ...], rank: bool, key: input_rules.TablesKey, dialect: str,
                   chosen: tuple[tuple[str, str], ...], pretty: bool) -> str:
    import sqlglot
    from sqlglot import exp

    tables, options = input_rules.tables_of(key), dict(chosen)
    values = {name: sqlfiles._literal(options[name]) for name in input_rules.OPTIONS}

    def written(text: str, view: bool = False) -> str:
        tree = exp.replace_placeholders(sqlglot.parse_one(text + "\n", read="duckdb"), copy=False, **values)
        tree = tree if dialect == "duckdb" else tree.transform(input_rules.untyped, copy=False)
        return (collated(tree, dialect_of(dialect).text_collation) if view else tree).sql(dialect=dialect,
                                                                                          pretty=pretty, copy=False)

    out = ["-- hiersql input rules (docs/sql.md): fails with the first fault of the input tables, where hiersql"
           f" evaluate would refuse them (unknown={options['unknown']}, no_truth={options['no_truth']})",
           written(input_rules.guard_sql(tables, dialect, listed="", rank=rank)) + ";",
           "-- the input rows as hiersql evaluate reads them: ids and labels trimmed, duplicates collapsed"]
    view = dialect_of(dialect).view_statement
    out += [f"{view.format(f'hiersql_{t}')}\n{written(input_rules.cleaned_sql(t, tables, rank), True)};"
            for t in read]
    return "\n".join(out) + "\n\n"


def collated(tree: Any, collation: str | None) -> Any:
    """The text columns (``instance_id``, ``label``, ``system``) of a cleaned input table's view ``tree`` in the
    dialect's :attr:`~hiersql.engines.dialect.EngineDialect.text_collation` (none: ``tree`` as it is)."""
    from sqlglot import exp

    if collation is None:
        return tree
    for projection in list(tree.selects):
        if projection.alias_or_name in ("instance_id", "label", "system"):
            value = projection.this if isinstance(projection, exp.Alias) else projection.copy()
            projection.replace(exp.alias_(exp.Collate(this=value, expression=exp.to_identifier(
                collation, quoted=True)), projection.alias_or_name))
    return tree


def portable_only_stages(plan: FamilyPlan, steps: Sequence[Step], variant: str | None) -> frozenset[str]:
    """The SQL stages of ``steps`` that only the portable queries of later stages read: where ``variant``'s
    bodies replace those, no later stage reads them, nor a Python step, nor the plan's generated queries (its
    per-instance, per-class and unit tables), nor its summary. Neither the runner nor a printed script makes
    them; a query that still reads one composes it. (The pair-based ``pair_distances_of``, a row per label pair
    of every instance, which the DuckDB and Spark variants of ``pair_arcs`` do without.)"""
    if variant is None:
        return frozenset()
    kept = plan.read_beyond_stages()
    if plan.summary is not None:
        kept |= {plan.summary, *sqlfiles.dependencies(plan.file, plan.summary, variant)}
    stages = tuple(step.query for step in steps if not isinstance(step, Python))
    return _portable_only(plan.file, stages, frozenset(kept - {None}), variant)


@cache
def _portable_only(file: str, stages: tuple[str, ...], kept: frozenset[str], variant: str) -> frozenset[str]:
    needed, portable, out = set(kept), set(), set()
    for query in reversed(stages):  # needed: read by a later stage that is made, with the variant's bodies
        if query not in needed and query in portable:
            out.add(query)
        else:
            needed |= set(sqlfiles.dependencies(file, query, variant))
        portable |= set(sqlfiles.dependencies(file, query))
    return frozenset(out)
