"""find_best_splits on categorical features against the scan and exhaustive twins."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from reference import (
    best_split,
    bins_of,
    bitset_of,
    categorical_candidates,
    exhaustive_categorical,
    histogram,
    present_categories,
)
from treeboost._dtypes import G_H_DTYPE, MISSING_BIN, N_BINS, NODE_DTYPE, SUM_DTYPE
from treeboost._kernels.records import FeatureBins, SplitParams
from treeboost._kernels.splitting import (
    BIN,
    BITSET_WORDS,
    GAIN,
    LEFT_C,
    LEFT_G,
    LEFT_H,
    MISSING_LEFT,
    N_SPLIT_COLUMNS,
    find_best_splits,
)

DEFAULTS = {"reg_lambda": 0.0, "reg_alpha": 0.0, "min_samples_leaf": 1,
            "min_child_weight": 1e-3, "cat_l2": 10.0, "cat_smooth": 10.0,
            "max_cat_threshold": 32, "max_cat_to_onehot": 4, "max_cat_ordered": 0}
# The twins sum a left set's bins in bin order, the kernel in scan order: float64
# round-off on sums of <= 600 float32 terms of size <= ~5 and on gains of size
# <= ~1e3, far below these tolerances, far above nothing.
TOL = {"rtol": 1e-10, "atol": 1e-10}


def run(hist, n_bins_non_missing, totals, is_categorical=None, features=None, **params):
    """find_best_splits with the grower's argument types; returns (out, bitsets)."""
    p = {**DEFAULTS, **params}
    n_features = hist.shape[0]
    features = (np.arange(n_features, dtype=NODE_DTYPE) if features is None
                else np.asarray(features, dtype=NODE_DTYPE))
    is_categorical = (np.ones(n_features, dtype=np.uint8) if is_categorical is None
                      else np.asarray(is_categorical, dtype=np.uint8))
    out = np.empty((features.size, N_SPLIT_COLUMNS), dtype=SUM_DTYPE)
    bitsets = np.full((features.size, BITSET_WORDS), 0xDEADBEEF, dtype=np.uint32)
    sum_g, sum_h, count = (float(t) for t in totals)
    feature_bins = FeatureBins(np.asarray(n_bins_non_missing, dtype=NODE_DTYPE),
                               is_categorical, MISSING_BIN)
    split = SplitParams(*(float(p[k]) for k in ("reg_lambda", "reg_alpha", "min_samples_leaf",
                                                "min_child_weight", "cat_l2", "cat_smooth")),
                        int(p["max_cat_threshold"]), int(p["max_cat_to_onehot"]), 0.0,
                        float(p["max_cat_ordered"]))
    find_best_splits(hist, features, feature_bins, sum_g, sum_h, count, split, out, bitsets,
                     True, None)
    return out, bitsets


def twin_params(**params):
    return {**DEFAULTS, **params}


def random_node(seed=0, n_samples=600):
    """Histogram of a node with categorical features of 2..255 categories (bins), with
    and without missing rows; each category has its own mean gradient."""
    rng = np.random.default_rng(seed)
    nb = np.array([2, 3, 4, 5, 7, 30, 255, 1, 6], dtype=NODE_DTYPE)
    X = np.column_stack([rng.integers(0, b, n_samples) for b in nb]).astype(np.uint8)
    X[rng.random(X.shape) < 0.1] = MISSING_BIN
    X[X[:, 3] == MISSING_BIN, 3] = 0  # 5 categories, no missing rows
    X[:, 7] = MISSING_BIN  # only the missing bin: nothing to split
    effects = rng.normal(size=(nb.size, N_BINS))
    g = (rng.normal(size=n_samples) + effects[np.arange(nb.size), X].sum(axis=1))
    h = rng.uniform(0.1, 1.0, n_samples).astype(G_H_DTYPE)
    hist = histogram(np.ascontiguousarray(X.T), np.arange(n_samples), g.astype(G_H_DTYPE), h)
    return hist, nb, hist[0].sum(axis=0)


