"""Traverse packed trees for raw feature values or for binned rows.

Trees are packed end to end in flat node arrays (node indices are global);
a leaf has ``left == -1``. Rows are processed in blocks so a block's trees
stay in cache; each row's score is summed tree by tree in model order, so
the result is the same whatever the number of threads.
"""

import numpy as np
from numba import prange

from ._jit import parallel_kernel

_BLOCK = 128  # rows per task


@parallel_kernel
def predict_raw(X, feature, threshold, missing_left, left, right, value,
                tree_roots, tree_outputs, out):
    """out[i, tree_outputs[t]] += value of the leaf of row i in tree t."""
    # X: float64 (n_samples, n_features) C order      # IN
    # feature, left, right: int32 (n_nodes,)           # IN
    # threshold, value: float64 (n_nodes,)             # IN
    # missing_left: uint8 (n_nodes,)                   # IN
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
                    x = X[i, feature[node]]
                    if np.isnan(x):
                        go_left = missing_left[node] == 1
                    else:
                        go_left = x <= threshold[node]
                    node = left[node] if go_left else right[node]
                out[i, k] += value[node]


@parallel_kernel
def predict_binned(X_binned, feature, bin_threshold, missing_left, left, right,
                   value, missing_bin, root, rows, raw_score):
    """raw_score[rows] += leaf value of one tree, traversed on binned data."""
    # X_binned: uint8 (n_features, n_samples)             # IN
    # bin_threshold: int32 (n_nodes,)                     # IN
    # rows: uint32 (n_rows,)                              # IN
    # raw_score: float64 (n_samples,)                     # IN/OUT
    for r in prange(rows.shape[0]):
        i = rows[r]
        node = root
        while left[node] >= 0:
            b = X_binned[feature[node], i]
            if b == missing_bin:
                go_left = missing_left[node] == 1
            else:
                go_left = b <= bin_threshold[node]
            node = left[node] if go_left else right[node]
        raw_score[i] += value[node]
