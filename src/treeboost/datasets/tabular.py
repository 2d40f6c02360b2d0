"""CSV reader and the parts shared with the ARFF reader: file text and target selection.

Data flow: a file on disk -> :func:`read_text` (gzip by suffix, UTF-8 with a Latin-1
fallback) -> a reader (:func:`read_csv` here, :func:`treeboost.datasets.arff.read_arff`)
that returns one DataFrame with every column -> :func:`split_target` -> ``(X, y)`` for
``treeboost.datasets.load``.

Column types in the DataFrames both readers return: numeric columns are ``float64``,
everything else is ``category``, missing values are NaN. That is what the estimators'
input check (SPEC §3) understands without further conversion.
"""

from __future__ import annotations

import csv
import gzip
import io
import os

import numpy as np
import pandas as pd

from ..exceptions import DataError

__all__ = ["missing_target", "read_csv", "read_text", "split_target"]

#: The strings ``pandas.read_csv`` reads as missing by default (its ``STR_NA_VALUES``),
#: the empty field included.
PANDAS_NA_TOKENS = frozenset({"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN",
                              "-nan", "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN",
                              "None", "n/a", "nan", "null"})

# Tokens that mean "missing" inside a column that is otherwise numeric. The docs
# (guide/data.rst) fix "missing = empty field", but hand-made CSVs often write NA or ? in
# a numeric column; a numeric column cannot have a level called "NA", so reading these as missing
# there is safe. In non-numeric columns only the empty field is missing: "None" is a real
# level of some ames_housing columns.
NUMERIC_NA_TOKENS = (PANDAS_NA_TOKENS - {""}) | {"?"}

# Tokens that mean "missing" in a CSV target, whatever its type. A class called "NA" or
# "None" is far less likely than a missing label written the way pandas and R write it,
# and a missing label made a class would be learned and scored as one.
TARGET_NA_TOKENS = NUMERIC_NA_TOKENS


def read_text(path):
    """Return the text of ``path``, gunzipped when its name ends in ``.gz``.

    Parameters
    ----------
    path : str or path-like
        File to read.

    Returns
    -------
    str
        The decoded text: UTF-8 (a byte-order mark is dropped), or Latin-1 when the bytes
        are not valid UTF-8 (WEKA writes files in the platform encoding, often Latin-1).

    Raises
    ------
    DataError
        When the file is not valid gzip data despite its ``.gz`` suffix.
    """
    path = os.fspath(path)
    try:
        if path.endswith(".gz"):
            with gzip.open(path, "rb") as f:
                data = f.read()
        else:
            with open(path, "rb") as f:
                data = f.read()
    except (gzip.BadGzipFile, EOFError) as exc:
        raise DataError(f"{path}: not a readable gzip file ({exc})") from exc
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        # Latin-1 decodes any byte string, so this never fails.
        return data.decode("latin-1")


def read_csv(path, categorical=()):
    """Read a comma-separated file with one header row into a DataFrame.

    Parameters
    ----------
    path : str or path-like
        A ``.csv`` file, or ``.csv.gz`` (gunzipped by suffix).
    categorical : collection of str, default=()
        Columns read as ``category`` even when every value is a number: the
        categorical columns of a model, whose labels ("1", "x") a file holding only
        the numeric ones must not turn into numbers.

    Returns
    -------
    pandas.DataFrame
        One column per header field. A column whose non-missing values all parse as
        numbers is ``float64``; any other column is ``category`` with its categories
        sorted. Missing values: the empty field in every column, and also
        :data:`NUMERIC_NA_TOKENS` (``?`` and the strings pandas reads as missing: ``NA
        N/A n/a NaN nan null NULL None <NA> #N/A -NaN`` ...) in numeric columns only
        (``datasets.load`` reads them as missing in a target of any type).

    Raises
    ------
    DataError
        When the file is empty, a header name is repeated, or a row has more or fewer
        fields than the header; the message names the file and the line.
    """
    path = os.fspath(path)
    # The csv module, not pandas.read_csv: pandas pads short rows with NaN silently, and
    # the line numbers csv.reader reports stay right across quoted fields with newlines.
    reader = csv.reader(io.StringIO(read_text(path), newline=""), skipinitialspace=True)
    header = next(reader, None)
    if header is None:
        raise DataError(f"{path}: line 1: empty file, expected a header row")
    header = [name if name else f"Unnamed: {i}" for i, name in enumerate(header)]
    seen = set()
    for name in header:
        if name in seen:
            raise DataError(f"{path}: line 1: column name {name!r} appears more than once")
        seen.add(name)
    rows = []
    try:
        for row in reader:
            if len(row) == len(header):
                rows.append(row)
            elif row:  # csv.reader gives [] for a blank line; those are skipped
                raise DataError(f"{path}: line {reader.line_num}: expected {len(header)} "
                                f"fields as in the header, found {len(row)}")
    except csv.Error as exc:
        raise DataError(f"{path}: line {reader.line_num}: {exc}") from exc
    columns = zip(*rows, strict=True) if rows else [()] * len(header)
    return pd.DataFrame({name: _csv_column(values, name in categorical) for name, values in
                         zip(header, columns, strict=True)},
                        index=pd.RangeIndex(len(rows)))


