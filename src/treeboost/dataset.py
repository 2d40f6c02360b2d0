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

from ._dtypes import X_DTYPE


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
