"""Write the frozen format-1 model fixtures of ``tests/test_model_fixtures.py``.

Run once, at commit 5d47a90 (main before the engine refactor; the ``src/`` tree of
the ``fixtures`` branch is identical to it), with treeboost 0.1.0, writing
``format_version`` 1 files. Each fixture is a model file ``<name>.json`` written by
``save_model`` and ``<name>.npz`` beside it: the inputs predicted on, every
prediction the estimator made on them, and the fitted attributes the test checks.
``README.md`` in this folder lists the fixtures and the versions that made them.

Do NOT re-run this script to "fix" a failing ``test_model_fixtures``: the files
are the record of what format-1 models predicted before the refactor, and a test
that fails means today's code loads or predicts them differently. Regenerating
them would make the test pass by forgetting what it guards. The script refuses to
overwrite an existing file; it only writes fixtures that are missing, so a new
case can be added to ``CASES`` and the script run again without touching the
others (the new files then record the code of that day, as ``README.md`` says).

Usage::

    PYTHONPATH=src python tests/data/models/make_fixtures.py

``recipe(name)`` gives a case's unfitted estimator and data without writing anything:
``tests/test_training_freeze.py`` fits every case again and checks that today's
training still gives the frozen models.

Layout of ``<name>.npz`` (no pickled objects; read with ``allow_pickle=False``):

- inputs: ``X_test`` (a float64 matrix), or ``X_csr_data``, ``X_csr_indices``,
  ``X_csr_indptr``, ``X_csr_shape`` (a CSR matrix), or ``frame_columns`` with
  ``frame_col_<j>`` per column and ``frame_cat_<j>`` for categorical columns
  (``frame_col_<j>`` then holds codes into ``frame_cat_<j>``, -1 for missing);
- ``out_<method>``: the output of ``<method>(X)`` (``out_pred_contribs`` is
  ``predict(X, pred_contribs=True)``); ``out_staged_<method>`` stacks the staged
  outputs at the 0-based stages ``staged_at``; class labels are stored as
  unicode strings and ``labels_dtype`` is the dtype ``predict`` returned them in;
- ``attr_<name>``: fitted attributes (``attr_best_iteration_`` is -1 for None,
  ``attr_evals_result_json`` is ``evals_result_`` as JSON).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import zlib
from typing import NamedTuple

import numba
import numpy as np
import pandas as pd
import scipy
import scipy.sparse as sp
import sklearn

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
# run as a script: the checkout's src/; imported (by tests/test_training_freeze.py), the
# treeboost under test is left alone and sys.path is not changed behind the test's back
if __name__ == "__main__":
    sys.path.insert(0, os.path.join(REPO, "src"))

import treeboost  # noqa: E402  (after the path insert: the checkout's code, not an install)
from treeboost import TreeBoostClassifier, TreeBoostRegressor  # noqa: E402

N_TRAIN, N_TEST, N_FEATURES = 400, 60, 6
# small trees and 63 bins keep the folder small (255 bins' edges alone are 26 kB a model;
# three fixtures keep the default); one thread is the reference the others must equal
SMALL = {"max_leaf_nodes": 8, "min_samples_leaf": 10, "max_bins": 63, "n_jobs": 1}


# ---- data ------------------------------------------------------------------------------------
def _features(seed: int, n: int, missing: float = 0.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, N_FEATURES))
    X[:, 5] = rng.integers(0, 4, n)  # a low-cardinality column: few bins, ties at the edges
    if missing:
        X[rng.random(X.shape) < missing] = np.nan
    return X


def _signal(X: np.ndarray) -> np.ndarray:
    Z = np.nan_to_num(X)
    return Z[:, 0] + np.sin(2 * Z[:, 1]) + 0.5 * Z[:, 2] * Z[:, 3] - 0.3 * Z[:, 5]


def _targets(kind: str, X: np.ndarray, seed: int) -> np.ndarray:
    """Targets of one kind for ``X`` from the common signal, with noise from ``seed``."""
    rng = np.random.default_rng(seed)
    s = _signal(X)
    if kind == "real":
        return s + 0.3 * rng.normal(size=s.size)
    if kind == "count":  # Poisson counts, many zeros
        return rng.poisson(np.exp(0.4 * s)).astype(float)
    if kind == "positive":  # gamma, strictly positive
        return rng.gamma(2.0, np.exp(0.4 * s) / 2.0)
    if kind == "tweedie":  # compound Poisson-gamma: exact zeros and a continuous tail
        n = rng.poisson(np.exp(0.3 * s))
        return np.array([rng.gamma(2.0, 0.5, k).sum() for k in n])
    noisy = s + 0.5 * rng.normal(size=s.size)
    if kind == "binary":
        return (noisy > np.median(noisy)).astype(np.int64)
    if kind == "three":  # three roughly balanced classes 0, 1, 2
        return np.digitize(noisy, np.quantile(noisy, [1 / 3, 2 / 3]))
    raise ValueError(kind)


def _odd_rows(n_features: int) -> np.ndarray:
    """Rows unlike the training data: all missing, far outside the bins, all zero."""
    return np.vstack([np.full(n_features, np.nan), np.full(n_features, 1e300),
                      np.full(n_features, -1e300), np.zeros(n_features)])


def _edge_rows(doc: dict, base: np.ndarray) -> np.ndarray:
    """Rows with features exactly at split thresholds, and one float above them.

    ``x <= threshold`` goes left: a refactor that bins with ``<`` instead, or
    compares in float32, would move exactly these rows.
    """
    pairs = sorted({(f, t) for stage in doc["trees"] for tree in stage
                    for f, t, c, lo in zip(tree["feature"], tree["threshold"],
                                           tree["is_categorical"], tree["left"], strict=True)
                    if lo >= 0 and not c})
    rows = []
    for i, (f, t) in enumerate(pairs[:: max(1, len(pairs) // 8)][:8]):
        for value in (t, np.nextafter(t, np.inf)):
            row = base[i % len(base)].copy()
            row[f] = value
            rows.append(row)
    return np.array(rows).reshape(-1, base.shape[1])


# ---- the fixtures ----------------------------------------------------------------------------
def _reg(loss: str, kind: str, **params):
    return lambda: (TreeBoostRegressor(loss=loss, **{**SMALL, **params}), kind)


def _clf(kind: str, **params):
    return lambda: (TreeBoostClassifier(**{**SMALL, **params}), kind)


# name -> (make estimator and target kind, data options)
# options: missing (fraction of NaN in X), labels (class label values), weights,
# frame (pandas categorical frame), categorical (numeric categorical column),
# sparse, shap (store pred_contribs), eval_set
CASES = {
    "reg_squared_error": (_reg("squared_error", "real", n_estimators=20, max_bins=255,
                               random_state=0),
                          {"shap": True}),
    "reg_absolute_error": (_reg("absolute_error", "real", n_estimators=20, random_state=1), {}),
    "reg_huber": (_reg("huber", "real", alpha=0.8, n_estimators=20, random_state=2), {}),
    "reg_quantile": (_reg("quantile", "real", alpha=0.25, n_estimators=20, random_state=3), {}),
    "reg_poisson": (_reg("poisson", "count", n_estimators=20, random_state=4), {}),
    "reg_gamma": (_reg("gamma", "positive", n_estimators=20, random_state=5), {}),
    "reg_tweedie": (_reg("tweedie", "tweedie", power=1.3, n_estimators=20, random_state=6), {}),
    "reg_missing_values": (_reg("squared_error", "real", n_estimators=20, max_bins=255,
                                random_state=7),
                           {"missing": 0.15, "shap": True}),
    "reg_sample_weight": (_reg("squared_error", "real", n_estimators=15, random_state=8),
                          {"weights": True}),
    "reg_regularised": (_reg("squared_error", "real", n_estimators=15, max_leaf_nodes=None,
                             max_depth=3, reg_lambda=1.0, reg_alpha=0.1, min_split_gain=0.01,
                             max_bins=16, learning_rate=0.3, random_state=9), {}),
    "reg_early_stopping": (_reg("squared_error", "real", n_estimators=60, learning_rate=0.5,
                                n_iter_no_change=3, validation_fraction=0.2,
                                random_state=10), {}),
    "reg_eval_set": (_reg("huber", "real", n_estimators=15, eval_metric="mae",
                          random_state=11), {"eval_set": True}),
    "reg_subsample_colsample": (_reg("squared_error", "real", n_estimators=20, subsample=0.7,
                                     colsample_bytree=0.8, colsample_bynode=0.7,
                                     random_state=12), {}),
    "reg_dart": (_reg("squared_error", "real", boosting="dart", n_estimators=20,
                      drop_rate=0.3, skip_drop=0.2, random_state=13), {}),
    "reg_goss": (_reg("squared_error", "real", boosting="goss", n_estimators=20,
                      learning_rate=0.2, random_state=14), {}),
    "reg_rf": (_reg("squared_error", "real", boosting="rf", n_estimators=15, subsample=0.6,
                    colsample_bynode=0.8, random_state=15), {}),
    "reg_categorical_indices": (_reg("squared_error", "real", n_estimators=15,
                                     random_state=16), {"categorical": True}),
    "reg_sparse": (_reg("squared_error", "real", n_estimators=15, random_state=17),
                   {"sparse": True}),
    "clf_binary_log_loss": (_clf("binary", n_estimators=20, max_bins=255, random_state=20),
                            {"shap": True}),
    "clf_multiclass_log_loss": (_clf("three", n_estimators=10, random_state=21),
                                {"shap": True}),
    "clf_exponential": (_clf("binary", loss="exponential", n_estimators=20, random_state=22),
                        {"labels": [-1.0, 2.0]}),
    "clf_string_labels": (_clf("three", n_estimators=10, subsample=0.8, colsample_bynode=0.7,
                               random_state=23), {"labels": ["cat", "dog", "emu"]}),
    "clf_class_weight_bool": (_clf("binary", n_estimators=15, class_weight="balanced",
                                   random_state=24), {"labels": [False, True], "weights": True,
                                                      "imbalanced": True}),
    "clf_early_stopping": (_clf("three", n_estimators=40, learning_rate=0.5,
                                n_iter_no_change=2, validation_fraction=0.2,
                                random_state=25), {"labels": ["lo", "mid", "hi"]}),
    "clf_dart_xgboost_mode": (_clf("binary", boosting="dart", xgboost_dart_mode=True,
                                   uniform_drop=True, n_estimators=15, drop_rate=0.3,
                                   skip_drop=0.2, random_state=26), {}),
    "clf_goss_multiclass": (_clf("three", boosting="goss", n_estimators=10, learning_rate=0.25,
                                 random_state=27), {}),
    "clf_rf": (_clf("binary", boosting="rf", n_estimators=15, subsample=0.6,
                    colsample_bytree=0.8, random_state=28), {}),
    "clf_pandas_categorical": (_clf("binary", n_estimators=15, max_cat_to_onehot=4,
                                    random_state=29), {"frame": True, "shap": True}),
}


def _frame(seed: int, n: int, unseen: bool) -> tuple[pd.DataFrame, np.ndarray]:
    """A frame with two ``category`` columns (6 and 25 levels) and three numeric ones.

    With ``unseen`` the categorical columns gain a category absent from training
    and some missing values, which must go where missing values go.
    """
    rng = np.random.default_rng(seed)
    small, large = list("abcdef"), [f"c{i:02d}" for i in range(25)]
    s = rng.choice(small, n)
    L = rng.choice(large, n)
    num = rng.normal(size=(n, 3))
    score = (np.isin(s, ["b", "e"]) * 1.5 + np.isin(L, large[::3]) - 0.8 * num[:, 0]
             + 0.5 * rng.normal(size=n))
    if unseen:
        s = s.astype(object)
        L = L.astype(object)
        s[::7], L[3::7] = "zz", "c99"
        s[5::11], L[1::11] = None, None
        small, large = small + ["zz"], large + ["c99"]
    frame = pd.DataFrame({"colour": pd.Categorical(s, categories=small), "x0": num[:, 0],
                          "shape": pd.Categorical(L, categories=large), "x1": num[:, 1],
                          "x2": num[:, 2]})
    return frame, (score > np.median(score)).astype(np.int64)


def _data(kind: str, opts: dict, seed: int):
    """(X_train, y_train, fit keyword arguments, X_test before the edge rows)."""
    if opts.get("frame"):
        X, y = _frame(seed, N_TRAIN, unseen=False)
        X_test, _ = _frame(seed + 1, N_TEST, unseen=True)
        return X, y, {}, X_test
    missing = opts.get("missing", 0.0)
    X = _features(seed, N_TRAIN, missing)
    # a few missing cells in every test set: the missing-value branch of models that
    # saw none in training is frozen too
    X_test = np.vstack([_features(seed + 1, N_TEST, max(missing, 0.05)),
                        _odd_rows(N_FEATURES)])
    y = _targets(kind, X, seed + 2)
    if opts.get("imbalanced"):
        y = (_signal(X) > np.quantile(_signal(X), 0.8)).astype(np.int64)
    if "labels" in opts:
        y = np.asarray(opts["labels"])[y]
    fit = {}
    if opts.get("weights"):
        w = np.random.default_rng(seed + 3).exponential(size=N_TRAIN)
        w[::17] = 0.0  # rows of weight 0 are ignored
        fit["sample_weight"] = w
    if opts.get("eval_set"):
        X_val = _features(seed + 4, 100)
        fit["eval_set"] = [(X_val, _targets(kind, X_val, seed + 5))]
    if opts.get("categorical"):
        X[:, 5] = np.random.default_rng(seed + 6).integers(0, 20, N_TRAIN)
        y = y + (X[:, 5] % 3 == 1)
        X_test[:N_TEST, 5] = np.random.default_rng(seed + 7).integers(0, 22, N_TEST)  # unseen
        fit_cat = True
    else:
        fit_cat = False
    if opts.get("sparse"):
        X[np.abs(X) < 0.8] = 0.0  # about half the entries are implicit zeros
        X_test[np.abs(X_test) < 0.8] = 0.0
        X = sp.csr_matrix(X)
    return X, y, {"fit": fit, "categorical": fit_cat}, X_test


def _outputs(est, X, shap: bool) -> dict:
    """Every prediction of ``est`` on ``X``, as arrays to store."""
    out = {"out_predict": est.predict(X)}
    staged_names = ["staged_predict"]
    if isinstance(est, TreeBoostClassifier):
        out["out_predict_proba"] = est.predict_proba(X)
        out["out_decision_function"] = est.decision_function(X)
        staged_names += ["staged_predict_proba", "staged_decision_function"]
    n = est.n_iter_
    stages = sorted({0, n // 2, n - 1})
    for method in staged_names:
        staged = list(getattr(est, method)(X))
        assert len(staged) == n, (method, len(staged), n)
        out[f"out_{method}"] = np.stack([staged[m] for m in stages])
    out["staged_at"] = np.array(stages, dtype=np.int64)
    if shap:
        out["out_pred_contribs"] = est.predict(X, pred_contribs=True)
    if isinstance(est, TreeBoostClassifier):
        out["labels_dtype"] = np.array(est.predict(X).dtype.str)
        for key in ("out_predict", "out_staged_predict"):
            out[key] = out[key].astype(str)  # object labels would need pickle
    return out


def _inputs(X) -> dict:
    if isinstance(X, pd.DataFrame):
        stored = {"frame_columns": np.array(X.columns, dtype=str)}
        for j, (_, col) in enumerate(X.items()):
            if isinstance(col.dtype, pd.CategoricalDtype):
                stored[f"frame_col_{j}"] = col.cat.codes.to_numpy(dtype=np.int64)
                stored[f"frame_cat_{j}"] = np.array(col.cat.categories, dtype=str)
            else:
                stored[f"frame_col_{j}"] = col.to_numpy(dtype=np.float64)
        return stored
    if sp.issparse(X):
        return {"X_csr_data": X.data, "X_csr_indices": X.indices, "X_csr_indptr": X.indptr,
                "X_csr_shape": np.array(X.shape, dtype=np.int64)}
    return {"X_test": np.ascontiguousarray(X, dtype=np.float64)}


def _attributes(est) -> dict:
    attrs = {"attr_n_features_in_": np.array(est.n_features_in_),
             "attr_n_iter_": np.array(est.n_iter_),
             "attr_best_iteration_": np.array(-1 if est.best_iteration_ is None
                                              else est.best_iteration_),
             "attr_evals_result_json": np.array(json.dumps(est.evals_result_)),
             "attr_feature_importances_": est.feature_importances_}
    if hasattr(est, "classes_"):
        attrs["attr_classes_"] = np.asarray(est.classes_).astype(str)
        attrs["attr_classes_dtype"] = np.array(est.classes_.dtype.str)
    if hasattr(est, "feature_names_in_"):
        attrs["attr_feature_names_in_"] = np.asarray(est.feature_names_in_, dtype=str)
    return attrs


def _git(*args) -> str:
    try:
        return subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def data_seed(name: str) -> int:
    """Seed of fixture ``name``'s data: it follows from the name, so adding a case leaves
    the others' data as it was."""
    return zlib.crc32(name.encode()) % 100_000


