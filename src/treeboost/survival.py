"""Survival analysis: ``TreeBoostSurvival``, a gradient boosted Cox model (issue 37).

``fit(X, y)`` takes scikit-survival's structured array (a bool event field and a float
time field) or one column of signed times (XGBoost's convention: positive an event,
negative a row censored at ``-t``); ``predict`` returns the risk score, the log hazard
ratio (higher: earlier event), and ``score`` Harrell's concordance index. The loss is
``losses.survival.Cox``; the estimator is ``sklearn``'s machinery with these targets.
"""

from __future__ import annotations

import numpy as np

from . import _estimator_io
from . import params as _params
from ._survival_metrics import check_signed_time, concordance_index, cox_negative_log_likelihood
from .losses import SURVIVAL_LOSSES, get_loss
from .sklearn import _predict_options_doc, _TreeBoostBase

__all__ = ["TreeBoostSurvival", "concordance_index", "cox_negative_log_likelihood",
           "signed_times"]

#: the default ``loss`` of ``TreeBoostSurvival`` (the parameter table has no survival
#: scope yet: the estimator takes the regressor's parameters, less its loss parameters)
_DEFAULT_LOSS = "cox"


def signed_times(y, what: str = "y") -> np.ndarray:
    """Survival labels as one column of signed times: ``t`` for an event, ``-t`` if censored.

    Parameters
    ----------
    y : structured array or array-like of shape (n_samples,)
        scikit-survival's structured array, whose two fields are the event indicator
        (bool) and the time (numbers), whatever their names (``Surv.from_arrays``
        names them ``event`` and ``time``); or signed times already (positive: an
        event at t; negative: censored at -t).
    what : str, default="y"
        The name of the labels in error messages.

    Returns
    -------
    ndarray of float64 of shape (n_samples,)

    Raises
    ------
    ValueError
        Naming ``what``: a structured array without one bool and one numeric field,
        times that are NaN, infinite, negative or 0, or no observed event.
    """
    fields = getattr(getattr(y, "dtype", None), "names", None)
    if fields is None:
        if hasattr(y, "dtype") and getattr(y.dtype, "kind", "") == "b":
            raise ValueError(f"{what} is a bool array: give the times too (a structured "
                             "array of event and time, or signed times)")
        return check_signed_time(y, what)
    y = np.asarray(y).reshape(-1)
    kinds = {name: y.dtype[name].kind for name in fields}
    events = [name for name, kind in kinds.items() if kind == "b"]
    times = [name for name, kind in kinds.items() if kind in "iuf"]
    if len(fields) != 2 or len(events) != 1 or len(times) != 1:
        raise ValueError(f"{what} must be a structured array of two fields, the event "
                         "indicator (bool) and the time (numbers), as scikit-survival's "
                         f"Surv.from_arrays makes; got fields {kinds}")
    event, time = y[events[0]], y[times[0]].astype(np.float64)
    name = f"{what}[{times[0]!r}]"
    bad = ~np.isfinite(time)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{name} holds {int(bad.sum())} NaN or infinite time(s) (the first "
                         f"at row {i}: {time[i]})")
    bad = time <= 0
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{name} holds {int(bad.sum())} time(s) <= 0 (the first at row "
                         f"{i}: {time[i]:g}): survival times must be > 0")
    if y.size and not event.any():
        raise ValueError(f"{what}[{events[0]!r}] has no observed event (all False): the "
                         "Cox partial likelihood needs at least one event")
    return np.where(event, time, -time)


def _make_init():
    """``__init__`` storing the regressor's parameters but its loss parameters (alpha,
    power), with ``loss`` first and positional (``params.make_init``'s way)."""
    dropped = set(_params.part_names("loss", "regressor"))
    names = [n for n in _params.params_for("regressor") if n not in dropped and n != "loss"]
    header = "self, loss=_defaults['loss'], *, " + ", ".join(
        f"{n}=_defaults[{n!r}]" for n in names)
    body = "".join(f"    self.{n} = {n}\n" for n in ["loss", *names])
    namespace: dict = {}
    defaults = {**_params.defaults("regressor"), "loss": _DEFAULT_LOSS}
    exec(f"def __init__({header}):\n{body}", {"_defaults": defaults}, namespace)
    init = namespace["__init__"]
    init.__doc__ = "Store the parameters (see the class docstring)."
    return init


def _params_doc() -> str:
    lines = [f"loss : one of {list(SURVIVAL_LOSSES)}, default={_DEFAULT_LOSS!r}",
             "    The survival loss: 'cox', Cox proportional hazards with Breslow's ties."]
    dropped = set(_params.part_names("loss", "regressor"))
    for p in _params.params_for("regressor").values():
        if p.name != "loss" and p.name not in dropped:
            lines.append(f"{p.name} : {p.describe()}, default={p.default!r}")
            lines.append(f"    {p.doc}")
    return "\n".join(lines)


