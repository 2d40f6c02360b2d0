"""Classification losses: log-loss (binary logit, softmax) and exponential."""

from __future__ import annotations

import numpy as np

from .._kernels import losses as k
from .._plan import PARALLEL_SHIFT_SCORES
from .base import Loss


def _check_labels(y, n_classes):
    if np.any((y < 0) | (y >= n_classes) | (y != np.floor(y))):
        raise ValueError(f"class labels must be integers in [0, {n_classes - 1}]")


class BinaryLogLoss(Loss):
    """Binary log-loss on y in {0, 1}, logit link. F0 = log(p / (1 - p)).

    Leaves take one Newton step, sum(y - p) / sum(p (1 - p)) (Friedman 2001,
    algorithm 5), which is the Newton value for g = p - y and h = p (1 - p).
    """

    name = "log_loss"
    link = "logit"
    is_classification = True
    leaf_line_search = "newton"

    def validate_target(self, y):
        """Labels in {0, 1}."""
        _check_labels(y, 2)

    def pointwise(self, y, raw):
        """log(1 + exp(F)) - y F for each row."""
        f = raw[0]
        return np.logaddexp(0.0, f) - y * f

    def init_statistics(self, y, sample_weight):
        """(sum of w y, sum of w): F0 is a function of the weighted mean of y."""
        return np.array([np.dot(sample_weight, y), sample_weight.sum()])

    def init_from_statistics(self, stats):
        """F0 of the weighted mean ``stats[0] / stats[1]``."""
        return self.init_score(np.array([stats[0] / stats[1]]), np.ones(1))

    def init_score(self, y, sample_weight):
        """Log-odds of the weighted positive rate."""
        p = np.average(y, weights=sample_weight)
        p = np.clip(p, 1e-15, 1 - 1e-15)
        return np.array([np.log(p / (1 - p))])

    def gradient_hessian(self, y, raw, sample_weight, gradient, hessian):
        """g = p - y, h = p (1 - p)."""
        k.grad_hess_log_loss(y, raw[0], sample_weight, gradient[0], hessian[0])

    def inverse_link(self, raw):
        """Probability of the positive class."""
        from scipy.special import expit  # on use: SciPy's import is slow

        return expit(raw[0])


class ExponentialLoss(Loss):
    """AdaBoost's exponential loss exp(-s F), s = 2y - 1; F0 = log(p/(1-p)) / 2.

    F estimates half the log-odds, so the probability is sigmoid(2F).
    """

    name = "exponential"
    link = "half_logit"
    is_classification = True
    leaf_line_search = "newton"

    def validate_target(self, y):
        """Labels in {0, 1}."""
        _check_labels(y, 2)

    def pointwise(self, y, raw):
        """exp(-(2y - 1) F) for each row."""
        return np.exp(-(2.0 * y - 1.0) * raw[0])

    def init_statistics(self, y, sample_weight):
        """(sum of w y, sum of w): F0 is a function of the weighted mean of y."""
        return np.array([np.dot(sample_weight, y), sample_weight.sum()])

    def init_from_statistics(self, stats):
        """F0 of the weighted mean ``stats[0] / stats[1]``."""
        return self.init_score(np.array([stats[0] / stats[1]]), np.ones(1))

    def init_score(self, y, sample_weight):
        """Half the log-odds of the weighted positive rate."""
        p = np.clip(np.average(y, weights=sample_weight), 1e-15, 1 - 1e-15)
        return np.array([0.5 * np.log(p / (1 - p))])

    def gradient_hessian(self, y, raw, sample_weight, gradient, hessian):
        """g = -s exp(-s F), h = exp(-s F)."""
        k.grad_hess_exponential(y, raw[0], sample_weight, gradient[0], hessian[0])

    def inverse_link(self, raw):
        """Probability of the positive class, sigmoid(2F)."""
        from scipy.special import expit  # on use: SciPy's import is slow

        return expit(2.0 * raw[0])


