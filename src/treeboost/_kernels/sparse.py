"""Kernels for sparse input: binning CSC columns, histograms, routing rows.

Binned sparse data is kept per feature (CSC): for feature f the rows
``rows[col_ptr[f]:col_ptr[f+1]]`` (ascending) have bins
``bins[col_ptr[f]:col_ptr[f+1]]``; every other row is in the feature's zero
bin ``zero_bin[f]`` (the bin of the value 0). Entries whose bin is the zero
bin are not stored, so explicit zeros cost nothing.

A node's histogram over the stored entries misses its zero-bin rows; the
zero bin is completed as the node's totals minus the stored bins.
"""

import numpy as np
from numba import prange

from ._jit import bin_goes_left, inline, lower_bound, parallel_kernel
from .binning import _count_below
from .predict import _category_bin


@inline
def _value_bin(edges, m, categorical, x, missing_bin):
    """Bin of one raw value (as ``binning.map_to_bins``)."""
    if np.isnan(x):
        return missing_bin
    b = _count_below(edges, m, x)
    if categorical and (b == m or edges[b] != x):
        return missing_bin
    return b


@parallel_kernel
def bin_sparse_columns(indptr, indices, data, bin_edges, n_edges, is_categorical,
                       missing_bin, zero_bin, col_ptr, rows, bins, count_only):
    """Bin the stored values of CSC columns, keeping those not in the zero bin.

    With ``count_only`` only ``col_ptr[f + 1]`` (entries kept in feature f) is
    written; the caller turns the counts into offsets and calls again to fill
    ``rows`` and ``bins``.
    """
    # indptr: int64 (n_features + 1,); indices: int32 (nnz,)   # IN, canonical CSC
    # data: float64 (nnz,)                                       # IN
    # bin_edges: float64 (n_features, max_edges); n_edges: int32 # IN
    # zero_bin: uint8 (n_features,)                              # IN
    # col_ptr: int64 (n_features + 1,)                           # IN/OUT
    # rows: uint32 (kept,); bins: uint8 (kept,)                  # OUT
    n_features = indptr.shape[0] - 1
    for f in prange(n_features):
        m = n_edges[f]
        edges = bin_edges[f]
        categorical = is_categorical[f] == 1
        z = zero_bin[f]
        k = 0 if count_only else col_ptr[f]
        for j in range(indptr[f], indptr[f + 1]):
            b = _value_bin(edges, m, categorical, data[j], missing_bin)
            if b != z:
                if not count_only:
                    rows[k] = indices[j]
                    bins[k] = b
                k += 1
        if count_only:
            col_ptr[f + 1] = k


@inline
def _zero_bins(h, nb, missing_bin):
    """Zero the bins a split search reads: the value bins and the missing bin."""
    h[:nb, :] = 0.0
    h[missing_bin, :] = 0.0


@inline
def _complete_zero_bin(h, nb, missing_bin, z, total_g, total_h, total_c):
    """Set bin z of one feature's histogram to the node totals minus the other bins."""
    sg = 0.0
    sh = 0.0
    sc = 0.0
    for b in range(nb):
        if b != z:
            sg += h[b, 0]
            sh += h[b, 1]
            sc += h[b, 2]
    if z != missing_bin:
        sg += h[missing_bin, 0]
        sh += h[missing_bin, 1]
        sc += h[missing_bin, 2]
    h[z, 0] = total_g - sg
    h[z, 1] = total_h - sh
    h[z, 2] = total_c - sc


