"""Scan histograms for the best split of a node, feature by feature.

Gain (XGBoost eq. 7 without the 1/2, as LightGBM reports it):
    T(G_L)^2/(H_L+lambda) + T(G_R)^2/(H_R+lambda) - T(G)^2/(H+lambda)
with T the L1 soft-threshold T(G) = sign(G) max(|G| - alpha, 0). With unit
hessians and no regularisation this ranks splits exactly as least squares.

Numerical features: scan thresholds with the missing bin on the right, then
on the left. Categorical features (LightGBM's approach, Fisher 1958 for the
ordering): with few categories try each one against the rest; otherwise
order the node's categories by G / (H + cat_smooth) and scan prefixes of the
order from both ends, children regularised by lambda + cat_l2 (the parent by
lambda, so cat_l2 acts as a penalty on many-category splits); for a feature
of more than max_cat_ordered categories, a category of fewer than cat_smooth
rows in the node stays right, as in LightGBM. The missing bin (which also
holds unseen categories) is one more category in the scan.

Monotone constraints (LightGBM's "basic" method; ``bounds`` not None): a
node's value is confined to [lower, upper]; each child's value is its Newton
value clipped to that interval, and a split is scored with those values,
    gain = s(G_L, H_L, w_L) + s(G_R, H_R, w_R) - s(G, H, w),
    s(G, H, w) = -(2 T(G) w + (H + lambda) w^2)
(the loss reduction at value w, times 2; at the unclipped Newton value it is
T(G)^2/(H + lambda), the term above). A split on a feature constrained to
increase (decrease) whose w_L > w_R (w_L < w_R) is invalid: gain -inf.
"""

import numpy as np

from ._jit import inline, kernel

# columns of the per-feature result array
GAIN, BIN, MISSING_LEFT, LEFT_G, LEFT_H, LEFT_C = 0, 1, 2, 3, 4, 5
N_SPLIT_COLUMNS = 6
BITSET_WORDS = 8  # 256 bits: one per bin, the missing bin included


@kernel
def soft_threshold(g, alpha):
    """L1 soft-thresholding of a gradient sum."""
    if g > alpha:
        return g - alpha
    if g < -alpha:
        return g + alpha
    # a zero with g's sign, as NumPy's sign(g) * max(|g| - alpha, 0): the leaf value
    # -T/(H + lambda) then has the same sign of zero on every path
    return 0.0 * g


@kernel
def leaf_score(g, h, reg_lambda, reg_alpha):
    """T(G)^2 / (H + lambda): the loss reduction of a Newton leaf, times 2."""
    t = soft_threshold(g, reg_alpha)
    den = h + reg_lambda
    if den <= 0.0:  # empty node or zero hessians: no reduction to claim
        return 0.0
    return t * t / den


@kernel
def clipped_value(g, h, reg_lambda, reg_alpha, lower, upper):
    """The Newton value -T(G)/(H + lambda) clipped to [lower, upper] (0 on no hessian)."""
    den = h + reg_lambda
    w = -soft_threshold(g, reg_alpha) / den if den > 0.0 else 0.0
    return min(max(w, lower), upper)


@kernel
def score_given_value(g, h, reg_lambda, reg_alpha, w):
    """-(2 T(G) w + (H + lambda) w^2): a leaf's loss reduction at value w, times 2."""
    return -(2.0 * soft_threshold(g, reg_alpha) * w + (h + reg_lambda) * w * w)


@kernel
def constrained_split_gain(gl, hl, gr, hr, reg_lambda, reg_alpha, bounds, direction, parent):
    """Gain of a split whose children take their clipped values; -inf if against ``direction``."""
    wl = clipped_value(gl, hl, reg_lambda, reg_alpha, bounds.lower, bounds.upper)
    wr = clipped_value(gr, hr, reg_lambda, reg_alpha, bounds.lower, bounds.upper)
    if (direction > 0 and wl > wr) or (direction < 0 and wl < wr):
        return -np.inf
    return (score_given_value(gl, hl, reg_lambda, reg_alpha, wl)
            + score_given_value(gr, hr, reg_lambda, reg_alpha, wr) - parent)


