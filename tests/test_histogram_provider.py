"""The grower's histogram step handed out (issue 39): ``ExecutionPlan.histogram_provider``.

A fit whose histograms a provider builds outside the compiled grower (resumed before
each histogram) grows the in-kernel fit's model bit for bit: the CPU provider with the
grower's own kernels, and, under numba-cuda's simulator, a provider of the GPU's
quantised histogram kernels. A provider that records its calls sees each histogram
once, over the node's rows.
"""

import os
import sys
import tempfile

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from treeboost import Dataset, train
from treeboost._dtypes import G_H_DTYPE, INDEX_DTYPE, NODE_DTYPE
from treeboost._plan import ExecutionPlan
from treeboost.grower import GrowerParams, TreeGrower, grow_data_parallel
from treeboost.histogram_provider import CPUHistogramProvider, HistogramProvider

# the parallel node kernels from small nodes on, as on a large fit (two threads)
PARALLEL = {"n_threads": 2, "serial_partition_rows": 64, "serial_histogram_updates": 256,
            "lean_tree_updates": 0}


class Recording(HistogramProvider):
    """The CPU provider, keeping each request's node and rows."""

    def __init__(self):
        self.cpu = CPUHistogramProvider()
        self.calls = []

    def build(self, request):
        self.calls.append((request.node, request.rows.copy(), request.is_root))
        self.cpu.build(request)


def _data(task, n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    X[rng.random(X.shape) < 0.05] = np.nan
    X[:, 5] = rng.integers(0, 7, n)  # categorical where asked
    score = (np.nan_to_num(X[:, 0]) + np.sin(2 * np.nan_to_num(X[:, 1]))
             + 0.3 * (X[:, 5] % 3) + 0.5 * rng.normal(size=n))
    if task == "regression":
        return X, score, {"loss": "squared_error"}
    if task == "binary":
        return X, (score > 0.3).astype(float), {"loss": "log_loss"}
    return X, np.digitize(score, [-0.5, 0.3, 1.0]).astype(float), {"loss": "log_loss"}


def _model(task, plan, categorical=False, **params):
    X, y, loss = _data(task)
    data = Dataset(X, y, categorical_features=[5] if categorical else None)
    booster = train(dict(loss, n_estimators=4, max_leaf_nodes=12, min_samples_leaf=5,
                         random_state=1, **params), data, plan=plan)
    return _text(booster)


def _text(booster):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.json")
        booster.save_model(path)
        with open(path) as f:
            return f.read()


CASES = [
    ("binary", {}, {}),
    ("multiclass", {}, {}),
    ("regression", {}, {}),
    ("binary", {"categorical": True}, {}),
    ("regression", {}, {"subsample": 0.7, "colsample_bytree": 0.8}),
    ("binary", {}, {"use_quantized_grad": True}),
    ("multiclass", {}, {"use_quantized_grad": True, "subsample": 0.8}),
    ("regression", {"categorical": True}, {"colsample_bynode": 0.7, "max_depth": 4}),
]


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize(("task", "data", "params"), CASES)
def test_cpu_provider_grows_the_in_kernel_model(task, data, params, parallel):
    base = dict(PARALLEL) if parallel else {"n_threads": 1}
    expected = _model(task, base, **data, **params)
    provided = _model(task, {**base, "histogram_provider": CPUHistogramProvider()},
                      **data, **params)
    assert provided == expected


@pytest.mark.parametrize(("task", "data", "params"), CASES)
def test_provider_keeping_the_rows_grows_the_in_kernel_model(task, data, params):
    # the grower stops before each partition too, and the provider's own rows are
    # written back at each tree's end
    expected = _model(task, {"n_threads": 1}, **data, **params)
    provider = CPUHistogramProvider(keep_rows=True)
    provided = _model(task, {"n_threads": 1, "histogram_provider": provider}, **data,
                      **params)
    assert provided == expected


class Partitioning(CPUHistogramProvider):
    """The CPU provider keeping the rows, recording each partition and histogram."""

    def __init__(self):
        super().__init__(keep_rows=True)
        self.partitions, self.histograms = [], []

    def partition(self, request):
        n_left = super().partition(request)
        rows = self._rows[request.start:request.stop]
        self.partitions.append((request.node, rows[:n_left].copy(), rows[n_left:].copy()))
        return n_left

    def build(self, request):
        self.histograms.append((request.node, request.rows))
        super().build(request)


def test_partitions_handed_out_once_per_split_left_child_first():
    X, g, h = _binned()
    features = np.arange(X.shape[0], dtype=np.int32)
    rows = np.flatnonzero(np.random.default_rng(4).random(X.shape[1]) < 0.8).astype(
        INDEX_DTYPE)
    expected_rows = rows.copy()
    expected = _grower(X, ExecutionPlan(n_threads=1)).grow(g, h, expected_rows, features)
    provider = Partitioning()
    indices = rows.copy()
    tree = _grower(X, ExecutionPlan(n_threads=1, histogram_provider=provider)).grow(
        g, h, indices, features)
    assert_array_equal(indices, expected_rows)  # written back, grouped by leaf
    for name in ("feature", "bin_threshold", "left", "count", "leaf_starts", "leaf_stops"):
        assert_array_equal(getattr(tree, name), getattr(expected, name), err_msg=name)
    split = [j for j in range(tree.left.size) if tree.left[j] >= 0]
    assert sorted(node for node, _, _ in provider.partitions) == split
    for node, left, right in provider.partitions:
        f, thr = tree.feature[node], tree.bin_threshold[node]
        lb, rb = X[f, left], X[f, right]
        missing = tree.missing_left[node]
        assert np.all((lb <= thr) & (lb != 255) | (lb == 255) & bool(missing))
        assert np.all((rb > thr) & (rb != 255) | (rb == 255) & (not missing))
        assert left.size == tree.count[tree.left[node]]
        assert np.all(np.diff(left.astype(np.int64)) > 0)  # each side in row order
        assert np.all(np.diff(right.astype(np.int64)) > 0)
    assert all(r is None for _, r in provider.histograms)  # the provider's own rows


def _grower(X, plan, **params):
    nb = np.full(X.shape[0], 63, dtype=NODE_DTYPE)
    return TreeGrower(X, nb, np.zeros(X.shape[0], dtype=np.uint8),
                      GrowerParams(**{"max_leaf_nodes": 16, "min_samples_leaf": 8,
                                      **params}), plan=plan)


def _binned(n=800, n_features=5, seed=2):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 63, size=(n_features, n)).astype(np.uint8)
    X[rng.random(X.shape) < 0.05] = 255  # missing
    g = (X[0] / 63.0 - 0.5 + 0.3 * rng.normal(size=n)).astype(G_H_DTYPE)
    h = rng.uniform(0.2, 1.0, n).astype(G_H_DTYPE)
    return np.ascontiguousarray(X), g, h


