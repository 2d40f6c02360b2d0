"""SciPy sparse input (SPEC §3): binned without densifying, same model as dense.

Sparse columns are binned from their stored values plus a count of implicit
zeros, so the bin edges are those of the dense copy; histograms complete the
zero bin from node totals, so the model can differ from the dense one only
by float64 round-off in gradient sums (in practice it is the same model).
"""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal

from treeboost import TreeBoostClassifier, TreeBoostRegressor, load_model
from treeboost.binning import BinMapper, _feature_edges, _value_counts, canonical_sparse


def make_sparse(n=3000, p=12, density=0.08, seed=0, nan=True):
    rng = np.random.default_rng(seed)
    X = sp.random(n, p, density=density, format="csr", random_state=seed,
                  data_rvs=lambda k: np.round(rng.normal(size=k) * 4, 1))
    if nan:
        X.data[rng.random(X.data.size) < 0.03] = np.nan
    dense = X.toarray()
    signal = np.nan_to_num(dense[:, 0]) - 2 * (np.nan_to_num(dense[:, 1]) > 0)
    y = signal + np.nan_to_num(dense[:, 2]) ** 2 / 10 + 0.3 * rng.normal(size=n)
    return X, dense, y


@pytest.mark.parametrize("seed", range(40))
def test_quantile_edges_from_counts_equal_numpy_percentile(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 4000))
    values = rng.choice(rng.normal(size=int(rng.integers(2, 800))), n)
    values[rng.random(n) < rng.random()] = 0.0
    max_bins = int(rng.integers(2, 256))
    distinct = np.unique(values)
    got = _feature_edges(*_value_counts(values), max_bins)
    if distinct.size <= max_bins:
        assert_array_equal(got, (distinct[:-1] + distinct[1:]) / 2)
        return
    want = np.unique(np.percentile(values, np.linspace(0, 100, max_bins + 1)[1:-1],
                                   method="midpoint"))
    assert_array_equal(got, want[want < distinct[-1]])


@pytest.mark.parametrize("subsample", [200_000, 500])
def test_sparse_bins_equal_dense_bins(subsample):
    X, dense, _ = make_sparse(n=2000, p=8, density=0.3)
    X.data[:40] = 0.0  # explicit zeros
    is_cat = np.zeros(8, dtype=bool)
    is_cat[3] = True
    X[:, 3] = np.abs(np.round(X[:, 3].toarray()))  # a categorical column, category 0 included
    dense = X.toarray()
    a = BinMapper(subsample=subsample, random_state=1, is_categorical=is_cat).fit(X)
    b = BinMapper(subsample=subsample, random_state=1, is_categorical=is_cat).fit(dense)
    assert_array_equal(a.bin_edges_, b.bin_edges_)
    assert_array_equal(a.has_missing_, b.has_missing_)
    binned, want = a.transform(X), b.transform(dense)
    column = np.empty(X.shape[0], dtype=np.uint8)
    for f in range(X.shape[1]):
        assert_array_equal(binned.column(f, column), want[f])
    # entries in their feature's zero bin (explicit zeros among them) are not stored
    assert binned.rows.size < X.nnz


def test_canonical_sparse_leaves_the_input_alone():
    # duplicates and unsorted indices: scipy sums duplicates, and so must we
    X = sp.csr_matrix((np.array([1.0, 2.0, 5.0]), np.array([2, 0, 2]), np.array([0, 3])),
                      shape=(1, 3))
    assert not X.has_canonical_format
    before = (X.data.copy(), X.indices.copy())
    C = canonical_sparse(X, "csr")
    assert_array_equal(C.toarray(), [[2.0, 0.0, 6.0]])
    assert_array_equal(X.data, before[0])
    assert_array_equal(X.indices, before[1])
    assert C.indices.dtype == np.int32
    assert C.indptr.dtype == np.int64


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("params", [{}, {"subsample": 0.7, "colsample_bytree": 0.8,
                                         "colsample_bynode": 0.7}, {"max_bins": 8}])
