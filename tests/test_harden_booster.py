"""The Booster's prediction input and stage counts hold the estimators' line (issue 33).

One input check (``treeboost._input.check_predict_X``) serves ``Booster.predict_raw``,
``Booster.staged_predict_raw`` and the estimators: width, frames (pandas, polars,
pyarrow) with their names and categorical columns, dtypes, 0 rows. Stage counts
(``n_stages``, ``stages``, ``truncate``) are checked, and a callback cannot cut the
model while the stage loop is still fitting stages on the removed stages' scores.
"""

import re

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal

from treeboost import Dataset, TreeBoostClassifier, TreeBoostRegressor, train
from treeboost.callbacks import TrainingCallback

PARAMS = {"n_estimators": 10, "learning_rate": 0.3, "random_state": 0}


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 4]) ** 2 + 0.1 * rng.normal(size=n)
    return X, y


def _frame(n=300, seed=0):
    """Columns a, b, d, e numeric and c categorical (labels "x", "y", "z"), and y."""
    X, y = _data(n, seed)
    labels = np.array(["x", "y", "z"])[np.arange(n) % 3]
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1],
                          "c": pd.Categorical(labels, categories=["x", "y", "z"]),
                          "d": X[:, 3], "e": X[:, 4]})
    return frame, y + 2.0 * (labels == "y")


@pytest.fixture(scope="module")
def booster():
    X, y = _data()
    return train(PARAMS, Dataset(X, y))


@pytest.fixture(scope="module")
def frame_fits():
    """A Booster trained on a frame with a categorical column, and the estimator's."""
    frame, y = _frame()
    return (train(PARAMS, Dataset(frame, y)), TreeBoostRegressor(**PARAMS).fit(frame, y),
            frame)


# ---- width ------------------------------------------------------------------------
@pytest.mark.parametrize("width", [3, 7])
@pytest.mark.parametrize("sparse", [False, True])
def test_predict_raw_refuses_a_matrix_of_another_width(booster, width, sparse):
    """Three columns of a 5-feature model gave finite scores read past each row."""
    X, _ = _data(20, seed=1)
    X = np.ascontiguousarray(np.hstack([X, X])[:, :width])
    if sparse:
        X = sp.csr_matrix(np.nan_to_num(X))
    msg = f"X has {width} features, but Booster is expecting 5 features as input"
    with pytest.raises(ValueError, match=msg):
        booster.predict_raw(X)
    with pytest.raises(ValueError, match=msg):
        booster.staged_predict_raw(X)  # at the call, not at the first stage


def test_the_estimators_refuse_another_width_with_their_name():
    X, y = _data()
    est = TreeBoostRegressor(**PARAMS).fit(X, y)
    with pytest.raises(ValueError, match="X has 3 features, but TreeBoostRegressor is "
                                         "expecting 5 features as input"):
        est.predict(X[:, :3])


# ---- frames -------------------------------------------------------------------------
def test_predict_raw_reads_the_frame_it_was_trained_on(frame_fits):
    bst, est, frame = frame_fits
    raw = bst.predict_raw(frame)
    # the estimator on the same frame and parameters grows the same model (test_training)
    assert_array_equal(raw[:, 0], est.predict(frame))
    assert_array_equal(est.booster_.predict_raw(frame), raw)
    # categories are read by label: another order of the same labels is the same data
    recoded = frame.assign(c=frame["c"].cat.reorder_categories(["z", "x", "y"]))
    assert_array_equal(bst.predict_raw(recoded), raw)
    # an unseen category goes with the missing values
    unseen = frame.assign(c=pd.Categorical(["w"] * len(frame)))
    missing = frame.assign(c=pd.Categorical([None] * len(frame), categories=["x"]))
    assert_array_equal(bst.predict_raw(unseen), bst.predict_raw(missing))
    # the categorical split is used: the label "y" (+2 in the target) moves the scores
    y_rows = (frame["c"] == "y").to_numpy()
    assert raw[y_rows, 0].mean() > raw[~y_rows, 0].mean() + 1.0


def test_staged_predict_raw_reads_frames(frame_fits):
    bst, _, frame = frame_fits
    staged = list(bst.staged_predict_raw(frame, [3, 10]))
    assert_array_equal(staged[0], bst.predict_raw(frame, n_stages=3))
    assert_array_equal(staged[1], bst.predict_raw(frame))


