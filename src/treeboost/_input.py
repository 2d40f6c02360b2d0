"""What prediction reads: X checked against a fitted model's features, and stage counts.

``check_predict_X`` is the one input check of ``Booster.predict_raw`` and
``Booster.staged_predict_raw`` and of the estimators' prediction methods (and
of their ``eval_set`` data), so a model refuses or reads any X the same way
whichever API it is called through: the width, a frame's column names and
column types, its categorical columns coded by label (``dataset.frame_to_array``),
dtypes converted to float64 (float32 kept), infinity refused, as scikit-learn's
``check_array`` does for the estimators. The messages name the model's class;
the width and name messages are scikit-learn's own words, which its estimator
checks match.

The common case, a plain 2-D NumPy array of numbers, is checked here
(``plain_matrix``; ``plain_target`` and ``plain_weights`` for the estimators'
targets and weights); anything else, and anything these would refuse, goes to
scikit-learn's ``check_array`` (or its target and weight checks), imported then,
which converts it or refuses it with its messages. So a fit and a prediction on
arrays never import scikit-learn (about 1.2 s), and every other input is read as
before.

``check_stage_count`` and ``check_stages`` check the stage counts of
``predict_raw(n_stages=)``, ``truncate`` and ``staged_predict_raw(stages=)``.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np

from ._dtypes import X_DTYPES
from .dataset import as_pandas, check_no_categories, frame_to_array

#: ``check_array``'s arguments for prediction input: float64 or float32 (the kernels'
#: two signatures; anything else, float16 and ints included, becomes float64), C
#: order, NaN for missing values but no infinity (refused in training too), and the
#: sparse layouts the kernels read
_ARRAY_CHECKS = dict(dtype=X_DTYPES, order="C", ensure_all_finite="allow-nan",
                     accept_sparse=("csr", "csc"), input_name="X")


def plain_matrix(X, ensure_min_samples: int = 1):
    """X as ``check_array(X, **_ARRAY_CHECKS)`` returns it, if X is a plain NumPy array
    it accepts; else None.

    Parameters
    ----------
    X : object
    ensure_min_samples : int, default=1
        The fewest rows accepted.

    Returns
    -------
    ndarray of float64 or float32 in C order, or None
        X itself where it is already such an array, else its converted copy;
        None for anything but a 2-D ``numpy.ndarray`` of booleans, integers or
        floats with enough rows, at least one column and no infinity (the
        caller then runs ``check_array``, which converts or refuses it).
    """
    if type(X) is not np.ndarray or X.ndim != 2 or X.dtype.kind not in "biuf":
        return None
    if X.shape[0] < max(ensure_min_samples, 1) or X.shape[1] < 1:
        return None
    # one sum first: a finite sum means no NaN and no infinity anywhere (a sum of huge
    # finite values may overflow: then the full check decides, without a warning)
    if X.dtype.kind == "f":
        with np.errstate(over="ignore", invalid="ignore"):
            total = X.sum()
        if not np.isfinite(total) and np.isinf(X).any():
            return None
    dtype = X.dtype if X.dtype in X_DTYPES else X_DTYPES[0]
    return np.ascontiguousarray(X, dtype=dtype)


def plain_target(y, n_samples: int, kinds: str = "biuf"):
    """y as scikit-learn's ``check_X_y`` returns it, if y is a plain 1-D NumPy array
    it accepts; else None.

    Parameters
    ----------
    y : object
    n_samples : int
        The rows of X: y must have as many.
    kinds : str, default="biuf"
        The dtype kinds let through (a classifier's also "U", text labels).

    Returns
    -------
    ndarray or None
        y itself for a 1-D ``numpy.ndarray`` of those kinds, of ``n_samples``
        entries and without NaN or infinity; else None (the caller then runs
        scikit-learn's check).
    """
    if type(y) is not np.ndarray or y.ndim != 1 or y.shape[0] != n_samples \
            or y.dtype.kind not in kinds:
        return None
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        return None
    return y


def series_values(y):
    """A pandas Series' values as a NumPy array where its dtype is NumPy's; else y as given.

    Parameters
    ----------
    y : object

    Returns
    -------
    ndarray or object
        ``y.to_numpy()`` for a pandas Series of a NumPy dtype (what scikit-learn's
        checks read of it); any other y unchanged (extension dtypes, nullable
        integers, categories: scikit-learn's checks read those).
    """
    if type(y).__module__.split(".")[0] == "pandas" and getattr(y, "ndim", 0) == 1 \
            and isinstance(getattr(y, "dtype", None), np.dtype):
        return y.to_numpy()
    return y


def plain_weights(sample_weight, n_samples: int):
    """``sample_weight`` as scikit-learn's ``_check_sample_weight`` (float64,
    non-negative) returns it, if it is None or a plain array it accepts; else None.

    Parameters
    ----------
    sample_weight : object
    n_samples : int
        The rows of X: the weights must have as many.

    Returns
    -------
    ndarray of float64 or None
        Ones for None; the weights in C order for a 1-D ``numpy.ndarray`` of
        numbers of ``n_samples`` entries, finite, non-negative and not all zero;
        None for anything else (the caller then runs scikit-learn's check).
    """
    if sample_weight is None:
        return np.ones(n_samples, dtype=np.float64)
    if type(sample_weight) is not np.ndarray or sample_weight.ndim != 1 \
            or sample_weight.shape[0] != n_samples or sample_weight.dtype.kind not in "biuf":
        return None
    weights = np.ascontiguousarray(sample_weight, dtype=np.float64)
    if not (np.isfinite(weights).all() and weights.min() >= 0 and weights.any()):
        return None
    return weights


def _checked_matrix(X, owner: str, ensure_min_samples: int):
    """``plain_matrix``'s answer, else scikit-learn's ``check_array`` (imported then)."""
    plain = plain_matrix(X, ensure_min_samples)
    if plain is not None:
        return plain
    from sklearn.utils.validation import check_array

    return check_array(X, estimator=owner, ensure_min_samples=ensure_min_samples,
                       **_ARRAY_CHECKS)


def checked_weights(sample_weight, X, ensure_non_negative: bool = False):
    """``plain_weights``'s answer, else scikit-learn's ``_check_sample_weight`` (imported
    then), float64.

    Parameters
    ----------
    sample_weight : None, scalar or array-like
    X : ndarray or sparse matrix
        The checked rows the weights belong to.
    ensure_non_negative : bool, default=False
        Refuse negative weights (training; evaluation sets take them).

    Returns
    -------
    ndarray of float64 of shape (n_samples,)
    """
    weights = plain_weights(sample_weight, X.shape[0])
    if weights is not None:
        return weights
    from sklearn.utils.validation import _check_sample_weight

    return _check_sample_weight(sample_weight, X, dtype=np.float64,
                                ensure_non_negative=ensure_non_negative)


def frame_feature_names(frame) -> list[str] | None:
    """A frame's column names if all of them are strings, else None (scikit-learn's rule).

    Parameters
    ----------
    frame : pandas.DataFrame

    Returns
    -------
    list of str or None
        None for columns without string names (``pd.DataFrame(X)``'s integers):
        the columns are then taken by position.

    Raises
    ------
    TypeError
        If some names are strings and others not, as scikit-learn does.
    """
    names = list(frame.columns)
    types = sorted({type(name).__qualname__ for name in names})
    if len(types) > 1 and "str" in types:
        raise TypeError("Feature names are only supported if all input features have string "
                        f"names, but your input has {types} as feature name / column name "
                        "types: convert them all to strings, by using "
                        "X.columns = X.columns.astype(str) for example")
    return [str(name) for name in names] if types == ["str"] else None


def _name_list(names: list[str], limit: int = 5) -> str:
    shown = [f"- {name}\n" for name in names[:limit]]
    return "".join(shown) + ("- ...\n" if len(names) > limit else "")


def _check_names(given, fitted, owner: str, warn_names: bool) -> None:
    """Refuse a frame whose names differ from the model's (scikit-learn's message).

    Where only one side has names, positions rule; ``warn_names`` warns of it,
    as scikit-learn's estimators do (the bare Booster, as LightGBM's, reads a
    plain array by position without a word).
    """
    if given is None or fitted is None:
        if warn_names and given is not None:
            warnings.warn(f"X has feature names, but {owner} was fitted without feature "
                          "names", UserWarning, stacklevel=4)
        elif warn_names and fitted is not None:
            warnings.warn(f"X does not have valid feature names, but {owner} was fitted "
                          "with feature names", UserWarning, stacklevel=4)
        return
    if given == fitted:
        return
    message = "The feature names should match those that were passed during fit.\n"
    unseen = sorted(set(given) - set(fitted))
    missing = sorted(set(fitted) - set(given))
    if unseen:
        message += "Feature names unseen at fit time:\n" + _name_list(unseen)
    if missing:
        message += "Feature names seen at fit time, yet now missing:\n" + _name_list(missing)
    if not unseen and not missing:
        message += "Feature names must be in the same order as they were in fit.\n"
    raise ValueError(message)


def _check_width(n_given: int, n_features: int, owner: str) -> None:
    if n_given != n_features:
        raise ValueError(f"X has {n_given} features, but {owner} is expecting {n_features} "
                         "features as input.")


def check_predict_X(X, *, n_features: int, feature_names=None, pandas_categories=None,
                    owner: str = "Booster", warn_names: bool = False,
                    ensure_min_samples: int = 0):
    """Check X against a fitted model's features; return the matrix the kernels read.

    Parameters
    ----------
    X : {array-like, sparse matrix, data frame} of shape (n_samples, n_features)
        A NumPy array or anything ``np.asarray`` reads, a SciPy sparse matrix,
        a pandas or polars DataFrame or a pyarrow Table (``dataset.as_pandas``).
    n_features : int
        The model's number of features: X must have as many columns.
    feature_names : sequence of str, default=None
        The model's feature names. A frame whose column names are all strings
        must have these names in this order; other frames and arrays are read
        by position.
    pandas_categories : dict of {int: list}, default=None
        The training frame's categories of its categorical columns, by
        position: such a model reads a frame with those columns categorical
        (coded by label) and refuses a plain array.
    owner : str, default="Booster"
        The model's class name, in the messages.
    warn_names : bool, default=False
        Warn where X or the model has names and the other not (scikit-learn's
        estimators do; the Booster does not).
    ensure_min_samples : int, default=0
        The fewest rows accepted; 0 rows give 0 scores.

    Returns
    -------
    ndarray of float64 or float32 in C order, or CSR/CSC matrix
        of shape (n_samples, n_features); NaN marks missing values.

    Raises
    ------
    ValueError
        X has another width, other column names, is not 2-D, holds infinity or
        too few rows.
    TypeError
        A column's type differs from training (categorical against numeric),
        or X is a plain array for a model trained with categorical columns.
    """
    categories = pandas_categories or {}
    names = None if feature_names is None else [str(name) for name in feature_names]
    frame = as_pandas(X)
    if frame is not None and frame.ndim == 2:  # a Series is 1-D: check_array says so
        _check_names(frame_feature_names(frame), names, owner, warn_names)
        _check_width(frame.shape[1], n_features, owner)
        # categorical columns coded by label against the training categories
        X, _ = frame_to_array(frame, categories)
        return _checked_matrix(X, owner, ensure_min_samples)
    check_no_categories(X, categories, names)
    _check_names(None, names, owner, warn_names)
    X = _checked_matrix(X, owner, ensure_min_samples)
    _check_width(X.shape[1], n_features, owner)
    return X


def check_stage_count(n_stages, n_model_stages: int, name: str = "n_stages") -> int:
    """``n_stages`` as an int in [0, n_model_stages]; else an error naming it.

    Parameters
    ----------
    n_stages : int
        A number of stages (0: F0 alone).
    n_model_stages : int
        The model's number of stages.
    name : str, default="n_stages"
        The parameter's name, in the message.

    Returns
    -------
    int

    Raises
    ------
    TypeError
        If ``n_stages`` is not an integer (a bool, a float, a string).
    ValueError
        If it is negative or more than the model has: XGBoost refuses an
        ``iteration_range`` past its trees too (LightGBM silently uses them all).
    """
    msg = (f"{name}={n_stages!r} must be an int in [0, {n_model_stages}] (the model has "
           f"{n_model_stages} stages)")
    if isinstance(n_stages, (bool, np.bool_)) or not isinstance(n_stages, numbers.Integral):
        raise TypeError(msg)
    if not 0 <= n_stages <= n_model_stages:
        raise ValueError(msg)
    return int(n_stages)


def check_stages(stages, n_model_stages: int) -> list[int]:
    """``staged_predict_raw``'s ``stages``: strictly increasing ints in [0, n_model_stages].

    Parameters
    ----------
    stages : iterable of int or None
        Stage counts to yield at; None: 1, 2, ..., n_model_stages.
    n_model_stages : int
        The model's number of stages.

    Returns
    -------
    list of int

    Raises
    ------
    TypeError
        If ``stages`` is not an iterable of integers.
    ValueError
        If a count is out of [0, n_model_stages] or they do not increase.
    """
    if stages is None:
        return list(range(1, n_model_stages + 1))
    try:
        counts = list(stages)
    except TypeError:
        raise TypeError(f"stages={stages!r} must be an iterable of ints (stage counts) or "
                        "None") from None
    shown = repr(stages.tolist() if isinstance(stages, np.ndarray)
                 else stages if isinstance(stages, (list, tuple)) else counts)
    msg = f"stages={shown} must be ints in [0, {n_model_stages}] (the model has " \
          f"{n_model_stages} stages)"
    for count in counts:
        if isinstance(count, (bool, np.bool_)) or not isinstance(count, numbers.Integral):
            raise TypeError(msg)
        if not 0 <= count <= n_model_stages:
            raise ValueError(msg)
    counts = [int(count) for count in counts]
    if any(b <= a for a, b in zip(counts[:-1], counts[1:], strict=True)):
        raise ValueError(f"stages={shown} must be increasing, each stage count once")
    return counts
