"""Continued training (SPEC §4): ``warm_start`` and ``fit(..., init_model=...)``.

The estimators' ``fit`` asks ``previous_model`` for the model to continue
(a copy, so a failed fit leaves the original untouched) and checks with
``check_compatible`` that the new data and parameters fit it. ``Booster.fit``
then recomputes the raw scores from the kept trees and adds stages, each
drawing from its own ``stage_streams(seed, m)``, so continuing gives the
model of one uninterrupted fit.

- ``warm_start=True`` (scikit-learn): ``n_estimators`` is the total number of
  stages; fitting again with a larger one adds the missing stages on the
  same data (same shape required) with the same seed as the first fit.
- ``init_model`` (LightGBM): ``n_estimators`` more stages are added to a
  fitted estimator or a saved model file, with this estimator's
  ``random_state``; its bins are reused.

``treeboost.train(..., init_model=)`` continues a Booster (or a model file) with the
same checks of what cannot change mid-model (``FIXED_PARAMS``), made here for both.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field

import numpy as np

from . import params as _params
from ._estimator_io import load_model
from ._sklearn_api import check_is_fitted
from .constraints import by_index, check_earlier_trees
from .modes import mode_named

#: What a model keeps from its first stage to its last: continuing it (``init_model``,
#: ``warm_start``) with another value is refused, naming the parameter. The loss and its
#: parameters (the raw scores of the earlier stages mean something under that loss
#: only), the number of classes (one tree per class and stage), the bins (``max_bins``
#: and the categorical features: the trees split on bin numbers) and the family of the
#: boosting mode (a forest averages its trees, DART rescales them). Where ``train``'s
#: params leave one out, the model's value is taken.
FIXED_PARAMS = ("loss", *_params.part_names("loss"), "multiclass_step", "n_classes",
                "max_bins", "categorical_features", "boosting")


@dataclass
class Previous:
    """What continued training keeps of the earlier model."""

    booster: object
    n_estimators: int  # the total number of stages after this fit
    warm: bool
    n_features: int
    classes: np.ndarray | None
    train_shape: tuple | None
    evals: dict = field(default_factory=dict)
    trace: list = field(default_factory=list)


def _load(init_model, estimator):
    if isinstance(init_model, (str, os.PathLike)):
        init_model = load_model(init_model)
    if type(init_model) is not type(estimator):
        raise TypeError(f"init_model must be a fitted {type(estimator).__name__} or the path "
                        f"of one saved with save_model, got {type(init_model).__name__}")
    check_is_fitted(init_model, "_booster")
    return init_model


def previous_model(estimator, init_model) -> Previous | None:
    """The model ``fit`` continues, or None for a fresh fit.

    Raises
    ------
    ValueError
        With ``warm_start``, if ``n_estimators`` is below the stages already fitted.
    """
    if init_model is not None:
        source, warm = _load(init_model, estimator), False
        total = len(source._booster.trees) + estimator.n_estimators
    elif estimator.warm_start and hasattr(estimator, "_booster"):
        source, warm = estimator, True
        total = estimator.n_estimators
        if total < len(source._booster.trees):
            raise ValueError(f"n_estimators={total} must be at least the "
                             f"{len(source._booster.trees)} stages already fitted when "
                             "warm_start=True")
    else:
        return None
    return Previous(booster=copy.deepcopy(source._booster), n_estimators=total, warm=warm,
                    n_features=source.n_features_in_,
                    classes=getattr(source, "classes_", None),
                    train_shape=getattr(source, "_train_shape", None),
                    evals=copy.deepcopy(source.evals_result_) if warm else {},
                    trace=list(getattr(source, "trace_", [])) if warm else [])


def check_compatible(estimator, previous: Previous, X, loss, warm: bool,
                     shape: tuple) -> int | None:
    """Check the new fit against the kept model; return the stages' seed.

    Returns None when a warm start has nothing to add (``n_estimators``
    stages are already there).

    Parameters
    ----------
    estimator : TreeBoostRegressor or TreeBoostClassifier
        The estimator being fitted (data checked, target encoded).
    previous : Previous
        The model to continue.
    X : ndarray or sparse matrix
        The checked training data.
    loss : Loss
        The loss of the new fit.
    warm : bool
        True for ``warm_start``, False for ``init_model``.
    shape : tuple
        Shape of the checked training data (rows of positive weight, features).

    Raises
    ------
    ValueError
        If the data (features, classes, and for ``warm_start`` the shape),
        the loss, the bins or the boosting mode do not match the kept model
        (``FIXED_PARAMS``), or if its trees do not meet the monotone or
        interaction constraints of the new stages.
    """
    booster = previous.booster
    what = "warm_start" if warm else "init_model"
    if X.shape[1] != previous.n_features:
        raise ValueError(f"{what}: X has {X.shape[1]} features, but the model to continue "
                         f"was fitted on {previous.n_features}")
    if warm and previous.train_shape is not None and \
            tuple(shape) != tuple(previous.train_shape):
        raise ValueError(f"warm_start continues training on the same data: X has shape "
                         f"{tuple(shape)}, the first fit had "
                         f"{tuple(previous.train_shape)}")
    if previous.classes is not None and not np.array_equal(previous.classes,
                                                           estimator.classes_):
        raise ValueError(f"{what}: the classes {estimator.classes_.tolist()} differ from the "
                         f"model's {previous.classes.tolist()}")
    check_same_loss(booster.loss, loss, what)
    check_same_bins(booster.bin_mapper, estimator.max_bins, estimator.is_categorical_, what)
    check_same_mode(booster, estimator.boosting, what)
    names = getattr(estimator, "feature_names_in_", None)
    wanted = by_index({"monotone_constraints": estimator.monotone_constraints,
                       "interaction_constraints": estimator.interaction_constraints}, names)
    check_earlier_trees(booster.trees, wanted["monotone_constraints"],
                        wanted["interaction_constraints"], booster.n_features, what,
                        None if names is None else [str(n) for n in names])
    if warm and previous.n_estimators == len(booster.trees):
        return None
    if warm and booster.seed is not None:
        return int(booster.seed)  # the first fit's seed, even with random_state=None
    return estimator._seed()


def loss_identity(loss) -> dict:
    """What a model cannot change of its loss: the name, the number of classes of a
    classification loss, and the loss's parameters (``get_params``)."""
    out = {"loss": loss.name}
    if loss.is_classification:
        out["n_classes"] = int(getattr(loss, "n_classes", 2 if loss.n_outputs == 1
                                       else loss.n_outputs))
    out.update(_loss_params(loss))
    return out


