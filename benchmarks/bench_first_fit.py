"""What a new user waits for: import plus the first fit, with a cold and a warm kernel cache.

Each measurement runs in a fresh Python process. The cold one points Numba's cache at an
empty directory (``NUMBA_CACHE_DIR``), so every kernel the fit uses is compiled; the warm
one runs again with the same directory, so every kernel is loaded from disk. With
``--kernels`` the cold run also records Numba's compile events and prints, per kernel,
the CPU seconds spent compiling it (``time.process_time``: compilation runs on one
thread, and CPU time is less sensitive to a busy machine than wall time), with the
kernels it calls (nested compilations) and without them (its own). Import and fit are
reported in wall and CPU seconds.

    python benchmarks/bench_first_fit.py                 # cold and warm, 10,000 rows
    python benchmarks/bench_first_fit.py --kernels       # plus the per-kernel table
    python benchmarks/bench_first_fit.py --task multiclass --repeat 3
    python benchmarks/bench_first_fit.py --python /tmp/fv/bin/python   # another environment
    python benchmarks/bench_first_fit.py --no-shipped   # compile even where kernels are shipped

``--python`` measures the interpreter of another environment (a fresh virtual
environment with the wheel installed, say); the child imports ``treeboost`` from there.
Kernels shipped with the package (``python -m treeboost._precompile``) are used by the
cold run unless ``--no-shipped`` (``TREEBOOST_SHIPPED_KERNELS=0``); the per-kernel table
then lists only the kernels that were compiled, and ``loaded`` how many came from disk.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
c0 = time.process_time()
record = {}
own = {}
if True:  # compile events are counted in every run (the table needs --kernels)
    from numba.core import event

    class Listener(event.Listener):
        def __init__(self):
            self.stack = []  # [start, seconds of the nested compilations]

        def on_start(self, ev):
            self.stack.append([time.process_time(), 0.0])

        def on_end(self, ev):
            start, nested = self.stack.pop()
            sec = time.process_time() - start
            if self.stack:
                self.stack[-1][1] += sec
            name = ev.data["dispatcher"].py_func.__qualname__
            module = ev.data["dispatcher"].py_func.__module__.rsplit(".", 1)[-1]
            key = module + "." + name
            record[key] = record.get(key, 0.0) + sec
            own[key] = own.get(key, 0.0) + sec - nested

    event.register("numba:compile", Listener())
import numpy as np
import numba.core.caching as _caching
loaded = [0]
_load = _caching.Cache.load_overload
def _counting_load(self, sig, target_context):
    data = _load(self, sig, target_context)
    loaded[0] += data is not None
    return data
_caching.Cache.load_overload = _counting_load
import treeboost
t_import = time.perf_counter() - t0
c_import = time.process_time() - c0
rng = np.random.default_rng(0)
X = rng.normal(size=(ROWS, 20))
task = "TASK"
if task == "regression":
    y = X[:, 0] + np.sin(X[:, 1]) + rng.normal(scale=0.1, size=ROWS)
    est = treeboost.TreeBoostRegressor(n_estimators=100)
elif task == "binary":
    y = (X[:, 0] + X[:, 1] ** 2 + rng.logistic(size=ROWS) > 1).astype(int)
    est = treeboost.TreeBoostClassifier(n_estimators=100)
else:
    y = np.digitize(X[:, 0] + X[:, 1], [-1, 0, 1])
    est = treeboost.TreeBoostClassifier(n_estimators=100)
t1 = time.perf_counter()
c1 = time.process_time()
est.fit(X, y)
est.predict(X)
t_fit = time.perf_counter() - t1
c_fit = time.process_time() - c1
print(json.dumps({"import": t_import, "fit": t_fit, "cpu_import": c_import, "cpu_fit": c_fit,
                  "kernels": record, "own": own, "loaded": loaded[0],
                  "treeboost": treeboost.__file__}))
"""


def run_child(cache_dir: str, rows: int, task: str, kernels: bool, python: str = sys.executable,
              shipped: bool = True) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    if not shipped:
        env["TREEBOOST_SHIPPED_KERNELS"] = "0"
    code = (CHILD.replace("ROWS", str(rows))
            .replace("TASK", task))
    out = subprocess.run([python, "-c", code], env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    """Print cold and warm import + first-fit seconds (and optionally per kernel)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--task", choices=["regression", "binary", "multiclass"],
                    default="binary")
    ap.add_argument("--repeat", type=int, default=1, help="cold/warm pairs to run")
    ap.add_argument("--kernels", action="store_true", help="per-kernel compile table")
    ap.add_argument("--python", default=sys.executable,
                    help="interpreter of the environment to measure (default: this one)")
    ap.add_argument("--no-shipped", action="store_true",
                    help="ignore compiled kernels shipped with the package")
    args = ap.parse_args(argv)
    shipped = not args.no_shipped
    for r in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="tb-numba-cache-") as cache:
            t0 = time.perf_counter()
            cold = run_child(cache, args.rows, args.task, args.kernels, args.python, shipped)
            cold_wall = time.perf_counter() - t0
            t0 = time.perf_counter()
            warm = run_child(cache, args.rows, args.task, False, args.python, shipped)
            warm_wall = time.perf_counter() - t0
        print(f"run {r}: task={args.task} rows={args.rows} treeboost={cold['treeboost']}"
              f"{'' if shipped else ' (shipped kernels off)'}")
        for name, res, wall in (("cold", cold, cold_wall), ("warm", warm, warm_wall)):
            print(f"  {name}: import {res['import']:.2f} s + first fit {res['fit']:.2f} s "
                  f"= {res['import'] + res['fit']:.2f} s (process {wall:.2f} s; CPU "
                  f"{res['cpu_import']:.2f} + {res['cpu_fit']:.2f} s; "
                  f"{len(res['kernels'])} kernels compiled, "
                  f"{res['loaded']} loaded)")
        if args.kernels:
            print("  compile CPU seconds per kernel (cold): with its nested callees, and its own")
            for name, sec in sorted(cold["kernels"].items(), key=lambda kv: -kv[1]):
                print(f"    {sec:7.2f} {cold['own'][name]:7.2f}  {name}")
            print(f"  ({len(cold['kernels'])} kernels, own seconds sum to "
                  f"{sum(cold['own'].values()):.2f})")


if __name__ == "__main__":
    main()
