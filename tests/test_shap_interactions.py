"""SHAP interaction values, ``predict(X, pred_interactions=True)`` (SPEC §9).

The reference is a brute-force Shapley interaction index (Lundberg et al. 2020,
eq. 7-8): every subset S of the other features, the value of a subset being
the trees' conditional expectation with node covers weighing unknown splits
(as TreeSHAP and ``tests/test_shap.py`` define it). The brute force is first
checked against XGBoost's own ``pred_interactions`` on XGBoost's trees, read
from its dump, so that its definition is XGBoost's; the kernel is then checked
against the brute force on treeboost's trees, with categorical splits, NaN
routing and features split several times along a path.
"""

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp

from treeboost import Dataset, TreeBoostClassifier, TreeBoostRanker, TreeBoostRegressor, train
from treeboost._dtypes import MISSING_BIN
from treeboost.explain import shap_interaction_values

# float64 sums of a few hundred terms of size ~1 in both the kernel and the brute
# force: rounding stays far below
EXACT = 1e-10


def _expectation(tree, x, known, node=0):
    """E[tree(x) | x_known]: known features follow x, unknown ones both sides by cover."""
    left, right, feature, cover, value, goes_left = tree
    if left[node] < 0:
        return value[node]
    lo, hi = left[node], right[node]
    if feature[node] in known:
        return _expectation(tree, x, known, lo if goes_left(node, x) else hi)
    share = cover[lo] / cover[node] if cover[node] > 0 else 0.5  # treeboost's empty node
    return (share * _expectation(tree, x, known, lo)
            + (1.0 - share) * _expectation(tree, x, known, hi))


def brute_force_interactions(trees, bias, x, n_features):
    """SHAP interaction matrix (n_features + 1 square, bias last) of one row, by subsets."""
    M = n_features
    value = {S: bias + sum(_expectation(t, x, S) for t in trees)
             for r in range(M + 1) for S in map(frozenset, itertools.combinations(range(M), r))}
    phi = np.zeros((M + 1, M + 1))
    shapley = np.zeros(M)
    for i in range(M):
        others = [j for j in range(M) if j != i]
        for r in range(M):
            w = math.factorial(r) * math.factorial(M - r - 1) / math.factorial(M)
            for S in map(frozenset, itertools.combinations(others, r)):
                shapley[i] += w * (value[S | {i}] - value[S])
    for i, j in itertools.combinations(range(M), 2):
        others = [k for k in range(M) if k not in (i, j)]
        for r in range(M - 1):
            # Shapley interaction index, halved between [i, j] and [j, i]
            w = math.factorial(r) * math.factorial(M - r - 2) / (2 * math.factorial(M - 1))
            for S in map(frozenset, itertools.combinations(others, r)):
                phi[i, j] += w * (value[S | {i, j}] - value[S | {i}] - value[S | {j}]
                                  + value[S])
        phi[j, i] = phi[i, j]
    for i in range(M):
        phi[i, i] = shapley[i] - (phi[i, :M].sum() - phi[i, i])
    phi[M, M] = value[frozenset()]
    return phi


def treeboost_trees(booster, output=0):
    """The trees of one output as brute-force tuples, routed as the predictor routes."""
    mapper = booster.bin_mapper

    def router(t):
        def goes_left(node, x):
            f = t.feature[node]
            v = x[f]
            if t.is_categorical[node]:
                edges = mapper.bin_edges_[f, : mapper.n_edges_[f]]
                pos = np.searchsorted(edges, v)
                b = pos if (not np.isnan(v) and pos < edges.size and edges[pos] == v) \
                    else MISSING_BIN
                return bool((t.cat_bitset[node, b >> 5] >> (b & 31)) & 1)
            if np.isnan(v):
                return bool(t.missing_left[node])
            return bool(v <= t.threshold[node])
        return goes_left

    return [(t.left, t.right, t.feature, t.count.astype(float), t.value, router(t))
            for t in (stage[output] for stage in booster.trees)]


def brute_force_model(booster, X, output=0):
    trees = treeboost_trees(booster, output)
    return np.array([brute_force_interactions(trees, booster.init_score[output], x,
                                              booster.n_features) for x in X])


def check_sums(inter, contribs, raw, atol=EXACT):
    """Symmetric; row i sums to contribution i; the matrix sums to the raw score."""
    np.testing.assert_allclose(inter, np.swapaxes(inter, -1, -2), rtol=0, atol=atol)
    np.testing.assert_allclose(inter.sum(axis=-1), contribs, rtol=0, atol=atol)
    np.testing.assert_allclose(inter.sum(axis=(-2, -1)), raw, rtol=0, atol=atol)


