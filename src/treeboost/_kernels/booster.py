"""One boosting tree with Newton leaves, from gradients to updated raw scores, in one call.

For a loss whose leaves take the Newton step (log-loss, softmax, exponential,
Poisson, ...), everything a stage does per tree after the gradients is array
work: grow the tree (``grower.grow_tree``), set every node's value
-T(G)/(H + lambda) clipped to ``max_delta_step`` and shrunk, map split bins to
raw thresholds, and add the leaf values to the raw scores (through the
partition for the stage's rows, by traversal for the others). The Python
version of these steps is the same arithmetic in the same order
(``Booster._leaf_values``, ``_make_tree``, ``_TrainingState.add_tree``), which
serves every other line search and calls ``newton_values``, ``finish_values``
(a tree's finishing, the monotone bounds and ``max_delta_step``, written once in
``_finished_value``) and ``raw_thresholds`` here for the same per-node
arithmetic; as Python it cost more than the tree
itself on small data, tens of thousands of times a fit. ``grow_newton_trees`` runs
it for every output of a multi-output stage side by side, in one parallel region.
"""

import numpy as np
from numba import prange

from ._jit import fetch_add, inline, kernel, parallel_kernel
from .grower import grow_tree
from .partition import add_leaf_values
from .predict import add_numerical_tree_binned, binned_leaf
from .records import FeatureBins, SplitParams, TreeParams
from .splitting import soft_threshold

#: rows from which a tree's raw scores are added on every thread (a parallel
#: region costs tens of microseconds to start)
PARALLEL_SCORE_ROWS = 65536
#: np.finfo(np.float64).max, whose Numba implementation cost ~0.7 s of compilation
_FLOAT64_MAX = 1.7976931348623157e308


@inline
def _newton_value(g, h, reg_lambda, reg_alpha):
    """-T(G) / (H + lambda), T the L1 soft-threshold (XGBoost eq. 5); 0 where H + lambda <= 0."""
    t = soft_threshold(g, reg_alpha)
    den = h + reg_lambda
    return -t / den if den > 0.0 else 0.0


@inline
def _finished_value(v, j, lower, upper, max_delta_step):
    """Node j's value ``v`` clipped to its monotone bounds, then to +-``max_delta_step``.

    The one place a tree is finished after its leaf values are set (the Newton step
    here, or a loss's line search in ``Booster._leaf_values``): ``lower``/``upper``
    are the nodes' bounds (``constraints``), empty arrays for none; np.clip's
    order, the lower bound and then the upper (NaN stays NaN).
    """
    if lower.shape[0] > 0:
        v = min(max(v, lower[j]), upper[j])
    return min(max(v, -max_delta_step), max_delta_step)


@inline
def _raw_threshold(f, b, bin_edges, n_edges, last_edge):
    """The raw threshold of a numerical split at bin b: ``x <= bin_edges[f, b]``."""
    if b >= n_edges[f]:  # every value left, only missing values right
        return _FLOAT64_MAX
    # not min(b, last_edge): an int32 and an int64 would compile a min of their own
    return bin_edges[f, b if b < last_edge else last_edge]


@kernel
def newton_values(sum_g, sum_h, reg_lambda, reg_alpha, out):
    """``out[j]`` = the Newton value of node j (``_newton_value``): the Python leaf path's."""
    for j in range(out.shape[0]):
        out[j] = _newton_value(sum_g[j], sum_h[j], reg_lambda, reg_alpha)


@kernel
def finish_values(value, lower, upper, max_delta_step):
    """``value[j]`` clipped in place as ``_finished_value`` does: the Python leaf path's."""
    # value, lower, upper: float64 (n_nodes,); lower, upper empty for no bounds   # IN/OUT
    for j in range(value.shape[0]):
        value[j] = _finished_value(value[j], j, lower, upper, max_delta_step)


@kernel
def raw_thresholds(feature, bin_threshold, left, node_categorical, bin_edges, n_edges, out):
    """``out[j]``: node j's raw threshold, 0 for leaves and categorical splits."""
    last_edge = bin_edges.shape[1] - 1
    for j in range(out.shape[0]):
        out[j] = 0.0
        if left[j] >= 0 and node_categorical[j] == 0:
            out[j] = _raw_threshold(feature[j], bin_threshold[j], bin_edges, n_edges,
                                    last_edge)


