-- Transitive closure of the taxonomy: (ancestor, descendant, distance), reflexive, shortest distances.
-- Reads: nodes(label), edges(parent, child). Works for trees and DAGs of any depth: UNION removes rows
-- already found, so the walk stops after the longest shortest path; min() keeps the shortest distance.
-- $max_depth (NULL = unbounded) stops the walk after that many edges: a partial closure is all that
-- HEMKit mode reads (ancestors up to max_distance + 1 edges), far cheaper on a deep DAG such as MeSH.
WITH RECURSIVE walk(ancestor, descendant, distance) AS (
    SELECT label, label, 0 FROM nodes
    UNION
    SELECT e.parent, w.descendant, w.distance + 1
    FROM walk AS w
    JOIN edges AS e ON e.child = w.ancestor
    WHERE $max_depth IS NULL OR w.distance < $max_depth
)
SELECT ancestor, descendant, min(distance) AS distance
FROM walk
GROUP BY ancestor, descendant
