"""Pairwise gradients of the learning-to-rank losses, one parallel loop over queries.

Each query's rows are ``offsets[q]:offsets[q + 1]``; ``order`` lists them by descending
score (ties in the data's order), computed for all queries at once by the caller, so the
kernels sort nothing. Queries are independent and each writes only its own rows: the
result does not depend on the number of threads.
"""

import math

from numba import prange

from ._jit import parallel_kernel


@parallel_kernel
def grad_hess_lambdarank(gain, score, offsets, order, inverse_max_dcg, truncation_level,
                         sigma, norm, lambdas, weights, gradient, hessian):
    """LambdaRank's gradients and hessians (LightGBM's ``lambdarank`` objective).

    Every pair of documents with different labels of which at least one is ranked in
    the top ``truncation_level`` by the current scores pulls the better labelled one up
    and the other down by ``sigma * |delta NDCG| * sigmoid(-sigma * (s_high - s_low))``,
    where ``|delta NDCG|`` is the change of the query's NDCG at ``truncation_level`` if
    the two swapped places (divided by ``0.01 + |s_high - s_low|`` with ``norm``, unless
    all the query's scores are equal). With ``norm`` a query's gradients and hessians
    are then scaled by ``log2(1 + S) / S``, S the sum of its pairs' |lambda| times two.
    """
    # gain: float64 (n,), label_gain of each row's label       # IN
    # score: float64 (n,), raw scores                          # IN
    # offsets: int64 (n_queries + 1,)                          # IN
    # order: int64 (n,), rows of each query by descending score, within its span  # IN
    # inverse_max_dcg: float64 (n_queries,), 1 / ideal DCG@truncation (0 if none) # IN
    # truncation_level: int64; sigma: float64; norm: bool
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
        best = score[order[start]]
        worst = score[order[stop - 1]]
        for a in range(pairs):
            ra = order[start + a]
            for b in range(a + 1, n):
                rb = order[start + b]
                if gain[ra] == gain[rb]:
                    continue
                if gain[ra] > gain[rb]:
                    high, low, rank_high, rank_low = ra, rb, a, b
                else:
                    high, low, rank_high, rank_low = rb, ra, b, a
                delta_score = score[high] - score[low]
                discount_gap = abs(1.0 / math.log2(2.0 + rank_high)
                                   - 1.0 / math.log2(2.0 + rank_low))
                delta_ndcg = (gain[high] - gain[low]) * discount_gap * inv
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
        for i in range(start, stop):
            gradient[i] = lambdas[i] * factor
            hessian[i] = weights[i] * factor
