-- Hierarchical precision-recall curves of scored predictions (docs/scored_outputs.md), pooled as in Clus and
-- HEMDAG (Vens et al. 2008 §5.2): a threshold t predicts, for every instance, the nodes with a score >= t and
-- their ancestors (the root left out); at each t, micro hP and hR pool |Ŷaug_t ∩ Yaug|, |Ŷaug_t| and |Yaug| over
-- all instances. Closing a thresholded set under ancestors is thresholding the closed score
--   s*(i, c) = max { s(i, v) : v = c or v a descendant of c, v scored for i }
-- so the curve is the precision-recall curve of the (instance, node) pairs ranked by s*, the pairs of Yaug
-- positive (a pair without any score is never predicted: recall may end below 1).
-- Area: average precision by the step rule AP = Σ_k (R_k − R_{k−1}) P_k over the distinct thresholds in
-- decreasing order (R_0 = 0), as scikit-learn's average_precision_score; and the trapezoid rule over the same
-- points starting from (R, P) = (0, 1), as sklearn.metrics.auc(recall, precision).
-- Per class c the same over the pairs of c only; macro = the mean over the classes with a positive.
-- Reads: predictions (score), truth, systems, closure, nodes.
-- Sums of floats add their values in key order (sum(x ORDER BY key), as the measures' means): the digits do not
-- depend on the order in which an engine's threads add rows, and every engine prints DuckDB's.

-- name: closed_scores
-- (system, instance_id, label, score): s* of every node that a scored label of the instance reaches.
SELECT p.system, p.instance_id, c.ancestor AS label, max(p.score) AS score
FROM predictions AS p
JOIN closure AS c ON c.descendant = p.label
JOIN nodes AS n ON n.label = c.ancestor
WHERE p.score IS NOT NULL AND NOT n.is_root
GROUP BY p.system, p.instance_id, c.ancestor

-- name: true_augmented
-- (instance_id, label): Yaug, the true labels and their ancestors, the root left out.
SELECT DISTINCT t.instance_id, c.ancestor AS label
FROM truth AS t
JOIN closure AS c ON c.descendant = t.label
JOIN nodes AS n ON n.label = c.ancestor
WHERE NOT n.is_root

-- name: class_positives
-- (system, label, n_true): |{i : c ∈ Yaug_i}| for every class of Yaug, for every system.
SELECT s.system, t.label, count(*) AS n_true
FROM true_augmented AS t
CROSS JOIN systems AS s
GROUP BY s.system, t.label

-- name: scored_pairs
-- (system, instance_id, label, score, is_true): every pair with a closed score, positive when in Yaug.
SELECT s.system, s.instance_id, s.label, s.score, CASE WHEN t.label IS NULL THEN 0 ELSE 1 END AS is_true
FROM closed_scores AS s
LEFT JOIN true_augmented AS t ON t.instance_id = s.instance_id AND t.label = s.label

-- name: curve_points
-- (system, label, threshold, tp, fp, n_true): the cumulated counts at each distinct threshold, pooled
-- (label '' : every class) and per class with a positive.
WITH steps AS (
    SELECT system, '' AS label, score, sum(is_true) AS tp, sum(1 - is_true) AS fp
    FROM scored_pairs
    GROUP BY system, score
    UNION ALL
    SELECT system, label, score, sum(is_true), sum(1 - is_true)
    FROM scored_pairs
    GROUP BY system, label, score
),
positives AS (
    SELECT system, '' AS label, sum(n_true) AS n_true FROM class_positives GROUP BY system
    UNION ALL
    SELECT system, label, n_true FROM class_positives
)
SELECT
    s.system,
    s.label,
    s.score AS threshold,
    sum(s.tp) OVER (PARTITION BY s.system, s.label ORDER BY s.score DESC ROWS UNBOUNDED PRECEDING) AS tp,
    sum(s.fp) OVER (PARTITION BY s.system, s.label ORDER BY s.score DESC ROWS UNBOUNDED PRECEDING) AS fp,
    p.n_true
FROM steps AS s
JOIN positives AS p ON p.system = s.system AND p.label = s.label

-- name: pr_curve
-- (system, label, threshold, precision, recall, tp, fp): the curve, thresholds in decreasing order.
SELECT system, label, threshold, 1.0 * tp / (tp + fp) AS precision, 1.0 * tp / n_true AS recall, tp, fp
FROM curve_points

-- name: pr_area
-- (system, label, average_precision, auprc_trapezoid): the areas under each curve (label '' = pooled).
WITH ordered AS (
    SELECT
        system, label, threshold, precision, recall,
        coalesce(lag(recall) OVER (PARTITION BY system, label ORDER BY threshold DESC), 0.0) AS prev_recall,
        coalesce(lag(precision) OVER (PARTITION BY system, label ORDER BY threshold DESC), 1.0) AS prev_precision
    FROM pr_curve
)
SELECT
    system,
    label,
    sum((recall - prev_recall) * precision ORDER BY threshold) AS average_precision,
    sum((recall - prev_recall) * (precision + prev_precision) / 2 ORDER BY threshold) AS auprc_trapezoid
FROM ordered
GROUP BY system, label

-- name: precision_at_recall
-- (system, label, precision): the highest precision among the thresholds whose recall is >= $recall (NULL
-- when no threshold reaches it).
SELECT p.system, p.label, max(c.precision) AS precision
FROM (SELECT DISTINCT system, label FROM pr_curve) AS p
LEFT JOIN pr_curve AS c ON c.system = p.system AND c.label = p.label AND c.recall >= $recall
GROUP BY p.system, p.label
