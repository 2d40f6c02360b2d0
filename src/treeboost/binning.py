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
from dataclasses import dataclass

import numba
import numpy as np

from ._dtypes import MAX_BINS, MISSING_BIN, X_BINNED_DTYPE, X_DTYPE, readonly
from ._kernels.binning import map_to_bins
from ._kernels.sparse import bin_sparse_columns
from ._sparse import issparse

#: rows sampled to compute quantile edges (LightGBM samples 200,000 as well)
BIN_SUBSAMPLE = 200_000
#: features are binned in up to this many runs per thread (one feature a run below)
_RUNS_PER_THREAD = 16


def _category_table(distinct: np.ndarray, counts: np.ndarray, max_bins: int) -> np.ndarray:
    """Sorted categories of one feature; beyond ``max_bins`` the most frequent ones.

    ``distinct`` are the feature's sorted values and ``counts`` their counts.
    The categories left out share the missing bin with NaN and unseen values.
    """
    if distinct.size > max_bins:
        # stable sort on -count: among equal counts the smaller category wins
        keep = np.sort(np.argsort(-counts, kind="stable")[:max_bins])
        distinct = distinct[keep]
    return distinct


def _midpoints(a: np.ndarray, b: np.ndarray, mid: np.ndarray) -> np.ndarray:
    """Repair ``mid``, midpoints of ``a < b`` computed the fast way, where they failed.

    ``(a + b) / 2`` and ``b - (b - a) / 2`` overflow to +-inf when a and b are near the
    float64 maximum (1e308 and 1.7e308, or -1e308 and 1e308): there ``a/2 + b/2`` is
    used, exact for normal floats. A midpoint that rounds onto ``b`` (neighbouring
    floats) becomes ``a``, so that ``b`` stays on the right of the edge ``x <= edge``.
    Elsewhere ``mid`` is kept bit for bit, so models of ordinary data do not change.
    """
    bad = ~np.isfinite(mid)
    if bad.any():
        mid[bad] = a[bad] * 0.5 + b[bad] * 0.5
    onto_b = mid >= b
    if onto_b.any():
        mid[onto_b] = a[onto_b]
    return mid


def _feature_edges(distinct: np.ndarray, counts: np.ndarray, max_bins: int) -> np.ndarray:
    """Upper bin edges of one feature from its sorted distinct values and their counts.

    Midpoints between distinct values when there are at most ``max_bins``,
    else the quantiles ``np.percentile(values, q, method="midpoint")`` of the
    values repeated by their counts, computed from the counts alone (sparse
    columns give their zeros as one count, never as an array).
    """
    if distinct.size == 0:
        return np.empty(0, dtype=X_DTYPE)
    if distinct.size <= max_bins:
        # float64 midpoints even for float32 input: a float32 midpoint of two
        # neighbouring values could round onto one of them
        with np.errstate(over="ignore"):
            edges = distinct[:-1] + distinct[1:]
            edges *= 0.5
        return _midpoints(distinct[:-1], distinct[1:], edges)
    n = int(counts.sum())
    # NumPy's "midpoint" rule: the order statistics floor((n-1)q) and
    # ceil((n-1)q), averaged as b - (b - a) / 2 when they differ
    position = (n - 1) * (np.linspace(0, 100, max_bins + 1)[1:-1] / 100)
    lower = np.floor(position)
    upper_rank = np.minimum(lower + 1, n - 1)
    ends = np.cumsum(counts)
    a = distinct[np.searchsorted(ends, lower, side="right")]
    b = distinct[np.searchsorted(ends, upper_rank, side="right")]
    with np.errstate(over="ignore", invalid="ignore"):
        mid = _midpoints(a, b, b - (b - a) * 0.5)
    edges = np.where(position == lower, a, mid)
    # ties in the data make equal quantiles; keep each edge once, and make
    # sure no edge equals the maximum (the last bin must not be empty)
    edges = np.unique(edges)
    return edges[edges < distinct[-1]]


def _value_counts(values: np.ndarray, n_zeros: int = 0):
    """Sorted distinct values (float64) and their counts, plus ``n_zeros`` zeros."""
    distinct, counts = np.unique(values.astype(X_DTYPE, copy=False), return_counts=True)
    if n_zeros:
        at = int(np.searchsorted(distinct, 0.0))
        if at < distinct.size and distinct[at] == 0.0:
            counts[at] += n_zeros
        else:
            distinct = np.insert(distinct, at, 0.0)
            counts = np.insert(counts, at, n_zeros)
    return distinct, counts


