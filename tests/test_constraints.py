"""Monotone and interaction constraints (``treeboost.constraints``, the grower kernel's seam).

Monotone: predictions along 1,000-point grids of each constrained feature (the other
features fixed at random training rows, with a NaN column and a categorical column in
the data) never move against the constraint, for Newton leaves (squared error, log-loss,
softmax) and exact line searches (absolute error, quantile), with row and column
sampling. The check is exact, no tolerance: every tree's leaves are ordered along the
feature and the trees are summed in the same order for every row, and rounding is
monotone. Interaction: every root-to-leaf path's features lie in one set. The
constrained gain is checked against a NumPy twin; the scores against LightGBM's under
the same constraints.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from treeboost import TreeBoostClassifier, TreeBoostRegressor, load_model
from treeboost._kernels.records import FeatureBins, NodeBounds, SplitParams
from treeboost._kernels.splitting import (
    BIN,
    GAIN,
    N_SPLIT_COLUMNS,
    constrained_split_gain,
    find_best_splits,
)

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
N_GRID = 1000
SAMPLING = dict(subsample=0.8, colsample_bytree=0.8, n_estimators=40, random_state=0,
                n_jobs=1)


def _data(n=1500, seed=0):
    """x0 increasing, x1 decreasing effect, x2 with NaN, x3 categorical (codes), x4 noise."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 5))
    X[:, 3] = rng.integers(0, 6, size=n)
    signal = (X[:, 0] + 0.5 * np.sin(4 * X[:, 0]) - X[:, 1] ** 3 / 4 + np.cos(2 * X[:, 2])
              + 0.3 * X[:, 3] * X[:, 0] + (X[:, 3] == 2))
    X[rng.random(n) < 0.15, 2] = np.nan
    X[rng.random(n) < 0.1, 0] = np.nan  # missing values in a constrained feature too
    return X, signal + 0.3 * rng.normal(size=n)


def _grid_raw(model, X, feature, rows=5, seed=1):
    """Raw scores (n_outputs, rows, N_GRID) along a grid of ``feature`` at random rows.

    ``X`` is an array, or the frame a model with categorical columns was fitted on
    (such a model reads frames: categories by label).
    """
    rng = np.random.default_rng(seed)
    frame = X if hasattr(X, "iloc") else None
    column = np.asarray(X.iloc[:, feature] if frame is not None else X[:, feature], dtype=float)
    lo, hi = np.nanmin(column), np.nanmax(column)
    grid = np.linspace(lo - 0.1, hi + 0.1, N_GRID)  # beyond the range too
    out = []
    for i in rng.choice(X.shape[0], rows, replace=False):
        if frame is not None:
            Z = frame.iloc[[i] * N_GRID].reset_index(drop=True)
            Z[Z.columns[feature]] = grid
        else:
            Z = np.repeat(X[i:i + 1], N_GRID, axis=0)
            Z[:, feature] = grid
        out.append(model.booster_.predict_raw(Z).T)
    return np.stack(out, axis=1)


def _assert_monotone(model, X, monotone):
    for feature, direction in enumerate(monotone):
        if direction:
            steps = np.diff(_grid_raw(model, X, feature), axis=-1) * direction
            assert steps.min() >= 0.0, (feature, steps.min())


MONOTONE = [1, -1, 0, 0, 0]


@pytest.mark.parametrize("method", ["basic", "intermediate"])
@pytest.mark.parametrize("loss", ["squared_error", "absolute_error", "quantile", "huber"])
def test_regression_monotone(loss, method):
    X, y = _data()
    model = TreeBoostRegressor(loss=loss, monotone_constraints=MONOTONE,
                               monotone_constraints_method=method,
                               categorical_features=[3], **SAMPLING).fit(X, y)
    _assert_monotone(model, X, MONOTONE)
    if loss != "quantile":  # still a good fit: the constraints hold in the truth
        assert model.score(X, y) > 0.6


def test_regression_monotone_unconstrained_is_not():
    """The grid check has teeth: the same fit without constraints breaks it."""
    X, y = _data()
    model = TreeBoostRegressor(categorical_features=[3], **SAMPLING).fit(X, y)
    with pytest.raises(AssertionError):
        _assert_monotone(model, X, MONOTONE)


@pytest.mark.parametrize("method", ["basic", "intermediate"])
def test_binary_monotone(method):
    X, y = _data()
    model = TreeBoostClassifier(monotone_constraints={0: 1, 1: -1}, categorical_features=[3],
                                monotone_constraints_method=method,
                                **SAMPLING).fit(X, (y > np.median(y)).astype(int))
    _assert_monotone(model, X, MONOTONE)
    Z = np.repeat(X[:1], N_GRID, axis=0)
    Z[:, 0] = np.linspace(-2.1, 2.1, N_GRID)
    assert np.diff(model.predict_proba(Z)[:, 1]).min() >= 0.0


