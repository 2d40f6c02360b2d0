"""Training on data larger than the memory allowed: ``Dataset.from_chunks`` over ``.npy`` chunks.

Writes a float64 matrix to ``--dir`` as ``.npy`` chunks of ``--chunk-rows`` rows (default
4,000,000 x 28, about 900 MB, in chunks of 250,000 rows), a binary label from a known
function of the features, and a held-out block of rows. Then, in a child process:

1. warms up (imports treeboost and trains two small models from chunks, so the kernels
   are compiled and the thread pools started) and reads its address space (``VmSize`` of
   ``/proc/self/status``): the baseline;
2. limits its address space (``RLIMIT_AS``) to the baseline plus ``--fixed-mb`` (64 MB:
   what does not grow with the rows, as thread stacks and histogram buffers) plus
   ``--budget`` times the float64 bytes of the matrix (0.6: less than the matrix), and
   tries to allocate the float64 matrix, which fails at large sizes (at small ones the
   fixed allowance alone may hold it). A chunk and the bin sample (``--sample-rows`` x
   features, float64) are held whole: by default at most a sixteenth and a tenth of
   the rows;
3. builds the Dataset from memory-mapped chunks (one mapped at a time; ``--binned-path``
   keeps the bins in a memory-mapped file too) and trains ``--trees`` trees (log loss);
4. reports its peak RSS against the float64 bytes, and saves the model and its raw
   predictions on the held-out rows. The peak is the run's own: the kernel's peak
   (``VmHWM``) is reset after the warm-up and the allocation test
   (``/proc/self/clear_refs``); where that is refused, ``ru_maxrss`` (the process's
   peak) is reported.

The check runs in a second child without the limit: it concatenates the chunks into the
float64 matrix (memory: about twice the matrix), trains in memory with the chunked
model's bin mapper (``Dataset(X, y).construct(bin_mapper)``) and compares the held-out
predictions and the model file text with the chunked model's, which must be equal bit
for bit. ``--no-check`` skips it.

glibc is told, in both children, to keep the address space close to the memory held:
``MALLOC_ARENA_MAX=1``, as it reserves 64 MB of address space per extra thread arena
(which the limit would count, and where an allocation refused elsewhere would go), and
``MALLOC_MMAP_THRESHOLD_=131072``, its initial threshold made fixed, as it otherwise
raises it when a large array is freed and keeps the freed memory of later ones mapped
(the baseline would include the warm-up's arrays).

    python benchmarks/bench_out_of_core.py --rows 200000
    python benchmarks/bench_out_of_core.py                    # 4,000,000 x 28
    python benchmarks/bench_out_of_core.py --dir /data/ooc --binned-path
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from treeboost.binning import BIN_SUBSAMPLE

HOLDOUT_ROWS = 20_000
WARMUP_ROWS = 120_000


def label_of(X: np.ndarray) -> np.ndarray:
    """The known binary target: a sign of a smooth function of four features."""
    x = np.nan_to_num(X[:, :4])
    return (x[:, 0] + x[:, 1] * x[:, 2] - 0.5 * np.abs(x[:, 3]) > 0).astype(np.float64)


def make_rows(rng: np.random.Generator, n: int, features: int) -> np.ndarray:
    X = rng.normal(size=(n, features))
    X[rng.random(n) < 0.01, features - 1] = np.nan  # a column with missing values
    return X


def write_data(folder: Path, rows: int, features: int, chunk_rows: int) -> list[Path]:
    """Chunks ``chunk_*.npy``, ``label.npy`` and ``holdout.npy``; one chunk in memory."""
    paths, labels = [], []
    for i, start in enumerate(range(0, rows, chunk_rows)):
        X = make_rows(np.random.default_rng([0, i]), min(chunk_rows, rows - start), features)
        paths.append(folder / f"chunk_{i:05d}.npy")
        np.save(paths[-1], X)
        labels.append(label_of(X))
    np.save(folder / "label.npy", np.concatenate(labels))
    np.save(folder / "holdout.npy", make_rows(np.random.default_rng(1), HOLDOUT_ROWS, features))
    return paths


def params(trees: int) -> dict:
    return {"loss": "log_loss", "n_estimators": trees, "random_state": 0}


def _status(field: str) -> int:
    """Bytes of a ``VmPeak``/``VmSize``-like field of /proc/self/status."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _max_rss() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def _reset_peak_rss() -> bool:
    """Reset the kernel's peak RSS of this process (Linux 4.0+); False if refused."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def child_limited(folder: Path, trees: int, budget: float, fixed_mb: float, binned: bool,
                  sample_rows: int) -> dict:
    """Train from memory-mapped chunks under an address-space limit (steps 1 to 4)."""
    import resource

    from treeboost import Dataset, train
    from treeboost.serialization import save_booster

    paths = sorted(folder.glob("chunk_*.npy"))
    label = np.load(folder / "label.npy")
    first = np.load(paths[0], mmap_mode="r")
    n_rows, n_features = label.size, first.shape[1]
    float_bytes = n_rows * n_features * 8
    # warm-up: compiles (or loads from Numba's cache) every kernel the run uses, whose
    # code would otherwise be mapped under the limit. Kernels are specialised by size
    # (the parallel node kernels from 32,768 rows; "auto" quantises the log loss's
    # gradients from 100,000 rows), so the warm-up is that large, in both modes
    warm = make_rows(np.random.default_rng(2), WARMUP_ROWS, n_features)
    warm_set = Dataset.from_chunks([warm[:1000], warm[1000:]], label=label_of(warm))
    for quantized in (False, True):
        train({**params(2), "use_quantized_grad": quantized}, warm_set)
    del warm, warm_set, first
    gc.collect()  # the warm-up's boosters hold cycles: freed now, not under the limit
    # the address space now, not its peak: the limit is on what is mapped from here on
    baseline = _status("VmSize")
    limit = baseline + int(fixed_mb * 2**20 + budget * float_bytes)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        whole = np.ones((n_rows, n_features))
        whole_fits = True
        del whole
    except MemoryError:
        whole_fits = False
    baseline_rss = _status("VmRSS")
    peak_reset = _reset_peak_rss()  # after the test above, which may have held the matrix

    def chunks():  # a fresh iterator per pass; each chunk unmapped once read
        return (np.load(p, mmap_mode="r") for p in paths)

    binned_path = folder / "binned.npy" if binned else None
    if binned_path is not None and binned_path.exists():
        binned_path.unlink()
    t0 = time.perf_counter()
    ds = Dataset.from_chunks(chunks, label=label, random_state=0, binned_path=binned_path,
                             sample_rows=sample_rows)
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    booster = train(params(trees), ds)
    train_s = time.perf_counter() - t0
    save_booster(booster, folder / "model_chunks.json")
    np.save(folder / "pred_chunks.npy", booster.predict_raw(np.load(folder / "holdout.npy")))
    return {"rows": n_rows, "features": n_features, "float_bytes": float_bytes,
            "baseline_vm": baseline, "baseline_rss": baseline_rss, "limit": limit,
            "whole_fits": whole_fits,
            "peak_rss": _status("VmHWM") if peak_reset else _max_rss(), "build_s": build_s,
            "train_s": train_s}


def child_check(folder: Path, trees: int) -> dict:
    """Train in memory with the chunked model's bins; compare with the chunked model."""
    from treeboost import Dataset, train
    from treeboost.serialization import load_booster, save_booster

    X = np.concatenate([np.load(p) for p in sorted(folder.glob("chunk_*.npy"))])
    y = np.load(folder / "label.npy")
    bins = load_booster(folder / "model_chunks.json").bin_mapper
    t0 = time.perf_counter()
    booster = train(params(trees), Dataset(X, y).construct(bins))
    train_s = time.perf_counter() - t0
    save_booster(booster, folder / "model_memory.json")
    pred = booster.predict_raw(np.load(folder / "holdout.npy"))
    same_text = ((folder / "model_memory.json").read_text()
                 == (folder / "model_chunks.json").read_text())
    return {"predictions_equal": bool(np.array_equal(pred, np.load(folder / "pred_chunks.npy"))),
            "model_text_equal": same_text, "memory_train_s": train_s,
            "memory_peak_rss": _max_rss()}