@parallel_kernel
def build_histograms_sparse(col_ptr, rows, bins, zero_bin, n_bins_non_missing, missing_bin,
                            mark, gradient, hessian, features, totals, n_nodes, hist_a,
                            hist_b):
    """Histograms of one or two nodes in one pass over the stored entries.

    ``mark[i]`` is 1 if row i is in node a, 2 if in node b, 0 otherwise;
    ``totals[0]`` and ``totals[1]`` are the nodes' (sum g, sum h, count).
    With ``n_nodes == 1`` only ``hist_a`` is written (``hist_b`` may be it). Only
    the bins a split search reads (value bins and the missing bin) of
    ``features`` are written (zeroed first: with thousands of features,
    zeroing whole histograms would cost more than the pass); each feature
    is summed by one thread in row order, so the result does not depend on
    the number of threads.
    """
    # col_ptr: int64 (n_features + 1,); rows: uint32; bins: uint8   # IN
    # zero_bin: uint8; n_bins_non_missing: int32 (n_features,)      # IN
    # mark: uint8 (n_samples,)                                      # IN
    # gradient, hessian: float32 (n_samples,)                       # IN
    # features: int32 (n_used,)                                     # IN
    # totals: float64 (2, 3)                                        # IN
    # hist_a, hist_b: float64 (n_features, N_BINS, 3)               # OUT
    for k in prange(features.shape[0]):
        f = features[k]
        ha = hist_a[f]
        hb = hist_b[f]
        nb = n_bins_non_missing[f]
        _zero_bins(ha, nb, missing_bin)
        if n_nodes == 2:
            _zero_bins(hb, nb, missing_bin)
        for j in range(col_ptr[f], col_ptr[f + 1]):
            i = rows[j]
            m = mark[i]
            if m == 0:
                continue
            b = bins[j]
            g = gradient[i]
            h = hessian[i]
            if m == 1:
                ha[b, 0] += g
                ha[b, 1] += h
                ha[b, 2] += 1.0
            elif n_nodes == 2:
                hb[b, 0] += g
                hb[b, 1] += h
                hb[b, 2] += 1.0
        z = zero_bin[f]
        _complete_zero_bin(ha, nb, missing_bin, z, totals[0, 0], totals[0, 1], totals[0, 2])
        if n_nodes == 2:
            _complete_zero_bin(hb, nb, missing_bin, z, totals[1, 0], totals[1, 1],
                               totals[1, 2])


@inline
def _find_sorted(keys, lo, hi, key):
    """Index of ``key`` in the ascending ``keys[lo:hi]``, or -1 when absent."""
    i = lower_bound(keys, lo, hi, key)
    if i < hi and keys[i] == key:
        return i
    return -1


@inline
def _stored_bin(col_ptr, rows, bins, zero_bin, f, i):
    """Bin of row i in feature f: its stored entry, else the zero bin."""
    j = _find_sorted(rows, col_ptr[f], col_ptr[f + 1], i)
    return bins[j] if j >= 0 else zero_bin[f]


@parallel_kernel
def predict_binned_sparse(col_ptr, rows, bins, zero_bin, feature, bin_threshold, missing_left,
                          left, right, value, is_categorical, cat_bitset, missing_bin, root,
                          sample_rows, raw_score):
    """raw_score[sample_rows] += leaf value of one tree, on binned sparse data."""
    # sample_rows: uint32 (n_rows,)          # IN
    # raw_score: float64 (n_samples,)        # IN/OUT
    for r in prange(sample_rows.shape[0]):
        i = sample_rows[r]
        node = root
        while left[node] >= 0:
            b = _stored_bin(col_ptr, rows, bins, zero_bin, feature[node], i)
            go_left = bin_goes_left(b, is_categorical[node] == 1, bin_threshold[node],
                                    missing_left[node] == 1, missing_bin, cat_bitset[node])
            node = left[node] if go_left else right[node]
        raw_score[i] += value[node]


@inline
def _csr_value(indptr, indices, data, i, f):
    """X[i, f] of a canonical CSR matrix (0.0 when not stored)."""
    j = _find_sorted(indices, indptr[i], indptr[i + 1], f)
    return np.float64(data[j]) if j >= 0 else 0.0


@parallel_kernel
def predict_raw_csr(indptr, indices, data, feature, threshold, missing_left, left, right, value,
                    is_categorical, cat_bitset, categories, n_categories, missing_bin,
                    tree_roots, tree_outputs, out):
    """``predict.predict_raw`` for a CSR matrix: the same comparisons, value by value."""
    # indptr: int64 (n_samples + 1,); indices: int32; data: float64   # IN, canonical CSR
    # (other arguments as predict.predict_raw)
    n_samples = indptr.shape[0] - 1
    for i in prange(n_samples):
        for t in range(tree_roots.shape[0]):
            node = tree_roots[t]
            while left[node] >= 0:
                f = feature[node]
                x = _csr_value(indptr, indices, data, i, f)
                if is_categorical[node]:
                    b = missing_bin if np.isnan(x) else _category_bin(
                        categories[f], n_categories[f], x, missing_bin)
                    go_left = bin_goes_left(b, True, 0, False, missing_bin, cat_bitset[node])
                elif np.isnan(x):
                    go_left = missing_left[node] == 1
                else:
                    go_left = x <= threshold[node]
                node = left[node] if go_left else right[node]
            out[i, tree_outputs[t]] += value[node]
