"""Traverse packed trees for raw feature values or for binned rows.

Trees are packed end to end in flat node arrays (node indices are global);
a leaf has ``left == -1``. Rows are processed in blocks so a block's trees
stay in cache; each row's score is summed tree by tree in model order, so
the result is the same whatever the number of threads.
"""

import numpy as np
from numba import prange

from ._jit import bin_goes_left, inline, kernel, lower_bound, parallel_kernel

_BLOCK = 128  # rows per task


@inline
def _category_bin(edges, m, x, missing_bin):
    """Bin of a raw category value: its index among the training categories, or missing."""
    lo = lower_bound(edges, 0, m, x)
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


@inline
def _next_split(splits, n, x):
    """Where row ``x`` goes from split ``n``: a split index, or ~leaf.

    The child is picked by arithmetic, not by a branch the CPU would mispredict
    half the time.
    """
    # fields by subscript, which both Numba's records and NumPy's (JIT disabled) accept
    s = splits[n]
    v = x[s["feature"]]
    # NaN compares false, so "not v <= t" sends it right; then missing_left takes it back
    go_right = np.int32(not (v <= s["threshold"])) - np.int32(v != v) * s["missing_left"]
    left = s["left"]
    return left + go_right * (s["right"] - left)


@parallel_kernel
def predict_raw_numerical(X, splits, leaf_value, tree_roots, tree_outputs, block, out):
    """``predict_raw`` for trees without categorical splits, in the split-record layout.

    Eight rows walk each tree together, so that their loads and compares overlap
    instead of waiting on each other (eight took 0.82x the time of four, sixteen
    1.15x: registers run out). The eight are written out by hand: a loop over
    a small array keeps the node indices in memory. Each row's score still adds
    the trees in model order: the result equals ``predict_raw``'s bit for bit.
    """
    # X: float64 or float32 (n_samples, n_features) C order   # IN
    # splits: SPLIT_RECORD_DTYPE (n_splits,)                 # IN, children: split or ~leaf
    # leaf_value: float64 (n_leaves,)                         # IN
    # tree_roots: int32 (n_trees,)                            # IN, split or ~leaf
    # tree_outputs: int32 (n_trees,)                          # IN
    # block: int                                             # IN, rows per task
    # out: float64 (n_samples, n_outputs)                    # IN/OUT
    n_samples = X.shape[0]
    n_blocks = (n_samples + block - 1) // block
    for blk in prange(n_blocks):
        start = blk * block
        stop = min(start + block, n_samples)
        for t in range(tree_roots.shape[0]):
            root = tree_roots[t]
            k = tree_outputs[t]
            i = start
            while i + 8 <= stop:
                x0 = X[i + 0]
                x1 = X[i + 1]
                x2 = X[i + 2]
                x3 = X[i + 3]
                x4 = X[i + 4]
                x5 = X[i + 5]
                x6 = X[i + 6]
                x7 = X[i + 7]
                n0 = n1 = n2 = n3 = n4 = n5 = n6 = n7 = root
                while (n0 & n1 & n2 & n3 & n4 & n5 & n6 & n7) >= 0:  # one is at a split
                    if n0 >= 0:
                        n0 = _next_split(splits, n0, x0)
                    if n1 >= 0:
                        n1 = _next_split(splits, n1, x1)
                    if n2 >= 0:
                        n2 = _next_split(splits, n2, x2)
                    if n3 >= 0:
                        n3 = _next_split(splits, n3, x3)
                    if n4 >= 0:
                        n4 = _next_split(splits, n4, x4)
                    if n5 >= 0:
                        n5 = _next_split(splits, n5, x5)
                    if n6 >= 0:
                        n6 = _next_split(splits, n6, x6)
                    if n7 >= 0:
                        n7 = _next_split(splits, n7, x7)
                out[i + 0, k] += leaf_value[~n0]
                out[i + 1, k] += leaf_value[~n1]
                out[i + 2, k] += leaf_value[~n2]
                out[i + 3, k] += leaf_value[~n3]
                out[i + 4, k] += leaf_value[~n4]
                out[i + 5, k] += leaf_value[~n5]
                out[i + 6, k] += leaf_value[~n6]
                out[i + 7, k] += leaf_value[~n7]
                i += 8
            for r in range(i, stop):
                x = X[r]
                node = root
                while node >= 0:
                    node = _next_split(splits, node, x)
                out[r, k] += leaf_value[~node]


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


@kernel
def _binned_numerical_child(node, lc, b, bin_threshold, missing_left, right, missing_bin):
    """``_numerical_child`` for a binned value ``b``: bins <= the threshold go left,
    the missing bin where ``missing_left`` says."""
    above = np.int32(b > bin_threshold[node])
    go_right = above + np.int32(b == missing_bin) * (1 - np.int32(missing_left[node]) - above)
    return lc + go_right * (right[node] - lc)


@inline
def add_numerical_tree_binned(X_binned, rows, feature, bin_threshold, missing_left, left,
                              right, value, missing_bin, raw_score):
    """raw_score[rows] += leaf value, for a tree without categorical splits.

    ``binned_leaf``'s result, by four rows walking the tree together (see
    ``predict_raw_numerical``).
    """
    n = rows.shape[0]
    r = 0
    while r + 4 <= n:
        i0 = rows[r]
        i1 = rows[r + 1]
        i2 = rows[r + 2]
        i3 = rows[r + 3]
        n0 = np.int64(0)  # not a literal 0, which _binned_numerical_child would compile for
        n1 = n0
        n2 = n0
        n3 = n0
        while True:
            l0 = left[n0]
            l1 = left[n1]
            l2 = left[n2]
            l3 = left[n3]
            if l0 < 0 and l1 < 0 and l2 < 0 and l3 < 0:
                break
            if l0 >= 0:
                n0 = _binned_numerical_child(n0, l0, X_binned[feature[n0], i0], bin_threshold,
                                             missing_left, right, missing_bin)
            if l1 >= 0:
                n1 = _binned_numerical_child(n1, l1, X_binned[feature[n1], i1], bin_threshold,
                                             missing_left, right, missing_bin)
            if l2 >= 0:
                n2 = _binned_numerical_child(n2, l2, X_binned[feature[n2], i2], bin_threshold,
                                             missing_left, right, missing_bin)
            if l3 >= 0:
                n3 = _binned_numerical_child(n3, l3, X_binned[feature[n3], i3], bin_threshold,
                                             missing_left, right, missing_bin)
        raw_score[i0] += value[n0]
        raw_score[i1] += value[n1]
        raw_score[i2] += value[n2]
        raw_score[i3] += value[n3]
        r += 4
    for q in range(r, n):
        i = rows[q]
        node = np.int64(0)
        while left[node] >= 0:
            node = _binned_numerical_child(node, left[node], X_binned[feature[node], i],
                                           bin_threshold, missing_left, right, missing_bin)
        raw_score[i] += value[node]
