"""The estimators keep scikit-learn's protocol without importing scikit-learn (issue 36).

A fit and a prediction on NumPy arrays must not import scikit-learn, SciPy's
special functions or pandas (a second of a warm first fit, measured); the checks
that replace scikit-learn's on those arrays must return what scikit-learn's
return, and hand everything else to scikit-learn; the protocol (parameters,
clone, repr, tags, metadata routing, NotFittedError) must behave as
``BaseEstimator``'s. scikit-learn's own estimator checks are
``test_estimator_checks.py``.
"""

import json
import subprocess
import sys

import numpy as np
import pytest
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.exceptions import NotFittedError as SklearnNotFittedError
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.validation import _check_sample_weight, check_array, check_X_y

from treeboost import TreeBoostClassifier, TreeBoostRanker, TreeBoostRegressor
from treeboost._input import _ARRAY_CHECKS, plain_matrix, plain_target, plain_weights
from treeboost._validation import encode_labels
from treeboost.exceptions import NotFittedError, TreeboostError

FAST = dict(n_estimators=5, max_leaf_nodes=4)


def test_fit_train_and_predict_on_arrays_import_no_sklearn():
    code = """
import json, sys
import numpy as np
from treeboost import TreeBoostClassifier, TreeBoostRegressor
rng = np.random.default_rng(0)
X = rng.normal(size=(300, 4))
X[::7, 1] = np.nan
y = (X[:, 0] > 0).astype(int)
clf = TreeBoostClassifier(n_estimators=5, random_state=0).fit(X, y, sample_weight=np.ones(300))
clf.predict(X)
TreeBoostRegressor(n_estimators=5).fit(X.astype(np.float32), X[:, 0]).predict(X)
import treeboost
booster = treeboost.train({"loss": "log_loss", "n_estimators": 5}, treeboost.Dataset(X, y))
booster.predict_raw(X)
print(json.dumps(sorted(m for m in sys.modules
                        if m.split(".")[0] in ("sklearn", "pandas") or m == "scipy.special"
                        or m == "scipy.sparse")))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_fit_and_predict_on_a_frame_import_no_sklearn():
    pytest.importorskip("pandas")
    code = """
import json, sys
import numpy as np
import pandas as pd
from treeboost import TreeBoostClassifier
rng = np.random.default_rng(0)
X = pd.DataFrame({"a": rng.normal(size=300), "b": rng.integers(0, 5, size=300),
                  "c": pd.Categorical(rng.choice(list("xyz"), size=300))})
y = pd.Series(X["a"] > 0)
clf = TreeBoostClassifier(n_estimators=5).fit(X, y)
clf.predict(X)
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] == "sklearn")))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_a_fit_on_a_frame_records_what_sklearn_records():
    pd = pytest.importorskip("pandas")
    from sklearn.utils.validation import _get_feature_names

    rng = np.random.default_rng(5)
    X = pd.DataFrame({"a": rng.normal(size=120), "b": rng.integers(0, 4, size=120),
                      "c": pd.Categorical(rng.choice(list("xyz"), size=120))})
    y = pd.Series(X["a"] + (X["c"] == "y") + rng.normal(scale=0.1, size=120))
    est = TreeBoostRegressor(**FAST).fit(X, y)
    np.testing.assert_array_equal(est.feature_names_in_, _get_feature_names(X))
    assert est.feature_names_in_.dtype == object
    assert est.n_features_in_ == 3
    assert est.pandas_categories_ == {2: ["x", "y", "z"]}
    # the same model as the frame read through scikit-learn's checks (a nullable y)
    slow = TreeBoostRegressor(**FAST).fit(X, y.astype("Float64"))
    np.testing.assert_array_equal(est.predict(X), slow.predict(X))
    np.testing.assert_array_equal(slow.feature_names_in_, est.feature_names_in_)
    with pytest.raises(TypeError, match="Feature names are only supported if all"):
        TreeBoostRegressor(**FAST).fit(X.set_axis(["a", 1, "c"], axis=1), y)


