"""Bad input to the estimators gives one clear error naming the column or parameter.

Issue 11, items 1 (column types at predict time) and 2 (one clear line instead of a
cryptic error): each case asserts the error's type and, with ``match=``, the name in the
message, or a sane result where the input is legitimate. Every check runs in Python
before a kernel does, so the fits here are tiny.
"""

import os

import numpy as np
import pandas as pd
import pytest

from treeboost import TreeBoostClassifier, TreeBoostRegressor
from treeboost.binning import BinMapper
from treeboost.grower import GrowerParams, TreeGrower

RNG = np.random.default_rng(0)
X = RNG.normal(size=(120, 3))
Y_REG = X[:, 0] + 0.1 * RNG.normal(size=120)
Y_BIN = (X[:, 0] > 0).astype(int)
Y_MULTI = Y_BIN + (X[:, 1] > 0)
FAST = dict(n_estimators=3, min_samples_leaf=5)


def _frame(n=120, seed=1):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"colour": pd.Categorical(rng.choice(["red", "green", "blue"], n)),
                         "size": rng.normal(size=n)})


@pytest.fixture(scope="module")
def categorical_model():
    frame = _frame()
    y = (frame["colour"] == "red").astype(int).to_numpy()
    return TreeBoostClassifier(**FAST).fit(frame, y), frame


# ---- item 1: column types at predict time ---------------------------------------------
def test_categorical_column_given_as_numbers_is_refused(categorical_model):
    model, frame = categorical_model
    numeric = frame.assign(colour=frame["colour"].cat.codes.astype(float))
    with pytest.raises(TypeError, match="column 'colour' was categorical in training"):
        model.predict(numeric)


def test_numeric_column_given_as_category_is_refused(categorical_model):
    model, frame = categorical_model
    binned = frame.assign(size=pd.Categorical(frame["size"].round()))
    with pytest.raises(TypeError, match="column 'size' is categorical .* numeric in training"):
        model.predict(binned)


@pytest.mark.parametrize("convert", [lambda f: f.assign(colour=f["colour"].cat.codes)
                                     .to_numpy(dtype=float),
                                     lambda f: f.to_numpy(dtype=object)])
def test_plain_array_for_a_model_with_categorical_columns_is_refused(categorical_model,
                                                                     convert):
    # codes in category order are what a LightGBM user would pass; they could as well
    # be labels, so refusing is the only answer that is never silently wrong
    model, frame = categorical_model
    with pytest.raises(TypeError, match="categorical column.*'colour'"):
        model.predict_proba(convert(frame))


def test_same_types_predict_like_training(categorical_model):
    model, frame = categorical_model
    # category order of the predict frame differs: values are matched by label
    shuffled = frame.assign(colour=frame["colour"].cat.reorder_categories(
        ["red", "green", "blue"]))
    np.testing.assert_array_equal(model.predict_proba(shuffled), model.predict_proba(frame))


def test_plain_array_for_a_model_without_categorical_columns_is_fine():
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    model = TreeBoostRegressor(**FAST).fit(frame, Y_REG)
    with pytest.warns(UserWarning, match="feature names"):  # scikit-learn's own notice
        pred = model.predict(X)
    np.testing.assert_array_equal(pred, model.predict(frame))


# ---- item 2: labels, frames, metrics, parameters --------------------------------------
@pytest.mark.parametrize("y", [[1, "a", 2] * 40, pd.Series([1, "a"] * 60, dtype=object),
                               np.array([2.5, "b"] * 60, dtype=object)])
def test_labels_mixing_numbers_and_strings_are_refused(y):
    with pytest.raises(TypeError, match="y mixes numbers and strings"):
        TreeBoostClassifier(**FAST).fit(X, y)


def test_string_labels_keep_their_type():
    model = TreeBoostClassifier(**FAST).fit(X, np.where(Y_BIN, "yes", "no").tolist())
    assert model.classes_.tolist() == ["no", "yes"]
    assert set(model.predict(X).tolist()) <= {"no", "yes"}


def test_regressor_refuses_text_targets_but_reads_numeric_strings():
    with pytest.raises(TypeError, match="y holds strings.*TreeBoostRegressor"):
        TreeBoostRegressor(**FAST).fit(X, ["a", "b"] * 60)
    as_text = TreeBoostRegressor(**FAST).fit(X, pd.Series([repr(float(v)) for v in Y_REG]))
    np.testing.assert_array_equal(as_text.predict(X),
                                  TreeBoostRegressor(**FAST).fit(X, Y_REG).predict(X))
    with pytest.raises(ValueError, match="eval_set targets must be numbers"):
        TreeBoostRegressor(**FAST).fit(X, Y_REG, eval_set=[(X, ["a"] * 120)])


