"""GPU kernels against the CPU kernels: histograms and the partition (issue 39).

Times the numba-cuda kernels of ``treeboost._kernels.cuda`` against the CPU kernels
on the same binned data, by default 4,000,000 x 28 (the issue's binary set's shape;
255 value bins and 5 % missing values, uniform bins: the histogram's time hardly
depends on the values), and checks them on it: the quantised (packed integer)
histograms bit for bit, the float ones within the round-off bound of a sum in
another order, the partition exactly.

Passes: the root (every row) and a node (a sorted ``--node-fraction`` of the rows,
its histogram over an index array), each float (gradient, hessian, count) and
packed; the partition of the root's rows by a numerical split with missing values
left. CPU: the grower's kernels on ``--threads`` threads (default: all cores).
GPU: the first call's time (numba-cuda compiles the kernel then, about a second)
apart, then the median of ``--repeat`` calls, each followed by a synchronisation
(every GPU pass includes zeroing its histogram on the device, the CPU one zeroing
its array); data transfers to the device are timed once and reported apart. Prints
one table and writes it as JSON to ``--out`` (default ``$OUT/bench_gpu.json`` where
``$OUT`` is set, as on the accelerator machine).

    python benchmarks/bench_gpu.py                          # on the accelerator machine
    python benchmarks/bench_gpu.py --sweep                  # + launch shapes
    python benchmarks/bench_gpu.py --sim --rows 2000        # here: numba-cuda's simulator

On the accelerator machine (``../shared/bench/device/README.md``: numba-cuda there),
from the project's root with the work tree taken along:
``PYTHONPATH=src NUMBA_CACHE_DIR=/tmp/nbc python3 benchmarks/bench_gpu.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=None,
                        help="rows of the data (default 4,000,000; 2,000 with --sim)")
    parser.add_argument("--features", type=int, default=28)
    parser.add_argument("--node-fraction", type=float, default=0.25,
                        help="rows of the node pass, a random sorted subset")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (all)")
    parser.add_argument("--quant-bins", type=int, default=4, help="num_grad_quant_bins")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sweep", action="store_true",
                        help="also time the root passes over launch shapes: threads and "
                             "rows per block (histograms) or per thread (partition)")
    parser.add_argument("--sim", action="store_true",
                        help="numba-cuda's simulator (NUMBA_ENABLE_CUDASIM=1): a check on "
                             "tiny data where there is no GPU")
    parser.add_argument("--out", default=None, help="JSON file of the results")
    return parser.parse_args()


def _median_seconds(fn, repeat, sync):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _first_call_seconds(fn, sync):
    t0 = time.perf_counter()
    fn()
    sync()
    return time.perf_counter() - t0


def main():
    a = _args()
    if a.sim:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    rows = a.rows if a.rows is not None else (2_000 if a.sim else 4_000_000)
    sys.path.insert(0, str(ROOT / "src"))

    import numba
    import numpy as np

    from treeboost._kernels.cuda import cuda_available, require_numba_cuda, simulated
    from treeboost._kernels.histogram import build_histograms, build_histograms_root
    from treeboost._kernels.partition import partition_rows
    from treeboost._kernels.quantize import quantize_gradients

    if not cuda_available():
        sys.exit("no usable GPU (and not --sim): nothing to time")
    cuda = require_numba_cuda()
    from treeboost._kernels.cuda import histogram as ghist
    from treeboost._kernels.cuda import partition as gpart

    if a.threads:
        numba.set_num_threads(a.threads)
    n_threads = numba.get_num_threads()
    device = "simulator" if simulated() else cuda.get_current_device().name
    if isinstance(device, bytes):
        device = device.decode()
    print(f"rows {rows:,} x {a.features} features; CPU {n_threads} threads; GPU {device}")

    rng = np.random.default_rng(a.seed)
    X = rng.integers(0, 255, size=(a.features, rows), dtype=np.uint8)
    X[rng.random(X.shape) < 0.05] = 255
    g = rng.normal(size=rows).astype(np.float32)
    h = rng.uniform(0.05, 0.25, size=rows).astype(np.float32)
    packed = np.empty(rows, dtype=np.int64)
    quantize_gradients(g, h, a.quant_bins, True, np.uint64(1), packed, np.empty(2),
                       np.uint64(0), np.full(2, -1.0))
    features = np.arange(a.features, dtype=np.int32)
    node = np.sort(rng.choice(rows, int(rows * a.node_fraction), replace=False)).astype(
        np.uint32)
    all_rows = np.arange(rows, dtype=np.uint32)
    bitset = np.zeros(8, dtype=np.uint32)
    split = (3, False, 127, True, 255)  # feature, categorical, threshold, missing left, bin

    # ---- CPU ---------------------------------------------------------------------------
    hist_f = np.zeros((a.features, 256, 3))
    hist_p = np.zeros((a.features, 256), dtype=np.int64)
    og, oh = np.empty(rows, np.float32), np.empty(rows, np.float32)
    op = np.empty(rows, np.int64)
    left_buffer, right_buffer = np.empty(rows, np.uint32), np.empty(rows, np.uint32)
    part_rows = all_rows.copy()

    def cpu_part():
        part_rows[:] = all_rows
        return partition_rows(part_rows, X, split[0], split[1], split[2], split[3], split[4],
                              bitset, left_buffer, right_buffer)

    def zeroed(hist, fn):
        def run():
            hist[...] = 0
            fn()
        return run

    cpu = {
        "root, float": zeroed(hist_f, lambda: build_histograms_root(X, g, h, features, hist_f,
                                                                    n_threads)),
        "root, packed": zeroed(hist_p, lambda: build_histograms_root(X, packed, packed,
                                                                     features, hist_p,
                                                                     n_threads)),
        "node, float": zeroed(hist_f, lambda: build_histograms(X, node, g, h, features, og, oh,
                                                               hist_f, n_threads)),
        "node, packed": zeroed(hist_p, lambda: build_histograms(X, node, packed, packed,
                                                                features, op, op, hist_p,
                                                                n_threads)),
        "partition, root": cpu_part,
    }
    results = {}
    cpu_out = {}
    for name, fn in cpu.items():
        fn()  # compile (or load from the kernel cache)
        if name == "partition, root":
            cpu_out[name] = (part_rows.copy(), cpu_part())
        else:
            cpu_out[name] = (hist_f if "float" in name else hist_p).copy()
        results[name] = {"cpu_s": _median_seconds(fn, a.repeat, lambda: None)}

    # ---- GPU ---------------------------------------------------------------------------
    t0 = time.perf_counter()
    d_X = cuda.to_device(X)
    d_g, d_h, d_packed = cuda.to_device(g), cuda.to_device(h), cuda.to_device(packed)
    d_features, d_node = cuda.to_device(features), cuda.to_device(node)
    d_all_rows, d_bitset = cuda.to_device(all_rows), cuda.to_device(bitset)
    cuda.synchronize()
    transfer_s = time.perf_counter() - t0
    d_hist_f = ghist.zeros((a.features, 256, 3), np.float64)
    d_hist_p = ghist.zeros((a.features, 256), np.int64)
    d_part = cuda.device_array(rows, dtype=np.uint32)
    buffers = gpart.PartitionBuffers(rows)

    def gpu_hist(d_hist, build, *args, **launch):
        def run():
            ghist.fill_zero(d_hist)
            build(*args, d_hist, **launch)
        return run

    def gpu_part():
        d_part.copy_to_device(d_all_rows)
        return gpart.partition_rows(d_part, d_X, *split, d_bitset, buffers)

    gpu = {
        "root, float": gpu_hist(d_hist_f, ghist.build_histogram, d_X, None, d_g, d_h,
                                d_features),
        "root, packed": gpu_hist(d_hist_p, ghist.build_histogram_packed, d_X, None, d_packed,
                                 d_features),
        "node, float": gpu_hist(d_hist_f, ghist.build_histogram, d_X, d_node, d_g, d_h,
                                d_features),
        "node, packed": gpu_hist(d_hist_p, ghist.build_histogram_packed, d_X, d_node,
                                 d_packed, d_features),
        "partition, root": gpu_part,
    }
    checks = {}
    for name, fn in gpu.items():
        results[name]["gpu_first_s"] = _first_call_seconds(fn, cuda.synchronize)
        if name == "partition, root":
            n_left = gpu_part()
            expected_rows, expected_left = cpu_out[name]
            checks[name] = ("equal" if n_left == expected_left
                            and np.array_equal(d_part.copy_to_host(), expected_rows)
                            else "DIFFERENT")
        elif "packed" in name:
            checks[name] = ("equal" if np.array_equal(d_hist_p.copy_to_host(), cpu_out[name])
                            else "DIFFERENT")
        else:
            got, expected = d_hist_f.copy_to_host(), cpu_out[name]
            # two orders of the same n_b float64 terms: |GPU - CPU| <= 2 (n_b - 1) 2**-53
            # sum|x| over a bin's rows, bounded here by every row's n and sum|x|
            diff = np.abs(got - expected)
            ok = np.array_equal(got[..., 2], expected[..., 2])
            for c, x in ((0, g), (1, h)):
                bound = 2.0 * rows * 2.0 ** -53 * np.abs(x.astype(np.float64)).sum()
                ok = ok and diff[..., c].max() <= bound
            checks[name] = (f"{'within round-off' if ok else 'DIFFERENT'} "
                            f"(max diff {diff[..., :2].max():.1e})")
        results[name]["gpu_s"] = _median_seconds(fn, a.repeat, cuda.synchronize)
        results[name]["check"] = checks[name]

    print(f"to the device: {transfer_s * 1e3:.1f} ms (X, gradients, packed, indices)")
    print(f"{'pass':<18}{'CPU ms':>10}{'GPU ms':>10}{'CPU/GPU':>9}{'GPU 1st s':>11}  check")
    for name, r in results.items():
        print(f"{name:<18}{r['cpu_s'] * 1e3:>10.2f}{r['gpu_s'] * 1e3:>10.2f}"
              f"{r['cpu_s'] / r['gpu_s']:>9.1f}{r['gpu_first_s']:>11.2f}  {r['check']}")

    sweep = []
    if a.sweep:
        print(f"\nroot passes by launch shape (GPU ms){'':<4}float    packed")
        for threads in (128, 256):
            for per_block in (None, 4096, 16384, 65536, 262144):
                launch = {"threads": threads, "rows_per_block": per_block}
                f = _median_seconds(gpu_hist(d_hist_f, ghist.build_histogram, d_X, None, d_g,
                                             d_h, d_features, **launch), a.repeat,
                                    cuda.synchronize)
                p = _median_seconds(gpu_hist(d_hist_p, ghist.build_histogram_packed, d_X,
                                             None, d_packed, d_features, **launch), a.repeat,
                                    cuda.synchronize)
                sweep.append({**launch, "float_s": f, "packed_s": p})
                print(f"  threads {threads:>3}, rows per block {str(per_block):>7}:"
                      f"{f * 1e3:>10.2f}{p * 1e3:>10.2f}")
        print("\nroot partition by launch shape (GPU ms)")
        expected_rows, expected_left = cpu_out["partition, root"]
        for threads in (128, 256):
            for per_thread in (1, 2, 4, 8):
                shaped = gpart.PartitionBuffers(rows, threads, per_thread)

                def part(shaped=shaped):
                    d_part.copy_to_device(d_all_rows)
                    return gpart.partition_rows(d_part, d_X, *split, d_bitset, shaped)

                same = (part() == expected_left
                        and np.array_equal(d_part.copy_to_host(), expected_rows))
                if not same:
                    checks[f"partition {threads} x {per_thread}"] = "DIFFERENT"
                t = _median_seconds(part, a.repeat, cuda.synchronize)
                sweep.append({"threads": threads, "rows_per_thread": per_thread,
                              "partition_s": t, "equal": same})
                print(f"  threads {threads:>3}, rows per thread {per_thread}:{t * 1e3:>10.2f}"
                      f"  {'equal' if same else 'DIFFERENT'}")

    out = a.out or (os.path.join(os.environ["OUT"], "bench_gpu.json") if os.environ.get("OUT")
                    else None)
    if out:
        with open(out, "w") as fh:
            json.dump({"rows": rows, "features": a.features, "cpu_threads": n_threads,
                       "device": device, "transfer_s": transfer_s, "passes": results,
                       "sweep": sweep}, fh, indent=1)
        print(f"written to {out}")
    if any("DIFFERENT" in c for c in checks.values()):
        sys.exit("a GPU result differs from the CPU's")


if __name__ == "__main__":
    main()
