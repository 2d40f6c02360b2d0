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

SHAP interaction values (Lundberg et al. 2020, "From local explanations to
global understanding with explainable AI for trees", eq. 7-8) condition the
same walk on one feature j: known ("on") follows the row's branch at j's
splits, unknown ("off") weighs both branches by their cover, and j never
enters the path. Half the difference of the two is the interaction of j with
every other feature. XGBoost walks the tree once for each; as the path is the
same in both, one walk here carries both shares of the row's mass down to the
leaves; a leaf with no split on j above it (equal shares) adds nothing, so the
walk skips every subtree that neither lies below a split on j nor holds one.
Only the features a tree splits on are conditioned on (for any other feature
both give the same values), so the cost per row and tree is at most
O(distinct split features * leaves * depth^2).

The path bookkeeping (extend, unwind, unwound sum) and the conditioning follow
the reference implementation shared by the ``shap`` package and XGBoost
(``RegTree::TreeShap``).
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


@inline
def _goes_left(X, i, node, feature, threshold, missing_left, is_categorical, cat_bitset,
               categories, n_categories, missing_bin):
    """Whether row ``i`` goes to the left child of split ``node`` (as ``predict_raw`` routes it)."""
    f = feature[node]
    x = X[i, f]
    if is_categorical[node]:
        b = missing_bin if np.isnan(x) else _category_bin(
            categories[f], n_categories[f], x, missing_bin)
        return bin_goes_left(b, True, 0, False, missing_bin, cat_bitset[node])
    if np.isnan(x):
        return missing_left[node] == 1
    return x <= threshold[node]


@inline
def _walk(X, i, root, feature, threshold, missing_left, left, right, value, is_categorical,
          cat_bitset, categories, n_categories, missing_bin, cover, conditioned,
          condition_feature, below, bit, scale, phi, feat, zero, one, pw, stack_i, stack_f):
    """phi[j] += scale * (SHAP value of feature j for row i in one tree, or its change)."""
    # conditioned False: plain TreeSHAP. True: (SHAP values with condition_feature
    # known) - (with it unknown), the two walks of XGBoost in one; bit ``bit`` of
    # below[node] says whether the subtree of node splits on condition_feature
    # stack_i[s]: node, depth, path elements to copy from the parent, parent's split feature
    # stack_f[s]: zero and one fractions of that feature, shares of the row's mass that
    # reach the node through the conditioned feature's splits when it is known and
    # when it is not (plain: 1 and 0, their difference 1)
    stack_i[0, 0] = root
    stack_i[0, 1] = 0
    stack_i[0, 2] = 0
    stack_i[0, 3] = -1
    stack_f[0, 0] = 1.0
    stack_f[0, 1] = 1.0
    stack_f[0, 2] = 1.0
    stack_f[0, 3] = 1.0 if conditioned else 0.0
    top = 1
    while top > 0:
        top -= 1
        node = stack_i[top, 0]
        d = stack_i[top, 1]
        u = stack_i[top, 2]
        known = stack_f[top, 2]
        unknown = stack_f[top, 3]
        if d > 0:  # start from the parent's (possibly unwound) path
            for j in range(u):
                feat[d, j] = feat[d - 1, j]
                zero[d, j] = zero[d - 1, j]
                one[d, j] = one[d - 1, j]
                pw[d, j] = pw[d - 1, j]
        if not conditioned or stack_i[top, 3] != condition_feature:
            _extend(feat, zero, one, pw, d, u, stack_f[top, 0], stack_f[top, 1],
                    stack_i[top, 3])
        else:  # the conditioned feature never enters the path: it is no Shapley player
            u -= 1
        if left[node] < 0:
            if known != unknown:  # else no split on the conditioned feature above
                for j in range(1, u + 1):
                    w = _unwound_sum(zero, one, pw, d, u, j)
                    phi[feat[d, j]] += (w * (one[d, j] - zero[d, j]) * value[node]
                                        * (known - unknown) * scale)
            continue
        f = feature[node]
        go_left = _goes_left(X, i, node, feature, threshold, missing_left, is_categorical,
                             cat_bitset, categories, n_categories, missing_bin)
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
        hot_known = known
        cold_known = known
        hot_unknown = unknown
        cold_unknown = unknown
        if conditioned and f == condition_feature:
            cold_known = 0.0  # known: the row's branch only
            hot_unknown *= hot_zero  # unknown: both branches, by cover
            cold_unknown *= cold_zero
        # push the cold child first so the hot one is walked first (LIFO); either way
        # row d is left intact until both are done. A child no mass reaches adds
        # nothing, nor one with equal shares and no split on the conditioned feature
        # below: all its leaves have equal shares.
        for child, child_zero, child_one, child_known, child_unknown in (
                (cold, cold_zero, 0.0, cold_known, cold_unknown),
                (hot, hot_zero, incoming_one, hot_known, hot_unknown)):
            walk = child_known != 0.0 or child_unknown != 0.0
            if walk and conditioned and child_known == child_unknown:
                walk = (below[child, bit >> 5] >> (bit & 31)) & 1 == 1
            if walk:
                stack_i[top, 0] = child
                stack_i[top, 1] = d + 1
                stack_i[top, 2] = u + 1
                stack_i[top, 3] = f
                stack_f[top, 0] = child_zero * incoming_zero
                stack_f[top, 1] = child_one
                stack_f[top, 2] = child_known
                stack_f[top, 3] = child_unknown
                top += 1


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
        stack_i = np.empty((2 * size, 4), dtype=np.int64)
        stack_f = np.empty((2 * size, 4), dtype=np.float64)
        unread = np.zeros((1, 1), dtype=np.uint32)  # no conditioning: no subtree bits
        start = blk * _BLOCK
        stop = min(start + _BLOCK, n_samples)
        for i in range(start, stop):
            for t in range(tree_roots.shape[0]):
                _walk(X, i, tree_roots[t], feature, threshold, missing_left, left, right,
                      value, is_categorical, cat_bitset, categories, n_categories, missing_bin,
                      cover, False, -1, unread, 0, 1.0, out[i, tree_outputs[t]], feat, zero,
                      one, pw, stack_i, stack_f)


@parallel_kernel
def tree_shap_interactions(X, feature, threshold, missing_left, left, right, value,
                           is_categorical, cat_bitset, categories, n_categories, missing_bin,
                           cover, tree_roots, tree_outputs, split_feature_ptr, split_features,
                           below, max_depth, out):
    """out[i, k, j, l] += SHAP interaction value of features j != l for row i over output k."""
    # X ... tree_outputs: as tree_shap                  # IN
    # split_feature_ptr: int64 (n_trees + 1,)            # IN, tree t's features at
    #     split_features[split_feature_ptr[t]:split_feature_ptr[t + 1]]
    # split_features: int64 (sum of distinct split features per tree,)  # IN
    # below: uint32 (n_nodes, n_words)                  # IN, bit q - split_feature_ptr[t]
    #     of a node of tree t: its subtree splits on split_features[q]
    # max_depth: int, depth of the deepest tree          # IN
    # out: float64 (n_samples, n_outputs, n_features + 1, n_features + 1)  # IN/OUT,
    #     diagonal, bias row and bias column untouched
    n_samples = X.shape[0]
    n_blocks = (n_samples + _BLOCK - 1) // _BLOCK
    size = max_depth + 2
    for blk in prange(n_blocks):
        feat = np.empty((size, size), dtype=np.int64)
        zero = np.empty((size, size), dtype=np.float64)
        one = np.empty((size, size), dtype=np.float64)
        pw = np.empty((size, size), dtype=np.float64)
        stack_i = np.empty((2 * size, 4), dtype=np.int64)
        stack_f = np.empty((2 * size, 4), dtype=np.float64)
        start = blk * _BLOCK
        stop = min(start + _BLOCK, n_samples)
        for i in range(start, stop):
            for t in range(tree_roots.shape[0]):
                k = tree_outputs[t]
                for q in range(split_feature_ptr[t], split_feature_ptr[t + 1]):
                    j = split_features[q]
                    # (SHAP values with j known - with j unknown) / 2: eq. 8 of the paper
                    # as XGBoost evaluates it; j itself gets nothing (it is off the path)
                    _walk(X, i, tree_roots[t], feature, threshold, missing_left, left, right,
                          value, is_categorical, cat_bitset, categories, n_categories,
                          missing_bin, cover, True, j, below, q - split_feature_ptr[t], 0.5,
                          out[i, k, j], feat, zero, one, pw, stack_i, stack_f)