def _string_column_frames():
    pa = pytest.importorskip("pyarrow")
    pl = pytest.importorskip("polars")
    words = ["a", "b"] * 60
    return [pd.DataFrame({"v": X[:, 0], "word": words}),
            pa.table({"v": X[:, 0], "word": words}),
            pl.DataFrame({"v": X[:, 0], "word": words})]


@pytest.mark.parametrize("index", [0, 1, 2], ids=["pandas", "pyarrow", "polars"])
def test_string_column_is_named(index):
    frame = _string_column_frames()[index]
    with pytest.raises(TypeError, match="column 'word' has dtype .*'category'"):
        TreeBoostClassifier(**FAST).fit(frame, Y_BIN)


def test_arrow_numeric_columns_still_read():
    pa = pytest.importorskip("pyarrow")
    table = pa.table({"a": X[:, 0], "b": pa.array(np.arange(120), pa.int32())})
    model = TreeBoostRegressor(**FAST).fit(table, Y_REG)
    plain = TreeBoostRegressor(**FAST).fit(np.c_[X[:, 0], np.arange(120.0)], Y_REG)
    np.testing.assert_array_equal(model.predict(table), plain.predict(
        np.c_[X[:, 0], np.arange(120.0)]))


@pytest.mark.parametrize(("cls", "metric", "y", "task"), [
    (TreeBoostRegressor, "auc", Y_REG, "regression"),
    (TreeBoostRegressor, "error", Y_REG, "regression"),
    (TreeBoostClassifier, "auc", Y_MULTI, "multiclass"),
    (TreeBoostClassifier, "rmse", Y_MULTI, "multiclass"),
    (TreeBoostClassifier, "mae", Y_MULTI, "multiclass"),
])
def test_eval_metric_that_does_not_fit_the_task_is_refused(cls, metric, y, task):
    with pytest.raises(ValueError, match=f"eval_metric='{metric}' is not defined for {task}"):
        cls(**FAST, eval_metric=metric, n_iter_no_change=2).fit(X, y)


def test_rmse_of_a_binary_classifier_is_the_root_brier_score():
    model = TreeBoostClassifier(**FAST, eval_metric="rmse", verbose=0)
    model.fit(X, Y_BIN, eval_set=[(X, Y_BIN)])
    brier = np.mean((model.predict_proba(X)[:, 1] - Y_BIN) ** 2)
    # rtol: the logged value and this one differ only by float64 summation order
    np.testing.assert_allclose(model.evals_result_["validation_0"]["rmse"][-1],
                               np.sqrt(brier), rtol=1e-12)


@pytest.mark.parametrize(("seed", "error"), [(-1, ValueError), (2**32, ValueError),
                                         (np.int64(-3), ValueError), (1.5, TypeError),
                                         ("42", TypeError), (True, TypeError)])
def test_out_of_range_random_state_is_refused(seed, error):
    with pytest.raises(error, match="random_state="):
        TreeBoostRegressor(**FAST, random_state=seed).fit(X, Y_REG)


def test_largest_random_state_is_accepted():
    a = TreeBoostRegressor(**FAST, subsample=0.5, random_state=2**32 - 1).fit(X, Y_REG)
    b = TreeBoostRegressor(**FAST, subsample=0.5, random_state=2**32 - 1).fit(X, Y_REG)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


@pytest.mark.parametrize(("weights", "bad"), [({0: 1.0, 5: 2.0}, r"\[5\]"),
                                          ({"0": 1.0, "1": 2.0}, r"\['0', '1'\]")])
def test_class_weight_keys_that_are_not_classes_are_refused(weights, bad):
    with pytest.raises(ValueError, match=f"class_weight has keys {bad} that are not classes"):
        TreeBoostClassifier(**FAST, class_weight=weights).fit(X, Y_BIN)


def test_class_weight_of_some_classes_weighs_only_those():
    # a dict naming one class leaves the others at weight 1, as scikit-learn does
    weighted = TreeBoostClassifier(**FAST, class_weight={1: 3.0}).fit(X, Y_BIN)
    explicit = TreeBoostClassifier(**FAST).fit(X, Y_BIN, sample_weight=np.where(Y_BIN, 3, 1))
    np.testing.assert_array_equal(weighted.predict_proba(X), explicit.predict_proba(X))


