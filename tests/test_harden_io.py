"""Issue 33, the files and the command line: data read alike, missing targets, clear
errors, no leftovers.

- svmlight files that must agree (a training file and its test file, a model and the
  file it predicts) share one index base: ``read_svmlight_files`` infers it once over
  all of them, ``treeboost train`` records it in the model file and ``treeboost
  predict`` reads with it; a file whose indices contradict the base is refused (index 0
  read one-based) or warned about (read zero-based, yet it looks one-based).
- A CSV target written ``NA`` (or any string pandas reads as missing) is missing, like
  an empty field: the row is left out with the usual warning, not made a class.
- A header-only CSV and ``treeboost study --jobs 0`` are one clear error each.
- ``save_model`` killed mid-write leaves a temporary file; the next save to the same
  place removes it, but never the temporary file of a save still in progress.
"""

import io
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from treeboost import TreeBoostRegressor, load_model
from treeboost.cli import main
from treeboost.datasets import load, read_svmlight, read_svmlight_files
from treeboost.exceptions import DataError
from treeboost.serialization import _temp_name

SRC = Path(__file__).resolve().parents[1] / "src"


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def write(path, text):
    Path(path).write_text(text)
    return path


# ---- svmlight: one index base for files that must agree ----------------------------------
@pytest.fixture
def zero_pair(tmp_path):
    train = write(tmp_path / "train.svm", "1 0:1 2:3\n0 1:2\n")
    test = write(tmp_path / "test.svm", "1 1:5 2:1\n0 2:7\n")
    return train, test


def test_read_svmlight_files_infers_zero_based_once(zero_pair):
    train, test = zero_pair
    (X, y, group), (X_test, y_test, group_test) = read_svmlight_files([train, test])[0]
    assert read_svmlight_files([train, test])[1] is True
    np.testing.assert_array_equal(X.toarray(), [[1, 0, 3], [0, 2, 0]])
    np.testing.assert_array_equal(X_test.toarray(), [[0, 5, 1], [0, 0, 7]])
    np.testing.assert_array_equal(y_test, [1, 0])
    assert group is None
    assert group_test is None
    # read alone, the test file's own evidence says one-based: its columns move
    alone = read_svmlight(test)[0].toarray()
    assert alone.tolist() == [[5, 1], [0, 7]]


def test_read_svmlight_files_one_based_when_no_file_uses_zero(tmp_path):
    a = write(tmp_path / "a.svm", "1 1:1 3:3\n")
    b = write(tmp_path / "b.svm", "0 2:2\n")
    (Xa, _, _), (Xb, _, _) = files = read_svmlight_files([a, b])[0]
    assert read_svmlight_files([a, b])[1] is False
    np.testing.assert_array_equal(Xa.toarray(), [[1, 0, 3]])
    np.testing.assert_array_equal(Xb.toarray(), [[0, 2, 0]])  # as wide as the widest
    assert len(files) == 2
    with pytest.warns(UserWarning, match="fits either index base"):  # 1..3 < 5
        wide = read_svmlight_files([a, b], n_features=5)[0]
    assert [X.shape for X, _, _ in wide] == [(1, 5), (1, 5)]


def test_read_svmlight_files_refuses_index_0_read_one_based(zero_pair):
    train, test = zero_pair
    with pytest.raises(DataError, match=r"train\.svm: line 1: feature index 0.*one-based"):
        read_svmlight_files([test, train], zero_based=False)
    with pytest.raises(ValueError, match="zero_based must be"):
        read_svmlight_files([train], zero_based="yes")
    with pytest.raises(ValueError, match="paths"):
        read_svmlight_files([])


