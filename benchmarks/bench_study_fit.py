"""Time one study unit per dataset: a 1,000-stage fit read at 100/200/500/1,000 stages.

A study (``treeboost study``) is 64 such fits per dataset (the grid's learning rate x
leaves x subsample; the n_estimators axis is read from one fit), so the total of this
benchmark times 64 is close to a study's CPU time. Each fit runs exactly as in a study
worker (one thread, binned data shared across configurations, test scores read
incrementally).

``--compare-python`` also times every fit with the grower's Python loop and the
booster's Python per-tree steps (``grower._KERNEL_GROWTH = False``: the path taken
before trees were grown and finished in one kernel call) in the same run, and prints
the ratio; the scores must be identical.

Usage::

    python benchmarks/bench_study_fit.py [--datasets ../shared/datasets]
        [--leaves 6] [--subsample 0.8] [--learning-rate 0.1] [--only NAME ...]
        [--compare-python]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from treeboost import grower as grower_module
from treeboost.study import fitting
from treeboost.study.data import discover


def time_fit(spec, base: dict) -> tuple[float, dict]:
    """Seconds of one study unit and its scores per stage (data loaded and binned first,
    as for every fit of a study but a worker's first on the dataset)."""
    fitting._train_set(fitting._fold_data(spec, 1, 0, 0, False), 255, 0)
    task = fitting.FitTask(spec, 1, 0, 0, False, base, (100, 200, 500, 1000))
    start = time.perf_counter()
    result = fitting.run_fit(task)
    return time.perf_counter() - start, result["scores"]


def main() -> None:
    """Run the benchmark and print one line per dataset, slowest first."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default=str(Path(__file__).parents[2] / "shared" /
                                                   "datasets"))
    parser.add_argument("--leaves", type=int, default=6)
    parser.add_argument("--subsample", type=float, default=0.8)
    parser.add_argument("--learning-rate", type=float, default=0.1)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--compare-python", action="store_true")
    args = parser.parse_args()
    if not Path(args.datasets).is_dir():
        parser.error(f"{args.datasets} not found")
    specs = [s for s in discover([args.datasets]) if s.task == "classification"
             and (args.only is None or s.name in args.only)]
    base = {"learning_rate": args.learning_rate, "max_leaf_nodes": args.leaves,
            "subsample": args.subsample}
    fitting.init_worker()  # one thread, as a study worker
    # compile (or load from the cache) every kernel before timing
    for flag in (True, False) if args.compare_python else (True,):
        grower_module._KERNEL_GROWTH = flag
        fitting.run_fit(fitting.FitTask(specs[0], 1, 0, 0, False, base, (5,)))
    rows = []
    for spec in specs:
        grower_module._KERNEL_GROWTH = True
        seconds, scores = time_fit(spec, base)
        python = None
        if args.compare_python:
            grower_module._KERNEL_GROWTH = False
            python, python_scores = time_fit(spec, base)
            if python_scores != scores:
                raise SystemExit(f"{spec.name}: the two paths scored differently")
        rows.append((seconds, python, spec.name, scores[1000]))
    rows.sort(reverse=True)
    header = f"{'dataset':30s} {'seconds':>8s}"
    header += f" {'python':>8s} {'ratio':>6s}" if args.compare_python else ""
    print(f"{header} {'accuracy@1000':>14s}")
    for seconds, python, name, accuracy in rows:
        line = f"{name:30s} {seconds:8.3f}"
        if python is not None:
            line += f" {python:8.3f} {seconds / python:6.2f}"
        print(f"{line} {accuracy:14.4f}")
    total = sum(r[0] for r in rows)
    line = f"{'total (' + str(len(rows)) + ' datasets)':30s} {total:8.3f}"
    if args.compare_python:
        total_python = sum(r[1] for r in rows)
        line += f" {total_python:8.3f} {total / total_python:6.2f}"
    print(line)
    print(f"x 64 fits per dataset in a grid study: ~{64 * total / 60:.0f} CPU minutes")


if __name__ == "__main__":
    main()
