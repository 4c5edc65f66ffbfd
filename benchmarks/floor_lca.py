"""The floor of the LCA family with the extended graphs: the numbers of ``hiersql evaluate --metrics lca
--lca-graph extended --format csv`` (no maximum distance, the root not counted, zero_division 0) from the same long
Parquet tables, written by hand in plain DuckDB (no checks, no plan). The extended graphs are the one selection of
the family that is SQL alone: greedy, optimal and HEMKit's graphs choose among options in Python steps.

Kosmopoulos et al. 2015, §2.4.2, Fig. 9 (docs/lca.md). Per problem (a system, an instance of the truth), T and P
the true and predicted sets:

1. a label with a proper descendant in its own set is dropped; a label left in both sets is shared;
2. a label x that is not shared meets each label z of the other set at each common ancestor a, at the cost
   up(x, a) + up(z, a) (up: the shortest path down from a); its options are its meetings of least cost;
3. an option (a, z) of x puts every shortest path x → a into x's graph and every shortest path z → a into the
   other graph (the nodes v with up(x, v) + up(v, a) = up(x, a)); each label is in its own graph;
4. PLCA = |Gt ∩ Gp| / |Gp|, RLCA = |Gt ∩ Gp| / |Gt|, FLCA = 2|Gt ∩ Gp| / (|Gt| + |Gp|), the root left out of
   the three counts; micro from the pooled counts (F from the pooled P and R), macro the mean over the problems.

    .venv/bin/python benchmarks/floor_lca.py D/taxonomy.tsv D/truth.parquet D/predictions.parquet [EVALUATE_CSV]

Prints CSV rows ``system,metric,average,value`` in ``hiersql evaluate``'s order (each value as Python's repr). With
a fourth argument, a CSV of ``hiersql evaluate``, it checks that the rows are the same to 1e-9 (exit 1 if not).
"""

from __future__ import annotations

import sys

from floor_pair_based import INPUTS, same_rows, stored

