"""End-to-end benchmark: treeboost against LightGBM, XGBoost (hist) and scikit-learn.

Every library trains on the same synthetic data with matched parameters (leaves,
learning rate, bins, rows per leaf, no L2, no subsampling, no early stopping) in this
one process, one after the other. Reported per library: fit time, predict time on the
test rows, the test metric, and their ratios to LightGBM, as a Markdown table.

treeboost is warmed up first by a fit on a small slice, so that Numba's compilation
(or loading of its on-disk cache) is not counted in the fit time; that warm-up time
is reported on its own. For peak memory and one process per library use
``../shared/bench/peers.py`` instead.

Compare ratios from one run, never absolute times across runs. On a shared machine
prefer ``--threads 1``: a thread team that waits for a core busy with another process
slows every parallel region (2-thread fits ran 10-40x slower than 1-thread ones on a
loaded 2-core box, for treeboost, LightGBM and XGBoost alike); the ``load`` column
shows the 1-minute load average after each library's run.

    python benchmarks/bench_end_to_end.py                          # 200,000 x 28 binary
    python benchmarks/bench_end_to_end.py --task multiclass --classes 5 --iters 50
    python benchmarks/bench_end_to_end.py --libs treeboost,lightgbm --threads 1
"""

from __future__ import annotations

import argparse
import os
import time
from contextlib import nullcontext

import numpy as np

LIBS = ("treeboost", "lightgbm", "xgboost", "sklearn")


def parse_args(argv=None) -> argparse.Namespace:
    """Command-line options."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", choices=("binary", "regression", "multiclass"), default="binary")
    p.add_argument("--classes", type=int, default=5, help="classes of the multiclass task")
    p.add_argument("--rows", type=int, default=200_000, help="training rows")
    p.add_argument("--test-rows", type=int, default=50_000, help="test (prediction) rows")
    p.add_argument("--features", type=int, default=28)
    p.add_argument("--iters", type=int, default=100, help="boosting rounds")
    p.add_argument("--leaves", type=int, default=31)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--bins", type=int, default=255)
    p.add_argument("--min-leaf", type=int, default=20, help="minimum rows per leaf")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--libs", default=",".join(LIBS),
                   help=f"comma-separated subset of {','.join(LIBS)}")
    p.add_argument("--warmup-rows", type=int, default=50_000,
                   help="rows of treeboost's warm-up fit (large enough for the kernels "
                        "that only run on large nodes to compile too)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    args.libs = [lib.strip() for lib in args.libs.split(",") if lib.strip()]
    unknown = set(args.libs) - set(LIBS)
    if unknown:
        p.error(f"unknown libraries {sorted(unknown)}; choose from {LIBS}")
    return args


# ---- data -------------------------------------------------------------------------
def make_data(args):
    """(X_train, y_train, X_test, y_test), float64, from one seeded generator."""
    from sklearn.datasets import make_classification, make_friedman1

    n = args.rows + args.test_rows
    if args.task == "regression":
        # Friedman #1: non-linear in 5 features, the rest are noise
        X, y = make_friedman1(n_samples=n, n_features=args.features, noise=1.0,
                              random_state=args.seed)
    else:
        n_classes = 2 if args.task == "binary" else args.classes
        n_inf = max(2, args.features // 2)
        X, y = make_classification(
            n_samples=n, n_features=args.features, n_informative=n_inf,
            n_redundant=min(args.features - n_inf, args.features // 7), n_classes=n_classes,
            n_clusters_per_class=2, flip_y=0.1, class_sep=0.5, random_state=args.seed)
    X = X.astype(np.float64)
    return X[:args.rows], y[:args.rows], X[args.rows:], y[args.rows:]


# ---- models -----------------------------------------------------------------------
def make_model(lib: str, args):
    """An estimator of ``lib`` with the parameters matched to the others."""
    clf = args.task != "regression"
    T = args.threads
    if lib == "treeboost":
        from treeboost import TreeBoostClassifier, TreeBoostRegressor

        cls = TreeBoostClassifier if clf else TreeBoostRegressor
        return cls(n_estimators=args.iters, learning_rate=args.lr, max_leaf_nodes=args.leaves,
                   max_bins=args.bins, min_samples_leaf=args.min_leaf, min_child_weight=1e-3,
                   reg_lambda=0.0, n_jobs=T, random_state=args.seed)
    if lib == "lightgbm":
        import lightgbm as lgb

        cls = lgb.LGBMClassifier if clf else lgb.LGBMRegressor
        return cls(n_estimators=args.iters, learning_rate=args.lr, num_leaves=args.leaves,
                   max_depth=-1, max_bin=args.bins, min_child_samples=args.min_leaf,
                   min_child_weight=1e-3, reg_lambda=0.0, reg_alpha=0.0, subsample=1.0,
                   colsample_bytree=1.0, n_jobs=T, random_state=args.seed, verbose=-1)
    if lib == "xgboost":
        import xgboost as xgb

        cls = xgb.XGBClassifier if clf else xgb.XGBRegressor
        # XGBoost has no row-count limit per leaf; with unit hessians (regression)
        # min_child_weight is one, elsewhere its default of 1 (as peers.py does)
        return cls(n_estimators=args.iters, learning_rate=args.lr, tree_method="hist",
                   grow_policy="lossguide", max_leaves=args.leaves, max_depth=0,
                   max_bin=args.bins, min_child_weight=1.0 if clf else float(args.min_leaf),
                   reg_lambda=0.0, reg_alpha=0.0, subsample=1.0, colsample_bytree=1.0,
                   n_jobs=T, random_state=args.seed)
    if lib == "sklearn":
        from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

        cls = HistGradientBoostingClassifier if clf else HistGradientBoostingRegressor
        return cls(max_iter=args.iters, learning_rate=args.lr, max_leaf_nodes=args.leaves,
                   max_bins=min(args.bins, 255), min_samples_leaf=args.min_leaf,
                   l2_regularization=0.0, early_stopping=False, random_state=args.seed)
    raise ValueError(lib)


def thread_limit(lib: str, threads: int):
    """scikit-learn's OpenMP loops take their thread count from threadpoolctl."""
    if lib != "sklearn":
        return nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=threads, user_api="openmp")


