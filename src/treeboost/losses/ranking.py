"""Learning-to-rank gradients over query groups (issue 14; the ranker builds on these).

``lambdarank_grad_hess`` computes LightGBM's ``lambdarank`` gradients and hessians for
raw scores: what is fixed by the data (each row's gain and each query's ideal DCG at the
truncation level) is computed once by ``LambdaRankContext``; each stage sorts the rows
of every query by score in one vectorised call and runs one parallel kernel over
queries (``_kernels.ranking``).
"""

from __future__ import annotations

import numpy as np

from .._dtypes import G_H_DTYPE
from .._kernels.ranking import grad_hess_lambdarank
from ..metrics import ideal_dcg, label_gains, query_layout
from .base import Loss


class LambdaRankContext:
    """What a lambdarank fit keeps across stages for one data set.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Relevance labels, whole numbers >= 0.
    group_offsets : array-like of int
        Query boundaries: query q is rows ``group_offsets[q]:group_offsets[q + 1]``.
    truncation_level : int, default=30
        Pairs count when one of the two is ranked in the top ``truncation_level``
        (LightGBM's ``lambdarank_truncation_level``); also the NDCG cut-off.
    sigma : float, default=1.0
        Steepness of the pairwise sigmoid (LightGBM's ``sigmoid``).
    norm : bool, default=True
        Normalise each query's lambdas (LightGBM's ``lambdarank_norm``).
    label_gain : array-like, default=None
        Gain of each label; None gives ``2**l - 1``.
    """

    def __init__(self, y, group_offsets, truncation_level: int = 30, sigma: float = 1.0,
                 norm: bool = True, label_gain=None):
        if isinstance(truncation_level, bool) or not isinstance(
                truncation_level, (int, np.integer)) or truncation_level < 1:
            raise ValueError(f"lambdarank_truncation_level={truncation_level!r} must be an "
                             "int >= 1")
        if not (isinstance(sigma, (int, float, np.floating)) and np.isfinite(sigma)
                and sigma > 0):
            raise ValueError(f"sigmoid={sigma!r} must be a finite number > 0")
        y, query, rank, n_queries = query_layout(y, group_offsets)
        self.offsets = np.asarray(group_offsets, dtype=np.int64).ravel()
        self.query = query
        self.gain = label_gains(y, label_gain)
        best = ideal_dcg(self.gain, query, rank, n_queries, int(truncation_level))
        self.inverse_max_dcg = np.divide(1.0, best, out=np.zeros(n_queries), where=best > 0)
        self.truncation_level = int(truncation_level)
        self.sigma = float(sigma)
        self.norm = bool(norm)
        self._lambdas = np.empty(y.size)
        self._weights = np.empty(y.size)

    def grad_hess(self, score, gradient=None, hessian=None):
        """Gradients and hessians (float32) of the rows at raw scores ``score``.

        Parameters
        ----------
        score : ndarray of shape (n_samples,)
            Raw scores.
        gradient, hessian : ndarray of float32 of shape (n_samples,), default=None
            Where to write them; new arrays if None.

        Returns
        -------
        gradient, hessian : ndarray of float32 of shape (n_samples,)
        """
        score = np.ascontiguousarray(score, dtype=np.float64).ravel()
        if score.size != self.gain.size:
            raise ValueError(f"score has {score.size} values, the labels {self.gain.size}")
        if gradient is None:
            gradient = np.empty(score.size, dtype=G_H_DTYPE)
        if hessian is None:
            hessian = np.empty(score.size, dtype=G_H_DTYPE)
        order = np.lexsort((-score, self.query))
        grad_hess_lambdarank(self.gain, score, self.offsets, order, self.inverse_max_dcg,
                             self.truncation_level, self.sigma, self.norm, self._lambdas,
                             self._weights, gradient, hessian)
        return gradient, hessian


class LambdaRank(Loss):
    """LambdaRank (LightGBM's ``lambdarank`` objective) over the Dataset's query groups.

    Relevance labels are whole numbers >= 0 with gains ``2**l - 1``; pairs count down to
    rank 30 (``LambdaRankContext``'s defaults). Raw scores rank the documents of a query;
    F0 is 0, since a constant does not change a ranking.
    """

    name = "lambdarank"
    needs_group = True

    def __init__(self):
        self._context = None
        self._context_key = None

    def validate_target(self, y):
        """Relevance labels: whole numbers >= 0 (``ValueError`` otherwise)."""
        label_gains(np.asarray(y, dtype=np.float64), None)

    def init_score(self, y, sample_weight):
        """F0 = 0."""
        return np.zeros(1)

    def pointwise(self, y, raw):
        """Not defined: a ranking loss is a sum over pairs of a query, not over rows."""
        raise NotImplementedError("lambdarank has no per-row loss: evaluate it with "
                                  "treeboost.metrics.ndcg_at_k")

    def gradient_hessian(self, y, raw, sample_weight, gradient, hessian, group_offsets=None):
        """LambdaRank's gradients and hessians of the rows (float32)."""
        if group_offsets is None:
            raise ValueError("lambdarank needs query groups: build the Dataset with group= "
                             "or qid=")
        key = (id(group_offsets), id(y), y.size)
        if self._context_key != key:  # the labels' gains and ideal DCGs, once a fit
            if np.any(sample_weight != 1.0):
                raise ValueError("lambdarank does not take sample_weight yet")
            self._context = LambdaRankContext(y, group_offsets)
            self._context_key = key
        self._context.grad_hess(raw[0], gradient[0], hessian[0])
