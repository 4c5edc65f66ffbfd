-- Lowest-common-ancestor precision, recall and F1 (Kosmopoulos et al. §2.4.2; SPEC §4).
-- Y, Ŷ: the true and predicted sets of an instance ("sides" 't' and 'p'; the truth is repeated per system).
-- 1. Within each side drop every label that has a descendant on the same side.
-- 2. For a label x and the labels z of the other side, a meeting is a common ancestor a with
--    up(x, a) <= $max_distance and up(z, a) <= $max_distance (NULL = no limit); its cost is up(x, a) + up(z, a).
--    The options of x are its meetings of minimum cost: (lca a, partner z). A label in both sets meets
--    itself at cost 0, so its only option is (x, x). A label with no meeting while the other side is not
--    empty meets the other side at the virtual common ancestor $beyond ("all nodes have a common ancestor
--    beyond the threshold"): its path is {x, $beyond}, its partner's {z, $beyond} for one z (the smallest:
--    z is in its graph anyway, so every z gives the same graphs).
-- 3. An option (a, z) of x puts the shortest paths x -> a on x's side and z -> a on the other side.
--    Extended graphs (Fig. 9): every option, every shortest path. Minimal graphs (Problem 2, Fig. 10) are
--    chosen in hiersql/measures/lca/__init__.py among the instances listed by lca_open_instances; the others have
--    no choice to make and their minimal graphs are the extended ones.
-- 4. With Gt, Gp the node sets of the two graphs (the root left out unless $include_root):
--      PLCA = |Gt ∩ Gp| / |Gp|     RLCA = |Gt ∩ Gp| / |Gt|     FLCA = 2 PLCA RLCA / (PLCA + RLCA)
-- From lca_labels on, a node is its position (nodes.position) and an instance its number (lca_instances):
-- the joins on integers cost far less than on names; -1 is the virtual ancestor beyond the threshold. Names
-- come back where a caller reads them (lca_graph_counts, lca_extended_names); lca.py reads the open_*
-- tables on positions.
-- Reads: truth, predictions, systems, instances, closure, nodes, edges.

-- name: lca_closure
-- The closure on node positions (every distance: the ancestor removal reads all of them).
SELECT a.position AS ancestor, d.position AS descendant, c.distance
FROM closure AS c
JOIN nodes AS a ON a.label = c.ancestor
JOIN nodes AS d ON d.label = c.descendant

-- name: lca_closure (duckdb, spark)
-- The DuckDB store keeps the closure on node positions (node_closure), and Spark receives a copy of it (or
-- computes it once from closure and nodes, hiersql.engines.SparkEngine): no join needed.
SELECT ancestor, descendant, distance
FROM node_closure

