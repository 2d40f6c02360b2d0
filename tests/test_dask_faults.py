"""A worker killed in the middle of a distributed fit (issue 15, acceptance 3): one clear
error within 60 s, no hang, the client's collections untouched, no process left behind."""

import os
import signal
import threading
import time

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
psutil = pytest.importorskip("psutil")

from treeboost.dask import DaskTreeBoostRegressor  # noqa: E402


def _cmdline(process) -> str:
    try:
        return " ".join(process.cmdline())
    except (psutil.ZombieProcess, psutil.NoSuchProcess):  # it is ending: not a survivor
        return ""


@pytest.mark.slow
def test_a_worker_killed_mid_fit_is_one_clear_error():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40_000, 10))
    y = X[:, 0] + np.sin(X[:, 1]) + 0.1 * rng.normal(size=X.shape[0])
    me = psutil.Process()
    # processes of this session that are not the cluster's (the suite's own helpers)
    earlier = {c.pid for c in me.children(recursive=True)}
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        Xd = client.persist(da.from_array(X, chunks=(10_000, 10)))
        yd = client.persist(da.from_array(y, chunks=10_000))
        distributed.wait([Xd, yd])
        before = Xd.sum().compute()
        # a short fit first, so the kernels are compiled on both workers: on an empty
        # cache the survivor would otherwise spend the test's time budget compiling,
        # and what is under test is how a fit that is training notices the death
        DaskTreeBoostRegressor(n_estimators=3, max_leaf_nodes=31, random_state=0,
                               client=client).fit(Xd, yd)
        model = DaskTreeBoostRegressor(n_estimators=100_000, max_leaf_nodes=31,
                                       random_state=0, client=client)
        outcome = {}

        def fit():
            try:
                model.fit(Xd, yd)
            except Exception as exc:  # the outcome under test
                outcome["error"] = exc
            outcome["at"] = time.monotonic()

        thread = threading.Thread(target=fit)
        thread.start()
        time.sleep(8)  # training under way (100,000 trees would take hours)
        assert thread.is_alive()
        victim = next(iter(cluster.workers.values())).process.process.pid
        killed_at = time.monotonic()
        os.kill(victim, signal.SIGKILL)
        thread.join(90)
        assert not thread.is_alive(), "fit hung after a worker died"
        assert outcome["at"] - killed_at < 60
        error = outcome.get("error")
        assert isinstance(error, RuntimeError)
        assert "distributed fit failed" in str(error)
        # the client's collections are untouched (recomputed if their worker died)
        assert Xd.sum().compute() == pytest.approx(before)
        # the cluster's processes (multiprocessing's resource tracker lives on with the
        # interpreter, as it would without treeboost)
        workers = [c.pid for c in me.children(recursive=True)
                   if c.pid not in earlier and "resource_tracker" not in _cmdline(c)]
    # every worker process (and the killed one) is gone with the cluster
    deadline = time.monotonic() + 10
    left = workers
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = [pid for pid in workers if psutil.pid_exists(pid)
                and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
    assert not left, [psutil.Process(pid).cmdline() for pid in left]
