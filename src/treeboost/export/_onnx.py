"""ONNX export: a fitted model's trees as an ``ai.onnx.ml`` tree ensemble.

Data flow: an estimator or Booster -> ``Booster.dump_model()`` (the public model view:
raw thresholds, category lists, shrunk leaf values, F0, loss name and link) -> one
``TreeEnsembleRegressor`` node (``ai.onnx.ml`` opset 3) that sums the trees on F0 ->
the loss's link as plain ONNX operators (Exp, Sigmoid, Softmax) -> ``onnx.ModelProto``.
Only the view is read, plus the estimator's ``classes_`` and a frame's category labels
(which the view states as labels, not as the codes the trees compare).

Two places where ONNX's trees differ from treeboost's are bridged here:

* thresholds: ONNX compares a float32 input with float32 thresholds, treeboost a float64
  value with a float64 threshold ``t``. Each threshold is stored as ``f``, ``t`` rounded
  to float32 toward -inf; then ``x <= f`` iff ``float64(x) <= t`` for every float32 ``x``
  (``float32_threshold``);
* categorical splits: ONNX has no set membership, so a split becomes a chain of
  ``BRANCH_EQ`` nodes, one per category of the smaller-to-state side (``_categorical_chain``).
"""

from __future__ import annotations

import numbers

import numpy as np

#: the ``ai.onnx.ml`` opset of the exported model: ``TreeEnsembleRegressor`` with float
#: attributes, which every onnxruntime since 1.0 runs (opset 5's ``TreeEnsemble`` adds
#: nothing needed here)
ML_OPSET = 3
#: the default opset of the default domain; 13 is the oldest whose Softmax normalises one
#: axis, which the multiclass link needs
DEFAULT_OPSET = 17
MIN_OPSET = 13
#: built-in losses and the link their estimators apply in ``predict``/``predict_proba``;
#: a user loss (a Formula, a callable, a registered one) may predict through code of its
#: own, so only these are exported with a link
_LOSS_LINKS = {
    "squared_error": ("identity",), "absolute_error": ("identity",), "huber": ("identity",),
    "quantile": ("identity",), "poisson": ("log",), "gamma": ("log",), "tweedie": ("log",),
    "log_loss": ("logit", "softmax"), "exponential": ("half_logit",),
    "lambdarank": ("identity",), "rank_xendcg": ("identity",), "pairwise": ("identity",),
}
#: float32 holds every integer up to 2**24 exactly; larger codes would compare inexactly
_MAX_EXACT_CODE = 2 ** 24


def float32_threshold(threshold: float) -> np.float32:
    """The largest float32 ``f`` with ``(x <= f) == (float64(x) <= threshold)`` for float32 x.

    That is ``threshold`` rounded to float32 toward -inf: every float32 at most
    ``threshold`` is at most ``f``, and the next float32 above ``f`` is above
    ``threshold``. Rounding to nearest instead would send a float32 input equal to an
    upward-rounded threshold left where treeboost sends it right.

    Parameters
    ----------
    threshold : float
        A split's float64 threshold (``x <= threshold`` goes left).

    Returns
    -------
    numpy.float32
    """
    t = float(threshold)
    with np.errstate(over="ignore"):  # |t| past float32's range rounds to +-inf, fixed below
        f = np.float32(t)
    if float(f) > t:
        f = np.nextafter(f, np.float32(-np.inf))
    return np.float32(f)


def _refuse(message: str):
    raise ValueError(f"cannot export to ONNX: {message}")


def _check_opset(target_opset) -> int:
    import onnx

    if target_opset is None:
        return min(DEFAULT_OPSET, onnx.defs.onnx_opset_version())
    newest = onnx.defs.onnx_opset_version()
    if (isinstance(target_opset, bool) or not isinstance(target_opset, numbers.Integral)
            or not MIN_OPSET <= target_opset <= newest):
        raise ValueError(f"target_opset={target_opset!r} must be an int in "
                         f"[{MIN_OPSET}, {newest}] (the default domain's opset)")
    return int(target_opset)


def _resolve(model):
    """(booster, kind, classes, pandas categories) of an estimator or a Booster."""
    from ..booster import Booster
    from ..sklearn import TreeBoostClassifier, TreeBoostRanker, TreeBoostRegressor

    if isinstance(model, Booster):
        return model, "raw", None, dict(getattr(model, "pandas_categories", {}) or {})
    kinds = ((TreeBoostClassifier, "classifier"), (TreeBoostRegressor, "regressor"),
             (TreeBoostRanker, "ranker"))
    for cls, kind in kinds:
        if isinstance(model, cls):
            booster = model.booster_  # NotFittedError for an unfitted estimator
            classes = np.asarray(model.classes_) if kind == "classifier" else None
            return booster, kind, classes, dict(getattr(model, "pandas_categories_", {}))
    raise TypeError(f"model={type(model).__name__} must be a fitted TreeBoostRegressor, "
                    "TreeBoostClassifier, TreeBoostRanker or a Booster")


