"""Client-side checks of ``treeboost.dask``: settings and data refused before training.

Everything here runs on the client, or is a small task that reports back to it, so
that what the local estimators refuse is refused by the Dask ones too, before any
training task starts:

- ``_refuse_unsupported``: a bad parameter value, or a setting data-parallel training
  does not support, before any data is read;
- ``_check_X``, ``_check_vector``, ``_check_queries``: the arrays' dimensions, dtypes
  and lengths (a dataframe's text, ``category`` or other non-numeric column refused
  by name), each block checked, when computed, to have the shape its dask array
  declares (``_checked_block``), and each query whole in one partition;
- ``_check_persisted``: one task per persisted block counts what the local estimators
  refuse (+-inf in X, a non-finite y, negative or non-finite weights, too few
  positive weights), raised on the client naming the argument.
"""

from __future__ import annotations

import numpy as np

from . import params as _params
from ._dtypes import X_BINNED_DTYPE
from .binning import BinMapper
from .booster import Booster, check_distributed
from .dataset import _is_category, _is_numeric
from .modes import check_mode
from .training import _loss, boosting_params


# ---- parameters --------------------------------------------------------------------
def _refuse_unsupported(estimator, params: dict) -> None:
    """Refuse, on the client and before any data is read, a bad parameter value or a
    setting data-parallel training does not support.

    The checks are those ``train`` makes on every member (the parameter table,
    ``check_mode``, ``booster.check_distributed``), made here first: in a worker
    they would come after the data was persisted and the training tasks started.

    Parameters
    ----------
    estimator : treeboost.dask estimator
        The estimator being fitted (its settings, class name and ``_scope``).
    params : dict
        Its parameters, ``client`` left out and ``random_state`` the fit's seed.

    Raises
    ------
    ValueError
        A bad value or an unsupported setting, named.
    """
    name = type(estimator).__name__
    refused = []
    if getattr(estimator, "class_weight", None) is not None:
        refused.append("class_weight")
    if estimator.trace:
        refused.append("trace=True")
    if estimator.verbose:
        refused.append("verbose")
    if estimator.warm_start:  # fit would silently start over: continued training is not done
        refused.append("warm_start=True (continued training)")
    if refused:
        raise ValueError(f"{name} does not support {', '.join(refused)} yet")
    _params.validate(params, estimator._scope)
    p = boosting_params(params, estimator._scope)
    # the loss is what its name and parameters make it; the classes (counted from
    # the data later) change nothing that check_distributed reads
    loss = _loss(dict(params, n_classes=params.get("n_classes") or 2), np.zeros(1))
    probe = Booster(loss, BinMapper(), p)
    try:
        check_distributed(probe, (), None, None, np.empty((0, 0), dtype=X_BINNED_DTYPE))
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None
    check_mode(p)


# ---- X, y, weights and query ids --------------------------------------------------
def _as_dask_array(X, what: str):
    """A dask array of ``X`` (a dask array or dataframe/series) and its column names."""
    import dask.array as da
    import dask.dataframe as dd

    if isinstance(X, (dd.DataFrame, dd.Series)):
        names = None
        if isinstance(X, dd.DataFrame):
            X = _numeric_frame(X, what)
            names = [str(c) for c in X.columns]
        return X.to_dask_array(lengths=True), names
    if isinstance(X, da.Array):
        return X, None
    raise TypeError(f"{what} must be a dask array or dask dataframe, got {type(X).__name__}")


def _numeric_frame(X, what: str):
    """A dask DataFrame of numeric columns, as ``frame_to_array`` reads a local one; the
    first column it cannot take is refused by name.

    Nullable and Arrow-backed numbers and booleans become float64 with NaN for a
    missing value (``to_dask_array`` would give an object array of them).
    """
    floats = {}
    for column, dtype in X.dtypes.items():
        if _is_category(dtype):
            raise TypeError(f"{what}: column {column!r} has dtype {dtype}: treeboost.dask "
                            "does not take 'category' columns yet; code it as integers and "
                            "name it in categorical_features")
        if not _is_numeric(dtype):  # text (pandas 3's "str"), objects, dates, ...
            raise TypeError(f"{what}: column {column!r} has dtype {dtype}: convert it to "
                            "numbers (treeboost.dask takes numeric and boolean columns; code "
                            "a categorical one as integers and name it in "
                            "categorical_features)")
        if not isinstance(dtype, np.dtype):
            floats[column] = "float64"
    return X.astype(floats) if floats else X


