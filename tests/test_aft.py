"""Survival: the accelerated failure time loss ``loss="aft"`` (issue 37, part 4).

The loss against references written here with ``scipy.stats`` (each distribution's
log density, CDF and survival function of log time), its derivatives by finite
differences of that reference for every distribution and censoring kind, F0 against
``scipy.optimize``, the concordance index of interval-censored times against a count of
the pairs, the estimator and ``train()`` on interval bounds, and the held-out
concordance against XGBoost's ``survival:aft`` on public data sets scikit-survival
ships; and the refusals of bad input.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import optimize, stats

from treeboost import Dataset, TreeBoostSurvival, load_model, train
from treeboost.losses import get_loss
from treeboost.losses.survival import AFT_HESSIAN_BOUNDS, aft_derivatives
from treeboost.survival import (
    aft_bounds,
    aft_negative_log_likelihood,
    concordance_index,
    signed_times,
)

DISTRIBUTIONS = {"normal": stats.norm, "logistic": stats.logistic, "extreme": stats.gumbel_l}
KINDS = ("observed", "right", "left", "interval")


# ---- independent references --------------------------------------------------------------
def reference_nll(lower, upper, f, distribution, sigma):
    """Each row's negative log-likelihood from scipy.stats, row by row."""
    dist = DISTRIBUTIONS[distribution]
    out = np.empty(f.size)
    for k in range(f.size):
        lo, hi = lower[k], upper[k]
        if lo == hi:  # the density of the time t: f(z) / (sigma t)
            out[k] = -(dist.logpdf((np.log(lo) - f[k]) / sigma) - np.log(sigma * lo))
        else:  # the mass F(z_hi) - F(z_lo), from the survival functions above the mode
            z_hi = np.inf if np.isinf(hi) else (np.log(hi) - f[k]) / sigma
            z_lo = -np.inf if lo == 0 else (np.log(lo) - f[k]) / sigma
            mass = (dist.sf(z_lo) - dist.sf(z_hi) if z_lo > 0
                    else dist.cdf(z_hi) - dist.cdf(z_lo))
            out[k] = -np.log(mass)
    return out


def bounds_of(kind, n, seed):
    """n time bounds of one censoring kind around times near e^1."""
    rng = np.random.default_rng(seed)
    t = np.exp(1.0 + rng.normal(size=n))
    width = np.exp(rng.uniform(0.2, 1.5, n))
    lower = {"observed": t, "right": t, "left": np.zeros(n), "interval": t}[kind]
    upper = {"observed": t, "right": np.full(n, np.inf), "left": t,
             "interval": t * width}[kind]
    return lower, upper


def grad_hess(loss, y, f, w):
    g = np.empty((1, f.size), dtype=np.float32)
    h = np.empty((1, f.size), dtype=np.float32)
    loss.gradient_hessian(y, f[None, :], w, g, h)
    return g[0].astype(np.float64), h[0].astype(np.float64)


def aft_data(n, seed, censored=0.35):
    """X and right-censored log-normal times: log T = 1 + x0 - x1 / 2 + noise / 2."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    time = np.exp(1.0 + X[:, 0] - 0.5 * X[:, 1] + 0.5 * rng.normal(size=n))
    event = rng.random(n) >= censored
    return X, time, event


def brute_interval_cindex(lower, upper, risk, w):
    """Harrell's C on interval bounds, every ordered pair: i surely first, i riskier."""
    concordant = comparable = 0.0
    for i in range(lower.size):
        for j in range(lower.size):
            if upper[i] < lower[j] or (upper[i] == lower[j] and lower[j] < upper[j]):
                comparable += w[i] * w[j]
                concordant += w[i] * w[j] * (1.0 if risk[i] > risk[j] else
                                             0.5 if risk[i] == risk[j] else 0.0)
    return concordant / comparable