def _code_tables(view: dict, pandas_categories: dict) -> dict:
    """{feature: {category as the view states it: code}} for a frame's category columns."""
    from ..model_view import _plain

    return {int(f): {_plain(label): code for code, label in enumerate(labels)}
            for f, labels in pandas_categories.items() if int(f) < view["n_features"]}


def _codes(values, feature: int, tables: dict) -> list[float]:
    """The numbers a categorical split compares, refusing what float32 cannot hold."""
    table = tables.get(feature)
    codes = []
    for v in values:
        code = table.get(v) if table is not None else v
        if (code is None or isinstance(code, bool) or not isinstance(code, numbers.Real)
                or not abs(code) <= _MAX_EXACT_CODE or float(np.float32(code)) != code):
            _refuse(f"feature {feature}'s category {v!r} is not a number float32 holds "
                    "exactly; train on integer codes (categorical_features) to export")
        codes.append(float(code))
    return codes


class _Nodes:
    """The ``nodes_*`` and ``target_*`` attribute lists of the tree ensemble, being filled."""

    def __init__(self):
        self.tree, self.node, self.feature, self.mode, self.value = [], [], [], [], []
        self.true, self.false, self.missing_true = [], [], []
        self.t_tree, self.t_node, self.t_output, self.t_weight = [], [], [], []

    def add(self, tree, node, feature, mode, value, true, false, missing_true):
        for name, v in (("tree", tree), ("node", node), ("feature", feature), ("mode", mode),
                        ("value", value), ("true", true), ("false", false),
                        ("missing_true", int(missing_true))):
            getattr(self, name).append(v)

    def leaf(self, tree, node, output, weight):
        self.add(tree, node, 0, "LEAF", 0.0, 0, 0, False)
        for name, v in (("t_tree", tree), ("t_node", node), ("t_output", output),
                        ("t_weight", weight)):
            getattr(self, name).append(v)


def _categorical_chain(view_node: dict, features: list, tables: dict) -> tuple[list, bool]:
    """(codes to test, whether a match goes left) of one categorical split.

    NaN and categories unseen in training both go where ``missing_go_left`` says. When
    they go right, the chain tests the left set: a match goes left, the rest fall
    through to the right. When they go left, it tests the right side (the training
    categories not in the left set), so that everything else falls through to the left.
    """
    f = view_node["feature"]
    left = _codes(view_node["categories_left"], f, tables)
    if not view_node["missing_go_left"]:
        return left, True
    known = _codes(features[f]["categories"] or [], f, tables)
    left_set = set(left)
    return [c for c in known if c not in left_set], False


def _add_tree(nodes: _Nodes, tree: dict, features: list, tables: dict) -> None:
    """One tree of the view as ONNX nodes; a categorical split takes one node per test."""
    tid, out = tree["tree_index"], tree["output"]
    chains, first, next_id = {}, {}, 0
    for vn in tree["nodes"]:  # allocate ids first: children come after their parent
        first[vn["node"]] = next_id
        if vn["split_type"] == "categorical":
            chains[vn["node"]] = _categorical_chain(vn, features, tables)
            next_id += max(1, len(chains[vn["node"]][0]))
        else:
            next_id += 1
    for vn in tree["nodes"]:
        i = first[vn["node"]]
        if vn["is_leaf"]:
            nodes.leaf(tid, i, out, float(vn["value"]))
        elif vn["split_type"] == "numerical":
            nodes.add(tid, i, vn["feature"], "BRANCH_LEQ",
                      float(float32_threshold(vn["threshold"])), first[vn["left"]],
                      first[vn["right"]], vn["missing_go_left"])
        else:
            _add_chain(nodes, tid, i, vn["feature"], *chains[vn["node"]],
                       first[vn["left"]], first[vn["right"]])


def _add_chain(nodes, tid, i, feature, codes, match_left, left, right) -> None:
    """``BRANCH_EQ`` nodes ids i, i+1, ...: a match goes to one side, the last miss the other.

    NaN never equals a code (missing values do not track true), so it falls through
    with the unseen categories, where ``_categorical_chain`` arranged them to go.
    """
    hit, miss = (left, right) if match_left else (right, left)
    if not codes:  # every row goes one way; x <= inf holds for all finite x and NaN
        nodes.add(tid, i, feature, "BRANCH_LEQ", float(np.inf), miss, miss, True)
        return
    for j, code in enumerate(codes):
        nxt = i + j + 1 if j + 1 < len(codes) else miss
        nodes.add(tid, i + j, feature, "BRANCH_EQ", code, hit, nxt, False)


