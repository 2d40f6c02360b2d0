"""``train()``: the functional entry point of the engine (Dataset -> Booster).

The estimators, and through them the command line and the study, are
clients of ``train``: they check and encode their input, build ``Dataset``
objects and read what the returned ``Booster`` holds. ``train`` owns the rest:
the parameter checks of the engine's parameters, the loss, the bins (through
the ``Dataset``), the evaluation metrics, early stopping and the training log
(callbacks, in that order before the caller's), and the stage loop
(``Booster.fit``).
"""

from __future__ import annotations

import numbers
import os
import reprlib
from collections.abc import Mapping

import numpy as np

from . import _continued
from . import params as _params
from ._dtypes import G_H_DTYPE, MAX_BINS
from ._plan import check_plan
from ._threads import threads
from ._validation import check_multi_strategy
from .booster import Booster, BoostingParams, EvalSet
from .callbacks import EarlyStopping, EvaluationLogger
from .constraints import check_earlier_trees, no_constraint
from .dataset import Dataset
from .grower import GrowerParams
from .losses import (
    AFT,
    RANKING_LOSSES,
    PerOutput,
    TrainingData,
    available_losses,
    get_loss,
    loss_tasks,
    per_target,
)
from .losses.base import GRADIENT_LIMIT, Loss
from .metrics import MULTI_OUTPUT_METRICS, _BuiltinMetric, get_metrics
from .sampling import make_streams, stage_streams


def with_defaults(values: dict, scope: str) -> dict:
    """``values`` completed with the parameter table's defaults for ``scope``."""
    return _params.with_defaults(values, scope)


def boosting_params(values: dict, scope: str = "regressor") -> BoostingParams:
    """The ``BoostingParams`` of a parameter dict (the parameter table's names).

    Names missing from ``values`` take the table's defaults for ``scope``
    ("regressor" or "classifier": their ``max_delta_step`` defaults differ).
    """
    merged = with_defaults(values, scope)
    grower = GrowerParams(**{k: merged[k] for k in _params.part_names("grower")})
    return BoostingParams(grower=grower,
                          **{k: merged[k] for k in _params.part_names("booster")})


def _loss(values: dict, label: np.ndarray) -> Loss:
    """The loss object of ``values["loss"]`` (a name, or a Loss the caller built)."""
    loss = values.get("loss", _params.default("loss"))
    check_multi_strategy(values.get("multi_strategy"), values.get("alpha"))
    if isinstance(values.get("alpha"), (list, tuple, np.ndarray)) and not (
            loss == "quantile" or isinstance(loss, PerOutput)):
        raise ValueError("alpha: a list of quantiles needs loss='quantile', got "
                         f"loss={getattr(loss, 'name', loss)!r}")
    if isinstance(loss, Loss):
        # a 2-D label: the built-in per-column loss once per column (multi-output)
        built = isinstance(loss, PerOutput) and not loss.multi_quantile
        return (per_target(loss, label.shape[1], values.get("multi_strategy"))
                if label.ndim == 2 and not (built and loss.n_outputs == label.shape[1])
                else loss)
    n_classes = None
    if isinstance(loss, str) and "classification" in loss_tasks(loss):
        n_classes = values.get("n_classes") or int(label.max()) + 1
    kwargs = {k: values[k] for k in (*_params.part_names("loss"), "multiclass_step")
              if k in values}
    loss = get_loss(loss, n_classes=n_classes, **kwargs)
    return (per_target(loss, label.shape[1], values.get("multi_strategy"))
            if label.ndim == 2 else loss)


def _continued_loss(values: dict, model: Booster, label: np.ndarray) -> Loss:
    """The loss of a continued model: the model's, which ``values`` may name but not change.

    The loss, its parameters and ``n_classes`` that ``values`` leaves out are the
    model's (the data of a continued fit may lack the highest class); those it gives
    must be the model's (``_continued.FIXED_PARAMS``), or a ``ValueError`` names them.
    """
    old = model.loss
    given = values.get("loss", old.name if old.name in available_losses() else old)
    if isinstance(given, str) and given != old.name:  # refused before it is built
        _continued.check_same_identity({"loss": given}, {"loss": old.name}, "init_model")
    if isinstance(given, str):
        # the model's parameters and n_classes where values has none
        kept = dict(_continued.loss_identity(old))
        kept.pop("loss")
        values = {**kept, **values}
    new = given if isinstance(given, Loss) else _loss({**values, "loss": given}, label)
    _continued.check_same_loss(old, new, "init_model")
    return old