-- name: lca_open_counts
-- (system, instance_id, n_true, n_pred, n_both) = |Gt|, |Gp|, |Gt ∩ Gp| of the minimal graphs of the instances
-- with a choice (lca_open_*): the minimal-graph step of lca.py (greedy or optimal graphs) writes them, batch
-- by batch; none here, where no such step runs (extended graphs; HEMKit's rewrite lca_graph_counts whole).
SELECT CAST(NULL AS VARCHAR) AS system, CAST(NULL AS VARCHAR) AS instance_id, CAST(NULL AS BIGINT) AS n_true,
       CAST(NULL AS BIGINT) AS n_pred, CAST(NULL AS BIGINT) AS n_both
WHERE false

-- name: lca_instances
-- Every (system, instance) numbered: the joins below carry the number instead of the two names.
SELECT row_number() OVER (ORDER BY s.system, i.instance_id) AS inst, s.system, i.instance_id
FROM systems AS s
CROSS JOIN instances AS i

-- name: lca_sides
-- (inst, side, label): the labels of both sides of every (system, instance), label the node's position.
SELECT k.inst, 't' AS side, n.position AS label
FROM truth AS t
JOIN nodes AS n ON n.label = t.label
JOIN lca_instances AS k ON k.instance_id = t.instance_id
UNION ALL
SELECT k.inst, 'p' AS side, n.position AS label
FROM predictions AS p
JOIN nodes AS n ON n.label = p.label
JOIN lca_instances AS k ON k.system = p.system AND k.instance_id = p.instance_id

-- name: lca_above
-- (inst, side, label): the labels with a descendant on their side (once per such descendant).
-- The pairs of labels of one side first, then their closure rows: joining the closure to every label's
-- ancestors first (the planner's choice when the pairs are not grouped) costs several times more.
SELECT x.inst, x.side, x.label
FROM (
    SELECT x.inst, x.side, x.label, y.label AS below
    FROM lca_sides AS x
    JOIN lca_sides AS y
        ON y.inst = x.inst AND y.side = x.side AND y.label <> x.label
    GROUP BY x.inst, x.side, x.label, y.label
) AS x
JOIN lca_closure AS c ON c.ancestor = x.label AND c.descendant = x.below

-- name: lca_labels
-- (inst, side, label, shared) after dropping labels with a descendant on the same side; shared: the label is
-- also on the other side (its only option is itself).
WITH kept AS (
    SELECT inst, side, label FROM lca_sides
    EXCEPT
    SELECT inst, side, label FROM lca_above
)
SELECT k.inst, k.side, k.label, o.label IS NOT NULL AS shared
FROM kept AS k
LEFT JOIN kept AS o
    ON o.inst = k.inst AND o.side <> k.side AND o.label = k.label

-- name: lca_labels (duckdb, spark)
-- The same rows in one pass over the labels, hashed on the instance: each label meets its node's proper
-- ancestors (an array per node; Spark broadcasts it), an instance's labels and the ancestors of its labels are
-- collected per side (in the same partition on Spark), and a side keeps its labels that are no ancestor of its
-- other labels (no pairs of labels, no set difference and no join of the kept labels to themselves: on Spark
-- each a shuffle; on DuckDB hash tables of a row per label). A label is shared when it is kept on the other
-- side too. (A side without labels collects NULL on DuckDB, an empty array on Spark: the coalesce.)
WITH proper_ancestors AS (
    SELECT descendant AS node, list(ancestor) AS ancestors
    FROM lca_closure
    WHERE distance > 0
    GROUP BY descendant
),
per_instance AS (
    SELECT
        s.inst,
        array_distinct(list(s.label) FILTER (WHERE s.side = 't')) AS t_labels,
        array_distinct(list(s.label) FILTER (WHERE s.side = 'p')) AS p_labels,
        flatten(list(a.ancestors) FILTER (WHERE s.side = 't')) AS t_above,
        flatten(list(a.ancestors) FILTER (WHERE s.side = 'p')) AS p_above /*+ BROADCAST(a) */
    FROM (SELECT inst, side, label /*+ REPARTITION(inst) */ FROM lca_sides) AS s
    LEFT JOIN proper_ancestors AS a ON a.node = s.label
    GROUP BY s.inst
)
SELECT inst, side, label,
       coalesce(array_contains(other_labels, label), false)
       AND NOT coalesce(array_contains(other_above, label), false) AS shared
FROM (
    SELECT
        inst,
        side,
        CASE WHEN side = 't' THEN t_above ELSE p_above END AS own_above,
        CASE WHEN side = 't' THEN p_labels ELSE t_labels END AS other_labels,
        CASE WHEN side = 't' THEN p_above ELSE t_above END AS other_above,
        unnest(CASE WHEN side = 't' THEN t_labels ELSE p_labels END) AS label
    FROM (SELECT *, unnest(['t', 'p']) AS side FROM per_instance) AS both_sides
) AS x
WHERE NOT array_contains(own_above, label)

-- name: lca_pairs
-- Every (true label, predicted label) pair of an instance that is not the same label and not made of two
-- shared labels (whose only options are themselves).
SELECT
    x.inst,
    x.label AS t_label,
    z.label AS p_label,
    x.shared AS t_shared,
    z.shared AS p_shared
FROM lca_labels AS x
JOIN lca_labels AS z
    ON z.inst = x.inst AND x.side = 't' AND z.side = 'p'
    AND z.label <> x.label AND NOT (x.shared AND z.shared)

-- name: lca_ancestor_maps (spark)
-- (node, up): each node's ancestors within $max_distance as a map {ancestor: distance} (Spark only; read by
-- lca_pair_meetings and lca_dag_path_nodes, broadcast by both). A path node -> lca of an option is never
-- longer than $max_distance, so the maps hold every step of it.
SELECT descendant AS node, map_from_entries(list(struct_pack(ancestor := ancestor, distance := distance))) AS up
FROM lca_closure
WHERE $max_distance IS NULL OR distance <= $max_distance
GROUP BY descendant

-- name: lca_pair_meetings
-- The lowest common ancestors of every pair: the common ancestors within $max_distance edges of both whose
-- cost up(t, a) + up(p, a) is the pair's minimum d(t, p) (other common ancestors cost more than d(t, p) and
-- so can be no label's option). The minimum is a grouped aggregate joined back (a window partitioned by
-- pair sorts, slower; so would numbering the pairs to carry one key through the join).
WITH common AS (
    SELECT q.inst, q.t_label, q.p_label, q.t_shared, q.p_shared, cx.ancestor AS lca, cx.distance AS up_t,
           cz.distance AS up_p
    FROM lca_pairs AS q
    JOIN lca_closure AS cx ON cx.descendant = q.t_label
    JOIN lca_closure AS cz ON cz.descendant = q.p_label AND cz.ancestor = cx.ancestor
    WHERE $max_distance IS NULL OR (cx.distance <= $max_distance AND cz.distance <= $max_distance)
)
SELECT m.inst, m.t_label, m.p_label, m.t_shared, m.p_shared, m.lca, m.up_t, m.up_p
FROM common AS m
JOIN (SELECT inst, t_label, p_label, min(up_t + up_p) AS d FROM common GROUP BY inst, t_label, p_label) AS b
    ON b.inst = m.inst AND b.t_label = m.t_label AND b.p_label = m.p_label AND m.up_t + m.up_p = b.d

