"""Predict time of treeboost next to XGBoost's, on models fitted once.

Both libraries fit the same data with matched parameters (as
``../shared/bench/peers.py``: 31 leaves, lossguide, no L2); then each model's
``predict_proba`` (``predict`` for regression) on the test rows is timed, the
median of ``--calls`` calls, at 1 and 2 threads. Fitting is the slow part, so
the fitted models are kept in ``--cache`` (a directory; off with ``--cache ''``)
and a later run with the same options only times prediction.

    python benchmarks/bench_predict.py --task binary --train 100000 --test 200000
    python benchmarks/bench_predict.py --task multiclass --classes 5 --features 20
"""

from __future__ import annotations

import argparse
import os
import pickle
import statistics
import sys
import time

import numpy as np


def make_data(task, n_rows, n_features, n_classes, seed):
    """Rows of smooth and discrete float32 features; a target that needs deep trees."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, n_features))
    X[:, 1::4] = np.exp(0.5 * X[:, 1::4])  # skewed columns
    X[:, 2::5] = np.round(X[:, 2::5])  # few-valued columns
    score = (np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + np.abs(X[:, 3]) - X[:, 4 % n_features]
             + 0.5 * rng.normal(size=n_rows))
    if task == "regression":
        y = score
    elif task == "binary":
        y = (score > np.median(score)).astype(np.int32)
    else:
        y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    return X.astype(np.float32), y


def fit_models(a, X, y):
    import xgboost as xgb

    import treeboost as tb

    clf = a.task != "regression"
    common = dict(n_estimators=a.iters, learning_rate=0.1, random_state=0)
    tb_model = (tb.TreeBoostClassifier if clf else tb.TreeBoostRegressor)(
        max_leaf_nodes=a.leaves, min_samples_leaf=20, reg_lambda=0.0, min_child_weight=1e-3,
        n_iter_no_change=None, n_jobs=2, **common).fit(X, y)
    xgb_model = (xgb.XGBClassifier if clf else xgb.XGBRegressor)(
        tree_method="hist", grow_policy="lossguide", max_leaves=a.leaves, max_depth=0,
        reg_lambda=0.0, min_child_weight=1.0 if clf else 20.0, n_jobs=2, device="cpu",
        **common).fit(X, y)
    return tb_model, xgb_model


def time_predict(fn, X, calls):
    fn(X)  # first call: compilation, caches
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn(X)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", choices=["binary", "regression", "multiclass"], default="binary")
    ap.add_argument("--classes", type=int, default=5)
    ap.add_argument("--features", type=int, default=28)
    ap.add_argument("--train", type=int, default=100_000, help="rows to fit on")
    ap.add_argument("--test", type=int, default=200_000, help="rows to predict")
    ap.add_argument("--iters", type=int, default=500)
    ap.add_argument("--leaves", type=int, default=31)
    ap.add_argument("--calls", type=int, default=5, help="timed predict calls (median)")
    ap.add_argument("--cache", default=os.path.join(os.path.dirname(__file__), ".cache"),
                    help="directory for the fitted models ('' = always refit)")
    a = ap.parse_args(argv)

    X, y = make_data(a.task, a.train + a.test, a.features, a.classes, seed=0)
    X_fit, y_fit, X_test = X[:a.train], y[:a.train], np.ascontiguousarray(X[a.train:])
    key = f"{a.task}{a.classes if a.task == 'multiclass' else ''}_{a.train}x{a.features}" \
          f"_{a.iters}x{a.leaves}.pkl"
    path = os.path.join(a.cache, key) if a.cache else None
    if path and os.path.exists(path):
        with open(path, "rb") as fh:
            tb_model, xgb_model = pickle.load(fh)
        tb_model.booster_._packed.clear()  # packed by the code of the run that pickled it
    else:
        t0 = time.perf_counter()
        tb_model, xgb_model = fit_models(a, X_fit, y_fit)
        print(f"fitted both in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        if path:
            os.makedirs(a.cache, exist_ok=True)
            with open(path, "wb") as fh:
                pickle.dump((tb_model, xgb_model), fh)

    method = "predict" if a.task == "regression" else "predict_proba"
    print(f"{a.task}: {a.test:,} rows x {a.features} predicted by {a.iters} rounds of "
          f"{a.leaves} leaves; median of {a.calls} calls; load {os.getloadavg()[0]:.2f}")
    print(f"{'threads':>7} {'treeboost s':>12} {'xgboost s':>10} {'tb/xgb':>7}")
    for n in (1, 2):
        tb_model.set_params(n_jobs=n)
        xgb_model.set_params(n_jobs=n)
        t_tb = time_predict(getattr(tb_model, method), X_test, a.calls)
        t_xgb = time_predict(getattr(xgb_model, method), X_test, a.calls)
        print(f"{n:>7} {t_tb:>12.4f} {t_xgb:>10.4f} {t_tb / t_xgb:>7.2f}")


if __name__ == "__main__":
    main()