def test_regressor_on_sparse_equals_dense(fmt, params):
    X, dense, y = make_sparse()
    X = X.asformat(fmt)
    kw = dict(n_estimators=25, random_state=0, **params)
    sparse_model = TreeBoostRegressor(**kw).fit(X, y, eval_set=[(X[:300], y[:300])])
    dense_model = TreeBoostRegressor(**kw).fit(dense, y, eval_set=[(dense[:300], y[:300])])
    assert_allclose(sparse_model.predict(X), dense_model.predict(dense), rtol=1e-9, atol=1e-9)
    assert_allclose(sparse_model.evals_result_["validation_0"]["squared_error"],
                    dense_model.evals_result_["validation_0"]["squared_error"], rtol=1e-9)
    # the model predicts the same on any layout of the same data
    assert_array_equal(sparse_model.predict(X), sparse_model.predict(dense))
    assert_array_equal(sparse_model.predict(X.tocoo()), sparse_model.predict(dense))


def test_classifier_on_sparse_equals_dense_and_round_trips(tmp_path):
    X, dense, y = make_sparse(seed=3)
    labels = np.digitize(y, np.quantile(y, [0.33, 0.66]))
    kw = dict(n_estimators=15, random_state=0, categorical_features=[5])
    X = X.tocsr()
    X[:, 5] = np.abs(np.round(np.nan_to_num(X[:, 5].toarray())))
    dense = X.toarray()
    sparse_model = TreeBoostClassifier(**kw).fit(X, labels)
    dense_model = TreeBoostClassifier(**kw).fit(dense, labels)
    assert_allclose(sparse_model.predict_proba(X), dense_model.predict_proba(dense),
                    rtol=1e-9, atol=1e-12)
    path = tmp_path / "model.json"
    sparse_model.save_model(path)
    loaded = load_model(path)
    assert_array_equal(loaded.predict_proba(X), sparse_model.predict_proba(X))
    staged = list(sparse_model.staged_predict_proba(X))
    assert_array_equal(staged[-1], sparse_model.predict_proba(X))


def test_float32_and_int64_indices():
    X, dense, y = make_sparse(nan=False)
    X32 = X.astype(np.float32)
    X64 = X.copy()
    X64.indices = X64.indices.astype(np.int64)
    X64.indptr = X64.indptr.astype(np.int64)
    m32 = TreeBoostRegressor(n_estimators=10, random_state=0).fit(X32, y)
    assert_allclose(m32.predict(X32),
                    TreeBoostRegressor(n_estimators=10, random_state=0)
                    .fit(dense.astype(np.float32), y).predict(dense.astype(np.float32)),
                    rtol=1e-9, atol=1e-9)
    m64 = TreeBoostRegressor(n_estimators=10, random_state=0).fit(X64, y)
    assert_array_equal(m64.predict(X64), m64.predict(dense))


def test_zero_weights_drop_sparse_rows():
    X, dense, y = make_sparse(nan=False)
    w = np.ones(y.size)
    w[::3] = 0.0
    a = TreeBoostRegressor(n_estimators=10, random_state=0).fit(X, y, sample_weight=w)
    keep = w > 0
    b = TreeBoostRegressor(n_estimators=10, random_state=0).fit(dense[keep], y[keep])
    assert_allclose(a.predict(dense), b.predict(dense), rtol=1e-9, atol=1e-9)


def test_sparse_predict_checks_the_width():
    X, _, y = make_sparse(nan=False)
    model = TreeBoostRegressor(n_estimators=3).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :-1])


def test_a_wide_sparse_matrix_trains_without_densifying():
    # 2,000,000 cells but 4,000 stored values: the binned data holds only those
    rng = np.random.default_rng(5)
    n, p = 2000, 1000
    rows = rng.integers(0, n, 4000)
    cols = rng.integers(0, p, 4000)
    X = sp.csr_matrix((rng.integers(1, 4, 4000).astype(float), (rows, cols)), shape=(n, p))
    y = (np.asarray(X[:, :50].sum(axis=1)).ravel() > 0).astype(int)
    kw = dict(n_estimators=20, min_samples_leaf=1, random_state=0)
    model = TreeBoostClassifier(**kw).fit(X, y)
    binned = model.booster_.bin_mapper.transform(X)
    assert binned.rows.size <= X.nnz
    dense = X.toarray()
    assert_allclose(model.predict_proba(X),
                    TreeBoostClassifier(**kw).fit(dense, y).predict_proba(dense), atol=1e-12)
    assert model.score(X, y) > 0.9