-- name: lca_pair_meetings (duckdb)
-- The same rows, the join order fixed as in pair_distances_of (duckdb) (hiersql/measures/pair_based/
-- pair_based.sql): each pair with the ancestors of its true label first (MATERIALIZED), then those of the
-- predicted label that match.
WITH pair_ups AS MATERIALIZED (
    SELECT q.inst, q.t_label, q.p_label, q.t_shared, q.p_shared, cx.ancestor AS lca, cx.distance AS up_t
    FROM lca_pairs AS q
    JOIN lca_closure AS cx ON cx.descendant = q.t_label
    WHERE $max_distance IS NULL OR cx.distance <= $max_distance
),
common AS (
    SELECT u.inst, u.t_label, u.p_label, u.t_shared, u.p_shared, u.lca, u.up_t, cz.distance AS up_p
    FROM pair_ups AS u
    JOIN lca_closure AS cz ON cz.descendant = u.p_label AND cz.ancestor = u.lca
    WHERE $max_distance IS NULL OR cz.distance <= $max_distance
)
SELECT m.inst, m.t_label, m.p_label, m.t_shared, m.p_shared, m.lca, m.up_t, m.up_p
FROM common AS m
JOIN (SELECT inst, t_label, p_label, min(up_t + up_p) AS d FROM common GROUP BY inst, t_label, p_label) AS b
    ON b.inst = m.inst AND b.t_label = m.t_label AND b.p_label = m.p_label AND m.up_t + m.up_p = b.d

-- name: lca_pair_meetings (spark)
-- The same rows on Spark without one row per (pair, common ancestor) shuffled by ancestor: each pair looks
-- its two ancestor maps up where it is (broadcast), and its lowest common ancestors are the shared keys of
-- least cost (as pair_distances_of (spark) in hiersql/measures/pair_based/pair_based.sql).
WITH common AS (
    SELECT q.inst, q.t_label, q.p_label, q.t_shared, q.p_shared,
           list_transform(array_intersect(map_keys(cx.up), map_keys(cz.up)),
                          a -> struct_pack(lca := a, up_t := cx.up[a], up_p := cz.up[a])) AS meetings
               /*+ BROADCAST(cx), BROADCAST(cz) */
    FROM lca_pairs AS q
    JOIN lca_ancestor_maps AS cx ON cx.node = q.t_label
    JOIN lca_ancestor_maps AS cz ON cz.node = q.p_label
),
lowest AS (
    SELECT inst, t_label, p_label, t_shared, p_shared, meetings,
           list_min(list_transform(meetings, m -> m.up_t + m.up_p)) AS d
    FROM common
)
SELECT inst, t_label, p_label, t_shared, p_shared, m.lca, m.up_t, m.up_p
FROM (
    SELECT inst, t_label, p_label, t_shared, p_shared, unnest(list_filter(meetings, m -> m.up_t + m.up_p = d)) AS m
    FROM lowest
) AS e

