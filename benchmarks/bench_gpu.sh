#!/usr/bin/env bash
# GPU training against XGBoost's CUDA hist on the accelerator machine (issue 39).
#
# Here, once, from the project's root (fills .device/ with peers.py, run.sh and XGBoost's
# CUDA wheel for that machine's Python; no LightGBM, the wheel nearly fills what travels):
#     bash ../shared/bench/device/prepare.sh --gpu
# There, with .device/ taken along, in calls of under 8 minutes each:
#     bash benchmarks/bench_gpu.sh kernels   # the CUDA histogram/partition kernels against
#                                            # the CPU's on 4,000,000 x 28 (bench_gpu.py)
#     bash benchmarks/bench_gpu.sh fit       # binary 4,000,000 x 28, 500 trees, 31 leaves:
#                                            # XGBoost device="cuda", treeboost device="cuda"
#                                            # (first fit = compilation, then warm), and
#                                            # treeboost on the 16 CPU cores
#     bash benchmarks/bench_gpu.sh big       # the same at 10,000,000 rows, GPUs only
#     bash benchmarks/bench_gpu.sh show      # the tables
# Results go to $OUT (the device tool's folder) or .device/results/; copy them to
# benchmarks/results/ here.
set -u
cd "$(dirname "$0")/.." || exit 1
[ -f .device/run.sh ] || { echo "no .device/run.sh: run bash ../shared/bench/device/prepare.sh --gpu here first" >&2; exit 2; }
out=${OUT:-.device/results}
mkdir -p "$out"
case "${1:-}" in
    kernels)
        PYTHONPATH=$PWD/src NUMBA_CACHE_DIR=/tmp/nbc python3 benchmarks/bench_gpu.py --sweep \
            2>&1 | tee "$out/gpu_kernels.log" | tail -40 ;;
    fit)
        bash .device/run.sh 16 --task binary --rows 4000000 --features 28 --iters 500 \
            --libs xgboost_gpu,treeboost_gpu,treeboost ;;
    big)
        bash .device/run.sh 16 --task binary --rows 10000000 --features 28 --iters 500 \
            --libs xgboost_gpu,treeboost_gpu ;;
    show)
        python3 .device/peers.py --show "$out"/peers_t*.json --markdown ;;
    *)
        echo "usage: bash benchmarks/bench_gpu.sh kernels | fit | big | show" >&2; exit 2 ;;
esac
