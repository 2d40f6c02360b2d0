"""Feature contributions: exact TreeSHAP values that sum to the raw score (SPEC §4).

``pred_contribs(estimator, X)`` backs ``predict(X, pred_contribs=True)`` of
the estimators, ``pred_interactions(estimator, X)`` backs
``predict(X, pred_interactions=True)`` (SHAP interaction values, SPEC §9).
The cover of a node, which weighs the two sides of a split when a feature is
unknown, is the number of training rows that reached it
(``Tree.count``: the rows of the stage's subsample), as LightGBM does;
XGBoost uses the sum of hessians instead, which differs for non-constant
hessians (log-loss) and weighted rows.
"""

from __future__ import annotations

import numpy as np

from ._dtypes import MISSING_BIN, X_DTYPE
from ._kernels.treeshap import tree_shap, tree_shap_interactions
from ._sparse import issparse
from ._threads import threads
from .predictor import PackedTrees, ranged_booster
from .tree import Tree


def expected_value(tree: Tree) -> float:
    """Mean leaf value over the training rows: sum of leaf values times cover fractions."""
    cover = tree.count.astype(np.float64)
    frac = np.zeros(tree.n_nodes)
    frac[0] = 1.0
    for node in range(tree.n_nodes):  # children always come after their parent
        lo, hi = tree.left[node], tree.right[node]
        if lo >= 0:
            share = (cover[lo] / cover[node], cover[hi] / cover[node]) if cover[node] > 0 \
                else (0.5, 0.5)
            frac[lo], frac[hi] = frac[node] * share[0], frac[node] * share[1]
    leaves = tree.left < 0
    # summed in node order by Python, not by np.dot: the BLAS picks its dot kernel by CPU
    # and the kernels add in different orders, so the bias changed in the last bits
    # from one machine to another
    return float(sum((frac[leaves] * tree.value[leaves]).tolist()))


def shap_values(booster, X: np.ndarray) -> np.ndarray:
    """SHAP values and bias of every output, shape (n_samples, n_outputs, n_features + 1).

    Parameters
    ----------
    booster : Booster
        A fitted booster.
    X : ndarray of shape (n_samples, n_features)
        Validated raw features (NaN for missing).

    Returns
    -------
    ndarray of shape (n_samples, n_outputs, n_features + 1)
        Column j < n_features is the contribution of feature j to output k;
        the last column is the bias, F0 plus every tree's expected value.
    """
    return _shap_values(_Walk(booster, X))


class _Walk:
    """What both TreeSHAP kernels read, made once: X dense in float64, the trees in
    model order (stage-major) with their outputs, packed, and their covers."""

    def __init__(self, booster, X):
        if issparse(X):  # the walk reads every feature of a row: densify (zeros stay 0)
            X = X.toarray()
        self.X = np.ascontiguousarray(X, dtype=X_DTYPE)  # one signature for every dtype
        self.booster = booster
        self.trees = [t for stage in booster.trees for t in stage]
        self.outputs = [k for stage in booster.trees for k in range(len(stage))]
        self.packed = self.cover = None
        self.max_depth = 0
        if self.trees and self.X.shape[0]:
            self.packed = PackedTrees(self.trees, self.outputs, booster.bin_mapper)
            self.cover = np.concatenate([t.count for t in self.trees]).astype(np.float64)
            self.max_depth = max(t.depth() for t in self.trees)

    def tree_arrays(self) -> tuple:
        """The packed trees' arguments the two kernels share, in their order."""
        p = self.packed
        return (p.feature, p.threshold, p.missing_left, p.left, p.right, p.value,
                p.is_categorical, p.cat_bitset, p.categories, p.n_categories, MISSING_BIN,
                self.cover, p.tree_roots, p.tree_outputs)


