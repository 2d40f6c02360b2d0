"""Grow one tree leaf-wise in a single kernel call (dense binned data).

The same algorithm as ``treeboost.grower.TreeGrower``'s Python loop, node for
node: the histogram, partition and split kernels are the same and are called
in the same order with the same arguments, so the trees are bit-identical.
What this saves is the interpreter: a tree of a few leaves on a few hundred
rows costs ~10 Python calls per node there, which was most of the time of a
study over small datasets.

Node bookkeeping is a struct of arrays indexed by node id (children get the
next two ids, as in the Python grower). The leaf to split next is the one
with the largest gain, ties to the lowest node id: the order of the Python
grower's heap of (-gain, node_id). Histograms live in ``hist_pool`` slots:
a splittable leaf holds one; after a split the larger child takes over the
parent's slot (parent minus smaller child) and the smaller child a free one.

Constraints (``constraints`` not None; None compiles all of it out): each
node carries value bounds and the interaction sets its path still allows
(``records.NodeState``). ``_node_features`` and the node's bounds restrict
its split search (``_consider``); ``_constrain_children`` sets the children's
state after a split (LightGBM's "basic" monotone method: on a feature
constrained to increase, left.upper = right.lower = the mean of the two
children's clipped values; otherwise the parent's bounds; the sets that hold
the split feature), and for the "intermediate" method tightens the bounds of
the leaves across the split, which ``_reconsider`` searches again.
"""

import numpy as np

