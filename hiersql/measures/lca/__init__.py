"""Lowest-common-ancestor precision, recall and F1 (PLCA, RLCA, FLCA).

``lca.sql`` computes, for every instance of every system at once, the labels left after ancestor removal,
the options of every label (its nearest labels of the other set and the LCAs on the shortest meetings), the
nodes of the shortest paths and the extended graphs. The minimal graphs of Problem 2 need a choice (which
LCAs, which option per label, which shortest path); only the instances where a choice exists
(``lca_open_instances``) leave SQL, and are solved here:

- ``lca_graph="extended"``: every option and every shortest path (Kosmopoulos Fig. 9);
- ``lca_graph="greedy"``: the paper's Algorithm 1 (not HEMKit's variant): LCAs sorted by the number of labels
  they connect, added until every label is covered, then redundant ones removed; each label then takes the
  option and shortest paths that add the fewest new nodes, labels with the fewest choices first;
- ``lca_graph="hemkit"``: what HEMKit computes, including its departures from the paper
  (:mod:`hiersql.measures.lca.hemkit`, every instance, compiled; it reads the labels and the hierarchy, none of the
  stages above). The HEMKit command runs that step alone (:data:`HEMKIT_PLAN`).
- ``lca_graph="optimal"``: the exact optimum of Problem 2 with OR-Tools CP-SAT: first the minimum number of
  LCAs, then, with that number fixed, the maximum FLCA (a ratio, maximised by Dinkelbach's iteration). An
  instance that does not finish within ``LCA_TIME_LIMIT`` seconds (or has too many shortest paths) falls back
  to the greedy graphs; a :class:`~hiersql.errors.DataWarning` gives the count.

With ``Gt``, ``Gp`` the node sets of the graphs (the root counted only with ``include_root``)::

    PLCA = |Gt ∩ Gp| / |Gp|     RLCA = |Gt ∩ Gp| / |Gt|     FLCA = 2·PLCA·RLCA / (PLCA + RLCA)

References
----------
Kosmopoulos, Partalas, Gaussier, Paliouras, Androutsopoulos (2015), "Evaluation measures for hierarchical
classification: a unified view and novel approaches", §2.4.2, Definitions 1-5, Problem 2, Algorithm 1.
SPEC §4.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from ... import sqlfiles
from ...engines import DuckDBEngine, Engine
from ...engines.oneshot import score
from ...errors import DataWarning
from ...inputs.taxonomy import gc_paused
from ...plan import FamilyPlan, Measure, Python, Sql
from .. import REGISTRY, Options, Row, as_engine
from . import hemkit as lca_hemkit

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

    from ...inputs.store import Store

METRICS = REGISTRY["lca"]
LCA_TIME_LIMIT = 10.0  # seconds per instance for the exact solver
MAX_PATHS = 64  # shortest paths enumerated per (label, LCA) before the exact solver gives up
BATCH = 20_000  # instances with a choice fetched into Python at a time
OTHER = {"t": "p", "p": "t"}

Node = int  # a node's position (nodes.position), or its rank in name order while the solvers run
BEYOND: Node = -1  # the virtual ancestor beyond max_distance, in the stages and the solvers
Path = frozenset[Node]


# ---------------------------------------------------------------------------------------------- SQL side
def _params(options: Options, store: Store) -> dict[str, object]:
    return {**sql_params(options), "beyond": beyond_name(store)}


def sql_params(options: Options) -> dict[str, object]:
    """The parameters of ``lca.sql`` (the virtual ancestor beyond ``max_distance`` named ``__beyond__``:
    :func:`graphs` renames it when a node has that name; ``multi_parent`` true: shortest paths may branch,
    as in any DAG)."""
    return {"include_root": bool(options.include_root), "max_distance": options.max_distance,
            "zero_division": float(options.zero_division), "beyond": "__beyond__", "multi_parent": True}


def beyond_name(store: Store) -> str:
    """A node name for the virtual common ancestor beyond ``max_distance`` that is not a taxonomy node."""
    name = "__beyond__"
    while store.con.execute("SELECT count(*) FROM nodes WHERE label = $n", {"n": name}).fetchall()[0][0]:
        name = f"_{name}_"
    return name


def _batches(con: duckdb.DuckDBPyConnection) -> list[int]:
    """The batches of ``lca_open_instances`` (all of them, or those of one partition of the step), in order."""
    return [batch for (batch,) in con.execute("SELECT DISTINCT batch FROM lca_open_instances ORDER BY batch"
                                              ).fetchall()]


def _solved(con: duckdb.DuckDBPyConnection, options: Options, ignore: Node | None, batches: Iterable[int],
            multi_parent: bool = True) -> Iterator[tuple[int, dict[str, set[Node]]]]:
    """Minimal graphs (``options.lca_graph`` greedy or optimal) of the instances where a choice exists (the
    tables ``lca_open_*`` of connection ``con``, the given ``batches``): ``(inst, {"t": Gt, "p": Gp})``
    (``inst`` the number of ``lca_instances``, nodes by their rank in name order, :func:`_rank_nodes`, which
    must have made ``lca_node_rank``), fetched and solved a batch at a time to bound memory; a warning counts
    the instances where the exact solver fell back to the greedy graphs. ``ignore``: the node (rank) the
    exact solver does not count (the root unless ``include_root``); ``multi_parent`` false: the taxonomy is a
    tree, every path is the only one (no links to read)."""
    fallbacks = 0
    with gc_paused():  # the fetched options and paths form no cycles: no need to rescan the heap
        for batch in batches:
            arrays = _batch(con, batch, multi_parent)
            instances, _, ptr, nodes = _greedy(arrays, ignore, want_nodes=True)
            greedy = {int(inst): {"t": set(nodes[ptr[2 * i]:ptr[2 * i + 1]].tolist()),
                                  "p": set(nodes[ptr[2 * i + 1]:ptr[2 * i + 2]].tolist())}
                      for i, inst in enumerate(instances)}
            if options.lca_graph != "optimal":
                yield from greedy.items()
                continue
            for key, inst in _instances(arrays).items():
                solved = _optimal(inst, set() if ignore is None else {ignore})
                fallbacks += solved is None
                yield key, greedy[key] if solved is None else solved
    if fallbacks:
        warnings.warn(f"lca_graph='optimal': {fallbacks} instance(s) fell back to the greedy graphs (time"
                      f" limit {LCA_TIME_LIMIT} s or more than {MAX_PATHS} shortest paths)", DataWarning,
                      stacklevel=3)


def _rank_nodes(con: duckdb.DuckDBPyConnection, root: Node) -> Node:
    """Make ``lca_node_rank(position, rank)``, each node's rank in name order (:data:`BEYOND` its own), by
    which the solvers number the nodes: they break ties by node, so by name, and the graphs do not depend on
    the order of the taxonomy's rows (a database table has none). Returns the rank of position ``root``."""
    con.execute("CREATE OR REPLACE TEMP TABLE lca_node_rank AS SELECT position, row_number() OVER (ORDER BY label)"
                " AS rank FROM nodes UNION ALL SELECT $b, $b", {"b": BEYOND})
    return con.execute("SELECT rank FROM lca_node_rank WHERE position = $r", {"r": root}).fetchall()[0][0]


