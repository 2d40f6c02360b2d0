"""Monotone and interaction constraints: from the parameters to the grower's record.

``monotone_constraints`` gives each feature a direction (-1 decreasing, 0
none, +1 increasing), as a list of one entry per feature or a dict by
feature index or, for data frames fitted through the estimators, by column
name. ``interaction_constraints`` is a list of feature sets (indices or
names): the features split on along one root-to-leaf path must all lie in
one set. As in LightGBM, a feature listed in no set is never split on (XGBoost
lets the root use it and then only it below).

The tree kernel (``_kernels.grower``) keeps every node's value in [lower,
upper] and returns those bounds; Newton leaves are clipped to them. Method
"basic" (LightGBM's) bounds the two children of a monotone split at the mean
of their values; "intermediate" bounds each by the other's value and, as the
tree grows, moves the bounds of the leaves across every monotone ancestor
split past the new leaves' values (LightGBM's intermediate method, except that
every leaf across the split counts, not only those whose regions touch).
Leaves set by a loss's own line search (median, quantile, Huber) live on
another scale than the Newton values the bounds come from (an absolute-error
leaf's Newton value is a mean of signs, in [-1, 1]), so for them
``clip_line_search_values`` applies the basic rule again top-down on the
line-search values of the nodes (whatever the method): the split structure is
the constrained one, and every leaf under the left child of an increasing
split ends at or below every leaf under its right child.

``interaction_constraints=[]`` (no set) means no constraint, as in LightGBM, not "no
feature may be split on": ``train`` reads it as None.

A model continued (``init_model``, ``warm_start``) under constraints its earlier
stages were not grown under would claim them and break them: ``check_earlier_trees``
refuses that unless the earlier trees already meet them (every split on a monotone
feature has all its leaves on the lower side at or below, for an increasing constraint,
all those on the upper side, and every root-to-leaf path lies in one set).

Missing values: a split sends them to one side, learned per split, so a row
with a missing constrained feature is predicted as some value the model
gives, with no order relative to the rows that have the feature; the
monotonicity holds along the non-missing values.
"""

from __future__ import annotations

import numbers

import numpy as np

from ._kernels.records import Constraints

MONOTONE_METHODS = ("basic", "intermediate")


def check_monotone(value) -> bool:
    """Whether ``value`` has the form of ``monotone_constraints`` (None, list or dict)."""
    if value is None:
        return True
    items = list(value.values()) if isinstance(value, dict) else value
    if isinstance(items, (str, bytes)) or not hasattr(items, "__iter__"):
        return False
    if isinstance(value, dict) and not all(
            isinstance(k, (str, numbers.Integral)) and not isinstance(k, bool) for k in value):
        return False
    return all(isinstance(v, numbers.Integral) and not isinstance(v, bool) and v in (-1, 0, 1)
               for v in items)


def check_interaction(value) -> bool:
    """Whether ``value`` has the form of ``interaction_constraints`` (None or list of sets)."""
    if value is None:
        return True
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
        return False
    for group in value:
        if isinstance(group, (str, bytes, dict)) or not hasattr(group, "__iter__"):
            return False
        if not all(isinstance(f, str) or (isinstance(f, numbers.Integral)
                                          and not isinstance(f, bool)) for f in group):
            return False
    return True


def _index(key, n_features: int, names, what: str) -> int:
    """A feature's index from an index or a name."""
    if isinstance(key, str):
        if names is not None and key in names:
            return names.index(key)
        if names is None and key.isdigit():  # an index-keyed dict read back from JSON
            return _index(int(key), n_features, names, what)
        raise ValueError(f"{what} names feature {key!r}, which is not "
                         + ("a column of X" if names is not None else
                            "an index (names need a data frame fitted by an estimator)"))
    if not 0 <= int(key) < n_features:
        raise ValueError(f"{what} has feature index {key!r}, out of range for "
                         f"{n_features} features")
    return int(key)


def monotone_array(value, n_features: int, names=None) -> np.ndarray:
    """``monotone_constraints`` as int8 of shape (n_features,)."""
    out = np.zeros(n_features, dtype=np.int8)
    if value is None:
        return out
    if isinstance(value, dict):
        for key, direction in value.items():
            out[_index(key, n_features, names, "monotone_constraints")] = direction
        return out
    value = list(value)
    if len(value) != n_features:
        raise ValueError(f"monotone_constraints has {len(value)} entries but X has "
                         f"{n_features} features")
    out[:] = value
    return out


