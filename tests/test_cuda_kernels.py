"""The GPU kernels (``treeboost._kernels.cuda``, issue 39) against the CPU kernels.

Run under numba-cuda's simulator (``NUMBA_ENABLE_CUDASIM=1``; CI has no GPU), or on a
real GPU where one is present and the variable is set to 0. numba reads the variable
into ``numba.core.config`` when numba is imported and numba-cuda chooses the simulator
once, when ``numba.cuda`` is first imported: this module sets the variable and reloads
the config before that import. Nothing else in the suite imports ``numba.cuda``; if
something did first, without the simulator and without a GPU, the module is skipped,
saying so. The variable stays set for the rest of the process (numba's compiler
reloads the config whenever the environment changes, and the simulator's decorators
read it): it only concerns ``numba.cuda``.

Data is small (a few hundred rows, bins below 64 plus the missing bin 255) and the
blocks small (``threads``, ``rows_per_block``), so that a node spans several blocks
and the simulator, a Python thread per GPU thread, stays fast.
"""

import os
import subprocess
import sys

import numpy as np
import pytest
from numpy.testing import assert_array_equal

pytest.importorskip("numba_cuda")

if "numba.cuda" not in sys.modules:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
    from numba.core import config

    config.reload_config()

import treeboost._kernels.cuda as gpu  # noqa: E402
from reference import bitset_of, partition  # noqa: E402
from treeboost._dtypes import (  # noqa: E402
    G_H_DTYPE,
    INDEX_DTYPE,
    MISSING_BIN,
    N_BINS,
    NODE_DTYPE,
    SUM_DTYPE,
    X_BINNED_DTYPE,
)
from treeboost._kernels.grower import _subtract_packed, _subtract_used_bins  # noqa: E402
from treeboost._kernels.histogram import (  # noqa: E402
    build_histograms_root,
    build_histograms_serial,
    unit_hessians,
)
from treeboost._kernels.partition import partition_rows_serial  # noqa: E402
from treeboost._kernels.quantize import quantize_gradients  # noqa: E402

if not gpu.cuda_available():
    pytest.skip("numba.cuda was imported in this process before this module, without "
                "the simulator, and there is no GPU", allow_module_level=True)

from numba import cuda  # noqa: E402

from treeboost._kernels.cuda import histogram as ghist  # noqa: E402
from treeboost._kernels.cuda import partition as gpart  # noqa: E402

N_SAMPLES = 400
N_FEATURES = 7
CATEGORICAL = 4  # a categorical feature: 12 categories and the missing bin
# a node's rows span several blocks: (threads, rows per block) as the tests launch them
SMALL_BLOCKS = {"threads": 32, "rows_per_block": 64}


def make_data(seed=0, wide_gradients=False):
    """Feature-major bins (C order) with missing values, an all-missing feature (0), a
    one-bin feature (1), a categorical one; float32 gradients and hessians."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 63, size=(N_FEATURES, N_SAMPLES)).astype(X_BINNED_DTYPE)
    X[rng.random(X.shape) < 0.1] = MISSING_BIN
    X[0] = MISSING_BIN
    X[1] = 0
    X[CATEGORICAL] = rng.integers(0, 12, N_SAMPLES)
    X[CATEGORICAL, rng.random(N_SAMPLES) < 0.15] = MISSING_BIN
    gradient = rng.uniform(-1, 1, N_SAMPLES)
    if wide_gradients:  # magnitudes 2**-40 .. 2**10: float64 sums of them round
        gradient *= 2.0 ** rng.uniform(-40, 10, N_SAMPLES)
    hessian = rng.uniform(0.01, 1, N_SAMPLES)
    return (np.ascontiguousarray(X), gradient.astype(G_H_DTYPE),
            hessian.astype(G_H_DTYPE))


def subsample(seed=1, fraction=0.6):
    """Sorted row indices of a random subset, as row subsampling hands the root."""
    rng = np.random.default_rng(seed)
    keep = rng.random(N_SAMPLES) < fraction
    return np.flatnonzero(keep).astype(INDEX_DTYPE)


def cpu_histogram(X, rows, gradient, hessian, features):
    """The CPU builders' float histogram (``rows`` None: the root's kernel, every row;
    ``hessian`` None: unit hessians, completed by ``unit_hessians``)."""
    hist = np.zeros((N_FEATURES, N_BINS, 3), dtype=SUM_DTYPE)
    if rows is None:
        build_histograms_root(X, gradient, hessian, features, hist, 2)
    else:
        build_histograms_serial(X, rows, gradient, hessian, features,
                                np.empty(N_SAMPLES, G_H_DTYPE), np.empty(N_SAMPLES, G_H_DTYPE),
                                hist)
    if hessian is None:
        n_bins_non_missing = np.full(N_FEATURES, 63, dtype=np.uint32)
        unit_hessians(hist, features, n_bins_non_missing, MISSING_BIN)
    return hist


def cpu_packed_histogram(X, rows, packed, features):
    hist = np.zeros((N_FEATURES, N_BINS), dtype=np.int64)
    if rows is None:
        build_histograms_root(X, packed, packed, features, hist, 2)
    else:
        ordered = np.empty(N_SAMPLES, dtype=np.int64)
        build_histograms_serial(X, rows, packed, packed, features, ordered, ordered, hist)
    return hist


def quantized(gradient, hessian, n_bins=4, stochastic=True):
    """Each row's packed integer (gradient, hessian), as the grower quantises them."""
    packed = np.empty(gradient.shape[0], dtype=np.int64)
    quantize_gradients(gradient, hessian, n_bins, stochastic, np.uint64(7), packed,
                       np.empty(2), np.uint64(0), np.full(2, -1.0))
    return packed


