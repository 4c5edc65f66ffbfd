#!/usr/bin/env bash
# A/B of `hiersql evaluate` per measure family on GermEval 2019 subtask B (19 systems), two source trees run
# alternately (the machine is shared: only ratios of alternated runs mean something).
#   bash benchmarks/ab_families.sh NEW_TREE OLD_TREE [RUNS]
# Needs hyperfine (Debian: apt-get install hyperfine); uses .venv/bin/python of the current folder.
set -euo pipefail
new=$(cd "$1" && pwd); old=$(cd "$2" && pwd); runs=${3:-5}
py=$(pwd)/.venv/bin/python
data=$(cd "$(dirname "$0")/../../shared/data/canonical" && pwd)
args="evaluate --taxonomy $data/taxonomy.tsv --truth $data/truth_b.tsv --pred '$data/pred_b/*.tsv' --format csv"
for metrics in hp,hr,hf,sdl example_f1,label_f1,hamming_loss hcm gie,mgia lca_p,lca_r,lca_f pl; do
    hyperfine --runs "$runs" --warmup 1 -N \
        -n "new $metrics" "env PYTHONPATH=$new $py -m hiersql $args --metrics $metrics" \
        -n "old $metrics" "env PYTHONPATH=$old $py -m hiersql $args --metrics $metrics"
done
