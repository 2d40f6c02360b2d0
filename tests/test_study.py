"""Tests of ``treeboost study``: grid, scores equal to the estimators', SIGKILL and resume,
Bayesian search, report.

Datasets are small files written here (scikit-learn's bundled data and a synthetic ARFF
with a nominal attribute and missing values), so no test needs the network or
../shared/datasets.
"""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from test_cli import write_arff
from treeboost import TreeBoostClassifier, TreeBoostRegressor
from treeboost.cli import main
from treeboost.datasets import load
from treeboost.study import run_study
from treeboost.study.data import split_indices
from treeboost.study.space import (
    DEFAULT_BAYES_GRID,
    DEFAULT_GRID,
    complexity,
    config_key,
    expand,
    fit_groups,
    parse_grid,
)

SRC = Path(__file__).resolve().parents[1] / "src"


def write_sklearn_csv(folder, name):
    from sklearn import datasets

    X, y = getattr(datasets, f"load_{name}")(return_X_y=True, as_frame=True)
    frame = X.assign(**{"class": [f"c{v}" for v in y]})
    path = Path(folder) / f"{name}.csv"
    frame.to_csv(path, index=False)
    return path


def rows(out):
    with sqlite3.connect(Path(out) / "study.sqlite") as db:
        return db.execute("SELECT dataset, config, fold, score, run FROM results "
                          "ORDER BY dataset, config, fold").fetchall()


# ---- the grid -----------------------------------------------------------------------------
def test_default_grid_is_256_configurations_in_64_fits():
    configs = expand(DEFAULT_GRID)
    assert len(configs) == 256
    assert len({config_key(c) for c in configs}) == 256
    groups = fit_groups(configs)
    assert len(groups) == 64
    assert all(stages == [100, 200, 500, 1000] for _, stages in groups)


def test_parse_grid_replaces_axes_and_types_values():
    grid = parse_grid(["learning-rate=0.3", "max_leaf_nodes=4,8", "max_depth=none,3"])
    assert grid["learning_rate"] == [0.3]
    assert grid["max_leaf_nodes"] == [4, 8]
    assert isinstance(grid["max_leaf_nodes"][0], int)
    assert grid["max_depth"] == [None, 3]
    assert grid["subsample"] == DEFAULT_GRID["subsample"]
    for bad, message in [("learning_rate", "NAME=V1"), ("foo=1", "unknown parameter"),
                         ("subsample=0.5,,1", "empty value"), ("max_bins=300", "max_bins"),
                         ("n_estimators=10,10", "repeated"), ("n_jobs=2", "unknown")]:
        with pytest.raises(ValueError, match=message):
            parse_grid([bad])


def test_tie_break_prefers_the_simpler_model():
    configs = [{"learning_rate": 0.1, "max_leaf_nodes": 6, "n_estimators": 100,
                "subsample": 1.0},
               {"learning_rate": 0.1, "max_leaf_nodes": 2, "n_estimators": 200,
                "subsample": 1.0},
               {"learning_rate": 0.05, "max_leaf_nodes": 2, "n_estimators": 200,
                "subsample": 0.8}]
    assert min(configs, key=complexity) == configs[1]  # 400 leaves beat 600


# ---- scores equal the estimators' -------------------------------------------------------------
SMALL_GRID = ["learning_rate=0.1,0.3", "max_leaf_nodes=2,5", "n_estimators=5,15",
              "subsample=0.7,1.0"]