from ._jit import kernel
from .histogram import build_histograms, build_histograms_root, build_histograms_serial
from .partition import partition_rows, partition_rows_serial
from .records import NodeBounds, Nodes, NodeState
from .splitting import (
    BIN,
    BITSET_WORDS,
    GAIN,
    LEFT_C,
    LEFT_G,
    LEFT_H,
    MISSING_LEFT,
    clipped_value,
    find_best_splits,
)


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
def grow_tree(X_binned, gradient, hessian, sample_indices, features, all_rows, feature_bins,
              tree, split, scratch, root, general, constraints):
    """Grow one tree; return its node arrays (length n_nodes) and each node's row slice."""
    # X_binned: uint8 (n_features, n_samples), feature-major        # IN
    # gradient, hessian: float32 (n_samples,)                        # IN
    # sample_indices: uint32 (n_rows,)                               # IN/OUT, grouped by leaf
    # features: int32 (n_used,)                                      # IN
    # all_rows: whether sample_indices is every row (the root histogram then
    # reads the rows without indirection)
    # feature_bins, tree, split, scratch, root: records (records.py)  # IN, scratch
    # general: True, or None for a lean tree: no categorical feature, and no node
    # past the root reaches the parallel partition or histogram thresholds (the
    # caller's promise, TreeGrower.kernel_arguments). Numba prunes the branches
    # on ``general is not None`` before typing them, so the lean specialisation
    # compiles neither the parallel node kernels nor the categorical split search:
    # a small numerical fit, a new user's first, compiles in about half the time
    # (benchmarks/bench_first_fit.py).
    # constraints: records.Constraints, or None (compiled out, as general). The
    # returned NodeState (None without constraints) holds each node's value bounds.
    n_bins_non_missing = feature_bins.n_bins_non_missing
    is_categorical = feature_bins.is_categorical
    missing_bin = feature_bins.missing_bin
    max_leaf_nodes = tree.max_leaf_nodes
    hist_pool = scratch.hist_pool
    capacity = 2 * max_leaf_nodes - 1
    n_used = features.shape[0]
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
    free_slots = np.empty(max_leaf_nodes, dtype=np.int64)  # a stack: slot 0 on top
    for j in range(max_leaf_nodes):
        free_slots[j] = max_leaf_nodes - 1 - j
    nodes = Nodes(depth, count, sum_g, sum_h, slot, split_gain, split_feature, split_bin,
                  split_ml, split_gl, split_hl, split_cl, split_bitset, candidate,
                  _node_state(capacity, n_bins_non_missing.shape[0], constraints))
    n_free = max_leaf_nodes

    # ---- root ------------------------------------------------------------------
    n_rows = sample_indices.shape[0]
    stop[0] = n_rows
    count[0] = n_rows
    n_free -= 1
    slot[0] = free_slots[n_free]
    hist = hist_pool[slot[0]]
    if root.output >= 0:
        _copy_root(hist, root.multi, root.counts, root.output, features, n_bins_non_missing,
                   missing_bin)
    elif all_rows and n_rows * n_used >= tree.serial_histogram_updates:
        _zero_used_bins(hist, features, n_bins_non_missing, missing_bin)
        build_histograms_root(X_binned, gradient, hessian, features, hist)
    else:
        _build_node_histogram(X_binned, sample_indices, gradient, hessian, features,
                              feature_bins, scratch, hist, tree.serial_histogram_updates,
                              general)
    g0 = 0.0
    h0 = 0.0
    f0 = features[0]
    for b in range(n_bins_non_missing[f0]):
        g0 += hist[f0, b, 0]
        h0 += hist[f0, b, 1]
    # the empty slots between would add +0.0, which changes no sum
    g0 += hist[f0, missing_bin, 0]
    h0 += hist[f0, missing_bin, 1]
    sum_g[0] = g0
    sum_h[0] = h0
    # node ids as int64 values, not the literals 0, 1 or -1: a kernel called with a
    # literal argument compiles a specialisation of its own for it
    root_node = np.int64(0)
    n_nodes = np.int64(1)
    _consider(root_node, nodes, features, feature_bins, tree, split, scratch, general,
              constraints)
    if candidate[0] == 0:
        n_free = _release(root_node, slot, free_slots, n_free)

    # ---- best-first growth -----------------------------------------------------------
    n_leaves = 1
    while n_leaves < max_leaf_nodes:
        node = np.int64(-1)
        best = 0.0
        for j in range(n_nodes):
            if candidate[j] and (node < 0 or split_gain[j] > best):
                node = j
                best = split_gain[j]
        if node < 0:
            break
        candidate[node] = 0
        f = split_feature[node]
        rows = sample_indices[start[node]:stop[node]]
        if general is not None and rows.shape[0] >= tree.serial_partition_rows:
            n_left = partition_rows(rows, X_binned, f, is_categorical[f] == 1,
                                    split_bin[node], split_ml[node] == 1, missing_bin,
                                    split_bitset[node], scratch.left_buffer,
                                    scratch.right_buffer)
        else:
            n_left = partition_rows_serial(rows, X_binned, f, is_categorical[f] == 1,
                                           split_bin[node], split_ml[node] == 1,
                                           missing_bin, split_bitset[node],
                                           scratch.left_buffer, scratch.right_buffer)
        feature[node] = f
        bin_threshold[node] = split_bin[node]
        missing_left[node] = split_ml[node]
        node_categorical[node] = is_categorical[f]
        for w in range(BITSET_WORDS):  # array assignment would compile a broadcast
            cat_bitset[node, w] = split_bitset[node, w]
        gain[node] = split_gain[node]
        lc = n_nodes
        rc = n_nodes + 1
        n_nodes += 2
        left[node] = lc
        right[node] = rc
        mid = start[node] + n_left
        start[lc] = start[node]
        stop[lc] = mid
        start[rc] = mid
        stop[rc] = stop[node]
        sum_g[lc] = split_gl[node]
        sum_h[lc] = split_hl[node]
        count[lc] = split_cl[node]
        sum_g[rc] = sum_g[node] - split_gl[node]
        sum_h[rc] = sum_h[node] - split_hl[node]
        count[rc] = count[node] - split_cl[node]
        depth[lc] = depth[node] + 1
        depth[rc] = depth[node] + 1
        if constraints is not None:  # the children's bounds and interaction sets
            _constrain_children(nodes, node, lc, rc, f, left, right, split, constraints)
            # "intermediate": leaves whose bounds tightened search their split again
            n_free = _reconsider(nodes, features, feature_bins, tree, split, scratch, general,
                                 constraints, free_slots, n_free)
        n_leaves += 1
        if n_leaves < max_leaf_nodes and (
                _can_split(lc, depth, count, sum_h, tree.max_depth, split.min_samples_leaf,
                           split.min_child_weight)
                or _can_split(rc, depth, count, sum_h, tree.max_depth, split.min_samples_leaf,
                              split.min_child_weight)):
            small, large = (lc, rc) if count[lc] <= count[rc] else (rc, lc)
            n_free -= 1
            slot[small] = free_slots[n_free]
            small_hist = hist_pool[slot[small]]
            _build_node_histogram(X_binned, sample_indices[start[small]:stop[small]],
                                  gradient, hessian, features, feature_bins, scratch,
                                  small_hist, tree.serial_histogram_updates, general)
            # the larger child's histogram is the parent's minus the smaller's
            slot[large] = slot[node]
            slot[node] = -1
            _subtract_used_bins(hist_pool[slot[large]], small_hist, features,
                                n_bins_non_missing, missing_bin)
            for child in range(lc, rc + 1):  # left, then right
                _consider(child, nodes, features, feature_bins, tree, split, scratch,
                          general, constraints)
                if candidate[child] == 0:
                    n_free = _release(child, slot, free_slots, n_free)
        n_free = _release(node, slot, free_slots, n_free)
    return (n_nodes, feature, bin_threshold, missing_left, node_categorical, cat_bitset, left,
            right, gain, count, sum_g, sum_h, start, stop, nodes.constrained)


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
def _consider(node, nodes, features, feature_bins, tree, split, scratch, general,
              constraints):
    """Find ``node``'s best split; mark it a candidate if the gain is worth a split."""
    if nodes.slot[node] < 0 or not _can_split(node, nodes.depth, nodes.count, nodes.sum_h,
                                              tree.max_depth, split.min_samples_leaf,
                                              split.min_child_weight):
        return
    if constraints is not None:  # the features its interaction sets allow
        features = _node_features(features, node, nodes.constrained, constraints.sets)
        if features.shape[0] == 0:
            return
    n_used = features.shape[0]
    out = scratch.split_out[:n_used]
    bitsets = scratch.split_bitsets[:n_used]
    # two calls, not one with a variable that is None or a record: Numba would type
    # it Optional and compile the constrained gain into every tree's split search
    if constraints is None:
        find_best_splits(scratch.hist_pool[nodes.slot[node]], features, feature_bins,
                         nodes.sum_g[node], nodes.sum_h[node], float(nodes.count[node]), split,
                         out, bitsets, general, None)
    else:  # the node's value bounds
        find_best_splits(scratch.hist_pool[nodes.slot[node]], features, feature_bins,
                         nodes.sum_g[node], nodes.sum_h[node], float(nodes.count[node]), split,
                         out, bitsets, general,
                         NodeBounds(nodes.constrained.lower[node], nodes.constrained.upper[node],
                                    constraints.monotone))
    best = 0  # the first maximum: the lowest feature wins ties (np.argmax)
    for k in range(1, n_used):
        if out[k, GAIN] > out[best, GAIN]:
            best = k
    value = out[best, GAIN]
    if value > tree.min_split_gain and value > 0.0:
        nodes.candidate[node] = 1
        nodes.split_gain[node] = value
        nodes.split_feature[node] = features[best]
        nodes.split_bin[node] = np.int64(out[best, BIN])
        nodes.split_ml[node] = np.int64(out[best, MISSING_LEFT])
        nodes.split_gl[node] = out[best, LEFT_G]
        nodes.split_hl[node] = out[best, LEFT_H]
        nodes.split_cl[node] = np.int64(out[best, LEFT_C])
        for w in range(BITSET_WORDS):
            nodes.split_bitset[node, w] = bitsets[best, w]


