"""Loading a taxonomy into the tables ``edges``, ``nodes``, ``closure`` and ``node_closure`` of a DuckDB
connection (``schema.sql``), the closure computed inside DuckDB by ``closure.sql``.

Two walks compute the same closure on node positions: along every upward path (``node_closure_walk``: one
statement, twice as fast when the paths are few) or one topological level after the other
(``node_closure_level``: each statement holds one level's rows, for DAGs whose number of paths grows
exponentially with depth); :func:`walks_every_path` picks one. The closure on names is made from it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import sqlfiles
from ..errors import InputError

if TYPE_CHECKING:
    import duckdb

    from .taxonomy import Taxonomy

# closure_paths is taken while the path count stays within this many times a lower bound of the closure size
# (MeSH: 2.3, the 325,000-node benchmark DAG: 4.0); beyond it the deduplicating walk is cheaper or safer.
PATHS_PER_CLOSURE_ROW = 8


TAXONOMY_TABLES = frozenset({"edges", "nodes", "closure", "node_closure"})  # what fill_taxonomy fills


def fill_taxonomy(con: duckdb.DuckDBPyConnection, taxonomy: Taxonomy, max_depth: int | None = None,
                  closure_view: bool = False) -> None:
    """Replace the taxonomy tables (edges, nodes, closure, node_closure) of ``con`` with ``taxonomy``'s, in the
    transaction the caller holds (:meth:`hiersql.inputs.store.Store.load_taxonomy`); the closure only up to
    ``max_depth`` edges when given. With ``closure_view``, ``closure`` becomes a view of ``node_closure`` with
    the names joined when it is read (see :meth:`~hiersql.inputs.store.Store.load_taxonomy`)."""
    edges = taxonomy.all_edges()
    depths = taxonomy.depths()
    nodes = taxonomy.all_nodes()
    for table in ("node_closure", "nodes", "edges"):
        con.execute(f"DELETE FROM {table}")
    if closure_is_view(con):  # the table again, as the schema has it
        con.execute("DROP VIEW closure")
        con.execute(sqlfiles.queries("schema")["schema"])
    else:
        con.execute("DELETE FROM closure")
    columns = {"p": [e.parent for e in edges], "c": [e.child for e in edges]}
    if taxonomy.has_weights:  # splitting a column of empty strings costs as much as a column of names
        columns["w"] = ["" if e.weight is None else repr(e.weight) for e in edges]
    con.execute(
        "INSERT INTO edges SELECT unnest(string_split($p, chr(31))), unnest(string_split($c, chr(31))),"
        + (" CAST(nullif(unnest(string_split($w, chr(31))), '') AS DOUBLE)" if "w" in columns else " NULL"),
        {name: _joined(values, taxonomy.source) for name, values in columns.items()},
    )
    con.execute(
        "INSERT INTO nodes SELECT label, depth, label = $root, is_leaf, $virtual AND label = $root, position"
        " FROM (SELECT unnest(names) AS label, CAST(unnest(string_split($d, chr(31))) AS INTEGER) AS depth,"
        "  unnest(string_split($leaf, chr(31))) = '1' AS is_leaf, generate_subscripts(names, 1) - 1 AS position"
        "  FROM (SELECT string_split($n, chr(31)) AS names))",
        {"n": _joined(nodes, taxonomy.source), "d": "\x1f".join(map(str, map(depths.__getitem__, nodes))),
         "leaf": "\x1f".join(["1" if leaf else "0" for leaf in map(taxonomy.is_leaf, nodes)]),
         "root": taxonomy.root, "virtual": taxonomy.virtual_root},
    )
    queries = sqlfiles.queries("closure", "duckdb")
    if walks_every_path(taxonomy, depths):
        con.execute(f"INSERT INTO node_closure {queries['node_closure_walk']}", {"max_depth": max_depth})
    else:
        _walk_levels(con, taxonomy, nodes, queries["node_closure_level"], max_depth)
    if closure_view:
        con.execute("DROP TABLE closure")
        con.execute(f"CREATE VIEW closure AS {queries['closure_from_nodes']}")
    else:
        con.execute(f"INSERT INTO closure {queries['closure_from_nodes']}")


def _walk_levels(con: duckdb.DuckDBPyConnection, taxonomy: Taxonomy, nodes: list[str], query: str,
                 max_depth: int | None) -> None:
    """Fill ``node_closure`` one topological level after the other (:meth:`Taxonomy.levels`): the rows of a
    level's nodes from their parents' rows, made at earlier levels (``node_closure_level``). Each statement
    holds one level's rows, whatever the number of paths."""
    levels = taxonomy.levels()
    con.execute(
        "CREATE OR REPLACE TEMP TABLE node_levels AS SELECT CAST(unnest(string_split($l, chr(31))) AS INTEGER)"
        " AS level, generate_subscripts(string_split($l, chr(31)), 1) - 1 AS position",
        {"l": "\x1f".join(str(levels[n]) for n in nodes)})
    con.execute("CREATE OR REPLACE TEMP TABLE edge_positions AS SELECT p.position AS parent, c.position AS child"
                " FROM edges AS e JOIN nodes AS p ON p.label = e.parent JOIN nodes AS c ON c.label = e.child")
    try:
        for level in range(min(levels.values()), max(levels.values()) + 1):
            con.execute(f"INSERT INTO node_closure {query}", {"level": level, "max_depth": max_depth})
    finally:
        con.execute("DROP TABLE node_levels")
        con.execute("DROP TABLE edge_positions")


def closure_is_view(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``closure`` is a view (a load with ``closure_view=True``, possibly in an earlier session of a
    DuckDB file)."""
    return bool(con.execute(
        "SELECT count(*) FROM duckdb_views() WHERE view_name = 'closure' AND schema_name = 'main'"
        " AND database_name = current_database()").fetchall()[0][0])


def walks_every_path(taxonomy: Taxonomy, depths: dict[str, int]) -> bool:
    """Whether to take ``node_closure_walk`` (the walk along every path, twice as fast): when the taxonomy has
    at most :data:`PATHS_PER_CLOSURE_ROW` upward paths per row of a lower bound of its closure (``Σ (depth +
    1)``: every node, its ancestors on one shortest root path); else ``closure``, the deduplicating walk,
    safe for DAGs whose paths grow exponentially with depth."""
    lower_bound = sum(depths.values()) + len(depths)
    return taxonomy.path_count <= PATHS_PER_CLOSURE_ROW * lower_bound


def _joined(values: list[str], source: str) -> str:
    """``values`` joined by the unit separator U+001F, to pass a column as one string parameter and split it
    in SQL (``unnest(string_split($p, chr(31)))``): several times faster than a list parameter."""
    text = "\x1f".join(values)
    if text.count("\x1f") != len(values) - 1:
        bad = next(v for v in values if "\x1f" in v)
        raise InputError("node name contains the control character U+001F", source, value=bad)
    return text
