"""Evaluation metrics for training logs and early stopping; each declares its direction."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class Metric:
    """A named evaluation metric over targets, raw scores and weights.

    Attributes
    ----------
    name : str
        Name used in ``evals_result_`` and the training log.
    fn : callable
        ``fn(y, raw, sample_weight, loss) -> float`` with ``raw`` of shape
        (n_outputs, n_samples).
    higher_is_better : bool
        Direction for early stopping.
    """

    name: str
    fn: Callable
    higher_is_better: bool = False

    def __call__(self, y, raw, sample_weight, loss) -> float:
        """Evaluate the metric."""
        return float(self.fn(y, raw, sample_weight, loss))


def _rmse(y, raw, w, loss):
    return np.sqrt(np.average((loss.inverse_link(raw) - y) ** 2, weights=w))


def _mae(y, raw, w, loss):
    return np.average(np.abs(loss.inverse_link(raw) - y), weights=w)


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


METRICS = {
    "rmse": Metric("rmse", _rmse),
    "mae": Metric("mae", _mae),
    "error": Metric("error", _error),
    "auc": Metric("auc", _auc, higher_is_better=True),
}


#: the tasks each metric is defined for: AUC and the error rate need classes, and RMSE
#: and MAE compare one prediction per row with the target (for a binary classifier the
#: probability of the positive class, so RMSE is the root of the Brier score)
METRIC_TASKS = {"rmse": ("regression", "binary"), "mae": ("regression", "binary"),
                "error": ("binary", "multiclass"), "auc": ("binary",)}


def check_metric(name: str | None, task: str) -> None:
    """Raise ``ValueError`` naming ``eval_metric`` if metric ``name`` does not fit ``task``.

    Parameters
    ----------
    name : str or None
        The ``eval_metric`` parameter (None or "loss": the training loss, always fits).
    task : {"regression", "binary", "multiclass"}
        What the estimator fits.
    """
    tasks = METRIC_TASKS.get(name)
    if tasks is not None and task not in tasks:
        fits = [m for m, t in METRIC_TASKS.items() if task in t]
        raise ValueError(f"eval_metric={name!r} is not defined for {task} targets; use "
                         f"one of {['loss', *fits]}")


def get_metric(name: str | None, loss) -> Metric:
    """The metric called ``name``; None means the training loss itself."""
    if name is None or name == "loss":
        return Metric(loss.name, lambda y, raw, w, ls: ls(y, raw, w))
    try:
        return METRICS[name]
    except KeyError:
        raise ValueError(f"eval_metric={name!r} is not one of {['loss', *METRICS]}") from None
