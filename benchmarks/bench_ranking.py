"""Learning to rank on synthetic queries: treeboost lambdarank against LightGBM and XGBoost.

Measured, per library: fit seconds (and the ratio to the fastest library), predict
seconds on the test queries, the test NDCG@1, @5 and @10, and the peak resident memory
of the fit. Every library trains on the same data with matched parameters, in this one
process, one library after the other.

Data (deterministic from ``--seed``): ``--queries`` queries of ``--docs`` documents,
each a row of ``--features`` standard normal features (``--dtype``, float32 by default).
A document's utility is a known nonlinear function of its first six features plus a
query effect and noise::

    u = x0 + sin(2 x1) + 0.7 x2 x3 + 0.5 x4**2 - 0.5 |x5| + b_q + e
    b_q ~ N(0, 0.5**2) per query,  e ~ N(0, --noise**2) per document (default 1.0)

and its relevance grade 0..4 is ``u`` binned at the 50th, 75th, 90th and 97th
percentiles of all documents' ``u`` (fixed thresholds: about 50% of the documents are
grade 0, 25% grade 1, 15% grade 2, 7% grade 3, 3% grade 4; the query effect makes
queries differ in how many relevant documents they hold; the header prints the grade
shares and how many distinct grades the queries have). The other features are noise.
The first 80% of the queries train (``--test-fraction``), the rest test.

Matched parameters: ``--trees`` rounds of at most ``--leaves`` leaves grown leaf-wise,
learning rate ``--lr``, ``--min-leaf`` rows and 1e-3 hessian per leaf, no L2, ``--bins``
bins, no subsampling, ``--threads`` threads, pairs down to rank 30:

- treeboost: ``train({"loss": "lambdarank", ...}, Dataset(X, y, group=sizes))``
  (LightGBM's lambdarank: gains 2**l - 1, truncation level 30, normalised lambdas);
- LightGBM: ``lightgbm.train`` with ``objective="lambdarank"``, ``num_leaves``,
  ``min_child_samples``, ``lambdarank_truncation_level=30`` (its default);
- XGBoost: ``xgboost.train`` with ``objective="rank:ndcg"``, ``tree_method="hist"``,
  ``grow_policy="lossguide"``, ``max_leaves``, ``max_depth=0``,
  ``lambdarank_pair_method="topk"`` with 30 pairs a document (the top-30 pairs),
  ``reg_lambda=0``, ``min_child_weight=1e-3``; XGBoost has no minimum of rows per
  leaf, so its leaves may hold fewer than ``--min-leaf`` rows.

Fit time runs from the NumPy arrays to the fitted model: it includes building each
library's data object and binning the features (treeboost's ``Dataset``, LightGBM's
``Dataset``, XGBoost's ``DMatrix`` and its quantile sketch). Predict time is raw scores
on the test rows (treeboost ``Booster.predict_raw``, LightGBM ``predict(raw_score=True)``,
XGBoost ``inplace_predict(predict_type="margin")``). Each library is first warmed up by
a small fit and predict on the first ``--warmup-queries`` training queries, not timed,
so that Numba's compilation (or loading of its on-disk cache) and first-call costs of
the peers are not in the times; a warning is printed if treeboost still compiled a
kernel inside a timed fit. Then each library fits ``--rounds`` times; the table shows
the median fit and predict times over the rounds (all times are in the ``--json``
output), and checks that every round gave the same test scores. NDCGs are computed for
all libraries by ``treeboost.metrics.ndcg_at_k`` (LightGBM's definition), so they are
comparable; the table also shows those of random scores (the mean of 10 draws, the
floor) and of the noise-free utility ``u - b_q - e`` (the order by expected gain: about
the best any model can do on this data). Peak memory is the process's resident set
sampled every 10 ms during a fit, minus the resident set just before it (the data is
already resident), the largest over the rounds; it needs psutil. Memory an earlier
library freed and the allocator kept lowers the figures of the later ones: for clean
figures run one library a process (``--libs xgboost``).

Compare ratios from one run, never absolute times across runs. On a loaded machine the
thread teams of all three libraries slow down a lot (see bench_end_to_end.py): the
``load`` column is the 1-minute load average after the library's rounds.

Run it (the default size, 10,000 queries x 50 documents x 100 features, 500 trees)::

    python benchmarks/bench_ranking.py --json ranking.json

or quicker, or for some libraries only::

    python benchmarks/bench_ranking.py --queries 300 --trees 50 --rounds 1
    python benchmarks/bench_ranking.py --libs treeboost,lightgbm --threads 1
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import threading
import time
from contextlib import contextmanager

import numpy as np

# the kernel census of the end-to-end benchmark (benchmarks/ is on sys.path when run)
from bench_end_to_end import compiled_signatures, newly_compiled

LIBS = ("treeboost", "lightgbm", "xgboost")
NDCG_AT = (1, 5, 10)
GRADE_QUANTILES = (0.50, 0.75, 0.90, 0.97)  # thresholds of grades 1, 2, 3, 4
TRUNCATION = 30  # pairs with a document down to this rank count, in all three libraries


def parse_args(argv=None) -> argparse.Namespace:
    """Command-line options."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--queries", type=int, default=10_000, help="queries, train and test")
    p.add_argument("--docs", type=int, default=50, help="documents a query")
    p.add_argument("--features", type=int, default=100, help="features (at least 6)")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--noise", type=float, default=1.0, help="sd of the documents' noise")
    p.add_argument("--test-fraction", type=float, default=0.2, help="share of test queries")
    p.add_argument("--trees", type=int, default=500, help="boosting rounds")
    p.add_argument("--leaves", type=int, default=31)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--min-leaf", type=int, default=20, help="minimum rows per leaf")
    p.add_argument("--bins", type=int, default=255)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--libs", default=",".join(LIBS),
                   help=f"comma-separated subset of {','.join(LIBS)}")
    p.add_argument("--rounds", type=int, default=3,
                   help="timed fits a library (the table shows the median)")
    p.add_argument("--warmup-queries", type=int, default=1_000,
                   help="training queries of the untimed warm-up fit (enough rows for the "
                        "kernels that only run on large nodes to compile too)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = p.parse_args(argv)
    args.libs = [lib.strip() for lib in args.libs.split(",") if lib.strip()]
    unknown = set(args.libs) - set(LIBS)
    if unknown:
        p.error(f"unknown libraries {sorted(unknown)}; choose from {LIBS}")
    if args.features < 6:
        p.error("--features must be at least 6 (the utility reads x0..x5)")
    if args.docs < 2 or args.queries < 2 or args.rounds < 1:
        p.error("--docs and --queries must be at least 2, --rounds at least 1")
    if not 0 < args.test_fraction < 1:
        p.error("--test-fraction must be in (0, 1)")
    return args


# ---- data -------------------------------------------------------------------------
def make_data(args) -> dict:
    """Train and test queries (rows of a query contiguous), graded 0..4, from one seed."""
    rng = np.random.default_rng(args.seed)
    n_q, n_d = args.queries, args.docs
    n = n_q * n_d
    X = rng.standard_normal((n, args.features), dtype=np.float32)
    if args.dtype == "float64":
        X = X.astype(np.float64)
    x = [X[:, j].astype(np.float64) for j in range(6)]
    utility = (x[0] + np.sin(2 * x[1]) + 0.7 * x[2] * x[3] + 0.5 * x[4] ** 2
               - 0.5 * np.abs(x[5]))
    query_effect = np.repeat(rng.normal(0.0, 0.5, size=n_q), n_d)
    observed = utility + query_effect + rng.normal(0.0, args.noise, size=n)
    y = np.digitize(observed, np.quantile(observed, GRADE_QUANTILES)).astype(np.float64)
    n_test = max(1, round(n_q * args.test_fraction))
    cut = (n_q - n_test) * n_d
    return {"X_train": X[:cut], "y_train": y[:cut], "sizes_train": np.full(n_q - n_test, n_d),
            "X_test": np.ascontiguousarray(X[cut:]), "y_test": y[cut:],
            "sizes_test": np.full(n_test, n_d), "utility_test": utility[cut:]}


def offsets(sizes) -> np.ndarray:
    """Query boundaries from query sizes."""
    return np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)


