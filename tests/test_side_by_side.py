"""A multi-output stage's trees grown side by side, one thread each (Booster).

The trees must be those grown one after the other: the serial twins of the
grower add the same values in the same order, and the colsample_bynode seeds
are drawn in output order first. No thread may outlive the fit.
"""

import threading

import numba
import numpy as np
import pytest
from numpy.testing import assert_array_equal

from treeboost import TreeBoostClassifier
from treeboost.booster import Booster

pytestmark = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2,
                                reason="one Numba thread: the trees are grown in turn")


def _data(seed=0, n=3000):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    X[:, 5] = rng.integers(0, 7, size=n)  # categorical
    score = X[:, 0] + np.sin(2 * X[:, 1]) + (X[:, 5] % 3) + 0.5 * rng.normal(size=n)
    X[rng.random(X.shape) < 0.05] = np.nan
    return X, np.digitize(score, np.quantile(score, [0.2, 0.4, 0.6, 0.8]))


@pytest.mark.parametrize("params", [
    {},
    {"colsample_bynode": 0.5, "subsample": 0.7, "colsample_bytree": 0.8},
    {"monotone_constraints": [1, 0, 0, 0, 0, 0], "max_depth": 4},
])
def test_trees_side_by_side_equal_trees_in_turn(params):
    X, y = _data()
    kw = dict(n_estimators=12, max_leaf_nodes=15, random_state=3, categorical_features=[5],
              **params)
    one = TreeBoostClassifier(n_jobs=1, **kw).fit(X, y)
    two = TreeBoostClassifier(n_jobs=2, **kw).fit(X, y)
    for stage_one, stage_two in zip(one.booster_.trees, two.booster_.trees, strict=True):
        assert len(stage_one) == 5
        for a, b in zip(stage_one, stage_two, strict=True):
            assert_array_equal(a.feature, b.feature)
            assert_array_equal(a.threshold, b.threshold)
            assert_array_equal(a.value, b.value)
    assert_array_equal(one.predict_proba(X), two.predict_proba(X))


def test_no_tree_thread_outlives_the_fit():
    X, y = _data(1, 800)
    TreeBoostClassifier(n_estimators=3, n_jobs=2).fit(X, y)
    assert not [t for t in threading.enumerate() if t.name.startswith("treeboost")]


def test_a_tree_threads_error_is_raised_and_no_more_trees_are_taken(monkeypatch):
    """A tree that fails on one thread fails the fit with its own error; the other
    threads take no further tree, and none outlives the fit."""
    grown = []
    original = Booster._newton_tree

    def failing(self, state, k, *args, **kwargs):
        if len(self.trees) == 1 and k == 1:  # stage 1, the second tree taken
            raise RuntimeError("tree 1 failed")
        grown.append((len(self.trees), k))
        return original(self, state, k, *args, **kwargs)

    monkeypatch.setattr(Booster, "_newton_tree", failing)
    X, y = _data(2, 800)
    with pytest.raises(RuntimeError, match="tree 1 failed"):
        TreeBoostClassifier(n_estimators=4, n_jobs=2, max_leaf_nodes=7).fit(X, y)
    assert sorted(k for m, k in grown if m == 0) == [0, 1, 2, 3, 4]  # stage 0 whole
    assert all(m <= 1 for m, _ in grown)
    # taken in turn: after the failure at most the tree already taken by the other
    # thread is grown, so stage 1 never reaches its last trees
    assert len([k for m, k in grown if m == 1]) <= 2
    assert not [t for t in threading.enumerate() if t.name.startswith("treeboost")]
