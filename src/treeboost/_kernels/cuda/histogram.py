"""A node's histogram on the GPU: the twin of ``histogram.build_histograms(_root)``.

Same arrays as the CPU builders, on the device: ``X_binned`` uint8 (n_features,
n_samples), feature-major; a node's rows as uint32 indices into the data (or every
row: ``rows=None``, the root); ``gradient``/``hessian`` float32 (n_samples,) indexed by
row; ``features`` int32, the features to build; ``hist`` float64 (n_features, n_bins,
3) of (gradient, hessian, count) sums, or, for quantised gradients, int64
(n_features, n_bins) sums of the rows' packed pairs (``quantize.pack``). Like the CPU
builders they add to ``hist``: the caller zeroes it first (``zeros``).

A block takes GROUP features and one slice of the rows: its threads add their rows
into a histogram in shared memory (shared-memory atomics), then add its non-empty
bins to ``hist`` (global atomics), so a global bin gets one add per block, not one per
row. Both sums are atomics in whatever order the threads come:

* packed int64 sums are exact (integer addition wraps modulo 2**64, associative and
  commutative): the same bits as the CPU's, every run;
* float64 sums of the float32 gradients are not: each bin's sum is the CPU's within
  the round-off of a sum in another order, |GPU - CPU| <= 2 (n_b - 1) 2**-53 sum|g|
  over the bin's n_b rows, and may differ in the last bits from run to run on a real
  GPU. The count column is exact (integers in float64), and so is the hessian column
  of unit hessians (``unit_hessian=True``: the count, as ``histogram.unit_hessians``
  writes it). A float GPU tree is therefore the CPU's within round-off, not bit for
  bit; quantised gradients are the bit-for-bit path (issue 39).
"""

import numpy as np
from numba import float64, int64

from . import require_numba_cuda

cuda = require_numba_cuda()

#: histogram slots per feature (``_dtypes.N_BINS``: the kernels import nothing outside
#: ``_kernels``): every uint8 bin, the missing bin 255 included
N_SLOTS = 256
#: features per block: a row's index and gradient are loaded once for GROUP features;
#: the float block's shared histogram is GROUP x 256 x 3 float64 = 24 KiB
GROUP = 4
#: threads per block
THREADS = 256
#: blocks aimed at per launch (a few per multiprocessor of an H100/H200, 132 SMs):
#: the default slice of rows per block follows from it
TARGET_BLOCKS = 1024


@cuda.jit
def _histogram_float(X_binned, rows, n_rows, all_rows, gradient, hessian, unit_hessian,
                     features, rows_per_block, hist):
    """Add the (g, h, 1) of rows [blockIdx.x slice] to ``hist`` for features group
    blockIdx.y."""
    tid = cuda.threadIdx.x
    n_threads = cuda.blockDim.x
    k0 = cuda.blockIdx.y * GROUP
    n_group = min(GROUP, features.shape[0] - k0)
    shared = cuda.shared.array((GROUP, N_SLOTS, 3), dtype=float64)
    for s in range(tid, GROUP * N_SLOTS, n_threads):
        k = s // N_SLOTS
        b = s % N_SLOTS
        shared[k, b, 0] = 0.0
        shared[k, b, 1] = 0.0
        shared[k, b, 2] = 0.0
    cuda.syncthreads()
    start = cuda.blockIdx.x * rows_per_block
    stop = min(start + rows_per_block, n_rows)
    for i in range(start + tid, stop, n_threads):
        j = int64(i)
        if not all_rows:
            j = int64(rows[i])
        g = float64(gradient[j])
        h = float64(hessian[j])
        for k in range(n_group):
            b = X_binned[features[k0 + k], j]
            cuda.atomic.add(shared, (k, b, 0), g)
            if not unit_hessian:
                cuda.atomic.add(shared, (k, b, 1), h)
            cuda.atomic.add(shared, (k, b, 2), 1.0)
    cuda.syncthreads()
    for s in range(tid, n_group * N_SLOTS, n_threads):
        k = s // N_SLOTS
        b = s % N_SLOTS
        c = shared[k, b, 2]
        if c > 0.0:
            f = features[k0 + k]
            cuda.atomic.add(hist, (f, b, 0), shared[k, b, 0])
            cuda.atomic.add(hist, (f, b, 1), c if unit_hessian else shared[k, b, 1])
            cuda.atomic.add(hist, (f, b, 2), c)