def predict_scores(model, task: str, X):
    """Probabilities (classification) or predictions (regression)."""
    return model.predict(X) if task == "regression" else model.predict_proba(X)


def quality(task: str, y, pred) -> dict[str, float]:
    """Test metrics: AUC/logloss, accuracy/mlogloss or RMSE/R2."""
    from sklearn.metrics import accuracy_score, log_loss, r2_score, roc_auc_score

    if task == "regression":
        return {"rmse": float(np.sqrt(np.mean((pred - y) ** 2))), "r2": float(r2_score(y, pred))}
    P = np.clip(np.asarray(pred, dtype=np.float64), 1e-15, 1.0)
    if task == "binary":
        p1 = np.clip(P[:, 1], 1e-15, 1 - 1e-15)
        return {"auc": float(roc_auc_score(y, p1)), "logloss": float(log_loss(y, p1))}
    P /= P.sum(axis=1, keepdims=True)
    return {"accuracy": float(accuracy_score(y, P.argmax(axis=1))),
            "mlogloss": float(log_loss(y, P))}


# ---- run ----------------------------------------------------------------------------
def compiled_signatures() -> dict[str, int]:
    """Signatures each treeboost kernel has compiled or loaded from cache so far."""
    import importlib
    import pkgutil

    import treeboost._kernels as kernels

    out = {}
    for info in pkgutil.iter_modules(kernels.__path__, "treeboost._kernels."):
        mod = importlib.import_module(info.name)
        for name, obj in vars(mod).items():
            if hasattr(obj, "py_func") and hasattr(obj, "signatures"):
                out[f"{info.name.rsplit('.', 1)[1]}.{name}"] = len(obj.signatures)
    return out


