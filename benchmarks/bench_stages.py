"""Per-stage timings of a treeboost fit (pygbm style), measured from the outside.

The kernels of ``treeboost._kernels.*`` and a few orchestration methods (bin edges,
histogram subtraction, split choice, tree assembly) are wrapped in timing wrappers
by monkeypatching, both in the kernel modules and in every treeboost module that
imported them by name (``treeboost.grower.build_histograms``, ...); nothing in
``src`` changes and everything is restored afterwards. Times are *exclusive*: a
wrapper subtracts the time of the wrapped calls nested inside it, so the stages add
up to the part of the fit they cover, and the rest is reported as "other".

A warm-up fit on a small slice runs first, before any patching, so that JIT
compilation (or loading Numba's cache) is neither timed nor done while globals of
the kernel modules are replaced.

    python benchmarks/bench_stages.py                       # 500,000 x 28 binary, 20 trees
    python benchmarks/bench_stages.py --task multiclass --rows 200000 --threads 1
"""

from __future__ import annotations

import argparse
import functools
import importlib
import pkgutil
import re
import sys
import time
from collections import defaultdict
from contextlib import contextmanager

import numpy as np

# kernel name -> stage; the first matching pattern wins, unknown kernels get their own row
KERNEL_STAGES = [
    (r"^map_to_bins", "binning: transform"),
    (r"^grad_hess_", "gradients and hessians"),
    (r"^build_histograms_root", "histograms: root"),
    (r"^build_histograms", "histograms: nodes (built)"),
    (r"^find_best_splits", "split finding"),
    (r"^partition_rows", "partition"),
    (r"^add_leaf_values", "raw-score update"),
    (r"^predict_binned", "eval sets / out-of-bag update"),
    (r"^predict_raw", "prediction"),
]
# (module, class, method) -> stage: Python-side work of a stage, wrapped when present
METHOD_STAGES = [
    ("treeboost.binning", "BinMapper", "fit", "binning: fit (bin edges)"),
    ("treeboost.grower", "TreeGrower", "_new_hist", "histograms: subtraction + buffers"),
    ("treeboost.grower", "TreeGrower", "_children_histograms",
     "histograms: subtraction + buffers"),
    ("treeboost.grower", "TreeGrower", "_build", "histograms: nodes (built)"),
    ("treeboost.grower", "TreeGrower", "_find_split", "split finding"),
    ("treeboost.grower", "TreeGrower", "_split", "partition"),
    ("treeboost.booster", "Booster", "_make_tree", "leaf values + tree assembly"),
    ("treeboost.grower", "TreeGrower", "grow", "grower: heap and bookkeeping"),
    ("treeboost.grower", "TreeGrower", "_assemble", "grower: heap and bookkeeping"),
    ("treeboost.booster", "Booster", "fit", "stage loop: rest"),
]
STAGE_ORDER = [
    "binning: fit (bin edges)", "binning: transform", "gradients and hessians",
    "histograms: root", "histograms: nodes (built)", "histograms: subtraction + buffers",
    "split finding", "partition", "leaf values + tree assembly", "raw-score update",
    "eval sets / out-of-bag update", "grower: heap and bookkeeping", "stage loop: rest",
]


