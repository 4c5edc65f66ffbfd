-- Flat multi-label measures (Krstinić et al. 2020, §2.1, eq. 1-10; SPEC §7). The label sets are taken as given:
-- no ancestors are added. Y, Z: the true and predicted sets of an instance, N instances, L the label universe.
-- Example-based (per instance, then the mean over the N instances of the truth, also empty ones):
--   accuracy = |Y ∩ Z| / |Y ∪ Z|    precision = |Y ∩ Z| / |Z|    recall = |Y ∩ Z| / |Y|
--   F1 = 2 |Y ∩ Z| / (|Y| + |Z|)    Hamming loss = |Y Δ Z| / |L|    subset accuracy = [Y = Z]
-- Label-based (per class j of L: TP_j, FP_j, FN_j, TN_j = N - TP_j - FP_j - FN_j):
--   accuracy = (TP + TN) / N   precision = TP / (TP + FP)   recall = TP / (TP + FN)   F1 = 2TP / (2TP + FP + FN)
--   micro: pool the counts over the classes, then divide; macro: the mean of the per-class values.
-- The per-class counts and values are generated from the plan's declared measures over flat_sides and
-- flat_universe (hiersql.measures.flat, hiersql.plan.class_counts_sql); this file builds the sets.
-- L is, per system, every class occurring in the truth or in that system's predictions (scikit-learn's
-- convention), unless $fixed_universe: then L is the table flat_labels(label), and labels outside it are left
-- out of every measure (as scikit-learn's labels= does). A ratio with a zero denominator is $zero_division.
-- Reads: truth, predictions, systems, instances, flat_labels.

-- name: flat_label_faults
-- (label, fault): why the labels of flat_labels are no class universe, a row per fault: a label that is missing or
-- no node of the taxonomy (its virtual root is none), a label there twice. No row: each is a node, once. The rule
-- of the fixed classes at every door: hiersql.engines.Engine.check_classes runs it on the classes a run is given
-- (flat_first_label_fault), flat_universe_check at the SQL door.
SELECT label, 'holds a label not in the taxonomy' AS fault
FROM flat_labels
WHERE label IS NULL OR label NOT IN (SELECT label FROM nodes WHERE NOT is_virtual)
UNION ALL
SELECT label, 'holds a label twice'
FROM flat_labels
GROUP BY label
HAVING count(*) > 1

-- name: flat_first_label_fault
-- (fault, label): the fault that every door names, the first of flat_label_faults by label (a missing one first),
-- then fault; no row where there is none.
SELECT fault, label FROM flat_label_faults ORDER BY label NULLS FIRST, fault LIMIT 1

-- name: flat_universe_check
-- (failed): NULL, or with fixed classes (fixed_universe) the failure (hiersql's cast error) that names
-- flat_first_label_fault.
SELECT CASE
    WHEN $fixed_universe AND EXISTS (SELECT 1 FROM flat_first_label_fault)
    THEN CAST((SELECT 'hiersql: flat_labels ' || fault || ': ' || coalesce('''' || label || '''', 'NULL')
               FROM flat_first_label_fault) AS INTEGER)
END AS failed

-- name: flat_universe
-- (system, label): the classes L of each system.
SELECT s.system, t.label
FROM systems AS s
CROSS JOIN truth AS t
WHERE NOT $fixed_universe
UNION
SELECT p.system, p.label
FROM predictions AS p
WHERE NOT $fixed_universe
UNION
SELECT s.system, u.label
FROM systems AS s
CROSS JOIN flat_labels AS u
WHERE $fixed_universe

-- name: flat_sides
-- One row per (system, instance, label of L) on either side, with the side(s) it is on.
SELECT
    coalesce(p.system, t.system) AS system,
    coalesce(p.instance_id, t.instance_id) AS instance_id,
    coalesce(p.label, t.label) AS label,
    t.label IS NOT NULL AS in_true,
    p.label IS NOT NULL AS in_pred
FROM (
    SELECT p.system, p.instance_id, p.label
    FROM predictions AS p
    JOIN flat_universe AS u ON u.system = p.system AND u.label = p.label
) AS p
FULL JOIN (
    SELECT u.system, t.instance_id, t.label
    FROM truth AS t
    JOIN flat_universe AS u ON u.label = t.label
) AS t ON t.system = p.system AND t.instance_id = p.instance_id AND t.label = p.label

-- name: flat_instance
-- Per (system, instance of the truth): |Y|, |Z|, |Y ∩ Z|, |L| (the example-based values are generated from the
-- family's declared measures, hiersql.plan.instance_values_sql).
SELECT
    g.system,
    g.instance_id,
    coalesce(c.n_true, 0) AS n_true,
    coalesce(c.n_pred, 0) AS n_pred,
    coalesce(c.n_both, 0) AS n_both,
    g.n_labels
FROM (
    SELECT s.system, i.instance_id, coalesce(u.n_labels, 0) AS n_labels
    FROM systems AS s
    CROSS JOIN instances AS i
    LEFT JOIN (SELECT system, count(*) AS n_labels FROM flat_universe GROUP BY system) AS u
        ON u.system = s.system
) AS g
LEFT JOIN (
    SELECT
        system,
        instance_id,
        sum(CASE WHEN in_true THEN 1 ELSE 0 END) AS n_true,
        sum(CASE WHEN in_pred THEN 1 ELSE 0 END) AS n_pred,
        sum(CASE WHEN in_true AND in_pred THEN 1 ELSE 0 END) AS n_both
    FROM flat_sides
    GROUP BY system, instance_id
) AS c ON c.system = g.system AND c.instance_id = g.instance_id
