"""The machinery under ``treeboost.dask``'s estimators: their base class, the tasks run
on the workers, and the ``__init__`` builders (the public classes are in ``dask``).

``_DaskTreeBoostBase`` checks the parameters and data on the client, stacks and
persists the partitions, fits the common bins, starts one training task per worker
(rank 0 hosting the ``Collective``), gathers the model, and maps prediction over the
blocks of X; ``treeboost.dask`` documents the steps.
"""

from __future__ import annotations

import inspect
import math
import numbers
import time
import uuid

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from . import _validation
from ._dask_checks import (
    _check_persisted,
    _check_queries,
    _check_vector,
    _check_X,
    _refuse_unsupported,
)
from .binning import BinMapper
from .collective import Collective, CollectiveError
from .dataset import Dataset, categorical_mask, merge_counts
from .predictor import check_iteration_range
from .sampling import make_streams
from .sklearn import (
    TreeBoostRegressor,
    _check_explain,
)
from .training import train

#: rows drawn on the client to fit the common bins
BIN_SAMPLE_ROWS = 200_000
#: seconds a member waits for rank 0's address, and for its peers in each operation
RENDEZVOUS_TIMEOUT = 60.0
COLLECTIVE_TIMEOUT = 300.0
#: seconds the client waits for the other members' errors after a first one
_GRACE = 5.0


def _init_like(local_class):
    """``local_class.__init__`` with a keyword-only ``client=None`` added: the local
    estimator's parameters whatever they are (one scope of the parameter table, or
    ``TreeBoostSurvival``'s, the regressor's less its unused loss parameters)."""
    local_init = local_class.__init__
    sig = inspect.signature(local_init)
    sig = sig.replace(parameters=[*sig.parameters.values(), inspect.Parameter(
        "client", inspect.Parameter.KEYWORD_ONLY, default=None)])

    def __init__(self, *args, client=None, **kwargs):
        local_init(self, *args, **kwargs)
        self.client = client

    __init__.__signature__ = sig  # what scikit-learn's get_params reads
    __init__.__doc__ = (f"Store the parameters (those of ``{local_class.__name__}``, and "
                        "``client``).")
    return __init__


# ---- the tasks run on the workers --------------------------------------------------
def _identity(block):
    return block


def _encode_labels(block, classes):
    return np.searchsorted(classes, block).astype(np.float64)


def _host_ip() -> str:
    """This worker's host address, which the other workers reach it on."""
    from distributed import get_worker
    from distributed.comm import get_address_host

    try:
        host = get_address_host(get_worker().address)
    except Exception:  # an unusual transport: fall back to the loopback
        return "127.0.0.1"
    return host or "127.0.0.1"


def _rows(parts, n_features: int) -> list:
    """Stacked partitions ``[X | y | w | ...]`` without their rows of weight 0.

    The client refused negative and non-finite weights (``_check_persisted``), so the
    rows left out are those of weight 0 only. In training such a row is not there, as
    locally. A validation row of weight 0 counts for nothing in the weighted metrics,
    so leaving it out changes no value; the local estimators keep it, but
    ``Dataset.from_chunks`` takes no row of weight 0, and one member's validation rows
    may all be of weight 0 where the set's are not.
    """
    out = []
    for part in parts:
        keep = part[:, n_features + 1] > 0
        out.append(part if keep.all() else part[keep])
    return out


def _binned(pieces: list, n_features: int, bin_mapper, with_qid: bool) -> Dataset:
    """A Dataset of stacked pieces, binned piece by piece (no float matrix of them all);
    ``with_qid``: their query ids (the column after the weights), and no weights."""
    pieces = [p for p in pieces if p.shape[0]]
    qid = None
    if not pieces:
        return Dataset(np.empty((0, n_features)), np.empty(0),
                       qid=np.empty(0) if with_qid else None).construct(bin_mapper)
    label = np.concatenate([p[:, n_features] for p in pieces])
    weight = np.concatenate([p[:, n_features + 1] for p in pieces])
    if with_qid:
        qid, weight = np.concatenate([p[:, n_features + 2] for p in pieces]), None
    return Dataset.from_chunks([p[:, :n_features] for p in pieces], label=label,
                               weight=weight, qid=qid, bin_mapper=bin_mapper)


