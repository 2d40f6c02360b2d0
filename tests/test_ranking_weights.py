"""Weighted ranking (issue 37 part 5): query weights for the ranking losses and metrics.

The convention (``treeboost.losses.ranking``): weights are query weights, one per query or
one per row with the same value on every row of a query (XGBoost's meaning); each query's
gradients and hessians are multiplied by its weight normalised to mean 1 over the queries
of positive weight (XGBoost >= 2.0 normalises so too), so scaling every weight changes no
bit; a query of weight 0 is dropped before binning, as if absent; NDCG and MAP are the
weighted means over the queries of the per-query values.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import treeboost as tb
from treeboost import Dataset, train
from treeboost.losses import get_loss
from treeboost.losses.ranking import (
    LambdaRankContext,
    PairwiseContext,
    RankXENDCGContext,
    normalised_query_weights,
)
from treeboost.metrics import map_at_k, ndcg_at_k, query_weights

LOSSES = ("lambdarank", "rank_xendcg", "pairwise")


def _queries(seed=0, n_queries=30, size=10, n_features=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * size, n_features))
    utility = X[:, 0] + 0.5 * X[:, 1] + 0.4 * rng.normal(size=X.shape[0])
    y = np.digitize(utility, [0.0, 1.0, 2.0]).astype(float)
    return X, y, np.full(n_queries, size)


@pytest.fixture(scope="module")
def data():
    X, y, g = _queries()
    w = np.random.default_rng(1).uniform(0.2, 3.0, g.size)  # one weight per query
    return X, y, g, w


def _model(est):
    """Every tree of a fitted estimator, as plain data (``Booster.dump_model``)."""
    return est.booster_.dump_model()["trees"]


# ---- doubling every weight ----------------------------------------------------------------
# reg_lambda and min_child_weight would read doubled hessians differently, and min_child_weight
# binds here: identical models come from the normalisation, not from parameters that ignore
# the scale
HESSIAN_SENSITIVE = dict(n_estimators=8, reg_lambda=1.0, min_child_weight=0.05, subsample=0.8,
                         min_samples_leaf=5, random_state=0)


@pytest.mark.parametrize("loss", LOSSES)
def test_doubling_every_weight_changes_no_bit(data, loss):
    X, y, g, w = data
    fits = [tb.TreeBoostRanker(loss=loss, **HESSIAN_SENSITIVE).fit(X, y, group=g,
                                                                    sample_weight=s)
            for s in (w, 2 * w, np.repeat(w, g))]
    assert _model(fits[1]) == _model(fits[0])
    assert _model(fits[2]) == _model(fits[0])  # per row, constant in each query: the same
    np.testing.assert_array_equal(fits[1].predict(X), fits[0].predict(X))
    # the weights are read: the model is not the unweighted one
    plain = tb.TreeBoostRanker(loss=loss, **HESSIAN_SENSITIVE).fit(X, y, group=g)
    assert not np.array_equal(plain.predict(X), fits[0].predict(X))


@pytest.mark.parametrize("loss", LOSSES)
def test_equal_weights_are_no_weights(data, loss):
    X, y, g, _ = data
    plain = tb.TreeBoostRanker(loss=loss, **HESSIAN_SENSITIVE).fit(X, y, group=g)
    for c in (1.0, 0.1, 7.0):
        weighted = tb.TreeBoostRanker(loss=loss, **HESSIAN_SENSITIVE).fit(
            X, y, group=g, sample_weight=np.full(g.size, c))
        assert _model(weighted) == _model(plain)


def test_train_with_dataset_weights_doubles_alike(data):
    X, y, g, w = data
    params = dict(HESSIAN_SENSITIVE, loss="lambdarank")
    a, b, plain = (train(params, Dataset(X, y, weight=rows, group=g)).dump_model()["trees"]
                   for rows in (np.repeat(w, g), np.repeat(2 * w, g), None))
    assert a == b
    assert a != plain


def test_normalised_factors_keep_every_bit_under_scaling():
    rng = np.random.default_rng(3)
    offsets = np.array([0, 3, 7, 8, 12])
    w = rng.uniform(0.1, 5.0, 4)
    f = normalised_query_weights(np.repeat(w, np.diff(offsets)), offsets)
    assert np.isclose(f.mean(), 1.0)
    for scale in (2.0, 0.5, 1024.0):
        np.testing.assert_array_equal(normalised_query_weights(w * scale, offsets), f)
    # a query of weight 0 does not count in the mean
    f0 = normalised_query_weights(np.r_[w[:2], 0.0, w[2:]], np.r_[offsets, 13])
    np.testing.assert_array_equal(f0, np.r_[f[:2], 0.0, f[2:]])
    assert normalised_query_weights(np.full(4, 3.0), offsets) is None


def _xendcg(y, offsets, query_weight):
    context = RankXENDCGContext(y, offsets, query_weight=query_weight)
    return lambda s: context.grad_hess(s, np.linspace(0.1, 0.9, s.size))


@pytest.mark.parametrize("make", [
    lambda y, o, qw: LambdaRankContext(y, o, truncation_level=5, query_weight=qw).grad_hess,
    lambda y, o, qw: PairwiseContext(y, o, query_weight=qw).grad_hess,
    _xendcg,
], ids=["lambdarank", "pairwise", "rank_xendcg"])
def test_query_weight_multiplies_each_querys_gradients(make):
    rng = np.random.default_rng(4)
    offsets = np.array([0, 5, 9, 15])
    y = rng.integers(0, 4, 15).astype(float)
    score = rng.normal(size=15)
    qw = np.array([0.5, 0.0, 2.5])
    g1, h1 = make(y, offsets, None)(score)
    gw, hw = make(y, offsets, qw)(score)
    rows = np.repeat(qw, np.diff(offsets))
    np.testing.assert_allclose(gw, g1 * rows, rtol=1e-6, atol=0)
    np.testing.assert_allclose(hw, h1 * rows, rtol=1e-6, atol=0)
    assert np.all(gw[5:9] == 0)
    assert np.all(hw[5:9] == 0)
    assert np.any(g1[5:9] != 0)


# ---- a query of weight 0 is as if absent -------------------------------------------------
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("extra", [{}, dict(subsample=0.7, colsample_bytree=0.8)])
def test_query_of_weight_0_is_as_if_absent(data, loss, extra):
    X, y, g, w = data
    gone = 4  # a query in the middle: later queries' rows move up
    w0 = w.copy()
    w0[gone] = 0.0
    rows = np.repeat(np.arange(g.size), g) != gone
    params = dict(loss=loss, n_estimators=8, reg_lambda=1.0, random_state=0, **extra)
    with_zero = tb.TreeBoostRanker(**params).fit(X, y, group=g, sample_weight=w0)
    without = tb.TreeBoostRanker(**params).fit(X[rows], y[rows], group=np.delete(g, gone),
                                               sample_weight=np.delete(w, gone))
    assert _model(with_zero) == _model(without)
    np.testing.assert_array_equal(with_zero.predict(X), without.predict(X))
    # the same through train() and a Dataset's row weights
    a = train(dict(params, loss=loss), Dataset(X, y, weight=np.repeat(w0, g), group=g))
    b = train(dict(params, loss=loss), Dataset(X[rows], y[rows], group=np.delete(g, gone),
                                               weight=np.repeat(np.delete(w, gone),
                                                                np.delete(g, gone))))
    assert a.dump_model()["trees"] == b.dump_model()["trees"]


@pytest.mark.parametrize("loss", ["lambdarank", "pairwise"])
def test_loss_gives_a_zero_weight_query_no_gradient_and_the_others_theirs(loss):
    """The loss alone (a Dataset that kept the rows): the other queries' gradients are
    those without the query, bit for bit."""
    rng = np.random.default_rng(5)
    sizes = np.array([4, 6, 5])
    offsets = np.r_[0, np.cumsum(sizes)]
    y = rng.integers(0, 3, 15).astype(float)
    raw = rng.normal(size=(1, 15))
    w = np.repeat([1.5, 0.0, 3.0], sizes)

    def grads(y, raw, w, offsets):
        g = np.empty((1, y.size), dtype=np.float32)
        h = np.empty((1, y.size), dtype=np.float32)
        get_loss(loss).gradient_hessian(y, raw, w, g, h, group_offsets=offsets)
        return g[0], h[0]

    g, h = grads(y, raw, w, offsets)
    keep = w > 0
    g2, h2 = grads(y[keep], raw[:, keep], w[keep], np.array([0, 4, 9]))
    np.testing.assert_array_equal(g[keep], g2)
    np.testing.assert_array_equal(h[keep], h2)
    assert not g[~keep].any()
    assert not h[~keep].any()


# ---- the weighted metrics equal their definitions --------------------------------------------
def _ndcg_by_hand(labels, scores, k):
    order = sorted(range(len(labels)), key=lambda i: -scores[i])  # stable: ties in row order
    dcg = sum((2 ** labels[i] - 1) / math.log2(r + 2) for r, i in enumerate(order[:k]))
    ideal = sorted(labels, reverse=True)
    idcg = sum((2 ** lab - 1) / math.log2(r + 2) for r, lab in enumerate(ideal[:k]))
    return dcg / idcg if idcg > 0 else 1.0


def _ap_by_hand(labels, scores, k):
    order = sorted(range(len(labels)), key=lambda i: -scores[i])
    n_relevant = sum(lab > 0 for lab in labels)
    if n_relevant == 0:
        return 1.0
    hits, total = 0, 0.0
    for r, i in enumerate(order[:k]):
        if labels[i] > 0:
            hits += 1
            total += hits / (r + 1)
    return total / min(k, n_relevant)


QUERIES = [([3, 0, 1, 2], [0.1, 0.9, 0.5, 0.3]),
           ([0, 0, 1], [0.2, 0.7, 0.1]),
           ([2, 1, 0, 0, 1], [0.8, 0.6, 0.4, 0.9, 0.1]),
           ([0, 0], [0.5, 0.4])]              # no relevant document: scores 1
WEIGHTS = [2.0, 0.5, 1.0, 3.0]


@pytest.mark.parametrize("k", [1, 2, 3, 10])
def test_weighted_ndcg_and_map_equal_their_definitions(k):
    y = np.concatenate([q[0] for q in QUERIES]).astype(float)
    s = np.concatenate([q[1] for q in QUERIES])
    sizes = [len(q[0]) for q in QUERIES]
    offsets = np.r_[0, np.cumsum(sizes)]
    total = sum(WEIGHTS)
    ndcg = sum(w * _ndcg_by_hand(*q, k) for w, q in zip(WEIGHTS, QUERIES, strict=True)) / total
    ap = sum(w * _ap_by_hand(*q, k) for w, q in zip(WEIGHTS, QUERIES, strict=True)) / total
    per_row = np.repeat(WEIGHTS, sizes)
    for given in (WEIGHTS, per_row):
        assert ndcg_at_k(y, s, offsets, k, sample_weight=given) == pytest.approx(ndcg, abs=1e-14)
        assert map_at_k(y, s, offsets, k, sample_weight=given) == pytest.approx(ap, abs=1e-14)
    # the weights count: the unweighted means differ
    assert ndcg_at_k(y, s, offsets, k) != pytest.approx(ndcg, abs=1e-6)
    # a query of weight 0 counts as absent
    w0 = [*WEIGHTS[:1], 0.0, *WEIGHTS[2:]]
    kept = [q for i, q in enumerate(QUERIES) if i != 1]
    rows = np.repeat(np.arange(4), sizes) != 1
    assert ndcg_at_k(y, s, offsets, k, sample_weight=w0) == pytest.approx(
        ndcg_at_k(y[rows], s[rows], np.r_[0, np.cumsum([len(q[0]) for q in kept])], k,
                  sample_weight=[w for w in w0 if w > 0]), abs=1e-15)


def test_unweighted_metrics_are_the_plain_means():
    y = np.concatenate([q[0] for q in QUERIES]).astype(float)
    s = np.concatenate([q[1] for q in QUERIES])
    offsets = np.r_[0, np.cumsum([len(q[0]) for q in QUERIES])]
    for fn in (ndcg_at_k, map_at_k):
        assert fn(y, s, offsets, 3, sample_weight=np.ones(4)) == fn(y, s, offsets, 3)
        assert fn(y, s, offsets, 3, sample_weight=np.full(y.size, 5.0)) == fn(y, s, offsets, 3)


def test_training_metrics_and_score_are_weighted(data):
    X, y, g, w = data
    Xv, yv, gv = _queries(seed=7, n_queries=12)
    wv = np.random.default_rng(8).uniform(0.1, 4.0, gv.size)
    model = tb.TreeBoostRanker(n_estimators=6, eval_metric=["ndcg@5", "map@3"],
                               random_state=0)
    model.fit(X, y, group=g, sample_weight=w, eval_set=[(Xv, yv)], eval_group=[gv],
              eval_sample_weight=[wv])
    offsets = np.r_[0, np.cumsum(gv)]
    scores = model.predict(Xv)
    log = model.evals_result_["validation_0"]
    assert log["ndcg@5"][-1] == ndcg_at_k(yv, scores, offsets, 5, sample_weight=wv)
    assert log["map@3"][-1] == map_at_k(yv, scores, offsets, 3, sample_weight=wv)
    assert log["ndcg@5"][-1] != ndcg_at_k(yv, scores, offsets, 5)
    assert model.score(Xv, yv, group=gv, k=5, sample_weight=wv) == log["ndcg@5"][-1]
    # the early-stopping hold-out of whole queries keeps their weights
    stopped = tb.TreeBoostRanker(n_estimators=6, n_iter_no_change=3, random_state=0)
    stopped.fit(X, y, group=g, sample_weight=w)
    assert len(stopped.evals_result_["validation"]["ndcg@10"]) >= 1


# ---- what is refused, by name -------------------------------------------------------------
@pytest.mark.parametrize(("weights", "match"), [
    (lambda g: np.r_[np.ones(5), np.full(g.sum() - 5, 2.0)], "sample_weight differs within "
                                                            "query 0"),
    (lambda g: np.ones(g.size + 1), r"sample_weight has shape \(31,\)"),
    (lambda g: np.r_[-1.0, np.ones(g.size - 1)], "sample_weight must be finite and >= 0"),
    (lambda g: np.r_[np.nan, np.ones(g.size - 1)], "sample_weight must be finite and >= 0"),
    (lambda g: np.zeros(g.size), "sample_weight is 0 on every query"),
])
def test_bad_weights_are_refused_naming_sample_weight(data, weights, match):
    X, y, g, _ = data
    with pytest.raises(ValueError, match=match):
        tb.TreeBoostRanker(n_estimators=2).fit(X, y, group=g, sample_weight=weights(g))


def test_bad_eval_weights_are_named(data):
    X, y, g, _ = data
    with pytest.raises(ValueError, match=r"eval_sample_weight\[0\] differs within query 1"):
        tb.TreeBoostRanker(n_estimators=2).fit(
            X, y, group=g, eval_set=[(X, y)], eval_group=[g],
            eval_sample_weight=[np.r_[np.ones(15), np.full(g.sum() - 15, 2.0)]])
    with pytest.raises(ValueError, match="one entry"):
        tb.TreeBoostRanker(n_estimators=2).fit(X, y, group=g, eval_sample_weight=[None])


def test_train_refuses_row_weights_that_differ_within_a_query(data):
    X, y, g, _ = data
    rows = np.ones(g.sum())
    rows[3] = 2.0
    with pytest.raises(ValueError, match="loss 'lambdarank': sample_weight differs within "
                                         "query 0"):
        train({"loss": "lambdarank", "n_estimators": 2}, Dataset(X, y, weight=rows, group=g))


def test_metric_function_refuses_weights_that_differ_within_a_query():
    with pytest.raises(ValueError, match="sample_weight differs within query 1"):
        ndcg_at_k([1, 0, 1, 0], [0.1, 0.2, 0.3, 0.4], [0, 2, 4], 2,
                  sample_weight=[1, 1, 1, 2])
    assert query_weights(None, [0, 2]) is None


def test_collective_refuses_unequal_weights_on_every_member():
    """Over a collective, F0's summed statistics show unequal weights to every member."""
    loss = get_loss("lambdarank")
    alike = [loss.init_statistics(None, np.full(n, 2.0)) for n in (5, 7)]
    assert not loss.init_from_statistics(sum(alike)).any()
    unit = [loss.init_statistics(None, np.ones(n)) for n in (5, 7)]
    assert not loss.init_from_statistics(sum(unit)).any()
    for members in ([np.full(5, 1.0), np.full(7, 2.0)],   # each alike, the members not
                    [np.r_[1.0, 2.0], np.ones(3)]):       # one member's differ
        stats = sum(loss.init_statistics(None, w) for w in members)
        with pytest.raises(ValueError, match="collective does not support sample_weight"):
            loss.init_from_statistics(stats)


