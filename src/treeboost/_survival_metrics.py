"""Survival labels and metrics: signed times, Cox risk-set sums, concordance, partial likelihood.

Labels are one column of signed times, XGBoost's ``survival:cox`` convention: a
positive time is an observed event at that time, a negative one a row right-censored
at ``|time|`` (known to survive past it). ``TimeGroups`` holds what the labels fix
(the rows grouped by distinct time), ``risk_set_sums`` the sums over risk sets that
the Cox loss's gradients and its partial likelihood read, and the two metrics:

- ``concordance_index``: Harrell's C, the fraction of comparable pairs whose risk
  scores are in the order of their times (higher risk, earlier event);
- ``cox_negative_log_likelihood``: Breslow's negative log partial likelihood per
  event (XGBoost's ``cox-nloglik``).

``treeboost.metrics`` registers both as ``eval_metric`` names ("cindex",
"cox-nloglik"); the Cox loss (``losses.survival``) builds on the sums.
"""

from __future__ import annotations

import numpy as np

from ._kernels.survival import concordance_sums, log_cumsum_exp


def check_signed_time(y, what: str = "y", *, require_event: bool = True) -> np.ndarray:
    """Signed survival times as a float64 vector, or a ``ValueError`` naming ``what``.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Signed times: ``t > 0`` an event observed at ``t``, ``t < 0`` a row censored
        at ``-t``.
    what : str, default="y"
        The name of the labels in error messages.
    require_event : bool, default=True
        Refuse labels without any event (no risk set to learn from).

    Returns
    -------
    ndarray of float64 of shape (n_samples,)

    Raises
    ------
    ValueError
        If ``y`` is not one column of numbers, holds NaN, infinity or 0 (neither an
        event nor a censored time), or has no event while ``require_event``.
    """
    try:
        y = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be signed survival times (numbers): {exc}") from None
    if y.ndim != 1:
        y = y.reshape(-1) if y.ndim == 2 and 1 in y.shape else y
    if y.ndim != 1:
        raise ValueError(f"{what} must be one column of signed survival times, got shape "
                         f"{y.shape}")
    bad = ~np.isfinite(y)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{what} holds {int(bad.sum())} NaN or infinite survival time(s) "
                         f"(the first at row {i}: {y[i]})")
    zero = y == 0
    if zero.any():
        raise ValueError(f"{what} holds {int(zero.sum())} survival time(s) of 0 (the first "
                         f"at row {int(np.argmax(zero))}): signed times need t > 0 for an "
                         "event at t and t < 0 for a row censored at -t")
    if require_event and y.size and not np.any(y > 0):
        raise ValueError(f"{what} has no observed event (every time is censored, < 0): "
                         "the Cox partial likelihood needs at least one event")
    return y


class TimeGroups:
    """The rows of signed times grouped by distinct ``|time|``, ascending.

    Parameters
    ----------
    y : ndarray of float64 of shape (n_samples,)
        Signed times (``check_signed_time``).

    Attributes
    ----------
    group : ndarray of int64 of shape (n_samples,)
        Each row's group: the index of its time among the distinct times.
    times : ndarray of float64 of shape (n_groups,)
        The distinct times, ascending.
    event : ndarray of float64 of shape (n_samples,)
        1.0 where the row's event was observed, else 0.0.
    order : ndarray of int64 of shape (n_samples,)
        The rows by ascending time.
    starts : ndarray of int64 of shape (n_groups,)
        Where each group's rows begin in ``order``.
    """

    def __init__(self, y: np.ndarray):
        time = np.abs(y)
        self.order = np.argsort(time, kind="stable").astype(np.int64)
        ordered = time[self.order]
        first = np.ones(y.size, dtype=bool)
        first[1:] = ordered[1:] != ordered[:-1]
        self.group = np.empty(y.size, dtype=np.int64)
        self.group[self.order] = np.cumsum(first) - 1
        self.starts = np.flatnonzero(first).astype(np.int64)
        self.times = ordered[first]
        self.event = (y > 0).astype(np.float64)

    @property
    def n_groups(self) -> int:
        """The number of distinct times."""
        return int(self.times.size)


def log_cumsum(values: np.ndarray) -> np.ndarray:
    """``log(cumsum(exp(values)))`` without overflow or underflow (a kernel's one pass)."""
    values = np.array(values, dtype=np.float64)  # a fresh array: the kernel's one type
    out = np.empty_like(values)
    log_cumsum_exp(values, out)
    return out


def risk_set_sums(groups: TimeGroups, raw: np.ndarray, sample_weight: np.ndarray):
    """The sums over risk sets of the Cox partial likelihood at log hazards ``raw``, as logs.

    In log space, so that no log hazard, however far from the others, overflows or
    underflows a sum (the partial likelihood's ratios are free of any common scale).

    Parameters
    ----------
    groups : TimeGroups
        The rows grouped by time.
    raw : ndarray of float64 of shape (n_samples,)
        Log hazard ratios.
    sample_weight : ndarray of float64 of shape (n_samples,)
        Row weights.

    Returns
    -------
    log_risk : ndarray of shape (n_samples,)
        ``log(w) + raw`` of each row (``-inf`` where the weight is 0).
    log_at_risk : ndarray of shape (n_groups,)
        The log of the sum of ``w exp(raw)`` over the rows whose time is at or after the
        group's time.
    events : ndarray of shape (n_groups,)
        Sum of the weights of the group's observed events.
    """
    with np.errstate(divide="ignore"):
        log_risk = np.where(sample_weight > 0, np.log(sample_weight) + raw, -np.inf)
    # from the last time back: the running sum at each group's first row is its risk set
    backwards = log_cumsum(log_risk[groups.order[::-1]])[::-1]
    events = np.bincount(groups.group, weights=sample_weight * groups.event,
                         minlength=groups.n_groups)
    return log_risk, backwards[groups.starts], events


