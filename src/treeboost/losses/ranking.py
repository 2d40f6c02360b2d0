"""Learning-to-rank gradients over query groups (issue 14; the ranker builds on these).

Three losses, each with a context object holding what is fixed by the data, computed
once a fit, and one parallel kernel over queries a stage (``_kernels.ranking``):

- ``lambdarank`` (``LambdaRankContext``): LightGBM's ``lambdarank``; the context keeps
  each row's gain and each query's ideal DCG at the truncation level, and each stage
  sorts the rows of every query by score in one vectorised call;
- ``rank_xendcg`` (``RankXENDCGContext``): LightGBM's ``rank_xendcg``, whose ground
  truth is perturbed by uniform noise drawn afresh every stage;
- ``pairwise`` (``PairwiseContext``): RankNet over every pair of different labels.
"""

from __future__ import annotations

import math

import numpy as np

from .._dtypes import G_H_DTYPE
from .._kernels.ranking import (
    grad_hess_lambdarank,
    grad_hess_pairwise,
    grad_hess_rank_xendcg,
)
from ..metrics import check_relevance_labels, ideal_dcg, label_gains, query_layout
from .base import Loss


def _check_sigma(sigma, name: str) -> float:
    """``sigma`` as a float, or ``ValueError`` naming parameter ``name`` if not finite > 0."""
    if not (isinstance(sigma, (int, float, np.floating)) and np.isfinite(sigma)
            and sigma > 0):
        raise ValueError(f"{name}={sigma!r} must be a finite number > 0")
    return float(sigma)


def _outputs(score, n_rows, gradient, hessian):
    """``score`` as contiguous float64, checked against ``n_rows``; float32 outputs."""
    score = np.ascontiguousarray(score, dtype=np.float64).ravel()
    if score.size != n_rows:
        raise ValueError(f"score has {score.size} values, the labels {n_rows}")
    if gradient is None:
        gradient = np.empty(score.size, dtype=G_H_DTYPE)
    if hessian is None:
        hessian = np.empty(score.size, dtype=G_H_DTYPE)
    return score, gradient, hessian


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
        sigma = _check_sigma(sigma, "sigmoid")
        y, query, rank, n_queries = query_layout(y, group_offsets)
        self.offsets = np.asarray(group_offsets, dtype=np.int64).ravel()
        self.gain = label_gains(y, label_gain)
        best = ideal_dcg(self.gain, query, rank, n_queries, int(truncation_level))
        self.inverse_max_dcg = np.divide(1.0, best, out=np.zeros(n_queries), where=best > 0)
        self.truncation_level = int(truncation_level)
        self.sigma = sigma
        self.norm = bool(norm)
        longest = int(np.diff(self.offsets).max(initial=1))
        # each rank's discount once, by the C library's log2 as inside a kernel (NumPy's
        # vectorised log2 may round differently on some CPUs)
        self.discount = np.array([1.0 / math.log2(2.0 + r) for r in range(longest)])
        self._lambdas = np.empty(y.size)
        self._weights = np.empty(y.size)
        self._order = np.empty(y.size, dtype=np.int64)
        self._tmp = np.empty(y.size, dtype=np.int64)

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
        score, gradient, hessian = _outputs(score, self.gain.size, gradient, hessian)
        grad_hess_lambdarank(self.gain, score, self.offsets, self._order, self._tmp,
                             self.discount, self.inverse_max_dcg, self.truncation_level,
                             self.sigma, self.norm, self._lambdas, self._weights, gradient,
                             hessian)
        return gradient, hessian


