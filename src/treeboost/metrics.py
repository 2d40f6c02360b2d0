"""Evaluation metrics for training logs and early stopping; each declares its direction.

The booster evaluates a list of ``Metric`` objects on every data set after
every stage (``evaluate``); the log is ``evals_result_`` and early stopping
monitors the first metric of the list. A metric is a built-in (named by a
string in ``eval_metric``) or a user's callable wrapped with
``make_metric``, which must say whether higher is better: the direction is
never guessed from a name.

A user metric is called as ``fn(y_true, y_pred, sample_weight=w)``:

- ``y_true``: the targets, float64 for a regressor; for a classifier the
  class indices into ``classes_`` (int64, 0 .. n_classes - 1);
- ``y_pred``: predictions on the response scale, what ``predict`` returns
  for a regressor (the mean, median or quantile the loss estimates); for a
  classifier the probabilities, as scikit-learn's probability scorers get
  them: shape (n_samples,) with the positive class's probability for a
  binary classifier, (n_samples, n_classes) for several classes; for a regressor of
  several outputs (a 2-D y, or a list of alphas) ``y_pred`` is (n_samples, n_outputs)
  and ``y_true`` the 2-D y (or the 1-D y of the quantile levels); the built-in RMSE and
  MAE are then the mean over the outputs of each output's value (``MULTI_OUTPUT_METRICS``);
- ``sample_weight``: the rows' weights, always an array (ones when none
  were given).

The arrays are read-only views. The keyword ``sample_weight`` makes
scikit-learn's metric functions fit directly, e.g.
``make_metric(roc_auc_score, higher_is_better=True)``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ._dtypes import readonly
from ._survival_metrics import (
    aft_nloglik_metric,
    check_survival_metric,
    cindex_metric,
    cox_nloglik_metric,
)


@dataclass(frozen=True)
class Metric:
    """A named evaluation metric that declares its direction.

    Build user metrics with ``make_metric``, which checks the arguments.

    Attributes
    ----------
    name : str
        Name used in ``evals_result_`` and the training log.
    fn : callable
        ``fn(y_true, y_pred, sample_weight=w) -> float``; see the module
        docstring for what ``y_true`` and ``y_pred`` are.
    higher_is_better : bool
        Direction for early stopping: True for scores (AUC, accuracy),
        False for losses and errors.
    """

    name: str
    fn: Callable
    higher_is_better: bool

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"Metric: name={self.name!r} must be a non-empty str")
        if not callable(self.fn):
            raise TypeError(f"Metric: fn={self.fn!r} must be a callable")
        if not isinstance(self.higher_is_better, (bool, np.bool_)):
            raise TypeError(f"Metric: higher_is_better={self.higher_is_better!r} must be True "
                            "or False (the direction is never guessed)")

    def evaluate(self, y, raw, sample_weight, loss, y_pred=None, where="") -> float:
        """The metric of raw scores ``raw`` (n_outputs, n_samples) against encoded ``y``.

        Parameters
        ----------
        y : ndarray of shape (n_samples,)
            Encoded targets (class indices as floats for a classifier).
        raw : ndarray of shape (n_outputs, n_samples)
            Raw scores.
        sample_weight : ndarray of shape (n_samples,)
            Row weights.
        loss : Loss
            The trained loss (its inverse link gives ``y_pred``).
        y_pred : ndarray, default=None
            ``predictions(raw, loss)`` when already computed for this data.
        where : str, default=""
            Data set and stage, for error messages.

        Returns
        -------
        float
            The value; a ``ValueError`` naming the metric if it is not finite.
        """
        if y_pred is None:
            y_pred = predictions(raw, loss)
        y_true = readonly(y.astype(np.int64) if loss.is_classification else y)
        value = self.fn(y_true, y_pred, sample_weight=readonly(sample_weight))
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise TypeError(f"eval_metric {self.name!r} returned {value!r}{where}; a "
                            "metric must return one float") from None
        if not math.isfinite(value):
            raise ValueError(f"eval_metric {self.name!r} returned {value}{where}; a metric "
                             "must return a finite float (check its inputs: y_pred are "
                             "probabilities or predictions on the response scale)")
        return value


@dataclass(frozen=True)
class _BuiltinMetric(Metric):
    """A built-in metric, computed from the raw scores: ``fn(y, raw, w, loss)``."""

    def evaluate(self, y, raw, sample_weight, loss, y_pred=None, where="") -> float:
        """The metric of raw scores ``raw`` (n_outputs, n_samples); see ``Metric.evaluate``."""
        return float(self.fn(y, raw, sample_weight, loss))


def make_metric(fn: Callable, *, name: str | None = None, higher_is_better: bool) -> Metric:
    """Wrap a callable as an evaluation metric for ``eval_metric``.

    Parameters
    ----------
    fn : callable
        ``fn(y_true, y_pred, sample_weight=w) -> float``, called after every
        stage on every evaluated data set. ``y_pred`` is on the response
        scale: predictions for a regressor, probabilities for a classifier
        (the positive class's for a binary one, shape (n_samples,); shape
        (n_samples, n_classes) otherwise); ``y_true`` holds a classifier's
        class indices. It must return a finite float.
    name : str, default=None
        Key in ``evals_result_`` and the log; None takes ``fn.__name__``
        (required for a lambda or a ``functools.partial``).
    higher_is_better : bool
        Required, keyword only: True if larger values are better (AUC),
        False for losses and errors. Early stopping follows it.

    Returns
    -------
    Metric

    Notes
    -----
    ``save_model`` writes the estimator's parameters as JSON, which cannot
    hold a function: set ``eval_metric`` to a built-in name or None
    (``set_params``) before saving a model trained with a user metric.

    Examples
    --------
    >>> from sklearn.metrics import roc_auc_score
    >>> from treeboost.metrics import make_metric
    >>> auc = make_metric(roc_auc_score, name="my_auc", higher_is_better=True)
    """
    if not callable(fn):
        raise TypeError(f"make_metric: fn={fn!r} must be a callable "
                        "fn(y_true, y_pred, sample_weight) -> float")
    if not isinstance(higher_is_better, (bool, np.bool_)):
        raise TypeError(f"make_metric: higher_is_better={higher_is_better!r} must be True "
                        "or False (the direction is never guessed)")
    if name is None:
        name = getattr(fn, "__name__", None)
        if name is None or name == "<lambda>":
            raise ValueError(f"make_metric: {fn!r} has no usable __name__; pass name=")
    if not isinstance(name, str) or not name:
        raise TypeError(f"make_metric: name={name!r} must be a non-empty str")
    return Metric(name, fn, bool(higher_is_better))


def predictions(raw: np.ndarray, loss) -> np.ndarray:
    """``y_pred`` of user metrics: the inverse link of ``raw``, as a read-only array."""
    return readonly(np.asarray(loss.inverse_link(raw)))


def evaluate(metrics, y, raw, sample_weight, loss, where="", group_offsets=None
             ) -> list[float]:
    """Every metric of ``metrics`` on one data set; user metrics share one ``y_pred``.

    ``where`` (e.g. " on validation_0 at stage 3") goes into error messages;
    ``group_offsets`` are the data set's query groups, which the ranking metrics need.
    """
    y_pred = None
    values = []
    for metric in metrics:
        if isinstance(metric, _RankingMetric):
            values.append(metric.evaluate(y, raw, sample_weight, loss, None, where,
                                          group_offsets))
            continue
        if y_pred is None and not isinstance(metric, _BuiltinMetric):
            y_pred = predictions(raw, loss)
        values.append(metric.evaluate(y, raw, sample_weight, loss, y_pred, where))
    return values


def per_output_errors(y, pred, w, power: int) -> np.ndarray:
    """Each output's weighted mean of ``|pred - y| ** power``, shape (n_outputs,).

    Parameters
    ----------
    y : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        Targets; a 1-D y (multi-quantile, or one output) is every output's.
    pred : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        Predictions on the response scale.
    w : ndarray of shape (n_samples,)
        Row weights, shared by the outputs.
    power : {1, 2}
        1: absolute errors (MAE), 2: squared errors (MSE).

    Returns
    -------
    ndarray of shape (n_outputs,)
        One value for a 1-D ``pred``.
    """
    pred = np.asarray(pred, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if pred.ndim == 1:
        pred = pred[:, None]
    if y.ndim == 1:
        y = y[:, None]
    diff = np.abs(pred - y)
    return np.average(diff ** 2 if power == 2 else diff, axis=0, weights=w)


def _rmse(y, raw, w, loss):
    """RMSE; with several outputs the mean over the outputs of each one's RMSE."""
    return float(np.mean(np.sqrt(per_output_errors(y, loss.inverse_link(raw), w, 2))))


