"""Wide sparse data (issue 13): cost by stored values, not by columns.

Columns without stored values are binned once for all; features that cannot
split (one occupied bin) are left out of the histograms and split scans,
which changes no tree; ``bin_edges_`` is as wide as the most edges any
feature has.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal

from treeboost import TreeBoostClassifier, TreeBoostRegressor
from treeboost._dtypes import MISSING_BIN
from treeboost.binning import BinMapper
from treeboost.grower import GrowerParams, TreeGrower, splittable_features


def _hashed(n_rows=300, n_features=5000, per_row=6, seed=0):
    """Few stored values in many columns: most columns empty, a few NaN."""
    rng = np.random.default_rng(seed)
    indptr = np.arange(0, n_rows * per_row + 1, per_row, dtype=np.int64)
    indices = rng.integers(0, n_features, size=n_rows * per_row).astype(np.int32)
    hot = rng.random(indices.size) < 0.5
    indices[hot] = rng.integers(0, 30, size=int(hot.sum()))
    data = rng.integers(1, 6, size=indices.size).astype(np.float64)
    data[rng.random(data.size) < 0.02] = np.nan
    X = sp.csr_matrix((data, indices, indptr), shape=(n_rows, n_features))
    X.sum_duplicates()
    dense = X.toarray()
    y = np.nan_to_num(dense[:, :30]) @ rng.normal(size=30) + 0.2 * rng.normal(size=n_rows)
    return X, dense, y


def _occupied_bins(column):
    return np.unique(column).size


@pytest.mark.parametrize("categorical", [False, True])
def test_empty_columns_bin_as_dense(categorical):
    X, dense, _ = _hashed()
    is_cat = np.zeros(X.shape[1], dtype=bool)
    if categorical:  # empty and stored categorical columns, next to numerical ones
        is_cat[::7] = True
        X = X.tocsc()
        X.data = np.abs(X.data)
        dense = X.toarray()
    a = BinMapper(is_categorical=is_cat).fit(X)
    b = BinMapper(is_categorical=is_cat).fit(dense)
    assert_array_equal(a.bin_edges_, b.bin_edges_)
    assert_array_equal(a.n_edges_, b.n_edges_)
    assert_array_equal(a.has_missing_, b.has_missing_)
    # no padding beyond the feature with most edges
    assert a.bin_edges_.shape == (X.shape[1], max(1, a.n_edges_.max()))
    column = np.empty(X.shape[0], dtype=np.uint8)
    binned, want = a.transform(X), b.transform(dense)
    for f in range(0, X.shape[1], 97):
        assert_array_equal(binned.column(f, column), want[f])


def test_splittable_features_match_a_count_of_occupied_bins():
    X, dense, _ = _hashed()
    dense[:, 40] = np.nan  # all missing
    dense[:5, 41] = np.nan  # one value and missing: splits missing from not
    dense[:, 42] = 3.0  # one value everywhere
    X = sp.csr_matrix(np.where(dense == 0, 0, dense))
    mapper = BinMapper().fit(dense)
    binned_dense = mapper.transform(dense)
    binned_sparse = mapper.transform(X)
    want = np.array([_occupied_bins(binned_dense[f]) >= 2 for f in range(dense.shape[1])])
    assert not want[[40, 42]].any()
    assert want[41]
    assert 30 < want.sum() < dense.shape[1] // 2
    assert_array_equal(splittable_features(binned_dense, mapper.n_bins_non_missing_), want)
    assert_array_equal(splittable_features(binned_sparse, mapper.n_bins_non_missing_), want)
    assert (binned_dense[41] == MISSING_BIN).sum() == 5


@pytest.mark.parametrize("bynode", [1.0, 0.5])
def test_unsplittable_columns_change_no_model(bynode):
    # the same model with and without 400 columns that cannot split, interleaved:
    # they are left out before colsample_bynode draws, so its draws are the same
    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 8))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.nan_to_num(X[:, 0]) - np.nan_to_num(X[:, 1]) ** 2 + 0.1 * rng.normal(size=600)
    wide = np.zeros((600, 408))
    keep = np.sort(rng.choice(408, 8, replace=False))
    wide[:, keep] = X
    free = np.setdiff1d(np.arange(408), keep)
    wide[:, free[0]] = np.nan  # all missing: one bin
    wide[:, free[1]] = 2.5  # one value everywhere
    params = dict(n_estimators=15, max_leaf_nodes=8, colsample_bynode=bynode, random_state=0)
    narrow_model = TreeBoostRegressor(**params).fit(X, y)
    for data in (wide, sp.csr_matrix(wide)):  # sparse: NaN stored explicitly
        wide_model = TreeBoostRegressor(**params).fit(data, y)
        got, want = wide_model.predict(wide), narrow_model.predict(X)
        if sp.issparse(data):  # zero bins completed from node totals: round-off at most
            assert_allclose(got, want, rtol=1e-9, atol=1e-12)
        else:
            assert_array_equal(got, want)
        split = [f for stage in wide_model.booster_.trees for t in stage
                 for f in t.feature[t.left >= 0]]
        assert set(split) <= set(keep)


def test_only_unsplittable_columns_give_constant_model():
    X = np.zeros((200, 5))
    X[:, 2] = 1.0
    y = np.arange(200) % 2
    proba = TreeBoostClassifier(n_estimators=5).fit(X, y).predict_proba(X)
    assert_array_equal(proba, np.broadcast_to(proba[0], proba.shape))
    assert np.isclose(proba[0, 1], 0.5)


@pytest.mark.parametrize("subsample", [1.0, 0.7])
def test_histograms_as_narrow_as_the_most_value_bins(subsample):
    # counts 1..5 (some summed duplicates) and NaN: a few value bins per feature, so
    # the sparse grower's histograms hold that many plus the missing bin, not 256;
    # the missing bin moved to their end changes no split
    X, dense, y = _hashed(n_rows=400, n_features=300, per_row=8, seed=5)
    assert np.isnan(X.data).sum() > 10
    params = dict(n_estimators=20, max_leaf_nodes=12, min_samples_leaf=3,
                  subsample=subsample, random_state=0)
    sparse_model = TreeBoostRegressor(**params).fit(X, y)
    dense_model = TreeBoostRegressor(**params).fit(dense, y)
    assert_allclose(sparse_model.predict(X), dense_model.predict(dense), rtol=1e-9,
                    atol=1e-12)
    missing_left = [t.missing_left[t.left >= 0] for stage in sparse_model.booster_.trees
                    for t in stage]
    assert np.concatenate(missing_left).any()  # some split sends NaN left
    mapper = BinMapper().fit(X)
    grower = TreeGrower(mapper.transform(X), mapper.n_bins_non_missing_,
                        mapper.is_categorical_.astype(np.uint8), GrowerParams())
    assert grower.hist_bins == mapper.n_bins_non_missing_.max() + 1 < 20
