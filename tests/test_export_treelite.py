"""Treelite export (issue 34 part 4): ``to_treelite`` predicts as the model does.

Every case fits a small model (<= 50 trees), exports it and compares
``treelite.gtil.predict`` (shape (n_samples, 1, n_classes or 1)) with the
estimator's own predictions: real data sets from ../shared/datasets (skipped
when that folder is absent) and synthetic ones (NaN, categories unseen in
training, every link, DART, a bare Booster), then the refusals.
"""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from treeboost import Dataset, TreeBoostClassifier, TreeBoostRanker, TreeBoostRegressor, train
from treeboost.datasets import categorical_mask, load
from treeboost.export._treelite import to_treelite
from treeboost.losses import SquaredError

treelite = pytest.importorskip("treelite")

DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets"
SMALL = dict(n_estimators=20, max_leaf_nodes=15, min_samples_leaf=3, random_state=0, n_jobs=1)
# thresholds and leaf values are exported as float64 and GTIL adds in float64: raw scores
# agree to rounding (~1e-15). Treelite's softmax postprocessor rounds to about 3e-8; 1e-6 is
# the brief's tolerance and still far below any leaf value
ATOL = 1e-6


def _gtil(est, X, **kwargs):
    """GTIL's prediction of ``to_treelite(est)`` as (n_samples,) or (n_samples, n_classes)."""
    out = treelite.gtil.predict(to_treelite(est), np.asarray(X, dtype=np.float64), **kwargs)
    assert out.ndim == 3
    assert out.shape[:2] == (len(X), 1)
    return out[:, 0, 0] if out.shape[2] == 1 else out[:, 0, :]


def _max_diff(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} not available")
    return path


def _codes(X: pd.DataFrame):
    """``X`` as float64 with category columns as their codes (NaN for missing).

    Treelite matches categories as integers, so the export needs integer-coded
    categorical features rather than pandas labels.
    """
    mask = categorical_mask(X)
    cols = [X[c].cat.codes.replace(-1, np.nan).to_numpy(np.float64) if m
            else X[c].to_numpy(np.float64) for c, m in zip(X.columns, mask, strict=True)]
    return np.column_stack(cols), np.flatnonzero(mask).tolist()


@pytest.fixture(scope="module")
def synthetic():
    """500 rows: 3 numerical features with 10 % NaN, an integer-coded categorical one.

    The test rows add categories unseen in training (7, 9, 100, -1) and NaN.
    """
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4))
    X[rng.random(X.shape) < 0.1] = np.nan
    X[:, 3] = rng.integers(0, 6, 600)
    X[rng.random(600) < 0.1, 3] = np.nan
    signal = np.nan_to_num(X[:, 0]) + np.isin(X[:, 3], (1, 4)) - 0.5 * np.isnan(X[:, 1])
    X_test = X[500:].copy()
    X_test[:8, 3] = [7, 9, 100, -1, np.nan, 2, 0, 5]
    return X[:500], signal[:500] + 0.1 * rng.normal(size=500), X_test


# ---- real data sets -----------------------------------------------------------------------
def test_binary_credit_a_with_nan_and_categories():
    X, y = load(_need(DATA / "credit-a.arff"))
    X, cats = _codes(X)
    assert np.isnan(X).any()  # the case this data set stands for
    assert cats
    y = (np.asarray(y.astype(str)) == "+").astype(int)
    clf = TreeBoostClassifier(**SMALL, categorical_features=cats,
                              max_cat_to_onehot=2).fit(X[:500], y[:500])
    assert _max_diff(_gtil(clf, X), clf.predict_proba(X)[:, 1]) < ATOL
    assert _max_diff(_gtil(clf, X, pred_margin=True), clf.decision_function(X)) < ATOL


def test_multiclass_vehicle():
    X, y = load(_need(DATA / "vehicle.arff"))
    X = X.to_numpy(np.float64)
    clf = TreeBoostClassifier(**SMALL).fit(X[:600], np.asarray(y.astype(str))[:600])
    assert len(clf.classes_) == 4
    assert _max_diff(_gtil(clf, X), clf.predict_proba(X)) < ATOL
    assert _max_diff(_gtil(clf, X, pred_margin=True), clf.decision_function(X)) < ATOL


def test_regression_concrete():
    X, y = load(_need(DATA / "concrete.csv"), target="compressive_strength")
    X = X.to_numpy(np.float64)
    reg = TreeBoostRegressor(**SMALL).fit(X[:800], y[:800])
    assert _max_diff(_gtil(reg, X), reg.predict(X)) < ATOL


def test_ranking_lightgbm_example():
    X, y, group = load(_need(DATA / "ranking" / "rank.train"), return_group=True)
    X_test, _ = load(_need(DATA / "ranking" / "rank.test"))
    ranker = TreeBoostRanker(**SMALL).fit(X, y, group=group)
    # GTIL reads an entry absent from a CSR row as missing, treeboost as 0: dense input
    dense = X_test.toarray()
    assert _max_diff(_gtil(ranker, dense), ranker.predict(X_test)) < ATOL


