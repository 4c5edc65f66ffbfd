-- Label-pair distances (Kosmopoulos et al. §2.3; SPEC §3).
--   d(u, v) = min over common ancestors a of u and v (u and v included) of up(u, a) + up(v, a)
-- where up(x, a) is the shortest directed path length a -> x (closure.distance). This is not the undirected
-- shortest path: in a DAG that path may pass below both nodes (u -> child <- v), which d never does.
-- Every pair has a common ancestor (the root), so d is always defined. Pairs with d > $max_distance are left
-- out ($max_distance NULL = unbounded); since d >= up(u, a) and d >= up(v, a), only ancestors within
-- $max_distance edges are joined. $max_climb (NULL = unbounded) bounds each side instead: only common ancestors
-- at most $max_climb edges above u and above v count (the minimum is over those; d may reach 2 * $max_climb),
-- and pairs without such an ancestor are left out. Each distinct (u, v) is computed once, then joined back to
-- its rows.
-- Reads: truth, predictions, closure.

-- name: label_pairs
-- (system, instance_id, u, v): every (true u, predicted v) label pair of every instance of every system.
SELECT p.system, t.instance_id, t.label AS u, p.label AS v
FROM truth AS t
JOIN predictions AS p ON p.instance_id = t.instance_id

-- name: pair_problems
-- One pairing problem per (system, instance of the truth), also when either label set is empty.
SELECT row_number() OVER (ORDER BY s.system, i.instance_id) - 1 AS problem, s.system, i.instance_id
FROM systems AS s
CROSS JOIN instances AS i

-- name: pair_true_classes
-- (node, problem, label): the true classes of every problem, numbered from 0.
SELECT row_number() OVER (ORDER BY pp.problem, t.label) - 1 AS node, pp.problem, t.label
FROM pair_problems AS pp
JOIN truth AS t ON t.instance_id = pp.instance_id

-- name: pair_pred_classes
-- (node, problem, label): the predicted classes of every problem, numbered from 0.
SELECT row_number() OVER (ORDER BY pp.problem, p.label) - 1 AS node, pp.problem, p.label
FROM pair_problems AS pp
JOIN predictions AS p ON p.system = pp.system AND p.instance_id = pp.instance_id

