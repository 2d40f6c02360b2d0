"""scikit-learn estimators: TreeBoostRegressor, TreeBoostClassifier and TreeBoostRanker.

They store their parameters, validate them and the data in ``fit``, bin the
data, and hand the stage loop to ``Booster`` (the fit side is ``_estimator_fit``'s).
Everything else (prediction, staged prediction, importances, saving) reads the
fitted booster; model files go through ``_estimator_io``, where the classes
register for ``load_model``.
"""

from __future__ import annotations

import textwrap

import numpy as np

from . import _estimator_io, _validation
from . import params as _params
from ._dtypes import Y_DTYPE
from ._estimator_fit import _EstimatorFit
from ._input import check_predict_X
from ._sklearn_api import ClassifierAPI, EstimatorAPI, RegressorAPI, check_is_fitted, num_samples
from ._threads import threads
from .booster import Booster
from .dataset import group_offsets as dataset_group_offsets
from .losses import get_loss
from .predictor import check_iteration_range


def _params_doc(scope: str) -> str:
    lines = []
    for p in _params.params_for(scope).values():
        lines.append(f"{p.name} : {p.describe()}, default={p.default!r}")
        lines.append(f"    {p.doc}")
    return "\n".join(lines)


def _check_explain(pred_contribs, pred_interactions, pred_leaf=False, raw_score=False) -> None:
    """Refuse two predict options at once (as XGBoost does): each is a different array."""
    given = [f"{name}={value!r}" for name, value in (
        ("pred_contribs", pred_contribs), ("pred_interactions", pred_interactions),
        ("pred_leaf", pred_leaf), ("raw_score", raw_score)) if value]
    if len(given) > 1:
        raise ValueError(f"{' and '.join(given)}: ask for one output at a time")


_PREDICT_OPTIONS = """pred_leaf : bool, default=False
    Return the leaf of every tree each row reaches instead (``apply``).

    .. versionadded:: 0.1.0
raw_score : bool, default=False
    Return the raw score F(x) instead, before the loss's inverse link
    (LightGBM's name; the classifier's ``decision_function``).

    .. versionadded:: 0.1.0
iteration_range : tuple of (int, int), default=None
    Use the stages ``[start, stop)`` only (XGBoost's parameter, ``stop`` = 0
    meaning to the last stage): their trees, plus F0 only when ``start`` is 0
    (``Booster.predict_raw``). None uses every stage the model kept (with early
    stopping, up to the best one). With every option.

    .. versionadded:: 0.1.0
"""


def _predict_options_doc(method):
    """``method`` with ``{predict_options}`` in its docstring replaced by their entries."""
    method.__doc__ = method.__doc__.replace("        {predict_options}\n", textwrap.indent(
        _PREDICT_OPTIONS, " " * 8))
    return method


