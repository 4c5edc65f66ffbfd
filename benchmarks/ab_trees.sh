#!/bin/bash
# Alternated A/B of `hiersql evaluate` between two work trees on GermEval 2019 subtask B (19 systems):
#   bash benchmarks/ab_trees.sh OLD_TREE NEW_TREE METRICS RUNS
# Each run prints "TREE METRICS wall=... cpu=user+sys" (/usr/bin/time); at the end the two trees' CSV outputs
# are compared byte for byte. Run from anywhere; the data are read from ../shared/data/canonical of NEW_TREE.
set -e
OLD=$(cd "$1" && pwd); NEW=$(cd "$2" && pwd); METRICS=$3; RUNS=$4
PYTHON=${PYTHON:-python}
DATA=$NEW/../shared/data/canonical
OUT=$(mktemp -d)
for _ in $(seq "$RUNS"); do
  for tree in "$OLD" "$NEW"; do
    name=$(basename "$tree")
    (cd "$tree" && PYTHONPATH=$tree /usr/bin/time -f "$name $METRICS wall=%e cpu=%U+%S" "$PYTHON" -m hiersql evaluate \
      --taxonomy "$DATA/taxonomy.tsv" --truth "$DATA/truth_b.tsv" --pred "$DATA/pred_b/*.tsv" --metrics "$METRICS" \
      --format csv > "$OUT/$name.csv" 2> "$OUT/$name.err") || { cat "$OUT/$name.err"; exit 1; }
    tail -1 "$OUT/$name.err"
  done
done
cmp "$OUT/$(basename "$OLD").csv" "$OUT/$(basename "$NEW").csv" && echo "same output: $METRICS"