# ---- the loss ---------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("distribution", list(DISTRIBUTIONS))
def test_gradient_hessian_are_the_likelihoods_derivatives(distribution, kind):
    lower, upper = bounds_of(kind, 40, seed=1)
    sigma = 0.8
    f = np.log(np.where(np.isfinite(upper), upper, lower) + 0.5) + np.random.default_rng(
        2).normal(0.0, 0.7, lower.size)
    g, h = aft_derivatives(lower, upper, f, distribution, sigma)
    eps_g, eps_h = 1e-6, 1e-4

    def nll(x):
        return reference_nll(lower, upper, x, distribution, sigma)

    fd_g = (nll(f + eps_g) - nll(f - eps_g)) / (2 * eps_g)
    fd_h = (nll(f + eps_h) - 2 * nll(f) + nll(f - eps_h)) / eps_h**2
    # central differences: truncation ~eps^2 |L'''| (1e-12, 1e-8) and rounding ~1e-16 |L|
    # / eps (1e-10 for g, about 1e-7 for h with |L| up to ~10), far inside these
    assert_allclose(g, fd_g, rtol=1e-6, atol=1e-7)
    assert_allclose(h, fd_h, rtol=1e-4, atol=1e-5)
    assert (h >= -1e-12).all()  # log-concave densities: convex in F
    # the loss: clipped to XGBoost's bounds (none binds at these scores), times the weights,
    # stored as float32 (6e-8 relative)
    assert np.abs(g).max() < 15
    assert h.max() < 15
    w = np.random.default_rng(3).uniform(0.5, 2.0, lower.size)
    loss = get_loss("aft", aft_loss_distribution=distribution, aft_loss_distribution_scale=sigma)
    gl, hl = grad_hess(loss, np.column_stack((lower, upper)), f, w)
    assert_allclose(gl, w * np.clip(g, -15, 15), rtol=1e-6, atol=1e-7)
    assert_allclose(hl, w * np.clip(h, *AFT_HESSIAN_BOUNDS), rtol=1e-6, atol=1e-30)


@pytest.mark.parametrize("distribution", list(DISTRIBUTIONS))
def test_far_scores_are_clipped_and_finite(distribution):
    # log times up to 1e3 from the truth: z far in the tails (exp(z) overflows for the
    # extreme distribution), every kind of row
    parts = [bounds_of(kind, 5, seed=4) for kind in KINDS]
    lower = np.concatenate([p[0] for p in parts])
    upper = np.concatenate([p[1] for p in parts])
    loss = get_loss("aft", aft_loss_distribution=distribution, aft_loss_distribution_scale=0.5)
    w = np.full(lower.size, 2.0)
    for shift in (-1e3, -60.0, 60.0, 1e3):
        g, h = grad_hess(loss, np.column_stack((lower, upper)), np.full(lower.size, shift), w)
        assert np.isfinite(g).all()
        assert np.isfinite(h).all()
        assert (np.abs(g) <= 15 * 2).all()
        assert ((h >= np.float32(1e-16 * 2)) & (h <= 15 * 2)).all()
        # the pull is toward the times (F far above them: g > 0 lowers F), but where the
        # row cannot say (a left-censored row with F far below its bound, a right-censored
        # one far above it: their likelihood is ~1 and flat)
        flat = ((lower == 0) & (shift < 0)) | (np.isinf(upper) & (shift > 0))
        assert (np.sign(g[~flat]) == np.sign(shift)).all(), (shift, g)


@pytest.mark.parametrize("distribution", list(DISTRIBUTIONS))
def test_negative_log_likelihood_is_scipys(distribution):
    parts = [bounds_of(kind, 6, seed=5) for kind in KINDS]
    lower = np.concatenate([p[0] for p in parts])
    upper = np.concatenate([p[1] for p in parts])
    f = np.random.default_rng(6).normal(1.0, 1.0, lower.size)
    w = np.random.default_rng(7).uniform(0.2, 3.0, lower.size)
    y = np.column_stack((lower, upper))
    expected = np.average(reference_nll(lower, upper, f, distribution, 1.3), weights=w)
    got = aft_negative_log_likelihood(y, f, w, distribution=distribution, scale=1.3)
    # the same sums; the library's log-space tails agree with scipy's to rounding
    assert got == pytest.approx(expected, rel=1e-10)
    loss = get_loss("aft", aft_loss_distribution=distribution, aft_loss_distribution_scale=1.3)
    assert loss(y, f[None, :], w) == pytest.approx(expected, rel=1e-10)  # the "loss" metric
    # times alone are observed times; signed times are not AFT labels
    t = lower[:6]
    assert aft_negative_log_likelihood(t, f[:6], distribution=distribution, scale=1.3) == \
        pytest.approx(np.mean(reference_nll(t, t, f[:6], distribution, 1.3)), rel=1e-10)


