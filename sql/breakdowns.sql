-- Breakdowns of the set-based measures (Kosmopoulos et al. §2.4; docs/breakdowns.md): per level of the
-- taxonomy, per depth of the true label (per class: the set-based plan's per-class values, hiersql.plan).
-- Y, Ŷ: the true and predicted label sets of an instance, Yaug, Ŷaug their augmented sets exactly as
-- sql/set_based.sql builds them (ancestors, descendants or the Cesa-Bianchi tolerance; the root left out
-- unless include_root).
-- Reads: set_pairs(system, instance_id, label, in_true, in_pred) and set_pair_counts(system, instance_id,
-- n_true, n_pred, n_both), the results of those queries of sql/set_based.sql (hiersql.breakdowns materialises
-- them first, with the set-based options), and truth, predictions, systems, instances, nodes.
-- A ratio with a zero denominator is $zero_division; F is F-beta with $beta.
-- Means and sums of floats add DECIMAL(38, 24) casts (exact, so independent of the order in which the engine
-- adds rows: the same input gives the same digits). A mean leaves out the values that are NaN (zero_division
-- nan), as scikit-learn's, and is $zero_division when none is left.

-- name: level_instance
-- Per (system, instance, level k): |Yaug ∩ Lk|, |Ŷaug ∩ Lk| and |Ŷaug ∩ Yaug ∩ Lk|, Lk = the nodes at depth k
-- (nodes.depth: the shortest distance from the root). Only the levels either set reaches.
SELECT
    s.system,
    s.instance_id,
    n.depth AS level,
    count(*) FILTER (WHERE s.in_true) AS n_true,
    count(*) FILTER (WHERE s.in_pred) AS n_pred,
    count(*) FILTER (WHERE s.in_true AND s.in_pred) AS n_both
FROM set_pairs AS s
JOIN nodes AS n ON n.label = s.label
GROUP BY s.system, s.instance_id, n.depth

-- name: depth_groups
-- (instance_id, depth): each instance of the truth with the depth of its deepest true label (0 = empty truth).
SELECT i.instance_id, coalesce(max(n.depth), 0) AS depth
FROM instances AS i
LEFT JOIN truth AS t ON t.instance_id = i.instance_id
LEFT JOIN nodes AS n ON n.label = t.label
GROUP BY i.instance_id

-- name: depth_instance
-- Per (system, instance of the truth, also empty ones): the set-based counts and the depth group.
SELECT
    g.system,
    g.instance_id,
    d.depth,
    coalesce(c.n_true, 0) AS n_true,
    coalesce(c.n_pred, 0) AS n_pred,
    coalesce(c.n_both, 0) AS n_both
FROM (SELECT s.system, i.instance_id FROM systems AS s CROSS JOIN instances AS i) AS g
JOIN depth_groups AS d ON d.instance_id = g.instance_id
LEFT JOIN set_pair_counts AS c ON c.system = g.system AND c.instance_id = g.instance_id

-- name: grouped_values
-- Per-instance values of level_instance (grouped by level) and depth_instance (grouped by depth), one shape:
-- (breakdown, system, instance_id, grp, n_true, n_pred, n_both, p, r, f).
SELECT
    b.breakdown,
    b.system,
    b.instance_id,
    b.grp,
    b.n_true,
    b.n_pred,
    b.n_both,
    CASE WHEN b.n_pred = 0 THEN $zero_division ELSE 1.0 * b.n_both / b.n_pred END AS p,
    CASE WHEN b.n_true = 0 THEN $zero_division ELSE 1.0 * b.n_both / b.n_true END AS r,
    CASE WHEN $beta * $beta * b.n_true + b.n_pred = 0 THEN $zero_division
         ELSE (1 + $beta * $beta) * b.n_both / ($beta * $beta * b.n_true + b.n_pred) END AS f
FROM (
    SELECT 'level' AS breakdown, system, instance_id, level AS grp, n_true, n_pred, n_both FROM level_instance
    UNION ALL
    SELECT 'depth', system, instance_id, depth, n_true, n_pred, n_both FROM depth_instance
) AS b

-- name: grouped_summary
-- (breakdown, system, grp, average, support, n_instances, hierarchical_precision, hierarchical_recall,
-- hierarchical_f1, symmetric_difference_loss): micro pools the counts of the group, macro averages the
-- per-instance values over the instances of the group (for a level: those whose Yaug or Ŷaug reaches it).
-- support = the true labels of the group (Σ|Yaug ∩ Lk| for a level, Σ|Yaug| for a depth group).
WITH totals AS (
    SELECT
        breakdown, system, grp,
        CAST(sum(n_true) AS BIGINT) AS n_true, CAST(sum(n_pred) AS BIGINT) AS n_pred,
        CAST(sum(n_both) AS BIGINT) AS n_both, count(*) AS n_instances,
        coalesce(CAST(sum(CAST(p_known AS DECIMAL(38, 24))) AS DOUBLE) / nullif(count(p_known), 0),
                 $zero_division) AS macro_p,
        coalesce(CAST(sum(CAST(r_known AS DECIMAL(38, 24))) AS DOUBLE) / nullif(count(r_known), 0),
                 $zero_division) AS macro_r,
        coalesce(CAST(sum(CAST(f_known AS DECIMAL(38, 24))) AS DOUBLE) / nullif(count(f_known), 0),
                 $zero_division) AS macro_f,
        avg(1.0 * (n_true + n_pred - 2 * n_both)) AS sdl
    FROM (SELECT *, nullif(p, CAST('NaN' AS DOUBLE)) AS p_known, nullif(r, CAST('NaN' AS DOUBLE)) AS r_known,
                 nullif(f, CAST('NaN' AS DOUBLE)) AS f_known
          FROM grouped_values) AS v
    GROUP BY breakdown, system, grp
),
micro AS (
    SELECT
        breakdown, system, grp, n_true, n_instances, sdl,
        CASE WHEN n_pred = 0 THEN $zero_division ELSE 1.0 * n_both / n_pred END AS p,
        CASE WHEN n_true = 0 THEN $zero_division ELSE 1.0 * n_both / n_true END AS r,
        CASE WHEN $beta * $beta * n_true + n_pred = 0 THEN $zero_division
             ELSE (1 + $beta * $beta) * n_both / ($beta * $beta * n_true + n_pred) END AS f
    FROM totals
)
SELECT breakdown, system, grp, 'micro' AS average, n_true AS support, n_instances,
       p AS hierarchical_precision, r AS hierarchical_recall, f AS hierarchical_f1,
       sdl AS symmetric_difference_loss
FROM micro
UNION ALL
SELECT breakdown, system, grp, 'macro', n_true, n_instances, macro_p, macro_r, macro_f, sdl
FROM totals

-- name: flat_level_counts
-- Flat counts per (system, class), the labels as given (no augmentation), with the class's depth:
-- TP_c, FP_c, FN_c over the instances.
SELECT
    coalesce(p.system, t.system) AS system,
    coalesce(p.label, t.label) AS label,
    count(*) FILTER (WHERE t.label IS NOT NULL AND p.label IS NOT NULL) AS tp,
    count(*) FILTER (WHERE t.label IS NULL) AS fp,
    count(*) FILTER (WHERE p.label IS NULL) AS fn
FROM predictions AS p
FULL JOIN (SELECT s.system, t.instance_id, t.label FROM truth AS t CROSS JOIN systems AS s) AS t
    ON t.system = p.system AND t.instance_id = p.instance_id AND t.label = p.label
GROUP BY coalesce(p.system, t.system), coalesce(p.label, t.label)

-- name: flat_level_summary
-- (system, level, average, support, precision, recall, f1): flat P/R/F of the labels at depth k as given;
-- micro pools TP, FP, FN over the classes of the level, macro averages the per-class values over the classes
-- seen at that level (in the truth or in the system's predictions).
WITH per_class AS (
    SELECT
        c.system, n.depth AS level, c.tp, c.fp, c.fn,
        CASE WHEN c.tp + c.fp = 0 THEN $zero_division ELSE 1.0 * c.tp / (c.tp + c.fp) END AS p,
        CASE WHEN c.tp + c.fn = 0 THEN $zero_division ELSE 1.0 * c.tp / (c.tp + c.fn) END AS r,
        CASE WHEN (1 + $beta * $beta) * c.tp + $beta * $beta * c.fn + c.fp = 0 THEN $zero_division
             ELSE (1 + $beta * $beta) * c.tp / ((1 + $beta * $beta) * c.tp + $beta * $beta * c.fn + c.fp) END AS f
    FROM flat_level_counts AS c
    JOIN nodes AS n ON n.label = c.label
),
pooled AS (
    SELECT system, level, CAST(sum(tp) AS BIGINT) AS tp, CAST(sum(fp) AS BIGINT) AS fp,
           CAST(sum(fn) AS BIGINT) AS fn
    FROM per_class
    GROUP BY system, level
)
SELECT system, level, 'micro' AS average, CAST(tp + fn AS BIGINT) AS support,
       CASE WHEN tp + fp = 0 THEN $zero_division ELSE 1.0 * tp / (tp + fp) END AS precision,
       CASE WHEN tp + fn = 0 THEN $zero_division ELSE 1.0 * tp / (tp + fn) END AS recall,
       CASE WHEN (1 + $beta * $beta) * tp + $beta * $beta * fn + fp = 0 THEN $zero_division
            ELSE (1 + $beta * $beta) * tp / ((1 + $beta * $beta) * tp + $beta * $beta * fn + fp) END AS f1
FROM pooled
UNION ALL
SELECT system, level, 'macro', CAST(sum(tp + fn) AS BIGINT),
       coalesce(CAST(sum(CAST(p_known AS DECIMAL(38, 24))) AS DOUBLE) / nullif(count(p_known), 0),
                 $zero_division), coalesce(CAST(sum(CAST(r_known AS DECIMAL(38, 24))) AS DOUBLE) / nullif(count(r_known), 0),
                 $zero_division),
       coalesce(CAST(sum(CAST(f_known AS DECIMAL(38, 24))) AS DOUBLE) / nullif(count(f_known), 0),
                 $zero_division)
FROM (SELECT *, nullif(p, CAST('NaN' AS DOUBLE)) AS p_known, nullif(r, CAST('NaN' AS DOUBLE)) AS r_known,
             nullif(f, CAST('NaN' AS DOUBLE)) AS f_known
      FROM per_class) AS c
GROUP BY system, level
