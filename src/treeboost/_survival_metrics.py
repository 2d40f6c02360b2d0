"""Survival labels and metrics: signed times, Cox risk-set sums, concordance, partial likelihood.

Labels are one column of signed times, XGBoost's ``survival:cox`` convention: a
positive time is an observed event at that time, a negative one a row right-censored
at ``|time|`` (known to survive past it). ``TimeGroups`` holds what the labels fix
(the rows grouped by distinct time), ``risk_set_sums`` the sums over risk sets that
the Cox loss's gradients and its partial likelihood read, and the metrics:

- ``concordance_index``: Harrell's C, the fraction of comparable pairs whose risk
  scores are in the order of their times (higher risk, earlier event);
- ``cox_negative_log_likelihood``: Breslow's negative log partial likelihood per
  event (XGBoost's ``cox-nloglik``);
- ``aft_negative_log_likelihood``: the accelerated failure time model's mean negative
  log-likelihood (XGBoost's ``aft-nloglik``), whose labels are the bounds [lower, upper]
  of each time (``check_time_bounds``), in log space through the distributions' log
  density, log CDF and log survival function (``aft_log_density`` ...).

``treeboost.metrics`` registers them as ``eval_metric`` names ("cindex",
"cox-nloglik", "aft-nloglik"); the Cox loss (``losses.survival``) builds on the sums,
the AFT loss on the distributions.
"""

from __future__ import annotations

import numpy as np

