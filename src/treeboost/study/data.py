"""Datasets of a study: find them, load them, split them into folds, encode them.

Data flow: DATA arguments (files, folders, or nothing) -> :func:`discover` ->
``DatasetSpec`` list (a folder's ``MANIFEST.tsv`` gives targets and tasks) ->
:func:`load_spec` (``treeboost.datasets.load`` or a scikit-learn bundled loader) ->
:func:`split_indices` (stratified hold-out or k-fold, seeded) -> :func:`prepare_fold`
(float matrices, categorical mask and encoded targets, as the estimators build them).
"""

from __future__ import annotations

import csv
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..exceptions import DataError

_SUFFIXES = (".arff", ".arff.gz", ".csv", ".csv.gz")

#: the offline default: datasets shipped inside scikit-learn (name -> task)
BUNDLED = {"breast_cancer": "classification", "iris": "classification",
           "wine": "classification", "diabetes": "regression"}


@dataclass(frozen=True)
class DatasetSpec:
    """Where a dataset comes from: a file (``source`` its path) or ``sklearn:<name>``.

    ``task`` is "classification", "regression" or None (decided by the target's type
    when the file is loaded).
    """

    name: str
    source: str
    target: str | None = None
    task: str | None = None


def _strip_suffix(filename: str) -> str:
    lowered = filename.lower()
    for suffix in sorted(_SUFFIXES, key=len, reverse=True):
        if lowered.endswith(suffix):
            return filename[: -len(suffix)]
    return filename


def _manifest(folder: Path) -> list[DatasetSpec]:
    with (folder / "MANIFEST.tsv").open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    specs = []
    for row in rows:
        task = {"binary": "classification", "multiclass": "classification",
                "regression": "regression"}.get(row.get("task", ""))
        specs.append(DatasetSpec(row["name"], str(folder / row["file"]),
                                 row.get("target") or None, task))
    return specs


def discover(paths, target: str | None = None) -> list[DatasetSpec]:
    """The datasets named by ``paths``: files, folders of ARFF/CSV files, or the bundled set.

    Parameters
    ----------
    paths : list of str or path-like
        Data files and folders. A folder with a ``MANIFEST.tsv`` (name, file, task,
        target columns, as in ``../shared/datasets``) lists its datasets; otherwise every
        ARFF/CSV file in it is one. An empty list means :data:`BUNDLED`.
    target : str, default=None
        Target column for files no manifest describes (default: the last ARFF
        attribute; required for CSV files).

    Returns
    -------
    list of DatasetSpec
        Sorted by name.

    Raises
    ------
    DataError
        For a path that does not exist, a folder with no data file, an unsupported
        file type, or two datasets with the same name.
    """
    if not paths:
        return [DatasetSpec(name, f"sklearn:{name}", None, task)
                for name, task in sorted(BUNDLED.items())]
    specs: list[DatasetSpec] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            if (path / "MANIFEST.tsv").is_file():
                specs.extend(_manifest(path))
                continue
            files = sorted(p for p in path.iterdir()
                           if p.is_file() and p.name.lower().endswith(_SUFFIXES))
            if not files:
                raise DataError(f"{path}: folder has no ARFF or CSV file")
            specs.extend(DatasetSpec(_strip_suffix(p.name), str(p), target) for p in files)
        elif path.is_file():
            if not path.name.lower().endswith(_SUFFIXES):
                raise DataError(f"{path}: unknown file type; expected one of "
                                f"{', '.join(_SUFFIXES)}")
            specs.append(DatasetSpec(_strip_suffix(path.name), str(path), target))
        else:
            raise DataError(f"{path}: no such file or folder")
    names = [s.name for s in specs]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise DataError(f"several datasets are named {', '.join(duplicates)}; pass only one "
                        "of each")
    return sorted(specs, key=lambda s: s.name)


def _load_bundled(name: str):
    from sklearn import datasets

    X, y = getattr(datasets, f"load_{name}")(return_X_y=True, as_frame=True)
    return X.astype(np.float64), y


def load_spec(spec: DatasetSpec):
    """Load a dataset and decide its task.

    Returns
    -------
    X : pandas.DataFrame
        Features (float64 and ``category`` columns).
    y : pandas.Series
        Target, rows with a missing target removed.
    task : str
        "classification" for a categorical (nominal, text) target or a dataset declared
        so, else "regression".
    """
    if spec.source.startswith("sklearn:"):
        X, y = _load_bundled(spec.source.split(":", 1)[1])
    else:
        from ..datasets import load

        X, y = load(spec.source, target=spec.target)
    task = spec.task
    if task is None:
        task = "classification" if isinstance(y.dtype, pd.CategoricalDtype) or \
            y.dtype.kind in "bOU" else "regression"
    keep = y.notna().to_numpy()
    if not keep.all():
        X, y = _drop_missing_target(X, y, keep, spec.source)
    if task == "regression":
        y = _regression_target(y, spec.source)
    elif isinstance(y.dtype, pd.CategoricalDtype):
        y = y.cat.remove_unused_categories()
    return X.reset_index(drop=True), y.reset_index(drop=True), task


