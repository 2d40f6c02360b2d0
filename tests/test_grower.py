"""TreeGrower on pre-binned data: known splits, partitions, constraints, best-first order."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from reference import (
    best_split,
    best_split_of_rows,
    bins_of,
    categorical_candidates,
    histogram,
    leaf_of,
)
from treeboost import grower as grower_module
from treeboost._dtypes import G_H_DTYPE, INDEX_DTYPE, MISSING_BIN, NODE_DTYPE
from treeboost._kernels.grower import _node_features
from treeboost._kernels.records import NodeColumns
from treeboost._plan import ExecutionPlan, make_plan
from treeboost.binning import SparseBinned
from treeboost.grower import GrowerParams, TreeGrower, grow_data_parallel

N_BINS_NON_MISSING = 255

# Leaf and node sums come from histogram prefix sums and parent - child
# subtractions in float64 (a few per level), the reference from one float64 sum
# over the rows: the difference is a few eps64 times the root's sum of |g| or h
# (<= 4,000 here), so <= ~1e-11; 1e-8 leaves room for deep trees.
SUM_ATOL = 1e-8


def random_data(n_samples=4000, n_features=4, seed=0, missing=0.05):
    """Feature-major bins (n_features, n_samples) in 0..254 plus missing values, C order,
    and gradients with some signal."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, N_BINS_NON_MISSING, size=(n_samples, n_features)).astype(np.uint8)
    X[rng.random(X.shape) < missing] = MISSING_BIN
    signal = np.where(X[:, 0] > 128, 1.0, -1.0) + 0.5 * (X[:, 1] / 255.0)
    gradient = (signal + rng.normal(size=n_samples)).astype(G_H_DTYPE)
    hessian = rng.uniform(0.1, 1.0, n_samples).astype(G_H_DTYPE)
    return np.ascontiguousarray(X.T), gradient, hessian


def parallel_from(partition_rows=0, histogram_updates=0, n_threads=2):
    """A plan whose nodes take the parallel partition from ``partition_rows`` rows and the
    parallel histograms from ``histogram_updates`` row x feature updates, and whose trees
    are lean only below both (``lean_tree_updates``): small data on the parallel paths."""
    return ExecutionPlan(n_threads=n_threads, serial_partition_rows=partition_rows,
                         serial_histogram_updates=histogram_updates,
                         lean_tree_updates=histogram_updates)


def grow(X, gradient, hessian, rows=None, features=None, all_rows=False, is_categorical=None,
         plan=None, **params):
    """Grow one tree on feature-major X (255 value bins per feature, numerical unless
    ``is_categorical`` says otherwise), under ``plan`` (by default the thread count's);
    return (GrownTree, reordered sample_indices)."""
    n_features, n_samples = X.shape
    rows = np.arange(n_samples) if rows is None else rows
    features = np.arange(n_features) if features is None else features
    is_categorical = np.zeros(n_features) if is_categorical is None else is_categorical
    grower = TreeGrower(X, np.full(n_features, N_BINS_NON_MISSING, dtype=NODE_DTYPE),
                        np.asarray(is_categorical, dtype=np.uint8), GrowerParams(**params),
                        plan=plan)
    sample_indices = rows.astype(INDEX_DTYPE)
    tree = grower.grow(gradient, hessian, sample_indices, features.astype(NODE_DTYPE),
                       all_rows=all_rows)
    return tree, sample_indices


def node_depths(tree):
    depth = np.zeros(tree.left.size, dtype=int)
    for node in range(tree.left.size):  # children come after their parent
        if tree.left[node] >= 0:
            depth[[tree.left[node], tree.right[node]]] = depth[node] + 1
    return depth


def node_rows(tree, sample_indices):
    """Rows of every node: the slice spanned by the leaves below it."""
    span = {}
    for j, node in enumerate(tree.leaf_nodes):
        span[node] = (tree.leaf_starts[j], tree.leaf_stops[j])
    for node in range(tree.left.size - 1, -1, -1):  # children before parents
        if tree.left[node] >= 0:
            (a, _), (_, d) = span[tree.left[node]], span[tree.right[node]]
            span[node] = (a, d)
    return {node: sample_indices[a:b] for node, (a, b) in span.items()}


@pytest.mark.parametrize("missing_goes", ["nowhere", "right", "left"])
def test_known_decision_function(missing_goes):
    rng = np.random.default_rng(0)
    X = rng.integers(0, N_BINS_NON_MISSING, size=(5000, 3)).astype(np.uint8)
    y = np.where(X[:, 0] > 100, 1.0, -1.0)
    if missing_goes != "nowhere":  # missing x0 behaves like large or small x0
        X[::10, 0] = MISSING_BIN
        y[::10] = 1.0 if missing_goes == "right" else -1.0
    gradient = (-y).astype(G_H_DTYPE)  # squared error at F = 0
    tree, _ = grow(np.ascontiguousarray(X.T), gradient, np.ones(5000, dtype=G_H_DTYPE),
                   min_samples_leaf=1)
    assert (tree.feature[0], tree.bin_threshold[0]) == (0, 100)
    if missing_goes != "nowhere":
        assert tree.missing_left[0] == (missing_goes == "left")
    # children are pure: no split has positive gain, the tree is a stump
    assert tree.leaf_nodes.size == 2
    left, right = tree.left[0], tree.right[0]
    assert tree.count[left] == np.sum(y < 0)
    assert tree.sum_g[left] == np.sum(y < 0)  # +1 per row, exact in float64
    assert tree.sum_g[right] == -np.sum(y > 0)


