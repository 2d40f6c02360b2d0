"""Command line: ``treeboost train``, ``predict``, ``dump``, ``export``, ``study``, ``demo``.

``main`` builds one argparse parser whose subcommands live in ``train.py``,
``predict.py``, ``dump.py``, ``export.py`` and ``study.py`` (``report`` among the
study's); model options come from the parameter table (``_options.py``). Errors in the
user's input (a missing file, an unknown column, a bad option value) print one line and
exit with status 1, without a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def _demo(args) -> int:
    """Train and evaluate on the datasets bundled with scikit-learn; print the metrics."""
    import numpy as np
    from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits, load_wine
    from sklearn.metrics import accuracy_score, log_loss, mean_squared_error, r2_score
    from sklearn.model_selection import train_test_split

    from .. import TreeBoostClassifier, TreeBoostRegressor

    out = sys.stdout
    out.write(f"{'dataset':<15}{'task':<12}{'rows':>6}{'feats':>6}  metrics (20% test split, "
              f"seed {args.seed})\n")
    cases = [("breast_cancer", load_breast_cancer, "binary"),
             ("wine", load_wine, "multiclass"),
             ("digits", load_digits, "multiclass"),
             ("diabetes", load_diabetes, "regression")]
    for name, loader, task in cases:
        X, y = loader(return_X_y=True)
        stratify = None if task == "regression" else y
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=args.seed,
                                              stratify=stratify)
        params = dict(n_estimators=args.n_estimators, learning_rate=args.learning_rate,
                      random_state=args.seed)
        t0 = time.perf_counter()
        if task == "regression":
            model = TreeBoostRegressor(**params).fit(Xtr, ytr)
            pred = model.predict(Xte)
            metrics = (f"rmse={np.sqrt(mean_squared_error(yte, pred)):.4f} "
                       f"r2={r2_score(yte, pred):.4f}")
        else:
            model = TreeBoostClassifier(**params).fit(Xtr, ytr)
            proba = model.predict_proba(Xte)
            metrics = (f"accuracy={accuracy_score(yte, model.classes_[proba.argmax(1)]):.4f} "
                       f"log_loss={log_loss(yte, proba, labels=model.classes_):.4f}")
        seconds = time.perf_counter() - t0
        out.write(f"{name:<15}{task:<12}{X.shape[0]:>6}{X.shape[1]:>6}  {metrics}  "
                  f"({seconds:.2f} s)\n")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The ``treeboost`` argument parser with all its subcommands."""
    from . import dump, export, predict, study, train
    from ._options import seed

    parser = argparse.ArgumentParser(
        prog="treeboost", description="Gradient tree boosting from the command line.")
    sub = parser.add_subparsers(dest="command")
    train.add_parser(sub)
    predict.add_parser(sub)
    dump.add_parser(sub)
    export.add_parser(sub)
    study.add_parsers(sub)
    demo = sub.add_parser("demo", help="train and evaluate on scikit-learn's bundled datasets")
    demo.add_argument("--n-estimators", type=int, default=100)
    demo.add_argument("--learning-rate", type=float, default=0.1)
    demo.add_argument("--seed", type=seed, default=0)
    demo.set_defaults(handler=_demo)
    return parser


def main(argv=None) -> int:
    """Entry point of the ``treeboost`` console script.

    Parameters
    ----------
    argv : list of str, default=None
        Arguments (default: ``sys.argv[1:]``); no subcommand runs ``demo``.

    Returns
    -------
    int
        Exit status: 0 on success, 1 for an error in the input, 2 for a usage error.
    """
    from ..exceptions import TreeboostError

    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["demo", *argv])
    import warnings

    def one_line(message, category, filename, lineno, file=None, line=None):
        # a warning about the user's data reads like an error line, without source lines
        print(f"treeboost {args.command}: warning: {message}", file=sys.stderr)

    try:
        with warnings.catch_warnings():
            warnings.showwarning = one_line
            return args.handler(args)
    except BrokenPipeError:
        # the reader stopped early (`| head`): not an error; keep Python's exit quiet
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (TreeboostError, ValueError, TypeError, OSError) as exc:
        # the input's fault, said in one line; a bug elsewhere still shows its traceback
        message = str(exc) or type(exc).__name__
        print(f"treeboost {args.command}: error: {message}", file=sys.stderr)
        return 1
