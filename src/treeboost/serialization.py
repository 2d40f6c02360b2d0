"""Model files: a fitted estimator as a documented, versioned JSON document (SPEC §4).

The last stop of the data flow: ``save_model`` writes what prediction needs
(parameters, loss, F0, bin edges, trees, training history) and ``load_model``
rebuilds a fitted ``TreeBoostRegressor``/``TreeBoostClassifier``. Predictions
after a round trip are bit-identical: floats are written with ``repr``, the
shortest text that reads back as the same float64. The fields are documented
in the README ("Model file format"); ``checksum`` is the SHA-256 of the
canonical JSON (sorted keys, no spaces) of every other field.

Loading parses JSON only (no pickle, no eval) and validates the whole document
before building any object; every problem is a ``ModelFormatError``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import numbers
import os
import secrets

import numpy as np
from sklearn.utils.validation import check_is_fitted

from . import params as _params
from ._dtypes import NODE_DTYPE, X_DTYPE
from .binning import BinMapper
from .booster import Booster
from .exceptions import ModelFormatError
from .losses import CLASSIFICATION_LOSSES, available_losses, get_loss
from .sklearn import TreeBoostClassifier, TreeBoostRegressor
from .tree import TREE_FIELDS, Tree

FORMAT = "treeboost-model"
FORMAT_VERSION = 1
#: versions ``load_model`` reads
SUPPORTED_VERSIONS = (1,)
ESTIMATORS = {"TreeBoostRegressor": TreeBoostRegressor,
              "TreeBoostClassifier": TreeBoostClassifier}
REQUIRED_KEYS = ("treeboost_version", "estimator", "params", "loss", "n_features",
                 "feature_names", "pandas_categories", "classes", "init_score", "bin_mapper",
                 "trees", "n_iter", "best_iteration", "evals_result")
#: tree fields as stored: the categorical bitset is written as each node's list
#: of bins that go left (empty for numerical splits and leaves)
_JSON_TREE_FIELDS = [n for n in TREE_FIELDS if n != "cat_bitset"] + ["cat_left_bins"]
#: label kinds of "classes", and the numpy dtype kinds each may be restored as
_CLASS_KINDS = {"int": "iu", "float": "f", "bool": "b", "str": "UO"}
_INT32 = np.iinfo(NODE_DTYPE)


def _canonical(payload: dict) -> bytes:
    """The bytes the checksum covers: sorted keys, no spaces, strict JSON."""
    return json.dumps(payload, sort_keys=True, separators=(",", ":"),
                      allow_nan=False).encode("utf-8")


# ---- saving -------------------------------------------------------------------------------
def _plain(value, where: str):
    """``value`` as plain JSON types; refuse non-finite floats and unknown objects."""
    if isinstance(value, dict):
        return {str(k): _plain(v, f"{where}[{k!r}]") for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if value is None or isinstance(value, (bool, np.bool_)):
        return None if value is None else bool(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real) and math.isfinite(value):
        return float(value)
    raise ValueError(f"cannot save the model: {where}={value!r} cannot be written as strict "
                     "JSON (no NaN or infinity, only numbers, strings, booleans and null)")


def _finite_list(arr: np.ndarray, where: str) -> list:
    # one vectorised check instead of walking every float of every tree
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"cannot save the model: {where} contains NaN or infinity, which "
                         "strict JSON cannot represent")
    return arr.tolist()


def _classes_to_json(classes: np.ndarray) -> dict:
    values = classes.tolist()
    kind = {"i": "int", "u": "int", "f": "float", "b": "bool", "U": "str"}.get(classes.dtype.kind)
    if classes.dtype.kind == "O" and all(isinstance(v, str) for v in values):
        kind = "str"  # pandas and object arrays of strings
    if kind is None:
        raise ValueError(f"cannot save class labels of dtype {classes.dtype} with values "
                         f"{values[:5]}: int, float, bool and str labels are supported")
    return {"kind": kind, "dtype": classes.dtype.str, "values": _plain(values, "classes_")}


def _tree_to_json(tree: Tree, where: str) -> dict:
    out = {name: _finite_list(arr, f"{where} {name}") if arr.dtype.kind == "f"
           else arr.tolist() for name, arr in ((n, getattr(tree, n)) for n in TREE_FIELDS)
           if name != "cat_bitset"}
    bits = np.unpackbits(tree.cat_bitset.view(np.uint8), axis=1, bitorder="little")
    out["cat_left_bins"] = [np.flatnonzero(row).tolist() for row in bits]
    return out


def _payload(estimator) -> dict:
    """Every field but the checksum, as plain JSON values."""
    from . import __version__

    check_is_fitted(estimator, "_booster")
    name = next((n for n, cls in ESTIMATORS.items() if isinstance(estimator, cls)), None)
    if name is None:
        raise TypeError(f"cannot save a {type(estimator).__name__}: not a treeboost estimator")
    booster, bm = estimator._booster, estimator._booster.bin_mapper
    params = estimator.get_params()
    if isinstance(params.get("random_state"), np.random.RandomState):
        params["random_state"] = None  # its state is not part of the fitted model
    names = getattr(estimator, "feature_names_in_", None)
    return {
        "format": FORMAT, "format_version": FORMAT_VERSION, "treeboost_version": __version__,
        "estimator": name, "params": _plain(params, "params"),
        "loss": {"name": booster.loss.name,
                 "params": _plain(booster.loss.get_params(), "loss params")},
        "n_features": int(estimator.n_features_in_),
        "feature_names": None if names is None else [str(n) for n in names],
        "pandas_categories": [[int(j), _plain(list(c), f"categories of column {j}")]
                              for j, c in sorted(estimator.pandas_categories_.items())],
        "classes": _classes_to_json(estimator.classes_) if name == "TreeBoostClassifier"
        else None,
        "init_score": _finite_list(np.asarray(booster.init_score), "init_score"),
        "bin_mapper": {
            "max_bins": int(bm.max_bins),
            "edges": [_finite_list(bm.bin_edges_[f, :n], f"bin edges of feature {f}")
                      for f, n in enumerate(bm.n_edges_)],
            "has_missing": [bool(v) for v in bm.has_missing_],
            "is_categorical": [bool(v) for v in bm.is_categorical_]},
        "trees": [[_tree_to_json(t, f"tree {m}/{k}") for k, t in enumerate(stage)]
                  for m, stage in enumerate(booster.trees)],
        "n_iter": len(booster.trees),
        "best_iteration": _plain(estimator.best_iteration_, "best_iteration_"),
        "evals_result": _plain(estimator.evals_result_, "evals_result_"),
        # optional (absent from older files): what continued training needs beyond the
        # trees, the seed of the stages' random streams and DART's stage weights
        "seed": None if booster.seed is None else int(booster.seed),
        "stage_weights": _finite_list(np.asarray(booster.stage_weights, dtype=np.float64),
                                      "stage_weights")
        if booster.params.boosting == "dart" else None,
    }


def _dumps(document: dict) -> str:
    """Strict JSON, one top-level field per line and one stage per line, for diffs."""
    def compact(v):
        return json.dumps(v, separators=(",", ":"), allow_nan=False)

    lines = []
    for key, value in document.items():
        text = compact(value)
        if key == "trees" and value:
            text = "[\n" + ",\n".join("  " + compact(stage) for stage in value) + "\n ]"
        lines.append(f" {compact(key)}: {text}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def check_destination(path: str) -> str:
    """The folder ``path`` will be written in; errors name ``path`` before any writing."""
    if not path:
        raise ValueError("save_model: path is empty; give the name of the model file")
    if os.path.isdir(path):
        raise IsADirectoryError(f"save_model: {path!r} is a directory; give a file name "
                                "in it")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"save_model: cannot write {path!r}: the folder "
                                f"{directory!r} does not exist")
    return directory


def _write_atomic(path: str, text: str) -> None:
    # a crash mid-write leaves the old file (or none), never half a model
    directory = check_destination(path)
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{secrets.token_hex(8)}.tmp")
    try:
        # mode 0o666 lets the umask decide the permissions, as a plain open() would
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:  # name the user's file, not the temporary one
        raise type(exc)(exc.errno, f"save_model: cannot write {path!r} "
                                   f"({exc.strerror})") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        # also after KeyboardInterrupt: no temporary file is left next to the model
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def save_model(estimator, path) -> None:
    """Write a fitted estimator to ``path`` as a versioned JSON model file.

    Parameters
    ----------
    estimator : TreeBoostRegressor or TreeBoostClassifier
        A fitted estimator.
    path : str or path-like
        Destination; written to a temporary file in the same directory and
        renamed, so an interrupted save never leaves a partial file.

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If the estimator is not fitted.
    ValueError
        If a value cannot be written as strict JSON (NaN or infinity, an
        unsupported parameter or label type).
    """
    payload = _payload(estimator)
    document = dict(payload, checksum=hashlib.sha256(_canonical(payload)).hexdigest())
    _write_atomic(os.fspath(path), _dumps(document))


# ---- loading: parse, check the envelope, validate every field, build ------------------------
def _fail(message: str):
    raise ModelFormatError(message)


def _no_constant(name):
    _fail(f"non-standard JSON constant {name} (a model file has no NaN or infinity)")


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        _fail(f"duplicate keys in a JSON object: {sorted(keys)}")
    return dict(pairs)


def _read_document(path: str) -> dict:
    """Parse the file; check format, version, checksum and keys."""
    with open(path, "rb") as f:
        data = f.read()
    hint = "the file is truncated or is not a treeboost model file"
    try:
        doc = json.loads(data, parse_constant=_no_constant, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as err:
        _fail(f"not valid JSON ({err.msg} at line {err.lineno} column {err.colno}): {hint}")
    except (UnicodeDecodeError, RecursionError) as err:
        _fail(f"not valid JSON ({type(err).__name__}): {hint}")
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        _fail(f"not a treeboost model file (format={found!r}, expected {FORMAT!r})")
    version = doc.get("format_version")
    if type(version) is not int or version not in SUPPORTED_VERSIONS:
        _fail(f"unsupported format_version {version!r}; this treeboost reads format_version "
              f"{', '.join(map(str, SUPPORTED_VERSIONS))} (a newer treeboost may have written it)")
    if "checksum" not in doc:
        _fail("missing key 'checksum'")
    checksum = doc.pop("checksum")
    try:
        actual = hashlib.sha256(_canonical(doc)).hexdigest()
    except ValueError:  # a number beyond the float64 range was parsed as inf
        actual = None
    if checksum != actual:
        _fail("checksum mismatch: the file was modified or corrupted")
    missing = [k for k in REQUIRED_KEYS if k not in doc]
    if missing:
        _fail(f"missing keys {missing}")
    return doc


def _typed(value, types, where: str, what: str):
    types = types if isinstance(types, tuple) else (types,)
    # bool is an int in Python but never a valid count, index or label of another kind
    if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
        _fail(f"{where} must be {what}, got {value!r:.80}")
    return value


def _array(values, where: str, kind: str) -> np.ndarray:
    """A JSON list as a 1-D array of kind "int" (ints only) or "float" (finite numbers)."""
    _typed(values, list, where, "a list")
    try:
        arr = np.array(values)
    except (ValueError, OverflowError):
        arr = None
    allowed = "iu" if kind == "int" else "iuf"
    if arr is None or arr.ndim != 1 or (arr.size and arr.dtype.kind not in allowed):
        _fail(f"{where} must be a list of {kind}s")
    if kind == "float" and not np.all(np.isfinite(arr.astype(np.float64))):
        _fail(f"{where} contains a number out of the float64 range")
    return arr


def _classes(doc) -> np.ndarray:
    _typed(doc, dict, "classes", "an object with kind, dtype and values")
    kind, values = doc.get("kind"), _typed(doc.get("values"), list, "classes.values", "a list")
    if kind not in _CLASS_KINDS:
        _fail(f"classes: kind={kind!r} must be one of {list(_CLASS_KINDS)}")
    types = {"int": int, "float": (int, float), "bool": bool, "str": str}[kind]
    for v in values:
        _typed(v, types, "classes.values", f"a list of {kind}")
    try:
        dtype = np.dtype(doc.get("dtype"))
        ok = dtype.kind in _CLASS_KINDS[kind] and len(values) >= 2
        if ok and dtype.kind == "U":  # wide enough for every label, and not absurdly wide
            ok = max(map(len, values)) <= dtype.itemsize // 4 <= 2**16
        classes = np.array(values, dtype=dtype) if ok else None
    except (TypeError, ValueError, OverflowError):
        classes = None
    if classes is None or not np.array_equal(np.unique(classes), classes):
        _fail(f"classes: {len(values)} labels of kind {kind} and dtype {doc.get('dtype')!r} "
              "are not at least two sorted distinct labels of that dtype")
    return classes


def _cat_bitset(rows, where: str, n: int) -> np.ndarray:
    """Bitsets (n, 8) from each node's list of left bins."""
    if not isinstance(rows, list) or len(rows) != n:
        _fail(f"{where}.cat_left_bins must be a list of {n} lists")
    bits = np.zeros((n, 256), dtype=np.uint8)
    for node, bins in enumerate(rows):
        arr = _array(bins, f"{where}.cat_left_bins[{node}]", "int")
        if np.any((arr < 0) | (arr > 255)):
            _fail(f"{where}.cat_left_bins[{node}] must hold bins in [0, 255]")
        bits[node, arr.astype(np.intp)] = 1
    return np.packbits(bits, axis=1, bitorder="little").view(np.uint32).copy()


