"""Taxonomies: reading, validation, the root, and the transitive closure.

A taxonomy is a set of directed edges ``parent -> child`` forming a tree or a DAG. Readers accept TSV
(``parent<TAB>child``, names may contain spaces), whitespace-separated pairs (HEMKit/BioASQ files), CSV with a
header, Parquet, a pandas DataFrame, a networkx DiGraph and a DuckDB table. Duplicate edges collapse (a
:class:`~hiersql.errors.DataWarning` gives their count); a self-loop or a cycle is an
:class:`~hiersql.errors.InputError` naming the nodes at fault.

Root (SPEC §1): if exactly one node has no parent it is the root; otherwise a virtual root is added above every
parentless node. The closure ``(ancestor, descendant, distance)`` is computed inside DuckDB by the recursive
query ``closure.sql`` (:meth:`hiersql.inputs.store.Store.load_taxonomy`).
"""

from __future__ import annotations

import gc
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import count, repeat
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import DataWarning, InputError
from .arguments import argument_error

if TYPE_CHECKING:
    import networkx as nx
    import pandas as pd

VIRTUAL_ROOT = "__root__"
NUL_IN_NAME = "node name holds a NUL byte"  # a text file's stray byte, no character of a name


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while reading: the edges, names and adjacency lists form no
    cycles, but with the collector on, allocating them triggers full rescans of every live object (reading a
    325,000-node taxonomy takes about a quarter less CPU without them)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class Edge(NamedTuple):
    """One edge ``parent -> child``; ``line`` is where it was read (for error messages)."""

    parent: str
    child: str
    weight: float | None = None
    line: int | None = None


def _warn_if_reversed(taxonomy: Taxonomy, tops: list[str]) -> None:
    """A :class:`~hiersql.errors.DataWarning` for a taxonomy that reads as a tree given child → parent (a
    reversed networkx graph, swapped columns): several parentless nodes and nodes with several parents, while
    every node has at most one child and a single node has none, so that its reverse is a tree."""
    several = sum(len(parents) > 1 for parents in taxonomy._parents.values())
    if len(tops) < 2 or not several or any(len(c) > 1 for c in taxonomy._children.values()):
        return
    leaves = [n for n in taxonomy.nodes if not taxonomy._children[n]]
    if len(leaves) == 1:
        warnings.warn(f"{taxonomy.source}: {len(tops)} parentless nodes and {several} nodes with several parents,"
                      f" but every node has at most one child: its reverse is a tree with root {leaves[0]!r}; are"
                      " the edges given child -> parent? (hiersql reads parent -> child)", DataWarning,
                      stacklevel=4)


