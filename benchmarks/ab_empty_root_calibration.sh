#!/usr/bin/env bash
# Issue 19 leftovers, alternated runs (the machine is shared: only ratios of alternated runs mean something):
#  1. `hiersql evaluate --metrics gie,mgia,all_pairs_error` on GermEval 2019 subtask B (19 systems), NEW_TREE
#     against OLD_TREE (the pair-based SQL gained the empty_prediction parameter);
#  2. `--metrics all_pairs_error` with and without `--empty-prediction root` (NEW_TREE);
#  3. `hiersql breakdown --by calibration` on the transposon data (9,006 instances, RFSB and TopDown marginal
#     probabilities: 2 x 162,108 scored rows) with and without `--html` (the reliability diagrams).
#   bash benchmarks/ab_empty_root_calibration.sh NEW_TREE OLD_TREE [ROUNDS]
# Prints one line per run: "<case> <wall s> <user CPU s> <max RSS kB>" (/usr/bin/time). Uses .venv/bin/python of
# the current folder; writes the scored transposon files to benchmarks/data/transposon_scores/.
set -euo pipefail
new=$(cd "$1" && pwd); old=$(cd "$2" && pwd); rounds=${3:-4}
py=$(pwd)/.venv/bin/python
data=$(cd "$(dirname "$0")/../../shared/data" && pwd)
scores=$(dirname "$0")/data/transposon_scores
mkdir -p "$scores"
for model in RFSB TopDown; do
    [ -f "$scores/$model.tsv" ] || PYTHONPATH=$new $py -c "import sys; from hiersql.analyses import curves; \
curves.read_transposon_scores(sys.argv[1]).to_csv(sys.argv[2], sep='\t', header=False, index=False)" \
        "$data/transposon/predictions_$model.txt" "$scores/$model.tsv"
done
c=$data/canonical
germeval="evaluate --taxonomy $c/taxonomy.tsv --truth $c/truth_b.tsv --pred $c/pred_b/*.tsv --format csv"
transposon="breakdown --taxonomy $c/taxonomy_transposon.tsv --truth $c/truth_transposon.tsv \
--pred RFSB=$scores/RFSB.tsv --pred TopDown=$scores/TopDown.tsv --by calibration --format csv"
html=$(mktemp --suffix=.html)
set -f  # the --pred glob goes to hiersql as it is
run() {  # run CASE TREE ARGS...
    local name=$1 tree=$2; shift 2
    env PYTHONPATH="$tree" /usr/bin/time -f "$name %e %U %M" "$py" -m hiersql "$@" 2>&1 >/dev/null | tail -1
}
for _ in $(seq "$rounds"); do
    run pair_new "$new" $germeval --metrics gie,mgia,all_pairs_error
    run pair_old "$old" $germeval --metrics gie,mgia,all_pairs_error
    run all_pairs_error "$new" $germeval --metrics all_pairs_error
    run all_pairs_root "$new" $germeval --metrics all_pairs_error --empty-prediction root
    run calibration "$new" $transposon
    run calibration_html "$new" $transposon --html "$html"
done
rm -f "$html"
