"""The kernels' shared counter (``_jit.fetch_add``), with which the threads of one
parallel region take work from a common queue (``grow_newton_trees``)."""

import numpy as np
import pytest
from numba import njit, prange

from treeboost._kernels._jit import fetch_add


@njit(parallel=True)
def _take_all(counter, taken_by):
    """Each worker takes numbers until they run out, marking its own row."""
    n_workers, n = taken_by.shape
    for w in prange(n_workers):
        while True:
            k = fetch_add(counter)
            if k >= n:
                break
            taken_by[w, k] += 1


@pytest.mark.parametrize("n_workers", [1, 2, 3, 8])
def test_each_number_is_handed_out_once_whatever_the_workers(n_workers):
    # a plain read-then-write increment lets two threads take the same number, which
    # then shows as a column summing to 2 (or a number skipped, summing to 0)
    counter = np.zeros(1, dtype=np.int64)
    taken_by = np.zeros((n_workers, 200_000), dtype=np.int64)
    _take_all(counter, taken_by)
    assert (taken_by.sum(axis=0) == 1).all()
    # every worker's last call found the queue empty, and counted once more
    assert counter[0] == taken_by.shape[1] + n_workers


def test_the_value_before_the_increment_is_returned():
    counter = np.array([41], dtype=np.int64)

    @njit
    def take_twice(c):
        return fetch_add(c), fetch_add(c)

    assert take_twice(counter) == (41, 42)
    assert counter[0] == 43