@dataclass
class Taxonomy:
    """A validated tree or DAG of string-named nodes.

    Build one with :meth:`from_edges`, :meth:`from_file`, :meth:`from_dataframe`, :meth:`from_networkx` or
    :meth:`from_duckdb`. ``edges`` excludes the edges from a virtual root; :meth:`all_edges` includes them.
    A virtual root is added above the parentless nodes when there are several, or always with
    ``virtual_root=True`` (HEMKit's dummy root); afterwards ``virtual_root`` says whether one was added.
    """

    edges: list[Edge]
    source: str = "<edges>"
    virtual_root: bool = False
    root: str = field(init=False)
    nodes: list[str] = field(init=False)
    path_count: int = field(init=False)

    def __post_init__(self) -> None:
        self.edges = _dedupe(self.edges, self.source)
        if not self.edges:
            raise InputError("taxonomy has no edges", self.source)
        parents, children = [e.parent for e in self.edges], [e.child for e in self.edges]
        names: list[str] = [""] * (2 * len(parents))
        names[::2], names[1::2] = parents, children  # in edge order: parent, child, parent, ...
        self.nodes = list(dict.fromkeys(names))
        self._children: dict[str, list[str]] = {n: [] for n in self.nodes}
        self._parents: dict[str, list[str]] = {n: [] for n in self.nodes}
        below, above = self._children, self._parents
        for parent, child in zip(parents, children, strict=True):
            below[parent].append(child)
            above[child].append(parent)
        tops = [n for n in self.nodes if not self._parents[n]]
        _warn_if_reversed(self, tops)
        self.virtual_root = self.virtual_root or len(tops) != 1
        self.path_count, self._depth, self._level = _check_acyclic(self, tops, 1 if self.virtual_root else 0)
        if self.virtual_root:
            name = VIRTUAL_ROOT
            while name in self._children:
                name = f"_{name}_"
            self.root = name
            self._children[name] = tops
            self._parents[name] = []
            for top in tops:
                self._parents[top] = [name]
            self._depth[name] = self._level[name] = 0
        else:
            self.root = tops[0]

    # ------------------------------------------------------------------ constructors
    @classmethod
    @gc_paused()
    def from_edges(cls, pairs: Iterable[Any], source: str = "<edges>") -> Taxonomy:
        """From ``(parent, child)`` or ``(parent, child, weight)`` tuples; names are read as strings."""
        return cls._from_rows(pairs, source, numbered=True)

    @classmethod
    def _from_rows(cls, pairs: Iterable[Any], source: str, numbered: bool) -> Taxonomy:
        """:meth:`from_edges`; messages name an edge's row by its number when ``numbered`` (a file, a list), by
        the edge alone otherwise (a database table, whose rows have no order)."""
        if not _is_edges(pairs):
            raise argument_error("pairs", "must be (parent, child) or (parent, child, weight) tuples", pairs)
        edges = []
        for i, pair in enumerate(pairs, start=1):
            line = i if numbered else None
            if isinstance(pair, str | bytes) or not hasattr(pair, "__len__") or len(pair) not in (2, 3):
                raise InputError("an edge needs a parent and a child", source, line, pair)
            weight = _weight(pair[2], source, line) if len(pair) == 3 and pair[2] is not None else None
            edges.append(Edge(_name(pair[0], source, line), _name(pair[1], source, line), weight, line))
        return cls(edges, source)

    @classmethod
    @gc_paused()
    def from_file(cls, path: str | Path, format: str | None = None) -> Taxonomy:
        """Read ``path``: ``tsv`` (``parent<TAB>child[<TAB>weight]``), ``pairs`` (whitespace-separated,
        HEMKit), ``csv`` (header with ``parent``, ``child`` and optional ``weight``) or ``parquet``.

        Without ``format`` the suffix decides (``.csv``, ``.parquet``); a text file whose first line has a tab
        is TSV, otherwise whitespace pairs. Blank lines are skipped. A folder of Parquet part files (as Spark
        writes them) is read as a table (:meth:`from_table`).
        """
        if not isinstance(path, str | PathLike):
            raise argument_error("path", "must be a path (a str or a pathlib.Path)", path)
        path = Path(path)
        if path.is_dir() and format in (None, "parquet"):
            from .sources import is_parquet

            if is_parquet(path):
                return cls.from_table(path)
        if not path.is_file():
            raise InputError("taxonomy is a folder, not a file" if path.is_dir() else "taxonomy file not found", path)
        format = format or _guess_format(path)
        if format == "parquet":
            import duckdb

            try:
                rel = duckdb.read_parquet(str(path))
            except duckdb.Error as exc:
                raise InputError(f"cannot read Parquet file ({str(exc).splitlines()[0]})", path) from None
            return cls.from_relation(rel, str(path))
        if format == "csv":
            try:
                return cls.from_edges(_read_csv_edges(path), str(path))
            except UnicodeDecodeError as exc:
                raise InputError(f"taxonomy file is not UTF-8 text ({exc.reason})", path) from None
        if format not in ("tsv", "pairs"):
            raise InputError("unknown taxonomy format (tsv, pairs, csv, parquet)", path, value=format)
        return cls(read_text_edges(path, format), str(path))

    @classmethod
    def from_dataframe(
        cls, df: pd.DataFrame, parent: str = "parent", child: str = "child", weight: str | None = None,
        source: str = "<DataFrame>",
    ) -> Taxonomy:
        """From a DataFrame with a parent and a child column (and optionally a weight column)."""
        if not hasattr(df, "columns"):
            raise argument_error("df", "must be a pandas DataFrame", df)
        from .sources import check_column_names

        check_column_names(df.columns, source)
        wanted = [parent, child] + ([weight] if weight else [])
        missing = [c for c in wanted if c not in df.columns]
        if missing:
            raise InputError(f"taxonomy DataFrame lacks column(s) {missing}; it has {list(df.columns)}", source)
        return cls.from_edges(
            _checked_rows(df[wanted].itertuples(index=False, name=None), source, wanted), source
        )

    @classmethod
    def from_relation(cls, rel: Any, source: str) -> Taxonomy:
        """From a DuckDB relation with ``parent``, ``child`` (and optional ``weight``) columns."""
        cols = [c.lower() for c in rel.columns]
        if not {"parent", "child"} <= set(cols):
            raise InputError(f"taxonomy table needs columns parent, child; it has {rel.columns}", source)
        wanted = ["parent", "child"] + (["weight"] if "weight" in cols else [])
        import duckdb

        try:
            rows = rel.select(*[duckdb.ColumnExpression(rel.columns[cols.index(c)]) for c in wanted]).fetchall()
        except duckdb.Error as exc:  # a corrupt Parquet file fails here, when its pages are read
            raise InputError(f"cannot read taxonomy table ({str(exc).splitlines()[0]})", source) from None
        return cls.from_edges(_checked_rows(rows, source, wanted), source)

    @classmethod
    def from_table(cls, source: Any, parent: str | None = None, child: str | None = None) -> Taxonomy:
        """From a table source of :mod:`hiersql.inputs.sources` (``duckdb:PATH::table``, ``postgresql://…::table``,
        ``sql:SELECT …``, a Parquet or CSV file, a DataFrame, an Arrow table, a DuckDB relation), read where
        it is; ``parent`` and ``child`` name its columns (default ``parent`` and ``child``, and ``weight`` if
        there is one). Names may be text or integers."""
        from .sources import edge_rows

        rows, source_name, columns, keyed = edge_rows(source, parent, child)
        return cls._from_rows(_checked_rows(rows, source_name, columns, keyed), source_name, numbered=not keyed)

    @classmethod
    def from_source(cls, source: str | Path, parent: str | None = None, child: str | None = None) -> Taxonomy:
        """From a table reference (``duckdb:``, ``postgresql://``, ``sql:``) or a file with the columns ``parent``
        and ``child`` named (:meth:`from_table`), else from a file (:meth:`from_file`)."""
        from .sources import is_reference

        if parent or child or is_reference(source):
            return cls.from_table(source, parent=parent, child=child)
        return cls.from_file(source)

    @classmethod
    def from_duckdb(cls, con: Any, table: str) -> Taxonomy:
        """From a table (or view) of a DuckDB connection with ``parent`` and ``child`` columns."""
        return cls.from_relation(con.table(table), table)

    @classmethod
    def from_networkx(cls, graph: nx.DiGraph, weight: str | None = None) -> Taxonomy:
        """From a networkx DiGraph; edge attribute ``weight`` (if named) becomes the edge weight."""
        if not hasattr(graph, "is_directed"):
            raise argument_error("graph", "must be a networkx DiGraph", graph)
        if not graph.is_directed():
            raise InputError("taxonomy graph must be a directed graph (networkx.DiGraph)", "<networkx>")
        if graph.number_of_edges() == 0:
            raise InputError("taxonomy has no edges", "<networkx>")
        rows = ((u, v, d.get(weight) if weight else None) for u, v, d in graph.edges(data=True))
        return cls.from_edges(rows, "<networkx>")

    # ------------------------------------------------------------------ structure
    def all_edges(self) -> list[Edge]:
        """The edges including those from the virtual root."""
        if not self.virtual_root:
            return list(self.edges)
        return [Edge(self.root, top) for top in self._children[self.root]] + self.edges

    def all_nodes(self) -> list[str]:
        """Every node, the virtual root first if there is one."""
        return [self.root, *self.nodes] if self.virtual_root else list(self.nodes)

    def children(self, node: str) -> list[str]:
        return list(self._children[node])

    def parents(self, node: str) -> list[str]:
        return list(self._parents[node])

    def is_leaf(self, node: str) -> bool:
        return not self._children[node]

    def __contains__(self, node: object) -> bool:
        return node in self._children

    def __len__(self) -> int:
        return len(self._children)

    @property
    def leaves(self) -> list[str]:
        return [n for n in self.nodes if not self._children[n]]

    @property
    def is_tree(self) -> bool:
        """True when every node has at most one parent."""
        return all(len(p) <= 1 for p in self._parents.values())

    @property
    def depth(self) -> int:
        """Length of the longest shortest path from the root (the root has depth 0)."""
        return max(self.depths().values())

    def depths(self) -> dict[str, int]:
        """Shortest distance from the root of every node (a new dict; computed with the cycle check)."""
        return dict(self._depth)

    def levels(self) -> dict[str, int]:
        """Longest distance from the root of every node, its topological level: every parent of a node is on
        an earlier level (a new dict; computed with the cycle check)."""
        return dict(self._level)

    @property
    def has_weights(self) -> bool:
        return any(e.weight is not None for e in self.edges)

    @property
    def graph(self) -> nx.DiGraph:
        """A networkx DiGraph of all edges (virtual root included), with ``weight`` attributes."""
        import networkx as nx

        g = nx.DiGraph()
        g.add_nodes_from(self.all_nodes())
        g.add_edges_from((e.parent, e.child, {"weight": e.weight}) for e in self.all_edges())
        return g

    def __repr__(self) -> str:
        kind = "tree" if self.is_tree else "DAG"
        return (f"Taxonomy({kind}, {len(self)} nodes, {len(self.edges)} edges, root={self.root!r}"
                f"{' (virtual)' if self.virtual_root else ''}, source={self.source!r})")


