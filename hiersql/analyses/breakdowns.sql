-- Breakdowns of the set-based measures (Kosmopoulos et al. §2.4; docs/breakdowns.md): per level of the
-- taxonomy, per depth of the true label (per class: the set-based plan's per-class values, hiersql.plan).
-- Y, Ŷ: the true and predicted label sets of an instance, Yaug, Ŷaug their augmented sets exactly as
-- hiersql/measures/set_based/set_based.sql builds them (ancestors, descendants or the Cesa-Bianchi tolerance; the root left out
-- unless include_root).
-- Reads: set_pairs(system, instance_id, label, in_true, in_pred) and set_pair_counts(system, instance_id,
-- n_true, n_pred, n_both), the results of those queries of hiersql/measures/set_based/set_based.sql (hiersql.analyses.breakdowns materialises
-- them first, with the set-based options), and truth, predictions, systems, instances, nodes.
-- The values (a ratio with a zero denominator is $zero_division; F is F-beta with $beta) and the micro and
-- macro summaries are generated from the set-based family's declared measures (hiersql.analyses.breakdowns.queries), as
-- the family's own summary is: a mean adds its values in instance (or label) order, leaves out the NaN values
-- (zero_division nan) and is $zero_division when none is left.

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

-- name: grouped_counts
-- The per-instance counts of level_instance (grouped by level) and depth_instance (grouped by depth), one shape:
-- (breakdown, system, instance_id, grp, n_true, n_pred, n_both). The values and the summaries over them are
-- generated from the set-based family's declared measures (hiersql.analyses.breakdowns.queries).
SELECT 'level' AS breakdown, system, instance_id, level AS grp, n_true, n_pred, n_both FROM level_instance
UNION ALL
SELECT 'depth', system, instance_id, depth, n_true, n_pred, n_both FROM depth_instance

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

-- name: flat_level_units
-- Per (system, class seen, level k = the class's depth): the class's counts as the set-based measures read them,
-- n_both = TP_c, n_pred = TP_c + FP_c, n_true = TP_c + FN_c (hiersql.analyses.breakdowns.queries sums them per level).
SELECT c.system, n.depth AS level, c.label, c.tp AS n_both, c.tp + c.fp AS n_pred, c.tp + c.fn AS n_true
FROM flat_level_counts AS c
JOIN nodes AS n ON n.label = c.label
