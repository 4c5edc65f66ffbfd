-- Label readers: each turns the raw lines of a text file into (instance_id, label, line) rows and the list
-- of instances. Lines come from `raw_lines(line, raw)`: one row per physical line, blank lines kept as NULL
-- (see hiersql.store.Store._raw_lines).

-- name: long_rows
-- `instance_id<TAB>label[<TAB>score]`, one row per label. A blank line is skipped.
SELECT
    line,
    raw,
    len(fields) AS n_fields,
    trim(fields[1]) AS instance_id,
    trim(fields[2]) AS label,
    CASE WHEN len(fields) >= 3 THEN trim(fields[3]) END AS score_text,
    1 AS pos
FROM (SELECT line, raw, string_split(rtrim(raw, chr(13)), chr(9)) AS fields FROM raw_lines)
WHERE raw IS NOT NULL AND trim(raw) <> ''

-- name: lines_rows
-- HEMKit: one line per instance, labels separated by whitespace; the line number is the instance id.
-- A blank line is an instance with no label.
SELECT CAST(line AS VARCHAR) AS instance_id, line, pos, trim(label) AS label
FROM (
    SELECT
        line,
        unnest(regexp_split_to_array(trim(coalesce(raw, '')), '\s+')) AS label,
        generate_subscripts(regexp_split_to_array(trim(coalesce(raw, '')), '\s+'), 1) AS pos
    FROM raw_lines
)
WHERE trim(label) <> ''

-- name: lines_instances
SELECT CAST(line AS VARCHAR) AS instance_id, line FROM raw_lines

-- name: germeval_lines
-- GermEval 2019 submission or gold file: a `subtask_a` line, `id<TAB>label<TAB>...` lines, a `subtask_b`
-- line and the same again. `section` is the header above each line; empty fields are not labels.
SELECT line, raw, section, trim(fields[1]) AS instance_id, fields
FROM (
    SELECT
        line,
        raw,
        string_split(rtrim(raw, chr(13)), chr(9)) AS fields,
        max(CASE WHEN trim(raw) IN ('subtask_a', 'subtask_b') THEN trim(raw) END)
            OVER (ORDER BY line ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS section
    FROM raw_lines
)
WHERE raw IS NOT NULL AND trim(raw) <> '' AND trim(raw) NOT IN ('subtask_a', 'subtask_b')

-- name: germeval_rows
SELECT instance_id, line, pos, trim(label) AS label
FROM (
    SELECT instance_id, line, unnest(fields[2:]) AS label, generate_subscripts(fields[2:], 1) AS pos
    FROM germeval_lines
    WHERE section = $section
)
WHERE trim(label) <> ''