# ---------------------------------------------------------------------- helpers
def _name(value: Any, source: str, line: int) -> str:
    if value is None or (isinstance(value, float) and value != value):
        raise InputError("missing node name (None/NaN)", source, line, value)
    text = str(value).strip()
    if not text:
        raise InputError("empty node name", source, line, value)
    if "\0" in text:
        raise InputError(NUL_IN_NAME, source, line, value)
    return text


def _checked_rows(rows: Iterable[tuple], source: str, columns: list[str], keyed: bool = False) -> Iterator[tuple]:
    """``rows`` (parent, child[, weight]) with no missing value; a missing one is an error naming its row: by
    number, or for a ``keyed`` source (a database table) by the edge's other name."""
    for i, row in enumerate(rows, start=1):
        for k, (col, val) in enumerate(zip(columns, row, strict=True)):
            if val is None or (isinstance(val, float) and val != val):
                if not keyed:
                    raise InputError(f"missing value (None/NaN) in column {col!r}", source, i, val)
                other = 1 if k == 0 else 0  # the parent's row is named by its child, the others' by the parent
                raise InputError("missing value (NULL or NaN)", f"{source}, column {col!r}, {columns[other]}="
                                 f"{row[other]!r}", value=val)
        yield row


def _guess_format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return "parquet"
    if suffix == ".csv":
        return "csv"
    with path.open(encoding="utf-8-sig", errors="replace") as fh:
        for line in fh:
            if line.strip():
                return "tsv" if "\t" in line.strip("\r\n") else "pairs"
    raise InputError("taxonomy file is empty", path)


