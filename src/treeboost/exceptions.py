"""Exceptions raised by treeboost, all subclasses of the built-in ones users catch."""

from sklearn.exceptions import NotFittedError as _SklearnNotFittedError


class TreeboostError(Exception):
    """Base class of every treeboost-specific error."""


class NotFittedError(_SklearnNotFittedError, TreeboostError):
    """A model was used before ``fit``; also a scikit-learn ``NotFittedError``."""


class DataError(ValueError, TreeboostError):
    """Input data that cannot be used: wrong shape, dtype, NaN targets, ..."""


class ModelFormatError(ValueError, TreeboostError):
    """A model file that is truncated, edited, of another format or version."""


class DivergenceError(ValueError, TreeboostError):
    """Training produced a non-finite gradient, hessian, leaf value or raw score.

    The message names the stage (1-based) and the likely cause: the scale of
    the targets or weights, or the loss. No model is returned: a model with a
    NaN or infinite tree would predict NaN or infinity silently.
    """


class LossError(ValueError, TreeboostError):
    """A loss that cannot be trained with: e.g. a user loss with negative hessians."""
