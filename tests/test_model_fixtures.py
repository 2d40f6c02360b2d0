"""Frozen format-1 model files still load and predict bit for bit (docs/guide/model_files.rst).

``tests/data/models`` holds models written once by ``make_fixtures.py`` before the
engine refactor, each with the inputs it predicted on and every output it gave.
Whatever the engine becomes, a file users saved must give the same numbers. A failure
here is a change of behaviour to explain, never a reason to regenerate the fixtures.

The fixtures are found by glob: a new ``<name>.json`` with its ``<name>.npz`` is
tested without editing this file. Outputs go through NumPy's and SciPy's ``exp`` and
``expit`` (log links, probabilities), so a NumPy whose ``exp`` rounds differently on
some CPU would also show here; the raw scores (``decision_function``,
``pred_contribs``) depend on treeboost alone.
"""

import hashlib
import json

import numpy as np
import pytest

from frozen_models import (
    FIXTURES,
    MODELS,
    check_attributes,
    check_outputs,
    load_stored,
    stored_inputs,
)
from treeboost import load_model
from treeboost.exceptions import ModelFormatError


def test_fixtures_are_complete():
    # a glob that finds nothing (files not checked out, folder moved) must not pass silently
    assert len(FIXTURES) >= 20, f"expected the frozen model files in {MODELS}"
    npz = sorted(p.stem for p in MODELS.glob("*.npz"))
    assert npz == FIXTURES, "every model file needs its .npz of expected outputs and back"


@pytest.mark.parametrize("name", FIXTURES)
def test_frozen_model_predicts_as_recorded(name):
    path = MODELS / f"{name}.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    stored = load_stored(name)
    # the point is to read files of format 1 as written then, whatever the writer becomes
    assert doc["format_version"] == 1
    assert doc["treeboost_version"] == str(stored["meta_treeboost_version"])
    est = load_model(path)
    assert type(est).__name__ == doc["estimator"]
    X = stored_inputs(stored)
    check_attributes(est, stored)
    check_outputs(est, stored, X)


@pytest.mark.parametrize("name", FIXTURES)
def test_frozen_model_survives_a_round_trip(name, tmp_path):
    # today's writer must keep everything the format-1 file holds
    est = load_model(MODELS / f"{name}.json")
    est.save_model(tmp_path / "again.json")
    again = load_model(tmp_path / "again.json")
    stored = load_stored(name)
    check_attributes(again, stored)
    check_outputs(again, stored, stored_inputs(stored))


def _first_leaf_edit(text: str, delta: float) -> str:
    """The document with every leaf of the first tree moved by ``delta``, re-signed."""
    doc = json.loads(text)
    doc.pop("checksum")
    tree = doc["trees"][0][0]
    tree["value"] = [v + delta if left < 0 else v
                     for v, left in zip(tree["value"], tree["left"], strict=True)]
    # the checksum as docs/guide/model_files.rst documents it: SHA-256 of the sorted,
    # compact document
    canonical = json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False)
    doc["checksum"] = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    return json.dumps(doc)


def test_damaged_fixture_copy_is_refused(tmp_path):
    # a fixture edited by hand (here one leaf value) fails its checksum: it cannot be
    # "fixed" without regenerating it, and a damaged copy is never read as a model
    name = "reg_squared_error"
    text = (MODELS / f"{name}.json").read_text(encoding="utf-8")
    leaf = json.dumps(json.loads(text)["trees"][0][0]["value"][-1])
    assert text.count(leaf) == 1
    damaged = tmp_path / "damaged.json"
    damaged.write_text(text.replace(leaf, json.dumps(float(leaf) + 0.5)), encoding="utf-8")
    with pytest.raises(ModelFormatError, match="checksum mismatch"):
        load_model(damaged)


def test_changed_leaf_is_caught(tmp_path):
    # the comparison is sharp enough to see one tree's leaves moved by 1e-6
    name = "clf_multiclass_log_loss"
    text = _first_leaf_edit((MODELS / f"{name}.json").read_text(encoding="utf-8"), 1e-6)
    path = tmp_path / "changed.json"
    path.write_text(text, encoding="utf-8")
    est, stored = load_model(path), load_stored(name)
    with pytest.raises(AssertionError):
        check_outputs(est, stored, stored_inputs(stored))


def test_shifted_expectation_is_caught():
    # and so is one stored number changed by one unit in the last place
    name = "reg_squared_error"
    stored = load_stored(name)
    est, X = load_model(MODELS / f"{name}.json"), stored_inputs(stored)
    check_outputs(est, stored, X)
    stored["out_predict"] = stored["out_predict"].copy()
    stored["out_predict"][7] = np.nextafter(stored["out_predict"][7], np.inf)
    with pytest.raises(AssertionError, match="predict"):
        check_outputs(est, stored, X)
