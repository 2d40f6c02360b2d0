"""Native categorical splits vs one-hot encoding vs LightGBM's native categoricals.

For every classification dataset of ../shared/datasets with categorical
features: stratified k-fold cross-validation (5 folds, seed 0; fewer folds
when a class has fewer rows), the same boosting parameters for all three,
mean test accuracy over the folds and total fit time. Prints a Markdown table.
One 80/20 split is too noisy on these small datasets to rank encodings.

    python benchmarks/bench_categorical.py [--n-estimators 100] [--folds 5] [--datasets car]

``--tb-params JSON`` lays treeboost parameters over these (a change to compare, run
beside a run without it); ``--native-only`` skips the one-hot and LightGBM fits.
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import accuracy_score
from sklearn.model_selection import KFold, StratifiedKFold

from treeboost import TreeBoostClassifier
from treeboost.datasets import load, one_hot

DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def _timed_fit(model, X, y):
    t0 = time.perf_counter()
    model.fit(X, y)
    return time.perf_counter() - t0


def run(name, path, target, args):
    """Accuracy and fit time of native, one-hot and LightGBM on one dataset."""
    X, y = load(path, target=target)
    keep = y.notna().to_numpy()
    X, y = X[keep].reset_index(drop=True), np.asarray(y[keep].astype(str))
    counts = np.unique(y, return_counts=True)[1]
    if counts.min() >= 2:
        k = int(min(args.folds, counts.min()))
        folds = list(StratifiedKFold(k, shuffle=True, random_state=0).split(X, y))
    else:  # a class with one row cannot be stratified
        folds = list(KFold(args.folds, shuffle=True, random_state=0).split(X))
    params = dict(n_estimators=args.n_estimators, learning_rate=0.1, max_leaf_nodes=31,
                  min_samples_leaf=args.min_leaf, random_state=0, **args.tb_params)
    row = {"dataset": name, "rows": len(y), "categorical": int((X.dtypes == "category").sum())}
    Xo = one_hot(X)
    try:
        import lightgbm as lgb
    except ImportError:
        lgb = None
    if args.native_only:
        lgb = None
    acc = {"native": [], "onehot": [], "lgb": []}
    secs = dict.fromkeys(acc, 0.0)
    for idx_tr, idx_te in folds:
        fits = {"native": (TreeBoostClassifier(**params), X)}
        if not args.native_only:
            fits["onehot"] = (TreeBoostClassifier(**params), Xo)
        if lgb is not None:
            fits["lgb"] = (lgb.LGBMClassifier(
                n_estimators=args.n_estimators, learning_rate=0.1, num_leaves=31,
                min_child_samples=args.min_leaf, min_data_in_bin=1, min_data_per_group=1,
                cat_smooth=10.0, cat_l2=10.0, max_cat_to_onehot=4, max_cat_threshold=32,
                reg_lambda=0.0, min_child_weight=1e-3, verbose=-1, random_state=0,
                n_jobs=2), X)
        for key, (model, data) in fits.items():
            secs[key] += _timed_fit(model, data.iloc[idx_tr], y[idx_tr])
            acc[key].append(accuracy_score(y[idx_te], model.predict(data.iloc[idx_te])))
    for key in acc:
        row[f"{key}_acc"] = float(np.mean(acc[key])) if acc[key] else float("nan")
        row[f"{key}_s"] = secs[key] if acc[key] else float("nan")
    return row


def main(argv=None):
    """Run the comparison and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-estimators", type=int, default=100)
    ap.add_argument("--min-leaf", type=int, default=5)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--datasets", default=None, help="comma-separated names (default: all)")
    ap.add_argument("--tb-params", type=json.loads, default={},
                    help="JSON object of treeboost parameters laid over the defaults")
    ap.add_argument("--native-only", action="store_true",
                    help="only treeboost's native categorical fits")
    args = ap.parse_args(argv)
    with open(DATA / "MANIFEST.tsv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh, delimiter="\t")
                if r["task"] != "regression" and int(r["n_categorical"]) > 0]
    if args.datasets:
        wanted = set(args.datasets.split(","))
        rows = [r for r in rows if r["name"] in wanted]
    TreeBoostClassifier(n_estimators=2).fit(  # compile the kernels before timing
        np.random.default_rng(0).random((60, 3)), np.arange(60) % 2)
    print("| dataset | rows | cat. | native acc | one-hot acc | LightGBM acc | native s | "
          "one-hot s | LightGBM s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    totals = np.zeros(6)
    for r in rows:
        out = run(r["name"], DATA / r["file"], r["target"], args)
        vals = [out["native_acc"], out["onehot_acc"], out["lgb_acc"], out["native_s"],
                out["onehot_s"], out["lgb_s"]]
        totals += vals
        print(f"| {out['dataset']} | {out['rows']} | {out['categorical']} | "
              + " | ".join(f"{v:.4f}" for v in vals[:3]) + " | "
              + " | ".join(f"{v:.2f}" for v in vals[3:]) + " |", flush=True)
    n = len(rows)
    print(f"| **mean** ({n}) | | | " + " | ".join(f"{v / n:.4f}" for v in totals[:3]) + " | "
          + " | ".join(f"{v:.1f}" for v in totals[3:]) + " (total) |")


if __name__ == "__main__":
    main()
