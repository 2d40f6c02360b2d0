"""svmlight / LibSVM reader, with the query groups of learning-to-rank files.

Data flow: a file (gunzipped by suffix) -> scikit-learn's ``load_svmlight_file`` parses
the ``label [qid:N] index:value ...`` lines -> :func:`read_svmlight` applies the index
base, ``n_features`` and the query groups (from ``qid:`` tokens or a LightGBM-style
``<file>.query`` companion) -> ``(X, y, group)``, with ``X`` a CSR matrix and ``group``
the query sizes that ``treeboost.Dataset(..., group=group)`` takes.
:func:`read_svmlight_files` reads files that must agree (a training file and its test
file) with one index base, decided over all of them, and one width.
``treeboost.datasets.load`` dispatches here by suffix, or by :func:`is_svmlight` for a
file whose name says nothing (LightGBM's ``rank.train``).

scikit-learn's parser reports neither file nor line; when it fails, the file is read
again line by line in Python (:func:`_line_problem`) to name the first bad line.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import warnings
import zlib

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

from ..exceptions import DataError

__all__ = ["SVMLIGHT_SUFFIXES", "is_svmlight", "read_svmlight", "read_svmlight_files"]

#: Suffixes ``treeboost.datasets.load`` reads as svmlight, lower case.
SVMLIGHT_SUFFIXES = (".svm", ".svm.gz", ".svmlight", ".svmlight.gz", ".libsvm", ".libsvm.gz")

# The parser keeps feature indices in a C int.
_MAX_INDEX = 2**31 - 1

# Bytes read to sniff a file's type: enough for any leading comment block and the first
# data line of all but very wide files; a longer first line is judged on its complete
# tokens.
_SNIFF_BYTES = 1 << 16

_NUMBER = rb"[+-]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|nan|inf|infinity)"
_SNIFF_LABEL = re.compile(_NUMBER, re.IGNORECASE)
_SNIFF_QID = re.compile(rb"qid:[+-]?\d+")
_SNIFF_PAIR = re.compile(rb"\d+:" + _NUMBER, re.IGNORECASE)


def read_svmlight(path, n_features=None, zero_based="auto"):
    """Read an svmlight / LibSVM file, with its query groups if it has any.

    Each non-blank line is ``label [qid:N] index:value index:value ...`` with the
    indices increasing; absent features are 0, text after ``#`` is a comment, and
    blank lines are skipped.

    Parameters
    ----------
    path : str or path-like
        The file; gunzipped when its name ends in ``.gz`` (any case).
    n_features : int, default=None
        Number of columns of ``X``; ``None`` means the largest index in the file (after
        the index base is applied) plus one. Give a training file's width when reading
        its test file, whose last features may never be non-zero (and its index base
        as ``zero_based``).
    zero_based : bool or "auto", default="auto"
        Whether the first feature is index 0 (True) or 1 (False). ``"auto"`` means
        one-based unless some index in the file is 0, as in scikit-learn's
        ``load_svmlight_file``: decided by this file alone, so a zero-based file that
        never uses feature 0 is read one-based. For a file that must match another (a
        test file, new data for a model), read them together with
        :func:`read_svmlight_files`, or pass the base the other was read with.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features), dtype float64
        The features; zeros written explicitly in the file are stored, NaN values kept.
    y : ndarray of shape (n_samples,), dtype float64
        The labels: the first token of each line.
    group : ndarray of shape (n_queries,), dtype int64, or None
        Sizes of the query groups in row order, as ``treeboost.Dataset(group=...)``
        takes them: from the runs of equal ``qid:`` values, or from the file
        ``<path>.query`` beside ``path`` (LightGBM's format: one positive size per
        line, summing to the number of rows). ``None`` when there is neither.

    Warns
    -----
    UserWarning
        With ``n_features`` given and ``zero_based="auto"``, when the file cannot tell
        its base: it never uses index 0, and its largest index is below
        ``n_features`` (so both bases fit). It is read one-based.

    Raises
    ------
    DataError
        When the file is missing, not valid gzip despite its suffix, or malformed: a
        token that is not a number, an ``index:value`` pair or a ``qid:`` integer,
        indices not increasing, index 0 in a one-based file, an index beyond
        ``n_features``, ``qid:`` on some rows only, a query whose rows are not
        contiguous, both ``qid:`` tokens and a ``.query`` file, or a ``.query`` file
        that does not add up to the rows. The message names the file and the line (and
        both files for a ``.query`` mismatch).

    Examples
    --------
    >>> X, y, group = read_svmlight("rank.train")  # doctest: +SKIP

    A test file, read to match a one-based training file:

    >>> X_test, y_test, group_test = read_svmlight("rank.test", n_features=X.shape[1],
    ...                                            zero_based=False)  # doctest: +SKIP
    """
    _check_arguments(n_features, zero_based)
    parsed = _Parsed(os.fspath(path))
    if zero_based == "auto":
        _warn_undecidable([parsed], n_features)
        zero_based = parsed.uses_zero
    return parsed.build(zero_based, n_features)


def read_svmlight_files(paths, n_features=None, zero_based="auto"):
    """Read svmlight files that must agree, such as a training file and its test file.

    All are read with one index base and to one width, so that column ``j`` is the same
    feature in each. Reading them one by one with ``zero_based="auto"`` decides the base
    per file: a zero-based test file in which feature 0 never occurs would be read
    one-based, every column moved one to the left.

    Parameters
    ----------
    paths : sequence of str or path-like
        The files, at least one; each as :func:`read_svmlight` reads it (gunzipped by
        suffix, query groups from ``qid:`` tokens or a ``<path>.query`` file).
    n_features : int, default=None
        Number of columns of every ``X``; ``None`` means as many as the widest file.
    zero_based : bool or "auto", default="auto"
        Whether the first feature is index 0 (True) or 1 (False) in every file.
        ``"auto"`` decides once over all the files: zero-based when any of them uses
        index 0, else one-based (scikit-learn's ``load_svmlight_files`` does the same).
        To read more files later as these were read (a model's new data), pass the
        ``zero_based`` this function returns.

    Returns
    -------
    files : list of (X, y, group)
        One triple per path, in order, as :func:`read_svmlight` returns it; every ``X``
        has the same number of columns.
    zero_based : bool
        The index base the files were read with: ``"auto"`` resolved.

    Raises
    ------
    DataError
        As :func:`read_svmlight`, for the first file that fails; in particular for a
        file with index 0 read one-based (``zero_based=False``), which cannot be right.
    ValueError
        When ``paths`` is empty, or for an invalid ``n_features`` or ``zero_based``.

    Warns
    -----
    UserWarning
        Naming a file that looks one-based while the files are read zero-based: it never
        uses index 0, and its largest index is beyond the largest of every file that
        does use index 0. Read zero-based, such a file's features sit one column to the
        right of the others'. Also, as :func:`read_svmlight` warns, with ``n_features``
        given and ``zero_based="auto"`` when no file uses index 0 and every index is
        below ``n_features``.

    Examples
    --------
    >>> (train, test), zero_based = read_svmlight_files(
    ...     ["rank.train", "rank.test"])  # doctest: +SKIP
    >>> X, y, group = train  # doctest: +SKIP
    """
    _check_arguments(n_features, zero_based)
    paths = [os.fspath(p) for p in paths]
    if not paths:
        raise ValueError("read_svmlight_files: paths is empty; give at least one file")
    parsed = [_Parsed(p) for p in paths]
    if zero_based == "auto":
        _warn_undecidable(parsed, n_features)
        zero_based = any(p.uses_zero for p in parsed)
    if zero_based:
        _warn_one_based_looking(parsed)
    if n_features is None:
        n_features = max(p.width(zero_based) for p in parsed)
    return [p.build(zero_based, n_features or None) for p in parsed], zero_based


def _check_arguments(n_features, zero_based):
    if not (isinstance(zero_based, bool) or isinstance(zero_based, str) and zero_based == "auto"):
        raise ValueError(f"zero_based must be True, False or 'auto', got {zero_based!r}")
    if n_features is not None and (isinstance(n_features, bool)
                                   or not isinstance(n_features, (int, np.integer))
                                   or n_features < 1):
        raise ValueError(f"n_features must be a positive integer or None, got {n_features!r}")


def _warn_undecidable(parsed, n_features):
    """Warn when ``n_features`` says the files must match other data, and "auto" cannot
    tell their base from them: no index 0, and every index below ``n_features``, so
    both bases fit. They are read one-based, as "auto" decides."""
    if n_features is None or any(p.uses_zero for p in parsed):
        return
    largest = max(p.max_index for p in parsed)
    if 0 <= largest < n_features:
        names = ", ".join(p.path for p in parsed)
        warnings.warn(
            f"{names}: never uses feature index 0 and stays below n_features={n_features}, "
            f"so it fits either index base; read one-based, as zero_based='auto' decides "
            f"from the data read here alone. If the data it must match is zero-based, "
            f"every feature is one column off: pass zero_based as that data was read, or "
            f"read the files together with read_svmlight_files", UserWarning, stacklevel=3)


def _warn_one_based_looking(parsed):
    """Warn about files that look one-based among files read zero-based.

    A zero-based file may well lack feature 0 (a rare feature, a small test file); but
    one that lacks it and also reaches past every file that has it is what a one-based
    file looks like next to zero-based ones. With no file using index 0 there is
    nothing to compare with, and nothing is said.
    """
    with_zero = [p for p in parsed if p.uses_zero]
    if not with_zero:
        return
    reference = max(with_zero, key=lambda p: p.max_index)
    for p in parsed:
        if not p.uses_zero and p.max_index > reference.max_index:
            warnings.warn(
                f"{p.path} never uses feature index 0 and its largest index {p.max_index} "
                f"is beyond that of {reference.path} ({reference.max_index}), which uses "
                f"index 0: it looks one-based, yet is read zero-based like "
                f"{reference.path}; if it is one-based, its features sit one column to "
                f"the right of the others': write all the files in one index base",
                UserWarning, stacklevel=3)


class _Parsed:
    """One svmlight file parsed with its raw indices, before the index base is applied."""

    def __init__(self, path):
        self.path = path
        self.data = data = _read_bytes(path)
        try:
            # zero_based=True: no index shift and index 0 accepted, so that the base,
            # and the line of an index 0 in a one-based file, are decided here.
            parsed, y = load_svmlight_file(io.BytesIO(data), zero_based=True,
                                           dtype=np.float64)
        except (ValueError, OverflowError) as exc:
            raise _malformed(path, data, exc) from exc
        self.y = np.asarray(y, dtype=np.float64)
        self.values = np.asarray(parsed.data, dtype=np.float64)
        self.indices = np.asarray(parsed.indices, dtype=np.int64)
        self.indptr = np.asarray(parsed.indptr, dtype=np.int64)
        # The Python pass over the lines (row -> line number, query ids) costs about as
        # much as the parsing: done up front only when there may be qid: tokens, else
        # on error.
        self.lines, self.qids = _scan_rows(path, data) if b"qid" in data else (None, None)
        self.uses_zero = bool(self.indices.size and self.indices.min() == 0)
        self.max_index = int(self.indices.max()) if self.indices.size else -1

    def line_of(self, position):
        """The line of the file that holds entry ``position`` of ``indices``."""
        rows = _scan_rows(self.path, self.data)[0] if self.lines is None else self.lines
        return rows[int(np.searchsorted(self.indptr, position, side="right")) - 1]

    def width(self, zero_based):
        """Columns the file needs with this index base."""
        return self.max_index + 1 if zero_based else max(self.max_index, 0)

    def build(self, zero_based, n_features):
        """``(X, y, group)`` with this index base and width (None: the file's own)."""
        path, indices = self.path, self.indices
        if not zero_based:
            if self.uses_zero:
                raise DataError(f"{path}: line {self.line_of(np.argmin(indices))}: feature "
                                f"index 0 in a one-based file (zero_based=False)")
            indices = indices - 1
        width = self.width(zero_based)
        if n_features is None:
            n_features = width
        elif n_features < width:
            first = np.flatnonzero(indices >= n_features)[0]
            hint = ""
            if zero_based and not self.uses_zero:
                hint = "; the file never uses index 0: is it one-based?"
            raise DataError(f"{path}: line {self.line_of(first)}: feature index "
                            f"{indices[first] + (not zero_based)} is beyond "
                            f"n_features={n_features}{hint}")
        X = sp.csr_matrix((self.values, indices, self.indptr),
                          shape=(len(self.y), int(n_features)))
        group = None if self.qids is None else _groups_from_qids(path, self.lines, self.qids)
        query_path = path + ".query"
        if os.path.isfile(query_path):
            if self.qids is not None:
                raise DataError(f"{path}: has qid: tokens and {query_path} gives query "
                                f"sizes too; keep one of them")
            group = _read_query_file(query_path, path, len(self.y))
        return X, self.y, group


def is_svmlight(path):
    """Tell whether a file's first data line reads as svmlight.

    Used by ``treeboost.datasets.load`` for a file whose suffix names no format.

    Parameters
    ----------
    path : str or path-like
        The file; gunzipped when its name ends in ``.gz`` (any case).

    Returns
    -------
    bool
        True when the first line that is neither blank nor only a comment is
        ``label [qid:N] index:value ...``: a number, then an optional ``qid:`` integer,
        then ``integer:number`` pairs, at least one pair unless there is a ``qid:``
        token. False for anything else, including a file that cannot be read.
    """
    path = os.fspath(path)
    opener = gzip.open if path.lower().endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            head = f.read(_SNIFF_BYTES)
    except (OSError, EOFError, zlib.error):  # gzip.BadGzipFile is an OSError
        return False
    lines = head.split(b"\n")
    for number, line in enumerate(lines):
        truncated = number == len(lines) - 1 and len(head) == _SNIFF_BYTES
        if truncated and b"#" not in line:
            # The line goes on past what was read: its last token may be cut short.
            line = line.rsplit(None, 1)[0] if len(line.split()) > 1 else b""
        tokens = line.split(b"#", 1)[0].split()
        if tokens:
            return _sniff_tokens(tokens)
    return False


def _sniff_tokens(tokens):
    """Whether the tokens of one line are ``label [qid:N] index:value ...``."""
    if not _SNIFF_LABEL.fullmatch(tokens[0]):
        return False
    rest = tokens[1:]
    has_qid = bool(rest) and _SNIFF_QID.fullmatch(rest[0]) is not None
    if has_qid:
        rest = rest[1:]
    return (has_qid or bool(rest)) and all(_SNIFF_PAIR.fullmatch(t) for t in rest)


def _read_bytes(path):
    """The bytes of ``path``, gunzipped when its name ends in ``.gz``."""
    try:
        if path.lower().endswith(".gz"):
            with gzip.open(path, "rb") as f:
                return f.read()
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError as exc:
        raise DataError(f"{path}: no such file") from exc
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise DataError(f"{path}: not a readable gzip file ({exc})") from exc


def _data_lines(data):
    """Yield ``(line number, tokens)`` for each row, split as scikit-learn splits them."""
    # Iterating a BytesIO splits at b"\n" exactly as the parser iterating the file does,
    # so the rows counted here are its rows.
    for number, line in enumerate(io.BytesIO(data), 1):
        hash_at = line.find(b"#")
        tokens = (line if hash_at < 0 else line[:hash_at]).split()
        if tokens:
            yield number, tokens


def _scan_rows(path, data):
    """Line number of each row, and the row's query id (None when no row has one).

    Raises DataError for a malformed ``qid:`` token or ``qid:`` on some rows only.
    """
    lines, qids = [], []
    for number, tokens in _data_lines(data):
        lines.append(number)
        if len(tokens) > 1 and tokens[1].startswith(b"qid"):
            qid = _parse_qid(tokens[1])
            if qid is None:
                raise DataError(f"{path}: line {number}: {_show(tokens[1])} is not "
                                f"qid:<integer>")
            qids.append(qid)
        else:
            qids.append(None)
    with_qid = [q is not None for q in qids]
    if not any(with_qid):
        return np.array(lines, dtype=np.int64), None
    if not all(with_qid):
        # Name the first row that breaks the convention the first row set.
        odd = with_qid.index(not with_qid[0])
        what = "has a qid: token" if with_qid[odd] else "has no qid: token"
        raise DataError(f"{path}: line {lines[odd]}: {what}, unlike line {lines[0]}; "
                        f"either every row or no row has one")
    return np.array(lines, dtype=np.int64), np.array(qids, dtype=np.int64)


def _parse_qid(token):
    """The integer of a ``qid:N`` token, or None when it is not one."""
    if not token.startswith(b"qid:"):
        return None
    try:
        value = int(token[4:])
    except ValueError:
        return None
    return value if -(2**63) <= value < 2**63 else None


def _groups_from_qids(path, lines, qids):
    """Query sizes from the per-row ids; each id must label one contiguous run of rows."""
    starts = np.flatnonzero(np.r_[True, qids[1:] != qids[:-1]])
    first_run = {}
    for position, start in enumerate(starts):
        qid = int(qids[start])
        if qid in first_run:
            earlier = first_run[qid]
            end = starts[earlier + 1] - 1
            raise DataError(f"{path}: line {lines[start]}: qid {qid} again after other "
                            f"queries (its rows ended at line {lines[end]}); the rows of a "
                            f"query must be contiguous")
        first_run[qid] = position
    return np.diff(np.r_[starts, len(qids)]).astype(np.int64)


def _read_query_file(query_path, path, n_rows):
    """Query sizes from a LightGBM ``.query`` file: one positive integer per line."""
    with open(query_path, "rb") as f:
        text = f.read()
    sizes = []
    for number, line in enumerate(text.splitlines(), 1):
        token = line.strip()
        if not token:
            continue
        try:
            size = int(token)
        except ValueError:
            size = 0
        if size < 1:
            raise DataError(f"{query_path}: line {number}: {_show(token)} is not a "
                            f"positive query size")
        sizes.append(size)
    group = np.array(sizes, dtype=np.int64)
    if group.sum() != n_rows:
        raise DataError(f"{query_path}: the query sizes add up to {int(group.sum())} rows, "
                        f"but {path} has {n_rows}")
    return group


def _malformed(path, data, exc):
    """A DataError naming the first line the parser must have failed on."""
    for number, tokens in _data_lines(data):
        problem = _line_problem(tokens)
        if problem:
            return DataError(f"{path}: line {number}: {problem}")
    # Not expected: the line checks mirror the parser's. Keep its message at least.
    return DataError(f"{path}: not a valid svmlight file ({exc})")


def _line_problem(tokens):
    """What is wrong with the tokens of one line, or None; the parser's rules."""
    if _float(tokens[0]) is None:
        return f"label {_show(tokens[0])} is not a number"
    rest = tokens[1:]
    if rest and rest[0].startswith(b"qid"):
        if _parse_qid(rest[0]) is None:
            return f"{_show(rest[0])} is not qid:<integer>"
        rest = rest[1:]
    previous = -1
    for token in rest:
        index, colon, value = token.partition(b":")
        if not colon:
            return f"expected index:value, found {_show(token)}"
        if index == b"qid":
            return f"{_show(token)} must come right after the label"
        try:
            index = int(index)
        except ValueError:
            return f"feature index {_show(index)} in {_show(token)} is not an integer"
        if index < 0:
            return f"negative feature index {index}"
        if index > _MAX_INDEX:
            return f"feature index {index} is too large (at most {_MAX_INDEX})"
        if index <= previous:
            return (f"feature indices must increase along a line: {index} comes after "
                    f"{previous}")
        if _float(value) is None:
            return f"value {_show(value)} of feature {index} is not a number"
        previous = index
    return None


def _float(token):
    """``float(token)``, or None when the token is not a number."""
    try:
        return float(token)
    except ValueError:
        return None


def _show(token, limit=40):
    """A token quoted for an error message, cut short when long."""
    text = token.decode("utf-8", "replace")
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")
