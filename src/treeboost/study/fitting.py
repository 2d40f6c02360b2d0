"""The work a study process does: fit one configuration, read it at several stages.

Data flow (inside a worker process): a task -> :func:`_fold_data` (the fold, loaded and
encoded once per process and kept for the next task on the same fold) -> :func:`_binned`
(the ``BinMapper`` fitted and the training matrix binned once per ``max_bins``, reused by
every configuration) -> ``Booster.fit`` with ``max(stages)`` trees -> the test score at
each stage -> results returned to the parent, which stores them. Peers (LightGBM,
scikit-learn's GradientBoosting) and treeboost's defaults run through
:func:`run_baseline` on the same folds.

The steps mirror ``TreeBoostClassifier.fit``/``TreeBoostRegressor.fit`` with one
difference, the binned data being shared; ``tests/test_study.py`` checks that the scores
equal those of the estimators.
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from .data import DatasetSpec, Fold, prepare_fold

# folds kept per process: tasks arrive grouped by dataset, so two cover the switch
_CACHE_SIZE = 2
_folds: OrderedDict = OrderedDict()
_parent_pid: int | None = None  # the study process that started this worker


def init_worker() -> None:
    """Start a worker process with one thread everywhere: the study's parallelism is
    its processes, and more threads per process would oversubscribe the cores."""
    # not NUMBA_NUM_THREADS: Numba may already be imported here (unpickling this
    # function imports treeboost), and it refuses a changed value once its pool
    # has started; set_num_threads limits the pool instead
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    import numba

    numba.set_num_threads(1)
    global _parent_pid
    _parent_pid = os.getppid()


def _stop_if_orphaned() -> None:
    """Exit when the study process is gone (killed): nobody would store the result,
    and a resumed study would compute it again alongside."""
    if _parent_pid is not None and os.getppid() != _parent_pid:
        os._exit(1)


@dataclass(frozen=True)
class FitTask:
    """Fit ``base`` once with ``max(stages)`` trees on one fold; score it at each stage."""

    dataset: DatasetSpec
    n_folds: int
    fold: int
    seed: int
    one_hot: bool
    base: dict
    stages: tuple


@dataclass(frozen=True)
class BaselineTask:
    """Fit a reference model (``model``) on one fold."""

    dataset: DatasetSpec
    n_folds: int
    fold: int
    seed: int
    one_hot: bool
    model: str


@dataclass
class _FoldData:
    fold: Fold
    X_train: np.ndarray
    X_test: np.ndarray
    is_categorical: np.ndarray
    binned: dict  # max_bins -> (BinMapper, X_binned)


def _fold_data(dataset, n_folds, fold, seed, one_hot) -> _FoldData:
    from ..dataset import categorical_mask, frame_to_array

    key = (dataset, n_folds, fold, seed, one_hot)
    if key in _folds:
        _folds.move_to_end(key)
        return _folds[key]
    data = prepare_fold(dataset, n_folds, fold, seed, one_hot)
    # the estimators' encoding: codes against the training frame's categories
    X_train, categories = frame_to_array(data.X_train)
    X_test, _ = frame_to_array(data.X_test, categories)
    mask = categorical_mask("from_dtype", X_train.shape[1], None, categories)
    entry = _FoldData(data, np.ascontiguousarray(X_train), np.ascontiguousarray(X_test),
                      mask, {})
    _folds[key] = entry
    while len(_folds) > _CACHE_SIZE:
        _folds.popitem(last=False)
    return entry


def _binned(entry: _FoldData, max_bins: int, seed: int):
    from ..binning import BinMapper
    from ..sampling import make_streams

    if max_bins not in entry.binned:
        mapper = BinMapper(max_bins, random_state=make_streams(seed)["binning"],
                           is_categorical=entry.is_categorical).fit(entry.X_train)
        entry.binned[max_bins] = (mapper, mapper.transform(entry.X_train))
    return entry.binned[max_bins]


def make_estimator(task: str, config: dict, seed: int):
    """The estimator a configuration stands for (one thread, seeded)."""
    from ..sklearn import TreeBoostClassifier, TreeBoostRegressor

    cls = TreeBoostClassifier if task == "classification" else TreeBoostRegressor
    return cls(**config, random_state=seed, n_jobs=1)


def score(task: str, raw: np.ndarray, codes: np.ndarray, loss) -> float:
    """Accuracy (classification) or RMSE (regression) of raw scores against targets."""
    if task == "classification":
        predicted = (raw[:, 0] > 0) if raw.shape[1] == 1 else raw.argmax(axis=1)
        return float(np.mean(predicted == codes))
    prediction = loss.inverse_link(raw.T)
    return float(np.sqrt(np.mean((prediction - codes) ** 2)))


def run_fit(task: FitTask) -> dict:
    """Fit one configuration group and score it; return ``{"scores": {stage: score}}``."""
    from .. import params as _params
    from .._threads import threads
    from ..booster import Booster
    from ..sampling import make_streams

    _stop_if_orphaned()
    start = time.perf_counter()
    entry = _fold_data(task.dataset, task.n_folds, task.fold, task.seed, task.one_hot)
    fold = entry.fold
    estimator = make_estimator(fold.task, {**task.base, "n_estimators": max(task.stages)},
                               task.seed)
    _params.validate(estimator.get_params(), estimator._scope)
    if fold.task == "classification":
        estimator.n_classes_ = len(fold.classes)  # what fit's target encoding sets
    loss = estimator._make_loss()
    loss.validate_target(fold.train_codes)
    mapper, X_binned = _binned(entry, estimator.max_bins, task.seed)
    booster = Booster(loss, mapper, estimator._boosting_params())
    weight = np.ones(fold.train_codes.size, dtype=np.float64)
    with threads(1):
        booster.fit(X_binned, fold.train_codes, weight, make_streams(task.seed))
        stages = sorted(task.stages)
        scores = {stage: score(fold.task, raw, fold.test_codes, loss) for stage, raw in
                  zip(stages, booster.staged_predict_raw(entry.X_test, stages), strict=True)}
    return {"scores": scores, "seconds": time.perf_counter() - start}


def _peer(model: str, task: str, seed: int):
    if model == "treeboost":
        return make_estimator(task, {}, seed)
    if model == "lightgbm":
        import lightgbm

        cls = lightgbm.LGBMClassifier if task == "classification" else lightgbm.LGBMRegressor
        return cls(random_state=seed, n_jobs=1, verbose=-1)
    if model == "sklearn":
        from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor
        from sklearn.impute import SimpleImputer
        from sklearn.pipeline import make_pipeline

        cls = GradientBoostingClassifier if task == "classification" \
            else GradientBoostingRegressor
        # GradientBoosting takes neither NaN nor categories: one-hot (missing -> all
        # zeros) is done on the frame, the remaining NaN get the column median
        return make_pipeline(SimpleImputer(strategy="median", keep_empty_features=True),
                             cls(random_state=seed))
    raise ValueError(f"unknown baseline model {model!r}; expected treeboost, lightgbm or "
                     "sklearn")


def run_baseline(task: BaselineTask) -> dict:
    """Fit a reference model with its default parameters on the fold; return its score."""
    from ..datasets import one_hot

    _stop_if_orphaned()
    start = time.perf_counter()
    entry = _fold_data(task.dataset, task.n_folds, task.fold, task.seed, task.one_hot)
    fold = entry.fold
    X_train, X_test = fold.X_train, fold.X_test
    if task.model == "sklearn" and not task.one_hot:
        X_train, X_test = one_hot(X_train), one_hot(X_test)
    model = _peer(task.model, fold.task, task.seed)
    target = fold.y_train if fold.task == "regression" else np.asarray(fold.y_train)
    model.fit(X_train, target)
    predicted = model.predict(X_test)
    if fold.task == "classification":
        value = float(np.mean(np.asarray(predicted) == np.asarray(fold.y_test)))
    else:
        value = float(np.sqrt(np.mean((np.asarray(predicted) - fold.test_codes) ** 2)))
    return {"score": value, "seconds": time.perf_counter() - start}
