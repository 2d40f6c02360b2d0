"""Boosting modes (SPEC §5): each tested for its defining property.

- GOSS keeps every row with a top |gradient| and up-weights a sample of the
  others by (1 - a) / b, after 1 / nu stages on all rows (LightGBM).
- DART rescales the dropped trees by k / (k + 1) and shrinks the new one by
  nu / (k + 1) (LightGBM; XGBoost's k / (k + nu) and nu / (k + nu) on request).
- rf fits every tree at F0, whatever the learning rate, and predicts F0 plus
  the mean of its trees.
"""

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.model_selection import train_test_split

from treeboost import Dataset, TreeBoostClassifier, TreeBoostRegressor, train
from treeboost.modes import dart_drops, dart_scales, goss_start
from treeboost.sampling import goss_sample, sample_rows

ONE = {"n_jobs": 1}
SMALL = {"max_leaf_nodes": 4, "min_samples_leaf": 3, **ONE}


@pytest.fixture(scope="module")
def reg_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + 0.3 * rng.normal(size=200)
    return X, y


@pytest.fixture(scope="module")
def clf_data():
    X, y = make_classification(900, 8, n_informative=5, n_classes=3, random_state=0)
    return train_test_split(X, y, test_size=0.3, random_state=0)


# ---- stochastic gradient boosting: row subsampling ------------------------------------
@pytest.mark.parametrize(("n", "subsample"), [(10, 0.5), (699, 0.8), (5, 1.0)])
def test_sample_rows_returns_the_draw_and_its_complement(n, subsample):
    rows, outside = sample_rows(n, subsample, np.random.default_rng(3), return_outside=True)
    np.testing.assert_array_equal(rows, sample_rows(n, subsample, np.random.default_rng(3)))
    assert rows.size == round(subsample * n)
    assert np.all(np.diff(rows) > 0)
    if subsample >= 1.0:
        assert outside is None
    else:
        assert np.all(np.diff(outside) > 0)
        np.testing.assert_array_equal(np.sort(np.r_[rows, outside]), np.arange(n))


# ---- GOSS ------------------------------------------------------------------------
def test_goss_sample_keeps_the_top_rows_and_draws_the_rest():
    score = np.arange(100, dtype=np.float64)[::-1].copy()  # row i has score 99 - i
    rows, drawn = goss_sample(score, 0.2, 0.1, np.random.default_rng(0))
    assert np.all(np.diff(rows) > 0)  # sorted, no repeats (the grower needs sorted rows)
    assert set(range(20)) <= set(rows.tolist())  # the 20 largest scores, all kept
    assert drawn.size == 10
    assert np.all(drawn >= 20)
    assert set(drawn) <= set(rows)
    assert rows.size == 30


@pytest.mark.parametrize("task", ["regression", "multiclass"])
def test_goss_keeps_top_gradients_and_amplifies_the_others(reg_data, clf_data, task):
    a, b, nu = 0.2, 0.1, 0.25
    if task == "regression":
        X, y = reg_data
        cls = TreeBoostRegressor
    else:
        X, _, y, _ = clf_data
        cls = TreeBoostClassifier
    model = cls(boosting="goss", top_rate=a, other_rate=b, learning_rate=nu, n_estimators=7,
                trace=True, random_state=0, **SMALL).fit(X, y)
    n, K = X.shape[0], 1 if task == "regression" else 3
    assert goss_start(nu) == 4
    factor = (1 - a) / b
    for m in range(7):
        entries = [e for e in model.trace_ if e["stage"] == m]
        assert len(entries) == K
        weight = entries[0]["rows"]["weight"].to_numpy()
        for e in entries:  # one sample per stage, shared by the K trees
            np.testing.assert_array_equal(e["rows"]["weight"], weight)
        if m < 4:  # the first 1 / nu stages use every row
            assert np.all(weight == 1.0)
            continue
        # |g| summed over the outputs, as GOSS ranks the rows
        score = sum(np.abs(e["rows"]["residual"].to_numpy()) for e in entries)
        top, drawn, out = weight == 1.0, weight == factor, weight == 0.0
        assert top.sum() == int(a * n)
        assert drawn.sum() == int(b * n)
        assert (top | drawn | out).all()
        # every row with a top |gradient| is kept at weight 1
        assert score[top].min() >= score[~top].max()
        threshold = np.sort(score)[::-1][int(a * n) - 1]
        assert np.all(top[score > threshold])
        # the up-weighting reaches the tree: Newton leaves -sum w g / sum w h
        for e in entries:
            rows, leaves = e["rows"], e["leaves"]
            for leaf, row in leaves.iterrows():
                r = rows[rows["in_sample"] & (rows["leaf"] == leaf)]
                newton = (r["weight"] * r["residual"]).sum() / (r["weight"] * r["hessian"]).sum()
                # float32 gradients and hessians: 1e-5 relative
                assert row["gamma"] == pytest.approx(newton, rel=1e-5, abs=1e-9)


