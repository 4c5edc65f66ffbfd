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

-- name: ml_sides
-- (system, instance_id, label, in_true, in_pred): Y and Z per system and instance of the truth, an empty set
-- as {∅}; with a depth K the labels are first replaced by their ancestors at depth K.
SELECT
    coalesce(t.system, p.system) AS system,
    coalesce(t.instance_id, p.instance_id) AS instance_id,
    coalesce(t.label, p.label) AS label,
    t.label IS NOT NULL AS in_true,
    p.label IS NOT NULL AS in_pred
FROM (
    SELECT DISTINCT s.system, i.instance_id, coalesce(t.label, $empty) AS label
    FROM systems AS s
    CROSS JOIN instances AS i
    LEFT JOIN (
        SELECT instance_id, label FROM truth WHERE $depth IS NULL
        UNION ALL
        SELECT t.instance_id, c.ancestor
        FROM truth AS t
        JOIN closure AS c ON c.descendant = t.label
        JOIN nodes AS n ON n.label = c.ancestor
        WHERE n.depth = $depth OR (c.distance = 0 AND n.depth < $depth)
    ) AS t ON t.instance_id = i.instance_id
) AS t
FULL JOIN (
    SELECT DISTINCT s.system, i.instance_id, coalesce(p.label, $empty) AS label
    FROM systems AS s
    CROSS JOIN instances AS i
    LEFT JOIN (
        SELECT system, instance_id, label FROM predictions WHERE $depth IS NULL
        UNION ALL
        SELECT p.system, p.instance_id, c.ancestor
        FROM predictions AS p
        JOIN closure AS c ON c.descendant = p.label
        JOIN nodes AS n ON n.label = c.ancestor
        WHERE n.depth = $depth OR (c.distance = 0 AND n.depth < $depth)
    ) AS p ON p.system = s.system AND p.instance_id = i.instance_id
) AS p ON p.system = t.system AND p.instance_id = t.instance_id AND p.label = t.label

-- name: ml_sets
-- Per (system, instance): |Y|, |Z|, |Y \ Z|, |Z \ Y|.
SELECT
    system,
    instance_id,
    sum(CASE WHEN in_true THEN 1 ELSE 0 END) AS n_true,
    sum(CASE WHEN in_pred THEN 1 ELSE 0 END) AS n_pred,
    sum(CASE WHEN in_true AND NOT in_pred THEN 1 ELSE 0 END) AS n_true_only,
    sum(CASE WHEN in_pred AND NOT in_true THEN 1 ELSE 0 END) AS n_pred_only
FROM ml_sides
GROUP BY system, instance_id

-- name: ml_matrix
-- (system, true_label, pred_label, value): the raw confusion matrix M (non-zero cells, all systems), the sum of
-- the instances' contributions C: the diagonal cells of Y ∩ Z, then the off-diagonal cells, whose rows are
-- Y \ Z (all of Y in scenario (ii)) and columns Z \ Y (all of Z in scenario (iii)).
SELECT system, true_label, pred_label, CAST(sum(CAST(value AS DECIMAL(38, 24))) AS DOUBLE) AS value
FROM (
    SELECT
        d.system,
        d.label AS true_label,
        d.label AS pred_label,
        CASE WHEN s.n_true_only = 0 THEN 1.0 * s.n_true / s.n_pred ELSE 1.0 END AS value  -- (i), (ii) | (iii), (iv)
    FROM ml_sides AS d
    JOIN ml_sets AS s ON s.system = d.system AND s.instance_id = d.instance_id
    WHERE d.in_true AND d.in_pred
    UNION ALL
    SELECT t.system, t.label, p.label, t.share
    FROM (
        SELECT
            r.system,
            r.instance_id,
            r.label,
            CASE WHEN s.n_true_only > 0 AND s.n_pred_only > 0 THEN 1.0 / s.n_pred_only  -- (iv)
                 ELSE 1.0 / s.n_pred END AS share                                       -- (ii), (iii)
        FROM ml_sides AS r
        JOIN ml_sets AS s ON s.system = r.system AND s.instance_id = r.instance_id
        WHERE r.in_true AND (NOT r.in_pred OR s.n_true_only = 0) AND s.n_true_only + s.n_pred_only > 0
    ) AS t
    JOIN (
        SELECT c.system, c.instance_id, c.label
        FROM ml_sides AS c
        JOIN ml_sets AS s ON s.system = c.system AND s.instance_id = c.instance_id
        WHERE c.in_pred AND (NOT c.in_true OR s.n_pred_only = 0) AND s.n_true_only + s.n_pred_only > 0
    ) AS p ON p.system = t.system AND p.instance_id = t.instance_id
) AS cells
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
JOIN (SELECT system, true_label, CAST(sum(CAST(value AS DECIMAL(38, 24))) AS DOUBLE) AS total FROM ml_matrix GROUP BY system, true_label) AS r
    ON r.system = m.system AND r.true_label = m.true_label
JOIN (SELECT system, pred_label, CAST(sum(CAST(value AS DECIMAL(38, 24))) AS DOUBLE) AS total FROM ml_matrix GROUP BY system, pred_label) AS c
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
LEFT JOIN (SELECT system, true_label, CAST(sum(CAST(value AS DECIMAL(38, 24))) AS DOUBLE) AS total FROM ml_matrix GROUP BY system, true_label) AS r
    ON r.system = l.system AND r.true_label = l.label
LEFT JOIN (SELECT system, pred_label, CAST(sum(CAST(value AS DECIMAL(38, 24))) AS DOUBLE) AS total FROM ml_matrix GROUP BY system, pred_label) AS c
    ON c.system = l.system AND c.pred_label = l.label
LEFT JOIN (SELECT system, true_label, value FROM ml_matrix WHERE true_label = pred_label) AS d
    ON d.system = l.system AND d.true_label = l.label
