-- DuckDB table macros over the hiersql tables, installed by `hiersql install-macros --db FILE`
-- (hiersql.api.macros.install_macros). Each query below is the body of the table macro of the same name.
-- A body reads another sql/ file's query as the table FILE.QUERY (set_based.set_based_instance), or the
-- family's summary as FILE.summary and its per-instance values as FILE.instance_values (both generated from the
-- family plan's measures, hiersql.plan): the
-- installer puts that query there, composed with the queries it reads, and its $parameters become the
-- macro's named parameters, with the family's defaults (SPEC; hiersql.measures.Options) as default values.
-- A family's summary or per-instance values (those two, or its plan's own summary and instance queries) come
-- where the family's checks of every run pass (hiersql.plan.FamilyPlan.sql_checks), and fail otherwise:
--   SELECT * FROM hiersql_set_based(include_root := true, max_distance := 2) WHERE metric = 'hierarchical_f1';
-- The macros read edges, nodes, closure, instances, truth, predictions, systems (others with --table), and
-- the flat ones also flat_labels(label), the fixed label universe used with fixed_universe := true.
-- The input rules of the readers (hiersql.inputs.rules): every macro that reads truth, predictions, instances
-- or systems reads them cleaned as hiersql evaluate does (trimmed, duplicates collapsed) and fails with one
-- error, `hiersql: TABLE, column 'COL', KEY: MESSAGE: 'VALUE'`, where evaluate would refuse the input;
-- its parameters unknown and no_truth ('error' or 'ignore') are evaluate's --unknown and --no-truth.

-- name: hiersql_closure
-- (ancestor, descendant, distance): the closure computed from edges and nodes, e.g. to refill closure
-- after editing the taxonomy: INSERT INTO closure SELECT * FROM hiersql_closure().
SELECT * FROM closure.closure_refresh

-- name: hiersql_nodes
-- (label, depth, is_root, is_leaf, is_virtual, position): nodes rebuilt from edges and the refreshed closure,
-- e.g. after editing edges: CREATE TEMP TABLE n AS SELECT * FROM hiersql_nodes(); DELETE FROM nodes;
-- INSERT INTO nodes SELECT * FROM n.
SELECT * FROM closure.nodes_refresh

-- name: hiersql_root_edges
-- (parent, child, weight): under a virtual root, its edge to every parentless node of edges:
-- INSERT INTO edges SELECT * FROM hiersql_root_edges().
SELECT * FROM closure.root_edges_refresh

-- name: hiersql_set_based
-- (system, metric, average, value): hP, hR, hF (micro, macro) and SDL of every system.
SELECT * FROM set_based.summary

-- name: hiersql_set_based_instance
-- (system, instance_id, n_true, n_pred, n_both, hierarchical_precision, hierarchical_recall,
-- hierarchical_f1, symmetric_difference_loss) for every system and instance of the truth.
SELECT * FROM set_based.instance_values

-- name: hiersql_flat
-- (system, metric, average, value): the flat multi-label measures (no ancestors added).
SELECT * FROM flat.summary

-- name: hiersql_flat_instance
-- Per-instance flat measures of every system.
SELECT * FROM flat.instance_values

-- name: hiersql_severity
-- (system, metric, average, value): top-k accuracy, hierarchical distance@k, mistake severity, hierarchical
-- precision and mAP@k of every system, for one k (top_k := 5; average '@5'), from the predictions' scores.
SELECT * FROM severity.summary

-- name: hiersql_scoring
-- (system, metric, average, value): PL, L, LPP, LPPTPS, LPPPPS and the hierarchical P/R/F of the scoring
-- trees (Lanus et al.; micro, macro) of every system (offset := 0.0). PL alone unless the edge weights make a
-- scoring tree, as hiersql evaluate's family; a taxonomy that is not a tree, or a root that is a label, fails.
SELECT * FROM scoring.scoring_summary

-- name: hiersql_scoring_instance
-- (system, instance_id, truth, prediction, n, pl, lca_reward, lpp, lpptps, lpppps): every scored pair (a
-- missed or ghost detection: a NULL side), as hiersql_scoring checks and scores them.
SELECT * FROM scoring.scoring_instance

-- name: hiersql_check
-- (table_name, column_name, row_key, value, rule, action, message): every problem of the input tables, the
-- rows the measures refuse (action 'error') or clean ('stripped', 'collapsed', 'dropped').
SELECT * FROM input_rules.problems
