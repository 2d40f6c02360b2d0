"""Exact TreeSHAP over packed trees (Lundberg, Erion & Lee 2018, Algorithm 2).

For every row and tree, one depth-first walk keeps the "unique path" of
features split on from the root, with for each the fraction of training
cover that flows down the path when the feature is absent (``zero``) and
whether the row itself follows the path (``one``), plus the permutation
weights ``pweight`` of Shapley values over subsets of the path. At a leaf
every path feature gets (one - zero) * (its unwound weight sum) * leaf value.
The recursion of the paper becomes an explicit stack: the path of a node at
depth d lives in row d of the path tables, so a child copies its parent's
row and extends it. Cost O(leaves * depth^2) per row and tree.

The path bookkeeping (extend, unwind, unwound sum) follows the reference
implementation shared by the ``shap`` package and XGBoost.
"""

import numpy as np
from numba import prange

from ._jit import bin_goes_left, inline, parallel_kernel
from .predict import _category_bin

_BLOCK = 64  # rows per task


@inline
def _extend(feat, zero, one, pw, d, u, zero_fraction, one_fraction, feature_index):
    """Add a feature to the path of row ``d`` that holds ``u`` elements."""
    feat[d, u] = feature_index
    zero[d, u] = zero_fraction
    one[d, u] = one_fraction
    pw[d, u] = 1.0 if u == 0 else 0.0
    for i in range(u - 1, -1, -1):
        pw[d, i + 1] += one_fraction * pw[d, i] * (i + 1) / (u + 1)
        pw[d, i] = zero_fraction * pw[d, i] * (u - i) / (u + 1)


@inline
def _unwind(feat, zero, one, pw, d, u, path_index):
    """Remove element ``path_index`` from the path (elements 0..u) of row ``d``."""
    one_fraction = one[d, path_index]
    zero_fraction = zero[d, path_index]
    next_one_portion = pw[d, u]
    for i in range(u - 1, -1, -1):
        if one_fraction != 0.0:
            tmp = pw[d, i]
            pw[d, i] = next_one_portion * (u + 1) / ((i + 1) * one_fraction)
            next_one_portion = tmp - pw[d, i] * zero_fraction * (u - i) / (u + 1)
        else:
            pw[d, i] = pw[d, i] * (u + 1) / (zero_fraction * (u - i))
    for i in range(path_index, u):
        feat[d, i] = feat[d, i + 1]
        zero[d, i] = zero[d, i + 1]
        one[d, i] = one[d, i + 1]


@inline
def _unwound_sum(zero, one, pw, d, u, path_index):
    """Total permutation weight of the path (elements 0..u) without ``path_index``."""
    one_fraction = one[d, path_index]
    zero_fraction = zero[d, path_index]
    next_one_portion = pw[d, u]
    total = 0.0
    for i in range(u - 1, -1, -1):
        if one_fraction != 0.0:
            tmp = next_one_portion * (u + 1) / ((i + 1) * one_fraction)
            total += tmp
            next_one_portion = pw[d, i] - tmp * zero_fraction * (u - i) / (u + 1)
        elif zero_fraction != 0.0:
            total += (pw[d, i] / zero_fraction) / ((u - i) / (u + 1))
    return total


