"""Load tabular data files for training: ARFF and CSV to ``(X, y)`` pandas objects.

Data flow: a file -> :func:`load` (dispatch by suffix to ``arff.read_arff`` or
``tabular.read_csv``, then ``tabular.split_target``) -> ``X`` (float64 and ``category``
columns, NaN for missing) and ``y`` -> an estimator, whose input check (SPEC §3) takes
the ``category`` columns as categorical features. :func:`one_hot` is the alternative
encoding of SPEC §6 (``treeboost train --one-hot``).
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from ..exceptions import DataError
from .arff import read_arff
from .tabular import read_csv, split_target

__all__ = ["categorical_mask", "load", "one_hot"]

_READERS = {".arff": read_arff, ".arff.gz": read_arff, ".csv": read_csv, ".csv.gz": read_csv}


def load(path, target=None):
    """Load an ARFF or CSV file as features ``X`` and target ``y``.

    Parameters
    ----------
    path : str or path-like
        A ``.arff`` or ``.csv`` file, optionally gzip-compressed (``.arff.gz``,
        ``.csv.gz``); the suffix decides the format, case-insensitively.
    target : str, default=None
        Name of the target column. ``None`` means the last attribute for ARFF and is an
        error for CSV, whose message lists the columns.

    Returns
    -------
    X : pandas.DataFrame of shape (n_samples, n_features)
        The other columns, in file order. Numeric columns are ``float64``; nominal ARFF
        attributes are ``category`` with their declared categories in declared order;
        ARFF string attributes and non-numeric CSV columns are ``category`` with the
        values found, sorted; ARFF dates are ``float64`` seconds since the epoch (UTC).
        Missing values are NaN. ``categorical_mask(X)`` tells the categorical columns.
        See ``arff.read_arff`` and ``tabular.read_csv`` for the details of each format.
    y : pandas.Series of shape (n_samples,)
        The target, typed like the columns of ``X``: a nominal target is a ``category``
        Series whose categories are all the declared labels, including any no row uses
        (``y.cat.remove_unused_categories()`` drops them). Rows with a missing target
        are kept.

    Raises
    ------
    DataError
        For an unknown suffix, a missing target, or a malformed file; the message names
        the file and, for a malformed file, the line.

    Examples
    --------
    >>> X, y = load("iris.arff")  # doctest: +SKIP
    >>> X, y = load("housing.csv.gz", target="median_house_value")  # doctest: +SKIP
    """
    name = os.fspath(path)
    lowered = name.lower()
    suffix = next((s for s in _READERS if lowered.endswith(s)), None)
    if suffix is None:
        raise DataError(f"{name}: unknown file type; expected one of {', '.join(_READERS)}")
    if not os.path.isfile(name):
        raise DataError(f"{name}: no such file")
    frame = _READERS[suffix](name)
    return split_target(frame, target, path=name, default_last=suffix.startswith(".arff"))


def categorical_mask(X):
    """Return which columns of ``X`` are categorical (``category`` dtype).

    Parameters
    ----------
    X : pandas.DataFrame
        Features, as returned by :func:`load`.

    Returns
    -------
    ndarray of shape (n_features,), dtype bool
        True for the ``category`` columns.
    """
    return np.array([isinstance(dtype, pd.CategoricalDtype) for dtype in X.dtypes], dtype=bool)


def one_hot(X):
    """Replace each categorical column by one 0/1 column per category (SPEC §6).

    Parameters
    ----------
    X : pandas.DataFrame
        Features; the ``category`` columns are encoded, the others kept as they are.

    Returns
    -------
    pandas.DataFrame
        Same rows and index. Each categorical column ``col`` becomes, in its place, one
        ``float64`` column ``"col=value"`` per category in category order (also for
        categories no row uses, so that files with the same declared attributes give the
        same columns). A missing value is 0 in all of them, so "missing" and "a category
        not seen" are told apart from every seen category but not from each other.

    Raises
    ------
    DataError
        When an encoded column name equals another column's name.
    """
    parts = {}
    for name in X.columns:
        column = X[name]
        if not isinstance(column.dtype, pd.CategoricalDtype):
            parts[name] = column
            continue
        codes = column.cat.codes.to_numpy()
        indicators = np.zeros((len(codes), len(column.cat.categories)))
        seen = codes >= 0  # code -1 is missing: left all zeros
        indicators[np.flatnonzero(seen), codes[seen]] = 1.0
        for position, category in enumerate(column.cat.categories):
            encoded = f"{name}={category}"
            if encoded in parts or (encoded in X.columns and encoded != name):
                raise DataError(f"one_hot: column name {encoded!r} is already taken")
            parts[encoded] = indicators[:, position]
    return pd.DataFrame(parts, index=X.index)
