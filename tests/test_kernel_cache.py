"""The kernel cache stays correct when processes compile the same kernel at once.

Numba's own index update is an unlocked read-modify-write: two processes
saving two signatures of one kernel together can both claim the same data file,
leaving the index mapping one signature to the other's machine code (seen here
with 4 processes saving 30 signatures each: 1 entry wrong, 17 lost). The
study's workers and a parallel test run start exactly like that on an empty
cache. ``_LockedIndexDataCacheFile`` must give every signature its own code.
"""

import multiprocessing

import pytest

from treeboost._kernels._jit import _KernelCache, _LockedIndexDataCacheFile
from treeboost._kernels.histogram import build_histograms

N_PROCESSES = 4
N_KEYS = 30


def _save_many(path, who, start):
    start.wait()
    cache_file = _LockedIndexDataCacheFile(cache_path=path, filename_base="kernel",
                                           source_stamp=("stamp", 1))
    for i in range(N_KEYS):
        cache_file.save(("signature", who, i), ("code", who, i))


def test_concurrent_saves_keep_every_signature_with_its_own_code(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    workers = [ctx.Process(target=_save_many, args=(str(tmp_path), who, start))
               for who in range(N_PROCESSES)]
    for w in workers:
        w.start()
    start.set()
    for w in workers:
        w.join(timeout=120)
        assert w.exitcode == 0
    cache_file = _LockedIndexDataCacheFile(cache_path=str(tmp_path), filename_base="kernel",
                                           source_stamp=("stamp", 1))
    loaded = {(who, i): cache_file.load(("signature", who, i))
              for who in range(N_PROCESSES) for i in range(N_KEYS)}
    assert loaded == {(who, i): ("code", who, i)
                      for who in range(N_PROCESSES) for i in range(N_KEYS)}
    # one data file per signature, none shared
    assert len(list(tmp_path.glob("kernel.*.nbc"))) == N_PROCESSES * N_KEYS


def test_saving_a_signature_again_rewrites_its_own_file(tmp_path):
    cache_file = _LockedIndexDataCacheFile(cache_path=str(tmp_path), filename_base="kernel",
                                           source_stamp=("stamp", 1))
    cache_file.save("a", "old")
    cache_file.save("b", "other")
    cache_file.save("a", "new")
    assert cache_file.load("a") == "new"
    assert cache_file.load("b") == "other"
    assert len(list(tmp_path.glob("kernel.*.nbc"))) == 2


def test_the_kernels_use_the_locked_cache_file():
    cache = getattr(build_histograms, "_cache", None)
    if not isinstance(cache, _KernelCache):
        pytest.skip("kernels are not cached here (JIT disabled or no writable cache)")
    assert isinstance(cache._cache_file, _LockedIndexDataCacheFile)