def test_goss_parameter_checks(reg_data):
    X, y = reg_data
    with pytest.raises(ValueError, match="goss.*subsample"):
        TreeBoostRegressor(boosting="goss", subsample=0.5).fit(X, y)
    with pytest.raises(ValueError, match="top_rate \\+ other_rate"):
        TreeBoostRegressor(boosting="goss", top_rate=0.7, other_rate=0.5).fit(X, y)
    with pytest.raises(ValueError, match="other_rate=0"):
        TreeBoostRegressor(boosting="goss", other_rate=0.0).fit(X, y)


# ---- DART -------------------------------------------------------------------------
DART = {"boosting": "dart", "drop_rate": 0.4, "skip_drop": 0.0, "learning_rate": 0.3,
        "random_state": 3, **SMALL}


@pytest.mark.parametrize("xgboost_mode", [False, True])
@pytest.mark.parametrize("uniform", [False, True])
def test_dart_rescales_dropped_trees(reg_data, xgboost_mode, uniform):
    X, y = reg_data
    params = dict(DART, xgboost_dart_mode=xgboost_mode, uniform_drop=uniform)
    full = TreeBoostRegressor(n_estimators=12, trace=True, **params).fit(X, y)
    # a stage that dropped at least two earlier stages (the stage streams make the first
    # m stages of any fit with this random_state identical)
    m = next(e["stage"] for e in full.trace_ if len(e["dropped"]) >= 2)
    before = TreeBoostRegressor(n_estimators=m, **params).fit(X, y).booster_
    after = TreeBoostRegressor(n_estimators=m + 1, trace=True, **params).fit(X, y)
    entry, booster = after.trace_[m], after.booster_
    dropped, k, nu = entry["dropped"], len(entry["dropped"]), 0.3
    new_shrink, scale = (nu / (k + nu), k / (k + nu)) if xgboost_mode else \
        (nu / (k + 1), k / (k + 1))
    assert (new_shrink, scale) == dart_scales(k, nu, xgboost_mode)
    for i in range(m):
        old, new = before.trees[i][0].value, booster.trees[i][0].value
        # the same float operation on the same values: exact
        np.testing.assert_array_equal(new, old * scale if i in dropped else old)
        expected_weight = before.stage_weights[i] * (scale if i in dropped else 1.0)
        assert booster.stage_weights[i] == pytest.approx(expected_weight, rel=1e-15)
    # the new tree: shrunk by nu / (k + 1) ...
    leaves = entry["leaves"]
    np.testing.assert_allclose(leaves["value"], new_shrink * leaves["gamma"], rtol=1e-15)
    np.testing.assert_array_equal(booster.trees[m][0].value[leaves.index], leaves["value"])
    assert booster.stage_weights[m] == new_shrink
    # ... and fitted at the score without the dropped stages
    without = before.predict_raw(X)[:, 0] - sum(
        _tree_output(before, i, X) for i in dropped)
    # the training scores are kept incrementally: equal to rounding
    np.testing.assert_allclose(entry["rows"]["F"], without, rtol=1e-12, atol=1e-12)