def gpu_histogram(X, rows, gradient, hessian, features, **launch):
    d_hist = cuda.to_device(np.zeros((N_FEATURES, N_BINS, 3), SUM_DTYPE))
    ghist.build_histogram(cuda.to_device(X), None if rows is None else cuda.to_device(rows),
                          cuda.to_device(gradient),
                          None if hessian is None else cuda.to_device(hessian),
                          cuda.to_device(features), d_hist, **launch)
    return d_hist.copy_to_host()


def gpu_packed_histogram(X, rows, packed, features, **launch):
    d_hist = cuda.to_device(np.zeros((N_FEATURES, N_BINS), np.int64))
    ghist.build_histogram_packed(cuda.to_device(X),
                                 None if rows is None else cuda.to_device(rows),
                                 cuda.to_device(packed), cuda.to_device(features), d_hist,
                                 **launch)
    return d_hist.copy_to_host()


def assert_within_round_off(actual, expected, X, rows, gradient, hessian):
    """Counts exactly; each bin's gradient and hessian sums within the bound of two sums
    of the same n_b float64 terms in different orders: |a - e| <= 2 (n_b - 1) u sum|x|
    with u = 2**-53 (each differs from the exact sum by at most (n_b - 1) u sum|x|;
    the float32 terms are exact in float64). Counts, and a unit hessian's column, are
    sums of integers: exact whatever the order."""
    assert_array_equal(actual[..., 2], expected[..., 2])
    idx = np.arange(N_SAMPLES) if rows is None else rows.astype(np.intp)
    for c, values in ((0, gradient), (1, hessian)):
        if values is None:
            assert_array_equal(actual[..., 1], expected[..., 1])
            continue
        for f in range(N_FEATURES):
            abs_sum = np.bincount(X[f, idx], weights=np.abs(values[idx].astype(np.float64)),
                                  minlength=N_BINS)
            bound = 2.0 * np.maximum(expected[f, :, 2] - 1, 0) * 2.0 ** -53 * abs_sum
            assert np.all(np.abs(actual[f, :, c] - expected[f, :, c]) <= bound), (f, c)


ALL_FEATURES = np.arange(N_FEATURES, dtype=NODE_DTYPE)
SOME_FEATURES = np.array([0, 2, 4, 5, 6], dtype=NODE_DTYPE)  # column sampling
ROWS = {"every row": None, "subsample": subsample(), "node": subsample(3, 0.2)}


def test_importing_treeboost_does_not_import_numba_cuda():
    code = ("import sys, treeboost, treeboost.sklearn, treeboost._kernels.cuda as g\n"
            "assert not [m for m in sys.modules if m.startswith(('numba.cuda', 'numba_cuda'))]"
            ", sorted(m for m in sys.modules if 'cuda' in m)\n"
            "assert g.numba_cuda_installed()\n")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)


def test_without_numba_cuda_nothing_is_available(monkeypatch):
    monkeypatch.setattr(gpu, "numba_cuda_installed", lambda: False)
    assert not gpu.cuda_available()
    with pytest.raises(ImportError, match=r"treeboost\[cuda\]"):
        gpu.require_numba_cuda()


