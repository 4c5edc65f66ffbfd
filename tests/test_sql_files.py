"""Every SQL file of hiersql parses with sqlglot (DuckDB dialect), and every named query, composed with the
queries it reads, transpiles to PostgreSQL and Spark; a ``NOT IN`` subquery reads the taxonomy alone. Files
added later are picked up by the glob."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp

from hiersql import engines, sqlfiles
from hiersql.engines.dialect import dialect as dialect_of
from hiersql.engines.dialect import recursive_unions_kept

FILES = sqlfiles.available()
TARGETS = ("postgres", "spark")


def _named_queries() -> list[tuple[str, str]]:
    return [(f, q) for f in FILES for q in sqlfiles.queries(f)]


def _parse(text: str) -> list:
    """All statements of ``text``; the trailing newline as in :func:`hiersql.sqlfiles._parse` (sqlglot 30 fails
    to tokenize text with a ``$parameter`` that ends with ``''``)."""
    return sqlglot.parse(text + "\n", read="duckdb", error_level=sqlglot.ErrorLevel.RAISE)


def _is_query(text: str) -> bool:
    statements = _parse(text)
    return len(statements) == 1 and isinstance(statements[0], exp.Query)


def test_every_sql_file_of_the_package_is_found_by_a_unique_name():
    on_disk = [p.stem for p in Path(sqlfiles.__file__).parent.rglob("*.sql")]
    assert sorted(on_disk) == FILES and len(set(on_disk)) == len(on_disk)
    assert {"schema", "closure", "set_based"} <= set(FILES)


@pytest.mark.parametrize("file", FILES)
def test_file_parses_in_duckdb_dialect(file):
    for name, text in sqlfiles.queries(file).items():
        statements = _parse(text)
        assert statements and all(s is not None for s in statements), f"{file}.{name}: nothing parsed"
        assert not any(isinstance(s, exp.Command) for s in statements), \
            f"{file}.{name}: sqlglot fell back to an opaque command (it did not understand the statement)"


@pytest.mark.parametrize(("file", "name"), _named_queries())
@pytest.mark.parametrize("dialect", TARGETS)
def test_named_query_transpiles(file, name, dialect):
    text = sqlfiles.queries(file)[name]
    if not _is_query(text):  # DDL (schema.sql): statement by statement
        out = sqlglot.transpile(text, read="duckdb", write=dialect, unsupported_level=sqlglot.ErrorLevel.RAISE)
        assert out and all(out)
        return
    params = {p: 1 for q in [name, *sqlfiles.dependencies(file, name)]
              for p in sqlfiles.parameters(sqlfiles.queries(file)[q])}
    outputs = [(sqlfiles.render(file, name, params, dialect), None)]
    if name == list(sqlfiles.queries(file))[-1]:  # what an engine runs (folded, dialect fixes); it reads the rest
        # with the engine's variants (lca.sql's lca_labels (duckdb, spark) reads no lca_above)
        outputs.append((engines.render(file, name, params, dialect), dialect_of(dialect).variant))
    for sql, variant in outputs:
        back = sqlglot.parse_one(sql + "\n", read=dialect)
        assert isinstance(back, exp.Query)
        with_ = back.args.get("with_")
        names = [c.alias for c in with_.expressions] if with_ else []
        assert len(names) == len(set(names)), f"{file}.{name}: two CTEs of the same name once composed"
        ctes = set(names)
        missing = set(sqlfiles.dependencies(file, name, variant)) - ctes
        assert not missing, f"{file}.{name}: queries it reads are not composed as CTEs: {sorted(missing)}"


def test_render_composes_every_dependency_in_order():
    """The set-based per-instance query reads six queries; each becomes a CTE, in file order."""
    tree = sqlglot.parse_one(sqlfiles.render("set_based", "set_based_instance"), read="duckdb")
    names = [c.alias for c in tree.args["with_"].expressions]
    assert names == ["labelled_sets", "augmented", "cesa_supported", "set_pairs", "set_pair_counts",
                     "set_counts"]


def test_a_name_in_a_comment_is_not_a_dependency():
    # node_closure_walk's comment speaks of "closure rows"; it reads only nodes and edges.
    assert "closure rows" in sqlfiles.queries("closure", "duckdb")["node_closure_walk"]
    assert sqlfiles.dependencies("closure", "node_closure_walk", "duckdb") == []
    assert sqlfiles.dependencies("set_based", "set_pairs") == ["labelled_sets", "augmented", "cesa_supported"]


def test_reads_are_sqlglots_scopes_not_words():
    """A query's reads are the tables of its scopes: a common table expression of its own, a column or a string
    that spells another query's name, are not reads; ``hiersql/reads.json`` (read instead of parsing in plain
    runs) holds sqlglot's answer for every query; after a change: ``hiersql.sqlfiles.write_reads_file()``."""
    import json

    text = ("WITH set_pairs AS (SELECT 1 AS augmented) SELECT augmented, 'labelled_sets' AS s FROM set_pairs"
            " JOIN cesa_supported USING (augmented)")
    assert sqlfiles.reads("set_based", "mine", text=text) == {"cesa_supported"}
    assert sqlfiles.dependencies("set_based", "mine", text=text) == ["labelled_sets", "augmented", "cesa_supported"]
    assert sqlfiles.dependencies("set_based", "set_counts", "duckdb", skip={"set_pairs"}) == ["set_pair_counts"]
    assert json.loads(sqlfiles.READS_FILE.read_text()) == sqlfiles.read_forms()


