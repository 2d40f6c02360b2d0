"""Training callbacks: the protocol, early stopping and the per-stage evaluation log.

``Booster.fit`` drives a ``CallbackList``: ``before_training(booster)`` once,
then after every stage the booster evaluates its metrics and calls
``after_iteration(iteration, evals_log)`` on every callback; training stops
after the stage if any returned True. Finally ``after_training(booster)``
runs once, whatever ended training (``n_estimators`` reached or a stop; an
error raised during training skips it).
Control is by return value only: no exceptions, no attributes to set.

``evals_log`` maps a data set name ("training", "validation",
"validation_0", ...) to {metric name: list of values, one per stage of this
fit so far}; ``iteration`` is the 0-based index of the stage just trained
(counted from the first stage of the model when training continues one).

The estimators run their callbacks in this documented order, at every hook:

1. ``EvaluationLogger`` (``verbose > 0``);
2. ``EarlyStopping`` (``n_iter_no_change`` set): it monitors the first
   metric of ``eval_metric`` and, in ``after_training``, rewinds the model to
   its best stage;
3. the user's ``callbacks``, in the order given.

So a user callback's ``after_training`` sees the model the estimator keeps,
and a user stop at stage 17 keeps exactly 17 stages unless early stopping
is on (which then keeps its best stage, as it does when ``n_estimators``
is reached).

``EvaluationLogger`` writes through the ``treeboost`` logger (``_logging``):
INFO records when the user has configured ``logging``, plain lines on stdout
when not. ``ProgressBar`` is the opt-in progress bar (tqdm, the ``progress``
extra); nothing draws one unless it is passed in ``callbacks``.
"""

from __future__ import annotations

import numpy as np

from ._logging import log_info

#: the hooks every callback has
HOOKS = ("before_training", "after_iteration", "after_training")


class TrainingCallback:
    """Base class of training callbacks: override the hooks you need.

    Any object with the three methods below works as a callback; subclassing
    this class gives no-op defaults.

    Examples
    --------
    >>> from treeboost.callbacks import TrainingCallback
    >>> class StopAt(TrainingCallback):
    ...     def __init__(self, n_stages):
    ...         self.n_stages = n_stages
    ...     def after_iteration(self, iteration, evals_log):
    ...         return iteration + 1 >= self.n_stages
    """

    def before_training(self, booster) -> None:
        """Called once before the first new stage.

        Parameters
        ----------
        booster : Booster
            The model being trained (it already holds the stages of a model
            being continued).
        """

    def after_iteration(self, iteration: int, evals_log: dict) -> bool:
        """Called after every stage; return True to stop training after it.

        Parameters
        ----------
        iteration : int
            0-based index of the stage just trained.
        evals_log : dict
            {data set name: {metric name: [value per stage of this fit]}};
            read it, do not modify it.

        Returns
        -------
        bool
            True stops training (the stage just trained is kept); False (or
            None) goes on.
        """
        return False

    def after_training(self, booster) -> None:
        """Called once when training ends (``n_estimators`` reached or a stop).

        Parameters
        ----------
        booster : Booster
            The trained model.
        """


def check_callbacks(callbacks) -> list:
    """The ``callbacks`` argument of ``fit`` as a list; ``TypeError`` naming it if invalid.

    Parameters
    ----------
    callbacks : list or tuple of TrainingCallback, or None
        Objects with ``before_training``, ``after_iteration`` and
        ``after_training`` methods.

    Returns
    -------
    list
    """
    if callbacks is None:
        return []
    if not isinstance(callbacks, (list, tuple)):
        raise TypeError(f"callbacks={callbacks!r} must be a list of TrainingCallback objects "
                        "(treeboost.callbacks.TrainingCallback)")
    for i, cb in enumerate(callbacks):
        missing = [h for h in HOOKS if not callable(getattr(cb, h, None))]
        if missing:
            raise TypeError(f"callbacks[{i}]={cb!r} is not a TrainingCallback: it lacks "
                            f"{', '.join(missing)}; subclass "
                            "treeboost.callbacks.TrainingCallback and override "
                            "after_iteration(iteration, evals_log) -> bool")
    return list(callbacks)


