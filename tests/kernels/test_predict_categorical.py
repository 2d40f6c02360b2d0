"""predict_raw and predict_binned on trees with categorical splits."""

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from reference import bitset_of, has_bit, leaf_of, predict
from treeboost._dtypes import (
    G_H_DTYPE,
    INDEX_DTYPE,
    MISSING_BIN,
    NODE_DTYPE,
    SUM_DTYPE,
    X_DTYPE,
    readonly,
)
from treeboost._kernels.predict import _BLOCK, predict_binned, predict_raw
from treeboost.binning import BinMapper
from treeboost.grower import GrowerParams, TreeGrower
from treeboost.predictor import PackedTrees
from treeboost.tree import Tree

IS_CATEGORICAL = [1, 0, 1, 1]
CATS = [np.arange(12.0), None, np.array([-1.5, 0.0, 2.0, 3.5, 10.0, 100.0]),
        0.5 * np.arange(40)]


def make_X(n_samples, seed, unseen=False):
    """Categorical features 0, 2 (with NaN) and 3 around a numerical feature 1; with
    ``unseen``, some values that are no training category."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_samples, 4))
    for f in (0, 2, 3):
        X[:, f] = rng.choice(CATS[f], n_samples)
    X[rng.random(n_samples) < 0.2, 2] = np.nan
    if unseen:
        for f, values in ((0, [12.0, -1.0, 0.5]), (2, [1.0, np.inf]), (3, [100.0, 0.25])):
            rows = rng.random(n_samples) < 0.15
            X[rows, f] = rng.choice(values, rows.sum())
    return X


def grow_tree(X, bin_mapper, seed, max_leaf_nodes=12):
    """A tree grown on X's bins; leaf values are distinct integers (exact sums)."""
    rng = np.random.default_rng(seed)
    effects = rng.normal(size=(4, 64))
    nan_signal = 3.0 * (-1) ** seed  # NaN rows look like large or small effects by turns
    X_binned = bin_mapper.transform(X)
    f2 = np.where(X_binned[2] == MISSING_BIN, nan_signal, effects[2][X_binned[2] % 64])
    gradient = (effects[0][X_binned[0]] + X[:, 1] + f2 + effects[3][X_binned[3]]
                + 0.3 * rng.normal(size=X.shape[0])).astype(G_H_DTYPE)
    grower = TreeGrower(X_binned, bin_mapper.n_bins_non_missing_, bin_mapper.is_categorical_,
                        # no code-order splits (they keep NaN right): the fixture wants
                        # NaN sent both ways, which the unordered scans do here
                        GrowerParams(max_leaf_nodes=max_leaf_nodes, min_samples_leaf=5,
                                     max_cat_ordered=0))
    grown = grower.grow(gradient, np.ones_like(gradient),
                        np.arange(X.shape[0], dtype=INDEX_DTYPE),
                        np.arange(X.shape[1], dtype=NODE_DTYPE), all_rows=True)
    internal = grown.left >= 0
    threshold = np.zeros(grown.left.size, dtype=X_DTYPE)
    threshold[internal] = bin_mapper.thresholds(grown.feature[internal],
                                                grown.bin_threshold[internal])
    value = np.zeros(grown.left.size, dtype=SUM_DTYPE)
    value[~internal] = 1 + rng.permutation(int((~internal).sum()))
    tree = Tree(feature=grown.feature, threshold=threshold, bin_threshold=grown.bin_threshold,
                missing_left=grown.missing_left, is_categorical=grown.is_categorical,
                cat_bitset=grown.cat_bitset, left=grown.left, right=grown.right, value=value,
                gain=grown.gain, count=grown.count, cover=grown.sum_h)
    assert tree.n_leaves == max_leaf_nodes
    return tree


def categories_of(bin_mapper):
    return [bin_mapper.bin_edges_[f, : bin_mapper.n_edges_[f]]
            for f in range(bin_mapper.n_edges_.size)]


@pytest.fixture(scope="module")
def model():
    X = make_X(3000, 0)
    bin_mapper = BinMapper(random_state=0, is_categorical=IS_CATEGORICAL).fit(X)
    trees = [grow_tree(X, bin_mapper, seed) for seed in range(3)]
    nodes = [(t, n) for t in trees for n in np.flatnonzero(t.left >= 0)]
    for t, n in nodes:  # the node's flag is its feature's
        assert t.is_categorical[n] == IS_CATEGORICAL[t.feature[n]]
    assert {t.feature[n] for t, n in nodes} == {0, 1, 2, 3}
    # NaN (bit 255 of feature 2's splits) is sent both ways across the model
    assert {has_bit(t.cat_bitset[n], MISSING_BIN) for t, n in nodes if t.feature[n] == 2} \
        == {False, True}
    return bin_mapper, trees