# ---- constraints (records.Constraints; only compiled when a tree has some) ------------
@kernel
def _node_state(capacity, n_features, constraints):
    """The per-node constrained state (root: no bounds, every set open), or None."""
    if constraints is None:
        return None
    else:
        n_sets = constraints.sets.shape[0]
        lower = np.empty(capacity, dtype=np.float64)
        upper = np.empty(capacity, dtype=np.float64)
        sets = np.empty((capacity, n_sets), dtype=np.uint8)
        parent = np.empty(capacity, dtype=np.int64)
        changed = np.empty(capacity + 1, dtype=np.int64)
        changed[0] = 0
        for j in range(capacity):
            lower[j] = -np.inf
            upper[j] = np.inf
            parent[j] = -1
            for s in range(n_sets):
                sets[j, s] = 1
        return NodeState(lower, upper, sets, np.empty(n_features, dtype=np.int32), parent,
                         changed, np.empty(capacity, dtype=np.int64))


@kernel
def _node_features(features, node, state, member):
    """The features ``node`` may split on: those of an interaction set its path allows.

    A set is open to a node while it holds every feature split on above it;
    the node may use the union of its open sets (LightGBM's and XGBoost's rule).
    """
    # member: uint8 (n_sets, n_features), Constraints.sets     # IN
    m = 0
    for k in range(features.shape[0]):
        f = features[k]
        for s in range(member.shape[0]):
            if state.sets[node, s] and member[s, f]:
                state.features[m] = f
                m += 1
                break
    return state.features[:m]


