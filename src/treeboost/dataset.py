"""Input data as users hold it: data frames and the categorical-feature mask.

pandas DataFrames (NumPy- or Arrow-backed columns), polars DataFrames and
pyarrow Tables are read as pandas frames; a frame becomes a float64 matrix:
numeric, boolean and nullable columns as numbers (missing as NaN),
categorical columns (``category``, Arrow dictionary, polars Categorical and
Enum) as their category codes.
The codes refer to the categories seen in training, which the estimator
keeps, so a frame at predict time is coded against the same list: an
unseen category becomes NaN and goes where missing values go.

``Dataset`` holds what ``train`` reads of one data set, checked once: the
features (array, sparse matrix or frame) and their bins, feature names and
categorical mask, labels, weights, per-row ``init_score`` and query groups.
"""

from __future__ import annotations

import itertools
import numbers
import os

import numpy as np

from ._dtypes import MAX_BINS, X_BINNED_DTYPE, X_DTYPE
from .binning import BIN_SUBSAMPLE


def as_pandas(X):
    """X as a pandas DataFrame if it is a data frame or table, else None.

    polars frames and pyarrow tables are converted with Arrow-backed columns,
    which keep their nulls and dictionary (categorical) types.
    """
    root = type(X).__module__.split(".")[0]
    if root == "pandas" and hasattr(X, "dtypes"):
        return X
    if root == "polars" and hasattr(X, "to_pandas"):
        return X.to_pandas(use_pyarrow_extension_array=True)
    if root == "pyarrow" and hasattr(X, "schema") and hasattr(X, "to_pandas"):
        import pandas as pd

        return X.to_pandas(types_mapper=pd.ArrowDtype)
    return None


def _is_category(dtype) -> bool:
    """pandas ``category`` or an Arrow dictionary column."""
    return getattr(dtype, "name", None) == "category" or str(dtype).startswith("dictionary<")


def _categories_of(col) -> list:
    if getattr(col.dtype, "name", None) == "category":
        return col.cat.categories.tolist()
    # Arrow dictionary column: its distinct values, sorted like pandas orders them
    return sorted(col.dropna().unique().tolist())


def _is_numeric(dtype) -> bool:
    """Numbers or booleans: NumPy, pandas nullable, or Arrow-backed."""
    arrow = getattr(dtype, "pyarrow_dtype", None)
    if arrow is not None:
        import pyarrow as pa

        return (pa.types.is_integer(arrow) or pa.types.is_floating(arrow)
                or pa.types.is_boolean(arrow) or pa.types.is_decimal(arrow))
    return getattr(dtype, "kind", "O") in "biuf"


def check_no_categories(X, categories: dict, feature_names) -> None:
    """Refuse an array without column types for a model fitted with categorical columns.

    The model codes a categorical column against its training categories by label; a
    plain array holds numbers that could be labels or codes (of which order?), and
    reading them either way would silently give a wrong prediction for some users.
    """
    if not categories:
        return
    names = [repr(str(feature_names[j])) if feature_names is not None else f"#{j}"
             for j in sorted(categories)]
    raise TypeError(f"X is a {type(X).__name__} without column types, but the model was "
                    f"fitted on a data frame with categorical column(s) "
                    f"{', '.join(names[:5])}{', ...' if len(names) > 5 else ''}: pass a "
                    "data frame with those columns as 'category' dtype")


def frame_to_array(frame, categories: dict | None = None):
    """Convert a DataFrame to a float64 C-ordered matrix.

    Parameters
    ----------
    frame : pandas.DataFrame
        Numeric, boolean, nullable and ``category`` columns.
    categories : dict of {int: list}, default=None
        Categories of each ``category`` column seen in training, by column
        position. None when fitting: they are read from the frame.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        The matrix; categorical columns hold category codes.
    categories : dict of {int: list}
        The categories the codes refer to.
    """
    import pandas as pd

    fitting = categories is None
    categories = {} if fitting else categories
    X = np.empty(frame.shape, dtype=X_DTYPE)
    for j, (name, col) in enumerate(frame.items()):
        if fitting and _is_category(col.dtype):
            categories[j] = _categories_of(col)
        if j in categories:
            if _is_numeric(col.dtype):
                # numbers could be labels or codes: guessing would silently mispredict
                raise TypeError(f"column {name!r} was categorical in training but has "
                                f"dtype {col.dtype} now: convert it with "
                                "astype('category')")
            # look values up in the training table: unseen and missing give -1
            codes = pd.Index(categories[j]).get_indexer(col.to_numpy(dtype=object))
            X[:, j] = np.where(codes < 0, np.nan, codes)
        elif _is_category(col.dtype):
            raise TypeError(f"column {name!r} is categorical ({col.dtype}) but was numeric "
                            "in training: convert it to numbers")
        elif _is_numeric(col.dtype):
            X[:, j] = col.to_numpy(dtype=X_DTYPE, na_value=np.nan)
        else:
            raise TypeError(f"column {name!r} has dtype {col.dtype}: convert it to numbers "
                            "or to the 'category' dtype")
    return X, categories