class Recipe(NamedTuple):
    """What fixture ``name`` is trained on, before anything is fitted or written."""

    estimator: object  # unfitted TreeBoostRegressor or TreeBoostClassifier
    X: object  # training inputs: a matrix, a CSR matrix or a DataFrame
    y: np.ndarray
    fit_kwargs: dict  # sample_weight, eval_set
    X_test: object  # the rows predicted on, before the edge rows (dense even when sparse)


def recipe(name: str, seed: int | None = None) -> Recipe:
    """The estimator and data of fixture ``name``, exactly as ``make`` fits them.

    Writes nothing: ``tests/test_training_freeze.py`` fits it again in memory.

    Parameters
    ----------
    name : str
        A key of ``CASES``.
    seed : int, optional
        Seed of the fixture's data; ``data_seed(name)``, the one ``main`` uses, if None.
    """
    make_estimator, opts = CASES[name]
    est, kind = make_estimator()
    X, y, extra, X_test = _data(kind, opts, data_seed(name) if seed is None else seed)
    if extra.get("categorical"):
        est.set_params(categorical_features=[5])
    return Recipe(est, X, y, extra.get("fit", {}), X_test)


def make(name: str, seed: int) -> dict:
    """Fit fixture ``name``, write ``<name>.json`` and ``<name>.npz``; return its summary.

    Parameters
    ----------
    name : str
        A key of ``CASES``.
    seed : int
        Seed of the fixture's data (the estimator's own seed is in ``CASES``).

    Returns
    -------
    dict
        What ``README.md`` lists about the fixture.
    """
    opts = CASES[name][1]
    est, X, y, fit_kwargs, X_test = recipe(name, seed)
    est.fit(X, y, **fit_kwargs)
    model_path = os.path.join(HERE, f"{name}.json")
    est.save_model(model_path)
    if not isinstance(X_test, pd.DataFrame):
        with open(model_path, encoding="utf-8") as f:
            doc = json.load(f)
        X_test = np.vstack([X_test, _edge_rows(doc, X_test[:N_TEST])])
        if opts.get("sparse"):
            X_test = sp.csr_matrix(X_test)
    stored = {**_inputs(X_test), **_outputs(est, X_test, opts.get("shap", False)),
              **_attributes(est),
              "meta_made_at_commit": np.array(_git("rev-parse", "--short", "HEAD")),
              "meta_treeboost_version": np.array(treeboost.__version__)}
    np.savez_compressed(os.path.join(HERE, f"{name}.npz"), **stored)
    return {"name": name, "estimator": type(est).__name__, "loss": est.loss,
            "boosting": est.boosting, "n_iter": est.n_iter_, "n_rows": X_test.shape[0],
            "outputs": sorted(k[4:] for k in stored if k.startswith("out_"))}