class RankXENDCGContext:
    """What a rank_xendcg fit keeps across stages for one data set.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Relevance labels, whole numbers >= 0.
    group_offsets : array-like of int
        Query boundaries: query q is rows ``group_offsets[q]:group_offsets[q + 1]``.
    """

    def __init__(self, y, group_offsets):
        y = query_layout(y, group_offsets)[0]
        check_relevance_labels(y)  # 2**label below: the default gains' bound
        self.offsets = np.asarray(group_offsets, dtype=np.int64).ravel()
        # LightGBM's Phi takes 2**int(label): the labels are whole, so exp2 is exact
        self.exp2_label = np.exp2(y)
        self._rho = np.empty(y.size)
        self._phi = np.empty(y.size)
        self._lambdas = np.empty(y.size)

    def grad_hess(self, score, uniform, gradient=None, hessian=None):
        """Gradients and hessians (float32) of the rows at raw scores ``score``.

        Parameters
        ----------
        score : ndarray of shape (n_samples,)
            Raw scores.
        uniform : ndarray of shape (n_samples,)
            The stage's Uniform[0, 1) draws, one per row in row order (the ``gamma`` of
            the ground-truth weights ``2**label - gamma``).
        gradient, hessian : ndarray of float32 of shape (n_samples,), default=None
            Where to write them; new arrays if None.

        Returns
        -------
        gradient, hessian : ndarray of float32 of shape (n_samples,)
        """
        score, gradient, hessian = _outputs(score, self.exp2_label.size, gradient, hessian)
        uniform = np.ascontiguousarray(uniform, dtype=np.float64).ravel()
        if uniform.size != score.size:
            raise ValueError(f"uniform has {uniform.size} values, the labels {score.size}")
        grad_hess_rank_xendcg(self.exp2_label, uniform, score, self.offsets, self._rho,
                              self._phi, self._lambdas, gradient, hessian)
        return gradient, hessian


class PairwiseContext:
    """What a pairwise (RankNet) fit keeps across stages for one data set.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Relevance labels, whole numbers >= 0.
    group_offsets : array-like of int
        Query boundaries: query q is rows ``group_offsets[q]:group_offsets[q + 1]``.
    sigma : float, default=1.0
        Steepness of the pairwise sigmoid.
    """

    def __init__(self, y, group_offsets, sigma: float = 1.0):
        self.sigma = _check_sigma(sigma, "sigma")
        y = query_layout(y, group_offsets)[0]
        check_relevance_labels(y, gains=False)  # RankNet reads the labels' order only
        self.offsets = np.asarray(group_offsets, dtype=np.int64).ravel()
        # a copy: the Dataset's labels are read-only, a caller's are not, and the kernel
        # would compile once for each
        self.label = np.array(y, dtype=np.float64)
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
        score, gradient, hessian = _outputs(score, self.label.size, gradient, hessian)
        grad_hess_pairwise(self.label, score, self.offsets, self.sigma, self._lambdas,
                           self._weights, gradient, hessian)
        return gradient, hessian


class _RankingLoss(Loss):
    """What the ranking losses share: query groups, relevance labels, F0 = 0.

    Subclasses build their context in ``_new_context``; it is kept for as long as the
    same labels and groups come back, that is for one fit.
    """

    needs_group = True

    def __init__(self):
        self._context = None
        self._context_key = None

    #: whether the loss reads the labels through their gains (``label_gain``, else
    #: ``2**label - 1``), which bounds them; False: their order only
    reads_gains = True

    def validate_target(self, y):
        """Relevance labels: whole numbers >= 0, each with a gain (``ValueError`` otherwise)."""
        check_relevance_labels(np.asarray(y, dtype=np.float64),
                               getattr(self, "label_gain", None), gains=self.reads_gains)

    def init_score(self, y, sample_weight):
        """F0 = 0."""
        return np.zeros(1)

    def init_statistics(self, y, sample_weight):
        """Nothing to sum: F0 is 0 (for training over a collective)."""
        return np.zeros(1)

    def init_from_statistics(self, stats):
        """F0 = 0."""
        return np.zeros(1)

    def pointwise(self, y, raw):
        """Not defined: a ranking loss is a sum over a query's documents, not over rows."""
        raise NotImplementedError(f"{self.name} has no per-row loss: evaluate it with "
                                  "treeboost.metrics.ndcg_at_k")

    def _new_context(self, y, group_offsets):
        raise NotImplementedError

    def _context_of(self, y, sample_weight, group_offsets):
        """The fit's context, built on the first stage of a fit."""
        if group_offsets is None:
            raise ValueError(f"{self.name} needs query groups: build the Dataset with "
                             "group= or qid=")
        key = (id(group_offsets), id(y), y.size)
        if self._context_key != key:
            if np.any(sample_weight != 1.0):
                raise ValueError(f"{self.name} does not take sample_weight yet")
            self._context = self._new_context(y, group_offsets)
            self._context_key = key
        return self._context


