"""A multi-output stage's trees grown side by side in one parallel region (Booster).

The trees must be those grown one after the other: the serial twins of the
grower add the same values in the same order, and the colsample_bynode seeds
are drawn in output order first.
"""

import numba
import numpy as np
import pytest
from numpy.testing import assert_array_equal

import treeboost.booster as booster_module
from treeboost import Dataset, train

pytestmark = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2,
                                reason="one Numba thread: the trees are grown in turn")

#: the small stages of these tests grown side by side, as large ones are
SIDE_BY_SIDE = {"side_by_side_work": 0}


def _fit(X, y, n_jobs, plan=None, categorical_features=None, **params):
    """A multiclass model of ``X``, ``y`` on ``n_jobs`` threads under ``plan`` (by
    default: side by side from any size)."""
    return train(dict(params, loss="log_loss", n_jobs=n_jobs),
                 Dataset(X, y, categorical_features=categorical_features),
                 plan=SIDE_BY_SIDE if plan is None else plan)


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
    one = _fit(X, y, 1, **kw)
    two = _fit(X, y, 2, **kw)
    for stage_one, stage_two in zip(one.trees, two.trees, strict=True):
        assert len(stage_one) == 5
        for a, b in zip(stage_one, stage_two, strict=True):
            assert_array_equal(a.feature, b.feature)
            assert_array_equal(a.threshold, b.threshold)
            assert_array_equal(a.value, b.value)
    assert_array_equal(one.predict_raw(X), two.predict_raw(X))


def _count_regions(monkeypatch):
    """Calls of the side-by-side kernel, counted: which path grew the trees."""
    calls = []
    region = booster_module.grow_newton_trees

    def counted(*args):
        calls.append(args[1].shape[0])
        return region(*args)

    monkeypatch.setattr(booster_module, "grow_newton_trees", counted)
    return calls


def _assert_same_trees(one, two):
    for stage_one, stage_two in zip(one.trees, two.trees, strict=True):
        for a, b in zip(stage_one, stage_two, strict=True):
            for name in ("feature", "threshold", "left", "right", "value", "gain", "count",
                         "cover", "cat_bitset"):
                assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


def test_trees_building_their_own_roots_side_by_side(monkeypatch):
    """Where the stage's roots are not shared (their buffers would pass the cap),
    each tree builds its own root histogram in the region: the same trees."""
    own_roots = dict(SIDE_BY_SIDE, multi_root_bytes=0)
    X, y = _data(4, 2000)
    kw = dict(n_estimators=6, max_leaf_nodes=15, random_state=5, categorical_features=[5])
    one = _fit(X, y, 1, own_roots, **kw)
    calls = _count_regions(monkeypatch)
    two = _fit(X, y, 2, own_roots, **kw)
    assert calls == [5] * 6  # a region per stage, of its five trees
    _assert_same_trees(one, two)


def test_quantised_trees_of_a_stage_are_grown_in_turn(monkeypatch):
    """Quantised trees each round their own output's gradients first: grown in turn,
    each on every thread, they are those of one thread."""
    X, y = _data(5, 2000)
    kw = dict(n_estimators=6, max_leaf_nodes=15, random_state=6, use_quantized_grad=True)
    one = _fit(X, y, 1, **kw)
    calls = _count_regions(monkeypatch)
    two = _fit(X, y, 2, **kw)
    assert calls == []
    _assert_same_trees(one, two)



@pytest.mark.parametrize("more", [0, 1])
def test_stages_side_by_side_from_the_threshold(monkeypatch, more):
    """A fit of rows x features x outputs x stages at the threshold grows its stages'
    trees side by side; one below it, in turn: the same trees either way."""
    X, y = _data(7, 1000)
    kw = dict(n_estimators=3, max_leaf_nodes=7, random_state=2)
    one = _fit(X, y, 1, **kw)
    calls = _count_regions(monkeypatch)
    two = _fit(X, y, 2, {"side_by_side_work": 1000 * 6 * 5 * 3 + more}, **kw)
    assert calls == ([] if more else [5] * 3)
    _assert_same_trees(one, two)