def assert_twin_choice(out, bitset, hist_f, nb, totals, **params):
    """The kernel picks a candidate of the documented scan with the twin's best gain,
    and reports that candidate's sums and missing side."""
    p = twin_params(**params)
    candidates = categorical_candidates(hist_f, nb, *totals, **p)
    assert out[BIN] == -1
    best = max([c[1] for c in candidates], default=-np.inf)
    if best == -np.inf:
        assert out[GAIN] == -np.inf
        return
    assert_allclose(out[GAIN], best, **TOL)
    left = bins_of(bitset)
    by_left = {c[0]: c for c in candidates}
    assert left in by_left, f"{sorted(left)} is not a candidate of the scan"
    _, gain, gl, hl, cl = by_left[left]
    assert_allclose(gain, best, **TOL)
    # a strict best (no other candidate within round-off) is picked exactly
    near = [c[0] for c in candidates if c[1] >= best - 1e-9 * max(1.0, abs(best))]
    if len(near) == 1:
        assert left == near[0]
    assert_allclose(out[[LEFT_G, LEFT_H]], [gl, hl], **TOL)
    assert out[LEFT_C] == cl
    assert out[MISSING_LEFT] == (MISSING_BIN in left)


CASES = {
    "defaults": {},
    "plain": {"cat_l2": 0.0, "cat_smooth": 0.0},
    "l2": {"reg_lambda": 3.0, "cat_l2": 1.0},
    "l1": {"reg_alpha": 2.0},
    # past max_cat_ordered (0 here) the sorted scan leaves out categories of fewer than
    # cat_smooth rows: at 100 every category of these ~70-row nodes; so the smoothing
    # with the ordered scan on, and a bound that leaves out some categories and not others
    "smooth": {"cat_smooth": 100.0, "max_cat_ordered": 255},
    "rare_out": {"cat_smooth": 70.0},
    "onehot_upto_8": {"max_cat_to_onehot": 8},
    "never_onehot": {"max_cat_to_onehot": 1},
    "max_cat_threshold": {"max_cat_threshold": 2},
    "min_samples_leaf": {"min_samples_leaf": 120},
    "min_child_weight": {"min_child_weight": 60.0},
    # max_cat_ordered: the code-order prefixes after either scan, for features of up to
    # 255 (all), 7 (not the 30- and 255-category ones) categories
    "ordered": {"max_cat_ordered": 255},
    "ordered_upto_7": {"max_cat_ordered": 7},
    "ordered_onehot_upto_8": {"max_cat_ordered": 255, "max_cat_to_onehot": 8},
    "ordered_l2": {"max_cat_ordered": 255, "reg_lambda": 3.0, "cat_l2": 1.0},
    "ordered_min_samples_leaf": {"max_cat_ordered": 255, "min_samples_leaf": 120},
}


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("case", CASES)
def test_matches_scan_twin(case, seed):
    hist, nb, totals = random_node(seed)
    out, bitsets = run(hist, nb, totals, **CASES[case])
    for f in range(nb.size):
        assert_twin_choice(out[f], bitsets[f], hist[f], nb[f], totals, **CASES[case])
    assert out[7, GAIN] == -np.inf  # a single category (the missing bin)
    # 7 categories + missing of ~70 rows each: valid left sets whatever the constraints
    assert np.isfinite(out[4, GAIN])


@pytest.mark.parametrize("seed", range(6))
def test_sorted_scan_is_optimal_without_regularisation(seed):
    """Fisher (1958): for sum G^2/H scores the best partition is a split of the
    categories sorted by G/H, so the scan finds the exhaustive optimum."""
    hist, nb, totals = random_node(seed)
    params = {"reg_lambda": 0.0, "reg_alpha": 0.0, "cat_l2": 0.0, "cat_smooth": 0.0,
              "min_samples_leaf": 1, "min_child_weight": 0.0, "max_cat_threshold": 32,
              "max_cat_to_onehot": 1}
    out, _ = run(hist, nb, totals, **params)
    checked = 0
    for f in range(nb.size):
        if 2 <= len(present_categories(hist[f], nb[f])) <= 8:
            best = exhaustive_categorical(hist[f], nb[f], *totals, reg_lambda=0.0,
                                          reg_alpha=0.0, cat_l2=0.0, min_samples_leaf=1,
                                          min_child_weight=0.0)
            # equal up to the round-off of summing <= 8 bins in two orders
            assert_allclose(out[f, GAIN], best, rtol=1e-9)
            checked += 1
    assert checked >= 5