class CallbackList:
    """Callbacks called in order at every hook; what ``Booster.fit`` drives.

    Parameters
    ----------
    callbacks : sequence of TrainingCallback
        In calling order.
    """

    def __init__(self, callbacks=()):
        self.callbacks = list(callbacks)

    def before_training(self, booster) -> None:
        """Call every callback's ``before_training``."""
        for cb in self.callbacks:
            cb.before_training(booster)

    def after_iteration(self, iteration: int, evals_log: dict) -> bool:
        """Call every callback (all of them, even after a stop); True if any asks to stop."""
        stop = False
        for i, cb in enumerate(self.callbacks):
            answer = cb.after_iteration(iteration, evals_log)
            if answer is None:
                continue
            if not isinstance(answer, (bool, np.bool_)):
                raise TypeError(f"callbacks: {type(cb).__name__}.after_iteration (callback "
                                f"{i}) returned {answer!r}; it must return True (stop) or "
                                "False (go on)")
            stop = stop or bool(answer)
        return stop

    def after_training(self, booster) -> None:
        """Call every callback's ``after_training``."""
        for cb in self.callbacks:
            cb.after_training(booster)


class EarlyStopping(TrainingCallback):
    """Stop when the monitored score has not improved by more than ``tol`` for ``patience`` stages.

    Parameters
    ----------
    data_name, metric_name : str
        Entry of ``evals_log`` to monitor.
    patience : int
        ``n_iter_no_change``.
    tol : float
        Minimum improvement that counts.
    higher_is_better : bool
        Direction of the metric (``Metric.higher_is_better``).
    keep_best : bool, default=True
        In ``after_training``, cut the model back to its best stage, whatever
        ended training.

    Attributes
    ----------
    best_iteration : int
        0-based stage with the best score so far (-1 before the first).
    best_score : float
        That score, times -1 if lower is better.
    """

    def __init__(self, data_name, metric_name, patience, tol, higher_is_better,
                 keep_best=True):
        self.data_name = data_name
        self.metric_name = metric_name
        self.patience = patience
        self.tol = tol
        self.sign = 1.0 if higher_is_better else -1.0
        self.keep_best = keep_best
        self.best_iteration = -1
        self.best_score = -np.inf

    def after_iteration(self, iteration, evals_log):
        """Track the best score; stop after ``patience`` stages without improvement."""
        score = self.sign * evals_log[self.data_name][self.metric_name][-1]
        if self.best_iteration < 0 or score > self.best_score + self.tol:
            self.best_score = score
            self.best_iteration = iteration
            return False
        return iteration - self.best_iteration >= self.patience

    def after_training(self, booster) -> None:
        """Keep the stages up to the best one (``keep_best``)."""
        if self.keep_best and self.best_iteration >= 0:
            booster.truncate(self.best_iteration + 1)


class EvaluationLogger(TrainingCallback):
    """Log every ``period``-th stage's metrics: what ``verbose=period`` turns on.

    Each line reads ``[stage/n_estimators]  data metric: value ...``. Without
    ``stream`` it is an INFO record of the ``treeboost`` logger when ``logging``
    is configured for it (a handler or level on that logger, or a root handler
    that lets INFO through) and a line on stdout otherwise, as before logging
    was used.

    Parameters
    ----------
    period : int, default=1
        Log every ``period``-th stage (values below 1 mean 1).
    stream : file-like, default=None
        Write the lines to this stream instead, whatever ``logging`` says.
    n_estimators : int, default=None
        The number of stages shown after the stage number, if given.

    Notes
    -----
    To send the ``verbose`` lines of every fit to a file instead of stdout::

        import logging
        logger = logging.getLogger("treeboost")
        logger.setLevel(logging.INFO)
        logger.addHandler(logging.FileHandler("fit.log"))

    ``logger.setLevel(logging.WARNING)`` silences them.

    Examples
    --------
    >>> import io
    >>> from treeboost.callbacks import EvaluationLogger
    >>> log = EvaluationLogger(stream=io.StringIO(), n_estimators=5)
    >>> log.after_iteration(0, {"training": {"rmse": [1.5]}})
    False
    >>> log.stream.getvalue()
    '[1/5]  training rmse: 1.5\\n'
    """

    def __init__(self, period: int = 1, stream=None, n_estimators: int | None = None):
        self.period = max(1, int(period))
        self.stream = stream
        self.n_estimators = n_estimators

    def after_iteration(self, iteration, evals_log):
        """Write one line: ``[stage]  name metric: value ...``."""
        if (iteration + 1) % self.period:
            return False
        parts = [f"{data} {metric}: {values[-1]:.6g}"
                 for data, metrics in evals_log.items() for metric, values in metrics.items()]
        total = f"/{self.n_estimators}" if self.n_estimators else ""
        log_info(f"[{iteration + 1}{total}]  " + "  ".join(parts), self.stream)
        return False


