"""Small data is exact (SPEC §1.5; DESIGN §4.3).

With at most ``max_bins`` distinct values per feature the bins are the
distinct values, so one stage with learning_rate=1 must reproduce exact CART
(scikit-learn's best-first ``DecisionTreeRegressor``) fitted to the
pseudo-residuals: the same partition of the rows, the same split features
and thresholds, and leaf values set by each loss's line search. A textbook
example is then followed by hand through two stages.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.tree import DecisionTreeRegressor

from treeboost import TreeBoostClassifier, TreeBoostRegressor

N_LEAVES = [2, 4, 8]
MIN_LEAF = [1, 3]


def make_data():
    """60 rows, 3 integer features with 12, 8 and 5 distinct values, continuous target."""
    rng = np.random.default_rng(0)
    n = 60
    X = np.column_stack([rng.integers(0, 12, n), rng.integers(0, 8, n),
                         rng.integers(0, 5, n)]).astype(np.float64)
    y = 3 * np.sin(X[:, 0] / 2) + 0.7 * X[:, 1] - 2.0 * (X[:, 2] == 2) + rng.normal(0, 0.5, n)
    return X, y


def apply(tree, X):
    """Leaf node of each row, walking a treeboost ``Tree`` on raw thresholds."""
    leaves = np.empty(X.shape[0], dtype=np.int64)
    for i, row in enumerate(X):
        node = 0
        while tree.left[node] >= 0:
            go_left = row[tree.feature[node]] <= tree.threshold[node]
            node = tree.left[node] if go_left else tree.right[node]
        leaves[i] = node
    return leaves


def assert_same_partition(ours, theirs):
    """Rows share a leaf in one tree exactly when they share one in the other."""
    pairs = set(zip(ours.tolist(), theirs.tolist(), strict=True))
    assert len(pairs) == len(set(ours.tolist())) == len(set(theirs.tolist()))


def cart(X, target, max_leaf_nodes, min_samples_leaf):
    """Exact CART on ``target``, checked to be free of ties that its random order breaks."""
    trees = [DecisionTreeRegressor(max_leaf_nodes=max_leaf_nodes,
                                   min_samples_leaf=min_samples_leaf,
                                   random_state=seed).fit(X, target) for seed in range(10)]
    leaves = trees[0].apply(X)
    for other in trees[1:]:  # precondition of the comparison, not the claim under test
        assert_same_partition(leaves, other.apply(X))
    return trees[0]


def internal_splits(feature, threshold, left):
    internal = left >= 0
    return sorted(zip(feature[internal].tolist(), threshold[internal].tolist(),
                      strict=True))


def one_stage(estimator_cls, X, y, max_leaf_nodes, min_samples_leaf, **loss):
    est = estimator_cls(n_estimators=1, learning_rate=1.0, max_leaf_nodes=max_leaf_nodes,
                        min_samples_leaf=min_samples_leaf, min_child_weight=0.0,
                        **loss).fit(X, y)
    return est, est.booster_.trees[0][0]


@pytest.mark.parametrize("max_leaf_nodes", N_LEAVES)
@pytest.mark.parametrize("min_samples_leaf", MIN_LEAF)
def test_squared_error_one_stage_is_cart_on_residuals(max_leaf_nodes, min_samples_leaf):
    X, y = make_data()
    r = y - y.mean()
    sk = cart(X, r, max_leaf_nodes, min_samples_leaf)
    est, tree = one_stage(TreeBoostRegressor, X, y, max_leaf_nodes, min_samples_leaf)
    assert tree.n_leaves == sk.get_n_leaves() == max_leaf_nodes
    assert_same_partition(apply(tree, X), sk.apply(X))
    # leaves are -sum(g)/n with g = F0 - y rounded to float32 (relative 6e-8 per row):
    # the mean's error is below 6e-8 * max|r|; 1e-6 * max|r| leaves margin
    atol = 1e-6 * np.abs(r).max()
    assert_allclose(est.booster_.init_score, [y.mean()], rtol=1e-15)
    assert_allclose(est.predict(X), y.mean() + sk.predict(X), rtol=0, atol=atol)


@pytest.mark.parametrize("max_leaf_nodes", N_LEAVES)
@pytest.mark.parametrize("min_samples_leaf", MIN_LEAF)
def test_thresholds_are_midpoints_of_distinct_values(max_leaf_nodes, min_samples_leaf):
    """Each threshold separates the same rows as CART's, and is a midpoint between the
    node's largest value on the left and the next distinct value of the feature."""
    X, y = make_data()
    sk = cart(X, y - y.mean(), max_leaf_nodes, min_samples_leaf)
    _, tree = one_stage(TreeBoostRegressor, X, y, max_leaf_nodes, min_samples_leaf)
    t = sk.tree_
    expected = []
    path = sk.decision_path(X).toarray().astype(bool)  # rows reaching each sklearn node
    for node in np.flatnonzero(t.children_left >= 0):
        f = t.feature[node]
        values = X[path[:, node], f]
        below = values[values <= t.threshold[node]].max()
        above = values[values > t.threshold[node]].min()
        # CART: the midpoint of the node's two values around the cut (exact: X is integer)
        assert t.threshold[node] == (below + above) / 2
        distinct = np.unique(X[:, f])
        # ours: the bin edge above `below`, i.e. the midpoint with the next distinct value
        expected.append((int(f), (below + distinct[distinct > below].min()) / 2))
    assert internal_splits(tree.feature, tree.threshold, tree.left) == sorted(expected)