def _stage_open(engine: DuckDBEngine, params: dict[str, object], done: set[str]) -> list[int]:
    """Stage the options, path nodes and path links of the instances with a choice, by batch; returns the
    batches."""
    params = {**params, "batch_size": BATCH}
    for name in ("lca_multi_paths", "lca_open_instances", "lca_open_options", "lca_open_ends", "lca_open_nodes",
                 "lca_open_links"):
        engine.stage("lca", name, params, done)
    return _batches(engine.con)


def graphs(store: Store, options: Options) -> dict[tuple[str, str], dict[str, set[str]]]:
    """The LCA graphs of every (system, instance_id) with labels: ``{"t": Gt nodes, "p": Gp nodes}`` (the root
    included when it is on a path, whatever ``include_root`` says)."""
    params = _params(options, store)
    if options.lca_graph == "hemkit":
        return lca_hemkit.store_graph_names(store.con, params["max_distance"], params["beyond"])
    engine, done = DuckDBEngine(store), set()
    for name in (*sqlfiles.dependencies("lca", "lca_extended_names"), "lca_extended_names"):
        engine.stage("lca", name, params, done)  # each a table: the solvers read lca_instances too
    out: dict[tuple[str, str], dict[str, set[str]]] = defaultdict(lambda: {"t": set(), "p": set()})
    for system, instance, side, v in store.con.execute("SELECT * FROM lca_extended_names").fetchall():
        out[(system, instance)][side].add(v)
    if options.lca_graph != "extended":
        keys = {inst: (system, instance) for inst, system, instance in store.con.execute(
            "SELECT inst, system, instance_id FROM lca_instances").fetchall()}
        batches = _stage_open(engine, params, done)
        root = _rank_nodes(store.con, store.con.execute("SELECT position FROM nodes WHERE is_root").fetchall()[0][0])
        names = dict(store.con.execute("SELECT r.rank, n.label FROM lca_node_rank AS r JOIN nodes AS n"
                                       " USING (position)").fetchall())
        names[BEYOND] = params["beyond"]
        for inst, g in _solved(store.con, options, None if options.include_root else root, batches):
            out[keys[inst]] = {side: {names[v] for v in nodes} for side, nodes in g.items()}
    return dict(out)


