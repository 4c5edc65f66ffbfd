"""The closure macro after editing the taxonomy tables by hand (issue 37, item 2): a new node of ``edges`` is in
the closure, and a cycle fails within seconds naming its nodes (the walk ran forever, in DuckDB and PostgreSQL)."""

from __future__ import annotations

import re
import time

import duckdb
import pytest

from hiersql.cli import main
from hiersql.inputs.store import Store
from hiersql.inputs.taxonomy import Taxonomy
from tests._engine_cases import HAND_EDGES


def _installed(path, taxonomy: Taxonomy):
    store = Store(path)
    store.load_taxonomy(taxonomy)
    store.close()
    assert main(["install-macros", "--db", str(path)]) == 0
    return duckdb.connect(str(path))


def test_a_new_node_of_edges_is_in_the_closure(tmp_path):
    con = _installed(tmp_path / "hand.duckdb", Taxonomy.from_edges(HAND_EDGES))
    before = set(con.execute("SELECT * FROM closure").fetchall())
    assert set(con.execute("SELECT * FROM hiersql_closure()").fetchall()) == before
    con.execute("INSERT INTO edges VALUES ('D', 'G', NULL)")
    # G below D: itself, D one edge up, B two, the root A three
    assert set(con.execute("SELECT * FROM hiersql_closure()").fetchall()) - before == {
        ("G", "G", 0), ("D", "G", 1), ("B", "G", 2), ("A", "G", 3)}


def _leaf_edge(lines: list[str]) -> tuple[str, str]:
    """The first edge (parent, child) of the file whose child is a leaf with that one parent."""
    edges = [tuple(line.split()) for line in lines if line.strip()]
    parents = {p for p, _ in edges}
    count: dict[str, int] = {}
    for _, c in edges:
        count[c] = count.get(c, 0) + 1
    return next((p, c) for p, c in edges if c not in parents and count[c] == 1)


def test_a_cycle_fails_within_seconds_naming_its_nodes(tmp_path, data_dir):
    """MeSH (27,900 nodes, a DAG) and an edge from a leaf back to its only parent: the cycle is exactly those
    two nodes; the macro fails naming them, in seconds (it walked forever)."""
    path = data_dir / "mesh" / "mesh_hierarchy_int.txt"
    parent, child = _leaf_edge(path.read_text().splitlines())
    con = _installed(tmp_path / "mesh.duckdb", Taxonomy.from_file(path))
    con.execute("INSERT INTO edges VALUES ($c, $p, NULL)", {"c": child, "p": parent})
    started = time.monotonic()
    with pytest.raises(duckdb.InvalidInputException, match=re.escape(
            f"hiersql: edges: a cycle through the nodes {', '.join(sorted([parent, child]))}")):
        con.execute("SELECT count(*) FROM hiersql_closure()").fetchall()
    assert time.monotonic() - started < 30


@pytest.fixture
def germeval_in_postgres(pg_dsn, data_dir):
    """GermEval's taxonomy (a virtual root over its top genres) loaded by hiersql, and a PostgreSQL engine
    holding a copy of its ``edges`` and ``nodes``."""
    from hiersql.engines import PostgresEngine
    from tests._engine_cases import germeval_store

    store = germeval_store(data_dir, ())
    engine = PostgresEngine(pg_dsn)
    engine.copy_store(store, tables=("edges", "nodes"))
    yield store, engine
    engine.close()


def _printed(query: str, capsys) -> str:
    """``hiersql sql closure --query QUERY --dialect postgres`` (unbounded)."""
    assert main(["sql", "closure", "--query", query, "--param", "max_depth=null", "--dialect", "postgres"]) == 0
    return capsys.readouterr().out