def test_dask_ranker_refuses_weights_by_name():
    dask_module = pytest.importorskip("treeboost.dask")
    with pytest.raises(ValueError, match="sample_weight: DaskTreeBoostRanker"):
        dask_module.DaskTreeBoostRanker().fit(None, None, qid=None, sample_weight=[1.0])


def test_training_over_a_collective_refuses_unequal_weights_on_every_member(data):
    import threading

    from treeboost.binning import BinMapper
    from treeboost.collective import Collective

    X, y, g, w = data
    bins = BinMapper(63, random_state=0).fit(X)
    halves = [np.arange(0, 15), np.arange(15, 30)]  # whole queries on each member
    offsets = np.r_[0, np.cumsum(g)]
    host = Collective.host(2, timeout=30)
    errors = [None, None]

    def member(rank):
        q = halves[rank]
        rows = np.concatenate([np.arange(offsets[i], offsets[i + 1]) for i in q])
        try:
            group = host if rank == 0 else Collective.join(host.address, rank, 2,
                                                           token=host.token, timeout=30)
            with group:
                train({"loss": "lambdarank", "n_estimators": 2, "random_state": 0},
                      Dataset(X[rows], y[rows], group=g[q],
                              weight=np.repeat(w[q], g[q])).construct(bins),
                      collective=group)
        except Exception as exc:  # each member's own error
            errors[rank] = exc

    threads = [threading.Thread(target=member, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    for exc in errors:
        assert isinstance(exc, ValueError)
        assert "collective does not support sample_weight" in str(exc)