def evaluate(store: Store, metrics: list[str], options: Options) -> list[Row]:
    """Values of ``metrics`` for every system, micro and/or macro (``options.average``)."""
    return DuckDBEngine(store).run_plan(PLAN, metrics, options)


def per_instance(source: Store | Engine, options: Options) -> pd.DataFrame:
    """Per-instance ``n_true, n_pred, n_both`` (``|Gt|, |Gp|, |Gt ∩ Gp|``) and PLCA, RLCA, FLCA."""
    return as_engine(source).per_instance(PLAN, options).to_pandas()


# ---------------------------------------------------------------------------------------------- plan
def plan_params(options: Options, engine: Any = None, metrics: Sequence[str] = ()) -> dict[str, object]:
    """The plan's parameters: :func:`sql_params`, the batch size of the instances with a choice, and
    ``multi_parent``: whether a node of the engine's taxonomy has several parents (in a tree every shortest
    path is the only one: the stages that look for other paths are switched off), and the root's position
    ``root`` (for the minimal-graph step). (The plan's stages never
    name the virtual ancestor beyond ``max_distance``: only ``lca_extended_names`` does, which :func:`graphs`
    runs with a name checked against the nodes, :func:`beyond_name`.)"""
    params = {**sql_params(options), "batch_size": BATCH}
    if engine is not None:
        multi, params["root"] = engine.execute(
            f"SELECT (SELECT count(*) FROM (SELECT child FROM {engine.table('edges')} GROUP BY child"
            f" HAVING count(*) > 1) AS m), (SELECT position FROM {engine.table('nodes')} WHERE is_root)")[0]
        params["multi_parent"] = multi > 0
    return params


def solve_minimal_graphs(con: duckdb.DuckDBPyConnection, params: dict[str, object], options: Options) -> None:
    """The minimal-graph step: ``lca_open_counts`` ``(system, instance_id, n_true, n_pred, n_both)``, the sizes
    of the minimal graphs (``options.lca_graph`` greedy or optimal) of the instances with a choice
    (``lca_open_*``), which ``lca_instance`` reads in place of their extended counts. Each batch is solved on
    its own rows: a runner may solve the batches in partitions."""
    import numpy as np

    root = _rank_nodes(con, params["root"])
    ignore = None if options.include_root else root
    multi_parent = bool(params["multi_parent"])
    if options.lca_graph == "greedy":  # the sizes straight from the compiled greedy graphs
        parts = [_greedy(_batch(con, batch, multi_parent), ignore)[:2] for batch in _batches(con)]
        instances = np.concatenate([np.empty(0, np.int64), *(i for i, _ in parts)])
        sizes = np.concatenate([np.empty((0, 3), np.int64), *(n for _, n in parts)])
    else:
        solved = [(key, *_sizes(g, set() if ignore is None else {ignore}))
                  for key, g in _solved(con, options, ignore, _batches(con), multi_parent)]
        instances = np.array([row[0] for row in solved], np.int64)
        sizes = np.array([row[1:] for row in solved], np.int64).reshape(-1, 3)
    con.execute(
        "CREATE OR REPLACE TEMP TABLE lca_open_counts AS SELECT k.system, k.instance_id, m.t AS n_true,"
        " m.p AS n_pred, m.b AS n_both FROM (SELECT unnest($i::BIGINT[]) AS inst, unnest($t::BIGINT[]) AS t,"
        " unnest($p::BIGINT[]) AS p, unnest($b::BIGINT[]) AS b) AS m JOIN lca_open_instances AS k ON k.inst ="
        " m.inst",
        {"i": instances.tolist(), "t": sizes[:, 0].tolist(), "p": sizes[:, 1].tolist(), "b": sizes[:, 2].tolist()},
    )