def _mae(y, raw, w, loss):
    """MAE; with several outputs the mean over the outputs of each one's MAE."""
    return float(np.mean(per_output_errors(y, loss.inverse_link(raw), w, 1)))


def _error(y, raw, w, loss):
    if raw.shape[0] == 1:
        pred = (raw[0] > 0).astype(np.float64)
    else:
        pred = raw.argmax(axis=0).astype(np.float64)
    return np.average(pred != y, weights=w)


def _auc(y, raw, w, loss):
    from sklearn.metrics import roc_auc_score

    if raw.shape[0] != 1:
        raise ValueError("eval_metric='auc' is defined for binary classification only")
    return roc_auc_score(y, raw[0], sample_weight=w)


# ---- ranking: NDCG@k and MAP@k over query groups (issue 14) -------------------------------
def default_label_gain(max_label: int = 30) -> np.ndarray:
    """Gains 2**l - 1 of the relevance labels l = 0 .. max_label (LightGBM's default).

    Parameters
    ----------
    max_label : int, default=30
        Largest relevance label.

    Returns
    -------
    ndarray of shape (max_label + 1,)
    """
    return np.exp2(np.arange(max_label + 1, dtype=np.float64)) - 1.0


def query_layout(y_true, group_offsets):
    """Checked labels and query offsets as (y, query, rank, n_queries).

    ``query`` and ``rank`` give each row's query and position in it.
    """
    y = np.asarray(y_true, dtype=np.float64).ravel()
    offsets = np.asarray(group_offsets, dtype=np.int64).ravel()
    if offsets.size < 2 or offsets[0] != 0 or offsets[-1] != y.size or \
            np.any(np.diff(offsets) <= 0):
        raise ValueError("group_offsets must rise from 0 to the number of rows, one query a "
                         "step with at least one row")
    sizes = np.diff(offsets)
    query = np.repeat(np.arange(sizes.size), sizes)
    rank = np.arange(y.size) - np.repeat(offsets[:-1], sizes)
    return y, query, rank, sizes.size


