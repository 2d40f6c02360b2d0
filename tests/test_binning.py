"""BinMapper: exact edges on few values, quantile edges otherwise, missing bin, subsample."""

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from reference import bin_matrix, category_bins, category_table
from treeboost import binning
from treeboost._dtypes import MISSING_BIN, X_DTYPE
from treeboost.binning import BinMapper


def edges_of(mapper, f):
    return mapper.bin_edges_[f, : mapper.n_edges_[f]]


@pytest.mark.parametrize(("n_distinct", "max_bins"), [(2, 255), (37, 255), (255, 255),
                                                      (10, 10), (2, 2)])
def test_few_distinct_values_give_midpoint_edges(n_distinct, max_bins):
    rng = np.random.default_rng(n_distinct)
    distinct = np.sort(rng.choice(np.linspace(-50, 50, 10_000), n_distinct, replace=False))
    X = rng.choice(distinct, size=(3000, 1))
    X[:n_distinct, 0] = distinct  # every value present
    mapper = BinMapper(max_bins=max_bins, random_state=0).fit(X)
    # exactly the midpoints, computed the same way: bit-identical
    assert_array_equal(edges_of(mapper, 0), (distinct[:-1] + distinct[1:]) / 2)
    assert mapper.n_bins_non_missing_[0] == n_distinct
    # each distinct value in its own bin, in order
    assert_array_equal(mapper.transform(X)[0], np.searchsorted(distinct, X[:, 0]))


@pytest.mark.parametrize("max_bins", [255, 64, 3])
def test_many_values_give_equal_frequency_bins(max_bins):
    rng = np.random.default_rng(0)
    n = 20_000
    X = np.column_stack([rng.normal(size=n), rng.exponential(size=n)])
    mapper = BinMapper(max_bins=max_bins, random_state=0).fit(X)
    X_binned = mapper.transform(X)
    for f in range(X.shape[1]):
        # all values distinct: every quantile is a distinct edge below the maximum
        assert mapper.n_bins_non_missing_[f] == max_bins
        counts = np.bincount(X_binned[f], minlength=max_bins)
        assert counts.size == max_bins  # no bin beyond max_bins - 1
        # the edges are quantiles of these very rows, so each bin holds n / max_bins rows
        # up to the rounding of ranks (a row or two); 0.5x-2x leaves ample room while
        # equal-width bins (tails of a normal, or an exponential) would fail it
        expected = n / max_bins
        assert counts.min() >= 0.5 * expected
        assert counts.max() <= 2 * expected


def test_ties_never_exceed_max_bins_and_last_bin_is_not_empty():
    rng = np.random.default_rng(1)
    X = np.concatenate([np.zeros(5000), rng.integers(1, 400, 5000).astype(float)])[:, None]
    mapper = BinMapper(max_bins=100, random_state=0).fit(X)
    edges = edges_of(mapper, 0)
    assert mapper.n_bins_non_missing_[0] <= 100
    assert np.all(np.diff(edges) > 0)  # strictly increasing
    assert edges[-1] < X.max()
    X_binned = mapper.transform(X)
    assert (X_binned == mapper.n_edges_[0]).any()  # the last value bin holds the maximum
    assert X_binned.max() == mapper.n_edges_[0]


def test_missing_values():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(1000, 3))
    X[::7, 1] = np.nan
    X[:, 2] = np.nan
    mapper = BinMapper(random_state=0).fit(X)
    assert_array_equal(mapper.has_missing_, [False, True, True])
    X_binned = mapper.transform(X)
    assert_array_equal(X_binned == MISSING_BIN, np.isnan(X).T)
    # NaN take no part in the edges: same edges as on the non-missing rows alone
    seen = X[~np.isnan(X[:, 1]), 1:2]
    assert_array_equal(edges_of(mapper, 1), edges_of(BinMapper(random_state=0).fit(seen), 0))
    # an all-missing feature has a single (empty) value bin
    assert mapper.n_edges_[2] == 0
    assert mapper.n_bins_non_missing_[2] == 1
    # NaN at transform time on a feature without NaN in fit still gets MISSING_BIN
    assert mapper.transform(np.full((1, 3), np.nan))[0, 0] == MISSING_BIN  # feature 0, row 0