@dataclass
class SparseBinned:
    """Binned sparse data, per feature (CSC), zero-bin entries left out.

    For feature f the rows ``rows[col_ptr[f]:col_ptr[f+1]]`` (ascending) have
    bins ``bins[col_ptr[f]:col_ptr[f+1]]``; every other row is in bin
    ``zero_bin[f]``, the bin of the value 0.
    """

    col_ptr: np.ndarray  # int64 (n_features + 1,)
    rows: np.ndarray  # uint32 (n_stored,)
    bins: np.ndarray  # uint8 (n_stored,)
    zero_bin: np.ndarray  # uint8 (n_features,)
    n_samples: int

    @property
    def shape(self) -> tuple[int, int]:
        """(n_features, n_samples), like dense binned data."""
        return self.zero_bin.size, self.n_samples

    @property
    def nbytes(self) -> int:
        """Memory held by the arrays."""
        return sum(a.nbytes for a in (self.col_ptr, self.rows, self.bins, self.zero_bin))

    def column(self, feature: int, out: np.ndarray) -> np.ndarray:
        """Write the bins of every row for one feature into ``out`` (uint8, n_samples)."""
        out.fill(self.zero_bin[feature])
        start, stop = self.col_ptr[feature], self.col_ptr[feature + 1]
        out[self.rows[start:stop]] = self.bins[start:stop]
        return out


