"""User losses (SPEC §2): formulas derived by SymPy and compiled, and (grad, hess) callables.

Acceptance (issue 5): a formula equal to a built-in loss gives the same model
as the built-in to 1e-9, and a loss no library ships (log-cosh) trains and
lowers its own loss at every stage.
"""

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from sklearn.base import clone

from treeboost import Formula, TreeBoostClassifier, TreeBoostRegressor
from treeboost.losses import formula as formula_module
from treeboost.losses import get_loss
from treeboost.losses.custom import CallableLoss

# same-model comparisons: both models make the same splits, and their leaf values differ
# only by the last bits of F0 (closed form vs Brent + Newton polish) and of float32
# gradient rounding, so 1e-9 (the acceptance bound) has a wide margin
SAME_MODEL = 1e-9
COMMON = dict(n_estimators=25, max_leaf_nodes=8, min_samples_leaf=5, random_state=0)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    n = 400
    X = rng.normal(size=(n, 4))
    X[rng.random(X.shape) < 0.05] = np.nan
    signal = np.nan_to_num(X[:, 0]) + np.sin(2 * np.nan_to_num(X[:, 1]))
    y_reg = signal + 0.3 * rng.normal(size=n)
    y_bin = (signal + 0.5 * rng.normal(size=n) > 0).astype(int)
    w = rng.uniform(0.5, 2.0, size=n)
    return X, y_reg, y_bin, w


