"""``treeboost train --weight-column NAME``: a column of the data file as the row weights.

Data flow: ``train.load_split`` reads the file (``study.data.load_spec``), then
``pop_weights`` takes the named column out of the features (after the rows without a
target were left out, so the weights stay aligned with the rows) and checks it:
numbers, finite, >= 0, not all 0, and for ranking one weight per query (the same on
every row of a query: the project's query weights, ``losses.ranking``). The weights
are split with the rows, passed to the estimator's ``fit`` as ``sample_weight`` and
weigh the test metrics (``train.metrics``). A ``--test`` file's own column of that
name weighs its metrics; without one, its rows weigh 1.

``treeboost predict`` needs nothing of this: it takes the model's feature columns by
name, and the weight column is not among them, so a weight column in the data file
is ignored like the target. The model file does not record the column's name.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..exceptions import DataError


def check_weight_option(args) -> None:
    """Refuse, before any data is read, a ``--weight-column`` that names another role's
    column (a target, the query or the event column) or an svmlight file's data.

    Raises
    ------
    ValueError
        Naming ``--weight-column`` and the other option.
    """
    name = getattr(args, "weight_column", None)
    if name is None:
        return
    from ..study.data import is_svmlight_file

    if not name:
        raise ValueError("--weight-column: give the name of a column")
    if is_svmlight_file(args.data):
        raise ValueError(f"--weight-column {name}: an svmlight file has no named columns "
                         "(its rows' weights would be a .weight file, not read here); use "
                         "an ARFF or CSV file")
    targets = [t.strip() for t in (args.target or "").split(",")]
    for option, values in (("--target", targets), ("--query-column", [args.query_column]),
                           ("--event-column", [args.event_column])):
        if name in values:
            raise ValueError(f"--weight-column {name} is also the {option} column; the "
                             "weights are a column of their own")


def pop_weights(X, name: str | None, source, *, task: str, group=None,
                required: bool = True):
    """The features without column ``name`` and that column as checked row weights.

    Parameters
    ----------
    X : pandas.DataFrame
        The features as ``load_spec`` returns them (rows aligned with the target).
    name : str or None
        The ``--weight-column``; None returns ``(X, None)``.
    source : str
        The data file, for messages.
    task : str
        The dataset's task; for "ranking" the weights must be constant within each
        query of ``group``.
    group : ndarray of int, default=None
        Query sizes in row order (ranking).
    required : bool, default=True
        Whether a file without the column is an error (the training file); a test file
        without it returns ``(X, None)``.

    Returns
    -------
    X : pandas.DataFrame
        Without the column.
    weight : ndarray of float64 of shape (n_samples,) or None

    Raises
    ------
    DataError
        Naming ``--weight-column`` and the file: the column is missing, not numeric,
        has a missing or infinite value, a negative value, or only zeros, or (ranking)
        differs within a query.
    """
    if name is None:
        return X, None
    what = f"{source}: --weight-column {name}"
    if name not in X.columns:
        if not required:
            return X, None
        raise DataError(f"{what} is not a column (columns: "
                        f"{', '.join(map(str, X.columns))})")
    X = X.copy()
    column = X.pop(name)
    weight = _numbers(column, what)
    if task == "ranking" and group is not None:
        from ..metrics import query_weights

        try:
            query_weights(weight, np.concatenate(([0], np.cumsum(group))), what)
        except ValueError as exc:
            # the project's ranking weights are query weights: one per query
            raise DataError(f"{exc} (ranking weights are query weights: every row of a "
                            "query carries its query's weight)") from None
    return X, weight


def _numbers(column: pd.Series, what: str) -> np.ndarray:
    """A weight column as float64, refused (naming ``what``) unless every value is a
    finite number >= 0 and one at least is positive."""
    if isinstance(column.dtype, pd.CategoricalDtype) or not (
            pd.api.types.is_numeric_dtype(column.dtype)):
        shown = ", ".join(repr(v) for v in column.dropna().unique()[:3])
        raise DataError(f"{what} must hold numbers (row weights), got values such as "
                        f"{shown}")
    weight = column.to_numpy(dtype=np.float64, na_value=np.nan)
    for bad, why in ((~np.isfinite(weight), "missing or infinite"),
                     (weight < 0, "negative")):
        if bad.any():
            i = int(np.argmax(bad))
            raise DataError(f"{what} has {int(bad.sum())} {why} value(s) (the first in "
                            f"row {i + 1} of the rows read: {weight[i]!r}); weights are "
                            "finite numbers >= 0")
    if weight.size and not np.any(weight > 0):
        raise DataError(f"{what} is 0 on every row: at least one weight must be positive")
    return weight


def check_training_weights(weight, what: str) -> None:
    """The training part's weights must be positive on 2 rows at least (a fit needs two
    rows); ``what`` names the option in the error.

    Raises
    ------
    DataError
    """
    if weight is not None and np.count_nonzero(weight > 0) < 2:
        raise DataError(f"{what}: fewer than 2 rows of the training part have a positive "
                        "weight; a fit needs two")