def test_leaves_partition_the_rows():
    X, g, h = random_data()
    rows = np.sort(np.random.default_rng(1).choice(X.shape[1], 3000, replace=False))
    tree, sample_indices = grow(X, g, h, rows=rows, max_leaf_nodes=20, min_samples_leaf=10)
    assert tree.leaf_nodes.size == 20
    order = np.argsort(tree.leaf_starts)
    starts, stops = tree.leaf_starts[order], tree.leaf_stops[order]
    # contiguous, non-empty ranges covering [0, n_rows) exactly once
    assert starts[0] == 0
    assert stops[-1] == rows.size
    assert_array_equal(starts[1:], stops[:-1])
    assert np.all(stops > starts)
    assert_array_equal(np.sort(sample_indices), rows)  # a permutation of the rows
    # every row of leaf j traverses the tree to leaf j
    for node, a, b in zip(tree.leaf_nodes, tree.leaf_starts, tree.leaf_stops, strict=True):
        assert np.all(leaf_of(tree, X[:, sample_indices[a:b]], binned=True) == node)
        assert tree.count[node] == b - a
    internal = np.flatnonzero(tree.left >= 0)
    assert_array_equal(tree.count[internal],
                       tree.count[tree.left[internal]] + tree.count[tree.right[internal]])


def test_node_sums_equal_sums_of_their_rows():
    X, g, h = random_data(seed=2)
    tree, sample_indices = grow(X, g, h, max_leaf_nodes=15, min_samples_leaf=5)
    for node, rows in node_rows(tree, sample_indices).items():
        assert tree.count[node] == rows.size
        assert_allclose(tree.sum_g[node], g[rows].astype(np.float64).sum(), rtol=0,
                        atol=SUM_ATOL)
        assert_allclose(tree.sum_h[node], h[rows].astype(np.float64).sum(), rtol=0,
                        atol=SUM_ATOL)


def test_every_split_is_the_exhaustive_best_of_its_node():
    """The grower's histograms (brute and subtracted) feed the right split search."""
    X, g, h = random_data(seed=3)
    params = {"min_samples_leaf": 15, "min_child_weight": 5.0, "reg_lambda": 1.0,
              "reg_alpha": 0.5}
    tree, sample_indices = grow(X, g, h, max_leaf_nodes=12, **params)
    nb = np.full(X.shape[0], N_BINS_NON_MISSING)
    for node, rows in node_rows(tree, sample_indices).items():
        if tree.left[node] < 0:
            continue
        gain, feature, b, ml = best_split_of_rows(X, rows, g, h, nb, **params)
        assert (tree.feature[node], tree.bin_threshold[node], tree.missing_left[node]) \
            == (feature, b, ml)
        # histogram sums in another order: float64 round-off on gains of size O(10-100)
        assert_allclose(tree.gain[node], gain, rtol=1e-9)


def test_all_rows_shortcut_gives_the_same_tree():
    X, g, h = random_data(seed=4)
    a, idx_a = grow(X, g, h, all_rows=True, max_leaf_nodes=10)
    b, idx_b = grow(X, g, h, all_rows=False, max_leaf_nodes=10)
    for name in ("feature", "bin_threshold", "missing_left", "is_categorical", "cat_bitset",
                 "left", "right", "count", "gain", "sum_g", "sum_h"):
        # same additions in the same order: bit-identical
        assert_array_equal(getattr(a, name), getattr(b, name))
    assert_array_equal(idx_a, idx_b)


def test_serial_and_parallel_kernels_grow_the_same_tree():
    """Small nodes use the serial histogram/partition kernels, large ones the parallel."""
    X, g, h = random_data(seed=12)
    rows = np.arange(1, X.shape[1])  # not all rows: the root histogram uses indices too
    trees = []
    for limit in (0, 10**9):  # every node parallel, then every node serial
        trees.append(grow(X, g, h, rows=rows, max_leaf_nodes=16, min_samples_leaf=5,
                          plan=parallel_from(limit, limit)))
    (a, idx_a), (b, idx_b) = trees
    for name in ("feature", "bin_threshold", "missing_left", "is_categorical", "cat_bitset",
                 "left", "count", "gain", "sum_g", "sum_h"):
        # the same additions in the same order: bit-identical
        assert_array_equal(getattr(a, name), getattr(b, name))
    assert_array_equal(idx_a, idx_b)
    assert a.leaf_nodes.size == 16


