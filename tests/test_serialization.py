"""The JSON model file (SPEC §4): exact round trips, pickling, and clear errors on bad files."""

import hashlib
import json
import os
import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from treeboost import TreeBoostClassifier, TreeBoostRegressor, load_model
from treeboost._estimator_io import save_model
from treeboost.exceptions import ModelFormatError
from treeboost.serialization import ESTIMATOR_FIELDS, _canonical, load_booster, save_booster

N_ROWS, N_FEATURES = 300, 5
# one thread: these tests are about the file, and parallel regions only cost time on tiny data
ONE = {"n_jobs": 1}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N_ROWS, N_FEATURES))
    X[rng.random(X.shape) < 0.1] = np.nan  # missing values take their own branch
    signal = np.nan_to_num(X[:, 0]) - np.nan_to_num(X[:, 1])
    return X, signal + 0.3 * rng.normal(size=N_ROWS)


def _labels(signal, values):
    """Map a continuous signal to len(values) roughly balanced classes."""
    cuts = np.quantile(signal, np.linspace(0, 1, len(values) + 1)[1:-1])
    return np.asarray(values)[np.searchsorted(cuts, signal)]


# name -> (estimator, label values or None for regression)
CASES = {
    "regressor": (TreeBoostRegressor(n_estimators=20, random_state=0, **ONE), None),
    "huber": (TreeBoostRegressor(loss="huber", alpha=0.8, n_estimators=10, random_state=0, **ONE),
              None),
    "binary_int": (TreeBoostClassifier(n_estimators=20, random_state=0, **ONE), [3, 7]),
    "binary_uint8": (TreeBoostClassifier(n_estimators=3, **ONE), np.array([0, 9], np.uint8)),
    "binary_float32": (TreeBoostClassifier(n_estimators=3, **ONE),
                       np.array([-1.0, 2.0], np.float32)),
    "binary_object_str": (TreeBoostClassifier(n_estimators=3, **ONE),
                          np.array(["no", "yes"], dtype=object)),
    "binary_bool": (TreeBoostClassifier(n_estimators=5, random_state=0, **ONE), [False, True]),
    "exponential": (TreeBoostClassifier(loss="exponential", n_estimators=5, random_state=0, **ONE),
                    [-1.0, 2.0]),  # float labels (integral: scikit-learn wants classes)
    "multiclass_str": (TreeBoostClassifier(n_estimators=10, subsample=0.8, colsample_bynode=0.6,
                                           random_state=1, **ONE), ["cat", "dog", "emu"]),
    "early_stopping": (TreeBoostClassifier(n_estimators=30, learning_rate=0.5, n_iter_no_change=2,
                                           random_state=np.random.RandomState(3), **ONE),
                       ["lo", "mid", "hi"]),
}


@pytest.fixture(scope="module", params=list(CASES))
def fitted(request, data):
    X, signal = data
    estimator, values = CASES[request.param]
    y = signal if values is None else _labels(signal, values)
    return clone(estimator).fit(X, y), X


def _outputs(est, X):
    """Everything the estimator predicts, for exact comparison."""
    out = {"predict": est.predict(X), "staged": np.stack(list(est.staged_predict(X)))}
    if hasattr(est, "predict_proba"):
        out["proba"] = est.predict_proba(X)
        out["decision"] = est.decision_function(X)
    return out


def _assert_same(a, b, X):
    for key, value in _outputs(a, X).items():
        other = _outputs(b, X)[key]
        assert value.dtype == other.dtype, key
        assert np.array_equal(value, other), key  # bit-identical, not merely close
    for attr in ("n_features_in_", "n_iter_", "best_iteration_", "evals_result_"):
        assert getattr(a, attr) == getattr(b, attr), attr
    if hasattr(a, "classes_"):
        assert a.classes_.dtype == b.classes_.dtype
        assert np.array_equal(a.classes_, b.classes_)
        assert a.n_classes_ == b.n_classes_
    assert np.array_equal(a.feature_importances_, b.feature_importances_)


def test_round_trip_is_bit_identical(fitted, tmp_path):
    est, X = fitted
    path = tmp_path / "model.json"
    est.save_model(path)
    loaded = load_model(path)
    assert type(loaded) is type(est)
    _assert_same(est, loaded, X)
    # rows unlike the training rows: all missing, and far outside the bins
    X_odd = np.vstack([np.full(N_FEATURES, np.nan), np.full(N_FEATURES, 1e300),
                       np.full(N_FEATURES, -1e300)])
    _assert_same(est, loaded, X_odd)
    # saving the loaded model reproduces the file byte for byte
    loaded.save_model(tmp_path / "again.json")
    assert (tmp_path / "again.json").read_bytes() == path.read_bytes()


