"""Estimator behaviour: validation (SPEC §8), early stopping, eval sets, logs, importances."""

import io
import re
from contextlib import redirect_stdout

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression

from treeboost import TreeBoostClassifier, TreeBoostRegressor
from treeboost.params import PARAMS, params_for


@pytest.fixture(scope="module")
def reg_data():
    X, y = make_regression(600, 6, noise=5.0, random_state=0)
    return X, y


@pytest.fixture(scope="module")
def clf_data():
    X, y = make_classification(600, 6, n_informative=4, random_state=0)
    return X, y


# ---- parameter table --------------------------------------------------------------
@pytest.mark.parametrize(("scope", "cls"), [("regressor", TreeBoostRegressor),
                                       ("classifier", TreeBoostClassifier)])
def test_table_matches_signature_and_docstring(scope, cls):
    table = params_for(scope)
    est = cls()
    assert set(est.get_params()) == set(table)
    for name, p in table.items():
        assert est.get_params()[name] == p.default, name
        assert re.search(rf"^{name} :", cls.__doc__, flags=re.M), name


@pytest.mark.parametrize(("name", "value", "exc", "match"), [
    ("max_bins", 300, ValueError, r"max_bins=300 must be an int in \[2, 255\]"),
    ("max_bins", 1.5, TypeError, "max_bins=1.5"),
    ("learning_rate", 0.0, ValueError, r"learning_rate=0.0 must be a float in \(0, inf\)"),
    ("subsample", 1.5, ValueError, "subsample=1.5"),
    ("n_estimators", True, TypeError, "n_estimators=True"),
    ("loss", "hinge", ValueError, "loss='hinge' must be one of"),
    ("max_leaf_nodes", 1, ValueError, "max_leaf_nodes=1"),
    ("n_jobs", 0, ValueError, "n_jobs=0"),
    ("min_child_weight", float("nan"), ValueError, "min_child_weight=nan"),
])
def test_invalid_parameters_name_the_parameter(reg_data, name, value, exc, match):
    X, y = reg_data
    with pytest.raises(exc, match=match):
        TreeBoostRegressor(**{name: value}).fit(X, y)


def test_every_table_entry_has_a_doc():
    assert all(p.doc.strip() for p in PARAMS)


# ---- bad input ------------------------------------------------------------------
def test_bad_targets_and_shapes(reg_data, clf_data):
    X, y = reg_data
    with pytest.raises(ValueError, match="NaN"):
        TreeBoostRegressor().fit(X, np.where(np.arange(y.size) == 3, np.nan, y))
    with pytest.raises(ValueError, match="infinity"):
        TreeBoostRegressor().fit(X, np.where(np.arange(y.size) == 3, np.inf, y))
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        TreeBoostRegressor().fit(X, y[:-1])
    with pytest.raises(ValueError, match="infinity"):
        TreeBoostRegressor().fit(np.where(X > 2, np.inf, X), y)
    Xc, yc = clf_data
    with pytest.raises(ValueError, match="missing class labels"):
        TreeBoostClassifier().fit(Xc, np.where(yc == 1, "a", None))
    with pytest.raises(ValueError, match="at least 2 classes"):
        TreeBoostClassifier().fit(Xc, np.zeros_like(yc))
    with pytest.raises(ValueError, match="(?i)negative"):
        TreeBoostClassifier().fit(Xc, yc, sample_weight=-np.ones(yc.size))
    with pytest.raises(ValueError, match="exponential.*binary"):
        TreeBoostClassifier(loss="exponential").fit(Xc, np.arange(yc.size) % 3)
    with pytest.raises(ValueError, match="strictly positive"):
        TreeBoostRegressor(loss="gamma").fit(X, y)


def test_predict_checks_features(clf_data):
    X, y = clf_data
    model = TreeBoostClassifier(n_estimators=5).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :-1])


# ---- missing values -------------------------------------------------------------------
def test_missing_values_learn_a_direction():
    # the signal is "is x0 missing": only the learned missing direction can fit it
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 3))
    missing = rng.random(1000) < 0.3
    X[missing, 0] = np.nan
    y = missing.astype(int)
    model = TreeBoostClassifier(n_estimators=20).fit(X, y)
    assert model.score(X, y) == 1.0
    # NaN at predict time in a feature that had none in training follows a child
    X2 = X.copy()
    X2[:, 1] = np.nan
    assert np.isfinite(model.predict_proba(X2)).all()


