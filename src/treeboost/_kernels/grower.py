"""Grow one tree leaf-wise: the one tree grower of treeboost.

Best-first growth (Shi 2007; LightGBM's leaf-wise growth): every leaf that
may be split holds its best split; the leaf with the largest gain (ties: the
lowest node id) is split next, until ``max_leaf_nodes`` leaves exist or no
leaf has a valid split. Each split partitions the node's slice of the
row-index array in place. For dense data the smaller child's histogram is
built from its rows and the larger child's is the parent's minus the
smaller's; for sparse data both children's histograms come from one pass over
the stored entries (no subtraction: a wide sparse histogram is large, and
only the two newest are held).

A whole tree is grown in one kernel call: a tree of a few leaves on a few
hundred rows cost ~10 Python calls per node as a Python loop, most of the
time of a study over small datasets. The growth is written as steps
(``open_root``, ``split_next``, ``children_histograms``, ``consider_children``)
over a ``TreeState`` and ``Nodes`` record, and ``grow_tree`` is their loop.
The histogram step is the seam: a data-parallel driver runs the same steps
and sums each step's new histograms across workers before the split search,
so every worker takes the same decisions.

Node bookkeeping is a struct of arrays indexed by node id (children get the
next two ids). Histograms live in ``hist_pool`` slots: a splittable leaf
holds one; after a split the larger child takes over the parent's slot
(parent minus smaller child) and the smaller child a free one.
"""

import numpy as np

from ._jit import kernel
from .histogram import build_histograms, build_histograms_root, build_histograms_serial
from .partition import partition_rows, partition_rows_serial
from .records import Nodes, TreeState
from .sparse import build_histograms_sparse
from .splitting import (
    BIN,
    BITSET_WORDS,
    GAIN,
    LEFT_C,
    LEFT_G,
    LEFT_H,
    MISSING_LEFT,
    find_best_splits,
)

# TreeState.counters
N_NODES, N_LEAVES, N_FREE = 0, 1, 2


@kernel
def _zero_used_bins(hist, features, n_bins_non_missing, missing_bin):
    """Zero the bins rows can fall in: each listed feature's value bins and missing bin.

    The other slots of a (n_features, 256, 3) histogram are never read; on
    wide data with few distinct values zeroing (and subtracting) all of them
    cost far more than building the histogram.
    """
    for k in range(features.shape[0]):
        f = features[k]
        hist[f, :n_bins_non_missing[f]] = 0.0
        hist[f, missing_bin] = 0.0


@kernel
def _copy_root(hist, root_multi, root_counts, output, features, n_bins_non_missing,
               missing_bin):
    """Output ``output``'s root histogram, used bins, from a stage's shared root pass."""
    for k in range(features.shape[0]):
        f = features[k]
        nb = n_bins_non_missing[f]
        for b in range(nb + 1):
            src = b if b < nb else missing_bin
            hist[f, src, 0] = root_multi[f, src, 2 * output]
            hist[f, src, 1] = root_multi[f, src, 2 * output + 1]
            hist[f, src, 2] = root_counts[f, src]


@kernel
def _subtract_used_bins(large, small, features, n_bins_non_missing, missing_bin):
    """large -= small over the bins ``_zero_used_bins`` zeroes."""
    for k in range(features.shape[0]):
        f = features[k]
        a = large[f]
        s = small[f]
        # by index, not over reshape(-1) views: reshape brings an error path with a
        # formatted message that cost seconds of compilation, for no faster loop
        for b in range(n_bins_non_missing[f]):
            for c in range(3):
                a[b, c] -= s[b, c]
        for c in range(3):
            a[missing_bin, c] -= s[missing_bin, c]


@kernel
def _build_node_histogram(X_binned, rows, gradient, hessian, features, feature_bins, scratch,
                          hist, serial_histogram_updates, general):
    """Zero ``hist``'s used bins and build it from ``rows`` (serial below the threshold).

    ``general`` None: the caller knows no node reaches the threshold, and the
    parallel kernel is left out of this specialisation (see ``grow_tree``).
    """
    _zero_used_bins(hist, features, feature_bins.n_bins_non_missing, feature_bins.missing_bin)
    if general is not None and rows.shape[0] * features.shape[0] >= serial_histogram_updates:
        build_histograms(X_binned, rows, gradient, hessian, features, scratch.ordered_gradient,
                         scratch.ordered_hessian, hist)
    else:
        build_histograms_serial(X_binned, rows, gradient, hessian, features,
                                scratch.ordered_gradient, scratch.ordered_hessian, hist)