_MATRICES = {
    "float64": np.arange(12.0).reshape(4, 3),
    "float32": np.arange(12.0, dtype=np.float32).reshape(4, 3),
    "float16": np.arange(12.0, dtype=np.float16).reshape(4, 3),
    "int": np.arange(12).reshape(4, 3),
    "uint8": np.arange(12, dtype=np.uint8).reshape(4, 3),
    "bool": np.arange(12).reshape(4, 3) % 2 == 0,
    "fortran": np.asfortranarray(np.arange(12.0).reshape(4, 3)),
    "strided": np.arange(24.0).reshape(4, 6)[:, ::2],
    "nan": np.where(np.arange(12).reshape(4, 3) % 5 == 0, np.nan, 1.0),
    "big-endian": np.arange(12.0).reshape(4, 3).astype(">f8"),
}


@pytest.mark.parametrize("name", sorted(_MATRICES))
def test_plain_matrix_is_check_array(name):
    X = _MATRICES[name]
    ours = plain_matrix(X)
    theirs = check_array(X, **_ARRAY_CHECKS)
    assert ours is not None
    assert ours.dtype == theirs.dtype
    assert ours.flags.c_contiguous
    np.testing.assert_array_equal(ours, theirs)
    assert (ours is X) == (theirs is X)  # no copy where scikit-learn makes none


@pytest.mark.parametrize("X", [
    np.array([[1.0, np.inf]]), np.ones((1, 3)), np.ones((3, 0)), np.ones(3),
    np.ones((2, 2, 2)), np.ones((2, 2), dtype=complex), np.array([["a", "b"]]),
    np.ones((2, 2), dtype=object), [[1.0, 2.0]], np.ma.masked_array(np.ones((2, 2))),
], ids=["inf", "one-row", "no-column", "1-D", "3-D", "complex", "text", "object", "list",
        "subclass"])
def test_plain_matrix_leaves_the_rest_to_check_array(X):
    assert plain_matrix(X, ensure_min_samples=2) is None


@pytest.mark.parametrize("y", [np.arange(5.0), np.arange(5), np.arange(5) % 2 == 0,
                               np.array(list("abcab")), np.arange(10.0)[::2]],
                         ids=["float", "int", "bool", "text", "strided"])
def test_plain_target_is_check_X_y(y):
    X = np.ones((5, 2))
    ours = plain_target(y, 5, "biufU")
    _, theirs = check_X_y(X, y, dtype=None)
    assert ours is not None
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("y", [np.array([1.0, np.nan]), np.ones((2, 1)), np.ones(3), [1, 2],
                               np.array([1, 2], dtype=object)],
                         ids=["nan", "column", "length", "list", "object"])
def test_plain_target_leaves_the_rest_to_check_X_y(y):
    assert plain_target(y, 2, "biufU") is None


@pytest.mark.parametrize("w", [None, np.arange(1.0, 5.0), np.array([0, 1, 2, 3]),
                               np.arange(8.0)[::2], np.arange(4.0, dtype=np.float32)],
                         ids=["none", "float", "int", "strided", "float32"])
def test_plain_weights_are_check_sample_weight(w):
    X = np.ones((4, 2))
    ours = plain_weights(w, 4)
    theirs = _check_sample_weight(w, X, dtype=np.float64, ensure_non_negative=True)
    assert ours.dtype == theirs.dtype == np.float64
    assert ours.flags.c_contiguous
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("w", [np.array([1.0, -1.0]), np.array([1.0, np.nan]), np.zeros(2),
                               np.ones(3), 2.0, [1.0, 1.0]],
                         ids=["negative", "nan", "zeros", "length", "scalar", "list"])
def test_plain_weights_leave_the_rest_to_check_sample_weight(w):
    assert plain_weights(w, 2) is None


@pytest.mark.parametrize("y", [np.array([3, 1, 2, 3]), np.array([True, False, True]),
                               np.array(["b", "a", "c", "a"]), np.array([2.0, -1.0, 2.0]),
                               np.array(["b", "a", "b"], dtype=object)],
                         ids=["int", "bool", "text", "whole-float", "object"])
