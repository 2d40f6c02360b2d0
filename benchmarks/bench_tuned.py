"""Accuracy when every library is tuned the same way (issue 35's protocol).

Each library (treeboost, LightGBM, XGBoost; CatBoost when installed and asked for) is
tuned on each data set by the same 20-trial Optuna TPE search (sampler seeded with the
search seed) over

* learning rate in [0.01, 0.3] (log scale),
* leaves in [4, 128] (log scale; XGBoost grows loss-guided trees with ``max_leaves``),
* rows a leaf in [5, 100] (LightGBM ``min_child_samples``, XGBoost ``min_child_weight``,
  the nearest it has),
* row and column subsampling in [0.5, 1] (per tree),
* L2 on leaf values in [1e-3, 10] (log scale),

with up to 1,000 trees and each library's own early stopping (30 stages, its default
metric) on the same validation rows. The rows are split 60/20/20 (train, validation,
test; stratified for classification) with the search seed; the search maximises the
validation accuracy (classification) or R2 (regression) and the best trial's test score
is recorded. Every fit uses one thread; ``--jobs`` runs that many fits side by side.

A categorical column with more distinct values than half the rows is an identifier and
is dropped (splice's instance names spell the class: with them as codes every library
scores 1.0). Categorical columns go to treeboost and LightGBM as pandas categories (their native
handling) and to XGBoost as their integer codes (numbers), as a user of each would pass
them by default.

Results go to a JSON-lines file, one line per (set, seed, library, tag); a rerun skips
what is there, so peers are tuned once and treeboost variants (``--tag`` with
``--tb-params``, fixed parameters laid over the defaults) are compared against the same
peer results::

    python benchmarks/bench_tuned.py --seeds 0,1,2                 # every library, default sets
    python benchmarks/bench_tuned.py --libs treeboost --tag no_mds \\
        --tb-params '{"max_delta_step": null}'                      # one change, treeboost only
    python benchmarks/bench_tuned.py --report --tag no_mds          # per-set deltas

The report gives, per set, treeboost's test score minus the best tuned peer's, averaged
over the seeds with its standard error, and the mean over sets.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "datasets"
RESULTS = HERE / "results" / "tuned.jsonl"

#: the default sets: classification and regression, with and without categorical columns
DEFAULT_SETS = (
    # the seven
    "mpls_stops", "credit_data", "chicago_taxi_tip", "sylva_prior", "pendigits",
    "california_housing", "cpu_act",
    # classification, numeric
    "diabetes", "vehicle", "segment", "page-blocks",
    # classification, categorical
    "credit-g", "cmc", "hpc_data", "sick", "splice",
    # regression
    "concrete", "ames_housing", "stock", "autoMpg",
)
PEERS = ("lightgbm", "xgboost")
TRIALS = 20
MAX_TREES = 1000
PATIENCE = 30


def manifest(folder: Path) -> dict:
    """MANIFEST.tsv rows by set name."""
    import csv

    with open(folder / "MANIFEST.tsv", newline="") as f:
        return {row["name"]: row for row in csv.DictReader(f, delimiter="\t")}


def load_set(folder: Path, name: str):
    """Features (frame, categorical columns as pandas categories), target, task."""
    import pandas as pd

    from treeboost.datasets import load

    row = manifest(folder)[name]
    X, y = load(folder / row["file"], target=row["target"])
    keep = ~pd.isna(np.asarray(y, dtype=object))
    X, y = X[keep].reset_index(drop=True), y[keep].reset_index(drop=True)
    # a per-row name (splice's instance names, "ATRINS-DONOR-521", which spell the class)
    # is an identifier a user drops, not a feature
    ids = [c for c in X.columns
           if str(X[c].dtype) == "category" and X[c].nunique() > len(X) // 2]
    X = X.drop(columns=ids)
    task = "regression" if row["task"] == "regression" else "classification"
    if task == "regression":
        y = np.asarray(y, dtype=np.float64)
    else:
        y = np.unique(np.asarray(y).astype(str), return_inverse=True)[1].astype(np.int64)
    return X, y, task


def split(y, task: str, seed: int):
    """Train, validation and test row indices, 60/20/20, stratified when the classes allow."""
    from sklearn.model_selection import train_test_split

    rows = np.arange(len(y))
    strat = y if task == "classification" and np.bincount(y).min(initial=5) >= 5 else None
    if strat is not None and np.any(np.bincount(y) == 0):
        strat = None
    train, rest = train_test_split(rows, test_size=0.4, random_state=seed, stratify=strat)
    strat_rest = y[rest] if strat is not None else None
    valid, test = train_test_split(rest, test_size=0.5, random_state=seed, stratify=strat_rest)
    return train, valid, test


def score(task: str, y, pred) -> float:
    """Accuracy (classification) or R2 (regression)."""
    if task == "classification":
        return float(np.mean(np.asarray(pred) == y))
    from sklearn.metrics import r2_score

    return float(r2_score(y, pred))


def rows_of(X, rows):
    """Rows of a frame, index reset."""
    return X.iloc[rows].reset_index(drop=True)


def codes(X):
    """``X`` with each categorical column replaced by its integer codes (NaN for missing)."""
    out = X.copy()
    for c in out.columns:
        if str(out[c].dtype) == "category":
            out[c] = out[c].cat.codes.astype(np.float64).replace(-1.0, np.nan)
    return out


def fit_predict(lib: str, task: str, n_classes: int, params: dict, fixed: dict, data):
    """Fit one library with early stopping on the validation rows; predict valid and test."""
    X_tr, y_tr, X_va, y_va, X_te = data
    lr, leaves, min_leaf = params["learning_rate"], params["leaves"], params["min_leaf"]
    sub, col, l2 = params["subsample"], params["colsample"], params["l2"]
    seed = params["seed"]
    if lib == "treeboost":
        import treeboost

        fixed = dict(fixed)
        if fixed.pop("_cat_codes", False):  # categories as their integer codes, as XGBoost's
            X_tr, X_va, X_te = codes(X_tr), codes(X_va), codes(X_te)
        kw = dict(n_estimators=MAX_TREES, learning_rate=lr, max_leaf_nodes=leaves,
                  min_samples_leaf=min_leaf, subsample=sub, colsample_bytree=col,
                  reg_lambda=l2, n_iter_no_change=PATIENCE, n_jobs=1, random_state=seed)
        kw.update(fixed)
        cls = treeboost.TreeBoostClassifier if task == "classification" \
            else treeboost.TreeBoostRegressor
        model = cls(**kw).fit(X_tr, y_tr, eval_set=[(X_va, y_va)])
        return model.predict(X_va), model.predict(X_te), int(model.n_iter_)
    if lib == "lightgbm":
        import lightgbm as lgb

        kw = dict(n_estimators=MAX_TREES, learning_rate=lr, num_leaves=leaves,
                  min_child_samples=min_leaf, subsample=sub, subsample_freq=1,
                  colsample_bytree=col, reg_lambda=l2, n_jobs=1, random_state=seed,
                  verbose=-1)
        cls = lgb.LGBMClassifier if task == "classification" else lgb.LGBMRegressor
        model = cls(**kw).fit(X_tr, y_tr, eval_set=[(X_va, y_va)],
                              callbacks=[lgb.early_stopping(PATIENCE, verbose=False)])
        return model.predict(X_va), model.predict(X_te), int(model.best_iteration_ or MAX_TREES)
    if lib == "xgboost":
        import xgboost as xgb

        kw = dict(n_estimators=MAX_TREES, learning_rate=lr, max_leaves=leaves, max_depth=0,
                  grow_policy="lossguide", min_child_weight=min_leaf, subsample=sub,
                  colsample_bytree=col, reg_lambda=l2, n_jobs=1, random_state=seed,
                  tree_method="hist", early_stopping_rounds=PATIENCE)
        if task == "classification":
            # every class of the data (a rare one may miss the training rows)
            kw.update(objective="binary:logistic" if n_classes == 2 else "multi:softprob")
            if n_classes > 2:
                kw["num_class"] = n_classes
            model = xgb.XGBModel(**kw).fit(codes(X_tr), y_tr, eval_set=[(codes(X_va), y_va)],
                                           verbose=False)

            def predict(X):
                p = model.predict(codes(X), iteration_range=(0, model.best_iteration + 1))
                return (p > 0.5).astype(np.int64) if p.ndim == 1 else p.argmax(axis=1)
        else:
            model = xgb.XGBRegressor(**kw).fit(codes(X_tr), y_tr,
                                               eval_set=[(codes(X_va), y_va)], verbose=False)

            def predict(X):
                return model.predict(codes(X), iteration_range=(0, model.best_iteration + 1))
        return predict(X_va), predict(X_te), int(model.best_iteration + 1)
    if lib == "catboost":
        import catboost as cb

        cats = [c for c in X_tr.columns if str(X_tr[c].dtype) == "category"]

        def frame(X):
            out = X.copy()
            for c in cats:
                out[c] = out[c].astype(str)
            return out

        kw = dict(iterations=MAX_TREES, learning_rate=lr, max_leaves=leaves,
                  grow_policy="Lossguide", min_data_in_leaf=min_leaf, subsample=sub,
                  bootstrap_type="Bernoulli", rsm=col, l2_leaf_reg=l2, thread_count=1,
                  random_seed=seed, early_stopping_rounds=PATIENCE, verbose=False,
                  cat_features=cats)
        cls = cb.CatBoostClassifier if task == "classification" else cb.CatBoostRegressor
        model = cls(**kw).fit(frame(X_tr), y_tr, eval_set=(frame(X_va), y_va))
        pv, pt = model.predict(frame(X_va)), model.predict(frame(X_te))
        return np.ravel(pv), np.ravel(pt), int(model.get_best_iteration() + 1)
    raise ValueError(f"--libs: unknown library {lib!r}")


def fold(folder: str, name: str, seed: int):
    """One set's split for ``seed``: labels, task, class count, validation and test rows,
    and the ``fit_predict`` data tuple."""
    X, y, task = load_set(Path(folder), name)
    n_classes = int(y.max()) + 1 if task == "classification" else 0
    train, valid, test = split(y, task, seed)
    data = (rows_of(X, train), y[train], rows_of(X, valid), y[valid], rows_of(X, test))
    return y, task, n_classes, valid, test, data


def tune(folder: str, name: str, seed: int, lib: str, tag: str, fixed: dict,
         trials: int) -> dict:
    """One (set, seed, library) search; the best trial's record."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore")
    y, task, n_classes, valid, test, data = fold(folder, name, seed)
    tests = {}
    start = time.perf_counter()

    def objective(trial):
        params = {
            "learning_rate": trial.suggest_float("learning_rate", 0.01, 0.3, log=True),
            "leaves": trial.suggest_int("leaves", 4, 128, log=True),
            "min_leaf": trial.suggest_int("min_leaf", 5, 100, log=True),
            "subsample": trial.suggest_float("subsample", 0.5, 1.0),
            "colsample": trial.suggest_float("colsample", 0.5, 1.0),
            "l2": trial.suggest_float("l2", 1e-3, 10.0, log=True),
            "seed": seed,
        }
        pv, pt, trees = fit_predict(lib, task, n_classes, params, fixed, data)
        tests[trial.number] = (score(task, y[test], pt), trees)
        return score(task, y[valid], pv)

    study = optuna.create_study(direction="maximize",
                                sampler=optuna.samplers.TPESampler(seed=seed))
    study.optimize(objective, n_trials=trials)
    best = study.best_trial
    return {"set": name, "seed": seed, "lib": lib, "tag": tag if lib == "treeboost" else "",
            "task": task, "trials": trials, "valid": best.value,
            "test": tests[best.number][0], "trees": tests[best.number][1],
            "params": best.params, "fixed": fixed if lib == "treeboost" else {},
            "seconds": round(time.perf_counter() - start, 2)}


