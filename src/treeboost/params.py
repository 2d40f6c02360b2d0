"""The declarative table of estimator parameters, and ``validate``.

One entry per parameter, the only place its name and default are written:
type, bounds or choices, default, scope, a one-line doc, and the engine
record it is a field of. Built from it: the estimators' ``__init__`` and its
signature (``make_init``, ``signature``) and their docstrings' Parameters
section, the engine's ``BoostingParams`` (``typed_view``), the names ``train``
hands to the grower and the booster (``part_names``), the command line's
options and the study's search space. The estimators check it in ``fit``
(never in ``__init__``). ``tests/test_params_single_source.py`` checks that
no default is written out again elsewhere.
"""

from __future__ import annotations

import inspect
import math
import numbers
from dataclasses import dataclass, field, make_dataclass

import numpy as np

from ._dtypes import MAX_BINS
from ._survival_metrics import AFT_DISTRIBUTIONS
from .constraints import MONOTONE_METHODS, check_interaction, check_monotone
from .losses import CLASSIFICATION_LOSSES, RANKING_LOSSES, REGRESSION_LOSSES
from .metrics import METRIC_NAMES, check_eval_metric
from .modes import BOOSTING_MODES, mode_named

#: ``leaf_count``'s choices: what ``min_samples_leaf`` counts in a split's children
LEAF_COUNTS = ("rows", "hessian")
#: ``importance_type``'s choices (``Booster.feature_importances``): XGBoost's names,
#: "split" for its "weight"; "gain" keeps its meaning of the total gain (the same as
#: "total_gain"), which every model saved with the default was written with
IMPORTANCE_TYPES = ("gain", "split", "total_gain", "cover", "total_cover")


