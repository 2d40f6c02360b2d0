"""The project's jit decorators, so compile options are set in one place.

``fastmath`` stays off: models are compared bit for bit across thread counts
and across save/load round trips. ``NUMBA_DISABLE_JIT=1`` turns every kernel
into plain Python (slow, but traceable) for debugging and coverage.

Compiled kernels are cached on disk in one directory chosen once, at import,
before any kernel is decorated: ``NUMBA_CACHE_DIR`` if set and writable, else
this package's ``__pycache__``, else the user's cache directory
(``$XDG_CACHE_HOME/treeboost`` or ``~/.cache/treeboost``), else a private
directory under the system temp dir. A read-only installation used by an
account without a writable home (a service account in a container) therefore
still caches; with no writable directory at all, kernels are compiled in every
process, after one warning. Numba's own search would raise "no locator
available" at import there. Where this host's cache has no entry for a kernel,
the one compiled for a portable CPU and shipped with the package is loaded, if
there is a usable one (``_shipped``), before compiling.
"""

import contextlib
import itertools
import os
import stat
import tempfile
import warnings

from numba import config, njit, types
from numba.core.caching import (
    CompileResultCacheImpl,
    FunctionCache,
    IndexDataCacheFile,
    _CacheLocator,
    _SourceFileBackedLocatorMixin,
)
from numba.core.dispatcher import Dispatcher
from numba.extending import intrinsic

from ._shipped import shipped_cache_class

_HERE = os.path.dirname(os.path.abspath(__file__))


def _usable(path):
    """Whether ``path`` is, or can be made, a directory we can write files in.

    By trying, as Numba does: ``os.access`` says yes to root on a read-only
    mount, and no on some network file systems that would accept the write.
    """
    try:
        os.makedirs(path, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        return False
    return True


def _private_dir(path):
    """``path`` created (mode 0700) or reused if only we own and may write it, else None.

    Under a shared temp dir another account could plant cache files, which Numba
    unpickles: a directory we do not own, or that others may write, is refused.
    """
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.stat(path)
    except OSError:
        return None
    getuid = getattr(os, "getuid", None)  # none on Windows, whose temp dir is per user
    if getuid is not None and (st.st_uid != getuid()
                               or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)):
        return None
    return path


def user_cache_root():
    """``$XDG_CACHE_HOME/treeboost``, else ``~/.cache/treeboost`` (None if no home is known)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if base.startswith("~"):  # no HOME and no password entry: nowhere to go
        return None
    return os.path.join(base, "treeboost")


def choose_cache_dir(numba_cache_dir, package_dir, user_root, temp_root):
    """The first usable kernel cache directory among the candidates, or None.

    Parameters
    ----------
    numba_cache_dir : str
        ``NUMBA_CACHE_DIR`` ("" when unset).
    package_dir : str
        Directory of the kernels' source files.
    user_root : str or None
        The user's cache directory for treeboost.
    temp_root : str
        The system temp dir.

    Returns
    -------
    str or None
        Directory the kernels' cache files go to. Outside the package it ends in
        a name derived from ``package_dir`` (as Numba names it), so that two
        installations never share cache files.
    """
    subpath = _CacheLocator.get_suitable_cache_subpath(os.path.join(package_dir, "_jit.py"))
    if numba_cache_dir:
        candidate = os.path.join(os.path.abspath(numba_cache_dir), subpath)
        if _usable(candidate):
            return candidate
    candidate = os.path.join(package_dir, "__pycache__")
    if _usable(candidate):
        return candidate
    if user_root and _usable(os.path.join(user_root, subpath)):
        return os.path.join(user_root, subpath)
    getuid = getattr(os, "getuid", None)
    private = _private_dir(os.path.join(
        temp_root, f"treeboost-{getuid()}" if getuid else "treeboost"))
    if private is not None and _usable(os.path.join(private, subpath)):
        return os.path.join(private, subpath)
    return None


#: where compiled kernels are cached; None: nowhere writable, compiled per process
CACHE_DIR = None
if not config.DISABLE_JIT:
    CACHE_DIR = choose_cache_dir(config.CACHE_DIR, _HERE, user_cache_root(),
                                 tempfile.gettempdir())
    if CACHE_DIR is None:
        warnings.warn(
            "treeboost found no writable directory for its compiled kernels (NUMBA_CACHE_DIR "
            f"unset or not writable, {_HERE} read-only, no writable home or temp dir): they "
            "are compiled again in every process, which adds seconds to the first fit. "
            "Set NUMBA_CACHE_DIR to a writable directory to keep them.",
            RuntimeWarning, stacklevel=2)


class _KernelLocator(_SourceFileBackedLocatorMixin, _CacheLocator):
    """Numba cache locator: every kernel goes to ``CACHE_DIR``, checked once at import."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno

    def get_cache_path(self):
        """Return the directory chosen at import."""
        return CACHE_DIR

    @classmethod
    def from_function(cls, py_func, py_file):
        """Locate ``py_func``'s cache; no per-function probe of the file system."""
        return cls(py_func, py_file)


class _KernelCacheImpl(CompileResultCacheImpl):
    _locator_classes = [_KernelLocator]


