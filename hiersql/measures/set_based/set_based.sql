-- Set-based hierarchical measures (Kosmopoulos et al. §2.4; Kiritchenko et al. 2005; SPEC §2).
-- Y, Ŷ: the true and predicted label sets of an instance; Yaug = Y ∪ An(Y) (or Y ∪ De(Y) with
-- $augment = 'descendants'), the root left out unless $include_root, ancestors only up to $max_distance edges.
--   hP = |Ŷaug ∩ Yaug| / |Ŷaug|        hR = |Ŷaug ∩ Yaug| / |Yaug|
--   hF_β = (1 + β²) |Ŷaug ∩ Yaug| / (β² |Yaug| + |Ŷaug|)        SDL = |Ŷaug Δ Yaug|
-- $augment = 'cesa_bianchi' augments with ancestors, then drops from each set the nodes that are not in the
-- other set and none of whose parents is (Kosmopoulos eq. 4-5; the root counts as shared).
-- Reads: truth, predictions, systems, instances, closure, nodes, edges (and node_closure: the DuckDB variant).

-- name: labelled_sets
-- Every set to compare, one row per label: side 0 = the truth of an instance (once per system), side 1 = a
-- system's predictions for it.
SELECT 0 AS side, s.system, t.instance_id, t.label
FROM truth AS t
CROSS JOIN systems AS s
UNION ALL
SELECT 1, p.system, p.instance_id, p.label
FROM predictions AS p

-- name: augmented
-- Each set with the ancestors (or descendants) of its labels, a node once per label that reaches it.
SELECT l.side, l.system, l.instance_id, c.ancestor AS label
FROM labelled_sets AS l
JOIN closure AS c ON c.descendant = l.label
WHERE $augment <> 'descendants'
  AND ($include_root OR c.ancestor <> (SELECT label FROM nodes WHERE is_root))
  AND ($max_distance IS NULL OR c.distance <= $max_distance)
UNION ALL
SELECT l.side, l.system, l.instance_id, c.descendant
FROM labelled_sets AS l
JOIN closure AS c ON c.ancestor = l.label
WHERE $augment = 'descendants'
  AND ($include_root OR c.descendant <> (SELECT label FROM nodes WHERE is_root))
  AND ($max_distance IS NULL OR c.distance <= $max_distance)

-- name: cesa_supported
-- For the Cesa-Bianchi tolerance: the augmented labels (with their side) one of whose parents is the root or
-- on the other side of the same instance. Joins rather than correlated subqueries, so that Spark runs it too.
SELECT DISTINCT a.system, a.instance_id, a.label, a.side
FROM augmented AS a
JOIN edges AS e ON e.child = a.label
JOIN nodes AS n ON n.label = e.parent
LEFT JOIN augmented AS o
    ON o.system = a.system AND o.instance_id = a.instance_id AND o.label = e.parent AND o.side <> a.side
WHERE $augment = 'cesa_bianchi'
  AND (n.is_root OR o.label IS NOT NULL)

-- name: set_pairs
-- One row per (system, instance, augmented label) with the side(s) it is on, after the Cesa-Bianchi
-- tolerance when asked for (a label on one side only stays when cesa_supported has it). Both augmented sides
-- are grouped at once (cheaper than two DISTINCTs and a FULL JOIN).
SELECT g.system, g.instance_id, g.label, g.in_true, g.in_pred
FROM (
    SELECT system, instance_id, label, min(side) = 0 AS in_true, max(side) = 1 AS in_pred
    FROM augmented
    GROUP BY system, instance_id, label
) AS g
LEFT JOIN cesa_supported AS c
    ON c.system = g.system AND c.instance_id = g.instance_id AND c.label = g.label
   AND c.side = CASE WHEN g.in_true THEN 0 ELSE 1 END
WHERE $augment <> 'cesa_bianchi' OR (g.in_true AND g.in_pred) OR c.label IS NOT NULL

-- name: set_pair_counts
-- Per (system, instance): |Yaug|, |Ŷaug| and |Ŷaug ∩ Yaug| counted from the pairs.
SELECT
    system,
    instance_id,
    count(*) FILTER (WHERE in_true) AS n_true,
    count(*) FILTER (WHERE in_pred) AS n_pred,
    count(*) FILTER (WHERE in_true AND in_pred) AS n_both
FROM set_pairs
GROUP BY system, instance_id

-- name: set_counts
SELECT system, instance_id, n_true, n_pred, n_both FROM set_pair_counts