def draw_configs(n: int, seed: int) -> list[dict]:
    """``n`` points of the search space drawn at random (log scales as the search's)."""
    rng = np.random.default_rng(1000 + seed)

    def log_uniform(lo, hi):
        return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))

    return [{"learning_rate": log_uniform(0.01, 0.3),
             "leaves": int(round(log_uniform(4, 128))),
             "min_leaf": int(round(log_uniform(5, 100))),
             "subsample": float(rng.uniform(0.5, 1.0)),
             "colsample": float(rng.uniform(0.5, 1.0)),
             "l2": log_uniform(1e-3, 10.0), "seed": seed} for _ in range(n)]


def paired(folder: str, name: str, seed: int, lib: str, tag: str, fixed: dict,
           n: int) -> dict:
    """Every library at the same ``n`` random configurations: scores without the search."""
    warnings.filterwarnings("ignore")
    y, task, n_classes, valid, test, data = fold(folder, name, seed)
    start = time.perf_counter()
    valids, tests = [], []
    for params in draw_configs(n, seed):
        pv, pt, _ = fit_predict(lib, task, n_classes, params, fixed, data)
        valids.append(score(task, y[valid], pv))
        tests.append(score(task, y[test], pt))
    return {"set": name, "seed": seed, "lib": lib, "tag": tag if lib == "treeboost" else "",
            "task": task, "paired": n, "valid": valids, "test": tests,
            "fixed": fixed if lib == "treeboost" else {},
            "seconds": round(time.perf_counter() - start, 2)}


