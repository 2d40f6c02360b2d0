"""LightGBM's learning-to-rank example: treeboost against LightGBM and XGBoost (issue 14).

The data is LightGBM's ``examples/lambdarank`` (``../shared/datasets/ranking``):
``rank.train`` (201 queries, 3,005 documents, 300 features) and ``rank.test`` (50
queries, 768 documents), relevance 0-4, query sizes in the ``.query`` files beside them.
Every library gets the same dense float64 matrices (absent svmlight entries are 0;
XGBoost would read an absent entry of a sparse matrix as missing, so none is sparse).

Parameters matched to LightGBM's lambdarank defaults: 31 leaves grown leaf-wise,
learning rate 0.1, 20 rows (and 1e-3 hessian) a leaf, no L2, 255 bins, pairs down to
rank 30, gains 2**l - 1:

- treeboost: ``TreeBoostRanker(loss)`` with ``max_leaf_nodes=31``, ``min_samples_leaf=20``;
- LightGBM: ``lightgbm.train`` with ``objective=loss``, ``num_leaves=31``,
  ``min_data_in_leaf=20``;
- XGBoost (lambdarank only): ``objective="rank:ndcg"``, ``tree_method="hist"``,
  ``grow_policy="lossguide"``, ``max_leaves=31``, ``max_depth=0``,
  ``lambdarank_pair_method="topk"`` with 30 pairs, ``reg_lambda=0``,
  ``min_child_weight=1e-3`` (XGBoost has no minimum of rows a leaf).

Two measurements:

1. **As the acceptance states it**: one model per library at 100 and 500 trees, test
   NDCG@1/3/5/10 (all by ``treeboost.metrics.ndcg_at_k``, LightGBM's definition), and
   the median fit time of ``--rounds`` fits (ratios to LightGBM: compare ratios, never
   absolute times across runs). With 50 test queries one query moves NDCG@1 by 0.02,
   so single models differ by more than the algorithms do.
2. **The spread** (``--seeds N``, default 20): N models per library, each drawing 90%
   of the features per tree (``colsample_bytree`` / ``feature_fraction`` /
   ``colsample_bytree``) with seed 0 .. N-1, so each is a slightly different but equally
   good model; the table gives the mean test NDCG@k and its standard error
   (std / sqrt(N)). Two libraries whose means differ by less than about twice the
   standard errors cannot be told apart on this test set.

Run it (a few minutes on 2 cores; ``--seeds 0`` skips the second part)::

    python benchmarks/bench_ranking_example.py
    python benchmarks/bench_ranking_example.py --objectives lambdarank,rank_xendcg --seeds 10
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "ranking"
KS = (1, 3, 5, 10)
LEAVES, LR, MIN_LEAF, TRUNCATION = 31, 0.1, 20, 30


def load(folder: Path):
    """Dense train and test matrices, labels and query sizes of the example."""
    from treeboost.datasets import read_svmlight

    X, y, group = read_svmlight(folder / "rank.train")
    Xt, yt, gt = read_svmlight(folder / "rank.test", n_features=X.shape[1])
    return X.toarray(), y, group, Xt.toarray(), yt, gt


def fit(lib: str, loss: str, X, y, group, trees: int, threads: int, seed: int = 0,
        colsample: float = 1.0):
    """A fitted model of ``lib``; returns a function scoring a matrix."""
    if lib == "treeboost":
        from treeboost import TreeBoostRanker

        model = TreeBoostRanker(loss, n_estimators=trees, learning_rate=LR,
                                max_leaf_nodes=LEAVES, min_samples_leaf=MIN_LEAF,
                                colsample_bytree=colsample, n_jobs=threads,
                                random_state=seed).fit(X, y, group=group)
        return model.predict
    if lib == "lightgbm":
        import lightgbm as lgb

        params = {"objective": loss, "num_leaves": LEAVES, "learning_rate": LR,
                  "min_data_in_leaf": MIN_LEAF, "feature_fraction": colsample,
                  "lambdarank_truncation_level": TRUNCATION, "num_threads": threads,
                  "seed": seed, "verbose": -1}
        booster = lgb.train(params, lgb.Dataset(X, y, group=group), num_boost_round=trees)
        return lambda data: booster.predict(data, raw_score=True)
    import xgboost as xgb

    params = {"objective": "rank:ndcg", "tree_method": "hist", "grow_policy": "lossguide",
              "max_leaves": LEAVES, "max_depth": 0, "eta": LR, "min_child_weight": 1e-3,
              "reg_lambda": 0.0, "lambdarank_pair_method": "topk",
              "lambdarank_num_pair_per_sample": TRUNCATION, "colsample_bytree": colsample,
              "nthread": threads, "seed": seed, "verbosity": 0}
    qid = np.repeat(np.arange(len(group)), group)
    booster = xgb.train(params, xgb.DMatrix(X, label=y, qid=qid), num_boost_round=trees)
    return lambda data: booster.inplace_predict(data, predict_type="margin")


def ndcgs(yt, scores, offsets) -> list[float]:
    """Test NDCG@k for every k of ``KS``."""
    from treeboost.metrics import ndcg_at_k

    return [ndcg_at_k(yt, scores, offsets, k) for k in KS]


def runs(args):
    """(objective, library) pairs to measure; XGBoost has lambdarank's only."""
    libs = [lib for lib in args.libs.split(",") if lib]
    for loss in args.objectives.split(","):
        for lib in libs:
            if lib == "xgboost" and loss != "lambdarank":
                continue
            yield loss, lib


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--libs", default="treeboost,lightgbm,xgboost")
    parser.add_argument("--objectives", default="lambdarank",
                        help="comma-separated: lambdarank, rank_xendcg")
    parser.add_argument("--trees", default="100,500")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    if not (args.data / "rank.train").is_file():
        parser.error(f"{args.data} has no rank.train (LightGBM's example)")
    X, y, group, Xt, yt, gt = load(args.data)
    offsets = np.concatenate(([0], np.cumsum(gt)))
    trees = [int(t) for t in args.trees.split(",")]
    print(f"train {X.shape[0]} documents / {group.size} queries, test {Xt.shape[0]} / "
          f"{gt.size}, {X.shape[1]} features; {args.threads} threads")
    for lib in {lib for _, lib in runs(args)}:  # first-call costs out of the timings
        fit(lib, "lambdarank", X[:500], y[:500], [500], 2, args.threads)

    print("\n## One model per library (the acceptance's measurement)\n")
    print("| objective | library | trees | " + " | ".join(f"NDCG@{k}" for k in KS)
          + " | fit s | fit / LightGBM |")
    print("|---|---|---|" + "---|" * len(KS) + "---|---|")
    for n in trees:
        seconds = {}
        rows = []
        for loss, lib in runs(args):
            times, scores = [], None
            for _ in range(args.rounds):
                start = time.perf_counter()
                predict = fit(lib, loss, X, y, group, n, args.threads)
                times.append(time.perf_counter() - start)
                scores = predict(Xt)
            seconds[loss, lib] = statistics.median(times)
            rows.append((loss, lib, ndcgs(yt, scores, offsets)))
        for loss, lib, values in rows:
            ref = seconds.get((loss, "lightgbm"))
            ratio = f"{seconds[loss, lib] / ref:.2f}" if ref else "-"
            print(f"| {loss} | {lib} | {n} | " + " | ".join(f"{v:.4f}" for v in values)
                  + f" | {seconds[loss, lib]:.2f} | {ratio} |")

    if args.seeds > 0:
        print(f"\n## The spread: {args.seeds} models a library (90% of the features a tree, "
              "seeds 0..N-1), mean test NDCG@k +- standard error\n")
        print("| objective | library | trees | " + " | ".join(f"NDCG@{k}" for k in KS) + " |")
        print("|---|---|---|" + "---|" * len(KS))
        for n in trees:
            for loss, lib in runs(args):
                values = np.array([ndcgs(yt, fit(lib, loss, X, y, group, n, args.threads,
                                                 seed, 0.9)(Xt), offsets)
                                   for seed in range(args.seeds)])
                mean = values.mean(axis=0)
                error = values.std(axis=0, ddof=1) / np.sqrt(args.seeds) \
                    if args.seeds > 1 else np.zeros(len(KS))
                print(f"| {loss} | {lib} | {n} | " + " | ".join(
                    f"{m:.4f} +- {e:.4f}" for m, e in zip(mean, error, strict=True)) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