@kernel
def _sparse_histograms(sparse, sample_indices, gradient, hessian, features, feature_bins,
                       nodes, state, hist_pool, a, b):
    """Histograms of node ``a`` and, if ``b >= 0``, node ``b`` in one pass over the stored
    entries (sparse data; each node's sums and count are known)."""
    totals = np.empty((2, 3), dtype=np.float64)
    n_nodes = 1 if b < 0 else 2
    for s in range(n_nodes):
        node = a if s == 0 else b
        for i in range(state.start[node], state.stop[node]):
            sparse.mark[sample_indices[i]] = s + 1
        totals[s, 0] = nodes.sum_g[node]
        totals[s, 1] = nodes.sum_h[node]
        totals[s, 2] = float(nodes.count[node])
    build_histograms_sparse(sparse.col_ptr, sparse.rows, sparse.bins, sparse.zero_bin,
                            feature_bins.n_bins_non_missing, feature_bins.missing_bin,
                            sparse.mark, gradient, hessian, features, totals, n_nodes,
                            hist_pool[nodes.slot[a]], hist_pool[nodes.slot[b if b >= 0 else a]])
    for s in range(n_nodes):
        node = a if s == 0 else b
        for i in range(state.start[node], state.stop[node]):
            sparse.mark[sample_indices[i]] = 0


@kernel
def _sparse_column(sparse, f, column):
    """Bins of every row in feature f, into ``column`` (uint8, n_samples)."""
    z = sparse.zero_bin[f]
    for i in range(column.shape[0]):
        column[i] = z
    for j in range(sparse.col_ptr[f], sparse.col_ptr[f + 1]):
        column[sparse.rows[j]] = sparse.bins[j]


@kernel
def _new_tree(capacity, n_slots):
    """A tree's ``TreeState`` and ``Nodes``, every node a leaf with no split."""
    # np.empty and one loop of initial values: np.full and np.zeros compile an
    # implementation per dtype (and a fill for each), ~1 s of a first fit's compilation
    feature = np.empty(capacity, dtype=np.int32)
    bin_threshold = np.empty(capacity, dtype=np.int32)
    missing_left = np.empty(capacity, dtype=np.uint8)
    node_categorical = np.empty(capacity, dtype=np.uint8)
    cat_bitset = np.empty((capacity, BITSET_WORDS), dtype=np.uint32)
    left = np.empty(capacity, dtype=np.int32)
    right = np.empty(capacity, dtype=np.int32)
    gain = np.empty(capacity, dtype=np.float64)
    count = np.empty(capacity, dtype=np.int64)
    sum_g = np.empty(capacity, dtype=np.float64)
    sum_h = np.empty(capacity, dtype=np.float64)
    start = np.empty(capacity, dtype=np.int64)
    stop = np.empty(capacity, dtype=np.int64)
    depth = np.empty(capacity, dtype=np.int64)
    slot = np.empty(capacity, dtype=np.int64)  # histogram slot held, -1: none
    # the best split found for each node, applied if the node is chosen
    split_gain = np.empty(capacity, dtype=np.float64)
    split_feature = np.empty(capacity, dtype=np.int32)
    split_bin = np.empty(capacity, dtype=np.int32)
    split_ml = np.empty(capacity, dtype=np.uint8)
    split_gl = np.empty(capacity, dtype=np.float64)
    split_hl = np.empty(capacity, dtype=np.float64)
    split_cl = np.empty(capacity, dtype=np.int64)
    split_bitset = np.empty((capacity, BITSET_WORDS), dtype=np.uint32)
    candidate = np.empty(capacity, dtype=np.uint8)  # a leaf with a valid split
    for j in range(capacity):
        feature[j] = -1
        bin_threshold[j] = -1
        missing_left[j] = 0
        node_categorical[j] = 0
        left[j] = -1
        right[j] = -1
        gain[j] = 0.0
        count[j] = 0
        sum_g[j] = 0.0
        sum_h[j] = 0.0
        start[j] = 0
        stop[j] = 0
        depth[j] = 0
        slot[j] = -1
        split_gain[j] = -np.inf
        split_feature[j] = 0
        split_bin[j] = 0
        split_ml[j] = 0
        split_gl[j] = 0.0
        split_hl[j] = 0.0
        split_cl[j] = 0
        candidate[j] = 0
        for w in range(BITSET_WORDS):
            cat_bitset[j, w] = 0
            split_bitset[j, w] = 0
    free_slots = np.empty(n_slots, dtype=np.int64)  # a stack: slot 0 on top
    for j in range(n_slots):
        free_slots[j] = n_slots - 1 - j
    counters = np.empty(3, dtype=np.int64)
    counters[N_NODES] = 1
    counters[N_LEAVES] = 1
    counters[N_FREE] = n_slots
    state = TreeState(feature, bin_threshold, missing_left, node_categorical, cat_bitset, left,
                      right, gain, start, stop, free_slots, counters)
    nodes = Nodes(depth, count, sum_g, sum_h, slot, split_gain, split_feature, split_bin,
                  split_ml, split_gl, split_hl, split_cl, split_bitset, candidate)
    return state, nodes


