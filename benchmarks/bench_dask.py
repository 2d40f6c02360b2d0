"""treeboost.dask side by side with lightgbm.dask and xgboost.dask on one LocalCluster.

Issue 15's figure: binary classification on ``../shared/bench/peers.py``'s HIGGS-like
generator (1,000,000 training rows x 28 features, 20% more held out for the test AUC),
100 trees, 31 leaves, learning rate 0.1, 255 bins, 20 rows a leaf, no L2 (the peer
benchmark's matched settings), on a ``LocalCluster`` of 2 worker processes x 1 thread.
The training data is a dask array of ``--partitions`` row chunks, persisted and spread
evenly over the workers before any timing. Also: local treeboost and LightGBM on the
NumPy arrays with 2 threads, for the cost of going distributed on one machine.

Every library fits once untimed (JIT caches, worker imports), then ``--rounds`` timed
fits; the table gives the median wall time of ``fit`` as the client sees it, the test
AUC, and for treeboost the collective's round trips and time per tree (every member's
``collective_stats_``: time inside operations, waiting for the slower member included).

    python benchmarks/bench_dask.py                      # the issue's setting
    python benchmarks/bench_dask.py --rows 200000 --rounds 1
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

PEERS = Path(__file__).resolve().parents[2] / "shared" / "bench"
TREES, LEAVES, LR, BINS, MIN_LEAF = 100, 31, 0.1, 255, 20


def make_data(rows, features, seed):
    sys.path.insert(0, str(PEERS))
    import peers  # noqa: E402  (the shared generator: same data as peers.py's)

    n_test = rows // 4  # 20% of all the rows, as peers.py holds out
    X, y = peers._higgs_like(rows + n_test, features, seed, 2)
    # the generator writes the rows class by class: shuffled, as peers.py does
    idx = np.random.default_rng(seed + 1).permutation(rows + n_test)
    tr, te = idx[:rows], idx[rows:]
    y = y.astype(np.float64)
    return (np.ascontiguousarray(X[tr]), y[tr], np.ascontiguousarray(X[te]), y[te])


def spread(client, X, y, partitions):
    """X, y as dask arrays of ``partitions`` row chunks, placed on the workers in turn."""
    import dask.array as da
    from distributed import wait

    workers = sorted(client.scheduler_info()["workers"])
    bounds = np.linspace(0, X.shape[0], partitions + 1).astype(int)
    xs, ys = [], []
    for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        where = [workers[i % len(workers)]]
        fx = client.scatter(X[a:b], workers=where)
        fy = client.scatter(y[a:b], workers=where)
        xs.append(da.from_delayed(fx, shape=(b - a, X.shape[1]), dtype=X.dtype))
        ys.append(da.from_delayed(fy, shape=(b - a,), dtype=y.dtype))
    Xd, yd = client.persist([da.concatenate(xs), da.concatenate(ys)])
    wait([Xd, yd])
    return Xd, yd


def dask_models(client, seed):
    """{name: a function fitting (Xd, yd) and returning a predict_proba on NumPy X}."""
    models = {}
    from treeboost.dask import DaskTreeBoostClassifier

    def fit_treeboost(Xd, yd):
        model = DaskTreeBoostClassifier(
            n_estimators=TREES, learning_rate=LR, max_leaf_nodes=LEAVES, max_bins=BINS,
            min_samples_leaf=MIN_LEAF, reg_lambda=0.0, min_child_weight=1e-3,
            random_state=seed, client=client).fit(Xd, yd)
        return model, lambda X: model.to_local().predict_proba(X)[:, 1]

    models["treeboost.dask"] = fit_treeboost
    try:
        import lightgbm as lgb

        def fit_lightgbm(Xd, yd):
            model = lgb.DaskLGBMClassifier(
                client=client, n_estimators=TREES, learning_rate=LR, num_leaves=LEAVES,
                max_bin=BINS, min_child_samples=MIN_LEAF, reg_lambda=0.0,
                random_state=seed, verbose=-1).fit(Xd, yd)
            return model, lambda X: model.to_local().predict_proba(X)[:, 1]

        models["lightgbm.dask"] = fit_lightgbm
    except ImportError:
        print("lightgbm not installed: left out", file=sys.stderr)
    try:
        import xgboost as xgb
        import xgboost.dask  # noqa: F401  (xgb.dask)

        def fit_xgboost(Xd, yd):
            model = xgb.dask.DaskXGBClassifier(
                n_estimators=TREES, learning_rate=LR, tree_method="hist",
                grow_policy="lossguide", max_leaves=LEAVES, max_depth=0, max_bin=BINS,
                min_child_weight=1.0, reg_lambda=0.0, random_state=seed)
            model.client = client
            model.fit(Xd, yd)
            booster = model.get_booster()
            return model, lambda X: booster.inplace_predict(X)

        models["xgboost.dask"] = fit_xgboost
    except ImportError:
        print("xgboost not installed: left out", file=sys.stderr)
    return models


def local_models(seed, threads):
    import treeboost as tb

    models = {f"treeboost local {threads} thr": lambda X, y: tb.TreeBoostClassifier(
        n_estimators=TREES, learning_rate=LR, max_leaf_nodes=LEAVES, max_bins=BINS,
        min_samples_leaf=MIN_LEAF, reg_lambda=0.0, min_child_weight=1e-3, n_jobs=threads,
        random_state=seed).fit(X, y)}
    try:
        import lightgbm as lgb

        models[f"lightgbm local {threads} thr"] = lambda X, y: lgb.LGBMClassifier(
            n_estimators=TREES, learning_rate=LR, num_leaves=LEAVES, max_bin=BINS,
            min_child_samples=MIN_LEAF, reg_lambda=0.0, n_jobs=threads, random_state=seed,
            verbose=-1).fit(X, y)
    except ImportError:
        pass
    return models


def timed(fn, rounds):
    """(median seconds of ``rounds`` timed calls after one untimed, the last result)."""
    result = fn()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times, result


def main():
    from distributed import Client, LocalCluster
    from sklearn.metrics import roc_auc_score

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=28)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-local", action="store_true")
    args = parser.parse_args()

    X, y, Xt, yt = make_data(args.rows, args.features, args.seed)
    print(f"binary {X.shape[0]:,} x {X.shape[1]} (test {Xt.shape[0]:,}), {TREES} trees, "
          f"{LEAVES} leaves; LocalCluster 2 workers x 1 thread, {args.partitions} "
          f"partitions; median of {args.rounds} warm fits", flush=True)
    rows = []
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        Xd, yd = spread(client, X, y, args.partitions)
        for name, fit in dask_models(client, args.seed).items():
            seconds, times, (model, proba) = timed(lambda fit=fit: fit(Xd, yd), args.rounds)
            auc = roc_auc_score(yt, proba(Xt))
            extra = ""
            if name == "treeboost.dask":
                stats = model.collective_stats_
                ops = stats[0]["operations"] / TREES
                comm = [s["seconds"] / TREES * 1e3 for s in stats]
                mb = stats[0]["allreduce_bytes"] / TREES / 1e6
                extra = (f"round trips/tree {ops:.1f}, comm ms/tree "
                         f"{' / '.join(f'{c:.1f}' for c in comm)} (rank 0 / 1), "
                         f"summed MB/tree {mb:.2f}")
            rows.append((name, seconds, auc, extra))
            print(f"{name:<24} fit {seconds:7.2f} s  ({', '.join(f'{t:.2f}' for t in times)})"
                  f"  AUC {auc:.5f}  {extra}", flush=True)
    if not args.skip_local:
        for name, fit in local_models(args.seed, 2).items():
            seconds, times, model = timed(lambda fit=fit: fit(X, y), args.rounds)
            auc = roc_auc_score(yt, model.predict_proba(Xt)[:, 1])
            rows.append((name, seconds, auc, ""))
            print(f"{name:<24} fit {seconds:7.2f} s  ({', '.join(f'{t:.2f}' for t in times)})"
                  f"  AUC {auc:.5f}", flush=True)
    base = dict((r[0], r[1]) for r in rows).get("treeboost.dask")
    if base:
        print("\nfit time / treeboost.dask's:")
        for name, seconds, _, _ in rows:
            print(f"  {name:<24} {seconds / base:5.2f}x")


if __name__ == "__main__":
    main()