@pytest.mark.parametrize("distribution", list(DISTRIBUTIONS))
def test_init_score_is_the_constant_minimiser(distribution):
    parts = [bounds_of(kind, 30, seed=8 + i) for i, kind in enumerate(KINDS)]
    lower = np.concatenate([p[0] for p in parts])
    upper = np.concatenate([p[1] for p in parts])
    w = np.random.default_rng(12).uniform(0.5, 2.0, lower.size)
    y = np.column_stack((lower, upper))
    loss = get_loss("aft", aft_loss_distribution=distribution, aft_loss_distribution_scale=0.7)
    f0 = loss.init_score(y, w)[0]

    def objective(c):
        return np.average(reference_nll(lower, upper, np.full(lower.size, c), distribution,
                                        0.7), weights=w)

    best = optimize.minimize_scalar(objective, bounds=(-5.0, 8.0), method="bounded",
                                    options={"xatol": 1e-10}).x
    # Brent's minimiser stops at |x - x*| ~ sqrt(eps) relative on a flat minimum: 1e-6
    assert f0 == pytest.approx(best, abs=1e-6)
    g, _ = aft_derivatives(lower, upper, np.full(lower.size, f0), distribution, 0.7)
    assert abs(np.dot(w, g)) < 1e-9 * np.sum(w)  # the summed gradient's root


# ---- the concordance index of interval-censored times ---------------------------------------
@pytest.mark.parametrize("seed", [0, 1])
def test_interval_cindex_is_the_count_of_sure_pairs(seed):
    rng = np.random.default_rng(seed)
    n = 120
    t = rng.integers(1, 20, n).astype(float)  # ties
    kind = rng.integers(0, 4, n)
    lower = np.where(kind == 2, 0.0, t)
    upper = np.select([kind == 0, kind == 1, kind == 2], [t, np.inf, t], t + rng.integers(
        1, 5, n))
    risk = np.round(rng.normal(size=n) - 0.05 * t, 1)
    w = rng.uniform(0.2, 3.0, n)
    y = np.column_stack((lower, upper))
    assert concordance_index(y, risk, w) == pytest.approx(
        brute_interval_cindex(lower, upper, risk, w), rel=1e-12)
    # right-censored bounds are Harrell's C of the signed times
    signed = np.where(rng.random(n) < 0.6, t, -t)
    assert concordance_index(aft_bounds(signed), risk, w) == pytest.approx(
        concordance_index(signed, risk, w), rel=1e-12)


# ---- train() and the estimator -------------------------------------------------------------
def test_estimator_train_and_labels_agree(tmp_path):
    X, time, event = aft_data(700, seed=13)
    structured = np.empty(time.size, dtype=[("event", bool), ("time", float)])
    structured["event"], structured["time"] = event, time
    upper = np.where(event, time, np.inf)
    params = dict(n_estimators=40, learning_rate=0.1, random_state=0,
                  aft_loss_distribution="logistic", aft_loss_distribution_scale=0.8)
    model = TreeBoostSurvival("aft", eval_metric=["aft-nloglik", "cindex"], **params).fit(
        X[:500], structured[:500], eval_set=[(X[500:], structured[500:])])
    pred = model.predict(X[500:])
    raw = model.predict(X[500:], raw_score=True)
    assert_allclose(pred, np.exp(raw), rtol=1e-15)  # predicted times
    # the true log times order these held-out rows at about 0.81 (noise and censoring)
    assert model.score(X[500:], structured[500:]) == concordance_index(
        aft_bounds(structured[500:]), -raw) > 0.72
    log = model.evals_result_["validation_0"]
    assert log["cindex"][-1] == pytest.approx(model.score(X[500:], structured[500:]))
    assert log["aft-nloglik"][-1] < log["aft-nloglik"][0]
    assert log["aft-nloglik"][-1] == pytest.approx(aft_negative_log_likelihood(
        aft_bounds(structured[500:]), raw, distribution="logistic", scale=0.8), rel=1e-12)
    # the same labels as lower and upper bounds, as signed times, and through train()
    same = TreeBoostSurvival("aft", **params).fit(X[:500], time[:500], y_upper=upper[:500])
    assert_array_equal(same.predict(X[500:]), pred)
    signed = signed_times(structured)
    assert_array_equal(TreeBoostSurvival("aft", **params).fit(X[:500], signed[:500])
                       .predict(X[500:]), pred)
    booster = train({"loss": "aft", **params},
                    Dataset(X[:500], time[:500], label_upper_bound=upper[:500]))
    assert_allclose(booster.predict_raw(X[500:])[:, 0], raw, rtol=1e-12)
    model.save_model(tmp_path / "aft.json")
    loaded = load_model(tmp_path / "aft.json")
    assert type(loaded) is TreeBoostSurvival
    assert_array_equal(loaded.predict(X[500:]), pred)
    with pytest.raises(ValueError, match="predict_hazard_ratio is defined for loss='cox'"):
        model.predict_hazard_ratio(X[:5])


