"""Traverse packed trees for raw feature values or for binned rows.

Trees are packed end to end in flat node arrays (node indices are global);
a leaf has ``left == -1``. Rows are processed in blocks so a block's trees
stay in cache; each row's score is summed tree by tree in model order, so
the result is the same whatever the number of threads.
"""

import numpy as np
from numba import prange

from ._jit import bin_goes_left, inline, parallel_kernel

_BLOCK = 128  # rows per task


@inline
def _category_bin(edges, m, x, missing_bin):
    """Bin of a raw category value: its index among the training categories, or missing."""
    lo = 0
    hi = m
    while lo < hi:
        mid = (lo + hi) >> 1
        if edges[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    if lo < m and edges[lo] == x:
        return lo
    return missing_bin


@parallel_kernel
def predict_raw(X, feature, threshold, missing_left, left, right, value, is_categorical,
                cat_bitset, categories, n_categories, missing_bin, tree_roots, tree_outputs,
                out):
    """out[i, tree_outputs[t]] += value of the leaf of row i in tree t."""
    # X: float64 (n_samples, n_features) C order      # IN
    # feature, left, right: int32 (n_nodes,)           # IN
    # threshold, value: float64 (n_nodes,)             # IN
    # missing_left, is_categorical: uint8 (n_nodes,)   # IN
    # cat_bitset: uint32 (n_nodes, 8)                  # IN, left categories (bins)
    # categories: float64 (n_features, max_edges)      # IN, sorted training categories
    # n_categories: int32 (n_features,)                # IN
    # tree_roots, tree_outputs: int32 (n_trees,)       # IN
    # out: float64 (n_samples, n_outputs)              # IN/OUT
    n_samples = X.shape[0]
    n_blocks = (n_samples + _BLOCK - 1) // _BLOCK
    for blk in prange(n_blocks):
        start = blk * _BLOCK
        stop = min(start + _BLOCK, n_samples)
        for t in range(tree_roots.shape[0]):
            root = tree_roots[t]
            k = tree_outputs[t]
            for i in range(start, stop):
                node = root
                while left[node] >= 0:
                    f = feature[node]
                    x = X[i, f]
                    if is_categorical[node]:
                        b = missing_bin if np.isnan(x) else _category_bin(
                            categories[f], n_categories[f], x, missing_bin)
                        go_left = bin_goes_left(b, True, 0, False, missing_bin,
                                                cat_bitset[node])
                    elif np.isnan(x):
                        go_left = missing_left[node] == 1
                    else:
                        go_left = x <= threshold[node]
                    node = left[node] if go_left else right[node]
                out[i, k] += value[node]


@parallel_kernel
def predict_binned(X_binned, feature, bin_threshold, missing_left, left, right, value,
                   is_categorical, cat_bitset, missing_bin, root, rows, raw_score):
    """raw_score[rows] += leaf value of one tree, traversed on binned data."""
    # X_binned: uint8 (n_features, n_samples)             # IN
    # bin_threshold: int32 (n_nodes,)                     # IN
    # rows: uint32 (n_rows,)                              # IN
    # raw_score: float64 (n_samples,)                     # IN/OUT
    for r in prange(rows.shape[0]):
        i = rows[r]
        raw_score[i] += value[binned_leaf(X_binned, i, feature, bin_threshold, missing_left,
                                          left, right, is_categorical, cat_bitset,
                                          missing_bin, root)]


@inline
def binned_leaf(X_binned, i, feature, bin_threshold, missing_left, left, right,
                is_categorical, cat_bitset, missing_bin, root):
    """The leaf reached by binned row ``i`` from node ``root``."""
    node = root
    while left[node] >= 0:
        b = X_binned[feature[node], i]
        go_left = bin_goes_left(b, is_categorical[node] == 1, bin_threshold[node],
                                missing_left[node] == 1, missing_bin, cat_bitset[node])
        node = left[node] if go_left else right[node]
    return node
