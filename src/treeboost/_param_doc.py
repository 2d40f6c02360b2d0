"""The parameter reference of the documentation, written from the table of ``params.py``.

``parameters_rst()`` returns the reStructuredText of the docs' Parameters page
(``docs/parameters.rst`` holds only the directive of ``docs/_ext/treeboost_params.py``,
which parses this text): a summary table, then one section per parameter with its
type, default, allowed values, description, the estimators and functions that take
it, its command-line option and its names in LightGBM, XGBoost and scikit-learn.
Everything comes from ``params.PARAMS`` (read at each call) but the peers' names
(``PEER_NAMES``) and the few estimator-only parameters (``ESTIMATOR_ONLY``), so a
parameter added to the table appears on the page without editing the docs. Nothing
here needs Sphinx.
"""

from __future__ import annotations

import re

from . import params as _params
from .params import Param

#: Names of the same (or the nearest) setting in the peers, for the docs only:
#: treeboost itself takes its own names and no aliases (DESIGN §2). Each value is
#: (LightGBM, XGBoost, scikit-learn): the canonical name first, then aliases; an
#: empty tuple where the peer has none. scikit-learn's are HistGradientBoosting's
#: unless a note in parentheses says otherwise.
PEER_NAMES: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "loss": (("objective", "objective_type", "app", "application", "loss"),
             ("objective",), ("loss",)),
    "alpha": (("alpha",), ("quantile_alpha",),
              ("quantile", "alpha (GradientBoostingRegressor)")),
    "power": (("tweedie_variance_power",), ("tweedie_variance_power",),
              ("power (TweedieRegressor)",)),
    "lambdarank_truncation_level": (("lambdarank_truncation_level",), (), ()),
    "lambdarank_norm": (("lambdarank_norm",), (), ()),
    "sigmoid": (("sigmoid",), (), ()),
    "label_gain": (("label_gain",), (), ()),
    "n_estimators": (("num_iterations", "num_iteration", "n_iter", "num_tree", "num_trees",
                      "num_round", "num_rounds", "nrounds", "num_boost_round", "n_estimators",
                      "max_iter"),
                     ("num_boost_round (xgboost.train)", "n_estimators"), ("max_iter",)),
    "learning_rate": (("learning_rate", "shrinkage_rate", "eta"), ("eta", "learning_rate"),
                      ("learning_rate",)),
    "max_leaf_nodes": (("num_leaves", "num_leaf", "max_leaves", "max_leaf",
                        "max_leaf_nodes"), ("max_leaves",), ("max_leaf_nodes",)),
    "max_depth": (("max_depth",), ("max_depth",), ("max_depth",)),
    "min_samples_leaf": (("min_data_in_leaf", "min_data_per_leaf", "min_data",
                          "min_child_samples", "min_samples_leaf"), (),
                         ("min_samples_leaf",)),
    "min_child_weight": (("min_sum_hessian_in_leaf", "min_sum_hessian_per_leaf",
                          "min_sum_hessian", "min_hessian", "min_child_weight"),
                         ("min_child_weight",), ()),
    "min_split_gain": (("min_gain_to_split", "min_split_gain"), ("gamma", "min_split_loss"),
                       ()),
    "reg_lambda": (("lambda_l2", "reg_lambda", "lambda"), ("lambda", "reg_lambda"),
                   ("l2_regularization",)),
    "reg_alpha": (("lambda_l1", "reg_alpha", "l1_regularization"), ("alpha", "reg_alpha"), ()),
    "max_delta_step": (("max_delta_step", "max_tree_output", "max_leaf_output"),
                       ("max_delta_step",), ()),
    "max_bins": (("max_bin", "max_bins"), ("max_bin",), ("max_bins",)),
    "subsample": (("bagging_fraction", "sub_row", "subsample", "bagging"), ("subsample",),
                  ("subsample (GradientBoostingRegressor/Classifier)",)),
    "colsample_bytree": (("feature_fraction", "sub_feature", "colsample_bytree"),
                         ("colsample_bytree",), ()),
    "colsample_bynode": (("feature_fraction_bynode", "sub_feature_bynode",
                          "colsample_bynode"), ("colsample_bynode",), ("max_features",)),
    "categorical_features": (("categorical_feature", "cat_feature", "categorical_column",
                              "cat_column", "categorical_features"),
                             ("enable_categorical",), ("categorical_features",)),
    "max_cat_to_onehot": (("max_cat_to_onehot",), ("max_cat_to_onehot",), ()),
    "max_cat_threshold": (("max_cat_threshold",), ("max_cat_threshold",), ()),
    "max_cat_ordered": ((), (), ()),
    "cat_smooth": (("cat_smooth",), (), ()),
    "cat_l2": (("cat_l2",), (), ()),
    "monotone_constraints": (("monotone_constraints", "mc", "monotone_constraint",
                              "monotonic_cst"), ("monotone_constraints",),
                             ("monotonic_cst",)),
    "monotone_constraints_method": (("monotone_constraints_method", "mc_method",
                                     "monotone_constraining_method"), (), ()),
    "interaction_constraints": (("interaction_constraints",), ("interaction_constraints",),
                                ("interaction_cst",)),
    "use_quantized_grad": (("use_quantized_grad",), (), ()),
    "num_grad_quant_bins": (("num_grad_quant_bins",), (), ()),
    "stochastic_rounding": (("stochastic_rounding",), (), ()),
    "class_weight": (("class_weight",), (), ("class_weight",)),
    "n_iter_no_change": (("early_stopping_round", "early_stopping_rounds", "early_stopping",
                          "n_iter_no_change"), ("early_stopping_rounds",),
                         ("n_iter_no_change",)),
    "tol": (("early_stopping_min_delta",), (), ("tol",)),
    "validation_fraction": ((), (), ("validation_fraction",)),
    "eval_metric": (("metric", "metrics", "metric_types"), ("eval_metric",), ("scoring",)),
    "importance_type": (("importance_type",), ("importance_type",), ()),
    "verbose": (("log_evaluation(period) (a callback)",), ("verbose_eval (xgboost.train)",),
                ("verbose",)),
    "n_jobs": (("num_threads", "num_thread", "nthread", "nthreads", "n_jobs"),
               ("nthread", "n_jobs"), ()),
    "device": (("device_type", "device"), ("device",), ()),
    "random_state": (("seed", "random_seed", "random_state"), ("seed", "random_state"),
                     ("random_state",)),
    "boosting": (("boosting", "boosting_type", "boost"), ("booster",), ()),
    "drop_rate": (("drop_rate", "rate_drop"), ("rate_drop",), ()),
    "skip_drop": (("skip_drop",), ("skip_drop",), ()),
    "max_drop": (("max_drop",), (), ()),
    "uniform_drop": (("uniform_drop",), ("sample_type",), ()),
    "xgboost_dart_mode": (("xgboost_dart_mode",), ("normalize_type",), ()),
    "top_rate": (("top_rate",), (), ()),
    "other_rate": (("other_rate",), (), ()),
    "trace": ((), (), ()),
    "warm_start": (("init_model (lightgbm.train)",), ("xgb_model (xgboost.train)",),
                   ("warm_start",)),
}