def test_lean_kernel_only_where_no_node_reaches_the_parallel_kernels():
    """grow_tree's lean specialisation (``general=None``) has no parallel node kernels
    and no categorical scan: it may be chosen only where no node would use them, or
    where their nodes stay below the plan's ``lean_tree_updates`` (built serially)."""
    X, g, h = random_data(n_samples=2000, n_features=4)
    limits = parallel_from(1000, 3000)

    def general(n_rows, n_used, all_rows, categorical=False, plan=limits):
        is_cat = np.zeros(4, dtype=np.uint8)
        is_cat[1] = categorical
        grower = TreeGrower(X, np.full(4, N_BINS_NON_MISSING, dtype=NODE_DTYPE), is_cat,
                            GrowerParams(), plan=plan)
        args = grower.kernel_arguments(g, h, np.arange(n_rows, dtype=INDEX_DTYPE),
                                       np.arange(n_used, dtype=NODE_DTYPE), all_rows)
        return args[11]

    # all rows: the root's histogram has its own parallel kernel; children hold at
    # most half the rows
    assert general(999, 4, True) is None  # 499 x 4 < 3000
    assert general(999, 4, False) is True  # a sampled root: 999 x 4 >= 3000
    assert general(999, 2, False) is None
    assert general(1000, 1, True) is True  # the root reaches the parallel partition
    assert general(999, 4, True, categorical=True) is True
    # lean up to lean_tree_updates, above the histograms' threshold: 999 x 4 < 6000
    lean_to_6000 = ExecutionPlan(n_threads=2, serial_partition_rows=1000,
                                 serial_histogram_updates=3000, lean_tree_updates=6000)
    assert general(999, 4, False, plan=lean_to_6000) is None
    assert general(999, 7, False, plan=lean_to_6000) is True  # 6993 >= 6000
    assert general(1000, 1, True, plan=lean_to_6000) is True  # the parallel partition
    # one thread: every node serial
    assert general(1999, 4, False, plan=make_plan(2000, n_threads=1)) is None


def test_only_listed_features_are_used():
    X, g, h = random_data(seed=5)
    tree, _ = grow(X, g, h, features=np.array([1, 3]), max_leaf_nodes=8, min_samples_leaf=5)
    assert set(tree.feature[tree.left >= 0]) <= {1, 3}
    assert tree.leaf_nodes.size == 8


def test_constant_gradients_give_one_leaf():
    X, _, _ = random_data(seed=13)
    g = np.full(X.shape[1], -0.25, dtype=G_H_DTYPE)
    tree, _ = grow(X, g, np.ones_like(g), min_samples_leaf=1)
    assert tree.left.size == 1  # no split has a positive gain
    assert tree.sum_g[0] == -0.25 * X.shape[1]  # binary fractions: exact


def test_unsplittable_root_is_one_leaf():
    X, g, h = random_data(n_samples=30)
    tree, sample_indices = grow(X, g, h, min_samples_leaf=16)  # 30 < 2 * 16
    assert tree.left.size == 1
    assert_array_equal(tree.leaf_nodes, [0])
    assert (tree.leaf_starts[0], tree.leaf_stops[0]) == (0, 30)
    assert_allclose(tree.sum_g[0], g.astype(np.float64).sum(), rtol=0, atol=SUM_ATOL)


# ---- constraints -------------------------------------------------------------------------
FREE = {"max_leaf_nodes": 64, "min_samples_leaf": 1, "min_child_weight": 0.0}


def test_max_leaf_nodes():
    X, g, h = random_data(seed=6)
    for max_leaf_nodes in (2, 7, 31):
        tree, _ = grow(X, g, h, **{**FREE, "max_leaf_nodes": max_leaf_nodes})
        # random gradients always leave a split with positive gain: exactly the maximum
        assert tree.leaf_nodes.size == max_leaf_nodes
        assert tree.left.size == 2 * max_leaf_nodes - 1


@pytest.mark.parametrize("max_depth", [1, 3])
def test_max_depth(max_depth):
    X, g, h = random_data(seed=7)
    free, _ = grow(X, g, h, **FREE)
    assert node_depths(free).max() > max_depth
    tree, _ = grow(X, g, h, **{**FREE, "max_depth": max_depth})
    assert node_depths(tree).max() == max_depth
    assert tree.leaf_nodes.size <= 2 ** max_depth


def test_min_samples_leaf():
    X, g, h = random_data(seed=8)
    free, _ = grow(X, g, h, **FREE)
    assert free.count[free.leaf_nodes].min() < 100
    tree, _ = grow(X, g, h, **{**FREE, "min_samples_leaf": 100})
    assert tree.count.min() >= 100
    assert tree.leaf_nodes.size > 2


def test_min_child_weight():
    X, g, h = random_data(seed=9)
    free, _ = grow(X, g, h, **FREE)
    assert free.sum_h[free.leaf_nodes].min() < 40.0
    tree, _ = grow(X, g, h, **{**FREE, "min_child_weight": 40.0})
    assert tree.sum_h.min() >= 40.0
    assert tree.leaf_nodes.size > 2


def test_min_split_gain():
    X, g, h = random_data(seed=10)
    free, _ = grow(X, g, h, **FREE)
    gains = free.gain[free.left >= 0]
    threshold = float(np.median(gains))
    assert gains.min() <= threshold
    tree, _ = grow(X, g, h, **{**FREE, "min_split_gain": threshold})
    assert np.all(tree.gain[tree.left >= 0] > threshold)
    assert tree.leaf_nodes.size >= 2


