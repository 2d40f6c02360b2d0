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
time of a study over small datasets. The histogram step is the seam for
data-parallel training: called with a ``resume`` record, ``grow_tree`` stops
after each histogram it builds from this worker's rows (the root's, then the
children's of each split) and returns the node; the driver sums that
histogram across workers and calls again, so every worker takes the same
decisions (``grower.grow_data_parallel``). Node sums and row counts come
from the summed histograms; each worker partitions only its own rows.

Constraints (``constraints`` not None; None compiles all of it out): each
node carries value bounds and the interaction sets its path still allows
(``records.NodeState``). ``_allowed_features`` and the node's bounds restrict
its split search (``_consider``); ``_constrain_children`` sets the children's
state after a split (LightGBM's "basic" monotone method: on a feature
constrained to increase, left.upper = right.lower = the mean of the two
children's clipped values; otherwise the parent's bounds; the sets that hold
the split feature), and for the "intermediate" method tightens the bounds of
the leaves across the split, which ``_reconsider`` searches again.

One tree for several outputs (``multi`` not None, ``multi_strategy="multi_output_tree"``;
None compiles it out): the histograms hold every output's gradient beside the shared
hessian and the count, the split search sums the outputs' gains, and every node keeps
each output's gradient sum (``multi_output``); the rest of the growth is this one.

Node bookkeeping is a struct of arrays indexed by node id (children get the
next two ids). Histograms live in ``hist_pool`` slots: a splittable leaf
holds one; after a split the larger child takes over the parent's slot
(parent minus smaller child) and the smaller child a free one.
"""

import numpy as np
from numba import prange

from ._jit import inline, kernel, parallel_kernel
from .constraints import (
    _allowed_features,
    _constrain_children,
    _node_state,
)
from .multi_output import (
    find_best_splits_multi,
    multi_node_histogram,
    root_sums_multi,
    subtract_multi,
)
from .node_histogram import (
    _build_node_histogram,
    _subtract_used_bins,
    dense_root_histogram,
)
from .partition import partition_rows, partition_rows_serial
from .records import (
    ALL_FEATURES,
    FeatureBins,
    NodeBounds,
    Nodes,
    RootHistograms,
    Scratch,
    SplitParams,
    TreeParams,
    TreeState,
)
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

# TreeState.counters: nodes, leaves, free histogram slots; where a resumed growth
# stands (grow_tree's ``resume``) and the node whose children it stopped at; whether a
# resumed growth leaves its histograms to the caller (EXTERNAL_HISTOGRAMS:
# histogram_provider), and its partitions too (EXTERNAL_PARTITIONS: the provider keeps
# the rows, on a GPU), else 0; the left child's rows of an external partition
N_NODES, N_LEAVES, N_FREE, PHASE, PENDING, EXTERNAL, N_LEFT = 0, 1, 2, 3, 4, 5, 6
EXTERNAL_HISTOGRAMS, EXTERNAL_PARTITIONS = 1, 2
# the phases: the root's histogram to build; the root to open (its histogram summed);
# the pending node's children to consider (their histograms summed); the tree done;
# the left child's rows summed across workers; the pending node's split chosen, its
# rows to partition (by the caller, EXTERNAL_PARTITIONS)
START, OPEN_ROOT, CONSIDER, DONE, PARTITIONED, SPLIT = 0, 1, 2, 3, 4, 5


@kernel
def _subtract_packed(large, small, features, n_bins_non_missing, missing_bin):
    """large -= small over the used bins of packed histograms: exact integer arithmetic."""
    for k in range(features.shape[0]):
        f = features[k]
        a = large[f]
        s = small[f]
        for b in range(n_bins_non_missing[f]):
            a[b] -= s[b]
        a[missing_bin] -= s[missing_bin]


@kernel
def _unpack(hist, packed, features, n_bins_non_missing, missing_bin, scales, count):
    """``hist``'s used bins: the dequantised sums of the packed histogram, for the split search.

    Gradient and hessian: integer sum x scale. Count: estimated from the
    hessian's integer sum as LightGBM does, h x count / H of the node (exact for
    a constant hessian); keeping exact counts would take a second add per row
    and feature, and counts only bound ``min_samples_leaf`` inside the scan: the
    nodes' own row counts stay exact (their row slices).
    """
    total = _hessian_total(packed, features[0], n_bins_non_missing, missing_bin)
    _unpack_features(hist, packed, features, n_bins_non_missing, missing_bin, scales,
                     count / total if total > 0 else 0.0)


@inline
def _hessian_total(packed, f, n_bins_non_missing, missing_bin):
    """The integer hessian sum of a packed histogram: over feature ``f``'s bins."""
    total = np.int64(0)
    for b in range(n_bins_non_missing[f]):
        total += packed[f, b] & 0xFFFFFFFF
    return total + (packed[f, missing_bin] & 0xFFFFFFFF)


