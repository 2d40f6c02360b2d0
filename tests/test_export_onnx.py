"""Tests of treeboost.export.to_onnx and ``treeboost export``: onnxruntime against treeboost.

Every comparison feeds float32 inputs to both: the exported thresholds are rounded
toward -inf (``float32_threshold``) so each row takes the same path in every tree, and
what remains is onnxruntime's float32 leaf values and sums. Tolerance 1e-5: float32
carries about 6e-8 relative per rounding, and a 50-tree sum plus F0 and a link stays
well under 1e-5 (relative to max(1, |score|)); a routing difference would show as a
whole leaf value, orders of magnitude more. Real data sets come from
../shared/datasets (skipped when that folder is absent).
"""

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from treeboost import (  # noqa: E402
    Formula,
    TreeBoostClassifier,
    TreeBoostRanker,
    TreeBoostRegressor,
)
from treeboost.booster import Booster  # noqa: E402
from treeboost.cli import main  # noqa: E402
from treeboost.dataset import frame_to_array  # noqa: E402
from treeboost.export import float32_threshold, to_onnx  # noqa: E402

SHARED_DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
needs_shared = pytest.mark.skipif(not SHARED_DATASETS.is_dir(),
                                  reason=f"{SHARED_DATASETS} not found")
#: see the module docstring
TOL = 1e-5


def _session(onnx_model):
    return ort.InferenceSession(onnx_model.SerializeToString(),
                                providers=["CPUExecutionProvider"])


def _run(model, X32, **kw):
    return _session(to_onnx(model, **kw)).run(None, {"input": X32})