# ---- best-first order --------------------------------------------------------------------
@pytest.mark.parametrize("strong_side", ["left", "right"])
def test_second_split_is_the_better_child(strong_side):
    """With max_leaf_nodes=3 the child whose best split has more gain is split."""
    rng = np.random.default_rng(11)
    n = 4000
    # feature-major bins (3, n)
    X = rng.integers(0, N_BINS_NON_MISSING, size=(3, n)).astype(np.uint8)
    on_left = X[0] <= 127
    strong = on_left if strong_side == "left" else ~on_left
    # a large offset makes x0 the root split; a strong x1 signal on one side, weak x2 other
    g = (4.0 * on_left + np.where(strong, 2.0 * (X[1] > 60), 0.5 * (X[2] > 200))
         + 0.1 * rng.normal(size=n)).astype(G_H_DTYPE)
    h = np.ones(n, dtype=G_H_DTYPE)
    stump, idx = grow(X, g, h, max_leaf_nodes=2, min_samples_leaf=20)
    assert (stump.feature[0], stump.bin_threshold[0]) == (0, 127)
    rows = node_rows(stump, idx)
    nb = np.full(3, N_BINS_NON_MISSING)
    gains = [best_split_of_rows(X, rows[c], g, h, nb, min_samples_leaf=20,
                                min_child_weight=1e-3)[0] for c in (1, 2)]
    assert max(gains) > 2 * min(gains) > 0  # clearly different, both splittable
    tree, _ = grow(X, g, h, max_leaf_nodes=3, min_samples_leaf=20)
    assert tree.leaf_nodes.size == 3
    split_child = 1 + int(np.argmax(gains))
    assert split_child == (1 if strong_side == "left" else 2)
    assert tree.left[split_child] >= 0
    assert tree.left[3 - split_child] < 0
    assert_allclose(tree.gain[split_child], max(gains), rtol=1e-9)  # as in the test above


# ---- categorical features ----------------------------------------------------------------
def test_categorical_known_decision_function():
    """y = +1 on categories {2, 5, 7} and on missing rows, -1 on the 7 other categories:
    one split separates them, and the pure children are not split again."""
    rng = np.random.default_rng(14)
    x = rng.integers(0, 10, 3000).astype(np.uint8)
    x[::9] = MISSING_BIN
    positive = np.isin(x, [2, 5, 7, MISSING_BIN])
    gradient = np.where(positive, -1.0, 1.0).astype(G_H_DTYPE)  # squared error at F = 0
    tree, idx = grow(x[None, :], gradient, np.ones_like(gradient), is_categorical=[1],
                     min_samples_leaf=1, max_cat_to_onehot=4)  # sorted scan
    assert tree.left.size == 3
    assert tree.is_categorical[0] == 1
    assert tree.bin_threshold[0] == -1
    assert bins_of(tree.cat_bitset[0]) in ({2, 5, 7, MISSING_BIN}, {0, 1, 3, 4, 6, 8, 9})
    assert tree.missing_left[0] == (MISSING_BIN in bins_of(tree.cat_bitset[0]))
    assert not tree.cat_bitset[1:].any()
    assert not tree.is_categorical[1:].any()
    for node, a, b in zip(tree.leaf_nodes, tree.leaf_starts, tree.leaf_stops, strict=True):
        assert np.unique(positive[idx[a:b]]).size == 1  # pure leaves
        assert np.all(leaf_of(tree, x[None, idx[a:b]], binned=True) == node)


def mixed_data(seed=15, n_samples=4000):
    """Feature-major bins: categorical features with 6, 40 and 3 categories (and
    missing), a numerical feature; gradients with an effect per category."""
    rng = np.random.default_rng(seed)
    X = np.stack([rng.integers(0, 6, n_samples), rng.integers(0, 40, n_samples),
                  rng.integers(0, 255, n_samples), rng.integers(0, 3, n_samples)])
    X = X.astype(np.uint8)
    X[rng.random(X.shape) < 0.05] = MISSING_BIN
    effects = rng.normal(size=(4, 256))
    effects[2] = np.linspace(-1, 1, 256)  # numerical: a smooth trend
    gradient = (effects[np.arange(4)[:, None], X].sum(axis=0)
                + rng.normal(size=n_samples)).astype(G_H_DTYPE)
    hessian = rng.uniform(0.1, 1.0, n_samples).astype(G_H_DTYPE)
    return np.ascontiguousarray(X), gradient, hessian, [1, 1, 0, 1]


CAT_PARAMS = [{}, {"cat_l2": 1.0, "cat_smooth": 1.0, "max_cat_threshold": 4,
                   "max_cat_to_onehot": 6, "reg_lambda": 0.5},
              {"max_cat_ordered": 0}]