def _tree_output(booster, stage, X):
    from treeboost.predictor import PackedTrees

    out = np.zeros((X.shape[0], 1))
    return PackedTrees(booster.trees[stage], [0], booster.bin_mapper).add_raw(
        np.ascontiguousarray(X), out)[:, 0]


def test_dart_drop_rules():
    rng = np.random.default_rng

    class P:
        drop_rate, skip_drop, max_drop, uniform_drop = 1.0, 0.0, 0, True

    w = np.full(10, 0.1)
    np.testing.assert_array_equal(dart_drops(w, P, rng(0)), np.arange(10))  # rate 1, no cap
    P.max_drop = 3
    assert dart_drops(w, P, rng(0)).size == 3
    P.skip_drop = 1.0
    assert dart_drops(w, P, rng(0)).size == 0
    assert dart_drops(np.zeros(0), P, rng(0)).size == 0  # nothing to drop at stage 0
    # weighted drop: a stage carrying no weight is never dropped
    P.skip_drop, P.max_drop, P.uniform_drop, P.drop_rate = 0.0, 0, False, 0.5
    w = np.array([1e-12, 1.0, 1.0, 1.0])
    hits = sum(0 in dart_drops(w, P, rng(s)) for s in range(200))
    assert hits == 0


def test_dart_training_scores_match_the_model(reg_data):
    X, y = reg_data
    model = TreeBoostRegressor(n_estimators=15, eval_metric="rmse", **DART)
    model.fit(X, y, eval_set=[(X, y)])
    rmse = np.sqrt(np.mean((model.predict(X) - y) ** 2))
    # the incrementally updated scores (drop, add, rescale) are the model's: to rounding
    assert model.evals_result_["validation_0"]["rmse"][-1] == pytest.approx(rmse, rel=1e-10)


def test_dart_refuses_early_stopping(reg_data):
    X, y = reg_data
    with pytest.raises(ValueError, match="early stopping.*dart"):
        TreeBoostRegressor(boosting="dart", n_iter_no_change=3).fit(X, y)


# ---- random forest --------------------------------------------------------------------
RF = {"boosting": "rf", "subsample": 0.6, "colsample_bytree": 0.75, "n_estimators": 8,
      "random_state": 1, "reg_lambda": 0.0, **SMALL}


def test_rf_needs_sampling(reg_data):
    X, y = reg_data
    with pytest.raises(ValueError, match="rf.*subsample < 1"):
        TreeBoostRegressor(boosting="rf").fit(X, y)
    TreeBoostRegressor(boosting="rf", colsample_bynode=0.5, n_estimators=2).fit(X, y)


def test_rf_trees_ignore_the_learning_rate(reg_data):
    X, y = reg_data
    slow = TreeBoostRegressor(learning_rate=0.05, **RF).fit(X, y).booster_
    fast = TreeBoostRegressor(learning_rate=0.9, **RF).fit(X, y).booster_
    for a, b in zip(slow.trees, fast.trees, strict=True):
        np.testing.assert_array_equal(a[0].value, b[0].value)
        np.testing.assert_array_equal(a[0].feature, b[0].feature)


def test_rf_is_f0_plus_the_mean_of_trees_fitted_at_f0(reg_data):
    X, y = reg_data
    model = TreeBoostRegressor(trace=True, **RF).fit(X, y)
    f0 = y.mean()
    assert model.booster_.init_score[0] == pytest.approx(f0, rel=1e-12)
    outputs = []
    for entry in model.trace_:
        rows, leaves = entry["rows"], entry["leaves"]
        # every tree sees the gradients at F0, unshrunk
        np.testing.assert_allclose(rows["F"], f0, rtol=1e-12)
        assert entry["shrinkage"] == 1.0
        for leaf, row in leaves.iterrows():  # squared error: mean residual of its sample
            members = rows["in_sample"] & (rows["leaf"] == leaf)
            # residuals pass through float32 gradients: 1e-5 relative
            assert row["gamma"] == pytest.approx((y - f0)[members].mean(), rel=1e-5,
                                                 abs=1e-7)
        outputs.append(leaves["gamma"].loc[rows["leaf"]].to_numpy())
    np.testing.assert_allclose(model.predict(X), f0 + np.mean(outputs, axis=0), rtol=1e-12)
    # staged predictions are the forests of the first m trees
    staged = list(model.staged_predict(X))
    np.testing.assert_allclose(staged[0], f0 + outputs[0], rtol=1e-12)
    np.testing.assert_allclose(staged[2], f0 + np.mean(outputs[:3], axis=0), rtol=1e-12)
    np.testing.assert_allclose(model.booster_.predict_raw(X, 3)[:, 0], staged[2], rtol=1e-12)
    np.testing.assert_allclose(staged[-1], model.predict(X), rtol=1e-12)


