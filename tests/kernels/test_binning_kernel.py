"""map_to_bins against np.searchsorted(side='left') (DESIGN §4.1)."""

import numba
import numpy as np
import pytest
from numpy.testing import assert_array_equal

from reference import bin_matrix
from treeboost._dtypes import MISSING_BIN, X_BINNED_DTYPE, X_DTYPE
from treeboost._kernels.binning import _CHUNK, map_to_bins

MAX_EDGES = 255  # columns of BinMapper.bin_edges_ at max_bins=255 (255 categories fit)


def make_edges(n_edges, seed=0):
    """Sorted distinct edges per feature, padded with +inf like BinMapper.bin_edges_."""
    rng = np.random.default_rng(seed)
    n_edges = np.asarray(n_edges, dtype=np.int32)
    bin_edges = np.full((n_edges.size, MAX_EDGES), np.inf, dtype=X_DTYPE)
    for f, m in enumerate(n_edges):
        bin_edges[f, :m] = np.sort(rng.choice(np.linspace(-3, 3, 1000), m, replace=False))
    return bin_edges, n_edges


def run(X, bin_edges, n_edges, dtype=X_DTYPE, is_categorical=None):
    """map_to_bins with BinMapper.transform's types: C-ordered X (n_samples, n_features),
    feature-major C-ordered output (n_features, n_samples). Raw X is float64 or
    float32 (the package bins float32 input without a copy). Numerical features
    unless ``is_categorical`` says otherwise."""
    X_binned = np.empty((X.shape[1], X.shape[0]), dtype=X_BINNED_DTYPE)
    is_categorical = (np.zeros(n_edges.size, dtype=np.uint8) if is_categorical is None
                      else np.asarray(is_categorical, dtype=np.uint8))
    map_to_bins(np.ascontiguousarray(X, dtype=dtype), bin_edges, n_edges, is_categorical,
                MISSING_BIN, X_binned)
    return X_binned


