"""Build per-feature gradient/hessian/count histograms of a node.

Each thread takes one contiguous share of the features, as equal as the
count allows, and goes through it in groups (four features for nodes, two for
the root): a pass over the rows loads each row index and gradient once for the
whole group and gives the CPU independent update chains (16-25 % faster than
one feature per pass). Shares per thread rather than a task per group: seven
groups of 28 features on two threads left one thread idle for a seventh of
every node (28 features took as long as 32: 8.35 vs 8.34 ms on 300,000 rows).
Every feature's histogram is still summed by one thread in row order, so the
sums are identical whatever the number of threads or the grouping. Small nodes
use the serial kernel, which gives the same sums.

The same kernels build the integer histograms of quantised gradients
(``use_quantized_grad``): ``hist`` is then int64 (n_features, n_bins), and
``gradient`` and ``hessian`` both hold each row's packed integer pair
(``quantize.pack``); a row adds one integer per feature instead of three
floats (``_add`` is chosen by the histogram's type).

Unit hessians (every row's hessian 1.0: squared error, absolute error, Huber,
quantile without sample weights) are passed as ``hessian=None``: a row then
adds its gradient and its count, two floats instead of three (0.70x the time
of a root histogram on 400,000 x 20), and the caller copies the count into
the hessian column (``unit_hessians``): a sum of ones in float64 is the count
exactly, so the histogram, and the model, are the same bits.
"""

import numpy as np
from numba import prange, types
from numba.extending import overload

from ._jit import inline, kernel, parallel_kernel

GROUP = 4  # features per task


def _add(h, b, g, hs):
    """Add a row to bin ``b``: (g, hs, 1) to a float histogram, (g, -, 1) for a unit
    hessian (``hs`` None); the packed g to an integer one."""
    if h.ndim == 1:
        h[b] += g
    elif hs is None:
        h[b, 0] += g
        h[b, 2] += 1.0
    else:
        h[b, 0] += g
        h[b, 1] += hs
        h[b, 2] += 1.0


@overload(_add)
def _add_typed(h, b, g, hs):
    """``_add`` in the kernels: one implementation per histogram type, chosen when typing."""
    if isinstance(h, types.Array) and h.ndim == 1:
        def add_packed(h, b, g, hs):
            h[b] += g
        return add_packed
    if isinstance(hs, types.NoneType):
        def add_unit(h, b, g, hs):
            h[b, 0] += g
            h[b, 2] += 1.0
        return add_unit

    def add_float(h, b, g, hs):
        h[b, 0] += g
        h[b, 1] += hs
        h[b, 2] += 1.0
    return add_float


def _at(a, i):
    """``a[i]``, or None where ``a`` is None (unit hessians)."""
    return None if a is None else a[i]


@overload(_at)
def _at_typed(a, i):
    if isinstance(a, types.NoneType):
        return lambda a, i: None
    return lambda a, i: a[i]


def _gather(out, i, a, j):
    """``out[i] = a[j]``; nothing where ``a`` is None (unit hessians)."""
    if a is not None:
        out[i] = a[j]


@overload(_gather)
def _gather_typed(out, i, a, j):
    if isinstance(a, types.NoneType):
        def skip(out, i, a, j):
            pass
        return skip

    def gather(out, i, a, j):
        out[i] = a[j]
    return gather


def _unless_none(buffer, a):
    """``buffer``, or None where ``a`` is None: the ordered hessians of unit hessians."""
    return None if a is None else buffer


@overload(_unless_none)
def _unless_none_typed(buffer, a):
    if isinstance(a, types.NoneType):
        return lambda buffer, a: None
    return lambda buffer, a: buffer


