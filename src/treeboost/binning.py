"""Binning: turn raw feature values into small integer bins, once per fit.

``BinMapper.fit`` learns, for each feature, the upper edges of its bins:
the midpoints between distinct values when a feature has at most
``max_bins`` of them (so small data is split exactly like CART, SPEC §1.5),
otherwise quantiles of a seeded subsample. A categorical feature's "edges"
are its sorted category values and each category gets its own bin. NaN (and
a category unseen in training) goes to the dedicated ``MISSING_BIN``.
``transform`` maps values with x <= edges[b] to bin b, so a split "bin <= b"
is the same as the raw threshold "x <= edges[b]".
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from ._dtypes import MAX_BINS, MISSING_BIN, X_BINNED_DTYPE, X_DTYPE, readonly
from ._kernels.binning import map_to_bins

#: rows sampled to compute quantile edges (LightGBM samples 200,000 as well)
BIN_SUBSAMPLE = 200_000


def _category_table(values: np.ndarray, max_bins: int) -> np.ndarray:
    """Sorted categories of one feature; beyond ``max_bins`` the most frequent ones.

    The categories left out share the missing bin with NaN and unseen values.
    """
    categories, counts = np.unique(values.astype(X_DTYPE, copy=False), return_counts=True)
    if categories.size > max_bins:
        # stable sort on -count: among equal counts the smaller category wins
        keep = np.sort(np.argsort(-counts, kind="stable")[:max_bins])
        categories = categories[keep]
    return categories


def _feature_edges(values: np.ndarray, max_bins: int) -> np.ndarray:
    """Upper bin edges of one feature (NaN already removed)."""
    if values.size == 0:
        return np.empty(0, dtype=X_DTYPE)
    # float64 midpoints even for float32 input: a float32 midpoint of two
    # neighbouring values could round onto one of them
    values = values.astype(X_DTYPE, copy=False)
    distinct = np.unique(values)
    if distinct.size <= max_bins:
        edges = distinct[:-1] + distinct[1:]
        edges *= 0.5
        return edges
    percentiles = np.linspace(0, 100, max_bins + 1)[1:-1]
    edges = np.percentile(values, percentiles, method="midpoint")
    # ties in the data make equal quantiles; keep each edge once, and make
    # sure no edge equals the maximum (the last bin must not be empty)
    edges = np.unique(edges)
    return edges[edges < distinct[-1]]


class BinMapper:
    """Learn bin edges per feature and map raw values to ``uint8`` bins.

    Parameters
    ----------
    max_bins : int, default=255
        Maximum number of bins for non-missing values of a feature (2 to 255).
        Missing values always have their own extra bin.
    subsample : int, default=200_000
        Number of rows sampled (without replacement) to compute quantiles.
    random_state : int or numpy.random.Generator, default=None
        Seed of the row sample.
    is_categorical : array-like of bool of shape (n_features,), default=None
        Which features are categorical (none by default). Their categories
        are read from every row, not the subsample, so rare ones keep a bin.

    Attributes
    ----------
    bin_edges_ : ndarray of shape (n_features, max_bins)
        Upper edges of the bins (sorted categories for a categorical
        feature), padded with +inf after ``n_edges_[f]``.
    n_edges_ : ndarray of shape (n_features,)
        Number of edges of each feature: it has ``n_edges_ + 1`` value bins,
        or ``n_edges_`` (one per category) if it is categorical.
    is_categorical_ : ndarray of shape (n_features,), dtype uint8
        1 for categorical features.
    n_bins_non_missing_ : ndarray of shape (n_features,)
        Number of value bins of each feature.
    has_missing_ : ndarray of shape (n_features,)
        Whether the feature had missing values in the data seen by ``fit``.
    """

    def __init__(self, max_bins: int = MAX_BINS, subsample: int = BIN_SUBSAMPLE,
                 random_state=None, is_categorical=None):
        self.max_bins = max_bins
        self.subsample = subsample
        self.random_state = random_state
        self.is_categorical = is_categorical

    def fit(self, X: np.ndarray) -> BinMapper:
        """Learn the bin edges of every column of ``X`` (float64, NaN allowed)."""
        n_samples, n_features = X.shape
        categorical = (np.zeros(n_features, dtype=bool) if self.is_categorical is None
                       else np.asarray(self.is_categorical, dtype=bool))
        self.is_categorical_ = categorical.astype(np.uint8)
        X_all = X
        rng = np.random.default_rng(self.random_state)
        if n_samples > self.subsample:
            rows = np.sort(rng.choice(n_samples, self.subsample, replace=False))
            X = X[rows]
        n_slots = self.max_bins
        self.bin_edges_ = np.full((n_features, n_slots), np.inf, dtype=X_DTYPE)
        self.n_edges_ = np.zeros(n_features, dtype=np.int32)
        self.has_missing_ = np.zeros(n_features, dtype=bool)

        def fit_feature(f):
            col = X_all[:, f] if categorical[f] else X[:, f]
            nan = np.isnan(col)
            has_missing = bool(nan.any())
            values = col[~nan] if has_missing else col
            if categorical[f]:
                return has_missing, _category_table(values, self.max_bins)
            return has_missing, _feature_edges(values, self.max_bins)

        # NumPy's sorts release the GIL, so features are binned in parallel
        # threads; each feature's edges do not depend on the others
        with ThreadPoolExecutor(max(1, numba.get_num_threads())) as pool:
            results = list(pool.map(fit_feature, range(n_features)))
        for f, (has_missing, edges) in enumerate(results):
            self.has_missing_[f] = has_missing
            self.bin_edges_[f, : edges.size] = edges
            self.n_edges_[f] = edges.size
        self.n_bins_non_missing_ = np.where(categorical, self.n_edges_,
                                            self.n_edges_ + 1).astype(np.int32)
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        """Return the binned data, feature-major: ``uint8`` of shape (n_features, n_samples).

        Feature-major C order makes each feature's bins contiguous, and its
        Numba type is the same whatever the shape (an (n, 1) array would be
        both C- and F-contiguous and compile the kernels twice).
        """
        X_binned = np.empty((X.shape[1], X.shape[0]), dtype=X_BINNED_DTYPE)
        map_to_bins(readonly(X), self.bin_edges_, self.n_edges_, self.is_categorical_,
                    MISSING_BIN, X_binned)
        return X_binned

    def fit_transform(self, X: np.ndarray) -> np.ndarray:
        """``fit`` then ``transform``."""
        return self.fit(X).transform(X)

    def thresholds(self, feature: np.ndarray, bin_threshold: np.ndarray) -> np.ndarray:
        """Raw thresholds of splits given as (feature, bin): ``x <= edges[b]``.

        A split that sends every value left and only missing values right has
        ``bin_threshold == n_edges``; its threshold is the largest float.
        Categorical splits have no threshold (0 is returned).
        """
        thr = self.bin_edges_[feature, np.minimum(bin_threshold, self.bin_edges_.shape[1] - 1)]
        thr = np.where(bin_threshold >= self.n_edges_[feature], np.finfo(X_DTYPE).max, thr)
        thr = np.where(self.is_categorical_[feature] == 1, 0.0, thr)
        return thr.astype(X_DTYPE)
