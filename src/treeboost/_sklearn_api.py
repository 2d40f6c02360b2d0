"""scikit-learn's estimator protocol, kept without importing scikit-learn.

Importing scikit-learn costs about 1.2 s here (``sklearn.base`` pulls in SciPy's
statistics and pandas), more than a warm fit of 10,000 rows. The estimators
therefore do not inherit ``sklearn.base.BaseEstimator``; they implement the
protocol scikit-learn documents for estimators of other packages:
``get_params``/``set_params`` read from ``__init__``'s signature,
``__sklearn_tags__``, ``score``, the metadata-routing requests and a repr
listing the changed parameters. What needs scikit-learn itself (its tags, its
metrics, its routing objects) imports it when called, and only scikit-learn's
tools or a user asking for it call those: a plain fit and predict never do.
``sklearn.base.clone``, ``Pipeline``, ``GridSearchCV`` and scikit-learn's
estimator checks take the estimators as before (``tests/test_estimator_checks.py``).

The small helpers (``check_is_fitted``, ``check_random_state``, ``num_samples``)
do what scikit-learn's functions of those names do for the estimators, with the
same messages.
"""

from __future__ import annotations

import inspect
import math
import numbers
import textwrap
from collections import defaultdict

import numpy as np

#: the methods scikit-learn routes metadata to (``sklearn.utils._metadata_requests``)
_ROUTED_METHODS = ("fit", "partial_fit", "predict", "predict_proba", "predict_log_proba",
                   "decision_function", "score", "split", "transform", "inverse_transform")
#: parameters scikit-learn never routes as metadata
_NOT_METADATA = frozenset({"X", "y", "Y", "Xt", "yt"})


def check_is_fitted(estimator, attribute: str) -> None:
    """Raise ``NotFittedError`` unless ``estimator`` has ``attribute`` (set by ``fit``).

    Parameters
    ----------
    estimator : object
        An estimator instance.
    attribute : str
        The attribute a fit sets.

    Raises
    ------
    TypeError
        If ``estimator`` is a class or has no ``fit`` method.
    treeboost.exceptions.NotFittedError
        If it is not fitted; also a scikit-learn ``NotFittedError``.
    """
    if inspect.isclass(estimator):
        raise TypeError(f"{estimator} is a class, not an instance.")
    if not hasattr(estimator, "fit"):
        raise TypeError(f"{estimator} is not an estimator instance.")
    if not hasattr(estimator, attribute):
        from .exceptions import NotFittedError

        raise NotFittedError(f"This {type(estimator).__name__} instance is not fitted yet. "
                             "Call 'fit' with appropriate arguments before using this "
                             "estimator.")


def check_random_state(seed) -> np.random.RandomState:
    """A ``RandomState`` from ``random_state`` as scikit-learn reads it.

    Parameters
    ----------
    seed : None, int or numpy.random.RandomState
        None (or the ``numpy.random`` module): NumPy's global generator; an int: a
        new generator seeded with it; a ``RandomState``: itself.

    Returns
    -------
    numpy.random.RandomState

    Raises
    ------
    ValueError
        For anything else.
    """
    if seed is None or seed is np.random:
        return np.random.mtrand._rand
    if isinstance(seed, numbers.Integral):
        return np.random.RandomState(seed)
    if isinstance(seed, np.random.RandomState):
        return seed
    raise ValueError(f"{seed!r} cannot be used to seed a numpy.random.RandomState instance")


def num_samples(x) -> int:
    """The number of rows of an array-like (scikit-learn's ``_num_samples``).

    Parameters
    ----------
    x : array-like, sparse matrix or data frame

    Returns
    -------
    int
    """
    shape = getattr(x, "shape", None)
    # arrays and frames: their first dimension (scikit-learn's answer for them)
    if isinstance(shape, tuple) and shape and isinstance(shape[0], numbers.Integral) \
            and not callable(getattr(x, "fit", None)):
        return shape[0]
    from sklearn.utils.validation import _num_samples

    return _num_samples(x)