def report_paired(records: list[dict], tag: str, sets=None, file=sys.stdout) -> None:
    """Per set: treeboost (``tag``) minus each peer at the same configurations."""
    by = {}
    for r in records:
        if "paired" not in r or (r["lib"] == "treeboost" and r["tag"] != tag):
            continue
        by.setdefault((r["set"], r["seed"]), {})[r["lib"]] = np.asarray(r["test"])
    names = sorted({s for s, _ in by} if sets is None else sets)
    print(f"| set | configs | treeboost ({tag}) - lightgbm | s.e. | - xgboost | s.e. |",
          file=file)
    print("|---|---|---|---|---|---|", file=file)
    for name in names:
        cells = []
        for peer in ("lightgbm", "xgboost"):
            d = [by[k]["treeboost"] - by[k][peer] for k in by
                 if k[0] == name and "treeboost" in by[k] and peer in by[k]]
            d = np.concatenate(d) if d else np.empty(0)
            cells.append(f"{d.mean():+.4f} | {d.std(ddof=1) / math.sqrt(d.size):.4f}"
                         if d.size > 1 else "- | -")
        n = sum(by[k]["treeboost"].size for k in by if k[0] == name and "treeboost" in by[k])
        if n:
            print(f"| {name} | {n} | " + " | ".join(cells) + " |", file=file)