class LambdaRank(_RankingLoss):
    """LambdaRank (LightGBM's ``lambdarank`` objective) over the Dataset's query groups.

    Relevance labels are whole numbers >= 0. Raw scores rank the documents of a query;
    F0 is 0, since a constant does not change a ranking. See ``LambdaRankContext``.

    Parameters
    ----------
    lambdarank_truncation_level : int, default=30
        Pairs count when one of the two ranks in the top this many; the NDCG cut-off.
    lambdarank_norm : bool, default=True
        Normalise each query's lambdas.
    sigmoid : float, default=1.0
        Steepness of the pairwise sigmoid.
    label_gain : sequence of float, default=None
        Gain of each label; None gives ``2**l - 1``.
    """

    name = "lambdarank"

    def __init__(self, lambdarank_truncation_level: int = 30, lambdarank_norm: bool = True,
                 sigmoid: float = 1.0, label_gain=None):
        super().__init__()
        self.lambdarank_truncation_level = lambdarank_truncation_level
        self.lambdarank_norm = bool(lambdarank_norm)
        self.sigmoid = _check_sigma(sigmoid, "sigmoid")
        self.label_gain = None if label_gain is None else [float(v) for v in label_gain]

    def _new_context(self, y, group_offsets):
        return LambdaRankContext(y, group_offsets, self.lambdarank_truncation_level,
                                 self.sigmoid, self.lambdarank_norm, self.label_gain)

    def get_params(self):
        """The four parameters above (saved in model files)."""
        return {"lambdarank_truncation_level": self.lambdarank_truncation_level,
                "lambdarank_norm": self.lambdarank_norm, "sigmoid": self.sigmoid,
                "label_gain": self.label_gain}

    def gradient_hessian(self, y, raw, sample_weight, gradient, hessian, group_offsets=None):
        """LambdaRank's gradients and hessians of the rows (float32)."""
        self._context_of(y, sample_weight, group_offsets).grad_hess(raw[0], gradient[0],
                                                                    hessian[0])


class RankXENDCG(_RankingLoss):
    """XE-NDCG (LightGBM's ``rank_xendcg`` objective) over the Dataset's query groups.

    The cross entropy between the softmax of a query's scores and its ground-truth
    distribution ``phi / sum(phi)``, ``phi = 2**label - gamma`` with ``gamma`` drawn
    from Uniform[0, 1) afresh for every row each stage (Bruch et al. 2019, "An
    Alternative Cross Entropy Loss for Learning-to-Rank"), with LightGBM's gradient
    approximation (``RankXENDCGContext``). The draws come from the stage's ``rng``, so a
    model depends on ``random_state`` but not on ``n_jobs``. Relevance labels are whole
    numbers >= 0; F0 is 0, since a constant does not change a ranking.
    """

    name = "rank_xendcg"
    needs_rng = True

    def _new_context(self, y, group_offsets):
        return RankXENDCGContext(y, group_offsets)

    def gradient_hessian(self, y, raw, sample_weight, gradient, hessian, group_offsets=None,
                         rng=None):
        """XE-NDCG's gradients and hessians of the rows (float32), noise drawn from ``rng``."""
        context = self._context_of(y, sample_weight, group_offsets)
        if rng is None:
            raise ValueError(f"{self.name} draws its noise from rng=, a numpy Generator")
        # one vector in row order, drawn here and not in the kernel's threads: the same
        # draws for any number of threads
        uniform = rng.random(y.size)
        context.grad_hess(raw[0], uniform, gradient[0], hessian[0])


class Pairwise(_RankingLoss):
    """RankNet (Burges 2010) over every pair of a query's documents with different labels.

    Each such pair pulls the better labelled document up and the other down by
    ``sigma / (1 + exp(sigma * (s_high - s_low)))``; unlike lambdarank no NDCG weighting,
    truncation or normalisation (``PairwiseContext``). Relevance labels are whole
    numbers >= 0; F0 is 0, since a constant does not change a ranking.

    Parameters
    ----------
    sigmoid : float, default=1.0
        Steepness of the pairwise sigmoid (``sigma``; the name of lambdarank's).
    """

    name = "pairwise"
    reads_gains = False

    def __init__(self, sigmoid: float = 1.0):
        super().__init__()
        self.sigma = _check_sigma(sigmoid, "sigmoid")

    def _new_context(self, y, group_offsets):
        return PairwiseContext(y, group_offsets, sigma=self.sigma)

    def gradient_hessian(self, y, raw, sample_weight, gradient, hessian, group_offsets=None):
        """RankNet's gradients and hessians of the rows (float32)."""
        self._context_of(y, sample_weight, group_offsets).grad_hess(raw[0], gradient[0],
                                                                    hessian[0])

    def get_params(self):
        """``sigmoid`` (saved in model files)."""
        return {"sigmoid": self.sigma}
