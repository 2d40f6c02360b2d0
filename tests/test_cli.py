"""Tests of the command line: ``treeboost train`` and ``predict`` against the Python API.

The CLI and the API must agree to the bit (LightGBM's consistency test): the same file,
split and parameters give the same predictions. Real files come from
../shared/datasets (skipped when that folder is absent); the rest from small ARFF/CSV
files written here.
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from treeboost import TreeBoostClassifier, TreeBoostRegressor, load_model
from treeboost.cli import main
from treeboost.datasets import load, one_hot
from treeboost.study.data import split_indices

SHARED_DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
needs_shared = pytest.mark.skipif(not SHARED_DATASETS.is_dir(),
                                  reason=f"{SHARED_DATASETS} not found")


def write_arff(path, n=240, seed=0):
    """A 3-class problem with a numeric, a nominal and a missing-valued attribute."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    colour = rng.choice(["red", "green", "blue"], size=n)
    b = np.where(rng.random(n) < 0.1, np.nan, rng.normal(size=n))
    score = a + (colour == "red") - (colour == "blue") + 0.5 * np.nan_to_num(b)
    label = np.where(score > 0.7, "hi", np.where(score < -0.7, "lo", "mid"))
    lines = ["@relation synthetic", "@attribute a numeric", "@attribute colour {red,green,blue}",
             "@attribute b numeric", "@attribute class {lo,mid,hi}", "@data"]
    for row in zip(a, colour, b, label, strict=True):
        lines.append(f"{row[0]:.6f},{row[1]},{'?' if np.isnan(row[2]) else f'{row[2]:.6f}'},"
                     f"{row[3]}")
    Path(path).write_text("\n".join(lines) + "\n")
    return path


