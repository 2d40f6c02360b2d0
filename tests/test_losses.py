"""The mathematics of every registered loss (SPEC §1.1, §1.2, §2; DESIGN §4.4, §4.6).

Parametrised over ``available_losses()`` (plus softmax and extra parameter
values), so a newly registered loss is tested as soon as it is registered:
gradients and hessians against finite differences of ``pointwise``, F0
against ``scipy.optimize``, weights against repeated rows, each leaf line
search against its closed form on hand data, and a hypothesis property on
the training loss over stages.
"""

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from scipy.optimize import minimize, minimize_scalar
from scipy.special import softmax

from treeboost import TreeBoostClassifier, TreeBoostRegressor
from treeboost._kernels.losses import _SOFTMAX_BLOCK, softmax_shift
from treeboost.binning import BinMapper
from treeboost.booster import Booster, BoostingParams
from treeboost.grower import GrowerParams
from treeboost.losses import available_losses, get_loss, weighted_quantile

#: extra parameter values per registry name; a name not listed runs with its defaults
VARIANTS = {
    "huber": [{"alpha": 0.9}, {"alpha": 0.5}],
    "quantile": [{"alpha": 0.9}, {"alpha": 0.25}],
    "tweedie": [{"power": 1.5}, {"power": 3.0}],
    "log_loss": [{"n_classes": 2}, {"n_classes": 3, "multiclass_step": "friedman"},
                 {"n_classes": 4, "multiclass_step": "newton"}],
    "exponential": [{"n_classes": 2}],
}
#: ranking losses are sums over pairs of a query, not over rows: tests/test_lambdarank.py
CASES = [(name, params) for name in available_losses()
         if name not in available_losses("ranking") and name not in available_losses("survival")
         for params in VARIANTS.get(name, [{}])]
IDS = [name + "".join(f"-{v}" for v in params.values()) for name, params in CASES]
#: losses whose trees grow on a unit hessian by design: their leaves are set by
#: a line search (median, quantile, Friedman's Huber step), not by Newton
UNIT_HESSIAN = {"absolute_error", "quantile", "huber"}


def make_loss(name, params):
    return get_loss(name, **params)


def make_target(loss, n, rng):
    """Targets in the loss's domain: labels, positive values (log link) or reals."""
    if loss.is_classification:
        n_classes = max(loss.n_outputs, 2)
        y = np.arange(n) % n_classes  # every class present
        return rng.permutation(y).astype(np.float64)
    if loss.link == "log":
        return rng.gamma(2.0, 1.5, size=n) + 0.05  # strictly positive for gamma, tweedie 3
    return rng.normal(3.0, 2.0, size=n)


def make_raw(loss, y, rng):
    """Raw scores near a sensible fit; |y - F| >= 0.2 keeps central differences of
    absolute and quantile losses off their kink at y == F (Huber's is C1 everywhere)."""
    n = y.size
    if loss.link == "log":
        return (np.log(y) + rng.normal(0.0, 0.5, n))[None, :]
    if loss.is_classification:
        return rng.normal(0.0, 1.0, (loss.n_outputs, n))
    offset = rng.uniform(0.2, 2.0, n) * rng.choice([-1.0, 1.0], n)
    return (y + offset)[None, :]


def pointwise_fn(loss, y, raw, w):
    """Row losses as a function of raw scores; Huber's delta frozen at this stage's value."""
    g = np.empty(raw.shape, dtype=np.float32)
    h = np.empty(raw.shape, dtype=np.float32)
    context = loss.gradient_hessian(y, raw, w, g, h)
    if loss.name == "huber":
        return (lambda r: loss.pointwise(y, r, delta=context)), g, h, context
    return (lambda r: loss.pointwise(y, r)), g, h, context