def describe(data, args) -> str:
    """Shape, grade shares and distinct grades a query, of all queries."""
    y = np.concatenate([data["y_train"], data["y_test"]]).reshape(args.queries, args.docs)
    shares = ", ".join(f"{g}: {np.mean(y == g):.1%}" for g in range(5))
    distinct = np.array([np.unique(row).size for row in y])
    return (f"data: {args.queries:,} queries x {args.docs} documents x {args.features} "
            f"features ({args.dtype}), {len(data['sizes_train']):,} train / "
            f"{len(data['sizes_test']):,} test queries; grades {shares}; distinct grades a "
            f"query: mean {distinct.mean():.2f}, >= 3 in {np.mean(distinct >= 3):.1%} of the "
            f"queries, 1 in {np.mean(distinct == 1):.1%}")


def ndcgs(y, score, group_offsets) -> dict[str, float]:
    """NDCG@k for the benchmark's cut-offs, by treeboost's (LightGBM's) definition."""
    from treeboost.metrics import ndcg_at_k

    return {f"ndcg@{k}": ndcg_at_k(y, score, group_offsets, k) for k in NDCG_AT}


def baselines(data, seed: int) -> dict[str, dict[str, float]]:
    """Test NDCGs of random scores (mean of 10 draws) and of the noise-free utility."""
    y, off = data["y_test"], offsets(data["sizes_test"])
    rng = np.random.default_rng([seed, 1])
    draws = [ndcgs(y, rng.random(y.size), off) for _ in range(10)]
    random = {key: float(np.mean([d[key] for d in draws])) for key in draws[0]}
    return {"random": random, "utility": ndcgs(y, data["utility_test"], off)}