def test_predict_raw_checks_the_frames_names(frame_fits):
    bst, _, frame = frame_fits
    with pytest.raises(ValueError, match="Feature names must be in the same order"):
        bst.predict_raw(frame[["b", "a", "c", "d", "e"]])
    with pytest.raises(ValueError, match=re.escape("Feature names unseen at fit time:\n- q")):
        bst.predict_raw(frame.rename(columns={"e": "q"}))
    with pytest.raises(ValueError, match=re.escape("seen at fit time, yet now missing:\n- e")):
        bst.predict_raw(frame.drop(columns="e"))
    with pytest.raises(ValueError, match="X has 4 features, but Booster is expecting 5"):
        bst.predict_raw(pd.DataFrame(frame.drop(columns="e").to_numpy()))


def test_a_frame_without_string_names_is_read_by_position(booster):
    X, _ = _data(20, seed=2)
    named = pd.DataFrame(X, columns=list("abcde"))
    assert_array_equal(booster.predict_raw(pd.DataFrame(X)), booster.predict_raw(X))
    # a Booster trained on an array has no names to check against
    assert_array_equal(booster.predict_raw(named), booster.predict_raw(X))


def test_categorical_columns_must_keep_their_type(frame_fits, booster):
    bst, _, frame = frame_fits
    with pytest.raises(TypeError, match="column 'c' was categorical in training"):
        bst.predict_raw(frame.assign(c=frame["c"].cat.codes.astype(float)))
    with pytest.raises(TypeError, match="without column types.*'c'"):
        bst.predict_raw(frame.assign(c=frame["c"].cat.codes.astype(float)).to_numpy())
    X, _ = _data(20, seed=3)
    as_category = pd.DataFrame(X, columns=list("abcde")).assign(c=pd.Categorical(["x"] * 20))
    with pytest.raises(TypeError, match="column 'c' is categorical .* but was numeric in "
                                        "training"):
        booster.predict_raw(as_category)


@pytest.mark.parametrize("library", ["polars", "pyarrow"])
def test_predict_raw_reads_polars_and_arrow_frames(frame_fits, library):
    bst, est, frame = frame_fits
    if library == "polars":
        pl = pytest.importorskip("polars")
        other = pl.from_pandas(frame)
    else:
        pa = pytest.importorskip("pyarrow")
        other = pa.Table.from_pandas(frame, preserve_index=False)
    assert_array_equal(bst.predict_raw(other), bst.predict_raw(frame))
    assert_array_equal(est.predict(other), est.predict(frame))


# ---- one check for the Booster and the estimators --------------------------------------
def _bad_inputs(frame):
    X = frame.assign(c=frame["c"].cat.codes).to_numpy(dtype=float)
    return {"width": frame.iloc[:, :3], "order": frame[["b", "a", "c", "d", "e"]],
            "names": frame.rename(columns={"a": "q"}), "codes": X,
            "category as number": frame.assign(c=frame["c"].cat.codes),
            "one-d": X[0], "infinity": frame.assign(a=np.inf)}


@pytest.mark.parametrize("case", ["width", "order", "names", "codes", "category as number",
                                  "one-d", "infinity"])
def test_the_booster_and_the_estimator_share_one_input_check(frame_fits, case):
    """Every refusal is the same error, naming the model's class."""
    _, est, frame = frame_fits
    bad = _bad_inputs(frame)[case]
    errors = []
    for model, call in [("Booster", est.booster_.predict_raw),
                        ("TreeBoostRegressor", est.predict)]:
        with pytest.raises((ValueError, TypeError)) as info:
            call(bad)
        errors.append((info.type, str(info.value).replace(model, "MODEL")))
    assert errors[0] == errors[1]


def test_the_estimators_still_warn_of_an_unnamed_matrix(frame_fits):
    """scikit-learn's convention for estimators; the bare Booster takes arrays by position."""
    X, y = _data()
    est = TreeBoostRegressor(**PARAMS).fit(pd.DataFrame(X, columns=list("abcde")), y)
    with pytest.warns(UserWarning, match="X does not have valid feature names, but "
                                         "TreeBoostRegressor was fitted with feature names"):
        est.predict(X)
    with pytest.warns(UserWarning, match="X has feature names, but TreeBoostRegressor was "
                                         "fitted without feature names"):
        TreeBoostRegressor(**PARAMS).fit(X, y).predict(pd.DataFrame(X, columns=list("abcde")))


