"""Bad input to the command line: one line on stderr, a non-zero exit, no traceback.

Issue 11, item 2: ``treeboost train --task regression`` on a text target, rows without a
target, ``treeboost report`` on a missing, empty, damaged or foreign ``study.sqlite``,
and their siblings (``predict`` with a missing or non-JSON model, ``--save`` into a
missing folder). Most cases call ``main`` in-process; one runs the real console command
to check what a user sees.
"""

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from treeboost.cli import main
from treeboost.exceptions import DataError
from treeboost.study.store import Store


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def one_error_line(err: str, *names) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for name in names:
        assert name in lines[0], (name, lines[0])
    return lines[0]


def write_csv(path, target_values, seed=0):
    rng = np.random.default_rng(seed)
    rows = ["a,b,t"] + [f"{rng.normal():.6f},{rng.normal():.6f},{t}" for t in target_values]
    Path(path).write_text("\n".join(rows) + "\n")
    return path


# ---- train -----------------------------------------------------------------------------
def test_regression_on_a_text_target_names_file_and_column(tmp_path, capsys):
    data = write_csv(tmp_path / "d.csv", ["x", "y"] * 40)
    code, out, err = run_cli(capsys, "train", data, "--target", "t", "--task", "regression")
    assert code == 1
    assert out == ""
    line = one_error_line(err, "d.csv", "target column 't' holds text", "--task")
    assert line.startswith("treeboost train: error:")


def test_rows_without_target_are_left_out_with_one_warning(tmp_path, capsys):
    values = [f"{v:.3f}" for v in np.linspace(0, 1, 60)]
    values[3] = values[7] = ""
    data = write_csv(tmp_path / "d.csv", values)
    code, out, err = run_cli(capsys, "train", data, "--target", "t", "--format", "json",
                             "--n-estimators", "3")
    assert code == 0
    line = one_error_line(err, "d.csv", "2 of 60 rows have no value in target column 't'",
                          "data rows 4, 8")
    assert line.startswith("treeboost train: warning:")
    assert json.loads(out)["n_rows"] == 58


def test_target_empty_everywhere_is_an_error(tmp_path, capsys):
    data = write_csv(tmp_path / "d.csv", [""] * 30)
    code, _, err = run_cli(capsys, "train", data, "--target", "t")
    assert code == 1
    one_error_line(err, "d.csv", "target column 't' is empty in every row")


def test_save_into_a_missing_folder_fails_before_fitting(tmp_path, capsys):
    data = write_csv(tmp_path / "d.csv", ["x", "y"] * 40)
    code, out, err = run_cli(capsys, "train", data, "--target", "t", "--save",
                             tmp_path / "nowhere" / "m.json")
    assert code == 1
    assert out == ""  # no metrics printed: the fit never ran
    one_error_line(err, "nowhere", "does not exist")


@pytest.mark.parametrize(("content", "message"), [
    (None, "No such file"), ("hello", "not valid JSON"), ('{"format": "other"}', "m.json")])
def test_predict_with_a_bad_model_file_names_it(tmp_path, capsys, content, message):
    data = write_csv(tmp_path / "d.csv", ["x", "y"] * 40)
    model = tmp_path / "m.json"
    if content is not None:
        model.write_text(content)
    code, _, err = run_cli(capsys, "predict", model, data)
    assert code == 1
    one_error_line(err, "m.json", message)


# ---- report ----------------------------------------------------------------------------
def _study_file(folder: Path) -> Path:
    """A study database as ``treeboost study`` leaves it, with a few results."""
    store = Store(folder)
    store.check_settings({"folds": 1, "grid": {"learning_rate": [0.1]}, "one_hot": False,
                          "search": "grid", "seed": 0, "trials": None})
    run = store.start_run(["study"])
    for i in range(50):
        store.add_dataset({"name": f"d{i}", "source": f"d{i}.csv", "target": "t",
                           "task": "regression", "n_rows": 10, "n_features": 2,
                           "n_classes": 0})
    store.add_results([(f"d{i}", '{"learning_rate": 0.1}', 0, 0.5, 0.1) for i in range(50)],
                      run)
    store.close()
    return folder / "study.sqlite"


