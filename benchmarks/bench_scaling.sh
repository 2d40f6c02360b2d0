#!/usr/bin/env bash
# Thread scaling against the peers on the accelerator machine (issue 38): the peer benchmark
# at 16 threads on its three tasks, and binary 4,000,000 x 28 at 8 and 4 threads.
#
# Here, once, from the project's root (fills .device/ with peers.py, run.sh and the peers'
# wheels for that machine's Python):
#     bash ../shared/bench/device/prepare.sh
# There, with .device/ taken along, in two calls of under 8 minutes each (the first
# compiles treeboost's kernels, ~35 s; the Numba cache in /tmp/nbc serves the second call
# only while the machine stays warm):
#     bash benchmarks/bench_scaling.sh 16      # three tasks at 16 threads, ~4 min
#     bash benchmarks/bench_scaling.sh 8,4     # binary at 8 and 4 threads, ~5 min
#     bash benchmarks/bench_scaling.sh show    # the tables (fit seconds, ratio, cores busy)
# Results go to $OUT (the device tool's folder) or .device/results/; copy them to
# benchmarks/results/ here. Each library fits once untimed (treeboost: compilation) and once
# timed; "cpu_util" is process CPU time over wall, the cores kept busy.
set -u
cd "$(dirname "$0")/.." || exit 1
[ -f .device/run.sh ] || { echo "no .device/run.sh: run bash ../shared/bench/device/prepare.sh here first" >&2; exit 2; }
out=${OUT:-.device/results}
libs=lightgbm,xgboost,treeboost
binary=(--task binary --rows 4000000 --features 28 --iters 500)
regression=(--task regression --rows 2000000 --features 20 --iters 500)
multiclass=(--task multiclass --classes 5 --rows 500000 --features 20 --iters 300)
case "${1:-}" in
    16)
        for task in binary regression multiclass; do
            declare -n args=$task
            bash .device/run.sh 16 "${args[@]}" --libs "$libs"
        done ;;
    8,4|4,8)
        bash .device/run.sh 8 "${binary[@]}" --libs "$libs"
        # 250 trees at 4 threads keep the call under 8 minutes; the ratio is per tree alike
        bash .device/run.sh 4 --task binary --rows 4000000 --features 28 --iters 250 --libs "$libs" ;;
    show)
        python3 .device/peers.py --show "$out"/peers_t*.json --markdown ;;
    *)
        echo "usage: bash benchmarks/bench_scaling.sh 16 | 8,4 | show" >&2; exit 2 ;;
esac
