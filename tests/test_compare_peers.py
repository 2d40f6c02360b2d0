"""treeboost against LightGBM with matched parameters (issue acceptance 4).

Two kinds of checks:

* **Test metric** on scikit-learn's bundled data sets and on real numeric data sets
  from ``../shared/datasets``: AUC (binary), accuracy (multiclass) and RMSE
  (regression) on held-out rows. The comparison is one-sided: *treeboost is no
  worse than LightGBM by more than 0.5 %* (``ours >= lgb * (1 - 0.005)`` for AUC and
  accuracy, ``ours <= lgb * 1.005`` for RMSE). Being better is never a failure.
* **One tree** (scikit-learn's ``test_compare_lightgbm``): on integer features that
  both libraries bin exactly, one iteration with learning rate 1 must give the
  same predictions for > 99 % of the rows.

Matched parameters (the mapping lives here, not in the library: no aliases):
``max_leaf_nodes=num_leaves``, ``learning_rate``, ``min_samples_leaf=
min_child_samples``, ``max_bins=max_bin``, ``min_child_weight`` 1e-3 in both,
``reg_lambda=0``, no bagging or column sampling, same ``n_estimators``. LightGBM's
``min_data_in_bin`` is set to 1: treeboost gives every distinct value its own bin
when a feature has at most ``max_bins`` of them (exact CART on small data), and
LightGBM's default of 3 merges rare values into coarser bins. That merge
regularises tiny data sets: on diabetes (353 training rows per fold) treeboost's
RMSE is 1.55 % above LightGBM's with the default and 0.23 % above with
``min_data_in_bin=1``. Elsewhere the setting moves LightGBM's metric by 0.3 % or
less, except on concrete (1,030 rows) where LightGBM's default is 0.9 % worse.
"""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import numpy as np
import pytest
from sklearn import datasets as sk_datasets
from sklearn.metrics import accuracy_score, mean_squared_error, roc_auc_score
from sklearn.model_selection import (
    RepeatedKFold,
    RepeatedStratifiedKFold,
    train_test_split,
)
from sklearn.preprocessing import LabelEncoder

from treeboost import TreeBoostClassifier, TreeBoostRegressor

lgb = pytest.importorskip("lightgbm")

# a minute or more of fits on real data: CI runs these as a step of its own (`make test-slow`)
pytestmark = pytest.mark.slow

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"

#: treeboost may be at most 0.5 % worse than LightGBM (issue acceptance 4)
REL_TOL = 0.005
#: one thread in both libraries: the test machines are shared 2-core boxes where
#: a second thread of either library mostly waits for a busy core (treeboost's
#: model does not depend on n_jobs, see test_determinism)
N_JOBS = 1
SEED = 0


# ---- data --------------------------------------------------------------------------
# A small ARFF reader for the numeric data sets used here. The project's own ARFF
# loader (treeboost.datasets.arff) comes in a later issue; this one only has to
# cope with the quirks of these files (gzip, blanks after commas in the data section).
def _read_arff(path: Path) -> tuple[np.ndarray, np.ndarray]:
    from scipy.io import arff

    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        text = f.read()
    lower = text.lower()
    at = lower.index("@data")
    header, body = text[:at], text[at:]
    # pendigits writes "47,100, 27": scipy keeps the blanks and rejects " 8" as a
    # nominal class. These files have no quoted values, so stripping is safe.
    body = "\n".join(",".join(tok.strip() for tok in line.split(","))
                     for line in body.splitlines())
    data, meta = arff.loadarff(io.StringIO(header + body))
    names = meta.names()
    types = meta.types()
    assert all(t == "numeric" for t in types[:-1]), f"{path.name} has nominal features"
    X = np.column_stack([data[n].astype(np.float64) for n in names[:-1]])
    y = data[names[-1]]
    if types[-1] == "nominal":  # class labels 0 .. K-1
        return X, LabelEncoder().fit_transform(y.astype(str))
    return X, y.astype(np.float64)


def _read_csv(path: Path, target: str) -> tuple[np.ndarray, np.ndarray]:
    """Numeric matrix from a CSV; text columns ordinal-encoded, empty fields NaN."""
    pd = pytest.importorskip("pandas")
    df = pd.read_csv(path)
    y = df.pop(target).to_numpy(dtype=np.float64)
    for col in df.columns:
        if not pd.api.types.is_numeric_dtype(df[col]):
            df[col] = df[col].astype("category").cat.codes.astype(np.float64)
    return df.to_numpy(dtype=np.float64), y


