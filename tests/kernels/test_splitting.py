"""find_best_splits against the exhaustive twin and closed-form gains (DESIGN §4.1)."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from reference import best_split, histogram
from treeboost._dtypes import G_H_DTYPE, MISSING_BIN, N_BINS, NODE_DTYPE, SUM_DTYPE
from treeboost._kernels.grower import _subtract_packed, _unpack, search_pair
from treeboost._kernels.records import FeatureBins, QuantizedGradients, SplitParams
from treeboost._kernels.splitting import (
    BIN,
    BITSET_WORDS,
    GAIN,
    LEFT_C,
    LEFT_G,
    LEFT_H,
    MISSING_LEFT,
    N_SPLIT_COLUMNS,
    find_best_splits,
)

DEFAULTS = {"reg_lambda": 0.0, "reg_alpha": 0.0, "min_samples_leaf": 1,
            "min_child_weight": 1e-3, "hessian_counts": 0.0}


def run(hist, n_bins_non_missing, totals, features=None, **params):
    """find_best_splits on numerical features, with the grower's scalar types.

    The categorical parameters are set to non-defaults that must not matter here;
    every numerical feature must come back with an all-zero bitset.
    """
    p = {**DEFAULTS, **params}
    features = (np.arange(hist.shape[0], dtype=NODE_DTYPE) if features is None
                else np.asarray(features, dtype=NODE_DTYPE))
    out = np.empty((features.size, N_SPLIT_COLUMNS), dtype=SUM_DTYPE)
    bitsets = np.full((features.size, BITSET_WORDS), 0xFFFFFFFF, dtype=np.uint32)
    sum_g, sum_h, count = (float(t) for t in totals)
    feature_bins = FeatureBins(np.asarray(n_bins_non_missing, dtype=NODE_DTYPE),
                               np.zeros(hist.shape[0], dtype=np.uint8), MISSING_BIN)
    split = SplitParams(float(p["reg_lambda"]), float(p["reg_alpha"]),
                        float(p["min_samples_leaf"]), float(p["min_child_weight"]), 7.0, 3.0,
                        5, 2, float(p["hessian_counts"]))
    find_best_splits(hist, features, feature_bins, sum_g, sum_h, count, split, out, bitsets,
                     None, None)
    assert not bitsets.any()
    return out


def twin(hist, n_bins_non_missing, totals, **params):
    """The twin's (gain, bin, missing_left, gl, hl, cl) of every feature, as an array."""
    p = {**DEFAULTS, **params}
    return np.array([best_split(hist[f], n_bins_non_missing[f], *totals, **p)
                     for f in range(hist.shape[0])])


def random_node(seed=0, n_samples=600):
    """Histogram of a node: features with 2..255 bins, missing values, a one-bin
    feature with missing values, an all-missing feature and a one-bin feature."""
    rng = np.random.default_rng(seed)
    nb = np.array([255, 2, 7, 40, 1, 3, 1, 120], dtype=NODE_DTYPE)
    X = np.column_stack([rng.integers(0, b, n_samples) for b in nb]).astype(np.uint8)
    X[rng.random(X.shape) < 0.15] = MISSING_BIN
    X[:, 4][rng.random(n_samples) < 0.5] = MISSING_BIN  # one bin + missing
    X[:, 5] = MISSING_BIN  # all missing
    X[:, 6] = 0  # one bin, no missing
    X[:, 7][X[:, 7] == MISSING_BIN] = 3  # no missing at all
    # gradients with a signal on feature 3 so the best splits are well separated
    g = (rng.normal(size=n_samples) + (X[:, 3] < 20)).astype(G_H_DTYPE)
    h = rng.uniform(0.1, 1.0, n_samples).astype(G_H_DTYPE)
    hist = histogram(np.ascontiguousarray(X.T), np.arange(n_samples), g, h)
    return hist, nb, hist[0].sum(axis=0)


def assert_same_choice(out, expected):
    """Same bin and missing side exactly; same gain and left sums up to rounding."""
    assert_array_equal(out[:, BIN], expected[:, 1])
    assert_array_equal(out[:, MISSING_LEFT], expected[:, 2])
    # the twin sums bins in another order (numpy sum, missing bin added last):
    # float64 round-off on gains and sums of <= 600 terms of magnitude <= ~5
    assert_allclose(out[:, GAIN], expected[:, 0], rtol=1e-10, atol=1e-10)
    valid = np.isfinite(expected[:, 0])
    assert_allclose(out[valid][:, [LEFT_G, LEFT_H]], expected[valid][:, 3:5], rtol=1e-10,
                    atol=1e-10)
    assert_array_equal(out[valid][:, LEFT_C], expected[valid][:, 5])