def _tree(data, where: str, n_features: int, n_edges: np.ndarray,
          is_categorical: np.ndarray) -> Tree:
    """Validate one tree's arrays and structure, then build it."""
    _typed(data, dict, where, "an object")
    if set(data) != set(_JSON_TREE_FIELDS):
        _fail(f"{where}: fields {sorted(data)} must be {sorted(_JSON_TREE_FIELDS)}")
    arrays = {name: _array(data[name], f"{where}.{name}",
                           "float" if np.dtype(dtype).kind == "f" else "int")
              for name, dtype in TREE_FIELDS.items() if name != "cat_bitset"}
    n = arrays["left"].size
    if n == 0 or any(a.size != n for a in arrays.values()):
        _fail(f"{where}: node arrays have inconsistent lengths "
              f"{ {k: a.size for k, a in arrays.items()} }")
    left, right, feature = arrays["left"], arrays["right"], arrays["feature"]
    internal = left >= 0
    if np.any(internal != (right >= 0)) or np.any(left[~internal] != -1) or np.any(
            right[~internal] != -1):
        _fail(f"{where}: a node must have two children or none (-1, -1)")
    # children strictly after their parent: every traversal ends, there are no cycles
    parents = np.tile(np.flatnonzero(internal), 2)
    children = np.concatenate([left[internal], right[internal]])
    if np.any(children <= parents) or np.any(children >= n):
        _fail(f"{where}: child indices out of range [1, {n}) or not after their parent")
    if np.any(np.bincount(children, minlength=n)[1:] != 1):
        _fail(f"{where}: every node but the root must be the child of exactly one node")
    f_int, b_int = feature[internal], arrays["bin_threshold"][internal]
    if np.any(f_int < 0) or np.any(f_int >= n_features):
        _fail(f"{where}: feature indices out of range [0, {n_features})")
    node_cat = arrays["is_categorical"]
    if np.any(node_cat[~internal] != 0) or np.any(node_cat[internal] != is_categorical[f_int]):
        _fail(f"{where}: is_categorical must match the split feature's kind (0 at leaves)")
    numerical = node_cat[internal] == 0
    f_num, b_num = f_int[numerical], b_int[numerical]
    if np.any(b_num < 0) or np.any(b_num > n_edges[f_num]):
        _fail(f"{where}: bin thresholds out of the range of their feature's bins")
    arrays["cat_bitset"] = _cat_bitset(data["cat_left_bins"], where, n)
    if np.any(arrays["cat_bitset"][node_cat == 0] != 0):
        _fail(f"{where}: only categorical splits may have left bins")
    int32 = [arrays[k] for k in TREE_FIELDS if TREE_FIELDS[k] == NODE_DTYPE]
    if np.any((arrays["missing_left"] > 1) | (arrays["missing_left"] < 0)) or np.any(
            arrays["count"] < 0) or any(np.any((a < _INT32.min) | (a > _INT32.max))
                                        for a in int32):
        _fail(f"{where}: missing_left must be 0 or 1, count non-negative, indices int32")
    return Tree(**{name: arrays[name].astype(dtype) for name, dtype in TREE_FIELDS.items()})


