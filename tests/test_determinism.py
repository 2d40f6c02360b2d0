"""Determinism (DESIGN §1.5): the model file is the same whatever n_jobs, run after run.

The data is large enough that the parallel kernels really split the work:
40,000 rows are 3 partition chunks of 16,384 rows at the root (2 after a
0.7 row sample) and over 300 prediction blocks of 128 rows, with missing
values so the NaN branch of every kernel is exercised. Stochastic
boosting (row and both column samplings) is on, so the random streams are
covered too.
"""

import json

import numba
import numpy as np
import pytest

from treeboost import TreeBoostClassifier, TreeBoostRegressor

N_ROWS, N_FEATURES = 40_000, 10
STOCHASTIC = {"n_estimators": 5, "max_leaf_nodes": 12, "subsample": 0.7,
              "colsample_bytree": 0.8, "colsample_bynode": 0.8}
TASKS = ("regression", "binary", "multiclass")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(42)
    X = rng.normal(size=(N_ROWS, N_FEATURES))
    Z = np.nan_to_num(X)
    score = Z[:, 0] + np.sin(2 * Z[:, 1]) + Z[:, 2] * Z[:, 3] + 0.5 * rng.normal(size=N_ROWS)
    X[rng.random(X.shape) < 0.05] = np.nan
    X[:, 4] = np.round(X[:, 4], 1)  # a feature with few distinct values: exact bins and ties
    targets = {
        "regression": score,
        "binary": np.where(score > 0.3, "yes", "no"),
        "multiclass": np.digitize(score, np.quantile(score, [0.3, 0.7])),
    }
    return X, targets


@pytest.fixture(scope="module")
def fits(data, tmp_path_factory):
    """Fitted models by (task, n_jobs, random_state, run), each fitted once for the module."""
    X, targets = data
    cache, folder = {}, tmp_path_factory.mktemp("determinism")

    def fit(task, n_jobs, random_state=0, run=0):
        key = (task, n_jobs, random_state, run)
        if key not in cache:
            cls = TreeBoostRegressor if task == "regression" else TreeBoostClassifier
            est = cls(n_jobs=n_jobs, random_state=random_state, **STOCHASTIC)
            est.fit(X, targets[task])
            path = folder / ("_".join(map(str, key)) + ".json")
            est.save_model(path)
            cache[key] = est, _model_document(path)
        return cache[key]

    return fit


def _model_document(path):
    """The whole model file, less the fields that record n_jobs itself."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc.pop("checksum")  # covers params, so it changes with n_jobs
    doc["params"].pop("n_jobs")
    return doc


def _assert_same_document(a, b):
    assert a.keys() == b.keys()
    for key in a:  # field by field, so a failure names the field that differs
        assert a[key] == b[key], f"model files differ in {key!r}"


@pytest.mark.parametrize("task", TASKS)
def test_same_model_run_after_run(fits, task):
    _, first = fits(task, n_jobs=2)
    _, second = fits(task, n_jobs=2, run=1)
    # real trees, or the comparison below would prove little
    assert all(len(tree["left"]) > 10 for stage in first["trees"] for tree in stage)
    _assert_same_document(first, second)


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2,
                    reason="one Numba thread: n_jobs=2 would run serially")
@pytest.mark.parametrize("task", TASKS)
def test_same_model_for_any_n_jobs(fits, data, task):
    X, _ = data
    est1, doc1 = fits(task, n_jobs=1)
    est2, doc2 = fits(task, n_jobs=2)
    _assert_same_document(doc1, doc2)
    # prediction blocks too: the same model predicts the same bits with 1 or 2 threads
    method = "predict" if task == "regression" else "predict_proba"
    serial = getattr(est2.set_params(n_jobs=1), method)(X)
    parallel = getattr(est2.set_params(n_jobs=2), method)(X)
    assert np.array_equal(serial, parallel)
    assert np.array_equal(getattr(est1, method)(X), parallel)


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2,
                    reason="one Numba thread: n_jobs=2 would run serially")
@pytest.mark.parametrize("task", ["regression", "binary"])
def test_same_model_for_any_n_jobs_every_feature_at_every_node(data, task, tmp_path):
    # without colsample_bynode every node may use every feature, and sibling nodes of
    # 2,000 rows or more (x 10 features) search their splits side by side on two
    # threads (_consider_pair): the trees must be those of one thread
    X, targets = data
    cls = TreeBoostRegressor if task == "regression" else TreeBoostClassifier
    params = {**STOCHASTIC, "colsample_bynode": 1.0, "n_estimators": 3,
              "max_leaf_nodes": 31}
    docs = []
    for n_jobs in (1, 2):
        path = tmp_path / f"{n_jobs}.json"
        cls(n_jobs=n_jobs, random_state=0, **params).fit(X, targets[task]).save_model(path)
        docs.append(_model_document(path))
    assert all(len(tree["left"]) > 30 for stage in docs[0]["trees"] for tree in stage)
    _assert_same_document(*docs)


@pytest.mark.parametrize("task", ["regression", "multiclass"])
def test_random_state_changes_a_stochastic_model(fits, task):
    # if the seed did not reach row and column sampling, these would be equal
    _, seed0 = fits(task, n_jobs=2, random_state=0)
    _, seed1 = fits(task, n_jobs=2, random_state=1)
    assert seed0["params"]["random_state"] != seed1["params"]["random_state"]
    assert seed0["trees"] != seed1["trees"]
    assert seed0["trees"][0] != seed1["trees"][0]  # from the first stage on


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2,
                    reason="one Numba thread: n_jobs=2 would run serially")
def test_same_model_for_any_n_jobs_raw_scores_on_every_thread(tmp_path):
    # from 65,536 rows a tree's leaf values are added to the rows' raw scores on every
    # thread (_kernels.booster.PARALLEL_SCORE_ROWS), which the next tree's gradients
    # read: its trees must be those of one thread
    rng = np.random.default_rng(7)
    X = rng.normal(size=(70_000, 4))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + 0.3 * rng.normal(size=X.shape[0])
    docs = []
    for n_jobs in (1, 2):
        path = tmp_path / f"{n_jobs}.json"
        TreeBoostRegressor(n_jobs=n_jobs, n_estimators=4, max_leaf_nodes=8,
                           random_state=0).fit(X, y).save_model(path)
        docs.append(_model_document(path))
    _assert_same_document(*docs)
