"""rank_xendcg and pairwise (RankNet) gradients against brute-force twins, and training.

The twins follow the definitions, not the kernels' loops. rank_xendcg (LightGBM's, Bruch
et al. 2019), per query of n > 1 documents: rho = softmax(scores), phi_i = 2**label_i -
gamma_i, t1_i = rho_i - phi_i / max(1e-15, sum phi), then twice t_i = rho_i * (sum_j p_j -
p_i) with p_i = t_i / (1 - rho_i) of the previous order; gradient t1 + t2 + t3, hessian
rho_i (1 - rho_i). pairwise: for every pair with label_i > label_j, p = 1 / (1 +
exp(sigma (s_i - s_j))) moves g_i by -sigma p, g_j by +sigma p, both hessians by
sigma^2 p (1 - p).
"""

import math

import numpy as np
import pytest

from treeboost.losses import get_loss
from treeboost.losses.ranking import Pairwise, PairwiseContext, RankXENDCG, RankXENDCGContext


def _xendcg_twin(y, score, offsets, uniform):
    g = np.zeros(y.size)
    h = np.zeros(y.size)
    for a, b in zip(offsets[:-1], offsets[1:], strict=True):
        rows = list(range(a, b))
        if len(rows) <= 1:
            continue
        top = max(score[r] for r in rows)
        e = {r: math.exp(score[r] - top) for r in rows}
        rho = {r: e[r] / sum(e.values()) for r in rows}
        phi = {r: 2.0 ** int(y[r]) - uniform[r] for r in rows}
        inv_den = 1.0 / max(1e-15, sum(phi.values()))
        t = {r: rho[r] - phi[r] * inv_den for r in rows}
        total = dict(t)
        for _ in range(2):  # the second and third order terms
            p = {r: t[r] / (1.0 - rho[r]) for r in rows}
            t = {r: rho[r] * (sum(p.values()) - p[r]) for r in rows}
            for r in rows:
                total[r] += t[r]
        for r in rows:
            g[r] = total[r]
            h[r] = rho[r] * (1.0 - rho[r])
    return g, h


def _pairwise_twin(y, score, offsets, sigma=1.0):
    g = np.zeros(y.size)
    h = np.zeros(y.size)
    for a, b in zip(offsets[:-1], offsets[1:], strict=True):
        for i in range(a, b):
            for j in range(a, b):
                if not y[i] > y[j]:
                    continue
                p = 1.0 / (1.0 + math.exp(sigma * (score[i] - score[j])))
                g[i] -= sigma * p
                g[j] += sigma * p
                h[i] += sigma * sigma * p * (1.0 - p)
                h[j] += sigma * sigma * p * (1.0 - p)
    return g, h


def _ranknet_loss(y, score, offsets, sigma):
    """sum over pairs with y_i > y_j of log(1 + exp(-sigma (s_i - s_j)))."""
    total = 0.0
    for a, b in zip(offsets[:-1], offsets[1:], strict=True):
        for i in range(a, b):
            for j in range(a, b):
                if y[i] > y[j]:
                    total += math.log1p(math.exp(-sigma * (score[i] - score[j])))
    return total


def _queries(seed, sizes, n_labels=4, ties=False, labels=None):
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    y = rng.integers(0, n_labels, size=offsets[-1]).astype(float)
    if labels is not None:
        y[:] = labels
    score = rng.normal(size=offsets[-1])
    if ties:
        score = np.round(score)  # many equal scores
    return y, score, offsets


CASES = {
    "mixed sizes": dict(sizes=[1, 2, 5, 12, 30, 7, 3]),
    "tied labels": dict(sizes=[20, 20, 4], n_labels=2),
    "tied scores": dict(sizes=[15, 9, 25, 2], ties=True),
    "one-document queries": dict(sizes=[1, 1, 3, 1, 2]),
    "labels all equal": dict(sizes=[6, 10, 1], labels=2.0),
    "labels all zero": dict(sizes=[8, 30, 2], labels=0.0),
    "high labels": dict(sizes=[10, 30], n_labels=8),
}