def _check_X(X, label: str = "X"):
    """X as a float64 dask array of one column chunk, and its column names; ``label``
    names it in the errors its blocks raise when computed."""
    X, names = _as_dask_array(X, "X")
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got {X.ndim} dimension(s)")
    if X.dtype.kind not in "biuf":
        raise TypeError(f"X must be numeric, got dtype {X.dtype}")
    if any(np.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    X = X.map_blocks(_checked_block, label, dtype=X.dtype, meta=X._meta)
    return X.astype(np.float64).rechunk({1: -1}), names


def _check_vector(v, X, what: str, label: str | None = None):
    v, _ = _as_dask_array(v, what)
    if v.ndim == 2 and v.shape[1] == 1:
        v = v[:, 0]
    if v.ndim != 1:
        raise ValueError(f"{what} must be 1-D")
    if any(np.isnan(c) for c in v.chunks[0]):
        v = v.compute_chunk_sizes()
    if v.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but {what} has {v.shape[0]}")
    # checked before the rechunk, which slices the blocks where they are declared to end
    v = v.map_blocks(_checked_block, label or what, dtype=v.dtype, meta=v._meta)
    return v.rechunk((X.chunks[0],))


def _checked_block(block, label: str, block_info=None):
    """``block`` itself, once its shape is the one its dask array declares for it.

    A dask array built with ``from_delayed`` or ``map_blocks`` declares its blocks'
    shapes without computing them; a block that is narrower or shorter than declared
    would otherwise be stacked with the wrong columns and fail (or, worse, not fail)
    deep in training.
    """
    info = block_info[None]
    declared = tuple(info["chunk-shape"])
    shape = tuple(getattr(block, "shape", ()))
    if shape == declared:
        return block
    where = tuple(info["chunk-location"])
    rows = info["array-location"][0]
    at = f"{label}: block {where} (rows {rows[0]}:{rows[1]})"
    if len(shape) != len(declared):
        got = f"has shape {shape}, but the dask array declares shape {declared}"
    elif len(shape) == 2 and shape[1] != declared[1]:
        got = (f"has {shape[1]} columns, but the dask array declares {declared[1]} "
               f"(and {declared[0]} rows, it has {shape[0]})")
    else:
        got = f"has {shape[0]} rows, but the dask array declares {declared[0]}"
    raise ValueError(f"{at} {got}: its chunks do not describe what its blocks compute "
                     "(check the shape= given to from_delayed or the chunks= given to "
                     "map_blocks)")


def _query_ends(block):
    return (np.array([block[0], block[-1]], dtype=np.float64) if block.size
            else np.full(2, np.nan))


def _check_queries(qid, X, what: str, client):
    """``qid`` as a dask vector chunked as X, each query whole in one partition."""
    qid = _check_vector(qid, X, what)
    if qid.dtype.kind not in "biuf":
        raise TypeError(f"{what} must be numeric, got dtype {qid.dtype}")
    ends = client.compute(qid.map_blocks(_query_ends, chunks=((2,) * qid.numblocks[0],),
                                         dtype=np.float64)).result().reshape(-1, 2)
    ends = ends[~np.isnan(ends[:, 0])]
    split = np.flatnonzero(ends[1:, 0] == ends[:-1, 1])
    if split.size:
        raise ValueError(f"{what}: query {ends[split[0], 1]:g} spans two partitions; every "
                         "query must lie whole in one partition (repartition by query)")
    return qid


# ---- the persisted matrices -------------------------------------------------------
def _block_summary(block, n_features: int):
    """One row of counts over a stacked block ``[X | y | w | ...]``: X's infinite values,
    y's non-finite ones, w's negative, non-finite and positive ones, and w's minimum."""
    X, y, w = block[:, :n_features], block[:, n_features], block[:, n_features + 1]
    return np.array([[np.count_nonzero(np.isinf(X)), np.count_nonzero(~np.isfinite(y)),
                      np.count_nonzero(w < 0), np.count_nonzero(~np.isfinite(w)),
                      np.count_nonzero(w > 0), np.min(w, initial=0.0, where=w < 0)]])


def _check_persisted(client, data, valid, n_features: int) -> None:
    """Raise on the client, naming the argument, what the local estimators refuse in the
    persisted training and validation matrices.

    Training (``TreeBoostRegressor._check_training_data``): +-inf in X, a non-finite y,
    a negative or non-finite weight, fewer than 2 rows of positive weight. Validation
    (``_eval_data``, ``Dataset``): +-inf in X, a non-finite y, a negative or
    non-finite weight, no row of positive weight. A block that failed to compute (a
    shape other than its declared one, ``_checked_block``) raises its own error first.
    One task per block, where it lies; its counts come back.
    """
    for _, futures in (data, *valid):
        for future in futures:
            if future.status == "error":
                raise future.exception()
    summaries = client.compute([
        d.map_blocks(_block_summary, n_features, chunks=((1,) * d.numblocks[0], (6,)),
                     dtype=np.float64, meta=np.empty((0, 0)))
        for d, _ in (data, *valid)], sync=True)
    for i, summary in enumerate(summaries):
        x_inf, y_bad, w_negative, w_bad, w_positive = summary[:, :5].sum(axis=0).astype(int)
        where = "" if i == 0 else f"eval_set[{i - 1}]: "
        if x_inf:
            raise ValueError(f"{where}X contains {x_inf} infinite value(s): treeboost "
                             "refuses +-inf in X, as the local estimators do (it is nearly "
                             "always a division by zero upstream); use NaN for a missing "
                             "value")
        if y_bad:
            raise ValueError(f"{where}y contains {y_bad} NaN or infinite value(s): every "
                             "target must be a finite number")
        if w_bad:
            raise ValueError(f"{where}sample_weight contains NaN or infinity ({w_bad} "
                             "value(s))")
        if w_negative:
            raise ValueError(f"{where}sample_weight has {w_negative} negative value(s) (the "
                             f"smallest {summary[:, 5].min():g}): weights must be >= 0")
        if i == 0 and w_positive < 2:
            raise ValueError("sample_weight must be positive for at least 2 samples; "
                             f"{w_positive} are")
        if i > 0 and w_positive == 0:
            raise ValueError(f"{where}sample_weight is 0 on every row: a row of weight 0 "
                             "is not there, so nothing would be evaluated")
