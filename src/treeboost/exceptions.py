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
