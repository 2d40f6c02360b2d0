"""The work a study process does: fit one configuration, read it at several stages.

Data flow (inside a worker process): a task -> :func:`_fold_data` (the fold, loaded and
encoded once per process and kept for the next task on the same fold) -> :func:`_train_set`
(a ``Dataset`` per ``max_bins``, binned once and reused by every configuration) ->
``treeboost.train`` with ``max(stages)`` trees -> the test score at each stage (accuracy,
RMSE, NDCG@10 over the test queries for ranking, or the concordance index for survival)
-> results returned to the parent, which stores them. Peers (LightGBM, scikit-learn's
GradientBoosting; for ranking LightGBM's LGBMRanker only; for survival none, neither has
a Cox model) and treeboost's defaults run through :func:`run_baseline` on the same folds.

Like the estimators, the study is a client of ``train``; the difference is only that
the binned data is shared. ``tests/test_study.py`` checks that the scores equal those of
the estimators.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .data import NDCG_K, DatasetSpec, Fold, prepare_fold

#: reference models run on every fold (``run_baseline``), when their library is installed
BASELINES = ("treeboost", "lightgbm", "sklearn")


def baselines_for(task: str, baselines) -> tuple:
    """The reference models of ``baselines`` that can learn ``task``: scikit-learn has no
    ranker, so it sits out the ranking datasets, and only treeboost has a survival model
    (not an error: they are study defaults)."""
    if task == "survival":
        return tuple(m for m in baselines if m == "treeboost")
    return tuple(m for m in baselines if not (task == "ranking" and m == "sklearn"))

# folds kept per process: tasks arrive grouped by dataset, so two cover the switch
_CACHE_SIZE = 2
_folds: OrderedDict = OrderedDict()
_parent_pid: int | None = None  # the study process that started this worker
_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def init_worker(parent_pid: int | None = None) -> None:
    """Start a worker process: tie its life to the study process, one thread everywhere.

    Parameters
    ----------
    parent_pid : int, default=None
        Process id of the study process that starts this worker; None: the current
        parent (racy: a parent killed before this call is no longer the parent).
    """
    global _parent_pid
    _parent_pid = os.getppid() if parent_pid is None else parent_pid
    # SIGKILL of the study process cannot be caught there: each worker must notice it
    # and end itself, or it computes on (~300 MB each) for a result nobody will store
    _die_with_parent()
    _stop_if_orphaned()  # the parent died before the line above took effect
    threading.Thread(target=_watch_parent, name="treeboost-study-watchdog",
                     daemon=True).start()
    # Ctrl-C reaches the whole process group: the study process decides what stops
    # (and ends its workers), so workers print no traceback of their own
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # the study's parallelism is its processes; more threads per process would
    # oversubscribe the cores. Not NUMBA_NUM_THREADS: Numba may already be imported
    # here (unpickling this function imports treeboost), and it refuses a changed value
    # once its pool has started; set_num_threads limits the pool instead
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    import numba

    numba.set_num_threads(1)


def _die_with_parent() -> None:
    """Linux: ask the kernel to SIGKILL this process when its parent ends.

    The signal fires when the *thread* that started this process ends; the study
    starts its workers from its main thread, which lives as long as the study. Other
    systems rely on :func:`_watch_parent` alone.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # no libc symbol (e.g. musl oddities): watchdog only
        pass


def _watch_parent(interval: float = 0.5) -> None:
    """Poll the parent's pid and end this process once the study process is gone
    (portable; covers a parent death between the prctl call and the first check)."""
    while True:
        _stop_if_orphaned()
        time.sleep(interval)


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
    X_train: np.ndarray  # or a CSR matrix (svmlight)
    X_test: np.ndarray
    is_categorical: np.ndarray
    binned: dict  # max_bins -> Dataset, binned


def _fold_data(dataset, n_folds, fold, seed, one_hot) -> _FoldData:
    from ..dataset import categorical_mask, frame_to_array

    key = (dataset, n_folds, fold, seed, one_hot)
    if key in _folds:
        _folds.move_to_end(key)
        return _folds[key]
    data = prepare_fold(dataset, n_folds, fold, seed, one_hot)
    if sp.issparse(data.X_train):  # svmlight: numbers only, taken as they are (estimators too)
        X_train, X_test, categories = data.X_train, data.X_test, {}
    else:
        # the estimators' encoding: codes against the training frame's categories
        X_train, categories = frame_to_array(data.X_train)
        X_test, _ = frame_to_array(data.X_test, categories)
        X_train, X_test = np.ascontiguousarray(X_train), np.ascontiguousarray(X_test)
    mask = categorical_mask("from_dtype", X_train.shape[1], None, categories)
    entry = _FoldData(data, X_train, X_test, mask, {})
    _folds[key] = entry
    while len(_folds) > _CACHE_SIZE:
        _folds.popitem(last=False)
    return entry


