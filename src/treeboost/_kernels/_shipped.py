"""Compiled kernels shipped with the package, used where the host cache has none.

A kernel's compiled code is looked up, per signature, first in the ordinary cache
(``_jit.CACHE_DIR``, keyed for this host's CPU, as Numba keys it), then in
``_compiled/<cpu>/`` next to this file: Numba cache files written at build time
by ``python -m treeboost._precompile``, compiling for a portable CPU
(``NUMBA_CPU_NAME``): ``x86-64-v4`` (AVX-512) and ``x86-64-v3`` (AVX2) by
default. Of the targets shipped, a process takes the best one it may run
(``choose``: the one built for exactly this CPU, else the one with most
features, so v4 on an AVX-512 host, else v3), once, at the first lookup. A miss
compiles for the host, as without this module, and saves to the ordinary
cache, which is then found first from the next process on.

A shipped entry is used only when all of these hold, else it is ignored (and
the kernel compiles): the target's ``manifest.json`` names this Numba version,
Python (the cache files' names carry it too), target triple, and a hash of
every source file of the package equal to this installation's (a kernel's code
includes the kernels it calls, from other files: a stale shipped copy of any
is refused); every CPU feature the portable target needs is enabled for this
process's code generation (so no instruction the CPU lacks, nor one
``NUMBA_ENABLE_AVX=0`` or ``NUMBA_CPU_NAME`` turned off); and Numba's own index
checks pass (its version, the kernel file's content hash, the kernel's
bytecode). ``TREEBOOST_SHIPPED_KERNELS=0`` turns the lookup off.

Numba has no public hook for a second, read-only cache location, so this reaches
into ``numba.core.caching`` (``Cache._load_overload``, ``IndexDataCacheFile``,
the index key layout); all of that is here, behind a Numba version guard: on a
Numba outside the tested range the kernels cache as before, without shipped code.
This module imports only the standard library and Numba (``_jit`` and ``simd``
import it).
"""

import hashlib
import io
import json
import os
import pickle
import sys
import warnings

import numba

HERE = os.path.dirname(os.path.abspath(__file__))
#: where ``python -m treeboost._precompile`` writes the shipped cache files, a folder per CPU
SHIPPED_DIR = os.path.join(HERE, "_compiled")
MANIFEST = "manifest.json"
#: the portable CPUs ``_precompile`` builds for by default, best first
SHIPPED_CPUS = ("x86-64-v4", "x86-64-v3")
#: Numba versions whose cache internals this module was written against
TESTED_NUMBA = ((0, 59), (0, 69))

#: CPU features (LLVM names) each portable target compiles code for; the host must have them
TARGET_FEATURES = {
    "generic": (),
    "x86-64": (),
    "x86-64-v2": ("cx16", "sahf", "popcnt", "sse3", "sse4.1", "sse4.2", "ssse3"),
}
TARGET_FEATURES["x86-64-v3"] = TARGET_FEATURES["x86-64-v2"] + (
    "avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave")
TARGET_FEATURES["x86-64-v4"] = TARGET_FEATURES["x86-64-v3"] + (
    "avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")


def numba_supported(version=numba.__version__):
    """Whether this Numba's cache internals are those this module was written for."""
    try:
        major_minor = tuple(int(part) for part in version.split(".")[:2])
    except ValueError:
        return False
    low, high = TESTED_NUMBA
    return low <= major_minor <= high


def python_tag():
    """The tag Numba puts in its cache files' names (``py311`` and ABI flags)."""
    return "py%d%d%s" % (sys.version_info[0], sys.version_info[1], getattr(sys, "abiflags", ""))


def sources_hash(package_dir=None):
    """SHA-256 over every ``.py`` file of the treeboost package (names and contents)."""
    root = package_dir or os.path.dirname(HERE)
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and d != "_compiled")
        for name in sorted(f for f in filenames if f.endswith(".py")):
            path = os.path.join(dirpath, name)
            digest.update(os.path.relpath(path, root).replace(os.sep, "/").encode() + b"\0")
            with open(path, "rb") as f:
                digest.update(hashlib.sha256(f.read()).digest())
    return digest.hexdigest()


def enabled_features(feature_string):
    """The features an LLVM feature string (``+avx,-sse4a,...``) turns on."""
    return {f[1:] for f in feature_string.split(",") if f.startswith("+")}


def usable_magic(manifest, host_magic, sources=None, version=numba.__version__):
    """The shipped cache's key tuple if this process may run its code, else None.

    ``host_magic``: this process's ``codegen.magic_tuple()`` (triple, CPU name, features).
    """
    if not isinstance(manifest, dict) or manifest.get("numba") != version:
        return None
    if manifest.get("python") != python_tag() or manifest.get("sources") != (
            sources if sources is not None else sources_hash()):
        return None
    magic = tuple(manifest.get("magic") or ())
    if len(magic) != 3 or magic[0] != host_magic[0]:
        return None
    if magic == tuple(host_magic):
        return magic
    needed = TARGET_FEATURES.get(magic[1])
    if needed is None:  # a CPU name we know nothing of: could be anything
        return None
    have = enabled_features(host_magic[2])
    if not set(needed) | enabled_features(magic[2]) <= have:
        return None
    return magic