@dataclass(frozen=True)
class Param:
    """One parameter: ``kind`` is "int", "float", "str", "random_state" or "custom".

    A "custom" parameter is checked by a function of the module named
    ``_check_<name>`` (its ``describe`` text is the ``choices`` string).

    ``low``/``high`` bound numbers (``closed`` says which ends are allowed:
    "both", "left", "right" or "neither"); ``choices`` lists allowed strings;
    ``none_ok`` allows None; ``scope`` is "all", "regressor", "classifier" or "ranker"
    (``train`` with a ranking loss; the ranker estimator is to come).

    ``positional`` puts the parameter before the ``*`` of the estimators'
    signatures (``loss`` only; scikit-learn wants keyword-only parameters
    otherwise). ``part`` names the engine's record it is a field of:
    "grower" (``GrowerParams``), "booster" (``BoostingParams``), "loss" (a
    keyword argument of ``get_loss``), or None for the parameters ``train`` and
    the estimators read by name.
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
    positional: bool = False
    part: str | None = None

    @property
    def annotation(self) -> str:
        """The Python type of the values, as an annotation string (typed views, docs)."""
        kind = {"int": "int", "float": "float", "str": "str", "random_state": "object",
                "custom": "object"}[self.kind]
        return f"{kind} | None" if self.none_ok and kind != "object" else kind

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
          choices=REGRESSION_LOSSES, scope="regressor", positional=True),
    Param("loss", "str", "lambdarank", "Loss to minimise (ranking, over query groups).",
          choices=RANKING_LOSSES, scope="ranker", positional=True),
    Param("loss", "str", "log_loss",
          "Loss to minimise: log-loss (binary or softmax), or exponential (AdaBoost, binary); "
          "for binary targets also a treeboost.Formula, a Loss or a callable "
          "loss(y, f) -> (gradient, hessian) with f the log-odds.",
          choices=CLASSIFICATION_LOSSES, scope="classifier", positional=True),
    Param("alpha", "float", 0.9, "Quantile of the quantile loss (a list of them: one "
          "output per quantile, predictions sorted per row so that they never cross); "
          "quantile of |residual| that sets Huber's delta.", low=0.0, high=1.0,
          closed="neither", scope="regressor", part="loss"),
    Param("multi_strategy", "str", "one_output_per_tree", "With a 2-D y (n_samples, "
          "n_targets) or a list of alphas: one_output_per_tree grows one tree per output "
          "and stage, each output as a single-output fit on its column (XGBoost's); "
          "multi_output_tree (2-D y; squared_error, absolute_error, huber or quantile) "
          "grows one tree per stage whose split gain is the sum over the outputs of "
          "their gains, each output's leaf values from its own line search (XGBoost 2's "
          "multi_output_tree, CatBoost's MultiRMSE), kept as n_targets trees sharing "
          "their splits, so that prediction, SHAP and the model file are unchanged; not "
          "with sparse X, categorical features, constraints, quantised gradients, Dask "
          "or device='cuda'.",
          choices=("one_output_per_tree", "multi_output_tree"), scope="regressor"),
    Param("power", "float", 1.5, "Variance power of the Tweedie loss, in (1, 2) or > 2.",
          low=1.0, closed="neither", scope="regressor", part="loss"),
    Param("aft_loss_distribution", "str", "normal", "loss='aft': distribution of the noise "
          "Z of log T = F(x) + sigma Z (XGBoost's): 'normal' (log-normal times), 'logistic' "
          "(log-logistic) or 'extreme' (Weibull).", choices=AFT_DISTRIBUTIONS,
          scope="regressor", part="loss"),
    Param("aft_loss_distribution_scale", "float", 1.0, "loss='aft': the scale sigma of the "
          "noise of log time.", low=0.0, closed="neither", scope="regressor", part="loss"),
    Param("lambdarank_truncation_level", "int", 30, "lambdarank: pairs count when one of "
          "the two ranks in the top this many by the current scores; also the cut-off of "
          "the NDCG whose changes weigh the pairs (LightGBM's).", low=1, scope="ranker",
          part="loss"),
    Param("lambdarank_norm", "custom", True, "lambdarank: normalise each query's lambdas "
          "(divide by 0.01 + |score gap| and scale by log2(1 + S) / S), as LightGBM.",
          choices="True or False", scope="ranker", part="loss"),
    Param("sigmoid", "float", 1.0, "lambdarank and pairwise: steepness sigma of the "
          "pairwise sigmoid 1 / (1 + exp(sigma * (s_i - s_j))).", low=0.0, closed="neither",
          scope="ranker", part="loss"),
    Param("label_gain", "custom", None, "lambdarank and the ndcg@k metrics: gain of each "
          "relevance label, a list indexed by label; None: 2**label - 1.",
          choices="None or a list of finite numbers >= 0, one per label", scope="ranker",
          part="loss"),
    Param("n_estimators", "int", 100, "Number of boosting stages.", low=1, part="booster"),
    Param("learning_rate", "float", 0.1, "Shrinkage nu applied to every leaf value.",
          low=0.0, closed="right", part="booster"),
    Param("max_leaf_nodes", "int", 31, "Maximum leaves per tree (leaf-wise growth).",
          low=2, none_ok=True, part="grower"),
    Param("max_depth", "int", None, "Maximum depth of a tree (root at depth 0).",
          low=1, none_ok=True, part="grower"),
    Param("min_samples_leaf", "int", 20, "Minimum number of rows in a leaf.", low=1,
          part="grower"),
    Param("min_child_weight", "float", 1e-3, "Minimum sum of hessians in a leaf.", low=0.0,
          part="grower"),
    Param("leaf_count", "str", "rows", "What min_samples_leaf counts in a split's children: "
          "'rows', their rows; 'hessian', LightGBM's estimate (its min_data_in_leaf), a "
          "child's hessian sum times the node's rows per unit of hessian, rounded, so that "
          "rows the model already predicts confidently (log loss: small hessians) count as "
          "fewer. The same with unit hessians (squared error, unweighted).",
          choices=LEAF_COUNTS, scope="regressor", part="grower"),
    Param("leaf_count", "str", "hessian", "What min_samples_leaf counts in a split's "
          "children: 'hessian', LightGBM's estimate (its min_data_in_leaf), a child's "
          "hessian sum times the node's rows per unit of hessian, rounded, so that rows the "
          "model already predicts confidently (small hessians) count as fewer (tuned, it "
          "scored higher on classification data, see the benchmarks page); 'rows', their "
          "rows.", choices=LEAF_COUNTS, scope="classifier", part="grower"),
    Param("leaf_count", "str", "rows", "What min_samples_leaf counts in a split's children: "
          "'rows', their rows; 'hessian', a child's hessian sum times the node's rows per "
          "unit of hessian, rounded (LightGBM's min_data_in_leaf).",
          choices=LEAF_COUNTS, scope="ranker", part="grower"),
    Param("min_split_gain", "float", 0.0, "Minimum gain to make a split.", low=0.0, part="grower"),
    Param("reg_lambda", "float", 0.0, "L2 regularisation of leaf values.", low=0.0, part="grower"),
    Param("reg_alpha", "float", 0.0, "L1 regularisation of leaf values.", low=0.0, part="grower"),
    Param("max_delta_step", "float", None, "Cap on |leaf value| before shrinkage; None: "
          "1.0 for gamma and tweedie and 5.0 for poisson (log link: their Newton steps are "
          "otherwise unbounded), no cap for the other losses.", low=0.0, closed="neither",
          none_ok=True, scope="regressor", part="booster"),
    Param("max_delta_step", "float", None, "Cap on |leaf value| before shrinkage; None: "
          "no cap (as LightGBM's lambdarank).", low=0.0, closed="neither", none_ok=True,
          scope="ranker", part="booster"),
    Param("max_delta_step", "float", 10.0, "Cap on |leaf value| (log-odds) before "
          "shrinkage: a Newton step on near-zero hessians (a very rare class) is otherwise "
          "huge; None: no cap.", low=0.0, closed="neither", none_ok=True, scope="classifier",
          part="booster"),
    Param("max_bins", "int", MAX_BINS, "Maximum bins of non-missing values per feature.",
          low=2, high=MAX_BINS),
    Param("subsample", "float", 1.0, "Fraction of rows drawn without replacement per stage.",
          low=0.0, high=1.0, closed="right", part="booster"),
    Param("colsample_bytree", "float", 1.0, "Fraction of features drawn per tree.",
          low=0.0, high=1.0, closed="right", part="booster"),
    Param("colsample_bynode", "float", 1.0, "Fraction of a tree's features drawn per node "
          "(of those that can split: one occupied bin cannot, as in LightGBM).",
          low=0.0, high=1.0, closed="right", part="grower"),
    Param("categorical_features", "custom", "from_dtype", "Categorical features: "
          "'from_dtype' (pandas category columns), None, indices, names or a boolean mask.",
          choices="'from_dtype', None, or a list of indices, of names, or a boolean mask"),
    Param("max_cat_to_onehot", "int", 4, "A categorical feature with at most this many "
          "categories in a node splits one category against the rest, more by a prefix of "
          "the categories sorted by gradient (LightGBM's 4: with 16, categories smaller than "
          "min_samples_leaf cannot split at all; see the benchmarks page).", low=1,
          scope="regressor", part="grower"),
    Param("max_cat_to_onehot", "int", 4, "A categorical feature with at most this many "
          "categories in a node splits one category against the rest, more by a prefix of "
          "the categories sorted by gradient (LightGBM's 4; see the benchmarks page).",
          low=1, scope="classifier", part="grower"),
    Param("max_cat_to_onehot", "int", 16, "A categorical feature with at most this many "
          "categories in a node splits one category against the rest, more by a prefix of "
          "the categories sorted by gradient.", low=1, scope="ranker", part="grower"),
    Param("max_cat_threshold", "int", 32, "Maximum categories on the left of a split over "
          "categories sorted by gradient (not of the ordered splits, max_cat_ordered).",
          low=1, part="grower"),
    Param("max_cat_ordered", "int", 32, "A categorical feature of at most this many "
          "categories also splits between its categories in their own order (each prefix "
          "of the categories as pandas orders them, declared or sorted, against the rest; "
          "missing right), as integer codes would, so an ordinal column's levels, grades or "
          "ranges keep their order (credit-g +0.0085 accuracy, autoMpg +0.0042 R2 at the "
          "same random configurations; see the benchmarks page). Not above it: an "
          "identifier's sorted codes can line up with the target. 0: never.", low=0,
          part="grower"),
    Param("cat_smooth", "float", 10.0, "Smoothing of G/(H + cat_smooth) when ordering a "
          "node's categories (pulls rare categories to the middle); for a feature of more "
          "than max_cat_ordered categories, also the rows (estimated from the hessians "
          "under leaf_count='hessian', unrounded) below which a category stays right in "
          "that order (LightGBM's rule; mpls_stops +0.0007 accuracy at the same random "
          "configurations, see the benchmarks page).", low=0.0, part="grower"),
    Param("cat_l2", "float", 10.0, "Extra L2 regularisation of the children of a "
          "categorical split over sorted categories (not of one-vs-rest splits).", low=0.0,
          part="grower"),
    Param("monotone_constraints", "custom", None, "Direction of each feature's effect "
          "(-1, 0, +1): a list with one entry per feature, or a dict by index or column "
          "name; predictions are then monotone along each constrained feature's non-missing "
          "values (LightGBM's 'basic' method; not for categorical features).",
          choices="None, a list of -1/0/1 per feature, or a dict {index or name: -1/0/1}",
          part="grower"),
    Param("monotone_constraints_method", "str", "basic", "How monotone constraints bound "
          "the nodes: 'basic' (children meet at the mean of their values) or "
          "'intermediate' (bounds from the values of the leaves across each monotone split, "
          "updated as the tree grows; less constrained), after LightGBM's methods.",
          choices=MONOTONE_METHODS, part="grower"),
    Param("interaction_constraints", "custom", None, "Feature sets (indices or column "
          "names): the features on one root-to-leaf path must all lie in one set; a feature "
          "in no set is never split on (as LightGBM).",
          choices="None or a list of lists of feature indices or names", part="grower"),
    Param("use_quantized_grad", "custom", "auto", "Choose splits on gradients and hessians "
          "quantised per tree to num_grad_quant_bins levels (stochastic rounding), summed in "
          "integer histograms; leaf values are refit from the exact gradients (LightGBM 4's "
          "use_quantized_grad). Dense input only. 'auto': on for the log loss (binary and "
          "multiclass) on dense data of at least 100,000 rows, where it kept accuracy and "
          "saved a quarter of the fit; off otherwise (it cost RMSE in regression, and "
          "accuracy on small data).", choices="True, False or 'auto'", part="grower"),
    Param("num_grad_quant_bins", "int", 4, "With use_quantized_grad: levels of the "
          "quantised gradients (|g| <= max|g| on num_grad_quant_bins / 2 steps each way) and "
          "hessians (0 .. num_grad_quant_bins), as LightGBM's.", low=2, high=2**20,
          part="grower"),
    Param("stochastic_rounding", "custom", True, "With use_quantized_grad: round the "
          "quantised gradients stochastically (unbiased; the same draws whatever n_jobs) "
          "rather than to nearest.", choices="True or False", part="grower"),
    Param("device", "str", "cpu", "Where the trees' histograms are built: 'cpu' or "
          "'cuda' (a CUDA GPU, with numba-cuda: pip install 'treeboost[cuda]'; no GPU: "
          "an error, never a CPU fit). Dense input only. It does not change "
          "use_quantized_grad: with quantised gradients (integer histograms) a GPU fit "
          "gives the CPU's model bit for bit; with float histograms (the GPU adds them "
          "in another order) within round-off. The partition and split search stay on "
          "the CPU for now.", choices=("cpu", "cuda"), part="booster"),
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
          choices=METRIC_NAMES, none_ok=True),
    Param("importance_type", "str", "gain", "What feature_importances_ measures: 'split' "
          "(number of splits on the feature), 'gain' or 'total_gain' (sum of their gains: "
          "'gain' is the total, as LightGBM's, not XGBoost's mean), 'cover' (mean sum of "
          "hessians per split) or 'total_cover'; normalised to sum to 1 but for 'split'.",
          choices=IMPORTANCE_TYPES),
    Param("verbose", "int", 0, "Print the training and validation metric every "
          "`verbose` stages (0: silent).", low=0),
    Param("n_jobs", "int", None, "Threads; None or -1 use all cores.", none_ok=True),
    Param("random_state", "random_state", None, "Seed of row/column sampling, binning "
          "subsample and validation split."),
    Param("boosting", "str", "gbdt", "Boosting mode: 'gbdt' (gradient boosting), 'rf' "
          "(random forest: trees on the gradients at F0, averaged; needs subsample < 1 or "
          "column sampling), 'dart' (dropout trees) or 'goss' (gradient-based one-side "
          "sampling; by |gradient| after the first int(1/learning_rate) stages).",
          choices=BOOSTING_MODES, part="booster"),
    Param("drop_rate", "float", 0.1, "DART: probability of dropping each earlier stage.",
          low=0.0, high=1.0, part="booster"),
    Param("skip_drop", "float", 0.5, "DART: probability of dropping nothing at a stage.",
          low=0.0, high=1.0, part="booster"),
    Param("max_drop", "int", 50, "DART: most stages dropped at once; <= 0: no limit.",
          part="booster"),
    Param("uniform_drop", "custom", False, "DART: drop every stage with the same "
          "probability (False: in proportion to its weight, as LightGBM).",
          choices="True or False", part="booster"),
    Param("xgboost_dart_mode", "custom", False, "DART: XGBoost's normalisation (new tree "
          "nu/(k+nu), dropped trees k/(k+nu)) instead of nu/(k+1) and k/(k+1).",
          choices="True or False", part="booster"),
    Param("top_rate", "float", 0.2, "GOSS: fraction a of rows with the largest |gradient| "
          "kept at every stage.", low=0.0, high=1.0, closed="right", part="booster"),
    Param("other_rate", "float", 0.1, "GOSS: fraction b of rows drawn from the others, "
          "their gradients and hessians multiplied by (1 - a) / b.", low=0.0, high=1.0,
          closed="right", part="booster"),
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


def _check_label_gain(value) -> bool:
    if value is None:
        return True
    if isinstance(value, (str, bytes, dict)):
        return False
    try:
        gains = np.asarray(list(value), dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return gains.ndim == 1 and gains.size > 0 and bool(np.all(np.isfinite(gains))) \
        and bool(np.all(gains >= 0))


def _check_bool(value) -> bool:
    return isinstance(value, (bool, np.bool_))


_CUSTOM_CHECKS = {"categorical_features": _check_categorical_features,
                  "monotone_constraints": check_monotone,
                  "interaction_constraints": check_interaction,
                  "class_weight": _check_class_weight, "uniform_drop": _check_bool,
                  "xgboost_dart_mode": _check_bool, "trace": _check_bool,
                  "warm_start": _check_bool,
                  "use_quantized_grad": lambda v: _check_bool(v) or v == "auto",
                  "lambdarank_norm": _check_bool, "label_gain": _check_label_gain,
                  "stochastic_rounding": _check_bool}


def _check_user_loss(value) -> None:
    from .losses.custom import is_user_loss

    if not is_user_loss(value):
        raise TypeError(f"loss={value!r} must be a loss name, a Loss, a treeboost.Formula or "
                        "a callable loss(y, f) -> (gradient, hessian)")


def params_for(scope: str) -> dict[str, Param]:
    """The parameters of an estimator, by name (``scope`` "regressor", "classifier" or
    "ranker")."""
    return {p.name: p for p in PARAMS if p.scope in ("all", scope)}


def default(name: str, scope: str = "regressor"):
    """The table's default of ``name`` for ``scope`` (where the estimators' defaults agree,
    either scope)."""
    return params_for(scope)[name].default


def defaults(scope: str) -> dict[str, object]:
    """Every parameter of ``scope``'s estimator with its default, in the table's order."""
    return {name: p.default for name, p in params_for(scope).items()}


def with_defaults(values: dict, scope: str) -> dict:
    """``values`` completed with the table's defaults for ``scope``."""
    return {**defaults(scope), **values}


