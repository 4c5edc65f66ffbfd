"""Taxonomy readers, validation, the root, and the closure computed in SQL checked against networkx."""

from __future__ import annotations

import networkx as nx
import pandas as pd
import pytest

from hiersql import InputError, Store, Taxonomy, sqlfiles
from hiersql.errors import DataWarning
from hiersql.inputs import closure
from hiersql.inputs.closure import walks_every_path
from hiersql.inputs.taxonomy import VIRTUAL_ROOT


def closure_of(tax: Taxonomy) -> dict[tuple[str, str], int]:
    """The store's ``closure``, after checking that ``node_closure`` holds the same rows on positions and that
    a store loaded with ``closure_view=True`` reads the same rows from its view."""
    store = Store()
    store.load_taxonomy(tax)
    closure = {(a, d): dist for a, d, dist in store.con.execute("SELECT * FROM closure").fetchall()}
    assert node_closure_of(store) == closure
    viewed = Store()
    viewed.load_taxonomy(tax, closure_view=True)
    rows = viewed.con.execute("SELECT * FROM closure").fetchall()
    assert len(rows) == len(closure) and {(a, d): dist for a, d, dist in rows} == closure
    return closure


def networkx_closure(graph: nx.DiGraph) -> dict[tuple[str, str], int]:
    reverse = graph.reverse(copy=False)
    out = {}
    for node in graph.nodes:
        for anc, dist in nx.single_source_shortest_path_length(reverse, node).items():
            out[(anc, node)] = dist
    return out


def test_tsv_names_with_spaces(tmp_path):
    path = tmp_path / "t.tsv"
    path.write_text("Literatur & Unterhaltung\tRomane & Erzählungen\nRomane & Erzählungen\tJunge Literatur\n")
    tax = Taxonomy.from_file(path)
    assert tax.root == "Literatur & Unterhaltung" and not tax.virtual_root
    assert tax.children("Romane & Erzählungen") == ["Junge Literatur"]


def test_plain_and_messy_text_files_give_the_same_edges(tmp_path):
    # Plain files are split in bulk; blank lines, CR LF ends, padded names and trailing tabs take the
    # line-by-line reader. Both give the same edges with their own line numbers.
    plain, messy, pairs = tmp_path / "plain.tsv", tmp_path / "messy.tsv", tmp_path / "pairs.txt"
    plain.write_text("r\ta\nr\tb b\na\tc\n")
    messy.write_bytes(b"r\ta\r\n\r\n r \tb b\t\t\r\na\tc")
    pairs.write_text("r a\r\nr b\na c\n")
    read = {path: Taxonomy.from_file(path, "tsv" if path.suffix == ".tsv" else None) for path in (plain, messy)}
    assert [e[:3] for e in read[plain].edges] == [e[:3] for e in read[messy].edges] == [
        ("r", "a", None), ("r", "b b", None), ("a", "c", None)]
    assert [e.line for e in read[plain].edges] == [1, 2, 3]
    assert [e.line for e in read[messy].edges] == [1, 3, 4]
    assert [(e.parent, e.child, e.line) for e in Taxonomy.from_file(pairs).edges] == [
        ("r", "a", 1), ("r", "b", 2), ("a", "c", 3)]


def test_whitespace_pairs_detected_and_duplicates_collapse(tmp_path):
    path = tmp_path / "h.txt"
    path.write_text("10 20\n10 20 \n20 1\n\n")
    tax = Taxonomy.from_file(path)
    assert [(e.parent, e.child) for e in tax.edges] == [("10", "20"), ("20", "1")]
    assert tax.root == "10" and tax.depth == 2 and tax.leaves == ["1"]


def test_csv_parquet_dataframe_networkx_duckdb_agree(tmp_path):
    edges = [("r", "a"), ("r", "b"), ("a", "c"), ("b", "c")]
    df = pd.DataFrame(edges, columns=["parent", "child"])
    csv = tmp_path / "t.csv"
    df.to_csv(csv, index=False)
    parquet = tmp_path / "t.parquet"
    df.to_parquet(parquet)
    store = Store()
    store.con.execute("CREATE TABLE my_edges AS SELECT * FROM df")
    readers = [
        Taxonomy.from_edges(edges), Taxonomy.from_file(csv), Taxonomy.from_file(parquet),
        Taxonomy.from_dataframe(df), Taxonomy.from_networkx(nx.DiGraph(edges)),
        Taxonomy.from_duckdb(store.con, "my_edges"),
    ]
    for tax in readers:
        assert sorted((e.parent, e.child) for e in tax.edges) == sorted(edges)
        assert tax.root == "r" and not tax.is_tree and tax.depth == 2


