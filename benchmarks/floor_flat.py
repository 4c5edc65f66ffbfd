"""The floor of the flat family: the numbers of ``hiersql evaluate --metrics flat --format csv`` (zero_division 0)
from the same long Parquet tables, written by hand in plain DuckDB (no checks, no plan).

Y, Z: the true and predicted label sets of an instance; N the instances of the truth; L, per system, the labels in
the truth or in that system's predictions (Krstinić et al. 2020, §2.1; SPEC §7). Example-based, the mean over the N
instances: accuracy |Y ∩ Z| / |Y ∪ Z|, precision |Y ∩ Z| / |Z|, recall |Y ∩ Z| / |Y|, F1 2|Y ∩ Z| / (|Y| + |Z|),
Hamming loss |Y Δ Z| / |L|, subset accuracy [Y = Z]. Label-based, per class of L: TP, FP, FN, TN = N − TP − FP − FN;
micro pools the counts, macro averages the per-class values. A ratio with a zero denominator is 0.

    .venv/bin/python benchmarks/floor_flat.py benchmarks/data/dag50k/truth.parquet \\
        benchmarks/data/dag50k/predictions.parquet

Prints CSV rows ``system,metric,average,value`` as ``hiersql evaluate`` does (each value to 17 significant digits).
"""

from __future__ import annotations

import sys

import duckdb

QUERY = """
WITH
truth AS (SELECT DISTINCT instance_id, label FROM read_parquet($truth)),
pred AS (SELECT DISTINCT system, instance_id, label FROM read_parquet($pred)),
systems AS (SELECT DISTINCT system FROM pred),
n AS (SELECT count(DISTINCT instance_id) AS n FROM read_parquet($truth)),
universe AS (SELECT s.system, t.label FROM systems s, (SELECT DISTINCT label FROM truth) t
             UNION SELECT system, label FROM pred),
sizes AS (SELECT system, count(*) AS l FROM universe GROUP BY system),
both_ AS (SELECT p.system, p.instance_id, p.label FROM pred p JOIN truth t USING (instance_id, label)),
per AS (SELECT s.system, i.instance_id, coalesce(y.n, 0) AS y, coalesce(z.n, 0) AS z, coalesce(b.n, 0) AS b
        FROM systems s CROSS JOIN (SELECT DISTINCT instance_id FROM read_parquet($truth)) i
        LEFT JOIN (SELECT instance_id, count(*) AS n FROM truth GROUP BY ALL) y USING (instance_id)
        LEFT JOIN (SELECT system, instance_id, count(*) AS n FROM pred GROUP BY ALL) z USING (system, instance_id)
        LEFT JOIN (SELECT system, instance_id, count(*) AS n FROM both_ GROUP BY ALL) b USING (system, instance_id)),
example AS (SELECT system,
                   avg(CASE WHEN y + z - b > 0 THEN b / (y + z - b) ELSE 0 END) AS accuracy,
                   avg(CASE WHEN z > 0 THEN b / z ELSE 0 END) AS precision,
                   avg(CASE WHEN y > 0 THEN b / y ELSE 0 END) AS recall,
                   avg(CASE WHEN y + z > 0 THEN 2 * b / (y + z) ELSE 0 END) AS f1,
                   avg((y + z - 2 * b) / l) AS hamming,
                   avg(CASE WHEN y = b AND z = b THEN 1 ELSE 0 END) AS subset
            FROM per JOIN sizes USING (system) GROUP BY system),
classes AS (SELECT u.system, u.label, coalesce(tp.n, 0) AS tp, coalesce(pp.n, 0) - coalesce(tp.n, 0) AS fp,
                   coalesce(tt.n, 0) - coalesce(tp.n, 0) AS fn
            FROM universe u
            LEFT JOIN (SELECT system, label, count(*) AS n FROM both_ GROUP BY ALL) tp USING (system, label)
            LEFT JOIN (SELECT system, label, count(*) AS n FROM pred GROUP BY ALL) pp USING (system, label)
            LEFT JOIN (SELECT label, count(*) AS n FROM truth GROUP BY ALL) tt USING (label)),
label AS (SELECT system,
                 sum(tp) AS tp, sum(fp) AS fp, sum(fn) AS fn, count(*) * any_value(n.n) AS cells,
                 avg(CASE WHEN tp + fp > 0 THEN tp / (tp + fp) ELSE 0 END) AS precision,
                 avg(CASE WHEN tp + fn > 0 THEN tp / (tp + fn) ELSE 0 END) AS recall,
                 avg(CASE WHEN 2 * tp + fp + fn > 0 THEN 2 * tp / (2 * tp + fp + fn) ELSE 0 END) AS f1,
                 avg((n.n - fp - fn) / n.n) AS accuracy
          FROM classes, n GROUP BY system)
SELECT system, 'example_accuracy', '', accuracy FROM example
UNION ALL SELECT system, 'example_precision', '', precision FROM example
UNION ALL SELECT system, 'example_recall', '', recall FROM example
UNION ALL SELECT system, 'example_f1', '', f1 FROM example
UNION ALL SELECT system, 'hamming_loss', '', hamming FROM example
UNION ALL SELECT system, 'subset_accuracy', '', subset FROM example
UNION ALL SELECT system, 'label_precision', 'micro', CASE WHEN tp + fp > 0 THEN tp / (tp + fp) ELSE 0 END FROM label
UNION ALL SELECT system, 'label_recall', 'micro', CASE WHEN tp + fn > 0 THEN tp / (tp + fn) ELSE 0 END FROM label
UNION ALL SELECT system, 'label_f1', 'micro', CASE WHEN 2 * tp + fp + fn > 0 THEN 2 * tp / (2 * tp + fp + fn)
                                                   ELSE 0 END FROM label
UNION ALL SELECT system, 'label_accuracy', 'micro', (cells - fp - fn) / cells FROM label
UNION ALL SELECT system, 'label_precision', 'macro', precision FROM label
UNION ALL SELECT system, 'label_recall', 'macro', recall FROM label
UNION ALL SELECT system, 'label_f1', 'macro', f1 FROM label
UNION ALL SELECT system, 'label_accuracy', 'macro', accuracy FROM label
ORDER BY 1, 2, 3
"""


def main(truth: str, pred: str) -> None:
    rows = duckdb.connect().execute(QUERY, {"truth": truth, "pred": pred}).fetchall()
    print("system,metric,average,value")
    for system, metric, average, value in rows:
        print(f"{system},{metric},{average},{value:.17g}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
