"""Treelite export: a fitted model as a ``treelite.Model`` (issue 34).

The exporter's end of the data flow, beside the ONNX one: the model is read
only through the public model view (``Booster.dump_model``), never through
the Booster's arrays, and rebuilt node by node with treelite 4's
``ModelBuilder``. The result predicts with treelite's GTIL
(``treelite.gtil.predict``) or compiles with tl2cgen.

How the view maps onto treelite:

* thresholds and leaf values are float64 (``threshold_type`` and
  ``leaf_output_type``), so GTIL's sums are the Booster's up to the order of
  additions;
* a numerical split is ``x <= threshold`` with ``default_left`` =
  ``missing_go_left`` (treelite sends NaN to the default child);
* a categorical split lists the categories of the side that missing values do
  *not* take. Treelite sends a category absent from the list to the other
  child, so a category unseen in training follows NaN, as in treeboost::

      treeboost view                      treelite categorical_test
      categories_left=[1, 3],             category_list=[0, 2] (training
      missing_go_left=True     ──►        categories going right),
                                          category_list_right_child=True,
                                          default_left=True

* ``init_score`` (F0 per output) is treelite's ``base_scores``; output k of
  stage m is tree ``m * n_outputs + k`` with ``class_id = k``;
* the loss's link becomes treelite's postprocessor (``_POSTPROCESSORS``).
"""

from __future__ import annotations

import math
import numbers

#: the loss's link (``dump_model()["loss"]["link"]``) -> treelite's postprocessor and its
#: ``sigmoid_alpha``: each computes exactly the loss's ``inverse_link``
_POSTPROCESSORS = {
    "identity": ("identity", 1.0),
    "log": ("exponential", 1.0),        # exp(F): poisson, gamma, tweedie
    "logit": ("sigmoid", 1.0),          # 1 / (1 + exp(-F)): binary log_loss
    "half_logit": ("sigmoid", 2.0),     # exponential loss: F is half the log-odds
    "softmax": ("softmax", 1.0),        # multiclass log_loss
}

#: losses whose ``inverse_link`` is fixed by their link (so ``_POSTPROCESSORS`` is exact),
#: and their task. A user-registered loss may override ``inverse_link`` with any function,
#: which the view cannot show: it is refused. "formula" and "custom" (a symbolic or a
#: callable objective) apply exactly their link
_KNOWN_LOSSES = {
    **dict.fromkeys(("squared_error", "absolute_error", "quantile", "huber", "poisson",
                     "gamma", "tweedie"), "regression"),
    **dict.fromkeys(("log_loss", "exponential"), "classification"),
    **dict.fromkeys(("lambdarank", "rank_xendcg", "pairwise"), "ranking"),
    **dict.fromkeys(("formula", "custom"), "by_n_classes"),
}

#: treelite compares a categorical input as an unsigned 32-bit integer
_MAX_CATEGORY = 2**32 - 1


def _model_view(model) -> dict:
    """``dump_model()`` of a fitted estimator (its ``booster_``) or of a Booster."""
    if hasattr(type(model), "booster_"):
        return model.booster_.dump_model()  # NotFittedError before fit
    dump = getattr(model, "dump_model", None)
    if not callable(dump):
        raise TypeError(f"model={type(model).__name__!r} must be a fitted TreeBoostRegressor, "
                        "TreeBoostClassifier, TreeBoostRanker or a treeboost Booster")
    return dump()


def _task_type(view: dict) -> str:
    """Treelite's ``task_type`` for the view's loss; refuses what treelite cannot compute."""
    loss = view["loss"]
    name, link = loss["name"], loss["link"]
    task = _KNOWN_LOSSES.get(name)
    if task is None:
        raise ValueError(f"loss={name!r} cannot be exported to treelite: it is not a built-in "
                         "loss, and its inverse link (any function a Loss subclass defines) "
                         f"has no treelite postprocessor; built-in losses: "
                         f"{sorted(n for n in _KNOWN_LOSSES if n not in ('formula', 'custom'))}")
    if link not in _POSTPROCESSORS:
        raise ValueError(f"loss={name!r} with link={link!r} cannot be exported to treelite: "
                         f"its postprocessors cover the links {sorted(_POSTPROCESSORS)}")
    n_outputs, n_classes = view["n_outputs"], view["n_classes"]
    if task == "by_n_classes":
        task = "regression" if n_classes is None else "classification"
    if task == "classification":
        expected = 1 if n_classes == 2 else n_classes
        kind = "kBinaryClf" if n_classes == 2 else "kMultiClf"
    else:
        expected, kind = 1, "kLearningToRank" if task == "ranking" else "kRegressor"
    if n_outputs != expected:  # e.g. a multi-output user setup the view cannot type
        raise ValueError(f"loss={name!r} with n_outputs={n_outputs} and "
                         f"n_classes={n_classes} cannot be exported to treelite: expected "
                         f"{expected} output(s)")
    return kind


def _category_code(value, feature: dict) -> int:
    """``value`` (a category of ``feature``) as treelite's unsigned category, or refuse."""
    # an integral float is fine: a pandas category column of floats has labels 20.0, ...,
    # and treelite reads the 20.0 fed at prediction as category 20
    if (isinstance(value, numbers.Real) and not isinstance(value, bool)
            and float(value).is_integer() and 0 <= value <= _MAX_CATEGORY):
        return int(value)
    label = feature["name"] if feature["name"] is not None else feature["index"]
    raise ValueError(
        f"categorical feature {label!r} has the category {value!r}: treelite matches "
        f"categories as integers in [0, {_MAX_CATEGORY}] (the value fed at prediction), so "
        "a label (a pandas category of text), a negative or a non-integer category cannot "
        "be exported; train on non-negative integer codes (categorical_features=...) instead")


