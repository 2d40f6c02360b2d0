"""Datasets of a study: find them, load them, split them into folds, encode them.

Data flow: DATA arguments (files, folders, or nothing) -> :func:`discover` ->
``DatasetSpec`` list (a folder's ``MANIFEST.tsv`` gives targets and tasks) ->
:func:`load_spec` (``treeboost.datasets.load``, ``read_svmlight`` for ranking files, or a
scikit-learn bundled loader) -> :func:`split_indices` (stratified hold-out or k-fold,
seeded) or, for ranking, :func:`split_queries` (whole queries) -> :func:`prepare_fold`
(float matrices, categorical mask and encoded targets, as the estimators build them).
"""

from __future__ import annotations

import csv
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..datasets.svmlight import SVMLIGHT_SUFFIXES, is_svmlight, read_svmlight_files
from ..exceptions import DataError

_TABULAR = (".arff", ".arff.gz", ".csv", ".csv.gz")
_SUFFIXES = _TABULAR + SVMLIGHT_SUFFIXES

#: the task of each ``task`` value of a MANIFEST.tsv
_MANIFEST_TASKS = {"binary": "classification", "multiclass": "classification",
                   "regression": "regression", "ranking": "ranking", "survival": "survival"}

#: cut-off of the NDCG that scores ranking (LightGBM's and the literature's usual one)
NDCG_K = 10


class Score(NamedTuple):
    """A task's test score: its name in the study's records (``best.json``), whether
    higher is better, and its name in the report's tables and figures."""

    name: str
    higher: bool
    label: str


#: the test score of each task
SCORES = {"classification": Score("accuracy", True, "accuracy"),
          "regression": Score("rmse", False, "RMSE"),
          "ranking": Score(f"ndcg@{NDCG_K}", True, f"NDCG@{NDCG_K}"),
          "survival": Score("cindex", True, "concordance index")}

#: the offline default: datasets shipped inside scikit-learn (name -> task)
BUNDLED = {"breast_cancer": "classification", "iris": "classification",
           "wine": "classification", "diabetes": "regression"}


@dataclass(frozen=True)
class DatasetSpec:
    """Where a dataset comes from: a file (``source`` its path) or ``sklearn:<name>``.

    ``task`` is "classification", "regression", "ranking", "survival" or None (decided
    when the file is loaded: ranking for an svmlight file with query groups or with
    ``query``, survival with ``event``, else by the target's type). ``query`` names the
    column of query ids of an ARFF/CSV ranking dataset; ``event`` the event indicator
    column (0/1 or bool) of an ARFF/CSV survival dataset, whose target is then the time
    (> 0); a survival dataset without ``event`` has signed times as its target
    (positive: an event, negative: censored, ``treeboost.survival``'s convention).
    """

    name: str
    source: str
    target: str | None = None
    task: str | None = None
    query: str | None = None
    event: str | None = None


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
        task = _MANIFEST_TASKS.get(row.get("task", ""))
        specs.append(DatasetSpec(row["name"], str(folder / row["file"]),
                                 row.get("target") or None, task, row.get("query") or None,
                                 row.get("event") or None))
    return specs


def is_svmlight_file(source) -> bool:
    """Tell whether ``source`` names an svmlight file: by its suffix, or by its first line
    for a name without an ARFF/CSV suffix (LightGBM's ``rank.train``).

    Parameters
    ----------
    source : str or path-like
        The file.

    Returns
    -------
    bool
    """
    source = os.fspath(source)
    name = source.lower()
    return name.endswith(SVMLIGHT_SUFFIXES) or (
        not name.endswith(_TABULAR) and os.path.isfile(source) and is_svmlight(source))


def _is_data_file(path: Path) -> bool:
    return path.name.lower().endswith(_TABULAR) or is_svmlight_file(path)


def _file_spec(path: Path, target: str | None) -> DatasetSpec:
    # --target names the column of tabular files; an svmlight label has no column
    if is_svmlight_file(path):
        target = None
    return DatasetSpec(_strip_suffix(path.name), str(path), target)


