"""Reading and checking the frozen model fixtures of ``tests/data/models``.

Shared by ``test_model_fixtures.py`` (the files load and predict as recorded) and
``test_training_freeze.py`` (today's training gives the same models): both compare
against the same stored outputs, in the same way: bit for bit, except where NumPy's
``exp`` stands between treeboost's raw scores and the output (see ``EXP_ULPS``).
"""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from treeboost import TreeBoostClassifier

MODELS = Path(__file__).parent / "data" / "models"
FIXTURES = sorted(p.stem for p in MODELS.glob("*.json"))
#: outputs that are class labels: stored as unicode, compared as labels with their dtype
LABEL_OUTPUTS = ("predict", "staged_predict")
#: outputs that pass the raw scores through NumPy's ``exp`` (softmax probabilities, log-link
#: means) may differ from the stored ones by this many units in the last place: NumPy
#: picks its ``exp`` kernel by CPU (an AVX-512 one where the CPU has it, else the C
#: library's), and the two round differently in the last bit (seen on an AMD EPYC with
#: AVX-512: multiclass probabilities and Poisson/gamma/Tweedie means 1 ulp off, raw scores,
#: labels and SHAP values equal). Everything treeboost computes itself stays bit for bit.
EXP_ULPS = 4


def load_stored(name: str) -> dict:
    """The fixture's npz as a dict of arrays (no pickled objects are allowed in it)."""
    with np.load(MODELS / f"{name}.npz", allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def stored_inputs(stored: dict):
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


def _through_exp(est, method: str) -> bool:
    if method in ("predict_proba", "staged_predict_proba"):
        return est.booster_.n_outputs > 1  # binary probabilities come from SciPy's expit
    return (method in ("predict", "staged_predict") and not isinstance(est, TreeBoostClassifier)
            and est.booster_.loss.link != "identity")


def check_outputs(est, stored: dict, X) -> None:
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
        if _through_exp(est, method):
            np.testing.assert_array_max_ulp(got, expected, maxulp=EXP_ULPS)
            continue
        np.testing.assert_array_equal(got, expected, err_msg=method)
        # assert_array_equal takes -0.0 for 0.0 and any NaN for any other: compare the bits
        assert np.ascontiguousarray(got).tobytes() == expected.tobytes(), \
            f"{method}: equal as numbers but not bit for bit (a signed zero or a NaN payload)"


def check_attributes(est, stored: dict) -> None:
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


def load_generator():
    """``data/models/make_fixtures.py`` as a module, for its ``CASES`` and ``recipe``.

    Importing it writes nothing (only running it as a script does).
    """
    path = MODELS / "make_fixtures.py"
    spec = importlib.util.spec_from_file_location("make_fixtures", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