def test_early_stopping_round_trip_keeps_best_iteration(data, tmp_path):
    X, signal = data
    est = TreeBoostRegressor(n_estimators=30, learning_rate=0.5, n_iter_no_change=2,
                             random_state=0, **ONE).fit(X, signal)
    assert est.best_iteration_ is not None
    assert est.n_iter_ == est.best_iteration_ + 1
    save_model(est, tmp_path / "m.json")
    loaded = load_model(str(tmp_path / "m.json"))
    assert loaded.best_iteration_ == est.best_iteration_
    _assert_same(est, loaded, X)


def test_pickle_round_trip(fitted):
    est, X = fitted
    loaded = pickle.loads(pickle.dumps(est))
    _assert_same(est, loaded, X)


def test_feature_names_round_trip(data, tmp_path):
    pd = pytest.importorskip("pandas")
    X, signal = data
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(N_FEATURES)])
    est = TreeBoostRegressor(n_estimators=5, **ONE).fit(df, signal)
    est.save_model(tmp_path / "m.json")
    loaded = load_model(tmp_path / "m.json")
    assert list(loaded.feature_names_in_) == list(df.columns)
    assert np.array_equal(loaded.predict(df), est.predict(df))
    with pytest.raises(ValueError, match="feature names"):
        loaded.predict(df.rename(columns={"f0": "other"}))


def _raise_on_constant(name):
    raise AssertionError(f"non-standard JSON constant {name}")


def test_file_is_documented_strict_json(fitted, tmp_path):
    est, _ = fitted
    path = tmp_path / "m.json"
    est.save_model(path)
    doc = json.loads(path.read_text(encoding="utf-8"), parse_constant=_raise_on_constant)
    assert doc["format"] == "treeboost-model"
    assert doc["format_version"] == 1
    assert doc["estimator"] == type(est).__name__
    assert doc["n_iter"] == len(doc["trees"]) == est.n_iter_
    assert doc["params"] == {k: v for k, v in est.get_params().items()
                             if not isinstance(v, np.random.RandomState)} | (
        {"random_state": None} if isinstance(est.random_state, np.random.RandomState) else {})
    checksum = doc.pop("checksum")
    assert checksum == hashlib.sha256(_canonical(doc)).hexdigest()
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]  # no temp file left


def test_save_unfitted_raises(tmp_path):
    with pytest.raises(NotFittedError):
        TreeBoostRegressor().save_model(tmp_path / "m.json")
    assert not os.listdir(tmp_path)


def test_save_refuses_non_finite_numbers(data, tmp_path):
    X, signal = data
    est = TreeBoostRegressor(n_estimators=2, **ONE).fit(X, signal)
    path = tmp_path / "m.json"
    path.write_text("previous model")
    est._booster.trees[1][0].value[0] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        est.save_model(path)
    assert path.read_text() == "previous model"  # the old file is untouched
    assert os.listdir(tmp_path) == ["m.json"]


# ---- damaged and foreign files -----------------------------------------------------------
@pytest.fixture(scope="module")
def saved(data, tmp_path_factory):
    X, signal = data
    y = _labels(signal, [0, 1, 2])
    est = TreeBoostClassifier(n_estimators=3, random_state=0, **ONE).fit(X, y)
    path = tmp_path_factory.mktemp("saved") / "model.json"
    est.save_model(path)
    return path.read_text(encoding="utf-8")


def _load_text(tmp_path, text):
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    return load_model(path)


def _resigned(text, edit):
    """The document after ``edit(doc)``, with a valid checksum: only validation can catch it."""
    doc = json.loads(text)
    doc.pop("checksum")
    edit(doc)
    doc["checksum"] = hashlib.sha256(_canonical(doc)).hexdigest()
    return json.dumps(doc)