def test_study_scores_equal_estimator_scores(tmp_path):
    """The shared bins and staged reading give exactly the estimators' accuracy/RMSE."""
    arff = write_arff(tmp_path / "synth.arff", n=150)
    reg = tmp_path / "reg.csv"
    rng = np.random.default_rng(0)
    x = rng.normal(size=(120, 2))
    pd.DataFrame({"x0": x[:, 0], "x1": x[:, 1], "y": x[:, 0] ** 2 + x[:, 1]}).to_csv(
        reg, index=False)
    out = tmp_path / "s"
    run_study([arff], out, grid=SMALL_GRID, folds=2, seed=4, baselines=[], progress=None)
    run_study([reg], tmp_path / "r", grid=SMALL_GRID, seed=4, target="y", baselines=[],
              progress=None)
    stored = {(d, c, f): s for d, c, f, s, _ in rows(out) + rows(tmp_path / "r")}
    assert len(stored) == 16 * 2 + 16
    X, y = load(arff)
    Xr, yr = load(reg, target="y")
    for config in expand(parse_grid(SMALL_GRID))[::5]:
        for fold in (0, 1):
            train, test = split_indices(y, "classification", 2, fold, 4)
            model = TreeBoostClassifier(**config, random_state=4).fit(
                X.iloc[train], np.asarray(y)[train])
            accuracy = np.mean(model.predict(X.iloc[test]) == np.asarray(y)[test])
            assert stored["synth", config_key(config), fold] == accuracy
        train, test = split_indices(yr, "regression", 1, 0, 4)
        model = TreeBoostRegressor(**config, random_state=4).fit(Xr.iloc[train],
                                                                 yr.iloc[train])
        rmse = np.sqrt(np.mean((model.predict(Xr.iloc[test]) - yr.iloc[test]) ** 2))
        # same trees and same summation order: equal up to the last bit or two of the
        # mean of squares computed in another order
        assert stored["reg", config_key(config), 0] == pytest.approx(rmse, rel=1e-12)


def test_a_fold_is_binned_once_for_all_its_configurations(tmp_path, monkeypatch):
    """A worker bins a (dataset, fold) once per max_bins and fits every configuration
    of that fold on the same Dataset (issue 12); another fold is binned anew."""
    from treeboost.binning import BinMapper
    from treeboost.study import fitting
    from treeboost.study.data import DatasetSpec

    spec = DatasetSpec("synth", str(write_arff(tmp_path / "synth.arff", n=150)))
    calls = {"fit": 0, "transform": 0}
    for name in calls:
        original = getattr(BinMapper, name)

        def counted(self, *args, _original=original, _name=name, **kwargs):
            calls[_name] += 1
            return _original(self, *args, **kwargs)
        monkeypatch.setattr(BinMapper, name, counted)
    monkeypatch.setattr(fitting, "_folds", type(fitting._folds)())
    configs = [dict(learning_rate=lr, max_leaf_nodes=leaves, subsample=sub)
               for lr, leaves, sub in [(0.1, 2, 1.0), (0.3, 5, 0.7), (0.1, 5, 0.7),
                                       (0.3, 2, 1.0)]]
    for config in configs:
        fitting.run_fit(fitting.FitTask(spec, 2, 0, 4, False, config, (5,)))
    assert calls == {"fit": 1, "transform": 1}
    fitting.run_fit(fitting.FitTask(spec, 2, 0, 4, False, dict(configs[0], max_bins=15), (5,)))
    assert calls == {"fit": 2, "transform": 2}  # other bins: binned again, once
    fitting.run_fit(fitting.FitTask(spec, 2, 1, 4, False, configs[0], (5,)))
    assert calls == {"fit": 3, "transform": 3}  # the other fold's rows


# ---- kill and resume ------------------------------------------------------------------------
KILL_GRID = ["learning_rate=0.1,0.05", "max_leaf_nodes=3,6", "n_estimators=150,300",
             "subsample=0.7,1.0"]


def _study_command(data, out):
    return [sys.executable, "-m", "treeboost", "study", *map(str, data), "--out", str(out),
            *sum((["--grid", g] for g in KILL_GRID), []), "--folds", "2", "--jobs", "2",
            "--seed", "7", "--baselines", "treeboost", "--no-report", "--quiet"]


