"""treeboost.collective: sums equal to NumPy's in rank order, bit for bit, on every rank;
broadcast, allgather, barrier; refused joins; and faults (a killed process, a silent
peer, disagreeing arguments) raised on every surviving rank within the timeout.

Most tests run the ranks as threads of this process (the sockets are real); the
killed-process test runs them as processes (spawn). Every test joins what it started
and asserts that nothing is left alive.
"""

import multiprocessing
import os
import signal
import socket
import threading
import time

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from treeboost.collective import Collective, CollectiveError

JOIN_LIMIT = 30.0  # a thread or process of a test that is not done by then has hung


def _run_group(world_size, fn, timeout=5.0):
    """Run ``fn(group)`` on one thread per rank; each rank's result or exception, by rank."""
    host = Collective.host(world_size, timeout=timeout)
    results = [None] * world_size

    def rank_main(rank):
        try:
            group = host if rank == 0 else Collective.join(
                host.address, rank, world_size, token=host.token, timeout=timeout)
            with group:
                results[rank] = fn(group)
        except Exception as error:  # the test looks at it
            results[rank] = error

    threads = [threading.Thread(target=rank_main, args=(r,), daemon=True)
               for r in range(world_size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(JOIN_LIMIT)
    assert not any(t.is_alive() for t in threads), "a rank hung"
    return results


def _parts(world_size, shape, seed):
    """Each rank's part: magnitudes from 1e-6 to 1e6, so that the order of the sum matters."""
    rng = np.random.default_rng(seed)
    return [np.asarray(rng.normal(size=shape) * 10.0 ** rng.integers(-6, 7, size=shape))
            for _ in range(world_size)]


# -- sums -------------------------------------------------------------------------------

@pytest.mark.parametrize("world_size", [2, 3, 4])
def test_allreduce_sum_is_numpys_rank_order_sum_bit_for_bit(world_size):
    shapes = [(28, 256, 3), (5,), (), (0, 3), (2, 3, 4, 5)]
    parts = {shape: _parts(world_size, shape, seed=len(shape)) for shape in shapes}

    def fn(group):
        out = []
        for _ in range(2):  # the second round reuses rank 0's receive buffer
            for shape in shapes:
                mine = parts[shape][group.rank].copy()
                result = group.allreduce_sum(mine)
                assert result is mine  # in place
                out.append(result)
        return out

    results = _run_group(world_size, fn)
    expected = [np.add.reduce(np.stack(parts[s]), axis=0) for s in shapes] * 2
    for rank, got in enumerate(results):
        assert not isinstance(got, BaseException), f"rank {rank}: {got!r}"
        for g, e in zip(got, expected, strict=True):
            assert g.shape == e.shape
            assert_array_equal(g, e)  # bits: no tolerance
            assert g.tobytes() == e.tobytes()
    if world_size >= 3:
        # the test can tell the orders apart: the reverse order gives other bits
        big = parts[(28, 256, 3)]
        assert not np.array_equal(np.add.reduce(np.stack(big[::-1]), axis=0), expected[0])


def test_allreduce_sum_int64():
    rng = np.random.default_rng(0)
    parts = [rng.integers(-2**60, 2**60, size=(28, 256, 3)) for _ in range(3)]
    results = _run_group(3, lambda g: g.allreduce_sum(parts[g.rank].copy()))
    for got in results:
        assert got.dtype == np.int64
        assert_array_equal(got, parts[0] + parts[1] + parts[2])


def test_stats_count_the_operations_and_the_bytes_summed():
    def fn(group):
        group.barrier()
        group.allreduce_sum(np.zeros((4, 8)))
        group.allgather(group.rank)
        if group.rank == 1:
            time.sleep(0.2)  # rank 0 waits for it in the next operation
        group.allreduce_sum(np.zeros(3, dtype=np.int64))
        return group.stats()

    stats = _run_group(2, fn)
    for s in stats:
        assert s["operations"] == 4
        assert s["allreduce_bytes"] == 4 * 8 * 8 + 3 * 8
    assert stats[0]["seconds"] >= 0.2 > stats[1]["seconds"]


def test_one_rank_needs_no_peers():
    with Collective.host(1, timeout=1.0) as group:
        a = np.arange(6.0).reshape(2, 3)
        assert_array_equal(group.allreduce_sum(a), np.arange(6.0).reshape(2, 3))
        assert group.broadcast("x") == "x"
        assert group.allgather(7) == [7]
        group.barrier()


# -- broadcast, allgather, barrier ------------------------------------------------------

@pytest.mark.parametrize("root", [0, 1, 2])
def test_broadcast(root):
    values = [np.arange(24, dtype=np.float32).reshape(2, 3, 4) * (root + 1),
              np.arange(10, dtype=np.int64)[::2],  # not contiguous: sent as a copy
              np.array([True, False, True]),
              {"bins": [0.5, 1.5], "name": "f0"},
              np.array(["a", "bc"])]  # not a wire dtype: a plain value (dtype <U2)

    def fn(group):
        sent = [v if group.rank == root else None for v in values]
        return sent, [group.broadcast(v, root=root) for v in sent]

    results = _run_group(3, fn)
    for rank, (sent, got) in enumerate(results):
        for s, g, v in zip(sent, got, values, strict=True):
            if rank == root:
                assert g is s  # the root keeps its own object
            if isinstance(v, np.ndarray):
                assert g.dtype == v.dtype
                assert_array_equal(g, v)
            else:
                assert g == v


def test_allgather_in_rank_order():
    def fn(group):
        return group.allgather({"rank": group.rank, "sum": float(group.rank) / 3})

    for got in _run_group(4, fn):
        assert got == [{"rank": r, "sum": r / 3} for r in range(4)]


def test_barrier_waits_for_the_last_rank():
    entered = {}

    def fn(group):
        time.sleep(0.1 * group.rank)
        entered[group.rank] = time.monotonic()
        group.barrier()
        return time.monotonic()

    left = _run_group(3, fn)
    last_entry = max(entered.values())
    assert all(t >= last_entry for t in left)


# -- arguments that disagree: an error on every rank, at once ---------------------------

def _shape_mismatch(rank, bad):
    return np.zeros((4, 5) if rank == bad else (4, 6))


def _dtype_mismatch(rank, bad):
    return np.zeros(6, np.int64 if rank == bad else np.float64)


def _unsupported(rank, bad):
    return np.zeros(6, np.float32 if rank == bad else np.float64)


def _not_contiguous(rank, bad):
    return np.zeros((6, 2))[:, 0] if rank == bad else np.zeros(6)


@pytest.mark.parametrize(("make", "bad", "message"), [
    (_shape_mismatch, 2, "rank 2 passed an array of dtype float64 and shape (4, 5), rank 0 "
                         "one of dtype float64 and shape (4, 6)"),
    (_dtype_mismatch, 1, "rank 1 passed an array of dtype int64 and shape (6,), rank 0 one "
                         "of dtype float64"),
    (_unsupported, 1, "rank 1 passed an array of dtype float32 and shape (6,)"),
    (_unsupported, 0, "rank 0 passed an array of dtype float32 and shape (6,)"),
    (_not_contiguous, 2, "rank 2 passed an array of dtype float64 and shape (6,), not "
                         "C-contiguous"),
], ids=["shape", "dtype", "float32-rank1", "float32-rank0", "not-contiguous"])
def test_allreduce_sum_disagreement_raises_on_every_rank(make, bad, message):
    def fn(group):
        group.allreduce_sum(np.ones(3))  # a good round first
        start = time.monotonic()
        try:
            group.allreduce_sum(make(group.rank, bad))
        except CollectiveError as error:
            return error, time.monotonic() - start, group.closed
        return None

    for rank, got in enumerate(_run_group(3, fn, timeout=5.0)):
        assert got is not None, f"rank {rank} did not raise"
        error, elapsed, closed = got
        assert error.operation == "allreduce_sum"
        assert error.ranks == (bad,)
        assert str(error).startswith(f"allreduce_sum (operation #2) failed on rank {rank}: ")
        assert message in str(error)
        assert elapsed < 2.0  # found at once, not at the timeout
        assert closed


@pytest.mark.parametrize("bad", [0, 2])
def test_an_object_that_is_not_a_plain_value_fails_every_rank(bad):
    def fn(group):
        try:
            group.allgather((lambda: None) if group.rank == bad else group.rank)
        except CollectiveError as error:
            return error
        return None

    for error in _run_group(3, fn):
        assert isinstance(error, CollectiveError)
        assert error.ranks == (bad,)
        assert f"rank {bad}'s object cannot be sent" in str(error)


def test_different_operations_raise_on_every_rank():
    def fn(group):
        try:
            if group.rank == 1:
                group.barrier()
            else:
                group.allreduce_sum(np.ones(4))
        except CollectiveError as error:
            return error
        return None

    for error in _run_group(3, fn):
        assert isinstance(error, CollectiveError)
        assert error.ranks == (1,)
        assert "rank 1 called barrier where rank 0 called allreduce_sum" in str(error)


def test_a_closed_collective_raises():
    def fn(group):
        group.barrier()
        group.close()
        with pytest.raises(CollectiveError, match="closed"):
            group.allreduce_sum(np.ones(2))
        return True

    assert _run_group(2, fn) == [True, True]


# -- joins --------------------------------------------------------------------------------

def _accepting(host):
    """Rank 0 accepting joins on a thread, then one allreduce of ones (the group's check)."""
    out = {}

    def main():
        try:
            with host:
                host.wait_for_peers()
                out["sum"] = host.allreduce_sum(np.ones(3))
        except Exception as error:
            out["error"] = error

    thread = threading.Thread(target=main, daemon=True)
    thread.start()
    return thread, out


def _allreduce_on_threads(groups):
    out = {}

    def main(group):
        with group:
            out[group.rank] = group.allreduce_sum(np.ones(3))

    threads = [threading.Thread(target=main, args=(g,), daemon=True) for g in groups]
    for t in threads:
        t.start()
    return threads, out


@pytest.mark.parametrize(("bad_join", "message"), [
    (dict(rank=1, world_size=3, token="another"), "wrong session token"),
    (dict(rank=1, world_size=4), "world size 4, rank 0's is 3"),
    (dict(rank=1, world_size=3), "rank 1 has already joined"),
], ids=["token", "world-size", "duplicate-rank"])
def test_join_refused_and_the_group_goes_on(bad_join, message):
    host = Collective.host(3, timeout=5.0)
    thread, out = _accepting(host)
    join = dict(token=host.token, timeout=5.0)
    first = Collective.join(host.address, 1, 3, **join) if "already" in message else None
    with pytest.raises(CollectiveError, match=message) as refused:
        Collective.join(host.address, **{**join, **bad_join})
    assert refused.value.operation == "join"
    if first is None:
        first = Collective.join(host.address, 1, 3, **join)
    second = Collective.join(host.address, 2, 3, **join)
    threads, sums = _allreduce_on_threads([first, second])
    for t in [thread, *threads]:
        t.join(JOIN_LIMIT)
        assert not t.is_alive()
    assert "error" not in out, out
    for s in [out["sum"], sums[1], sums[2]]:
        assert_array_equal(s, [3.0, 3.0, 3.0])


def test_stray_connection_is_refused_and_the_group_forms():
    host = Collective.host(2, timeout=5.0)
    thread, out = _accepting(host)
    with socket.create_connection(host.address, timeout=5.0) as stray:
        stray.sendall(b"GET / HTTP/1.0\r\n\r\n")
        assert b"not a treeboost collective hello" in stray.recv(1024)
    threads, sums = _allreduce_on_threads(
        [Collective.join(host.address, 1, 2, token=host.token, timeout=5.0)])
    for t in [thread, *threads]:
        t.join(JOIN_LIMIT)
        assert not t.is_alive()
    assert_array_equal(out["sum"], [2.0, 2.0, 2.0])
    assert_array_equal(sums[1], [2.0, 2.0, 2.0])


def test_join_gives_up_when_nobody_listens():
    with socket.socket() as s:  # a port that was free a moment ago
        s.bind(("127.0.0.1", 0))
        address = s.getsockname()
    start = time.monotonic()
    with pytest.raises(CollectiveError, match="could not connect") as error:
        Collective.join(address, 1, 2, token="t", timeout=0.5)
    assert error.value.ranks == (0,)
    assert time.monotonic() - start < 2.0


def test_missing_rank_fails_the_rendezvous_on_every_joined_rank():
    host = Collective.host(3, timeout=5.0, connect_timeout=0.5)
    thread, out = _accepting(host)
    joined = Collective.join(host.address, 1, 3, token=host.token, timeout=5.0)
    with joined, pytest.raises(CollectiveError, match="rank 2 did not join") as error:
        joined.allreduce_sum(np.ones(3))
    thread.join(JOIN_LIMIT)
    assert not thread.is_alive()
    assert error.value.ranks == (2,)
    assert out["error"].ranks == (2,)
    assert "did not join within 0.5 s" in str(out["error"])


# -- faults ---------------------------------------------------------------------------------

@pytest.mark.parametrize("silent", [0, 2])
def test_silent_peer_times_out_on_every_other_rank(silent):
    timeout = 1.0
    grace = 0.25  # min(1 s, timeout / 4)
    wake = threading.Event()

    def fn(group):
        for _ in range(3):
            group.allreduce_sum(np.ones(4))
        if group.rank == silent:
            wake.wait(JOIN_LIMIT)  # stops taking part, without closing anything
        start = time.monotonic()
        try:
            group.allreduce_sum(np.ones(4))
        except CollectiveError as error:
            elapsed = time.monotonic() - start
            if group.rank != silent:
                # the last survivor to give up releases the silent rank
                done.append(group.rank)
                if len(done) == 2:
                    wake.set()
            return error, elapsed
        return None

    done = []
    results = _run_group(3, fn, timeout=timeout)
    for rank, got in enumerate(results):
        assert got is not None, f"rank {rank} did not raise"
        error, elapsed = got
        assert isinstance(error, CollectiveError)
        assert error.operation == "allreduce_sum"
        if rank != silent:
            assert error.ranks == (silent,), str(error)
            assert f"rank {silent} did not answer within 1 s" in str(error)
            assert timeout * 0.9 <= elapsed <= timeout + grace + 1.0
    # the silent rank, back, finds the group gone (at once)
    assert results[silent][1] < 1.0


def _process_rank(rank, world_size, addresses, reports, timeout):
    """One rank in a process: allreduces until one fails; reports how it went."""
    parts = [_parts(world_size, (8, 16, 3), seed=i) for i in range(4)]
    expected = [np.add.reduce(np.stack(p), axis=0) for p in parts]
    group = None
    try:
        if rank == 0:
            group = Collective.host(world_size, timeout=timeout, connect_timeout=60.0)
            for _ in range(world_size - 1):
                addresses.put((group.address, group.token))
        else:
            address, token = addresses.get(timeout=60.0)
            group = Collective.join(address, rank, world_size, token=token, timeout=timeout,
                                    connect_timeout=60.0)
        done = wrong = 0
        for i in range(100_000):
            result = group.allreduce_sum(parts[i % 4][rank].copy())
            wrong += result.tobytes() != expected[i % 4].tobytes()
            done += 1
    except CollectiveError as error:
        reports.put((rank, "error", error.ranks, error.operation, str(error),
                     time.monotonic(), done, wrong))
        return
    finally:
        if group is not None:
            group.close()
    reports.put((rank, "done", (), None, "", time.monotonic(), done, wrong))


def _allreduce_until_error(group, parts, start):
    for i in range(start, 100_000):
        try:
            group.allreduce_sum(parts[i % 4][group.rank].copy())
        except CollectiveError as error:
            return error
    pytest.fail("no allreduce failed")


@pytest.mark.parametrize("victim", [0, 2])
def test_killed_process_fails_every_survivor_within_the_timeout(victim):
    # ranks 0 and 2 are processes, rank 1 is this test; one of the processes is killed
    # with SIGKILL in the middle of a run of allreduces
    timeout, world_size = 3.0, 3
    ctx = multiprocessing.get_context("spawn")
    addresses, reports = ctx.Queue(), ctx.Queue()
    procs = {r: ctx.Process(target=_process_rank,
                            args=(r, world_size, addresses, reports, timeout))
             for r in (0, 2)}
    try:
        for p in procs.values():
            p.start()
        address, token = addresses.get(timeout=60.0)
        parts = [_parts(world_size, (8, 16, 3), seed=i) for i in range(4)]
        expected = [np.add.reduce(np.stack(p), axis=0) for p in parts]
        with Collective.join(address, 1, world_size, token=token, timeout=timeout,
                             connect_timeout=60.0) as group:
            for i in range(20):
                assert_array_equal(group.allreduce_sum(parts[i % 4][1].copy()), expected[i % 4])
            os.kill(procs[victim].pid, signal.SIGKILL)
            killed = time.monotonic()
            error = _allreduce_until_error(group, parts, start=20)
            mine = time.monotonic() - killed
            assert group.closed
        survivor = 2 if victim == 0 else 0
        rank, outcome, ranks, operation, message, at, done, wrong = reports.get(timeout=30.0)
    finally:
        for p in procs.values():
            p.join(JOIN_LIMIT)
            if p.is_alive():
                p.kill()
                p.join()
    assert error.ranks == (victim,), str(error)
    assert error.operation == "allreduce_sum"
    assert mine < timeout
    assert (rank, outcome, ranks, operation) == (survivor, "error", (victim,), "allreduce_sum")
    assert f"rank {victim}" in message
    assert at - killed < timeout
    assert done >= 19  # killed rank 0 may have answered rank 1's 20th sum, not rank 2's
    assert wrong == 0  # every sum before the kill had the right bits
    assert procs[victim].exitcode == -signal.SIGKILL
    assert procs[survivor].exitcode == 0
    assert not any(p.is_alive() for p in procs.values())


# -- payloads: plain values only, never code -------------------------------------------------

#: what _RunsCode's unpickling did; stays empty while no peer's payload is unpickled
_RAN = []


def _record(what):
    _RAN.append(what)


class _RunsCode:
    """An object whose unpickling calls a function (what an attacker's pickle would do)."""

    def __reduce__(self):
        return (_record, ("code ran",))


def _rogue_message(op, payload, seq=1, arg=0):
    """A raw ``_OBJECT`` message of operation ``op`` (the wire format, built by hand)."""
    from treeboost import collective as wire

    return wire._HEADER.pack(wire._OBJECT, wire._OP_CODES[op], 0, 0, arg, seq, len(payload),
                             *(0,) * wire._MAX_NDIM) + payload


def _read_until_closed(sock):
    sock.settimeout(JOIN_LIMIT)
    while sock.recv(1 << 16):
        pass


@pytest.mark.parametrize("op", ["allgather", "broadcast"])
def test_a_peer_with_the_token_cannot_make_rank_0_run_its_pickle(op):
    import pickle

    from treeboost import collective as wire

    _RAN.clear()
    host = Collective.host(2, timeout=5.0)
    payload = pickle.dumps(_RunsCode())

    def rogue():  # a real rank 1 in every respect but the payload it sends
        with socket.create_connection(host.address, timeout=5.0) as sock:
            token = host.token.encode()
            sock.sendall(wire._HELLO.pack(wire._MAGIC, wire.PROTOCOL_VERSION, 2, 1,
                                          len(token)) + token)
            sock.sendall(_rogue_message(op, payload, arg=1 if op == "broadcast" else 0))
            _read_until_closed(sock)

    thread = threading.Thread(target=rogue, daemon=True)
    thread.start()
    with host, pytest.raises(CollectiveError) as refused:
        host.allgather(0) if op == "allgather" else host.broadcast(None, root=1)
    thread.join(JOIN_LIMIT)
    assert not thread.is_alive()
    assert _RAN == []  # the pickle's code never ran
    assert refused.value.ranks == (1,)
    assert refused.value.operation == op
    message = str(refused.value)
    assert "rank 1 sent a payload that is not a plain value" in message
    assert "0x80" in message  # the first byte of a pickle, named
    assert host.closed


def test_a_rogue_rank_0_cannot_make_a_joined_rank_run_its_pickle():
    import pickle

    from treeboost import collective as wire

    _RAN.clear()
    payload = pickle.dumps({"bins": _RunsCode()})
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(JOIN_LIMIT)

        def rogue():  # accepts rank 1's join, then broadcasts a pickle
            conn, _ = listener.accept()
            with conn:
                conn.settimeout(5.0)
                hello = wire._recv_exact(conn, wire._HELLO.size, time.monotonic() + 5.0)
                wire._recv_exact(conn, wire._HELLO.unpack(hello)[-1], time.monotonic() + 5.0)
                conn.sendall(wire._WELCOME.pack(wire._MAGIC, 0, 7) + b"welcome")
                wire._recv_exact(conn, wire._HEADER.size, time.monotonic() + 5.0)  # rank 1's
                conn.sendall(_rogue_message("broadcast", payload))
                _read_until_closed(conn)

        thread = threading.Thread(target=rogue, daemon=True)
        thread.start()
        group = Collective.join(listener.getsockname()[:2], 1, 2, token="t", timeout=5.0)
        with group, pytest.raises(CollectiveError, match="not a plain value") as refused:
            group.broadcast(None, root=0)
        thread.join(JOIN_LIMIT)
    assert not thread.is_alive()
    assert _RAN == []
    assert refused.value.ranks == (0,)


def test_objects_that_are_not_plain_values_are_refused_before_sending():
    def fn(group):
        try:
            group.broadcast(_RunsCode() if group.rank == 0 else None)
        except CollectiveError as error:
            return error
        return None

    for error in _run_group(2, fn):
        assert isinstance(error, CollectiveError)
        assert error.ranks == (0,)
        assert "rank 0's broadcast value cannot be sent" in str(error)
        assert "_RunsCode" in str(error)
    assert _RAN == []


def _plain_values():
    """Every kind of payload treeboost itself sends (booster.py, grower.py, dask.py) and
    the plain values the collective documents."""
    rng = np.random.default_rng(0)
    rows = np.array([3, 0, 2], dtype=np.int64)
    return [
        # _gather_leaf_rows: (leaf row counts, y, raw, weights) of one member
        (rows, rng.normal(size=5), rng.normal(size=5), np.ones(5)),
        # _gather_columns: C-contiguous arrays, some empty
        [rng.normal(size=(2, 4)), np.zeros(0, np.int64), np.arange(3, dtype=np.int64)],
        ["training", "validation_0"],  # the evaluated data sets' names
        1234,  # a member's row count
        np.array([0.5, 2.0]),  # quantised gradients' scales
        {"rank": 2, "sum": 2 / 3, "ok": True, "none": None, 5: "int key"},
        ("nested", [1, (2.5, [b"raw bytes", -7])], {"deep": {"er": [None]}}),
        2 ** 80, -(2 ** 70), float("nan"), float("-inf"), "", "ünïcode", b"",
        np.float32(1.5), np.int64(-3), np.bool_(True), np.str_("s"),
        np.array(["a", "bc"]), np.array([b"x"], dtype="S3"), np.array(1.25),
        np.arange(12, dtype=">i4").reshape(3, 4),  # big-endian: kept as it is
        np.asfortranarray(rng.normal(size=(3, 2))),  # not C order: values kept
        np.array(["2024-01-01"], dtype="datetime64[D]"), np.arange(4, dtype=np.complex128),
    ]


@pytest.mark.parametrize("root", [0, 1])
def test_every_plain_value_round_trips_through_broadcast_and_allgather(root):
    values = _plain_values()

    def fn(group):
        mine = values if group.rank == root else None
        # a 0-d array of a wire dtype, sent as raw bytes, keeps its shape
        scalar = group.broadcast(np.array(2.5) if group.rank == root else None, root=root)
        assert scalar.shape == ()
        assert scalar == 2.5
        return group.broadcast(mine, root=root), group.allgather((group.rank, values))

    for rank, (broadcast, gathered) in enumerate(_run_group(3, fn)):
        if rank == root:
            assert broadcast is values  # the root keeps its own object
        others = [v for r, v in gathered if r != rank]
        for got in others if rank == root else [broadcast, *others]:
            assert len(got) == len(values)
            for g, v in zip(got, values, strict=True):
                _assert_same_value(g, v)
        assert [r for r, _ in gathered] == [0, 1, 2]


def _assert_same_value(got, want):
    assert type(got) is type(want), (got, want)
    if isinstance(want, np.ndarray):
        assert got.dtype == want.dtype
        assert got.shape == want.shape
        assert got.flags.c_contiguous
        assert got.flags.writeable
        assert_array_equal(got, want)
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _assert_same_value(g, w)
    elif isinstance(want, dict):
        assert list(got) == list(want)
        for k in want:
            _assert_same_value(got[k], want[k])
    elif isinstance(want, float) and want != want:
        assert got != got
    else:
        assert got == want