def test_brute_force_reproduces_xgboost_on_its_own_trees():
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    # values on a 1/8 grid: exact in float32, and exact-method thresholds are midpoints
    # (multiples of 1/16), so XGBoost's float32 comparison routes rows as ours does
    X = np.round(8 * rng.normal(size=(200, 4))) / 8
    X[rng.random(X.shape) < 0.1] = np.nan
    z = np.nan_to_num(X)
    y = z[:, 0] * z[:, 1] + z[:, 2] + (z[:, 3] > 0) * z[:, 0]
    booster = xgb.train({"max_depth": 3, "tree_method": "exact", "base_score": 0.3,
                         "eta": 0.5, "objective": "reg:squarederror"}, xgb.DMatrix(X, y), 4)
    frame = booster.trees_to_dataframe()

    def node_id(ref):
        return int(ref.split("-")[1])

    trees = []
    for _, t in frame.groupby("Tree"):
        t = t.sort_values("Node")
        leaf = (t["Feature"] == "Leaf").to_numpy()
        left = np.where(leaf, -1, [node_id(r) if isinstance(r, str) else -1 for r in t["Yes"]])
        right = np.where(leaf, -1, [node_id(r) if isinstance(r, str) else -1 for r in t["No"]])
        missing = [node_id(r) if isinstance(r, str) else -1 for r in t["Missing"]]
        feature = np.array([-1 if f == "Leaf" else int(f[1:]) for f in t["Feature"]])
        split = t["Split"].to_numpy()

        def goes_left(node, x, left=left, missing=missing, feature=feature, split=split):
            v = x[feature[node]]
            return missing[node] == left[node] if np.isnan(v) else v < split[node]

        # a leaf's "Gain" is its value; squared error: hessian 1, Cover is a row count
        trees.append((left, right, feature, t["Cover"].to_numpy(), t["Gain"].to_numpy(),
                      goes_left))
    assert any(t[2][0] == t[2][2] or t[2][0] == t[2][1] for t in trees)  # a repeated split
    rows = X[:30]
    theirs = booster.predict(xgb.DMatrix(rows), pred_interactions=True)
    ours = np.array([brute_force_interactions(trees, 0.3, x, 4) for x in rows])
    assert theirs.shape == ours.shape == (30, 5, 5)
    # XGBoost sums in float32 (7 digits) values of size ~1
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=2e-5)
    assert np.abs(ours[:, :4, :4] - np.diag(np.diagonal(ours[:, :4, :4], axis1=1, axis2=2)
                                            .mean(0))).max() > 0.1  # not a trivial match


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    n = 300
    X = rng.normal(size=(n, 4))
    X[:, 3] = rng.integers(0, 6, n)  # a categorical feature
    X[rng.random(X.shape) < 0.08] = np.nan
    z = np.nan_to_num(X)
    y = (2 * z[:, 0] + z[:, 1] * z[:, 2] + 3 * np.isin(X[:, 3], [1, 4]) * (1 + z[:, 1])
         + 0.1 * rng.normal(size=n))
    return X, y


SMALL = dict(n_estimators=4, max_depth=3, min_samples_leaf=5, random_state=0,
             categorical_features=[3])


def test_regressor_matches_brute_force_with_categories_and_nan(data):
    X, y = data
    model = TreeBoostRegressor(**SMALL).fit(X, y)
    assert any(t.is_categorical.any() for stage in model.booster_.trees for t in stage)
    inter = model.predict(X, pred_interactions=True)
    assert inter.shape == (X.shape[0], 5, 5)
    check_sums(inter, model.predict(X, pred_contribs=True), model.predict(X))
    rows = np.flatnonzero(np.isnan(X).any(axis=1))[:15]  # rows routed by missing values
    np.testing.assert_allclose(inter[rows], brute_force_model(model.booster_, X[rows]),
                               rtol=0, atol=EXACT)
    off_diagonal = inter[:, :4, :4][:, ~np.eye(4, dtype=bool)]
    assert np.abs(off_diagonal).max() > 0.05  # the x1 * x2 term interacts