def categorical_mask(spec, n_features: int, feature_names, category_columns) -> np.ndarray:
    """Resolve ``categorical_features`` to a boolean mask of shape (n_features,).

    Parameters
    ----------
    spec : {"from_dtype"}, None, or array-like of int, str or bool
        The estimator parameter.
    n_features : int
        Number of features.
    feature_names : ndarray of str or None
        Column names of the training data, for names in ``spec``.
    category_columns : iterable of int
        Positions of the pandas ``category`` columns ("from_dtype").

    Returns
    -------
    ndarray of bool
    """
    mask = np.zeros(n_features, dtype=bool)
    if spec is None:
        return mask
    if isinstance(spec, str):  # "from_dtype", checked by the parameter table
        mask[list(category_columns)] = True
        return mask
    if isinstance(spec, np.ndarray) and spec.dtype == bool and spec.ndim == 1 and spec.size:
        # the estimators' mask: as the general path below makes it, without a list of
        # a Python object per column (hashed data: 2**20 of them, 1 s and 8 MB a call)
        if spec.size != n_features:
            raise ValueError(f"categorical_features has {spec.size} booleans but X has "
                             f"{n_features} features")
        return spec.copy()
    items = list(spec)
    if items and all(isinstance(v, (bool, np.bool_)) for v in items):
        if len(items) != n_features:
            raise ValueError(f"categorical_features has {len(items)} booleans but X has "
                             f"{n_features} features")
        return np.asarray(items, dtype=bool)
    for v in items:
        if isinstance(v, str):
            if feature_names is None or v not in list(feature_names):
                raise ValueError(f"categorical_features names {v!r}, which is not a column "
                                 "of X")
            mask[list(feature_names).index(v)] = True
        elif isinstance(v, numbers.Integral) and -n_features <= v < n_features:
            mask[v] = True
        else:
            raise ValueError(f"categorical_features has index {v!r} out of range for "
                             f"{n_features} features")
    return mask