@kernel
def _scan_thresholds(h, first, stop, gl, hl, cl, sum_g, sum_h, count, reg_lambda,
                     reg_alpha, min_samples_leaf, min_child_weight, parent, bounds,
                     direction, per_hessian):
    """Best threshold b in [first, stop): left = bins <= b plus the (gl, hl, cl) start.

    ``per_hessian`` > 0: ``min_samples_leaf`` bounds the children's hessian sums times
    it (``_count_factor``), else their rows.
    """
    best = -np.inf
    best_bin = -1
    best_gl = 0.0
    best_hl = 0.0
    best_cl = 0.0
    for b in range(first, stop):
        if h[b, 2] == 0.0:
            # an empty bin splits the rows exactly as the bin before it,
            # with the same gain, which only a strictly greater one beats
            continue
        gl += h[b, 0]
        hl += h[b, 1]
        cl += h[b, 2]
        if per_hessian > 0.0:  # hessian sums only grow left (shrink right): break holds
            n_left = np.floor(hl * per_hessian + 0.5)
            n_right = np.floor((sum_h - hl) * per_hessian + 0.5)
        else:
            n_left = cl
            n_right = count - cl
        if n_right < min_samples_leaf:
            break
        if n_left < min_samples_leaf:
            continue
        hr = sum_h - hl
        if hl < min_child_weight or hr < min_child_weight:
            continue
        if bounds is None:  # pruned at compile time: no constraints
            gain = (leaf_score(gl, hl, reg_lambda, reg_alpha)
                    + leaf_score(sum_g - gl, hr, reg_lambda, reg_alpha) - parent)
        else:
            gain = constrained_split_gain(gl, hl, sum_g - gl, hr, reg_lambda, reg_alpha,
                                          bounds, direction, parent)
        if gain > best:
            best = gain
            best_bin = b
            best_gl = gl
            best_hl = hl
            best_cl = cl
    return best, best_bin, best_gl, best_hl, best_cl


@kernel
def _count_factor(count, sum_h, hessian_counts):
    """Rows per unit of hessian in a node where children are counted by their hessian
    sums (``hessian_counts`` 1.0, LightGBM's estimate of a child's rows), else 0.0."""
    if hessian_counts > 0.0 and sum_h > 0.0:
        return count / sum_h
    return 0.0


@kernel
def _best_numerical(h, nb, missing_bin, sum_g, sum_h, count, reg_lambda, reg_alpha,
                    min_samples_leaf, min_child_weight, parent, out, bounds, direction,
                    per_hessian):
    miss_c = h[missing_bin, 2]
    # missing values right; with some present, "every value left" is a split too
    last = nb - 1 if miss_c > 0 else nb - 2
    best, b, gl, hl, cl = _scan_thresholds(
        h, 0, last + 1, 0.0, 0.0, 0.0, sum_g, sum_h, count, reg_lambda, reg_alpha,
        min_samples_leaf, min_child_weight, parent, bounds, direction, per_hessian)
    # without missing values in the node, unseen NaN follow the larger child
    ml = 1 if (miss_c == 0 and cl >= count - cl) else 0
    if miss_c > 0:  # missing values left
        best2, b2, gl2, hl2, cl2 = _scan_thresholds(
            h, 0, nb - 1, h[missing_bin, 0], h[missing_bin, 1], miss_c, sum_g, sum_h,
            count, reg_lambda, reg_alpha, min_samples_leaf, min_child_weight, parent, bounds,
            direction, per_hessian)
        if best2 > best:
            best, b, gl, hl, cl, ml = best2, b2, gl2, hl2, cl2, 1
    out[GAIN] = best
    out[BIN] = b
    out[MISSING_LEFT] = ml
    out[LEFT_G] = gl
    out[LEFT_H] = hl
    out[LEFT_C] = cl