@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
def test_gradient_hessian_finite_differences(name, params):
    rng = np.random.default_rng(0)
    loss = make_loss(name, params)
    y = make_target(loss, 200, rng)
    raw = make_raw(loss, y, rng)
    w = rng.uniform(0.5, 2.0, y.size)
    f, g, h, _ = pointwise_fn(loss, y, raw, w)
    assert g.dtype == np.float32
    assert h.dtype == np.float32
    assert g.shape == raw.shape
    eps_g, eps_h = 1e-6, 1e-4
    for k in range(loss.n_outputs):
        e = np.zeros_like(raw)
        e[k] = 1.0
        fd_g = (f(raw + eps_g * e) - f(raw - eps_g * e)) / (2 * eps_g)
        fd_h = (f(raw + eps_h * e) - 2 * f(raw) + f(raw - eps_h * e)) / eps_h**2
        # rtol 1e-6: g is stored as float32 (relative rounding 6e-8); atol 1e-6 bounds the
        # central difference's rounding error, ~1e-16 * |L| / eps_g <~ 5e-9 for |L| <~ 50
        # (these data), and Huber's O(eps_g) error where |y - F| == delta
        assert_allclose(g[k], w * fd_g, rtol=1e-6, atol=1e-6)
        if name in UNIT_HESSIAN:
            assert_allclose(h[k], w, rtol=1e-7)  # w stored as float32: 6e-8 rounding
            continue
        factor = 1.0
        if loss.link == "softmax" and loss.multiclass_step == "friedman":
            K = loss.n_outputs
            factor = K / (K - 1.0)
        # the second difference's rounding error is ~4e-16 * |L| / eps_h^2 <~ 2e-6 for
        # |L| <~ 50 (these data) and its truncation error eps_h^2 / 12 * L'''' ~ 1e-9;
        # rtol 1e-5 covers float32 storage (6e-8) with margin: atol 5e-6
        assert_allclose(h[k], factor * w * fd_h, rtol=1e-5, atol=5e-6)


@pytest.mark.parametrize("step", ["friedman", "newton"])
def test_softmax_hessian_closed_form(step):
    K = 3
    loss = get_loss("log_loss", n_classes=K, multiclass_step=step)
    rng = np.random.default_rng(1)
    y = make_target(loss, 50, rng)
    raw = rng.normal(0.0, 2.0, (K, 50))
    w = rng.uniform(0.5, 2.0, 50)
    g = np.empty((K, 50), dtype=np.float32)
    h = np.empty((K, 50), dtype=np.float32)
    loss.gradient_hessian(y, raw, w, g, h)
    p = softmax(raw, axis=0)
    onehot = (np.arange(K)[:, None] == y[None, :]).astype(float)
    factor = K / (K - 1) if step == "friedman" else 1.0
    # float32 storage: relative rounding 6e-8, so 1e-6 leaves margin
    assert_allclose(g, w * (p - onehot), rtol=1e-6, atol=1e-7)
    assert_allclose(h, factor * w * p * (1 - p), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_softmax_shift_is_numpys(n_threads):
    # the row maximum subtracted on every thread must give NumPy's bits, and a row
    # with a NaN score NaN throughout (np.max's NaN), over several blocks of rows
    rng = np.random.default_rng(4)
    n = 2 * _SOFTMAX_BLOCK + 77
    raw = rng.normal(0.0, 30.0, (4, n))
    raw[2, 5] = np.nan
    raw[0, 9] = np.nan
    raw[1, 11] = np.inf
    raw[3, 12] = -np.inf
    raw[:, 13] = -np.inf
    out = np.empty_like(raw)
    previous = numba.get_num_threads()
    try:
        numba.set_num_threads(min(n_threads, numba.config.NUMBA_NUM_THREADS))
        with np.errstate(invalid="ignore"):
            softmax_shift(raw, out)
            expected = raw - raw.max(axis=0)
    finally:
        numba.set_num_threads(previous)
    np.testing.assert_array_equal(out, expected)  # NaN where NaN
    assert np.isnan(out[:, 5]).all()
    assert np.isnan(out[:, 9]).all()


def test_softmax_gradients_the_same_either_path():
    # many scores go through the parallel shift, few through NumPy: the same bits (the
    # fit's plan sets the loss's parallel_shift_scores, Booster.fit)
    loss = get_loss("log_loss", n_classes=4)
    rng = np.random.default_rng(5)
    y = make_target(loss, 3000, rng)
    raw = rng.normal(0.0, 5.0, (4, 3000))
    w = rng.uniform(0.5, 2.0, 3000)
    out = []
    for limit in (0, 10**9):
        loss.parallel_shift_scores = limit
        g = np.empty((4, 3000), dtype=np.float32)
        h = np.empty((4, 3000), dtype=np.float32)
        loss.gradient_hessian(y, raw, w, g, h)
        out.append((g, h))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])