@pytest.mark.parametrize("cat_params", CAT_PARAMS, ids=["defaults", "custom", "unordered"])
def test_categorical_splits_are_the_twin_best_of_their_node(cat_params):
    X, g, h, is_categorical = mixed_data()
    params = {"min_samples_leaf": 10, "min_child_weight": 1.0, **cat_params}
    tree, sample_indices = grow(X, g, h, max_leaf_nodes=16, is_categorical=is_categorical,
                                **params)
    full = {**GrowerParams().__dict__, **params}
    numerical = {k: full[k] for k in ("reg_lambda", "reg_alpha", "min_samples_leaf",
                                      "min_child_weight")}
    categorical = {k: full[k] for k in ("cat_l2", "cat_smooth", "max_cat_threshold",
                                        "max_cat_to_onehot")}
    categorical["max_cat_ordered"] = full["max_cat_ordered"]
    used = set()
    for node, rows in node_rows(tree, sample_indices).items():
        if tree.left[node] < 0:
            continue
        hist = histogram(X, rows, g, h)
        totals = hist[0].sum(axis=0)
        gains, sets = [], []
        for f in range(X.shape[0]):
            if is_categorical[f]:
                cands = categorical_candidates(hist[f], N_BINS_NON_MISSING, *totals,
                                               **numerical, **categorical)
                best = max([c[1] for c in cands], default=-np.inf)
                # near-ties (a left set and its complement) within round-off
                sets.append({c[0] for c in cands if c[1] >= best - 1e-9 * abs(best)})
            else:
                best, b, ml, *_ = best_split(hist[f], N_BINS_NON_MISSING, *totals,
                                             **numerical)
                sets.append((b, ml))
            gains.append(best)
        f = tree.feature[node]
        assert f == int(np.argmax(gains))
        used.add(f)
        # histogram sums in another order: float64 round-off on gains of size O(10-100)
        assert_allclose(tree.gain[node], gains[f], rtol=1e-9)
        assert tree.is_categorical[node] == is_categorical[f]
        if is_categorical[f]:
            assert bins_of(tree.cat_bitset[node]) in sets[f]
            assert tree.missing_left[node] == (MISSING_BIN in bins_of(tree.cat_bitset[node]))
            assert len(bins_of(tree.cat_bitset[node])) <= categorical["max_cat_threshold"]
        else:
            assert (tree.bin_threshold[node], tree.missing_left[node]) == sets[f]
            assert not tree.cat_bitset[node].any()
    assert used >= {0, 1, 2}
    for node, a, b in zip(tree.leaf_nodes, tree.leaf_starts, tree.leaf_stops, strict=True):
        assert np.all(leaf_of(tree, X[:, sample_indices[a:b]], binned=True) == node)


TREE_ARRAYS = ("feature", "bin_threshold", "missing_left", "is_categorical", "cat_bitset",
               "left", "right", "count", "gain", "sum_g", "sum_h", "leaf_nodes",
               "leaf_starts", "leaf_stops")


def _sparse_binned(X):
    """X (feature-major bins) as binning.SparseBinned, each feature's most common bin as
    its zero bin (the entries left out)."""
    col_ptr, rows, bins, zero_bin = [0], [], [], []
    for column in X:
        z = np.bincount(column, minlength=256).argmax()
        kept = np.flatnonzero(column != z)
        rows.append(kept)
        bins.append(column[kept])
        col_ptr.append(col_ptr[-1] + kept.size)
        zero_bin.append(z)
    return SparseBinned(np.array(col_ptr, dtype=np.int64),
                        np.concatenate(rows).astype(INDEX_DTYPE),
                        np.concatenate(bins).astype(np.uint8),
                        np.array(zero_bin, dtype=np.uint8), X.shape[1])


@pytest.mark.parametrize("params", [
    {"max_leaf_nodes": 10},
    {"max_leaf_nodes": 31, "min_samples_leaf": 5, "max_depth": 4},
    {"max_leaf_nodes": 6, "min_child_weight": 50.0, "reg_lambda": 1.0, "reg_alpha": 0.5,
     "min_split_gain": 0.3},
])
@pytest.mark.parametrize("subset", [False, True])
def test_sparse_data_grows_the_dense_tree(params, subset):
    """Sparse histograms (stored entries plus the zero bin completed from the node's
    totals) feed the same split search: the same tree, sums equal to round-off."""
    X, g, h = random_data(n_samples=3000, n_features=5, seed=7)
    X[1] %= 7  # few distinct values: a zero bin holding most rows
    X[2][X[2] < 200] = 3
    rows = np.arange(1, 3000, 2) if subset else None
    trees = []
    for data in (X, _sparse_binned(X)):
        grower = TreeGrower(data, np.array([255, 7, 255, 255, 255], dtype=NODE_DTYPE),
                            np.zeros(5, dtype=np.uint8), GrowerParams(**params))
        indices = (np.arange(3000) if rows is None else rows).astype(INDEX_DTYPE)
        trees.append((grower.grow(g, h, indices, np.arange(5, dtype=NODE_DTYPE),
                                  all_rows=rows is None), indices))
    (a, idx_a), (b, idx_b) = trees
    for name in ("feature", "bin_threshold", "missing_left", "left", "right", "count",
                 "leaf_nodes", "leaf_starts", "leaf_stops"):
        assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert_array_equal(idx_a, idx_b)
    for name in ("gain", "sum_g", "sum_h"):
        assert_allclose(getattr(a, name), getattr(b, name), rtol=1e-9, atol=SUM_ATOL)
    assert a.leaf_nodes.size > 1


