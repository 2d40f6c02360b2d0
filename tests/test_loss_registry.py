"""The one loss registry: ``register_loss``, ``available_losses``, ``get_loss`` and the
explicit leaf line search (DESIGN §3 losses/, anti-pattern "Registries that disagree").

Every test that registers a loss unregisters it (the ``registered`` fixture), so
nothing leaks into tests parametrised over ``available_losses()``.
"""

import numpy as np
import pytest

from treeboost import TreeBoostClassifier, TreeBoostRegressor, load_model
from treeboost.exceptions import ModelFormatError
from treeboost.losses import (
    CLASSIFICATION_LOSSES,
    REGRESSION_LOSSES,
    AbsoluteError,
    ExponentialLoss,
    Loss,
    SquaredError,
    available_losses,
    get_loss,
    register_loss,
    unregister_loss,
)
from treeboost.losses.base import newton_leaf_value

BUILTIN = ["squared_error", "absolute_error", "huber", "quantile", "poisson", "gamma",
           "tweedie", "log_loss", "exponential", "lambdarank", "rank_xendcg", "pairwise", "cox",
           "aft"]


@pytest.fixture
def registered():
    """``register(name, factory, **kw)``; every name is unregistered after the test."""
    names = []

    def register(name, factory, **kwargs):
        register_loss(name, factory, **kwargs)
        names.append(name)

    yield register
    for name in names:
        unregister_loss(name)
    assert available_losses() == BUILTIN


class MySquared(SquaredError):
    """Squared error under another name."""

    name = "my_squared"


class PseudoHuber(Loss):
    """delta^2 (sqrt(1 + (r/delta)^2) - 1), r = F - y: smooth, Newton leaves."""

    name = "pseudo_huber"
    leaf_line_search = "newton"

    def __init__(self, delta=1.0):
        self.delta = float(delta)

    def pointwise(self, y, raw):
        """The loss of each row."""
        r = (raw[0] - y) / self.delta
        return self.delta**2 * (np.sqrt(1.0 + r * r) - 1.0)

    def gradient_hessian(self, y, raw, sample_weight, gradient, hessian):
        """g = r / sqrt(1 + (r/delta)^2), h = (1 + (r/delta)^2)^(-3/2)."""
        r = raw[0] - y
        s = 1.0 + (r / self.delta) ** 2
        gradient[0][:] = sample_weight * r / np.sqrt(s)
        hessian[0][:] = sample_weight * s**-1.5

    def get_params(self):
        """``delta``."""
        return {"delta": self.delta}


@pytest.fixture(scope="module")
def data():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(300, 4))
    y = X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.1 * rng.normal(size=300)
    return X, y


def test_builtin_losses_are_registered_with_their_tasks():
    assert available_losses() == BUILTIN
    assert available_losses("regression") == BUILTIN[:7] + ["cox", "aft"] \
        == list(REGRESSION_LOSSES)
    assert available_losses("classification") == ["log_loss", "exponential"] \
        == list(CLASSIFICATION_LOSSES)
    assert available_losses("ranking") == ["lambdarank", "rank_xendcg", "pairwise"]
    with pytest.raises(ValueError, match="task='bogus' is not one of"):
        available_losses("bogus")


def test_every_builtin_declares_its_leaf_line_search():
    exact = {"absolute_error", "quantile", "huber"}  # today's overriders of leaf_values
    for name in BUILTIN:
        loss = get_loss(name, n_classes=2)
        assert loss.leaf_line_search == ("exact" if name in exact else "newton"), name
        assert loss.newton_leaves == (name not in exact)
    assert get_loss("log_loss", n_classes=3).leaf_line_search == "newton"


def test_builtin_errors_unchanged():
    with pytest.raises(ValueError, match="loss='bogus' is not one of"):
        get_loss("bogus")
    with pytest.raises(ValueError, match="loss='log_loss' needs n_classes"):
        get_loss("log_loss")
    with pytest.raises(ValueError, match="supports binary classification only"):
        get_loss("exponential", n_classes=3)


def test_leaf_line_search_must_agree_with_leaf_values():
    with pytest.raises(TypeError, match="declares leaf_line_search='exact' but does not "
                                        "override leaf_values"):
        class _NoSearch(SquaredError):
            leaf_line_search = "exact"

    with pytest.raises(TypeError, match="overrides leaf_values but declares "
                                        "leaf_line_search='newton'"):
        class _Hidden(SquaredError):
            def leaf_values(self, *args):
                return newton_leaf_value(*args[7:9], *args[-2:])

    with pytest.raises(TypeError, match="must be one of"):
        class _Unknown(SquaredError):
            leaf_line_search = "brent"

    class Median(AbsoluteError):  # inherits both the declaration and the override
        pass

    assert Median.leaf_line_search == "exact"