class Dataset:
    """Training or validation data for ``treeboost.train``: checked once, binned once.

    The features are binned on first use (``construct``) and kept, so one
    ``Dataset`` serves any number of ``train`` calls with the same ``max_bins``
    (a study's configurations on one fold). A validation set built with
    ``reference=train_set`` is binned with the training set's bins, and a data
    frame given to it is coded with the training frame's categories.

    Parameters
    ----------
    data : ndarray of shape (n_samples, n_features), scipy sparse matrix or data frame
        Numeric features (float64 or float32; other numbers are converted to
        float64), NaN for missing values. A pandas or polars DataFrame or a
        pyarrow Table is read column by column (``frame_to_array``): its
        column names become ``feature_names`` and its categorical columns
        are coded and marked categorical.
    label : array-like of shape (n_samples,), default=None
        Targets, encoded as the loss expects (class indices 0..K-1 for
        classification).
    label_upper_bound : array-like of shape (n_samples,), default=None
        For ``loss="aft"`` only: the upper bound of each row's survival time, ``label``
        being its lower bound (XGBoost's ``label_lower_bound`` and
        ``label_upper_bound``): equal bounds an observed time, ``inf`` a right-censored
        row, a lower bound of 0 a left-censored one, others interval-censored. ``train``
        gives the loss, and the metrics of a validation set, the two columns ``[label,
        label_upper_bound]``; without it every time of an AFT set is observed. NaN and a
        bound below its ``label`` are refused.

        .. versionadded:: 0.1.0
    weight : array-like of shape (n_samples,), default=None
        Non-negative row weights, not all 0; None for all ones. A row of weight 0
        is not there, as in the estimators' ``fit``: a set without ``reference``
        (a training set) drops those rows here, with their labels, ``init_score``
        and places in their query groups, before any binning; a validation set
        (``reference``) keeps them, at no weight in its metrics.
    init_score : array-like of shape (n_samples,) or (n_samples, n_outputs), default=None
        Per-row raw scores training starts from (LightGBM's ``init_score``,
        XGBoost's ``base_margin``), one column per output (per class for
        softmax). With it the model's F0 is 0 and the gradients of stage 1
        are taken at these scores; the model's predictions do not include
        them: add them to ``predict_raw`` yourself. On a validation set they
        are added to its scores for the evaluation log and early stopping.

        .. versionadded:: 0.1.0
    group : array-like of int of shape (n_groups,), default=None
        Sizes of the query groups, in row order (LightGBM's ``group``); they
        must be positive and sum to n_samples. Exclusive with ``qid``.

        .. versionadded:: 0.1.0
    qid : array-like of shape (n_samples,), default=None
        Query id of every row (XGBoost's ``qid``); the rows of one query must
        be contiguous. Exclusive with ``group``.

        .. versionadded:: 0.1.0
    feature_names : array-like of str of shape (n_features,), default=None
        Names of the features; by default a data frame's column names (or the
        reference's names). They are kept by the trained Booster and written
        to its model file.

        .. versionadded:: 0.1.0
    categorical_features : array-like of bool, int or str, default=None
        Mask, indices or names of the categorical features (values are
        category codes; negative codes and NaN are missing). None: a data
        frame's categorical columns (none for an array); a validation set
        takes its reference's.
    max_bins : int, default=255
        Most bins per feature, the missing-value bin excluded.
    reference : Dataset, default=None
        The training set whose bins this (validation) set uses.
    random_state : int or numpy.random.Generator, default=None
        Draws the rows bin edges are computed from on large data; None uses
        the binning stream of ``train``'s ``random_state``.

    Attributes
    ----------
    group_offsets : ndarray of int64 of shape (n_groups + 1,) or None
        Row offsets of the query groups: group g is rows
        ``group_offsets[g]:group_offsets[g + 1]``.
    pandas_categories : dict of {int: list}
        Categories of a data frame's categorical columns, by column position
        (the codes in ``data`` refer to them).
    """

    def __init__(self, data, label=None, *, weight=None, init_score=None, group=None,
                 qid=None, feature_names=None, categorical_features=None, max_bins=MAX_BINS,
                 reference=None, random_state=None, label_upper_bound=None):
        if reference is not None and not isinstance(reference, Dataset):
            raise TypeError(f"reference must be a Dataset, got {type(reference).__name__}")
        data, names, self.pandas_categories = _features(data, reference)
        self.data = data
        self._set_rows(data.shape, label, weight, init_score, group, qid, feature_names, names,
                       categorical_features, max_bins, reference, random_state,
                       label_upper_bound=label_upper_bound)
        if reference is None:
            self._drop_rows_of_weight_0()

    def _drop_rows_of_weight_0(self) -> None:
        """Drop the rows of weight 0, before anything is binned (the rule of every fit).

        A zero weight means the row is not there, as in the estimators' ``fit``: kept, it
        would shape the bins, count toward ``min_samples_leaf`` and be drawn in
        subsamples, and ``train`` would grow another model than ``fit`` on the same data.
        A validation set (``reference``) keeps them: they count for nothing in its
        weighted metrics, and its rows stay those the caller gave.
        """
        keep = self.weight > 0
        if keep.all():
            return
        rows = np.flatnonzero(keep)
        if hasattr(self.data, "tocsc"):  # sparse: canonical CSC again after the selection
            from .binning import canonical_sparse

            self.data = canonical_sparse(self.data[rows], "csc")
        else:
            self.data = self.data[rows]
        self.label = None if self.label is None else self.label[rows]
        if self.label_upper_bound is not None:
            self.label_upper_bound = self.label_upper_bound[rows]
        self.weight = self.weight[rows]
        self.init_score = None if self.init_score is None else self.init_score[rows]
        if self.group_offsets is not None:  # a query loses its rows of weight 0, or goes
            sizes = np.diff(self.group_offsets)
            query = np.repeat(np.arange(sizes.size), sizes)
            kept = np.bincount(query[rows], minlength=sizes.size)
            self.group_offsets = np.concatenate(([0], np.cumsum(kept[kept > 0]))).astype(
                np.int64)

    def _set_rows(self, shape, label, weight, init_score, group, qid, feature_names,
                  frame_names, categorical_features, max_bins, reference, random_state,
                  label_upper_bound=None):
        """Check and keep everything but the features, for data of ``shape``."""
        n, n_features = shape
        self._n_features = n_features
        self.feature_names = _feature_names(feature_names, frame_names, reference, n_features)
        self.label = None if label is None else _row_vector("label", label, n, columns=True)
        self.label_upper_bound = (None if label_upper_bound is None else
                                  _upper_bounds(label_upper_bound, self.label, n))
        self.weight = (np.ones(n) if weight is None else _row_vector("weight", weight, n))
        if weight is not None:
            _check_weight(self.weight)
        self.init_score = None if init_score is None else check_init_score(init_score, n)
        self.group_offsets = group_offsets(group, qid, n)
        if categorical_features is None and reference is not None:
            self.is_categorical = reference.is_categorical.copy()
        else:
            spec = ("from_dtype" if categorical_features is None and self.pandas_categories
                    else categorical_features)
            self.is_categorical = categorical_mask(spec, n_features, self.feature_names,
                                                   self.pandas_categories)
        self.max_bins = max_bins
        self.reference = reference
        self.random_state = random_state
        self._bin_mapper = None
        self._binned = None

    @classmethod
    def from_chunks(cls, chunks, *, label=None, weight=None, group=None, qid=None,
                    init_score=None, feature_names=None, categorical_features=None,
                    max_bins=MAX_BINS, reference=None, bin_mapper=None, random_state=None,
                    binned_path=None, sample_rows=BIN_SUBSAMPLE) -> "Dataset":
        """Build a binned Dataset from row chunks, never holding the float matrix whole.

        The rows are the chunks' rows in order. Two passes over the chunks: the
        first gathers a row sample (and the categorical features' values) and
        fits the bins, the second bins each chunk into its columns of the
        binned matrix (1 byte a value, an eighth of float64). With
        ``bin_mapper`` or ``reference`` the bins are given and only the second
        pass is made. One chunk is held at a time (a memory-mapped chunk is
        released before the next is read). The result is binned
        (``constructed``), has no float ``data`` (None) and trains like a
        ``Dataset`` of the concatenated chunks.

        Parameters
        ----------
        chunks : iterable of ndarray, or callable returning one
            2-D arrays of shape (n_chunk_rows, n_features), the same
            ``n_features`` for all (float64 or float32 kept, other numbers
            converted chunk by chunk; NaN for missing values), e.g. slices of
            ``np.load(path, mmap_mode="r")``; or a dask array or dataframe, whose
            row blocks (partitions) are computed one at a time, once per pass.
            A list, tuple or other iterable that can be iterated again, or a
            function of no arguments returning a fresh iterator at every call; a
            one-shot iterator (a generator) is refused unless ``bin_mapper`` or
            ``reference`` gives the bins and a
            row array gives the number of rows.
        label, weight, init_score, group, qid : array-like, default=None
            As for ``Dataset``, whole arrays for all rows (8 bytes a row, small
            next to the features), not parts of the chunks. The first given
            fixes the number of rows (the chunks must have as many); without
            any, an extra first pass reads the chunks' shapes, and else, without
            given bins, the first chunk is read once more for its width.
        feature_names, categorical_features, max_bins, reference : optional
            As for ``Dataset``.
        bin_mapper : BinMapper, default=None
            Fitted bins to use, e.g. a model's or another Dataset's
            ``bin_mapper``; before ``reference``'s.
        random_state : int or numpy.random.Generator, default=None
            Draws the sampled rows when there are more than ``sample_rows``.
        binned_path : str or path-like, default=None
            Write the binned matrix to this new ``.npy`` file, memory-mapped and
            kept by the Dataset (``np.load(binned_path)`` reads it back); an
            existing file is refused. Default: the matrix is held in memory.
        sample_rows : int, default=BIN_SUBSAMPLE (200,000)
            Rows the bin edges of numerical features are computed from. The
            sample is held in memory as float64 while the bins are fitted.

        Returns
        -------
        Dataset
            Binned, with ``data`` None.

        Raises
        ------
        ValueError
            Naming the argument: chunks of different widths or not 2-D, no
            rows, infinite values, a one-shot iterator without given bins, an
            existing ``binned_path``, row arrays whose length differs from
            the chunks' rows, or, without ``reference``, rows of weight 0 (the
            chunks' rows are all kept, where ``Dataset`` drops those).
        TypeError
            If ``chunks`` is one array or not iterable, or ``reference`` was
            built from a data frame with categorical columns (chunks are arrays,
            whose codes cannot be checked against its categories).

        Notes
        -----
        The bins are those of ``BinMapper(max_bins, subsample=sample_rows,
        random_state=random_state, is_categorical=...).fit(X)`` on the
        concatenated chunks ``X``, at any size: with at most ``sample_rows``
        rows the sample is every row; with more, the same rows ``fit`` draws are
        drawn (from the row count, by the same generator calls) and the
        categorical features' values are counted over every row, as ``fit``
        does. So with ``sample_rows`` at its default and the same
        ``random_state``, the bins, and then the models ``train`` fits, are
        bit for bit those of ``Dataset(X, label, random_state=random_state)``;
        with ``random_state=None`` and more than ``sample_rows`` rows the sample
        differs from call to call. A ``reference`` not yet binned is binned here,
        with its own ``random_state``, not ``train``'s.
        """
        from .binning import BinMapper

        if reference is not None and not isinstance(reference, Dataset):
            raise TypeError(f"reference must be a Dataset, got {type(reference).__name__}")
        if not isinstance(sample_rows, numbers.Integral) or sample_rows < 1:
            raise ValueError(f"sample_rows must be a positive integer, got {sample_rows!r}")
        if binned_path is not None and os.path.exists(binned_path):
            raise ValueError(f"binned_path {os.fspath(binned_path)!r} exists: give a new file")
        passes, reiterable = _chunk_passes(chunks)
        self = cls.__new__(cls)
        self.data = None
        self.pandas_categories = {} if reference is None else reference.pandas_categories
        if self.pandas_categories:  # chunks are arrays: their categories cannot be coded
            check_no_categories(np.empty((0, 0)), self.pandas_categories,
                                reference.feature_names)
        if bin_mapper is None and reference is not None:
            bin_mapper = reference.construct().bin_mapper
        n, source = _rows_given(label=label, weight=weight, init_score=init_score, qid=qid,
                                group=group)
        if (bin_mapper is None or n is None) and not reiterable:
            what = " and ".join(
                [*(["the bins (bin_mapper= or reference=)"] if bin_mapper is None else []),
                 *(["the number of rows (label=, weight=, init_score=, qid= or group=)"]
                   if n is None else [])])
            raise ValueError(f"chunks is a one-shot iterator, which can be read only once, "
                             f"so {what} must be given; or pass chunks as a list or as a "
                             "function returning a fresh iterator at every call")
        n_features = None if bin_mapper is None else int(bin_mapper.n_edges_.shape[0])
        if n is None:  # a pass over the shapes: cheap for arrays and memory maps
            n, n_features = _count_rows(passes(), n_features)
        elif n_features is None:  # the width, for the categorical mask, from one chunk
            n_features = _count_rows(itertools.islice(passes(), 1), None)[1]
        if n == 0:
            raise ValueError("chunks hold no rows" if source is None else
                             f"there are no rows: {source}")
        self._set_rows((n, n_features), label, weight, init_score, group, qid, feature_names,
                       None, categorical_features, max_bins, reference, random_state)
        if reference is None and not (self.weight > 0).all():
            # the chunks are read as they come, so their rows of weight 0 cannot be left out
            # of the bins as Dataset(...) leaves them out (_drop_rows_of_weight_0)
            raise ValueError(f"weight is 0 on {int((self.weight == 0).sum())} of {n} rows "
                             f"(first at row {int(np.argmin(self.weight > 0))}): rows of "
                             "weight 0 are not trained on, and from_chunks keeps every row "
                             "of the chunks: leave them out of the chunks")
        if bin_mapper is None:
            sample, categories = _sample_pass(passes(), n, source, n_features, sample_rows,
                                              np.flatnonzero(self.is_categorical), random_state)
            bin_mapper = BinMapper(max_bins, subsample=sample_rows, random_state=random_state,
                                   is_categorical=self.is_categorical)
            # every row in the sample: fit reads the categories from it, as in memory
            bin_mapper = (bin_mapper.fit(sample) if categories is None
                          else bin_mapper.fit_sample(sample, categories))
            del sample
        self._bin_mapper = bin_mapper
        self._binned = _bin_pass(passes(), n, source, bin_mapper, binned_path)
        return self

    @property
    def n_features(self) -> int:
        """Number of feature columns."""
        return self._n_features

    @property
    def group_sizes(self):
        """Sizes of the query groups, ndarray of int64, or None without groups."""
        return None if self.group_offsets is None else np.diff(self.group_offsets)

    @property
    def constructed(self) -> bool:
        """Whether the features have been binned."""
        return self._binned is not None

    def construct(self, bin_mapper=None, random_state=None) -> "Dataset":
        """Bin the features once (later calls return at once).

        Parameters
        ----------
        bin_mapper : BinMapper, default=None
            Fitted bins to use (a continued model's); by default the
            reference's, or bins fitted on this data.
        random_state : int or numpy.random.Generator, default=None
            Used when this set fits its own bins and has no ``random_state``.

        Returns
        -------
        self : Dataset
        """
        from .binning import BinMapper

        if self._binned is not None:
            if bin_mapper is not None and bin_mapper is not self._bin_mapper:
                raise ValueError("this Dataset is already binned with other bins than the "
                                 "model's: build a new Dataset to continue training on it")
            return self
        if bin_mapper is None and self.reference is not None:
            bin_mapper = self.reference.construct(random_state=random_state).bin_mapper
        if bin_mapper is None:
            rs = self.random_state if self.random_state is not None else random_state
            bin_mapper = BinMapper(self.max_bins, random_state=rs,
                                   is_categorical=self.is_categorical).fit(self.data)
        n_binned = bin_mapper.n_edges_.shape[0]
        if n_binned != self.n_features:
            raise ValueError(f"data has {self.n_features} features, its bins {n_binned}")
        self._bin_mapper = bin_mapper
        self._binned = bin_mapper.transform(self.data)
        return self

    @property
    def bin_mapper(self):
        """The fitted ``BinMapper`` (after ``construct``)."""
        if self._bin_mapper is None:
            raise RuntimeError("the Dataset is not binned yet: call construct()")
        return self._bin_mapper

    @property
    def binned(self):
        """The binned features, (n_features, n_samples) uint8 or sparse (after ``construct``)."""
        if self._binned is None:
            raise RuntimeError("the Dataset is not binned yet: call construct()")
        return self._binned

    def init_raw(self, n_outputs: int):
        """``init_score`` as raw scores of shape (n_outputs, n_samples), or None.

        Parameters
        ----------
        n_outputs : int
            Raw scores per row of the loss being trained.

        Returns
        -------
        ndarray of float64 or None

        Raises
        ------
        ValueError
            If ``init_score`` has not one column per output.
        """
        if self.init_score is None:
            return None
        score = self.init_score
        if score.ndim == 1:
            score = score[:, None]
        if score.shape[1] != n_outputs:
            shape = "(n_samples,)" if n_outputs == 1 else f"(n_samples, {n_outputs})"
            raise ValueError(f"init_score has shape {self.init_score.shape} but the loss has "
                             f"{n_outputs} output(s): give shape {shape}")
        return np.ascontiguousarray(score.T)


