"""n_jobs -> Numba thread count, as a context manager that restores the old value."""

from __future__ import annotations

import os
from contextlib import contextmanager

import numba


def resolve_n_jobs(n_jobs: int | None) -> int:
    """Threads for ``n_jobs``: None or -1 means all cores, -2 all but one, ..."""
    max_threads = numba.config.NUMBA_NUM_THREADS
    if n_jobs is None:
        return max_threads
    if n_jobs < 0:
        return max(1, min(max_threads, (os.cpu_count() or 1) + 1 + n_jobs))
    return max(1, min(int(n_jobs), max_threads))


@contextmanager
def threads(n_jobs: int | None):
    """Run the body with Numba's thread pool limited to ``n_jobs`` threads."""
    previous = numba.get_num_threads()
    numba.set_num_threads(resolve_n_jobs(n_jobs))
    try:
        yield
    finally:
        numba.set_num_threads(previous)
