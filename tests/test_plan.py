"""One execution plan per fit (issue 38): made from the shape and the threads in one place
(``_plan.make_plan``), recorded on the model, logged by ``verbose``, injectable through
``train(..., plan=)``; and whatever the plan, the same model bit for bit."""

from __future__ import annotations

import dataclasses

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from treeboost import Dataset, TreeBoostClassifier, train
from treeboost._plan import (
    ALWAYS_SERIAL,
    LEAN_TREE_UPDATES,
    PLAN_FIELDS,
    QUANTIZE_MIN_ROWS,
    SERIAL_HISTOGRAM_UPDATES,
    SERIAL_PARTITION_ROWS,
    ExecutionPlan,
    make_plan,
)
from treeboost._threads import resolve_n_jobs
from treeboost.booster import Booster

#: every parallel path from the smallest node: the partition, the histograms, the
#: children's searches side by side, no lean tree, a stage's trees side by side, the
#: softmax shift on every thread
EVERY_PATH_PARALLEL = {"serial_partition_rows": 0, "serial_histogram_updates": 0,
                       "lean_tree_updates": 0, "side_by_side_work": 0,
                       "parallel_shift_scores": 0}


def _data(task, n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 8))
    X[rng.random(X.shape) < 0.03] = np.nan
    score = np.nan_to_num(X[:, 0]) + np.sin(2 * np.nan_to_num(X[:, 1])) + 0.5 * rng.normal(
        size=n)
    if task == "regression":
        return X, score, {"loss": "squared_error"}
    if task == "binary":
        return X, (score > 0.3).astype(float), {"loss": "log_loss"}
    return X, np.digitize(score, [-0.5, 0.3, 1.0]).astype(float), {"loss": "log_loss"}


def _fit(task, n_jobs, plan=None, **params):
    X, y, loss = _data(task)
    return train(dict(loss, n_estimators=8, max_leaf_nodes=15, min_samples_leaf=5,
                      random_state=1, n_jobs=n_jobs, **params), Dataset(X, y), plan=plan)


def _model_text(booster, tmp_path) -> str:
    path = tmp_path / "model.json"
    booster.save_model(path)
    return path.read_text()


# ---- the plan of a shape and a thread count ----------------------------------------------
@settings(max_examples=200, deadline=None)
@given(n_rows=st.integers(1, 10**7), sparse=st.booleans(),
       loss=st.sampled_from(["log_loss", "squared_error", "poisson", None]),
       quantized=st.sampled_from(["auto", True, False]), n_threads=st.integers(1, 64))
def test_plan_is_made_from_the_shape_and_the_threads(n_rows, sparse, loss, quantized,
                                                     n_threads):
    plan = make_plan(n_rows, sparse=sparse, loss_name=loss, use_quantized_grad=quantized,
                     n_threads=n_threads)
    assert plan.n_threads == n_threads
    if n_threads == 1:  # one thread: never a parallel node kernel
        assert plan.serial_partition_rows == plan.serial_histogram_updates == ALWAYS_SERIAL
    else:
        assert plan.serial_partition_rows == SERIAL_PARTITION_ROWS
        assert plan.serial_histogram_updates == SERIAL_HISTOGRAM_UPDATES
    assert plan.lean_tree_updates == LEAN_TREE_UPDATES
    if quantized == "auto":
        assert plan.quantize == (loss == "log_loss" and not sparse
                                 and n_rows >= QUANTIZE_MIN_ROWS)
    else:
        assert plan.quantize is quantized
    # the same inputs, the same plan; the plan of one thread is its serial twin's
    assert plan == make_plan(n_rows, sparse=sparse, loss_name=loss,
                             use_quantized_grad=quantized, n_threads=n_threads)
    assert plan.serial() == dataclasses.replace(
        make_plan(n_rows, sparse=sparse, loss_name=loss, use_quantized_grad=quantized,
                  n_threads=1), **{k: getattr(plan, k) for k in (
                      "lean_tree_updates", "multi_root_bytes", "side_by_side_work",
                      "parallel_shift_scores", "quantize_min_rows", "quantize")})


