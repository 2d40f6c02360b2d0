"""Stable partition of a node's rows, and raw-score updates.

The rows of a node are a contiguous slice of one index array. A split
rearranges that slice in place so the left child's rows come first, each side
keeping the original (ascending) order:

    before  [ 3  5  8  9 12 15 ]      goes left?  5, 9, 15
    after   [ 5  9 15 | 3  8 12 ]
            `- left -' `- right '

Large nodes: chunks of rows are split into two scratch buffers in parallel,
then copied back at offsets given by the chunks' counts. Small nodes use the
serial kernel (same result, no thread wake-up). The result depends neither
on the number of threads nor on the chunking.
"""

import numpy as np
from numba import prange

from ._jit import bin_goes_left, inline, kernel, lower_bound, parallel_kernel
from .simd import VECTOR_PARTITION, WIDTH, split16

_CHUNK = 16384  # rows per task


@inline
def _vector_steps(rows, col, is_categorical, bin_threshold, missing_left, missing_bin, left,
                  right):
    """Split ``rows`` 16 at a time (simd.split16) as far as the vector steps go; return
    (rows done, n_left, n_right). None where the CPU has no AVX-512 or the split is
    categorical, and the steps stop at a row among the column's last three: the
    caller's loop does the rest."""
    nl = 0
    nr = 0
    start = 0
    if VECTOR_PARTITION and not is_categorical:
        while start + WIDTH <= rows.shape[0]:
            c = split16(rows, start, col, bin_threshold, missing_bin, missing_left, left, nl,
                        right, nr)
            if c < 0:
                break
            nl += c
            nr += WIDTH - c
            start += WIDTH
    return start, nl, nr


@kernel
def _split_chunk(rows, col, is_categorical, bin_threshold, missing_left, missing_bin, bitset,
                 left, right):
    """Split a chunk's rows into ``left`` and ``right`` (views at the chunk's offset);
    return (n_left, n_right)."""
    # Views, indexed from 0, not the whole arrays at the chunk's offset: inside a
    # prange body that offset indexing compiled to a loop twice as slow as the
    # serial kernel's (400,000 rows, one thread: 943 against 476 us; views: 561)
    start, nl, nr = _vector_steps(rows, col, is_categorical, bin_threshold, missing_left,
                                  missing_bin, left, right)
    for i in range(start, rows.shape[0]):
        j = rows[i]
        # both writes, then advance one side: no branch for the CPU to mispredict
        go_left = np.int64(bin_goes_left(col[j], is_categorical, bin_threshold, missing_left,
                                         missing_bin, bitset))
        left[nl] = j
        right[nr] = j
        nl += go_left
        nr += 1 - go_left
    return nl, nr


@kernel
def _copy(dst, src):
    """dst[:len(src)] = src, element by element (a slice assignment would compile a shape
    check and its message)."""
    for i in range(src.shape[0]):
        dst[i] = src[i]


@kernel
def partition_rows_serial(sample_indices, X_binned, feature, is_categorical, bin_threshold,
                          missing_left, missing_bin, bitset, left_buffer, right_buffer):
    """Reorder ``sample_indices`` in place, left child first; return n_left."""
    # sample_indices: uint32 (n_node,)                 # IN/OUT
    # X_binned: uint8 (n_features, n_samples)         # IN
    # bitset: uint32 (8,)                             # IN, left categories
    # left_buffer, right_buffer: uint32 (>= n_node,)  # scratch (right_buffer only)
    col = X_binned[feature]
    start, nl, nr = _vector_steps(sample_indices, col, is_categorical, bin_threshold,
                                  missing_left, missing_bin, sample_indices, right_buffer)
    for i in range(start, sample_indices.shape[0]):
        j = sample_indices[i]
        # left rows are written back in place (nl <= i: never ahead of the reads),
        # right rows to the buffer; both writes and no branch, which the CPU
        # mispredicted on real splits (3.8 -> 2.2 ns a row on letter)
        go_left = np.int64(bin_goes_left(col[j], is_categorical, bin_threshold, missing_left,
                                         missing_bin, bitset))
        sample_indices[nl] = j
        right_buffer[nr] = j
        nl += go_left
        nr += 1 - go_left
    _copy(sample_indices[nl:], right_buffer[:nr])
    return nl


@parallel_kernel
def partition_rows(sample_indices, X_binned, feature, is_categorical, bin_threshold,
                   missing_left, missing_bin, bitset, left_buffer, right_buffer):
    """Parallel twin of ``partition_rows_serial`` for large nodes."""
    n = sample_indices.shape[0]
    n_chunks = (n + _CHUNK - 1) // _CHUNK
    n_left_in = np.zeros(n_chunks, dtype=np.int64)
    n_right_in = np.zeros(n_chunks, dtype=np.int64)
    col = X_binned[feature]
    for c in prange(n_chunks):
        start = c * _CHUNK
        stop = min(start + _CHUNK, n)
        nl, nr = _split_chunk(sample_indices[start:stop], col, is_categorical, bin_threshold,
                              missing_left, missing_bin, bitset, left_buffer[start:stop],
                              right_buffer[start:stop])
        n_left_in[c] = nl
        n_right_in[c] = nr
    left_offset = np.zeros(n_chunks, dtype=np.int64)
    right_offset = np.zeros(n_chunks, dtype=np.int64)
    total_left = 0
    for c in range(n_chunks):
        left_offset[c] = total_left
        total_left += n_left_in[c]
    acc = total_left
    for c in range(n_chunks):
        right_offset[c] = acc
        acc += n_right_in[c]
    for c in prange(n_chunks):
        start = c * _CHUNK
        lo = left_offset[c]
        ro = right_offset[c]
        _copy(sample_indices[lo:lo + n_left_in[c]], left_buffer[start:start + n_left_in[c]])
        _copy(sample_indices[ro:ro + n_right_in[c]],
              right_buffer[start:start + n_right_in[c]])
    return total_left


#: rows of the data per task of add_leaf_values
SCORE_BLOCK = 65536


@parallel_kernel
def add_leaf_values(raw_score, sample_indices, leaf_starts, leaf_stops, leaf_values):
    """raw_score[rows of leaf j] += leaf_values[j] for every leaf j."""
    # raw_score: float64 (n_samples,)               # IN/OUT
    # sample_indices: uint32 (n_rows,)              # IN, grouped by leaf, each
    #                                                 leaf's rows ascending
    # leaf_starts, leaf_stops: int64 (n_leaves,)    # IN
    # leaf_values: float64 (n_leaves,)              # IN
    # A task per block of the data's rows, adding each leaf's rows in the block
    # (found by bisection, a leaf's rows being sorted): tasks over positions of
    # the index array had two threads writing the same cache lines of raw_score,
    # and a task per leaf left one thread with a late tree's one large leaf.
    n_blocks = (raw_score.shape[0] + SCORE_BLOCK - 1) // SCORE_BLOCK
    for c in prange(n_blocks):
        lo = c * SCORE_BLOCK
        hi = lo + SCORE_BLOCK
        for j in range(leaf_values.shape[0]):
            v = leaf_values[j]
            a = lower_bound(sample_indices, leaf_starts[j], leaf_stops[j], lo)
            b = lower_bound(sample_indices, a, leaf_stops[j], hi)
            for i in range(a, b):
                raw_score[sample_indices[i]] += v
