"""Survival losses: Cox proportional hazards with Breslow's ties (``loss="cox"``), and the
accelerated failure time model (``loss="aft"``, ``AFT``, below).

Labels are signed times (XGBoost's ``survival:cox`` convention, so ``train()`` takes
one column): ``t > 0`` an event observed at ``t``, ``t < 0`` a row right-censored at
``-t``. Raw scores F are log hazard ratios.

The loss is Breslow's negative log partial likelihood, summed over the events,

    L = - sum_i w_i d_i (F_i - log S(t_i)),   S(t) = sum_{j: t_j >= t} w_j exp(F_j),

with ``d_i`` 1 for an event and 0 for a censored row; tied times share one risk set.
Its derivatives in ``F_k`` (the diagonal of the Hessian, as every Newton booster uses):

    g_k = w_k exp(F_k) A(t_k) - w_k d_k,   h_k = w_k exp(F_k) A(t_k) - (w_k exp(F_k))^2 B(t_k)

with ``A(t) = sum_{i: t_i <= t} w_i d_i / S(t_i)`` and ``B(t) = sum_{i: t_i <= t} w_i d_i /
S(t_i)^2``: row k is in the risk set of every event at or before its time. Every
term of ``h_k`` is ``w_i d_i p (1 - p)`` with ``p = w_k exp(F_k) / S(t_i)`` in [0, 1],
so hessians are >= 0. S is a running sum over the rows from the last time back, A and B
running sums over the distinct times, all kept in log space so that no log hazard
overflows or underflows them (``_survival_metrics.risk_set_sums``, the kernel
``log_cumsum_exp``), after one sort of the times a fit (``TimeGroups``, kept while the
same labels come back; ``Cox.prepare`` sorts them before the first stage).

Unlike XGBoost's ``survival:cox``, weights enter the risk sets (a row of weight 2 is
two rows; XGBoost multiplies each row's gradient by its weight only) and rows tied in
time are all in each other's risk sets (XGBoost's gradient of a row leaves out the
events tied with it that come later in its sort); without weights or ties the two
agree.

``loss="aft"`` (XGBoost's ``survival:aft``) models log T = F + sigma Z with Z normal,
logistic or extreme; its labels are the bounds [lower, upper] of each time (equal: an
observed time; upper inf: right-censored; lower 0: left-censored), its loss the negative
log-likelihood, computed in log space (``_survival_metrics.aft_pointwise``), with its
derivatives in F in closed form (``aft_derivatives``) in NumPy: one pass over the rows
a stage, no risk sets.
"""

from __future__ import annotations

import numpy as np

from .._dtypes import G_H_DTYPE
from .._kernels.survival import grad_hess_cox
from .._survival_metrics import (
    TimeGroups,
    aft_log_density,
    aft_pointwise,
    aft_scores,
    censored_scores,
    check_aft_distribution,
    check_signed_time,
    check_time_bounds,
    cox_negative_log_likelihood,
    log_cumsum,
    log_interval_mass,
    risk_set_sums,
)
from .base import Loss


class CoxStage:
    """What one stage's Cox gradients read of every row: the cumulative sums by time.

    Parameters
    ----------
    times : ndarray of shape (n_groups,)
        The distinct times, ascending.
    log_a, log_b : ndarray of shape (n_groups,)
        ``log A(t)`` and ``log B(t)`` at each distinct time (see ``losses.survival``;
        ``-inf`` before the first event).
    """

    def __init__(self, times, log_a, log_b):
        self.times, self.log_a, self.log_b = times, log_a, log_b


def cox_stage(groups: TimeGroups, raw: np.ndarray, sample_weight: np.ndarray) -> CoxStage:
    """The stage's ``CoxStage`` of rows grouped by time at log hazards ``raw`` (n,)."""
    _, log_at_risk, events = risk_set_sums(groups, raw, sample_weight)
    with np.errstate(divide="ignore"):
        log_events = np.log(events)  # -inf at the times without events: no term
    # an event's own row is in its risk set, so log_at_risk is finite where it counts
    safe = np.where(events > 0, log_at_risk, 0.0)
    return CoxStage(groups.times, log_cumsum(log_events - safe),
                    log_cumsum(log_events - 2.0 * safe))