@pytest.mark.xfail(strict=True, reason=(
    "Thresholds are global bin edges: when a node has no rows between its left maximum a "
    "and right minimum b, treeboost cuts at the midpoint of a and the feature's next "
    "distinct value, CART at (a + b) / 2. Training partitions and predictions agree; "
    "predictions of unseen values in that gap differ. SPEC §1.5 'same splits' is ambiguous"))
def test_thresholds_equal_cart_thresholds():
    X, y = make_data()
    sk = cart(X, y - y.mean(), 8, 1)
    _, tree = one_stage(TreeBoostRegressor, X, y, 8, 1)
    assert internal_splits(tree.feature, tree.threshold, tree.left) == internal_splits(
        sk.tree_.feature, sk.tree_.threshold, sk.tree_.children_left)


@pytest.mark.parametrize("max_leaf_nodes", N_LEAVES)
@pytest.mark.parametrize("min_samples_leaf", MIN_LEAF)
def test_absolute_error_leaves_are_medians_on_cart_partition(max_leaf_nodes,
                                                              min_samples_leaf):
    X, y = make_data()
    f0 = np.median(y)
    r = y - f0
    # LAD_TreeBoost grows on the negative gradient sign(y - F0) (unit hessian)
    sk = cart(X, np.sign(r), max_leaf_nodes, min_samples_leaf)
    est, tree = one_stage(TreeBoostRegressor, X, y, max_leaf_nodes, min_samples_leaf,
                          loss="absolute_error")
    assert est.booster_.init_score[0] == f0  # even n: both take (a + b) / 2 of the middle
    sk_leaves = sk.apply(X)
    assert_same_partition(apply(tree, X), sk_leaves)
    expected = np.empty_like(y)
    for leaf in np.unique(sk_leaves):
        rows = sk_leaves == leaf
        expected[rows] = f0 + np.median(r[rows])
    # medians are order statistics (or midpoints) of the same float64 residuals: the
    # only rounding is in F0 + median, the same on both sides
    assert_allclose(est.predict(X), expected, rtol=1e-15)