# ---- libraries --------------------------------------------------------------------
@contextmanager
def numba_threads(n: int):
    """Numba's thread count for the body: ``train`` and ``predict_raw`` run on
    Numba's pool (``train`` validates ``n_jobs`` but does not apply it)."""
    import numba

    previous = numba.get_num_threads()
    numba.set_num_threads(max(1, min(n, numba.config.NUMBA_NUM_THREADS)))
    try:
        yield
    finally:
        numba.set_num_threads(previous)


def fit_treeboost(args, X, y, sizes, n_trees):
    """treeboost lambdarank through ``train`` (to become ``TreeBoostRanker``)."""
    import treeboost

    params = {"loss": "lambdarank", "n_estimators": n_trees, "learning_rate": args.lr,
              "max_leaf_nodes": args.leaves, "min_samples_leaf": args.min_leaf,
              "min_child_weight": 1e-3, "reg_lambda": 0.0, "n_jobs": args.threads,
              "random_state": args.seed}
    with numba_threads(args.threads):
        return treeboost.train(params, treeboost.Dataset(X, y, group=sizes,
                                                         max_bins=args.bins))


def predict_treeboost(args, model, X):
    with numba_threads(args.threads):
        return np.asarray(model.predict_raw(X)).ravel()


def fit_lightgbm(args, X, y, sizes, n_trees):
    import lightgbm as lgb

    params = {"objective": "lambdarank", "num_leaves": args.leaves, "max_depth": -1,
              "learning_rate": args.lr, "min_child_samples": args.min_leaf,
              "min_child_weight": 1e-3, "reg_lambda": 0.0, "reg_alpha": 0.0,
              "max_bin": args.bins, "lambdarank_truncation_level": TRUNCATION,
              "num_threads": args.threads, "seed": args.seed, "verbose": -1}
    return lgb.train(params, lgb.Dataset(X, y, group=sizes, params={"max_bin": args.bins}),
                     num_boost_round=n_trees)


def predict_lightgbm(args, model, X):
    return model.predict(X, raw_score=True, num_threads=args.threads)


def fit_xgboost(args, X, y, sizes, n_trees):
    import xgboost as xgb

    params = {"objective": "rank:ndcg", "tree_method": "hist", "grow_policy": "lossguide",
              "max_leaves": args.leaves, "max_depth": 0, "eta": args.lr,
              "min_child_weight": 1e-3, "reg_lambda": 0.0, "reg_alpha": 0.0,
              "max_bin": args.bins, "lambdarank_pair_method": "topk",
              "lambdarank_num_pair_per_sample": TRUNCATION, "nthread": args.threads,
              "seed": args.seed, "verbosity": 0}
    qid = np.repeat(np.arange(len(sizes)), sizes)
    return xgb.train(params, xgb.DMatrix(X, label=y, qid=qid, nthread=args.threads),
                     num_boost_round=n_trees)


def predict_xgboost(args, model, X):
    return model.inplace_predict(X, predict_type="margin")


FIT = {"treeboost": fit_treeboost, "lightgbm": fit_lightgbm, "xgboost": fit_xgboost}
PREDICT = {"treeboost": predict_treeboost, "lightgbm": predict_lightgbm,
           "xgboost": predict_xgboost}


def version(lib: str) -> str:
    """The installed version of ``lib`` (ImportError if it is not installed)."""
    import importlib

    return importlib.import_module(lib).__version__


class PeakRSS:
    """Peak resident set size of this process while the context is open (psutil)."""

    def __init__(self):
        try:
            import psutil
        except ImportError:
            self.process = None
        else:
            self.process = psutil.Process()
        self.start = self.peak = 0

    def __enter__(self):
        if self.process is None:
            return self
        self.start = self.peak = self.process.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, self.process.memory_info().rss)

    def __exit__(self, *exc):
        if self.process is None:
            return
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.process.memory_info().rss)

    @property
    def extra_mib(self) -> float | None:
        """Peak above the start, MiB; None without psutil."""
        return None if self.process is None else (self.peak - self.start) / 2**20


def warm_up(lib: str, args, data) -> float:
    """One small untimed fit and predict, so the timed ones do not compile or load."""
    n_q = min(args.warmup_queries, len(data["sizes_train"]))
    rows = n_q * args.docs
    t0 = time.perf_counter()
    model = FIT[lib](args, data["X_train"][:rows], data["y_train"][:rows],
                     data["sizes_train"][:n_q], min(args.trees, 5))
    PREDICT[lib](args, model, data["X_test"][:1000])
    return time.perf_counter() - t0