-- name: lca_meetings
-- (inst, side, label, partner, lca, up_label, up_partner, cost): the meetings of every
-- label that is not shared, from both sides. (A shared label's only option, itself, has the path {x}, which
-- adds nothing to graphs that hold every label: it is added only for the minimal graphs, lca_open_options.)
SELECT inst, 't' AS side, t_label AS label, p_label AS partner, lca, up_t AS up_label,
       up_p AS up_partner, up_t + up_p AS cost
FROM lca_pair_meetings
WHERE NOT t_shared
UNION ALL
SELECT inst, 'p' AS side, p_label AS label, t_label AS partner, lca, up_p AS up_label,
       up_t AS up_partner, up_t + up_p AS cost
FROM lca_pair_meetings
WHERE NOT p_shared

-- name: lca_unmet_options
-- The options of the labels (not shared) that meet no label of the other side: the virtual ancestor beyond the
-- threshold (lca -1, one edge up from both) with the least label of the other side. Only under $max_distance:
-- without it every pair meets at the root (the closure reaches it from every node), and lca_options' branch
-- that reads this query is switched off (on Spark, lca_meetings then stays a view computed within that stage).
SELECT x.inst, x.side, x.label, -1 AS lca, min(z.label) AS partner, 1 AS up_label, 1 AS up_partner
FROM (
    -- the labels with no meeting first (a set difference, which the planner keeps below the join)
    SELECT inst, side, label FROM lca_labels WHERE NOT shared
    EXCEPT
    SELECT inst, side, label FROM lca_meetings
) AS x
JOIN lca_labels AS z
    ON z.inst = x.inst AND z.side <> x.side
GROUP BY x.inst, x.side, x.label

-- name: lca_options
-- (inst, side, label, lca, partner, up_label, up_partner): the options of every label that
-- is not shared.
SELECT m.inst, m.side, m.label, m.lca, m.partner, m.up_label, m.up_partner
FROM lca_meetings AS m
JOIN (
    SELECT inst, side, label, min(cost) AS dmin
    FROM lca_meetings
    GROUP BY inst, side, label
) AS b ON b.inst = m.inst AND b.side = m.side AND b.label = m.label
    AND m.cost = b.dmin
UNION ALL
SELECT inst, side, label, lca, partner, up_label, up_partner
FROM lca_unmet_options
WHERE $max_distance IS NOT NULL

-- name: lca_meetings (spark)
-- The same rows on Spark from one read of lca_pair_meetings: each pair meeting listed for both sides
-- (unnest(['t', 'p'])) rather than a UNION ALL of two reads, so that lca_options (spark) computes the pair
-- meetings once, within its own job, in the partitions of the instances (no shuffle between the pairs of
-- labels and the least costs).
SELECT
    inst,
    side,
    CASE WHEN side = 't' THEN t_label ELSE p_label END AS label,
    CASE WHEN side = 't' THEN p_label ELSE t_label END AS partner,
    lca,
    CASE WHEN side = 't' THEN up_t ELSE up_p END AS up_label,
    CASE WHEN side = 't' THEN up_p ELSE up_t END AS up_partner,
    up_t + up_p AS cost
FROM (SELECT *, unnest(['t', 'p']) AS side FROM lca_pair_meetings) AS m
WHERE NOT CASE WHEN side = 't' THEN t_shared ELSE p_shared END

-- name: lca_options (spark)
-- The same rows on Spark reading lca_meetings once: the least cost of a label is a window over its meetings
-- (the rows of an instance are in one partition already: hashed on it by the pairs of labels), not a grouped
-- minimum joined back to a second read.
SELECT inst, side, label, lca, partner, up_label, up_partner
FROM (SELECT *, min(cost) OVER (PARTITION BY inst, side, label) AS dmin FROM lca_meetings) AS m
WHERE cost = dmin
UNION ALL
SELECT inst, side, label, lca, partner, up_label, up_partner
FROM lca_unmet_options
WHERE $max_distance IS NOT NULL

-- name: lca_path_ends
-- (inst, side, node, lca, up): the paths an option asks for, on the side they belong to.
SELECT inst, side, label AS node, lca, up_label AS up
FROM lca_options
UNION
SELECT inst, CASE WHEN side = 't' THEN 'p' ELSE 't' END AS side, partner AS node, lca,
       up_partner AS up
FROM lca_options

-- name: lca_path_targets
-- (node, lca, up): the distinct paths node -> lca the options ask for, up = up(node, lca).
SELECT DISTINCT node, lca, up FROM lca_path_ends