@pytest.mark.parametrize("max_leaf_nodes", N_LEAVES)
@pytest.mark.parametrize("min_samples_leaf", MIN_LEAF)
def test_log_loss_leaves_are_newton_steps_on_cart_partition(max_leaf_nodes,
                                                             min_samples_leaf):
    X, y = make_data()
    yb = (y > np.median(y) + 0.3).astype(np.float64)
    p = yb.mean()
    # at F0 the hessian p(1 - p) is the same for every row, so the second-order gain
    # ranks splits as least squares on the residuals y - p
    sk = cart(X, yb - p, max_leaf_nodes, min_samples_leaf)
    est, tree = one_stage(TreeBoostClassifier, X, yb, max_leaf_nodes, min_samples_leaf)
    assert_allclose(est.booster_.init_score, [np.log(p / (1 - p))], rtol=1e-14)
    sk_leaves = sk.apply(X)
    assert_same_partition(apply(tree, X), sk_leaves)
    expected = np.empty_like(y)
    for leaf in np.unique(sk_leaves):
        rows = sk_leaves == leaf
        expected[rows] = np.sum(yb[rows] - p) / np.sum(np.full(rows.sum(), p * (1 - p)))
    raw = est.decision_function(X) - est.booster_.init_score[0]
    # g = p - y and h = p(1 - p) are rounded to float32: ~1e-7 relative on the leaf
    assert_allclose(raw, expected, rtol=1e-6, atol=1e-7)


def test_textbook_two_stages_by_hand():
    """Friedman's LS_Boost on 9 rows, learning rate 1/2, stumps (all arithmetic exact)."""
    x = np.arange(1.0, 10.0)[:, None]
    y = np.array([2.0, 4.0, 3.0, 7.0, 9.0, 8.0, 14.0, 12.0, 13.0])
    # F0 = mean(y) = 72 / 9 = 8; residuals r1 = y - 8 = [-6, -4, -5, -1, 1, 0, 6, 4, 5].
    # Stump gains sum_L^2/n_L + sum_R^2/n_R (sum r = 0) for cuts after x = 1..8:
    # 81/2, 450/7, 225/2, 576/5, 405/4, 225/2, 729/14, 225/8: best x <= 4.5 (115.2),
    # leaves mean[-6, -4, -5, -1] = -4 and mean[1, 0, 6, 4, 5] = 16/5.
    # F1 = 8 + 0.5 * (-4) = 6 for x <= 4, 8 + 0.5 * 16/5 = 9.6 for x >= 5.
    # r2 = y - F1 = [-4, -2, -3, 1, -0.6, -1.6, 4.4, 2.4, 3.4]; gains 18, 162/7, 81/2,
    # 144/5, 16641/500, 2601/50, 7569/350, 2601/200: best x <= 6.5 (52.02), leaves
    # mean[-4, -2, -3, 1, -0.6, -1.6] = -1.7 and mean[4.4, 2.4, 3.4] = 3.4.
    # F2 = 6 - 0.85 = 5.15 (x <= 4), 9.6 - 0.85 = 8.75 (x = 5, 6), 9.6 + 1.7 = 11.3.
    F1 = np.array([6.0] * 4 + [9.6] * 5)
    F2 = np.array([5.15] * 4 + [8.75] * 2 + [11.3] * 3)
    est = TreeBoostRegressor(n_estimators=2, learning_rate=0.5, max_leaf_nodes=2,
                             min_samples_leaf=1, min_child_weight=0.0).fit(x, y)
    assert est.booster_.init_score[0] == 8.0
    stages = list(est.staged_predict(x))
    assert len(stages) == 2
    # residuals of stage 2 (e.g. -0.6) are not exact in float32: 1e-6 relative margin
    assert_allclose(stages[0], F1, rtol=1e-6)
    assert_allclose(stages[1], F2, rtol=1e-6)
    assert_allclose(est.predict(x), F2, rtol=1e-6)
    for (tree,), thr, gain, leaves in zip(est.booster_.trees, [4.5, 6.5], [576 / 5, 52.02],
                                          [(-2.0, 1.6), (-0.85, 1.7)], strict=True):
        assert tree.n_leaves == 2
        assert tree.feature[0] == 0
        assert tree.threshold[0] == thr  # midpoint of integers: exact
        assert_allclose(tree.gain[0], gain, rtol=1e-6)
        assert_allclose(tree.value[[tree.left[0], tree.right[0]]], leaves, rtol=1e-6)
