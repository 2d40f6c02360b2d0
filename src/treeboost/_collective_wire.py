"""The message layer of ``treeboost.collective``: headers, payloads and sockets.

Every message after the handshake is a fixed header (``_HEADER``: kind, operation,
dtype code, number of dimensions, an argument such as the broadcast root, the
operation's sequence number, the payload's length in bytes and up to eight
dimensions) followed by its payload: an array's raw bytes, a plain value
(``treeboost._plain_values``) or, for an error, a small JSON verdict.

``_Wire`` is the part of a :class:`~treeboost.collective.Collective` that sends and
receives them over the star's connections, each wait bounded, every fault raised as
a ``_Failure`` naming the rank at fault; the Collective (its subclass) runs the
operations, the rendezvous and the turning of a ``_Failure`` into a
``CollectiveError``.
"""

from __future__ import annotations

import json
import math
import selectors
import socket
import struct
import time
from collections import namedtuple

import numpy as np

from ._plain_values import NotPlain, bytes_view, c_order, pack_plain, unpack_plain

_MAX_NDIM = 8
# kind, op, dtype code, ndim, arg, seq, nbytes, shape[8]
_HEADER = struct.Struct(f"<BBBBiQQ{_MAX_NDIM}q")
_Header = namedtuple("_Header", "kind op dtype shape arg seq nbytes")

# message kinds
_EMPTY, _ARRAY, _OBJECT, _ERROR = range(4)

_OPS = ("wait_for_peers", "barrier", "allreduce_sum", "broadcast", "allgather")
_OP_CODES = {name: code for code, name in enumerate(_OPS)}

# dtype codes travel in the header; code 0 is "no array". Explicit little-endian
# dtypes: on a big-endian machine a native array is not one of these and is sent
# as a plain value with its dtype (broadcast) or refused (allreduce_sum) instead of
# sent with swapped bytes.
_DTYPES = (None,) + tuple(np.dtype(t) for t in (
    "<f8", "<i8", "<f4", "<i4", "<u8", "<u4", "<i2", "<u2", "i1", "u1", "?"))
_DTYPE_CODES = {dtype: code for code, dtype in enumerate(_DTYPES) if dtype is not None}
_SUMMABLE = (np.dtype("<f8"), np.dtype("<i8"))
_SENDMSG = hasattr(socket.socket, "sendmsg")  # not on Windows


class _Failure(Exception):
    """Internal: what went wrong in the current operation, turned into a CollectiveError.

    ``local`` marks an error of this rank's own arguments, which a rank other than
    0 reports to rank 0 (the others would otherwise wait for it until the timeout).
    """

    def __init__(self, ranks, reason: str, local: bool = False):
        super().__init__(reason)
        self.ranks = tuple(ranks)
        self.reason = reason
        self.local = local


def _describe(dtype, shape) -> str:
    return f"dtype {dtype} and shape {tuple(shape)}"