def _chunk_passes(chunks):
    """(function giving a fresh iterator of the chunks, whether it can be called twice)."""
    if isinstance(chunks, np.ndarray):
        raise TypeError("chunks must be an iterable of 2-D arrays, not one array: pass "
                        "[data], or use Dataset(data)")
    if hasattr(chunks, "__dask_graph__"):  # a dask array or dataframe: its row blocks
        return _dask_blocks(chunks), True
    if callable(chunks):
        return (lambda: iter(chunks())), True
    try:
        it = iter(chunks)
    except TypeError:
        raise TypeError("chunks must be an iterable of 2-D arrays or a function returning "
                        f"one, got {type(chunks).__name__}") from None
    if it is chunks:  # an iterator is its own iterator: a second pass would find it spent
        return (lambda: it), False
    return (lambda: iter(chunks)), True


def _dask_blocks(collection):
    """A function giving a fresh iterator of a dask array's or dataframe's row blocks,
    each computed when it is reached (every pass computes them again)."""
    if hasattr(collection, "get_partition"):  # a dask dataframe
        return lambda: (collection.get_partition(i).compute().to_numpy()
                        for i in range(collection.npartitions))
    if collection.ndim != 2:
        raise ValueError(f"chunks: a dask array must be 2-D, got {collection.ndim} "
                         "dimension(s)")
    rows = collection.rechunk({1: -1})
    return lambda: (rows.blocks[i, 0].compute() for i in range(rows.numblocks[0]))