def canonical_sparse(X, fmt: str):
    """``X`` as a canonical CSR or CSC matrix with int32 indices and int64 indptr.

    Canonical (sorted indices, no duplicates) is what the kernels' binary
    searches rely on; the caller's matrix is never modified in place.
    """
    copied = X.format != fmt
    X = X.asformat(fmt)
    if not X.has_canonical_format:
        if not copied:
            X = X.copy()
            copied = True
        X.sum_duplicates()
    if X.shape[0] >= 2**31 or X.shape[1] >= 2**31:
        raise ValueError(f"sparse input of shape {X.shape} is too large (2**31 rows or "
                         "columns at most)")
    indices = X.indices.astype(np.int32, copy=False)
    indptr = X.indptr.astype(np.int64, copy=False)
    import scipy.sparse as sp  # X is sparse: SciPy is already imported

    cls = sp.csr_matrix if fmt == "csr" else sp.csc_matrix
    out = cls((X.data, indices, indptr), shape=X.shape, copy=False)
    # scipy may downcast the index arrays it is given; put ours back
    out.indices, out.indptr = indices, indptr
    out.has_canonical_format = True
    return out


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

    def fit(self, X) -> BinMapper:
        """Learn the bin edges of every column of ``X``.

        ``X`` is float64 or float32 with NaN for missing values, or a SciPy
        sparse matrix (its zeros are counted, never materialised).
        """
        return self._fit(X)

    def fit_sample(self, sample: np.ndarray, categories: dict) -> BinMapper:
        """Learn the bin edges from rows drawn beforehand, as ``fit`` would from all rows.

        For data never held whole (``Dataset.from_chunks``): ``fit(X)`` on more
        than ``subsample`` rows reads its numerical features from the rows
        ``np.sort(default_rng(random_state).choice(n_rows, subsample, replace=False))``
        and its categorical features from every row. Given those rows and the
        categorical features' value counts over every row, the edges are ``fit(X)``'s.

        Parameters
        ----------
        sample : ndarray of shape (n_sample_rows, n_features)
            The sampled rows, dense, NaN for missing values; used whole.
        categories : dict of {int: (bool, ndarray, ndarray)}
            For each categorical feature: whether it has missing values, its
            sorted distinct non-NaN values (float64) and their counts (int64).

        Returns
        -------
        self : BinMapper
        """
        return self._fit(np.asarray(sample), categories)

    def _fit(self, X, categories=None) -> BinMapper:
        n_samples, n_features = X.shape
        categorical = (np.zeros(n_features, dtype=bool) if self.is_categorical is None
                       else np.asarray(self.is_categorical, dtype=bool))
        self.is_categorical_ = categorical.astype(np.uint8)
        rng = np.random.default_rng(self.random_state)
        sample = None
        if n_samples > self.subsample and categories is None:
            sample = np.sort(rng.choice(n_samples, self.subsample, replace=False))
        todo = np.arange(n_features)
        if issparse(X):
            X = canonical_sparse(X, "csc")
            fit_feature = self._sparse_feature_fitter(X, categorical, sample)
            # a column without stored values has only zeros: its edges are those of
            # the value 0 alone, found once (hashed data has a million such columns,
            # and a call each took longer than the fit)
            empty = X.indptr[1:] == X.indptr[:-1]
            todo = np.flatnonzero(~empty)
        else:
            fit_feature = self._dense_feature_fitter(X, categorical, sample, categories)
        # NumPy's sorts release the GIL, so features are binned in parallel
        # threads; each feature's edges do not depend on the others. A task bins a
        # run of features: a task (a future, a lock hand-over) per feature took most
        # of the binning of wide data of few rows (30 x 20,000: 2.6 of 3.5 s), and
        # tens of MB of futures at once
        n_threads = max(1, numba.get_num_threads())
        runs = np.array_split(todo, min(todo.size, _RUNS_PER_THREAD * n_threads) or 1)
        with ThreadPoolExecutor(n_threads) as pool:
            results = [r for run in pool.map(lambda run: [fit_feature(f) for f in run], runs)
                       for r in run]
        # as wide as the most edges of any feature, not max_bins: 2**20 columns of a
        # few values each would otherwise hold 2 GiB of padding
        width = max([1] + [edges.size for _, edges in results])
        if todo.size < n_features:
            empty_results = {cat: fit_feature(int(np.flatnonzero(empty & (categorical == cat))[0]))
                             for cat in (False, True) if (empty & (categorical == cat)).any()}
            width = max([width] + [e.size for _, e in empty_results.values()])
        self.bin_edges_ = np.full((n_features, width), np.inf, dtype=X_DTYPE)
        self.n_edges_ = np.zeros(n_features, dtype=np.int32)
        self.has_missing_ = np.zeros(n_features, dtype=bool)
        if todo.size < n_features:
            for cat, (has_missing, edges) in empty_results.items():
                columns = empty & (categorical == cat)  # a mask: no index per column
                self.has_missing_[columns] = has_missing
                if edges.size:  # a numerical column of zeros alone has no edge
                    self.bin_edges_[columns, : edges.size] = edges
                self.n_edges_[columns] = edges.size
        for f, (has_missing, edges) in zip(todo, results, strict=True):
            self.has_missing_[f] = has_missing
            self.bin_edges_[f, : edges.size] = edges
            self.n_edges_[f] = edges.size
        self.n_bins_non_missing_ = np.where(categorical, self.n_edges_,
                                            self.n_edges_ + 1).astype(np.int32)
        return self

    def _edges(self, values: np.ndarray, categorical: bool, n_zeros: int = 0):
        """(has_missing, edges) of one feature's values (+ ``n_zeros`` implicit zeros)."""
        nan = np.isnan(values)
        has_missing = bool(nan.any())
        distinct, counts = _value_counts(values[~nan] if has_missing else values, n_zeros)
        if categorical:
            return has_missing, _category_table(distinct, counts, self.max_bins)
        return has_missing, _feature_edges(distinct, counts, self.max_bins)

    def _dense_feature_fitter(self, X, categorical, sample, categories=None):
        X_sample = X if sample is None else X[sample]

        def fit_feature(f):
            if categories is not None and categorical[f]:
                has_missing, distinct, counts = categories[f]
                return has_missing, _category_table(distinct, counts, self.max_bins)
            # categories are read from every row so that rare ones keep a bin
            return self._edges(X[:, f] if categorical[f] else X_sample[:, f], categorical[f])

        return fit_feature

    def _sparse_feature_fitter(self, X, categorical, sample):
        n_samples = X.shape[0]
        in_sample = None
        if sample is not None:
            in_sample = np.zeros(n_samples, dtype=bool)
            in_sample[sample] = True

        def fit_feature(f):
            start, stop = X.indptr[f], X.indptr[f + 1]
            values = X.data[start:stop]
            n_rows = n_samples
            if in_sample is not None and not categorical[f]:
                # the rows of the dense subsample, so sparse and dense bins agree
                values = values[in_sample[X.indices[start:stop]]]
                n_rows = sample.size
            return self._edges(values, categorical[f], n_zeros=n_rows - values.size)

        return fit_feature

    def transform(self, X):
        """Return the binned data.

        Dense ``X`` gives ``uint8`` of shape (n_features, n_samples),
        feature-major: C order makes each feature's bins contiguous, and its
        Numba type is the same whatever the shape (an (n, 1) array would be
        both C- and F-contiguous and compile the kernels twice). A SciPy
        sparse ``X`` gives a ``SparseBinned`` of the same shape.
        """
        if issparse(X):
            return self._transform_sparse(X)
        X_binned = np.empty((X.shape[1], X.shape[0]), dtype=X_BINNED_DTYPE)
        map_to_bins(readonly(X), self.bin_edges_, self.n_edges_, self.is_categorical_,
                    MISSING_BIN, X_binned)
        return X_binned

    def _transform_sparse(self, X) -> SparseBinned:
        X = canonical_sparse(X, "csc")
        n_features = X.shape[1]
        zero_bin = self.transform(np.zeros((1, n_features), dtype=X_DTYPE))[:, 0].copy()
        col_ptr = np.zeros(n_features + 1, dtype=np.int64)
        args = (readonly(X.indptr), readonly(X.indices), readonly(X.data), self.bin_edges_,
                self.n_edges_, self.is_categorical_, MISSING_BIN, readonly(zero_bin), col_ptr)
        # two passes: count the entries kept per feature, then fill at offsets
        bin_sparse_columns(*args, np.empty(0, dtype=np.uint32),
                           np.empty(0, dtype=X_BINNED_DTYPE), True)
        np.cumsum(col_ptr, out=col_ptr)
        rows = np.empty(int(col_ptr[-1]), dtype=np.uint32)
        bins = np.empty(int(col_ptr[-1]), dtype=X_BINNED_DTYPE)
        bin_sparse_columns(*args, rows, bins, False)
        return SparseBinned(col_ptr, rows, bins, zero_bin, X.shape[0])

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