def test_rf_early_stopping_keeps_an_average(reg_data):
    X, y = reg_data
    X_val, y_val = X[:60] + 0.5, y[:60]  # a shifted copy: the forest stops improving early
    params = dict(RF, n_estimators=40)
    stopped = TreeBoostRegressor(**params, n_iter_no_change=2).fit(
        X, y, eval_set=[(X_val, y_val)])
    n = stopped.n_iter_
    assert n == stopped.best_iteration_ + 1 < 40
    full = TreeBoostRegressor(**params).fit(X, y)
    # the same first n trees (stage streams), kept as their mean rather than 1/40 each
    np.testing.assert_allclose(stopped.predict(X), full.booster_.predict_raw(X, n)[:, 0],
                               rtol=1e-12)


# ---- every mode trains ----------------------------------------------------------------
@pytest.mark.parametrize("mode", ["gbdt", "rf", "dart", "goss"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_every_mode_learns(clf_data, mode, n_classes):
    X_tr, X_te, y_tr, y_te = clf_data
    if n_classes == 2:
        y_tr, y_te = y_tr == 0, y_te == 0
    extra = {"subsample": 0.7, "colsample_bynode": 0.7} if mode == "rf" else {}
    model = TreeBoostClassifier(boosting=mode, n_estimators=40, random_state=0, **ONE,
                                **extra).fit(X_tr, y_tr)
    chance = max(np.mean(y_te == c) for c in np.unique(y_te))
    # at most half the majority-class rule's error on held-out rows (every mode gets
    # about 0.85-0.9 accuracy; the bar is 0.84 binary, 0.67 with three classes)
    assert 1 - model.score(X_te, y_te) < 0.5 * (1 - chance)


# ---- determinism ------------------------------------------------------------------------
@pytest.mark.skipif(__import__("numba").config.NUMBA_NUM_THREADS < 2,
                    reason="one Numba thread: n_jobs=2 would run serially")
@pytest.mark.parametrize("mode", ["rf", "dart", "goss"])
def test_modes_same_model_for_any_n_jobs(mode):
    # 40,000 rows: the partition and prediction kernels really run in parallel (the
    # plan's partition from 8,192 rows, and no lean tree)
    rng = np.random.default_rng(5)
    X = rng.normal(size=(40_000, 5))
    y = X[:, 0] + np.sin(X[:, 1]) + 0.3 * rng.normal(size=40_000)
    extra = {"subsample": 0.7} if mode == "rf" else {"skip_drop": 0.0, "drop_rate": 0.5} \
        if mode == "dart" else {"learning_rate": 0.5}
    params = dict(boosting=mode, n_estimators=6, max_leaf_nodes=8, random_state=0, **extra)
    fits = [train(dict(params, n_jobs=n_jobs), Dataset(X, y),
                  plan={"serial_partition_rows": 8192, "lean_tree_updates": 0})
            for n_jobs in (1, 2)]
    assert fits[1].execution_plan.n_threads == 2
    for a, b in zip(fits[0].trees, fits[1].trees, strict=True):
        np.testing.assert_array_equal(a[0].value, b[0].value)
        np.testing.assert_array_equal(a[0].feature, b[0].feature)
