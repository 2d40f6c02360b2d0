"""The seam of boosting modes and sampling (``modes.BoostingMode``, ``sampling.RowSampler``,
``sampling.ColumnSampler``).

- The stage loop calls the hooks in the documented order; no module but modes.py names a
  mode.
- ``boosting="goss"`` is the gbdt mode with the GOSS sampler, tree for tree.
- A forest's end-of-training averaging makes it F0 plus the mean of its trees.
"""

import ast
import copy
import re
from pathlib import Path

import numpy as np
import pytest

import treeboost.booster
from treeboost import Dataset, TreeBoostClassifier, TreeBoostRegressor, train
from treeboost import modes as modes_module
from treeboost.callbacks import TrainingCallback
from treeboost.modes import (
    BoostingMode,
    Dart,
    RandomForest,
    boosting_mode,
    column_sampler,
    mode_named,
    row_sampler,
)
from treeboost.predictor import PackedTrees
from treeboost.sampling import (
    GossSampler,
    NoSampler,
    RowSampler,
    SubSampler,
    goss_start,
    sample_columns,
    stage_streams,
)
from treeboost.training import boosting_params

SMALL = {"max_leaf_nodes": 4, "min_samples_leaf": 3, "n_jobs": 1, "random_state": 0}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + 0.3 * rng.normal(size=200)
    return X, y


def _params(**values):
    return boosting_params(values)


def test_params_resolve_to_one_mode_and_one_sampler():
    assert type(boosting_mode(_params(boosting="gbdt"))) is BoostingMode
    assert type(boosting_mode(_params(boosting="goss"))) is BoostingMode  # gbdt + GOSS
    assert isinstance(boosting_mode(_params(boosting="dart")), Dart)
    assert isinstance(boosting_mode(_params(boosting="rf", subsample=0.5)), RandomForest)
    assert type(row_sampler(_params())) is NoSampler
    sub = row_sampler(_params(boosting="rf", subsample=0.5))
    assert isinstance(sub, SubSampler)
    assert sub.fraction == 0.5
    goss = row_sampler(_params(boosting="goss", top_rate=0.3, other_rate=0.2,
                               learning_rate=0.25))
    assert isinstance(goss, GossSampler)
    assert (goss.top_rate, goss.other_rate, goss.start) == (0.3, 0.2, goss_start(0.25))


