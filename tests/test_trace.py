"""trace=True (SPEC §4): the recorded stages equal a textbook worked example by hand."""

import numpy as np
import pytest

from treeboost import TreeBoostClassifier, TreeBoostRegressor

# Nine rows, one feature x = 1..9, three groups of targets.
X9 = np.arange(1, 10, dtype=np.float64).reshape(-1, 1)
Y9 = np.array([1, 3, 2, 10, 11, 9, 21, 23, 19], dtype=np.float64)
ONE = {"n_jobs": 1}
STUMPS = {"max_leaf_nodes": 2, "min_samples_leaf": 1, "learning_rate": 0.5, **ONE}


@pytest.fixture(scope="module")
def textbook():
    return TreeBoostRegressor(n_estimators=2, trace=True, **STUMPS).fit(X9, Y9)


def test_trace_equals_the_hand_computation(textbook):
    # The hand computation (squared error, nu = 0.5, two-leaf trees). Every number is a
    # dyadic fraction, exact in float32 and float64, so the comparison is exact.
    #
    # F0 = mean(y) = 99 / 9 = 11; r1 = y - 11.
    # Split gain of least squares on r1 (sum r1 = 0, so gain = S_L^2 (1/n_L + 1/n_R)):
    #   after row 3: 27^2 (1/3 + 1/6) = 364.5, after row 4: 28^2 (1/4 + 1/5) = 352.8,
    #   after row 6: 30^2 (1/6 + 1/3) = 450 (best), after row 7: 20^2 (1/7 + 1/2) = 257.1
    # -> x <= 6 | x >= 7; leaf means -30/6 = -5 and 30/3 = 10; shrunk -2.5 and 5.
    # F1 = 8.5 (rows 1-6), 16 (rows 7-9); r2 = y - F1.
    #   after row 3: 19.5^2 (1/3 + 1/6) = 190.125 (best), after row 6: 15^2 / 2 = 112.5
    # -> x <= 3 | x >= 4; leaf means -19.5/3 = -6.5 and 19.5/6 = 3.25; shrunk -3.25, 1.625.
    # F2 = 5.25 (rows 1-3), 10.125 (rows 4-6), 17.625 (rows 7-9).
    r1 = [-10, -8, -9, -1, 0, -2, 10, 12, 8]
    r2 = [-7.5, -5.5, -6.5, 1.5, 2.5, 0.5, 5, 7, 3]
    hand = [
        {"F": [11] * 9, "residual": r1, "left_rows": 6, "gamma": [-5, 10],
         "value": [-2.5, 5], "F_next": [8.5] * 6 + [16] * 3, "cut": (6, 7)},
        {"F": [8.5] * 6 + [16] * 3, "residual": r2, "left_rows": 3, "gamma": [-6.5, 3.25],
         "value": [-3.25, 1.625], "F_next": [5.25] * 3 + [10.125] * 3 + [17.625] * 3,
         "cut": (3, 4)},
    ]
    trace = textbook.trace_
    assert [(e["stage"], e["output"]) for e in trace] == [(0, 0), (1, 0)]
    for entry, h in zip(trace, hand, strict=True):
        rows, leaves = entry["rows"], entry["leaves"]
        np.testing.assert_array_equal(rows["F"], h["F"])
        np.testing.assert_array_equal(rows["residual"], h["residual"])
        np.testing.assert_array_equal(rows["hessian"], np.ones(9))
        assert rows["in_sample"].all()
        assert (rows["weight"] == 1).all()
        # the split: the first left_rows rows in one leaf, the rest in the other
        left, right = leaves.index
        expected_leaf = [left] * h["left_rows"] + [right] * (9 - h["left_rows"])
        np.testing.assert_array_equal(rows["leaf"], expected_leaf)
        np.testing.assert_array_equal(leaves["n_rows"], [h["left_rows"], 9 - h["left_rows"]])
        np.testing.assert_array_equal(leaves["gamma"], h["gamma"])
        np.testing.assert_array_equal(leaves["value"], h["value"])
        np.testing.assert_array_equal(rows["F_next"], h["F_next"])
        assert entry["shrinkage"] == 0.5
        (split,) = entry["splits"]
        threshold = float(split.split("<=")[1].split()[0])
        assert h["cut"][0] <= threshold < h["cut"][1], split
    # the trace is the model: its last F_next is the prediction
    np.testing.assert_array_equal(textbook.predict(X9), hand[-1]["F_next"])


