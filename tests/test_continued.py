"""Continued training (SPEC §4): init_model and warm_start give the uninterrupted model.

Stage m draws its rows and columns from its own stream (``stage_streams(seed, m)``)
and the raw scores are recomputed from the kept trees in the order training added
them, so 100 stages, saved and continued with 100 more, are the 200-stage model bit
for bit, with row and column sampling on.
"""

import hashlib
import json

import numpy as np
import pytest

from treeboost import TreeBoostClassifier, TreeBoostRegressor, load_model
from treeboost.serialization import _canonical

N_ROWS = 300
STOCHASTIC = {"subsample": 0.7, "colsample_bytree": 0.8, "colsample_bynode": 0.8,
              "max_leaf_nodes": 6, "min_samples_leaf": 5, "random_state": 7, "n_jobs": 1}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N_ROWS, 5))
    X[rng.random(X.shape) < 0.05] = np.nan  # the missing-value bin must survive the reload
    X[:, 4] = rng.integers(0, 6, N_ROWS)  # a categorical feature: its bins too
    Z = np.nan_to_num(X)
    score = Z[:, 0] - Z[:, 1] + (X[:, 4] % 3 == 1) + 0.3 * rng.normal(size=N_ROWS)
    return X, {"regression": score, "binary": score > 0.2,
               "multiclass": np.digitize(score, [-0.5, 0.7])}


def _estimator(task, **params):
    cls = TreeBoostRegressor if task == "regression" else TreeBoostClassifier
    return cls(categorical_features=[4], **{**STOCHASTIC, **params})


def _assert_same_model(a, b, exact=True):
    ba, bb = a.booster_, b.booster_
    assert len(ba.trees) == len(bb.trees)
    np.testing.assert_array_equal(ba.init_score, bb.init_score)
    np.testing.assert_array_equal(ba.bin_mapper.bin_edges_, bb.bin_mapper.bin_edges_)
    for m, (sa, sb) in enumerate(zip(ba.trees, bb.trees, strict=True)):
        for ta, tb in zip(sa, sb, strict=True):
            for name in ("feature", "bin_threshold", "left", "right", "count"):
                np.testing.assert_array_equal(getattr(ta, name), getattr(tb, name),
                                              err_msg=f"stage {m} {name}")
            if exact:
                np.testing.assert_array_equal(ta.value, tb.value, err_msg=f"stage {m}")
            else:  # rescaled trees (rf, DART) are equal to rounding
                np.testing.assert_allclose(ta.value, tb.value, rtol=1e-12, atol=1e-15,
                                           err_msg=f"stage {m}")


@pytest.mark.parametrize("task", ["regression", "binary", "multiclass"])
def test_save_and_continue_equals_one_fit(data, tmp_path, task):
    X, targets = data
    y = targets[task]
    once = _estimator(task, n_estimators=200).fit(X, y)
    first = _estimator(task, n_estimators=100).fit(X, y)
    path = tmp_path / "first.json"
    first.save_model(path)
    continued = _estimator(task, n_estimators=100).fit(X, y, init_model=path)
    assert continued.n_iter_ == 200
    _assert_same_model(continued, once)
    method = "predict" if task == "regression" else "decision_function"
    np.testing.assert_array_equal(getattr(continued, method)(X), getattr(once, method)(X))
    # the continued model saves and loads like any other
    continued.save_model(tmp_path / "continued.json")
    np.testing.assert_array_equal(
        getattr(load_model(tmp_path / "continued.json"), method)(X), getattr(once, method)(X))


@pytest.mark.parametrize("task", ["regression", "multiclass"])
def test_warm_start_adds_stages(data, task):
    X, targets = data
    y = targets[task]
    once = _estimator(task, n_estimators=60).fit(X, y)
    warm = _estimator(task, n_estimators=25, warm_start=True).fit(X, y)
    trees_before = warm.booster_.trees[:25]
    warm.set_params(n_estimators=60).fit(X, y)
    assert warm.n_iter_ == 60
    assert all(a is not b for a, b in zip(warm.booster_.trees, trees_before, strict=False))
    _assert_same_model(warm, once)


def test_warm_start_keeps_the_first_seed(data):
    X, targets = data
    params = dict(STOCHASTIC, random_state=None, n_estimators=10, warm_start=True)
    model = TreeBoostRegressor(**params).fit(X, targets["regression"])
    seed = model.booster_.seed
    model.set_params(n_estimators=20).fit(X, targets["regression"])
    assert model.booster_.seed == seed
    twin = TreeBoostRegressor(**params).fit(X, targets["regression"])
    assert twin.booster_.seed != seed  # random_state=None draws a new seed per fresh fit