def test_the_simulator_or_a_gpu_runs_the_kernels():
    assert gpu.cuda_available()
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        assert gpu.simulated()


# (rows, unit hessians, launch): the combinations spread over the cases, each a few
# simulated launches
FLOAT_CASES = {
    "every row": ("every row", False, {}),
    "every row, unit hessians, small blocks": ("every row", True, SMALL_BLOCKS),
    "subsample, small blocks": ("subsample", False, SMALL_BLOCKS),
    "subsample, unit hessians": ("subsample", True, {}),
    "node, unit hessians, small blocks": ("node", True, SMALL_BLOCKS),
}


@pytest.mark.parametrize("case", FLOAT_CASES.values(), ids=FLOAT_CASES.keys())
def test_float_histogram_equals_cpu_within_round_off(case):
    rows, unit, launch = case
    rows = ROWS[rows]
    X, gradient, hessian = make_data()
    h = None if unit else hessian
    expected = cpu_histogram(X, rows, gradient, h, ALL_FEATURES)
    actual = gpu_histogram(X, rows, gradient, h, ALL_FEATURES, **launch)
    assert_within_round_off(actual, expected, X, rows, gradient, h)


@pytest.mark.parametrize("rows", ["every row", "node"])
def test_float_histogram_of_wide_gradients_and_some_features(rows):
    # gradients over 50 binary orders of magnitude: here the orders of addition round
    # differently (under the simulator about 20 bins of the root differ, by up to
    # 2e-12 on sums of magnitude ~1e3), and the sums still lie within the bound
    rows = ROWS[rows]
    X, gradient, hessian = make_data(seed=5, wide_gradients=True)
    expected = cpu_histogram(X, rows, gradient, hessian, SOME_FEATURES)
    actual = gpu_histogram(X, rows, gradient, hessian, SOME_FEATURES, **SMALL_BLOCKS)
    assert_within_round_off(actual, expected, X, rows, gradient, hessian)
    unused = np.setdiff1d(ALL_FEATURES, SOME_FEATURES)
    assert not actual[unused].any()


QUANTISED_CASES = {  # (rows, num_grad_quant_bins, stochastic rounding, launch)
    "every row, 4 levels": ("every row", 4, True, {}),
    "every row, 1000 levels, small blocks": ("every row", 1000, True, SMALL_BLOCKS),
    "subsample, 16 levels rounded, small blocks": ("subsample", 16, False, SMALL_BLOCKS),
    "node, 1000 levels, small blocks": ("node", 1000, True, SMALL_BLOCKS),
}


@pytest.mark.parametrize("case", QUANTISED_CASES.values(), ids=QUANTISED_CASES.keys())
def test_quantised_histogram_equals_cpu_bit_for_bit(case):
    rows, n_bins, stochastic, launch = case
    rows = ROWS[rows]
    X, gradient, hessian = make_data(seed=2)
    packed = quantized(gradient, hessian, n_bins, stochastic)
    expected = cpu_packed_histogram(X, rows, packed, SOME_FEATURES)
    actual = gpu_packed_histogram(X, rows, packed, SOME_FEATURES, **launch)
    assert_array_equal(actual, expected)


@pytest.mark.slow
def test_subtraction_gives_the_sibling():
    # one level of a tree: the root's histogram, the rows split, the smaller child's
    # histogram built, the larger child's by subtraction; packed: bit for bit the
    # CPU's sibling; float: the CPU's subtraction of the same histograms
    X, gradient, hessian = make_data(seed=4)
    packed = quantized(gradient, hessian)
    rows = subsample(6, 0.7)
    left, n_left = partition(rows, X, 3, 30, True)
    child, sibling = left[:n_left], left[n_left:]
    d_parent = ghist.zeros((N_FEATURES, N_BINS), np.int64)  # zeroed on the device
    d_child = ghist.zeros((N_FEATURES, N_BINS), np.int64)
    d_X, d_packed, d_features = (cuda.to_device(a) for a in (X, packed, ALL_FEATURES))
    ghist.build_histogram_packed(d_X, cuda.to_device(rows), d_packed, d_features, d_parent,
                                 **SMALL_BLOCKS)
    ghist.build_histogram_packed(d_X, cuda.to_device(child), d_packed, d_features, d_child,
                                 **SMALL_BLOCKS)
    ghist.subtract_histograms(d_parent, d_child)
    expected = cpu_packed_histogram(X, sibling, packed, ALL_FEATURES)
    assert_array_equal(d_parent.copy_to_host(), expected)
    cpu_parent = cpu_packed_histogram(X, rows, packed, ALL_FEATURES)
    _subtract_packed(cpu_parent, cpu_packed_histogram(X, child, packed, ALL_FEATURES),
                     ALL_FEATURES, np.full(N_FEATURES, 63, dtype=np.uint32), MISSING_BIN)
    assert_array_equal(cpu_parent, expected)

    parent = cpu_histogram(X, rows, gradient, hessian, ALL_FEATURES)
    small = cpu_histogram(X, child, gradient, hessian, ALL_FEATURES)
    d_parent = cuda.to_device(parent)
    ghist.subtract_histograms(d_parent, cuda.to_device(small))
    _subtract_used_bins(parent, small, ALL_FEATURES, np.full(N_FEATURES, 63, dtype=np.uint32),
                        MISSING_BIN)
    assert_array_equal(d_parent.copy_to_host(), parent)