def _init_booster(init_model) -> Booster | None:
    """``init_model`` as a Booster: itself, or loaded from a model file."""
    if init_model is None or isinstance(init_model, Booster):
        return init_model
    if isinstance(init_model, (str, os.PathLike)):
        from .serialization import load_booster

        # a bare Booster's file or an estimator's (save_model): load_booster reads both
        return load_booster(init_model)
    hint = (": pass its booster_ (which train() continues in place) or the path of its "
            "saved model" if hasattr(init_model, "booster_") else "")
    raise TypeError(f"init_model must be a Booster or the path of a saved model "
                    f"(save_booster, or an estimator's save_model), got "
                    f"{type(init_model).__name__}{hint}")


def _check_continuation(params: dict, train_set: Dataset, model: Booster) -> dict:
    """``params`` with the model's values of the parameters it leaves out that cannot
    change mid-model (``_continued.FIXED_PARAMS``); those it gives are checked."""
    if train_set.n_features != model.n_features:
        raise ValueError(f"init_model: train_set has {train_set.n_features} features, but "
                         f"the model to continue was trained on {model.n_features}")
    # an array Dataset without categorical_features takes the model's; one that names
    # categorical features must name the model's
    mask = train_set.is_categorical
    _continued.check_same_bins(model.bin_mapper, params.get("max_bins"),
                               mask if mask.any() else None, "init_model")
    if "boosting" in params:
        _continued.check_same_mode(model, params["boosting"], "init_model")
    else:
        params = {**params, "boosting": model.params.boosting}
    return params


def _seed(random_state) -> int:
    if random_state is None:
        return int(np.random.default_rng().integers(np.iinfo(np.int32).max))
    if isinstance(random_state, numbers.Integral):
        return int(random_state)
    raise TypeError(f"random_state={random_state!r} must be an int or None for train()")


def _labels(data: Dataset, loss: Loss, what: str) -> np.ndarray:
    """The labels ``loss`` reads of ``data``: its ``label``, or for ``loss="aft"`` with a
    ``label_upper_bound`` the time bounds ``[label, label_upper_bound]`` (n_samples, 2).

    Two label columns, not an extra column beside them: the booster hands the labels of
    the training set and of every validation set to the loss and to the metrics, so the
    bounds reach the loss, ``aft-nloglik`` and the concordance index of each set alike.
    """
    upper = getattr(data, "label_upper_bound", None)
    if upper is None:
        return data.label
    if not isinstance(loss, AFT):
        raise ValueError(f"{what} has a label_upper_bound, which only loss='aft' reads; got "
                         f"loss={loss.name!r}")
    return np.column_stack((data.label, upper))


def _start_scores(data: Dataset, loss: Loss, init_model, what: str):
    """The per-row raw scores (n_outputs, n_samples) of ``data.init_score``, or None."""
    try:
        init_raw = data.init_raw(loss.n_outputs)
    except ValueError as exc:
        raise ValueError(f"{what}: {exc}") from None
    if init_raw is not None and init_model is not None:
        # LightGBM silently replaces init_score by init_model's scores; either choice
        # would surprise someone, so neither is made
        raise ValueError(f"{what} has an init_score, which cannot be combined with "
                         "init_model: to boost from your margin plus the model, train a "
                         "new model with init_score = margin + init_model.predict_raw(X) "
                         "(shape (n_samples, n_outputs))")
    return init_raw


def _check_start_gradients(data: Dataset, loss: Loss, init_raw: np.ndarray,
                           what: str) -> None:
    """Refuse an ``init_score`` at which the gradients overflow float32.

    The first stage would otherwise stop with a divergence blamed on y and the
    weights (``Loss.check_scale`` checks them at F0, not at these scores): an
    ``init_score`` of predictions rather than raw scores (a mean of 800 as the raw
    score of a log link) is the usual cause. One gradient pass over the rows.
    """
    gradient = np.empty(init_raw.shape, dtype=G_H_DTYPE)
    hessian = np.empty(init_raw.shape, dtype=G_H_DTYPE)
    view = TrainingData(_labels(data, loss, what), data.weight, data.group_offsets,
                        n_outputs=loss.n_outputs)
    loss.prepare(view)
    with np.errstate(all="ignore"):  # any stage's draws will do: a scale
        loss.gradients(view.at_stage(stage_streams(0, 0)), init_raw, gradient, hessian)
        scale = max(float(np.max(np.abs(gradient), initial=0.0)),
                    float(np.max(np.abs(hessian), initial=0.0)))
    if not scale <= GRADIENT_LIMIT:  # also NaN
        top = float(np.max(np.abs(init_raw), initial=0.0))
        raise ValueError(f"{what}: its init_score (|values| up to {top:.3g}) gives "
                         f"gradients of order {scale:.3g} under loss='{loss.name}', beyond "
                         f"{GRADIENT_LIMIT:.0e}, the limit for float32 gradients: init_score "
                         "holds raw scores (log-odds for log_loss, the log of the mean for "
                         "poisson, gamma and tweedie), not predictions")


