-- Multi-label confusion matrix (Krstinić et al. 2020, §3.2, Algorithm 1, eq. 11-17; SPEC §7).
-- Rows = true labels, columns = predicted labels. Y, Z: the true and predicted sets of an instance; an empty set
-- is replaced by the one-label set {$empty} (the '∅' row/column), so every instance falls in one of the paper's
-- four scenarios, and per instance every true label's row sums to 1:
--   (i)   Y = Z:                      C = diag(Y)
--   (ii)  Y \ Z = ∅, Z \ Y ≠ ∅:       C = [Y ⊗ (Z \ Y) + |Y| diag(Y)] / |Z|
--   (iii) Y \ Z ≠ ∅, Z \ Y = ∅:       C = [(Y \ Z) ⊗ Z] / |Z| + diag(Z)
--   (iv)  Y \ Z ≠ ∅, Z \ Y ≠ ∅:       C = [(Y \ Z) ⊗ (Z \ Y)] / |Z \ Y| + diag(Y ∩ Z)
-- A missed instance (Z empty) is scenario (iv) with Z = {∅}: each true label puts 1 in the ∅ column; a prediction
-- for an instance with no truth puts 1/|Z| per predicted label in the ∅ row; both empty count 1 at (∅, ∅).
-- With $depth = K every label is first replaced by its ancestors at depth K (labels shallower than K stay).
-- Precision matrix: each cell over its column sum; recall matrix: each cell over its row sum; per-class
-- precision and recall: the diagonal cell over the column and row sum. 0/0 is $zero_division.
-- Reads: truth, predictions, systems, instances, closure, nodes.

-- name: ml_true
-- (system, instance_id, label): Y per system and instance of the truth, {∅} when empty.
SELECT DISTINCT s.system, i.instance_id, coalesce(t.label, $empty) AS label
FROM systems AS s
CROSS JOIN instances AS i
LEFT JOIN (
    SELECT t.instance_id, c.ancestor AS label
    FROM truth AS t
    JOIN closure AS c ON c.descendant = t.label
    JOIN nodes AS n ON n.label = c.ancestor
    WHERE ($depth IS NULL AND c.distance = 0)
       OR n.depth = $depth
       OR (c.distance = 0 AND n.depth < $depth)
) AS t ON t.instance_id = i.instance_id

-- name: ml_pred
-- (system, instance_id, label): Z per system and instance of the truth, {∅} when empty.
SELECT DISTINCT s.system, i.instance_id, coalesce(p.label, $empty) AS label
FROM systems AS s
CROSS JOIN instances AS i
LEFT JOIN (
    SELECT p.system, p.instance_id, c.ancestor AS label
    FROM predictions AS p
    JOIN closure AS c ON c.descendant = p.label
    JOIN nodes AS n ON n.label = c.ancestor
    WHERE ($depth IS NULL AND c.distance = 0)
       OR n.depth = $depth
       OR (c.distance = 0 AND n.depth < $depth)
) AS p ON p.system = s.system AND p.instance_id = i.instance_id

-- name: ml_sets
-- Per (system, instance): |Y|, |Z|, |Y \ Z|, |Z \ Y|.
SELECT
    y.system,
    y.instance_id,
    y.n_true,
    z.n_pred,
    y.n_true - coalesce(b.n_both, 0) AS n_true_only,
    z.n_pred - coalesce(b.n_both, 0) AS n_pred_only
FROM (SELECT system, instance_id, count(*) AS n_true FROM ml_true GROUP BY system, instance_id) AS y
JOIN (SELECT system, instance_id, count(*) AS n_pred FROM ml_pred GROUP BY system, instance_id) AS z
    ON z.system = y.system AND z.instance_id = y.instance_id
LEFT JOIN (
    SELECT t.system, t.instance_id, count(*) AS n_both
    FROM ml_true AS t
    JOIN ml_pred AS p ON p.system = t.system AND p.instance_id = t.instance_id AND p.label = t.label
    GROUP BY t.system, t.instance_id
) AS b ON b.system = y.system AND b.instance_id = y.instance_id