def _check(result, twin):
    g, h = result
    tg, th = twin
    assert g.dtype == np.float32
    assert h.dtype == np.float32
    np.testing.assert_allclose(g, tg, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(h, th, rtol=1e-6, atol=1e-7)
    assert np.all(h >= 0)


# ---- rank_xendcg -------------------------------------------------------------------------
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("seed", [0, 1])
def test_xendcg_equals_the_brute_force_twin(case, seed):
    y, score, offsets = _queries(seed, **CASES[case])
    uniform = np.random.default_rng(seed + 10).random(y.size)
    result = RankXENDCGContext(y, offsets).grad_hess(score, uniform)
    _check(result, _xendcg_twin(y, score, offsets, uniform))
    sizes = np.diff(offsets)
    one = np.repeat(sizes == 1, sizes)
    assert not np.any(result[0][one])
    assert not np.any(result[1][one])
    assert np.all(result[1][~one] > 0)


def test_xendcg_loss_draws_one_uniform_vector_in_row_order():
    y, score, offsets = _queries(3, sizes=[4, 1, 9, 17])
    gradient = np.empty((1, y.size), dtype=np.float32)
    hessian = np.empty((1, y.size), dtype=np.float32)
    loss = get_loss("rank_xendcg")
    assert isinstance(loss, RankXENDCG)
    assert loss.needs_group
    assert loss.needs_rng
    loss.gradient_hessian(y, score[None, :], np.ones(y.size), gradient, hessian,
                          group_offsets=offsets, rng=np.random.default_rng(7))
    uniform = np.random.default_rng(7).random(y.size)
    _check((gradient[0], hessian[0]), _xendcg_twin(y, score, offsets, uniform))
    # a fresh draw at the next stage: other noise, other gradients
    again = np.empty_like(gradient)
    loss.gradient_hessian(y, score[None, :], np.ones(y.size), again, hessian,
                          group_offsets=offsets, rng=np.random.default_rng(8))
    assert np.any(again != gradient)


def test_xendcg_first_order_term_is_the_cross_entropy_gradient():
    # with all other rho tiny the higher-order terms vanish: a query of two documents
    # whose scores are far apart has g_top ~ rho_top - phi_top / sum(phi)
    y = np.array([1.0, 0.0])
    score = np.array([12.0, 0.0])
    uniform = np.array([0.25, 0.5])
    g, h = RankXENDCGContext(y, [0, 2]).grad_hess(score, uniform)
    rho_top = 1.0 / (1.0 + math.exp(-12.0))
    assert g[0] == pytest.approx(rho_top - 1.75 / 2.25, abs=1e-4)
    assert g[0] + g[1] == pytest.approx(0.0, abs=1e-4)
    assert h[0] == pytest.approx(rho_top * (1 - rho_top), rel=1e-5)


def test_xendcg_extreme_score_gap_stays_finite():
    # the top softmax weight rounds to exactly 1 (a lead of 50): LightGBM divides by
    # 1 - rho = 0 there; the kernel stays finite
    y = np.array([2.0, 0.0, 1.0])
    score = np.array([50.0, 0.0, -1.0])
    g, h = RankXENDCGContext(y, [0, 3]).grad_hess(score, np.array([0.3, 0.6, 0.9]))
    assert np.all(np.isfinite(g))
    assert np.all(np.isfinite(h))


# ---- pairwise ----------------------------------------------------------------------------
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("sigma", [1.0, 0.7])
def test_pairwise_equals_the_brute_force_twin(case, sigma):
    y, score, offsets = _queries(0, **CASES[case])
    result = PairwiseContext(y, offsets, sigma=sigma).grad_hess(score)
    tg, th = _pairwise_twin(y, score, offsets, sigma)
    _check(result, (tg, th))
    for a, b in zip(offsets[:-1], offsets[1:], strict=True):
        assert abs(float(np.sum(tg[a:b]))) < 1e-9  # the pulls of a query balance
        if b - a == 1 or np.all(y[a:b] == y[a]):
            assert not np.any(result[0][a:b])
            assert not np.any(result[1][a:b])


def test_pairwise_twin_is_the_ranknet_derivative():
    y, score, offsets = _queries(4, sizes=[5, 7], n_labels=3)
    tg, th = _pairwise_twin(y, score, offsets, sigma=1.3)
    step = 1e-5
    for r in range(y.size):
        up, down = score.copy(), score.copy()
        up[r] += step
        down[r] -= step
        lu = _ranknet_loss(y, up, offsets, 1.3)
        ld = _ranknet_loss(y, down, offsets, 1.3)
        l0 = _ranknet_loss(y, score, offsets, 1.3)
        assert tg[r] == pytest.approx((lu - ld) / (2 * step), rel=1e-6, abs=1e-8)
        assert th[r] == pytest.approx((lu - 2 * l0 + ld) / step**2, rel=1e-3, abs=1e-5)


def test_pairwise_default_sigma_and_parameters():
    loss = get_loss("pairwise")
    assert isinstance(loss, Pairwise)
    assert loss.needs_group
    assert not loss.needs_rng
    assert loss.get_params() == {"sigmoid": 1.0}
    assert get_loss("pairwise", sigmoid=2.5).get_params() == {"sigmoid": 2.5}
    for bad in (0.0, -1.0, float("inf"), "1"):
        with pytest.raises(ValueError, match="sigmoid"):
            Pairwise(sigmoid=bad)
        with pytest.raises(ValueError, match="sigma"):
            PairwiseContext(np.array([0.0, 1.0]), [0, 2], sigma=bad)


# ---- both --------------------------------------------------------------------------------
def _contexts():
    return {
        "rank_xendcg": lambda y, o: (lambda s: RankXENDCGContext(y, o).grad_hess(
            s, np.random.default_rng(2).random(y.size))),
        "pairwise": lambda y, o: PairwiseContext(y, o).grad_hess,
    }


@pytest.mark.parametrize("name", ["rank_xendcg", "pairwise"])
def test_same_gradients_for_one_and_two_threads(name):
    import numba

    y, score, offsets = _queries(5, sizes=list(range(1, 60)))
    grad_hess = _contexts()[name](y, offsets)
    with_two = grad_hess(score)
    numba.set_num_threads(1)
    try:
        with_one = grad_hess(score)
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    np.testing.assert_array_equal(with_one[0], with_two[0])
    np.testing.assert_array_equal(with_one[1], with_two[1])


@pytest.mark.parametrize("name", ["rank_xendcg", "pairwise"])
def test_loss_interface_as_lambdarank(name):
    loss = get_loss(name)
    y = np.array([0.0, 2.0, 1.0])
    np.testing.assert_array_equal(loss.init_score(y, np.ones(3)), [0.0])
    loss.validate_target(y)
    for bad in (np.array([0.5, 1.0]), np.array([-1.0, 1.0])):
        with pytest.raises(ValueError, match="whole numbers"):
            loss.validate_target(bad)
    with pytest.raises(NotImplementedError, match="ndcg_at_k"):
        loss.pointwise(y, np.zeros((1, 3)))
    g = np.empty((1, 3), dtype=np.float32)
    h = np.empty((1, 3), dtype=np.float32)
    extra = {"rng": np.random.default_rng(0)} if loss.needs_rng else {}
    with pytest.raises(ValueError, match="query groups"):
        loss.gradient_hessian(y, np.zeros((1, 3)), np.ones(3), g, h, **extra)
    with pytest.raises(ValueError, match="sample_weight"):
        loss.gradient_hessian(y, np.zeros((1, 3)), np.array([1.0, 2.0, 1.0]), g, h,
                              group_offsets=np.array([0, 3]), **extra)


# ---- training through train() ------------------------------------------------------------
def _synthetic_queries(seed, n_queries=100, size=20, n_features=5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * size, n_features))
    utility = X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.3 * rng.normal(size=X.shape[0])
    y = np.digitize(utility, [0.0, 1.0, 2.0]).astype(float)  # relevance 0..3
    return X, y, np.full(n_queries, size)