def test_constant_feature_has_one_bin():
    X = np.column_stack([np.full(500, 3.25), np.arange(500.0)])
    mapper = BinMapper(random_state=0).fit(X)
    assert mapper.n_edges_[0] == 0
    assert mapper.n_bins_non_missing_[0] == 1
    unseen = np.array([[-1e9, 0.0], [3.25, 0.0], [1e9, 0.0]])
    assert_array_equal(mapper.transform(unseen)[0], 0)
    assert_array_equal(mapper.transform(X)[0], 0)


def test_transform_matches_searchsorted_twin():
    rng = np.random.default_rng(3)
    X = np.column_stack([rng.normal(size=5000), rng.integers(0, 20, 5000),
                         np.where(rng.random(5000) < 0.3, np.nan, rng.gamma(2.0, size=5000))])
    mapper = BinMapper(max_bins=50, random_state=0).fit(X)
    X_test = np.vstack([X, 2 * rng.normal(size=(500, 3))])
    assert_array_equal(mapper.transform(X_test),
                       bin_matrix(X_test, mapper.bin_edges_, mapper.n_edges_))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n_features", [1, 3])
@pytest.mark.parametrize("n_samples", [0, 1, 700])
def test_transform_is_feature_major(n_samples, n_features, dtype):
    """uint8 (n_features, n_samples) in C order, whatever the shape: X_binned[f] is feature f."""
    rng = np.random.default_rng(9)
    X = rng.normal(size=(700, n_features))
    X[rng.random(X.shape) < 0.1] = np.nan
    mapper = BinMapper(max_bins=20, random_state=0).fit(X)
    X_test = X[:n_samples].astype(dtype)
    X_binned = mapper.transform(X_test)
    assert X_binned.shape == (n_features, n_samples)
    assert X_binned.dtype == np.uint8
    assert X_binned.flags.c_contiguous
    for f in range(n_features):
        expected = np.searchsorted(edges_of(mapper, f), X_test[:, f].astype(np.float64))
        expected[np.isnan(X_test[:, f])] = MISSING_BIN
        assert_array_equal(X_binned[f], expected)


def test_thresholds_match_bins():
    rng = np.random.default_rng(4)
    X = np.column_stack([rng.normal(size=3000), rng.integers(0, 6, 3000).astype(float)])
    mapper = BinMapper(max_bins=32, random_state=0).fit(X)
    X_test = np.vstack([X, 3 * rng.normal(size=(500, 2))])
    X_binned = mapper.transform(X_test)
    for f in range(2):
        bins = np.arange(mapper.n_bins_non_missing_[f])
        thr = mapper.thresholds(np.full(bins.size, f), bins)
        assert_array_equal(thr[:-1], edges_of(mapper, f))
        # the last bin sends every value left: its threshold is the largest float
        assert thr[-1] == np.finfo(X_DTYPE).max
        for b, t in zip(bins, thr, strict=True):
            assert_array_equal(X_test[:, f] <= t, X_binned[f] <= b)


def test_deterministic_for_a_seed():
    X = np.random.default_rng(5).normal(size=(400, 2))
    a = BinMapper(max_bins=16, subsample=100, random_state=7).fit(X)
    b = BinMapper(max_bins=16, subsample=100, random_state=7).fit(X)
    c = BinMapper(max_bins=16, subsample=100, random_state=8).fit(X)
    assert_array_equal(a.bin_edges_, b.bin_edges_)
    assert not np.array_equal(a.bin_edges_, c.bin_edges_)  # the seed does matter