def test_the_label_columns_a_query_reads_are_its_scopes_columns_of_truth_and_predictions():
    """A column of ``truth`` or ``predictions`` is read where a scope names it by the table's alias, or
    unqualified where that table is the scope's one source, unless the scope's ``ORDER BY`` names one of its own
    outputs so (a window's ``ORDER BY`` reads the table); a column of the same name of another table or made by
    the query is not. The families whose SQL reads ``rank`` (by hand: ``hcm_set_labels`` reads ``t.rank`` and
    ``p.rank``, ``scoring_pairs`` ``t.rank`` and, unqualified in ``predictions_left``, ``rank`` of ``predictions
    AS p``, ``severity_pairs`` and ``severity_ranked_distances`` ``p.rank``; no other file names the column) are
    the ones the ranked-by-name warning names. A scope's sources are its ``FROM`` and joins: a common table
    expression it could read but does not leaves a table its one source."""
    joined = "SELECT t.rank, x.score FROM truth AS t JOIN other AS x ON x.label = t.label"
    assert sqlfiles.read_label_columns(joined) == {"truth.rank", "truth.label"}
    assert sqlfiles.read_label_columns("SELECT rank FROM predictions WHERE system = 'a'") == {
        "predictions.rank", "predictions.system"}
    assert sqlfiles.read_label_columns(
        "SELECT label, row_number() OVER (ORDER BY score) AS rank FROM predictions ORDER BY rank") == {
        "predictions.label", "predictions.score"}
    assert sqlfiles.read_label_columns("SELECT rank FROM (SELECT 1 AS rank) AS made") == set()
    assert sqlfiles.read_label_columns("SELECT row_number() OVER (ORDER BY rank) AS rank FROM truth") == {"truth.rank"}
    assert sqlfiles.read_label_columns(
        "WITH made AS (SELECT 1 AS rank) SELECT rank FROM made UNION ALL SELECT rank FROM predictions") == {
        "predictions.rank"}
    assert "predictions.rank" in sqlfiles.read_label_columns(sqlfiles.queries("scoring")["scoring_pairs"])
    assert sqlfiles.files_reading("rank") == ["confusion", "scoring", "severity"]


def test_the_sql_files_qualify_label_columns_where_a_scope_joins_a_label_table():
    """:func:`hiersql.sqlfiles.read_label_columns` attributes an unqualified column to a label table only in a
    scope that reads nothing else: in a scope of the SQL files that joins ``truth`` or ``predictions`` to another
    source, every column is qualified (``t.rank``, not ``rank``), so that no read goes unseen."""
    from sqlglot.optimizer.scope import traverse_scope

    unqualified = []
    for file in sqlfiles.available():
        for variant in (None, *sorted(sqlfiles.variants(file))):
            for name, body in sqlfiles.queries(file, variant).items():
                for scope in traverse_scope(sqlfiles._parse(body)):
                    sources = [source for _, source in scope.selected_sources.values()]
                    if len(sources) > 1 and any(isinstance(s, exp.Table) and s.name in sqlfiles.LABEL_TABLES
                                                for s in sources):
                        unqualified += [(file, variant, name, c.sql()) for c in scope.columns if not c.table]
    assert unqualified == []