def part_names(part: str, scope: str | None = None) -> tuple[str, ...]:
    """The names of the table's entries of ``part`` ("grower", "booster", "loss"), of
    every scope or of ``scope``'s estimator."""
    return tuple(dict.fromkeys(p.name for p in PARAMS if p.part == part and (
        scope is None or p.scope in ("all", scope))))


def signature(scope: str, *, exclude=(), overrides=None) -> inspect.Signature:
    """The estimator's ``__init__`` signature: ``self``, the positional ones, then ``*``.

    scikit-learn reads the parameter names from ``inspect.signature(cls.__init__)``
    (``BaseEstimator._get_param_names``); ``make_init`` compiles this one.

    Parameters
    ----------
    scope : str
        "regressor", "classifier" or "ranker".
    exclude : collection of str, default=()
        Entries of ``scope`` left out (an estimator built on another's parameters, such
        as ``TreeBoostSurvival`` on the regressor's without the loss parameters none of
        its losses reads).
    overrides : dict, default=None
        Defaults of that estimator that differ from the table's, by name.

    Returns
    -------
    inspect.Signature
    """
    own = overrides or {}
    table = [p for p in params_for(scope).values() if p.name not in exclude]
    kind = inspect.Parameter
    return inspect.Signature(
        [kind("self", kind.POSITIONAL_OR_KEYWORD)]
        + [kind(p.name, kind.POSITIONAL_OR_KEYWORD, default=own.get(p.name, p.default))
           for p in table if p.positional]
        + [kind(p.name, kind.KEYWORD_ONLY, default=own.get(p.name, p.default))
           for p in table if not p.positional])