def ranked(y_true, y_score, group_offsets, k):
    """``query_layout`` of checked inputs, plus ``by_score``: the rows of each query by
    descending score, in the query's span, as (y, query, rank, by_score, n_queries).

    The sort is stable: documents of equal score keep their order in the data, as in
    LightGBM's metrics.
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k={k!r} must be an int >= 1")
    score = np.asarray(y_score, dtype=np.float64).ravel()
    if score.size != np.size(y_true):
        raise ValueError(f"y_score has {score.size} values, y_true {np.size(y_true)}")
    y, query, rank, n_queries = query_layout(y_true, group_offsets)
    if not np.all(np.isfinite(score)):
        raise ValueError("y_score holds NaN or infinite values")
    return y, query, rank, np.lexsort((-score, query)), n_queries


#: the largest relevance label of the default gains ``2**label - 1``: LightGBM's default
#: ``label_gain`` has 31 entries (labels 0 .. 30), and a table of gains up to the largest
#: label is allocated, so a label of 1e12 would ask for 7 TiB
MAX_DEFAULT_LABEL = 30


def check_relevance_labels(y, label_gain=None, *, gains: bool = True) -> None:
    """Refuse relevance labels that are not whole numbers >= 0, or have no gain.

    Parameters
    ----------
    y : ndarray of float64
        Relevance labels.
    label_gain : sequence of float, default=None
        Gain of each label; None: ``2**label - 1`` for labels up to
        ``MAX_DEFAULT_LABEL``.
    gains : bool, default=True
        Whether the labels are read through their gains (lambdarank, rank_xendcg,
        NDCG); False for a loss that reads their order only (pairwise), which takes
        any whole labels.

    Raises
    ------
    ValueError
        Naming the first offending label and its row.
    """
    bad = ~np.isfinite(y) | (y < 0) | (y != np.floor(y))
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"ranking labels must be whole numbers >= 0, got {y[i]:g} at row {i}")
    if not gains or not y.size:
        return
    top = int(np.argmax(y))
    if label_gain is None and y[top] > MAX_DEFAULT_LABEL:
        raise ValueError(f"relevance label {y[top]:g} (row {top}) is above "
                         f"{MAX_DEFAULT_LABEL}, the largest label with a default gain "
                         "(2**label - 1, as LightGBM's label_gain): give label_gain, one "
                         "gain per label 0 .. max label, or relabel the relevances")
    if label_gain is not None and y[top] >= len(label_gain):
        raise ValueError(f"label {y[top]:g} (row {top}) has no entry in label_gain (of "
                         f"{len(label_gain)})")


def label_gains(y, label_gain) -> np.ndarray:
    """Each row's gain: ``label_gain[y]`` (default ``2**y - 1``), labels checked."""
    check_relevance_labels(y, label_gain)
    gain = default_label_gain(max(int(y.max(initial=0)), 0)) if label_gain is None \
        else np.asarray(label_gain, dtype=np.float64)
    return gain[y.astype(np.int64)]


