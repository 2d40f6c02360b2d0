"""Tests of treeboost.datasets: ARFF/CSV loading, target selection, one_hot, and errors.

The real-data test walks ../shared/datasets/MANIFEST.tsv (skipped when that folder is
absent); the others use the tiny fixtures in tests/data.
"""

import csv
import gzip
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from treeboost.datasets import categorical_mask, load, one_hot
from treeboost.exceptions import DataError

DATA = Path(__file__).resolve().parent / "data"
SHARED_DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def _manifest_rows():
    manifest = SHARED_DATASETS / "MANIFEST.tsv"
    if not manifest.is_file():
        return [pytest.param(None, id="no-shared-datasets")]
    with manifest.open(newline="", encoding="utf-8") as f:
        return [pytest.param(row, id=row["name"]) for row in csv.DictReader(f, delimiter="\t")]


@pytest.mark.parametrize("row", _manifest_rows())
def test_manifest_dataset_loads(row):
    if row is None:
        pytest.skip(f"{SHARED_DATASETS} not found")
    X, y = load(SHARED_DATASETS / row["file"], target=row["target"])
    assert X.shape == (int(row["n_rows"]), int(row["n_features"]))
    assert len(y) == len(X)
    assert y.name == row["target"]
    assert categorical_mask(X).sum() == int(row["n_categorical"])
    assert bool(X.isna().to_numpy().any()) == (row["has_missing"] == "true")
    assert not y.isna().any()
    for name in X.columns[~categorical_mask(X)]:
        assert X[name].dtype == np.float64
    if row["task"] == "regression":
        assert y.dtype == np.float64
    else:
        assert y.nunique() == int(row["n_classes"])
        assert (row["task"] == "binary") == (int(row["n_classes"]) == 2)


def _quirks_expected():
    """The frame tests/data/quirks.arff holds, written out by hand."""
    return pd.DataFrame({
        "sepal length": [5.1, 4.9, np.nan],
        "petal width": [0.2, np.nan, 1.5],
        "rating": [3.0, 10.0, 1.0],
        "legs": [4.0, 0.0, 2.0],
        # '?' quoted is a declared value, not a missing one.
        "colour name": pd.Categorical(["light blue", "red", "?"],
                                      categories=["light blue", "red", "dark green", "?"]),
        "note": pd.Categorical(["hello world", "it's", "tab\there"]),
        "when": [1577836800.0, np.nan, 86400.0],  # 2020-01-01 and 1970-01-02, UTC
        "class": pd.Categorical(["yes", "no", "yes"], categories=["yes", "no"]),
    })


def _assert_loaded(path, expected, target=None):
    X, y = load(path, target=target)
    target = expected.columns[-1] if target is None else target
    pd.testing.assert_frame_equal(X, expected.drop(columns=[target]))
    pd.testing.assert_series_equal(y, expected[target])


def test_arff_quirks():
    # Tabs, quoted names with spaces, integer [lo,hi] ranges, comments everywhere, quoted
    # values with spaces and escapes, ? missing, string and date attributes.
    _assert_loaded(DATA / "quirks.arff", _quirks_expected())


def test_arff_gzip_and_crlf(tmp_path):
    text = (DATA / "quirks.arff").read_bytes().replace(b"\n", b"\r\n")
    path = tmp_path / "quirks.arff.gz"
    with gzip.open(path, "wb") as f:
        f.write(text)
    _assert_loaded(path, _quirks_expected())


def test_arff_uppercase_suffix(tmp_path):
    path = tmp_path / "QUIRKS.ARFF"
    shutil.copy(DATA / "quirks.arff", path)
    _assert_loaded(path, _quirks_expected())


def test_arff_target_in_the_middle():
    expected = _quirks_expected()
    X, y = load(DATA / "quirks.arff", target="colour name")
    assert list(X.columns) == [c for c in expected.columns if c != "colour name"]
    pd.testing.assert_series_equal(y, expected["colour name"])


def test_arff_sparse():
    # Omitted values: 0 for numeric, the first declared label for nominal; a dense row
    # may follow sparse ones, as WEKA allows.
    expected = pd.DataFrame({
        "a": [1.5, 0.0, 0.0, 0.0],
        "b": [0.0, np.nan, 0.0, 2.0],
        "c": pd.Categorical(["y", "x", "x", "z"], categories=["x", "y", "z"]),
        "d": [0.0, 7.0, 0.0, 3.0],
        "cls": pd.Categorical(["q", "p", "p", "p"], categories=["p", "q"]),
    })
    _assert_loaded(DATA / "sparse.arff", expected)


def test_arff_default_date_format_and_latin1(tmp_path):
    path = tmp_path / "dates.arff"
    path.write_bytes("@relation d\n@attribute t date\n@attribute 'caf\xe9' {s\xfcr, x}\n"
                     "@data\n1970-01-01T00:01:00, s\xfcr\n".encode("latin-1"))
    X, y = load(path)
    assert X["t"].tolist() == [60.0]
    assert y.tolist() == ["s\xfcr"]
    assert y.name == "caf\xe9"