def read_text_edges(path: Path, format: str, weights: bool = True) -> list[Edge]:
    """The edges of a ``tsv`` or ``pairs`` file as read, each with its line number, before any validation
    (:class:`Taxonomy` dedupes and checks them; :func:`hiersql.api.hemkit.hemkit_taxonomy` adds HEMKit's dummy
    root first). The common case (every line two plain names) is split in bulk; any other file goes through
    :func:`_checked_text_edges`, which names the line at fault. Without ``weights`` (HEMKit's hierarchies), a
    third field is an error, not a weight."""
    try:
        with path.open(encoding="utf-8-sig") as fh:  # universal newlines; a byte order mark is no name
            text = fh.read()
    except UnicodeDecodeError as exc:
        raise InputError(f"taxonomy file is not UTF-8 text ({exc.reason})", path) from None
    lines = text.split("\n")
    if "\0" in text:  # (a label file's NUL is a label not in the taxonomy: the taxonomy's is named here)
        line = text.count("\n", 0, text.index("\0")) + 1
        raise InputError(NUL_IN_NAME, path, line, lines[line - 1])
    if lines and lines[-1] == "":
        lines.pop()
    if not any(line.strip() for line in lines):
        raise InputError("taxonomy file is empty", path)
    if format == "tsv":
        fields = [line.split("\t") for line in lines]
        plain = all(len(f) == 2 and f[0] and f[1] and f[0] == f[0].strip() and f[1] == f[1].strip()
                    for f in fields)
    else:
        fields = [line.split() for line in lines]
        plain = all(len(f) == 2 for f in fields)
    if plain:  # Edge's own __new__ is Python; tuple.__new__ mapped over zip builds the same tuples in C
        return list(map(tuple.__new__, repeat(Edge),
                        zip([f[0] for f in fields], [f[1] for f in fields], repeat(None), count(1))))
    return list(_checked_text_edges(path, format, lines, weights))