@parallel_kernel
def tree_shap(X, feature, threshold, missing_left, left, right, value, is_categorical,
              cat_bitset, categories, n_categories, missing_bin, cover, tree_roots,
              tree_outputs, max_depth, out):
    """out[i, k, j] += SHAP value of feature j for row i, summed over the trees of output k."""
    # X: float64 (n_samples, n_features) C order      # IN
    # feature, left, right: int32 (n_nodes,)           # IN
    # threshold, value: float64 (n_nodes,)             # IN
    # missing_left, is_categorical: uint8 (n_nodes,)   # IN
    # cat_bitset: uint32 (n_nodes, 8)                  # IN, left categories (bins)
    # categories: float64 (n_features, max_edges)      # IN, sorted training categories
    # n_categories: int32 (n_features,)                # IN
    # cover: float64 (n_nodes,)                        # IN, training rows reaching a node
    # tree_roots, tree_outputs: int32 (n_trees,)       # IN
    # max_depth: int, depth of the deepest tree        # IN
    # out: float64 (n_samples, n_outputs, n_features + 1)  # IN/OUT, bias column untouched
    n_samples = X.shape[0]
    n_blocks = (n_samples + _BLOCK - 1) // _BLOCK
    size = max_depth + 2
    for blk in prange(n_blocks):
        # per-task path tables (row = depth of the node owning the path) and DFS stack
        feat = np.empty((size, size), dtype=np.int64)
        zero = np.empty((size, size), dtype=np.float64)
        one = np.empty((size, size), dtype=np.float64)
        pw = np.empty((size, size), dtype=np.float64)
        s_node = np.empty(2 * size, dtype=np.int64)
        s_depth = np.empty(2 * size, dtype=np.int64)
        s_u = np.empty(2 * size, dtype=np.int64)
        s_zero = np.empty(2 * size, dtype=np.float64)
        s_one = np.empty(2 * size, dtype=np.float64)
        s_feat = np.empty(2 * size, dtype=np.int64)
        start = blk * _BLOCK
        stop = min(start + _BLOCK, n_samples)
        for i in range(start, stop):
            for t in range(tree_roots.shape[0]):
                k = tree_outputs[t]
                top = 0
                s_node[0] = tree_roots[t]
                s_depth[0] = 0
                s_u[0] = 0
                s_zero[0] = 1.0
                s_one[0] = 1.0
                s_feat[0] = -1
                top = 1
                while top > 0:
                    top -= 1
                    node = s_node[top]
                    d = s_depth[top]
                    u = s_u[top]
                    if d > 0:  # start from the parent's (possibly unwound) path
                        for j in range(u):
                            feat[d, j] = feat[d - 1, j]
                            zero[d, j] = zero[d - 1, j]
                            one[d, j] = one[d - 1, j]
                            pw[d, j] = pw[d - 1, j]
                    _extend(feat, zero, one, pw, d, u, s_zero[top], s_one[top], s_feat[top])
                    if left[node] < 0:
                        for j in range(1, u + 1):
                            w = _unwound_sum(zero, one, pw, d, u, j)
                            out[i, k, feat[d, j]] += w * (one[d, j] - zero[d, j]) * value[node]
                        continue
                    f = feature[node]
                    x = X[i, f]
                    if is_categorical[node]:
                        b = missing_bin if np.isnan(x) else _category_bin(
                            categories[f], n_categories[f], x, missing_bin)
                        go_left = bin_goes_left(b, True, 0, False, missing_bin, cat_bitset[node])
                    elif np.isnan(x):
                        go_left = missing_left[node] == 1
                    else:
                        go_left = x <= threshold[node]
                    hot = left[node] if go_left else right[node]
                    cold = right[node] if go_left else left[node]
                    if cover[node] > 0:
                        hot_zero = cover[hot] / cover[node]
                        cold_zero = cover[cold] / cover[node]
                    else:  # no training row reached the node: split the mass evenly
                        hot_zero = 0.5
                        cold_zero = 0.5
                    incoming_zero = 1.0
                    incoming_one = 1.0
                    # a feature split on again higher up: undo it, redo it here
                    path_index = 0
                    while path_index <= u and feat[d, path_index] != f:
                        path_index += 1
                    if path_index <= u:
                        incoming_zero = zero[d, path_index]
                        incoming_one = one[d, path_index]
                        _unwind(feat, zero, one, pw, d, u, path_index)
                        u -= 1
                    # push the cold child first so the hot one is walked first (LIFO);
                    # either way row d is left intact until both are done
                    s_node[top] = cold
                    s_depth[top] = d + 1
                    s_u[top] = u + 1
                    s_zero[top] = cold_zero * incoming_zero
                    s_one[top] = 0.0
                    s_feat[top] = f
                    top += 1
                    s_node[top] = hot
                    s_depth[top] = d + 1
                    s_u[top] = u + 1
                    s_zero[top] = hot_zero * incoming_zero
                    s_one[top] = incoming_one
                    s_feat[top] = f
                    top += 1
