"""The booster's two ways to make a tree give the same model, bit for bit.

Losses with Newton leaves on kernel-grown trees take one kernel call per tree
(``_kernels.booster.grow_newton_tree``: growth, leaf values, thresholds, raw-score
updates); every other case grows the tree and finishes it in Python. Forcing the
Python grower (``grower._KERNEL_GROWTH = False``) takes the second path for the same
fit, so the two can be compared on every boosting mode and option they share.
"""

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from sklearn.datasets import make_classification, make_regression

from treeboost import TreeBoostClassifier, TreeBoostRegressor
from treeboost import grower as grower_module

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


@pytest.mark.parametrize("task", ["binary", "multiclass", "regression"])
@pytest.mark.parametrize("params", [
    {"subsample": 0.7, "max_leaf_nodes": 6, "reg_alpha": 0.5, "reg_lambda": 2.0},
    {"max_delta_step": 0.05, "max_depth": 3},
    {"categorical_features": [3], "colsample_bytree": 0.7, "subsample": 0.7},
    {"boosting": "dart", "subsample": 0.8},
    {"boosting": "rf", "subsample": 0.6},
    {"boosting": "goss"},
])
def test_fused_newton_trees_equal_the_python_path(task, params, monkeypatch):
    X, y = _data(task)
    cls = TreeBoostRegressor if task == "regression" else TreeBoostClassifier
    models = []
    for kernel in (True, False):
        monkeypatch.setattr(grower_module, "_KERNEL_GROWTH", kernel)
        models.append(cls(n_estimators=20, random_state=0, **params).fit(
            X, y, eval_set=[(X[:50], y[:50])]))
    fused, python = models
    # the same arithmetic in the same order: identical trees, scores and eval history
    for stage_a, stage_b in zip(fused._booster.trees, python._booster.trees, strict=True):
        for a, b in zip(stage_a, stage_b, strict=True):
            for name in TREE_FIELDS:
                assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert fused.evals_result_ == python.evals_result_
    assert_array_equal(fused.predict(X), python.predict(X))


def test_poisson_regressor_takes_the_fused_path_and_matches(monkeypatch):
    X, y = _data("regression")
    y = np.abs(y) / 10.0
    models = []
    for kernel in (True, False):
        monkeypatch.setattr(grower_module, "_KERNEL_GROWTH", kernel)
        models.append(TreeBoostRegressor(loss="poisson", n_estimators=20, subsample=0.8,
                                         random_state=0).fit(X, y))
    assert models[0]._booster.loss.newton_leaves
    assert_array_equal(models[0].predict(X), models[1].predict(X))