def test_a_file_that_looks_one_based_read_zero_based_is_named(tmp_path):
    train = write(tmp_path / "train.svm", "1 0:1 2:3\n0 1:2\n")  # features 0..2
    shifted = write(tmp_path / "test.svm", "1 1:5 3:1\n")  # 1..3: written one-based
    with pytest.warns(UserWarning, match=r"test\.svm never uses feature index 0.*"
                                         r"largest index 3.*train\.svm.*one index base"):
        files, zero_based = read_svmlight_files([train, shifted])
    assert zero_based is True
    assert files[1][0].shape == (1, 4)
    # a zero-based file that merely lacks feature 0 stays within the others: no warning
    subset = write(tmp_path / "subset.svm", "1 1:5 2:1\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read_svmlight_files([train, subset])


def test_n_features_with_auto_warns_when_the_file_cannot_tell_its_base(tmp_path):
    """n_features says the file is to match another; "auto" then decides from this file
    alone, which cannot tell when it lacks index 0 and stays below n_features."""
    lacking = write(tmp_path / "lacking.svm", "1 1:5 2:1\n")
    with pytest.warns(UserWarning, match=r"lacking\.svm: never uses feature index 0.*"
                                         r"n_features=4.*read one-based.*zero_based"):
        X = read_svmlight(lacking, n_features=4)[0]
    np.testing.assert_array_equal(X.toarray(), [[5, 1, 0, 0]])  # the documented choice
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read_svmlight(lacking, n_features=4, zero_based=True)  # the caller chose
        read_svmlight(lacking, n_features=4, zero_based=False)
        read_svmlight(lacking)  # nothing to match
        read_svmlight(write(tmp_path / "zero.svm", "1 0:5 2:1\n"), n_features=4)
        # index 3 with n_features=3 can only be one-based
        read_svmlight(write(tmp_path / "full.svm", "1 1:5 3:1\n"), n_features=3)
    with pytest.warns(UserWarning, match=r"lacking\.svm: never uses feature index 0"):
        read_svmlight_files([lacking], n_features=4)


def test_beyond_n_features_hints_at_a_one_based_file(tmp_path):
    path = write(tmp_path / "p.svm", "1 1:5 3:1\n")
    with pytest.raises(DataError, match=r"p\.svm: line 1: feature index 3 is beyond "
                                        r"n_features=3.*never uses index 0.*one-based"):
        read_svmlight(path, n_features=3, zero_based=True)


def ranking_lines(X, y, sizes, zero_based):
    qids = np.repeat(np.arange(len(sizes)), sizes)
    shift = 0 if zero_based else 1
    return "".join(f"{label:g} qid:{q} " + " ".join(f"{j + shift}:{v:.6f}"
                                                      for j, v in enumerate(row) if v) + "\n"
                   for row, label, q in zip(X, y, qids, strict=True))


def ranking_data(n_queries=30, n_features=5, seed=0):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(4, 10, size=n_queries)
    X = rng.normal(size=(sizes.sum(), n_features))
    X[rng.random(X.shape) < 0.3] = 0.0
    y = np.digitize(X[:, 0] + X[:, 1] - X[:, 2], [-0.5, 0.5, 1.2]).astype(float)
    return X, y, sizes


def test_predict_reads_svmlight_with_the_base_of_the_training_file(tmp_path, capsys):
    """A model trained on a zero-based file, asked about rows that never use feature 0:
    read one-based by the file's own evidence, every feature would be its neighbour."""
    X, y, sizes = ranking_data()
    train = write(tmp_path / "train.svm", ranking_lines(X, y, sizes, zero_based=True))
    model_path = tmp_path / "m.json"
    code, _, err = run_cli(capsys, "train", train, "--n-estimators", 10,
                           "--min-samples-leaf", 3, "--save", model_path)
    assert code == 0, err
    assert json.loads(model_path.read_text())["svmlight_zero_based"] is True
    X_new = X[:40].copy()
    X_new[:, 0] = 0.0  # feature 0 absent from every row
    new = write(tmp_path / "new.svm", ranking_lines(X_new, y[:40], [40], zero_based=True))
    code, out, err = run_cli(capsys, "predict", model_path, new)
    assert code == 0, err
    model = load_model(model_path)
    expected = model.predict(X_new)
    shifted = model.predict(np.c_[X_new[:, 1:], np.zeros(40)])
    assert not np.array_equal(expected, shifted)  # the test can tell them apart
    np.testing.assert_array_equal(pd.read_csv(io.StringIO(out))["prediction"],
                                  expected)


def test_predict_refuses_index_0_for_a_one_based_model(tmp_path, capsys):
    X, y, sizes = ranking_data(seed=1)
    train = write(tmp_path / "train.svm", ranking_lines(X, y, sizes, zero_based=False))
    model_path = tmp_path / "m.json"
    code, _, err = run_cli(capsys, "train", train, "--n-estimators", 3, "--save", model_path)
    assert code == 0, err
    assert json.loads(model_path.read_text())["svmlight_zero_based"] is False
    new = write(tmp_path / "new.svm", "0 qid:1 0:1.5 2:3\n")
    code, out, err = run_cli(capsys, "predict", model_path, new)
    assert (code, out) == (1, "")
    assert "new.svm: line 1: feature index 0" in err
    assert "one-based" in err


def test_train_warns_about_a_test_file_in_the_other_base(tmp_path, capsys):
    X, y, sizes = ranking_data(seed=2)
    train = write(tmp_path / "train.svm", ranking_lines(X, y, sizes, zero_based=True))
    X_test = X[:30].copy()
    X_test[:, -1] = 1.0  # the last feature everywhere: one-based, its index is 5
    test = write(tmp_path / "test.svm", ranking_lines(X_test, y[:30], [30], zero_based=False))
    code, out, err = run_cli(capsys, "train", train, "--test", test, "--n-estimators", 3,
                             "--format", "json")
    assert code == 0, err
    assert "warning:" in err
    assert "test.svm never uses feature index 0" in err
    assert json.loads(out)["n_features"] == 6  # read zero-based, as the training file


def test_train_test_pair_read_zero_based_when_only_the_training_file_uses_0(tmp_path, capsys):
    X, y, sizes = ranking_data(seed=3)
    train = write(tmp_path / "train.svm", ranking_lines(X, y, sizes, zero_based=True))
    X_test = X[:30].copy()
    X_test[:, 0] = 0.0
    test = write(tmp_path / "test.svm", ranking_lines(X_test, y[:30], [30], zero_based=True))
    model_path = tmp_path / "m.json"
    code, out, err = run_cli(capsys, "train", train, "--test", test, "--n-estimators", 5,
                             "--format", "json", "--save", model_path)
    assert code == 0, err
    assert err == ""
    report = json.loads(out)
    model = load_model(model_path)
    assert model.n_features_in_ == report["n_features"] == 5
    scores = model.predict(X_test)
    from treeboost.metrics import ndcg_at_k
    assert report["ndcg@10"] == ndcg_at_k(y[:30], scores, np.array([0, 30]), 10)


# ---- CSV: a target written NA is missing ------------------------------------------------
NA_STRINGS = ["NA", "N/A", "n/a", "NaN", "nan", "null", "NULL", "<NA>", "None", "#N/A",
              "-NaN"]


def write_na_csv(path, n=60):
    rng = np.random.default_rng(0)
    labels = np.array(["yes", "no"])[(np.arange(n) % 2)]
    labels = labels.astype(object)
    for i, token in enumerate(NA_STRINGS):
        labels[3 + 4 * i] = token
    rows = ["a,b,c,t"] + [f"{rng.normal():.5f},{'#N/A' if i == 5 else rng.normal():},"
                          f"{'NA' if i == 6 else 'u'},{t}" for i, t in enumerate(labels)]
    return write(path, "\n".join(rows) + "\n")


def test_csv_target_na_strings_are_missing(tmp_path):
    path = write_na_csv(tmp_path / "d.csv")
    X, y = load(path, target="t")
    missing = [3 + 4 * i for i in range(len(NA_STRINGS))]
    assert np.flatnonzero(y.isna()).tolist() == missing
    assert set(y.dropna()) == {"yes", "no"}
    # features: in a numeric column every NA string is missing ...
    assert X["b"].dtype == np.float64
    assert np.flatnonzero(X["b"].isna()).tolist() == [5]
    # ... in a text column only the empty field: NA can be a level there ("None" is one
    # in ames_housing), as the datasets' convention says
    assert X["c"][6] == "NA"


def test_train_leaves_out_rows_whose_target_is_na(tmp_path, capsys):
    path = write_na_csv(tmp_path / "d.csv")
    code, out, err = run_cli(capsys, "train", path, "--target", "t", "--n-estimators", 3,
                             "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["n_classes"] == 2
    assert report["n_rows"] == 60 - len(NA_STRINGS)
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert "warning:" in lines[0]
    assert f"{len(NA_STRINGS)} of 60 rows have no value in target column 't'" in lines[0]


# ---- one clear error each ----------------------------------------------------------------
def test_header_only_csv_is_one_error_naming_the_file(tmp_path, capsys):
    path = write(tmp_path / "empty.csv", "a,b,t\n")
    with pytest.raises(DataError, match=r"empty\.csv: no data rows"):
        load(path, target="t")
    code, out, err = run_cli(capsys, "train", path, "--target", "t")
    assert (code, out) == (1, "")
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "empty.csv: no data rows" in lines[0]
    arff = write(tmp_path / "empty.arff", "@relation r\n@attribute a numeric\n"
                                          "@attribute t {x,y}\n@data\n")
    with pytest.raises(DataError, match=r"empty\.arff: no data rows"):
        load(arff)


def test_predict_on_a_header_only_csv_is_one_error(tmp_path, capsys):
    rows = ["a,b,t"] + [f"{i % 7},{i % 3},{'xy'[i % 2]}" for i in range(40)]
    data = write(tmp_path / "d.csv", "\n".join(rows) + "\n")
    model_path = tmp_path / "m.json"
    code, _, err = run_cli(capsys, "train", data, "--target", "t", "--n-estimators", 2,
                           "--save", model_path)
    assert code == 0, err
    assert "svmlight_zero_based" not in json.loads(model_path.read_text())  # CSV data
    code, out, err = run_cli(capsys, "predict", model_path,
                             write(tmp_path / "empty.csv", "a,b\n"))
    assert (code, out) == (1, "")
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "empty.csv: no data rows" in lines[0]


@pytest.mark.parametrize("value", ["0", "-0", "-100000", "two"])
def test_study_jobs_must_be_a_count_of_processes(tmp_path, capsys, value):
    with pytest.raises(SystemExit) as raised:
        main(["study", "--out", str(tmp_path / "s"), "--jobs", value])
    assert raised.value.code == 2
    err = capsys.readouterr().err
    assert "argument --jobs" in err
    assert "-1 for all cores" in err
    assert repr(value) in err
    assert "_jobs" not in err
    assert not (tmp_path / "s").exists()


# ---- save_model: no temporary files left behind -------------------------------------------
@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    return TreeBoostRegressor(n_estimators=5).fit(X, X[:, 0] + rng.normal(size=200)), X


def leftovers(folder):
    return sorted(p.name for p in Path(folder).iterdir() if p.name.endswith(".tmp"))


def test_a_save_killed_mid_write_leaves_nothing_after_the_next_save(tmp_path, model):
    est, X = model
    path = tmp_path / "m.json"
    child = ("import os, signal, sys; from treeboost.serialization import _write_atomic; "
             "_write_atomic(sys.argv[1], 'half a model', "
             "after_write=lambda: os.kill(os.getpid(), signal.SIGKILL))")
    env = dict(os.environ, PYTHONPATH=str(SRC))
    done = subprocess.run([sys.executable, "-c", child, str(path)], env=env, timeout=300,
                          capture_output=True, text=True)
    assert done.returncode == -9, done.stderr
    stale = leftovers(tmp_path)
    assert len(stale) == 1  # what a killed save leaves
    assert stale[0].startswith(".m.json.")
    assert not path.exists()
    est.save_model(path)
    assert leftovers(tmp_path) == []
    np.testing.assert_array_equal(load_model(path).predict(X), est.predict(X))


def test_only_stale_temporary_files_are_removed(tmp_path, model):
    est, _ = model
    path = tmp_path / "m.json"
    day_ago = time.time() - 86400
    alive = _temp_name("m.json", os.getpid())  # a save in progress in a live process
    old_alive = _temp_name("m.json", os.getppid())
    legacy_fresh, legacy_old = ".m.json.0123456789abcdef.tmp", ".m.json.fedcba9876543210.tmp"
    other = _temp_name("other.json", 2**22 + 12345)  # another model's: not this save's
    for name in (alive, old_alive, legacy_fresh, legacy_old, other):
        (tmp_path / name).write_text("partial")
    for name in (old_alive, legacy_old):
        os.utime(tmp_path / name, (day_ago, day_ago))
    est.save_model(path)
    assert leftovers(tmp_path) == sorted([alive, legacy_fresh, other])