def _ensemble(view: dict, tables: dict, input_name: str, output_name: str):
    """The ``TreeEnsembleRegressor`` node: F0 plus the sum of every tree, per output."""
    from onnx import helper

    nodes = _Nodes()
    for stage in view["trees"]:
        for tree in stage:
            _add_tree(nodes, tree, view["features"], tables)
    if not nodes.tree:  # a model of no stages is F0 alone; the operator needs one tree
        nodes.leaf(0, 0, 0, 0.0)
    return helper.make_node(
        "TreeEnsembleRegressor", [input_name], [output_name], domain="ai.onnx.ml",
        name="trees", n_targets=view["n_outputs"], aggregate_function="SUM",
        post_transform="NONE", base_values=[float(v) for v in view["init_score"]],
        nodes_treeids=nodes.tree, nodes_nodeids=nodes.node, nodes_featureids=nodes.feature,
        nodes_modes=nodes.mode, nodes_values=nodes.value, nodes_truenodeids=nodes.true,
        nodes_falsenodeids=nodes.false, nodes_missing_value_tracks_true=nodes.missing_true,
        target_treeids=nodes.t_tree, target_nodeids=nodes.t_node, target_ids=nodes.t_output,
        target_weights=nodes.t_weight)


def _check_link(view: dict, kind: str) -> str:
    """The link the estimator's predictions apply; refuse one ONNX cannot state exactly."""
    loss, link = view["loss"]["name"], view["loss"]["link"]
    if kind == "raw":
        return "identity"  # a Booster's raw scores need no link, whatever the loss
    if link not in _LOSS_LINKS.get(loss, ()):
        _refuse(f"loss {loss!r} (link {link!r}) is not a built-in loss whose predictions "
                "ONNX operators reproduce exactly; export model.booster_ for raw scores")
    return link


def _label_values(classes: np.ndarray):
    """``classes_`` as an ONNX tensor (int64, double or string) for Gather, or refuse."""
    from onnx import TensorProto, helper

    kind = classes.dtype.kind
    if kind in "iub":
        return helper.make_tensor("classes", TensorProto.INT64, [classes.size],
                                  classes.astype(np.int64).tolist()), TensorProto.INT64
    if kind == "f":
        return helper.make_tensor("classes", TensorProto.DOUBLE, [classes.size],
                                  classes.astype(np.float64).tolist()), TensorProto.DOUBLE
    if kind in "US" or (kind == "O" and all(isinstance(c, str) for c in classes.tolist())):
        return helper.make_tensor("classes", TensorProto.STRING, [classes.size],
                                  [str(c).encode("utf-8") for c in classes.tolist()]
                                  ), TensorProto.STRING
    return _refuse(f"classes_ of dtype {classes.dtype} are neither numbers nor strings")


def _classifier_tail(link: str, classes: np.ndarray):
    """Nodes, initializers and outputs from raw scores ``F`` to ``label`` and ``probabilities``.

    The label is taken from the raw scores as ``predict`` takes it (F > 0 for two
    classes, the first largest score for more), not from rounded probabilities.
    """
    from onnx import TensorProto, helper

    n_classes = classes.size
    table, label_type = _label_values(classes)
    inits, nodes = [table], []
    if link == "softmax":
        nodes += [helper.make_node("Softmax", ["F"], ["probabilities"], axis=1),
                  helper.make_node("ArgMax", ["F"], ["index"], axis=1, keepdims=0)]
    else:
        logit = "F"
        if link == "half_logit":  # exponential loss: F is half the log-odds
            nodes.append(helper.make_node("Mul", ["F", "two"], ["F2"]))
            inits.append(helper.make_tensor("two", TensorProto.FLOAT, [], [2.0]))
            logit = "F2"
        nodes += [helper.make_node("Sigmoid", [logit], ["p1"]),
                  helper.make_node("Sub", ["one", "p1"], ["p0"]),
                  helper.make_node("Concat", ["p0", "p1"], ["probabilities"], axis=1),
                  helper.make_node("Greater", ["F", "zero"], ["positive"]),
                  helper.make_node("Cast", ["positive"], ["index2d"], to=TensorProto.INT64),
                  helper.make_node("Squeeze", ["index2d", "squeeze_axes"], ["index"])]
        inits += [helper.make_tensor("one", TensorProto.FLOAT, [], [1.0]),
                  helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0]),
                  helper.make_tensor("squeeze_axes", TensorProto.INT64, [1], [1])]
    nodes.append(helper.make_node("Gather", ["classes", "index"], ["label"], axis=0))
    outputs = [helper.make_tensor_value_info("label", label_type, [None]),
               helper.make_tensor_value_info("probabilities", TensorProto.FLOAT,
                                             [None, n_classes])]
    return nodes, inits, outputs