@contextlib.contextmanager
def _exclusive(path):
    """Hold an exclusive advisory lock on the file ``path`` (best effort).

    Where there is no ``fcntl`` (Windows) or the file system refuses locks, the
    block runs unlocked: ``_LockedIndexDataCacheFile`` then still never maps a
    signature to another signature's code, it may only forget an entry.
    """
    try:
        import fcntl
        handle = open(path, "a")
    except (ImportError, OSError):
        yield
        return
    with handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        except OSError:
            pass
        yield  # closing the file releases the lock


class _LockedIndexDataCacheFile(IndexDataCacheFile):
    """Numba's index and data files of one kernel, safe for processes compiling at once.

    Numba's own ``save`` reads the index, picks the first free data file name and
    writes the index, then the data, all unlocked. Two processes saving two
    signatures of one kernel at the same moment (the workers of a study, or of
    a parallel test run, starting on an empty cache) can both pick the same
    name: the index then maps one signature to the other's machine code, which
    a later process loads and calls with the wrong argument types. Here the
    read-modify-write of the index is done under a lock, and the data file is
    written before the index names it, so a process reading meanwhile sees
    either no entry (and compiles) or a complete one.
    """

    def save(self, key, data):
        """Save the compiled code ``data`` of signature ``key``."""
        with _exclusive(self._index_path + ".lock"):
            overloads = self._load_index()
            name = overloads.get(key)
            if name is not None:  # the same signature: its code again
                self._save_data(name, data)
                return
            taken = set(overloads.values())
            name = next(self._data_name(i) for i in itertools.count(1)
                        if self._data_name(i) not in taken)
            self._save_data(name, data)
            overloads[key] = name
            self._save_index(overloads)


class _KernelCache(FunctionCache):
    _impl_class = _KernelCacheImpl

    def __init__(self, py_func):
        super().__init__(py_func)
        self._cache_file = _LockedIndexDataCacheFile(
            cache_path=self._cache_path, filename_base=self._impl.filename_base,
            source_stamp=self._impl.locator.get_source_stamp())


#: the cache class the kernels get: ``_KernelCache``, falling back to the compiled kernels
#: shipped with the package (``_shipped``) where there are usable ones; None: no cache
_CACHE_CLASS = None
if not config.DISABLE_JIT:
    _CACHE_CLASS = shipped_cache_class(_KernelCache, host_cache=CACHE_DIR is not None)
    if CACHE_DIR is None and _CACHE_CLASS is _KernelCache:
        _CACHE_CLASS = None


def _jit(**options):
    """A decorator: ``njit(**options)``, cached in ``CACHE_DIR`` when there is one."""
    compile_lazily = njit(**options)

    def decorate(py_func):
        dispatcher = compile_lazily(py_func)
        # what cache=True does, with our locator instead of Numba's search
        if _CACHE_CLASS is not None and isinstance(dispatcher, Dispatcher):
            dispatcher._cache = _CACHE_CLASS(py_func)
        return dispatcher

    return decorate


#: serial kernel, cached on disk, releasing the GIL
kernel = _jit(nogil=True, error_model="numpy")
#: kernel with ``prange`` loops, run on Numba's thread pool
parallel_kernel = _jit(nogil=True, parallel=True, error_model="numpy")
#: small helper inlined into the kernels that call it (compiled only as part of them,
#: so there is nothing of its own to cache)
inline = njit(inline="always", nogil=True, error_model="numpy")


@inline
def bin_goes_left(b, is_categorical, bin_threshold, missing_left, missing_bin, bitset):
    """Whether a row in bin ``b`` goes to the left child of a split.

    Numerical split: bins <= ``bin_threshold`` go left, the missing bin goes
    where ``missing_left`` says. Categorical split: bins whose bit is set in
    ``bitset`` (8 uint32 words) go left; the missing bin, which also holds
    categories unseen in training, has bit 255 like any other category.
    """
    if is_categorical:
        return (bitset[b >> 5] >> (b & 31)) & 1 == 1
    if b == missing_bin:
        return missing_left
    return b <= bin_threshold


@inline
def lower_bound(a, lo, hi, value):
    """The first position in ascending ``a[lo:hi]`` holding ``value`` or more (hi if none)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < value:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _fetch_add_python(counter):
    """``fetch_add`` as plain Python (``NUMBA_DISABLE_JIT=1``: prange runs serially)."""
    taken = counter[0]
    counter[0] += 1
    return taken


if config.DISABLE_JIT:
    fetch_add = _fetch_add_python
else:
    @intrinsic
    def fetch_add(typingctx, counter):
        """``counter[0] += 1`` as one atomic step; return the value before it.

        ``counter``: an int64 array. The threads of a parallel region take work
        from a shared queue with it: each call hands out a distinct number, in
        whatever order the threads come.
        """
        if not (isinstance(counter, types.Array) and counter.dtype == types.int64):
            return None  # Numba then reports no matching signature

        def codegen(context, builder, signature, args):
            array = context.make_array(signature.args[0])(context, builder, args[0])
            one = context.get_constant(types.int64, 1)
            return builder.atomic_rmw("add", array.data, one, "seq_cst")

        return types.int64(counter), codegen