@kernel
def _merge_sort_order(ratio, m, order):
    """order[:m] = the stable argsort of ratio[:m], NaN last (np.argsort kind="mergesort").

    A stable order is unique, so this equals NumPy's; Numba's own argsort
    compiled for seconds on the first fit.
    """
    src = order
    dst = np.empty(m, dtype=np.int64)
    for i in range(m):
        src[i] = i
    in_order = True  # whether ``src`` is ``order``, to copy back at the end
    width = 1
    while width < m:  # bottom-up: merge runs of width into runs of 2 width
        for lo in range(0, m, 2 * width):
            mid = min(lo + width, m)
            hi = min(lo + 2 * width, m)
            i = lo
            j = mid
            for k in range(lo, hi):
                # the right run's element first only if strictly less: stable
                a = ratio[src[i]] if i < mid else 0.0
                b = ratio[src[j]] if j < hi else 0.0
                if j < hi and (i == mid or b < a or (np.isnan(a) and not np.isnan(b))):
                    dst[k] = src[j]
                    j += 1
                else:
                    dst[k] = src[i]
                    i += 1
        src, dst = dst, src
        in_order = not in_order
        width *= 2
    if not in_order:
        for i in range(m):
            dst[i] = src[i]


@inline
def _stable_order(ratio, m, order):
    """order[:m] = the stable argsort of ratio[:m] (np.argsort kind="mergesort")."""
    if m > 64:  # insertion sort is quadratic; past a few dozen the allocation is cheaper
        _merge_sort_order(ratio, m, order)
        return
    for i in range(m):
        key = ratio[i]
        j = i - 1
        while j >= 0 and ratio[order[j]] > key:  # strict: equal keys keep their order
            order[j + 1] = order[j]
            j -= 1
        order[j + 1] = i


@kernel
def _subset_gain(gl, hl, cl, sum_g, sum_h, count, lam, reg_alpha, min_samples_leaf,
                 min_child_weight, parent, bounds, per_hessian):
    """Gain of sending a set of categories (sums gl, hl, cl) left; -inf if a child is too
    small. Children scored with ``lam``; a categorical feature is never monotone, so
    ``bounds`` (None: compiled out) only clips."""
    hr = sum_h - hl
    if per_hessian > 0.0:
        n_left = np.floor(hl * per_hessian + 0.5)
        n_right = np.floor(hr * per_hessian + 0.5)
    else:
        n_left = cl
        n_right = count - cl
    if (n_left < min_samples_leaf or n_right < min_samples_leaf or hl < min_child_weight
            or hr < min_child_weight):
        return -np.inf
    if bounds is None:  # pruned at compile time: no constraints
        return (leaf_score(gl, hl, lam, reg_alpha)
                + leaf_score(sum_g - gl, hr, lam, reg_alpha) - parent)
    return constrained_split_gain(gl, hl, sum_g - gl, hr, lam, reg_alpha, bounds,
                                  np.int8(0), parent)


@kernel
def _rare(h, c, per_hessian, rare_below):
    """Whether category (bin) ``c`` has fewer than ``rare_below`` rows in the node, rows
    estimated from its hessian where ``min_samples_leaf``'s are (``per_hessian`` > 0),
    unrounded (``_subset_gain`` rounds its estimate; the rule was measured unrounded)."""
    rows = h[c, 1] * per_hessian if per_hessian > 0.0 else h[c, 2]
    return rows < rare_below