def _shared(name: str) -> Path:
    path = DATASETS / name
    if not path.is_file():
        pytest.skip(f"{path} not available")
    return path


# ---- models and metrics ---------------------------------------------------------------
def _models(task: str, n_estimators: int):
    """(treeboost, LightGBM) estimators with matched parameters."""
    common = dict(n_estimators=n_estimators, learning_rate=0.1, n_jobs=N_JOBS,
                  random_state=SEED)
    ours = dict(common, max_leaf_nodes=31, min_samples_leaf=20, max_bins=255,
                min_child_weight=1e-3, reg_lambda=0.0, reg_alpha=0.0)
    theirs = dict(common, num_leaves=31, min_child_samples=20, max_bin=255,
                  min_child_weight=1e-3, reg_lambda=0.0, reg_alpha=0.0, max_depth=-1,
                  subsample=1.0, subsample_freq=0, colsample_bytree=1.0,
                  min_data_in_bin=1, verbose=-1)
    if task == "regression":
        return TreeBoostRegressor(**ours), lgb.LGBMRegressor(**theirs)
    return TreeBoostClassifier(**ours), lgb.LGBMClassifier(**theirs)


def _score(task: str, model, X, y) -> float:
    if task == "binary":
        return roc_auc_score(y, model.predict_proba(X)[:, 1])
    if task == "multiclass":
        return accuracy_score(y, model.predict(X))
    return mean_squared_error(y, model.predict(X)) ** 0.5


def _compare(task, X, y, splits, n_estimators) -> tuple[float, float]:
    """Mean test metric of (treeboost, LightGBM) over the given (train, test) splits."""
    ours, theirs = [], []
    for train, test in splits:
        tb_model, lgb_model = _models(task, n_estimators)
        for model, scores in ((tb_model, ours), (lgb_model, theirs)):
            model.fit(X[train], y[train])
            scores.append(_score(task, model, X[test], y[test]))
    return float(np.mean(ours)), float(np.mean(theirs))


def _assert_no_worse(task: str, ours: float, theirs: float) -> None:
    """treeboost no worse than LightGBM by more than REL_TOL (relative)."""
    if task == "regression":  # RMSE: lower is better
        assert ours <= theirs * (1 + REL_TOL), f"RMSE treeboost {ours:.6g} vs LightGBM {theirs:.6g}"
    else:  # AUC / accuracy: higher is better
        assert ours >= theirs * (1 - REL_TOL), f"treeboost {ours:.6g} vs LightGBM {theirs:.6g}"


def _holdout(task: str, y: np.ndarray):
    """One fixed 80/20 split, stratified for classification."""
    idx = np.arange(y.size)
    train, test = train_test_split(idx, test_size=0.2, random_state=SEED,
                                   stratify=None if task == "regression" else y)
    return [(train, test)]


# ---- bundled data sets ------------------------------------------------------------------
# Their 20 % test sets are small (breast_cancer 114 rows, digits 360, diabetes 89): one
# row moves the metric by about or more than the 0.5 % tolerance, so these use the mean
# over repeated cross-validation (every row is a test row once per repeat). On digits
# the mean accuracy difference still moves by +-0.3 % from one fold layout to another
# (3-fold: -0.34 %, 5-fold x 2: +0.17 %), hence ten fits rather than three.
BUNDLED = {
    "breast_cancer": (sk_datasets.load_breast_cancer, "binary",
                      RepeatedStratifiedKFold(n_splits=5, n_repeats=2, random_state=SEED)),
    "digits": (sk_datasets.load_digits, "multiclass",
               RepeatedStratifiedKFold(n_splits=5, n_repeats=2, random_state=SEED)),
    "diabetes": (sk_datasets.load_diabetes, "regression",
                 RepeatedKFold(n_splits=5, n_repeats=3, random_state=SEED)),
}


@pytest.mark.parametrize("name", list(BUNDLED))
def test_bundled_no_worse_than_lightgbm(name):
    loader, task, cv = BUNDLED[name]
    X, y = loader(return_X_y=True)
    ours, theirs = _compare(task, X, y, cv.split(X, y), n_estimators=100)
    _assert_no_worse(task, ours, theirs)


# ---- real data sets from ../shared/datasets -------------------------------------------------
def _sylva():
    return *_read_arff(_shared("sylva_prior.arff.gz")), "binary"  # 14k x 108


def _pendigits():
    return *_read_arff(_shared("pendigits.arff")), "multiclass"  # 11k, 10 classes


