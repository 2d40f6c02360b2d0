"""The one registry of losses: names to factories and tasks, ``get_loss``, ``register_loss``.

Every loss name the library accepts (``loss="..."`` of the estimators, the
``"name"`` of a saved model's loss) is an entry of ``_REGISTRY``: the
built-in losses are registered below exactly as a user loss is, with
``register_loss``. ``REGRESSION_LOSSES``, ``CLASSIFICATION_LOSSES``, ``RANKING_LOSSES``
and ``SURVIVAL_LOSSES`` are live views of it, never copies, so a registered loss is at
once a valid ``loss=`` of the estimator of its task. The survival losses (``cox``, ``aft``)
are also registered for "regression": Cox's labels are one column of signed times, so
``train()`` and the regressor take it as XGBoost's ``survival:cox``; AFT's are times (all
observed) or, through ``train()``, a ``Dataset``'s ``label`` and ``label_upper_bound``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ._data import TrainingData
from .base import (
    LEAF_LINE_SEARCHES,
    Loss,
    check_leaf_line_search,
    newton_leaf_value,
    weighted_quantile,
)
from .classification import BinaryLogLoss, ExponentialLoss, SoftmaxLogLoss
from .formula import Formula
from .ranking import LambdaRank, Pairwise, RankXENDCG
from .regression import (
    PER_COLUMN_LOSSES,
    AbsoluteError,
    Gamma,
    Huber,
    PerOutput,
    Poisson,
    Quantile,
    SquaredError,
    Tweedie,
    conformal_offset,
    multi_quantile,
    per_target,
)
from .survival import AFT, Cox

#: the tasks a loss may be registered for
TASKS = ("regression", "classification", "ranking", "survival")


@dataclass(frozen=True)
class _Entry:
    """One registered loss: how to build it, for which tasks, from which parameters."""

    name: str
    factory: object
    tasks: tuple
    params: tuple
    builtin: bool


_REGISTRY: dict[str, _Entry] = {}


def _check_name(name) -> None:
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"loss name {name!r} must be a str made of letters, digits and "
                         "underscores (a Python identifier)")


def _register(name, factory, *, task, params=(), builtin=False) -> None:
    _check_name(name)
    if name in _REGISTRY:
        raise ValueError(f"loss {name!r} is already registered (tasks "
                         f"{list(_REGISTRY[name].tasks)}); unregister_loss({name!r}) first "
                         "or choose another name")
    tasks = (task,) if isinstance(task, str) else task
    try:
        tasks = tuple(tasks)
    except TypeError:
        tasks = (task,)
    if not tasks or any(t not in TASKS for t in tasks) or len(set(tasks)) != len(tasks):
        raise ValueError(f"register_loss({name!r}): task={task!r} must be one of {list(TASKS)} "
                         "or a tuple of distinct ones")
    params = (params,) if isinstance(params, str) else params
    try:
        params = tuple(params)
    except TypeError:
        params = (params,)
    bad = [p for p in params if not isinstance(p, str) or not p.isidentifier()
           or p == "n_classes"]
    if bad:
        raise ValueError(f"register_loss({name!r}): params={params!r} must be parameter "
                         f"names (n_classes is always passed to factories); bad: {bad}")
    if isinstance(factory, type):
        if not issubclass(factory, Loss):
            raise TypeError(f"register_loss({name!r}): {factory.__qualname__} is not a "
                            "treeboost.losses.Loss subclass")
        try:
            check_leaf_line_search(factory)
        except TypeError as err:
            raise TypeError(f"register_loss({name!r}): {err}") from None
        if bool(factory.is_classification) != ("classification" in tasks) and \
                "ranking" not in tasks:
            raise ValueError(f"register_loss({name!r}): {factory.__qualname__} has "
                             f"is_classification={factory.is_classification}, which does "
                             f"not suit task={task!r}")
    elif not callable(factory):
        raise TypeError(f"register_loss({name!r}): factory {factory!r} must be a Loss "
                        "subclass or a callable returning a Loss")
    _REGISTRY[name] = _Entry(name, factory, tasks, params, builtin)


def register_loss(name: str, factory, *, task, params=()) -> None:
    """Register a loss under ``name``, making it a valid ``loss=`` for its task.

    After registration ``get_loss(name, ...)`` builds it, ``available_losses(task)``
    lists it, the estimator of its task (``TreeBoostRegressor`` for
    ``"regression"``, ``TreeBoostClassifier`` for ``"classification"``)
    accepts ``loss=name``, and a model trained with it is saved under
    ``name``: loading that model needs the loss registered again, under the
    same name, in the loading process.

    Parameters
    ----------
    name : str
        The loss's name, a Python identifier not yet registered. The built
        loss's ``name`` attribute is set to it.
    factory : Loss subclass or callable
        A ``treeboost.losses.Loss`` subclass, called with the accepted
        parameters given to ``get_loss`` (``cls(**params)``); or a callable
        ``factory(n_classes=..., **params) -> Loss``. A class must declare a
        ``leaf_line_search`` agreeing with its ``leaf_values`` or ``line_search``
        (see ``treeboost.losses.Loss``), and its ``is_classification`` must suit
        ``task``. The engine calls the loss's ``prepare(data)`` once per fit,
        ``init_raw(data)`` for F0, ``gradients(data, raw, gradient, hessian)`` every
        stage and, for a line search, ``line_search(data, output, raw, ...)`` per
        tree, ``data`` being a ``treeboost.losses.TrainingData`` (labels of any
        width, weights, query groups, extra per-row columns, the stage's ``rng``);
        their defaults call the per-row ``init_score``, ``gradient_hessian`` and
        ``leaf_values``, so a loss implements whichever form suits it
        (``docs/guide/losses.rst``, "Custom losses").
    task : str or tuple of str
        ``"regression"``, ``"classification"``, ``"ranking"`` or ``"survival"``, or several.
    params : tuple of str, default=()
        The parameters the loss accepts (e.g. ``("alpha",)``); ``get_loss``
        passes these and drops the others it is given (the estimators pass
        ``alpha`` and ``power`` to every regression loss).

    Raises
    ------
    ValueError
        If ``name`` is taken or not an identifier, or ``task`` or ``params``
        is invalid.
    TypeError
        If ``factory`` is neither a ``Loss`` subclass nor callable, or its
        ``leaf_line_search`` disagrees with its ``leaf_values``.

    See Also
    --------
    unregister_loss, available_losses, get_loss

    Examples
    --------
    >>> from treeboost.losses import (SquaredError, available_losses, register_loss,
    ...                               unregister_loss)
    >>> class MySquared(SquaredError):
    ...     pass
    >>> register_loss("my_squared", MySquared, task="regression")
    >>> "my_squared" in available_losses("regression")
    True
    >>> unregister_loss("my_squared")
    """
    _register(name, factory, task=task, params=params, builtin=False)


def unregister_loss(name: str) -> None:
    """Remove a loss registered by ``register_loss`` (built-in losses stay).

    Parameters
    ----------
    name : str
        A name given to ``register_loss``.

    Raises
    ------
    ValueError
        If ``name`` is not registered or names a built-in loss.
    """
    entry = _REGISTRY.get(name)
    if entry is None:
        raise ValueError(f"loss {name!r} is not registered")
    if entry.builtin:
        raise ValueError(f"loss {name!r} is built in and cannot be unregistered")
    del _REGISTRY[name]


def available_losses(task: str | None = None) -> list[str]:
    """Names accepted by ``get_loss``, in registration order.

    Parameters
    ----------
    task : str, default=None
        ``"regression"``, ``"classification"``, ``"ranking"`` or ``"survival"``: only the
        losses of that task; None: every loss.

    Returns
    -------
    list of str
    """
    if task is not None and task not in TASKS:
        raise ValueError(f"task={task!r} is not one of {list(TASKS)}")
    return [name for name, entry in _REGISTRY.items() if task is None or task in entry.tasks]


def loss_params(name: str) -> tuple:
    """The parameter names the loss registered as ``name`` accepts; () if not registered.

    Parameters
    ----------
    name : str
        A registered loss name.

    Returns
    -------
    tuple of str
    """
    entry = _REGISTRY.get(name)
    return entry.params if entry is not None else ()


def loss_tasks(name: str) -> tuple:
    """The tasks ``name`` is registered for; () if it is not registered."""
    entry = _REGISTRY.get(name)
    return entry.tasks if entry is not None else ()


class LossNames(Sequence):
    """The names of one task's losses, read from the registry at each use (a live view)."""

    def __init__(self, task: str):
        self.task = task

    def _names(self) -> tuple:
        return tuple(available_losses(self.task))

    def __getitem__(self, index):
        return self._names()[index]

    def __len__(self) -> int:
        return len(self._names())

    def __contains__(self, name) -> bool:
        return self.task in loss_tasks(name) if isinstance(name, str) else False

    def __repr__(self) -> str:
        return repr(self._names())


REGRESSION_LOSSES = LossNames("regression")
CLASSIFICATION_LOSSES = LossNames("classification")
RANKING_LOSSES = LossNames("ranking")
SURVIVAL_LOSSES = LossNames("survival")


def get_loss(name: str, *, n_classes: int | None = None, **params) -> Loss:
    """Build a loss from its name.

    Parameters
    ----------
    name : str, Loss, Formula or callable
        One of ``available_losses()``, or a user loss (see
        ``treeboost.losses.custom.as_user_loss``).
    n_classes : int, default=None
        Number of classes, required for classification losses.
    **params
        Loss parameters: ``alpha`` (huber, quantile), ``power`` (tweedie),
        ``multiclass_step`` (log_loss with more than two classes), or those
        a registered loss declares; the others are ignored. ``alpha`` a list
        (``quantile``): one output per level (``multi_quantile``); ``n_targets``:
        one output per label column of a 2-D y (``per_target``), grown as
        ``multi_strategy`` says.

    Returns
    -------
    Loss
    """
    if not isinstance(name, str):  # a user loss: Loss, Formula or (grad, hess) callable
        from .custom import as_user_loss

        return as_user_loss(name, n_classes=n_classes)
    entry = _REGISTRY.get(name)
    if entry is None:
        raise ValueError(f"loss={name!r} is not one of {available_losses()}")
    n_targets = params.pop("n_targets", None)
    multi_strategy = params.pop("multi_strategy", None)  # with n_targets (a model file)
    if name == "quantile" and entry.builtin and isinstance(params.get("alpha"),
                                                           (list, tuple, np.ndarray)):
        if n_targets is not None:
            raise ValueError("a list of alphas (multi-quantile) takes a 1-D y, not "
                             f"{n_targets} target columns")
        return multi_quantile(params["alpha"], params.get("band_offset"))
    loss = _build(entry, name, n_classes, params)
    return loss if n_targets is None else per_target(loss, int(n_targets), multi_strategy)


def _build(entry: _Entry, name: str, n_classes, params: dict) -> Loss:
    """The loss of registry entry ``entry`` with the parameters it accepts."""
    kept = {k: v for k, v in params.items() if k in entry.params}
    if isinstance(entry.factory, type):
        if n_classes is not None and n_classes > 2 and entry.factory.n_outputs == 1:
            raise ValueError(f"loss={name!r} supports binary classification only; "
                             f"got {n_classes} classes (use loss='log_loss')")
        loss = entry.factory(**kept)
    else:
        loss = entry.factory(n_classes=n_classes, **kept)
    if not isinstance(loss, Loss):
        raise TypeError(f"loss={name!r}: its factory returned {loss!r}, not a "
                        "treeboost.losses.Loss")
    if loss.name != name:
        loss.name = name  # saved under the name it was registered with
    return loss


def _log_loss(*, n_classes=None, multiclass_step="friedman") -> Loss:
    """Binary log-loss for two classes, softmax for more."""
    if n_classes is None:
        raise ValueError("loss='log_loss' needs n_classes")
    if n_classes <= 2:
        return BinaryLogLoss()
    return SoftmaxLogLoss(n_classes, multiclass_step=multiclass_step)


for _cls, _params in ((SquaredError, ()), (AbsoluteError, ()), (Huber, ("alpha",)),
                      (Quantile, ("alpha",)), (Poisson, ()), (Gamma, ()),
                      (Tweedie, ("power",))):
    _register(_cls.name, _cls, task="regression", params=_params, builtin=True)
_register("log_loss", _log_loss, task="classification", params=("multiclass_step",),
          builtin=True)
_register("exponential", ExponentialLoss, task="classification", builtin=True)
_register("lambdarank", LambdaRank, task="ranking", builtin=True,
          params=("lambdarank_truncation_level", "lambdarank_norm", "sigmoid", "label_gain"))
_register("rank_xendcg", RankXENDCG, task="ranking", builtin=True)
_register("pairwise", Pairwise, task="ranking", params=("sigmoid",), builtin=True)
_register("cox", Cox, task=("regression", "survival"), builtin=True)
_register("aft", AFT, task=("regression", "survival"), builtin=True,
          params=("aft_loss_distribution", "aft_loss_distribution_scale"))
del _cls, _params

__all__ = ["Loss", "TrainingData", "LEAF_LINE_SEARCHES", "TASKS", "available_losses", "get_loss",
           "register_loss", "unregister_loss", "loss_tasks", "loss_params", "newton_leaf_value",
           "weighted_quantile", "REGRESSION_LOSSES", "CLASSIFICATION_LOSSES", "RANKING_LOSSES",
           "SURVIVAL_LOSSES", "Cox", "AFT",
           "SquaredError", "AbsoluteError", "Huber", "Quantile", "Poisson", "Gamma", "Tweedie",
           "BinaryLogLoss", "ExponentialLoss", "SoftmaxLogLoss", "Formula",
           "PerOutput", "PER_COLUMN_LOSSES", "per_target", "multi_quantile",
           "conformal_offset"]