-- name: lca_dag_path_nodes
-- (node, lca, step, v) of the paths longer than one edge in a DAG ($multi_parent): the nodes v with
-- up(node, v) + up(v, lca) = up, step = up(node, v).
SELECT e.node, e.lca, cx.distance AS step, cx.ancestor AS v
FROM lca_path_targets AS e
JOIN lca_closure AS cx ON cx.descendant = e.node AND cx.distance <= e.up
JOIN lca_closure AS ca ON ca.descendant = cx.ancestor AND ca.ancestor = e.lca AND cx.distance + ca.distance = e.up
WHERE e.up > 1 AND $multi_parent

-- name: lca_dag_path_nodes (spark)
-- The same rows on Spark without the closure shuffled twice (by descendant, then by (descendant, ancestor)):
-- the ancestor maps are broadcast; a path's candidate nodes v are the entries of node's map at most up
-- edges above it, and v is kept when v's own map puts lca at the remaining distance.
WITH steps AS (
    SELECT e.node, e.lca, e.up, unnest(list_filter(map_entries(m.up), a -> a.value <= e.up)) AS s
        /*+ BROADCAST(m) */
    FROM lca_path_targets AS e
    JOIN lca_ancestor_maps AS m ON m.node = e.node
    WHERE e.up > 1 AND $multi_parent
)
SELECT s.node, s.lca, s.s.value AS step, s.s.key AS v /*+ BROADCAST(c) */
FROM steps AS s
JOIN lca_ancestor_maps AS c ON c.node = s.s.key
WHERE c.up[s.lca] = s.up - s.s.value

-- name: lca_path_nodes
-- (node, lca, step, v): the nodes v on the shortest upward paths node -> lca, step = up(node, v). A path of
-- 0 or 1 edge is {node} or {node, lca} (also the path to the virtual ancestor beyond the threshold): only
-- longer paths need the closure (on MeSH with parents and children predicted, 4 path ends in 5 are short).
SELECT node, lca, step, v FROM lca_dag_path_nodes
UNION ALL
-- in a tree ($multi_parent false: no node has two parents) the ancestors of node up to e.up edges above it
-- are its one path to lca
SELECT e.node, e.lca, cx.distance AS step, cx.ancestor AS v
FROM lca_path_targets AS e
JOIN lca_closure AS cx ON cx.descendant = e.node AND cx.distance <= e.up
WHERE e.up > 1 AND NOT $multi_parent
UNION ALL
SELECT node, lca, 0 AS step, node AS v FROM lca_path_targets WHERE up <= 1
UNION ALL
SELECT node, lca, 1 AS step, lca AS v FROM lca_path_targets WHERE up = 1

-- name: lca_multi_paths
-- (node, lca): the paths node -> lca with more than one shortest path (more nodes than steps; none in a
-- tree). Read by lca_open_instances (and on Spark by lca_open_links, which then reads the rows stored once):
-- a few rows (about one path end in twenty on the benchmark DAG) that Spark broadcasts.
SELECT node, lca
FROM lca_path_nodes
WHERE $multi_parent
GROUP BY node, lca
HAVING count(*) > max(step) + 1

-- name: lca_extended_nodes
-- (inst, side, v): the nodes of the extended graphs Gt ('t') and Gp ('p'), a node once per path through it
-- (lca_graph_counts groups them; deduplicating here would cost a third more). Not a stage: composed into
-- lca_graph_counts, its one reader (the rows are not stored).
SELECT e.inst, e.side, n.v
FROM lca_path_ends AS e
JOIN lca_path_nodes AS n ON n.node = e.node AND n.lca = e.lca
UNION ALL
SELECT inst, side, label AS v
FROM lca_labels

-- name: lca_extended_names
-- lca_extended_nodes with instance and node names ($beyond for the virtual ancestor).
SELECT k.system, k.instance_id, e.side, coalesce(n.label, $beyond) AS v
FROM lca_extended_nodes AS e
JOIN lca_instances AS k ON k.inst = e.inst
LEFT JOIN nodes AS n ON n.position = e.v