def _bin_mapper(doc, n_features: int, max_bins: int) -> BinMapper:
    _typed(doc, dict, "bin_mapper", "an object")
    if doc.get("max_bins") != max_bins:
        _fail(f"bin_mapper: max_bins={doc.get('max_bins')!r} differs from the parameter "
              f"max_bins={max_bins}")
    edges = _typed(doc.get("edges"), list, "bin_mapper.edges", "a list")
    missing = _typed(doc.get("has_missing"), list, "bin_mapper.has_missing", "a list")
    categorical = _typed(doc.get("is_categorical"), list, "bin_mapper.is_categorical",
                         "a list")
    if len(edges) != n_features or len(missing) != n_features or len(
            categorical) != n_features or not all(
            isinstance(v, bool) for v in missing + categorical):
        _fail(f"bin_mapper: edges, has_missing and is_categorical must have one entry per "
              f"feature ({n_features})")
    bm = BinMapper(max_bins, is_categorical=categorical)
    bm.is_categorical_ = np.array(categorical, dtype=np.uint8)
    bm.bin_edges_ = np.full((n_features, max_bins), np.inf, dtype=X_DTYPE)
    bm.n_edges_ = np.zeros(n_features, dtype=np.int32)
    for f, values in enumerate(edges):
        arr = _array(values, f"bin_mapper.edges[{f}]", "float")
        most = max_bins if categorical[f] else max_bins - 1
        if arr.size > most or np.any(np.diff(arr) <= 0):
            _fail(f"bin_mapper: edges of feature {f} must be at most {most} "
                  "increasing numbers")
        bm.bin_edges_[f, :arr.size] = arr
        bm.n_edges_[f] = arr.size
    bm.n_bins_non_missing_ = np.where(bm.is_categorical_ == 1, bm.n_edges_,
                                      bm.n_edges_ + 1).astype(np.int32)
    bm.has_missing_ = np.array(missing, dtype=bool)
    return bm