def make_X(n_samples, bin_edges, n_edges, seed=0):
    """Random values plus values exactly on edges, +-inf, NaN and an all-NaN column."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-4, 4, size=(n_samples, n_edges.size))
    for f, m in enumerate(n_edges):
        if m:  # a tenth of the rows exactly on an edge: x == edge goes to that bin
            on_edge = rng.random(n_samples) < 0.1
            X[on_edge, f] = rng.choice(bin_edges[f, :m], on_edge.sum())
    X[rng.random(X.shape) < 0.05] = np.nan
    specials = np.array([np.inf, -np.inf, 3.0, -3.0, np.nan])
    X[:5, 0] = specials[: min(5, n_samples)]
    X[:, -1] = np.nan
    return X


@pytest.mark.parametrize("n_samples", [0, 1, 1000, 2 * _CHUNK + 1])
def test_matches_searchsorted(n_samples):
    # features with 254 edges (255 bins), 1, 0 (one bin), 7, and an all-NaN column
    bin_edges, n_edges = make_edges([254, 1, 0, 7, 3])
    X = make_X(n_samples, bin_edges, n_edges)
    X_binned = run(X, bin_edges, n_edges)
    assert_array_equal(X_binned, bin_matrix(X, bin_edges, n_edges))
    assert X_binned.shape == (n_edges.size, n_samples)
    assert X_binned.flags.c_contiguous


@pytest.mark.parametrize("n_samples", [1, 1000])
def test_float32_input_is_compared_in_float64(n_samples):
    bin_edges, n_edges = make_edges([254, 1, 0, 7, 3])
    X32 = make_X(n_samples, bin_edges, n_edges).astype(np.float32)
    # float32 -> float64 is exact, so the bins are those of the same values in float64
    assert_array_equal(run(X32, bin_edges, n_edges, dtype=np.float32),
                       bin_matrix(X32.astype(X_DTYPE), bin_edges, n_edges))


def test_edge_cases():
    bin_edges, n_edges = make_edges([254, 1, 0, 7, 3])
    X = make_X(3000, bin_edges, n_edges)
    X_binned = run(X, bin_edges, n_edges)
    nan = np.isnan(X).T  # feature-major like X_binned
    assert np.all(X_binned[nan] == MISSING_BIN)
    assert np.all(X_binned[~nan] < MISSING_BIN)
    assert np.all(X_binned[-1] == MISSING_BIN)  # all-missing feature
    assert np.all(X_binned[2, ~nan[2]] == 0)  # no edge: one bin
    assert np.all(X_binned[0, ~nan[0]] <= 254)  # 254 edges: bins 0..254
    # +inf lands in the last value bin, -inf in bin 0; x == edge in that edge's bin
    assert list(X_binned[0, :2]) == [254, 0]
    edge = bin_edges[3, 4]
    assert run(np.full((1, 5), edge), bin_edges, n_edges)[3, 0] == 4
    assert run(np.full((1, 5), np.nextafter(edge, np.inf)), bin_edges, n_edges)[3, 0] == 5


def test_bins_are_monotone_in_x():
    bin_edges, n_edges = make_edges([254, 40])
    x = np.linspace(-5, 5, 5001)
    X_binned = run(np.column_stack([x, x]), bin_edges, n_edges)
    assert np.all(np.diff(X_binned.astype(int), axis=1) >= 0)
    assert X_binned[0, 0] == 0
    assert X_binned[0, -1] == 254
    assert X_binned[1, -1] == 40


def test_independent_of_thread_count():
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs 2 Numba threads")
    bin_edges, n_edges = make_edges([254, 5, 0])
    X = make_X(3 * _CHUNK, bin_edges, n_edges)
    previous = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = run(X, bin_edges, n_edges)
        numba.set_num_threads(2)
        two = run(X, bin_edges, n_edges)
    finally:
        numba.set_num_threads(previous)
    assert_array_equal(one, two)


# ---- categorical features --------------------------------------------------------------
# categories per feature: 0.1 has no float32 twin; 255 integer categories; none at all
CATEGORIES = [[-7.0, -2.5, -0.0, 0.1, 1.0, 3.0, 1e6], list(range(255)), [], [5.0]]


def categorical_table():
    """bin_edges / n_edges with a numerical feature 0 and the categorical CATEGORIES."""
    bin_edges, n_edges = make_edges([7, 0, 0, 0, 0])
    for f, cats in enumerate(CATEGORIES, start=1):
        bin_edges[f, : len(cats)] = cats
        n_edges[f] = len(cats)
    return bin_edges, n_edges, np.array([0, 1, 1, 1, 1], dtype=np.uint8)


def categorical_X(n_samples, seed=0):
    """Mostly known categories, plus unknown values, +-inf and NaN."""
    rng = np.random.default_rng(seed)
    unknown = [0.5, 2.0, -1e6, np.inf, -np.inf, np.nextafter(1.0, 2.0), 254.5, 255.0, 4.0]
    X = np.empty((n_samples, 5))
    X[:, 0] = rng.uniform(-4, 4, n_samples)
    for f, cats in enumerate(CATEGORIES, start=1):
        X[:, f] = rng.choice(cats + unknown, n_samples)
    X[rng.random(X.shape) < 0.05] = np.nan
    return X


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n_samples", [0, 1, 1000, 2 * _CHUNK + 1])
def test_categorical_exact_match(n_samples, dtype):
    """A category's index for an equal value (compared in float64), else MISSING_BIN;
    the numerical feature beside them is binned as usual."""
    bin_edges, n_edges, is_categorical = categorical_table()
    X = categorical_X(n_samples).astype(dtype)
    X_binned = run(X, bin_edges, n_edges, dtype, is_categorical)
    # float32 -> float64 is exact: the twin sees the values the kernel compares
    expected = bin_matrix(X.astype(X_DTYPE), bin_edges, n_edges, is_categorical)
    assert_array_equal(X_binned, expected)


def test_categorical_edge_cases():
    bin_edges, n_edges, is_categorical = categorical_table()

    def bins(values, dtype=X_DTYPE):
        X = np.zeros((len(values), 5))
        X[:, 1] = values
        return list(run(X, bin_edges, n_edges, dtype, is_categorical)[1])

    # each category to its index; 0.0 equals -0.0
    assert bins(CATEGORIES[0] + [0.0]) == [0, 1, 2, 3, 4, 5, 6, 2]
    # between, beyond or next to a category, inf, NaN: the missing bin
    assert bins([0.5, -8.0, 2e6, np.nextafter(1.0, 2.0), np.inf, -np.inf, np.nan]) \
        == [MISSING_BIN] * 7
    # float32(0.1) is not the float64 category 0.1; float32(1.0) is 1.0
    assert bins([0.1, 1.0], np.float32) == [MISSING_BIN, 4]
    X = np.array([[0.0, 0.0, 254.0, 5.0, 5.0], [0.0, 0.0, 255.0, np.nan, 6.0]])
    X_binned = run(X, bin_edges, n_edges, X_DTYPE, is_categorical)
    # 255 categories: the last one is bin 254, one more value is unknown
    assert list(X_binned[2]) == [254, MISSING_BIN]
    assert list(X_binned[3]) == [MISSING_BIN] * 2  # no category at all
    assert list(X_binned[4]) == [0, MISSING_BIN]  # a single category


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n_samples", [7, 8, 9, 17, 4103])
def test_eight_values_a_step_match_searchsorted(n_samples, dtype):
    """map_to_bins' vector steps (simd.bins8, where the CPU has AVX-512; the loop
    elsewhere): every count of edges from 1 to 9 and 255, rows past the last whole
    step of a chunk, a strided X (a column slice), signed zeros against an edge at
    0.0, and a categorical feature between numerical ones (its own loop)."""
    rng = np.random.default_rng(n_samples)
    counts = [1, 2, 3, 4, 5, 6, 7, 8, 9, 254, 12]
    bin_edges, n_edges = make_edges(counts, seed=1)
    bin_edges[2, :3] = [-1.0, 0.0, 1.0]
    X = rng.uniform(-3.5, 3.5, size=(n_samples, 2 * len(counts)))[:, ::2]  # not C order
    X[rng.random(X.shape) < 0.1] = np.nan
    X[::3, 2] = 0.0
    X[1::3, 2] = -0.0
    X[:, 10] = rng.integers(0, 12, n_samples)  # categorical: categories 0..11
    bin_edges[10, :12] = np.arange(12)
    is_categorical = np.zeros(len(counts), dtype=np.uint8)
    is_categorical[10] = 1
    X = X.astype(dtype)
    X_binned = np.empty((len(counts), n_samples), dtype=X_BINNED_DTYPE)
    map_to_bins(X, bin_edges, n_edges, is_categorical, MISSING_BIN, X_binned)
    assert_array_equal(X_binned, bin_matrix(X.astype(np.float64), bin_edges, n_edges,
                                            is_categorical))
