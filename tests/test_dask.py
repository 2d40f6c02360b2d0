"""treeboost.dask: data-parallel training over a Dask cluster gives the model of all the rows.

The reference is the local ``train`` on all the rows binned with the fitted model's common
bins (``booster_.bin_mapper``): the same trees, predictions equal to float round-off.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

from treeboost import Dataset, TreeBoostClassifier, TreeBoostRegressor, load_model, train  # noqa: E402
from treeboost.dask import DaskTreeBoostClassifier, DaskTreeBoostRegressor  # noqa: E402

PARAMS = {"n_estimators": 12, "max_leaf_nodes": 10, "learning_rate": 0.2,
          "colsample_bytree": 0.8, "random_state": 3}


@pytest.fixture(scope="module")
def client():
    # processes=True is the realistic setting (each worker its own interpreter and sockets)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def _data(task, n=2000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    X[rng.random(size=X.shape) < 0.05] = np.nan
    Z = np.nan_to_num(X)
    signal = Z[:, 0] - Z[:, 1] ** 2 + 0.5 * np.sin(Z[:, 2] * 3)
    if task == "regression":
        return X, signal + 0.3 * rng.normal(size=n)
    if task == "binary":
        return X, (signal + rng.normal(size=n) > 0).astype(float)
    return X, np.digitize(signal, [-1.0, 0.0, 1.0]).astype(float) * 10  # labels 0, 10, 20, 30


def _assert_same_trees(booster, single):
    assert len(booster.trees) == len(single.trees)
    for stage, stage_single in zip(booster.trees, single.trees, strict=True):
        for tree, tree_single in zip(stage, stage_single, strict=True):
            for name in ("feature", "bin_threshold", "missing_left", "left", "right", "count",
                         "is_categorical", "cat_bitset"):
                assert_array_equal(getattr(tree, name), getattr(tree_single, name))


def _spread(client, X, n_chunks=4):
    """X (2-D or 1-D) as a dask array of ``n_chunks`` row chunks placed on the workers in
    turn."""
    # a worker that an earlier test's fit restarted may not have registered again yet
    # (seen once in CI: no workers listed, a modulo by zero below)
    client.wait_for_workers(2, timeout=120)
    workers = sorted(client.scheduler_info()["workers"])
    parts = np.array_split(X, n_chunks)
    futures = [client.scatter(part, workers=[workers[i % len(workers)]], hash=False)
               for i, part in enumerate(parts)]
    Xd = da.concatenate([da.from_delayed(f, shape=part.shape, dtype=part.dtype)
                         for f, part in zip(futures, parts, strict=True)])
    Xd = client.persist(Xd)
    distributed.wait(Xd)
    held = {w for holders in client.who_has(Xd).values() for w in holders}
    assert held == set(workers)  # both workers hold data
    return Xd


def test_regressor_equals_local_training(client, tmp_path):
    X, y = _data("regression")
    weight = np.random.default_rng(1).uniform(0.5, 2.0, size=y.size)
    Xd = _spread(client, X)
    model = DaskTreeBoostRegressor(**PARAMS, client=client).fit(
        Xd, da.from_array(y, chunks=500), sample_weight=da.from_array(weight, chunks=700))
    assert sorted(model.workers_) == sorted(client.scheduler_info()["workers"])
    bins = model.booster_.bin_mapper
    single = train(PARAMS, Dataset(X, y, weight=weight).construct(bins))
    _assert_same_trees(model.booster_, single)
    expected = np.ravel(single.predict_raw(X))
    pred = model.predict(Xd)
    assert isinstance(pred, da.Array)
    assert_allclose(pred.compute(), expected, rtol=1e-9, atol=1e-9)

    local = model.to_local()
    assert type(local) is TreeBoostRegressor
    assert local.get_params()["max_leaf_nodes"] == PARAMS["max_leaf_nodes"]
    assert_allclose(local.predict(X), expected, rtol=1e-9, atol=1e-9)
    path = tmp_path / "model.json"
    local.save_model(path)
    loaded = load_model(path)
    assert type(loaded) is TreeBoostRegressor
    assert_array_equal(loaded.predict(X), local.predict(X))


@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_classifier_equals_local_training(client, task):
    X, y = _data(task, seed=2)
    Xd, yd = _spread(client, X), da.from_array(y, chunks=500)
    model = DaskTreeBoostClassifier(**PARAMS, client=client).fit(Xd, yd)
    classes = np.unique(y)
    assert_array_equal(model.classes_, classes)
    encoded = np.searchsorted(classes, y).astype(float)
    bins = model.booster_.bin_mapper
    single = train(dict(PARAMS, loss="log_loss", n_classes=len(classes)),
                   Dataset(X, encoded).construct(bins))
    _assert_same_trees(model.booster_, single)
    reference = TreeBoostClassifier._from_booster(
        single, PARAMS, feature_names=None, pandas_categories={}, classes=classes,
        best_iteration=None, evals_result={})
    proba = model.predict_proba(Xd)
    assert isinstance(proba, da.Array)
    assert proba.shape == (len(y), len(classes))
    assert_allclose(proba.compute(), reference.predict_proba(X), rtol=1e-9, atol=1e-9)
    assert_array_equal(model.predict(Xd).compute(), reference.predict(X))
    assert type(model.to_local()) is TreeBoostClassifier


def test_dataframe_input_keeps_column_names(client):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, y = _data("regression", n=1200, seed=4)
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(5)])
    ddf = dd.from_pandas(frame, npartitions=3)
    yd = dd.from_pandas(pd.Series(y), npartitions=3)
    # Dask places the partitions as it likes: members of any size train one model
    model = DaskTreeBoostRegressor(n_estimators=5, max_leaf_nodes=12, random_state=0,
                                   client=client).fit(ddf, yd)
    assert list(model.feature_names_in_) == list(frame.columns)
    assert_allclose(model.predict(ddf).compute(), model.to_local().predict(frame),
                    rtol=1e-12, atol=1e-12)
    frame["c"] = pd.Categorical(np.where(y > 0, "a", "b"))
    with pytest.raises(TypeError, match="category"):
        DaskTreeBoostRegressor(client=client).fit(dd.from_pandas(frame, npartitions=2),
                                                  dd.from_pandas(pd.Series(y), npartitions=2))


def test_refused_setting_is_one_clear_error_and_the_cluster_survives(client):
    X, y = _data("regression", n=800, seed=5)
    Xd, yd = _spread(client, X), da.from_array(y, chunks=200)
    with pytest.raises(ValueError, match="colsample_bynode < 1") as info:
        DaskTreeBoostRegressor(**PARAMS, colsample_bynode=0.5, client=client).fit(Xd, yd)
    # refused on the client, before any task ran on a worker (issue 33)
    assert "distributed fit failed on worker" not in str(info.value)
    assert str(info.value).startswith("DaskTreeBoostRegressor:")
    with pytest.raises(ValueError, match="class_weight"):
        DaskTreeBoostClassifier(class_weight="balanced", client=client).fit(Xd, yd > 0)
    model = DaskTreeBoostRegressor(**PARAMS, client=client).fit(Xd, yd)
    assert model.n_iter_ == PARAMS["n_estimators"]


def test_get_params_has_client_and_the_table():
    params = DaskTreeBoostRegressor().get_params()
    assert params["client"] is None
    assert set(params) - {"client"} == set(TreeBoostRegressor().get_params())
    assert DaskTreeBoostClassifier(max_bins=31).get_params()["max_bins"] == 31


@pytest.mark.parametrize("task", ["regression", "binary"])
def test_early_stopping_on_a_dask_eval_set_equals_local_training(client, task):
    """The validation set's partitions stay on their workers; the metrics are those of
    all its rows, so training stops at the local stage with the same log."""
    X, y = _data(task, n=3000, seed=6)
    Xv, yv = X[2000:], y[2000:]
    X, y = X[:2000], y[:2000]
    wv = np.random.default_rng(3).uniform(0.5, 2.0, size=yv.size)
    params = dict(PARAMS, n_estimators=300, learning_rate=0.4, colsample_bytree=1.0,
                  n_iter_no_change=4, eval_metric="auc" if task == "binary" else "rmse")
    cls = DaskTreeBoostClassifier if task == "binary" else DaskTreeBoostRegressor
    model = cls(**params, client=client).fit(
        _spread(client, X), da.from_array(y, chunks=500),
        eval_set=[(_spread(client, Xv, n_chunks=3), da.from_array(yv, chunks=400))],
        eval_sample_weight=[da.from_array(wv, chunks=300)])
    bins = model.booster_.bin_mapper
    local = dict(params, **({"loss": "log_loss"} if task == "binary" else {}))
    single = train(local, Dataset(X, y).construct(bins),
                   valid_sets=[Dataset(Xv, yv, weight=wv)])
    assert single.best_iteration is not None
    assert single.best_iteration < 250
    assert model.best_iteration_ == single.best_iteration
    _assert_same_trees(model.booster_, single)
    for name, values in single.evals_result["validation_0"].items():
        assert_allclose(model.evals_result_["validation_0"][name], values, rtol=1e-10)
    assert model.to_local().best_iteration_ == single.best_iteration


def test_early_stopping_holds_out_a_seeded_fraction_of_the_rows(client):
    X, y = _data("binary", n=2400, seed=7)
    params = dict(PARAMS, n_estimators=300, learning_rate=0.5, n_iter_no_change=3,
                  validation_fraction=0.25)
    Xd, yd = _spread(client, X), da.from_array(y, chunks=600)
    model = DaskTreeBoostClassifier(**params, client=client).fit(Xd, yd)
    assert model.best_iteration_ is not None
    assert model.n_iter_ == model.best_iteration_ + 1
    assert list(model.evals_result_) == ["validation"]
    # the held-out rows: validation_fraction of them, drawn from random_state's stream
    from treeboost.sampling import make_streams

    held = np.zeros(y.size, dtype=bool)
    held[make_streams(params["random_state"])["validation"].choice(
        y.size, size=600, replace=False)] = True
    single = train(dict(params, loss="log_loss"),
                   Dataset(X[~held], y[~held]).construct(model.booster_.bin_mapper),
                   valid_sets=[Dataset(X[held], y[held])], valid_names=["validation"])
    assert model.best_iteration_ == single.best_iteration
    _assert_same_trees(model.booster_, single)
    again = DaskTreeBoostClassifier(**params, client=client).fit(Xd, yd)
    assert_array_equal(again.predict_proba(Xd).compute(), model.predict_proba(Xd).compute())
    with pytest.raises(ValueError, match=r"eval_set\[0\].*not seen"):
        DaskTreeBoostClassifier(**params, client=client).fit(
            Xd, yd, eval_set=[(Xd, yd + 5)])


@pytest.mark.parametrize("sample_rows", [None, 700])
def test_categorical_column_equals_local_training(client, sample_rows):
    """A categorical column: its categories are counted over every row on the workers
    when the bins are fitted from a sample (sample_rows), so the common bins are those
    BinMapper.fit finds on all the rows, and the trees (category subsets included) are
    local training's."""
    from treeboost.binning import BinMapper

    rng = np.random.default_rng(8)
    X, y = _data("regression", n=2000, seed=8)
    cat = rng.integers(0, 30, size=y.size).astype(float)
    cat[rng.random(y.size) < 0.03] = np.nan
    cat[:3] = 99.0  # a rare category, likely outside the sample
    X = np.column_stack([X, cat])
    effect = rng.normal(scale=2.0, size=100)
    y = y + np.where(np.isnan(cat), 1.0, effect[np.nan_to_num(cat).astype(int)])
    params = dict(PARAMS, categorical_features=[5], colsample_bytree=1.0)
    model = DaskTreeBoostRegressor(**params, client=client)
    if sample_rows is not None:
        model.bin_sample_rows = sample_rows  # the bins of a sample of the rows
    model.fit(_spread(client, X), da.from_array(y, chunks=500))
    bins = model.booster_.bin_mapper
    expected = BinMapper(255, subsample=sample_rows or 200_000, random_state=3,
                         is_categorical=[False] * 5 + [True]).fit(X)
    assert_array_equal(bins.bin_edges_, expected.bin_edges_)
    assert_array_equal(bins.is_categorical_, expected.is_categorical_)
    single = train(params, Dataset(X, y, categorical_features=[5]).construct(bins))
    _assert_same_trees(model.booster_, single)
    assert any((tree.feature == 5).any() for stage in single.trees for tree in stage)
    assert_allclose(model.to_local().predict(X), np.ravel(single.predict_raw(X)),
                    rtol=1e-9, atol=1e-9)
    assert list(model.to_local().is_categorical_) == [False] * 5 + [True]