def _dcg(ordered_gain, query, rank, n_queries: int, k: int) -> np.ndarray:
    """Each query's DCG@k of its gains in the given order (``rank`` positions)."""
    discount = np.where(rank < k, 1.0 / np.log2(rank + 2.0), 0.0)
    return np.bincount(query, weights=ordered_gain * discount, minlength=n_queries)


def ideal_dcg(gain, query, rank, n_queries: int, k: int) -> np.ndarray:
    """Each query's DCG@k with its documents in the best order (by descending gain).

    Parameters
    ----------
    gain : ndarray of shape (n_samples,)
        Each row's gain.
    query, rank : ndarray of int of shape (n_samples,)
        Each row's query (ascending, queries contiguous) and position in it.
    n_queries : int
    k : int
        Cut-off.

    Returns
    -------
    ndarray of shape (n_queries,)
    """
    return _dcg(gain[np.lexsort((-gain, query))], query, rank, n_queries, k)


def query_weights(sample_weight, group_offsets, name: str = "sample_weight"):
    """Each query's weight, from one weight per query or per row (constant within each query).

    Ranking weights are query weights (XGBoost's meaning; LightGBM's row weights read
    the same where they are constant within each query): ``sample_weight`` has one
    entry per query, or one per row with every row of a query sharing its query's
    weight. Anything else is refused.

    Parameters
    ----------
    sample_weight : array-like of shape (n_queries,) or (n_samples,), or None
        The weights.
    group_offsets : array-like of int
        Query boundaries: query q is rows ``group_offsets[q]:group_offsets[q + 1]``.
    name : str, default="sample_weight"
        The argument named in error messages.

    Returns
    -------
    ndarray of float64 of shape (n_queries,), or None if ``sample_weight`` is None

    Raises
    ------
    ValueError
        If the weights are not finite and >= 0, have neither length, or differ within a
        query.
    """
    if sample_weight is None:
        return None
    offsets = np.asarray(group_offsets, dtype=np.int64).ravel()
    n_queries, n_rows = offsets.size - 1, int(offsets[-1])
    try:
        w = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numbers: {exc}") from None
    if w.ndim != 1 or w.size not in (n_queries, n_rows):
        raise ValueError(f"{name} has shape {w.shape}: ranking weights are query weights, "
                         f"one per query ({n_queries}) or one per row ({n_rows}) with the "
                         "same value on every row of a query")
    bad = ~np.isfinite(w) | (w < 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{name} must be finite and >= 0, got {w[i]!r} at index {i}")
    if w.size == n_queries:  # one per query (also the rows' when every query has one row)
        return w
    first = w[offsets[:-1]]
    differ = np.repeat(first, np.diff(offsets)) != w
    if differ.any():
        i = int(np.argmax(differ))
        q = int(np.searchsorted(offsets, i, side="right")) - 1
        rows = w[offsets[q]:offsets[q + 1]]
        raise ValueError(f"{name} differs within query {q} (rows {offsets[q]}.."
                         f"{offsets[q + 1] - 1}: {rows.min():g} to {rows.max():g}): ranking "
                         "weights are query weights, one per query or the same on every row "
                         "of a query (XGBoost's meaning; a document's importance within a "
                         "query is its label)")
    return first


def _query_mean(per_query, weights) -> float:
    """The mean of the per-query values, weighted by ``weights`` (None: all alike)."""
    if weights is None or np.all(weights == weights[0]):
        if weights is not None and weights[0] == 0:
            raise ValueError("sample_weight is 0 on every query")
        return float(np.mean(per_query))
    total = weights.sum()
    if not total > 0:
        raise ValueError("sample_weight is 0 on every query")
    return float(np.dot(weights, per_query) / total)


def ndcg_at_k(y_true, y_score, group_offsets, k: int, label_gain=None, *,
              sample_weight=None) -> float:
    """Mean NDCG@k over queries, LightGBM's definition; weighted by query weights if given.

    DCG@k of a query sums ``label_gain[l] / log2(2 + r)`` over its documents of rank
    ``r < k`` by descending score (ties keep the data's order); NDCG@k divides it by the
    DCG@k of the ideal order. A query whose documents all have gain 0 scores 1. With
    ``sample_weight`` the result is ``sum_q w_q NDCG_q / sum_q w_q`` (LightGBM's weighted
    metric, where its row weights are constant within each query).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Relevance labels, whole numbers >= 0.
    y_score : array-like of shape (n_samples,)
        Predicted scores.
    group_offsets : array-like of int
        Query boundaries: query q is rows ``group_offsets[q]:group_offsets[q + 1]``.
    k : int
        Cut-off, at least 1 (a query shorter than k counts all its documents).
    label_gain : array-like, default=None
        Gain of each label; None gives ``2**l - 1``.
    sample_weight : array-like of shape (n_queries,) or (n_samples,), default=None
        Query weights: one per query, or one per row, the same on every row of a query
        (``query_weights``); None weighs every query alike.

    Returns
    -------
    float
    """
    y, query, rank, by_score, n_queries = ranked(y_true, y_score, group_offsets, k)
    weights = query_weights(sample_weight, group_offsets)
    gain = label_gains(y, label_gain)
    dcg = _dcg(gain[by_score], query, rank, n_queries, k)
    idcg = ideal_dcg(gain, query, rank, n_queries, k)
    per_query = np.divide(dcg, idcg, out=np.ones(n_queries), where=idcg > 0)
    return _query_mean(per_query, weights)


def map_at_k(y_true, y_score, group_offsets, k: int, *, sample_weight=None) -> float:
    """Mean average precision at k over queries, LightGBM's definition; weighted if given.

    A document is relevant when its label is above 0. AP@k of a query sums the
    precision at each relevant document of rank ``r < k`` (by descending score, ties in
    the data's order) and divides by ``min(k, number of relevant documents)``; a query
    without relevant documents scores 1. With ``sample_weight`` the result is
    ``sum_q w_q AP_q / sum_q w_q``.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Relevance labels.
    y_score : array-like of shape (n_samples,)
        Predicted scores.
    group_offsets : array-like of int
        Query boundaries: query q is rows ``group_offsets[q]:group_offsets[q + 1]``.
    k : int
        Cut-off, at least 1.
    sample_weight : array-like of shape (n_queries,) or (n_samples,), default=None
        Query weights, as for ``ndcg_at_k``.

    Returns
    -------
    float
    """
    y, query, rank, by_score, n_queries = ranked(y_true, y_score, group_offsets, k)
    weights = query_weights(sample_weight, group_offsets)
    relevant = (y[by_score] > 0).astype(np.float64)
    hits = np.cumsum(relevant)
    starts = np.flatnonzero(rank == 0)
    hits -= np.repeat(hits[starts] - relevant[starts], np.diff(np.append(starts, y.size)))
    precision = np.where((rank < k) & (relevant > 0), hits / (rank + 1.0), 0.0)
    total = np.bincount(query, weights=precision, minlength=n_queries)
    n_relevant = np.bincount(query, weights=relevant, minlength=n_queries)
    per_query = np.divide(total, np.minimum(n_relevant, k), out=np.ones(n_queries),
                          where=n_relevant > 0)
    return _query_mean(per_query, weights)


@dataclass(frozen=True)
class _RankingMetric(_BuiltinMetric):
    """A metric over query groups at a cut-off: ``fn(y, score, group_offsets, k)``."""

    k: int = 1

    def evaluate(self, y, raw, sample_weight, loss, y_pred=None, where="",
                 group_offsets=None) -> float:
        """The metric of raw scores ``raw`` (1, n_samples) over the data's query groups.

        NDCG takes the loss's ``label_gain`` where it has one (lambdarank), as LightGBM's
        metric shares the objective's gains. ``sample_weight`` (per row) holds query
        weights: the metric is the weighted mean over the queries (``query_weights``).
        """
        if group_offsets is None:
            raise ValueError(f"eval_metric {self.name!r} needs query groups{where}: give "
                             "every evaluated data set its groups (group= or qid=)")
        if sample_weight is not None and np.all(sample_weight == 1.0):
            sample_weight = None  # unweighted: the plain mean
        try:
            if self.fn is ndcg_at_k:
                return float(ndcg_at_k(y, raw[0], group_offsets, self.k,
                                       getattr(loss, "label_gain", None),
                                       sample_weight=sample_weight))
            return float(self.fn(y, raw[0], group_offsets, self.k,
                                 sample_weight=sample_weight))
        except ValueError as exc:
            if where and "sample_weight" in str(exc):
                raise ValueError(f"eval_metric {self.name!r}{where}: {exc}") from None
            raise


#: the metrics over query groups, named "<prefix>@k" for a cut-off k >= 1
RANKING_METRICS = {"ndcg": ndcg_at_k, "map": map_at_k}
_RANKING_NAME = re.compile(r"(ndcg|map)@([1-9][0-9]{0,5})")


def ranking_metric(name) -> _RankingMetric | None:
    """The metric called ``name`` ("ndcg@10", "map@5", ...), or None if it is not one."""
    match = _RANKING_NAME.fullmatch(name) if isinstance(name, str) else None
    if match is None:
        return None
    return _RankingMetric(name, RANKING_METRICS[match.group(1)], higher_is_better=True,
                          k=int(match.group(2)))


class MetricNames(Sequence):
    """The built-in metric names: the fixed ones, and the ranking ones at any cut-off.

    Iterating lists ``"ndcg@k"`` and ``"map@k"`` for the families (error messages, the
    documentation); membership also accepts each family's names, such as ``"ndcg@10"``.
    """

    def __init__(self, fixed):
        self._names = (*fixed, *(f"{prefix}@k" for prefix in RANKING_METRICS))

    def __getitem__(self, index):
        return self._names[index]

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name) -> bool:
        return (isinstance(name, str) and name in self._names[:-len(RANKING_METRICS)]) \
            or ranking_metric(name) is not None

    def __repr__(self) -> str:
        return repr(self._names)


