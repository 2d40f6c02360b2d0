"""Survival analysis: ``TreeBoostSurvival``, gradient boosted Cox and AFT models (issue 37).

``fit(X, y)`` takes scikit-survival's structured array (a bool event field and a float
time field) or one column of signed times (XGBoost's convention: positive an event,
negative a row censored at ``-t``); for ``loss="aft"`` also interval bounds,
``fit(X, y, y_upper=...)`` or a (n_samples, 2) array ``[lower, upper]`` (``aft_bounds``).
``predict`` returns the risk score, the log hazard ratio (higher: earlier event), for
Cox and the predicted time for AFT, and ``score`` Harrell's concordance index. The
losses are ``losses.survival.Cox`` and ``AFT``; the estimator is ``sklearn``'s machinery
with these targets.
"""

from __future__ import annotations

import numpy as np

from . import _estimator_io
from . import params as _params
from ._survival_metrics import (
    aft_negative_log_likelihood,
    check_signed_time,
    check_time_bounds,
    concordance_index,
    cox_negative_log_likelihood,
)
from .losses import SURVIVAL_LOSSES, get_loss, loss_params
from .sklearn import _predict_options_doc, _TreeBoostBase

__all__ = ["TreeBoostSurvival", "aft_bounds", "aft_negative_log_likelihood",
           "concordance_index", "cox_negative_log_likelihood", "signed_times"]

#: the default ``loss`` of ``TreeBoostSurvival`` (the parameter table has no survival
#: scope yet: the estimator takes the regressor's parameters, less its loss parameters)
_DEFAULT_LOSS = "cox"


def survival_fields(dtype, what: str = "y") -> tuple[str, str] | None:
    """(event field, time field) of scikit-survival's structured dtype; None for a plain one.

    The fields are found by kind, one bool and one numeric, whatever their names
    (``Surv.from_arrays`` names them ``event`` and ``time``).

    Raises
    ------
    ValueError
        Naming ``what``, for a structured dtype that is not one bool and one numeric
        field, or a bool dtype (events without times).
    """
    names = getattr(dtype, "names", None)  # a pandas dtype has neither attribute
    if names is None:
        if getattr(dtype, "kind", "") == "b":
            raise ValueError(f"{what} is a bool array: give the times too (a structured "
                             "array of event and time, or signed times)")
        return None
    kinds = {name: dtype[name].kind for name in names}
    events = [name for name, kind in kinds.items() if kind == "b"]
    times = [name for name, kind in kinds.items() if kind in "iuf"]
    if len(names) != 2 or len(events) != 1 or len(times) != 1:
        raise ValueError(f"{what} must be a structured array of two fields, the event "
                         "indicator (bool) and the time (numbers), as scikit-survival's "
                         f"Surv.from_arrays makes; got fields {kinds}")
    return events[0], times[0]