@kernel
def _take_slot(node, nodes, state):
    """Give ``node`` a free histogram slot; return it."""
    n_free = state.counters[N_FREE] - 1
    state.counters[N_FREE] = n_free
    nodes.slot[node] = state.free_slots[n_free]
    return nodes.slot[node]


@kernel
def _release(node, nodes, state):
    """Give ``node``'s histogram slot back."""
    if nodes.slot[node] >= 0:
        n_free = state.counters[N_FREE]
        state.free_slots[n_free] = nodes.slot[node]
        nodes.slot[node] = -1
        state.counters[N_FREE] = n_free + 1


@kernel
def _can_split(node, nodes, tree, split):
    """Whether ``node`` may be split at all (depth, rows and hessian mass)."""
    if tree.max_depth >= 0 and nodes.depth[node] >= tree.max_depth:
        return False
    return (nodes.count[node] >= 2 * split.min_samples_leaf
            and nodes.sum_h[node] >= 2 * split.min_child_weight)


@kernel
def root_histogram(X_binned, gradient, hessian, sample_indices, features, all_rows,
                   feature_bins, tree, scratch, root, general, sparse, state, nodes):
    """Step 1: the root's rows, sums and histogram (of this worker's rows)."""
    n_rows = sample_indices.shape[0]
    state.stop[0] = n_rows
    nodes.count[0] = n_rows
    hist = scratch.hist_pool[_take_slot(np.int64(0), nodes, state)]
    if sparse is not None:
        nodes.sum_g[0] = sparse.root_sums[0]
        nodes.sum_h[0] = sparse.root_sums[1]
        _sparse_histograms(sparse, sample_indices, gradient, hessian, features, feature_bins,
                           nodes, state, scratch.hist_pool, np.int64(0), np.int64(-1))
    elif root.output >= 0:
        _copy_root(hist, root.multi, root.counts, root.output, features,
                   feature_bins.n_bins_non_missing, feature_bins.missing_bin)
    elif all_rows and n_rows * features.shape[0] >= tree.serial_histogram_updates:
        _zero_used_bins(hist, features, feature_bins.n_bins_non_missing,
                        feature_bins.missing_bin)
        build_histograms_root(X_binned, gradient, hessian, features, hist)
    else:
        _build_node_histogram(X_binned, sample_indices, gradient, hessian, features,
                              feature_bins, scratch, hist, tree.serial_histogram_updates,
                              general)