def _train_set(entry: _FoldData, max_bins: int, seed: int):
    """The fold's training ``Dataset`` for ``max_bins``, binned on first use and kept."""
    from ..dataset import Dataset
    from ..sampling import make_streams

    if max_bins not in entry.binned:
        fold = entry.fold
        entry.binned[max_bins] = Dataset(
            entry.X_train, fold.train_codes, group=fold.train_group,
            categorical_features=entry.is_categorical, max_bins=max_bins,
            random_state=make_streams(seed)["binning"]).construct()
    return entry.binned[max_bins]


def make_estimator(task: str, config: dict, seed: int):
    """The estimator a configuration stands for (one thread, seeded)."""
    from ..sklearn import TreeBoostClassifier, TreeBoostRanker, TreeBoostRegressor
    from ..survival import TreeBoostSurvival

    cls = {"classification": TreeBoostClassifier, "ranking": TreeBoostRanker,
           "survival": TreeBoostSurvival}.get(task, TreeBoostRegressor)
    return cls(**config, random_state=seed, n_jobs=1)


def ndcg(y, scores, group) -> float:
    """The ranking score of a study: mean NDCG@10 over the queries of sizes ``group``."""
    from ..metrics import ndcg_at_k

    return ndcg_at_k(y, scores, np.concatenate(([0], np.cumsum(group))), NDCG_K)


def score(task: str, raw: np.ndarray, codes: np.ndarray, loss, group=None) -> float:
    """Accuracy (classification), RMSE (regression), NDCG@10 (ranking, over the queries
    of sizes ``group``) or Harrell's concordance index (survival: the raw scores are the
    log hazard ratios, ``codes`` the signed times) of raw scores against targets."""
    if task == "ranking":
        return ndcg(codes, raw[:, 0], group)
    if task == "survival":
        from .._survival_metrics import concordance_index

        return float(concordance_index(codes, raw[:, 0]))
    if task == "classification":
        predicted = (raw[:, 0] > 0) if raw.shape[1] == 1 else raw.argmax(axis=1)
        return float(np.mean(predicted == codes))
    prediction = loss.inverse_link(raw.T)
    return float(np.sqrt(np.mean((prediction - codes) ** 2)))


def run_fit(task: FitTask) -> dict:
    """Fit one configuration group and score it; return ``{"scores": {stage: score}}``."""
    from .._threads import threads
    from ..training import train

    _stop_if_orphaned()
    start = time.perf_counter()
    entry = _fold_data(task.dataset, task.n_folds, task.fold, task.seed, task.one_hot)
    fold = entry.fold
    estimator = make_estimator(fold.task, {**task.base, "n_estimators": max(task.stages)},
                               task.seed)
    params = estimator.get_params()
    if fold.task == "classification":
        params["n_classes"] = len(fold.classes)  # a fold may lack a class
    train_set = _train_set(entry, estimator.max_bins, task.seed)
    with threads(1):
        booster = train(params, train_set)
        # a Bayesian trial may ask for a stage twice; staged_predict_raw takes each once
        stages = sorted(set(task.stages))
        scores = {stage: score(fold.task, raw, fold.test_codes, booster.loss,
                               fold.test_group)
                  for stage, raw in zip(stages, booster.staged_predict_raw(entry.X_test, stages),
                                        strict=True)}
    return {"scores": scores, "seconds": time.perf_counter() - start}


def _peer(model: str, task: str, seed: int):
    if model == "treeboost":
        return make_estimator(task, {}, seed)
    if model == "lightgbm":
        import lightgbm

        cls = {"classification": lightgbm.LGBMClassifier,
               "ranking": lightgbm.LGBMRanker}.get(task, lightgbm.LGBMRegressor)
        return cls(random_state=seed, n_jobs=1, verbose=-1)
    if model in ("lightgbm", "sklearn") and task == "survival":
        raise ValueError(f"{model} has no survival (Cox) model: leave it out of the "
                         "baselines of survival datasets")
    if model == "sklearn" and task == "ranking":
        raise ValueError("scikit-learn has no ranking model: leave 'sklearn' out of the "
                         "baselines of ranking datasets")
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
    model = _peer(task.model, fold.task, task.seed)
    X_train, X_test = fold.X_train, fold.X_test
    if task.model == "sklearn" and not task.one_hot:
        X_train, X_test = one_hot(X_train), one_hot(X_test)
    if fold.task == "ranking":
        model.fit(X_train, fold.y_train, group=fold.train_group)
        return {"score": ndcg(fold.y_test, model.predict(X_test), fold.test_group),
                "seconds": time.perf_counter() - start}
    if fold.task == "survival":
        from .._survival_metrics import concordance_index

        model.fit(X_train, fold.train_codes)
        return {"score": float(concordance_index(fold.test_codes, model.predict(X_test))),
                "seconds": time.perf_counter() - start}
    target = fold.y_train if fold.task == "regression" else np.asarray(fold.y_train)
    model.fit(X_train, target)
    predicted = model.predict(X_test)
    if fold.task == "classification":
        value = float(np.mean(np.asarray(predicted) == np.asarray(fold.y_test)))
    else:
        value = float(np.sqrt(np.mean((np.asarray(predicted) - fold.test_codes) ** 2)))
    return {"score": value, "seconds": time.perf_counter() - start}