def test_warm_start_checks_and_no_ops(data):
    X, targets = data
    y = targets["regression"]
    model = TreeBoostRegressor(n_estimators=10, warm_start=True, **STOCHASTIC).fit(X, y)
    trees = list(model.booster_.trees)
    model.fit(X, y)  # n_estimators reached: nothing to add
    assert model.n_iter_ == 10
    assert all(
        a is b for a, b in zip(model.booster_.trees, trees, strict=True))
    model.set_params(n_estimators=5)
    with pytest.raises(ValueError, match="n_estimators=5 must be at least the 10 stages"):
        model.fit(X, y)
    model.set_params(n_estimators=20)
    with pytest.raises(ValueError, match="same data.*shape"):
        model.fit(X[:200], y[:200])
    with pytest.raises(ValueError, match="features"):
        model.fit(X[:, :3], y)
    with pytest.raises(ValueError, match="loss"):
        model.set_params(loss="absolute_error").fit(X, y)
    with pytest.raises(ValueError, match="max_bins"):
        model.set_params(loss="squared_error", max_bins=32).fit(X, y)
    with pytest.raises(ValueError, match="boosting='gbdt'.*boosting='rf'"):
        model.set_params(max_bins=255, boosting="rf").fit(X, y)
    # the failed fits left the fitted model as it was
    assert model.n_iter_ == 10
    assert len(model.booster_.trees) == 10
    # without warm_start a fit starts afresh
    model.set_params(boosting="gbdt", warm_start=False, n_estimators=3).fit(X, y)
    assert model.n_iter_ == 3


def test_init_model_from_an_estimator_leaves_it_untouched(data):
    X, targets = data
    y = targets["binary"]
    first = _estimator("binary", n_estimators=20).fit(X, y)
    before = [t.value.copy() for stage in first.booster_.trees for t in stage]
    continued = _estimator("binary", n_estimators=20).fit(X, y, init_model=first)
    assert continued.n_iter_ == 40
    assert first.n_iter_ == 20
    after = [t.value for stage in first.booster_.trees for t in stage]
    assert all(np.array_equal(a, b) for a, b in zip(before, after, strict=True))
    _assert_same_model(continued, _estimator("binary", n_estimators=40).fit(X, y))


def test_init_model_checks(data):
    X, targets = data
    binary = _estimator("binary", n_estimators=5).fit(X, targets["binary"])
    with pytest.raises(ValueError, match="classes"):
        _estimator("multiclass", n_estimators=5).fit(X, targets["multiclass"],
                                                     init_model=binary)
    with pytest.raises(TypeError, match="init_model must be a fitted TreeBoostRegressor"):
        _estimator("regression").fit(X, targets["regression"], init_model=binary)
    with pytest.raises(ValueError, match="features"):
        _estimator("binary").fit(X[:, :4], targets["binary"], init_model=binary)


@pytest.mark.parametrize(("mode", "extra", "exact"), [
    ("goss", {"subsample": 1.0, "learning_rate": 0.25}, True),
    ("dart", {"drop_rate": 0.3, "skip_drop": 0.2}, False),
    ("rf", {}, False),
])
def test_modes_continue(data, tmp_path, mode, extra, exact):
    X, targets = data
    y = targets["multiclass"]
    params = dict(boosting=mode, **extra)
    once = _estimator("multiclass", n_estimators=30, **params).fit(X, y)
    first = _estimator("multiclass", n_estimators=12, **params).fit(X, y)
    first.save_model(tmp_path / "m.json")
    continued = _estimator("multiclass", n_estimators=18, **params).fit(
        X, y, init_model=tmp_path / "m.json")
    # GOSS is exact; DART's training scores are updated incrementally (drop, add,
    # rescale) while a continuation rebuilds them from the trees, and a forest's
    # trees are rescaled from 1/12 to 1/30: both equal to rounding
    _assert_same_model(continued, once, exact=exact)
    np.testing.assert_allclose(continued.predict_proba(X), once.predict_proba(X),
                               rtol=1e-10, atol=1e-12)
    if mode == "dart":
        np.testing.assert_allclose(continued.booster_.stage_weights,
                                   once.booster_.stage_weights, rtol=1e-12)


def test_older_files_without_continuation_state_load_and_continue(data, tmp_path):
    X, targets = data
    y = targets["regression"]
    first = _estimator("regression", n_estimators=10).fit(X, y)
    path = tmp_path / "old.json"
    first.save_model(path)
    doc = json.loads(path.read_text())
    for key in ("checksum", "seed", "stage_weights"):
        doc.pop(key)  # a file written before continued training existed
    doc["checksum"] = hashlib.sha256(_canonical(doc)).hexdigest()
    path.write_text(json.dumps(doc))
    old = load_model(path)
    assert old.booster_.seed is None
    np.testing.assert_array_equal(old.predict(X), first.predict(X))
    continued = _estimator("regression", n_estimators=5).fit(X, y, init_model=path)
    _assert_same_model(continued, _estimator("regression", n_estimators=15).fit(X, y))


def test_warm_start_extends_the_evaluation_log(data):
    X, targets = data
    y = targets["regression"]
    model = TreeBoostRegressor(n_estimators=5, warm_start=True, **STOCHASTIC)
    model.fit(X, y, eval_set=[(X[:50], y[:50])])
    model.set_params(n_estimators=8).fit(X, y, eval_set=[(X[:50], y[:50])])
    once = TreeBoostRegressor(n_estimators=8, **STOCHASTIC).fit(X, y,
                                                                eval_set=[(X[:50], y[:50])])
    assert model.evals_result_ == once.evals_result_
