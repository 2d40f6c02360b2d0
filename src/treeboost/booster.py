"""Booster: the stage loop of gradient tree boosting (SPEC §1, Friedman 2001).

F0 = argmin_c sum L(y, c); then for every stage: draw the stage's rows,
compute gradients and hessians, grow one tree per output on them, set its
leaves by the loss's line search, shrink by the learning rate, and add it to
the raw scores. Validation scores are kept up to date incrementally.

The boosting mode (gbdt, rf, dart: ``modes.BoostingMode``) and the row
sampling (none, subsample, GOSS: ``sampling.RowSampler``) are strategies
whose hooks the one stage loop calls; it names no mode. The scores, gradients
and divergence checks of a fit are ``_stage_state._TrainingState``'s; what
training over a collective exchanges is in ``_distributed_stage``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import params as _params
from ._distributed_stage import (
    _distributed_init_score,
    _gather_columns,
    _gather_eval_data,
    _gather_leaf_rows,
    check_distributed,
)
from ._dtypes import INDEX_DTYPE, SUM_DTYPE, readonly
from ._input import check_predict_X, check_stage_count, check_stages
from ._kernels.booster import (
    finish_values,
    grow_newton_tree,
    grow_newton_trees,
    raw_thresholds,
)
from ._kernels.splitting import BITSET_WORDS
from ._logging import log_info
from ._multi_output_stage import grow_multi_output_stage
from ._sparse import issparse
from ._stage_state import _trace_record, _TrainingState
from .binning import BinMapper, canonical_sparse
from .callbacks import CallbackList
from .constraints import clip_line_search_values, monotone_array
from .grower import GrowerParams, GrownTree, TreeGrower, grow_with_collective
from .losses import Loss, TrainingData, newton_leaf_value
from .metrics import evaluate
from .modes import BoostingMode, boosting_mode, check_mode, column_sampler, row_sampler
from .predictor import (
    PackedTrees,
    check_iteration_range,
    ranged_booster,
    slice_booster,
    stage_slice,
)
from .sampling import ColumnSampler, SubSampler, stage_streams
from .tree import Tree

#: Stage-loop parameters, one field per ``part="booster"`` entry of the parameter
#: table (type and default from there); tree parameters are in ``grower``.
BoostingParams = _params.typed_view(
    "BoostingParams", __name__, "booster",
    extra=[("grower", GrowerParams, field(default_factory=GrowerParams))],
    doc="Stage-loop parameters (``treeboost.params``, part 'booster'); tree parameters "
        "are in ``grower``.")


@dataclass
class EvalSet:
    """A data set evaluated after every stage (binned with the training bins)."""

    name: str
    X_binned: np.ndarray
    y: np.ndarray
    sample_weight: np.ndarray
    #: per-row raw scores added to the model's (``Dataset.init_raw``), shape (n_outputs, n)
    init_raw: np.ndarray | None = None
    #: row offsets of its query groups (``Dataset.group_offsets``), for ranking metrics
    group_offsets: np.ndarray | None = None


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
        F0 (0 when trained from per-row init scores).
    trees : list of list of Tree
        ``trees[m][k]`` is the tree of stage m for output k.
    feature_names : list of str or None
        Names of the features (``Dataset.feature_names``), written to the
        model file.
    pandas_categories : dict of {int: list}
        Categories of the training frame's categorical columns, by position.
    target_names : list of str or None
        Names of the outputs of a model of several targets (one per output: a
        DataFrame y's columns, ``treeboost train --target a,b``), written to the model
        file; None when not known.
    execution_plan : ExecutionPlan or None
        The plan of the last ``fit`` (threads and the sizes from which each parallel
        path was taken, ``treeboost._plan``); None for a model loaded from a file, which
        does not hold it.
    """

    #: True while ``fit`` grows stages: ``truncate`` is refused then
    _fitting = False

    def __init__(self, loss: Loss, bin_mapper: BinMapper, params: BoostingParams):
        self.loss = loss
        self.bin_mapper = bin_mapper
        self.params = params
        self.init_score = np.zeros(loss.n_outputs, dtype=SUM_DTYPE)
        self.trees: list[list[Tree]] = []
        #: seed of the stages' random streams (``stage_streams``), set by ``fit``
        self.seed: int | None = None
        #: DART: each stage's current weight (its shrinkage times its normalisations)
        self.stage_weights: list[float] = []
        self._packed: dict[tuple[int, int], PackedTrees] = {}
        self.feature_names: list[str] | None = None
        self.pandas_categories: dict = {}
        self.target_names: list[str] | None = None
        self.execution_plan = None

    @property
    def mode(self) -> BoostingMode:
        """The boosting mode strategy of ``params.boosting`` (``modes.boosting_mode``)."""
        return boosting_mode(self.params)

    @property
    def n_outputs(self) -> int:
        """Raw scores per row."""
        return self.loss.n_outputs

    @property
    def max_delta_step(self) -> float | None:
        """The cap on |leaf value| before shrinkage: the parameter, else the loss's default."""
        mds = self.params.max_delta_step
        return self.loss.max_delta_step if mds is None else mds

    @property
    def n_features(self) -> int:
        """Number of features of the training data."""
        return int(self.bin_mapper.n_edges_.size)

    # ---- model view and model file (treeboost.model_view) -------------------------
    def dump_model(self) -> dict:
        """The model as plain data (dicts, lists, str, int, float, bool, None), in user units.

        The model file's information with raw thresholds instead of bins and
        category values instead of bitsets; walking it gives ``predict_raw`` bit for
        bit: output k's raw score is ``init_score[k]`` plus, over the stages, the
        ``value`` of the leaf ``trees[stage][k]`` sends the row to.

        .. versionadded:: 0.1.0

        Returns
        -------
        dict
            Stable within ``format_version`` 1: ``format``, ``format_version``,
            ``treeboost_version``, ``loss`` ``{"name", "params", "link"}``, ``params``,
            ``n_features``, ``feature_names``, ``features`` (per feature ``{"index",
            "name", "kind", "categories", "has_missing"}``; ``categories``: None for
            a numerical feature, else the training categories as the user gives them,
            a frame's labels or the integer codes), ``n_outputs``, ``n_classes``
            (None unless classification), ``target_names`` (one str per output of
            a model of several targets that knows their names, else None),
            ``init_score``, ``n_stages``,
            ``best_iteration``, ``trees[stage][output]``: ``{"stage", "output",
            "tree_index" (stage * n_outputs + output), "n_leaves", "nodes"}``.
            ``nodes[i]`` is node i (0 the root, children after their parent), every
            node with the keys ``node``, ``parent``, ``depth`` (root 0), ``is_leaf``,
            ``value`` (shrunk), ``cover`` (sum of hessians), ``count`` (rows), and,
            None at leaves, ``feature``, ``feature_name``, ``left``, ``right``,
            ``gain``, ``split_type``, ``threshold``, ``categories_left``,
            ``missing_go_left``, ``unseen_go_left``. "numerical": go left when
            ``x <= threshold``; NaN goes left when ``missing_go_left``.
            "categorical": the values in ``categories_left`` go left; NaN and any
            category not in the feature's ``categories`` (unseen in training) go
            left when ``missing_go_left`` (= ``unseen_go_left``); the others right.
        """
        from .model_view import dump_model

        return dump_model(self)

    def trees_to_dataframe(self):
        """LightGBM's ``trees_to_dataframe`` table of ``dump_model()``: a row per node.

        .. versionadded:: 0.1.0

        Returns
        -------
        pandas.DataFrame
            LightGBM's columns and row order (``model_view.trees_to_dataframe``).
        """
        from .model_view import dump_model, trees_to_dataframe

        return trees_to_dataframe(dump_model(self))

    def save_model(self, path) -> None:
        """Write the model file: ``serialization.save_booster(self, path)``.

        .. versionadded:: 0.1.0

        Parameters
        ----------
        path : str or path-like
            File to write (atomically).
        """
        from .model_view import save_model

        save_model(self, path)

    @staticmethod
    def load_model(path) -> Booster:
        """Read a model file, an estimator's too, as a Booster (``model_view.load_model``).

        .. versionadded:: 0.1.0

        Parameters
        ----------
        path : str or path-like
            A file of ``save_model`` or of an estimator's ``save_model``.

        Returns
        -------
        Booster
            With the file's ``best_iteration`` and ``evals_result``, as ``train`` sets them.
        """
        from .model_view import load_model

        return load_model(path)

    # ---- training ------------------------------------------------------------
    def fit(self, X_binned, y, sample_weight, seed: int, eval_sets=(), metrics=(),
            record_training=False, callbacks=(), trace: list | None = None, *,
            init_raw: np.ndarray | None = None, group_offsets: np.ndarray | None = None,
            collective=None, plan=None, log_plan: bool = False) -> dict:
        """Run the stage loop up to ``params.n_estimators`` stages in all.

        A booster that already has trees continues from them (``init_model``,
        ``warm_start``): its raw scores are recomputed from its trees, stage
        by stage in the order the stages were added, so they equal bit for
        bit those of a run that never stopped, and stage m draws from
        ``stage_streams(seed, m)`` whatever the earlier calls drew.

        Parameters
        ----------
        X_binned : ndarray of shape (n_features, n_samples), dtype uint8, or SparseBinned
            Training data binned with ``self.bin_mapper``.
        y, sample_weight : ndarray of shape (n_samples,)
            Encoded targets and positive weights.
        seed : int
            The seed of the stages' streams: stage m draws from
            ``stage_streams(seed, m)``. Kept in ``self.seed`` (saved with the model)
            for continued training.
        eval_sets : sequence of EvalSet, default=()
            Data scored after every stage.
        metrics : sequence of Metric, default=()
            Metrics of the evaluation log, evaluated in order on every data
            set after every stage.
        record_training : bool, default=False
            Also log the metrics on the training data (as "training", first).
        callbacks : sequence of TrainingCallback, default=()
            Called in order (``CallbackList``): ``before_training(self)``, then
            ``after_iteration`` after every stage with the global 0-based stage
            index (training stops after the stage if one returns True), then
            ``after_training(self)`` once, after a forest's final averaging.
        trace : list, default=None
            If a list, one record per tree is appended (``treeboost.trace``).
        init_raw : ndarray of shape (n_outputs, n_samples), default=None
            Per-row raw scores to start from instead of F0 (LightGBM's
            ``init_score``): F0 is then 0 and the model does not include
            them. Only for a booster without trees.
        group_offsets : ndarray of int64, default=None
            Row offsets of the query groups, passed to the losses whose
            ``needs_group`` is true.
        collective : treeboost.collective.Collective, default=None
            Train over several processes, each calling ``fit`` with its own rows
            (binned with the same bins) and the same parameters and seed: F0 and
            every histogram are summed over the group, so every process builds the
            model of all the rows (``check_distributed`` lists what is supported).
        plan : ExecutionPlan or dict, default=None
            The fit's execution plan, or some of its fields by name; the rest are
            decided by ``_plan.make_plan`` (``train``'s ``plan``). Kept in
            ``self.execution_plan``.
        log_plan : bool, default=False
            Log the plan once, before the first stage (``train``'s ``verbose``).

        Returns
        -------
        dict
            The evaluation log of the new stages, {data: {metric: [values]}}.
        """
        p = self.params
        check_mode(p)
        y, sample_weight = readonly(y), readonly(sample_weight)
        self.loss.check_scale(y, sample_weight)
        if init_raw is not None and self.trees:
            raise ValueError("init_score cannot be used to continue a model with trees")
        if collective is not None:
            check_distributed(self, eval_sets, init_raw, group_offsets, X_binned)
        # the loss's one view of the training rows, and its per-fit setup
        data = TrainingData(y, sample_weight, group_offsets, n_outputs=self.n_outputs)
        self.loss.prepare(data)
        if not self.trees:
            # LightGBM: no boost from average when the data carries init scores
            if init_raw is not None:
                self.init_score = np.zeros(self.n_outputs, dtype=SUM_DTYPE)
            elif collective is not None:  # F0 of every member's rows
                init = _distributed_init_score(self.loss, y, sample_weight, collective)
                self.init_score = np.asarray(init, dtype=SUM_DTYPE)
            else:
                self.init_score = np.asarray(self.loss.init_raw(data), dtype=SUM_DTYPE)
            self.stage_weights = []
        self.seed = int(seed)
        mode, sampler, columns = self.mode, row_sampler(p), column_sampler(p)
        state = _TrainingState(self, X_binned, y, sample_weight, eval_sets, init_raw,
                               group_offsets, collective, plan, data=data)
        self.execution_plan = state.plan
        if hasattr(self.loss, "parallel_shift_scores"):  # the softmax's row maxima
            self.loss.parallel_shift_scores = state.plan.parallel_shift_scores
        if log_plan:
            log_info(state.plan.describe())
        if collective is not None and p.subsample < 1.0:
            # the rows one process would draw of all the group's, in rank order
            sizes = state.member_rows
            sampler = SubSampler(p.subsample, (sum(sizes[:collective.rank]), sum(sizes)))
        # (index in state.scores, name, y, weights, groups) of every evaluated data set
        data = ([(-1, "training", y, sample_weight, group_offsets)] if record_training
                else []) + [(i, e.name, e.y, e.sample_weight, e.group_offsets)
                            for i, e in enumerate(eval_sets)]
        if collective is not None:  # every member's rows of them, in rank order
            data = _gather_eval_data(collective, data)
        evals_log = {d[1]: {metric.name: [] for metric in metrics} for d in data}
        if not isinstance(callbacks, CallbackList):
            callbacks = CallbackList(callbacks)
        # the training scores hold every stage so far: from here on, stages may only be
        # added, or the next ones would be fitted to the scores of removed stages
        self._fitting = True
        try:
            self._stage_loop(state, mode, sampler, columns, trace, callbacks, data, metrics,
                             evals_log)
        finally:
            self._fitting = False
            # the booster keeps its plan: a GPU provider's device copies go now
            release = getattr(state.plan.histogram_provider, "release", None)
            if release is not None:
                release()
        mode.end_training(self)
        callbacks.after_training(self)
        return evals_log

    def _stage_loop(self, state: _TrainingState, mode: BoostingMode, sampler,
                    columns: ColumnSampler, trace, callbacks: CallbackList, data, metrics,
                    evals_log: dict) -> None:
        """``fit``'s callbacks' ``before_training`` and stages, up to a stop.

        Raises ``RuntimeError`` if a callback removed stages (``truncate`` refuses).
        """
        p, collective = self.params, state.collective
        first = len(self.trees)  # the stages in the training scores (``state``)
        callbacks.before_training(self)
        for m in range(first, p.n_estimators):
            if len(self.trees) != m:
                raise RuntimeError(
                    f"the booster's stages were changed during training: {len(self.trees)} "
                    f"stages before stage {m + 1}, where training had {m}. Callbacks may "
                    "stop training (after_iteration returns True) or cut the model in "
                    "after_training, not remove stages the next ones are fitted on")
            self._stage(state, mode, sampler, columns, m, stage_streams(self.seed, m),
                        trace)
            raws = [state.scores(i) for i, *_ in data]
            if collective is not None and data:
                raws = _gather_columns(collective, raws)
            for (_i, name, y_i, w_i, groups_i), raw in zip(data, raws, strict=True):
                values = evaluate(metrics, y_i, raw, w_i, self.loss,
                                  where=f" on {name} at stage {m + 1}",
                                  group_offsets=groups_i)
                for metric, value in zip(metrics, values, strict=True):
                    evals_log[name][metric.name].append(value)
            if callbacks.after_iteration(m, evals_log):
                break

    def _stage(self, state: _TrainingState, mode: BoostingMode, sampler,
               columns: ColumnSampler, m: int, rngs: dict, trace) -> None:
        """Stage m: rows, gradients, one tree per output, and the raw scores' update.

        The hooks of ``mode`` and ``sampler`` are called in the order of
        ``modes``: ``begin_stage``, ``gradient_scores``, ``sampler.sample``,
        ``shrinkage``, then, after the trees, ``end_stage``; the stage's features
        come from ``columns`` after the shrinkage, as they always did (the order of
        the draws is part of the model).
        """
        p, K = self.params, self.n_outputs
        dropped = mode.begin_stage(self, state, rngs)
        at = mode.gradient_scores(state)
        context = state.gradients(self.loss, at, rngs)
        if trace is not None:  # the pseudo-residuals before any GOSS up-weighting
            # (+ 0.0 turns the -0.0 of a zero gradient into 0.0 for printing)
            residual = -state.gradient.astype(np.float64) + 0.0
            hessian = state.hessian.astype(np.float64)
        sample = sampler.sample(m, state.gradient, state.hessian, state.sample_weight, rngs)
        rows, outside, weight, row_factor = (sample.rows, sample.outside, sample.weight,
                                             sample.amplified)
        shrink, dropped_scale = mode.shrinkage(p, dropped.size)
        features = state.grower.splittable(columns.tree_features(self.n_features, rngs))
        if getattr(self.loss, "multi_output_tree", False):  # one tree for every output
            self.trees.append(grow_multi_output_stage(
                self, state, m, at, context, sample, features, shrink, columns.node_rng(rngs),
                None if trace is None else (trace, residual, hessian, row_factor, dropped)))
            self.stage_weights.append(shrink)
            mode.end_stage(self, state, dropped, dropped_scale)
            self._packed.clear()
            return
        stage = []
        # Newton leaves on dense data: the whole tree, its values and raw-score
        # updates in one kernel call (not when the plan hands histograms to a provider,
        # which the grower's resumed growth serves)
        fused = trace is None and self.loss.newton_leaves and not state.grower.sparse \
            and state.collective is None and state.plan.histogram_provider is None
        node_rng = columns.node_rng(rngs)
        # quantised gradients: each tree's seed of stochastic rounding
        quant_seeds = (rngs["quantize"].integers(0, 2**63, size=K, dtype=np.uint64)
                       if state.grower.quantized else np.zeros(K, dtype=np.uint64))
        # K trees on the same rows and features: their roots in one pass
        root = state.grower.root_histograms(state.gradient, state.hessian, rows, features,
                                            all_rows=outside is None) if fused else None
        side_by_side = None
        grower = state.grower
        # several trees on several threads: side by side in one parallel region; a
        # small fit's, which would not repay that kernel's compilation and loading (the
        # plan's side_by_side_work), in turn on one thread (the lean kernel a serial
        # twin compiles, not the parallel grower's); quantised trees, each rounding its
        # own output's gradients (kernel_arguments), in turn on every thread
        if fused and K > 1 and grower.n_threads > 1 and not grower.quantized:
            work = rows.size * features.size * K * p.n_estimators
            if work >= state.plan.side_by_side_work:
                side_by_side = self._newton_trees_side_by_side(state, rows, features,
                                                               outside, shrink, root, node_rng)
            else:
                grower = grower.serial_twins(1)[0]
        for k in range(K):
            indices = rows.copy()
            if fused:
                tree = (side_by_side[k] if side_by_side is not None else self._newton_tree(
                    state, k, indices, features, outside, shrink, root, node_rng,
                    int(quant_seeds[k]), grower))
                state.check_tree(tree, m, k, 0.0)
                state.add_to_eval_sets(tree, k)
                stage.append(tree)
                continue
            if state.collective is None:
                grown = state.grower.grow(state.gradient[k], state.hessian[k], indices,
                                          features, node_rng, all_rows=outside is None,
                                          quant_seed=int(quant_seeds[k]))
            else:
                grown = grow_with_collective(state.grower, state.gradient[k],
                                             state.hessian[k], indices, features,
                                             state.collective, int(quant_seeds[k]))
            if state.collective is not None and self.loss.exact_leaves:
                y_all, raw_all, w_all, rows_all, starts, stops = _gather_leaf_rows(
                    state.collective, grown, state.y, at[k], weight, indices)
                every = TrainingData(y_all, w_all, n_outputs=K).at_stage(rngs)
                gamma = self._leaf_values(grown, every, k, raw_all, rows_all, context,
                                          starts, stops)
            else:
                gamma = self._leaf_values(grown, state.stage_data.with_weight(weight), k,
                                          at[k:k + 1], indices, context)
            tree = self._make_tree(grown, shrink * gamma)
            if trace is not None:
                trace.append(_trace_record(m, k, at[k], residual, hessian, state, grown,
                                           indices, gamma, shrink, tree, row_factor, dropped))
            state.add_tree(tree, k, indices, grown, outside)
            state.check_tree(tree, m, k, float(grown.sum_g[0]))  # raw now has it
            stage.append(tree)
        self.trees.append(stage)
        self.stage_weights.append(shrink)
        mode.end_stage(self, state, dropped, dropped_scale)
        self._packed.clear()

    def _newton_trees_side_by_side(self, state: _TrainingState, rows, features, outside,
                                   shrink: float, root, node_rng) -> list[Tree]:
        """A multi-output stage's trees, grown at the same time on the cores.

        Small nodes are where the cores wait: their histograms, partitions and
        split scans are serial, and a multiclass fit is mostly small nodes
        (100,000 x 20, 5 classes: 1.09x faster on two threads than on one).
        The K trees of a stage are independent given the gradients, so one
        parallel region grows them (``grow_newton_trees``): each thread takes
        the next tree no thread has taken and grows it with a serial twin of
        the grower (``TreeGrower.serial_twins``), whose sums equal the parallel
        kernels': the trees are those ``_newton_tree`` grows one after the
        other, whichever thread grows which. Taken in turn rather than dealt
        out in advance, as the trees of one stage differ in cost (80,000 x 20,
        5 classes: 4.4 to 9.4 ms). In one region rather than on Python threads:
        the threads then wait for the next region as the OpenMP runtime's do,
        and no tree thread competes for a core with an OpenMP thread still
        spinning after the stage's root histograms. The ``colsample_bynode``
        seeds are drawn first, in output order, as ``_newton_tree`` draws them.
        """
        K = self.n_outputs
        seeds = np.zeros(K, dtype=np.uint64)
        if node_rng is not None:
            for k in range(K):
                seeds[k] = node_rng.integers(0, 2**63, dtype=np.uint64)
        grower = state.grower
        args = grower.side_by_side_arguments(state.gradient, state.hessian, rows, features,
                                             outside is None, root,
                                             min(K, grower.n_threads))
        out = _stage_tree_buffers(K, 2 * grower.leaf_capacity() - 1)
        mds = self.max_delta_step
        bm = self.bin_mapper
        grow_newton_trees(*args, seeds, np.inf if mds is None else float(mds), float(shrink),
                          bm.bin_edges_, bm.n_edges_, _NO_ROWS if outside is None else outside,
                          state.raw, np.zeros(1, dtype=np.int64), out)
        return [_grown_tree(int(out[0][k]), *(a[k] for a in out[1:])) for k in range(K)]

    def _newton_tree(self, state: _TrainingState, k: int, indices, features, outside,
                     shrink: float, root, node_rng, quant_seed: int = 0,
                     grower: TreeGrower | None = None) -> Tree:
        """Grow output k's tree, set its Newton values and add it to the raw scores.

        ``root`` is the stage's shared root histograms (``TreeGrower.root_histograms``)
        or None; ``node_rng`` draws the tree's ``colsample_bynode`` seed and
        ``quant_seed`` is its seed of stochastic rounding (``use_quantized_grad``).
        ``grower``: the fit's (``state.grower``) by default, or a serial twin of it.
        """
        grower = state.grower if grower is None else grower
        grow_args = grower.kernel_arguments(state.gradient[k], state.hessian[k], indices,
                                            features, outside is None, root, k, node_rng,
                                            quant_seed)
        mds = self.max_delta_step
        bm = self.bin_mapper
        n, *arrays = grow_newton_tree(
            *grow_args, np.inf if mds is None else float(mds), float(shrink), bm.bin_edges_,
            bm.n_edges_, _NO_ROWS if outside is None else outside, state.raw[k])
        return _grown_tree(int(n), *arrays)

    def _leaf_values(self, grown: GrownTree, data: TrainingData, k: int, raw_k, indices,
                     context, leaf_starts=None, leaf_stops=None):
        """Every node's value before shrinkage: the loss's line search, then the caps.

        Newton leaves take -T(G) / (H + lambda) and are clipped to the grower's
        monotone bounds; a loss's own line search runs at the leaves, or under
        monotone constraints at every node, clipped top-down by the same rule on its
        own scale (``constraints.clip_line_search_values``). Then every value is
        finished as the fused kernel finishes its own (``_kernels.booster.finish_values``:
        the bounds, then ``max_delta_step``, a trust region for Newton steps on
        near-zero hessians, XGBoost's). ``data`` holds the stage's rows and weights,
        ``raw_k`` (1, n) output ``k``'s raw scores; ``leaf_starts`` / ``leaf_stops``
        (with ``indices``) give each leaf's rows where they are not ``grown``'s (rows
        gathered from the members of a collective).
        """
        gp, loss = self.params.grower, self.loss
        value = newton_leaf_value(grown.sum_g, grown.sum_h, gp.reg_lambda, gp.reg_alpha)
        lower = upper = _NO_BOUNDS
        if loss.newton_leaves:
            if grown.lower is not None:  # monotone constraints (treeboost.constraints)
                lower, upper = grown.lower, grown.upper
        elif grown.lower is not None:
            value[:] = loss.line_search(data, k, raw_k, indices, grown.starts, grown.stops,
                                        grown.sum_g, grown.sum_h, context, gp.reg_lambda,
                                        gp.reg_alpha)
            clip_line_search_values(value, grown.left, grown.right, grown.feature,
                                    self._monotone)
        else:
            if leaf_starts is None:
                leaf_starts, leaf_stops = grown.leaf_starts, grown.leaf_stops
            value[grown.leaf_nodes] = loss.line_search(
                data, k, raw_k, indices, leaf_starts, leaf_stops,
                grown.sum_g[grown.leaf_nodes], grown.sum_h[grown.leaf_nodes], context,
                gp.reg_lambda, gp.reg_alpha)
        mds = self.max_delta_step
        finish_values(value, np.ascontiguousarray(lower, dtype=np.float64),
                      np.ascontiguousarray(upper, dtype=np.float64),
                      np.inf if mds is None else float(mds))
        return value

    @property
    def _monotone(self) -> np.ndarray:
        gp = self.params.grower
        return monotone_array(gp.monotone_constraints, self.n_features)

    def _make_tree(self, grown: GrownTree, value: np.ndarray) -> Tree:
        """The tree of ``grown`` with node values ``value``; thresholds in raw units."""
        bm = self.bin_mapper
        threshold = np.empty(grown.left.size, dtype=np.float64)
        raw_thresholds(grown.feature, grown.bin_threshold, grown.left, grown.is_categorical,
                       bm.bin_edges_, bm.n_edges_, threshold)
        return Tree(feature=grown.feature, threshold=threshold,
                    bin_threshold=grown.bin_threshold, missing_left=grown.missing_left,
                    is_categorical=grown.is_categorical, cat_bitset=grown.cat_bitset,
                    left=grown.left, right=grown.right, value=value, gain=grown.gain,
                    count=grown.count, cover=grown.sum_h)

    def _scale_stages(self, stages, factor: float) -> None:
        """Multiply the values of every tree of ``stages`` by ``factor`` (DART, rf)."""
        for m in stages:
            for tree in self.trees[m]:
                tree.value[:] = tree.value * factor
        self._packed.clear()

    def truncate(self, n_stages: int) -> None:
        """Keep the first ``n_stages`` stages (early stopping keeps the best one).

        Parameters
        ----------
        n_stages : int
            In [0, number of stages].

        Raises
        ------
        RuntimeError
            While ``fit`` is growing stages (from a callback's ``before_training``
            or ``after_iteration``): the stages still to come would be fitted on
            the scores of the removed ones. ``after_training`` may truncate, as
            early stopping does.
        """
        if self._fitting:
            raise RuntimeError(
                f"truncate({n_stages!r}) was called during training, at stage "
                f"{len(self.trees)}: the next stages would be fitted to the scores of the "
                "removed ones. Stop training instead (after_iteration returns True) or "
                "truncate in after_training or after fit")
        n_stages = check_stage_count(n_stages, len(self.trees))
        n_before = len(self.trees)
        del self.trees[n_stages:]
        del self.stage_weights[n_stages:]
        self.mode.truncate(self, n_before)
        self._packed.clear()

    # ---- prediction --------------------------------------------------------------
    def _pack(self, start: int, stop: int) -> PackedTrees:
        """The trees of stages ``start:stop``, packed for prediction."""
        trees = [t for stage in self.trees[start:stop] for t in stage]
        outputs = [k for stage in self.trees[start:stop] for k in range(len(stage))]
        return PackedTrees(trees, outputs, self.bin_mapper)

    def _packed_trees(self, start: int, stop: int) -> PackedTrees:
        key = (start, stop)
        if key not in self._packed:
            self._packed[key] = self._pack(start, stop)
        return self._packed[key]

    def _check_X(self, X):
        """X checked against the training data's features, as the kernels read it.

        The estimators' check (``_input.check_predict_X``), without their warnings
        about names and with 0 rows allowed.
        """
        return check_predict_X(X, n_features=self.n_features, feature_names=self.feature_names,
                               pandas_categories=self.pandas_categories)

    def predict_raw(self, X, n_stages: int | None = None, *,
                    iteration_range: tuple[int, int] | None = None) -> np.ndarray:
        """Raw scores F(x) of shape (n_samples, n_outputs).

        Parameters
        ----------
        X : {array-like, sparse matrix, data frame} of shape (n_samples, n_features)
            Input data (NaN for missing), checked as the estimators check it
            (``_input.check_predict_X``): the model's width; a frame's string
            column names, in order; categorical columns read by label, and no
            plain array for a model trained with them. float16 and ints are
            read as float64; infinity is refused; 0 rows give 0 scores.
        n_stages : int, default=None
            Use only the first ``n_stages`` stages, an int in [0, number of
            stages] (0: F0 alone); None uses them all. A forest
            (``boosting="rf"``) is then the mean of its first ``n_stages``
            trees. ``n_stages=k`` (k >= 1) is ``iteration_range=(0, k)``.
        iteration_range : tuple of (int, int), default=None
            Use only the stages ``[start, stop)`` (XGBoost's parameter; ``stop``
            = 0 means to the last stage, ``predictor.check_iteration_range``): the
            sum of their trees, plus F0 only when ``start`` is 0, so that
            consecutive ranges add up to the model. A forest is the mean of
            those stages' trees. The predictions of ``self[start:stop]``. Not
            with ``n_stages``.

            .. versionadded:: 0.1.0

        Returns
        -------
        ndarray of shape (n_samples, n_outputs)
        """
        start, stop = self._stage_range(n_stages, iteration_range)
        return self._predict_raw(self._check_X(X), stop, start)

    def _stage_range(self, n_stages, iteration_range) -> tuple[int, int]:
        """The stages [start, stop) that ``n_stages`` or ``iteration_range`` select."""
        if n_stages is not None and iteration_range is not None:
            raise ValueError(f"n_stages={n_stages!r} and iteration_range={iteration_range!r} "
                             "were both given: n_stages=k is iteration_range=(0, k), give one")
        if n_stages is not None:
            return 0, check_stage_count(n_stages, len(self.trees))
        return check_iteration_range(iteration_range, len(self.trees))

    def _predict_raw(self, X, stop: int, start: int = 0) -> np.ndarray:
        """``predict_raw`` of the stages ``start:stop`` on X checked by ``_check_X``."""
        init = self.init_score if start == 0 else np.zeros_like(self.init_score)
        out = np.repeat(init[None, :], X.shape[0], axis=0)
        factor = self.mode.stage_mean_factor(len(self.trees), stop - start)
        if factor is not None and stop - start < len(self.trees):
            out = self._packed_trees(start, stop).add_raw(X, np.zeros_like(out))
            return init[None, :] + out * factor
        return self._packed_trees(start, stop).add_raw(X, out)

    def predict_leaf(self, X, *, iteration_range: tuple[int, int] | None = None
                     ) -> np.ndarray:
        """The leaf every row reaches in every tree (XGBoost's ``pred_leaf``).

        .. versionadded:: 0.1.0

        Parameters
        ----------
        X : {array-like, sparse matrix, data frame} of shape (n_samples, n_features)
            Input data, checked as ``predict_raw`` checks it.
        iteration_range : tuple of (int, int), default=None
            Only the trees of the stages ``[start, stop)``, as ``predict_raw``.

        Returns
        -------
        ndarray of int32 of shape (n_samples, n_stages * n_outputs)
            Column ``(m - start) * n_outputs + k`` is the leaf of tree
            ``trees[m][k]`` (stage-major, XGBoost's and LightGBM's order). A
            leaf is its node index in that tree's arrays (node 0 the root), so
            ``trees[m][k].value[leaf]`` is what the tree adds to output k, and
            F0 plus the sum of these values over the columns of output k is
            ``predict_raw`` (for a forest, times the ``rf`` mean's factor).
            Rows route exactly as in ``predict_raw``.
        """
        start, stop = check_iteration_range(iteration_range, len(self.trees))
        return self._packed_trees(start, stop).leaves(self._check_X(X))

    def predict_contribs(self, X, *, iteration_range: tuple[int, int] | None = None
                         ) -> np.ndarray:
        """Exact TreeSHAP feature contributions (``explain.shap_values``).

        .. versionadded:: 0.1.0

        Parameters
        ----------
        X : {array-like, sparse matrix, data frame} of shape (n_samples, n_features)
            Input data, checked as ``predict_raw`` checks it.
        iteration_range : tuple of (int, int), default=None
            Explain ``predict_raw(X, iteration_range=...)``: the contributions of
            ``self[start:stop]``.

        Returns
        -------
        ndarray of shape (n_samples, n_outputs, n_features + 1)
            Column j < n_features is feature j's contribution to output k, the
            last the bias; each row sums to ``predict_raw``'s score of output k.
        """
        from .explain import shap_values

        return shap_values(ranged_booster(self, iteration_range), self._check_X(X))

    def predict_interactions(self, X, *, iteration_range: tuple[int, int] | None = None
                             ) -> np.ndarray:
        """SHAP interaction values (``explain.shap_interaction_values``).

        .. versionadded:: 0.1.0

        Parameters
        ----------
        X : {array-like, sparse matrix, data frame} of shape (n_samples, n_features)
            Input data, checked as ``predict_raw`` checks it.
        iteration_range : tuple of (int, int), default=None
            Explain ``predict_raw(X, iteration_range=...)``: the interactions of
            ``self[start:stop]``.

        Returns
        -------
        ndarray of shape (n_samples, n_outputs, n_features + 1, n_features + 1)
            Symmetric in its last two axes; row j < n_features sums to
            ``predict_contribs``'s column j, the bias alone at the last corner,
            and each output's matrix sums to ``predict_raw``'s score.
        """
        from .explain import shap_interaction_values

        return shap_interaction_values(ranged_booster(self, iteration_range),
                                       self._check_X(X))

    def __getitem__(self, key) -> Booster:
        """A new Booster of some stages: ``booster[a:b]``, ``booster[i]``, ``booster[...]``.

        XGBoost's ``Booster`` slicing (``predictor.stage_slice``): an int ``i`` is
        ``i:i+1``; ``...`` is every stage; negative indices, a stop past the last
        stage, an empty slice and a step other than 1 are refused. The new
        Booster predicts ``predict_raw(X, iteration_range=(a, b))``: F0 only when
        ``a`` is 0 (else 0). This Booster is not changed; the trees are copies
        (``predictor.slice_booster``).

        .. versionadded:: 0.1.0

        Parameters
        ----------
        key : int, slice or Ellipsis
            The stages to keep.

        Returns
        -------
        Booster
        """
        return slice_booster(self, *stage_slice(key, len(self.trees)))

    def staged_predict_raw(self, X, stages=None):
        """Raw scores (shape (n_samples, n_outputs)) after the given stages, one at a time.

        X and ``stages`` are checked at the call, not at the first stage.

        Parameters
        ----------
        X : {array-like, sparse matrix, data frame} of shape (n_samples, n_features)
            Input data, as for ``predict_raw``.
        stages : iterable of int, default=None
            Strictly increasing stage counts in [0, number of stages] to yield
            at (0: F0 alone); None yields after every stage. The trees between
            two yields are traversed together, so reading a few stages costs
            one prediction.

        Returns
        -------
        generator of ndarray of shape (n_samples, n_outputs)
        """
        return self._staged_predict_raw(self._check_X(X),
                                        check_stages(stages, len(self.trees)))

    def _staged_predict_raw(self, X, stages: list[int]):
        """``staged_predict_raw`` on X checked by ``_check_X`` at checked ``stages``."""
        if issparse(X):  # once, not at every stage's add_raw
            X = canonical_sparse(X, "csr")
        out = np.repeat(self.init_score[None, :], X.shape[0], axis=0)
        mode, n_stages = self.mode, len(self.trees)
        done = 0
        for stop in stages:
            self._pack(done, stop).add_raw(X, out)
            done = stop
            factor = mode.stage_mean_factor(n_stages, stop)
            if factor is not None:  # rf: the mean of the first stop stages
                init = self.init_score[None, :]
                yield init + (out - init) * factor
            else:
                yield out.copy()

    def feature_importances(self, importance_type: str = _params.default("importance_type")
                            ) -> np.ndarray:
        """Importance of every feature over the splits of every tree, not normalised.

        Parameters
        ----------
        importance_type : {"split", "gain", "total_gain", "cover", "total_cover"}, \
default="gain"
            XGBoost's names: "split" (XGBoost's "weight") the number of splits on
            the feature; "total_gain" the sum of their gains; "total_cover" the
            sum of their covers (sum of hessians of the training rows reaching
            the split, ``Tree.cover``); "cover" the mean cover per split.
            "gain" is treeboost's and LightGBM's: the total gain, the same as
            "total_gain" (XGBoost's "gain" is the mean gain per split: divide
            "total_gain" by "split").

            .. versionchanged:: 0.1.0
               "total_gain", "cover" and "total_cover"; unknown names refused.

        Returns
        -------
        ndarray of shape (n_features,)
            0 for a feature no tree splits on.
        """
        _params.validate({"importance_type": importance_type}, "regressor")  # every scope's
        kind = importance_type.replace("total_", "")
        out = np.zeros(self.n_features, dtype=np.float64)
        count = np.zeros(self.n_features, dtype=np.float64)
        for stage in self.trees:
            for tree in stage:
                internal = tree.left >= 0
                np.add.at(count, tree.feature[internal], 1.0)
                if kind != "split":
                    np.add.at(out, tree.feature[internal], getattr(tree, kind)[internal])
        if kind == "split":
            return count
        return np.divide(out, count, out=out, where=count > 0) \
            if importance_type == "cover" else out


