"""``treeboost train DATA``: load, encode, split 80/20, fit, print test metrics, save.

Data flow: a file -> ``study.data.load_spec`` (ARFF/CSV via ``treeboost.datasets``;
the task from the target's type, or ranking for a query column) or
``study.data.load_svmlight_specs`` (svmlight, ranking; with ``--test``, both files read
with one index base, recorded in the saved model for ``treeboost predict``) ->
``one_hot`` on request (and, with ``--weight-column``, the weights taken out of the
features: ``cli._weights``) -> ``study.data.split_indices`` (the study's seeded, stratified
hold-out, so ``train`` and ``study`` score the same rows; survival rows stratified by
the event indicator) or, for ranking, ``study.data.split_queries`` (whole queries, as the
study) -- or, with ``--test FILE``, that file as the test part ->
``TreeBoostClassifier``/``TreeBoostRegressor``/``TreeBoostRanker``/``TreeBoostSurvival``
with the options of the parameter table -> metrics on the test part (NDCG@1/3/5/10 and
MAP@10 over its queries for ranking; the concordance index and Breslow's negative log
partial likelihood for survival) -> stdout (text or JSON) and,
with ``--save``, a model file. While fitting, ``--progress`` draws a bar of the stages
on stderr (tqdm): by default only when stderr is a terminal, so a log or a pipe never
receives one.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..callbacks import ProgressBar
from ..exceptions import TreeboostError
from ._options import add_param_options, chosen_params, seed
from ._weights import check_training_weights, check_weight_option, pop_weights

#: the estimator scope of the parameter table that learns each task
SCOPES = {"classification": "classifier", "regression": "regressor", "ranking": "ranker",
          "survival": "regressor"}

#: the cut-offs of the ranking metrics printed
NDCG_CUTOFFS = (1, 3, 5, 10)
MAP_CUTOFF = 10


def add_parser(sub) -> None:
    """Register the ``train`` subcommand."""
    p = sub.add_parser("train", help="train on a data file and print test metrics",
                       description="Train on an ARFF, CSV or svmlight file: stratified "
                                   "80/20 split (plain for regression, by whole queries for "
                                   "ranking) or a separate --test file, fit, print test "
                                   "metrics.")
    p.add_argument("data", metavar="DATA",
                   help="ARFF, CSV or svmlight file (optionally .gz); an svmlight file with "
                        "query groups (qid: tokens or a DATA.query file) is a ranking "
                        "dataset")
    p.add_argument("--test", metavar="FILE",
                   help="test file in DATA's format and columns: scored instead of a split "
                        "of DATA")
    p.add_argument("--target", help="target column (default: last ARFF attribute; "
                                    "required for CSV); several, comma-separated (a,b), "
                                    "fit a multi-output regression, one output per "
                                    "column")
    p.add_argument("--task", choices=["auto", "classification", "regression", "ranking",
                                      "survival"],
                   default="auto", help="default: ranking for query groups (svmlight qid: "
                                        "or .query, or --query-column), survival for "
                                        "--event-column or --loss cox, classification "
                                        "for a nominal or text target, else regression")
    p.add_argument("--query-column", metavar="NAME",
                   help="ranking from an ARFF or CSV file: the column of query ids (the "
                        "rows of a query contiguous)")
    p.add_argument("--event-column", metavar="NAME",
                   help="survival from an ARFF or CSV file: the event indicator column (1 "
                        "or true: the event was observed at the --target time, 0 or false: "
                        "censored then); without it a survival target holds signed times "
                        "(negative: censored)")
    p.add_argument("--weight-column", metavar="NAME",
                   help="ARFF or CSV: the column of row weights (finite numbers >= 0, not "
                        "all 0), taken out of the features and given to the fit as "
                        "sample_weight; they also weigh the test metrics. Ranking: query "
                        "weights, the same on every row of a query. A --test file's "
                        "column of that name weighs its metrics (its rows weigh 1 "
                        "without one)")
    p.add_argument("--one-hot", action="store_true",
                   help="one 0/1 column per category instead of native categorical splits")
    p.add_argument("--seed", type=seed, default=0, help="seed of the split and the model")
    p.add_argument("--save", metavar="MODEL", help="write the fitted model (JSON) here")
    p.add_argument("--force", action="store_true", help="overwrite an existing --save file")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.add_argument("--progress", choices=["auto", "on", "off"], default="auto",
                   help="a progress bar of the fit's stages on stderr, drawn by tqdm (pip "
                        "install 'treeboost[progress]'); auto (default): only when stderr is "
                        "a terminal, tqdm is installed and --verbose is not given (its lines "
                        "are the progress then); on: on any stderr, an error without tqdm. "
                        "Fits under a second draw no bar")
    add_param_options(p)
    p.set_defaults(handler=run)


@dataclass
class Split:
    """The data of ``train``: the task, the train and test parts, and how they were made.

    ``train_group``/``test_group`` are the query sizes of each part for ranking, else
    None; ``how`` says how the test part was made ("80/20 by query", a file, ...);
    ``zero_based`` is the index base svmlight data was read with (None for ARFF/CSV),
    recorded in the saved model so that ``treeboost predict`` reads new data alike.
    ``w_train``/``w_test`` are the rows' weights (``--weight-column``), else None.
    """

    task: str
    X_train: object
    X_test: object
    y_train: object
    y_test: object
    train_group: np.ndarray | None
    test_group: np.ndarray | None
    how: str
    zero_based: bool | None = None
    w_train: np.ndarray | None = None
    w_test: np.ndarray | None = None


def load_split(path, target, task, one_hot, seed, test=None, query=None,
               event=None, weight=None) -> Split:
    """The data of ``train``: features and target, split into the train and test parts.

    Parameters
    ----------
    path : str or path-like
        The data file.
    target : str or None
        Its target column (ARFF/CSV).
    task : {"auto", "classification", "regression", "ranking", "survival"}
        The task; "auto" decides from the file (see ``study.data.load_spec``).
    one_hot : bool
        One-hot encode the categorical columns.
    seed : int
        Seed of the 80/20 split (the study's helpers: rows stratified by class or, for
        survival, by the event indicator, or whole queries for ranking).
    test : str or path-like, default=None
        A test file in the same format and columns, used as the test part instead of
        a split of ``path``.
    query : str, default=None
        Column of query ids of an ARFF/CSV ranking file.
    event : str, default=None
        Event indicator column of an ARFF/CSV survival file (the target is then the
        time); the survival targets are signed times (``treeboost.survival``).
    weight : str, default=None
        Column of row weights of an ARFF/CSV file, taken out of the features
        (``cli._weights.pop_weights``); a test file's column of that name, if any,
        weighs its rows.

    Returns
    -------
    Split
    """
    from ..datasets import one_hot as encode
    from ..study.data import (
        DatasetSpec,
        is_svmlight_file,
        load_spec,
        load_svmlight_specs,
        split_indices,
        split_queries,
        take_rows,
    )

    names = target_columns(target)
    if names is not None:
        target = names[0]  # the others are taken out of the features below
    spec = DatasetSpec(os.path.basename(path), os.fspath(path), target,
                       None if task == "auto" else task, query, event)
    zero_based = w = None
    if is_svmlight_file(spec.source):
        # a training file and its test file are read together: one index base decided
        # over both (a zero-based test file need not use feature 0) and one width
        specs = [spec]
        if test is not None:
            if not is_svmlight_file(test):
                raise _format_mismatch(test)
            specs.append(DatasetSpec(os.path.basename(test), os.fspath(test), None,
                                     spec.task, query, event))
        parts, zero_based = load_svmlight_specs(specs)
        (X, y, group), task = parts[0], "ranking"
        if test is not None:
            X_test, y_test, test_group = parts[1]
            return Split(task, X, X_test, y, y_test, group, test_group,
                         f"test file {os.fspath(test)}", zero_based)
    else:
        X, y, task, group = load_spec(spec, return_group=True)
        X, y = _more_targets(X, y, names, task, spec.source)
        X, w = pop_weights(X, weight, spec.source, task=task, group=group)
    if test is not None:
        test_spec = DatasetSpec(os.path.basename(test), os.fspath(test), target, task, query,
                                event)
        X_test, y_test, _, test_group = load_spec(test_spec, return_group=True)
        X_test, y_test = _more_targets(X_test, y_test, names, task, test_spec.source)
        X_test, w_test = pop_weights(X_test, weight, test_spec.source, task=task,
                                     group=test_group, required=False)
        X, X_test = _like_training(X, X_test, test, one_hot)
        return Split(task, X, X_test, y, y_test, group, test_group,
                     f"test file {os.fspath(test)}", w_train=w, w_test=w_test)
    if one_hot and not sp.issparse(X):
        X = encode(X)
    if task == "ranking":
        train, held, train_group, test_group = split_queries(group, 1, 0, seed)
        how = "80/20 by query"
    else:
        (train, held), train_group, test_group = split_indices(y, task, 1, 0, seed), None, None
        how = {"classification": "80/20 stratified",
               "survival": "80/20 stratified by event"}.get(task, "80/20")
    return Split(task, take_rows(X, train), take_rows(X, held), take_rows(y, train),
                 take_rows(y, held), train_group, test_group, how, zero_based,
                 None if w is None else w[train], None if w is None else w[held])


def target_columns(target) -> list[str] | None:
    """The columns of a ``--target`` naming several (``a,b``), or None for one column.

    Raises
    ------
    ValueError
        Naming ``--target`` for an empty or repeated name.
    """
    if target is None or "," not in target:
        return None
    names = [name.strip() for name in target.split(",")]
    if not all(names) or len(set(names)) != len(names):
        raise ValueError(f"--target {target!r}: several targets are distinct column names "
                         "separated by commas, e.g. --target a,b")
    return names


def check_multi_target(args) -> None:
    """Refuse, naming ``--target``, what several targets cannot go with.

    Several targets fit a multi-output regression (one output per column), so the task
    must be regression (or auto) and ``--loss`` one of the per-column losses
    (``losses.PER_COLUMN_LOSSES``); checked before any data is read.
    """
    from ..losses import PER_COLUMN_LOSSES

    names = target_columns(args.target)
    if names is None:
        return
    what = f"--target {args.target} (several targets: a multi-output regression)"
    if args.task not in ("auto", "regression"):
        raise ValueError(f"{what} needs --task regression (or auto); got --task {args.task}")
    for option, value in (("--query-column", args.query_column),
                          ("--event-column", args.event_column)):
        if value is not None:
            raise ValueError(f"{what} does not go with {option} (ranking, survival)")
    loss = getattr(args, "loss", None)
    if isinstance(loss, str) and loss not in PER_COLUMN_LOSSES:
        raise ValueError(f"{what} needs a per-column --loss, one of "
                         f"{', '.join(PER_COLUMN_LOSSES)}; got --loss {loss}")


def _more_targets(X, y, names, task, source):
    """Features and target of a multi-output file: ``names[1:]`` taken out of ``X`` and
    put beside ``y`` (a ``DataFrame`` of float64 columns in the order of ``names``); rows
    missing any of them left out, with a warning. ``(X, y)`` unchanged if ``names`` is
    None."""
    import warnings

    from ..exceptions import DataError
    from ..study.data import _regression_target

    if names is None:
        return X, y
    if task != "regression":
        raise ValueError(f"--target {','.join(names)}: several targets are a multi-output "
                         f"regression, and {source}'s target {names[0]!r} makes the task "
                         f"{task}; give numeric target columns")
    missing = [name for name in names[1:] if name not in X.columns]
    if missing:
        raise DataError(f"{source}: target column {missing[0]!r} is not a column (columns: "
                        f"{', '.join(map(str, X.columns))})")
    Y = pd.concat([y.rename(names[0]), *(_regression_target(X.pop(name), source)
                                        for name in names[1:])], axis=1)
    keep = Y.notna().all(axis=1).to_numpy()
    if not keep.all():
        if not keep.any():
            raise DataError(f"{source}: no row has a value in every target column")
        warnings.warn(f"{source}: {int((~keep).sum())} of {keep.size} rows miss a value in "
                      f"target columns {', '.join(names[1:])} and are left out",
                      UserWarning, stacklevel=3)
        X, Y = X[keep].reset_index(drop=True), Y[keep].reset_index(drop=True)
    return X, Y


def _format_mismatch(path):
    from ..exceptions import DataError

    return DataError(f"{path}: not in the training file's format (svmlight for both, or "
                     "ARFF/CSV for both)")


def _like_training(X, X_test, path, one_hot):
    """The ARFF/CSV training and test features in one layout: the training file's
    columns (and categories, for one-hot). svmlight pairs are read alike already
    (``study.data.load_svmlight_specs``)."""
    from ..datasets import one_hot as encode
    from ..exceptions import DataError

    if sp.issparse(X_test):
        raise _format_mismatch(path)
    missing = [str(c) for c in X.columns if c not in X_test.columns]
    if missing:
        raise DataError(f"{path} lacks {len(missing)} of the training file's columns: "
                        f"{', '.join(map(repr, missing[:5]))}{' ...' if len(missing) > 5 else ''}")
    X_test = X_test[list(X.columns)].copy()
    if not one_hot:
        return X, X_test  # the estimator codes the test categories by the training ones
    for name in X.columns:
        if all(isinstance(f[name].dtype, pd.CategoricalDtype) for f in (X, X_test)):
            # the training categories' indicator columns, in their order; a category
            # unseen in training is all zeros, as a missing value
            X_test[name] = X_test[name].cat.set_categories(X[name].cat.categories)
    X, X_test = encode(X), encode(X_test)
    if list(X_test.columns) != list(X.columns):
        raise DataError(f"{path}: some columns are categorical in one file and numeric in "
                        "the other; one-hot encoding gives them other columns")
    return X, X_test


def make_model(task, params, seed):
    """The estimator of ``task`` with the given parameters and seed."""
    from .. import TreeBoostClassifier, TreeBoostRanker, TreeBoostRegressor
    from ..survival import TreeBoostSurvival

    cls = {"classification": TreeBoostClassifier, "ranking": TreeBoostRanker,
           "survival": TreeBoostSurvival}.get(task, TreeBoostRegressor)
    return cls(**params, random_state=seed)


def decide_task(task, loss):
    """The ``--task`` to load with: "survival" for ``--loss cox`` (a survival loss) when
    the task is "auto"; a survival loss refused (naming ``--loss``) for another task."""
    from ..losses import SURVIVAL_LOSSES

    if not isinstance(loss, str) or loss not in SURVIVAL_LOSSES:
        return task
    if task == "auto":
        return "survival"
    if task != "survival":
        raise ValueError(f"--loss {loss} is a survival loss, and the task is {task}: use "
                         "--task survival (or auto), with --event-column or a target of "
                         "signed times")
    return task


def survival_params(chosen: dict) -> dict:
    """``chosen`` checked for ``TreeBoostSurvival``: the regressor's options but its loss
    parameters (``--alpha``, ``--power``), and a survival ``--loss``."""
    from .. import params as _params
    from ..losses import SURVIVAL_LOSSES, loss_params

    kept = {p for name in SURVIVAL_LOSSES for p in loss_params(name)}  # --aft-loss-*
    for name in _params.part_names("loss", "regressor"):
        if name in chosen and name not in kept:
            raise ValueError(f"--{name.replace('_', '-')} applies to regression only, and "
                             "this dataset's task is survival")
    loss = chosen.get("loss")
    if loss is not None and loss not in SURVIVAL_LOSSES:
        raise ValueError(f"--loss {loss} is not a survival loss; this dataset's task is "
                         f"survival, whose losses are {', '.join(SURVIVAL_LOSSES)}")
    return chosen


def metrics(task, model, X_test, y_test, group=None, sample_weight=None) -> dict:
    """Test metrics: accuracy, log-loss, AUC (binary), macro F1; or RMSE, MAE, R2 (with
    several targets each one's, under "targets", and their means); or,
    for ranking (``group`` the test queries' sizes), NDCG@1/3/5/10 and MAP@10; or, for
    survival (``y_test`` signed times), Harrell's concordance index ("cindex") and
    Breslow's negative log partial likelihood per event ("cox-nloglik", NaN without an
    event among the test rows; for ``--loss aft`` the AFT negative log-likelihood,
    "aft-nloglik", and the concordance of the predicted log times, a later time a lower
    risk). ``sample_weight`` (the test rows' weights, query
    weights for ranking) weighs every one of them."""
    from sklearn import metrics as m

    w = sample_weight
    if task == "survival" and model.loss == "aft":
        from .._survival_metrics import aft_negative_log_likelihood, concordance_index
        from ..survival import aft_bounds

        bounds = aft_bounds(np.asarray(y_test, dtype=np.float64))
        log_time = model.predict(X_test, raw_score=True)  # a later time, a lower risk
        return {"cindex": float(concordance_index(bounds, -log_time, w)),
                "aft-nloglik": float(aft_negative_log_likelihood(
                    bounds, log_time, w, distribution=model.aft_loss_distribution,
                    scale=model.aft_loss_distribution_scale))}
    if task == "survival":
        from .._survival_metrics import concordance_index, cox_negative_log_likelihood

        y = np.asarray(y_test, dtype=np.float64)
        risk = model.predict(X_test)
        events = y > 0 if w is None else (y > 0) & (w > 0)
        return {"cindex": float(concordance_index(y, risk, w)),
                "cox-nloglik": float(cox_negative_log_likelihood(y, risk, w))
                if np.any(events) else float("nan")}
    if task == "ranking":
        from ..metrics import map_at_k, ndcg_at_k

        scores = model.predict(X_test)
        offsets = np.concatenate(([0], np.cumsum(group)))
        out = {f"ndcg@{k}": ndcg_at_k(y_test, scores, offsets, k, sample_weight=w)
               for k in NDCG_CUTOFFS}
        out[f"map@{MAP_CUTOFF}"] = map_at_k(y_test, scores, offsets, MAP_CUTOFF,
                                            sample_weight=w)
        return out
    if task == "regression":
        pred = model.predict(X_test)
        y = np.asarray(y_test, dtype=np.float64)
        if y.ndim == 2:  # several targets: each one's metrics, and their mean
            columns = [str(c) for c in y_test.columns] if hasattr(y_test, "columns") \
                else [f"target_{j}" for j in range(y.shape[1])]
            per = {name: _regression_metrics(y[:, j], pred[:, j], w)
                   for j, name in enumerate(columns)}
            return {**{key: float(np.mean([v[key] for v in per.values()]))
                       for key in ("rmse", "mae", "r2")}, "targets": per}
        return _regression_metrics(y, pred, w)
    y = np.asarray(y_test)
    proba = model.predict_proba(X_test)
    pred = model.classes_[proba.argmax(axis=1)]
    out = {"accuracy": float(np.average(pred == y, weights=w)),
           "f1_macro": float(m.f1_score(y, pred, average="macro", labels=model.classes_,
                                        zero_division=0, sample_weight=w))}
    known = np.isin(y, model.classes_)  # a class absent from training has no probability
    wk = None if w is None else w[known]
    out["log_loss"] = float(m.log_loss(y[known], proba[known], labels=model.classes_,
                                       sample_weight=wk))
    if len(model.classes_) == 2 and len(np.unique(y[known])) == 2:
        out["auc"] = float(m.roc_auc_score(y[known] == model.classes_[1], proba[known, 1],
                                           sample_weight=wk))
    return out


def _regression_metrics(y, pred, sample_weight=None) -> dict:
    """RMSE, MAE and R2 of one target's predictions (weighted by ``sample_weight``)."""
    from sklearn import metrics as m

    w = sample_weight
    return {"rmse": float(np.sqrt(m.mean_squared_error(y, pred, sample_weight=w))),
            "mae": float(m.mean_absolute_error(y, pred, sample_weight=w)),
            "r2": float(m.r2_score(y, pred, sample_weight=w))}


def progress_callbacks(mode, verbose, stream=None, tqdm_class=None) -> list:
    """The callbacks of ``--progress``: ``[ProgressBar]`` or none.

    Parameters
    ----------
    mode : {"auto", "on", "off"}
        The option's value. "auto" draws a bar only on a terminal (``stream.isatty()``),
        with tqdm installed, and without ``verbose`` lines to draw it over.
    verbose : int or None
        The ``--verbose`` value (None when not given).
    stream : file-like, default=None
        Where the bar is drawn; None is ``sys.stderr``, looked up now.
    tqdm_class : callable, default=None
        Passed to ``ProgressBar`` (None: tqdm).

    Returns
    -------
    list of ProgressBar
    """
    stream = sys.stderr if stream is None else stream
    if mode == "off" or (mode == "auto" and (verbose or not _is_terminal(stream))):
        return []
    try:
        # delay: a fit of a second or less draws nothing; leave=False: the report
        # printed next is not preceded by a finished bar
        return [ProgressBar(desc="treeboost train", delay=1.0, file=stream, leave=False,
                            tqdm_class=tqdm_class)]
    except ImportError:
        if mode == "auto":
            return []  # the bar is a nicety there, not worth an error
        raise TreeboostError("--progress on draws the bar with tqdm, which is not "
                             "installed: pip install 'treeboost[progress]'") from None


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def run(args) -> int:
    """Run ``treeboost train``."""
    if args.save is not None:
        from ..serialization import check_destination

        check_destination(args.save)  # before the fit, not after it
        if os.path.exists(args.save) and not args.force:
            raise FileExistsError(f"{args.save} exists; pass --force to overwrite it")
    check_multi_target(args)
    check_weight_option(args)
    task = decide_task(args.task, getattr(args, "loss", None))
    data = load_split(args.data, args.target, task, args.one_hot, args.seed, args.test,
                      args.query_column, args.event_column, args.weight_column)
    check_training_weights(data.w_train, f"--weight-column {args.weight_column}")
    task = data.task
    chosen = chosen_params(args, SCOPES[task])
    if task == "survival":
        chosen = survival_params(chosen)
    model = make_model(task, chosen, args.seed)
    callbacks = progress_callbacks(args.progress, chosen.get("verbose"))
    start = time.perf_counter()
    w = data.w_train  # None without --weight-column: the unweighted fit, unchanged
    if task == "ranking":
        model.fit(data.X_train, data.y_train, group=data.train_group, sample_weight=w,
                  callbacks=callbacks)
    elif task == "survival":  # signed times
        model.fit(data.X_train, np.asarray(data.y_train, dtype=np.float64),
                  sample_weight=w, callbacks=callbacks)
    else:
        # several targets: the (n, k) frame, whose column names the model keeps
        # (``target_names_``, written to the model file)
        model.fit(data.X_train, np.asarray(data.y_train) if task == "classification"
                  else data.y_train, sample_weight=w, callbacks=callbacks)
    seconds = time.perf_counter() - start
    n_train, n_test = data.X_train.shape[0], data.X_test.shape[0]
    report = {"data": os.fspath(args.data), "task": task, "n_rows": n_train + n_test,
              "n_features": int(data.X_train.shape[1]), "n_train": n_train,
              "n_test": n_test, "seed": args.seed, "split": data.how,
              "params": {k: v for k, v in model.get_params().items() if k in chosen},
              "fit_seconds": seconds,
              **metrics(task, model, data.X_test, data.y_test, data.test_group,
                        data.w_test)}
    if args.weight_column is not None:
        report["weight_column"] = args.weight_column
    if args.test is not None:
        report["test"] = os.fspath(args.test)
    if task == "classification":
        report["n_classes"] = int(len(model.classes_))
    if task == "survival":
        report["n_events_train"] = int(np.sum(np.asarray(data.y_train) > 0))
        report["n_events_test"] = int(np.sum(np.asarray(data.y_test) > 0))
    if task == "ranking":
        report["n_queries_train"] = int(data.train_group.size)
        report["n_queries_test"] = int(data.test_group.size)
    if args.save:
        from .._estimator_io import save_model

        # the index base of svmlight data goes into the file: new data is read alike
        save_model(model, args.save, svmlight_zero_based=data.zero_based)
        report["model"] = os.fspath(args.save)
    if args.format == "json":
        print(json.dumps(report, indent=1))
    else:
        _print_text(report)
    return 0


def _print_text(report: dict) -> None:
    classes = f", {report['n_classes']} classes" if "n_classes" in report else ""
    print(f"data      {report['data']} ({report['task']}, {report['n_rows']} rows, "
          f"{report['n_features']} features{classes})")
    train, test = f"{report['n_train']} train", f"{report['n_test']} test"
    if "n_queries_train" in report:
        train += f" ({report['n_queries_train']} queries)"
        test += f" ({report['n_queries_test']} queries)"
    if "n_events_train" in report:
        train += f" ({report['n_events_train']} events)"
        test += f" ({report['n_events_test']} events)"
    print(f"split     {report['split']}, seed {report['seed']}: {train}, {test}")
    if "weight_column" in report:
        print(f"weights   column {report['weight_column']} (the fit's sample_weight; the "
              "test metrics weighted)")
    params = ", ".join(f"{k}={v}" for k, v in report["params"].items()) or "defaults"
    print(f"params    {params}")
    print(f"fit time  {report['fit_seconds']:.3f} s")
    ranking = [f"ndcg@{k}" for k in NDCG_CUTOFFS] + [f"map@{MAP_CUTOFF}"]
    for name in ("accuracy", "log_loss", "auc", "f1_macro", "rmse", "mae", "r2", *ranking,
                 "cindex", "cox-nloglik", "aft-nloglik"):
        if name in report:
            mean = f" (mean of {len(report['targets'])} targets)" if "targets" in report \
                else ""
            print(f"{name:<9} {report[name]:.6g}{mean}")
    for target, values in report.get("targets", {}).items():
        print(f"target    {target}: " + ", ".join(f"{k} {v:.6g}" for k, v in values.items()))
    if "model" in report:
        print(f"saved     {report['model']}")