def test_interval_censored_labels_through_y_upper():
    # every time known only to the week: [floor(t), floor(t) + 1] days, 0 days left-censored
    X, time, _ = aft_data(1200, seed=14)
    days = 3.0 * time
    lower, upper = np.floor(days), np.floor(days) + 1.0
    assert (lower == 0).any()
    assert (lower > 0).any()
    model = TreeBoostSurvival("aft", n_estimators=60, learning_rate=0.1, random_state=0,
                              eval_metric="aft-nloglik", n_iter_no_change=10)
    model.fit(X[:900], lower[:900], y_upper=upper[:900],
              eval_set=[(X[900:], np.column_stack((lower, upper))[900:])])
    held_out = np.column_stack((lower, upper))[900:]
    log = model.evals_result_["validation_0"]["aft-nloglik"]
    assert min(log) < log[0] - 0.2  # it learns the intervals
    # the predicted times order the intervals nearly as the noise-free log times do
    # (0.878 on these rows, the model's 0.868: within the noise of 300 rows)
    oracle = concordance_index(held_out, -(X[900:, 0] - 0.5 * X[900:, 1]))
    assert model.score(X[900:], held_out) > oracle - 0.03
    # and the predicted days are the right scale: the median ratio to the truth near 1
    assert 0.7 < np.median(model.predict(X[900:]) / days[900:]) < 1.4
    # the same model from train() with label_upper_bound (the early-stopping set as a
    # validation Dataset with its bounds)
    params = {"loss": "aft", "n_estimators": 60, "learning_rate": 0.1, "random_state": 0,
              "eval_metric": "aft-nloglik", "n_iter_no_change": 10}
    train_set = Dataset(X[:900], lower[:900], label_upper_bound=upper[:900])
    booster = train(params, train_set, valid_sets=[Dataset(
        X[900:], lower[900:], label_upper_bound=upper[900:], reference=train_set)])
    assert_allclose(booster.predict_raw(X[900:])[:, 0],
                    model.predict(X[900:], raw_score=True), rtol=1e-12)


# ---- against XGBoost's survival:aft on public data -------------------------------------------
def _load(name):
    datasets = pytest.importorskip("sksurv.datasets")
    X, labels = getattr(datasets, name)()
    X = X.apply(lambda c: c if c.dtype.kind in "if" else c.astype("category").cat.codes)
    return X.to_numpy(float), labels


@pytest.mark.parametrize(("name", "distribution"), [
    ("load_whas500", "normal"), ("load_whas500", "logistic"), ("load_whas500", "extreme"),
    ("load_gbsg2", "normal")])
def test_concordance_matches_xgboost_survival_aft(name, distribution):
    xgb = pytest.importorskip("xgboost")
    from sklearn.model_selection import train_test_split

    X, labels = _load(name)
    ours, theirs = [], []
    for seed in range(3):  # held-out splits of 30%: their mean, less noisy than one
        Xa, Xb, ya, yb = train_test_split(X, labels, test_size=0.3, random_state=seed)
        model = TreeBoostSurvival("aft", learning_rate=0.05, n_estimators=100, max_depth=3,
                                  max_leaf_nodes=None, min_samples_leaf=1, reg_lambda=1.0,
                                  min_child_weight=1.0, aft_loss_distribution=distribution,
                                  random_state=0).fit(Xa, ya)
        bounds = aft_bounds(ya)
        data = xgb.DMatrix(Xa)
        data.set_float_info("label_lower_bound", bounds[:, 0])
        data.set_float_info("label_upper_bound", bounds[:, 1])
        # XGBoost starts from log(base_score) (0.5 by default): the same start as ours
        start = float(np.exp(model._booster.init_score[0]))
        booster = xgb.train({"objective": "survival:aft", "eta": 0.05, "max_depth": 3,
                             "reg_lambda": 1.0, "min_child_weight": 1.0, "tree_method": "hist",
                             "aft_loss_distribution": distribution,
                             "aft_loss_distribution_scale": 1.0, "base_score": start,
                             "max_bin": 256, "nthread": 1}, data, num_boost_round=100)
        ours.append(model.score(Xb, yb))
        theirs.append(concordance_index(aft_bounds(yb), -booster.predict(
            xgb.DMatrix(Xb), output_margin=True)))
    # measured (mean of the 3 splits): whas500 normal 0.7637 vs 0.7650, logistic 0.7819 vs
    # 0.7842, extreme 0.7760 vs 0.7759; gbsg2 normal 0.6875 vs 0.6875
    assert np.mean(ours) > 0.6
    assert abs(np.mean(ours) - np.mean(theirs)) <= 0.01, (ours, theirs)