@pytest.mark.parametrize("quantized", [False, True])
def test_subsample_draws_the_rows_one_process_draws(client, quantized):
    """With subsample each member keeps its share of the draw one process makes over all
    the rows in member order (rank by rank, each worker's partitions in row order); so do
    the stochastic roundings of quantised gradients."""
    X, y = _data("binary", n=2000, seed=9)
    weight = np.random.default_rng(4).uniform(0.5, 2.0, size=y.size)
    params = dict(PARAMS, subsample=0.6, use_quantized_grad=quantized)
    # chunk i of X, y and the weights on sorted(workers)[i % 2] (each stacked partition
    # is made where all its inputs lie): the members hold chunks 0, 2 and 1, 3
    model = DaskTreeBoostClassifier(**params, client=client).fit(
        _spread(client, X), _spread(client, y), sample_weight=_spread(client, weight))
    chunks = np.array_split(np.arange(y.size), 4)
    order = np.concatenate([chunks[0], chunks[2], chunks[1], chunks[3]])
    assert model.workers_ == sorted(client.scheduler_info()["workers"])
    single = train(dict(params, loss="log_loss"),
                   Dataset(X[order], y[order], weight=weight[order]).construct(
                       model.booster_.bin_mapper))
    _assert_same_trees(model.booster_, single)
    assert_allclose(model.to_local().predict_proba(X)[:, 1],
                    1 / (1 + np.exp(-np.ravel(single.predict_raw(X)))), rtol=1e-9)