def test_huber_delta_is_alpha_quantile_of_abs_residuals():
    loss = get_loss("huber", alpha=0.8)
    rng = np.random.default_rng(2)
    y = rng.normal(size=101)
    raw = rng.normal(size=(1, 101))
    w = rng.uniform(0.5, 2.0, 101)
    g = np.empty((1, 101), dtype=np.float32)
    h = np.empty((1, 101), dtype=np.float32)
    delta = loss.gradient_hessian(y, raw, w, g, h)
    d = np.abs(y - raw[0])

    def pinball(c):
        return np.sum(w * np.where(d > c, 0.8 * (d - c), 0.2 * (c - d)))

    # the weighted alpha-quantile minimises the pinball loss: no data point does better
    # (1e-12 on sums of order 10: float64 rounding of the sums only)
    assert all(pinball(delta) <= pinball(c) + 1e-12 for c in d)
    # g = clip(F - y, -delta, delta) * w, stored as float32 (relative rounding 6e-8)
    assert_allclose(g[0], w * np.clip(raw[0] - y, -delta, delta), rtol=1e-6, atol=1e-7)


# ---- F0 -------------------------------------------------------------------------------------
def huber_objective(loss, y, w):
    """Huber's F0 objective: delta is fixed from the residuals about the weighted median."""
    med = weighted_quantile(y, w, 0.5)
    delta = weighted_quantile(np.abs(y - med), w, loss.alpha)
    return lambda c: np.average(loss.pointwise(y, np.full((1, y.size), c), delta), weights=w)


@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
def test_init_score_is_scipy_argmin(name, params):
    rng = np.random.default_rng(3)
    loss = make_loss(name, params)
    y = make_target(loss, 101, rng)  # odd n, continuous weights: a unique minimiser
    w = rng.uniform(0.5, 2.0, y.size)
    f0 = loss.init_score(y, w)
    assert f0.shape == (loss.n_outputs,)
    if loss.link == "softmax":
        prior = np.bincount(y.astype(int), weights=w, minlength=loss.n_outputs) / w.sum()
        assert_allclose(softmax(f0), prior, rtol=1e-12)  # closed form vs closed form
        res = minimize(lambda c: loss(y, np.repeat(c[:, None], y.size, axis=1), w),
                       np.zeros(loss.n_outputs), method="BFGS", options={"gtol": 1e-10})
        # BFGS stops on the gradient norm; probabilities to 1e-6 is ample for that
        assert_allclose(softmax(res.x), softmax(f0), atol=1e-6)
        return
    if name == "huber":
        objective = huber_objective(loss, y, w)
    else:
        def objective(c):
            return loss(y, np.full((1, y.size), c), w)
    res = minimize_scalar(objective, bracket=(-1.0, 1.0), method="brent",
                          options={"xtol": 1e-12})
    # F0 must be no worse than scipy's minimiser (up to float64 rounding of the mean)
    assert objective(f0[0]) <= res.fun + 1e-12 * abs(res.fun)
    # Brent locates a smooth minimum only to ~sqrt(machine eps) ~ 1.5e-8 relative, since the
    # objective is flat to second order there; 1e-6 on values of order 1 leaves margin
    assert_allclose(f0[0], res.x, atol=1e-6)


@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
def test_integer_weights_are_repeated_rows(name, params):
    rng = np.random.default_rng(4)
    loss = make_loss(name, params)
    y = make_target(loss, 60, rng)
    raw = make_raw(loss, y, rng)
    w = rng.integers(1, 4, y.size).astype(np.float64)
    rep = np.repeat(np.arange(y.size), w.astype(int))
    ones = np.ones(rep.size)
    # same sums in another order: float64 rounding only
    assert_allclose(loss(y, raw, w), loss(y[rep], raw[:, rep], ones), rtol=1e-12)
    assert_allclose(loss(y, raw), loss(y, raw, np.ones(y.size)), rtol=1e-12)
    # Huber's F0 comes from a bounded Brent search (xatol 1e-10): rounding differences in
    # its objective may move where it stops by about that much; the others are closed forms
    assert_allclose(loss.init_score(y, w), loss.init_score(y[rep], ones), rtol=1e-12,
                    atol=1e-9 if name == "huber" else 1e-12)