@kernel
def open_root(features, feature_bins, tree, split, scratch, general, sparse, bynode, state,
              nodes):
    """Step 2: the root's sums and row count (dense: from its histogram) and best split."""
    if sparse is None:
        hist = scratch.hist_pool[nodes.slot[0]]
        g0 = 0.0
        h0 = 0.0
        f0 = features[0]
        for b in range(feature_bins.n_bins_non_missing[f0]):
            g0 += hist[f0, b, 0]
            h0 += hist[f0, b, 1]
        # the empty slots between would add +0.0, which changes no sum
        g0 += hist[f0, feature_bins.missing_bin, 0]
        h0 += hist[f0, feature_bins.missing_bin, 1]
        nodes.sum_g[0] = g0
        nodes.sum_h[0] = h0
        # the rows of every worker, once histograms are summed across workers (the
        # counts are whole numbers, exact in float64)
        c0 = 0.0
        for b in range(feature_bins.n_bins_non_missing[f0]):
            c0 += hist[f0, b, 2]
        nodes.count[0] = np.int64(c0 + hist[f0, feature_bins.missing_bin, 2])
    # node ids as int64 values, not the literals 0, 1 or -1: a kernel called with a
    # literal argument compiles a specialisation of its own for it
    root_node = np.int64(0)
    _consider(root_node, nodes, features, feature_bins, tree, split, scratch, general, bynode)
    if nodes.candidate[0] == 0 or sparse is not None:
        _release(root_node, nodes, state)


@kernel
def split_next(X_binned, sample_indices, feature_bins, tree, split, scratch, general, sparse,
               state, nodes):
    """Step 3: split the best candidate leaf; return it, or -1 when growth is over.

    Returns -2 - node instead when the node is split but neither child needs a
    histogram (no further split possible), so the caller skips steps 4 and 5.
    """
    if state.counters[N_LEAVES] >= tree.max_leaf_nodes:
        return np.int64(-1)
    candidate = nodes.candidate
    split_gain = nodes.split_gain
    node = np.int64(-1)
    best = 0.0
    for j in range(state.counters[N_NODES]):
        if candidate[j] and (node < 0 or split_gain[j] > best):
            node = j
            best = split_gain[j]
    if node < 0:
        return node
    candidate[node] = 0
    f = nodes.split_feature[node]
    is_categorical = feature_bins.is_categorical
    column = f
    if sparse is not None:  # partition on the feature's column, materialised
        _sparse_column(sparse, f, X_binned[0])
        column = np.int32(0)
    rows = sample_indices[state.start[node]:state.stop[node]]
    if general is not None and rows.shape[0] >= tree.serial_partition_rows:
        n_left = partition_rows(rows, X_binned, column, is_categorical[f] == 1,
                                nodes.split_bin[node], nodes.split_ml[node] == 1,
                                feature_bins.missing_bin, nodes.split_bitset[node],
                                scratch.left_buffer, scratch.right_buffer)
    else:
        n_left = partition_rows_serial(rows, X_binned, column, is_categorical[f] == 1,
                                       nodes.split_bin[node], nodes.split_ml[node] == 1,
                                       feature_bins.missing_bin, nodes.split_bitset[node],
                                       scratch.left_buffer, scratch.right_buffer)
    state.feature[node] = f
    state.bin_threshold[node] = nodes.split_bin[node]
    state.missing_left[node] = nodes.split_ml[node]
    state.node_categorical[node] = is_categorical[f]
    for w in range(BITSET_WORDS):  # array assignment would compile a broadcast
        state.cat_bitset[node, w] = nodes.split_bitset[node, w]
    state.gain[node] = split_gain[node]
    lc = state.counters[N_NODES]
    rc = lc + 1
    state.counters[N_NODES] = lc + 2
    state.left[node] = lc
    state.right[node] = rc
    mid = state.start[node] + n_left
    state.start[lc] = state.start[node]
    state.stop[lc] = mid
    state.start[rc] = mid
    state.stop[rc] = state.stop[node]
    nodes.sum_g[lc] = nodes.split_gl[node]
    nodes.sum_h[lc] = nodes.split_hl[node]
    nodes.count[lc] = nodes.split_cl[node]
    nodes.sum_g[rc] = nodes.sum_g[node] - nodes.split_gl[node]
    nodes.sum_h[rc] = nodes.sum_h[node] - nodes.split_hl[node]
    nodes.count[rc] = nodes.count[node] - nodes.split_cl[node]
    nodes.depth[lc] = nodes.depth[node] + 1
    nodes.depth[rc] = nodes.depth[node] + 1
    state.counters[N_LEAVES] += 1
    if state.counters[N_LEAVES] < tree.max_leaf_nodes and (
            _can_split(lc, nodes, tree, split) or _can_split(rc, nodes, tree, split)):
        return node
    _release(node, nodes, state)
    return -2 - node