@pytest.mark.parametrize("case", CASES)
def test_never_beats_the_exhaustive_optimum(case):
    """Every candidate of the scan is a valid partition: the gain is at most the best
    over all partitions with the same constraints and <= max_cat_threshold left."""
    p = twin_params(**CASES[case])
    hist, nb, totals = random_node(3)
    out, _ = run(hist, nb, totals, **CASES[case])
    for f in range(nb.size):
        m = len(present_categories(hist[f], nb[f]))
        if m <= 8:
            # one against the rest and the ordered prefixes: children without cat_l2
            cat_l2 = (0.0 if m <= p["max_cat_to_onehot"] or nb[f] <= p["max_cat_ordered"]
                      else p["cat_l2"])
            best = exhaustive_categorical(
                hist[f], nb[f], *totals, max_left=p["max_cat_threshold"], cat_l2=cat_l2,
                **{k: p[k] for k in ("reg_lambda", "reg_alpha", "min_samples_leaf",
                                     "min_child_weight")})
            if best == -np.inf:
                assert out[f, GAIN] == -np.inf
            else:  # round-off slack as in TOL
                assert out[f, GAIN] <= best + 1e-10 * max(1.0, abs(best))


@pytest.mark.parametrize("case", ["min_samples_leaf", "min_child_weight", "max_cat_threshold"])
def test_constraints_are_respected_and_matter(case):
    hist, nb, totals = random_node(4)
    p = twin_params(**CASES[case])
    free, free_bits = run(hist, nb, totals)
    out, bitsets = run(hist, nb, totals, **CASES[case])
    assert np.any(free[:, GAIN] != out[:, GAIN]) or not np.array_equal(free_bits, bitsets)
    for f in np.flatnonzero(np.isfinite(out[:, GAIN])):
        cl, hl = out[f, LEFT_C], out[f, LEFT_H]
        assert min(cl, totals[2] - cl) >= p["min_samples_leaf"]
        assert min(hl, totals[1] - hl) >= p["min_child_weight"]
        assert len(bins_of(bitsets[f])) <= p["max_cat_threshold"]