@pytest.mark.parametrize("quantized", [False, True])
def test_recording_provider_sees_each_histogram_once_over_its_rows(quantized):
    X, g, h = _binned()
    features = np.arange(X.shape[0], dtype=np.int32)
    rows = np.flatnonzero(np.random.default_rng(3).random(X.shape[1]) < 0.8).astype(
        INDEX_DTYPE)
    params = {"use_quantized_grad": quantized}
    plan = ExecutionPlan(**PARALLEL)
    expected = _grower(X, plan, **params).grow(g, h, rows.copy(), features, quant_seed=5)
    recording = Recording()
    grower = _grower(X, ExecutionPlan(**PARALLEL, histogram_provider=recording), **params)
    indices = rows.copy()
    tree = grower.grow(g, h, indices, features, quant_seed=5)
    for name in ("feature", "bin_threshold", "left", "right", "gain", "count", "sum_g",
                 "sum_h", "leaf_starts", "leaf_stops"):
        assert_array_equal(getattr(tree, name), getattr(expected, name), err_msg=name)
    nodes = [node for node, _, _ in recording.calls]
    assert len(nodes) == len(set(nodes))
    assert nodes[0] == 0
    assert recording.calls[0][2]
    assert not any(root for _, _, root in recording.calls[1:])
    assert_array_equal(recording.calls[0][1], rows)  # the root: every row, in order
    n_splits = int(np.sum(tree.left >= 0))
    assert 1 < len(nodes) <= n_splits + 1
    parent = {int(c): j for j in range(tree.left.size) if tree.left[j] >= 0
              for c in (tree.left[j], tree.right[j])}
    for node, node_rows, _ in recording.calls[1:]:
        # the smaller child of its parent (the larger's is the parent's minus it), over
        # the rows the partition gave it
        p = parent[node]
        sibling = tree.right[p] if tree.left[p] == node else tree.left[p]
        assert tree.count[node] <= tree.count[sibling]
        assert node_rows.size == tree.count[node]
        assert_array_equal(np.sort(node_rows),
                           np.sort(indices[tree.starts[node]:tree.stops[node]]))