@inline
def _unpack_features(hist, packed, features, n_bins_non_missing, missing_bin, scales,
                     factor):
    """``_unpack`` over ``features``, the count estimated as hessian x ``factor``."""
    s_g = scales[0]
    s_h = scales[1]
    for k in range(features.shape[0]):
        f = features[k]
        nb = n_bins_non_missing[f]
        for b in range(nb + 1):
            src = b if b < nb else missing_bin
            p = packed[f, src]
            h = np.float64(p & 0xFFFFFFFF)
            hist[f, src, 0] = np.float64(p >> 32) * s_g
            hist[f, src, 1] = h * s_h
            hist[f, src, 2] = h * factor


@inline
def _rows_sums(gradient, hessian, sample_indices, a, b):
    """The gradient and hessian sums of the rows at positions a to b - 1, in their order."""
    g = 0.0
    h = 0.0
    for i in range(a, b):
        r = sample_indices[i]
        g += gradient[r]
        h += hessian[r]
    return g, h


@kernel
def _exact_sums(gradient, hessian, sample_indices, n_nodes, left, right, start, stop, count,
                sum_g, sum_h, leaves_summed):
    """Every node's gradient and hessian sums and row count, from the exact derivatives.

    Quantised gradients choose the splits only: the leaf values (and covers)
    are refit from the float gradients of each leaf's rows (LightGBM's
    ``quant_train_renew_leaf``); an inner node sums its children (their ids are
    larger than its own). ``leaves_summed``: the leaves' sums are there already
    (``leaf_sums``), only the inner nodes' and the counts are left.
    """
    for j in range(n_nodes - 1, -1, -1):
        count[j] = stop[j] - start[j]
        if left[j] < 0:
            if not leaves_summed:
                sum_g[j], sum_h[j] = _rows_sums(gradient, hessian, sample_indices, start[j],
                                                stop[j])
        else:
            sum_g[j] = sum_g[left[j]] + sum_g[right[j]]
            sum_h[j] = sum_h[left[j]] + sum_h[right[j]]


