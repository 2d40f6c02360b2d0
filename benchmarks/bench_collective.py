"""Time of ``Collective.allreduce_sum`` between processes on this machine.

One node histogram of data-parallel training is a float64 array of shape
(n_features, 256 bins, 3); every rank sums its own with the others' and gets the
same bits. Rank 0 is this process, the other ranks are spawned processes; they
talk over TCP on the loopback interface (no network: this is the protocol's and
the kernel's cost, the floor under a real cluster's). For each message the ranks
warm up, meet at a barrier, then run ``--repeat`` allreduces back to back, each
timed on its own; the table gives the median and 90th percentile on rank 0, the
median of the slowest rank, and, for scale, what rank 0's additions alone take
(``world_size - 1`` in-place ``np.add``). The ``barrier`` row is an empty round:
the fixed cost of one operation.

    python benchmarks/bench_collective.py --ranks 2 4 --repeat 2000
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import time

import numpy as np

from treeboost.collective import Collective

MESSAGES = {"barrier": None, "hist 28 features": (28, 256, 3),
            "hist 100 features": (100, 256, 3)}


def time_rank(group, repeat, warmup):
    """Per message: this rank's times of ``repeat`` operations, in microseconds."""
    out = {}
    for name, shape in MESSAGES.items():
        if shape is None:
            def op():
                group.barrier()
        else:
            hist = np.random.default_rng(group.rank).normal(size=shape)
            work = np.empty_like(hist)

            def op(hist=hist, work=work):
                group.allreduce_sum(work)
        for _ in range(warmup):
            if shape is not None:
                work[...] = hist
            op()
        group.barrier()
        times = []
        for _ in range(repeat):
            if shape is not None:
                work[...] = hist  # the sum overwrites it; refill outside the timing
            start = time.perf_counter_ns()
            op()
            times.append((time.perf_counter_ns() - start) / 1e3)
        out[name] = times
    return out


def summary(times):
    return {name: (statistics.median(t), float(np.percentile(t, 90)))
            for name, t in times.items()}


def other_rank(address, token, rank, world_size, repeat, warmup):
    with Collective.join(address, rank, world_size, token=token, timeout=60.0) as group:
        group.allgather(summary(time_rank(group, repeat, warmup)))


def add_time(shape, n_adds, repeat=200):
    """Median microseconds of rank 0's ``n_adds`` in-place additions."""
    a = np.random.default_rng(0).normal(size=shape)
    b = a.copy()
    times = []
    for _ in range(repeat):
        start = time.perf_counter_ns()
        for _ in range(n_adds):
            np.add(a, b, out=a)
        times.append((time.perf_counter_ns() - start) / 1e3)
    return statistics.median(times)


def run(world_size, repeat, warmup):
    ctx = multiprocessing.get_context("spawn")
    with Collective.host(world_size, timeout=60.0) as group:
        procs = [ctx.Process(target=other_rank, args=(group.address, group.token, r,
                                                      world_size, repeat, warmup))
                 for r in range(1, world_size)]
        for p in procs:
            p.start()
        mine = summary(time_rank(group, repeat, warmup))
        everyone = group.allgather(mine)
    for p in procs:
        p.join()
    rows = []
    for name, shape in MESSAGES.items():
        nbytes = 0 if shape is None else int(np.prod(shape)) * 8
        median, p90 = mine[name]
        slowest = max(s[name][0] for s in everyone)
        adds = 0.0 if shape is None else add_time(shape, world_size - 1)
        rows.append((world_size, name, nbytes, median, p90, slowest, adds))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--repeat", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=100)
    args = parser.parse_args()
    print(f"{'ranks':>5}  {'message':<18} {'bytes':>9}  {'median us':>9}  {'p90 us':>8}  "
          f"{'slowest rank us':>15}  {'rank-0 adds us':>14}")
    for world_size in args.ranks:
        for row in run(world_size, args.repeat, args.warmup):
            ranks, name, nbytes, median, p90, slowest, adds = row
            print(f"{ranks:>5}  {name:<18} {nbytes:>9,}  {median:>9.1f}  {p90:>8.1f}  "
                  f"{slowest:>15.1f}  {adds:>14.1f}", flush=True)


if __name__ == "__main__":
    main()