@inline
def _group_histograms(X_binned, features, k0, k1, sample_indices, gradient, hessian, hist):
    """Histograms of features[k0:k1] (at most GROUP) over the rows ``sample_indices``.

    ``gradient[i]`` and ``hessian[i]`` belong to row ``sample_indices[i]``.
    """
    n = sample_indices.shape[0]
    if k1 - k0 == GROUP:
        c0 = X_binned[features[k0]]
        c1 = X_binned[features[k0 + 1]]
        c2 = X_binned[features[k0 + 2]]
        c3 = X_binned[features[k0 + 3]]
        h0 = hist[features[k0]]
        h1 = hist[features[k0 + 1]]
        h2 = hist[features[k0 + 2]]
        h3 = hist[features[k0 + 3]]
        for i in range(n):
            j = sample_indices[i]
            g = gradient[i]
            hs = _at(hessian, i)
            _add(h0, c0[j], g, hs)
            _add(h1, c1[j], g, hs)
            _add(h2, c2[j], g, hs)
            _add(h3, c3[j], g, hs)
    elif k1 - k0 >= 2:
        c0 = X_binned[features[k0]]
        c1 = X_binned[features[k0 + 1]]
        h0 = hist[features[k0]]
        h1 = hist[features[k0 + 1]]
        for i in range(n):
            j = sample_indices[i]
            g = gradient[i]
            hs = _at(hessian, i)
            _add(h0, c0[j], g, hs)
            _add(h1, c1[j], g, hs)
        if k1 - k0 == 3:
            c = X_binned[features[k0 + 2]]
            h = hist[features[k0 + 2]]
            for i in range(n):
                _add(h, c[sample_indices[i]], gradient[i], _at(hessian, i))
    elif k1 > k0:
        c = X_binned[features[k0]]
        h = hist[features[k0]]
        for i in range(n):
            _add(h, c[sample_indices[i]], gradient[i], _at(hessian, i))


@inline
def _range_histograms(X_binned, features, k0, k1, sample_indices, gradient, hessian, hist):
    """Histograms of features[k0:k1] over the rows ``sample_indices``, GROUP at a time."""
    for g0 in range(k0, k1, GROUP):
        _group_histograms(X_binned, features, g0, min(g0 + GROUP, k1), sample_indices,
                          gradient, hessian, hist)


@inline
def _range_histograms_all_rows(X_binned, features, k0, k1, gradient, hessian, hist):
    """Histograms of features[k0:k1] over every row, without indirection, in pairs.

    The root reads rows sequentially and is bandwidth-bound; pairs did better
    than groups of four there.
    """
    n = X_binned.shape[1]
    k = k0
    while k1 - k >= 2:
        c0 = X_binned[features[k]]
        c1 = X_binned[features[k + 1]]
        h0 = hist[features[k]]
        h1 = hist[features[k + 1]]
        for i in range(n):
            g = gradient[i]
            hs = _at(hessian, i)
            _add(h0, c0[i], g, hs)
            _add(h1, c1[i], g, hs)
        k += 2
    if k < k1:
        c = X_binned[features[k]]
        h = hist[features[k]]
        for i in range(n):
            _add(h, c[i], gradient[i], _at(hessian, i))


@inline
def _n_shares(n_used, n_threads):
    """Feature shares of a parallel pass: one per thread (prange hands each its own).

    The caller passes ``numba.get_num_threads()``: read inside a kernel it keeps
    the kernel out of Numba's cache.
    """
    return max(1, min(n_threads, n_used))