@kernel
def grow_newton_tree(X_binned, gradient, hessian, sample_indices, features, all_rows,
                     feature_bins, tree, split, scratch, root, general, sparse, bynode,
                     constraints, quant, max_delta_step,
                     shrinkage, bin_edges, n_edges, outside, raw_score):
    """Grow a tree, set its Newton values and add it to ``raw_score``; return its arrays."""
    # the arguments up to quant are grow_tree's (dense data: sparse is None)
    # max_delta_step: float, np.inf for none; shrinkage: float
    # bin_edges: float64 (n_features, max_bins), n_edges: int32 (n_features,)  # IN
    # outside: uint32 (n_outside,), rows not in sample_indices                 # IN
    # raw_score: float64 (n_samples,), this tree's output                      # IN/OUT
    # (feature_bins, split and the other records as plain tuples: grow_tree)
    (n_nodes, feature, bin_threshold, missing_left, node_categorical, cat_bitset, left,
     right, gain, count, sum_g, sum_h, start, stop, constrained) = grow_tree(
        X_binned, gradient, hessian, sample_indices, features, all_rows, feature_bins, tree,
        split, scratch, root, general, sparse, bynode, constraints, quant, None)
    reg_lambda = SplitParams(*split).reg_lambda
    reg_alpha = SplitParams(*split).reg_alpha
    missing_bin = FeatureBins(*feature_bins).missing_bin
    value = np.empty(feature.shape[0], dtype=np.float64)
    threshold = np.empty(feature.shape[0], dtype=np.float64)
    for j in range(feature.shape[0]):  # np.zeros would compile one more implementation
        value[j] = 0.0
        threshold[j] = 0.0
    last_edge = bin_edges.shape[1] - 1
    # the node's monotone bounds, then the cap (_finished_value)
    lower = upper = np.empty(0, dtype=np.float64)  # no bounds
    if constraints is not None:
        lower, upper = constrained.lower, constrained.upper
    for j in range(n_nodes):
        v = _newton_value(sum_g[j], sum_h[j], reg_lambda, reg_alpha)
        value[j] = shrinkage * _finished_value(v, j, lower, upper, max_delta_step)
        if left[j] >= 0 and node_categorical[j] == 0:
            threshold[j] = _raw_threshold(feature[j], bin_threshold[j], bin_edges, n_edges,
                                          last_edge)
    # the rows' raw scores, through the partition: on every thread for many rows
    # (serial, ~1 ns a row: on two threads, fits alternated in one process, took
    # 0.975x the time for regression 500,000 x 20 and 0.969x for binary 1,000,000 x 28)
    if (general is not None and TreeParams(*tree).n_threads > 1
            and sample_indices.shape[0] >= PARALLEL_SCORE_ROWS):
        n_leaves = 0
        for j in range(n_nodes):
            n_leaves += left[j] < 0
        leaf_starts = np.empty(n_leaves, dtype=np.int64)
        leaf_stops = np.empty(n_leaves, dtype=np.int64)
        leaf_values = np.empty(n_leaves, dtype=np.float64)
        k = 0
        for j in range(n_nodes):
            if left[j] < 0:
                leaf_starts[k] = start[j]
                leaf_stops[k] = stop[j]
                leaf_values[k] = value[j]
                k += 1
        add_leaf_values(raw_score, sample_indices, leaf_starts, leaf_stops, leaf_values)
    else:
        for j in range(n_nodes):
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


@parallel_kernel
def grow_newton_trees(X_binned, gradient, hessian, indices, features, all_rows, feature_bins,
                      tree, split, scratches, root_multi, root_counts, general, bynodes,
                      constraints, bynode_seeds, max_delta_step, shrinkage, bin_edges, n_edges,
                      outside, raw_score, taken, out):
    """A multi-output stage's trees side by side: ``grow_newton_tree`` for each output.

    One task per worker (``scratches``: each worker's serial grower buffers); a
    worker takes the next output no worker has taken (``taken``, a shared count),
    grows its tree, and takes another until none is left. The trees of a stage
    differ in cost, so outputs are not dealt out in advance. A tree is the one
    ``grow_newton_tree`` grows alone: its own rows, its own output's gradients,
    root histogram and raw scores, and serial kernels whose sums equal the
    parallel ones'.
    """
    # gradient, hessian: float32 (n_outputs, n_samples)               # IN
    # indices: uint32 (n_outputs, n_rows), each row the stage's rows   # IN/OUT, by leaf
    # scratches, bynodes: one Scratch tuple and one NodeColumns per worker
    # bynode_seeds: uint64 (n_outputs,), each tree's colsample_bynode seed
    # root_multi, root_counts: the stage's shared roots (TreeGrower.root_histograms), or
    # the unused placeholder with every tree building its own root (root_multi's last
    # axis shorter than 2 n_outputs)
    # raw_score: float64 (n_outputs, n_samples)                        # IN/OUT
    # taken: int64 (1,), 0 on entry                                    # scratch
    # out: n_nodes int64 (n_outputs,), then (n_outputs, capacity) arrays of feature,
    # threshold, bin_threshold, missing_left, is_categorical, cat_bitset (with a
    # last axis of BITSET_WORDS), left, right, value, gain, count, cover  # OUT
    n_outputs = gradient.shape[0]
    shared_root = root_multi.shape[2] >= 2 * n_outputs
    for t in prange(len(scratches)):
        w = np.int64(t)  # (prange's index is unsigned; the typed lists take a signed one)
        bynode = bynodes[w]
        while True:
            k = fetch_add(taken)
            if k >= n_outputs:
                break
            bynode.seed[0] = bynode_seeds[k]
            grown = grow_newton_tree(
                X_binned, gradient[k], hessian[k], indices[k], features, all_rows,
                feature_bins, tree, split, scratches[w],
                (root_multi, root_counts, k if shared_root else np.int64(-1)), general, None,
                bynode, constraints, None, max_delta_step, shrinkage, bin_edges, n_edges,
                outside, raw_score[k])
            _store_tree(grown, k, out)


@inline
def _store_tree(grown, k, out):
    """Tree ``k``'s node arrays (``grow_newton_tree``'s result) into row k of ``out``."""
    n = grown[0]
    out[0][k] = n
    for j in range(n):
        out[1][k, j] = grown[1][j]
        out[2][k, j] = grown[2][j]
        out[3][k, j] = grown[3][j]
        out[4][k, j] = grown[4][j]
        out[5][k, j] = grown[5][j]
        for q in range(grown[6].shape[1]):
            out[6][k, j, q] = grown[6][j, q]
        out[7][k, j] = grown[7][j]
        out[8][k, j] = grown[8][j]
        out[9][k, j] = grown[9][j]
        out[10][k, j] = grown[10][j]
        out[11][k, j] = grown[11][j]
        out[12][k, j] = grown[12][j]