def test_duckdb_variants_replace_portable_queries_only_when_asked():
    portable, duck = sqlfiles.queries("set_based"), sqlfiles.queries("set_based", "duckdb")
    assert sqlfiles.variants("set_based") == {"duckdb", "spark"}
    assert list(portable) == list(duck)  # same names, same order
    assert "node_closure_walk" in sqlfiles.queries("closure", "duckdb")
    assert "node_closure_walk" not in sqlfiles.queries("closure")  # a DuckDB-only query
    assert "list_unique" not in portable["set_counts"] and "list_unique" in duck["set_counts"]
    assert "list_unique" not in sqlfiles.render("set_based", "set_based_instance", dialect="duckdb")
    for file in FILES:
        for name, text in sqlfiles.queries(file, "duckdb").items():
            if text != sqlfiles.queries(file).get(name):  # a variant, or a DuckDB-only query (node_closure_walk)
                assert sqlglot.parse_one(text + "\n", read="duckdb") is not None, name
    deps = sqlfiles.dependencies("set_based", "set_counts", "duckdb")
    assert deps == ["labelled_sets", "augmented", "cesa_supported", "set_pairs", "set_pair_counts"]


def test_render_fills_parameters_and_renames_tables():
    sql = sqlfiles.render("set_based", params={"include_root": True, "max_distance": 2, "augment": "ancestors",
                                              "beta": 1.0, "zero_division": 0.0},
                          tables={"truth": "dw.gold_labels"}, dialect="postgres")
    assert "$" not in sql
    tree = sqlglot.parse_one(sql, read="postgres")
    tables = {(t.db, t.name) for t in tree.find_all(exp.Table)}
    assert ("dw", "gold_labels") in tables and ("", "truth") not in tables
    assert ("", "predictions") in tables  # not renamed


def test_rename_keeps_the_old_name_as_alias():
    """``truth.label`` must still resolve once ``truth`` is another table."""
    tree = sqlglot.parse_one("SELECT truth.label FROM truth", read="duckdb")
    out = sqlfiles._rename_tables(tree, {"truth": "dw.gold"}).sql(dialect="postgres")
    assert out == "SELECT truth.label FROM dw.gold AS truth"


def test_spark_gets_double_literals_and_union_all_recursion():
    sql = engines.render("closure", dialect="spark", pretty=False)
    assert "UNION ALL" in sql
    from hiersql.measures import set_based
    from hiersql.plan import instance_values_sql

    summary = engines.render("set_based", "set_based_instance_values",  # the generated per-instance ratios
                             params={"include_root": False, "max_distance": None, "augment": "ancestors",
                                     "beta": 1.0, "zero_division": 0.0},
                             dialect="spark", pretty=False, text=instance_values_sql(set_based.PLAN))
    decimals = [lit for lit in sqlglot.parse_one(summary, read="spark").find_all(exp.Literal)
                if lit.is_number and "." in lit.this]
    assert decimals and all(isinstance(lit.parent, exp.Cast) for lit in decimals)


def test_parameters_switch_branches_off():
    """Constant folding drops the 'descendants' branch when augmenting with ancestors."""
    params = {"include_root": False, "max_distance": None, "augment": "ancestors", "beta": 1.0,
              "zero_division": 0.0}
    sql = engines.render("set_based", "augmented", params, dialect="postgres", pretty=False)
    assert "'descendants'" not in sql and "'ancestors'" not in sql


# ------------------------------------------------------------------------------- hiersql sql
def _cli_sql(capsys, *args: str) -> str:
    from hiersql.cli import main

    assert main(["sql", *args]) == 0
    return capsys.readouterr().out


def test_cli_sql_for_one_metric_runs_in_duckdb(capsys):
    from tests._engine_cases import HAND_EXPECTED, hand_store

    store = hand_store()
    rows = store.con.execute(_cli_sql(capsys, "hf")).fetchall()
    want = {k: v for k, v in HAND_EXPECTED.items() if k[1] == "hierarchical_f1"}
    assert {(s, m, a): pytest.approx(v, abs=1e-12) for s, m, a, v in rows} == want


def test_cli_sql_options_become_literals(capsys):
    from hiersql.measures import Options, Row
    from tests._engine_cases import SET_BASED, assert_rows_match, hand_store, reference

    store = hand_store()
    sql = _cli_sql(capsys, "set_based", "--include-root", "--max-distance", "1", "--beta", "2",
                   "--zero-division", "1", "--dialect", "duckdb")
    got = [Row(*r) for r in sorted(store.con.execute(sql).fetchall())]
    options = Options(include_root=True, max_distance=1, beta=2.0, zero_division=1.0)
    assert_rows_match(got, reference(store, SET_BASED, options), tol=1e-12)