def _env():
    env = dict(os.environ, NUMBA_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    return env


@pytest.mark.slow
def test_sigkill_and_resume_lose_nothing_and_repeat_nothing(tmp_path):
    data = [write_sklearn_csv(tmp_path, n) for n in ("iris", "wine")] + \
        [write_arff(tmp_path / "synth.arff", n=200)]
    total = 3 * 16 * 2  # datasets x configurations x folds
    out = tmp_path / "killed"
    proc = subprocess.Popen(_study_command(data, out) + ["--target", "class"], env=_env(),
                            start_new_session=True, stderr=subprocess.PIPE)
    db_path = out / "study.sqlite"
    deadline = time.monotonic() + 120
    stored = 0
    while time.monotonic() < deadline and proc.poll() is None:
        if db_path.exists():
            try:
                with sqlite3.connect(db_path) as db:
                    stored = db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
            except sqlite3.OperationalError:  # tables not created yet
                stored = 0
            if stored >= 8:
                break
        time.sleep(0.02)
    assert proc.poll() is None, proc.stderr.read().decode()
    os.killpg(proc.pid, signal.SIGKILL)  # the whole group: parent and workers at once
    proc.wait()
    before = {r[:3]: r[3] for r in rows(out)}
    assert 8 <= len(before) < total

    resumed = subprocess.run(_study_command(data, out) + ["--target", "class"], env=_env(),
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    after = rows(out)
    # none lost: every key once (the primary key would have failed a second insert)
    assert len(after) == total
    # nothing stored before the kill was computed again: it kept its run and score
    for dataset, config, fold, score, run in after:
        if (dataset, config, fold) in before:
            assert run == 1
            assert score == before[dataset, config, fold]
        else:
            assert run == 2
    # the same study without interruption, in one process: the same table
    reference = tmp_path / "reference"
    run_study(data, reference, grid=KILL_GRID, folds=2, jobs=1, seed=7, target="class",
              baselines=["treeboost"], report=False, progress=None)
    assert [r[:4] for r in after] == [r[:4] for r in rows(reference)]
    with sqlite3.connect(out / "study.sqlite") as db, \
            sqlite3.connect(reference / "study.sqlite") as ref:
        query = "SELECT dataset, model, fold, score FROM baselines ORDER BY 1, 2, 3"
        assert db.execute(query).fetchall() == ref.execute(query).fetchall()


def test_resume_with_other_settings_is_refused(tmp_path):
    data = [write_arff(tmp_path / "synth.arff", n=60)]
    grid = ["learning_rate=0.1", "max_leaf_nodes=2", "n_estimators=3", "subsample=1.0"]
    run_study(data, tmp_path / "s", grid=grid, baselines=[], report=False, progress=None)
    with pytest.raises(ValueError, match="other settings"):
        run_study(data, tmp_path / "s", grid=grid, seed=1, baselines=[], progress=None)
    # the same settings again: nothing left to compute, nothing added
    run_study(data, tmp_path / "s", grid=grid, baselines=[], report=False, progress=None)
    assert len(rows(tmp_path / "s")) == 1


def test_a_second_process_on_a_running_study_is_refused_before_any_work(tmp_path):
    # two processes on one folder proposed and stored the same Bayesian trials, and the
    # second died on the database's unique keys halfway through
    from treeboost.exceptions import DataError
    from treeboost.study.store import Store

    data = [write_arff(tmp_path / "synth.arff", n=60)]
    grid = ["learning_rate=0.1", "max_leaf_nodes=2", "n_estimators=3", "subsample=1.0"]
    first = Store(tmp_path / "s")
    first.lock()  # as a running study holds it (a second open file conflicts like a process)
    try:
        with pytest.raises(DataError, match=rf"another treeboost study \(pid {os.getpid()}\)"):
            run_study(data, tmp_path / "s", grid=grid, baselines=[], report=False,
                      progress=None)
        assert rows(tmp_path / "s") == []
    finally:
        first.close()
    run_study(data, tmp_path / "s", grid=grid, baselines=[], report=False, progress=None)
    assert len(rows(tmp_path / "s")) == 1


# ---- Bayesian search --------------------------------------------------------------------------
BAYES_GRID = ["learning_rate=0.01,0.3", "max_leaf_nodes=2,8", "n_estimators=5,10",
              "subsample=0.6,1.0"]


def test_bayes_search_budget_bounds_and_replay(tmp_path):
    data = [write_arff(tmp_path / "synth.arff", n=120)]
    kwargs = dict(grid=BAYES_GRID, search="bayes", trials=12, seed=2, baselines=[],
                  report=False, progress=None)
    run_study(data, tmp_path / "a", **kwargs)
    db = sqlite3.connect(tmp_path / "a" / "study.sqlite")
    trials = [json.loads(p) for (p,) in db.execute("SELECT params FROM trials ORDER BY trial")]
    assert len(trials) == 6  # 12 configurations, read at 2 stages per fit
    for t in trials:
        assert 0.01 <= t["learning_rate"] <= 0.3
        assert 2 <= t["max_leaf_nodes"] <= 8
        assert 0.6 <= t["subsample"] <= 1.0
    assert len({config_key(t) for t in trials}) == 6  # TPE explored, it did not repeat
    # an interrupted search (last proposal's results lost) replays the same proposals
    db.execute("DELETE FROM results WHERE config IN (SELECT params FROM trials WHERE "
               "trial >= 4)")
    db.execute("DELETE FROM trials WHERE trial >= 5")
    db.commit()
    db.close()
    run_study(data, tmp_path / "a", **kwargs)
    run_study(data, tmp_path / "b", **kwargs)
    assert [r[:4] for r in rows(tmp_path / "a")] == [r[:4] for r in rows(tmp_path / "b")]


def test_bayes_search_without_a_grid_searches_the_default_bounds(tmp_path):
    # issue 35: the Bayesian default spans where tuned models were found, with the axes the
    # SPEC grid lacks; --grid still replaces an axis of it
    data = [write_arff(tmp_path / "synth.arff", n=120)]
    run_study(data, tmp_path / "a", grid=["n_estimators=5,10"], search="bayes", trials=8,
              baselines=[], report=False, progress=None)
    db = sqlite3.connect(tmp_path / "a" / "study.sqlite")
    trials = [json.loads(p) for (p,) in db.execute("SELECT params FROM trials ORDER BY trial")]
    db.close()
    assert len(trials) == 4  # 8 configurations, read at 2 stages per fit
    axes = set(DEFAULT_BAYES_GRID) - {"n_estimators"}
    assert {"min_samples_leaf", "reg_lambda", "colsample_bytree"} <= axes
    for t in trials:
        assert set(t) == axes
        for name in axes:
            low, high = DEFAULT_BAYES_GRID[name]
            assert low <= t[name] <= high, name
    # the grid search's default is still SPEC's
    assert "min_samples_leaf" not in DEFAULT_GRID


# ---- report -------------------------------------------------------------------------------------
def test_report_lists_every_dataset_with_figures(tmp_path, capsys):
    data = [write_sklearn_csv(tmp_path, "iris"), write_arff(tmp_path / "synth.arff", n=90)]
    out = tmp_path / "s"
    code = main(["study", *map(str, data), "--out", str(out), "--target", "class", "--jobs",
                 "1", "--grid", "learning_rate=0.1,0.3", "--grid", "max_leaf_nodes=2,3",
                 "--grid", "n_estimators=5,10", "--grid", "subsample=1.0",
                 "--baselines", "treeboost,lightgbm,sklearn"])
    assert code == 0
    captured = capsys.readouterr()
    # 2 datasets x (8 configurations + 3 reference models)
    assert "report:" in captured.out
    assert "22/22 (100%)" in captured.err
    md = (out / "report.md").read_text()
    assert "Tie-breaking rule" in md
    assert "| iris |" in md
    assert "| synth |" in md
    for figure in ("best", "params", "lr_trees"):
        assert (out / "figures" / f"{figure}.png").stat().st_size > 1000
        assert f"figures/{figure}.png" in md
    assert "<table>" in (out / "report.html").read_text()
    best = {b["dataset"]: b for b in json.loads((out / "best.json").read_text())}
    iris = [r for r in rows(out) if r[0] == "iris"]
    assert best["iris"]["score"] == max(r[3] for r in iris)
    assert 0 < best["iris"]["lightgbm"] <= 1
    assert 0 < best["iris"]["sklearn"] <= 1
    (out / "report.md").unlink()
    assert main(["report", str(out)]) == 0
    assert (out / "report.md").read_text() == md
