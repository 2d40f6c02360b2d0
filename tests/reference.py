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


def category_bins(values: np.ndarray, categories: np.ndarray) -> np.ndarray:
    """Bin of every value of a categorical feature: the index of the equal category
    (compared in float64), MISSING_BIN for NaN and for values equal to no category."""
    values = np.asarray(values, dtype=np.float64)
    bins = np.full(values.shape, MISSING_BIN, dtype=np.uint8)
    for b, c in enumerate(categories):
        bins[values == c] = b
    return bins


def bin_matrix(X: np.ndarray, bin_edges: np.ndarray, n_edges: np.ndarray,
               is_categorical=None) -> np.ndarray:
    """``bin_column`` (``category_bins`` for categorical features) of every column with
    its first ``n_edges[f]`` edges.

    Feature-major: uint8 of shape (n_features, n_samples).
    """
    out = np.empty((X.shape[1], X.shape[0]), dtype=np.uint8)
    for f in range(X.shape[1]):
        edges = bin_edges[f, : n_edges[f]]
        categorical = is_categorical is not None and is_categorical[f]
        out[f] = category_bins(X[:, f], edges) if categorical else bin_column(X[:, f], edges)
    return out


def category_table(values: np.ndarray, max_bins: int) -> np.ndarray:
    """Sorted distinct non-NaN values; beyond ``max_bins`` of them, the ``max_bins`` most
    frequent (among equal counts the smaller value first)."""
    values = np.asarray(values, dtype=np.float64)
    counts: dict[float, int] = {}
    for v in values[~np.isnan(values)].tolist():
        counts[v] = counts.get(v, 0) + 1
    kept = sorted(counts, key=lambda v: (-counts[v], v))[:max_bins]
    return np.array(sorted(kept), dtype=np.float64)


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
               reg_alpha=0.0, min_samples_leaf=1, min_child_weight=0.0, hessian_counts=0.0):
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
    With ``hessian_counts`` (``leaf_count="hessian"``, LightGBM's estimate) a child's
    rows for ``min_samples_leaf`` are its hessian sum times count / sum_h, rounded half
    up.

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
        nl, nr = cl, cr
        if hessian_counts and sum_h > 0:
            nl, nr = (np.floor(hl * count / sum_h + 0.5), np.floor(hr * count / sum_h + 0.5))
        if min(nl, nr) < min_samples_leaf or min(hl, hr) < min_child_weight:
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


# ---- categorical splits ------------------------------------------------------------------
def bitset_of(bins) -> np.ndarray:
    """uint32 (8,) bitset with bit b (word b // 32, bit b % 32) set for every b in bins."""
    bitset = np.zeros(8, dtype=np.uint32)
    for b in bins:
        bitset[int(b) // 32] |= np.uint32(1 << (int(b) % 32))
    return bitset


def has_bit(bitset, b) -> bool:
    """Whether bit b (word b // 32, bit b % 32) of the bitset is set."""
    return bool((int(bitset[int(b) // 32]) >> (int(b) % 32)) & 1)


def bins_of(bitset) -> frozenset:
    """Inverse of ``bitset_of``: the set of bins whose bit is set."""
    return frozenset(b for b in range(N_BINS) if has_bit(bitset, b))


def present_categories(hist_f, n_bins_non_missing) -> list:
    """Bins with rows in the node, in bin order, the missing bin (a category) last."""
    nb = int(n_bins_non_missing)
    bins = [b for b in range(nb) if hist_f[b, 2] > 0]
    return bins + ([MISSING_BIN] if hist_f[MISSING_BIN, 2] > 0 else [])


def categorical_candidate(hist_f, left, sum_g, sum_h, count, *, reg_lambda=0.0, reg_alpha=0.0,
                          cat_l2=0.0, min_samples_leaf=1, min_child_weight=0.0):
    """(gain, gl, hl, cl) of sending the bins ``left`` left; gain -inf if invalid.

    Children are scored with lambda + cat_l2, the parent with lambda alone.
    """
    gl, hl, cl = (hist_f[sorted(left)].sum(axis=0) if left else np.zeros(3))
    gr, hr, cr = sum_g - gl, sum_h - hl, count - cl
    if min(cl, cr) < min_samples_leaf or min(hl, hr) < min_child_weight:
        return -np.inf, gl, hl, cl
    lam = reg_lambda + cat_l2
    gain = (leaf_score(gl, hl, lam, reg_alpha) + leaf_score(gr, hr, lam, reg_alpha)
            - leaf_score(sum_g, sum_h, reg_lambda, reg_alpha))
    return gain, gl, hl, cl


def exhaustive_categorical(hist_f, n_bins_non_missing, sum_g, sum_h, count,
                           max_left=None, **params):
    """Best gain over every partition of the node's categories in two non-empty sets
    (2^(m-1) - 1 of them), with at most ``max_left`` categories on the left side when
    given (then both orientations of a partition are tried). -inf if none is valid."""
    cats = present_categories(hist_f, n_bins_non_missing)
    m = len(cats)
    best = -np.inf
    for mask in range(1, 2 ** m - 1):
        left = [c for j, c in enumerate(cats) if mask >> j & 1]
        if max_left is None and not mask & 1:
            continue  # the first category on the left: each partition once
        if max_left is not None and len(left) > max_left:
            continue
        best = max(best, categorical_candidate(hist_f, left, sum_g, sum_h, count,
                                               **params)[0])
    return best


def categorical_candidates(hist_f, n_bins_non_missing, sum_g, sum_h, count, *,
                           cat_smooth=10.0, max_cat_threshold=32, max_cat_to_onehot=4,
                           max_cat_ordered=0, **params):
    """Left sets the documented scan tries, in scan order: [(left bins, gain, gl, hl, cl)].

    With m categories present (the missing bin counted): m <= max_cat_to_onehot tries
    each category alone on the left (m > 1), children scored with plain lambda;
    otherwise the categories are ordered by G / (H + cat_smooth) (stable) and the
    left set is each prefix of that order with 1..min(max_cat_threshold, m - 1)
    categories, then each such suffix, children scored with lambda + cat_l2
    (LightGBM's convention: cat_l2 only penalises the sorted scan's many-category
    sets; the parent always has plain lambda). When the feature has at most
    ``max_cat_ordered`` categories (``n_bins_non_missing``) and m >= 3, then each
    prefix of 1..m - 1 categories in bin order (the missing bin last), children scored
    with plain lambda. When it has more, the sorted scan leaves out the categories of
    fewer than ``cat_smooth`` rows (they stay right): its prefixes and suffixes are of
    the order without them, at most min(max_cat_threshold, m - 1) categories long.
    """
    cats = present_categories(hist_f, n_bins_non_missing)
    m = len(cats)
    if m <= max_cat_to_onehot:
        params = {**params, "cat_l2": 0.0}
        lefts = [[c] for c in cats] if m > 1 else []
    else:
        ratio = [hist_f[c, 0] / (hist_f[c, 1] + cat_smooth) for c in cats]
        order = [cats[j] for j in sorted(range(m), key=lambda j: ratio[j])]  # stable
        if n_bins_non_missing > max_cat_ordered:
            order = [c for c in order if hist_f[c, 2] >= cat_smooth]
        u = len(order)
        k_max = min(max_cat_threshold, m - 1, u)
        lefts = ([order[:k] for k in range(1, k_max + 1)]
                 + [order[u - k:] for k in range(1, k_max + 1)])
    out = [(frozenset(left), *categorical_candidate(hist_f, left, sum_g, sum_h, count,
                                                    **params))
           for left in lefts]
    if m >= 3 and n_bins_non_missing <= max_cat_ordered:
        plain = {**params, "cat_l2": 0.0}
        out += [(frozenset(cats[:k]), *categorical_candidate(hist_f, cats[:k], sum_g, sum_h,
                                                             count, **plain))
                for k in range(1, m)]
    return out


def best_categorical_split(hist_f, n_bins_non_missing, sum_g, sum_h, count, **params):
    """First best of ``categorical_candidates``: (gain, left bins, gl, hl, cl);
    (-inf, empty set, 0, 0, 0) when no candidate is valid."""
    best = (-np.inf, frozenset(), 0.0, 0.0, 0.0)
    for left, gain, gl, hl, cl in categorical_candidates(hist_f, n_bins_non_missing, sum_g,
                                                         sum_h, count, **params):
        if gain > best[0]:
            best = (gain, left, gl, hl, cl)
    return best


# ---- partition -------------------------------------------------------------------------
def goes_left(bins: np.ndarray, bin_threshold: int, missing_left: bool) -> np.ndarray:
    """Boolean mask: bin <= threshold, or the missing bin when missing values go left."""
    return np.where(bins == MISSING_BIN, bool(missing_left), bins <= bin_threshold)


def goes_left_categorical(bins: np.ndarray, bitset) -> np.ndarray:
    """Boolean mask: the bin (the missing bin included) is in the bitset's set."""
    return np.isin(bins, sorted(bins_of(bitset)))


def partition(rows, X_binned, feature, bin_threshold, missing_left, bitset=None):
    """Stable partition of ``rows``: (left rows then right rows, n_left); a categorical
    split when ``bitset`` is given.

    ``X_binned`` is feature-major (n_features, n_samples).
    """
    bins = X_binned[feature, rows]
    mask = (goes_left(bins, bin_threshold, missing_left) if bitset is None
            else goes_left_categorical(bins, bitset))
    return np.concatenate([rows[mask], rows[~mask]]), int(mask.sum())


# ---- prediction ------------------------------------------------------------------------
def leaf_of(tree, X, *, binned=False, categories=None) -> np.ndarray:
    """Leaf node reached by every row, traversing ``tree`` one row at a time.

    ``tree`` needs ``feature``, ``left``, ``right``, ``missing_left`` and
    ``threshold`` (raw X of shape (n_samples, n_features), NaN missing) or
    ``bin_threshold`` (binned X, feature-major: (n_features, n_samples)).
    A node with ``is_categorical`` set sends a row left when its bin is in the
    node's ``cat_bitset``; on raw X the bin is ``category_bins`` of the value
    with the feature's categories ``categories[f]`` (a list of arrays).
    """
    rows = X.T if binned else X  # one row of feature values at a time
    is_categorical = getattr(tree, "is_categorical", np.zeros(tree.left.size))
    leaves = np.empty(rows.shape[0], dtype=np.intp)
    for i, x in enumerate(rows):
        node = 0
        while tree.left[node] >= 0:
            v = x[tree.feature[node]]
            if is_categorical[node]:
                b = v if binned else category_bins(v, categories[tree.feature[node]])
                go_left = has_bit(tree.cat_bitset[node], b)
            elif binned:
                missing, left = v == MISSING_BIN, v <= tree.bin_threshold[node]
            else:
                missing, left = np.isnan(v), v <= tree.threshold[node]
            if not is_categorical[node]:
                go_left = tree.missing_left[node] == 1 if missing else left
            node = tree.left[node] if go_left else tree.right[node]
        leaves[i] = node
    return leaves


def predict(trees, outputs, X, n_outputs, *, binned=False, categories=None) -> np.ndarray:
    """(n_samples, n_outputs) sum of leaf values, tree by tree in the given order.

    ``X`` is raw (n_samples, n_features), or binned and feature-major
    (n_features, n_samples) when ``binned``; ``categories`` as in ``leaf_of``.
    """
    n_samples = X.shape[1] if binned else X.shape[0]
    out = np.zeros((n_samples, n_outputs), dtype=np.float64)
    for tree, k in zip(trees, outputs, strict=True):
        out[:, k] += tree.value[leaf_of(tree, X, binned=binned, categories=categories)]
    return out
