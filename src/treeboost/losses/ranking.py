"""Learning-to-rank gradients over query groups (issue 14; the ranker builds on these).

Three losses, each with a context object holding what is fixed by the data, computed
once a fit, and one parallel kernel over queries a stage (``_kernels.ranking``):

- ``lambdarank`` (``LambdaRankContext``): LightGBM's ``lambdarank``; the context keeps
  each row's gain and each query's ideal DCG at the truncation level, and each stage
  sorts the rows of every query by score in one vectorised call;
- ``rank_xendcg`` (``RankXENDCGContext``): LightGBM's ``rank_xendcg``, whose ground
  truth is perturbed by uniform noise drawn afresh every stage;
- ``pairwise`` (``PairwiseContext``): RankNet over every pair of different labels.

Weights (issue 37) are query weights, XGBoost's convention: one weight per query, given
per row and the same on every row of a query (``metrics.query_weights``). Each query's
gradients and hessians are multiplied by its weight, normalised to mean 1 over the queries
of positive weight (XGBoost >= 2.0 normalises to mean 1 over the groups; LightGBM
multiplies by its row weights as given). So doubling every weight (any power of two)
changes no bit of a model, another common factor changes the query factors by an ulp of
float64 at most, equal weights are no weights, and a query of weight 0 contributes nothing
(the Dataset and the ranker drop its rows before binning: it is as if absent).
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
from ..metrics import (
    check_relevance_labels,
    ideal_dcg,
    label_gains,
    query_layout,
    query_weights,
)
from ._data import OBJECTIVE_STREAM, TrainingData
from .base import Loss


def _check_sigma(sigma, name: str) -> float:
    """``sigma`` as a float, or ``ValueError`` naming parameter ``name`` if not finite > 0."""
    if not (isinstance(sigma, (int, float, np.floating)) and np.isfinite(sigma)
            and sigma > 0):
        raise ValueError(f"{name}={sigma!r} must be a finite number > 0")
    return float(sigma)


def normalised_query_weights(sample_weight, group_offsets):
    """Each query's gradient factor: its weight over the mean weight of the positive ones.

    Parameters
    ----------
    sample_weight : array-like of shape (n_samples,) or (n_queries,), or None
        Query weights, per row (the same on every row of a query) or per query.
    group_offsets : array-like of int
        Query boundaries: query q is rows ``group_offsets[q]:group_offsets[q + 1]``.

    Returns
    -------
    ndarray of float64 of shape (n_queries,) or None
        ``w_q * n_pos / sum(w)``, ``n_pos`` the number of queries of weight > 0; None
        (no weighting) when every query of positive weight has the same weight, as
        after scaling.

    Raises
    ------
    ValueError
        From ``metrics.query_weights`` (naming ``sample_weight``), or if every weight
        is 0.
    """
    w = query_weights(sample_weight, group_offsets)
    if w is None:
        return None
    positive = w[w > 0]
    if positive.size == 0:
        raise ValueError("sample_weight is 0 on every query")
    if positive.size == w.size and np.all(w == w[0]):
        return None
    # the sum and count of the positive weights: scaling every weight by 2**j scales
    # the sum exactly, so the factors keep every bit
    return w * (positive.size / positive.sum())


def _factors(query_weight, n_queries):
    """``query_weight`` as contiguous float64 of ``n_queries``, or ones when None."""
    if query_weight is None:
        return np.ones(n_queries)
    query_weight = np.ascontiguousarray(query_weight, dtype=np.float64).ravel()
    if query_weight.size != n_queries:
        raise ValueError(f"query_weight has {query_weight.size} values for {n_queries} "
                         "queries")
    return query_weight


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
    query_weight : array-like of shape (n_queries,), default=None
        Factor of each query's gradients and hessians (``normalised_query_weights``);
        None for 1.
    """

    def __init__(self, y, group_offsets, truncation_level: int = 30, sigma: float = 1.0,
                 norm: bool = True, label_gain=None, query_weight=None):
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
        self.query_weight = _factors(query_weight, n_queries)
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
                             self.sigma, self.norm, self.query_weight, self._lambdas,
                             self._weights, gradient, hessian)
        return gradient, hessian


