"""A stage of ``multi_strategy="multi_output_tree"``: one tree grown for every output.

``Booster._stage`` hands a stage here when its loss asks for one tree of several
outputs (``PerOutput.multi_output_tree``). The tree is grown once
(``TreeGrower.grow_multi``: the split gain summed over the outputs); each output
then gets its leaf values from its own loss's line search on its own gradient sums
(Newton: -T(G_k)/(H + lambda)), finished and shrunk as any tree
(``Booster._leaf_values``, ``_make_tree``). The result is stored as n_outputs
ordinary trees with the same splits, ``trees[m][k]`` output k's, so that
prediction, SHAP, the model file, plots and exporters read it unchanged.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ._stage_state import _trace_record


def grow_multi_output_stage(booster, state, m: int, at: np.ndarray, context, sample,
                            features: np.ndarray, shrink: float, node_rng,
                            traced=None) -> list:
    """Stage m's tree of every output: grown once, valued per output, added to the scores.

    Parameters
    ----------
    booster : Booster
        The booster being fitted.
    state : _TrainingState
        The fit's scores, gradients (every output's, the stage's sample weighted) and grower.
    m : int
        The stage (0-based).
    at : ndarray of shape (n_outputs, n_samples)
        The raw scores the gradients were computed at.
    context : object
        The loss's stage context (``_TrainingState.gradients``).
    sample : sampling.StageRows
        The stage's rows, the rows outside it, and their weights.
    features : ndarray of shape (n_used,), dtype int32
        The stage's features.
    shrink : float
        The stage's shrinkage.
    node_rng : numpy.random.Generator or None
        The source of the tree's ``colsample_bynode`` seed.
    traced : tuple, default=None
        ``(trace, residual, hessian, row_factor, dropped)`` with ``trace=True``: one
        record per output is appended to ``trace``.

    Returns
    -------
    list of Tree
        One per output, sharing every split.
    """
    rows, outside = sample.rows, sample.outside
    indices = rows.copy()
    gradient = np.ascontiguousarray(state.gradient)
    # every output's hessian is the row weight (check_multi_output_tree): output 0's serves
    grown, sums = state.grower.grow_multi(gradient, state.hessian[0], indices, features,
                                          node_rng, all_rows=outside is None)
    data = state.stage_data.with_weight(sample.weight)
    stage = []
    for k in range(booster.n_outputs):
        # each output's tree its own arrays: a tree's values are scaled in place (DART, rf)
        mine = replace(grown, **{name: getattr(grown, name).copy() for name in (
            "feature", "bin_threshold", "missing_left", "is_categorical", "cat_bitset", "left",
            "right", "gain", "count", "sum_h")}, sum_g=np.ascontiguousarray(sums[:, k]))
        gamma = booster._leaf_values(mine, data, k, at[k:k + 1], indices, context)
        tree = booster._make_tree(mine, shrink * gamma)
        if traced is not None:
            trace, residual, hessian, row_factor, dropped = traced
            trace.append(_trace_record(m, k, at[k], residual, hessian, state, mine, indices,
                                       gamma, shrink, tree, row_factor, dropped))
        state.add_tree(tree, k, indices, mine, outside)
        state.check_tree(tree, m, k, float(sums[0, k]))
        stage.append(tree)
    return stage