def test_csv_types_and_missing():
    # Only the empty field is missing in a non-numeric column ("None" is a level, as in
    # ames_housing); in a numeric column NA is missing too.
    expected = pd.DataFrame({
        "size": [1.5, 2.0, np.nan, 3.0],
        "colour": pd.Categorical(["red", "dark blue", "red", np.nan]),
        "weight": [10.0, np.nan, 12.0, np.nan],
        "kind": pd.Categorical(["None", "Shed", "None", "Gar2"]),
        "label": pd.Categorical(["yes", "no", "yes", "no"]),
    })
    _assert_loaded(DATA / "tiny.csv", expected, target="label")
    X, y = load(DATA / "tiny.csv", target="size")
    assert y.dtype == np.float64
    assert categorical_mask(X).tolist() == [True, False, True, True]


def test_csv_gzip(tmp_path):
    path = tmp_path / "tiny.csv.gz"
    path.write_bytes(gzip.compress((DATA / "tiny.csv").read_bytes()))
    X, y = load(path, target="label")
    assert X.shape == (4, 4)
    assert y.tolist() == ["yes", "no", "yes", "no"]


def test_csv_needs_a_target():
    with pytest.raises(DataError, match="no target given.*'size', 'colour'"):
        load(DATA / "tiny.csv")


def test_unknown_target_lists_columns():
    with pytest.raises(DataError, match="target 'colour' is not a column.*'colour name'"):
        load(DATA / "quirks.arff", target="colour")


def test_unknown_suffix_and_missing_file(tmp_path):
    with pytest.raises(DataError, match="unknown file type"):
        load(tmp_path / "data.xlsx")
    with pytest.raises(DataError, match="no such file"):
        load(tmp_path / "absent.arff")


@pytest.mark.parametrize(("name", "line", "what"), [
    ("bad_type.arff", 4, "unknown attribute type 'numerical'"),
    ("bad_brace.arff", 3, "'}' expected"),
    ("bad_duplicate.arff", 4, "attribute 'a' is declared twice"),
    ("no_data.arff", 3, "without an @data line"),
    ("bad_quote.arff", 7, "unterminated quote"),
    ("bad_count.arff", 7, "expected 3 values, found 2"),
    ("bad_nominal.arff", 8, "'blue' is not one of the values declared for 'colour'"),
    ("bad_number.arff", 7, "'3..5' is not a number"),
    ("bad_sparse.arff", 7, "sparse index 3"),
    ("bad_row.csv", 5, "expected 3 fields"),
])
def test_malformed_file_names_the_line(name, line, what):
    with pytest.raises(DataError, match=f"{name}: line {line}: .*{what}"):
        load(DATA / name, target="label" if name.endswith(".csv") else None)


@pytest.mark.parametrize(("data_line", "what"), [
    ("1,x,{2}", "instance weights"),
    ("{0 1, 1 x}, {2}", "instance weights"),
    ("{0 1, 1}", "'index value' pairs"),
    ("{1 x, 0 1}", "out of order"),
    ("{zero 1}", "not an integer"),
])
def test_malformed_data_rows(tmp_path, data_line, what):
    path = tmp_path / "bad.arff"
    path.write_text(f"@relation r\n@attribute a real\n@attribute c {{x,y}}\n@data\n{data_line}\n")
    with pytest.raises(DataError, match=f"line 5: .*{what}"):
        load(path)


@pytest.mark.parametrize(("declaration", "what"), [
    ("@attribute a relational", "relational attributes"),
    ("@attribute a real extra", "unexpected text 'extra'"),
    ("@attribute a {x, y} z", "unexpected text after the nominal values"),
    ("@attribute a {x, y, x}", "nominal value 'x' of 'a' is declared twice"),
    ("@attribute a date 'yyyy-QQ'", "date format letter 'Q'"),
    ("@attribute a", "needs a name and a type"),
    ("@attributes a real", "expected @relation, @attribute or @data"),
])
def test_malformed_declarations(tmp_path, declaration, what):
    path = tmp_path / "bad.arff"
    path.write_text(f"@relation r\n{declaration}\n@attribute c {{x,y}}\n@data\n")
    with pytest.raises(DataError, match=f"line 2: .*{what}"):
        load(path)


def test_date_not_in_format(tmp_path):
    path = tmp_path / "bad.arff"
    path.write_text("@relation r\n@attribute t date 'dd.MM.yyyy'\n@attribute c {x}\n@data\n"
                    "01.02.2003,x\n2003-02-01,x\n")
    with pytest.raises(DataError, match="line 6: '2003-02-01' is not a date"):
        load(path)


def test_one_hot():
    X = pd.DataFrame({
        "colour": pd.Categorical(["red", np.nan, "blue", "red"],
                                 categories=["red", "blue", "green"]),
        "size": [1.0, 2.0, np.nan, 4.0],
        "shape": pd.Categorical(["o", "x", "x", "o"]),
    }, index=[10, 11, 12, 13])
    expected = pd.DataFrame({
        "colour=red": [1.0, 0.0, 0.0, 1.0],
        "colour=blue": [0.0, 0.0, 1.0, 0.0],  # row 11 (missing) is all zeros
        "colour=green": [0.0, 0.0, 0.0, 0.0],  # declared but unused: still a column
        "size": [1.0, 2.0, np.nan, 4.0],
        "shape=o": [1.0, 0.0, 0.0, 1.0],
        "shape=x": [0.0, 1.0, 1.0, 0.0],
    }, index=[10, 11, 12, 13])
    pd.testing.assert_frame_equal(one_hot(X), expected)


def test_one_hot_name_clash():
    X = pd.DataFrame({"a": pd.Categorical(["x"]), "a=x": [1.0]})
    with pytest.raises(DataError, match="'a=x' is already taken"):
        one_hot(X)