def main() -> None:
    """Write every fixture of ``CASES`` that is missing; never overwrite one."""
    written = []
    for name in CASES:
        paths = [os.path.join(HERE, f"{name}.{ext}") for ext in ("json", "npz")]
        if any(os.path.exists(p) for p in paths):
            print(f"{name}: exists, left alone (the fixtures are frozen)")
            continue
        written.append(make(name, seed=data_seed(name)))
        print(f"{name}: written")
    if written:
        _append_readme(written)


def _append_readme(written: list) -> None:
    path = os.path.join(HERE, "README.md")
    new = not os.path.exists(path)
    dirty = "" if _git("status", "--porcelain", "--", "src") == "" else " (src/ modified!)"
    lines = []
    if new:
        lines += ["# Frozen format-1 model files", "",
                  "Written by `make_fixtures.py` and checked by `tests/test_model_fixtures.py`:",
                  "every model must load and predict exactly the stored outputs. Do not "
                  "regenerate them;", "see the script's docstring.", ""]
    lines += [f"## Written at commit {_git('rev-parse', '--short', 'HEAD')}{dirty}", "",
              f"treeboost {treeboost.__version__}, Python {platform.python_version()}, "
              f"NumPy {np.__version__}, SciPy {scipy.__version__}, Numba {numba.__version__}, "
              f"scikit-learn {sklearn.__version__}, pandas {pd.__version__}, "
              f"{platform.machine()} {platform.system()}", "",
              "| fixture | estimator | loss | boosting | stages | rows | outputs |",
              "|---|---|---|---|---|---|---|"]
    for w in written:
        lines.append(f"| {w['name']} | {w['estimator']} | {w['loss']} | {w['boosting']} | "
                     f"{w['n_iter']} | {w['n_rows']} | {', '.join(w['outputs'])} |")
    with open(path, "a", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n\n")


if __name__ == "__main__":
    main()
