"""Exceptions raised by treeboost, all subclasses of the built-in ones users catch.

``NotFittedError`` also subclasses scikit-learn's, so that code catching
scikit-learn's catches treeboost's. It is made on first use (a module
``__getattr__``, PEP 562): importing scikit-learn to define it would cost every
``import treeboost`` about a second, and the error is raised only on a misuse.
"""


class TreeboostError(Exception):
    """Base class of every treeboost-specific error."""


def _not_fitted_error() -> type:
    from sklearn.exceptions import NotFittedError as SklearnNotFittedError

    class NotFittedError(SklearnNotFittedError, TreeboostError):
        """A model was used before ``fit``; also a scikit-learn ``NotFittedError``."""

    NotFittedError.__module__, NotFittedError.__qualname__ = __name__, "NotFittedError"
    return NotFittedError


def __getattr__(name):
    """Define ``NotFittedError`` on first use (it subclasses scikit-learn's)."""
    if name != "NotFittedError":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    cls = globals()["NotFittedError"] = _not_fitted_error()
    return cls


def __dir__():
    """The module's names, ``NotFittedError`` included before its first use."""
    return sorted(set(globals()) | {"NotFittedError"})


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