def interaction_sets(value, n_features: int, names=None) -> list[list[int]]:
    """``interaction_constraints`` as sorted lists of feature indices."""
    return [sorted({_index(f, n_features, names, "interaction_constraints") for f in group})
            for group in value]


def by_index(values: dict, names) -> dict:
    """``values`` with the constraint parameters' feature names turned into indices.

    The estimators call this with their ``feature_names_in_`` (None without a
    frame) before handing the parameters to ``train``, whose ``Dataset`` has
    no column names.
    """
    names = None if names is None else [str(n) for n in names]
    out = dict(values)
    mono = values.get("monotone_constraints")
    if isinstance(mono, dict):
        n = len(names) if names is not None else max(
            [int(k) + 1 for k in mono if not isinstance(k, str) or k.isdigit()], default=0)
        out["monotone_constraints"] = {
            _index(k, n, names, "monotone_constraints"): v for k, v in mono.items()}
    sets = values.get("interaction_constraints")
    if sets is not None and names is not None:
        out["interaction_constraints"] = [
            [names.index(f) if isinstance(f, str) and f in names else f for f in group]
            for group in sets]
    return out


def no_constraint(interaction) -> bool:
    """Whether ``interaction_constraints`` constrains nothing: None or no set at all
    (LightGBM reads ``[]`` as no constraint)."""
    return interaction is None or len(list(interaction)) == 0


def constraints_record(monotone, interaction, method: str, is_categorical) -> Constraints | None:
    """The grower's ``Constraints`` record, or None when nothing is constrained.

    Raises ``ValueError`` for a monotone categorical feature (categories have
    no order to be monotone in).
    """
    n_features = int(np.asarray(is_categorical).size)
    mono = monotone_array(monotone, n_features)
    if no_constraint(interaction):
        interaction = None
    if interaction is None and not mono.any():
        return None
    bad = np.flatnonzero(mono.astype(bool) & np.asarray(is_categorical, dtype=bool))
    if bad.size:
        raise ValueError(f"monotone_constraints constrains categorical feature(s) "
                         f"{bad.tolist()}: a categorical feature has no order to be "
                         "monotone in; set their entries to 0")
    if interaction is None:  # one set of every feature: no restriction
        sets = np.ones((1, n_features), dtype=np.uint8)
    else:
        groups = interaction_sets(interaction, n_features)
        sets = np.zeros((max(1, len(groups)), n_features), dtype=np.uint8)
        for s, group in enumerate(groups):
            sets[s, group] = 1
    return Constraints(mono, sets, MONOTONE_METHODS.index(method))


def clip_line_search_values(value: np.ndarray, left: np.ndarray, right: np.ndarray,
                            feature: np.ndarray, monotone: np.ndarray) -> None:
    """Clip node values in place to bounds derived top-down from the values themselves.

    ``value`` holds every node's line-search value (internal nodes too). The
    rule is the kernel's "basic" one: children inherit their parent's bounds,
    and under a split on a monotone feature the two children's clipped values
    meet at their mean, which becomes the bound between them.
    """
    n = value.size
    lower = np.full(n, -np.inf)
    upper = np.full(n, np.inf)
    for node in range(n):  # children have larger ids than their parent
        value[node] = min(max(value[node], lower[node]), upper[node])
        lc, rc = left[node], right[node]
        if lc < 0:
            continue
        lower[lc] = lower[rc] = lower[node]
        upper[lc] = upper[rc] = upper[node]
        direction = monotone[feature[node]]
        if direction != 0:
            wl = min(max(value[lc], lower[node]), upper[node])
            wr = min(max(value[rc], lower[node]), upper[node])
            mid = 0.5 * (wl + wr)
            if direction > 0:
                upper[lc] = lower[rc] = mid
            else:
                lower[lc] = upper[rc] = mid


def _feature(f: int, names) -> str:
    return f"feature {f}" + (f" ({names[f]!r})" if names is not None else "")


