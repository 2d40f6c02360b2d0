"""``treeboost.Dataset``: per-row init scores, query groups, frames and feature names.

The init-score tests check closed forms (zero gradients, a constant start equal to
F0) and LightGBM's ``init_score`` on one exactly binned tree; the group tests check
the offsets and every refusal; the frame tests follow the names into the model file.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from treeboost import Dataset, TreeBoostClassifier, TreeBoostRegressor, get_loss, train
from treeboost.serialization import load_booster, save_booster

PARAMS = {"n_estimators": 15, "random_state": 0, "max_leaf_nodes": 8}


def _regression(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = X[:, 0] + 0.5 * X[:, 1] ** 2 + rng.normal(scale=0.3, size=n)
    return X, y


def _three_classes(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)
    return X, y


# ---- init_score: closed forms --------------------------------------------------------------
def test_init_score_equal_to_label_leaves_nothing_to_learn():
    # squared error at raw = y: every gradient is 0, so every leaf value is 0 and F0 is
    # 0 (no boost from the average with init scores), whatever the trees' shapes
    X, y = _regression()
    booster = train(PARAMS, Dataset(X, y, init_score=y))
    assert booster.init_score.tolist() == [0.0]
    assert np.all(booster.predict_raw(X) == 0.0)


@pytest.mark.parametrize("boosting", ["gbdt", "dart", "rf"])
def test_constant_init_score_at_f0_gives_the_model_without_it(boosting):
    # starting every row at F0 is what training without init_score does; the model
    # then has F0 = 0 and its predictions miss exactly F0. 1e-12: the raw scores are
    # the same float64 sums but F0 is added at the end instead of the start
    X, y = _regression()
    params = {**PARAMS, "boosting": boosting, **({"subsample": 0.8} if boosting == "rf" else {})}
    plain = train(params, Dataset(X, y))
    f0 = plain.init_score[0]
    shifted = train(params, Dataset(X, y, init_score=np.full(y.size, f0)))
    np.testing.assert_allclose(shifted.predict_raw(X) + f0, plain.predict_raw(X), rtol=0,
                               atol=1e-12)


def test_multiclass_init_score_has_one_column_per_class():
    X, y = _three_classes()
    params = {**PARAMS, "loss": "log_loss"}
    plain = train(params, Dataset(X, y))
    f0 = plain.init_score  # one per class
    shifted = train(params, Dataset(X, y, init_score=np.tile(f0, (y.size, 1))))
    assert shifted.init_score.tolist() == [0.0, 0.0, 0.0]
    # 1e-12: as above, F0 added at the end instead of the start
    np.testing.assert_allclose(shifted.predict_raw(X) + f0, plain.predict_raw(X), atol=1e-12)


def test_first_stage_gradients_are_taken_at_init_score():
    # one stump with learning rate 1 and no regularisation: each leaf's value is the
    # mean residual y - init_score of its rows (the Newton step of squared error)
    X, y = _regression()
    margin = np.sin(3 * X[:, 2])
    booster = train({"n_estimators": 1, "learning_rate": 1.0, "max_leaf_nodes": 2,
                     "reg_lambda": 0.0, "random_state": 0}, Dataset(X, y, init_score=margin))
    pred = booster.predict_raw(X)[:, 0]
    for value in np.unique(pred):
        rows = pred == value
        # 1e-6: leaf sums of float32 gradients
        assert value == pytest.approx(np.mean(y[rows] - margin[rows]), rel=1e-6, abs=1e-6)


def test_valid_set_init_score_enters_its_evaluation():
    X, y = _regression(600)
    rng = np.random.default_rng(1)
    margin = rng.normal(scale=0.5, size=y.size)
    train_set = Dataset(X[:400], y[:400], init_score=margin[:400])
    valid = Dataset(X[400:], y[400:], init_score=margin[400:], reference=train_set)
    booster = train(PARAMS, train_set, valid_sets=[valid])
    log = booster.evals_result["validation_0"]["squared_error"]
    loss = booster.loss
    for stage, raw in enumerate(booster.staged_predict_raw(X[400:])):
        expected = loss(y[400:], (raw + margin[400:, None]).T, np.ones(200))
        # 1e-12: the log's raw scores are updated tree by tree, these traversed at once
        assert log[stage] == pytest.approx(expected, rel=1e-12)


def test_early_stopping_reads_valid_init_score():
    # a valid set whose init_score is its label is perfect before any tree, so every
    # stage makes its loss worse and early stopping keeps the first stage
    X, y = _regression(600)
    train_set = Dataset(X[:400], y[:400])
    valid = Dataset(X[400:], y[400:], init_score=y[400:] - train_set.label.mean(),
                    reference=train_set)
    booster = train({**PARAMS, "n_estimators": 100, "n_iter_no_change": 3}, train_set,
                    valid_sets=[valid])
    assert booster.best_iteration == 0


# ---- init_score: LightGBM --------------------------------------------------------------------
@pytest.mark.parametrize(("n_estimators", "learning_rate"), [(1, 1.0), (20, 0.1)])
def test_init_score_same_as_lightgbm(n_estimators, learning_rate):
    lgb = pytest.importorskip("lightgbm")
    # the setup of test_compare_peers.test_one_tree_same_predictions_as_lightgbm (integer
    # features, every value its own bin, learning rate 1, no regularisation), started
    # from a per-row margin: both grow trees on y - margin from F0 = 0 and both leave
    # the margin out of their predictions (measured: max difference 6e-8 on every row,
    # for 1 and 20 trees). rtol 1e-3 and "> 99 % of rows": float32 gradients summed in
    # different orders could rank two near-equal splits differently
    rng = np.random.RandomState(0)
    n = 2000
    X = rng.randint(0, 100, size=(n, 5)).astype(np.float64)
    y = X[:, 0] * 0.1 + np.sin(X[:, 1] / 10) + rng.normal(scale=0.3, size=n)
    margin = 0.05 * X[:, 2] - 2.0
    ours = train({"n_estimators": n_estimators, "learning_rate": learning_rate,
                  "max_leaf_nodes": 16,
                  "min_samples_leaf": 1, "min_child_weight": 1e-3, "reg_lambda": 0.0,
                  "random_state": 0}, Dataset(X, y, init_score=margin))
    theirs = lgb.train({"objective": "regression", "learning_rate": learning_rate,
                        "num_leaves": 16,
                        "min_child_samples": 1, "min_child_weight": 1e-3, "lambda_l2": 0.0,
                        "max_bin": 255, "min_data_in_bin": 1, "verbose": -1,
                        "num_threads": 1}, lgb.Dataset(X, y, init_score=margin),
                       num_boost_round=n_estimators)
    ours_raw = ours.predict_raw(X)[:, 0]
    theirs_raw = theirs.predict(X, raw_score=True)
    assert np.isclose(ours_raw, theirs_raw, rtol=1e-3, atol=1e-9).mean() > 0.99
    # and not the model without the margin (which boosts from the mean of y)
    assert not np.allclose(ours_raw, train({"n_estimators": 1, "learning_rate": 1.0,
                                            "random_state": 0}, Dataset(X, y)
                                           ).predict_raw(X)[:, 0], atol=0.1)


# ---- init_score: refusals --------------------------------------------------------------------
@pytest.mark.parametrize(("init_score", "match"), [
    (np.zeros(5), r"init_score must have shape"),
    (np.zeros((400, 2, 1)), r"init_score must have shape"),
    (np.r_[np.nan, np.zeros(399)], r"init_score contains NaN"),
    (np.r_[np.inf, np.zeros(399)], r"init_score contains NaN or infinity"),
])
def test_init_score_shape_and_values_checked(init_score, match):
    X, y = _regression()
    with pytest.raises(ValueError, match=match):
        Dataset(X, y, init_score=init_score)


def test_init_score_columns_must_match_outputs():
    X, y = _three_classes()
    with pytest.raises(ValueError, match=r"init_score has shape \(400,\).*3 output"):
        train({**PARAMS, "loss": "log_loss"}, Dataset(X, y, init_score=np.zeros(400)))
    Xr, yr = _regression()
    ts = Dataset(Xr, yr)
    valid = Dataset(Xr, yr, init_score=np.zeros((400, 2)), reference=ts)
    with pytest.raises(ValueError, match=r"valid set 'validation_0': init_score"):
        train(PARAMS, ts, valid_sets=[valid])


def test_init_score_with_init_model_is_refused():
    X, y = _regression()
    first = train(PARAMS, Dataset(X, y))
    with pytest.raises(ValueError, match="init_score, which cannot be combined with init_model"):
        train({**PARAMS, "n_estimators": 30}, Dataset(X, y, init_score=y), init_model=first)
    est = TreeBoostRegressor(n_estimators=5, warm_start=True).fit(X, y)
    est.set_params(n_estimators=10)
    with pytest.raises(ValueError, match="init_score cannot be combined with continued"):
        est.fit(X, y, init_score=y)
    assert est.n_iter_ == 5  # the failed warm start left the model as it was


# ---- init_score: estimators ------------------------------------------------------------------
def test_estimator_init_score_same_as_train():
    X, y = _regression()
    margin = np.cos(X[:, 3])
    est = TreeBoostRegressor(n_estimators=15, max_leaf_nodes=8, random_state=0).fit(
        X, y, init_score=margin)
    booster = train(PARAMS, Dataset(X, y, init_score=margin))
    np.testing.assert_array_equal(est.predict(X), booster.predict_raw(X)[:, 0])


def test_classifier_init_score_and_eval_init_score_same_as_train():
    X, y = _three_classes(600)
    rng = np.random.default_rng(2)
    margin = rng.normal(size=(600, 3))
    est = TreeBoostClassifier(n_estimators=15, max_leaf_nodes=8, random_state=0).fit(
        X[:400], y[:400], init_score=margin[:400], eval_set=[(X[400:], y[400:])],
        eval_init_score=[margin[400:]])
    train_set = Dataset(X[:400], y[:400], init_score=margin[:400])
    valid = Dataset(X[400:], y[400:], init_score=margin[400:], reference=train_set)
    booster = train({**PARAMS, "loss": "log_loss"}, train_set, valid_sets=[valid])
    np.testing.assert_array_equal(est._booster.predict_raw(X), booster.predict_raw(X))
    assert est.evals_result_ == booster.evals_result


def test_estimator_drops_init_score_of_zero_weight_rows():
    X, y = _regression()
    margin = np.cos(X[:, 3])
    weight = np.ones(400)
    weight[::7] = 0.0
    keep = weight > 0
    a = TreeBoostRegressor(n_estimators=10, random_state=0).fit(X, y, weight, init_score=margin)
    b = TreeBoostRegressor(n_estimators=10, random_state=0).fit(X[keep], y[keep],
                                                                init_score=margin[keep])
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


def test_estimator_eval_init_score_checks():
    X, y = _regression()
    est = TreeBoostRegressor(n_estimators=3)
    with pytest.raises(ValueError, match="eval_init_score must have one entry"):
        est.fit(X, y, eval_init_score=[y])
    with pytest.raises(ValueError, match=r"eval_init_score\[0\]: init_score must have shape"):
        est.fit(X, y, eval_set=[(X, y)], eval_init_score=[y[:10]])


# ---- query groups ----------------------------------------------------------------------------
def test_group_sizes_become_offsets():
    X, y = _regression(10)
    ds = Dataset(X, y, group=[3, 5, 2])
    assert ds.group_offsets.dtype == np.int64
    assert ds.group_offsets.tolist() == [0, 3, 8, 10]
    assert ds.group_sizes.tolist() == [3, 5, 2]
    assert Dataset(X, y).group_offsets is None


def test_qid_equals_group_sizes():
    X, y = _regression(10)
    qid = np.array([7, 7, 7, 2, 2, 2, 2, 2, 9, 9])  # contiguous, not sorted
    np.testing.assert_array_equal(Dataset(X, y, qid=qid).group_offsets,
                                  Dataset(X, y, group=[3, 5, 2]).group_offsets)
    names = np.array(["q1"] * 4 + ["q2"] * 6)
    assert Dataset(X, y, qid=names).group_offsets.tolist() == [0, 4, 10]


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"group": [3, 5, 1]}, "group sizes sum to 9 but the data has 10 rows"),
    ({"group": [3, 0, 7]}, "group sizes must be positive"),
    ({"group": [3, -2, 9]}, "group sizes must be positive"),
    ({"group": [2.5, 7.5]}, "integer group sizes"),
    ({"group": [[5, 5]]}, "1-D array of integer group sizes"),
    ({"qid": [1, 1, 2, 2, 1, 3, 3, 3, 3, 3]}, "contiguous"),
    ({"qid": [1, 2, 3]}, r"qid must have one entry per row \(10\)"),
    ({"qid": [1] * 10, "group": [10]}, "not both"),
])
def test_group_refusals(kwargs, match):
    X, y = _regression(10)
    with pytest.raises(ValueError, match=match):
        Dataset(X, y, **kwargs)


def _recording_loss():
    base = type(get_loss("squared_error"))

    class GroupedSquaredError(base):
        needs_group = True
        seen: list = []

        def gradient_hessian(self, y, raw, sample_weight, gradient, hessian, *,
                             group_offsets=None):
            self.seen.append(group_offsets)
            return super().gradient_hessian(y, raw, sample_weight, gradient, hessian)

    return GroupedSquaredError()


def test_group_offsets_reach_losses_that_need_them():
    X, y = _regression(10)
    loss = _recording_loss()
    train({"loss": loss, "n_estimators": 3, "min_samples_leaf": 1, "random_state": 0},
          Dataset(X, y, group=[3, 5, 2]))
    assert len(loss.seen) == 3  # once per stage
    assert all(g.tolist() == [0, 3, 8, 10] for g in loss.seen)
    with pytest.raises(ValueError, match="needs query groups"):
        train({"loss": _recording_loss(), "n_estimators": 3}, Dataset(X, y))


# ---- frames and feature names ----------------------------------------------------------------
def _frame(n=300, seed=0):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(seed)
    colour = rng.choice(["red", "green", "blue"], size=n)
    size = rng.normal(size=n)
    y = size + np.where(colour == "red", 2.0, 0.0) + rng.normal(scale=0.1, size=n)
    frame = pd.DataFrame({"size": size, "colour": pd.Categorical(colour),
                          "count": rng.integers(0, 5, size=n)})
    return frame, y


def test_frame_feature_names_and_categories_reach_the_model_file(tmp_path):
    frame, y = _frame()
    ds = Dataset(frame, y)
    assert ds.feature_names == ["size", "colour", "count"]
    assert ds.is_categorical.tolist() == [False, True, False]
    assert ds.pandas_categories == {1: ["blue", "green", "red"]}
    booster = train(PARAMS, ds)
    assert booster.feature_names == ["size", "colour", "count"]
    path = tmp_path / "model.json"
    save_booster(booster, path)
    doc = json.loads(path.read_text())
    assert doc["feature_names"] == ["size", "colour", "count"]
    assert doc["pandas_categories"] == [[1, ["blue", "green", "red"]]]
    loaded = load_booster(path)
    assert loaded.feature_names == ["size", "colour", "count"]
    assert loaded.pandas_categories == {1: ["blue", "green", "red"]}


def test_frame_dataset_same_model_as_estimator():
    frame, y = _frame()
    est = TreeBoostRegressor(n_estimators=15, max_leaf_nodes=8, random_state=0).fit(frame, y)
    booster = train(PARAMS, Dataset(frame, y))
    np.testing.assert_array_equal(est.predict(frame), booster.predict_raw(frame)[:, 0])
    assert est._booster.feature_names == ["size", "colour", "count"]


def test_polars_and_arrow_frames():
    frame, y = _frame()
    pl = pytest.importorskip("polars")
    pa = pytest.importorskip("pyarrow")
    expected = Dataset(frame, y)
    for other in (pl.from_pandas(frame), pa.Table.from_pandas(frame, preserve_index=False)):
        ds = Dataset(other, y)
        assert ds.feature_names == expected.feature_names
        assert ds.is_categorical.tolist() == expected.is_categorical.tolist()
        np.testing.assert_array_equal(ds.data, expected.data)


def test_valid_frame_coded_with_training_categories():
    pd = pytest.importorskip("pandas")
    frame, y = _frame()
    train_set = Dataset(frame, y)
    valid_frame = frame.iloc[:50].copy()
    # the same labels in another category order, and one unseen label
    valid_frame["colour"] = pd.Categorical(valid_frame["colour"].astype(str).replace(
        {"blue": "purple"}), categories=["red", "purple", "green"])
    valid = Dataset(valid_frame, y[:50], reference=train_set)
    codes = valid.data[:, 1]
    labels = frame["colour"].iloc[:50].astype(str).to_numpy()
    assert np.all(codes[labels == "red"] == 2.0)
    assert np.all(codes[labels == "green"] == 1.0)
    assert np.all(np.isnan(codes[labels == "blue"]))  # now "purple": unseen, missing
    assert valid.is_categorical.tolist() == [False, True, False]
    with pytest.raises(TypeError, match="without column types"):
        Dataset(train_set.data, reference=train_set)
    with pytest.raises(ValueError, match="differ from the reference"):
        Dataset(frame.rename(columns={"size": "width"}), reference=train_set)


def test_array_feature_names_and_categorical_by_name():
    X, y = _regression()
    X[:, 2] = np.floor(np.abs(X[:, 2]) * 3)
    ds = Dataset(X, y, feature_names=["a", "b", "c", "d"], categorical_features=["c"])
    assert ds.is_categorical.tolist() == [False, False, True, False]
    booster = train(PARAMS, ds)
    assert booster.feature_names == ["a", "b", "c", "d"]
    assert booster.bin_mapper.is_categorical_.tolist() == [False, False, True, False]
    assert Dataset(X, y, reference=ds).feature_names == ["a", "b", "c", "d"]


@pytest.mark.parametrize(("names", "match"), [
    (["a", "b"], "must be 4 distinct names, got 2"),
    (["a", "b", "b", "d"], "must be 4 distinct names, got 4 .3 distinct"),
])
def test_feature_names_checked(names, match):
    X, y = _regression()
    with pytest.raises(ValueError, match=match):
        Dataset(X, y, feature_names=names)


def test_feature_names_must_agree_with_frame_and_init_model():
    frame, y = _frame()
    with pytest.raises(ValueError, match="differ from the data frame's columns"):
        Dataset(frame, y, feature_names=["x", "y", "z"])
    X, yr = _regression()
    first = train(PARAMS, Dataset(X, yr, feature_names=list("abcd")))
    with pytest.raises(ValueError, match="differ from init_model's"):
        train({**PARAMS, "n_estimators": 20}, Dataset(X, yr, feature_names=list("wxyz")),
              init_model=first)


def test_a_strided_label_or_weight_column_is_stored_contiguous():
    # a column of a matrix is a strided view: kept as given, the loss kernels would
    # compile a specialisation of their own for it (tests/kernels/test_signatures.py)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    Y = rng.normal(size=(50, 2))
    W = rng.uniform(0.5, 2.0, size=(50, 2))
    data = Dataset(X, Y[:, 1], weight=W[:, 0]).construct()
    assert data.label.flags.c_contiguous
    assert data.weight.flags.c_contiguous
    np.testing.assert_array_equal(data.label, Y[:, 1])
    np.testing.assert_array_equal(data.weight, W[:, 0])