def _pandas_categories(doc, n_features: int) -> dict:
    if not isinstance(doc, list) or not all(
            isinstance(p, list) and len(p) == 2 and isinstance(p[0], int)
            and not isinstance(p[0], bool) and 0 <= p[0] < n_features and isinstance(p[1], list)
            and all(isinstance(v, (str, int, float, bool)) for v in p[1]) for p in doc):
        _fail("pandas_categories must be a list of [column index, [category, ...]] pairs")
    return {j: values for j, values in doc}


def _estimator(doc: dict):
    """An unfitted estimator with the stored parameters, after checking them."""
    cls = ESTIMATORS.get(doc["estimator"])
    if cls is None:
        _fail(f"unknown estimator {doc['estimator']!r}; expected one of {list(ESTIMATORS)}")
    params = _typed(doc["params"], dict, "params", "an object")
    unknown = set(params) - set(cls().get_params())
    if unknown:
        _fail(f"unknown {cls.__name__} parameters {sorted(unknown)}")
    try:
        _params.validate(params, cls._scope)
    except (TypeError, ValueError) as err:
        _fail(f"invalid parameter: {err}")
    return cls().set_params(**params)


def _loss(doc, estimator, classes):
    is_classifier = classes is not None
    name, params = doc.get("name"), _typed(doc.get("params"), dict, "loss.params", "an object")
    if name not in available_losses() or (name in CLASSIFICATION_LOSSES) != is_classifier \
            or name != estimator.loss:
        _fail(f"unknown or mismatched loss {name!r} for {type(estimator).__name__} with "
              f"loss={estimator.loss!r}")
    kwargs = dict(params, n_classes=len(classes)) if is_classifier else params
    try:
        loss = get_loss(name, **kwargs)
        ok = loss.get_params() == params
    except (TypeError, ValueError):
        ok = False
    if not ok:
        _fail(f"loss parameters {params} do not rebuild loss {name!r}")
    return loss


