"""Sparse input: fit time and peak memory on a large CSR matrix, next to its size.

Builds a bag-of-words-like CSR matrix (``--rows`` x ``--features``, ``--density``
non-zeros, small integer counts), a binary target from a few informative
columns, and fits ``TreeBoostClassifier`` on it without densifying. Peak memory
is the process's resident set sampled every 5 ms during ``fit`` minus the
resident set just before it (the matrix itself is already resident), printed
next to the bytes of the matrix's non-zeros (values + column indices). The
same model then predicts on the CSR matrix and on a dense copy of a slice.

Examples::

    python benchmarks/bench_sparse.py --rows 1000000 --features 10000 --density 0.001
    python benchmarks/bench_sparse.py --preset wide --lightgbm     # 200,000 x 20,000 at 0.1%
    python benchmarks/bench_sparse.py --preset hashed --lightgbm   # 200 x 2^20, 20 a row

The presets are issue 13's wide sparse cases: a wide bag of words, and hashed
features (uniform over 2^20 columns, a fixed number of stored values a row),
where the time and memory of a histogram per column show most.
"""

from __future__ import annotations

import argparse
import threading
import time

import numpy as np
import psutil
import scipy.sparse as sp

#: name: (rows, features, density, stored values a row (None: Poisson around density))
PRESETS = {"wide": (200_000, 20_000, 0.001, None), "hashed": (200, 2**20, None, 20)}


def make_data(n_rows: int, n_features: int, density: float | None, seed: int,
              per_row: int | None = None):
    """CSR counts matrix with ~density non-zeros and a target from informative columns.

    With ``per_row``, every row stores that many values in columns drawn uniformly
    (hashed features); otherwise a Poisson number around ``density`` with Zipf-like
    column popularity (words in documents).
    """
    rng = np.random.default_rng(seed)
    if per_row is not None:
        counts = np.full(n_rows, per_row)
        indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        indices = rng.integers(0, n_features, size=int(indptr[-1])).astype(np.int32)
        # informative columns must be stored somewhere: the first 200 are drawn 100x as often
        hot = rng.random(indices.size) < 0.5
        indices[hot] = rng.integers(0, min(200, n_features), size=int(hot.sum()))
        data = rng.integers(1, 6, size=indices.size).astype(np.float64)
        X = sp.csr_matrix((data, indices, indptr), shape=(n_rows, n_features))
        X.sum_duplicates()
        return X, _target(X, rng, n_features, n_rows)
    counts = rng.poisson(density * n_features, size=n_rows)
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    # Zipf-like column popularity, as words in documents
    popularity = 1.0 / np.arange(1, n_features + 1) ** 0.6
    popularity /= popularity.sum()
    indices = rng.choice(n_features, size=int(indptr[-1]), p=popularity).astype(np.int32)
    data = rng.integers(1, 6, size=indices.size).astype(np.float64)
    X = sp.csr_matrix((data, indices, indptr), shape=(n_rows, n_features))
    X.sum_duplicates()
    return X, _target(X, rng, n_features, n_rows)


def _target(X, rng, n_features: int, n_rows: int):
    """A binary target from up to 20 informative columns among the first 200."""
    informative = rng.choice(min(200, n_features), size=min(20, n_features), replace=False)
    coef = rng.normal(size=informative.size)
    score = np.asarray(X[:, informative] @ coef).ravel()
    return (score + 0.5 * rng.normal(size=n_rows) > np.median(score)).astype(np.int64)


class PeakRSS:
    """Peak resident set size of this process while the context is open."""

    def __enter__(self):
        self.process = psutil.Process()
        self.start = self.peak = self.process.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self.process.memory_info().rss)
            time.sleep(0.005)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.process.memory_info().rss)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=10_000)
    parser.add_argument("--density", type=float, default=0.001)
    parser.add_argument("--n-estimators", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--preset", choices=sorted(PRESETS),
                        help="issue 13's wide sparse cases (overrides rows/features/density)")
    parser.add_argument("--lightgbm", action="store_true",
                        help="also fit LightGBM (same trees, learning rate, leaves, bins)")
    args = parser.parse_args()

    from treeboost import TreeBoostClassifier

    per_row = None
    if args.preset:
        args.rows, args.features, args.density, per_row = PRESETS[args.preset]
    t0 = time.perf_counter()
    X, y = make_data(args.rows, args.features, args.density, args.seed, per_row)
    nnz_bytes = X.data.nbytes + X.indices.nbytes
    print(f"data: {X.shape[0]:,} x {X.shape[1]:,}, {X.nnz:,} non-zeros "
          f"({X.nnz / X.shape[0] / X.shape[1]:.4%}); values + indices "
          f"{nnz_bytes / 2**20:.0f} MiB,"
          f" CSR total {(nnz_bytes + X.indptr.nbytes) / 2**20:.0f} MiB; dense float64 would be "
          f"{X.shape[0] * X.shape[1] * 8 / 2**30:.1f} GiB "
          f"(built in {time.perf_counter() - t0:.1f} s)")

    # load the compiled kernels first: their code is not the fit's memory
    Xw, yw = make_data(2_000, 50, 0.05, args.seed)
    TreeBoostClassifier(n_estimators=2).fit(Xw, yw).predict_proba(Xw)

    model = TreeBoostClassifier(n_estimators=args.n_estimators, random_state=args.seed)
    with PeakRSS() as mem:
        t0 = time.perf_counter()
        model.fit(X, y)
        fit_s = time.perf_counter() - t0
    extra = mem.peak - mem.start
    print(f"fit: {args.n_estimators} trees in {fit_s:.1f} s; peak memory above the resident "
          f"input {extra / 2**20:.0f} MiB = {extra / nnz_bytes:.2f}x the non-zeros' bytes")

    if args.lightgbm:
        import lightgbm

        peer = lightgbm.LGBMClassifier(n_estimators=args.n_estimators, learning_rate=0.1,
                                       num_leaves=31, min_child_samples=20, max_bin=255,
                                       random_state=args.seed, verbose=-1)
        peer.fit(Xw, yw)
        with PeakRSS() as peer_mem:
            t0 = time.perf_counter()
            peer.fit(X, y)
            peer_s = time.perf_counter() - t0
        peer_extra = peer_mem.peak - peer_mem.start
        peer_acc = float((peer.predict(X) == y).mean())
        print(f"LightGBM {lightgbm.__version__}: fit {peer_s:.1f} s (treeboost/LightGBM "
              f"{fit_s / peer_s:.2f}x), peak memory above the input {peer_extra / 2**20:.0f} MiB "
              f"(ratio {extra / peer_extra:.2f}x), training accuracy {peer_acc:.4f}")

    t0 = time.perf_counter()
    proba = model.predict_proba(X)[:, 1]
    predict_s = time.perf_counter() - t0
    acc = float(((proba > 0.5) == y).mean())
    head = slice(0, min(20_000, X.shape[0]))
    same = np.array_equal(model.predict_proba(X[head])[:, 1],
                          model.predict_proba(X[head].toarray())[:, 1])
    print(f"predict on CSR: {predict_s:.1f} s; training accuracy {acc:.4f}; first "
          f"{head.stop:,} rows identical to the densified prediction: {same}")


if __name__ == "__main__":
    main()
