"""Scan histograms for the best split of a node, one feature per task.

Gain (XGBoost eq. 7 without the 1/2, as LightGBM reports it):
    T(G_L)^2/(H_L+lambda) + T(G_R)^2/(H_R+lambda) - T(G)^2/(H+lambda)
with T the L1 soft-threshold T(G) = sign(G) max(|G| - alpha, 0). With unit
hessians and no regularisation this ranks splits exactly as least squares.
"""

import numpy as np

from ._jit import inline, kernel

# columns of the per-feature result array
GAIN, BIN, MISSING_LEFT, LEFT_G, LEFT_H, LEFT_C = 0, 1, 2, 3, 4, 5
N_SPLIT_COLUMNS = 6


@inline
def soft_threshold(g, alpha):
    """L1 soft-thresholding of a gradient sum."""
    if g > alpha:
        return g - alpha
    if g < -alpha:
        return g + alpha
    return 0.0


@inline
def leaf_score(g, h, reg_lambda, reg_alpha):
    """T(G)^2 / (H + lambda): the loss reduction of a Newton leaf, times 2."""
    t = soft_threshold(g, reg_alpha)
    den = h + reg_lambda
    if den <= 0.0:  # empty node or zero hessians: no reduction to claim
        return 0.0
    return t * t / den


@kernel
def find_best_splits(hist, features, n_bins_non_missing, missing_bin,
                     sum_g, sum_h, count, reg_lambda, reg_alpha,
                     min_samples_leaf, min_child_weight, out):
    """Best threshold (and side for missing values) of each listed feature."""
    # hist: float64 (n_features, n_bins, 3)          # IN
    # features: int32 (n_used,)                       # IN, candidate features
    # n_bins_non_missing: int32 (n_features,)         # IN
    # out: float64 (n_used, N_SPLIT_COLUMNS)          # OUT, gain -inf if none
    # serial on purpose: a node's scan is a few thousand bins, far less work
    # than waking a thread pool for it
    parent = leaf_score(sum_g, sum_h, reg_lambda, reg_alpha)
    for k in range(features.shape[0]):
        f = features[k]
        h = hist[f]
        nb = n_bins_non_missing[f]
        miss_g = h[missing_bin, 0]
        miss_h = h[missing_bin, 1]
        miss_c = h[missing_bin, 2]
        best = -np.inf
        best_bin = -1
        best_ml = 0
        best_gl = 0.0
        best_hl = 0.0
        best_cl = 0.0
        # pass 1: missing values go right. With missing values present the
        # last threshold (every value left, missing right) is a split too.
        last = nb - 1 if miss_c > 0 else nb - 2
        gl = 0.0
        hl = 0.0
        cl = 0.0
        for b in range(last + 1):
            if h[b, 2] == 0.0:
                # an empty bin splits the rows exactly as the bin before it,
                # with the same gain, which only a strictly greater one beats
                continue
            gl += h[b, 0]
            hl += h[b, 1]
            cl += h[b, 2]
            cr = count - cl
            if cr < min_samples_leaf:
                break
            if cl < min_samples_leaf:
                continue
            hr = sum_h - hl
            if hl < min_child_weight or hr < min_child_weight:
                continue
            gain = (leaf_score(gl, hl, reg_lambda, reg_alpha)
                    + leaf_score(sum_g - gl, hr, reg_lambda, reg_alpha) - parent)
            if gain > best:
                best = gain
                best_bin = b
                # without missing values in the node, unseen NaN at predict
                # time follow the larger child
                best_ml = 1 if (miss_c == 0 and cl >= cr) else 0
                best_gl = gl
                best_hl = hl
                best_cl = cl
        # pass 2: missing values go left
        if miss_c > 0:
            gl = miss_g
            hl = miss_h
            cl = miss_c
            for b in range(nb - 1):
                if h[b, 2] == 0.0:
                    continue
                gl += h[b, 0]
                hl += h[b, 1]
                cl += h[b, 2]
                cr = count - cl
                if cr < min_samples_leaf:
                    break
                if cl < min_samples_leaf:
                    continue
                hr = sum_h - hl
                if hl < min_child_weight or hr < min_child_weight:
                    continue
                gain = (leaf_score(gl, hl, reg_lambda, reg_alpha)
                        + leaf_score(sum_g - gl, hr, reg_lambda, reg_alpha) - parent)
                if gain > best:
                    best = gain
                    best_bin = b
                    best_ml = 1
                    best_gl = gl
                    best_hl = hl
                    best_cl = cl
        out[k, GAIN] = best
        out[k, BIN] = best_bin
        out[k, MISSING_LEFT] = best_ml
        out[k, LEFT_G] = best_gl
        out[k, LEFT_H] = best_hl
        out[k, LEFT_C] = best_cl
