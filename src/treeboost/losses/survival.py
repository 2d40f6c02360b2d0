"""Survival losses: Cox proportional hazards with Breslow's ties (``loss="cox"``).

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
"""

from __future__ import annotations

import numpy as np

from .._dtypes import G_H_DTYPE
from .._kernels.survival import grad_hess_cox
from .._survival_metrics import (
    TimeGroups,
    check_signed_time,
    cox_negative_log_likelihood,
    log_cumsum,
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