CASES = {
    "defaults": {},
    "l2": {"reg_lambda": 3.0},
    "l1": {"reg_alpha": 2.5},
    "l1_l2": {"reg_alpha": 1.0, "reg_lambda": 1.0},
    "min_samples_leaf": {"min_samples_leaf": 150},
    "min_child_weight": {"min_child_weight": 90.0},
    "all": {"reg_alpha": 0.5, "reg_lambda": 2.0, "min_samples_leaf": 60,
            "min_child_weight": 40.0},
}


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("case", CASES)
def test_matches_exhaustive_twin(case, seed):
    hist, nb, totals = random_node(seed)
    expected = twin(hist, nb, totals, **CASES[case])
    out = run(hist, nb, totals, **CASES[case])
    assert_same_choice(out, expected)
    # features 5 (all missing) and 6 (one bin, no missing) have no split at all
    assert np.all(out[[5, 6], GAIN] == -np.inf)
    assert np.all(out[[5, 6], BIN] == -1)
    # feature 3 carries the signal: some split is valid whatever the constraints
    assert np.isfinite(out[3, GAIN])


@pytest.mark.parametrize("case", ["min_samples_leaf", "min_child_weight", "l1"])
def test_constraints_change_the_choice(case):
    """The parameter matters here, and the chosen children respect it."""
    hist, nb, totals = random_node(0)
    free = run(hist, nb, totals)
    out = run(hist, nb, totals, **CASES[case])
    assert np.any(free[:, BIN] != out[:, BIN]) or np.any(free[:, GAIN] != out[:, GAIN])
    valid = np.isfinite(out[:, GAIN])
    left_c, left_h = out[valid, LEFT_C], out[valid, LEFT_H]
    p = {**DEFAULTS, **CASES[case]}
    assert np.all(np.minimum(left_c, totals[2] - left_c) >= p["min_samples_leaf"])
    assert np.all(np.minimum(left_h, totals[1] - left_h) >= p["min_child_weight"])


