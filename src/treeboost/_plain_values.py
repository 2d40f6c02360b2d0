"""The plain-value encoding of ``Collective.broadcast`` and ``Collective.allgather``.

Plain values, not pickles: the collective's session token travels in clear, so
whoever reads it could join a group; a pickle from such a peer would run its code on
every member. So the payloads carry only data, in a small tagged encoding: None,
bools, ints, floats, str, bytes, NumPy scalars, lists, tuples and dicts of those, and
ndarrays of numbers, bools, dates or fixed-width text (by dtype, shape and raw
bytes). Decoding builds nothing else, and refuses (``NotPlain``, with the reason)
anything that is not such a value, a pickle included.

One tag byte, then the value: None, False, True; an int as int64 ('q') or, beyond
it, as its decimal digits; a float as a double; str (UTF-8) and bytes with a u32
length; a list, tuple or dict with a u32 count and its items (a dict's keys and
values alternating); an ndarray or NumPy scalar as its dtype string (e.g. "<f8"),
shape and raw C-order bytes. Nothing else is encoded or decoded: no class is
looked up and no callable is called on the receiving side but the constructors of
these types.

``treeboost.collective`` turns a ``NotPlain`` into its own failure, naming the rank.
"""

from __future__ import annotations

import math
import struct
import sys

import numpy as np

__all__ = ["NotPlain", "bytes_view", "c_order", "pack_plain", "unpack_plain"]

(_T_NONE, _T_FALSE, _T_TRUE, _T_INT, _T_BIGINT, _T_FLOAT, _T_STR, _T_BYTES, _T_LIST,
 _T_TUPLE, _T_DICT, _T_ARRAY, _T_SCALAR) = range(1, 14)
_U8 = struct.Struct("<B")
_U32 = struct.Struct("<I")
_I64 = struct.Struct("<q")
_U64 = struct.Struct("<Q")
_F64 = struct.Struct("<d")
#: nesting deeper than this is refused both ways (a bounded recursion on each side)
_MAX_DEPTH = 64
#: array kinds sent by dtype and bytes: numbers, bools, dates and times, fixed-width
#: text; never objects, structured or void dtypes (whose bytes are not the values)
_PLAIN_KINDS = frozenset("biufcmMSU")
_CONTAINERS = {list: _T_LIST, tuple: _T_TUPLE}


class NotPlain(Exception):
    """A value that is not a plain value, or bytes that do not encode one."""


def bytes_view(array: np.ndarray) -> memoryview:
    """The bytes of a C-contiguous array, writeable where the array is (no copy)."""
    return memoryview(array.reshape(-1).view(np.uint8))


def c_order(value) -> np.ndarray:
    """``value`` as a C-contiguous array of its shape (``np.ascontiguousarray`` would
    make a 0-d array 1-d)."""
    array = np.asarray(value)
    return array if array.flags.c_contiguous else array.copy(order="C")


def pack_plain(value) -> bytes:
    """``value`` in the plain-value encoding.

    Parameters
    ----------
    value : object
        None, bool, int, float, str, bytes, a NumPy scalar, an ndarray of numbers,
        bools, dates or fixed-width text, or a list, tuple or dict of those (nested
        up to 64 deep).

    Returns
    -------
    bytes
        The encoding.

    Raises
    ------
    NotPlain
        ``value`` is not a plain value (the message names what is not).
    """
    out: list = []
    _pack(value, out, 0)
    return b"".join(out)


def unpack_plain(data):
    """The plain value that ``data`` encodes.

    Parameters
    ----------
    data : bytes-like
        One value's encoding, nothing after it.

    Returns
    -------
    object
        The value: arrays fresh, aligned and writeable (not views into ``data``).

    Raises
    ------
    NotPlain
        ``data`` is not one plain value's encoding (the message says where not).
    """
    reader = _Reader(data)
    value = _unpack(reader, 0)
    if reader.pos != len(reader.view):
        raise NotPlain(f"{len(reader.view) - reader.pos} bytes follow the value")
    return value


def _plain_dtype(dtype: np.dtype) -> bool:
    return dtype.kind in _PLAIN_KINDS and not dtype.hasobject and dtype.fields is None \
        and dtype.subdtype is None


