"""``treeboost.dask.DaskTreeBoostSurvival``: the Cox model of ``TreeBoostSurvival``, on Dask.

As for ``DaskTreeBoostRegressor(loss="cox")`` (``test_survival_clients.py``), the risk sets
span every worker's rows, so training over two workers gives the local model: predictions
equal to ``TreeBoostSurvival``'s on the same rows bit for bit, and so with one worker
holding every row. Structured labels are checked on the client, naming the field.
"""

import re

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

from test_dask import _spread  # noqa: E402  (row chunks placed on the workers in turn)
from treeboost import load_model  # noqa: E402
from treeboost.dask import DaskTreeBoostSurvival  # noqa: E402
from treeboost.survival import TreeBoostSurvival  # noqa: E402

PARAMS = {"n_estimators": 12, "max_leaf_nodes": 10, "learning_rate": 0.2, "random_state": 3}


@pytest.fixture(scope="module")
def client():
    # processes=True, as tests/test_dask.py: each worker its own interpreter and sockets
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def survival_data(n=1200, seed=1):
    """Features and scikit-survival's structured labels (event, time), ~30% censored,
    some times tied."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = np.empty(n, dtype=[("event", "?"), ("time", "<f8")])
    y["time"] = np.round(rng.exponential(np.exp(-X[:, 0] + 0.5 * X[:, 1])), 2) + 0.01
    y["event"] = rng.random(n) < 0.7
    return X, y


@pytest.mark.slow
def test_two_workers_and_one_give_the_local_model(client, tmp_path):
    X, y = survival_data()
    w = np.random.default_rng(2).uniform(0.5, 2.0, size=y.size)
    local = TreeBoostSurvival(**PARAMS).fit(X, y, sample_weight=w)
    expected = local.predict(X)
    Xd = da.from_array(X, chunks=(300, 4))
    # spread by hand: the scheduler may put every chunk of da.from_array on one worker
    model = DaskTreeBoostSurvival(**PARAMS, client=client).fit(
        _spread(client, X), _spread(client, y), sample_weight=_spread(client, w))
    assert len(model.collective_stats_) == 2  # trained over a collective of two
    risk = model.predict(Xd)
    assert isinstance(risk, da.Array)
    assert np.array_equal(risk.compute(), expected)
    # score is the local estimator's concordance on the same rows
    assert model.score(Xd, da.from_array(y, chunks=300)) == local.score(X, y)
    assert model.score(Xd, da.from_array(y, chunks=300), da.from_array(w, chunks=300)) == \
        local.score(X, y, w)
    assert type(model.to_local()) is TreeBoostSurvival
    model.save_model(tmp_path / "m.json")
    assert np.array_equal(load_model(tmp_path / "m.json").predict(X), expected)

    # one partition: one worker trains on every row; signed times are the same labels
    signed = np.where(y["event"], y["time"], -y["time"])
    one = DaskTreeBoostSurvival(**PARAMS, client=client).fit(
        da.from_array(X, chunks=(X.shape[0], 4)), da.from_array(signed, chunks=X.shape[0]),
        sample_weight=da.from_array(w, chunks=X.shape[0]))
    assert len(one.collective_stats_) == 1
    assert np.array_equal(one.predict(Xd).compute(), expected)


def test_parameters_are_the_local_estimators_and_client():
    params = DaskTreeBoostSurvival().get_params()
    assert params.pop("client") is None
    assert params == TreeBoostSurvival().get_params()  # loss included, passed through
    assert DaskTreeBoostSurvival("cox", max_bins=31).get_params()["max_bins"] == 31


@pytest.mark.parametrize(("change", "message"), [
    ("time", "y['time'] holds 1 time(s) that are NaN, infinite or <= 0"),
    ("events", "y['event'] has no observed event"),
    ("bool", "y is a bool array: give the times too"),
    ("loss", "loss='squared_error' must be one of"),
    ("aft", "loss='aft' is not yet supported by DaskTreeBoostSurvival"),
])
def test_bad_labels_are_refused_on_the_client(client, change, message):
    X, y = survival_data(n=200, seed=4)
    params = dict(PARAMS)
    if change == "time":
        y["time"][17] = -2.0  # as a signed time it would read as censored at 2
    elif change == "events":
        y["event"] = False
    elif change == "bool":
        y = y["event"]
    else:
        params["loss"] = "squared_error" if change == "loss" else "aft"
    with pytest.raises(ValueError, match=re.escape(message)) as info:
        DaskTreeBoostSurvival(**params, client=client).fit(
            da.from_array(X, chunks=(100, 4)), da.from_array(y, chunks=100))
    assert "distributed fit failed on worker" not in str(info.value)
