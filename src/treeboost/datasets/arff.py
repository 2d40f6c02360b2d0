"""ARFF reader: WEKA's Attribute-Relation File Format to a pandas DataFrame.

Data flow: ``treeboost.datasets.load`` -> :func:`read_arff` (header, then data) -> one
DataFrame with every attribute -> ``tabular.split_target`` -> ``(X, y)``.

Why our own reader: ``scipy.io.arff`` rejects files WEKA reads (string and date
attributes, sparse data, ``integer [lo,hi]`` types, spaces after commas), and liac-arff
would be a new dependency. This reader follows WEKA's tokenizer (``weka.core.converters.
ArffLoader``), so it accepts what WEKA accepts, with the exceptions listed in
:func:`read_arff`:

- commas and whitespace (spaces, tabs) both separate tokens, in the header and the data,
  so values with spaces must be quoted, as WEKA requires;
- ``'...'`` and ``"..."`` quote, with backslash escapes (``\\'``, ``\\n``, ``\\t``, ...);
- ``%`` starts a comment running to the end of the line, outside quotes;
- ``?`` unquoted is a missing value, while ``'?'`` quoted is the value "?" (anneal.arff
  declares ``{'?', ...}`` nominal attributes where "?" is a real level);
- keywords and type names are case-insensitive; a numeric type may be followed by a
  range, ``integer [1,10]``, which is ignored as WEKA ignores it.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pandas as pd

from ..exceptions import DataError
from .tabular import read_text

__all__ = ["read_arff"]

# One token per match. The leading [\s,]* skips separators; every other character is taken
# by one of the alternatives, so a line is consumed whole and nothing is skipped silently.
_TOKEN = re.compile(r"""[\s,]*(?:
     '((?:[^'\\]|\\.)*)'      # 1: single-quoted value
    |"((?:[^"\\]|\\.)*)"      # 2: double-quoted value
    |([{}])                   # 3: brace (nominal spec, sparse row)
    |([^\s,'"{}%]+)           # 4: bare word
    |(%)                      # 5: comment to the end of the line
    |(\S)                     # 6: a quote that is never closed
    )""", re.VERBOSE)
_ESCAPE = re.compile(r"\\(.)")
_ESCAPED = {"n": "\n", "t": "\t", "r": "\r"}
# A brace as a token, told apart from a quoted "{" value (tokens are str or None).
_OPEN, _CLOSE = object(), object()
_NUMERIC_TYPES = ("numeric", "real", "integer")
_JAVA_DATE = re.compile(r"'([^']*)'|([A-Za-z])\2*|[^A-Za-z']+|(')")


class _Attribute:
    """One ``@attribute`` declaration: name, kind, nominal values or date format."""

    def __init__(self, name, kind, lineno, values=None, date_format=None):
        self.name, self.kind, self.lineno = name, kind, lineno
        self.values, self.date_format = values, date_format


def read_arff(path):
    """Read an ARFF file (``.arff``, or ``.arff.gz`` gunzipped by suffix).

    Parameters
    ----------
    path : str or path-like
        The file.

    Returns
    -------
    pandas.DataFrame
        One column per attribute, in declaration order:

        - ``numeric``, ``real``, ``integer`` (with or without a ``[lo,hi]`` range):
          ``float64``;
        - nominal ``{a, b, ...}``: ``category`` with the declared categories in declared
          order, also those no row uses;
        - ``string``: ``category`` with the distinct values found in the data, sorted, so
          that the column can be used as a categorical feature (a per-row text such as a
          name then has one category per row);
        - ``date [format]``: ``float64`` seconds since 1970-01-01 UTC (WEKA stores
          milliseconds); dates without a time zone are taken as UTC. The format is a Java
          ``SimpleDateFormat`` pattern, default ``yyyy-MM-dd'T'HH:mm:ss``.

        Missing values (``?`` unquoted) are NaN. In a sparse row ``{index value, ...}`` an
        omitted numeric value is 0, an omitted nominal value is the first declared
        category (both as in WEKA), an omitted date is 0 (the epoch) and an omitted string
        is missing.

    Raises
    ------
    DataError
        For a malformed file, naming the file, the line and the problem: unknown or
        unsupported attribute type (``relational`` is not supported), duplicate attribute
        name or nominal value, unterminated quote, no ``@data`` section, wrong number of
        values, a value that is not a number, not a declared nominal value or not a date
        in the declared format, a bad sparse index, and instance weights (``{w}`` after a
        row), which WEKA reads but this reader does not.
    """
    path = os.fspath(path)
    lines = read_text(path).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    attributes, data_start = _read_header(lines, path)
    rows, row_lines = _read_data(lines, data_start, attributes, path)
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(attributes)
    frame = {}
    for attribute, values in zip(attributes, columns, strict=True):
        try:
            frame[attribute.name] = _convert_column(attribute, values)
        except _BadValue as exc:
            raise DataError(f"{path}: line {row_lines[exc.row]}: {exc.what}") from None
    return pd.DataFrame(frame, index=pd.RangeIndex(len(rows)))


def _tokenize(line, lineno, path):
    """Split one line into tokens: str values, None for ``?``, _OPEN/_CLOSE for braces."""
    tokens = []
    for match in _TOKEN.finditer(line):
        single, double, brace, word, comment, stray = match.groups()
        if word is not None:
            tokens.append(None if word == "?" else word)
        elif single is not None or double is not None:
            text = single if single is not None else double
            if "\\" in text:
                text = _ESCAPE.sub(lambda m: _ESCAPED.get(m.group(1), m.group(1)), text)
            tokens.append(text)
        elif brace is not None:
            tokens.append(_OPEN if brace == "{" else _CLOSE)
        elif comment is not None:
            break
        elif stray is not None:
            raise DataError(f"{path}: line {lineno}: unterminated quote {stray} "
                            f"(at column {match.start(6) + 1})")
    return tokens


def _read_header(lines, path):
    """Parse the header; return the attributes and the index of the first data line."""
    attributes, names = [], set()
    for index, line in enumerate(lines):
        lineno = index + 1
        tokens = _tokenize(line, lineno, path)
        if not tokens:
            continue  # blank or comment line
        keyword = tokens[0].lower() if isinstance(tokens[0], str) else None
        if keyword == "@relation":
            continue
        if keyword == "@data":
            if not attributes:
                raise DataError(f"{path}: line {lineno}: @data before any @attribute")
            return attributes, index + 1
        if keyword != "@attribute":
            raise DataError(f"{path}: line {lineno}: expected @relation, @attribute or @data, "
                            f"found {line.strip()[:40]!r}")
        attribute = _parse_attribute(tokens[1:], lineno, path)
        if attribute.name in names:
            raise DataError(f"{path}: line {lineno}: attribute {attribute.name!r} is declared "
                            f"twice")
        names.add(attribute.name)
        attributes.append(attribute)
    last = len(lines) - (lines[-1] == "")  # a final newline does not start a line
    raise DataError(f"{path}: line {last}: end of file reached without an @data line")


def _parse_attribute(tokens, lineno, path):
    """Parse the tokens after ``@attribute``: a name then a type."""
    where = f"{path}: line {lineno}"
    if len(tokens) < 2 or not isinstance(tokens[0], str):
        raise DataError(f"{where}: @attribute needs a name and a type")
    name, kind, rest = tokens[0], tokens[1], tokens[2:]
    if kind is _OPEN:
        if _CLOSE not in rest:
            raise DataError(f"{where}: '}}' expected at the end of the nominal values of "
                            f"{name!r}")
        end = rest.index(_CLOSE)
        values = ["?" if v is None else v for v in rest[:end]]
        if _OPEN in values or rest[end + 1:]:
            raise DataError(f"{where}: unexpected text after the nominal values of {name!r}")
        if len(set(values)) != len(values):
            duplicate = next(v for v in values if values.count(v) > 1)
            raise DataError(f"{where}: nominal value {duplicate!r} of {name!r} is declared "
                            f"twice")
        return _Attribute(name, "nominal", lineno, values=values)
    kind = kind.lower() if isinstance(kind, str) else ""
    if kind in _NUMERIC_TYPES:
        # WEKA ignores what follows a numeric type; accept the ranges it documents,
        # `integer [1,10]`, `real (0, inf]`, and reject other trailing text as a likely typo.
        range_text = " ".join(str(t) for t in rest)
        if rest and not re.fullmatch(r"[\[(]\s*\S*\s+\S*\s*[\])]", range_text):
            raise DataError(f"{where}: unexpected text {range_text!r} after type {kind!r}")
        return _Attribute(name, "numeric", lineno)
    if kind == "string":
        if rest:
            raise DataError(f"{where}: unexpected text after type 'string' of {name!r}")
        return _Attribute(name, "string", lineno)
    if kind == "date":
        if len(rest) > 1 or not all(isinstance(t, str) for t in rest):
            raise DataError(f"{where}: date attribute {name!r} takes one (quoted) format")
        java_format = rest[0] if rest else "yyyy-MM-dd'T'HH:mm:ss"
        return _Attribute(name, "date", lineno, date_format=_strptime_format(java_format, where))
    if kind == "relational":
        raise DataError(f"{where}: relational attributes ({name!r}) are not supported")
    shown = tokens[1] if isinstance(tokens[1], str) else "}"
    raise DataError(f"{where}: unknown attribute type {shown!r} for {name!r}")


def _read_data(lines, start, attributes, path):
    """Tokenize the data section; return rows of tokens and their 1-based line numbers."""
    n_attributes = len(attributes)
    sparse_defaults = [_sparse_default(a) for a in attributes]
    rows, row_lines = [], []
    for index in range(start, len(lines)):
        line = lines[index]
        lineno = index + 1
        if not any(c in line for c in "'\"{}%"):
            # Fast path for plain dense rows (nearly all rows of nearly all files): the
            # same split as the tokenizer, done in C.
            tokens = line.replace(",", " ").split()
            if "?" in tokens:
                tokens = [None if t == "?" else t for t in tokens]
        else:
            tokens = _tokenize(line, lineno, path)
        if not tokens:
            continue
        if tokens[0] is _OPEN:
            tokens = _sparse_row(tokens, sparse_defaults, lineno, path)
        elif _OPEN in tokens or _CLOSE in tokens:
            raise DataError(f"{path}: line {lineno}: braces in a dense row (instance weights "
                            f"'{{w}}' are not supported)")
        if len(tokens) != n_attributes:
            raise DataError(f"{path}: line {lineno}: expected {n_attributes} values, found "
                            f"{len(tokens)}")
        rows.append(tokens)
        row_lines.append(lineno)
    return rows, row_lines


def _sparse_default(attribute):
    """The value WEKA gives an attribute a sparse row leaves out (see read_arff)."""
    if attribute.kind == "numeric":
        return "0"
    if attribute.kind == "nominal":
        return attribute.values[0] if attribute.values else None
    if attribute.kind == "date":
        return _EPOCH
    return None


_EPOCH = object()  # the date a sparse row leaves out: 0, as a token no text can equal


def _sparse_row(tokens, defaults, lineno, path):
    """Expand ``{index value, ...}`` tokens into a dense row."""
    where = f"{path}: line {lineno}"
    if _CLOSE not in tokens:
        raise DataError(f"{where}: '}}' expected at the end of the sparse row")
    end = tokens.index(_CLOSE)
    if tokens[end + 1:]:
        raise DataError(f"{where}: text after the sparse row (instance weights '{{w}}' are "
                        f"not supported)")
    pairs = tokens[1:end]
    if _OPEN in pairs:
        raise DataError(f"{where}: unexpected '{{' inside the sparse row")
    if len(pairs) % 2:
        raise DataError(f"{where}: sparse row needs 'index value' pairs")
    row, previous = list(defaults), -1
    for position in range(0, len(pairs), 2):
        text, value = pairs[position], pairs[position + 1]
        try:
            index = int(text)
        except (TypeError, ValueError):
            raise DataError(f"{where}: sparse index {text!r} is not an integer") from None
        if not previous < index < len(row):
            raise DataError(f"{where}: sparse index {index} is out of order or not in "
                            f"[0, {len(row) - 1}]")
        row[index], previous = value, index
    return row


class _BadValue(Exception):
    """A value a column cannot hold; read_arff turns it into a DataError with its line."""

    def __init__(self, row, what):
        super().__init__(what)
        self.row, self.what = row, what


def _convert_column(attribute, values):
    """Convert one column of tokens to float64 or a Categorical (see read_arff)."""
    if attribute.kind == "numeric":
        if None in values:
            values = ["nan" if v is None else v for v in values]
        try:
            return np.array(values, dtype=np.float64)
        except ValueError:
            pass  # convert one by one below, to find the row to name
        column = np.empty(len(values))
        for row, value in enumerate(values):
            try:
                column[row] = float(value)
            except ValueError:
                raise _BadValue(row, f"{value!r} is not a number (attribute "
                                     f"{attribute.name!r})") from None
        return column
    if attribute.kind == "nominal":
        # Map the distinct tokens to declared codes: -1 missing, -2 not declared.
        codes, uniques = pd.factorize(np.array(values, dtype=object))
        lookup = {value: code for code, value in enumerate(attribute.values)}
        declared = np.array([lookup.get(u, -2) for u in uniques] + [-1], dtype=np.int64)
        codes = declared[codes]  # code -1 of factorize (None) picks the appended -1
        if (codes == -2).any():
            row = int(np.flatnonzero(codes == -2)[0])
            raise _BadValue(row, f"{values[row]!r} is not one of the values declared for "
                                 f"{attribute.name!r} on line {attribute.lineno}")
        return pd.Categorical.from_codes(codes, dtype=pd.CategoricalDtype(attribute.values))
    if attribute.kind == "string":
        return pd.Categorical(values)
    return _date_column(attribute, values)


def _date_column(attribute, values):
    """Parse dates with the attribute's format into float64 seconds since the epoch."""
    present = [i for i, v in enumerate(values) if v is not None and v is not _EPOCH]
    seconds = np.full(len(values), np.nan)
    seconds[[i for i, v in enumerate(values) if v is _EPOCH]] = 0.0
    if not present:
        return seconds
    # utc=True: naive times are taken as UTC, zoned ones converted to it.
    stamps = pd.to_datetime(pd.Series([values[i] for i in present], dtype=object),
                            format=attribute.date_format, errors="coerce", utc=True)
    if stamps.isna().any():
        row = present[int(np.flatnonzero(stamps.isna().to_numpy())[0])]
        raise _BadValue(row, f"{values[row]!r} is not a date in the format of "
                             f"{attribute.name!r} ({attribute.date_format})")
    epoch = pd.Timestamp("1970-01-01", tz="UTC")
    seconds[present] = ((stamps - epoch) / pd.Timedelta(seconds=1)).to_numpy(np.float64)
    return seconds


# Java SimpleDateFormat letters -> strptime directives, by run length where it matters.
_JAVA_LETTERS = {
    "y": lambda n: "%y" if n == 2 else "%Y", "M": lambda n: {1: "%m", 2: "%m", 3: "%b"}.get(
        n, "%B"), "d": "%d", "H": "%H", "k": "%H", "h": "%I", "K": "%I", "m": "%M", "s": "%S",
    "S": "%f", "a": "%p", "E": lambda n: "%A" if n >= 4 else "%a", "D": "%j", "z": "%Z",
    "Z": "%z", "X": "%z",
}


def _strptime_format(java_format, where):
    """Translate a Java ``SimpleDateFormat`` pattern to a ``strptime`` format."""
    parts = []
    for match in _JAVA_DATE.finditer(java_format):
        quoted, letter, stray = match.groups()
        if stray is not None:
            raise DataError(f"{where}: unterminated quote in date format {java_format!r}")
        if quoted is not None:
            parts.append(quoted.replace("%", "%%") if quoted else "'")
        elif letter is not None:
            directive = _JAVA_LETTERS.get(letter)
            if directive is None:
                raise DataError(f"{where}: date format letter {letter!r} in {java_format!r} "
                                f"is not supported")
            parts.append(directive(len(match.group(0))) if callable(directive) else directive)
        else:
            parts.append(match.group(0).replace("%", "%%"))
    return "".join(parts)