def to_onnx(model, *, target_opset=None, name="treeboost"):
    """Write a fitted model as an ONNX graph that predicts what the model predicts.

    The trees become one ``ai.onnx.ml`` ``TreeEnsembleRegressor`` (opset 3) summing
    their leaf values on F0 (``base_values``); the loss's link follows as ONNX
    operators. Only the public model view (``Booster.dump_model()``) is read, plus
    ``classes_`` and a frame's category labels.

    .. versionadded:: 0.1.0

    Parameters
    ----------
    model : TreeBoostRegressor, TreeBoostClassifier, TreeBoostRanker or Booster
        A fitted model. The estimators' outputs:

        - regressor: ``"variable"``, float of shape (n, 1): ``predict`` (Exp
          applied for the log-link losses poisson, gamma and tweedie);
        - classifier: ``"label"`` of shape (n,), the ``classes_`` values (int64
          for integer or boolean classes, double for floats, string for text),
          and ``"probabilities"``, float of shape (n, n_classes):
          ``predict_proba`` (Sigmoid for two classes, Softmax for more);
        - ranker: ``"variable"``, float of shape (n, 1), the scores;
        - Booster: ``"raw_score"``, float of shape (n, n_outputs):
          ``predict_raw``, whatever the loss.
    target_opset : int, default=None
        Opset of the default ONNX domain, in [13, newest onnx knows]; None: 17
        (or the newest, if older). The ``ai.onnx.ml`` opset is always 3.
    name : str, default="treeboost"
        The graph's name.

    Returns
    -------
    onnx.ModelProto
        Input ``"input"``: float32 of shape (n, n_features), NaN for missing values,
        the columns in the model's order. A categorical feature takes its integer
        code: for a model trained on a pandas frame, the code of a ``category``
        column is the label's position among the training categories
        (``dataset.frame_to_array``, NaN for a missing or unseen label), not the
        label itself.

    Raises
    ------
    ValueError
        If the model's predictions cannot be stated exactly: a user loss (Formula,
        callable, registered) behind an estimator (its ``booster_`` exports raw
        scores), a category float32 cannot hold exactly, or a bad ``target_opset``.
    TypeError
        If ``model`` is not one of the types above.

    Notes
    -----
    ONNX compares float32 inputs with float32 thresholds where treeboost compares
    float64 values with float64 thresholds. Each threshold ``t`` is stored as the
    largest float32 ``f`` with ``(x <= f) == (float64(x) <= t)`` for every float32
    ``x`` (``t`` rounded toward -inf, ``float32_threshold``), so float32 inputs take
    the same path in every tree as in treeboost. Leaf values, F0 and the sums are
    float32 in onnxruntime, so scores agree to float32 rounding (about 1e-7 relative
    per tree), not bit for bit. A categorical split becomes a chain of ``BRANCH_EQ``
    tests over one side's categories; NaN and categories unseen in training go
    where the split's ``missing_go_left`` says, as in treeboost.
    """
    import onnx
    from onnx import TensorProto, helper

    from .._version import __version__

    opset = _check_opset(target_opset)
    booster, kind, classes, pandas_categories = _resolve(model)
    view = booster.dump_model()
    link = _check_link(view, kind)
    tables = _code_tables(view, pandas_categories)
    trees = _ensemble(view, tables, "input", "F")
    inputs = [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                            [None, view["n_features"]])]
    if kind == "classifier":
        tail, inits, outputs = _classifier_tail(link, classes)
    else:
        out = "raw_score" if kind == "raw" else "variable"
        op = "Exp" if link == "log" else "Identity"
        tail, inits = [helper.make_node(op, ["F"], [out])], []
        outputs = [helper.make_tensor_value_info(
            out, TensorProto.FLOAT, [None, view["n_outputs"] if kind == "raw" else 1])]
    graph = helper.make_graph([trees, *tail], name, inputs, outputs, initializer=inits)
    opsets = [helper.make_opsetid("", opset), helper.make_opsetid("ai.onnx.ml", ML_OPSET)]
    onnx_model = helper.make_model(
        graph, opset_imports=opsets, producer_name="treeboost", producer_version=__version__,
        doc_string=f"treeboost {kind} export; loss {view['loss']['name']!r}, link {link!r}",
        # the oldest IR version these opsets allow: older runtimes load the file too
        ir_version=helper.find_min_ir_version_for(opsets, ignore_unknown=True))
    helper.set_model_props(onnx_model, {"loss": view["loss"]["name"], "link": link,
                                        "treeboost_kind": kind})
    onnx.checker.check_model(onnx_model)
    return onnx_model