@pytest.mark.parametrize("method", ["basic", "intermediate"])
def test_multiclass_every_class_monotone(method):
    X, y = _data()
    labels = np.digitize(y, np.quantile(y, [0.33, 0.66]))
    model = TreeBoostClassifier(monotone_constraints=MONOTONE, categorical_features=[3],
                                monotone_constraints_method=method,
                                **SAMPLING).fit(X, labels)
    raw = _grid_raw(model, X, 0)
    assert raw.shape[0] == 3  # one raw score per class, each constrained
    _assert_monotone(model, X, MONOTONE)


def test_all_zero_constraints_change_nothing():
    X, y = _data()
    plain = TreeBoostRegressor(categorical_features=[3], **SAMPLING).fit(X, y)
    zero = TreeBoostRegressor(categorical_features=[3], monotone_constraints=[0] * 5,
                              **SAMPLING).fit(X, y)
    np.testing.assert_array_equal(plain.predict(X), zero.predict(X))


def test_frame_names_and_round_trip(tmp_path):
    pd = pytest.importorskip("pandas")
    X, y = _data()
    frame = pd.DataFrame(X, columns=["up", "down", "nan", "cat", "noise"])
    frame["cat"] = frame["cat"].astype(int).astype("category")
    model = TreeBoostRegressor(monotone_constraints={"up": 1, "down": -1},
                               interaction_constraints=[["up", "cat"], ["down", "nan"]],
                               **SAMPLING).fit(frame, y)
    _assert_monotone(model, frame, MONOTONE)
    path = tmp_path / "model.json"
    model.save_model(path)
    loaded = load_model(path)
    assert loaded.get_params()["monotone_constraints"] == {"up": 1, "down": -1}
    assert loaded.get_params()["interaction_constraints"] == [["up", "cat"], ["down", "nan"]]
    np.testing.assert_array_equal(loaded.predict(frame), model.predict(frame))


def test_index_dict_round_trip(tmp_path):
    X, y = _data(n=400)
    model = TreeBoostRegressor(monotone_constraints={0: 1}, categorical_features=[3],
                               n_estimators=5).fit(X, y)
    path = tmp_path / "model.json"
    model.save_model(path)
    loaded = load_model(path)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    # JSON keys are strings: an index-keyed dict comes back as {"0": 1} and still works
    loaded.set_params(warm_start=True, n_estimators=8).fit(X, y)
    _assert_monotone(loaded, X, [1, 0, 0, 0, 0])


# ---- interaction constraints --------------------------------------------------------------
def _paths(tree):
    """The set of features split on along every root-to-leaf path of ``tree``."""
    out, stack = [], [(0, frozenset())]
    while stack:
        node, used = stack.pop()
        if tree.left[node] < 0:
            out.append(used)
            continue
        used = used | {int(tree.feature[node])}
        stack += [(tree.left[node], used), (tree.right[node], used)]
    return out


@pytest.mark.parametrize("multiclass", [False, True])
def test_interaction_paths_within_one_set(multiclass):
    X, y = _data()
    sets = [{0, 1}, {1, 2, 3}]  # feature 4 is in no set: never used (LightGBM)
    if multiclass:
        model = TreeBoostClassifier(interaction_constraints=[sorted(s) for s in sets],
                                    monotone_constraints=MONOTONE, categorical_features=[3],
                                    **SAMPLING).fit(X, np.digitize(y, [-0.5, 0.5]))
    else:
        model = TreeBoostRegressor(interaction_constraints=[sorted(s) for s in sets],
                                   categorical_features=[3], **SAMPLING).fit(X, y)
    n_paths = 0
    for stage in model.booster_.trees:
        for tree in stage:
            for used in _paths(tree):
                n_paths += 1
                assert any(used <= s for s in sets), used
    assert n_paths > 100
    used = model.booster_.feature_importances("split")
    assert used[4] == 0
    assert used[:4].min() > 0
    if multiclass:
        _assert_monotone(model, X, MONOTONE)


def test_interaction_one_full_set_is_unconstrained():
    """One set of every feature allows everything: the same model up to the gain's rounding."""
    X, y = _data()
    plain = TreeBoostRegressor(categorical_features=[3], **SAMPLING).fit(X, y)
    full = TreeBoostRegressor(categorical_features=[3], interaction_constraints=[range(5)],
                              **SAMPLING).fit(X, y)
    # the constrained gain -(2 G w + H w^2) at w = -G/H equals G^2/H up to rounding, which
    # can swap near-tied splits; the fits stay within 1e-3 of R^2
    assert abs(plain.score(X, y) - full.score(X, y)) < 1e-3


