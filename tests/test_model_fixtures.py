"""Frozen format-1 model files still load and predict bit for bit (README "Model file format").

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
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from treeboost import TreeBoostClassifier, load_model
from treeboost.exceptions import ModelFormatError

MODELS = Path(__file__).parent / "data" / "models"
FIXTURES = sorted(p.stem for p in MODELS.glob("*.json"))
#: outputs that are class labels: stored as unicode, compared as labels with their dtype
LABEL_OUTPUTS = ("predict", "staged_predict")


def _stored(name: str) -> dict:
    """The fixture's npz as a dict of arrays (no pickled objects are allowed in it)."""
    with np.load(MODELS / f"{name}.npz", allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _inputs(stored: dict):
    """The rows the fixture predicted on: a matrix, a CSR matrix or a DataFrame."""
    if "X_test" in stored:
        return stored["X_test"]
    if "X_csr_data" in stored:
        return sp.csr_matrix((stored["X_csr_data"], stored["X_csr_indices"],
                              stored["X_csr_indptr"]), shape=tuple(stored["X_csr_shape"]))
    columns = {}
    for j, name in enumerate(stored["frame_columns"].tolist()):
        values = stored[f"frame_col_{j}"]
        if f"frame_cat_{j}" in stored:  # codes into the stored categories, -1 for missing
            values = pd.Categorical.from_codes(values, stored[f"frame_cat_{j}"].tolist())
        columns[name] = values
    return pd.DataFrame(columns)


def _predict(est, method: str, X, stages: np.ndarray) -> np.ndarray:
    """``method``'s output on ``X``; staged methods at the 0-based ``stages``."""
    if method == "pred_contribs":
        return est.predict(X, pred_contribs=True)
    if method.startswith("staged_"):
        staged = list(getattr(est, method)(X))
        assert len(staged) == est.n_iter_, f"{method} yields one output per stage"
        return np.stack([staged[m] for m in stages])
    return getattr(est, method)(X)


def _check_outputs(est, stored: dict, X) -> None:
    """Every stored output equals ``est``'s, bit for bit; raise AssertionError if not."""
    outputs = [k[len("out_"):] for k in stored if k.startswith("out_")]
    assert "predict" in outputs
    for method in outputs:
        expected = stored[f"out_{method}"]
        got = _predict(est, method, X, stored.get("staged_at"))
        if isinstance(est, TreeBoostClassifier) and method in LABEL_OUTPUTS:
            assert got.dtype.str == str(stored["labels_dtype"]), method
            np.testing.assert_array_equal(got.astype(str), expected, err_msg=method)
            continue
        assert got.dtype == expected.dtype, (method, got.dtype, expected.dtype)
        np.testing.assert_array_equal(got, expected, err_msg=method)
        # assert_array_equal takes -0.0 for 0.0 and any NaN for any other: compare the bits
        assert np.ascontiguousarray(got).tobytes() == expected.tobytes(), \
            f"{method}: equal as numbers but not bit for bit (a signed zero or a NaN payload)"


def _check_attributes(est, stored: dict) -> None:
    """The fitted attributes the fixture recorded."""
    assert est.n_features_in_ == int(stored["attr_n_features_in_"])
    assert est.n_iter_ == int(stored["attr_n_iter_"])  # stages kept
    best = int(stored["attr_best_iteration_"])
    assert est.best_iteration_ == (None if best == -1 else best)
    assert est.evals_result_ == json.loads(str(stored["attr_evals_result_json"]))
    # the importances are sums of the stored gains: an engine that sums them in another
    # order may differ in the last bits without any prediction changing
    np.testing.assert_allclose(est.feature_importances_, stored["attr_feature_importances_"],
                               rtol=1e-12, atol=0)
    if "attr_classes_" in stored:
        assert est.classes_.dtype.str == str(stored["attr_classes_dtype"])
        np.testing.assert_array_equal(est.classes_.astype(str), stored["attr_classes_"])
        assert est.n_classes_ == stored["attr_classes_"].size
    else:
        assert not hasattr(est, "classes_")
    if "attr_feature_names_in_" in stored:
        np.testing.assert_array_equal(np.asarray(est.feature_names_in_, dtype=str),
                                      stored["attr_feature_names_in_"])
    else:
        assert not hasattr(est, "feature_names_in_")


def test_fixtures_are_complete():
    # a glob that finds nothing (files not checked out, folder moved) must not pass silently
    assert len(FIXTURES) >= 20, f"expected the frozen model files in {MODELS}"
    npz = sorted(p.stem for p in MODELS.glob("*.npz"))
    assert npz == FIXTURES, "every model file needs its .npz of expected outputs and back"


@pytest.mark.parametrize("name", FIXTURES)
def test_frozen_model_predicts_as_recorded(name):
    path = MODELS / f"{name}.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    stored = _stored(name)
    # the point is to read files of format 1 as written then, whatever the writer becomes
    assert doc["format_version"] == 1
    assert doc["treeboost_version"] == str(stored["meta_treeboost_version"])
    est = load_model(path)
    assert type(est).__name__ == doc["estimator"]
    X = _inputs(stored)
    _check_attributes(est, stored)
    _check_outputs(est, stored, X)


@pytest.mark.parametrize("name", FIXTURES)
def test_frozen_model_survives_a_round_trip(name, tmp_path):
    # today's writer must keep everything the format-1 file holds
    est = load_model(MODELS / f"{name}.json")
    est.save_model(tmp_path / "again.json")
    again = load_model(tmp_path / "again.json")
    stored = _stored(name)
    _check_attributes(again, stored)
    _check_outputs(again, stored, _inputs(stored))


def _first_leaf_edit(text: str, delta: float) -> str:
    """The document with every leaf of the first tree moved by ``delta``, re-signed."""
    doc = json.loads(text)
    doc.pop("checksum")
    tree = doc["trees"][0][0]
    tree["value"] = [v + delta if left < 0 else v
                     for v, left in zip(tree["value"], tree["left"], strict=True)]
    # the checksum as the README documents it: SHA-256 of the sorted, compact document
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
    est, stored = load_model(path), _stored(name)
    with pytest.raises(AssertionError):
        _check_outputs(est, stored, _inputs(stored))


def test_shifted_expectation_is_caught():
    # and so is one stored number changed by one unit in the last place
    name = "reg_squared_error"
    stored = _stored(name)
    est, X = load_model(MODELS / f"{name}.json"), _inputs(stored)
    _check_outputs(est, stored, X)
    stored["out_predict"] = stored["out_predict"].copy()
    stored["out_predict"][7] = np.nextafter(stored["out_predict"][7], np.inf)
    with pytest.raises(AssertionError, match="predict"):
        _check_outputs(est, stored, X)