def _take_max_bins(params: dict, train_set: Dataset, init_model) -> None:
    """Apply ``params["max_bins"]`` to a training set not binned yet (as LightGBM's
    ``max_bin`` in ``params``); refuse one that contradicts the set's bins."""
    wanted = params.get("max_bins")
    if wanted is None or wanted == train_set.max_bins or init_model is not None:
        return  # a continued model keeps its own bins
    if train_set.constructed or train_set.max_bins != MAX_BINS:
        raise ValueError(f"params max_bins={wanted} differs from the train_set's "
                         f"max_bins={train_set.max_bins}"
                         f"{' (it is binned already)' if train_set.constructed else ''}: "
                         "give max_bins once, to the Dataset or in params")
    train_set.max_bins = wanted


def _keep_feature_info(booster: Booster, train_set: Dataset) -> None:
    """Give the booster the training set's feature names and frame categories."""
    names = train_set.feature_names
    if booster.trees and booster.feature_names is not None and names is not None \
            and list(names) != list(booster.feature_names):
        raise ValueError(f"train_set's feature_names {list(names)[:5]} differ from "
                         f"init_model's {list(booster.feature_names)[:5]}")
    if names is not None:
        booster.feature_names = list(names)
    if train_set.pandas_categories:
        booster.pandas_categories = dict(train_set.pandas_categories)


def _check_params(params) -> dict:
    """``params`` as a new dict, or a ``TypeError`` naming what was passed."""
    if isinstance(params, Mapping):
        return dict(params)
    got = "None" if params is None else (f"a {type(params).__name__} "
                                         f"({reprlib.repr(params)})")
    raise TypeError(f"params must be a dict of parameters by name, such as "
                    f"{{'learning_rate': 0.1}} (see treeboost.params), got {got}")


def _valid_sets(valid_sets, valid_names) -> tuple[list, list]:
    """The validation Datasets and their names.

    ``valid_sets`` is a Dataset, a sequence of them (LightGBM's), or of ``(Dataset,
    name)`` pairs (XGBoost's ``evals``); names come from ``valid_names``, else from
    the pairs, else ``validation_<i>``.
    """
    if valid_sets is None:
        valid_sets = []
    elif isinstance(valid_sets, Dataset) or (
            isinstance(valid_sets, tuple) and len(valid_sets) == 2
            and isinstance(valid_sets[0], Dataset) and isinstance(valid_sets[1], str)):
        valid_sets = [valid_sets]  # one set, or one XGBoost pair
    try:
        items = list(valid_sets)
    except TypeError:
        raise TypeError(f"valid_sets must be a Dataset or a list of Datasets or of (Dataset, "
                        f"name) pairs, got {type(valid_sets).__name__}") from None
    sets, given = [], []
    for i, item in enumerate(items):
        if isinstance(item, Dataset):
            sets.append(item)
            given.append(None)
        elif isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(
                item[0], Dataset) and isinstance(item[1], str):
            sets.append(item[0])
            given.append(item[1])
        else:
            raise TypeError(f"valid_sets[{i}] must be a Dataset or a (Dataset, name) pair, "
                            f"got {type(item).__name__}")
    if valid_names is not None:
        names = list(valid_names)
        named = next((i for i, name in enumerate(given) if name is not None), None)
        if named is not None:
            raise ValueError(f"valid_names={names!r} and the pair valid_sets[{named}] (named "
                             f"{given[named]!r}) both name the sets: name them once")
        if len(names) != len(sets):
            raise ValueError("valid_names must have one name per valid set")
    else:
        names = [f"validation_{i}" if name is None else name for i, name in enumerate(given)]
    twice = next((name for i, name in enumerate(names) if name in names[:i]), None)
    if twice is not None:
        raise ValueError(f"the valid sets have the name {twice!r} twice: their evaluation "
                         "logs would be one")
    return sets, names


