"""Booster: the stage loop of gradient tree boosting (SPEC §1, Friedman 2001).

F0 = argmin_c sum L(y, c); then for every stage: draw the stage's rows,
compute gradients and hessians, grow one tree per output on them, set its
leaves by the loss's line search, shrink by the learning rate, and add it to
the raw scores. Validation scores are kept up to date incrementally.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._dtypes import G_H_DTYPE, INDEX_DTYPE, MISSING_BIN, SUM_DTYPE, readonly
from ._kernels.partition import add_leaf_values
from ._kernels.predict import predict_binned
from ._kernels.sparse import predict_binned_sparse
from .binning import BinMapper, SparseBinned
from .grower import GrowerParams, GrownTree, TreeGrower
from .losses import Loss, newton_leaf_value
from .metrics import Metric
from .predictor import PackedTrees
from .sampling import sample_columns, sample_rows
from .tree import Tree


@dataclass
class BoostingParams:
    """Stage-loop parameters; tree parameters are in ``grower``."""

    n_estimators: int = 100
    learning_rate: float = 0.1
    subsample: float = 1.0
    colsample_bytree: float = 1.0
    max_delta_step: float | None = None
    grower: GrowerParams = field(default_factory=GrowerParams)


@dataclass
class EvalSet:
    """A data set evaluated after every stage (binned with the training bins)."""

    name: str
    X_binned: np.ndarray
    y: np.ndarray
    sample_weight: np.ndarray


class Booster:
    """A gradient-boosted ensemble: F0, trees per stage, and the bins they split on.

    Parameters
    ----------
    loss : Loss
        The loss being minimised.
    bin_mapper : BinMapper
        Fitted bin mapper of the training data.
    params : BoostingParams
        Stage-loop and tree parameters.

    Attributes
    ----------
    init_score : ndarray of shape (n_outputs,)
        F0.
    trees : list of list of Tree
        ``trees[m][k]`` is the tree of stage m for output k.
    """

    def __init__(self, loss: Loss, bin_mapper: BinMapper, params: BoostingParams):
        self.loss = loss
        self.bin_mapper = bin_mapper
        self.params = params
        self.init_score = np.zeros(loss.n_outputs, dtype=SUM_DTYPE)
        self.trees: list[list[Tree]] = []
        self._packed: dict[tuple[int, int], PackedTrees] = {}

    @property
    def n_outputs(self) -> int:
        """Raw scores per row."""
        return self.loss.n_outputs

    @property
    def n_features(self) -> int:
        """Number of features of the training data."""
        return int(self.bin_mapper.n_edges_.size)

    # ---- training ------------------------------------------------------------
    def fit(self, X_binned, y, sample_weight, streams, eval_sets=(), metric: Metric = None,
            record_training=False, callbacks=()) -> dict:
        """Run the stage loop; return the evaluation log {data: {metric: [values]}}."""
        p = self.params
        K, (n_features, n) = self.n_outputs, X_binned.shape
        y, sample_weight = readonly(y), readonly(sample_weight)
        self.init_score = np.asarray(self.loss.init_score(y, sample_weight), dtype=SUM_DTYPE)
        raw = np.repeat(self.init_score[:, None], n, axis=1)
        gradient = np.empty((K, n), dtype=G_H_DTYPE)
        hessian = np.empty((K, n), dtype=G_H_DTYPE)
        grower = TreeGrower(X_binned, self.bin_mapper.n_bins_non_missing_,
                            self.bin_mapper.is_categorical_, p.grower)
        eval_raw = [np.repeat(self.init_score[:, None], e.y.size, axis=1) for e in eval_sets]
        eval_rows = [np.arange(e.y.size, dtype=INDEX_DTYPE) for e in eval_sets]
        evals_log = {name: {metric.name: []} for name in
                     (["training"] if record_training else []) + [e.name for e in eval_sets]}
        for m in range(p.n_estimators):
            rows = sample_rows(n, p.subsample, streams["rows"])
            oob = None if p.subsample >= 1.0 else _complement(rows, n)
            context = self.loss.gradient_hessian(y, raw, sample_weight, gradient, hessian)
            features = sample_columns(n_features, p.colsample_bytree, streams["columns"])
            stage = []
            for k in range(K):
                indices = rows.copy()
                grown = grower.grow(gradient[k], hessian[k], indices, features,
                                    streams["nodes"], all_rows=oob is None)
                tree = self._make_tree(grown, y, raw[k:k + 1], sample_weight, indices, context)
                leaf_values = tree.value[grown.leaf_nodes]
                add_leaf_values(raw[k], indices, grown.leaf_starts, grown.leaf_stops,
                                leaf_values)
                if oob is not None:
                    _add_tree_binned(tree, X_binned, oob, raw[k])
                for e, er, rr in zip(eval_sets, eval_raw, eval_rows, strict=False):
                    _add_tree_binned(tree, e.X_binned, rr, er[k])
                stage.append(tree)
            self.trees.append(stage)
            self._packed.clear()
            if record_training:
                evals_log["training"][metric.name].append(metric(y, raw, sample_weight,
                                                                 self.loss))
            for e, er in zip(eval_sets, eval_raw, strict=False):
                evals_log[e.name][metric.name].append(metric(e.y, er, e.sample_weight,
                                                             self.loss))
            stop = [cb.after_iteration(m, evals_log) for cb in callbacks]
            if any(stop):
                break
        return evals_log

    def _make_tree(self, grown: GrownTree, y, raw_k, sample_weight, indices, context) -> Tree:
        """Leaf values by the loss's line search, shrunk; thresholds in raw units."""
        gp, lr = self.params.grower, self.params.learning_rate
        value = newton_leaf_value(grown.sum_g, grown.sum_h, gp.reg_lambda, gp.reg_alpha)
        value[grown.leaf_nodes] = self.loss.leaf_values(
            y, raw_k, sample_weight, indices, grown.leaf_starts, grown.leaf_stops,
            grown.sum_g[grown.leaf_nodes], grown.sum_h[grown.leaf_nodes], context,
            gp.reg_lambda, gp.reg_alpha)
        if self.params.max_delta_step is not None:
            # a trust region for the line search: Newton steps on near-zero
            # hessians (XGBoost's max_delta_step)
            np.clip(value, -self.params.max_delta_step, self.params.max_delta_step, out=value)
        internal = grown.left >= 0
        threshold = np.zeros(grown.left.size, dtype=np.float64)
        threshold[internal] = self.bin_mapper.thresholds(grown.feature[internal],
                                                         grown.bin_threshold[internal])
        return Tree(feature=grown.feature, threshold=threshold,
                    bin_threshold=grown.bin_threshold, missing_left=grown.missing_left,
                    is_categorical=grown.is_categorical, cat_bitset=grown.cat_bitset,
                    left=grown.left, right=grown.right, value=lr * value, gain=grown.gain,
                    count=grown.count, cover=grown.sum_h)

    def truncate(self, n_stages: int) -> None:
        """Keep the first ``n_stages`` stages (early stopping keeps the best one)."""
        del self.trees[n_stages:]
        self._packed.clear()

    # ---- prediction --------------------------------------------------------------
    def _packed_trees(self, start: int, stop: int) -> PackedTrees:
        key = (start, stop)
        if key not in self._packed:
            trees = [t for stage in self.trees[start:stop] for t in stage]
            outputs = [k for stage in self.trees[start:stop] for k in range(len(stage))]
            self._packed[key] = PackedTrees(trees, outputs, self.bin_mapper)
        return self._packed[key]

    def predict_raw(self, X: np.ndarray, n_stages: int | None = None) -> np.ndarray:
        """Raw scores F(x) of shape (n_samples, n_outputs); X C-ordered float or CSR."""
        stop = len(self.trees) if n_stages is None else min(n_stages, len(self.trees))
        out = np.repeat(self.init_score[None, :], X.shape[0], axis=0)
        return self._packed_trees(0, stop).add_raw(X, out)

    def staged_predict_raw(self, X: np.ndarray):
        """Yield raw scores after each stage (shape (n_samples, n_outputs))."""
        out = np.repeat(self.init_score[None, :], X.shape[0], axis=0)
        for m in range(len(self.trees)):
            PackedTrees(self.trees[m], list(range(len(self.trees[m]))),
                        self.bin_mapper).add_raw(X, out)
            yield out.copy()

    def feature_importances(self, importance_type: str = "gain") -> np.ndarray:
        """Total split gain (or number of splits) per feature, not normalised."""
        out = np.zeros(self.n_features, dtype=np.float64)
        for stage in self.trees:
            for tree in stage:
                internal = tree.left >= 0
                weights = tree.gain[internal] if importance_type == "gain" else 1.0
                np.add.at(out, tree.feature[internal], weights)
        return out


def _complement(rows: np.ndarray, n: int) -> np.ndarray:
    mask = np.ones(n, dtype=bool)
    mask[rows] = False
    return np.flatnonzero(mask).astype(INDEX_DTYPE)


def _add_tree_binned(tree: Tree, X_binned: np.ndarray, rows: np.ndarray, raw_k: np.ndarray):
    """raw_k[rows] += tree(x) on binned rows (rows outside the stage's sample, eval sets)."""
    if isinstance(X_binned, SparseBinned):
        predict_binned_sparse(X_binned.col_ptr, X_binned.rows, X_binned.bins,
                              X_binned.zero_bin, tree.feature, tree.bin_threshold,
                              tree.missing_left, tree.left, tree.right, tree.value,
                              tree.is_categorical, tree.cat_bitset, MISSING_BIN, 0, rows, raw_k)
        return
    predict_binned(X_binned, tree.feature, tree.bin_threshold, tree.missing_left, tree.left,
                   tree.right, tree.value, tree.is_categorical, tree.cat_bitset, MISSING_BIN, 0,
                   rows, raw_k)