def run_lib(lib: str, args, data) -> dict:
    """Warm-up, then ``--rounds`` timed fits and predicts; median times, test NDCGs."""
    result = {"lib": lib, "version": version(lib), "warmup_s": warm_up(lib, args, data)}
    before = compiled_signatures() if lib == "treeboost" else {}
    fit_s, predict_s, mem, first, same = [], [], [], None, True
    for _ in range(args.rounds):
        model = None
        gc.collect()
        with PeakRSS() as rss:
            t0 = time.perf_counter()
            model = FIT[lib](args, data["X_train"], data["y_train"], data["sizes_train"],
                             args.trees)
            fit_s.append(time.perf_counter() - t0)
        mem.append(rss.extra_mib)
        t0 = time.perf_counter()
        score = np.asarray(PREDICT[lib](args, model, data["X_test"]), dtype=np.float64)
        predict_s.append(time.perf_counter() - t0)
        if first is None:
            first = score
        same = same and np.array_equal(first, score)
    if lib == "treeboost":
        compiled = newly_compiled(before)
        if compiled:
            print(f"# warning: treeboost compiled {compiled} inside a timed fit; raise "
                  f"--warmup-queries", flush=True)
    result.update(fit_s=statistics.median(fit_s), predict_s=statistics.median(predict_s),
                  fit_s_all=fit_s, predict_s_all=predict_s,
                  peak_mib=None if mem[0] is None else max(mem), deterministic=bool(same),
                  load=os.getloadavg()[0],
                  **ndcgs(data["y_test"], first, offsets(data["sizes_test"])))
    return result


# ---- report -----------------------------------------------------------------------
def markdown(results: list[dict], args, base: dict) -> str:
    """The results as a Markdown table, fit and predict times as ratios to the fastest."""
    fastest_fit = min(r["fit_s"] for r in results)
    fastest_predict = min(r["predict_s"] for r in results)
    keys = [f"ndcg@{k}" for k in NDCG_AT]
    lines = [
        f"trees={args.trees} leaves={args.leaves} lr={args.lr} min_leaf={args.min_leaf} "
        f"bins={args.bins} threads={args.threads} rounds={args.rounds} (median times) "
        f"seed={args.seed}",
        "",
        "| library | version | fit s | fit / fastest | predict s | predict / fastest | "
        + " | ".join(f"NDCG@{k}" for k in NDCG_AT) + " | peak MiB | same every round | load |",
        "|---|---|---:|---:|---:|---:|" + "---:|" * len(keys) + "---:|---|---:|",
    ]
    for r in results:
        peak = "-" if r["peak_mib"] is None else f"{r['peak_mib']:.0f}"
        lines.append(
            f"| {r['lib']} | {r['version']} | {r['fit_s']:.2f} | {r['fit_s'] / fastest_fit:.2f} "
            f"| {r['predict_s']:.3f} | {r['predict_s'] / fastest_predict:.2f} | "
            + " | ".join(f"{r[k]:.4f}" for k in keys)
            + f" | {peak} | {'yes' if r['deterministic'] else 'NO'} | {r['load']:.1f} |")
    for name, label in (("random", "random scores (mean of 10 draws)"),
                        ("utility", "noise-free utility")):
        lines.append(f"| {label} | | | | | | "
                     + " | ".join(f"{base[name][k]:.4f}" for k in keys) + " | | | |")
    lines += ["", "warm-up (not timed): " + ", ".join(
        f"{r['lib']} {r['warmup_s']:.2f} s" for r in results)
        + f"; load: 1-minute load average after the library's rounds, on {os.cpu_count()} "
          "cores (well above --threads: other processes shared the cores)"]
    return "\n".join(lines)


def main(argv=None) -> int:
    """Run the benchmark; print the table (and write ``--json``)."""
    args = parse_args(argv)
    t0 = time.perf_counter()
    data = make_data(args)
    print(describe(data, args) + f" (built in {time.perf_counter() - t0:.1f} s)", flush=True)
    base = baselines(data, args.seed)
    results = []
    for lib in args.libs:
        try:
            version(lib)
        except ImportError as exc:
            print(f"# {lib}: skipped, not installed ({exc})", flush=True)
            continue
        results.append(run_lib(lib, args, data))
        r = results[-1]
        print(f"# {lib}: fit {r['fit_s']:.2f} s, NDCG@10 {r['ndcg@10']:.4f}", flush=True)
    if not results:
        print("no library ran", file=sys.stderr)
        return 1
    print(markdown(results, args, base))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"args": vars(args), "baselines": base, "results": results}, fh,
                      indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