def _drop_missing_target(X, y, keep, source):
    """Leave out the rows without a target, saying how many and which.

    Dropped with a warning rather than refused: a row without a target can be neither
    learned nor scored, and public datasets (OpenML's among them) often carry a few
    unlabelled rows, which a user would otherwise have to strip by hand; the warning
    gives the count and the first rows so that a mostly empty target is noticed.
    """
    missing = np.flatnonzero(~keep)
    if missing.size == keep.size:
        raise DataError(f"{source}: target column {y.name!r} is empty in every row")
    first = ", ".join(str(i + 1) for i in missing[:5]) + (", ..." if missing.size > 5 else "")
    warnings.warn(f"{source}: {missing.size} of {keep.size} rows have no value in target "
                  f"column {y.name!r} and are left out (data rows {first}, 1-based, "
                  "header not counted)", UserWarning, stacklevel=3)
    return X[keep], y[keep]


def _regression_target(y, source):
    """The target as float64, or a ``DataError`` naming it when it holds text."""
    try:
        return y.astype(np.float64)
    except (TypeError, ValueError):
        text = [v for v in pd.unique(y.astype(object)) if isinstance(v, str)][:3]
        raise DataError(f"{source}: target column {y.name!r} holds text (e.g. "
                        f"{', '.join(map(repr, text))}) and cannot be a regression target; "
                        "use --task classification, or another target") from None


def _holdout(y, task: str, seed: int):
    from sklearn.model_selection import train_test_split

    rows = np.arange(len(y))
    if task == "regression":
        return train_test_split(rows, test_size=0.2, random_state=seed)
    labels = np.asarray(y.astype(str) if isinstance(y, pd.Series) else y)
    _, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
    # a class with one row cannot be on both sides: it is kept for training
    single = counts[inverse] < 2
    try:
        train, test = train_test_split(rows[~single], test_size=0.2, random_state=seed,
                                       stratify=labels[~single])
    except ValueError:  # fewer test rows than classes: stratification impossible
        train, test = train_test_split(rows[~single], test_size=0.2, random_state=seed)
    return np.sort(np.concatenate([train, rows[single]])), np.sort(test)


def split_indices(y, task: str, n_folds: int, fold: int, seed: int):
    """Train and test row indices of one fold.

    ``n_folds == 1`` is an 80/20 hold-out, stratified for classification (classes with
    a single row stay in training); ``n_folds >= 2`` is a shuffled k-fold, stratified
    for classification. Both are seeded by ``seed``, so every configuration, every
    library and every resumed run sees the same rows.
    """
    if n_folds == 1:
        return _holdout(y, task, seed)
    import warnings

    from sklearn.model_selection import KFold, StratifiedKFold

    rows = np.arange(len(y))
    if task == "regression":
        splitter = KFold(n_folds, shuffle=True, random_state=seed)
        folds = list(splitter.split(rows))
    else:
        labels = np.asarray(y.astype(str))
        with warnings.catch_warnings():
            # rare classes (fewer rows than folds) are spread as far as they go
            warnings.simplefilter("ignore", UserWarning)
            folds = list(StratifiedKFold(n_folds, shuffle=True, random_state=seed)
                         .split(rows, labels))
    train, test = folds[fold]
    return np.sort(train), np.sort(test)


@dataclass
class Fold:
    """One fold ready to fit: frames for the peers, matrices for treeboost."""

    task: str
    X_train: pd.DataFrame
    X_test: pd.DataFrame
    y_train: pd.Series
    y_test: pd.Series
    classes: np.ndarray | None  # training labels, sorted (LabelEncoder order)
    train_codes: np.ndarray  # encoded training target (float64)
    test_codes: np.ndarray  # encoded test target; -1 for labels absent from training


def prepare_fold(spec: DatasetSpec, n_folds: int, fold: int, seed: int,
                 one_hot: bool = False) -> Fold:
    """Load ``spec`` and cut fold ``fold``; encode the target like the classifier does."""
    from ..datasets import one_hot as encode

    X, y, task = load_spec(spec)
    if one_hot:
        X = encode(X)
    train, test = split_indices(y, task, n_folds, fold, seed)
    y_train, y_test = y.iloc[train].reset_index(drop=True), y.iloc[test].reset_index(drop=True)
    if task == "regression":
        classes, train_codes, test_codes = None, y_train.to_numpy(np.float64), \
            y_test.to_numpy(np.float64)
    else:
        classes, codes = np.unique(np.asarray(y_train), return_inverse=True)
        train_codes = codes.astype(np.float64)
        position = np.searchsorted(classes, np.asarray(y_test))
        position = np.minimum(position, len(classes) - 1)
        known = classes[position] == np.asarray(y_test)
        test_codes = np.where(known, position, -1).astype(np.float64)
    return Fold(task, X.iloc[train].reset_index(drop=True), X.iloc[test].reset_index(drop=True),
                y_train, y_test, classes, train_codes, test_codes)


def describe(spec: DatasetSpec) -> dict:
    """Size and task of a dataset, for the study's database and report."""
    X, y, task = load_spec(spec)
    n_classes = int(y.nunique()) if task == "classification" else 0
    return {"name": spec.name, "source": os.fspath(spec.source), "target": spec.target,
            "task": task, "n_rows": int(len(y)), "n_features": int(X.shape[1]),
            "n_classes": n_classes}