def solve_hemkit_graphs(con: duckdb.DuckDBPyConnection, params: dict[str, object], options: Options) -> None:
    """The HEMKit step: ``lca_graph_counts`` of HEMKit's graphs for every instance
    (:mod:`hiersql.measures.lca.hemkit`)."""
    lca_hemkit.write_graph_counts(con, params["include_root"], params["max_distance"])


OPEN_TABLES = ("lca_open_instances", "lca_open_options", "lca_open_nodes", "lca_open_links")  # keyed by batch
HEMKIT_GRAPHS = Python("hemkit_graphs", solve_hemkit_graphs,
                       reads=("nodes", "edges", "truth", "predictions", "systems", "instances"),
                       writes=("lca_graph_counts",), when=lambda options: options.lca_graph == "hemkit",
                       why="HEMKit's graphs follow its C++ code's loops step by step (hiersql.measures.lca.hemkit)",
                       partition_by={"truth": "instance_id", "predictions": "instance_id",
                                     "instances": "instance_id"})
PLAN = FamilyPlan(
    name="lca",
    file="lca",
    metrics=METRICS,
    steps=(
        # (lca_extended_nodes, a row per node of every path, is composed into lca_graph_counts, its one reader)
        *(Sql(q) for q in ("lca_closure", "lca_instances", "lca_labels", "lca_pairs", "lca_pair_meetings",
                           "lca_meetings", "lca_options", "lca_path_ends", "lca_path_nodes", "lca_graph_counts",
                           "lca_open_instances", "lca_open_options", "lca_open_ends", "lca_open_nodes",
                           "lca_open_links", "lca_open_counts")),
        Python("minimal_graphs", solve_minimal_graphs, reads=(*OPEN_TABLES, "nodes"), writes=("lca_open_counts",),
               why="the minimal graphs are set covers: greedy (one choice at a time, each depending on the earlier"
                   " ones) or optimal (an integer program, OR-Tools)",
               when=lambda options: options.lca_graph in ("greedy", "optimal"),
               partition_by=dict.fromkeys(OPEN_TABLES, "batch")),
        HEMKIT_GRAPHS,
        Sql("lca_instance"),
    ),
    instance="lca_instance",
    measures=(
        # macro: the per-instance mean (Kosmopoulos et al.), samples in scikit-learn's words
        Measure("lca_precision", "n_both", "n_pred", averages=("micro", "macro", "samples")),
        Measure("lca_recall", "n_both", "n_true", averages=("micro", "macro", "samples")),
        Measure("lca_f1", "2 * n_both", "n_true + n_pred", averages=("micro", "macro", "samples")),
    ),
    params=plan_params,
    instance_ranges=True,  # an instance's graphs read its own labels only
)

# HEMKit's graphs read only the labels and the hierarchy: the HEMKit command (:mod:`hiersql.api.hemkit`) runs that
# step and the per-instance stage alone, none of the stages the other selections need.
HEMKIT_PLAN = FamilyPlan(
    name="lca",
    file="lca",
    metrics=METRICS,
    steps=(HEMKIT_GRAPHS, Sql("lca_instance")),
    instance="lca_instance",
    measures=PLAN.measures,
    params=plan_params,
)


# ---------------------------------------------------------------------------------------------- instances
@dataclass
class Instance:
    """The choices of one instance: its labels per side, the options ``(lca, partner)`` of each ``(side,
    label)`` and the shortest paths of each (node, LCA) pair (a mapping shared by the instances of a batch);
    nodes by position."""

    labels: dict[str, set[Node]] = field(default_factory=lambda: {"t": set(), "p": set()})
    options: dict[tuple[str, Node], list[tuple[Node, Node]]] = field(default_factory=dict)
    paths: dict[tuple[Node, Node], list[Path]] = field(default_factory=dict)



_OPTION_COLUMNS = ("inst", "side", "label", "lca", "partner")


