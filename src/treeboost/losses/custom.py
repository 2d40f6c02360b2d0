"""User losses given as objects: a (gradient, hessian) callable, a Formula, a Loss.

``as_user_loss`` turns what an estimator's ``loss=`` holds into the ``Loss``
the engine trains with; ``get_loss`` calls it for anything that is not a
built-in loss name.
"""

from __future__ import annotations

import math

import numpy as np

from .base import Loss, check_hessian
from .formula import Formula


def is_user_loss(value) -> bool:
    """Whether ``value`` is a ``Loss`` instance, a ``Formula`` or a callable."""
    return isinstance(value, (Loss, Formula)) or (callable(value) and not isinstance(value, type))


def as_user_loss(value, *, n_classes: int | None = None) -> Loss:
    """The ``Loss`` for a user loss; ``n_classes`` None means a regressor.

    Parameters
    ----------
    value : Loss, Formula or callable
        A ready ``Loss`` is used as it is; a ``Formula`` is bound to the
        estimator's kind; a callable ``loss(y, f) -> (gradient, hessian)`` is
        wrapped in ``CallableLoss``.
    n_classes : int, default=None
        Number of classes for a classifier (user losses support 2).

    Returns
    -------
    Loss
    """
    is_classification = n_classes is not None
    if isinstance(value, Loss):
        if is_classification != bool(value.is_classification):
            kind = "classifier" if is_classification else "regressor"
            raise ValueError(f"loss={value!r} (is_classification={value.is_classification}) "
                             f"does not suit a {kind}")
        if is_classification and value.n_outputs != (1 if n_classes == 2 else n_classes):
            raise ValueError(f"loss={value!r} has {value.n_outputs} outputs; {n_classes} "
                             "classes need " + ("1" if n_classes == 2 else str(n_classes)))
        return value
    if is_classification and n_classes > 2:
        raise ValueError(f"loss={value!r}: user losses support regression and binary "
                         f"classification; got {n_classes} classes")
    if isinstance(value, Formula):
        return value.bind(is_classification=is_classification)
    if callable(value) and not isinstance(value, type):
        return CallableLoss(value, is_classification=is_classification)
    raise TypeError(f"loss={value!r} must be a loss name, a Loss, a treeboost.Formula or a "
                    "callable loss(y, f) -> (gradient, hessian)")


class CallableLoss(Loss):
    """A loss given by a function ``fn(y, f) -> (gradient, hessian)``.

    ``fn`` receives float64 arrays of shape (n_samples,): the targets (for
    the classifier the class index, 0 or 1, of ``classes_``) and the raw
    scores, and returns per-row dL/df and d2L/df2 (unweighted: the engine
    multiplies by the sample weights). Leaves take the Newton step, so the
    hessian must be >= 0: a negative one is refused at the stage where it
    appears (``treeboost.exceptions.LossError``); zeros are accepted. F0 is
    the root of the weighted gradient found by Newton's method from 0 (the
    loss itself is unknown, so there is no line search on its value). The
    classifier reads f as the log-odds of the second class.

    Parameters
    ----------
    fn : callable
        ``fn(y, f) -> (gradient, hessian)``.
    is_classification : bool, default=False
        Whether targets are class indices in {0, 1}.
    """

    name = "custom"
    leaf_line_search = "newton"

    def __init__(self, fn, *, is_classification: bool = False):
        self.fn = fn
        self.is_classification = is_classification
        self.link = "logit" if is_classification else "identity"

    def validate_target(self, y):
        """Labels in {0, 1} for the classifier."""
        if self.is_classification and np.any((y != 0) & (y != 1)):
            raise ValueError(f"loss={self.fn!r} supports binary classification only")

    def derivatives(self, y, f):
        """Call the user function and check what it returns."""
        out = self.fn(np.array(y, dtype=np.float64), np.array(f, dtype=np.float64))
        if not (isinstance(out, tuple) and len(out) == 2):
            raise ValueError(f"loss={self.fn!r} must return a (gradient, hessian) pair")
        g, h = (np.asarray(a, dtype=np.float64) for a in out)
        if g.shape != y.shape or h.shape != y.shape:
            raise ValueError(f"loss={self.fn!r} returned gradient and hessian of shapes "
                             f"{g.shape} and {h.shape}; expected {y.shape}")
        if not (np.all(np.isfinite(g)) and np.all(np.isfinite(h))):
            raise ValueError(f"loss={self.fn!r} returned NaN or infinite gradients or "
                             "hessians")
        return g, h

    def pointwise(self, y, raw):
        """Not available: the callable gives derivatives only."""
        raise ValueError(f"loss={self.fn!r} gives gradients only, so its value cannot be "
                         "logged or monitored: pass eval_metric (e.g. 'rmse' or 'error')")

    def init_score(self, y, sample_weight):
        """Root of sum w g(y, c) by Newton's method from c = 0."""
        c = 0.0
        for _ in range(100):
            g, h = self.derivatives(y, np.full(y.shape, c))
            G, H = float(sample_weight @ g), float(sample_weight @ h)
            if not H > 0:
                break
            step = G / H
            c -= step
            if abs(step) <= 1e-12 * (1.0 + abs(c)):
                break
        return np.array([c if math.isfinite(c) else 0.0])

    def gradient_hessian(self, y, raw, sample_weight, gradient, hessian):
        """g = w fn(y, f)[0], h = w fn(y, f)[1], stored as float32."""
        g, h = self.derivatives(y, raw[0])
        check_hessian(repr(self.fn), y, raw[0], h)
        gradient[0][:] = sample_weight * g
        hessian[0][:] = sample_weight * h

    def inverse_link(self, raw):
        """f for a regressor, sigmoid(f) for the classifier."""
        from scipy.special import expit  # on use: SciPy's import is slow

        return expit(raw[0]) if self.link == "logit" else raw[0]
