"""Constrained fits against LightGBM on regression datasets of ../shared/datasets.

Test RMSE and fit seconds of treeboost and LightGBM with matched parameters
(tests/test_compare_peers.py's mapping), without constraints and with a plausible
monotone constraint on each dataset, by both methods ("basic" and "intermediate";
treeboost's intermediate counts every leaf across a monotone split as a neighbour,
LightGBM's only those whose regions touch): house value rising with income
(california_housing) and with living area (ames_housing), concrete strength rising
with cement and age (concrete), fuel economy falling with weight (autoMpg). On
california_housing also location features kept apart from the others by
interaction constraints. Plus the monotonicity check on 1,000-point grids of each
constrained feature at 20 test rows (the largest drop; 0 is monotone).

    python benchmarks/bench_constraints.py [--n-estimators 200] [--seeds 0 1 2 3 4]
        [--only california_housing ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import mean_squared_error
from sklearn.model_selection import train_test_split

from treeboost import TreeBoostRegressor
from treeboost.datasets import load

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
#: name: (file, target, target scale, monotone constraints by column name)
CASES = {
    "california_housing": ("california_housing.csv.gz", "median_house_value", 1e5,
                           {"median_income": 1}),
    "ames_housing": ("ames_housing.csv.gz", "Sale_Price", 1e5, {"Gr_Liv_Area": 1}),
    "concrete": ("concrete.csv", "compressive_strength", 1.0, {"cement": 1, "age": 1}),
    "autoMpg": ("autoMpg.arff", "class", 1.0, {"weight": -1}),
}


def _configs(names, monotone, interaction):
    directions = [monotone.get(n, 0) for n in names]
    configs = {"none": ({}, {})}
    for method in ("basic", "intermediate"):
        configs[method] = ({"monotone_constraints": monotone,
                            "monotone_constraints_method": method},
                           {"monotone_constraints": directions,
                            "monotone_constraints_method": method})
    if interaction:  # location apart from the rest
        groups = [["longitude", "latitude", "ocean_proximity"],
                  [n for n in names if n not in ("longitude", "latitude")]]
        configs["interaction"] = ({"interaction_constraints": groups},
                                  {"interaction_constraints": [[names.index(n) for n in g]
                                                               for g in groups]})
    return configs


def _grid_violations(predict, X, feature, direction, rows):
    """Largest move of the prediction against ``direction`` along a grid of ``feature``."""
    grid = np.linspace(X[feature].min(), X[feature].max(), 1000)
    worst = 0.0
    for i in rows:
        Z = X.iloc[[i] * grid.size].copy()
        Z[feature] = grid
        worst = max(worst, float(-(direction * np.diff(predict(Z))).min()))
    return worst


def run_case(name, n_estimators, seeds) -> None:
    """Print one line per (constraint, seed) and the mean ratio per constraint."""
    import lightgbm as lgb

    file, target, scale, monotone = CASES[name]
    X, y = load(DATASETS / file, target=target)
    y = np.asarray(y, dtype=float) / scale
    names = list(X.columns)
    print(f"\n{name}: {X.shape[0]} rows, {X.shape[1]} features, {n_estimators} trees, "
          f"75/25 splits, seeds {seeds}, monotone {monotone}")
    print(f"{'constraint':<13} {'seed':>4} {'RMSE ours':>10} {'RMSE lgb':>10} {'ratio':>7} "
          f"{'fit ours':>9} {'fit lgb':>8} {'max drop ours':>14} {'max drop lgb':>13}")
    configs = _configs(names, monotone, name == "california_housing")
    for kind, (ours_kw, lgb_kw) in configs.items():
        ratios = []
        for seed in seeds:
            train, test = train_test_split(np.arange(y.size), test_size=0.25,
                                           random_state=seed)
            t = time.perf_counter()
            ours = TreeBoostRegressor(n_estimators=n_estimators, random_state=seed,
                                      n_jobs=1, **ours_kw).fit(X.iloc[train], y[train])
            t_ours = time.perf_counter() - t
            t = time.perf_counter()
            theirs = lgb.LGBMRegressor(
                n_estimators=n_estimators, num_leaves=31, learning_rate=0.1,
                min_child_samples=20, min_child_weight=1e-3, reg_lambda=0.0, min_data_in_bin=1,
                min_data_per_group=1, cat_smooth=10.0, cat_l2=10.0, max_cat_to_onehot=16,
                n_jobs=1, verbose=-1, random_state=seed, **lgb_kw).fit(X.iloc[train], y[train])
            t_lgb = time.perf_counter() - t
            r_ours = mean_squared_error(y[test], ours.predict(X.iloc[test])) ** 0.5
            r_lgb = mean_squared_error(y[test], theirs.predict(X.iloc[test])) ** 0.5
            ratios.append(r_ours / r_lgb)
            X_test = X.iloc[test]
            d_ours = max(_grid_violations(ours.predict, X_test, f, d, range(20))
                         for f, d in monotone.items())
            d_lgb = max(_grid_violations(theirs.predict, X_test, f, d, range(20))
                        for f, d in monotone.items())
            print(f"{kind:<13} {seed:>4} {r_ours:>10.4f} {r_lgb:>10.4f} {r_ours / r_lgb:>7.4f} "
                  f"{t_ours:>8.2f}s {t_lgb:>7.2f}s {d_ours:>14.3g} {d_lgb:>13.3g}")
        print(f"{kind:<13} mean ratio ours/lgb {np.mean(ratios):.4f}")


def main(argv=None) -> int:
    """Run the comparison on every case (or ``--only`` some) found in ../shared/datasets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-estimators", type=int, default=200)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--only", nargs="+", default=list(CASES), choices=list(CASES))
    args = parser.parse_args(argv)
    found = [n for n in args.only if (DATASETS / CASES[n][0]).exists()]
    if not found:
        print(f"none of {args.only} in {DATASETS}", file=sys.stderr)
        return 1
    for name in found:
        run_case(name, args.n_estimators, args.seeds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