def _batch(con: duckdb.DuckDBPyConnection, batch: int, multi_parent: bool = True) -> SimpleNamespace:
    """The arrays of one batch (see :func:`_stage_open`), nodes by rank (``lca_node_rank``): ``options``, the
    columns of :data:`_OPTION_COLUMNS` sorted by them (side 1 for ``t``, 0 for ``p``: the order of the names);
    ``paths``, the shortest paths of every (node, LCA) pair in CSR form
    (:func:`~hiersql.measures.lca.greedy_kernel.batch_paths`): one path when every step holds one node, else
    walked along the links between consecutive steps (none in a tree, ``multi_parent`` false); ``width``,
    above every rank + 1."""
    import numpy as np

    from .greedy_kernel import batch_paths

    def arrays(sql: str, columns: Sequence[str]) -> list[np.ndarray]:
        got = con.execute(sql, {"b": batch}).fetchnumpy()
        return [np.asarray(got[c], np.int64) for c in columns]

    ranked = ("JOIN lca_node_rank AS n ON n.position = t.node JOIN lca_node_rank AS a ON a.position = t.lca"
              " {} WHERE t.batch = $b")
    options = arrays(
        "SELECT t.inst, CASE WHEN t.side = 't' THEN 1 ELSE 0 END AS side, l.rank AS label, a.rank AS lca,"
        " q.rank AS partner FROM lca_open_options AS t JOIN lca_node_rank AS l ON l.position = t.label"
        " JOIN lca_node_rank AS a ON a.position = t.lca JOIN lca_node_rank AS q ON q.position = t.partner"
        " WHERE t.batch = $b ORDER BY t.inst, side, label, lca, partner", _OPTION_COLUMNS)
    singles = arrays(
        "SELECT n.rank AS node, a.rank AS lca, v.rank AS v FROM lca_open_nodes AS t "
        + ranked.format("JOIN lca_node_rank AS v ON v.position = t.v")
        + " WINDOW pair AS (PARTITION BY t.node, t.lca) QUALIFY count(*) OVER pair = max(t.step) OVER pair + 1"
        " ORDER BY node, lca", ("node", "lca", "v"))
    links = arrays(
        "SELECT n.rank AS node, a.rank AS lca, lo.rank AS lower, up.rank AS upper FROM lca_open_links AS t "
        + ranked.format("JOIN lca_node_rank AS lo ON lo.position = t.lower"
                        " JOIN lca_node_rank AS up ON up.position = t.upper")
        + ("" if multi_parent else " AND false") + " ORDER BY node, lca, lower, upper",
        ("node", "lca", "lower", "upper"))
    width = con.execute("SELECT max(rank) + 2 FROM lca_node_rank").fetchall()[0][0]
    return SimpleNamespace(options=dict(zip(_OPTION_COLUMNS, options, strict=True)),
                           paths=batch_paths(*singles, *links, width, MAX_PATHS), width=width)


def _greedy(arrays: SimpleNamespace, ignore: Node | None, want_nodes: bool = False) -> tuple:
    """:func:`~hiersql.measures.lca.greedy_kernel.greedy_batch` of a :func:`_batch`: ``(instances, sizes,
    graph_ptr, graph_nodes)``, the sizes (|Gt|, |Gp|, |Gt ∩ Gp|) without ``ignore``, the graphs' nodes with
    ``want_nodes``."""
    from .greedy_kernel import greedy_batch

    return greedy_batch(*(arrays.options[c] for c in _OPTION_COLUMNS), *arrays.paths, arrays.width,
                        -2 if ignore is None else ignore, want_nodes)


def load_kernels() -> None:
    """Load the compiled code of :mod:`~hiersql.measures.lca.greedy_kernel` (from numba's cache, or compile it on
    first use) by running it on an empty batch."""
    import numpy as np

    from .greedy_kernel import batch_paths

    empty = np.empty(0, np.int64)
    _greedy(SimpleNamespace(options=dict.fromkeys(_OPTION_COLUMNS, empty), width=2,
                            paths=batch_paths(*[empty] * 7, 2, MAX_PATHS)), None)


