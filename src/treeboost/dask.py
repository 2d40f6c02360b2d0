"""Dask front end: train one model on a dask array or dataframe spread over a cluster.

``DaskTreeBoostRegressor``, ``DaskTreeBoostClassifier``, ``DaskTreeBoostRanker`` and
``DaskTreeBoostSurvival`` take the local estimators' parameters (plus ``client``) and run
data-parallel training (``treeboost.train`` over a
``treeboost.collective.Collective``) where the data lies:

0. The parameters are checked on the client before any data is read: a bad value, or
   a setting data-parallel training does not support (``check_distributed``), is
   refused with its name, and nothing runs on the cluster (these checks and those of
   step 1 are ``treeboost._dask_checks``).
1. X, y and the weights are stacked into one row-chunked float matrix (labels encoded
   to ``0..K-1`` on the workers for the classifier) and persisted, so that each
   partition's rows, labels and weights sit on one worker. Each block is checked to
   have the shape its dask array declares; then one small task per block counts
   what the local estimators refuse (+-inf in X, a non-finite y, a negative or
   non-finite weight, fewer than 2 positive weights), raised on the client.
2. The common bins are ``BinMapper.fit``'s of all the rows: the client fetches the
   seeded row sample (up to ``_dask_base.BIN_SAMPLE_ROWS`` rows) that ``fit`` would
   draw, and the workers count the categorical features' values over every row.
3. One training task per worker holding partitions (pinned there, its partitions
   passed as futures so they are local): rank 0 hosts the Collective on its
   worker's host address (port 0) and publishes ``(address, token)`` through a
   ``distributed.Variable`` named for this fit; the other ranks wait for it
   (bounded) and join. Each member trains on its rows and returns the model of all
   the rows; rank 0's is kept.

Prediction maps the fitted local estimator over the blocks of X (lazy dask arrays);
``to_local()`` gives the plain ``TreeBoostRegressor`` / ``TreeBoostClassifier`` (/
``TreeBoostRanker`` / ``TreeBoostSurvival``).

The steps are ``_dask_base._DaskTreeBoostBase``'s; this module holds the public classes.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from ._dask_base import _DaskTreeBoostBase, _encode_labels, _init_like
from .predictor import check_iteration_range
from .sklearn import (
    TreeBoostClassifier,
    TreeBoostRanker,
    TreeBoostRegressor,
    _params_doc,
)
from .survival import TreeBoostSurvival, concordance_index
from .survival import _params_doc as _survival_params_doc

__all__ = ["DaskTreeBoostClassifier", "DaskTreeBoostRanker", "DaskTreeBoostRegressor",
           "DaskTreeBoostSurvival"]


class DaskTreeBoostRegressor(RegressorMixin, _DaskTreeBoostBase):
    _local_class = TreeBoostRegressor
    _scope = "regressor"

    __init__ = _init_like(TreeBoostRegressor)


class DaskTreeBoostClassifier(ClassifierMixin, _DaskTreeBoostBase):
    _local_class = TreeBoostClassifier
    _scope = "classifier"

    __init__ = _init_like(TreeBoostClassifier)

    def _encode_target(self, y, client, params):
        import dask.array as da

        if y.dtype.kind == "f":
            if bool(client.compute(da.isnan(y).any()).result()):
                raise ValueError("y contains missing class labels (NaN)")
        classes = client.compute(da.unique(y)).result()
        if len(classes) < 2:
            raise ValueError(f"{type(self).__name__} needs samples of at least 2 classes in "
                             f"the data; got {len(classes)}")
        self.classes_, self.n_classes_ = classes, len(classes)
        params["n_classes"] = len(classes)
        return y.map_blocks(_encode_labels, classes, dtype=np.float64)

    def _encode_eval_target(self, y, client):
        import dask.array as da

        unseen = client.compute(da.unique(y[~da.isin(y, self.classes_)])).result()
        if len(unseen):
            raise ValueError(f"y has labels {list(unseen[:5])} not seen in the training "
                             f"data (classes {list(self.classes_)})")
        return y.map_blocks(_encode_labels, self.classes_, dtype=np.float64)

    def predict_proba(self, X, iteration_range=None):
        """Class probabilities, lazily, block by block with the fitted model.

        Parameters
        ----------
        X : dask.array.Array of shape (n_samples, n_features) or dask.dataframe.DataFrame
            Data, with the training features.
        iteration_range : tuple of (int, int), default=None
            Use the stages ``[start, stop)`` only, as the local ``predict_proba``.

            .. versionadded:: 0.1.0

        Returns
        -------
        dask.array.Array of shape (n_samples, n_classes)
            The probability of each class (``classes_`` order).
        """
        check_is_fitted(self, "_local")
        check_iteration_range(iteration_range, len(self._local.booster_.trees))
        return self._map(X, "predict_proba", (self.n_classes_,), np.float64,
                         iteration_range=iteration_range)


class DaskTreeBoostRanker(_DaskTreeBoostBase):
    _local_class = TreeBoostRanker
    _scope = "ranker"

    __init__ = _init_like(TreeBoostRanker)

    def fit(self, X, y, *, qid, sample_weight=None, eval_set=None, eval_qid=None):
        """Fit the ranking model on documents grouped into queries, where they lie.

        Parameters
        ----------
        X : dask.array.Array of shape (n_samples, n_features) or dask.dataframe.DataFrame
            Row-chunked numeric data (NaN allowed: missing).
        y : dask.array.Array of shape (n_samples,) or dask.dataframe.Series
            Relevance labels (whole numbers >= 0).
        qid : dask.array.Array of shape (n_samples,) or dask.dataframe.Series
            Query id of each row; a query's rows are consecutive and lie whole in one
            partition (each worker trains on whole queries).
        sample_weight : None
            Not supported yet: query weights are normalised to mean 1 over all the
            queries (``TreeBoostRanker.fit``), which no worker holds; anything but None
            is refused. Weight queries with ``TreeBoostRanker`` on one machine.
        eval_set : list of (X, y) pairs of dask collections, default=None
            Validation queries; the last set drives early stopping on NDCG.
        eval_qid : list of dask collections, default=None
            The query ids of each ``eval_set`` pair, as ``qid``.

        Returns
        -------
        self
            The fitted estimator.
        """
        if sample_weight is not None:
            raise ValueError("sample_weight: DaskTreeBoostRanker does not take query "
                             "weights yet (they are normalised to mean 1 over every "
                             "worker's queries); fit a TreeBoostRanker to weight queries")
        if qid is None:
            raise ValueError("DaskTreeBoostRanker.fit needs qid= (each query's rows "
                             "consecutive and in one partition)")
        if self.n_iter_no_change is not None and not eval_set:
            raise ValueError("early stopping of DaskTreeBoostRanker needs eval_set and "
                             "eval_qid (no hold-out of whole queries is drawn here)")
        return self._fit(X, y, None, eval_set, None, qid=qid,
                         eval_qid=[] if eval_qid is None else eval_qid)

    def _encode_target(self, y, client, params):
        if y.dtype.kind not in "biuf":
            raise TypeError(f"{type(self).__name__} needs numeric relevance labels, got "
                            f"dtype {y.dtype}")
        return y.astype(np.float64)


class DaskTreeBoostSurvival(_DaskTreeBoostBase):
    _local_class = TreeBoostSurvival
    # as TreeBoostSurvival: train() reads a survival loss with the regressor's parameters
    _scope = "regressor"

    __init__ = _init_like(TreeBoostSurvival)

    def fit(self, X, y, sample_weight=None, eval_set=None, eval_sample_weight=None):
        """Fit the survival model on a dask array or dataframe, where its partitions lie.

        Parameters
        ----------
        X : dask.array.Array of shape (n_samples, n_features) or dask.dataframe.DataFrame
            Row-chunked numeric data, as for ``DaskTreeBoostRegressor.fit``.
        y : dask.array.Array of shape (n_samples,) or dask.dataframe.Series
            scikit-survival's structured labels as a dask array (a bool event field and
            a numeric time field, times > 0: ``da.from_array(Surv.from_arrays(event,
            time))``), or signed times (positive: an event at t, negative: censored at
            -t), as ``TreeBoostSurvival.fit`` takes them.
        sample_weight : dask.array.Array or dask.dataframe.Series, default=None
            Finite, non-negative row weights: a row of weight 2 counts as two rows, in
            the risk sets too.
        eval_set : list of (X, y) pairs of dask collections, default=None
            Validation sets, ``y`` as for ``fit``; the last one drives early stopping.
        eval_sample_weight : list of dask collections or None, default=None
            Row weights of each validation set.

        Returns
        -------
        self
            The fitted estimator.

        Raises
        ------
        ValueError
            A ``loss`` that is not a survival loss, or ``loss="aft"`` (not yet over
            Dask), labels that ``TreeBoostSurvival`` refuses (named; structured labels
            are checked on the client before training), or as
            ``DaskTreeBoostRegressor.fit``.
        """
        from distributed import default_client

        from ._dask_survival import signed_times_dask

        self._local_class(**self._local_params())._check_loss()
        if self.loss == "aft":  # refused by the collective too, less plainly
            raise ValueError("loss='aft' is not yet supported by DaskTreeBoostSurvival "
                             "(its labels are two bounds a row): use loss='cox', or "
                             "TreeBoostSurvival on one machine")
        client = self.client if self.client is not None else default_client()
        y = signed_times_dask(y, "y", client)
        if eval_set is not None:
            pairs = [eval_set] if isinstance(eval_set, tuple) and len(eval_set) == 2 \
                else eval_set
            eval_set = [(Xe, signed_times_dask(ye, f"eval_set[{i}]: y", client))
                        for i, (Xe, ye) in enumerate(pairs)]
        return self._fit(X, y, sample_weight, eval_set, eval_sample_weight)

    def _local_params(self) -> dict:
        return {k: v for k, v in self.get_params().items() if k != "client"}

    def score(self, X, y, sample_weight=None):
        """Harrell's concordance index of ``predict(X)`` against the survival labels ``y``.

        The risk scores, labels and weights are computed and gathered on the client.

        Parameters
        ----------
        X : dask.array.Array or dask.dataframe.DataFrame
            Data, with the training features.
        y : dask.array.Array or dask.dataframe.Series
            Survival labels, as for ``fit``.
        sample_weight : dask.array.Array or dask.dataframe.Series, default=None
            Row weights: a pair weighs the product of its rows' weights.

        Returns
        -------
        float
            As ``TreeBoostSurvival.score`` on the same rows.
        """
        from distributed import default_client

        from ._dask_survival import signed_times_dask

        client = self.client if self.client is not None else default_client()
        arrays = [signed_times_dask(y, "y", client), self.predict(X)]
        if sample_weight is not None:
            arrays.append(sample_weight)
        y, risk, *w = client.compute(arrays, sync=True)
        return concordance_index(np.asarray(y, dtype=np.float64), np.asarray(risk),
                                 np.asarray(w[0], dtype=np.float64) if w else None)


_COMMON_DOC = """
Parameters
----------
{params}
client : distributed.Client, default=None
    The cluster to train on; None uses ``distributed.default_client()``.