def _weights(sample_weight, n: int) -> np.ndarray:
    if sample_weight is None:
        return np.ones(n)
    w = np.asarray(sample_weight, dtype=np.float64).reshape(-1)
    if w.size != n or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"sample_weight must hold {n} finite weights >= 0")
    return w


def _scores(values, n: int, name: str) -> np.ndarray:
    scores = np.asarray(values, dtype=np.float64)
    scores = scores[0] if scores.ndim == 2 and scores.shape[0] == 1 else scores.reshape(-1)
    if scores.size != n:
        raise ValueError(f"{name} has {scores.size} values, y {n}")
    if not np.all(np.isfinite(scores)):
        raise ValueError(f"{name} holds NaN or infinite values")
    return scores


def cox_negative_log_likelihood(y, raw, sample_weight=None, *, groups=None) -> float:
    """Breslow's negative log partial likelihood of a Cox model, per observed event.

    ``-sum_i w_i d_i (F_i - log sum_{j: t_j >= t_i} w_j exp(F_j)) / sum_i w_i d_i`` over
    the rows i (``d_i`` 1 for an event, 0 for a censored row): tied event times share
    one risk set (Breslow's approximation). With unit weights it is XGBoost's
    ``cox-nloglik``.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Signed times (positive: event, negative: censored at ``-y``).
    raw : array-like of shape (n_samples,) or (1, n_samples)
        Log hazard ratios (raw scores).
    sample_weight : array-like of shape (n_samples,), default=None
        Row weights: a row of weight 2 counts as two rows.
    groups : TimeGroups, default=None
        ``TimeGroups(y)`` when already built.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        Naming ``y`` if it is not signed times or has no event of positive weight.
    """
    y = check_signed_time(y)
    raw = _scores(raw, y.size, "raw")
    w = _weights(sample_weight, y.size)
    groups = TimeGroups(y) if groups is None else groups
    _, log_at_risk, events = risk_set_sums(groups, raw, w)
    total = float(events.sum())
    if not total > 0:
        raise ValueError("y has no observed event of positive weight: the partial "
                         "likelihood is empty")
    has = events > 0  # an event's own row is in its risk set: log_at_risk is finite
    fit = float(np.dot(w * groups.event, raw))
    return -(fit - float(np.dot(events[has], log_at_risk[has]))) / total


def concordance_index(y, risk, sample_weight=None) -> float:
    """Harrell's concordance index of risk scores (higher risk, earlier event).

    Over the comparable pairs (i, j), those where i had its event and j was still at
    risk after it (``t_j > t_i``, or ``t_j == t_i`` with j censored), the weighted
    fraction where i has the higher risk score, ties in the score counting one half
    (scikit-survival's ``concordance_index_censored``; lifelines' ``concordance_index``
    of ``-risk``). A pair weighs ``w_i w_j``, so a row of weight 2 counts as two rows.
    O(n log n).

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Signed times (positive: event, negative: censored at ``-y``).
    risk : array-like of shape (n_samples,)
        Risk scores: a Cox model's log hazard ratios (``TreeBoostSurvival.predict``).
    sample_weight : array-like of shape (n_samples,), default=None
        Row weights.

    Returns
    -------
    float
        In [0, 1]: 1 orders every comparable pair right, 0.5 is a random order.

    Raises
    ------
    ValueError
        Naming ``y`` if it is not signed times or no pair is comparable (no event
        before another row's time).
    """
    y = check_signed_time(y, require_event=False)
    risk = _scores(risk, y.size, "risk")
    w = _weights(sample_weight, y.size)
    time = np.abs(y)
    distinct, rank = np.unique(risk, return_inverse=True)
    order = np.argsort(-time, kind="stable").astype(np.int64)
    concordant, comparable = concordance_sums(time, y > 0, rank.astype(np.int64), w, order,
                                              int(distinct.size))
    if not comparable > 0:
        raise ValueError("y has no comparable pair (an observed event before another "
                         "row's time): the concordance index is undefined")
    return concordant / comparable


def risk_scores(raw: np.ndarray, loss) -> np.ndarray:
    """The risk scores (higher: earlier event) of raw scores (n_outputs, n) of ``loss``."""
    to_risk = getattr(loss, "risk_score", None)
    return raw[0] if to_risk is None else to_risk(raw)


def cindex_metric(y, raw, sample_weight, loss) -> float:
    """``eval_metric="cindex"``: ``concordance_index`` of the loss's risk scores."""
    return concordance_index(y, risk_scores(raw, loss), sample_weight)


def cox_nloglik_metric(y, raw, sample_weight, loss) -> float:
    """``eval_metric="cox-nloglik"``: ``cox_negative_log_likelihood`` of the raw scores."""
    return cox_negative_log_likelihood(y, raw[0], sample_weight)