def _instances(arrays: SimpleNamespace) -> dict[int, Instance]:
    """The instances of a :func:`_batch` for the exact solver, by instance number: labels per side, options in
    (LCA, partner) order, the batch's paths. Every label of such an instance has options (the other set is
    not empty), so the options give the labels."""
    import numpy as np

    o = arrays.options
    order = np.lexsort((o["partner"], o["lca"]))  # keys and options first seen in (LCA, partner) order
    out: dict[int, Instance] = defaultdict(Instance)
    for i, side, label, lca, partner in zip(*(o[c][order].tolist() for c in _OPTION_COLUMNS), strict=True):
        inst = out[i]
        name = "t" if side else "p"
        inst.labels[name].add(label)
        inst.options.setdefault((name, label), []).append((lca, partner))
    keys, first, count, ptr, nodes = arrays.paths
    paths = {(key // arrays.width - 1, key % arrays.width - 1): [frozenset(nodes[ptr[j]:ptr[j + 1]].tolist())
                                                                 for j in range(f, f + c)]
             for key, f, c in zip(keys.tolist(), first.tolist(), count.tolist(), strict=True)}
    for inst in out.values():
        inst.paths = paths
    return dict(out)


def _sizes(graphs: dict[str, set[Node]], ignore: set[Node]) -> tuple[int, int, int]:
    gt, gp = graphs["t"] - ignore, graphs["p"] - ignore
    return len(gt), len(gp), len(gt & gp)


# ---------------------------------------------------------------------------------------------- optimal
def _optimal(inst: Instance, ignore: set[Node]) -> dict[str, set[Node]] | None:
    """Exact minimal graphs (Problem 2): CP-SAT finds the minimum number of LCAs, then maximises FLCA with
    that number fixed (Dinkelbach: maximise ``2·|Gt∩Gp| − λ·(|Gt|+|Gp|)``, λ the best FLCA so far, until no
    graph beats λ); nodes in ``ignore`` (the root without ``include_root``) are not counted. ``None`` (the
    caller takes the greedy graphs) on a time-out or too many paths."""
    if any(len(inst.paths[(n, a)]) > MAX_PATHS for (_, label), opts in inst.options.items()
           for a, q in opts for n in (label, q)):
        return None
    return _Model(inst, ignore).solve()


class _Model:
    """The CP-SAT model of Problem 2 for one instance: ``lca[a]`` (a in S), one ``pick`` per label option
    (exactly one per label, its LCA in S), one path variable per shortest path of every (side, node, LCA)
    some picked option needs (exactly one when needed), ``node[(side, v)]`` = v in that side's graph."""

    def __init__(self, inst: Instance, ignore: set[Node]) -> None:
        from ortools.sat.python import cp_model

        self.inst = inst
        m = self.m = cp_model.CpModel()
        self.lca = {a: m.NewBoolVar(f"s_{a}") for opts in inst.options.values() for a, _ in opts}
        self.pick: dict[tuple, Any] = {}
        uses: dict[tuple[str, Node, Node], list] = defaultdict(list)
        for (side, label), opts in inst.options.items():
            xs = []
            for a, q in opts:
                x = m.NewBoolVar("")
                m.AddImplication(x, self.lca[a])
                uses[(side, label, a)].append(x)
                uses[(OTHER[side], q, a)].append(x)
                self.pick[(side, label, a, q)] = x
                xs.append(x)
            m.AddExactlyOne(xs)
        self.paths: dict[tuple[str, Node, Node], list[tuple[Path, Any]]] = {}
        containing: dict[tuple[str, Node], list] = defaultdict(list)
        for (side, node, a), xs in uses.items():
            used = m.NewBoolVar("")
            m.AddMaxEquality(used, xs)
            ys = []
            for path in inst.paths[(node, a)]:
                y = m.NewBoolVar("")
                ys.append((path, y))
                for v in path:
                    containing[(side, v)].append(y)
            m.Add(sum(y for _, y in ys) == used)
            self.paths[(side, node, a)] = ys
        self.node: dict[tuple[str, Node], Any] = {}
        for (side, v), ys in containing.items():
            if v in inst.labels[side]:
                self.node[(side, v)] = m.NewConstant(1)
            else:
                g = m.NewBoolVar("")
                m.AddMaxEquality(g, ys)
                self.node[(side, v)] = g
        for side, labels in inst.labels.items():
            for v in labels:
                self.node.setdefault((side, v), m.NewConstant(1))
        both = []
        for (side, v), g in self.node.items():
            if side == "t" and ("p", v) in self.node and v not in ignore:
                i = m.NewBoolVar("")
                m.AddImplication(i, g)
                m.AddImplication(i, self.node[("p", v)])
                both.append(i)
        self.both = sum(both)
        self.size = sum(g for (_, v), g in self.node.items() if v not in ignore)

    def _solve(self):
        from ortools.sat.python import cp_model

        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = LCA_TIME_LIMIT
        solver.parameters.num_workers = 1
        status = solver.Solve(self.m)
        return solver if status == cp_model.OPTIMAL else None

    def solve(self) -> dict[str, set[Node]] | None:
        self.m.Minimize(sum(self.lca.values()))
        solver = self._solve()
        if solver is None:
            return None
        self.m.Add(sum(self.lca.values()) <= round(solver.ObjectiveValue()))
        num, den = 0, 1  # λ = num / den, the best 2·|Gt∩Gp| / (|Gt|+|Gp|) so far
        best = None
        while True:
            self.m.Maximize(2 * den * self.both - num * self.size)
            solver = self._solve()
            if solver is None:
                return None
            both, size = int(solver.Value(self.both)), int(solver.Value(self.size))
            if best is not None and 2 * den * both - num * size <= 0:
                return best
            best = self._graphs(solver)
            num, den = 2 * both, size
            if 2 * both == size:  # FLCA = 1 cannot be beaten
                return best

    def _graphs(self, solver) -> dict[str, set[Node]]:
        graphs = {side: set(labels) for side, labels in self.inst.labels.items()}
        for (side, _node, _a), ys in self.paths.items():
            for path, y in ys:
                if solver.Value(y):
                    graphs[side] |= path
        return graphs