class _Wire:
    """The messages of one rank's end of the star: headers packed and checked, payloads
    sent and received within deadlines, rank 0's verdict delivered.

    A base of :class:`~treeboost.collective.Collective`, whose ``__init__`` sets what
    these methods read: ``_rank``, ``_world_size``, ``_timeout``, ``_grace``, ``_seq``
    (the current operation's number), ``_arg`` (its argument), ``_peers`` ({rank:
    connected socket}) and ``_header_buf`` (``_HEADER.size`` bytes).
    """

    def _deliver_verdict(self, name: str, verdict: bytes) -> None:
        """Rank 0: send the error to every peer, then wait (bounded) until they hang up.

        Closing a socket with unread data sends a reset, which may destroy the
        verdict still on its way; so rank 0 ends its half, reads what the peers
        still send until they close (they do as soon as they read the verdict), and
        only then closes. A silent or dead peer costs at most the grace.
        """
        header = self._pack(_ERROR, name, nbytes=len(verdict), arg=self._arg)
        deadline = time.monotonic() + self._grace
        with selectors.DefaultSelector() as selector:
            for sock in self._peers.values():
                try:
                    sock.settimeout(max(deadline - time.monotonic(), 1e-3))
                    sock.sendall(header + verdict)
                    sock.shutdown(socket.SHUT_WR)
                    selector.register(sock, selectors.EVENT_READ)
                except OSError:
                    pass
            while selector.get_map() and (remaining := deadline - time.monotonic()) > 0:
                for key, _ in selector.select(remaining):
                    try:
                        data = key.fileobj.recv(1 << 16)
                    except OSError:
                        data = b""
                    if not data:
                        selector.unregister(key.fileobj)

    def _pack(self, kind: int, name: str, code: int = 0, shape=(), nbytes: int = 0,
              arg: int = 0) -> bytes:
        dims = tuple(shape) + (0,) * (_MAX_NDIM - len(shape))
        return _HEADER.pack(kind, _OP_CODES[name], code, len(shape), arg, self._seq, nbytes,
                            *dims)

    def _check_kind(self, rank: int, header: _Header, *kinds: int) -> None:
        if header.kind not in kinds:
            raise _Failure((rank,), f"rank {rank} sent an unexpected message (kind "
                           f"{header.kind}) for {_OPS[header.op]}")

    def _expect(self, rank: int, name: str, arg: int, deadline: float) -> _Header:
        """Rank 0: the header of ``rank``'s part of this operation, checked against ours."""
        header = self._recv_header(rank, deadline)
        if header.kind == _ERROR:
            reason = self._read_verdict(rank, header, deadline)[1]
            raise _Failure((rank,), reason)
        if header.op != _OP_CODES[name]:
            raise _Failure((rank,), f"rank {rank} called {_OPS[header.op]} where rank 0 "
                                    f"called {name}")
        if header.seq != self._seq:
            raise _Failure((rank,), f"rank {rank} is at operation #{header.seq}, rank 0 at "
                                    f"#{self._seq}")
        if header.arg != arg:
            raise _Failure((rank,), f"rank {rank} broadcasts from root {header.arg}, rank 0 "
                                    f"from root {arg}")
        return header

    def _reply(self, name: str, deadline: float) -> _Header:
        """A rank other than 0: rank 0's answer to this operation, or its verdict raised."""
        header = self._recv_header(0, deadline)
        if header.kind == _ERROR:
            ranks, reason = self._read_verdict(0, header, deadline)
            raise _Failure(ranks, f"{reason} (found by rank 0)")
        if header.op != _OP_CODES[name] or header.seq != self._seq:
            raise _Failure((0,), f"rank 0 answered {_OPS[header.op]} #{header.seq} to "
                                 f"{name} #{self._seq}")
        return header

    def _read_verdict(self, rank: int, header: _Header, deadline: float):
        try:
            verdict = json.loads(self._recv_bytes(rank, header.nbytes, deadline))
            return tuple(int(r) for r in verdict["ranks"]), str(verdict["reason"])
        except (ValueError, KeyError, TypeError):
            return (rank,), f"rank {rank} reported an error that could not be read"

    def _recv_header(self, rank: int, deadline: float) -> _Header:
        self._recv_into(rank, memoryview(self._header_buf), deadline)
        kind, op, code, ndim, arg, seq, nbytes, *dims = _HEADER.unpack(self._header_buf)
        shape = tuple(dims[:ndim])
        if (kind > _ERROR or op >= len(_OPS) or code >= len(_DTYPES) or ndim > _MAX_NDIM
                or min(shape, default=0) < 0
                or (kind == _ARRAY and (code == 0 or nbytes != _DTYPES[code].itemsize
                                        * math.prod(shape)))):
            raise _Failure((rank,), f"rank {rank} sent a malformed message")
        return _Header(kind, op, code, shape, arg, seq, nbytes)

    def _recv_bytes(self, rank: int, nbytes: int, deadline: float) -> bytearray:
        out = bytearray(nbytes)
        self._recv_into(rank, memoryview(out), deadline)
        return out

    def _recv_into(self, rank: int, view: memoryview, deadline: float) -> None:
        sock = self._peers[rank]
        got, size = 0, len(view)
        while got < size:
            remaining = deadline - time.monotonic()
            try:
                if remaining <= 0:
                    raise TimeoutError
                sock.settimeout(remaining)
                n = sock.recv_into(view[got:])
            except TimeoutError:
                raise _Failure((rank,), f"rank {rank} did not answer within "
                                        f"{self._timeout:g} s") from None
            except OSError as error:
                raise _Failure((rank,), f"the connection to rank {rank} broke "
                                        f"({error.strerror or error})") from None
            if n == 0:
                raise _Failure((rank,), f"rank {rank} closed the connection")
            got += n

    def _send(self, rank: int, header: bytes, payload, deadline: float) -> None:
        sock = self._peers[rank]
        try:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            sock.settimeout(remaining)
            if not len(payload):
                sock.sendall(header)
            elif _SENDMSG:
                # header and payload in one system call, so the receiver wakes once for
                # both, not once for a packet of its own with the header
                sent = sock.sendmsg([header, payload])
                if sent < len(header):
                    sock.sendall(header[sent:])
                    sent = len(header)
                if sent - len(header) < len(payload):
                    sock.settimeout(max(deadline - time.monotonic(), 1e-3))
                    sock.sendall(memoryview(payload)[sent - len(header):])
            else:
                sock.sendall(header + bytes(payload))
        except TimeoutError:
            raise _Failure((rank,), f"rank {rank} took nothing within "
                                    f"{self._timeout:g} s") from None
        except OSError as error:
            if rank == 0:
                # rank 0 may have hung up after sending its verdict: report that instead
                self._pending_verdict()
            raise _Failure((rank,), f"the connection to rank {rank} broke "
                                    f"({error.strerror or error})") from None

    def _check_peers(self) -> None:
        """Rank 0, about to answer: fail now if a peer already gave up on this operation.

        A peer that timed out closed its connection, possibly after its part had
        arrived; sending the answer into that connection still succeeds, and rank 0
        would return a result while the peer raised. Between its part and the answer
        a peer sends nothing, so anything readable now (no more than a peek, without
        waiting) is the end of its connection or an error.
        """
        for r, sock in self._peers.items():
            try:
                sock.settimeout(0.0)
                waiting = sock.recv(1, socket.MSG_PEEK)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError as error:
                raise _Failure((r,), f"the connection to rank {r} broke "
                                     f"({error.strerror or error})") from None
            if not waiting:
                raise _Failure((r,), f"rank {r} closed the connection")
            header = self._recv_header(r, time.monotonic() + self._grace)
            if header.kind == _ERROR:
                raise _Failure((r,), self._read_verdict(r, header, time.monotonic()
                                                        + self._grace)[1])
            raise _Failure((r,), f"rank {r} sent an unexpected message")

    def _pending_verdict(self) -> None:
        """A rank other than 0: raise rank 0's verdict if one already arrived."""
        try:
            self._peers[0].settimeout(0.0)
            ready = self._peers[0].recv_into(memoryview(self._header_buf), 0, socket.MSG_PEEK)
        except OSError:
            return
        if ready:
            try:
                header = self._recv_header(0, time.monotonic() + 1e-3)
            except _Failure:
                return
            if header.kind == _ERROR:
                ranks, reason = self._read_verdict(0, header, time.monotonic() + self._grace)
                raise _Failure(ranks, f"{reason} (found by rank 0)")

    def _send_all(self, header: bytes, payload=b"") -> None:
        """Rank 0: send the same message to every other rank."""
        self._check_peers()
        deadline = time.monotonic() + self._timeout
        for r in range(1, self._world_size):
            self._send(r, header, payload, deadline)