def _damage(kind: str, folder: Path) -> None:
    folder.mkdir(exist_ok=True)
    path = folder / "study.sqlite"
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "garbage":
        path.write_bytes(np.random.default_rng(0).bytes(4096))
    elif kind == "truncated":
        data = _study_file(folder).read_bytes()
        path.write_bytes(data[: len(data) // 2])
    elif kind == "foreign":
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE customers (name TEXT)")
    elif kind == "no settings":
        Store(folder).close()
    elif kind == "other settings":
        store = Store(folder)
        store.check_settings({"grid": [1, 2]})
        store.close()


@pytest.mark.parametrize(("kind", "message"), [
    ("missing", "no study.sqlite here"), ("empty", "empty file"),
    ("garbage", "not a readable SQLite database"),
    ("truncated", "not a readable SQLite database"),
    ("foreign", "not a treeboost study database"),
    ("no settings", "holds no readable study settings"),
    ("other settings", "holds no readable study settings")])
def test_report_on_a_bad_study_file_is_one_line(tmp_path, capsys, kind, message):
    folder = tmp_path / "s"
    if kind != "missing":
        _damage(kind, folder)
    code, out, err = run_cli(capsys, "report", folder)
    assert code == 1
    assert out == ""
    one_error_line(err, str(folder), message)
    assert not (folder / "report.md").exists()


def test_report_leaves_a_foreign_database_unchanged(tmp_path, capsys):
    folder = tmp_path / "s"
    _damage("foreign", folder)
    before = (folder / "study.sqlite").read_bytes()
    assert run_cli(capsys, "report", folder)[0] == 1
    assert (folder / "study.sqlite").read_bytes() == before


def test_study_refuses_a_foreign_or_damaged_database(tmp_path):
    for kind in ("foreign", "garbage"):
        folder = tmp_path / kind
        _damage(kind, folder)
        before = (folder / "study.sqlite").read_bytes()
        with pytest.raises(DataError, match="study.sqlite: not a"):
            Store(folder)
        assert (folder / "study.sqlite").read_bytes() == before


def test_report_of_a_sound_study_still_works(tmp_path, capsys):
    _study_file(tmp_path)
    code, out, err = run_cli(capsys, "report", tmp_path)
    assert code == 0, err
    assert (tmp_path / "report.md").is_file()
    assert "report:" in out


def test_console_command_prints_one_line_and_exits_non_zero(tmp_path):
    _damage("garbage", tmp_path)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(Path(__file__).resolve().parents[1] / "src"), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "treeboost", "report", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 1
    assert done.stdout == ""
    one_error_line(done.stderr, "study.sqlite", "not a readable SQLite database")


def test_predict_reads_numeric_labels_of_a_categorical_column_as_labels(tmp_path, capsys):
    # "c" is categorical in training (it holds "x"); a file with only its numeric labels
    # must predict like the same rows of the training file, not as unseen categories
    rng = np.random.default_rng(3)
    c = rng.choice(["1", "2", "x"], 150)
    t = np.where(c == "1", 1.0, np.where(c == "2", 5.0, 9.0)) + 0.1 * rng.normal(size=150)
    lines = ["c,b,t"] + [f"{ci},{bi:.4f},{ti:.4f}" for ci, bi, ti in
                         zip(c, rng.normal(size=150), t, strict=True)]
    (tmp_path / "train.csv").write_text("\n".join(lines) + "\n")
    numeric_rows = [0] + [i + 1 for i in range(150) if c[i] != "x"]
    (tmp_path / "numbers.csv").write_text("\n".join(lines[i] for i in numeric_rows) + "\n")
    model = tmp_path / "m.json"
    assert run_cli(capsys, "train", tmp_path / "train.csv", "--target", "t", "--save", model,
                   "--n-estimators", "20", "--min-samples-leaf", "5")[0] == 0
    code, all_rows, err = run_cli(capsys, "predict", model, tmp_path / "train.csv")
    assert code == 0, err
    code, numbers, err = run_cli(capsys, "predict", model, tmp_path / "numbers.csv")
    assert code == 0, err
    expected = [all_rows.splitlines()[i] for i in numeric_rows]
    assert numbers.splitlines() == expected


@pytest.mark.parametrize("command", ["train", "study"])
@pytest.mark.parametrize("value", ["-1", "4294967296"])
def test_out_of_range_seed_is_a_usage_error(tmp_path, capsys, command, value):
    data = write_csv(tmp_path / "d.csv", ["x", "y"] * 40)
    argv = [command, str(data), "--target", "t", "--seed", value]
    if command == "study":
        argv += ["--out", str(tmp_path / "s")]
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert f"argument --seed: {value} must be in [0, 2**32 - 1]" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()  # refused before anything was created