class _TreeBoostBase(_EstimatorFit, EstimatorAPI):
    """Shared fit (``_EstimatorFit``) and predict machinery; subclasses handle the targets."""

    _scope = "regressor"

    # ---- prediction -----------------------------------------------------------
    def _validate_X(self, X):
        """Check X against the training data's features; return its float matrix.

        The Booster's check (``_input.check_predict_X``), with scikit-learn's
        warnings about names and its minimum of one row.
        """
        return check_predict_X(X, n_features=self.n_features_in_,
                               feature_names=getattr(self, "feature_names_in_", None),
                               pandas_categories=getattr(self, "pandas_categories_", {}),
                               owner=type(self).__name__, warn_names=True,
                               ensure_min_samples=1)

    def _check_X(self, X):
        check_is_fitted(self, "_booster")
        return self._validate_X(X)

    def _class_weighted(self, y, sample_weight):
        return sample_weight

    def _check_label_types(self, y) -> None:
        """Check the raw targets before NumPy converts them: a regressor needs numbers."""
        _validation.check_numeric_target(y, type(self).__name__)

    def _task(self) -> str:
        """"regression", "binary", "multiclass" or "ranking": what ``eval_metric`` must fit."""
        if self._scope == "regressor":
            return "regression"
        if self._scope == "ranker":
            return "ranking"
        return "binary" if self.n_classes_ == 2 else "multiclass"

    def _raw_predict(self, X, iteration_range=None) -> np.ndarray:
        X = self._check_X(X)
        booster = self._booster
        start, stop = check_iteration_range(iteration_range, len(booster.trees))
        with threads(self.n_jobs):  # X checked once: the Booster's unchecked entry
            return booster._predict_raw(X, stop, start)

    def _predict_option(self, X, pred_contribs, pred_interactions, pred_leaf, raw_score,
                        iteration_range):
        """What ``predict`` returns for one of its options, or None for none of them.

        Every option reads ``iteration_range``.
        """
        _check_explain(pred_contribs, pred_interactions, pred_leaf, raw_score)
        if pred_interactions:
            from .explain import pred_interactions as _interactions

            return _interactions(self, X, iteration_range)
        if pred_contribs:
            from .explain import pred_contribs as _contribs

            return _contribs(self, X, iteration_range)
        if pred_leaf:
            return self.apply(X, iteration_range=iteration_range)
        if raw_score:
            raw = self._raw_predict(X, iteration_range)
            return raw[:, 0] if raw.shape[1] == 1 else raw
        return None

    def apply(self, X, iteration_range=None) -> np.ndarray:
        """The leaf of every tree each row reaches (``predict(X, pred_leaf=True)``).

        .. versionadded:: 0.1.0

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input data.
        iteration_range : tuple of (int, int), default=None
            Only the trees of the stages ``[start, stop)``, as ``predict``.

        Returns
        -------
        ndarray of int32 of shape (n_samples, n_stages * n_outputs)
            Stage-major (XGBoost's and LightGBM's order): column
            ``(m - start) * n_outputs + k`` is the leaf of ``booster_.trees[m][k]``
            as a node index of that tree's arrays, so that its ``value[leaf]`` is
            what the tree adds to the raw score (``Booster.predict_leaf``).
        """
        X = self._check_X(X)
        booster = self._booster
        start, stop = check_iteration_range(iteration_range, len(booster.trees))
        with threads(self.n_jobs):
            return booster._packed_trees(start, stop).leaves(X)

    def _staged_raw_predict(self, X):
        X = self._check_X(X)
        booster = self._booster
        with threads(self.n_jobs):
            yield from booster._staged_predict_raw(X, list(range(1, len(booster.trees) + 1)))

    @property
    def booster_(self) -> Booster:
        """The fitted ``Booster`` (F0, trees, bin mapper)."""
        check_is_fitted(self, "_booster")
        return self._booster

    @property
    def feature_importances_(self) -> np.ndarray:
        """Importance of each feature (``Booster.feature_importances``), normalised.

        With ``importance_type`` "gain" or "total_gain" (each feature's share of
        the total split gain), "cover" (of the summed mean covers) or
        "total_cover" the values sum to 1, as XGBoost's ``feature_importances_``
        (all zeros if no tree split); with "split" they are the numbers of
        splits, as LightGBM's.
        """
        imp = self.booster_.feature_importances(self.importance_type)
        if self.importance_type != "split" and imp.sum() > 0:
            imp = imp / imp.sum()
        return imp

    def save_model(self, path) -> None:
        """Write the fitted model to a JSON file (``treeboost.load_model`` reads it).

        Parameters
        ----------
        path : str or path-like
            Destination file; written atomically.
        """
        _estimator_io.save_model(self, path)

    @classmethod
    def _from_booster(cls, booster: Booster, params: dict, *, feature_names, pandas_categories,
                      classes, best_iteration, evals_result):
        """A fitted estimator around a loaded ``booster`` (``treeboost.load_model``).

        The arguments are checked by ``_estimator_io.from_booster``; this sets
        the fitted attributes that ``fit`` sets (``_fit_booster``,
        ``_encode_target``, ``_check_training_data``).
        """
        est = cls().set_params(**params)
        # the estimator's parameters rule, as after a fit (and fill those a file lacks)
        booster.params = est._boosting_params()
        est._booster = booster
        est.n_features_in_ = booster.n_features
        est.pandas_categories_ = pandas_categories
        est.is_categorical_ = booster.bin_mapper.is_categorical_.astype(bool)
        if feature_names is not None:
            est.feature_names_in_ = np.asarray(feature_names, dtype=object)  # as sklearn does
        if classes is not None:
            est.classes_, est.n_classes_ = classes, len(classes)
        est.n_iter_, est.best_iteration_ = len(booster.trees), best_iteration
        est.evals_result_ = evals_result
        return est

    def format_trace(self, stages=None, max_rows: int = 50) -> str:
        """The recorded stages (``trace=True``) as a worked example in plain text.

        Parameters
        ----------
        stages : iterable of int, default=None
            0-based stages to print; None prints all.
        max_rows : int, default=50
            Rows of each stage's table printed at most.

        Returns
        -------
        str
            Per stage and output: the split(s), a table of F, pseudo-residual
            and leaf of every row, and the leaves' values.
        """
        from .trace import format_trace

        check_is_fitted(self, "trace_")
        return format_trace(self.trace_, stages=stages, max_rows=max_rows)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = True
        return tags