@cuda.jit
def _histogram_packed(X_binned, rows, n_rows, all_rows, packed, features, rows_per_block,
                      hist):
    """Add the packed int64 pairs of rows [blockIdx.x slice] to ``hist`` for features
    group blockIdx.y."""
    tid = cuda.threadIdx.x
    n_threads = cuda.blockDim.x
    k0 = cuda.blockIdx.y * GROUP
    n_group = min(GROUP, features.shape[0] - k0)
    shared = cuda.shared.array((GROUP, N_SLOTS), dtype=int64)
    for s in range(tid, GROUP * N_SLOTS, n_threads):
        shared[s // N_SLOTS, s % N_SLOTS] = 0
    cuda.syncthreads()
    start = cuda.blockIdx.x * rows_per_block
    stop = min(start + rows_per_block, n_rows)
    for i in range(start + tid, stop, n_threads):
        j = int64(i)
        if not all_rows:
            j = int64(rows[i])
        p = packed[j]
        for k in range(n_group):
            cuda.atomic.add(shared, (k, X_binned[features[k0 + k], j]), p)
    cuda.syncthreads()
    for s in range(tid, n_group * N_SLOTS, n_threads):
        k = s // N_SLOTS
        b = s % N_SLOTS
        v = shared[k, b]
        if v != 0:  # adding 0 changes no bit
            cuda.atomic.add(hist, (features[k0 + k], b), v)


@cuda.jit
def _subtract(large, small):
    """large -= small, element by element (flat views)."""
    i = cuda.grid(1)
    if i < large.shape[0]:
        large[i] -= small[i]


@cuda.jit
def _fill_zero(a):
    i = cuda.grid(1)
    if i < a.shape[0]:
        a[i] = 0


def _blocks(n, threads):
    return max(1, (n + threads - 1) // threads)


def fill_zero(a):
    """Zero the contiguous device array ``a`` in place, on the device; return it."""
    _fill_zero[_blocks(a.size, THREADS), THREADS](a.reshape(a.size))
    return a


def zeros(shape, dtype):
    """A device array of zeros (zeroed on the device: nothing crosses the bus)."""
    return fill_zero(cuda.device_array(shape, dtype=dtype))


def _launch_shape(n_rows, n_used, rows_per_block, threads):
    n_groups = (n_used + GROUP - 1) // GROUP
    if rows_per_block is None:
        per_group = max(1, TARGET_BLOCKS // max(n_groups, 1))
        rows_per_block = max(4 * threads, (n_rows + per_group - 1) // per_group)
    n_row_blocks = max(1, (n_rows + rows_per_block - 1) // rows_per_block)
    return (n_row_blocks, n_groups), int(rows_per_block)


_NO_ROWS = []  # the index array passed, unread, for every row: allocated once


def _rows_arg(rows, X_binned):
    """(rows array, n_rows, all_rows): every row of the data where ``rows`` is None."""
    if rows is None:
        if not _NO_ROWS:
            _NO_ROWS.append(cuda.device_array(1, dtype=np.uint32))
        return _NO_ROWS[0], X_binned.shape[1], True
    return rows, rows.shape[0], False


def build_histogram(X_binned, rows, gradient, hessian, features, hist, *, rows_per_block=None,
                    threads=THREADS):
    """Add the (gradient, hessian, count) sums of ``rows`` (None: every row) to ``hist``.

    ``hessian`` None: unit hessians (every hessian 1.0), the hessian column set to the
    count, as the CPU's ``hessian=None`` build followed by ``unit_hessians`` leaves it.
    ``rows_per_block`` and ``threads`` (per block, at most 1024) only change the order of
    the adds.
    """
    # X_binned: uint8 (n_features, n_samples); rows: uint32 (n_node,) or None
    # gradient, hessian: float32 (n_samples,); features: int32 (n_used,)
    # hist: float64 (n_features, >= 256 if any bin is 255, 3), zeroed  # OUT (added to)
    n_used = features.shape[0]
    if n_used == 0:
        return hist
    rows_arg, n_rows, all_rows = _rows_arg(rows, X_binned)
    if n_rows == 0:
        return hist
    grid, per_block = _launch_shape(n_rows, n_used, rows_per_block, threads)
    unit = hessian is None
    _histogram_float[grid, threads](X_binned, rows_arg, n_rows, all_rows, gradient,
                                    gradient if unit else hessian, unit, features, per_block,
                                    hist)
    return hist


def build_histogram_packed(X_binned, rows, packed, features, hist, *, rows_per_block=None,
                           threads=THREADS):
    """Add the sums of the rows' packed (gradient, hessian) integer pairs to ``hist``:
    the CPU builders' quantised histogram (``build_histograms(X, rows, packed, packed,
    ...)``), bit for bit."""
    # packed: int64 (n_samples,); hist: int64 (n_features, 256), zeroed  # OUT (added to)
    n_used = features.shape[0]
    if n_used == 0:
        return hist
    rows_arg, n_rows, all_rows = _rows_arg(rows, X_binned)
    if n_rows == 0:
        return hist
    grid, per_block = _launch_shape(n_rows, n_used, rows_per_block, threads)
    _histogram_packed[grid, threads](X_binned, rows_arg, n_rows, all_rows, packed, features,
                                     per_block, hist)
    return hist


def subtract_histograms(large, small):
    """The subtraction trick: ``large -= small`` (parent minus one child: the sibling),
    over every slot, float or packed.

    Element by element, each slot one float64 (or exact int64) subtraction: the value
    of the CPU's ``_subtract_used_bins`` / ``_subtract_packed`` on the used bins, and
    0 - 0 on the others.
    """
    n = large.size
    _subtract[_blocks(n, THREADS), THREADS](large.reshape(n), small.reshape(n))
    return large
