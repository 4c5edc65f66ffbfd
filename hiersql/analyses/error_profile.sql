-- Error profile (docs/breakdowns.md): where each predicted label lies relative to the true labels of its
-- instance, pair distances and LCA depths, and whether predicted sets are closed under ancestors.
-- T, P: the true and predicted label sets of an instance (as given, not augmented). For u ∈ T, v ∈ P:
--   d(u, v) = min over common ancestors a of up(u, a) + up(v, a)   (up = closure.distance; hiersql/measures/pair_based/pair_based.sql)
--   lca_depth(u, v) = the largest nodes.depth of a common ancestor (on a DAG: the deepest common ancestor)
-- The category of v is its closest relation to any u ∈ T, the first that holds in this order:
--   exact (v ∈ T), ancestor (v is a proper ancestor of some u: a generalisation), descendant (v is a proper
--   descendant of some u: a specialisation), sibling (v shares a parent with some u), same_branch (v and some u
--   have a common ancestor other than the root), cross_branch (the root is the only common ancestor with every
--   u); spurious when T is empty. A true label u is missed when neither u nor any descendant of u is in P
--   (u ∉ An(P) ∪ P: a false negative of the ancestor-augmented sets).
-- Reads: truth, predictions, systems, instances, closure, nodes.
-- Sums of floats add their values in key order (sum(x ORDER BY key), as the measures' means): the digits do not
-- depend on the order in which an engine's threads add rows, and every engine prints DuckDB's.

-- name: profile_pairs
-- (system, instance_id, true_label, pred_label): every (true, predicted) label pair of every instance.
SELECT p.system, p.instance_id, t.label AS true_label, p.label AS pred_label
FROM predictions AS p
JOIN truth AS t ON t.instance_id = p.instance_id

-- name: pair_meetings
-- (true_label, pred_label, ancestor, up_true, up_pred): each distinct (true, predicted) label pair with each
-- common ancestor and the closure distances up to it from both labels.
SELECT d.true_label, d.pred_label, cu.ancestor, cu.distance AS up_true, cv.distance AS up_pred
FROM (SELECT DISTINCT true_label, pred_label FROM profile_pairs) AS d
JOIN closure AS cu ON cu.descendant = d.true_label
JOIN closure AS cv ON cv.descendant = d.pred_label AND cv.ancestor = cu.ancestor

-- name: pair_meetings (duckdb)
-- The same rows, the join order fixed: each pair with the ancestors of its true label first (MATERIALIZED
-- keeps DuckDB from flattening it), then the ancestors of the predicted label that match. At a million
-- instances DuckDB otherwise joined the closure to itself on the ancestor alone and filled the disk spilling
-- (benchmarks/RESULTS.md, "Every family at a million instances"), as severity.sql's severity_pair_distances.
WITH pair_ups AS MATERIALIZED (
    SELECT d.true_label, d.pred_label, cu.ancestor, cu.distance AS up_true
    FROM (SELECT DISTINCT true_label, pred_label FROM profile_pairs) AS d
    JOIN closure AS cu ON cu.descendant = d.true_label
)
SELECT p.true_label, p.pred_label, p.ancestor, p.up_true, cv.distance AS up_pred
FROM pair_ups AS p
JOIN closure AS cv ON cv.descendant = p.pred_label AND cv.ancestor = p.ancestor

-- name: pair_relations
-- Per distinct (true_label, pred_label): d, lca_depth and the relation code (1 exact, 2 ancestor,
-- 3 descendant, 4 sibling, 5 same_branch, 6 cross_branch). Closure distance 1 is an edge, so a common ancestor
-- one edge above both is a shared parent; closure distance 0 on one side makes that node the common ancestor.
SELECT
    m.true_label,
    m.pred_label,
    min(m.up_true + m.up_pred) AS distance,
    max(n.depth) AS lca_depth,
    CASE WHEN m.true_label = m.pred_label THEN 1
         WHEN max(CASE WHEN m.up_pred = 0 THEN 1 ELSE 0 END) = 1 THEN 2
         WHEN max(CASE WHEN m.up_true = 0 THEN 1 ELSE 0 END) = 1 THEN 3
         WHEN max(CASE WHEN m.up_true = 1 AND m.up_pred = 1 THEN 1 ELSE 0 END) = 1 THEN 4
         WHEN max(CASE WHEN n.is_root THEN 0 ELSE 1 END) = 1 THEN 5
         ELSE 6 END AS relation
FROM pair_meetings AS m
JOIN nodes AS n ON n.label = m.ancestor
GROUP BY m.true_label, m.pred_label

-- name: predicted_profile
-- (system, instance_id, label, depth, category, distance, lca_depth) per predicted label: its category, the
-- distance to the nearest true label and the deepest LCA with a true label (NULL for a spurious label).
SELECT
    p.system,
    p.instance_id,
    p.label,
    n.depth,
    CASE min(r.relation) WHEN 1 THEN 'exact' WHEN 2 THEN 'ancestor' WHEN 3 THEN 'descendant'
         WHEN 4 THEN 'sibling' WHEN 5 THEN 'same_branch' WHEN 6 THEN 'cross_branch' ELSE 'spurious' END
        AS category,
    min(r.distance) AS distance,
    max(r.lca_depth) AS lca_depth
FROM predictions AS p
JOIN nodes AS n ON n.label = p.label
LEFT JOIN truth AS t ON t.instance_id = p.instance_id
LEFT JOIN pair_relations AS r ON r.true_label = t.label AND r.pred_label = p.label
GROUP BY p.system, p.instance_id, p.label, n.depth

-- name: missed_labels
-- (system, instance_id, label, depth): the true labels that no predicted label reaches (u ∉ An(P) ∪ P).
SELECT s.system, t.instance_id, t.label, n.depth
FROM truth AS t
CROSS JOIN systems AS s
JOIN nodes AS n ON n.label = t.label
WHERE NOT EXISTS (
    SELECT 1
    FROM predictions AS p
    JOIN closure AS c ON c.descendant = p.label
    WHERE p.system = s.system AND p.instance_id = t.instance_id AND c.ancestor = t.label
)

-- name: error_categories
-- (system, category, n, share): how many predicted labels fall in each category (share: of the system's
-- predicted labels), and the missed true labels (share: of the true labels).
SELECT f.system, f.category, count(*) AS n, 1.0 * count(*) / max(k.n) AS share
FROM predicted_profile AS f
JOIN (SELECT system, count(*) AS n FROM predictions GROUP BY system) AS k ON k.system = f.system
GROUP BY f.system, f.category
UNION ALL
SELECT s.system, 'missed', count(m.label),
       CASE WHEN max(k.n) = 0 THEN 0.0 ELSE 1.0 * count(m.label) / max(k.n) END
FROM systems AS s
CROSS JOIN (SELECT count(*) AS n FROM truth) AS k
LEFT JOIN missed_labels AS m ON m.system = s.system
GROUP BY s.system

-- name: class_distances
-- (system, label, n, mean_distance): per predicted class, its predicted labels and their mean nearest-true
-- distance (the terms of the macro mean), a double on every engine (PostgreSQL's avg of integers is numeric).
SELECT system, label, count(*) AS n, avg(CAST(distance AS DOUBLE)) AS mean_distance
FROM predicted_profile
WHERE distance IS NOT NULL
GROUP BY system, label

-- name: distance_statistics
-- (system, n_labels, mean_distance, median_distance, max_distance, macro_mean_distance, mean_lca_depth): the
-- distance from each predicted label to its nearest true label, over the predicted labels of instances with
-- a truth (spurious labels have none); macro = the mean over predicted classes of their mean distance.
WITH macro AS (
    SELECT system, sum(mean_distance ORDER BY label) / count(*) AS macro_mean_distance
    FROM class_distances
    GROUP BY system
)
SELECT
    f.system,
    count(*) AS n_labels,
    avg(f.distance) AS mean_distance,
    median(f.distance) AS median_distance,
    max(f.distance) AS max_distance,
    max(m.macro_mean_distance) AS macro_mean_distance,
    avg(f.lca_depth) AS mean_lca_depth
FROM predicted_profile AS f
JOIN macro AS m ON m.system = f.system
WHERE f.distance IS NOT NULL
GROUP BY f.system

-- name: distance_histogram
-- (system, kind, value, n): histograms of the nearest-true distance (kind 'distance') and of the deepest LCA's
-- depth (kind 'lca_depth') over the predicted labels of instances with a truth.
SELECT system, 'distance' AS kind, distance AS value, count(*) AS n
FROM predicted_profile
WHERE distance IS NOT NULL
GROUP BY system, distance
UNION ALL
SELECT system, 'lca_depth', lca_depth, count(*)
FROM predicted_profile
WHERE lca_depth IS NOT NULL
GROUP BY system, lca_depth

-- name: consistency_instance
-- (system, instance_id, n_labels, n_missing_ancestors, consistent) per non-empty predicted set: the ancestors
-- (the root left out) of its labels that it lacks; consistent = closed under ancestors. The labels and the
-- missing ancestors are counted apart (joined, they made a row per label and missing ancestor of a set).
WITH missing AS (
    SELECT p.system, p.instance_id, count(DISTINCT c.ancestor) AS n
    FROM predictions AS p
    JOIN closure AS c ON c.descendant = p.label AND c.distance > 0
    JOIN nodes AS n ON n.label = c.ancestor AND NOT n.is_root
    WHERE NOT EXISTS (
        SELECT 1 FROM predictions AS q
        WHERE q.system = p.system AND q.instance_id = p.instance_id AND q.label = c.ancestor
    )
    GROUP BY p.system, p.instance_id
)
SELECT
    p.system,
    p.instance_id,
    count(DISTINCT p.label) AS n_labels,
    coalesce(max(m.n), 0) AS n_missing_ancestors,
    max(m.n) IS NULL AS consistent
FROM predictions AS p
LEFT JOIN missing AS m ON m.system = p.system AND m.instance_id = p.instance_id
GROUP BY p.system, p.instance_id

-- name: path_consistency
-- (system, n_sets, n_inconsistent, inconsistency_rate): the non-empty predicted sets, those not closed under
-- ancestors, and their share.
SELECT
    s.system,
    count(c.instance_id) AS n_sets,
    count(c.instance_id) FILTER (WHERE NOT c.consistent) AS n_inconsistent,
    CASE WHEN count(c.instance_id) = 0 THEN 0.0
         ELSE 1.0 * count(c.instance_id) FILTER (WHERE NOT c.consistent) / count(c.instance_id) END
        AS inconsistency_rate
FROM systems AS s
LEFT JOIN consistency_instance AS c ON c.system = s.system
GROUP BY s.system