-- name: ml_contributions
-- (system, instance_id, true_label, pred_label, value): the non-zero cells of each instance's contribution C.
SELECT system, instance_id, true_label, pred_label, value
FROM (
    SELECT
        t.system,
        t.instance_id,
        t.label AS true_label,
        p.label AS pred_label,
        CASE
            WHEN t.label = p.label AND s.n_true_only = 0 THEN 1.0 * s.n_true / s.n_pred        -- (i), (ii)
            WHEN t.label = p.label THEN 1.0                                                    -- (iii), (iv)
            WHEN s.n_true_only = 0 AND pt.label IS NULL THEN 1.0 / s.n_pred                    -- (ii)
            WHEN s.n_pred_only = 0 AND tp.label IS NULL THEN 1.0 / s.n_pred                    -- (iii)
            WHEN tp.label IS NULL AND pt.label IS NULL THEN 1.0 / s.n_pred_only                -- (iv)
        END AS value
    FROM ml_true AS t
    JOIN ml_sets AS s ON s.system = t.system AND s.instance_id = t.instance_id
    JOIN ml_pred AS p ON p.system = t.system AND p.instance_id = t.instance_id
    -- tp: the true label is also predicted; pt: the predicted label is also true
    LEFT JOIN ml_pred AS tp ON tp.system = t.system AND tp.instance_id = t.instance_id AND tp.label = t.label
    LEFT JOIN ml_true AS pt ON pt.system = p.system AND pt.instance_id = p.instance_id AND pt.label = p.label
    WHERE t.label = p.label OR tp.label IS NULL OR pt.label IS NULL
) AS cells
WHERE value IS NOT NULL

-- name: ml_matrix
-- (system, true_label, pred_label, value): the raw confusion matrix M, non-zero cells, all systems.
SELECT system, true_label, pred_label, sum(value) AS value
FROM ml_contributions
GROUP BY system, true_label, pred_label

-- name: ml_normalized
-- M with its recall matrix (cell / row sum) and precision matrix (cell / column sum).
SELECT
    m.system,
    m.true_label,
    m.pred_label,
    m.value,
    CASE WHEN r.total = 0 THEN $zero_division ELSE m.value / r.total END AS recall,
    CASE WHEN c.total = 0 THEN $zero_division ELSE m.value / c.total END AS precision
FROM ml_matrix AS m
JOIN (SELECT system, true_label, sum(value) AS total FROM ml_matrix GROUP BY system, true_label) AS r
    ON r.system = m.system AND r.true_label = m.true_label
JOIN (SELECT system, pred_label, sum(value) AS total FROM ml_matrix GROUP BY system, pred_label) AS c
    ON c.system = m.system AND c.pred_label = m.pred_label

-- name: ml_class
-- Per (system, label of a row or column of M): row sum, column sum, diagonal, precision, recall.
SELECT
    l.system,
    l.label,
    coalesce(r.total, 0) AS row_total,
    coalesce(c.total, 0) AS column_total,
    coalesce(d.value, 0) AS diagonal,
    CASE WHEN coalesce(c.total, 0) = 0 THEN $zero_division ELSE coalesce(d.value, 0) / c.total END AS precision,
    CASE WHEN coalesce(r.total, 0) = 0 THEN $zero_division ELSE coalesce(d.value, 0) / r.total END AS recall
FROM (
    SELECT system, true_label AS label FROM ml_matrix
    UNION
    SELECT system, pred_label FROM ml_matrix
) AS l
LEFT JOIN (SELECT system, true_label, sum(value) AS total FROM ml_matrix GROUP BY system, true_label) AS r
    ON r.system = l.system AND r.true_label = l.label
LEFT JOIN (SELECT system, pred_label, sum(value) AS total FROM ml_matrix GROUP BY system, pred_label) AS c
    ON c.system = l.system AND c.pred_label = l.label
LEFT JOIN (SELECT system, true_label, value FROM ml_matrix WHERE true_label = pred_label) AS d
    ON d.system = l.system AND d.true_label = l.label