def test_squared_error_formula_equals_builtin(data):
    X, y, _, w = data
    params = dict(COMMON, subsample=0.8)
    builtin = TreeBoostRegressor(**params).fit(X, y, sample_weight=w)
    user = TreeBoostRegressor(loss=Formula("(y - f)**2/2"), **params).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(user.booster_.init_score, builtin.booster_.init_score,
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(user.predict(X), builtin.predict(X), rtol=0, atol=SAME_MODEL)


def test_log_loss_formula_on_pm1_labels_equals_builtin(data):
    X, _, y, w = data
    builtin = TreeBoostClassifier(**COMMON).fit(X, y, sample_weight=w)
    loss = Formula("log(1 + exp(-y*f))", labels=(-1, 1))
    user = TreeBoostClassifier(loss=loss, **COMMON).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(user.decision_function(X), builtin.decision_function(X),
                               rtol=0, atol=SAME_MODEL)
    np.testing.assert_allclose(user.predict_proba(X), builtin.predict_proba(X), rtol=0,
                               atol=SAME_MODEL)
    np.testing.assert_array_equal(user.predict(X), builtin.predict(X))


def test_log_cosh_trains_and_lowers_its_loss_every_stage(data):
    X, y, _, _ = data
    model = TreeBoostRegressor(loss=Formula("log(cosh(f - y))"), **COMMON).fit(X, y)
    losses = [np.mean(np.log(np.cosh(p - y))) for p in model.staged_predict(X)]
    f0_loss = np.mean(np.log(np.cosh(model.booster_.init_score[0] - y)))
    assert np.all(np.diff([f0_loss, *losses]) < 0), "log-cosh loss rose at some stage"
    assert losses[-1] < 0.5 * f0_loss  # and it actually learns the signal


@pytest.mark.parametrize(("expression", "grad", "hess"), [
    ("(y - f)**4", lambda y, f: 4 * (f - y) ** 3, lambda y, f: 12 * (f - y) ** 2),
    ("log(cosh(f - y))", lambda y, f: np.tanh(f - y), lambda y, f: 1 / np.cosh(f - y) ** 2),
    ("exp(f) - y*f", lambda y, f: np.exp(f) - y, lambda y, f: np.exp(f)),
])
def test_compiled_derivatives_match_hand_derivatives(expression, grad, hess):
    rng = np.random.default_rng(1)
    y, f = rng.uniform(0, 2, 50), rng.normal(size=50)
    w = rng.uniform(0.5, 2, 50)
    loss = get_loss(Formula(expression))
    g = np.empty((1, 50), dtype=np.float32)
    h = np.empty((1, 50), dtype=np.float32)
    loss.gradient_hessian(y, f[None, :], w, g, h)
    # float32 storage: relative error up to ~6e-8
    np.testing.assert_allclose(g[0], w * grad(y, f), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(h[0], w * hess(y, f), rtol=1e-6, atol=1e-6)


def test_numeric_f0_minimises_the_weighted_loss():
    rng = np.random.default_rng(2)
    y, w = rng.exponential(size=200), rng.uniform(0.5, 2, 200)
    loss = get_loss(Formula("(y - f)**4"))
    c = loss.init_score(y, w)[0]
    ref = minimize_scalar(lambda c: np.sum(w * (y - c) ** 4), bounds=(0, 5),
                          method="bounded", options={"xatol": 1e-12}).x
    assert c == pytest.approx(ref, abs=1e-8)  # Brent's own tolerance on the reference
    # the first-order condition holds to rounding after the Newton polish
    assert abs(np.sum(w * (c - y) ** 3)) < 1e-10 * np.sum(w * np.abs(c - y) ** 3)
    # outside the targets' range: log-loss on {-1, 1} with a 90 % positive rate
    y_pm = np.where(np.arange(100) < 90, 1.0, -1.0)
    c = get_loss(Formula("log(1 + exp(-y*f))")).init_score(y_pm, np.ones(100))[0]
    assert c == pytest.approx(np.log(0.9 / 0.1), abs=1e-12)


@pytest.mark.parametrize(("expression", "message"), [
    ("abs(f - y)", "not twice differentiable"),
    ("Max(f, y)**2", "not twice differentiable"),
    ("sign(f - y)*(f - y)**2", "not twice differentiable"),
    ("Piecewise((f**2, f > y), (2*f**2, True))", "not twice differentiable"),
    ("y*f", "hessian identically zero"),
    ("(x - f)**2", "only the symbols y and f"),
    ("(y - f)**", "does not parse"),
    ("huber(y, f)", "unknown functions"),
    ("y**2", "does not depend on f"),
])
def test_bad_formulas_raise_value_error_naming_the_formula(expression, message):
    with pytest.raises(ValueError, match=message) as info:
        Formula(expression)
    assert repr(expression) in str(info.value)


def test_abs_of_y_alone_is_allowed():
    # non-smooth in y only: the derivatives in f exist everywhere
    assert Formula("abs(y)*(y - f)**2").hessian_expression == "2*Abs(y)"


def test_compiled_once_per_formula_text():
    a = get_loss(Formula("log(cosh(f - y))"))
    b = get_loss(clone(TreeBoostRegressor(loss=Formula("log(cosh(f - y))"))).loss)
    assert a._derivatives_loop is b._derivatives_loop
    assert "log(cosh(f - y))" in formula_module._COMPILED


def test_callable_loss_equals_builtin(data):
    X, y, y_bin, w = data

    def squared(y, f):
        return f - y, np.ones_like(y)

    builtin = TreeBoostRegressor(**COMMON).fit(X, y, sample_weight=w)
    user = TreeBoostRegressor(loss=squared, **COMMON).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(user.predict(X), builtin.predict(X), rtol=0, atol=SAME_MODEL)

    def logistic(y, f):  # the classifier passes class indices 0/1 and log-odds f
        p = 1 / (1 + np.exp(-f))
        return p - y, p * (1 - p)

    builtin = TreeBoostClassifier(**COMMON).fit(X, y_bin)
    user = TreeBoostClassifier(loss=logistic, **COMMON).fit(X, y_bin)
    np.testing.assert_allclose(user.predict_proba(X), builtin.predict_proba(X), rtol=0,
                               atol=SAME_MODEL)


def test_callable_loss_errors(data):
    X, y, _, _ = data
    with pytest.raises(ValueError, match="pair"):
        TreeBoostRegressor(loss=lambda y, f: f - y, n_estimators=2).fit(X, y)
    with pytest.raises(ValueError, match="eval_metric"):  # no value to log
        TreeBoostRegressor(loss=lambda y, f: (f - y, 1 + 0 * y), n_estimators=2,
                           verbose=1).fit(X, y)
    model = TreeBoostRegressor(loss=lambda y, f: (f - y, 1 + 0 * y), n_estimators=2,
                               eval_metric="rmse", verbose=0, n_iter_no_change=1).fit(X, y)
    assert isinstance(model.booster_.loss, CallableLoss)


def test_user_loss_estimator_errors(data):
    X, y, _, _ = data
    with pytest.raises(TypeError, match="loss=3"):
        TreeBoostRegressor(loss=3).fit(X, y)
    with pytest.raises(ValueError, match="binary classification"):
        TreeBoostClassifier(loss=Formula("log(1 + exp(-y*f))"), n_estimators=2).fit(
            X, np.arange(X.shape[0]) % 3)
    with pytest.raises(ValueError, match="link='logit' is for the classifier"):
        TreeBoostRegressor(loss=Formula("(y - f)**2", link="logit")).fit(X, y)
    with pytest.raises(ValueError, match="not finite"):  # log of non-positive targets
        TreeBoostRegressor(loss=Formula("f - log(f*y)")).fit(X, y)


def test_log_link_formula_predicts_exp_of_raw(data):
    X, _, _, _ = data
    rng = np.random.default_rng(3)
    y = rng.poisson(np.exp(0.5 * np.nan_to_num(X[:, 0])))
    user = TreeBoostRegressor(loss=Formula("exp(f) - y*f", link="log"), **COMMON).fit(X, y)
    builtin = TreeBoostRegressor(loss="poisson", **COMMON).fit(X, y)
    np.testing.assert_allclose(user.predict(X), np.exp(user.booster_.predict_raw(X)[:, 0]))

    def poisson(p):
        return np.mean(p - y * np.log(p))

    losses = [poisson(p) for p in user.staged_predict(X)]
    assert np.all(np.diff(losses) < 0)
    # the formula's leaves halve Newton steps that overshoot the leaf minimum, the
    # built-in Poisson's do not: the two models differ, but fit equally well (1 %)
    assert losses[-1] == pytest.approx(poisson(builtin.predict(X)), rel=0.01)


def test_overshooting_newton_steps_are_halved():
    # one leaf, residuals far out where sech^2 vanishes: Newton's step is ~1e4 times too
    # long, the safeguarded step must not raise the leaf's loss
    loss = get_loss(Formula("log(cosh(f - y))"))
    y, raw, w = np.full(10, 8.0), np.zeros((1, 10)), np.ones(10)
    g = np.empty((1, 10), dtype=np.float32)
    h = np.empty((1, 10), dtype=np.float32)
    loss.gradient_hessian(y, raw, w, g, h)
    rows = np.arange(10, dtype=np.uint32)
    newton = -g.sum() / h.sum()
    step = loss.leaf_values(y, raw, w, rows, np.array([0]), np.array([10]),
                            np.array([g.sum()], dtype=np.float64),
                            np.array([h.sum()], dtype=np.float64), None, 0.0, 0.0)[0]
    assert newton > 1000
    assert 0 < step < 16
    assert np.log(np.cosh(step - 8.0)) < np.log(np.cosh(8.0))


def test_loss_instances_are_used_as_given(data):
    X, y, y_bin, _ = data
    builtin = TreeBoostRegressor(**COMMON).fit(X, y)
    instance = TreeBoostRegressor(loss=get_loss("squared_error"), **COMMON).fit(X, y)
    np.testing.assert_array_equal(instance.predict(X), builtin.predict(X))
    with pytest.raises(ValueError, match="does not suit a regressor"):
        TreeBoostRegressor(loss=get_loss("log_loss", n_classes=2)).fit(X, y)
    with pytest.raises(ValueError, match="3 classes need 3"):
        TreeBoostClassifier(loss=get_loss("log_loss", n_classes=2)).fit(
            X, np.arange(X.shape[0]) % 3)
