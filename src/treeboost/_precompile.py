"""Compile the kernels for portable CPUs into the package, to be shipped with it.

    python -m treeboost._precompile                    # x86-64-v4 and x86-64-v3, the default
    python -m treeboost._precompile --cpu x86-64-v3    # AVX2 only
    python -m treeboost._precompile --cpu generic      # any x86-64 (SSE2)
    python -m treeboost._precompile --clean            # remove the shipped kernels

A build step, run before the wheel is built (the wheel then carries
``treeboost/_kernels/_compiled/<cpu>/``, and is tied to this platform, Python and
Numba version); a process loading them takes the best target its CPU runs
(``_kernels/_shipped.py``, which also says what is checked before a shipped kernel
is loaded). A representative set of small fits and predictions (binary,
regression, multiclass, categorical, sparse, missing values, weights, early
stopping, one thread and several, small and larger data) runs in a child process
compiling for the first ``--cpu`` this host can run, into an empty cache; that
child also records every signature it compiled. The other targets are compiled
from that record, each in a child of its own, without running any code: so an
x86-64-v4 (AVX-512) build is made on a host without AVX-512 too. Each target's
cache goes to ``_compiled/<cpu>/`` with its manifest. Kernels no fit here
reaches still compile on first use, as without shipped kernels.
"""

import argparse
import hashlib
import importlib
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time

import llvmlite.binding as llvm
import numba

from ._kernels import _shipped

_RUN = "import sys; from treeboost._precompile import _workload; _workload(sys.argv[1])"
_COMPILE = "import sys; from treeboost._precompile import _compile; _compile(sys.argv[1])"


def _key_tuple():
    """This process's cache key tuple (target triple, CPU name, features)."""
    from numba.core.registry import cpu_target

    from treeboost._kernels import _jit

    return {"cache_dir": _jit.CACHE_DIR,
            "magic": list(cpu_target.target_context.codegen().magic_tuple())}


def _dispatchers(package="treeboost"):
    """Every kernel defined at module level in an imported module of ``package``:
    (module name, attribute name, dispatcher)."""
    from numba.core.registry import CPUDispatcher

    for name, module in sorted(sys.modules.items()):
        if name != package and not name.startswith(package + "."):
            continue
        for attr, value in sorted(vars(module).items()):
            if isinstance(value, CPUDispatcher) and value.py_func.__module__ == name and (
                    value.py_func.__qualname__ == attr):
                yield name, attr, value


