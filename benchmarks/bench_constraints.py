"""Constrained fits against LightGBM on california_housing (../shared/datasets).

Test RMSE (target in units of $100k) and fit seconds of treeboost and LightGBM with
matched parameters (tests/test_compare_peers.py's mapping), without constraints,
with house value increasing in median_income (the "basic" and "intermediate" methods
in both; treeboost's intermediate counts every leaf across a monotone split as a
neighbour, LightGBM's only those whose regions touch),
and with location features kept apart from the others by interaction constraints;
plus the monotonicity check on 1,000-point grids of median_income at 20 test rows.

    python benchmarks/bench_constraints.py [--n-estimators 200] [--seeds 0 1 2]
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

DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "california_housing.csv.gz"


def _configs(names):
    groups = [["longitude", "latitude", "ocean_proximity"],
              [n for n in names if n not in ("longitude", "latitude")]]
    return {
        "none": ({}, {}),
        "monotone": ({"monotone_constraints": {"median_income": 1}},
                     {"monotone_constraints": [int(n == "median_income") for n in names],
                      "monotone_constraints_method": "basic"}),
        "monotone-int": ({"monotone_constraints": {"median_income": 1},
                          "monotone_constraints_method": "intermediate"},
                         {"monotone_constraints": [int(n == "median_income") for n in names],
                          "monotone_constraints_method": "intermediate"}),
        "interaction": ({"interaction_constraints": groups},
                        {"interaction_constraints": [[names.index(n) for n in g]
                                                     for g in groups]}),
    }


def _grid_violations(predict, X, feature, rows):
    """Largest decrease of the prediction along a grid of ``feature`` (0: monotone)."""
    grid = np.linspace(X[feature].min(), X[feature].max(), 1000)
    worst = 0.0
    for i in rows:
        Z = X.iloc[[i] * grid.size].copy()
        Z[feature] = grid
        worst = max(worst, float(-np.diff(predict(Z)).min()))
    return worst


def main(argv=None) -> int:
    import lightgbm as lgb

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-estimators", type=int, default=200)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args(argv)
    if not DATA.exists():
        print(f"{DATA} not available", file=sys.stderr)
        return 1
    X, y = load(DATA, target="median_house_value")
    y = np.asarray(y, dtype=float) / 1e5
    names = list(X.columns)
    print(f"california_housing: {X.shape[0]} rows, {X.shape[1]} features, "
          f"{args.n_estimators} trees, 75/25 splits, seeds {args.seeds}")
    print(f"{'constraint':<13} {'seed':>4} {'RMSE ours':>10} {'RMSE lgb':>10} {'ratio':>7} "
          f"{'fit ours':>9} {'fit lgb':>8} {'max drop ours':>14} {'max drop lgb':>13}")
    for kind, (ours_kw, lgb_kw) in _configs(names).items():
        ratios = []
        for seed in args.seeds:
            train, test = train_test_split(np.arange(y.size), test_size=0.25,
                                           random_state=seed)
            t = time.perf_counter()
            ours = TreeBoostRegressor(n_estimators=args.n_estimators, random_state=seed,
                                      n_jobs=1, **ours_kw).fit(X.iloc[train], y[train])
            t_ours = time.perf_counter() - t
            t = time.perf_counter()
            theirs = lgb.LGBMRegressor(
                n_estimators=args.n_estimators, num_leaves=31, learning_rate=0.1,
                min_child_samples=20, min_child_weight=1e-3, reg_lambda=0.0, min_data_in_bin=1,
                min_data_per_group=1, cat_smooth=10.0, cat_l2=10.0, max_cat_to_onehot=16,
                n_jobs=1, verbose=-1, random_state=seed, **lgb_kw).fit(X.iloc[train], y[train])
            t_lgb = time.perf_counter() - t
            r_ours = mean_squared_error(y[test], ours.predict(X.iloc[test])) ** 0.5
            r_lgb = mean_squared_error(y[test], theirs.predict(X.iloc[test])) ** 0.5
            ratios.append(r_ours / r_lgb)
            X_test = X.iloc[test]
            d_ours = _grid_violations(ours.predict, X_test, "median_income", range(20))
            d_lgb = _grid_violations(theirs.predict, X_test, "median_income", range(20))
            print(f"{kind:<13} {seed:>4} {r_ours:>10.4f} {r_lgb:>10.4f} {r_ours / r_lgb:>7.4f} "
                  f"{t_ours:>8.2f}s {t_lgb:>7.2f}s {d_ours:>14.3g} {d_lgb:>13.3g}")
        print(f"{kind:<13} mean ratio ours/lgb {np.mean(ratios):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
