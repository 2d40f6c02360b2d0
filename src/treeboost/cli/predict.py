"""``treeboost predict MODEL DATA``: predictions of a saved model, as CSV.

Data flow: a model file -> ``treeboost.load_model``; a data file -> its full table
(ARFF/CSV readers of ``treeboost.datasets``) -> the model's feature columns by name
(a target column, the ``--weight-column`` of ``treeboost train`` or other extra columns
are ignored: the model file names its features, and a weight column is never one of
them; one-hot columns are rebuilt when the model was trained with ``--one-hot``) ->
``predict`` (and ``predict_proba``; a survival model's prediction is the log hazard
ratio, higher: earlier event; a model of several outputs gives one column each,
``prediction_<name>`` after the target names the model file keeps (``target_names``,
``treeboost train --target a,b``), else ``prediction_0`` .. ``prediction_{k-1}``) -> CSV on
stdout or in ``--out`` (an existing file is kept unless ``--force``). An svmlight file
(a ranking model's data) is read as a sparse matrix as wide as the model's features, with
the index base the model file records (``treeboost train`` records the one its training
data was read with; a file from elsewhere records none, and the data file's own indices
decide), and its labels and queries are ignored: a ranker's predictions are per-row
scores.
"""

from __future__ import annotations

import os
import sys

import pandas as pd

from ..exceptions import DataError


def add_parser(sub) -> None:
    """Register the ``predict`` subcommand."""
    p = sub.add_parser("predict", help="write a saved model's predictions for a data file",
                       description="Predict with a model saved by `treeboost train --save` "
                                   "(or save_model); one CSV row per data row (a survival "
                                   "model's prediction: the log hazard ratio).")
    p.add_argument("model", metavar="MODEL", help="model file (JSON)")
    p.add_argument("data", metavar="DATA",
                   help="ARFF or CSV file with the model's features, or an svmlight file "
                        "(features by position)")
    p.add_argument("--out", metavar="FILE", help="CSV file to write (default: stdout)")
    p.add_argument("--force", action="store_true", help="overwrite an existing --out file")
    p.add_argument("--proba", action="store_true",
                   help="add one probability column per class (classifiers)")
    p.set_defaults(handler=run)


def read_table(path, categorical=()) -> pd.DataFrame:
    """Every column of an ARFF or CSV file (target included); ``categorical`` as CSV text."""
    from ..datasets.arff import read_arff
    from ..datasets.tabular import read_csv

    name = os.fspath(path).lower()
    if not os.path.isfile(path):
        raise DataError(f"{path}: no such file")
    if name.endswith((".arff", ".arff.gz")):
        return read_arff(path)
    if name.endswith((".csv", ".csv.gz")):
        return read_csv(path, categorical=categorical)
    raise DataError(f"{path}: unknown file type; expected .arff, .csv (optionally .gz)")


def model_features(model, table: pd.DataFrame, path) -> pd.DataFrame:
    """The columns of ``table`` the model was trained on, in training order."""
    names = getattr(model, "feature_names_in_", None)
    if names is None:
        raise DataError("the model has no feature names (it was fitted on an array); "
                        "predict it from Python")
    names = [str(n) for n in names]
    missing = [n for n in names if n not in table.columns]
    if missing:
        from ..datasets import one_hot

        encoded = one_hot(table)
        # a category value absent from this file is a column of zeros
        sources = {c for c in table.columns if isinstance(table[c].dtype, pd.CategoricalDtype)}
        for n in names:
            if n not in encoded.columns and n.split("=", 1)[0] in sources:
                encoded[n] = 0.0
        if all(n in encoded.columns for n in names):
            return encoded[names]
        shown = ", ".join(repr(n) for n in missing[:5])
        raise DataError(f"{path} lacks {len(missing)} of the model's features: {shown}"
                        f"{' ...' if len(missing) > 5 else ''}")
    return table[names]


def run(args) -> int:
    """Run ``treeboost predict``."""
    from .._estimator_io import load_model_and_svmlight_base
    from ..serialization import _write_atomic

    if args.out and os.path.exists(args.out) and not args.force:
        raise FileExistsError(f"{args.out} exists; pass --force to overwrite it")
    from ..study.data import is_svmlight_file

    model, zero_based = load_model_and_svmlight_base(args.model)
    if is_svmlight_file(args.data):
        from ..datasets import read_svmlight

        # the model's width: a file whose last features are all zero is narrower; the
        # training data's index base: this file alone may not show it (feature 0 absent)
        try:
            X = read_svmlight(args.data, n_features=model.n_features_in_,
                              zero_based="auto" if zero_based is None else zero_based)[0]
        except DataError as exc:
            if zero_based is None:
                raise
            base = "zero" if zero_based else "one"
            raise DataError(f"{exc} ({args.model} was trained on {base}-based svmlight "
                            "data)") from exc
    else:
        # a CSV has no column types: the model's categorical columns are read as labels,
        # even where this file holds only numbers in them
        names = [str(n) for n in getattr(model, "feature_names_in_", [])]
        categorical = {names[j] for j in model.pandas_categories_ if j < len(names)}
        X = model_features(model, read_table(args.data, categorical), args.data)
    if X.shape[0] == 0:
        raise DataError(f"{args.data}: no data rows to predict")
    pred = model.predict(X)
    if pred.ndim == 2:  # several outputs: one column each, named after the targets if kept
        names = model.booster_.target_names
        if names is None or len(names) != pred.shape[1]:
            names = range(pred.shape[1])
        out = pd.DataFrame(pred, columns=[f"prediction_{name}" for name in names])
    else:
        out = pd.DataFrame({"prediction": pred})
    if args.proba:
        if not hasattr(model, "predict_proba"):
            raise ValueError(f"--proba needs a classifier; this model is a "
                             f"{type(model).__name__}")
        proba = model.predict_proba(X)
        for k, label in enumerate(model.classes_):
            out[f"proba_{label}"] = proba[:, k]
    if args.out:
        # full precision, written aside and renamed: a reader never sees half a file,
        # and a killed run leaves no temporary file beside it for long
        _write_atomic(args.out, out.to_csv(index=False, float_format="%.17g"),
                      what="treeboost predict")
        print(f"wrote {len(out)} predictions to {args.out}", file=sys.stderr)
    else:
        out.to_csv(sys.stdout, index=False, float_format="%.17g")
    return 0