def test_overrides_decide_the_rest():
    # one thread named: the thresholds left out are never reached
    plan = make_plan(5000, n_threads=4, overrides={"n_threads": 1})
    assert plan.serial_histogram_updates == ALWAYS_SERIAL
    plan = make_plan(5000, n_threads=1, overrides={"serial_histogram_updates": 7})
    assert (plan.serial_histogram_updates, plan.serial_partition_rows) == (7, ALWAYS_SERIAL)
    # quantize_min_rows decides "auto", unless quantize itself is given
    assert make_plan(600, loss_name="log_loss", overrides={"quantize_min_rows": 500}).quantize
    assert not make_plan(600, loss_name="log_loss",
                         overrides={"quantize_min_rows": 500, "quantize": False}).quantize
    given_plan = ExecutionPlan(n_threads=3)
    assert make_plan(10, n_threads=8, overrides=given_plan) is given_plan  # as it is
    with pytest.raises(ValueError, match="unknown field"):
        make_plan(10, overrides={"serial_rows": 0})
    with pytest.raises(TypeError, match="ExecutionPlan or a dict"):
        make_plan(10, overrides=[("n_threads", 2)])
    with pytest.raises(ValueError, match="n_threads=0 must be at least 1"):
        ExecutionPlan(n_threads=0)
    with pytest.raises(TypeError, match="must be an int"):
        ExecutionPlan(serial_partition_rows=1.5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        given_plan.n_threads = 2
    assert set(PLAN_FIELDS) >= {"n_threads", "lean_tree_updates", "quantize"}


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_the_model_records_the_plan_it_used(n_jobs, tmp_path):
    booster = _fit("binary", n_jobs)
    X, _, _ = _data("binary")
    assert booster.execution_plan == make_plan(
        X.shape[0], loss_name="log_loss", n_threads=resolve_n_jobs(n_jobs))
    # injected: the plan is the one given, or the one its fields make
    forced = _fit("binary", n_jobs, EVERY_PATH_PARALLEL)
    assert forced.execution_plan == make_plan(
        X.shape[0], loss_name="log_loss", n_threads=resolve_n_jobs(n_jobs),
        overrides=EVERY_PATH_PARALLEL)
    # not in the model file: a loaded model has none, and the files are the same
    assert "execution" not in _model_text(booster, tmp_path)
    assert _model_text(booster, tmp_path) == _model_text(forced, tmp_path)
    booster.save_model(tmp_path / "m.json")
    assert Booster.load_model(tmp_path / "m.json").execution_plan is None


def test_the_estimators_expose_the_plan():
    X, y, _ = _data("binary", n=500)
    model = TreeBoostClassifier(n_estimators=2, n_jobs=1).fit(X, y)
    assert model.execution_plan_ is model.booster_.execution_plan
    assert model.execution_plan_.n_threads == 1
    assert not hasattr(TreeBoostClassifier(), "execution_plan_")


def test_verbose_logs_the_plan_once(capsys):
    _fit("regression", 1, {"side_by_side_work": 5}, verbose=1)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("execution plan: n_threads=1, serial_partition_rows=never")
    assert "side_by_side_work=5" in lines[0]
    assert sum("execution plan" in line for line in lines) == 1
    _fit("regression", 1)  # silent without verbose
    assert capsys.readouterr().out == ""


def test_train_refuses_a_plan_of_another_kind():
    X, y, _ = _data("regression", n=200)
    with pytest.raises(TypeError, match="ExecutionPlan or a dict"):
        train({"n_estimators": 2}, Dataset(X, y), plan="parallel")
    with pytest.raises(ValueError, match="unknown field"):
        train({"n_estimators": 2}, Dataset(X, y), plan={"threads": 2})


# ---- the same model whatever the plan --------------------------------------------------
@pytest.mark.parametrize("task", ["regression", "binary", "multiclass"])
def test_serial_and_parallel_plans_grow_the_same_model(task, tmp_path):
    serial = ExecutionPlan(n_threads=2, serial_partition_rows=ALWAYS_SERIAL,
                           serial_histogram_updates=ALWAYS_SERIAL,
                           lean_tree_updates=ALWAYS_SERIAL, side_by_side_work=ALWAYS_SERIAL,
                           parallel_shift_scores=ALWAYS_SERIAL)
    texts = {_model_text(_fit(task, 2, plan), tmp_path)
             for plan in (serial, EVERY_PATH_PARALLEL, None, {"multi_root_bytes": 0,
                                                              **EVERY_PATH_PARALLEL})}
    assert len(texts) == 1


@pytest.mark.parametrize("task", ["regression", "binary", "multiclass", "quantised"])
def test_the_same_model_for_any_n_jobs(task, tmp_path):
    """n_jobs 1, 2, 3, 8 and 16, every path parallel from the smallest node (the
    plan's n_threads is n_jobs, so the kernels split their work in as many shares even
    where the machine has fewer cores): one model file, bit for bit."""
    extra = {}
    if task == "quantised":
        task, extra = "binary", {"use_quantized_grad": True, "subsample": 0.8}
    texts = set()
    for n_jobs in (1, 2, 3, 8, 16):
        plan = dict(EVERY_PATH_PARALLEL, n_threads=n_jobs)
        booster = _fit(task, n_jobs, plan, **extra)
        assert booster.execution_plan.n_threads == n_jobs
        texts.add(_model_text(booster, tmp_path))
    assert len(texts) == 1


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="one Numba thread")
def test_parallel_paths_are_taken_where_the_plan_says(monkeypatch):
    """The plan, not a module constant, chooses the path: a multiclass stage's trees go
    side by side from the plan's side_by_side_work."""
    import treeboost.booster as booster_module

    calls = []
    region = booster_module.grow_newton_trees

    def counted(*args):
        calls.append(args[1].shape[0])
        return region(*args)

    monkeypatch.setattr(booster_module, "grow_newton_trees", counted)
    _fit("multiclass", 2, {"side_by_side_work": ALWAYS_SERIAL})
    assert calls == []
    _fit("multiclass", 2, {"side_by_side_work": 0})
    assert calls == [4] * 8
