"""Gradients of the learning-to-rank losses, one parallel loop over queries.

Each query's rows are ``offsets[q]:offsets[q + 1]``. Where a loss needs the rows by
descending score (lambdarank), ``order`` lists them so (ties in the data's order),
computed for all queries at once by the caller, so the kernels sort nothing. Queries
are independent and each writes only its own rows: the result does not depend on the
number of threads.

Every kernel takes ``query_weight`` (float64, one per query): each query's gradients and
hessians are multiplied by it as the last step before rounding to float32 (a weight of
1.0 changes no bit; ``losses.ranking`` passes ones without weights).
"""

import math

from numba import prange

from ._jit import inline, parallel_kernel

#: runs sorted by insertion before the merges of ``_sort_by_score``
_RUN = 8


@inline
def _sort_by_score(score, order, tmp, start, stop):
    """``order[start:stop]``: the rows start..stop-1 by descending score, ties in row order.

    A stable bottom-up merge sort (insertion-sorted runs of ``_RUN``, then merges
    through ``tmp``): each query is sorted by the thread that computes its
    gradients, so no sort of all rows precedes the kernel.
    """
    for i in range(start, stop):
        order[i] = i
    for run in range(start, stop, _RUN):
        end = min(run + _RUN, stop)
        for i in range(run + 1, end):
            r = order[i]
            v = score[r]
            k = i - 1
            while k >= run and score[order[k]] < v:  # strict: equal scores keep row order
                order[k + 1] = order[k]
                k -= 1
            order[k + 1] = r
    width = _RUN
    src, dst = order, tmp
    while width < stop - start:
        for left in range(start, stop, 2 * width):
            mid = min(left + width, stop)
            right = min(left + 2 * width, stop)
            a, b, k = left, mid, left
            while a < mid and b < right:
                if score[src[a]] >= score[src[b]]:  # ties from the left run first: stable
                    dst[k] = src[a]
                    a += 1
                else:
                    dst[k] = src[b]
                    b += 1
                k += 1
            while a < mid:
                dst[k] = src[a]
                a += 1
                k += 1
            while b < right:
                dst[k] = src[b]
                b += 1
                k += 1
        src, dst = dst, src
        width *= 2
    if src is not order:  # an odd number of merge passes left the result in tmp
        for i in range(start, stop):
            order[i] = src[i]


@parallel_kernel
def grad_hess_lambdarank(gain, score, offsets, order, tmp, discount, inverse_max_dcg,
                         truncation_level, sigma, norm, query_weight, lambdas, weights,
                         gradient, hessian):
    """LambdaRank's gradients and hessians (LightGBM's ``lambdarank`` objective).

    Every pair of documents with different labels of which at least one is ranked in
    the top ``truncation_level`` by the current scores (descending, ties in row order)
    pulls the better labelled one up and the other down by
    ``sigma * |delta NDCG| * sigmoid(-sigma * (s_high - s_low))``, where ``|delta NDCG|``
    is the change of the query's NDCG at ``truncation_level`` if the two swapped places
    (divided by ``0.01 + |s_high - s_low|`` with ``norm``, unless all the query's scores
    are equal). With ``norm`` a query's gradients and hessians are then scaled by
    ``log2(1 + S) / S``, S the sum of its pairs' |lambda| times two; then by the
    query's weight.
    """
    # gain: float64 (n,), label_gain of each row's label       # IN
    # score: float64 (n,), raw scores                          # IN
    # offsets: int64 (n_queries + 1,)                          # IN
    # order, tmp: int64 (n,), each query's rows by descending score  # scratch
    # discount: float64 (>= largest query,), 1 / log2(2 + rank)     # IN
    # inverse_max_dcg: float64 (n_queries,), 1 / ideal DCG@truncation (0 if none) # IN
    # truncation_level: int64; sigma: float64; norm: bool
    # query_weight: float64 (n_queries,)                       # IN
    # lambdas, weights: float64 (n,), sums before rounding to float32  # scratch
    # gradient, hessian: float32 (n,)                          # OUT
    n_queries = offsets.shape[0] - 1
    for q in prange(n_queries):
        start = offsets[q]
        stop = offsets[q + 1]
        for i in range(start, stop):
            lambdas[i] = 0.0
            weights[i] = 0.0
        inv = inverse_max_dcg[q]
        n = stop - start
        lam_sum = 0.0
        # one document or no gain in the query: no pairs, every row stays 0
        pairs = min(n - 1, truncation_level) if inv != 0.0 else 0
        if pairs > 0:
            _sort_by_score(score, order, tmp, start, stop)
            best = score[order[start]]
            worst = score[order[stop - 1]]
        for a in range(pairs):
            ra = order[start + a]
            for b in range(a + 1, n):
                rb = order[start + b]
                if gain[ra] == gain[rb]:
                    continue
                if gain[ra] > gain[rb]:
                    high, low = ra, rb
                else:
                    high, low = rb, ra
                delta_score = score[high] - score[low]
                # |1/log2(2 + a) - 1/log2(2 + b)|: a < b, and the discount falls with rank
                delta_ndcg = (gain[high] - gain[low]) * (discount[a] - discount[b]) * inv
                if norm and best != worst:
                    delta_ndcg /= 0.01 + abs(delta_score)
                p = 1.0 / (1.0 + math.exp(sigma * delta_score))
                p_lambda = -sigma * delta_ndcg * p
                p_hessian = sigma * sigma * delta_ndcg * p * (1.0 - p)
                lambdas[high] += p_lambda
                lambdas[low] -= p_lambda
                weights[high] += p_hessian
                weights[low] += p_hessian
                lam_sum -= 2.0 * p_lambda
        factor = 1.0
        if norm and lam_sum > 0.0:
            factor = math.log2(1.0 + lam_sum) / lam_sum
        w = query_weight[q]
        for i in range(start, stop):
            gradient[i] = lambdas[i] * factor * w
            hessian[i] = weights[i] * factor * w


