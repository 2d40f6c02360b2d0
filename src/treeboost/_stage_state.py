"""The state of one ``Booster.fit``: raw scores, gradients, the grower, divergence checks.

``_TrainingState`` holds the raw scores of the training rows and of the eval
sets (rebuilt from the booster's trees when training continues), the stage's
gradients and hessians, and the fit's ``TreeGrower``; it adds each new tree to
the scores and checks that they stay finite (``check_tree``). ``_trace_record``
is what ``trace=True`` keeps of a tree. The stage loop itself is ``booster``'s.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ._distributed_stage import _gather_columns
from ._dtypes import G_H_DTYPE, INDEX_DTYPE, MISSING_BIN, SUM_DTYPE, readonly
from ._kernels.partition import add_leaf_values
from ._kernels.predict import predict_binned
from ._kernels.sparse import predict_binned_sparse
from ._plan import make_plan
from ._validation import check_multi_output_tree
from .binning import SparseBinned
from .constraints import constraints_record
from .exceptions import DivergenceError
from .grower import GrownTree, TreeGrower, splittable_features
from .losses import Loss, TrainingData
from .tree import Tree


class _TrainingState:
    """Raw scores of the training rows and eval sets, gradients and the grower of one fit.

    ``raw`` is F0 plus every tree so far (for rf: the sum of the unscaled
    trees, averaged by ``scores``); it is rebuilt from the booster's trees
    stage by stage, in the order training added them, so that continued
    training starts from bit-identical scores.
    """

    def __init__(self, booster, X_binned, y, sample_weight, eval_sets,
                 init_raw=None, group_offsets=None, collective=None, plan=None, *,
                 data: TrainingData | None = None):
        K, (_, n) = booster.n_outputs, X_binned.shape
        self.booster, self.X_binned, self.y, self.sample_weight = (booster, X_binned, y,
                                                                   sample_weight)
        #: the loss's view of the rows (``Booster.fit`` builds it, for ``Loss.prepare``),
        #: and the current stage's, with its random streams (``gradients``)
        self.data = self.stage_data = data if data is not None else TrainingData(
            y, sample_weight, group_offsets, n_outputs=K)
        self.n, self.eval_sets = n, list(eval_sets)
        self.group_offsets = group_offsets
        self.collective = collective
        self._every_y_w = None  # every member's labels and weights, when a loss reads them
        self.all_rows = np.arange(n, dtype=INDEX_DTYPE)
        self.eval_rows = [np.arange(e.y.shape[0], dtype=INDEX_DTYPE) for e in self.eval_sets]
        # the scores before any tree: F0 plus the per-row init scores, if any
        init = booster.init_score[:, None]
        self.init_raw = init_raw  # named by a DivergenceError as a likely cause
        self.base = init if init_raw is None else init + init_raw
        self.eval_base = [init if e.init_raw is None else init + e.init_raw
                          for e in self.eval_sets]
        self.raw = _start_scores(self.base, n)
        self.eval_raw = [_start_scores(b, e.y.shape[0])
                         for b, e in zip(self.eval_base, self.eval_sets, strict=True)]
        # rf: every tree's gradients are at the start scores (F0, or the init scores)
        self.rf_raw = readonly(self.raw.copy())
        mode = booster.mode
        mode.resume(booster)  # rf: back to unscaled trees, averaged again at the end
        for stage in booster.trees:
            for k, tree in enumerate(stage):
                _add_tree_binned(tree, X_binned, self.all_rows, self.raw[k])
                for e, er, rr in zip(self.eval_sets, self.eval_raw, self.eval_rows,
                                     strict=True):
                    _add_tree_binned(tree, e.X_binned, rr, er[k])
        # divergence checks (check_tree): a bound on |raw - F0|, and its limit:
        # exp overflows float64 past a raw score of 709.78; other links only need finite
        # scores, held well inside float64 so that the sums of trees cannot overflow
        # (Python floats: cheaper than NumPy scalars in the stage loop)
        ceiling = _LOG_RAW_LIMIT if booster.loss.link == "log" else _RAW_LIMIT
        self.raw_limit = [ceiling - float(np.max(np.abs(b))) for b in self.base]
        # unknown when continuing: measured at the first stage
        self.drift = [math.inf if booster.trees else 0.0] * K
        self.mode, self.averaged = mode, mode.averaged
        self.gradient = np.empty((K, n), dtype=G_H_DTYPE)
        self.hessian = np.empty((K, n), dtype=G_H_DTYPE)
        bm = booster.bin_mapper
        grower_params = booster.params.grower
        if getattr(booster.loss, "multi_output_tree", False):  # refused by name, before a tree
            check_multi_output_tree(
                booster.loss.name, grower_params.use_quantized_grad,
                sparse=isinstance(X_binned, SparseBinned),
                categorical=bool(np.any(bm.is_categorical_)),
                constrained=constraints_record(
                    grower_params.monotone_constraints, grower_params.interaction_constraints,
                    grower_params.monotone_constraints_method, bm.is_categorical_) is not None,
                distributed=collective is not None,
                device=getattr(booster.params, "device", None))
            # its histograms are float ones: "auto" quantisation is off
            grower_params = replace(grower_params, use_quantized_grad=False)
        #: the rows of every member of the group, in rank order (None alone)
        self.member_rows = None if collective is None else collective.allgather(int(n))
        #: the fit's ExecutionPlan (``plan``: None, one, or some of its fields), its
        #: "auto" quantisation decided on the rows of the whole group, as one process's
        self.plan = make_plan(
            n if collective is None else sum(self.member_rows),
            sparse=isinstance(X_binned, SparseBinned), loss_name=booster.loss.name,
            use_quantized_grad=grower_params.use_quantized_grad, overrides=plan,
            device=getattr(booster.params, "device", None))  # "cuda": checked here
        grower_params = replace(grower_params, use_quantized_grad=self.plan.quantize)
        self.grower = TreeGrower(X_binned, bm.n_bins_non_missing_, bm.is_categorical_,
                                 grower_params, n_rows_total=None if collective is None
                                 else sum(self.member_rows), plan=self.plan)
        if collective is not None:
            # the stochastic rounding of quantised gradients draws by the group's row index
            self.grower.row_offset = sum(self.member_rows[:collective.rank])
            # a feature of one value bin splits where some member has missing values
            # and values: every member must leave out the same features
            local = splittable_features(X_binned, bm.n_bins_non_missing_).astype(np.int64)
            self.grower.set_splittable(collective.allreduce_sum(local) > 0)

    def gradients(self, loss: Loss, raw: np.ndarray, rngs=None):
        """Fill ``gradient``/``hessian`` at ``raw``; return the loss's stage context.

        The loss gets the fit's ``TrainingData`` with the stage's streams ``rngs``
        (``stage_data``: its ``rng`` is the stage's "objective" stream, for the draws
        its gradients make, rank_xendcg's noise).
        """
        data = self.stage_data = self.data.at_stage(rngs)
        if self.collective is not None and loss.gradients_read_every_row:
            # the stage's context (Huber's delta) from every member's rows, in rank order
            if self._every_y_w is None:
                self._every_y_w = _gather_columns(self.collective,
                                                  [self.y, self.sample_weight])
            every_raw = _gather_columns(self.collective, [raw])[0]
            context = loss.stage_context(self._every_y_w[0], every_raw, self._every_y_w[1])
            return loss.gradients(data, raw, self.gradient, self.hessian, context=context)
        return loss.gradients(data, raw, self.gradient, self.hessian)

    def scores(self, i: int) -> np.ndarray:
        """Raw scores of eval set ``i`` (-1: the training rows), averaged for rf."""
        raw, base = (self.raw, self.base) if i < 0 else (self.eval_raw[i], self.eval_base[i])
        return self.mode.mean_scores(base, raw, len(self.booster.trees))

    def add_tree(self, tree: Tree, k: int, indices, grown: GrownTree, outside) -> None:
        """Add a new tree of output k: through the partition on its rows, traversed elsewhere."""
        add_leaf_values(self.raw[k], indices, grown.leaf_starts, grown.leaf_stops,
                        tree.value[grown.leaf_nodes])
        if outside is not None:
            _add_tree_binned(tree, self.X_binned, outside, self.raw[k])
        self.add_to_eval_sets(tree, k)

    def add_to_eval_sets(self, tree: Tree, k: int) -> None:
        """Add a new tree of output k to the raw scores of the eval sets."""
        for e, er, rr in zip(self.eval_sets, self.eval_raw, self.eval_rows, strict=True):
            _add_tree_binned(tree, e.X_binned, rr, er[k])

    def add_stages(self, booster, stages, sign: float) -> None:
        """raw += sign * (trees of ``stages``), on the training rows and eval sets (DART)."""
        for m in stages:
            for k, tree in enumerate(booster.trees[m]):
                for X, rows, raw in [(self.X_binned, self.all_rows, self.raw)] + [
                        (e.X_binned, rr, er) for e, rr, er in
                        zip(self.eval_sets, self.eval_rows, self.eval_raw, strict=True)]:
                    out = np.zeros(raw.shape[1], dtype=np.float64)
                    _add_tree_binned(tree, X, rows, out)
                    raw[k] += sign * out


    def check_tree(self, tree: Tree, m: int, k: int, root_gradient: float) -> None:
        """Raise ``DivergenceError`` unless stage m's tree of output k is finite.

        A non-finite gradient or hessian of a row of the stage's sample makes
        the root's sums (``cover[0]``, ``root_gradient``; the fused kernel's
        root value is -G/(H + lambda)) non-finite; one of a row outside it is
        not used by the tree. The raw scores stay within F0 +- ``drift``,
        the sum of the trees' max |value| (for rf, whose trees are averaged,
        the max), so they are checked row by row only when that bound could
        reach ``raw_limit``: the check costs one dot product per tree
        (about 2 us in all on small trees).

        The fused kernel returns no gradient sum: its root value carries G, but
        ``max_delta_step`` clips an infinite one to the cap. The built-in
        losses cannot produce that alone: their gradients overflow only with
        their hessians (log link, exponential) or are refused before training
        (``Loss.check_scale``); user callables and formulas check their
        derivatives themselves.
        """
        # 0 * NaN and 0 * inf are NaN: the sum is finite iff all its parts are, and then
        # its root >= max |value|
        value = tree.value
        total = value.dot(value) + 0.0 * (tree.cover.item(0) + root_gradient)
        if not total < _SQUARED_LIMIT:
            total = self._checked_values(tree, m, k, root_gradient)
        step = math.sqrt(total)
        drift = self.drift
        drift[k] = max(drift[k], step) if self.averaged else drift[k] + step
        if drift[k] > self.raw_limit[k]:
            drift[k] = self._check_raw(m, k)

    def _checked_values(self, tree: Tree, m: int, k: int, root_gradient: float) -> float:
        """max value^2 of a tree whose sum of squares is not finite; raise if a value is not."""
        root = tree.cover.item(0) + float(root_gradient)
        if not math.isfinite(root):
            raise self._divergence(m, k, "the gradient or hessian of some rows is "
                                   f"not finite (root sums G={float(root_gradient):.3g}, "
                                   f"H={tree.cover.item(0):.3g})")
        step = float(np.abs(tree.value).max())
        if not math.isfinite(step):
            raise self._divergence(m, k, "a node value is not finite (the "
                                   "gradient or hessian of some rows, or a step, is)")
        return step * step  # values of 1e154 and more: float64 still holds their square

    def _check_raw(self, m: int, k: int) -> float:
        """max |raw - F0| of output k's training rows (rf: of their mean); raise past the limit."""
        booster = self.booster
        with np.errstate(over="ignore", invalid="ignore"):
            drift = float(np.max(np.abs(self.raw[k] - self.base[k])))
        drift = booster.mode.scores_drift(drift, len(booster.trees))
        if not drift <= self.raw_limit[k]:
            what = ("exp of the raw scores leaves float64's range" if booster.loss.link == "log"
                    else "the raw scores are not finite")
            raise self._divergence(m, k, f"raw scores moved {drift:.3g} from F0="
                                   f"{booster.init_score[k]:.3g}: {what}")
        return drift

    def _divergence(self, m: int, k: int, what: str) -> DivergenceError:
        """The error for stage m (0-based), with the data's scales as the likely cause."""
        booster, y, w = self.booster, self.y, self.sample_weight
        out = f" for output {k}" if booster.n_outputs > 1 else ""
        init = ", of init_score" if self.init_raw is not None else ""
        return DivergenceError(
            f"training diverged at stage {m + 1} (1-based){out} with "
            f"loss='{booster.loss.name}': {what}. Likely causes: the scale of y (|y| up to "
            f"{float(np.max(np.abs(y), initial=0.0)):.3g}) or of sample_weight (up to "
            f"{float(np.max(w, initial=0.0)):.3g}){init}, or a loss whose Newton steps do not "
            "converge on these targets; rescale y or sample_weight, or lower learning_rate "
            "or max_delta_step")