def _rows_given(**arrays):
    """(number of rows, what says so) from the first row array given, or (None, None)."""
    for name, values in arrays.items():
        if values is None:
            continue
        if name == "group":
            n = int(np.sum(values))
            return n, f"group sizes sum to {n}"
        shape = np.shape(values)
        if not shape:
            raise ValueError(f"{name} must have one entry per row, got a scalar")
        return shape[0], f"{name} has {shape[0]} entries"
    return None, None


def _check_chunk(chunk, i: int, n_features, like: str = "the first chunk has",
                 convert: bool = False) -> np.ndarray:
    """Chunk ``i`` as a 2-D array of ``n_features`` columns (float if ``convert``)."""
    a = np.asarray(chunk)
    if a.ndim != 2:
        raise ValueError(f"chunks: chunk {i} must be a 2-D matrix, got {a.ndim} "
                         "dimension(s)")
    if n_features is not None and a.shape[1] != n_features:
        raise ValueError(f"chunks: chunk {i} has {a.shape[1]} columns, {like} {n_features}")
    if convert and a.dtype not in (np.float64, np.float32):
        a = a.astype(X_DTYPE)
    return a


def _count_rows(chunks, n_features) -> tuple[int, int]:
    """(rows, columns) of the chunks, checked; ``n_features`` None takes the first's."""
    n = 0
    like = "the bins have" if n_features is not None else "the first chunk has"
    for i, chunk in enumerate(chunks):
        n_rows, n_features = _check_chunk(chunk, i, n_features, like).shape
        n += n_rows
        del chunk  # one chunk mapped at a time
    if n_features is None:
        raise ValueError("chunks is empty: it gave no chunk")
    return n, n_features


