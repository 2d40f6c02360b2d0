"""What a new user waits for: import plus the first fit, with a cold and a warm kernel cache.

Each measurement runs in a fresh Python process. The cold one points Numba's cache at an
empty directory (``NUMBA_CACHE_DIR``), so every kernel the fit uses is compiled, or loaded
from the kernels shipped with the package where it has any; the warm one runs again with
the same directory, so every kernel is loaded from disk. With ``--kernels`` the cold run
also records Numba's compile events and prints, per kernel, the CPU seconds spent
compiling it (``time.process_time``: compilation runs on one thread, and CPU time is less
sensitive to a busy machine than wall time), with the kernels it calls (nested
compilations) and without them (its own). Import and fit are reported in wall and CPU
seconds; the closing table gives each environment's medians over ``--repeat`` runs.

    python benchmarks/bench_first_fit.py                 # this environment, cold and warm
    python benchmarks/bench_first_fit.py --kernels       # plus the per-kernel table
    python benchmarks/bench_first_fit.py --task multiclass --repeat 3
    python benchmarks/bench_first_fit.py --wheel dist/treeboost-*.whl --repeat 3
    python benchmarks/bench_first_fit.py --python /tmp/fv/bin/python   # another environment
    python benchmarks/bench_first_fit.py --no-shipped   # compile even where kernels are shipped

The environments measured: this one (a development install compiles every kernel: it
ships none), or ``--python``'s; with ``--wheel``, also a fresh virtual environment (made
in a temporary directory, removed afterwards) with that wheel installed, and this
environment's Numba (shipped kernels are used only under the Numba that compiled them),
so a wheel built with shipped kernels (``.ci/wheel_smoke`` shows how) is measured as a
user installing it meets it. Kernels shipped with the package are used unless
``--no-shipped`` (``TREEBOOST_SHIPPED_KERNELS=0``); the per-kernel table then lists only the
kernels that were compiled, and ``loaded`` says how many came from disk.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
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
from treeboost import TreeBoostClassifier, TreeBoostRegressor  # loaded on first use
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


#: Python bytecode of the measured processes: written once, as an installation has it
#: (with PYTHONDONTWRITEBYTECODE set, every process would compile every module's source,
#: about 0.4 s of an import), to a folder of this run's, not next to the sources
PYCACHE = tempfile.mkdtemp(prefix="tb-bench-pycache-")


def child_env(cache_dir: str, shipped: bool, python: str) -> dict:
    """The measured process's environment: its kernel cache, bytecode, shipped kernels;
    PYTHONPATH (a source tree measured in this environment) only for this interpreter."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, PYTHONPYCACHEPREFIX=PYCACHE)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if python != sys.executable:
        env.pop("PYTHONPATH", None)
    if not shipped:
        env["TREEBOOST_SHIPPED_KERNELS"] = "0"
    return env


def run_child(cache_dir: str, rows: int, task: str, kernels: bool, python: str = sys.executable,
              shipped: bool = True) -> dict:
    env = child_env(cache_dir, shipped, python)
    code = (CHILD.replace("ROWS", str(rows))
            .replace("TASK", task))
    out = subprocess.run([python, "-c", code], env=env, check=True, capture_output=True,
                         text=True, cwd=tempfile.gettempdir())  # no checkout on the path
    return json.loads(out.stdout.strip().splitlines()[-1])


def wheel_env(wheel: str, directory: str) -> str:
    """A fresh virtual environment in ``directory`` with ``wheel`` and this Numba; its python."""
    import numba

    subprocess.run([sys.executable, "-m", "venv", directory], check=True)
    python = os.path.join(directory, "bin", "python")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # nothing else installed
    subprocess.run([python, "-m", "pip", "install", "--quiet", wheel,
                    f"numba=={numba.__version__}"], check=True, env=env)
    return python


def measure(name: str, python: str, args, shipped: bool) -> list[dict]:
    """Cold and warm runs of one environment, ``args.repeat`` times; print each."""
    with tempfile.TemporaryDirectory(prefix="tb-numba-cache-") as cache:
        # the bytecode, not timed; no kernel is compiled by an import
        subprocess.run([python, "-c", "import treeboost.sklearn"], check=True,
                       env=child_env(cache, shipped, python), cwd=tempfile.gettempdir())
    rows = []
    for r in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="tb-numba-cache-") as cache:
            t0 = time.perf_counter()
            cold = run_child(cache, args.rows, args.task, args.kernels, python, shipped)
            cold["process"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            warm = run_child(cache, args.rows, args.task, False, python, shipped)
            warm["process"] = time.perf_counter() - t0
        print(f"{name} run {r}: task={args.task} rows={args.rows} treeboost={cold['treeboost']}"
              f"{'' if shipped else ' (shipped kernels off)'}")
        for label, res in (("cold", cold), ("warm", warm)):
            print(f"  {label}: import {res['import']:.2f} s + first fit {res['fit']:.2f} s "
                  f"= {res['import'] + res['fit']:.2f} s (process {res['process']:.2f} s; CPU "
                  f"{res['cpu_import']:.2f} + {res['cpu_fit']:.2f} s; "
                  f"{len(res['kernels'])} kernels compiled, "
                  f"{res['loaded']} loaded)")
        if args.kernels:
            print("  compile CPU seconds per kernel (cold): with its nested callees, and its own")
            for kernel, sec in sorted(cold["kernels"].items(), key=lambda kv: -kv[1]):
                print(f"    {sec:7.2f} {cold['own'][kernel]:7.2f}  {kernel}")
            print(f"  ({len(cold['kernels'])} kernels, own seconds sum to "
                  f"{sum(cold['own'].values()):.2f})")
        rows.append({"cold": cold, "warm": warm})
    return rows


def summary(results: dict) -> None:
    """Each environment's medians: wall and CPU seconds of import + first fit."""
    def med(runs, state, *keys):
        return statistics.median(sum(run[state][k] for k in keys) for run in runs)

    print(f"\nmedians over {len(next(iter(results.values())))} runs: import + first fit, "
          "wall s (CPU s), kernels compiled")
    for name, runs in results.items():
        cells = [f"{med(runs, state, 'import', 'fit'):.2f} "
                 f"({med(runs, state, 'cpu_import', 'cpu_fit'):.2f}), "
                 f"{statistics.median(len(run[state]['kernels']) for run in runs):.0f}"
                 for state in ("cold", "warm")]
        print(f"  {name:<28} cold {cells[0]:<22} warm {cells[1]}")


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
    ap.add_argument("--wheel", help="also measure a fresh virtual environment with this wheel")
    ap.add_argument("--no-shipped", action="store_true",
                    help="ignore compiled kernels shipped with the package")
    args = ap.parse_args(argv)
    shipped = not args.no_shipped
    results = {"this environment": measure("this environment", args.python, args, shipped)}
    if args.wheel:
        with tempfile.TemporaryDirectory(prefix="tb-wheel-venv-") as directory:
            python = wheel_env(args.wheel, directory)
            results["fresh venv + wheel"] = measure("fresh venv + wheel", python, args, shipped)
    summary(results)
    shutil.rmtree(PYCACHE, ignore_errors=True)


if __name__ == "__main__":
    main()