def _shap_values(walk: _Walk) -> np.ndarray:
    booster, n_features = walk.booster, walk.booster.n_features
    out = np.zeros((walk.X.shape[0], booster.n_outputs, n_features + 1), dtype=np.float64)
    bias = np.array(booster.init_score, dtype=np.float64)
    for tree, k in zip(walk.trees, walk.outputs, strict=True):
        bias[k] += expected_value(tree)
    out[:, :, n_features] = bias
    if walk.packed is not None:
        tree_shap(walk.X, *walk.tree_arrays(), walk.max_depth, out)
    return out


def pred_contribs(estimator, X, iteration_range=None) -> np.ndarray:
    """``predict(X, pred_contribs=True)`` of a fitted treeboost estimator.

    Parameters
    ----------
    estimator : TreeBoostRegressor, TreeBoostClassifier or TreeBoostRanker
        A fitted estimator.
    X : array-like of shape (n_samples, n_features)
        Input data.
    iteration_range : tuple of (int, int), default=None
        Explain the stages ``[start, stop)`` only (``Booster.predict_raw``'s
        ``iteration_range``): the contributions of the slice
        ``booster_[start:stop]``, whose bias holds F0 only when ``start`` is 0.

        .. versionadded:: 0.1.0

    Returns
    -------
    ndarray of shape (n_samples, n_features + 1) or (n_samples, n_classes, n_features + 1)
        Feature contributions to the raw score (log-odds for binary
        classification) with the bias last; each row sums to the raw score
        (``decision_function``). With more than two classes one such block
        per class (XGBoost's layout), summing to that class's raw score. A
        regressor of several outputs (a 2-D y, a list of alphas) gives
        (n_samples, n_features + 1, n_outputs), the outputs last (SHAP's
        multi-output layout), column k summing to output k's raw score.
    """
    X = estimator._check_X(X)
    booster = ranged_booster(estimator._booster, iteration_range)
    with threads(estimator.n_jobs):
        out = shap_values(booster, X)
    if out.shape[1] == 1:
        return out[:, 0, :]
    # several regression targets or quantiles: the outputs last (SHAP's multi-output
    # layout); classes stay before the features (XGBoost's multiclass layout)
    return out.transpose(0, 2, 1) if booster.loss.task == "regression" else out