@_estimator_io.register
class TreeBoostRegressor(RegressorAPI, _TreeBoostBase):
    _scope = "regressor"

    __init__ = _params.make_init("regressor")

    def _make_loss(self):
        return get_loss(self.loss, **{name: getattr(self, name)
                                      for name in _params.part_names("loss", self._scope)})

    def _encode_target(self, y):
        return np.asarray(y, dtype=Y_DTYPE)

    def _encode_eval_target(self, y):
        try:
            y = np.asarray(y, dtype=Y_DTYPE)
            y = y[:, 0] if y.ndim == 2 and y.shape[1] == 1 else y if y.ndim == 2 else y.ravel()
        except (TypeError, ValueError) as exc:
            raise ValueError(f"eval_set targets must be numbers: {exc}") from exc
        if not np.all(np.isfinite(y)):
            raise ValueError("eval_set targets contain NaN or infinity")
        return y

    @_predict_options_doc
    def predict(self, X, pred_contribs=False, pred_interactions=False, *, pred_leaf=False,
                raw_score=False, iteration_range=None):
        """Predict the target (the mean, median or quantile the loss estimates).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input data; NaN marks missing values.
        pred_contribs : bool, default=False
            Return exact TreeSHAP feature contributions to the raw score
            instead (see ``treeboost.explain.pred_contribs``).
        pred_interactions : bool, default=False
            Return SHAP interaction values of the raw score instead (see
            ``treeboost.explain.pred_interactions``).
        {predict_options}

        Returns
        -------
        ndarray of shape (n_samples,), or (n_samples, n_features + 1) with
        ``pred_contribs``: one column per feature and the bias last, each row
        summing to the raw score, or (n_samples, n_features + 1,
        n_features + 1) with ``pred_interactions``: symmetric, row i summing
        to feature i's contribution; with ``pred_leaf`` int32 of shape
        (n_samples, n_stages); with ``raw_score`` of shape (n_samples,). A model of
        several outputs (a 2-D y of k columns, or ``alpha`` a list of k levels) gives
        (n_samples, k) (multi-quantile: sorted within each row, in the order of the
        levels, ``raw_score`` unsorted), with ``pred_contribs`` (n_samples,
        n_features + 1, k) and with ``pred_interactions`` (n_samples, n_features + 1,
        n_features + 1, k).
        """
        out = self._predict_option(X, pred_contribs, pred_interactions, pred_leaf, raw_score,
                                   iteration_range)
        if out is not None:
            return out
        raw = self._raw_predict(X, iteration_range)
        return self._booster.loss.inverse_link(raw.T)

    def staged_predict(self, X):
        """Yield the prediction after each stage.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input data.

        Yields
        ------
        ndarray of shape (n_samples,) or (n_samples, n_outputs)
        """
        for raw in self._staged_raw_predict(X):
            yield self._booster.loss.inverse_link(raw.T)

    def calibrate(self, X, y):
        """Conformalize the band of a multi-quantile model on held-out rows (CQR).

        Conformalized quantile regression (Romano, Patterson and Candes, 2019): with
        the lowest and highest levels ``a_lo`` and ``a_hi`` of ``alpha``, the rows
        (X, y), which the model was not fitted on, give the conformity scores
        ``E_i = max(q_lo(x_i) - y_i, y_i - q_hi(x_i))``; ``Q``, their empirical
        quantile of level ``(1 - m)(1 + 1/n)`` with ``m = a_lo + 1 - a_hi``
        (``losses.conformal_offset``), widens the band to ``[q_lo - Q, q_hi + Q]``
        (narrows it where Q < 0). The other levels are left as they are; each row's
        predictions are sorted again.

        Guarantee: for a new row exchangeable with the calibration rows,
        ``P(q_lo - Q <= y <= q_hi + Q) >= 1 - m``, marginally (on average over the
        calibration rows and the new row, not for each x), whatever the model; at most
        ``1 - m + 1 / (n + 1)`` when the scores have no ties. The model's own band
        promises nothing on new rows (quantile models overfit their band).

        .. versionadded:: 0.2.0

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Calibration rows, held out of ``fit``.
        y : array-like of shape (n_samples,)
            Their targets.

        Returns
        -------
        self
            ``predict`` then returns the calibrated band (saved with the model;
            ``conformal_offset_`` holds Q). A new ``fit`` forgets it.

        Raises
        ------
        ValueError
            Unless the model is a multi-quantile one (``loss="quantile"``, ``alpha`` a
            list of at least two levels), or if y is not one finite number per row.
        """
        check_is_fitted(self, "_booster")
        loss = self._booster.loss
        if not getattr(loss, "multi_quantile", False) or loss.n_outputs < 2:
            raise ValueError("calibrate needs a multi-quantile model: loss='quantile' with "
                             "alpha a list of at least two levels (the band's ends)")
        X = self._check_X(X)
        y = np.asarray(y, dtype=Y_DTYPE)
        if y.ndim != 1 or y.shape[0] != X.shape[0] or not np.all(np.isfinite(y)):
            raise ValueError(f"y of shape {y.shape} must hold one finite number per row of "
                             f"X ({X.shape[0]})")
        from .losses import conformal_offset

        alphas = [q.alpha for q in loss.losses]
        lo, hi = int(np.argmin(alphas)), int(np.argmax(alphas))
        loss.band_offset = None
        raw = self._raw_predict(X)
        loss.band_offset = conformal_offset(raw[:, lo], raw[:, hi], y,
                                            alphas[lo] + 1.0 - alphas[hi])
        return self

    @property
    def conformal_offset_(self):
        """CQR's Q of the last ``calibrate`` (None before one)."""
        check_is_fitted(self, "_booster")
        return getattr(self._booster.loss, "band_offset", None)

    @property
    def target_names_(self):
        """Names of the targets of a fit on several (a DataFrame y's columns), else None.

        One per output, in the order of ``predict``'s columns; kept in the model file
        (``Booster.target_names``).

        .. versionadded:: 0.1.0
        """
        check_is_fitted(self, "_booster")
        names = self._booster.target_names
        return None if names is None else list(names)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags


@_estimator_io.register
class TreeBoostClassifier(ClassifierAPI, _TreeBoostBase):
    _scope = "classifier"

    __init__ = _params.make_init("classifier")

    def _make_loss(self):
        return get_loss(self.loss, n_classes=self.n_classes_)

    def _class_weighted(self, y, sample_weight):
        if self.class_weight is None:
            return sample_weight
        from sklearn.utils.class_weight import compute_sample_weight

        _validation.check_class_weight_keys(self.class_weight, y)
        _validation.check_no_class_removed(self.class_weight, y)
        return sample_weight * compute_sample_weight(self.class_weight, y)

    def _check_label_types(self, y) -> None:
        _validation.check_label_types(y)

    def _encode_target(self, y):
        y = np.asarray(y)
        if y.dtype.kind == "O" and any(v is None or v != v for v in y.tolist()):
            raise ValueError("y contains missing class labels (None or NaN)")
        self.classes_, codes = _validation.encode_labels(y)
        self.n_classes_ = len(self.classes_)
        if self.n_classes_ < 2:
            raise ValueError(f"{type(self).__name__} needs samples of at least 2 classes in "
                             f"the data; got 1 class ({self.classes_[0]!r})")
        return codes.astype(Y_DTYPE)

    def _encode_eval_target(self, y):
        y = y.ravel()
        unknown = np.setdiff1d(y, self.classes_)
        if unknown.size:
            raise ValueError(f"eval_set has labels not seen in training: {unknown.tolist()}")
        return np.searchsorted(self.classes_, y).astype(Y_DTYPE)

    def decision_function(self, X, iteration_range=None):
        """Raw scores F(x): log-odds (binary) or per-class scores (multiclass).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input data.
        iteration_range : tuple of (int, int), default=None
            Use the stages ``[start, stop)`` only, as ``predict``.

            .. versionadded:: 0.1.0

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        raw = self._raw_predict(X, iteration_range)
        return raw[:, 0] if raw.shape[1] == 1 else raw

    def _proba(self, raw):
        p = self._booster.loss.inverse_link(raw.T)
        return np.column_stack([1.0 - p, p]) if p.ndim == 1 else p

    def predict_proba(self, X, iteration_range=None):
        """Class probabilities.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input data.
        iteration_range : tuple of (int, int), default=None
            Use the stages ``[start, stop)`` only, as ``predict``.

            .. versionadded:: 0.1.0

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        return self._proba(self._raw_predict(X, iteration_range))

    @_predict_options_doc
    def predict(self, X, pred_contribs=False, pred_interactions=False, *, pred_leaf=False,
                raw_score=False, iteration_range=None):
        """Most probable class.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input data.
        pred_contribs : bool, default=False
            Return exact TreeSHAP feature contributions to the raw score
            (log-odds) instead (see ``treeboost.explain.pred_contribs``).
        pred_interactions : bool, default=False
            Return SHAP interaction values of the raw score instead (see
            ``treeboost.explain.pred_interactions``).
        {predict_options}

        Returns
        -------
        ndarray of shape (n_samples,), or with ``pred_contribs`` of shape
        (n_samples, n_features + 1) (binary) or (n_samples, n_classes,
        n_features + 1) (multiclass): the bias last, each row summing to
        ``decision_function``; with ``pred_interactions`` of shape
        (n_samples, n_features + 1, n_features + 1) (binary) or (n_samples,
        n_classes, n_features + 1, n_features + 1) (multiclass); with
        ``pred_leaf`` int32 of shape (n_samples, n_stages * n_outputs); with
        ``raw_score`` the raw scores (``decision_function``).
        """
        out = self._predict_option(X, pred_contribs, pred_interactions, pred_leaf, raw_score,
                                   iteration_range)
        if out is not None:
            return out
        return self._classes_from_raw(self._raw_predict(X, iteration_range))

    def _classes_from_raw(self, raw):
        idx = (raw[:, 0] > 0).astype(np.intp) if raw.shape[1] == 1 else raw.argmax(axis=1)
        return self.classes_[idx]

    def staged_predict(self, X):
        """Yield the predicted classes after each stage.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input data.

        Yields
        ------
        ndarray of shape (n_samples,)
        """
        for raw in self._staged_raw_predict(X):
            yield self._classes_from_raw(raw)

    def staged_predict_proba(self, X):
        """Yield the class probabilities after each stage.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input data.

        Yields
        ------
        ndarray of shape (n_samples, n_classes)
        """
        for raw in self._staged_raw_predict(X):
            yield self._proba(raw)

    def staged_decision_function(self, X):
        """Yield the raw scores after each stage.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input data.

        Yields
        ------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        for raw in self._staged_raw_predict(X):
            yield raw[:, 0] if raw.shape[1] == 1 else raw


def _query_sizes(group, qid, n: int, what: str) -> np.ndarray:
    """Query sizes (int64) of ``n`` rows from group sizes or per-row query ids.

    ``what`` names the arguments in error messages ("group/qid", "eval_group[0]").
    """
    try:
        offsets = dataset_group_offsets(group, qid, n)
    except ValueError as exc:
        raise ValueError(f"{what}: {exc}") from None
    if offsets is None:
        raise ValueError(f"{what}: a ranker needs the query groups of its data: pass "
                         "group= (query sizes in row order) or qid= (a query id per row, "
                         "each query's rows contiguous)")
    return np.diff(offsets)


def _row_query_weights(sample_weight, sizes, name: str, drop: bool = True):
    """Query weights given per query or per row, as row weights; the kept query sizes.

    ``metrics.query_weights`` checks them (one per query, or per row and the same on
    every row of a query; ``ValueError`` naming ``name`` otherwise). With ``drop`` the
    queries of weight 0 leave ``sizes``: ``fit`` drops rows of weight 0 before binning,
    so such a query is as if absent.
    """
    if sample_weight is None:
        return None, sizes
    from .metrics import query_weights

    offsets = np.concatenate(([0], np.cumsum(sizes)))
    weights = query_weights(sample_weight, offsets, name)
    if not np.any(weights > 0):
        raise ValueError(f"{name} is 0 on every query")
    return np.repeat(weights, sizes), sizes[weights > 0] if drop else sizes


@_estimator_io.register
class TreeBoostRanker(_TreeBoostBase):
    _scope = "ranker"

    __init__ = _params.make_init("ranker")

    def fit(self, X, y, *, group=None, qid=None, sample_weight=None, init_score=None,
            eval_set=None, eval_group=None, eval_qid=None, eval_sample_weight=None,
            eval_init_score=None, init_model=None, callbacks=None):
        """Fit the ranking model on documents grouped into queries.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Documents' features; NaN marks missing values. The rows of a query
            are contiguous.
        y : array-like of shape (n_samples,)
            Relevance labels, whole numbers >= 0 (higher is more relevant).
        group : array-like of int, default=None
            Query sizes in row order (LightGBM's ``group``), summing to n_samples.
        qid : array-like of shape (n_samples,), default=None
            Query id of every row (XGBoost's ``qid``), each query's rows
            contiguous. One of ``group`` and ``qid`` is required.
        sample_weight : array-like of shape (n_groups,) or (n_samples,), default=None
            Query weights (XGBoost's ``XGBRanker`` meaning): one per query, or one per
            row with the same value on every row of a query (LightGBM's row weights
            where they are constant within each query); anything else is refused. Each
            query's gradients and hessians are multiplied by its weight normalised to
            mean 1 over the queries of positive weight (as XGBoost), so doubling all
            weights changes no bit of the model (other common factors an ulp of the
            normalised weights at most); a query of weight 0 is dropped, as if absent.
            The training metrics are weighted means over the queries.
        init_score : array-like of shape (n_samples,), default=None
            Per-row raw scores training starts from (see ``TreeBoostRegressor.fit``).
        eval_set : list of (X, y) pairs, default=None
            Data evaluated after every stage (``evals_result_``); the last one is
            monitored by early stopping. Each needs its groups.
        eval_group, eval_qid : list of array-like, default=None
            The query sizes, or per-row query ids, of each ``eval_set`` pair.
        eval_sample_weight : list of array-like or None, default=None
            Query weights of each ``eval_set`` pair, as ``sample_weight`` (one per
            query or per row); its metrics are then weighted means over its queries.
        eval_init_score : list of array-like or None, default=None
            Per-row raw scores of the ``eval_set`` pairs.
        init_model : TreeBoostRanker, str or path-like, default=None
            A fitted ranker (or the path of a saved one) to continue.
        callbacks : list of TrainingCallback, default=None
            User callbacks, as for ``TreeBoostRegressor.fit``.

        Returns
        -------
        self : object
            The fitted estimator.

        Notes
        -----
        Without ``eval_set``, early stopping (``n_iter_no_change``) holds out
        ``validation_fraction`` of the queries (whole queries, drawn with
        ``random_state``).
        """
        callbacks = self._check_fit_params(callbacks)
        sizes = _query_sizes(group, qid, num_samples(X), "group/qid")
        eval_groups = self._eval_groups(eval_set, eval_group, eval_qid)
        sample_weight, sizes = _row_query_weights(sample_weight, sizes, "sample_weight")
        if eval_sample_weight is not None:
            if eval_set is None or len(eval_sample_weight) != len(eval_set):
                raise ValueError("eval_sample_weight must have one entry (array or None) "
                                 "per eval_set pair")
            eval_sample_weight = [
                None if w is None else _row_query_weights(w, g, f"eval_sample_weight[{i}]",
                                                          drop=False)[0]
                for i, (w, g) in enumerate(zip(eval_sample_weight, eval_groups,
                                               strict=True))]
        return self._fit_new(X, y, sample_weight, eval_set, eval_sample_weight, init_model,
                             callbacks, init_score, eval_init_score,
                             groups=(sizes, eval_groups))

    @staticmethod
    def _eval_groups(eval_set, eval_group, eval_qid):
        """The query sizes of each ``eval_set`` pair (None without ``eval_set``)."""
        if eval_set is None:
            if eval_group is not None or eval_qid is not None:
                raise ValueError("eval_group/eval_qid were given without eval_set")
            return None
        if not isinstance(eval_set, (list, tuple)):
            raise ValueError("eval_set must be a list of (X, y) pairs")
        if eval_group is not None and eval_qid is not None:
            raise ValueError("give the eval sets' groups as eval_group or eval_qid, not both")
        given, name = (eval_group, "eval_group") if eval_qid is None else (eval_qid,
                                                                            "eval_qid")
        if given is None or len(given) != len(eval_set):
            raise ValueError(f"{name} must have one entry per eval_set pair: a ranker "
                             "evaluates NDCG and MAP over each set's queries")
        sizes = []
        for i, (pair, entry) in enumerate(zip(eval_set, given, strict=True)):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ValueError("eval_set must be a list of (X, y) pairs")
            rows = num_samples(pair[0])
            sizes.append(_query_sizes(entry if eval_qid is None else None,
                                      entry if eval_qid is not None else None, rows,
                                      f"{name}[{i}]"))
        return sizes

    def _query_holdout(self, X, y, sample_weight, init_score, group, streams):
        """The early-stopping hold-out: ``validation_fraction`` of the whole queries."""
        n_queries = group.size
        n_valid = int(round(self.validation_fraction * n_queries))
        if n_queries < 2 or not 1 <= n_valid < n_queries:
            raise ValueError(f"validation_fraction={self.validation_fraction} of "
                             f"{n_queries} queries leaves no query to train on or to "
                             "validate on: pass eval_set with eval_group, or more queries")
        rng = np.random.default_rng(int(streams["validation"].integers(np.iinfo(np.int32).max)))
        held = np.zeros(n_queries, dtype=bool)
        held[rng.choice(n_queries, n_valid, replace=False)] = True
        rows = np.repeat(held, group)  # queries keep their order: their rows stay contiguous
        part = [(a[~rows], a[rows]) for a in (X, y, sample_weight)]
        (X, Xv), (y, yv), (sample_weight, wv) = part
        iv = None
        if init_score is not None:
            init_score, iv = init_score[~rows], init_score[rows]
        return X, y, sample_weight, init_score, group[~held], [
            ("validation", Xv, yv, wv, iv, group[held])]

    def _make_loss(self):
        return get_loss(self.loss, **{name: getattr(self, name)
                                      for name in _params.part_names("loss", self._scope)})

    def _encode_target(self, y):
        return self._encode_eval_target(y)

    def _encode_eval_target(self, y):
        try:
            y = np.asarray(y, dtype=Y_DTYPE)
            y = y[:, 0] if y.ndim == 2 and y.shape[1] == 1 else y if y.ndim == 2 else y.ravel()
        except (TypeError, ValueError) as exc:
            raise ValueError(f"relevance labels must be numbers: {exc}") from exc
        if not np.all(np.isfinite(y)) or np.any(y < 0) or np.any(y != np.floor(y)):
            raise ValueError("relevance labels must be whole numbers >= 0")
        return y

    @_predict_options_doc
    def predict(self, X, pred_contribs=False, pred_interactions=False, *, pred_leaf=False,
                raw_score=False, iteration_range=None):
        """Scores that rank the documents of a query (higher ranks first).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Documents' features; NaN marks missing values.
        pred_contribs : bool, default=False
            Return exact TreeSHAP feature contributions to the score instead.
        pred_interactions : bool, default=False
            Return SHAP interaction values of the score instead (see
            ``treeboost.explain.pred_interactions``).
        {predict_options}

        Returns
        -------
        ndarray of shape (n_samples,), or (n_samples, n_features + 1) with
        ``pred_contribs``: one column per feature and the bias last, each row
        summing to the score, or (n_samples, n_features + 1, n_features + 1)
        with ``pred_interactions``; with ``pred_leaf`` int32 of shape
        (n_samples, n_stages); with ``raw_score`` the scores (as without).
        """
        out = self._predict_option(X, pred_contribs, pred_interactions, pred_leaf, raw_score,
                                   iteration_range)
        if out is not None:
            return out
        return self._raw_predict(X, iteration_range)[:, 0]

    def staged_predict(self, X):
        """Yield the scores after each stage.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Documents' features.

        Yields
        ------
        ndarray of shape (n_samples,)
        """
        for raw in self._staged_raw_predict(X):
            yield raw[:, 0]

    def score(self, X, y, *, group=None, qid=None, k: int = 10, sample_weight=None):
        """Mean NDCG@k of the predicted ranking over the queries of ``X``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Documents' features.
        y : array-like of shape (n_samples,)
            Relevance labels, whole numbers >= 0.
        group, qid : array-like, default=None
            The queries, as for ``fit`` (one is required).
        k : int, default=10
            Cut-off.
        sample_weight : array-like of shape (n_groups,) or (n_samples,), default=None
            Query weights, as for ``fit``: the weighted mean NDCG@k over the queries.

        Returns
        -------
        float
        """
        from .metrics import ndcg_at_k

        scores = self.predict(X)
        sizes = _query_sizes(group, qid, scores.shape[0], "group/qid")
        return ndcg_at_k(self._encode_eval_target(y), scores,
                         np.concatenate(([0], np.cumsum(sizes))), k,
                         sample_weight=sample_weight)


_ATTRIBUTES = """
Attributes
----------
n_features_in_ : int
    Number of features seen during fit.
feature_names_in_ : ndarray of shape (n_features_in_,)
    Column names, when X had string column names.
n_iter_ : int
    Number of stages kept: with early stopping up to the best one, else every
    stage trained (a callback's stop after stage 17 keeps 17).
best_iteration_ : int or None
    0-based best stage under early stopping, else None.
evals_result_ : dict
    Metric values per stage, ``{data name: {metric name: [values]}}``, one
    entry per metric of ``eval_metric``.
feature_importances_ : ndarray of shape (n_features_in_,)
    Gain share or split count of each feature.
booster_ : Booster
    The fitted model.
trace_ : list of dict
    With ``trace=True``: one entry per stage and output (``treeboost.trace``),
    with the tables ``rows`` (F, residual, hessian, leaf of each row) and
    ``leaves`` (line-search value and shrunk value of each leaf).
"""

TreeBoostRegressor.__doc__ = f"""Gradient tree boosting for regression (histogram trees, leaf-wise).

Parameters
----------
{_params_doc("regressor")}
{_ATTRIBUTES}target_names_ : list of str or None
    The column names of a DataFrame y of several targets (one per output), else None.
"""

TreeBoostClassifier.__doc__ = f"""Gradient tree boosting for classification (logit or softmax).

Parameters
----------
{_params_doc("classifier")}
{_ATTRIBUTES}classes_ : ndarray of shape (n_classes,)
    Class labels.
n_classes_ : int
    Number of classes.
"""

TreeBoostRanker.__doc__ = f"""Gradient tree boosting for learning to rank (lambdarank over queries).

Documents come grouped into queries (``fit``'s ``group`` or ``qid``); the model
scores each document, and a query's documents are ranked by descending score.

Parameters
----------
{_params_doc("ranker")}
{_ATTRIBUTES}"""
