-- Calibration of per-node scores, per level of the taxonomy (docs/scored_outputs.md). Every scored
-- (instance, node) pair is a binary forecast: s = its score, y = 1 when the node is in Yaug (the true labels and
-- their ancestors), else 0. Per level k (the nodes at depth k; level 0 pools every level) over its N pairs:
--   Brier = (1/N) Σ (s − y)²                                        (Brier 1950)
--   log loss = −(1/N) Σ [y ln c(s) + (1 − y) ln c(1 − s)]            c clips to [ε, 1 − ε], ε = 2^-52, as
--                                                                     scikit-learn's log_loss
--   ECE = Σ_b (n_b / N) |ȳ_b − s̄_b|                                  (Naeini et al. 2015; Guo et al. 2017)
-- over $n_bins bins (>= 2), equal width (strategy 'uniform': inner edges j · (1/$n_bins)) or equal mass
-- ('quantile': inner edges the j/$n_bins quantiles of the level's scores, interpolated linearly between order
-- statistics as numpy's percentile); a score falls in bin b = the number of inner edges below it, as
-- scikit-learn's calibration_curve (searchsorted on the inner edges).
-- Reads: predictions (score), truth, closure, nodes.
-- Sums of floats add their values in key order (sum(x ORDER BY key), as the measures' means): the digits do not
-- depend on the order in which an engine's threads add rows, and every engine prints DuckDB's.

-- name: level_forecasts
-- (system, instance_id, label, level, score, y): every scored prediction with its outcome, once under its
-- level and once under level 0.
WITH pairs AS (
    SELECT
        p.system, p.instance_id, p.label, n.depth AS level, p.score,
        CASE WHEN t.label IS NULL THEN 0 ELSE 1 END AS y
    FROM predictions AS p
    JOIN nodes AS n ON n.label = p.label
    LEFT JOIN (
        SELECT DISTINCT t.instance_id, c.ancestor AS label
        FROM truth AS t
        JOIN closure AS c ON c.descendant = t.label
    ) AS t ON t.instance_id = p.instance_id AND t.label = p.label
    WHERE p.score IS NOT NULL
)
SELECT system, instance_id, label, level, score, y FROM pairs
UNION ALL
SELECT system, instance_id, label, 0, score, y FROM pairs

-- name: inner_bins
-- (bin): 1 .. $n_bins - 1, the inner edges.
WITH RECURSIVE j (bin) AS (
    SELECT 1
    UNION ALL
    SELECT bin + 1 FROM j WHERE bin < $n_bins - 1
)
SELECT bin FROM j

-- name: bin_edges
-- (system, level, strategy, bin, edge): the inner edges of both strategies for every level.
WITH ranked AS (
    SELECT system, level, score,
           row_number() OVER (PARTITION BY system, level ORDER BY score) - 1 AS k,
           count(*) OVER (PARTITION BY system, level) AS n
    FROM level_forecasts
),
positions AS (
    SELECT system, level, bin, position, CAST(floor(position) AS BIGINT) AS lo, CAST(ceil(position) AS BIGINT) AS hi
    FROM (
        SELECT l.system, l.level, b.bin, b.bin * (CAST(1 AS DOUBLE) / $n_bins) * (l.n - 1) AS position
        FROM (SELECT DISTINCT system, level, n FROM ranked) AS l
        CROSS JOIN inner_bins AS b
    ) AS x
),
order_statistics AS (
    -- only the ranks some edge interpolates between
    SELECT r.system, r.level, r.k, r.score
    FROM ranked AS r
    JOIN (SELECT system, level, lo AS k FROM positions UNION SELECT system, level, hi FROM positions) AS w
        ON w.system = r.system AND w.level = r.level AND w.k = r.k
),
quantiles AS (
    SELECT p.system, p.level, p.bin, p.position - p.lo AS t, a.score AS a, b.score AS b
    FROM positions AS p
    JOIN order_statistics AS a ON a.system = p.system AND a.level = p.level AND a.k = p.lo
    JOIN order_statistics AS b ON b.system = p.system AND b.level = p.level AND b.k = p.hi
)
SELECT l.system, l.level, 'uniform' AS strategy, b.bin, b.bin * (CAST(1 AS DOUBLE) / $n_bins) AS edge
FROM (SELECT DISTINCT system, level FROM level_forecasts) AS l
CROSS JOIN inner_bins AS b
UNION ALL
SELECT system, level, 'quantile', bin,
       CASE WHEN t >= 0.5 THEN b - (b - a) * (1 - t) ELSE a + (b - a) * t END
FROM quantiles

-- name: reliability
-- (system, level, strategy, bin, n, mean_score, fraction_positive): the reliability diagram, non-empty bins.
WITH binned AS (
    SELECT f.system, f.level, s.strategy, f.instance_id, f.label, f.score, f.y, count(e.bin) AS bin
    FROM level_forecasts AS f
    CROSS JOIN (SELECT 'uniform' AS strategy UNION ALL SELECT 'quantile') AS s
    LEFT JOIN bin_edges AS e
        ON e.system = f.system AND e.level = f.level AND e.strategy = s.strategy AND e.edge < f.score
    GROUP BY f.system, f.level, s.strategy, f.instance_id, f.label, f.score, f.y
)
SELECT system, level, strategy, bin, count(*) AS n,
       sum(score ORDER BY instance_id, label) / count(*) AS mean_score, avg(1.0 * y) AS fraction_positive
FROM binned
GROUP BY system, level, strategy, bin

-- name: calibration_summary
-- (system, level, n, brier, log_loss, ece_uniform, ece_quantile)
WITH scores AS (
    SELECT
        system, level, count(*) AS n,
        sum((score - y) * (score - y) ORDER BY instance_id, label) / count(*) AS brier,
        -sum(CASE WHEN y = 1 THEN ln(least(greatest(score, $eps), 1 - $eps))
                  ELSE ln(least(greatest(1 - score, $eps), 1 - $eps)) END ORDER BY instance_id, label)
            / count(*) AS log_loss
    FROM level_forecasts
    GROUP BY system, level
),
ece AS (
    SELECT r.system, r.level, r.strategy, sum(r.n * abs(r.fraction_positive - r.mean_score) ORDER BY r.bin) AS weighted
    FROM reliability AS r
    GROUP BY r.system, r.level, r.strategy
)
SELECT
    s.system, s.level, s.n, s.brier, s.log_loss,
    u.weighted / s.n AS ece_uniform,
    q.weighted / s.n AS ece_quantile
FROM scores AS s
JOIN ece AS u ON u.system = s.system AND u.level = s.level AND u.strategy = 'uniform'
JOIN ece AS q ON q.system = s.system AND q.level = s.level AND q.strategy = 'quantile'
