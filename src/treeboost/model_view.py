"""Model view: a fitted Booster as plain Python data and as a LightGBM-style table.

The reader's end of the data flow, beside prediction: ``dump_model`` turns a
``Booster`` (F0, ``trees[stage][output]``, the bin mapper) into dicts, lists,
strings, numbers, booleans and None, in the user's units. A numerical split
has its raw threshold (``x <= threshold``), never a bin index; a categorical
split lists the category *values* going left (the labels of a pandas
``category`` column, the codes of an integer-coded feature), never a bitset;
the side of missing values and of categories unseen in training is stated at
every split. ``trees_to_dataframe`` builds LightGBM's
``Booster.trees_to_dataframe`` table from that dump, so the two views cannot
disagree. ``save_model``/``load_model`` are the Booster's way to the model
file of ``serialization``, whose format this module never changes. The module
imports neither ``booster`` nor ``serialization``: ``booster`` imports it, and
``serialization`` imports both (and registers its functions here).

How prediction routes a row (``_kernels/predict.py``): a categorical value
is looked up among the feature's training categories (the bin mapper's
edges); NaN, a category unseen in training and a category left out of the
table (past ``max_bins``) all fall in the missing bin 255, which goes left
when bit 255 of the split's bitset is set. The view states that rule as
``categories_left`` plus ``missing_go_left``.
"""

from __future__ import annotations

import math
import numbers
import os
from dataclasses import fields
from typing import TYPE_CHECKING

import numpy as np

from ._dtypes import MISSING_BIN
from ._version import __version__
from .exceptions import ModelFormatError
from .losses import CLASSIFICATION_LOSSES

if TYPE_CHECKING:
    import pandas as pd

#: ``dump_model()["format"]`` and ``["format_version"]``: a reader can check what it got
VIEW_FORMAT = "treeboost-model-view"
VIEW_FORMAT_VERSION = 1
#: the columns of ``trees_to_dataframe``, LightGBM's names in LightGBM's order
DATAFRAME_COLUMNS = ("tree_index", "node_depth", "node_index", "left_child", "right_child",
                     "parent_index", "split_feature", "split_gain", "threshold",
                     "decision_type", "missing_direction", "missing_type", "value", "weight",
                     "count")
#: LightGBM joins the categories of a categorical split with this in its table
CATEGORY_SEPARATOR = "||"


def _plain(value):
    """``value`` as JSON data: containers as dicts and lists, NumPy scalars unwrapped.

    Anything else (a pandas category may be a Timestamp, an Interval, ...) becomes its
    text, which is what users read.
    """
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _flat_params(booster) -> dict:
    """The stage-loop and tree parameters and ``max_bins``, by name, as the model file has them."""
    p = booster.params
    flat = {f.name: getattr(p, f.name) for f in fields(p) if f.name != "grower"}
    flat.update((f.name, getattr(p.grower, f.name)) for f in fields(p.grower))
    flat["max_bins"] = booster.bin_mapper.max_bins
    return _plain(dict(sorted(flat.items())))


def _number(value: float):
    """A category code as the user gave it: an int when integral (codes are), else a float."""
    value = float(value)
    return int(value) if value.is_integer() else value


def _feature_views(booster) -> list[dict]:
    """One dict per feature: index, name, kind, training categories, missing values seen.

    A pandas ``category`` column is categorical in the view even where the model
    split it as numbers (``categorical_features=None``): its values reach the trees
    as codes in category order, which the view translates back to labels.
    """
    bm, names = booster.bin_mapper, booster.feature_names
    views = []
    for f in range(booster.n_features):
        n = int(bm.n_edges_[f])
        labels = booster.pandas_categories.get(f)
        if bm.is_categorical_[f]:
            codes = bm.bin_edges_[f, :n]
            categories = ([_plain(labels[int(c)]) for c in codes] if labels is not None
                          else [_number(c) for c in codes])
        elif labels is not None:  # a category column split by its codes
            categories = [_plain(v) for v in labels]
        else:
            categories = None
        views.append({"index": f, "name": None if names is None else str(names[f]),
                      "kind": "numerical" if categories is None else "categorical",
                      "categories": categories, "has_missing": bool(bm.has_missing_[f])})
    return views


