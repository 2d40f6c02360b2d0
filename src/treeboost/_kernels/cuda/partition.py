"""Stable partition of a node's rows on the GPU: the twin of ``partition.partition_rows``.

The node's rows, a uint32 slice of the device's index array, are reordered in place
so that the rows going left come first, each side keeping the rows' order, and the
count of left rows is returned: exactly the order the CPU kernels leave (the
partition is a function of the rows and the split alone), so the GPU's children hold
the CPU's rows in the CPU's order.

Three passes over blocks of ``threads`` threads, each thread a run of
``rows_per_thread`` consecutive rows (so a block holds ``threads * rows_per_thread``):
1. each block counts its left rows;
2. one block scans the block counts in block order: left rows before each block, and
   the total;
3. each thread counts its run's left rows again, a scan of the threads' counts in
   thread order ranks the runs, and each thread writes its run's rows to their places
   in row order: left rows at (left before the block + left before the run + its left
   rank in the run), right rows after all left ones likewise;
then the buffer is copied back over the slice. No atomics: the same result every run,
whatever the launch shape. One row a thread reads the rows coalesced on a GPU; under
numba-cuda's simulator, where each GPU thread is a Python thread, runs of rows keep
the threads few.
"""

import numpy as np
from numba import int64

from . import require_numba_cuda

cuda = require_numba_cuda()

#: threads (and rows) per block; at most MAX_THREADS
THREADS = 256
MAX_THREADS = 256


@cuda.jit(device=True)
def goes_left(b, is_categorical, bin_threshold, missing_left, missing_bin, bitset):
    """``_jit.bin_goes_left``: numerical, bins <= threshold left and the missing bin where
    ``missing_left`` says; categorical, the bins whose bit is set (the missing bin has
    bit 255 like any other)."""
    if is_categorical:
        return (bitset[b >> 5] >> (b & 31)) & 1 == 1
    if b == missing_bin:
        return missing_left
    return b <= bin_threshold


@cuda.jit(device=True)
def _inclusive_scan(shared, t, n_threads):
    """Inclusive prefix sum of shared[:n_threads] in place (Hillis-Steele; every thread
    of the block calls it)."""
    d = 1
    while d < n_threads:
        v = shared[t - d] if t >= d else 0
        cuda.syncthreads()
        shared[t] += v
        cuda.syncthreads()
        d *= 2


@cuda.jit(device=True)
def _run_left(rows, col, is_categorical, bin_threshold, missing_left, missing_bin, bitset,
              first, last):
    """Left rows among rows[first:last] (the thread's run, clipped to the node)."""
    n_left = int64(0)
    for i in range(first, last):
        if goes_left(col[rows[i]], is_categorical, bin_threshold, missing_left, missing_bin,
                     bitset):
            n_left += 1
    return n_left


@cuda.jit(device=True)
def _run(rows_per_thread, n):
    """This thread's run of rows: [first, last), clipped to the node's n rows."""
    first = (int64(cuda.blockIdx.x) * cuda.blockDim.x + cuda.threadIdx.x) * rows_per_thread
    return min(first, n), min(first + rows_per_thread, n)


@cuda.jit
def _count_left(rows, col, is_categorical, bin_threshold, missing_left, missing_bin, bitset,
                rows_per_thread, block_left):
    t = cuda.threadIdx.x
    first, last = _run(rows_per_thread, rows.shape[0])
    shared = cuda.shared.array(MAX_THREADS, dtype=int64)
    shared[t] = _run_left(rows, col, is_categorical, bin_threshold, missing_left,
                          missing_bin, bitset, first, last)
    cuda.syncthreads()
    _inclusive_scan(shared, t, cuda.blockDim.x)
    if t == cuda.blockDim.x - 1:
        block_left[cuda.blockIdx.x] = shared[t]


@cuda.jit
def _scan_blocks(block_left, n_blocks, left_before, total):
    """left_before[c]: left rows of blocks 0 .. c - 1; total[0]: all left rows. One block,
    each thread a contiguous share of the blocks."""
    t = cuda.threadIdx.x
    n_threads = cuda.blockDim.x
    lo = t * n_blocks // n_threads
    hi = (t + 1) * n_blocks // n_threads
    s = int64(0)
    for c in range(lo, hi):
        s += block_left[c]
    shared = cuda.shared.array(MAX_THREADS, dtype=int64)
    shared[t] = s
    cuda.syncthreads()
    _inclusive_scan(shared, t, n_threads)
    acc = shared[t] - s
    for c in range(lo, hi):
        left_before[c] = acc
        acc += block_left[c]
    if t == n_threads - 1:
        total[0] = shared[t]


