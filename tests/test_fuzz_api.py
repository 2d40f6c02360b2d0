"""Fuzz property of the functional API: a clear error or a finite model, and ``fit`` equal to
``train()`` (issue 33).

Random small data sets with random weights (positive, some zero, negative, NaN, all zero),
an ``init_score`` or none, monotone or interaction constraints, and continued training
(with the constraint given only to the continuation). Each case goes through both entry
points, the estimator's ``fit`` and ``train()`` on a ``Dataset``: both raise a
``ValueError``/``TypeError`` with a message, or both return a model whose raw predictions
are finite and equal (the estimators are clients of ``train``: one rule for the weights,
the constraints and the continuation, so a difference is a bug in one of them).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from treeboost import Dataset, TreeBoostClassifier, TreeBoostRegressor, train

WEIGHTS = ["none", "positive", "some_zero", "negative", "nan", "all_zero"]
CONSTRAINTS = ["none", "monotone", "interaction"]
LOSSES = ["squared_error", "huber", "quantile", "log_loss"]


def _weights(kind, rng, n):
    if kind == "none":
        return None
    w = rng.uniform(0.2, 3.0, n)
    if kind == "some_zero":
        w[rng.random(n) < 0.3] = 0.0
        w[:2] = 1.0  # two rows of positive weight at least: a model is possible
    elif kind == "negative":
        w[rng.integers(n)] = -1.0
    elif kind == "nan":
        w[rng.integers(n)] = np.nan
    elif kind == "all_zero":
        w[:] = 0.0
    return w


def _constraint(kind, n_features):
    if kind == "monotone":
        return {"monotone_constraints": [1] + [0] * (n_features - 1)}
    if kind == "interaction":
        return {"interaction_constraints": [[0], list(range(1, n_features))]
                if n_features > 1 else [[0]]}
    return {}


def _outcome(run):
    """("error", message) or ("model", raw predictions) of ``run()``."""
    try:
        return "model", run()
    except (ValueError, TypeError) as exc:  # anything else (a Numba or NumPy error) fails
        error = exc
    assert str(error), f"{type(error).__name__} without a message"
    return "error", str(error)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(loss=st.sampled_from(LOSSES), seed=st.integers(0, 2**32 - 1),
       n=st.integers(12, 60), n_features=st.integers(1, 4),
       weights=st.sampled_from(WEIGHTS), with_init_score=st.booleans(),
       constraint=st.sampled_from(CONSTRAINTS), continued=st.booleans())
def test_fit_and_train_agree_on_a_clear_error_or_a_finite_model(
        loss, seed, n, n_features, weights, with_init_score, constraint, continued):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, n_features))
    X_new = rng.standard_normal((25, n_features)) * 2.0
    classification = loss == "log_loss"
    y = (rng.integers(0, 2, n) if classification
         else X[:, 0] + 0.3 * rng.standard_normal(n)).astype(np.float64)
    w = _weights(weights, rng, n)
    init_score = 0.1 * rng.standard_normal(n) if with_init_score and not continued else None
    base = {"loss": loss, "n_estimators": 4, "learning_rate": 0.3, "max_leaf_nodes": 4,
            "min_samples_leaf": 2, "random_state": int(seed % 1000)}
    more = dict(base, n_estimators=8, **_constraint(constraint, n_features))
    if not continued:
        base = more
    Estimator = TreeBoostClassifier if classification else TreeBoostRegressor

    def by_fit():
        model = Estimator(**base).fit(X, y, sample_weight=w, init_score=init_score)
        if continued:
            # the estimators' init_model adds n_estimators stages (LightGBM's fit); train()
            # continues up to n_estimators in all
            model = Estimator(**dict(more, n_estimators=4)).fit(X, y, sample_weight=w,
                                                                 init_model=model)
        return model.booster_.predict_raw(X_new)

    def by_train():
        data = Dataset(X, y, weight=w, init_score=init_score)
        booster = train(base, data)
        if continued:
            booster = train(more, Dataset(X, y, weight=w), init_model=booster)
        return booster.predict_raw(X_new)

    fitted, trained = _outcome(by_fit), _outcome(by_train)
    assert fitted[0] == trained[0], (fitted, trained)
    if fitted[0] == "model":
        assert np.all(np.isfinite(fitted[1]))
        # the same engine on the same rows, weights and seed: the same bits
        np.testing.assert_array_equal(fitted[1], trained[1])
    if weights in ("negative", "nan", "all_zero"):
        assert fitted[0] == "error", "a weight no estimator accepts was accepted"


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


@pytest.mark.slow
@settings(max_examples=8, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(40, 120),
       weights=st.sampled_from(WEIGHTS), classification=st.booleans())
def test_dask_gives_a_clear_error_or_the_local_model(client, seed, n, weights,
                                                     classification):
    import dask.array as da

    from treeboost.dask import DaskTreeBoostClassifier, DaskTreeBoostRegressor

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    y = (rng.integers(0, 2, n) if classification
         else X[:, 0] + 0.3 * rng.standard_normal(n)).astype(np.float64)
    w = _weights(weights, rng, n)
    params = {"n_estimators": 4, "learning_rate": 0.3, "max_leaf_nodes": 4,
              "min_samples_leaf": 2, "random_state": int(seed % 1000)}
    Estimator = DaskTreeBoostClassifier if classification else DaskTreeBoostRegressor
    wd = None if w is None else da.from_array(w, chunks=n // 2 + 1)
    local = (TreeBoostClassifier if classification else TreeBoostRegressor)(**params)

    def by_dask():
        model = Estimator(**params, client=client).fit(
            da.from_array(X, chunks=(n // 2 + 1, 3)), da.from_array(y, chunks=n // 2 + 1),
            sample_weight=wd)
        return model

    dask_outcome = _outcome(by_dask)
    local_outcome = _outcome(lambda: local.fit(X, y, sample_weight=w))
    assert dask_outcome[0] == local_outcome[0], (dask_outcome, local_outcome)
    if dask_outcome[0] == "model":
        model = dask_outcome[1]
        # the reference: train() on all the rows with the Dask model's common bins
        kept = slice(None) if w is None else w > 0
        single = train(dict(params, loss="log_loss" if classification else "squared_error"),
                       Dataset(X[kept], y[kept], weight=None if w is None else w[kept])
                       .construct(model.booster_.bin_mapper))
        raw = model.booster_.predict_raw(X)
        assert np.all(np.isfinite(raw))
        np.testing.assert_allclose(raw, single.predict_raw(X), rtol=1e-9, atol=1e-9)