def test_nothing_valid_gives_minus_inf():
    hist, nb, totals = random_node(5)
    for params in ({"min_samples_leaf": totals[2] // 2 + 1},
                   {"min_child_weight": totals[1] / 2 + 1e-6}):
        out, _ = run(hist, nb, totals, **params)
        assert np.all(out[:, GAIN] == -np.inf)


def small_hist(values, missing=None):
    """One feature from rows of (g, h, count) per bin (and the missing bin)."""
    hist = np.zeros((1, N_BINS, 3), dtype=SUM_DTYPE)
    hist[0, : len(values)] = values
    if missing is not None:
        hist[0, MISSING_BIN] = missing
    return hist


# G = -3 | 1 | 4 on three categories, H = 1 each, lambda = 1
THREE = [[-3, 1, 1], [1, 1, 1], [4, 1, 1]]


@pytest.mark.parametrize("cat_l2", [0.0, 2.0])
def test_closed_form_gain_one_vs_rest_ignores_cat_l2(cat_l2):
    # 3 categories <= 4: one against the rest, children and parent with plain lambda:
    # {0}: 9/(1+1) + 25/(2+1) - 2^2/(3+1) = 4.5 + 25/3 - 1 (the best)
    hist = small_hist(THREE)
    out, bitsets = run(hist, [3], (2.0, 3.0, 3.0), reg_lambda=1.0, cat_l2=cat_l2,
                       min_child_weight=0.0)
    assert_allclose(out[0, GAIN], 3.5 + 25 / 3, rtol=1e-15)  # two roundings at most
    assert_array_equal(bitsets[0], bitset_of([0]))
    assert_array_equal(out[0, [BIN, MISSING_LEFT, LEFT_G, LEFT_H, LEFT_C]], [-1, 0, -3, 1, 1])


def test_closed_form_gain_sorted_children_with_cat_l2_parent_without():
    # 3 categories > 2: sorted scan (order 0, 1, 2), children with lambda + cat_l2 = 3,
    # the parent with lambda = 1: {0} (or its complement {1, 2}, the same partition):
    # 9/(1+3) + 25/(2+3) - 2^2/(3+1) = 2.25 + 5 - 1 = 6.25
    hist = small_hist(THREE)
    out, bitsets = run(hist, [3], (2.0, 3.0, 3.0), reg_lambda=1.0, cat_l2=2.0, cat_smooth=0.0,
                       max_cat_to_onehot=2, min_child_weight=0.0)
    assert_allclose(out[0, GAIN], 6.25, rtol=1e-15)  # binary fractions, one rounding
    assert bins_of(bitsets[0]) in ({0}, {1, 2})
    assert out[0, BIN] == -1
    assert out[0, MISSING_LEFT] == 0


# G = -3, -1, +1 on bins 0-2 and +2 on the missing bin, H = 1 each, no regularisation
FOUR = ([[-3, 1, 1], [-1, 1, 1], [1, 1, 1]], [2, 1, 1])
FOUR_PARAMS = {"cat_l2": 0.0, "cat_smooth": 0.0, "min_child_weight": 0.0}


def test_missing_bin_counts_as_a_category_for_onehot():
    hist = small_hist(*FOUR)
    # 4 categories present (3 + missing) <= 4: one against the rest, {0} is best:
    # 9/1 + 4/3 - 1/4
    out, bitsets = run(hist, [3], (-1.0, 4.0, 4.0), max_cat_to_onehot=4, **FOUR_PARAMS)
    assert_array_equal(bitsets[0], bitset_of([0]))
    assert_allclose(out[0, GAIN], 9 + 4 / 3 - 1 / 4, rtol=1e-14)  # a few roundings
    # 4 > 3: sorted scan, the best partition {0, 1} | {2, missing}: 16/2 + 9/2 - 1/4
    out, bitsets = run(hist, [3], (-1.0, 4.0, 4.0), max_cat_to_onehot=3, **FOUR_PARAMS)
    assert bins_of(bitsets[0]) in ({0, 1}, {2, MISSING_BIN})
    assert out[0, MISSING_LEFT] == (MISSING_BIN in bins_of(bitsets[0]))
    assert_allclose(out[0, GAIN], 12.25, rtol=1e-14)


def test_missing_bin_alone_on_the_left():
    # one against the rest: the missing rows (G = -5) differ most from the others
    hist = small_hist([[1, 1, 2], [0.5, 1, 2]], missing=[-5, 1, 2])
    out, bitsets = run(hist, [2], (-3.5, 3.0, 6.0), **FOUR_PARAMS)
    assert_array_equal(bitsets[0], bitset_of([MISSING_BIN]))
    assert bitsets[0, 7] == 1 << 31
    assert not bitsets[0, :7].any()
    assert (out[0, MISSING_LEFT], out[0, LEFT_C]) == (1, 2)


def test_missing_bin_with_a_category_on_the_left():
    # 6 categories + missing, sorted scan; at most 2 on the left: {0, missing} has the
    # lowest G/H, and no suffix of 2 is its complement
    values = [[-4, 1, 3], [1, 1, 3], [0.5, 1, 3], [2, 1, 3], [1.5, 1, 3], [0, 1, 3]]
    hist = small_hist(values, missing=[-4.5, 1, 3])
    totals = hist[0].sum(axis=0)
    out, bitsets = run(hist, [6], totals, max_cat_threshold=2, **FOUR_PARAMS)
    assert bins_of(bitsets[0]) == {0, MISSING_BIN}
    assert out[0, MISSING_LEFT] == 1
    assert_twin_choice(out[0], bitsets[0], hist[0], 6, totals, max_cat_threshold=2,
                       **FOUR_PARAMS)


def test_equal_ratios_keep_bin_order():
    """The order by G / (H + cat_smooth) is stable: bins 0 and 1 tie, bin 0 comes first."""
    values = [[-1, 1, 1], [-1, 1, 1], [1, 1, 1], [1, 1, 1], [0.5, 1, 1], [-0.2, 1, 1]]
    hist = small_hist(values)
    out, bitsets = run(hist, [6], hist[0].sum(axis=0), max_cat_threshold=1, **FOUR_PARAMS)
    assert_array_equal(bitsets[0], bitset_of([0]))


@pytest.mark.parametrize("m", [1, 2])
def test_one_category_and_missing(m):
    """A category plus the missing bin: values against missing (m=2); one bin: nothing."""
    hist = small_hist([[-1, 1, 5]], missing=[1, 1, 3] if m == 2 else None)
    out, bitsets = run(hist, [1], hist[0].sum(axis=0))
    if m == 1:
        assert out[0, GAIN] == -np.inf
    else:
        assert bins_of(bitsets[0]) in ({0}, {MISSING_BIN})
        assert out[0, LEFT_C] == (5 if 0 in bins_of(bitsets[0]) else 3)


def test_mixed_numerical_and_categorical_features():
    hist, nb, totals = random_node(6)
    is_cat = np.array([1, 0, 1, 0, 0, 1, 0, 1, 1], dtype=np.uint8)
    features = [8, 6, 5, 1, 2]
    out, bitsets = run(hist, nb, totals, is_categorical=is_cat, features=features)
    numerical = {k: v for k, v in DEFAULTS.items()
                 if not k.startswith(("cat", "max_cat"))}
    for k, f in enumerate(features):
        if is_cat[f]:
            assert_twin_choice(out[k], bitsets[k], hist[f], nb[f], totals)
        else:
            gain, b, ml, gl, hl, cl = best_split(hist[f], nb[f], *totals, **numerical)
            assert (out[k, BIN], out[k, MISSING_LEFT]) == (b, ml)
            assert_allclose(out[k, [GAIN, LEFT_G, LEFT_H]], [gain, gl, hl], **TOL)
            assert not bitsets[k].any()


@pytest.mark.parametrize("m", [1, 2, 17, 64, 65, 200])  # insertion sort up to 64, argsort past
def test_stable_order_is_numpy_stable_argsort(m):
    """The category order of the sorted scan: ties keep the categories' bin order, as
    np.argsort(kind="mergesort") (which the scan used before it stopped allocating)."""
    from treeboost._kernels.splitting import _stable_order

    rng = np.random.default_rng(m)
    ratio = rng.integers(-3, 4, size=300).astype(np.float64) / 7.0  # many exact ties
    order = np.full(300, -1, dtype=np.int64)
    _stable_order(ratio, m, order)
    np.testing.assert_array_equal(order[:m], np.argsort(ratio[:m], kind="mergesort"))
    assert (order[m:] == -1).all()  # nothing past m is written


# Five ordinal categories, G = -2, -2, +2, +2, +2 (H = 1 each, lambda = 1): the code-order
# prefix {0, 1} separates the signs, no single category does
ORDINAL = [[-2, 1, 1], [-2, 1, 1], [2, 1, 1], [2, 1, 1], [2, 1, 1]]


def test_closed_form_ordered_prefix_beats_one_vs_rest():
    # one vs rest (5 <= 8): best {0}: 4/2 + 16/5 - 4/6 = 4.533; ordered {0, 1}: 16/3 +
    # 36/4 - 4/6 = 13.667 (plain lambda, cat_l2 ignored)
    hist = small_hist(ORDINAL)
    kw = dict(reg_lambda=1.0, cat_l2=5.0, min_child_weight=0.0, max_cat_to_onehot=8)
    out, bitsets = run(hist, [5], (2.0, 5.0, 5.0), **kw)
    assert_allclose(out[0, GAIN], 4 / 2 + 16 / 5 - 4 / 6, rtol=1e-14)
    assert len(bins_of(bitsets[0])) == 1
    out, bitsets = run(hist, [5], (2.0, 5.0, 5.0), max_cat_ordered=5, **kw)
    assert_allclose(out[0, GAIN], 16 / 3 + 36 / 4 - 4 / 6, rtol=1e-14)
    assert bins_of(bitsets[0]) == {0, 1}
    assert_array_equal(out[0, [BIN, MISSING_LEFT, LEFT_G, LEFT_H, LEFT_C]], [-1, 0, -4, 2, 2])


def test_ordered_prefixes_keep_the_missing_bin_right():
    # the missing rows' gradient matches the first categories': a prefix never takes them
    hist = small_hist(ORDINAL, missing=[-2, 1, 1])
    out, bitsets = run(hist, [5], (0.0, 6.0, 6.0), reg_lambda=1.0, min_child_weight=0.0,
                       max_cat_to_onehot=8, max_cat_ordered=5)
    assert bins_of(bitsets[0]) == {0, 1}
    assert out[0, MISSING_LEFT] == 0


def test_ordered_adds_candidates_so_never_lowers_the_gain():
    higher = 0
    for seed in range(3):
        hist, nb, totals = random_node(seed)
        plain, _ = run(hist, nb, totals, max_cat_to_onehot=8)
        ordered, _ = run(hist, nb, totals, max_cat_to_onehot=8, max_cat_ordered=5)
        assert np.all(ordered[:, GAIN] >= plain[:, GAIN])
        higher += int(np.sum(ordered[:, GAIN] > plain[:, GAIN]))
    assert higher >= 1  # seed 2's 5-category feature


def test_no_ordered_splits_above_max_cat_ordered():
    """A feature of more categories than max_cat_ordered scans as without it."""
    hist = small_hist(ORDINAL)
    kw = dict(reg_lambda=1.0, min_child_weight=0.0, max_cat_to_onehot=8)
    plain = run(hist, [5], (2.0, 5.0, 5.0), **kw)
    for bound in (0, 4):
        out = run(hist, [5], (2.0, 5.0, 5.0), max_cat_ordered=bound, **kw)
        assert_array_equal(out[0], plain[0])
        assert_array_equal(out[1], plain[1])