def _workload(record):
    """Run the fits whose kernels are shipped; write every compiled signature to
    ``record`` (a pickle) and print the cache directory and key tuple."""
    import numpy as np
    import pandas as pd
    import scipy.sparse as sp

    import treeboost

    rng = np.random.default_rng(0)

    def data(rows, cols=20, dtype=np.float64):
        X = rng.normal(size=(rows, cols)).astype(dtype)
        return X, X[:, 0] + np.sin(X[:, 1]) + rng.normal(scale=0.1, size=rows)

    for rows, trees in ((10_000, 5), (150_000, 2)):
        for n_jobs in (1, 2):
            X, y = data(rows)
            small = dict(n_estimators=trees, n_jobs=n_jobs)
            treeboost.TreeBoostRegressor(**small).fit(X, y).predict(X)
            yb = (y > 0).astype(int)
            clf = treeboost.TreeBoostClassifier(**small).fit(X, yb)
            clf.predict(X), clf.predict_proba(X)
            ym = np.digitize(y, [-1, 0, 1])
            treeboost.TreeBoostClassifier(**small).fit(X, ym).predict_proba(X)
    X, y = data(10_000, dtype=np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    w = rng.random(len(y))
    reg = treeboost.TreeBoostRegressor(n_estimators=20, n_iter_no_change=3)
    reg.fit(X[:8000], y[:8000], sample_weight=w[:8000], eval_set=[(X[8000:], y[8000:])])
    reg.predict(X)
    frame = pd.DataFrame(X[:, :5], columns=[f"f{i}" for i in range(5)])
    frame["c"] = pd.Categorical(rng.integers(0, 12, len(frame)).astype(str))
    reg, clf = treeboost.TreeBoostRegressor, treeboost.TreeBoostClassifier
    for est, target in ((reg, y), (clf, y > 0)):
        est(n_estimators=5).fit(frame, target).predict(frame)
    Xs = sp.random(10_000, 50, density=0.05, format="csr", random_state=0)
    ys = np.asarray(Xs.sum(axis=1)).ravel()
    reg, clf = treeboost.TreeBoostRegressor, treeboost.TreeBoostClassifier
    for est, target in ((reg, ys), (clf, ys > 0)):
        est(n_estimators=5).fit(Xs, target).predict(Xs)
    write_record(record)
    print(json.dumps(_key_tuple()))


def write_record(record, package="treeboost"):
    """Write the signatures every kernel of ``package`` has compiled in this process to
    ``record`` (a pickle of (module, name, signatures) triples, read by ``_compile``)."""
    signatures = [(module, name, list(d.signatures))
                  for module, name, d in _dispatchers(package) if d.signatures]
    with open(record, "wb") as f:
        pickle.dump(signatures, f)


def _compile(record):
    """Compile, without running, every signature ``record`` lists (written by
    ``_workload``) into this process's cache; print its directory and key tuple."""
    with open(record, "rb") as f:
        signatures = pickle.load(f)
    for module, name, sigs in signatures:
        dispatcher = getattr(importlib.import_module(module), name)
        for sig in sigs:
            dispatcher.compile(sig)
    print(json.dumps(_key_tuple()))


def runnable(cpu, host_features=None):
    """Whether this host runs code built for ``cpu`` (every feature of its level)."""
    if host_features is None:
        try:
            host_features = {k for k, on in llvm.get_host_cpu_features().items() if on}
        except RuntimeError:  # LLVM cannot tell: only code for no feature at all
            host_features = set()
    return set(_shipped.TARGET_FEATURES[cpu]) <= set(host_features)


def _child(code, cpu, cache, record):
    """Run ``code`` in a child compiling for ``cpu`` into ``cache``; its JSON report."""
    env = dict(os.environ, NUMBA_CPU_NAME=cpu, NUMBA_CPU_FEATURES="",
               NUMBA_CACHE_DIR=cache, TREEBOOST_SHIPPED_KERNELS="0")
    env.pop("NUMBA_DISABLE_JIT", None)
    done = subprocess.run([sys.executable, "-c", code, record], env=env, check=False,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"compiling the kernels for {cpu} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def precompile(cpus=_shipped.SHIPPED_CPUS, out=_shipped.SHIPPED_DIR, verbose=True):
    """Fill ``out/<cpu>/`` with the kernels compiled for each of ``cpus``.

    Parameters
    ----------
    cpus : sequence of str, default=("x86-64-v4", "x86-64-v3")
        Portable CPU names (keys of ``_shipped.TARGET_FEATURES``); at least one
        must be one this host runs (the fits run on it).
    out : str
        The shipped directory.
    verbose : bool, default=True
        Print each target's file count, size and seconds.

    Returns
    -------
    dict
        Each CPU name's manifest.
    """
    cpus = list(dict.fromkeys([cpus] if isinstance(cpus, str) else cpus))
    for cpu in cpus:
        if cpu not in _shipped.TARGET_FEATURES:
            raise ValueError(f"cpu must be among {sorted(_shipped.TARGET_FEATURES)}, "
                             f"got {cpu!r}")
    first = next((cpu for cpu in cpus if runnable(cpu)), None)
    if first is None:
        raise ValueError(f"cpu: this host runs none of {cpus} (the fits compiling the "
                         "kernels run on it); add one it runs, such as x86-64-v3 or generic")
    manifests = {}
    with tempfile.TemporaryDirectory(prefix="treeboost-precompile-") as tmp:
        record = os.path.join(tmp, "signatures.pickle")
        for cpu in [first] + [c for c in cpus if c != first]:
            t0 = time.perf_counter()
            cache = os.path.join(tmp, cpu)
            report = _child(_RUN if cpu == first else _COMPILE, cpu, cache, record)
            target = os.path.join(out, cpu)
            manifests[cpu] = install(report["cache_dir"], report["magic"], target)
            if verbose:
                files = manifests[cpu]["files"]
                size = sum(os.path.getsize(os.path.join(target, n)) for n in files) / 2**20
                print(f"{len(files)} files ({size:.1f} MiB) for {report['magic'][1]} in "
                      f"{target}, {time.perf_counter() - t0:.0f} s")
    return manifests


def install(cache_dir, magic, out=_shipped.SHIPPED_DIR):
    """Copy the kernel cache files of ``cache_dir`` (written by a process whose code
    generation had the key tuple ``magic``) into ``out``, with their manifest."""
    clean(out)
    os.makedirs(out, exist_ok=True)
    files = {}
    for name in sorted(os.listdir(cache_dir)):
        if name.endswith((".nbi", ".nbc")):
            shutil.copyfile(os.path.join(cache_dir, name), os.path.join(out, name))
            with open(os.path.join(out, name), "rb") as f:
                files[name] = hashlib.sha256(f.read()).hexdigest()
    manifest = {"numba": numba.__version__, "python": _shipped.python_tag(),
                "magic": list(magic), "sources": _shipped.sources_hash(), "files": files}
    with open(os.path.join(out, _shipped.MANIFEST), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)
    return manifest


def clean(out=_shipped.SHIPPED_DIR):
    """Remove the shipped kernels (cache files and manifests) from ``out`` and from its
    targets' folders (``out/<cpu>/``, removed when left empty)."""
    if not os.path.isdir(out):
        return
    for name in os.listdir(out):
        path = os.path.join(out, name)
        if name.endswith((".nbi", ".nbc")) or name == _shipped.MANIFEST:
            os.remove(path)
        elif name in _shipped.TARGET_FEATURES and os.path.isdir(path):
            clean(path)
            if not os.listdir(path):
                os.rmdir(path)


def main(argv=None):
    """Command line: precompile, or remove the shipped kernels."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cpu", action="append", choices=sorted(_shipped.TARGET_FEATURES),
                    help="a target to build (repeat for several; default: "
                         f"{' and '.join(_shipped.SHIPPED_CPUS)})")
    ap.add_argument("--out", default=_shipped.SHIPPED_DIR)
    ap.add_argument("--clean", action="store_true", help="remove the shipped kernels")
    args = ap.parse_args(argv)
    if args.clean:
        clean(args.out)
        return
    precompile(args.cpu or _shipped.SHIPPED_CPUS, args.out)


if __name__ == "__main__":
    main()