class SoftmaxLogLoss(Loss):
    """Multinomial log-loss over K classes, one tree per class per stage.

    F0 is the log of the weighted class priors. Leaves take Friedman's
    K-class step (Friedman 2001, algorithm 6)
        gamma = (K - 1)/K * sum r / sum |r| (1 - |r|),
    which is the Newton step -G/H for the hessian (K/(K-1)) p (1 - p) (the
    diagonal of the softmax hessian, rescaled as LightGBM does); with
    ``multiclass_step="newton"`` the plain diagonal p (1 - p) is used.
    """

    name = "log_loss"
    link = "softmax"
    is_classification = True
    leaf_line_search = "newton"
    #: scores (rows x classes) from which the row maxima are subtracted on every thread:
    #: the fit's plan's ``parallel_shift_scores``, which ``Booster.fit`` sets here
    parallel_shift_scores = PARALLEL_SHIFT_SCORES

    def __init__(self, n_classes: int, multiclass_step: str = "friedman"):
        if n_classes < 3:
            raise ValueError("SoftmaxLogLoss needs at least 3 classes")
        if multiclass_step not in ("friedman", "newton"):
            raise ValueError(f"multiclass_step={multiclass_step!r} must be 'friedman' or 'newton'")
        self.n_classes = int(n_classes)
        self.n_outputs = self.n_classes
        self.multiclass_step = multiclass_step

    def validate_target(self, y):
        """Labels in {0, ..., K-1}."""
        _check_labels(y, self.n_classes)

    def pointwise(self, y, raw):
        """-log softmax(F)_y for each row."""
        from scipy.special import log_softmax  # on use: SciPy's import is slow

        logp = log_softmax(raw, axis=0)
        return -logp[y.astype(np.intp), np.arange(y.size)]

    def init_statistics(self, y, sample_weight):
        """The weight of each class: F0 is the log of the class priors, centred."""
        return np.bincount(y.astype(np.intp), weights=sample_weight,
                           minlength=self.n_classes).astype(np.float64)

    def init_from_statistics(self, stats):
        """F0 of the classes' summed weights ``stats``."""
        return self.init_score(np.arange(self.n_classes, dtype=np.float64), stats)

    def init_score(self, y, sample_weight):
        """Log of the weighted class priors, centred to sum to zero."""
        prior = np.bincount(y.astype(np.intp), weights=sample_weight,
                            minlength=self.n_classes) / sample_weight.sum()
        logp = np.log(np.clip(prior, 1e-15, None))
        return logp - logp.mean()

    def gradient_hessian(self, y, raw, sample_weight, gradient, hessian):
        """g_k = p_k - [y = k], h_k = factor p_k (1 - p_k)."""
        K = self.n_classes
        factor = K / (K - 1.0) if self.multiclass_step == "friedman" else 1.0
        # shifted by the row maximum so that no exp overflows: on every thread for
        # many scores, by NumPy for few (starting the threads would cost more; the
        # same bits either way); C order, one signature. NumPy's exp: a loop of
        # scalar exp is ~10x slower
        if raw.size >= self.parallel_shift_scores:
            exp_raw = np.empty(raw.shape, dtype=np.float64)
            k.softmax_shift(np.ascontiguousarray(raw, dtype=np.float64), exp_raw)
        else:
            exp_raw = np.subtract(raw, raw.max(axis=0), order="C")
        np.exp(exp_raw, out=exp_raw)
        k.grad_hess_softmax(y, exp_raw, sample_weight, gradient, hessian, factor)

    def inverse_link(self, raw):
        """Class probabilities, shape (n_samples, n_classes)."""
        from scipy.special import softmax  # on use: SciPy's import is slow

        return softmax(raw, axis=0).T

    def __call__(self, y, raw, sample_weight=None):
        """Weighted mean multinomial log-loss."""
        from scipy.special import logsumexp  # on use: SciPy's import is slow

        lse = logsumexp(raw, axis=0)
        values = lse - raw[y.astype(np.intp), np.arange(y.size)]
        return float(np.average(values, weights=sample_weight))

    def get_params(self):
        """``n_classes`` and ``multiclass_step``."""
        return {"n_classes": self.n_classes, "multiclass_step": self.multiclass_step}
