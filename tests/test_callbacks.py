"""Training callbacks and user metrics (``treeboost.callbacks``, ``treeboost.metrics``).

Acceptance of the callbacks/metrics part of the engine-core issue: a callback that
stops at stage 17 gives a 17-stage model; a callable metric drives early stopping,
declares its direction, and equals the built-in it reimplements; bad inputs give one
error naming ``callbacks`` or ``eval_metric``. Checks are properties (the stop stage
against the logged curve, the model against one trained with ``n_estimators`` = the
stop stage), not stored outputs.
"""

import io
import itertools
from contextlib import redirect_stdout

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification, make_regression
from sklearn.metrics import roc_auc_score

from treeboost import TreeBoostClassifier, TreeBoostRegressor, load_model
from treeboost.callbacks import TrainingCallback
from treeboost.metrics import Metric, make_metric

SMALL = dict(max_leaf_nodes=8, min_samples_leaf=5, random_state=0)


def _data(task, n=300, seed=0):
    if task == "regression":
        return make_regression(n, 5, noise=10.0, random_state=seed)
    classes = 2 if task == "binary" else 3
    return make_classification(n, 6, n_informative=4, n_classes=classes, random_state=seed)


def _estimator(task, **params):
    cls = TreeBoostRegressor if task == "regression" else TreeBoostClassifier
    return cls(**{**SMALL, **params})


class StopAt(TrainingCallback):
    """Stop after stage ``n_stages`` (1-based); record every hook call."""

    def __init__(self, n_stages):
        self.n_stages = n_stages
        self.calls = []

    def before_training(self, booster):
        self.calls.append(("before", booster, len(booster.trees)))

    def after_iteration(self, iteration, evals_log):
        self.calls.append(("iteration", iteration))
        return iteration + 1 >= self.n_stages

    def after_training(self, booster):
        self.calls.append(("after", booster, len(booster.trees)))


def _curve_metric(curve, higher_is_better, name="curve"):
    """A metric that returns curve[0], curve[1], ... at its successive calls."""
    values = itertools.chain(curve, itertools.repeat(curve[-1]))
    return make_metric(lambda y_true, y_pred, sample_weight: next(values), name=name,
                       higher_is_better=higher_is_better)


# ---- callbacks ---------------------------------------------------------------------------
@pytest.mark.parametrize("task", ["regression", "binary", "multiclass"])
@pytest.mark.parametrize("params", [{}, dict(subsample=0.7, colsample_bytree=0.8)])
def test_a_stop_at_stage_17_keeps_17_stages(task, params):
    X, y = _data(task)
    stopper = StopAt(17)
    model = _estimator(task, n_estimators=60, **params).fit(X, y, eval_set=[(X, y)],
                                                           callbacks=[stopper])
    assert model.n_iter_ == len(model.booster_.trees) == 17
    assert model.best_iteration_ is None  # no early stopping: no rewinding
    assert all(len(v) == 17 for v in model.evals_result_["validation_0"].values())
    staged = list(model.staged_predict(X))
    assert len(staged) == 17
    np.testing.assert_array_equal(model.predict(X), staged[-1])
    # stage m draws the same random numbers however many stages follow: the stopped
    # model is, bit for bit, the model of n_estimators=17
    fixed = _estimator(task, n_estimators=17, **params).fit(X, y)
    method = "predict" if task == "regression" else "predict_proba"
    np.testing.assert_array_equal(getattr(model, method)(X), getattr(fixed, method)(X))


def test_hooks_are_called_once_each_in_order():
    X, y = _data("regression")
    cb = StopAt(100)
    model = _estimator("regression", n_estimators=12).fit(X, y, callbacks=[cb])
    assert [c[0] for c in cb.calls] == ["before"] + ["iteration"] * 12 + ["after"]
    assert [c[1] for c in cb.calls[1:-1]] == list(range(12))
    assert cb.calls[0][1] is cb.calls[-1][1] is model.booster_
    assert (cb.calls[0][2], cb.calls[-1][2]) == (0, 12)


def test_every_callback_runs_even_after_one_asks_to_stop():
    X, y = _data("regression")
    first, second = StopAt(5), StopAt(100)
    model = _estimator("regression", n_estimators=30).fit(X, y, callbacks=[first, second])
    assert model.n_iter_ == 5
    assert [c for c in second.calls if c[0] == "iteration"] == [("iteration", i)
                                                                for i in range(5)]
    assert second.calls[-1][0] == "after"


