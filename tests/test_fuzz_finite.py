"""Fuzz property: a fit raises a clear error or gives finite predictions (issue 11).

Random small data sets with columns scaled by up to 1e+-200, targets scaled by up to
1e+-39, weights of random scale, every loss of the registry (regression losses on
targets in their domain, classification losses, a Formula), every boosting mode: the
fit either raises a ValueError or TypeError (every treeboost error derives from one)
with a message, or returns a model whose predictions on the training rows and on new
rows are all finite.
"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from treeboost import Formula, TreeBoostClassifier, TreeBoostRegressor
from treeboost.losses import REGRESSION_LOSSES

CLASSIFICATION = ["log_loss", "log_loss3", "exponential"]
LOSSES = list(REGRESSION_LOSSES) + ["tweedie3", "formula"] + CLASSIFICATION


def _targets(loss, rng, n, log_scale):
    """Targets in the loss's domain: signed, non-negative with zeros, or positive."""
    base = rng.standard_normal(n) * np.exp(rng.standard_normal(n))  # heavy-ish tails
    if loss in ("poisson", "tweedie"):
        base = np.where(rng.random(n) < 0.3, 0.0, np.abs(base))
    elif loss in ("gamma", "tweedie3"):
        base = np.abs(base) + 1e-3
    return base * 10.0 ** log_scale


def _estimator(loss, **params):
    if loss in CLASSIFICATION:
        return TreeBoostClassifier(loss=loss.rstrip("3"), **params)
    if loss == "formula":
        return TreeBoostRegressor(loss=Formula("log(cosh(f - y))"), **params)
    if loss == "tweedie3":
        return TreeBoostRegressor(loss="tweedie", power=3.0, **params)
    return TreeBoostRegressor(loss=loss, **params)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(loss=st.sampled_from(LOSSES), seed=st.integers(0, 2**32 - 1),
       n=st.integers(5, 80), n_features=st.integers(1, 4),
       column_log_scales=st.lists(st.integers(-200, 200), min_size=4, max_size=4),
       target_log_scale=st.integers(-39, 39), weight_log_scale=st.integers(-20, 20),
       boosting=st.sampled_from(["gbdt", "goss", "dart", "rf"]),
       learning_rate=st.sampled_from([0.1, 0.5, 1.0]))
def test_a_fit_raises_a_clear_error_or_predicts_finite_values(
        loss, seed, n, n_features, column_log_scales, target_log_scale, weight_log_scale,
        boosting, learning_rate):
    rng = np.random.default_rng(seed)
    scales = 10.0 ** np.array(column_log_scales[:n_features], dtype=float)
    X = rng.standard_normal((n, n_features)) * scales
    X_new = rng.standard_normal((30, n_features)) * scales * 3.0  # also beyond the range
    if loss in CLASSIFICATION:
        y = rng.integers(0, 3 if loss == "log_loss3" else 2, n)
    else:
        y = _targets(loss, rng, n, target_log_scale)
    weight = rng.random(n) * 10.0 ** weight_log_scale + 1e-300
    params = dict(n_estimators=10, learning_rate=learning_rate, min_samples_leaf=2,
                  boosting=boosting, random_state=seed)
    if boosting == "rf":
        params["subsample"] = 0.8
    model = _estimator(loss, **params)
    error = None
    try:
        model.fit(X, y, sample_weight=weight)
    except (ValueError, TypeError) as exc:  # anything else (a Numba or NumPy error) fails
        error = exc
    if error is not None:
        assert str(error), f"{type(error).__name__} without a message"
        return
    for rows in (X, X_new):
        pred = model.predict_proba(rows) if loss in CLASSIFICATION else model.predict(rows)
        assert np.all(np.isfinite(pred)), (loss, pred)