def signed_times(y, what: str = "y", *, require_event: bool = True) -> np.ndarray:
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
    require_event : bool, default=True
        Refuse labels without an observed event (the Cox partial likelihood's need).

    Returns
    -------
    ndarray of float64 of shape (n_samples,)

    Raises
    ------
    ValueError
        Naming ``what``: a structured array without one bool and one numeric field,
        times that are NaN, infinite, negative or 0, or no observed event.
    """
    dtype = getattr(y, "dtype", None)
    fields = None if dtype is None else survival_fields(dtype, what)
    if fields is None:
        return check_signed_time(y, what, require_event=require_event)
    event_field, time_field = fields
    y = np.asarray(y).reshape(-1)
    event, time = y[event_field], y[time_field].astype(np.float64)
    name = f"{what}[{time_field!r}]"
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
    if require_event and y.size and not event.any():
        raise ValueError(f"{what}[{event_field!r}] has no observed event (all False): the "
                         "Cox partial likelihood needs at least one event")
    return np.where(event, time, -time)


def aft_bounds(y, y_upper=None, what: str = "y") -> np.ndarray:
    """Survival labels as the bounds ``[lower, upper]`` of each time, shape (n_samples, 2).

    The labels of ``loss="aft"`` (XGBoost's ``label_lower_bound`` and
    ``label_upper_bound``): equal bounds an observed time, ``upper = inf`` a
    right-censored row, ``lower = 0`` a left-censored one, others interval-censored.

    Parameters
    ----------
    y : structured array, array-like of shape (n_samples,) or (n_samples, 2)
        Without ``y_upper``: scikit-survival's structured array or signed times (as
        ``signed_times``: an event is observed at its time, a censored row lies in
        ``[time, inf]``), or the bounds themselves. With ``y_upper``: the lower bounds,
        times >= 0 (a structured array's times, whatever its event field says).
    y_upper : array-like of shape (n_samples,), default=None
        The upper bounds, >= the lower bounds, ``inf`` for right-censored rows.
    what : str, default="y"
        The name of ``y`` in error messages (``y_upper`` is named ``what + "_upper"``).

    Returns
    -------
    ndarray of float64 of shape (n_samples, 2)

    Raises
    ------
    ValueError
        Naming ``y`` or ``y_upper``: NaN, negative times, an upper bound below its lower
        bound, bounds of another length.
    """
    structured = getattr(getattr(y, "dtype", None), "names", None) is not None
    if y_upper is None:
        if not structured and np.ndim(y) == 2 and np.shape(y)[1] == 2:
            return np.column_stack(check_time_bounds(y, what))
        signed = signed_times(y, what, require_event=False)
        return np.column_stack((np.abs(signed), np.where(signed > 0, signed, np.inf)))
    lower = np.abs(signed_times(y, what, require_event=False)) if structured else y
    try:
        lower = np.asarray(lower, dtype=np.float64)
        upper = np.asarray(y_upper, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} and {what}_upper must be times (numbers): {exc}") from None
    if lower.ndim != 1 or upper.shape != lower.shape:
        raise ValueError(f"{what}_upper must have the shape of {what}, the lower bounds "
                         f"(n_samples,): got {upper.shape} and {lower.shape}")
    bad = np.isnan(upper) | (upper < lower)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{what}_upper holds {int(bad.sum())} NaN value(s) or bound(s) below "
                         f"{what} (the first at row {i}: {upper[i]:g} < {lower[i]:g})")
    return np.column_stack(check_time_bounds(np.column_stack((lower, upper)), what))


def _dropped() -> set:
    """The regressor's loss parameters no survival loss reads (alpha, power)."""
    kept = {p for name in SURVIVAL_LOSSES for p in loss_params(name)}
    return set(_params.part_names("loss", "regressor")) - kept


def _params_doc() -> str:
    lines = [f"loss : one of {list(SURVIVAL_LOSSES)}, default={_DEFAULT_LOSS!r}",
             "    The survival loss: 'cox', Cox proportional hazards with Breslow's ties; "
             "'aft', the accelerated failure time model."]
    dropped = _dropped()
    for p in _params.params_for("regressor").values():
        if p.name != "loss" and p.name not in dropped:
            lines.append(f"{p.name} : {p.describe()}, default={p.default!r}")
            lines.append(f"    {p.doc}")
    return "\n".join(lines)


@_estimator_io.register
class TreeBoostSurvival(_TreeBoostBase):
    # train() reads a survival loss with the regressor's parameters
    _scope = "regressor"

    __init__ = _params.make_init("regressor", exclude=_dropped(),
                                 overrides={"loss": _DEFAULT_LOSS},
                                 doc="Store the parameters (see the class docstring).")

    def fit(self, X, y, sample_weight=None, *, y_upper=None, init_score=None, eval_set=None,
            eval_sample_weight=None, eval_init_score=None, init_model=None, callbacks=None):
        """Fit the survival model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; NaN marks missing values.
        y : structured array or array-like of shape (n_samples,) or (n_samples, 2)
            scikit-survival's structured array (a bool event field and a numeric
            time field, times > 0), or signed times (positive: an event at t,
            negative: censored at -t), see ``signed_times``. For ``loss="aft"``
            also the bounds ``[lower, upper]`` of each time (``aft_bounds``), or with
            ``y_upper`` the lower bounds.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative row weights: a row of weight 2 counts as two rows, in the
            risk sets too.
        y_upper : array-like of shape (n_samples,), default=None
            ``loss="aft"`` only: the upper bound of each row's time, ``y`` holding the
            lower bounds (or a structured array, its times): equal bounds an observed
            time, ``inf`` right-censored, a lower bound of 0 left-censored, others
            interval-censored (XGBoost's ``label_lower_bound`` and
            ``label_upper_bound``). An ``eval_set`` pair gives its bounds as one
            (n_samples, 2) array ``[lower, upper]``.
        init_score : array-like of shape (n_samples,), default=None
            Per-row raw scores training starts from (log hazards for Cox, log times
            for AFT; XGBoost's ``base_margin``); predictions do not include them.
        eval_set : list of (X, y) pairs, default=None
            Data evaluated after every stage (``evals_result_``), ``y`` as for
            ``fit`` (with AFT's interval bounds as one (n_samples, 2) array); the last
            pair is monitored by early stopping.
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
        if self.loss == "aft":
            labels = aft_bounds(y, y_upper)
        elif y_upper is not None:
            raise ValueError(f"y_upper gives interval-censored times to loss='aft'; "
                             f"loss={self.loss!r} takes right-censored times only")
        else:
            labels = signed_times(y)
        return super().fit(X, labels, sample_weight, init_score=init_score,
                           eval_set=eval_set, eval_sample_weight=eval_sample_weight,
                           eval_init_score=eval_init_score, init_model=init_model,
                           callbacks=callbacks)

    def _check_loss(self) -> None:
        if not isinstance(self.loss, str) or self.loss not in SURVIVAL_LOSSES:
            raise ValueError(f"loss={self.loss!r} must be one of {list(SURVIVAL_LOSSES)} "
                             f"for {type(self).__name__}")

    def _make_loss(self):
        self._check_loss()
        return get_loss(self.loss, **{name: getattr(self, name)
                                      for name in loss_params(self.loss)})

    def _task(self) -> str:
        return "survival"

    def _labels(self, y, what: str = "y") -> np.ndarray:
        """Signed times (Cox) or time bounds (n_samples, 2) (AFT) of survival labels."""
        return aft_bounds(y, what=what) if self.loss == "aft" else signed_times(y, what)

    def _check_training_data(self, X, y, sample_weight, init_score=None):
        if y.ndim != 2:
            return super()._check_training_data(X, y, sample_weight, init_score)
        # AFT's bounds hold inf (right-censored rows), which scikit-learn's target checks
        # refuse: they check the row numbers, and the bounds follow the rows they keep
        rows = np.arange(y.shape[0], dtype=np.float64)
        X, rows, sample_weight, init_score = super()._check_training_data(
            X, rows, sample_weight, init_score)
        return X, y[rows.astype(np.intp)], sample_weight, init_score

    def _encode_target(self, y):
        return np.asarray(y, dtype=np.float64)

    def _encode_eval_target(self, y):
        return self._labels(y, "eval_set y")

    def _dataset_labels(self, y) -> dict:
        if y.ndim == 2:  # AFT's bounds
            return {"label": y[:, 0], "label_upper_bound": y[:, 1]}
        return {"label": y}

    def _fitted_aft(self) -> bool:
        """Whether the fitted model is an AFT model (its loss, whatever ``loss`` says now)."""
        return self._booster.loss.name == "aft"

    def _from_raw(self, raw):
        """Predictions of raw scores (n_samples,): log hazards (Cox), times (AFT)."""
        return np.exp(raw) if self._fitted_aft() else raw

    @_predict_options_doc
    def predict(self, X, pred_contribs=False, pred_interactions=False, *, pred_leaf=False,
                raw_score=False, iteration_range=None):
        """Predict the risk score (Cox: the log hazard ratio) or the time (AFT).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input data; NaN marks missing values.
        pred_contribs : bool, default=False
            Return exact TreeSHAP contributions to the raw score (log hazard ratio,
            log time) instead.
        pred_interactions : bool, default=False
            Return SHAP interaction values of the raw score instead.
        {predict_options}

        Returns
        -------
        ndarray of shape (n_samples,)
            Cox: the log hazard ratios (higher: earlier event; XGBoost's
            ``survival:cox`` margin, whose ``predict`` returns their exp,
            ``predict_hazard_ratio`` here). AFT: the predicted times ``exp(F)``
            (XGBoost's ``survival:aft`` ``predict``; ``raw_score=True`` gives the log
            times). Or the option's array as ``TreeBoostRegressor.predict``.
        """
        out = self._predict_option(X, pred_contribs, pred_interactions, pred_leaf, raw_score,
                                   iteration_range)
        if out is not None:
            return out
        return self._from_raw(self._raw_predict(X, iteration_range)[:, 0])

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

        Raises
        ------
        ValueError
            For ``loss="aft"``, which predicts times, not hazards.
        """
        if self._fitted_aft():
            raise ValueError("predict_hazard_ratio is defined for loss='cox'; loss='aft' "
                             "predicts times (predict)")
        return np.exp(self._raw_predict(X, iteration_range)[:, 0])

    def staged_predict(self, X):
        """Yield ``predict(X)`` after each stage (log hazard ratios, or AFT's times).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input data.

        Yields
        ------
        ndarray of shape (n_samples,)
        """
        for raw in self._staged_raw_predict(X):
            yield self._from_raw(raw[:, 0])

    def score(self, X, y, sample_weight=None):
        """Harrell's concordance index of ``predict(X)`` against the survival labels ``y``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input data.
        y : structured array or array-like of shape (n_samples,) or (n_samples, 2)
            Survival labels, as for ``fit`` (AFT's interval bounds as one (n_samples,
            2) array).
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights: a pair weighs the product of its rows' weights.

        Returns
        -------
        float
            The fraction of comparable pairs ordered right (see
            ``treeboost.survival.concordance_index``); for AFT the risk is the negated
            predicted log time (a longer time, a lower risk).
        """
        raw = self._raw_predict(X)[:, 0]
        if self._fitted_aft():
            return concordance_index(aft_bounds(y), -raw, sample_weight)
        return concordance_index(signed_times(y), raw, sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags


TreeBoostSurvival.__doc__ = f"""Gradient boosted survival models: Cox proportional hazards, or AFT.

``loss="cox"``: Breslow's partial likelihood (XGBoost's ``survival:cox``), Newton leaves,
F0 = 0; ``predict`` returns the log hazard ratio (higher: earlier event).
``loss="aft"``: the accelerated failure time model (XGBoost's ``survival:aft``), log T =
F(x) + sigma Z, its negative log-likelihood on interval-censored times, F0 the constant
minimiser, Newton leaves; ``predict`` returns the predicted time exp(F).
``fit`` takes scikit-survival's structured array (event, time) or signed times, and for
AFT interval bounds (``y_upper``); ``score`` is Harrell's concordance index (for AFT of
the negated log times: a longer time, a lower risk). The parameters are
``TreeBoostRegressor``'s, but for ``loss`` and the regression loss parameters ``alpha``
and ``power``.

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
    (``"cox-nloglik"``) or AFT's mean negative log-likelihood (``"aft-nloglik"``);
    ``eval_metric="cindex"`` logs the concordance index.

See Also
--------
treeboost.survival.concordance_index, treeboost.survival.cox_negative_log_likelihood,
treeboost.survival.aft_negative_log_likelihood, treeboost.survival.aft_bounds

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