-- name: set_counts (duckdb)
-- With $list_counts, the same counts without one row per augmented label: each node's augmented set is read
-- once from node_closure (the closure on node positions), an instance's sets are merged, and their distinct
-- nodes counted: |Ŷaug ∩ Yaug| = |Yaug| + |Ŷaug| - |Yaug ∪ Ŷaug|. A node's set is kept in two parts. The
-- $list_bits nodes found in the most augmented sets (those next to the root, which every label of an instance
-- repeats) are bits of a bitstring: merged with bit_or, counted with bit_count. The others form a list of
-- positions: merged with flatten, counted with list_unique. Both give exact counts; the bits only take the
-- most repeated nodes out of the lists, whose distinct count costs ~0.1 µs an element.
-- Its cost grows linearly with the augmented labels, that of the pair rows faster once their hash tables
-- outgrow the caches: on the 325,000-node benchmark DAG (43 M augmented labels a side, 59 % of them on the
-- 1,024 most shared nodes) the lists alone take 2/5 of the time of the pairs, lists and bits 1/4; on MeSH with
-- 20,000 instances (0.5 M) the lists take 1.3 times the time of the pairs.
-- hiersql.measures.set_based sets $list_counts from the expected number of augmented labels, and $list_bits.
-- The Cesa-Bianchi tolerance looks at single labels and always takes the pairs.
-- Only the instances in ($instance_low, $instance_high] are counted (NULL: no bound). DuckDB holds the lists
-- in memory, where the pair rows would spill: the DuckDB engine makes this table from $instance_batches
-- ranges of the instances, one after the other, so that one range's lists fit within its memory limit.
-- Composed into another query, it counts every instance.
WITH augmented_nodes AS (
    -- (node, label): label in the augmented set of node (an ancestor, or a descendant with that option)
    SELECT c.node, c.label
    FROM (
        SELECT
            CASE WHEN $augment = 'descendants' THEN ancestor ELSE descendant END AS node,
            CASE WHEN $augment = 'descendants' THEN descendant ELSE ancestor END AS label,
            distance
        FROM node_closure
    ) AS c
    WHERE $list_counts AND $augment <> 'cesa_bianchi'
      AND ($include_root OR c.label <> (SELECT position FROM nodes WHERE is_root))
      AND ($max_distance IS NULL OR c.distance <= $max_distance)
),
shared_labels AS (
    -- the $list_bits labels in the most augmented sets, numbered from 1
    SELECT label, row_number() OVER (ORDER BY count(*) DESC, label) AS bit
    FROM augmented_nodes
    GROUP BY label
    ORDER BY bit
    LIMIT $list_bits
),
augmented_lists AS (
    SELECT
        a.node,
        coalesce(list(a.label) FILTER (WHERE s.bit IS NULL), []) AS labels,
        bitstring_agg(s.bit, 1, $list_bits) AS bits
    FROM augmented_nodes AS a
    LEFT JOIN shared_labels AS s ON s.label = a.label
    GROUP BY a.node
),
truth_lists AS (
    SELECT t.instance_id, flatten(list(l.labels)) AS labels, bit_or(l.bits) AS bits
    FROM truth AS t
    JOIN nodes AS n ON n.label = t.label
    JOIN augmented_lists AS l ON l.node = n.position
    WHERE ($instance_low IS NULL OR t.instance_id > $instance_low)
      AND ($instance_high IS NULL OR t.instance_id <= $instance_high)
    GROUP BY t.instance_id
),
prediction_lists AS (
    SELECT p.system, p.instance_id, flatten(list(l.labels)) AS labels, bit_or(l.bits) AS bits
    FROM predictions AS p
    JOIN nodes AS n ON n.label = p.label
    JOIN augmented_lists AS l ON l.node = n.position
    WHERE ($instance_low IS NULL OR p.instance_id > $instance_low)
      AND ($instance_high IS NULL OR p.instance_id <= $instance_high)
    GROUP BY p.system, p.instance_id
),
distinct_counts AS (
    -- NULL counts stand for an empty side; list_concat skips a NULL list
    SELECT
        coalesce(p.system, s.system) AS system,
        coalesce(p.instance_id, t.instance_id) AS instance_id,
        coalesce(list_unique(t.labels), 0) AS true_listed,
        coalesce(list_unique(p.labels), 0) AS pred_listed,
        list_unique(list_concat(t.labels, p.labels)) AS union_listed,
        coalesce(bit_count(t.bits), 0) AS true_bits,
        coalesce(bit_count(p.bits), 0) AS pred_bits,
        coalesce(bit_count(t.bits & p.bits), 0) AS both_bits
    FROM prediction_lists AS p
    FULL JOIN (truth_lists AS t CROSS JOIN systems AS s) ON s.system = p.system AND t.instance_id = p.instance_id
)
SELECT
    system,
    instance_id,
    CAST(true_listed + true_bits AS BIGINT) AS n_true,
    CAST(pred_listed + pred_bits AS BIGINT) AS n_pred,
    CAST(true_listed + pred_listed - union_listed + both_bits AS BIGINT) AS n_both
