"""Stable partition of a node's rows on the GPU: the twin of ``partition.partition_rows``.

The node's rows, a uint32 slice of the device's index array, are reordered in place
so that the rows going left come first, each side keeping the rows' order, and the
count of left rows is returned: exactly the order the CPU kernels leave (the
partition is a function of the rows and the split alone), so the GPU's children hold
the CPU's rows in the CPU's order.

Three passes over blocks of ``threads`` rows, each block one row a thread:
1. each block counts its left rows (``syncthreads_count``);
2. one block scans the block counts in block order: left rows before each block, and
   the total;
3. each block ranks its rows by a scan of its threads' flags in thread order, and
   writes each row to its place: left rows at (left before the block + left rank),
   right rows after all left ones at (right before the block + right rank);
then the buffer is copied back over the slice. No atomics: the same result every run.
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


@cuda.jit
def _count_left(rows, col, is_categorical, bin_threshold, missing_left, missing_bin, bitset,
                block_left):
    i = cuda.grid(1)
    flag = 0
    if i < rows.shape[0]:
        if goes_left(col[rows[i]], is_categorical, bin_threshold, missing_left, missing_bin,
                     bitset):
            flag = 1
    c = cuda.syncthreads_count(flag)
    if cuda.threadIdx.x == 0:
        block_left[cuda.blockIdx.x] = c


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
             left_before, total, out):
    t = cuda.threadIdx.x
    n_threads = cuda.blockDim.x
    c = cuda.blockIdx.x
    i = c * n_threads + t
    n = rows.shape[0]
    flag = 0
    j = 0
    if i < n:
        j = rows[i]
        if goes_left(col[j], is_categorical, bin_threshold, missing_left, missing_bin,
                     bitset):
            flag = 1
    shared = cuda.shared.array(MAX_THREADS, dtype=int64)
    shared[t] = flag
    cuda.syncthreads()
    _inclusive_scan(shared, t, n_threads)
    if i < n:
        rank = shared[t] - flag  # left rows of this block before row i
        if flag:
            out[left_before[c] + rank] = j
        else:
            # right rows before this block: its first position less its left rows
            out[total[0] + (int64(c) * n_threads - left_before[c]) + (t - rank)] = j


@cuda.jit
def _copy(dst, src):
    i = cuda.grid(1)
    if i < src.shape[0]:
        dst[i] = src[i]


class PartitionBuffers:
    """Device scratch of ``partition_rows`` for nodes of up to ``n_max`` rows (allocate
    once per fit)."""

    def __init__(self, n_max, threads=THREADS):
        if not 1 <= threads <= MAX_THREADS:
            raise ValueError(f"threads per block: 1 to {MAX_THREADS}, not {threads}")
        n_blocks = max(1, (n_max + threads - 1) // threads)
        self.n_max = n_max
        self.threads = threads
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
    threads = buffers.threads
    n_blocks = (n + threads - 1) // threads
    col = X_binned[int(feature)]
    args = (bool(is_categorical), int(bin_threshold), bool(missing_left), int(missing_bin),
            bitset)
    _count_left[n_blocks, threads](rows, col, *args, buffers.block_left)
    _scan_blocks[1, threads](buffers.block_left, n_blocks, buffers.left_before,
                             buffers.total)
    out = buffers.out[:n]
    _scatter[n_blocks, threads](rows, col, *args, buffers.left_before, buffers.total, out)
    _copy[n_blocks, threads](rows, out)
    return int(buffers.total.copy_to_host()[0])