-- name: pair_ancestor_maps (spark)
-- (node, up): each node's ancestors within the bounds as a map {ancestor position: distance} (Spark only;
-- read by pair_distances_of and pair_arcs). Keyed by position: maps keyed by ancestor name made the pair
-- distances 1.8x slower on the 450,000-instance benchmark DAG. The maps are grouped from node_closure (no
-- join of the closure's names), then each takes its node's name from the broadcast nodes.
SELECT n.label AS node, m.up /*+ BROADCAST(n) */
FROM (
    SELECT descendant, map_from_entries(list(struct_pack(ancestor := ancestor, distance := distance))) AS up
    FROM node_closure
    WHERE ($max_distance IS NULL OR distance <= $max_distance)
      AND ($max_climb IS NULL OR distance <= $max_climb)
    GROUP BY descendant
) AS m
JOIN nodes AS n ON n.position = m.descendant

-- name: pair_label_distances
-- (u, v, distance): each distinct (true u, predicted v) label pair of label_pairs with its distance, within the
-- maximum distance (and climb).
SELECT pd.u, pd.v, pd.distance
FROM (
    SELECT d.u, d.v, min(cu.distance + cv.distance) AS distance
    FROM (SELECT DISTINCT u, v FROM label_pairs) AS d
    JOIN closure AS cu ON cu.descendant = d.u
    JOIN closure AS cv ON cv.descendant = d.v AND cv.ancestor = cu.ancestor
    WHERE ($max_distance IS NULL OR (cu.distance <= $max_distance AND cv.distance <= $max_distance))
      AND ($max_climb IS NULL OR (cu.distance <= $max_climb AND cv.distance <= $max_climb))
    GROUP BY d.u, d.v
) AS pd
WHERE $max_distance IS NULL OR pd.distance <= $max_distance

-- name: pair_label_distances (duckdb)
-- The same rows, the pairs taken from the classes of each problem (the same pairs as label_pairs, which is then
-- not made: a row per label pair of every instance), the join order fixed: each distinct pair with the
-- ancestors of u first (MATERIALIZED keeps DuckDB from flattening it), then the ancestors of v that match. On a
-- wide DAG DuckDB otherwise joined the closure to itself on the ancestor alone, every pair of nodes under a
-- common ancestor (benchmarks/RESULTS.md, "Warehouse scale").
WITH pair_ups AS MATERIALIZED (
    SELECT d.u, d.v, cu.ancestor, cu.distance
    FROM (
        SELECT DISTINCT tc.label AS u, pc.label AS v
        FROM pair_true_classes AS tc
        JOIN pair_pred_classes AS pc ON pc.problem = tc.problem
    ) AS d
    JOIN closure AS cu ON cu.descendant = d.u
    WHERE ($max_distance IS NULL OR cu.distance <= $max_distance)
      AND ($max_climb IS NULL OR cu.distance <= $max_climb)
)
SELECT pd.u, pd.v, pd.distance
FROM (
    SELECT p.u, p.v, min(p.distance + cv.distance) AS distance
    FROM pair_ups AS p
    JOIN closure AS cv ON cv.descendant = p.v AND cv.ancestor = p.ancestor
    WHERE ($max_distance IS NULL OR cv.distance <= $max_distance)
      AND ($max_climb IS NULL OR cv.distance <= $max_climb)
    GROUP BY p.u, p.v
) AS pd
WHERE $max_distance IS NULL OR pd.distance <= $max_distance

-- name: pair_distances_of
-- (system, instance_id, u, v, distance) for every row of label_pairs, the query label_pairs above; to measure
-- other pairs, execute this query composed (sqlfiles.composed("pair_based", "pair_distances_of", skip=
-- {"label_pairs"})) with your own table or view label_pairs(system, instance_id, u, v).
SELECT l.system, l.instance_id, l.u, l.v, pd.distance
FROM label_pairs AS l
JOIN pair_label_distances AS pd ON pd.u = l.u AND pd.v = l.v

-- name: pair_distances_of (spark)
-- The same rows on Spark without one row per (pair, common ancestor): a pair's distance is the least sum
-- over the keys both ancestor maps hold. The portable join makes a row per ancestor of u for every distinct
-- pair (130 M on the 450,000-instance benchmark DAG) and shuffles them by (v, ancestor). The maps (one per
-- node, ~30 integer entries on that DAG) are broadcast: each label pair looks up its two maps where it is,
-- so the pairs are neither shuffled nor made distinct and joined back (a shuffle join of the distinct pairs
-- carrying the maps took 4x longer there).
WITH label_pair_distances AS (
    SELECT l.system, l.instance_id, l.u, l.v,
           list_min(list_transform(array_intersect(map_keys(cu.up), map_keys(cv.up)), a -> cu.up[a] + cv.up[a]))
               AS distance /*+ BROADCAST(cu), BROADCAST(cv) */
    FROM label_pairs AS l
    JOIN pair_ancestor_maps AS cu ON cu.node = l.u
    JOIN pair_ancestor_maps AS cv ON cv.node = l.v
)
SELECT system, instance_id, u, v, distance
FROM label_pair_distances
WHERE distance IS NOT NULL AND ($max_distance IS NULL OR distance <= $max_distance)

-- name: pair_distances
-- (system, instance_id, true_label, pred_label, distance) for every (true, predicted) label pair of every
-- instance of every system within the maximum distance (and climb).
SELECT system, instance_id, u AS true_label, v AS pred_label, distance
FROM pair_distances_of

-- Pair-based measures (Kosmopoulos et al. §2.3; SPEC §3): the inputs of the flow networks of
-- hiersql/measures/pair_based/pairing.py, and the nearest-class pairing of MGIA.

-- name: pair_arcs
-- (problem, pred_node, true_node, distance): the candidate pairs of every problem, within the maximum
-- distance (and climb); distance 0 means the same class in both sets.
SELECT pc.problem, pc.node AS pred_node, tc.node AS true_node, d.distance
FROM pair_distances_of AS d
JOIN pair_problems AS pp ON pp.system = d.system AND pp.instance_id = d.instance_id
JOIN pair_true_classes AS tc ON tc.problem = pp.problem AND tc.label = d.u
JOIN pair_pred_classes AS pc ON pc.problem = pp.problem AND pc.label = d.v

-- name: pair_arcs (duckdb)
-- The same rows from the classes of each problem, joined on the problem (an integer), and the distance of each
-- distinct label pair: the portable query joins pair_distances_of (a row per label pair of every instance of
-- every system) to the problems on (system, instance_id) and to the classes on (problem, label), which at a
-- million instances outgrew DuckDB's memory limit and spilled (benchmarks/RESULTS.md, "A million instances").
-- Neither label_pairs nor pair_distances_of is then made (hiersql.engines.compile.portable_only_stages).
SELECT tc.problem, pc.node AS pred_node, tc.node AS true_node, d.distance
FROM pair_true_classes AS tc
JOIN pair_pred_classes AS pc ON pc.problem = tc.problem
JOIN pair_label_distances AS d ON d.u = tc.label AND d.v = pc.label

-- name: pair_arcs (spark)
-- The same rows on Spark, each class pair's distance computed where the pair is made, from the broadcast
-- ancestor maps (as pair_distances_of (spark)): the portable query stores pair_distances_of (5.0 M rows on
-- the 450,000-instance benchmark DAG) and joins it three times to the problems and classes; here the true
-- and predicted classes of a problem are joined once, and pair_distances_of is not computed at all.
WITH class_pair_distances AS (
    SELECT pc.problem, pc.node AS pred_node, tc.node AS true_node,
           list_min(list_transform(array_intersect(map_keys(cu.up), map_keys(cv.up)), a -> cu.up[a] + cv.up[a]))
               AS distance /*+ BROADCAST(cu), BROADCAST(cv) */
    FROM pair_true_classes AS tc
    JOIN pair_pred_classes AS pc ON pc.problem = tc.problem
    JOIN pair_ancestor_maps AS cu ON cu.node = tc.label
    JOIN pair_ancestor_maps AS cv ON cv.node = pc.label
)
SELECT problem, pred_node, true_node, distance
FROM class_pair_distances
WHERE distance IS NOT NULL AND ($max_distance IS NULL OR distance <= $max_distance)

-- name: pair_flow_arcs
-- (problem, pred_node, true_node, distance): the candidate pairs the pairing step solves flows over, pair_arcs
-- when $pair_flows (GIE, the tree-induced and all-pairs errors, MGIA with pairing='flow'), else none: MGIA's
-- nearest-class pairing reads only pair_problem_sizes and mgia_mutual_pairs, so the pairs (5.0 M rows on the
-- 450,000-instance benchmark DAG) are neither read into the step nor, on Spark, shuffled to its partitions.
SELECT problem, pred_node, true_node, distance
FROM pair_arcs
WHERE $pair_flows

-- name: mgia_nearest
-- (problem, side, node, nearest): the distance from each class to the nearest class of the other set
-- within the maximum distance, or the default cost dmax when none is reachable (MGIA, SPEC §3). Empty unless
-- $mgia_nearest (MGIA with its nearest-class pairing is asked for): nothing else reads it.
SELECT c.problem, 'true' AS side, c.node, coalesce(min(a.distance), $dmax) AS nearest
FROM pair_true_classes AS c
LEFT JOIN pair_arcs AS a ON a.true_node = c.node
WHERE $mgia_nearest
GROUP BY c.problem, c.node
UNION ALL
SELECT c.problem, 'pred' AS side, c.node, coalesce(min(a.distance), $dmax) AS nearest
FROM pair_pred_classes AS c
LEFT JOIN pair_arcs AS a ON a.pred_node = c.node
WHERE $mgia_nearest
GROUP BY c.problem, c.node

-- name: mgia_nearest (spark)
-- The same nearest distances on Spark for the classes that some pair of pair_arcs reaches, each a group of the
-- pairs alone: the portable query joins every class to its pairs (on Spark a shuffle and a sort of both, for
-- the few classes no pair reaches). Those (an empty other side, or nothing within the bounds) are left out
-- here; pair_problem_sizes counts them at dmax.
SELECT problem, 'true' AS side, true_node AS node, CAST(min(distance) AS DOUBLE) AS nearest
FROM pair_arcs
WHERE $mgia_nearest
GROUP BY problem, true_node
UNION ALL
SELECT problem, 'pred' AS side, pred_node AS node, CAST(min(distance) AS DOUBLE) AS nearest
FROM pair_arcs
WHERE $mgia_nearest
GROUP BY problem, pred_node

-- name: mgia_mutual_pairs
-- (problem, pred_node, true_node, distance): pairs at distance > 0 that are nearest for both their classes;
-- a pair chosen from both sides is counted once, so fn = sum of nearest - the heaviest matching of these.
SELECT a.problem, a.pred_node, a.true_node, a.distance
FROM pair_arcs AS a
JOIN mgia_nearest AS t ON t.side = 'true' AND t.node = a.true_node AND t.nearest = a.distance
JOIN mgia_nearest AS p ON p.side = 'pred' AND p.node = a.pred_node AND p.nearest = a.distance
WHERE a.distance > 0

-- name: pair_root_distances
-- (problem, distance): with $empty_prediction = 'root', the problems whose predicted set is empty and true set
-- is not, with Σ_{u ∈ T} d(u, root): the root predicted for each true label (Dekel et al.'s tree has the root
-- among its labels; d(u, root) is the shortest path from the root down to u). No rows with 'error'.
SELECT tc.problem, sum(c.distance) AS distance
FROM pair_true_classes AS tc
JOIN closure AS c ON c.descendant = tc.label
JOIN nodes AS n ON n.label = c.ancestor AND n.is_root
LEFT JOIN (SELECT DISTINCT problem FROM pair_pred_classes) AS pc ON pc.problem = tc.problem
WHERE $empty_prediction = 'root' AND pc.problem IS NULL
GROUP BY tc.problem

-- name: pair_problem_sizes
-- (problem, system, instance_id, n_true, n_pred, n_shared, nearest_sum, root_distance) per problem, in problem
-- order; root_distance is pair_root_distances' value (NULL for the other problems). With $mgia_nearest, a class
-- that mgia_nearest does not hold adds dmax to nearest_sum (n_true + n_pred classes, of which `reached` are
-- there): none on the portable query, which holds every class; mgia_nearest (spark) holds only those some pair
-- reaches.
SELECT
    pp.problem,
    pp.system,
    pp.instance_id,
    coalesce(t.n, 0) AS n_true,
    coalesce(p.n, 0) AS n_pred,
    coalesce(a.n, 0) AS n_shared,
    coalesce(n.total, 0)
        + CASE WHEN $mgia_nearest THEN $dmax * (coalesce(t.n, 0) + coalesce(p.n, 0) - coalesce(n.reached, 0))
          ELSE 0 END AS nearest_sum,
    r.distance AS root_distance
FROM pair_problems AS pp
LEFT JOIN pair_root_distances AS r ON r.problem = pp.problem
LEFT JOIN (SELECT problem, count(*) AS n FROM pair_true_classes GROUP BY problem) AS t
    ON t.problem = pp.problem
LEFT JOIN (SELECT problem, count(*) AS n FROM pair_pred_classes GROUP BY problem) AS p
    ON p.problem = pp.problem
LEFT JOIN (SELECT problem, count(*) AS n FROM pair_arcs WHERE distance = 0 GROUP BY problem) AS a
    ON a.problem = pp.problem
LEFT JOIN (SELECT problem, sum(nearest) AS total, count(*) AS reached FROM mgia_nearest GROUP BY problem) AS n
    ON n.problem = pp.problem

-- name: label_count_mismatch
-- (system, instance_id, n_true, n_pred, n_mismatch): the (system, instance) pairs whose true and predicted
-- sets differ in size, first one first, with their number (the tree-induced error needs equal sizes); with
-- $empty_prediction = 'root' an empty predicted set is not one of them (it is scored as the root).
SELECT g.system, g.instance_id, coalesce(t.n, 0) AS n_true, coalesce(p.n, 0) AS n_pred,
       count(*) OVER () AS n_mismatch
FROM (SELECT s.system, i.instance_id FROM systems AS s CROSS JOIN instances AS i) AS g
LEFT JOIN (SELECT instance_id, count(*) AS n FROM truth GROUP BY instance_id) AS t
    ON t.instance_id = g.instance_id
LEFT JOIN (SELECT system, instance_id, count(*) AS n FROM predictions GROUP BY system, instance_id) AS p
    ON p.system = g.system AND p.instance_id = g.instance_id
WHERE coalesce(t.n, 0) <> coalesce(p.n, 0)
  AND NOT ($empty_prediction = 'root' AND p.n IS NULL)
