"""``treeboost study`` leaves no process behind (SPEC §8), whenever and however it stops.

The study runs as ``python -m treeboost study`` in a subprocess whose environment carries
a marker unique to the test; its workers (spawn) and the multiprocessing resource tracker
inherit that environment, so ``/proc/*/environ`` finds every process of the study, also
after the kill has orphaned them (a walk of the process tree would lose them once they
are reparented).
"""

import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from test_study import _env, rows

# not marked slow (~1 min of processes in all): beside the light tests of `make test` these
# timings have held for weeks; in the slow step, beside Dask clusters (two processes) an
# interrupted study's exit took 9.2 s of its 8, and alone once the study had ended
# (return code 0) before its SIGINT came
pytestmark = pytest.mark.skipif(not Path("/proc/self/environ").exists(),
                                reason="finds the study's processes through /proc")

# a process of the study may take this long to notice that the study process is gone
# (the acceptance criterion of issue 11); it is polled, so a passing test waits less
GONE_WITHIN = 10.0


def _study_processes(mark: str) -> dict[int, str]:
    """pid -> command line of every live process whose environment holds ``mark``."""
    needle = f"TREEBOOST_TEST_STUDY={mark}".encode()
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                # a zombie has ended; only its parent's wait is missing
                if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    continue
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                found[int(entry)] = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # ended while we looked, or not ours to read
            continue
    return found


def _wait_gone(mark: str) -> dict[int, str]:
    """Poll until no process of the study is alive; what is still alive after
    ``GONE_WITHIN`` seconds."""
    deadline = time.monotonic() + GONE_WITHIN
    while (alive := _study_processes(mark)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive


def _stored(out: Path) -> int:
    try:
        with sqlite3.connect(out / "study.sqlite") as db:
            return db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    except sqlite3.OperationalError:  # no database or no table yet
        return 0


def _workers(processes: dict[int, str]) -> int:
    return sum("spawn_main" in command for command in processes.values())


def _wait_for(condition, proc, timeout=120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert proc.poll() is None, "the study ended before the moment of the kill"
        assert time.monotonic() < deadline, "the moment of the kill never came"
        time.sleep(0.01)


# one dataset whose units (1000 trees of 31 leaves, 3 classes, 30,000 rows) take ~15 s
# each on a loaded 2-core machine: a worker killed late is in the middle of one, where
# only a worker that watches its parent stops before the 10 s are over
BIG_GRID = ["learning_rate=0.1,0.05", "max_leaf_nodes=31", "n_estimators=1000",
            "subsample=0.7,1.0"]


def _big_dataset(folder: Path) -> Path:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30_000, 10))
    y = (X[:, 0] + X[:, 1] ** 2 + rng.normal(size=len(X)) > 1).astype(int) + (X[:, 2] > 0)
    path = folder / "big.csv"
    pd.DataFrame(X, columns=[f"x{i}" for i in range(10)]).assign(**{"class": y}).to_csv(
        path, index=False)
    return path


def _command(data: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "treeboost", "study", str(data), "--out", str(out),
            "--target", "class", *sum((["--grid", g] for g in BIG_GRID), []),
            "--jobs", "2", "--baselines", "none", "--no-report", "--quiet"]


@pytest.fixture
def study(tmp_path):
    """Start a study with 2 workers; yield (process, marker, out folder). Whatever the
    test leaves alive is killed at the end."""
    out = tmp_path / "out"
    mark = uuid.uuid4().hex
    env = dict(_env(), TREEBOOST_TEST_STUDY=mark)
    proc = subprocess.Popen(_command(_big_dataset(tmp_path), out), env=env,
                            start_new_session=True, stderr=subprocess.PIPE, text=True)
    try:
        yield proc, mark, out
    finally:
        for pid in [proc.pid, *_study_processes(mark)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.communicate()


def _spawned(proc, mark, out) -> bool:
    return _workers(_study_processes(mark)) >= 1


# moment of the kill -> (condition to wait for, seconds after it, study processes there
# must be at the kill)
MOMENTS = {
    # the study process still imports and reads the data: no child yet
    "launch": (lambda proc, mark, out: True, 0.5, 1),
    # a worker was just spawned: it imports before its initializer runs
    "spawning": (_spawned, 0.0, 2),
    # the workers import, run their initializer, start their first fit
    "starting": (_spawned, 1.5, 3),
    # the workers are fitting and results are being stored
    "fitting": (lambda proc, mark, out: _stored(out) >= 1, 0.0, 4),
}


@pytest.mark.parametrize("moment", list(MOMENTS))
def test_sigkill_of_the_study_leaves_no_process(study, moment):
    proc, mark, out = study
    condition, delay, at_least = MOMENTS[moment]
    _wait_for(lambda: condition(proc, mark, out), proc)
    time.sleep(delay)
    # freeze the study so that the list below is all of it (no child started between
    # listing and killing); stopped or not, SIGKILL ends it
    os.kill(proc.pid, signal.SIGSTOP)
    before = _study_processes(mark)
    assert len(before) >= at_least, before
    os.kill(proc.pid, signal.SIGKILL)  # the study process only, as `kill -9 PID` does
    proc.wait()
    assert _wait_gone(mark) == {}, f"alive {GONE_WITHIN} s after the kill of {before}"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupted_study_ends_its_workers_and_keeps_the_store(study, signum):
    """Ctrl-C (SIGINT to the whole process group) or SIGTERM (to the study process):
    a clean exit at once, no traceback, no process left, the store intact."""
    proc, mark, out = study
    _wait_for(lambda: _stored(out) >= 1, proc)
    kept = {r[:3]: r[3:] for r in rows(out)}
    assert _workers(_study_processes(mark)) == 2
    if signum == signal.SIGINT:
        os.killpg(proc.pid, signum)
    else:
        os.kill(proc.pid, signum)
    start = time.monotonic()
    _, stderr = proc.communicate(timeout=60)
    # the running fits (~15 s each) are not waited for: the workers are terminated
    # (the study allows them 5 s to go before SIGKILL); 8 s is that plus slack for a
    # loaded machine
    assert time.monotonic() - start < 8.0
    assert proc.returncode == 128 + signum, stderr
    assert "interrupted" in stderr
    assert "Traceback" not in stderr, stderr
    assert _wait_gone(mark) == {}
    # the store is whole and holds what was committed (a resume of a stopped study is
    # tested in test_study.py)
    with sqlite3.connect(out / "study.sqlite") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    after = {r[:3]: r[3:] for r in rows(out)}
    assert kept.items() <= after.items()
    assert len(after) < 4  # the study did stop
