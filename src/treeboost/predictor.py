"""Predictor: pack fitted trees into flat arrays and traverse them in one kernel.

Also the predict options that select stages (SPEC §9): ``check_iteration_range``
(``iteration_range=(start, stop)``), ``stage_slice`` and ``slice_booster``
(``booster[a:b]``), and leaf indices (``PackedTrees.leaves``, ``pred_leaf``).
"""

from __future__ import annotations

import copy
import numbers

import numba
import numpy as np

from ._dtypes import MISSING_BIN, NODE_DTYPE, SPLIT_RECORD_DTYPE, SUM_DTYPE, X_DTYPE, readonly
from ._kernels.predict import predict_raw, predict_raw_numerical
from ._kernels.sparse import predict_raw_csr
from ._sparse import issparse
from .binning import canonical_sparse
from .tree import TREE_FIELDS, Tree

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
        self._node_ids_cache = None

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
        if issparse(X):
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

    def leaves(self, X) -> np.ndarray:
        """The leaf each row reaches in each tree: int32 of shape (n_samples, n_trees).

        A leaf is named by its node index in its own tree's arrays (``Tree.left``,
        ``Tree.value``...: node 0 is the root), so ``trees[t].value[leaves[:, t]]``
        is what tree t adds. ``add_raw``'s kernels walk the trees, each tree adding
        its leaf's node index (exact in float64) to a column of its own: rows
        route exactly as in ``add_raw``, at its speed. ``X`` as for ``add_raw``.
        """
        n_trees = self.tree_roots.size
        out = np.empty((X.shape[0], n_trees), dtype=NODE_DTYPE)
        if not out.size:
            return out
        if issparse(X):
            X = canonical_sparse(X, "csr")
        node_ids, leaf_ids = self._node_ids()
        columns = np.arange(n_trees, dtype=NODE_DTYPE)
        numerical = not self.is_categorical[self.left >= 0].any()
        # rows in blocks: the float64 columns of a block, not of X, are held at once
        block = max(1, LEAF_BLOCK_VALUES // n_trees)
        for a in range(0, X.shape[0], block):
            rows = X[a:a + block]
            ids = np.zeros((rows.shape[0], n_trees), dtype=SUM_DTYPE)
            if issparse(rows):
                predict_raw_csr(readonly(rows.indptr), readonly(rows.indices),
                                readonly(rows.data), self.feature, self.threshold,
                                self.missing_left, self.left, self.right, node_ids,
                                self.is_categorical, self.cat_bitset, self.categories,
                                self.n_categories, MISSING_BIN, self.tree_roots, columns, ids)
            elif numerical:
                splits, _, roots = self.split_records()
                predict_raw_numerical(readonly(rows), splits, leaf_ids, roots, columns,
                                      numerical_block(rows.shape[0], numba.get_num_threads()),
                                      ids)
            else:
                predict_raw(readonly(rows), self.feature, self.threshold, self.missing_left,
                            self.left, self.right, node_ids, self.is_categorical,
                            self.cat_bitset, self.categories, self.n_categories, MISSING_BIN,
                            self.tree_roots, columns, ids)
            out[a:a + block] = ids
        return out

    def _node_ids(self) -> tuple[np.ndarray, np.ndarray]:
        """Every node's index in its own tree, as float64: per node, and per leaf in
        ``split_records``' leaf order (the values ``leaves`` walks with; built once)."""
        if self._node_ids_cache is None:
            sizes = np.diff(np.append(self.tree_roots, self.left.size))
            node_ids = (np.arange(self.left.size) - np.repeat(self.tree_roots, sizes)).astype(
                SUM_DTYPE)
            self._node_ids_cache = (node_ids,
                                    readonly(np.ascontiguousarray(node_ids[self.left < 0])))
        return self._node_ids_cache


#: node indices ``PackedTrees.leaves`` holds as float64 at a time (32 MB): rows enough
#: for every thread even with thousands of trees
LEAF_BLOCK_VALUES = 2**22


def check_iteration_range(iteration_range, n_model_stages: int) -> tuple[int, int]:
    """``iteration_range`` as stages ``[start, stop)`` of a model of ``n_model_stages``.

    XGBoost's convention (``Booster.predict``): a pair of ints, ``stop`` = 0 meaning
    "to the last stage", so ``(0, 0)`` is the whole model. Unlike XGBoost, which
    reads a negative or empty range silently (``(2, 2)`` gives its base score
    alone, ``(-1, 2)`` an unrelated sum), those are refused.

    Parameters
    ----------
    iteration_range : tuple of (int, int) or None
        None: every stage.
    n_model_stages : int
        The model's number of stages.

    Returns
    -------
    (start, stop) : tuple of int
        ``0 <= start < stop <= n_model_stages``, or ``(0, 0)`` for a model of no
        stages asked for all of them.

    Raises
    ------
    TypeError
        If ``iteration_range`` is not a pair of ints (bools refused).
    ValueError
        If ``start`` is negative, ``stop`` is past the last stage (as XGBoost),
        or the range holds no stage.
    """
    if iteration_range is None:
        return 0, n_model_stages
    shown = f"iteration_range={iteration_range!r}"
    pair = tuple(iteration_range) if isinstance(iteration_range, (tuple, list)) else ()
    if len(pair) != 2 or not all(isinstance(v, numbers.Integral)
                                 and not isinstance(v, (bool, np.bool_)) for v in pair):
        raise TypeError(f"{shown} must be a pair of ints (start, stop): stages "
                        "[start, stop), stop=0 meaning to the last stage (XGBoost's "
                        "convention), or None for every stage")
    start, stop = int(pair[0]), int(pair[1])
    stop = n_model_stages if stop == 0 else stop
    if start < 0 or stop < 0 or stop > n_model_stages:
        raise ValueError(f"{shown}: start and stop must be in [0, {n_model_stages}] (the "
                         f"model has {n_model_stages} stages; stop=0 means to the last)")
    if start >= stop and (start, stop) != (0, 0):
        raise ValueError(f"{shown} holds no stage: start must be less than stop "
                         "(stop=0 means to the last stage)")
    return start, stop


def stage_slice(key, n_model_stages: int) -> tuple[int, int]:
    """``booster[key]``'s stages ``[start, stop)``: XGBoost's ``Booster.__getitem__``.

    An int ``i`` is ``i:i+1``; a slice's missing start is 0 and missing stop the
    last stage; ``...`` is every stage. As XGBoost, these are refused: negative
    indices, a stop past the last stage (``IndexError``), an empty slice, a step
    other than 1 (XGBoost takes steps > 1; here a slice is a range of stages, so
    that ``booster[a:b]`` predicts ``iteration_range=(a, b)``), a tuple. Unlike
    ``iteration_range``, a stop of 0 is a stop of 0 (an empty slice), as Python's
    ``[:0]``; XGBoost reads it as "to the end".

    Parameters
    ----------
    key : int, slice or Ellipsis
        What ``Booster.__getitem__`` got.
    n_model_stages : int
        The model's number of stages.

    Returns
    -------
    (start, stop) : tuple of int

    Raises
    ------
    TypeError, ValueError, IndexError
        As above; the message names the key.
    """
    if key is Ellipsis:
        return 0, n_model_stages
    shown = f"booster[{_slice_text(key) if isinstance(key, slice) else repr(key)}]"
    if isinstance(key, numbers.Integral) and not isinstance(key, (bool, np.bool_)):
        key = slice(int(key), int(key) + 1)
    if not isinstance(key, slice):
        what = "a tuple: a Booster is sliced along its stages only" \
            if isinstance(key, tuple) else f"a {type(key).__name__}"
        raise TypeError(f"{shown}: the index is {what}; use an int (one stage), a slice "
                        "of stages (booster[a:b]) or ...")
    for name in ("start", "stop", "step"):
        v = getattr(key, name)
        if v is not None and (not isinstance(v, numbers.Integral)
                              or isinstance(v, (bool, np.bool_))):
            raise TypeError(f"{shown}: the slice's {name} must be an int or None, got "
                            f"{v!r}")
    if key.step not in (None, 1):
        raise ValueError(f"{shown}: a step of {key.step} is not supported: a slice of a "
                         "Booster is a range of consecutive stages")
    start = 0 if key.start is None else int(key.start)
    stop = n_model_stages if key.stop is None else int(key.stop)
    if start < 0 or stop < 0:
        raise IndexError(f"{shown}: negative stage indices are not supported (as in "
                         "XGBoost); count stages from 0")
    if stop > n_model_stages or start >= n_model_stages:
        raise IndexError(f"{shown}: stage index out of range (the model has "
                         f"{n_model_stages} stages)")
    if start >= stop:
        raise ValueError(f"{shown} holds no stage (start must be less than stop)")
    return start, stop


def _slice_text(key: slice) -> str:
    """``a:b`` or ``a:b:c`` as it was written (None parts left out)."""
    text = ":".join("" if v is None else repr(v) for v in (key.start, key.stop))
    return text if key.step is None else f"{text}:{key.step!r}"


def slice_booster(booster, start: int, stop: int):
    """A new Booster of the stages ``[start, stop)`` of ``booster``, which is unchanged.

    Its predictions are ``booster``'s with ``iteration_range=(start, stop)``: F0
    is kept when ``start`` is 0, else 0 (so that the slices of a model add up to
    it). The trees are copies (continued training or DART and rf rescaling of
    the slice never reach the original's); a forest's trees are rescaled to the
    mean of the kept ones, as ``truncate`` does; DART's stage weights are kept
    with their stages. ``best_iteration`` and ``evals_result`` are not carried
    over (XGBoost: "Attributes like best_iteration and best_score are removed").
    The loss, parameters and bin mapper, which nothing changes after training,
    are shared.
    """
    new = copy.copy(booster)
    new.trees = [[Tree(**{name: getattr(tree, name).copy() for name in TREE_FIELDS})
                  for tree in stage] for stage in booster.trees[start:stop]]
    new.stage_weights = list(booster.stage_weights[start:stop])
    new.init_score = (booster.init_score.copy() if start == 0
                      else np.zeros_like(booster.init_score))
    new._packed = {}
    new.feature_names = None if booster.feature_names is None else list(booster.feature_names)
    new.pandas_categories = copy.deepcopy(booster.pandas_categories)
    new.best_iteration, new.evals_result = None, {}
    booster.mode.truncate(new, len(booster.trees))  # rf: the mean of the kept trees
    return new


def ranged_booster(booster, iteration_range):
    """``booster`` itself for every stage, else its slice of ``iteration_range``'s stages.

    What the explanations walk to explain ``predict_raw(X, iteration_range=...)``;
    the range is checked by ``check_iteration_range``.
    """
    n_stages = len(booster.trees)
    start, stop = check_iteration_range(iteration_range, n_stages)
    return booster if (start, stop) == (0, n_stages) else slice_booster(booster, start, stop)
