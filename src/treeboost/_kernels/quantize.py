"""Quantised gradients (``use_quantized_grad``, LightGBM 4's): a tree's rows as small integers.

Each tree's gradients and hessians are scaled to integers of a few bits:
g / s_g with s_g = max|g| / (B/2) and h / s_h with s_h = max h / B
(B = ``num_grad_quant_bins``), rounded stochastically (floor(x + u), u
uniform in [0, 1): unbiased, E = x) or to nearest. u is drawn from a hash of
(the tree's seed, row index), not from a sequential generator: every row's
draw is the same whatever the number of threads and the order they run in.
A constant hessian (squared error) is exactly B on every row:
(h B) / max h rounds to B whenever h = max h.

A row's pair is packed into one int64, g in the high 32 bits and h (>= 0) in
the low 32, so that a histogram bin adds a row with one integer add, and
sums and differences of packed pairs are the packed sums and differences
while |sum g| < 2**31 and sum h < 2**32 (the grower checks n_samples B < 2**31).
"""

import numpy as np
from numba import prange

from ._jit import parallel_kernel
from .grower import _next_random

_LOW = 0xFFFFFFFF  # the hessian's bits of a packed pair
_U24 = 1.0 / 16777216.0  # 2**-24: 24-bit uniforms


def pack(gq, hq):
    """The packed int64 of integer gradient ``gq`` and hessian ``hq`` >= 0 (NumPy twin)."""
    return (np.asarray(gq, dtype=np.int64) << 32) + np.asarray(hq, dtype=np.int64)


def unpack(packed):
    """(gradient, hessian) integer sums of packed sums (NumPy twin of the kernels' unpacking)."""
    packed = np.asarray(packed, dtype=np.int64)
    return packed >> 32, packed & _LOW


@parallel_kernel
def quantize_gradients(gradient, hessian, n_bins, stochastic, seed, packed, scales,
                       row_offset, maxima):
    """Quantise every row's (gradient, hessian) and pack it; write the two scales."""
    # gradient, hessian: float32 (n_samples,)             # IN
    # n_bins: int, B; stochastic: bool; seed: uint64      # IN
    # packed: int64 (n_samples,)                          # OUT
    # scales: float64 (2,): s_g, s_h                      # OUT
    # row_offset: uint64, the index of row 0 in the draws' hash (data-parallel training:
    # the rows before this process's); maxima: float64 (2,), max |g| and max h of every
    # process's rows, or negative to take this process's
    n = gradient.shape[0]
    g_max = 0.0
    h_max = 0.0
    # max is exact in any order: the same scales whatever the threads
    for i in prange(n):
        g_max = max(g_max, abs(np.float64(gradient[i])))
        h_max = max(h_max, np.float64(hessian[i]))
    if maxima[0] >= 0.0:
        g_max = maxima[0]
        h_max = maxima[1]
    half = n_bins / 2.0
    g_unit = g_max if g_max > 0.0 else 1.0  # all zero: every row quantises to 0
    h_unit = h_max if h_max > 0.0 else 1.0
    scales[0] = g_unit / half
    scales[1] = h_unit / n_bins
    for i in prange(n):
        xg = (np.float64(gradient[i]) * half) / g_unit
        xh = (np.float64(hessian[i]) * n_bins) / h_unit
        if stochastic:
            # one splitmix64 output per (seed, row): 24 bits for each uniform
            _, z = _next_random(seed ^ ((np.uint64(i) + row_offset)
                                        * np.uint64(0xD1B54A32D192ED03)))
            ug = np.float64(z >> np.uint64(40)) * _U24
            uh = np.float64(z & np.uint64(0xFFFFFF)) * _U24
        else:
            ug = 0.5
            uh = 0.5
        gq = np.int64(np.floor(xg + ug))
        hq = np.int64(np.floor(xh + uh))
        packed[i] = (gq << 32) + hq
