"""Hyper-parameter studies over many datasets (SPEC §6): run, resume, report.

Data flow: :func:`run_study` -> ``data.discover`` (files, folders, or the datasets bundled
with scikit-learn) -> ``space`` (the default 256-point grid, or ``--grid`` axes; Optuna
bounds for the Bayesian search) -> ``runner`` (processes, one fit per configuration
read at several ``n_estimators`` stages, bins shared across configurations) ->
``store`` (SQLite, every result committed as it arrives, so a killed study resumes) ->
``analysis`` (best configuration per dataset, ties toward the simpler model) ->
``report`` (Markdown and HTML pages with figures).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from .data import DatasetSpec, describe, discover
from .fitting import BASELINES
from .progress import Progress
from .space import DEFAULT_BAYES_GRID, DEFAULT_GRID, parse_grid
from .store import Store

__all__ = ["DEFAULT_BAYES_GRID", "DEFAULT_GRID", "available_baselines", "parse_grid", "run_study"]



def available_baselines() -> tuple[str, ...]:
    """The reference models whose library is installed (treeboost's defaults always)."""
    return tuple(m for m in BASELINES
                 if m in ("treeboost", "sklearn") or importlib.util.find_spec(m) is not None)


def _datasets(store: Store, specs: list[DatasetSpec], task: str):
    """Describe (load once) every dataset; keep those of the requested task."""
    known = {d["name"]: d for d in store.datasets()}
    chosen = []
    for spec in specs:
        info = known.get(spec.name)
        if info is None or info["source"] != spec.source:
            info = describe(spec)
            store.add_dataset(info)
        if task in ("all", info["task"]):
            chosen.append((spec, info))
    if not chosen:
        raise ValueError(f"no {task} dataset among {', '.join(s.name for s in specs)}")
    from .runner import _cost

    return sorted(chosen, key=lambda pair: (-_cost(pair[1]), pair[0].name))


def run_study(data=(), out="study", *, grid=None, search="grid", trials=None, folds=1,
              jobs=1, seed=0, one_hot=False, target=None, task="all",
              baselines=None, progress=sys.stderr, report=True, argv=None) -> Path:
    """Run (or resume) a study and write its report.

    Parameters
    ----------
    data : list of str or path-like, default=()
        Data files and folders (see ``data.discover``): ARFF, CSV, and svmlight files
        with query groups (ranking, scored by NDCG@10 over the test queries); a
        manifest's "survival" datasets (a time target and an ``event`` column, or signed
        times) are scored by the concordance index of ``TreeBoostSurvival``; empty: the
        datasets bundled with scikit-learn (breast_cancer, iris, wine, diabetes), offline.
    out : str or path-like, default="study"
        Folder of the database ``study.sqlite`` and the report. A folder holding a
        study with the same settings is resumed; one with other settings is an error.
    grid : dict of {str: list} or list of str, default=None
        The grid, or ``NAME=V1,V2`` strings replacing axes of :data:`DEFAULT_GRID` (of
        :data:`DEFAULT_BAYES_GRID` for a Bayesian search).
    search : {"grid", "bayes"}, default="grid"
        Every configuration of the grid, or a TPE search (Optuna) inside its bounds. The
        Bayesian search's default bounds are wider than the grid and have more axes
        (learning rate 0.01-0.3, 4-128 leaves, 5-100 rows a leaf, row and column
        subsampling 0.5-1, L2 0.001-10; 100 to 1,000 trees): where the tuned comparison of
        the benchmarks page found the best models.
    trials : int, default=None
        Bayesian budget in configurations per dataset; None: the grid's size.
    folds : int, default=1
        1: a stratified 80/20 hold-out; k >= 2: stratified k-fold. Ranking datasets are
        cut by whole queries (``data.split_queries``).
    jobs : int, default=1
        Worker processes (each single-threaded).
    seed : int, default=0
        Seed of the splits and of every model.
    one_hot : bool, default=False
        One-hot encode categorical columns instead of native categorical splits.
    target : str, default=None
        Target column of files no manifest describes.
    task : {"all", "classification", "regression", "ranking", "survival"}, default="all"
        Which datasets to keep.
    baselines : list of str, default=None
        Reference models ("treeboost" defaults, "lightgbm", "sklearn") run with their
        default parameters on the same folds; None: :func:`available_baselines`.
        "sklearn" has no ranking model and is skipped on ranking datasets; survival
        datasets have treeboost's defaults only (neither peer has a Cox model).
    progress : file or None, default=sys.stderr
        Where the progress bar goes.
    report : bool, default=True
        Write ``report.md`` and ``report.html`` at the end.
    argv : list of str, default=None
        The command line, recorded in the database.

    Returns
    -------
    pathlib.Path
        The study folder.
    """
    if search not in ("grid", "bayes"):
        raise ValueError(f"search={search!r} must be 'grid' or 'bayes'")
    if not isinstance(folds, int) or folds < 1:
        raise ValueError(f"folds={folds!r} must be an int >= 1")
    if not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs={jobs!r} must be an int >= 1")
    if trials is not None and (not isinstance(trials, int) or trials < 1):
        raise ValueError(f"trials={trials!r} must be an int >= 1")
    if task not in ("all", "classification", "regression", "ranking", "survival"):
        raise ValueError(f"task={task!r} must be 'all', 'classification', 'regression', "
                         "'ranking' or 'survival'")
    base = DEFAULT_BAYES_GRID if search == "bayes" else DEFAULT_GRID
    grid = parse_grid(grid or [], base) if grid is None or not isinstance(grid, dict) \
        else dict(sorted(grid.items()))
    baselines = tuple(available_baselines() if baselines is None else baselines)
    unknown = [m for m in baselines if m not in BASELINES]
    if unknown:
        raise ValueError(f"unknown baseline {unknown[0]!r}; expected some of {BASELINES}")
    specs = discover(list(data), target)
    store = Store(out)
    try:
        store.lock()
        settings = {"search": search, "grid": grid, "folds": folds, "seed": seed,
                    "one_hot": bool(one_hot), "trials": trials if search == "bayes" else None}
        store.check_settings(settings)
        datasets = _datasets(store, specs, task)
        run = store.start_run(argv)
        from . import runner

        study = runner._Study(store, run, settings, datasets, None)

        def make_progress(total, done, work=None):
            return Progress(total, done, stream=progress, work=work, jobs=jobs)

        if search == "grid":
            runner.run_grid(study, grid, baselines, jobs, make_progress)
        else:
            runner.run_bayes(study, grid, trials, baselines, jobs, make_progress)
        study.progress.close()
        store.finish_run(run)
        if report:
            from .report import write_report

            write_report(store, [spec.name for spec, _ in datasets])
    finally:
        store.close()
    return Path(out)
