"""Collective operations between training processes over TCP: sum, broadcast, gather.

Data-parallel training (issue 15) runs one long-lived training task per worker,
each holding its own rows. Every node histogram must be summed across the tasks,
and every task must get the same bits, so that every task takes the same split
decisions. Going through a cluster scheduler for each of the ~30 histograms of a
tree is too slow (8 ms a round trip with Dask actors, measured), so the tasks talk
to each other directly, through a :class:`Collective`.

Topology: a star. Rank 0 listens; every other rank keeps one TCP connection to it.
Each operation is one round: every rank other than 0 sends its part to rank 0,
which reads them in rank order, computes the result and sends it back to each.

Wire format (``treeboost._collective_wire``): after a handshake, every message is
a fixed header (``_HEADER``: kind, operation, dtype code, number of dimensions, an
argument such as the broadcast root, the operation's sequence number, the payload's
length in bytes and up to eight dimensions) followed by the payload: an array's raw bytes
(little-endian, C order, sent from the array itself with the header in one
``sendmsg``, read with ``recv_into`` straight into the destination array or a
reused buffer: no copy), a plain value (``broadcast`` of anything else and
``allgather``: see below) or, for an error, a small JSON verdict. Every rank
other than 0 sends one message per operation and then waits for rank 0's answer,
so at most one message is in flight each way on a connection.

Plain values, not pickles: the session token travels in clear, so whoever reads
it could join a group; a pickle from such a peer would run its code on every
member. So ``broadcast`` and ``allgather`` carry only data, in a small tagged
encoding (``treeboost._plain_values``): None, bools, ints, floats, str,
bytes, NumPy scalars, lists, tuples and dicts of those, and ndarrays of numbers,
bools, dates or fixed-width text (by dtype, shape and raw bytes). Decoding builds
nothing else, and refuses (one ``CollectiveError`` naming the peer) anything
that is not such a value, a pickle included; rank 0 decodes every part before it
forwards it, so a bad part never reaches the other ranks.

The handshake (``_HELLO``) carries a magic, the protocol version, the world size,
the rank and the session token; rank 0 answers with ``_WELCOME``: accepted, or
refused with the reason.
"""

from __future__ import annotations

import hmac
import json
import secrets
import socket
import struct
import time

import numpy as np

from ._collective_wire import (  # noqa: F401  (_OP_CODES: the wire format, read by tests)
    _ARRAY,
    _DTYPE_CODES,
    _DTYPES,
    _EMPTY,
    _ERROR,
    _HEADER,
    _MAX_NDIM,
    _OBJECT,
    _OP_CODES,
    _SUMMABLE,
    _describe,
    _encode,
    _Failure,
    _pack_plain,
    _unpack_plain,
    _Wire,
)
from ._plain_values import bytes_view

__all__ = ["PROTOCOL_VERSION", "Collective", "CollectiveError"]

# 2: broadcast and allgather carry plain values (1 carried pickles)
PROTOCOL_VERSION = 2

_MAGIC = b"TBCL"
_HELLO = struct.Struct("<4sHIIH")  # magic, version, world size, rank, token length
_WELCOME = struct.Struct("<4sBH")  # magic, 0 accepted / 1 refused, message length
# a joining rank sends its hello right after connecting: a connection that stays
# silent this long is a stray one, and must not hold up the real ranks' joins
_HELLO_WAIT = 5.0
_CONNECT_RETRY = 0.05


class CollectiveError(RuntimeError):
    """A collective operation failed: a peer died, closed, went silent or disagreed.

    Raised on every surviving rank; the :class:`Collective` that raised it is
    closed.

    Parameters
    ----------
    message : str
        What failed, where and why.
    ranks : tuple of int, default ()
        The rank(s) at fault, as far as known: the dead, silent or disagreeing peer.
    operation : str, optional
        The operation that failed: ``"join"``, ``"wait_for_peers"``,
        ``"barrier"``, ``"allreduce_sum"``, ``"broadcast"`` or ``"allgather"``.

    Attributes
    ----------
    ranks : tuple of int
    operation : str or None
    """

    def __init__(self, message: str, ranks=(), operation: str | None = None):
        super().__init__(message)
        self.ranks = tuple(ranks)
        self.operation = operation


