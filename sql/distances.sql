-- Label-pair distances (Kosmopoulos et al. §2.3; SPEC §3).
--   d(u, v) = min over common ancestors a of u and v (u and v included) of up(u, a) + up(v, a)
-- where up(x, a) is the shortest directed path length a -> x (closure.distance). This is not the undirected
-- shortest path: in a DAG that path may pass below both nodes (u -> child <- v), which d never does.
-- Every pair has a common ancestor (the root), so d is always defined. Pairs with d > $max_distance are left
-- out ($max_distance NULL = unbounded); since d >= up(u, a) and d >= up(v, a), only ancestors within
-- $max_distance edges are joined. Each distinct (u, v) is computed once, then joined back to its rows.
-- Reads: truth, predictions, closure.

-- name: label_pairs
-- (system, instance_id, u, v): every (true u, predicted v) label pair of every instance of every system.
SELECT p.system, t.instance_id, t.label AS u, p.label AS v
FROM truth AS t
JOIN predictions AS p ON p.instance_id = t.instance_id

-- name: pair_distances_of
-- (system, instance_id, u, v, distance) for every row of label_pairs. Store.run materialises the query
-- label_pairs above; to measure other pairs, execute this query's text (sqlfiles.queries("distances")) with
-- your own table or view label_pairs(system, instance_id, u, v).
SELECT l.system, l.instance_id, l.u, l.v, pd.distance
FROM label_pairs AS l
JOIN (
    SELECT d.u, d.v, min(cu.distance + cv.distance) AS distance
    FROM (SELECT DISTINCT u, v FROM label_pairs) AS d
    JOIN closure AS cu ON cu.descendant = d.u
    JOIN closure AS cv ON cv.descendant = d.v AND cv.ancestor = cu.ancestor
    WHERE $max_distance IS NULL OR (cu.distance <= $max_distance AND cv.distance <= $max_distance)
    GROUP BY d.u, d.v
) AS pd ON pd.u = l.u AND pd.v = l.v
WHERE $max_distance IS NULL OR pd.distance <= $max_distance

-- name: pair_distances
-- (system, instance_id, true_label, pred_label, distance) for every (true, predicted) label pair of every
-- instance of every system within the maximum distance.
SELECT system, instance_id, u AS true_label, v AS pred_label, distance
FROM pair_distances_of