def test_subsample_only_above_its_size():
    assert BinMapper().subsample == binning.BIN_SUBSAMPLE == 200_000
    X = np.random.default_rng(6).permutation(100).astype(float)[:, None]  # distinct
    at_size = [BinMapper(subsample=100, random_state=s).fit(X) for s in (0, 1)]
    above = [BinMapper(subsample=50, random_state=s).fit(X) for s in (0, 1)]
    # no subsample: every value counts (exact midpoints) and the seed is unused
    assert at_size[0].n_edges_[0] == 99
    assert_array_equal(at_size[0].bin_edges_, at_size[1].bin_edges_)
    # subsample of 50 rows: 50 distinct values, 49 midpoints, depending on the seed
    assert above[0].n_edges_[0] == 49
    assert not np.array_equal(above[0].bin_edges_, above[1].bin_edges_)


def test_edges_depend_only_on_the_subsample():
    rng = np.random.default_rng(7)
    n, size, seed = 3000, 500, 11
    X = rng.normal(size=(n, 2))
    X[rng.random(X.shape) < 0.1] = np.nan
    mapper = BinMapper(max_bins=40, subsample=size, random_state=seed).fit(X)
    # the documented draw: `size` rows without replacement from default_rng(seed)
    rows = np.sort(np.random.default_rng(seed).choice(n, size, replace=False))
    on_rows = BinMapper(max_bins=40, random_state=0).fit(X[rows])
    assert_array_equal(mapper.bin_edges_, on_rows.bin_edges_)
    assert_array_equal(mapper.has_missing_, on_rows.has_missing_)
    # rows outside the subsample can be anything
    X_other = X.copy()
    outside = np.setdiff1d(np.arange(n), rows)
    X_other[outside] = 1e6
    other = BinMapper(max_bins=40, subsample=size, random_state=seed).fit(X_other)
    assert_array_equal(other.bin_edges_, mapper.bin_edges_)


def test_default_subsample_threshold_is_200_000_rows():
    """Cheap on one column: percentiles of 200,000 values take milliseconds."""
    x = np.random.default_rng(8).normal(size=200_001)

    def edges(n_rows, seed):
        return BinMapper(max_bins=16, random_state=seed).fit(x[:n_rows, None]).bin_edges_

    assert_array_equal(edges(200_000, 0), edges(200_000, 1))  # all rows, seed unused
    assert not np.array_equal(edges(200_001, 0), edges(200_001, 1))  # a subsample


# ---- categorical features ----------------------------------------------------------------
def test_categorical_feature_bins_are_category_indices():
    rng = np.random.default_rng(10)
    categories = np.array([-3.0, 0.5, 2.0, 10.0, 11.0])
    X = np.column_stack([rng.choice(categories, 2000), rng.normal(size=2000)])
    X[::11, 0] = np.nan
    mapper = BinMapper(max_bins=64, random_state=0, is_categorical=[True, False]).fit(X)
    # as wide as the feature with most edges: the numerical one's 63
    assert mapper.bin_edges_.shape == (2, 63)
    assert_array_equal(mapper.is_categorical_, [1, 0])
    assert mapper.is_categorical_.dtype == np.uint8
    assert_array_equal(edges_of(mapper, 0), categories)  # sorted categories, exactly
    assert np.all(mapper.bin_edges_[0, 5:] == np.inf)  # padding
    # one bin per category, no extra bin beyond the last edge
    assert (mapper.n_edges_[0], mapper.n_bins_non_missing_[0]) == (5, 5)
    assert_array_equal(mapper.has_missing_, [True, False])
    # the numerical feature is binned as without the mask
    plain = BinMapper(max_bins=64, random_state=0).fit(X)
    assert_array_equal(mapper.bin_edges_[1], plain.bin_edges_[1])
    assert mapper.n_bins_non_missing_[1] == plain.n_bins_non_missing_[1]
    # unseen values, NaN and near misses share the missing bin
    X_test = np.vstack([X, [[1.0, 0.0], [np.nextafter(2.0, 3.0), 0.0], [1e9, 0.0],
                            [np.nan, 0.0], [np.inf, 0.0]]])
    X_binned = mapper.transform(X_test)
    assert_array_equal(X_binned, bin_matrix(X_test, mapper.bin_edges_, mapper.n_edges_,
                                            mapper.is_categorical_))
    assert_array_equal(X_binned[0, -5:], MISSING_BIN)
    # categorical splits have no raw threshold
    assert_array_equal(mapper.thresholds(np.array([0, 0]), np.array([-1, 2])), [0.0, 0.0])


