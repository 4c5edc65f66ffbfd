-- Hierarchical confusion matrix (Riehl, Neunteufel, Hemberg; SPEC §6), the set-based part.
-- A path is a root-first node list. For a true path t and a predicted path p:
--   common path c = the longest prefix of t whose nodes all occur in p
--   TP = |c| - 1 (root excluded)      FP = |p \ t|      FN = |t \ p|
--   TN = |S \ t| + |D \ (t ∪ p)|, S = siblings (other children of every direct parent) of the nodes of c,
--        D = the direct children of the last node of c            ($tn = 'published', the authors' code)
--   $tn = 'descendants' (the paper's formula): S also holds every descendant of those siblings and D every
--        descendant of the last node of c.
-- S and |D \ t| depend only on t and |c|, so they are computed once per (true path, |c|); the pair adds the
-- nodes of p \ t that are in D.
-- The greedy path cover of each label set and the greedy matching of predicted to true paths are sequential
-- per instance; hiersql.measures.confusion runs them vectorised over all instances between these queries and
-- writes their choices as the tables hcm_cover_choice(label_no, path_no, step) (read by hcm_chosen_paths;
-- step, the order of choice, only for truth sets, which need it: 0 in predicted sets)
-- and hcm_match(grp, j, t_path, p_label, p_path, tp, fp, fn, tn) (read by hcm_instance).
-- Label sets are numbered grp = sys_no * stride + inst_no, stride = number of instances + 1 (hcm_systems),
-- sys_no 0 being the truth;
-- labels and nodes are numbered by their position in the taxonomy (negative for labels outside it).
-- Reads: truth, predictions, systems, instances, nodes, edges, closure.

-- name: hcm_systems
-- Systems numbered from 1; their label sets are numbered grp = sys_no * stride + inst_no (first_grp + inst_no).
SELECT s.system, s.sys_no, k.stride, s.sys_no * k.stride AS first_grp
FROM (SELECT system, row_number() OVER (ORDER BY system) AS sys_no FROM systems) AS s
CROSS JOIN (SELECT count(*) + 1 AS stride FROM instances) AS k

-- name: hcm_instances
SELECT instance_id, row_number() OVER (ORDER BY instance_id) AS inst_no FROM instances

-- name: hcm_labels
-- Every label of the truth and the predictions, and the root, with an integer id. A label outside the
-- taxonomy (possible only when rows are inserted into the tables directly, as the GermEval subtask-A
-- reproduction does for the authors' empty labels) gets a negative id.
SELECT u.label, coalesce(n.position, -row_number() OVER (ORDER BY u.label)) AS label_id
FROM (
    SELECT label FROM truth
    UNION
    SELECT label FROM predictions
    UNION
    SELECT label FROM nodes WHERE is_root
) AS u
LEFT JOIN nodes AS n ON n.label = u.label

-- name: hcm_set_labels
-- The labels of every set (sys_no 0: the truth of an instance; else a system's predictions for it) with
-- their rank and a row number (label_no: an id, in set and rank order). A (system, instance) with no
-- prediction is the set {root}: it is scored as the path [root].
WITH labelled AS (
    SELECT 0 AS sys_no, i.inst_no, i.inst_no AS grp, l.label_id, t.rank
    FROM truth AS t
    JOIN hcm_instances AS i ON i.instance_id = t.instance_id
    JOIN hcm_labels AS l ON l.label = t.label
    UNION ALL
    SELECT s.sys_no, i.inst_no, s.first_grp + i.inst_no AS grp, l.label_id, p.rank
    FROM predictions AS p
    JOIN hcm_systems AS s ON s.system = p.system
    JOIN hcm_instances AS i ON i.instance_id = p.instance_id
    JOIN hcm_labels AS l ON l.label = p.label
)
SELECT *, row_number() OVER (ORDER BY grp, rank, label_id) AS label_no
FROM (
    SELECT sys_no, inst_no, grp, label_id, rank FROM labelled
    UNION ALL
    SELECT s.sys_no, i.inst_no, s.first_grp + i.inst_no AS grp, r.label_id, 1 AS rank
    FROM hcm_systems AS s
    CROSS JOIN hcm_instances AS i
    CROSS JOIN (SELECT l.label_id FROM hcm_labels AS l JOIN nodes AS n ON n.label = l.label WHERE n.is_root) AS r
    -- NOT EXISTS, not NOT IN: PostgreSQL runs a NOT IN whose rows exceed work_mem as a scan of them per row
    WHERE NOT EXISTS (SELECT 1 FROM labelled AS x WHERE x.grp = s.first_grp + i.inst_no)
) AS set_labels

-- name: hcm_paths (duckdb)
-- DuckDB only (lists): the plan runs it as a step on a DuckDB connection holding hcm_labels, edges and nodes
-- (hiersql.measures.confusion.solve_root_paths), whatever the engine.
-- Every root path of every label, root first, as node names (path) and node ids (ids). path_no numbers
-- the paths of a label in the order of their node positions (order of first appearance in the taxonomy
-- input), compared element-wise; name_rank orders all paths by their node names, compared element-wise.
-- A label outside the taxonomy is the path [root, label].
WITH RECURSIVE up (label, top, path, ids) AS (
    SELECT l.label, l.label, [l.label], [l.label_id]
    FROM hcm_labels AS l
    WHERE l.label_id >= 0
    UNION ALL
    SELECT up.label, e.parent, list_prepend(e.parent, up.path), list_prepend(n.position, up.ids)
    FROM up
    JOIN edges AS e ON e.child = up.top
    JOIN nodes AS n ON n.label = e.parent
),
found AS (
    SELECT label, row_number() OVER (PARTITION BY label ORDER BY ids) AS path_no, path, ids
    FROM up
    WHERE top IN (SELECT label FROM nodes WHERE is_root)
    UNION ALL
    SELECT l.label, 1 AS path_no, [n.label, l.label] AS path, [n.position, l.label_id] AS ids
    FROM hcm_labels AS l
    CROSS JOIN (SELECT label, position FROM nodes WHERE is_root) AS n
    WHERE l.label_id < 0
)
SELECT l.label_id, f.path_no, f.path, f.ids, len(f.ids) AS n_nodes, row_number() OVER (ORDER BY f.path) AS name_rank
FROM found AS f
JOIN hcm_labels AS l ON l.label = f.label

-- name: hcm_path_nodes (duckdb)
-- One row per node of every path; pos is 1-based from the root.
SELECT label_id, path_no, n_nodes, unnest(ids) AS node_id, unnest(path) AS node, generate_subscripts(ids, 1) AS pos
FROM hcm_paths

-- name: hcm_cover_candidates
-- Input of the greedy path cover: for every label of a set and every root path of it, the labels of the
-- same set that lie on that path (on_path = their label_no). Candidates are taken in the order of rank
-- (then label_id and label_no, should ranks tie), then path_no. Rows in that order (the path cover's fetch
-- of a batch is then not sorted again).
SELECT l.grp, l.rank, l.label_id, l.label_no, pn.path_no, o.label_no AS on_path
FROM hcm_set_labels AS l
JOIN hcm_path_nodes AS pn ON pn.label_id = l.label_id
JOIN hcm_set_labels AS o ON o.grp = l.grp AND o.label_id = pn.node_id
ORDER BY l.grp, l.rank, l.label_id, l.label_no, pn.path_no

-- name: hcm_chosen_paths
-- The paths the cover chose, with the step at which each was chosen in its set (truth sets only; 0 in
-- predicted sets, whose order of choice nothing reads).
SELECT l.sys_no, l.inst_no, l.grp, l.label_id, c.path_no, p.n_nodes, c.step
FROM hcm_cover_choice AS c
JOIN hcm_set_labels AS l ON l.label_no = c.label_no
JOIN hcm_paths AS p ON p.label_id = l.label_id AND p.path_no = c.path_no

-- name: hcm_chosen_truth
-- The true labels: last nodes of the chosen paths, in the order they were chosen (j from 0).
SELECT inst_no, label_id, row_number() OVER (PARTITION BY inst_no ORDER BY step) - 1 AS j
FROM (
    SELECT inst_no, label_id, min(step) AS step FROM hcm_chosen_paths WHERE sys_no = 0
    GROUP BY inst_no, label_id
) AS firsts

-- name: hcm_chosen_pred
-- The predicted paths.
SELECT sys_no, inst_no, grp, label_id, path_no, n_nodes FROM hcm_chosen_paths WHERE sys_no > 0

-- name: hcm_pairs
-- The distinct (true path, predicted path) pairs that some instance compares: the distinct (true label,
-- predicted path) pairs, then each path of the true label (distinct already: fewer rows to make distinct).
SELECT tp.label_id AS t_label, tp.path_no AS t_path, q.p_label, q.p_path
FROM (
    SELECT DISTINCT t.label_id AS t_label, p.label_id AS p_label, p.path_no AS p_path
    FROM hcm_chosen_truth AS t
    JOIN hcm_chosen_pred AS p ON p.inst_no = t.inst_no
) AS q
JOIN hcm_paths AS tp ON tp.label_id = q.t_label

-- name: hcm_pair_common
-- n_common = |c| (the prefix of t up to the first node missing from p), n_shared = |t ∩ p|.
SELECT
    pr.t_label, pr.t_path, pr.p_label, pr.p_path,
    coalesce(min(CASE WHEN pn.node_id IS NULL THEN tn.pos END), max(tn.n_nodes) + 1) - 1 AS n_common,
    count(pn.node_id) AS n_shared,
    max(tn.n_nodes) AS t_len
FROM hcm_pairs AS pr
JOIN hcm_path_nodes AS tn ON tn.label_id = pr.t_label AND tn.path_no = pr.t_path
LEFT JOIN hcm_path_nodes AS pn
    ON pn.label_id = pr.p_label AND pn.path_no = pr.p_path AND pn.node_id = tn.node_id
GROUP BY pr.t_label, pr.t_path, pr.p_label, pr.p_path

-- name: hcm_pair_common (duckdb)
-- The same rows on DuckDB from the two paths' lists of node ids: a row per pair, not one per node of t.
SELECT pr.t_label, pr.t_path, pr.p_label, pr.p_path,
       coalesce(list_position(list_transform(t.ids, lambda x: list_contains(p.ids, x)), false),
                t.n_nodes + 1) - 1 AS n_common,
       len(list_filter(t.ids, lambda x: list_contains(p.ids, x))) AS n_shared,
       t.n_nodes AS t_len
FROM hcm_pairs AS pr
JOIN hcm_paths AS t ON t.label_id = pr.t_label AND t.path_no = pr.t_path
JOIN hcm_paths AS p ON p.label_id = pr.p_label AND p.path_no = pr.p_path

-- name: hcm_below
-- (ancestor, descendant): the nodes D may hold below a node: its children ($tn = 'published') or all its
-- descendants ('descendants').
SELECT parent AS ancestor, child AS descendant FROM edges WHERE $tn = 'published'
UNION ALL
SELECT ancestor, descendant FROM closure WHERE $tn = 'descendants' AND distance >= 1

-- name: hcm_prefix_tn
-- For every true path t and common-path length k that occurs: |S \ t| (the siblings of t's first k nodes,
-- with their descendants when $tn = 'descendants') plus |D \ t| (the children, or all descendants, of t's
-- k-th node). The two sets are counted apart (a DAG node can be in both). With P_k the parents of t's first
-- k nodes, S_k = the children of P_k (t's nodes among them are off the count), so $tn = 'published' counts
-- |S_k \ t| = Σ_{p in P_k} |children(p)| - (each child of several parents in P_k, counted once) - (the nodes
-- of t among them), from the rows of each path's parents rather than of its siblings; with 'descendants',
-- S's nodes are listed, each at the first position of t that reaches it.
WITH prefixes AS (
    SELECT DISTINCT t_label, t_path, n_common AS k FROM hcm_pair_common
),
true_paths AS (
    SELECT t_label, t_path, max(k) AS max_k FROM prefixes GROUP BY t_label, t_path
),
path_parents AS (  -- P: each parent of t's nodes, at the first position whose node it is a parent of
    SELECT tp.t_label, tp.t_path, up.parent, min(x.pos) AS pos
    FROM true_paths AS tp
    JOIN hcm_path_nodes AS x ON x.label_id = tp.t_label AND x.path_no = tp.t_path AND x.pos <= tp.max_k
    JOIN edges AS up ON up.child = x.node
    GROUP BY tp.t_label, tp.t_path, up.parent
),
fan AS (
    SELECT parent, count(*) AS n FROM edges GROUP BY parent
),
shared_parents AS (  -- (t, y, pos): each parent in P of a child y of several parents, at its position
    SELECT pp.t_label, pp.t_path, e.child AS y, pp.pos
    FROM path_parents AS pp
    JOIN edges AS e ON e.parent = pp.parent
    WHERE e.child IN (SELECT child FROM edges GROUP BY child HAVING count(*) > 1)
),
published_changes AS (  -- + |children(p)| at p's position; - 1 at each further parent of a shared child, and
    -- at the first position whose parents have a node of t as a child
    SELECT pp.t_label, pp.t_path, pp.pos, f.n
    FROM path_parents AS pp
    JOIN fan AS f ON f.parent = pp.parent
    WHERE $tn = 'published'
    UNION ALL
    SELECT t_label, t_path, pos, -1
    FROM (
        SELECT t_label, t_path, pos, row_number() OVER (PARTITION BY t_label, t_path, y ORDER BY pos) AS nth
        FROM shared_parents
        WHERE $tn = 'published'
    ) AS repeated
    WHERE nth > 1
    UNION ALL
    SELECT y.label_id, y.path_no, min(pp.pos), -1
    FROM hcm_path_nodes AS y
    JOIN edges AS e ON e.child = y.node
    JOIN path_parents AS pp ON pp.t_label = y.label_id AND pp.t_path = y.path_no AND pp.parent = e.parent
    WHERE $tn = 'published'
    GROUP BY y.label_id, y.path_no, y.node
),
siblings AS (  -- each sibling of a node x of t (a child of x's parents but x), at the first position of such an x
    SELECT tp.t_label, tp.t_path, sib.child AS node, min(x.pos) AS pos
    FROM true_paths AS tp
    JOIN hcm_path_nodes AS x ON x.label_id = tp.t_label AND x.path_no = tp.t_path AND x.pos <= tp.max_k
    JOIN edges AS up ON up.child = x.node
    JOIN edges AS sib ON sib.parent = up.parent AND sib.child <> x.node
    WHERE $tn = 'descendants'
    GROUP BY tp.t_label, tp.t_path, sib.child
),
descendants_changes AS (  -- the siblings' descendants off t, each at the first position that reaches it
    SELECT r.t_label, r.t_path, r.pos, count(*) AS n
    FROM (
        SELECT s.t_label, s.t_path, cl.descendant AS node, min(s.pos) AS pos
        FROM siblings AS s
        JOIN closure AS cl ON cl.ancestor = s.node
        GROUP BY s.t_label, s.t_path, cl.descendant
    ) AS r
    LEFT JOIN hcm_path_nodes AS t ON t.label_id = r.t_label AND t.path_no = r.t_path AND t.node = r.node
    WHERE t.node IS NULL
    GROUP BY r.t_label, r.t_path, r.pos
),
changes AS (
    SELECT t_label, t_path, pos, sum(n) AS n
    FROM (
        SELECT * FROM published_changes
        UNION ALL
        SELECT * FROM descendants_changes
    ) AS c
    GROUP BY t_label, t_path, pos
),
s_counts AS (
    SELECT pf.t_label, pf.t_path, pf.k, sum(c.n) AS n
    FROM prefixes AS pf
    JOIN changes AS c ON c.t_label = pf.t_label AND c.t_path = pf.t_path AND c.pos <= pf.k
    GROUP BY pf.t_label, pf.t_path, pf.k
),
on_t AS (  -- per true path t and node x: the nodes of t in below(x)
    SELECT y.label_id AS t_label, y.path_no AS t_path, b.ancestor AS node, count(*) AS n
    FROM true_paths AS tp
    JOIN hcm_path_nodes AS y ON y.label_id = tp.t_label AND y.path_no = tp.t_path
    JOIN hcm_below AS b ON b.descendant = y.node
    GROUP BY y.label_id, y.path_no, b.ancestor
),
d_counts AS (  -- kind 2, D off t: |below(x)| - |t's nodes in below(x)|, x = t's k-th node (below(x) counted
    -- once per node, not listed per prefix: the root's children would be listed for every true path)
    SELECT pf.t_label, pf.t_path, pf.k, b.n - coalesce(o.n, 0) AS n
    FROM prefixes AS pf
    JOIN hcm_path_nodes AS x ON x.label_id = pf.t_label AND x.path_no = pf.t_path AND x.pos = pf.k
    JOIN (SELECT ancestor, count(*) AS n FROM hcm_below GROUP BY ancestor) AS b ON b.ancestor = x.node
    LEFT JOIN on_t AS o ON o.t_label = pf.t_label AND o.t_path = pf.t_path AND o.node = x.node
)
SELECT pf.t_label, pf.t_path, pf.k, CAST(coalesce(s.n, 0) + coalesce(d.n, 0) AS BIGINT) AS tn_t
FROM prefixes AS pf
LEFT JOIN s_counts AS s ON s.t_label = pf.t_label AND s.t_path = pf.t_path AND s.k = pf.k
LEFT JOIN d_counts AS d ON d.t_label = pf.t_label AND d.t_path = pf.t_path AND d.k = pf.k

-- name: hcm_pair_counts
-- TP, FP, FN, TN of every distinct (true path, predicted path) pair; TN = hcm_prefix_tn minus the nodes of
-- p \ t below the last common node x (its children, or its descendants when $tn = 'descendants'): the nodes y
-- of p below x, listed per path (path_below) rather than p's nodes per pair, off t.
WITH path_below AS (  -- (path, x, y): two nodes of a path, y below x (after it: a path runs down from the root)
    SELECT px.label_id, px.path_no, px.node AS x, py.node AS y
    FROM hcm_path_nodes AS px
    JOIN hcm_path_nodes AS py ON py.label_id = px.label_id AND py.path_no = px.path_no AND py.pos > px.pos
    WHERE EXISTS (SELECT 1 FROM hcm_below AS b WHERE b.ancestor = px.node AND b.descendant = py.node)
),
p_below AS (
    SELECT c.t_label, c.t_path, c.p_label, c.p_path, count(*) AS n_p_below
    FROM hcm_pair_common AS c
    JOIN hcm_path_nodes AS last ON last.label_id = c.t_label AND last.path_no = c.t_path AND last.pos = c.n_common
    JOIN path_below AS pb ON pb.label_id = c.p_label AND pb.path_no = c.p_path AND pb.x = last.node
    LEFT JOIN hcm_path_nodes AS t ON t.label_id = c.t_label AND t.path_no = c.t_path AND t.node = pb.y
    WHERE t.node IS NULL
    GROUP BY c.t_label, c.t_path, c.p_label, c.p_path
)
SELECT
    c.t_label, c.t_path, c.p_label, c.p_path, c.n_common, pp.name_rank,
    c.n_common - 1 AS tp,
    pp.n_nodes - c.n_shared AS fp,
    c.t_len - c.n_shared AS fn,
    pt.tn_t - coalesce(b.n_p_below, 0) AS tn
FROM hcm_pair_common AS c
JOIN hcm_paths AS pp ON pp.label_id = c.p_label AND pp.path_no = c.p_path
JOIN hcm_prefix_tn AS pt ON pt.t_label = c.t_label AND pt.t_path = c.t_path AND pt.k = c.n_common
LEFT JOIN p_below AS b
    ON b.t_label = c.t_label AND b.t_path = c.t_path AND b.p_label = c.p_label AND b.p_path = c.p_path

-- name: hcm_pair_counts (duckdb)
-- The same rows on DuckDB: per path p, the nodes y below each of its nodes x as a list (path_below), and per
-- pair the y below t's last common node that are off t, by the list of t's node ids: no row per (pair, y).
WITH path_below AS (
    SELECT px.label_id, px.path_no, px.node_id AS x, list(py.node_id) AS ys
    FROM hcm_path_nodes AS px
    JOIN hcm_path_nodes AS py ON py.label_id = px.label_id AND py.path_no = px.path_no AND py.pos > px.pos
    WHERE EXISTS (SELECT 1 FROM hcm_below AS b WHERE b.ancestor = px.node AND b.descendant = py.node)
    GROUP BY px.label_id, px.path_no, px.node_id
)
SELECT
    c.t_label, c.t_path, c.p_label, c.p_path, c.n_common, pp.name_rank,
    c.n_common - 1 AS tp,
    pp.n_nodes - c.n_shared AS fp,
    c.t_len - c.n_shared AS fn,
    pt.tn_t - coalesce(len(list_filter(b.ys, lambda y: NOT list_contains(tp.ids, y))), 0) AS tn
FROM hcm_pair_common AS c
JOIN hcm_paths AS pp ON pp.label_id = c.p_label AND pp.path_no = c.p_path
JOIN hcm_paths AS tp ON tp.label_id = c.t_label AND tp.path_no = c.t_path
JOIN hcm_prefix_tn AS pt ON pt.t_label = c.t_label AND pt.t_path = c.t_path AND pt.k = c.n_common
LEFT JOIN path_below AS b ON b.label_id = c.p_label AND b.path_no = c.p_path AND b.x = tp.ids[c.n_common]

-- name: hcm_candidates
-- Input of the greedy matching: every (predicted path, true label j, path of j) of every (system,
-- instance) grp, with the pair's counts, n_common and the predicted path's name_rank (the matching takes
-- the predicted paths by m = max n_common descending, then name_rank descending). (grp, j, t_path, p_label,
-- p_path) identifies a row: the matching's choice comes back by it. Rows in the order the matching reads
-- them (DuckDB fetches a table's batch of them sorted twice as fast).
SELECT p.grp, t.j, tp.path_no AS t_path, p.label_id AS p_label, p.path_no AS p_path, k.n_common,
       k.name_rank, k.tp, k.fp, k.fn, k.tn
FROM hcm_chosen_pred AS p
JOIN hcm_chosen_truth AS t ON t.inst_no = p.inst_no
JOIN hcm_paths AS tp ON tp.label_id = t.label_id
JOIN hcm_pair_counts AS k
    ON k.t_label = t.label_id AND k.t_path = tp.path_no AND k.p_label = p.label_id AND k.p_path = p.path_no
ORDER BY p.grp, t.j, tp.path_no

-- name: hcm_instance
-- TP, FP, FN, TN per (system, instance) of the truth: the counts of the matched pairs (hcm_match, the rows
-- of hcm_candidates chosen by the vectorised greedy matching), FP = |p| - 1 of each predicted path left
-- unmatched, and FN = shortest path length - 1 of each true label left unmatched.
WITH matched AS (
    SELECT grp, j, p_label, p_path, tp, fp, fn, tn FROM hcm_match
),
true_sets AS (
    SELECT s.first_grp + t.inst_no AS grp, t.j, t.label_id
    FROM hcm_chosen_truth AS t
    CROSS JOIN hcm_systems AS s
),
parts AS (
    SELECT grp, tp, fp, fn, tn FROM matched
    UNION ALL
    SELECT p.grp, 0, p.n_nodes - 1, 0, 0
    FROM hcm_chosen_pred AS p
    LEFT JOIN matched AS mt ON mt.grp = p.grp AND mt.p_label = p.label_id AND mt.p_path = p.path_no
    WHERE mt.grp IS NULL
    UNION ALL
    SELECT t.grp, 0, 0, d.depth, 0
    FROM true_sets AS t
    JOIN (SELECT label_id, min(n_nodes) - 1 AS depth FROM hcm_paths GROUP BY label_id) AS d
        ON d.label_id = t.label_id
    LEFT JOIN matched AS mt ON mt.grp = t.grp AND mt.j = t.j
    WHERE mt.grp IS NULL
),
sums AS (
    SELECT grp, sum(tp) AS tp, sum(fp) AS fp, sum(fn) AS fn, sum(tn) AS tn FROM parts GROUP BY grp
)
SELECT
    s.system, i.instance_id,
    CAST(coalesce(x.tp, 0) AS BIGINT) AS tp, CAST(coalesce(x.fp, 0) AS BIGINT) AS fp,
    CAST(coalesce(x.fn, 0) AS BIGINT) AS fn, CAST(coalesce(x.tn, 0) AS BIGINT) AS tn
FROM hcm_systems AS s
CROSS JOIN hcm_instances AS i
LEFT JOIN sums AS x ON x.grp = s.first_grp + i.inst_no
