#!/usr/bin/env bash
# The 2-core peer table of docs/benchmarks.rst (issue 38 acceptance 2): LightGBM, XGBoost and
# treeboost side by side with ../shared/bench/peers.py, 500 trees, 31 leaves, on the three
# tasks at two threads (two rounds, median) and one thread (one round). About 12 minutes on
# the 2-core development machine; run it on a quiet machine (peers.py waits for idle cores
# and marks a fit that overlapped other work).
#     bash benchmarks/bench_peers_local.sh [OUT_DIR]     # default benchmarks/results/peers_local
#     python ../shared/bench/peers.py --show OUT_DIR/*.json --markdown
set -eu
cd "$(dirname "$0")/.."
out=${1:-benchmarks/results/peers_local}
mkdir -p "$out"
py=${PYTHON:-.venv/bin/python}
peers=../shared/bench/peers.py
libs=lightgbm,xgboost,treeboost
stamp=$(date -u +%Y%m%dT%H%M)
run() {  # threads rounds task args...
    local t=$1 r=$2 task=$3; shift 3
    "$py" "$peers" --libs "$libs" --iters 500 --repeat 1 --rounds "$r" --threads "$t" \
        --no-cache-probe --task "$task" "$@" --out "$out/${stamp}_${task}_t$t.json"
}
for t in 2 1; do
    r=$([ "$t" = 2 ] && echo 2 || echo 1)
    run "$t" "$r" binary --rows 1000000 --features 28
    run "$t" "$r" regression --rows 500000 --features 20
    run "$t" "$r" multiclass --classes 5 --rows 100000 --features 20
done
"$py" "$peers" --show "$out"/"${stamp}"_*.json --markdown