# ---- bad input ---------------------------------------------------------------------------
def test_bad_input_names_the_parameter():
    X, time, event = aft_data(60, seed=15)
    upper = np.where(event, time, np.inf)
    with pytest.raises(ValueError, match=r"y_upper holds 1 NaN value\(s\) or bound\(s\) below y"):
        TreeBoostSurvival("aft").fit(X, time, y_upper=np.where(np.arange(60) == 3, 0.5 * time,
                                                               upper))
    with pytest.raises(ValueError, match=r"y holds 2 negative time\(s\)"):
        TreeBoostSurvival("aft").fit(X, np.where(np.arange(60) < 2, -1.0, time), y_upper=upper)
    with pytest.raises(ValueError, match="aft_loss_distribution='weibull' must be one of"):
        TreeBoostSurvival("aft", aft_loss_distribution="weibull").fit(X, time, y_upper=upper)
    with pytest.raises(ValueError, match="aft_loss_distribution='weibull' must be one of"):
        get_loss("aft", aft_loss_distribution="weibull")
    with pytest.raises(ValueError, match=r"aft_loss_distribution_scale=0\.0 must be a float"):
        train({"loss": "aft", "aft_loss_distribution_scale": 0.0}, Dataset(X, time))
    with pytest.raises(ValueError, match="y_upper gives interval-censored times to loss='aft'"):
        TreeBoostSurvival("cox").fit(X, time, y_upper=upper)
    # train(): the upper bounds checked by the Dataset, the times by the loss
    with pytest.raises(ValueError, match=r"label_upper_bound holds a bound below label at 1"):
        Dataset(X, time, label_upper_bound=np.where(np.arange(60) == 7, 0.0, upper))
    with pytest.raises(ValueError, match="label_upper_bound holds NaN"):
        Dataset(X, time, label_upper_bound=np.full(60, np.nan))
    with pytest.raises(ValueError, match=r"y holds 1 negative time\(s\)"):
        train({"loss": "aft"}, Dataset(X, np.where(np.arange(60) == 0, -1.0, time),
                                       label_upper_bound=upper))
    with pytest.raises(ValueError, match="has a label_upper_bound, which only loss='aft'"):
        train({"loss": "squared_error"}, Dataset(X, time, label_upper_bound=upper))
    with pytest.raises(ValueError, match="every row of positive weight is right-censored"):
        train({"loss": "aft"}, Dataset(X, time, label_upper_bound=np.full(60, np.inf)))
    # each survival metric is its loss's
    with pytest.raises(ValueError, match="eval_metric='aft-nloglik' needs loss='aft'"):
        TreeBoostSurvival("cox", n_estimators=2, eval_metric="aft-nloglik").fit(
            X, signed_times(np.where(event, time, -time)))
    with pytest.raises(ValueError, match="eval_metric='cox-nloglik' needs loss='cox'"):
        TreeBoostSurvival("aft", n_estimators=2, eval_metric="cox-nloglik").fit(
            X, time, y_upper=upper)


def test_training_over_a_collective_refuses_aft_by_name():
    # a member's F0 and line searches would gather one label column of two: refused
    from treeboost.binning import BinMapper
    from treeboost.collective import Collective

    rng = np.random.default_rng(5)
    X = rng.normal(size=(100, 3))
    time = np.exp(X[:, 0] + 0.3 * rng.normal(size=100))
    data = Dataset(X, time, label_upper_bound=np.where(X[:, 1] > 0, np.inf, time))
    data.construct(BinMapper(31, random_state=0).fit(X))
    with Collective.host(2, timeout=30) as host:
        with pytest.raises(ValueError, match="does not support loss 'aft'"):
            train({"loss": "aft", "n_estimators": 2, "random_state": 0}, data,
                  collective=host)