def _page_blocks():
    return *_read_arff(_shared("page-blocks.arff")), "multiclass"  # 5.5k, imbalanced


def _letter():
    return *_read_arff(_shared("letter.arff")), "multiclass"  # 20k, 26 classes


def _cpu_act():
    return *_read_arff(_shared("cpu_act.arff.gz")), "regression"  # 8k x 21


def _california():
    # ocean_proximity is text (ordinal-encoded); total_bedrooms has NaN
    X, y = _read_csv(_shared("california_housing.csv.gz"), "median_house_value")
    assert np.isnan(X).any()
    return X, y, "regression"


def _concrete():
    return *_read_csv(_shared("concrete.csv"), "compressive_strength"), "regression"


REAL = {  # name: (loader, n_estimators, evaluation)
    "sylva_prior": (_sylva, 100, "holdout"),
    "pendigits": (_pendigits, 100, "holdout"),
    "page-blocks": (_page_blocks, 100, "holdout"),
    # 26 trees per stage: 50 stages keep the file under its time budget
    "letter": (_letter, 50, "holdout"),
    "cpu_act": (_cpu_act, 100, "holdout"),
    "california_housing": (_california, 100, "holdout"),
    # 1,030 rows: a 206-row test set is too noisy for 0.5 %; 5-fold CV, twice
    "concrete": (_concrete, 100, "cv"),
}


@pytest.mark.parametrize("name", list(REAL))
def test_real_data_no_worse_than_lightgbm(name):
    loader, n_estimators, evaluation = REAL[name]
    X, y, task = loader()
    if evaluation == "cv":
        splits = RepeatedKFold(n_splits=5, n_repeats=2, random_state=SEED).split(X)
    else:
        splits = _holdout(task, y)
    ours, theirs = _compare(task, X, y, splits, n_estimators)
    _assert_no_worse(task, ours, theirs)


# ---- one tree, exact binning ---------------------------------------------------------------
@pytest.mark.parametrize(("n_samples", "max_leaf_nodes"), [(255, 4096), (1000, 8), (5000, 31)])
def test_one_tree_same_predictions_as_lightgbm(n_samples, max_leaf_nodes):
    # Integer features with fewer than 255 distinct values: both libraries put every
    # value in its own bin (LightGBM needs min_data_in_bin=1 for that), so they see the
    # same candidate splits, and with one tree, learning rate 1, one row per leaf
    # allowed and no regularisation they grow the same tree with the same leaf values
    # (both start from the mean of y). Tolerance, as in scikit-learn's
    # test_compare_lightgbm: rtol 1e-3 because both sum float32 gradients into
    # float64 histograms, in different orders; "> 99 % of rows" because those
    # rounding differences can rank two splits of (nearly) equal gain differently,
    # which moves a few rows to another leaf (in practice every row matches).
    #
    # Only training rows are compared. When a node has no rows in some bins between
    # two of its values, every threshold in that gap splits the node's rows alike and
    # has the same gain; treeboost keeps the lowest (scans bins upwards, strict >) and
    # LightGBM the highest (scans downwards, strict >). Both are right, but test rows
    # whose values fall in such a gap go to different sides (up to 60 % of the test
    # rows in the 255-row case).
    rng = np.random.RandomState(SEED)
    X, y = sk_datasets.make_regression(n_samples=n_samples, n_features=5, n_informative=5,
                                       random_state=rng)
    # quantise every feature to at most 200 integer levels ("pre-binned" data)
    X = np.column_stack([np.digitize(col, np.quantile(col, np.linspace(0, 1, 201)[1:-1]))
                         for col in X.T]).astype(np.float64)

    params = dict(n_estimators=1, learning_rate=1.0, n_jobs=N_JOBS, random_state=SEED)
    ours = TreeBoostRegressor(**params, max_leaf_nodes=max_leaf_nodes, min_samples_leaf=1,
                              min_child_weight=1e-3, reg_lambda=0.0, max_bins=255)
    theirs = lgb.LGBMRegressor(**params, num_leaves=max_leaf_nodes, min_child_samples=1,
                               min_child_weight=1e-3, reg_lambda=0.0, max_bin=255,
                               min_data_in_bin=1, verbose=-1)
    ours.fit(X, y)
    theirs.fit(X, y)
    assert ours.booster_.trees[0][0].n_leaves == theirs.booster_.dump_model()[
        "tree_info"][0]["num_leaves"]
    same = np.isclose(ours.predict(X), theirs.predict(X), rtol=1e-3)
    assert same.mean() > 0.99
