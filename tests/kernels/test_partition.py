"""partition_rows and add_leaf_values against the masked-concatenate twin."""

import numba
import numpy as np
import pytest
from numpy.testing import assert_array_equal

from reference import bitset_of, partition
from treeboost._dtypes import INDEX_DTYPE, MISSING_BIN, SUM_DTYPE, X_BINNED_DTYPE
from treeboost._kernels.partition import (
    _CHUNK,
    SCORE_BLOCK,
    add_leaf_values,
    partition_rows,
    partition_rows_serial,
)

# the grower calls the serial kernel on small nodes, the parallel one on large nodes
by_kernel = pytest.mark.parametrize("kernel", [partition_rows, partition_rows_serial],
                                    ids=["parallel", "serial"])
# numerical splits ignore the bitset: all ones would send everything left if read
NO_BITSET = np.full(8, 0xFFFFFFFF, dtype=np.uint32)


def make_bins(n_samples, seed=0):
    """Feature-major bins (3, n_samples), C order: feature 0 with missing values,
    1 all missing, 2 one bin."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 50, size=(n_samples, 3)).astype(X_BINNED_DTYPE)
    X[rng.random(n_samples) < 0.2, 0] = MISSING_BIN
    X[:, 1] = MISSING_BIN
    X[:, 2] = 0
    return np.ascontiguousarray(X.T)


def run(rows, X, feature, bin_threshold, missing_left, kernel=partition_rows):
    """A partition kernel on a copy, with the argument types the grower passes."""
    out = rows.astype(INDEX_DTYPE)  # a copy
    left_buffer = np.empty(max(out.size, 1), dtype=INDEX_DTYPE)
    right_buffer = np.empty(max(out.size, 1), dtype=INDEX_DTYPE)
    n_left = kernel(out, X, int(feature), False, int(bin_threshold), bool(missing_left),
                    MISSING_BIN, NO_BITSET, left_buffer, right_buffer)
    return out, int(n_left)


SPLITS = [  # (feature, bin_threshold, missing_left)
    (0, 24, False), (0, 24, True), (0, 0, True), (0, 49, False),
    (1, 10, True), (1, 10, False),  # all missing: everything on the missing side
    (2, 0, False), (2, 5, True),  # one bin: everything left
]


@by_kernel
@pytest.mark.parametrize("n_node", [0, 1, 1000, 3 * _CHUNK + 123])
@pytest.mark.parametrize("split", SPLITS)
def test_matches_stable_twin(n_node, split, kernel):
    X = make_bins(4 * _CHUNK)
    rng = np.random.default_rng(n_node)
    rows = np.sort(rng.choice(X.shape[1], n_node, replace=False)).astype(INDEX_DTYPE)
    out, n_left = run(rows, X, *split, kernel=kernel)
    expected, expected_left = partition(rows, X, *split)
    assert n_left == expected_left
    assert_array_equal(out, expected)  # stable: each side keeps ascending order
    assert_array_equal(np.sort(out), rows)  # same set of rows


@by_kernel
def test_edge_splits_put_everything_on_one_side(kernel):
    X = make_bins(500)
    rows = np.arange(500, dtype=INDEX_DTYPE)
    assert run(rows, X, 1, 10, True, kernel)[1] == 500  # all missing, missing left
    assert run(rows, X, 1, 10, False, kernel)[1] == 0
    assert run(rows, X, 2, 0, False, kernel)[1] == 500  # one bin, bin <= 0


@by_kernel
def test_unsorted_rows_keep_their_relative_order(kernel):
    X = make_bins(3 * _CHUNK)
    rows = np.random.default_rng(5).permutation(X.shape[1]).astype(INDEX_DTYPE)
    out, n_left = run(rows, X, 0, 30, True, kernel)
    expected, expected_left = partition(rows, X, 0, 30, True)
    assert n_left == expected_left
    assert_array_equal(out, expected)


@by_kernel
def test_slice_of_a_larger_index_array(kernel):
    """The grower partitions a node's slice in place; rows outside must not move."""
    X = make_bins(2 * _CHUNK + 7)
    n_samples = X.shape[1]
    sample_indices = np.arange(n_samples, dtype=INDEX_DTYPE)
    start, stop = 1000, n_samples - 5
    node = sample_indices[start:stop]
    expected, expected_left = partition(node.copy(), X, 0, 20, False)
    left_buffer = np.empty(n_samples, dtype=INDEX_DTYPE)
    right_buffer = np.empty(n_samples, dtype=INDEX_DTYPE)
    n_left = kernel(node, X, 0, False, 20, False, MISSING_BIN, NO_BITSET, left_buffer,
                    right_buffer)
    assert n_left == expected_left
    assert_array_equal(sample_indices[start:stop], expected)
    assert_array_equal(sample_indices[:start], np.arange(start))
    assert_array_equal(sample_indices[stop:], np.arange(stop, n_samples))