@kernel
def _best_categorical(h, nb, missing_bin, sum_g, sum_h, count, reg_lambda, reg_alpha,
                      min_samples_leaf, min_child_weight, parent, cat_l2, cat_smooth,
                      max_cat_threshold, max_cat_to_onehot, out, bitset, cats, ratio, order,
                      bounds, per_hessian, max_cat_ordered):
    # cats, ratio, order: scratch of >= N_BINS entries, so that a node's scan of many
    # small categorical features allocates nothing (allocations were most of its cost)
    m = 0
    for b in range(nb):
        if h[b, 2] > 0:
            cats[m] = b
            m += 1
    if h[missing_bin, 2] > 0:
        cats[m] = missing_bin
        m += 1
    # LightGBM's convention: cat_l2 regularises the sorted scan only, whose
    # many-category sets overfit; one category against the rest does not
    lam = reg_lambda if m <= max_cat_to_onehot else reg_lambda + cat_l2
    best = -np.inf
    best_dir = 0
    best_k = -1  # the chosen set: the best prefix (or, one-hot, position) of the order
    best_gl = 0.0
    best_hl = 0.0
    best_cl = 0.0
    # A feature of more categories than max_cat_ordered (no ordered scan below) is
    # scanned as LightGBM scans it: a category of fewer than cat_smooth (estimated) rows
    # in the node is never put on the left. Its G / (H + cat_smooth) is mostly the
    # smoothing, and with many such levels (a city's 87 neighbourhoods) their places in
    # the order are noise. Measured to cost below that bound, where a deeper node's
    # categories are few and small (hpc_data, credit-g): see the benchmarks page.
    rare_below = cat_smooth if nb > max_cat_ordered else 0.0
    if m <= max_cat_to_onehot:
        for t in range(m):
            order[t] = t
        n_dir = 1
        max_k = 1 if m > 1 else 0
    else:
        for t in range(m):
            ratio[t] = h[cats[t], 0] / (h[cats[t], 1] + cat_smooth)
        _stable_order(ratio, m, order)
        n_dir = 2
        max_k = min(max_cat_threshold, m - 1)
    for direction in range(n_dir):
        gl = 0.0
        hl = 0.0
        cl = 0.0
        used = 0  # categories on the left (rare ones skipped)
        for k in range(m):
            if n_dir == 2 and used == max_k:
                break
            t = order[k] if direction == 0 else order[m - 1 - k]
            c = cats[t]
            if n_dir == 1:  # one category against the rest
                gl = h[c, 0]
                hl = h[c, 1]
                cl = h[c, 2]
            else:
                if _rare(h, c, per_hessian, rare_below):
                    continue
                used += 1
                gl += h[c, 0]
                hl += h[c, 1]
                cl += h[c, 2]
            if max_k == 0:
                continue
            gain = _subset_gain(gl, hl, cl, sum_g, sum_h, count, lam, reg_alpha,
                                min_samples_leaf, min_child_weight, parent, bounds, per_hessian)
            if gain > best:
                best = gain
                best_gl = gl
                best_hl = hl
                best_cl = cl
                best_dir = direction
                best_k = k
    # Then, for a feature of at most max_cat_ordered categories, the prefixes of the
    # node's categories in code (bin) order, the missing bin last: the splits integer
    # codes allow, which carry an ordinal column's order (levels, grades, ranges) that
    # neither scan above keeps. Only m - 1 more candidates, in an order not taken from
    # the gradients, so plain lambda as a numerical split's; a tie keeps the scan above.
    # Not for many categories: an identifier's sorted codes can line up with the
    # target in training, and every unseen one goes right.
    best_ordered = False
    if m >= 3 and nb <= max_cat_ordered:
        gl = 0.0
        hl = 0.0
        cl = 0.0
        for k in range(m - 1):
            c = cats[k]
            gl += h[c, 0]
            hl += h[c, 1]
            cl += h[c, 2]
            gain = _subset_gain(gl, hl, cl, sum_g, sum_h, count, reg_lambda, reg_alpha,
                                min_samples_leaf, min_child_weight, parent, bounds, per_hessian)
            if gain > best:
                best = gain
                best_gl = gl
                best_hl = hl
                best_cl = cl
                best_k = k
                best_ordered = True
    bitset[:] = 0
    if best_ordered:
        for q in range(best_k + 1):
            c = cats[q]
            bitset[c >> 5] |= np.uint32(1 << (c & 31))
    elif best_k >= 0:
        if n_dir == 1:
            first, last = best_k, best_k + 1
        elif best_dir == 0:
            first, last = 0, best_k + 1
        else:
            first, last = m - 1 - best_k, m
        for q in range(first, last):
            c = cats[order[q]]
            if n_dir == 2 and _rare(h, c, per_hessian, rare_below):
                continue
            bitset[c >> 5] |= np.uint32(1 << (c & 31))
    out[GAIN] = best
    out[BIN] = -1
    out[MISSING_LEFT] = (bitset[missing_bin >> 5] >> (missing_bin & 31)) & 1
    out[LEFT_G] = best_gl
    out[LEFT_H] = best_hl
    out[LEFT_C] = best_cl