def discover(paths, target: str | None = None) -> list[DatasetSpec]:
    """The datasets named by ``paths``: files, folders of data files, or the bundled set.

    Parameters
    ----------
    paths : list of str or path-like
        Data files and folders. A folder with a ``MANIFEST.tsv`` (name, file, task,
        target columns, as in ``../shared/datasets``; task "ranking" and an optional
        ``query`` column for ranking data; task "survival" and an optional ``event``
        column for survival data) lists its datasets; otherwise every ARFF,
        CSV or svmlight file in it is one. An svmlight file is known by its suffix or,
        for any other name (LightGBM's ``rank.train``), by its first line. An empty list
        means :data:`BUNDLED`.
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
            files = sorted(p for p in path.iterdir() if p.is_file() and _is_data_file(p))
            if not files:
                raise DataError(f"{path}: folder has no ARFF, CSV or svmlight file")
            specs.extend(_file_spec(p, target) for p in files)
        elif path.is_file():
            if not _is_data_file(path):
                raise DataError(f"{path}: unknown file type; expected one of "
                                f"{', '.join(_SUFFIXES)}, or an svmlight file of any name")
            specs.append(_file_spec(path, target))
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


def load_spec(spec: DatasetSpec, *, return_group=False, zero_based="auto"):
    """Load a dataset and decide its task.

    Parameters
    ----------
    spec : DatasetSpec
        The dataset.
    return_group : bool, default=False
        Also return the query sizes (None unless the task is ranking).
    zero_based : bool or "auto", default="auto"
        Index base of an svmlight file (see ``treeboost.datasets.read_svmlight``); "auto"
        decides from this file alone. A training file and its test file must be read
        with the same one: read them together with :func:`load_svmlight_specs`.

    Returns
    -------
    X : pandas.DataFrame or scipy.sparse.csr_matrix
        Features (float64 and ``category`` columns); CSR for an svmlight file. The
        query column of a ranking ARFF/CSV file is not among them.
    y : pandas.Series, or ndarray of float64 for ranking
        Target, rows with a missing target removed; for ranking, the relevance labels
        (whole numbers >= 0); for survival, float64 signed times (the time of an event,
        minus the time of a censored row).
    task : str
        "ranking" for an svmlight file (which must have query groups) or a spec with a
        ``query`` column; "survival" for a spec with an ``event`` column or declared so;
        else "classification" for a categorical (nominal, text) target or a dataset
        declared so, else "regression".
    group : ndarray of int64 or None
        Only with ``return_group=True``: the query sizes in row order, for ranking.

    Raises
    ------
    DataError
        For an unreadable file, a ranking dataset without query groups, an svmlight file
        declared other than ranking, query rows that are not contiguous, or labels that
        do not fit the task (survival: an event column not 0/1 or bool, times <= 0
        beside it, signed times of 0, no event).
    """
    group = event = None
    if spec.source.startswith("sklearn:"):
        X, y = _load_bundled(spec.source.split(":", 1)[1])
    elif is_svmlight_file(spec.source):
        ((X, y, group),), _ = load_svmlight_specs([spec], zero_based=zero_based)
    else:
        from ..datasets import load

        X, y = load(spec.source, target=spec.target)
        if spec.query is not None:
            if spec.query not in X.columns:
                raise DataError(f"{spec.source}: query column {spec.query!r} is not a column "
                                f"(columns: {', '.join(map(str, X.columns))})")
            group = X.pop(spec.query)
        if spec.event is not None:
            if spec.event not in X.columns:
                raise DataError(f"{spec.source}: event column {spec.event!r} is not a column "
                                f"(columns: {', '.join(map(str, X.columns))})")
            event = X.pop(spec.event)
    task = spec.task
    if task is None:
        task = "ranking" if group is not None else "survival" if event is not None else \
            "classification" if isinstance(y.dtype, pd.CategoricalDtype) or \
            y.dtype.kind in "bOU" else "regression"
    if task != "survival" and event is not None:
        raise DataError(f"{spec.source}: an event column ({spec.event!r}) is for survival, "
                        f"and the task is {task}: use --task survival (or auto)")
    if task == "ranking" and group is None:
        raise DataError(f"{spec.source}: ranking needs query groups: give the column of "
                        "query ids (--query-column), or use an svmlight file with 'qid:' "
                        "tokens or a '<file>.query' file of query sizes beside it")
    if task != "ranking" and group is not None:
        raise DataError(f"{spec.source}: query groups are for ranking, and the task is "
                        f"{task}: use --task ranking (or auto)")
    if task == "ranking":
        X, y, group = _ranking_data(X, y, group, spec)
        return (X, y, task, group) if return_group else (X, y, task)
    if task == "survival":
        X, y = _survival_data(X, y, event, spec)
        return (X, y, task, None) if return_group else (X, y, task)
    keep = y.notna().to_numpy()
    if not keep.all():
        X, y = _drop_missing_target(X, y, keep, spec.source)
    if task == "regression":
        y = _regression_target(y, spec.source)
    elif isinstance(y.dtype, pd.CategoricalDtype):
        y = y.cat.remove_unused_categories()
    X, y = X.reset_index(drop=True), y.reset_index(drop=True)
    return (X, y, task, None) if return_group else (X, y, task)


def load_svmlight_specs(specs, *, zero_based="auto"):
    """Ranking datasets in svmlight files that must agree, read with one index base.

    A training file and its test file are read together
    (``treeboost.datasets.read_svmlight_files``): one index base decided over both, so
    that a zero-based test file in which feature 0 never occurs is not read one-based,
    and one width.

    Parameters
    ----------
    specs : list of DatasetSpec
        svmlight datasets: no target, no query column, task None or "ranking".
    zero_based : bool or "auto", default="auto"
        Their index base; "auto": zero-based when any of them uses index 0.

    Returns
    -------
    parts : list of (X, y, group)
        Per spec: CSR features, relevance labels (float64, whole numbers >= 0) and query
        sizes.
    zero_based : bool
        The index base they were read with, for reading new data alike.

    Raises
    ------
    DataError
        For a spec with a target, a query column or another task than ranking, a file
        without query groups, labels that are not relevance grades, or an unreadable
        file.
    """
    for spec in specs:
        _check_svmlight_spec(spec)
    parts, zero_based = read_svmlight_files([spec.source for spec in specs],
                                            zero_based=zero_based)
    for spec, (_, y, group) in zip(specs, parts, strict=True):
        if group is None:
            raise DataError(f"{spec.source}: ranking needs query groups, and this svmlight "
                            f"file has neither 'qid:' tokens nor a {spec.source}.query file "
                            "of query sizes beside it")
        _relevance(y, spec.source)
    return parts, zero_based


def _check_svmlight_spec(spec: DatasetSpec) -> None:
    """An svmlight file is always a ranking dataset, labelled by its first column."""
    if spec.target is not None:
        raise DataError(f"{spec.source}: target={spec.target!r} does not apply to an "
                        "svmlight file, whose label is the first value of each line")
    if spec.query is not None:
        raise DataError(f"{spec.source}: a query column ({spec.query!r}) does not apply to "
                        "an svmlight file, whose queries are its 'qid:' tokens or its "
                        ".query file")
    if spec.event is not None:
        raise DataError(f"{spec.source}: an event column ({spec.event!r}) does not apply to "
                        "an svmlight file, which is read for ranking only")
    if spec.task not in (None, "ranking"):
        raise DataError(f"{spec.source}: an svmlight file is read for ranking only, and "
                        f"the task is {spec.task}; load it in Python for {spec.task} "
                        "(treeboost.datasets.read_svmlight)")


def _ranking_data(X, y, group, spec):
    """Features, float labels and query sizes of a ranking dataset.

    ``group`` is the sizes (svmlight) or the column of query ids (ARFF/CSV), whose rows
    of one query must be contiguous, as the ranking losses read them.
    """
    if not isinstance(group, pd.Series):
        return X, _relevance(y, spec.source), np.asarray(group, dtype=np.int64)
    ids = group
    if ids.isna().any():
        raise DataError(f"{spec.source}: query column {spec.query!r} is empty in data row "
                        f"{int(np.flatnonzero(ids.isna().to_numpy())[0]) + 1}")
    keep = y.notna().to_numpy()
    if not keep.all():
        X, y = _drop_missing_target(X, y, keep, spec.source)
        ids = ids[keep]
    codes = pd.factorize(ids)[0]
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    repeated = pd.Index(codes[starts]).duplicated()
    if repeated.any():
        query = ids.iloc[starts[np.flatnonzero(repeated)[0]]]
        raise DataError(f"{spec.source}: the rows of query {query!r} (column {spec.query!r}) "
                        "are not contiguous; sort the file by query")
    sizes = np.diff(np.r_[starts, codes.size]).astype(np.int64)
    y = _regression_target(y, spec.source).to_numpy()
    return X.reset_index(drop=True), _relevance(y, spec.source), sizes


def _survival_data(X, y, event, spec):
    """Features and signed times (a float64 series named as the target) of a survival
    dataset: the target is the time and ``event`` the event indicator column, or, without
    one, the target is signed times already. Rows without a target are left out (with a
    warning); every refusal names the file, the column and the first bad data row."""
    keep = y.notna().to_numpy()
    rows = np.flatnonzero(keep)  # data rows (0-based) of the rows kept
    if not keep.all():
        X, y = _drop_missing_target(X, y, keep, spec.source)
        event = None if event is None else event[keep]
    try:
        time = y.to_numpy(np.float64)
    except (TypeError, ValueError):
        text = [v for v in pd.unique(y.astype(object)) if isinstance(v, str)][:3]
        raise DataError(f"{spec.source}: target column {y.name!r} holds text (e.g. "
                        f"{', '.join(map(repr, text))}) and cannot be survival times") from None
    if event is None:  # signed times: t > 0 an event at t, t < 0 censored at -t
        bad = ~np.isfinite(time) | (time == 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataError(f"{spec.source}: signed survival times (target column {y.name!r}; "
                            "t > 0: an event at t, t < 0: censored at -t) must be finite and "
                            f"not 0; {int(bad.sum())} are not, the first in data row "
                            f"{rows[i] + 1}: {time[i]:g} (or give the event indicator column: "
                            "--event-column)")
        if time.size and not np.any(time > 0):
            raise DataError(f"{spec.source}: target column {y.name!r} holds no event (every "
                            "signed time is < 0, censored): the Cox partial likelihood needs "
                            "at least one (or give the event indicator column: "
                            "--event-column)")
        signed = time
    else:
        observed = _event_indicator(event, spec, rows)
        bad = ~(np.isfinite(time) & (time > 0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataError(f"{spec.source}: survival times must be > 0 (target column "
                            f"{y.name!r}, beside event column {spec.event!r}); {int(bad.sum())} "
                            f"are not, the first in data row {rows[i] + 1}: {time[i]:g}")
        if observed.size and not observed.any():
            raise DataError(f"{spec.source}: event column {spec.event!r} holds no event (no 1 "
                            "or true): the Cox partial likelihood needs at least one")
        signed = np.where(observed, time, -time)
    return X.reset_index(drop=True), pd.Series(signed, name=y.name)


def _event_indicator(event, spec, rows) -> np.ndarray:
    """The event column as bools: 0/1 numbers, bools, or the texts 0/1/true/false."""
    missing = event.isna().to_numpy()
    if missing.any():
        raise DataError(f"{spec.source}: event column {spec.event!r} is empty in data row "
                        f"{rows[int(np.argmax(missing))] + 1}")
    if event.dtype.kind == "b":
        return event.to_numpy(bool)
    if event.dtype.kind in "iuf":
        values = event.to_numpy(np.float64)
        observed, censored = values == 1, values == 0
    else:
        text = event.astype(str).str.strip().str.lower()
        observed = text.isin(["1", "1.0", "true"]).to_numpy()
        censored = text.isin(["0", "0.0", "false"]).to_numpy()
    bad = ~(observed | censored)
    if bad.any():
        i = int(np.argmax(bad))
        raise DataError(f"{spec.source}: event column {spec.event!r} must hold 0/1 or "
                        f"true/false (1: the event was observed, 0: censored); data row "
                        f"{rows[i] + 1} has {_shown(event.iloc[i])}")
    return observed


def _shown(value) -> str:
    """A data value in a message: numbers as written (3, not np.float64(3.0))."""
    return f"{float(value):g}" if isinstance(value, (int, float, np.number)) else repr(value)


def _relevance(y, source) -> np.ndarray:
    """Relevance labels as float64, refused (naming the file) unless whole numbers >= 0."""
    y = np.asarray(y, dtype=np.float64)
    bad = ~(np.isfinite(y) & (y >= 0) & (y == np.floor(y)))
    if bad.any():
        raise DataError(f"{source}: relevance labels must be whole numbers >= 0; data row "
                        f"{int(np.flatnonzero(bad)[0]) + 1} has {y[bad][0]!r}")
    return y


def _drop_missing_target(X, y, keep, source):
    """Leave out the rows without a target, saying how many and which.

    A target is missing when empty, or in a CSV file written as one of the strings
    pandas reads as missing (``NA``, ``null``, ``None`` ...: ``datasets.load`` makes
    them NaN), so that ``NA`` is never a class of its own.
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
                  f"column {y.name!r} (empty, or a missing-value string such as NA) and "
                  f"are left out (data rows {first}, 1-based, header not counted)",
                  UserWarning, stacklevel=3)
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
    labels = _events(y) if task == "survival" else \
        np.asarray(y.astype(str) if isinstance(y, pd.Series) else y)
    _, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
    # a class with one row cannot be on both sides: it is kept for training
    single = counts[inverse] < 2
    try:
        train, test = train_test_split(rows[~single], test_size=0.2, random_state=seed,
                                       stratify=labels[~single])
    except ValueError:  # fewer test rows than classes: stratification impossible
        train, test = train_test_split(rows[~single], test_size=0.2, random_state=seed)
    return np.sort(np.concatenate([train, rows[single]])), np.sort(test)


