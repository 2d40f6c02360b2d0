"""The loss interface of issue 37 part 1: ``TrainingData``, ``prepare``, ``gradients``,
``line_search`` with the output index, ``task``, and tree finishing written once."""

from __future__ import annotations

import numpy as np
import pytest

from treeboost import train
from treeboost._kernels.booster import finish_values
from treeboost.dataset import Dataset
from treeboost.losses import Cox, Loss, SquaredError, TrainingData, get_loss
from treeboost.metrics import loss_task
from treeboost.sampling import stage_streams


def _data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.1 * rng.normal(size=n)
    return X, y


def test_training_data_is_one_read_only_view():
    y, w = np.arange(4.0), np.ones(4)
    data = TrainingData(y, w, extra={"y_upper": y + 1})
    assert data.n_samples == 4
    assert data.rng is None
    assert data.group_offsets is None
    with pytest.raises(TypeError):
        data.extra["other"] = y  # a read-only mapping
    staged = data.at_stage(stage_streams(7, 3))
    assert staged.y is y
    assert staged.extra["y_upper"] is data.extra["y_upper"]
    draws = staged.rng.random(3)
    assert np.array_equal(draws, stage_streams(7, 3)["objective"].random(3))
    assert staged.with_weight(w) is staged
    assert TrainingData(np.zeros((4, 3)), w).y.shape == (4, 3)  # labels of any width


@pytest.mark.parametrize(("name", "kwargs", "task"), [
    ("squared_error", {}, "regression"), ("log_loss", {"n_classes": 2}, "binary"),
    ("log_loss", {"n_classes": 3}, "multiclass"), ("lambdarank", {}, "ranking"),
    ("cox", {}, "survival")])
def test_every_loss_declares_its_task(name, kwargs, task):
    loss = get_loss(name, **kwargs)
    assert loss.task == task == loss_task(loss)


class _Recorder(SquaredError):
    """Squared error on the TrainingData interface, recording what the engine passes."""

    name = "recorder"
    leaf_line_search = "exact"
    n_outputs = 2

    def __init__(self):
        self.prepared, self.outputs, self.stages = 0, set(), 0

    def prepare(self, data):
        self.prepared += 1
        self.offset = np.array([0.0, 1.0])

    def init_raw(self, data):
        return self.offset + np.average(data.y, weights=data.weight)

    def gradients(self, data, raw, gradient, hessian, context=None):
        self.stages += 1
        assert data.rng is not None
        assert data.n_outputs == 2
        for k in range(2):
            gradient[k][:] = data.weight * (raw[k] - data.y - self.offset[k])
            hessian[k][:] = data.weight
        return "stage"

    def line_search(self, data, output, raw, sample_indices, leaf_starts, leaf_stops,
                    sum_g, sum_h, context, reg_lambda, reg_alpha):
        assert context == "stage"
        assert raw.shape == (1, data.n_samples)
        self.outputs.add(output)
        target = data.y + self.offset[output]
        return np.array([np.average(target[sample_indices[a:b]] - raw[0][sample_indices[a:b]],
                                    weights=data.weight[sample_indices[a:b]])
                         for a, b in zip(leaf_starts, leaf_stops, strict=True)])


def test_engine_calls_the_training_data_interface():
    X, y = _data()
    loss = _Recorder()
    booster = train({"loss": loss, "n_estimators": 5, "random_state": 0},
                    Dataset(X, label=y))
    assert loss.prepared == 1
    assert loss.stages == 5
    assert loss.outputs == {0, 1}
    raw = booster.predict_raw(X)
    # output 1 fits y + 1: its scores are output 0's plus about 1
    assert raw.shape == (X.shape[0], 2)
    assert np.allclose(raw[:, 1] - raw[:, 0], 1.0, atol=0.05)


def test_cox_sorts_its_times_once_in_prepare():
    rng = np.random.default_rng(1)
    y = rng.exponential(size=50) * np.where(rng.random(50) < 0.7, 1.0, -1.0)
    w, raw = np.ones(50), rng.normal(size=(1, 50))
    loss = Cox()
    data = TrainingData(y, w)
    loss.prepare(data)
    assert loss._prepared[0] is y
    g1, h1 = np.empty((1, 50), np.float32), np.empty((1, 50), np.float32)
    g2, h2 = np.empty((1, 50), np.float32), np.empty((1, 50), np.float32)
    loss.gradients(data, raw, g1, h1)
    Cox().gradient_hessian(y, raw, w, g2, h2)
    assert np.array_equal(g1, g2)
    assert np.array_equal(h1, h2)


def test_finish_values_clips_to_the_bounds_then_the_cap():
    """np.clip's order and NaN, with a scalar clip's signed zeros (the fused kernel's)."""
    value = np.array([-0.0, 0.0, np.nan, np.inf, -5.0, 0.3, 2.0])
    lower = np.array([0.0, -0.0, -1.0, -1.0, -1.0, 0.5, -1.0])
    upper = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.5])
    expected = np.array([min(max(min(max(v, lo), hi), -1.2), 1.2)
                         for v, lo, hi in zip(value, lower, upper, strict=True)])
    assert np.array_equal(expected, np.clip(np.clip(value, lower, upper), -1.2, 1.2),
                          equal_nan=True)
    out = value.copy()
    finish_values(out, lower, upper, 1.2)
    assert np.array_equal(out, expected, equal_nan=True)
    assert np.array_equal(np.signbit(out), np.signbit(expected))
    out = value.copy()
    finish_values(out, np.empty(0), np.empty(0), np.inf)  # no bounds, no cap
    assert np.array_equal(out, value, equal_nan=True)
    assert np.array_equal(np.signbit(out), np.signbit(value))


def test_a_loss_on_the_earlier_interface_still_trains():
    class Legacy(Loss):
        name = "legacy"

        def pointwise(self, y, raw):
            return 0.5 * (y - raw[0]) ** 2

        def init_score(self, y, sample_weight):
            return np.array([np.average(y, weights=sample_weight)])

        def gradient_hessian(self, y, raw, sample_weight, gradient, hessian):
            gradient[0][:] = sample_weight * (raw[0] - y)
            hessian[0][:] = sample_weight

    X, y = _data()
    params = {"n_estimators": 5, "random_state": 0}
    ours = train({**params, "loss": Legacy()}, Dataset(X, label=y)).predict_raw(X)
    builtin = train({**params, "loss": "squared_error"}, Dataset(X, label=y)).predict_raw(X)
    assert np.array_equal(ours, builtin)


class _Prepared(SquaredError):
    """Squared error whose gradients read what ``prepare`` set and the stage's draws."""

    name = "prepared"

    def prepare(self, data):
        self.centre = float(np.mean(data.y))

    def gradients(self, data, raw, gradient, hessian, context=None):
        data.rng.random(1)
        gradient[0][:] = data.weight * (raw[0] - (data.y - self.centre) - self.centre)
        hessian[0][:] = data.weight


def test_init_score_check_prepares_a_training_data_loss():
    X, y = _data()
    start = np.full(y.size, 0.5)
    ours = train({"loss": _Prepared(), "n_estimators": 3, "random_state": 0},
                 Dataset(X, label=y, init_score=start)).predict_raw(X)
    builtin = train({"loss": "squared_error", "n_estimators": 3, "random_state": 0},
                    Dataset(X, label=y, init_score=start)).predict_raw(X)
    np.testing.assert_allclose(ours, builtin, rtol=0, atol=1e-12)