@kernel
def find_best_splits(hist, features, feature_bins, sum_g, sum_h, count, split, out,
                     out_bitset, general, bounds):
    """Best split of each listed feature: threshold and missing side, or category set."""
    # hist: float64 (n_features, n_bins, 3)          # IN
    # features: int32 (n_used,)                       # IN, candidate features
    # feature_bins: records.FeatureBins               # IN
    # split: records.SplitParams                      # IN
    # out: float64 (n_used, N_SPLIT_COLUMNS)          # OUT, gain -inf if none
    # out_bitset: uint32 (n_used, BITSET_WORDS)       # OUT, left categories
    # general: True, or None when no feature is categorical, which compiles the
    # categorical scan out of this specialisation (grower.grow_tree)
    # bounds: records.NodeBounds of a node under monotone constraints, or None (compiled
    # out): children's values clipped to the node's bounds, splits against a feature's
    # direction invalid (module docstring)
    # serial on purpose: a node's scan is a few thousand bins, less work than waking
    # a thread pool for it; the grower searches large siblings side by side instead,
    # each thread over a share of both nodes' features (grower.search_pair)
    n_bins_non_missing = feature_bins.n_bins_non_missing
    missing_bin = feature_bins.missing_bin
    reg_lambda = split.reg_lambda
    reg_alpha = split.reg_alpha
    if bounds is None:
        parent = leaf_score(sum_g, sum_h, reg_lambda, reg_alpha)
    else:  # the node's own value is clipped too
        parent = score_given_value(sum_g, sum_h, reg_lambda, reg_alpha, clipped_value(
            sum_g, sum_h, reg_lambda, reg_alpha, bounds.lower, bounds.upper))
    per_hessian = _count_factor(count, sum_h, split.hessian_counts)
    n_slots = hist.shape[1] + 1
    cats = np.empty(n_slots, dtype=np.int64)
    ratio = np.empty(n_slots)
    order = np.empty(n_slots, dtype=np.int64)
    for k in range(features.shape[0]):
        f = features[k]
        if general is not None and feature_bins.is_categorical[f]:
            _best_categorical(hist[f], n_bins_non_missing[f], missing_bin, sum_g, sum_h,
                              count, reg_lambda, reg_alpha, split.min_samples_leaf,
                              split.min_child_weight, parent, split.cat_l2, split.cat_smooth,
                              split.max_cat_threshold, split.max_cat_to_onehot, out[k],
                              out_bitset[k], cats, ratio, order, bounds, per_hessian,
                              split.max_cat_ordered)
        else:
            out_bitset[k, :] = 0
            direction = np.int8(0)  # not the literal 0: a specialisation of its own
            if bounds is not None:
                direction = bounds.monotone[f]
            _best_numerical(hist[f], n_bins_non_missing[f], missing_bin, sum_g, sum_h, count,
                            reg_lambda, reg_alpha, split.min_samples_leaf,
                            split.min_child_weight, parent, out[k], bounds, direction,
                            per_hessian)
