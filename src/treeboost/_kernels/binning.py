"""Map raw feature values to bin indices (binary search over bin edges)."""

import numpy as np
from numba import prange

from ._jit import inline, parallel_kernel
from .simd import SEARCH_WIDTH, VECTOR_BINS, bins8

_CHUNK = 4096  # rows per task: fixed, so the output never depends on threads


@inline
def _count_below(edges, m, x):
    """Number of edges[:m] (sorted) below x: the first b with x <= edges[b].

    Branchless binary search: the answer stays in [base, base + n]; each
    step keeps the upper or lower part by arithmetic instead of a branch,
    since whether a value is below an edge is unpredictable.
    """
    if m == 0:
        return 0
    base = 0
    n = m
    while n > 1:
        half = n >> 1
        base += half * (edges[base + half - 1] < x)
        n -= half
    return base + (edges[base] < x)


@parallel_kernel
def map_to_bins(X, bin_edges, n_edges, is_categorical, missing_bin, X_binned):
    """Write the bin of every value of X: the first b with x <= edges[b].

    For a categorical feature the edges are its sorted categories and a value
    gets the index of the equal category, or the missing bin if it has none.
    """
    # X: float64 (n_samples, n_features)              # IN
    # bin_edges: float64 (n_features, max_edges)      # IN, padded per feature
    # n_edges: int32 (n_features,)                    # IN
    # is_categorical: uint8 (n_features,)             # IN
    # X_binned: uint8 (n_features, n_samples)         # OUT, feature-major
    n_samples, n_features = X.shape
    n_chunks = (n_samples + _CHUNK - 1) // _CHUNK
    for chunk in prange(n_chunks):
        start = chunk * _CHUNK
        stop = min(start + _CHUNK, n_samples)
        for f in range(n_features):
            m = n_edges[f]
            edges = bin_edges[f]
            categorical = is_categorical[f] == 1
            first = start
            if VECTOR_BINS and not categorical and m > 0:  # SEARCH_WIDTH values a step (simd.bins8)
                row = X_binned[f]
                while first + SEARCH_WIDTH <= stop:
                    bins8(X, first, f, edges, m, missing_bin, row)
                    first += SEARCH_WIDTH
            for i in range(first, stop):
                x = X[i, f]
                if np.isnan(x):
                    X_binned[f, i] = missing_bin
                    continue
                b = _count_below(edges, m, x)
                if categorical and (b == m or edges[b] != x):
                    b = missing_bin  # a category unseen in training
                X_binned[f, i] = b
