"""GradientBoostingWithLearner: gradient boosting over any scikit-learn regressor (SPEC §5)."""

import warnings

import numpy as np
import pytest
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.linear_model import LinearRegression
from sklearn.neighbors import KNeighborsRegressor
from sklearn.tree import DecisionTreeRegressor

from treeboost import Formula, GradientBoostingWithLearner


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    n = 300
    X = rng.normal(size=(n, 5))
    y = 2 * X[:, 0] + np.sin(2 * X[:, 1]) + 0.2 * rng.normal(size=n)
    y_bin = (X[:, 0] + X[:, 1] + 0.5 * rng.normal(size=n) > 0).astype(int)
    return X, y, y_bin


def test_trees_and_squared_error_equal_sklearn_gradient_boosting(data):
    X, y, _ = data
    ours = GradientBoostingWithLearner(DecisionTreeRegressor(max_depth=3), n_estimators=50,
                                       random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # sklearn's criterion deprecation
        ref = GradientBoostingRegressor(max_depth=3, n_estimators=50, learning_rate=0.1,
                                        random_state=0).fit(X, y)
    # a least-squares tree's leaves are residual means, so the line search gives rho = 1
    np.testing.assert_allclose(ours.multipliers_, 1.0, atol=1e-8)
    # the pseudo-residuals are float32 (the engine's gradient dtype): ~1e-7 relative
    # noise in each tree's leaf means, none in its splits on tie-free data
    np.testing.assert_allclose(ours.predict(X), ref.predict(X), rtol=0, atol=1e-6)
    np.testing.assert_allclose(ours.init_score_, y.mean())


def test_one_linear_stage_is_least_squares(data):
    # F0 = mean, then a linear fit to the residuals with rho = 1 and no shrinkage: OLS
    X, y, _ = data
    model = GradientBoostingWithLearner(LinearRegression(), n_estimators=1,
                                        learning_rate=1.0).fit(X, y)
    np.testing.assert_allclose(model.predict(X), LinearRegression().fit(X, y).predict(X),
                               atol=1e-6)  # float32 residuals again


def test_linear_learner_with_log_loss_lowers_the_loss_every_stage(data):
    X, _, y = data
    model = GradientBoostingWithLearner(LinearRegression(), loss="log_loss",
                                        n_estimators=30).fit(X, y)
    p = y.mean()
    f0_loss = -(p * np.log(p) + (1 - p) * np.log(1 - p))
    losses = np.concatenate([[f0_loss], model.train_score_])
    assert np.all(np.diff(losses) < 0)
    assert model.train_score_[-1] < 0.6 * f0_loss
    # the line search is not a formality: log-loss steps along h are far from 1
    assert np.all(model.multipliers_ > 1.5)
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(model.predict(X), (proba[:, 1] > 0.5).astype(int))


def test_user_losses_and_subsampling(data):
    X, y, _ = data
    model = GradientBoostingWithLearner(loss=Formula("log(cosh(f - y))"), n_estimators=20,
                                        subsample=0.7, random_state=0).fit(X, y)
    assert np.all(np.diff(model.train_score_) < 0)
    again = GradientBoostingWithLearner(loss=Formula("log(cosh(f - y))"), n_estimators=20,
                                        subsample=0.7, random_state=0).fit(X, y)
    np.testing.assert_array_equal(model.predict(X), again.predict(X))

    def squared(y, f):
        return f - y, np.ones_like(y)

    # a callable gives derivatives only: the stage multiplier is one Newton step,
    # exact for a quadratic loss, so it matches the built-in squared error
    user = GradientBoostingWithLearner(loss=squared, n_estimators=10, random_state=0).fit(X, y)
    builtin = GradientBoostingWithLearner(n_estimators=10, random_state=0).fit(X, y)
    np.testing.assert_allclose(user.predict(X), builtin.predict(X), atol=1e-6)
    assert np.isnan(user.train_score_).all()


def test_errors(data):
    X, y, y_bin = data
    with pytest.raises(ValueError, match="does not accept sample_weight"):
        GradientBoostingWithLearner(KNeighborsRegressor(), n_estimators=2).fit(
            X, y, sample_weight=np.linspace(1, 2, y.size))
    with pytest.raises(ValueError, match="needs 2 classes"):
        GradientBoostingWithLearner(loss="log_loss").fit(X, np.arange(y.size) % 3)
    with pytest.raises(ValueError, match="subsample=0"):
        GradientBoostingWithLearner(subsample=0.0).fit(X, y)
    with pytest.raises(AttributeError, match="classification loss"):
        GradientBoostingWithLearner(n_estimators=2).fit(X, y).predict_proba(X)
    # without weights any regressor works, k-NN included
    model = GradientBoostingWithLearner(KNeighborsRegressor(), n_estimators=5).fit(X, y)
    assert np.mean((model.predict(X) - y) ** 2) < np.var(y)