#: Parameters the estimators read but ``train()`` does not (it accepts their names and
#: ignores them): ``train`` reads every entry with a ``part`` and, by name, the others.
ESTIMATOR_ONLY = frozenset({"categorical_features", "class_weight", "validation_fraction",
                            "importance_type", "trace", "warm_start"})

#: estimator classes by the table's scope, in the order the page lists them
ESTIMATORS = {"regressor": "TreeBoostRegressor", "classifier": "TreeBoostClassifier",
              "ranker": "TreeBoostRanker"}

PEERS = ("LightGBM", "XGBoost", "scikit-learn")

#: page groups: (title, predicate on an entry), the first that matches wins
GROUPS = (
    ("Loss", lambda p: p.name == "loss" or p.part == "loss"),
    ("Boosting stages, sampling and boosting modes", lambda p: p.part == "booster"),
    ("Tree growth", lambda p: p.part == "grower"),
    ("Data, early stopping and the estimators", lambda p: True),
)


def escape(text: str) -> str:
    """``text`` shown as typed in reStructuredText: its inline markup characters escaped,
    but a `name` in single backquotes (the docstrings' code) as a literal."""
    parts = re.split(r"`([^`]+)`", text)
    return "".join(f"``{part}``" if i % 2 else re.sub(r"([\\*`|_])", r"\\\1", part)
                   for i, part in enumerate(parts))


def parameter_names() -> list[str]:
    """Every parameter name of the table, once each, in the table's order."""
    return list(dict.fromkeys(p.name for p in _params.PARAMS))


def entries(name: str) -> list[Param]:
    """The table's entries of ``name`` (several where the estimators' types or defaults
    differ, as ``loss`` and ``max_delta_step``)."""
    order = ["all", *ESTIMATORS]
    return sorted((p for p in _params.PARAMS if p.name == name),
                  key=lambda p: order.index(p.scope))


def type_text(p: Param) -> str:
    """The type of the values, in the docstrings' words."""
    if p.kind == "random_state":
        return "int, RandomState instance or None"
    if p.kind == "custom":
        bools = {"True or False": "bool", "True, False or 'auto'": "bool or 'auto'"}
        return bools.get(str(p.choices), "object")
    return " or ".join(p.annotation.split(" | "))


def default_text(p: Param) -> str:
    """The default as Python writes it, in literal markup."""
    return f"``{p.default!r}``"