from ._kernels.survival import concordance_sums, interval_concordance_sums, log_cumsum_exp


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
    y : array-like of shape (n_samples,) or (n_samples, 2)
        Signed times (positive: event, negative: censored at ``-y``), or the bounds
        ``[lower, upper]`` of each time (``loss="aft"``): then a pair is comparable when
        the first row's event surely came first, its upper bound below the other's
        lower bound (or equal to it, the other's time not observed). On right-censored
        times (``[t, t]`` an event, ``[t, inf]`` censored) this is Harrell's rule.
    risk : array-like of shape (n_samples,)
        Risk scores: a Cox model's log hazard ratios (``TreeBoostSurvival.predict``), an
        AFT model's negated log times.
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
    if np.ndim(y) == 2 and np.shape(y)[1] == 2:  # AFT's bounds
        lower, upper = check_time_bounds(y)
        risk = _scores(risk, lower.size, "risk")
        w = _weights(sample_weight, lower.size)
        distinct, rank = np.unique(risk, return_inverse=True)
        # descending lower bounds, the rows whose time was not observed first among ties
        by_lower = np.lexsort((lower == upper, -lower)).astype(np.int64)
        by_upper = np.argsort(-upper, kind="stable").astype(np.int64)
        # fresh contiguous, writeable copies (of read-only or strided columns): the
        # kernel's one signature
        concordant, comparable = interval_concordance_sums(
            np.array(lower), np.array(upper), rank.astype(np.int64), np.array(w), by_lower,
            by_upper, int(distinct.size))
    else:
        y = check_signed_time(y, require_event=False)
        risk = _scores(risk, y.size, "risk")
        w = _weights(sample_weight, y.size)
        time = np.abs(y)
        distinct, rank = np.unique(risk, return_inverse=True)
        order = np.argsort(-time, kind="stable").astype(np.int64)
        concordant, comparable = concordance_sums(time, y > 0, rank.astype(np.int64), w,
                                                  order, int(distinct.size))
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
    check_survival_metric("cox-nloglik", loss)
    return cox_negative_log_likelihood(y, raw[0], sample_weight)


# ---- accelerated failure time (``loss="aft"``) --------------------------------------------
#: the noise distributions of ``loss="aft"`` (XGBoost's ``aft_loss_distribution``): the
#: standard normal, the standard logistic, and the extreme value distribution of the minimum
#: (Gumbel's, the log of a Weibull time), each of log time given the raw score
AFT_DISTRIBUTIONS = ("normal", "logistic", "extreme")
#: the extreme distribution's z is held in [-700, 700]: exp(z) overflows float64 past 709.78
#: (beyond, its gradients and hessians are clipped anyway, and its density is 0 to float64)
_EXTREME_Z = 700.0
_HALF_LOG_2PI = 0.5 * np.log(2.0 * np.pi)


def check_aft_distribution(distribution, scale) -> tuple[str, float]:
    """The AFT distribution and scale, or a ``ValueError`` naming the parameter.

    Parameters
    ----------
    distribution : str
        One of ``AFT_DISTRIBUTIONS`` (``aft_loss_distribution``).
    scale : float
        sigma > 0, finite (``aft_loss_distribution_scale``).

    Returns
    -------
    tuple of (str, float)
    """
    if not isinstance(distribution, str) or distribution not in AFT_DISTRIBUTIONS:
        raise ValueError(f"aft_loss_distribution={distribution!r} must be one of "
                         f"{list(AFT_DISTRIBUTIONS)}")
    try:
        sigma = float(scale)
    except (TypeError, ValueError):
        sigma = float("nan")
    if isinstance(scale, bool) or not (np.isfinite(sigma) and sigma > 0):
        raise ValueError(f"aft_loss_distribution_scale={scale!r} must be a float in (0, inf)")
    return distribution, sigma


def check_time_bounds(y, what: str = "y") -> tuple[np.ndarray, np.ndarray]:
    """AFT labels as float64 lower and upper bounds of the times, or a ``ValueError``.

    Parameters
    ----------
    y : array-like of shape (n_samples,) or (n_samples, 2)
        Times > 0 (every row observed: lower = upper = y), or the bounds ``[lower,
        upper]`` of each row's time: ``lower == upper`` an observed time, ``upper =
        inf`` right-censored, ``lower = 0`` left-censored, else interval-censored.
    what : str, default="y"
        The name of the labels in error messages.

    Returns
    -------
    lower, upper : ndarray of float64 of shape (n_samples,)

    Raises
    ------
    ValueError
        Naming ``what``: NaN, a negative or infinite lower bound, an upper bound that is
        not > 0 or is below its lower bound, or another shape.
    """
    try:
        y = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be survival times (numbers): {exc}") from None
    if y.ndim == 1:
        lower = upper = y
    elif y.ndim == 2 and y.shape[1] == 2:
        lower, upper = y[:, 0], y[:, 1]
    else:
        raise ValueError(f"{what} must be times of shape (n_samples,) or their bounds "
                         f"[lower, upper] of shape (n_samples, 2), got shape {y.shape}")
    for bad, text in ((np.isnan(lower) | np.isnan(upper), "NaN time bound(s)"),
                      (~np.isfinite(lower), "infinite lower bound(s) (upper bounds may be "
                       "inf: right-censored)"),
                      (lower < 0, "negative time(s)"),
                      (~(upper > 0), "upper bound(s) <= 0 (a time is > 0)"),
                      (upper < lower, "upper bound(s) below their lower bound")):
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(f"{what} holds {int(bad.sum())} {text} (the first at row {i}: "
                             f"[{lower[i]:g}, {upper[i]:g}])")
    return lower, upper


def aft_log_density(distribution: str, z: np.ndarray) -> np.ndarray:
    """log f(z) of the standard ``distribution`` (``AFT_DISTRIBUTIONS``)."""
    if distribution == "normal":
        return -0.5 * z * z - _HALF_LOG_2PI
    if distribution == "logistic":
        return -np.logaddexp(0.0, -z) - np.logaddexp(0.0, z)
    return z - np.exp(z)  # extreme: f(z) = exp(z - exp(z)); z held in [-700, 700]


def aft_log_cdf(distribution: str, z: np.ndarray) -> np.ndarray:
    """log F(z), accurate in the lower tail (``-inf`` at ``z = -inf``)."""
    from scipy.special import log_ndtr

    if distribution == "normal":
        return log_ndtr(z)
    if distribution == "logistic":
        return -np.logaddexp(0.0, -z)
    with np.errstate(divide="ignore"):  # F = 1 - exp(-exp(z)), ~exp(z) in the lower tail
        return np.where(z < -30.0, z - 0.5 * np.exp(z), np.log(-np.expm1(-np.exp(z))))


def aft_log_sf(distribution: str, z: np.ndarray) -> np.ndarray:
    """log (1 - F(z)), accurate in the upper tail (``-inf`` at ``z = inf``)."""
    from scipy.special import log_ndtr

    if distribution == "normal":
        return log_ndtr(-z)
    if distribution == "logistic":
        return -np.logaddexp(0.0, z)
    return -np.exp(z)


def aft_scores(distribution: str, sigma: float, log_time: np.ndarray, raw: np.ndarray):
    """z = (log t - F) / sigma, the extreme distribution's held in [-700, 700]."""
    with np.errstate(invalid="ignore"):  # inf - inf does not arise: raw is finite
        z = (log_time - raw) / sigma
    return np.clip(z, -_EXTREME_Z, _EXTREME_Z) if distribution == "extreme" else z


def log_interval_mass(distribution: str, z_l: np.ndarray, z_u: np.ndarray,
                      has_lower: np.ndarray, has_upper: np.ndarray) -> np.ndarray:
    """log (F(z_u) - F(z_l)) of censored rows, from the tail where it keeps its digits.

    A right-censored row (no upper bound) is ``log S(z_l)``, a left-censored one (no
    lower bound) ``log F(z_u)``, a row without either 0; an interval above the mode's
    side (``z_l > 0``) is ``S(z_l) - S(z_u)``, else ``F(z_u) - F(z_l)``, each as ``log a
    + log(1 - b / a)`` (``log(-expm1(.))``): no cancellation, no underflow of the mass of
    an interval far in a tail.

    Parameters
    ----------
    distribution : str
        One of ``AFT_DISTRIBUTIONS``.
    z_l, z_u : ndarray of float64 of shape (n,)
        The rows' scores at their bounds (read where the bound is).
    has_lower, has_upper : ndarray of bool of shape (n,)
        Whether the row has a lower bound > 0, an upper bound < inf.

    Returns
    -------
    ndarray of float64 of shape (n,)
    """
    out = np.zeros(z_l.shape)
    right, left = has_lower & ~has_upper, has_upper & ~has_lower
    out[right] = aft_log_sf(distribution, z_l[right])
    out[left] = aft_log_cdf(distribution, z_u[left])
    both = has_lower & has_upper
    zl, zu = z_l[both], z_u[both]
    upper_tail = zl > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        sf_l, sf_u = aft_log_sf(distribution, zl), aft_log_sf(distribution, zu)
        cdf_l, cdf_u = aft_log_cdf(distribution, zl), aft_log_cdf(distribution, zu)
        from_sf = sf_l + np.log(-np.expm1(sf_u - sf_l))
        from_cdf = cdf_u + np.log(-np.expm1(cdf_l - cdf_u))
    out[both] = np.where(upper_tail, from_sf, from_cdf)
    return out


def censored_scores(lower, upper, raw, distribution: str, sigma: float):
    """z at the bounds of censored rows and which bounds they have (``log_interval_mass``).

    Returns ``(z_l, z_u, has_lower, has_upper)``; z is 0 where the bound is not (0 or
    inf), and not read there.
    """
    has_lower, has_upper = lower > 0, np.isfinite(upper)
    with np.errstate(divide="ignore"):
        log_l = np.log(np.where(has_lower, lower, 1.0))
    log_u = np.log(np.where(has_upper, upper, 1.0))
    z_l = np.where(has_lower, aft_scores(distribution, sigma, log_l, raw), 0.0)
    z_u = np.where(has_upper, aft_scores(distribution, sigma, log_u, raw), 0.0)
    return z_l, z_u, has_lower, has_upper


def aft_pointwise(lower, upper, raw, distribution: str, sigma: float) -> np.ndarray:
    """Each row's AFT negative log-likelihood at log times ``raw`` (XGBoost's
    ``aft-nloglik`` terms, without its floor of 1e-12 on the likelihood).

    An observed time t: ``-log f(z) + log(sigma t)``, the density of the time; a censored
    row: ``-log(F(z_u) - F(z_l))``, z = (log bound - F) / sigma.
    """
    raw = np.asarray(raw, dtype=np.float64)
    observed = lower == upper
    out = np.empty(raw.shape, dtype=np.float64)
    t = lower[observed]
    z = aft_scores(distribution, sigma, np.log(t), raw[observed])
    out[observed] = -aft_log_density(distribution, z) + np.log(sigma * t)
    censored = ~observed
    bounds = censored_scores(lower[censored], upper[censored], raw[censored], distribution,
                             sigma)
    out[censored] = -log_interval_mass(distribution, *bounds)
    return out


def aft_negative_log_likelihood(y, raw, sample_weight=None, *, distribution: str,
                                scale: float) -> float:
    """Weighted mean negative log-likelihood of an AFT model (XGBoost's ``aft-nloglik``).

    Parameters
    ----------
    y : array-like of shape (n_samples,) or (n_samples, 2)
        Times, or their bounds ``[lower, upper]`` (``check_time_bounds``).
    raw : array-like of shape (n_samples,) or (1, n_samples)
        Predicted log times (raw scores).
    sample_weight : array-like of shape (n_samples,), default=None
        Row weights.
    distribution : {"normal", "logistic", "extreme"}
        The noise distribution of log time.
    scale : float
        Its scale sigma.

    Returns
    -------
    float
        ``sum_i w_i l_i / sum_i w_i`` with ``l_i`` the terms of ``aft_pointwise``.
    """
    distribution, sigma = check_aft_distribution(distribution, scale)
    lower, upper = check_time_bounds(y)
    raw = _scores(raw, lower.size, "raw")
    w = _weights(sample_weight, lower.size)
    return float(np.average(aft_pointwise(lower, upper, raw, distribution, sigma), weights=w))


def check_survival_metric(name, loss) -> None:
    """Refuse a likelihood metric of the other survival loss (``ValueError`` naming it):
    "aft-nloglik" needs ``loss="aft"``'s distribution, "cox-nloglik" reads log hazards."""
    loss_name = getattr(loss, "name", None)
    if name == "aft-nloglik" and loss_name != "aft":
        raise ValueError(f"eval_metric='aft-nloglik' needs loss='aft' (its distribution "
                         f"and scale), got loss={loss_name!r}")
    if name == "cox-nloglik" and loss_name == "aft":
        raise ValueError("eval_metric='cox-nloglik' needs loss='cox' (log hazards); an AFT "
                         "model's likelihood is 'aft-nloglik'")


def aft_nloglik_metric(y, raw, sample_weight, loss) -> float:
    """``eval_metric="aft-nloglik"``: ``aft_negative_log_likelihood`` under ``loss``'s
    distribution and scale (``loss="aft"`` only)."""
    check_survival_metric("aft-nloglik", loss)
    params = loss.get_params()
    return aft_negative_log_likelihood(y, raw[0], sample_weight,
                                       distribution=params["aft_loss_distribution"],
                                       scale=params["aft_loss_distribution_scale"])