@pytest.mark.parametrize("max_depth", [1, 3, 5])
def test_unbounded_trees_are_the_best_first_trees_of_their_depth(max_depth):
    """max_leaf_nodes=None: every leaf that can be split is split, down to max_depth;
    the same tree as a leaf bound no tree of that depth reaches (bit for bit)."""
    X, g, h = random_data(seed=8)
    a, idx_a = grow(X, g, h, max_leaf_nodes=None, max_depth=max_depth, min_samples_leaf=5)
    b, idx_b = grow(X, g, h, max_leaf_nodes=2 ** max_depth, max_depth=max_depth,
                    min_samples_leaf=5)
    for name in TREE_ARRAYS:
        assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert_array_equal(idx_a, idx_b)
    # and no leaf above max_depth is left with a valid split
    depth = node_depths(a)
    nb = np.full(X.shape[0], N_BINS_NON_MISSING)
    for node, rows in node_rows(a, idx_a).items():
        if a.left[node] < 0 and depth[node] < max_depth:
            gain, *_ = best_split_of_rows(X, rows, g, h, nb, min_samples_leaf=5)
            assert not gain > 0.0


def test_node_feature_draws_are_k_distinct_sorted_and_uniform():
    features = np.array([2, 3, 5, 7, 11, 13, 17, 19, 23, 29], dtype=NODE_DTYPE)
    bynode = NodeColumns(np.array([12345], dtype=np.uint64), np.array([4], dtype=np.int64),
                         np.zeros(32, dtype=np.uint8), np.empty(32, dtype=NODE_DTYPE))
    counts = np.zeros(features.size)
    draws = set()
    for node in range(4000):
        chosen = _node_features(np.int64(node), features, bynode).copy()
        assert chosen.size == 4
        assert np.all(np.diff(chosen) > 0)
        assert set(chosen) <= set(features)
        counts += np.isin(features, chosen)
        draws.add(tuple(chosen))
        assert not bynode.mark.any()  # the scratch is left clean
    # each feature in 4/10 of the draws: binomial sd sqrt(4000 * .4 * .6) ~ 31
    assert np.all(np.abs(counts - 1600) < 6 * 31)
    assert len(draws) > 150  # of C(10, 4) = 210 subsets
    # the same node and seed, the same draw
    again = _node_features(np.int64(7), features, bynode).copy()
    assert_array_equal(again, _node_features(np.int64(7), features, bynode))


def test_per_node_column_sampling_splits_on_the_best_threshold_of_the_drawn_feature():
    X, g, h = random_data(n_samples=3000, n_features=8, seed=9)
    rng = np.random.default_rng(0)
    grower = TreeGrower(X, np.full(8, N_BINS_NON_MISSING, dtype=NODE_DTYPE),
                        np.zeros(8, dtype=np.uint8),
                        GrowerParams(max_leaf_nodes=12, min_samples_leaf=5,
                                     colsample_bynode=0.25))
    features = np.arange(8, dtype=NODE_DTYPE)
    used, worse = set(), 0
    nb = np.full(8, N_BINS_NON_MISSING)
    for _ in range(3):
        indices = np.arange(3000, dtype=INDEX_DTYPE)
        tree = grower.grow(g, h, indices, features, rng, all_rows=True)
        for node, rows in node_rows(tree, indices).items():
            if tree.left[node] < 0:
                continue
            f = tree.feature[node]
            used.add(int(f))
            hist = histogram(X, rows, g, h)
            sg, sh, c = hist[f].sum(axis=0)
            gain, b, ml, *_ = best_split(hist[f], N_BINS_NON_MISSING, sg, sh, c,
                                         min_samples_leaf=5)
            assert (tree.bin_threshold[node], tree.missing_left[node]) == (b, ml)
            best = best_split_of_rows(X, rows, g, h, nb, min_samples_leaf=5)[0]
            assert gain <= best * (1 + 1e-12)
            worse += gain < best * (1 - 1e-9)
    # two features a node: the best one is often not drawn
    assert worse > 0
    assert len(used) > 2


def _sum_across(hists, features, node):
    # shard by shard, in shard order; the bins past a feature's used ones hold what
    # np.empty left there (never read), hence the errstate
    with np.errstate(all="ignore"):
        total = np.sum(hists, axis=0)
    for hist in hists:
        hist[features] = total[features]


@pytest.mark.parametrize("n_shards", [1, 2, 3])
def test_data_parallel_steps_grow_the_single_process_tree(n_shards):
    """The histogram seam: the grower's steps over row shards, histograms summed across
    shards, grow the tree one process grows on all the rows (one shard: bit for bit)."""
    X, g, h = random_data(n_samples=6000, n_features=5, seed=11)
    X[3] %= 9
    nb = np.array([255, 255, 255, 9, 255], dtype=NODE_DTYPE)
    params = {"max_leaf_nodes": 16, "min_samples_leaf": 20, "reg_lambda": 1.0}
    features = np.arange(5, dtype=NODE_DTYPE)
    whole = TreeGrower(X, nb, np.zeros(5, dtype=np.uint8), GrowerParams(**params))
    indices = np.arange(6000, dtype=INDEX_DTYPE)
    single = whole.grow(g, h, indices, features)
    shards = np.array_split(np.random.default_rng(0).permutation(6000), n_shards)
    shards = [np.sort(s) for s in shards]
    growers = [TreeGrower(np.ascontiguousarray(X[:, s]), nb, np.zeros(5, dtype=np.uint8),
                          GrowerParams(**params)) for s in shards]
    local = [np.arange(s.size, dtype=INDEX_DTYPE) for s in shards]
    trees = grow_data_parallel(growers, [g[s] for s in shards], [h[s] for s in shards], local,
                               features, _sum_across)
    for tree in trees:
        for name in ("feature", "bin_threshold", "missing_left", "left", "right", "count",
                     "leaf_nodes"):
            assert_array_equal(getattr(tree, name), getattr(single, name), err_msg=name)
        if n_shards == 1:
            for name in TREE_ARRAYS:
                assert_array_equal(getattr(tree, name), getattr(single, name), err_msg=name)
        else:  # sums in another order
            for name in ("gain", "sum_g", "sum_h"):
                assert_allclose(getattr(tree, name), getattr(single, name), rtol=1e-9,
                                atol=SUM_ATOL)
    assert single.leaf_nodes.size == 16
    # each leaf's rows: the union over the shards of the shard's rows in that leaf
    for j in range(single.leaf_nodes.size):
        rows = np.concatenate([s[idx[t.leaf_starts[j]:t.leaf_stops[j]]]
                               for s, idx, t in zip(shards, local, trees, strict=True)])
        expected = indices[single.leaf_starts[j]:single.leaf_stops[j]]
        assert_array_equal(np.sort(rows), np.sort(expected))


