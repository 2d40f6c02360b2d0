"""The estimators' side of model files: metadata out, fitted estimators back (SPEC §4).

``serialization`` writes and reads a ``Booster`` with an opaque ``estimator``
dict and imports no estimator. This module fills that dict from a fitted
``TreeBoostRegressor``/``TreeBoostClassifier`` (class name, constructor
parameters, classes, feature names, frame categories, training history),
checks it on loading and hands the Booster and the checked values to the
class's ``_from_booster``. The estimator classes register themselves here
(``register``, in ``sklearn.py``), so ``load_model`` dispatches on the class
name recorded in the file while the imports run one way:
``sklearn -> _estimator_io -> serialization -> booster``.
"""

from __future__ import annotations

import os

import numpy as np

from . import params as _params
from ._sklearn_api import check_is_fitted
from .booster import Booster
from .exceptions import ModelFormatError
from .losses import CLASSIFICATION_LOSSES
from .serialization import (
    feature_names_field,
    load_booster,
    number_array,
    pandas_categories_field,
    save_booster,
    to_json,
    typed,
)

#: estimator classes by the name written in model files, filled by ``register``
_ESTIMATORS: dict[str, type] = {}
#: label kinds of "classes", and the numpy dtype kinds each may be restored as
_CLASS_KINDS = {"int": "iu", "float": "f", "bool": "b", "str": "UO"}


def register(cls: type) -> type:
    """Class decorator: ``load_model`` rebuilds files that name ``cls``.

    Parameters
    ----------
    cls : type
        An estimator class with ``_scope``, ``get_params``/``set_params``,
        ``booster_`` and a ``_from_booster`` classmethod.

    Returns
    -------
    type
        ``cls``, unchanged.
    """
    _ESTIMATORS[cls.__name__] = cls
    return cls


def _fail(message: str):
    raise ModelFormatError(message)


# ---- saving -------------------------------------------------------------------------------
def _classes_to_json(classes: np.ndarray) -> dict:
    values = classes.tolist()
    kind = {"i": "int", "u": "int", "f": "float", "b": "bool", "U": "str"}.get(classes.dtype.kind)
    if classes.dtype.kind == "O" and all(isinstance(v, str) for v in values):
        kind = "str"  # pandas and object arrays of strings
    if kind is None:
        raise ValueError(f"cannot save class labels of dtype {classes.dtype} with values "
                         f"{values[:5]}: int, float, bool and str labels are supported")
    return {"kind": kind, "dtype": classes.dtype.str, "values": to_json(values, "classes_")}


def metadata(estimator) -> dict:
    """The ``estimator`` fields of the model file of a fitted estimator.

    Parameters
    ----------
    estimator : TreeBoostRegressor or TreeBoostClassifier
        A fitted estimator.

    Returns
    -------
    dict
        JSON-safe values under the keys of ``serialization.ESTIMATOR_FIELDS``.

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If the estimator is not fitted.
    TypeError
        If it is not a registered treeboost estimator.
    ValueError
        If a value cannot be written as strict JSON.
    """
    check_is_fitted(estimator, "_booster")
    name = next((n for n, cls in _ESTIMATORS.items() if isinstance(estimator, cls)), None)
    if name is None:
        raise TypeError(f"cannot save a {type(estimator).__name__}: not a treeboost estimator")
    params = estimator.get_params()
    if isinstance(params.get("random_state"), np.random.RandomState):
        params["random_state"] = None  # its state is not part of the fitted model
    names = getattr(estimator, "feature_names_in_", None)
    return {
        "estimator": name, "params": to_json(params, "params"),
        "feature_names": None if names is None else [str(n) for n in names],
        "pandas_categories": [[int(j), to_json(list(c), f"categories of column {j}")]
                              for j, c in sorted(estimator.pandas_categories_.items())],
        "classes": _classes_to_json(estimator.classes_)
        if estimator._scope == "classifier" else None,
        "best_iteration": to_json(estimator.best_iteration_, "best_iteration_"),
        "evals_result": to_json(estimator.evals_result_, "evals_result_"),
    }


def save_model(estimator, path, *, svmlight_zero_based=None) -> None:
    """Write a fitted estimator to ``path`` as a versioned JSON model file.

    Parameters
    ----------
    estimator : TreeBoostRegressor or TreeBoostClassifier
        A fitted estimator.
    path : str or path-like
        Destination; written to a temporary file in the same directory and
        renamed, so an interrupted save never leaves a partial file.
    svmlight_zero_based : bool, default=None
        The index base of the svmlight files the estimator was trained on, recorded
        for reading new data alike (``treeboost train`` passes it); None records
        nothing.

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If the estimator is not fitted.
    ValueError
        If a value cannot be written as strict JSON (NaN or infinity, an
        unsupported parameter or label type), or if ``path`` is empty.
    """
    save_booster(estimator.booster_, path, estimator=metadata(estimator),
                 svmlight_zero_based=svmlight_zero_based)


# ---- loading ------------------------------------------------------------------------------
def _estimator_class(name):
    if name is None:
        _fail("the file holds a Booster without an estimator; load it with "
              "treeboost.serialization.load_booster")
    cls = _ESTIMATORS.get(name)
    if cls is None:
        _fail(f"unknown estimator {name!r}; expected one of {list(_ESTIMATORS)}")
    return cls


def _checked_params(cls, params) -> dict:
    params = typed(params, dict, "params", "an object")
    unknown = set(params) - set(cls().get_params())
    if unknown:
        _fail(f"unknown {cls.__name__} parameters {sorted(unknown)}")
    try:
        _params.validate(params, cls._scope)
    except (TypeError, ValueError) as err:
        _fail(f"invalid parameter: {err}")
    return params


