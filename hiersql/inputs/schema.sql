-- hiersql storage schema (DuckDB).
-- Keys are not declared: the loaders (hiersql.inputs.store) deduplicate and check every key (edges, nodes, instances,
-- (instance_id, label), (system, instance_id, label), systems) before inserting, and DuckDB's index
-- maintenance at commit would double the loading time.
-- The taxonomy: edges as given (plus the edges from a virtual root, if one was added), one row per node,
-- and the reflexive-transitive closure with shortest directed distances.
CREATE TABLE IF NOT EXISTS edges (
    parent VARCHAR NOT NULL,
    child VARCHAR NOT NULL,
    weight DOUBLE                 -- optional edge weight (scoring trees); NULL when not given
);

CREATE TABLE IF NOT EXISTS nodes (
    label VARCHAR NOT NULL,
    depth INTEGER NOT NULL,       -- shortest distance from the root
    is_root BOOLEAN NOT NULL,     -- exactly one node is the root (real or virtual)
    is_leaf BOOLEAN NOT NULL,
    is_virtual BOOLEAN NOT NULL,  -- the virtual root added above several parentless nodes
    position INTEGER NOT NULL     -- order of first appearance in the taxonomy input
);

CREATE TABLE IF NOT EXISTS closure (
    ancestor VARCHAR NOT NULL,
    descendant VARCHAR NOT NULL,
    distance INTEGER NOT NULL     -- length of the shortest directed path ancestor -> descendant; 0 = itself
);

-- The same closure on node positions (nodes.position), for the integer joins of the DuckDB and Spark variants
-- of the set-based, pair-based and LCA queries (hiersql/inputs/closure.sql). PostgreSQL receives only `closure`; a Spark
-- engine that reads a closure of its own computes this table from it (node_closure_from_names).
CREATE TABLE IF NOT EXISTS node_closure (
    ancestor INTEGER NOT NULL,
    descendant INTEGER NOT NULL,
    distance INTEGER NOT NULL
);

-- The evaluated instances: every instance of the truth source, also those with an empty true set.
CREATE TABLE IF NOT EXISTS instances (
    instance_id VARCHAR NOT NULL
);

CREATE TABLE IF NOT EXISTS truth (
    instance_id VARCHAR NOT NULL,
    label VARCHAR NOT NULL,
    rank INTEGER NOT NULL         -- position of the label within its instance, as read (1-based)
);

CREATE TABLE IF NOT EXISTS predictions (
    system VARCHAR NOT NULL,
    instance_id VARCHAR NOT NULL,
    label VARCHAR NOT NULL,
    rank INTEGER NOT NULL,        -- position of the label within its instance, as read (1-based)
    score DOUBLE                  -- optional confidence
);

-- The systems evaluated, also those that predicted nothing at all.
CREATE TABLE IF NOT EXISTS systems (
    system VARCHAR NOT NULL,
    source VARCHAR
);

-- Counts of (truth, prediction) pairs for the scoring-tree measures (Lanus et al.): object detection input
-- where either side may be empty (NULL truth = ghost detection, NULL prediction = missed detection).
CREATE TABLE IF NOT EXISTS pair_counts (
    system VARCHAR NOT NULL,
    truth VARCHAR,
    prediction VARCHAR,
    n DOUBLE NOT NULL
);

-- Results of evaluation runs; written in one transaction per run.
CREATE TABLE IF NOT EXISTS results (
    run_id VARCHAR NOT NULL,
    dataset VARCHAR,
    system VARCHAR NOT NULL,
    metric VARCHAR NOT NULL,
    average VARCHAR,              -- 'micro', 'macro' or NULL where it does not apply
    value DOUBLE,
    created_at TIMESTAMP DEFAULT current_timestamp
);
