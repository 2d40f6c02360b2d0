"""Model files: a fitted Booster as a documented, versioned JSON document (SPEC §4).

The last stop of the data flow, at the engine level: ``save_booster`` writes
what a ``Booster`` needs to predict and to continue training (its parameters,
loss, F0, bin edges, trees, seed and DART stage weights, and the names of a model's
targets where it knows them) together with an
opaque, JSON-safe ``estimator`` dict that the caller supplies, and
``load_booster`` reads both back. The estimators are clients:
``treeboost._estimator_io`` fills and reads the ``estimator`` fields (class
name, constructor parameters, classes, feature names, training history) and
rebuilds a fitted ``TreeBoostRegressor``/``TreeBoostClassifier``; this module
imports no estimator. Predictions after a round trip are bit-identical: floats
are written with ``repr``, the shortest text that reads back as the same
float64. The fields are documented in docs/guide/model_files.rst;
``checksum`` is the SHA-256 of the canonical JSON (sorted keys, no spaces) of
every other field.

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
import re
import secrets
import socket
import time
import zlib
from dataclasses import fields

import numpy as np

from . import params as _params
from ._dtypes import NODE_DTYPE, X_DTYPE
from ._version import __version__
from .binning import BinMapper
from .booster import Booster, BoostingParams
from .exceptions import ModelFormatError
from .grower import GrowerParams
from .losses import CLASSIFICATION_LOSSES, available_losses, get_loss
from .model_view import register_model_file
from .tree import TREE_FIELDS, Tree

FORMAT = "treeboost-model"
FORMAT_VERSION = 1
#: versions ``load_booster`` reads
SUPPORTED_VERSIONS = (1,)
REQUIRED_KEYS = ("treeboost_version", "estimator", "params", "loss", "n_features",
                 "feature_names", "pandas_categories", "classes", "init_score", "bin_mapper",
                 "trees", "n_iter", "best_iteration", "evals_result")
#: the fields that belong to the caller (the estimator around the Booster), written
#: as given and returned as read; "params" also holds the Booster's parameters
ESTIMATOR_FIELDS = ("estimator", "params", "feature_names", "pandas_categories", "classes",
                    "best_iteration", "evals_result")
#: the Booster's parameters, stored in "params" under the estimators' names
_BOOSTING_FIELDS = tuple(f.name for f in fields(BoostingParams) if f.name != "grower")
_GROWER_FIELDS = tuple(f.name for f in fields(GrowerParams))
#: tree fields as stored: the categorical bitset is written as each node's list
#: of bins that go left (empty for numerical splits and leaves)
_JSON_TREE_FIELDS = [n for n in TREE_FIELDS if n != "cat_bitset"] + ["cat_left_bins"]
_INT32 = np.iinfo(NODE_DTYPE)
#: age (seconds since the last write) past which a save's temporary file is abandoned
STALE_TEMP_SECONDS = 3600
#: this machine in the names of temporary files (8 hex digits of its name's CRC-32)
_HOST = f"{zlib.crc32(socket.gethostname().encode()):08x}"


def _canonical(payload: dict) -> bytes:
    """The bytes the checksum covers: sorted keys, no spaces, strict JSON."""
    return json.dumps(payload, sort_keys=True, separators=(",", ":"),
                      allow_nan=False).encode("utf-8")


# ---- saving -------------------------------------------------------------------------------
def to_json(value, where: str):
    """``value`` as plain JSON types; refuse non-finite floats and unknown objects.

    Parameters
    ----------
    value : object
        Nested dicts, lists, tuples, arrays, strings, numbers, booleans, None.
    where : str
        What ``value`` is, for the error message.

    Returns
    -------
    object
        The same structure made of dict, list, str, int, float, bool and None.

    Raises
    ------
    ValueError
        If a float is not finite or an object has no JSON form.
    """
    if isinstance(value, dict):
        return {str(k): to_json(v, f"{where}[{k!r}]") for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [to_json(v, f"{where}[{i}]") for i, v in enumerate(value)]
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


def _tree_to_json(tree: Tree, where: str) -> dict:
    out = {name: _finite_list(arr, f"{where} {name}") if arr.dtype.kind == "f"
           else arr.tolist() for name, arr in ((n, getattr(tree, n)) for n in TREE_FIELDS)
           if name != "cat_bitset"}
    bits = np.unpackbits(tree.cat_bitset.view(np.uint8), axis=1, bitorder="little")
    out["cat_left_bins"] = [np.flatnonzero(row).tolist() for row in bits]
    return out


def _flat_params(booster: Booster) -> dict:
    """A Booster's parameters and ``max_bins`` under the estimators' names."""
    flat = {name: getattr(booster.params, name) for name in _BOOSTING_FIELDS}
    flat.update((name, getattr(booster.params.grower, name)) for name in _GROWER_FIELDS)
    flat["max_bins"] = booster.bin_mapper.max_bins
    return dict(sorted(flat.items()))


def _bare_metadata(booster: Booster) -> dict:
    """The estimator fields of a file that holds a Booster alone."""
    names = booster.feature_names
    return {"estimator": None, "params": _flat_params(booster),
            "feature_names": None if names is None else [str(n) for n in names],
            "pandas_categories": [[int(j), list(c)]
                                  for j, c in sorted(booster.pandas_categories.items())],
            "classes": None, "best_iteration": None, "evals_result": {}}


def _payload(booster: Booster, estimator: dict | None,
             svmlight_zero_based: bool | None = None) -> dict:
    """Every field but the checksum, as plain JSON values, in the order of the file."""
    if svmlight_zero_based is not None and not isinstance(svmlight_zero_based, bool):
        raise ValueError(f"svmlight_zero_based must be True, False or None, got "
                         f"{svmlight_zero_based!r}")
    meta = _bare_metadata(booster) if estimator is None else estimator
    if set(meta) != set(ESTIMATOR_FIELDS):
        raise ValueError(f"cannot save the model: the estimator metadata must have the keys "
                         f"{list(ESTIMATOR_FIELDS)}, got {sorted(meta)}")
    meta = {key: to_json(value, key) for key, value in meta.items()}
    bm = booster.bin_mapper
    payload = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "treeboost_version": __version__,
        "estimator": meta["estimator"], "params": meta["params"],
        "loss": {"name": booster.loss.name,
                 "params": to_json(booster.loss.get_params(), "loss params")},
        "n_features": booster.n_features,
        "feature_names": meta["feature_names"],
        "pandas_categories": meta["pandas_categories"],
        "classes": meta["classes"],
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
        "best_iteration": meta["best_iteration"],
        "evals_result": meta["evals_result"],
        # optional (absent from older files): what continued training needs beyond the
        # trees, the seed of the stages' random streams and DART's stage weights
        "seed": None if booster.seed is None else int(booster.seed),
        "stage_weights": _finite_list(np.asarray(booster.stage_weights, dtype=np.float64),
                                      "stage_weights")
        if booster.mode.stage_weights_state else None,
    }
    if svmlight_zero_based is not None:
        # optional, written only for a model trained on svmlight files, so that every
        # other file stays byte for byte what it was: the index base those files were
        # read with, for reading new data alike (`treeboost predict`)
        payload["svmlight_zero_based"] = svmlight_zero_based
    names = getattr(booster, "target_names", None)
    if names is not None:
        # optional as well, written only for a model that knows its targets' names (a
        # DataFrame y, `treeboost train --target a,b`): every other file is unchanged
        payload["target_names"] = target_names_field([str(v) for v in names],
                                                     booster.n_outputs, save=True)
    return payload


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


def _temp_name(basename: str, pid: int) -> str:
    """The hidden temporary file a save of ``basename`` by process ``pid`` writes first."""
    return f".{basename}.{_HOST}-{pid}-{secrets.token_hex(4)}.tmp"


def _pid_alive(pid: int) -> bool:
    """Whether process ``pid`` of this machine may still run (True when unsure)."""
    if os.name != "posix":  # os.kill(pid, 0) would end the process on Windows
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # another user's (PermissionError), not a pid, ...
        return True
    return True


def _remove_stale_temps(directory: str, basename: str) -> None:
    """Remove what killed saves of ``basename`` left in ``directory``.

    A save killed by SIGKILL or a power cut never reaches its clean-up, and its hidden
    temporary file would stay for good. A temporary file is another save's work in
    progress unless its writer is known dead (this machine, pid gone) or it is older
    than :data:`STALE_TEMP_SECONDS`, which no save takes: only those are removed, so two
    processes saving to the same place never delete each other's file.
    """
    pattern = re.compile(re.escape(f".{basename}.") +
                         r"(?:(?P<host>[0-9a-f]{8})-(?P<pid>\d+)-[0-9a-f]{8}|[0-9a-f]{16})"
                         r"\.tmp")
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    now = time.time()
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match is None:
            continue
        with contextlib.suppress(OSError):  # gone already, or not ours to remove
            dead = match["host"] == _HOST and not _pid_alive(int(match["pid"]))
            if dead or now - entry.stat(follow_symlinks=False).st_mtime > STALE_TEMP_SECONDS:
                os.remove(entry.path)


def _write_atomic(path: str, text: str | bytes, *, after_write=None,
                  what: str = "save_model") -> None:
    """Write ``text`` (str as UTF-8, or bytes) to ``path`` through a temporary file
    renamed over it; the model files and the command line's outputs alike.

    ``after_write``, if given, is called once the temporary file is written and before
    it is renamed (tests end the process there, as a crash would). ``what`` names the
    caller in the error of a path that cannot be written.
    """
    # a crash mid-write leaves the old file (or none), never half a model
    directory = check_destination(path)
    basename = os.path.basename(path)
    _remove_stale_temps(directory, basename)
    tmp = os.path.join(directory, _temp_name(basename, os.getpid()))
    try:
        # mode 0o666 lets the umask decide the permissions, as a plain open() would
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:  # name the user's file, not the temporary one
        raise type(exc)(exc.errno, f"{what}: cannot write {path!r} "
                                   f"({exc.strerror})") from exc
    try:
        binary = isinstance(text, bytes)
        with (os.fdopen(fd, "wb") if binary else
              os.fdopen(fd, "w", encoding="utf-8", newline="\n")) as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if after_write is not None:
            after_write()
        os.replace(tmp, path)
    except BaseException:
        # also after KeyboardInterrupt: no temporary file is left next to the model
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def save_booster(booster: Booster, path, *, estimator: dict | None = None,
                 svmlight_zero_based: bool | None = None) -> None:
    """Write a fitted Booster to ``path`` as a versioned JSON model file.

    The engine-level writer: ``TreeBoostRegressor.save_model`` and
    ``TreeBoostClassifier.save_model`` call it with their own ``estimator``
    metadata. The file holds everything the Booster needs to predict and to
    continue training (loss, F0, bins, trees, parameters, seed, DART stage
    weights); ``estimator`` is written as is, in the fields of the format that
    belong to the caller.

    Parameters
    ----------
    booster : Booster
        A fitted booster.
    path : str or path-like
        Destination; written to a temporary file in the same directory and
        renamed, so an interrupted save never leaves a partial file.
    estimator : dict, default=None
        JSON-safe metadata of the estimator around the booster, with exactly
        the keys of ``ESTIMATOR_FIELDS``: ``"estimator"`` (class name),
        ``"params"`` (its constructor parameters, which must hold the
        Booster's parameters under the same names), ``"feature_names"``,
        ``"pandas_categories"``, ``"classes"``, ``"best_iteration"`` and
        ``"evals_result"``. None writes a bare Booster: ``"estimator"`` is
        null and ``"params"`` holds the Booster's parameters.

        .. versionadded:: 0.1.0
    svmlight_zero_based : bool, default=None
        For a model trained on svmlight files: the index base they were read with
        (``treeboost.datasets.read_svmlight_files`` returns it), recorded so that new
        data is read alike; ``treeboost train`` records it and ``treeboost predict``
        uses it. None (the default) writes no such field.

    Raises
    ------
    ValueError
        If a value cannot be written as strict JSON (NaN or infinity, an
        unsupported type), if ``path`` is empty, or if ``svmlight_zero_based`` is
        not None or a bool.

    Notes
    -----
    The temporary file is hidden (``.<name>.<host>-<pid>-<random>.tmp``). A save
    killed before its rename (SIGKILL, a power cut) cannot remove its own, so each
    save first removes those of earlier saves of the same file whose process is known
    dead (same machine, pid gone) or that are older than ``STALE_TEMP_SECONDS``; the
    temporary file of a save still running elsewhere is left alone.
    """
    payload = _payload(booster, estimator, svmlight_zero_based)
    document = dict(payload, checksum=hashlib.sha256(_canonical(payload)).hexdigest())
    _write_atomic(os.fspath(path), _dumps(document))


# ---- loading: parse, check the envelope, validate every field, build ------------------------
def fail(message: str):
    """Raise a ``ModelFormatError`` (the loaders add the file's path)."""
    raise ModelFormatError(message)


def _no_constant(name):
    fail(f"non-standard JSON constant {name} (a model file has no NaN or infinity)")


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        fail(f"duplicate keys in a JSON object: {sorted(keys)}")
    return dict(pairs)


def _read_document(path: str) -> dict:
    """Parse the file; check format, version, checksum and keys."""
    with open(path, "rb") as f:
        data = f.read()
    hint = "the file is truncated or is not a treeboost model file"
    try:
        doc = json.loads(data, parse_constant=_no_constant, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as err:
        fail(f"not valid JSON ({err.msg} at line {err.lineno} column {err.colno}): {hint}")
    except (UnicodeDecodeError, RecursionError) as err:
        fail(f"not valid JSON ({type(err).__name__}): {hint}")
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        fail(f"not a treeboost model file (format={found!r}, expected {FORMAT!r})")
    version = doc.get("format_version")
    if type(version) is not int or version not in SUPPORTED_VERSIONS:
        fail(f"unsupported format_version {version!r}; this treeboost reads format_version "
              f"{', '.join(map(str, SUPPORTED_VERSIONS))} (a newer treeboost may have written it)")
    if "checksum" not in doc:
        fail("missing key 'checksum'")
    checksum = doc.pop("checksum")
    try:
        actual = hashlib.sha256(_canonical(doc)).hexdigest()
    except ValueError:  # a number beyond the float64 range was parsed as inf
        actual = None
    if checksum != actual:
        fail("checksum mismatch: the file was modified or corrupted")
    missing = [k for k in REQUIRED_KEYS if k not in doc]
    if missing:
        fail(f"missing keys {missing}")
    return doc


def typed(value, types, where: str, what: str):
    """``value`` if it is of ``types``, else a ``ModelFormatError`` saying it must be ``what``."""
    types = types if isinstance(types, tuple) else (types,)
    # bool is an int in Python but never a valid count, index or label of another kind
    if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
        fail(f"{where} must be {what}, got {value!r:.80}")
    return value


def number_array(values, where: str, kind: str) -> np.ndarray:
    """A JSON list as a 1-D array of kind "int" (ints only) or "float" (finite numbers)."""
    typed(values, list, where, "a list")
    try:
        arr = np.array(values)
    except (ValueError, OverflowError):
        arr = None
    allowed = "iu" if kind == "int" else "iuf"
    if arr is None or arr.ndim != 1 or (arr.size and arr.dtype.kind not in allowed):
        fail(f"{where} must be a list of {kind}s")
    if kind == "float" and not np.all(np.isfinite(arr.astype(np.float64))):
        fail(f"{where} contains a number out of the float64 range")
    return arr


def _cat_bitset(rows, where: str, n: int) -> np.ndarray:
    """Bitsets (n, 8) from each node's list of left bins."""
    if not isinstance(rows, list) or len(rows) != n:
        fail(f"{where}.cat_left_bins must be a list of {n} lists")
    bits = np.zeros((n, 256), dtype=np.uint8)
    for node, bins in enumerate(rows):
        arr = number_array(bins, f"{where}.cat_left_bins[{node}]", "int")
        if np.any((arr < 0) | (arr > 255)):
            fail(f"{where}.cat_left_bins[{node}] must hold bins in [0, 255]")
        bits[node, arr.astype(np.intp)] = 1
    return np.packbits(bits, axis=1, bitorder="little").view(np.uint32).copy()


def _tree(data, where: str, n_features: int, n_edges: np.ndarray,
          is_categorical: np.ndarray) -> Tree:
    """Validate one tree's arrays and structure, then build it."""
    typed(data, dict, where, "an object")
    if set(data) != set(_JSON_TREE_FIELDS):
        fail(f"{where}: fields {sorted(data)} must be {sorted(_JSON_TREE_FIELDS)}")
    arrays = {name: number_array(data[name], f"{where}.{name}",
                           "float" if np.dtype(dtype).kind == "f" else "int")
              for name, dtype in TREE_FIELDS.items() if name != "cat_bitset"}
    n = arrays["left"].size
    if n == 0 or any(a.size != n for a in arrays.values()):
        fail(f"{where}: node arrays have inconsistent lengths "
              f"{ {k: a.size for k, a in arrays.items()} }")
    left, right, feature = arrays["left"], arrays["right"], arrays["feature"]
    internal = left >= 0
    if np.any(internal != (right >= 0)) or np.any(left[~internal] != -1) or np.any(
            right[~internal] != -1):
        fail(f"{where}: a node must have two children or none (-1, -1)")
    # children strictly after their parent: every traversal ends, there are no cycles
    parents = np.tile(np.flatnonzero(internal), 2)
    children = np.concatenate([left[internal], right[internal]])
    if np.any(children <= parents) or np.any(children >= n):
        fail(f"{where}: child indices out of range [1, {n}) or not after their parent")
    if np.any(np.bincount(children, minlength=n)[1:] != 1):
        fail(f"{where}: every node but the root must be the child of exactly one node")
    f_int, b_int = feature[internal], arrays["bin_threshold"][internal]
    if np.any(f_int < 0) or np.any(f_int >= n_features):
        fail(f"{where}: feature indices out of range [0, {n_features})")
    node_cat = arrays["is_categorical"]
    if np.any(node_cat[~internal] != 0) or np.any(node_cat[internal] != is_categorical[f_int]):
        fail(f"{where}: is_categorical must match the split feature's kind (0 at leaves)")
    numerical = node_cat[internal] == 0
    f_num, b_num = f_int[numerical], b_int[numerical]
    if np.any(b_num < 0) or np.any(b_num > n_edges[f_num]):
        fail(f"{where}: bin thresholds out of the range of their feature's bins")
    arrays["cat_bitset"] = _cat_bitset(data["cat_left_bins"], where, n)
    if np.any(arrays["cat_bitset"][node_cat == 0] != 0):
        fail(f"{where}: only categorical splits may have left bins")
    int32 = [arrays[k] for k in TREE_FIELDS if TREE_FIELDS[k] == NODE_DTYPE]
    if np.any((arrays["missing_left"] > 1) | (arrays["missing_left"] < 0)) or np.any(
            arrays["count"] < 0) or any(np.any((a < _INT32.min) | (a > _INT32.max))
                                        for a in int32):
        fail(f"{where}: missing_left must be 0 or 1, count non-negative, indices int32")
    return Tree(**{name: arrays[name].astype(dtype) for name, dtype in TREE_FIELDS.items()})


def _bin_mapper(doc, n_features: int, max_bins: int | None) -> BinMapper:
    """The bin mapper of the file, whose ``max_bins`` must be the parameter's if given."""
    typed(doc, dict, "bin_mapper", "an object")
    if max_bins is None:  # a file whose params lack it: the bin mapper's, once checked
        max_bins = doc.get("max_bins")
        try:
            _params.params_for("regressor")["max_bins"].check(max_bins)
        except (TypeError, ValueError) as err:
            fail(f"bin_mapper: {err}")
    if doc.get("max_bins") != max_bins:
        fail(f"bin_mapper: max_bins={doc.get('max_bins')!r} differs from the parameter "
              f"max_bins={max_bins}")
    edges = typed(doc.get("edges"), list, "bin_mapper.edges", "a list")
    missing = typed(doc.get("has_missing"), list, "bin_mapper.has_missing", "a list")
    categorical = typed(doc.get("is_categorical"), list, "bin_mapper.is_categorical",
                         "a list")
    if len(edges) != n_features or len(missing) != n_features or len(
            categorical) != n_features or not all(
            isinstance(v, bool) for v in missing + categorical):
        fail(f"bin_mapper: edges, has_missing and is_categorical must have one entry per "
              f"feature ({n_features})")
    bm = BinMapper(max_bins, is_categorical=categorical)
    bm.is_categorical_ = np.array(categorical, dtype=np.uint8)
    # as wide as the longest list, as BinMapper.fit makes it (never more than max_bins:
    # a longer list fails below)
    width = max([1] + [min(len(v), max_bins) if isinstance(v, list) else 1 for v in edges])
    bm.bin_edges_ = np.full((n_features, width), np.inf, dtype=X_DTYPE)
    bm.n_edges_ = np.zeros(n_features, dtype=np.int32)
    for f, values in enumerate(edges):
        arr = number_array(values, f"bin_mapper.edges[{f}]", "float")
        most = max_bins if categorical[f] else max_bins - 1
        if arr.size > most or np.any(np.diff(arr) <= 0):
            fail(f"bin_mapper: edges of feature {f} must be at most {most} "
                  "increasing numbers")
        bm.bin_edges_[f, :arr.size] = arr
        bm.n_edges_[f] = arr.size
    bm.n_bins_non_missing_ = np.where(bm.is_categorical_ == 1, bm.n_edges_,
                                      bm.n_edges_ + 1).astype(np.int32)
    bm.has_missing_ = np.array(missing, dtype=bool)
    return bm


def _continuation_state(doc: dict, n_stages: int):
    """(seed, stage weights) for continued training; files before them have neither."""
    seed = doc.get("seed")
    if seed is not None and (type(seed) is not int or not 0 <= seed < 2**128):
        fail(f"seed={seed!r} must be null or a non-negative int")
    weights = doc.get("stage_weights")
    if weights is None:
        return seed, []
    weights = number_array(weights, "stage_weights", "float").astype(np.float64)
    if weights.size != n_stages or np.any(weights <= 0):
        fail(f"stage_weights must hold {n_stages} positive numbers, one per stage")
    return seed, weights.tolist()




def _boosting_params(params: dict, loss_name) -> BoostingParams:
    """The Booster's parameters from "params", checked against the parameter table.

    A parameter the file lacks takes its ``BoostingParams``/``GrowerParams``
    default (an estimator then sets its own defaults, as it always did).
    """
    names = _BOOSTING_FIELDS + _GROWER_FIELDS + ("max_bins",)
    scope = "classifier" if loss_name in CLASSIFICATION_LOSSES else "regressor"
    try:
        _params.validate({name: params[name] for name in names if name in params}, scope)
    except (TypeError, ValueError) as err:
        fail(f"invalid parameter: {err}")
    grower = GrowerParams(**{name: params[name] for name in _GROWER_FIELDS if name in params})
    return BoostingParams(**{name: params[name] for name in _BOOSTING_FIELDS if name in params},
                          grower=grower)


def _loss(doc):
    """The loss from its registry name and ``get_params()``."""
    name, params = doc.get("name"), typed(doc.get("params"), dict, "loss.params", "an object")
    if name not in available_losses():
        fail(f"unknown or mismatched loss {name!r}: not one of {available_losses()} (a "
             "loss added by treeboost.losses.register_loss must be registered again, "
             "under the same name, before loading)")
    kwargs = dict(params)
    if name in CLASSIFICATION_LOSSES:
        kwargs.setdefault("n_classes", 2)  # binary losses store no n_classes
    try:
        loss = get_loss(name, **kwargs)
        ok = loss.get_params() == params
    except (TypeError, ValueError):
        ok = False
    if not ok:
        fail(f"loss parameters {params} do not rebuild loss {name!r}")
    return loss


def _booster(doc: dict) -> Booster:
    """Validate the Booster's fields of a checked document, then build it."""
    params = typed(doc["params"], dict, "params", "an object")
    loss_doc = typed(doc["loss"], dict, "loss", "an object")
    boosting = _boosting_params(params, loss_doc.get("name"))
    n_features = typed(doc["n_features"], int, "n_features", "an int")
    if n_features < 1:
        fail(f"n_features={n_features} must be positive")
    loss = _loss(loss_doc)
    K = loss.n_outputs
    init_score = number_array(doc["init_score"], "init_score", "float").astype(np.float64)
    if init_score.size != K:
        fail(f"init_score has {init_score.size} values; the loss has {K} outputs")
    bin_mapper = _bin_mapper(doc["bin_mapper"], n_features, params.get("max_bins"))
    trees = []
    for m, stage in enumerate(typed(doc["trees"], list, "trees", "a list of stages")):
        if not isinstance(stage, list) or len(stage) != K:
            fail(f"stage {m} must be a list of {K} trees")
        trees.append([_tree(t, f"tree {m}/{k}", n_features, bin_mapper.n_edges_,
                            bin_mapper.is_categorical_)
                      for k, t in enumerate(stage)])
    if typed(doc["n_iter"], int, "n_iter", "an int") != len(trees):
        fail(f"n_iter={doc['n_iter']} but the file has {len(trees)} stages")
    booster = Booster(loss, bin_mapper, boosting)
    booster.init_score, booster.trees = init_score, trees
    booster.feature_names = feature_names_field(doc["feature_names"], n_features)
    booster.pandas_categories = pandas_categories_field(doc["pandas_categories"], n_features)
    booster.seed, booster.stage_weights = _continuation_state(doc, len(trees))
    booster.target_names = target_names_field(doc.get("target_names"), K)
    return booster


def feature_names_field(names, n_features: int):
    """The file's ``feature_names`` (a list of n_features strings) or None."""
    if names is not None and (not isinstance(names, list) or len(names) != n_features
                              or not all(isinstance(v, str) for v in names)):
        fail(f"n_features={n_features}: feature_names must be null or a list of that many "
             "strings")
    return names


def target_names_field(names, n_outputs: int, *, save: bool = False):
    """The file's optional ``target_names`` (a list of n_outputs strings) or None.

    Parameters
    ----------
    names : object
        The field as read (None when the file has none: files before it, and every
        model that does not know its targets' names).
    n_outputs : int
        The loss's outputs, one name each.
    save : bool, default=False
        Checking a Booster's ``target_names`` before writing it: a ``ValueError``
        naming the attribute instead of a ``ModelFormatError``.

    Returns
    -------
    list of str or None
    """
    if names is None:
        return None
    if not isinstance(names, list) or len(names) != n_outputs or not all(
            isinstance(v, str) for v in names):
        message = (f"target_names must be null or a list of {n_outputs} strings (one per "
                   f"output), got {names!r:.80}")
        if save:
            raise ValueError(f"cannot save the model: Booster.{message}")
        fail(message)
    return names


def pandas_categories_field(doc, n_features: int) -> dict:
    """The file's ``pandas_categories`` ([[column, [category, ...]], ...]) as a dict."""
    if not isinstance(doc, list) or not all(
            isinstance(p, list) and len(p) == 2 and isinstance(p[0], int)
            and not isinstance(p[0], bool) and 0 <= p[0] < n_features and isinstance(p[1], list)
            and all(isinstance(v, (str, int, float, bool)) for v in p[1]) for p in doc):
        fail("pandas_categories must be a list of [column index, [category, ...]] pairs")
    return {j: values for j, values in doc}


def load_booster(path, *, return_metadata: bool = False):
    """Load a Booster written by ``save_booster`` (or by an estimator's ``save_model``).

    Only JSON is parsed (nothing is unpickled or evaluated), and the whole
    Booster is validated before it is built; the ``estimator`` fields are
    returned as read, for the caller to check (``treeboost.load_model`` does).

    Parameters
    ----------
    path : str or path-like
        Model file.
    return_metadata : bool, default=False
        Also return the ``estimator`` fields of the file.

        .. versionadded:: 0.1.0

    Returns
    -------
    booster : Booster
        The fitted booster; its raw predictions are bit-identical to those of
        the booster that was saved, and it can continue training.
    metadata : dict
        Only with ``return_metadata``: the fields of ``ESTIMATOR_FIELDS`` as
        plain JSON values (``"estimator"`` is None for a bare Booster); also
        ``"svmlight_zero_based"`` when the file records it: the index base of the
        svmlight files the model was trained on.

    Raises
    ------
    treeboost.exceptions.ModelFormatError
        If the file is not JSON or is truncated, is of another format or of an
        unsupported ``format_version``, fails its checksum, or does not
        describe a valid Booster. The message starts with the path.
    """
    path = os.fspath(path)
    try:
        doc = _read_document(path)
        booster = _booster(doc)
    except ModelFormatError as err:
        raise ModelFormatError(f"{path}: {err}") from None
    if return_metadata:
        metadata = {key: doc[key] for key in ESTIMATOR_FIELDS}
        if "svmlight_zero_based" in doc:
            base = doc["svmlight_zero_based"]
            if not isinstance(base, bool):
                raise ModelFormatError(f"{path}: svmlight_zero_based must be true or false, "
                                       f"got {base!r:.80}")
            metadata["svmlight_zero_based"] = base
        return booster, metadata
    return booster


# Booster.save_model and Booster.load_model call these through model_view (which
# booster imports, so neither may import this module, which imports booster)
register_model_file(save_booster, load_booster)