def _classes(doc) -> np.ndarray:
    typed(doc, dict, "classes", "an object with kind, dtype and values")
    kind, values = doc.get("kind"), typed(doc.get("values"), list, "classes.values", "a list")
    if kind not in _CLASS_KINDS:
        _fail(f"classes: kind={kind!r} must be one of {list(_CLASS_KINDS)}")
    types = {"int": int, "float": (int, float), "bool": bool, "str": str}[kind]
    for v in values:
        typed(v, types, "classes.values", f"a list of {kind}")
    try:
        dtype = np.dtype(doc.get("dtype"))
        ok = dtype.kind in _CLASS_KINDS[kind] and len(values) >= 2
        if ok and dtype.kind == "U":  # wide enough for every label, and not absurdly wide
            ok = max(map(len, values)) <= dtype.itemsize // 4 <= 2**16
        classes = np.array(values, dtype=dtype) if ok else None
    except (TypeError, ValueError, OverflowError):
        classes = None
    if classes is None or not np.array_equal(np.unique(classes), classes):
        _fail(f"classes: {len(values)} labels of kind {kind} and dtype {doc.get('dtype')!r} "
              "are not at least two sorted distinct labels of that dtype")
    return classes


def _check_booster(cls, params: dict, booster: Booster, classes) -> None:
    """The Booster must be one this estimator fits: its loss, classes and bins."""
    name, is_classifier = booster.loss.name, cls._scope == "classifier"
    expected = params.get("loss", cls().get_params()["loss"])
    if (name in CLASSIFICATION_LOSSES) != is_classifier or name != expected:
        _fail(f"unknown or mismatched loss {name!r} for {cls.__name__} with "
              f"loss={expected!r}")
    if is_classifier and len(classes) != max(2, booster.n_outputs):
        _fail(f"classes: {len(classes)} labels, but the loss {name!r} has "
              f"{booster.n_outputs} outputs")
    max_bins = params.get("max_bins", cls().get_params()["max_bins"])
    if booster.bin_mapper.max_bins != max_bins:
        _fail(f"bin_mapper: max_bins={booster.bin_mapper.max_bins!r} differs from the "
              f"parameter max_bins={max_bins}")


def _history(best, evals, n_stages: int):
    """(best_iteration, evals_result), checked against the number of stages."""
    if best is not None and not 0 <= typed(best, int, "best_iteration", "an int") < n_stages:
        _fail(f"best_iteration={best} must be null or in [0, {n_stages})")
    evals = typed(evals, dict, "evals_result", "an object")
    evals = {data: {metric: [float(v) for v in
                             number_array(vals, f"evals_result {data}", "float")]
                    for metric, vals in typed(log, dict, "evals_result", "an object").items()}
             for data, log in evals.items()}
    return best, evals


def from_booster(booster: Booster, metadata: dict):
    """The fitted estimator of a loaded Booster and the ``estimator`` fields of its file.

    Parameters
    ----------
    booster : Booster
        From ``serialization.load_booster``.
    metadata : dict
        The file's ``estimator`` fields (``serialization.ESTIMATOR_FIELDS``).

    Returns
    -------
    TreeBoostRegressor or TreeBoostClassifier

    Raises
    ------
    treeboost.exceptions.ModelFormatError
        If a field is invalid or does not fit the Booster.
    """
    cls = _estimator_class(metadata["estimator"])
    params = _checked_params(cls, metadata["params"])
    n_features = booster.n_features
    names = feature_names_field(metadata["feature_names"], n_features)
    if cls._scope != "classifier" and metadata["classes"] is not None:
        _fail("classes must be null for a regressor")
    classes = _classes(metadata["classes"]) if cls._scope == "classifier" else None
    _check_booster(cls, params, booster, classes)
    categories = pandas_categories_field(metadata["pandas_categories"], n_features)
    best, evals = _history(metadata["best_iteration"], metadata["evals_result"],
                           len(booster.trees))
    return cls._from_booster(booster, params, feature_names=names, pandas_categories=categories,
                             classes=classes, best_iteration=best, evals_result=evals)


def load_model(path):
    """Load an estimator saved with ``save_model``.

    Only JSON is parsed (nothing is unpickled or evaluated), and the whole
    document is validated before the estimator is built.

    Parameters
    ----------
    path : str or path-like
        Model file.

    Returns
    -------
    TreeBoostRegressor or TreeBoostClassifier
        The fitted estimator; its predictions are bit-identical to those of
        the estimator that was saved.

    Raises
    ------
    treeboost.exceptions.ModelFormatError
        If the file is not JSON or is truncated, is of another format or of an
        unsupported ``format_version``, fails its checksum, or does not
        describe a valid model. The message starts with the path.
    """
    return load_model_and_svmlight_base(path)[0]


def load_model_and_svmlight_base(path):
    """Load an estimator with the svmlight index base its file records.

    Parameters
    ----------
    path : str or path-like
        Model file.

    Returns
    -------
    estimator : TreeBoostRegressor, TreeBoostClassifier or TreeBoostRanker
        As :func:`load_model` returns it.
    svmlight_zero_based : bool or None
        The index base of the svmlight files the model was trained on (recorded by
        ``treeboost train``), or None when the file records none.

    Raises
    ------
    treeboost.exceptions.ModelFormatError
        As :func:`load_model`.
    """
    path = os.fspath(path)
    booster, fields = load_booster(path, return_metadata=True)
    try:
        return from_booster(booster, fields), fields.get("svmlight_zero_based")
    except ModelFormatError as err:
        raise ModelFormatError(f"{path}: {err}") from None