def test_too_many_categories_keep_the_most_frequent():
    # counts: 9 x9, 2 x7, 4 x7, then 1, 3, 5, 7 x3 and 6 x1: with 5 bins keep 9, 2, 4
    # and, among the count-3 ties, the smaller 1 and 3
    counts = {9.0: 9, 2.0: 7, 4.0: 7, 1.0: 3, 3.0: 3, 5.0: 3, 7.0: 3, 6.0: 1}
    values = np.concatenate([np.full(n, v) for v, n in counts.items()])
    X = np.random.default_rng(11).permutation(values)[:, None]
    mapper = BinMapper(max_bins=5, is_categorical=[True]).fit(X)
    assert_array_equal(edges_of(mapper, 0), [1.0, 2.0, 3.0, 4.0, 9.0])
    assert mapper.n_bins_non_missing_[0] == 5
    X_binned = mapper.transform(np.array([[1.0], [3.0], [5.0], [6.0], [7.0], [9.0]]))
    assert_array_equal(X_binned[0], [0, 2, MISSING_BIN, MISSING_BIN, MISSING_BIN, 4])


@pytest.mark.parametrize("n_categories", [255, 256, 600])
def test_many_categories_match_the_twin(n_categories):
    rng = np.random.default_rng(n_categories)
    # small counts (many ties) on spread-out float categories
    pool = rng.permutation(np.linspace(-100, 100, 5000))[:n_categories]
    X = rng.choice(pool, size=(4000, 1))
    X[:n_categories, 0] = pool  # every category present
    X[::13, 0] = np.nan
    mapper = BinMapper(is_categorical=[True]).fit(X)
    expected = category_table(X[:, 0], 255)
    assert_array_equal(edges_of(mapper, 0), expected)
    assert mapper.n_bins_non_missing_[0] == 255
    X_binned = mapper.transform(X)
    assert_array_equal(X_binned[0], category_bins(X[:, 0], expected))
    assert np.unique(X_binned[0][X_binned[0] != MISSING_BIN]).size == 255  # 0..254 used
    # with more categories than bins, some known values share the missing bin
    assert (n_categories > 255) == np.any((X_binned[0] == MISSING_BIN) & ~np.isnan(X[:, 0]))


def test_categories_come_from_every_row_not_the_subsample():
    X = np.column_stack([np.zeros(1000), np.arange(1000.0)])
    X[-1, 0] = 7.0  # one rare category
    mappers = [BinMapper(subsample=50, random_state=s, is_categorical=[True, False]).fit(X)
               for s in range(3)]
    for mapper in mappers:
        assert_array_equal(edges_of(mapper, 0), [0.0, 7.0])
        assert mapper.transform(X[-1:])[0, 0] == 1
    # the numerical feature does use the subsample: its edges depend on the seed
    assert not np.array_equal(mappers[0].bin_edges_[1], mappers[1].bin_edges_[1])


def test_float32_categories():
    X = np.array([[0.1], [0.5], [0.1], [np.nan]], dtype=np.float32)
    mapper = BinMapper(is_categorical=[True]).fit(X)
    # categories are the float32 values, exactly, held in float64
    assert_array_equal(edges_of(mapper, 0), np.array([0.1, 0.5], dtype=np.float32))
    assert_array_equal(mapper.transform(X)[0], [0, 1, 0, MISSING_BIN])
    # the float64 0.1 is not the float32 category
    assert mapper.transform(np.array([[0.1]]))[0, 0] == MISSING_BIN