def raw_kernel(trees, outputs, X, n_outputs, bin_mapper):
    """predict_raw on trees packed by the predictor (category tables from bin_mapper)."""
    packed = PackedTrees(trees, outputs, bin_mapper)
    out = np.zeros((X.shape[0], n_outputs), dtype=SUM_DTYPE)
    predict_raw(readonly(np.ascontiguousarray(X)), packed.feature, packed.threshold,
                packed.missing_left, packed.left, packed.right, packed.value,
                packed.is_categorical, packed.cat_bitset, packed.categories,
                packed.n_categories, MISSING_BIN, packed.tree_roots, packed.tree_outputs, out)
    return out


def binned_kernel(tree, X_binned, rows, raw_score):
    predict_binned(X_binned, tree.feature, tree.bin_threshold, tree.missing_left, tree.left,
                   tree.right, tree.value, tree.is_categorical, tree.cat_bitset, MISSING_BIN, 0,
                   rows.astype(INDEX_DTYPE), raw_score)
    return raw_score


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n_samples", [0, 1, _BLOCK, 3 * _BLOCK + 5])
def test_predict_raw_matches_twin(model, n_samples, dtype):
    bin_mapper, trees = model
    X = make_X(n_samples, 1, unseen=True).astype(dtype)
    expected = predict(trees, [0, 1, 0], X.astype(X_DTYPE), 2,
                       categories=categories_of(bin_mapper))
    # leaf values are integers < 2**53: every sum is exact, so compare exactly
    assert_array_equal(raw_kernel(trees, [0, 1, 0], X, 2, bin_mapper), expected)


def test_predict_binned_matches_raw(model):
    bin_mapper, trees = model
    X = make_X(3 * _BLOCK + 5, 2, unseen=True)
    X_binned = bin_mapper.transform(X)
    rows = np.arange(X.shape[0])
    for tree in trees:
        binned = binned_kernel(tree, X_binned, rows, np.zeros(X.shape[0], dtype=SUM_DTYPE))
        assert_array_equal(binned, raw_kernel([tree], [0], X, 1, bin_mapper)[:, 0])
        assert_array_equal(binned, predict([tree], [0], X_binned, 1, binned=True)[:, 0])
        assert np.unique(binned).size > 1


def test_unseen_categories_go_with_missing(model):
    """An unseen value reaches the leaf that NaN reaches, in every tree."""
    bin_mapper, trees = model
    X = make_X(400, 3)
    X_nan, X_unseen = X.copy(), X.copy()
    X_nan[:, [0, 2, 3]] = np.nan
    X_unseen[:, [0, 2, 3]] = [[77.0, -3.0, 0.3]]
    assert_array_equal(raw_kernel(trees, [0, 1, 2], X_nan, 3, bin_mapper),
                       raw_kernel(trees, [0, 1, 2], X_unseen, 3, bin_mapper))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("missing_goes_left", [False, True])
def test_categorical_stump_by_hand(missing_goes_left, dtype):
    """Categories 20 and 40 (bins 1, 3) go left, unseen values and NaN where bit 255 says;
    the node's threshold and missing_left are ignored."""
    bin_mapper = BinMapper(is_categorical=[True]).fit(np.array([[10.0], [20.0], [30.0],
                                                                [40.0]]))
    left = [1, 3] + ([MISSING_BIN] if missing_goes_left else [])
    stump = Tree(feature=np.array([0, -1, -1], dtype=NODE_DTYPE),
                 threshold=np.array([1e9, 0.0, 0.0]),  # numerically: every value left
                 bin_threshold=np.array([-1, -1, -1], dtype=NODE_DTYPE),
                 missing_left=np.array([not missing_goes_left, 0, 0], dtype=np.uint8),
                 is_categorical=np.array([1, 0, 0], dtype=np.uint8),
                 cat_bitset=np.stack([bitset_of(left), bitset_of([]), bitset_of([])]),
                 left=np.array([1, -1, -1], dtype=NODE_DTYPE),
                 right=np.array([2, -1, -1], dtype=NODE_DTYPE),
                 value=np.array([0.0, 10.0, 20.0]), gain=np.zeros(3),
                 count=np.zeros(3, dtype=np.int64), cover=np.zeros(3))
    below_20 = np.nextafter(dtype(20.0), dtype(0.0))  # next to a category, in X's dtype
    X = np.array([[10.0], [20.0], [30.0], [40.0], [25.0], [np.nan], [1e30], [-np.inf],
                  [below_20]], dtype=dtype)
    m = 10.0 if missing_goes_left else 20.0
    expected = [20, 10, 20, 10, m, m, m, m, m]
    assert_array_equal(raw_kernel([stump], [0], X, 1, bin_mapper)[:, 0], expected)
    X_binned = bin_mapper.transform(X)
    assert_array_equal(X_binned[0], [0, 1, 2, 3] + [MISSING_BIN] * 5)
    score = binned_kernel(stump, X_binned, np.arange(X.shape[0]),
                          np.zeros(X.shape[0], dtype=SUM_DTYPE))
    assert_array_equal(score, expected)
    assert_array_equal(leaf_of(stump, X_binned, binned=True),
                       leaf_of(stump, X.astype(X_DTYPE), categories=categories_of(bin_mapper)))