def test_quantile_loss_equals_local_training(client):
    """A line-search loss: F0 and every leaf a weighted quantile of rows on both workers."""
    X, y = _data("regression", n=1600, seed=10)
    params = dict(PARAMS, loss="quantile", alpha=0.3)
    model = DaskTreeBoostRegressor(**params, client=client).fit(
        _spread(client, X), _spread(client, y))
    order = np.concatenate([c for i in (0, 2, 1, 3) for c in [np.array_split(
        np.arange(y.size), 4)[i]]])  # the members' rows, rank by rank
    single = train(params, Dataset(X[order], y[order]).construct(model.booster_.bin_mapper))
    _assert_same_trees(model.booster_, single)
    assert_allclose(model.to_local().predict(X), np.ravel(single.predict_raw(X)),
                    rtol=1e-9, atol=1e-9)


def test_ranker_equals_local_training_on_whole_queries(client):
    """Each query lies whole in one partition: every worker's lambdarank gradients are one
    process's, and early stopping reads the NDCG of every worker's validation queries."""
    from treeboost.dask import DaskTreeBoostRanker

    rng = np.random.default_rng(12)
    sizes = rng.integers(5, 30, size=160)
    qid = np.repeat(np.arange(sizes.size), sizes)
    n = qid.size
    X = rng.normal(size=(n, 5))
    y = np.clip(np.round(X[:, 0] + 0.5 * X[:, 1] ** 2 + rng.normal(scale=0.7, size=n)), 0, 4)
    cut = int(np.searchsorted(qid, 120))  # queries 0..119 train, 120.. validation
    ends = [np.searchsorted(qid, q) for q in (0, 30, 60, 90, 120)]
    chunks = tuple(np.diff(ends))  # partitions of whole queries
    params = {"n_estimators": 200, "max_leaf_nodes": 8, "learning_rate": 0.3,
              "n_iter_no_change": 4, "random_state": 3}

    def placed(a, chunk_sizes):
        return client.persist(da.from_array(a, chunks=(chunk_sizes,) + a.shape[1:]))

    vchunks = (np.searchsorted(qid, 140) - cut, n - np.searchsorted(qid, 140))
    model = DaskTreeBoostRanker(**params, client=client).fit(
        placed(X[:cut], chunks), placed(y[:cut], chunks), qid=placed(qid[:cut], chunks),
        eval_set=[(placed(X[cut:], vchunks), placed(y[cut:], vchunks))],
        eval_qid=[placed(qid[cut:], vchunks)])
    assert model.best_iteration_ is not None
    # without row sampling the order of the queries (the members' rows, rank by rank)
    # changes only the order of the sums: the local model on the rows in order
    single = train(dict(params, loss="lambdarank"),
                   Dataset(X[:cut], y[:cut], qid=qid[:cut]).construct(
                       model.booster_.bin_mapper),
                   valid_sets=[Dataset(X[cut:], y[cut:], qid=qid[cut:])])
    assert model.best_iteration_ == single.best_iteration
    _assert_same_trees(model.booster_, single)
    assert_allclose(model.predict(placed(X, (n,))).compute(), np.ravel(single.predict_raw(X)),
                    rtol=1e-9, atol=1e-9)
    with pytest.raises(ValueError, match="spans two partitions"):
        DaskTreeBoostRanker(n_estimators=2, client=client).fit(
            placed(X[:cut], (50, cut - 50)), placed(y[:cut], (50, cut - 50)),
            qid=placed(qid[:cut], (50, cut - 50)))
