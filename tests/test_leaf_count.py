"""leaf_count: what min_samples_leaf counts in a split's children (rows, or LightGBM's
estimate from the hessians)."""

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression

from treeboost import Dataset, TreeBoostClassifier, TreeBoostRanker, TreeBoostRegressor, train

FAST = {"n_estimators": 15, "random_state": 0, "min_samples_leaf": 60}


def _splits(model):
    """(node, left child, right child) dicts of every split of the model's trees."""
    out = []
    for trees in model.booster_.dump_model()["trees"]:
        for tree in trees:
            nodes = {n["node"]: n for n in tree["nodes"]}
            out += [(n, nodes[n["left"]], nodes[n["right"]])
                    for n in tree["nodes"] if not n["is_leaf"]]
    return out


def test_hessian_counts_bound_each_child_and_change_the_classifier():
    X, y = make_classification(3000, 8, n_informative=5, random_state=1)
    by_rows = TreeBoostClassifier(leaf_count="rows", **FAST).fit(X, y)
    by_hessian = TreeBoostClassifier(leaf_count="hessian", **FAST).fit(X, y)
    splits = _splits(by_hessian)
    assert splits
    for node, *children in splits:
        for child in children:
            # floor(estimate + 0.5) >= min_samples_leaf, up to the sums' float32 round-off
            estimate = child["cover"] * node["count"] / node["cover"]
            assert estimate >= FAST["min_samples_leaf"] - 0.5 - 1e-6 * node["count"]
    # small hessians (confident rows) count as fewer: somewhere a child of enough rows
    # is refused or one of fewer rows allowed, and the model differs
    assert not np.array_equal(by_rows.predict_proba(X), by_hessian.predict_proba(X))
    assert all(min(c["count"] for c in children) >= FAST["min_samples_leaf"]
               for _, *children in _splits(by_rows))


def test_unit_hessians_give_the_rows_model():
    X, y = make_regression(2000, 6, noise=5.0, random_state=0)
    by_rows = TreeBoostRegressor(**FAST).fit(X, y)
    by_hessian = TreeBoostRegressor(leaf_count="hessian", **FAST).fit(X, y)
    np.testing.assert_array_equal(by_rows.predict(X), by_hessian.predict(X))


def test_refused_by_name():
    X, y = make_regression(300, 4, n_targets=2, random_state=0)
    with pytest.raises(ValueError, match="leaf_count='hessian'"):
        TreeBoostRegressor(leaf_count="hessian", multi_strategy="multi_output_tree",
                           n_estimators=2).fit(X, y)
    with pytest.raises(ValueError, match="leaf_count"):
        TreeBoostRegressor(leaf_count="hessians", n_estimators=2).fit(X, y[:, 0])


def test_defaults_by_task():
    # classification counts by hessian (the tuned comparison on the benchmarks page),
    # regression and ranking by rows; train() takes the default of its loss's task
    X, y = make_classification(2000, 8, n_informative=5, random_state=3)
    default = TreeBoostClassifier(**FAST).fit(X, y)
    explicit = TreeBoostClassifier(leaf_count="hessian", **FAST).fit(X, y)
    by_rows = TreeBoostClassifier(leaf_count="rows", **FAST).fit(X, y)
    np.testing.assert_array_equal(default.predict_proba(X), explicit.predict_proba(X))
    assert not np.array_equal(default.predict_proba(X), by_rows.predict_proba(X))
    params = {"loss": "log_loss", "n_estimators": 15, "min_samples_leaf": 60,
              "random_state": 0}
    functional = train(params, Dataset(X, y))
    np.testing.assert_array_equal(functional.predict_raw(X), explicit.booster_.predict_raw(X))
    assert TreeBoostRegressor().leaf_count == "rows"
    assert TreeBoostRanker().leaf_count == "rows"
