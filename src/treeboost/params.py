"""The declarative table of estimator parameters, and ``validate``.

One entry per parameter: type, bounds or choices, default and a one-line
doc. The estimators check it in ``fit`` (never in ``__init__``); the command
line and the study will build their options and search spaces from it, and a
test checks that the estimators' docstrings describe every entry.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from ._dtypes import MAX_BINS
from .constraints import MONOTONE_METHODS, check_interaction, check_monotone
from .losses import CLASSIFICATION_LOSSES, REGRESSION_LOSSES
from .metrics import METRICS, check_eval_metric
from .modes import BOOSTING_MODES


@dataclass(frozen=True)
class Param:
    """One parameter: ``kind`` is "int", "float", "str", "random_state" or "custom".

    A "custom" parameter is checked by a function of the module named
    ``_check_<name>`` (its ``describe`` text is the ``choices`` string).

    ``low``/``high`` bound numbers (``closed`` says which ends are allowed:
    "both", "left", "right" or "neither"); ``choices`` lists allowed strings;
    ``none_ok`` allows None; ``scope`` is "all", "regressor" or "classifier".
    """

    name: str
    kind: str
    default: object
    doc: str
    low: float | None = None
    high: float | None = None
    closed: str = "both"
    choices: tuple | None = None
    none_ok: bool = False
    scope: str = "all"

    def describe(self) -> str:
        """Human description of the allowed values, used in error messages."""
        if self.kind in ("int", "float"):
            lo = "-inf" if self.low is None else f"{self.low:g}"
            hi = "inf" if self.high is None else f"{self.high:g}"
            left = "[" if self.closed in ("both", "left") and self.low is not None else "("
            right = "]" if self.closed in ("both", "right") and self.high is not None else ")"
            text = f"an {self.kind} in {left}{lo}, {hi}{right}" if self.kind == "int" \
                else f"a float in {left}{lo}, {hi}{right}"
        elif self.kind == "str":
            text = f"one of {list(self.choices)}"
        elif self.kind == "custom":
            return str(self.choices)
        else:
            text = "an int, a numpy RandomState or None"
        return text + (" or None" if self.none_ok and self.kind != "random_state" else "")

    def check(self, value) -> None:
        """Raise ``TypeError``/``ValueError`` naming the parameter if ``value`` is invalid."""
        msg = f"{self.name}={value!r} must be {self.describe()}"
        if self.kind == "custom":
            if not _CUSTOM_CHECKS[self.name](value):
                raise (ValueError if isinstance(value, (str, list, tuple, dict, np.ndarray))
                       else TypeError)(msg)
            return
        if value is None:
            if self.none_ok or self.kind == "random_state":
                return
            raise ValueError(msg)
        if self.kind == "random_state":
            if isinstance(value, np.random.RandomState):
                return
            if not isinstance(value, numbers.Integral) or isinstance(value, bool):
                raise TypeError(msg)
            if not 0 <= value < 2**32:  # NumPy's seed range, as scikit-learn's
                raise ValueError(f"{self.name}={value!r} must be in [0, 2**32 - 1]")
            return
        if self.kind == "str":
            if not isinstance(value, str):
                raise TypeError(msg)
            if value not in self.choices:
                raise ValueError(msg)
            return
        numeric = numbers.Integral if self.kind == "int" else numbers.Real
        if isinstance(value, bool) or not isinstance(value, numeric):
            raise TypeError(msg)
        if not math.isfinite(value):
            raise ValueError(msg)
        low_ok = self.low is None or (value >= self.low if self.closed in ("both", "left")
                                      else value > self.low)
        high_ok = self.high is None or (value <= self.high if self.closed in ("both", "right")
                                        else value < self.high)
        if not (low_ok and high_ok):
            raise ValueError(msg)


PARAMS = [
    Param("loss", "str", "squared_error", "Loss to minimise (regressor); also a "
          "treeboost.Formula, a Loss or a callable loss(y, f) -> (gradient, hessian).",
          choices=REGRESSION_LOSSES, scope="regressor"),
    Param("loss", "str", "log_loss",
          "Loss to minimise: log-loss (binary or softmax), or exponential (AdaBoost, binary); "
          "for binary targets also a treeboost.Formula, a Loss or a callable "
          "loss(y, f) -> (gradient, hessian) with f the log-odds.",
          choices=CLASSIFICATION_LOSSES, scope="classifier"),
    Param("alpha", "float", 0.9, "Quantile of the quantile loss; quantile of |residual| "
          "that sets Huber's delta.", low=0.0, high=1.0, closed="neither", scope="regressor"),
    Param("power", "float", 1.5, "Variance power of the Tweedie loss, in (1, 2) or > 2.",
          low=1.0, closed="neither", scope="regressor"),
    Param("n_estimators", "int", 100, "Number of boosting stages.", low=1),
    Param("learning_rate", "float", 0.1, "Shrinkage nu applied to every leaf value.",
          low=0.0, closed="right"),
    Param("max_leaf_nodes", "int", 31, "Maximum leaves per tree (leaf-wise growth).",
          low=2, none_ok=True),
    Param("max_depth", "int", None, "Maximum depth of a tree (root at depth 0).",
          low=1, none_ok=True),
    Param("min_samples_leaf", "int", 20, "Minimum number of rows in a leaf.", low=1),
    Param("min_child_weight", "float", 1e-3, "Minimum sum of hessians in a leaf.", low=0.0),
    Param("min_split_gain", "float", 0.0, "Minimum gain to make a split.", low=0.0),
    Param("reg_lambda", "float", 0.0, "L2 regularisation of leaf values.", low=0.0),
    Param("reg_alpha", "float", 0.0, "L1 regularisation of leaf values.", low=0.0),
    Param("max_delta_step", "float", None, "Cap on |leaf value| before shrinkage; None: "
          "1.0 for gamma and tweedie and 5.0 for poisson (log link: their Newton steps are "
          "otherwise unbounded), no cap for the other losses.", low=0.0, closed="neither",
          none_ok=True, scope="regressor"),
    Param("max_delta_step", "float", 10.0, "Cap on |leaf value| (log-odds) before "
          "shrinkage: a Newton step on near-zero hessians (a very rare class) is otherwise "
          "huge; None: no cap.", low=0.0, closed="neither", none_ok=True, scope="classifier"),
    Param("max_bins", "int", MAX_BINS, "Maximum bins of non-missing values per feature.",
          low=2, high=MAX_BINS),
    Param("subsample", "float", 1.0, "Fraction of rows drawn without replacement per stage.",
          low=0.0, high=1.0, closed="right"),
    Param("colsample_bytree", "float", 1.0, "Fraction of features drawn per tree.",
          low=0.0, high=1.0, closed="right"),
    Param("colsample_bynode", "float", 1.0, "Fraction of a tree's features drawn per node.",
          low=0.0, high=1.0, closed="right"),
    Param("categorical_features", "custom", "from_dtype", "Categorical features: "
          "'from_dtype' (pandas category columns), None, indices, names or a boolean mask.",
          choices="'from_dtype', None, or a list of indices, of names, or a boolean mask"),
    Param("max_cat_to_onehot", "int", 16, "A categorical feature with at most this many "
          "categories in a node splits one category against the rest (LightGBM: 4; 16 "
          "overfits less on small data, see README).", low=1),
    Param("max_cat_threshold", "int", 32, "Maximum categories on the left of a categorical "
          "split.", low=1),
    Param("cat_smooth", "float", 10.0, "Smoothing of G/(H + cat_smooth) when ordering a "
          "node's categories (pulls rare categories to the middle).", low=0.0),
    Param("cat_l2", "float", 10.0, "Extra L2 regularisation of the children of a "
          "categorical split over sorted categories (not of one-vs-rest splits).", low=0.0),
    Param("monotone_constraints", "custom", None, "Direction of each feature's effect "
          "(-1, 0, +1): a list with one entry per feature, or a dict by index or column "
          "name; predictions are then monotone along each constrained feature's non-missing "
          "values (LightGBM's 'basic' method; not for categorical features).",
          choices="None, a list of -1/0/1 per feature, or a dict {index or name: -1/0/1}"),
    Param("monotone_constraints_method", "str", "basic", "How monotone constraints bound "
          "the nodes: 'basic' (children meet at the mean of their values) or "
          "'intermediate' (bounds from the values of the leaves across each monotone split, "
          "updated as the tree grows; less constrained), after LightGBM's methods.",
          choices=MONOTONE_METHODS),
    Param("interaction_constraints", "custom", None, "Feature sets (indices or column "
          "names): the features on one root-to-leaf path must all lie in one set; a feature "
          "in no set is never split on (as LightGBM).",
          choices="None or a list of lists of feature indices or names"),
    Param("class_weight", "custom", None, "Weights of the classes: None, 'balanced' or a "
          "dict {label: weight}; multiplied into sample_weight.",
          choices="None, 'balanced' or a dict {class label: positive weight}",
          scope="classifier"),
    Param("n_iter_no_change", "int", None, "Stop after this many stages without "
          "improvement on the validation data; None disables early stopping.",
          low=1, none_ok=True),
    Param("tol", "float", 1e-7, "Minimum improvement of the monitored score that counts.",
          low=0.0),
    Param("validation_fraction", "float", 0.1, "Fraction of the training data held out "
          "for early stopping when no eval_set is given; None monitors the training data.",
          low=0.0, high=1.0, closed="neither", none_ok=True),
    Param("eval_metric", "str", None, "Metric(s) logged in evals_result_: None (the loss), "
          "a name, a treeboost.metrics.Metric from make_metric(fn, higher_is_better=...) "
          "or a list of these; early stopping monitors the first.",
          choices=("loss", *METRICS), none_ok=True),
    Param("importance_type", "str", "gain", "What feature_importances_ sums: split gain "
          "or number of splits.", choices=("gain", "split")),
    Param("verbose", "int", 0, "Print the training and validation metric every "
          "`verbose` stages (0: silent).", low=0),
    Param("n_jobs", "int", None, "Threads; None or -1 use all cores.", none_ok=True),
    Param("random_state", "random_state", None, "Seed of row/column sampling, binning "
          "subsample and validation split."),
    Param("boosting", "str", "gbdt", "Boosting mode: 'gbdt' (gradient boosting), 'rf' "
          "(random forest: trees on the gradients at F0, averaged; needs subsample < 1 or "
          "column sampling), 'dart' (dropout trees) or 'goss' (gradient-based one-side "
          "sampling; by |gradient| after the first int(1/learning_rate) stages).",
          choices=BOOSTING_MODES),
    Param("drop_rate", "float", 0.1, "DART: probability of dropping each earlier stage.",
          low=0.0, high=1.0),
    Param("skip_drop", "float", 0.5, "DART: probability of dropping nothing at a stage.",
          low=0.0, high=1.0),
    Param("max_drop", "int", 50, "DART: most stages dropped at once; <= 0: no limit."),
    Param("uniform_drop", "custom", False, "DART: drop every stage with the same "
          "probability (False: in proportion to its weight, as LightGBM).",
          choices="True or False"),
    Param("xgboost_dart_mode", "custom", False, "DART: XGBoost's normalisation (new tree "
          "nu/(k+nu), dropped trees k/(k+nu)) instead of nu/(k+1) and k/(k+1).",
          choices="True or False"),
    Param("top_rate", "float", 0.2, "GOSS: fraction a of rows with the largest |gradient| "
          "kept at every stage.", low=0.0, high=1.0, closed="right"),
    Param("other_rate", "float", 0.1, "GOSS: fraction b of rows drawn from the others, "
          "their gradients and hessians multiplied by (1 - a) / b.", low=0.0, high=1.0,
          closed="right"),
    Param("trace", "custom", False, "Record every stage (F, pseudo-residuals, leaf of each "
          "row, leaf values) in trace_, for small data; see format_trace().",
          choices="True or False"),
    Param("warm_start", "custom", False, "Fit again with a larger n_estimators adds stages "
          "to the fitted model (same data, same bins) instead of starting afresh.",
          choices="True or False"),
]


def _check_categorical_features(value) -> bool:
    if value is None or (isinstance(value, str) and value == "from_dtype"):
        return True
    if isinstance(value, (str, bytes, dict)):
        return False
    try:
        items = list(value)
    except TypeError:
        return False
    kinds = {bool if isinstance(v, (bool, np.bool_)) else int
             if isinstance(v, numbers.Integral) else str if isinstance(v, str) else None
             for v in items}
    return len(kinds) <= 1 and None not in kinds


def _check_class_weight(value) -> bool:
    if value is None or (isinstance(value, str) and value == "balanced"):
        return True
    return isinstance(value, dict) and all(
        isinstance(w, numbers.Real) and not isinstance(w, bool) and math.isfinite(w) and w >= 0
        for w in value.values())


def _check_bool(value) -> bool:
    return isinstance(value, (bool, np.bool_))


_CUSTOM_CHECKS = {"categorical_features": _check_categorical_features,
                  "monotone_constraints": check_monotone,
                  "interaction_constraints": check_interaction,
                  "class_weight": _check_class_weight, "uniform_drop": _check_bool,
                  "xgboost_dart_mode": _check_bool, "trace": _check_bool,
                  "warm_start": _check_bool}


def _check_user_loss(value) -> None:
    from .losses.custom import is_user_loss

    if not is_user_loss(value):
        raise TypeError(f"loss={value!r} must be a loss name, a Loss, a treeboost.Formula or "
                        "a callable loss(y, f) -> (gradient, hessian)")


def params_for(scope: str) -> dict[str, Param]:
    """The parameters of an estimator, by name (``scope`` "regressor" or "classifier")."""
    return {p.name: p for p in PARAMS if p.scope in ("all", scope)}


def validate(values: dict, scope: str) -> None:
    """Check every parameter of ``values`` against the table; raise on the first bad one."""
    table = params_for(scope)
    for name, value in values.items():
        if name == "loss" and value is not None and not isinstance(value, str):
            _check_user_loss(value)  # the table's choices list the built-in names only
        elif name == "eval_metric" and value is not None and not isinstance(value, str):
            check_eval_metric(value)  # a Metric or a list: the choices are the names only
        elif name in table:
            table[name].check(value)
    if values.get("n_jobs") == 0:
        raise ValueError("n_jobs=0 must be a non-zero int or None")
    if values.get("boosting") == "dart" and values.get("n_iter_no_change") is not None:
        # later stages rescale earlier ones: a prefix of a DART model is no model it trained
        raise ValueError("early stopping (n_iter_no_change) is not available with "
                         "boosting='dart'")
    if values.get("loss") == "tweedie" and values.get("power") == 2:
        raise ValueError("power=2 must be in (1, 2) or > 2 (power 2 is loss='gamma')")
