"""Survival: the Cox loss, its metrics and ``TreeBoostSurvival`` (issue 37, part 4).

The loss against closed forms written here independently of the library (Breslow's
partial likelihood summed over the risk sets row by row, its derivatives by finite
differences, a tiny case by hand), the concordance index against a brute-force count
of the pairs and against scikit-survival and lifelines where installed, the estimator
against XGBoost's ``survival:cox`` on public data sets those packages ship, and its
refusals of bad labels.
"""

import math
import threading

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from treeboost import Dataset, TreeBoostRegressor, TreeBoostSurvival, load_model, train
from treeboost.binning import BinMapper
from treeboost.collective import Collective
from treeboost.losses import available_losses, get_loss
from treeboost.survival import concordance_index, cox_negative_log_likelihood, signed_times


# ---- independent references --------------------------------------------------------------
def breslow_nll(y, f, w):
    """-sum_i w_i d_i (f_i - log sum_{j: t_j >= t_i} w_j exp(f_j)): row by row, O(n^2)."""
    t, terms = np.abs(y), []
    for i in range(y.size):
        if y[i] > 0:
            at_risk = math.fsum(w[j] * math.exp(f[j]) for j in range(y.size) if t[j] >= t[i])
            terms.append(-w[i] * (f[i] - math.log(at_risk)))
    return math.fsum(terms)


def brute_cindex(y, risk, w=None):
    """Harrell's C by looking at every ordered pair (scikit-survival's comparable pairs)."""
    w = np.ones(y.size) if w is None else w
    t, event = np.abs(y), y > 0
    concordant = comparable = 0.0
    for i in range(y.size):
        if not event[i]:
            continue
        for j in range(y.size):
            if t[j] > t[i] or (t[j] == t[i] and not event[j]):
                pair = w[i] * w[j]
                comparable += pair
                concordant += pair * (1.0 if risk[i] > risk[j] else
                                      0.5 if risk[i] == risk[j] else 0.0)
    return concordant / comparable


