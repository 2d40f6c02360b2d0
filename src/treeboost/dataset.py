"""Input data as users hold it: data frames and the categorical-feature mask.

pandas DataFrames (NumPy- or Arrow-backed columns), polars DataFrames and
pyarrow Tables are read as pandas frames; a frame becomes a float64 matrix:
numeric, boolean and nullable columns as numbers (missing as NaN),
categorical columns (``category``, Arrow dictionary, polars Categorical and
Enum) as their category codes.
The codes refer to the categories seen in training, which the estimator
keeps, so a frame at predict time is coded against the same list: an
unseen category becomes NaN and goes where missing values go.
"""

from __future__ import annotations

import numbers

import numpy as np

from ._dtypes import MAX_BINS, X_DTYPE


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
    ``reference=train_set`` is binned with the training set's bins.

    Parameters
    ----------
    data : ndarray of shape (n_samples, n_features) or scipy sparse matrix
        Numeric features (float64 or float32; other numbers are converted to
        float64), NaN for missing values. Data frames go through the
        estimators, which code their categorical columns.
    label : array-like of shape (n_samples,), default=None
        Targets, encoded as the loss expects (class indices 0..K-1 for
        classification).
    weight : array-like of shape (n_samples,), default=None
        Non-negative row weights; None for all ones.
    categorical_features : array-like of bool or int, default=None
        Mask or indices of the categorical features (values are category
        codes; negative codes and NaN are missing).
    max_bins : int, default=255
        Most bins per feature, the missing-value bin excluded.
    reference : Dataset, default=None
        The training set whose bins this (validation) set uses.
    random_state : int or numpy.random.Generator, default=None
        Draws the rows bin edges are computed from on large data; None uses
        the binning stream of ``train``'s ``random_state``.
    """

    def __init__(self, data, label=None, *, weight=None, categorical_features=None,
                 max_bins=MAX_BINS, reference=None, random_state=None):
        import scipy.sparse as sp

        from .binning import canonical_sparse

        if reference is not None and not isinstance(reference, Dataset):
            raise TypeError(f"reference must be a Dataset, got {type(reference).__name__}")
        if sp.issparse(data):  # binning reads columns: convert once for fit and transform
            data = canonical_sparse(data, "csc")
        else:
            data = np.asarray(data)
            if data.dtype not in (np.float64, np.float32):
                data = data.astype(X_DTYPE)
            if data.ndim != 2:
                raise ValueError(f"data must be a 2-D matrix, got {data.ndim} dimension(s)")
            if np.isinf(data).any():
                raise ValueError("data contains infinity; use NaN for missing values")
        n = data.shape[0]
        self.data = data
        self.label = None if label is None else _row_vector("label", label, n)
        self.weight = (np.ones(n) if weight is None else _row_vector("weight", weight, n))
        if weight is not None and (self.weight < 0).any():
            raise ValueError("weight must be non-negative")
        self.is_categorical = categorical_mask(categorical_features, data.shape[1], None, {})
        self.max_bins = max_bins
        self.reference = reference
        self.random_state = random_state
        self._bin_mapper = None
        self._binned = None

    @property
    def n_features(self) -> int:
        """Number of feature columns."""
        return self.data.shape[1]

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


def _row_vector(name: str, values, n: int) -> np.ndarray:
    """``values`` as a float64 vector of n finite entries, or a ValueError naming ``name``."""
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 1 or v.shape[0] != n:
        raise ValueError(f"{name} must have one entry per row ({n}), got shape {v.shape}")
    if not np.isfinite(v).all():
        raise ValueError(f"{name} contains NaN or infinity")
    return v
