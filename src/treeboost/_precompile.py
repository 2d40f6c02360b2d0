"""Compile the kernels for a portable CPU into the package, to be shipped with it.

    python -m treeboost._precompile                    # x86-64-v3 (AVX2), the default
    python -m treeboost._precompile --cpu generic      # any x86-64 (SSE2)
    python -m treeboost._precompile --clean            # remove the shipped kernels

A build step, run before the wheel is built (the wheel then carries
``treeboost/_kernels/_compiled/``, and is tied to this platform, Python and Numba
version). It runs a representative set of small fits and predictions (binary,
regression, multiclass, categorical, sparse, missing values, weights, early
stopping, one thread and several, small and larger data) in a child process that
compiles for ``--cpu`` into an empty cache, and copies that cache into
``_compiled/`` with a manifest (``_kernels/_shipped.py`` says what is checked
before a shipped kernel is loaded). Kernels no fit here reaches still compile on
first use, as without shipped kernels.
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numba

from ._kernels import _shipped

_CHILD = "from treeboost._precompile import _workload; _workload()"


def _workload():
    """The fits whose kernels are shipped; prints the cache directory and key tuple."""
    import numpy as np
    import pandas as pd
    import scipy.sparse as sp
    from numba.core.registry import cpu_target

    import treeboost
    from treeboost._kernels import _jit

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
    print(json.dumps({"cache_dir": _jit.CACHE_DIR,
                      "magic": list(cpu_target.target_context.codegen().magic_tuple())}))


def precompile(cpu="x86-64-v3", out=_shipped.SHIPPED_DIR, verbose=True):
    """Fill ``out`` with the kernels compiled for ``cpu``; return the manifest."""
    if cpu not in _shipped.TARGET_FEATURES:
        raise ValueError(f"cpu must be one of {sorted(_shipped.TARGET_FEATURES)}, got {cpu!r}")
    with tempfile.TemporaryDirectory(prefix="treeboost-precompile-") as cache:
        env = dict(os.environ, NUMBA_CPU_NAME=cpu, NUMBA_CPU_FEATURES="",
                   NUMBA_CACHE_DIR=cache, TREEBOOST_SHIPPED_KERNELS="0")
        env.pop("NUMBA_DISABLE_JIT", None)
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", _CHILD], env=env, check=True,
                              capture_output=True, text=True)
        report = json.loads(done.stdout.strip().splitlines()[-1])
        manifest = install(report["cache_dir"], report["magic"], out)
    if verbose:
        files = manifest["files"]
        size = sum(os.path.getsize(os.path.join(out, n)) for n in files) / 2**20
        print(f"{len(files)} files ({size:.1f} MiB) for {report['magic'][1]} in {out}, "
              f"{time.perf_counter() - t0:.0f} s")
    return manifest


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
    """Remove the shipped kernels (cache files and manifest) from ``out``."""
    for name in os.listdir(out) if os.path.isdir(out) else ():
        if name.endswith((".nbi", ".nbc")) or name == _shipped.MANIFEST:
            os.remove(os.path.join(out, name))


def main(argv=None):
    """Command line: precompile, or remove the shipped kernels."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cpu", default="x86-64-v3", choices=sorted(_shipped.TARGET_FEATURES))
    ap.add_argument("--out", default=_shipped.SHIPPED_DIR)
    ap.add_argument("--clean", action="store_true", help="remove the shipped kernels")
    args = ap.parse_args(argv)
    if args.clean:
        clean(args.out)
        return
    precompile(args.cpu, args.out)


if __name__ == "__main__":
    main()