def check_same_loss(old, new, what: str) -> None:
    """Refuse a loss ``new`` other than the model's ``old``, naming what differs.

    Raises
    ------
    ValueError
        Naming ``loss``, or the loss parameter(s) (``alpha``, ``power``, ``n_classes``,
        ...) whose values differ.
    """
    check_same_identity(loss_identity(new), loss_identity(old), what)


def check_same_identity(given: dict, kept: dict, what: str) -> None:
    """``check_same_loss`` on the ``loss_identity`` dicts of the two losses."""
    if given == kept:
        return
    differ = (["loss"] if given["loss"] != kept["loss"] else
              [k for k in sorted(set(given) | set(kept)) if given.get(k) != kept.get(k)])

    def show(values):
        return ", ".join(f"{k}={values.get(k)!r}" for k in differ)

    of = "" if differ == ["loss"] else f" (loss {kept['loss']!r})"
    raise ValueError(f"{what}: {show(given)} differs from the model's {show(kept)}{of}: "
                     "the loss and its parameters cannot change mid-model")


def check_same_bins(bin_mapper, max_bins, is_categorical, what: str) -> None:
    """Refuse ``max_bins`` or categorical features other than those of the model's bins,
    which continued training reuses (None: not given, nothing to check)."""
    if max_bins is not None and bin_mapper.max_bins != max_bins:
        raise ValueError(f"{what}: max_bins={max_bins} differs from the model's "
                         f"max_bins={bin_mapper.max_bins}: max_bins and the categorical "
                         "features must be those of the model to continue (its bins are "
                         "reused)")
    kept = bin_mapper.is_categorical_.astype(bool)
    if is_categorical is not None and not np.array_equal(kept,
                                                         np.asarray(is_categorical, bool)):
        raise ValueError(f"{what}: the categorical features "
                         f"{np.flatnonzero(is_categorical).tolist()} differ from the model's "
                         f"{np.flatnonzero(kept).tolist()}: max_bins and the categorical "
                         "features must be those of the model to continue (its bins are "
                         "reused)")


def check_same_mode(booster, boosting: str, what: str) -> None:
    """Refuse a boosting mode of another family than the model's (gbdt and goss are one)."""
    before = booster.params.boosting
    if booster.trees and mode_named(before) is not mode_named(boosting):
        raise ValueError(f"{what}: cannot continue a boosting={before!r} model with "
                         f"boosting={boosting!r}")


def _loss_params(loss) -> dict:
    try:
        return dict(loss.get_params())
    except (AttributeError, TypeError, NotImplementedError):
        return {}


def merged_log(previous: Previous | None, evals: dict) -> dict:
    """The evaluation log of a warm start: the earlier stages' values, then the new ones."""
    if previous is None or not previous.warm or set(previous.evals) != set(evals):
        return evals
    merged = {}
    for name, metrics in evals.items():
        if set(previous.evals[name]) != set(metrics):
            return evals
        merged[name] = {m: list(previous.evals[name][m]) + list(v) for m, v in metrics.items()}
    return merged
