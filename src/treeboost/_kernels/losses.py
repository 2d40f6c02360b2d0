"""Per-row gradients and hessians of the built-in losses, one parallel loop each.

Conventions: ``raw`` is the raw score F, ``g = dL/dF`` and ``h = d2L/dF2``
are multiplied by the sample weight and written as float32. Every loop has
the signature (y, raw, sample_weight, gradient, hessian[, parameter]), with
float64 inputs and float32 outputs, so each compiles once.
"""

import math

import numpy as np
from numba import prange

from ._jit import parallel_kernel


@parallel_kernel
def grad_hess_squared_error(y, raw, sample_weight, gradient, hessian):
    """L = (y - F)^2 / 2: g = F - y, h = 1."""
    for i in prange(y.shape[0]):
        w = sample_weight[i]
        gradient[i] = w * (raw[i] - y[i])
        hessian[i] = w


@parallel_kernel
def grad_hess_absolute_error(y, raw, sample_weight, gradient, hessian):
    """L = |y - F|: g = sign(F - y); h = 1 for growing (leaves are medians)."""
    for i in prange(y.shape[0]):
        w = sample_weight[i]
        d = raw[i] - y[i]
        gradient[i] = w * (1.0 if d > 0 else (-1.0 if d < 0 else 0.0))
        hessian[i] = w


@parallel_kernel
def grad_hess_huber(y, raw, sample_weight, gradient, hessian, delta):
    """Huber with threshold delta: g = clip(F - y, -delta, delta), h = 1."""
    for i in prange(y.shape[0]):
        w = sample_weight[i]
        d = raw[i] - y[i]
        if d > delta:
            d = delta
        elif d < -delta:
            d = -delta
        gradient[i] = w * d
        hessian[i] = w


@parallel_kernel
def grad_hess_quantile(y, raw, sample_weight, gradient, hessian, alpha):
    """Pinball loss: g = -alpha if y > F else 1 - alpha; h = 1 for growing."""
    for i in prange(y.shape[0]):
        w = sample_weight[i]
        gradient[i] = w * (-alpha if y[i] > raw[i] else 1.0 - alpha)
        hessian[i] = w


@parallel_kernel
def grad_hess_poisson(y, raw, sample_weight, gradient, hessian):
    """L = exp(F) - y F (log link): g = exp(F) - y, h = exp(F)."""
    for i in prange(y.shape[0]):
        w = sample_weight[i]
        mu = math.exp(raw[i])
        gradient[i] = w * (mu - y[i])
        hessian[i] = w * mu


@parallel_kernel
def grad_hess_gamma(y, raw, sample_weight, gradient, hessian):
    """L = y exp(-F) + F (log link): g = 1 - y exp(-F), h = y exp(-F)."""
    for i in prange(y.shape[0]):
        w = sample_weight[i]
        t = y[i] * math.exp(-raw[i])
        gradient[i] = w * (1.0 - t)
        hessian[i] = w * t


@parallel_kernel
def grad_hess_tweedie(y, raw, sample_weight, gradient, hessian, power):
    """Tweedie deviance (log link), 1 < power < 2 or power > 2."""
    a = 1.0 - power
    b = 2.0 - power
    for i in prange(y.shape[0]):
        w = sample_weight[i]
        ea = math.exp(a * raw[i])
        eb = math.exp(b * raw[i])
        gradient[i] = w * (-y[i] * ea + eb)
        hessian[i] = w * (-y[i] * a * ea + b * eb)


@parallel_kernel
def grad_hess_log_loss(y, raw, sample_weight, gradient, hessian):
    """Binary log-loss on y in {0, 1}: g = p - y, h = p (1 - p)."""
    for i in prange(y.shape[0]):
        w = sample_weight[i]
        f = raw[i]
        # numerically safe sigmoid on both sides
        if f >= 0:
            p = 1.0 / (1.0 + math.exp(-f))
        else:
            e = math.exp(f)
            p = e / (1.0 + e)
        gradient[i] = w * (p - y[i])
        hessian[i] = w * p * (1.0 - p)


@parallel_kernel
def grad_hess_exponential(y, raw, sample_weight, gradient, hessian):
    """AdaBoost loss exp(-s F) with s = 2y - 1: g = -s exp(-s F), h = exp(-s F)."""
    for i in prange(y.shape[0]):
        w = sample_weight[i]
        s = 2.0 * y[i] - 1.0
        e = math.exp(-s * raw[i])
        gradient[i] = -w * s * e
        hessian[i] = w * e


_SOFTMAX_BLOCK = 4096  # rows per task


@parallel_kernel
def softmax_shift(raw, out):
    """out[k, i] = raw[k, i] - max_j raw[j, i]: exp(out) cannot overflow."""
    # raw: float64 (n_classes, n_samples), C order  # IN
    # out: float64 (n_classes, n_samples), C order  # OUT
    # NumPy's raw.max(axis=0) and broadcast subtraction did this on the thread
    # every other one waited for: ~10% of that thread's time in a multiclass fit
    # on two threads (100,000 x 20, 5 classes). The maximum is exact, so the
    # differences are NumPy's bits.
    n_classes, n_samples = raw.shape
    n_blocks = (n_samples + _SOFTMAX_BLOCK - 1) // _SOFTMAX_BLOCK
    for blk in prange(n_blocks):
        start = blk * _SOFTMAX_BLOCK
        stop = min(start + _SOFTMAX_BLOCK, n_samples)
        m = raw[0, start:stop].copy()
        for k in range(1, n_classes):
            r = raw[k, start:stop]
            for i in range(stop - start):
                # np.maximum's NaN: a NaN score's row stays NaN
                m[i] = r[i] if (r[i] > m[i] or r[i] != r[i]) else m[i]
        for k in range(n_classes):
            r = raw[k, start:stop]
            o = out[k, start:stop]
            for i in range(stop - start):
                o[i] = r[i] - m[i]


@parallel_kernel
def grad_hess_softmax(y, exp_raw, sample_weight, gradient, hessian, hessian_factor):
    """Multinomial log-loss: g_k = p_k - [y = k], h_k = factor p_k (1 - p_k)."""
    # exp_raw: float64 (n_classes, n_samples), exp(F_k - max_j F_j)  # IN
    # gradient, hessian: float32 (n_classes, n_samples)               # OUT
    # The exponentials come in computed: NumPy's vectorised exp is ~10x
    # faster than a loop of scalar math.exp calls, and with 26 classes they
    # were most of a stage's gradient time. The inner loops run over 1-D
    # views of a class's row block: indexing the 2-D arrays there kept LLVM
    # from vectorising them (5x slower).
    n_classes, n_samples = exp_raw.shape
    n_blocks = (n_samples + _SOFTMAX_BLOCK - 1) // _SOFTMAX_BLOCK
    for blk in prange(n_blocks):
        start = blk * _SOFTMAX_BLOCK
        stop = min(start + _SOFTMAX_BLOCK, n_samples)
        s = np.zeros(stop - start)
        for k in range(n_classes):
            e = exp_raw[k, start:stop]
            for i in range(stop - start):
                s[i] += e[i]
        yb = y[start:stop]
        wb = sample_weight[start:stop]
        for k in range(n_classes):
            e = exp_raw[k, start:stop]
            gk = gradient[k, start:stop]
            hk = hessian[k, start:stop]
            for i in range(stop - start):
                w = wb[i]
                p = e[i] / s[i]
                gk[i] = w * (p - (1.0 if yb[i] == k else 0.0))
                hk[i] = w * hessian_factor * p * (1.0 - p)