# ---- leaf line searches on hand data ----------------------------------------------------------
def leaf_values(loss, y, raw, w, groups):
    """``loss.leaf_values`` on the partition ``groups`` (lists of row indices)."""
    raw = np.atleast_2d(np.asarray(raw, dtype=np.float64))
    y, w = np.asarray(y, dtype=np.float64), np.asarray(w, dtype=np.float64)
    g = np.empty(raw.shape, dtype=np.float32)
    h = np.empty(raw.shape, dtype=np.float32)
    context = loss.gradient_hessian(y, raw, w, g, h)
    indices = np.concatenate(groups).astype(np.uint32)
    stops = np.cumsum([len(gr) for gr in groups])
    starts = stops - np.array([len(gr) for gr in groups])
    sum_g = np.array([g[0, gr].sum(dtype=np.float64) for gr in groups])
    sum_h = np.array([h[0, gr].sum(dtype=np.float64) for gr in groups])
    return loss.leaf_values(y, raw, w, indices, starts, stops, sum_g, sum_h, context, 0.0, 0.0)


def test_squared_error_leaf_is_mean_residual():
    y, raw = [1.0, 2.0, 7.0, 4.0, 10.0], [0.0, 1.0, 1.0, 2.0, 2.0]
    # residuals [1, 1, 6 | 2, 8]: means 8/3 and 5; gradients pass through float32
    assert_allclose(leaf_values(get_loss("squared_error"), y, raw, np.ones(5),
                                [[0, 1, 2], [3, 4]]), [8 / 3, 5.0], rtol=1e-7)


@pytest.mark.parametrize(("residuals", "weights", "expected"), [
    ([3.0, 1.0, 4.0, 1.0, 5.0], [1, 1, 1, 1, 1], 3.0),  # odd: the middle value
    ([3.0, 1.0, 4.0, 1.0, 5.0, 9.0], [1, 1, 1, 1, 1, 1], 3.5),  # even: (3 + 4) / 2
    ([1.0, 2.0, 3.0], [1, 1, 3], 3.0),  # weighted: 3 holds 3/5 of the weight
    ([1.0, 2.0, 3.0], [2, 1, 3], 2.5),  # weight 3 | 3: every c in [2, 3] is optimal
])
def test_absolute_error_leaf_is_weighted_median(residuals, weights, expected):
    r, w = np.array(residuals), np.array(weights, dtype=float)
    raw = np.linspace(-1.0, 1.0, r.size)  # F is not zero: the median is of y - F
    value = leaf_values(get_loss("absolute_error"), r + raw, raw, w, [np.arange(r.size)])
    assert value[0] == expected  # a median is an order statistic or a midpoint: exact
    brute = min(np.sum(w * np.abs(r - c)) for c in r)
    assert np.sum(w * np.abs(r - value[0])) == pytest.approx(brute, rel=1e-12)


@pytest.mark.parametrize(("alpha", "expected"), [(0.25, 20.0), (0.9, 70.0), (0.5, 40.0)])
def test_quantile_leaf_is_alpha_quantile(alpha, expected):
    r = np.array([50.0, 10.0, 70.0, 30.0, 20.0, 60.0, 40.0])
    # 7 rows: the alpha-quantile is the smallest r with rank >= 7 alpha (1.75, 6.3, 3.5)
    value = leaf_values(get_loss("quantile", alpha=alpha), r, np.zeros(7), np.ones(7),
                        [np.arange(7)])
    assert value[0] == expected

    def pinball(c):
        return np.sum(np.where(r > c, alpha * (r - c), (alpha - 1) * (r - c)))

    assert pinball(expected) == min(pinball(c) for c in r)