class RankXENDCGContext:
    """What a rank_xendcg fit keeps across stages for one data set.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Relevance labels, whole numbers >= 0.
    group_offsets : array-like of int
        Query boundaries: query q is rows ``group_offsets[q]:group_offsets[q + 1]``.
    query_weight : array-like of shape (n_queries,), default=None
        Factor of each query's gradients and hessians; None for 1.
    """

    def __init__(self, y, group_offsets, query_weight=None):
        y, _, _, n_queries = query_layout(y, group_offsets)
        check_relevance_labels(y)  # 2**label below: the default gains' bound
        self.offsets = np.asarray(group_offsets, dtype=np.int64).ravel()
        self.query_weight = _factors(query_weight, n_queries)
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
        grad_hess_rank_xendcg(self.exp2_label, uniform, score, self.offsets,
                              self.query_weight, self._rho, self._phi, self._lambdas,
                              gradient, hessian)
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
    query_weight : array-like of shape (n_queries,), default=None
        Factor of each query's gradients and hessians; None for 1.
    """

    def __init__(self, y, group_offsets, sigma: float = 1.0, query_weight=None):
        self.sigma = _check_sigma(sigma, "sigma")
        y, _, _, n_queries = query_layout(y, group_offsets)
        check_relevance_labels(y, gains=False)  # RankNet reads the labels' order only
        self.offsets = np.asarray(group_offsets, dtype=np.int64).ravel()
        self.query_weight = _factors(query_weight, n_queries)
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
        grad_hess_pairwise(self.label, score, self.offsets, self.sigma, self.query_weight,
                           self._lambdas, self._weights, gradient, hessian)
        return gradient, hessian


class _RankingLoss(Loss):
    """What the ranking losses share: query groups, relevance labels, F0 = 0.

    Subclasses build their context in ``_new_context``; it is kept for as long as the
    same labels and groups come back, that is for one fit.
    """

    task = "ranking"
    #: the earlier interface's flag of ``task == "ranking"``: ``train`` refuses data
    #: without groups
    needs_group = True

    def __init__(self):
        self._context = None
        self._context_key = None

    def prepare(self, data):
        """Build the fit's context (queries, gains, query weights) before the first stage."""
        self._context_of(data.y, data.weight, data.group_offsets)

    def gradients(self, data, raw, gradient, hessian, context=None):
        """The rows' gradients and hessians (float32) over ``data.group_offsets``."""
        self._fill(self._context_of(data.y, data.weight, data.group_offsets), data, raw,
                   gradient, hessian)

    def _fill(self, context, data, raw, gradient, hessian):
        """``gradients`` of the fit's ``context`` (``_new_context``)."""
        context.grad_hess(raw[0], gradient[0], hessian[0])

    def gradient_hessian(self, y, raw, sample_weight, gradient, hessian, group_offsets=None,
                         rng=None):
        """The earlier interface's call: ``gradients`` of a ``TrainingData`` of these.

        ``rng``: the stage's generator, for a loss that draws (``needs_rng``).
        """
        streams = None if rng is None else {OBJECTIVE_STREAM: rng}
        return self.gradients(TrainingData(y, sample_weight, group_offsets, streams=streams),
                              raw, gradient, hessian)

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
        """F0 is 0; the sums tell whether the weights are all alike (over a collective).

        ``[0, n, sum(w), sum(w**2), 1 if the member's weights differ else 0]`` of the
        member's rows: summed over the members, ``init_from_statistics`` refuses weights
        that differ (their normalisation to mean 1 would need every member's queries).
        """
        w = np.asarray(sample_weight, dtype=np.float64).ravel()
        differ = float(w.size > 0 and not np.all(w == w[0]))
        return np.array([0.0, float(w.size), float(w.sum()), float(np.dot(w, w)), differ])

    def init_from_statistics(self, stats):
        """F0 = 0, or ``ValueError`` if the summed statistics show unequal weights."""
        stats = np.asarray(stats, dtype=np.float64).ravel()
        if stats.size >= 5:
            n, total, squares, differ = stats[1:5]
            # each member's weights alike: n * sum(w**2) == sum(w)**2 (up to rounding)
            # when the members' weights are alike too
            if differ > 0 or abs(n * squares - total * total) > 1e-12 * total * total:
                raise ValueError(f"training over a collective does not support "
                                 f"sample_weight with the ranking loss {self.name!r} yet: "
                                 "query weights are normalised to mean 1 over every "
                                 "member's queries")
        return np.zeros(1)

    def pointwise(self, y, raw):
        """Not defined: a ranking loss is a sum over a query's documents, not over rows."""
        raise NotImplementedError(f"{self.name} has no per-row loss: evaluate it with "
                                  "treeboost.metrics.ndcg_at_k")

    def _new_context(self, y, group_offsets, query_weight):
        raise NotImplementedError

    def _context_of(self, y, sample_weight, group_offsets):
        """The fit's context, built on the first stage of a fit.

        ``sample_weight`` (per row) holds query weights: the same on every row of a
        query, else ``ValueError`` (``normalised_query_weights``).
        """
        if group_offsets is None:
            raise ValueError(f"{self.name} needs query groups: build the Dataset with "
                             "group= or qid=")
        key = (id(group_offsets), id(y), y.size, id(sample_weight))
        if self._context_key != key:
            weight = None
            if sample_weight is not None and np.any(sample_weight != 1.0):
                try:
                    weight = normalised_query_weights(sample_weight, group_offsets)
                except ValueError as exc:
                    raise ValueError(f"loss {self.name!r}: {exc}") from None
            self._context = self._new_context(y, group_offsets, weight)
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

    def _new_context(self, y, group_offsets, query_weight):
        return LambdaRankContext(y, group_offsets, self.lambdarank_truncation_level,
                                 self.sigmoid, self.lambdarank_norm, self.label_gain,
                                 query_weight)

    def get_params(self):
        """The four parameters above (saved in model files)."""
        return {"lambdarank_truncation_level": self.lambdarank_truncation_level,
                "lambdarank_norm": self.lambdarank_norm, "sigmoid": self.sigmoid,
                "label_gain": self.label_gain}


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

    def _new_context(self, y, group_offsets, query_weight):
        return RankXENDCGContext(y, group_offsets, query_weight)

    def _fill(self, context, data, raw, gradient, hessian):
        """XE-NDCG's gradients and hessians of the rows (float32), noise drawn from ``data.rng``."""
        rng = data.rng
        if rng is None:
            raise ValueError(f"{self.name} draws its noise from rng=, a numpy Generator")
        # one vector in row order, drawn here and not in the kernel's threads: the same
        # draws for any number of threads
        uniform = rng.random(data.y.size)
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

    def _new_context(self, y, group_offsets, query_weight):
        return PairwiseContext(y, group_offsets, sigma=self.sigma, query_weight=query_weight)

    def get_params(self):
        """``sigmoid`` (saved in model files)."""
        return {"sigmoid": self.sigma}
