"""One tree for several outputs: its histograms and split search.

``multi_strategy="multi_output_tree"`` (XGBoost 2's strategy of that name,
CatBoost's MultiRMSE): a stage grows one tree for its n_outputs outputs, whose
split gain is the sum over the outputs of the single-output gain (XGBoost eq. 7
without the 1/2, ``splitting``; XGBoost's ``CalcGainGivenWeight`` sums its
targets' gains the same way, without dividing by their number):

    sum_k [T(G_kL)^2/(H_L+lambda) + T(G_kR)^2/(H_R+lambda) - T(G_k)^2/(H+lambda)]

Each output's leaf value is its own loss's line search at the leaf (Newton:
-T(G_k)/(H + lambda)). Every output's hessian is the row weight (the
identity-link losses the strategy takes), so a histogram holds one hessian
channel: (n_features, n_bins, n_outputs + 2), output 0's gradient, the hessian
and the count first, as a single output's (n_features, n_bins, 3), then the
gradients of outputs 1 to n_outputs - 1 (``channel``). ``grower.grow_tree``
calls these kernels where its ``multi`` record (``records.MultiOutput``) is not
None; everything else of the grower (partition, best-first order, row slices,
depth and leaf limits, ``min_samples_leaf``, ``min_child_weight`` on the shared
hessian) is the single-output tree's.

Every sum adds the rows in the order the single-output kernels add them, and
the scan follows ``splitting._scan_thresholds`` step by step: with k copies of
one target the tree is the single-output tree of that target, its gains k
times the single gains.
"""

import numpy as np
from numba import prange

from ._jit import inline, kernel, parallel_kernel
from .node_histogram import _zero_used_bins
from .splitting import BIN, GAIN, LEFT_C, LEFT_G, LEFT_H, MISSING_LEFT, leaf_score


@inline
def channel(j):
    """The histogram channel of output j's gradient: 0 for output 0, else j + 2."""
    return 0 if j == 0 else j + 2


@inline
def _gather_rows(rows, gradient, hessian, ordered, i0, i1):
    """ordered[i] = (every output's gradient, the hessian) of row rows[i], i in [i0, i1)."""
    n_outputs = gradient.shape[0]
    for i in range(i0, i1):
        r = rows[i]
        for j in range(n_outputs):
            ordered[i, j] = gradient[j, r]
        ordered[i, n_outputs] = hessian[r]


@inline
def _share_histograms(X_binned, rows, ordered, features, k0, k1, hist):
    """Histograms of features[k0:k1] over ``rows``, whose values ``ordered`` holds in order."""
    n_outputs = ordered.shape[1] - 1
    n = rows.shape[0]
    for kf in range(k0, k1):
        f = features[kf]
        col = X_binned[f]
        h = hist[f]
        for i in range(n):
            dst = h[col[rows[i]]]
            o = ordered[i]
            dst[0] += o[0]
            dst[1] += o[n_outputs]
            dst[2] += 1.0
            for j in range(1, n_outputs):
                dst[j + 2] += o[j]


@kernel
def build_multi_histogram_serial(X_binned, rows, gradient, hessian, features, ordered, hist):
    """Serial twin of ``build_multi_histogram`` for small nodes: the same sums."""
    _gather_rows(rows, gradient, hessian, ordered, 0, rows.shape[0])
    _share_histograms(X_binned, rows, ordered, features, 0, features.shape[0], hist)


