"""build_histograms / build_histograms_root against the bincount twin (DESIGN §4.1-4.2)."""

import numba
import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from reference import histogram
from treeboost._dtypes import (
    G_H_DTYPE,
    HIST_C,
    HIST_G,
    HIST_H,
    INDEX_DTYPE,
    MISSING_BIN,
    N_BINS,
    NODE_DTYPE,
    SUM_DTYPE,
    X_BINNED_DTYPE,
)
from treeboost._kernels.histogram import (
    PER_OUTPUT_BELOW,
    all_ones,
    all_ones_parallel,
    build_histograms,
    build_histograms_root,
    build_histograms_serial,
    build_root_histograms_multi,
    unit_hessians,
)

# Gradients are float32, promoted exactly to float64 and summed in float64 by both the
# kernel and the twin; only the order of additions may differ, which costs at most
# ~n * eps64 * sum|g| ~ 2e3 * 1.1e-16 * 2e3 < 1e-9 on our nodes of <= 2,000 rows with
# |g| <= 1. Hence this absolute tolerance; rtol is the float64 round-off of one sum.
SUM_TOL = {"rtol": 1e-12, "atol": 1e-9}


def make_data(n_samples=2000, n_features=5, seed=0, missing_fraction=0.1):
    """Feature-major bins (n_features, n_samples), C order (feature 0 all missing,
    feature 1 one bin) and float32 g, h."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 255, size=(n_samples, n_features)).astype(X_BINNED_DTYPE)
    X[rng.random(X.shape) < missing_fraction] = MISSING_BIN
    X[:, 0] = MISSING_BIN  # an all-missing feature
    X[:, 1] = 0  # a one-bin feature
    gradient = rng.uniform(-1, 1, n_samples).astype(G_H_DTYPE)
    hessian = rng.uniform(0, 1, n_samples).astype(G_H_DTYPE)
    return np.ascontiguousarray(X.T), gradient, hessian


# the grower calls the serial kernel on small nodes, the parallel one on large nodes
KERNELS = [build_histograms, build_histograms_serial]
by_kernel = pytest.mark.parametrize("kernel", KERNELS, ids=["parallel", "serial"])


def run(X, sample_indices, gradient, hessian, features=None, kernel=build_histograms,
        n_threads=2):
    """Call a histogram kernel with the dtypes the grower uses."""
    n_features, n_samples = X.shape
    features = np.arange(n_features, dtype=NODE_DTYPE) if features is None else features
    hist = np.zeros((n_features, N_BINS, 3), dtype=SUM_DTYPE)
    scratch_g = np.empty(n_samples, dtype=G_H_DTYPE)
    scratch_h = np.empty(n_samples, dtype=G_H_DTYPE)
    args = (X, sample_indices.astype(INDEX_DTYPE), gradient, hessian, features, scratch_g,
            scratch_h, hist)
    kernel(*args, *([] if kernel is build_histograms_serial else [n_threads]))
    return hist


def assert_hist_equal(actual, expected):
    """Counts exactly, float sums to SUM_TOL."""
    assert_array_equal(actual[..., HIST_C], expected[..., HIST_C])
    assert_allclose(actual[..., HIST_G], expected[..., HIST_G], **SUM_TOL)
    assert_allclose(actual[..., HIST_H], expected[..., HIST_H], **SUM_TOL)


@by_kernel
@pytest.mark.parametrize("n_node", [0, 1, 17, 1500])
def test_build_histograms_matches_twin(n_node, kernel):
    X, g, h = make_data()
    rng = np.random.default_rng(n_node)
    n_features, n_samples = X.shape
    rows = np.sort(rng.choice(n_samples, n_node, replace=False))
    hist = run(X, rows, g, h, kernel=kernel)
    assert_hist_equal(hist, histogram(X, rows, g, h))
    assert hist[..., HIST_C].sum() == n_node * n_features


@by_kernel
def test_edge_features(kernel):
    X, g, h = make_data()
    rows = np.arange(0, X.shape[1], 3)
    hist = run(X, rows, g, h, kernel=kernel)
    # all-missing feature: every row in the missing bin
    assert hist[0, MISSING_BIN, HIST_C] == rows.size
    assert hist[0, :MISSING_BIN, HIST_C].sum() == 0
    # one-bin feature: every row in bin 0
    assert hist[1, 0, HIST_C] == rows.size
    assert hist[1, 1:, HIST_C].sum() == 0
    # a feature with some missing values has them in the missing bin only
    n_missing = int((X[2, rows] == MISSING_BIN).sum())
    assert n_missing > 0
    assert hist[2, MISSING_BIN, HIST_C] == n_missing


@by_kernel
def test_one_row(kernel):
    X, g, h = make_data()
    hist = run(X, np.array([7]), g, h, kernel=kernel)
    for f in range(X.shape[0]):
        b = X[f, 7]
        # a single float32 value promoted to float64: exact
        assert_array_equal(hist[f, b], [g[7], h[7], 1.0])
        assert hist[f].sum(axis=0)[HIST_C] == 1


@by_kernel
def test_constant_gradients_equal_counts(kernel):
    X, _, _ = make_data()
    ones = np.ones(X.shape[1], dtype=G_H_DTYPE)
    rows = np.arange(X.shape[1])
    hist = run(X, rows, ones, 2 * ones, kernel=kernel)
    # sums of 1.0 and 2.0 are integers below 2**53: exact
    assert_array_equal(hist[..., HIST_G], hist[..., HIST_C])
    assert_array_equal(hist[..., HIST_H], 2 * hist[..., HIST_C])


@by_kernel
def test_subset_of_features_leaves_others_zero(kernel):
    X, g, h = make_data()
    rows = np.arange(0, X.shape[1], 2)
    features = np.array([1, 3], dtype=NODE_DTYPE)
    hist = run(X, rows, g, h, features, kernel=kernel)
    assert_hist_equal(hist, histogram(X, rows, g, h, features=[1, 3]))
    assert not hist[[0, 2, 4]].any()
    assert hist[3, :, HIST_C].sum() == rows.size


def test_root_equals_general_with_all_indices():
    X, g, h = make_data()
    n_features, n_samples = X.shape
    features = np.arange(n_features, dtype=NODE_DTYPE)
    root = np.zeros((n_features, N_BINS, 3), dtype=SUM_DTYPE)
    build_histograms_root(X, g, h, features, root, 2)
    # same values added in the same row order: bit-identical
    for kernel in KERNELS:
        assert_array_equal(root, run(X, np.arange(n_samples), g, h, kernel=kernel))
    for shares in range(1, n_features + 2):  # pairs and a single, however shared
        again = np.zeros_like(root)
        build_histograms_root(X, g, h, features, again, shares)
        assert_array_equal(root, again)
    assert_hist_equal(root, histogram(X, np.arange(n_samples), g, h))


def test_subtraction_gives_sibling():
    X, g, h = make_data()
    rng = np.random.default_rng(1)
    parent = np.sort(rng.choice(X.shape[1], 1200, replace=False))
    in_left = rng.random(parent.size) < 0.3
    left, right = parent[in_left], parent[~in_left]
    diff = run(X, parent, g, h) - run(X, left, g, h)
    brute = run(X, right, g, h)
    assert_array_equal(diff[..., HIST_C], brute[..., HIST_C])  # integer-valued floats
    # parent - left cancels: the error is a few eps64 times the parent's |sums| (<= 1200)
    assert_allclose(diff[..., :2], brute[..., :2], rtol=0, atol=1e-9)


def test_serial_equals_parallel():
    X, g, h = make_data()
    rows = np.sort(np.random.default_rng(3).choice(X.shape[1], 1111, replace=False))
    # one pass per feature in row order in both: bit-identical
    assert_array_equal(run(X, rows, g, h, kernel=build_histograms),
                       run(X, rows, g, h, kernel=build_histograms_serial))


def test_independent_of_thread_count():
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs 2 Numba threads")
    X, g, h = make_data()
    rows = np.arange(1, X.shape[1], 2)
    previous = numba.get_num_threads()
    try:
        results = []
        for n_threads in (1, 2):
            numba.set_num_threads(n_threads)
            # every split of the features into shares, more shares than threads too
            for shares in range(1, X.shape[0] + 2):
                results.append(run(X, rows, g, h, n_threads=shares))
    finally:
        numba.set_num_threads(previous)
    # one thread sums each feature in row order: bit-identical by design (DESIGN §1.5)
    for result in results[1:]:
        assert_array_equal(results[0], result)


@pytest.mark.parametrize("shares", [1, 2, 3, 5])  # threads, one share of the features each
@pytest.mark.parametrize("block", [7, 2048])  # rows gathered per block: several, or one
# a pass per output below PER_OUTPUT_BELOW outputs, gathered vectors from it on
@pytest.mark.parametrize("n_outputs", [2, PER_OUTPUT_BELOW - 1, PER_OUTPUT_BELOW, 11])
@pytest.mark.parametrize("count_rows", [True, False])
def test_multi_output_root_equals_one_root_per_output(block, shares, n_outputs, count_rows):
    """A stage's shared root gives each output the histogram of its own pass, bit for
    bit (same additions in the same order), over the used bins of the listed features,
    whichever way it adds the outputs; with count_rows False it leaves the counts (the
    grower's, counted once a fit) as they are."""
    rng = np.random.default_rng(4)
    n_samples, n_features = 600, 4
    X = rng.integers(0, 30, size=(n_features, n_samples)).astype(X_BINNED_DTYPE)
    X[rng.random(X.shape) < 0.1] = MISSING_BIN
    X[2] %= 3  # a feature with three bins: bins past them are never written
    n_bins = np.array([30, 30, 3, 30], dtype=NODE_DTYPE)
    gradient = rng.normal(size=(n_outputs, n_samples)).astype(G_H_DTYPE)
    hessian = rng.uniform(0.1, 1.0, size=(n_outputs, n_samples)).astype(G_H_DTYPE)
    rows = np.sort(rng.choice(n_samples, 450, replace=False)).astype(INDEX_DTYPE)
    features = np.array([0, 2, 3], dtype=NODE_DTYPE)
    multi = np.full((n_features, N_BINS, 2 * n_outputs), np.nan)  # unused bins stay NaN
    counts = np.full((n_features, N_BINS), np.nan if count_rows else 7.0)
    build_root_histograms_multi(X, rows, gradient, hessian, features, n_bins, MISSING_BIN,
                                np.empty((shares, block, 2 * n_outputs), G_H_DTYPE), multi,
                                counts, count_rows, shares)
    for k in range(n_outputs):
        hist = np.zeros((n_features, N_BINS, 3), dtype=SUM_DTYPE)
        build_histograms_serial(X, rows, gradient[k], hessian[k], features,
                                np.empty(n_samples, G_H_DTYPE), np.empty(n_samples, G_H_DTYPE),
                                hist)
        for f in features:
            used = np.r_[np.arange(n_bins[f]), MISSING_BIN]
            assert_array_equal(multi[f, used, 2 * k], hist[f, used, HIST_G])
            assert_array_equal(multi[f, used, 2 * k + 1], hist[f, used, HIST_H])
            assert_array_equal(counts[f, used], hist[f, used, HIST_C] if count_rows else 7.0)
    assert np.isnan(multi[1]).all()  # a feature not listed is not touched
    assert np.isnan(multi[2, 3:MISSING_BIN]).all()


@pytest.mark.parametrize("kernel", ["root", "parallel", "serial"])
def test_unit_hessians_give_the_three_float_histogram_bit_for_bit(kernel):
    """hessian=None (every hessian 1.0) adds (g, count) and unit_hessians copies the
    count into the hessian column: the very bits of adding the ones (rows in order)."""
    X, gradient, _ = make_data(n_samples=3000, n_features=6, seed=5)
    ones = np.ones_like(gradient)
    features = np.array([0, 2, 3, 5], dtype=NODE_DTYPE)
    n_bins = np.full(X.shape[0], MISSING_BIN, dtype=NODE_DTYPE)
    rows = np.arange(X.shape[1], dtype=INDEX_DTYPE) if kernel == "root" else \
        np.flatnonzero(np.random.default_rng(1).random(X.shape[1]) < 0.6).astype(INDEX_DTYPE)
    hists = []
    for hessian in (ones, None):
        hist = np.full((X.shape[0], N_BINS, 3), -7.0, dtype=SUM_DTYPE)  # unused: -7
        hist[features] = 0.0
        if kernel == "root":
            build_histograms_root(X, gradient, hessian, features, hist, 2)
        else:
            og = np.empty(X.shape[1], dtype=G_H_DTYPE)
            oh = np.empty(X.shape[1], dtype=G_H_DTYPE)
            fn = build_histograms if kernel == "parallel" else build_histograms_serial
            args = (X, rows, gradient, hessian, features, og, oh, hist)
            fn(*args, 2) if kernel == "parallel" else fn(*args)
        if hessian is None:
            assert (hist[features][..., HIST_H] == 0.0).all()  # left to unit_hessians
            unit_hessians(hist, features, n_bins, MISSING_BIN)
        hists.append(hist)
    assert_array_equal(hists[1], hists[0])
    assert (hists[0][features][..., HIST_C] > 0).any()


def test_all_ones():
    assert all_ones(np.ones(5, dtype=G_H_DTYPE))
    assert all_ones(np.ones(0, dtype=G_H_DTYPE))
    for i in (0, 4):
        h = np.ones(5, dtype=G_H_DTYPE)
        h[i] = np.float32(1.0000001)
        assert not all_ones(h)


@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_all_ones_on_every_thread_equals_the_serial_check(n_threads):
    n = 10_000
    assert all_ones_parallel(np.ones(n, dtype=G_H_DTYPE), n_threads)
    assert all_ones_parallel(np.ones(0, dtype=G_H_DTYPE), n_threads)
    # one other value anywhere: at either end of any thread's share, or NaN
    for at in [0, 1, n // 3 - 1, n // 3, n // 2 - 1, n // 2, n // 2 + 1, n - 1]:
        for value in (0.0, 1.0 + 1e-7, np.nan):
            h = np.ones(n, dtype=G_H_DTYPE)
            h[at] = value
            assert all_ones_parallel(h, n_threads) == all_ones(h) is False