METRICS = {
    "rmse": _BuiltinMetric("rmse", _rmse, higher_is_better=False),
    "mae": _BuiltinMetric("mae", _mae, higher_is_better=False),
    "error": _BuiltinMetric("error", _error, higher_is_better=False),
    "auc": _BuiltinMetric("auc", _auc, higher_is_better=True),
    # survival (signed times; _survival_metrics): Harrell's C and Breslow's partial likelihood
    "cindex": _BuiltinMetric("cindex", cindex_metric, higher_is_better=True),
    "cox-nloglik": _BuiltinMetric("cox-nloglik", cox_nloglik_metric, higher_is_better=False),
    # the AFT model's mean negative log-likelihood under its loss's distribution and scale
    "aft-nloglik": _BuiltinMetric("aft-nloglik", aft_nloglik_metric, higher_is_better=False),
}
#: every name ``eval_metric`` accepts: "loss", ``METRICS`` and the ranking families
METRIC_NAMES = MetricNames(("loss", *METRICS))


#: the built-in metrics defined for several outputs (a 2-D y or a list of alphas): the
#: mean over the outputs of each output's value, rows weighted alike (XGBoost's
#: convention for several targets); the loss's own metric is also such a mean
MULTI_OUTPUT_METRICS = ("rmse", "mae")