def test_independent_of_thread_count():
    n_threads = [1, 2] if numba.config.NUMBA_NUM_THREADS >= 2 else [1]
    X = make_bins(5 * _CHUNK)
    rows = np.arange(0, X.shape[1], dtype=INDEX_DTYPE)
    previous = numba.get_num_threads()
    results = []
    try:
        for n in n_threads:
            numba.set_num_threads(n)
            results.append(run(rows, X, 0, 17, True))
    finally:
        numba.set_num_threads(previous)
    expected, expected_left = partition(rows, X, 0, 17, True)
    for out, n_left in results:
        assert n_left == expected_left
        assert_array_equal(out, expected)


# ---- categorical splits ------------------------------------------------------------------
def run_categorical(rows, X, feature, bitset, kernel, missing_left=False):
    """A partition kernel with a bitset; bin_threshold -1 and missing_left must not matter."""
    out = rows.astype(INDEX_DTYPE)  # a copy
    left_buffer = np.empty(max(out.size, 1), dtype=INDEX_DTYPE)
    right_buffer = np.empty(max(out.size, 1), dtype=INDEX_DTYPE)
    n_left = kernel(out, X, int(feature), True, -1, bool(missing_left), MISSING_BIN, bitset,
                    left_buffer, right_buffer)
    return out, int(n_left)


BITSETS = {  # left categories among bins 0..49 and the missing bin
    "none": [],
    "all_values": range(50),
    "everything": [*range(50), MISSING_BIN],
    "missing_only": [MISSING_BIN],
    "odd_with_missing": [*range(1, 50, 2), MISSING_BIN],
    "random": np.random.default_rng(0).choice(50, 17, replace=False),
    "word_edges": [0, 31, 32, 33, 47],  # bits at the ends of uint32 words
}


@by_kernel
@pytest.mark.parametrize("n_node", [0, 1, 1000, 3 * _CHUNK + 123])
@pytest.mark.parametrize("left_set", BITSETS)
def test_categorical_matches_mask_twin(n_node, left_set, kernel):
    X = make_bins(4 * _CHUNK)
    rng = np.random.default_rng(n_node + 1)
    rows = np.sort(rng.choice(X.shape[1], n_node, replace=False)).astype(INDEX_DTYPE)
    bitset = bitset_of(BITSETS[left_set])
    missing_left = MISSING_BIN not in list(BITSETS[left_set])  # the opposite of the bitset
    out, n_left = run_categorical(rows, X, 0, bitset, kernel, missing_left)
    expected, expected_left = partition(rows, X, 0, -1, False, bitset=bitset)
    assert n_left == expected_left
    assert_array_equal(out, expected)  # stable, like numerical splits
    if n_node > 1000:  # both sides non-empty unless the set says otherwise
        assert (n_left == 0) == (left_set == "none")
        assert (n_left == n_node) == (left_set == "everything")


@by_kernel
def test_categorical_missing_rows_follow_bit_255(kernel):
    X = make_bins(500)
    rows = np.arange(500, dtype=INDEX_DTYPE)
    # feature 1 is all missing: everything left iff bit 255 is set, whatever missing_left
    assert run_categorical(rows, X, 1, bitset_of([MISSING_BIN]), kernel)[1] == 500
    assert run_categorical(rows, X, 1, bitset_of(range(255)), kernel, True)[1] == 0
    # feature 2 is all bin 0
    assert run_categorical(rows, X, 2, bitset_of([0]), kernel)[1] == 500
    assert run_categorical(rows, X, 2, bitset_of([1, MISSING_BIN]), kernel, True)[1] == 0


