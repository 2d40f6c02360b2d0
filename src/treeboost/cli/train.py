"""``treeboost train DATA``: load, encode, split 80/20, fit, print test metrics, save.

Data flow: a file -> ``study.data.load_spec`` (ARFF/CSV via ``treeboost.datasets``; the
task from the target's type) -> ``one_hot`` on request -> ``study.data.split_indices``
(the study's seeded, stratified hold-out, so ``train`` and ``study`` score the same rows)
-> ``TreeBoostClassifier``/``TreeBoostRegressor`` with the options of the parameter
table -> metrics on the 20 % -> stdout (text or JSON) and, with ``--save``, a model file.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np

from ._options import add_param_options, chosen_params, seed


def add_parser(sub) -> None:
    """Register the ``train`` subcommand."""
    p = sub.add_parser("train", help="train on a data file and print test metrics",
                       description="Train on an ARFF or CSV file: stratified 80/20 split "
                                   "(plain for regression), fit, print test metrics.")
    p.add_argument("data", metavar="DATA", help="ARFF or CSV file (optionally .gz)")
    p.add_argument("--target", help="target column (default: last ARFF attribute; "
                                    "required for CSV)")
    p.add_argument("--task", choices=["auto", "classification", "regression"],
                   default="auto", help="default: classification for a nominal or text "
                                        "target, else regression")
    p.add_argument("--one-hot", action="store_true",
                   help="one 0/1 column per category instead of native categorical splits")
    p.add_argument("--seed", type=seed, default=0, help="seed of the split and the model")
    p.add_argument("--save", metavar="MODEL", help="write the fitted model (JSON) here")
    p.add_argument("--force", action="store_true", help="overwrite an existing --save file")
    p.add_argument("--format", choices=["text", "json"], default="text")
    add_param_options(p)
    p.set_defaults(handler=run)


def load_split(path, target, task, one_hot, seed):
    """The data of ``train``: features and target, split into the train and test parts."""
    from ..datasets import one_hot as encode
    from ..study.data import DatasetSpec, load_spec, split_indices

    spec = DatasetSpec(os.path.basename(path), os.fspath(path), target,
                       None if task == "auto" else task)
    X, y, task = load_spec(spec)
    if one_hot:
        X = encode(X)
    train, test = split_indices(y, task, 1, 0, seed)
    return task, X.iloc[train], X.iloc[test], y.iloc[train], y.iloc[test]


def make_model(task, params, seed):
    """The estimator of ``task`` with the given parameters and seed."""
    from .. import TreeBoostClassifier, TreeBoostRegressor

    cls = TreeBoostClassifier if task == "classification" else TreeBoostRegressor
    return cls(**params, random_state=seed)


def metrics(task, model, X_test, y_test) -> dict:
    """Test metrics: accuracy, log-loss, AUC (binary), macro F1; or RMSE, MAE, R2."""
    from sklearn import metrics as m

    if task == "regression":
        pred = model.predict(X_test)
        y = np.asarray(y_test, dtype=np.float64)
        return {"rmse": float(np.sqrt(m.mean_squared_error(y, pred))),
                "mae": float(m.mean_absolute_error(y, pred)), "r2": float(m.r2_score(y, pred))}
    y = np.asarray(y_test)
    proba = model.predict_proba(X_test)
    pred = model.classes_[proba.argmax(axis=1)]
    out = {"accuracy": float(np.mean(pred == y)),
           "f1_macro": float(m.f1_score(y, pred, average="macro", labels=model.classes_,
                                        zero_division=0))}
    known = np.isin(y, model.classes_)  # a class absent from training has no probability
    out["log_loss"] = float(m.log_loss(y[known], proba[known], labels=model.classes_))
    if len(model.classes_) == 2 and len(np.unique(y[known])) == 2:
        out["auc"] = float(m.roc_auc_score(y[known] == model.classes_[1], proba[known, 1]))
    return out


def run(args) -> int:
    """Run ``treeboost train``."""
    if args.save is not None:
        from ..serialization import check_destination

        check_destination(args.save)  # before the fit, not after it
        if os.path.exists(args.save) and not args.force:
            raise FileExistsError(f"{args.save} exists; pass --force to overwrite it")
    task, X_train, X_test, y_train, y_test = load_split(args.data, args.target, args.task,
                                                        args.one_hot, args.seed)
    scope = "classifier" if task == "classification" else "regressor"
    model = make_model(task, chosen_params(args, scope), args.seed)
    start = time.perf_counter()
    model.fit(X_train, np.asarray(y_train) if task == "classification" else y_train)
    seconds = time.perf_counter() - start
    report = {"data": os.fspath(args.data), "task": task, "n_rows": len(X_train) + len(X_test),
              "n_features": int(X_train.shape[1]), "n_train": len(X_train),
              "n_test": len(X_test), "seed": args.seed,
              "split": "80/20 stratified" if task == "classification" else "80/20",
              "params": {k: v for k, v in model.get_params().items()
                         if k in chosen_params(args, scope)},
              "fit_seconds": seconds, **metrics(task, model, X_test, y_test)}
    if task == "classification":
        report["n_classes"] = int(len(model.classes_))
    if args.save:
        model.save_model(args.save)
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
    print(f"split     {report['split']}, seed {report['seed']}: {report['n_train']} train, "
          f"{report['n_test']} test")
    params = ", ".join(f"{k}={v}" for k, v in report["params"].items()) or "defaults"
    print(f"params    {params}")
    print(f"fit time  {report['fit_seconds']:.3f} s")
    for name in ("accuracy", "log_loss", "auc", "f1_macro", "rmse", "mae", "r2"):
        if name in report:
            print(f"{name:<9} {report[name]:.6g}")
    if "model" in report:
        print(f"saved     {report['model']}")