@cuda.jit
def _scatter(rows, col, is_categorical, bin_threshold, missing_left, missing_bin, bitset,
             rows_per_thread, left_before, total, out):
    t = cuda.threadIdx.x
    n_threads = cuda.blockDim.x
    c = cuda.blockIdx.x
    first, last = _run(rows_per_thread, rows.shape[0])
    n_left = _run_left(rows, col, is_categorical, bin_threshold, missing_left, missing_bin,
                       bitset, first, last)
    shared = cuda.shared.array(MAX_THREADS, dtype=int64)
    shared[t] = n_left
    cuda.syncthreads()
    _inclusive_scan(shared, t, n_threads)
    left = left_before[c] + shared[t] - n_left  # left rows before this run
    # right rows before this run: the rows before it less the left ones
    right = total[0] + first - left
    for i in range(first, last):
        j = rows[i]
        if goes_left(col[j], is_categorical, bin_threshold, missing_left, missing_bin,
                     bitset):
            out[left] = j
            left += 1
        else:
            out[right] = j
            right += 1


@cuda.jit
def _copy(dst, src, rows_per_thread):
    first, last = _run(rows_per_thread, src.shape[0])
    for i in range(first, last):
        dst[i] = src[i]


class PartitionBuffers:
    """Device scratch of ``partition_rows`` for nodes of up to ``n_max`` rows (allocate
    once per fit), and the launch shape: ``threads`` a block, each thread a run of
    ``rows_per_thread`` rows."""

    def __init__(self, n_max, threads=THREADS, rows_per_thread=1):
        if not 1 <= threads <= MAX_THREADS:
            raise ValueError(f"threads per block: 1 to {MAX_THREADS}, not {threads}")
        if rows_per_thread < 1:
            raise ValueError(f"rows per thread: at least 1, not {rows_per_thread}")
        per_block = threads * rows_per_thread
        n_blocks = max(1, (n_max + per_block - 1) // per_block)
        self.n_max = n_max
        self.threads = threads
        self.rows_per_thread = rows_per_thread
        self.out = cuda.device_array(max(n_max, 1), dtype=np.uint32)
        self.block_left = cuda.device_array(n_blocks, dtype=np.int64)
        self.left_before = cuda.device_array(n_blocks, dtype=np.int64)
        self.total = cuda.device_array(1, dtype=np.int64)


def partition_rows(rows, X_binned, feature, is_categorical, bin_threshold, missing_left,
                   missing_bin, bitset, buffers=None):
    """Reorder the device array ``rows`` in place, left child first; return n_left.

    The arguments of the CPU's ``partition_rows`` (``bitset``: uint32 (8,) on the
    device, read for categorical splits), its two scratch buffers replaced by
    ``buffers`` (``PartitionBuffers``; None: allocated for this call).
    """
    # rows: uint32 (n_node,), a view of the device's index array  # IN/OUT
    # X_binned: uint8 (n_features, n_samples) on the device       # IN
    n = rows.shape[0]
    if n == 0:
        return 0
    if buffers is None:
        buffers = PartitionBuffers(n)
    if n > buffers.n_max:
        raise ValueError(f"a node of {n} rows, buffers for {buffers.n_max}")
    threads, per_thread = buffers.threads, buffers.rows_per_thread
    n_blocks = (n + threads * per_thread - 1) // (threads * per_thread)
    col = X_binned[int(feature)]
    args = (bool(is_categorical), int(bin_threshold), bool(missing_left), int(missing_bin),
            bitset, int(per_thread))
    _count_left[n_blocks, threads](rows, col, *args, buffers.block_left)
    _scan_blocks[1, threads](buffers.block_left, n_blocks, buffers.left_before,
                             buffers.total)
    out = buffers.out[:n]
    _scatter[n_blocks, threads](rows, col, *args, buffers.left_before, buffers.total, out)
    _copy[n_blocks, threads](rows, out, int(per_thread))
    return int(buffers.total.copy_to_host()[0])