@kernel
def _constrain_children(nodes, node, lc, rc, f, left, right, split, constraints):
    """The children's bounds and open interaction sets after ``node`` splits on ``f``.

    "basic": on a monotone feature the children meet at the mean of their
    clipped values. "intermediate" (after LightGBM's): the left child is bounded
    by the right one's value and the reverse, and every leaf across an ancestor's
    monotone split from the new leaves has its bound moved past their values
    (listed in ``state.changed`` to search its split again). LightGBM also skips
    leaves whose regions cannot touch the new ones; here every leaf across the
    split counts, which constrains more but needs no regions.
    """
    state = nodes.constrained
    lower = state.lower[node]
    upper = state.upper[node]
    state.lower[lc] = lower
    state.upper[lc] = upper
    state.lower[rc] = lower
    state.upper[rc] = upper
    state.parent[lc] = node
    state.parent[rc] = node
    gl = nodes.split_gl[node]
    hl = nodes.split_hl[node]
    wl = clipped_value(gl, hl, split.reg_lambda, split.reg_alpha, lower, upper)
    wr = clipped_value(nodes.sum_g[node] - gl, nodes.sum_h[node] - hl, split.reg_lambda,
                       split.reg_alpha, lower, upper)
    direction = constraints.monotone[f]
    if direction != 0:
        # basic: both sides of the mean; intermediate: each side of the other's value
        low, high = (0.5 * (wl + wr), 0.5 * (wl + wr)) if constraints.method == 0 else (wl, wr)
        if direction > 0:
            state.upper[lc] = high
            state.lower[rc] = low
        else:
            state.lower[lc] = high
            state.upper[rc] = low
    member = constraints.sets
    for s in range(member.shape[0]):
        is_open = state.sets[node, s] & member[s, f]
        state.sets[lc, s] = is_open
        state.sets[rc, s] = is_open
    state.changed[0] = 0
    if constraints.method == 1:
        _tighten_across(state, node, min(wl, wr), max(wl, wr), left, right, nodes.split_feature,
                        constraints.monotone)


@kernel
def _tighten_across(state, node, low, high, left, right, split_feature, monotone):
    """Bound the leaves across each monotone ancestor split by the new values [low, high]."""
    child = node
    a = state.parent[node]
    while a >= 0:
        direction = monotone[split_feature[a]]
        if direction != 0:
            on_left = left[a] == child
            other = right[a] if on_left else left[a]
            # the new leaves are on the low side of a: the other side's leaves stay above
            above = (direction > 0) == on_left
            top = 0
            state.stack[top] = other
            top += 1
            while top > 0:
                top -= 1
                j = state.stack[top]
                if left[j] >= 0:
                    state.stack[top] = left[j]
                    state.stack[top + 1] = right[j]
                    top += 2
                    continue
                if above and high > state.lower[j]:
                    state.lower[j] = high
                elif not above and low < state.upper[j]:
                    state.upper[j] = low
                else:
                    continue
                n = state.changed[0]
                seen = False
                for q in range(1, n + 1):
                    seen = seen or state.changed[q] == j
                if not seen:
                    state.changed[n + 1] = j
                    state.changed[0] = n + 1
        child = a
        a = state.parent[a]


@kernel
def _reconsider(nodes, features, feature_bins, tree, split, scratch, general, constraints,
                free_slots, n_free):
    """Search again the split of each candidate leaf whose bounds tightened; return n_free."""
    state = nodes.constrained
    for q in range(1, state.changed[0] + 1):
        j = state.changed[q]
        if nodes.candidate[j]:  # non-candidates hold no histogram: they stay leaves
            nodes.candidate[j] = 0
            nodes.split_gain[j] = -np.inf
            _consider(j, nodes, features, feature_bins, tree, split, scratch, general,
                      constraints)
            if nodes.candidate[j] == 0:
                n_free = _release(j, nodes.slot, free_slots, n_free)
    return n_free