def test_user_stop_under_early_stopping_keeps_the_best_stage():
    # documented order: early stopping runs before user callbacks, and its
    # after_training rewinds to the best stage whatever stopped training
    X, y = _data("regression")
    cb = StopAt(17)
    model = _estimator("regression", n_estimators=200, learning_rate=0.5,
                       n_iter_no_change=50).fit(X, y, callbacks=[cb])
    history = model.evals_result_["validation"]["squared_error"]
    assert len(history) == 17
    best = int(np.argmin(history))
    assert model.best_iteration_ == best
    assert model.n_iter_ == best + 1
    assert cb.calls[-1][2] == best + 1  # the user's after_training sees the kept model


def test_iteration_counts_from_the_first_stage_when_training_continues():
    X, y = _data("regression")
    model = _estimator("regression", n_estimators=10, warm_start=True).fit(X, y)
    cb = StopAt(1000)
    model.set_params(n_estimators=15).fit(X, y, callbacks=[cb])
    assert [c[1] for c in cb.calls if c[0] == "iteration"] == list(range(10, 15))
    assert cb.calls[0][2] == 10
    assert cb.calls[-1][2] == 15


def test_logger_prints_every_metric():
    X, y = _data("regression")
    out = io.StringIO()
    with redirect_stdout(out):
        _estimator("regression", n_estimators=3, verbose=1,
                   eval_metric=["rmse", make_metric(_rmse, higher_is_better=False)]).fit(
            X, y, eval_set=[(X, y)])
    plan, *lines = out.getvalue().splitlines()
    assert plan.startswith("execution plan: ")  # the fit's plan, logged first
    assert len(lines) == 3
    assert all("validation_0 rmse:" in line and "validation_0 _rmse:" in line
               for line in lines)


# ---- user metrics: what they receive -----------------------------------------------------
def _rmse(y_true, y_pred, sample_weight):
    return np.sqrt(np.average((y_pred - y_true) ** 2, weights=sample_weight))


@pytest.mark.parametrize("task", ["regression", "binary", "multiclass"])
def test_a_metric_sees_targets_and_predictions_on_the_response_scale(task):
    X, y = _data(task)
    seen = {}

    def spy(y_true, y_pred, sample_weight):
        seen.update(y_true=y_true, y_pred=y_pred, sample_weight=sample_weight)
        return 0.0

    labels = y if task == "regression" else np.array(["a", "b", "c"])[y]  # not 0..K-1
    model = _estimator(task, n_estimators=5, eval_metric=make_metric(
        spy, higher_is_better=False)).fit(X, labels, eval_set=[(X, labels)])
    assert not seen["y_pred"].flags.writeable
    assert not seen["y_true"].flags.writeable
    np.testing.assert_array_equal(seen["sample_weight"], np.ones(len(y)))
    if task == "regression":
        expected = model.predict(X)
        np.testing.assert_array_equal(seen["y_true"], y)
    else:  # class indices into classes_, and probabilities (positive class if binary)
        proba = model.predict_proba(X)
        expected = proba[:, 1] if task == "binary" else proba
        assert seen["y_true"].dtype == np.int64
        np.testing.assert_array_equal(seen["y_true"], y)
    assert seen["y_pred"].shape == expected.shape
    # eval sets are scored on binned data, predict on raw values: the same partition,
    # summed in another order (float64 round-off)
    np.testing.assert_allclose(seen["y_pred"], expected, rtol=1e-12, atol=1e-15)


# ---- user metrics equal the built-ins they reimplement ----------------------------------
def _log_loss(y_true, y_pred, sample_weight):
    p = y_pred if y_pred.ndim == 2 else np.column_stack([1.0 - y_pred, y_pred])
    return -np.average(np.log(p[np.arange(y_true.size), y_true]), weights=sample_weight)


#: (task, built-in eval_metric, user reimplementation, the built-in's name in the log)
TWINS = [
    ("regression", "rmse", make_metric(_rmse, name="user", higher_is_better=False), "rmse"),
    ("binary", None, make_metric(_log_loss, name="user", higher_is_better=False),
     "log_loss"),
    ("binary", "auc", make_metric(roc_auc_score, name="user", higher_is_better=True),
     "auc"),
    ("multiclass", None, make_metric(_log_loss, name="user", higher_is_better=False),
     "log_loss"),
]