def _close(got, want):
    """Max difference relative to max(1, |want|), asserted under TOL; returned for reports."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape
    diff = float(np.max(np.abs(got - want) / np.maximum(1.0, np.abs(want)), initial=0.0))
    assert diff <= TOL, diff
    return diff


def _f32(X):
    """X as float32, and the same values as float64 for treeboost."""
    X32 = np.ascontiguousarray(X, dtype=np.float32)
    return X32, X32.astype(np.float64)


def _check_regressor(model, X, frame=None):
    """``frame``: what treeboost reads (a frame of X's float32 values), default X."""
    X32, X64 = _f32(X)
    (got,) = _run(model, X32)
    return _close(got[:, 0], model.predict(X64 if frame is None else frame))


def _check_classifier(model, X, frame=None):
    X32, X64 = _f32(X)
    X64 = X64 if frame is None else frame
    label, proba = _run(model, X32)
    want = model.predict_proba(X64)
    raw = model.decision_function(X64)
    # labels agree except where float32 sums may flip a near-tie of the raw scores
    margin = np.abs(raw) if raw.ndim == 1 else np.abs(np.diff(np.sort(raw, 1)[:, -2:], 1))[:, 0]
    clear = margin.ravel() > 1e-4
    np.testing.assert_array_equal(label[clear], model.predict(X64)[clear])
    return _close(proba, want)


def _data(n=400, seed=0, nan=0.1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    X[rng.random(X.shape) < nan] = np.nan
    X[:, 4] = rng.integers(0, 7, n)  # integer codes of a categorical feature
    X[rng.random(n) < 0.05, 4] = np.nan
    signal = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) + np.isin(X[:, 4], [1, 4])
    return X, signal, rng


# ---- float32 thresholds ---------------------------------------------------------------------
def test_float32_threshold_property():
    rng = np.random.default_rng(0)
    thresholds = np.concatenate([rng.normal(size=300) * 10.0 ** rng.integers(-30, 30, 300),
                                 [0.1, -0.1, 0.0, -0.0, 1e39, -1e39, 3.4028235e38,
                                  np.float32(0.1).astype(np.float64), 2.0 ** -140]])
    with np.errstate(over="ignore"):  # stepping past float32's largest value gives inf
        for t in thresholds:
            _check_threshold(t)


def _check_threshold(t):
    f = float32_threshold(t)
    assert f.dtype == np.float32
    # every float32 near f and near t's rounding, both sides
    centre = np.array([f, np.float32(t)], dtype=np.float32)
    xs = [centre]
    for direction in (np.float32(np.inf), np.float32(-np.inf)):
        x = centre.copy()
        for _ in range(3):
            x = np.nextafter(x, direction)
            xs.append(x)
    xs = np.concatenate(xs)
    xs = xs[np.isfinite(xs)]
    np.testing.assert_array_equal(xs <= f, xs.astype(np.float64) <= t)
    # the largest such: the next float32 up is above t
    assert float(np.nextafter(f, np.float32(np.inf))) > t


def test_rounded_threshold_routes_like_treeboost():
    # x = float32(0.1) lies above the float64 threshold 0.1 but equals float32(0.1):
    # a nearest-rounded threshold would send it left, treeboost sends it right
    X = np.array([[0.05], [0.1], [0.2], [0.3]] * 20)
    y = np.array([0.0, 0.0, 1.0, 1.0] * 20)
    model = TreeBoostRegressor(n_estimators=1, learning_rate=1.0, min_samples_leaf=1,
                               max_leaf_nodes=2).fit(X, y)
    X32 = np.float32([[0.1], [np.float32(0.1)], [np.nextafter(np.float32(0.1), 1)]])
    _check_regressor(model, X32)


# ---- synthetic models -----------------------------------------------------------------------
def test_regression_with_nan():
    X, signal, rng = _data()
    model = TreeBoostRegressor(n_estimators=40, categorical_features=[4]).fit(
        X, signal + 0.1 * rng.normal(size=len(signal)))
    _check_regressor(model, X)


def test_binary_numeric_labels():
    X, signal, _ = _data(seed=1)
    y = np.where(signal > 0.5, 7, 3)
    model = TreeBoostClassifier(n_estimators=30).fit(X, y)
    X32, _ = _f32(X)
    label, _ = _run(model, X32)
    assert label.dtype == np.int64
    _check_classifier(model, X)


def test_binary_string_labels_and_exponential():
    X, signal, _ = _data(seed=2)
    y = np.where(signal > 0.5, "yes", "no")
    for loss in ("log_loss", "exponential"):
        model = TreeBoostClassifier(n_estimators=30, loss=loss).fit(X, y)
        _check_classifier(model, X)


def test_multiclass():
    X, signal, _ = _data(seed=3)
    y = np.digitize(signal, [-0.5, 0.5, 1.5])
    model = TreeBoostClassifier(n_estimators=20, categorical_features=[4]).fit(X, y)
    X32, _ = _f32(X)
    _, proba = _run(model, X32)
    assert proba.shape == (len(X), 4)
    _check_classifier(model, X)


@pytest.mark.parametrize("loss", ["poisson", "gamma", "tweedie"])
def test_log_link(loss):
    X, signal, rng = _data(seed=4)
    y = rng.poisson(np.exp(0.5 * signal)) + (0.5 if loss == "gamma" else 0.0)
    model = TreeBoostRegressor(n_estimators=30, loss=loss).fit(X, y)
    _check_regressor(model, X)


def _unseen_rows(X):
    Xt = X[:40].copy()
    Xt[:, 4] = [7, 8, -1, 2.5, 100, np.nan, 0, 1, 2, 3] * 4  # unseen, missing, seen
    return np.vstack([X, Xt])


def test_categorical_unseen_and_nan():
    X, signal, rng = _data(seed=5)
    X[rng.random(len(X)) < 0.3, 4] = np.nan
    # NaN rows of the categorical feature form a group of their own: some splits send
    # missing (and unseen) categories left, the chain then tests the right side
    y = np.where(np.isnan(X[:, 4]), 3.0, signal) + 0.1 * rng.normal(size=len(X))
    model = TreeBoostRegressor(n_estimators=30, max_leaf_nodes=8,
                               categorical_features=[4]).fit(X, y)
    splits = [n for s in model.booster_.dump_model()["trees"] for t in s for n in t["nodes"]
              if n["split_type"] == "categorical"]
    assert {n["missing_go_left"] for n in splits} == {True, False}
    _check_regressor(model, _unseen_rows(X))


def test_categorical_missing_left_with_categories_left():
    # training rarely sends missing left beside categories; set bit 255 (the missing bin,
    # model_view) of every other categorical split so both sides are non-empty
    X, signal, rng = _data(seed=14)
    model = TreeBoostRegressor(n_estimators=10, max_leaf_nodes=8,
                               categorical_features=[4]).fit(X, signal)
    booster = model.booster_
    for stage in booster.trees:
        for tree in stage:
            for node in np.flatnonzero(tree.is_categorical & (tree.left >= 0))[::2]:
                tree.cat_bitset[node, 7] |= np.uint32(1 << 31)
    booster._packed.clear()  # the packed prediction arrays are built from the trees
    splits = [n for s in booster.dump_model()["trees"] for t in s for n in t["nodes"]
              if n["split_type"] == "categorical"]
    assert any(n["missing_go_left"] and n["categories_left"] for n in splits)
    _check_regressor(model, _unseen_rows(X))


def test_frame_category_column_takes_codes():
    pd = pytest.importorskip("pandas")
    X, signal, rng = _data(seed=6)
    X = X.astype(np.float32).astype(np.float64)  # the values ONNX's float32 input holds
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1],
                          "colour": pd.Categorical(np.array(list("rgbcmyk"))[
                              np.nan_to_num(X[:, 4]).astype(int)])})
    model = TreeBoostRegressor(n_estimators=30).fit(frame, signal)
    codes, _ = frame_to_array(frame, model.pandas_categories_)
    X32, X64 = _f32(codes)
    (got,) = _run(model, X32)
    _close(got[:, 0], model.predict(frame))


def test_dart_and_rf():
    X, signal, _ = _data(seed=7)
    for params in (dict(boosting="dart", n_estimators=30),
                   dict(boosting="rf", n_estimators=20, subsample=0.8)):
        model = TreeBoostRegressor(**params).fit(X, signal)
        _check_regressor(model, X)


def test_booster_raw_scores():
    X, signal, _ = _data(seed=8)
    y = np.digitize(signal, [0.0, 1.0]).astype(float)
    booster = TreeBoostClassifier(n_estimators=20).fit(X, y).booster_
    assert isinstance(booster, Booster)
    X32, X64 = _f32(X)
    (raw,) = _run(booster, X32)
    assert raw.shape == (len(X), 3)
    _close(raw, booster.predict_raw(X64))