@kernel
def children_histograms(X_binned, gradient, hessian, sample_indices, features, feature_bins,
                        tree, split, scratch, general, sparse, state, nodes, node):
    """Step 4: the histograms to build for ``node``'s children, of this worker's rows.

    Dense: the smaller child's (by row count, which is the same on every
    worker); sparse: each child that may be split. Returns the child built
    first; a data-parallel driver sums the new histograms across workers here.
    """
    lc = state.left[node]
    rc = state.right[node]
    if sparse is not None:
        a = np.int64(-1)
        b = np.int64(-1)
        for child in range(lc, rc + 1):
            if _can_split(child, nodes, tree, split):
                _take_slot(child, nodes, state)
                if a < 0:
                    a = child
                else:
                    b = child
        _sparse_histograms(sparse, sample_indices, gradient, hessian, features, feature_bins,
                           nodes, state, scratch.hist_pool, a, b)
        return a
    small = lc if nodes.count[lc] <= nodes.count[rc] else rc
    _build_node_histogram(X_binned, sample_indices[state.start[small]:state.stop[small]],
                          gradient, hessian, features, feature_bins, scratch,
                          scratch.hist_pool[_take_slot(small, nodes, state)],
                          tree.serial_histogram_updates, general)
    return small


@kernel
def consider_children(features, feature_bins, tree, split, scratch, general, sparse, bynode,
                      state, nodes, node):
    """Step 5: the children's histograms complete, their best splits; ``node`` done."""
    lc = state.left[node]
    rc = state.right[node]
    if sparse is None:
        small = lc if nodes.count[lc] <= nodes.count[rc] else rc
        large = rc if small == lc else lc
        # the larger child's histogram is the parent's minus the smaller's
        nodes.slot[large] = nodes.slot[node]
        nodes.slot[node] = -1
        _subtract_used_bins(scratch.hist_pool[nodes.slot[large]],
                            scratch.hist_pool[nodes.slot[small]], features,
                            feature_bins.n_bins_non_missing, feature_bins.missing_bin)
    for child in range(lc, rc + 1):  # left, then right
        _consider(child, nodes, features, feature_bins, tree, split, scratch, general, bynode)
        if nodes.candidate[child] == 0 or sparse is not None:
            _release(child, nodes, state)
    _release(node, nodes, state)


@kernel
def grow_tree(X_binned, gradient, hessian, sample_indices, features, all_rows, feature_bins,
              tree, split, scratch, root, general, sparse, bynode):
    """Grow one tree; return its node arrays (length n_nodes) and each node's row slice."""
    # X_binned: uint8 (n_features, n_samples), feature-major; for sparse data a
    # (1, n_samples) buffer the split feature's column is written to  # IN
    # gradient, hessian: float32 (n_samples,)                          # IN
    # sample_indices: uint32 (n_rows,)                                 # IN/OUT, grouped by leaf
    # features: int32 (n_used,)                                        # IN
    # all_rows: whether sample_indices is every row (the root histogram then
    # reads the rows without indirection)
    # feature_bins, tree, split, scratch, root: records (records.py)    # IN, scratch
    # general: True, or None for a lean tree: dense, no categorical feature, and
    # no node past the root reaches the parallel partition or histogram thresholds
    # (the caller's promise, TreeGrower.kernel_arguments). Numba prunes the
    # branches on ``general is not None`` (and on ``sparse``/``bynode`` being None)
    # before typing them, so the lean specialisation compiles neither the
    # parallel node kernels nor the categorical split search: a small numerical
    # fit, a new user's first, compiles in about half the time
    # (benchmarks/bench_first_fit.py).
    # sparse: records.SparseBins for sparse data, else None
    # bynode: records.NodeColumns for colsample_bynode < 1, else None
    state, nodes = _new_tree(2 * tree.max_leaf_nodes - 1, scratch.hist_pool.shape[0])
    root_histogram(X_binned, gradient, hessian, sample_indices, features, all_rows,
                   feature_bins, tree, scratch, root, general, sparse, state, nodes)
    open_root(features, feature_bins, tree, split, scratch, general, sparse, bynode, state,
              nodes)
    while True:
        node = split_next(X_binned, sample_indices, feature_bins, tree, split, scratch,
                          general, sparse, state, nodes)
        if node == -1:
            break
        if node >= 0:
            children_histograms(X_binned, gradient, hessian, sample_indices, features,
                                feature_bins, tree, split, scratch, general, sparse, state,
                                nodes, node)
            consider_children(features, feature_bins, tree, split, scratch, general, sparse,
                              bynode, state, nodes, node)
    return (state.counters[N_NODES], state.feature, state.bin_threshold, state.missing_left,
            state.node_categorical, state.cat_bitset, state.left, state.right, state.gain,
            nodes.count, nodes.sum_g, nodes.sum_h, state.start, state.stop)


