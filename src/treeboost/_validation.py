"""Checks of the data given to ``fit`` that the parameter table cannot make alone.

Each raises one ``ValueError``/``TypeError`` naming the parameter or argument, in Python
before any kernel runs (SPEC §8): target types that NumPy would silently convert,
``class_weight`` keys that are not classes or that remove a class, and an early-stopping
hold-out too small.
"""

from __future__ import annotations

import numbers

import numpy as np


def _first(items, kinds):
    return next((v for v in items if isinstance(v, kinds)), None)


def check_numeric_target(y, estimator: str) -> None:
    """Refuse text targets for a regressor (NumPy would fail deep in a conversion).

    Strings that all read as numbers ("1.5") are let through, as scikit-learn does.
    """
    if isinstance(y, np.ndarray) and y.dtype.kind in "biuf":
        return
    items = np.asarray(y, dtype=object).ravel().tolist()
    text = _first(items, (str, bytes))
    if text is None:
        return
    try:
        np.asarray(items, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"y holds strings (e.g. {text!r}) but {estimator} needs numeric "
                        "targets; for class labels use TreeBoostClassifier") from None


def encode_labels(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Class labels and each row's code: scikit-learn's ``check_classification_targets``
    and ``LabelEncoder``.

    A 1-D array of integers, booleans, strings or whole floats is encoded here
    (the classes sorted, as ``np.unique``); anything else goes through
    scikit-learn's functions, which accept it the same way or refuse it with
    their messages (a continuous target, several columns).

    Parameters
    ----------
    y : ndarray

    Returns
    -------
    classes : ndarray of shape (n_classes,)
    codes : ndarray of int of shape (n_samples,)
        Each row's index in ``classes``.
    """
    kind = y.dtype.kind
    if y.ndim == 1 and (kind in "biuU" or kind == "f" and bool(
            np.isfinite(y).all() and (y == np.trunc(y)).all())):
        return np.unique(y, return_inverse=True)
    from sklearn.preprocessing import LabelEncoder
    from sklearn.utils.multiclass import check_classification_targets

    check_classification_targets(y)
    encoder = LabelEncoder().fit(y)
    return encoder.classes_, encoder.transform(y)


def check_label_types(y) -> None:
    """Refuse class labels that mix numbers and strings.

    NumPy would turn ``[1, "a", 2]`` into the strings ``"1", "a", "2"``: classes the
    user never had, and ``predict`` would return strings for the numeric labels.
    """
    if isinstance(y, np.ndarray) and y.dtype.kind != "O":
        return  # one dtype: the labels are one type already
    items = np.asarray(y, dtype=object).ravel().tolist()
    # v == v leaves NaN out: missing labels have their own error
    number = next((v for v in items if isinstance(v, numbers.Number) and v == v), None)
    text = _first(items, (str, bytes))
    if number is not None and text is not None:
        raise TypeError(f"y mixes numbers and strings as class labels (e.g. {number!r} and "
                        f"{text!r}): make them one type, e.g. all strings")


def check_class_weight_keys(class_weight, y) -> None:
    """Refuse ``class_weight`` keys that are not labels of ``y`` (e.g. "1" for 1)."""
    if not isinstance(class_weight, dict):
        return
    classes = np.unique(y).tolist()
    unknown = [k for k in class_weight if k not in classes]
    if unknown:
        raise ValueError(f"class_weight has keys {unknown} that are not classes of y; the "
                         f"classes are {classes[:20]}")


def check_no_class_removed(class_weight, y) -> None:
    """Refuse a ``class_weight`` of 0 for a class of ``y``.

    Every row of that class would weigh 0, and a row of weight 0 is not there: the
    class would vanish from ``classes_`` (or leave one class), silently.
    """
    if not isinstance(class_weight, dict):
        return
    classes = np.unique(y).tolist()
    gone = [k for k, w in class_weight.items() if w == 0 and k in classes]
    if gone:
        raise ValueError(f"class_weight gives the class(es) {gone} weight 0, which removes "
                         "all their rows (a row of weight 0 is not there): the model would "
                         "not know them; leave them out of y, or give them a positive weight")


def check_validation_size(validation_fraction: float, n_rows: int, n_classes: int) -> None:
    """Refuse an early-stopping hold-out with no training left, or fewer rows than classes.

    ``n_classes`` is 1 for a regressor. The rounding is ``train_test_split``'s: the
    hold-out has ``ceil(validation_fraction * n_rows)`` rows.
    """
    n_val = int(np.ceil(validation_fraction * n_rows))
    # a stratified split puts every class on both sides
    n_train_min = max(2, n_classes)
    if n_rows - n_val < n_train_min or n_val < n_classes:
        need = f" and hold at least {n_classes} (one per class)" if n_classes > 1 else ""
        raise ValueError(
            f"validation_fraction={validation_fraction!r} holds out {n_val} of {n_rows} rows "
            f"for early stopping, which must leave at least {n_train_min} rows for "
            f"training{need}: "
            "change validation_fraction, pass an eval_set, or set "
            "validation_fraction=None to monitor the training data")


#: ``multi_strategy``'s values: one tree per output and stage, or one tree for every
#: output whose split gain is summed over them (``_kernels.multi_output``)
MULTI_STRATEGIES = ("one_output_per_tree", "multi_output_tree")
#: the losses one tree of several outputs takes: every output's hessian is then the row
#: weight, one hessian the outputs share (``_kernels.multi_output``)
SHARED_HESSIAN_LOSSES = ("squared_error", "absolute_error", "huber", "quantile")


def check_multi_strategy(value, alpha=None) -> None:
    """Refuse a ``multi_strategy`` that is not one of ``MULTI_STRATEGIES`` (None: the default).

    ``alpha`` is the quantile parameter: a list of them (multi-quantile) is refused with
    ``"multi_output_tree"``, which is for a 2-D y.

    Raises
    ------
    ValueError
        For an unknown value, or ``"multi_output_tree"`` with a list of alphas.
    """
    if value == "multi_output_tree" and isinstance(alpha, (list, tuple, np.ndarray)):
        raise ValueError("multi_strategy='multi_output_tree' takes a 2-D y (several "
                         "targets); a list of alphas (multi-quantile) grows one tree per "
                         "quantile: use multi_strategy='one_output_per_tree'")
    if value is None or value in MULTI_STRATEGIES:
        return
    raise ValueError(f"multi_strategy={value!r} must be one of {list(MULTI_STRATEGIES)}")


def check_multi_output_tree(loss_name: str, use_quantized_grad, *, sparse: bool,
                            categorical: bool, constrained: bool, distributed: bool,
                            device: str | None) -> None:
    """Refuse, by name, what ``multi_strategy="multi_output_tree"`` does not support.

    Parameters
    ----------
    loss_name : str
        The loss of every output: one of ``SHARED_HESSIAN_LOSSES``.
    use_quantized_grad : bool or str
        True is refused ("auto" is taken as False).
    sparse, categorical, constrained, distributed : bool
        Sparse input, categorical features, monotone or interaction constraints, and
        training over a collective (Dask) are refused.
    device : str or None
        "cuda" is refused.

    Raises
    ------
    ValueError
        Naming the first unsupported parameter or input.
    """
    use = "use multi_strategy='one_output_per_tree'"
    if loss_name not in SHARED_HESSIAN_LOSSES:
        raise ValueError(f"multi_strategy='multi_output_tree' needs a loss whose hessian is "
                         f"the row weight, one of {list(SHARED_HESSIAN_LOSSES)}; got "
                         f"loss={loss_name!r}: {use}")
    refused = [(use_quantized_grad is True, "use_quantized_grad=True"),
               (sparse, "sparse input (convert X with .toarray())"),
               (categorical, "categorical_features"),
               (constrained, "monotone_constraints or interaction_constraints"),
               (distributed, "distributed training (treeboost.dask, a collective)"),
               (device == "cuda", "device='cuda'")]
    for used, what in refused:
        if used:
            raise ValueError(f"multi_strategy='multi_output_tree' does not support {what} "
                             f"yet: {use}")


def check_targets(y, n_samples: int):
    """A regressor's ``y``: unchanged if 1-D; a 2-D one checked, as float64 (n, n_targets).

    A 2-D ``y`` of one column is taken as its 1-D column (one output, as before).

    Raises
    ------
    ValueError
        Naming y, if a 2-D y has another number of rows than X, no column, or NaN or
        infinity.
    """
    shape = getattr(y, "shape", None)
    if shape is None or len(shape) != 2:
        return y
    y = np.asarray(y, dtype=np.float64)
    if y.shape[0] != n_samples or y.shape[1] < 1:
        raise ValueError(f"y of shape {y.shape} must have one row per row of X "
                         f"({n_samples}) and at least one column (target)")
    bad = ~np.isfinite(y)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise ValueError(f"y contains NaN or infinity ({int(bad.sum())} value(s), the first "
                         f"at row {row}, target {col})")
    return y[:, 0] if y.shape[1] == 1 else y
