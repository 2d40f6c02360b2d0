"""Feature contributions: exact TreeSHAP values that sum to the raw score (SPEC §4).

``pred_contribs(estimator, X)`` backs ``predict(X, pred_contribs=True)`` of
the estimators. The cover of a node, which weighs the two sides of a split
when a feature is unknown, is the number of training rows that reached it
(``Tree.count``: the rows of the stage's subsample), as LightGBM does;
XGBoost uses the sum of hessians instead, which differs for non-constant
hessians (log-loss) and weighted rows.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._dtypes import MISSING_BIN, X_DTYPE
from ._kernels.treeshap import tree_shap
from ._threads import threads
from .predictor import PackedTrees
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
    if sp.issparse(X):  # the walk reads every feature of a row: densify (zeros stay zeros)
        X = X.toarray()
    X = np.ascontiguousarray(X, dtype=X_DTYPE)  # one kernel signature for every input dtype
    n_features = booster.n_features
    trees = [t for stage in booster.trees for t in stage]
    outputs = [k for stage in booster.trees for k in range(len(stage))]
    out = np.zeros((X.shape[0], booster.n_outputs, n_features + 1), dtype=np.float64)
    bias = np.array(booster.init_score, dtype=np.float64)
    for tree, k in zip(trees, outputs, strict=True):
        bias[k] += expected_value(tree)
    out[:, :, n_features] = bias
    if not trees or X.shape[0] == 0:
        return out
    packed = PackedTrees(trees, outputs, booster.bin_mapper)
    cover = np.concatenate([t.count for t in trees]).astype(np.float64)
    max_depth = max(t.depth() for t in trees)
    tree_shap(X, packed.feature, packed.threshold, packed.missing_left, packed.left,
              packed.right, packed.value, packed.is_categorical, packed.cat_bitset,
              packed.categories, packed.n_categories, MISSING_BIN, cover, packed.tree_roots,
              packed.tree_outputs, max_depth, out)
    return out


def pred_contribs(estimator, X) -> np.ndarray:
    """``predict(X, pred_contribs=True)`` of a fitted treeboost estimator.

    Parameters
    ----------
    estimator : TreeBoostRegressor or TreeBoostClassifier
        A fitted estimator.
    X : array-like of shape (n_samples, n_features)
        Input data.

    Returns
    -------
    ndarray of shape (n_samples, n_features + 1) or (n_samples, n_classes, n_features + 1)
        Feature contributions to the raw score (log-odds for binary
        classification) with the bias last; each row sums to the raw score
        (``decision_function``). With more than two classes one such block
        per class (XGBoost's layout), summing to that class's raw score.
    """
    X = estimator._check_X(X)
    with threads(estimator.n_jobs):
        out = shap_values(estimator._booster, X)
    return out[:, 0, :] if out.shape[1] == 1 else out
