-- Label readers: each turns the raw lines of text files into (src, instance_id, label, line) rows and the
-- list of instances. Lines come from `raw_lines(src, line, raw)`: one row per physical line of source file
-- number `src`, lines numbered from 1 in each file, blank lines kept as NULL (see
-- hiersql.inputs.readers._raw_lines; DuckDB's CSV reader drops the CR of CRLF line ends). Every query keeps the
-- files apart by `src`, so one query reads them all. A line is blank when it holds nothing but spaces
-- (`replace(raw, ' ', '') <> ''` is several times faster than `trim(raw) <> ''` in DuckDB).

-- name: long_rows
-- `instance_id<TAB>label[<TAB>score]`, one row per label. A blank line is skipped.
SELECT
    src,
    line,
    raw,
    len(fields) AS n_fields,
    trim(fields[1]) AS instance_id,
    trim(fields[2]) AS label,
    CASE WHEN len(fields) >= 3 THEN trim(fields[3]) END AS score_text,
    1 AS pos
FROM (SELECT src, line, raw, string_split(raw, chr(9)) AS fields FROM raw_lines) AS r
WHERE replace(raw, ' ', '') <> ''

-- name: lines_rows
-- HEMKit: one line per instance, labels separated by whitespace; the line number is the instance id.
-- A blank line is an instance with no label. Lines with whitespace other than spaces are split by a regular
-- expression, the others (nearly all) by the plain split, three times faster; empty fields are no labels
-- (pos orders the labels of a line, with gaps).
SELECT src, CAST(line AS VARCHAR) AS instance_id, line, pos, label
FROM (
    SELECT src, line, unnest(fields) AS label, generate_subscripts(fields, 1) AS pos
    FROM (
        SELECT
            src,
            line,
            CASE
                WHEN contains(raw, chr(9)) OR contains(raw, chr(10)) OR contains(raw, chr(12))
                    OR contains(raw, chr(13))
                THEN regexp_split_to_array(raw, '\s+')
                ELSE string_split(raw, ' ')
            END AS fields
        FROM raw_lines
        WHERE raw IS NOT NULL
    ) AS split_lines
) AS fields
WHERE label <> ''

-- name: lines_instances
SELECT src, CAST(line AS VARCHAR) AS instance_id, line, true AS in_order FROM raw_lines

-- name: germeval_lines
-- GermEval 2019 submission or gold file: a `subtask_a` line, `id<TAB>label<TAB>...` lines, a `subtask_b`
-- line and the same again. `section` is the nearest header above each line in the same file (NULL before
-- the first header), found by joining the lines with the few header lines rather than by a running window.
-- (Cheap string functions first: `replace` finds blank lines, `trim` of the whole line runs on headers only.)
WITH text_lines AS (
    SELECT src, line, raw, first_field,
        CASE WHEN first_field IN ('subtask_a', 'subtask_b') THEN trim(raw) = first_field ELSE FALSE END AS is_header
    FROM (SELECT src, line, raw, trim(split_part(raw, chr(9), 1)) AS first_field FROM raw_lines) AS r
    WHERE replace(raw, ' ', '') <> ''
),
headers AS (
    SELECT
        src,
        line,
        first_field AS section,
        lead(line, 1, 9223372036854775807) OVER (PARTITION BY src ORDER BY line) AS next_line
    FROM text_lines
    WHERE is_header
)
SELECT t.src, t.line, t.raw, h.section, t.first_field AS instance_id
FROM text_lines AS t
LEFT JOIN headers AS h ON h.src = t.src AND t.line > h.line AND t.line < h.next_line
WHERE NOT t.is_header

-- name: germeval_rows
-- The labels of the lines of one section: every field after the id; empty fields are not labels.
SELECT src, instance_id, line, pos, label
FROM (
    SELECT src, instance_id, line, trim(unnest(fields[2:])) AS label, generate_subscripts(fields[2:], 1) AS pos
    FROM (
        SELECT src, instance_id, line, string_split(raw, chr(9)) AS fields
        FROM germeval_lines
        WHERE section = $section
    ) AS s
) AS f
WHERE label <> ''
