"""AdaBoostClassifier and its default weak learner, StumpClassifier (SPEC §5).

Acceptance (issue 5): a hand-computed three-round example checks the weight
update and the vote weights; on real binary and multiclass data the test
accuracy is within 1 % of scikit-learn's AdaBoostClassifier (SAMME) with the
same number of stumps.
"""

import csv
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits, load_wine
from sklearn.dummy import DummyClassifier
from sklearn.ensemble import AdaBoostClassifier as SkAdaBoost
from sklearn.model_selection import train_test_split
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils.estimator_checks import parametrize_with_checks

from treeboost import AdaBoostClassifier
from treeboost.adaboost import StumpClassifier

SHARED_DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"


class RecordingStump(StumpClassifier):
    """A stump that records the distribution p it was fitted on."""

    seen: list = []

    def fit(self, X, y, sample_weight=None):
        RecordingStump.seen.append(np.array(sample_weight))
        return super().fit(X, y, sample_weight)


def test_three_rounds_by_hand():
    # Li Hang, "Statistical Learning Methods", example 8.1: x = 0..9,
    # y = 1 1 1 0 0 0 1 1 1 0 (the book's -1 is class 0 here).
    X = np.arange(10.0)[:, None]
    y = np.array([1, 1, 1, 0, 0, 0, 1, 1, 1, 0])
    RecordingStump.seen = []
    model = AdaBoostClassifier(RecordingStump(criterion="error"), n_estimators=3).fit(X, y)
    p1, p2, p3 = RecordingStump.seen
    # round 1: uniform; best stump x < 2.5 -> 1, wrong on x = 6, 7, 8: eps = 3/10
    np.testing.assert_allclose(p1, np.full(10, 0.1))
    # beta1 = 3/7 multiplies the 7 correct rows: 3/70 each vs 1/10, normalised by 3/5
    np.testing.assert_allclose(p2, [1 / 14] * 6 + [1 / 6] * 3 + [1 / 14])
    # round 2: x < 8.5 -> 1, wrong on x = 3, 4, 5: eps = 3/14, beta2 = 3/11; the
    # unnormalised weights are 3/154 (x=0,1,2,9), 11/154 (3,4,5), 7/154 (6,7,8)
    np.testing.assert_allclose(p3, [1 / 22] * 3 + [1 / 6] * 3 + [7 / 66] * 3 + [1 / 22])
    # round 3: x > 5.5 -> 1, wrong on x = 0, 1, 2, 9: eps = 4/22 = 2/11
    eps = np.array([3 / 10, 3 / 14, 2 / 11])
    np.testing.assert_allclose(model.estimator_errors_, eps)
    np.testing.assert_allclose(model.estimator_weights_, np.log((1 - eps) / eps))
    assert [s.threshold_ for s in model.estimators_] == [2.5, 8.5, 5.5]
    # votes for class 1: a1 + a2 on x <= 2, a2 on 3..5, a2 + a3 on 6..8, a3 on 9
    a1, a2, a3 = np.log((1 - eps) / eps)
    share1 = np.array([a1 + a2] * 3 + [a2] * 3 + [a2 + a3] * 3 + [a3]) / (a1 + a2 + a3)
    np.testing.assert_allclose(model.decision_function(X), 2 * (2 * share1 - 1))
    np.testing.assert_array_equal(model.predict(X), y)  # the book's 0 training errors
    # the default (Gini) stumps choose the same three splits here
    default = AdaBoostClassifier(n_estimators=3).fit(X, y)
    np.testing.assert_allclose(default.estimator_errors_, eps)


@pytest.mark.parametrize("loader", [load_breast_cancer, load_wine])
def test_equals_sklearn_samme_with_the_same_learner(loader):
    # same weak learner (tie-free continuous data): every round must agree exactly
    X, y = loader(return_X_y=True)
    ours = AdaBoostClassifier(DecisionTreeClassifier(max_depth=1), n_estimators=30,
                              random_state=0).fit(X, y)
    ref = SkAdaBoost(DecisionTreeClassifier(max_depth=1), n_estimators=30,
                     random_state=0).fit(X, y)
    # float64 sums of 30 logs / products: 1e-12 is ~1e4 ulps of slack
    np.testing.assert_allclose(ours.estimator_errors_, ref.estimator_errors_, atol=1e-12)
    np.testing.assert_allclose(ours.estimator_weights_, ref.estimator_weights_, atol=1e-12)
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-12)
    np.testing.assert_array_equal(ours.predict(X), ref.predict(X))