def _held_out_ndcg(booster, stages=(1, 40)):
    from treeboost.metrics import ndcg_at_k

    Xt, yt, gt = _synthetic_queries(1)
    offsets = np.concatenate([[0], np.cumsum(gt)])
    staged = [np.asarray(r).ravel() for r in booster.staged_predict_raw(Xt, list(stages))]
    random = np.mean([ndcg_at_k(yt, np.random.default_rng(s).random(yt.size), offsets, 10)
                      for s in range(5)])
    return [ndcg_at_k(yt, s, offsets, 10) for s in staged], random, Xt


PARAMS = {"n_estimators": 40, "max_leaf_nodes": 7, "learning_rate": 0.2}


def test_train_rank_xendcg_learns_a_known_ranking():
    from treeboost import Dataset, train

    X, y, group = _synthetic_queries(0)
    params = {"loss": "rank_xendcg", **PARAMS, "random_state": 0}
    booster = train(params, Dataset(X, y, group=group))
    ndcg, random, Xt = _held_out_ndcg(booster)
    assert ndcg[0] < ndcg[1]
    assert ndcg[1] > 0.93
    assert ndcg[1] > random + 0.4
    # the noise comes from random_state: the same model again, another for another seed
    again = train(params, Dataset(X, y, group=group))
    other = train({**params, "random_state": 1}, Dataset(X, y, group=group))
    np.testing.assert_array_equal(booster.predict_raw(Xt), again.predict_raw(Xt))
    assert np.any(booster.predict_raw(Xt) != other.predict_raw(Xt))