def test_encode_labels_is_label_encoder(y):
    classes, codes = encode_labels(y)
    encoder = LabelEncoder().fit(y)
    np.testing.assert_array_equal(classes, encoder.classes_)
    assert classes.dtype == encoder.classes_.dtype
    np.testing.assert_array_equal(codes, encoder.transform(y))


def test_encode_labels_refuses_a_continuous_target_as_sklearn():
    with pytest.raises(ValueError, match="Unknown label type"):
        encode_labels(np.array([0.5, 1.0, 2.0]))


def test_a_fit_on_arrays_equals_a_fit_on_lists():
    # the array takes the checks of _input, the lists scikit-learn's
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 3))
    y = np.where(X[:, 0] + rng.normal(size=200) > 0, "yes", "no")
    w = rng.uniform(0.5, 2.0, size=200)
    fast = TreeBoostClassifier(**FAST).fit(X, y, sample_weight=w)
    slow = TreeBoostClassifier(**FAST).fit(X.tolist(), y.tolist(), sample_weight=w.tolist())
    np.testing.assert_array_equal(fast.classes_, slow.classes_)
    np.testing.assert_array_equal(fast.predict_proba(X), slow.predict_proba(X.tolist()))
    assert fast.n_features_in_ == slow.n_features_in_ == 3


def test_fit_on_arrays_forgets_the_feature_names_of_a_frame_fit():
    pd = pytest.importorskip("pandas")
    X = np.random.default_rng(2).normal(size=(50, 2))
    y = X[:, 0]
    est = TreeBoostRegressor(**FAST).fit(pd.DataFrame(X, columns=["a", "b"]), y)
    assert list(est.feature_names_in_) == ["a", "b"]
    est.fit(X, y)
    assert not hasattr(est, "feature_names_in_")


def test_get_set_params_and_clone():
    est = TreeBoostClassifier(learning_rate=0.05, max_leaf_nodes=7)
    params = est.get_params()
    assert params["learning_rate"] == 0.05
    assert params["max_leaf_nodes"] == 7
    assert list(params) == sorted(params)
    assert est.set_params(n_estimators=3) is est
    assert est.n_estimators == 3
    with pytest.raises(ValueError, match="Invalid parameter 'leaves' for estimator"):
        est.set_params(leaves=3)
    copy = clone(est)
    assert copy is not est
    assert copy.get_params() == est.get_params()


def test_repr_shows_the_changed_parameters_and_reads_back():
    assert repr(TreeBoostRegressor()) == "TreeBoostRegressor()"
    est = TreeBoostClassifier(learning_rate=0.05, n_estimators=300, max_leaf_nodes=15,
                              subsample=0.8, colsample_bytree=0.5, reg_lambda=2.0,
                              random_state=3, class_weight="balanced")
    text = repr(est)
    assert all(len(line) <= 79 for line in text.splitlines())
    assert "\n" in text
    back = eval(text, {"TreeBoostClassifier": TreeBoostClassifier})  # noqa: S307
    assert back.get_params() == est.get_params()
    assert "max_bins" not in text  # a default is not shown


def test_tags_as_sklearn_mixins_give():
    assert is_classifier(TreeBoostClassifier())
    assert not is_regressor(TreeBoostClassifier())
    assert is_regressor(TreeBoostRegressor())
    assert not is_classifier(TreeBoostRegressor())
    tags = TreeBoostRegressor().__sklearn_tags__()
    assert tags.input_tags.allow_nan
    assert tags.target_tags.required
    assert tags.target_tags.multi_output
    assert TreeBoostRanker().__sklearn_tags__().estimator_type is None


def test_score_is_accuracy_and_r2():
    from sklearn.metrics import accuracy_score, r2_score

    rng = np.random.default_rng(3)
    X = rng.normal(size=(100, 2))
    clf = TreeBoostClassifier(**FAST).fit(X, X[:, 0] > 0)
    assert clf.score(X, X[:, 0] > 0) == accuracy_score(X[:, 0] > 0, clf.predict(X))
    reg = TreeBoostRegressor(**FAST).fit(X, X[:, 1])
    assert reg.score(X, X[:, 1]) == pytest.approx(r2_score(X[:, 1], reg.predict(X)))