def _left_bins(tree) -> np.ndarray:
    """(n_nodes, 256) booleans: the bins each categorical split sends left."""
    bits = np.unpackbits(np.ascontiguousarray(tree.cat_bitset).view(np.uint8), axis=1,
                         bitorder="little")
    return bits.astype(bool)


def _split_fields(tree, node: int, left_bins: np.ndarray, bm, features) -> dict:
    """The fields of split ``node`` that say where a row goes, in the user's values."""
    f = int(tree.feature[node])
    categories = features[f]["categories"]
    feature = {"feature": f, "feature_name": features[f]["name"]}
    if tree.is_categorical[node]:
        n = int(bm.n_edges_[f])
        goes_left = left_bins[node]
        # NaN and every value outside the training table share the missing bin
        missing_left = bool(goes_left[MISSING_BIN])
        left = [categories[b] for b in np.flatnonzero(goes_left[:n])]
    elif categories is not None:
        # a frame's category column split as numbers: codes <= threshold go left, and an
        # unseen label is coded NaN, so it goes where missing values go
        missing_left = bool(tree.missing_left[node])
        threshold = float(tree.threshold[node])
        left = [c for code, c in enumerate(categories) if code <= threshold]
    else:
        return dict(feature, split_type="numerical", threshold=float(tree.threshold[node]),
                    categories_left=None, missing_go_left=bool(tree.missing_left[node]),
                    unseen_go_left=None)
    return dict(feature, split_type="categorical", threshold=None, categories_left=left,
                missing_go_left=missing_left, unseen_go_left=missing_left)


_SPLIT_ONLY = dict(feature=None, feature_name=None, split_type=None, threshold=None,
                   categories_left=None, missing_go_left=None, unseen_go_left=None,
                   left=None, right=None, gain=None)


def _tree_view(tree, stage: int, output: int, n_outputs: int, bm, features) -> dict:
    """One tree of ``dump_model``: its place in the model and its nodes in node order."""
    n = tree.n_nodes
    parent = [None] * n
    depth = [0] * n
    for node in range(n):  # children always come after their parent
        if tree.left[node] >= 0:
            for child in (int(tree.left[node]), int(tree.right[node])):
                parent[child], depth[child] = node, depth[node] + 1
    left_bins = _left_bins(tree) if tree.is_categorical.any() else None
    nodes = []
    for node in range(n):
        view = {"node": node, "parent": parent[node], "depth": depth[node],
                "is_leaf": bool(tree.left[node] < 0)}
        if view["is_leaf"]:
            view.update(_SPLIT_ONLY)
        else:
            view.update(_split_fields(tree, node, left_bins, bm, features))
            view.update(left=int(tree.left[node]), right=int(tree.right[node]),
                        gain=float(tree.gain[node]))
        view.update(value=float(tree.value[node]), cover=float(tree.cover[node]),
                    count=int(tree.count[node]))
        nodes.append(view)
    return {"stage": stage, "output": output, "tree_index": stage * n_outputs + output,
            "n_leaves": tree.n_leaves, "nodes": nodes}


def _target_names(booster):
    """The booster's ``target_names`` as a list of str, or None (a model without them)."""
    names = getattr(booster, "target_names", None)
    return None if names is None else [str(v) for v in names]


def dump_model(booster) -> dict:
    """The model as plain Python data, in the user's units.

    Parameters
    ----------
    booster : Booster
        A fitted (or loaded) booster.

    Returns
    -------
    dict
        JSON-able dicts, lists, str, int, float, bool and None; the structure is
        documented in ``Booster.dump_model``.
    """
    loss = booster.loss
    loss_params = _plain(loss.get_params())
    n_classes = None
    if loss.name in CLASSIFICATION_LOSSES:
        n_classes = int(loss_params.get("n_classes", 2))
    features = _feature_views(booster)
    K = booster.n_outputs
    best = getattr(booster, "best_iteration", None)
    return {
        "format": VIEW_FORMAT, "format_version": VIEW_FORMAT_VERSION,
        "treeboost_version": __version__,
        "loss": {"name": loss.name, "params": loss_params, "link": str(loss.link)},
        "params": _flat_params(booster),
        "n_features": booster.n_features,
        "feature_names": None if booster.feature_names is None
        else [str(v) for v in booster.feature_names],
        "features": features,
        "n_outputs": K, "n_classes": n_classes,
        # a model of several targets may know their names (one per output, in output
        # order: ``trees[stage][k]`` predicts target_names[k]); None otherwise
        "target_names": _target_names(booster),
        "init_score": [float(v) for v in np.asarray(booster.init_score, dtype=np.float64)],
        "n_stages": len(booster.trees),
        "best_iteration": None if best is None else int(best),
        "trees": [[_tree_view(t, m, k, K, booster.bin_mapper, features)
                   for k, t in enumerate(stage)] for m, stage in enumerate(booster.trees)],
    }


