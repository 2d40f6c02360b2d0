"""Schedule a study's fits over processes, store each result as it comes, resume.

Data flow: datasets and settings -> work units (:class:`~.fitting.FitTask`: one fit of
a configuration group on one fold, read at several ``n_estimators`` stages;
:class:`~.fitting.BaselineTask`: one reference model on one fold) minus what the store
already holds -> a process pool (``--jobs``, one thread per process) -> each finished
unit committed to the store at once -> progress on stderr.

Work is handed out a few units at a time (never the whole list), largest datasets first
so the last minutes are not spent waiting on one big fit, and the units of one dataset
are consecutive so a worker's cached fold and bins serve many configurations.

No process outlives the study: a worker ends itself when the study process dies, even
by SIGKILL (``fitting.init_worker``), and a study stopped by Ctrl-C, SIGTERM or a failed
unit terminates its workers instead of waiting for their current units. The progress
bar weights the time left by each unit's predicted cost (:func:`_unit_cost`).
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import time
import zlib
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

from ..exceptions import TreeboostError
from ..params import default
from . import fitting
from .data import SCORES
from .space import bayes_space, config_key, expand, fit_groups
from .store import Store


class StudyError(TreeboostError, RuntimeError):
    """A unit of a study failed; the message names the dataset, fold and configuration.

    What was stored before stays stored: fix the cause and run the same command again.
    """


def _name(task) -> str:
    what = f"model {task.model}" if isinstance(task, fitting.BaselineTask) else \
        f"configuration {config_key(task.base)}"
    return f"dataset {task.dataset.name!r}, fold {task.fold}, {what}"


class _Inline:
    """The executor of ``--jobs 1``: runs each unit at submission, in this process."""

    def submit(self, fn, task) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(task))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, like a pool
            future.set_exception(exc)
        return future

    def shutdown(self, wait=True, cancel_futures=False) -> None:
        """Nothing to release."""


def _executor(jobs: int):
    if jobs == 1:
        return _Inline()
    # spawn: Numba's thread pool does not survive fork, and each worker must start
    # with its own thread settings (init_worker)
    return ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"),
                               initializer=fitting.init_worker, initargs=(os.getpid(),))


def _stop_workers(executor) -> None:
    """End the workers now, not after their current unit: the study is stopping
    (Ctrl-C, SIGTERM, a failed unit) and nobody would store what they compute."""
    processes = list((getattr(executor, "_processes", None) or {}).values())
    executor.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
    deadline = time.monotonic() + 5.0
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
        if process.is_alive():  # SIGTERM ignored or stuck: no more asking
            process.kill()
            process.join()


def _cost(info: dict) -> float:
    """Relative cost of a dataset's fits: rows x trees per stage."""
    outputs = info["n_classes"] if info["n_classes"] > 2 else 1
    return info["n_rows"] * outputs * max(1, info["n_features"]) ** 0.5


# Per tree and output, beyond _cost's rows x sqrt(features): a fixed part (gradients,
# bookkeeping) and the split search, which scans every feature's bins at every leaf
# whatever the rows. In _cost's units, fitted to 1000-tree fits of 7 datasets of
# ../shared/datasets (150 to 13,000 rows, 4 to 279 features): measured seconds per
# predicted cost then agreed within ~2x, where rows alone left arrhythmia (279
# features, 452 rows) 5x off
_TREE_OVERHEAD = 3_000.0
_LEAF_FEATURE = 12.0
# a reference model's cost in trees of a fit unit, measured beside 1000-tree fits
# (scikit-learn's exact splits cost several times more), and the leaves its defaults
# grow; the rates measured during the run correct these guesses
_BASELINE_TREES = {"treeboost": 200.0, "lightgbm": 200.0, "sklearn": 2000.0}
_BASELINE_LEAVES = {"treeboost": 31, "lightgbm": 31, "sklearn": 8}


def _unit_cost(info: dict, task, leaves: int | None = None) -> float:
    """Predicted cost of a unit (relative): trees x outputs x (rows x sqrt(features) +
    features x leaves + overhead); what the progress bar weights the time left by.
    ``leaves`` replaces a fit's ``max_leaf_nodes`` (None: the fit's own)."""
    outputs = info["n_classes"] if info["n_classes"] > 2 else 1
    if isinstance(task, fitting.FitTask):
        trees = max(task.stages)
        leaves = leaves or task.base.get("max_leaf_nodes") or 31  # None: depth-bound
    else:
        trees = _BASELINE_TREES.get(task.model, 200.0)
        leaves = _BASELINE_LEAVES.get(task.model, 31)
    return trees * (_cost(info) + outputs * (_TREE_OVERHEAD + _LEAF_FEATURE *
                                             info["n_features"] * leaves))


def _group(task) -> tuple[str, str]:
    """The progress bar's group of a unit: its rate is measured apart from the others."""
    kind = "fit" if isinstance(task, fitting.FitTask) else f"baseline {task.model}"
    return kind, task.dataset.name


def _work(study: _Study, units) -> dict:
    """Predicted cost of ``units`` per group."""
    work: dict = {}
    for _, task in units:
        key = _group(task)
        work[key] = work.get(key, 0.0) + study.cost(task)
    return work


