"""Predictor: pack fitted trees into flat arrays and traverse them in one kernel."""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

from ._dtypes import MISSING_BIN, NODE_DTYPE, SPLIT_RECORD_DTYPE, SUM_DTYPE, X_DTYPE, readonly
from ._kernels.predict import predict_raw, predict_raw_numerical
from ._kernels.sparse import predict_raw_csr
from .binning import canonical_sparse
from .tree import Tree

# rows per task of predict_raw_numerical, at most: 1024 rows took 0.67x the time of 128
# (200,000 x 28 rows, 500 trees of 31 leaves, one thread), and 512-4096 within 4% of 1024
NUMERICAL_BLOCK = 1024


def numerical_block(n_samples: int, n_threads: int) -> int:
    """Rows per task: ``NUMERICAL_BLOCK``, fewer where every thread would not get one.

    Rows are independent, so the block changes the time, never the result.
    """
    per_thread = -(-n_samples // max(1, n_threads))
    return max(8, min(NUMERICAL_BLOCK, -(-per_thread // 8) * 8))


class PackedTrees:
    """Trees laid end to end; node indices rebased to be global.

    Parameters
    ----------
    trees : list of Tree
        Trees in model order.
    outputs : list of int
        Raw-score column each tree adds to (its class for softmax, else 0).
    bin_mapper : BinMapper
        Fitted bins of the training data: categorical splits map raw values
        to bins through its category tables.
    """

    def __init__(self, trees: list[Tree], outputs: list[int], bin_mapper):
        self.categories = bin_mapper.bin_edges_
        self.n_categories = bin_mapper.n_edges_
        sizes = np.array([t.n_nodes for t in trees], dtype=np.int64)
        # each tree's first node; no roots for no trees (a model of 0 stages, or its
        # first 0), where [0] + cumsum[:-1] gave one root and add_raw read node 0 of none
        offsets = np.cumsum(sizes) - sizes
        self.tree_roots = offsets.astype(NODE_DTYPE)
        self.tree_outputs = np.asarray(outputs, dtype=NODE_DTYPE)

        def cat(name, dtype):
            if not trees:
                return np.empty(0, dtype=dtype)
            return np.ascontiguousarray(np.concatenate([getattr(t, name) for t in trees]),
                                        dtype=dtype)

        self.feature = cat("feature", NODE_DTYPE)
        self.threshold = cat("threshold", X_DTYPE)
        self.missing_left = cat("missing_left", np.uint8)
        self.is_categorical = cat("is_categorical", np.uint8)
        self.cat_bitset = (np.concatenate([t.cat_bitset for t in trees]) if trees
                           else np.zeros((0, 8), dtype=np.uint32)).astype(np.uint32)
        self.value = cat("value", SUM_DTYPE)
        children = []
        for name in ("left", "right"):
            arr = cat(name, NODE_DTYPE)
            if trees:
                base = np.repeat(offsets, sizes).astype(NODE_DTYPE)
                arr = np.where(arr >= 0, arr + base, arr).astype(NODE_DTYPE)
            children.append(arr)
        self.left, self.right = children
        self._split_records = None

    def split_records(self):
        """The numerical trees in ``predict_raw_numerical``'s layout (built once).

        Returns
        -------
        splits : ndarray of SPLIT_RECORD_DTYPE, shape (n_splits,)
            The split nodes in model order, children renumbered: a split's index
            among the splits, or ``~i`` for the ``i``-th leaf.
        leaf_value : ndarray of float64, shape (n_leaves,)
            The leaves' values in model order.
        roots : ndarray of int32, shape (n_trees,)
            Each tree's root, renumbered the same way (a one-leaf tree's is ``~i``).
        """
        if self._split_records is None:
            is_split = self.left >= 0
            split_id = np.cumsum(is_split, dtype=np.int64) - 1
            leaf_id = np.cumsum(~is_split, dtype=np.int64) - 1

            def renumber(nodes):
                return np.where(is_split[nodes], split_id[nodes], ~leaf_id[nodes]).astype(
                    NODE_DTYPE)

            splits = np.empty(int(is_split.sum()), dtype=SPLIT_RECORD_DTYPE)
            splits["threshold"] = self.threshold[is_split]
            splits["feature"] = self.feature[is_split]
            splits["missing_left"] = self.missing_left[is_split]
            splits["left"] = renumber(self.left[is_split])
            splits["right"] = renumber(self.right[is_split])
            self._split_records = (readonly(splits),
                                   readonly(np.ascontiguousarray(self.value[~is_split])),
                                   readonly(renumber(self.tree_roots)))
        return self._split_records

    def add_raw(self, X: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``out[i, k] += sum of tree outputs for row i``.

        ``X`` is float64 or float32 in C order, or a SciPy sparse matrix
        (read as CSR, never densified).
        """
        if not self.tree_roots.size:
            return out
        if sp.issparse(X):
            X = canonical_sparse(X, "csr")
            predict_raw_csr(readonly(X.indptr), readonly(X.indices), readonly(X.data),
                            self.feature, self.threshold, self.missing_left, self.left,
                            self.right, self.value, self.is_categorical, self.cat_bitset,
                            self.categories, self.n_categories, MISSING_BIN, self.tree_roots,
                            self.tree_outputs, out)
        elif not self.is_categorical[self.left >= 0].any():
            predict_raw_numerical(readonly(X), *self.split_records(), self.tree_outputs,
                                  numerical_block(X.shape[0], numba.get_num_threads()), out)
        else:
            predict_raw(readonly(X), self.feature, self.threshold, self.missing_left, self.left,
                        self.right, self.value, self.is_categorical, self.cat_bitset,
                        self.categories, self.n_categories, MISSING_BIN, self.tree_roots,
                        self.tree_outputs, out)
        return out
