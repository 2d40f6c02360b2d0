"""The per-node state of monotone and interaction constraints (records.Constraints).

Only compiled when a tree has constraints: each node's value bounds, the interaction
sets still open to its path, the features they allow, and how a split narrows them for
its children (and, for the "intermediate" method, for the leaves across the split).
The grower (grower.grow_tree) calls these; a leaf searched again after its bounds
tightened is the grower's (grower._reconsider).
"""

import numpy as np

from ._jit import kernel
from .records import NodeState
from .splitting import clipped_value


@kernel
def _node_state(capacity, n_features, constraints):
    """The per-node constrained state (root: no bounds, every set open), or None."""
    if constraints is None:
        return None
    else:
        n_sets = constraints.sets.shape[0]
        lower = np.empty(capacity, dtype=np.float64)
        upper = np.empty(capacity, dtype=np.float64)
        sets = np.empty((capacity, n_sets), dtype=np.uint8)
        parent = np.empty(capacity, dtype=np.int64)
        changed = np.empty(capacity + 1, dtype=np.int64)
        changed[0] = 0
        for j in range(capacity):
            lower[j] = -np.inf
            upper[j] = np.inf
            parent[j] = -1
            for s in range(n_sets):
                sets[j, s] = 1
        return NodeState(lower, upper, sets, np.empty(n_features, dtype=np.int32), parent,
                         changed, np.empty(capacity, dtype=np.int64))


@kernel
def _allowed_features(features, node, state, member):
    """The features ``node`` may split on: those of an interaction set its path allows.

    A set is open to a node while it holds every feature split on above it;
    the node may use the union of its open sets (LightGBM's and XGBoost's rule).
    """
    # member: uint8 (n_sets, n_features), Constraints.sets     # IN
    m = 0
    for k in range(features.shape[0]):
        f = features[k]
        for s in range(member.shape[0]):
            if state.sets[node, s] and member[s, f]:
                state.features[m] = f
                m += 1
                break
    return state.features[:m]


@kernel
def _constrain_children(nodes, node, lc, rc, f, left, right, split, constraints):
    """The children's bounds and open interaction sets after ``node`` splits on ``f``.

    "basic": on a monotone feature the children meet at the mean of their
    clipped values. "intermediate" (after LightGBM's): the left child is bounded
    by the right one's value and the reverse, and every leaf across an ancestor's
    monotone split from the new leaves has its bound moved past their values
    (listed in ``state.changed`` to search its split again). LightGBM also skips
    leaves whose regions cannot touch the new ones; here every leaf across the
    split counts, which constrains more but needs no regions.
    """
    state = nodes.constrained
    lower = state.lower[node]
    upper = state.upper[node]
    state.lower[lc] = lower
    state.upper[lc] = upper
    state.lower[rc] = lower
    state.upper[rc] = upper
    state.parent[lc] = node
    state.parent[rc] = node
    gl = nodes.split_gl[node]
    hl = nodes.split_hl[node]
    wl = clipped_value(gl, hl, split.reg_lambda, split.reg_alpha, lower, upper)
    wr = clipped_value(nodes.sum_g[node] - gl, nodes.sum_h[node] - hl, split.reg_lambda,
                       split.reg_alpha, lower, upper)
    direction = constraints.monotone[f]
    if direction != 0:
        # basic: both sides of the mean; intermediate: each side of the other's value
        low, high = (0.5 * (wl + wr), 0.5 * (wl + wr)) if constraints.method == 0 else (wl, wr)
        if direction > 0:
            state.upper[lc] = high
            state.lower[rc] = low
        else:
            state.lower[lc] = high
            state.upper[rc] = low
    member = constraints.sets
    for s in range(member.shape[0]):
        is_open = state.sets[node, s] & member[s, f]
        state.sets[lc, s] = is_open
        state.sets[rc, s] = is_open
    state.changed[0] = 0
    if constraints.method == 1:
        _tighten_across(state, node, min(wl, wr), max(wl, wr), left, right, nodes.split_feature,
                        constraints.monotone)


@kernel
def _tighten_across(state, node, low, high, left, right, split_feature, monotone):
    """Bound the leaves across each monotone ancestor split by the new values [low, high]."""
    child = node
    a = state.parent[node]
    while a >= 0:
        direction = monotone[split_feature[a]]
        if direction != 0:
            on_left = left[a] == child
            other = right[a] if on_left else left[a]
            # the new leaves are on the low side of a: the other side's leaves stay above
            above = (direction > 0) == on_left
            top = 0
            state.stack[top] = other
            top += 1
            while top > 0:
                top -= 1
                j = state.stack[top]
                if left[j] >= 0:
                    state.stack[top] = left[j]
                    state.stack[top + 1] = right[j]
                    top += 2
                    continue
                if above and high > state.lower[j]:
                    state.lower[j] = high
                elif not above and low < state.upper[j]:
                    state.upper[j] = low
                else:
                    continue
                n = state.changed[0]
                seen = False
                for q in range(1, n + 1):
                    seen = seen or state.changed[q] == j
                if not seen:
                    state.changed[n + 1] = j
                    state.changed[0] = n + 1
        child = a
        a = state.parent[a]