def allowed_text(p: Param) -> str:
    """The allowed values: an interval, the list of choices, or the check's words."""
    if p.kind == "str":
        values = ", ".join(f"``{c!r}``" for c in p.choices)
        return f"one of {values}" + (" or ``None``" if p.none_ok else "")
    return escape(p.describe())


def taken_by(p: Param) -> str:
    """The estimators (and ``train``) that take entry ``p``."""
    scopes = list(ESTIMATORS) if p.scope == "all" else [p.scope]
    names = [f":class:`~treeboost.{ESTIMATORS[s]}`" for s in scopes]
    if p.name in ESTIMATOR_ONLY:
        return ", ".join(names) + " (estimators only: ``train()`` ignores it)"
    task = {"regressor": "regression", "classifier": "classification", "ranker": "ranking"}
    where = "" if p.scope == "all" else f" with a {task[p.scope]} loss"
    return ", ".join(names) + f", :func:`~treeboost.train`{where}"


def cli_option(name: str) -> str | None:
    """The ``treeboost train`` option of ``name``, or None where the command line has none."""
    from .cli._options import _entries

    return "--" + name.replace("_", "-") if name in _entries() else None


def peer_text(name: str) -> list[str]:
    """One line per peer that has the setting: ``LightGBM: name (also alias, ...)``."""
    lines = []
    for peer, names in zip(PEERS, PEER_NAMES.get(name, ((), (), ())), strict=True):
        if not names:
            continue
        shown = [_peer_name(n) for n in names]
        also = f" (also {', '.join(shown[1:])})" if len(shown) > 1 else ""
        lines.append(f"{peer}: {shown[0]}{also}")
    return lines


def _peer_name(text: str) -> str:
    """``name (note)`` as a literal name and a plain note."""
    name, _, note = text.partition(" (")
    return f"``{name}``" + (f" ({escape(note)}" if note else "")


def _group(name: str) -> str:
    first = entries(name)[0]
    return next(title for title, matches in GROUPS if matches(first))


def _summary_table(names: list[str]) -> list[str]:
    """A list-table: name (linked), type, default, short description."""
    lines = [".. list-table::", "   :header-rows: 1", "   :widths: 22 16 22 40", "",
             "   * - Parameter", "     - Type", "     - Default", "     - Description"]
    for name in names:
        ps = entries(name)
        types = " / ".join(dict.fromkeys(type_text(p) for p in ps))
        defaults = " / ".join(dict.fromkeys(default_text(p) for p in ps))
        first_sentence = escape(ps[0].doc.split(". ")[0].rstrip("."))
        lines += [f"   * - :ref:`{name} <param-{name}>`", f"     - {escape(types)}",
                  f"     - {defaults}", f"     - {first_sentence}."]
    return lines + [""]


def _entry_fields(p: Param, label: str | None) -> list[str]:
    """Field list of one entry (``label`` names the estimator where entries differ)."""
    lines = [] if label is None else [f"**{label}**", ""]
    lines += [escape(p.doc), "",
              f":Type: {escape(type_text(p))}",
              f":Default: {default_text(p)}",
              f":Allowed: {allowed_text(p)}",
              f":Taken by: {taken_by(p)}", ""]
    return lines


def _section(name: str) -> list[str]:
    ps = entries(name)
    lines = [f".. _param-{name}:", "", f"``{name}``", "~" * (len(name) + 4), ""]
    for p in ps:
        label = None if len(ps) == 1 else ESTIMATORS.get(p.scope, p.scope)
        lines += _entry_fields(p, label)
    option = cli_option(name)
    common = []
    if option is not None:
        common.append(f":Command line: ``treeboost train {option}``")
    peers = peer_text(name)
    if peers:
        common.append(":In the peers:")
        common += [f"   - {line}" for line in peers]
    return lines + common + [""]


def parameters_rst() -> str:
    """The reStructuredText of the parameter reference (sections titled with ``-``
    for groups and ``~`` for parameters, under a page title of ``=``)."""
    names = parameter_names()
    out = [
        "Every parameter of the estimators and of :func:`~treeboost.train`, written "
        "from the table of ``treeboost.params`` (the one place where each is declared, "
        "and where the estimators check it in ``fit``). The Dask estimators of "
        ":mod:`treeboost.dask` take the parameters of their local counterparts, with "
        "the limits listed there. ``treeboost train`` on the command line takes the "
        "options shown.", "",
        "The peers' names are given for orientation only: treeboost takes its own "
        "names and no aliases, and a peer's setting of the same name may differ in "
        "detail (its default, or what it counts).", "",
        "Summary", "-------", "",
    ]
    out += _summary_table(names)
    for title, _ in GROUPS:
        members = [name for name in names if _group(name) == title]
        if not members:
            continue
        out += [title, "-" * len(title), ""]
        for name in members:
            out += _section(name)
    return "\n".join(out) + "\n"