@pytest.mark.parametrize(("weights", "expected"), [
    # median 2; deviations [-2, -1, 0, 3, 7] clipped to [-3, 3]: [-2, -1, 0, 3, 3], mean 3/5
    ([1, 1, 1, 1, 1], 2.6),
    # weighted median 2 (cumulative [1, 2, 4, 5, 6] passes 3 at r = 2); weighted mean of
    # the clipped deviations (-2 - 1 + 0 + 3 + 3) / 6 = 1/2
    ([1, 1, 2, 1, 1], 2.5),
])
def test_huber_leaf_is_friedman_step(weights, expected):
    loss = get_loss("huber", alpha=0.9)
    r = np.array([0.0, 1.0, 2.0, 5.0, 9.0])
    delta = 3.0  # the stage context, passed as gradient_hessian would
    value = loss.leaf_values(r, np.zeros((1, 5)), np.array(weights, dtype=float),
                             np.arange(5, dtype=np.uint32), np.array([0]), np.array([5]),
                             None, None, delta, 0.0, 0.0)
    assert_allclose(value, [expected], rtol=1e-15)  # a few float64 operations


@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
def test_leaf_values_integer_weights_are_repeated_rows(name, params):
    rng = np.random.default_rng(5)
    loss = make_loss(name, params)
    y = make_target(loss, 40, rng)
    raw = make_raw(loss, y, rng)
    w = rng.integers(1, 4, y.size).astype(np.float64)
    rep = np.repeat(np.arange(y.size), w.astype(int))
    groups = [np.arange(0, 15), np.arange(15, 40)]
    rep_groups = [np.flatnonzero(rep < 15), np.flatnonzero(rep >= 15)]
    # float32 gradients summed in another grouping: ~1e-7 relative
    assert_allclose(leaf_values(loss, y, raw, w, groups),
                    leaf_values(loss, y[rep], raw[:, rep], np.ones(rep.size), rep_groups),
                    rtol=1e-6, atol=1e-9)


def test_log_loss_leaf_is_newton_step():
    y = [1.0, 1.0, 0.0, 1.0]
    raw = [0.0, 0.0, np.log(3.0), -np.log(3.0)]
    # p = [1/2, 1/2, 3/4, 1/4]: sum(y - p) = 1, sum p(1 - p) = 7/8, leaf = 8/7
    value = leaf_values(get_loss("log_loss", n_classes=2), y, raw, np.ones(4), [np.arange(4)])
    assert_allclose(value, [8 / 7], rtol=1e-6)  # from float32 gradients: ~1e-7


def fit_one_stage_softmax(X, y, step):
    loss = get_loss("log_loss", n_classes=3, multiclass_step=step)
    grower = GrowerParams(max_leaf_nodes=2, min_samples_leaf=1, min_child_weight=0.0)
    mapper = BinMapper().fit(X)
    booster = Booster(loss, mapper, BoostingParams(n_estimators=1, learning_rate=1.0,
                                                   grower=grower))
    booster.fit(mapper.transform(X), y, np.ones(y.size), 0)
    return booster.predict_raw(X) - booster.init_score  # leaf value of each row and class