# ---- staged prediction, importances -----------------------------------------------
def test_staged_predictions_end_at_predict(clf_data):
    X, y = clf_data
    model = TreeBoostClassifier(n_estimators=15, random_state=0).fit(X, y)
    stages = list(model.staged_predict_proba(X))
    assert len(stages) == 15
    np.testing.assert_array_equal(stages[-1], model.predict_proba(X))
    np.testing.assert_array_equal(list(model.staged_predict(X))[-1], model.predict(X))


def test_feature_importances_find_the_signal():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(800, 5))
    y = 3 * X[:, 2] + 0.1 * rng.normal(size=800)
    gain = TreeBoostRegressor(n_estimators=20).fit(X, y).feature_importances_
    assert gain.argmax() == 2
    assert gain.sum() == pytest.approx(1.0)
    split = TreeBoostRegressor(n_estimators=20, importance_type="split").fit(X, y)
    counts = split.feature_importances_
    # every tree has max_leaf_nodes - 1 splits at most; counts are integers
    assert counts.sum() <= 20 * 30
    assert np.all(counts == np.round(counts))


# ---- eval sets, early stopping, log ------------------------------------------------
def test_eval_set_history_matches_staged_loss(reg_data):
    X, y = reg_data
    Xtr, Xva, ytr, yva = X[:400], X[400:], y[:400], y[400:]
    model = TreeBoostRegressor(n_estimators=30, eval_metric="rmse").fit(
        Xtr, ytr, eval_set=[(Xva, yva)])
    history = model.evals_result_["validation_0"]["rmse"]
    staged = [np.sqrt(np.mean((p - yva) ** 2)) for p in model.staged_predict(Xva)]
    # eval sets are scored on binned data, predictions on raw values: the same
    # partition, so only summation order differs (float64 rounding)
    np.testing.assert_allclose(history, staged, rtol=1e-10)


def test_early_stopping_keeps_best_iteration(clf_data):
    X, y = clf_data
    model = TreeBoostClassifier(n_estimators=500, learning_rate=0.5, n_iter_no_change=5,
                                random_state=0).fit(X, y)
    history = model.evals_result_["validation"]["log_loss"]
    best = int(np.argmin(history))
    assert model.best_iteration_ == best
    assert model.n_iter_ == best + 1 < 500
    assert len(history) == best + 1 + 5  # stopped exactly n_iter_no_change stages later


def test_early_stopping_on_training_loss(reg_data):
    X, y = reg_data
    model = TreeBoostRegressor(n_estimators=50, n_iter_no_change=3,
                               validation_fraction=None).fit(X, y)
    history = model.evals_result_["training"]["squared_error"]
    assert list(model.evals_result_) == ["training"]
    assert np.all(np.diff(history) <= 1e-12)  # squared error on training data never rises


def test_verbose_prints_each_stage(clf_data):
    X, y = clf_data
    buf = io.StringIO()
    with redirect_stdout(buf):
        TreeBoostClassifier(n_estimators=4, verbose=1).fit(X, y, eval_set=[(X, y)])
    plan, *lines = buf.getvalue().strip().splitlines()
    assert plan.startswith("execution plan: ")  # the fit's plan, logged first
    assert len(lines) == 4
    assert lines[0].startswith("[1/4]")
    assert "training log_loss" in lines[0]
    assert "validation_0 log_loss" in lines[0]


# ---- weights --------------------------------------------------------------------------
def test_integer_weights_equal_repeated_rows():
    # with min_samples_leaf=1 and <= 255 distinct values, binning and splits
    # see exactly the same data either way
    rng = np.random.default_rng(2)
    X = rng.integers(0, 20, size=(200, 3)).astype(float)
    y = X[:, 0] + rng.normal(size=200)
    w = rng.integers(1, 4, size=200)
    params = dict(n_estimators=10, min_samples_leaf=1, random_state=0)
    a = TreeBoostRegressor(**params).fit(X, y, sample_weight=w)
    b = TreeBoostRegressor(**params).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-6, atol=1e-8)
