"""Load data files for training: ARFF and CSV to ``(X, y)`` pandas objects, svmlight to
a sparse ``X`` with its query groups.

Data flow: a file -> :func:`load` (dispatch by suffix to ``arff.read_arff`` or
``tabular.read_csv``, then ``tabular.split_target``) -> ``X`` (float64 and ``category``
columns, NaN for missing) and ``y`` -> an estimator, whose input check (SPEC §3) takes
the ``category`` columns as categorical features. :func:`one_hot` is the alternative
encoding of SPEC §6 (``treeboost train --one-hot``). svmlight / LibSVM files (by suffix,
or sniffed from the first line when the name says nothing) go to :func:`read_svmlight`:
a CSR ``X``, a float ``y`` and, for ranking, the query sizes ``Dataset(group=...)`` takes.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from ..exceptions import DataError
from .arff import read_arff
from .svmlight import SVMLIGHT_SUFFIXES, is_svmlight, read_svmlight, read_svmlight_files
from .tabular import missing_target, read_csv, split_target

__all__ = ["categorical_mask", "load", "one_hot", "read_svmlight", "read_svmlight_files"]

_READERS = {".arff": read_arff, ".arff.gz": read_arff, ".csv": read_csv, ".csv.gz": read_csv}


def load(path, target=None, *, return_group=False):
    """Load an ARFF, CSV or svmlight file as features ``X`` and target ``y``.

    Parameters
    ----------
    path : str or path-like
        A ``.arff``, ``.csv``, ``.svm``, ``.svmlight`` or ``.libsvm`` file, optionally
        gzip-compressed (``.arff.gz``, ``.csv.gz``, ``.svm.gz``, ...); the suffix decides
        the format, case-insensitively. A file with any other name (LightGBM's
        ``rank.train``, ``data.txt.gz``) is read as svmlight when its first line that is
        neither blank nor a comment reads as ``label [qid:N] index:value ...``
        (:func:`treeboost.datasets.svmlight.is_svmlight`).
    target : str, default=None
        Name of the target column. ``None`` means the last attribute for ARFF and is an
        error for CSV, whose message lists the columns. Must be ``None`` for svmlight,
        whose label is the first value of each line.
    return_group : bool, default=False
        Also return the query groups: ``(X, y, group)`` instead of ``(X, y)``.

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
        are kept, its value NaN: in a CSV file an empty field, and also any of the
        strings pandas reads as missing (``NA``, ``N/A``, ``null``, ``None``, ``#N/A``
        ...) and ``?``, whatever the target's type (``tabular.missing_target``); the
        command line leaves such rows out with a warning.

        For svmlight, ``X`` is instead a ``scipy.sparse.csr_matrix`` of float64 with as
        many columns as the largest index in the file, and ``y`` a float64 ndarray of the
        labels; see :func:`read_svmlight`, which also takes ``n_features`` to read a test
        file as wide as its training file, and the index base, decided here by the file
        alone: read a training file and its test file together with
        :func:`read_svmlight_files` (one index base, one width).
    group : ndarray of shape (n_queries,), dtype int64, or None
        Only with ``return_group=True``: for svmlight, the sizes of the query groups in
        row order (from ``qid:`` tokens or a LightGBM ``<path>.query`` file beside
        ``path``), ready for ``treeboost.Dataset(X, y, group=group)``; ``None`` for a
        file without queries, and always for ARFF and CSV.

    Raises
    ------
    DataError
        For an unknown file type, a missing target, a target given for svmlight, a file
        without data rows (a header-only CSV), or a malformed file; the message names
        the file and, for a malformed file, the line.

    Examples
    --------
    >>> X, y = load("iris.arff")  # doctest: +SKIP
    >>> X, y = load("housing.csv.gz", target="median_house_value")  # doctest: +SKIP
    >>> X, y, group = load("rank.train", return_group=True)  # doctest: +SKIP
    """
    name = os.fspath(path)
    lowered = name.lower()
    suffix = next((s for s in (*_READERS, *SVMLIGHT_SUFFIXES) if lowered.endswith(s)), None)
    if suffix is None:
        exists = os.path.isfile(name)
        if not exists or not is_svmlight(name):
            raise DataError(
                f"{name}: unknown file type{'' if exists else ' (and no such file)'}; "
                f"expected one of {', '.join((*_READERS, *SVMLIGHT_SUFFIXES))}, or a file of "
                f"any name whose first data line reads as svmlight "
                f"('label [qid:N] index:value ...')")
        suffix = ".svm"
    if not os.path.isfile(name):
        raise DataError(f"{name}: no such file")
    if suffix in SVMLIGHT_SUFFIXES:
        if target is not None:
            raise DataError(f"{name}: target={target!r} does not apply to an svmlight file, "
                            f"whose label is the first value of each line")
        X, y, group = read_svmlight(name)
    else:
        frame = _READERS[suffix](name)
        X, y = split_target(frame, target, path=name, default_last=suffix.startswith(".arff"))
        if suffix.startswith(".csv"):
            y = missing_target(y)  # ARFF has one missing value, "?", read as NaN already
        group = None
    if X.shape[0] == 0:
        # nothing could be learned or scored; said here rather than by a splitter or
        # an estimator that knows neither the file nor why it is empty
        what = "no data lines" if suffix in SVMLIGHT_SUFFIXES else "only the header"
        raise DataError(f"{name}: no data rows ({what})")
    return (X, y, group) if return_group else (X, y)


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
