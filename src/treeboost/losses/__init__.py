"""The one registry of losses: names to classes, and ``get_loss``."""

from __future__ import annotations

from .base import Loss, newton_leaf_value, weighted_quantile
from .classification import BinaryLogLoss, ExponentialLoss, SoftmaxLogLoss
from .formula import Formula
from .regression import AbsoluteError, Gamma, Huber, Poisson, Quantile, SquaredError, Tweedie

REGRESSION_LOSSES = {
    cls.name: cls
    for cls in (SquaredError, AbsoluteError, Huber, Quantile, Poisson, Gamma, Tweedie)
}
CLASSIFICATION_LOSSES = ("log_loss", "exponential")


def available_losses() -> list[str]:
    """Names accepted by ``get_loss``."""
    return list(REGRESSION_LOSSES) + list(CLASSIFICATION_LOSSES)


def get_loss(name: str, *, n_classes: int | None = None, **params) -> Loss:
    """Build a loss from its name.

    Parameters
    ----------
    name : str, Loss, Formula or callable
        One of ``available_losses()``, or a user loss (see
        ``treeboost.losses.custom.as_user_loss``).
    n_classes : int, default=None
        Number of classes, required for classification losses.
    **params
        Loss parameters: ``alpha`` (huber, quantile), ``power`` (tweedie),
        ``multiclass_step`` (log_loss with more than two classes).

    Returns
    -------
    Loss
    """
    if not isinstance(name, str):  # a user loss: Loss, Formula or (grad, hess) callable
        from .custom import as_user_loss

        return as_user_loss(name, n_classes=n_classes)
    if name in REGRESSION_LOSSES:
        cls = REGRESSION_LOSSES[name]
        accepted = {"huber": ("alpha",), "quantile": ("alpha",), "tweedie": ("power",)}
        kept = {k: v for k, v in params.items() if k in accepted.get(name, ())}
        return cls(**kept)
    if name == "log_loss":
        if n_classes is None:
            raise ValueError("loss='log_loss' needs n_classes")
        if n_classes <= 2:
            return BinaryLogLoss()
        step = params.get("multiclass_step", "friedman")
        return SoftmaxLogLoss(n_classes, multiclass_step=step)
    if name == "exponential":
        if n_classes is not None and n_classes > 2:
            raise ValueError("loss='exponential' supports binary classification only; "
                             f"got {n_classes} classes (use loss='log_loss')")
        return ExponentialLoss()
    raise ValueError(f"loss={name!r} is not one of {available_losses()}")


__all__ = ["Loss", "available_losses", "get_loss", "newton_leaf_value", "weighted_quantile",
           "SquaredError", "AbsoluteError", "Huber", "Quantile", "Poisson", "Gamma", "Tweedie",
           "BinaryLogLoss", "ExponentialLoss", "SoftmaxLogLoss", "Formula"]
