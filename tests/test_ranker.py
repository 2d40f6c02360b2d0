"""TreeBoostRanker (issue 14): a thin client of ``train`` with query groups.

Each test compares against something independent: the engine's ``train`` on the
same Dataset, the metric functions on staged predictions, the same model reached
another way (qid vs group, continued vs one fit, saved vs in memory), or the
ranking a known relevance function implies.
"""

import numpy as np
import pytest

import treeboost as tb
from treeboost.metrics import map_at_k, ndcg_at_k


def _ranking_data(n_queries, seed, n_features=8):
    """Queries of 5-29 documents; relevance 0-4 from x0 + sin(x1) plus noise."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(5, 30, n_queries)
    n = int(sizes.sum())
    X = rng.normal(size=(n, n_features))
    signal = X[:, 0] + np.sin(X[:, 1]) + 0.3 * rng.normal(size=n)
    y = np.digitize(signal, [-1.0, 0.0, 1.0, 2.0]).astype(float)
    return X, y, sizes


def _offsets(sizes):
    return np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)


@pytest.fixture(scope="module")
def data():
    return _ranking_data(200, 0), _ranking_data(80, 1)


def test_ranker_is_train_on_a_grouped_dataset(data):
    (X, y, g), (Xv, _, _) = data
    params = dict(n_estimators=30, max_leaf_nodes=15, learning_rate=0.2, random_state=3)
    model = tb.TreeBoostRanker(**params).fit(X, y, group=g)
    booster = tb.train({"loss": "lambdarank", **params}, tb.Dataset(X, y, group=g))
    np.testing.assert_array_equal(model.predict(Xv), booster.predict_raw(Xv)[:, 0])


def test_group_and_qid_give_the_same_model(data):
    (X, y, g), (Xv, _, _) = data
    qid = np.repeat(np.arange(100, 100 + g.size) * 7, g)  # any ids, contiguous
    a = tb.TreeBoostRanker(n_estimators=20, random_state=0).fit(X, y, group=g)
    b = tb.TreeBoostRanker(n_estimators=20, random_state=0).fit(X, y, qid=qid)
    np.testing.assert_array_equal(a.predict(Xv), b.predict(Xv))


def test_learns_the_known_ranking(data):
    (X, y, g), (Xv, yv, gv) = data
    model = tb.TreeBoostRanker(n_estimators=60, random_state=0).fit(X, y, group=g)
    random_ndcg = ndcg_at_k(yv, np.random.default_rng(0).normal(size=yv.size), _offsets(gv),
                            10)
    oracle = ndcg_at_k(yv, Xv[:, 0] + np.sin(Xv[:, 1]), _offsets(gv), 10)
    score = model.score(Xv, yv, group=gv)
    assert score == ndcg_at_k(yv, model.predict(Xv), _offsets(gv), 10)
    assert score > random_ndcg + 0.2
    assert score > oracle - 0.03
    # the two informative features carry most of the gain
    assert set(np.argsort(model.feature_importances_)[-2:]) == {0, 1}


def test_eval_log_is_the_metric_of_the_staged_scores(data):
    (X, y, g), (Xv, yv, gv) = data
    model = tb.TreeBoostRanker(n_estimators=15, eval_metric=["map@5", "ndcg@3"],
                               random_state=0)
    model.fit(X, y, group=g, eval_set=[(Xv, yv)], eval_group=[gv])
    log = model.evals_result_["validation_0"]
    assert list(log) == ["map@5", "ndcg@3"]
    staged = list(model.staged_predict(Xv))
    assert len(staged) == len(log["map@5"]) == 15
    for m, scores in enumerate(staged):
        assert log["map@5"][m] == pytest.approx(map_at_k(yv, scores, _offsets(gv), 5),
                                                abs=1e-12)
        assert log["ndcg@3"][m] == pytest.approx(ndcg_at_k(yv, scores, _offsets(gv), 3),
                                                 abs=1e-12)


def test_default_metric_is_ndcg_at_10_and_drives_early_stopping(data):
    (X, y, g), (Xv, yv, gv) = data
    model = tb.TreeBoostRanker(n_estimators=300, learning_rate=0.5, n_iter_no_change=5,
                               random_state=0)
    model.fit(X, y, group=g, eval_set=[(Xv, yv)], eval_qid=[np.repeat(np.arange(gv.size),
                                                                        gv)])
    log = model.evals_result_["validation_0"]["ndcg@10"]
    best = model.best_iteration_
    assert len(log) == best + 6  # stopped five stages after the best
    assert log[best] == max(log)
    assert model.n_iter_ == best + 1
    assert model.score(Xv, yv, group=gv) == pytest.approx(log[best], abs=1e-12)


def test_early_stopping_holds_out_whole_queries(data):
    (X, y, g), _ = data
    model = tb.TreeBoostRanker(n_estimators=200, n_iter_no_change=3, validation_fraction=0.25,
                               random_state=0).fit(X, y, group=g)
    log = model.evals_result_["validation"]["ndcg@10"]
    assert model.best_iteration_ is not None
    assert len(log) == model.best_iteration_ + 4
    again = tb.TreeBoostRanker(n_estimators=200, n_iter_no_change=3, validation_fraction=0.25,
                               random_state=0).fit(X, y, group=g)
    assert again.evals_result_ == model.evals_result_
    with pytest.raises(ValueError, match="validation_fraction"):
        tb.TreeBoostRanker(n_iter_no_change=3).fit(X[:20], y[:20], group=[20])


def test_save_load_and_continued_training(data, tmp_path):
    (X, y, g), (Xv, _, _) = data
    full = tb.TreeBoostRanker(n_estimators=30, subsample=0.8, random_state=5).fit(X, y,
                                                                                 group=g)
    first = tb.TreeBoostRanker(n_estimators=12, subsample=0.8, random_state=5).fit(X, y,
                                                                                  group=g)
    path = tmp_path / "ranker.json"
    first.save_model(path)
    loaded = tb.load_model(path)
    assert type(loaded) is tb.TreeBoostRanker
    np.testing.assert_array_equal(loaded.predict(Xv), first.predict(Xv))
    more = tb.TreeBoostRanker(n_estimators=18, subsample=0.8, random_state=5)
    more.fit(X, y, group=g, init_model=path)
    np.testing.assert_array_equal(more.predict(Xv), full.predict(Xv))
    warm = tb.TreeBoostRanker(n_estimators=12, subsample=0.8, random_state=5,
                              warm_start=True).fit(X, y, group=g)
    warm.set_params(n_estimators=30).fit(X, y, group=g)
    np.testing.assert_array_equal(warm.predict(Xv), full.predict(Xv))


def test_shap_contributions_sum_to_the_scores(data):
    (X, y, g), (Xv, _, _) = data
    model = tb.TreeBoostRanker(n_estimators=10, random_state=0).fit(X, y, group=g)
    contribs = model.predict(Xv[:40], pred_contribs=True)
    assert contribs.shape == (40, X.shape[1] + 1)
    np.testing.assert_allclose(contribs.sum(axis=1), model.predict(Xv[:40]), atol=1e-10)


def test_same_model_for_one_and_two_threads(data):
    (X, y, g), (Xv, _, _) = data
    a = tb.TreeBoostRanker(n_estimators=15, n_jobs=1, random_state=0).fit(X, y, group=g)
    b = tb.TreeBoostRanker(n_estimators=15, n_jobs=2, random_state=0).fit(X, y, group=g)
    np.testing.assert_array_equal(a.predict(Xv), b.predict(Xv))


@pytest.mark.parametrize(("kwargs", "match"), [
    (dict(), "needs the query groups"),
    (dict(group=[10, 10]), "sum to 20"),
    (dict(group=[50], qid=np.zeros(50)), "not both"),
    (dict(qid=np.r_[np.zeros(20), np.ones(20), np.zeros(10)]), "contiguous"),
    (dict(group=[50], sample_weight=np.r_[np.ones(25), np.full(25, 2.0)]),
     "sample_weight differs within query 0"),
    (dict(group=[50], eval_set=[(np.zeros((5, 8)), np.zeros(5))]), "eval_group"),
    (dict(group=[50], eval_set=[(np.zeros((5, 8)), np.zeros(5))], eval_group=[[4]]),
     r"eval_group\[0\]"),
])
def test_bad_groups_are_named(data, kwargs, match):
    (X, y, _), _ = data
    with pytest.raises(ValueError, match=match):
        tb.TreeBoostRanker(n_estimators=2).fit(X[:50], y[:50], **kwargs)


@pytest.mark.parametrize("labels", [np.full(50, 0.5), np.full(50, -1.0)])
def test_relevance_labels_must_be_whole_numbers(data, labels):
    (X, _, _), _ = data
    with pytest.raises(ValueError, match="whole numbers"):
        tb.TreeBoostRanker(n_estimators=2).fit(X[:50], labels, group=[50])


@pytest.mark.parametrize(("metric", "match"), [
    ("rmse", "not defined for ranking"), ("loss", "not defined for ranking"),
    ("ndcg@0", "one of .*ndcg@k"), ("ndcg@ten", "one of .*ndcg@k"), ("map", "one of .*map@k"),
])
def test_ranker_metrics_are_checked(data, metric, match):
    (X, y, g), _ = data
    with pytest.raises(ValueError, match=match):
        tb.TreeBoostRanker(n_estimators=2, eval_metric=metric).fit(X, y, group=g)


def test_ranking_metric_needs_groups_on_every_evaluated_set(data):
    (X, y, g), (Xv, yv, _) = data
    train_set = tb.Dataset(X, y, group=g)
    with pytest.raises(ValueError, match="no query groups"):
        tb.train({"loss": "lambdarank", "n_estimators": 2}, train_set,
                 valid_sets=[tb.Dataset(Xv, yv, reference=train_set)])
    # a regression model logging ndcg@k on data without groups is told what is missing
    with pytest.raises(ValueError, match="needs query groups"):
        tb.train({"n_estimators": 2, "eval_metric": "ndcg@5"}, tb.Dataset(X, y),
                 valid_sets=[tb.Dataset(Xv, yv)])


def test_ranking_parameters_reach_the_loss_and_the_metric(data):
    (X, y, g), (Xv, yv, gv) = data
    gain = [0.0, 1.0, 2.0, 3.0, 10.0]
    model = tb.TreeBoostRanker(n_estimators=5, label_gain=gain, lambdarank_truncation_level=5,
                               sigmoid=2.0, random_state=0)
    model.fit(X, y, group=g, eval_set=[(Xv, yv)], eval_group=[gv])
    assert model.booster_.loss.get_params()["label_gain"] == gain
    logged = model.evals_result_["validation_0"]["ndcg@10"][-1]
    assert logged == pytest.approx(ndcg_at_k(yv, model.predict(Xv), _offsets(gv), 10, gain),
                                   abs=1e-12)
    assert logged != pytest.approx(ndcg_at_k(yv, model.predict(Xv), _offsets(gv), 10))
    # the parameters change the model: the default's differs
    default = tb.TreeBoostRanker(n_estimators=5, random_state=0).fit(X, y, group=g)
    assert not np.array_equal(default.predict(Xv), model.predict(Xv))
    with pytest.raises(ValueError, match="label_gain"):
        tb.TreeBoostRanker(label_gain=[0, 1]).fit(X, y, group=g)
    with pytest.raises(ValueError, match="label_gain"):
        tb.TreeBoostRanker(label_gain=[0, -1, 2]).fit(X, y, group=g)


@pytest.mark.parametrize("loss", ["rank_xendcg", "pairwise"])
def test_every_ranking_loss_through_the_ranker(data, loss):
    (X, y, g), (Xv, yv, gv) = data
    model = tb.TreeBoostRanker(loss, n_estimators=40, random_state=0).fit(X, y, group=g)
    assert model.booster_.loss.name == loss
    assert model.score(Xv, yv, group=gv) > 0.85
