"""Target names of a model of several outputs: ``Booster.target_names`` in the model file.

A multi-output regressor fitted on a DataFrame y keeps its columns' names
(``target_names_``, ``Booster.target_names``, the model view's ``target_names``); the
model file writes them in an optional field that a round trip keeps, a file without it
(every file before it, and the frozen fixtures) loads with None, a bad one is refused by
name, and ``treeboost predict`` names its columns ``prediction_<name>`` after them.
"""

import hashlib
import io
import json

import numpy as np
import pandas as pd
import pytest

from frozen_models import MODELS
from treeboost import TreeBoostRegressor, load_model
from treeboost.booster import Booster
from treeboost.cli import main
from treeboost.exceptions import ModelFormatError
from treeboost.study.data import split_indices

PARAMS = {"n_estimators": 8, "max_leaf_nodes": 6, "random_state": 0}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(200, 3)), columns=["x0", "x1", "x2"])
    Y = pd.DataFrame({"price": X["x0"] + 0.1 * rng.normal(size=200),
                      "volume": X["x1"] - X["x2"]})
    return X, Y


def rewrite(path, change) -> None:
    """Apply ``change`` to the model file's document, with a valid checksum again."""
    doc = json.loads(path.read_text())
    doc.pop("checksum")
    change(doc)
    canonical = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    doc["checksum"] = hashlib.sha256(canonical).hexdigest()
    path.write_text(json.dumps(doc))


def test_dataframe_y_names_the_outputs_and_the_file_keeps_them(data, tmp_path):
    X, Y = data
    model = TreeBoostRegressor(**PARAMS).fit(X, Y)
    assert model.target_names_ == ["price", "volume"]
    assert model.booster_.target_names == ["price", "volume"]
    assert model.booster_.dump_model()["target_names"] == ["price", "volume"]
    # the names are metadata: the model is the array fit's, bit for bit
    plain = TreeBoostRegressor(**PARAMS).fit(X, Y.to_numpy())
    assert plain.target_names_ is None
    assert np.array_equal(model.predict(X), plain.predict(X))

    path = tmp_path / "m.json"
    model.save_model(path)
    assert json.loads(path.read_text())["target_names"] == ["price", "volume"]
    loaded = load_model(path)
    assert loaded.target_names_ == ["price", "volume"]
    assert np.array_equal(loaded.predict(X), model.predict(X))
    booster = Booster.load_model(path)  # the engine's reader too
    assert booster.target_names == ["price", "volume"]
    # a Booster saved alone writes them as well
    booster.save_model(tmp_path / "b.json")
    assert Booster.load_model(tmp_path / "b.json").target_names == ["price", "volume"]


def test_models_without_names_write_no_field(data, tmp_path):
    X, Y = data
    for y in (Y.to_numpy(), Y[["price"]], Y["price"]):  # an array; one output
        model = TreeBoostRegressor(**PARAMS).fit(X, y)
        assert model.target_names_ is None
        model.save_model(tmp_path / "m.json")
        # absent, not null: such files are the bytes they were before the field
        assert "target_names" not in json.loads((tmp_path / "m.json").read_text())


def test_a_file_without_the_field_loads_with_none(data, tmp_path):
    X, Y = data
    path = tmp_path / "m.json"
    model = TreeBoostRegressor(**PARAMS).fit(X, Y)
    model.save_model(path)
    rewrite(path, lambda doc: doc.pop("target_names"))  # as written before the field
    old = load_model(path)
    assert old.target_names_ is None
    assert np.array_equal(old.predict(X), model.predict(X))
    # and the frozen files of format 1, none of which has it
    frozen = sorted(MODELS.glob("reg_*.json"))
    assert frozen
    for name in frozen:
        assert "target_names" not in json.loads(name.read_text())
        assert load_model(name).booster_.target_names is None


@pytest.mark.parametrize("value", [["price"], ["price", 3], "price,volume"])
def test_a_bad_field_is_refused_by_name(data, tmp_path, value):
    X, Y = data
    path = tmp_path / "m.json"
    TreeBoostRegressor(**PARAMS).fit(X, Y).save_model(path)
    rewrite(path, lambda doc: doc.update(target_names=value))
    with pytest.raises(ModelFormatError, match="target_names must be null or a list of 2"):
        load_model(path)


def test_predict_names_its_columns_after_the_targets(data, tmp_path, capsys):
    X, Y = data
    frame = pd.concat([X, Y], axis=1)
    path, saved = tmp_path / "d.csv", tmp_path / "m.json"
    frame.to_csv(path, index=False)
    assert main(["train", str(path), "--target", "price,volume", "--n-estimators", "8",
                 "--seed", "1", "--save", str(saved)]) == 0
    capsys.readouterr()
    # the CLI's model is the estimator's fit on the same split with the DataFrame y
    train = split_indices(frame["price"], "regression", 1, 0, 1)[0]
    ours = TreeBoostRegressor(n_estimators=8, random_state=1).fit(
        X.iloc[train].reset_index(drop=True), Y.iloc[train].reset_index(drop=True))
    assert load_model(saved).target_names_ == ["price", "volume"]
    assert main(["predict", str(saved), str(path)]) == 0
    printed = pd.read_csv(io.StringIO(capsys.readouterr().out), float_precision="round_trip")
    assert list(printed.columns) == ["prediction_price", "prediction_volume"]
    assert np.array_equal(printed.to_numpy(), ours.predict(X))

    # a multi-output model without names keeps the numbered columns
    TreeBoostRegressor(**PARAMS).fit(X, Y.to_numpy()).save_model(saved)
    assert main(["predict", str(saved), str(path)]) == 0
    printed = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert list(printed.columns) == ["prediction_0", "prediction_1"]