def _row_mismatch(source, n: int, got) -> ValueError:
    if source is None:  # counted by an earlier pass
        return ValueError(f"chunks gave {n} rows in one pass and {got} in another: every "
                          "pass must give the same chunks")
    return ValueError(f"{source} but the chunks hold {got} rows")


def _count_values(acc: list, values: np.ndarray) -> None:
    """Add one chunk's values of a feature to ``acc`` = [has_missing, distinct, counts]."""
    nan = np.isnan(values)
    acc[0] = acc[0] or bool(nan.any())
    distinct, counts = np.unique(values[~nan].astype(X_DTYPE, copy=False), return_counts=True)
    merge_counts(acc, distinct, counts)


def merge_counts(acc: list, distinct: np.ndarray, counts: np.ndarray) -> None:
    """Add sorted distinct values and their counts to ``acc`` = [_, distinct, counts]."""
    acc[1], where = np.unique(np.concatenate((acc[1], distinct.astype(X_DTYPE, copy=False))),
                              return_inverse=True)
    merged = np.zeros(acc[1].size, dtype=np.int64)
    np.add.at(merged, where, np.concatenate((acc[2], counts)))
    acc[2] = merged


def _sample_pass(chunks, n: int, source, n_features: int, sample_rows: int,
                 categorical_features: np.ndarray, random_state):
    """(sampled rows as float64, categories or None): ``BinMapper.fit``'s inputs.

    ``fit`` draws ``sample_rows`` of ``n`` rows with the calls made here and reads its
    categorical features from every row: their values are counted chunk by chunk.
    With at most ``sample_rows`` rows the sample is all of them (None for categories).
    """
    rows = None
    if n > sample_rows:
        rng = np.random.default_rng(random_state)
        rows = np.sort(rng.choice(n, sample_rows, replace=False))
    sample = np.empty((n if rows is None else rows.size, n_features), dtype=X_DTYPE)
    categories = (None if rows is None else
                  {int(f): [False, np.empty(0, dtype=X_DTYPE), np.empty(0, dtype=np.int64)]
                   for f in categorical_features})
    start = 0
    for i, chunk in enumerate(chunks):
        a = _check_chunk(chunk, i, n_features, convert=True)
        stop = start + a.shape[0]
        if stop > n:
            raise _row_mismatch(source, n, f"more than {n}")
        if rows is None:
            sample[start:stop] = a
        else:
            lo, hi = np.searchsorted(rows, (start, stop))
            sample[lo:hi] = a[rows[lo:hi] - start]
            for f, acc in categories.items():
                _count_values(acc, a[:, f])
        start = stop
        del chunk, a  # a memory-mapped chunk is unmapped before the next is mapped
    if start != n:
        raise _row_mismatch(source, n, start)
    return sample, None if categories is None else {f: tuple(v) for f, v in categories.items()}