def _conditioning_tables(trees: list[Tree], packed: PackedTrees):
    """What ``tree_shap_interactions`` conditions on, tree by tree.

    Returns
    -------
    ptr, features : ndarray of int64
        Tree t's distinct split features, ascending, are
        ``features[ptr[t]:ptr[t + 1]]``.
    below : ndarray of uint32, shape (n_nodes, n_words)
        Bit ``q - ptr[t]`` of a node of tree t is set when its subtree (itself
        included) splits on ``features[q]``: the walk conditioned on that
        feature skips the other subtrees, which add nothing.
    """
    per_tree = [np.unique(t.feature[t.left >= 0]).astype(np.int64) for t in trees]
    sizes = np.array([f.size for f in per_tree], dtype=np.int64)
    ptr = np.zeros(len(trees) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum(sizes)
    features = np.concatenate(per_tree)
    n_nodes = packed.left.size
    below = np.zeros((n_nodes, max(1, -(-int(sizes.max()) // 32))), dtype=np.uint32)
    split = np.flatnonzero(packed.left >= 0)
    if not split.size:
        return ptr, features, below
    # a split's feature as a local index among its tree's features: search (tree, feature)
    # keys, sorted as the CSR lists them
    n_features = int(features.max()) + 1
    tree_of = np.repeat(np.arange(len(trees)), [t.n_nodes for t in trees])[split]
    keys = np.repeat(np.arange(len(trees)), sizes) * n_features + features
    local = np.searchsorted(keys, tree_of * n_features + packed.feature[split]) - ptr[tree_of]
    below[split, local >> 5] = np.uint32(1) << (local & 31).astype(np.uint32)
    # OR the children's bits in, deepest level first (a vectorised walk, level by level)
    levels = [packed.tree_roots.astype(np.int64)]
    while True:
        parents = levels[-1][packed.left[levels[-1]] >= 0]
        if not parents.size:
            break
        levels.append(np.concatenate([packed.left[parents], packed.right[parents]]))
    for nodes in reversed(levels):
        nodes = nodes[packed.left[nodes] >= 0]
        below[nodes] |= below[packed.left[nodes]] | below[packed.right[nodes]]
    return ptr, features, below


def shap_interaction_values(booster, X: np.ndarray) -> np.ndarray:
    """SHAP interaction values of every output, shape (n_samples, n_outputs, p + 1, p + 1).

    Lundberg et al. (2020), "From local explanations to global understanding
    with explainable AI for trees", eq. 7-8, with the trees' covers weighing
    unknown features as in ``shap_values``; XGBoost's ``pred_interactions``.
    For features i != j, ``[i, j]`` is half the change in feature j's SHAP
    value when feature i goes from unknown to known (the Shapley interaction
    index, split evenly between ``[i, j]`` and ``[j, i]``); the diagonal
    ``[i, i]`` is what remains of i's SHAP value, its main effect.

    Parameters
    ----------
    booster : Booster
        A fitted booster.
    X : ndarray of shape (n_samples, n_features)
        Validated raw features (NaN for missing).

    Returns
    -------
    ndarray of shape (n_samples, n_outputs, n_features + 1, n_features + 1)
        Symmetric in its last two axes. Row i (i < n_features) sums to the
        SHAP value of feature i (``shap_values``), the last row and column
        are zero but for ``[p, p]``, the bias; the whole matrix sums to the
        raw score of output k. Memory grows as n_features squared: 1,000 rows
        of 1,000 features take 8 GB per output.
    """
    walk = _Walk(booster, X)  # densified and packed once, for both kernels
    contribs = _shap_values(walk)
    n_samples, n_outputs, width = contribs.shape
    n_features = width - 1
    out = np.zeros((n_samples, n_outputs, width, width), dtype=np.float64)
    if walk.packed is not None:
        ptr, features, below = _conditioning_tables(walk.trees, walk.packed)
        tree_shap_interactions(walk.X, *walk.tree_arrays(), ptr, features, below,
                               walk.max_depth, out)
    # the kernel leaves the diagonal at 0: main effect = SHAP value - interactions
    main = contribs[:, :, :n_features] - out[:, :, :n_features, :].sum(axis=3)
    diagonal = np.arange(n_features)
    out[:, :, diagonal, diagonal] = main
    out[:, :, n_features, n_features] = contribs[:, :, n_features]
    return out


def pred_interactions(estimator, X, iteration_range=None) -> np.ndarray:
    """``predict(X, pred_interactions=True)`` of a fitted treeboost estimator.

    Parameters
    ----------
    estimator : TreeBoostRegressor, TreeBoostClassifier or TreeBoostRanker
        A fitted estimator.
    X : array-like of shape (n_samples, n_features)
        Input data.
    iteration_range : tuple of (int, int), default=None
        Explain the stages ``[start, stop)`` only, as ``pred_contribs`` does.

        .. versionadded:: 0.1.0

    Returns
    -------
    ndarray of shape (n_samples, p + 1, p + 1) or (n_samples, n_classes, p + 1, p + 1)
        With p = n_features: SHAP interaction values of the raw score
        (log-odds for binary classification), the bias last
        (``shap_interaction_values``): symmetric, row i sums to
        ``pred_contribs``'s column i and each matrix to the raw score. With
        more than two classes one matrix per class (XGBoost's layout, as
        ``pred_contribs``); a regressor of several outputs: (n_samples, p + 1,
        p + 1, n_outputs), the outputs last.
    """
    X = estimator._check_X(X)
    booster = ranged_booster(estimator._booster, iteration_range)
    with threads(estimator.n_jobs):
        out = shap_interaction_values(booster, X)
    if out.shape[1] == 1:
        return out[:, 0]
    return out.transpose(0, 2, 3, 1) if booster.loss.task == "regression" else out
