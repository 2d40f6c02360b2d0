"""``train()`` holds the line of the estimators (issue 33): continued models keep what
cannot change, constraints are honoured or refused, one rule for rows of weight 0, and
every bad input is one clear line naming what was passed."""

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from treeboost import (
    Dataset,
    TreeBoostClassifier,
    TreeBoostRanker,
    TreeBoostRegressor,
    load_model,
    train,
)
from treeboost.serialization import save_booster


def _data(n=500, seed=0):
    """x1 has a non-monotone (sine) effect, so an unconstrained model is not monotone in it."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = 2 * X[:, 0] + np.sin(3 * X[:, 1]) + 0.3 * X[:, 2] + 0.3 * rng.normal(size=n)
    return X, y


def _decreasing_steps(model_raw, X, feature):
    """Steps down of the raw score along a 199-point grid of ``feature`` (the others at
    their medians)."""
    grid = np.tile(np.median(X, axis=0), (199, 1))
    grid[:, feature] = np.linspace(-2, 2, 199)
    return int((np.diff(model_raw(grid).ravel()) < 0).sum())


PARAMS = {"n_estimators": 10, "random_state": 0, "n_jobs": 1}


# ---- item 3: constraints the earlier stages were not grown under ----------------------
def test_continuing_an_unconstrained_model_with_a_monotone_constraint_is_refused():
    X, y = _data()
    first = train(PARAMS, Dataset(X, y))
    assert _decreasing_steps(first.predict_raw, X, 1) > 0  # the model is not monotone
    with pytest.raises(ValueError, match=r"monotone_constraints.*feature 1.*init_model"):
        train({**PARAMS, "n_estimators": 20, "monotone_constraints": [0, 1, 0]},
              Dataset(X, y), init_model=first)
    assert len(first.trees) == 10  # refused before anything changed


def test_continuing_an_unconstrained_model_with_an_interaction_constraint_is_refused():
    X, y = _data()
    first = train(PARAMS, Dataset(X, y))
    with pytest.raises(ValueError, match=r"interaction_constraints.*init_model"):
        train({**PARAMS, "n_estimators": 20, "interaction_constraints": [[0], [1], [2]]},
              Dataset(X, y), init_model=first)


def test_estimators_refuse_a_constraint_the_model_breaks():
    X, y = _data()
    first = TreeBoostRegressor(**PARAMS).fit(X, y)
    with pytest.raises(ValueError, match="monotone_constraints"):
        TreeBoostRegressor(**PARAMS, monotone_constraints=[0, 1, 0]).fit(X, y,
                                                                          init_model=first)
    warm = TreeBoostRegressor(**PARAMS, warm_start=True).fit(X, y)
    warm.set_params(n_estimators=20, interaction_constraints=[[0], [1, 2]])
    with pytest.raises(ValueError, match="interaction_constraints"):
        warm.fit(X, y)
    assert warm.n_iter_ == 10  # the failed fit left the model as it was


def test_a_constraint_the_earlier_stages_satisfy_is_accepted():
    X, y = _data()
    first = train({**PARAMS, "monotone_constraints": {1: 1},
                   "interaction_constraints": [[0, 1], [2]]}, Dataset(X, y))
    # the same monotone constraint in another form; a looser interaction constraint
    more = train({**PARAMS, "n_estimators": 20, "monotone_constraints": [0, 1, 0],
                  "interaction_constraints": [[0, 1, 2]]}, Dataset(X, y), init_model=first)
    assert len(more.trees) == 20
    assert _decreasing_steps(more.predict_raw, X, 1) == 0


@pytest.mark.parametrize("extra", [
    {"monotone_constraints_method": "intermediate"},
    {"loss": "absolute_error"},
    {"loss": "quantile", "alpha": 0.3, "subsample": 0.7},
    {"boosting": "dart"},
])
def test_every_model_grown_under_a_constraint_continues_under_it(extra):
    """No false refusal: the check of the earlier trees passes on every model the grower
    makes under the constraint (leaves clipped to bounds, line searches, DART's scaling)."""
    X, y = _data()
    params = {**PARAMS, "monotone_constraints": [1, -1, 0],
              "interaction_constraints": [[0, 1], [1, 2]], **extra}
    first = train(params, Dataset(X, y))
    more = train({**params, "n_estimators": 20}, Dataset(X, y), init_model=first)
    assert len(more.trees) == 20


def test_multiclass_grown_under_a_constraint_continues_under_it():
    X, y = _data()
    y3 = np.digitize(y, [-1, 1])
    first = TreeBoostClassifier(**PARAMS, monotone_constraints=[1, 0, 0],
                                warm_start=True).fit(X, y3)
    first.set_params(n_estimators=15).fit(X, y3)
    assert first.n_iter_ == 15
    first.set_params(n_estimators=20, monotone_constraints=[0, 1, 0])
    with pytest.raises(ValueError, match=r"monotone_constraints.*feature 1.*warm_start"):
        first.fit(X, y3)


# ---- item 4: what cannot change mid-model; init_model as a file ----------------------
@pytest.mark.parametrize(("first", "then", "named"), [
    ({"loss": "squared_error"}, {"loss": "absolute_error"}, "loss"),
    ({"loss": "quantile", "alpha": 0.9}, {"loss": "quantile", "alpha": 0.5}, "alpha"),
    ({"loss": "quantile", "alpha": 0.9}, {"alpha": 0.5}, "alpha"),
    ({"loss": "huber", "alpha": 0.9}, {"alpha": 0.8}, "alpha"),
    ({"loss": "tweedie", "power": 1.5}, {"power": 1.2}, "power"),
    ({"max_bins": 255}, {"max_bins": 31}, "max_bins"),
    ({"boosting": "gbdt"}, {"boosting": "rf", "subsample": 0.5}, "boosting"),
])
def test_continuing_with_another_fixed_parameter_is_refused(first, then, named):
    X, y = _data()
    y = np.abs(y)  # tweedie needs y >= 0
    model = train({**PARAMS, **first}, Dataset(X, y))
    with pytest.raises(ValueError, match=rf"init_model.*{named}"):
        train({**PARAMS, "n_estimators": 20, **then}, Dataset(X, y), init_model=model)


def test_continuing_a_classifier_with_another_n_classes_is_refused():
    X, y = _data()
    y3 = np.digitize(y, [-1, 1]).astype(float)
    model = train({**PARAMS, "loss": "log_loss"}, Dataset(X, y3))
    with pytest.raises(ValueError, match=r"init_model.*n_classes"):
        train({**PARAMS, "loss": "log_loss", "n_classes": 4, "n_estimators": 20},
              Dataset(X, y3), init_model=model)


def test_params_without_a_loss_continue_the_models_loss():
    X, y = _data()
    model = train({**PARAMS, "loss": "quantile", "alpha": 0.2}, Dataset(X, y))
    more = train({**PARAMS, "n_estimators": 20}, Dataset(X, y), init_model=model)
    assert more.loss.name == "quantile"
    assert more.loss.get_params() == {"alpha": 0.2}
    # the continued model is the model of one fit of 20 stages
    once = train({**PARAMS, "n_estimators": 20, "loss": "quantile", "alpha": 0.2},
                 Dataset(X, y))
    assert_array_equal(more.predict_raw(X), once.predict_raw(X))


def test_a_continued_classifier_takes_its_classes_from_the_model():
    """The continuation data may lack the highest class: n_classes is the model's."""
    X, y = _data()
    y3 = np.digitize(y, [-1, 1]).astype(float)
    model = train({**PARAMS, "loss": "log_loss"}, Dataset(X, y3))
    part = y3 < 2
    more = train({**PARAMS, "loss": "log_loss", "n_estimators": 20},
                 Dataset(X[part], y3[part]), init_model=model)
    assert more.n_outputs == 3
    assert len(more.trees) == 20


def test_init_model_may_be_a_model_file(tmp_path):
    X, y = _data()
    model = train(PARAMS, Dataset(X, y))
    path = tmp_path / "model.json"
    save_booster(model, path)
    from_file = train({**PARAMS, "n_estimators": 20}, Dataset(X, y), init_model=path)
    from_str = train({**PARAMS, "n_estimators": 20}, Dataset(X, y), init_model=str(path))
    once = train({**PARAMS, "n_estimators": 20}, Dataset(X, y))
    assert_array_equal(from_file.predict_raw(X), once.predict_raw(X))
    assert_array_equal(from_str.predict_raw(X), once.predict_raw(X))


def test_init_model_may_be_an_estimators_file(tmp_path):
    X, y = _data()
    est = TreeBoostRegressor(**PARAMS).fit(X, y)
    path = tmp_path / "est.json"
    est.save_model(path)
    more = train({**PARAMS, "n_estimators": 20}, Dataset(X, y), init_model=path)
    once = TreeBoostRegressor(**{**PARAMS, "n_estimators": 20}).fit(X, y)
    assert_array_equal(more.predict_raw(X), once.booster_.predict_raw(X))
    assert isinstance(load_model(path), TreeBoostRegressor)  # the file is left as it was


def test_init_model_of_another_type_is_named():
    X, y = _data()
    est = TreeBoostRegressor(**PARAMS).fit(X, y)
    with pytest.raises(TypeError, match=r"init_model.*TreeBoostRegressor.*booster_"):
        train(PARAMS, Dataset(X, y), init_model=est)


# ---- item 5: interaction_constraints=[] means no constraint --------------------------
def test_empty_interaction_constraints_mean_none_in_train():
    X, y = _data()
    free = train(PARAMS, Dataset(X, y))
    empty = train({**PARAMS, "interaction_constraints": []}, Dataset(X, y))
    assert sum(t.n_leaves for stage in empty.trees for t in stage) > len(empty.trees)
    assert_array_equal(empty.predict_raw(X), free.predict_raw(X))


@pytest.mark.parametrize("cls", [TreeBoostRegressor, TreeBoostClassifier])
def test_empty_interaction_constraints_mean_none_in_the_estimators(cls):
    X, y = _data()
    if cls is TreeBoostClassifier:
        y = y > 0
    free = cls(**PARAMS).fit(X, y)
    empty = cls(**PARAMS, interaction_constraints=[]).fit(X, y)
    assert_array_equal(empty.booster_.predict_raw(X), free.booster_.predict_raw(X))


# ---- item 9: rows of weight 0, one rule ------------------------------------------------
def _zero_weights(n, seed=1):
    w = np.random.default_rng(seed).uniform(0.5, 2.0, size=n)
    w[::7] = 0.0
    return w


@pytest.mark.parametrize("extra", [{}, {"subsample": 0.7, "min_samples_leaf": 5}])
def test_fit_and_train_give_the_same_model_with_zero_weights(extra):
    X, y = _data()
    w = _zero_weights(y.size)
    params = {**PARAMS, **extra}
    est = TreeBoostRegressor(**params).fit(X, y, sample_weight=w)
    booster = train(params, Dataset(X, y, weight=w))
    assert_array_equal(booster.predict_raw(X), est.booster_.predict_raw(X))


def test_a_dataset_drops_its_rows_of_weight_0():
    X, y = _data()
    w = _zero_weights(y.size)
    init = 0.1 * X[:, 2]
    ds = Dataset(X, y, weight=w, init_score=init)
    keep = w > 0
    assert ds.label.shape == (keep.sum(),)
    same = Dataset(X[keep], y[keep], weight=w[keep], init_score=init[keep])
    assert_array_equal(train(PARAMS, ds).predict_raw(X),
                       train(PARAMS, same).predict_raw(X))


def test_a_sparse_dataset_drops_its_rows_of_weight_0_as_a_dense_one():
    sp = pytest.importorskip("scipy.sparse")
    X, y = _data()
    X[np.abs(X) < 0.5] = 0.0
    w = _zero_weights(y.size)
    dense = train(PARAMS, Dataset(X, y, weight=w))
    sparse = train(PARAMS, Dataset(sp.csr_matrix(X), y, weight=w))
    assert_array_equal(sparse.predict_raw(X), dense.predict_raw(X))


def test_chunks_with_rows_of_weight_0_are_refused():
    """from_chunks keeps every row of its chunks, so it cannot follow the rule: it says so."""
    X, y = _data()
    with pytest.raises(ValueError, match=r"weight is 0 on 72 of 500 rows.*chunks"):
        Dataset.from_chunks([X[:250], X[250:]], label=y, weight=_zero_weights(y.size))


def test_zero_weights_drop_rows_from_their_query_groups():
    ds = Dataset(np.arange(12.0).reshape(6, 2), np.zeros(6), group=[2, 3, 1],
                 weight=[1, 0, 1, 1, 1, 0])
    assert_array_equal(ds.group_sizes, [1, 3])
    assert ds.label.size == 4


# ---- cryptic cases: one clear line naming what was passed ----------------------------
@pytest.mark.parametrize(("params", "shown"), [(None, "None"), ([("a", 1)], r"list")])
def test_params_that_are_not_a_dict_are_named(params, shown):
    X, y = _data()
    with pytest.raises(TypeError, match=rf"params must be a dict.*{shown}"):
        train(params, Dataset(X, y))


def test_valid_sets_may_be_xgboost_pairs_or_one_dataset():
    X, y = _data()
    ds = Dataset(X[:400], y[:400])
    valid = Dataset(X[400:], y[400:], reference=ds)
    named = train(PARAMS, ds, valid_sets=[(valid, "holdout")])
    assert list(named.evals_result) == ["holdout"]
    bare = train(PARAMS, ds, valid_sets=valid)
    assert list(bare.evals_result) == ["validation_0"]
    listed = train(PARAMS, ds, valid_sets=[valid], valid_names=["holdout"])
    assert named.evals_result == listed.evals_result
    assert bare.evals_result["validation_0"] == listed.evals_result["holdout"]


def test_bad_valid_sets_are_named():
    X, y = _data()
    ds = Dataset(X, y)
    with pytest.raises(TypeError, match=r"valid_sets\[1\].*ndarray"):
        train(PARAMS, ds, valid_sets=[ds, X])
    with pytest.raises(ValueError, match=r"valid_names.*valid_sets\[0\].*'a'"):
        train(PARAMS, ds, valid_sets=[(ds, "a")], valid_names=["b"])


def test_string_labels_are_named():
    X, y = _data()
    labels = np.where(y > 0, "yes", "no")
    with pytest.raises(ValueError, match=r"label.*strings.*'(yes|no)'.*TreeBoostClassifier"):
        train({**PARAMS, "loss": "log_loss"}, Dataset(X, labels))


def test_eval_metric_that_does_not_fit_the_loss_is_refused_by_train():
    X, y = _data()
    with pytest.raises(ValueError, match=r"eval_metric='auc' is not defined for regression"):
        train({**PARAMS, "eval_metric": "auc"}, Dataset(X, y),
              valid_sets=[Dataset(X, y)])


@pytest.mark.parametrize(("weight", "match"), [
    (np.zeros(500), r"weight is 0 on all 500 rows"),
    (np.r_[-1.0, np.ones(499)], r"weight.*negative.*-1.*row 0"),
    (np.r_[np.ones(3), np.nan, np.ones(496)], r"weight.*NaN or infinity.*row 3"),
])
def test_bad_weights_in_a_dataset_are_named(weight, match):
    X, y = _data()
    with pytest.raises(ValueError, match=match):
        train(PARAMS, Dataset(X, y, weight=weight))


def test_all_zero_weights_of_a_validation_set_are_refused():
    X, y = _data()
    ds = Dataset(X, y)
    with pytest.raises(ValueError, match="weight is 0 on all 500 rows"):
        Dataset(X, y, weight=np.zeros(500), reference=ds)


@pytest.mark.parametrize(("loss", "score"), [("squared_error", 1e200), ("poisson", 800.0)])
def test_an_init_score_that_overflows_the_gradients_is_named(loss, score):
    X, y = _data()
    with pytest.raises(ValueError, match=r"init_score"):
        train({**PARAMS, "loss": loss}, Dataset(X, np.abs(y), init_score=np.full(500, score)))
    with pytest.raises(ValueError, match=r"init_score"):
        TreeBoostRegressor(**PARAMS, loss=loss).fit(X, np.abs(y),
                                                    init_score=np.full(500, score))


def test_a_nan_qid_is_named():
    X, y = _data(n=6)
    with pytest.raises(ValueError, match=r"qid.*NaN.*row 2"):
        Dataset(X, np.zeros(6), qid=[1, 1, np.nan, 2, 2, 2])
    with pytest.raises(ValueError, match=r"qid.*None at row 3"):
        Dataset(X, np.zeros(6), qid=np.array(["a", "a", "b", None, "c", "c"], dtype=object))
    with pytest.raises(ValueError, match=r"group/qid: qid.*NaN"):
        TreeBoostRanker(n_estimators=2).fit(X, np.zeros(6), qid=[1, 1, np.nan, 2, 2, 2])


@pytest.mark.parametrize("loss", ["lambdarank", "rank_xendcg"])
def test_huge_relevance_labels_are_named_not_allocated(loss):
    X, _ = _data(n=8)
    y = np.array([0, 1, 2, 1e12, 0, 1, 0, 3])
    with pytest.raises(ValueError, match=r"label 1e\+12.*label_gain"):
        train({**PARAMS, "loss": loss}, Dataset(X, y, group=[4, 4]))


def test_relevance_labels_above_30_need_label_gain():
    X, _ = _data(n=8)
    y = np.array([0, 1, 31, 2, 0, 1, 0, 3], dtype=float)
    with pytest.raises(ValueError, match=r"label 31.*label_gain"):
        TreeBoostRanker(n_estimators=2).fit(X, y, group=[4, 4])
    gains = list(range(32))
    model = TreeBoostRanker(n_estimators=2, label_gain=gains, min_samples_leaf=1).fit(
        X, y, group=[4, 4])
    assert model.n_iter_ == 2
    # pairwise reads the labels' order only: any whole labels
    big = np.array([0, 1, 1e12, 2, 0, 1, 0, 3])
    assert train({**PARAMS, "loss": "pairwise", "n_estimators": 2},
                 Dataset(X, big, group=[4, 4])).trees


def test_class_weight_that_removes_a_class_is_named():
    X, y = _data()
    labels = np.digitize(y, [-1, 1]).astype(str)  # "0", "1", "2"
    labels = np.where(labels == "0", "low", np.where(labels == "1", "mid", "high"))
    with pytest.raises(ValueError, match=r"class_weight.*'mid'.*0"):
        TreeBoostClassifier(**PARAMS, class_weight={"mid": 0.0}).fit(X, labels)
