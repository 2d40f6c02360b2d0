"""Quantised gradients: fit time and test metric, treeboost against LightGBM (issue 13).

``../shared/bench/peers.py`` passes no extra parameters, so this runs the
comparison itself on data from peers.py's own generator (the same rows as its
cached sets for the same --rows/--features/--seed): treeboost with and without
``use_quantized_grad`` and LightGBM with and without its ``use_quantized_grad``
(4 levels, stochastic rounding, leaves refit: ``quant_train_renew_leaf``), 31
leaves, learning rate 0.1, min 20 rows per leaf, 255 bins, the same thread
count. One process, libraries interleaved round after round so that a shared
machine's drift falls on all of them; every treeboost kernel is compiled by a
small fit first. Prints each configuration's median fit seconds, its ratio to
LightGBM's unquantised fit, the cores it kept busy (process CPU / wall) and the
test AUC (binary), RMSE (regression) or accuracy (multiclass).

    python benchmarks/bench_quantized.py [--rows 1000000] [--features 28]
        [--task binary] [--iters 500] [--threads 2] [--rounds 2]

With ``--shared DIR`` it compares treeboost with and without quantised gradients on
the datasets of ``DIR`` (``../shared/datasets``) with at least ``--min-rows`` rows
instead: ``--iters`` trees, three 75/25 splits, test accuracy or RMSE.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

PEERS = Path(__file__).resolve().parents[2] / "shared" / "bench"


def _args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="total rows, 80%% train")
    parser.add_argument("--features", type=int, default=28)
    parser.add_argument("--task", choices=["binary", "regression", "multiclass"],
                        default="binary")
    parser.add_argument("--classes", type=int, default=5)
    parser.add_argument("--iters", type=int, default=500)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--bins", type=int, default=4, help="num_grad_quant_bins")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--configs", default="tb,tb_quant,lgb,lgb_quant")
    parser.add_argument("--shared", default=None, help="a datasets folder with MANIFEST.tsv")
    parser.add_argument("--min-rows", type=int, default=3000)
    parser.add_argument("--kernels", action="store_true",
                        help="only time the histogram kernels, float vs packed integer")
    return parser.parse_args()


def _kernels(a):
    """Seconds per histogram pass, float (g, h, count) vs packed integer, in one run."""
    import numpy as np

    from treeboost._kernels.histogram import build_histograms, build_histograms_root
    from treeboost._kernels.quantize import quantize_gradients

    rng = np.random.default_rng(a.seed)
    n = int(a.rows * 0.8)
    X_binned = rng.integers(0, 255, size=(a.features, n), dtype=np.uint8)
    g = rng.normal(size=n).astype(np.float32)
    h = rng.uniform(0.05, 0.25, size=n).astype(np.float32)
    packed = np.empty(n, dtype=np.int64)
    quantize_gradients(g, h, a.bins, True, np.uint64(1), packed, np.empty(2), np.uint64(0),
                       np.full(2, -1.0))
    features = np.arange(a.features, dtype=np.int32)
    rows = np.sort(rng.choice(n, n // 4, replace=False)).astype(np.uint32)
    float_hist = np.zeros((a.features, 256, 3))
    int_hist = np.zeros((a.features, 256), dtype=np.int64)
    og, oh, op = (np.empty(n, dtype=np.float32), np.empty(n, dtype=np.float32),
                  np.empty(n, dtype=np.int64))
    passes = {
        "root, float": lambda: build_histograms_root(X_binned, g, h, features, float_hist,
                                                           a.threads),
        "root, packed": lambda: build_histograms_root(X_binned, packed, packed, features,
                                                      int_hist, a.threads),
        "node (1/4 rows), float": lambda: build_histograms(X_binned, rows, g, h, features,
                                                           og, oh, float_hist, a.threads),
        "node (1/4 rows), packed": lambda: build_histograms(X_binned, rows, packed, packed,
                                                            features, op, op, int_hist,
                                                            a.threads),
        "quantize (all rows)": lambda: quantize_gradients(g, h, a.bins, True, np.uint64(2),
                                                          packed, np.empty(2), np.uint64(0),
                                                          np.full(2, -1.0)),
    }
    n_rows = {k: (rows.size if k.startswith("node") else n) for k in passes}
    times = {k: [] for k in passes}
    for _ in range(5):  # interleaved; the first call compiles or loads the kernel
        for name, run in passes.items():
            t0 = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - t0)
    print(f"{n} rows x {a.features} features, {a.threads} threads; load average "
          f"{os.getloadavg()[0]:.2f}")
    for name, t in times.items():
        best = min(t[1:])
        print(f"{name:26s} {1e3 * best:8.2f} ms  "
              f"{1e9 * best * a.threads / (n_rows[name] * a.features):.2f} ns per row x feature "
              "x thread")


def _shared(a):
    """Accuracy (classification) or RMSE (regression) with and without quantisation."""
    import csv

    import numpy as np
    from sklearn.model_selection import train_test_split

    from treeboost import TreeBoostClassifier, TreeBoostRegressor
    from treeboost.datasets import load

    folder = Path(a.shared)
    with open(folder / "MANIFEST.tsv", newline="", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f, delimiter="\t") if int(r["n_rows"]) >= a.min_rows]
    print(f"{'dataset':20s} {'rows':>6s}  metric     float   quantised  change")
    changes = {"classification": [], "regression": []}
    for r in rows:
        X, y = load(folder / r["file"], target=r["target"])
        y = np.asarray(y)
        regression = r["task"] == "regression"
        scores = {False: [], True: []}
        for seed in range(3):
            stratify = None if regression else y
            tr, te = train_test_split(np.arange(len(y)), test_size=0.25, random_state=seed,
                                      stratify=stratify)
            for quant in (False, True):
                cls = TreeBoostRegressor if regression else TreeBoostClassifier
                model = cls(n_estimators=a.iters, use_quantized_grad=quant,
                            num_grad_quant_bins=a.bins, n_jobs=a.threads, random_state=seed)
                model.fit(X.iloc[tr], y[tr])
                pred = model.predict(X.iloc[te])
                scores[quant].append(float(np.sqrt(np.mean((pred - y[te]) ** 2)))
                                     if regression else float(np.mean(pred == y[te])))
        f, q = np.mean(scores[False]), np.mean(scores[True])
        kind = "regression" if regression else "classification"
        changes[kind].append(q / f - 1)
        print(f"{r['name']:20s} {len(y):6d}  {'RMSE' if regression else 'accuracy':8s} "
              f"{f:8.4f}  {q:8.4f}  {100 * (q / f - 1):+6.2f}%", flush=True)
    for kind, c in changes.items():
        if c:
            print(f"mean change, {kind}: {100 * np.mean(c):+.2f}% ({len(c)} datasets)")


def _data(a):
    import numpy as np

    sys.path.insert(0, str(PEERS))
    import peers  # noqa: E402  (the shared generator: same data as peers.py's)

    if a.task == "regression":
        X, y = peers._regression(a.rows, a.features, a.seed)
    else:
        X, y = peers._higgs_like(a.rows, a.features, a.seed,
                                 2 if a.task == "binary" else a.classes)
    idx = np.random.default_rng(a.seed + 1).permutation(a.rows)
    n_test = int(round(a.rows * 0.2))
    te, tr = idx[:n_test], idx[n_test:]
    return (np.ascontiguousarray(X[tr]), y[tr], np.ascontiguousarray(X[te]), y[te])


def _models(a):
    """{name: factory of an unfitted model} with matched parameters."""
    import lightgbm as lgb

    from treeboost import TreeBoostClassifier, TreeBoostRegressor

    tb_cls = TreeBoostRegressor if a.task == "regression" else TreeBoostClassifier
    lgb_cls = lgb.LGBMRegressor if a.task == "regression" else lgb.LGBMClassifier
    tb = {"n_estimators": a.iters, "learning_rate": 0.1, "max_leaf_nodes": 31,
          "min_samples_leaf": 20, "max_bins": 255, "n_jobs": a.threads, "random_state": 0}
    lg = {"n_estimators": a.iters, "learning_rate": 0.1, "num_leaves": 31,
          "min_child_samples": 20, "max_bin": 255, "n_jobs": a.threads, "verbose": -1,
          "random_state": 0, "reg_lambda": 0.0, "min_child_weight": 1e-3}
    quant_tb = {"use_quantized_grad": True, "num_grad_quant_bins": a.bins}
    quant_lg = {"use_quantized_grad": True, "num_grad_quant_bins": a.bins,
                "stochastic_rounding": True, "quant_train_renew_leaf": True}
    return {"tb": lambda: tb_cls(**tb), "tb_quant": lambda: tb_cls(**tb, **quant_tb),
            "lgb": lambda: lgb_cls(**lg), "lgb_quant": lambda: lgb_cls(**lg, **quant_lg)}


def _score(task, model, X, y):
    import numpy as np
    from sklearn.metrics import accuracy_score, roc_auc_score

    if task == "binary":
        return "AUC", roc_auc_score(y, model.predict_proba(X)[:, 1])
    if task == "multiclass":
        return "accuracy", accuracy_score(y, model.predict(X))
    return "RMSE", float(np.sqrt(np.mean((model.predict(X) - y) ** 2)))


def main():
    a = _args()
    for var in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ[var] = str(a.threads)
    if a.kernels:
        _kernels(a)
        return
    if a.shared:
        _shared(a)
        return
    X_tr, y_tr, X_te, y_te = _data(a)
    factories = _models(a)
    names = a.configs.split(",")
    # compile every treeboost kernel first (quantised and not; 100,000 rows reach the
    # parallel node kernels, which a small fit leaves out)
    for name in names:
        if name.startswith("tb"):
            small = factories[name]().set_params(n_estimators=3)
            small.fit(X_tr[:100_000], y_tr[:100_000])
    times = {n: [] for n in names}
    busy = {n: [] for n in names}
    scores = {}
    for _ in range(a.rounds):
        for name in names:
            model = factories[name]()
            t0, c0 = time.perf_counter(), time.process_time()
            model.fit(X_tr, y_tr)
            wall = time.perf_counter() - t0
            times[name].append(wall)
            busy[name].append((time.process_time() - c0) / wall)
            scores[name] = _score(a.task, model, X_te, y_te)
            print(f"  {name}: {wall:.2f} s", flush=True)
    load = os.getloadavg()[0]
    print(f"{a.task} {int(a.rows * 0.8)} x {a.features} (train), {a.iters} trees, "
          f"{a.threads} threads, {a.rounds} rounds, num_grad_quant_bins={a.bins}; "
          f"load average {load:.2f}")
    ref = statistics.median(times["lgb"]) if "lgb" in times else None
    for name in names:
        med = statistics.median(times[name])
        ratio = f"{med / ref:.2f}x lgb" if ref else ""
        metric, value = scores[name]
        print(f"{name:10s} fit {med:7.2f} s  {ratio:9s}  cores busy "
              f"{statistics.median(busy[name]):.2f}  {metric} {value:.5f}")


if __name__ == "__main__":
    main()