def read_results(path: Path) -> list[dict]:
    """Every record of a results file (none when it does not exist)."""
    if not path.exists():
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def _deltas(by: dict, name: str, seeds: list, lib: str, rivals) -> tuple:
    """``lib``'s per-seed deltas on ``name`` to the best of ``rivals``: to the better one of
    each seed, and to the one with the best mean over the seeds."""
    per_seed = [by[name, s][lib] - max(by[name, s][p] for p in rivals) for s in seeds]
    best = max(rivals, key=lambda p: np.mean([by[name, s][p] for s in seeds]))
    by_mean = [by[name, s][lib] - by[name, s][best] for s in seeds]
    return per_seed, by_mean


def _mean_se(d) -> tuple:
    """Mean and standard error of the mean."""
    se = float(np.std(d, ddof=1) / math.sqrt(len(d))) if len(d) > 1 else 0.0
    return float(np.mean(d)), se


def report(records: list[dict], tag: str, sets=None, peers=PEERS, file=sys.stdout) -> dict:
    """Per set: treeboost (``tag``) minus the best peer, mean over seeds and its standard error.

    ``tag`` may name several variants, separated by commas: a set's seed is read from the
    first that has it (a variant that cannot change some sets' models, such as a
    classifier's default on regression data, need not be rerun on them).

    The best peer is taken two ways: the better peer of each seed (``delta``), and the peer
    with the better mean over the seeds (``delta_by_mean``). The first is biased against
    any library on a noisy set, since the mean of a maximum exceeds the maximum of the
    means; the summary scores each peer the same ways against the other libraries
    (treeboost among them), which shows how large that bias is.
    """
    tags = tag.split(",")
    by, rank = {}, {}
    for r in records:
        if "paired" in r:
            continue
        key = (r["set"], r["seed"])
        if r["lib"] == "treeboost":
            # the first of the tags with a record of this set and seed
            position = tags.index(r["tag"]) if r["tag"] in tags else len(tags)
            if position < rank.get(key, len(tags)):
                rank[key] = position
                by.setdefault(key, {})["treeboost"] = r["test"]
        elif r["lib"] in peers:
            by.setdefault(key, {})[r["lib"]] = r["test"]
    names = sorted({s for s, _ in by} if sets is None else sets)
    libs = ("treeboost", *peers)
    print(f"| set | seeds | treeboost ({tag}) | " + " | ".join(peers)
          + " | delta to best peer (each seed) | s.e. | delta to best peer (by mean) | s.e. | "
          + " | ".join(f"vs {p}" for p in peers) + " |", file=file)
    print("|---" * (2 * len(peers) + 7) + "|", file=file)
    rows = {}
    for name in names:
        seeds = sorted(s for (n, s), v in by.items() if n == name and all(p in v for p in libs))
        if not seeds:
            continue
        cols = [float(np.mean([by[name, s][lib] for s in seeds])) for lib in libs]
        rows[name] = {"seeds": len(seeds), "scores": cols,
                      "each": [cols[0] - c for c in cols[1:]]}
        for lib in libs:
            per_seed, by_mean = _deltas(by, name, seeds, lib, [p for p in libs if p != lib])
            rows[name][lib] = (_mean_se(per_seed), _mean_se(by_mean))
        (mean, se), (mean_m, se_m) = rows[name]["treeboost"]
        rows[name].update(delta=mean, se=se, delta_by_mean=mean_m, se_by_mean=se_m)
        flags = ["**below 2 s.e.**" if m < 0 and m < -2 * e else ""
                 for m, e in ((mean, se), (mean_m, se_m))]
        print(f"| {name} | {len(seeds)} | " + " | ".join(f"{c:.4f}" for c in cols)
              + f" | {mean:+.4f} {flags[0]} | {se:.4f} | {mean_m:+.4f} {flags[1]} | {se_m:.4f} | "
              + " | ".join(f"{d:+.4f}" for d in rows[name]["each"]) + " |", file=file)
    if rows:
        print(f"\nover {len(rows)} sets: " + ", ".join(
            f"vs {p} {np.mean([r['each'][i] for r in rows.values()]):+.4f}"
            for i, p in enumerate(peers)), file=file)
        for lib in libs:
            parts = []
            for j, how in enumerate(("each seed", "by mean")):
                ds = [r[lib][j] for r in rows.values()]
                parts.append(f"{how} {np.mean([m for m, _ in ds]):+.4f} (worst "
                             f"{min(m for m, _ in ds):+.4f}, below 2 s.e.: "
                             f"{sum(1 for m, e in ds if m < 0 and m < -2 * e)})")
            who = f"treeboost ({tag})" if lib == "treeboost" else lib
            print(f"{who} minus the best of the others: " + "; ".join(parts), file=file)
    return rows


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--sets", default=",".join(DEFAULT_SETS))
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--libs", default="treeboost," + ",".join(PEERS))
    p.add_argument("--trials", type=int, default=TRIALS)
    p.add_argument("--tag", default="default",
                   help="name of the treeboost variant (--report: several, comma-separated, "
                        "each set's seeds read from the first that has them)")
    p.add_argument("--tb-params", default="{}",
                   help="JSON object of treeboost parameters fixed over its defaults")
    p.add_argument("--jobs", type=int, default=2, help="fits side by side (each one thread)")
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument("--report", action="store_true", help="only print the report")
    p.add_argument("--paired", type=int, default=0, metavar="N",
                   help="instead of searching, fit every library at the same N random "
                        "configurations (a diagnosis with less noise than the search's)")
    a = p.parse_args(argv)
    sets = [s for s in a.sets.split(",") if s]
    if not (a.data / "MANIFEST.tsv").exists():
        sys.exit(f"--data: no MANIFEST.tsv in {a.data}")
    if a.report:
        (report_paired if a.paired else report)(read_results(a.out), a.tag, sets)
        return
    fixed = json.loads(a.tb_params)
    known = manifest(a.data)
    unknown = [s for s in sets if s not in known]
    if unknown:
        sys.exit(f"--sets: not in {a.data}/MANIFEST.tsv: {', '.join(unknown)}")
    done = {(r["set"], r["seed"], r["lib"], r["tag"]) for r in read_results(a.out)
            if bool(r.get("paired")) == bool(a.paired)}
    units = [(s, seed, lib) for s in sets for seed in map(int, a.seeds.split(","))
             for lib in a.libs.split(",")
             if (s, seed, lib, a.tag if lib == "treeboost" else "") not in done]
    # the biggest sets first, so the last minutes are not one long search alone
    rows = {s: int(known[s]["n_rows"]) * max(1, int(known[s]["n_features"])) for s in sets}
    units.sort(key=lambda u: -rows[u[0]])
    a.out.parent.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    with ProcessPoolExecutor(a.jobs) as pool:
        job, n = (paired, a.paired) if a.paired else (tune, a.trials)
        futures = {pool.submit(job, str(a.data), s, seed, lib, a.tag, fixed, n):
                   (s, seed, lib) for s, seed, lib in units}
        for fut in as_completed(futures):
            rec = fut.result()
            with open(a.out, "a") as f:
                f.write(json.dumps(rec) + "\n")
            test = np.mean(rec["test"])
            print(f"{rec['set']:>20} seed {rec['seed']} {rec['lib']:>9} {rec['tag']:>8}: "
                  f"test {test:.4f} ({rec['seconds']:.0f} s)", flush=True)
    (report_paired if a.paired else report)(read_results(a.out), a.tag, sets)


if __name__ == "__main__":
    main()