def newly_compiled(before: dict[str, int]) -> list[str]:
    """Kernels that gained a signature since ``before`` (compiled in a timed region)."""
    return sorted(k for k, n in compiled_signatures().items() if n > before.get(k, 0))


def warm_up(args, X, y) -> tuple[float, int]:
    """One small treeboost fit and predict so the timed fit does not compile."""
    n = min(args.warmup_rows, X.shape[0])
    model = make_model("treeboost", args).set_params(n_estimators=2)
    t0 = time.perf_counter()
    model.fit(X[:n], y[:n])
    predict_scores(model, args.task, X[:1000])
    return time.perf_counter() - t0, n


def run_one(lib: str, args, data) -> dict:
    """Fit, predict and score one library; times in seconds."""
    X_train, y_train, X_test, y_test = data
    model = make_model(lib, args)
    with thread_limit(lib, args.threads):
        t0 = time.perf_counter()
        model.fit(X_train, y_train)
        t1 = time.perf_counter()
        pred = predict_scores(model, args.task, X_test)
        t2 = time.perf_counter()
    return {"lib": lib, "fit_s": t1 - t0, "predict_s": t2 - t1,
            "load": os.getloadavg()[0], **quality(args.task, y_test, pred)}


def markdown(results: list[dict], args, warmup: tuple[float, int] | None) -> str:
    """The results as a Markdown table, with ratios to LightGBM where it ran."""
    metric = {"binary": "auc", "regression": "rmse", "multiclass": "accuracy"}[args.task]
    second = {"binary": "logloss", "regression": "r2", "multiclass": "mlogloss"}[args.task]
    ref = next((r for r in results if r["lib"] == "lightgbm"), None)

    def ratio(r, key):
        return f"{r[key] / ref[key]:.3f}" if ref and ref[key] > 0 else "-"

    lines = [
        f"task={args.task} rows={args.rows:,} test_rows={args.test_rows:,} "
        f"features={args.features} iters={args.iters} leaves={args.leaves} lr={args.lr} "
        f"bins={args.bins} min_leaf={args.min_leaf} threads={args.threads}",
        "",
        f"| library | fit s | predict s | {metric} | {second} | fit / lgb | predict / lgb "
        f"| {metric} / lgb | load |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(f"| {r['lib']} | {r['fit_s']:.2f} | {r['predict_s']:.3f} | "
                     f"{r[metric]:.5f} | {r[second]:.5f} | {ratio(r, 'fit_s')} | "
                     f"{ratio(r, 'predict_s')} | {ratio(r, metric)} | {r['load']:.1f} |")
    lines += ["", f"load: the 1-minute load average after the library's run, on "
                  f"{os.cpu_count()} cores; a load well above --threads means other "
                  f"processes shared the cores and the times (and OpenMP libraries "
                  f"most) are inflated"]
    if warmup is not None:
        lines += ["", f"treeboost warm-up (JIT compile or cache load; fit of 2 trees on "
                      f"{warmup[1]:,} rows + predict): {warmup[0]:.2f} s, not in its fit time"]
    return "\n".join(lines)


def main(argv=None) -> None:
    """Run the benchmark and print the table."""
    args = parse_args(argv)
    data = make_data(args)
    warmup = warm_up(args, data[0], data[1]) if "treeboost" in args.libs else None
    results = []
    for lib in args.libs:
        before = compiled_signatures() if lib == "treeboost" else {}
        try:
            results.append(run_one(lib, args, data))
        except ImportError as exc:  # a peer that is not installed is left out
            print(f"# {lib}: skipped ({exc})", flush=True)
            continue
        print(f"# {lib}: fit {results[-1]['fit_s']:.2f} s", flush=True)
        if lib == "treeboost" and newly_compiled(before):
            print(f"# warning: treeboost compiled {newly_compiled(before)} inside the timed "
                  f"fit; raise --warmup-rows", flush=True)
    print(markdown(results, args, warmup))


if __name__ == "__main__":
    main()
