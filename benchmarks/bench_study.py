"""Estimate (or measure) the wall time of the default study over a folder of datasets.

Two modes:

``--sample`` (default): for every classification dataset, time a few single-threaded fits
of the default grid's cheapest and most expensive groups (one fit of 1000 trees read at
100/200/500/1000 serves 4 configurations; 64 fits cover the 256), extrapolate each
dataset's 64 fits, and schedule them on ``--jobs`` processes (largest first, as the
runner does) to estimate the study's wall time. Takes a few minutes.

``--run``: run the real study (``treeboost study``) on the named datasets with the
default grid and report the measured wall time next to the estimate.

    python benchmarks/bench_study.py ../shared/datasets --jobs 2
    python benchmarks/bench_study.py ../shared/datasets --run --only iris,vowel,sick
"""

from __future__ import annotations

import argparse
import heapq
import os
import tempfile
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

from treeboost.study import run_study  # noqa: E402
from treeboost.study.data import describe, discover  # noqa: E402
from treeboost.study.fitting import FitTask, init_worker, run_fit  # noqa: E402
from treeboost.study.space import DEFAULT_GRID, expand, fit_groups  # noqa: E402

# the corners of the cost: fewest leaves with most subsampling, most leaves with all rows
SAMPLES = [{"learning_rate": 0.1, "max_leaf_nodes": 2, "subsample": 0.6},
           {"learning_rate": 0.1, "max_leaf_nodes": 6, "subsample": 0.8},
           {"learning_rate": 0.1, "max_leaf_nodes": 11, "subsample": 1.0}]


def estimate(specs, jobs: int) -> None:
    init_worker()
    n_fits = len(fit_groups(expand(DEFAULT_GRID)))
    stages = tuple(DEFAULT_GRID["n_estimators"])
    costs = []
    for spec in specs:
        info = describe(spec)
        if info["task"] != "classification":
            continue
        run_fit(FitTask(spec, 1, 0, 0, False, SAMPLES[0], (5,)))  # load, bin, compile
        seconds = []
        for base in SAMPLES:
            start = time.perf_counter()
            run_fit(FitTask(spec, 1, 0, 0, False, base, stages))
            seconds.append(time.perf_counter() - start)
        per_dataset = n_fits * sum(seconds) / len(seconds)
        costs.append((per_dataset, spec.name, info))
        print(f"{spec.name:<28} rows {info['n_rows']:>6} classes {info['n_classes']:>3}  "
              f"fits {' '.join(f'{s:6.2f}' for s in seconds)} s  -> {per_dataset:7.1f} s "
              f"for {n_fits} fits", flush=True)
    costs.sort(reverse=True)
    total = sum(c for c, _, _ in costs)
    # list scheduling of each dataset's fits on `jobs` processes, largest datasets first
    loads = [0.0] * jobs
    for cost, _, _ in costs:
        for _ in range(n_fits):
            heapq.heapreplace(loads, loads[0] + cost / n_fits)
    print(f"\n{len(costs)} classification datasets: {total / 60:.1f} CPU minutes; "
          f"estimated wall time on {jobs} processes: {max(loads) / 60:.1f} min")
    print("largest:", ", ".join(f"{n} {c / 60:.1f} min" for c, n, _ in costs[:6]))


def measure(specs, jobs: int) -> None:
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        run_study([s.source for s in specs], out, jobs=jobs, baselines=[],
                  task="classification", report=False,
                  target=None)
        print(f"measured wall time: {(time.perf_counter() - start) / 60:.2f} min on {jobs} "
              f"processes for {', '.join(s.name for s in specs)}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="+")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", help="comma-separated dataset names")
    parser.add_argument("--run", action="store_true", help="run the real study")
    args = parser.parse_args(argv)
    specs = discover(args.data)
    if args.only:
        names = set(args.only.split(","))
        specs = [s for s in specs if s.name in names]
    (measure if args.run else estimate)(specs, args.jobs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
