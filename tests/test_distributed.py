"""Data-parallel training over a treeboost.collective group (issue 15): each member trains
on its own rows with the common bins, F0 and the histograms summed over the group, and
gets the model one process trains on all the rows: the same trees, scores equal to
float round-off (the sums are added in another order), and the same bits on every member.

The members are threads here (their sockets are those of separate processes).
"""

import threading

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from treeboost import Dataset, train
from treeboost.binning import BinMapper
from treeboost.collective import Collective


def _data(task, n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    X[rng.random(size=X.shape) < 0.05] = np.nan
    Z = np.nan_to_num(X)
    signal = Z[:, 0] - Z[:, 1] ** 2 + 0.5 * np.sin(Z[:, 2] * 3)
    if task == "regression":
        return X, signal + 0.3 * rng.normal(size=n), {}
    if task == "binary":
        return X, (signal + rng.normal(size=n) > 0).astype(float), {"loss": "log_loss"}
    return X, np.digitize(signal, [-1.0, 0.0, 1.0]).astype(float), {"loss": "log_loss"}


def _members(world_size, work):
    """Run work(rank, group) on ``world_size`` threads; return their results."""
    host = Collective.host(world_size, timeout=30)
    results, errors = [None] * world_size, []

    def member(rank):
        try:
            group = host if rank == 0 else Collective.join(host.address, rank, world_size,
                                                           token=host.token, timeout=30)
            with group:
                results[rank] = work(rank, group)
        except Exception as exc:  # reported with the rank
            errors.append((rank, exc))

    threads = [threading.Thread(target=member, args=(r,)) for r in range(world_size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors
    return results


@pytest.mark.parametrize(("task", "subsample"), [("regression", 1.0), ("binary", 1.0),
                                               ("multiclass", 1.0), ("regression", 0.7),
                                               ("binary", 0.5)])
@pytest.mark.parametrize("world_size", [2, 3])
def test_members_train_the_model_of_all_the_rows(task, subsample, world_size):
    X, y, extra = _data(task)
    weight = np.random.default_rng(1).uniform(0.5, 2.0, size=y.size)
    params = {"n_estimators": 15, "max_leaf_nodes": 12, "learning_rate": 0.2,
              "colsample_bytree": 0.8, "subsample": subsample, "random_state": 4, **extra}
    bins = BinMapper(63, random_state=0).fit(X)
    single = train(params, Dataset(X, y, weight=weight).construct(bins))
    shards = np.array_split(np.arange(y.size), world_size)  # uneven, in row order

    def work(rank, group):
        s = shards[rank]
        local = Dataset(X[s], y[s], weight=weight[s]).construct(bins)
        return train(params, local, collective=group)

    boosters = _members(world_size, work)
    expected = single.predict_raw(X)
    for booster in boosters:
        assert len(booster.trees) == len(single.trees)
        for stage, stage_single in zip(booster.trees, single.trees, strict=True):
            for tree, tree_single in zip(stage, stage_single, strict=True):
                for name in ("feature", "bin_threshold", "missing_left", "left", "right",
                             "count"):
                    assert_array_equal(getattr(tree, name), getattr(tree_single, name))
        assert_allclose(booster.init_score, single.init_score, rtol=1e-13, atol=1e-15)
        assert_allclose(booster.predict_raw(X), expected, rtol=1e-9, atol=1e-9)
        assert_array_equal(booster.predict_raw(X), boosters[0].predict_raw(X))


def test_unsupported_settings_are_refused_on_every_member():
    X, y, _ = _data("regression", n=600)
    bins = BinMapper(63, random_state=0).fit(X)

    def work(rank, group):
        group.barrier()  # the group formed; the refusals below come before any sum
        local = Dataset(X[rank::2], y[rank::2]).construct(bins)
        with pytest.raises(ValueError, match="boosting='goss'"):
            train({"n_estimators": 2, "boosting": "goss", "random_state": 0}, local,
                  collective=group)
        with pytest.raises(ValueError, match="loss 'rank_xendcg'"):
            train({"n_estimators": 2, "loss": "rank_xendcg", "random_state": 0},
                  Dataset(X[rank::2], np.zeros(300), group=[300]).construct(bins),
                  collective=group)
        with pytest.raises(ValueError, match="int random_state"):
            train({"n_estimators": 2}, local, collective=group)
        with pytest.raises(ValueError, match="common bins"):
            train({"n_estimators": 2, "random_state": 0}, Dataset(X, y), collective=group)
        return True

    assert _members(2, work) == [True, True]


@pytest.mark.parametrize("cuts", [(50,), (2400,), (300, 2900)])
def test_uneven_members_train_the_model_of_all_the_rows(cuts):
    """Members of very different sizes: a member's own rows must not bound the trees (50
    rows hold at most 2 leaves of 20 rows, the group's trees 12), nor decide alone which
    features can split (feature 5 is constant, missing only in the first member's rows)."""
    X, y, _ = _data("regression")
    X[:, 5] = 1.0
    X[:40, 5] = np.nan
    y[:40] += 3.0  # worth a split on feature 5's missing values
    params = {"n_estimators": 10, "max_leaf_nodes": 12, "random_state": 2}
    bins = BinMapper(63, random_state=0).fit(X)
    single = train(params, Dataset(X, y).construct(bins))
    assert any(5 in stage[0].feature for stage in single.trees)  # missing vs present
    shards = np.split(np.arange(y.size), list(cuts))

    def work(rank, group):
        s = shards[rank]
        return train(params, Dataset(X[s], y[s]).construct(bins), collective=group)

    for booster in _members(len(shards), work):
        for stage, stage_single in zip(booster.trees, single.trees, strict=True):
            assert_array_equal(stage[0].feature, stage_single[0].feature)
        assert_allclose(booster.predict_raw(X), single.predict_raw(X), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("task", ["regression", "binary"])
def test_early_stopping_over_the_members_rows_stops_where_one_process_does(task):
    """Validation sets split over the members: the log holds the metrics of all their
    rows (gathered in rank order), so every member stops at one process's stage."""
    X, y, extra = _data(task, n=4000, seed=3)
    Xt, yt, Xv, yv = X[:3000], y[:3000], X[3000:], y[3000:]
    wv = np.random.default_rng(2).uniform(0.5, 2.0, size=yv.size)
    metric = "rmse" if task == "regression" else ["auc", "loss"]
    params = {"n_estimators": 300, "max_leaf_nodes": 31, "learning_rate": 0.3,
              "min_samples_leaf": 5, "n_iter_no_change": 5, "eval_metric": metric,
              "random_state": 1, **extra}
    bins = BinMapper(63, random_state=0).fit(Xt)
    single = train(params, Dataset(Xt, yt).construct(bins),
                   valid_sets=[Dataset(Xv, yv, weight=wv)])
    assert single.best_iteration is not None
    assert single.best_iteration < 100
    train_parts = np.array_split(np.arange(3000), 2)
    valid_parts = [np.arange(0, 200), np.arange(200, 1000)]  # uneven

    def work(rank, group):
        t, v = train_parts[rank], valid_parts[rank]
        return train(params, Dataset(Xt[t], yt[t]).construct(bins),
                     valid_sets=[Dataset(Xv[v], yv[v], weight=wv[v])], collective=group)

    boosters = _members(2, work)
    for booster in boosters:
        assert booster.best_iteration == single.best_iteration
        assert len(booster.trees) == len(single.trees)
        assert booster.evals_result.keys() == single.evals_result.keys()
        for name, per_metric in single.evals_result["validation_0"].items():
            assert_allclose(booster.evals_result["validation_0"][name], per_metric,
                            rtol=1e-10)
    assert_array_equal(boosters[0].predict_raw(Xv), boosters[1].predict_raw(Xv))


def test_early_stopping_on_the_training_rows_and_mismatched_sets():
    X, y, _ = _data("regression", n=2000, seed=5)
    params = {"n_estimators": 200, "learning_rate": 0.5, "n_iter_no_change": 3,
              "tol": 1e-3, "random_state": 0}
    bins = BinMapper(63, random_state=0).fit(X)
    single = train(params, Dataset(X, y).construct(bins))
    assert single.best_iteration is not None
    assert single.best_iteration < 199

    def work(rank, group):
        s = slice(0, 700) if rank == 0 else slice(700, None)
        local = Dataset(X[s], y[s]).construct(bins)
        booster = train(params, local, collective=group)
        # a member without the validation set its peer has: one clear error on both
        valid = [Dataset(X[:10], y[:10])] if rank == 0 else []
        with pytest.raises(ValueError, match="evaluate different data sets"):
            train({**params, "n_iter_no_change": None}, local, valid_sets=valid,
                  collective=group)
        return booster

    for booster in _members(2, work):
        assert booster.best_iteration == single.best_iteration
        assert_allclose(booster.evals_result["training"]["squared_error"],
                        single.evals_result["training"]["squared_error"], rtol=1e-10)


@pytest.mark.parametrize(("loss", "extra"), [("absolute_error", {}),
                                             ("quantile", {"alpha": 0.8}),
                                             ("huber", {"alpha": 0.7}),
                                             ("poisson", {})])
@pytest.mark.parametrize("subsample", [1.0, 0.7])
def test_line_search_and_numeric_losses_over_the_members_rows(loss, extra, subsample):
    """F0 a median / quantile (every member's labels gathered once) and leaves the
    weighted median / quantile of each leaf's residuals (the leaf's rows of every member
    gathered per tree, in rank order): one process's model."""
    X, y, _ = _data("regression", n=2500, seed=6)
    if loss == "poisson":
        y = np.random.default_rng(3).poisson(np.exp(0.5 * np.nan_to_num(X[:, 0])))
    weight = np.random.default_rng(2).uniform(0.5, 2.0, size=y.size)
    params = {"n_estimators": 12, "max_leaf_nodes": 10, "learning_rate": 0.3,
              "subsample": subsample, "loss": loss, "random_state": 5, **extra}
    bins = BinMapper(63, random_state=0).fit(X)
    single = train(params, Dataset(X, y, weight=weight).construct(bins))
    cuts = np.array_split(np.arange(y.size), 3)

    def work(rank, group):
        s = cuts[rank]
        return train(params, Dataset(X[s], y[s], weight=weight[s]).construct(bins),
                     collective=group)

    boosters = _members(3, work)
    for booster in boosters:
        assert_allclose(booster.init_score, single.init_score, rtol=1e-13, atol=1e-15)
        for stage, stage_single in zip(booster.trees, single.trees, strict=True):
            for tree, tree_single in zip(stage, stage_single, strict=True):
                assert_array_equal(tree.feature, tree_single.feature)
                assert_array_equal(tree.bin_threshold, tree_single.bin_threshold)
                assert_allclose(tree.value, tree_single.value, rtol=1e-9, atol=1e-12)
        assert_array_equal(booster.predict_raw(X), boosters[0].predict_raw(X))


@pytest.mark.parametrize("loss", ["lambdarank", "pairwise"])
def test_ranking_over_members_holding_whole_queries(loss):
    """Each member holds whole queries: its gradients are one process's, and the NDCG of
    the validation queries of every member (gathered with their group sizes) drives early
    stopping to one process's stage."""
    rng = np.random.default_rng(11)
    sizes = rng.integers(5, 40, size=120)
    n = int(sizes.sum())
    X = rng.normal(size=(n, 5))
    y = np.clip(np.round(X[:, 0] + 0.5 * X[:, 1] ** 2 + rng.normal(scale=0.7, size=n)),
                0, 4)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    train_q, valid_q = np.arange(90), np.arange(90, 120)

    def rows(queries):
        return np.concatenate([np.arange(offsets[q], offsets[q + 1]) for q in queries])

    params = {"n_estimators": 200, "max_leaf_nodes": 8, "learning_rate": 0.3,
              "loss": loss, "eval_metric": ["ndcg@5", "map@3"], "n_iter_no_change": 5,
              "subsample": 0.8, "random_state": 3}
    bins = BinMapper(63, random_state=0).fit(X)
    tr, va = rows(train_q), rows(valid_q)
    single = train(params, Dataset(X[tr], y[tr], group=sizes[train_q]).construct(bins),
                   valid_sets=[Dataset(X[va], y[va], group=sizes[valid_q])])
    assert single.best_iteration is not None
    cut_t, cut_v = [train_q[:35], train_q[35:]], [valid_q[:20], valid_q[20:]]

    def work(rank, group):
        t, v = rows(cut_t[rank]), rows(cut_v[rank])
        return train(params, Dataset(X[t], y[t], group=sizes[cut_t[rank]]).construct(bins),
                     valid_sets=[Dataset(X[v], y[v], group=sizes[cut_v[rank]])],
                     collective=group)

    for booster in _members(2, work):
        assert booster.best_iteration == single.best_iteration
        for stage, stage_single in zip(booster.trees, single.trees, strict=True):
            for tree, tree_single in zip(stage, stage_single, strict=True):
                assert_array_equal(tree.feature, tree_single.feature)
                assert_array_equal(tree.bin_threshold, tree_single.bin_threshold)
        for name, values in single.evals_result["validation_0"].items():
            assert_allclose(booster.evals_result["validation_0"][name], values, rtol=1e-10)
        assert_allclose(booster.predict_raw(X), single.predict_raw(X), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize(("task", "subsample", "world_size"), [("binary", 1.0, 2),
                                                                ("binary", 0.6, 3),
                                                                ("multiclass", 1.0, 2)])
def test_quantised_gradients_over_the_members_rows(task, subsample, world_size):
    """use_quantized_grad: the scales from every member's maxima, the stochastic rounding
    drawn by the group's row index, the packed integer histograms (and the row counts the
    grower chooses by) summed exactly, the leaves refit from every member's exact sums:
    one process's quantised trees."""
    X, y, extra = _data(task, n=3000, seed=8)
    params = {"n_estimators": 10, "max_leaf_nodes": 12, "learning_rate": 0.3,
              "use_quantized_grad": True, "subsample": subsample, "random_state": 2,
              **extra}
    bins = BinMapper(63, random_state=0).fit(X)
    single = train(params, Dataset(X, y).construct(bins))
    cuts = np.array_split(np.arange(y.size), world_size)

    def work(rank, group):
        s = cuts[rank]
        return train(params, Dataset(X[s], y[s]).construct(bins), collective=group)

    boosters = _members(world_size, work)
    for booster in boosters:
        for stage, stage_single in zip(booster.trees, single.trees, strict=True):
            for tree, tree_single in zip(stage, stage_single, strict=True):
                for name in ("feature", "bin_threshold", "missing_left", "left", "count"):
                    assert_array_equal(getattr(tree, name), getattr(tree_single, name))
                assert_allclose(tree.value, tree_single.value, rtol=1e-9, atol=1e-12)
        assert_allclose(booster.predict_raw(X), single.predict_raw(X), rtol=1e-9, atol=1e-9)
        assert_array_equal(booster.predict_raw(X), boosters[0].predict_raw(X))