# ---- synthetic cases ----------------------------------------------------------------------
def test_regression_with_nan(synthetic):
    X, y, X_test = synthetic
    reg = TreeBoostRegressor(**SMALL).fit(X[:, :3], y)
    assert _max_diff(_gtil(reg, X_test[:, :3]), reg.predict(X_test[:, :3])) < ATOL


@pytest.mark.parametrize("loss", ["log_loss", "exponential"])
def test_binary(synthetic, loss):
    X, y, X_test = synthetic
    clf = TreeBoostClassifier(**SMALL, loss=loss, categorical_features=[3]).fit(X, y > 0.5)
    assert _max_diff(_gtil(clf, X_test), clf.predict_proba(X_test)[:, 1]) < ATOL


def test_multiclass(synthetic):
    X, y, X_test = synthetic
    labels = np.digitize(y, [-0.5, 0.5, 1.5])
    clf = TreeBoostClassifier(**SMALL, categorical_features=[3]).fit(X, labels)
    assert len(clf.classes_) == 4
    assert _max_diff(_gtil(clf, X_test), clf.predict_proba(X_test)) < ATOL
    model = to_treelite(clf)
    assert model.num_tree == 4 * SMALL["n_estimators"]


@pytest.mark.parametrize("loss", ["poisson", "gamma", "tweedie"])
def test_log_links(synthetic, loss):
    X, y, X_test = synthetic
    reg = TreeBoostRegressor(**SMALL, loss=loss).fit(X, np.exp(y / 2))
    assert _max_diff(_gtil(reg, X_test), reg.predict(X_test)) < ATOL


@pytest.mark.parametrize("loss", ["absolute_error", "quantile", "huber"])
def test_identity_link_regression_losses(synthetic, loss):
    X, y, X_test = synthetic
    reg = TreeBoostRegressor(**SMALL, loss=loss).fit(X, y)
    assert _max_diff(_gtil(reg, X_test), reg.predict(X_test)) < ATOL


def test_categorical_unseen_categories_and_nan(synthetic):
    X, y, X_test = synthetic
    reg = TreeBoostRegressor(**SMALL, categorical_features=[3], max_cat_to_onehot=2).fit(X, y)
    nodes = [n for t in json.loads(to_treelite(reg).dump_as_json())["trees"]
             for n in t["nodes"] if n.get("node_type") == "categorical_test_node"]
    assert nodes  # the case is about categorical splits
    # the list holds the side missing values do not take (see _treelite's docstring)
    assert all(n["category_list_right_child"] == n["default_left"] for n in nodes)
    # rows 0-4 of X_test hold unseen categories and NaN: they take the missing side
    assert _max_diff(_gtil(reg, X_test), reg.predict(X_test)) < ATOL
    unseen = X_test[:5].copy()
    unseen[:, 3] = np.nan
    np.testing.assert_allclose(_gtil(reg, X_test[:5]), _gtil(reg, unseen), rtol=0, atol=ATOL)


def test_frame_with_integer_category_labels(synthetic):
    X, y, X_test = synthetic
    # a pandas category column whose labels are integers: treelite reads the labels
    frame = pd.DataFrame(X[:, :3], columns=["a", "b", "c"])
    frame["d"] = pd.Categorical(X[:, 3] * 10 + 10)
    reg = TreeBoostRegressor(**SMALL, max_cat_to_onehot=2).fit(frame, y)
    test = pd.DataFrame(X_test[8:, :3], columns=["a", "b", "c"])
    test["d"] = pd.Categorical(X_test[8:, 3] * 10 + 10, categories=frame["d"].cat.categories)
    numbers = np.column_stack([X_test[8:, :3], X_test[8:, 3] * 10 + 10])
    assert _max_diff(_gtil(reg, numbers), reg.predict(test)) < ATOL


def test_dart(synthetic):
    X, y, X_test = synthetic
    reg = TreeBoostRegressor(**SMALL, boosting="dart", drop_rate=0.5).fit(X, y)
    assert _max_diff(_gtil(reg, X_test), reg.predict(X_test)) < ATOL


def test_booster(synthetic):
    X, y, X_test = synthetic
    booster = train({"n_estimators": 15, "max_leaf_nodes": 8, "random_state": 0},
                    Dataset(X, y, categorical_features=[3]))
    got = treelite.gtil.predict(to_treelite(booster), X_test)[:, 0, 0]
    assert _max_diff(got, booster.predict_raw(X_test)[:, 0]) < ATOL


def test_public_entry_point(synthetic):
    from treeboost.export import to_treelite as public

    X, y, X_test = synthetic
    reg = TreeBoostRegressor(**SMALL).fit(X, y)
    got = treelite.gtil.predict(public(reg), X_test)[:, 0, 0]
    assert _max_diff(got, reg.predict(X_test)) < ATOL


def test_model_metadata(synthetic):
    X, y, _ = synthetic
    reg = TreeBoostRegressor(**SMALL).fit(X, y)
    model = to_treelite(reg)
    assert model.num_feature == 4
    assert model.num_tree == SMALL["n_estimators"]
    assert model.input_type == "float64"
    assert model.output_type == "float64"