# ---- the table ----------------------------------------------------------------------------
def _node_ids(tree: dict) -> list[str]:
    """LightGBM's node names: ``"<tree>-S<i>"`` for the i-th split, ``"-L<i>"`` leaf."""
    splits = leaves = 0
    ids = []
    for node in tree["nodes"]:
        if node["is_leaf"]:
            ids.append(f"{tree['tree_index']}-L{leaves}")
            leaves += 1
        else:
            ids.append(f"{tree['tree_index']}-S{splits}")
            splits += 1
    return ids


def _preorder(nodes: list[dict]) -> list[dict]:
    """Nodes root first, each left subtree before its right one (LightGBM's row order)."""
    order, stack = [], [0]
    while stack:
        node = nodes[stack.pop()]
        order.append(node)
        if not node["is_leaf"]:
            stack += [node["right"], node["left"]]
    return order


def _category_text(categories: list) -> str:
    return CATEGORY_SEPARATOR.join(str(c) for c in categories)


def _table_rows(model: dict):
    """One dict per node of ``model`` (a ``dump_model()``), in the table's row order."""
    for stage in model["trees"]:
        for tree in stage:
            ids = _node_ids(tree)
            for node in _preorder(tree["nodes"]):
                i = node["node"]
                row = dict.fromkeys(DATAFRAME_COLUMNS)
                row.update(tree_index=tree["tree_index"], node_depth=node["depth"] + 1,
                           node_index=ids[i], value=node["value"], weight=node["cover"],
                           count=node["count"])
                if node["parent"] is not None:
                    row["parent_index"] = ids[node["parent"]]
                if not node["is_leaf"]:
                    f = node["feature"]
                    categorical = node["split_type"] == "categorical"
                    row.update(
                        left_child=ids[node["left"]], right_child=ids[node["right"]],
                        split_feature=node["feature_name"] or f"Column_{f}",
                        split_gain=node["gain"],
                        threshold=_category_text(node["categories_left"]) if categorical
                        else node["threshold"],
                        decision_type="==" if categorical else "<=",
                        missing_direction="left" if node["missing_go_left"] else "right",
                        # NaN always takes missing_direction (LightGBM's "NaN"; its
                        # "None" would read NaN as 0, which treeboost never does)
                        missing_type="NaN")
                yield row


def trees_to_dataframe(model: dict) -> pd.DataFrame:
    """LightGBM's ``Booster.trees_to_dataframe`` table of a model view.

    Parameters
    ----------
    model : dict
        What ``dump_model`` returned.

    Returns
    -------
    pandas.DataFrame
        One row per node: trees in stage-major order, each tree's nodes root first,
        left subtree before right. The columns of LightGBM's table
        (``DATAFRAME_COLUMNS``): ``tree_index`` (stage * n_outputs + output, as
        LightGBM counts multiclass trees), ``node_depth`` (root 1), ``node_index``
        (``"<tree>-S<i>"``: the i-th split, ``"<tree>-L<i>"``: the i-th leaf, in the
        dump's node order; LightGBM numbers them in the order it grew them),
        ``left_child``, ``right_child``, ``parent_index``, ``split_feature`` (the
        feature's name, ``"Column_<i>"`` without names, as LightGBM),
        ``split_gain``, ``threshold`` (a float; at a categorical split the
        categories going left joined by ``"||"``), ``decision_type`` (``"<="`` or
        ``"=="``), ``missing_direction`` (``"left"``/``"right"``: where NaN, and at
        a categorical split an unseen category, goes), ``missing_type``
        (``"NaN"``), ``value``, ``weight`` (``cover``, the sum of hessians) and
        ``count``. Split fields are missing (NaN or None) at leaves.
    """
    import pandas as pd

    rows = list(_table_rows(model))
    # built as LightGBM builds its own (a list of dicts), so pandas gives the columns the
    # same dtypes: float64 thresholds, or object where categorical splits add text
    return pd.DataFrame(rows, columns=list(DATAFRAME_COLUMNS))


