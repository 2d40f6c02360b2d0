"""Survival kernels: cumulative sums of exponentials in log space, and Harrell's C.

The Cox loss sums ``w exp(F)`` over risk sets and ``D / S`` over event times
(``losses.survival``): as running sums of exponentials kept in log space
(``log_cumsum_exp``), so that no log hazard, however far from the others, overflows
or underflows them. The concordance index counts pairs, which a Fenwick tree over the
ranks of the risk scores does in O(n log n) instead of O(n^2) (``concordance_sums``; for
the interval-censored times of ``loss="aft"``, ``interval_concordance_sums``).
"""

import math

import numpy as np
from numba import prange

from ._jit import inline, kernel, parallel_kernel


@parallel_kernel
def grad_hess_cox(group, event, raw, sample_weight, log_a, log_b, gradient, hessian):
    """Cox gradients and hessians of each row from its time group's log A and log B.

    ``g = w exp(F) A - w d`` and ``h = w exp(F) A - (w exp(F))^2 B``, the two products
    as exponentials of sums of logs (each at most the weight of the events up to the
    row's time); ``h`` clipped at 0 against rounding. A row of weight 0 gets 0.
    """
    for k in prange(raw.shape[0]):
        w = sample_weight[k]
        if w > 0.0:
            log_risk = math.log(w) + raw[k]
            push = math.exp(log_risk + log_a[group[k]])
            curvature = math.exp(2.0 * log_risk + log_b[group[k]])
            gradient[k] = push - w * event[k]
            hessian[k] = max(push - curvature, 0.0)
        else:
            gradient[k] = 0.0
            hessian[k] = 0.0


@kernel
def log_cumsum_exp(values, out):
    """``out[i] = log(sum(exp(values[:i + 1])))``, one pass, no overflow or underflow.

    The running sum is kept relative to the largest value so far, rescaled when a
    larger one comes; ``-inf`` values (rows of weight 0, times without events) add
    nothing, and ``out`` is ``-inf`` until a finite value has come.

    Parameters
    ----------
    values : ndarray of float64 of shape (n,)
        Logs of the terms.
    out : ndarray of float64 of shape (n,)
        Where the running log-sums go.
    """
    top = -np.inf
    total = 0.0
    for i in range(values.shape[0]):
        v = values[i]
        if v > top:
            total = total * math.exp(top - v) if total > 0.0 else 0.0
            top = v
        if v > -np.inf:
            total += math.exp(v - top)
        out[i] = top + math.log(total) if total > 0.0 else -np.inf


@inline
def _fenwick_add(tree, position, value):
    """Add ``value`` at 1-based ``position`` of the Fenwick tree ``tree``."""
    while position < tree.shape[0]:
        tree[position] += value
        position += position & -position


@inline
def _fenwick_prefix(tree, position):
    """The sum of 1-based positions 1 .. ``position`` of the Fenwick tree ``tree``."""
    total = 0.0
    while position > 0:
        total += tree[position]
        position -= position & -position
    return total


@kernel
def concordance_sums(time, event, rank, weight, order, n_ranks):
    """Weighted concordant and comparable pair sums of Harrell's concordance index.

    A pair (i, j) is comparable when row i had its event (``event[i]``) and
    ``time[j] > time[i]``, or ``time[j] == time[i]`` with j censored; it is
    concordant when i's risk is the higher (``rank[i] > rank[j]``), and counts one
    half when the risks tie. Each pair weighs ``weight[i] * weight[j]``.

    Parameters
    ----------
    time : ndarray of float64 of shape (n,)
        Event or censoring times.
    event : ndarray of bool of shape (n,)
        Whether each row's event was observed.
    rank : ndarray of int64 of shape (n,)
        Each row's risk score as its rank among the distinct scores (0-based; equal
        scores, equal ranks).
    weight : ndarray of float64 of shape (n,)
        Row weights.
    order : ndarray of int64 of shape (n,)
        The rows by descending ``time``.
    n_ranks : int
        The number of distinct scores.

    Returns
    -------
    concordant : float
        The weight of the concordant pairs, ties in risk counted one half.
    comparable : float
        The weight of the comparable pairs.
    """
    tree = np.zeros(n_ranks + 1)  # weights of the rows seen so far, by rank
    concordant = 0.0
    comparable = 0.0
    n = order.shape[0]
    i = 0
    while i < n:
        t = time[order[i]]
        j = i
        while j < n and time[order[j]] == t:
            j += 1
        # the censored rows of this time are comparable with its events: in first
        for q in range(i, j):
            r = order[q]
            if not event[r]:
                _fenwick_add(tree, rank[r] + 1, weight[r])
        total = _fenwick_prefix(tree, n_ranks)
        for q in range(i, j):
            r = order[q]
            if event[r]:
                lower = _fenwick_prefix(tree, rank[r])
                tied = _fenwick_prefix(tree, rank[r] + 1) - lower
                concordant += weight[r] * (lower + 0.5 * tied)
                comparable += weight[r] * total
        for q in range(i, j):
            r = order[q]
            if event[r]:
                _fenwick_add(tree, rank[r] + 1, weight[r])
        i = j
    return concordant, comparable


@kernel
def interval_concordance_sums(lower, upper, rank, weight, by_lower, by_upper, n_ranks):
    """Weighted concordant and comparable pair sums of Harrell's C on interval-censored times.

    A pair (i, j) is comparable when i's event surely came first: ``upper[i] <
    lower[j]``, or ``upper[i] == lower[j]`` with j's time not observed (``lower[j] <
    upper[j]``: it survived past its lower bound). On right-censored times (events
    ``[t, t]``, censored rows ``[t, inf]``) this is ``concordance_sums``' rule. Concordant,
    ties and weights as there. One sweep down the times: the rows j are added to a
    Fenwick tree of risk ranks as the sweep passes their lower bounds, each row i with
    a finite upper bound is scored against the tree when the sweep reaches it.

    Parameters
    ----------
    lower, upper : ndarray of float64 of shape (n,)
        The bounds of each time (``upper`` inf: right-censored).
    rank : ndarray of int64 of shape (n,)
        Each row's risk score as its rank among the distinct scores (0-based).
    weight : ndarray of float64 of shape (n,)
        Row weights.
    by_lower : ndarray of int64 of shape (n,)
        The rows by descending ``lower``, among equal ones those whose time was not
        observed first.
    by_upper : ndarray of int64 of shape (n,)
        The rows by descending ``upper``.
    n_ranks : int
        The number of distinct scores.

    Returns
    -------
    concordant : float
        The weight of the concordant pairs, ties in risk counted one half.
    comparable : float
        The weight of the comparable pairs.
    """
    tree = np.zeros(n_ranks + 1)  # weights of the rows j passed so far, by rank
    concordant = 0.0
    comparable = 0.0
    n = by_upper.shape[0]
    a = 0
    for b in range(n):
        i = by_upper[b]
        v = upper[i]
        if not v < np.inf:
            continue  # right-censored: never the earlier row of a pair
        while a < n:
            r = by_lower[a]
            if lower[r] > v or (lower[r] == v and lower[r] < upper[r]):
                _fenwick_add(tree, rank[r] + 1, weight[r])
                a += 1
            else:
                break
        below = _fenwick_prefix(tree, rank[i])
        tied = _fenwick_prefix(tree, rank[i] + 1) - below
        concordant += weight[i] * (below + 0.5 * tied)
        comparable += weight[i] * _fenwick_prefix(tree, n_ranks)
    return concordant, comparable