class _Study:
    """State of one invocation: the store, the run number and the progress bar."""

    def __init__(self, store: Store, run: int, settings: dict, datasets, progress):
        self.store, self.run, self.settings = store, run, settings
        self.datasets = datasets  # list of (spec, info), largest first
        self.progress = progress
        self.info = {spec.name: info for spec, info in datasets}
        # the Bayesian search predicts proposals not made yet: every fit is costed
        # at these typical leaves, so that what is predicted is what is counted off
        self.leaves: int | None = None

    def cost(self, task) -> float:
        """Predicted cost of a unit (see :func:`_unit_cost`)."""
        return _unit_cost(self.info[task.dataset.name], task, self.leaves)

    def count(self, task, n: int, result: dict | None) -> None:
        """Advance the progress bar by ``n`` results of ``task`` (None: not computed)."""
        self.progress.update(n, group=_group(task), cost=self.cost(task),
                             seconds=None if result is None else result["seconds"])

    def fit_task(self, spec, fold, base, stages) -> fitting.FitTask:
        s = self.settings
        return fitting.FitTask(spec, s["folds"], fold, s["seed"], s["one_hot"], base,
                               tuple(stages))

    def store_fit(self, task: fitting.FitTask, result: dict) -> None:
        seconds = result["seconds"] / len(task.stages)
        rows = [(task.dataset.name, config_key({**task.base, "n_estimators": stage}),
                 task.fold, score, seconds) for stage, score in result["scores"].items()]
        self.store.add_results(rows, self.run)
        self.count(task, len(rows), result)


def _drive(executor, jobs: int, next_unit, on_done) -> None:
    """Keep about two units per process in flight; hand each finished one to ``on_done``.

    ``next_unit()`` returns ``(function, task)`` or None when nothing can start now
    (the run ends when nothing is in flight either).
    """
    pending: dict = {}
    finished = False
    try:
        while True:
            while len(pending) < 2 * jobs:
                unit = next_unit()
                if unit is None:
                    break
                fn, task = unit
                pending[executor.submit(fn, task)] = task
            if not pending:
                finished = True
                return
            done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
            for future in done:
                task = pending.pop(future)
                try:
                    result = future.result()
                except Exception as exc:
                    raise StudyError(f"{_name(task)} failed: {type(exc).__name__}: "
                                     f"{exc}") from exc
                on_done(task, result)
    finally:
        if finished:
            executor.shutdown(wait=True)
        else:
            _stop_workers(executor)


# ---- grid search -------------------------------------------------------------------------
def grid_units(study: _Study, grid: dict, baselines) -> tuple[list, int, int]:
    """The units left to run, the study's total of results, and how many are stored."""
    groups = fit_groups(expand(grid))
    done = study.store.done_keys()
    done_base = study.store.done_baselines()
    folds, units, total, stored = study.settings["folds"], [], 0, 0
    for spec, info in study.datasets:
        for fold in range(folds):
            for base, stages in groups:
                missing = [s for s in stages if (spec.name, config_key(
                    {**base, "n_estimators": s}), fold) not in done]
                total += len(stages)
                stored += len(stages) - len(missing)
                if missing:
                    units.append((fitting.run_fit, study.fit_task(spec, fold, base, missing)))
            for model in fitting.baselines_for(info["task"], baselines):
                total += 1
                if (spec.name, model, fold) in done_base:
                    stored += 1
                    continue
                s = study.settings
                units.append((fitting.run_baseline, fitting.BaselineTask(
                    spec, folds, fold, s["seed"], s["one_hot"], model)))
    return units, total, stored


def _on_done(study: _Study):
    def handle(task, result):
        if isinstance(task, fitting.FitTask):
            study.store_fit(task, result)
        else:
            study.store.add_baseline(task.dataset.name, task.model, task.fold,
                                     result["score"], result["seconds"], study.run)
            study.count(task, 1, result)
    return handle


def run_grid(study: _Study, grid: dict, baselines, jobs: int, make_progress) -> None:
    """Run every configuration of ``grid`` (and the baselines) not yet stored."""
    units, total, stored = grid_units(study, grid, baselines)
    study.progress = make_progress(total, stored, _work(study, units))
    queue = iter(units)
    _drive(_executor(jobs), jobs, lambda: next(queue, None), _on_done(study))


