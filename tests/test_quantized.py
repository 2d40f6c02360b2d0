"""Quantised gradients (``use_quantized_grad``, LightGBM 4's): issue 13.

Each tree's gradients and hessians are rounded to a few integer levels
(``_kernels.quantize``), the split search runs on integer histograms of packed
(g, h) pairs, and the leaf values are refit from the exact float gradients.
Checked here: the rounding (unbiased, bounded, exact for constant hessians), the
integer histograms against NumPy twins, the parameters' errors, determinism across
``n_jobs``, the exact refit of the leaves, the limit of many levels (the unquantised
splits) and accuracy on real data against the unquantised model and LightGBM.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import accuracy_score, mean_squared_error, roc_auc_score

from treeboost import Dataset, TreeBoostClassifier, TreeBoostRegressor, train
from treeboost._dtypes import MISSING_BIN, N_BINS
from treeboost._kernels.grower import _exact_sums, _unpack, leaf_sums
from treeboost._kernels.histogram import (
    build_histograms,
    build_histograms_root,
    build_histograms_serial,
)
from treeboost._kernels.quantize import pack, quantize_gradients, unpack


def _quantize(g, h, n_bins, stochastic=True, seed=0):
    packed = np.empty(g.size, dtype=np.int64)
    scales = np.empty(2)
    quantize_gradients(g.astype(np.float32), h.astype(np.float32), n_bins, stochastic,
                       np.uint64(seed), packed, scales, np.uint64(0), np.full(2, -1.0))
    gq, hq = unpack(packed)
    return gq, hq, scales


# ---- the rounding ----------------------------------------------------------------------
@pytest.mark.parametrize("n_bins", [4, 16])
def test_stochastic_rounding_is_unbiased_and_bounded(n_bins):
    rng = np.random.default_rng(0)
    g = rng.normal(size=200).astype(np.float32)
    h = rng.uniform(0.01, 0.25, size=200).astype(np.float32)
    n_draws = 2000
    sum_g = np.zeros(g.size)
    sum_h = np.zeros(h.size)
    for seed in range(n_draws):
        gq, hq, (s_g, s_h) = _quantize(g, h, n_bins, seed=seed * 7919 + 1)
        xg = g.astype(np.float64) / s_g
        xh = h.astype(np.float64) / s_h
        # every draw is x rounded down or up, inside the levels
        assert np.all((gq == np.floor(xg)) | (gq == np.ceil(xg)))
        assert np.all((hq == np.floor(xh)) | (hq == np.ceil(xh)))
        assert np.abs(gq).max() <= n_bins // 2
        assert hq.min() >= 0
        assert hq.max() <= n_bins
        sum_g += gq
        sum_h += hq
    # scales: max|g| on B/2 levels, max h on B
    assert s_g == pytest.approx(np.abs(g).max() / (n_bins / 2))
    assert s_h == pytest.approx(h.max() / n_bins)
    # unbiased: the mean of n draws of a {floor, ceil} variable is within 5 standard
    # deviations (at most 0.5 / sqrt(n)) of x
    tol = 5 * 0.5 / np.sqrt(n_draws)
    np.testing.assert_allclose(sum_g / n_draws, g / s_g, atol=tol)
    np.testing.assert_allclose(sum_h / n_draws, h / s_h, atol=tol)


def test_round_to_nearest_and_constant_hessians_are_exact():
    rng = np.random.default_rng(1)
    g = rng.normal(size=1000)
    gq, hq, (s_g, s_h) = _quantize(g, np.ones(1000), 6, stochastic=False)
    np.testing.assert_array_equal(gq, np.floor(g.astype(np.float32) / s_g + 0.5))
    # squared error: every hessian is 1 -> exactly B on every row, stochastic or not
    assert np.all(hq == 6)
    _, hq, _ = _quantize(g, np.full(1000, 0.3), 5, stochastic=True, seed=3)
    assert np.all(hq == 5)


def test_draws_depend_on_the_seed_only():
    g = np.linspace(-1, 1, 5000)
    h = np.linspace(0.1, 0.2, 5000)
    a = _quantize(g, h, 4, seed=11)
    b = _quantize(g, h, 4, seed=11)
    c = _quantize(g, h, 4, seed=12)
    np.testing.assert_array_equal(a[0], b[0])
    assert not np.array_equal(a[0], c[0])


# ---- integer histograms ----------------------------------------------------------------
def _twin(X_binned, rows, packed, features):
    """NumPy twin: per feature and bin, the sum of the packed pairs of its rows."""
    hist = np.zeros((X_binned.shape[0], N_BINS), dtype=np.int64)
    for f in features:
        np.add.at(hist[f], X_binned[f, rows], packed[rows])
    return hist


def test_integer_histograms_equal_numpy_twin():
    rng = np.random.default_rng(2)
    n, n_features = 5000, 7
    X_binned = rng.integers(0, N_BINS, size=(n_features, n), dtype=np.uint8)
    packed = pack(rng.integers(-2, 3, n), rng.integers(0, 5, n))
    features = np.array([0, 2, 3, 4, 5, 6], dtype=np.int32)
    rows = np.sort(rng.choice(n, 3000, replace=False)).astype(np.uint32)
    ordered = np.empty(n, dtype=np.int64)
    expected = _twin(X_binned, rows, packed, features)
    for shares in (1, 2, 4):  # one share of the features per thread: same sums for any count
        hist = np.zeros((n_features, N_BINS), dtype=np.int64)
        build_histograms(X_binned, rows, packed, packed, features, ordered, ordered, hist,
                         shares)
        np.testing.assert_array_equal(hist, expected)
        hist = np.zeros((n_features, N_BINS), dtype=np.int64)
        build_histograms_root(X_binned, packed, packed, features, hist, shares)
        np.testing.assert_array_equal(hist, _twin(X_binned, np.arange(n), packed, features))
    hist = np.zeros((n_features, N_BINS), dtype=np.int64)
    build_histograms_serial(X_binned, rows, packed, packed, features, ordered, ordered, hist)
    np.testing.assert_array_equal(hist, expected)
    # the packed sums are the sums of each half; a sibling (parent - child) is exact
    gq, hq = unpack(packed)
    g_sum, h_sum = unpack(expected[3])
    for b in range(0, N_BINS, 37):
        in_bin = rows[X_binned[3, rows] == b]
        assert g_sum[b] == gq[in_bin].sum()
        assert h_sum[b] == hq[in_bin].sum()
    parent = _twin(X_binned, np.arange(n, dtype=np.uint32), packed, features)
    rest = np.setdiff1d(np.arange(n), rows).astype(np.uint32)
    np.testing.assert_array_equal(parent - expected, _twin(X_binned, rest, packed, features))


def test_unpacked_histogram_is_dequantised():
    rng = np.random.default_rng(3)
    n_features = 3
    n_bins_non_missing = np.array([10, 4, 255], dtype=np.int32)
    gq = rng.integers(-500, 500, size=(n_features, N_BINS))
    hq = rng.integers(0, 1000, size=(n_features, N_BINS))
    packed = pack(gq, hq)
    hist = np.zeros((n_features, N_BINS, 3))
    scales = np.array([0.25, 0.125])
    features = np.arange(n_features, dtype=np.int32)
    _unpack(hist, packed, features, n_bins_non_missing, MISSING_BIN, scales, 123.0)
    for f in range(n_features):
        used = np.r_[np.arange(n_bins_non_missing[f]), MISSING_BIN]
        np.testing.assert_array_equal(hist[f, used, 0], gq[f, used] * 0.25)
        np.testing.assert_array_equal(hist[f, used, 1], hq[f, used] * 0.125)
    # counts estimated from the hessian, as LightGBM's: the node's 123 rows spread in
    # proportion to each bin's hessian (of the first feature's used bins)
    used0 = np.r_[np.arange(10), MISSING_BIN]
    np.testing.assert_allclose(hist[0, used0, 2].sum(), 123.0)
    np.testing.assert_allclose(hist[0, used0, 2], hq[0, used0] * 123.0 / hq[0, used0].sum())


# ---- parameters -------------------------------------------------------------------------
def _data(n=3000, n_features=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    X[rng.random(X.shape) < 0.05] = np.nan
    signal = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) ** 2
    return X, signal + 0.3 * rng.normal(size=n)


@pytest.mark.parametrize(("params", "match"), [
    ({"use_quantized_grad": "yes"}, "use_quantized_grad"),
    ({"use_quantized_grad": True, "num_grad_quant_bins": 1}, "num_grad_quant_bins"),
    ({"use_quantized_grad": True, "num_grad_quant_bins": 4.0}, "num_grad_quant_bins"),
    ({"use_quantized_grad": True, "stochastic_rounding": 1}, "stochastic_rounding"),
])
def test_invalid_parameters_are_named(params, match):
    X, y = _data(200)
    with pytest.raises((TypeError, ValueError), match=match):
        TreeBoostRegressor(n_estimators=2, **params).fit(X, y)


def test_out_of_scope_combinations_are_refused():
    X, y = _data(200)
    with pytest.raises(ValueError, match="use_quantized_grad"):
        TreeBoostRegressor(n_estimators=2, use_quantized_grad=True).fit(
            sp.csr_matrix(np.nan_to_num(X)), y)
    # packed sums must fit 32 bits: n_samples x num_grad_quant_bins < 2**31
    with pytest.raises(ValueError, match="num_grad_quant_bins"):
        TreeBoostRegressor(n_estimators=2, use_quantized_grad=True,
                           num_grad_quant_bins=2**20).fit(np.repeat(X, 12, axis=0),
                                                          np.repeat(y, 12))


def test_auto_quantises_large_log_loss_fits_only():
    """use_quantized_grad="auto" (the default) is True for the log loss on dense data of at
    least the plan's quantize_min_rows rows and False otherwise (regression, small or
    sparse data); when it is off, its companions change nothing."""
    assert TreeBoostRegressor().get_params()["use_quantized_grad"] == "auto"
    X, y = _data(600)
    labels = (y > np.median(y)).astype(int)
    classes = np.digitize(y, np.quantile(y, [0.33, 0.67]))
    from_500 = {"quantize_min_rows": 500}

    def fit(X, target, loss, plan=from_500, **params):
        return train(dict(params, loss=loss, n_estimators=8, random_state=0),
                     Dataset(X, target), plan=plan)

    def same(target, loss, plan=from_500, **params):
        a, b = fit(X, target, loss, plan), fit(X, target, loss, plan, **params)
        return np.array_equal(a.predict_raw(X), b.predict_raw(X))

    assert same(labels, "log_loss", use_quantized_grad=True)
    assert not same(labels, "log_loss", use_quantized_grad=False)
    auto, on = (fit(X, classes, "log_loss", **kw) for kw in ({}, {"use_quantized_grad": True}))
    assert auto.execution_plan.quantize
    assert on.execution_plan.quantize
    np.testing.assert_array_equal(auto.predict_raw(X), on.predict_raw(X))
    # regression: off, and the companions of an unused quantisation change nothing
    assert not fit(X, y, "squared_error").execution_plan.quantize
    assert same(y, "squared_error", use_quantized_grad=False, num_grad_quant_bins=7,
                stochastic_rounding=False)
    short = {"quantize_min_rows": 601}  # one row short
    assert not fit(X, labels, "log_loss", short).execution_plan.quantize
    assert same(labels, "log_loss", short, use_quantized_grad=False)
    Xs = sp.csr_matrix(np.nan_to_num(X))  # sparse: off, not refused
    a = fit(Xs, labels, "log_loss")
    b = fit(Xs, labels, "log_loss", use_quantized_grad=False)
    assert not a.execution_plan.quantize
    np.testing.assert_array_equal(a.predict_raw(Xs), b.predict_raw(Xs))


# ---- models --------------------------------------------------------------------------------
def _trees(model):
    booster = getattr(model, "booster_", model)  # an estimator or a Booster
    return [t for stage in booster.trees for t in stage]


def _same_models(a, b):
    ta, tb = _trees(a), _trees(b)
    assert len(ta) == len(tb)
    for x, y in zip(ta, tb, strict=True):
        for field in ("feature", "threshold", "left", "value", "count", "cover"):
            np.testing.assert_array_equal(getattr(x, field), getattr(y, field))


#: on two threads, the nodes of these tests' 40,000 rows on the parallel kernels: the
#: partition from 8,192 rows, the histograms from the plan's 20,000 updates, no lean tree
PARALLEL = {"serial_partition_rows": 8192, "lean_tree_updates": 0}


def _fits(X, y, loss, **params):
    """The models of ``n_jobs`` 1 and 2 (under ``PARALLEL``: one thread stays serial)."""
    return [train(dict(params, loss=loss, n_jobs=j), Dataset(X, y), plan=PARALLEL)
            for j in (1, 2)]


@pytest.mark.parametrize("task", ["binary", "multiclass", "regression"])
def test_same_model_for_one_and_two_threads(task):
    # 40,000 rows x 6 features: the root and large nodes use the parallel kernels
    X, y = _data(40_000, 6, seed=4)
    common = {"n_estimators": 8, "use_quantized_grad": True, "subsample": 0.8,
              "random_state": 0}
    if task == "regression":
        models = _fits(X, y, "squared_error", **common)
    else:
        labels = (y > 0.5).astype(int) if task == "binary" else np.digitize(y, [0.0, 1.0])
        models = _fits(X, labels, "log_loss", **common)
    _same_models(*models)


def test_same_model_for_one_and_two_threads_where_estimated_counts_bind():
    # the row counts of a quantised histogram's bins are estimated from its hessians
    # (_unpack); min_samples_leaf then rejects splits by them, here in large nodes, whose
    # children are searched side by side on two threads (search_pair, each thread
    # unpacking its features with the count factors found before the subtraction)
    X, y = _data(40_000, 6, seed=7)
    common = {"n_estimators": 6, "use_quantized_grad": True, "min_samples_leaf": 2500,
              "random_state": 0}
    labels = (y > 0.5).astype(int)
    _same_models(*_fits(X, labels, "log_loss", **common))


def test_same_model_for_one_and_two_threads_on_rows_summed_in_parallel():
    # from the parallel partition's threshold (the plan's, 8,192 rows here) the leaves'
    # exact sums are added on every thread (leaf_sums)
    X, y = _data(20_000, 4, seed=6)
    common = {"n_estimators": 4, "max_leaf_nodes": 15, "use_quantized_grad": True,
              "random_state": 0}
    labels = (y > 0.5).astype(int)
    _same_models(*_fits(X, labels, "log_loss", **common))


def _random_tree(n_rows, n_leaves, rng):
    """A grower's node arrays: children numbered after their parent, each node's rows a
    slice of its parent's; leaf 1 holds 60% of the rows, leaf 4 none, at the end."""
    start, stop = [0, 0, 6 * n_rows // 10, 6 * n_rows // 10, n_rows], [n_rows] * 5
    stop[1] = start[2]
    left, right = [1, -1, 3, -1, -1], [2, -1, 4, -1, -1]
    while len(left) < 2 * n_leaves - 1:
        j = rng.choice([j for j in range(2, len(left))
                        if left[j] < 0 and stop[j] - start[j] > 1])
        cut = start[j] + rng.integers(1, stop[j] - start[j])
        left[j], right[j] = len(left), len(left) + 1
        start += [start[j], cut]
        stop += [cut, stop[j]]
        left += [-1, -1]
        right += [-1, -1]
    return (np.array(left, dtype=np.int32), np.array(right, dtype=np.int32),
            np.array(start, dtype=np.int64), np.array(stop, dtype=np.int64))


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("seed", [0, 1])
def test_leaf_sums_on_every_thread_equal_the_serial_sums(n_threads, seed):
    rng = np.random.default_rng(seed)
    n_samples = 50_000
    gradient = rng.normal(size=n_samples).astype(np.float32)
    hessian = rng.random(n_samples).astype(np.float32)
    rows = np.sort(rng.choice(n_samples, 40_000, replace=False)).astype(np.uint32)
    left, right, start, stop = _random_tree(rows.size, 12, rng)
    n_nodes = left.size
    expected = [np.zeros(n_nodes, dtype=np.int64), np.zeros(n_nodes), np.zeros(n_nodes)]
    _exact_sums(gradient, hessian, rows, n_nodes, left, right, start, stop, *expected, False)
    # NaN: a leaf that no thread sums stays NaN
    count = np.zeros(n_nodes, dtype=np.int64)
    sum_g, sum_h = np.full(n_nodes, np.nan), np.full(n_nodes, np.nan)
    previous = numba.get_num_threads()
    try:
        numba.set_num_threads(min(n_threads, numba.config.NUMBA_NUM_THREADS))
        leaf_sums(gradient, hessian, rows, n_nodes, left, start, stop, sum_g, sum_h,
                  numba.get_num_threads())
    finally:
        numba.set_num_threads(previous)
    _exact_sums(gradient, hessian, rows, n_nodes, left, right, start, stop, count, sum_g,
                sum_h, True)
    # the same float additions in the same order: equal bits
    for got, want in zip((count, sum_g, sum_h), expected, strict=True):
        np.testing.assert_array_equal(got, want)


def _leaf_of(tree, X):
    node = np.zeros(X.shape[0], dtype=np.int64)
    for _ in range(tree.n_nodes):
        inner = tree.left[node] >= 0
        if not inner.any():
            break
        i = np.flatnonzero(inner)
        f = tree.feature[node[i]]
        x = X[i, f]
        go_left = np.where(np.isnan(x), tree.missing_left[node[i]] == 1,
                           x <= tree.threshold[node[i]])
        node[i] = np.where(go_left, tree.left[node[i]], tree.right[node[i]])
    return node


@pytest.mark.parametrize("task", ["binary", "regression"])
def test_leaf_values_are_refit_from_exact_gradients(task):
    # one tree, learning rate 1: each leaf's value is the Newton step -G/H of the float
    # gradients of its rows (not of their quantised sums), its count and cover exact
    X, y = _data(5000, 5, seed=5)
    common = {"n_estimators": 1, "learning_rate": 1.0, "use_quantized_grad": True,
              "num_grad_quant_bins": 4, "random_state": 0}
    if task == "binary":
        labels = (y > 0.5).astype(float)
        model = TreeBoostClassifier(max_delta_step=None, **common).fit(X, labels)
        p = labels.mean()
        g = p - labels
        h = np.full(labels.size, p * (1 - p))
    else:
        model = TreeBoostRegressor(**common).fit(X, y)
        g = y.mean() - y
        h = np.ones(y.size)
    tree = _trees(model)[0]
    leaf = _leaf_of(tree, X)
    for j in np.flatnonzero(tree.left < 0):
        rows = leaf == j
        assert tree.count[j] == rows.sum()
        assert tree.cover[j] == pytest.approx(h[rows].sum(), rel=1e-6)
        assert tree.value[j] == pytest.approx(-g[rows].sum() / h[rows].sum(), rel=1e-5,
                                              abs=1e-7)


def test_many_levels_give_the_unquantised_splits():
    # squared error: hessians are exact; with 2**18 levels and rounding to nearest each
    # gradient is off by at most max|g| / 2**18, far below the gain gaps between splits
    X, y = _data(4000, 5, seed=6)
    common = {"n_estimators": 10, "random_state": 0}
    base = TreeBoostRegressor(**common).fit(X, y)
    quant = TreeBoostRegressor(use_quantized_grad=True, num_grad_quant_bins=2**18,
                               stochastic_rounding=False, **common).fit(X, y)
    for a, b in zip(_trees(base), _trees(quant), strict=True):
        np.testing.assert_array_equal(a.feature, b.feature)
        np.testing.assert_array_equal(a.threshold, b.threshold)
        np.testing.assert_array_equal(a.count, b.count)
        # leaves refit from the exact gradients: the unquantised values, but for the
        # order of the float sums
        np.testing.assert_allclose(a.value, b.value, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(base.predict(X), quant.predict(X), rtol=1e-9, atol=1e-9)


def test_exact_line_search_with_quantised_splits():
    # absolute error: leaves are medians of the leaf's residuals (the line search),
    # whatever chose the splits
    X, y = _data(3000, 5, seed=7)
    model = TreeBoostRegressor(loss="absolute_error", n_estimators=30, use_quantized_grad=True,
                               random_state=0).fit(X, y)
    base = TreeBoostRegressor(loss="absolute_error", n_estimators=30, random_state=0).fit(X, y)
    mae = np.mean(np.abs(model.predict(X) - y))
    assert mae <= 1.05 * np.mean(np.abs(base.predict(X) - y))
    one = TreeBoostRegressor(loss="absolute_error", n_estimators=1, learning_rate=1.0,
                             use_quantized_grad=True, random_state=0).fit(X, y)
    tree = _trees(one)[0]
    leaf = _leaf_of(tree, X)
    f0 = np.median(y)
    for j in np.flatnonzero(tree.left < 0):
        res = y[leaf == j] - f0
        # any minimiser of the absolute error: between the two middle values
        lo, hi = np.quantile(res, 0.5, method="lower"), np.quantile(res, 0.5, method="higher")
        assert lo - 1e-9 <= tree.value[j] <= hi + 1e-9


@pytest.mark.parametrize("method", ["basic", "intermediate"])
def test_monotone_constraints_and_categorical_features_hold(method):
    # splits from quantised sums, values refit from exact ones and then clipped to the
    # node bounds: predictions stay monotone along the constrained feature
    rng = np.random.default_rng(8)
    n = 3000
    X = np.column_stack([rng.integers(0, 12, n), rng.normal(size=n), rng.normal(size=n)])
    y = np.isin(X[:, 0], [2, 5, 7]) + X[:, 1] - 0.5 * X[:, 2] + 0.3 * rng.normal(size=n)
    model = TreeBoostRegressor(n_estimators=30, use_quantized_grad=True, random_state=0,
                               categorical_features=[0], monotone_constraints=[0, 1, -1],
                               monotone_constraints_method=method).fit(X, y)
    grid = np.linspace(-3, 3, 60)
    for f, direction in ((1, 1), (2, -1)):
        rows = np.repeat(X[:20], grid.size, axis=0)
        rows[:, f] = np.tile(grid, 20)
        steps = np.diff(model.predict(rows).reshape(20, grid.size), axis=1)
        assert np.all(direction * steps >= -1e-12)
    assert np.mean((model.predict(X) - y) ** 2) < 0.5 * np.var(y)


# ---- accuracy on real data -----------------------------------------------------------------
#: the quantised model's test metric, averaged over three holdout splits, may be at most
#: this much worse (relative) than the unquantised model's. Measured (means of the splits
#: 0-2, 100 trees): sylva_prior AUC 0.9990 vs 0.9992, pendigits accuracy 0.9884 vs
#: 0.9907, cpu_act RMSE 2.520 vs 2.517
TOL_EXACT = 0.005
#: and than LightGBM's with use_quantized_grad=True (4 levels, stochastic rounding, leaves
#: renewed): AUC 0.9994, accuracy 0.9934 (0.50 % above ours), RMSE 2.451 (2.8 % below
#: ours; but LightGBM's own unquantised RMSE is 2.515 there: its quantised model is 2.6 %
#: better than its unquantised one on these splits, which ours is not)
TOL_LIGHTGBM = {"binary": 0.001, "multiclass": 0.006, "regression": 0.03}


def _real(name):
    compare = pytest.importorskip("test_compare_peers")
    loader = {"sylva_prior": compare._sylva, "pendigits": compare._pendigits,
              "cpu_act": compare._cpu_act}[name]
    return loader()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["sylva_prior", "pendigits", "cpu_act"])
def test_real_data_accuracy_close_to_unquantised_and_lightgbm(name):
    lgb = pytest.importorskip("lightgbm")
    from sklearn.model_selection import train_test_split

    X, y, task = _real(name)
    scores = {"quant": [], "exact": [], "lightgbm": []}
    for seed in range(3):
        X_tr, X_te, y_tr, y_te = train_test_split(
            X, y, test_size=0.25, random_state=seed,
            stratify=None if task == "regression" else y)
        common = {"n_estimators": 100, "learning_rate": 0.1, "max_leaf_nodes": 31,
                  "min_samples_leaf": 20, "n_jobs": 1, "random_state": seed}
        lgb_params = {"n_estimators": 100, "learning_rate": 0.1, "num_leaves": 31,
                      "min_child_samples": 20, "min_data_in_bin": 1, "n_jobs": 1,
                      "verbose": -1, "random_state": seed, "use_quantized_grad": True,
                      "num_grad_quant_bins": 4, "stochastic_rounding": True,
                      "quant_train_renew_leaf": True}
        if task == "regression":
            ours, peer = TreeBoostRegressor, lgb.LGBMRegressor(**lgb_params)

            def score(m):
                # negated: higher is better for every score here
                return -np.sqrt(mean_squared_error(y_te, m.predict(X_te)))  # noqa: B023
        else:
            ours, peer = TreeBoostClassifier, lgb.LGBMClassifier(**lgb_params)

            def score(m):
                if task == "binary":
                    return roc_auc_score(y_te, m.predict_proba(X_te)[:, 1])  # noqa: B023
                return accuracy_score(y_te, m.predict(X_te))  # noqa: B023
        scores["quant"].append(score(ours(use_quantized_grad=True, **common).fit(X_tr, y_tr)))
        scores["exact"].append(score(ours(**common).fit(X_tr, y_tr)))
        scores["lightgbm"].append(score(peer.fit(X_tr, y_tr)))
    quant, exact, theirs = (np.mean(scores[k]) for k in ("quant", "exact", "lightgbm"))
    assert quant >= exact - TOL_EXACT * abs(exact), scores
    assert quant >= theirs - TOL_LIGHTGBM[task] * abs(theirs), scores