#: LightGBM's kEpsilon, the floor of rank_xendcg's sum of ground-truth weights
XENDCG_EPSILON = 1e-15


@inline
def _one_minus(rho):
    """``1 - rho``, or eps where a softmax weight rounded to exactly 1.

    LightGBM divides by ``1 - rho`` unguarded; the guard changes nothing where
    LightGBM's values are finite, and keeps a query whose top score leads by more than ~37 from
    turning every gradient of the query into NaN.
    """
    d = 1.0 - rho
    return d if d > 0.0 else XENDCG_EPSILON


@parallel_kernel
def grad_hess_rank_xendcg(exp2_label, uniform, score, offsets, query_weight, rho, phi,
                          lambdas, gradient, hessian):
    """XE-NDCG's gradients and hessians (LightGBM's ``rank_xendcg`` objective).

    Per query of more than one document: ``rho = softmax(scores)``, ground-truth weights
    ``phi_i = 2**label_i - uniform_i``, and the gradient is LightGBM's third-order
    approximation of the cross entropy between ``phi / sum(phi)`` and ``rho`` (Bruch et
    al. 2019): ``t_i = rho_i - phi_i / max(eps, sum(phi))``, then twice
    ``t_i <- rho_i * (sum_j p_j - p_i)`` with ``p_i = t_i / (1 - rho_i)``, the three
    ``t`` summed; the hessian is ``rho_i * (1 - rho_i)``; both times the query's weight.
    One-document queries get 0.
    """
    # exp2_label: float64 (n,), 2**label of each row           # IN
    # uniform: float64 (n,), this stage's Uniform[0, 1) draws   # IN
    # score: float64 (n,), raw scores                          # IN
    # offsets: int64 (n_queries + 1,)                          # IN
    # query_weight: float64 (n_queries,)                       # IN
    # rho, phi, lambdas: float64 (n,)                          # scratch
    # gradient, hessian: float32 (n,)                          # OUT
    n_queries = offsets.shape[0] - 1
    for q in prange(n_queries):
        start = offsets[q]
        stop = offsets[q + 1]
        if stop - start <= 1:
            for i in range(start, stop):
                gradient[i] = 0.0
                hessian[i] = 0.0
            continue
        # softmax as LightGBM's Common::Softmax: shifted by the maximum against overflow
        top = score[start]
        for i in range(start + 1, stop):
            top = max(top, score[i])
        total = 0.0
        for i in range(start, stop):
            rho[i] = math.exp(score[i] - top)
            total += rho[i]
        phi_sum = 0.0
        for i in range(start, stop):
            rho[i] /= total
            phi[i] = exp2_label[i] - uniform[i]
            phi_sum += phi[i]
        inv_den = 1.0 / max(XENDCG_EPSILON, phi_sum)
        # phi is reused for the p_i terms of the next order, as LightGBM's params[]
        l1 = 0.0
        for i in range(start, stop):
            t = rho[i] - phi[i] * inv_den
            lambdas[i] = t
            phi[i] = t / _one_minus(rho[i])
            l1 += phi[i]
        l2 = 0.0
        for i in range(start, stop):
            t = rho[i] * (l1 - phi[i])
            lambdas[i] += t
            phi[i] = t / _one_minus(rho[i])
            l2 += phi[i]
        w = query_weight[q]
        for i in range(start, stop):
            gradient[i] = (lambdas[i] + rho[i] * (l2 - phi[i])) * w
            hessian[i] = rho[i] * (1.0 - rho[i]) * w


@parallel_kernel
def grad_hess_pairwise(label, score, offsets, sigma, query_weight, lambdas, weights, gradient,
                       hessian):
    """RankNet's gradients and hessians over every pair of a query with different labels.

    A pair with ``label_i > label_j`` adds ``-sigma * p`` to the gradient of i and
    ``+sigma * p`` to that of j, ``p = 1 / (1 + exp(sigma * (s_i - s_j)))``, and
    ``sigma**2 * p * (1 - p)`` to both hessians; no NDCG weighting, no truncation, no
    normalisation; then both times the query's weight. Queries of one document or of
    equal labels get 0.
    """
    # label: float64 (n,), relevance labels                    # IN
    # score: float64 (n,), raw scores                          # IN
    # offsets: int64 (n_queries + 1,)                          # IN
    # sigma: float64
    # query_weight: float64 (n_queries,)                       # IN
    # lambdas, weights: float64 (n,), sums before rounding to float32  # scratch
    # gradient, hessian: float32 (n,)                          # OUT
    n_queries = offsets.shape[0] - 1
    for q in prange(n_queries):
        start = offsets[q]
        stop = offsets[q + 1]
        for i in range(start, stop):
            lambdas[i] = 0.0
            weights[i] = 0.0
        for i in range(start, stop):
            for j in range(i + 1, stop):
                if label[i] == label[j]:
                    continue
                if label[i] > label[j]:
                    high, low = i, j
                else:
                    high, low = j, i
                p = 1.0 / (1.0 + math.exp(sigma * (score[high] - score[low])))
                p_lambda = sigma * p
                p_hessian = sigma * sigma * p * (1.0 - p)
                lambdas[high] -= p_lambda
                lambdas[low] += p_lambda
                weights[high] += p_hessian
                weights[low] += p_hessian
        w = query_weight[q]
        for i in range(start, stop):
            gradient[i] = lambdas[i] * w
            hessian[i] = weights[i] * w