def survival_data(n, seed, ties=True, censored=0.4):
    """X and signed times from a proportional hazards model, some censored, some tied."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    risk = X[:, 0] - 0.7 * X[:, 1] + 0.5 * np.sin(2 * X[:, 2])
    time = rng.exponential(np.exp(-risk))
    if ties:
        time = np.ceil(time * 4) / 4  # about a tenth of the distinct values
    event = rng.random(n) >= censored
    return X, np.where(event, time, -time)


def grad_hess(loss, y, f, w):
    g = np.empty((1, y.size), dtype=np.float32)
    h = np.empty((1, y.size), dtype=np.float32)
    loss.gradient_hessian(y, f[None, :], w, g, h)
    return g[0].astype(np.float64), h[0].astype(np.float64)


# ---- the loss ---------------------------------------------------------------------------
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ties", [False, True])
def test_gradient_hessian_are_the_partial_likelihoods_derivatives(ties, weighted):
    X, y = survival_data(60, seed=1, ties=ties)
    assert (np.unique(np.abs(y)).size < y.size) == ties
    assert (y < 0).sum() > 10  # censored rows
    rng = np.random.default_rng(2)
    f = rng.normal(0.0, 1.0, y.size)
    w = rng.uniform(0.3, 3.0, y.size) if weighted else np.ones(y.size)
    g, h = grad_hess(get_loss("cox"), y, f, w)
    eps_g, eps_h = 1e-6, 1e-3
    base = breslow_nll(y, f, w)
    for k in range(y.size):
        e = np.zeros(y.size)
        e[k] = 1.0
        fd_g = (breslow_nll(y, f + eps_g * e, w) - breslow_nll(y, f - eps_g * e, w)) / (2 * eps_g)
        fd_h = (breslow_nll(y, f + eps_h * e, w) - 2 * base
                + breslow_nll(y, f - eps_h * e, w)) / eps_h**2
        # float32 storage (6e-8 relative); the differences' rounding ~1e-16 |L| / eps
        # (|L| ~ 100: about 1e-8 for g and for h) and the truncation of h's, eps_h^2 / 12
        # times L's fourth derivative (about 1e-7)
        assert g[k] == pytest.approx(fd_g, rel=1e-5, abs=1e-6), k
        assert h[k] == pytest.approx(fd_h, rel=1e-5, abs=1e-6), k
    assert (h >= 0).all()
    # the metric is the same sum, per unit of event weight
    events = float(np.sum(w * (y > 0)))
    assert cox_negative_log_likelihood(y, f, w) == pytest.approx(
        breslow_nll(y, f, w) / events, rel=1e-12)


def test_weights_are_repeated_rows():
    _, y = survival_data(40, seed=3)
    f = np.random.default_rng(4).normal(size=y.size)
    w = np.random.default_rng(5).integers(1, 4, size=y.size).astype(float)
    g, _ = grad_hess(get_loss("cox"), y, f, w)
    rows = np.repeat(np.arange(y.size), w.astype(int))
    g_rep, _ = grad_hess(get_loss("cox"), y[rows], f[rows], np.ones(rows.size))
    assert_allclose(g, np.bincount(rows, weights=g_rep), rtol=1e-5, atol=1e-6)
    # (a weighted row's hessian is the second derivative in its one score: the copies'
    # diagonal hessians summed leave out their cross terms; the finite differences above
    # check it)
    assert cox_negative_log_likelihood(y, f, w) == pytest.approx(
        cox_negative_log_likelihood(y[rows], f[rows]), rel=1e-12)


def test_partial_likelihood_by_hand():
    # times 1, 2, 2, 3, 4: the two events at 2 tie (Breslow: one risk set for both),
    # the row at 3 is censored, the last event is alone in its risk set
    y = np.array([1.0, 2.0, 2.0, -3.0, 4.0])
    f = np.array([0.5, -0.2, 0.1, 0.3, 0.0])
    e = [math.exp(v) for v in f]
    s1 = e[0] + e[1] + e[2] + e[3] + e[4]
    s2 = e[1] + e[2] + e[3] + e[4]
    s4 = e[4]
    by_hand = -((0.5 - math.log(s1)) + (-0.2 - math.log(s2)) + (0.1 - math.log(s2))
                + (0.0 - math.log(s4))) / 4
    assert cox_negative_log_likelihood(y, f) == pytest.approx(by_hand, rel=1e-14)
    loss = get_loss("cox")
    assert loss(y, f[None, :]) == pytest.approx(by_hand, rel=1e-14)  # the "loss" metric
    # the gradient of the tied rows includes both events at 2: row 1's is
    # e1 (1/s1 + 2/s2) - 1
    g, _ = grad_hess(loss, y, f, np.ones(5))
    assert g[1] == pytest.approx(e[1] * (1 / s1 + 2 / s2) - 1, rel=1e-6)
    assert g[3] == pytest.approx(e[3] * (1 / s1 + 2 / s2), rel=1e-6)  # censored: no -1
    # a constant log hazard changes nothing (F0 = 0)
    assert cox_negative_log_likelihood(y, f + 7.5) == pytest.approx(by_hand, rel=1e-12)
    assert_array_equal(loss.init_score(y, np.ones(5)), [0.0])


def test_stage_context_of_every_row_gives_each_rows_gradients():
    # over a collective a member computes its rows' gradients from the sums of every row
    _, y = survival_data(300, seed=6)
    f = np.random.default_rng(7).normal(size=y.size)
    w = np.random.default_rng(8).uniform(0.5, 2.0, y.size)
    loss = get_loss("cox")
    g, h = grad_hess(loss, y, f, w)
    context = loss.stage_context(y, f[None, :], w)
    part = np.arange(50, 170)
    gp = np.empty((1, part.size), dtype=np.float32)
    hp = np.empty((1, part.size), dtype=np.float32)
    loss.gradient_hessian(y[part], f[None, part], w[part], gp, hp, context=context)
    assert_array_equal(gp[0], g[part].astype(np.float32))
    assert_array_equal(hp[0], h[part].astype(np.float32))


def test_huge_log_hazards_do_not_overflow():
    _, y = survival_data(50, seed=9)
    f = np.random.default_rng(10).normal(size=y.size) * 300.0  # exp(900) is inf
    g, h = grad_hess(get_loss("cox"), y, f, np.ones(y.size))
    assert np.isfinite(g).all()
    assert np.isfinite(h).all()
    assert np.isfinite(cox_negative_log_likelihood(y, f))


# ---- the concordance index ----------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cindex_is_the_count_of_concordant_pairs(seed):
    rng = np.random.default_rng(seed)
    n = 150
    time = rng.integers(1, 30, n).astype(float)  # tied times
    y = np.where(rng.random(n) < 0.6, time, -time)
    risk = np.round(rng.normal(size=n) - 0.05 * time, 1)  # tied risks
    assert concordance_index(y, risk) == pytest.approx(brute_cindex(y, risk), rel=1e-12)
    w = rng.uniform(0.2, 3.0, n)
    assert concordance_index(y, risk, w) == pytest.approx(brute_cindex(y, risk, w),
                                                          rel=1e-12)
    sksurv_metrics = pytest.importorskip("sksurv.metrics")
    theirs = sksurv_metrics.concordance_index_censored(y > 0, np.abs(y), risk)[0]
    assert concordance_index(y, risk) == pytest.approx(theirs, rel=1e-12)


def test_cindex_equals_lifelines():
    utils = pytest.importorskip("lifelines.utils")
    rng = np.random.default_rng(3)
    time = rng.integers(1, 40, 200).astype(float)
    y = np.where(rng.random(200) < 0.5, time, -time)
    risk = np.round(rng.normal(size=200) - 0.05 * time, 1)
    # lifelines scores survival times (higher: later event): the negated risk
    theirs = utils.concordance_index(np.abs(y), -risk, y > 0)
    assert concordance_index(y, risk) == pytest.approx(theirs, rel=1e-12)


def test_cindex_refuses_data_without_comparable_pairs():
    with pytest.raises(ValueError, match="y has no comparable pair"):
        concordance_index(np.array([-1.0, -2.0, 3.0]), np.zeros(3))


# ---- the estimator ------------------------------------------------------------------------
def test_survival_estimator_learns_and_predicts_log_hazards(tmp_path):
    X, y = survival_data(600, seed=11)
    Xt, yt = survival_data(400, seed=12)
    model = TreeBoostSurvival(n_estimators=60, learning_rate=0.1, random_state=0,
                              eval_metric=["cindex", "cox-nloglik"]).fit(X, y,
                                                                         eval_set=[(Xt, yt)])
    risk = model.predict(Xt)
    # the true log hazards order these held-out rows at 0.725 (ties and censoring)
    assert model.score(Xt, yt) == concordance_index(yt, risk) > 0.66
    assert_allclose(model.predict_hazard_ratio(Xt), np.exp(risk))
    log = model.evals_result_["validation_0"]
    assert log["cindex"][-1] == pytest.approx(model.score(Xt, yt))
    assert log["cox-nloglik"][-1] < log["cox-nloglik"][0]
    # scikit-survival's structured array gives the same model as signed times
    structured = np.array(list(zip(y > 0, np.abs(y), strict=True)),
                          dtype=[("status", bool), ("days", float)])
    same = TreeBoostSurvival(n_estimators=60, learning_rate=0.1, random_state=0).fit(
        X, structured)
    assert_array_equal(same.predict(Xt), risk)
    # train() with the one column of signed times, as XGBoost's survival:cox
    params = {"loss": "cox", "n_estimators": 60, "learning_rate": 0.1, "random_state": 0}
    booster = train(params, Dataset(X, y))
    assert_allclose(booster.predict_raw(Xt)[:, 0], risk, rtol=1e-12)
    assert_allclose(TreeBoostRegressor(**params).fit(X, y).predict(Xt), risk, rtol=1e-12)
    model.save_model(tmp_path / "cox.json")
    loaded = load_model(tmp_path / "cox.json")
    assert type(loaded) is TreeBoostSurvival
    assert_array_equal(loaded.predict(Xt), risk)


def test_survival_estimator_parameters():
    model = TreeBoostSurvival()
    assert model.loss == "cox"
    assert "alpha" not in model.get_params()
    assert set(model.get_params()) == set(TreeBoostRegressor().get_params()) - {"alpha",
                                                                                "power"}
    assert available_losses("survival") == ["cox", "aft"]
    X, y = survival_data(60, seed=13)
    with pytest.raises(ValueError, match="loss='squared_error' must be one of \\['cox', 'aft'\\]"):
        TreeBoostSurvival("squared_error").fit(X, y)
    with pytest.raises(ValueError, match="eval_metric='rmse' is not defined for survival"):
        TreeBoostSurvival(eval_metric="rmse").fit(X, y)
    with pytest.raises(ValueError, match="eval_metric='cindex' is not defined for regression"):
        TreeBoostRegressor(eval_metric="cindex").fit(X, y)


def _structured(event, time):
    return np.array(list(zip(event, time, strict=True)),
                    dtype=[("event", bool), ("time", float)])


@pytest.mark.parametrize(("make", "message"), [
    (lambda e, t: _structured(e, np.where(np.arange(t.size) == 3, -t, t)),
     r"y\['time'\] holds 1 time\(s\) <= 0"),
    (lambda e, t: _structured(np.zeros(t.size, bool), t),
     r"y\['event'\] has no observed event"),
    (lambda e, t: _structured(e, np.where(np.arange(t.size) == 5, np.nan, t)),
     r"y\['time'\] holds 1 NaN or infinite time"),
    (lambda e, t: np.where(np.arange(t.size) == 5, np.nan, np.where(e, t, -t)),
     "y holds 1 NaN or infinite survival time"),
    (lambda e, t: -t, r"y has no observed event \(every time is censored"),
    (lambda e, t: np.where(np.arange(t.size) == 2, 0.0, t), "y holds 1 survival time.* of 0"),
    (lambda e, t: np.array(list(zip(e, t, t, strict=True)),
                           dtype=[("e", bool), ("t", float), ("u", float)]),
     "y must be a structured array of two fields"),
])
def test_bad_labels_give_one_clear_error_naming_y(make, message):
    X, y = survival_data(50, seed=14)
    labels = make(y > 0, np.abs(y))
    with pytest.raises(ValueError, match=message):
        TreeBoostSurvival(n_estimators=2).fit(X, labels)
    if labels.dtype.names is None:  # train() checks the same (the Dataset NaN, as "label")
        with pytest.raises(ValueError, match=f"{message}|label contains NaN"):
            train({"loss": "cox", "n_estimators": 2}, Dataset(X, labels))


def test_signed_times_of_a_structured_array():
    labels = _structured([True, False, True], [3.0, 5.0, 1.5])
    assert_array_equal(signed_times(labels), [3.0, -5.0, 1.5])
    assert_array_equal(signed_times([2.0, -1.0]), [2.0, -1.0])


def test_cox_over_a_collective_is_one_process_model():
    X, y = survival_data(900, seed=15)
    weight = np.random.default_rng(16).uniform(0.5, 2.0, y.size)
    params = {"loss": "cox", "n_estimators": 8, "max_leaf_nodes": 8, "learning_rate": 0.3,
              "random_state": 1}
    bins = BinMapper(63, random_state=0).fit(X)
    single = train(params, Dataset(X, y, weight=weight).construct(bins))
    shards = np.array_split(np.arange(y.size), 3)
    host = Collective.host(3, timeout=30)
    results, errors = [None] * 3, []

    def member(rank):
        try:
            group = host if rank == 0 else Collective.join(host.address, rank, 3,
                                                           token=host.token, timeout=30)
            with group:
                s = shards[rank]
                results[rank] = train(params, Dataset(X[s], y[s], weight=weight[s])
                                      .construct(bins), collective=group)
        except Exception as exc:  # reported with the rank
            errors.append((rank, exc))

    threads = [threading.Thread(target=member, args=(r,)) for r in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    for booster in results:
        assert_allclose(booster.predict_raw(X), single.predict_raw(X), rtol=1e-9, atol=1e-12)


# ---- against XGBoost's survival:cox on public data -------------------------------------------
def _whas500():
    datasets = pytest.importorskip("sksurv.datasets")
    X, labels = datasets.load_whas500()
    X = X.apply(lambda c: c if c.dtype.kind in "if" else c.astype("category").cat.codes)
    return X.to_numpy(float), signed_times(labels)


def _gbsg2():
    datasets = pytest.importorskip("sksurv.datasets")
    X, labels = datasets.load_gbsg2()
    X = X.apply(lambda c: c if c.dtype.kind in "if" else c.astype("category").cat.codes)
    return X.to_numpy(float), signed_times(labels)


@pytest.mark.parametrize("load", [_whas500, _gbsg2], ids=["whas500", "gbsg2"])
def test_concordance_matches_xgboost_survival_cox(load):
    xgb = pytest.importorskip("xgboost")
    from sklearn.model_selection import train_test_split

    X, y = load()
    ours, theirs = [], []
    for seed in range(3):  # held-out splits of 30%: their mean, less noisy than one
        Xa, Xb, ya, yb = train_test_split(X, y, test_size=0.3, random_state=seed)
        model = TreeBoostSurvival(learning_rate=0.05, n_estimators=100, max_depth=3,
                                  max_leaf_nodes=None, min_samples_leaf=1, reg_lambda=1.0,
                                  min_child_weight=1.0, random_state=0).fit(Xa, ya)
        booster = xgb.train({"objective": "survival:cox", "eta": 0.05, "max_depth": 3,
                             "reg_lambda": 1.0, "min_child_weight": 1.0, "tree_method": "hist",
                             "max_bin": 256, "nthread": 1},
                            xgb.DMatrix(Xa, label=ya), num_boost_round=100)
        ours.append(model.score(Xb, yb))
        theirs.append(concordance_index(yb, booster.predict(xgb.DMatrix(Xb),
                                                            output_margin=True)))
    # measured: whas500 0.7738 vs 0.7771, gbsg2 0.6867 vs 0.6847 (mean of the 3 splits)
    assert np.mean(ours) > 0.58
    assert abs(np.mean(ours) - np.mean(theirs)) <= 0.01, (ours, theirs)
