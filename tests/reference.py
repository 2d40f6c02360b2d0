"""Slow NumPy twins of the kernels (DESIGN §4.1), written from their documentation.

Each twin does the same job as a kernel of ``treeboost._kernels`` in the most
obvious way (searchsorted, bincount, an exhaustive loop over candidate splits,
boolean masks), so a test can compare the two on random data. The twins
deliberately share no code with the package beyond dtype constants.

Binned data is feature-major like the package's: ``X_binned[f]`` holds the bins
of feature ``f`` for every row, shape (n_features, n_samples). Raw X is
(n_samples, n_features).
"""

from __future__ import annotations

import numpy as np

from treeboost._dtypes import MISSING_BIN, N_BINS


# ---- binning ---------------------------------------------------------------------------
def bin_column(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Bin of every value: the first b with x <= edges[b]; NaN -> MISSING_BIN."""
    bins = np.searchsorted(edges, values, side="left")
    bins[np.isnan(values)] = MISSING_BIN
    return bins.astype(np.uint8)


def bin_matrix(X: np.ndarray, bin_edges: np.ndarray, n_edges: np.ndarray) -> np.ndarray:
    """``bin_column`` of every column with its first ``n_edges[f]`` edges.

    Feature-major: uint8 of shape (n_features, n_samples).
    """
    out = np.empty((X.shape[1], X.shape[0]), dtype=np.uint8)
    for f in range(X.shape[1]):
        out[f] = bin_column(X[:, f], bin_edges[f, : n_edges[f]])
    return out


# ---- histograms ------------------------------------------------------------------------
def histogram(X_binned, sample_indices, gradient, hessian, features=None):
    """float64 (n_features, N_BINS, 3): per-bin sum of g, sum of h and count of the rows.

    ``X_binned`` is feature-major (n_features, n_samples). Features not listed
    in ``features`` keep an all-zero histogram.
    """
    n_features = X_binned.shape[0]
    features = range(n_features) if features is None else features
    idx = np.asarray(sample_indices, dtype=np.intp)
    g = gradient[idx].astype(np.float64)
    h = hessian[idx].astype(np.float64)
    hist = np.zeros((n_features, N_BINS, 3), dtype=np.float64)
    for f in features:
        bins = X_binned[f, idx].astype(np.intp)
        hist[f, :, 0] = np.bincount(bins, weights=g, minlength=N_BINS)
        hist[f, :, 1] = np.bincount(bins, weights=h, minlength=N_BINS)
        hist[f, :, 2] = np.bincount(bins, minlength=N_BINS)
    return hist


# ---- split finding ---------------------------------------------------------------------
def soft_threshold(g: float, alpha: float) -> float:
    """T(G) = sign(G) max(|G| - alpha, 0)."""
    return float(np.sign(g) * max(abs(g) - alpha, 0.0))


def leaf_score(g: float, h: float, reg_lambda: float, reg_alpha: float) -> float:
    """T(G)^2 / (H + lambda); 0 when H + lambda <= 0 (an empty node)."""
    den = h + reg_lambda
    if den <= 0:
        return 0.0
    return soft_threshold(g, reg_alpha) ** 2 / den


def best_split(hist_f, n_bins_non_missing, sum_g, sum_h, count, *, reg_lambda=0.0,
               reg_alpha=0.0, min_samples_leaf=1, min_child_weight=0.0):
    """Exhaustive best split of one feature's histogram (n_bins, 3).

    Candidates, in this order (the first of equal gains wins):
    missing rows right and values in bins 0..b left, for b in 0..nb-2, plus
    b = nb-1 ("every value left") when the node has missing rows; then, only
    when the node has missing rows, the same thresholds b in 0..nb-2 with the
    missing rows left. A split is valid when both children have at least
    ``min_samples_leaf`` rows and ``min_child_weight`` hessian. Gain as in
    ``_kernels/splitting.py``::

        T(G_L)^2/(H_L+lambda) + T(G_R)^2/(H_R+lambda) - T(G)^2/(H+lambda)

    Without missing rows, ``missing_left`` is 1 when the left child has at
    least as many rows as the right one (unseen NaN follow the larger child).

    Returns
    -------
    (gain, bin, missing_left, left_g, left_h, left_count); gain is -inf and
    bin -1 when no candidate is valid.
    """
    nb = int(n_bins_non_missing)
    miss = hist_f[MISSING_BIN]
    has_missing = miss[2] > 0
    parent = leaf_score(sum_g, sum_h, reg_lambda, reg_alpha)
    candidates = [(b, 0) for b in range(nb if has_missing else nb - 1)]
    if has_missing:
        candidates += [(b, 1) for b in range(nb - 1)]
    best = (-np.inf, -1, 0, 0.0, 0.0, 0.0)
    for b, missing_left in candidates:
        gl, hl, cl = hist_f[: b + 1].sum(axis=0) + (miss if missing_left else 0.0)
        gr, hr, cr = sum_g - gl, sum_h - hl, count - cl
        if min(cl, cr) < min_samples_leaf or min(hl, hr) < min_child_weight:
            continue
        gain = (leaf_score(gl, hl, reg_lambda, reg_alpha)
                + leaf_score(gr, hr, reg_lambda, reg_alpha) - parent)
        if gain > best[0]:
            ml = missing_left if has_missing else int(cl >= cr)
            best = (gain, b, ml, gl, hl, cl)
    return best


def best_split_of_rows(X_binned, rows, gradient, hessian, n_bins_non_missing, **params):
    """Best (gain, feature, bin, missing_left) of a node over all features; first max wins.

    ``X_binned`` is feature-major (n_features, n_samples).
    """
    hist = histogram(X_binned, rows, gradient, hessian)
    sum_g, sum_h, count = hist[0].sum(axis=0)
    best = (-np.inf, -1, -1, 0)
    for f in range(X_binned.shape[0]):
        gain, b, ml, *_ = best_split(hist[f], n_bins_non_missing[f], sum_g, sum_h, count,
                                     **params)
        if gain > best[0]:
            best = (gain, f, b, ml)
    return best


# ---- partition -------------------------------------------------------------------------
def goes_left(bins: np.ndarray, bin_threshold: int, missing_left: bool) -> np.ndarray:
    """Boolean mask: bin <= threshold, or the missing bin when missing values go left."""
    return np.where(bins == MISSING_BIN, bool(missing_left), bins <= bin_threshold)


def partition(rows, X_binned, feature, bin_threshold, missing_left):
    """Stable partition of ``rows``: (left rows then right rows, n_left).

    ``X_binned`` is feature-major (n_features, n_samples).
    """
    mask = goes_left(X_binned[feature, rows], bin_threshold, missing_left)
    return np.concatenate([rows[mask], rows[~mask]]), int(mask.sum())


# ---- prediction ------------------------------------------------------------------------
def leaf_of(tree, X, *, binned=False) -> np.ndarray:
    """Leaf node reached by every row, traversing ``tree`` one row at a time.

    ``tree`` needs ``feature``, ``left``, ``right``, ``missing_left`` and
    ``threshold`` (raw X of shape (n_samples, n_features), NaN missing) or
    ``bin_threshold`` (binned X, feature-major: (n_features, n_samples)).
    """
    rows = X.T if binned else X  # one row of feature values at a time
    leaves = np.empty(rows.shape[0], dtype=np.intp)
    for i, x in enumerate(rows):
        node = 0
        while tree.left[node] >= 0:
            v = x[tree.feature[node]]
            if binned:
                missing, left = v == MISSING_BIN, v <= tree.bin_threshold[node]
            else:
                missing, left = np.isnan(v), v <= tree.threshold[node]
            go_left = tree.missing_left[node] == 1 if missing else left
            node = tree.left[node] if go_left else tree.right[node]
        leaves[i] = node
    return leaves


def predict(trees, outputs, X, n_outputs, *, binned=False) -> np.ndarray:
    """(n_samples, n_outputs) sum of leaf values, tree by tree in the given order.

    ``X`` is raw (n_samples, n_features), or binned and feature-major
    (n_features, n_samples) when ``binned``.
    """
    n_samples = X.shape[1] if binned else X.shape[0]
    out = np.zeros((n_samples, n_outputs), dtype=np.float64)
    for tree, k in zip(trees, outputs, strict=True):
        out[:, k] += tree.value[leaf_of(tree, X, binned=binned)]
    return out