# ---- dtypes, shapes, sparse --------------------------------------------------------------
def test_float16_and_other_dtypes_are_read_as_float64(booster):
    """float16 raised NotImplementedError in the kernel; scikit-learn converts it."""
    X, y = _data(50, seed=4)
    X16 = X.astype(np.float16)
    expected = booster.predict_raw(X16.astype(np.float64))
    assert_array_equal(booster.predict_raw(X16), expected)
    assert_array_equal(next(iter(booster.staged_predict_raw(X16, [10]))), expected)
    est = TreeBoostRegressor(**PARAMS).fit(*_data())
    assert_array_equal(est.predict(X16), est.predict(X16.astype(np.float64)))
    Xi = np.round(np.nan_to_num(X) * 4).astype(np.int64)
    assert_array_equal(booster.predict_raw(Xi), booster.predict_raw(Xi.astype(float)))
    assert_array_equal(booster.predict_raw(np.asfortranarray(X)), booster.predict_raw(X))
    assert_array_equal(booster.predict_raw(X.tolist()), booster.predict_raw(X))
    # float32 is read as float32, compared with the thresholds in float64
    X32 = X.astype(np.float32)
    assert_array_equal(booster.predict_raw(X32), booster.predict_raw(X32.astype(np.float64)))


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_sparse_input_predicts_as_dense(booster, fmt):
    X, _ = _data(60, seed=5)
    X = np.where(np.abs(np.nan_to_num(X)) < 0.5, 0.0, X)
    S = sp.csr_matrix(X).asformat(fmt)
    assert_array_equal(booster.predict_raw(S), booster.predict_raw(X))
    staged = list(booster.staged_predict_raw(S, [2, 10]))
    assert_array_equal(staged[0], booster.predict_raw(X, n_stages=2))


def test_one_dimensional_input_is_refused_clearly(booster):
    X, _ = _data(5, seed=6)
    with pytest.raises(ValueError, match="Expected 2D array, got 1D array"):
        booster.predict_raw(X[0])


def test_infinity_is_refused_as_by_the_estimators(booster):
    X, _ = _data(5, seed=6)
    X[0, 1] = np.inf
    with pytest.raises(ValueError, match="Input X contains infinity"):
        booster.predict_raw(X)


@pytest.mark.parametrize("task", ["regression", "multiclass"])
def test_zero_rows_give_zero_scores(task):
    X, y = _data()
    if task == "multiclass":
        bst = train({**PARAMS, "loss": "log_loss"}, Dataset(X, np.digitize(y, [-0.5, 0.5])))
    else:
        bst = train(PARAMS, Dataset(X, y))
    K = bst.n_outputs
    assert bst.predict_raw(X[:0]).shape == (0, K)
    assert bst.predict_raw(pd.DataFrame(X[:0])).shape == (0, K)
    assert [s.shape for s in bst.staged_predict_raw(X[:0], [1, 10])] == [(0, K), (0, K)]


def test_a_booster_with_no_stages_predicts_f0(booster):
    X, y = _data()
    bst = train(PARAMS, Dataset(X, y))
    bst.truncate(0)
    expected = np.repeat(bst.init_score[None, :], 7, axis=0)
    assert_array_equal(bst.predict_raw(X[:7]), expected)
    assert list(bst.staged_predict_raw(X[:7])) == []
    assert_array_equal(next(iter(bst.staged_predict_raw(X[:7], [0]))), expected)
    assert bst.init_score[0] == pytest.approx(np.mean(y))  # F0 of squared error


# ---- stage counts --------------------------------------------------------------------------
@pytest.mark.parametrize(("n_stages", "error", "match"), [
    (-1, ValueError, "n_stages=-1 must be an int in [0, 10]"),
    (11, ValueError, "n_stages=11 must be an int in [0, 10]"),
    (2.5, TypeError, "n_stages=2.5 must be an int in [0, 10]"),
    (True, TypeError, "n_stages=True must be an int"),
    ("3", TypeError, "n_stages='3' must be an int"),
])
def test_n_stages_is_a_count_of_the_models_stages(booster, n_stages, error, match):
    """n_stages=-1 silently predicted with all the stages but the last."""
    X, _ = _data(20, seed=7)
    with pytest.raises(error, match=re.escape(match)):
        booster.predict_raw(X, n_stages=n_stages)


def test_n_stages_in_range(booster):
    X, _ = _data(20, seed=7)
    staged = list(booster.staged_predict_raw(X))
    assert_array_equal(booster.predict_raw(X, n_stages=np.int64(3)), staged[2])
    assert_array_equal(booster.predict_raw(X, n_stages=10), booster.predict_raw(X))
    assert_array_equal(booster.predict_raw(X, n_stages=0),
                       np.repeat(booster.init_score[None, :], 20, axis=0))