# The tables, in order (each stored, so that DuckDB plans each step on its own); the last one is read out.
TABLES = {
    **INPUTS,
    "problems": """SELECT system, instance_id, row_number() OVER (ORDER BY system, instance_id) AS problem
                   FROM (SELECT DISTINCT system FROM pred), (SELECT DISTINCT instance_id FROM truth)""",
    "sides": """SELECT problem, 't' AS side, label FROM problems JOIN truth USING (instance_id)
                UNION ALL SELECT problem, 'p', label FROM problems JOIN pred USING (system, instance_id)""",
    # 1. the labels with no proper descendant in their own set; shared: left in both sets
    "kept": """SELECT problem, side, label FROM sides
               EXCEPT
               SELECT s.problem, s.side, s.label
               FROM sides s JOIN sides o ON o.problem = s.problem AND o.side = s.side AND o.label <> s.label
               JOIN closure c ON c.ancestor = s.label AND c.descendant = o.label""",
    "labels": """SELECT k.*, o.label IS NOT NULL AS shared FROM kept k
                 LEFT JOIN kept o ON o.problem = k.problem AND o.side <> k.side AND o.label = k.label""",
    # 2. each distinct pair of labels meets at its common ancestors of least cost
    "pair_options": """SELECT u, v, cu.ancestor AS lca, cu.distance AS up_u, cv.distance AS up_v
                       FROM (SELECT DISTINCT x.label AS u, z.label AS v
                             FROM labels x JOIN kept z ON z.problem = x.problem AND z.side <> x.side
                             WHERE NOT x.shared)
                       JOIN closure cu ON cu.descendant = u
                       JOIN closure cv ON cv.descendant = v AND cv.ancestor = cu.ancestor
                       QUALIFY up_u + up_v = min(up_u + up_v) OVER (PARTITION BY u, v)""",
    "options": """SELECT x.problem, x.side, x.label, o.v AS partner, o.lca, o.up_u, o.up_v
                  FROM labels x JOIN kept z ON z.problem = x.problem AND z.side <> x.side
                  JOIN pair_options o ON o.u = x.label AND o.v = z.label
                  WHERE NOT x.shared
                  QUALIFY o.up_u + o.up_v = min(o.up_u + o.up_v) OVER (PARTITION BY x.problem, x.side, x.label)""",
    # 3. every shortest path of each option, on the side it belongs to
    "path_ends": """SELECT problem, side, label AS node, lca, up_u AS up FROM options
                    UNION SELECT problem, CASE side WHEN 't' THEN 'p' ELSE 't' END, partner, lca, up_v FROM options""",
    "path_nodes": """SELECT e.node, e.lca, e.up, cx.ancestor AS v
                     FROM (SELECT DISTINCT node, lca, up FROM path_ends) e
                     JOIN closure cx ON cx.descendant = e.node AND cx.distance <= e.up
                     JOIN closure ca ON ca.descendant = cx.ancestor AND ca.ancestor = e.lca
                                    AND cx.distance + ca.distance = e.up""",
    # 4. the graphs' nodes but the root, counted per problem
    "counts": """WITH graphs AS (SELECT e.problem, e.side, n.v FROM path_ends e JOIN path_nodes n USING (node, lca, up)
                                 UNION SELECT problem, side, label FROM kept),
                 per_node AS (SELECT problem, v, max((side = 't')::INT) AS in_true, max((side = 'p')::INT) AS in_pred
                              FROM graphs
                              WHERE v NOT IN (SELECT parent FROM edges EXCEPT SELECT child FROM edges)
                              GROUP BY ALL)
                 SELECT system, coalesce(sum(in_true), 0) AS t, coalesce(sum(in_pred), 0) AS p,
                        coalesce(sum(in_true * in_pred), 0) AS b
                 FROM problems LEFT JOIN per_node USING (problem) GROUP BY system, problem""",
    "rows": """WITH macro AS (SELECT system, avg(CASE WHEN p > 0 THEN b / p ELSE 0 END) AS precision,
                                     avg(CASE WHEN t > 0 THEN b / t ELSE 0 END) AS recall,
                                     avg(CASE WHEN t + p > 0 THEN 2 * b / (t + p) ELSE 0 END) AS f1
                              FROM counts GROUP BY system),
               micro AS (SELECT system, CASE WHEN sum(p) > 0 THEN sum(b) / sum(p) ELSE 0 END AS precision,
                                CASE WHEN sum(t) > 0 THEN sum(b) / sum(t) ELSE 0 END AS recall
                         FROM counts GROUP BY system)
               SELECT system, 1, 'lca_precision', 'macro', precision FROM macro
               UNION ALL SELECT system, 2, 'lca_precision', 'micro', precision FROM micro
               UNION ALL SELECT system, 3, 'lca_recall', 'macro', recall FROM macro
               UNION ALL SELECT system, 4, 'lca_recall', 'micro', recall FROM micro
               UNION ALL SELECT system, 5, 'lca_f1', 'macro', f1 FROM macro
               UNION ALL SELECT system, 6, 'lca_f1', 'micro', CASE WHEN precision + recall > 0
                                           THEN 2 * precision * recall / (precision + recall) ELSE 0 END FROM micro
               ORDER BY 1, 2""",
}


def main(taxonomy: str, truth: str, pred: str, check: str | None = None) -> None:
    con = stored(dict(list(TABLES.items())[:-1]), {"taxonomy": taxonomy, "truth": truth, "pred": pred})
    rows = con.execute(TABLES["rows"]).fetchall()
    lines = ["system,metric,average,value", *(f"{s},{m},{a},{float(v)!r}" for s, _, m, a, v in rows)]
    print("\n".join(lines))
    if check:
        sys.exit(0 if same_rows(lines, check) else 1)


if __name__ == "__main__":
    main(*sys.argv[1:5])
