"""Survival labels on Dask: scikit-survival's structured y as signed times, lazily.

``treeboost.dask.DaskTreeBoostSurvival`` trains the Cox model over the collective as
``DaskTreeBoostRegressor(loss="cox")`` does, whose labels are one column of signed times
(``t`` for an event, ``-t`` if censored at ``t``; ``survival.signed_times``). This module
turns a dask array of scikit-survival's structured dtype (one bool field, the event, and
one numeric field, the time, whatever their names) into that column, block by block,
after the checks ``signed_times`` makes on a local array, computed on the cluster in one
pass and raised on the client: a time that is NaN, infinite or <= 0 (which a signed
column would misread as a censored row), or no event at all. A dask array or series of
signed times passes through unchanged (the workers' Cox loss checks it).
"""

from __future__ import annotations

import numpy as np

from .survival import survival_fields


def _signed_block(block, event: str, time: str):
    """One block of structured labels as signed times (float64)."""
    times = block[time].astype(np.float64)
    return np.where(block[event], times, -times)


def _time_block(block, time: str):
    """One block's times (float64)."""
    return block[time].astype(np.float64)


def signed_times_dask(y, what: str, client):
    """Survival labels of a Dask fit as a float64 dask array of signed times.

    Parameters
    ----------
    y : dask.array.Array or dask.dataframe.Series
        A dask array of scikit-survival's structured dtype (``Surv.from_arrays``, then
        ``da.from_array``), or signed times (positive: an event at t; negative:
        censored at -t), returned as given.
    what : str
        The labels' name in error messages ("y", "eval_set[0]: y").
    client : distributed.Client
        Computes the checks of structured labels (one pass over them).

    Returns
    -------
    dask.array.Array or dask.dataframe.Series

    Raises
    ------
    ValueError
        Naming ``what``: a structured dtype without one bool and one numeric field, a
        bool array, a time that is NaN, infinite or <= 0, no observed event.
    """
    import dask.array as da

    dtype = getattr(y, "dtype", None)
    if dtype is None:
        return y  # not an array: the fit's own checks name it
    fields = survival_fields(np.dtype(dtype), what)
    if fields is None:
        return y
    if not isinstance(y, da.Array):
        raise TypeError(f"{what} with structured labels must be a dask array, got "
                        f"{type(y).__name__}")
    event, time = fields
    signed = y.map_blocks(_signed_block, event, time, dtype=np.float64,
                          meta=np.empty((0,), dtype=np.float64))
    # the structured times, not the signed ones: -t of a time t <= 0 would read as a
    # censored row, which is what this check exists to refuse
    times = y.map_blocks(_time_block, time, dtype=np.float64,
                         meta=np.empty((0,), dtype=np.float64))
    bad = ~da.isfinite(times) | (times <= 0)
    n_bad, n_events = client.compute([bad.sum(), (signed > 0).sum()], sync=True)
    if n_bad:
        raise ValueError(f"{what}[{time!r}] holds {int(n_bad)} time(s) that are NaN, "
                         "infinite or <= 0: survival times must be finite and > 0")
    if y.shape[0] and not n_events:
        raise ValueError(f"{what}[{event!r}] has no observed event (all False): the Cox "
                         "partial likelihood needs at least one event")
    return signed