def _bin_pass(chunks, n: int, source, bin_mapper, binned_path):
    """The binned matrix (n_features, n) of the chunks, in memory or memory-mapped."""
    n_features = int(bin_mapper.n_edges_.shape[0])
    shape = (n_features, n)
    if binned_path is not None:
        try:  # created here, never overwritten: it could be another Dataset's bins
            with open(binned_path, "xb"):
                pass
        except FileExistsError:
            raise ValueError(f"binned_path {os.fspath(binned_path)!r} exists: give a new "
                             "file") from None
    out = None
    try:
        out = (np.empty(shape, dtype=X_BINNED_DTYPE) if binned_path is None else
               np.lib.format.open_memmap(binned_path, mode="w+", dtype=X_BINNED_DTYPE,
                                         shape=shape))
        start = 0
        for i, chunk in enumerate(chunks):
            a = _check_chunk(chunk, i, n_features, "the bins have", convert=True)
            if np.isinf(a).any():
                raise ValueError(f"chunks: chunk {i} contains infinity; use NaN for missing "
                                 "values")
            stop = start + a.shape[0]
            if stop > n:
                raise _row_mismatch(source, n, f"more than {n}")
            if stop > start:
                # binned apart, then copied: the kernel's output stays contiguous (one
                # compilation) and the copy is a chunk's bins, an eighth of its floats
                out[:, start:stop] = bin_mapper.transform(a)
            start = stop
            del chunk, a  # a memory-mapped chunk is unmapped before the next is mapped
        if start != n:
            raise _row_mismatch(source, n, start)
    except BaseException:
        if binned_path is not None:
            out = None  # unmapped before the file goes
            os.remove(binned_path)
        raise
    if binned_path is not None:
        out.flush()
    return out


def _features(data, reference):
    """(float matrix or CSC matrix, column names or None, pandas categories) of ``data``."""
    from ._sparse import issparse
    from .binning import canonical_sparse

    known = None if reference is None else reference.pandas_categories
    frame = as_pandas(data)
    if frame is not None:
        # a validation frame is coded against the training frame's categories
        data, categories = frame_to_array(frame, known)
        return data, [str(c) for c in frame.columns], categories
    if known:
        check_no_categories(data, known, reference.feature_names)
    if issparse(data):  # binning reads columns: convert once for fit and transform
        return canonical_sparse(data, "csc"), None, {}
    data = np.asarray(data)
    if data.dtype not in (np.float64, np.float32):
        data = data.astype(X_DTYPE)
    if data.ndim != 2:
        raise ValueError(f"data must be a 2-D matrix, got {data.ndim} dimension(s)")
    if np.isinf(data).any():
        raise ValueError("data contains infinity; use NaN for missing values")
    return data, None, {}


def _feature_names(given, from_frame, reference, n_features: int):
    """The feature names: given, else the frame's, else the reference's; checked."""
    names = from_frame
    if given is not None:
        given = [str(v) for v in given]
        if from_frame is not None and given != from_frame:
            raise ValueError(f"feature_names {given[:5]} differ from the data frame's "
                             f"columns {from_frame[:5]}")
        names = given
    ref_names = None if reference is None else reference.feature_names
    if names is None:
        names = ref_names
    if names is None:
        return None
    if len(names) != n_features or len(set(names)) != len(names):
        raise ValueError(f"feature_names must be {n_features} distinct names, got "
                         f"{len(names)} ({len(set(names))} distinct)")
    if ref_names is not None and names != ref_names:
        raise ValueError(f"feature_names {names[:5]} differ from the reference's "
                         f"{ref_names[:5]}")
    return names


def check_init_score(values, n: int) -> np.ndarray:
    """``init_score`` as float64 of shape (n,) or (n, n_outputs), finite.

    Parameters
    ----------
    values : array-like
        Per-row raw scores.
    n : int
        Number of rows.

    Returns
    -------
    ndarray of float64

    Raises
    ------
    ValueError
        Naming ``init_score``, if its shape or values are wrong.
    """
    try:
        score = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"init_score must be numbers: {exc}") from None
    if score.ndim not in (1, 2) or score.shape[0] != n:
        raise ValueError(f"init_score must have shape (n_samples,) or (n_samples, n_outputs) "
                         f"with n_samples={n}, got shape {score.shape}")
    if not np.isfinite(score).all():
        raise ValueError("init_score contains NaN or infinity")
    return score