def run_child(role: str, args) -> dict:
    env = dict(os.environ, MALLOC_ARENA_MAX="1", MALLOC_MMAP_THRESHOLD_="131072")
    cmd = [sys.executable, __file__, "--role", role, "--dir", str(args.dir),
           "--trees", str(args.trees), "--budget", str(args.budget),
           "--fixed-mb", str(args.fixed_mb),
           "--sample-rows", str(args.sample_rows)]
    if args.binned_path:
        cmd.append("--binned-path")
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.stderr.write(out.stderr)
        raise SystemExit(f"the {role} child failed (exit {out.returncode})")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--features", type=int, default=28)
    ap.add_argument("--chunk-rows", type=int, default=None,
                    help="rows a chunk (default: rows / 16, at most 250,000)")
    ap.add_argument("--dir", type=Path, default=None,
                    help="folder for the chunks (default: a temporary one, removed)")
    ap.add_argument("--trees", type=int, default=50)
    ap.add_argument("--budget", type=float, default=0.6,
                    help="address space allowed for the data, times the float64 bytes")
    ap.add_argument("--fixed-mb", type=float, default=64.0,
                    help="address space allowed beyond the baseline and the data's budget")
    ap.add_argument("--sample-rows", type=int, default=None,
                    help="rows the bin edges are computed from, held as float64 meanwhile "
                         "(default: rows / 10, at most 200,000, the library's default)")
    ap.add_argument("--binned-path", action="store_true",
                    help="keep the bins in a memory-mapped file in --dir")
    ap.add_argument("--no-check", action="store_true",
                    help="skip the in-memory training that the predictions are compared to")
    ap.add_argument("--role", choices=["limited", "check"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.role == "limited":
        print(json.dumps(child_limited(args.dir, args.trees, args.budget, args.fixed_mb,
                                       args.binned_path, args.sample_rows)))
        return
    if args.role == "check":
        print(json.dumps(child_check(args.dir, args.trees)))
        return
    # a chunk and the sample are held whole: at small sizes they must fit the budget too
    args.chunk_rows = args.chunk_rows or max(1, min(250_000, args.rows // 16))
    args.sample_rows = args.sample_rows or max(1, min(BIN_SUBSAMPLE, args.rows // 10))
    temporary = args.dir is None
    args.dir = Path(tempfile.mkdtemp(prefix="ooc_")) if temporary else args.dir
    args.dir.mkdir(parents=True, exist_ok=True)
    try:
        for old in args.dir.glob("chunk_*.npy"):  # chunks of an earlier, larger run
            old.unlink()
        t0 = time.perf_counter()
        write_data(args.dir, args.rows, args.features, args.chunk_rows)
        write_s = time.perf_counter() - t0
        r = run_child("limited", args)
        check = None if args.no_check else run_child("check", args)
    finally:
        if temporary:
            shutil.rmtree(args.dir, ignore_errors=True)
    mb = 2.0**20
    print(f"{r['rows']:,} x {r['features']} float64 in {args.chunk_rows:,}-row .npy chunks "
          f"(written in {write_s:.1f} s), bins from {min(args.sample_rows, r['rows']):,} rows, "
          f"{args.trees} trees, log loss, "
          f"bins {'in a memory-mapped file' if args.binned_path else 'in memory'}\n")
    print(f"address-space limit: baseline + {args.fixed_mb:g} MB + {args.budget:g} x float64\n")
    print("| float64 MB | baseline VmSize MB | limit (RLIMIT_AS) MB | float64 fits under it "
          "| baseline VmRSS MB | peak RSS MB | (peak - baseline) RSS / float64 | build s "
          "| train s |")
    print("|---:|---:|---:|:---:|---:|---:|---:|---:|---:|")
    print(f"| {r['float_bytes'] / mb:,.0f} | {r['baseline_vm'] / mb:,.0f} | {r['limit'] / mb:,.0f} "
          f"| {'yes' if r['whole_fits'] else 'no'} | {r['baseline_rss'] / mb:,.0f} "
          f"| {r['peak_rss'] / mb:,.0f} "
          f"| {(r['peak_rss'] - r['baseline_rss']) / r['float_bytes']:.2f} "
          f"| {r['build_s']:.2f} | {r['train_s']:.2f} |")
    if check is not None:
        print(f"\nin memory, same bins, no limit (peak RSS {check['memory_peak_rss'] / mb:,.0f} MB,"
              f" train {check['memory_train_s']:.2f} s): held-out predictions equal: "
              f"{check['predictions_equal']}, model file text equal: "
              f"{check['model_text_equal']}")
        if not (check["predictions_equal"] and check["model_text_equal"]):
            raise SystemExit("the chunked model differs from the in-memory model")


if __name__ == "__main__":
    main()