def make_init(scope: str, *, exclude=(), overrides=None, doc=None):
    """An ``__init__`` that stores every parameter of ``scope`` (and does nothing else).

    Written out and compiled from the table, as ``dataclasses`` does: a plain
    function with the signature ``signature(scope, exclude=, overrides=)``, as fast as
    a hand-written one and with the same ``TypeError`` for an unknown or repeated
    argument. ``doc`` replaces its docstring.
    """
    sig = signature(scope, exclude=exclude, overrides=overrides)
    names = [name for name in sig.parameters if name != "self"]
    assert all(name.isidentifier() for name in names)
    header = str(sig.replace(parameters=[
        p.replace(default=_DefaultOf(p.name)) if p.default is not p.empty else p
        for p in sig.parameters.values()]))
    body = "".join(f"    self.{name} = {name}\n" for name in names)
    namespace: dict = {}
    values = {**defaults(scope), **(overrides or {})}
    exec(f"def __init__{header}:\n{body}", {"_defaults": values}, namespace)
    init = namespace["__init__"]
    init.__doc__ = doc or f"Store the parameters (the {scope}'s entries of ``treeboost.params``)."
    return init


class _DefaultOf:
    """Shows as ``_defaults['name']`` in a generated signature: defaults are not re-typed."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"_defaults[{self.name!r}]"


def typed_view(cls_name: str, module: str, part: str, scope: str = "regressor", extra=(),
               doc: str = ""):
    """A dataclass with one field per table entry of ``part`` (type and default from the table).

    Parameters
    ----------
    cls_name, module : str
        Name of the class, and the module that binds it to that name (pickling).
    part : str
        "grower" or "booster": the entries whose ``part`` it is.
    scope : str, default="regressor"
        Whose default a field takes where the estimators' differ (``max_delta_step``:
        the engine's default is the regressor's None; the classifier passes its own).
    extra : sequence of (name, type, dataclasses.Field)
        Fields that are not parameters (``BoostingParams.grower``).
    doc : str
        The class docstring.
    """
    table = params_for(scope)
    specs = [(name, table[name].annotation, field(default=table[name].default))
             for name in part_names(part)]
    view = make_dataclass(cls_name, specs + list(extra))
    view.__doc__, view.__module__ = doc, module
    return view


def validate(values: dict, scope: str) -> None:
    """Check every parameter of ``values`` against the table; raise on the first bad one."""
    table = params_for(scope)
    for name, value in values.items():
        if name == "loss" and value is not None and not isinstance(value, str):
            _check_user_loss(value)  # the table's choices list the built-in names only
        elif name == "eval_metric" and value is not None and not isinstance(value, str):
            check_eval_metric(value)  # a Metric or a list: the choices are the names only
        elif name == "alpha" and isinstance(value, (list, tuple, np.ndarray)):
            _check_alphas(value, values.get("loss"))  # multi-quantile
        elif name in table:
            table[name].check(value)
    if values.get("n_jobs") == 0:
        raise ValueError("n_jobs=0 must be a non-zero int or None")
    boosting = values.get("boosting")
    if boosting is not None and not mode_named(boosting).prefix_is_model \
            and values.get("n_iter_no_change") is not None:
        # DART: later stages rescale earlier ones, a prefix is no model it trained
        raise ValueError("early stopping (n_iter_no_change) is not available with "
                         f"boosting={boosting!r}")
    if values.get("loss") == "tweedie" and values.get("power") == 2:
        raise ValueError("power=2 must be in (1, 2) or > 2 (power 2 is loss='gamma')")


def _check_alphas(value, loss) -> None:
    """A list of ``alpha``: distinct floats in (0, 1), with ``loss="quantile"`` only."""
    if loss not in ("quantile", None):  # None: a Loss object (train() checks it)
        raise ValueError(f"alpha={list(value)!r}: a list of quantiles needs "
                         f"loss='quantile', got loss={loss!r}")
    items = list(value)
    if not items or any(isinstance(a, bool) or not isinstance(a, numbers.Real)
                        or not 0.0 < a < 1.0 for a in items) or len(set(items)) != len(items):
        raise ValueError(f"alpha={items!r} must be a float in (0, 1) or a list of distinct "
                         "ones")
