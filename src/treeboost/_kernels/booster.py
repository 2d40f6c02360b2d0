"""One boosting tree with Newton leaves, from gradients to updated raw scores, in one call.

For a loss whose leaves take the Newton step (log-loss, softmax, exponential,
Poisson, ...), everything a stage does per tree after the gradients is array
work: grow the tree (``grower.grow_tree``), set every node's value
-T(G)/(H + lambda) clipped to ``max_delta_step`` and shrunk, map split bins to
raw thresholds, and add the leaf values to the raw scores (through the
partition for the stage's rows, by traversal for the others). The Python
version of these steps is the same arithmetic in the same order
(``Booster._leaf_values``, ``_make_tree``, ``_TrainingState.add_tree``); it
cost more than the tree itself on small data, tens of thousands of times a fit.
"""

import numpy as np

from ._jit import kernel
from .grower import grow_tree
from .predict import add_numerical_tree_binned, binned_leaf
from .splitting import soft_threshold

#: np.finfo(np.float64).max, whose Numba implementation cost ~0.7 s of compilation
_FLOAT64_MAX = 1.7976931348623157e308


@kernel
def grow_newton_tree(X_binned, gradient, hessian, sample_indices, features, all_rows,
                     feature_bins, tree, split, scratch, root, general, constraints,
                     max_delta_step, shrinkage, bin_edges, n_edges, outside, raw_score):
    """Grow a tree, set its Newton values and add it to ``raw_score``; return its arrays."""
    # the arguments up to constraints are grow_tree's
    # max_delta_step: float, np.inf for none; shrinkage: float
    # bin_edges: float64 (n_features, max_bins), n_edges: int32 (n_features,)  # IN
    # outside: uint32 (n_outside,), rows not in sample_indices                 # IN
    # raw_score: float64 (n_samples,), this tree's output                      # IN/OUT
    (n_nodes, feature, bin_threshold, missing_left, node_categorical, cat_bitset, left,
     right, gain, count, sum_g, sum_h, start, stop, constrained) = grow_tree(
        X_binned, gradient, hessian, sample_indices, features, all_rows, feature_bins, tree,
        split, scratch, root, general, constraints)
    reg_lambda = split.reg_lambda
    reg_alpha = split.reg_alpha
    missing_bin = feature_bins.missing_bin
    value = np.empty(feature.shape[0], dtype=np.float64)
    threshold = np.empty(feature.shape[0], dtype=np.float64)
    for j in range(feature.shape[0]):  # np.zeros would compile one more implementation
        value[j] = 0.0
        threshold[j] = 0.0
    last_edge = bin_edges.shape[1] - 1
    for j in range(n_nodes):
        t = soft_threshold(sum_g[j], reg_alpha)
        den = sum_h[j] + reg_lambda
        v = -t / den if den > 0.0 else 0.0
        if constraints is not None:  # the node's monotone bounds, then the cap
            v = min(max(v, constrained.lower[j]), constrained.upper[j])
        # np.clip's order: the lower bound, then the upper
        v = min(max(v, -max_delta_step), max_delta_step)
        value[j] = shrinkage * v
        f = feature[j]
        if left[j] >= 0 and node_categorical[j] == 0:
            b = bin_threshold[j]
            if b >= n_edges[f]:  # every value left, only missing values right
                threshold[j] = _FLOAT64_MAX
            else:
                # not min(b, last_edge): an int32 and an int64 would compile a min of
                # their own
                threshold[j] = bin_edges[f, b if b < last_edge else last_edge]
        if left[j] < 0:
            v = value[j]
            for i in range(start[j], stop[j]):
                raw_score[sample_indices[i]] += v
    # serial: a parallel region costs tens of microseconds to start, more than
    # the traversal of a small fit's few hundred out-of-sample rows
    categorical = False
    for j in range(n_nodes):
        if left[j] >= 0 and node_categorical[j]:
            categorical = True
            break
    # a lean tree (general None) has no categorical split: the traversal is compiled out
    if general is not None and categorical:
        for r in range(outside.shape[0]):
            i = outside[r]
            raw_score[i] += value[binned_leaf(X_binned, i, feature, bin_threshold,
                                              missing_left, left, right, node_categorical,
                                              cat_bitset, missing_bin, 0)]
    else:  # four rows at a time, without branches (predict.add_numerical_tree_binned)
        add_numerical_tree_binned(X_binned, outside, feature, bin_threshold, missing_left, left,
                                  right, value, missing_bin, raw_score)
    return (n_nodes, feature, threshold, bin_threshold, missing_left, node_categorical,
            cat_bitset, left, right, value, gain, count, sum_h)