def test_data_parallel_growth_takes_the_provider():
    X, g, h = _binned(n=900)
    features = np.arange(X.shape[0], dtype=np.int32)
    shards = [slice(0, 400), slice(400, 900)]

    def grow(provider):
        growers = [TreeGrower(np.ascontiguousarray(X[:, s]), np.full(5, 63, dtype=NODE_DTYPE),
                              np.zeros(5, dtype=np.uint8),
                              GrowerParams(max_leaf_nodes=16, min_samples_leaf=8),
                              n_rows_total=X.shape[1]) for s in shards]

        def allreduce(hists, _features, _node):
            total = sum(hists)
            for a in hists:
                a[...] = total

        return grow_data_parallel(
            growers, [g[s] for s in shards], [h[s] for s in shards],
            [np.arange(s.stop - s.start, dtype=INDEX_DTYPE) for s in shards], features,
            allreduce, provider=provider)

    expected = grow(None)
    recording = Recording()
    trees = grow(recording)
    assert len(recording.calls) >= 2 * 2  # each shard's root and at least one child
    for a, b in zip(trees, expected, strict=True):
        for name in ("feature", "bin_threshold", "left", "count", "sum_g", "sum_h",
                     "leaf_starts", "leaf_stops"):
            assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


def test_plan_refuses_a_provider_without_build():
    with pytest.raises(TypeError, match="histogram_provider"):
        ExecutionPlan(histogram_provider=object())
    assert "histogram_provider=in-kernel" in ExecutionPlan().describe()


# ---- a provider of the GPU's kernels, under numba-cuda's simulator -----------------------
@pytest.fixture(scope="module")
def ghist():
    """``treeboost._kernels.cuda.histogram``, on the simulator unless a GPU is used
    (as tests/test_cuda_kernels.py chooses)."""
    pytest.importorskip("numba_cuda")
    if "numba.cuda" not in sys.modules:
        os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
        from numba.core import config

        config.reload_config()
    import treeboost._kernels.cuda as gpu

    if not gpu.cuda_available():
        pytest.skip("numba.cuda was imported before without the simulator, and no GPU")
    from treeboost._kernels.cuda import histogram

    return histogram


class GPUQuantised(HistogramProvider):
    """Quantised histograms by the GPU's packed kernel: the data on the device once,
    each tree's packed gradients once, each node's rows per request."""

    def __init__(self, ghist):
        self.ghist = ghist
        self.cuda = ghist.cuda
        self._X = self._packed = None
        self.calls = 0

    def build(self, request):
        assert request.quant is not None, "this provider builds quantised histograms"
        cuda = self.cuda
        if self._X is None or self._X[0] is not request.X_binned:
            self._X = (request.X_binned, cuda.to_device(request.X_binned))
        if request.is_root:  # a new tree: its packed gradients
            self._packed = cuda.to_device(request.quant.packed)
        n_features = request.X_binned.shape[0]
        hist = self.ghist.zeros((n_features, self.ghist.N_SLOTS), np.int64)
        self.ghist.build_histogram_packed(
            self._X[1], cuda.to_device(np.ascontiguousarray(request.rows)), self._packed,
            cuda.to_device(request.features), hist, threads=32, rows_per_block=64)
        out = hist.copy_to_host()
        request.out[...] = out[:, :request.out.shape[1]]
        self.calls += 1


@pytest.mark.slow
@pytest.mark.parametrize("task", ["binary", "regression"])
def test_gpu_quantised_provider_grows_the_cpu_model(ghist, task):
    X, y, loss = _data(task, n=300, seed=4)
    params = dict(loss, n_estimators=3, max_leaf_nodes=6, min_samples_leaf=10, max_bins=48,
                  use_quantized_grad=True, random_state=2)
    expected = _text(train(params, Dataset(X, y), plan={"n_threads": 1}))
    gpu = GPUQuantised(ghist)
    provided = _text(train(params, Dataset(X, y),
                           plan={"n_threads": 1, "histogram_provider": gpu}))
    assert gpu.calls >= 3
    assert provided == expected