def _trace_record(m, k, raw_k, residual, hessian, state, grown, indices, gamma, shrink, tree,
                  row_factor, dropped) -> dict:
    """What ``trace=True`` keeps of one tree: plain arrays, tabled by ``treeboost.trace``."""
    leaf = np.zeros(state.n, dtype=np.float64)
    for node, a, b in zip(grown.leaf_nodes, grown.leaf_starts, grown.leaf_stops, strict=True):
        leaf[indices[a:b]] = node
    factor = np.zeros(state.n)
    factor[indices] = 1.0
    if row_factor is not None:
        factor[row_factor[0]] = row_factor[1]
    outside = np.flatnonzero(factor == 0).astype(INDEX_DTYPE)
    if outside.size:  # the leaf rows outside the stage's sample fall in: node ids as values
        ids = replace(tree, value=np.arange(tree.value.size, dtype=np.float64))
        leaf[outside] = 0.0
        _add_tree_binned(ids, state.X_binned, outside, leaf)
    return {"stage": m, "output": k, "F": np.array(raw_k, dtype=np.float64),
            "residual": residual[k], "hessian": hessian[k], "row_factor": factor,
            "leaf": leaf.astype(np.int64), "leaf_nodes": grown.leaf_nodes.copy(),
            "gamma": gamma[grown.leaf_nodes].copy(), "shrinkage": shrink,
            "value": tree.value[grown.leaf_nodes].copy(), "feature": tree.feature.copy(),
            "threshold": tree.threshold.copy(), "is_categorical": tree.is_categorical.copy(),
            "missing_left": tree.missing_left.copy(), "left": tree.left.copy(),
            "right": tree.right.copy(), "count": tree.count.copy(),
            "dropped": [int(d) for d in dropped]}


#: the largest |raw score| a log-link model may reach: exp(709.78) is float64's maximum
_LOG_RAW_LIMIT = 700.0
#: the largest |raw score| of the other links
_RAW_LIMIT = 1e300
#: sums of squared node values up to this are surely finite and sum of finite values
_SQUARED_LIMIT = 1e300


def _start_scores(base: np.ndarray, n: int) -> np.ndarray:
    """Writable C-ordered (n_outputs, n) float64 scores equal to ``base`` (a column or full)."""
    return np.array(np.broadcast_to(base, (base.shape[0], n)), dtype=SUM_DTYPE)


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
