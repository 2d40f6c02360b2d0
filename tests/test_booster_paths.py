"""The booster's two ways to finish a tree give the same model, bit for bit.

Losses with Newton leaves on dense data take one kernel call per tree
(``_kernels.booster.grow_newton_tree``: growth, leaf values, thresholds, raw-score
updates); every other case (exact line searches, sparse data, a training trace)
grows the tree with the same grower and finishes it in Python. ``train(...,
trace=[])`` takes the second path for the same fit, so the two can be compared on
every boosting mode and option they share.
"""

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from sklearn.datasets import make_classification, make_regression

import treeboost as tb

TREE_FIELDS = ("feature", "threshold", "bin_threshold", "missing_left", "is_categorical",
               "cat_bitset", "left", "right", "value", "gain", "count", "cover")


def _data(task):
    rng = np.random.default_rng(0)
    if task == "regression":
        X, y = make_regression(500, 6, noise=5.0, random_state=2)
    else:
        X, y = make_classification(500, 6, n_informative=4, n_classes=3 if task == "multiclass"
                                   else 2, random_state=0)
    X[rng.random(X.shape) < 0.05] = np.nan
    X[:, 3] = rng.integers(0, 20, X.shape[0])  # a categorical column in some cases
    return X, y


def _fit(task, params, trace):
    X, y = _data(task)
    X_valid, y_valid = X[:50], y[:50]
    loss = "squared_error" if task == "regression" else "log_loss"
    params = {"loss": loss, "n_estimators": 20, "random_state": 0, **params}
    categorical = params.pop("categorical_features", None)
    train = tb.Dataset(X, y, categorical_features=categorical)
    valid = tb.Dataset(X_valid, y_valid, reference=train)
    booster = tb.train(params, train, valid_sets=[valid],
                       trace=[] if trace else None)
    return booster, X


@pytest.mark.parametrize("task", ["binary", "multiclass", "regression"])
@pytest.mark.parametrize("params", [
    {"subsample": 0.7, "max_leaf_nodes": 6, "reg_alpha": 0.5, "reg_lambda": 2.0},
    {"max_delta_step": 0.05, "max_depth": 3},
    {"categorical_features": [3], "colsample_bytree": 0.7, "subsample": 0.7},
    {"colsample_bynode": 0.5, "max_leaf_nodes": None, "max_depth": 3},
    {"boosting": "dart", "subsample": 0.8},
    {"boosting": "rf", "subsample": 0.6},
    {"boosting": "goss"},
])
def test_fused_newton_trees_equal_the_python_path(task, params):
    (fused, X), (python, _) = (_fit(task, params, trace) for trace in (False, True))
    # the same arithmetic in the same order: identical trees, scores and eval history
    for stage_a, stage_b in zip(fused.trees, python.trees, strict=True):
        for a, b in zip(stage_a, stage_b, strict=True):
            for name in TREE_FIELDS:
                assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert fused.evals_result == python.evals_result
    assert_array_equal(fused.predict_raw(X), python.predict_raw(X))
