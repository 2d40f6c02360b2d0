"""treeboost.dask holds the local estimators' line (issue 33): the same data is refused
with the same reason, and a setting data-parallel training cannot honour is refused on
the client before any data moves.

One in-process cluster (two workers of one thread) for the module, small data: each
fit here takes a second or two.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")
dask = pytest.importorskip("dask")

from treeboost import TreeBoostRegressor  # noqa: E402
from treeboost.dask import (  # noqa: E402
    DaskTreeBoostClassifier,
    DaskTreeBoostRanker,
    DaskTreeBoostRegressor,
)
from treeboost.exceptions import DivergenceError  # noqa: E402

FAST = {"n_estimators": 3, "max_leaf_nodes": 4, "min_samples_leaf": 5, "random_state": 0}


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, X[:, 0] - X[:, 1] ** 2 + 0.3 * rng.normal(size=n)


def _chunked(a, chunks=100):
    return da.from_array(a, chunks=(chunks,) + a.shape[1:])


# ---- sample_weight: the local estimators' checks -----------------------------------------

@pytest.mark.parametrize(("weight", "message"), [
    (-1.0, "sample_weight has 1 negative value"),
    (np.nan, "sample_weight contains NaN or infinity"),
    (np.inf, "sample_weight contains NaN or infinity"),
], ids=["negative", "nan", "inf"])
def test_a_bad_weight_is_refused_as_the_local_estimator_refuses_it(client, weight, message):
    # before: the row was dropped silently (NaN) or every prediction was NaN (negative)
    X, y = _data()
    w = np.ones(y.size)
    w[123] = weight
    with pytest.raises(ValueError, match="sample_weight"):
        TreeBoostRegressor(**FAST).fit(X, y, sample_weight=w)
    with pytest.raises(ValueError, match=message) as refused:
        DaskTreeBoostRegressor(**FAST, client=client).fit(_chunked(X), _chunked(y),
                                                          sample_weight=_chunked(w))
    assert "distributed fit failed" not in str(refused.value)  # found on the client


@pytest.mark.parametrize("positive", [0, 1])
def test_fewer_than_two_positive_weights_is_refused(client, positive):
    # before: all weights 0 gave a model that predicts NaN everywhere
    X, y = _data()
    w = np.zeros(y.size)
    w[:positive] = 1.0
    message = "sample_weight must be positive for at least 2 samples"
    with pytest.raises(ValueError, match="(?i)sample.weight"):
        TreeBoostRegressor(**FAST).fit(X, y, sample_weight=w)
    with pytest.raises(ValueError, match=message):
        DaskTreeBoostClassifier(**FAST, client=client).fit(
            _chunked(X), _chunked((y > 0).astype(float)), sample_weight=_chunked(w))


def test_zero_weights_still_leave_their_rows_out(client):
    X, y = _data(seed=1)
    w = np.where(np.arange(y.size) % 5 == 0, 0.0, 1.0)
    model = DaskTreeBoostRegressor(**FAST, client=client).fit(
        _chunked(X), _chunked(y), sample_weight=_chunked(w))
    assert sum(s["rows"] for s in model.collective_stats_) == np.count_nonzero(w)
    assert np.all(np.isfinite(model.predict(_chunked(X)).compute()))
    # nor do they place bin edges: the local estimator's bins (it drops them first), and
    # so its trees (before: the edges of all the rows, another model)
    local = TreeBoostRegressor(**FAST).fit(X, y, sample_weight=w)
    mine, theirs = model.booster_.bin_mapper, local.booster_.bin_mapper
    np.testing.assert_array_equal(mine.n_edges_, theirs.n_edges_)
    np.testing.assert_array_equal(mine.bin_edges_, theirs.bin_edges_)
    # the members' histogram sums differ from one process's in the last bits only
    np.testing.assert_allclose(model.predict(_chunked(X)).compute(), local.predict(X),
                               rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize(("weight", "message"), [
    (np.nan, r"eval_set\[0\]: sample_weight contains NaN or infinity"),
    (-1.0, r"eval_set\[0\]: sample_weight has 1 negative value"),
], ids=["nan", "negative"])
def test_a_bad_eval_weight_is_refused_as_the_local_estimator_refuses_it(client, weight,
                                                                         message):
    # before: the row was silently left out of the validation set
    X, y = _data(seed=2)
    Xv, yv = _data(n=200, seed=3)
    wv = np.ones(yv.size)
    wv[7] = weight
    with pytest.raises(ValueError, match="(?i)sample.weight|weight must be non-negative"):
        TreeBoostRegressor(**FAST).fit(X, y, eval_set=[(Xv, yv)], eval_sample_weight=[wv])
    with pytest.raises(ValueError, match=message):
        DaskTreeBoostRegressor(**FAST, client=client).fit(
            _chunked(X), _chunked(y), eval_set=[(_chunked(Xv), _chunked(yv))],
            eval_sample_weight=[_chunked(wv)])


def test_zero_eval_weights_count_for_nothing(client):
    X, y = _data(seed=2)
    Xv, yv = _data(n=200, seed=3)
    wv = np.where(np.arange(yv.size) % 3 == 0, 0.0, 2.0)
    params = dict(FAST, eval_metric="rmse")
    Xd, yd = _chunked(X), _chunked(y)
    model = DaskTreeBoostRegressor(**params, client=client).fit(
        Xd, yd, eval_set=[(_chunked(Xv), _chunked(yv))], eval_sample_weight=[_chunked(wv)])
    kept = wv > 0
    without = DaskTreeBoostRegressor(**params, client=client).fit(
        Xd, yd, eval_set=[(_chunked(Xv[kept], 50), _chunked(yv[kept], 50))])
    assert_allclose(model.evals_result_["validation_0"]["rmse"],
                    without.evals_result_["validation_0"]["rmse"], rtol=1e-12)
    with pytest.raises(ValueError, match=r"eval_set\[0\]: sample_weight is 0 on every row"):
        DaskTreeBoostRegressor(**params, client=client).fit(
            Xd, yd, eval_set=[(_chunked(Xv), _chunked(yv))],
            eval_sample_weight=[_chunked(np.zeros(yv.size))])


@pytest.mark.parametrize(("where", "value", "message"), [
    ("y", np.nan, "y contains 1 NaN or infinite value"),
    ("y", np.inf, "y contains 1 NaN or infinite value"),
    ("X", np.inf, "X contains 1 infinite value"),
    ("X", -np.inf, "X contains 1 infinite value"),
])
def test_non_finite_targets_and_infinite_features_are_refused(client, where, value, message):
    X, y = _data(seed=4)
    (y if where == "y" else X[:, 1])[17] = value
    with pytest.raises(ValueError, match=f"(?i)input {where} contains"):
        TreeBoostRegressor(**FAST).fit(X, y)
    with pytest.raises(ValueError, match=message):
        DaskTreeBoostRegressor(**FAST, client=client).fit(_chunked(X), _chunked(y))


# ---- divergence ----------------------------------------------------------------------------

def test_divergence_on_the_workers_is_a_divergence_error_on_the_client(client):
    # the local test's example (test_divergence.py): uncapped gamma steps overflow at stage 1
    rng = np.random.default_rng(0)
    x = rng.integers(0, 10, 1000)[:, None].astype(float)
    y = np.where(x[:, 0] == 0, 1e-3, np.exp(rng.normal(2, 0.5, 1000)))
    params = dict(loss="gamma", max_delta_step=1e300, random_state=0)
    with pytest.raises(DivergenceError, match=r"stage 1 \(1-based\).*loss='gamma'"):
        TreeBoostRegressor(**params).fit(x, y)
    with pytest.raises(DivergenceError, match=r"stage 1 \(1-based\).*loss='gamma'"):
        DaskTreeBoostRegressor(**params, client=client).fit(_chunked(x, 250), _chunked(y, 250))


# ---- columns and blocks ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["str", "string"])
def test_a_text_column_is_refused_naming_it(client, dtype):
    X, y = _data(seed=5)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["city"] = pd.array(np.where(y > 0, "Oslo", "Lima"), dtype=dtype)
    with pytest.raises(TypeError, match="column 'city' has dtype"):
        TreeBoostRegressor(**FAST).fit(frame, y)
    with pytest.raises(TypeError, match=r"X: column 'city' has dtype \w+: convert it to "
                                        "numbers"):
        DaskTreeBoostRegressor(**FAST, client=client).fit(
            dd.from_pandas(frame, npartitions=2), dd.from_pandas(pd.Series(y), npartitions=2))


def test_nullable_numeric_columns_are_read_as_the_local_estimator_reads_them(client):
    X, y = _data(seed=6)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["n"] = pd.array(np.where(y > 1, None, np.arange(y.size) % 7), dtype="Int64")
    frame["flag"] = pd.array(np.where(y > 0, True, None), dtype="boolean")
    plain = frame.astype("float64")  # pd.NA -> NaN, as frame_to_array reads them
    yd = dd.from_pandas(pd.Series(y), npartitions=2)
    model = DaskTreeBoostRegressor(**FAST, client=client).fit(
        dd.from_pandas(frame, npartitions=2), yd)
    reference = DaskTreeBoostRegressor(**FAST, client=client).fit(
        dd.from_pandas(plain, npartitions=2), yd)
    assert list(model.feature_names_in_) == ["a", "b", "c", "n", "flag"]
    assert_allclose(model.to_local().predict(plain), reference.to_local().predict(plain))
    assert_allclose(model.to_local().predict(frame), reference.to_local().predict(plain))


def _lying(a, block_rows, wrong_block, wrong_shape):
    """``a`` as a dask array from delayed blocks whose declared shapes are right, but whose
    block ``wrong_block`` returns an array of ``wrong_shape``."""
    def block(i):
        part = a[i * block_rows:(i + 1) * block_rows]
        if i == wrong_block:
            part = np.resize(part, wrong_shape)
        return part

    n_blocks = a.shape[0] // block_rows
    return da.concatenate([
        da.from_delayed(dask.delayed(block)(i), shape=(block_rows,) + a.shape[1:],
                        dtype=a.dtype) for i in range(n_blocks)])


def test_a_block_narrower_than_declared_is_named(client):
    # before: IndexError: index 4 is out of bounds for axis 1 with size 4, in a worker
    X, y = _data(seed=7)
    Xd = _lying(X, 100, 1, (100, 2))
    with pytest.raises(ValueError, match=r"X: block \(1, 0\) .*2 columns.*declares 3"):
        DaskTreeBoostRegressor(**FAST, client=client).fit(Xd, _chunked(y))


def test_a_block_with_other_rows_than_declared_is_named(client):
    X, y = _data(seed=8)
    yd = _lying(y, 100, 2, (90,))
    with pytest.raises(ValueError, match=r"y: block \(2,\) .*90 rows.*declares 100"):
        DaskTreeBoostRegressor(**FAST, client=client).fit(_chunked(X), yd)


# ---- settings refused on the client, before any task runs --------------------------------

def _scheduler_activity(client):
    """(transitions so far, tasks known) on the scheduler: any task submitted, computed or
    persisted moves the first."""
    return client.run_on_scheduler(
        lambda dask_scheduler: (dask_scheduler.transition_counter, len(dask_scheduler.tasks)))


def _quiet(client):
    """The scheduler's activity once the earlier tests' keys are forgotten (released
    asynchronously after their fits)."""
    import time

    deadline = time.monotonic() + 10.0
    last = _scheduler_activity(client)
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = _scheduler_activity(client)
        if now == last and now[1] == 0:
            return now
        last = now
    pytest.fail(f"the scheduler still holds {last[1]} tasks of earlier tests")


@pytest.mark.parametrize(("cls", "setting", "named"), [
    (DaskTreeBoostRegressor, {"colsample_bynode": 0.5}, "colsample_bynode"),
    (DaskTreeBoostRegressor, {"boosting": "dart"}, "boosting='dart'"),
    (DaskTreeBoostRegressor, {"boosting": "goss"}, "boosting='goss'"),
    (DaskTreeBoostRegressor, {"boosting": "rf", "subsample": 0.5}, "boosting='rf'"),
    (DaskTreeBoostRegressor, {"monotone_constraints": [1, 0, 0]}, "monotone"),
    (DaskTreeBoostRegressor, {"interaction_constraints": [[0, 1], [2]]}, "interaction"),
    (DaskTreeBoostRegressor, {"warm_start": True}, "warm_start"),
    (DaskTreeBoostRegressor, {"learning_rate": -1.0}, "learning_rate"),
    (DaskTreeBoostClassifier, {"class_weight": "balanced"}, "class_weight"),
    (DaskTreeBoostClassifier, {"colsample_bynode": 0.5}, "colsample_bynode"),
    (DaskTreeBoostRanker, {"loss": "rank_xendcg"}, "rank_xendcg"),
], ids=lambda v: str(v) if isinstance(v, dict) else None)
def test_an_unsupported_setting_is_refused_before_any_task_runs(client, cls, setting, named):
    # before: the data was persisted and the training tasks started; the setting was
    # refused inside the workers
    X, y = _data(seed=9)
    y = (y > 0).astype(float) if cls is DaskTreeBoostClassifier else np.round(np.abs(y))
    kwargs = {"qid": _chunked(np.repeat(np.arange(40), 10))} if cls is DaskTreeBoostRanker \
        else {}
    Xd, yd = _chunked(X), _chunked(y)  # lazy: nothing on the cluster yet
    before = _quiet(client)
    with pytest.raises(ValueError, match=named) as refused:
        cls(**FAST, **setting, client=client).fit(Xd, yd, **kwargs)
    assert _scheduler_activity(client) == before  # not a task submitted
    assert not client.who_has()
    assert "distributed fit failed" not in str(refused.value)
    assert cls.__name__ in str(refused.value) or "learning_rate" in str(refused.value)