-- name: lca_graph_counts
-- (inst, system, instance_id, n_true, n_pred, n_both) = |Gt|, |Gp|, |Gt ∩ Gp| of the extended graphs (for the
-- instances with a choice, lca_instance reads the minimal graphs' counts of lca_open_counts instead). Spark
-- hashes the nodes on the instance first: both groupings then run where the rows are, one shuffle instead of
-- one per grouping.
SELECT k.inst, k.system, k.instance_id, c.n_true, c.n_pred, c.n_both
FROM (
    SELECT inst, sum(in_true) AS n_true, sum(in_pred) AS n_pred, sum(in_true * in_pred) AS n_both
    FROM (
        SELECT
            inst,
            v,
            max(CASE WHEN side = 't' THEN 1 ELSE 0 END) AS in_true,
            max(CASE WHEN side = 'p' THEN 1 ELSE 0 END) AS in_pred
        FROM (SELECT inst, side, v /*+ REPARTITION(inst) */ FROM lca_extended_nodes) AS x
        WHERE $include_root OR v NOT IN (SELECT position FROM nodes WHERE is_root)
        GROUP BY inst, v
    ) AS per_node
    GROUP BY inst
) AS c
JOIN lca_instances AS k ON k.inst = c.inst

-- name: lca_graph_counts (duckdb)
-- The same rows on DuckDB from each instance's lists of the nodes of its two graphs: one group per instance,
-- not one per (instance, node), whose hash table outgrows the caches at a million instances. (A side without
-- nodes collects NULL: the coalesce.)
SELECT k.inst, k.system, k.instance_id, coalesce(len(c.t), 0) AS n_true, coalesce(len(c.p), 0) AS n_pred,
       coalesce(len(list_intersect(c.t, c.p)), 0) AS n_both
FROM (
    SELECT inst, list_distinct(list(v) FILTER (WHERE side = 't')) AS t,
           list_distinct(list(v) FILTER (WHERE side = 'p')) AS p
    FROM lca_extended_nodes
    WHERE $include_root OR v NOT IN (SELECT position FROM nodes WHERE is_root)
    GROUP BY inst
) AS c
JOIN lca_instances AS k ON k.inst = c.inst

-- name: lca_open_instances
-- (inst, system, instance_id, batch) whose minimal graphs involve a choice: a label with several options, or
-- a path end with several shortest paths (lca_multi_paths); numbered into batches of $batch_size (lca.py
-- fetches one at a time). Spark broadcasts the multi paths to the path ends, instead of shuffling both.
SELECT k.inst, k.system, k.instance_id,
       CAST(floor((row_number() OVER (ORDER BY k.inst) - 1) / $batch_size) AS INTEGER) AS batch
FROM lca_instances AS k
WHERE k.inst IN (
    SELECT inst
    FROM lca_options
    GROUP BY inst, side, label
    HAVING count(*) > 1
    UNION ALL
    SELECT e.inst /*+ BROADCAST(multi) */
    FROM lca_path_ends AS e
    JOIN lca_multi_paths AS multi ON multi.node = e.node AND multi.lca = e.lca
)

-- name: lca_open_options
-- The options of the labels of the instances with a choice, a shared label's (itself) included; nodes by
-- position, as lca.py reads them (it compares integers, and reads names only to return graphs).
SELECT b.batch, o.inst, o.side, o.label, o.lca, o.partner
FROM (
    SELECT inst, side, label, lca, partner FROM lca_options
    UNION ALL
    SELECT inst, side, label, label AS lca, label AS partner FROM lca_labels WHERE shared
) AS o
JOIN lca_open_instances AS b ON b.inst = o.inst

-- name: lca_open_ends
SELECT DISTINCT b.batch, e.node, e.lca
FROM lca_path_ends AS e
JOIN lca_open_instances AS b ON b.inst = e.inst

-- name: lca_open_nodes
-- The nodes of the shortest paths of lca_open_ends, and the path {x} of a shared label x (its own LCA).
SELECT e.batch, n.node, n.lca, n.step, n.v
FROM lca_open_ends AS e
JOIN lca_path_nodes AS n ON n.node = e.node AND n.lca = e.lca
UNION
SELECT b.batch, l.label AS node, l.label AS lca, 0 AS step, l.label AS v
FROM lca_labels AS l
JOIN lca_open_instances AS b ON b.inst = l.inst
WHERE l.shared

-- name: lca_open_nodes (duckdb, spark)
-- The same rows on DuckDB and Spark without a DISTINCT over all of them: the paths' rows are distinct already (one
-- row per (batch, node, lca) of lca_open_ends and (step, v) of its path); the path {x} of a shared label
-- is added once per batch unless lca_open_ends asks for that path (x -> x) of the batch already.
SELECT e.batch, n.node, n.lca, n.step, n.v
FROM lca_open_ends AS e
JOIN lca_path_nodes AS n ON n.node = e.node AND n.lca = e.lca
UNION ALL
(
    SELECT b.batch, l.label AS node, l.label AS lca, 0 AS step, l.label AS v
    FROM lca_labels AS l
    JOIN lca_open_instances AS b ON b.inst = l.inst
    WHERE l.shared
    EXCEPT
    SELECT batch, node, lca, 0 AS step, node AS v
    FROM lca_open_ends
    WHERE node = lca
)