_NO_ROWS = np.zeros(0, dtype=INDEX_DTYPE)
#: the node bounds of a tree without monotone constraints (``finish_values``)
_NO_BOUNDS = np.zeros(0, dtype=np.float64)


def _grown_tree(n: int, feature, threshold, bin_threshold, missing_left, is_categorical,
                cat_bitset, left, right, value, gain, count, cover) -> Tree:
    """The ``Tree`` of a grown tree's first n nodes, from the node arrays a kernel filled."""
    return Tree(feature=feature[:n], threshold=threshold[:n], bin_threshold=bin_threshold[:n],
                missing_left=missing_left[:n], is_categorical=is_categorical[:n],
                cat_bitset=cat_bitset[:n], left=left[:n], right=right[:n], value=value[:n],
                gain=gain[:n], count=count[:n], cover=cover[:n])


def _stage_tree_buffers(n_outputs: int, capacity: int) -> tuple:
    """``grow_newton_trees``' ``out``: each output's node count, then its node arrays."""
    shape = (n_outputs, capacity)
    return (np.zeros(n_outputs, dtype=np.int64), np.empty(shape, dtype=np.int32),
            np.empty(shape, dtype=np.float64), np.empty(shape, dtype=np.int32),
            np.empty(shape, dtype=np.uint8), np.empty(shape, dtype=np.uint8),
            np.empty(shape + (BITSET_WORDS,), dtype=np.uint32),
            np.empty(shape, dtype=np.int32), np.empty(shape, dtype=np.int32),
            np.empty(shape, dtype=np.float64), np.empty(shape, dtype=np.float64),
            np.empty(shape, dtype=np.int64), np.empty(shape, dtype=np.float64))