def test_train_pairwise_learns_a_known_ranking():
    from treeboost import Dataset, train

    X, y, group = _synthetic_queries(0)
    params = {"loss": "pairwise", **PARAMS, "random_state": 0}
    one = train({**params, "n_jobs": 1}, Dataset(X, y, group=group))
    ndcg, random, Xt = _held_out_ndcg(one)
    assert ndcg[0] < ndcg[1]
    assert ndcg[1] > 0.93
    assert ndcg[1] > random + 0.4
    two = train({**params, "n_jobs": 2}, Dataset(X, y, group=group))
    np.testing.assert_array_equal(one.predict_raw(Xt), two.predict_raw(Xt))


def test_pairwise_sigmoid_from_params_survives_save_and_load(tmp_path):
    from treeboost import Dataset, train
    from treeboost.serialization import load_booster, save_booster

    X, y, group = _synthetic_queries(0, n_queries=10)
    booster = train({"loss": "pairwise", "sigmoid": 2.0, "n_estimators": 2},
                    Dataset(X, y, group=group))
    assert booster.loss.sigma == 2.0
    save_booster(booster, tmp_path / "model.json")
    loaded = load_booster(tmp_path / "model.json")
    assert loaded.loss.name == "pairwise"
    assert loaded.loss.get_params() == {"sigmoid": 2.0}
    np.testing.assert_array_equal(loaded.predict_raw(X), booster.predict_raw(X))


@pytest.mark.parametrize("name", ["rank_xendcg", "pairwise"])
def test_train_needs_groups_and_relevance_labels(name):
    from treeboost import Dataset, train

    X, y, group = _synthetic_queries(0, n_queries=5)
    with pytest.raises(ValueError, match="query groups"):
        train({"loss": name}, Dataset(X, y))
    with pytest.raises(ValueError, match="whole numbers"):
        train({"loss": name}, Dataset(X, y + 0.5, group=group))
