"""The fit side of the scikit-learn estimators: data checks, eval sets, training.

``_EstimatorFit`` is a base of ``sklearn._TreeBoostBase``: it checks the
parameters and the data, encodes the targets, builds the eval sets or the
early-stopping hold-out, and trains the ``Booster`` (``treeboost.train``),
continuing an earlier model where asked (``_continued``). The estimator
classes in ``treeboost.sklearn`` supply the target handling it calls.
"""

from __future__ import annotations

import numbers

import numpy as np

from . import _continued, _validation
from . import params as _params
from ._dtypes import X_DTYPES
from ._input import checked_weights, frame_feature_names, plain_matrix, plain_target, series_values
from ._sklearn_api import check_random_state, num_samples
from ._threads import threads
from ._validation import check_multi_strategy, check_targets
from .booster import BoostingParams
from .callbacks import check_callbacks
from .constraints import by_index
from .dataset import Dataset, as_pandas, categorical_mask, check_init_score, frame_to_array
from .losses import per_target
from .metrics import check_metric
from .modes import check_mode
from .sampling import make_streams
from .training import boosting_params, train


class _EstimatorFit:
    """``fit`` and its steps, for an estimator class of ``treeboost.sklearn``.

    The class supplies ``_scope``, scikit-learn's ``get_params``, and the hooks
    ``_check_label_types``, ``_encode_target``, ``_encode_eval_target``,
    ``_class_weighted``, ``_make_loss``, ``_task`` and ``_validate_X`` (and the
    ranker ``_query_holdout``).
    """

    def fit(self, X, y, sample_weight=None, *, init_score=None, eval_set=None,
            eval_sample_weight=None, eval_init_score=None, init_model=None, callbacks=None):
        """Fit the gradient boosting model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; NaN marks missing values.
        y : array-like of shape (n_samples,)
            Targets (class labels for the classifier).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative row weights; rows of weight 0 are ignored.
        init_score : array-like of shape (n_samples,) or (n_samples, n_outputs), default=None
            Per-row raw scores training starts from instead of F0 (LightGBM's
            ``init_score``, XGBoost's ``base_margin``); one column per class
            for multiclass ``log_loss``. F0 is then 0, and predictions do not
            include these scores: add them to ``predict_raw`` (or to the raw
            scores before the link) yourself. Not with continued training.

            .. versionadded:: 0.1.0
        eval_set : list of (X, y) pairs, default=None
            Data evaluated after every stage (``evals_result_``); the last
            one is monitored by early stopping.
        eval_sample_weight : list of array-like, default=None
            Weights of the ``eval_set`` pairs.
        eval_init_score : list of array-like or None, default=None
            Per-row raw scores of the ``eval_set`` pairs (None entries for
            none), added to their scores for the evaluation log and early
            stopping. The hold-out split of ``validation_fraction`` takes
            its rows' ``init_score`` itself.

            .. versionadded:: 0.1.0
        init_model : estimator of the same class, str or path-like, default=None
            A fitted model (or the path of one saved with ``save_model``) to
            continue: its F0, trees and bins are kept and ``n_estimators``
            more stages are added (LightGBM's ``init_model``). Stage m draws
            the same random numbers as in one uninterrupted fit with this
            ``random_state``, so fitting 100 stages, saving, and continuing
            with 100 more gives the model of 200 stages at once.
        callbacks : list of TrainingCallback, default=None
            User callbacks (``treeboost.callbacks.TrainingCallback``):
            ``before_training(booster)``, ``after_iteration(iteration,
            evals_log) -> bool`` (True stops training after that stage, which
            is kept) and ``after_training(booster)``. They run after the
            built-in ones, at every hook: the ``verbose`` logger, then early
            stopping (which rewinds to its best stage in ``after_training``),
            then these in order. Without early stopping, a stop after stage
            17 keeps 17 stages.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        callbacks = self._check_fit_params(callbacks)
        return self._fit_new(X, y, sample_weight, eval_set, eval_sample_weight, init_model,
                             callbacks, init_score, eval_init_score)

    def _check_fit_params(self, callbacks):
        """The checks ``fit`` makes before it looks at the data; the checked callbacks."""
        _params.validate(self.get_params(), self._scope)
        callbacks = check_callbacks(callbacks)
        check_mode(self._boosting_params())
        return callbacks

    def _fit_new(self, X, y, sample_weight, eval_set, eval_sample_weight, init_model,
                 callbacks, init_score, eval_init_score, groups=None):
        """``_fit`` on a new estimator; this one takes its fitted attributes at the end."""
        previous = _continued.previous_model(self, init_model)
        # the fit runs on a new estimator with these parameters, whose fitted
        # attributes this one takes at the end: a fit that fails (a warm start on
        # other data, say) leaves the fitted model as it was
        fitted = type(self)(**self.get_params(deep=False))
        if fitted._fit(X, y, sample_weight, eval_set, eval_sample_weight, init_model,
                       previous, callbacks, init_score, eval_init_score, groups):
            self._take_fitted(fitted)
        return self

    #: every attribute ``fit`` sets (``_take_fitted`` copies them, and removes those
    #: a fit did not set, such as ``trace_`` without ``trace=True``)
    _FITTED_ATTRIBUTES = ("n_features_in_", "feature_names_in_", "pandas_categories_",
                          "is_categorical_", "classes_", "n_classes_", "n_iter_",
                          "best_iteration_", "evals_result_", "trace_", "_train_shape",
                          "_booster")

    @property
    def execution_plan_(self):
        """The ``ExecutionPlan`` of the last fit: its threads and the sizes from which each
        parallel path was taken (``Booster.execution_plan``); None for a model loaded from
        a file, which does not hold it."""
        return self._booster.execution_plan

    def _take_fitted(self, fitted) -> None:
        """Make the fitted attributes of ``fitted`` (same class and parameters) this one's."""
        for name in self._FITTED_ATTRIBUTES:
            if hasattr(fitted, name):
                setattr(self, name, getattr(fitted, name))
            elif hasattr(self, name):
                delattr(self, name)

    def _fit(self, X, y, sample_weight, eval_set, eval_sample_weight, init_model, previous,
             callbacks=(), init_score=None, eval_init_score=None, groups=None) -> bool:
        """``fit`` on a new estimator, continuing ``previous`` if not None.

        ``groups`` (the ranker) holds the training data's query sizes and those of
        each ``eval_set`` pair, as ``(sizes, [sizes of eval_set[i]])``.

        Returns False when a warm start has no stage to add (the new estimator
        is then not a fitted model).
        """
        if init_score is not None and previous is not None:
            raise ValueError("init_score cannot be combined with continued training "
                             "(init_model or warm_start): fit a new model with init_score = "
                             "your margin + the model's predict_raw(X)")
        target_names = _target_names(y)  # before y becomes an array
        X, y, sample_weight, init_score = self._check_training_data(X, y, sample_weight,
                                                                    init_score)
        shape = X.shape  # (rows of positive weight, features)
        y = self._encode_target(y)
        loss = self._make_loss()
        if y.ndim == 2 and not (loss.name == "aft" and y.shape[1] == 2):  # several targets:
            # one output per column (AFT's two columns are the bounds of one time)
            loss = per_target(loss, y.shape[1], self.multi_strategy)
        check_metric(self.eval_metric, self._task())
        if previous is not None:
            seed = _continued.check_compatible(self, previous, X, loss, init_model is None,
                                               shape)
            if seed is None:
                return False  # warm start with n_estimators already reached
        else:
            seed = self._seed()
        streams = make_streams(seed)
        loss.validate_target(y)
        X, y, sample_weight, init_score, group, eval_data = self._eval_data(
            X, y, sample_weight, eval_set, eval_sample_weight, streams, init_score,
            eval_init_score, groups)
        with threads(self.n_jobs):
            self._fit_booster(X, y, sample_weight, eval_data, loss, seed, streams, previous,
                              callbacks, init_score, group)
        if target_names is not None and len(target_names) == self._booster.n_outputs:
            # (a y whose columns are not outputs, such as AFT's bounds, names none)
            self._booster.target_names = target_names
        self._train_shape = shape  # what a warm start checks its data against
        return True

    def _check_training_data(self, X, y, sample_weight, init_score=None):
        # +-inf in X is refused (LightGBM would bin it as a huge value): it is nearly
        # always a division by zero upstream, which a silent bin would hide
        checks = dict(dtype=X_DTYPES, order="C", ensure_all_finite="allow-nan",
                      accept_sparse=("csr", "csc"), y_numeric=self._scope != "classifier",
                      ensure_min_samples=2)
        self._check_label_types(series_values(y))
        multi = self._scope == "regressor"
        if multi:  # several targets: one clear error naming y
            check_multi_strategy(self.multi_strategy, getattr(self, "alpha", None))
            y = check_targets(y, num_samples(X))
        checks["multi_output"] = multi
        frame = as_pandas(X)
        names, categories = None, {}
        if frame is not None:
            # scikit-learn's rule for a frame's names (it raises for mixed types, as
            # validate_data would), and the frame's numeric matrix
            names = frame_feature_names(frame)
            matrix, categories = frame_to_array(frame)
            plain = plain_matrix(matrix, ensure_min_samples=2)
        else:
            plain = plain_matrix(X, ensure_min_samples=2)
        plain_y = None if plain is None else plain_target(
            series_values(y), plain.shape[0], "biufU" if self._scope == "classifier" else "biuf")
        if plain_y is not None:
            # arrays that scikit-learn's checks would pass as they are (_input's notes):
            # what validate_data records of them, without importing scikit-learn
            X, y, self.pandas_categories_ = plain, plain_y, categories
            self.n_features_in_ = X.shape[1]
            if names is not None:
                self.feature_names_in_ = np.asarray(frame.columns, dtype=object)
            elif hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
        elif frame is not None:
            from sklearn.utils.validation import check_X_y, validate_data

            # names and width from the frame, values from its numeric matrix
            validate_data(self, frame, reset=True, skip_check_array=True)
            X, y = check_X_y(matrix, y, estimator=self, **checks)
            self.pandas_categories_ = categories
        else:
            from sklearn.utils.validation import validate_data

            X, y = validate_data(self, X, y, **checks)
            self.pandas_categories_ = {}
        # (multi_output checks leave a 1-D y as given, a strided column perhaps; the
        # kernels take C-contiguous labels, one compiled specialisation)
        y = np.ascontiguousarray(y)
        self.is_categorical_ = categorical_mask(
            self.categorical_features, X.shape[1], getattr(self, "feature_names_in_", None),
            self.pandas_categories_)
        sample_weight = checked_weights(sample_weight, X, ensure_non_negative=True)
        sample_weight = self._class_weighted(y, sample_weight)
        if not np.all(np.isfinite(sample_weight)):
            raise ValueError("sample_weight contains NaN or infinity")
        if init_score is not None:
            init_score = check_init_score(init_score, X.shape[0])
        keep = sample_weight > 0
        # a zero weight means the row is not there: the Dataset's rule (train() drops such
        # rows before binning), applied here already because the early-stopping hold-out
        # and warm_start's shape check are drawn over the rows that are there
        if not keep.all():
            if keep.sum() < 2:
                raise ValueError("sample_weight must be positive for at least 2 samples")
            X, y, sample_weight = X[keep], y[keep], sample_weight[keep]
            init_score = None if init_score is None else init_score[keep]
        return X, y, sample_weight, init_score

    def _seed(self) -> int:
        if isinstance(self.random_state, numbers.Integral):
            return int(self.random_state)
        return int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))

    def _eval_data(self, X, y, sample_weight, eval_set, eval_sample_weight, streams,
                   init_score=None, eval_init_score=None, groups=None):
        """Eval sets as validated arrays; the early-stopping hold-out split if needed.

        Returns the training arrays (less a hold-out split) with their query sizes
        (None without ``groups``) and the eval sets as tuples ``(name, X, y, weight,
        init_score, query sizes or None)``.
        """
        group, eval_groups = (None, None) if groups is None else groups
        eval_data = []
        if eval_init_score is not None and (
                eval_set is None or len(eval_init_score) != len(eval_set)):
            raise ValueError("eval_init_score must have one entry (array or None) per "
                             "eval_set pair")
        if eval_set is not None:
            if eval_sample_weight is not None and len(eval_sample_weight) != len(eval_set):
                raise ValueError("eval_sample_weight must have one entry per eval_set pair")
            for i, pair in enumerate(eval_set):
                if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                    raise ValueError("eval_set must be a list of (X, y) pairs")
                try:
                    Xe = self._validate_X(pair[0])
                except (ValueError, TypeError) as exc:
                    raise type(exc)(f"eval_set[{i}]: {exc}") from exc
                ye = self._encode_eval_target(np.asarray(pair[1]))
                if ye.shape[0] != Xe.shape[0]:
                    raise ValueError(f"eval_set[{i}]: X has {Xe.shape[0]} rows but y has "
                                     f"{ye.shape[0]}")
                we = None if eval_sample_weight is None else eval_sample_weight[i]
                we = checked_weights(we, Xe)
                ie = None if eval_init_score is None else eval_init_score[i]
                if ie is not None:
                    try:
                        ie = check_init_score(ie, Xe.shape[0])
                    except ValueError as exc:
                        raise ValueError(f"eval_init_score[{i}]: {exc}") from None
                ge = None if eval_groups is None else eval_groups[i]
                if ge is not None and ge.sum() != Xe.shape[0]:
                    raise ValueError(f"eval_set[{i}]: its query groups sum to {ge.sum()} "
                                     f"rows but X has {Xe.shape[0]}")
                eval_data.append((f"validation_{i}", Xe, ye, we, ie, ge))
        elif self.n_iter_no_change is not None and self.validation_fraction is not None \
                and group is not None:
            return self._query_holdout(X, y, sample_weight, init_score, group, streams)
        elif self.n_iter_no_change is not None and self.validation_fraction is not None:
            _validation.check_validation_size(self.validation_fraction, y.shape[0],
                                              getattr(self, "n_classes_", 1))
            stratify = y if self._scope == "classifier" else None
            if stratify is not None and np.bincount(y.astype(np.intp)).min() < 2:
                stratify = None  # a class with one row cannot be stratified
            from sklearn.model_selection import train_test_split

            seed = int(streams["validation"].integers(np.iinfo(np.int32).max))
            arrays = [X, y, sample_weight] + ([] if init_score is None else [init_score])
            parts = train_test_split(*arrays, test_size=self.validation_fraction,
                                     stratify=stratify, random_state=seed)
            X, Xv, y, yv, sample_weight, wv = parts[:6]
            iv = None
            if init_score is not None:
                init_score, iv = parts[6:]
            eval_data.append(("validation", Xv, yv, wv, iv, None))
        return X, y, sample_weight, init_score, group, eval_data

    def _fit_booster(self, X, y, sample_weight, eval_data, loss, seed, streams, previous=None,
                     user_callbacks=(), init_score=None, group=None):
        """Build the Datasets and train (``treeboost.train``); keep what it returns."""
        train_set = Dataset(X, **self._dataset_labels(y), weight=sample_weight,
                            init_score=init_score, group=group,
                            categorical_features=self.is_categorical_,
                            max_bins=self.max_bins, random_state=streams["binning"])
        valid_sets = [Dataset(Xe, **self._dataset_labels(ye), weight=we, init_score=ie,
                              group=ge, reference=train_set)
                      for _, Xe, ye, we, ie, ge in eval_data]
        trace = [] if self.trace else None
        if self.trace:
            from .trace import SMALL_DATA_ROWS

            if X.shape[0] > SMALL_DATA_ROWS:
                import warnings

                warnings.warn(f"trace=True keeps {X.shape[0]} rows per stage and "
                              "output; it is meant for small worked examples",
                              UserWarning, stacklevel=3)
        params = dict(self.get_params(), loss=loss, random_state=seed)
        # constraints by column name: train's Dataset knows indices only
        params = by_index(params, getattr(self, "feature_names_in_", None))
        if previous is not None:  # continued training: n_estimators stages in all
            params["n_estimators"] = previous.n_estimators
        booster = train(params, train_set, valid_sets=valid_sets,
                        valid_names=[name for name, *_ in eval_data], callbacks=user_callbacks,
                        init_model=None if previous is None else previous.booster, trace=trace)
        self.best_iteration_ = booster.best_iteration
        self.evals_result_ = _continued.merged_log(previous, booster.evals_result)
        if trace is not None:
            from .trace import trace_tables

            names = getattr(self, "feature_names_in_", None)
            old = previous.trace if previous is not None else []
            self.trace_ = old + trace_tables(trace, names)
        names = getattr(self, "feature_names_in_", None)
        # the bare Booster (save_booster) knows the features too
        booster.feature_names = None if names is None else [str(n) for n in names]
        booster.pandas_categories = dict(self.pandas_categories_)
        self._booster = booster
        self.n_iter_ = len(booster.trees)

    def _dataset_labels(self, y) -> dict:
        """The label arguments of a ``Dataset`` of encoded targets ``y``: ``label=y`` (the
        survival estimator gives AFT's time bounds as ``label`` and ``label_upper_bound``)."""
        return {"label": y}

    def _boosting_params(self) -> BoostingParams:
        return boosting_params(self.get_params(), self._scope)


def _target_names(y) -> list[str] | None:
    """The column names of a DataFrame ``y`` of several targets (as str), else None."""
    columns = getattr(y, "columns", None)
    if columns is None or len(getattr(y, "shape", ())) != 2 or len(columns) < 2:
        return None  # an array, or one column: one output, as before
    return [str(c) for c in columns]