def _categorical_test(builder, node: dict, feature: dict) -> None:
    """Declare ``node`` a categorical split, listing the side missing values do not take.

    Treelite sends NaN to the default child and any value absent from the list to
    the unlisted child; listing the non-missing side sends an unseen category
    where treeboost sends it, with the missing values (``unseen_go_left``).
    """
    left = {_category_code(c, feature) for c in node["categories_left"]}
    if node["missing_go_left"]:
        listed = [_category_code(c, feature) for c in feature["categories"]]
        listed = sorted(c for c in listed if c not in left)
    else:
        listed = sorted(left)
    builder.categorical_test(node["feature"], default_left=node["missing_go_left"],
                             category_list=listed,
                             category_list_right_child=node["missing_go_left"],
                             left_child_key=node["left"], right_child_key=node["right"])


def _add_tree(builder, tree: dict, features: list[dict]) -> None:
    """Build one tree of the view, node keys = the view's node indices."""
    builder.start_tree()
    for node in tree["nodes"]:
        builder.start_node(node["node"])
        if node["is_leaf"]:
            builder.leaf(float(node["value"]))
        elif node["split_type"] == "categorical":
            _categorical_test(builder, node, features[node["feature"]])
        else:
            builder.numerical_test(node["feature"], float(node["threshold"]),
                                   default_left=node["missing_go_left"], opname="<=",
                                   left_child_key=node["left"], right_child_key=node["right"])
        if not node["is_leaf"] and math.isfinite(node["gain"]):
            builder.gain(float(node["gain"]))
        builder.data_count(int(node["count"]))
        builder.sum_hess(float(node["cover"]))
        builder.end_node()
    builder.end_tree()


def to_treelite(model):
    """Export a fitted model as a treelite model.

    .. versionadded:: 0.1.0

    Parameters
    ----------
    model : TreeBoostRegressor, TreeBoostClassifier, TreeBoostRanker or Booster
        A fitted estimator (its ``booster_`` is exported) or a Booster.

    Returns
    -------
    treelite.Model
        Float64 thresholds and leaf values; ``base_scores`` = ``init_score``. Task
        and postprocessor by loss: ``kRegressor`` with ``identity`` (``exponential``
        for the log link of poisson, gamma and tweedie), ``kBinaryClf`` with
        ``sigmoid`` (``sigmoid_alpha=2`` for the exponential loss),
        ``kMultiClf`` with ``softmax`` and one tree per class per stage
        (``class_id``), ``kLearningToRank`` with ``identity``.
        ``treelite.gtil.predict(tl_model, X)`` has shape (n_samples, 1, 1), or
        (n_samples, 1, n_classes) for multiclass: the estimator's ``predict`` (a
        regressor or ranker), the positive class's probability, or
        ``predict_proba``; with ``pred_margin=True`` the raw score.

    Raises
    ------
    ImportError
        treelite is not installed (``pip install treeboost[treelite]``).
    ValueError
        A loss treelite cannot compute exactly (a user-registered loss, whose
        inverse link may be any function), or a categorical feature whose
        categories are not integers in [0, 2**32 - 1] (text labels of a pandas
        category column, negative codes).
    TypeError
        ``model`` is neither a treeboost estimator nor a Booster.

    Notes
    -----
    The model reads the values treeboost reads, with two differences outside
    them. At a categorical feature, treelite truncates a non-integer value to an
    integer (2.5 reads as category 2) where treeboost treats it as an unseen
    category (the missing side). And treelite reads an entry absent from a sparse
    CSR row as missing, where treeboost reads it as 0: predict on dense arrays,
    or store the zeros.

    Examples
    --------
    >>> import numpy as np, treelite
    >>> from treeboost import TreeBoostRegressor
    >>> from treeboost.export import to_treelite
    >>> X = np.arange(40.0).reshape(20, 2); y = X[:, 0] % 3
    >>> reg = TreeBoostRegressor(n_estimators=5, min_samples_leaf=2).fit(X, y)
    >>> pred = treelite.gtil.predict(to_treelite(reg), X)[:, 0, 0]
    >>> bool(np.allclose(pred, reg.predict(X)))
    True
    """
    try:
        from treelite.model_builder import (
            Metadata,
            ModelBuilder,
            PostProcessorFunc,
            TreeAnnotation,
        )
    except ImportError as exc:
        raise ImportError("to_treelite needs treelite >= 4.4: pip install "
                          "'treeboost[treelite]' (or pip install treelite)") from exc
    view = _model_view(model)
    task_type = _task_type(view)
    n_outputs = view["n_outputs"]
    n_trees = view["n_stages"] * n_outputs
    postprocessor, alpha = _POSTPROCESSORS[view["loss"]["link"]]
    multiclass = task_type == "kMultiClf"
    builder = ModelBuilder(
        threshold_type="float64", leaf_output_type="float64",
        metadata=Metadata(num_feature=view["n_features"], task_type=task_type,
                          average_tree_output=False, num_target=1,
                          num_class=[n_outputs if multiclass else 1],
                          leaf_vector_shape=(1, 1)),
        # stage-major order: tree m * n_outputs + k adds to output (class) k
        tree_annotation=TreeAnnotation(num_tree=n_trees, target_id=[0] * n_trees,
                                       class_id=[k % n_outputs if multiclass else 0
                                                 for k in range(n_trees)]),
        postprocessor=PostProcessorFunc(name=postprocessor, sigmoid_alpha=alpha),
        base_scores=[float(v) for v in view["init_score"]],
        attributes={"exported_by": "treeboost", "treeboost_version": view["treeboost_version"],
                    "loss": view["loss"], "feature_names": view["feature_names"]})
    for stage in view["trees"]:
        for tree in stage:
            _add_tree(builder, tree, view["features"])
    return builder.commit()