def test_truncated_file(saved, tmp_path):
    for cut in (len(saved) // 2, len(saved) - 3, 1):
        with pytest.raises(ModelFormatError, match="not valid JSON.*truncated"):
            _load_text(tmp_path, saved[:cut])


def test_edited_number_fails_checksum(saved, tmp_path):
    leaf_values = json.loads(saved)["trees"][0][0]["value"]
    old = next(v for v in map(json.dumps, leaf_values) if saved.count(v) == 1)
    edited = saved.replace(old, json.dumps(float(old) + 0.5))
    with pytest.raises(ModelFormatError, match="checksum mismatch.*modified or corrupted"):
        _load_text(tmp_path, edited)


def test_unsupported_version(saved, tmp_path):
    text = saved.replace('"format_version": 1', '"format_version": 999')
    with pytest.raises(ModelFormatError, match="unsupported format_version 999.*reads "
                                               "format_version 1"):
        _load_text(tmp_path, text)


@pytest.mark.parametrize("content", ["hello, I am not JSON", "\x00\x01\x02", ""])
def test_not_json(content, tmp_path):
    with pytest.raises(ModelFormatError, match="not valid JSON"):
        _load_text(tmp_path, content)


def test_binary_file(tmp_path):
    path = tmp_path / "model.bin"
    path.write_bytes(pickle.dumps({"format": "treeboost-model"}))  # never unpickled
    with pytest.raises(ModelFormatError, match="not valid JSON"):
        load_model(path)


@pytest.mark.parametrize("content", [
    '{"learner": {"gradient_booster": {}}, "version": [2, 0, 0]}',  # an XGBoost model
    '{"format": "lightgbm", "format_version": 1}',
    "[1, 2, 3]",
])
def test_foreign_json(content, tmp_path):
    with pytest.raises(ModelFormatError, match="not a treeboost model file"):
        _load_text(tmp_path, content)


def test_nan_constant_is_refused(saved, tmp_path):
    text = saved.replace('"best_iteration": null', '"best_iteration": NaN')
    with pytest.raises(ModelFormatError, match="non-standard JSON constant NaN"):
        _load_text(tmp_path, text)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.pop("trees"), r"missing keys \['trees'\]"),
    (lambda d: d.update(estimator="RandomForest"), "unknown estimator 'RandomForest'"),
    (lambda d: d["loss"].update(name="hinge"), "unknown or mismatched loss 'hinge'"),
    (lambda d: d["params"].update(learning_rate=-1), "invalid parameter: learning_rate=-1"),
    (lambda d: d["params"].update(colour="red"), r"unknown TreeBoostClassifier parameters"),
    (lambda d: d["trees"][0][0]["value"].pop(), "inconsistent lengths"),
    (lambda d: d["trees"][0][0]["gain"].__setitem__(0, "big"), "gain must be a list of floats"),
    (lambda d: d["trees"][0][0]["left"].__setitem__(0, 0), "not after their parent"),
    (lambda d: d["trees"][0][0]["left"].__setitem__(0, 10_000), "out of range"),
    (lambda d: d["trees"][0][0]["feature"].__setitem__(0, N_FEATURES),
     r"feature indices out of range \[0, 5\)"),
    (lambda d: d["trees"][0].pop(), "stage 0 must be a list of 3 trees"),
    (lambda d: d.update(n_features=4), "one entry per feature"),
    (lambda d: d["classes"].update(values=[2, 1, 0]), "sorted distinct labels"),
    (lambda d: d["classes"].update(kind="complex"), "kind='complex'"),
    (lambda d: d.update(init_score=[0.0]), "init_score has 1 values"),
    (lambda d: d.update(n_iter=99), "n_iter=99"),
    (lambda d: d.update(best_iteration=7), "best_iteration=7"),
])
def test_invalid_content_is_refused(saved, tmp_path, edit, message):
    with pytest.raises(ModelFormatError, match=message):
        _load_text(tmp_path, _resigned(saved, edit))


def test_error_names_the_file(tmp_path):
    with pytest.raises(ModelFormatError, match="bad.json: not valid JSON"):
        _load_text(tmp_path, "{")
    with pytest.raises(FileNotFoundError):
        load_model(tmp_path / "missing.json")


# ---- the engine level: a Booster alone ----------------------------------------------------
def test_booster_round_trip_without_estimator(fitted, tmp_path):
    est, X = fitted
    path = tmp_path / "booster.json"
    save_booster(est.booster_, path)
    booster = load_booster(path)
    assert np.array_equal(booster.predict_raw(X), est.booster_.predict_raw(X))  # bit for bit
    assert booster.seed == est.booster_.seed
    assert booster.params.boosting == est.booster_.params.boosting
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["estimator"] is None
    assert doc["params"]["max_bins"] == est.max_bins
    save_booster(booster, tmp_path / "again.json")
    assert (tmp_path / "again.json").read_bytes() == path.read_bytes()
    with pytest.raises(ModelFormatError, match="booster.json: .*Booster without an estimator"):
        load_model(path)


def test_estimator_file_loads_as_booster(fitted, tmp_path):
    est, X = fitted
    est.save_model(tmp_path / "m.json")
    booster, fields = load_booster(tmp_path / "m.json", return_metadata=True)
    assert np.array_equal(booster.predict_raw(X), est.booster_.predict_raw(X))
    assert fields["estimator"] == type(est).__name__
    assert set(fields) == set(ESTIMATOR_FIELDS)


def test_booster_metadata_must_have_the_estimator_fields(fitted, tmp_path):
    est, _ = fitted
    with pytest.raises(ValueError, match="estimator metadata must have the keys"):
        save_booster(est.booster_, tmp_path / "m.json", estimator={"estimator": "X"})
    assert not os.listdir(tmp_path)
