-- Mistake severity, hierarchical distance@k and hierarchical precision@k (Bertinetto et al., "Making Better
-- Mistakes", CVPR 2020, §4 and their run_xent.py; Karthik et al., ICLR 2021). docs/severity.md has the table.
-- Per (system, instance) the predicted labels are ranked by the store's one rule, predictions.rank
-- (hiersql.inputs.tables.RANK_ORDER: a rank column's value, else the score, highest first, else the order
-- read; ties by label). The top k are the first $top_k of them (fewer when fewer are ranked). With Y the true
-- labels of the instance and p_j its j-th ranked label:
--   d(u, v) = 0 when u = v, else min over the common ancestors a of u and v of height(a)      ($severity_distance
--             'height': the height of the LCA in a tree, height(a) = the longest of a's shortest paths to a
--             leaf below it; the authors' "ILSVRC" distance)
--          or min over the common ancestors a of up(u, a) + up(v, a)                 ('edges': the edge count)
--   d_j = min over t in Y of d(t, p_j)          (one true label: d(y, p_j); several: the nearest one)
--   hit = [some p_j of the top k is in Y]       n = the number of ranked labels in the top k (<= $top_k)
--   similarity s_j = 1 - d_j / D, D the largest d(a, b) over the classes C (the taxonomy's leaves and every
--   label of the truth and the predictions); best_j = the j-th largest 1 - d(y, c) / D over c in C.
-- The per-instance values (hiersql.measures.severity declares the measures over severity_instance):
--   top-k accuracy = hit; hdist@k = Σ_{j<=n} d_j / n; best hdist@k = min_{j<=n} d_j;
--   mistake severity@k = Σ_{j<=n} d_j / n over the instances whose top-1 is wrong (d_1 > 0);
--   hierarchical precision@k = Σ_{j<=n} s_j / Σ_{j<=k} best_j (one true label only);
--   hierarchical mAP@k = the mean of hierarchical precision@k' over k' = 1 .. k (one true label only).
-- Which k a system has (the one rule, severity_max_k.max_k): k = 1 always; k > 1 only for a system that scored
-- its labels (a prediction with a score); a system without scores (hard predictions) has no values, no rows, at
-- k > 1: severity_instance and the summary (severity_ranked_systems) leave it out, and its labels below the
-- first are not compared (severity_pairs).
-- Reads: truth, predictions, systems, instances, closure, nodes.

-- name: severity_heights
-- (label, height): each node's longest shortest path down to a leaf (0 for a leaf).
SELECT c.ancestor AS label, max(c.distance) AS height
FROM closure AS c
JOIN nodes AS n ON n.label = c.descendant
WHERE n.is_leaf
GROUP BY c.ancestor

-- name: severity_max_k
-- (system, max_k): the largest k at which the system has values: 1 for a system without scores, none (NULL) for
-- one that gave scores (a prediction with a score); read by every k.
SELECT s.system, CASE WHEN max(CASE WHEN p.score IS NOT NULL THEN 1 ELSE 0 END) = 1 THEN NULL ELSE 1 END AS max_k
FROM systems AS s
LEFT JOIN predictions AS p ON p.system = s.system
GROUP BY s.system

-- name: severity_systems
-- (system, ranked): whether the top $top_k of a system is defined: k = 1, or the system gave scores.
SELECT system, coalesce($top_k <= max_k, true) AS ranked
FROM severity_max_k

-- name: severity_ranked_systems
-- (system): the systems that have values at $top_k: the rows of the summary.
SELECT system FROM severity_systems WHERE ranked

-- name: severity_k_fault
-- (fault): why no system has values at $top_k (k > 1 needs scores), one row; no row where some system has them.
-- The rule of every door: hiersql.measures.severity checks it before a measure asked for by name runs (the family
-- as a whole has no row then), severity_k_check at the SQL door. It counts the systems: a message that reads a
-- column (PostgreSQL computes a constant cast when it plans the query, whatever the CASE).
SELECT 'must include 1 for hard predictions (k > 1 needs scores; none of the ' || CAST(count(*) AS VARCHAR)
       || ' system(s) has them)' AS fault
FROM severity_systems
HAVING max(CASE WHEN ranked THEN 1 ELSE 0 END) = 0

-- name: severity_k_check
-- (failed): no row, or the failure (hiersql's cast error) that names severity_k_fault and $top_k.
SELECT CAST('hiersql: k ' || fault || ': ' || CAST($top_k AS VARCHAR) AS INTEGER) AS failed
FROM severity_k_fault

-- name: severity_classes
-- (label): the classes C that a retrieval may return: the leaves and every label seen.
SELECT label FROM nodes WHERE is_leaf
UNION
SELECT label FROM truth
UNION
SELECT label FROM predictions

-- name: severity_pairs
-- (u, v): the label pairs whose distance is needed: each true label with its instance's ranked labels up to
-- the largest k of their system (with hierarchical precision, $precision, none: severity_distances has every
-- pair of classes, which holds them).
SELECT DISTINCT t.label AS u, p.label AS v
FROM predictions AS p
JOIN severity_max_k AS m ON m.system = p.system
JOIN truth AS t ON t.instance_id = p.instance_id
WHERE NOT $precision AND coalesce(p.rank <= m.max_k, true)

-- name: severity_pair_distances
-- (u, v, distance): d(u, v), the least over the common ancestors of u and v, for the pairs of severity_pairs.
SELECT pr.u, pr.v,
       CASE WHEN pr.u = pr.v THEN 0
            WHEN $severity_distance = 'height' THEN min(h.height)
            ELSE min(cu.distance + cv.distance) END AS distance
FROM severity_pairs AS pr
JOIN closure AS cu ON cu.descendant = pr.u
JOIN closure AS cv ON cv.descendant = pr.v AND cv.ancestor = cu.ancestor
JOIN severity_heights AS h ON h.label = cu.ancestor
GROUP BY pr.u, pr.v

-- name: severity_pair_distances (duckdb)
-- The same rows, the join order fixed: each pair with the ancestors of u first (MATERIALIZED keeps DuckDB from
-- flattening it), then the ancestors of v that match. At a million instances DuckDB otherwise joined the
-- closure to itself on the ancestor alone (2.6·10^9 rows on dag50k_1m; benchmarks/RESULTS.md, "Every family
-- at a million instances"), as pair_based.sql's pair_label_distances did on a wide DAG.
WITH pair_ups AS MATERIALIZED (
    SELECT pr.u, pr.v, cu.ancestor, cu.distance
    FROM severity_pairs AS pr
    JOIN closure AS cu ON cu.descendant = pr.u
)
SELECT p.u, p.v,
       CASE WHEN p.u = p.v THEN 0
            WHEN $severity_distance = 'height' THEN min(h.height)
            ELSE min(p.distance + cv.distance) END AS distance
FROM pair_ups AS p
JOIN closure AS cv ON cv.descendant = p.v AND cv.ancestor = p.ancestor
JOIN severity_heights AS h ON h.label = p.ancestor
GROUP BY p.u, p.v

-- name: severity_distances
-- (u, v, distance): d(u, v) for the pairs of severity_pairs (severity_pair_distances); for hierarchical
-- precision ($precision), of every pair of classes (the best retrievals and D), read from the closure of the
-- classes.
SELECT u, v, distance FROM severity_pair_distances
UNION ALL
SELECT a.label, b.label,
       CASE WHEN a.label = b.label THEN 0
            WHEN $severity_distance = 'height' THEN min(h.height)
            ELSE min(cu.distance + cv.distance) END
FROM severity_classes AS a
JOIN closure AS cu ON cu.descendant = a.label
JOIN closure AS cv ON cv.ancestor = cu.ancestor
JOIN severity_classes AS b ON b.label = cv.descendant
JOIN severity_heights AS h ON h.label = cu.ancestor
WHERE $precision
GROUP BY a.label, b.label

-- name: severity_best_levels
-- (label, distance, first, classes, before, diameter): per class y of the truth, its classes at each distance
-- d from y (y itself at 0), nearest first: `classes` of them, at positions first .. first + classes - 1 of the
-- nearest-first order, each of similarity 1 - d / D; `before` is the similarities of the positions before
-- `first` summed; and D. Empty unless $precision (then every row of severity_distances is a pair of classes).
SELECT g.u AS label, g.distance,
       1 + coalesce(sum(g.classes) OVER (PARTITION BY g.u ORDER BY g.distance
                                         ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS first,
       g.classes,
       coalesce(sum(g.classes * (1.0 - 1.0 * g.distance / m.diameter))
                    OVER (PARTITION BY g.u ORDER BY g.distance
                          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before,
       m.diameter
FROM (
    SELECT d.u, d.distance, count(*) AS classes
    FROM severity_distances AS d
    WHERE $precision AND d.u IN (SELECT label FROM truth)
    GROUP BY d.u, d.distance
) AS g
CROSS JOIN (SELECT max(distance) AS diameter FROM severity_distances) AS m
WHERE m.diameter > 0

-- name: severity_best_ranks
-- (label, position, best, diameter): per class y of the truth, Σ_{j<=position} best_j for positions 1 .. $top_k
-- (fewer when fewer classes meet y), best_j the similarity of the j-th class nearest to y: the level holding
-- the position, its `before` and (position - first + 1) of its similarity. The positions are numbered over the
-- nodes, which are at least as many as the classes.
SELECT l.label, p.position,
       l.before + (p.position - l.first + 1) * (1.0 - 1.0 * l.distance / l.diameter) AS best,
       l.diameter
FROM severity_best_levels AS l
JOIN (SELECT row_number() OVER (ORDER BY label) AS position FROM nodes) AS p
  ON p.position >= l.first AND p.position < l.first + l.classes
WHERE p.position <= $top_k

-- name: severity_best
-- (label, best, diameter, positions): Σ_{j<=k} best_j of each class y of the truth (the running sums only
-- grow), D, and K = min(k, the classes meeting y), its positions.
SELECT label, max(best) AS best, min(diameter) AS diameter, count(*) AS positions
FROM severity_best_ranks
GROUP BY label

-- name: severity_best_weights
-- (label, position, weight): per class y of the truth and position j = 1 .. K, w_j = Σ_{k'=j..K} 1 / Σ_{i<=k'}
-- best_i, the weight of the j-th similarity in the sum of hierarchical mAP@k (severity_instance).
SELECT label, position,
       sum(1.0 / best) OVER (PARTITION BY label ORDER BY position DESC
                             ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS weight
FROM severity_best_ranks

-- name: severity_ranked_distances
-- (system, instance_id, position, distance, hit): each top-k label's distance to the nearest true label, for the
-- systems with values at $top_k (none at k > 1 for hard predictions: nothing is joined then).
SELECT p.system, p.instance_id, p.rank AS position, min(d.distance) AS distance,
       max(CASE WHEN t.label = p.label THEN 1 ELSE 0 END) AS hit
FROM predictions AS p
JOIN severity_ranked_systems AS sy ON sy.system = p.system
JOIN truth AS t ON t.instance_id = p.instance_id
JOIN severity_distances AS d ON d.u = t.label AND d.v = p.label
WHERE p.rank <= $top_k
GROUP BY p.system, p.instance_id, p.rank

-- name: severity_truth
-- (instance_id, n_true, label): each instance's number of true labels and the least of them (its one true label
-- y when n_true = 1).
SELECT instance_id, count(*) AS n_true, min(label) AS label FROM truth GROUP BY instance_id

-- name: severity_instance
-- One row per (system with values at $top_k, instance of the truth): n_true = |Y|, n = the labels in the top k,
-- hit, top1 = d_1, total = Σ d_j, nearest = min d_j, similarity = Σ s_j, best_similarity (NULL where
-- hierarchical precision is not defined: not asked for, D = 0 or |Y| ≠ 1), average_precision (mAP@k): for an
-- instance with one true label y, the mean over k' = 1 .. K of its hierarchical precision@k',
-- Σ_{j<=min(k', n)} s_j / Σ_{i<=k'} best_i(y), which is Σ_{j<=min(n, K)} s_j · w_j(y) / K
-- (severity_best_weights): the sum over the top k of the rows already grouped, without a running sum.
SELECT s.system, i.instance_id,
       coalesce(y.n_true, 0) AS n_true,
       coalesce(r.n, 0) AS n,
       coalesce(r.hit, 0) AS hit,
       r.top1, r.total, r.nearest,
       CASE WHEN b.best IS NOT NULL THEN coalesce(r.total_similarity, 0) END AS similarity,
       b.best AS best_similarity,
       CASE WHEN b.best IS NOT NULL THEN coalesce(r.weighted_similarity, 0) / b.positions END
           AS average_precision
FROM severity_systems AS s
CROSS JOIN instances AS i
LEFT JOIN severity_truth AS y ON y.instance_id = i.instance_id
LEFT JOIN (
    SELECT rd.system, rd.instance_id, count(*) AS n, max(rd.hit) AS hit,
           min(CASE WHEN rd.position = 1 THEN rd.distance END) AS top1,
           sum(rd.distance) AS total, min(rd.distance) AS nearest,
           sum(rd.similarity ORDER BY rd.position) AS total_similarity,
           sum(rd.similarity * w.weight ORDER BY rd.position) AS weighted_similarity
    FROM (
        SELECT *, 1.0 - 1.0 * distance / (SELECT min(diameter) FROM severity_best) AS similarity
        FROM severity_ranked_distances
    ) AS rd
    LEFT JOIN severity_truth AS one ON one.instance_id = rd.instance_id AND one.n_true = 1
    LEFT JOIN severity_best_weights AS w ON w.label = one.label AND w.position = rd.position
    GROUP BY rd.system, rd.instance_id
) AS r ON r.system = s.system AND r.instance_id = i.instance_id
LEFT JOIN severity_best AS b ON b.label = y.label AND y.n_true = 1
WHERE s.ranked

-- name: severity_histogram
-- (system, distance, instances): the mistakes by their severity (Bertinetto et al. 2020, Fig. 1): per system,
-- the instances whose top-1 label is wrong (d_1 > 0) at each distance d_1, for every distance that some
-- system's mistakes have (0 where this system has none). Σ distance · instances / Σ instances over a system's
-- rows is its mistake severity at k = 1.
SELECT s.system, d.distance, count(i.instance_id) AS instances
FROM severity_ranked_systems AS s
CROSS JOIN (SELECT DISTINCT top1 AS distance FROM severity_instance WHERE top1 > 0) AS d
LEFT JOIN severity_instance AS i ON i.system = s.system AND i.top1 = d.distance
GROUP BY s.system, d.distance

-- name: severity_class_count
-- (n): |C|, the classes hierarchical precision and mAP compare every class with (|C|² pairs).
SELECT count(*) AS n FROM severity_classes