@_estimator_io.register
class TreeBoostSurvival(_TreeBoostBase):
    # train() reads a survival loss with the regressor's parameters
    _scope = "regressor"

    __init__ = _make_init()

    def fit(self, X, y, sample_weight=None, *, init_score=None, eval_set=None,
            eval_sample_weight=None, eval_init_score=None, init_model=None, callbacks=None):
        """Fit the survival model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; NaN marks missing values.
        y : structured array or array-like of shape (n_samples,)
            scikit-survival's structured array (a bool event field and a numeric
            time field, times > 0), or signed times (positive: an event at t,
            negative: censored at -t), see ``signed_times``.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative row weights: a row of weight 2 counts as two rows, in the
            risk sets too.
        init_score : array-like of shape (n_samples,), default=None
            Per-row log hazards training starts from (XGBoost's ``base_margin``);
            predictions do not include them.
        eval_set : list of (X, y) pairs, default=None
            Data evaluated after every stage (``evals_result_``), ``y`` as for
            ``fit``; the last pair is monitored by early stopping.
        eval_sample_weight, eval_init_score : list, default=None
            Weights and initial scores of the ``eval_set`` pairs.
        init_model : TreeBoostSurvival, str or path-like, default=None
            A fitted model to continue (see ``TreeBoostRegressor.fit``).
        callbacks : list of TrainingCallback, default=None
            User callbacks (see ``TreeBoostRegressor.fit``).

        Returns
        -------
        self : object
            The fitted estimator.
        """
        self._check_loss()
        return super().fit(X, signed_times(y), sample_weight, init_score=init_score,
                           eval_set=eval_set, eval_sample_weight=eval_sample_weight,
                           eval_init_score=eval_init_score, init_model=init_model,
                           callbacks=callbacks)

    def _check_loss(self) -> None:
        if not isinstance(self.loss, str) or self.loss not in SURVIVAL_LOSSES:
            raise ValueError(f"loss={self.loss!r} must be one of {list(SURVIVAL_LOSSES)} "
                             f"for {type(self).__name__}")

    def _make_loss(self):
        self._check_loss()
        return get_loss(self.loss)

    def _task(self) -> str:
        return "survival"

    def _encode_target(self, y):
        return np.asarray(y, dtype=np.float64)

    def _encode_eval_target(self, y):
        return signed_times(y, "eval_set y")

    @_predict_options_doc
    def predict(self, X, pred_contribs=False, pred_interactions=False, *, pred_leaf=False,
                raw_score=False, iteration_range=None):
        """Predict the risk score: the log hazard ratio (higher: earlier event).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input data; NaN marks missing values.
        pred_contribs : bool, default=False
            Return exact TreeSHAP contributions to the log hazard ratio instead.
        pred_interactions : bool, default=False
            Return SHAP interaction values of the log hazard ratio instead.
        {predict_options}

        Returns
        -------
        ndarray of shape (n_samples,)
            The log hazard ratios (as XGBoost's ``survival:cox`` margin; its
            ``predict`` returns their exp, ``predict_hazard_ratio`` here), or the
            option's array as ``TreeBoostRegressor.predict``.
        """
        out = self._predict_option(X, pred_contribs, pred_interactions, pred_leaf, raw_score,
                                   iteration_range)
        if out is not None:
            return out
        return self._raw_predict(X, iteration_range)[:, 0]

    def predict_hazard_ratio(self, X, iteration_range=None):
        """The hazard ratio ``exp(predict(X))`` of each row (XGBoost's ``survival:cox``).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input data.
        iteration_range : tuple of (int, int), default=None
            Use the stages ``[start, stop)`` only, as ``predict``.

        Returns
        -------
        ndarray of shape (n_samples,)
            Relative to a baseline of log hazard 0 (F0 is 0, so without trees every
            ratio is 1).
        """
        return np.exp(self._raw_predict(X, iteration_range)[:, 0])

    def staged_predict(self, X):
        """Yield the log hazard ratios after each stage.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input data.

        Yields
        ------
        ndarray of shape (n_samples,)
        """
        for raw in self._staged_raw_predict(X):
            yield raw[:, 0]

    def score(self, X, y, sample_weight=None):
        """Harrell's concordance index of ``predict(X)`` against the survival labels ``y``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input data.
        y : structured array or array-like of shape (n_samples,)
            Survival labels, as for ``fit``.
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights: a pair weighs the product of its rows' weights.

        Returns
        -------
        float
            The fraction of comparable pairs ordered right (see
            ``treeboost.survival.concordance_index``).
        """
        return concordance_index(signed_times(y), self.predict(X), sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags


TreeBoostSurvival.__doc__ = f"""Gradient boosted Cox proportional hazards model (survival analysis).

Breslow's partial likelihood (XGBoost's ``survival:cox``), Newton leaves, F0 = 0.
``fit`` takes scikit-survival's structured array (event, time) or signed times;
``predict`` returns the log hazard ratio (higher: earlier event), ``score`` Harrell's
concordance index. The parameters are ``TreeBoostRegressor``'s, but for ``loss`` and the
regression loss parameters ``alpha`` and ``power``.

.. versionadded:: 0.1.0

Parameters
----------
{_params_doc()}

Attributes
----------
n_features_in_ : int
    Number of features seen during fit.
feature_names_in_ : ndarray of shape (n_features_in_,)
    Column names, when X had string column names.
n_iter_ : int
    Number of stages kept.
best_iteration_ : int or None
    0-based best stage under early stopping, else None.
evals_result_ : dict
    Metric values per stage, ``{{data name: {{metric name: [values]}}}}``; the default
    metric is the loss, Breslow's negative log partial likelihood per event
    (``"cox-nloglik"``); ``eval_metric="cindex"`` logs the concordance index.

See Also
--------
treeboost.survival.concordance_index, treeboost.survival.cox_negative_log_likelihood

Examples
--------
>>> import numpy as np
>>> from treeboost.survival import TreeBoostSurvival
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(200, 3))
>>> time = rng.exponential(np.exp(-X[:, 0]))
>>> y = np.where(rng.random(200) < 0.7, time, -time)  # 30% censored
>>> model = TreeBoostSurvival(n_estimators=20).fit(X, y)
>>> model.score(X, y) > 0.6
True
"""