def _continuation_state(doc: dict, n_stages: int):
    """(seed, stage weights) for continued training; files before them have neither."""
    seed = doc.get("seed")
    if seed is not None and (type(seed) is not int or not 0 <= seed < 2**128):
        _fail(f"seed={seed!r} must be null or a non-negative int")
    weights = doc.get("stage_weights")
    if weights is None:
        return seed, []
    weights = _array(weights, "stage_weights", "float").astype(np.float64)
    if weights.size != n_stages or np.any(weights <= 0):
        _fail(f"stage_weights must hold {n_stages} positive numbers, one per stage")
    return seed, weights.tolist()


def _build(doc: dict):
    """Validate every field of a checked document, then build the fitted estimator."""
    estimator = _estimator(doc)
    is_classifier = isinstance(estimator, TreeBoostClassifier)
    n_features = _typed(doc["n_features"], int, "n_features", "an int")
    names = doc["feature_names"]
    if n_features < 1 or (names is not None and (
            not isinstance(names, list) or len(names) != n_features
            or not all(isinstance(s, str) for s in names))):
        _fail(f"n_features={n_features} must be positive, feature_names null or a list of "
              "that many strings")
    if not is_classifier and doc["classes"] is not None:
        _fail("classes must be null for a regressor")
    classes = _classes(doc["classes"]) if is_classifier else None
    loss = _loss(_typed(doc["loss"], dict, "loss", "an object"), estimator, classes)
    K = loss.n_outputs
    init_score = _array(doc["init_score"], "init_score", "float").astype(np.float64)
    if init_score.size != K:
        _fail(f"init_score has {init_score.size} values; the loss has {K} outputs")
    bin_mapper = _bin_mapper(doc["bin_mapper"], n_features, estimator.max_bins)
    trees = []
    for m, stage in enumerate(_typed(doc["trees"], list, "trees", "a list of stages")):
        if not isinstance(stage, list) or len(stage) != K:
            _fail(f"stage {m} must be a list of {K} trees")
        trees.append([_tree(t, f"tree {m}/{k}", n_features, bin_mapper.n_edges_,
                            bin_mapper.is_categorical_)
                      for k, t in enumerate(stage)])
    if _typed(doc["n_iter"], int, "n_iter", "an int") != len(trees):
        _fail(f"n_iter={doc['n_iter']} but the file has {len(trees)} stages")
    best = doc["best_iteration"]
    if best is not None and not 0 <= _typed(best, int, "best_iteration", "an int") < len(trees):
        _fail(f"best_iteration={best} must be null or in [0, {len(trees)})")
    evals = _typed(doc["evals_result"], dict, "evals_result", "an object")
    evals = {data: {metric: [float(v) for v in _array(vals, f"evals_result {data}", "float")]
                    for metric, vals in _typed(log, dict, "evals_result", "an object").items()}
             for data, log in evals.items()}

    booster = Booster(loss, bin_mapper, estimator._boosting_params())
    booster.init_score, booster.trees = init_score, trees
    booster.seed, booster.stage_weights = _continuation_state(doc, len(trees))
    # the fitted attributes set by the estimators' fit (_fit_booster, _encode_target)
    estimator._booster = booster
    estimator.n_features_in_ = n_features
    estimator.pandas_categories_ = _pandas_categories(doc["pandas_categories"], n_features)
    estimator.is_categorical_ = bin_mapper.is_categorical_.astype(bool)
    if names is not None:
        estimator.feature_names_in_ = np.asarray(names, dtype=object)  # as scikit-learn does
    if is_classifier:
        estimator.classes_, estimator.n_classes_ = classes, len(classes)
    estimator.n_iter_, estimator.best_iteration_, estimator.evals_result_ = len(trees), best, evals
    return estimator


def load_model(path):
    """Load an estimator written by ``save_model``.

    Only JSON is parsed (nothing is unpickled or evaluated), and the whole
    document is validated before any object is built.

    Parameters
    ----------
    path : str or path-like
        Model file.

    Returns
    -------
    TreeBoostRegressor or TreeBoostClassifier
        The fitted estimator; its predictions are bit-identical to those of
        the estimator that was saved.

    Raises
    ------
    treeboost.exceptions.ModelFormatError
        If the file is not JSON or is truncated, is of another format or of an
        unsupported ``format_version``, fails its checksum, or does not
        describe a valid model. The message starts with the path.
    """
    path = os.fspath(path)
    try:
        return _build(_read_document(path))
    except ModelFormatError as err:
        raise ModelFormatError(f"{path}: {err}") from None
