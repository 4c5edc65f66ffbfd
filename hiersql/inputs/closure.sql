-- Transitive closure of the taxonomy: (ancestor, descendant, distance), reflexive, shortest distances.
-- Reads: nodes(label, position), edges(parent, child). Works for trees and DAGs of any depth; min() keeps the
-- shortest distance. $max_depth (NULL = unbounded) stops the walk after that many edges: a partial closure is
-- all that HEMKit mode reads (ancestors up to max_distance + 1 edges), far cheaper on a deep DAG such as MeSH.
-- The DuckDB store keeps the closure twice: `closure` on node names (the portable tables every query and
-- engine reads) and `node_closure` on node positions (nodes.position), which the DuckDB and Spark variants of
-- the set-based, pair-based and LCA queries read, integers being much cheaper to join, group and list than
-- names.
-- hiersql.inputs.store.Store.load_taxonomy picks one of two walks by the taxonomy's path count: node_closure_walk
-- or node_closure_level (DuckDB only), then closure_from_nodes. Other engines and `hiersql sql closure` use the
-- safe walk `closure` (then node_closure_from_names).

-- name: node_closure_walk (duckdb)
-- UNION ALL follows every upward path (one row per path), on node positions: about half the time of the UNION
-- walk when a DAG has few more paths than closure rows (MeSH 421,141 paths for 278,217 rows), but exponential
-- in the worst case, so it is only used when the path count is known to be small. MATERIALIZED makes DuckDB
-- store the walk before grouping it, so that the grouping runs on every core, and the edges on positions
-- before the walk, which would otherwise join them to the nodes again at every step (325,000-node DAG:
-- 3.6 -> 1.8 s); DuckDB only, as Spark does not know the keyword.
WITH RECURSIVE edge_positions AS MATERIALIZED (
    SELECT p.position AS parent, c.position AS child
    FROM edges AS e
    JOIN nodes AS p ON p.label = e.parent
    JOIN nodes AS c ON c.label = e.child
),
walk(ancestor, descendant, distance) AS MATERIALIZED (
    SELECT position, position, 0 FROM nodes
    UNION ALL
    SELECT e.parent, w.descendant, w.distance + 1
    FROM walk AS w
    JOIN edge_positions AS e ON e.child = w.ancestor
    WHERE $max_depth IS NULL OR w.distance < $max_depth
)
SELECT ancestor, descendant, min(distance) AS distance
FROM walk
GROUP BY ancestor, descendant

-- name: node_closure_level (duckdb)
-- The rows (ancestor, descendant, distance) of the nodes of one topological level ($level: every parent of a
-- node is on an earlier level, hiersql.inputs.taxonomy.Taxonomy.levels), from their parents' rows made at
-- earlier levels: a node is its own ancestor at 0, and an ancestor of a parent at the parent's distance + 1,
-- the least over its parents. Reads node_levels(position, level) and edge_positions(parent, child), temporary
-- tables of hiersql.inputs.closure._walk_levels. Unlike the UNION walk of `closure`, which keeps every
-- (ancestor, descendant, distance) row of the whole walk to deduplicate it, a statement holds one level's rows
-- (figures: benchmarks/RESULTS.md, "A deep taxonomy").
SELECT ancestor, descendant, min(distance) AS distance
FROM (
    SELECT position AS ancestor, position AS descendant, 0 AS distance
    FROM node_levels
    WHERE level = $level
    UNION ALL
    SELECT c.ancestor, e.child, c.distance + 1
    FROM node_levels AS l
    JOIN edge_positions AS e ON e.child = l.position
    JOIN node_closure AS c ON c.descendant = e.parent
    WHERE l.level = $level AND ($max_depth IS NULL OR c.distance < $max_depth)
) AS level_rows
GROUP BY ancestor, descendant

-- name: closure_from_nodes (duckdb)
-- The closure on names from node_closure.
SELECT a.label AS ancestor, d.label AS descendant, c.distance
FROM node_closure AS c
JOIN nodes AS a ON a.position = c.ancestor
JOIN nodes AS d ON d.position = c.descendant