#: the tasks each metric is defined for: AUC and the error rate need classes, and RMSE
#: and MAE compare one prediction per row with the target (for a binary classifier the
#: probability of the positive class, so RMSE is the root of the Brier score); the
#: ranking metrics need query groups
METRIC_TASKS = {"rmse": ("regression", "binary"), "mae": ("regression", "binary"),
                "error": ("binary", "multiclass"), "auc": ("binary",),
                "cindex": ("survival",), "cox-nloglik": ("survival",),
                "aft-nloglik": ("survival",),
                **{f"{prefix}@k": ("ranking",) for prefix in RANKING_METRICS}}


def _metric_family(name: str) -> str:
    """The key of ``METRIC_TASKS`` of a metric name ("ndcg@10" -> "ndcg@k")."""
    metric = ranking_metric(name)
    return name if metric is None else name.split("@")[0] + "@k"


def _as_list(spec) -> list:
    """``eval_metric`` as a list of entries (None and "loss" stand for the loss)."""
    return list(spec) if isinstance(spec, (list, tuple)) else [spec]


def check_eval_metric(spec) -> None:
    """Raise ``TypeError``/``ValueError`` naming ``eval_metric`` unless ``spec`` is valid.

    Valid: None, a built-in name ("loss" or one of ``METRICS``), a ``Metric``
    (``make_metric``), or a non-empty list or tuple of names and ``Metric``
    objects with distinct names.
    """
    names = METRIC_NAMES
    if isinstance(spec, (list, tuple)):
        if not spec:
            raise ValueError("eval_metric=[] must name at least one metric (None: the loss)")
        where = [f"eval_metric[{i}]" for i in range(len(spec))]
    else:
        where = ["eval_metric"]
    seen = set()
    for item, at in zip(_as_list(spec), where, strict=True):
        if isinstance(item, Metric):
            key = item.name
        elif isinstance(item, str) or (item is None and at == "eval_metric"):
            if item is not None and item not in names:
                raise ValueError(f"{at}={item!r} is not one of {list(names)}, a Metric "
                                 "(treeboost.metrics.make_metric) or a list of these")
            key = "loss" if item is None else item
        elif callable(item):
            raise TypeError(f"{at}={item!r} is a callable without a declared direction: "
                            "wrap it as treeboost.metrics.make_metric(fn, name=..., "
                            "higher_is_better=True or False)")
        else:
            raise TypeError(f"{at}={item!r} must be a metric name in {list(names)}, a Metric "
                            "(treeboost.metrics.make_metric) or a list of these")
        if key in seen:
            raise ValueError(f"eval_metric names metric {key!r} twice")
        seen.add(key)