def _pack(value, out: list, depth: int) -> None:
    if depth >= _MAX_DEPTH:
        raise NotPlain(f"it is nested more than {_MAX_DEPTH} deep")
    kind = type(value)
    if value is None:
        out.append(_U8.pack(_T_NONE))
    elif kind is bool:
        out.append(_U8.pack(_T_TRUE if value else _T_FALSE))
    elif kind is int:
        if -(1 << 63) <= value < (1 << 63):
            out.append(_U8.pack(_T_INT) + _I64.pack(value))
        else:
            try:
                digits = str(value).encode("ascii")
            except ValueError:  # beyond sys.get_int_max_str_digits()
                raise NotPlain("an int of more than "
                                f"{sys.get_int_max_str_digits()} digits is too long") from None
            _pack_bytes(_T_BIGINT, digits, out)
    elif kind is float:
        out.append(_U8.pack(_T_FLOAT) + _F64.pack(value))
    elif kind is str:
        _pack_bytes(_T_STR, value.encode("utf-8", "surrogatepass"), out)
    elif kind in (bytes, bytearray):
        _pack_bytes(_T_BYTES, bytes(value), out)
    elif kind in _CONTAINERS:
        out.append(_U8.pack(_CONTAINERS[kind]) + _U32.pack(len(value)))
        for item in value:
            _pack(item, out, depth + 1)
    elif kind is dict:
        out.append(_U8.pack(_T_DICT) + _U32.pack(len(value)))
        for key, item in value.items():
            _pack(key, out, depth + 1)
            _pack(item, out, depth + 1)
    elif kind is np.ndarray or isinstance(value, np.generic):
        array = c_order(value)
        if not _plain_dtype(array.dtype) or array.ndim > 255:
            raise NotPlain(f"an array of dtype {array.dtype} is not a plain value")
        dtype = array.dtype.str.encode("ascii")
        out.append(_U8.pack(_T_ARRAY if kind is np.ndarray else _T_SCALAR)
                   + _U8.pack(len(dtype)) + dtype + _U8.pack(array.ndim)
                   + b"".join(_U64.pack(n) for n in array.shape) + _U64.pack(array.nbytes))
        out.append(bytes_view(array) if array.size else b"")
    else:
        raise NotPlain(f"{_type_name(value)} is not a plain value")


def _pack_bytes(tag: int, data: bytes, out: list) -> None:
    out.append(_U8.pack(tag) + _U32.pack(len(data)))
    out.append(data)


def _type_name(value) -> str:
    kind = type(value)
    return f"a {kind.__module__}.{kind.__qualname__}" if kind.__module__ != "builtins" \
        else f"a {kind.__qualname__}"


class _Reader:
    """Bounds-checked reads from a received payload."""

    def __init__(self, data):
        self.view = memoryview(data).cast("B")
        self.pos = 0

    def take(self, n: int) -> memoryview:
        if n > len(self.view) - self.pos:
            raise NotPlain(f"it ends within a value (byte {self.pos} of {len(self.view)})")
        self.pos += n
        return self.view[self.pos - n:self.pos]

    def unpack(self, fmt: struct.Struct):
        return fmt.unpack(self.take(fmt.size))[0]


def _unpack(reader: _Reader, depth: int):
    if depth >= _MAX_DEPTH:
        raise NotPlain(f"it is nested more than {_MAX_DEPTH} deep")
    at = reader.pos
    tag = reader.unpack(_U8)
    if tag == _T_NONE:
        return None
    if tag in (_T_FALSE, _T_TRUE):
        return tag == _T_TRUE
    if tag == _T_INT:
        return reader.unpack(_I64)
    if tag == _T_FLOAT:
        return reader.unpack(_F64)
    if tag in (_T_BIGINT, _T_STR, _T_BYTES):
        data = bytes(reader.take(reader.unpack(_U32)))
        try:
            if tag == _T_BIGINT:
                if not data.lstrip(b"-").isdigit():
                    raise ValueError("not digits")
                return int(data)
            return data.decode("utf-8", "surrogatepass") if tag == _T_STR else data
        except ValueError:
            raise NotPlain(f"the {'int' if tag == _T_BIGINT else 'str'} at byte {at} "
                            "is malformed") from None
    if tag in (_T_LIST, _T_TUPLE):
        items = [_unpack(reader, depth + 1) for _ in range(reader.unpack(_U32))]
        return items if tag == _T_LIST else tuple(items)
    if tag == _T_DICT:
        out = {}
        for _ in range(reader.unpack(_U32)):
            key = _unpack(reader, depth + 1)
            try:
                out[key] = _unpack(reader, depth + 1)
            except TypeError:  # a list as a key
                raise NotPlain(f"the dict at byte {at} has an unhashable key") from None
        return out
    if tag in (_T_ARRAY, _T_SCALAR):
        return _unpack_array(reader, tag, at)
    raise NotPlain(f"unknown tag 0x{tag:02x} at byte {at}"
                    + (": a pickle" if tag == 0x80 and at == 0 else ""))


def _unpack_array(reader: _Reader, tag: int, at: int):
    name = bytes(reader.take(reader.unpack(_U8)))
    try:
        # a dtype string is parsed, never evaluated; the kinds are checked below
        dtype = np.dtype(name.decode("ascii"))
    except (TypeError, ValueError, UnicodeDecodeError):
        raise NotPlain(f"the array at byte {at} has dtype {name!r}") from None
    if not _plain_dtype(dtype) or dtype.str.encode("ascii") != name:
        raise NotPlain(f"the array at byte {at} has dtype {name!r}, not a plain one")
    shape = tuple(reader.unpack(_U64) for _ in range(reader.unpack(_U8)))
    nbytes = reader.unpack(_U64)
    if tag == _T_SCALAR and shape != () or nbytes != dtype.itemsize * math.prod(shape):
        raise NotPlain(f"the array at byte {at} has {nbytes} bytes for shape {shape} "
                        f"of {dtype}")
    # a fresh, aligned array (the kernels read them), not a view into the payload
    out = np.empty(shape, dtype)
    if nbytes:
        bytes_view(out)[:] = reader.take(nbytes)
    return out[()] if tag == _T_SCALAR else out
