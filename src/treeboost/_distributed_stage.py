"""Training over a ``Collective``: what it supports, and what its members exchange.

``Booster.fit`` with ``collective=`` calls these: ``check_distributed`` refuses
what is not supported yet; the others gather, over the members in rank order,
what one process training on all their rows would read: F0's labels and
weights, the evaluated data sets, and each leaf's rows for an exact line search.
"""

from __future__ import annotations

import numpy as np

from .binning import SparseBinned
from .grower import GrownTree
from .modes import BoostingMode, row_sampler
from .sampling import GossSampler


def check_distributed(booster, eval_sets, init_raw, group_offsets, X_binned) -> None:
    """Refuse, with the reason, what training over a ``Collective`` does not do yet.

    Supported: gbdt with or without ``subsample`` (the rows of all the members taken
    in rank order, as one process would draw them), dense data, the losses whose
    gradients are row by row or take a stage context of every row (Huber's delta,
    from every member's rows gathered every stage) (F0 from sums where
    ``Loss.init_statistics`` gives them,
    else from every member's labels and weights, gathered once; line-search leaves,
    such as medians and quantiles, from each leaf's rows of every member, gathered for
    every tree), ranking over query groups that each lie whole in one member (but
    ``rank_xendcg``, whose draws would be per member), every tree and column-sampling
    parameter but ``colsample_bynode``, and
    validation sets (each member holds some of their rows; the metrics are evaluated
    on the rows of all the members, gathered in rank order).

    ``booster`` is the ``Booster`` about to train (``Booster.fit`` calls this).
    """
    p = booster.params
    refused = []
    if X_binned is None or isinstance(X_binned, SparseBinned):
        refused.append("sparse data")
    # gradient boosting over all the rows or a subsample: the plain mode and sampler
    if type(booster.mode) is not BoostingMode or isinstance(row_sampler(p), GossSampler):
        refused.append(f"boosting={p.boosting!r}")
    if p.grower.colsample_bynode < 1.0:
        refused.append("colsample_bynode < 1")
    if p.grower.monotone_constraints is not None:
        refused.append("monotone_constraints")
    if p.grower.interaction_constraints is not None:
        refused.append("interaction_constraints")
    if booster.loss.needs_rng:
        refused.append(f"loss {booster.loss.name!r} (its draws are made per member)")
    if booster.loss.name == "aft":
        refused.append("loss 'aft' (labels of two bounds a row)")
    if booster.loss.task == "regression" and booster.loss.n_outputs > 1:
        refused.append("several targets (a 2-D y) or several quantile levels")
    if init_raw is not None:
        refused.append("init_score")
    if booster.trees:
        refused.append("continued training")
    if refused:
        raise ValueError("training over a collective does not support "
                         f"{', '.join(refused)} yet")


def _gather_leaf_rows(collective, grown: GrownTree, y, raw_k, sample_weight, indices):
    """(y, raw (1, n), weights, row indices, leaf starts, leaf stops) of every leaf's rows
    over the members of ``collective``: each leaf's rows of member 0, then of member 1,
    ... (the rows of one process in row order, when the members hold consecutive blocks
    of rows in rank order). One allgather; what an exact line search reads."""
    rows = [indices[a:b] for a, b in zip(grown.leaf_starts, grown.leaf_stops, strict=True)]
    counts = np.array([r.size for r in rows], dtype=np.int64)
    mine = np.concatenate(rows) if rows else np.empty(0, dtype=indices.dtype)
    parts = collective.allgather((counts, y[mine], raw_k[mine], sample_weight[mine]))
    pieces: list[list] = [[], [], []]
    for j in range(counts.size):
        for member_counts, *columns in parts:
            a = int(member_counts[:j].sum())
            b = a + int(member_counts[j])
            for piece, column in zip(pieces, columns, strict=True):
                piece.append(column[a:b])
    y_all, raw_all, w_all = (np.concatenate(p) if p else np.empty(0) for p in pieces)
    sizes = np.sum([c for c, *_ in parts], axis=0)
    stops = np.cumsum(sizes)
    return (y_all, raw_all[None, :], w_all, np.arange(y_all.size), stops - sizes, stops)


def _gather_columns(collective, arrays: list) -> list:
    """Each array of ``arrays`` joined along its last axis (rows) over the group's
    members, in rank order: one allgather for all of them."""
    parts = collective.allgather([np.ascontiguousarray(a) for a in arrays])
    return [np.concatenate([member[j] for member in parts], axis=-1)
            for j in range(len(arrays))]



def _distributed_init_score(loss, y, sample_weight, collective):
    """F0 of the rows of every member of ``collective`` (``Booster.fit``).

    From the members' summed statistics where the loss gives them
    (``Loss.init_statistics``), else from every member's labels and weights.
    """
    stats = loss.init_statistics(y, sample_weight)
    if stats is not None:
        stats = np.ascontiguousarray(stats, dtype=np.float64)
        collective.allreduce_sum(stats)
        return loss.init_from_statistics(stats)
    # a median, a numeric minimum: of every row, in rank order
    return loss.init_score(*_gather_columns(collective, [y, sample_weight]))


def _gather_eval_data(collective, data: list) -> list:
    """``Booster.fit``'s evaluated data sets with the rows of every member.

    ``data`` holds ``(index, name, y, weights, group offsets or None)`` of each set;
    raise ``ValueError`` if the members evaluate different sets.
    """
    layouts = collective.allgather([d[1] for d in data])
    if any(layout != layouts[0] for layout in layouts):
        raise ValueError("the members of a collective evaluate different data "
                         f"sets (by rank: {layouts}); every member passes the "
                         "same valid sets (its own rows of each, maybe none)")
    if not data:
        return data
    # a metric is a function of every row: each member evaluates the rows of
    # all the members (in rank order, as one process holds them), so the log,
    # and early stopping's decision, are the same everywhere
    ys = _gather_columns(collective, [d[2] for d in data])
    ws = _gather_columns(collective, [d[3] for d in data])
    # query groups (ranking): each member's whole queries, in rank order
    sizes = _gather_columns(collective, [np.zeros(0, np.int64) if d[4] is None
                                         else np.diff(d[4]) for d in data])
    return [(i, name, y_i, w_i, None if groups is None else np.concatenate(
                ([0], np.cumsum(size_i))).astype(np.int64))
            for (i, name, _, _, groups), y_i, w_i, size_i
            in zip(data, ys, ws, sizes, strict=True)]
