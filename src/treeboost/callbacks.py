"""Training callbacks: early stopping and the per-stage evaluation log.

The booster calls ``after_iteration(iteration, evals_log)`` after every
stage; a callback returns True to stop training. ``evals_log`` maps a data
set name to {metric name: list of values, one per stage so far}.
"""

from __future__ import annotations

import sys

import numpy as np


class TrainingCallback:
    """Base class: override ``after_iteration``."""

    def after_iteration(self, iteration: int, evals_log: dict) -> bool:
        """Called after stage ``iteration`` (0-based); return True to stop training."""
        return False


class EarlyStopping(TrainingCallback):
    """Stop when the monitored score has not improved by more than ``tol`` for ``patience`` stages.

    Parameters
    ----------
    data_name, metric_name : str
        Entry of ``evals_log`` to monitor.
    patience : int
        ``n_iter_no_change``.
    tol : float
        Minimum improvement that counts.
    higher_is_better : bool
        Direction of the metric.

    Attributes
    ----------
    best_iteration : int
        0-based stage with the best score so far.
    best_score : float
        That score.
    """

    def __init__(self, data_name, metric_name, patience, tol, higher_is_better):
        self.data_name = data_name
        self.metric_name = metric_name
        self.patience = patience
        self.tol = tol
        self.sign = 1.0 if higher_is_better else -1.0
        self.best_iteration = -1
        self.best_score = -np.inf

    def after_iteration(self, iteration, evals_log):
        """Track the best score; stop after ``patience`` stages without improvement."""
        score = self.sign * evals_log[self.data_name][self.metric_name][-1]
        if self.best_iteration < 0 or score > self.best_score + self.tol:
            self.best_score = score
            self.best_iteration = iteration
            return False
        return iteration - self.best_iteration >= self.patience


class EvaluationLogger(TrainingCallback):
    """Write every ``period``-th stage's metrics to a stream (stdout by default)."""

    def __init__(self, period: int = 1, stream=None, n_estimators: int | None = None):
        self.period = max(1, int(period))
        self.stream = stream
        self.n_estimators = n_estimators

    def after_iteration(self, iteration, evals_log):
        """Write one line: ``[stage]  name metric: value ...``."""
        if (iteration + 1) % self.period:
            return False
        parts = [f"{data} {metric}: {values[-1]:.6g}"
                 for data, metrics in evals_log.items() for metric, values in metrics.items()]
        total = f"/{self.n_estimators}" if self.n_estimators else ""
        stream = self.stream if self.stream is not None else sys.stdout
        stream.write(f"[{iteration + 1}{total}]  " + "  ".join(parts) + "\n")
        stream.flush()
        return False