Attributes
----------
booster_ : Booster
    The fitted model (its ``bin_mapper`` is the common bins).
workers_ : list of str
    The workers that held data and trained (rank order).
n_features_in_ : int
n_iter_ : int
best_iteration_ : int or None
    The 0-based best stage when early stopping ran (the model keeps the stages up
    to it), else None.
collective_stats_ : list of dict
    Per member (rank order): its training ``rows``, the ``binning_seconds`` of its
    partitions and its ``training_seconds``, and its collective's ``operations``
    (round trips), ``seconds`` spent in them (waiting for slower members included)
    and ``allreduce_bytes`` (``Collective.stats``).
evals_result_ : dict
    The evaluation log, {{data set: {{metric: [value per stage]}}}}.
{extra}
Notes
-----
``n_jobs=None`` (or -1) trains with each worker's Dask threads (``nthreads``).
Data-parallel training does not support (refused with the reason, on the client before
any data is read, see ``treeboost.booster.check_distributed``): GOSS, DART and random
forests, ``colsample_bynode`` < 1, ``rank_xendcg`` (the median, quantile and Huber F0,
leaves and delta are computed from every worker's rows, gathered), monotone and
interaction constraints, ``category`` and text dtype columns (integer-coded categorical
columns named in ``categorical_features`` are supported), ``class_weight``,
``verbose``, ``trace``, ``init_score``, continued training (``warm_start``).
Validation sets and early stopping are supported: the metrics are evaluated on the rows
of all the workers. ``DaskTreeBoostRegressor(loss="cox")`` (survival, signed times) trains
the local model: the Cox risk sets span every worker's rows, whose times and log hazards
are gathered each stage; ``to_local()`` is a ``TreeBoostRegressor`` predicting log hazard
ratios. ``DaskTreeBoostSurvival`` is the same training with ``TreeBoostSurvival``'s
labels, ``predict`` and ``score``.
"""

DaskTreeBoostRegressor.__doc__ = (
    "Gradient tree boosting for regression, trained on a Dask cluster.\n"
    "\nThe model of ``TreeBoostRegressor`` trained data-parallel where the partitions of X "
    "lie;\nsee ``treeboost.dask``.\n"
    + _COMMON_DOC.format(params=_params_doc("regressor"), extra=""))
DaskTreeBoostClassifier.__doc__ = (
    "Gradient tree boosting for classification, trained on a Dask cluster.\n"
    "\nThe model of ``TreeBoostClassifier`` trained data-parallel where the partitions of X "
    "lie;\nsee ``treeboost.dask``.\n"
    + _COMMON_DOC.format(params=_params_doc("classifier"),
                         extra="classes_ : ndarray of shape (n_classes,)\nn_classes_ : int\n"))
DaskTreeBoostRanker.__doc__ = (
    "Gradient tree boosting for ranking (lambdarank), trained on a Dask cluster.\n"
    "\nThe model of ``TreeBoostRanker`` trained data-parallel where the partitions of X "
    "lie,\neach query whole on one worker; see ``treeboost.dask``.\n"
    + _COMMON_DOC.format(params=_params_doc("ranker"), extra=""))
DaskTreeBoostSurvival.__doc__ = (
    "Gradient boosted survival model (Cox), trained on a Dask cluster.\n"
    "\nThe model of ``TreeBoostSurvival`` trained data-parallel where the partitions of X "
    "lie:\n``fit`` takes scikit-survival's structured labels (event, time) as a dask array "
    "or signed\ntimes, ``predict`` returns the risk score (the log hazard ratio, lazily), "
    "``score`` Harrell's\nconcordance index; see ``treeboost.dask``.\n"
    + _COMMON_DOC.format(params=_survival_params_doc(), extra=""))