def test_cli_sql_table_renames_and_dialects(capsys):
    sql = _cli_sql(capsys, "hp", "--dialect", "snowflake", "--table", "truth=dw.gold_labels",
                   "--table", "predictions=dw.runs")
    tree = sqlglot.parse_one(sql.rstrip().rstrip(";"), read="snowflake")
    names = {(t.db, t.name) for t in tree.find_all(exp.Table)}
    assert {("dw", "gold_labels"), ("dw", "runs")} <= names
    assert ("", "truth") not in names and ("", "predictions") not in names
    assert "'hierarchical_precision'" in sql.split("AS summary")[-1]  # the filter on the metric
    spark = _cli_sql(capsys, "set_based", "--dialect", "spark")
    assert "CAST(1.0 AS DOUBLE)" in spark  # no DECIMAL arithmetic on Spark
    assert "WITH RECURSIVE" in _cli_sql(capsys, "closure", "--dialect", "postgres", "--param", "max_depth=null")
    assert _cli_sql(capsys, "hf", "--dialect", "postgresql") == _cli_sql(capsys, "hf", "--dialect", "postgres")


@pytest.mark.parametrize(("args", "message"), [
    (["no_such_metric"], "unknown metric, family or SQL file"),
    (["hf", "--dialect", "nosql"], "unknown SQL dialect (known: athena, bigquery, "),
    (["hf", "--table", "gold=x"], "unknown table"),
    (["hf", "--table", "truth"], "expected NAME=TABLE"),
    (["closure", "--query", "nope"], "no such query"),
    # a parameter without a value would be printed as a driver's placeholder (%(max_depth)s), which psql refuses
    (["closure", "--dialect", "postgres"], "--query: query closure of closure.sql takes parameters without a"
     " value here: give them with --param max_depth=VALUE: 'closure'"),
    (["hf", "--lca-graph", "greedy"], "--lca-graph: shapes the plan of the lca family: 'greedy'"),
])
def test_cli_sql_bad_input_exits_2(capsys, args, message):
    from hiersql.cli import main

    assert main(["sql", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_cli_sql_of_one_scoring_measure_keeps_its_rows(capsys):
    """The scoring family's own summary query, filtered to the metric asked for as the other families' are
    (it printed every scoring measure for ``pl``)."""
    from tests._engine_cases import hand_store

    rows = hand_store().con.execute(_cli_sql(capsys, "pl")).fetchall()
    assert rows and {r[1] for r in rows} == {"pl"}


def test_cli_sql_for_dialects_without_ordered_aggregates_and_without_unread_tables(capsys):
    """Snowflake and BigQuery have no ``sum(x ORDER BY k)``: left out (it was printed for the scoring sums);
    the flat queries name ``flat_labels`` only with a fixed class universe (its branch, switched off, needed
    the table all the same)."""
    for dialect in ("snowflake", "bigquery"):
        sql = _cli_sql(capsys, "pl", "--dialect", dialect)
        tree = sqlglot.parse_one(sql.rstrip().rstrip(";"), read=dialect)
        assert not [agg for agg in tree.find_all(exp.AggFunc) if isinstance(agg.this, exp.Order)], dialect
    assert "flat_labels" not in _cli_sql(capsys, "flat", "--dialect", "postgres")
    assert "dw.fl" in _cli_sql(capsys, "flat", "--param", "fixed_universe=true", "--table", "flat_labels=dw.fl")


def test_spark_union_all_only_where_a_cte_reads_itself():
    sql = ("WITH RECURSIVE walk(n) AS (SELECT 1 UNION SELECT n + 1 FROM walk WHERE n < 3),"
           " other AS (SELECT n FROM walk UNION SELECT n FROM walk) SELECT * FROM other")
    tree = sqlglot.parse_one(sql, read="duckdb")
    unions = {c.alias: c.this.args["distinct"] for c in recursive_unions_kept(tree).args["with_"].expressions}
    assert unions == {"walk": False, "other": True}


def test_a_parameter_named_in_a_comment_is_not_one_the_query_takes():
    assert sqlfiles.parameters("SELECT $a AS x -- not $b\nFROM t WHERE y = $c -- $d") == {"a", "c"}


@pytest.mark.parametrize(("dialect", "run_here"), [("duckdb", True), ("postgres", True), ("spark", True),
                                                   ("databricks", False), ("tsql", False), ("snowflake", False)])
def test_the_sql_of_a_dialect_not_run_here_says_so_first(capsys, dialect, run_here):
    """Printed SQL for a dialect that hiersql's tests do not run on a server is marked in its first line (issue 37)."""
    first = _cli_sql(capsys, "hp", "--dialect", dialect).splitlines()[0]
    said = (f"-- {dialect}: transpiled by sqlglot, not run by hiersql's tests (they run DuckDB, PostgreSQL and"
            " Spark: docs/sql.md)")
    assert (first == said) is not run_here


@pytest.mark.parametrize("dialect", ["spark", "duckdb"])
@pytest.mark.parametrize("family", ["set_based", "flat", "hcm", "pair_based", "lca", "scoring"])
def test_a_printed_script_makes_each_query_once_and_only_what_is_read(capsys, family, dialect):
    """The stages of a printed script are those of the runners: each query of the dialect's variant once (the
    Spark ancestor maps that two stages read were stored twice, as ``<stage>__pair_ancestor_maps`` of each), and
    each stage read by a later statement (the Spark set-based script made five stages of the portable
    ``set_counts`` that its Spark variant does not read)."""
    script = _cli_sql(capsys, family, "--dialect", dialect)
    made = re.compile(r"^(?:INSERT OVERWRITE DIRECTORY '[^']*/(\w+)' USING parquet"
                      r"|CREATE TEMPORARY TABLE (\w+) AS)$", re.MULTILINE)
    statements = [s for s in script.split(";\n") if s.strip()]
    stages = [(i, m[1] or m[2]) for i, s in enumerate(statements) for m in made.finditer(s)]
    assert stages or dialect == "duckdb"
    named = {q for file in FILES for variant in (None, "spark") for q in sqlfiles.queries(file, variant)}
    queries = [q for q in (name.rsplit("__", 1)[-1] for _, name in stages) if q in named]  # not a stage's CTE
    assert len(set(queries)) == len(queries), queries
    steps = re.compile(r"^-- Python step .*; it reads ([\w, ]+);", re.MULTILINE)  # what a step reads
    for i, name in stages:
        later = [s for s in statements[i + 1:] if not s.strip().startswith(f"CREATE OR REPLACE TEMPORARY VIEW {name} ")]
        text = "\n".join([*map(sqlfiles.without_comments, later), *(m[1] for s in later for m in steps.finditer(s))])
        assert re.search(rf"\b{name}\b", text), (name, family)


def test_spark2_is_refused_in_one_line_because_the_spark_sql_calls_spark_3_functions(capsys):
    """``--dialect spark2`` printed Spark 3 SQL that Spark 2 cannot run: it is refused in one line naming the
    flag, and the reason holds: the input rules of every family fail with ``raise_error`` (Spark 3.1), and the
    families call ``max_by`` (Spark 3.0)."""
    from hiersql.cli import main

    assert main(["sql", "hf", "--dialect", "spark2"]) == 2
    assert capsys.readouterr().err == ("hiersql: error: --dialect: hiersql's Spark SQL needs Spark 3.1 or later"
                                       " (raise_error, max_by): print it with --dialect spark: 'spark2'\n")
    scripts = {family: _cli_sql(capsys, family, "--dialect", "spark").lower()
               for family in ("set_based", "flat", "hcm", "pair_based", "lca", "scoring")}
    assert all("raise_error(" in script for script in scripts.values())
    assert any("max_by(" in script for script in scripts.values())


def _tables_below(node: exp.Expression, ctes: dict[str, exp.Expression], seen: frozenset[str] = frozenset()
                  ) -> set[str]:
    """The tables ``node`` reads, through the common table expressions ``ctes`` of its query."""
    out: set[str] = set()
    for table in node.find_all(exp.Table):
        if table.name not in seen:
            out |= (_tables_below(ctes[table.name], ctes, seen | {table.name}) if table.name in ctes
                    else {table.name})
    return out


@pytest.mark.parametrize("file", FILES)
def test_a_not_in_subquery_reads_the_taxonomy_alone(file):
    """``x NOT IN (SELECT ...)`` over rows of the truth or predictions is quadratic on PostgreSQL once they
    exceed ``work_mem`` (it scans them for each row; HCM's sets without a prediction did, at 100,000 instances):
    there the condition is written ``NOT EXISTS``. A ``NOT IN`` reads the taxonomy's tables alone."""
    for variant in [None, *sorted(sqlfiles.variants(file))]:
        for name, body in sqlfiles.queries(file, variant).items():
            for tree in _parse(body):  # a file without named queries may hold several statements
                ctes = {cte.alias: cte.this for cte in tree.find_all(exp.CTE)}
                for member in tree.find_all(exp.In):
                    if isinstance(member.parent, exp.Not) and member.args.get("query") is not None:
                        read = _tables_below(member.args["query"], ctes)
                        assert read <= {"nodes", "edges", "closure"}, (name, variant, sorted(read))
