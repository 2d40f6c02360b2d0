"""Exact TreeSHAP contributions, ``predict(X, pred_contribs=True)`` (SPEC §4).

Checked three ways: every row's contributions sum to the raw score; they
equal a brute-force Shapley computation (all subsets, the value of a subset
being the tree's conditional expectation with node covers as in Lundberg et
al. 2018, Algorithm 1) on small models; and they equal the ``shap`` package's
TreeExplainer when it is installed.
"""

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from treeboost import TreeBoostClassifier, TreeBoostRegressor
from treeboost._dtypes import MISSING_BIN
from treeboost.explain import expected_value

# float64 sums over at most a few hundred terms of size ~1: rounding stays far below
EXACT = 1e-10


def _goes_left(tree, node, x, bin_mapper):
    f = tree.feature[node]
    v = x[f]
    if tree.is_categorical[node]:
        edges = bin_mapper.bin_edges_[f, : bin_mapper.n_edges_[f]]
        pos = np.searchsorted(edges, v)
        b = pos if (not np.isnan(v) and pos < edges.size and edges[pos] == v) else MISSING_BIN
        return bool((tree.cat_bitset[node, b >> 5] >> (b & 31)) & 1)
    if np.isnan(v):
        return bool(tree.missing_left[node])
    return bool(v <= tree.threshold[node])


def _conditional_expectation(tree, x, subset, bin_mapper, node=0):
    """E[tree(x) | x_S] with the training covers weighing unknown splits."""
    if tree.left[node] < 0:
        return tree.value[node]
    lo, hi = tree.left[node], tree.right[node]
    if tree.feature[node] in subset:
        nxt = lo if _goes_left(tree, node, x, bin_mapper) else hi
        return _conditional_expectation(tree, x, subset, bin_mapper, nxt)
    cover = tree.count.astype(float)
    return (cover[lo] * _conditional_expectation(tree, x, subset, bin_mapper, lo)
            + cover[hi] * _conditional_expectation(tree, x, subset, bin_mapper, hi)) / cover[node]


def brute_force_shap(booster, x, output=0):
    """Shapley values of every feature plus the bias, by enumerating all subsets."""
    M = booster.n_features
    trees = [stage[output] for stage in booster.trees]

    def value(subset):
        return sum(_conditional_expectation(t, x, subset, booster.bin_mapper) for t in trees)

    phi = np.zeros(M + 1)
    for i in range(M):
        others = [j for j in range(M) if j != i]
        for r in range(M):
            weight = math.factorial(r) * math.factorial(M - r - 1) / math.factorial(M)
            for subset in itertools.combinations(others, r):
                phi[i] += weight * (value({*subset, i}) - value(set(subset)))
    phi[M] = value(set()) + booster.init_score[output]
    return phi


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    n = 300
    X = rng.normal(size=(n, 4))
    X[:, 3] = rng.integers(0, 6, n)  # a categorical feature
    X[rng.random(X.shape) < 0.08] = np.nan
    z = np.nan_to_num(X)
    y = 2 * z[:, 0] + z[:, 1] * z[:, 2] + np.isin(X[:, 3], [1, 4]) + 0.1 * rng.normal(size=n)
    return X, y


SMALL = dict(n_estimators=4, max_leaf_nodes=6, min_samples_leaf=5, random_state=0,
             categorical_features=[3])


def test_regressor_matches_brute_force_and_sums_to_prediction(data):
    X, y = data
    model = TreeBoostRegressor(**SMALL).fit(X, y)
    contribs = model.predict(X, pred_contribs=True)
    assert contribs.shape == (X.shape[0], X.shape[1] + 1)
    np.testing.assert_allclose(contribs.sum(axis=1), model.predict(X), rtol=0, atol=EXACT)
    expected = np.array([brute_force_shap(model.booster_, X[i]) for i in range(25)])
    np.testing.assert_allclose(contribs[:25], expected, rtol=0, atol=EXACT)


def test_multiclass_matches_brute_force_per_class(data):
    X, y = data
    yc = np.digitize(y, [-1.0, 1.0])
    model = TreeBoostClassifier(**SMALL).fit(X, yc)
    contribs = model.predict(X, pred_contribs=True)
    assert contribs.shape == (X.shape[0], 3, X.shape[1] + 1)
    np.testing.assert_allclose(contribs.sum(axis=2), model.decision_function(X), rtol=0,
                               atol=EXACT)
    for k in range(3):
        expected = np.array([brute_force_shap(model.booster_, X[i], k) for i in range(10)])
        np.testing.assert_allclose(contribs[:10, k], expected, rtol=0, atol=EXACT)