def train(params: dict, train_set: Dataset, *, valid_sets=(), valid_names=None,
          callbacks=(), init_model: Booster | None = None, trace: list | None = None,
          collective=None, plan=None) -> Booster:
    """Train a gradient boosting model on a ``Dataset``.

    Parameters
    ----------
    params : dict
        Parameters by the names of the parameter table (``treeboost.params``):
        ``loss`` (a name or a ``Loss``), ``n_estimators``, ``learning_rate``,
        tree and sampling parameters, ``eval_metric`` (names and ``Metric``
        objects), ``n_iter_no_change`` and ``tol`` (early stopping on the last
        validation set, or on the training data without one), ``verbose``
        (log every ``verbose`` stages), ``random_state`` (int), ``n_jobs``
        (threads of this call), ``max_bins`` (applied to a ``train_set`` not yet
        binned, which must not have another ``max_bins`` of its own). Names missing
        take the table's defaults; ``n_classes`` may be given for
        classification (else it is ``max(label) + 1``).
        ``interaction_constraints=[]`` means no constraint (as LightGBM). When
        continuing a model, the loss and its parameters, ``n_classes``,
        ``max_bins`` and the boosting mode's family cannot change
        (``ValueError``); those left out are the model's.
    train_set : Dataset
        Training data with its label (and weights); binned here if it is not
        yet, with the bins of ``init_model`` when continuing. If it has an
        ``init_score``, training starts from those raw scores and F0 is 0
        (LightGBM's ``init_score``); the model's predictions exclude them.
        Its ``feature_names`` and frame categories are kept by the Booster,
        and its ``group_offsets`` are passed to losses that need groups.
    valid_sets : Dataset or sequence of Dataset or of (Dataset, str), default=()
        Data scored after every stage, binned with the training bins; the
        ``init_score`` of a set is added to its scores. ``(Dataset, name)``
        pairs (XGBoost's ``evals``) name their sets.
    valid_names : sequence of str, default=None
        Their names in the evaluation log (default ``validation_0``, ...); not
        with named pairs.
    callbacks : sequence of TrainingCallback, default=()
        Called after the training log and early stopping (``Booster.fit``).
    init_model : Booster, str or path-like, default=None
        A model to continue, or the path of its file (``save_booster``, or an
        estimator's ``save_model``): its F0, trees and bins are kept, and
        stages are added up to ``n_estimators`` in all. A Booster is modified
        and returned. It cannot be combined with a training ``init_score``
        (refused), nor with monotone or interaction constraints that its trees
        do not meet (refused: the model would claim them and break them).
    trace : list, default=None
        If a list, one record per tree is appended (``treeboost.trace``).
    collective : treeboost.collective.Collective, default=None
        Data-parallel training: every member of the group calls ``train`` with the
        same ``params`` (an int ``random_state``) and its own rows in ``train_set``,
        binned with the same ``BinMapper`` (``Dataset.construct(bin_mapper)`` or
        ``Dataset.from_chunks(..., bin_mapper=)``); F0 and every node histogram are
        summed over the group, and each member returns the model of all the rows
        (``booster.check_distributed`` says what is not supported yet). Each member
        passes its own rows of the same ``valid_sets`` (none, for a member that has
        none of a set's rows, is an empty Dataset); the metrics, and so early
        stopping, are evaluated on the rows of all the members, gathered in rank
        order.
    plan : ExecutionPlan or dict, default=None
        The fit's execution plan (``treeboost._plan.ExecutionPlan``): its threads and
        the sizes from which each parallel path is taken. By default it is made from the
        training set's shape, the loss and ``n_jobs`` (``make_plan``); a dict sets some
        of its fields by name (such as ``{"serial_histogram_updates": 0}``) and the rest
        are made so, an ``ExecutionPlan`` is used as it is. Every plan grows the same
        model bit for bit: it is for tests and measurements. The plan a fit used is the
        returned Booster's ``execution_plan`` (not saved with the model), and
        ``verbose`` logs it once at the start.

    Returns
    -------
    Booster
        The fitted model. ``best_iteration`` is the 0-based best stage when
        early stopping ran (the model keeps the stages up to it), else None;
        ``evals_result`` is the evaluation log of the stages this call added.
    """
    params = _check_params(params)
    if not isinstance(train_set, Dataset):
        raise TypeError(f"train_set must be a Dataset, got {type(train_set).__name__}")
    if train_set.label is None:
        raise ValueError("train_set has no label")
    valid_sets, names = _valid_sets(valid_sets, valid_names)
    check_plan(plan)
    init_model = _init_booster(init_model)
    loss = (_loss(params, train_set.label) if init_model is None
            else _continued_loss(params, init_model, train_set.label))
    label = _labels(train_set, loss, "train_set")
    loss.validate_target(label)
    init_raw = _start_scores(train_set, loss, init_model, "train_set")
    ranking = loss.task == "ranking"
    if init_raw is not None and not ranking:
        _check_start_gradients(train_set, loss, init_raw, "train_set")
    if ranking and train_set.group_offsets is None:
        raise ValueError(f"loss '{loss.name}' needs query groups: build train_set with "
                         "group= or qid=")
    scope = ("classifier" if loss.is_classification
             else "ranker" if loss.name in RANKING_LOSSES else "regressor")
    table = _params.params_for(scope)
    unknown = sorted(set(params) - set(table) - {"n_classes"})
    if unknown:
        raise ValueError(f"unknown parameter(s) {unknown} for a {scope.replace('or', 'ion')} "
                         "loss; see treeboost.params")
    _params.validate({k: v for k, v in params.items()
                      if k in table and not (k == "loss" and isinstance(v, Loss))}, scope)
    if init_model is not None:
        params = _check_continuation(params, train_set, init_model)
    if collective is not None:
        if not train_set.constructed:
            raise ValueError("train_set must be binned with the group's common bins "
                             "(construct(bin_mapper)) for training over a collective")
        if params.get("random_state") is None or trace is not None:
            raise ValueError("training over a collective needs an int random_state and "
                             "does not trace")
    if "interaction_constraints" in params and no_constraint(
            params["interaction_constraints"]):
        params["interaction_constraints"] = None  # [] is no constraint, as in LightGBM
    _take_max_bins(params, train_set, init_model)
    params = with_defaults(params, scope)
    seed = _seed(params["random_state"])
    streams = make_streams(seed)
    train_set.construct(None if init_model is None else init_model.bin_mapper,
                        random_state=streams["binning"])
    bin_mapper = train_set.bin_mapper
    eval_sets = []
    for name, vs in zip(names, valid_sets, strict=True):
        if vs.label is None:
            raise ValueError(f"valid set {name!r} has no label")
        if ranking and vs.group_offsets is None:
            raise ValueError(f"valid set {name!r} has no query groups, which the ranking "
                             f"loss '{loss.name}' is evaluated over: build it with group= "
                             "or qid=")
        eval_sets.append(EvalSet(name, vs.construct(bin_mapper).binned,
                                 _labels(vs, loss, f"valid set {name!r}"), vs.weight,
                                 _start_scores(vs, loss, None, f"valid set {name!r}"),
                                 vs.group_offsets))
    p = boosting_params(params, scope)
    if init_model is not None:  # before the model changes: a refusal leaves it as it was
        check_earlier_trees(init_model.trees, p.grower.monotone_constraints,
                            p.grower.interaction_constraints, init_model.n_features,
                            "init_model", init_model.feature_names)
    if init_model is None:
        booster = Booster(loss, bin_mapper, p)
    else:
        booster = init_model
        booster.params = p
    _keep_feature_info(booster, train_set)
    metrics = get_metrics(params["eval_metric"], loss)
    if isinstance(loss, PerOutput):
        # RMSE and MAE average over the outputs, as the loss's own metric; the others
        # (classes, query groups, survival times) have no meaning for several outputs
        for m in metrics:
            if isinstance(m, _BuiltinMetric) and m.name != loss.name \
                    and m.name not in MULTI_OUTPUT_METRICS:
                raise ValueError(f"eval_metric={m.name!r} is not defined for several "
                                 "outputs (a 2-D y or a list of alphas); use one of "
                                 f"{['loss', *MULTI_OUTPUT_METRICS]} (each the mean over "
                                 "the outputs) or a make_metric metric")
    patience = params["n_iter_no_change"]
    verbose = params["verbose"]
    chain = []  # the documented order: logger, early stopping, the caller's
    if verbose:
        chain.append(EvaluationLogger(verbose, n_estimators=p.n_estimators))
    stopper = None
    if patience is not None:
        monitored = eval_sets[-1].name if eval_sets else "training"
        # the first metric only (LightGBM's first_metric_only, as the default)
        stopper = EarlyStopping(monitored, metrics[0].name, patience,
                                params["tol"], metrics[0].higher_is_better)
        chain.append(stopper)
    chain.extend(callbacks)
    record_training = bool(verbose) or (patience is not None and not eval_sets)
    with threads(params["n_jobs"]):
        evals = booster.fit(train_set.binned, label, train_set.weight, seed,
                            eval_sets, metrics, record_training, chain, trace,
                            init_raw=init_raw, group_offsets=train_set.group_offsets,
                            collective=collective, plan=plan, log_plan=bool(verbose))
    # the stopper's after_training kept the stages up to its best one
    booster.best_iteration = None if stopper is None else stopper.best_iteration
    booster.evals_result = evals
    return booster