# ---- the model file -----------------------------------------------------------------------
#: ``serialization.save_booster`` and ``load_booster``, behind ``Booster.save_model`` and
#: ``load_model``. ``serialization`` imports ``booster``, which imports this module, so
#: neither may import it back: it registers them here (``register_model_file``) when it
#: is imported, which ``import treeboost`` always does. The import graph stays acyclic
_MODEL_FILE: dict = {}


def register_model_file(save, load) -> None:
    """Set the model file's writer and reader behind ``save_model`` and ``load_model``.

    Parameters
    ----------
    save : callable
        ``save(booster, path)`` writes the file (``serialization.save_booster``).
    load : callable
        ``load(path, return_metadata=True)`` returns ``(booster, metadata)``
        (``serialization.load_booster``).
    """
    _MODEL_FILE.update(save=save, load=load)


def _model_file(name: str):
    if name not in _MODEL_FILE:
        raise RuntimeError("the model file's functions are not registered: import "
                           "treeboost.serialization first")
    return _MODEL_FILE[name]


def save_model(booster, path) -> None:
    """Write ``booster`` to a model file: ``serialization.save_booster(booster, path)``.

    A Booster saved alone records no estimator fields (``"estimator"`` and
    ``"best_iteration"`` null, ``"evals_result"`` empty).

    Parameters
    ----------
    booster : Booster
        The model to save.
    path : str or path-like
        File to write (atomically: a crash never leaves half a file).
    """
    _model_file("save")(booster, path)


def load_model(path):
    """Read a model file as a Booster: ``serialization.load_booster`` and ``with_history``.

    Any treeboost model file loads, an estimator's included.

    Parameters
    ----------
    path : str or path-like
        Model file.

    Returns
    -------
    Booster
        Predictions bit-identical to the saved model's; ``best_iteration`` and
        ``evals_result`` are the file's, as ``train`` sets them.

    Raises
    ------
    treeboost.exceptions.ModelFormatError
        If the file is not a valid model file; the message starts with the path.
    OSError
        If the file cannot be read (``FileNotFoundError`` when it does not exist).
    """
    booster, metadata = _model_file("load")(path, return_metadata=True)
    return with_history(booster, metadata, path)


def _finite_numbers(values) -> bool:
    """Whether ``values`` is a list of finite JSON numbers (booleans are not numbers)."""
    return isinstance(values, list) and all(
        isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x)
        for x in values)


def with_history(booster, metadata: dict, path):
    """A Booster read from a model file, with the file's early-stopping history.

    ``Booster.load_model`` reads the file (``serialization.load_booster``); this
    sets what ``train`` sets on the Booster it returns, so a reloaded one reads alike.

    Parameters
    ----------
    booster : Booster
        The Booster of the file.
    metadata : dict
        The file's estimator fields (``load_booster(..., return_metadata=True)``).
    path : str or path-like
        The file, for error messages.

    Returns
    -------
    Booster
        ``booster``, its ``best_iteration`` (int or None) and ``evals_result``
        (``{data set: {metric: [float, ...]}}``) set.

    Raises
    ------
    treeboost.exceptions.ModelFormatError
        If either field is invalid; the message starts with the path.
    """
    best, evals, n_stages = metadata["best_iteration"], metadata["evals_result"], len(
        booster.trees)
    if best is not None and (type(best) is not int or not 0 <= best < n_stages):
        raise ModelFormatError(f"{os.fspath(path)}: best_iteration={best!r:.80} must be null "
                               f"or an int in [0, {n_stages})")
    if not isinstance(evals, dict) or not all(
            isinstance(log, dict) and all(map(_finite_numbers, log.values()))
            for log in evals.values()):
        raise ModelFormatError(f"{os.fspath(path)}: evals_result must be an object of "
                               "objects of lists of numbers")
    booster.best_iteration = best
    booster.evals_result = {data: {metric: [float(x) for x in v] for metric, v in log.items()}
                            for data, log in evals.items()}
    return booster