-- name: lca_open_links
-- (batch, node, lca, lower, upper): the edges lower -> upper (child to parent: closure rows at distance 1)
-- between consecutive steps of the shortest paths node -> lca that are not unique (more nodes than steps);
-- the minimal graphs pick one path among them. Only for the instances with a choice.
WITH multi AS (
    SELECT batch, node, lca
    FROM lca_open_nodes
    GROUP BY batch, node, lca
    HAVING count(*) > max(step) + 1
)
SELECT a.batch, a.node, a.lca, a.v AS lower, b.v AS upper
FROM multi AS m
JOIN lca_open_nodes AS a ON a.batch = m.batch AND a.node = m.node AND a.lca = m.lca
JOIN lca_open_nodes AS b ON b.batch = a.batch AND b.node = a.node AND b.lca = a.lca AND b.step = a.step + 1
JOIN lca_closure AS e ON e.descendant = a.v AND e.ancestor = b.v AND e.distance = 1
WHERE $multi_parent  -- in a tree every path is the only one

-- name: lca_open_links (duckdb, spark)
-- The same rows on DuckDB and Spark: the links of each path with several shortest paths are found once, from its
-- nodes in lca_path_nodes (the few such paths broadcast on Spark to pick them out), instead of per batch
-- from lca_open_nodes joined twice to itself; the closure rows at distance 1 meet those few candidate links
-- where they are read (the candidates broadcast on Spark), and the links then go to the batches that ask
-- for them.
WITH multi_nodes AS (
    SELECT n.node, n.lca, n.step, n.v /*+ BROADCAST(m) */
    FROM lca_path_nodes AS n
    JOIN lca_multi_paths AS m ON m.node = n.node AND m.lca = n.lca
),
links AS (
    SELECT c.node, c.lca, c.lower, c.upper /*+ BROADCAST(c) */
    FROM (
        SELECT a.node, a.lca, a.v AS lower, b.v AS upper
        FROM multi_nodes AS a
        JOIN multi_nodes AS b ON b.node = a.node AND b.lca = a.lca AND b.step = a.step + 1
    ) AS c
    JOIN lca_closure AS e ON e.descendant = c.lower AND e.ancestor = c.upper AND e.distance = 1
)
SELECT o.batch, l.node, l.lca, l.lower, l.upper /*+ BROADCAST(l) */
FROM lca_open_ends AS o
JOIN links AS l ON l.node = o.node AND l.lca = o.lca

-- name: lca_instance
-- Per (system, instance) of the truth: the graph sizes |Gt|, |Gp|, |Gt ∩ Gp| (PLCA, RLCA, FLCA are generated
-- from the family's declared measures, hiersql.plan.instance_values_sql). Reads lca_graph_counts (the extended
-- or HEMKit's counts) and, for the instances with a choice, lca_open_counts (the minimal graphs' counts).
SELECT
    g.system,
    g.instance_id,
    coalesce(c.n_true, 0) AS n_true,
    coalesce(c.n_pred, 0) AS n_pred,
    coalesce(c.n_both, 0) AS n_both
FROM (SELECT s.system, i.instance_id FROM systems AS s CROSS JOIN instances AS i) AS g
LEFT JOIN (
    SELECT e.system, e.instance_id, coalesce(o.n_true, e.n_true) AS n_true, coalesce(o.n_pred, e.n_pred) AS n_pred,
           coalesce(o.n_both, e.n_both) AS n_both
    FROM lca_graph_counts AS e
    LEFT JOIN lca_open_counts AS o ON o.system = e.system AND o.instance_id = e.instance_id
) AS c ON c.system = g.system AND c.instance_id = g.instance_id