def group_offsets(group, qid, n: int):
    """Row offsets (int64, shape (n_groups + 1,)) of query groups given by sizes or ids.

    Parameters
    ----------
    group : array-like of int or None
        Group sizes in row order (LightGBM's ``group``).
    qid : array-like or None
        Query id of every row (XGBoost's ``qid``); each query's rows contiguous.
    n : int
        Number of rows.

    Returns
    -------
    ndarray of int64 or None
        ``[0, size_0, size_0 + size_1, ..., n]``; None if both are None.
    """
    if group is not None and qid is not None:
        raise ValueError("give query groups as group (sizes) or qid (ids per row), not both")
    if qid is not None:
        qid = np.asarray(qid)
        if qid.ndim != 1 or qid.shape[0] != n:
            raise ValueError(f"qid must have one entry per row ({n}), got shape {qid.shape}")
        if n == 0:
            return np.zeros(1, dtype=np.int64)
        missing = (np.isnan(qid) if qid.dtype.kind == "f" else
                   np.array([v is None or v != v for v in qid.tolist()]) if qid.dtype.kind == "O"
                   else np.zeros(n, dtype=bool))
        if missing.any():  # NaN != NaN: each would start a query of its own
            raise ValueError(f"qid has NaN or None at row {int(np.argmax(missing))} "
                             f"({int(missing.sum())} row(s) in all): every row needs a "
                             "query id")
        starts = np.flatnonzero(qid[1:] != qid[:-1]) + 1
        first = qid[np.concatenate(([0], starts))]
        if np.unique(first).size != first.size:
            raise ValueError("qid must hold each query's rows contiguously (sort the rows by "
                             "qid): a query id appears in more than one run of rows")
        return np.concatenate(([0], starts, [n])).astype(np.int64)
    if group is None:
        return None
    sizes = np.asarray(group)
    if sizes.ndim != 1 or sizes.dtype.kind not in "iuf" or (
            sizes.dtype.kind == "f" and not np.all(sizes == np.round(sizes))):
        raise ValueError(f"group must be a 1-D array of integer group sizes, got "
                         f"dtype {sizes.dtype} and shape {sizes.shape}")
    sizes = sizes.astype(np.int64)
    if (sizes <= 0).any():
        raise ValueError("group sizes must be positive")
    if sizes.sum() != n:
        raise ValueError(f"group sizes sum to {int(sizes.sum())} but the data has {n} rows")
    return np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)


def _row_vector(name: str, values, n: int, columns: bool = False) -> np.ndarray:
    """``values`` as a float64 vector of n finite entries, or a ValueError naming ``name``.

    ``columns``: a matrix (n, k) is taken too (labels of several targets), one column
    as a vector.
    """
    try:
        v = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raw = np.asarray(values, dtype=object).ravel()
        text = next((x for x in raw.tolist() if isinstance(x, (str, bytes))), None)
        what = f"strings such as {text!r}" if text is not None else f"{raw.dtype} values"
        hint = (": encode class labels as 0 .. n_classes - 1 for train() (e.g. with "
                "sklearn.preprocessing.LabelEncoder), or use TreeBoostClassifier, which "
                "takes any labels" if name == "label" else "")
        raise ValueError(f"{name} must be numbers, got {what}{hint}") from None
    if columns and v.ndim == 2 and v.shape[0] == n and v.shape[1] >= 1:
        v = v[:, 0].copy() if v.shape[1] == 1 else np.ascontiguousarray(v)
    elif v.ndim == 1:
        # a strided column (Y[:, j]) would give the loss kernels a specialisation of
        # their own for non-contiguous arrays
        v = np.ascontiguousarray(v)
    if v.ndim != 1 and not (columns and v.ndim == 2) or v.shape[0] != n:
        rows = " (or one row of targets per row)" if columns else ""
        raise ValueError(f"{name} must have one entry per row ({n}){rows}, got shape "
                         f"{v.shape}")
    bad = ~np.isfinite(v)
    if bad.any():
        i = int(np.argmax(bad.reshape(v.shape[0], -1).any(axis=1)))
        raise ValueError(f"{name} contains NaN or infinity ({int(bad.sum())} value(s), the "
                         f"first at row {i}: {v[i]})")
    return v


def _upper_bounds(values, label, n: int) -> np.ndarray:
    """``label_upper_bound`` as n float64 bounds >= ``label`` (+inf allowed), or a ValueError."""
    if label is None or label.ndim != 1:
        raise ValueError("label_upper_bound needs a label of one column, the lower bounds")
    try:
        upper = np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("label_upper_bound must be numbers (inf for a right-censored "
                         "row)") from None
    if upper.shape != (n,):
        raise ValueError(f"label_upper_bound must have one entry per row ({n}), got shape "
                         f"{upper.shape}")
    for bad, what in ((np.isnan(upper) | np.isneginf(upper), "NaN or -inf"),
                      (upper < label, "a bound below label")):
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(f"label_upper_bound holds {what} at {int(bad.sum())} row(s) "
                             f"(the first at row {i}: {upper[i]:g}, label {label[i]:g})")
    return upper


def _check_weight(weight: np.ndarray) -> None:
    """Refuse negative weights, and weights that are 0 on every row (of a set with rows)."""
    negative = weight < 0
    if negative.any():
        i = int(np.argmax(negative))
        raise ValueError(f"weight must be non-negative: {weight[i]} at row {i} "
                         f"({int(negative.sum())} negative value(s) in all)")
    if weight.size and not (weight > 0).any():
        raise ValueError(f"weight is 0 on all {weight.size} rows: a row of weight 0 is not "
                         "there, so nothing would be left to train on or to evaluate")