# ---------------------------------------------------------------------------------------------- one-shot
def lca_precision(y_true, y_pred, taxonomy, average: str = "micro", *, sample_weight=None, zero_division=0.0,
                  **options) -> float:
    """LCA precision ``PLCA = |Gt ∩ Gp| / |Gp|`` (Kosmopoulos et al. 2015, §2.4.2).

    Parameters
    ----------
    y_true, y_pred:
        Sequences of label sets (one per instance; a string is a one-label set).
    taxonomy:
        A :class:`~hiersql.inputs.taxonomy.Taxonomy` (passed again, its tables are reused), a path, a networkx
        DiGraph or ``(parent, child)`` pairs.
    average:
        ``"micro"`` pools ``|Gt ∩ Gp|`` and ``|Gp|`` over instances; ``"samples"`` averages the per-instance
        values, ``"macro"`` its alias (the paper's name). The LCA graphs have no classes: the per-class
        averages are an error.
    sample_weight:
        One weight per instance.
    zero_division:
        0, 1, nan (left out of means) or ``"warn"`` (0 and an :class:`~hiersql.UndefinedMetricWarning`).
    **options:
        ``lca_graph`` (``"greedy"``, ``"optimal"``, ``"extended"`` or ``"hemkit"``), ``include_root`` (False),
        ``max_distance`` (None: LCAs at most that many edges above both labels).
    """
    return score(PLAN, "lca_precision", y_true, y_pred, taxonomy, average, sample_weight=sample_weight,
                 zero_division=zero_division, **options)


def lca_recall(y_true, y_pred, taxonomy, average: str = "micro", *, sample_weight=None, zero_division=0.0,
               **options) -> float:
    """LCA recall ``RLCA = |Gt ∩ Gp| / |Gt|``; arguments as :func:`lca_precision`."""
    return score(PLAN, "lca_recall", y_true, y_pred, taxonomy, average, sample_weight=sample_weight,
                 zero_division=zero_division, **options)


def lca_f1(y_true, y_pred, taxonomy, average: str = "micro", *, sample_weight=None, zero_division=0.0,
           **options) -> float:
    """LCA F1 ``FLCA = 2·PLCA·RLCA / (PLCA + RLCA)``; micro combines the micro PLCA and RLCA, samples (macro)
    averages the per-instance ``2|Gt ∩ Gp| / (|Gt| + |Gp|)``. Arguments as :func:`lca_precision`."""
    return score(PLAN, "lca_f1", y_true, y_pred, taxonomy, average, sample_weight=sample_weight,
                 zero_division=zero_division, **options)