@pytest.mark.parametrize("n_shards", [2, 3])
def test_processes_with_a_collective_grow_the_single_process_tree(n_shards):
    """grow_with_collective: each member grows its shard, histograms summed over a
    treeboost.collective group (threads here, sockets as between processes): the tree of
    one process on all the rows, the same on every member."""
    import threading

    from treeboost.collective import Collective
    from treeboost.grower import grow_with_collective

    X, g, h = random_data(n_samples=6000, n_features=5, seed=11)
    X[3] %= 9
    nb = np.array([255, 255, 255, 9, 255], dtype=NODE_DTYPE)
    params = GrowerParams(max_leaf_nodes=16, min_samples_leaf=20, reg_lambda=1.0)
    features = np.array([0, 1, 3, 4], dtype=NODE_DTYPE)  # one left out: not summed
    single = TreeGrower(X, nb, np.zeros(5, dtype=np.uint8), params).grow(
        g, h, np.arange(6000, dtype=INDEX_DTYPE), features)
    shards = [np.sort(s) for s in
              np.array_split(np.random.default_rng(0).permutation(6000), n_shards)]
    host = Collective.host(n_shards, timeout=20)
    trees, errors = [None] * n_shards, []

    def member(rank):
        try:
            group = host if rank == 0 else Collective.join(host.address, rank, n_shards,
                                                           token=host.token, timeout=20)
            with group:
                s = shards[rank]
                grower = TreeGrower(np.ascontiguousarray(X[:, s]), nb,
                                    np.zeros(5, dtype=np.uint8), params)
                trees[rank] = grow_with_collective(
                    grower, g[s], h[s], np.arange(s.size, dtype=INDEX_DTYPE), features, group)
        except Exception as exc:  # reported below, with the rank
            errors.append((rank, exc))

    threads = [threading.Thread(target=member, args=(r,)) for r in range(n_shards)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors
    for tree in trees:
        for name in ("feature", "bin_threshold", "missing_left", "left", "right", "count",
                     "leaf_nodes"):
            assert_array_equal(getattr(tree, name), getattr(single, name), err_msg=name)
        for name in ("gain", "sum_g", "sum_h"):  # sums in another order
            assert_allclose(getattr(tree, name), getattr(single, name), rtol=1e-9,
                            atol=SUM_ATOL)
        for name in ("gain", "sum_g", "sum_h"):  # the same bits on every member
            assert_array_equal(getattr(tree, name), getattr(trees[0], name))
    assert single.leaf_nodes.size == 16


def test_members_at_different_nodes_are_stopped():
    """A member whose peers sum another node's histogram (other data or bins than they
    claim) gets an error, not a tree grown on a mixture."""
    from treeboost.grower import grow_with_collective

    class OtherNode:  # a group of two whose other member is always one node further
        world_size = 2

        def allreduce_sum(self, array):
            array *= 2.0
            array[-1] += 1.0
            return array

    X, g, h = random_data(n_samples=2000, n_features=3, seed=5)
    grower = TreeGrower(X, np.full(3, 255, dtype=NODE_DTYPE), np.zeros(3, dtype=np.uint8),
                        GrowerParams(max_leaf_nodes=8, min_samples_leaf=20))
    with pytest.raises(RuntimeError, match="grow different nodes"):
        grow_with_collective(grower, g, h, np.arange(2000, dtype=INDEX_DTYPE),
                             np.arange(3, dtype=NODE_DTYPE), OtherNode())


@pytest.mark.parametrize("all_rows", [True, False])
def test_unit_hessians_grow_the_tree_of_the_scaled_hessians(all_rows):
    """Every hessian 1.0: the kernel gets hessian=None (two-float histograms). With
    lambda 0, (2g, 2h) has the same leaves -G/H and twice the gains, so the tree of
    the all-2.0 hessians (three-float histograms) has the same splits and rows."""
    plan = parallel_from(500, 2000)
    X, g, _ = random_data(n_samples=6000, seed=11)
    rows = (np.arange(6000) if all_rows
            else np.flatnonzero(np.random.default_rng(2).random(6000) < 0.7))
    ones = np.ones_like(g)
    grower = TreeGrower(X, np.full(4, N_BINS_NON_MISSING, dtype=NODE_DTYPE),
                        np.zeros(4, dtype=np.uint8), GrowerParams(), plan=plan)
    features = np.arange(4, dtype=NODE_DTYPE)
    assert grower.kernel_arguments(g, ones, rows.astype(INDEX_DTYPE), features,
                                   all_rows)[2] is None
    assert grower.kernel_arguments(g, 2 * ones, rows.astype(INDEX_DTYPE), features,
                                   all_rows)[2] is not None
    params = dict(max_leaf_nodes=20, min_samples_leaf=5, reg_lambda=0.0, min_child_weight=1e-3)
    unit, idx_unit = grow(X, g, ones, rows=rows, all_rows=all_rows, plan=plan, **params)
    scaled, idx_scaled = grow(X, 2 * g, 2 * ones, rows=rows, all_rows=all_rows, plan=plan,
                              **params)
    for name in ("feature", "bin_threshold", "missing_left", "left", "right", "count"):
        assert_array_equal(getattr(unit, name), getattr(scaled, name))
    assert_array_equal(idx_unit, idx_scaled)
    assert_array_equal(2 * unit.sum_h, scaled.sum_h)  # exact: powers of two
    assert_array_equal(unit.sum_h, unit.count)  # each node's hessian sum is its row count
    assert unit.leaf_nodes.size == 20


@pytest.mark.parametrize("parallel", [True, False])
def test_kept_root_counts_grow_the_trees_of_a_full_root_pass(parallel):
    """Unit hessians over every row: the grower counts each bin's rows once and each
    tree's root adds only the gradients. The counts are the bins' row counts, and
    tree after tree (other gradients, other feature subsets) the trees are those of
    a grower that builds the whole root histogram every time, bit for bit."""
    plan = parallel_from(500, 2000) if parallel else make_plan(
        6000, overrides={"serial_histogram_updates": 10**9})
    X, _, _ = random_data(n_samples=6000, n_features=5, seed=12, missing=0.1)
    n_bins = np.array([255, 255, 40, 255, 7], dtype=NODE_DTYPE)
    X[2] = np.where(X[2] == MISSING_BIN, MISSING_BIN, X[2] % 40)
    X[4] = np.where(X[4] == MISSING_BIN, MISSING_BIN, X[4] % 7)
    params = GrowerParams(max_leaf_nodes=16, min_samples_leaf=5, reg_lambda=0.0,
                          min_child_weight=1e-3)
    kept = TreeGrower(X, n_bins, np.zeros(5, dtype=np.uint8), params, plan=plan)
    full = TreeGrower(X, n_bins, np.zeros(5, dtype=np.uint8), params, plan=plan)
    full._count_root_rows = lambda sample_indices: None  # counts never kept
    rng = np.random.default_rng(3)
    ones = np.ones(6000, dtype=G_H_DTYPE)
    for features in ([0, 1, 2, 3, 4], [4, 2, 0], [1, 3]):
        g = rng.normal(size=6000).astype(G_H_DTYPE)
        trees = [grower.grow(g, ones, np.arange(6000, dtype=INDEX_DTYPE),
                             np.array(features, dtype=NODE_DTYPE), all_rows=True)
                 for grower in (kept, full)]
        for name in ("feature", "bin_threshold", "missing_left", "left", "right", "count",
                     "sum_g", "sum_h", "leaf_starts", "leaf_stops"):
            assert_array_equal(getattr(trees[0], name), getattr(trees[1], name))
        assert trees[0].leaf_nodes.size == 16
    counts = kept._scratch.root_counts
    for f in range(5):
        expected = np.bincount(X[f], minlength=256)
        assert_array_equal(counts[f, :n_bins[f]], expected[:n_bins[f]])
        assert counts[f, MISSING_BIN] == expected[MISSING_BIN] > 0
    assert full._scratch.root_counts.shape == (0, 0)


@pytest.mark.parametrize("colsample_bytree", [1.0, 0.6])
def test_shared_roots_with_counts_kept_grow_the_trees_of_counting_each_stage(
        colsample_bytree, monkeypatch):
    """A multiclass stage over every row takes its roots' counts from the grower's,
    counted once a fit, in place of counting the rows at every stage: the same
    trees, stage after stage, whatever features each stage draws."""
    from treeboost import TreeBoostClassifier

    rng = np.random.default_rng(7)
    X = rng.normal(size=(3000, 5))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.digitize(X[:, 0] + np.sin(X[:, 1]) + 0.3 * rng.normal(size=3000), [-1, 0, 1])
    kw = dict(n_estimators=6, max_leaf_nodes=12, colsample_bytree=colsample_bytree,
              random_state=1, n_jobs=1)
    kept = TreeBoostClassifier(**kw).fit(X, y)
    counting = grower_module.TreeGrower.root_histograms
    monkeypatch.setattr(grower_module.TreeGrower, "root_histograms",
                        lambda self, *args, all_rows=False: counting(self, *args))
    each = TreeBoostClassifier(**kw).fit(X, y)
    for stage_kept, stage_each in zip(kept.booster_.trees, each.booster_.trees, strict=True):
        assert len(stage_kept) == 4
        for a, b in zip(stage_kept, stage_each, strict=True):
            for name in ("feature", "threshold", "value", "count"):
                assert_array_equal(getattr(a, name), getattr(b, name))