def _train_member(rank: int, world_size: int, rendezvous: str, bin_mapper, params: dict,
                  n_features: int, layout: tuple, extra: str | None, *parts):
    """One member's training task: form the group, train on ``parts``; (Booster, stats).

    ``layout`` counts the partitions of ``parts``: the training data's first, then each
    validation set's (maybe none). ``extra`` names the matrices' column after the
    weights: "holdout" (training data only: 1 where the row is held out for early
    stopping) or "qid" (every set: the query ids, each query whole in one partition).
    """
    from distributed import Variable, get_worker

    if params.get("n_jobs") in (None, -1):  # the worker's threads, as Dask gave it
        worker = get_worker()
        state = getattr(worker, "state", worker)
        params = dict(params, n_jobs=int(getattr(state, "nthreads", 0) or 1))
    variable = Variable(rendezvous)
    if rank == 0:
        group = Collective.host(world_size, host=_host_ip(), port=0,
                                timeout=COLLECTIVE_TIMEOUT)
        variable.set((tuple(group.address), group.token))
    else:
        try:
            address, token = variable.get(timeout=RENDEZVOUS_TIMEOUT)
        except TimeoutError:
            raise CollectiveError(f"rank {rank}: rank 0 did not publish its address within "
                                  f"{RENDEZVOUS_TIMEOUT} s", ranks=(0,),
                                  operation="join") from None
        group = Collective.join(tuple(address), rank, world_size, token=token,
                                timeout=COLLECTIVE_TIMEOUT,
                                connect_timeout=RENDEZVOUS_TIMEOUT)
    with group:
        # the group forms first: a member that fails before its first operation (a
        # refused setting) must not leave the others retrying their joins
        if rank == 0:
            group.wait_for_peers()
        start = time.perf_counter()
        bounds = np.cumsum((0, *layout))
        sets = [_rows(parts[a:b], n_features) for a, b in zip(bounds[:-1], bounds[1:],
                                                               strict=True)]
        if extra == "holdout":
            sets = [[p[p[:, n_features + 2] <= 0] for p in sets[0]],
                    [p[p[:, n_features + 2] > 0] for p in sets[0]]]
        local, *valid = [_binned(pieces, n_features, bin_mapper, extra == "qid")
                         for pieces in sets]
        names = (["validation"] if extra == "holdout"
                 else [f"validation_{i}" for i in range(len(valid))])
        binned = time.perf_counter()
        booster = train(params, local, valid_sets=valid, valid_names=names, collective=group)
        return booster, dict(group.stats(), rows=int(local.label.shape[0]),
                             binning_seconds=binned - start,
                             training_seconds=time.perf_counter() - binned)


def _count_categories(block, columns, weight_column: int):
    """[(has NaN, sorted distinct values, their counts)] of each column of ``columns``,
    over the block's rows of positive weight (column ``weight_column``)."""
    out = []
    block = block[block[:, weight_column] > 0]
    for f in columns:
        column = block[:, f]
        values = column[~np.isnan(column)]
        distinct, counts = np.unique(values, return_counts=True)
        out.append((values.size < column.size, distinct, counts.astype(np.int64)))
    return out


def _predict_block(block, model, method, names, **options):
    """``model.method(block, **options)``, the block a frame of the training names if any."""
    if names is not None:
        import pandas as pd

        block = pd.DataFrame(block, columns=names)
    return getattr(model, method)(block, **options)


# ---- client side -------------------------------------------------------------------
def _persist_stacked(client, X, y, w, extra, name: str):
    """``[X | y | w (| extra)]`` as one row-chunked matrix persisted on the cluster (each
    partition's rows, labels and weights on one worker) and its futures in row order."""
    import dask.array as da
    from distributed import futures_of

    if w is None:
        w = da.ones(X.shape[0], chunks=(X.chunks[0],), dtype=np.float64)
    columns = [X, y[:, None], w.astype(np.float64)[:, None]]
    if extra is not None:
        columns.append(extra.astype(np.float64)[:, None])
    data = da.concatenate(columns, axis=1).rechunk({1: -1})
    # a key of this fit's own: a refit on the same arrays must not meet the partitions
    # of the last fit while the scheduler still forgets them
    data = data.map_blocks(_identity, dtype=np.float64, name=f"treeboost-{name}")
    data = client.persist(data)
    keys = [k[0] if isinstance(k, list) else k for k in data.__dask_keys__()]
    by_key = {f.key: f for f in futures_of(data)}
    return data, [by_key[k] for k in keys]