def _same_default(value, default) -> bool:
    """Whether a parameter holds its default (scikit-learn's repr rule: equal reprs)."""
    if default is inspect.Parameter.empty:
        return False
    if isinstance(value, float) and isinstance(default, float) \
            and math.isnan(value) and math.isnan(default):
        return True
    return type(value) is type(default) and repr(value) == repr(default)


class _RequestSetter:
    """``set_{method}_request``: scikit-learn's own setter, made when first looked up.

    scikit-learn's ``RequestMethod`` descriptor gives the method its signature and
    docstring; it needs scikit-learn, so the class holds this placeholder and
    builds that descriptor on access (routing is a scikit-learn feature: it is
    imported by then).
    """

    def __init__(self, method: str, keys: list[str]):
        self.method, self.keys = method, keys

    def __get__(self, instance, owner):
        from sklearn.utils._metadata_requests import RequestMethod

        return RequestMethod(self.method, self.keys).__get__(instance, owner)


class EstimatorAPI:
    """Parameters, tags, repr and metadata requests of a scikit-learn estimator.

    A base for estimators that keep scikit-learn off the import path: the
    parameters are the arguments of the class's ``__init__``, stored under their
    names (scikit-learn's convention).
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # scikit-learn's routing setters for each method taking metadata (sample_weight,
        # groups, ...): what BaseEstimator.__init_subclass__ adds to its subclasses
        for method in _ROUTED_METHODS:
            function = getattr(cls, method, None)
            if not inspect.isfunction(function):
                continue
            keys = sorted(
                p.name for p in list(inspect.signature(function).parameters.values())[1:]
                if p.name not in _NOT_METADATA
                and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))
            setter = f"set_{method}_request"
            existing = inspect.getattr_static(cls, setter, None)
            if existing is not None and not isinstance(existing, _RequestSetter):
                continue  # a setter the class defines itself
            if keys or existing is not None:
                setattr(cls, setter, _RequestSetter(method, keys))

    @classmethod
    def _get_param_names(cls) -> list[str]:
        """The parameter names: ``__init__``'s arguments, sorted (as scikit-learn)."""
        if cls.__init__ is object.__init__:
            return []
        parameters = [p for p in inspect.signature(cls.__init__).parameters.values()
                      if p.name != "self" and p.kind != p.VAR_KEYWORD]
        for p in parameters:
            if p.kind == p.VAR_POSITIONAL:
                raise RuntimeError(f"{cls.__name__}'s __init__ must name its parameters "
                                   "(no *args): scikit-learn's get_params reads them")
        return sorted(p.name for p in parameters)

    def get_params(self, deep: bool = True) -> dict:
        """Get the parameters of this estimator.

        Parameters
        ----------
        deep : bool, default=True
            Also return the parameters of parameters that are estimators, as
            ``<parameter>__<name>``.

        Returns
        -------
        dict
            Parameter names mapped to their values.
        """
        out = {}
        for key in self._get_param_names():
            value = getattr(self, key)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{key}__{k}", v) for k, v in value.get_params().items())
            out[key] = value
        return out

    def set_params(self, **params):
        """Set the parameters of this estimator.

        Parameters
        ----------
        **params : dict
            Estimator parameters; ``<parameter>__<name>`` sets a parameter of a
            parameter that is an estimator.

        Returns
        -------
        self
            The estimator.

        Raises
        ------
        ValueError
            For a name that is not a parameter.
        """
        if not params:
            return self
        valid = self.get_params(deep=True)
        nested = defaultdict(dict)
        for key, value in params.items():
            key, delim, sub_key = key.partition("__")
            if key not in valid:
                raise ValueError(f"Invalid parameter {key!r} for estimator {self}. Valid "
                                 f"parameters are: {self._get_param_names()!r}.")
            if delim:
                nested[key][sub_key] = value
            else:
                setattr(self, key, value)
                valid[key] = value
        for key, sub_params in nested.items():
            valid[key].set_params(**sub_params)
        return self

    def __repr__(self) -> str:
        """The class and its parameters that differ from their defaults, as scikit-learn's."""
        defaults = {name: p.default
                    for name, p in inspect.signature(type(self).__init__).parameters.items()}
        items = [f"{key}={value!r}" for key, value in self.get_params(deep=False).items()
                 if not _same_default(value, defaults.get(key, inspect.Parameter.empty))]
        name = type(self).__name__
        text = f"{name}({', '.join(items)})"
        if len(text) <= 79:
            return text
        return "\n".join(textwrap.wrap(text, width=79, subsequent_indent=" " * (len(name) + 1),
                                       break_long_words=False, break_on_hyphens=False))

    def _repr_mimebundle_(self, **kwargs) -> dict:
        """A notebook's view: the repr, and scikit-learn's HTML diagram where its
        ``display`` setting asks for one (scikit-learn is imported then, on display)."""
        from sklearn import get_config
        from sklearn.utils import estimator_html_repr

        output = {"text/plain": repr(self)}
        if get_config()["display"] == "diagram":
            output["text/html"] = estimator_html_repr(self)
        return output

    def __sklearn_tags__(self):
        """scikit-learn's tags of a plain estimator (``BaseEstimator``'s defaults).

        Returns
        -------
        sklearn.utils.Tags
        """
        from sklearn.utils import Tags, TargetTags

        return Tags(estimator_type=None, target_tags=TargetTags(required=False),
                    transformer_tags=None, regressor_tags=None, classifier_tags=None)

    @classmethod
    def _get_class_level_metadata_request_values(cls, method_name: str, method=None,
                                                 ignore_params=None) -> dict:
        # scikit-learn's own reading of the signatures and __metadata_request__ attributes
        from sklearn.utils._metadata_requests import _MetadataRequester

        return _MetadataRequester._get_class_level_metadata_request_values.__func__(
            cls, method_name, method, ignore_params)

    def _get_metadata_request(self):
        from sklearn.utils._metadata_requests import _MetadataRequester

        return _MetadataRequester._get_metadata_request(self)

    def get_metadata_routing(self):
        """The metadata this estimator's methods request (scikit-learn's routing).

        Returns
        -------
        sklearn.utils.metadata_routing.MetadataRequest
        """
        return self._get_metadata_request()