def _mean_accuracies(X, y, n_estimators, n_splits):
    ours, ref = [], []
    for seed in range(n_splits):
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=seed,
                                              stratify=y)
        ours.append(AdaBoostClassifier(n_estimators=n_estimators).fit(Xtr, ytr).score(Xte, yte))
        sk = SkAdaBoost(DecisionTreeClassifier(max_depth=1), n_estimators=n_estimators,
                        random_state=0)
        ref.append(sk.fit(Xtr, ytr).score(Xte, yte))
    return np.mean(ours), np.mean(ref)


@pytest.mark.parametrize("loader", [load_breast_cancer, load_digits, load_wine])
def test_accuracy_within_one_percent_of_sklearn(loader):
    X, y = loader(return_X_y=True)
    # digits' integer pixels give many exactly tied stumps, which scikit-learn breaks by
    # a random feature order and we by the first feature: the runs diverge, and one
    # split's accuracy moves by ~2%; eight splits average that below the 1% bar
    ours, ref = _mean_accuracies(X, y, n_estimators=50, n_splits=8)
    assert ours >= ref - 0.01, (ours, ref)


def _shared(names):
    manifest = SHARED_DATASETS / "MANIFEST.tsv"
    if not manifest.is_file():
        return [pytest.param(None, id="no-shared-datasets")]
    with manifest.open(newline="", encoding="utf-8") as f:
        rows = {row["name"]: row for row in csv.DictReader(f, delimiter="\t")}
    return [pytest.param(rows[name], id=name) for name in names if name in rows]


# numerical datasets: binary, multiclass, and one (vehicle) with more than 255 distinct
# values in some features, where treeboost's stumps split on quantile bins
@pytest.mark.parametrize("row", _shared(["breast-w", "diabetes", "ionosphere", "glass",
                                         "vehicle"]))
def test_accuracy_within_one_percent_of_sklearn_on_shared_datasets(row):
    if row is None:
        pytest.skip(f"{SHARED_DATASETS} not found")
    from treeboost.datasets import load

    X, y = load(SHARED_DATASETS / row["file"], target=row["target"])
    X, y = X.to_numpy(dtype=np.float64), y.astype(str).to_numpy()
    complete = ~np.isnan(X).any(axis=1)  # scikit-learn's AdaBoost rejects NaN
    ours, ref = _mean_accuracies(X[complete], y[complete], n_estimators=50, n_splits=8)
    assert ours >= ref - 0.01, (ours, ref)


def test_missing_values_get_their_own_side():
    rng = np.random.default_rng(0)
    x = rng.normal(size=400)
    missing = rng.random(400) < 0.2
    y = np.where(missing, 1, (x > 0).astype(int))  # a missing x means class 1
    X = np.column_stack([np.where(missing, np.nan, x), rng.normal(size=400)])
    model = AdaBoostClassifier(n_estimators=5).fit(X, y)
    first = model.estimators_[0]
    assert first.feature_ == 0
    assert first.missing_left_ is False
    assert len(model.estimators_) == 1  # that split is perfect: boosting stops
    assert model.score(X, y) == 1.0


def test_perfect_learner_stops_and_useless_learner_raises():
    X = np.arange(20.0)[:, None]
    y = (X[:, 0] > 9).astype(int)
    model = AdaBoostClassifier(n_estimators=10).fit(X, y)
    assert len(model.estimators_) == 1
    assert model.estimator_weights_.tolist() == [1.0]
    with pytest.raises(ValueError, match="no better than chance"):
        AdaBoostClassifier(DummyClassifier(strategy="constant", constant=0), n_estimators=3,
                           random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="1 class"):
        AdaBoostClassifier().fit(X, np.zeros(20))
    with pytest.raises(ValueError, match="n_estimators=0"):
        AdaBoostClassifier(n_estimators=0).fit(X, y)


def test_zero_weight_rows_are_not_there():
    X, y = load_wine(return_X_y=True)
    w = np.ones(len(y))
    w[::3] = 0.0
    weighted = AdaBoostClassifier(n_estimators=20).fit(X, y, sample_weight=w)
    dropped = AdaBoostClassifier(n_estimators=20).fit(X[w > 0], y[w > 0])
    np.testing.assert_allclose(weighted.predict_proba(X), dropped.predict_proba(X))


@parametrize_with_checks([StumpClassifier(), AdaBoostClassifier(n_estimators=5)])
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)