def test_nothing_valid_gives_minus_inf():
    hist, nb, totals = random_node(0)
    count, sum_h = totals[2], totals[1]
    for params in ({"min_samples_leaf": count // 2 + 1},
                   {"min_child_weight": sum_h / 2 + 1e-6}):
        out = run(hist, nb, totals, **params)
        assert np.all(out[:, GAIN] == -np.inf)
        assert np.all(out[:, BIN] == -1)
        assert_allclose(twin(hist, nb, totals, **params)[:, 0], -np.inf)


def test_constant_gradients_gain_nothing():
    rng = np.random.default_rng(4)
    X = rng.integers(0, 30, size=(3, 500)).astype(np.uint8)  # feature-major
    X[1, ::4] = MISSING_BIN
    g = np.full(500, 0.5, dtype=G_H_DTYPE)
    hist = histogram(X, np.arange(500), g, np.ones(500, dtype=G_H_DTYPE))
    totals = hist[0].sum(axis=0)
    out = run(hist, [30, 30, 30], totals)
    # G = n/2, H = n for every child: n_L/4 + n_R/4 - n/4, binary fractions, exactly 0
    assert np.all(out[:, GAIN] == 0.0)
    assert_same_choice(out, twin(hist, [30, 30, 30], totals))


@pytest.mark.parametrize("reg_lambda", [0.0, 1.0])
def test_empty_node(reg_lambda):
    hist = np.zeros((2, N_BINS, 3), dtype=SUM_DTYPE)
    # reg_lambda == 0 too: a score with H + lambda <= 0 is 0, not 0/0 (NaN when jitted,
    # ZeroDivisionError under NUMBA_DISABLE_JIT=1)
    out = run(hist, [10, 1], (0.0, 0.0, 0.0), reg_lambda=reg_lambda)
    assert np.all(out[:, GAIN] == -np.inf)


def small_hist(values, missing=None):
    """One feature from rows of (g, h, count) per bin (and the missing bin)."""
    hist = np.zeros((1, N_BINS, 3), dtype=SUM_DTYPE)
    hist[0, : len(values)] = values
    if missing is not None:
        hist[0, MISSING_BIN] = missing
    return hist


@pytest.mark.parametrize(("params", "gain"), [
    # G_L, G_R = -3, 3 at bin 1: 9/2 + 9/1 - 0
    ({}, 13.5),
    # L2: 9/(2+1) + 9/(1+1)
    ({"reg_lambda": 1.0}, 7.5),
    # L1 shrinks |G| by 1: 2^2/2 + 2^2/1
    ({"reg_alpha": 1.0}, 6.0),
])
def test_closed_form_gain(params, gain):
    hist = small_hist([[-2, 1, 1], [-1, 1, 1], [3, 1, 1]])
    out = run(hist, [3], (0.0, 3.0, 3.0), min_child_weight=0.0, **params)
    assert out[0, BIN] == 1
    # three exact small sums and two divisions: a couple of float64 roundings
    assert_allclose(out[0, GAIN], gain, rtol=1e-14)
    # no missing rows: unseen NaN go with the larger child (the left one, 2 rows)
    assert out[0, MISSING_LEFT] == 1
    assert_array_equal(out[0, [LEFT_G, LEFT_H, LEFT_C]], [-3, 2, 2])


def test_missing_direction():
    # values g = -2 | +2, missing g = -2: sending the missing row left is best:
    # (-4)^2/2 + 2^2/1 - (-2)^2/3 = 32/3
    hist = small_hist([[-2, 1, 1], [2, 1, 1]], missing=[-2, 1, 1])
    out = run(hist, [2], (-2.0, 3.0, 3.0), min_child_weight=0.0)
    assert out[0, BIN] == 0
    assert out[0, MISSING_LEFT] == 1
    assert_allclose(out[0, GAIN], 32 / 3, rtol=1e-14)  # a few roundings of O(10) values
    # with the missing row worth +2 it goes right, with the +2 value bin
    hist[0, MISSING_BIN, 0] = 2.0
    out = run(hist, [2], (2.0, 3.0, 3.0), min_child_weight=0.0)
    assert (out[0, BIN], out[0, MISSING_LEFT]) == (0, 0)


def test_missing_left_with_every_value_but_the_last_bin():
    # g = -1, -1, +3 in bins 0..2 and -1 on the missing row: the best split is
    # bins 0-1 and missing left (G_L = -3, H_L = 3), bin 2 right: 9/3 + 9/1 - 0 = 12
    hist = small_hist([[-1, 1, 1], [-1, 1, 1], [3, 1, 1]], missing=[-1, 1, 1])
    out = run(hist, [3], (0.0, 4.0, 4.0), min_child_weight=0.0)
    assert (out[0, BIN], out[0, MISSING_LEFT]) == (1, 1)
    assert_allclose(out[0, GAIN], 12.0, rtol=1e-14)  # exact sums, two roundings at most


def test_one_value_bin_with_missing_splits_values_from_missing():
    hist = small_hist([[-1, 1, 5]], missing=[1, 1, 3])
    out = run(hist, [1], (0.0, 2.0, 8.0))
    # the only split: every value left (bin 0 = n_bins - 1), missing right
    assert (out[0, BIN], out[0, MISSING_LEFT]) == (0, 0)
    assert out[0, LEFT_C] == 5
    assert_allclose(out[0, GAIN], 2.0, rtol=1e-14)  # 1/1 + 1/1 - 0, exact up to rounding


def test_only_listed_features_are_scanned():
    hist, nb, totals = random_node(3)
    out = run(hist, nb, totals, features=[7, 3])
    expected = twin(hist, nb, totals)[[7, 3]]
    assert out.shape == (2, N_SPLIT_COLUMNS)
    assert_same_choice(out, expected)


@pytest.mark.parametrize("n_threads", [1, 2, 3, 8])
@pytest.mark.parametrize("features", [None, [1, 3, 7], [7]])
@pytest.mark.parametrize("subtract", [-1, 0, 1])
def test_sibling_searches_side_by_side(n_threads, features, subtract):
    """Two siblings' searches on the threads (grower.search_pair) give each one's
    find_best_splits, bit for bit, however the features are shared among the threads;
    the larger child's histogram, its parent's less the smaller's, for the features
    searched."""
    (h0, nb, t0), (h1, _, t1) = random_node(seed=3), random_node(seed=4, n_samples=90)
    children = [h0, h1]
    pool = np.stack([np.zeros_like(h0), h1, h0])  # the nodes' histograms in slots 2 and 1
    feats = (np.arange(h0.shape[0], dtype=NODE_DTYPE) if features is None
             else np.asarray(features, dtype=NODE_DTYPE))
    expected_pool = pool.copy()
    if subtract >= 0:  # that node's slot holds the parent's histogram: both children's sum
        parent = 2 if subtract == 0 else 1
        pool[parent] = h0 + h1
        expected_pool[parent] = pool[parent]
        for f in feats:
            expected_pool[parent, f] = pool[parent, f] - children[1 - subtract][f]
        children[subtract] = expected_pool[parent]
    sums = np.array([t0, t1], dtype=SUM_DTYPE)
    feature_bins = FeatureBins(nb, np.zeros(h0.shape[0], dtype=np.uint8), MISSING_BIN)
    split = SplitParams(0.5, 0.1, 5.0, 1e-3, 7.0, 3.0, 5, 2)
    out = np.full((2, h0.shape[0] + 2, N_SPLIT_COLUMNS), np.nan, dtype=SUM_DTYPE)
    bitsets = np.full((2, h0.shape[0] + 2, BITSET_WORDS), 7, dtype=np.uint32)
    search_pair(pool, np.array([2, 1], dtype=np.int64), sums, subtract, feats, feature_bins,
                split, out, bitsets, None, n_threads, None, np.zeros(2))
    assert_array_equal(pool, expected_pool)
    for node in range(2):
        expected = run(children[node], nb, sums[node], features=feats, reg_lambda=0.5,
                       reg_alpha=0.1, min_samples_leaf=5)
        assert_array_equal(out[node, :feats.size], expected)
        assert not bitsets[node, :feats.size].any()
        assert np.isnan(out[node, feats.size:]).all()  # past the listed features: untouched


@pytest.mark.parametrize("n_threads", [1, 2, 3])
@pytest.mark.parametrize("features", [None, [1, 3, 7]])
@pytest.mark.parametrize("subtract", [-1, 0, 1])
def test_quantised_sibling_searches_side_by_side(n_threads, features, subtract):
    """Quantised (packed integer histograms): search_pair's subtraction of the packed
    histograms and each thread's unpacking of its features give the float histograms
    and the splits of the serial path (_subtract_packed, _unpack of both children, then
    the searches), bit for bit."""
    rng = np.random.default_rng(5)
    nb = np.array([255, 2, 7, 40, 1, 3, 1, 120], dtype=NODE_DTYPE)
    n_features = nb.size
    feats = (np.arange(n_features, dtype=NODE_DTYPE) if features is None
             else np.asarray(features, dtype=NODE_DTYPE))
    # two children's packed (g << 32) + h sums of quantised levels, h >= 0
    children = []
    for n_rows in (500, 300):
        packed = np.zeros((n_features, N_BINS), dtype=np.int64)
        for f in range(n_features):
            bins = np.where(rng.random(n_rows) < 0.15, MISSING_BIN, rng.integers(0, nb[f], n_rows))
            g = rng.integers(-4, 5, n_rows) + (bins < nb[f] // 2)
            h = rng.integers(0, 5, n_rows)
            np.add.at(packed[f], bins, (g.astype(np.int64) << 32) + h)
        children.append(packed)
    packed_pool = np.zeros((3, n_features, N_BINS), dtype=np.int64)
    packed_pool[2], packed_pool[1] = children  # nodes 0 and 1 in slots 2 and 1
    if subtract >= 0:  # that node's slot holds the parent's: both children's sums
        packed_pool[2 if subtract == 0 else 1] = children[0] + children[1]
    slots = np.array([2, 1], dtype=np.int64)
    counts = np.array([500.0, 300.0])
    scales = np.array([0.37, 0.011])
    feature_bins = FeatureBins(nb, np.zeros(n_features, dtype=np.uint8), MISSING_BIN)
    split = SplitParams(0.5, 0.1, 5.0, 1e-3, 7.0, 3.0, 5, 2)
    # the serial path: subtract, unpack over every feature, search without quant
    serial_packed = packed_pool.copy()
    serial_pool = np.zeros((3, n_features, N_BINS, 3), dtype=SUM_DTYPE)
    all_features = np.arange(n_features, dtype=NODE_DTYPE)
    if subtract >= 0:
        _subtract_packed(serial_packed[slots[subtract]], serial_packed[slots[1 - subtract]],
                         all_features, nb, MISSING_BIN)
    factors = np.zeros(2)
    for c in range(2):
        _unpack(serial_pool[slots[c]], serial_packed[slots[c]], all_features, nb,
                MISSING_BIN, scales, counts[c])
        total = sum(int(serial_packed[slots[c], 0, b]) & 0xFFFFFFFF
                    for b in [*range(nb[0]), MISSING_BIN])
        factors[c] = counts[c] / total if total > 0 else 0.0
    sums = np.array([[serial_pool[slots[c], 0, :, k].sum() for k in range(3)]
                     for c in range(2)])
    shape = (2, n_features + 2, N_SPLIT_COLUMNS)
    expected = np.full(shape, np.nan, dtype=SUM_DTYPE)
    bitsets = np.zeros((2, n_features + 2, BITSET_WORDS), dtype=np.uint32)
    search_pair(serial_pool, slots, sums, -1, feats, feature_bins, split, expected, bitsets,
                None, 1, None, np.zeros(2))
    # side by side: the packed subtraction and the unpacking in the parallel region
    pool = np.zeros_like(serial_pool)
    quant = QuantizedGradients(np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64),
                               packed_pool, scales)
    out = np.full(shape, np.nan, dtype=SUM_DTYPE)
    search_pair(pool, slots, sums, subtract, feats, feature_bins, split, out, bitsets, None,
                n_threads, quant, factors)
    assert_array_equal(out, expected)
    for c in range(2):
        for f in feats:
            assert_array_equal(packed_pool[slots[c], f], serial_packed[slots[c], f])
            assert_array_equal(pool[slots[c], f], serial_pool[slots[c], f])
    assert np.isfinite(out[:, :feats.size, GAIN]).any()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hessian_counts_bound_the_estimated_rows(seed):
    """leaf_count="hessian": min_samples_leaf bounds each child's hessian sum times the
    node's rows per unit of hessian (LightGBM's estimate), as the exhaustive twin does;
    with these hessians (0.1-1) the estimate moves some features' best split."""
    rng = np.random.default_rng(seed)
    n = 600
    nb = np.array([255, 40, 7], dtype=NODE_DTYPE)
    X = np.column_stack([rng.integers(0, b, n) for b in nb]).astype(np.uint8)
    X[rng.random(X.shape) < 0.1] = MISSING_BIN
    g = (rng.normal(size=n) + (X[:, 1] < 20)).astype(G_H_DTYPE)
    # confident rows (small hessians) at the low values of every feature, as a log loss
    # gives where the model already separates the classes
    h = np.where(X[:, 0] < 100, 0.05, 1.0).astype(G_H_DTYPE) * rng.uniform(0.5, 1.0, n)
    hist = histogram(np.ascontiguousarray(X.T), np.arange(n), g, h.astype(G_H_DTYPE))
    totals = hist[0].sum(axis=0)
    by_hessian = run(hist, nb, totals, min_samples_leaf=150, hessian_counts=1.0)
    assert_same_choice(by_hessian, twin(hist, nb, totals, min_samples_leaf=150,
                                        hessian_counts=1.0))
    by_rows = run(hist, nb, totals, min_samples_leaf=150)
    assert not np.array_equal(by_hessian[:, BIN], by_rows[:, BIN])
    chosen = by_hessian[:, BIN] >= 0
    estimate = by_hessian[chosen, LEFT_H] * totals[2] / totals[1]
    assert np.all(np.floor(estimate + 0.5) >= 150)
    assert np.all(np.floor((totals[1] - by_hessian[chosen, LEFT_H]) * totals[2] / totals[1]
                           + 0.5) >= 150)


def test_hessian_counts_with_unit_hessians_are_the_rows():
    """With every hessian 1 the estimate is the rows: the same splits, bit for bit."""
    hist, nb, totals = random_node(4)
    hist = hist.copy()
    hist[:, :, 1] = hist[:, :, 2]  # unit hessians: each bin's hessian sum is its count
    totals = hist[0].sum(axis=0)
    assert_array_equal(run(hist, nb, totals, min_samples_leaf=150, hessian_counts=1.0),
                       run(hist, nb, totals, min_samples_leaf=150))