def test_booster_names_no_mode():
    """Every mode-specific step is a hook: booster.py compares ``boosting`` to nothing."""
    source = Path(treeboost.booster.__file__).read_text()
    assert not re.search(r"boosting\s*[!=]=", source)
    names = {node.value for node in ast.walk(ast.parse(source))
             if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    assert not names & {"rf", "dart", "goss"}  # ("gbdt" is BoostingParams' default)


def test_no_module_but_modes_names_a_mode():
    """Serialization, continued training and validation ask the mode objects too."""
    src = Path(treeboost.booster.__file__).parent
    found = []
    for path in sorted(src.rglob("*.py")):
        if path.name == "modes.py" or (path.name == "sampling.py" and path.parent == src):
            continue  # sampling.py names its "goss" and "dart" random streams
        source = path.read_text()
        names = {node.value for node in ast.walk(ast.parse(source))
                 if isinstance(node, ast.Constant) and isinstance(node.value, str)}
        if re.search(r"boosting\s*[!=]=", source) or names & {"rf", "dart", "goss"}:
            found.append(path.name)
    assert not found


def test_mode_flags_and_families():
    assert mode_named("goss") is mode_named("gbdt")  # one family: continue either way
    assert [m.prefix_is_model for m in (BoostingMode(), RandomForest(), Dart())] == [
        True, True, False]
    assert [m.stage_weights_state for m in (BoostingMode(), RandomForest(), Dart())] == [
        False, False, True]


def test_column_sampler_draws_what_sample_columns_draws():
    p = _params(colsample_bytree=0.5, colsample_bynode=0.3)
    columns = column_sampler(p)
    assert (columns.bytree, columns.bynode) == (0.5, 0.3)
    expected = sample_columns(10, 0.5, stage_streams(3, 4)["columns"])
    np.testing.assert_array_equal(columns.tree_features(10, stage_streams(3, 4)), expected)
    node = columns.node_rng(stage_streams(3, 4))
    assert node.random() == stage_streams(3, 4)["nodes"].random()

    class NoStreams(dict):
        def __getitem__(self, name):
            raise AssertionError(f"stream {name} drawn with no column sampling")

    every = column_sampler(_params())
    np.testing.assert_array_equal(every.tree_features(4, NoStreams()), np.arange(4))
    assert every.node_rng(NoStreams()) is None


def _recording(base, log):
    """A subclass of mode class ``base`` that logs its hooks and defers to them."""

    class Recording(base):
        def resume(self, booster):
            log.append("resume")
            return super().resume(booster)

        def begin_stage(self, booster, state, rngs):
            log.append(("begin_stage", len(booster.trees)))
            return super().begin_stage(booster, state, rngs)

        def gradient_scores(self, state):
            log.append("gradient_scores")
            return super().gradient_scores(state)

        def shrinkage(self, params, n_dropped):
            log.append("shrinkage")
            return super().shrinkage(params, n_dropped)

        def end_stage(self, booster, state, dropped, dropped_scale):
            log.append(("end_stage", len(booster.trees)))
            return super().end_stage(booster, state, dropped, dropped_scale)

        def end_training(self, booster):
            log.append("end_training")
            return super().end_training(booster)

    return Recording()


class _LogSampler(RowSampler):
    def __init__(self, inner, log):
        self.inner, self.log = inner, log

    def sample(self, m, gradient, hessian, sample_weight, rngs):
        self.log.append(("sample", m))
        return self.inner.sample(m, gradient, hessian, sample_weight, rngs)


class _LogCallback(TrainingCallback):
    def __init__(self, log):
        self.log = log

    def after_iteration(self, iteration, evals_log):
        self.log.append(("after_iteration", iteration))
        return False

    def after_training(self, booster):
        self.log.append("after_training")


@pytest.mark.parametrize(("boosting", "base", "extra"), [
    ("gbdt", BoostingMode, {}), ("dart", Dart, {"skip_drop": 0.0, "drop_rate": 0.5}),
    ("rf", RandomForest, {"subsample": 0.5}), ("goss", BoostingMode, {"learning_rate": 0.5})])
def test_hooks_are_called_in_the_documented_order(data, monkeypatch, boosting, base, extra):
    X, y = data
    params = dict(boosting=boosting, n_estimators=3, **SMALL, **extra)
    expected = train(params, Dataset(X, label=y))
    log = []
    name = "gbdt" if boosting == "goss" else boosting
    monkeypatch.setitem(modes_module._MODES, name, _recording(base, log))
    monkeypatch.setattr(treeboost.booster, "row_sampler",
                        lambda p: _LogSampler(row_sampler(p), log))
    booster = train(params, Dataset(X, label=y), callbacks=[_LogCallback(log)])
    stages = [[("begin_stage", m), "gradient_scores", ("sample", m), "shrinkage",
               ("end_stage", m + 1), ("after_iteration", m)] for m in range(3)]
    assert log == ["resume", *sum(stages, []), "end_training", "after_training"]
    # the recording strategies defer to the real ones: the same model
    Xc = np.ascontiguousarray(X)
    np.testing.assert_array_equal(booster.predict_raw(Xc), expected.predict_raw(Xc))


@pytest.mark.parametrize("task", ["regression", "multiclass"])
def test_goss_through_the_sampling_strategy_equals_boosting_goss(monkeypatch, task):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 5))
    if task == "regression":
        y, loss = X[:, 0] - X[:, 1] ** 2 + 0.2 * rng.normal(size=300), {}
        cls = TreeBoostRegressor
    else:
        y = np.digitize(X[:, 0] + 0.5 * X[:, 2], [-0.5, 0.5])
        cls, loss = TreeBoostClassifier, {}
    common = dict(n_estimators=8, learning_rate=0.5, **SMALL, **loss)
    goss = cls(boosting="goss", top_rate=0.3, other_rate=0.2, **common).fit(X, y)
    with monkeypatch.context() as patch:
        patch.setattr(treeboost.booster, "row_sampler",
                      lambda p: GossSampler(0.3, 0.2, goss_start(p.learning_rate)))
        gbdt = cls(boosting="gbdt", **common).fit(X, y)
    plain = cls(boosting="gbdt", **common).fit(X, y)
    a, b = goss.booster_.trees, gbdt.booster_.trees
    assert len(a) == len(b) == 8
    for stage_a, stage_b in zip(a, b, strict=True):
        for ta, tb in zip(stage_a, stage_b, strict=True):
            np.testing.assert_array_equal(ta.value, tb.value)
            np.testing.assert_array_equal(ta.feature, tb.feature)
            np.testing.assert_array_equal(ta.bin_threshold, tb.bin_threshold)
    # and the sampler did sample: the stages from goss_start on differ from gbdt's
    assert not all(np.array_equal(ta.value, tp.value) for sa, sp in
                   zip(a, plain.booster_.trees, strict=True)
                   for ta, tp in zip(sa, sp, strict=True))


def test_forest_is_f0_plus_the_mean_of_its_trees(data, monkeypatch):
    X, y = data
    M = 6
    unscaled = []

    class Capture(RandomForest):
        def end_training(self, booster):
            unscaled.extend(copy.deepcopy(stage[0]) for stage in booster.trees)
            super().end_training(booster)

    monkeypatch.setitem(modes_module._MODES, "rf", Capture())
    model = TreeBoostRegressor(boosting="rf", subsample=0.6, n_estimators=M, **SMALL).fit(X, y)
    booster = model.booster_
    Xc = np.ascontiguousarray(X, dtype=np.float64)
    per_tree = np.stack([PackedTrees([t], [0], booster.bin_mapper)
                         .add_raw(Xc, np.zeros((X.shape[0], 1)))[:, 0] for t in unscaled])
    assert per_tree.shape == (M, X.shape[0])
    assert np.ptp(per_tree, axis=0).max() > 0  # the trees differ (row sampling)
    f0 = booster.init_score[0]
    np.testing.assert_allclose(booster.predict_raw(Xc)[:, 0], f0 + per_tree.mean(axis=0),
                               rtol=1e-12, atol=1e-12)
    for k in (1, 3, M):  # the first k stages: the mean of the first k trees
        np.testing.assert_allclose(booster.predict_raw(Xc, n_stages=k)[:, 0],
                                   f0 + per_tree[:k].mean(axis=0), rtol=1e-12, atol=1e-12)
    staged = list(booster.staged_predict_raw(Xc))
    for k in range(1, M + 1):
        np.testing.assert_allclose(staged[k - 1][:, 0], f0 + per_tree[:k].mean(axis=0),
                                   rtol=1e-12, atol=1e-12)