class _View:
    """A stand-in model whose ``dump_model()`` is a hand-written one-split view."""

    def __init__(self, split: dict, *, categories=(0, 1, 2, 3, 4), loss="squared_error",
                 link="identity"):
        leaf = dict(is_leaf=True, split_type=None)
        nodes = [dict(node=0, is_leaf=False, feature=0, left=1, right=2, gain=1.0, count=10,
                      cover=10.0, **split),
                 dict(node=1, value=-1.0, count=5, cover=5.0, **leaf),
                 dict(node=2, value=1.0, count=5, cover=5.0, **leaf)]
        self.view = {"treeboost_version": "test", "loss": {"name": loss, "link": link},
                     "n_features": 1, "feature_names": None, "n_outputs": 1, "n_classes": None,
                     "features": [{"index": 0, "name": None, "kind": "categorical",
                                   "categories": list(categories)}],
                     "init_score": [0.5], "n_stages": 1,
                     "trees": [[{"nodes": nodes}]]}

    def dump_model(self):
        return self.view


# categories 1 and 3 go left; 0, 2, 4 right; 7 and -1 were never seen in training
ROWS = np.array([[1.0], [3.0], [0.0], [2.0], [4.0], [7.0], [-1.0], [np.nan]])


@pytest.mark.parametrize("missing_go_left", [True, False])
def test_categorical_split_semantics(missing_go_left):
    split = dict(split_type="categorical", categories_left=[1, 3], threshold=None,
                 missing_go_left=missing_go_left)
    got = treelite.gtil.predict(to_treelite(_View(split)), ROWS)[:, 0, 0]
    missing = -1.0 if missing_go_left else 1.0  # NaN and unseen categories alike
    expected = 0.5 + np.array([-1.0, -1.0, 1.0, 1.0, 1.0, missing, missing, missing])
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("missing_go_left", [True, False])
def test_numerical_split_semantics(missing_go_left):
    split = dict(split_type="numerical", categories_left=None, threshold=2.0,
                 missing_go_left=missing_go_left)
    got = treelite.gtil.predict(to_treelite(_View(split)), ROWS)[:, 0, 0]
    expected = 0.5 + np.where(ROWS[:, 0] <= 2.0, -1.0, 1.0)
    expected[-1] = 0.5 + (-1.0 if missing_go_left else 1.0)
    np.testing.assert_array_equal(got, expected)


# ---- refusals -----------------------------------------------------------------------------
class _Unregistered(SquaredError):
    """A user loss: its inverse link could be anything, so export must refuse it."""

    name = "my_squared"


def test_refuses_user_loss(synthetic):
    X, y, _ = synthetic
    booster = train({"loss": _Unregistered(), "n_estimators": 3}, Dataset(X, y))
    with pytest.raises(ValueError, match="loss='my_squared' cannot be exported to treelite"):
        to_treelite(booster)


def test_refuses_text_category_labels(synthetic):
    X, y, _ = synthetic
    frame = pd.DataFrame(X[:, :3], columns=["a", "b", "c"])
    frame["colour"] = pd.Categorical(np.array(list("rgbcmy"))[np.nan_to_num(X[:, 3]).astype(int)])
    reg = TreeBoostRegressor(**SMALL, max_cat_to_onehot=2).fit(frame, y + (frame["colour"] == "g"))
    with pytest.raises(ValueError, match="categorical feature 'colour' has the category"):
        to_treelite(reg)


@pytest.mark.parametrize("category", [-1, 2.5, "red", True])
def test_refuses_categories_treelite_cannot_match(category):
    split = dict(split_type="categorical", categories_left=[category], threshold=None,
                 missing_go_left=False)
    with pytest.raises(ValueError, match=r"categorical feature 0 has the category"):
        to_treelite(_View(split, categories=[category, 1]))


def test_refuses_unknown_link():
    split = dict(split_type="numerical", categories_left=None, threshold=0.0,
                 missing_go_left=True)
    with pytest.raises(ValueError, match="loss='formula' with link='probit'"):
        to_treelite(_View(split, loss="formula", link="probit"))


def test_refuses_what_is_not_a_model():
    with pytest.raises(TypeError, match="model='dict' must be a fitted"):
        to_treelite({})


def test_cli_export_writes_a_checkpoint_gtil_reads(synthetic, tmp_path):
    from treeboost.cli import main

    X, y, X_test = synthetic
    model = TreeBoostRegressor(**SMALL, categorical_features=[3]).fit(X, y)
    path, out = tmp_path / "m.json", tmp_path / "m.tl"
    model.save_model(path)
    assert main(["export", str(path), "--to", "treelite", str(out)]) == 0
    restored = treelite.Model.deserialize(out)
    pred = treelite.gtil.predict(restored, np.asarray(X_test, dtype=np.float64))
    assert _max_diff(pred[:, 0, 0], model.predict(X_test)) <= ATOL
