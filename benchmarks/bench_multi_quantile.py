"""Multi-quantile regression against XGBoost's ``reg:quantileerror`` (issue 37, part 3).

On real regression sets of ../shared/datasets (california_housing, cpu_act, concrete by
default; a set whose file is absent is skipped), with the levels 0.1, 0.5, 0.9 and matched
parameters (200 stages, learning rate 0.1, 31 leaves grown leaf-wise, 255 bins, no L2,
at least 20 rows per leaf), over ``--repeats`` random 60/20/20 splits
(train / calibration / test), prints per set and model:

* the mean pinball loss over the three levels on the test rows,
* the coverage of the [0.1, 0.9] band on the test rows (0.8 is the target),
* the number of test rows whose predictions cross,

for treeboost (fitted on train), XGBoost (fitted on train) and treeboost with CQR
(``calibrate`` on the calibration rows), and for the two plain models also fitted on
train + calibration (what a user without CQR would do). Acceptance (issue 37): pinball
at most XGBoost's +1 %, coverage at least as close to 0.8, zero crossings; CQR within
0.02 of 0.8.

Run: ``python benchmarks/bench_multi_quantile.py [--sets a,b] [--repeats N] [--jobs N]``.
"""

from __future__ import annotations

import argparse
import gzip
import io
from pathlib import Path

import numpy as np

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
ALPHAS = [0.1, 0.5, 0.9]


def read_arff(path: Path):
    """The numeric features and target of an ARFF file (the target last)."""
    from scipy.io import arff

    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        data, meta = arff.loadarff(io.StringIO(f.read()))
    names = meta.names()
    X = np.column_stack([data[n].astype(np.float64) for n in names[:-1]])
    return X, data[names[-1]].astype(np.float64)


def read_csv(path: Path, target: str):
    """The numeric matrix of a CSV (text columns as category codes) and its target."""
    import pandas as pd

    df = pd.read_csv(path)
    y = df.pop(target).to_numpy(dtype=np.float64)
    for col in df.columns:
        if not pd.api.types.is_numeric_dtype(df[col]):
            df[col] = df[col].astype("category").cat.codes.astype(np.float64)
    return df.to_numpy(dtype=np.float64), y


SETS = {
    "california_housing": lambda: read_csv(DATASETS / "california_housing.csv.gz",
                                           "median_house_value"),
    "cpu_act": lambda: read_arff(DATASETS / "cpu_act.arff.gz"),
    "concrete": lambda: read_csv(DATASETS / "concrete.csv", "compressive_strength"),
}
FILES = {"california_housing": "california_housing.csv.gz", "cpu_act": "cpu_act.arff.gz",
         "concrete": "concrete.csv"}


def pinball(y, pred, alphas=ALPHAS) -> float:
    """The mean over the levels of the mean pinball loss."""
    out = []
    for j, a in enumerate(alphas):
        d = y - pred[:, j]
        out.append(np.mean(np.maximum(a * d, (a - 1.0) * d)))
    return float(np.mean(out))


def coverage(y, pred) -> float:
    """The share of rows inside [lowest level, highest level]."""
    return float(np.mean((y >= pred[:, 0]) & (y <= pred[:, -1])))


def crossings(pred) -> int:
    """The rows whose predictions decrease somewhere along the levels."""
    return int(np.sum(np.any(np.diff(pred, axis=1) < 0, axis=1)))


def models(n_estimators: int, n_jobs: int, seed: int):
    """(treeboost, XGBoost) multi-quantile regressors with matched parameters."""
    import xgboost as xgb

    from treeboost import TreeBoostRegressor

    ours = TreeBoostRegressor(loss="quantile", alpha=ALPHAS, n_estimators=n_estimators,
                              learning_rate=0.1, max_leaf_nodes=31, min_samples_leaf=20,
                              max_bins=255, reg_lambda=0.0, n_jobs=n_jobs, random_state=seed)
    theirs = xgb.XGBRegressor(objective="reg:quantileerror", quantile_alpha=np.array(ALPHAS),
                              n_estimators=n_estimators, learning_rate=0.1,
                              tree_method="hist", grow_policy="lossguide", max_leaves=31,
                              max_depth=0, max_bin=255, reg_lambda=0.0, min_child_weight=20,
                              n_jobs=n_jobs, random_state=seed)
    return ours, theirs


def run_set(name: str, repeats: int, n_estimators: int, n_jobs: int) -> dict:
    """The figures of one set, averaged over ``repeats`` splits."""
    X, y = SETS[name]()
    rows = {k: [] for k in ("treeboost", "xgboost", "treeboost+cal", "xgboost+cal",
                            "treeboost CQR")}
    for r in range(repeats):
        order = np.random.default_rng(r).permutation(y.size)
        a, b = int(0.6 * y.size), int(0.8 * y.size)
        tr, cal, te = order[:a], order[a:b], order[b:]
        trcal = order[:b]
        for label, fit_rows in (("", tr), ("+cal", trcal)):
            ours, theirs = models(n_estimators, n_jobs, r)
            ours.fit(X[fit_rows], y[fit_rows])
            theirs.fit(X[fit_rows], y[fit_rows])
            for key, pred in ((f"treeboost{label}", ours.predict(X[te])),
                              (f"xgboost{label}", theirs.predict(X[te]))):
                rows[key].append((pinball(y[te], pred), coverage(y[te], pred),
                                  crossings(pred)))
            if not label:
                ours.calibrate(X[cal], y[cal])
                pred = ours.predict(X[te])
                rows["treeboost CQR"].append((pinball(y[te], pred), coverage(y[te], pred),
                                              crossings(pred)))
    return {k: (float(np.mean([v[0] for v in vals])), float(np.mean([v[1] for v in vals])),
                int(np.sum([v[2] for v in vals]))) for k, vals in rows.items()}


def main(argv=None) -> None:
    """Print the table of every set."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n-estimators", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    print(f"{'set':20s} {'model':15s} {'pinball':>10s} {'coverage':>9s} {'crossings':>9s}")
    for name in args.sets.split(","):
        if not (DATASETS / FILES[name]).is_file():
            print(f"{name:20s} skipped: {DATASETS / FILES[name]} absent")
            continue
        result = run_set(name, args.repeats, args.n_estimators, args.jobs)
        for model, (loss, cov, cross) in result.items():
            print(f"{name:20s} {model:15s} {loss:10.5g} {cov:9.4f} {cross:9d}")
        ratio = result["treeboost"][0] / result["xgboost"][0]
        print(f"{name:20s} pinball ratio treeboost / xgboost: {ratio:.4f}; "
              f"|coverage - 0.8|: treeboost {abs(result['treeboost'][1] - 0.8):.4f}, "
              f"xgboost {abs(result['xgboost'][1] - 0.8):.4f}, "
              f"CQR {abs(result['treeboost CQR'][1] - 0.8):.4f}")


if __name__ == "__main__":
    main()