def cox_gradients(stage: CoxStage, group, event, raw, sample_weight, gradient, hessian):
    """Fill ``gradient`` and ``hessian`` (float32) of rows in time groups ``group``.

    The kernel ``grad_hess_cox``: ``w exp(F) A`` and ``(w exp(F))^2 B`` as exponentials
    of sums of logs. Its inputs are fresh float64 arrays (one compiled signature).
    """
    grad_hess_cox(np.ascontiguousarray(group, dtype=np.int64),
                  np.array(event, dtype=np.float64), np.array(raw, dtype=np.float64),
                  np.array(sample_weight, dtype=np.float64), stage.log_a, stage.log_b,
                  gradient, hessian)


class Cox(Loss):
    """Cox proportional hazards, Breslow's ties: XGBoost's ``survival:cox``.

    Labels are signed times (positive: event, negative: censored at ``-y``); raw
    scores are log hazard ratios, the risk scores (higher: earlier event). F0 is 0:
    the partial likelihood does not change with a constant. Leaves take the Newton
    step. The loss value (``eval_metric="loss"``, the default) is
    ``cox_negative_log_likelihood``, per observed event. See the module docstring
    for the formulas.
    """

    name = "cox"
    link = "identity"
    leaf_line_search = "newton"
    #: one row's gradient reads every row's log hazard: over a ``treeboost.collective``
    #: group, ``stage_context`` takes every member's rows
    gradients_read_every_row = True
    #: labels are survival times and the raw scores risk scores (``metrics.loss_task``)
    task = "survival"
    #: the earlier flag of ``task == "survival"``, kept for code that reads it
    is_survival = True

    def __init__(self):
        self._groups_of = None  # (a copy of the labels, their TimeGroups)
        self._prepared = None  # (the fit's labels array, their TimeGroups): ``prepare``

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_groups_of"] = None  # rebuilt from the labels: not pickled with a model
        state["_prepared"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.__dict__.setdefault("_prepared", None)  # pickled before ``prepare`` existed

    def prepare(self, data):
        """Sort the fit's times once (``TimeGroups``), before F0 and the first stage."""
        y = data.y
        self._prepared = (y, self._groups(np.asarray(y, dtype=np.float64)))

    def _groups(self, y) -> TimeGroups:
        """The labels' ``TimeGroups``: sorted once a fit, while the same labels come back."""
        cached = self._groups_of
        if cached is None or cached[0].shape != y.shape or not np.array_equal(cached[0], y):
            self._groups_of = cached = (np.array(y, dtype=np.float64), TimeGroups(y))
        return cached[1]

    def validate_target(self, y):
        """Signed times: finite, non-zero, at least one event (``ValueError`` naming y)."""
        check_signed_time(y)

    def risk_score(self, raw):
        """The risk scores (higher: earlier event) of raw scores (1, n): the log hazards."""
        return raw[0]

    def pointwise(self, y, raw):
        """Not defined: the partial likelihood is a sum over risk sets, not over rows."""
        raise NotImplementedError("loss='cox' has no per-row loss: its value is "
                                  "treeboost.metrics.cox_negative_log_likelihood")

    def __call__(self, y, raw, sample_weight=None) -> float:
        """Negative log partial likelihood per observed event (``cox-nloglik``)."""
        y = np.asarray(y, dtype=np.float64)
        return cox_negative_log_likelihood(y, raw[0], sample_weight, groups=self._groups(y))

    def init_score(self, y, sample_weight):
        """F0 = 0: a constant log hazard does not change the partial likelihood."""
        return np.zeros(1)

    def init_statistics(self, y, sample_weight):
        """Nothing to sum: F0 is 0 (for training over a collective)."""
        return np.zeros(1)

    def init_from_statistics(self, stats):
        """F0 = 0."""
        return np.zeros(1)

    def stage_context(self, y, raw, sample_weight):
        """The stage's ``CoxStage`` from every row (every member's, over a collective)."""
        y = np.asarray(y, dtype=np.float64)
        return cox_stage(self._groups(y), np.asarray(raw[0], dtype=np.float64),
                         np.asarray(sample_weight, dtype=np.float64))

    def gradients(self, data, raw, gradient, hessian, context=None):
        """The Cox gradients of ``data``'s rows (``gradient_hessian``), times sorted once.

        ``prepare`` sorted the fit's times: its labels come back as the same array at
        every stage, and are not compared again.
        """
        prepared = self._prepared
        groups = (prepared[1] if context is None and prepared is not None
                  and prepared[0] is data.y else None)
        return self._fill(data.y, raw, data.weight, gradient, hessian, context, groups)

    def gradient_hessian(self, y, raw, sample_weight, gradient, hessian, context=None):
        """Fill the rows' Cox gradients and hessians; return the stage's ``CoxStage``.

        ``context``: a ``CoxStage`` of every row (training over a collective, where
        these rows are one member's); None computes it from these rows.
        """
        return self._fill(y, raw, sample_weight, gradient, hessian, context, None)

    def _fill(self, y, raw, sample_weight, gradient, hessian, context, groups):
        """``gradient_hessian``, with the labels' ``TimeGroups`` if known (or None)."""
        f = np.asarray(raw[0], dtype=np.float64)
        w = np.asarray(sample_weight, dtype=np.float64)
        if context is None:
            if groups is None:
                groups = self._groups(np.asarray(y, dtype=np.float64))
            context = cox_stage(groups, f, w)
            group, event = groups.group, groups.event
        else:  # another process's rows are in the risk sets: find each row's time
            group = np.searchsorted(context.times, np.abs(y))
            event = (np.asarray(y) > 0).astype(np.float64)
        cox_gradients(context, group, event, f, w, gradient[0], hessian[0])
        return context

    def gradient_scale(self, y, sample_weight):
        """max |g| and |h| at F0 (F = 0), in float64."""
        if y.size == 0:
            return 0.0
        w = np.asarray(sample_weight, dtype=np.float64)
        groups = TimeGroups(np.asarray(y, dtype=np.float64))
        g = np.empty(y.size, dtype=G_H_DTYPE)
        h = np.empty(y.size, dtype=G_H_DTYPE)
        cox_gradients(cox_stage(groups, np.zeros(y.size), w), groups.group, groups.event,
                      np.zeros(y.size), w, g, h)
        return max(float(np.max(np.abs(g))), float(np.max(h)))


# ---- accelerated failure time ---------------------------------------------------------------
#: XGBoost's bounds on each row's AFT gradient and hessian, before its weight
#: (``survival:aft``): |g| <= 15 and 1e-16 <= h <= 15. The hessian's ceiling keeps the
#: Newton step of a leaf of badly predicted rows (the extreme distribution's hessian grows
#: as exp(z)) from vanishing, its floor gives every row some weight in min_child_weight and
#: the leaf sums; the gradient's bound is the same cap in the other direction
AFT_GRADIENT_BOUND = 15.0
AFT_HESSIAN_BOUNDS = (1e-16, 15.0)


def _score(distribution: str, z: np.ndarray) -> np.ndarray:
    """psi(z) = f'(z) / f(z) of the standard ``distribution``."""
    if distribution == "normal":
        return -z
    if distribution == "logistic":
        return -np.tanh(0.5 * z)
    return 1.0 - np.exp(z)  # extreme, z held in [-700, 700]


def _curvature(distribution: str, z: np.ndarray) -> np.ndarray:
    """-psi'(z) of the standard ``distribution`` (>= 0: the densities are log-concave)."""
    if distribution == "normal":
        return np.ones_like(z)
    if distribution == "logistic":  # sech^2(z/2) / 2 = 2 f(z)
        return 2.0 * np.exp(aft_log_density(distribution, z))
    return np.exp(z)


def _bound_ratios(distribution: str, z: np.ndarray, log_mass: np.ndarray):
    """r = f(z) / D at a finite bound, and psi(z) r (0 where r underflows to 0)."""
    with np.errstate(over="ignore", invalid="ignore"):
        r = np.exp(aft_log_density(distribution, z) - log_mass)
        return r, np.where(r > 0, _score(distribution, z) * r, 0.0)


def aft_derivatives(lower, upper, raw, distribution: str, sigma: float):
    """First and second derivatives in F of each row's AFT loss, unclipped and unweighted.

    z = (log t - F) / sigma, dz/dF = -1 / sigma. An observed time: ``g = psi(z) /
    sigma``, ``h = -psi'(z) / sigma^2``. A censored row, with ``D = F(z_u) - F(z_l)``
    and ``r = f(z) / D`` at each bound (0 at an infinite one): ``g = (r_u - r_l) /
    sigma``, ``h = ((r_u - r_l)^2 - (psi_u r_u - psi_l r_l)) / sigma^2`` (Barnwal, Cho and
    Hocking 2022, "Survival regression with accelerated failure time model in XGBoost",
    eqs. 9-12), each ratio ``r`` as the exponential of a difference of logs. The three
    densities are log-concave, so the loss is convex in F and ``h >= 0``.

    Parameters
    ----------
    lower, upper : ndarray of float64 of shape (n_samples,)
        The time bounds (``check_time_bounds``).
    raw : ndarray of float64 of shape (n_samples,)
        Predicted log times.
    distribution : str
        One of ``AFT_DISTRIBUTIONS``.
    sigma : float
        The scale.

    Returns
    -------
    gradient, hessian : ndarray of float64 of shape (n_samples,)
    """
    observed = lower == upper
    g, h = np.empty(raw.shape), np.empty(raw.shape)
    z = aft_scores(distribution, sigma, np.log(lower[observed]), raw[observed])
    g[observed] = _score(distribution, z) / sigma
    h[observed] = _curvature(distribution, z) / sigma**2
    censored = ~observed
    z_l, z_u, has_lower, has_upper = censored_scores(lower[censored], upper[censored],
                                                     raw[censored], distribution, sigma)
    log_mass = log_interval_mass(distribution, z_l, z_u, has_lower, has_upper)
    r_l, r_u = np.zeros(z_l.shape), np.zeros(z_l.shape)  # 0 at a bound that is not
    psi_l, psi_u = np.zeros(z_l.shape), np.zeros(z_l.shape)
    r_l[has_lower], psi_l[has_lower] = _bound_ratios(distribution, z_l[has_lower],
                                                     log_mass[has_lower])
    r_u[has_upper], psi_u[has_upper] = _bound_ratios(distribution, z_u[has_upper],
                                                     log_mass[has_upper])
    with np.errstate(invalid="ignore"):
        diff = r_u - r_l
        gc, hc = diff / sigma, (diff * diff - (psi_u - psi_l)) / sigma**2
    # an interval whose mass is 0 to float64 (both bounds far in one tail): the pull
    # toward it, then clipped, as XGBoost's limits
    lost = ~np.isfinite(gc) | ~np.isfinite(hc)
    if lost.any():
        gc = np.where(lost, np.where(z_l + z_u > 0, -np.inf, np.inf), gc)
        hc = np.where(lost, 1.0 / sigma**2, hc)
    g[censored], h[censored] = gc, hc
    return g, h


def aft_init_score(lower, upper, sample_weight, distribution: str, sigma: float) -> float:
    """F0: the constant log time minimising the weighted AFT loss.

    The loss is convex in F, so F0 is the root of the summed (unclipped) gradient:
    Newton steps on the summed derivatives from the mean finite log bound, kept inside a
    bracket of the root (a bisection where a step would leave it, doubling steps while
    one side is open); a few passes over the rows. It exists when some row of positive
    weight has a lower bound > 0 and some one an upper bound < inf (``ValueError``
    naming y otherwise: every row right-censored, say, makes longer times always
    likelier).
    """
    w = np.asarray(sample_weight, dtype=np.float64)
    if not (w[lower > 0] > 0).any() or not (w[np.isfinite(upper)] > 0).any():
        side = "right" if (w[lower > 0] > 0).any() else "left"
        raise ValueError(f"y: every row of positive weight is {side}-censored, so the AFT "
                         "likelihood has no finite constant maximiser (F0); an observed time "
                         "or a bound on the other side is needed")
    logs = np.log(np.concatenate((lower[lower > 0], upper[np.isfinite(upper)])))
    c, lo, hi, span = float(np.mean(logs)), -np.inf, np.inf, sigma
    for _ in range(200):
        g, h = aft_derivatives(lower, upper, np.full(lower.size, c), distribution, sigma)
        slope, curvature = float(np.dot(w, g)), float(np.dot(w, h))
        if slope == 0.0:
            return c
        lo, hi = (lo, c) if slope > 0 else (c, hi)
        new = c - slope / curvature if curvature > 0 else np.nan
        if abs(new - c) <= 1e-13 * (1.0 + abs(c)):  # converged (NaN is not)
            return float(new)
        if not lo < new < hi:  # also NaN
            if np.isfinite(lo) and np.isfinite(hi):
                new = 0.5 * (lo + hi)
            else:
                new, span = (c - span if slope > 0 else c + span), 2.0 * span
        c = float(new)
    return c


class AFT(Loss):
    """Accelerated failure time: XGBoost's ``survival:aft``.

    log T = F(x) + sigma Z, Z of the standard ``aft_loss_distribution``; raw scores are
    predicted log times and predictions ``exp(F)`` times (the log link). Labels are the
    bounds ``[lower, upper]`` of each row's time, shape (n_samples, 2) (``train()``
    stacks ``Dataset``'s ``label`` and ``label_upper_bound``), or times (n_samples,), all
    observed. The loss is the negative log-likelihood (``aft_pointwise``), its value the
    weighted mean (``aft-nloglik``); gradients and hessians are its derivatives in F
    (``aft_derivatives``), clipped as XGBoost's (``AFT_GRADIENT_BOUND``,
    ``AFT_HESSIAN_BOUNDS``) and then weighted; F0 is the exact constant minimiser
    (``aft_init_score``; XGBoost starts from ``log(base_score)``, 0.5 by default), and
    leaves take the Newton step.

    Parameters
    ----------
    aft_loss_distribution : {"normal", "logistic", "extreme"}, default="normal"
        The distribution of Z.
    aft_loss_distribution_scale : float, default=1.0
        sigma > 0.
    """

    name = "aft"
    link = "log"
    leaf_line_search = "newton"
    #: labels are survival times' bounds and the raw scores log times (``metrics.loss_task``)
    task = "survival"
    is_survival = True

    def __init__(self, aft_loss_distribution="normal", aft_loss_distribution_scale=1.0):
        self.distribution, self.scale = check_aft_distribution(aft_loss_distribution,
                                                               aft_loss_distribution_scale)

    def get_params(self) -> dict:
        """The distribution and its scale (saved with a model)."""
        return {"aft_loss_distribution": self.distribution,
                "aft_loss_distribution_scale": self.scale}

    def validate_target(self, y):
        """Times > 0, or bounds [lower, upper] (``ValueError`` naming y)."""
        check_time_bounds(y)

    def risk_score(self, raw):
        """The risk scores (higher: earlier event) of raw scores (1, n): minus the log times."""
        return -raw[0]

    def pointwise(self, y, raw):
        """Each row's negative log-likelihood (``aft_pointwise``)."""
        lower, upper = check_time_bounds(y)
        return aft_pointwise(lower, upper, raw[0], self.distribution, self.scale)

    def init_score(self, y, sample_weight):
        """F0, the constant minimiser (``aft_init_score``)."""
        lower, upper = check_time_bounds(y)
        return np.array([aft_init_score(lower, upper, sample_weight, self.distribution,
                                        self.scale)])

    def gradient_hessian(self, y, raw, sample_weight, gradient, hessian):
        """Fill the clipped, weighted derivatives in F (float32 (1, n))."""
        lower, upper = check_time_bounds(y)
        g, h = aft_derivatives(lower, upper, np.asarray(raw[0], dtype=np.float64),
                               self.distribution, self.scale)
        w = np.asarray(sample_weight, dtype=np.float64)
        gradient[0][:] = np.clip(g, -AFT_GRADIENT_BOUND, AFT_GRADIENT_BOUND) * w
        hessian[0][:] = np.clip(h, *AFT_HESSIAN_BOUNDS) * w

    def gradient_scale(self, y, sample_weight):
        """At most 15 times the largest weight (the clipped derivatives)."""
        return AFT_GRADIENT_BOUND * float(np.max(sample_weight, initial=0.0))