@pytest.mark.parametrize(("task", "builtin", "user", "name"), TWINS)
@pytest.mark.parametrize("weighted", [False, True])
def test_a_user_metric_equals_the_builtin_it_reimplements(task, builtin, user, name,
                                                          weighted):
    X, y = _data(task, n=400)
    Xt, yt, Xv, yv = X[:300], y[:300], X[300:], y[300:]
    weight = [np.random.default_rng(1).uniform(0.5, 2.0, yv.size)] if weighted else None
    params = dict(n_estimators=300, learning_rate=0.3, n_iter_no_change=4)
    fits = [_estimator(task, eval_metric=metric, **params).fit(
        Xt, yt, eval_set=[(Xv, yv)], eval_sample_weight=weight) for metric in (builtin, user)]
    a, b = (f.evals_result_["validation_0"] for f in fits)
    assert list(a) == [name]
    assert list(b) == ["user"]
    # The built-ins compute from raw scores (log-loss as logaddexp or log-softmax, AUC
    # on log-odds), the twins from probabilities (log of a sigmoid or softmax), and
    # sum in other orders: each row's value differs by a few float64 ulps, so the
    # means agree to 1e-12 relative. AUC only ranks, and the sigmoid is monotone: equal.
    np.testing.assert_allclose(b["user"], a[name], rtol=1e-12)
    # same curve, same direction: early stopping stops at the same stage (a 1e-12
    # difference could only matter at an improvement within 1e-12 of tol)
    assert fits[0].best_iteration_ == fits[1].best_iteration_
    assert fits[0].n_iter_ == fits[1].n_iter_ < 300
    np.testing.assert_array_equal(fits[0].predict(Xv), fits[1].predict(Xv))


# ---- early stopping follows the declared direction ---------------------------------------
def _check_stop(model, history, patience, higher_is_better, n_estimators):
    """The stop is the first stage ``patience`` stages past the running best (tol=0)."""
    sign = 1.0 if higher_is_better else -1.0
    scores = sign * np.asarray(history)
    best = int(np.argmax(scores))  # first occurrence: ties are no improvement
    assert model.best_iteration_ == best
    assert model.n_iter_ == best + 1
    running = [int(np.argmax(scores[:i + 1])) for i in range(len(scores))]
    # no earlier stage was patience stages past its running best ...
    assert all(i - r < patience for i, r in enumerate(running[:-1]))
    # ... and the last one was, unless n_estimators ended training
    assert len(scores) == n_estimators or len(scores) - 1 - running[-1] == patience


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("higher_is_better", [True, False])
def test_early_stopping_follows_the_declared_direction(seed, higher_is_better):
    rng = np.random.default_rng(seed)
    curve = np.cumsum(rng.normal(size=40))  # a random walk: many local best stages
    patience = int(rng.integers(1, 6))
    X, y = _data("regression", n=200)
    model = _estimator("regression", n_estimators=40, n_iter_no_change=patience, tol=0.0,
                       eval_metric=_curve_metric(curve, higher_is_better)).fit(X, y)
    history = model.evals_result_["validation"]["curve"]
    np.testing.assert_array_equal(history, curve[:len(history)])
    _check_stop(model, history, patience, higher_is_better, 40)


def test_a_hump_is_a_best_stage_upwards_and_a_worst_one_downwards():
    hump = -((np.arange(30) - 10.0) ** 2)  # peak at stage 10 (0-based)
    X, y = _data("regression", n=200)
    up, down = (_estimator("regression", n_estimators=30, n_iter_no_change=3, tol=0.0,
                           eval_metric=_curve_metric(hump, hib)).fit(X, y)
                for hib in (True, False))
    assert (up.best_iteration_, up.n_iter_) == (10, 11)
    assert (down.best_iteration_, down.n_iter_) == (0, 1)  # falls, then keeps falling
    assert len(down.evals_result_["validation"]["curve"]) == 1 + 3


def test_early_stopping_monitors_the_first_metric_and_logs_all():
    hump = -((np.arange(40) - 8.0) ** 2)
    X, y = _data("regression", n=200)
    params = dict(n_estimators=40, n_iter_no_change=3, learning_rate=0.5)
    first = _estimator("regression", eval_metric=[_curve_metric(hump, True), "rmse"],
                       **params).fit(X, y)
    log = first.evals_result_["validation"]
    assert list(log) == ["curve", "rmse"]
    assert len(log["curve"]) == len(log["rmse"])
    assert first.best_iteration_ == 8
    second = _estimator("regression", eval_metric=["rmse", _curve_metric(hump, True)],
                        **params).fit(X, y)
    alone = _estimator("regression", eval_metric="rmse", **params).fit(X, y)
    assert (second.best_iteration_, second.n_iter_) == (alone.best_iteration_, alone.n_iter_)
    assert second.evals_result_["validation"]["rmse"] == alone.evals_result_["validation"][
        "rmse"]
    assert list(second.evals_result_["validation"]) == ["rmse", "curve"]


# ---- parameters: copies, saving ------------------------------------------------------------
def test_estimators_with_user_metrics_clone():
    metric = make_metric(_rmse, higher_is_better=False)
    model = TreeBoostRegressor(eval_metric=[metric, "mae"])
    assert clone(model).get_params()["eval_metric"][0] == metric