@pytest.mark.parametrize(("stages", "error", "match"), [
    ([10, 5], ValueError, "stages=[10, 5] must be increasing"),
    ([5, 5], ValueError, "stages=[5, 5] must be increasing"),
    ([-1, 5], ValueError, "stages=[-1, 5] must be ints in [0, 10]"),
    ([5, 11], ValueError, "stages=[5, 11] must be ints in [0, 10]"),
    ([2.5], TypeError, "stages=[2.5] must be ints in [0, 10]"),
    (5, TypeError, "stages=5 must be an iterable of ints"),
])
def test_staged_stages_are_checked_at_the_call(booster, stages, error, match):
    """[10, 5] raised IndexError from the packer; [-1, 5] yielded F0 as stage -1."""
    X, _ = _data(20, seed=7)
    with pytest.raises(error, match=re.escape(match)):
        booster.staged_predict_raw(X, stages)


def test_staged_stages_yield_the_prefixes(booster):
    X, _ = _data(20, seed=7)
    stages = np.array([0, 3, 10])  # any iterable of ints, NumPy's too
    for stage, raw in zip(stages, booster.staged_predict_raw(X, stages), strict=True):
        assert_array_equal(raw, booster.predict_raw(X, n_stages=int(stage)))


@pytest.mark.parametrize(("n_stages", "error", "match"), [
    (-3, ValueError, "n_stages=-3 must be an int in [0, 10]"),
    (11, ValueError, "n_stages=11 must be an int in [0, 10]"),
    (2.5, TypeError, "n_stages=2.5 must be an int in [0, 10]"),
])
def test_truncate_refuses_what_is_not_a_count_of_stages(n_stages, error, match):
    """truncate(-3) silently dropped the last three stages."""
    X, y = _data()
    bst = train(PARAMS, Dataset(X, y))
    before = bst.predict_raw(X)
    with pytest.raises(error, match=re.escape(match)):
        bst.truncate(n_stages)
    assert len(bst.trees) == 10
    assert_array_equal(bst.predict_raw(X), before)


# ---- truncation by a callback ------------------------------------------------------------
class _TruncateAt(TrainingCallback):
    """Cut the booster back to ``keep`` stages after stage ``at`` (0-based), or in
    ``after_training`` when ``at`` is None."""

    def __init__(self, at, keep, how="truncate"):
        self.at, self.keep, self.how, self.booster = at, keep, how, None

    def before_training(self, booster):
        self.booster = booster

    def _cut(self):
        if self.how == "truncate":
            self.booster.truncate(self.keep)
        else:
            del self.booster.trees[self.keep:]

    def after_iteration(self, iteration, evals_log):
        if iteration == self.at:
            self._cut()
        return False

    def after_training(self, booster):
        if self.at is None:
            self._cut()


@pytest.mark.parametrize("how", ["truncate", "del"])
def test_a_callback_cannot_cut_the_model_during_training(how):
    """Stages 6..10 were fitted on the scores of the removed stages 3..5: the model's
    predictions on the training rows were not the scores its last stages were fitted
    on. As XGBoost and LightGBM, whose callbacks read the model, training refuses."""
    X, y = _data()
    match = ("truncate" if how == "truncate" else "stages") + r".*during training"
    with pytest.raises(RuntimeError, match=match):
        train(PARAMS, Dataset(X, y), callbacks=[_TruncateAt(4, 2, how)])
    with pytest.raises(RuntimeError, match=match):
        TreeBoostRegressor(**PARAMS).fit(X, y, callbacks=[_TruncateAt(4, 2, how)])


def test_a_failed_fit_leaves_the_booster_usable():
    X, y = _data()
    bst = train({**PARAMS, "n_estimators": 5}, Dataset(X, y))
    cut = _TruncateAt(6, 2)
    with pytest.raises(RuntimeError, match="truncate"):
        train(PARAMS, Dataset(X, y), callbacks=[cut], init_model=bst)
    bst.truncate(3)  # no longer training: allowed
    assert len(bst.trees) == 3


@pytest.mark.parametrize("boosting", ["gbdt", "rf"])
def test_truncating_after_training_keeps_a_prefix_of_the_model(boosting):
    """The early-stopping way: after the loop, the model is its first stages."""
    X, y = _data()
    params = {**PARAMS, "boosting": boosting, "subsample": 0.8}
    cut = train(params, Dataset(X, y), callbacks=[_TruncateAt(None, 4)])
    short = train({**params, "n_estimators": 4}, Dataset(X, y))
    assert len(cut.trees) == 4
    # rf: the kept trees were divided by 10 then multiplied by 10 / 4, the short forest's
    # divided by 4: equal to the last bits of float64
    assert_allclose(cut.predict_raw(X), short.predict_raw(X), rtol=1e-13, atol=1e-13)


def test_the_classifier_reads_float16():
    X, y = _data()
    est = TreeBoostClassifier(**PARAMS).fit(X, (y > 0).astype(int))
    X16 = X.astype(np.float16)
    assert_array_equal(est.predict_proba(X16), est.predict_proba(X16.astype(np.float64)))