def _events(y) -> np.ndarray:
    """The event indicator of signed survival times: what survival splits stratify by."""
    return np.asarray(y, dtype=np.float64) > 0


def split_indices(y, task: str, n_folds: int, fold: int, seed: int):
    """Train and test row indices of one fold.

    ``n_folds == 1`` is an 80/20 hold-out, stratified for classification (classes with
    a single row stay in training) and for survival by the event indicator (so both
    parts keep the share of censored rows); ``n_folds >= 2`` is a shuffled k-fold,
    stratified alike. Both are seeded by ``seed``, so every configuration, every
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
        labels = _events(y) if task == "survival" else np.asarray(y.astype(str))
        with warnings.catch_warnings():
            # rare classes (fewer rows than folds) are spread as far as they go
            warnings.simplefilter("ignore", UserWarning)
            folds = list(StratifiedKFold(n_folds, shuffle=True, random_state=seed)
                         .split(rows, labels))
    train, test = folds[fold]
    return np.sort(train), np.sort(test)


def split_queries(group, n_folds: int, fold: int, seed: int):
    """Train and test rows of one fold, cut by whole queries.

    The queries are shuffled with ``seed``; ``n_folds == 1`` holds out the first 20 % of
    them (at least one, and one left to train on), ``n_folds >= 2`` cuts the shuffled
    queries into ``n_folds`` contiguous blocks and holds out block ``fold`` (a shuffled,
    seeded GroupKFold). Each part keeps its queries in file order, so the rows of a
    query stay contiguous, as the ranking losses and metrics read them.

    Parameters
    ----------
    group : array-like of int
        Query sizes in row order.
    n_folds : int
        1 for the 80/20 hold-out, else the number of folds.
    fold : int
        The fold to return, in ``range(n_folds)``.
    seed : int
        Seed of the shuffle: the same for every configuration and library.

    Returns
    -------
    train, test : ndarray of int
        Row indices, increasing.
    train_group, test_group : ndarray of int64
        Query sizes of each part, in row order.

    Raises
    ------
    DataError
        For fewer queries than the protocol needs (2 for the hold-out, ``n_folds``).
    """
    group = np.asarray(group, dtype=np.int64)
    n_queries = group.size
    if n_queries < max(2, n_folds):
        protocol = "an 80/20 hold-out" if n_folds == 1 else f"{n_folds} folds"
        raise DataError(f"{n_queries} queries are too few for {protocol} by query")
    order = np.random.default_rng(seed).permutation(n_queries)
    if n_folds == 1:
        held_out = order[:min(n_queries - 1, max(1, round(0.2 * n_queries)))]
    else:
        held_out = np.array_split(order, n_folds)[fold]
    held = np.zeros(n_queries, dtype=bool)
    held[held_out] = True
    rows = np.repeat(held, group)
    return np.flatnonzero(~rows), np.flatnonzero(rows), group[~held], group[held]


def take_rows(data, rows):
    """Rows of a frame or series (index reset), of an array or of a sparse matrix."""
    return data.iloc[rows].reset_index(drop=True) if hasattr(data, "iloc") else data[rows]


@dataclass
class Fold:
    """One fold ready to fit: frames (or CSR matrices) for the peers, matrices for treeboost.

    For ranking, ``y_train``/``y_test`` are the float labels (as the codes) and
    ``train_group``/``test_group`` the query sizes; they are None for the other tasks.
    """

    task: str
    X_train: pd.DataFrame
    X_test: pd.DataFrame
    y_train: pd.Series
    y_test: pd.Series
    classes: np.ndarray | None  # training labels, sorted (LabelEncoder order)
    train_codes: np.ndarray  # encoded training target (float64)
    test_codes: np.ndarray  # encoded test target; -1 for labels absent from training
    train_group: np.ndarray | None = None
    test_group: np.ndarray | None = None


def prepare_fold(spec: DatasetSpec, n_folds: int, fold: int, seed: int,
                 one_hot: bool = False) -> Fold:
    """Load ``spec`` and cut fold ``fold``; encode the target like the estimator does."""
    from ..datasets import one_hot as encode

    X, y, task, group = load_spec(spec, return_group=True)
    if one_hot and not sp.issparse(X):
        X = encode(X)
    if task == "ranking":
        train, test, train_group, test_group = split_queries(group, n_folds, fold, seed)
        return Fold(task, take_rows(X, train), take_rows(X, test), y[train], y[test], None,
                    y[train], y[test], train_group, test_group)
    train, test = split_indices(y, task, n_folds, fold, seed)
    y_train, y_test = y.iloc[train].reset_index(drop=True), y.iloc[test].reset_index(drop=True)
    if task in ("regression", "survival"):  # numbers: signed times for survival
        classes, train_codes, test_codes = None, y_train.to_numpy(np.float64), \
            y_test.to_numpy(np.float64)
    else:
        classes, codes = np.unique(np.asarray(y_train), return_inverse=True)
        train_codes = codes.astype(np.float64)
        position = np.searchsorted(classes, np.asarray(y_test))
        position = np.minimum(position, len(classes) - 1)
        known = classes[position] == np.asarray(y_test)
        test_codes = np.where(known, position, -1).astype(np.float64)
    return Fold(task, take_rows(X, train), take_rows(X, test), y_train, y_test, classes,
                train_codes, test_codes)


def describe(spec: DatasetSpec) -> dict:
    """Size and task of a dataset, for the study's database and report."""
    X, y, task = load_spec(spec)
    n_classes = int(y.nunique()) if task == "classification" else 0
    return {"name": spec.name, "source": os.fspath(spec.source), "target": spec.target,
            "task": task, "n_rows": int(len(y)), "n_features": int(X.shape[1]),
            "n_classes": n_classes}