def test_binary_sums_to_log_odds_on_a_deep_model(data):
    # deeper trees (features split several times along a path exercise the unwinding)
    X, y = data
    model = TreeBoostClassifier(n_estimators=30, max_leaf_nodes=31, min_samples_leaf=3,
                                subsample=0.8, random_state=1).fit(X, y > 0)
    contribs = model.predict(X, pred_contribs=True)
    assert contribs.shape == (X.shape[0], X.shape[1] + 1)
    np.testing.assert_allclose(contribs.sum(axis=1), model.decision_function(X), rtol=0,
                               atol=1e-9)
    depth = max(t.depth() for stage in model.booster_.trees for t in stage)
    assert depth >= 5
    expected = np.array([brute_force_shap(model.booster_, X[i]) for i in range(3)])
    np.testing.assert_allclose(contribs[:3], expected, rtol=0, atol=1e-9)


def test_stump_closed_form():
    # one split on feature 0 at 0.5: phi_0(x) = v(x) - (n_L v_L + n_R v_R) / n
    X = np.column_stack([np.repeat([0.0, 1.0], [30, 10]), np.arange(40.0) % 3])
    y = X[:, 0] * 4.0
    model = TreeBoostRegressor(n_estimators=1, learning_rate=1.0, max_leaf_nodes=2,
                               min_samples_leaf=1).fit(X, y)
    contribs = model.predict(X[[0, -1]], pred_contribs=True)
    mean = y.mean()  # F0; the tree's expected value is 0 (leaves are residual means)
    np.testing.assert_allclose(contribs, [[0.0 - mean, 0.0, mean], [4.0 - mean, 0.0, mean]],
                               atol=EXACT)
    tree = model.booster_.trees[0][0]
    assert expected_value(tree) == pytest.approx(0.0, abs=EXACT)


def test_unused_feature_gets_zero_and_input_types_agree(data):
    X, y = data
    X = X.copy()
    X[:, 2] = 0.0  # constant: never split on
    model = TreeBoostRegressor(**SMALL).fit(X, y)
    contribs = model.predict(X, pred_contribs=True)
    assert np.all(contribs[:, 2] == 0.0)
    np.testing.assert_allclose(model.predict(X.astype(np.float32), pred_contribs=True),
                               model.predict(X.astype(np.float32).astype(np.float64),
                                             pred_contribs=True), rtol=0, atol=0)
    frame = pd.DataFrame(X, columns=list("abcd"))
    model_df = TreeBoostRegressor(**SMALL).fit(frame, y)
    np.testing.assert_allclose(model_df.predict(frame, pred_contribs=True), contribs,
                               rtol=0, atol=EXACT)


def test_matches_shap_tree_explainer(data):
    shap = pytest.importorskip("shap")
    X, y = data
    X = X[:, :3]  # numerical splits: shap's custom trees know thresholds only
    model = TreeBoostRegressor(n_estimators=5, max_leaf_nodes=8, min_samples_leaf=5,
                               random_state=0).fit(X, y)
    trees = []
    for stage in model.booster_.trees:
        t = stage[0]
        leaf = t.left < 0
        trees.append({
            "children_left": np.where(leaf, -1, t.left).astype(np.int64),
            "children_right": np.where(leaf, -1, t.right).astype(np.int64),
            "children_default": np.where(leaf, -1, np.where(t.missing_left == 1, t.left,
                                                            t.right)).astype(np.int64),
            "features": np.where(leaf, -2, t.feature).astype(np.int64),
            "thresholds": np.where(leaf, 0.0, t.threshold),
            "values": np.where(leaf, t.value, 0.0)[:, None],
            "node_sample_weight": t.count.astype(np.float64),
        })
    explainer = shap.TreeExplainer({"trees": trees, "base_offset": model.booster_.init_score[0]})
    Xf = np.nan_to_num(X)  # shap's custom-model path has no missing-value routing to check
    ours = model.predict(Xf, pred_contribs=True)
    np.testing.assert_allclose(explainer.shap_values(Xf), ours[:, :-1], atol=1e-8)