def test_register_loss_refuses_bad_arguments(registered):
    with pytest.raises(ValueError, match="'squared_error' is already registered"):
        register_loss("squared_error", MySquared, task="regression")
    with pytest.raises(ValueError, match=r"register_loss\('x'\): task='clustering'"):
        register_loss("x", MySquared, task="clustering")
    with pytest.raises(ValueError, match="loss name 'my loss' must be"):
        register_loss("my loss", MySquared, task="regression")
    with pytest.raises(TypeError, match=r"register_loss\('x'\): dict is not a"):
        register_loss("x", dict, task="regression")
    with pytest.raises(TypeError, match=r"register_loss\('x'\): factory 3"):
        register_loss("x", 3, task="regression")
    with pytest.raises(ValueError, match=r"register_loss\('x'\): .*is_classification"):
        register_loss("x", MySquared, task="classification")
    with pytest.raises(ValueError, match=r"register_loss\('x'\): params="):
        register_loss("x", MySquared, task="regression", params=("n_classes",))
    with pytest.raises(ValueError, match="'squared_error' is built in"):
        unregister_loss("squared_error")
    with pytest.raises(ValueError, match="'x' is not registered"):
        unregister_loss("x")
    registered("my_squared", MySquared, task="regression")
    with pytest.raises(ValueError, match="'my_squared' is already registered"):
        register_loss("my_squared", MySquared, task="regression")
    assert "x" not in available_losses()


def test_registered_squared_error_is_bit_identical(registered, data):
    X, y = data
    registered("my_squared", MySquared, task="regression")
    assert "my_squared" in REGRESSION_LOSSES
    assert "my_squared" not in CLASSIFICATION_LOSSES
    ours = TreeBoostRegressor(loss="my_squared", n_estimators=20, random_state=0).fit(X, y)
    ref = TreeBoostRegressor(loss="squared_error", n_estimators=20, random_state=0).fit(X, y)
    assert ours._booster.loss.name == "my_squared"
    np.testing.assert_array_equal(ours.predict(X), ref.predict(X))


def test_registered_pseudo_huber_trains_with_newton_leaves(registered, data):
    X, y = data
    registered("pseudo_huber", PseudoHuber, task="regression", params=("delta",))
    loss = get_loss("pseudo_huber", delta=2.0, alpha=0.9, power=1.5)  # others ignored
    assert loss.delta == 2.0
    assert loss.newton_leaves
    model = TreeBoostRegressor(loss="pseudo_huber", n_estimators=50, random_state=0).fit(X, y)
    assert model._booster.loss.newton_leaves
    mse = np.mean((model.predict(X) - y) ** 2)
    assert mse < 0.2 * np.var(y)
    # a large delta makes it squared error in all but the constant: close to it
    ref = TreeBoostRegressor(n_estimators=50, random_state=0).fit(X, y)
    assert abs(mse - np.mean((ref.predict(X) - y) ** 2)) < 0.05 * np.var(y)


def test_registered_factory_for_classification(registered, data):
    X, y = data
    labels = (y > np.median(y)).astype(int)

    class MyExponential(ExponentialLoss):
        pass

    registered("my_exponential", lambda n_classes=None: MyExponential(),
               task="classification")
    ours = TreeBoostClassifier(loss="my_exponential", n_estimators=10).fit(X, labels)
    ref = TreeBoostClassifier(loss="exponential", n_estimators=10).fit(X, labels)
    np.testing.assert_array_equal(ours.predict_proba(X), ref.predict_proba(X))
    with pytest.raises(ValueError, match="loss='my_exponential' must be one of"):
        TreeBoostRegressor(loss="my_exponential").fit(X, y)


def test_unregistered_name_is_refused_after_unregister(data):
    X, y = data
    register_loss("my_squared", MySquared, task="regression")
    unregister_loss("my_squared")
    with pytest.raises(ValueError, match="loss='my_squared' must be one of"):
        TreeBoostRegressor(loss="my_squared").fit(X, y)
    with pytest.raises(ValueError, match="loss='my_squared' is not one of"):
        get_loss("my_squared")


def test_saved_by_name_and_loaded_only_when_registered(registered, data, tmp_path):
    X, y = data
    registered("pseudo_huber", PseudoHuber, task="regression", params=("delta",))
    model = TreeBoostRegressor(loss="pseudo_huber", n_estimators=5, random_state=0).fit(X, y)
    path = tmp_path / "m.json"
    model.save_model(path)
    loaded = load_model(path)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    unregister_loss("pseudo_huber")
    try:
        with pytest.raises(ModelFormatError, match="unknown or mismatched loss "
                                                   "'pseudo_huber'.*registered again"):
            load_model(path)
    finally:
        register_loss("pseudo_huber", PseudoHuber, task="regression", params=("delta",))
