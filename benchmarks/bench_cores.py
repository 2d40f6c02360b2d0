"""How busy each library keeps the cores while it fits: process CPU time over wall time
of warm fits, treeboost next to LightGBM and XGBoost on the peer benchmark's data.

``../shared/bench/peers.py`` reports ``cpu_util`` over all of a library's fits, the
first included; for treeboost the first fit is mostly Numba compiling the kernels on
one thread (~30 s against a ~10 s fit), which pulls its figure down to ~1.3 cores
whatever the fits do. Here every library fits once untimed, then ``--fits`` times
measured, each library in a fresh process with the peers' data (``peers.ensure_dataset``)
and their matched parameters (``peers.make_model``); the libraries alternate over
``--rounds``.

CPU time also counts a thread that spins in the OpenMP runtime waiting for work (LightGBM
and XGBoost spin for a while after every parallel region; treeboost spins less, and its
side-by-side trees wait asleep). ``--threads 1,2`` measures what the second core does
instead: each library fits at both counts in turn, in one process, and the speed-up is
its one-thread wall over its two-thread wall.

    python benchmarks/bench_cores.py --task regression --rows 500000 --features 20
    python benchmarks/bench_cores.py --task multiclass --rows 100000 --threads 1,2
    python benchmarks/bench_cores.py --task binary --rows 1000000 --features 28 --iters 200

``--sources`` compares treeboost's source trees instead (an earlier commit checked out
with ``git worktree add /tmp/old COMMIT`` against today's ``src``), each in processes of
its own with the tree on ``PYTHONPATH`` and a kernel cache of its own, alternated over
the rounds, so that a drift of the machine's speed falls on both alike:

    python benchmarks/bench_cores.py --sources old=/tmp/old/src,new=src --iters 150 \
        --fits 3 --rounds 4
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_PEERS = HERE.parent.parent / "shared" / "bench" / "peers.py"
LIBS = ("lightgbm", "xgboost", "treeboost")


def load_peers(path: Path):
    """The peer benchmark as a module (its data generator and matched parameters)."""
    if not path.is_file():
        sys.exit(f"{Path(sys.argv[0]).name}: no peer benchmark at {path} (--peers)")
    spec = importlib.util.spec_from_file_location("peers", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def child(a) -> None:
    """Fit one library at each thread count once untimed, then ``a.fits`` times in turn.

    Prints, per thread count, the timed fits' walls and CPU times.
    """
    import numpy as np

    peers = load_peers(Path(a.peers))
    folder, _ = peers.ensure_dataset(a, Path(a.cache_dir))
    X = np.load(folder / "X_train.npy")
    y = np.load(folder / "y_train.npy")
    counts = thread_counts(a.threads)
    results = {str(t): {"walls": [], "cpus": []} for t in counts}
    for k in range(1 + a.fits):
        # the thread counts alternate, so that a drift of the machine's speed falls
        # on all of them alike
        for t in (counts if k % 2 == 0 else counts[::-1]):
            spec = {"threads": t, "seed": a.seed, "iters": a.iters, "lr": a.lr,
                    "leaves": a.leaves, "bins": a.bins, "min_leaf": a.min_leaf}
            ctor, params, _ = peers.make_model(a.child, a.task, spec, a.classes)
            model = ctor(**params)
            c0 = os.times()
            t0 = time.perf_counter()
            model.fit(X, y)
            wall = time.perf_counter() - t0
            c1 = os.times()
            if k:  # the first fit compiles (treeboost) or warms caches: untimed
                results[str(t)]["walls"].append(wall)
                results[str(t)]["cpus"].append(c1.user + c1.system - c0.user - c0.system)
            del model
    print(json.dumps({"lib": a.child, "results": results}))


def thread_counts(text: str) -> list[int]:
    """``--threads``: one count or several, comma-separated, in the order given."""
    try:
        counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1 or len(set(counts)) != len(counts):
        sys.exit(f"bench_cores: --threads {text!r}: want distinct counts >= 1, "
                 "comma-separated (e.g. 2 or 1,2)")
    return counts


def source_trees(text: str) -> dict[str, Path]:
    """``--sources``: label=path pairs, comma-separated, each a folder holding ``treeboost``."""
    trees = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        label, _, path = part.partition("=")
        if not label or not path or label in trees:
            sys.exit(f"bench_cores: --sources {text!r}: want distinct label=path pairs")
        if not (Path(path) / "treeboost" / "__init__.py").is_file():
            sys.exit(f"bench_cores: --sources: no treeboost package in {path}")
        trees[label] = Path(path).resolve()
    if len(trees) < 2:
        sys.exit("bench_cores: --sources: want at least two trees to compare")
    return trees


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", choices=["binary", "regression", "multiclass"],
                    default="regression")
    ap.add_argument("--rows", type=int, default=500_000)
    ap.add_argument("--features", type=int, default=20)
    ap.add_argument("--classes", type=int, default=5)
    ap.add_argument("--iters", type=int, default=500)
    ap.add_argument("--leaves", type=int, default=31)
    ap.add_argument("--bins", type=int, default=255)
    ap.add_argument("--min-leaf", type=int, default=20)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--threads", default="2",
                    help="thread count, or several comma-separated (1,2): then each "
                         "library's speed-up over the first count is reported too")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--fits", type=int, default=2, help="timed fits per library and round")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--libs", default=",".join(LIBS))
    ap.add_argument("--peers", default=str(DEFAULT_PEERS), help="path of peers.py")
    ap.add_argument("--cache-dir", default=str(HERE / ".cache"),
                    help="the peers' dataset cache (peers.py --cache-dir)")
    ap.add_argument("--sources", default=None,
                    help="label=path,label=path: treeboost source trees compared (see above); "
                         "replaces --libs")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        child(a)
        return
    sources = source_trees(a.sources) if a.sources else {}
    libs = list(sources) or [lib.strip() for lib in a.libs.split(",") if lib.strip()]
    unknown = [] if sources else sorted(set(libs) - set(LIBS))
    if unknown:
        sys.exit(f"bench_cores: --libs: unknown {', '.join(unknown)} (known: {', '.join(LIBS)})")
    load_peers(Path(a.peers))  # fail here, once, if it is missing
    args = [arg for arg in (argv if argv is not None else sys.argv[1:])]
    counts = thread_counts(a.threads)
    results = {lib: {str(t): {"walls": [], "cpus": []} for t in counts} for lib in libs}
    caches = tempfile.TemporaryDirectory(prefix="bench_cores_")
    for r in range(a.rounds):
        for lib in (libs if r % 2 == 0 else libs[::-1]):
            env = dict(os.environ)
            if sources:  # the tree first on the path, its kernels in a cache of its own
                env["PYTHONPATH"] = os.pathsep.join(
                    [str(sources[lib]), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
                env["NUMBA_CACHE_DIR"] = str(Path(caches.name) / lib)
            child_lib = "treeboost" if sources else lib
            out = subprocess.run([sys.executable, __file__, *args, "--child", child_lib],
                                 capture_output=True, text=True, check=False, env=env)
            if out.returncode != 0:
                sys.exit(f"bench_cores: {lib} failed:\n{out.stderr[-2000:]}")
            line = json.loads(out.stdout.strip().splitlines()[-1])
            for t, res in line["results"].items():
                results[lib][t]["walls"] += res["walls"]
                results[lib][t]["cpus"] += res["cpus"]
    print(f"{a.task} {a.rows:,} x {a.features}, {a.iters} trees; "
          f"{a.fits} warm fits x {a.rounds} rounds per library and thread count")
    print(f"{'library':<10} {'threads':>7} {'fit s (median)':>15} {'cores busy':>11} "
          f"{'speed-up':>9}")
    for lib, by_count in results.items():
        first = statistics.median(by_count[str(counts[0])]["walls"])
        for t in counts:
            res = by_count[str(t)]
            wall = statistics.median(res["walls"])
            busy = sum(res["cpus"]) / sum(res["walls"])
            speed = f"{first / wall:>9.2f}" if len(counts) > 1 else ""
            print(f"{lib:<10} {t:>7} {wall:>15.2f} {busy:>11.2f} {speed}")


if __name__ == "__main__":
    main()
