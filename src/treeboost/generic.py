"""Gradient boosting over any scikit-learn regressor (SPEC §5): the slow, general path.

Friedman (2001), Algorithm 1 with a generic base learner: F0 = argmin_c sum
L(y, c); at stage m the base learner h_m is fitted by least squares to the
pseudo-residuals r_i = -dL/dF(x_i) of the stage's rows, then the multiplier
rho_m = argmin_rho sum w L(y, F + rho h_m(x)) is found by a numeric line
search (Brent's method on the loss; a Newton step for losses known only by
their derivatives), and F <- F + learning_rate * rho_m * h_m. Trees stay
the fast path (``TreeBoostRegressor``); this one works with linear models,
kernel machines, k-NN, ... anything with ``fit`` and ``predict``.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import check_random_state
from sklearn.utils.validation import (
    _check_sample_weight,
    check_is_fitted,
    has_fit_parameter,
    validate_data,
)

from ._dtypes import G_H_DTYPE, X_DTYPE
from .losses import CLASSIFICATION_LOSSES, get_loss
from .losses.custom import CallableLoss


class GradientBoostingWithLearner(BaseEstimator):
    """Gradient boosting with any scikit-learn regressor as the weak learner.

    Parameters
    ----------
    base_estimator : regressor, default=None
        Weak learner, cloned at every stage and fitted to the pseudo-residuals
        (with ``sample_weight`` when the rows are weighted). None: a
        ``DecisionTreeRegressor(max_depth=3)``.
    loss : str, Formula, Loss or callable, default="squared_error"
        A regression loss name of ``treeboost.available_losses()``,
        ``"log_loss"`` or ``"exponential"`` (binary classification: ``y`` has
        two classes, ``predict`` returns labels), or a user loss (see
        ``TreeBoostRegressor``), used with regression semantics.
    n_estimators : int, default=100
        Number of stages.
    learning_rate : float, default=0.1
        Shrinkage applied to every stage after its line search.
    subsample : float, default=1.0
        Fraction of rows drawn without replacement for each stage's fit and
        line search.
    alpha : float, default=0.9
        Quantile (quantile loss) or quantile of |residual| setting Huber's delta.
    power : float, default=1.5
        Tweedie variance power.
    random_state : int, RandomState instance or None, default=None
        Seeds row subsampling and the ``random_state`` of each learner.

    Attributes
    ----------
    estimators_ : list of regressors
        The fitted learners h_m.
    multipliers_ : ndarray of shape (n_estimators,)
        Line-search multiplier rho_m of each stage (before shrinkage).
    init_score_ : float
        F0.
    train_score_ : ndarray of shape (n_estimators,)
        Weighted mean training loss after each stage (NaN for a loss given
        by its derivatives only).
    classes_ : ndarray of shape (2,)
        Class labels, for ``"log_loss"`` and ``"exponential"``.
    n_features_in_ : int
        Number of features seen during fit.
    """

    def __init__(self, base_estimator=None, *, loss="squared_error", n_estimators=100,
                 learning_rate=0.1, subsample=1.0, alpha=0.9, power=1.5, random_state=None):
        self.base_estimator = base_estimator
        self.loss = loss
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.subsample = subsample
        self.alpha = alpha
        self.power = power
        self.random_state = random_state

    def _check_params(self):
        if isinstance(self.n_estimators, bool) or not isinstance(
                self.n_estimators, numbers.Integral) or self.n_estimators < 1:
            raise ValueError(f"n_estimators={self.n_estimators!r} must be an int >= 1")
        for name, hi in (("learning_rate", np.inf), ("subsample", 1.0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real) \
                    or not 0 < value <= hi:
                raise ValueError(f"{name}={value!r} must be a float in (0, {hi:g}]")

    def _is_classifier(self) -> bool:
        return isinstance(self.loss, str) and self.loss in CLASSIFICATION_LOSSES

    def fit(self, X, y, sample_weight=None):
        """Run the stages.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data, as the base learner accepts it.
        y : array-like of shape (n_samples,)
            Targets (two class labels for ``"log_loss"``/``"exponential"``).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative row weights.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        self._check_params()
        X, y = validate_data(self, X, y, dtype=X_DTYPE, y_numeric=not self._is_classifier())
        if self._is_classifier():
            encoder = LabelEncoder().fit(y)
            self.classes_ = encoder.classes_
            if self.classes_.size != 2:
                raise ValueError(f"loss={self.loss!r} needs 2 classes; got {self.classes_.size}")
            y = encoder.transform(y).astype(np.float64)
            self._loss = get_loss(self.loss, n_classes=2)
        else:
            y = np.asarray(y, dtype=np.float64)
            self._loss = get_loss(self.loss, alpha=self.alpha, power=self.power)
        self._loss.validate_target(y)
        w = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        base = self.base_estimator if self.base_estimator is not None else _default_learner()
        if np.ptp(w) > 0 and not has_fit_parameter(base, "sample_weight"):
            raise ValueError(f"base_estimator {type(base).__name__} does not accept "
                             "sample_weight, so rows cannot be weighted")
        self.init_score_ = float(self._loss.init_score(y, w)[0])
        raw = np.full((1, y.size), self.init_score_)
        rng = check_random_state(self.random_state)
        self.estimators_, multipliers, scores = [], [], []
        for _ in range(self.n_estimators):
            rows = self._stage_rows(y.size, rng)
            learner, hx = self._fit_stage(base, X, y, raw, w, rows, rng)
            rho = self._line_search(y[rows], raw[:, rows], hx[rows], w[rows])
            raw[0] += self.learning_rate * rho * hx
            self.estimators_.append(learner)
            multipliers.append(rho)
            scores.append(self._score(y, raw, w))
        self.multipliers_ = np.array(multipliers)
        self.train_score_ = np.array(scores)
        return self

    def _stage_rows(self, n, rng):
        """The stage's rows, drawn without replacement (SPEC §1.3)."""
        if self.subsample >= 1.0:
            return np.arange(n)
        size = max(1, int(round(self.subsample * n)))
        return np.sort(rng.choice(n, size, replace=False))

    def _fit_stage(self, base, X, y, raw, w, rows, rng):
        """Fit a clone of the learner to the pseudo-residuals; return it and h(x) on all rows."""
        gradient = np.empty((1, rows.size), dtype=G_H_DTYPE)
        hessian = np.empty((1, rows.size), dtype=G_H_DTYPE)
        # unit weights: the residuals are -dL/dF; the weights go to the learner's fit
        self._loss.gradient_hessian(y[rows], np.ascontiguousarray(raw[:, rows]),
                                    np.ones(rows.size), gradient, hessian)
        residual = -gradient[0].astype(np.float64)
        learner = clone(base)
        if "random_state" in learner.get_params():
            learner.set_params(random_state=int(rng.randint(np.iinfo(np.int32).max)))
        if has_fit_parameter(learner, "sample_weight"):
            learner.fit(X[rows], residual, sample_weight=w[rows])
        else:
            learner.fit(X[rows], residual)
        return learner, np.asarray(learner.predict(X), dtype=np.float64).ravel()

    def _line_search(self, y, raw, hx, w) -> float:
        """rho = argmin sum w L(y, F + rho h): Brent on the loss, never worse than rho = 0."""
        if isinstance(self._loss, CallableLoss):  # no loss value: one Newton step
            g, h = self._loss.derivatives(y, raw[0])
            den = float(np.sum(w * h * hx**2))
            return -float(np.sum(w * g * hx)) / den if den > 0 else 0.0
        from scipy.optimize import minimize_scalar  # imported on use: slow to import

        def objective(rho):
            return self._loss(y, raw + rho * hx[None, :], w)

        res = minimize_scalar(objective, bracket=(0.0, 1.0), method="brent", tol=1e-10)
        rho = float(res.x)
        return rho if np.isfinite(rho) and objective(rho) <= objective(0.0) else 0.0

    def _score(self, y, raw, w) -> float:
        if isinstance(self._loss, CallableLoss):
            return np.nan
        return self._loss(y, raw, w)

    # ---- prediction -------------------------------------------------------------
    def decision_function(self, X):
        """Raw scores F(x).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self, "estimators_")
        X = validate_data(self, X, reset=False, dtype=X_DTYPE)
        raw = np.full(X.shape[0], self.init_score_)
        for learner, rho in zip(self.estimators_, self.multipliers_, strict=True):
            raw += self.learning_rate * rho * np.asarray(learner.predict(X)).ravel()
        return raw

    def predict(self, X):
        """Predictions: the loss's inverse link of F(x), or class labels for classification.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        raw = self.decision_function(X)
        if self._is_classifier():
            return self.classes_[(raw > 0).astype(np.intp)]
        return self._loss.inverse_link(raw[None, :])

    def predict_proba(self, X):
        """Class probabilities (``"log_loss"`` and ``"exponential"`` only).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        ndarray of shape (n_samples, 2)
        """
        if not self._is_classifier():
            raise AttributeError(f"predict_proba needs a classification loss; loss={self.loss!r}")
        p = self._loss.inverse_link(self.decision_function(X)[None, :])
        return np.column_stack([1.0 - p, p])


def _default_learner():
    from sklearn.tree import DecisionTreeRegressor

    return DecisionTreeRegressor(max_depth=3)