@kernel
def _next_random(s):
    """splitmix64: the next state and a well-mixed 64-bit output of it."""
    s = s + np.uint64(0x9E3779B97F4A7C15)
    z = (s ^ (s >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return s, z ^ (z >> np.uint64(31))


@kernel
def _node_features(node, features, bynode):
    """The features ``node``'s split search may use: all of the tree's, or k of them.

    k drawn without replacement (Floyd's algorithm), in ascending order, from a
    stream that depends only on the tree's seed and the node id: the same
    draw whatever the number of threads or the order nodes are searched in.
    """
    n_used = features.shape[0]
    if bynode is None:
        return features[:n_used]
    k = bynode.k[0]
    mark = bynode.mark
    s = bynode.seed[0] ^ (np.uint64(node) * np.uint64(0xD1B54A32D192ED03))
    for j in range(n_used - k, n_used):
        s, r = _next_random(s)
        t = np.int64((r >> np.uint64(11)) * (1.0 / 9007199254740992.0) * (j + 1))
        if t > j:
            t = j
        if mark[t]:
            mark[j] = 1
        else:
            mark[t] = 1
    c = 0
    for i in range(n_used):
        if mark[i]:
            bynode.chosen[c] = features[i]
            c += 1
            mark[i] = 0
    return bynode.chosen[:k]


@kernel
def _consider(node, nodes, features, feature_bins, tree, split, scratch, general, bynode):
    """Find ``node``'s best split; mark it a candidate if the gain is worth a split."""
    if nodes.slot[node] < 0 or not _can_split(node, nodes, tree, split):
        return
    candidates = _node_features(node, features, bynode)
    n_used = candidates.shape[0]
    out = scratch.split_out[:n_used]
    bitsets = scratch.split_bitsets[:n_used]
    find_best_splits(scratch.hist_pool[nodes.slot[node]], candidates, feature_bins,
                     nodes.sum_g[node], nodes.sum_h[node], float(nodes.count[node]), split,
                     out, bitsets, general)
    best = 0  # the first maximum: the lowest feature wins ties (np.argmax)
    for k in range(1, n_used):
        if out[k, GAIN] > out[best, GAIN]:
            best = k
    value = out[best, GAIN]
    if value > tree.min_split_gain and value > 0.0:
        nodes.candidate[node] = 1
        nodes.split_gain[node] = value
        nodes.split_feature[node] = candidates[best]
        nodes.split_bin[node] = np.int64(out[best, BIN])
        nodes.split_ml[node] = np.int64(out[best, MISSING_LEFT])
        nodes.split_gl[node] = out[best, LEFT_G]
        nodes.split_hl[node] = out[best, LEFT_H]
        nodes.split_cl[node] = np.int64(out[best, LEFT_C])
        for w in range(BITSET_WORDS):
            nodes.split_bitset[node, w] = bitsets[best, w]