def test_format_trace_prints_the_worked_example(textbook):
    text = textbook.format_trace()
    assert text.count("Stage ") == 2
    for needle in ("Stage 1", "Stage 2", "x0 <= 6.5", "x0 <= 3.5", "F_next", "gamma",
                   "-6.5", "3.25", "17.625"):
        assert needle in text, needle
    only_second = textbook.format_trace(stages=[1])
    assert "Stage 1 " not in only_second
    assert "Stage 2" in only_second


def test_binary_trace_is_newtons_step_on_log_loss():
    # 9 rows, 4 positives: F0 = log(4/5), p = 4/9, r = y - p, h = p (1 - p); a stump's
    # leaves take sum r / sum h (SPEC §1.2), computed here from the rows the trace lists.
    y = np.array([0, 0, 0, 1, 0, 0, 1, 1, 1])
    model = TreeBoostClassifier(n_estimators=2, trace=True, max_delta_step=None,
                                **STUMPS).fit(X9, y)
    first = model.trace_[0]
    rows, leaves = first["rows"], first["leaves"]
    p = 4 / 9
    # gradients are float32 in the engine: 1e-6 is float32 resolution on values near 1
    np.testing.assert_allclose(rows["F"], np.log(4 / 5), rtol=1e-12)
    np.testing.assert_allclose(rows["residual"], y - p, rtol=1e-6)
    np.testing.assert_allclose(rows["hessian"], p * (1 - p), rtol=1e-6)
    for leaf, row in leaves.iterrows():
        members = rows["leaf"] == leaf
        newton = (y[members] - p).sum() / (members.sum() * p * (1 - p))
        assert row["gamma"] == pytest.approx(newton, rel=1e-6)
        assert row["value"] == pytest.approx(0.5 * newton, rel=1e-6)
    second = model.trace_[1]["rows"]
    np.testing.assert_allclose(second["F"], rows["F_next"], rtol=1e-12)
    np.testing.assert_allclose(second["residual"], y - 1 / (1 + np.exp(-second["F"])),
                               atol=1e-6)


def test_multiclass_and_subsample_trace():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = np.digitize(X[:, 0], [-0.5, 0.5])
    model = TreeBoostClassifier(n_estimators=3, trace=True, subsample=0.5, max_leaf_nodes=3,
                                min_samples_leaf=2, random_state=0, **ONE).fit(X, y)
    trace = model.trace_
    assert [(e["stage"], e["output"]) for e in trace] == [(m, k) for m in range(3)
                                                          for k in range(3)]
    for entry in trace:
        rows = entry["rows"]
        assert rows["in_sample"].sum() == 20  # half the rows, drawn without replacement
        assert (rows["weight"][~rows["in_sample"]] == 0).all()
        # out-of-sample rows are placed in a leaf too, and every row's leaf is a leaf
        assert set(rows["leaf"]) <= set(entry["leaves"].index)
    # the F of the next stage is this stage's F_next, for every class and every row
    for m in range(2):
        for k in range(3):
            np.testing.assert_allclose(trace[3 * (m + 1) + k]["rows"]["F"],
                                       trace[3 * m + k]["rows"]["F_next"], rtol=1e-12)
    last = np.column_stack([trace[6 + k]["rows"]["F_next"] for k in range(3)])
    np.testing.assert_allclose(model.decision_function(X), last, rtol=1e-12)


def test_no_trace_unless_asked():
    model = TreeBoostRegressor(n_estimators=2, **STUMPS).fit(X9, Y9)
    assert not hasattr(model, "trace_")
    with pytest.raises(Exception, match="not fitted"):
        model.format_trace()
    with pytest.raises(ValueError, match="trace='yes'"):
        TreeBoostRegressor(trace="yes").fit(X9, Y9)