def test_ints_are_read_as_strings():
    tax = Taxonomy.from_edges([(1, 2), (1, 3)])
    assert tax.root == "1" and tax.nodes == ["1", "2", "3"]


def test_virtual_root_above_parentless_nodes():
    tax = Taxonomy.from_edges([("a", "a1"), ("b", "b1")])
    assert tax.virtual_root and tax.root == VIRTUAL_ROOT
    assert tax.children(VIRTUAL_ROOT) == ["a", "b"]
    assert tax.depths() == {VIRTUAL_ROOT: 0, "a": 1, "b": 1, "a1": 2, "b1": 2}
    store = Store()
    store.load_taxonomy(tax)
    rows = store.con.execute("SELECT label, depth, is_root, is_virtual FROM nodes WHERE is_root").fetchall()
    assert rows == [(VIRTUAL_ROOT, 0, True, True)]


def test_virtual_root_name_does_not_clash():
    tax = Taxonomy.from_edges([(VIRTUAL_ROOT, "x"), ("b", "y")])
    assert tax.virtual_root and tax.root != VIRTUAL_ROOT and tax.root not in tax.nodes


def test_cycle_names_its_nodes():
    with pytest.raises(InputError, match=r"taxonomy has a cycle: 'b -> c -> d -> b'"):
        Taxonomy.from_edges([("a", "b"), ("b", "c"), ("c", "d"), ("d", "b")])


def test_self_loop_names_line(tmp_path):
    path = tmp_path / "t.tsv"
    path.write_text("a\tb\nc\tc\n")
    with pytest.raises(InputError, match=r"t.tsv:2: self-loop"):
        Taxonomy.from_file(path)


def test_undirected_graph_rejected():
    with pytest.raises(InputError, match="directed"):
        Taxonomy.from_networkx(nx.Graph([("a", "b")]))


def test_closure_small_dag_by_hand():
    # r -> a -> c, r -> b -> c, r -> c: c is at distance 1 from r (shortest path), 1 from a and b.
    tax = Taxonomy.from_edges([("r", "a"), ("r", "b"), ("a", "c"), ("b", "c"), ("r", "c")])
    assert closure_of(tax) == {
        ("r", "r"): 0, ("a", "a"): 0, ("b", "b"): 0, ("c", "c"): 0,
        ("r", "a"): 1, ("r", "b"): 1, ("r", "c"): 1, ("a", "c"): 1, ("b", "c"): 1,
    }


def test_path_count_by_hand():
    # r -> a -> c, r -> b -> c, r -> c: upward paths from r: 1, a: 2, b: 2, c: 1 + 2 + 2 + 1 = 6.
    tax = Taxonomy.from_edges([("r", "a"), ("r", "b"), ("a", "c"), ("b", "c"), ("r", "c")])
    assert tax.path_count == 11


def ladder(rungs: int) -> Taxonomy:
    """A chain of diamonds: 2**rungs paths from the bottom node to the top, 3 * rungs + 1 nodes."""
    edges = []
    for i in range(rungs):
        edges += [(f"t{i}", f"l{i}"), (f"t{i}", f"r{i}"), (f"l{i}", f"t{i + 1}"), (f"r{i}", f"t{i + 1}")]
    return Taxonomy.from_edges(edges)


def node_closure_of(store: Store) -> dict[tuple[str, str], int]:
    """``node_closure`` read back on names."""
    rows = store.con.execute(
        "SELECT a.label, d.label, c.distance FROM node_closure c JOIN nodes a ON a.position = c.ancestor"
        " JOIN nodes d ON d.position = c.descendant"
    ).fetchall()
    assert len(rows) == store.con.execute("SELECT count(*) FROM node_closure").fetchone()[0]
    return {(a, d): dist for a, d, dist in rows}


def test_both_closure_walks_give_networkx_closure():
    # 24 rungs: 2**24 paths from the bottom alone, so the store must take the deduplicating walk.
    deep = ladder(24)
    assert deep.path_count > 2**24
    assert not walks_every_path(deep, deep.depths())
    assert closure_of(deep) == networkx_closure(deep.graph)
    shallow = ladder(3)
    assert walks_every_path(shallow, shallow.depths())
    expected = networkx_closure(shallow.graph)
    assert closure_of(shallow) == expected
    # the safe walk run on its own gives the same rows
    store = Store()
    store.load_taxonomy(shallow)
    rows = store.con.execute(sqlfiles.queries("closure")["closure"], {"max_depth": None}).fetchall()
    assert {(a, d): dist for a, d, dist in rows} == expected