def write_csv(path, n=200, seed=1):
    """A regression CSV with a text column."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, size=n)
    town = rng.choice(["north", "south"], size=n)
    y = x ** 2 + (town == "north") + 0.1 * rng.normal(size=n)
    pd.DataFrame({"x": x, "town": town, "price": y}).to_csv(path, index=False)
    return path


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def api_split(path, target, task, seed, one_hot_=False):
    X, y = load(path, target=target)
    if one_hot_:
        X = one_hot(X)
    if task == "classification":
        y = y.cat.remove_unused_categories()
    train, test = split_indices(y, task, 1, 0, seed)
    return X.iloc[train], X.iloc[test], y.iloc[train], y.iloc[test]


# ---- train: metrics and equality with the API ------------------------------------------------
def test_train_arff_matches_python_api(tmp_path, capsys):
    data = write_arff(tmp_path / "d.arff")
    model_path = tmp_path / "m.json"
    code, out, _ = run_cli(capsys, "train", data, "--n-estimators", 30, "--max-leaf-nodes", 5,
                           "--subsample", 0.8, "--seed", 3, "--save", model_path,
                           "--format", "json")
    assert code == 0
    report = json.loads(out)
    assert report["task"] == "classification"
    assert report["n_classes"] == 3
    assert report["n_train"] + report["n_test"] == 240
    X_train, X_test, y_train, y_test = api_split(data, None, "classification", 3)
    api = TreeBoostClassifier(n_estimators=30, max_leaf_nodes=5, subsample=0.8,
                              random_state=3).fit(X_train, np.asarray(y_train))
    cli = load_model(model_path)
    np.testing.assert_array_equal(cli.predict_proba(X_test), api.predict_proba(X_test))
    # the printed accuracy is the API's, on the same 20 %
    assert report["accuracy"] == pytest.approx(np.mean(api.predict(X_test) == y_test),
                                               abs=0)
    assert set(report) >= {"log_loss", "f1_macro", "fit_seconds"}


def test_train_csv_regression_text_output(tmp_path, capsys):
    data = write_csv(tmp_path / "r.csv")
    code, out, _ = run_cli(capsys, "train", data, "--target", "price", "--n-estimators", 40,
                           "--learning-rate", 0.2, "--save", tmp_path / "m.json")
    assert code == 0
    for name in ("rmse", "mae", "r2", "fit time", "80/20"):
        assert name in out
    X_train, X_test, y_train, y_test = api_split(data, "price", "regression", 0)
    api = TreeBoostRegressor(n_estimators=40, learning_rate=0.2, random_state=0)
    api.fit(X_train, y_train)
    rmse = float(out.split("rmse")[1].split()[0])
    expected = np.sqrt(np.mean((api.predict(X_test) - y_test.to_numpy()) ** 2))
    assert rmse == pytest.approx(expected, rel=1e-5)  # printed with 6 significant digits
    np.testing.assert_array_equal(load_model(tmp_path / "m.json").predict(X_test),
                                  api.predict(X_test))


def test_predict_writes_api_predictions_one_hot(tmp_path, capsys):
    data = write_arff(tmp_path / "d.arff")
    model_path, out_path = tmp_path / "m.json", tmp_path / "pred.csv"
    assert run_cli(capsys, "train", data, "--one-hot", "--n-estimators", 20,
                   "--save", model_path)[0] == 0
    code, _, err = run_cli(capsys, "predict", model_path, data, "--out", out_path, "--proba")
    assert code == 0
    assert "240 predictions" in err
    written = pd.read_csv(out_path)
    X, y = load(data)
    api_train, _, y_train, _ = api_split(data, None, "classification", 0, one_hot_=True)
    api = TreeBoostClassifier(n_estimators=20, random_state=0).fit(api_train,
                                                                   np.asarray(y_train))
    np.testing.assert_array_equal(written["prediction"], api.predict(one_hot(X)))
    # %.17g round-trips float64 exactly
    np.testing.assert_array_equal(written[["proba_hi", "proba_lo", "proba_mid"]].to_numpy(),
                                  api.predict_proba(one_hot(X)))
    # an existing file is kept unless --force
    code, _, err = run_cli(capsys, "predict", model_path, data, "--out", out_path)
    assert code == 1
    assert "--force" in err
    assert run_cli(capsys, "predict", model_path, data, "--out", out_path, "--force")[0] == 0


def test_console_entry_point_runs(tmp_path):
    data = write_csv(tmp_path / "r.csv")
    done = subprocess.run([sys.executable, "-m", "treeboost", "train", str(data), "--target",
                           "price", "--n-estimators", "5", "--format", "json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["task"] == "regression"


# ---- bad input: one clear line, exit status 1 (or 2 for argparse usage errors) ---------------
@pytest.mark.parametrize(("argv", "status", "message"), [
    (["train", "{tmp}/missing.arff"], 1, "no such file"),
    (["train", "{arff}", "--target", "nope"], 1, "'nope' is not a column"),
    (["train", "{csv}"], 1, "no target given"),
    (["train", "{arff}", "--learning-rate", "-1"], 2, "learning_rate=-1.0 must be"),
    (["train", "{arff}", "--max-leaf-nodes", "2.5"], 2, "must be an integer"),
    (["train", "{arff}", "--alpha", "0.5"], 1, "applies to regression only"),
    (["train", "{tmp}/notes.txt"], 1, "unknown file type"),
    (["predict", "{tmp}/missing.json", "{arff}"], 1, "missing.json"),
    (["predict", "{model}", "{csv}"], 1, "lacks"),
    (["study", "{arff}", "--out", "{tmp}/s", "--grid", "learning_rate"], 1, "NAME=V1,V2"),
    (["study", "{arff}", "--out", "{tmp}/s", "--grid", "leaves=2,3"], 1, "unknown parameter"),
    (["study", "{arff}", "--out", "{tmp}/s", "--grid", "subsample=0.5,2"], 1,
     "subsample=2.0 must be"),
    (["study", "{tmp}/nothing", "--out", "{tmp}/s"], 1, "no such file or folder"),
    (["report", "{tmp}/empty"], 1, "no study.sqlite"),
])
def test_bad_input_gives_clear_error(tmp_path, capsys, argv, status, message):
    arff = write_arff(tmp_path / "d.arff", n=60)
    csv = write_csv(tmp_path / "r.csv", n=60)
    (tmp_path / "notes.txt").write_text("x")
    model = tmp_path / "m.json"
    TreeBoostClassifier(n_estimators=2).fit(*load(arff)).save_model(model)
    names = {"tmp": tmp_path, "arff": arff, "csv": csv, "model": model}
    argv = [a.format(**names) for a in argv]
    if status == 2:
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2
        err = capsys.readouterr().err
    else:
        code, _, err = run_cli(capsys, *argv)
        assert code == status
        assert "Traceback" not in err
    assert message in err


def test_save_refuses_to_overwrite(tmp_path, capsys):
    data = write_arff(tmp_path / "d.arff", n=60)
    (tmp_path / "m.json").write_text("keep me")
    code, _, err = run_cli(capsys, "train", data, "--save", tmp_path / "m.json")
    assert code == 1
    assert "--force" in err
    assert (tmp_path / "m.json").read_text() == "keep me"


# ---- real files (acceptance 1) ---------------------------------------------------------------
@needs_shared
@pytest.mark.parametrize(("file", "target"), [("breast-cancer.arff", None),
                                              ("credit_data.csv", "Status")])
def test_train_shared_dataset_matches_api(tmp_path, capsys, file, target):
    path = SHARED_DATASETS / file
    argv = ["train", path, "--n-estimators", 25, "--save", tmp_path / "m.json"]
    code, out, _ = run_cli(capsys, *argv, *(["--target", target] if target else []))
    assert code == 0
    for name in ("accuracy", "log_loss", "auc", "fit time"):
        assert name in out
    X_train, X_test, y_train, y_test = api_split(path, target, "classification", 0)
    api = TreeBoostClassifier(n_estimators=25, random_state=0).fit(X_train,
                                                                   np.asarray(y_train))
    np.testing.assert_array_equal(load_model(tmp_path / "m.json").predict_proba(X_test),
                                  api.predict_proba(X_test))
    accuracy = float(out.split("accuracy")[1].split()[0])
    assert accuracy == pytest.approx(np.mean(api.predict(X_test) == np.asarray(y_test)),
                                     abs=1e-6)  # printed with 6 significant digits