def test_multiclass_one_matrix_per_class(data):
    # (n_samples, n_classes, p + 1, p + 1): XGBoost's layout, as pred_contribs's
    X, y = data
    model = TreeBoostClassifier(**SMALL).fit(X, np.digitize(y, [-1.0, 1.0]))
    inter = model.predict(X, pred_interactions=True)
    assert inter.shape == (X.shape[0], 3, 5, 5)
    check_sums(inter, model.predict(X, pred_contribs=True), model.decision_function(X))
    for k in range(3):
        np.testing.assert_allclose(inter[:8, k], brute_force_model(model.booster_, X[:8], k),
                                   rtol=0, atol=EXACT)


def test_deep_trees_split_features_again_along_a_path(data):
    # deeper than the 4 features: paths split a feature twice, so the conditioned
    # feature's splits repeat (known: one branch each time; unknown: both, by cover)
    # and other features are unwound and split again
    X, y = data
    model = TreeBoostClassifier(n_estimators=6, max_leaf_nodes=31, min_samples_leaf=3,
                                subsample=0.8, categorical_features=[3],
                                random_state=1).fit(X, y > 0)
    assert max(t.depth() for stage in model.booster_.trees for t in stage) >= 5
    inter = model.predict(X, pred_interactions=True)
    assert inter.shape == (X.shape[0], 5, 5)
    # sums over ~200 paths per row and tree: a few more roundings than EXACT allows for
    check_sums(inter, model.predict(X, pred_contribs=True), model.decision_function(X),
               atol=1e-9)
    np.testing.assert_allclose(inter[:4], brute_force_model(model.booster_, X[:4]),
                               rtol=0, atol=1e-9)


def test_booster_ranker_and_input_types(data):
    X, y = data
    booster = train({"n_estimators": 4, "max_depth": 3, "random_state": 0},
                    Dataset(X[:, :3], y))
    inter = shap_interaction_values(booster, X[:, :3])
    assert inter.shape == (X.shape[0], 1, 4, 4)
    np.testing.assert_allclose(inter.sum(axis=(2, 3)), booster.predict_raw(X[:, :3]),
                               rtol=0, atol=EXACT)
    ranker = TreeBoostRanker(n_estimators=4, max_depth=3, random_state=0)
    ranker.fit(X, np.digitize(y, [0.0, 1.0]), group=np.full(30, 10))
    inter = ranker.predict(X, pred_interactions=True)
    assert inter.shape == (X.shape[0], 5, 5)
    check_sums(inter, ranker.predict(X, pred_contribs=True), ranker.predict(X))
    # float32 and sparse input give the float64 dense answer exactly
    X32 = X.astype(np.float32)
    np.testing.assert_array_equal(ranker.predict(X32, pred_interactions=True),
                                  ranker.predict(X32.astype(np.float64), pred_interactions=True))
    dense = np.nan_to_num(X)
    np.testing.assert_array_equal(ranker.predict(sp.csr_matrix(dense), pred_interactions=True),
                                  ranker.predict(dense, pred_interactions=True))


def test_unused_feature_has_zero_row_and_column(data):
    X, y = data
    X = X.copy()
    X[:, 2] = 0.0  # constant: never split on
    model = TreeBoostRegressor(**SMALL).fit(X, y)
    inter = model.predict(X, pred_interactions=True)
    assert np.all(inter[:, 2, :] == 0.0)
    assert np.all(inter[:, :, 2] == 0.0)
    # the bias row and column hold only the expected value at [p, p]
    assert np.all(inter[:, 4, :4] == 0.0)
    assert np.all(inter[:, :4, 4] == 0.0)
    np.testing.assert_array_equal(inter[:, 4, 4], model.predict(X, pred_contribs=True)[:, 4])


def test_iteration_range_explains_the_stages_it_predicts(data):
    X, y = data
    model = TreeBoostClassifier(**SMALL).fit(X, np.digitize(y, [-1.0, 1.0]))
    inter = model.predict(X, pred_interactions=True, iteration_range=(1, 3))
    check_sums(inter, model.predict(X, pred_contribs=True, iteration_range=(1, 3)),
               model.predict(X, raw_score=True, iteration_range=(1, 3)))
    assert np.abs(inter - model.predict(X, pred_interactions=True)).max() > 0.01
    np.testing.assert_array_equal(
        model.booster_.predict_interactions(X, iteration_range=(1, 3)), inter)
    np.testing.assert_array_equal(model.booster_[1:3].predict_interactions(X), inter)


def test_both_explanations_at_once_are_refused(data):
    X, y = data
    model = TreeBoostRegressor(**SMALL).fit(X, y)
    with pytest.raises(ValueError, match="pred_contribs=True and pred_interactions=True"):
        model.predict(X, pred_contribs=True, pred_interactions=True)