@pytest.mark.parametrize(("fraction", "rows", "n_classes"), [
    (0.001, 120, 2), (0.1, 6, 2), (0.9, 4, 2), (0.6, 6, 3)])
def test_early_stopping_split_too_small_is_refused(fraction, rows, n_classes):
    y = np.arange(rows) % n_classes
    with pytest.raises(ValueError, match=f"validation_fraction={fraction}"):
        TreeBoostClassifier(**FAST, n_iter_no_change=2, validation_fraction=fraction).fit(
            X[:rows], y)


def test_early_stopping_split_with_empty_training_is_refused_for_regression():
    with pytest.raises(ValueError, match="validation_fraction=0.9 holds out 3 of 3 rows"):
        TreeBoostRegressor(n_estimators=3, n_iter_no_change=2, validation_fraction=0.9,
                           min_samples_leaf=1).fit(X[:3], Y_REG[:3])


def test_early_stopping_with_a_class_of_one_row_gives_probabilities():
    y = Y_BIN.copy()
    y[0] = 2  # one row: it cannot be stratified, the split falls back to a plain one
    model = TreeBoostClassifier(**FAST, n_iter_no_change=2).fit(X, y)
    proba = model.predict_proba(X)
    assert proba.shape == (120, 3)
    assert np.all(np.isfinite(proba))
    # rtol: probabilities are a softmax, which sums to 1 up to rounding
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)


def test_eval_set_with_other_columns_is_named():
    with pytest.raises(ValueError, match=r"eval_set\[0\]: X has 2 features"):
        TreeBoostRegressor(**FAST).fit(X, Y_REG, eval_set=[(X[:, :2], Y_REG)])


# ---- huge max_leaf_nodes ------------------------------------------------------------------
@pytest.mark.parametrize("leaves", [10**9, 2**31 - 1])
def test_huge_max_leaf_nodes_gives_the_model_of_an_unbounded_one(leaves):
    # 120 rows and min_samples_leaf=1 hold at most 120 leaves: 120 and 10**9 are the
    # same limit, and the buffers are sized by the smaller
    params = dict(n_estimators=5, min_samples_leaf=1, learning_rate=0.5)
    huge = TreeBoostRegressor(**params, max_leaf_nodes=leaves).fit(X, Y_REG)
    held = TreeBoostRegressor(**params, max_leaf_nodes=120).fit(X, Y_REG)
    np.testing.assert_array_equal(huge.predict(X), held.predict(X))


def _grower(n_rows, max_leaf_nodes, min_samples_leaf, max_depth=None):
    binned = BinMapper().fit_transform(X[:n_rows])  # (n_features, n_rows)
    mapper = BinMapper().fit(X[:n_rows])
    return TreeGrower(binned, mapper.n_bins_non_missing_, mapper.is_categorical_,
                      GrowerParams(max_leaf_nodes=max_leaf_nodes, max_depth=max_depth,
                                   min_samples_leaf=min_samples_leaf))


@pytest.mark.parametrize(("rows", "leaves", "min_leaf", "depth", "cap"), [
    (120, 10**9, 1, None, 120), (120, 10**9, 20, None, 6), (120, 31, 1, None, 31),
    (120, 10**9, 1, 3, 8), (3, 10**9, 2, None, 2)])
def test_leaf_capacity_is_what_the_rows_can_hold(rows, leaves, min_leaf, depth, cap):
    assert _grower(rows, leaves, min_leaf, depth).leaf_capacity() == cap


def test_buffers_too_large_for_memory_name_max_leaf_nodes(monkeypatch):
    grower = _grower(120, 10**9, 1)
    import treeboost.grower as module

    def no_memory(shape, dtype=None):
        raise MemoryError("Unable to allocate")

    # the machine's limit is simulated: a real 1e6-leaf pool would need a big data set
    monkeypatch.setattr(module.np, "empty", no_memory)
    with pytest.raises(MemoryError, match="max_leaf_nodes=1000000000"):
        grower._allocate_hist_pool(grower.leaf_capacity())


# ---- values near the float64 maximum; infinity ------------------------------------------
@pytest.mark.parametrize("values", [[1.7e308, 1e308, 0.0, -1e308, -1.7e308],
                                    [-1.7976931348623157e308, 1.7976931348623157e308],
                                    [1e308, -1e308]])