def _encode(value, rank: int):
    """(kind, dtype code, shape, payload) of rank ``rank``'s broadcast value: raw bytes
    for a plain ndarray of a wire dtype, else the plain-value encoding."""
    if (type(value) is np.ndarray and value.dtype in _DTYPE_CODES
            and value.ndim <= _MAX_NDIM):
        array = c_order(value)
        return _ARRAY, _DTYPE_CODES[array.dtype], array.shape, bytes_view(array)
    return _OBJECT, 0, (), _pack_plain(value, rank, "broadcast value")


def _pack_plain(value, rank: int, what: str) -> bytes:
    """``value`` in the plain-value encoding; a local ``_Failure`` naming what is not plain."""
    try:
        return pack_plain(value)
    except NotPlain as error:
        raise _Failure((rank,), f"rank {rank}'s {what} cannot be sent: {error}; the "
                       "collective carries only None, bool, int, float, str, bytes, NumPy "
                       "scalars and arrays of numbers, bools, dates or text, and lists, "
                       "tuples and dicts of those", local=True) from None


def _unpack_plain(data, rank: int):
    """The plain value rank ``rank`` sent in ``data``; a ``_Failure`` naming it if not one."""
    try:
        return unpack_plain(data)
    except NotPlain as error:
        raise _Failure((rank,), f"rank {rank} sent a payload that is not a plain value "
                       f"({error}): refused, nothing of it was loaded") from None