def test_a_list_of_builtin_names_saves_and_loads(tmp_path):
    X, y = _data("regression")
    model = _estimator("regression", n_estimators=5, eval_metric=["mae", "rmse"]).fit(
        X, y, eval_set=[(X, y)])
    model.save_model(tmp_path / "m.json")
    loaded = load_model(tmp_path / "m.json")
    assert loaded.get_params()["eval_metric"] == ["mae", "rmse"]
    assert loaded.evals_result_ == model.evals_result_


# ---- bad input: one error naming callbacks or eval_metric ---------------------------------
@pytest.mark.parametrize(("callbacks", "match"), [
    ([print], r"callbacks\[0\]=<built-in function print> is not a TrainingCallback"),
    ([StopAt(3), object()], r"callbacks\[1\]=.* lacks before_training, after_iteration"),
    (StopAt(3), r"callbacks=.* must be a list of TrainingCallback"),
])
def test_a_bad_callback_is_refused_before_training(callbacks, match):
    X, y = _data("regression", n=100)
    model = _estimator("regression", n_estimators=3)
    with pytest.raises(TypeError, match=match):
        model.fit(X, y, callbacks=callbacks)
    assert not hasattr(model, "_booster")  # refused before training


def test_a_callback_must_answer_true_or_false():
    class Chatty(TrainingCallback):
        def after_iteration(self, iteration, evals_log):
            return "stop"

    X, y = _data("regression", n=100)
    with pytest.raises(TypeError, match=r"callbacks: Chatty.after_iteration .* returned "
                                        r"'stop'; it must return True"):
        _estimator("regression", n_estimators=3).fit(X, y, callbacks=[Chatty()])


def _nan(y_true, y_pred, sample_weight):
    return float("nan")


@pytest.mark.parametrize(("eval_metric", "error", "match"), [
    (_rmse, TypeError, r"eval_metric=<function _rmse .*> is a callable without a declared "
                       r"direction: wrap it as treeboost.metrics.make_metric"),
    ([], ValueError, r"eval_metric=\[\] must name at least one metric"),
    (["rmse", "bogus"], ValueError, r"eval_metric\[1\]='bogus' is not one of"),
    (["rmse", None], TypeError, r"eval_metric\[1\]=None must be a metric name"),
    (3, TypeError, r"eval_metric=3 must be a metric name"),
    (["rmse", "rmse"], ValueError, r"eval_metric names metric 'rmse' twice"),
    # "loss" is the regressor's squared_error: a user metric of that name collides
    (["loss", make_metric(_rmse, name="squared_error", higher_is_better=False)], ValueError,
     r"eval_metric names metric 'squared_error' twice"),
    (["rmse", "auc"], ValueError, r"eval_metric='auc' is not defined for regression"),
])
def test_a_bad_eval_metric_is_refused_naming_it(eval_metric, error, match):
    X, y = _data("regression", n=100)
    with pytest.raises(error, match=match):
        _estimator("regression", n_estimators=3, eval_metric=eval_metric).fit(X, y)


@pytest.mark.parametrize(("returned", "error", "match"), [
    (float("nan"), ValueError, r"eval_metric 'odd' returned nan on validation_0 at stage 1; "
                               r"a metric must return a finite float"),
    (np.inf, ValueError, r"eval_metric 'odd' returned inf on validation_0 at stage 1"),
    (np.array([1.0, 2.0]), TypeError, r"eval_metric 'odd' returned array.* must return "
                                      r"one float"),
    (None, TypeError, r"eval_metric 'odd' returned None"),
])
def test_a_metric_returning_no_finite_float_is_an_error_naming_it(returned, error, match):
    X, y = _data("regression", n=100)
    metric = make_metric(lambda y_true, y_pred, sample_weight: returned, name="odd",
                         higher_is_better=False)
    with pytest.raises(error, match=match):
        _estimator("regression", n_estimators=3, eval_metric=metric).fit(
            X, y, eval_set=[(X, y)])


def test_make_metric_requires_a_direction_and_a_name():
    with pytest.raises(TypeError, match="higher_is_better"):
        make_metric(_rmse)  # keyword-only and required
    with pytest.raises(TypeError, match=r"higher_is_better=None must be True or False"):
        make_metric(_rmse, higher_is_better=None)
    with pytest.raises(TypeError, match=r"higher_is_better='yes' must be True or False"):
        make_metric(_rmse, higher_is_better="yes")
    with pytest.raises(ValueError, match="pass name="):
        make_metric(lambda a, b, sample_weight: 0.0, higher_is_better=False)
    with pytest.raises(TypeError, match="fn=3 must be a callable"):
        make_metric(3, name="x", higher_is_better=False)
    metric = make_metric(_rmse, higher_is_better=np.True_)
    assert metric == Metric("_rmse", _rmse, True)
    with pytest.raises(TypeError, match=r"Metric: higher_is_better=None must be True"):
        Metric("x", _rmse, None)  # the class checks its fields too