class ProgressBar(TrainingCallback):
    """A progress bar over the stages of a fit, drawn by tqdm; pass it in ``callbacks``.

    The library never draws a bar unless asked: pass ``ProgressBar()`` to
    ``fit(..., callbacks=[...])`` or ``train(..., callbacks=[...])``. tqdm is an
    optional dependency (``pip install 'treeboost[progress]'``); without it, and
    without ``tqdm_class``, the constructor raises ``ImportError`` saying so
    rather than training without the bar that was asked for.

    The bar counts stages toward ``n_estimators`` (starting from the stages a
    continued model already has) and shows the last value of the metric early
    stopping monitors (the first metric of the last data set) when one is
    logged. It closes when training ends; a stop (early stopping, a
    callback) leaves it short of its total.

    Parameters
    ----------
    desc : str, default="boosting"
        The label in front of the bar.
    delay : float, default=0.0
        Seconds before the bar appears (tqdm's ``delay``): fits shorter than
        that draw nothing.
    file : file-like, default=None
        Where the bar is drawn (None: tqdm's default, ``sys.stderr``).
    leave : bool, default=True
        Keep the finished bar on screen.
    tqdm_class : callable, default=None
        Makes the bar: called as ``tqdm_class(total=, initial=, desc=, unit=,
        delay=, file=, leave=)``; the object it returns needs ``update(n)``,
        ``set_postfix_str(text, refresh=)`` and ``close()``. None is
        ``tqdm.tqdm``; ``tqdm.auto.tqdm`` gives a widget in notebooks.

    Attributes
    ----------
    bar : object or None
        The bar of the fit in progress; None outside a fit.

    Examples
    --------
    >>> from treeboost import TreeBoostRegressor
    >>> from treeboost.callbacks import ProgressBar
    >>> model = TreeBoostRegressor(n_estimators=500)
    >>> model.fit(X, y, callbacks=[ProgressBar()])  # doctest: +SKIP
    """

    def __init__(self, *, desc: str = "boosting", delay: float = 0.0, file=None,
                 leave: bool = True, tqdm_class=None):
        if tqdm_class is None:
            tqdm_class = _tqdm()  # fail here, before a fit that would run without the bar
        self.desc = desc
        self.delay = delay
        self.file = file
        self.leave = leave
        self.tqdm_class = tqdm_class
        self.bar = None

    def before_training(self, booster) -> None:
        """Open the bar at the model's stage count, toward ``n_estimators``."""
        self.close()  # one instance may serve several fits
        self.bar = self.tqdm_class(total=booster.params.n_estimators,
                                   initial=len(booster.trees), desc=self.desc, unit="stage",
                                   delay=self.delay, file=self.file, leave=self.leave)

    def after_iteration(self, iteration, evals_log):
        """Advance the bar by one stage, with the last value of the monitored metric."""
        if evals_log:
            # the last data set and its first metric: what early stopping monitors
            data, metrics = next(reversed(evals_log.items()))
            metric, values = next(iter(metrics.items()), (None, ()))
            if values:
                # refresh=False: update() redraws at tqdm's own pace
                self.bar.set_postfix_str(f"{data} {metric}: {values[-1]:.6g}", refresh=False)
        self.bar.update(1)
        return False

    def after_training(self, booster) -> None:
        """Close the bar."""
        self.close()

    def close(self) -> None:
        """Close the bar if one is open (training raised before ``after_training``)."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _tqdm():
    """``tqdm.tqdm``, or an ImportError that says how to install it."""
    try:
        from tqdm import tqdm
    except ImportError as err:
        raise ImportError("ProgressBar draws its bar with tqdm, which is not installed: pip "
                          "install 'treeboost[progress]' (or pip install tqdm), or pass "
                          "tqdm_class=") from err
    return tqdm
