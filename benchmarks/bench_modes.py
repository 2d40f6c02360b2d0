"""Boosting modes benchmark: treeboost's gbdt, rf, dart and goss against LightGBM's.

For each dataset and mode both libraries train with matched parameters (100 rounds,
31 leaves, learning rate 0.1, 255 bins, 20 rows per leaf, no L2; rf: 70% rows and
70% columns per tree; dart: LightGBM's defaults drop_rate=0.1, skip_drop=0.5,
max_drop=50; goss: top_rate=0.2, other_rate=0.1) on the same k-fold splits, one
thread each. Reported: the mean test accuracy (classification) or RMSE (regression)
over the folds, their difference, and the mean fit time, as a Markdown table.

Datasets: scikit-learn's bundled breast_cancer, digits and diabetes, plus those of
``../shared/datasets`` listed in ``SHARED`` when the folder is there (pandas
``category`` columns are categorical for both libraries).

Known differences, by design: GOSS ranks rows by |g| (the paper; LightGBM by |g h|);
LightGBM folds F0 into its first tree, which DART may then drop and rescale, while
treeboost keeps F0 apart; the classifier caps leaf values at max_delta_step=10
(LightGBM: no cap).

    python benchmarks/bench_modes.py
    python benchmarks/bench_modes.py --folds 5 --modes dart,goss --datasets digits,segment
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

MODES = ("gbdt", "rf", "dart", "goss")
SHARED_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "datasets")
#: shared datasets used when present: file, task
SHARED = {"diabetes_pima": ("diabetes.arff", "binary"),
          "credit-g": ("credit-g.arff", "binary"),
          "segment": ("segment.arff", "multiclass"),
          "vehicle": ("vehicle.arff", "multiclass"),
          "cpu_act": ("cpu_act.arff.gz", "regression")}
COMMON = {"n_estimators": 100, "learning_rate": 0.1}


def parse_args(argv=None) -> argparse.Namespace:
    """Command-line options."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--folds", type=int, default=3)
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--datasets", default=None, help="comma-separated names (default: all)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    return args


def datasets(names=None) -> dict:
    """{name: (X, y, task)}: bundled scikit-learn data, then the shared files found."""
    from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits

    found = {"breast_cancer": (*load_breast_cancer(return_X_y=True), "binary"),
             "digits": (*load_digits(return_X_y=True), "multiclass"),
             "diabetes": (*load_diabetes(return_X_y=True), "regression")}
    if os.path.isdir(SHARED_DIR):
        from treeboost.datasets import load

        for name, (file, task) in SHARED.items():
            path = os.path.join(SHARED_DIR, file)
            if os.path.isfile(path) and (names is None or name in names):
                X, y = load(path)
                y = y.astype(str).to_numpy() if task != "regression" else y.to_numpy(float)
                found[name] = (X, y, task)
    return {k: v for k, v in found.items() if names is None or k in names}


def treeboost_model(task: str, mode: str, seed: int):
    """A treeboost estimator of ``mode`` with the benchmark's parameters."""
    from treeboost import TreeBoostClassifier, TreeBoostRegressor

    cls = TreeBoostRegressor if task == "regression" else TreeBoostClassifier
    extra = {"subsample": 0.7, "colsample_bytree": 0.7} if mode == "rf" else {}
    return cls(boosting=mode, max_leaf_nodes=31, min_samples_leaf=20, max_bins=255,
               reg_lambda=0.0, n_jobs=1, random_state=seed, **COMMON, **extra)


def lightgbm_model(task: str, mode: str, seed: int):
    """The LightGBM estimator of the same mode (LightGBM 4 names: GOSS is a sampling
    strategy of gbdt, bagging needs bagging_freq)."""
    import lightgbm

    cls = lightgbm.LGBMRegressor if task == "regression" else lightgbm.LGBMClassifier
    extra = {"boosting_type": mode}
    if mode == "rf":
        extra.update(subsample=0.7, subsample_freq=1, colsample_bytree=0.7)
    if mode == "goss":
        extra = {"boosting_type": "gbdt", "data_sample_strategy": "goss"}
    return cls(num_leaves=31, min_child_samples=20, max_bin=255, reg_lambda=0.0, n_jobs=1,
               random_state=seed, verbose=-1, **COMMON, **extra)


def score(task: str, model, X, y) -> float:
    """Accuracy, or RMSE for regression."""
    pred = model.predict(X)
    if task == "regression":
        return float(np.sqrt(np.mean((pred - y) ** 2)))
    return float(np.mean(pred == y))


def evaluate(X, y, task, mode, folds, seed) -> dict:
    """Mean score and fit time of both libraries over the same folds."""
    from sklearn.model_selection import KFold, StratifiedKFold

    splitter = (KFold if task == "regression" else StratifiedKFold)(
        folds, shuffle=True, random_state=seed)
    out = {"treeboost": ([], []), "lightgbm": ([], [])}
    take = (lambda A, i: A.iloc[i]) if hasattr(X, "iloc") else (lambda A, i: A[i])
    for train, test in splitter.split(np.zeros(len(y)), y):
        for lib, make in (("treeboost", treeboost_model), ("lightgbm", lightgbm_model)):
            model = make(task, mode, seed)
            start = time.perf_counter()
            model.fit(take(X, train), y[train])
            out[lib][1].append(time.perf_counter() - start)
            out[lib][0].append(score(task, model, take(X, test), y[test]))
    return {lib: (float(np.mean(s)), float(np.mean(t))) for lib, (s, t) in out.items()}


def warm_up() -> None:
    """Compile (or load) treeboost's kernels for every mode before timing."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 4))
    for task, y in (("binary", X[:, 0] > 0), ("multiclass", np.digitize(X[:, 0], [0, 1])),
                    ("regression", X[:, 0])):
        for mode in MODES:
            treeboost_model(task, mode, 0).set_params(n_estimators=12).fit(X, y)


def main(argv=None) -> None:
    """Run every dataset and mode; print the table."""
    args = parse_args(argv)
    names = None if args.datasets is None else set(args.datasets.split(","))
    warm_up()
    lines = ["| dataset | task | rows | mode | metric | treeboost | LightGBM | diff "
             "| treeboost fit s | LightGBM fit s |",
             "|---|---|---:|---|---|---:|---:|---:|---:|---:|"]
    for name, (X, y, task) in datasets(names).items():
        metric = "RMSE" if task == "regression" else "accuracy"
        for mode in args.modes:
            r = evaluate(X, y, task, mode, args.folds, args.seed)
            (tb, tb_t), (lg, lg_t) = r["treeboost"], r["lightgbm"]
            lines.append(f"| {name} | {task} | {len(y)} | {mode} | {metric} | {tb:.4g} "
                         f"| {lg:.4g} | {tb - lg:+.4f} | {tb_t:.3f} | {lg_t:.3f} |")
            print(lines[-1], flush=True)  # noqa: T201 - a benchmark's output is its table
    print("\n" + "\n".join(lines))  # noqa: T201


if __name__ == "__main__":
    main()