class ClassifierAPI:
    """What ``sklearn.base.ClassifierMixin`` adds: accuracy as ``score``, the classifier tags."""

    _estimator_type = "classifier"

    def score(self, X, y, sample_weight=None) -> float:
        """Mean accuracy of ``predict(X)`` against ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test samples.
        y : array-like of shape (n_samples,)
            True labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.

        Returns
        -------
        float
            ``sklearn.metrics.accuracy_score`` of the predictions.
        """
        from sklearn.metrics import accuracy_score

        return float(accuracy_score(y, self.predict(X), sample_weight=sample_weight))

    def __sklearn_tags__(self):
        from sklearn.utils import ClassifierTags

        tags = super().__sklearn_tags__()
        tags.estimator_type = "classifier"
        tags.classifier_tags = ClassifierTags()
        tags.target_tags.required = True
        return tags


class RegressorAPI:
    """What ``sklearn.base.RegressorMixin`` adds: R^2 as ``score``, the regressor tags."""

    _estimator_type = "regressor"

    def score(self, X, y, sample_weight=None) -> float:
        """Coefficient of determination R^2 of ``predict(X)`` against ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test samples.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            True values.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.

        Returns
        -------
        float
            ``sklearn.metrics.r2_score`` of the predictions (averaged uniformly
            over several outputs).
        """
        from sklearn.metrics import r2_score

        return float(r2_score(y, self.predict(X), sample_weight=sample_weight))

    def __sklearn_tags__(self):
        from sklearn.utils import RegressorTags

        tags = super().__sklearn_tags__()
        tags.estimator_type = "regressor"
        tags.regressor_tags = RegressorTags()
        tags.target_tags.required = True
        return tags