@pytest.mark.postgres
def test_the_printed_refresh_fails_on_a_cycle_in_postgres(germeval_in_postgres, capsys):
    """``hiersql sql closure --query closure_refresh --dialect postgres`` over GermEval's taxonomy with a
    cycle of three genres: PostgreSQL's cast error quotes the message naming them, in seconds."""
    import psycopg

    store, engine = germeval_in_postgres
    script = _printed("closure_refresh", capsys)
    # the printed refresh without a cycle: the closure hiersql computed
    assert sorted(engine.execute(script)) == sorted(store.con.execute("SELECT * FROM closure").fetchall())
    top, mid, low = store.con.execute(
        "SELECT c1.ancestor, c1.descendant, c2.descendant FROM closure c1 JOIN closure c2"
        " ON c2.ancestor = c1.descendant AND c2.distance = 1 JOIN nodes n ON n.label = c1.ancestor"
        " WHERE c1.distance = 1 AND n.depth = 1 ORDER BY 1, 2, 3 LIMIT 1").fetchall()[0]
    engine.conn.execute("INSERT INTO edges VALUES (%s, %s, NULL)", (low, top))
    started = time.monotonic()
    with pytest.raises(psycopg.errors.InvalidTextRepresentation, match=re.escape(
            f"hiersql: edges: a cycle through the nodes {', '.join(sorted([top, mid, low]))}")):
        engine.execute(script)
    assert time.monotonic() - started < 30


def _loaded_nodes(edges) -> dict[str, tuple]:
    """The nodes the loader builds from ``edges``: label → (depth, is_root, is_leaf, is_virtual)."""
    store = Store()
    store.load_taxonomy(Taxonomy.from_edges(edges))
    rows = store.con.execute("SELECT label, depth, is_root, is_leaf, is_virtual FROM nodes").fetchall()
    store.close()
    return {label: tuple(rest) for label, *rest in rows}


def test_the_nodes_macro_rebuilds_nodes_as_the_loader_does(tmp_path):
    """After an edge to a new node, hiersql_nodes() gives the loader's nodes of the edited taxonomy (depth,
    root, leaf, virtual); the old nodes keep their positions, a new one comes after them."""
    con = _installed(tmp_path / "hand.duckdb", Taxonomy.from_edges(HAND_EDGES))
    old = dict(con.execute("SELECT label, position FROM nodes").fetchall())
    con.execute("INSERT INTO edges VALUES ('D', 'G', NULL), ('G', 'H', NULL)")
    rows = con.execute("SELECT label, depth, is_root, is_leaf, is_virtual, position FROM hiersql_nodes()").fetchall()
    assert {label: tuple(rest[:4]) for label, *rest in rows} == _loaded_nodes([*HAND_EDGES, ("D", "G"), ("G", "H")])
    positions = {label: row[-1] for label, *row in rows}
    assert {k: positions[k] for k in old} == old
    assert (positions["G"], positions["H"]) == (max(old.values()) + 1, max(old.values()) + 2)
    assert con.execute("SELECT * FROM hiersql_root_edges()").fetchall() == []  # A is the user's root


def test_a_new_top_under_a_virtual_root_is_joined_as_the_loader_joins_it(tmp_path):
    forest = [("a", "b"), ("c", "d")]
    con = _installed(tmp_path / "forest.duckdb", Taxonomy.from_edges(forest))
    (root,), = con.execute("SELECT label FROM nodes WHERE is_virtual").fetchall()
    con.execute("INSERT INTO edges VALUES ('x', 'y', NULL)")
    assert con.execute("SELECT * FROM hiersql_root_edges()").fetchall() == [(root, "x", None)]
    con.execute("INSERT INTO edges SELECT * FROM hiersql_root_edges()")
    got = {label: tuple(rest) for label, *rest in con.execute(
        "SELECT label, depth, is_root, is_leaf, is_virtual FROM hiersql_nodes()").fetchall()}
    assert got == _loaded_nodes([*forest, ("x", "y")])


def test_a_node_no_path_joins_to_the_root_fails_naming_it(tmp_path):
    con = _installed(tmp_path / "hand.duckdb", Taxonomy.from_edges(HAND_EDGES))
    con.execute("INSERT INTO edges VALUES ('X', 'Y', NULL)")
    with pytest.raises(duckdb.Error, match="hiersql: edges: no path joins these nodes to the root A: X, Y"):
        con.execute("SELECT * FROM hiersql_nodes()").fetchall()


@pytest.mark.postgres
def test_the_printed_nodes_refresh_gives_the_loaders_nodes_in_postgres(germeval_in_postgres, capsys):
    """``hiersql sql closure --query nodes_refresh --dialect postgres`` over GermEval's taxonomy (a virtual
    root over its top genres) in PostgreSQL: the nodes hiersql loaded, every column."""
    store, engine = germeval_in_postgres
    got = sorted(engine.execute(_printed("nodes_refresh", capsys)))
    assert got == sorted(store.con.execute("SELECT * FROM nodes").fetchall())
    assert any(row[4] for row in got)  # the virtual root