def _subtree_ranges(tree) -> tuple[np.ndarray, np.ndarray]:
    """(lowest, highest) leaf value under every node of ``tree``."""
    lo = np.asarray(tree.value, dtype=np.float64).copy()
    hi = lo.copy()
    left, right = tree.left, tree.right
    for node in range(tree.n_nodes - 1, -1, -1):  # children come after their parent
        lc = left[node]
        if lc >= 0:
            rc = right[node]
            lo[node] = min(lo[lc], lo[rc])
            hi[node] = max(hi[lc], hi[rc])
    return lo, hi


def _monotone_break(tree, mono: np.ndarray):
    """(node, lowest leaf above it, highest below) of the first split of ``tree`` on a
    monotone feature whose leaves are out of order, or None."""
    split = np.flatnonzero((tree.left >= 0) & (tree.is_categorical == 0))
    split = split[mono[tree.feature[split]] != 0]
    if split.size == 0:
        return None
    lo, hi = _subtree_ranges(tree)
    for node in split:
        lc, rc = tree.left[node], tree.right[node]
        if mono[tree.feature[node]] > 0 and hi[lc] > lo[rc]:
            return int(node), hi[lc], lo[rc]
        if mono[tree.feature[node]] < 0 and lo[lc] < hi[rc]:
            return int(node), lo[lc], hi[rc]
    return None


def _path_outside(tree, sets: list[set]):
    """The features of the first root-to-leaf path of ``tree`` in no one of ``sets``, or None."""
    paths: list = [frozenset()] * tree.n_nodes
    for node in range(tree.n_nodes):  # children come after their parent
        lc = tree.left[node]
        if lc < 0:
            if not any(paths[node] <= s for s in sets):
                return sorted(paths[node])
            continue
        paths[lc] = paths[tree.right[node]] = paths[node] | {int(tree.feature[node])}
    return None


def check_earlier_trees(trees, monotone, interaction, n_features: int, what: str,
                        names=None) -> None:
    """Refuse constraints that the trees of a model to continue do not meet.

    Continuing a model adds stages grown under the constraints; the earlier ones must
    meet them already, or the model would claim constraints it breaks. Checked per
    tree, which is sufficient (a sum of monotone trees is monotone; a path in one set
    stays in it): for a monotone feature, every split on it has each leaf under its
    lower side at or below (increasing) or at or above (decreasing) each leaf under its
    upper side; for interaction sets, every root-to-leaf path uses the features of one
    set.

    Parameters
    ----------
    trees : list of list of Tree
        The stages of the model to continue.
    monotone, interaction : object
        The ``monotone_constraints`` and ``interaction_constraints`` of the new stages,
        by feature index.
    n_features : int
        Number of features.
    what : str
        How the caller names the model ("init_model", "warm_start").
    names : list of str, default=None
        Feature names, for the message.

    Raises
    ------
    ValueError
        Naming the parameter, the stage and the feature(s) of the first tree that
        breaks a constraint.
    """
    mono = monotone_array(monotone, n_features)
    sets = None if no_constraint(interaction) else [
        set(group) for group in interaction_sets(interaction, n_features)]
    if not trees or (not mono.any() and sets is None):
        return
    advice = (f"the earlier stages of {what} were not grown under it, and the continued "
              "model would claim it and break it: train a new model under the constraint, "
              "or continue without it")
    for m, stage in enumerate(trees):
        for k, tree in enumerate(stage):
            where = f"stage {m + 1}" + (f" (output {k})" if len(stage) > 1 else "")
            if mono.any():
                found = _monotone_break(tree, mono)
                if found is not None:
                    node, a, b = found
                    f = int(tree.feature[node])
                    way = "increasing" if mono[f] > 0 else "decreasing"
                    raise ValueError(
                        f"monotone_constraints make predictions {way} in "
                        f"{_feature(f, names)}, but the tree of {where} of {what} splits "
                        f"on it with a leaf of {a:.4g} below the split and one of {b:.4g} "
                        f"above: {advice}")
            if sets is not None:
                path = _path_outside(tree, sets)
                if path is not None:
                    raise ValueError(
                        f"interaction_constraints={interaction!r} hold every root-to-leaf "
                        f"path in one set, but the tree of {where} of {what} has a path "
                        f"through {', '.join(_feature(f, names) for f in path)}, in no one "
                        f"set: {advice}")