@parallel_kernel
def build_histograms_root(X_binned, gradient, hessian, features, hist, n_threads):
    """Histograms of all rows (no index indirection), for the listed features."""
    # X_binned: uint8 (n_features, n_samples), feature-major # IN
    # gradient, hessian: float32 (n_samples,)                 # IN
    # (hessian None: unit hessians, the hessian column left to the caller)
    # features: int32 (n_used,)                               # IN
    # hist: float64 (n_features, n_bins, 3), zeroed           # OUT
    # (quantised: gradient, hessian int64, packed; hist int64 (n_features, n_bins))
    # n_threads: numba.get_num_threads(), one share of the features each
    n_used = features.shape[0]
    n_shares = _n_shares(n_used, n_threads)
    for t in prange(n_shares):
        _range_histograms_all_rows(X_binned, features, t * n_used // n_shares,
                                   (t + 1) * n_used // n_shares, gradient, hessian, hist)


@parallel_kernel
def build_histograms(X_binned, sample_indices, gradient, hessian, features,
                     ordered_gradient, ordered_hessian, hist, n_threads):
    """Histograms of the rows in ``sample_indices`` for the listed features."""
    # X_binned: uint8 (n_features, n_samples), feature-major # IN
    # sample_indices: uint32 (n_node,)                        # IN
    # gradient, hessian: float32 (n_samples,)                 # IN
    # (hessian None: unit hessians, the hessian column left to the caller)
    # features: int32 (n_used,)                               # IN
    # ordered_gradient, ordered_hessian: float32 (>= n_node,) # scratch
    # hist: float64 (n_features, n_bins, 3), zeroed           # OUT
    # (quantised: gradient, hessian, ordered_* int64, packed; hist int64 (n_features, n_bins))
    # n_threads: numba.get_num_threads(), one share of the features each
    n_node = sample_indices.shape[0]
    # gather once so that the per-feature loops read gradients contiguously
    for i in prange(n_node):
        j = sample_indices[i]
        ordered_gradient[i] = gradient[j]
        _gather(ordered_hessian, i, hessian, j)
    ordered_h = _unless_none(ordered_hessian, hessian)
    n_used = features.shape[0]
    n_shares = _n_shares(n_used, n_threads)
    for t in prange(n_shares):
        _range_histograms(X_binned, features, t * n_used // n_shares,
                          (t + 1) * n_used // n_shares, sample_indices, ordered_gradient,
                          ordered_h, hist)


@kernel
def build_histograms_serial(X_binned, sample_indices, gradient, hessian, features,
                            ordered_gradient, ordered_hessian, hist):
    """Serial twin of ``build_histograms`` for small nodes."""
    n_node = sample_indices.shape[0]
    for i in range(n_node):
        j = sample_indices[i]
        ordered_gradient[i] = gradient[j]
        _gather(ordered_hessian, i, hessian, j)
    _range_histograms(X_binned, features, 0, features.shape[0], sample_indices,
                      ordered_gradient, _unless_none(ordered_hessian, hessian), hist)


# Below this many outputs the shared root adds each output in a pass of its own
# (_multi_pair); from it on, each row's 2 n_outputs values gathered once and added
# as one vector. One thread, 80,000 x 20: 5 outputs 11.3 ms a pass per output
# against 16.0 ms as vectors (3 outputs 1.4 against 2.8, 10 outputs 4.3 against
# 3.6); letter's shape, 26 outputs on 16,000 x 16: 11.9 against 6.7 ms.
PER_OUTPUT_BELOW = 8


@inline
def _multi_pair(col0, col1, m0, m1, n0, n1, sample_indices, gradient, hessian, two,
                count_rows):
    """Root histograms of every output for two features (``two`` False: the first only).

    One pass for the counts (unless ``count_rows`` is False), then one per output
    adding its (g, h): an output's values are contiguous, and each pass adds two
    floats a row and feature, as a single tree's root does.
    """
    n = sample_indices.shape[0]
    if count_rows:
        for i in range(n):
            j = sample_indices[i]
            n0[col0[j]] += 1.0
            if two:
                n1[col1[j]] += 1.0
    for k in range(gradient.shape[0]):
        gk = gradient[k]
        hk = hessian[k]
        wg = 2 * k
        wh = 2 * k + 1
        for i in range(n):
            j = sample_indices[i]
            g = gk[j]
            h = hk[j]
            b0 = col0[j]
            m0[b0, wg] += g
            m0[b0, wh] += h
            if two:
                b1 = col1[j]
                m1[b1, wg] += g
                m1[b1, wh] += h


@parallel_kernel
def build_root_histograms_multi(X_binned, sample_indices, gradient, hessian, features,
                                n_bins_non_missing, missing_bin, ordered, multi, counts,
                                count_rows, n_threads):
    """Root histograms of every output of a stage, in one parallel region.

    All outputs' trees of a stage (softmax: one per class) start from the same
    rows. Each thread takes one contiguous share of the features. With fewer
    than ``PER_OUTPUT_BELOW`` outputs it reads two features' bins in a pass for
    the counts and one pass per output adding its (g, h); with more, it gathers
    the rows' 2 n_outputs values into its own buffer, a block at a time, and
    adds each row's as one contiguous vector (the gather, once per thread, pays
    off only when a row has many values). Either way every (output, feature,
    bin) sum adds its rows in row order: it equals the single-output kernels'
    sum, whatever the number of threads.
    """
    # gradient, hessian: float32 (n_outputs, n_samples)          # IN
    # ordered: float32 (>= shares, block, 2 n_outputs), per thread  # scratch
    # multi: float64 (n_features, n_bins, 2 n_outputs), g0 h0 g1 h1 ..., used bins  # OUT
    # counts: float64 (n_features, n_bins), used bins            # OUT
    # (count_rows False: counts already hold the rows' counts, left as they are)
    # n_threads: numba.get_num_threads(), at most ordered.shape[0]
    n_outputs = gradient.shape[0]
    width = 2 * n_outputs
    n_used = features.shape[0]
    n_shares = _n_shares(n_used, n_threads)
    n = sample_indices.shape[0]
    block = ordered.shape[1]
    for t in prange(n_shares):
        k0 = t * n_used // n_shares
        k1 = (t + 1) * n_used // n_shares
        buffer = ordered[t]
        for kf in range(k0, k1):
            f = features[kf]
            nb = n_bins_non_missing[f]
            multi[f, :nb] = 0.0
            multi[f, missing_bin] = 0.0
            if count_rows:
                counts[f, :nb] = 0.0
                counts[f, missing_bin] = 0.0
        if n_outputs < PER_OUTPUT_BELOW:
            for kf in range(k0, k1, 2):
                f0 = features[kf]
                two = kf + 1 < k1
                f1 = features[kf + 1] if two else f0
                _multi_pair(X_binned[f0], X_binned[f1], multi[f0], multi[f1], counts[f0],
                            counts[f1], sample_indices, gradient, hessian, two,
                            count_rows)
        else:
            for start in range(0, n, block):
                stop = min(start + block, n)
                for i in range(start, stop):
                    j = sample_indices[i]
                    row = buffer[i - start]
                    for k in range(n_outputs):
                        row[2 * k] = gradient[k, j]
                        row[2 * k + 1] = hessian[k, j]
                for kf in range(k0, k1):
                    f = features[kf]
                    col = X_binned[f]
                    hist = multi[f]
                    count = counts[f]
                    for i in range(start, stop):
                        b = col[sample_indices[i]]
                        dst = hist[b]
                        row = buffer[i - start]
                        for w in range(width):
                            dst[w] += row[w]
                        if count_rows:
                            count[b] += 1.0


@kernel
def unit_hessians(hist, features, n_bins_non_missing, missing_bin):
    """Hessian column := count column over the used bins, after a unit-hessian build.

    Every row's hessian is 1.0, so the hessian sum of a bin is its row count:
    in float64 the very value the three-float build adds up.
    """
    for k in range(features.shape[0]):
        f = features[k]
        h = hist[f]
        for b in range(n_bins_non_missing[f]):
            h[b, 1] = h[b, 2]
        h[missing_bin, 1] = h[missing_bin, 2]


@kernel
def all_ones(a):
    """Whether every value of ``a`` is 1.0 (stops within a block of the first that is not)."""
    n = a.shape[0]
    # blocks without an exit inside: the loop returning at the first other value took
    # 0.31 ms for 400,000 ones (each tree of a squared-error fit), the blocks 0.21 ms
    for start in range(0, n, 256):
        other = 0
        for i in range(start, min(start + 256, n)):
            other += a[i] != 1.0
        if other:
            return False
    return True


@parallel_kernel
def all_ones_parallel(a, n_threads):
    """``all_ones`` on every thread, each over its share of ``a``."""
    # n_threads: numba.get_num_threads() (read inside, it keeps a kernel out of the cache)
    n = a.shape[0]
    n_shares = max(1, n_threads)
    ones = np.zeros(n_shares, dtype=np.uint8)
    for t in prange(n_shares):
        ones[t] = all_ones(a[t * n // n_shares:(t + 1) * n // n_shares])
    return ones.min() == 1
