"""Sparse kernels against the dense ones on the same data.

The sparse histogram must equal the dense histogram of the same node (its
zero bin is completed from the node totals, so only the order of additions
differs); routing rows on binned sparse data and predicting on CSR must give
exactly what the dense kernels give.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal

from treeboost._dtypes import G_H_DTYPE, INDEX_DTYPE, MISSING_BIN, N_BINS, NODE_DTYPE, readonly
from treeboost._kernels.histogram import build_histograms_serial
from treeboost._kernels.predict import predict_binned, predict_raw
from treeboost._kernels.sparse import (
    build_histograms_sparse,
    predict_binned_sparse,
    predict_raw_csr,
)
from treeboost.binning import BinMapper, canonical_sparse


def sparse_data(n=3000, p=6, density=0.2, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, p, density=density, format="csr", random_state=seed)
    X.data = np.round(X.data * 20) - 5  # negative, positive and explicit zero values
    X.data[rng.random(X.data.size) < 0.05] = np.nan
    return X, rng


def dense_hist(X_binned, rows, g, h, features):
    hist = np.zeros((X_binned.shape[0], N_BINS, 3))
    build_histograms_serial(X_binned, rows, g, h, features,
                            np.empty(rows.size, G_H_DTYPE), np.empty(rows.size, G_H_DTYPE), hist)
    return hist


@pytest.mark.parametrize("categorical", [False, True])
def test_sparse_histograms_equal_dense(categorical):
    X, rng = sparse_data()
    is_cat = np.zeros(X.shape[1], dtype=bool)
    if categorical:
        X.data = np.abs(np.nan_to_num(X.data, nan=1.0))
        is_cat[[1, 4]] = True
    mapper = BinMapper(is_categorical=is_cat).fit(X)
    dense = mapper.transform(X.toarray())
    binned = mapper.transform(X)
    n = X.shape[0]
    g = rng.normal(size=n).astype(G_H_DTYPE)
    h = rng.uniform(0.1, 1, size=n).astype(G_H_DTYPE)
    features = np.array([0, 2, 3, 4, 5], dtype=NODE_DTYPE)  # feature 1 left out
    order = rng.permutation(n)
    a = np.sort(order[:1000]).astype(INDEX_DTYPE)
    b = np.sort(order[1000:1700]).astype(INDEX_DTYPE)
    mark = np.zeros(n, dtype=np.uint8)
    mark[a], mark[b] = 1, 2
    totals = np.array([[g[r].sum(dtype=np.float64), h[r].sum(dtype=np.float64), r.size]
                       for r in (a, b)])
    hist_a = np.full((X.shape[1], N_BINS, 3), np.nan)  # garbage outside the read bins
    hist_b = np.full_like(hist_a, np.nan)
    build_histograms_sparse(binned.col_ptr, binned.rows, binned.bins, binned.zero_bin,
                            mapper.n_bins_non_missing_, MISSING_BIN, mark, g, h, features,
                            totals, 2, hist_a, hist_b)
    for rows, got in ((a, hist_a), (b, hist_b)):
        want = dense_hist(dense, rows, g, h, features)
        for f in features:
            read = np.r_[np.arange(mapper.n_bins_non_missing_[f]), MISSING_BIN]
            assert_allclose(got[f, read], want[f, read], rtol=1e-9, atol=1e-9)
            assert_array_equal(got[f, read, 2], want[f, read, 2])  # counts exact
        assert np.isnan(got[1]).all()  # a feature not asked for is not touched
    # one node: hist_b may be the same array and is left alone
    build_histograms_sparse(binned.col_ptr, binned.rows, binned.bins, binned.zero_bin,
                            mapper.n_bins_non_missing_, MISSING_BIN, mark, g, h, features,
                            totals, 1, hist_a, hist_a)
    assert_allclose(hist_a[0, :mapper.n_bins_non_missing_[0]],
                    dense_hist(dense, a, g, h, features)[0, :mapper.n_bins_non_missing_[0]],
                    rtol=1e-9, atol=1e-9)


def random_tree(rng, n_features, n_bins, depth=4):
    """A full binary tree of depth ``depth`` with random numeric splits."""
    n_internal = 2 ** depth - 1
    n_nodes = 2 * n_internal + 1
    feature = np.full(n_nodes, -1, NODE_DTYPE)
    left = np.full(n_nodes, -1, NODE_DTYPE)
    right = np.full(n_nodes, -1, NODE_DTYPE)
    feature[:n_internal] = rng.integers(0, n_features, n_internal)
    left[:n_internal] = 2 * np.arange(n_internal) + 1
    right[:n_internal] = 2 * np.arange(n_internal) + 2
    bin_threshold = rng.integers(0, n_bins, n_nodes).astype(NODE_DTYPE)
    missing_left = rng.integers(0, 2, n_nodes).astype(np.uint8)
    value = rng.normal(size=n_nodes)
    return feature, bin_threshold, missing_left, left, right, value


def test_routing_binned_sparse_equals_dense():
    X, rng = sparse_data(seed=1)
    mapper = BinMapper().fit(X)
    dense, binned = mapper.transform(X.toarray()), mapper.transform(X)
    feature, thr, ml, left, right, value = random_tree(rng, X.shape[1], 8)
    is_cat = np.zeros(feature.size, np.uint8)
    bitset = np.zeros((feature.size, 8), np.uint32)
    rows = np.sort(rng.choice(X.shape[0], 2000, replace=False)).astype(INDEX_DTYPE)
    want = np.zeros(X.shape[0])
    got = np.zeros(X.shape[0])
    predict_binned(dense, feature, thr, ml, left, right, value, is_cat, bitset, MISSING_BIN, 0,
                   rows, want)
    predict_binned_sparse(binned.col_ptr, binned.rows, binned.bins, binned.zero_bin, feature,
                          thr, ml, left, right, value, is_cat, bitset, MISSING_BIN, 0, rows,
                          got)
    assert_array_equal(got, want)


def test_predict_raw_csr_equals_dense():
    X, rng = sparse_data(seed=2)
    feature, _, ml, left, right, value = random_tree(rng, X.shape[1], 8)
    threshold = rng.choice([-2.0, 0.0, 1.0, 3.5], size=feature.size)  # 0 included
    is_cat = np.zeros(feature.size, np.uint8)
    bitset = np.zeros((feature.size, 8), np.uint32)
    categories = np.full((X.shape[1], 1), np.inf)
    n_categories = np.zeros(X.shape[1], np.int32)
    roots = np.zeros(1, NODE_DTYPE)
    want = np.zeros((X.shape[0], 1))
    got = np.zeros((X.shape[0], 1))
    predict_raw(readonly(X.toarray()), feature, threshold, ml, left, right, value, is_cat, bitset,
                categories, n_categories, MISSING_BIN, roots, roots, want)
    Xc = canonical_sparse(X, "csr")
    predict_raw_csr(readonly(Xc.indptr), readonly(Xc.indices), readonly(Xc.data), feature,
                    threshold, ml, left, right, value, is_cat, bitset, categories, n_categories,
                    MISSING_BIN, roots, roots, got)
    assert_array_equal(got, want)
