"""How far a test metric moves with the bin edges alone, treeboost next to LightGBM.

Histogram libraries pick their bin edges from a sample of the training rows
(treeboost and LightGBM 200,000 rows each, drawn with the model's seed), so one fit's
test metric carries the luck of that draw. This benchmark fits each library on the
peer benchmark's data (``peers.ensure_dataset``, matched parameters from
``peers.make_model``) for several generator seeds (``--gens``, new data) and several
``random_state`` values (``--seeds``, the same data, another bin sample), and reports:

* each fit's test metric (RMSE for regression, AUC for binary, accuracy for
  multiclass);
* per library, the spread over ``--seeds`` on each data set: how far the library
  moves against itself when only its bin sample changes;
* treeboost's metric over LightGBM's, paired by data set and seed, with the mean and
  its standard error over all pairs;
* with ``--same-bins``, every library fitted on the same bins (treeboost's
  ``BinMapper`` edges, the data given to each library as bin numbers, which every
  library then bins one value a bin): what is left of the difference when the edges
  are equal.

    python benchmarks/bench_metric_spread.py --task regression --gens 42,1,2 --seeds 42,1
    python benchmarks/bench_metric_spread.py --gens 42 --seeds 42 --same-bins
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path

from bench_cores import DEFAULT_PEERS, load_peers

HERE = Path(__file__).resolve().parent
ROWS = {"binary": 1_000_000, "regression": 500_000, "multiclass": 100_000}
FEATURES = {"binary": 28, "regression": 20, "multiclass": 20}


def metric(task: str, model, X, y) -> float:
    """RMSE (regression), AUC (binary) or accuracy (multiclass) on the test rows."""
    import numpy as np

    if task == "regression":
        return float(np.sqrt(np.mean((model.predict(X) - y) ** 2)))
    if task == "binary":
        from sklearn.metrics import roc_auc_score

        return float(roc_auc_score(y, model.predict_proba(X)[:, 1]))
    return float(np.mean(model.predict(X) == y))


def fit_one(peers, a, lib: str, seed: int, data) -> float:
    """Test metric of one library fitted with ``random_state=seed``."""
    X_train, X_test, y_train, y_test = data
    spec = {"threads": a.threads, "seed": seed, "iters": a.iters, "lr": a.lr,
            "leaves": a.leaves, "bins": a.bins, "min_leaf": a.min_leaf}
    ctor, params, _ = peers.make_model(lib, a.task, spec, a.classes)
    model = ctor(**params).fit(X_train, y_train)
    return metric(a.task, model, X_test, y_test)


def as_bins(data, seed: int, bins: int):
    """The data as treeboost's bin numbers (float32): the same edges for every library."""
    import numpy as np

    from treeboost.binning import BinMapper

    X_train, X_test, y_train, y_test = data
    mapper = BinMapper(max_bins=bins, random_state=seed).fit(X_train)
    return (mapper.transform(X_train).T.astype(np.float32),
            mapper.transform(X_test).T.astype(np.float32), y_train, y_test)


def main(argv=None) -> None:
    import numpy as np

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", choices=list(ROWS), default="regression")
    ap.add_argument("--rows", type=int, default=None, help="default: the peer task's")
    ap.add_argument("--features", type=int, default=None)
    ap.add_argument("--classes", type=int, default=5)
    ap.add_argument("--gens", default="42,1,2", help="generator seeds: data sets")
    ap.add_argument("--seeds", default="42,1", help="random_state values: bin samples")
    ap.add_argument("--libs", default="lightgbm,treeboost")
    ap.add_argument("--iters", type=int, default=500)
    ap.add_argument("--leaves", type=int, default=31)
    ap.add_argument("--bins", type=int, default=255)
    ap.add_argument("--min-leaf", type=int, default=20)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    ap.add_argument("--same-bins", action="store_true",
                    help="also fit every library on treeboost's bins (first seed's sample)")
    ap.add_argument("--peers", default=str(DEFAULT_PEERS))
    ap.add_argument("--cache-dir", default=str(HERE / ".cache"))
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    a = ap.parse_args(argv)
    a.rows = a.rows or ROWS[a.task]
    a.features = a.features or FEATURES[a.task]
    peers = load_peers(Path(a.peers))
    libs = [s for s in a.libs.split(",") if s]
    gens = [int(s) for s in a.gens.split(",")]
    seeds = [int(s) for s in a.seeds.split(",")]
    name = {"regression": "RMSE", "binary": "AUC", "multiclass": "accuracy"}[a.task]

    results = []
    for gen in gens:
        a.seed = gen
        folder, _ = peers.ensure_dataset(a, Path(a.cache_dir))
        data = tuple(np.load(folder / f"{n}.npy")
                     for n in ("X_train", "X_test", "y_train", "y_test"))
        for seed in seeds:
            for lib in libs:
                value = fit_one(peers, a, lib, seed, data)
                results.append({"gen": gen, "seed": seed, "lib": lib, "bins": "own",
                                "metric": value})
                print(f"data {gen:>3}  random_state {seed:>3}  {lib:<10} {name} {value:.5f}",
                      flush=True)
        if a.same_bins:
            binned = as_bins(data, seeds[0], a.bins)
            for lib in libs:
                value = fit_one(peers, a, lib, seeds[0], binned)
                results.append({"gen": gen, "seed": seeds[0], "lib": lib, "bins": "same",
                                "metric": value})
                print(f"data {gen:>3}  same bins         {lib:<10} {name} {value:.5f}",
                      flush=True)
    report(results, libs, gens, seeds, name)
    if a.out:
        Path(a.out).write_text(json.dumps({"args": vars(a), "results": results}, indent=1))


def report(results, libs, gens, seeds, name) -> None:
    """Spread of each library over its seeds, and treeboost over LightGBM paired."""
    own = {(r["gen"], r["seed"], r["lib"]): r["metric"] for r in results if r["bins"] == "own"}
    print(f"\n{name}: spread over random_state {seeds} (max - min, relative to the mean)")
    for lib in libs:
        spreads = []
        for gen in gens:
            values = [own[gen, s, lib] for s in seeds]
            spreads.append((max(values) - min(values)) / statistics.fmean(values))
        print(f"  {lib:<10} " + "  ".join(f"{100 * s:.2f}%" for s in spreads))
    if {"treeboost", "lightgbm"} <= set(libs):
        ratios = [own[g, s, "treeboost"] / own[g, s, "lightgbm"] - 1 for g in gens for s in seeds]
        mean = statistics.fmean(ratios)
        se = statistics.stdev(ratios) / math.sqrt(len(ratios)) if len(ratios) > 1 else math.nan
        print("treeboost / LightGBM - 1, paired: "
              + "  ".join(f"{100 * r:+.2f}%" for r in ratios))
        print(f"  mean {100 * mean:+.3f}% +- {100 * se:.3f}% (standard error, {len(ratios)} pairs)")
    same = [r for r in results if r["bins"] == "same"]
    for gen in gens:
        values = {r["lib"]: r["metric"] for r in same if r["gen"] == gen}
        if values:
            print(f"same bins, data {gen}: " + "  ".join(f"{lib} {v:.5f}"
                                                          for lib, v in values.items()))


if __name__ == "__main__":
    main()