def test_ranker():
    X, signal, rng = _data(seed=9)
    y = np.digitize(signal, [0.0, 1.0])
    model = TreeBoostRanker(n_estimators=20).fit(X, y, group=[40] * 10)
    _check_regressor(model, X)


# ---- refusals -------------------------------------------------------------------------------
def test_user_loss_refused_naming_it():
    X, signal, _ = _data(n=200, seed=10)
    model = TreeBoostRegressor(n_estimators=5, loss=Formula("(y - f)**2")).fit(X, signal)
    with pytest.raises(ValueError, match="loss 'formula'"):
        to_onnx(model)
    X32, X64 = _f32(X)
    (raw,) = _run(model.booster_, X32)  # its raw scores need no link: they export
    _close(raw, model.booster_.predict_raw(X64))


def test_bad_arguments():
    with pytest.raises(TypeError, match="model=str"):
        to_onnx("model")
    X, signal, _ = _data(n=100, seed=11)
    model = TreeBoostRegressor(n_estimators=2).fit(X, signal)
    with pytest.raises(ValueError, match="target_opset=5"):
        to_onnx(model, target_opset=5)
    assert to_onnx(model, target_opset=13).opset_import[0].version == 13


# ---- real data sets -------------------------------------------------------------------------
def _load(name, **kw):
    from treeboost.datasets import load

    return load(SHARED_DATASETS / name, **kw)


@needs_shared
def test_real_binary_nan_categorical():
    X, y = _load("credit-a.arff")  # 67 missing values, 9 category columns, labels +/-
    assert X.isna().to_numpy().any()
    numeric = X.select_dtypes("number").columns
    # the values ONNX's float32 input holds, so that treeboost reads the same numbers
    X[numeric] = X[numeric].astype(np.float32).astype(np.float64)
    model = TreeBoostClassifier(n_estimators=50).fit(X, y)
    codes, _ = frame_to_array(X, model.pandas_categories_)
    X32, _ = _f32(codes)
    label, proba = _run(model, X32)
    _close(proba, model.predict_proba(X))
    assert (label == model.predict(X)).mean() > 0.99


@needs_shared
def test_real_multiclass():
    X, y = _load("vehicle.arff")
    X = X.astype(np.float32).astype(np.float64)  # the values ONNX's float32 input holds
    model = TreeBoostClassifier(n_estimators=20).fit(X, y)
    _check_classifier(model, X.to_numpy(), X)


@needs_shared
def test_real_regression():
    X, y = _load("sklearn_diabetes.csv", target="target")
    X = X.astype(np.float32).astype(np.float64)  # the values ONNX's float32 input holds
    model = TreeBoostRegressor(n_estimators=50).fit(X, y)
    _check_regressor(model, X.to_numpy(), X)


@needs_shared
def test_real_ranking():
    if not (SHARED_DATASETS / "ranking" / "rank.train").is_file():
        pytest.skip("ranking example not found")
    X, y, group = _load("ranking/rank.train", return_group=True)
    model = TreeBoostRanker(n_estimators=30).fit(X, y, group=group)
    Xt = X[:2000].toarray() if hasattr(X, "toarray") else np.asarray(X)[:2000]
    _check_regressor(model, Xt)


# ---- command line ---------------------------------------------------------------------------
def test_cli_export_round_trip(tmp_path, capsys):
    X, signal, _ = _data(seed=12)
    y = np.digitize(signal, [0.0, 1.0])
    model = TreeBoostClassifier(n_estimators=10, categorical_features=[4]).fit(X, y)
    path, out = tmp_path / "m.json", tmp_path / "m.onnx"
    model.save_model(path)
    assert main(["export", str(path), "--to", "onnx", str(out)]) == 0
    X32, X64 = _f32(X)
    label, proba = _session(onnx.load(out)).run(None, {"input": X32})
    _close(proba, model.predict_proba(X64))
    # an existing OUT is kept; a bad model file is one line
    assert main(["export", str(path), "--to", "onnx", str(out)]) == 1
    assert "exists" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert main(["export", str(bad), "--to", "onnx", str(tmp_path / "b.onnx")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("treeboost export: error:")
    assert err.count("\n") == 1
    assert main(["export", str(tmp_path / "none.json"), "--to", "onnx",
                 str(tmp_path / "c.onnx")]) == 1
    assert "no such model file" in capsys.readouterr().err


def test_cli_export_booster_file(tmp_path):
    X, signal, _ = _data(seed=13)
    booster = TreeBoostRegressor(n_estimators=10, loss="poisson").fit(
        X, np.exp(0.3 * signal)).booster_
    path, out = tmp_path / "b.json", tmp_path / "b.onnx"
    booster.save_model(path)
    assert main(["export", str(path), "--to", "onnx", str(out)]) == 0
    X32, X64 = _f32(X)
    (raw,) = _session(onnx.load(out)).run(None, {"input": X32})
    _close(raw, booster.predict_raw(X64))