def test_bin_edges_near_the_float64_maximum_are_finite_and_separate(values):
    column = np.repeat(np.asarray(values, dtype=float), 10)[:, None]
    mapper = BinMapper().fit(column)
    edges = mapper.bin_edges_[0, : mapper.n_edges_[0]]
    assert np.all(np.isfinite(edges))
    # every distinct value has its own bin, in order
    bins = mapper.transform(np.sort(np.unique(column))[:, None])[0]
    assert np.all(np.diff(bins.astype(int)) == 1)


def test_quantile_edges_near_the_float64_maximum_are_finite():
    # more distinct values than bins: the quantile path, with a pair straddling zero
    column = np.r_[np.linspace(-1.7e308, -1e308, 300), np.linspace(1e308, 1.7e308, 300)]
    mapper = BinMapper(max_bins=16).fit(column[:, None])
    edges = mapper.bin_edges_[0, : mapper.n_edges_[0]]
    assert np.all(np.isfinite(edges))
    assert np.all(np.diff(edges) > 0)


def test_predictions_near_the_float64_maximum_fall_on_the_right_side():
    values = np.array([1.7e308, 1e308, 0.0, -1e308, -1.7e308])
    Xb, yb = np.repeat(values, 20)[:, None], np.repeat([2.0, 1.0, 0.0, -1.0, -2.0], 20)
    model = TreeBoostRegressor(n_estimators=30, learning_rate=1.0, min_samples_leaf=1,
                               max_leaf_nodes=8).fit(Xb, yb)
    # atol: leaf values are float64 means of exact targets, one Newton step fits them
    np.testing.assert_allclose(model.predict(values[:, None]), [2, 1, 0, -1, -2], atol=1e-9)


@pytest.mark.parametrize("a", [1.0, np.nextafter(1.0, 2.0)])
def test_adjacent_floats_get_separate_bins(a):
    # (a + b) / 2 of neighbouring floats rounds to the even one: a, or b for the second
    b = np.nextafter(a, 2.0)
    mapper = BinMapper().fit(np.array([[a], [b]] * 5))
    assert mapper.transform(np.array([[a], [b]]))[0].tolist() == [0, 1]


@pytest.mark.parametrize("where", ["fit", "predict"])
def test_infinity_in_X_is_refused(where):
    # treeboost refuses +-inf as scikit-learn's HistGradientBoosting does (LightGBM
    # would bin it as a huge value): it is most often a division by zero upstream
    bad = X.copy()
    bad[3, 1] = np.inf
    if where == "fit":
        with pytest.raises(ValueError, match="X contains infinity"):
            TreeBoostRegressor(**FAST).fit(bad, Y_REG)
    else:
        model = TreeBoostRegressor(**FAST).fit(X, Y_REG)
        with pytest.raises(ValueError, match="X contains infinity"):
            model.predict(-bad)


# ---- save_model leaves nothing behind ----------------------------------------------------
@pytest.fixture(scope="module")
def fitted():
    return TreeBoostRegressor(**FAST).fit(X, Y_REG)


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_save_model_with_empty_path_is_refused(fitted, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="path is empty"):
        fitted.save_model("")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("target", "error", "message"), [
    ("missing/m.json", FileNotFoundError, "folder .* does not exist"),
    (".", IsADirectoryError, "is a directory"),
])
def test_save_model_to_a_bad_place_names_it(fitted, tmp_path, target, error, message):
    with pytest.raises(error, match=message):
        fitted.save_model(tmp_path / target)
    assert _leftovers(tmp_path) == []


def test_save_model_in_an_unwritable_folder_names_the_file(fitted, tmp_path, monkeypatch):
    real_open = os.open

    def refuse(path, *args, **kwargs):
        if str(path).endswith(".tmp"):
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, *args, **kwargs)

    # chmod cannot stop root, who runs these tests in containers: the refusal is simulated
    monkeypatch.setattr(os, "open", refuse)
    with pytest.raises(PermissionError, match=r"cannot write '.*m\.json' \(Permission"):
        fitted.save_model(tmp_path / "m.json")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("failure", [OSError(28, "No space left on device"),
                                     KeyboardInterrupt()])
def test_failure_while_writing_leaves_no_temporary_file(fitted, tmp_path, monkeypatch,
                                                        failure):
    (tmp_path / "m.json").write_text("old model")

    def fail(fd):
        raise failure

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(type(failure)):
        fitted.save_model(tmp_path / "m.json")
    assert _leftovers(tmp_path) == []
    assert (tmp_path / "m.json").read_text() == "old model"