FROM distinct_counts
UNION ALL
SELECT system, instance_id, n_true, n_pred, n_both FROM set_pair_counts
WHERE (NOT $list_counts OR $augment = 'cesa_bianchi')
  AND ($instance_low IS NULL OR instance_id > $instance_low)
  AND ($instance_high IS NULL OR instance_id <= $instance_high)

-- name: set_counts (spark)
-- The same counts on Spark without one row per augmented label: each node's augmented set is an array of
-- node positions (from node_closure: no join of the closure's names); an instance's arrays are merged with
-- flatten / array_distinct, and |Ŷaug ∩ Yaug| is the size of array_intersect. Both sides' labels are put
-- together first (the truth once per system), hashed on the instance, and joined to the broadcast nodes (a
-- label's position) and per-node arrays: the merge per (system, instance) then needs no other exchange (a
-- hash on the instance holds every row of a (system, instance) group), so only the labels are shuffled,
-- never the arrays. On the 325,000-node benchmark DAG the pair rows are 43 M a side, hashed and
-- shuffled by (system, instance, label) (figures: benchmarks/RESULTS.md, issue 13 sessions 9 and 12). An
-- empty side collects no array: size 0. The DuckDB variant's bits for the most shared nodes (here at most
-- two BIGINTs, 128 nodes, a third of the elements) were tried and showed no gain. The Cesa-Bianchi tolerance
-- looks at single labels and keeps the pair rows.
WITH augmented_nodes AS (
    -- (node, label): label in the augmented set of node, both positions
    SELECT c.node, c.label
    FROM (
        SELECT
            CASE WHEN $augment = 'descendants' THEN ancestor ELSE descendant END AS node,
            CASE WHEN $augment = 'descendants' THEN descendant ELSE ancestor END AS label,
            distance
        FROM node_closure
    ) AS c
    WHERE $augment <> 'cesa_bianchi'
      AND ($include_root OR c.label NOT IN (SELECT position FROM nodes WHERE is_root))
      AND ($max_distance IS NULL OR c.distance <= $max_distance)
),
augmented_arrays AS (
    SELECT node, list(label) AS labels
    FROM augmented_nodes
    GROUP BY node
),
side_labels AS (
    -- side 0: the truth of an instance, once per system; side 1: a system's predictions for it
    SELECT u.system, u.instance_id, u.label, u.side /*+ REPARTITION(instance_id) */
    FROM (
        SELECT s.system, t.instance_id, t.label, 0 AS side
        FROM truth AS t
        CROSS JOIN systems AS s
        UNION ALL
        SELECT system, instance_id, label, 1
        FROM predictions
    ) AS u
),
merged AS (
    SELECT
        l.system,
        l.instance_id,
        array_distinct(flatten(list(a.labels) FILTER (WHERE l.side = 0))) AS true_labels,
        array_distinct(flatten(list(a.labels) FILTER (WHERE l.side = 1))) AS pred_labels
            /*+ BROADCAST(n), BROADCAST(a) */
    FROM side_labels AS l
    JOIN nodes AS n ON n.label = l.label
    JOIN augmented_arrays AS a ON a.node = n.position
    GROUP BY l.system, l.instance_id
)
SELECT
    system,
    instance_id,
    CAST(array_length(true_labels) AS BIGINT) AS n_true,
    CAST(array_length(pred_labels) AS BIGINT) AS n_pred,
    CAST(array_length(array_intersect(true_labels, pred_labels)) AS BIGINT) AS n_both
FROM merged
UNION ALL
SELECT system, instance_id, n_true, n_pred, n_both FROM set_pair_counts
WHERE $augment = 'cesa_bianchi'

-- name: set_based_instance
-- Per-instance counts for every (system, instance) of the truth, also empty ones; the values (hP, hR, hF,
-- SDL) are generated from the family's declared measures (hiersql.plan.instance_values_sql).
SELECT
    g.system,
    g.instance_id,
    coalesce(c.n_true, 0) AS n_true,
    coalesce(c.n_pred, 0) AS n_pred,
    coalesce(c.n_both, 0) AS n_both
FROM (SELECT s.system, i.instance_id FROM systems AS s CROSS JOIN instances AS i) AS g
LEFT JOIN set_counts AS c ON c.system = g.system AND c.instance_id = g.instance_id
