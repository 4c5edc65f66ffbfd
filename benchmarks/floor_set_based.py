"""The floor of set-based hP/hR/hF: the same numbers as ``hiersql evaluate --metrics hp,hr,hf --average
micro,macro --format csv`` from the same files, written by hand in plain DuckDB (no checks, no plan).

hP = Σ|T̂ᵢ ∩ P̂ᵢ| / Σ|P̂ᵢ| (micro) or the mean of the per-instance ratios (macro), T̂ and P̂ the label sets
augmented with their ancestors, the root left out (Kiritchenko et al. 2005; SPEC §2); hF = 2·hP·hR/(hP + hR).
The root is the one parentless node, or a virtual one above several.

    .venv/bin/python benchmarks/floor_set_based.py benchmarks/data/mesh/taxonomy.tsv \\
        benchmarks/data/mesh/truth.tsv benchmarks/data/mesh/pred.tsv

The taxonomy may be ``parent child`` separated by a tab or spaces (MeSH's file). Prints CSV rows
``metric,average,value`` (each value to 17 significant digits).
"""

from __future__ import annotations

import sys

import duckdb

COLUMNS = "{'column0': 'VARCHAR', 'column1': 'VARCHAR'}"
QUERY = """
WITH RECURSIVE
edges AS (SELECT DISTINCT column0::VARCHAR AS parent, column1::VARCHAR AS child
          FROM read_csv($taxonomy, delim = $delim, header = false, columns = COLUMNS_)),
roots AS (SELECT parent AS node FROM edges EXCEPT SELECT child FROM edges),
closure(ancestor, descendant) AS (
    SELECT node, node FROM (SELECT parent AS node FROM edges UNION SELECT child FROM edges)
    UNION
    SELECT e.parent, c.descendant FROM edges e JOIN closure c ON c.ancestor = e.child),
truth AS (SELECT DISTINCT column0::VARCHAR AS instance_id, column1::VARCHAR AS label
          FROM read_csv($truth, delim = '\t', header = false, columns = COLUMNS_)),
pred AS (SELECT DISTINCT column0::VARCHAR AS instance_id, column1::VARCHAR AS label
         FROM read_csv($pred, delim = '\t', header = false, columns = COLUMNS_)),
kept AS (SELECT * FROM closure WHERE (SELECT count(*) FROM roots) > 1 OR ancestor NOT IN (SELECT node FROM roots)),
t AS (SELECT DISTINCT instance_id, ancestor FROM truth JOIN kept ON descendant = label),
p AS (SELECT DISTINCT instance_id, ancestor FROM pred JOIN kept ON descendant = label),
shared AS (SELECT instance_id, count(*) AS n FROM t JOIN p USING (instance_id, ancestor) GROUP BY instance_id),
per AS (SELECT i.instance_id, coalesce(nt.n, 0) AS n_true, coalesce(np.n, 0) AS n_pred, coalesce(nb.n, 0) AS n_both
        FROM (SELECT DISTINCT instance_id FROM truth) i
        LEFT JOIN (SELECT instance_id, count(*) AS n FROM t GROUP BY instance_id) nt USING (instance_id)
        LEFT JOIN (SELECT instance_id, count(*) AS n FROM p GROUP BY instance_id) np USING (instance_id)
        LEFT JOIN shared nb USING (instance_id)),
micro AS (SELECT sum(n_both) / sum(n_pred) AS hp, sum(n_both) / sum(n_true) AS hr FROM per),
macro AS (SELECT avg(CASE WHEN n_pred > 0 THEN n_both / n_pred ELSE 0 END) AS hp,
                 avg(CASE WHEN n_true > 0 THEN n_both / n_true ELSE 0 END) AS hr,
                 avg(CASE WHEN n_pred + n_true > 0 THEN 2 * n_both / (n_pred + n_true) ELSE 0 END) AS hf FROM per)
SELECT 'hierarchical_precision', 'micro', hp FROM micro
UNION ALL SELECT 'hierarchical_recall', 'micro', hr FROM micro
UNION ALL SELECT 'hierarchical_f1', 'micro', 2 * hp * hr / (hp + hr) FROM micro
UNION ALL SELECT 'hierarchical_precision', 'macro', hp FROM macro
UNION ALL SELECT 'hierarchical_recall', 'macro', hr FROM macro
UNION ALL SELECT 'hierarchical_f1', 'macro', hf FROM macro
""".replace("COLUMNS_", COLUMNS)


def main(taxonomy: str, truth: str, pred: str) -> None:
    with open(taxonomy) as file:
        delim = "\t" if "\t" in file.readline() else " "
    rows = duckdb.connect().execute(QUERY, {"taxonomy": taxonomy, "delim": delim, "truth": truth,
                                            "pred": pred}).fetchall()
    for metric, average, value in rows:
        print(f"{metric},{average},{value:.17g}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