# ---- errors ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("params", "match"), [
    (dict(monotone_constraints=[1, 0, 0, 1, 0]), "categorical"),
    (dict(monotone_constraints=[1, 0]), "2 entries"),
    (dict(monotone_constraints=[2, 0, 0, 0, 0]), "monotone_constraints"),
    (dict(monotone_constraints={"a": 1}), "names feature 'a'"),
    (dict(interaction_constraints=[[0, 9]]), "out of range"),
    (dict(interaction_constraints=[0, 1]), "interaction_constraints"),
    (dict(monotone_constraints_method="advanced"), "monotone_constraints_method"),
])
def test_errors(params, match):
    X, y = _data(n=200)
    with pytest.raises(ValueError, match=match):
        TreeBoostRegressor(categorical_features=[3], n_estimators=2, **params).fit(X, y)


@pytest.mark.parametrize("growth", ["sparse", "colsample_bynode", "unbounded"])
def test_constraints_hold_on_every_growth(growth):
    """The one grower carries the constraints for sparse data, per-node column sampling
    and unbounded trees too."""
    X, y = _data()
    params = dict(SAMPLING, monotone_constraints=MONOTONE,
                  interaction_constraints=[[0, 1, 2], [1, 3, 4]])
    if growth == "sparse":
        X = sp.csr_matrix(np.nan_to_num(X))
    elif growth == "colsample_bynode":
        params["colsample_bynode"] = 0.5
    else:
        params.update(max_leaf_nodes=None, max_depth=4)
    model = TreeBoostRegressor(**params).fit(X, y)
    dense = X.toarray() if sp.issparse(X) else X
    _assert_monotone(model, dense, MONOTONE)
    sets = [{0, 1, 2}, {1, 3, 4}]
    for stage in model.booster_.trees:
        for tree in stage:
            assert all(any(used <= s for s in sets) for used in _paths(tree))
    assert model.score(X, y) > 0.6


# ---- the constrained gain against a NumPy twin ------------------------------------------
def _twin_gain(gl, hl, gr, hr, lam, alpha, lower, upper, direction):
    def value(g, h):
        t = np.sign(g) * max(abs(g) - alpha, 0.0)
        return np.clip(-t / (h + lam), lower, upper), t

    (wl, tl), (wr, tr) = value(gl, hl), value(gr, hr)
    (wp, tp) = value(gl + gr, hl + hr)
    if direction * (wr - wl) < 0:
        return -np.inf
    def score(t, h, w):
        return -(2 * t * w + (h + lam) * w * w)
    return score(tl, hl, wl) + score(tr, hr, wr) - score(tp, hl + hr, wp)


def test_constrained_gain_matches_twin():
    rng = np.random.default_rng(0)
    for _ in range(500):
        gl, gr = rng.normal(size=2) * 10
        hl, hr = rng.uniform(0.1, 10, size=2)
        lam, alpha = rng.choice([0.0, 1.0]), rng.choice([0.0, 0.5])
        lower, upper = np.sort(rng.normal(size=2))
        if rng.random() < 0.3:
            lower, upper = -np.inf, np.inf
        direction = int(rng.integers(-1, 2))
        bounds = NodeBounds(float(lower), float(upper), np.zeros(1, dtype=np.int8))
        wp = np.clip(-(np.sign(gl + gr) * max(abs(gl + gr) - alpha, 0)) / (hl + hr + lam),
                     lower, upper)
        tp = np.sign(gl + gr) * max(abs(gl + gr) - alpha, 0)
        parent = -(2 * tp * wp + (hl + hr + lam) * wp * wp)
        ours = constrained_split_gain(gl, hl, gr, hr, lam, alpha, bounds, direction, parent)
        twin = _twin_gain(gl, hl, gr, hr, lam, alpha, lower, upper, direction)
        if np.isinf(twin):
            assert ours == twin
        else:
            assert ours == pytest.approx(twin, rel=1e-9, abs=1e-9)  # float reassociation