-- name: node_closure_from_names
-- node_closure from the closure on names (after the safe walk; on Spark, where no copy of the store's was given).
SELECT a.position AS ancestor, d.position AS descendant, c.distance
FROM closure AS c
JOIN nodes AS a ON a.label = c.ancestor
JOIN nodes AS d ON d.label = c.descendant

-- name: closure_refresh
-- The closure after the taxonomy tables were edited by hand (the hiersql_closure() macro; `hiersql sql closure
-- --query closure_refresh`): every node of nodes and every parent and child of edges (a node new in edges
-- too), and a failure that names the nodes on a cycle of edges instead of a walk without end. `reach`
-- (descendant, ancestor) ends on any graph, cycles too: UNION keeps each pair once, and pairs are finitely
-- many; a node that reaches itself is on a cycle. The walk leaves those nodes out, so it walks a DAG and
-- ends; the WHERE then fails with a cast of the message to an integer, which every database reports quoting
-- the text (the DuckDB macro raises it with error(): hiersql.api.macros).
WITH RECURSIVE labels AS (
    SELECT label FROM nodes
    UNION
    SELECT parent FROM edges
    UNION
    SELECT child FROM edges
),
reach(descendant, ancestor) AS (
    SELECT child, parent FROM edges
    UNION
    SELECT r.descendant, e.parent
    FROM reach AS r
    JOIN edges AS e ON e.child = r.ancestor
),
on_cycle AS (
    SELECT descendant AS label FROM reach WHERE ancestor = descendant
),
acyclic_edges AS (
    SELECT e.parent, e.child
    FROM edges AS e
    WHERE e.parent NOT IN (SELECT label FROM on_cycle) AND e.child NOT IN (SELECT label FROM on_cycle)
),
walk(ancestor, descendant, distance) AS (
    SELECT label, label, 0 FROM labels
    UNION
    SELECT e.parent, w.descendant, w.distance + 1
    FROM walk AS w
    JOIN acyclic_edges AS e ON e.child = w.ancestor
    WHERE $max_depth IS NULL OR w.distance < $max_depth
)
SELECT ancestor, descendant, min(distance) AS distance
FROM walk
WHERE (
    SELECT CAST('hiersql: edges: a cycle through the nodes ' || string_agg(label, ', ' ORDER BY label) AS INTEGER)
    FROM on_cycle
    HAVING count(*) > 0
) IS NULL
GROUP BY ancestor, descendant

-- name: nodes_refresh
-- (label, depth, is_root, is_leaf, is_virtual, position): nodes rebuilt after the taxonomy tables were edited
-- by hand (the hiersql_nodes() macro; `hiersql sql closure --query nodes_refresh`), as the loader builds them:
-- every node of nodes and of edges; the root stays the root (virtual or not); depth is the distance from the
-- root in the refreshed closure (closure_refresh: a cycle fails there); is_leaf: no child in edges; a node new
-- in edges comes after the others in position, in name order. A node that no path joins to the root fails,
-- naming it (give it a parent: under a virtual root, the rows of root_edges_refresh).
WITH the_root AS (
    SELECT label, is_virtual FROM nodes WHERE is_root
),
root_depths AS (
    SELECT c.descendant AS label, c.distance AS depth
    FROM closure_refresh AS c
    JOIN the_root AS r ON c.ancestor = r.label
),
node_labels AS (
    SELECT label FROM nodes
    UNION
    SELECT parent FROM edges
    UNION
    SELECT child FROM edges
),
placed_nodes AS (
    SELECT l.label, n.position,
           (SELECT max(position) FROM nodes)
           + row_number() OVER (PARTITION BY n.position IS NULL ORDER BY l.label) AS next_position
    FROM node_labels AS l
    LEFT JOIN nodes AS n ON n.label = l.label
)
SELECT p.label, d.depth, p.label = r.label AS is_root,
       p.label NOT IN (SELECT parent FROM edges) AS is_leaf,
       p.label = r.label AND r.is_virtual AS is_virtual,
       coalesce(p.position, p.next_position) AS position
FROM placed_nodes AS p
CROSS JOIN the_root AS r
LEFT JOIN root_depths AS d ON d.label = p.label
WHERE (
    SELECT CAST('hiersql: edges: no path joins these nodes to the root ' || min(r2.label) || ': '
                || string_agg(l.label, ', ' ORDER BY l.label) AS INTEGER)
    FROM node_labels AS l
    CROSS JOIN the_root AS r2
    LEFT JOIN root_depths AS d2 ON d2.label = l.label
    WHERE d2.label IS NULL
    HAVING count(*) > 0
) IS NULL

-- name: root_edges_refresh
-- (parent, child, weight): under a virtual root, an edge from it to every node of edges that has no parent,
-- as the loader joins the tops of a forest; to insert into edges after editing it by hand (the
-- hiersql_root_edges() macro). No row when the root is a node of the user's.
SELECT r.label AS parent, e.parent AS child, CAST(NULL AS DOUBLE) AS weight
FROM (SELECT DISTINCT parent FROM edges) AS e
CROSS JOIN (SELECT label FROM nodes WHERE is_root AND is_virtual) AS r
WHERE e.parent <> r.label AND e.parent NOT IN (SELECT child FROM edges)

-- name: closure
-- UNION drops the (ancestor, descendant, distance) rows already found, so the walk is bounded by the
-- closure times the number of distinct distances, whatever the number of paths of the DAG.
WITH RECURSIVE walk(ancestor, descendant, distance) AS (
    SELECT label, label, 0 FROM nodes
    UNION
    SELECT e.parent, w.descendant, w.distance + 1
    FROM walk AS w
    JOIN edges AS e ON e.child = w.ancestor
    WHERE $max_depth IS NULL OR w.distance < $max_depth
)
SELECT ancestor, descendant, min(distance) AS distance
FROM walk
GROUP BY ancestor, descendant