def read_manifest(directory=SHIPPED_DIR):
    """The shipped cache's manifest, or None (none shipped, or unreadable)."""
    try:
        with open(os.path.join(directory, MANIFEST), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _rank(magic, host_magic):
    """Sort key of a usable target: built for exactly this CPU first, then most features."""
    return (tuple(magic) == tuple(host_magic), len(TARGET_FEATURES.get(magic[1], ())))


def choose(root, host_magic, sources=None):
    """The best shipped target under ``root`` this process may run, or None.

    Parameters
    ----------
    root : str
        The shipped directory: a folder per target (``x86-64-v4/``, ...), each with
        its manifest and cache files; or a single target's folder (a manifest in
        ``root`` itself).
    host_magic : tuple of str
        This process's ``codegen.magic_tuple()``.
    sources : str, optional
        The installation's ``sources_hash()`` (computed here when needed).

    Returns
    -------
    (str, tuple, dict) or None
        The target's folder, the key tuple its entries are stored under, and its
        manifest's ``files`` (name: SHA-256).
    """
    folders = [root]
    if read_manifest(root) is None:
        try:
            folders = [os.path.join(root, name) for name in sorted(os.listdir(root))]
        except OSError:
            return None
    best = None
    for folder in folders:
        manifest = read_manifest(folder)
        if manifest is None:
            continue
        if sources is None:
            sources = sources_hash()
        magic = usable_magic(manifest, host_magic, sources=sources)
        if magic is not None and (best is None
                                  or _rank(magic, host_magic) > _rank(best[1], host_magic)):
            best = (folder, magic, dict(manifest.get("files") or {}))
    return best


class _Shipped:
    """The shipped target this process uses, chosen once, at the first lookup."""

    root = SHIPPED_DIR
    directory = None  # the chosen target's folder
    _magic = False  # not yet known
    files = {}  # file name: SHA-256, from the chosen target's manifest

    @classmethod
    def magic(cls, codegen):
        """The key tuple of usable shipped entries for ``codegen``, or None."""
        if cls._magic is False:
            cls._magic = None
            chosen = choose(cls.root, codegen.magic_tuple())
            if chosen is not None:
                cls.directory, cls._magic, cls.files = chosen
        return cls._magic

    @classmethod
    def reset(cls, root=SHIPPED_DIR):
        """Point the lookup at ``root`` (tests) and forget what was worked out."""
        cls.root = root
        cls.directory = None
        cls._magic = False
        cls.files = {}


def enabled():
    """Whether shipped kernels may be looked up in this process at all."""
    if os.environ.get("TREEBOOST_SHIPPED_KERNELS", "1").strip() in ("0", "false", "no", ""):
        return False
    return numba_supported()


def shipped_cache_class(base, host_cache):
    """A subclass of the kernel cache class ``base`` that falls back to shipped code.

    ``host_cache``: whether there is an ordinary cache directory (else only shipped
    code is loaded, and nothing is saved). Returns ``base`` itself when shipped
    kernels are off or this Numba is not one this module knows.
    """
    if not enabled():
        return base
    try:
        from numba.core.caching import Cache, IndexDataCacheFile
        Cache._load_overload, Cache._save_overload, Cache._index_key  # noqa: B018
    except (ImportError, AttributeError):  # pragma: no cover - guarded by numba_supported
        warnings.warn("treeboost: this Numba's cache internals are not the expected ones; "
                      "shipped kernels are not used", RuntimeWarning, stacklevel=2)
        return base

    class ShippedKernelCache(base):
        """``base``, and on a miss the entry built for the portable CPU, if usable."""

        def __init__(self, py_func):
            if host_cache:
                super().__init__(py_func)
            else:  # Cache.__init__ without a host cache file
                self._name = repr(py_func)
                self._py_func = py_func
                self._impl = self._impl_class(py_func)
                self._cache_path = None
                self._cache_file = None
                self.enable()
            self._shipped_file = None

        def _load_overload(self, sig, target_context):
            if self._cache_file is not None:
                data = super()._load_overload(sig, target_context)
                if data is not None:
                    return data
            return self._load_shipped(sig, target_context)

        def _load_shipped(self, sig, target_context):
            if not self._enabled:
                return None
            codegen = target_context.codegen()
            magic = _Shipped.magic(codegen)
            if magic is None:
                return None
            if self._shipped_file is None:
                self._shipped_file = _VerifiedFile(
                    cache_path=_Shipped.directory, filename_base=self._impl.filename_base,
                    source_stamp=self._impl.locator.get_source_stamp())
            key = self._index_key(sig, codegen)
            key = (key[0], magic) + tuple(key[2:])
            try:
                data = self._shipped_file.load(key)
                if data is None:
                    return None
                return self._impl.rebuild(target_context, data)
            except Exception as exc:  # a damaged file: compile instead
                warnings.warn(f"treeboost: ignoring a shipped kernel that does not load "
                              f"({self._name}: {exc!r}); compiling it", RuntimeWarning,
                              stacklevel=2)
                return None

        def _save_overload(self, sig, data):
            if self._cache_file is not None:
                super()._save_overload(sig, data)

        def flush(self):
            if self._cache_file is not None:
                super().flush()

    class _VerifiedFile(IndexDataCacheFile):
        """A shipped index or data file is read only if its SHA-256 is the manifest's."""

        def _read(self, path):
            with open(path, "rb") as f:
                blob = f.read()
            if hashlib.sha256(blob).hexdigest() != _Shipped.files.get(os.path.basename(path)):
                raise ValueError(f"{os.path.basename(path)} differs from the manifest")
            return blob

        def _load_index(self):
            if not os.path.exists(self._index_path):
                return {}
            stream = io.BytesIO(self._read(self._index_path))
            if pickle.load(stream) != self._version:
                return {}
            stamp, overloads = pickle.loads(stream.read())
            return overloads if stamp == self._source_stamp else {}

        def _load_data(self, name):
            return pickle.loads(self._read(self._data_path(name)))

    return ShippedKernelCache