# ---- Bayesian search -----------------------------------------------------------------------
class _BayesDataset:
    """One dataset's sequential ask-and-tell loop; one proposal in flight at a time, so
    proposal t always sees exactly proposals 0..t-1 (a resumed search replays them)."""

    def __init__(self, study: _Study, spec, info, space, stages, n_trials):
        self.study, self.spec, self.space = study, spec, space
        self.stages, self.n_trials = stages, n_trials
        self.higher = SCORES[info["task"]].higher
        self.trials = [json.loads(p) for p in study.store.trials(spec.name)]
        self.waiting: list = []  # units of the current proposal not yet handed out
        self.in_flight = 0

    def _scores(self, done: set, base: dict):
        """Best mean score over stages, or None if a fold or stage is missing."""
        folds = self.study.settings["folds"]
        values = []
        for stage in self.stages:
            key = config_key({**base, "n_estimators": stage})
            if any((self.spec.name, key, f) not in done for f in range(folds)):
                return None
            values.append(key)
        rows = self.study.store.db.execute(
            f"SELECT config, AVG(score) FROM results WHERE dataset=? AND config IN "
            f"({','.join('?' * len(values))}) GROUP BY config", (self.spec.name, *values))
        means = [m for _, m in rows.fetchall()]
        return max(means) if self.higher else min(means)

    def unit(self, fold: int, base: dict) -> fitting.FitTask:
        """The fit of ``base`` on ``fold`` at every stage."""
        return self.study.fit_task(self.spec, fold, base, self.stages)

    def work(self) -> float:
        """Predicted cost of the proposals not yet stored (proposals yet to come and
        interrupted ones alike, pro rata of their missing results)."""
        folds = self.study.settings["folds"]
        stored = len(self.study.store.done_keys(self.spec.name))
        missing = max(0, self.n_trials * len(self.stages) * folds - stored)
        return self.study.cost(self.unit(0, {})) * missing / len(self.stages)

    def _missing_units(self, base: dict, done: set) -> list:
        units = []
        for fold in range(self.study.settings["folds"]):
            missing = [s for s in self.stages if (self.spec.name, config_key(
                {**base, "n_estimators": s}), fold) not in done]
            if missing:
                units.append((fitting.run_fit, self.study.fit_task(self.spec, fold, base,
                                                                   missing)))
        return units

    def _ask(self, history) -> dict:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        # a sampler seeded per proposal: the proposal depends on the seed and the
        # history only, not on how many asks this process made before
        seed = zlib.crc32(f"{self.study.settings['seed']}:{self.spec.name}:"
                          f"{len(history)}".encode())
        study = optuna.create_study(direction="maximize" if self.higher else "minimize",
                                    sampler=optuna.samplers.TPESampler(seed=seed))
        for params, value in history:
            study.add_trial(optuna.trial.create_trial(params=params,
                                                      distributions=self.space, value=value))
        return dict(study.ask(self.space).params)

    def next_unit(self):
        """The next unit of this dataset, asking for a new proposal when one is due."""
        if self.waiting:
            self.in_flight += 1
            return self.waiting.pop(0)
        if self.in_flight:
            return None
        done = self.study.store.done_keys(self.spec.name)
        history = []
        for params in self.trials:
            value = self._scores(done, params)
            if value is None:  # an interrupted proposal: finish it first
                self.waiting = self._missing_units(params, done)
                return self.next_unit()
            history.append((params, value))
        if len(self.trials) >= self.n_trials:
            return None
        params = self._ask(history)
        self.study.store.add_trial(self.spec.name, len(self.trials), config_key(params))
        self.trials.append(params)
        self.waiting = self._missing_units(params, done)
        if not self.waiting:  # proposed before (a repeated value): nothing to compute
            for fold in range(self.study.settings["folds"]):
                self.study.count(self.unit(fold, params), len(self.stages), None)
        return self.next_unit()


def run_bayes(study: _Study, grid: dict, budget: int | None, baselines, jobs: int,
              make_progress) -> None:
    """A TPE search per dataset (Optuna, ask-and-tell) with the budget of ``grid``.

    Each proposal sets every axis but ``n_estimators`` and is read at every
    ``n_estimators`` stage of the grid, so a budget of B configurations is
    ceil(B / number of stages) proposals, each one fit per fold.
    """
    space = bayes_space(grid)
    stages = sorted(grid.get("n_estimators", [default("n_estimators")]))
    budget = budget or len(expand(grid))
    n_trials = math.ceil(budget / len(stages))
    units, _, _ = grid_units(study, {}, baselines)  # baselines only: no fit groups
    units = [u for u in units if u[0] is fitting.run_baseline]
    states = [_BayesDataset(study, spec, info, space, stages, n_trials)
              for spec, info in study.datasets]
    folds = study.settings["folds"]
    done = study.store.done_keys()
    total = sum(n_trials * len(stages) * folds + len(fitting.baselines_for(
        info["task"], baselines)) * folds for _, info in study.datasets)
    stored = len(done) + len(study.store.done_baselines())
    leaves = grid.get("max_leaf_nodes") or [31]
    study.leaves = round(sum(v or 31 for v in leaves) / len(leaves))
    work = _work(study, units)
    for state in states:
        work["fit", state.spec.name] = state.work()
    study.progress = make_progress(total, min(stored, total), work)
    queue = iter(units)
    cursor = [0]

    def next_unit():
        for _ in range(len(states)):  # round robin over datasets
            state = states[cursor[0] % len(states)]
            cursor[0] += 1
            unit = state.next_unit()
            if unit is not None:
                return unit
        return next(queue, None)

    on_done = _on_done(study)

    def handle(task, result):
        on_done(task, result)
        if isinstance(task, fitting.FitTask):
            next(s for s in states if s.spec == task.dataset).in_flight -= 1

    _drive(_executor(jobs), jobs, next_unit, handle)