def check_metric(spec, task: str) -> None:
    """Raise ``ValueError`` naming ``eval_metric`` if a built-in metric does not fit ``task``.

    Parameters
    ----------
    spec : str, Metric, list or None
        The ``eval_metric`` parameter (None or "loss": the training loss, always
        fits; user metrics are not checked).
    task : {"regression", "binary", "multiclass", "ranking", "survival"}
        What the estimator fits.
    """
    for name in _as_list(spec):
        tasks = METRIC_TASKS.get(_metric_family(name)) if isinstance(name, str) else None
        if tasks is not None and task not in tasks:
            fits = [m for m, t in METRIC_TASKS.items() if task in t]
            fits = fits if task == "ranking" else ["loss", *fits]
            raise ValueError(f"eval_metric={name!r} is not defined for {task} targets; use "
                             f"one of {fits}")
        if task == "ranking" and name == "loss":
            raise ValueError("eval_metric='loss' is not defined for ranking (a ranking loss "
                             "has no per-row value); use one of "
                             f"{[m for m, t in METRIC_TASKS.items() if task in t]}, e.g. "
                             "'ndcg@10'")


def loss_task(loss) -> str:
    """What ``loss`` fits, as ``check_metric``'s ``task``: "regression", "binary",
    "multiclass", "ranking" or "survival": the loss's ``task`` (``losses.Loss.task``)."""
    return loss.task


