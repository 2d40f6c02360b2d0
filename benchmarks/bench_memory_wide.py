"""Peak memory of a fit on wide data (issue 33), against the bytes of the input.

Two cases, each fitted in a fresh Python process:

* ``sparse``: a SciPy CSR matrix of 200 rows x 2**20 columns holding 4,000 random
  values at random places (hashed features; nearly every column empty);
* ``dense``: a float64 array of 30 rows x 20,000 columns (4.8 MB).

What is reported is the peak resident set of the fit minus a warmed-up baseline:
the child imports treeboost and first fits the same estimator on tiny data of the
same kind (sparse or dense), so that the kernels are compiled or loaded from the
cache before the baseline is taken; compile memory is not the fit's. The baseline
is the resident set after that warm-up; the peak is the kernel's high-water mark
(``VmHWM`` of ``/proc/self/status``), reset to the current resident set just
before the data is built (``/proc/self/clear_refs``), or, where the reset is not
allowed, the resident set sampled every 2 ms. The data are built after the
baseline, so the peak counts them: the issue's budget, 3x the input's bytes plus
300 MB, includes the input itself.

    python benchmarks/bench_memory_wide.py                       # both cases, regressor
    python benchmarks/bench_memory_wide.py --estimator classifier --n-estimators 10
    python benchmarks/bench_memory_wide.py --case dense --repeat 3
    python benchmarks/bench_memory_wide.py --min-samples-leaf 2   # trees that split
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

#: name: (rows, columns, stored values (None: dense float64))
CASES = {"sparse": (200, 2**20, 4_000), "dense": (30, 20_000, None)}
#: the issue's budget: the peak above the baseline at most 3x the input plus this
FIXED_BUDGET = 300 * 10**6

CHILD = r"""
import json, sys, threading, time
import numpy as np
import scipy.sparse as sp

n_rows, n_features, n_stored, estimator, n_estimators, min_samples_leaf, seed = ARGS
from treeboost import TreeBoostClassifier, TreeBoostRegressor

cls = TreeBoostClassifier if estimator == "classifier" else TreeBoostRegressor


def make(n_rows, n_features, n_stored, rng):
    if n_stored is None:
        return rng.normal(size=(n_rows, n_features))
    flat = rng.choice(n_rows * n_features, n_stored, replace=False)
    return sp.csr_matrix((rng.normal(size=n_stored), (flat // n_features, flat % n_features)),
                         shape=(n_rows, n_features))


def target(X, rng):
    # a target the stored values decide, so that the trees do split
    score = np.asarray(X.sum(axis=1)).ravel() + 0.1 * rng.normal(size=X.shape[0])
    return (score > np.median(score)).astype(np.int64) if estimator == "classifier" else score


def status(key):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(key)


# warm-up: the same estimator on tiny data of the same kind compiles (or loads) the kernels
rng = np.random.default_rng(seed + 1)
Xw = make(n_rows, 256, None if n_stored is None else 400, rng)
cls(n_estimators=2, min_samples_leaf=min_samples_leaf).fit(Xw, target(Xw, rng))
del Xw

baseline = status("VmRSS")
try:
    with open("/proc/self/clear_refs", "w") as fh:  # VmHWM := VmRSS
        fh.write("5")
    sampled = status("VmHWM") > baseline + 2**20
except OSError:
    sampled = True
peak = [baseline]
if sampled:
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], status("VmRSS"))
            time.sleep(0.002)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()

rng = np.random.default_rng(seed)
X = make(n_rows, n_features, n_stored, rng)
y = target(X, rng)
input_bytes = (X.nbytes if n_stored is None else
               X.data.nbytes + X.indices.nbytes + X.indptr.nbytes)
t0 = time.perf_counter()
model = cls(n_estimators=n_estimators, min_samples_leaf=min_samples_leaf,
            random_state=seed).fit(X, y)
fit_s = time.perf_counter() - t0
if sampled:
    stop.set()
    thread.join()
    peak = max(peak[0], status("VmRSS"))
else:
    peak = status("VmHWM")
n_splits = sum(int((t.left >= 0).sum()) for stage in model.booster_.trees for t in stage)
print(json.dumps(dict(baseline=baseline, peak=peak, input_bytes=input_bytes, fit_s=fit_s,
                      sampled=sampled, n_splits=n_splits)))
"""


def measure(case: str, estimator: str, n_estimators: int, min_samples_leaf: int = 20,
            seed: int = 0) -> dict:
    """Fit one case in a fresh process; its baseline, peak and input bytes.

    Parameters
    ----------
    case : {"sparse", "dense"}
        Which of ``CASES``.
    estimator : {"regressor", "classifier"}
        ``TreeBoostRegressor`` or ``TreeBoostClassifier``, default parameters.
    n_estimators : int
        Trees of the fit.
    min_samples_leaf : int, default=20
        The default makes no split on either case (30 rows cannot make two leaves of
        20; a stored value is in one row of 200); 1 or 2 grow trees of many leaves.
    seed : int, default=0
        Seed of the data and of the estimator.

    Returns
    -------
    dict
        ``baseline`` and ``peak`` resident bytes, ``input_bytes``, ``extra`` (peak
        minus baseline), ``budget`` (3x input plus ``FIXED_BUDGET``), ``fit_s``,
        ``sampled`` (whether the peak was sampled) and ``n_splits`` of the model.
    """
    n_rows, n_features, n_stored = CASES[case]
    args = repr((n_rows, n_features, n_stored, estimator, n_estimators, min_samples_leaf,
                 seed))
    out = subprocess.run([sys.executable, "-c", CHILD.replace("ARGS", args, 1)],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"the {case} child failed:\n{out.stderr[-3000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["extra"] = result["peak"] - result["baseline"]
    result["budget"] = 3 * result["input_bytes"] + FIXED_BUDGET
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=[*CASES, "all"], default="all")
    parser.add_argument("--estimator", choices=["regressor", "classifier"],
                        default="regressor")
    parser.add_argument("--n-estimators", type=int, default=10)
    parser.add_argument("--min-samples-leaf", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    for case in CASES if args.case == "all" else [args.case]:
        for _ in range(args.repeat):
            r = measure(case, args.estimator, args.n_estimators, args.min_samples_leaf)
            mb = 1e6
            sys.stdout.write(
                f"{case:6s} {args.estimator}, min_samples_leaf={args.min_samples_leaf}: "
                f"input {r['input_bytes'] / mb:.2f} MB, peak above "
                f"the warmed-up baseline {r['extra'] / mb:.0f} MB (budget "
                f"{r['budget'] / mb:.0f} MB, baseline {r['baseline'] / mb:.0f} MB), fit "
                f"{r['fit_s']:.2f} s, {r['n_splits']} splits"
                f"{', peak sampled' if r['sampled'] else ''}\n")


if __name__ == "__main__":
    main()