NO_BITSET = np.full(8, 0xFFFFFFFF, dtype=np.uint32)  # ignored by numerical splits
SPLITS = {  # (feature, categorical, bin threshold, missing left, bitset)
    "numerical, missing left": (2, False, 30, True, NO_BITSET),
    "numerical, missing right": (2, False, 30, False, NO_BITSET),
    "threshold 0, missing right": (3, False, 0, False, NO_BITSET),
    "all missing, left": (0, False, 10, True, NO_BITSET),
    "one bin": (1, False, 5, False, NO_BITSET),
    "categorical": (CATEGORICAL, True, 0, False, bitset_of([0, 3, 4, 9])),
    "categorical with missing": (CATEGORICAL, True, 0, False, bitset_of([1, 2, 11, 255])),
}


def cpu_partition(rows, X, split):
    feature, categorical, threshold, missing_left, bitset = split
    out = rows.copy()
    n = max(out.size, 1)
    n_left = partition_rows_serial(out, X, feature, categorical, threshold, missing_left,
                                   MISSING_BIN, bitset, np.empty(n, INDEX_DTYPE),
                                   np.empty(n, INDEX_DTYPE))
    return out, int(n_left)


@pytest.mark.parametrize("rows_per_thread", [1, 3])
@pytest.mark.parametrize("split", SPLITS.values(), ids=SPLITS.keys())
def test_partition_equals_cpu(split, rows_per_thread):
    # the node: a slice in the middle of the index array, as the grower's nodes are;
    # 32 threads a block, so its rows span several blocks (with runs of 3 rows a
    # thread, the last run clipped)
    X, _, _ = make_data(seed=8)
    sample_indices = subsample(9, 0.45)
    lo, hi = 37, sample_indices.size - 11
    expected, n_left = cpu_partition(sample_indices[lo:hi], X, split)
    d_indices = cuda.to_device(sample_indices)
    feature, categorical, threshold, missing_left, bitset = split
    got = gpart.partition_rows(d_indices[lo:hi], cuda.to_device(X), feature, categorical,
                               threshold, missing_left, MISSING_BIN, cuda.to_device(bitset),
                               gpart.PartitionBuffers(hi - lo, threads=32,
                                                      rows_per_thread=rows_per_thread))
    assert got == n_left
    after = d_indices.copy_to_host()
    assert_array_equal(after[lo:hi], expected)
    assert_array_equal(after[:lo], sample_indices[:lo])  # the other nodes untouched
    assert_array_equal(after[hi:], sample_indices[hi:])


@pytest.mark.parametrize("n_rows", [0, 1, N_SAMPLES])
def test_partition_sizes_with_default_blocks(n_rows):
    X, _, _ = make_data(seed=10)
    rows = np.arange(n_rows, dtype=INDEX_DTYPE)[::-1].copy()  # any order is kept
    split = SPLITS["numerical, missing left"]
    expected, n_left = cpu_partition(rows, X, split)
    d_rows = cuda.to_device(rows)
    feature, categorical, threshold, missing_left, bitset = split
    buffers = gpart.PartitionBuffers(N_SAMPLES)  # reused by nodes of any size up to it
    got = gpart.partition_rows(d_rows, cuda.to_device(X), feature, categorical, threshold,
                               missing_left, MISSING_BIN, cuda.to_device(bitset), buffers)
    assert got == n_left
    assert_array_equal(d_rows.copy_to_host(), expected)