#: what a ranking loss logs when ``eval_metric`` is None (it has no per-row loss)
DEFAULT_RANKING_METRIC = "ndcg@10"


def get_metric(name: str | None, loss) -> Metric:
    """The built-in metric called ``name``; None or "loss" means the training loss itself.

    For a loss over query groups (ranking), which has no per-row value, None means
    ``DEFAULT_RANKING_METRIC`` and "loss" is refused.
    """
    if loss.needs_group and (name is None or name == "loss"):
        if name == "loss":
            raise ValueError(f"eval_metric='loss' is not defined for the ranking loss "
                             f"{loss.name!r}; use 'ndcg@k' or 'map@k'")
        name = DEFAULT_RANKING_METRIC
    if name is None or name == "loss":
        return _BuiltinMetric(loss.name, lambda y, raw, w, ls: ls(y, raw, w),
                              higher_is_better=False)
    metric = METRICS.get(name) or ranking_metric(name)
    if metric is None:
        raise ValueError(f"eval_metric={name!r} is not one of {list(METRIC_NAMES)}")
    return metric


def get_metrics(spec, loss) -> list[Metric]:
    """The metrics of ``eval_metric`` in order; the first one drives early stopping.

    Parameters
    ----------
    spec : str, Metric, list or None
        The ``eval_metric`` parameter (checked by ``check_eval_metric``).
    loss : Loss
        The trained loss ("loss" and None stand for it, under its name).

    Returns
    -------
    list of Metric
    """
    task = loss_task(loss)
    # AUC of a regression: one line here, not scikit-learn's at the first evaluation. The
    # ranking metrics may score any model on data with query groups (a regression on
    # relevance labels): their groups are checked where they are evaluated
    check_metric([item for item in _as_list(spec) if task == "ranking" or not (
        isinstance(item, str) and ranking_metric(item) is not None)], task)
    metrics = [item if isinstance(item, Metric) else get_metric(item, loss)
               for item in _as_list(spec)]
    for item in _as_list(spec):  # each survival likelihood is its own loss's
        check_survival_metric(item, loss)
    names = [m.name for m in metrics]
    for name in names:  # "loss" resolves to the loss's own name, which a Metric may take
        if names.count(name) > 1:
            raise ValueError(f"eval_metric names metric {name!r} twice")
    return metrics