class StageTimer:
    """Exclusive wall time and call counts per stage, from nested wrappers."""

    def __init__(self):
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._nested: list[float] = []

    def reset(self) -> None:
        """Forget everything measured so far."""
        self.seconds.clear()
        self.calls.clear()

    def wrap(self, func, stage: str, count: bool):
        """``func`` timed into ``stage``; ``count`` says whether calls are counted."""
        @functools.wraps(func)
        def timed(*args, **kwargs):
            self._nested.append(0.0)
            t0 = time.perf_counter()
            try:
                return func(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - t0
                inner = self._nested.pop()
                self.seconds[stage] += elapsed - inner
                if self._nested:
                    self._nested[-1] += elapsed
                if count:
                    self.calls[stage] += 1
        return timed


def _treeboost_modules():
    import treeboost

    for info in pkgutil.walk_packages(treeboost.__path__, "treeboost."):
        if ".cli" in info.name or info.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(info.name)
        except ImportError:  # optional parts (plotting, dask) may be missing
            continue
    return {name: mod for name, mod in sys.modules.items()
            if name == "treeboost" or name.startswith("treeboost.")}


def _kernel_stage(name: str) -> str:
    for pattern, stage in KERNEL_STAGES:
        if re.search(pattern, name):
            return stage
    return f"kernel {name}"


def _is_called_from_python(obj) -> bool:
    """Numba dispatchers that Python calls (inline helpers live only inside kernels)."""
    options = getattr(obj, "targetoptions", None)
    return hasattr(obj, "py_func") and options is not None and options.get("inline") != "always"


@contextmanager
def instrumented(timer: StageTimer):
    """Replace kernels and orchestration methods by timed wrappers; restore on exit."""
    modules = _treeboost_modules()
    patched = []  # (owner, attribute, original)
    kernels = {}
    for name, mod in modules.items():
        if not name.startswith("treeboost._kernels."):
            continue
        for attr, obj in vars(mod).items():
            if not attr.startswith("_") and _is_called_from_python(obj):
                kernels[id(obj)] = timer.wrap(obj, _kernel_stage(attr), count=True)
    for mod in modules.values():  # the kernel modules and every module that imported one
        for attr, obj in list(vars(mod).items()):
            if id(obj) in kernels:
                patched.append((mod, attr, obj))
                setattr(mod, attr, kernels[id(obj)])
    for mod_name, cls_name, method, stage in METHOD_STAGES:
        cls = getattr(modules.get(mod_name), cls_name, None)
        original = cls.__dict__.get(method) if cls is not None else None
        if isinstance(original, (staticmethod, classmethod)):
            patched.append((cls, method, original))
            wrapped = timer.wrap(original.__func__, stage, count=False)
            setattr(cls, method, type(original)(wrapped))
        elif callable(original):
            patched.append((cls, method, original))
            setattr(cls, method, timer.wrap(original, stage, count=False))
    try:
        yield
    finally:
        for owner, attr, original in reversed(patched):
            setattr(owner, attr, original)


# ---- run ------------------------------------------------------------------------------
def parse_args(argv=None) -> argparse.Namespace:
    """Command-line options."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", choices=("binary", "regression", "multiclass"), default="binary")
    p.add_argument("--classes", type=int, default=5, help="classes of the multiclass task")
    p.add_argument("--rows", type=int, default=500_000, help="training rows")
    p.add_argument("--test-rows", type=int, default=100_000, help="rows predicted")
    p.add_argument("--features", type=int, default=28)
    p.add_argument("--iters", type=int, default=20, help="boosting rounds")
    p.add_argument("--leaves", type=int, default=31)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--bins", type=int, default=255)
    p.add_argument("--min-leaf", type=int, default=20)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--warmup-rows", type=int, default=50_000)
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def table(timer: StageTimer, total: float, stages: list[str], title: str) -> str:
    """Markdown table of the stages' seconds, calls and share of ``total``."""
    lines = [f"| {title} | seconds | calls | share |", "|---|---:|---:|---:|"]
    covered = 0.0
    for stage in stages:
        s = timer.seconds.get(stage, 0.0)
        covered += s
        calls = timer.calls.get(stage, 0)
        lines.append(f"| {stage} | {s:.3f} | {calls if calls else '-'} | "
                     f"{100 * s / total:.1f} % |")
    rest = total - covered
    lines.append(f"| other (validation, set-up, Python) | {rest:.3f} | - | "
                 f"{100 * rest / total:.1f} % |")
    lines.append(f"| **total** | **{total:.3f}** | | 100 % |")
    return "\n".join(lines)


def main(argv=None) -> None:
    """Warm up, fit and predict once under the timers, print the tables."""
    from bench_end_to_end import compiled_signatures, make_data, make_model, newly_compiled

    args = parse_args(argv)
    X, y, X_test, _ = make_data(args)

    n = min(args.warmup_rows, X.shape[0])
    t0 = time.perf_counter()
    warm = make_model("treeboost", args).set_params(n_estimators=2).fit(X[:n], y[:n])
    warm.predict(X_test[:1000])
    compile_s = time.perf_counter() - t0

    timer = StageTimer()
    model = make_model("treeboost", args)
    before = compiled_signatures()
    with instrumented(timer):
        t0 = time.perf_counter()
        model.fit(X, y)
        fit_s = time.perf_counter() - t0
        fit_stages = [s for s in STAGE_ORDER if s in timer.seconds]
        fit_stages += sorted(set(timer.seconds) - set(STAGE_ORDER) - {"prediction"})
        fit_table = table(timer, fit_s, fit_stages, "fit stage")
        timer.reset()
        t0 = time.perf_counter()
        model.predict(X_test)
        predict_s = time.perf_counter() - t0
        predict_table = table(timer, predict_s, ["prediction"], "predict stage")

    print(f"task={args.task} rows={args.rows:,} features={args.features} iters={args.iters} "
          f"leaves={args.leaves} bins={args.bins} min_leaf={args.min_leaf} "
          f"threads={args.threads}; trees grown: {model.n_iter_} stages")
    print(f"warm-up (JIT compile or cache load, 2 trees on {n:,} rows): {compile_s:.2f} s\n")
    print(fit_table)
    print(f"\npredict {X_test.shape[0]:,} rows:\n")
    print(predict_table)
    late = newly_compiled(before)
    if late:
        print(f"\nwarning: {late} compiled (or loaded from cache) inside the timed run; "
              f"their stages include that time: raise --warmup-rows")
    n_leaves = [t.n_leaves for stage in model.booster_.trees for t in stage]
    print(f"\nleaves per tree: mean {np.mean(n_leaves):.1f}")


if __name__ == "__main__":
    main()
