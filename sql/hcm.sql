-- Hierarchical confusion matrix (Riehl, Neunteufel, Hemberg; SPEC §6), the set-based part.
-- A path is a root-first node list. For a true path t and a predicted path p:
--   common path c = the longest prefix of t whose nodes all occur in p
--   TP = |c| - 1 (root excluded)      FP = |p \ t|      FN = |t \ p|
--   TN = |S \ t| + |D \ (t ∪ p)|, S = siblings (other children of every direct parent) of the nodes of c,
--        D = the direct children of the last node of c            ($tn = 'published', the authors' code)
--   $tn = 'descendants' (the paper's formula): S also holds every descendant of those siblings and D every
--        descendant of the last node of c.
-- The greedy path cover of each label set and the greedy matching of predicted to true paths are sequential
-- per instance; hiersql.metrics.confusion runs them vectorised over all instances between these queries and
-- writes their choices as the tables hcm_cover_choice(grp, rank, path_no, step) (read by hcm_chosen_paths)
-- and hcm_match(grp, j, t_path, p_label, p_path) (read by hcm_instance).
-- Reads: truth, predictions, systems, instances, nodes, edges, closure.

-- name: hcm_groups
-- Integer ids of the label sets: one per truth instance (side 't') and one per (system, instance) ('p').
SELECT side, system, instance_id, row_number() OVER (ORDER BY side DESC, system, instance_id) AS grp
FROM (
    SELECT 't' AS side, '' AS system, instance_id FROM instances
    UNION ALL
    SELECT 'p' AS side, s.system, i.instance_id FROM systems AS s CROSS JOIN instances AS i
) AS sets

-- name: hcm_set_labels
-- The labels of every set with their rank; a (system, instance) with no prediction is the set {root}, so
-- it is scored as the single path [root].
SELECT g.grp, t.label, t.rank
FROM truth AS t
JOIN hcm_groups AS g ON g.side = 't' AND g.instance_id = t.instance_id
UNION ALL
SELECT g.grp, p.label, p.rank
FROM predictions AS p
JOIN hcm_groups AS g ON g.side = 'p' AND g.system = p.system AND g.instance_id = p.instance_id
UNION ALL
SELECT g.grp, r.label, 1 AS rank
FROM hcm_groups AS g
CROSS JOIN (SELECT label FROM nodes WHERE is_root) AS r
WHERE g.side = 'p' AND NOT EXISTS (
    SELECT 1 FROM predictions AS p WHERE p.system = g.system AND p.instance_id = g.instance_id
)

-- name: hcm_used_labels
SELECT label, row_number() OVER (ORDER BY label) AS label_id
FROM (SELECT DISTINCT label FROM hcm_set_labels) AS used

-- name: hcm_paths
-- Every root path of every used label, root first. path_no numbers the paths of a label in the order of
-- their node positions (order of first appearance in the taxonomy input), compared element-wise; name_rank
-- orders all paths by their node names, compared element-wise. A label outside the taxonomy (possible only
-- when rows are inserted into the tables directly, as the GermEval subtask-A reproduction does for the
-- authors' empty labels) is the path [root, label].
WITH RECURSIVE up (label, top, path, keys) AS (
    SELECT u.label, u.label, [u.label], [n.position]
    FROM hcm_used_labels AS u
    JOIN nodes AS n ON n.label = u.label
    UNION ALL
    SELECT up.label, e.parent, list_prepend(e.parent, up.path), list_prepend(n.position, up.keys)
    FROM up
    JOIN edges AS e ON e.child = up.top
    JOIN nodes AS n ON n.label = e.parent
),
found AS (
    SELECT label, row_number() OVER (PARTITION BY label ORDER BY keys) AS path_no, path
    FROM up
    WHERE top IN (SELECT label FROM nodes WHERE is_root)
    UNION ALL
    SELECT u.label, 1 AS path_no, [r.label, u.label] AS path
    FROM hcm_used_labels AS u
    CROSS JOIN (SELECT label FROM nodes WHERE is_root) AS r
    WHERE u.label NOT IN (SELECT label FROM nodes)
)
SELECT f.label, u.label_id, f.path_no, f.path, len(f.path) AS n_nodes,
       row_number() OVER (ORDER BY f.path) AS name_rank
FROM found AS f
JOIN hcm_used_labels AS u ON u.label = f.label

-- name: hcm_path_nodes
-- One row per node of every path; pos is 1-based from the root.
SELECT label, path_no, n_nodes, unnest(path) AS node, generate_subscripts(path, 1) AS pos
FROM hcm_paths

-- name: hcm_cover_candidates
-- Input of the greedy path cover: for every label of a set and every root path of it, the labels of the
-- same set that lie on that path (as label ids). Candidates are ordered by rank, then path_no.
SELECT l.grp, l.rank, pn.path_no, u.label_id AS on_path
FROM hcm_set_labels AS l
JOIN hcm_path_nodes AS pn ON pn.label = l.label
JOIN hcm_set_labels AS o ON o.grp = l.grp AND o.label = pn.node
JOIN hcm_used_labels AS u ON u.label = o.label

-- name: hcm_chosen_paths
-- The paths the cover chose, with the step at which each was chosen in its set.
SELECT g.side, g.system, g.instance_id, l.grp, l.label, p.label_id, c.path_no, p.n_nodes, c.step
FROM hcm_cover_choice AS c
JOIN hcm_set_labels AS l ON l.grp = c.grp AND l.rank = c.rank
JOIN hcm_groups AS g ON g.grp = c.grp
JOIN hcm_paths AS p ON p.label = l.label AND p.path_no = c.path_no

-- name: hcm_chosen_truth
-- The true labels: last nodes of the chosen paths, in the order they were chosen (j from 0).
SELECT instance_id, label, row_number() OVER (PARTITION BY instance_id ORDER BY step) - 1 AS j
FROM (
    SELECT instance_id, label, min(step) AS step FROM hcm_chosen_paths WHERE side = 't'
    GROUP BY instance_id, label
) AS firsts

-- name: hcm_chosen_pred
-- The predicted paths.
SELECT grp, instance_id, label, label_id, path_no, n_nodes FROM hcm_chosen_paths WHERE side = 'p'

-- name: hcm_pairs
-- The distinct (true path, predicted path) pairs that some instance compares.
SELECT DISTINCT tp.label AS t_label, tp.path_no AS t_path, p.label AS p_label, p.path_no AS p_path
FROM hcm_chosen_truth AS t
JOIN hcm_paths AS tp ON tp.label = t.label
JOIN hcm_chosen_pred AS p ON p.instance_id = t.instance_id

-- name: hcm_pair_nodes
-- Every node of the true path of each pair, flagged when it is on the predicted path.
SELECT
    pr.t_label, pr.t_path, pr.p_label, pr.p_path, tn.n_nodes AS t_len, tn.pos, tn.node,
    pn.node IS NOT NULL AS in_p
FROM hcm_pairs AS pr
JOIN hcm_path_nodes AS tn ON tn.label = pr.t_label AND tn.path_no = pr.t_path
LEFT JOIN hcm_path_nodes AS pn ON pn.label = pr.p_label AND pn.path_no = pr.p_path AND pn.node = tn.node

-- name: hcm_pair_common
-- n_common = |c| (the prefix of t up to the first node missing from p), n_shared = |t ∩ p|.
SELECT
    t_label, t_path, p_label, p_path,
    coalesce(min(CASE WHEN NOT in_p THEN pos END), max(t_len) + 1) - 1 AS n_common,
    count(CASE WHEN in_p THEN 1 END) AS n_shared,
    max(t_len) AS t_len
FROM hcm_pair_nodes
GROUP BY t_label, t_path, p_label, p_path

-- name: hcm_pair_siblings
-- |S \ t|: the siblings of the common-path nodes (through every direct parent), with their descendants
-- when $tn = 'descendants', not on the true path.
SELECT c.t_label, c.t_path, c.p_label, c.p_path, count(DISTINCT cl.descendant) AS n_siblings
FROM hcm_pair_common AS c
JOIN hcm_pair_nodes AS x
    ON x.t_label = c.t_label AND x.t_path = c.t_path AND x.p_label = c.p_label AND x.p_path = c.p_path
   AND x.pos <= c.n_common
JOIN edges AS up ON up.child = x.node
JOIN edges AS sib ON sib.parent = up.parent AND sib.child <> x.node
JOIN closure AS cl ON cl.ancestor = sib.child AND ($tn = 'descendants' OR cl.distance = 0)
WHERE NOT EXISTS (
    SELECT 1 FROM hcm_path_nodes AS t
    WHERE t.label = c.t_label AND t.path_no = c.t_path AND t.node = cl.descendant
)
GROUP BY c.t_label, c.t_path, c.p_label, c.p_path

-- name: hcm_pair_below
-- |D \ (t ∪ p)|: the direct children (all descendants when $tn = 'descendants') of the last common node.
SELECT c.t_label, c.t_path, c.p_label, c.p_path, count(DISTINCT cl.descendant) AS n_below
FROM hcm_pair_common AS c
JOIN hcm_pair_nodes AS last
    ON last.t_label = c.t_label AND last.t_path = c.t_path AND last.p_label = c.p_label
   AND last.p_path = c.p_path AND last.pos = c.n_common
JOIN closure AS cl
    ON cl.ancestor = last.node AND cl.distance >= 1 AND ($tn = 'descendants' OR cl.distance = 1)
WHERE NOT EXISTS (
    SELECT 1 FROM hcm_path_nodes AS t
    WHERE t.label = c.t_label AND t.path_no = c.t_path AND t.node = cl.descendant
)
AND NOT EXISTS (
    SELECT 1 FROM hcm_path_nodes AS p
    WHERE p.label = c.p_label AND p.path_no = c.p_path AND p.node = cl.descendant
)
GROUP BY c.t_label, c.t_path, c.p_label, c.p_path

-- name: hcm_pair_counts
-- TP, FP, FN, TN of every distinct (true path, predicted path) pair.
SELECT
    c.t_label, c.t_path, c.p_label, c.p_path, c.n_common,
    c.n_common - 1 AS tp,
    pp.n_nodes - c.n_shared AS fp,
    c.t_len - c.n_shared AS fn,
    coalesce(s.n_siblings, 0) + coalesce(b.n_below, 0) AS tn
FROM hcm_pair_common AS c
JOIN hcm_paths AS pp ON pp.label = c.p_label AND pp.path_no = c.p_path
LEFT JOIN hcm_pair_siblings AS s
    ON s.t_label = c.t_label AND s.t_path = c.t_path AND s.p_label = c.p_label AND s.p_path = c.p_path
LEFT JOIN hcm_pair_below AS b
    ON b.t_label = c.t_label AND b.t_path = c.t_path AND b.p_label = c.p_label AND b.p_path = c.p_path

-- name: hcm_candidates
-- Input of the greedy matching: every (predicted path, true label j, path of j) of every (system, instance)
-- grp, with the pair's counts. m = the longest common path of the predicted path with any true path;
-- rank = the position of the predicted path when taken by m descending, then by node names descending.
SELECT
    *,
    dense_rank() OVER (PARTITION BY grp ORDER BY m DESC, name_rank DESC) - 1 AS rank
FROM (
    SELECT
        p.grp, p.label_id AS p_label, p.path_no AS p_path, pp.name_rank, t.j, tp.path_no AS t_path,
        k.n_common, k.tp, k.fp, k.fn, k.tn,
        max(k.n_common) OVER (PARTITION BY p.grp, p.label_id, p.path_no) AS m
    FROM hcm_chosen_pred AS p
    JOIN hcm_paths AS pp ON pp.label = p.label AND pp.path_no = p.path_no
    JOIN hcm_chosen_truth AS t ON t.instance_id = p.instance_id
    JOIN hcm_paths AS tp ON tp.label = t.label
    JOIN hcm_pair_counts AS k
        ON k.t_label = t.label AND k.t_path = tp.path_no AND k.p_label = p.label AND k.p_path = p.path_no
) AS pairs

-- name: hcm_instance
-- TP, FP, FN, TN per (system, instance) of the truth: the counts of the matched pairs (hcm_match is written
-- by the vectorised greedy matching), FP = |p| - 1 of each predicted path left unmatched, and
-- FN = shortest path length - 1 of each true label left unmatched.
WITH matched AS (
    SELECT c.*
    FROM hcm_candidates AS c
    JOIN hcm_match AS mt
        ON mt.grp = c.grp AND mt.j = c.j AND mt.t_path = c.t_path AND mt.p_label = c.p_label
       AND mt.p_path = c.p_path
),
parts AS (
    SELECT grp, tp, fp, fn, tn FROM matched
    UNION ALL
    SELECT p.grp, 0, p.n_nodes - 1, 0, 0
    FROM hcm_chosen_pred AS p
    WHERE NOT EXISTS (
        SELECT 1 FROM matched AS mt WHERE mt.grp = p.grp AND mt.p_label = p.label_id AND mt.p_path = p.path_no
    )
    UNION ALL
    SELECT g.grp, 0, 0, d.depth, 0
    FROM hcm_chosen_truth AS t
    JOIN hcm_groups AS g ON g.side = 'p' AND g.instance_id = t.instance_id
    JOIN (SELECT label, min(n_nodes) - 1 AS depth FROM hcm_paths GROUP BY label) AS d ON d.label = t.label
    WHERE NOT EXISTS (SELECT 1 FROM matched AS mt WHERE mt.grp = g.grp AND mt.j = t.j)
)
SELECT
    g.system, g.instance_id,
    CAST(coalesce(sum(pt.tp), 0) AS BIGINT) AS tp, CAST(coalesce(sum(pt.fp), 0) AS BIGINT) AS fp,
    CAST(coalesce(sum(pt.fn), 0) AS BIGINT) AS fn, CAST(coalesce(sum(pt.tn), 0) AS BIGINT) AS tn
FROM hcm_groups AS g
LEFT JOIN parts AS pt ON pt.grp = g.grp
WHERE g.side = 'p'
GROUP BY g.system, g.instance_id

-- name: hcm_summary
-- (system, metric, average, value) from hcm_instance(system, instance_id, tp, fp, fn, tn): the summed
-- counts (average ''), the measures of Riehl et al. Table II on the summed counts ('micro') and the mean of
-- the per-instance measures ('macro'). A zero denominator gives $zero_division. FNR is FN / (FN + TP) (the
-- paper's Table II prints FP in the numerator, a typo).
WITH micro AS (
    SELECT
        system,
        CAST(sum(tp) AS DOUBLE) AS tp, CAST(sum(fp) AS DOUBLE) AS fp,
        CAST(sum(fn) AS DOUBLE) AS fn, CAST(sum(tn) AS DOUBLE) AS tn
    FROM hcm_instance
    GROUP BY system
),
per_instance AS (
    SELECT system, CAST(tp AS DOUBLE) AS tp, CAST(fp AS DOUBLE) AS fp, CAST(fn AS DOUBLE) AS fn,
           CAST(tn AS DOUBLE) AS tn
    FROM hcm_instance
),
both_levels AS (
    SELECT 'micro' AS average, system, tp, fp, fn, tn FROM micro
    UNION ALL
    SELECT 'macro' AS average, system, tp, fp, fn, tn FROM per_instance
),
rates AS (
    SELECT
        average, system, tp, fp, fn, tn,
        CASE WHEN tp + tn + fp + fn = 0 THEN $zero_division ELSE (tp + tn) / (tp + tn + fp + fn) END AS acc,
        CASE WHEN tp + fp = 0 THEN $zero_division ELSE tp / (tp + fp) END AS ppv,
        CASE WHEN tp + fn = 0 THEN $zero_division ELSE tp / (tp + fn) END AS tpr,
        CASE WHEN tp + fn = 0 THEN $zero_division ELSE fn / (tp + fn) END AS fnr,
        CASE WHEN fp + tn = 0 THEN $zero_division ELSE fp / (fp + tn) END AS fpr,
        CASE WHEN fp + tn = 0 THEN $zero_division ELSE tn / (fp + tn) END AS tnr,
        CASE WHEN 2 * tp + fp + fn = 0 THEN $zero_division ELSE 2 * tp / (2 * tp + fp + fn) END AS f1,
        CASE WHEN (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn) = 0 THEN $zero_division
             ELSE (tp * tn - fp * fn) / sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)) END AS mcc
    FROM both_levels
),
measures AS (
    SELECT
        average, system, acc, ppv, tpr, fnr, fpr, tnr, f1, mcc,
        CASE WHEN tp + fn = 0 OR fp + tn = 0 OR tpr + tnr - 1 = 0 THEN $zero_division
             ELSE (sqrt(tpr * (1 - tnr)) + tnr - 1) / (tpr + tnr - 1) END AS pt
    FROM rates
),
summary AS (
    SELECT system, average, avg(acc) AS acc, avg(ppv) AS ppv, avg(tpr) AS tpr, avg(fnr) AS fnr,
           avg(fpr) AS fpr, avg(tnr) AS tnr, avg(f1) AS f1, avg(mcc) AS mcc, avg(pt) AS pt
    FROM measures
    GROUP BY system, average
)
SELECT system, 'hcm_tp' AS metric, '' AS average, tp AS value FROM micro
UNION ALL SELECT system, 'hcm_fp', '', fp FROM micro
UNION ALL SELECT system, 'hcm_fn', '', fn FROM micro
UNION ALL SELECT system, 'hcm_tn', '', tn FROM micro
UNION ALL SELECT system, 'hcm_accuracy', average, acc FROM summary
UNION ALL SELECT system, 'hcm_precision', average, ppv FROM summary
UNION ALL SELECT system, 'hcm_recall', average, tpr FROM summary
UNION ALL SELECT system, 'hcm_f1', average, f1 FROM summary
UNION ALL SELECT system, 'hcm_mcc', average, mcc FROM summary
UNION ALL SELECT system, 'hcm_fnr', average, fnr FROM summary
UNION ALL SELECT system, 'hcm_fpr', average, fpr FROM summary
UNION ALL SELECT system, 'hcm_tnr', average, tnr FROM summary
UNION ALL SELECT system, 'hcm_pt', average, pt FROM summary
