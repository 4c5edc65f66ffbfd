-- Scoring-tree measures (Lanus et al., "Hierarchical Scoring for Machine Learning Classifier Error Impact
-- Evaluation", §III; SPEC §8). The taxonomy is a tree whose edge weights sit on the child (edges.weight);
-- W(n) = weight sum root -> n, W(root) = 0, every root-to-leaf sum is 1 (scoring_weight_faults states the rule,
-- which every door checks before these run; scoring_tree_check the tree's).
-- Per (truth t, prediction p) pair: d = edge count between t and p, R = W(lca(t, p)), Pn = W(t) + W(p) - 2R,
-- raw = R - Pn in [-2, 1]. With the offset o <= 0 ($offset) every score is (s - (s_min + o)) / (s_max - (s_min + o)):
--   PL      s = -d          on [-l, 0]   ->  1 - d / (l - o)
--   L       s = R           on [0, 1]    ->  (R - o) / (1 - o)
--   LPP     s = raw         on [-2, 1]   ->  (raw + 2 - o) / (3 - o)
--   LPPTPS  s = raw / W(t)  on [m, 1]    ->  (raw / W(t) - m - o) / (1 - m - o)
--   LPPPPS  s = raw / W(p)  on [m, 1]    ->  (raw / W(p) - m - o) / (1 - m - o)
-- l = longest path between two labels, m = min over label pairs of raw / W(t) (= min of raw / W(p), since raw
-- is symmetric); both are constants of the weighted tree. A ghost (no truth) or missed (no prediction)
-- detection scores 0 in every measure.
-- Micro: means over all pairs (detection errors included); hR = mean LPPTPS, hP = mean LPPPPS, hF = their
-- harmonic mean. Macro: per node, the mean over the pairs where the node is t or p, then the unweighted mean
-- over nodes (hF: mean of the per-node harmonic means).
-- Reads: nodes, edges, closure, truth, predictions, systems, pair_counts(system, truth, prediction, n).

-- name: scoring_nodes
-- W(n) for every node: the weights of the edges into n and into each of its ancestors, added from the root down
-- (in a stated order, as every sum of doubles of these files: the same digits whatever the rows' order).
SELECT n.label, n.is_root, coalesce(sum(e.weight ORDER BY -c.distance, c.ancestor), 0) AS w
FROM nodes AS n
LEFT JOIN closure AS c ON c.descendant = n.label
LEFT JOIN edges AS e ON e.child = c.ancestor
GROUP BY n.label, n.is_root

-- name: scoring_subtrees
-- Per node: the largest W in its subtree (itself included) and its height (edges on the longest way down).
SELECT c.ancestor AS label, max(s.w) AS sub_max, max(c.distance) AS height
FROM closure AS c
JOIN scoring_nodes AS s ON s.label = c.descendant
GROUP BY c.ancestor

-- name: scoring_branches
-- Per node: the two highest and the two heaviest branches below it (branch = a child and its subtree).
SELECT
    parent,
    max(CASE WHEN h_rank = 1 THEN height + 1 END) AS h1,
    max(CASE WHEN h_rank = 2 THEN height + 1 END) AS h2,
    max(CASE WHEN w_rank = 1 THEN child END) AS w1_child,
    max(CASE WHEN w_rank = 1 THEN sub_max END) AS w1,
    max(CASE WHEN w_rank = 2 THEN sub_max END) AS w2
FROM (
    SELECT
        e.parent,
        e.child,
        t.sub_max,
        t.height,
        row_number() OVER (PARTITION BY e.parent ORDER BY t.height DESC, e.child) AS h_rank,
        row_number() OVER (PARTITION BY e.parent ORDER BY t.sub_max DESC, e.child) AS w_rank
    FROM edges AS e
    JOIN scoring_subtrees AS t ON t.label = e.child
) AS ranked
GROUP BY parent

-- name: scoring_lca_options
-- For each label t and each possible lowest common ancestor a (t itself or an ancestor), the largest W(p)
-- over the labels p with lca(t, p) = a: for a = t the subtree of t; for a above t, a itself (unless it is the
-- root, never a label) or the heaviest branch of a other than the one leading to t. raw / W(t) is smallest
-- for that p, so m is the minimum over these rows.
SELECT s.label AS t, s.w AS w_t, s.w AS w_a, st.sub_max AS w_p
FROM scoring_nodes AS s
JOIN scoring_subtrees AS st ON st.label = s.label
WHERE NOT s.is_root
UNION ALL
SELECT
    s.label,
    s.w,
    a.w,
    coalesce(CASE WHEN br.w1_child = b.child THEN br.w2 ELSE br.w1 END, CASE WHEN a.is_root THEN NULL ELSE a.w END)
FROM scoring_nodes AS s
JOIN closure AS cb ON cb.descendant = s.label
JOIN edges AS b ON b.child = cb.ancestor
JOIN scoring_nodes AS a ON a.label = b.parent
JOIN scoring_branches AS br ON br.parent = b.parent
WHERE NOT s.is_root

-- name: scoring_weight_faults
-- (fault, label, value): why the edge weights do not make a scoring tree, a row per node at fault, the rules
-- in the order every door names them: the edge into label has no weight, 1 from a virtual root (added above
-- several parentless nodes), 2 from a node of the taxonomy; 3 it has a negative weight; 4 a leaf whose W is
-- not 1 within $weight_tolerance; 5 a node other than the root whose W is not > 0.
-- No row: the weighted measures are defined (PL alone needs no weights).
SELECT CASE WHEN p.is_virtual THEN 1 ELSE 2 END AS fault, e.child AS label, CAST(NULL AS DOUBLE) AS value
FROM edges AS e
JOIN nodes AS p ON p.label = e.parent
WHERE e.weight IS NULL
UNION ALL
SELECT 3, child, weight FROM edges WHERE weight < 0
UNION ALL
SELECT 4, s.label, s.w
FROM scoring_nodes AS s
JOIN nodes AS n ON n.label = s.label
WHERE n.is_leaf AND abs(s.w - 1) > $weight_tolerance
UNION ALL
SELECT 5, label, w FROM scoring_nodes WHERE NOT is_root AND w <= 0

-- name: scoring_weight_fault
-- (label, message): the first row of scoring_weight_faults (by fault, then label) in the words every door says,
-- with how many other nodes have that fault. hiersql.measures.scoring.trees.weight_fault raises them naming the
-- taxonomy's file and the line of the edge into label; scoring_weights_check fails with them. The value is
-- written as a decimal of 9 places without trailing zeros: every engine writes it so (a double 2 is 2.0 in
-- DuckDB's and Spark's text, 2 in PostgreSQL's).
SELECT label,
       'the weighted scoring-tree measures need edge weights that make a scoring tree: '
       || CASE fault
              WHEN 1 THEN 'the edges of the virtual root above several parentless nodes have no weight (give the'
                          || ' tree a single root): the edge into '
              WHEN 2 THEN 'an edge without weight, into '
              WHEN 3 THEN 'edge weights must be non-negative; the edge into '
              WHEN 4 THEN 'every root-to-leaf weight sum must be 1; the leaf '
              ELSE 'the path from the root must weigh more than 0 (LPPTPS and LPPPPS divide by it); the node '
          END
       || label
       || coalesce(' (' || TRIM(TRAILING '.' FROM TRIM(TRAILING '0' FROM CAST(CAST(value AS DECIMAL(38, 9))
                                                                            AS VARCHAR))) || ')', '')
       || CASE WHEN n > 1 THEN ' and ' || CAST(n - 1 AS VARCHAR) || ' more' ELSE '' END AS message
FROM (SELECT fault, label, value, count(*) OVER (PARTITION BY fault) AS n FROM scoring_weight_faults) AS f
ORDER BY fault, label
LIMIT 1

-- name: scoring_weights_check
-- (failed): no row, or the failure (hiersql's cast error) of scoring_weight_fault: the check that
-- hiersql.measures.scoring makes before a weighted measure asked for by name runs (a printed script of one runs
-- it; the family as a whole leaves the weighted measures out instead).
SELECT CAST('hiersql: edges: ' || message AS INTEGER) AS failed
FROM scoring_weight_fault

-- name: scoring_constants
-- l: longest path between two labels = the largest sum of the two highest branches below a node (a node
-- other than the root may also end the path itself); m = min of raw / W(t) over all label pairs; weighted:
-- whether the edge weights make a scoring tree (scoring_weight_faults has no row); else the weighted scores
-- are NULL: PL alone is defined.
SELECT
    (SELECT max(CASE WHEN n.is_root THEN b.h1 + b.h2 ELSE b.h1 + coalesce(b.h2, 0) END)
     FROM scoring_branches AS b
     JOIN scoring_nodes AS n ON n.label = b.parent) AS l,
    (SELECT min((3.0 * w_a - w_t - w_p) / nullif(w_t, 0))
     FROM scoring_lca_options
     WHERE w_p IS NOT NULL) AS m,
    NOT EXISTS (SELECT 1 FROM scoring_weight_faults) AS weighted

-- name: scoring_root_labels
-- (source, label): the labels that are the root, with where they are given (the truth, a system's predictions,
-- a confusion matrix): a scoring tree's root is never a label (Lanus et al. §III).
SELECT source, label
FROM (
    SELECT 'truth' AS source, label FROM truth
    UNION ALL SELECT 'predictions of ' || system, label FROM predictions
    UNION ALL SELECT 'confusion matrix ' || system, truth FROM pair_counts
    UNION ALL SELECT 'confusion matrix ' || system, prediction FROM pair_counts
) AS labels
WHERE label IN (SELECT label FROM nodes WHERE is_root)

-- name: scoring_tree_fault
-- (message): why the taxonomy is no tree (a node with several parents, the first by name), in the words every
-- door says; no row for a tree. hiersql.measures.scoring gives it as the reason the family does not apply.
SELECT 'scoring trees must be trees (the paper''s measures are defined on trees); nodes with several parents: '
       || min(child) || CASE WHEN count(*) > 1 THEN ' ...' ELSE '' END AS message
FROM (SELECT child FROM edges GROUP BY child HAVING count(*) > 1) AS shared
HAVING count(*) > 0

-- name: scoring_tree_check
-- (failed): NULL, or the failure (hiersql's cast error; DuckDB's macros raise it as error()) of a taxonomy
-- that is not a tree (scoring_tree_fault) or of a root that is a label (scoring_root_labels): the
-- checks that hiersql.measures.scoring makes before its measures run.
SELECT CASE
    WHEN EXISTS (SELECT 1 FROM scoring_tree_fault)
    THEN CAST((SELECT 'hiersql: edges: ' || message FROM scoring_tree_fault) AS INTEGER)
    WHEN EXISTS (SELECT 1 FROM scoring_root_labels)
    THEN CAST((SELECT 'hiersql: ' || min(source) || ': the root of a scoring tree is never a label (Lanus et al.'
                      || ' §III): ''' || min(label) || '''' FROM scoring_root_labels) AS INTEGER)
END AS failed

-- name: scoring_pairs
-- (system, instance_id, truth, prediction, n): the pairs to score. From the label tables: within an instance a
-- label in both sets pairs with itself, the other true and predicted labels pair in rank order (k-th with
-- k-th); a true label left over is a missed detection (prediction NULL), a predicted one a ghost (truth
-- NULL). Plus the counted pairs of confusion matrices (pair_counts, instance_id NULL).
WITH system_truth AS (
    SELECT s.system, t.instance_id, t.label, t.rank
    FROM truth AS t
    CROSS JOIN systems AS s
),
truth_left AS (
    SELECT
        system,
        instance_id,
        label,
        row_number() OVER (PARTITION BY system, instance_id ORDER BY rank) AS k
    FROM system_truth AS t
    WHERE NOT EXISTS (
        SELECT 1 FROM predictions AS p
        WHERE p.system = t.system AND p.instance_id = t.instance_id AND p.label = t.label
    )
),
predictions_left AS (
    SELECT
        system,
        instance_id,
        label,
        row_number() OVER (PARTITION BY system, instance_id ORDER BY rank) AS k
    FROM predictions AS p
    WHERE NOT EXISTS (SELECT 1 FROM truth AS t WHERE t.instance_id = p.instance_id AND t.label = p.label)
)
SELECT p.system, p.instance_id, p.label AS truth, p.label AS prediction, 1 AS n
FROM predictions AS p
JOIN truth AS t ON t.instance_id = p.instance_id AND t.label = p.label
UNION ALL
SELECT
    coalesce(t.system, p.system),
    coalesce(t.instance_id, p.instance_id),
    t.label,
    p.label,
    1
FROM truth_left AS t
FULL JOIN predictions_left AS p ON p.system = t.system AND p.instance_id = t.instance_id AND p.k = t.k
UNION ALL
SELECT system, CAST(NULL AS VARCHAR), truth, prediction, n
FROM pair_counts

-- name: scoring_label_pairs
-- Per distinct (truth, prediction) with both labels: d = min over common ancestors of the two distances,
-- R = W(lca) (the largest W of a common ancestor: W never decreases downwards), W(t), W(p).
SELECT q.truth, q.prediction, q.d, q.r, nt.w AS w_t, np.w AS w_p
FROM (
    SELECT pairs.truth, pairs.prediction, min(ct.distance + cp.distance) AS d, max(a.w) AS r
    FROM (
        SELECT DISTINCT truth, prediction FROM scoring_pairs WHERE truth IS NOT NULL AND prediction IS NOT NULL
    ) AS pairs
    JOIN closure AS ct ON ct.descendant = pairs.truth
    JOIN closure AS cp ON cp.descendant = pairs.prediction AND cp.ancestor = ct.ancestor
    JOIN scoring_nodes AS a ON a.label = ct.ancestor
    GROUP BY pairs.truth, pairs.prediction
) AS q
JOIN scoring_nodes AS nt ON nt.label = q.truth
JOIN scoring_nodes AS np ON np.label = q.prediction

-- name: scoring_instance
-- One row per pair with its five scores (0 for a detection error; the weighted four NULL on a tree without
-- weights).
SELECT
    p.system,
    p.instance_id,
    p.truth,
    p.prediction,
    p.n,
    CASE WHEN s.d IS NULL THEN 0.0 WHEN s.d = 0 THEN 1.0 ELSE 1 - 1.0 * s.d / (c.l - $offset) END AS pl,
    CASE WHEN NOT c.weighted THEN NULL WHEN s.d IS NULL THEN 0.0 ELSE (s.r - $offset) / (1 - $offset) END
        AS lca_reward,
    CASE WHEN NOT c.weighted THEN NULL WHEN s.d IS NULL THEN 0.0 ELSE (s.raw + 2 - $offset) / (3 - $offset) END
        AS lpp,
    CASE WHEN NOT c.weighted THEN NULL WHEN s.d IS NULL THEN 0.0
         ELSE (s.raw / nullif(s.w_t, 0) - c.m - $offset) / nullif(1 - c.m - $offset, 0) END AS lpptps,
    CASE WHEN NOT c.weighted THEN NULL WHEN s.d IS NULL THEN 0.0
         ELSE (s.raw / nullif(s.w_p, 0) - c.m - $offset) / nullif(1 - c.m - $offset, 0) END AS lpppps
FROM scoring_pairs AS p
LEFT JOIN (
    SELECT truth, prediction, d, r, w_t, w_p, 3.0 * r - w_t - w_p AS raw FROM scoring_label_pairs
) AS s ON s.truth = p.truth AND s.prediction = p.prediction
CROSS JOIN scoring_constants AS c

-- name: scoring_node_means
-- Macro, per node: the means over the pairs where the node is the truth or the prediction (once if both).
-- Sums and means add their values in a stated order (same digits on every run; on Spark too: see hiersql.engines).
SELECT
    system,
    node,
    1.0 * sum(n * pl ORDER BY instance_id, truth, prediction) / sum(n) AS pl,
    1.0 * sum(n * lca_reward ORDER BY instance_id, truth, prediction) / sum(n) AS lca_reward,
    1.0 * sum(n * lpp ORDER BY instance_id, truth, prediction) / sum(n) AS lpp,
    1.0 * sum(n * lpptps ORDER BY instance_id, truth, prediction) / sum(n) AS lpptps,
    1.0 * sum(n * lpppps ORDER BY instance_id, truth, prediction) / sum(n) AS lpppps
FROM (
    SELECT system, truth AS node, instance_id, truth, prediction, n, pl, lca_reward, lpp, lpptps, lpppps
    FROM scoring_instance
    WHERE truth IS NOT NULL
    UNION ALL
    SELECT system, prediction, instance_id, truth, prediction, n, pl, lca_reward, lpp, lpptps, lpppps
    FROM scoring_instance
    WHERE prediction IS NOT NULL AND (truth IS NULL OR truth <> prediction)
) AS by_node
WHERE n > 0
GROUP BY system, node

-- name: scoring_summary
-- (system, metric, average, value); scoring_hp = mean LPPPPS, scoring_hr = mean LPPTPS; PL alone on a tree
-- whose weights make no scoring tree.
WITH micro AS (
    SELECT
        system,
        1.0 * sum(n * pl ORDER BY instance_id, truth, prediction) / sum(n) AS pl,
        1.0 * sum(n * lca_reward ORDER BY instance_id, truth, prediction) / sum(n) AS lca_reward,
        1.0 * sum(n * lpp ORDER BY instance_id, truth, prediction) / sum(n) AS lpp,
        1.0 * sum(n * lpptps ORDER BY instance_id, truth, prediction) / sum(n) AS lpptps,
        1.0 * sum(n * lpppps ORDER BY instance_id, truth, prediction) / sum(n) AS lpppps
    FROM scoring_instance
    WHERE n > 0
    GROUP BY system
),
macro AS (
    SELECT
        system,
        avg(pl ORDER BY node) AS pl,
        avg(lca_reward ORDER BY node) AS lca_reward,
        avg(lpp ORDER BY node) AS lpp,
        avg(lpptps ORDER BY node) AS lpptps,
        avg(lpppps ORDER BY node) AS lpppps,
        avg(CASE WHEN lpppps + lpptps = 0 THEN 0.0 ELSE 2 * lpppps * lpptps / (lpppps + lpptps) END
            ORDER BY node) AS hf
    FROM scoring_node_means
    GROUP BY system
),
both_averages AS (
    SELECT system, 'micro' AS average, pl, lca_reward, lpp, lpptps, lpppps,
           CASE WHEN lpppps + lpptps = 0 THEN 0.0 ELSE 2 * lpppps * lpptps / (lpppps + lpptps) END AS hf
    FROM micro
    UNION ALL
    SELECT system, 'macro', pl, lca_reward, lpp, lpptps, lpppps, hf FROM macro
)
-- one row per (system, average) and metric: both_averages read once, its columns unpivoted
SELECT
    b.system,
    m.metric,
    b.average,
    CASE m.k WHEN 0 THEN b.pl WHEN 1 THEN b.lca_reward WHEN 2 THEN b.lpp WHEN 3 THEN b.lpptps
             WHEN 4 THEN b.lpppps WHEN 5 THEN b.lpppps WHEN 6 THEN b.lpptps ELSE b.hf END AS value
FROM both_averages AS b
CROSS JOIN (VALUES (0, 'pl'), (1, 'lca_reward'), (2, 'lpp'), (3, 'lpptps'), (4, 'lpppps'), (5, 'scoring_hp'),
                   (6, 'scoring_hr'), (7, 'scoring_hf')) AS m(k, metric)
-- the weighted measures only where the edge weights make a scoring tree, as hiersql evaluate's family
WHERE m.k = 0 OR NOT EXISTS (SELECT 1 FROM scoring_weight_faults)

-- name: scoring_flat_classes
-- The paper's flat rows, per class: the classes are the labels seen as truth or prediction plus a "none"
-- class ('' here; no label is empty) for the missing side of detection errors; 0/0 counts as 1 (scikit-learn
-- zero_division=1, as the paper's printed macro precision of Model 2 shows).
SELECT
    system,
    class_label,
    sum(n_tp) AS tp,
    sum(n_pred) AS n_pred,
    sum(n_true) AS n_true,
    CASE WHEN sum(n_pred) = 0 THEN 1.0 ELSE 1.0 * sum(n_tp) / sum(n_pred) END AS class_precision,
    CASE WHEN sum(n_true) = 0 THEN 1.0 ELSE 1.0 * sum(n_tp) / sum(n_true) END AS class_recall
FROM (
    SELECT system, coalesce(truth, '') AS class_label, n AS n_true, 0 AS n_pred,
           CASE WHEN truth = prediction THEN n ELSE 0 END AS n_tp
    FROM scoring_pairs
    UNION ALL
    SELECT system, coalesce(prediction, ''), 0, n, 0
    FROM scoring_pairs
) AS per_side
GROUP BY system, class_label

-- name: scoring_flat
-- (system, metric, average, value) of the flat rows: macro = unweighted mean over classes of the per-class
-- precision, recall and F1; micro pools the counts (all three equal the accuracy when every pair has both
-- sides counted once).
WITH micro AS (
    SELECT
        system,
        CASE WHEN sum(n_pred) = 0 THEN 1.0 ELSE 1.0 * sum(tp) / sum(n_pred) END AS p,
        CASE WHEN sum(n_true) = 0 THEN 1.0 ELSE 1.0 * sum(tp) / sum(n_true) END AS r
    FROM scoring_flat_classes
    GROUP BY system
),
macro AS (
    SELECT
        system,
        avg(class_precision ORDER BY class_label) AS p,
        avg(class_recall ORDER BY class_label) AS r,
        avg(CASE WHEN class_precision + class_recall = 0 THEN 0.0
                 ELSE 2 * class_precision * class_recall / (class_precision + class_recall) END
            ORDER BY class_label) AS f
    FROM scoring_flat_classes
    GROUP BY system
)
SELECT system, 'flat_precision' AS metric, 'macro' AS average, p AS value FROM macro
UNION ALL
SELECT system, 'flat_recall', 'macro', r FROM macro
UNION ALL
SELECT system, 'flat_f1', 'macro', f FROM macro
UNION ALL
SELECT system, 'flat_precision', 'micro', p FROM micro
UNION ALL
SELECT system, 'flat_recall', 'micro', r FROM micro
UNION ALL
SELECT system, 'flat_f1', 'micro', CASE WHEN p + r = 0 THEN 0.0 ELSE 2 * p * r / (p + r) END FROM micro