def _by_worker(client, futures, sizes) -> dict:
    """{worker address: [its non-empty partitions' futures, in row order]}."""
    who_has = client.who_has(futures)
    groups: dict = {}
    for future, size in zip(futures, sizes, strict=True):
        if size == 0:
            continue
        holders = sorted(who_has.get(future.key, ()))
        groups.setdefault(holders[0] if holders else None, []).append(future)
    if None in groups:  # not placed yet (should not happen after persist): pick any
        placed = sorted(w for w in groups if w is not None) or sorted(
            client.scheduler_info()["workers"])
        groups.setdefault(placed[0], []).extend(groups.pop(None))
    return groups


def _release(*collections) -> None:
    """Let the cluster forget the persisted ``collections`` now.

    Not left to garbage collection: after an error the traceback holds ``_fit``'s
    frame, and with it the futures, for as long as the caller keeps the exception.
    """
    from distributed import futures_of

    for collection in collections:
        for future in futures_of(collection):
            future.release()


class _DaskTreeBoostBase(BaseEstimator):
    """Shared fit/predict machinery of the Dask estimators."""

    _local_class = TreeBoostRegressor
    #: rows drawn on the client to fit the common bins (``BIN_SAMPLE_ROWS``); an
    #: instance may draw fewer (a test's small data then reaches the sampled path)
    bin_sample_rows = BIN_SAMPLE_ROWS

    # ---- fit -----------------------------------------------------------------
    def fit(self, X, y, sample_weight=None, eval_set=None, eval_sample_weight=None):
        """Fit on a dask array or dataframe, training where its partitions lie.

        Parameters
        ----------
        X : dask.array.Array of shape (n_samples, n_features) or dask.dataframe.DataFrame
            Row-chunked numeric data (NaN allowed: missing; +-inf refused); a
            dataframe's columns must be numbers or booleans (nullable and
            Arrow-backed ones read as float64, NA as NaN; integer-coded categories
            named in ``categorical_features``; no ``category`` or text dtype).
            Every block must have the shape its dask array declares.
        y : dask.array.Array of shape (n_samples,) or dask.dataframe.Series
            Targets (class labels for the classifier); finite.
        sample_weight : dask.array.Array or dask.dataframe.Series, default=None
            Finite, non-negative row weights, positive on at least 2 rows; a row of
            weight 0 is left out.
        eval_set : list of (X, y) pairs of dask collections, default=None
            Validation sets, evaluated after every stage on the rows of all the
            members (their partitions go to the workers that hold them, or to rank
            0's); the last one drives early stopping (``n_iter_no_change``).
            Without one, early stopping holds out ``validation_fraction`` of the
            rows, drawn on the client from ``random_state`` (not stratified).
        eval_sample_weight : list of dask collections or None, default=None
            Row weights of each validation set: finite, non-negative, not all 0; a
            row of weight 0 counts for nothing.

        Returns
        -------
        self
            The fitted estimator.

        Raises
        ------
        ValueError
            A bad parameter value or a setting that data-parallel training does not
            support (named; refused on the client before any data is read); bad
            data, named as the local estimators name it (a block whose shape is not
            its declared one names the block and both shapes).
        TypeError
            A column or array that is not numeric (a dataframe's column is named).
        DivergenceError
            Training diverged on the workers (as ``TreeBoostRegressor.fit`` raises).
        RuntimeError
            A training task failed (a worker died, a peer went silent); the other
            tasks are cancelled.
        """
        return self._fit(X, y, sample_weight, eval_set, eval_sample_weight)

    def _fit(self, X, y, sample_weight, eval_set, eval_sample_weight, qid=None,
             eval_qid=None):
        from distributed import default_client, wait

        client = self.client if self.client is not None else default_client()
        seed = self._seed()
        params = {k: v for k, v in self.get_params().items() if k != "client"}
        params["random_state"] = seed
        # before anything is computed or persisted: a refused setting costs no data
        _refuse_unsupported(self, params)
        X, names = _check_X(X)
        y = _check_vector(y, X, "y")
        n, n_features = X.shape
        if n < 2:
            raise ValueError(f"fit needs at least 2 samples, got {n}")
        if sample_weight is not None:
            sample_weight = _check_vector(sample_weight, X, "sample_weight")
            if sample_weight.dtype.kind not in "biuf":
                raise TypeError(f"sample_weight must be numeric, got dtype "
                                f"{sample_weight.dtype}")
        y = self._encode_target(y, client, params)
        evals = self._check_eval_sets(eval_set, eval_sample_weight, n_features, client)
        kind, extra, extras = None, None, [None] * len(evals)
        if qid is not None:
            kind, extra = "qid", _check_queries(qid, X, "qid", client)
            if len(eval_qid) != len(evals):
                raise ValueError(f"eval_qid has {len(eval_qid)} entries for {len(evals)} "
                                 "eval_set pairs: give one qid array per pair")
            extras = [_check_queries(q, Xe, f"eval_qid[{i}]", client)
                      for i, (q, (Xe, _, _)) in enumerate(zip(eval_qid, evals, strict=True))]
        elif self.n_iter_no_change is not None and not evals \
                and self.validation_fraction is not None:
            kind, extra = "holdout", self._holdout(n, seed, X.chunks[0], params)

        fit_id = uuid.uuid4().hex
        data = _persist_stacked(client, X, y, sample_weight, extra, f"data-{fit_id}")
        valid = [_persist_stacked(client, Xe, ye, we, e, f"valid{i}-{fit_id}")
                 for i, ((Xe, ye, we), e) in enumerate(zip(evals, extras, strict=True))]
        try:
            wait([f for _, futures in (data, *valid) for f in futures])
            _check_persisted(client, data, valid, n_features)
            booster = self._train(client, data, valid, kind, n, n_features, seed, params,
                                  names, fit_id)
        finally:  # the partitions live no longer than the fit
            _release(data[0], *(v[0] for v in valid))
        self._finish(booster, params, names)
        return self

    def _train(self, client, data, valid, kind, n, n_features, seed, params, names,
               fit_id):
        """The common bins, then one training task per worker holding training rows;
        rank 0's model (``self.workers_`` and ``self.collective_stats_`` set)."""
        from distributed import Variable

        bin_mapper = self._fit_bins(data[0], n, n_features, seed, client, names)

        # each member: the training partitions on its worker (in row order)
        groups = _by_worker(client, data[1], data[0].chunks[0])
        workers = sorted(groups)
        self.workers_ = workers
        # each validation partition goes to the member whose worker holds it, else rank 0
        per_member = [[[] for _ in valid] for _ in workers]
        for j, (vdata, vfutures) in enumerate(valid):
            for addr, futures in _by_worker(client, vfutures, vdata.chunks[0]).items():
                rank = workers.index(addr) if addr in workers else 0
                per_member[rank][j].extend(futures)

        rendezvous = f"treeboost-rendezvous-{fit_id}"
        world = len(workers)
        tasks = []
        for rank, addr in enumerate(workers):
            parts = [*groups[addr], *(f for fs in per_member[rank] for f in fs)]
            layout = (len(groups[addr]), *(len(fs) for fs in per_member[rank]))
            tasks.append(client.submit(
                _train_member, rank, world, rendezvous, bin_mapper, params, n_features,
                layout, kind, *parts, workers=[addr],
                allow_other_workers=False, pure=False, retries=0,
                key=f"treeboost-train-{rank}-{rendezvous}"))
        try:
            boosters = self._gather(client, tasks, workers)
        finally:
            try:
                Variable(rendezvous, client=client).delete()
            except Exception:  # best effort cleanup
                pass
            for task in tasks:  # their inputs, the partitions, are released by _fit
                task.release()
        self.collective_stats_ = [stats for _, stats in boosters]
        return boosters[0][0]

    def _check_eval_sets(self, eval_set, eval_sample_weight, n_features, client):
        """[(X, y, w)] of the validation sets, checked and encoded as the training data."""
        if eval_set is None:
            if eval_sample_weight is not None:
                raise ValueError("eval_sample_weight is given without eval_set")
            return []
        if isinstance(eval_set, tuple) and len(eval_set) == 2:
            eval_set = [eval_set]
        if eval_sample_weight is not None and len(eval_sample_weight) != len(eval_set):
            raise ValueError(f"eval_sample_weight has {len(eval_sample_weight)} entries "
                             f"for {len(eval_set)} eval_set pairs")
        evals = []
        for i, pair in enumerate(eval_set):
            try:
                Xe, ye = pair
                Xe, _ = _check_X(Xe, f"eval_set[{i}]: X")
                if Xe.shape[1] != n_features:
                    raise ValueError(f"X has {Xe.shape[1]} features, the training data "
                                     f"{n_features}")
                ye = self._encode_eval_target(
                    _check_vector(ye, Xe, "y", f"eval_set[{i}]: y"), client)
                we = None if eval_sample_weight is None else eval_sample_weight[i]
                if we is not None:
                    we = _check_vector(we, Xe, "sample_weight",
                                       f"eval_sample_weight[{i}]")
            except (ValueError, TypeError) as exc:
                raise type(exc)(f"eval_set[{i}]: {exc}") from exc
            evals.append((Xe, ye, we))
        return evals

    def _holdout(self, n, seed, chunks, params):
        """The early-stopping hold-out: a 0/1 dask column, ``validation_fraction`` of
        the rows drawn from the seed's "validation" stream."""
        import dask.array as da

        _validation.check_validation_size(self.validation_fraction, n,
                                          params.get("n_classes", 1))
        n_valid = math.ceil(self.validation_fraction * n)
        mask = np.zeros(n, dtype=np.float64)
        mask[make_streams(seed)["validation"].choice(n, size=n_valid, replace=False)] = 1.0
        return da.from_array(mask, chunks=(chunks,))

    def _gather(self, client, tasks, workers):
        """The members' results, or one clear error (the others' tasks cancelled)."""
        from distributed import as_completed, wait

        for done in as_completed(tasks):
            if done.status != "finished":  # the first failure: stop waiting for the rest
                break
        if any(t.status != "finished" for t in tasks):
            # let the others fail too (a peer's failure), to report the cause
            try:
                wait(tasks, timeout=_GRACE)
            except TimeoutError:
                pass
            errors = [(rank, t.exception()) for rank, t in enumerate(tasks)
                      if t.status == "error"]
            client.cancel([t for t in tasks if t.status not in ("finished", "error")])
            cause = [e for e in errors if not isinstance(e[1], CollectiveError)] or errors
            rank, exc = cause[0]
            where = f"on worker {workers[rank]} (rank {rank} of {len(workers)})"
            if isinstance(exc, (ValueError, TypeError)):
                raise type(exc)(f"distributed fit failed {where}: {exc}") from exc
            raise RuntimeError(f"distributed fit failed {where}: "
                               f"{type(exc).__name__}: {exc}") from exc
        return client.gather(tasks)

    def _seed(self) -> int:
        if isinstance(self.random_state, numbers.Integral):
            return int(self.random_state)
        return int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))

    def _fit_bins(self, data, n, n_features, seed, client, names) -> BinMapper:
        """The common bins: ``BinMapper(max_bins, subsample=self.bin_sample_rows,
        random_state=seed).fit`` of all the rows, from the rows it would sample (drawn
        on the client) and the categorical features' values counted on the workers."""
        import dask

        categorical = categorical_mask(self.categorical_features, n_features, names, ())
        sample_rows = self.bin_sample_rows
        mapper = BinMapper(self.max_bins, subsample=sample_rows, random_state=seed,
                           is_categorical=categorical)
        # a row of weight 0 is not there (the local Dataset drops it before binning), so
        # it places no bin edge: the weight column travels with the rows and filters them
        # (two slices of their own: computing the persisted matrix itself would gather its
        # partitions, the members' rows, onto one worker)
        weight = n_features + 1
        if n <= sample_rows:  # fit reads every row: the local estimator's bins
            X, w = client.compute([data[:, :n_features], data[:, weight]], sync=True)
            return mapper.fit(X[w > 0])
        rows = np.sort(np.random.default_rng(seed).choice(n, size=sample_rows,
                                                          replace=False))
        X, w = client.compute([data[rows][:, :n_features], data[rows][:, weight]], sync=True)
        sample = X[w > 0]
        if not categorical.any():
            return mapper.fit(sample)
        columns = np.flatnonzero(categorical)
        counted = dask.compute(*[dask.delayed(_count_categories)(block, columns, weight)
                                 for block in data.to_delayed().ravel()])
        categories = {}
        for j, f in enumerate(columns):
            acc = [False, np.empty(0), np.empty(0, dtype=np.int64)]
            for part in counted:
                has_missing, distinct, counts = part[j]
                acc[0] = acc[0] or has_missing
                merge_counts(acc, distinct, counts)
            categories[int(f)] = tuple(acc)
        return mapper.fit_sample(sample, categories)

    def _encode_target(self, y, client, params):
        if y.dtype.kind not in "biuf":
            raise TypeError(f"{type(self).__name__} needs a numeric target, got dtype "
                            f"{y.dtype}")
        return y.astype(np.float64)

    def _encode_eval_target(self, y, client):
        return self._encode_target(y, client, {})

    def _finish(self, booster, params, names) -> None:
        params = {k: v for k, v in params.items() if k != "n_classes"}
        params["random_state"] = self.random_state
        if names is not None:
            booster.feature_names = names
        booster.pandas_categories = {}
        self._local = self._local_class._from_booster(
            booster, params, feature_names=names, pandas_categories={},
            classes=getattr(self, "classes_", None), best_iteration=booster.best_iteration,
            evals_result=booster.evals_result)
        self.best_iteration_ = booster.best_iteration
        self.evals_result_ = booster.evals_result
        self.n_features_in_ = booster.n_features
        if names is not None:
            self.feature_names_in_ = np.asarray(names, dtype=object)
        self.n_iter_ = len(booster.trees)

    # ---- fitted model --------------------------------------------------------
    @property
    def booster_(self):
        """The fitted ``Booster`` (F0, trees, and the common bin mapper)."""
        check_is_fitted(self, "_local")
        return self._local.booster_

    def to_local(self):
        """The fitted local estimator (``TreeBoostRegressor`` / ``TreeBoostClassifier``).

        Returns
        -------
        TreeBoostRegressor or TreeBoostClassifier
            The same model; its ``save_model`` file is the local estimators' format.
        """
        check_is_fitted(self, "_local")
        return self._local

    def save_model(self, path) -> None:
        """Write the fitted model (as the local estimator's file, ``treeboost.load_model``).

        Parameters
        ----------
        path : str or path-like
            Destination file.
        """
        self.to_local().save_model(path)

    # ---- prediction ----------------------------------------------------------
    def _map(self, X, method: str, tail: tuple, dtype, **options):
        """``method`` of the local model mapped over X's row blocks, lazily.

        ``tail`` is the shape of one row's output (``()`` for a number per row);
        ``options`` are passed to ``method`` on every block.
        """
        check_is_fitted(self, "_local")
        X, names = _check_X(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input")
        names = getattr(self, "feature_names_in_", None)
        names = None if names is None else list(names)
        meta = np.empty((0,) * (1 + len(tail)), dtype=dtype)
        if not tail:
            return X.map_blocks(_predict_block, self._local, method, names, drop_axis=1,
                                dtype=dtype, meta=meta, **options)
        # X has one column chunk: its axis 1 becomes the first of the tail
        extra = {"new_axis": list(range(2, 1 + len(tail)))} if len(tail) > 1 else {}
        return X.map_blocks(_predict_block, self._local, method, names,
                            chunks=(X.chunks[0],) + tuple((d,) for d in tail), dtype=dtype,
                            meta=meta, **extra, **options)

    def predict(self, X, *, pred_contribs=False, pred_interactions=False, pred_leaf=False,
                raw_score=False, iteration_range=None):
        """Predict, lazily, block by block with the fitted model.

        Parameters
        ----------
        X : dask.array.Array of shape (n_samples, n_features) or dask.dataframe.DataFrame
            Data, with the training features.
        pred_contribs, pred_interactions, pred_leaf, raw_score : bool, default=False
            Return the local estimator's ``predict`` with this option instead:
            TreeSHAP contributions, SHAP interaction values, leaf indices (int32)
            or raw scores.

            .. versionadded:: 0.1.0
        iteration_range : tuple of (int, int), default=None
            Use the stages ``[start, stop)`` only, as the local ``predict``.

            .. versionadded:: 0.1.0

        Returns
        -------
        dask.array.Array
            Of shape (n_samples,): predicted values (class labels for the
            classifier); with an option, the local ``predict``'s shape, row
            blocks as X's.
        """
        check_is_fitted(self, "_local")
        # checked here, not at compute time on a worker
        _check_explain(pred_contribs, pred_interactions, pred_leaf, raw_score)
        booster = self._local.booster_
        start, stop = check_iteration_range(iteration_range, len(booster.trees))
        options = {"iteration_range": iteration_range}
        K = booster.n_outputs
        outputs, width = () if K == 1 else (K,), self.n_features_in_ + 1
        if pred_contribs:
            return self._map(X, "predict", outputs + (width,), np.float64,
                             pred_contribs=True, **options)
        if pred_interactions:
            return self._map(X, "predict", outputs + (width, width), np.float64,
                             pred_interactions=True, **options)
        if pred_leaf:
            return self._map(X, "apply", ((stop - start) * K,), np.int32, **options)
        if raw_score:
            return self._map(X, "predict", outputs, np.float64, raw_score=True, **options)
        dtype = getattr(self, "classes_", np.empty(0)).dtype
        return self._map(X, "predict", (), dtype, **options)