class Collective(_Wire):
    """One rank's end of a group of processes that sum, broadcast and gather together.

    Every participant creates one, with its ``rank`` and the common ``world_size``
    and rendezvous ``address``: rank 0 listens there, the others connect to it
    (a star: rank 0 gathers each operation's parts, computes the result and sends
    it back). :meth:`host` and :meth:`join` are the usual ways in: rank 0 may
    listen on port 0 (any free port) and hand its :attr:`address` and
    :attr:`token` to the others. Rank 0 accepts the others' joins in
    :meth:`wait_for_peers`, which its first operation calls if it was not called
    before; a join returns once rank 0 has accepted it.

    Every rank must call the same operations in the same order; each operation is
    a synchronisation point.

    Parameters
    ----------
    rank : int
        This process's rank, ``0 <= rank < world_size``; each rank exactly once.
    world_size : int
        The number of participants.
    address : tuple of (str, int)
        Rank 0: the host and port to listen on (port 0: any free port).
        Other ranks: rank 0's :attr:`address`.
    token : str
        The session token, the same on every rank: a join with another token is
        refused, so that two trainings on the same hosts cannot cross-connect. Not a
        password: it travels in clear. What a peer that has it can send is data
        only (:meth:`broadcast` and :meth:`allgather` carry plain values, never
        pickles), so it cannot run code on the members; it can still send wrong
        numbers.
    timeout : float, default 60.0
        Seconds a rank waits for a silent peer in an operation before it gives up;
        choose it above the longest time one rank may spend computing between two
        operations while the others already wait.
    connect_timeout : float, optional
        Seconds a rank other than 0 keeps trying to join (rank 0 need not listen
        yet), and rank 0 waits for all joins in :meth:`wait_for_peers`;
        ``timeout`` if None.

    Attributes
    ----------
    rank : int
    world_size : int
    address : tuple of (str, int)
        Where rank 0 listens (its actual port when it was given port 0).
    token : str
    timeout : float
    closed : bool

    Raises
    ------
    CollectiveError
        A rank other than 0 could not join: rank 0 did not answer within
        ``connect_timeout``, or it refused the join (another session token, world
        size or protocol version, or a rank already taken).
    OSError
        Rank 0 cannot listen on ``address`` (e.g. the port is taken).

    Notes
    -----
    **Order of the sum.** :meth:`allreduce_sum` adds the parts in rank order,
    ``((a0 + a1) + a2) + ...``, always on rank 0, and sends that one result to
    every rank. Floating-point addition is not associative: a sum in arrival order
    would change from run to run with the network's timing, and a sum computed on
    each rank separately could differ between ranks. A fixed order gives the same
    bits on every rank, and the same bits from run to run (those of
    ``np.add.reduce`` over the parts stacked in rank order), so every rank takes
    the same split decisions and a distributed training is reproducible.

    **Faults.** Every blocking wait is bounded; nothing waits forever. When a peer
    dies (its connection is closed or reset) or says nothing within ``timeout``,
    when ranks call different operations or pass arrays of different dtypes or
    shapes, or when a rank passes an argument the operation cannot take, every
    surviving rank raises one :class:`CollectiveError` that names the operation
    and the rank(s) at fault, and closes its Collective. Rank 0 finds the fault
    (it reads every part) and sends its verdict to the other ranks before it
    closes; they wait for the result up to ``timeout`` plus a short grace
    (``min(1 s, timeout / 4)``) so that this verdict, which names the failed rank,
    reaches them before their own timeout, which can only name rank 0. Rank 0
    spends up to the same grace delivering the verdict. So a dead peer is reported
    at once, and a silent one within ``timeout`` plus the grace. A rank that
    raised leaves nothing behind: no thread (there are none), no open socket.
    Before it answers, rank 0 checks (without waiting) that no peer has hung up
    since it sent its part; a peer that gives up while rank 0 is already sending
    the answer leaves rank 0, and the ranks answered before it, with the result:
    they raise at their next operation.

    A Collective is used from one thread at a time.

    Examples
    --------
    On rank 0::

        with Collective.host(world_size=2) as group:
            send_to_workers(group.address, group.token)   # by any means
            hist = group.allreduce_sum(hist)

    On rank 1::

        with Collective.join(address, rank=1, world_size=2, token=token) as group:
            hist = group.allreduce_sum(hist)
    """

    def __init__(self, rank: int, world_size: int, address, *, token: str,
                 timeout: float = 60.0, connect_timeout: float | None = None):
        if world_size < 1:
            raise ValueError(f"world_size must be at least 1, got {world_size}")
        if not 0 <= rank < world_size:
            raise ValueError(f"rank must be in [0, {world_size}), got {rank}")
        if not timeout > 0 or (connect_timeout is not None and not connect_timeout > 0):
            raise ValueError("timeout and connect_timeout must be positive")
        self._rank = int(rank)
        self._world_size = int(world_size)
        self._token = str(token)
        self._timeout = float(timeout)
        self._connect_timeout = float(timeout if connect_timeout is None else connect_timeout)
        self._grace = min(1.0, 0.25 * self._timeout)
        self._seq = 0
        self._seconds = 0.0  # spent in operations (sending, receiving, waiting for peers)
        self._bytes = 0  # of the arrays this rank summed (allreduce_sum)
        self._started = 0.0  # when the current operation began
        self._arg = 0  # the current operation's argument (broadcast root)
        self._closed = False
        self._listener = None
        self._peers: dict[int, socket.socket] = {}  # rank 0: every other rank; else {0: ...}
        self._header_buf = bytearray(_HEADER.size)
        self._scratch = np.empty(0, np.uint8)  # rank 0's receive buffer, grown as needed
        if self._rank == 0:
            host, port = address
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            self._listener = socket.create_server((host, port), family=family,
                                                  backlog=max(world_size, 8))
            self._address = self._listener.getsockname()[:2]
        else:
            self._address = (address[0], int(address[1]))
            self._join()

    @classmethod
    def host(cls, world_size: int, host: str = "127.0.0.1", port: int = 0, *,
             token: str | None = None, timeout: float = 60.0,
             connect_timeout: float | None = None) -> Collective:
        """Rank 0's Collective, listening; hand its ``address`` and ``token`` to the others.

        Parameters
        ----------
        world_size : int
            The number of participants, rank 0 included.
        host : str, default "127.0.0.1"
            The interface to listen on; one the other ranks reach (their host's
            address, or "0.0.0.0" for every interface, in which case tell them a
            reachable name rather than ``address``'s "0.0.0.0").
        port : int, default 0
            The port; 0 for any free one.
        token : str, optional
            The session token; a fresh random one if None.
        timeout, connect_timeout : float
            As in :class:`Collective`.

        Returns
        -------
        Collective
            Rank 0, listening; the joins are accepted in :meth:`wait_for_peers`.
        """
        if token is None:
            token = secrets.token_hex(16)
        return cls(0, world_size, (host, port), token=token, timeout=timeout,
                   connect_timeout=connect_timeout)

    @classmethod
    def join(cls, address, rank: int, world_size: int, *, token: str,
             timeout: float = 60.0, connect_timeout: float | None = None) -> Collective:
        """A rank other than 0 joining rank 0 at ``address``.

        Parameters
        ----------
        address : tuple of (str, int)
            Rank 0's :attr:`address`.
        rank : int
            This process's rank, ``1 <= rank < world_size``.
        world_size : int
            The number of participants; must be rank 0's.
        token : str
            Rank 0's :attr:`token`.
        timeout, connect_timeout : float
            As in :class:`Collective`.

        Returns
        -------
        Collective
            Joined: rank 0 accepted this rank.

        Raises
        ------
        CollectiveError
            Rank 0 refused the join or did not answer within ``connect_timeout``.
        """
        if rank == 0:
            raise ValueError("rank 0 hosts the group (Collective.host); join with rank >= 1")
        return cls(rank, world_size, address, token=token, timeout=timeout,
                   connect_timeout=connect_timeout)

    # -- properties ---------------------------------------------------------------

    @property
    def rank(self) -> int:
        """This process's rank."""
        return self._rank

    @property
    def world_size(self) -> int:
        """The number of participants."""
        return self._world_size

    @property
    def address(self) -> tuple:
        """Where rank 0 listens, as (host, port)."""
        return self._address

    @property
    def token(self) -> str:
        """The session token."""
        return self._token

    @property
    def timeout(self) -> float:
        """Seconds an operation waits for a silent peer."""
        return self._timeout

    @property
    def closed(self) -> bool:
        """Whether the Collective is closed (by :meth:`close` or by an error)."""
        return self._closed

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return (f"Collective(rank={self._rank}, world_size={self._world_size}, "
                f"address={self._address!r}, {state})")

    def __enter__(self) -> Collective:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def stats(self) -> dict:
        """What this rank's operations have cost so far.

        Returns
        -------
        dict
            ``operations``: how many were called (each one round trip through rank
            0); ``seconds``: wall time spent in them, waiting for slower peers
            included; ``allreduce_bytes``: the size of the arrays summed.
        """
        return {"operations": self._seq, "seconds": self._seconds,
                "allreduce_bytes": self._bytes}

    def close(self) -> None:
        """Close every connection (and rank 0's listening socket); idempotent.

        The other ranks see the connection close at their next operation, and raise.
        """
        self._closed = True
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        for sock in self._peers.values():
            sock.close()
        self._peers = {}

    # -- rendezvous ---------------------------------------------------------------

    def _join(self) -> None:
        deadline = time.monotonic() + self._connect_timeout
        where = f"rank 0 at {self._address[0]}:{self._address[1]}"
        sock = None
        while sock is None:
            try:
                sock = socket.create_connection(
                    self._address, timeout=max(deadline - time.monotonic(), 1e-3))
            except OSError as error:  # rank 0 may not listen yet: try again until the deadline
                if time.monotonic() + _CONNECT_RETRY >= deadline:
                    raise CollectiveError(
                        f"join: rank {self._rank} could not connect to {where} within "
                        f"{self._connect_timeout:g} s ({error})", (0,), "join") from None
                time.sleep(_CONNECT_RETRY)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        token = self._token.encode()
        try:
            sock.settimeout(max(deadline - time.monotonic(), 1e-3))
            sock.sendall(_HELLO.pack(_MAGIC, PROTOCOL_VERSION, self._world_size, self._rank,
                                     len(token)) + token)
            magic, refused, length = _WELCOME.unpack(_recv_exact(sock, _WELCOME.size, deadline))
            message = _recv_exact(sock, length, deadline).decode(errors="replace")
        except (OSError, EOFError) as error:
            sock.close()
            reason = ("did not answer" if isinstance(error, TimeoutError)
                      else f"closed the connection ({error or 'EOF'})")
            raise CollectiveError(
                f"join: {where} {reason} within {self._connect_timeout:g} s of rank "
                f"{self._rank}'s join", (0,), "join") from None
        if magic != _MAGIC or refused:
            sock.close()
            if magic != _MAGIC:
                message = "it does not speak the treeboost collective protocol"
            raise CollectiveError(f"join: {where} refused rank {self._rank}: {message}",
                                  (self._rank,), "join")
        self._peers = {0: sock}

    def wait_for_peers(self) -> None:
        """Rank 0: accept every other rank's join, within ``connect_timeout``.

        Called by rank 0's first operation if not before; does nothing on other
        ranks or once done. Joins that do not belong (another session token, world
        size or protocol version, a rank out of range or already taken) are refused
        with a message, and the wait goes on for the right ones.

        Raises
        ------
        CollectiveError
            Some rank did not join in time (it names them); the ranks that joined
            receive the error too.
        """
        self._check_open("wait_for_peers")
        if self._listener is None:
            return
        deadline = time.monotonic() + self._connect_timeout
        try:
            while len(self._peers) < self._world_size - 1:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    missing = [r for r in range(1, self._world_size) if r not in self._peers]
                    which = ("rank " if len(missing) == 1 else "ranks ") + ", ".join(
                        map(str, missing))
                    raise _Failure(missing, f"{which} did not join within "
                                            f"{self._connect_timeout:g} s")
                self._listener.settimeout(remaining)
                try:
                    conn, _ = self._listener.accept()
                except TimeoutError:
                    continue
                self._admit(conn, min(deadline, time.monotonic() + _HELLO_WAIT))
        except _Failure as failure:
            self._fail("wait_for_peers", failure)
        except BaseException:
            self.close()
            raise
        self._listener.close()
        self._listener = None

    def _admit(self, conn: socket.socket, deadline: float) -> None:
        """Read a joining rank's hello; keep the connection or refuse it."""
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            magic, version, world_size, rank, length = _HELLO.unpack(
                _recv_exact(conn, _HELLO.size, deadline))
            token = _recv_exact(conn, length, deadline) if magic == _MAGIC else b""
        except (OSError, EOFError):  # a stray connection, not a rank: forget it
            conn.close()
            return
        reason = None
        if magic != _MAGIC:
            reason = "not a treeboost collective hello"
        elif version != PROTOCOL_VERSION:
            reason = f"protocol version {version}, rank 0 speaks {PROTOCOL_VERSION}"
        elif not hmac.compare_digest(token, self._token.encode()):
            reason = "wrong session token (a join meant for another group?)"
        elif world_size != self._world_size:
            reason = f"world size {world_size}, rank 0's is {self._world_size}"
        elif not 1 <= rank < self._world_size:
            reason = f"rank {rank} is out of range [1, {self._world_size})"
        elif rank in self._peers:
            reason = f"rank {rank} has already joined"
        message = (reason or "welcome").encode()
        try:
            conn.settimeout(max(deadline - time.monotonic(), 1e-3))
            conn.sendall(_WELCOME.pack(_MAGIC, reason is not None, len(message)) + message)
        except OSError:
            reason = reason or "gone"
        if reason is not None:
            conn.close()
        else:
            self._peers[rank] = conn

    # -- operations ---------------------------------------------------------------

    def barrier(self) -> None:
        """Return once every rank has entered the barrier.

        Raises
        ------
        CollectiveError
            On every surviving rank, when a rank failed or another operation was called.
        """
        def body():
            if self._rank == 0:
                deadline = time.monotonic() + self._timeout
                for r in range(1, self._world_size):
                    header = self._expect(r, "barrier", 0, deadline)
                    self._check_kind(r, header, _EMPTY)
                self._send_all(self._pack(_EMPTY, "barrier"))
            else:
                self._send(0, self._pack(_EMPTY, "barrier"), b"", self._deadline())
                header = self._reply("barrier", self._deadline() + self._grace)
                self._check_kind(0, header, _EMPTY)
        self._run("barrier", body)

    def allreduce_sum(self, array: np.ndarray) -> np.ndarray:
        """Sum ``array`` over the ranks, in place: every rank gets the same bits.

        The sum is ``((a0 + a1) + a2) + ...`` in rank order, computed on rank 0
        (see the class's Notes: why a fixed order).

        Parameters
        ----------
        array : ndarray of dtype float64 or int64
            This rank's part; C-contiguous and writeable, of the same dtype and shape
            on every rank (at most 8 dimensions). Overwritten with the sum.

        Returns
        -------
        ndarray
            ``array``, now holding the sum.

        Raises
        ------
        CollectiveError
            On every surviving rank: a rank died, went silent, or passed another
            dtype or shape, or an array this method cannot take. ``array`` then holds
            its part, the sum or something in between.
        """
        def body():
            code = self._summable(array)
            data = bytes_view(array)
            header = self._pack(_ARRAY, "allreduce_sum", code, array.shape, array.nbytes)
            self._bytes += array.nbytes
            if self._world_size == 1:
                return array
            if self._rank == 0:
                deadline = time.monotonic() + self._timeout
                if self._scratch.size < array.nbytes:
                    self._scratch = np.empty(array.nbytes, np.uint8)
                part = self._scratch[:array.nbytes]
                other = part.view(array.dtype).reshape(array.shape)
                for r in range(1, self._world_size):
                    received = self._expect(r, "allreduce_sum", 0, deadline)
                    self._check_kind(r, received, _ARRAY)
                    if received.dtype != code or received.shape != array.shape:
                        raise _Failure((r,), f"rank {r} passed an array of "
                                       f"{_describe(_DTYPES[received.dtype], received.shape)}"
                                       f", rank 0 one of {_describe(array.dtype, array.shape)}")
                    self._recv_into(r, memoryview(part), deadline)
                    np.add(array, other, out=array)
                self._send_all(header, data)
            else:
                self._send(0, header, data, self._deadline())
                deadline = self._deadline() + self._grace
                received = self._reply("allreduce_sum", deadline)
                self._check_kind(0, received, _ARRAY)
                if received.dtype != code or received.shape != array.shape:
                    raise _Failure((0,), "rank 0 answered with an array of "
                                   f"{_describe(_DTYPES[received.dtype], received.shape)}")
                self._recv_into(0, data, deadline)
            return array
        return self._run("allreduce_sum", body)

    def broadcast(self, value=None, root: int = 0):
        """Rank ``root``'s ``value``, on every rank.

        Parameters
        ----------
        value : object
            On ``root``: an ndarray of a numeric or bool dtype (sent as raw bytes)
            or another plain value: None, bool, int, float, str, bytes, a NumPy
            scalar, an ndarray of numbers, bools, dates or fixed-width text, or a
            list, tuple or dict of those (nested up to 64 deep). Ignored on the
            other ranks.
        root : int, default 0
            The rank whose value is sent; the same on every rank.

        Returns
        -------
        object
            On ``root``, ``value`` itself; elsewhere a copy: arrays C-contiguous and
            writeable, of the same dtype and shape; containers of the same types.

        Raises
        ------
        CollectiveError
            On every surviving rank: a rank died, went silent or named another root,
            ``value`` is not a plain value, or the root sent something that is not
            one (a pickle, say: refused, never loaded).
        """
        def body():
            if not 0 <= root < self._world_size:
                raise _Failure((self._rank,), f"root {root} is out of range "
                               f"[0, {self._world_size})", local=True)
            if self._rank == root:
                kind, code, shape, payload = _encode(value, self._rank)
            else:
                kind, code, shape, payload = _EMPTY, 0, (), b""
            if self._world_size == 1:
                return value
            if self._rank == 0:
                deadline = time.monotonic() + self._timeout
                decoded = None  # root r > 0's plain value
                for r in range(1, self._world_size):
                    received = self._expect(r, "broadcast", root, deadline)
                    if r != root:
                        self._check_kind(r, received, _EMPTY)
                        continue
                    self._check_kind(r, received, _ARRAY, _OBJECT)
                    kind, code, shape = received.kind, received.dtype, received.shape
                    buffer = np.empty(received.nbytes, np.uint8)
                    payload = memoryview(buffer)
                    self._recv_into(r, payload, deadline)
                    if kind == _OBJECT:  # decoded (checked) before anyone else gets it
                        decoded = _unpack_plain(payload, r)
                self._check_peers()
                message = self._pack(kind, "broadcast", code, shape, len(payload), root)
                ack = self._pack(_EMPTY, "broadcast", arg=root)
                deadline = time.monotonic() + self._timeout
                for r in range(1, self._world_size):
                    if r == root:
                        self._send(r, ack, b"", deadline)
                    else:
                        self._send(r, message, payload, deadline)
                if root == 0:
                    return value
                if kind == _ARRAY:
                    return buffer.view(_DTYPES[code]).reshape(shape)
                return decoded
            header = self._pack(kind, "broadcast", code, shape, len(payload), root)
            self._send(0, header, payload, self._deadline())
            deadline = self._deadline() + self._grace
            received = self._reply("broadcast", deadline)
            if self._rank == root:
                self._check_kind(0, received, _EMPTY)
                return value
            self._check_kind(0, received, _ARRAY, _OBJECT)
            if received.kind == _ARRAY:
                out = np.empty(received.shape, _DTYPES[received.dtype])
                self._recv_into(0, bytes_view(out), deadline)
                return out
            return _unpack_plain(self._recv_bytes(0, received.nbytes, deadline), 0)
        return self._run("broadcast", body, root)

    def allgather(self, obj) -> list:
        """Every rank's ``obj``, in rank order, on every rank.

        For small things (a sum for the initial score, parts of a metric, a leaf's
        rows): each object is encoded as a plain value, and rank 0 forwards all of
        them to each rank.

        Parameters
        ----------
        obj : object
            This rank's object: a plain value, as :meth:`broadcast` takes.

        Returns
        -------
        list
            ``world_size`` objects, rank 0's first; this rank's entry is ``obj``
            itself, the others are decoded copies.

        Raises
        ------
        CollectiveError
            On every surviving rank: a rank died, went silent, or its object is not
            a plain value (or what it sent is not one: refused, never loaded).
        """
        def body():
            mine = _pack_plain(obj, self._rank, "object")
            if self._world_size == 1:
                return [obj]
            if self._rank == 0:
                deadline = time.monotonic() + self._timeout
                parts, out = [mine], [obj]
                for r in range(1, self._world_size):
                    received = self._expect(r, "allgather", 0, deadline)
                    self._check_kind(r, received, _OBJECT)
                    parts.append(self._recv_bytes(r, received.nbytes, deadline))
                    # decoded (checked) before it is forwarded
                    out.append(_unpack_plain(parts[-1], r))
                # the parts travel as they came (a list of bytes), decoded once each
                payload = _pack_plain(parts, 0, "object")
                self._send_all(self._pack(_OBJECT, "allgather", nbytes=len(payload)), payload)
                return out
            self._send(0, self._pack(_OBJECT, "allgather", nbytes=len(mine)), mine,
                       self._deadline())
            deadline = self._deadline() + self._grace
            received = self._reply("allgather", deadline)
            self._check_kind(0, received, _OBJECT)
            parts = _unpack_plain(self._recv_bytes(0, received.nbytes, deadline), 0)
            if (type(parts) is not list or len(parts) != self._world_size
                    or any(type(p) is not bytes for p in parts)):
                raise _Failure((0,), "rank 0 sent a malformed allgather answer")
            return [obj if r == self._rank else _unpack_plain(part, r)
                    for r, part in enumerate(parts)]
        return self._run("allgather", body)

    # -- the machinery of one operation ---------------------------------------------

    def _run(self, name: str, body, arg: int = 0):
        """Run one operation: its sequence number, and every failure made a CollectiveError."""
        self._check_open(name)
        if self._listener is not None:
            self.wait_for_peers()
        self._seq += 1
        self._started = time.monotonic()
        self._arg = arg
        start = time.perf_counter()
        try:
            return body()
        except _Failure as failure:
            self._fail(name, failure)
        except BaseException:
            # anything else (an interrupt, a bug) leaves the stream mid-message
            self.close()
            raise
        finally:
            self._seconds += time.perf_counter() - start

    def _deadline(self) -> float:
        return self._started + self._timeout

    def _check_open(self, name: str) -> None:
        if self._closed:
            raise CollectiveError(f"{name}: this Collective (rank {self._rank}) is closed",
                                  (), name)

    def _fail(self, name: str, failure: _Failure):
        """Report ``failure`` to the other ranks as far as this rank can, close, raise."""
        where = f"{name} (operation #{self._seq})" if self._seq else name
        verdict = json.dumps({"ranks": list(failure.ranks), "reason": failure.reason}).encode()
        if self._rank == 0:
            self._deliver_verdict(name, verdict)
        elif failure.local and 0 in self._peers:
            try:  # rank 0 reads it in place of this rank's part, and tells the others
                self._send(0, self._pack(_ERROR, name, nbytes=len(verdict), arg=self._arg),
                           verdict, time.monotonic() + self._grace)
            except _Failure:
                pass
        self.close()
        raise CollectiveError(f"{where} failed on rank {self._rank}: {failure.reason}",
                              failure.ranks, name)

    def _summable(self, array) -> int:
        if (type(array) is not np.ndarray or array.dtype not in _SUMMABLE
                or not array.flags.c_contiguous or not array.flags.writeable
                or array.ndim > _MAX_NDIM):
            got = (f"an array of {_describe(array.dtype, array.shape)}"
                   + ("" if array.flags.c_contiguous else ", not C-contiguous")
                   + ("" if array.flags.writeable else ", read-only")
                   if isinstance(array, np.ndarray) else f"a {type(array).__name__}")
            raise _Failure((self._rank,), f"allreduce_sum takes a C-contiguous, writeable "
                           f"float64 or int64 ndarray of at most {_MAX_NDIM} dimensions; "
                           f"rank {self._rank} passed {got}", local=True)
        return _DTYPE_CODES[array.dtype]


def _recv_exact(sock: socket.socket, nbytes: int, deadline: float) -> bytes:
    """``nbytes`` from ``sock`` before ``deadline`` (handshake only); EOFError if it closes."""
    out = bytearray(nbytes)
    view, got = memoryview(out), 0
    while got < nbytes:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        sock.settimeout(remaining)
        n = sock.recv_into(view[got:])
        if n == 0:
            raise EOFError("connection closed")
        got += n
    return bytes(out)