def _csv_column(values, categorical=False):
    """Convert the raw strings of one CSV column to float64 or category."""
    # Work on the distinct strings: far fewer than rows in a categorical column.
    codes, uniques = pd.factorize(np.array(values, dtype=object), use_na_sentinel=False)
    uniques = np.asarray(uniques, dtype=object)
    empty = uniques == ""
    na_token = np.array([u in NUMERIC_NA_TOKENS for u in uniques], dtype=bool)
    parsed = np.array(pd.to_numeric(pd.Series(uniques, dtype=object), errors="coerce"),
                      dtype=np.float64)  # a writable copy: NA tokens are set below
    number = ~empty & ~na_token
    # Numeric when every value is a number or missing, and at least one is a number (a
    # column of only "None" is a level, not missing) or all are empty.
    if not categorical and not (np.isnan(parsed) & number).any() and (
            number.any() or empty.all()):
        parsed[~number] = np.nan
        return parsed[codes]
    uniques[empty] = None
    return pd.Categorical(uniques[codes])


def missing_target(y):
    """Mark the missing-value strings of a CSV target as missing.

    Parameters
    ----------
    y : pandas.Series
        A target column as :func:`read_csv` returns it.

    Returns
    -------
    pandas.Series
        ``y``, with the categories in :data:`TARGET_NA_TOKENS` (``NA``, ``N/A``,
        ``null``, ``None``, ``#N/A``, ``?`` ...) made NaN, as an empty field is; a numeric
        column has them as NaN already.
    """
    if not isinstance(y.dtype, pd.CategoricalDtype):
        return y
    tokens = [c for c in y.cat.categories if c in TARGET_NA_TOKENS]
    return y.cat.remove_categories(tokens) if tokens else y


def split_target(frame, target, *, path, default_last):
    """Split a DataFrame read from a file into features and target.

    Parameters
    ----------
    frame : pandas.DataFrame
        Every column of the file.
    target : str or None
        Name of the target column. ``None`` takes the last column when ``default_last``
        is true (ARFF convention) and is an error otherwise (CSV has no convention).
    path : str or path-like
        The file, named in error messages.
    default_last : bool
        Whether ``target=None`` means the last column.

    Returns
    -------
    X : pandas.DataFrame
        The other columns, in file order.
    y : pandas.Series
        The target column, named after it.

    Raises
    ------
    DataError
        When ``target`` is not a column, or is ``None`` for a format without a default;
        the message lists the columns.
    """
    columns = list(frame.columns)
    if target is None:
        if not default_last:
            raise DataError(f"{os.fspath(path)}: no target given; choose one of the "
                            f"columns {_short_list(columns)}")
        if not columns:
            raise DataError(f"{os.fspath(path)}: the file has no columns")
        target = columns[-1]
    elif target not in frame.columns:
        raise DataError(f"{os.fspath(path)}: target {target!r} is not a column; the columns "
                        f"are {_short_list(columns)}")
    return frame.drop(columns=[target]), frame[target]


def _short_list(names, limit=30):
    """Quote ``names`` for an error message, eliding the middle of long lists."""
    quoted = [repr(n) for n in names]
    if len(quoted) > limit:
        quoted = quoted[: limit - 5] + [f"... ({len(quoted) - limit + 1} more)"] + quoted[-4:]
    return ", ".join(quoted)