def test_find_best_splits_with_bounds_matches_exhaustive_twin():
    """The best threshold of a monotone feature under bounds: kernel scan vs every threshold."""
    rng = np.random.default_rng(1)
    n_bins, missing_bin = 12, 255
    for trial in range(50):
        hist = np.zeros((1, 256, 3))
        hist[0, :n_bins, 2] = rng.integers(1, 5, size=n_bins)
        hist[0, :n_bins, 1] = hist[0, :n_bins, 2] * rng.uniform(0.5, 1.5, size=n_bins)
        hist[0, :n_bins, 0] = rng.normal(size=n_bins) * hist[0, :n_bins, 2] \
            + np.linspace(-1, 1, n_bins) * (trial % 3 - 1)
        g, h, c = hist[0].sum(axis=0)
        lower, upper = sorted(rng.normal(size=2) * 0.5)
        direction = int(trial % 3 - 1)
        bounds = NodeBounds(float(lower), float(upper), np.array([direction], dtype=np.int8))
        out = np.empty((1, N_SPLIT_COLUMNS))
        bitsets = np.zeros((1, 8), dtype=np.uint32)
        find_best_splits(hist, np.array([0], dtype=np.int32),
                         FeatureBins(np.array([n_bins], dtype=np.int32),
                                     np.zeros(1, dtype=np.uint8), missing_bin),
                         float(g), float(h), float(c),
                         SplitParams(1.0, 0.0, 1.0, 1e-3, 10.0, 10.0, 32, 16),
                         out, bitsets, None, bounds)
        gains = [_twin_gain(hist[0, :b + 1, 0].sum(), hist[0, :b + 1, 1].sum(),
                            g - hist[0, :b + 1, 0].sum(), h - hist[0, :b + 1, 1].sum(),
                            1.0, 0.0, lower, upper, direction) for b in range(n_bins - 1)]
        best = int(np.argmax(gains))
        if np.isinf(gains[best]):
            assert np.isinf(out[0, GAIN])
        else:
            assert out[0, GAIN] == pytest.approx(gains[best], rel=1e-9, abs=1e-12)
            # clipped children tie across thresholds (both at a bound): equal gain suffices
            assert gains[int(out[0, BIN])] == pytest.approx(gains[best], rel=1e-9, abs=1e-12)


# ---- against LightGBM on real data --------------------------------------------------------
def _california():
    path = DATASETS / "california_housing.csv.gz"
    if not path.exists():
        pytest.skip(f"{path} not available")
    from treeboost.datasets import load

    X, y = load(path, target="median_house_value")
    return X, np.asarray(y, dtype=float) / 1e5


#: treeboost's mean test RMSE over three splits may be at most 1 % above LightGBM's under
#: the same constraints (unconstrained, single splits differ by up to 1 % either way:
#: benchmarks/bench_constraints.py)
REL_TOL = 0.01


@pytest.mark.parametrize("kind", ["basic", "intermediate", "interaction"])
def test_california_against_lightgbm(kind):
    lgb = pytest.importorskip("lightgbm")
    from sklearn.metrics import mean_squared_error
    from sklearn.model_selection import train_test_split

    X, y = _california()
    names = list(X.columns)
    if kind != "interaction":  # house values rise with income
        ours_kw = dict(monotone_constraints={"median_income": 1},
                       monotone_constraints_method=kind)
        lgb_kw = dict(monotone_constraints=[int(n == "median_income") for n in names],
                      monotone_constraints_method=kind)
    else:  # location apart from the rest
        groups = [["longitude", "latitude", "ocean_proximity"],
                  [n for n in names if n not in ("longitude", "latitude")]]
        ours_kw = dict(interaction_constraints=groups)
        lgb_kw = dict(interaction_constraints=[[names.index(n) for n in g] for g in groups])
    ratios = []
    for seed in range(3):
        train, test = train_test_split(np.arange(y.size), test_size=0.25, random_state=seed)
        ours = TreeBoostRegressor(n_estimators=200, random_state=seed, n_jobs=1,
                                  **ours_kw).fit(X.iloc[train], y[train])
        theirs = lgb.LGBMRegressor(
            n_estimators=200, num_leaves=31, learning_rate=0.1, min_child_samples=20,
            min_child_weight=1e-3, reg_lambda=0.0, min_data_in_bin=1, min_data_per_group=1,
            cat_smooth=10.0, cat_l2=10.0, max_cat_to_onehot=16, n_jobs=1, verbose=-1,
            random_state=seed, **lgb_kw).fit(X.iloc[train], y[train])
        ratios.append(mean_squared_error(y[test], ours.predict(X.iloc[test]))
                      / mean_squared_error(y[test], theirs.predict(X.iloc[test])))
    assert np.mean(np.sqrt(ratios)) <= 1 + REL_TOL, ratios


def test_train_api_trace_and_modes():
    """The functional API by index; the Python leaf path (trace=True); dart and rf scale
    trees by positive factors, which keeps the order."""
    from treeboost import Dataset, train

    X, y = _data(n=600)
    for extra in ({"trace": None}, {"boosting": "dart"}, {"boosting": "rf"}):
        trace = [] if "trace" in extra else None
        params = {"monotone_constraints": {0: 1, 1: -1}, "n_estimators": 15,
                  "random_state": 0, "subsample": 0.7, "loss": "squared_error",
                  **{k: v for k, v in extra.items() if k != "trace"}}
        booster = train(params, Dataset(X, y, categorical_features=[3]), trace=trace)

        class Wrapped:  # _grid_raw reads booster_.predict_raw
            booster_ = booster

        _assert_monotone(Wrapped, X, MONOTONE)
    with pytest.raises(ValueError, match="names need a data frame"):
        train({"monotone_constraints": {"x0": 1}}, Dataset(X, y, categorical_features=[3]))