def test_not_fitted_error_is_sklearn_s():
    with pytest.raises(NotFittedError, match="This TreeBoostClassifier instance is not fitted"):
        TreeBoostClassifier().predict(np.ones((2, 2)))
    assert issubclass(NotFittedError, SklearnNotFittedError)
    assert issubclass(NotFittedError, TreeboostError)


def test_metadata_routing_sends_sample_weight():
    import sklearn
    from sklearn.model_selection import cross_validate

    rng = np.random.default_rng(4)
    X = rng.normal(size=(120, 3))
    y = X[:, 0] + rng.normal(scale=0.1, size=120)
    w = rng.uniform(0.1, 3.0, size=120)
    with sklearn.config_context(enable_metadata_routing=True):
        est = TreeBoostRegressor(**FAST).set_fit_request(sample_weight=True) \
            .set_score_request(sample_weight=False)
        routed = cross_validate(est, X, y, cv=2, params={"sample_weight": w},
                                return_estimator=True)["estimator"]
        copy = clone(est)
        assert copy.get_metadata_routing().fit.requests["sample_weight"] is True
    halves = np.arange(120) >= 60  # cross_validate's first fold trains on the second half
    direct = TreeBoostRegressor(**FAST).fit(X[halves], y[halves], sample_weight=w[halves])
    np.testing.assert_array_equal(routed[0].predict(X), direct.predict(X))
    unweighted = TreeBoostRegressor(**FAST).fit(X[halves], y[halves])
    assert not np.array_equal(unweighted.predict(X), direct.predict(X))
    with pytest.raises(TypeError, match="Unexpected args"):
        with sklearn.config_context(enable_metadata_routing=True):
            TreeBoostRegressor().set_fit_request(weights=True)


def test_a_notebook_shows_sklearn_s_diagram():
    import sklearn

    bundle = TreeBoostClassifier(n_estimators=7)._repr_mimebundle_()
    assert bundle["text/plain"] == "TreeBoostClassifier(n_estimators=7)"
    assert "TreeBoostClassifier" in bundle["text/html"]
    assert "n_estimators" in bundle["text/html"]
    with sklearn.config_context(display="text"):
        assert set(TreeBoostClassifier()._repr_mimebundle_()) == {"text/plain"}


def test_scikit_learn_s_meta_estimators_and_inspection_take_them():
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.ensemble import StackingClassifier, VotingRegressor
    from sklearn.inspection import partial_dependence, permutation_importance
    from sklearn.linear_model import LinearRegression, LogisticRegression
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(6)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=200) > 0).astype(int)
    stack = StackingClassifier([("tb", TreeBoostClassifier(**FAST))],
                               final_estimator=LogisticRegression()).fit(X, y)
    assert stack.predict_proba(X).shape == (200, 2)
    calibrated = CalibratedClassifierCV(TreeBoostClassifier(**FAST), cv=3).fit(X, y)
    assert calibrated.score(X, y) > 0.8
    search = GridSearchCV(make_pipeline(StandardScaler(), TreeBoostClassifier(**FAST)),
                          {"treeboostclassifier__learning_rate": [0.1, 0.3]}, cv=2).fit(X, y)
    assert search.best_params_["treeboostclassifier__learning_rate"] in (0.1, 0.3)
    reg = TreeBoostRegressor(**FAST).fit(X, X[:, 0])
    vote = VotingRegressor([("tb", TreeBoostRegressor(**FAST)),
                            ("lin", LinearRegression())]).fit(X, X[:, 0])
    assert vote.score(X, X[:, 0]) > 0.8
    importances = permutation_importance(reg, X, X[:, 0], n_repeats=2, random_state=0)
    assert importances.importances_mean.argmax() == 0
    averaged = partial_dependence(reg, X, [0], kind="average")["average"][0]
    assert averaged[-1] > averaged[0]  # y rises with feature 0
