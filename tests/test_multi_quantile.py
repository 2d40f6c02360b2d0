"""Multi-quantile regression and CQR (issue 37, part 3).

``loss="quantile", alpha=[...]``: one output per level, each the single-alpha fit on the
same rows (its F0 and exact quantile leaves at its own level); predictions are sorted in
each row (the rearrangement, which can only lower the pinball loss) and never cross.
``calibrate`` conformalizes the band (Romano et al. 2019): its marginal coverage is checked
on synthetic data averaged over seeds. ``benchmarks/bench_multi_quantile.py`` compares with
XGBoost on real sets; here a small synthetic version.
"""

import numpy as np
import pytest

import treeboost as tb
from treeboost import Dataset, TreeBoostRegressor, train
from treeboost.losses import conformal_offset

ALPHAS = [0.1, 0.5, 0.9]


def _data(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 5))
    scale = 0.5 + np.abs(X[:, 1])  # heteroscedastic noise
    y = np.sin(2 * X[:, 0]) + X[:, 2] + scale * rng.standard_t(5, size=n)
    return X, y


def _pinball(y, pred, alphas=ALPHAS):
    d = y[:, None] - pred
    a = np.asarray(alphas)
    return float(np.mean(np.maximum(a * d, (a - 1) * d)))


def test_each_output_is_its_single_alpha_fit_before_sorting():
    X, y = _data(800, 0)
    kw = dict(loss="quantile", n_estimators=20, random_state=0)
    model = TreeBoostRegressor(alpha=[0.9, 0.1, 0.5], **kw).fit(X, y)  # any order
    raw = model.predict(X, raw_score=True)
    for j, a in enumerate([0.9, 0.1, 0.5]):
        single = TreeBoostRegressor(alpha=a, **kw).fit(X, y)
        assert np.array_equal(raw[:, j], single.predict(X))
    pred = model.predict(X)
    # sorted in the order of the levels: column 1 (0.1) <= column 2 (0.5) <= column 0 (0.9)
    assert np.all(pred[:, 1] <= pred[:, 2])
    assert np.all(pred[:, 2] <= pred[:, 0])
    assert np.array_equal(np.sort(pred, axis=1), np.sort(raw, axis=1))


def test_sorting_never_raises_the_pinball_loss():
    X, y = _data(300, 1)
    model = TreeBoostRegressor(loss="quantile", alpha=ALPHAS, n_estimators=30,
                               min_samples_leaf=3).fit(X, y)
    Xt, yt = _data(2000, 2)
    raw, pred = model.predict(Xt, raw_score=True), model.predict(Xt)
    assert np.all(np.diff(pred, axis=1) >= 0)
    for i in range(yt.size):  # per row: the rearrangement's inequality
        assert _pinball(yt[i:i + 1], pred[i:i + 1]) <= _pinball(yt[i:i + 1], raw[i:i + 1]) \
            + 1e-12


def test_train_save_load_and_errors(tmp_path):
    X, y = _data(500, 3)
    booster = train({"loss": "quantile", "alpha": ALPHAS, "n_estimators": 10}, Dataset(X, y))
    assert booster.n_outputs == 3
    model = TreeBoostRegressor(loss="quantile", alpha=ALPHAS, n_estimators=10).fit(X, y)
    model.calibrate(*_data(300, 4))
    model.save_model(tmp_path / "q.json")
    loaded = tb.load_model(tmp_path / "q.json")
    assert loaded.conformal_offset_ == model.conformal_offset_
    assert np.array_equal(loaded.predict(X), model.predict(X))
    with pytest.raises(ValueError, match="calibrate needs a multi-quantile model"):
        TreeBoostRegressor(n_estimators=2).fit(X, y).calibrate(X, y)
    with pytest.raises(ValueError, match="alpha"):
        TreeBoostRegressor(alpha=ALPHAS).fit(X, y)  # squared_error
    with pytest.raises(ValueError, match="alpha"):
        TreeBoostRegressor(loss="quantile", alpha=[0.1, 1.5]).fit(X, y)
    with pytest.raises(ValueError, match="1-D y"):
        TreeBoostRegressor(loss="quantile", alpha=ALPHAS).fit(X, np.column_stack([y, y]))


def test_conformal_offset_is_the_corrected_quantile():
    y = np.zeros(9)
    lower, upper = -np.arange(1, 10.0), np.zeros(9) - 100  # scores y - upper = 100
    assert conformal_offset(lower, upper, y, 0.2) == 100.0
    scores = np.arange(1, 20.0)  # n = 19: rank ceil(20 * 0.8) = 16
    assert conformal_offset(np.zeros(19), -scores, np.zeros(19), 0.2) == 16.0
    assert conformal_offset(np.zeros(3), np.zeros(3), np.ones(3), 0.2) == np.inf


@pytest.mark.slow
def test_cqr_marginal_coverage_over_seeds():
    covered, raw_covered = [], []
    for seed in range(8):
        X, y = _data(1500, 100 + seed)
        model = TreeBoostRegressor(loss="quantile", alpha=ALPHAS, n_estimators=60,
                                   min_samples_leaf=5, random_state=seed).fit(X[:700], y[:700])
        Xt, yt = X[1000:], y[1000:]
        pred = model.predict(Xt)
        raw_covered.append(np.mean((yt >= pred[:, 0]) & (yt <= pred[:, 2])))
        model.calibrate(X[700:1000], y[700:1000])
        pred = model.predict(Xt)
        assert np.all(np.diff(pred, axis=1) >= 0)
        covered.append(np.mean((yt >= pred[:, 0]) & (yt <= pred[:, 2])))
    # guarantee: >= 0.8 on average; <= 0.8 + 1/(n + 1) without ties (n = 300)
    assert abs(np.mean(covered) - 0.8) < 0.02, covered
    assert np.mean(raw_covered) < np.mean(covered)  # the uncalibrated band overfits


def test_pinball_against_xgboost_small():
    xgb = pytest.importorskip("xgboost")
    X, y = _data(3000, 7)
    Xt, yt = _data(3000, 8)
    common = dict(n_estimators=100, learning_rate=0.1, n_jobs=2, random_state=0)
    ours = TreeBoostRegressor(loss="quantile", alpha=ALPHAS, max_leaf_nodes=31,
                              min_samples_leaf=20, reg_lambda=0.0, max_bins=255,
                              **common).fit(X, y)
    theirs = xgb.XGBRegressor(objective="reg:quantileerror", quantile_alpha=np.array(ALPHAS),
                              tree_method="hist", grow_policy="lossguide", max_leaves=31,
                              max_depth=0, max_bin=255, reg_lambda=0.0, min_child_weight=20,
                              **common).fit(X, y)
    p, q = ours.predict(Xt), theirs.predict(Xt)
    assert np.all(np.diff(p, axis=1) >= 0)
    assert _pinball(yt, p) <= 1.01 * _pinball(yt, q), (_pinball(yt, p), _pinball(yt, q))