@parallel_kernel
def build_multi_histogram(X_binned, rows, gradient, hessian, features, ordered, hist,
                          n_threads):
    """Histograms of every output over ``rows``, each thread a share of the features."""
    # X_binned: uint8 (n_features, n_samples), feature-major  # IN
    # rows: uint32 (n_node,)                                 # IN
    # gradient: float32 (n_outputs, n_samples); hessian: float32 (n_samples,)  # IN
    # features: int32 (n_used,)                              # IN
    # ordered: float32 (>= n_node, n_outputs + 1)            # scratch
    # hist: float64 (n_features, n_bins, n_outputs + 2), used bins zeroed  # OUT
    # n_threads: numba.get_num_threads(), one share of the features each
    n = rows.shape[0]
    n_blocks = max(1, min(n_threads, n // 4096))
    for t in prange(n_blocks):
        _gather_rows(rows, gradient, hessian, ordered, t * n // n_blocks,
                     (t + 1) * n // n_blocks)
    n_used = features.shape[0]
    n_shares = max(1, min(n_threads, n_used))
    for t in prange(n_shares):
        # every bin of a feature is summed by one thread in row order: the serial sums
        _share_histograms(X_binned, rows, ordered, features, t * n_used // n_shares,
                          (t + 1) * n_used // n_shares, hist)


@kernel
def multi_node_histogram(X_binned, rows, hessian, features, feature_bins, hist, multi,
                         parallel, n_threads):
    """Zero ``hist``'s used bins and build every output's histogram of ``rows`` in it."""
    _zero_used_bins(hist, features, feature_bins.n_bins_non_missing, feature_bins.missing_bin)
    if parallel:
        build_multi_histogram(X_binned, rows, multi.gradient, hessian, features,
                              multi.ordered, hist, n_threads)
    else:
        build_multi_histogram_serial(X_binned, rows, multi.gradient, hessian, features,
                                     multi.ordered, hist)


@kernel
def subtract_multi(large, small, features, n_bins_non_missing, missing_bin):
    """large -= small over the used bins, every channel (the sibling subtraction)."""
    n_channels = large.shape[2]
    for k in range(features.shape[0]):
        f = features[k]
        a = large[f]
        s = small[f]
        for b in range(n_bins_non_missing[f]):
            for c in range(n_channels):
                a[b, c] -= s[b, c]
        for c in range(n_channels):
            a[missing_bin, c] -= s[missing_bin, c]


@kernel
def root_sums_multi(hist, f, n_bins_non_missing, missing_bin, sum_g):
    """sum_g[j] = output j's gradient sum over feature f's bins (the root's, as output 0's)."""
    for j in range(sum_g.shape[0]):
        c = channel(j)
        g = 0.0
        for b in range(n_bins_non_missing[f]):
            g += hist[f, b, c]
        sum_g[j] = g + hist[f, missing_bin, c]


@inline
def _scan_multi(h, first, stop, start_g, hl, cl, sum_g, sum_h, count, reg_lambda, reg_alpha,
                min_samples_leaf, min_child_weight, parent, gl, best_gl):
    """``splitting._scan_thresholds`` with the gain summed over the outputs.

    Left = bins <= b plus the start (``start_g``, hl, cl); ``best_gl`` gets the
    outputs' left sums of the best threshold.
    """
    n_outputs = sum_g.shape[0]
    for j in range(n_outputs):
        gl[j] = start_g[j]
        best_gl[j] = 0.0
    best = -np.inf
    best_bin = -1
    best_hl = 0.0
    best_cl = 0.0
    for b in range(first, stop):
        if h[b, 2] == 0.0:  # the rows split as at the bin before, the same gain
            continue
        for j in range(n_outputs):
            gl[j] += h[b, channel(j)]
        hl += h[b, 1]
        cl += h[b, 2]
        if count - cl < min_samples_leaf:
            break
        if cl < min_samples_leaf:
            continue
        hr = sum_h - hl
        if hl < min_child_weight or hr < min_child_weight:
            continue
        gain = 0.0
        for j in range(n_outputs):
            # each output's term as a single output's gain: k equal outputs, k times it
            gain += (leaf_score(gl[j], hl, reg_lambda, reg_alpha)
                     + leaf_score(sum_g[j] - gl[j], hr, reg_lambda, reg_alpha) - parent[j])
        if gain > best:
            best = gain
            best_bin = b
            best_hl = hl
            best_cl = cl
            for j in range(n_outputs):
                best_gl[j] = gl[j]
    return best, best_bin, best_hl, best_cl


@kernel
def find_best_splits_multi(hist, features, feature_bins, sum_g, sum_h, count, split, out,
                           out_bitset, out_left):
    """Best threshold and missing side of each listed (numerical) feature, gain summed over
    the outputs (``splitting.find_best_splits``' numerical search otherwise)."""
    # hist: float64 (n_features, n_bins, n_outputs + 2)  # IN
    # features: int32 (n_used,)                       # IN, candidate features
    # sum_g: float64 (n_outputs,), the node's sums; sum_h, count: its hessian and rows
    # out: float64 (n_used, N_SPLIT_COLUMNS)          # OUT, gain -inf if none
    # out_bitset: uint32 (n_used, BITSET_WORDS)       # OUT, zeros (no categories)
    # out_left: float64 (n_used, n_outputs)           # OUT, the left child's sums
    n_bins_non_missing = feature_bins.n_bins_non_missing
    missing_bin = feature_bins.missing_bin
    reg_lambda = split.reg_lambda
    reg_alpha = split.reg_alpha
    msl = split.min_samples_leaf
    mcw = split.min_child_weight
    n_outputs = sum_g.shape[0]
    parent = np.empty(n_outputs)
    zeros = np.empty(n_outputs)
    missing_g = np.empty(n_outputs)
    gl = np.empty(n_outputs)
    left2 = np.empty(n_outputs)
    for j in range(n_outputs):
        parent[j] = leaf_score(sum_g[j], sum_h, reg_lambda, reg_alpha)
        zeros[j] = 0.0
    for k in range(features.shape[0]):
        f = features[k]
        h = hist[f]
        nb = n_bins_non_missing[f]
        out_bitset[k, :] = 0
        left = out_left[k]
        miss_c = h[missing_bin, 2]
        # missing values right; with some present, "every value left" is a split too
        last = nb - 1 if miss_c > 0 else nb - 2
        best, b, hl, cl = _scan_multi(h, 0, last + 1, zeros, 0.0, 0.0, sum_g, sum_h, count,
                                      reg_lambda, reg_alpha, msl, mcw, parent, gl, left)
        # without missing values in the node, unseen NaN follow the larger child
        ml = 1 if (miss_c == 0 and cl >= count - cl) else 0
        if miss_c > 0:  # missing values left
            for j in range(n_outputs):
                missing_g[j] = h[missing_bin, channel(j)]
            best2, b2, hl2, cl2 = _scan_multi(h, 0, nb - 1, missing_g, h[missing_bin, 1],
                                              miss_c, sum_g, sum_h, count, reg_lambda,
                                              reg_alpha, msl, mcw, parent, gl, left2)
            if best2 > best:
                best, b, hl, cl, ml = best2, b2, hl2, cl2, 1
                for j in range(n_outputs):
                    left[j] = left2[j]
        out[k, GAIN] = best
        out[k, BIN] = b
        out[k, MISSING_LEFT] = ml
        out[k, LEFT_G] = left[0]
        out[k, LEFT_H] = hl
        out[k, LEFT_C] = cl