@parallel_kernel
def leaf_sums(gradient, hessian, sample_indices, n_nodes, left, start, stop, sum_g, sum_h,
              n_threads):
    """``_exact_sums``' sums of the leaves, the leaves shared among the threads.

    Each leaf's rows are added in their order by one thread, as ``_exact_sums``
    adds them: the same sums. A thread takes the leaves whose middle row lies
    in its share of the positions (the leaves tile the positions of
    ``sample_indices``), so that the rows, not the leaves, are shared evenly.
    """
    # n_threads: numba.get_num_threads() (read inside, it keeps a kernel out of the cache)
    n = sample_indices.shape[0]
    n_shares = max(1, n_threads)
    for t in prange(n_shares):
        lo = t * n // n_shares
        hi = (t + 1) * n // n_shares
        for j in range(n_nodes):
            # (an empty leaf at the end: its middle is n)
            middle = min((start[j] + stop[j]) // 2, n - 1)
            if left[j] < 0 and lo <= middle < hi:
                sum_g[j], sum_h[j] = _rows_sums(gradient, hessian, sample_indices, start[j],
                                                stop[j])


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


@inline
def new_tree(capacity, n_slots, n_features, constraints):
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
    counters = np.empty(7, dtype=np.int64)
    counters[EXTERNAL] = 0
    counters[N_LEFT] = 0
    counters[N_NODES] = 1
    counters[N_LEAVES] = 1
    counters[N_FREE] = n_slots
    counters[PHASE] = START
    counters[PENDING] = -1
    state = TreeState(feature, bin_threshold, missing_left, node_categorical, cat_bitset, left,
                      right, gain, start, stop, free_slots, counters)
    nodes = Nodes(depth, count, sum_g, sum_h, slot, split_gain, split_feature, split_bin,
                  split_ml, split_gl, split_hl, split_cl, split_bitset, candidate,
                  _node_state(capacity, n_features, constraints))
    return state, nodes


@kernel
def _release(node, slot, free_slots, n_free):
    """Give ``node``'s histogram slot back; return the new number of free slots."""
    if slot[node] >= 0:
        free_slots[n_free] = slot[node]
        slot[node] = -1
        n_free += 1
    return n_free


@kernel
def _can_split(node, depth, count, sum_h, max_depth, min_samples_leaf, min_child_weight):
    """Whether ``node`` may be split at all (depth, rows and hessian mass)."""
    if max_depth >= 0 and depth[node] >= max_depth:
        return False
    return count[node] >= 2 * min_samples_leaf and sum_h[node] >= 2 * min_child_weight


@kernel
def grow_tree(X_binned, gradient, hessian, sample_indices, features, all_rows, feature_bins_t,
              tree_t, split_t, scratch_t, root_t, general, sparse, bynode, constraints, quant,
              resume, multi=None):
    """Grow one tree; return its node arrays (length n_nodes) and each node's row slice."""
    # X_binned: uint8 (n_features, n_samples), feature-major; for sparse data a
    # (1, n_samples) buffer the split feature's column is written to  # IN
    # gradient, hessian: float32 (n_samples,); hessian None where every row's is
    # 1.0 (TreeGrower.kernel_arguments; dense, float histograms, no resume): the
    # histograms then add two floats a row, not three                  # IN
    # sample_indices: uint32 (n_rows,)                                 # IN/OUT, grouped by leaf
    # features: int32 (n_used,)                                        # IN
    # all_rows: whether sample_indices is every row (the root histogram then
    # reads the rows without indirection)
    # feature_bins_t, tree_t, split_t, scratch_t, root_t: the fields of the records
    # FeatureBins, TreeParams, SplitParams, Scratch, RootHistograms (records.py) as plain
    # tuples, made records again here: Numba types a named tuple argument at every call
    # on a slow path (~1 us each), which small trees, tens of thousands a study fit,
    # paid five times per tree                                       # IN, scratch
    # general: True, or None for a lean tree: dense, no categorical feature, and
    # no node past the root reaches the parallel partition or histogram thresholds
    # (the caller's promise, TreeGrower.kernel_arguments). Numba prunes the
    # branches on ``general is not None`` (and on ``sparse``, ``bynode`` and
    # ``resume`` being None) before typing them, so the lean specialisation
    # compiles neither the parallel node kernels nor the categorical split search:
    # a small numerical fit, a new user's first, compiles in about half the time
    # (benchmarks/bench_first_fit.py). The steps are written in this one function,
    # not as kernels of their own: each kernel taking the records cost ~0.5-1 s of
    # a first fit's compilation.
    # sparse: records.SparseBins for sparse data, else None
    # bynode: records.NodeColumns (k = ALL_FEATURES without colsample_bynode)
    # constraints: records.Constraints, or None; the returned NodeState (None without
    # constraints) holds each node's value bounds
    # quant: records.QuantizedGradients (use_quantized_grad: dense data, no shared
    # root), else None; splits are chosen on its integer histograms and the nodes'
    # sums refit from gradient and hessian at the end (_exact_sums; resumed growth
    # leaves that to the caller, which adds every worker's sums)
    # resume: None to grow the whole tree; or records.Resume (a TreeState and its
    # Nodes, from new_tree) to run until a histogram built from this worker's rows
    # must be summed across workers (with quant: also the root's and each left
    # child's row count, phase PARTITIONED): the call returns that node's id in place of
    # n_nodes (-1 when the tree is done), and the next call goes on from there
    # (grower.grow_data_parallel). With the state's counters[EXTERNAL] set, the calls
    # stop before each dense histogram instead, in the slot the node holds, which the
    # caller's provider builds (treeboost.histogram_provider): the same stops; set to
    # EXTERNAL_PARTITIONS, also before each partition (phase SPLIT: the node's split is
    # in nodes.split_*, the caller reorders its rows and resumes with counters[N_LEFT])
    # multi: records.MultiOutput for one tree of several outputs (multi_output): its
    # histograms and split search have every output's gradient (dense, numerical, no
    # constraints, float histograms, no resume); None, the default, compiles it out
    feature_bins = FeatureBins(*feature_bins_t)
    tree = TreeParams(*tree_t)
    split = SplitParams(*split_t)
    scratch = Scratch(*scratch_t)
    root = RootHistograms(*root_t)
    if resume is None:
        state, nodes = new_tree(2 * tree.max_leaf_nodes - 1, scratch.hist_pool.shape[0],
                                feature_bins.n_bins_non_missing.shape[0], constraints)
    else:
        state = resume.state
        nodes = resume.nodes
    counters = state.counters
    hist_pool = scratch.hist_pool
    n_bins_non_missing = feature_bins.n_bins_non_missing
    is_categorical = feature_bins.is_categorical
    missing_bin = feature_bins.missing_bin
    # node ids as int64 values, not the literals 0, 1 or -1: a kernel called with a
    # literal argument compiles a specialisation of its own for it
    root_node = np.int64(0)
    phase = counters[PHASE]
    slot = nodes.slot
    free_slots = state.free_slots
    n_free = counters[N_FREE]  # written back where a resumed growth returns
    depth = nodes.depth
    count = nodes.count
    sum_g = nodes.sum_g
    sum_h = nodes.sum_h
    start = state.start
    stop = state.stop
    candidate = nodes.candidate
    split_gain = nodes.split_gain
    max_depth = tree.max_depth
    min_samples_leaf = split.min_samples_leaf
    min_child_weight = split.min_child_weight

    # ---- the root's rows, sums and histogram -------------------------------------
    if phase == START:
        n_rows = sample_indices.shape[0]
        state.stop[0] = n_rows
        nodes.count[0] = n_rows
        n_free -= 1
        slot[0] = free_slots[n_free]
        hist = hist_pool[slot[0]]
        if resume is not None and counters[EXTERNAL] != 0:
            pass  # the caller's provider builds it (histogram_provider.grow_external)
        elif multi is not None:
            multi_node_histogram(X_binned, sample_indices, hessian, features, feature_bins,
                                 hist, multi, general is not None and n_rows * features.shape[0]
                                 >= tree.serial_histogram_updates, tree.n_threads)
        elif sparse is not None:
            nodes.sum_g[0] = sparse.root_sums[0]
            nodes.sum_h[0] = sparse.root_sums[1]
            _sparse_histograms(sparse, sample_indices, gradient, hessian, features,
                               feature_bins, nodes, state, hist_pool, root_node,
                               np.int64(-1))
        else:
            dense_root_histogram(X_binned, gradient, hessian, sample_indices, features,
                                 all_rows, feature_bins, scratch, root, tree, general,
                                 quant, slot[0])
        if quant is not None and resume is None:
            _unpack(hist, quant.pool[slot[0]], features, n_bins_non_missing, missing_bin,
                    quant.scales, float(n_rows))
        if resume is not None:  # (quantised: the packed sums and the row count are summed
            # across workers, and unpacked on resuming)
            counters[PHASE] = OPEN_ROOT
            counters[N_FREE] = n_free
            return _result(root_node, state, nodes)
        phase = OPEN_ROOT
    if phase == OPEN_ROOT:
        c_root = nodes.count[0]  # resumed, quantised: every worker's rows, summed
        if quant is not None and resume is not None:
            _unpack(hist_pool[slot[0]], quant.pool[slot[0]], features, n_bins_non_missing,
                    missing_bin, quant.scales, float(nodes.count[0]))
        if sparse is None:  # sums and rows from the (summed) histogram
            hist = hist_pool[nodes.slot[0]]
            g0 = 0.0
            h0 = 0.0
            c0 = 0.0
            f0 = features[0]
            for b in range(n_bins_non_missing[f0]):
                g0 += hist[f0, b, 0]
                h0 += hist[f0, b, 1]
                c0 += hist[f0, b, 2]
            # the empty slots between would add +0.0, which changes no sum
            nodes.sum_g[0] = g0 + hist[f0, missing_bin, 0]
            nodes.sum_h[0] = h0 + hist[f0, missing_bin, 1]
            # counts are whole numbers, exact in float64
            nodes.count[0] = np.int64(c0 + hist[f0, missing_bin, 2])
            if quant is not None:  # estimated in the histogram; the rows are known
                nodes.count[0] = stop[0] - start[0] if resume is None else c_root
        if multi is not None:  # every output's sums, summed as output 0's just were
            root_sums_multi(hist_pool[nodes.slot[0]], features[0], n_bins_non_missing,
                            missing_bin, multi.sum_g[0])
            _consider_multi(root_node, nodes, features, feature_bins, tree, split, scratch,
                            bynode, multi)
        else:
            _consider(root_node, nodes, features, feature_bins, tree, split, scratch, general,
                      bynode, constraints)
        if nodes.candidate[0] == 0 or sparse is not None:
            n_free = _release(root_node, slot, free_slots, n_free)

    # ---- best-first growth -----------------------------------------------------------
    node = counters[PENDING]
    pending = phase == CONSIDER  # resumed with node's children's histograms summed
    partitioned = phase == PARTITIONED  # resumed with the left child's rows summed
    split_resumed = phase == SPLIT  # resumed with the node's rows partitioned
    while True:
        if not pending:
            if not partitioned:
                if split_resumed:
                    f = nodes.split_feature[node]
                    n_left = counters[N_LEFT]
                    split_resumed = False
                else:
                    if counters[N_LEAVES] >= tree.max_leaf_nodes:
                        break
                    node = np.int64(-1)
                    best = 0.0
                    for j in range(counters[N_NODES]):
                        if candidate[j] and (node < 0 or split_gain[j] > best):
                            node = j
                            best = split_gain[j]
                    if node < 0:
                        break
                    # split it
                    candidate[node] = 0
                    f = nodes.split_feature[node]
                    if resume is not None and counters[EXTERNAL] == EXTERNAL_PARTITIONS:
                        # the caller partitions the node's rows by nodes.split_* and
                        # resumes with counters[N_LEFT]
                        counters[PHASE] = SPLIT
                        counters[PENDING] = node
                        counters[N_FREE] = n_free
                        return _result(node, state, nodes)
                    column = f
                    if sparse is not None:  # partition on the column, materialised
                        _sparse_column(sparse, f, X_binned[0])
                        column = np.int32(0)
                    rows = sample_indices[start[node]:stop[node]]
                    cat = is_categorical[f] == 1
                    if general is not None and rows.shape[0] >= tree.serial_partition_rows:
                        n_left = partition_rows(rows, X_binned, column, cat,
                                                nodes.split_bin[node], nodes.split_ml[node] == 1,
                                                missing_bin, nodes.split_bitset[node],
                                                scratch.left_buffer, scratch.right_buffer)
                    else:
                        n_left = partition_rows_serial(rows, X_binned, column, cat,
                                                       nodes.split_bin[node],
                                                       nodes.split_ml[node] == 1, missing_bin,
                                                       nodes.split_bitset[node],
                                                       scratch.left_buffer, scratch.right_buffer)
                state.feature[node] = f
                state.bin_threshold[node] = nodes.split_bin[node]
                state.missing_left[node] = nodes.split_ml[node]
                state.node_categorical[node] = is_categorical[f]
                for w in range(BITSET_WORDS):  # array assignment would compile a broadcast
                    state.cat_bitset[node, w] = nodes.split_bitset[node, w]
                state.gain[node] = split_gain[node]
                lc = counters[N_NODES]
                rc = lc + 1
                counters[N_NODES] = lc + 2
                state.left[node] = lc
                state.right[node] = rc
                mid = start[node] + n_left
                start[lc] = start[node]
                stop[lc] = mid
                start[rc] = mid
                stop[rc] = stop[node]
                sum_g[lc] = nodes.split_gl[node]
                sum_h[lc] = nodes.split_hl[node]
                count[lc] = nodes.split_cl[node] if quant is None else n_left
                if quant is not None and resume is not None:
                    # count[lc] (this worker's rows) to be summed across workers: which
                    # child is the smaller, and whether they split, need every worker's
                    counters[PHASE] = PARTITIONED
                    counters[PENDING] = node
                    counters[N_FREE] = n_free
                    return _result(lc, state, nodes)
            partitioned = False
            lc = state.left[node]
            rc = state.right[node]
            f = state.feature[node]
            sum_g[rc] = sum_g[node] - nodes.split_gl[node]
            sum_h[rc] = sum_h[node] - nodes.split_hl[node]
            count[rc] = count[node] - count[lc]
            depth[lc] = depth[node] + 1
            depth[rc] = depth[node] + 1
            if multi is not None:  # every output's sums, as output 0's
                for j in range(multi.sum_g.shape[1]):
                    multi.sum_g[lc, j] = multi.split_gl[node, j]
                    multi.sum_g[rc, j] = multi.sum_g[node, j] - multi.split_gl[node, j]
            if constraints is not None:  # the children's bounds and interaction sets
                _constrain_children(nodes, node, lc, rc, f, state.left, state.right, split,
                                    constraints)
                # "intermediate": leaves whose bounds tightened search their split again
                n_free = _reconsider(nodes, features, feature_bins, tree, split, scratch,
                                     general, bynode, constraints, free_slots, n_free)
            counters[N_LEAVES] += 1
            if counters[N_LEAVES] >= tree.max_leaf_nodes or not (
                    _can_split(lc, depth, count, sum_h, max_depth, min_samples_leaf,
                               min_child_weight)
                    or _can_split(rc, depth, count, sum_h, max_depth, min_samples_leaf,
                                  min_child_weight)):
                n_free = _release(node, slot, free_slots, n_free)
                continue
            # the children's histograms from this worker's rows: dense, the smaller
            # child's (by row count, the same on every worker); sparse, each child's
            # that may be split
            if sparse is not None:
                a = np.int64(-1)
                b = np.int64(-1)
                for child in range(lc, rc + 1):
                    if _can_split(child, depth, count, sum_h, max_depth, min_samples_leaf,
                                  min_child_weight):
                        n_free -= 1
                        slot[child] = free_slots[n_free]
                        if a < 0:
                            a = child
                        else:
                            b = child
                _sparse_histograms(sparse, sample_indices, gradient, hessian, features,
                                   feature_bins, nodes, state, hist_pool, a, b)
                built = a
            else:
                built = lc if count[lc] <= count[rc] else rc
                n_free -= 1
                slot[built] = free_slots[n_free]
                if multi is not None:
                    rows = sample_indices[start[built]:stop[built]]
                    multi_node_histogram(X_binned, rows, hessian, features, feature_bins,
                                         hist_pool[slot[built]], multi,
                                         general is not None and rows.shape[0]
                                         * features.shape[0] >= tree.serial_histogram_updates,
                                         tree.n_threads)
                elif resume is None or counters[EXTERNAL] == 0:  # else the caller's provider
                    _build_node_histogram(
                        X_binned, sample_indices[start[built]:stop[built]], gradient,
                        hessian, features, feature_bins, scratch, slot[built],
                        tree, general, quant)
            if resume is not None:  # to be summed across workers before the split search
                counters[PHASE] = CONSIDER
                counters[PENDING] = node
                counters[N_FREE] = n_free
                return _result(built, state, nodes)
        pending = False
        lc = state.left[node]
        rc = state.right[node]
        if multi is not None:  # the larger child's histogram: the parent's less the smaller's
            small = lc if count[lc] <= count[rc] else rc
            large = rc if small == lc else lc
            slot[large] = slot[node]
            slot[node] = -1
            subtract_multi(hist_pool[slot[large]], hist_pool[slot[small]], features,
                           n_bins_non_missing, missing_bin)
            for child in range(lc, rc + 1):
                _consider_multi(child, nodes, features, feature_bins, tree, split, scratch,
                                bynode, multi)
                if candidate[child] == 0:
                    n_free = _release(child, slot, free_slots, n_free)
            continue
        # both children's split searches side by side on the threads, which the
        # smaller child's histogram has just woken (rather than two serial scans):
        # where every node may use every feature of the tree, without constraints
        pair = (general is not None and sparse is None and constraints is None
                and tree.n_threads > 1 and bynode.k[0] >= ALL_FEATURES
                and min(count[lc], count[rc]) * features.shape[0]
                >= tree.serial_histogram_updates
                and _can_split(lc, depth, count, sum_h, max_depth, min_samples_leaf,
                               min_child_weight)
                and _can_split(rc, depth, count, sum_h, max_depth, min_samples_leaf,
                               min_child_weight))
        subtract = np.int64(-1)
        if sparse is None:
            small = lc if count[lc] <= count[rc] else rc
            large = rc if small == lc else lc
            # the larger child's histogram is the parent's minus the smaller's
            nodes.slot[large] = nodes.slot[node]
            nodes.slot[node] = -1
            if pair:  # in the searches' parallel region, each thread its features
                # (quantised: on the integers, then both children unpacked)
                subtract = large - lc
            elif quant is None:
                _subtract_used_bins(hist_pool[nodes.slot[large]],
                                    hist_pool[nodes.slot[small]], features,
                                    n_bins_non_missing, missing_bin)
            else:  # on the integers, then both children's sums for their split search
                _subtract_packed(quant.pool[slot[large]], quant.pool[slot[small]], features,
                                 n_bins_non_missing, missing_bin)
                for child in range(lc, rc + 1):
                    _unpack(hist_pool[slot[child]], quant.pool[slot[child]], features,
                            n_bins_non_missing, missing_bin, quant.scales,
                            float(count[child]))
        if pair:
            _consider_pair(lc, subtract, nodes, features, feature_bins, tree, split,
                           scratch, general, quant)
        else:
            for child in range(lc, rc + 1):  # left, then right
                _consider(child, nodes, features, feature_bins, tree, split, scratch,
                          general, bynode, constraints)
        for child in range(lc, rc + 1):
            if candidate[child] == 0 or sparse is not None:
                n_free = _release(child, slot, free_slots, n_free)
        n_free = _release(node, slot, free_slots, n_free)
    if resume is not None:
        counters[PHASE] = DONE
        counters[N_FREE] = n_free
        return _result(np.int64(-1), state, nodes)
    if quant is not None:
        # every row of the tree read once more: on every thread where the partitions are
        leaves_summed = (general is not None
                         and sample_indices.shape[0] >= tree.serial_partition_rows)
        if leaves_summed:
            leaf_sums(gradient, hessian, sample_indices, counters[N_NODES], state.left,
                      start, stop, sum_g, sum_h, tree.n_threads)
        _exact_sums(gradient, hessian, sample_indices, counters[N_NODES], state.left,
                    state.right, start, stop, count, sum_g, sum_h, leaves_summed)
    return _result(counters[N_NODES], state, nodes)


@inline
def _result(first, state, nodes):
    """What grow_tree returns: n_nodes (resumed: the node to sum, -1 when done), then the
    node arrays and each node's row slice."""
    return (first, state.feature, state.bin_threshold, state.missing_left,
            state.node_categorical, state.cat_bitset, state.left, state.right, state.gain,
            nodes.count, nodes.sum_g, nodes.sum_h, state.start, state.stop, nodes.constrained)


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
    if bynode.k[0] >= ALL_FEATURES:
        return features[:n_used]
    # k of the tree's features; of fewer where interaction constraints allow fewer
    k = min(bynode.k[0], n_used)
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
def _consider(node, nodes, features, feature_bins, tree, split, scratch, general, bynode,
              constraints):
    """Find ``node``'s best split; mark it a candidate if the gain is worth a split."""
    if nodes.slot[node] < 0 or not _can_split(node, nodes.depth, nodes.count, nodes.sum_h,
                                              tree.max_depth, split.min_samples_leaf,
                                              split.min_child_weight):
        return
    if constraints is not None:  # the features its interaction sets allow
        features = _allowed_features(features, node, nodes.constrained, constraints.sets)
        if features.shape[0] == 0:
            return
    candidates = _node_features(node, features, bynode)
    n_used = candidates.shape[0]
    out = scratch.split_out[0, :n_used]
    bitsets = scratch.split_bitsets[0, :n_used]
    # two calls, not one with a variable that is None or a record: Numba would type
    # it Optional and compile the constrained gain into every tree's split search
    if constraints is None:
        find_best_splits(scratch.hist_pool[nodes.slot[node]], candidates, feature_bins,
                         nodes.sum_g[node], nodes.sum_h[node], float(nodes.count[node]), split,
                         out, bitsets, general, None)
    else:  # the node's value bounds
        find_best_splits(scratch.hist_pool[nodes.slot[node]], candidates, feature_bins,
                         nodes.sum_g[node], nodes.sum_h[node], float(nodes.count[node]), split,
                         out, bitsets, general,
                         NodeBounds(nodes.constrained.lower[node], nodes.constrained.upper[node],
                                    constraints.monotone))
    _take_best(node, nodes, candidates, out, bitsets, tree)


@kernel
def _consider_multi(node, nodes, features, feature_bins, tree, split, scratch, bynode, multi):
    """``_consider`` of one tree for several outputs (``multi_output``): the gain summed over
    the outputs; a candidate keeps every output's left sums in ``multi.split_gl``."""
    if nodes.slot[node] < 0 or not _can_split(node, nodes.depth, nodes.count, nodes.sum_h,
                                              tree.max_depth, split.min_samples_leaf,
                                              split.min_child_weight):
        return
    candidates = _node_features(node, features, bynode)
    n_used = candidates.shape[0]
    out = scratch.split_out[0, :n_used]
    left = multi.split_left[:n_used]
    find_best_splits_multi(scratch.hist_pool[nodes.slot[node]], candidates, feature_bins,
                           multi.sum_g[node], nodes.sum_h[node], float(nodes.count[node]),
                           split, out, scratch.split_bitsets[0, :n_used], left)
    _take_best(node, nodes, candidates, out, scratch.split_bitsets[0, :n_used], tree)
    if nodes.candidate[node]:
        best = 0  # _take_best's choice: the first maximum
        for k in range(1, n_used):
            if out[k, GAIN] > out[best, GAIN]:
                best = k
        for j in range(left.shape[1]):
            multi.split_gl[node, j] = left[best, j]


@kernel
def _consider_pair(lc, subtract, nodes, features, feature_bins, tree, split, scratch,
                   general, quant):
    """``_consider`` of children ``lc`` and ``lc + 1``, both splittable, every feature of
    the tree a candidate, no constraints: their searches side by side on the threads
    (``search_pair``; ``subtract``, ``quant``: its arguments)."""
    slots = np.empty(2, dtype=np.int64)
    sums = np.empty((2, 3))
    for c in range(2):
        slots[c] = nodes.slot[lc + c]
        sums[c, 0] = nodes.sum_g[lc + c]
        sums[c, 1] = nodes.sum_h[lc + c]
        sums[c, 2] = float(nodes.count[lc + c])
    factors = np.zeros(2)
    if quant is not None:  # _unpack's count factors, from the packed sums before the
        # subtraction: a bin's hessian of the parent less that of the child
        totals = np.empty(2, dtype=np.int64)
        for c in range(2):
            totals[c] = _hessian_total(quant.pool[slots[c]], features[0],
                                       feature_bins.n_bins_non_missing,
                                       feature_bins.missing_bin)
        if subtract >= 0:
            totals[subtract] -= totals[1 - subtract]
        for c in range(2):
            factors[c] = sums[c, 2] / totals[c] if totals[c] > 0 else 0.0
    n_used = features.shape[0]
    search_pair(scratch.hist_pool, slots, sums, subtract, features, feature_bins, split,
                scratch.split_out, scratch.split_bitsets, general, tree.n_threads, quant,
                factors)
    for c in range(2):
        _take_best(lc + c, nodes, features, scratch.split_out[c, :n_used],
                   scratch.split_bitsets[c, :n_used], tree)


@parallel_kernel
def search_pair(hist_pool, slots, sums, subtract, features, feature_bins, split, out,
                out_bitset, general, n_threads, quant, factors):
    """``find_best_splits`` of two sibling nodes at once, the features shared among the
    threads, each thread searching its share of both nodes'; first, where ``subtract``
    names one of the two, that node's histogram (its parent's) less the other's, each
    thread over the features it then searches. Quantised (``quant``), the histograms
    subtracted are the packed ones, and each thread then unpacks its features of
    both (``_unpack``, with the count ``factors`` of the nodes)."""
    # hist_pool: float64 (n_slots, n_features, n_bins, 3)  # IN (subtract: IN/OUT)
    # slots: int64 (2,), the nodes' histograms in hist_pool  # IN
    # sums: float64 (2, 3), each node's gradient sum, hessian sum and row count  # IN
    # quant: QuantizedGradients or None; factors: float64 (2,), the nodes' count factors
    # subtract: 0 or 1, the node whose histogram is its parent's still; -1 for none
    # out: float64 (2, >= n_used, N_SPLIT_COLUMNS), out_bitset: uint32 (2, >= n_used,
    # BITSET_WORDS), each node's find_best_splits results  # OUT
    # n_threads: numba.get_num_threads() (read inside, it keeps a kernel out of the cache)
    n_used = features.shape[0]
    n_shares = max(1, min(n_threads, n_used))
    for share in prange(n_shares):
        k0 = share * n_used // n_shares
        k1 = (share + 1) * n_used // n_shares
        mine = features[k0:k1]
        if quant is not None:
            if subtract >= 0:
                _subtract_packed(quant.pool[slots[subtract]], quant.pool[slots[1 - subtract]],
                                 mine, feature_bins.n_bins_non_missing,
                                 feature_bins.missing_bin)
            for node in range(2):
                _unpack_features(hist_pool[slots[node]], quant.pool[slots[node]], mine,
                                 feature_bins.n_bins_non_missing, feature_bins.missing_bin,
                                 quant.scales, factors[node])
        elif subtract >= 0:
            _subtract_used_bins(hist_pool[slots[subtract]], hist_pool[slots[1 - subtract]],
                                mine, feature_bins.n_bins_non_missing,
                                feature_bins.missing_bin)
        for node in range(2):
            find_best_splits(hist_pool[slots[node]], mine, feature_bins, sums[node, 0],
                             sums[node, 1], sums[node, 2], split, out[node, k0:k1],
                             out_bitset[node, k0:k1], general, None)


@inline
def _take_best(node, nodes, candidates, out, bitsets, tree):
    """Mark ``node`` a candidate with its best split of ``out`` if the gain is worth it."""
    n_used = candidates.shape[0]
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


# ---- constraints: a leaf searched again after its bounds tightened ----------------------
@kernel
def _reconsider(nodes, features, feature_bins, tree, split, scratch, general, bynode,
                constraints, free_slots, n_free):
    """Search again the split of each candidate leaf whose bounds tightened; return n_free."""
    state = nodes.constrained
    for q in range(1, state.changed[0] + 1):
        j = state.changed[q]
        if nodes.candidate[j]:  # non-candidates hold no histogram: they stay leaves
            nodes.candidate[j] = 0
            nodes.split_gain[j] = -np.inf
            _consider(j, nodes, features, feature_bins, tree, split, scratch, general, bynode,
                      constraints)
            if nodes.candidate[j] == 0:
                n_free = _release(j, nodes.slot, free_slots, n_free)
    return n_free
