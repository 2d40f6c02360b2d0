"""``treeboost.train`` on ``Dataset``: the engine entry point the estimators are clients of."""

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from treeboost import Dataset, TreeBoostClassifier, TreeBoostRegressor, train
from treeboost.callbacks import TrainingCallback


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    X[rng.random(X.shape) < 0.05] = np.nan
    return X, np.nan_to_num(X[:, 0]) + np.sin(np.nan_to_num(X[:, 1])) + 0.1 * rng.normal(size=n)


@pytest.mark.parametrize("task", ["regression", "binary", "multiclass"])
def test_train_grows_the_estimators_model(task):
    """The estimators call train(): the same parameters give the same trees, bit for bit,
    with a validation set, early stopping and row sampling."""
    X, y = _data()
    if task == "binary":
        y = (y > 0).astype(float)
    elif task == "multiclass":
        y = np.digitize(y, [-0.5, 0.5]).astype(float)
    params = {"n_estimators": 40, "learning_rate": 0.3, "subsample": 0.8,
              "n_iter_no_change": 5, "random_state": 3}
    cls = TreeBoostRegressor if task == "regression" else TreeBoostClassifier
    est = cls(**params).fit(X[:300], y[:300], eval_set=[(X[300:], y[300:])])
    train_set = Dataset(X[:300], y[:300])
    booster = train({**params, "loss": "squared_error" if task == "regression"
                     else "log_loss"}, train_set,
                    valid_sets=[Dataset(X[300:], y[300:], reference=train_set)])
    assert booster.best_iteration == est.best_iteration_
    assert len(booster.trees) == est.n_iter_
    assert booster.evals_result == est.evals_result_
    assert_array_equal(booster.predict_raw(X), est.booster_.predict_raw(X))


def test_a_dataset_is_binned_once_and_shared_by_its_validation_sets():
    X, y = _data()
    train_set = Dataset(X[:300], y[:300])
    valid = Dataset(X[300:], y[300:], reference=train_set)
    first = train({"n_estimators": 5, "random_state": 0}, train_set, valid_sets=[valid])
    bins, binned = train_set.bin_mapper, train_set.binned
    second = train({"n_estimators": 5, "learning_rate": 0.05, "random_state": 0}, train_set,
                   valid_sets=[valid])
    # the second fit reused the bins (the same objects), and the validation set has the
    # training set's bins
    assert train_set.bin_mapper is bins
    assert train_set.binned is binned
    assert valid.bin_mapper is bins
    assert first.bin_mapper is second.bin_mapper is bins
    # reuse changes nothing: a fresh Dataset gives the same model
    fresh = train({"n_estimators": 5, "learning_rate": 0.05, "random_state": 0},
                  Dataset(X[:300], y[:300]))
    assert_array_equal(fresh.predict_raw(X), second.predict_raw(X))


def test_continuing_a_booster_gives_the_model_of_one_fit():
    X, y = _data()
    params = {"n_estimators": 10, "subsample": 0.7, "random_state": 1}
    at_once = train({**params, "n_estimators": 20}, Dataset(X, y))
    half = train(params, Dataset(X, y))
    continued = train({**params, "n_estimators": 20}, Dataset(X, y), init_model=half)
    assert continued is half
    assert len(continued.trees) == 20
    assert_array_equal(continued.predict_raw(X), at_once.predict_raw(X))


def test_a_callback_that_stops_at_stage_17_leaves_17_stages():
    class Stop(TrainingCallback):
        def after_iteration(self, iteration, evals_log):
            return iteration + 1 >= 17

    X, y = _data()
    booster = train({"n_estimators": 50, "random_state": 0}, Dataset(X, y), callbacks=[Stop()])
    assert len(booster.trees) == 17
    assert booster.best_iteration is None


def test_bad_input_is_one_clear_error():
    X, y = _data(100)
    with pytest.raises(ValueError, match="unknown parameter.*'n_trees'"):
        train({"n_trees": 5}, Dataset(X, y))
    with pytest.raises(ValueError, match="learning_rate=-1"):
        train({"learning_rate": -1}, Dataset(X, y))
    with pytest.raises(TypeError, match="train_set must be a Dataset"):
        train({}, X)
    with pytest.raises(ValueError, match="train_set has no label"):
        train({}, Dataset(X))
    with pytest.raises(ValueError, match="label must have one entry per row"):
        Dataset(X, y[:-1])
    with pytest.raises(ValueError, match="weight must be non-negative"):
        Dataset(X, y, weight=-np.ones(len(y)))
    with pytest.raises(ValueError, match="infinity"):
        Dataset(np.full((3, 2), np.inf))
    with pytest.raises(TypeError, match="reference must be a Dataset"):
        Dataset(X, y, reference=X)
    with pytest.raises(ValueError, match="valid_names must have one name"):
        train({}, Dataset(X, y), valid_sets=[Dataset(X, y)], valid_names=["a", "b"])


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_n_jobs_sets_the_threads_of_the_fit(n_jobs):
    import numba

    class Threads(TrainingCallback):
        seen = []

        def after_iteration(self, iteration, evals_log):
            self.seen.append(numba.get_num_threads())
            return False

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(300, 4)), rng.normal(size=300)
    before = numba.get_num_threads()
    train({"n_estimators": 3, "n_jobs": n_jobs}, Dataset(X, y), callbacks=[Threads()])
    assert Threads.seen == [min(n_jobs, numba.config.NUMBA_NUM_THREADS)] * 3
    assert numba.get_num_threads() == before  # restored after the fit


def test_max_bins_in_params_bins_the_training_set():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(500, 3)), rng.normal(size=500)
    booster = train({"n_estimators": 2, "max_bins": 15}, Dataset(X, y))
    assert booster.bin_mapper.n_bins_non_missing_.max() == 15
    # one model whichever way max_bins is given
    other = train({"n_estimators": 2}, Dataset(X, y, max_bins=15))
    assert_array_equal(booster.predict_raw(X), other.predict_raw(X))
    with pytest.raises(ValueError, match="max_bins=15 differs from the train_set's max_bins=31"):
        train({"n_estimators": 2, "max_bins": 15}, Dataset(X, y, max_bins=31))
    binned = Dataset(X, y).construct()
    with pytest.raises(ValueError, match="binned already"):
        train({"n_estimators": 2, "max_bins": 15}, binned)