def test_levels_are_longest_distances_from_the_root():
    # r -> a -> b -> c and r -> c: c is at depth 1 (its shortest path) but on level 3 (after its parent b)
    tax = Taxonomy.from_edges([("r", "a"), ("a", "b"), ("b", "c"), ("r", "c"), ("c", "d")])
    assert tax.levels() == {"r": 0, "a": 1, "b": 2, "c": 3, "d": 4}
    assert tax.depths() == {"r": 0, "a": 1, "b": 2, "c": 1, "d": 2}
    forest = Taxonomy.from_edges([("x", "y"), ("z", "y")])  # under a virtual root
    assert forest.levels() == {forest.root: 0, "x": 1, "z": 1, "y": 2}


@pytest.mark.parametrize("max_depth", [None, 0, 1, 2])
def test_the_level_walk_gives_networkx_closure(monkeypatch, max_depth):
    """The level walk taken for every taxonomy (it is for those of many paths): on a DAG whose nodes have
    parents on several levels, under a virtual root, whole and up to ``max_depth`` edges."""
    monkeypatch.setattr(closure, "PATHS_PER_CLOSURE_ROW", -1)
    tax = Taxonomy.from_edges([("r", "a"), ("a", "b"), ("b", "c"), ("r", "c"), ("c", "d"), ("a", "d"),
                               ("s", "d"), ("s", "e"), ("e", "f"), ("d", "f")])
    assert not walks_every_path(tax, tax.depths())
    store = Store()
    store.load_taxonomy(tax, max_depth=max_depth)
    expected = {pair: d for pair, d in networkx_closure(tax.graph).items() if max_depth is None or d <= max_depth}
    assert node_closure_of(store) == expected
    assert {(a, d): n for a, d, n in store.con.execute("SELECT * FROM closure").fetchall()} == expected


def test_the_level_walk_on_mesh(monkeypatch, data_dir):
    monkeypatch.setattr(closure, "PATHS_PER_CLOSURE_ROW", -1)
    tax = Taxonomy.from_file(data_dir / "mesh" / "mesh_hierarchy_int.txt")
    assert closure_of(tax) == networkx_closure(tax.graph)


def test_closure_equals_networkx_on_germeval(data_dir):
    tax = Taxonomy.from_file(data_dir / "germeval2019" / "hierarchy.txt")
    assert tax.is_tree and tax.virtual_root and len(tax.children(tax.root)) == 8
    assert closure_of(tax) == networkx_closure(tax.graph)


def test_closure_equals_networkx_on_mesh(data_dir):
    tax = Taxonomy.from_file(data_dir / "mesh" / "mesh_hierarchy_int.txt")
    assert len(tax) == 27900 and len(tax.edges) == 37796 and tax.root == "1" and not tax.is_tree
    assert sum(len(tax.parents(n)) > 1 for n in tax.nodes) == 8072
    ours = closure_of(tax)
    assert ours == networkx_closure(tax.graph)
    # depths in the nodes table are the closure distances from the root
    depths = tax.depths()
    assert all(ours[(tax.root, n)] == d for n, d in depths.items())


def test_a_tree_given_child_to_parent_is_named_as_likely_reversed():
    """The reverse of a tree (a networkx graph's ``reverse()``): three parentless nodes, two with two parents,
    every node at most one child: one warning naming the tree's root; the tree itself, a forest and a DAG
    with a node of two children get none."""
    import warnings

    tree = nx.DiGraph([("a", "b"), ("a", "c"), ("b", "d"), ("b", "e"), ("c", "f")])
    with pytest.warns(DataWarning, match=r"^<networkx>: 3 parentless nodes and 2 nodes with several parents, but"
                                         r" every node has at most one child: its reverse is a tree with root 'a'"):
        Taxonomy.from_networkx(tree.reverse())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Taxonomy.from_networkx(tree)
        Taxonomy.from_edges([("a", "b"), ("c", "d")])  # a forest: two roots, no node with two parents
        Taxonomy.from_edges([("a", "c"), ("b", "c"), ("c", "d"), ("c", "e")])  # c: two parents, two children