@pytest.mark.parametrize("n_threads", [1, 2])
def test_add_leaf_values_matches_twin(n_threads):
    rng = np.random.default_rng(0)
    # over several of the kernel's row blocks, the last one partial
    n = 2 * SCORE_BLOCK + 3000
    # rows grouped by leaf as the grower leaves them, each leaf's rows ascending
    # (the kernel bisects them), leaf 2 empty, one row not in any leaf
    leaf_of = rng.choice([0, 1, 3, 4], size=n, p=[0.05, 0.55, 0.3, 0.1])
    leaf_of[rng.integers(n)] = -1
    sample_indices = np.concatenate([np.flatnonzero(leaf_of == j) for j in range(5)]
                                    ).astype(INDEX_DTYPE)
    sizes = np.array([np.count_nonzero(leaf_of == j) for j in range(5)])
    stops = np.cumsum(sizes).astype(np.int64)
    starts = stops - sizes
    values = np.array([0.5, -1.25, 7.0, 2.0, -0.375], dtype=SUM_DTYPE)
    raw = rng.normal(size=n)
    before = raw.copy()
    expected = raw.copy()
    for v, a, b in zip(values, starts, stops, strict=True):
        expected[sample_indices[a:b]] += v
    previous = numba.get_num_threads()
    try:
        numba.set_num_threads(min(n_threads, numba.config.NUMBA_NUM_THREADS))
        add_leaf_values(raw, sample_indices, starts, stops, values)
    finally:
        numba.set_num_threads(previous)
    # each row gets exactly one addition, the same float64 operation on both sides
    assert_array_equal(raw, expected)
    outside = np.flatnonzero(leaf_of < 0)
    assert outside.size == 1
    assert raw[outside[0]] == before[outside[0]]


@pytest.mark.parametrize("n_node", [15, 16, 17, 33, 1000])
@pytest.mark.parametrize("split", [(0, True), (127, False), (253, True), (254, False)])
def test_sixteen_rows_a_step_match_the_twin(n_node, split):
    """The serial kernel's vector steps (simd.split16, where the CPU has AVX-512;
    the loop elsewhere): every bin value, missing rows either side, rows in any order,
    and a row among the column's last three part way through, whose step falls back
    to the loop for the rest (the gather reads 4 bytes from a row's bin on)."""
    bin_threshold, missing_left = split
    n_samples = 2000
    rng = np.random.default_rng(n_node)
    X = rng.integers(0, 256, size=(2, n_samples)).astype(X_BINNED_DTYPE)  # 255: missing
    for feature in (0, 1):
        rows = rng.choice(n_samples - 3, n_node, replace=False).astype(INDEX_DTYPE)
        if n_node > 40:
            rows[40] = n_samples - 1 - feature  # a step of the third block falls back
        out, n_left = run(rows, X, feature, bin_threshold, missing_left, partition_rows_serial)
        expected, expected_left = partition(rows, X, feature, bin_threshold, missing_left)
        assert n_left == expected_left
        assert_array_equal(out, expected)


def test_vector_steps_follow_the_target_cpu():
    """The vector steps follow the CPU Numba generates code for: 512-bit steps for
    AVX-512 (a host with it, or an x86-64-v4 build), the 256-bit bin search for AVX2
    (x86-64-v3), none where the target has neither, whatever the host has; where LLVM
    cannot tell the host's features (an empty string), none."""
    from treeboost._kernels import simd

    avx512_host = "+avx,+avx2,+avx512f,-sse4a"

    def widths(cpu_name, feature_string, host=avx512_host):
        return simd.vector_widths(simd.target_features(cpu_name, feature_string, lambda: host))

    assert widths(None, None) == (16, 8)
    assert widths(None, None, host="+avx,+avx2,-avx512f") == (0, 4)
    assert widths(None, None, host="") == (0, 0)
    assert widths("x86-64-v4", "") == (16, 8)
    assert widths("x86-64-v3", "") == (0, 4)  # no AVX-512 code, even on this host
    assert widths("generic", "") == (0, 0)
    assert widths("x86-64-v3", "+avx512f") == (16, 8)  # features added by NUMBA_CPU_FEATURES
    assert widths("x86-64-v4", "-avx512f,-avx2") == (0, 0)
    # a CPU name given without NUMBA_CPU_FEATURES: Numba takes the host's features
    assert widths("x86-64-v3", None) == (16, 8)
    assert widths("sapphirerapids", "") == (0, 0)  # a name not listed: nothing assumed