def _checked_text_edges(path: Path, format: str, lines: list[str], weights: bool = True) -> Iterator[Edge]:
    """Line by line: blank lines skipped, TSV fields stripped and trailing tabs dropped, an optional weight;
    a wrong field count or an empty name is an :class:`InputError` naming the line."""
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        fields = line.split("\t") if format == "tsv" else line.split()
        if format == "tsv":
            fields = [f.strip() for f in fields]
            while len(fields) > 2 and fields[-1] == "":
                fields.pop()  # trailing tabs
        if len(fields) not in ((2, 3) if weights else (2,)):
            expected = "2 fields (parent, child)" + (" or 3 (parent, child, weight)" if weights else "")
            raise InputError(f"expected {expected}, found {len(fields)}", path, i, line)
        if not fields[0] or not fields[1]:
            raise InputError("empty node name", path, i, line)
        yield Edge(fields[0], fields[1], _weight(fields[2], path, i) if len(fields) == 3 else None, i)


def _weight(text: object, source: Path | str, line: int) -> float:
    try:
        value = float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError("edge weight is not a number", source, line, text) from None
    if value != value:
        raise InputError("edge weight is NaN", source, line, text)
    return value


def _read_csv_edges(path: Path) -> Iterator[tuple]:
    import csv

    with path.open(encoding="utf-8-sig", newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            raise InputError("taxonomy file is empty", path)
        cols = [h.strip().lower() for h in header]
        if "parent" not in cols or "child" not in cols:
            raise InputError("CSV taxonomy needs a header with columns parent, child", path, 1, header)
        pi, ci = cols.index("parent"), cols.index("child")
        wi = cols.index("weight") if "weight" in cols else None
        n = 0
        for i, row in enumerate(reader, start=2):
            if not row:
                continue
            if len(row) != len(cols):
                raise InputError(f"expected {len(cols)} fields, found {len(row)}", path, i, ",".join(row))
            n += 1
            weight = _weight(row[wi], path, i) if wi is not None and row[wi].strip() else None
            yield (_name(row[pi], str(path), i), _name(row[ci], str(path), i), weight)
        if n == 0:
            raise InputError("taxonomy file has a header but no edges", path)


def _dedupe(edges: list[Edge], source: str) -> list[Edge]:
    """The edges, each ``(parent, child)`` once (a :class:`~hiersql.errors.DataWarning` gives the count and
    the first repeat); a self-loop, or an edge repeated with another weight, is an error."""
    seen: dict[tuple[str, str], Edge] = {}
    repeats: list[Edge] = []
    for e in edges:
        if e.parent == e.child:
            raise InputError("self-loop: a node cannot be its own parent", source, e.line, e.parent)
        key = (e.parent, e.child)
        if key in seen:
            if seen[key].weight != e.weight and e.weight is not None:
                raise InputError(
                    f"edge given twice with different weights ({seen[key].weight} and {e.weight})",
                    source, e.line, f"{e.parent} -> {e.child}",
                )
            repeats.append(e)
            continue
        seen[key] = e
    if repeats:
        first = repeats[0]
        at = f"line {first.line}, " if first.line else ""
        warnings.warn(f"{source}: {len(repeats)} repeated edge(s) counted once (first: {at}"
                      f"{first.parent!r} -> {first.child!r})", DataWarning, stacklevel=4)
    return list(seen.values())


def _check_acyclic(tax: Taxonomy, tops: list[str], top_depth: int
                   ) -> tuple[int, dict[str, int], dict[str, int]]:
    """Kahn's algorithm from the parentless nodes ``tops``; on failure, name the nodes of one cycle (found with
    networkx).

    On the way, in topological order, it counts the upward paths from every node, the empty path included
    (``P(n) = 1 + Σ P(p)`` over the parents ``p`` of ``n``, summed over the nodes, the virtual root aside: the
    rows of a closure walk that keeps every path, by which :meth:`hiersql.inputs.store.Store.load_taxonomy` chooses
    its closure query), the depths (``depth(n) = 1 + min depth(p)``, ``top_depth`` for ``tops``) and the
    levels (``level(n) = 1 + max level(p)``, ``top_depth`` for ``tops``). Returns the three.
    """
    children = tax._children
    indegree = {n: len(p) for n, p in tax._parents.items()}
    paths = dict.fromkeys(indegree, 1)
    depth = dict.fromkeys(tops, top_depth)
    level = dict.fromkeys(indegree, top_depth)
    queue = list(tops)
    seen = 0
    while queue:
        node = queue.pop()
        seen += 1
        below, node_paths, after = depth[node] + 1, paths[node], level[node] + 1
        for child in children[node]:
            paths[child] += node_paths
            if below < depth.get(child, below + 1):
                depth[child] = below
            if after > level[child]:
                level[child] = after
            indegree[child] -= 1
            if indegree[child] == 0:
                queue.append(child)
    if seen == len(indegree):
        return sum(paths.values()), depth, level
    import networkx as nx

    stuck = [n for n, d in indegree.items() if d > 0]
    sub = nx.DiGraph((e.parent, e.child) for e in tax.edges if e.parent in set(stuck))
    cycle = [u for u, _ in nx.find_cycle(sub)]
    lines = {(e.parent, e.child): e.line for e in tax.edges}
    first_line = lines.get((cycle[0], cycle[1 % len(cycle)]))
    raise InputError(
        "taxonomy has a cycle", tax.source, first_line, " -> ".join([*cycle, cycle[0]])
    )


TAXONOMY_FORMS = ("a Taxonomy, a path, a table reference, edges (parent, child), a DataFrame or a networkx"
                  " DiGraph")


def read_taxonomy(source: Taxonomy | str | Path | Callable[[], Taxonomy]) -> Taxonomy:
    """The taxonomy a store loads: a Taxonomy as it is, a function's result (called once), else
    :meth:`Taxonomy.from_source` (a file or a table reference)."""
    if isinstance(source, Taxonomy):
        return source
    return source() if callable(source) else Taxonomy.from_source(source)


def as_taxonomy(taxonomy: Any, parameter: str = "taxonomy") -> Taxonomy:
    """A :class:`~hiersql.inputs.taxonomy.Taxonomy` from a Taxonomy, a path, a table reference
    (:meth:`Taxonomy.from_table`: ``duckdb:PATH::table``, ...), a networkx DiGraph, a DataFrame with
    ``parent``/``child`` columns, or an iterable of ``(parent, child)`` pairs (the forms the one-shot functions
    and :class:`~hiersql.api.evaluator.Evaluator` take); anything else is an
    :class:`~hiersql.options.OptionError` naming ``parameter`` and the value."""
    if isinstance(taxonomy, Taxonomy):
        return taxonomy
    from .sources import is_reference

    if is_reference(taxonomy):  # duckdb:PATH::table, postgresql://...::table, sql:SELECT ...
        return Taxonomy.from_table(taxonomy)
    if isinstance(taxonomy, str | PathLike):
        return Taxonomy.from_file(taxonomy)
    if hasattr(taxonomy, "is_directed"):
        return Taxonomy.from_networkx(taxonomy)
    if hasattr(taxonomy, "columns"):
        return Taxonomy.from_dataframe(taxonomy)
    if _is_edges(taxonomy):
        return Taxonomy.from_edges(taxonomy)
    raise argument_error(parameter, f"must be {TAXONOMY_FORMS}", taxonomy)


def _is_edges(pairs: Any) -> bool:
    """Whether ``pairs`` may be a collection of edges (each then checked by :meth:`Taxonomy.from_edges`)."""
    return isinstance(pairs, Iterable) and not isinstance(pairs, str | bytes | Mapping)
