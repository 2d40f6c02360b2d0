"""Time one study unit per dataset: a 1,000-stage fit read at 100/200/500/1,000 stages.

A study (``treeboost study``) is 64 such fits per dataset (the grid's learning rate x
leaves x subsample; the n_estimators axis is read from one fit), so the total of this
benchmark times 64 is close to a study's CPU time. Each fit runs exactly as in a study
worker (one thread, binned data shared across configurations, test scores read
incrementally).

Usage::

    python benchmarks/bench_study_fit.py [--datasets ../shared/datasets]
        [--leaves 6] [--subsample 0.8] [--learning-rate 0.1] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

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
    args = parser.parse_args()
    if not Path(args.datasets).is_dir():
        parser.error(f"{args.datasets} not found")
    specs = [s for s in discover([args.datasets]) if s.task == "classification"
             and (args.only is None or s.name in args.only)]
    base = {"learning_rate": args.learning_rate, "max_leaf_nodes": args.leaves,
            "subsample": args.subsample}
    fitting.init_worker()  # one thread, as a study worker
    # compile (or load from the cache) every kernel before timing
    fitting.run_fit(fitting.FitTask(specs[0], 1, 0, 0, False, base, (5,)))
    rows = []
    for spec in specs:
        seconds, scores = time_fit(spec, base)
        rows.append((seconds, spec.name, scores[1000]))
    rows.sort(reverse=True)
    print(f"{'dataset':30s} {'seconds':>8s} {'accuracy@1000':>14s}")
    for seconds, name, accuracy in rows:
        print(f"{name:30s} {seconds:8.3f} {accuracy:14.4f}")
    total = sum(r[0] for r in rows)
    print(f"{'total (' + str(len(rows)) + ' datasets)':30s} {total:8.3f}")
    print(f"x 64 fits per dataset in a grid study: ~{64 * total / 60:.0f} CPU minutes")


if __name__ == "__main__":
    main()
