"""NDCG@k and MAP@k over query groups (issue 14): against scikit-learn's ``ndcg_score``,
LightGBM's ``ndcg`` and ``map`` metrics on the same predictions, and hand computations."""

import numpy as np
import pytest

from treeboost.metrics import default_label_gain, map_at_k, ndcg_at_k


def _queries(seed, n_queries=40, max_size=15, min_size=1):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(min_size, max_size + 1, size=n_queries)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    y = rng.integers(0, 5, size=offsets[-1]).astype(float)
    score = rng.normal(size=offsets[-1])  # continuous: no ties
    return y, score, offsets


@pytest.mark.parametrize("k", [1, 3, 5, 10, 100])
def test_ndcg_equals_sklearn_per_query(k):
    from sklearn.metrics import ndcg_score

    y, score, offsets = _queries(0, min_size=2)
    expected = []
    for a, b in zip(offsets[:-1], offsets[1:], strict=True):
        gains = 2.0 ** y[a:b] - 1  # scikit-learn's gains are the relevances themselves
        if gains.max() == 0:
            expected.append(1.0)  # LightGBM's convention; scikit-learn gives 0
            continue
        expected.append(ndcg_score(gains[None], score[None, a:b], k=k))
    assert ndcg_at_k(y, score, offsets, k) == pytest.approx(np.mean(expected), rel=1e-12)


def test_ndcg_by_hand_with_ties_one_document_and_equal_labels():
    # query 0: scores tie for the last two, which keep the data's order (label 0 first)
    # query 1: one document; query 2: all labels equal; query 3: all labels 0
    y = np.array([2, 0, 1, 3, 1, 1, 1, 0, 0])
    score = np.array([0.9, 0.1, 0.1, 5.0, 0.3, 0.2, 0.1, 1.0, 2.0])
    offsets = np.array([0, 3, 4, 7, 9])
    dcg = 3 / np.log2(2) + 0 / np.log2(3) + 1 / np.log2(4)
    idcg = 3 / np.log2(2) + 1 / np.log2(3) + 0 / np.log2(4)
    assert ndcg_at_k(y, score, offsets, 3) == pytest.approx((dcg / idcg + 3) / 4, rel=1e-15)
    # at k=1 query 0 is perfect
    assert ndcg_at_k(y, score, offsets, 1) == 1.0
    # reversing the tie puts the relevant document first
    swapped = np.array([2, 1, 0, 3, 1, 1, 1, 0, 0])
    assert ndcg_at_k(swapped, score, offsets, 3) == 1.0
    # a custom gain table
    gains = [0.0, 10.0, 20.0, 30.0]
    dcg = 20 / np.log2(2) + 0 + 10 / np.log2(4)
    idcg = 20 / np.log2(2) + 10 / np.log2(3)
    assert ndcg_at_k(y, score, offsets, 3, label_gain=gains) == pytest.approx(
        (dcg / idcg + 3) / 4, rel=1e-15)


def test_map_by_hand():
    # query 0 by score: rel, no, rel, rel, no -> precisions 1/1, 2/3, 3/4
    y = np.array([1, 0, 2, 1, 0, 0, 0, 3])
    score = np.array([9.0, 8.0, 7.0, 6.0, 5.0, 1.0, 2.0, 0.5])
    offsets = np.array([0, 5, 7, 8])
    q0_k5 = (1 + 2 / 3 + 3 / 4) / 3
    q0_k2 = 1 / 2  # one hit in the top 2, divided by min(2, 3 relevant)
    # query 1 has no relevant document (scores 1); query 2 one, ranked first
    assert map_at_k(y, score, offsets, 5) == pytest.approx((q0_k5 + 1 + 1) / 3, rel=1e-15)
    assert map_at_k(y, score, offsets, 2) == pytest.approx((q0_k2 + 1 + 1) / 3, rel=1e-15)
    assert map_at_k(y, score, offsets, 1) == pytest.approx((1 + 1 + 1) / 3)


def test_perfect_and_reversed_orders():
    y, _, offsets = _queries(1)
    assert ndcg_at_k(y, y, offsets, 10) == 1.0
    assert map_at_k(y, y, offsets, 10) == 1.0
    assert ndcg_at_k(y, -y + 1e-9 * np.arange(y.size), offsets, 10) < 0.9


def test_equal_lightgbm_metrics_on_its_predictions():
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(3)
    sizes = rng.integers(2, 30, size=120)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    X = rng.normal(size=(offsets[-1], 6))
    y = np.clip(np.round(X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=offsets[-1]) + 1), 0, 4)
    train, valid = slice(0, offsets[80]), slice(offsets[80], None)
    dtrain = lgb.Dataset(X[train], y[train], group=sizes[:80])
    dvalid = lgb.Dataset(X[valid], y[valid], group=sizes[80:], reference=dtrain)
    record = {}
    booster = lgb.train({"objective": "lambdarank", "metric": ["ndcg", "map"],
                         "eval_at": [1, 3, 5, 10], "num_leaves": 7, "verbose": -1,
                         "min_data_in_leaf": 5}, dtrain, num_boost_round=15,
                        valid_sets=[dvalid], callbacks=[lgb.record_evaluation(record)])
    score = booster.predict(X[valid])
    valid_offsets = offsets[80:] - offsets[80]
    for k in (1, 3, 5, 10):
        assert ndcg_at_k(y[valid], score, valid_offsets, k) == pytest.approx(
            record["valid_0"][f"ndcg@{k}"][-1], abs=1e-9)
        assert map_at_k(y[valid], score, valid_offsets, k) == pytest.approx(
            record["valid_0"][f"map@{k}"][-1], abs=1e-9)


def test_default_label_gain():
    np.testing.assert_array_equal(default_label_gain(4), [0, 1, 3, 7, 15])


@pytest.mark.parametrize(("args", "match"), [
    (([1, 0], [0.1, 0.2], [0, 2], 0), "k=0"),
    (([1, 0], [0.1, 0.2], [0, 2], 2.0), "k=2.0"),
    (([1, 0], [0.1, 0.2], [0, 1], 1), "group_offsets"),
    (([1, 0], [0.1, 0.2], [0, 2, 2], 1), "group_offsets"),
    (([1, 0], [0.1], [0, 2], 1), "y_score"),
    (([1, 0], [0.1, np.nan], [0, 2], 1), "NaN"),
    (([1, -1], [0.1, 0.2], [0, 2], 1), "labels"),
    (([1, 0.5], [0.1, 0.2], [0, 2], 1), "labels"),
])
def test_bad_input_is_one_clear_error(args, match):
    with pytest.raises(ValueError, match=match):
        ndcg_at_k(*args)