@pytest.mark.parametrize("step", ["friedman", "newton"])
def test_softmax_leaf_closed_form(step):
    X = np.array([[0.0], [0.0], [0.0], [1.0], [1.0], [1.0]])
    y = np.array([0.0, 0.0, 1.0, 1.0, 2.0, 2.0])
    # priors 1/3: p = 1/3 everywhere. Leaf x=0 for class 0: r = [2/3, 2/3, -1/3], sum 1;
    # |r|(1 - |r|) = p(1 - p) = 2/9 per row, sum 2/3. friedman: (2/3) * 1 / (2/3) = 1;
    # newton: 1 / (2/3) = 3/2. Class 1 leaves have sum r = 0, class 2 mirrors class 0.
    leaf = {"friedman": 1.0, "newton": 1.5}[step]
    expected = np.array([[leaf, 0.0, -leaf]] * 3 + [[-leaf, 0.0, leaf]] * 3)
    # from float32 gradient sums of thirds: ~1e-7 relative
    assert_allclose(fit_one_stage_softmax(X, y, step), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("step", ["friedman", "newton"])
def test_softmax_leaf_formula_unequal_priors(step):
    X = np.repeat([[0.0], [1.0]], [4, 5], axis=0)
    y = np.array([0, 0, 0, 1, 1, 2, 2, 2, 0], dtype=float)
    p = np.bincount(y.astype(int), minlength=3) / y.size  # F0 = log priors
    got = fit_one_stage_softmax(X, y, step)
    for k in range(3):
        for rows in (np.arange(4), np.arange(4, 9)):
            r = (y[rows] == k) - p[k]
            if step == "friedman":
                value = (2 / 3) * r.sum() / np.sum(np.abs(r) * (1 - np.abs(r)))
            else:
                value = r.sum() / np.sum(np.full(rows.size, p[k] * (1 - p[k])))
            # float32 gradients summed in float64: ~1e-7 relative
            assert_allclose(got[rows, k], value, rtol=1e-6, atol=1e-7)


# ---- the training loss over stages ----------------------------------------------------------
#: leaf values that move each leaf towards (lr < 1) or onto (lr = 1) the exact minimiser of
#: the leaf's loss: the training loss cannot increase (convexity). Ridge-shrunk means
#: (reg_lambda > 0) are a fraction of the mean residual, so the same holds.
EXACT_STEP = ["squared_error", "absolute_error", "quantile"]
#: a Newton step is not a line search: with lr = 1 it can overshoot (e.g. gamma with a
#: leaf of small targets: step -(n - T)/T with T = sum y exp(-F) tiny), so for these the
#: theorem checked is that every stage's tree is a descent direction, sum g * step <= 0.
#: Huber is left out: its delta, and so the loss itself, changes every stage, and Friedman's
#: step is one M-step, not the minimiser of the leaf's Huber loss.
NEWTON_STEP = ["log_loss", "log_loss3", "exponential", "poisson", "gamma", "tweedie"]


@settings(max_examples=25, deadline=None, derandomize=True)
@given(loss_name=st.sampled_from(EXACT_STEP + NEWTON_STEP), seed=st.integers(0, 2**31),
       n=st.integers(30, 200), n_features=st.integers(1, 4),
       max_leaf_nodes=st.integers(2, 16), min_samples_leaf=st.integers(1, 20),
       learning_rate=st.floats(0.01, 1.0), reg_lambda=st.sampled_from([0.0, 0.5, 5.0]),
       alpha=st.floats(0.05, 0.95))
def test_training_loss_over_stages(loss_name, seed, n, n_features, max_leaf_nodes,
                                   min_samples_leaf, learning_rate, reg_lambda, alpha):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    common = dict(n_estimators=8, learning_rate=learning_rate, max_leaf_nodes=max_leaf_nodes,
                  min_samples_leaf=min_samples_leaf, reg_lambda=reg_lambda, subsample=1.0,
                  random_state=seed)
    if loss_name in ("log_loss", "log_loss3", "exponential"):
        y = (X[:, 0] + rng.normal(size=n) > 0).astype(float)
        if loss_name == "log_loss3":
            y = y + (X[:, -1] > 0.5)
        est = TreeBoostClassifier(loss=loss_name.rstrip("3"), **common).fit(X, y)
        y = np.searchsorted(est.classes_, y)  # the labels the loss sees
    else:
        y = rng.gamma(2.0, np.exp(0.5 * X[:, 0]))
        est = TreeBoostRegressor(loss=loss_name, alpha=alpha, **common).fit(X, y)
    booster = est.booster_
    loss, y = booster.loss, y.astype(float)
    raws = [np.repeat(booster.init_score[:, None], n, axis=1)]
    raws += [r.T for r in booster.staged_predict_raw(X)]
    values = np.array([loss(y, r) for r in raws])
    if loss_name in EXACT_STEP:
        # exact arithmetic gives values[m+1] <= values[m]; leaves computed from float32
        # gradient sums can miss the optimum by ~1e-7 relative, which costs ~1e-14 in loss
        assert np.all(np.diff(values) <= 1e-9 * values[:-1] + 1e-12), values
        return
    w = np.ones(n)
    for before, after in zip(raws[:-1], raws[1:], strict=True):
        g = np.empty(before.shape, dtype=np.float32)
        h = np.empty(before.shape, dtype=np.float32)
        loss.gradient_hessian(y, before, w, g, h)
        step = after - before
        slope = np.sum(g * step)  # = -lr * sum_j G_j^2 / (H_j + lambda) <= 0
        # rounding of the sums: 1e-9 of the terms' magnitude
        assert slope <= 1e-9 * np.sum(np.abs(g * step)) + 1e-12
